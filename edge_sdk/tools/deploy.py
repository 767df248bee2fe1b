"""`edge deploy`: put a model and the edge-sdk runtime on a Linux board (a Raspberry Pi) over SSH.

    result = deploy("model.tflite", "pi@raspberrypi.local")          # or an ~/.ssh/config alias
    result.manifest                                                   # what is on the device now
    status("pi@raspberrypi.local")                                    # the device's manifest, checked
    results = deploy_fleet("model.tflite", read_hosts("hosts.ini"))  # in parallel, one result per host

What happens on the device (``remote_dir``, default ``~/.edge-sdk``):

1. Probe: Python (>= 3.10), architecture (aarch64 / armv7l; x86_64 for a PC "device" such as the tests'
   loopback), glibc, compilers, and the current manifest, in one ``python3 -c`` call. A profile
   (``target=``) whose arch differs from the device's gives a warning; a model above the profile's
   ``flash_model_bytes`` is refused.
2. Runtime: the edge-sdk wheel is built here once per source tree (``pip wheel --no-deps`` on a copy of the
   sources, or written directly when no wheel-capable setuptools is installed; cached under
   ``resources.cache_dir()/wheels/<hash of the sources>/``: $EDGE_CACHE_DIR, else $XDG_CACHE_HOME/edge-sdk,
   else ~/.cache/edge-sdk) and copied to
   ``remote_dir/wheels/``. A new venv ``remote_dir/venvs/<wheel hash>`` is created on the device and pip
   installs the wheel into it (its dependencies from the device's index; with ``offline=True`` they are
   downloaded here for the device's Python, arch and glibc — ``pip download --only-binary`` — shipped too,
   and installed with ``--no-index``). Only when that venv imports edge_sdk does the symlink
   ``remote_dir/venv`` switch to it (a symlink renamed over the old one: atomic). The previous venv stays
   (rollback by hand; older ones are pruned). A venv already built for this wheel is reused.
3. C backend (optional): the library built for the board's CPU. When the device has no ``cc``/``make`` (or
   always, with ``ship_c="always"``: `--ship-c-library`), it is built here — cross-compiled for the device's
   ``uname -m`` (aarch64: ``make aarch64`` with aarch64-linux-gnu-gcc; armv7l: ``make armhf`` with
   arm-linux-gnueabihf-gcc; the host's own arch: ``make host``; ``c_library_for``) — copied into the new venv as
   ``edge_sdk/_prebuilt/libedge.so`` (a temporary name, sha256-checked, renamed: atomic), where
   ``edge_sdk.runtime.c_interpreter`` loads it instead of building, and checked to load there (one ``python -c``); the manifest's
   ``c_backend`` records it (shipped, arch, compiler, sha256). Otherwise, when the device has ``cc`` and
   ``make``, the new venv builds its C host library
   (``edge_sdk.runtime.c_build.build()``: the wheel carries firmware_c as ``edge_sdk/_bundled/firmware_c``, built
   out of tree under the device's ``resources.cache_dir()/c-runtime/``). A wheel without the bundle (an older
   one passed as ``wheel=``) gets firmware_c shipped into site-packages and built there, as before. A
   failure is a note in the result, never fatal. Then the device's own ``edge_sdk.tools.run_backend`` says which
   runtime `edge run/bench/serve` will use for the model there (the C runtime when it runs it): the manifest's
   ``runtime_choice`` ({runtime, runtime_reason}), printed by `edge deploy`.
4. Model: streamed to a temporary name in ``remote_dir/models/``, fsync'ed and its sha256 checked there,
   then in one remote step renamed over the old model and the manifest ``remote_dir/manifest.json`` rewritten
   the same way (temp, fsync, rename). An interrupted deploy therefore leaves the previous model, runtime and
   manifest as they were (at worst a stray ``.*.part`` file, removed by the next deploy).

Remote commands are built with ``shlex.quote`` around every value (``edge_sdk.device.ssh.remote_command``);
model names with spaces or quotes are fine. Errors are ``DeviceError`` (``ModelError`` for a model that is
not a .tflite) naming the host and the step.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from edge_sdk import __version__, log, resources
from edge_sdk import timeouts as T
from edge_sdk.device.ssh import (
    SSHConnection,
    SSHTarget,
    remote_command,
    require_openssh,
)
from edge_sdk.errors import BuildError, DeviceError, EdgeError, ModelError

REMOTE_DIR = "~/.edge-sdk"
MIN_PYTHON = (3, 10)
# Device architectures the runtime is meant for (x86_64: a PC acting as the device, e.g. the tests' loopback).
SUPPORTED_ARCHES = ("aarch64", "armv7l", "x86_64")
_ARCH_ALIASES = {"arm64": "aarch64", "armhf": "armv7l", "armv7": "armv7l", "amd64": "x86_64", "x86-64": "x86_64"}
KEEP_VENVS = 2  # the current runtime and the one before it

SOURCE_ROOT = resources.CHECKOUT_ROOT  # the checkout (or the folder that holds the installed package)


def wheel_cache_dir() -> Path:
    """Where built wheels are cached: ``edge_sdk.resources.cache_dir()/wheels/<hash of the sources>/``."""
    return resources.cache_dir() / "wheels"


def wheelhouse_dir() -> Path:
    """Where dependency wheels downloaded for a device are cached: ``resources.cache_dir()/wheelhouse``."""
    return resources.cache_dir() / "wheelhouse"


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------- the wheel
_WHEEL_LOCK = threading.Lock()
_SOURCE_PARTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "edge_sdk", "converters")


def _source_files(root: Path) -> list[Path]:
    files = []
    for part in _SOURCE_PARTS:
        p = root / part
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            files += sorted(f for f in p.rglob("*") if f.is_file() and "__pycache__" not in f.parts
                            and f.suffix not in (".pyc", ".pyo"))
    # device_profiles/ and firmware_c/ (sources only): the wheel bundles them as edge_sdk/_bundled/
    files += [f for f, _ in resources.bundle_files(root)]
    return files


def build_wheel(root: str | Path | None = None, cache: str | Path | None = None) -> Path:
    """The edge-sdk wheel of the source tree ``root`` (this checkout by default), built with
    ``pip wheel --no-deps`` on a copy of the sources and cached by a hash of them. Without a wheel-capable
    setuptools here (pip would have to download one), the same pure-Python wheel is written directly."""
    root = Path(root or SOURCE_ROOT)
    if not (root / "pyproject.toml").is_file():
        raise DeviceError(f"cannot build the edge-sdk wheel: no pyproject.toml in {root} (deploy from a checkout)")
    files = _source_files(root)
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    key = h.hexdigest()[:16]
    out = Path(cache or wheel_cache_dir()) / key
    with _WHEEL_LOCK:
        found = sorted(out.glob("edge_sdk-*.whl")) if out.is_dir() else []
        if found:
            return found[0]
        log.stage(f"building the edge-sdk wheel ({len(files)} files)")
        with tempfile.TemporaryDirectory(prefix="edge-wheel-") as tmp:
            src = Path(tmp) / "src"
            for f in files:
                dst = src / f.relative_to(root)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dst)
            if _can_pip_wheel_offline():
                args = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "--disable-pip-version-check", "-q", "-w", str(Path(tmp) / "dist"), str(src)]
                try:
                    proc = subprocess.run(args, capture_output=True, text=True, timeout=T.WHEEL_BUILD_TIMEOUT,
                                          check=False)
                except subprocess.TimeoutExpired as exc:
                    raise DeviceError("building the edge-sdk wheel timed out after 300 s") from exc
                if proc.returncode != 0:
                    raise DeviceError(f"building the edge-sdk wheel failed: {(proc.stderr or proc.stdout).strip()[-800:]}")
            else:
                _write_wheel(src, Path(tmp) / "dist")
            built = sorted((Path(tmp) / "dist").glob("edge_sdk-*.whl"))
            if not built:
                raise DeviceError("building the edge-sdk wheel produced no edge_sdk-*.whl")
            out.mkdir(parents=True, exist_ok=True)
            final = out / built[0].name
            part = out / (built[0].name + ".part")
            shutil.copy2(built[0], part)
            os.replace(part, final)
        return final


def _can_pip_wheel_offline() -> bool:
    """setuptools with bdist_wheel is importable here, so pip builds without fetching a build environment."""
    try:
        import setuptools
    except ImportError:
        return False
    try:
        import setuptools.command.bdist_wheel  # noqa: F401  (setuptools >= 70.1)

        return True
    except ImportError:
        pass
    try:
        import wheel.bdist_wheel  # noqa: F401

        return True
    except ImportError:
        return False


def _write_wheel(src: Path, dist: Path) -> Path:
    """A PEP 427 wheel of the pure-Python packages in ``src``, written directly (the fallback when no
    wheel-capable build backend is installed and none may be downloaded): the same files and metadata
    (name, version, Requires-Dist, the ``edge`` entry point) as setuptools would write."""
    import base64
    import zipfile

    try:
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    project = tomllib.loads((src / "pyproject.toml").read_text())["project"]
    name, version = project["name"].replace("-", "_"), project["version"]
    info = f"{name}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {version}"]
    if project.get("description"):
        meta.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        meta.append(f"Requires-Python: {project['requires-python']}")
    meta += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in (project.get("optional-dependencies") or {}).items():
        meta.append(f"Provides-Extra: {extra}")
        meta += [f"Requires-Dist: {d.split(';')[0].strip()} ; extra == '{extra}'" for d in deps]
    scripts = project.get("scripts") or {}
    extra_files = {
        f"{info}/METADATA": "\n".join(meta) + "\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: edge-sdk\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items()),
        f"{info}/top_level.txt": "".join(f"{p}\n" for p in ("converters", "edge_sdk") if (src / p).is_dir()),
    }
    dist.mkdir(parents=True, exist_ok=True)
    path = dist / f"{name}-{version}-py3-none-any.whl"
    record = []

    def add(zf, arc: str, data: bytes) -> None:
        zf.writestr(zipfile.ZipInfo(arc, (2020, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")

    with zipfile.ZipFile(path, "w") as zf:
        for package in ("edge_sdk", "converters"):
            for f in sorted((src / package).rglob("*")) if (src / package).is_dir() else []:
                if f.is_file() and f.suffix != ".pyc":
                    add(zf, f.relative_to(src).as_posix(), f.read_bytes())
        for f, rel in resources.bundle_files(src):  # what setup.py's build_py bundles, the same way
            add(zf, f"{resources.BUNDLE_ARC}/{rel}", f.read_bytes())
        for arc, text in extra_files.items():
            add(zf, arc, text.encode())
        record.append(f"{info}/RECORD,,")
        zf.writestr(zipfile.ZipInfo(f"{info}/RECORD", (2020, 1, 1, 0, 0, 0)), "\n".join(record) + "\n",
                    zipfile.ZIP_DEFLATED)
    return path


def _glibc_tags(arch: str, glibc: str | None) -> list[str]:
    try:
        major, minor = (int(x) for x in (glibc or "2.17").split(".")[:2])
    except ValueError:
        major, minor = 2, 17
    tags = [f"manylinux_2_{m}_{arch}" for m in range(17, minor + 1)] if major == 2 else []
    return tags + [f"manylinux2014_{arch}", f"linux_{arch}"]


def download_dependencies(wheel: Path, python_version: str, arch: str, glibc: str | None,
                          cache: str | Path | None = None,
                          timeout: float = T.WHEEL_DOWNLOAD_TIMEOUT) -> list[Path]:
    """The wheel's dependencies as wheels for the device (``pip download --only-binary=:all:`` for its
    Python version, arch and glibc), cached per (wheel, python, arch, glibc)."""
    py = "".join(python_version.split(".")[:2])
    folder = Path(cache or wheelhouse_dir()) / f"{wheel.parent.name}-cp{py}-{arch}-glibc{glibc or 'x'}"
    done = folder / ".complete"
    with _WHEEL_LOCK:
        if not done.exists():
            log.stage(f"downloading dependency wheels for cp{py} {arch} (offline deploy)")
            folder.mkdir(parents=True, exist_ok=True)
            args = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q",
                    "--only-binary=:all:", "--python-version", python_version, "--implementation", "cp",
                    "--abi", f"cp{py}", "-d", str(folder)]
            for tag in _glibc_tags(arch, glibc):
                args += ["--platform", tag]
            args.append(str(wheel))
            try:
                proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
            except subprocess.TimeoutExpired as exc:
                raise DeviceError(f"downloading dependency wheels timed out after {timeout:g} s") from exc
            if proc.returncode != 0:
                raise DeviceError(f"downloading the dependency wheels for cp{py} {arch} failed (pip download): "
                                  f"{proc.stderr.strip()[-800:]}")
            done.write_text("ok\n")
    return sorted(p for p in folder.glob("*.whl") if not p.name.startswith("edge_sdk-"))


# ----------------------------------------------------------------------------------------------- hosts
def read_hosts(path: str | Path) -> list[SSHTarget]:
    """A fleet: one ``user@host[:port]`` (or alias) per line with ``#`` comments, or an Ansible-style INI
    inventory (``[group]`` lines; ``name ansible_host=... ansible_port=... ansible_user=...``)."""
    text = Path(path).read_text()
    targets: list[SSHTarget] = []
    seen = set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith(";") else ""
        if not line or (line.startswith("[") and line.endswith("]")):
            continue
        words = line.split()
        if len(words) == 1 and "=" not in words[0]:
            spec, name = words[0], None
        else:
            name = words[0]
            try:
                fields = dict(w.split("=", 1) for w in words[1:])
            except ValueError:
                raise DeviceError(f"{path}:{number}: expected 'name key=value ...', got {raw.strip()!r}") from None
            if any(v == "" for v in fields.values()):
                raise DeviceError(f"{path}:{number}: empty value in {raw.strip()!r}")
            host = fields.get("ansible_host", name)
            user = fields.get("ansible_user")
            port = fields.get("ansible_port")
            spec = f"{user + '@' if user else ''}{'[' + host + ']' if ':' in host and port else host}"
            spec += f":{port}" if port else ""
        try:
            target = SSHTarget.parse(spec, name=name)
        except DeviceError as exc:
            raise DeviceError(f"{path}:{number}: {exc}") from None
        if target.label in seen:
            continue
        seen.add(target.label)
        targets.append(target)
    if not targets:
        raise DeviceError(f"{path}: no hosts in the file")
    return targets


# ----------------------------------------------------------------------------------------------- remote scripts
# Each runs as `python3 -c SCRIPT ARGS...` on the device; values arrive in argv, results leave as JSON.
_PROBE = r"""
import glob, json, os, platform, shutil, sys
base = os.path.abspath(os.path.expanduser(sys.argv[1]))
def load(p):
    try:
        with open(p) as f: return json.load(f)
    except Exception: return None
venv = os.path.join(base, "venv")
def pip_version():
    try:
        import importlib.metadata
        return importlib.metadata.version("pip")
    except Exception: return None
print(json.dumps({
    "python": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable,
    "machine": platform.machine(), "system": platform.system(), "glibc": platform.libc_ver()[1] or None,
    "home": os.path.expanduser("~"), "base": base, "manifest": load(os.path.join(base, "manifest.json")),
    "venv_target": os.path.realpath(venv) if os.path.islink(venv) else None,
    "complete_venvs": sorted(os.path.basename(os.path.dirname(p))
                             for p in glob.glob(os.path.join(base, "venvs", "*", ".edge-sdk-complete"))),
    "wheels": {os.path.relpath(p, os.path.join(base, "wheels")): os.path.getsize(p)
               for p in glob.glob(os.path.join(base, "wheels", "*.whl")) + glob.glob(os.path.join(base, "wheels", "*", "*.whl"))},
    "cc": shutil.which("cc") or shutil.which("gcc"),
    "make": shutil.which("make"),
    "pip": pip_version(),
}))
"""

# argv: base, folder name under base; creates it and removes stale temporaries (*.part) in it.
PREPARE_SCRIPT = r"""
import glob, os, sys
base = sys.argv[1]
for sub in sys.argv[2:]:
    d = os.path.join(base, sub)
    os.makedirs(d, exist_ok=True)
    for p in glob.glob(os.path.join(d, ".*.part")):
        try: os.unlink(p)
        except OSError: pass
"""

# argv: src dst -- rename a temporary upload into place and fsync the folder.
RENAME_SCRIPT = r"""
import os, sys
os.replace(sys.argv[1], sys.argv[2])
fd = os.open(os.path.dirname(sys.argv[2]), os.O_RDONLY); os.fsync(fd); os.close(fd)
"""

# argv: base, venv dir name, keep -- point base/venv at venvs/NAME atomically, prune old venvs.
_SWITCH = r"""
import os, shutil, sys, time
base, name, keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
link, tmp = os.path.join(base, "venv"), os.path.join(base, ".venv.link.part")
if os.path.lexists(tmp): os.unlink(tmp)
old = os.path.realpath(link) if os.path.islink(link) else None
if os.path.isdir(link) and not os.path.islink(link):
    os.rename(link, os.path.join(base, "venvs", "pre-edge-%d" % int(time.time())))
os.symlink(os.path.join("venvs", name), tmp)
os.replace(tmp, link)
fd = os.open(base, os.O_RDONLY); os.fsync(fd); os.close(fd)
venvs = os.path.join(base, "venvs")
keepers = {name} | ({os.path.basename(old)} if old else set())
others = sorted((d for d in os.listdir(venvs) if d not in keepers), key=lambda d: os.path.getmtime(os.path.join(venvs, d)))
for d in others[: max(0, len(others) - max(0, keep - len(keepers)))]:
    shutil.rmtree(os.path.join(venvs, d), ignore_errors=True)
"""

# argv: model tmp, model final, manifest path, manifest json -- the commit step of a deploy.
_COMMIT = r"""
import os, sys
tmp, final, manifest, text = sys.argv[1:5]
mtmp = os.path.join(os.path.dirname(manifest), ".manifest.json.part")
with open(mtmp, "w") as f:
    f.write(text); f.flush(); os.fsync(f.fileno())
os.replace(tmp, final)
fd = os.open(os.path.dirname(final), os.O_RDONLY); os.fsync(fd); os.close(fd)
os.replace(mtmp, manifest)
fd = os.open(os.path.dirname(manifest), os.O_RDONLY); os.fsync(fd); os.close(fd)
"""

# argv: base -- the manifest and whether what it names is still there.
_STATUS = r"""
import hashlib, json, os, subprocess, sys
base = os.path.abspath(os.path.expanduser(sys.argv[1]))
path = os.path.join(base, "manifest.json")
try:
    with open(path) as f: m = json.load(f)
except FileNotFoundError:
    print(json.dumps(None)); sys.exit(0)
model = m.get("model", {}).get("path", "")
h = hashlib.sha256()
try:
    with open(model, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""): h.update(chunk)
    m["model_ok"] = h.hexdigest() == m["model"].get("sha256")
except OSError:
    m["model_ok"] = False
py = os.path.join(base, "venv", "bin", "python")
try:
    r = subprocess.run([py, "-c", "import edge_sdk; print(edge_sdk.__version__)"], capture_output=True, text=True,
                       timeout=60, check=False)
    m["runtime_ok"] = r.returncode == 0 and r.stdout.strip() == m.get("edge_sdk_version")
except (OSError, subprocess.TimeoutExpired):
    m["runtime_ok"] = False
print(json.dumps(m))
"""


# ----------------------------------------------------------------------------------------------- deploy
@dataclass
class DeployResult:
    """What one host's deploy did: ``manifest`` (what is on the device now), ``notes`` (warnings, skipped
    steps), ``seconds``; ``error`` is set (and ``ok`` False) when it failed."""

    target: SSHTarget
    ok: bool = False
    manifest: dict | None = None
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"host": self.target.label, "ok": self.ok, "error": self.error, "notes": self.notes,
                "seconds": round(self.seconds, 3), "manifest": self.manifest}


def _version_tuple(text: str | None) -> tuple[int, ...]:
    parts = []
    for p in (text or "").split(".")[:3]:
        if not p.isdigit():
            break
        parts.append(int(p))
    return tuple(parts)


def normalize_arch(arch: str | None) -> str | None:
    return None if arch is None else _ARCH_ALIASES.get(arch.lower(), arch.lower())


def parse_json(text: str, what: str, label: str):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith(("{", "[")) or line == "null":
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                break
    raise DeviceError(f"{label}: {what}: the device answered something that is not JSON: {text.strip()[-300:]!r}")


def _resolve_profile(target):
    if target is None or hasattr(target, "arch"):
        return target
    from edge_sdk.targets.profiles import load_profile

    return load_profile(target)


def connection_for(host, *, identity=None, accept_new_host_key=False, connect_timeout=T.SSH_CONNECT_TIMEOUT,
                   profile=None) -> SSHConnection:
    """An SSHConnection for ``host`` (``SSHTarget``, ``user@host[:port]`` or an alias); ``None`` takes the
    host, user and port from the profile's ``[flash]`` section."""
    if host is None:
        flash = getattr(profile, "flash", None) or {}
        if flash.get("method") != "ssh" or not flash.get("host"):
            raise DeviceError("no host: pass --host USER@HOST[:PORT] (or a profile whose [flash] has method = "
                              "\"ssh\" and a host)")
        host = SSHTarget(flash["host"], flash.get("user"), flash.get("port"))
    target = host if isinstance(host, SSHTarget) else SSHTarget.parse(str(host))
    return SSHConnection(target, identity=identity, accept_new_host_key=accept_new_host_key,
                         connect_timeout=connect_timeout)


def deploy(
    model: str | Path,
    host=None,
    *,
    target=None,
    identity: str | None = None,
    accept_new_host_key: bool = False,
    offline: bool = False,
    remote_dir: str = REMOTE_DIR,
    python: str | None = None,
    system_site_packages: bool = False,
    build_c: bool = True,
    ship_c: str = "auto",
    connect_timeout: float = T.SSH_CONNECT_TIMEOUT,
    copy_timeout: float | None = None,
    install_timeout: float = T.DEPLOY_INSTALL_TIMEOUT,
    wheel: str | Path | None = None,
    input_shapes=None,
) -> DeployResult:
    """Deploy ``model`` and the runtime to one device (see the module docstring); raises DeviceError.
    ``ship_c``: "auto" (ship the C library built here when the device cannot build it), "always" (ship it
    even when the device has a compiler), "never" (build on the device or skip); ``build_c=False``: no C
    library at all. ``input_shapes`` (`--input-shape`): the model is shipped with its inputs at these shapes
    (edge_sdk.model.input_shapes.shaped_model_path; a -1 beyond the batch axis without one is a UsageError)."""
    from edge_sdk.model.input_shapes import shaped_model_path

    if ship_c not in SHIP_C:
        raise ValueError(f"ship_c must be one of {', '.join(SHIP_C)}, not {ship_c!r}")
    start = time.monotonic()
    model = Path(model)
    if not model.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(model))
    with open(model, "rb") as f:
        head = f.read(8)
    if len(head) < 8 or head[4:8] != b"TFL3":
        raise ModelError(f"{model}: not a .tflite model (no TFL3 identifier at byte 4)")
    model = shaped_model_path(model, input_shapes)
    require_openssh()
    profile = _resolve_profile(target)
    conn = connection_for(host, identity=identity, accept_new_host_key=accept_new_host_key,
                          connect_timeout=connect_timeout, profile=profile)
    with conn.session():
        return _deploy(conn, model, profile, offline=offline, remote_dir=remote_dir, python=python,
                       system_site_packages=system_site_packages, build_c=build_c, ship_c=ship_c,
                       connect_timeout=connect_timeout,
                       copy_timeout=copy_timeout, install_timeout=install_timeout, wheel=wheel, start=start)


def _deploy(conn, model, profile, *, offline, remote_dir, python, system_site_packages, build_c, ship_c,
            connect_timeout, copy_timeout, install_timeout, wheel, start) -> DeployResult:
    result = DeployResult(conn.target)
    label = conn.target.label
    python = python or (getattr(profile, "flash", {}) or {}).get("python") or "python3"
    size = model.stat().st_size
    digest = sha256_file(model)

    if profile is not None and size > profile.flash_model_bytes:
        raise DeviceError(f"{label}: {model.name} is {size} bytes, above {profile.name}'s model budget "
                          f"(flash_model_bytes = {profile.flash_model_bytes})")
    whl = Path(wheel) if wheel else build_wheel()
    whl_sha = sha256_file(whl)

    log.stage(f"{label}: checking the device")
    info = parse_json(conn.run_python(_PROBE, remote_dir, python=python, what="probing the device",
                                       timeout=connect_timeout + T.DEPLOY_PROBE_EXTRA).stdout, "probe", label)
    version = tuple(int(x) for x in info["python"].split(".")[:2])
    if version < MIN_PYTHON:
        raise DeviceError(f"{label}: the device's {python} is Python {info['python']}; edge-sdk needs "
                          f">= {'.'.join(map(str, MIN_PYTHON))}")
    arch = normalize_arch(info["machine"])
    if info.get("system") != "Linux" or arch not in SUPPORTED_ARCHES:
        raise DeviceError(f"{label}: unsupported device {info.get('system')} {info['machine']} "
                          f"(edge deploy supports Linux on {', '.join(SUPPORTED_ARCHES)})")
    if profile is not None and normalize_arch(profile.arch) != arch:
        note = f"profile {profile.name} is for {profile.arch}, but {label} is {arch}"
        log.warning(note)
        result.notes.append(note)
    base = info["base"]
    venv_name = f"{whl_sha[:16]}-py{version[0]}{version[1]}" + ("-sys" if system_site_packages else "")
    conn.run_python(PREPARE_SCRIPT, base, "models", "wheels", "venvs", python=python, what="preparing folders")

    # --- runtime
    runtime_new = False
    if venv_name in info.get("complete_venvs", []):
        log.info(f"{label}: runtime {venv_name} already installed")
    else:
        runtime_new = True
        # (remote name under base/wheels, local file): our wheel in a folder named by its hash, since every
        # build of one version has the same file name.
        wheels = [(f"{whl_sha[:16]}/{whl.name}", whl)]
        if offline:
            wheels += [(w.name, w) for w in download_dependencies(whl, info["python"], arch, info.get("glibc"))]
        have = info.get("wheels", {})
        for rel, w in wheels:
            if have.get(rel) == w.stat().st_size:
                continue
            log.stage(f"{label}: copying {w.name}")
            folder = f"{base}/wheels/{os.path.dirname(rel)}".rstrip("/")
            conn.run_python(PREPARE_SCRIPT, folder, ".", python=python, what="preparing folders")
            tmp = f"{folder}/.{w.name}.{os.getpid()}.part"
            conn.upload(w, tmp, python=python, sha256=sha256_file(w))
            conn.run_python(RENAME_SCRIPT, tmp, f"{base}/wheels/{rel}", python=python, what=f"installing {w.name}")
        log.stage(f"{label}: installing the runtime (venv {venv_name})")
        vdir = f"{base}/venvs/{venv_name}"
        site = ["--system-site-packages"] if system_site_packages else []
        # The device's own pip (>= 22.3 has --python) fills a venv made without pip: seconds instead of the
        # ensurepip bootstrap; otherwise the venv gets its own pip first.
        if _version_tuple(info.get("pip")) >= (22, 3):
            make = [remote_command(python, "-m", "venv", "--without-pip", *site, vdir)]
            pip = [python, "-m", "pip", "--python", f"{vdir}/bin/python"]
        else:
            make = [remote_command(python, "-m", "venv", *site, vdir)]
            pip = [f"{vdir}/bin/python", "-m", "pip"]
        pip += ["install", "--disable-pip-version-check", "-q"]
        if offline:
            pip += ["--no-index", "--find-links", f"{base}/wheels"]
        pip.append(f"{base}/wheels/{wheels[0][0]}")
        script = " && ".join([
            remote_command("rm", "-rf", vdir),
            *make,
            remote_command(*pip),
            remote_command(f"{vdir}/bin/python", "-c", "import edge_sdk, numpy; print(edge_sdk.__version__)"),
            remote_command("touch", f"{vdir}/.edge-sdk-complete"),
        ])
        proc = conn.run(script, timeout=install_timeout, check=False, what="installing the runtime")
        if proc.returncode != 0:
            hint = ""
            if "ensurepip" in proc.stdout + proc.stderr or "venv" in proc.stderr[:200]:
                hint = " (on Debian/Raspberry Pi OS: sudo apt-get install python3-venv)"
            elif not offline and ("Could not find" in proc.stderr or "connection" in proc.stderr.lower()):
                hint = " (no index reachable from the device? try --offline)"
            err = (proc.stderr or proc.stdout).strip().splitlines()
            raise DeviceError(f"{label}: installing the runtime failed{hint}: {' | '.join(err[-4:])}")

    # --- optional C backend
    c_backend = None
    if build_c:
        if ships_c_library(info, ship_c):
            c_backend = _ship_c_library(conn, info, base, venv_name, python, arch)
        else:
            c_backend = _build_c_backend(conn, info, base, venv_name, python, runtime_new, whl)
    if c_backend and c_backend.get("note"):
        result.notes.append(c_backend["note"])

    if runtime_new or info.get("venv_target") != f"{base}/venvs/{venv_name}":
        conn.run_python(_SWITCH, base, venv_name, str(KEEP_VENVS), python=python, what="switching the runtime")

    # --- the model
    log.stage(f"{label}: copying {model.name} ({size} bytes)")
    final = f"{base}/models/{model.name}"
    tmp = f"{base}/models/.{model.name}.{os.getpid()}-{threading.get_ident() % 100000}.part"
    conn.upload(model, tmp, python=python, sha256=digest, timeout=copy_timeout)
    choice = _runtime_choice(conn, base, venv_name, tmp, c_backend)
    manifest = {
        "model": {"name": model.name, "path": final, "sha256": digest, "size": size},
        "edge_sdk_version": __version__,
        "wheel": {"name": whl.name, "sha256": whl_sha, "path": f"{base}/wheels/{whl_sha[:16]}/{whl.name}"},
        "deployed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runtime": {"venv": f"{base}/venv", "venv_dir": f"{base}/venvs/{venv_name}",
                    "python": info["python"], "offline": bool(offline),
                    "system_site_packages": bool(system_site_packages)},
        "device": {"machine": info["machine"], "arch": arch, "glibc": info.get("glibc"), "home": info["home"]},
        "profile": getattr(profile, "name", None),
        "c_backend": c_backend,
        "runtime_choice": choice,
        "deployed_from": {"host": _local_hostname(), "source": str(SOURCE_ROOT)},
    }
    conn.run_python(_COMMIT, tmp, final, f"{base}/manifest.json", json.dumps(manifest, indent=2),
                    python=python, what="installing the model")
    result.ok, result.manifest = True, manifest
    result.seconds = time.monotonic() - start
    log.stage(f"{label}: deployed {model.name} ({result.seconds:.1f} s)")
    return result


SHIP_C = ("auto", "always", "never")
# The device's `uname -m` (normalized) -> firmware_c's make target for it and the compiler that target uses
# (firmware_c/cross.mk); the machine's own arch builds `make host` with its cc.
CROSS_TARGETS = {"aarch64": ("aarch64", "aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu libc6-dev-arm64-cross"),
                 "armv7l": ("armhf", "arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf libc6-dev-armhf-cross")}


def ships_c_library(info: dict, ship_c: str = "auto") -> bool:
    """Whether the deploy builds the C library here and ships it (else the device builds it): "always", or
    "auto" on a device whose probe found no C compiler or no make."""
    return ship_c == "always" or (ship_c == "auto" and not (info.get("cc") and info.get("make")))


def c_library_for(arch: str) -> dict:
    """The C host library built here for a device of ``arch`` (``uname -m``: aarch64, armv7l, x86_64):
    {"path", "arch", "make_target", "compiler", "sha256"}. The machine's own arch: the host build
    (c_build.build()); another: firmware_c's cross target (``make aarch64`` / ``make armhf``), in the same
    tree the host build uses. DeviceError when the compiler is missing here or the build fails."""
    from edge_sdk.runtime import c_build

    arch = normalize_arch(arch)
    here = normalize_arch(os.uname().machine)
    if arch == here:
        try:
            path = c_build.build()
        except BuildError as exc:
            raise DeviceError(f"building the C library for {arch} here failed: {' '.join(str(exc).split())[:400]}") \
                from None
        return {"path": str(path), "arch": arch, "make_target": "host", "compiler": os.environ.get("CC", "gcc"),
                "sha256": sha256_file(path)}
    if arch not in CROSS_TARGETS:
        raise DeviceError(f"no cross build of the C library for {arch} (this machine is {here}; cross builds: "
                          f"{', '.join(CROSS_TARGETS)})")
    target, cc, packages = CROSS_TARGETS[arch]
    missing = [t for t in (cc, "make") if shutil.which(t) is None]
    if missing:
        raise DeviceError(f"cross-building the C library for {arch} needs {' and '.join(missing)} here "
                          f"(apt-get install {packages} make)")
    try:
        tree = resources.ensure_host_tree(c_build.FIRMWARE)
    except OSError as exc:
        raise DeviceError(f"cannot copy the C runtime's sources for the {arch} build: {exc}") from None
    lock = tree / "build" / target if tree == c_build.FIRMWARE else tree
    lock.parent.mkdir(parents=True, exist_ok=True)
    with resources.build_lock(lock):
        proc = subprocess.run(["make", "-s", "-C", str(tree), target, f"PYTHON={sys.executable}"],
                              capture_output=True, text=True, timeout=T.DEPLOY_C_BUILD_TIMEOUT, check=False)
    path = tree / "build" / target / "libedge.so"
    if proc.returncode != 0 or not path.is_file():
        err = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise DeviceError(f"cross-building the C library for {arch} (make {target}) failed: {err}")
    return {"path": str(path), "arch": arch, "make_target": target, "compiler": cc, "sha256": sha256_file(path)}


# argv: none; prints the path where the C binding looks for a shipped library (in this venv's edge_sdk)
_PREBUILT_PATH = "from edge_sdk.runtime import c_build; print(c_build.PREBUILT)"
# argv: none; loads the shipped library the way the C binding does and prints its path and kernel count
_CHECK_PREBUILT = ("from edge_sdk.runtime import c_build as b, c_interpreter as c; "
                   "assert b.library_path() == b.PREBUILT, 'not used: ' + str(b.library_path()); c.library(); "
                   "print(b.PREBUILT, len(c.c_supported_ops()))")


def _ship_c_library(conn: SSHConnection, info: dict, base: str, venv_name: str, python: str, arch: str) -> dict:
    """Build the C library here for the device's CPU (``c_library_for``), copy it into the venv where
    the C binding finds it (temporary name, sha256 checked, renamed), and check it loads there. Optional: a
    failure is a note (the shipped file is removed again), never fatal."""
    label = conn.target.label
    vpy = f"{base}/venvs/{venv_name}/bin/python"
    no_cc = not (info.get("cc") and info.get("make"))
    why = "the device has no compiler" if no_cc else "--ship-c-library"
    try:
        log.stage(f"{label}: building the C library for {arch} here ({why})")
        lib = c_library_for(arch)
    except DeviceError as exc:
        return {"built": False, "shipped": False, "note": f"C backend: {exc} (optional; skipped)"}
    proc = conn.run(remote_command(vpy, "-c", _PREBUILT_PATH), timeout=T.DEPLOY_STATUS_TIMEOUT, check=False,
                    what="locating the venv's edge_sdk")
    lines = (proc.stdout or "").strip().splitlines()
    if proc.returncode != 0 or not lines:
        err = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])
        return {"built": False, "shipped": False, "note": f"C backend: the device's edge_sdk has no place for a "
                                                          f"shipped library (optional; skipped): {err}"}
    dest = lines[-1].strip()
    folder = os.path.dirname(dest)
    log.stage(f"{label}: copying the C library ({lib['make_target']}, {Path(lib['path']).stat().st_size} bytes)")
    conn.run_python(PREPARE_SCRIPT, folder, ".", python=python, what="preparing folders")
    tmp = f"{folder}/.libedge.so.{os.getpid()}-{threading.get_ident() % 100000}.part"
    conn.upload(lib["path"], tmp, python=python, sha256=lib["sha256"])
    conn.run_python(RENAME_SCRIPT, tmp, dest, python=python, what="installing the C library")
    check = conn.run(remote_command(vpy, "-c", _CHECK_PREBUILT), timeout=T.DEPLOY_STATUS_TIMEOUT, check=False,
                     what="loading the C library")
    words = (check.stdout or "").strip().split()
    record = {"shipped": True, "arch": lib["arch"], "make_target": lib["make_target"], "compiler": lib["compiler"],
              "sha256": lib["sha256"], "library": dest, "venv": f"{base}/venvs/{venv_name}",
              "built_on": _local_hostname()}
    if check.returncode != 0 or len(words) != 2 or words[0] != dest:
        conn.run(remote_command("rm", "-f", dest), timeout=T.DEPLOY_STATUS_TIMEOUT, check=False,
                 what="removing the C library")
        err = " | ".join((check.stderr or check.stdout).strip().splitlines()[-2:])
        return {**record, "built": False, "shipped": False,
                "note": f"C backend: the library built for {lib['arch']} does not load on the device (removed; "
                        f"optional): {err}"}
    return {**record, "built": True, "kernels": int(words[1]), "note": None}


# argv: model path; the device's choice of runtime for it (edge_sdk.tools.run_backend), as JSON
_CHOOSE = ("import json, sys; from edge_sdk.tools.run_backend import choose_runtime; "
           "print(json.dumps(choose_runtime(open(sys.argv[1], 'rb').read()).to_dict()))")


def _runtime_choice(conn: SSHConnection, base: str, venv_name: str, model_path: str, c_backend: dict | None) -> dict:
    """Which runtime `edge run/bench/serve` use for the model on the device ({runtime, runtime_reason}): asked
    of the device's runtime when it has a C library; else the Python interpreter, saying why."""
    if not c_backend or not c_backend.get("built"):
        why = (c_backend or {}).get("note") or "C backend: not deployed (--no-c-backend)"
        return {"runtime": "python", "runtime_reason": f"no C library on the device ({why})"}
    proc = conn.run(remote_command(f"{base}/venvs/{venv_name}/bin/python", "-c", _CHOOSE, model_path),
                    timeout=T.DEPLOY_STATUS_TIMEOUT, check=False, what="choosing the runtime")
    try:
        return parse_json(proc.stdout, "choosing the runtime", conn.target.label) if proc.returncode == 0 else \
            {"runtime": "python", "runtime_reason": "the device could not choose: " +
             " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])}
    except DeviceError as exc:
        return {"runtime": "python", "runtime_reason": str(exc)}


def _local_hostname() -> str:
    import socket

    return socket.gethostname()


def wheel_bundles_firmware(wheel: str | Path) -> bool:
    """Whether an edge-sdk wheel carries the C runtime's sources (``edge_sdk/_bundled/firmware_c``)."""
    import zipfile

    try:
        with zipfile.ZipFile(wheel) as zf:
            return f"{resources.BUNDLE_ARC}/firmware_c/Makefile" in zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


# argv: none; builds the installed runtime's C host library (out of tree, in the device's cache) and prints
# its path as the last line
_BUILD_C = "from edge_sdk.runtime import c_build; print(c_build.build())"


def _build_c_backend(conn: SSHConnection, info: dict, base: str, venv_name: str, python: str, fresh: bool,
                     wheel: str | Path | None = None) -> dict:
    """Build the C host library for the new venv: with ``edge_sdk.runtime.c_build.build()`` in that venv when the
    wheel carries firmware_c (it builds in the device's cache folder), else by shipping firmware_c
    (everything but build/) next to edge_sdk in the venv's site-packages and running ``make host`` there.
    Optional: never fatal."""
    if not info.get("cc") or not info.get("make"):
        missing = " and ".join(t for t in ("cc", "make") if not info.get(t))
        return {"built": False, "note": f"C backend: no {missing} on the device (apt-get install gcc make); skipped"}
    vdir = f"{base}/venvs/{venv_name}"
    if wheel is not None and wheel_bundles_firmware(wheel):
        if not fresh:
            previous = (info.get("manifest") or {}).get("c_backend") or {}
            if previous.get("built") and previous.get("venv") == vdir:
                return previous
            return {"built": False,
                    "note": "C backend: runtime reused without a C build; deploy a new runtime to build it"}
        log.stage(f"{conn.target.label}: building the C backend on the device (c_build.build)")
        proc = conn.run(remote_command("env", f"CC={info['cc']}", f"{vdir}/bin/python", "-c", _BUILD_C),
                        timeout=T.DEPLOY_C_BUILD_TIMEOUT, check=False, what="building the C backend")
        lines = (proc.stdout or "").strip().splitlines()
        if proc.returncode != 0 or not lines:
            err = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            return {"built": False, "note": f"C backend: the build on the device failed (optional; skipped): {err}"}
        return {"built": True, "library": lines[-1].strip(), "venv": vdir, "note": None}
    # a wheel without the bundle: ship this checkout's firmware_c into site-packages
    src = SOURCE_ROOT / "firmware_c"
    if not (src / "Makefile").is_file():
        return {"built": False, "note": "C backend: no firmware_c/Makefile in this checkout; skipped"}
    py = ".".join(info["python"].split(".")[:2])
    site = f"{base}/venvs/{venv_name}/lib/python{py}/site-packages"
    lib = f"{site}/firmware_c/build/host/libedge.so"
    if not fresh:
        previous = (info.get("manifest") or {}).get("c_backend") or {}
        if previous.get("library") == lib:
            return previous
        return {"built": False, "note": "C backend: runtime reused without a C build; deploy a new runtime to build it"}
    log.stage(f"{conn.target.label}: building the C backend on the device (make host)")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for p in sorted(src.iterdir()):
            if p.name not in ("build", "__pycache__"):
                tar.add(p, arcname=f"firmware_c/{p.name}", filter=lambda t: None if "__pycache__" in t.name else t)
    with tempfile.NamedTemporaryFile(suffix=".tar.gz", delete=False) as f:
        f.write(buf.getvalue())
    remote_tar = f"{base}/.c-src.{os.getpid()}.part"
    try:
        conn.upload(f.name, remote_tar, python=python)
    finally:
        os.unlink(f.name)
    vpy = f"{base}/venvs/{venv_name}/bin/python"
    script = " && ".join([
        remote_command("rm", "-rf", f"{site}/firmware_c"),
        remote_command("tar", "-xzf", remote_tar, "-C", site),
        remote_command("make", "-s", "-C", f"{site}/firmware_c", "host", f"PYTHON={vpy}", f"CC={info['cc']}"),
    ])
    proc = conn.run(f"{script}; rc=$?; {remote_command('rm', '-f', remote_tar)}; exit $rc", timeout=T.DEPLOY_C_BUILD_TIMEOUT,
                    check=False, what="building the C backend")
    if proc.returncode != 0:
        err = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        return {"built": False, "note": f"C backend: the build on the device failed (optional; skipped): {err}"}
    return {"built": True, "library": lib, "note": None}


def status(host=None, *, target=None, identity=None, accept_new_host_key=False, remote_dir: str = REMOTE_DIR,
           python: str | None = None,
           connect_timeout: float = T.SSH_CONNECT_TIMEOUT) -> dict | None:
    """The device's manifest (None when nothing is deployed), with ``model_ok`` (the model file's sha256
    still matches) and ``runtime_ok`` (the venv imports edge_sdk at the recorded version) added."""
    require_openssh()
    profile = _resolve_profile(target)
    conn = connection_for(host, identity=identity, accept_new_host_key=accept_new_host_key,
                          connect_timeout=connect_timeout, profile=profile)
    python = python or (getattr(profile, "flash", {}) or {}).get("python") or "python3"
    with conn.session():
        out = conn.run_python(_STATUS, remote_dir, python=python, what="reading the manifest",
                              timeout=T.DEPLOY_STATUS_TIMEOUT).stdout
    m = parse_json(out, "status", conn.target.label)
    if m is not None:
        m["host"] = conn.target.label
    return m


def deploy_fleet(model, hosts, *, max_workers: int = 8, **kwargs) -> list[DeployResult]:
    """``deploy`` to every host in parallel (at most ``max_workers`` at once). One host failing does not
    stop the others: its result has ``ok`` False and the error. Results are in the order of ``hosts``."""
    from edge_sdk.model.input_shapes import shaped_model_path

    targets = [h if isinstance(h, SSHTarget) else SSHTarget.parse(str(h)) for h in hosts]
    model = shaped_model_path(model, kwargs.pop("input_shapes", None))  # once, before the threads
    if "wheel" not in kwargs or kwargs["wheel"] is None:
        kwargs["wheel"] = build_wheel()  # once, before the threads

    def one(t: SSHTarget) -> DeployResult:
        t0 = time.monotonic()
        try:
            return deploy(model, t, **kwargs)
        except (EdgeError, OSError) as exc:
            log.warning(f"{t.label}: {exc}")
            return DeployResult(t, ok=False, error=str(exc), seconds=time.monotonic() - t0)

    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(targets)))) as pool:
        return list(pool.map(one, targets))


def format_results(results: list[DeployResult]) -> str:
    """The per-host result table of a fleet deploy."""
    rows = [("host", "result", "seconds", "model sha256", "detail")]
    for r in results:
        sha = (r.manifest or {}).get("model", {}).get("sha256", "")[:12]
        detail = r.error if r.error else "; ".join(r.notes)
        rows.append((r.target.label, "ok" if r.ok else "FAILED", f"{r.seconds:.1f}", sha or "-", detail or ""))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:4], widths)) + "  " + row[4] for row in rows]
    failed = sum(not r.ok for r in results)
    lines.append(f"{len(results) - failed} of {len(results)} hosts deployed" + (f", {failed} failed" if failed else ""))
    return "\n".join(line.rstrip() for line in lines) + "\n"


def format_status(manifest: dict | None, host: str = "") -> str:
    if manifest is None:
        return f"{host}: nothing deployed\n"
    m, rt = manifest.get("model", {}), manifest.get("runtime", {})
    c = manifest.get("c_backend") or {}
    lines = [
        f"host:        {manifest.get('host', host)}",
        f"model:       {m.get('path')} ({m.get('size')} bytes) {'ok' if manifest.get('model_ok') else 'MISSING OR CHANGED'}",
        f"sha256:      {m.get('sha256')}",
        f"edge-sdk:    {manifest.get('edge_sdk_version')} ({(manifest.get('wheel') or {}).get('name')})",
        (f"runtime:     {rt.get('venv')} -> {rt.get('venv_dir')} (Python {rt.get('python')}) "
         f"{'ok' if manifest.get('runtime_ok') else 'BROKEN'}"),
        f"device:      {(manifest.get('device') or {}).get('arch')}",
        f"profile:     {manifest.get('profile') or '-'}",
        f"C backend:   {'built' if c.get('built') else 'not built'}"
        + (f" (shipped: built here for {c.get('arch')} with {c.get('compiler')})" if c.get("shipped") else ""),
        *([f"runs on:     {rc.get('runtime')} ({rc.get('runtime_reason')})"] if (rc := manifest.get("runtime_choice"))
          else []),
        f"deployed at: {manifest.get('deployed_at')}",
    ]
    return "\n".join(lines) + "\n"


__all__ = ["DeployResult", "build_wheel", "c_library_for", "deploy", "deploy_fleet", "download_dependencies", "format_results",
           "format_status", "read_hosts", "sha256_file", "status"]
