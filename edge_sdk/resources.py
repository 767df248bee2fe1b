"""Where edge-sdk's data lives: the device profiles, the C runtime's sources, and a writable cache.

    from edge_sdk import resources
    resources.profiles_dir()        # the folder of device_profiles/*.toml ($EDGE_PROFILE_DIR overrides)
    resources.firmware_dir()        # the firmware_c/ source tree (Makefile, src/, boards/, app/, tools/, ...)
    resources.cache_dir()           # $EDGE_CACHE_DIR, else $XDG_CACHE_HOME/edge-sdk, else ~/.cache/edge-sdk
    resources.host_tree()           # the firmware_c tree `make host` runs in (see below)

Two layouts, one answer:

* a checkout (or ``pip install -e .``): ``device_profiles/`` and ``firmware_c/`` are the top-level folders
  beside the ``edge_sdk`` package;
* an installed wheel: the build copies them into the package as ``edge_sdk/_bundled/device_profiles`` and
  ``edge_sdk/_bundled/firmware_c`` (setup.py's build_py, and deploy's direct wheel writer, both take the
  file list from ``bundle_files`` below: sources only, never build outputs).

The bundled copy wins when it exists. The C host build (``make host``) writes ``build/host/`` inside the tree
it runs in. A checkout whose firmware_c is writable builds in place, as it always did. An installed copy
never writes into site-packages: its sources are copied once into ``cache_dir()/c-runtime/<key>/firmware_c``
(``key``: a hash of the sources and the machine) and built there. This module uses the standard library
only (setup.py loads it by path at build time, before numpy or edge_sdk are importable).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
CHECKOUT_ROOT = PACKAGE_DIR.parent
BUNDLE_DIR = PACKAGE_DIR / "_bundled"
BUNDLE_ARC = "edge_sdk/_bundled"  # the same folder inside a wheel

PROFILES = "device_profiles"
FIRMWARE = "firmware_c"

# what a bundle leaves out: build folders, caches, objects and images of any kind, hidden files
_SKIP_DIRS = {"build", "__pycache__", ".pytest_cache"}
_SKIP_SUFFIXES = {".o", ".a", ".so", ".d", ".elf", ".map", ".bin", ".hex", ".uf2", ".pyc", ".pyo", ".tmp",
                  ".part", ".lock"}


# ----------------------------------------------------------------------------------------------- locating
def data_dir(name: str) -> Path:
    """The folder ``name`` ("device_profiles" or "firmware_c"): the bundled copy inside the package when
    there is one (an installed wheel), else the top-level folder of the checkout."""
    bundled = BUNDLE_DIR / name
    if bundled.is_dir():
        return bundled
    return CHECKOUT_ROOT / name


def profiles_dir() -> Path:
    """The folder of the device profiles; ``$EDGE_PROFILE_DIR`` replaces it when set."""
    env = os.environ.get("EDGE_PROFILE_DIR")
    return Path(env) if env else data_dir(PROFILES)


def firmware_dir() -> Path:
    """The C runtime's source tree (firmware_c: Makefile, include/, src/, host/, app/, boards/, tools/)."""
    return data_dir(FIRMWARE)


def is_bundled(path: str | Path) -> bool:
    """Whether ``path`` lies inside the package's bundled data (an installed copy)."""
    try:
        Path(path).resolve().relative_to(BUNDLE_DIR)
    except ValueError:
        return False
    return True


def cache_dir() -> Path:
    """A writable folder for edge-sdk's builds and caches (not created here): ``$EDGE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/edge-sdk``, else ``~/.cache/edge-sdk``. The one rule: every cache lives under it —
    ``c-runtime/`` (host_tree), ``firmware/`` (tools.flash builds), ``wheels/`` and ``wheelhouse/``
    (tools.deploy), ``c-loaded-models/`` (runtime.c_loaded.c_path), ``shaped/`` (model.input_shapes),
    ``boards.json`` (device.qemu_board.state_path, unless ``$EDGE_STATE_DIR`` is set)."""
    env = os.environ.get("EDGE_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "edge-sdk"



def cached_copy(kind: str, name: str, data: bytes) -> Path:
    """``data`` as the file ``cache_dir()/kind/<sha256 of data, 16 hex>/name`` (a derived model a tool hands to
    a path-taking step: a shaped or a UINT8-presented .tflite), written once and atomically (a per-process temp
    file renamed over it), rewritten only when the file there differs."""
    import hashlib

    folder = cache_dir() / kind / hashlib.sha256(data).hexdigest()[:16]
    out = folder / name
    if not out.is_file() or out.read_bytes() != data:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        tmp.write_bytes(data)
        tmp.replace(out)
    return out

# ----------------------------------------------------------------------------------------------- bundling
def _walk(folder: Path, keep) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if not name.startswith(".") and p.suffix not in _SKIP_SUFFIXES and keep(p):
                out.append(p)
    return out


def bundle_files(root: str | Path | None = None) -> list[tuple[Path, str]]:
    """The files a wheel carries from the source tree ``root`` (the checkout by default), as
    (file, path under ``edge_sdk/_bundled/``): ``device_profiles/*.toml`` and every source file of
    ``firmware_c`` (no build/ folder, objects, libraries, images, caches or hidden files)."""
    root = Path(root) if root is not None else CHECKOUT_ROOT
    out = []
    profiles = root / PROFILES
    if profiles.is_dir():
        out += [(p, f"{PROFILES}/{p.name}") for p in sorted(profiles.glob("*.toml")) if p.is_file()]
    firmware = root / FIRMWARE
    if firmware.is_dir():
        out += [(p, f"{FIRMWARE}/{p.relative_to(firmware).as_posix()}") for p in _walk(firmware, lambda p: True)]
    return out


def firmware_files(tree: str | Path | None = None) -> list[Path]:
    """The source files of a firmware_c tree (the same selection as ``bundle_files``)."""
    return _walk(Path(tree) if tree is not None else firmware_dir(), lambda p: True)


# ----------------------------------------------------------------------------------------------- C host build
def builds_in_place(tree: str | Path | None = None) -> bool:
    """Whether ``make host`` may write into the firmware tree itself: a checkout's firmware_c that this
    user can write. An installed (bundled) copy never builds in place."""
    tree = Path(tree) if tree is not None else firmware_dir()
    if is_bundled(tree):
        return False
    build = tree / "build"
    return os.access(tree, os.W_OK | os.X_OK) and (not build.exists() or os.access(build, os.W_OK | os.X_OK))


def _tree_key(tree: Path) -> str:
    h = hashlib.sha256(f"{sys.platform} {platform.machine()}\0".encode())
    for p in firmware_files(tree):
        h.update(p.relative_to(tree).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def host_tree(tree: str | Path | None = None) -> Path:
    """The firmware_c tree the host build runs in: ``tree`` (default ``firmware_dir()``) itself when it
    builds in place, else its copy ``cache_dir()/c-runtime/<key>/firmware_c`` (made by ``ensure_host_tree``)."""
    tree = Path(tree) if tree is not None else firmware_dir()
    if builds_in_place(tree):
        return tree
    return cache_dir() / "c-runtime" / _tree_key(tree) / FIRMWARE


def ensure_host_tree(tree: str | Path | None = None) -> Path:
    """``host_tree(tree)``, with the cache copy of the sources made first when it is a copy (written to a
    temporary folder and renamed into place, so concurrent callers never see half a tree)."""
    tree = Path(tree) if tree is not None else firmware_dir()
    dest = host_tree(tree)
    if dest == tree or (dest / "Makefile").is_file():
        return dest
    if not (tree / "Makefile").is_file():
        raise FileNotFoundError(f"no C runtime sources: {tree / 'Makefile'} is missing")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".copy-", dir=dest.parent))
    try:
        for p in firmware_files(tree):
            out = tmp / p.relative_to(tree)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, out)
        try:
            os.rename(tmp, dest)
        except OSError:
            if not (dest / "Makefile").is_file():  # not a concurrent copy that got there first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


@contextlib.contextmanager
def build_lock(tree: str | Path):
    """An exclusive lock (between processes) for building in ``tree``; a no-op where fcntl is missing."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    lock = Path(tree).parent / ".build.lock"
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# ----------------------------------------------------------------------------------------------- tools
def require_tool(tool: str, hint: str | None = None) -> str:
    """The path of the program ``tool`` on PATH; DeviceError naming what to install (``hint``) when it is missing."""
    path = shutil.which(tool)
    if path is None:
        from edge_sdk.errors import DeviceError  # lazy: setup.py loads this module by path, without edge_sdk

        raise DeviceError(f"{tool} not found on PATH: install it ({hint or tool})")
    return path
