"""Issue 26, session 19: the int8 fast paths added for x86-64 (firmware_c/src/simd/edge_simd_x86.c) give the portable
kernels' bytes (TFLM's) at every SIMD level this CPU runs.

The pixel-lane conv (qconv_lanes): 16 output pixels a vector, a sum per channel, transposed to pixel-major bytes at
the end. LANES_WINDOW (few input channels, a network's first layer): pixels of one output row, k = kh * kw * c packed
without a tap's padding, a step's dwords permuted from the row's 128-byte window, windows loaded masked to their input
row (the padding's zero point). LANES_POINT (a 1x1 stride-1 projection into at most 32 channels): 16 contiguous
pixels' c bytes loaded once, each step's dwords permuted from their pair of loads.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model
from tests.peers import run_tflm
from tests.simd_common import levels  # noqa: F401 (a fixture; backend: tests/conftest.py)
from tests.simd_common import prepared_at_level, run_at_level
from tests.test_c_simd import has_vbmi, qconv_lanes_bytes
from tests.test_speed26_int8_align import _Dwf, _Qconv, _at, _lib, _requantize

pytestmark = needs_c_runtime


def _out(padding, stride, dil, size, k):
    eff = (k - 1) * dil + 1
    return (size + stride - 1) // stride if padding == "SAME" else (size + stride - eff) // stride


# (h, w, c, o, kh, kw, stride, padding, dilation, batch, activation): c 1..4 (c 3: first layers), strides 1-3,
# SAME / VALID, output rows of 16 pixels and not (a last group of 5, 2, 1 pixels), o under, at and over one block of
# 16 (5, 8, 16, 24, 40: partial blocks), 3x3, 5x5, 7x7, 2x2, 3x1 (a step of 4 bytes over three filter rows of 3),
# batch 2, a clamp from RELU6. Not the lanes (the tiles, for contrast): stride 3 at c 3 (the 16 pixels' windows span
# 15 * 9 + 9 > 128 bytes), dilation 2, c 5.
LANE_SHAPES = [
    (96, 96, 3, 16, 3, 3, 2, "SAME", 1, 1, "RELU6"),
    (20, 37, 3, 16, 3, 3, 1, "SAME", 1, 2, "NONE"),
    (17, 23, 1, 8, 3, 3, 2, "SAME", 1, 1, "NONE"),
    (9, 40, 2, 5, 3, 3, 1, "VALID", 1, 1, "RELU6"),
    (13, 30, 4, 24, 3, 3, 1, "SAME", 1, 1, "NONE"),
    (19, 50, 3, 40, 5, 5, 2, "SAME", 1, 1, "RELU6"),
    (12, 21, 3, 16, 7, 7, 2, "SAME", 1, 1, "NONE"),
    (10, 18, 3, 16, 3, 1, 1, "SAME", 1, 1, "NONE"),
    (8, 9, 3, 16, 2, 2, 2, "VALID", 1, 1, "NONE"),
    (15, 60, 3, 32, 3, 3, 3, "SAME", 1, 1, "NONE"),
    (14, 33, 3, 16, 3, 3, 1, "SAME", 2, 1, "NONE"),
    (9, 20, 5, 16, 3, 3, 1, "SAME", 1, 1, "NONE"),
]
# 1x1 stride 1 projections (LANES_POINT: c a multiple of 4 in 8..64, o <= 32; the runtime sends o < 2c here): one
# pair of 64-byte loads (c 8), an odd count of loads (c 12, 20), pairs blended (c 32, 48, 64), o 16, 12, 24, 32 (two
# blocks, the second partial or whole), pixel counts not a multiple of 16, batch 2, RELU6. Not the lanes (for
# contrast): c 96 (past 64), o 40 (past two blocks), c 18 (not a multiple of 4). Expansions (o = 2c: 8 -> 16, 16 -> 32)
# and a single pixel (a squeeze-excite's 1x1 input: qconv_one_pixel's row, not the lanes).
POINT_SHAPES = [
    (9, 11, 32, 16, 1, 1, 1, "SAME", 1, 1, "NONE"),
    (7, 7, 8, 12, 1, 1, 1, "VALID", 1, 2, "RELU6"),
    (5, 13, 48, 24, 1, 1, 1, "SAME", 1, 1, "NONE"),
    (4, 9, 64, 32, 1, 1, 1, "SAME", 1, 1, "RELU6"),
    (3, 5, 12, 16, 1, 1, 1, "SAME", 1, 1, "NONE"),
    (6, 7, 20, 17, 1, 1, 1, "SAME", 1, 1, "NONE"),
    (2, 3, 96, 16, 1, 1, 1, "SAME", 1, 1, "NONE"),
    (5, 5, 32, 40, 1, 1, 1, "SAME", 1, 1, "NONE"),
    (4, 6, 18, 16, 1, 1, 1, "SAME", 1, 1, "NONE"),
    (8, 10, 8, 16, 1, 1, 1, "SAME", 1, 1, "NONE"),
    (6, 9, 16, 32, 1, 1, 1, "SAME", 1, 2, "RELU6"),
    (1, 1, 8, 16, 1, 1, 1, "SAME", 1, 1, "NONE"),
]
# expansions (o >= 2c) among them: conv_2d.c sends them to the lanes, not the GEMM, where the lanes take them
EXPANSIONS = [s for s in POINT_SHAPES if s[3] >= 2 * s[2]]


def _seed(s):
    return sum(s[:7]) + 10 * s[8]


def _ident(s):
    return "x".join(map(str, s[:6])) + f"s{s[6]}{s[7]}d{s[8]}n{s[9]}{s[10]}"


def _case(shape, seed):
    h, w, c, o, kh, kw, stride, padding, dil, n, act = shape
    rng = np.random.default_rng(seed)
    oh, ow = _out(padding, stride, dil, h, kh), _out(padding, stride, dil, w, kw)
    kk = kh * kw * c
    wscale = list(rng.uniform(0.3, 3, o) / (20 * np.sqrt(kk)))
    wt = T((o, kh, kw, c), "INT8", wscale, 0, quantized_dimension=0,
           data=rng.integers(-127, 128, (o, kh, kw, c), dtype=np.int8))
    b = T((o,), "INT32", [0.05 * v for v in wscale], 0, quantized_dimension=0,
          data=rng.integers(-3000, 3000, o).astype(np.int32))
    x = T((n, h, w, c), "INT8", 0.05, int(rng.integers(-128, 128)))
    y = T((n, oh, ow, o), "INT8", 0.02, int(rng.integers(-100, 100)))
    model = op_model("CONV_2D", [x, wt, b], [y],
                     options={"padding": padding, "stride_h": stride, "stride_w": stride, "dilation_h_factor": dil,
                              "dilation_w_factor": dil, "fused_activation_function": act}, version=3)
    return model, [rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", LANE_SHAPES + POINT_SHAPES, ids=_ident)
def test_lane_conv_equals_portable_and_tflm(backend, levels, shape, threads):
    """Every level gives the portable kernel's bytes, which are TFLM's; with 2 threads the pixels are split in 32s
    (groups start inside an output row)."""
    lib, lv = levels
    model, feeds = _case(shape, _seed(shape))
    ref = run_at_level(backend, lib, 0, model, feeds)
    for level in lv:
        got = run_at_level(backend, lib, level, model, feeds, num_threads=threads)
        np.testing.assert_array_equal(got[0], ref[0], err_msg=f"SIMD level {level} differs from the portable kernel")
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])


@pytest.mark.parametrize("shape", [s for s in LANE_SHAPES + POINT_SHAPES if s[9] == 1], ids=_ident)
def test_lane_conv_taken_where_it_fits_and_exact(backend, shape):
    """edge_simd_qconv_pack keeps the pixel-lane block exactly where the shape fits it (and the CPU has AVX-512
    VBMI), and edge_simd_qconv then gives numpy's requantized sums for every pixel range (a group cut by the range's
    ends, a range of one pixel), nothing written past the block it asked for."""
    lib = _lib(backend)
    if lib.edge_simd_cpu_level() < 2:
        pytest.skip("this CPU has no AVX-512 VNNI level: no indirection conv")
    h, w, c, o, kh, kw, stride, padding, dil = shape[:9]
    oh, ow = _out(padding, stride, dil, h, kh), _out(padding, stride, dil, w, kw)
    pt = max((oh - 1) * stride + (kh - 1) * dil + 1 - h, 0) // 2 if padding == "SAME" else 0
    pl = max((ow - 1) * stride + (kw - 1) * dil + 1 - w, 0) // 2 if padding == "SAME" else 0
    p = _Dwf(h, w, c, oh, ow, kh, kw, stride, stride, dil, dil, pt, pl, 0.0, 0.0)
    rng = np.random.default_rng(_seed(shape))
    wt = rng.integers(-127, 128, (o, kh, kw, c), dtype=np.int8)
    x = rng.integers(-128, 128, (h, w, c), dtype=np.int8)
    bias = rng.integers(-3000, 3000, o).astype(np.int32)
    mul = rng.integers(1 << 30, (1 << 31) - 1, o).astype(np.int32)
    rs = rng.integers(5, 12, o).astype(np.int32)
    offset, zp = 9, -5
    nbytes = lib.edge_simd_qconv_bytes(2, ctypes.byref(p), o)
    owner, dst = _at(nbytes, 8)
    q = _Qconv()
    lib.edge_simd_qconv_pack(ctypes.byref(q), 2, ctypes.byref(p), o, wt.ctypes.data, bias.ctypes.data, offset,
                             mul.ctypes.data, 1, rs.ctypes.data, 1, zp, -128, 127, dst)
    fits = qconv_lanes_bytes(shape) > 0
    assert bool(q.lanes) == (fits and has_vbmi())
    # numpy: the input padded with its zero point (x + offset = 0 there)
    xp = np.zeros((h + 2 * (kh * dil), w + 2 * (kw * dil), c), np.int64)
    xp[pt:pt + h, pl:pl + w] = x.astype(np.int64) + offset
    acc = np.zeros((oh, ow, o), np.int64)
    for fy in range(kh):
        for fx in range(kw):
            win = xp[fy * dil:fy * dil + stride * oh:stride, fx * dil:fx * dil + stride * ow:stride]
            acc += np.einsum("hwc,oc->hwo", win, wt[:, fy, fx].astype(np.int64))
    want = _requantize((acc + bias).reshape(-1, o), mul.astype(np.int64), rs.astype(np.int64), zp)
    total = oh * ow
    for p0, p1 in [(0, total), (min(5, total - 1), min(5 + 37, total)), (total - 1, total)]:
        y = np.full((total, o), 77, np.int8)
        lib.edge_simd_qconv(ctypes.byref(q), x.ctypes.data, p0, p1, y.ctypes.data)
        np.testing.assert_array_equal(y[p0:p1], want[p0:p1], err_msg=f"pixels [{p0}, {p1})")
        assert (y[:p0] == 77).all() and (y[p1:] == 77).all(), f"pixels [{p0}, {p1}): wrote outside them"
    assert not owner[dst + nbytes - owner.ctypes.data:].any(), "wrote past the bytes asked for"


@pytest.mark.parametrize("shape", EXPANSIONS, ids=_ident)
def test_small_expansion_runs_the_lanes_not_the_gemm(backend, levels, shape):
    """A 1x1 expansion into at most 32 channels runs the indirection conv (its pixel-lane block: no fast-path scratch)
    where the CPU has AVX-512 VBMI, the GEMM (its im2col-free work area) where it has not; the same bytes."""
    lib, lv = levels
    if 2 not in lv:
        pytest.skip("this CPU has no AVX-512 VNNI level")
    model, _ = _case(shape, _seed(shape))
    parts = prepared_at_level(backend, lib, 2, model).arena_parts()
    if has_vbmi():
        assert parts["fast_path_scratch"] == 0
        assert parts["packed_weights"] >= qconv_lanes_bytes(shape) > 0
    else:
        assert parts["fast_path_scratch"] > 0
