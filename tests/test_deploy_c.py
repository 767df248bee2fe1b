"""`edge deploy` ships the C library built for the board's CPU (issue 16 point 5): cross-built here for the
device's `uname -m` (aarch64, armv7l) or the host build for the machine's own arch, copied into the new venv
where the C binding (edge_sdk.runtime.c_interpreter) loads it, checked to load there, recorded in the manifest; and the deploy says which runtime
the device runs the model with. The aarch64 / armhf libraries are loaded under qemu-user; the whole ship step
runs against a real sshd on 127.0.0.1 (tests/sshd.py), an x86-64 "device"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.device.ssh import remote_command
from edge_sdk.errors import DeviceError
from edge_sdk.tools.deploy import CROSS_TARGETS, normalize_arch, c_library_for, deploy, ships_c_library
from tests.sshd import lab, ssh_cache  # noqa: F401  (fixtures)
from tests.test_deploy import device_base, edge, sha, tiny_model

# ELF e_machine values (the System V ABI's registry)
EM = {"aarch64": 183, "armv7l": 40, "x86_64": 62}

# Loads a libedge.so the way a device would (dlopen), counts its kernels: run under qemu-user for a cross build.
LOADER = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
int main(int argc, char **argv) {
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    int32_t (*kernels)(int32_t, int32_t *, int32_t *, const char **) =
        (int32_t (*)(int32_t, int32_t *, int32_t *, const char **))dlsym(lib, "edge_host_kernels");
    size_t (*size)(void) = (size_t (*)(void))dlsym(lib, "edge_host_interp_size");
    if (!kernels || !size) { fprintf(stderr, "missing symbols\n"); return 1; }
    int32_t k = 0, op, ver; const char *custom;
    while (kernels(k, &op, &ver, &custom) == 0) k++;
    printf("kernels %d interp %lu\n", (int)k, (unsigned long)size());
    return 0;
}
"""
QEMU = {"aarch64": ("qemu-aarch64", "-cpu", "cortex-a53", "-L", "/usr/aarch64-linux-gnu"),
        "armv7l": ("qemu-arm", "-cpu", "cortex-a7", "-L", "/usr/arm-linux-gnueabihf")}


def _elf(path) -> tuple[int, int, int]:
    """(EI_CLASS: 1 = 32-bit, 2 = 64-bit; e_machine; e_flags) of an ELF file."""
    head = Path(path).read_bytes()[:52]
    assert head[:4] == b"\x7fELF", path
    cls = head[4]
    machine = int.from_bytes(head[18:20], "little")
    at = 36 if cls == 1 else 48  # e_flags: after e_entry, e_phoff, e_shoff (4 or 8 bytes each)
    return cls, machine, int.from_bytes(head[at:at + 4], "little")


def test_the_device_arch_picks_the_build():
    assert {normalize_arch(m) for m in ("aarch64", "arm64")} == {"aarch64"}
    assert normalize_arch("armv7l") == normalize_arch("armhf") == "armv7l"
    assert CROSS_TARGETS["aarch64"][:2] == ("aarch64", "aarch64-linux-gnu-gcc")
    assert CROSS_TARGETS["armv7l"][:2] == ("armhf", "arm-linux-gnueabihf-gcc")
    with pytest.raises(DeviceError, match="no cross build of the C library for mips"):
        c_library_for("mips")
    # shipped when the device cannot build it (no cc or no make), or always when asked; never when told not to
    assert ships_c_library({"cc": None, "make": "/usr/bin/make"}) and ships_c_library({"cc": "/usr/bin/cc"})
    assert not ships_c_library({"cc": "/usr/bin/cc", "make": "/usr/bin/make"})
    assert ships_c_library({"cc": "/usr/bin/cc", "make": "/usr/bin/make"}, "always")
    assert not ships_c_library({}, "never")


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["aarch64", "armv7l"])
def test_cross_built_library_is_the_devices_and_loads_under_qemu(arch, tmp_path):
    from tests.test_c_cross import _missing_tools

    reason = _missing_tools("aarch64" if arch == "aarch64" else "armhf")
    if reason:
        pytest.skip(reason)
    lib = c_library_for(arch)
    assert lib["arch"] == arch and lib["make_target"] == CROSS_TARGETS[arch][0]
    assert lib["compiler"] == CROSS_TARGETS[arch][1] and lib["sha256"] == sha(lib["path"])
    cls, machine, flags = _elf(lib["path"])
    assert machine == EM[arch] and cls == (2 if arch == "aarch64" else 1)
    if arch == "armv7l":
        assert flags & 0x400  # EF_ARM_ABI_FLOAT_HARD: Raspberry Pi OS's armhf calling convention
    # the library loads on that CPU (emulated): every kernel of the host build's op table is there
    src = tmp_path / "loader.c"
    src.write_text(LOADER)
    exe = tmp_path / "loader"
    proc = subprocess.run([CROSS_TARGETS[arch][1], "-o", str(exe), str(src), "-ldl"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run([*QEMU[arch], str(exe), lib["path"]], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    from edge_sdk.runtime.c_interpreter import c_supported_ops, library

    k = 0
    import ctypes

    op, ver, custom = ctypes.c_int32(), ctypes.c_int32(), ctypes.c_char_p()
    while library().edge_host_kernels(k, ctypes.byref(op), ctypes.byref(ver), ctypes.byref(custom)) == 0:
        k += 1
    assert run.stdout.split()[:2] == ["kernels", str(k)] and k >= len(c_supported_ops())


def test_the_machines_own_arch_is_the_host_build():
    from edge_sdk.runtime import c_build

    here = normalize_arch(os.uname().machine)
    lib = c_library_for(here)
    assert lib["make_target"] == "host" and Path(lib["path"]) == c_build.build()
    assert _elf(lib["path"])[1] == EM.get(here, _elf(lib["path"])[1])


@pytest.mark.slow
def test_deploy_ships_the_library_and_the_device_runs_the_c_runtime(lab, tmp_path):
    """--ship-c-library on the loopback device (it has a compiler: the option forces the ship): the library
    built here lands in the venv's edge_sdk/_prebuilt/, sha256 equal, loads there, and the device's `edge run`
    picks the C runtime with it (no build on the device)."""
    d = lab.start("pi1")
    model = tiny_model(tmp_path / "model.tflite")
    r = edge("deploy", model, "--host", "pi1", "--ship-c-library", lab=lab, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "runtime: c (C runtime runs all 1 node)" in r.stdout, r.stdout
    base = device_base(d)
    manifest = json.loads((base / "manifest.json").read_text())
    c = manifest["c_backend"]
    assert c["built"] is True and c["shipped"] is True and c["make_target"] == "host", c
    here = c_library_for(normalize_arch(os.uname().machine))
    venv = Path(manifest["runtime"]["venv_dir"])
    shipped = Path(c["library"])
    assert shipped.parent.name == "_prebuilt" and shipped.parent.parent.name == "edge_sdk"
    assert venv in shipped.parents and shipped.is_file() and sha(shipped) == c["sha256"] == here["sha256"]
    from edge_sdk.runtime.c_interpreter import c_supported_ops

    assert c["kernels"] == len(c_supported_ops()) and not list(shipped.parent.glob(".*.part"))
    assert manifest["runtime_choice"] == {"runtime": "c", "runtime_reason": "C runtime runs all 1 node"}

    # the device's runtime uses the shipped file (no build of its own in the device's cache)
    x = tmp_path / "x.npy"
    np.save(x, np.array([[1, 2, 3, 4]], np.float32))
    check = lab.ssh(d, remote_command(f"{base}/venv/bin/python", "-c", "from edge_sdk.runtime import c_build, c_interpreter; "
                                      "c_interpreter.library(); print(c_build.library_path())"))
    assert check.returncode == 0 and check.stdout.strip() == str(shipped), check.stderr
    run = lab.ssh(d, remote_command(f"{base}/venv/bin/python", "-m", "edge_sdk.cli", "run",
                                    manifest["model"]["path"], str(x), "--json"), timeout=120)
    assert run.returncode == 0, run.stderr
    (res,) = json.loads(run.stdout)
    assert res["runtime"] == "c" and res["predictions"][0]["label"] == "3"
    assert not list((d.home / ".cache").glob("edge-sdk/c-runtime/*/firmware_c/build/host/libedge.so"))
    r = edge("deploy", "--status", "--host", "pi1", lab=lab)
    assert r.returncode == 0 and "C backend:   built (shipped: built here for x86_64" in r.stdout, r.stdout
    assert "runs on:     c (C runtime runs all 1 node)" in r.stdout

    # misuse: both flags
    r = edge("deploy", model, "--host", "pi1", "--ship-c-library", "--no-c-backend", lab=lab)
    assert r.returncode == 2 and "contradict" in r.stderr


@pytest.mark.slow
def test_deploy_without_c_backend_says_python(lab, tmp_path):
    lab.start("pi1")
    model = tiny_model(tmp_path / "model.tflite")
    result = deploy(model, "pi1", build_c=False)
    assert result.ok and result.manifest["c_backend"] is None
    rc = result.manifest["runtime_choice"]
    assert rc["runtime"] == "python" and "no C library on the device" in rc["runtime_reason"]
    with pytest.raises(ValueError, match="ship_c must be one of"):
        deploy(model, "pi1", ship_c="sometimes")


def test_cli_ship_flag_help():
    r = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "deploy", "--help"], capture_output=True, text=True,
                       timeout=60, check=False)
    assert r.returncode == 0 and "--ship-c-library" in r.stdout


@pytest.mark.slow
def test_deploy_to_a_device_without_a_compiler_ships_the_library(lab, tmp_path):
    """The default (no flag): the device's PATH has no cc, gcc or make, so the deploy ships the library built
    here instead of skipping the C backend; the device runs the model on it."""
    d = lab.start("pi1", path=lab.bare_path(tmp_path / "bare-bin"))
    probe = lab.ssh(d, "command -v cc gcc make; echo end")
    assert probe.stdout.strip() == "end", probe.stdout  # no compiler, no make on the device
    model = tiny_model(tmp_path / "model.tflite")
    result = deploy(model, "pi1")
    assert result.ok, result.notes
    c = result.manifest["c_backend"]
    assert c["built"] is True and c["shipped"] is True and Path(c["library"]).is_file(), c
    assert result.manifest["runtime_choice"]["runtime"] == "c"
    assert not any("no cc" in n for n in result.notes)
