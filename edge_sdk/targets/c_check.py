"""`edge check` on a C target: the C runtime's loader, prepare and planner, built as that target and run once.

    plan = target_plan(data)                       # the best layout here (target_layouts()), never invokes
    plan.ok, plan.figures["high_water"], plan.refusals

``target_plan(data)`` names every node a prepare refuses (``TargetPlan.refusals``), built with the board's 32-bit
struct layout (``edge-run-c --plan`` compiled by arm-linux-gnueabihf-gcc, run by qemu-arm; the host build when
those are missing, said so in ``TargetPlan.layout``): its high-water mark is the board's to the byte. A 64-bit
Linux target is measured by the library as it runs there (``linux_layout``). The runners are built from
``edge_sdk.runtime.c_build.FIRMWARE`` into the cache folder (``check_runner``); BuildError when they cannot be.
A legacy UINT8 model is measured as the C runtime runs it, presented as INT8 (edge_sdk.runtime.c_loaded.c_bytes, as
edge flash embeds it): the C runtime refuses raw UINT8 tensors where its kernels run INT8.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from edge_sdk import log, resources
from edge_sdk.errors import BuildError, ModelError
from edge_sdk.runtime import c_build
from edge_sdk.runtime.c_status import STATUS, status_name
from edge_sdk.runtime.planner import MEMORY_PLANS, c_runner_flags

# `edge check` on a C target: the C runtime's own loader, prepare and planner, built as that target (its type
# switches, its pointer size and struct layout) and run once without invoking. A 32-bit microcontroller's
# layout (ILP32, AAPCS: 4-byte pointers, 8-byte aligned int64) comes from a 32-bit ARM Linux build run under
# qemu-arm (user mode): its persistent part (tensor/node/subgraph structs, kernel data, resource variables),
# its plan and its high-water mark equal the board's to the byte (measured on the QEMU board, tests/
# test_check_c.py). Without that cross toolchain the host build answers: the same verdict, but the persistent
# part at the host's (64-bit) struct sizes, so the RAM figure is an estimate (said so in the result).
ILP32_CC = "arm-linux-gnueabihf-gcc"
QEMU_USER = "qemu-arm"
ILP32 = "ilp32-arm"  # measured with the board's struct layout
HOST = "host"  # measured with the host's struct layout (an estimate of the board's RAM)
# A 64-bit Linux target (a C-runtime profile on x86-64 / aarch64 Linux) runs the library built with the SIMD fast
# paths (EDGE_WITH_SIMD), whose packed weights are persistent arena memory: its check runner is built the same way.
# On this machine's own CPU the host build answers (the library's own figures); an aarch64 target is measured by
# an aarch64 build under qemu-aarch64 emulating the profile's CPU (its features pick the fast paths, as on the
# board), as tests/test_c_cross.py runs the library.
LINUX_HOST = "linux-host"  # the host's build with the fast paths: a Linux target of this machine's architecture
LINUX_AARCH64 = "linux-aarch64"  # the aarch64 build with the fast paths, under qemu-aarch64
AARCH64_CC = "aarch64-linux-gnu-gcc"
QEMU_AARCH64 = "qemu-aarch64"
QEMU_AARCH64_CPUS = ("cortex-a35", "cortex-a53", "cortex-a57", "cortex-a72", "cortex-a76", "neoverse-n1", "a64fx")
_LINUX_LAYOUTS = (LINUX_HOST, LINUX_AARCH64)


def host_arch() -> str:
    """This machine's architecture in the profiles' spelling ("x86_64", "aarch64", ...)."""
    import platform

    m = platform.machine().lower()
    return {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(m, m)


def linux_layout(arch: str) -> str | None:
    """The layout that measures a 64-bit Linux target of ``arch`` as its library runs (fast paths in): LINUX_HOST
    on this machine's architecture, LINUX_AARCH64 for aarch64 with aarch64-linux-gnu-gcc and qemu-aarch64 here;
    None when neither can be built (the caller says its figure is an estimate)."""
    if arch == host_arch() and shutil.which(os.environ.get("CC", "gcc")):
        return LINUX_HOST
    if arch == "aarch64" and shutil.which(AARCH64_CC) and shutil.which(QEMU_AARCH64):
        return LINUX_AARCH64
    return None


class TargetPlan:
    """The C runtime's answer for one model on one target layout (``target_plan``)."""

    def __init__(self, layout: str, status: int, message: str, error: dict, figures: dict, runner: str):
        self.layout = layout  # ILP32 or HOST
        self.status = status  # 0 (loaded, prepared, planned) or an edge_status.def code
        self.status_name = status_name(status)
        self.message = message  # the C runtime's one-line message ("" when it loaded)
        self.error = error  # subgraph, node, tensor, op, version, offset, required, given, exact (-1: none)
        self.figures = figures  # arena_used, high_water, persistent, tensor_total, head_total, lower_bound
        self.runner = runner
        # every node its prepare refused, in order (one run: edge-run-c --all-refusals): dicts with status
        # (name), subgraph, node, op (code), version, message; [] when it loaded or the loader refused it
        self.refusals: list[dict] = []

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def exact(self) -> bool:
        """The RAM figures are the target's own (its struct layout, and on a Linux target its fast paths' packed
        weights), not the host's."""
        return self.layout in (ILP32, *_LINUX_LAYOUTS)

    def to_dict(self) -> dict:
        return {"layout": self.layout, "status": self.status_name, "message": self.message, "error": self.error,
                "refusals": self.refusals, **self.figures}


def target_layouts() -> list[str]:
    """The layouts ``target_plan`` can measure here, best first (ILP32 needs arm-linux-gnueabihf-gcc and
    qemu-arm; HOST needs a C compiler)."""
    out = []
    if shutil.which(ILP32_CC) and shutil.which(QEMU_USER):
        out.append(ILP32)
    if shutil.which(os.environ.get("CC", "gcc")):
        out.append(HOST)
    return out


_runners: dict[tuple[str, tuple[str, ...]], Path] = {}


def check_runner(layout: str, type_defs: tuple[str, ...] = ()) -> Path:
    """edge-run-c built for ``layout`` with these type switches (cached under the cache folder; every kernel in
    its op table: a firmware links the model's ops only, the same kernels, so the verdict and the sizes agree).
    Its op table is `gen_ops.py --check`'s: with --all-refusals every refused prepare is recorded and the next
    node prepared (host/edge_run.c)."""
    key = (layout, tuple(type_defs))
    if key in _runners and _runners[key].is_file():
        return _runners[key]
    tree = c_build.FIRMWARE
    cc = ILP32_CC if layout == ILP32 else AARCH64_CC if layout == LINUX_AARCH64 else os.environ.get("CC", "gcc")
    if shutil.which(cc) is None:
        raise BuildError(f"cannot build the C runtime's check runner: {cc} not found on PATH")
    tag = c_build.build_tag(cc, layout, *type_defs, str(tree), tree=tree)
    folder = resources.cache_dir() / "check" / f"{layout}-{tag}"
    exe = folder / "edge-run-c"
    if not exe.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        # the first check against a new kind of target builds this runner (about a minute): say so, step by step
        what = f"the C runtime's check runner for {layout}" + (f" ({' '.join(type_defs)})" if type_defs else "")
        log.stage(f"building {what}: once per kind of target, cached in {folder}")
        with resources.build_lock(folder / "x"):
            if not exe.is_file():
                import time

                started = time.monotonic()
                log.stage("check runner: generating its op table (gen_ops.py --check)")
                gen = folder / "edge_ops_generated.c"
                proc = subprocess.run([sys.executable, str(tree / "tools" / "gen_ops.py"), "--check", str(gen)],
                                      capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    raise BuildError(f"gen_ops.py failed: {(proc.stderr or proc.stdout)[-2000:]}")
                simd = layout in _LINUX_LAYOUTS  # the library as a Linux target runs it: fast paths in
                sources = [tree / "host" / "edge_run.c", tree / "src" / "edge.c",
                           *sorted((tree / "src" / "kernels").glob("*.c")), tree / "host" / "edge_host.c",
                           *(sorted((tree / "src" / "simd").glob("*.c")) if simd else []), gen]
                log.stage(f"check runner: compiling {len(sources)} sources with {cc}, one per CPU at once")
                # one compile per source, in parallel, through the object cache (c_build.compile_objects: a
                # file the type switches do not reach is compiled once for every runner of this layout); then
                # one link
                flags = ("-std=c99", "-O1", *(["-DEDGE_WITH_SIMD=1"] if simd else []), *type_defs,
                         f"-I{tree / 'include'}", f"-I{tree / 'src'}", f"-I{tree / 'host'}",
                         *(["-pthread"] if simd else []))
                try:
                    objects = c_build.compile_objects(cc, flags, sources, folder / "obj")
                except BuildError as exc:
                    raise BuildError(f"building the check runner failed ({cc}): {exc}") from None
                cmd = [cc, "-O1", *(["-static"] if layout in (ILP32, LINUX_AARCH64) else []),
                       "-o", str(exe) + ".tmp", *map(str, objects), "-lm", *(["-pthread"] if simd else [])]
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    raise BuildError(f"linking the check runner failed ({cc}):\n{proc.stderr[-3000:]}")
                os.replace(str(exe) + ".tmp", exe)
                log.stage(f"check runner: built in {time.monotonic() - started:.0f} s")
    _runners[key] = exe
    return exe


def _parse_refusals(out: str) -> list[dict]:
    """The "refused STATUS SUBGRAPH NODE OP VERSION MESSAGE" lines of edge-run-c --all-refusals."""
    found = []
    for line in out.splitlines():
        parts = line.split(" ", 6)
        if parts[0] == "refused" and len(parts) == 7 and all(p.lstrip("-").isdigit() for p in parts[1:6]):
            status, sg, node, op, version = map(int, parts[1:6])
            found.append({"status": status_name(status), "subgraph": sg, "node": node, "op": op,
                          "version": version, "message": parts[6]})
    return found


def _parse_run(out: str) -> tuple[dict, dict]:
    figures, error = {}, {}
    for line in out.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "plan":
            figures.update({parts[k]: int(parts[k + 1]) for k in range(1, len(parts) - 1, 2)})
        elif parts[:2] == ["arena", "used"]:
            figures.update(arena_used=int(parts[2]), high_water=int(parts[4]), persistent=int(parts[6]),
                           packed=int(parts[8]) if len(parts) > 8 else 0)  # of persistent: packed weight copies
        elif parts[0] == "error":
            error = {parts[k]: int(parts[k + 1]) for k in range(1, len(parts) - 1, 2)}
    figures.pop("ordering", None)
    return figures, error


def target_plan(data: bytes, layout: str | None = None, type_defs: tuple[str, ...] = (),
                timeout: float = 300.0, memory: str = "layer", patch=None, cpu: str | None = None,
                presented: bool = False) -> TargetPlan:
    """Load, prepare and plan ``data`` (a .tflite's bytes) with the C runtime built for ``layout`` (default: the
    best of ``target_layouts()``; LINUX_HOST / LINUX_AARCH64 for a 64-bit Linux target, ``linux_layout``) and
    the type switches ``type_defs`` (gen_ops.type_defines); never invokes. ``cpu``: LINUX_AARCH64's emulated CPU
    (a QEMU_AARCH64_CPUS name; else qemu's "max").
    ``memory``: the plan (edge_sdk.runtime.interpreter.MEMORY_PLANS), "layer", "inplace" (EDGE_INIT_MEMORY_MIN) or
    "min" (edge_init_patch with ``patch``, an edge_sdk.runtime.patching.PatchPlan; None: no stage, as "inplace").
    ``presented``: ``data`` is already the bytes the C runtime loads (edge_sdk.runtime.c_loaded.c_model's, as
    edge check has them), not parsed again. BuildError when no layout can be built here."""
    import tempfile

    from edge_sdk.runtime.c_loaded import c_bytes

    if not presented:
        data = c_bytes(data)[0]  # legacy UINT8: the model the C runtime runs (the same bytes for every other model)
    layouts = target_layouts()
    if layout is None:
        if not layouts:
            raise BuildError("no C compiler found: cannot run the C runtime's prepare and planner")
        layout = layouts[0]
    exe = check_runner(layout, tuple(type_defs))
    prefix = [shutil.which(QEMU_USER) or QEMU_USER] if layout == ILP32 else []
    if layout == LINUX_AARCH64:
        prefix = [shutil.which(QEMU_AARCH64) or QEMU_AARCH64, "-cpu", cpu if cpu in QEMU_AARCH64_CPUS else "max"]
    if memory not in MEMORY_PLANS:
        raise ValueError(f"memory must be one of {', '.join(map(repr, MEMORY_PLANS))}, not {memory!r}")
    memory_flag = c_runner_flags(memory, patch)  # edge_init_patch's stage and grid (a patching.PatchPlan)
    with tempfile.TemporaryDirectory(prefix="edge-check-") as tmp:
        model = Path(tmp) / "model.tflite"
        model.write_bytes(data)
        arena = 64 << 20
        all_refusals = ["--all-refusals"]
        for _ in range(7):
            try:
                proc = subprocess.run([*prefix, str(exe), str(model), "--plan", *all_refusals, *memory_flag,
                                       "--arena", str(arena)],
                                      capture_output=True, text=True, timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                raise ModelError(f"the C runtime's prepare did not finish within {timeout:g} s") from None
            if proc.returncode not in (0, 3) and all_refusals:
                # a prepare after a refused node tripped over that node's unprepared state: the C runtime as
                # it runs on the board (stop at the first refusal) still answers
                all_refusals = []
                continue
            if proc.returncode not in (0, 3):
                raise ModelError(f"the C runtime's check runner failed (exit {proc.returncode}): "
                                 f"{proc.stderr.strip()[-500:]}")
            figures, error = _parse_run(proc.stdout)
            status = error.get("status", 0) if proc.returncode == 3 else 0
            if status == STATUS["EDGE_ARENA_TOO_SMALL"] and arena < (1 << 31) - 1:
                arena = min(max(error["required"] if error.get("exact") else 0, 4 * arena), (1 << 31) - 1)
                continue
            break
        message = ""
        if status:
            message = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
            message = message.split(": ", 2)[-1] if message.startswith("edge-run-c: status") else message
            if status in (STATUS["EDGE_UNSUPPORTED_OP"], STATUS["EDGE_UNSUPPORTED_TYPE"], STATUS["EDGE_UNSUPPORTED"],
                          STATUS["EDGE_BAD_NODE"]):
                # the loader and planner alone (declared shapes, no kernels): the RAM it can still tell
                plan_only = subprocess.run([*prefix, str(exe), str(model), "--plan-only", *memory_flag[:1], "--arena",
                                            str(arena)],
                                           capture_output=True, text=True, timeout=timeout, check=False)
                if plan_only.returncode == 0:
                    figures = {f"plan_only_{k}": v for k, v in _parse_run(plan_only.stdout)[0].items()}
    plan = TargetPlan(layout, status, message, error, figures, str(exe))
    plan.refusals = _parse_refusals(proc.stdout) if status else []
    return plan

