"""The int8 packed filters of the C runtime's x86-64 fast paths start at a cache line (issue 26): edge_simd_qgemm_pack
(conv 1x1 / im2col, FULLY_CONNECTED, TRANSPOSE_CONV, one-channel depthwise) and edge_simd_qconv_pack (the indirection
conv) ask for 64 bytes more and round their start up, wherever the arena's 8-byte persistent steps put the bytes
(a block at +8 bytes ran qgemm M 49 K 160 N 960 1.30x, M 196 K 96 N 576 1.20x slower: split 64-byte loads). The
GEMM's bytes are checked against a numpy GEMM with the runtime's requantization (edge_rq_apply), so a block packed
at any start must also be complete and in place."""

from __future__ import annotations

import ctypes
import platform

import numpy as np
import pytest

from tests.conftest import needs_c_runtime

pytestmark = [needs_c_runtime,
              pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64's int8 packing")]

P, I32 = ctypes.c_void_p, ctypes.c_int32


class _Qgemm(ctypes.Structure):
    """edge_simd.h's edge_simd_qgemm_t."""
    _fields_ = [(name, I32) for name in ("level", "n", "k", "zp", "lo", "hi", "npad", "kpad")] + [("packed", P)]


class _Dwf(ctypes.Structure):
    """edge_simd.h's edge_simd_dwf_t (the geometry)."""
    _fields_ = [(name, I32) for name in ("h", "w", "c", "oh", "ow", "kh", "kw", "sh", "sw", "dh", "dw", "pt", "pl")]
    _fields_ += [("lo", ctypes.c_float), ("hi", ctypes.c_float)]


class _Qconv(ctypes.Structure):
    """edge_simd.h's edge_simd_qconv_t."""
    _fields_ = [("g", _Qgemm)] + [(name, I32) for name in ("c", "cpad", "kh", "kw", "ow", "safe", "sxb")]
    _fields_ += [("rows", P), ("cols", P), ("zero", P), ("lanes", P)]


def _lib(backend):
    lib = backend.library()
    lib.edge_simd_cpu_level.restype = I32
    lib.edge_simd_qgemm_bytes.restype = ctypes.c_size_t
    lib.edge_simd_qgemm_bytes.argtypes = [I32, I32, I32]
    lib.edge_simd_qgemm_work.restype = ctypes.c_size_t
    lib.edge_simd_qgemm_work.argtypes = [I32, I32, I32]
    lib.edge_simd_qgemm_pack.argtypes = [P, I32, P, I32, I32, I32, I32, P, I32, P, I32, P, I32, I32, I32, I32, P]
    lib.edge_simd_qgemm.argtypes = [P, P, I32, I32, I32, I32, P, I32, P]
    lib.edge_simd_qconv_bytes.restype = ctypes.c_size_t
    lib.edge_simd_qconv_bytes.argtypes = [I32, P, I32]
    lib.edge_simd_qconv_pack.argtypes = [P, I32, P, I32, P, P, I32, P, I32, P, I32, I32, I32, I32, P]
    lib.edge_simd_qconv.argtypes = [P, P, I32, I32, P]
    return lib


def _at(nbytes: int, start: int) -> tuple[np.ndarray, int]:
    """A buffer and an address `start` bytes past a cache line with nbytes after it."""
    owner = np.zeros(nbytes + 128, np.uint8)
    return owner, owner.ctypes.data + (-owner.ctypes.data) % 64 + start


def _requantize(acc: np.ndarray, mul: np.ndarray, rs: np.ndarray, zp: int) -> np.ndarray:
    """edge_rq_apply (edge_dsp.h) on int64 sums: h = (acc * mul + 2^30) >> 31, h += h >> 31, rounded shift by rs."""
    h = (acc * mul + (1 << 30)) >> 31
    h = h + (h >> 31)
    return np.clip(zp + ((h + (1 << (rs - 1))) >> rs), -128, 127).astype(np.int8)


# (m, n, k): 16-channel blocks whole and partial, k under / over a VPDPBUSD step, the few-channel block (n <= 8, k a
# multiple of 4 up to 64), one row (the row kernel), the shapes the +8-byte figures came from (smaller m)
GEMMS = [(5, 1, 4), (7, 3, 16), (9, 8, 64), (13, 17, 27), (12, 96, 16), (1, 100, 129), (24, 576, 96), (3, 960, 160)]


@pytest.mark.parametrize("m,n,k", GEMMS)
def test_qgemm_block_starts_at_a_cache_line(backend, m, n, k):
    """From every 8-byte start the packed block (bias, multipliers, shifts, then the weights) starts at a cache line
    within the bytes asked for, and the GEMM gives numpy's bytes, at every level this CPU runs."""
    lib = _lib(backend)
    levels = range(1, lib.edge_simd_cpu_level() + 1)
    if not levels:
        pytest.skip("this CPU runs no int8 GEMM fast path")
    rng = np.random.default_rng(m * 1000 + n + k)
    w = rng.integers(-127, 128, (n, k), dtype=np.int8)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    bias = rng.integers(-3000, 3000, n).astype(np.int32)
    mul = rng.integers(1 << 30, (1 << 31) - 1, n).astype(np.int32)
    rs = rng.integers(5, 12, n).astype(np.int32)
    offset, zp = 7, -3
    acc = (a.astype(np.int64) + offset) @ w.astype(np.int64).T + bias
    want = _requantize(acc, mul.astype(np.int64), rs.astype(np.int64), zp)
    for level in levels:
        nbytes = lib.edge_simd_qgemm_bytes(level, n, k)
        work, work_at = _at(lib.edge_simd_qgemm_work(level, k, 0), 0)
        for start in range(0, 64, 8):
            owner, dst = _at(nbytes, start)
            g = _Qgemm()
            lib.edge_simd_qgemm_pack(ctypes.byref(g), level, w.ctypes.data, n, k, k, 1, bias.ctypes.data, offset,
                                     mul.ctypes.data, 1, rs.ctypes.data, 1, zp, -128, 127, dst)
            where = f"level {level} m {m} n {n} k {k} start {start}"
            assert g.packed % 64 == 0, f"{where}: packed at {g.packed % 64} mod 64"
            assert dst <= g.packed < dst + 64, where
            y = np.zeros((m, n), np.int8)
            lib.edge_simd_qgemm(ctypes.byref(g), a.ctypes.data, m, k, 0, n, y.ctypes.data, n, work_at)
            np.testing.assert_array_equal(y, want, err_msg=where)
            assert not owner[dst + nbytes - owner.ctypes.data:].any(), f"{where}: wrote past the bytes asked for"


@pytest.mark.parametrize("h,w,c,o,kh,stride", [(6, 7, 3, 16, 3, 1), (5, 9, 8, 40, 3, 2), (4, 4, 20, 5, 5, 1)])
def test_qconv_block_starts_at_a_cache_line(backend, h, w, c, o, kh, stride):
    """The indirection conv's block (the packed filter, then its axis tables and zero row) starts at a cache line
    from every 8-byte start and ends within the bytes asked for: the same output bytes from every start."""
    lib = _lib(backend)
    if lib.edge_simd_cpu_level() < 2:
        pytest.skip("this CPU has no AVX-512 VNNI level: no indirection conv")
    pad = (kh - 1) // 2
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kh) // stride + 1
    p = _Dwf(h, w, c, oh, ow, kh, kh, stride, stride, 1, 1, pad, pad, 0.0, 0.0)
    rng = np.random.default_rng(h + w + c + o)
    wt = rng.integers(-127, 128, (o, kh, kh, c), dtype=np.int8)
    x = rng.integers(-128, 128, (h, w, c), dtype=np.int8)
    bias = rng.integers(-3000, 3000, o).astype(np.int32)
    mul = rng.integers(1 << 30, (1 << 31) - 1, o).astype(np.int32)
    rs = rng.integers(5, 12, o).astype(np.int32)
    nbytes = lib.edge_simd_qconv_bytes(2, ctypes.byref(p), o)
    outputs = []
    for start in range(0, 64, 8):
        owner, dst = _at(nbytes, start)
        q = _Qconv()
        lib.edge_simd_qconv_pack(ctypes.byref(q), 2, ctypes.byref(p), o, wt.ctypes.data, bias.ctypes.data, 4,
                                 mul.ctypes.data, 1, rs.ctypes.data, 1, -2, -128, 127, dst)
        assert q.g.packed % 64 == 0, f"start {start}: packed at {q.g.packed % 64} mod 64"
        assert dst <= q.g.packed and q.zero + -(-c // 4) * 4 <= dst + nbytes, f"start {start}"
        y = np.zeros((oh, ow, o), np.int8)
        lib.edge_simd_qconv(ctypes.byref(q), x.ctypes.data, 0, oh * ow, y.ctypes.data)
        outputs.append(y)
    for start, y in zip(range(8, 64, 8), outputs[1:]):
        np.testing.assert_array_equal(y, outputs[0], err_msg=f"start {start}")
