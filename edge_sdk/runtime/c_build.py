"""Building the C micro-runtime (firmware_c/) for this machine: where its sources are, where its host library
lands, and the build itself.

The host library (firmware_c/build/host/libedge.so) is built on first use with ``make -C firmware_c host``
(make and a C compiler, ``$CC`` or gcc, must be on PATH; the BuildError says which one is missing). An installed
copy builds out of tree: in a copy of its bundled sources under the cache folder (``edge_sdk.resources.host_tree``).
Beside the library, when Python's headers are installed, a tiny CPython extension (host/edge_pyfast.c) for the
binding's invoke (``edge_sdk.runtime.c_interpreter``); without it the binding calls through ctypes.
``source_digest`` keys the other builds made from these sources (``edge_sdk.targets.c_check``'s check runners,
``edge_sdk.targets.c_footprint``'s objects).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from edge_sdk import resources
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
    cmd = ["make", "-C", str(HOST_TREE), "host", f"PYTHON={sys.executable}"]
    if HOST_TREE != FIRMWARE:  # an installed copy: its sources copied into the cache once, built there
        try:
            resources.ensure_host_tree(FIRMWARE)
        except OSError as exc:
            raise BuildError(f"cannot copy the C runtime's sources from {FIRMWARE} to {HOST_TREE}: {exc}") from exc
    # One build at a time (test workers, parallel users): the lock lives in the (ignored) build folder.
    lock_tree = HOST_TREE / "build" / "host" if HOST_TREE == FIRMWARE else HOST_TREE
    lock_tree.parent.mkdir(parents=True, exist_ok=True)
    with resources.build_lock(lock_tree):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"`make -C {HOST_TREE} host` failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        build_pyfast()
    return LIBRARY


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
