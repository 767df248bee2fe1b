"""What the C runtime takes on a target besides RAM: the flash of its code and the stack of its deepest call chain,
measured by compiling it with the target's compiler and flags (`edge check`; ``edge_sdk.targets.size_table``).

    runtime_stack("arm-none-eabi-gcc", flags, ["conv_2d", "softmax"])   # {"bytes", "entry", "chain", ...}
    runtime_code_bytes("arm-none-eabi-gcc", flags, ["conv_2d.c"])       # {"bytes", "per_file"}

The objects are built once per compiler, flags and sources under the cache folder (``runtime_objects``), one
compile per source in parallel, each object cached by its preprocessed source (``c_build.compile_objects``);
BuildError when they cannot be.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from edge_sdk import log, resources
from edge_sdk.errors import BuildError
from edge_sdk.runtime import c_build

# The stack the runtime needs on a target: every runtime source compiled with the target's compiler and flags
# and GCC's -fcallgraph-info=su (per-function frame sizes and the call graph), then the deepest call chain
# from the entry points. Kernels are reached through the op table (indirect calls): those edges go to the
# model's kernels' prepare/eval/reset functions. A chain that comes back to a function already on it (a
# kernel running a subgraph: CALL_ONCE) is counted once; C library frames (memcpy, expf) are not known.
STACK_ENTRIES = ("edge_init_ex", "edge_invoke_at", "edge_reset_state")
_stack_graphs: dict[tuple, tuple[dict, dict]] = {}


def _parse_ci(text: str, frames: dict, edges: dict, dynamic: set, files: dict) -> None:
    import re

    for m in re.finditer(r'node: \{ title: "([^"]+)" label: "([^"]*)"', text):
        title, label = m.groups()
        sm = re.search(r"\\n(\d+) bytes \(([^)]*)\)", label)
        if sm:
            frames[title] = int(sm.group(1))
            files[title] = label.split("\\n")[1].split(":")[0] if "\\n" in label else ""
            if "dynamic" in sm.group(2) and "bounded" not in sm.group(2):
                dynamic.add(title)
    for m in re.finditer(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"', text):
        edges.setdefault(m.group(1), set()).add(m.group(2))


def stack_graph(compiler: str, cflags: tuple[str, ...], type_defs: tuple[str, ...] = ()) -> tuple:
    """(frame bytes per function, callees per function, functions with unbounded dynamic frames, source file
    per function) of the whole
    runtime compiled by ``compiler`` with ``cflags`` (cached). BuildError when it does not compile."""
    key = (compiler, tuple(cflags), tuple(type_defs))
    if key in _stack_graphs:
        return _stack_graphs[key]
    if shutil.which(compiler) is None:
        raise BuildError(f"{compiler} not found on PATH: the runtime's stack cannot be measured")
    tree = c_build.FIRMWARE
    tag = c_build.build_tag(compiler, *key[1], *key[2], tree=tree)
    folder = resources.cache_dir() / "check" / f"stack-{tag}"
    done = folder / "done"
    if not done.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        # the first check against a new toolchain compiles the whole runtime for its stack (about a minute)
        log.stage(f"measuring the C runtime's stack: compiling it with {compiler} {' '.join(cflags)} "
                  f"(once per toolchain, cached in {folder})")
        with resources.build_lock(folder / "x"):
            if not done.is_file():
                import time

                started = time.monotonic()
                # one compile per source, in parallel, each object (with its .ci call graph) from the object
                # cache when another build compiled the same preprocessed source with the same flags
                sources = [tree / "src" / "edge.c", *sorted((tree / "src" / "kernels").glob("*.c"))]
                flags = ("-std=c99", *cflags, *type_defs, f"-I{tree / 'include'}", f"-I{tree / 'src'}",
                         "-fcallgraph-info=su")
                try:
                    c_build.compile_objects(compiler, flags, sources, folder, aux=(".ci",))
                except BuildError as exc:
                    raise BuildError(f"compiling the runtime for its stack usage failed: {exc}") from None
                done.write_text("ok\n")
                log.stage(f"stack measure: {len(sources)} sources compiled in {time.monotonic() - started:.0f} s")
    frames: dict[str, int] = {}
    edges: dict[str, set] = {}
    dynamic: set = set()
    files: dict[str, str] = {}
    for ci in sorted(folder.glob("*.ci")):
        _parse_ci(ci.read_text(errors="replace"), frames, edges, dynamic, files)
    _stack_graphs[key] = (frames, edges, dynamic, files)
    _stack_folders[key] = folder
    return _stack_graphs[key]


_stack_folders: dict[tuple, Path] = {}


def runtime_objects(compiler: str, cflags: tuple[str, ...], type_defs: tuple[str, ...] = ()) -> Path:
    """The folder of edge.o and every kernel's .o compiled by ``compiler`` with ``cflags`` (``stack_graph``'s
    build, cached); BuildError when they do not compile."""
    stack_graph(compiler, tuple(cflags), tuple(type_defs))
    return _stack_folders[(compiler, tuple(cflags), tuple(type_defs))]


def runtime_code_bytes(compiler: str, cflags: tuple[str, ...], kernel_files: list[str],
                       type_defs: tuple[str, ...] = ()) -> dict:
    """Flash the runtime's code and read-only data take for an op set: the text+data of edge.o and of the
    kernel files' objects as the target compiler builds them (the objects ``stack_graph`` compiled). An upper
    bound of the linked figure: the linker drops the functions nothing calls (`edge check --link` links)."""
    stack_graph(compiler, tuple(cflags), tuple(type_defs))
    folder = _stack_folders[(compiler, tuple(cflags), tuple(type_defs))]
    size_tool = compiler[: -len("gcc")] + "size" if compiler.endswith("gcc") else "size"
    if shutil.which(size_tool) is None:
        raise BuildError(f"{size_tool} not found on PATH")
    objects = [folder / "edge.o", *(folder / (Path(f).stem + ".o") for f in kernel_files)]
    proc = subprocess.run([size_tool, *map(str, objects)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"{size_tool} failed: {proc.stderr.strip()[-500:]}")
    per_file = {}
    for line in proc.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 6 and parts[0].isdigit():
            per_file[Path(parts[-1]).stem] = int(parts[0]) + int(parts[1])
    return {"bytes": sum(per_file.values()), "per_file": per_file}


def runtime_stack(compiler: str, cflags: tuple[str, ...], kernel_names: list[str],
                  type_defs: tuple[str, ...] = ()) -> dict:
    """The deepest call chain's stack bytes from the runtime's entry points (``STACK_ENTRIES``) with the op
    table holding ``kernel_names`` (gen_ops names: edge_prepare_<name> / edge_eval_<name> / edge_reset_<name>).
    Returns {"bytes", "entry", "chain" (function names), "unknown" (callees without a frame size: the C
    library), "dynamic" (functions on the chain with unbounded frames), "recursion" (bool)}."""
    frames, edges, dynamic, files = stack_graph(compiler, tuple(cflags), tuple(type_defs))
    kernels = [f"edge_{kind}_{n}" for n in kernel_names for kind in ("prepare", "eval", "reset")]
    kernels = [f for f in kernels if f in frames]
    entry_points = {f for f in frames if f.startswith(("edge_prepare_", "edge_eval_", "edge_reset_"))}
    called = {c for cs in edges.values() for c in cs}

    def indirect_targets(fn: str) -> list[str]:
        """The runtime's own dispatch (edge.c) calls kernels through the op table; an indirect call inside a
        kernel file calls one of that file's functions whose address is taken (never called directly)."""
        where = files.get(fn, "")
        if where.endswith("edge.c"):  # init prepares (and resets), edge_reset_state resets, the rest evaluates
            name = fn.split(":")[-1]
            kinds = ("prepare", "reset") if "init" in name else ("reset",) if "reset" in name else ("eval",)
            return [f for f in kernels if f.startswith(tuple(f"edge_{k}_" for k in kinds))]
        return [f for f, w in files.items() if w == where and f not in called and f not in entry_points and f != fn]
    unknown: set = set()
    recursion = False
    memo: dict[str, tuple[int, list[str]]] = {}

    def deepest(fn: str, path: tuple[str, ...]) -> tuple[int, list[str]]:
        nonlocal recursion
        if fn in memo:
            return memo[fn]
        callees = []
        for c in edges.get(fn, ()):
            callees.extend(indirect_targets(fn) if c == "__indirect_call" else [c])
        best, chain = 0, []
        for c in callees:
            if c in path:
                recursion = True
                continue
            if c not in frames:
                unknown.add(c.split(":")[-1])
                continue
            d, ch = deepest(c, (*path, c))
            if d > best:
                best, chain = d, ch
        out = (frames.get(fn, 0) + best, [fn.split(":")[-1], *chain])
        if not any(c in path for c in callees):  # memoize only results that do not depend on the path
            memo[fn] = out
        return out

    best = (0, [], "")
    for entry in STACK_ENTRIES:
        if entry in frames:
            d, chain = deepest(entry, (entry,))
            if d > best[0]:
                best = (d, chain, entry)
    on_chain_dynamic = sorted(f for f in dynamic if f.split(":")[-1] in best[1])
    return {"bytes": best[0], "entry": best[2], "chain": best[1], "unknown": sorted(unknown),
            "dynamic": on_chain_dynamic, "recursion": recursion}
