"""Building the C micro-runtime (firmware_c/) for this machine: where its sources are, where its host library
lands, and the build itself.

The host library (firmware_c/build/host/libedge.so) is built on first use with ``make -C firmware_c host``
(make and a C compiler, ``$CC`` or gcc, must be on PATH; the BuildError says which one is missing). An installed
copy builds out of tree: in a copy of its bundled sources under the cache folder (``edge_sdk.resources.host_tree``).
Beside the library, when Python's headers are installed, a tiny CPython extension (host/edge_pyfast.c) for the
binding's invoke (``edge_sdk.runtime.c_interpreter``); without it the binding calls through ctypes.
``source_digest`` keys the other builds made from these sources (``edge_sdk.targets.c_check``'s check runners,
``edge_sdk.targets.c_footprint``'s objects); ``compile_objects`` compiles their objects in parallel, each cached
by the hash of its preprocessed source and flags (a second target with the same flags reuses them).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

from edge_sdk import log, resources
from edge_sdk.errors import BuildError

FIRMWARE = resources.firmware_dir()  # the sources (the checkout's firmware_c/, or the installed copy)
HOST_TREE = resources.host_tree(FIRMWARE)  # where `make host` runs: FIRMWARE itself, or its copy in the cache
LIBRARY = HOST_TREE / "build" / "host" / "libedge.so"
RUNNER = HOST_TREE / "build" / "host" / "edge-run-c"


def build() -> Path:
    """Build firmware_c's host library and runner (make -C firmware_c host; a no-op when up to date);
    returns the library's path."""
    missing = [tool for tool in ("make", os.environ.get("CC", "gcc")) if shutil.which(tool) is None]
    if missing:
        raise BuildError(
            f"cannot build the C runtime: {', '.join(missing)} not found on PATH "
            f"(install make and a C compiler, e.g. `apt-get install make gcc`)"
        )
    # one object per source (the Makefile): make compiles them on every CPU
    cmd = ["make", "-C", str(HOST_TREE), f"-j{jobs()}", "host", f"PYTHON={sys.executable}"]
    if HOST_TREE != FIRMWARE:  # an installed copy: its sources copied into the cache once, built there
        try:
            resources.ensure_host_tree(FIRMWARE)
        except OSError as exc:
            raise BuildError(f"cannot copy the C runtime's sources from {FIRMWARE} to {HOST_TREE}: {exc}") from exc
    # One build at a time (test workers, parallel users): the lock lives in the (ignored) build folder.
    lock_tree = HOST_TREE / "build" / "host" if HOST_TREE == FIRMWARE else HOST_TREE
    lock_tree.parent.mkdir(parents=True, exist_ok=True)
    with resources.build_lock(lock_tree):
        # the first use compiles ~100 files (a minute or more on a busy machine): say so instead of sitting silent
        # (issue 27 point 6). Stale: no library yet, or a source newer than it (make -q cannot tell: the op table
        # is regenerated on every run)
        stale = _library_stale()
        started = time.monotonic()
        if stale:
            log.stage(f"building the C runtime for this machine (make -C {HOST_TREE} host; once, then reused)")
        returncode, output = _make(cmd, _host_sources() if stale else 0)
        if returncode != 0:
            raise BuildError(f"`make -C {HOST_TREE} host` failed:\n{output[-6000:]}")
        build_pyfast()
        if stale:
            log.stage(f"C runtime built ({time.monotonic() - started:.0f} s)")
    return LIBRARY


def _host_sources() -> int:
    """How many C files `make host` compiles from scratch (src/, src/kernels/, src/simd/, host/): the progress
    bar's length (make may compile fewer: objects still up to date)."""
    return sum(1 for d in ("src", "host") for p in (HOST_TREE / d).rglob("*.c") if p.is_file())


def _make(cmd: list[str], sources: int) -> tuple[int, str]:
    """Run make, its output merged and kept (the last 6 KB reach a BuildError); with ``sources`` > 0 a progress bar
    advances on every compiler command make echoes (`... -c FILE.c ...`): the first build takes minutes."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail: list[str] = []
    try:
        with log.progress(sources, "building the C runtime") if sources else contextlib.nullcontext() as bar:
            for line in proc.stdout:
                tail.append(line)
                del tail[:-200]
                if bar is not None and " -c " in line and ".c" in line:
                    bar.advance()
    except BaseException:  # Ctrl-C: make stops with us (one process group); no make left running unseen
        proc.kill()
        proc.wait()
        raise
    return proc.wait(), "".join(tail)


def _library_stale() -> bool:
    """No host library or runner yet, or a source the Makefile builds them from (src/, include/, host/, fuzz/
    headers) newer than the older of the two: what `make host` will compile."""
    try:
        built = min(LIBRARY.stat().st_mtime, RUNNER.stat().st_mtime)
    except OSError:
        return True
    sources = (p for d in ("src", "include", "host", "fuzz") for p in (HOST_TREE / d).rglob("*")
               if p.suffix in (".c", ".h", ".def") and (d != "fuzz" or p.suffix == ".h"))
    return any(p.stat().st_mtime > built for p in sources if p.is_file())


PYFAST = LIBRARY.parent / f"_edge_pyfast{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def build_pyfast() -> Path | None:
    """Compile host/edge_pyfast.c for this Python when it is missing or older than its source; None when it
    cannot be built here (no Python headers, no compiler): the ctypes path is used then."""
    src = HOST_TREE / "host" / "edge_pyfast.c"
    include = sysconfig.get_paths().get("include")
    if not src.is_file() or not include or not (Path(include) / "Python.h").is_file():
        return None
    if PYFAST.is_file() and PYFAST.stat().st_mtime >= src.stat().st_mtime:
        return PYFAST
    tmp = PYFAST.with_name(PYFAST.name + f".{os.getpid()}.tmp")
    proc = subprocess.run([os.environ.get("CC", "gcc"), "-O2", "-shared", "-fPIC", f"-I{include}", str(src), "-o",
                           str(tmp)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        return None
    os.replace(tmp, PYFAST)  # whole file or nothing: a concurrent loader never sees half of it
    return PYFAST


def load_pyfast():
    """The extension module, or None (not built / does not load: ctypes serves)."""
    if not PYFAST.is_file():
        return None
    try:
        spec = importlib.util.spec_from_file_location("_edge_pyfast", PYFAST)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (ImportError, OSError):
        return None
    return module


# A library built elsewhere for this machine's CPU (`edge deploy` cross-builds it on the host for a board without
# a compiler and copies it here, into the installed package): used instead of building when the package is an
# installed copy (not a checkout, which always builds its own) and it loads.
PREBUILT = resources.PACKAGE_DIR / "_prebuilt" / "libedge.so"


def prebuilt() -> Path | None:
    """PREBUILT when this installed copy has one (a checkout always builds its own), else None."""
    return PREBUILT if HOST_TREE != FIRMWARE and PREBUILT.is_file() else None


def library_path() -> Path:
    """The library ``edge_sdk.runtime.c_interpreter.library()`` loads: the prebuilt copy (``PREBUILT``) when there is one, else the host build."""
    return prebuilt() or LIBRARY


def source_digest(tree: Path) -> str:
    """A digest of the runtime's sources under ``tree`` (headers, core, kernels, host glue, gen_ops.py): the cache
    key of every build made from them here (check runners, a target's objects)."""
    import hashlib

    h = hashlib.sha256()
    for path in sorted([*tree.glob("include/*"), *tree.glob("src/*.h"), *tree.glob("src/*.c"),
                        *tree.glob("src/kernels/*.c"), *tree.glob("host/*.[ch]"), *tree.glob("fuzz/*.h"),
                        tree / "tools" / "gen_ops.py"]):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


# ----------------------------------------------------------------------------------------------- cached objects
# The objects `edge check` compiles (c_footprint's per-target objects, c_check's runners) are cached one by one
# under cache_dir()/objects/<2 hex>/<key>/, the key a hash of the compiler (path and version), its flags and the
# source as preprocessed with them: a second target with the same flags, or a type switch that does not reach a
# file, reuses that file's object; a changed header recompiles only the files that include it. Each source is
# preprocessed once and the compiles run in parallel.
# The key does not depend on where the sources lie: the folders a compile names (each -I folder's parent, the
# source's folder) are written as "@0", "@1", ... (in the order the flags and then the source name them) in the
# flags and in the preprocessed text (line markers, __FILE__), and that folder-free text is what is compiled, so
# an installed copy of the sources (site-packages) and the checkout share every object, and an object is a
# function of its key alone. A header's bytes are in the text: changing one changes the key of its includers.
# One lock file per key (fcntl, beside its folder): two processes (xdist workers) that need the same object
# compile it once; the second waits and reuses it.
OBJECTS = "objects"
_compiler_ids: dict[str, str] = {}


def jobs() -> int:
    """How many compiles to run at once: this machine's CPUs (make -j, the cached objects)."""
    return max(1, os.cpu_count() or 1)


def compiler_id(compiler: str) -> str:
    """The compiler's resolved path and first --version line (part of every object's key, and of the name of
    every cached folder of objects: a folder named without it would hold another compiler's objects)."""
    if compiler not in _compiler_ids:
        path = shutil.which(compiler)
        if path is None:
            raise BuildError(f"{compiler} not found on PATH")
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
        version = proc.stdout.splitlines()[0].strip() if proc.returncode == 0 and proc.stdout else "?"
        _compiler_ids[compiler] = f"{os.path.realpath(path)} {version}"
    return _compiler_ids[compiler]


def _source_folders(flags: tuple[str, ...], source: Path) -> list[str]:
    """The absolute folders a compile of ``source`` names, as the placeholders "@0", "@1", ... stand for them
    (index = position): each -I folder's parent (the source tree: include/, src/, host/ side by side), then the
    source's own folder; a folder inside an earlier one is left out (the earlier one's placeholder covers it)."""
    # absolute but not resolved: the preprocessor writes the paths as the flags and the source name spell them
    named = [os.path.dirname(os.path.abspath(f[2:])) for f in flags if f.startswith("-I") and len(f) > 2]
    folders: list[str] = []
    for folder in [*named, os.path.dirname(os.path.abspath(source))]:
        if folder != os.sep and not any(folder == f or folder.startswith(f + os.sep) for f in folders):
            folders.append(folder)
    return folders


def _without_folders(data: bytes, folders: list[str]) -> bytes:
    """``data`` with every "<folder>/" of ``folders`` written "@<index>/" (longest folder first: a folder that
    holds another never takes its files)."""
    for i, folder in sorted(enumerate(folders), key=lambda f: -len(f[1])):
        data = data.replace(os.fsencode(folder + os.sep), f"@{i}{os.sep}".encode())
    return data


def _with_folders(text: str, folders: list[str]) -> str:
    """A compiler message about folder-free text with its folders back (the reader's paths)."""
    for i, folder in reversed(list(enumerate(folders))):  # "@1" before "@10" would be wrong: highest first
        text = text.replace(f"@{i}{os.sep}", folder + os.sep)
    return text


def _portable_flags(flags: tuple[str, ...], folders: list[str]) -> list[str]:
    """``flags`` with ``folders`` written as their placeholders (-I/abs/tree/include -> -I@0/include)."""
    return [_without_folders(os.fsencode(f), folders).decode(errors="surrogateescape") for f in flags]


def build_tag(compiler: str, *parts: str, tree: Path = FIRMWARE) -> str:
    """The 12-hex-digit name of a cached build folder: the compiler's identity (``compiler_id``, as in every
    object's key), the caller's ``parts`` (layout, flags, ...) and the runtime sources under ``tree``."""
    import hashlib

    return hashlib.sha256(" ".join([compiler_id(compiler), *parts, source_digest(tree)]).encode()).hexdigest()[:12]


def object_key(compiler: str, flags: tuple[str, ...], source: Path, aux: tuple[str, ...] = ()) -> tuple[str, bytes]:
    """(key, folder-free preprocessed text) of ``source`` compiled by ``compiler`` with ``flags`` (and gcc's
    ``aux`` outputs): the object cache's key, independent of the folder the sources lie in. BuildError with the
    preprocessor's message when it fails."""
    import hashlib

    pre = subprocess.run([compiler, *flags, "-E", str(source)], capture_output=True, check=False)
    folders = _source_folders(flags, source)
    if pre.returncode != 0:
        raise BuildError(f"{compiler} cannot preprocess {source.name}:\n{pre.stderr.decode(errors='replace')[-2000:]}")
    text = _without_folders(pre.stdout, folders)
    portable_flags = _portable_flags(flags, folders)
    h = hashlib.sha256("\0".join([compiler_id(compiler), *portable_flags, *aux]).encode(errors="surrogateescape"))
    h.update(b"\0")
    h.update(text)
    return h.hexdigest()[:32], text


@contextlib.contextmanager
def _object_lock(store: Path):
    """An exclusive lock (between processes and threads) on one cached object: <key>.lock beside its folder;
    none where fcntl is missing (the rename below still keeps a stored object whole)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(store.with_name(store.name + ".lock"), "a") as f:  # a descriptor of its own: threads exclude too
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _compile_into(compiler: str, flags: tuple[str, ...], source: Path, text: bytes, store: Path) -> None:
    """Compile the folder-free preprocessed ``text`` of ``source`` into ``store``/obj.o (and its aux files):
    built in a private folder, renamed into place whole (a reader that takes no lock sees all of it or none)."""
    folders = _source_folders(flags, source)
    portable_flags = _portable_flags(flags, folders)
    tmp = store.with_name(f"{store.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    (tmp / f"{source.stem}.i").write_bytes(text)
    proc = subprocess.run([compiler, *portable_flags, "-c", f"{source.stem}.i", "-o", "obj.o"], capture_output=True,
                          text=True, check=False, cwd=tmp)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BuildError(f"{compiler} failed on {source.name}:\n{_with_folders(proc.stderr, folders)[-2000:]}")
    (tmp / f"{source.stem}.i").unlink()
    try:
        os.rename(tmp, store)
    except OSError:  # stored meanwhile by a process that took no lock (fcntl missing): keep that one
        shutil.rmtree(tmp, ignore_errors=True)


def _cached_object(compiler: str, flags: tuple[str, ...], source: Path, out: Path, aux: tuple[str, ...]) -> None:
    """Compile ``source`` to ``out`` (and the aux files gcc writes beside it, by suffix: ".ci" for
    -fcallgraph-info) through the object cache; BuildError with the compiler's message when it fails."""
    key, text = object_key(compiler, flags, source, aux)
    store = resources.cache_dir() / OBJECTS / key[:2] / key
    if not (store / "obj.o").is_file():
        store.parent.mkdir(parents=True, exist_ok=True)
        with _object_lock(store):
            if not (store / "obj.o").is_file():  # not stored by the process that held the lock before
                _compile_into(compiler, flags, source, text, store)
    for suffix in (".o", *aux):
        dst = out.with_suffix(suffix)
        part = out.with_name(f"{out.stem}.{os.getpid()}.{threading.get_ident()}{suffix}.part")
        part.unlink(missing_ok=True)
        try:
            os.link(store / f"obj{suffix}", part)
        except OSError:  # another file system: a copy
            shutil.copyfile(store / f"obj{suffix}", part)
        os.replace(part, dst)


def compile_objects(compiler: str, flags: tuple[str, ...], sources: list[Path], folder: Path,
                    aux: tuple[str, ...] = ()) -> list[Path]:
    """``folder``/<stem>.o for every source (and <stem><suffix> for each ``aux`` suffix), compiled by
    ``compiler`` with ``flags`` -c, ``jobs()`` at a time, each through the object cache (above). Sources must
    have distinct stems. BuildError naming the first source that does not compile."""
    from concurrent.futures import ThreadPoolExecutor

    if shutil.which(compiler) is None:
        raise BuildError(f"{compiler} not found on PATH")
    folder.mkdir(parents=True, exist_ok=True)
    outs = [folder / f"{Path(s).stem}.o" for s in sources]
    with ThreadPoolExecutor(max_workers=jobs()) as pool:
        for done in [pool.submit(_cached_object, compiler, tuple(flags), Path(s), o, tuple(aux))
                     for s, o in zip(sources, outs)]:
            done.result()
    return outs


def shared_kernel_files(files) -> list[str]:
    """The src/kernels/ files that register no op (code kernel files share: hybrid.c, LiteRT's hybrid kernels)
    which the kernel ``files`` call into: a shared file's external functions (a line-start definition of an
    ``edge_`` name) named in one of them."""
    from edge_sdk.runtime import op_table

    folder = FIRMWARE / "src" / "kernels"
    registered = {r["file"] for r in op_table.gen_ops_module().scan()}
    texts = [(folder / f).read_text() for f in files]
    needed = []
    for path in sorted(folder.glob("*.c")):
        if path.name in registered:
            continue
        names = re.findall(r"^(?!static)[A-Za-z_][\w \t*]*?\b(edge_\w+)\s*\(", path.read_text(), re.M)
        if any(re.search(rf"\b{n}\b", t) for n in names for t in texts):
            needed.append(path.name)
    return needed
