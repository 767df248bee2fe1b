"""Tensor addresses of the C runtime on the host (issue 26): CInterpreter gives the C runtime an arena that starts at a
64-byte boundary (c_interpreter.ARENA_ALIGN), so that every tensor whose plan offset is a multiple of 64 starts a
cache line and the AVX-512 kernels' 64-byte loads and stores do not straddle two lines (numpy's large buffers start
16 bytes past a page: every tensor sat at 16 mod 64, float 1x1 conv / depthwise 1.08-1.39x slower). The model's
bytes too. Several sizes, float32 and int8. And the float GEMM's packed filter (edge_simd_sgemm_pack, x86-64) starts
a cache line wherever the arena's 8-byte persistent steps put the bytes it asked for."""

from __future__ import annotations

import ctypes
import platform

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model

pytestmark = needs_c_runtime


def _pointwise(h: int, c: int, o: int, dtype: str) -> bytes:
    """CONV_2D 1x1 RELU6 on 1 x h x h x c into o channels (activations of multiples of 64 bytes)."""
    rng = np.random.default_rng(h + c + o)
    if dtype == "FLOAT32":
        w = T((o, 1, 1, c), "FLOAT32", data=rng.uniform(-1, 1, (o, 1, 1, c)).astype(np.float32))
        b = T((o,), "FLOAT32", data=rng.uniform(-1, 1, o).astype(np.float32))
        x, y = T((1, h, h, c), "FLOAT32"), T((1, h, h, o), "FLOAT32")
    else:
        w = T((o, 1, 1, c), "INT8", 0.02, 0, data=rng.integers(-127, 128, (o, 1, 1, c), dtype=np.int8))
        b = T((o,), "INT32", 0.05 * 0.02, 0, data=rng.integers(-300, 300, o).astype(np.int32))
        x, y = T((1, h, h, c), "INT8", 0.05, 3), T((1, h, h, o), "INT8", 0.1, -5)
    return op_model("CONV_2D", [x, w, b], [y], options=dict(padding="SAME", stride_h=1, stride_w=1,
                                                             fused_activation_function="RELU6"), version=3)


@pytest.mark.parametrize("h,c,o,dtype", [(8, 16, 32, "FLOAT32"), (24, 8, 48, "FLOAT32"), (13, 32, 16, "FLOAT32"),
                                         (16, 16, 64, "INT8")])
def test_tensors_start_at_cache_lines(backend, h, c, o, dtype):
    it = backend.CInterpreter(model_content=_pointwise(h, c, o, dtype), num_threads=1)
    it.allocate_tensors()
    plan = it.arena_plan()
    lines = [b for b in plan.buffers if b.offset % 64 == 0]
    assert len(lines) >= 2, f"plan offsets {[b.offset for b in plan.buffers]}: expected tensors at multiples of 64"
    for d in it.get_input_details() + it.get_output_details():
        addr = it.tensor(d["index"])().ctypes.data
        offset = next(b.offset for b in plan.buffers if b.name == d["name"])
        assert (addr - offset) % 64 == 0, f"{d['name']}: arena start {addr - offset:#x} is not a cache line"
        if offset % 64 == 0:
            assert addr % 64 == 0, f"{d['name']} at {addr:#x}"


class _Sgemm(ctypes.Structure):
    """edge_simd.h's edge_simd_sgemm_t."""
    _fields_ = [("level", ctypes.c_int32), ("n", ctypes.c_int32), ("k", ctypes.c_int32), ("npad", ctypes.c_int32),
                ("lo", ctypes.c_float), ("hi", ctypes.c_float), ("packed", ctypes.c_void_p),
                ("pack_scratch", ctypes.c_int32), ("rows", ctypes.c_int32)]


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64's float GEMM packing")
@pytest.mark.parametrize("n,k", [(1, 1), (16, 16), (96, 16), (33, 27), (1000, 1280)])
def test_sgemm_panels_start_at_a_cache_line(backend, n, k):
    """edge_simd_sgemm_pack puts the packed block at the first 64-byte boundary of the bytes edge_simd_sgemm_bytes
    asks for, from any 8-byte aligned start (the arena's persistent steps), and it fits in them."""
    lib = backend.library()
    lib.edge_simd_level.restype = ctypes.c_int32
    lib.edge_simd_sgemm_bytes.restype = ctypes.c_size_t
    lib.edge_simd_sgemm_bytes.argtypes = [ctypes.c_int32, ctypes.c_int32, ctypes.c_int32]
    lib.edge_simd_sgemm_pack.argtypes = [ctypes.POINTER(_Sgemm), ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32,
                                         ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                                         ctypes.c_float, ctypes.c_float, ctypes.c_void_p]
    level = lib.edge_simd_level()
    if level < 1:
        pytest.skip("this CPU runs no float GEMM fast path")
    nbytes = lib.edge_simd_sgemm_bytes(level, n, k)
    w = np.random.default_rng(n + k).uniform(-1, 1, (n, k)).astype(np.float32)
    bias = np.arange(n, dtype=np.float32)
    npad = -(-n // 16) * 16
    for start in range(0, 64, 8):
        owner = np.zeros(nbytes + 128, np.uint8)
        dst = owner.ctypes.data + (-owner.ctypes.data) % 64 + start
        g = _Sgemm()
        lib.edge_simd_sgemm_pack(ctypes.byref(g), level, w.ctypes.data, n, k, k, 1, bias.ctypes.data, 0.0, 6.0, dst)
        assert g.packed % 64 == 0, f"n {n} k {k}: packed at {g.packed % 64} mod 64 from a start at {start} mod 64"
        assert dst <= g.packed and g.packed + 4 * (npad + npad * k) <= dst + nbytes, f"n {n} k {k} start {start}"
        block = np.frombuffer(owner, np.float32, npad + npad * k, g.packed - owner.ctypes.data)
        np.testing.assert_array_equal(block[:n], bias)  # the bias first, then column 0's k values in panel 0
        np.testing.assert_array_equal(block[npad:npad + 16 * k:16], w[0])
