"""TFLM + CMSIS-NN on the QEMU Cortex-M4 board, built and measured here (issue 25: the MCU peer on many models).

    python benchmarks/tflm_cmsis.py --tflm DIR --cmsis-nn DIR --flatbuffers DIR --gemmlowp DIR --ruy DIR
                                    [--kernels cmsis_nn|reference] [--per-node] [--compare] [--record]
                                    MODEL.tflite ...

The sources are NOT part of this repository: fetch them (tflite-micro, CMSIS-NN at the commit TFLM pins in
tools/make/ext_libs/cmsis_nn_download.sh, flatbuffers at the tag TFLM pins with TFLM's flatbuffers.patch applied,
gemmlowp and ruy at TFLM's commits) into a folder outside the repository and point the flags at them.

What it builds, the way TFLM's own Makefile does for `TARGET=cortex_m_generic TARGET_ARCH=cortex-m4+fp
OPTIMIZED_KERNEL_DIR=cmsis_nn BUILD_TYPE=release` (the issue's anchors): TFLM's micro core (-Os), its kernels
(-O2; tensorflow/lite/micro/kernels/cmsis_nn/X.cc in place of kernels/X.cc where it exists, with --kernels
cmsis_nn), CMSIS-NN's sources (-O2), `-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard -mthumb`,
-DCMSIS_NN -DNDEBUG -DTF_LITE_STRIP_ERROR_STRINGS -DTF_LITE_STATIC_MEMORY, C++17. The library is cached by a hash of
the compiler, the flags and every source and header it reads, under $EDGE_CACHE_DIR/tflm-cmsis/.
Then one firmware per model: a small harness (below, -Os) with a MicroMutableOpResolver of the model's ops, the
model's bytes linked in (.edge_model, the board's PSRAM), the arena in the board's PSRAM, and firmware_c/boards'
startup, linker script, UART and SysTick code for qemu-mps2-an386 (read from this checkout, compiled as the
firmware build compiles them, less minilibc.c: TFLM gets newlib-nano's memcpy as with its own Makefile).
The harness fills every input byte i with (i*37+11) mod 256 (the issue's input), reads SysTick around the first
Invoke() of a fresh interpreter and prints the ticks, arena_used_bytes() and the output bytes on the UART; with
--per-node a second interpreter runs once more through a resolver whose registrations' invoke is wrapped by a
SysTick read (the release build has no MicroProfiler events: TF_LITE_STRIP_ERROR_STRINGS removes them), which
gives ticks per node (each +-1 tick, plus the wrapper's own ~1 tick).
QEMU: `qemu-system-arm -M mps2-an386 -icount shift=0 -nographic -monitor none -semihosting`: one guest
instruction is 1 ns of virtual time and SysTick counts the 25 MHz core clock, so 1 tick = 40 instructions:
instructions per invoke = ticks x 40 (EMULATED INSTRUCTION COUNTS, +-40; not cycles, not time on silicon).
--compare: the output bytes beside edge-sdk's C runtime on the host (CInterpreter, the same input bytes; the board
runs the same C code, bit-exact with the host: `edge profile` validates that).
--record: the figures go to benchmarks/mcu_anchors.json under "measured" (per model file name), with the
toolchain, the source commits (--tflm-commit / --cmsis-nn-commit, as given) and the date.
Exit status: 0 when every model ran (and, with --compare, matched), 1 otherwise; 2 for misuse.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BOARDS = REPO / "firmware_c" / "boards"
BOARD = "qemu-mps2-an386"
ANCHORS = Path(__file__).with_name("mcu_anchors.json")
TICK_INSTRUCTIONS = 40  # -icount shift=0: 1 instruction = 1 ns; SysTick at 25 MHz = 40 ns a tick
PSRAM_BYTES = 16 * 1024 * 1024  # the board's PSRAM (board.ld): the model and the arena share it
QEMU_TIMEOUT = 1800  # seconds of host time; a 224x224 MobileNetV2 (0.8 G instructions, twice) takes ~1 min

CPU_FLAGS = ["-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard", "-mthumb", "-mlittle-endian"]
# TFLM's Makefile: COMMON_FLAGS, cortex_m_generic's PLATFORM_FLAGS, BUILD_TYPE=release, cmsis_nn.inc's defines
COMMON_FLAGS = ["-fno-unwind-tables", "-fno-asynchronous-unwind-tables", "-ffunction-sections", "-fdata-sections",
                "-fmessage-length=0", "-fomit-frame-pointer", "-funsigned-char", "-DTF_LITE_STATIC_MEMORY",
                "-DTF_LITE_DISABLE_X86_NEON", "-DTF_LITE_MCU_DEBUG_LOG", "-DKERNELS_OPTIMIZED_FOR_SPEED",
                "-DCPU_M4=1", "-DARMCM4", "-DNDEBUG", "-DTF_LITE_STRIP_ERROR_STRINGS", "-DARM_NN_ENABLE_F16=0",
                "-DARM_NN_ENABLE_F32=0", "-w"]
CXX_FLAGS = ["-std=c++17", "-fno-rtti", "-fno-exceptions", "-fno-threadsafe-statics"]
C_FLAGS = ["-std=c17"]
CORE_OPT, KERNEL_OPT = "-Os", "-O2"


class Misuse(Exception):
    """A bad flag or path: one line, exit 2."""


# ------------------------------------------------------------------------------------------ pure helpers

def input_bytes(n: int) -> bytes:
    """The issue's input: byte i = (i*37+11) mod 256 (every input tensor from its own byte 0)."""
    return bytes((i * 37 + 11) & 0xFF for i in range(n))


def make_var_list(text: str, name: str) -> list[str]:
    """The words of a make variable assigned with `NAME := \\` over continued lines (sources.inc), with
    $(TENSORFLOW_ROOT) dropped."""
    m = re.search(rf"^{re.escape(name)}\s*:?=(.*?)(?<!\\)\n", text, re.S | re.M)
    if not m:
        return []
    body = m.group(1).replace("\\\n", " ")
    return [w.replace("$(TENSORFLOW_ROOT)", "") for w in body.split() if w != "\\"]


def resolver_methods(header: str) -> dict[str, str]:
    """MicroMutableOpResolver's Add methods (micro_mutable_op_resolver.h) by normalized op name ("conv2d" ->
    "AddConv2D")."""
    return {m.lower(): "Add" + m for m in re.findall(r"TfLiteStatus\s+Add(\w+)\s*\(", header)}


def resolver_calls(op_names, methods: dict[str, str]) -> list[str]:
    """The Add calls for a model's builtin op names (["CONV_2D", ...] -> ["AddConv2D", ...]), each once, in the
    given order; a name TFLM's resolver lacks raises Misuse naming it."""
    out = []
    for name in op_names:
        method = methods.get(name.replace("_", "").lower())
        if method is None:
            raise Misuse(f"op {name}: TFLM's MicroMutableOpResolver has no Add method for it")
        if method not in out:
            out.append(method)
    return out


def parse_uart(text: str) -> dict:
    """The harness's UART lines -> {"ticks", "instructions", "arena", "outputs": [bytes], "nodes": [(op code,
    ticks)]}; raises ValueError naming what is missing (a fault line, a failed status)."""
    out: dict = {"outputs": [], "nodes": []}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "FAULT" or words[0] == "ERROR":
            raise ValueError(f"the board said: {line.strip()}")
        if words[0] == "ticks" and len(words) == 2:
            out["ticks"] = int(words[1])
        elif words[0] == "arena" and len(words) == 2:
            out["arena"] = int(words[1])
        elif words[0] == "out" and len(words) in (3, 4):
            index, size = int(words[1]), int(words[2])
            data = bytes.fromhex(words[3]) if len(words) == 4 else b""
            if index != len(out["outputs"]) or len(data) != size:
                raise ValueError(f"output {index}: {len(data)} bytes where the board announced {size}")
            out["outputs"].append(data)
        elif words[0] == "node" and len(words) == 4:
            out["nodes"].append((int(words[2]), int(words[3])))
    if "ticks" not in out or "arena" not in out:
        raise ValueError("no 'ticks' / 'arena' line from the board (it did not finish an invoke)")
    if out["ticks"] >= 1 << 31:  # a difference of two timer reads that went backwards
        raise ValueError(f"ticks {out['ticks']}: the timer stepped back during the invoke")
    out["instructions"] = out["ticks"] * TICK_INSTRUCTIONS
    return out


# ------------------------------------------------------------------------------------------ sources and library

def _source_dirs(a) -> dict[str, Path]:
    dirs = {"tflm": a.tflm, "cmsis_nn": a.cmsis_nn, "flatbuffers": a.flatbuffers, "gemmlowp": a.gemmlowp,
            "ruy": a.ruy}
    checks = {"tflm": "tensorflow/lite/micro/micro_interpreter.cc", "cmsis_nn": "Include/arm_nnfunctions.h",
              "flatbuffers": "include/flatbuffers/flatbuffers.h", "gemmlowp": "fixedpoint/fixedpoint.h",
              "ruy": "ruy/profiler/instrumentation.h"}
    out = {}
    for key, given in dirs.items():
        flag = "--" + key.replace("_", "-")
        if given is None:
            raise Misuse(f"{flag} DIR is required (the fetched {key} source tree)")
        p = Path(given).resolve()
        if not (p / checks[key]).is_file():
            raise Misuse(f"{flag} {given}: no {checks[key]} there")
        if REPO in (p, *p.parents):
            raise Misuse(f"{flag} {given}: inside this repository; fetched sources live outside it")
        out[key] = p
    return out


def tflm_sources(dirs: dict[str, Path], kernels: str) -> dict[str, list[Path]]:
    """{"core": [...], "kernels": [...], "third_party": [...]} as TFLM's Makefile (sources.inc, cmsis_nn.inc)
    lists them for this build, less the signal library (kissfft; no model here uses it)."""
    tflm = dirs["tflm"]
    inc = (tflm / "tensorflow/lite/micro/tools/make/sources.inc").read_text()
    tests = set(make_var_list(inc, "MICROLITE_TEST_SRCS"))
    core = []
    for sub in ("", "arena_allocator/", "memory_planner/", "tflite_bridge/"):
        for p in sorted((tflm / "tensorflow/lite/micro" / sub).glob("*.cc")):
            rel = str(p.relative_to(tflm))
            if rel not in tests and not rel.endswith(("_test.cc", "benchmark.cc")):
                core.append(p)
    for p in sorted((tflm / "tensorflow").rglob("*")):
        rel = p.relative_to(tflm).as_posix()
        if (p.suffix in (".cc", ".c") and not rel.startswith(("tensorflow/lite/micro/",
                                                               "tensorflow/lite/experimental/"))
                and rel != "tensorflow/lite/array.cc" and not rel.endswith("_test.cc")):
            core.append(p)
    kernel_srcs = []
    for rel in make_var_list(inc, "MICROLITE_CC_KERNEL_SRCS"):
        p = tflm / rel
        if kernels == "cmsis_nn":
            special = p.parent / "cmsis_nn" / p.name
            p = special if special.is_file() else p
        kernel_srcs.append(p)
    third = []
    if kernels == "cmsis_nn":
        third = sorted(p for p in (dirs["cmsis_nn"] / "Source").rglob("*.c")
                       if not p.name.endswith(("_f16.c", "_f32.c")) and p.name != "arm_nntables_flt.c")
    return {"core": core, "kernels": kernel_srcs, "third_party": third}


def include_flags(dirs: dict[str, Path]) -> list[str]:
    return [f"-I{dirs['tflm']}", f"-I{dirs['flatbuffers']}/include", f"-I{dirs['gemmlowp']}", f"-I{dirs['ruy']}",
            f"-I{dirs['cmsis_nn']}", f"-I{dirs['cmsis_nn']}/Include"]


def _compile_cmd(src: Path, obj: Path, opt: str, defines: list[str], incs: list[str]) -> list[str]:
    cxx = src.suffix == ".cc"
    return (["arm-none-eabi-g++" if cxx else "arm-none-eabi-gcc"] + CPU_FLAGS + COMMON_FLAGS + defines
            + (CXX_FLAGS if cxx else C_FLAGS) + [opt] + incs + ["-c", str(src), "-o", str(obj)])


def toolchain_version() -> str:
    return subprocess.run(["arm-none-eabi-gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]


def tree_key(dirs: dict[str, Path], kernels: str) -> str:
    """Hash of the compiler, the flags and every source and header of the trees read: an object compiled under
    one key is the same object for any selection of sources."""
    h = hashlib.sha256()
    h.update(toolchain_version().encode())
    h.update(json.dumps([CPU_FLAGS, COMMON_FLAGS, CXX_FLAGS, C_FLAGS, CORE_OPT, KERNEL_OPT, kernels]).encode())
    roots = [dirs["tflm"] / "tensorflow", dirs["cmsis_nn"] / "Include", dirs["cmsis_nn"] / "Source",
             dirs["flatbuffers"] / "include", dirs["gemmlowp"] / "fixedpoint", dirs["gemmlowp"] / "internal",
             dirs["ruy"] / "ruy" / "profiler"]
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.suffix in (".h", ".cc", ".c", ".inc") and p.is_file():
                h.update(p.as_posix().encode())
                h.update(p.read_bytes())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    base = os.environ.get("EDGE_CACHE_DIR") or str(Path.home() / ".cache" / "edge-sdk")
    return Path(base) / "tflm-cmsis"


REGISTER_DEF = re.compile(r"TFLMRegistration\s+Register_(\w+)\s*\(\s*\)\s*\{")


def select_kernels(kernel_srcs: list[Path], ops) -> list[Path]:
    """The kernel sources a firmware of these builtin ops links: every file that defines no Register_X (the
    shared *_common / eval helpers) and the files that define Register_<op> for an op given; all with ops None.
    (Compiling TFLM's ~120 kernel files takes most of the build on a loaded 2-core host.)"""
    if ops is None:
        return list(kernel_srcs)
    wanted = {o.upper() for o in ops}
    out = []
    for p in kernel_srcs:
        defined = set(REGISTER_DEF.findall(p.read_text(errors="replace")))
        if not defined or defined & wanted:
            out.append(p)
    return out


def object_name(group: str, src: Path, root: Path) -> str:
    """One object a source, named by its path (the object folder is shared by every selection)."""
    return f"{group}__{src.relative_to(root).as_posix().replace('/', '__')}.o"


def build_library(dirs: dict[str, Path], kernels: str, jobs: int, ops=None, log=print) -> Path:
    """libtflm.a (core -Os, kernels and CMSIS-NN -O2) of the kernels ``ops`` need (select_kernels; all when None).
    Objects are cached by tree_key in one folder, each written under a temporary name and then renamed (a stopped
    build keeps its whole objects, the next compiles only what is missing); the archive is cached by the key and
    the selection."""
    srcs = tflm_sources(dirs, kernels)
    srcs["kernels"] = select_kernels(srcs["kernels"], ops)
    key = tree_key(dirs, kernels)
    roots = {"core": dirs["tflm"], "kernels": dirs["tflm"], "third_party": dirs["cmsis_nn"]}
    objdir = cache_root() / f"{kernels}-{key}-objects"
    objdir.mkdir(parents=True, exist_ok=True)
    incs = include_flags(dirs)
    defines = ["-DCMSIS_NN"] if kernels == "cmsis_nn" else []
    todo, objs = [], []
    for group, opt in (("core", CORE_OPT), ("kernels", KERNEL_OPT), ("third_party", KERNEL_OPT)):
        for src in srcs[group]:
            obj = objdir / object_name(group, src, roots[group])
            objs.append(obj)
            if not obj.is_file():
                todo.append((_compile_cmd(src, obj.with_suffix(".o.tmp"), opt, defines, incs), obj))
    selection = hashlib.sha256("\n".join(o.name for o in objs).encode()).hexdigest()[:12]
    lib = cache_root() / f"{kernels}-{key}-{selection}" / "libtflm.a"
    if lib.is_file():
        log(f"TFLM library: cached {lib}")
        return lib
    log(f"TFLM library: compiling {len(todo)} of {len(objs)} files ({kernels}, {jobs} jobs) into {lib}")

    def run(job):
        cmd, obj = job
        r = subprocess.run(["nice"] + cmd, capture_output=True, text=True)
        if r.returncode == 0:
            os.replace(obj.with_suffix(".o.tmp"), obj)
        return cmd, r

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for cmd, r in pool.map(run, todo):
            if r.returncode:
                raise RuntimeError(f"compiling {cmd[-3]} failed: "
                                   f"{(r.stderr.strip().splitlines() or ['?'])[-1][:300]}")
    lib.parent.mkdir(parents=True, exist_ok=True)
    archive = lib.with_suffix(".a.tmp")
    archive.unlink(missing_ok=True)
    subprocess.run(["arm-none-eabi-ar", "rcs", str(archive)] + [str(o) for o in objs], check=True)
    os.replace(archive, lib)
    return lib


# ------------------------------------------------------------------------------------------ firmware

HARNESS = r"""// TFLM harness for the QEMU mps2-an386 board (generated by benchmarks/tflm_cmsis.py; not a project source).
#include <stdint.h>
#include <string.h>

#include "tensorflow/lite/micro/micro_allocator.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_resource_variable.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"

extern "C" {
#include "board.h"
}

extern "C" const unsigned char harness_model[];
static uint8_t arena[HARNESS_ARENA_BYTES] BOARD_LARGE_BSS;

static void put_hex(const uint8_t* p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    board_uart_putc((uint8_t)digits[p[i] >> 4]);
    board_uart_putc((uint8_t)digits[p[i] & 15]);
  }
}

static void add_ops(tflite::MicroMutableOpResolver<HARNESS_OPS>& r) { HARNESS_ADD_OPS }

static void fill_inputs(tflite::MicroInterpreter& in) {
  for (size_t k = 0; k < in.inputs_size(); ++k) {
    TfLiteTensor* t = in.input(k);
    uint8_t* p = reinterpret_cast<uint8_t*>(t->data.raw);
    for (size_t i = 0; i < t->bytes; ++i) p[i] = (uint8_t)((i * 37u + 11u) & 0xFFu);
  }
}

// Per node: every registration's invoke goes through trampoline<K>, which reads SysTick around the kernel's own
// invoke (K: the op type's slot; the release build has no profiler events).
static const int kMaxKinds = 32;
static TfLiteStatus (*orig_invoke[kMaxKinds])(TfLiteContext*, TfLiteNode*);
static TFLMRegistration wrapped[kMaxKinds];
static const TFLMRegistration* wrapped_of[kMaxKinds];
static int kinds = 0;

template <int K>
static TfLiteStatus trampoline(TfLiteContext* c, TfLiteNode* n) {
  uint32_t t0 = board_timer_now();
  TfLiteStatus s = orig_invoke[K](c, n);
  uint32_t dt = board_timer_now() - t0;
  board_print("node ");
  board_print_u32((uint32_t)K);
  board_print(" ");
  board_print_u32((uint32_t)wrapped[K].builtin_code);
  board_print(" ");
  board_print_u32(dt);
  board_print("\r\n");
  return s;
}

template <int K>
struct Trampolines {
  static void fill(TfLiteStatus (**t)(TfLiteContext*, TfLiteNode*)) {
    t[K] = trampoline<K>;
    Trampolines<K - 1>::fill(t);
  }
};
template <>
struct Trampolines<-1> {
  static void fill(TfLiteStatus (**)(TfLiteContext*, TfLiteNode*)) {}
};

class TimedResolver : public tflite::MicroOpResolver {
 public:
  explicit TimedResolver(const tflite::MicroOpResolver& inner) : inner_(inner) {
    Trampolines<kMaxKinds - 1>::fill(tramp_);
  }
  const TFLMRegistration* FindOp(tflite::BuiltinOperator op) const override { return Wrap(inner_.FindOp(op)); }
  const TFLMRegistration* FindOp(const char* op) const override { return Wrap(inner_.FindOp(op)); }
  tflite::TfLiteBridgeBuiltinParseFunction GetOpDataParser(tflite::BuiltinOperator op) const override {
    return inner_.GetOpDataParser(op);
  }

 private:
  const TFLMRegistration* Wrap(const TFLMRegistration* r) const {
    if (r == nullptr) return r;
    for (int k = 0; k < kinds; ++k)
      if (wrapped_of[k] == r) return &wrapped[k];
    if (kinds == kMaxKinds) return r;
    wrapped_of[kinds] = r;
    wrapped[kinds] = *r;
    orig_invoke[kinds] = r->invoke;
    wrapped[kinds].invoke = tramp_[kinds];
    return &wrapped[kinds++];
  }
  const tflite::MicroOpResolver& inner_;
  TfLiteStatus (*tramp_[kMaxKinds])(TfLiteContext*, TfLiteNode*);
};

// A model with VAR_HANDLE needs resource variables (HARNESS_VARIABLES of them), which the interpreter takes only
// with an allocator made on the arena; other models keep the plain constructor (TFLM's arena figure untouched).
#if HARNESS_VARIABLES
#define HARNESS_INTERPRETER(name, resolver)                                                           \
  tflite::MicroAllocator* name##_alloc = tflite::MicroAllocator::Create(arena, sizeof(arena));        \
  tflite::MicroInterpreter name(model, resolver, name##_alloc,                                        \
                                tflite::MicroResourceVariables::Create(name##_alloc, HARNESS_VARIABLES))
#else
#define HARNESS_INTERPRETER(name, resolver) tflite::MicroInterpreter name(model, resolver, arena, sizeof(arena))
#endif

int main(void) {
  board_init();
  const tflite::Model* model = tflite::GetModel(harness_model);
  tflite::MicroMutableOpResolver<HARNESS_OPS> resolver;
  add_ops(resolver);
  {
    HARNESS_INTERPRETER(in, resolver);
    if (in.AllocateTensors() != kTfLiteOk) {
      board_print("ERROR AllocateTensors\r\n");
      board_exit(3);
    }
    fill_inputs(in);
    // no board_timer_restart() here: SysTick's current value reads 0 until its first reload after a restart,
    // which made t0 the top of the 24-bit count (dt 2^24 ticks short); board_init started it long ago
    uint32_t t0 = board_timer_now();
    TfLiteStatus s = in.Invoke();
    uint32_t dt = board_timer_now() - t0;
    if (s != kTfLiteOk) {
      board_print("ERROR Invoke\r\n");
      board_exit(4);
    }
    board_print("ticks ");
    board_print_u32(dt);
    board_print("\r\narena ");
    board_print_u32((uint32_t)in.arena_used_bytes());
    board_print("\r\n");
    for (size_t k = 0; k < in.outputs_size(); ++k) {
      TfLiteTensor* t = in.output(k);
      board_print("out ");
      board_print_u32((uint32_t)k);
      board_print(" ");
      board_print_u32((uint32_t)t->bytes);
      board_print(" ");
      put_hex(reinterpret_cast<const uint8_t*>(t->data.raw), t->bytes);
      board_print("\r\n");
    }
  }
#if HARNESS_PER_NODE
  {
    TimedResolver timed(resolver);
    HARNESS_INTERPRETER(in, timed);
    if (in.AllocateTensors() != kTfLiteOk) {
      board_print("ERROR AllocateTensors (per node)\r\n");
      board_exit(3);
    }
    fill_inputs(in);
    if (in.Invoke() != kTfLiteOk) {
      board_print("ERROR Invoke (per node)\r\n");
      board_exit(4);
    }
  }
#endif
  board_print("done\r\n");
  board_exit(0);
  return 0;
}
"""

MODEL_ASM = """    .section .edge_model, "a"
    .balign 16
    .global harness_model
harness_model:
    .incbin "{path}"
"""


def model_ops(data: bytes) -> list[str]:
    """Builtin op names of every subgraph's operators, in order of first use."""
    sys.path.insert(0, str(REPO))
    from edge_sdk.model import read_model

    model = read_model(data)
    names = []
    for sg in model.subgraphs:
        for op in sg.operators:
            name = model.op_name(op)
            if name not in names:
                names.append(name)
    return names


def var_handles(data: bytes) -> int:
    """How many VAR_HANDLE ops the model has (its resource variables)."""
    sys.path.insert(0, str(REPO))
    from edge_sdk.model import read_model

    model = read_model(data)
    return sum(model.op_name(op) == "VAR_HANDLE" for sg in model.subgraphs for op in sg.operators)


def subgraph0_codes(data: bytes) -> list[int]:
    """The builtin op codes of subgraph 0's operators, in order (what the per-node lines must match)."""
    sys.path.insert(0, str(REPO))
    from edge_sdk.model import read_model

    model = read_model(data)
    return [model.operator_codes[op.opcode_index].builtin_code for op in model.subgraphs[0].operators]


def node_instructions(nodes: list[tuple[int, int]], codes: list[int]) -> list[int] | None:
    """Instructions per node of subgraph 0 from the per-node lines, or None when they are not subgraph 0's nodes
    one for one (a model that calls other subgraphs: their nodes interleave)."""
    if [c for c, _ in nodes] != codes:
        return None
    return [t * TICK_INSTRUCTIONS for _, t in nodes]


def arena_bytes(model_bytes: int) -> int:
    """TFLM's arena: the PSRAM the model leaves, less 64 KB of slack, in 16-byte units (a 4.5 MB model leaves
    11.4 MB; TFLM takes what it needs of it and reports arena_used_bytes)."""
    return (PSRAM_BYTES - model_bytes - 64 * 1024) // 16 * 16


def build_firmware(model_path: Path, lib: Path, dirs: dict[str, Path], work: Path, per_node: bool) -> Path:
    header = (dirs["tflm"] / "tensorflow/lite/micro/micro_mutable_op_resolver.h").read_text()
    ops = model_ops(model_path.read_bytes())
    calls = resolver_calls(ops, resolver_methods(header))
    variables = var_handles(model_path.read_bytes())
    src = (HARNESS.replace("HARNESS_ADD_OPS", " ".join(f"r.{c}();" for c in calls)))
    (work / "harness.cc").write_text(src)
    (work / "model.S").write_text(MODEL_ASM.format(path=model_path.resolve().as_posix()))
    board_dir = BOARDS / BOARD
    board_srcs = [BOARDS / "common" / n for n in ("startup_cortexm.c", "cortexm_timer.c", "board_common.c")]
    board_srcs.append(board_dir / "board.c")
    # the board's own defines (board.mk: BOARD_NUM_IRQS, BOARD_DEFS)
    mk = (board_dir / "board.mk").read_text()
    irqs = re.search(r"BOARD_NUM_IRQS\s*:=\s*(\d+)", mk).group(1)
    board_defs = re.search(r"BOARD_DEFS\s*:=\s*(.*)", mk).group(1).split()
    board_flags = CPU_FLAGS + [f"-I{BOARDS}", f"-I{BOARDS / 'common'}", f"-DBOARD_NUM_IRQS={irqs}", *board_defs,
                               "-ffreestanding", "-ffunction-sections", "-fdata-sections", "-Os"]
    objs = []
    for s in board_srcs:
        o = work / (s.stem + ".o")
        subprocess.run(["arm-none-eabi-gcc", *board_flags, "-c", str(s), "-o", str(o)], check=True,
                       capture_output=True, text=True)
        objs.append(o)
    arena = arena_bytes(model_path.stat().st_size)
    defines = ["-DCMSIS_NN", f"-DHARNESS_OPS={max(len(calls), 1)}", f"-DHARNESS_ARENA_BYTES={arena}",
               f"-DHARNESS_PER_NODE={int(per_node)}", f"-DHARNESS_VARIABLES={variables}", f"-I{BOARDS}", f"-I{BOARDS / 'common'}"]
    cmd = _compile_cmd(work / "harness.cc", work / "harness.o", CORE_OPT, defines, include_flags(dirs))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"harness: {r.stderr.strip()[-600:]}")
    subprocess.run(["arm-none-eabi-gcc", *CPU_FLAGS, "-c", str(work / "model.S"), "-o", str(work / "model.o")],
                   check=True)
    elf = work / "tflm.elf"
    link = ["arm-none-eabi-g++", *CPU_FLAGS, f"-T{board_dir / 'board.ld'}", f"-L{BOARDS / 'common'}",
            "-nostartfiles", "--specs=nano.specs", "--specs=nosys.specs", "-Wl,--gc-sections",
            "-Wl,--defsym=end=_ebss",  # newlib's _sbrk (pulled in by libstdc++, never called): heap after .bss
            *map(str, objs), str(work / "harness.o"), str(work / "model.o"), str(lib), "-lm", "-o", str(elf)]
    r = subprocess.run(link, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"link: {r.stderr.strip()[-600:]}")
    # startup_cortexm.c runs no C++ constructors: a firmware that needs one would compute garbage
    heads = subprocess.run(["arm-none-eabi-objdump", "-h", str(elf)], capture_output=True, text=True).stdout
    for line in heads.splitlines():
        w = line.split()
        if len(w) > 2 and w[1] in (".init_array", ".ctors") and int(w[2], 16):
            raise RuntimeError(f"{elf.name} has static constructors ({w[1]}), which the board's startup never runs")
    return elf


def run_qemu(elf: Path, timeout: int = QEMU_TIMEOUT) -> str:
    cmd = ["qemu-system-arm", "-M", "mps2-an386", "-icount", "shift=0", "-nographic", "-monitor", "none",
           "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)]
    try:
        r = subprocess.run(["nice"] + cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:  # subprocess.run killed it: no orphan
        raise RuntimeError(f"QEMU did not finish in {timeout} s") from exc
    return r.stdout.decode("latin-1")


def measure(model_path: Path, lib: Path, dirs: dict[str, Path], per_node: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="tflm-fw-") as tmp:
        elf = build_firmware(model_path, lib, dirs, Path(tmp), per_node)
        return parse_uart(run_qemu(elf))


def host_outputs(model_path: Path) -> list[bytes]:
    """edge-sdk's C runtime on the host with the same input bytes: its output bytes."""
    sys.path.insert(0, str(REPO))
    import numpy as np

    from edge_sdk.runtime.c_interpreter import CInterpreter

    it = CInterpreter(model_path=str(model_path))
    it.allocate_tensors()
    for d in it.get_input_details():
        n = int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
        it.set_tensor(d["index"], np.frombuffer(input_bytes(n), dtype=d["dtype"]).reshape(d["shape"]))
    it.invoke()
    return [np.ascontiguousarray(it.get_tensor(d["index"])).tobytes() for d in it.get_output_details()]


def record(results: dict[str, dict], a, kernels: str) -> None:
    """Into mcu_anchors.json's "measured": per model file name, instructions and arena (kept beside the issue's
    anchors; a re-run replaces a model's entry)."""
    doc = json.loads(ANCHORS.read_text())
    measured = doc.setdefault("measured", {"_about": (
        "TFLM + CMSIS-NN measured by benchmarks/tflm_cmsis.py on the QEMU mps2-an386 Cortex-M4, -icount shift=0, "
        "instructions of the first Invoke() = SysTick ticks x 40, input byte i = (i*37+11) mod 256; tflm_arena: "
        "arena_used_bytes(); per model: the build it came from (see 'builds')."), "builds": {}, "models": {}})
    build_id = f"{kernels}:{a.tflm_commit[:8]}+{a.cmsis_nn_commit[:8]}"
    measured["builds"][build_id] = {"tflite-micro": a.tflm_commit, "CMSIS-NN": a.cmsis_nn_commit,
                                    "kernels": kernels, "toolchain": toolchain_version(),
                                    "flags": "core -Os, kernels and CMSIS-NN -O2, " + " ".join(CPU_FLAGS)}
    key = "cmsis" if kernels == "cmsis_nn" else "reference"
    today = datetime.date.today().isoformat()
    for name, r in results.items():
        entry = measured["models"].setdefault(name, {})
        entry["sha256"] = r["model_sha256"]  # the zoo's file names carry a builder hash: found by content too
        entry[key] = r["instructions"]
        entry["tflm_arena"] = r["arena"]
        entry[f"{key}_build"] = build_id
        entry["date"] = today
        if r.get("outputs_equal") is not None:
            entry["outputs_equal_edge"] = r["outputs_equal"]
        if r.get("node_instructions"):
            entry["nodes"] = r["node_instructions"]  # per node of subgraph 0, each +-40 plus the wrapper's read
    tmp = ANCHORS.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, ANCHORS)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", help=".tflite files (int8 models that fit the board)")
    ap.add_argument("--tflm", help="tflite-micro source tree")
    ap.add_argument("--cmsis-nn", help="CMSIS-NN source tree")
    ap.add_argument("--flatbuffers", help="flatbuffers source tree (TFLM's tag, flatbuffers.patch applied)")
    ap.add_argument("--gemmlowp", help="gemmlowp source tree")
    ap.add_argument("--ruy", help="ruy source tree (one profiler header)")
    ap.add_argument("--kernels", choices=("cmsis_nn", "reference"), default="cmsis_nn")
    ap.add_argument("--per-node", action="store_true", help="also instructions per node (a second invoke)")
    ap.add_argument("--compare", action="store_true", help="output bytes vs edge-sdk's C runtime on the host")
    ap.add_argument("--record", action="store_true", help="write the figures to mcu_anchors.json 'measured'")
    ap.add_argument("--tflm-commit", default="unknown", help="--record: the tflite-micro commit of --tflm")
    ap.add_argument("--cmsis-nn-commit", default="unknown", help="--record: the CMSIS-NN commit of --cmsis-nn")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--all-kernels", action="store_true",
                    help="compile every TFLM kernel (default: the kernels of the models given, and the helpers)")
    ap.add_argument("--json", help="write the results (per model) to this file")
    a = ap.parse_args(argv)
    for m in a.models:
        if not Path(m).is_file():
            raise Misuse(f"{m}: no such model file")
    return a


def main(argv=None) -> int:
    try:
        a = parse_args(argv)
        dirs = _source_dirs(a)
        for tool in ("arm-none-eabi-g++", "qemu-system-arm"):
            if not shutil.which(tool):
                raise Misuse(f"{tool} not found (Debian: gcc-arm-none-eabi libstdc++-arm-none-eabi-dev "
                             "libnewlib-arm-none-eabi qemu-system-arm)")
    except Misuse as exc:
        print(f"tflm_cmsis: {exc}", file=sys.stderr)
        return 2
    try:
        ops = sorted({op for m in a.models for op in model_ops(Path(m).read_bytes())})
    except Exception as exc:  # noqa: BLE001 - a file that is no model: say which, exit 2
        print(f"tflm_cmsis: a model given does not read: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    lib = build_library(dirs, a.kernels, a.jobs, ops=None if a.all_kernels else ops)
    print(f"TFLM ({a.kernels}) on {BOARD}, -icount shift=0: instructions of one Invoke() = SysTick ticks x "
          f"{TICK_INSTRUCTIONS} (EMULATED INSTRUCTION COUNTS, +-{TICK_INSTRUCTIONS}); {toolchain_version()}")
    print(f"{'model':<48} {'instructions':>14} {'tflm arena':>11}  outputs")
    results, failed = {}, 0
    for m in map(Path, a.models):
        try:
            r = measure(m, lib, dirs, a.per_node)
        except (RuntimeError, ValueError, Misuse, subprocess.CalledProcessError) as exc:
            print(f"{m.name:<48} failed: {str(exc).splitlines()[0][:200]}")
            failed += 1
            continue
        note = f"{len(r['outputs'])} tensor(s), {sum(map(len, r['outputs']))} bytes"
        if a.compare:
            try:
                ours = host_outputs(m)
                r["outputs_equal"] = ours == r["outputs"]
                diff = sum(x != y for o, t in zip(ours, r["outputs"]) for x, y in zip(o, t))
                note += ", equal to edge-sdk's" if r["outputs_equal"] else f", DIFFER from edge-sdk's ({diff} bytes)"
                failed += not r["outputs_equal"]
            except Exception as exc:  # noqa: BLE001 - our runtime refusing the model is a finding, not a crash
                r["outputs_equal"] = None
                note += f", edge-sdk: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
        print(f"{m.name:<48} {r['instructions']:>14,} {r['arena']:>11,}  {note}")
        if a.per_node:
            r["node_instructions"] = node_instructions(r["nodes"], subgraph0_codes(m.read_bytes()))
            for i, (code, ticks) in enumerate(r["nodes"]):
                print(f"    node {i:>3} builtin {code:>3} {ticks * TICK_INSTRUCTIONS:>12,}")
            if r["nodes"] and r["node_instructions"] is None:
                print("    (these are not subgraph 0's nodes one for one: other subgraphs' nodes interleave; "
                      "not recorded per node)")
        results[m.name] = {k: v for k, v in r.items() if k != "outputs"} | {
            "outputs_sha256": hashlib.sha256(b"".join(r["outputs"])).hexdigest()[:16],
            "model_sha256": hashlib.sha256(m.read_bytes()).hexdigest()[:16]}
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1) + "\n")
    if a.record and results:
        record(results, a, a.kernels)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
