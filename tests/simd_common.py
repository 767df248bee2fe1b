"""What tests/test_c_simd.py (int8), tests/test_c_simd_f32.py (float32), tests/test_c_simd_dw.py and
tests/test_arena_meaning.py share: the C runtime built for this
host, every SIMD level this CPU runs (edge_simd_set caps the level picked at prepare), a model run at one level,
and firmware_c built for aarch64 to run under qemu-user."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest


def simd_levels(backend):
    """Yields (lib, the SIMD levels to compare with level 0: every one this CPU runs, none on a CPU without a fast
    path); the level is uncapped again afterwards."""
    lib = backend.library()
    lib.edge_simd_set.argtypes = [ctypes.c_int32]
    lib.edge_simd_set.restype = ctypes.c_int32
    top = lib.edge_simd_set(-1)
    yield lib, list(range(1, top + 1))
    lib.edge_simd_set(-1)


@pytest.fixture(scope="module")
def levels(backend):
    """(lib, the SIMD levels to compare with level 0: every one this CPU runs; none on a CPU without a fast path)."""
    yield from simd_levels(backend)


def prepared_at_level(backend, lib, level, model, **kw):
    """A CInterpreter of model (bytes) with its tensors allocated at SIMD level `level` (the paths a prepare picks
    there: arena_parts() tells them apart); the level is uncapped again afterwards."""
    lib.edge_simd_set(level)
    try:
        it = backend.CInterpreter(model_content=model, **kw)
        it.allocate_tensors()
    finally:
        lib.edge_simd_set(-1)
    return it


def run_at_level(backend, lib, level, model, feeds, tensors=(), **kw):
    """The outputs of model (bytes or a path) on feeds, prepared at SIMD level `level` (0: the portable kernels),
    then the tensors of subgraph 0 at the indices ``tensors`` (intermediate ones a test looks into)."""
    lib.edge_simd_set(level)
    try:
        c = backend.CInterpreter(model_content=model, **kw) if isinstance(model, bytes) else \
            backend.CInterpreter(model_path=str(model), **kw)
        c.allocate_tensors()
    finally:
        lib.edge_simd_set(-1)
    for d, x in zip(c.get_input_details(), feeds):
        c.set_tensor(d["index"], x)
    c.invoke()
    return [np.array(c.get_tensor(i)) for i in [d["index"] for d in c.get_output_details()] + list(tensors)]


def assert_close_of_range(got, want, what, tol=1e-5):
    """got within tol of want relative to want's range (its magnitude when the range is 0: one value)."""
    assert got.shape == want.shape and got.dtype == want.dtype, what
    span = float(np.max(want) - np.min(want)) if want.size else 0.0
    if span == 0.0 and want.size:
        span = float(np.max(np.abs(want)))
    err = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
    assert err <= tol * max(span, 1e-30) + 1e-30, f"{what}: max error {err:.3g} vs output range {span:.3g}"


def aarch64_build():
    """firmware_c built for aarch64 (make aarch64, under the cross builds' lock): (qemu, sysroot, edge-run-c);
    skips where the cross tools are absent."""
    import fcntl
    import subprocess

    from tests.test_c_cross import ARCHES, FW, _missing_tools

    reason = _missing_tools("aarch64")
    if reason:
        pytest.skip(reason)
    with open(FW / "build" / ".cross.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(["make", "-C", str(FW), "-j2", "aarch64"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    _, qemu, sysroot, _, _, _, _ = ARCHES["aarch64"]
    return qemu, sysroot, FW / "build" / "aarch64" / "edge-run-c"
