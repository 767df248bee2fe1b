"""`edge export`: the C runtime and one model as a self-contained folder for the user's own firmware.

    result = export("model.tflite", "qemu-mps2-an386", "cmake", "out/")   # -> ExportResult
    # then: cmake -S out -B build && cmake --build build

The folder holds (every format):

- ``include/``: the runtime's public headers (``edge.h``, ``edge_kernel.h`` and their ``.def`` tables);
- ``src/``: ``edge.c``, the kernel files of exactly the model's ops (tools/flash.py's ``kernel_files``) and
  the op table for them (firmware_c/tools/gen_ops.py), compiled without the float32 / int16 paths no tensor
  of the model has (gen_ops.py's type switches, as compiler definitions);
- ``model/``: the model as a 16-byte aligned const array (``edge_model_data.c``, flash.py's
  ``model_c_source``) and ``edge_model.h``: the array, ``EDGE_MODEL_ARENA_BYTES`` (the exact need of these
  sources for this model and plan: ``edge_init_patch``'s high-water mark with the exported sources built for the
  target and run, see ``arena_need``) and every input and output (shape, type, quantization);
- ``example/``: a minimal program running one inference: on a Linux profile ``edge_example IN.bin OUT.bin``
  (the inputs' raw bytes in, the outputs' raw bytes out); on a microcontroller board (firmware_c/boards)
  ``edge_example.elf``, which fills the inputs from a fixed pseudo-random sequence and prints each output's
  FNV-1a checksum on the UART (``board/`` then holds that board's start-up code, UART and linker script);
- the target's compiler flags, a toolchain file for a cross compiler, a README and ``export.json``.

Formats: ``cmake`` (CMakeLists.txt; selects its own toolchain file for a cross target), ``make`` (a plain
Makefile), ``zephyr`` (a module: zephyr/module.yml, CMakeLists.txt, Kconfig) and ``arduino`` (a library:
library.properties, src/, examples/).

The folder is written to a temporary sibling and renamed at the end: an error leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from dataclasses import asdict, dataclass, field
from pathlib import Path

from edge_sdk import log
from edge_sdk.errors import BuildError, DeviceError, ModelError, UsageError
from edge_sdk.model.types import tensor_nbytes
from edge_sdk.runtime import c_build, op_table
from edge_sdk.runtime.planner import BUILT_BY, c_memory_min
from edge_sdk.targets.check import DSP_CPUS  # the arena measure emulates their DSP paths, as edge check does
from edge_sdk.targets.registry import BOARD_LIST
from edge_sdk.tools import flash as _flash

FORMATS = ("cmake", "make", "zephyr", "arduino")
HOSTED_KINDS = ("host", "linux")  # profiles whose example reads and writes files
NATIVE_COMPILERS = ("gcc", "cc", "clang")
WARN_FLAGS = ["-std=c99", "-Wall", "-Wextra"]
# EDGE_<type> names of include/edge_types.def by TensorType name (edge_model.h uses them)
_EDGE_TYPES = {"FLOAT32": "EDGE_FLOAT32", "FLOAT16": "EDGE_FLOAT16", "INT32": "EDGE_INT32", "UINT8": "EDGE_UINT8",
               "INT64": "EDGE_INT64", "BOOL": "EDGE_BOOL", "INT16": "EDGE_INT16", "INT8": "EDGE_INT8",
               "UINT32": "EDGE_UINT32", "UINT16": "EDGE_UINT16", "INT4": "EDGE_INT4"}


@dataclass
class ExportResult:
    out_dir: str
    format: str
    profile: str
    model: str
    model_sha256: str
    model_bytes: int
    arena_bytes: int
    arena_source: str  # a key of ARENA_SOURCES: "target", "host", "host-upper-bound" or "estimate"
    arena_build: str  # the build of these sources that measured it (compiler, flags, where it ran)
    memory: str  # the arena plan built (planner.REALISED_PLANS): "layer" (layer by layer), "inplace" (in-place
    # nodes, EDGE_INIT_MEMORY_MIN) or "patch" (in place plus a patch stage: edge_init_patch, EDGE_MODEL_PATCH_PLAN)
    board: str | None
    example: str  # "files" (edge_example IN.bin OUT.bin), "uart" (checksums on the board's UART) or "none"
    kernels: list[str] = field(default_factory=list)
    type_defs: list[str] = field(default_factory=list)
    cflags: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    inputs: list[dict] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    patch: dict | None = None  # memory "patch": the stage (edge_sdk.runtime.patching.PatchPlan.to_dict); None: none
    memory_request: str = "layer"  # the plan asked for (planner.MEMORY_PLANS: --memory layer, inplace or min)
    # a legacy UINT8 model: the exported runtime runs it as INT8; which inputs / outputs the user's code flips
    # (int8 = uint8 ^ 0x80: edge_model.h's edge_model_flip_uint8; edge_sdk.runtime.uint8.c_io_note); "" otherwise
    uint8_io: str = ""

    def to_dict(self) -> dict:
        return {**asdict(self), "arena_size": self.arena_size}

    @property
    def arena_size(self) -> int:
        """The runtime's arena on the target (planner.runtime_arena's meaning, as edge check / flash / profile
        print it): the exported runtime's own need, measured (arena_source), which EDGE_MODEL_ARENA_BYTES gives
        exactly (no margin: the buffer is the arena)."""
        return self.arena_bytes

    def arena_line(self) -> str:
        from edge_sdk.runtime.planner import PLAN_WORDS, arena_words

        how = {"target": "measured", "host": "measured on this host", "host-upper-bound": "upper bound",
               "estimate": "estimate"}.get(self.arena_source, self.arena_source)
        return arena_words(self.arena_size, f"the exported C runtime on {self.profile}, "
                                            f"{PLAN_WORDS[self.memory]} plan, {how}")


# ------------------------------------------------------------------------------------------------ sizes
# EDGE_MODEL_ARENA_BYTES is measured on the exported sources themselves (the export's edge.c, its kernels and its
# op table, with the export's type switches): the portable kernels, as the user builds them. Not the host library
# of `edge run` / the C binding (edge_sdk.runtime.c_interpreter), which is built with the SIMD fast paths (-DEDGE_WITH_SIMD=1) whose packed weights and
# im2col scratch live in the arena: person_detect --memory patch needs 304720 B there, 47168 B in the export.
ARENA_SOURCES = {
    "target": "measured: edge_init_patch's exact need for this model with these sources as exported, built for the "
              "target and run",
    "host": "measured on these sources built for this machine, which has the target's 64-bit data model but not its "
            "compiler: exact unless that compiler lays the runtime's structs out differently (install the target's "
            "cross compiler and qemu-user for the figure of the target's own build)",
    "host-upper-bound": "measured on these sources built for this 64-bit machine (8-byte pointers): an UPPER BOUND "
                        "for this 32-bit target (install gcc-arm-linux-gnueabihf and qemu-user for the exact figure)",
    "estimate": "an ESTIMATE: no C compiler here could build these sources to measure them (edge flash's sizing: "
                "another build's need, or the Python plan, plus a margin)",
}
_MEASURE_MAIN = r"""/* edge export's arena measure: MODEL ARENA FLAGS FIRST LAST ROWS COLS (rows 0: no patch stage).
 * edge_init_patch on the model file from a 16-aligned arena of ARENA bytes, grown while it is too small; the need N
 * is the max of edge_arena_used and edge_arena_high_water. Then again with exactly N bytes (must initialise) and
 * with N - 1 (its status is printed: ARENA_TOO_SMALL when N is the least arena). Prints "need N below STATUS", or
 * "refused STATUS MESSAGE" when edge_init_patch refuses the model (exit 3). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "edge.h"
static edge_interp_t it;
static edge_patch_plan_t plan;
static void *model;
static size_t model_len;
static uint32_t flags;
static edge_status_t init_with(size_t len) {
    edge_status_t s;
    void *raw = malloc(len + 16);
    if (!raw) exit(2);
    s = edge_init_patch(&it, model, model_len, (void *)(((uintptr_t)raw + 15u) & ~(uintptr_t)15u), len, flags,
                        &plan);
    free(raw);
    return s;
}
int main(int argc, char **argv) {
    FILE *f;
    long n;
    size_t len, need;
    int tries;
    char msg[256];
    edge_status_t s;
    if (argc != 8 || !(f = fopen(argv[1], "rb"))) return 2;
    len = (size_t)strtoull(argv[2], 0, 10);
    flags = (uint32_t)strtoul(argv[3], 0, 10);
    plan.first = (int32_t)strtol(argv[4], 0, 10); plan.last = (int32_t)strtol(argv[5], 0, 10);
    plan.rows = (int32_t)strtol(argv[6], 0, 10); plan.cols = (int32_t)strtol(argv[7], 0, 10);
    fseek(f, 0, SEEK_END); n = ftell(f); fseek(f, 0, SEEK_SET);
    if (n <= 0 || !(model = malloc((size_t)n))) return 2;
    model_len = (size_t)n;
    if (fread(model, 1, model_len, f) != model_len) return 2;
    fclose(f);
    for (tries = 0; (s = init_with(len)) == EDGE_ARENA_TOO_SMALL && tries < 12; tries++) {
        size_t more = it.error.required_exact ? (size_t)it.error.required : 4 * len;
        if (more <= len || more > ((size_t)1 << 31)) break;
        len = more;
    }
    if (s != EDGE_OK) {
        printf("refused %d %s\n", (int)s, edge_error_message(&it, msg, sizeof msg));
        return 3;
    }
    need = edge_arena_used(&it) > edge_arena_high_water(&it) ? edge_arena_used(&it) : edge_arena_high_water(&it);
    if ((s = init_with(need)) != EDGE_OK) {
        printf("refused %d with exactly the need (%lu bytes): %s\n", (int)s, (unsigned long)need,
               edge_error_message(&it, msg, sizeof msg));
        return 4;
    }
    printf("need %lu below %d\n", (unsigned long)need, (int)init_with(need - 1));
    return 0;
}
"""
# qemu-user per the first word of a Linux target's triple; 64-bit architectures (their data model: LP64)
_QEMU_USER = {"aarch64": "qemu-aarch64", "arm": "qemu-arm", "armv7l": "qemu-arm", "x86_64": "qemu-x86_64",
              "i686": "qemu-i386", "riscv64": "qemu-riscv64"}
_ARCH64 = ("x86_64", "aarch64", "arm64", "riscv64", "ppc64le", "s390x", "loongarch64")
# a Cortex-M's struct layout (ILP32, AAPCS) on a runnable stand-in: 32-bit Arm Linux under qemu-arm
_ARMHF_CC, _ARMHF_FLAGS = "arm-linux-gnueabihf-gcc", ["-O1", "-march=armv7-a", "-mfpu=vfpv3-d16", "-mfloat-abi=hard"]


def _plan_numbers(patch) -> tuple[int, int, int, int]:
    """edge_patch_plan_t's fields (first, last, rows, cols) for a patching.PatchPlan; zeros: no patch stage."""
    return (0, 0, 0, 0) if patch is None else (patch.nodes[0], patch.nodes[-1], patch.grid[0], patch.grid[1])


def _measure_builds(t, defs: list[str]) -> list[tuple[str, str, list[str], list[str], str]]:
    """The ways to build and run the arena measure here, best first: (source, compiler, flags, run prefix, how).
    A Linux target: its own compiler and the export's flags, run here (natively, or under qemu-user with the
    cross sysroot). A microcontroller: arm-linux-gnueabihf-gcc under qemu-arm (a Cortex-M's ILP32/AAPCS layout;
    its DSP kernel paths, which take other scratch, emulated in C). Then this machine's compiler (source "host",
    or "host-upper-bound" for a 32-bit target)."""
    import struct

    out = []
    dsp = [] if t.hosted or t.profile.cpu not in DSP_CPUS else ["-DEDGE_EMULATE_DSP"]
    if t.hosted:
        arch = t.triple.split("-")[0] if t.cross and t.triple else t.profile.arch
        target64 = arch in _ARCH64 or (not t.cross and struct.calcsize("P") == 8)
        flags = [*t.cflags, *defs]
        words = f"{Path(t.compiler).name} {' '.join(t.cflags)} (the export's compiler and flags)"
        if not t.cross:
            if shutil.which(t.compiler):
                out.append(("target", t.compiler, flags, [], f"built by {words}, run on this machine"))
        else:
            qemu, sysroot = shutil.which(_QEMU_USER.get(arch, f"qemu-{arch}")), Path("/usr") / t.triple
            if shutil.which(t.compiler) and qemu and sysroot.is_dir():
                out.append(("target", t.compiler, flags, [qemu, "-L", str(sysroot)],
                            f"built by {words}, run under {Path(qemu).name}"))
    else:
        target64 = False
        qemu, sysroot = shutil.which("qemu-arm"), Path("/usr/arm-linux-gnueabihf")
        if shutil.which(_ARMHF_CC) and qemu and sysroot.is_dir():
            out.append(("target", _ARMHF_CC, [*_ARMHF_FLAGS, *defs, *dsp], [qemu, "-L", str(sysroot)],
                        f"built by {_ARMHF_CC} {' '.join(_ARMHF_FLAGS)}, run under qemu-arm: the 32-bit struct "
                        "layout (AAPCS) of a Cortex-M" + (", its DSP-extension kernel paths emulated in C "
                                                           "(-DEDGE_EMULATE_DSP)" if dsp else "")))
    native = next((c for c in (os.environ.get("CC"), "gcc", "cc", "clang") if c and shutil.which(c)), None)
    host64 = struct.calcsize("P") == 8
    if native and (host64 or not target64) and not (t.hosted and not t.cross and native == t.compiler):
        source = "host" if target64 == host64 else "host-upper-bound"
        out.append((source, native, ["-O1", *defs, *dsp], [], f"built by {native} -O1 for this machine, run here"))
    return out


def _built_need(tree: Path, model_path: Path, cc: str, flags: list[str], prefix: list[str], memory: str,
                patch=None) -> int | None:
    """The exported sources (tree: include/ src/, or src/ alone) with _MEASURE_MAIN, built by ``cc flags`` and run
    (under ``prefix``): edge_init_patch's need for the plan. None when the build or the run fails; ModelError when
    these sources refuse the model."""
    with tempfile.TemporaryDirectory(prefix="edge-export-measure-") as work:
        main = Path(work) / "measure.c"
        main.write_text(_MEASURE_MAIN)
        exe = Path(work) / "measure"
        srcs = [main, *(p for p in sorted((tree / "src").rglob("*.c")) if p.name != "edge_model_data.c")]
        inc = tree / ("include" if (tree / "include").is_dir() else "src")
        init_flags = "2" if c_memory_min(memory) else "0"  # EDGE_INIT_MEMORY_MIN
        try:
            # one object per source, in parallel, through the object cache (keyed by the preprocessed text, not
            # the folder): the runtime's files an earlier export of these kernels and flags compiled are not
            # compiled again (the exported tree is a new temporary folder every time); then one link
            objects = c_build.compile_objects(cc, ("-std=c99", *flags, f"-I{inc}", f"-I{tree / 'src'}"), srcs,
                                              Path(work) / "obj")
            proc = subprocess.run([cc, *flags, "-o", str(exe), *map(str, objects), "-lm"], capture_output=True,
                                  text=True, timeout=900, check=False)
            if proc.returncode != 0:
                log.debug(f"arena measure link failed ({cc}): {proc.stderr[-500:]}")
                return None
            run = subprocess.run([*prefix, str(exe), str(model_path), str(1 << 20), init_flags,
                                  *(str(v) for v in _plan_numbers(patch))],
                                 capture_output=True, text=True, timeout=900, check=False)
        except (OSError, subprocess.TimeoutExpired, BuildError) as exc:
            log.debug(f"arena measure failed ({cc}): {exc}")
            return None
    words = run.stdout.split()
    if run.returncode == 3 and words[:1] == ["refused"]:
        raise ModelError(f"the exported C runtime refuses {model_path.name}: {' '.join(words[2:])}")
    if run.returncode != 0 or len(words) != 4 or words[0] != "need":
        log.debug(f"arena measure run failed (exit {run.returncode}): {run.stdout} {run.stderr[-300:]}")
        return None
    need, below = int(words[1]), int(words[3])
    if below == 0:  # the runtime initialised with fewer bytes than its own high-water mark: not the least arena
        log.debug(f"arena measure: {need - 1} bytes initialise too (the high water over-counts)")
    return need


def arena_need(data: bytes, memory: str = "layer", build: tuple | None = None, patch=None) -> tuple[int, str, str]:
    """(bytes, source, how): the arena the exported C runtime needs for this model: the most bytes
    ``edge_init_patch`` uses at once (planned tensors, scratch, persistent data and init's temporary planner
    memory), exactly, for a 16-byte aligned arena; no margin, no rounding. ``build`` = (export tree, model path,
    _Target, type defines): measured on those sources (_measure_builds: built for the target and run where it
    can, else on this machine); without it, or when no build runs here, an estimate (edge flash's sizing, with
    its margin). The measure also checks that exactly that many bytes initialise (and logs it when one byte less
    would too: the high-water mark then over-counts; the figure stays the runtime's own). ``source``:
    a key of ARENA_SOURCES; ``how``: the build measured. ``memory``: "layer", "inplace" or "min" (``patch``: the
    stage, a patching.PatchPlan; None: none)."""
    if build is not None:
        tree, model_path, t, defs = build
        for source, cc, flags, prefix, how in _measure_builds(t, defs):
            need = _built_need(tree, Path(model_path), cc, flags, prefix, memory, patch)
            if need is not None:
                return need, source, how
    log.debug("no build of the exported sources ran here; the arena is an estimate")
    return _flash.measure_arena(data, memory=memory), "estimate", "sized as edge flash sizes it (measure_arena)"


def _io(model, indices) -> list[dict]:
    sg = model.subgraphs[0]
    out = []
    for i in indices:
        t = sg.tensors[i]
        q = t.quantization
        scale = [float(s) for s in q.scale] if q is not None and len(q.scale) else []
        zp = [int(z) for z in q.zero_point] if q is not None and len(q.zero_point) else []
        out.append({"name": t.name, "tensor": int(i), "shape": [int(d) for d in t.shape], "type": t.type,
                    "bytes": int(tensor_nbytes(t)), "scale": scale, "zero_point": zp})
    return out


# ------------------------------------------------------------------------------------------------ target
def _board_vars(board: str, cpu: str | None) -> dict[str, str]:
    """CPU_CFLAGS, BOARD_CFLAGS, BOARD_LDFLAGS, BOARD_SRCS, BOARD_LDSCRIPT of firmware_c/boards/board.mk for the
    board (make reads the fragment itself: one definition of a board's flags)."""
    make = shutil.which("make")
    if make is None:
        raise DeviceError("make not found on PATH: install it (apt-get install make)")
    names = ("CPU_CFLAGS", "BOARD_CFLAGS", "BOARD_LDFLAGS", "BOARD_SRCS", "BOARD_LDSCRIPT", "BOARD_DIR")
    text = f"include {_flash.FIRMWARE / 'boards' / 'board.mk'}\nall:\n" + "".join(
        f"\t@echo '{n}=$({n})'\n" for n in names)
    cmd = [make, "-s", "-f", "-", f"BOARD={board}"] + ([f"CPU={cpu}"] if cpu else [])
    proc = subprocess.run(cmd, input=text, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise DeviceError(f"firmware_c/boards/board.mk for {board}: {(proc.stderr or proc.stdout).strip()[-500:]}")
    out = {}
    for line in proc.stdout.splitlines():
        k, _, v = line.partition("=")
        out[k] = v.strip()
    return out


class _Target:
    """What the export compiles with: compiler, flags, board (or none), hosted or not."""

    def __init__(self, profile):
        self.profile = profile
        self.hosted = profile.kind in HOSTED_KINDS
        if not self.hosted and profile.kind != "mcu":
            raise DeviceError(f"profile {profile.name} is a {profile.kind} device: `edge export` writes C for "
                              f"Linux computers and microcontrollers")
        tc = profile.toolchain
        self.compiler = tc.get("compiler", "gcc" if self.hosted else "arm-none-eabi-gcc")
        self.cross = Path(self.compiler).name not in NATIVE_COMPILERS
        self.triple = tc.get("triple") or (self.compiler[:-4] if self.compiler.endswith("-gcc") else "")
        self.board = None
        self.cflags = [f for f in tc.get("cflags", []) if f.startswith(("-m", "-O", "-f"))]
        if self.hosted:  # no fused multiply-add contraction: float results round as on x86-64 (firmware_c/cross.mk)
            self.cflags.append("-ffp-contract=off")
        self.ldflags = [f for f in tc.get("ldflags", [])]
        self.board_cflags: list[str] = []
        self.board_ldflags: list[str] = []
        self.board_files: list[Path] = []
        self.ldscript: Path | None = None
        if not self.hosted:
            if "arm-none-eabi" not in self.compiler:
                raise DeviceError(f"profile {profile.name} builds with {self.compiler}; the C runtime's "
                                  f"microcontroller exports build with arm-none-eabi-gcc only")
            names = (profile.name, *profile.extends)
            self.board = next((n for n in names if n in BOARD_LIST), None)
        if self.board:
            cpu = profile.cpu if profile.cpu in ("cortex-m0plus", "cortex-m4", "cortex-m7") else None
            v = _board_vars(self.board, cpu)
            cpu_flags = v["CPU_CFLAGS"].split()
            # the board's defines and freestanding/section flags, without its -I (the export has its own)
            self.board_cflags = [f for f in v["BOARD_CFLAGS"].split() if not f.startswith("-I")]
            self.cflags = _dedup(cpu_flags + [f for f in self.cflags if not f.startswith(("-mcpu", "-mfpu",
                                                                                          "-mfloat-abi"))])
            self.board_cflags = [f for f in self.board_cflags if f not in self.cflags]
            self.board_ldflags = [f for f in v["BOARD_LDFLAGS"].split() if not f.startswith(("-T", "-L"))]
            self.ldscript = Path(v["BOARD_LDSCRIPT"])
            common = _flash.FIRMWARE / "boards" / "common"
            self.board_files = sorted({Path(p) for p in v["BOARD_SRCS"].split()} | set(common.glob("*.h"))
                                      | set(common.glob("*.ld")) | {_flash.FIRMWARE / "boards" / "board.h"})

    @property
    def example(self) -> str:
        return "files" if self.hosted else ("uart" if self.board else "none")


def _dedup(items):
    seen, out = set(), []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


# ------------------------------------------------------------------------------------------------ sources
def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _c_float(x: float) -> str:
    return repr(float(x)) + "f"


def model_header(name: str, arena: int, source: str, inputs: list[dict], outputs: list[dict], sha: str,
                 size: int, memory: str = "layer", patch=None, init_min: bool | None = None,
                 arena_how: str = "") -> str:
    """edge_model.h; ``memory``: the plan built (planner.REALISED_PLANS), ``patch`` its stage (a PatchPlan);
    ``init_min``: EDGE_INIT_MEMORY_MIN in the flags (the arena was measured with it; None: unless "layer");
    ``arena_how``: the build that measured the arena."""
    if init_min is None:
        init_min = c_memory_min(BUILT_BY[memory])
    from edge_sdk.runtime.planner import PLAN_WORDS

    why = ARENA_SOURCES[source] + (f"; {arena_how}" if arena_how else "")
    arena_doc = textwrap.wrap(f"Arena bytes to give edge_init_patch (a 16-byte aligned array, with "
                              f"EDGE_MODEL_INIT_FLAGS and EDGE_MODEL_PATCH_PLAN): {why}.", 108,
                              break_on_hyphens=False)
    first, last, rows, cols = _plan_numbers(patch)
    stage = (f"nodes {first}..{last} of subgraph 0 run patch by patch over a {rows}x{cols} grid, +{patch.extra_macs} "
             "MACs" if patch is not None else "none (rows 0): the plan of the flags alone")
    lines = [f"/* edge_model.h - generated by `edge export` for {name} (sha256 {sha[:16]}..., {size} bytes). */",
             "#ifndef EDGE_MODEL_H", "#define EDGE_MODEL_H", "", "#include <stdint.h>", "",
             '#ifdef __cplusplus\nextern "C" {\n#endif', "",
             "/* The model: 16-byte aligned, read in place (keep it in flash). */",
             "extern const uint8_t edge_model_data[];", "extern const uint32_t edge_model_data_len;", "",
             "/* " + "\n * ".join(arena_doc) + " */",
             f"#define EDGE_MODEL_ARENA_BYTES {arena}u",
             f"/* edge_init_patch's flags for that arena: the {PLAN_WORDS[memory]} plan (\"{memory}\"; include "
             "edge.h first) */",
             f"#define EDGE_MODEL_INIT_FLAGS {'EDGE_INIT_MEMORY_MIN' if init_min else '0u'}",
             "/* edge_init_patch's patch stage for that arena, an edge_patch_plan_t initialiser {first node, last node,",
             f" * grid rows, grid cols}}: {stage} */",
             f"#define EDGE_MODEL_PATCH_PLAN {{{first}, {last}, {rows}, {cols}}}", "",
             f"#define EDGE_MODEL_NUM_INPUTS {len(inputs)}", f"#define EDGE_MODEL_NUM_OUTPUTS {len(outputs)}", ""]
    for kind, rows in (("INPUT", inputs), ("OUTPUT", outputs)):
        for k, r in enumerate(rows):
            p = f"EDGE_MODEL_{kind}{k}"
            shape = ", ".join(str(d) for d in r["shape"]) or "1"
            from_uint8 = r.get("model_type") == "UINT8"  # a legacy UINT8 tensor the runtime holds as INT8
            lines += [f"/* {kind.lower()} {k}: {r['name']} {r['type']} {list(r['shape'])}"
                      + (f", real = {r['scale'][0]!r} * (q - {r['zero_point'][0]})" if r["scale"] else "")
                      + (" (per-channel: see edge_tensor_scale)" if len(r["scale"]) > 1 else "")
                      + (f"; the model's UINT8 (zero point {r['model_zero_point'][0]}): int8 = uint8 ^ 0x80, "
                         "edge_model_flip_uint8" if from_uint8 else "") + " */",
                      f"#define {p}_NAME {_c_string(r['name'])}",
                      f"#define {p}_TYPE {_EDGE_TYPES.get(r['type'], 'EDGE_' + r['type'])}",
                      f"#define {p}_BYTES {r['bytes']}u",
                      f"#define {p}_RANK {len(r['shape'])}",
                      f"#define {p}_SHAPE {{{shape}}}"]
            if r["scale"]:
                lines += [f"#define {p}_SCALE {_c_float(r['scale'][0])}",
                          f"#define {p}_ZERO_POINT {r['zero_point'][0] if r['zero_point'] else 0}"]
            lines += [f"#define {p}_FROM_UINT8 1"] if from_uint8 else []
            lines.append("")
    if any(r.get("model_type") == "UINT8" for r in (*inputs, *outputs)):
        lines += ["/* A legacy UINT8 model runs as INT8 (zero points - 128): flip a *_FROM_UINT8 input's uint8 bytes",
                  " * before edge_invoke and such an output's after it (int8 = uint8 ^ 0x80, both ways). */",
                  "static inline void edge_model_flip_uint8(void *data, uint32_t bytes) {",
                  "    for (uint8_t *p = (uint8_t *)data; bytes--; p++) *p ^= 0x80u;", "}", ""]
    lines += ['#ifdef __cplusplus\n}\n#endif', "", "#endif", ""]
    return "\n".join(lines)


_EXAMPLE_FILES = r'''/* edge_example - one inference of the exported model: edge_example IN.bin OUT.bin [ARENA_BYTES]
 * IN.bin: every input's raw bytes, input 0 first (EDGE_MODEL_INPUT<k>_BYTES each, the tensor's own type);
 * OUT.bin: every output's raw bytes likewise. ARENA_BYTES: give edge_init_patch only the arena's first ARENA_BYTES
 * (at most EDGE_MODEL_ARENA_BYTES, the default): fewer than the model needs are refused ("arena too small").
 * On success it prints "ok: ..., arena NEED of GIVEN bytes" (NEED: the most bytes in use at once, edge_arena_used /
 * edge_arena_high_water). Exit status: 0, 1 (the runtime's error), 2 (bad arguments). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edge.h"
#include "edge_model.h"

static edge_interp_t interp;
static uint8_t arena[EDGE_MODEL_ARENA_BYTES] __attribute__((aligned(16)));
static const edge_patch_plan_t plan = EDGE_MODEL_PATCH_PLAN; /* the patch stage, if any */

int main(int argc, char **argv) {
    edge_status_t s;
    FILE *f;
    int32_t i;
    size_t total = 0, arena_len = sizeof arena, used, hw;
    long size;
    char msg[256];

    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s IN.bin OUT.bin [ARENA_BYTES]\n", argv[0]);
        return 2;
    }
    if (argc == 4) {
        char *end;
        unsigned long n = strtoul(argv[3], &end, 10);
        if (argv[3][0] < '0' || argv[3][0] > '9' || *end || n > sizeof arena) {
            fprintf(stderr, "ARENA_BYTES %s: give a number of bytes up to %lu (EDGE_MODEL_ARENA_BYTES)\n", argv[3],
                    (unsigned long)sizeof arena);
            return 2;
        }
        arena_len = (size_t)n;
    }
    s = edge_init_patch(&interp, edge_model_data, edge_model_data_len, arena, arena_len, EDGE_MODEL_INIT_FLAGS, &plan);
    if (s != EDGE_OK) {
        fprintf(stderr, "edge_init: %s\n", edge_error_message(&interp, msg, sizeof msg));
        return 1;
    }
    for (i = 0; i < edge_num_inputs(&interp); i++) total += edge_input(&interp, i)->bytes;
    f = fopen(argv[1], "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size < 0 || (size_t)size != total) {
        fprintf(stderr, "%s: %ld bytes, the model's inputs take %lu\n", argv[1], size, (unsigned long)total);
        fclose(f);
        return 2;
    }
    for (i = 0; i < edge_num_inputs(&interp); i++) {
        edge_tensor_t *t = edge_input(&interp, i);
        if (fread(t->data, 1, t->bytes, f) != t->bytes) {
            fprintf(stderr, "%s: short read\n", argv[1]);
            fclose(f);
            return 2;
        }
    }
    fclose(f);
    s = edge_invoke(&interp);
    if (s != EDGE_OK) {
        fprintf(stderr, "edge_invoke: %s\n", edge_status_str(s));
        return 1;
    }
    f = fopen(argv[2], "wb");
    if (!f) {
        fprintf(stderr, "%s: cannot create\n", argv[2]);
        return 2;
    }
    for (i = 0; i < edge_num_outputs(&interp); i++) {
        const edge_tensor_t *t = edge_output(&interp, i);
        if (fwrite(t->data, 1, t->bytes, f) != t->bytes) {
            fprintf(stderr, "%s: write failed\n", argv[2]);
            fclose(f);
            return 1;
        }
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "%s: write failed\n", argv[2]);
        return 1;
    }
    used = edge_arena_used(&interp);
    hw = edge_arena_high_water(&interp);
    fprintf(stderr, "ok: %d inputs, %d outputs, arena %lu of %lu bytes\n", (int)edge_num_inputs(&interp),
            (int)edge_num_outputs(&interp), (unsigned long)(used > hw ? used : hw), (unsigned long)arena_len);
    return 0;
}
'''

_EXAMPLE_UART = r'''/* edge_example - one inference of the exported model on the board, reported on its UART:
 *     status S          edge_init's status (0: ok; the order of edge_status.def)
 *     required N        (arena too small only) the bytes edge_init needs
 *     arena NEED        the most arena bytes in use at once (edge_arena_used, edge_arena_high_water; of
 *                       EDGE_MODEL_ARENA_BYTES)
 *     out K HASH        FNV-1a (32 bit) of output K's bytes
 *     done
 * then board_exit(status) (QEMU with -semihosting-config enable=on,target=native exits with it).
 * The inputs are filled from a fixed sequence: byte k of all inputs (input 0 first) is the top byte of the
 * k+1-th step of the LCG seed = seed * 1664525 + 1013904223 from seed 12345. Replace that call with your
 * sensor data. The inputs, the hash and the UART lines are edge_image_report.h's (firmware_c/tools/, the same
 * code as edge-sdk's own firmware image). Build with -DEDGE_EXAMPLE_ARENA_BYTES=N to give edge_init an arena of N
 * bytes instead of EDGE_MODEL_ARENA_BYTES (fewer than the model needs: status of EDGE_ARENA_TOO_SMALL). */
#include <stdint.h>

#include "board.h"
#include "edge.h"
#include "edge_model.h"
#include "edge_image_report.h"

static edge_interp_t interp;
#ifndef EDGE_EXAMPLE_ARENA_BYTES
#define EDGE_EXAMPLE_ARENA_BYTES EDGE_MODEL_ARENA_BYTES
#endif
static uint8_t arena[EDGE_EXAMPLE_ARENA_BYTES] BOARD_LARGE_BSS;
static const edge_patch_plan_t plan = EDGE_MODEL_PATCH_PLAN; /* the patch stage, if any */

int main(void) {
    edge_status_t s;
    uint32_t seed = EDGE_REPORT_SEED;

    board_init();
#ifdef EDGE_EXAMPLE_WAIT_START
    (void)board_uart_getc(); /* QEMU's TCP serial drops output sent before the host connects */
#endif
    s = edge_init_patch(&interp, edge_model_data, edge_model_data_len, arena, sizeof arena, EDGE_MODEL_INIT_FLAGS, &plan);
    edge_report_line("status", (uint32_t)s);
    if (s == EDGE_ARENA_TOO_SMALL) edge_report_line("required", (uint32_t)interp.error.required);
    if (s == EDGE_OK) {
        edge_report_fill_inputs(&interp, &seed);
        s = edge_invoke(&interp);
        if (s != EDGE_OK) edge_report_line("status", (uint32_t)s);
    }
    if (s == EDGE_OK) {
        size_t used = edge_arena_used(&interp), hw = edge_arena_high_water(&interp);
        edge_report_line("arena", (uint32_t)(used > hw ? used : hw));
        edge_report_outputs(&interp);
    }
    board_print("done\r\n");
    board_exit((int)s);
}
'''

# The example firmware's report (inputs, output hash, UART lines): firmware_c's own, shared with tools/image_main.c
REPORT_HEADER = "edge_image_report.h"


_EXAMPLE_LIBRARY = r'''/* edge_example.c - one inference of the exported model (this target has no board support in edge-sdk: call
 * edge_example_run() from your own main after your clock and UART setup). Returns edge_init's or edge_invoke's
 * status; the outputs are then at edge_output(edge_example_interp(), k)->data. */
#include <string.h>

#include "edge.h"
#include "edge_model.h"

static edge_interp_t interp;
static uint8_t arena[EDGE_MODEL_ARENA_BYTES] __attribute__((aligned(16)));
static const edge_patch_plan_t plan = EDGE_MODEL_PATCH_PLAN; /* the patch stage, if any */

edge_interp_t *edge_example_interp(void);
edge_status_t edge_example_run(const void *const *inputs);

edge_interp_t *edge_example_interp(void) { return &interp; }

/* inputs[k]: input k's bytes (EDGE_MODEL_INPUT<k>_BYTES); inputs NULL: zeros */
edge_status_t edge_example_run(const void *const *inputs) {
    int32_t i;
    edge_status_t s = edge_init_patch(&interp, edge_model_data, edge_model_data_len, arena, sizeof arena, EDGE_MODEL_INIT_FLAGS, &plan);
    if (s != EDGE_OK) return s;
    for (i = 0; i < edge_num_inputs(&interp); i++) {
        edge_tensor_t *t = edge_input(&interp, i);
        if (inputs) memcpy(t->data, inputs[i], t->bytes);
        else memset(t->data, 0, t->bytes);
    }
    return edge_invoke(&interp);
}
'''


# ------------------------------------------------------------------------------------------------ build files
def _cmake_list(items) -> str:
    return " ".join(f'"{x}"' if " " in x else x for x in items)


def _toolchain_cmake(t: _Target) -> str:
    system = "Linux" if t.hosted else "Generic"
    proc = "arm" if "arm" in t.triple else (t.triple.split("-")[0] or "unknown")
    lines = [f"# Toolchain file for {t.profile.name}: {t.compiler} (generated by `edge export`).",
             f"set(CMAKE_SYSTEM_NAME {system})", f"set(CMAKE_SYSTEM_PROCESSOR {proc})",
             f"set(CMAKE_C_COMPILER {t.compiler})"]
    if not t.hosted:
        lines += ["# no OS: CMake's compiler check links a static library instead of a program",
                  "set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)"]
    lines += [f'set(CMAKE_C_FLAGS_INIT "{" ".join(t.cflags)}")',
              "set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)", "set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)",
              "set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)", ""]
    return "\n".join(lines)


def _cmake(t: _Target, srcs: list[str], defs: list[str], name: str) -> str:
    toolchain = f"cmake/{t.triple or 'cross'}.cmake"
    lines = [f"# {name} with edge-sdk's C runtime for {t.profile.name} (generated by `edge export`).",
             "#   cmake -S . -B build && cmake --build build", "cmake_minimum_required(VERSION 3.13)"]
    if t.cross:
        lines += ["# a cross target: this export's own toolchain file unless you give one",
                  "if(NOT CMAKE_TOOLCHAIN_FILE)",
                  f"  set(CMAKE_TOOLCHAIN_FILE ${{CMAKE_CURRENT_SOURCE_DIR}}/{toolchain})", "endif()"]
    lines += ["project(edge_model C)", ""]
    if not t.cross:
        lines += [f'set(CMAKE_C_FLAGS "${{CMAKE_C_FLAGS}} {" ".join(t.cflags)}")', ""]
    lines += ["# the runtime + the model: link edge_model into your firmware",
              "add_library(edge_model STATIC", *[f"  {s}" for s in srcs], ")",
              "target_include_directories(edge_model PUBLIC include model PRIVATE src)",
              f"target_compile_options(edge_model PRIVATE {_cmake_list(WARN_FLAGS + t.board_cflags)})"]
    if defs:
        lines.append(f"target_compile_definitions(edge_model PRIVATE {' '.join(d[2:] for d in defs)})")
    if _mcu(t):  # the measured Cortex-M build (see _MCU_MAKE_VARS): cmake -DSTATUS_DEFS= / -DARM_LTO= opt out
        lines += ["# STATUS_DEFS: a refusal's reason is kept as its source line (\"@1234\"):",
                  "# edge_sdk.device.status_sites.decode(msg) gives the sentence (the same edge-sdk version)",
                  'set(STATUS_DEFS "-DEDGE_STATUS_SITES" CACHE STRING "EDGE_STATUS_SITES, or empty: reason texts")',
                  "# ARM_LTO: link-time optimisation (fat objects: a link without -flto still works)",
                  'set(ARM_LTO "-flto;-ffat-lto-objects" CACHE STRING "link-time optimisation flags, or empty")',
                  "target_compile_options(edge_model PRIVATE ${STATUS_DEFS} ${ARM_LTO})"]
    lines.append("target_link_libraries(edge_model PUBLIC m)")
    lines.append("")
    if t.example == "files":
        lines += ["add_executable(edge_example example/main.c)",
                  f"target_compile_options(edge_example PRIVATE {_cmake_list(WARN_FLAGS)})",
                  "target_link_libraries(edge_example edge_model)"]
    elif t.example == "uart":
        board_srcs = [f"board/{p.name}" for p in t.board_files if p.suffix == ".c"]
        lines += ["# the example firmware: the board's start-up, UART and linker script (board/)",
                  "add_executable(edge_example example/main.c", *[f"  {s}" for s in board_srcs], ")",
                  "set_target_properties(edge_example PROPERTIES SUFFIX .elf)",
                  "target_include_directories(edge_example PRIVATE board)",
                  f"target_compile_options(edge_example PRIVATE {_cmake_list(WARN_FLAGS + t.board_cflags)})",
                  f"target_link_options(edge_example PRIVATE -T${{CMAKE_CURRENT_SOURCE_DIR}}/board/{t.ldscript.name} "
                  f"-L${{CMAKE_CURRENT_SOURCE_DIR}}/board {_cmake_list(t.board_ldflags)} "
                  "-Wl,-Map,${CMAKE_CURRENT_BINARY_DIR}/edge_example.map)",
                  "target_link_libraries(edge_example edge_model)",
                  *(["if(ARM_LTO)", "  target_link_options(edge_example PRIVATE -flto=auto)", "endif()"]
                    if _mcu(t) else []),
                  "# cmake -DEDGE_EXAMPLE_ARENA_BYTES=N: the example's arena is N bytes (default EDGE_MODEL_ARENA_BYTES)",
                  "if(EDGE_EXAMPLE_ARENA_BYTES)",
                  "  target_compile_definitions(edge_example PRIVATE EDGE_EXAMPLE_ARENA_BYTES=${EDGE_EXAMPLE_ARENA_BYTES})",
                  "endif()"]
    else:
        lines += ["# no board support for this target in edge-sdk: example/edge_example.c is a function to call",
                  "target_sources(edge_model PRIVATE example/edge_example.c)"]
    return "\n".join(lines) + "\n"


# A microcontroller export builds the runtime as firmware_c/Makefile's Cortex-M libraries (the build `make size`
# measures; same variable names to opt out: STATUS_DEFS= keeps the reason texts, ARM_LTO= plain objects). The objects
# are fat (machine code besides GCC's intermediate code): a firmware linked without -flto, or by another compiler
# version, still links the library; the example links with -flto (the optimisation across runtime and op table).
_MCU_MAKE_VARS = [
    "# STATUS_DEFS: a refusal's reason is kept as its source line (\"@1234\"): edge_sdk.device.status_sites.decode(msg)",
    "# gives the sentence (the same edge-sdk version); STATUS_DEFS= keeps the texts (~2.5 KB more flash)",
    "STATUS_DEFS ?= -DEDGE_STATUS_SITES",
    "# ARM_LTO: link-time optimisation (fat objects: a link without -flto still works); ARM_LTO= plain objects",
    "ARM_LTO ?= -flto -ffat-lto-objects",
    "LINK_LTO := $(if $(ARM_LTO),-flto=auto)",
]


def _mcu(t: _Target) -> bool:
    """A microcontroller export (arm-none-eabi-gcc, no OS): the runtime built as the measured Cortex-M libraries."""
    return not t.hosted


def _makefile(t: _Target, srcs: list[str], defs: list[str], name: str) -> str:
    ex = {"files": "edge_example", "uart": "edge_example.elf", "none": ""}[t.example]
    lines = [f"# {name} with edge-sdk's C runtime for {t.profile.name} (generated by `edge export`).",
             "#   make            build/libedge_model.a" + (f" and build/{ex}" if ex else ""),
             "#   make CC=...     another compiler; BUILD=dir another output folder", "",
             f"CC := {t.compiler}",
             "AR := " + (f"{t.triple}-gcc-ar" if _mcu(t) else f"{t.triple}-ar" if t.cross and t.triple else "ar"),
             "BUILD ?= build", f"CPU_FLAGS := {' '.join(t.cflags)}", *(_MCU_MAKE_VARS if _mcu(t) else []),
             f"CFLAGS := {' '.join(WARN_FLAGS)} $(CPU_FLAGS) {' '.join(t.board_cflags)} -Iinclude -Imodel -Isrc",
             f"DEFS := {' '.join(defs)}", f"SRCS := {' '.join(srcs)}",
             "OBJS := $(patsubst %.c,$(BUILD)/%.o,$(SRCS))", "",
             *(["# the runtime's objects (the library); the example's and the board's stay plain objects",
                "$(OBJS): CFLAGS += $(STATUS_DEFS) $(ARM_LTO)", ""] if _mcu(t) else []),
             f".PHONY: all clean\nall: $(BUILD)/libedge_model.a{' $(BUILD)/' + ex if ex else ''}", "",
             "$(BUILD)/%.o: %.c $(wildcard include/*.h include/*.def src/*.h model/*.h)", "\t@mkdir -p $(dir $@)",
             "\t$(CC) $(CFLAGS) $(DEFS) -c $< -o $@", "",
             "$(BUILD)/libedge_model.a: $(OBJS)", "\trm -f $@", "\t$(AR) rcs $@ $^", ""]
    if t.example == "files":
        lines += ["$(BUILD)/edge_example: $(BUILD)/example/main.o $(BUILD)/libedge_model.a",
                  "\t$(CC) $(CPU_FLAGS) -o $@ $^ -lm", ""]
    elif t.example == "uart":
        board_srcs = [f"board/{p.name}" for p in t.board_files if p.suffix == ".c"]
        lines += [f"BOARD_SRCS := {' '.join(board_srcs)}",
                  "BOARD_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(BOARD_SRCS))",
                  "$(BUILD)/example/main.o $(BOARD_OBJS): CFLAGS += -Iboard", "",
                  f"$(BUILD)/edge_example.elf: $(BUILD)/example/main.o $(BOARD_OBJS) $(BUILD)/libedge_model.a "
                  f"board/{t.ldscript.name}",
                  f"\t$(CC) $(CPU_FLAGS) $(LINK_LTO) -o $@ $(filter %.o %.a,$^) -Tboard/{t.ldscript.name} -Lboard "
                  f"{' '.join(t.board_ldflags)} -Wl,-Map,$(BUILD)/edge_example.map", ""]
    lines += ["clean:", "\trm -rf $(BUILD)", ""]
    return "\n".join(lines)


def _zephyr(srcs: list[str], defs: list[str], name: str) -> dict[str, str]:
    cm = [f"# {name} with edge-sdk's C runtime as a Zephyr module (generated by `edge export`).",
          "if(CONFIG_EDGE_MODEL)", "  zephyr_library()", *[f"  zephyr_library_sources({s})" for s in srcs],
          "  zephyr_include_directories(include model)", "  zephyr_library_include_directories(src)"]
    if defs:
        cm.append(f"  zephyr_library_compile_definitions({' '.join(d[2:] for d in defs)})")
    cm += ["endif()", ""]
    kconfig = ("config EDGE_MODEL\n\tbool \"edge-sdk C runtime and the exported model\"\n"
               "\tselect REQUIRES_FULL_LIBC\n"
               "\thelp\n\t  edge-sdk's C micro-runtime (no malloc) with the model exported by `edge export`;\n"
               "\t  include edge.h and edge_model.h, give edge_init an arena of EDGE_MODEL_ARENA_BYTES.\n")
    module = "name: edge_model\nbuild:\n  cmake: .\n  kconfig: Kconfig\n"
    sample_cm = ("cmake_minimum_required(VERSION 3.20.0)\nfind_package(Zephyr REQUIRED HINTS $ENV{ZEPHYR_BASE})\n"
                 "project(edge_example)\ntarget_sources(app PRIVATE src/main.c)\n")
    sample_main = _EXAMPLE_LIBRARY.replace("call\n * edge_example_run() from your own main after your clock and "
                                           "UART setup", "Zephyr's\n * main below calls edge_example_run()")
    sample_main += ("\n#include <zephyr/kernel.h>\n\nint main(void) {\n"
                    "    edge_status_t s = edge_example_run(0); /* zeros: give your inputs' bytes */\n"
                    "    printk(\"edge_example: %s\\n\", edge_status_str(s));\n    return 0;\n}\n")
    return {"CMakeLists.txt": "\n".join(cm), "Kconfig": kconfig, "zephyr/module.yml": module,
            "samples/edge_example/CMakeLists.txt": sample_cm,
            "samples/edge_example/prj.conf": "CONFIG_EDGE_MODEL=y\nCONFIG_PRINTK=y\n",
            "samples/edge_example/src/main.c": sample_main}


def _arduino(name: str, sha: str) -> dict[str, str]:
    props = ("name=EdgeModel\nversion=1.0.0\nauthor=edge-sdk export\nmaintainer=edge-sdk export\n"
             f"sentence=edge-sdk's C runtime with the model {name}.\n"
             f"paragraph=No malloc: give edge_init an arena of EDGE_MODEL_ARENA_BYTES. Model sha256 {sha[:16]}.\n"
             "category=Data Processing\nurl=https://github.com/edge-sdk/edge-sdk\narchitectures=*\n"
             "includes=EdgeModel.h\n")
    header = ("/* EdgeModel.h - the Arduino library's header: the runtime's API and the exported model. */\n"
              "#ifndef EDGE_MODEL_ARDUINO_H\n#define EDGE_MODEL_ARDUINO_H\n"
              '#include "edge.h"\n#include "edge_model.h"\n#endif\n')
    sketch = ('#include <EdgeModel.h>\n\nstatic edge_interp_t interp;\n'
              "alignas(16) static uint8_t arena[EDGE_MODEL_ARENA_BYTES];\n"
              "static const edge_patch_plan_t plan = EDGE_MODEL_PATCH_PLAN;  // the patch stage, if any\n\n"
              "void setup() {\n  Serial.begin(115200);\n"
              "  edge_status_t s = edge_init_patch(&interp, edge_model_data, edge_model_data_len, arena, sizeof arena, EDGE_MODEL_INIT_FLAGS, &plan);\n"
              "  if (s == EDGE_OK) {\n    memset(edge_input(&interp, 0)->data, 0, edge_input(&interp, 0)->bytes);"
              "  // your sensor data here\n    s = edge_invoke(&interp);\n  }\n"
              "  Serial.print(\"edge_example: \");\n  Serial.println(edge_status_str(s));\n}\n\n"
              "void loop() {}\n")
    return {"library.properties": props, "src/EdgeModel.h": header,
            "examples/edge_example/edge_example.ino": sketch}


def patch_stage_words(memory: str | None, plan: str, patch) -> str:
    """The README's line on EDGE_MODEL_PATCH_PLAN in words: the stage run patch by patch, or why there is none
    (``memory`` the plan asked for, ``plan`` the one built, ``patch`` its patching.PatchPlan or None)."""
    from edge_sdk.runtime.planner import PLAN_WORDS, builds_stage

    if patch is not None:
        first, last, rows, cols = _plan_numbers(patch)
        return (f"least-RAM patch stage: nodes {first}..{last} run patch by patch over a {rows}x{cols} grid "
                f"(+{patch.extra_macs} MACs)")
    if builds_stage(memory):
        return f"least-RAM patch stage: none (no stage needs less RAM patch by patch; the {PLAN_WORDS[plan]} plan)"
    return (f"least-RAM patch stage: none (the {PLAN_WORDS[plan]} plan runs every op whole; "
            "`edge export --memory min` looks for one)")


def _readme(t: _Target, fmt: str, name: str, sha: str, arena: int, source: str, inputs, outputs, defs,
            arena_how: str = "", stage: str = "") -> str:
    io = "\n".join(f"- {kind} {k}: `{r['name']}` {r['type']} {r['shape']}, {r['bytes']} bytes"
                   + (f", scale {r['scale'][0]:.9g}, zero point {r['zero_point'][0]}" if r["scale"] else "")
                   + ("; the model's UINT8: int8 = uint8 ^ 0x80 (`edge_model_flip_uint8(data, bytes)`)"
                      if r.get("model_type") == "UINT8" else "")
                   for kind, rows in (("input", inputs), ("output", outputs)) for k, r in enumerate(rows))
    how = {
        "cmake": "    cmake -S . -B build && cmake --build build\n"
                 + ("\n(the cross toolchain file under cmake/ is selected automatically; pass your own with "
                    "-DCMAKE_TOOLCHAIN_FILE=...)\n" if t.cross else ""),
        "make": "    make            # build/libedge_model.a and the example\n",
        "zephyr": "Add this folder to ZEPHYR_EXTRA_MODULES (or your west manifest), set CONFIG_EDGE_MODEL=y;\n"
                  "samples/edge_example is an application using it. Needs a libc with libm (newlib or picolibc).\n"
                  + (f"The type switches {' '.join(defs)} are compiler definitions of the module's library.\n"
                     if defs else ""),
        "arduino": "Copy this folder into your Arduino libraries folder (or Sketch > Include Library > Add .ZIP);\n"
                   "examples/edge_example is a sketch. Arduino libraries cannot set compiler definitions: the\n"
                   "runtime is compiled with every tensor type (the other formats leave unused ones out).\n",
    }[fmt]
    if _mcu(t) and fmt in ("cmake", "make"):
        opt = "-DSTATUS_DEFS=" if fmt == "cmake" else "STATUS_DEFS="
        how += ("\nThe runtime is built as edge-sdk measures its flash (STATUS_DEFS, ARM_LTO): a refusal's reason is\n"
                "kept as its source line, so `edge_error_message` ends in \"@<line>\"; "
                "`python -c \"from edge_sdk.device.status_sites import decode; print(decode('MESSAGE'))\"`\n"
                f"(the edge-sdk that exported this) prints the sentence. `{opt}` keeps the texts (~2.5 KB more flash), "
                f"`{opt.replace('STATUS_DEFS', 'ARM_LTO')}` builds without link-time optimisation.\n")
    ex = {"files": "`edge_example IN.bin OUT.bin [ARENA_BYTES]`: the inputs' raw bytes in (input 0 first), the "
                   "outputs' raw bytes out; prints the arena it used (ARENA_BYTES: try a smaller arena).",
          "uart": "`edge_example.elf` for the board: fills the inputs from a fixed pseudo-random sequence, runs "
                  "once, prints `status`, `arena`, `out K FNV1A` and `done` on the UART (build with "
                  "-DEDGE_EXAMPLE_ARENA_BYTES=N to try a smaller arena)"
                  + (" (`qemu-system-arm -M mps2-an386 -nographic -monitor none -semihosting-config "
                     "enable=on,target=native -kernel build/edge_example.elf`)" if t.board == "qemu-mps2-an386"
                     else "") + ".",
          "none": "`example/edge_example.c`: `edge_example_run(inputs)` to call from your own main."}[t.example]
    if fmt in ("zephyr", "arduino"):
        ex = "see the sample above."
    arena_text = "\n".join(textwrap.wrap(
        f"The arena: {arena} bytes, {ARENA_SOURCES[source]}{'; ' + arena_how if arena_how else ''}. Give it 16-byte "
        "aligned (an unaligned arena loses up to 15 bytes). Write the inputs before every `edge_invoke`: the arena "
        "reuses their bytes.", 110, break_on_hyphens=False))
    return f"""# {name} with edge-sdk's C runtime ({t.profile.name}, {fmt})

Generated by `edge export` from `{name}` (sha256 `{sha}`).

## Build

{how}
## Use

```c
#include "edge.h"
#include "edge_model.h"

static edge_interp_t interp;
static uint8_t arena[EDGE_MODEL_ARENA_BYTES] __attribute__((aligned(16)));
/* {stage} */
static const edge_patch_plan_t plan = EDGE_MODEL_PATCH_PLAN;

edge_init_patch(&interp, edge_model_data, edge_model_data_len, arena, sizeof arena, EDGE_MODEL_INIT_FLAGS, &plan);
memcpy(edge_input(&interp, 0)->data, x, edge_input(&interp, 0)->bytes);
edge_invoke(&interp);
y = edge_output(&interp, 0)->data;
```

{arena_text}

{io}

Example: {ex}

Compiler flags of {t.profile.name}: `{' '.join(t.cflags)}`{(' ' + '`' + ' '.join(defs) + '`') if defs else ''}.
Only the kernels of this model's ops are included (src/kernels/); the op table is src/edge_ops_generated.c.
"""


# ------------------------------------------------------------------------------------------------ export
def export(model_path, target, fmt: str, out_dir, memory: str = "layer", input_shapes=None) -> ExportResult:
    """Write the export folder ``out_dir`` (must not exist, or be empty) for ``model_path`` and the profile
    ``target`` (name, path or Profile) in format ``fmt`` (one of FORMATS); see the module docstring.
    ``input_shapes`` (`--input-shape`): the model exported with its inputs at these shapes
    (edge_sdk.model.input_shapes; a -1 beyond the batch axis without one is a UsageError)."""
    from edge_sdk.model import read_model
    from edge_sdk.model.input_shapes import shaped_model_path
    from edge_sdk.runtime.c_loaded import c_path
    from edge_sdk.runtime.uint8 import SHIFT, c_io, c_io_note
    from edge_sdk.targets.profiles import load_profile

    from edge_sdk.runtime.planner import MEMORY_PLANS, choose_plan

    if memory not in MEMORY_PLANS:
        raise UsageError(f"unknown memory plan {memory!r} (plans: {', '.join(MEMORY_PLANS)})")
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r} (formats: {', '.join(FORMATS)})")
    out = Path(out_dir)  # -o: a misuse of the command line when it cannot be written (exit 2)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o/--output {out} is a file: give a new or empty folder")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"-o/--output: the output folder {out} exists and is not empty (give a new or empty folder)")
    profile = load_profile(target)
    model_path = shaped_model_path(model_path, input_shapes)  # the file gen_ops and the builds read too
    model_path, uint8_pairs = c_path(model_path)  # legacy UINT8: the model as the C runtime runs it, as INT8
    data = model_path.read_bytes()
    model = read_model(data)
    sha = hashlib.sha256(data).hexdigest()
    kernels = _flash.kernel_files(model)  # UnsupportedOpError: an op the C runtime has no kernel for
    t = _Target(profile)
    gen_ops = op_table.gen_ops_module()
    defs = gen_ops.type_defines([str(model_path)])
    sg0 = model.subgraphs[0]
    inputs, outputs = _io(model, sg0.inputs), _io(model, sg0.outputs)
    for rows, flipped in zip((inputs, outputs), c_io(model, uint8_pairs)):
        for k in flipped:  # held as INT8 (the row's type and zero point); the model's own, said beside them
            rows[k]["model_type"], rows[k]["model_zero_point"] = "UINT8", [z + SHIFT for z in rows[k]["zero_point"]]
    name = model_path.name
    # the plan built, and why not the one asked for (the planner's words, as edge check and edge flash say them):
    # "min"'s stage is the one they run (planner.c_patch_stage)
    choice = choose_plan(data, memory, runtime="c", need=lambda asked: None)
    plan, patch, plan_warnings = choice.plan, choice.stage, list(choice.notes)
    log.stage(f"exporting {name} for {profile.name} ({fmt}) to {out}")

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        files: dict[str, str | Path] = {}
        arduino = fmt == "arduino"
        inc = "src/" if arduino else "include/"
        for h in sorted((_flash.FIRMWARE / "include").iterdir()):
            if h.suffix in (".h", ".def"):
                files[inc + h.name] = h
        for h in sorted((_flash.FIRMWARE / "src").glob("*.h")):
            files["src/" + h.name] = h
        files["src/edge.c"] = _flash.FIRMWARE / "src" / "edge.c"
        # the kernels include src/simd/edge_simd.h; without -DEDGE_WITH_SIMD it turns the fast paths off (an
        # export builds the portable kernels: the code that runs on every target, TFLM's arithmetic)
        for h in sorted((_flash.FIRMWARE / "src" / "simd").glob("*.h")):
            files["src/simd/" + h.name] = h
        for k in kernels:
            files[f"src/kernels/{k}"] = _flash.FIRMWARE / "src" / "kernels" / k
        mdir = "src/" if arduino else "model/"
        files[mdir + "edge_model_data.c"] = _flash.model_c_source(
            data, "edge_model_data", section=".edge_model" if t.board and fmt in ("cmake", "make") else None).replace(
            "#include <stdint.h>", '#include <stdint.h>\n#include "edge_model.h"', 1)
        if fmt in ("cmake", "make"):
            files["example/main.c"] = {"files": _EXAMPLE_FILES, "uart": _EXAMPLE_UART}.get(t.example, "")
            if t.example == "none":
                del files["example/main.c"]
                files["example/edge_example.c"] = _EXAMPLE_LIBRARY
            if t.example == "uart":
                files[f"example/{REPORT_HEADER}"] = _flash.FIRMWARE / "tools" / REPORT_HEADER
            for p in t.board_files:
                files[f"board/{p.name}"] = p
            if t.ldscript is not None:
                files[f"board/{t.ldscript.name}"] = t.ldscript
        for rel, src in files.items():
            dst = tmp / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(src, Path):
                shutil.copyfile(src, dst)
            else:
                dst.write_text(src)
        # the op table: gen_ops.py for exactly this model's ops
        table = tmp / "src" / "edge_ops_generated.c"
        if gen_ops.main([str(table), "--model", str(model_path)]) != 0 or not table.exists():
            raise ModelError(f"gen_ops.py could not write the op table for {model_path}")
        # the arena: measured on these very sources, built for the target and run (arena_need)
        # (Arduino builds every tensor type: no type switches there)
        arena, source, arena_how = arena_need(data, memory, (tmp, model_path, t, [] if arduino else defs), patch)
        flag = "" if memory == "layer" else f" --memory {memory}"
        if t.hosted:  # what a user compares it with on a Linux target: other builds, other figures
            arena_note = ("These sources build the portable kernels (no SIMD fast paths). "
                          f"`edge check --target {profile.name}` reports the Python interpreter's tensor plan, and "
                          "the C backend of `edge run` (edge-sdk's host library, built with the SIMD fast paths, "
                          "whose packed weights live in the arena) needs more: other builds, not these sources")
        else:
            arena_note = (f"`edge check --target {profile.name}{flag}` measures the same build (its 32-bit runner) "
                          "and reports this figure")
        warnings = plan_warnings + ([] if source == "target" else [f"the arena size is {ARENA_SOURCES[source]}"])
        (tmp / mdir / "edge_model.h").write_text(model_header(name, arena, source, inputs, outputs, sha, len(data),
                                                              plan, patch, c_memory_min(memory),
                                                              f"{arena_how}. {arena_note}"))
        srcs = sorted(str(p.relative_to(tmp)) for p in (tmp / "src").rglob("*.c"))
        if fmt != "arduino":
            srcs += [str(Path(mdir) / "edge_model_data.c")]
        extra: dict[str, str] = {}
        if fmt == "cmake":
            extra["CMakeLists.txt"] = _cmake(t, srcs, defs, name)
            if t.cross:
                extra[f"cmake/{t.triple or 'cross'}.cmake"] = _toolchain_cmake(t)
        elif fmt == "make":
            extra["Makefile"] = _makefile(t, srcs, defs, name)
        elif fmt == "zephyr":
            extra.update(_zephyr(srcs, defs, name))
        else:
            extra.update(_arduino(name, sha))
        extra["README.md"] = _readme(t, fmt, name, sha, arena, source, inputs, outputs, defs,
                                     f"{arena_how}. {arena_note}", patch_stage_words(memory, plan, patch))
        for rel, text in extra.items():
            dst = tmp / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(text)
        result = ExportResult(out_dir=str(out), format=fmt, profile=profile.name, model=str(model_path),
                              model_sha256=sha, model_bytes=len(data), arena_bytes=arena,
                              arena_source=source, arena_build=arena_how, memory=plan, memory_request=memory,
                              board=t.board, example=t.example, kernels=kernels, type_defs=defs, cflags=t.cflags,
                              inputs=inputs, outputs=outputs, warnings=warnings,
                              patch=None if patch is None else patch.to_dict(),
                              uint8_io=c_io_note(model, uint8_pairs))
        result.files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file()) + ["export.json"]
        (tmp / "export.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
        os.chmod(tmp, 0o755)  # mkdtemp's 0700 -> an ordinary folder
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result


def format_export(r: ExportResult) -> str:
    how = {"cmake": f"cmake -S {r.out_dir} -B BUILD && cmake --build BUILD", "make": f"make -C {r.out_dir}",
           "zephyr": f"add {r.out_dir} to ZEPHYR_EXTRA_MODULES, CONFIG_EDGE_MODEL=y",
           "arduino": f"copy {r.out_dir} into your Arduino libraries folder"}[r.format]
    lines = [f"exported {Path(r.model).name} for {r.profile} ({r.format}) to {r.out_dir}: {len(r.files)} files, "
             f"{len(r.kernels)} kernel files",
             r.arena_line() + f" = EDGE_MODEL_ARENA_BYTES; model {r.model_bytes} B"
             + (f", example: {r.example}" if r.format in ("cmake", "make") else ""),
             f"build: {how}"]
    if r.patch:
        (first, last), (rows, cols) = r.patch["nodes"], r.patch["grid"]
        lines.insert(2, f"patch stage: nodes {first}..{last}, grid {rows}x{cols}, +{r.patch['extra_macs']} MACs "
                        "(edge_init_patch with EDGE_MODEL_PATCH_PLAN)")
    lines += [f"note: {r.uint8_io} (edge_model.h: edge_model_flip_uint8)"] if r.uint8_io else []
    lines += [f"warning: {w}" for w in r.warnings]
    return "\n".join(lines) + "\n"
