"""Packaging: the wheel carries device_profiles/ and firmware_c/ (sources only) as edge_sdk/_bundled/, and an
installed copy works without the checkout: `edge targets`, `edge check`, the C backend (built out of tree in
the cache) and `edge profile` on QEMU (which flashes) from a fresh venv that cannot see this tree.

The quick tests check edge_sdk.resources and that setup.py's build_py hook bundles exactly what deploy's
direct wheel writer bundles; the slow one builds a wheel, installs it and runs the CLI from the venv."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from edge_sdk import resources
from edge_sdk.tools.deploy import _source_files, build_wheel
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.targets.profiles import list_profiles

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = resources.BUNDLE_ARC
# files a C host build and a firmware build cannot do without
FIRMWARE_NEEDS = ("Makefile", "cross.mk", "src/edge.c", "include/edge.h", "include/edge_ops.def", "host/edge_host.c",
                  "host/edge_run.c", "tools/gen_ops.py", "app/Makefile", "app/main.c", "boards/board.mk",
                  "cpu/cortex-m4.mk")
BUILD_OUTPUT_SUFFIXES = (".o", ".a", ".so", ".elf", ".map", ".pyc")


def _fake_tree(base: Path) -> Path:
    """A firmware_c-like tree with sources and the kinds of build output a bundle must leave out."""
    fw = base / "firmware_c"
    for rel, text in {"Makefile": "all:\n", "src/edge.c": "int x;\n", "src/kernels/add.c": "int y;\n",
                      "tools/gen_ops.py": "# gen\n", "build/host/libedge.so": "ELF", "build/x.o": "o",
                      "src/kernels/add.o": "o", "tools/__pycache__/gen_ops.cpython-311.pyc": "pyc",
                      ".gitignore": "build/\n", "boards/qemu/fw.elf": "ELF"}.items():
        p = fw / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (base / "device_profiles").mkdir()
    (base / "device_profiles" / "a.toml").write_text("name = 'a'\n")
    (base / "device_profiles" / "notes.txt").write_text("not a profile\n")
    return fw


# ----------------------------------------------------------------------------------------------- resources
def test_checkout_locations():
    """In this checkout every location is the top-level folder, and the host build stays in place."""
    assert not resources.BUNDLE_DIR.exists()
    assert resources.firmware_dir() == ROOT / "firmware_c"
    assert resources.data_dir("device_profiles") == ROOT / "device_profiles"
    assert resources.builds_in_place() and resources.host_tree() == ROOT / "firmware_c"
    from edge_sdk.runtime import c_build
    from edge_sdk.tools import flash

    assert c_build.LIBRARY == ROOT / "firmware_c" / "build" / "host" / "libedge.so"
    assert flash.APP == ROOT / "firmware_c" / "app"


def test_profile_dir_and_cache_dir_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("EDGE_PROFILE_DIR", str(tmp_path / "profiles"))
    assert resources.profiles_dir() == tmp_path / "profiles"
    monkeypatch.delenv("EDGE_PROFILE_DIR")
    assert resources.profiles_dir() == ROOT / "device_profiles"
    monkeypatch.setenv("EDGE_CACHE_DIR", str(tmp_path / "c1"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert resources.cache_dir() == tmp_path / "c1"
    monkeypatch.delenv("EDGE_CACHE_DIR")
    assert resources.cache_dir() == tmp_path / "xdg" / "edge-sdk"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert resources.cache_dir() == Path.home() / ".cache" / "edge-sdk"


def test_bundle_files_leave_build_outputs_out(tmp_path):
    _fake_tree(tmp_path)
    rels = sorted(rel for _, rel in resources.bundle_files(tmp_path))
    assert rels == ["device_profiles/a.toml", "firmware_c/Makefile", "firmware_c/src/edge.c",
                    "firmware_c/src/kernels/add.c", "firmware_c/tools/gen_ops.py"]


def test_bundled_tree_builds_in_a_cache_copy(monkeypatch, tmp_path):
    """A bundled (installed) firmware tree is never built in place: host_tree is a copy in the cache, keyed
    by the sources (an edited source gives another copy), made once and without build outputs."""
    fw = _fake_tree(tmp_path / "pkg" / "_bundled")
    monkeypatch.setattr(resources, "BUNDLE_DIR", (tmp_path / "pkg" / "_bundled").resolve())
    monkeypatch.setenv("EDGE_CACHE_DIR", str(tmp_path / "cache"))
    assert resources.data_dir("firmware_c") == fw.resolve()
    assert not resources.builds_in_place(fw)
    dest = resources.host_tree(fw)
    assert dest.parent.parent == tmp_path / "cache" / "c-runtime" and dest.name == "firmware_c"
    assert resources.ensure_host_tree(fw) == dest
    copied = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert copied == ["Makefile", "src/edge.c", "src/kernels/add.c", "tools/gen_ops.py"]
    assert resources.ensure_host_tree(fw) == dest  # already there: reused
    (fw / "src" / "edge.c").write_text("int x = 1;\n")
    assert resources.host_tree(fw) != dest


# ----------------------------------------------------------------------------------------------- object cache
def _mini_tree(base: Path, header: str = "#define SCALE 3\n") -> Path:
    """A firmware-like tree: include/scale.h and src/a.c including it and naming its own file (__FILE__)."""
    (base / "include").mkdir(parents=True)
    (base / "src").mkdir()
    (base / "include" / "scale.h").write_text(header)
    (base / "src" / "a.c").write_text('#include "scale.h"\nconst char *where = __FILE__;\n'
                                      "int scaled(int x) { return x * SCALE; }\n")
    return base


@pytest.mark.skipif(shutil.which(os.environ.get("CC", "gcc")) is None, reason="no C compiler")
def test_object_cache_key_is_the_same_for_a_copy_of_the_sources_and_follows_their_headers(monkeypatch, tmp_path):
    """The installed copy of the sources (site-packages) and the checkout share `edge check`'s objects: the key
    (and the text compiled) leaves the folder out; a header's change still changes it; a compile error names
    the reader's own path."""
    from edge_sdk.errors import BuildError
    from edge_sdk.runtime import c_build

    cc = os.environ.get("CC", "gcc")
    monkeypatch.setenv("EDGE_CACHE_DIR", str(tmp_path / "cache"))
    one, two = _mini_tree(tmp_path / "checkout" / "firmware_c"), _mini_tree(tmp_path / "site" / "x" / "firmware_c")

    def flags(tree):
        return ("-std=c99", "-O1", f"-I{tree / 'include'}", f"-I{tree / 'src'}")

    key_one, text_one = c_build.object_key(cc, flags(one), one / "src" / "a.c")
    key_two, text_two = c_build.object_key(cc, flags(two), two / "src" / "a.c")
    assert key_one == key_two and text_one == text_two
    assert str(tmp_path).encode() not in text_one and b'"@0/src/a.c"' in text_one  # line markers and __FILE__
    [obj_one] = c_build.compile_objects(cc, flags(one), [one / "src" / "a.c"], tmp_path / "out1")
    [obj_two] = c_build.compile_objects(cc, flags(two), [two / "src" / "a.c"], tmp_path / "out2")
    assert obj_one.stat().st_ino == obj_two.stat().st_ino  # one stored object, linked into both folders

    (two / "include" / "scale.h").write_text("#define SCALE 4\n")
    assert c_build.object_key(cc, flags(two), two / "src" / "a.c")[0] != key_one
    (two / "include" / "scale.h").write_text("#define SCALE (\n")
    with pytest.raises(BuildError, match=re.escape(str(two / "src" / "a.c"))):
        c_build.compile_objects(cc, flags(two), [two / "src" / "a.c"], tmp_path / "out3")


@pytest.mark.skipif(shutil.which(os.environ.get("CC", "gcc")) is None, reason="no C compiler")
def test_object_cache_compiles_an_object_once_when_several_ask_at_once(monkeypatch, tmp_path):
    """Two xdist workers (here: four threads, each its own lock descriptor) that need the same object compile it
    once: the others wait on its lock file and link the stored one."""
    from concurrent.futures import ThreadPoolExecutor

    from edge_sdk.runtime import c_build

    cc = os.environ.get("CC", "gcc")
    monkeypatch.setenv("EDGE_CACHE_DIR", str(tmp_path / "cache"))
    tree = _mini_tree(tmp_path / "firmware_c")
    compiles = []
    real = c_build._compile_into

    def counted(*args):
        compiles.append(args[2])
        real(*args)

    monkeypatch.setattr(c_build, "_compile_into", counted)
    flags = ("-std=c99", f"-I{tree / 'include'}")
    with ThreadPoolExecutor(max_workers=4) as pool:
        outs = list(pool.map(lambda k: c_build.compile_objects(cc, flags, [tree / "src" / "a.c"], tmp_path / f"o{k}"),
                             range(4)))
    assert len(compiles) == 1
    assert len({o.stat().st_ino for [o] in outs}) == 1


def test_setup_py_hook_bundles_what_the_direct_writer_bundles(tmp_path):
    """setup.py's build_py (the setuptools path: pip wheel / pip install .) puts the same files under
    edge_sdk/_bundled/ as deploy's direct wheel writer (the path without a wheel-capable setuptools)."""
    src = tmp_path / "src"
    for f in _source_files(ROOT):
        dst = src / f.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, dst)
    assert not (src / "firmware_c" / "build").exists()
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path / "lib")],
                          cwd=src, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    bundled = tmp_path / "lib" / "edge_sdk" / "_bundled"
    got = sorted(p.relative_to(bundled).as_posix() for p in bundled.rglob("*") if p.is_file())
    assert got == sorted(rel for _, rel in resources.bundle_files(ROOT))
    assert (tmp_path / "lib" / "edge_sdk" / "resources.py").is_file()  # the ordinary package is there too


# ----------------------------------------------------------------------------------------------- end to end
def _model(path: Path) -> Path:
    """An int8 FULLY_CONNECTED + RELU (an op both runtimes and the Cortex-M profile have)."""
    rng = np.random.default_rng(0)
    g = GraphBuilder()
    x = g.input("x", (1, 8), "INT8", scale=0.05, zero_point=-3)
    w = g.constant("w", rng.integers(-127, 128, (4, 8)).astype(np.int8), scale=0.01, zero_point=0)
    b = g.constant("b", rng.integers(-500, 500, 4).astype(np.int32), scale=0.0005, zero_point=0)
    y = g.tensor("y", (1, 4), "INT8", scale=0.1, zero_point=2)
    g.op("FULLY_CONNECTED", [x, w, b], [y], fused_activation_function="RELU")
    g.output(y)
    write_model(g.build(), path)
    return path


_RUN_C = r"""
import json, sys
import numpy as np
import edge_sdk
from edge_sdk import Interpreter, resources
from edge_sdk.runtime import c_build
x = np.arange(-4, 4, dtype=np.int8).reshape(1, 8)
outs = {}
for backend in ("python", "c"):
    it = Interpreter(model_path=sys.argv[1], backend=backend)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    outs[backend] = it.get_tensor(it.get_output_details()[0]["index"]).tolist()
print(json.dumps({"outs": outs, "library": str(c_build.LIBRARY), "package": edge_sdk.__file__,
                  "firmware": str(resources.firmware_dir()), "sys_path": sys.path}))
"""


@pytest.mark.slow
def test_installed_wheel_works_without_the_checkout(tmp_path):
    # the wheel: pip wheel with the setuptools hook when setuptools can build wheels offline here, else deploy's
    # direct writer (the same file selection: test_setup_py_hook_bundles_what_the_direct_writer_bundles); from
    # deploy's wheel cache (keyed by a hash of the sources), so the session builds it once for this test and
    # tests/test_deploy.py
    wheel = build_wheel(ROOT)
    names = zipfile.ZipFile(wheel).namelist()
    bundled = [n for n in names if n.startswith(BUNDLE + "/")]
    profiles = sorted(p.name for p in (ROOT / "device_profiles").glob("*.toml"))
    assert sorted(n.split("/")[-1] for n in bundled if n.startswith(f"{BUNDLE}/device_profiles/")) == profiles
    for rel in FIRMWARE_NEEDS:
        assert f"{BUNDLE}/firmware_c/{rel}" in names, rel
    kernels = sorted(p.name for p in (ROOT / "firmware_c" / "src" / "kernels").glob("*.c"))
    assert kernels and all(f"{BUNDLE}/firmware_c/src/kernels/{k}" in names for k in kernels)
    bad = [n for n in bundled if "/build/" in n or "__pycache__" in n or n.endswith(BUILD_OUTPUT_SUFFIXES)]
    assert not bad, bad[:5]

    # a fresh venv (system site-packages for numpy; the test interpreter's site-packages for the rest of the
    # dependencies, added as a plain path so its editable-install hook is NOT run), the wheel without deps
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    vpy = venv / "bin" / "python"
    site = Path(subprocess.run([str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True, timeout=60).stdout.strip())
    import flatbuffers

    (site / "_edge_test_deps.pth").write_text(str(Path(flatbuffers.__file__).resolve().parent.parent) + "\n")
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(vpy), "install", "--no-deps", "--no-index",
                          "--disable-pip-version-check", "-q", str(wheel)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert pip.returncode == 0, pip.stderr[-2000:]

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    model = _model(run_dir / "fc.tflite")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "EDGE_PROFILE_DIR", "VIRTUAL_ENV")}
    # a cache folder of its own (the host library is built there, asserted below) whose object cache is the
    # suite's: `edge check`'s runner and stack objects, keyed without the sources' folder
    # (c_build.object_key), are the ones the checkout's tests compiled (or compile later), not a second build
    # of ~100 files (300 s under load)
    shared_objects = resources.cache_dir() / "objects"
    shared_objects.mkdir(parents=True, exist_ok=True)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "objects").symlink_to(shared_objects, target_is_directory=True)
    env.update(EDGE_CACHE_DIR=str(tmp_path / "cache"), EDGE_STATE_DIR=str(tmp_path / "state"),
               PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    edge = str(venv / "bin" / "edge")

    def run(*argv, timeout=300):
        return subprocess.run([str(a) for a in argv], cwd=run_dir, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    r = run(vpy, "-c", "import edge_sdk, sys; print(edge_sdk.__file__); print(sys.path)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith(str(site)), r.stdout
    assert str(ROOT) not in r.stdout.splitlines()[1].replace(str(ROOT / ".venv"), "")  # the checkout is not on the path

    r = run(edge, "targets", "--json")
    assert r.returncode == 0, r.stderr
    assert sorted(t["name"] for t in json.loads(r.stdout)) == list_profiles()

    # the checkout's check of the model first (compiles what the suite's cache lacks), then the installed one:
    # every object of the installed copy's runner and stack build is a link to one the checkout's used
    from edge_sdk.targets import c_check, c_footprint
    from edge_sdk.targets.check import check_model

    assert check_model(model, "qemu-mps2-an386").verdict == "runs"
    r = run(edge, "check", model, "--target", "qemu-mps2-an386", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["verdict"] == "runs" and report["problems"] == [], report
    checkout_objects = [*(o for exe in c_check._runners.values() for o in (exe.parent / "obj").glob("*.o")),
                        *(o for folder in c_footprint._stack_folders.values() for o in folder.glob("*.o"))]
    installed_objects = sorted((tmp_path / "cache" / "check").glob("**/*.o"))
    if c_check._runners:  # this machine builds a C check runner: both checks compiled through the object cache
        assert installed_objects and checkout_objects
    if installed_objects and installed_objects[0].stat().st_dev == shared_objects.stat().st_dev:  # linked, not copied
        shared = {o.stat().st_ino for o in checkout_objects}
        assert not [o for o in installed_objects if o.stat().st_ino not in shared], "compiled again, not shared"

    installed_fw = site / "edge_sdk" / "_bundled" / "firmware_c"
    if shutil.which("make") and shutil.which(os.environ.get("CC", "gcc")):
        r = run(vpy, "-c", _RUN_C, model)
        assert r.returncode == 0, r.stderr[-3000:]
        out = json.loads(r.stdout)
        assert out["outs"]["c"] == out["outs"]["python"]
        assert out["package"].startswith(str(site)) and out["firmware"] == str(installed_fw)
        assert out["library"].startswith(str(tmp_path / "cache" / "c-runtime")) and Path(out["library"]).is_file()
    assert not (installed_fw / "build").exists()  # nothing was built inside site-packages

    if shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm"):
        # `edge profile` flashes QEMU from the installed firmware sources and checks the device's outputs
        try:
            r = run(edge, "profile", model, "--target", "qemu-mps2-an386", "--runs", "2", "--json")
            assert r.returncode == 0, r.stderr[-3000:]
            prof = json.loads(r.stdout)
            assert prof["validated"] and not prof["mismatches"], prof
        finally:
            run(edge, "board", "stop", "--all", timeout=60)  # only this test's boards: its own EDGE_STATE_DIR
        assert not (installed_fw / "build").exists() and not (installed_fw / "app" / "build").exists()
