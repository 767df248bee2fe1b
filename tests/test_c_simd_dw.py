"""The C runtime's host fast paths of issue 26 (TRANSPOSE_CONV as per-tap GEMMs, SOFTMAX, RESIZE_BILINEAR, int8
MEAN, ...): at every SIMD level this CPU has (edge_simd_set caps the level picked at prepare; level 0 is the
portable kernel) int8 outputs are the portable kernel's bytes (and TFLM's), float outputs within 1e-5 of the
portable kernel's range and 1e-4 of LiteRT's reference kernels', on odd shapes (channels not multiples of a
vector, batches, strides, activations, bias or none)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model
from tests.peers import run_litert, run_tflm
from tests.simd_common import levels  # noqa: F401 (a fixture; backend: tests/conftest.py)
from tests.simd_common import assert_close_of_range, run_at_level

pytestmark = needs_c_runtime


def _every_level(backend, levels, model, feeds, exact):
    """The portable kernel's outputs, after checking every SIMD level against them (exact: the same bytes)."""
    lib, lv = levels
    ref = run_at_level(backend, lib, 0, model, feeds)
    for level in lv:
        for r, g in zip(ref, run_at_level(backend, lib, level, model, feeds)):
            if exact:
                np.testing.assert_array_equal(g, r, err_msg=f"SIMD level {level} differs from the portable kernel")
            else:
                assert_close_of_range(g, r, f"SIMD level {level} vs the portable kernel", 1e-5)
    return ref


def F(shape, data=None):
    return T(shape, "FLOAT32", data=None if data is None else np.asarray(data, np.float32))


# ------------------------------------------------------------------------------------------------ TRANSPOSE_CONV
# (kh, kw, sh, sw, padding): stride == filter is the fast path (one tap per output cell); the others keep the
# portable kernel and are here to show that they still do.
TCONV_SHAPES = [(2, 2, 2, 2, "SAME"), (2, 2, 2, 2, "VALID"), (3, 3, 3, 3, "VALID"), (2, 1, 2, 1, "SAME"),
                (1, 1, 1, 1, "SAME"), (3, 3, 2, 2, "SAME"), (2, 2, 1, 1, "VALID")]


def _tconv_case(rng, seed, dtype):
    kh, kw, sh, sw, padding = TCONV_SHAPES[seed % len(TCONV_SHAPES)]
    n = int(rng.choice([1, 1, 2]))
    h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    c = int(rng.choice([1, 3, 8, 17, 33, 64]))
    o = int(rng.choice([1, 5, 16, 17, 40]))
    oh = h * sh if padding == "SAME" else (h - 1) * sh + kh
    ow = w * sw if padding == "SAME" else (w - 1) * sw + kw
    has_bias = rng.random() < 0.8
    act = str(rng.choice(["NONE", "RELU", "RELU6"]))
    shape_t = T((4,), "INT32", data=np.array([n, oh, ow, o], np.int32))
    opts = {"padding": padding, "stride_h": sh, "stride_w": sw, "fused_activation_function": act}
    if dtype == "float32":
        wt = F((o, kh, kw, c), rng.standard_normal((o, kh, kw, c)))
        bias = F((o,), rng.standard_normal(o)) if has_bias else None
        x, y = F((n, h, w, c)), F((n, oh, ow, o))
        feeds = [rng.uniform(-2, 2, (n, h, w, c)).astype(np.float32)]
    else:
        per_channel = rng.random() < 0.5
        ws = rng.uniform(0.002, 0.02, o) if per_channel else float(rng.uniform(0.002, 0.02))
        wt = T((o, kh, kw, c), "INT8", scale=ws, zero_point=[0] * o if per_channel else 0,
               data=rng.integers(-127, 128, (o, kh, kw, c)).astype(np.int8))
        xs = float(rng.uniform(0.01, 0.1))
        bias = (T((o,), "INT32", scale=xs * np.atleast_1d(ws) * np.ones(o), zero_point=[0] * o,
                  data=rng.integers(-3000, 3000, o).astype(np.int32)) if has_bias else None)
        x = T((n, h, w, c), "INT8", xs, int(rng.integers(-128, 128)))
        y = T((n, oh, ow, o), "INT8", float(rng.uniform(0.05, 0.5)), int(rng.integers(-128, 128)))
        feeds = [rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)]
    model = op_model("TRANSPOSE_CONV", [shape_t, wt, x, bias], [y], options=opts, version=4 if has_bias else 3)
    return model, feeds


@pytest.mark.parametrize("seed", range(21))
def test_transpose_conv_int8_simd_equals_portable_and_tflm(backend, levels, seed):
    rng = np.random.default_rng(26000 + seed)
    model, feeds = _tconv_case(rng, seed, "int8")
    ref = _every_level(backend, levels, model, feeds, exact=True)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])


@pytest.mark.parametrize("seed", range(21))
def test_transpose_conv_f32_simd_close_to_portable_and_litert(backend, levels, seed):
    rng = np.random.default_rng(26100 + seed)
    model, feeds = _tconv_case(rng, seed, "float32")
    _every_level(backend, levels, model, feeds, exact=False)
    lib, lv = levels
    got = run_at_level(backend, lib, lv[-1] if lv else 0, model, feeds)
    assert_close_of_range(got[0], run_litert(model, feeds)[0], "the top SIMD level vs LiteRT's reference kernels", 1e-4)


def test_transpose_conv_fast_path_needs_no_sums_buffer(backend, levels):
    """The 2x2 s2 fast path writes the output directly: its scratch is the GEMM's work, not an int32 sum per
    output value (U-Net's 12x12x128 -> 24x24x64: 147 KB at level 0)."""
    lib, lv = levels
    if not lv:
        pytest.skip("no SIMD level on this CPU")
    rng = np.random.default_rng(3)
    shape_t = T((4,), "INT32", data=np.array([1, 24, 24, 64], np.int32))
    wt = T((64, 2, 2, 128), "INT8", scale=0.01, zero_point=0, data=rng.integers(-127, 128, (64, 2, 2, 128)).astype(np.int8))
    model = op_model("TRANSPOSE_CONV", [shape_t, wt, T((1, 12, 12, 128), "INT8", 0.05, 3)],
                     [T((1, 24, 24, 64), "INT8", 0.5, -2)], options={"padding": "SAME", "stride_h": 2, "stride_w": 2},
                     version=3)
    used = {}
    for level in (0, lv[-1]):
        lib.edge_simd_set(level)
        try:
            c = backend.CInterpreter(model_content=model)
            c.allocate_tensors()
            used[level] = c.arena_size
        finally:
            lib.edge_simd_set(-1)
    assert used[lv[-1]] < used[0] - 24 * 24 * 64 * 4 // 2


# ------------------------------------------------------------------------------------------------ SOFTMAX float32
@pytest.mark.parametrize("seed", range(12))
def test_softmax_f32_simd_close_to_portable_and_litert(backend, levels, seed):
    """Rows of 1 to 1001 values (vector tails), several rows, betas; within 1e-5 of the portable kernel and 1e-4
    of LiteRT's reference kernels."""
    rng = np.random.default_rng(26200 + seed)
    depth = [1, 3, 15, 16, 17, 31, 100, 1000, 1001, 7, 64, 257][seed]
    rows = int(rng.choice([1, 2, 5]))
    beta = float(rng.choice([1.0, 0.5, 2.5]))
    model = op_model("SOFTMAX", [F((rows, depth))], [F((rows, depth))], options={"beta": beta})
    feeds = [(rng.standard_normal((rows, depth)) * rng.choice([0.1, 3.0, 30.0])).astype(np.float32)]
    _every_level(backend, levels, model, feeds, exact=False)
    lib, lv = levels
    got = run_at_level(backend, lib, lv[-1] if lv else 0, model, feeds)
    for r in range(rows):  # each row's own range (a row of one value: 1.0)
        assert_close_of_range(got[0][r], run_litert(model, feeds)[0][r], f"row {r} vs LiteRT's reference kernels", 1e-4)


def test_softmax_f32_simd_hands_back_rows_it_cannot_run(backend, levels):
    """A row holding an infinity or a NaN, and a negative beta whose exponents overflow, run the portable row:
    the same bits (NaN where the portable kernel gives NaN)."""
    lib, lv = levels
    x = np.random.default_rng(4).standard_normal((4, 37)).astype(np.float32) * 50
    x[1, 5] = np.inf
    x[2, 30] = np.nan
    for beta in (1.0, -1.0):
        model = op_model("SOFTMAX", [F((4, 37))], [F((4, 37))], options={"beta": beta})
        ref = run_at_level(backend, lib, 0, model, [x])[0]
        for level in lv:
            got = run_at_level(backend, lib, level, model, [x])[0]
            np.testing.assert_array_equal(got[1:3], ref[1:3])
            if beta < 0:
                np.testing.assert_array_equal(got, ref)


# ------------------------------------------------------------------------------------------------ RESIZE_BILINEAR
RESIZE_MODES = [(False, True), (False, False), (True, False)]  # (align_corners, half_pixel_centers)


def _resize_case(rng, seed, dtype):
    ac, hp = RESIZE_MODES[seed % 3]
    n = int(rng.choice([1, 2]))
    h, w = int(rng.integers(1, 13)), int(rng.integers(1, 13))
    oh, ow = (int(rng.integers(1, 30)), int(rng.integers(1, 30))) if seed % 4 else (2 * h, 2 * w)
    c = int(rng.choice([1, 3, 8, 15, 16, 17, 33, 64]))
    size = T((2,), "INT32", data=np.array([oh, ow], np.int32))
    opts = {"align_corners": ac, "half_pixel_centers": hp}
    if dtype == "float32":
        x, y = F((n, h, w, c)), F((n, oh, ow, c))
        feeds = [rng.standard_normal((n, h, w, c)).astype(np.float32)]
    else:
        q = (float(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 128)))
        x, y = T((n, h, w, c), "INT8", *q), T((n, oh, ow, c), "INT8", *q)
        feeds = [rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)]
    return op_model("RESIZE_BILINEAR", [x, size], [y], options=opts, version=3), feeds


@pytest.mark.parametrize("seed", range(16))
def test_resize_bilinear_int8_simd_equals_portable_and_tflm(backend, levels, seed):
    rng = np.random.default_rng(26300 + seed)
    model, feeds = _resize_case(rng, seed, "int8")
    ref = _every_level(backend, levels, model, feeds, exact=True)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])


@pytest.mark.parametrize("seed", range(16))
def test_resize_bilinear_f32_simd_same_bits_as_portable(backend, levels, seed):
    """The vector rows do the portable kernel's multiplies and adds in its order, no FMA: the same bits; and
    LiteRT's reference kernels within 1e-4 of the range."""
    rng = np.random.default_rng(26400 + seed)
    model, feeds = _resize_case(rng, seed, "float32")
    ref = _every_level(backend, levels, model, feeds, exact=True)
    assert_close_of_range(ref[0], run_litert(model, feeds)[0], "the C kernel vs LiteRT's reference kernels", 1e-4)


# ------------------------------------------------------------------------------------------------ MEAN int8
@pytest.mark.parametrize("seed", range(12))
def test_mean_sum_int8_over_hw_simd_equals_portable_and_tflm(backend, levels, seed):
    """Global average pools (MEAN over H, W, keep_dims or not; SUM) on channel counts around the vector widths and
    the kernel's 256-channel chunks."""
    rng = np.random.default_rng(26500 + seed)
    c = [1, 5, 16, 17, 63, 64, 65, 300, 1280, 8, 33, 576][seed]
    n, h, w = int(rng.choice([1, 2])), int(rng.integers(1, 9)), int(rng.integers(1, 9))
    keep = bool(seed % 2)
    op = "SUM" if seed % 5 == 4 else "MEAN"
    xs, xz = float(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 128))
    ys = xs * (h * w if op == "SUM" else 1) * float(rng.uniform(0.5, 2.0))
    out_shape = (n, 1, 1, c) if keep else (n, c)
    model = op_model(op, [T((n, h, w, c), "INT8", xs, xz), T((2,), "INT32", data=np.array([1, 2], np.int32))],
                     [T(out_shape, "INT8", ys, int(rng.integers(-128, 128)))], options={"keep_dims": keep})
    feeds = [rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)]
    ref = _every_level(backend, levels, model, feeds, exact=True)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])


@pytest.mark.parametrize("ratio", [1 / 300.0, 0.7, 40.0, 3e-11])  # input scale / output scale
def test_mean_int8_output_step_at_every_multiplier(backend, levels, ratio):
    """MEAN int8 over H, W with output multipliers that shift left (ratio 40: 4.4 after the division by 9), right by a
    little and right past 31 (the 16-lane output step takes -31..31, the scalar loop the rest), 1280 channels of
    every byte value with zero points at both ends: every SIMD level == the portable kernel == TFLM."""
    rng = np.random.default_rng(26600)
    shape = (1, 3, 3, 1280)
    for xz, yz in ((-128, 127), (127, -128), (5, -3)):
        model = op_model("MEAN", [T(shape, "INT8", 0.05, xz), T((2,), "INT32", data=np.array([1, 2], np.int32))],
                         [T((1, 1, 1, 1280), "INT8", 0.05 / ratio, yz)], options={"keep_dims": True})
        feeds = [rng.integers(-128, 128, shape).astype(np.int8)]
        feeds[0][0, :, :, :256] = np.arange(-128, 128, dtype=np.int8)  # channels of one value: every sum of nine
        ref = _every_level(backend, levels, model, feeds, exact=True)
        np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])


# ------------------------------------------------------------------------------------------------ MEAN float32
MEAN_F32_CASES = [((1, 128, 128, 16), (1, 2), True), ((1, 64, 64, 24), (1, 2), False), ((2, 9, 7, 70), (1, 2), True),
                  ((1, 3, 3, 1280), (1, 2), False), ((2, 5, 6, 3), (0, 2), True), ((3, 50), (1,), False),
                  ((2, 4, 6, 33), (3,), True), ((1, 7, 7, 17), (1, 2), True)]


@pytest.mark.parametrize("case", range(len(MEAN_F32_CASES)))
@pytest.mark.parametrize("op", ["MEAN", "SUM"])
def test_mean_sum_f32_same_bits_as_litert_reference(backend, levels, case, op):
    """float32 MEAN / SUM sum in float32 in the input's order, as LiteRT's reference kernels: their bits at every
    level (a sum in double differed by up to 1e-2 of the range on a 128x128 mean of values around 5: issue 26's
    pose_landmark_full Identity_2 drift)."""
    shape, axes, keep = MEAN_F32_CASES[case]
    rng = np.random.default_rng(26600 + case)
    out_shape = (tuple(1 if d in axes else shape[d] for d in range(len(shape))) if keep
                 else tuple(shape[d] for d in range(len(shape)) if d not in axes))
    model = op_model(op, [F(shape), T((len(axes),), "INT32", data=np.array(axes, np.int32))], [F(out_shape)],
                     options={"keep_dims": keep})
    feeds = [(5 + 0.05 * rng.standard_normal(shape)).astype(np.float32)]
    ref = _every_level(backend, levels, model, feeds, exact=True)
    np.testing.assert_array_equal(ref[0], run_litert(model, feeds)[0])


# ------------------------------------------------------------------------------------------------ DEPTHWISE 3x3 / 5x5 float32
DW3_CASES = [(1, "SAME", 96, 24, 24), (2, "SAME", 96, 48, 48), (1, "VALID", 17, 9, 13), (2, "VALID", 33, 12, 7),
             (1, "SAME", 1, 5, 5), (2, "SAME", 16, 3, 11), (1, "SAME", 31, 4, 4), (2, "SAME", 65, 9, 10),
             # inputs above 1 MB (float32): the AVX-512 kernel runs output rows outer, channel tiles inner
             (2, "SAME", 72, 61, 63), (1, "SAME", 40, 90, 75)]


def _dw_f32_case(case, k):
    """(model, feeds) of DW3_CASES[case] with a k x k float32 filter, every activation, bias or none."""
    stride, padding, c, h, w = DW3_CASES[case]
    h, w = max(h, k), max(w, k)
    rng = np.random.default_rng(26700 + case)
    n = 2 if case % 3 == 2 else 1
    oh = (h + stride - 1) // stride if padding == "SAME" else (h - k) // stride + 1
    ow = (w + stride - 1) // stride if padding == "SAME" else (w - k) // stride + 1
    act = ["NONE", "RELU6", "RELU", "RELU_N1_TO_1"][case % 4]
    has_bias = case % 4 != 3
    wt = F((1, k, k, c), rng.standard_normal((1, k, k, c)))
    bias = F((c,), rng.standard_normal(c)) if has_bias else None
    model = op_model("DEPTHWISE_CONV_2D", [F((n, h, w, c)), wt, bias], [F((n, oh, ow, c))],
                     options={"padding": padding, "stride_h": stride, "stride_w": stride, "depth_multiplier": 1,
                              "fused_activation_function": act})
    return model, [rng.uniform(-2, 2, (n, h, w, c)).astype(np.float32)]


@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("case", range(len(DW3_CASES)))
def test_depthwise_3x3_5x5_f32_taps_once_same_bits_as_avx2(backend, levels, case, k):
    """The 3x3 / 5x5 AVX-512 kernel (filter taps loaded once per channel tile, four pixels sharing their input
    columns) does the AVX2 fast path's fused multiply-adds in its order: the same bits as level 1, and within 1e-5
    of the portable kernel; stride 1 and 2, SAME / VALID, channels not multiples of 16, rows too short for a block
    of four, batches."""
    model, feeds = _dw_f32_case(case, k)
    _every_level(backend, levels, model, feeds, exact=False)
    lib, lv = levels
    if len(lv) < 2:
        pytest.skip("this CPU has no AVX-512 level beside AVX2")
    np.testing.assert_array_equal(run_at_level(backend, lib, lv[-1], model, feeds)[0],
                                  run_at_level(backend, lib, 1, model, feeds)[0])


def _dw_q8_case(case, k):
    """(model, feeds, has_bias) of DW3_CASES[case] with a k x k int8 filter: per-channel or per-tensor, any zero
    points, every activation, bias or none."""
    stride, padding, c, h, w = DW3_CASES[case]
    h, w = max(h, k), max(w, k)
    rng = np.random.default_rng(26800 + case * 10 + k)
    n = 2 if case % 3 == 2 else 1
    oh = (h + stride - 1) // stride if padding == "SAME" else (h - k) // stride + 1
    ow = (w + stride - 1) // stride if padding == "SAME" else (w - k) // stride + 1
    act = ["NONE", "RELU6", "RELU", "RELU_N1_TO_1"][case % 4]
    per_channel = case % 2 == 0
    ws = rng.uniform(0.002, 0.02, c) if per_channel else float(rng.uniform(0.002, 0.02))
    xs = float(rng.uniform(0.01, 0.1))
    wt = T((1, k, k, c), "INT8", scale=ws, zero_point=[0] * c if per_channel else 0,
           quantized_dimension=3 if per_channel else 0, data=rng.integers(-127, 128, (1, k, k, c)).astype(np.int8))
    bias = (T((c,), "INT32", scale=xs * np.atleast_1d(ws) * np.ones(c), zero_point=[0] * c,
              data=rng.integers(-5000, 5000, c).astype(np.int32)) if case % 4 != 3 else None)
    x = T((n, h, w, c), "INT8", xs, int(rng.choice([-128, 127, int(rng.integers(-128, 128))])))
    y = T((n, oh, ow, c), "INT8", float(rng.uniform(0.02, 0.3)), int(rng.integers(-128, 128)))
    model = op_model("DEPTHWISE_CONV_2D", [x, wt, bias], [y],
                     options={"padding": padding, "stride_h": stride, "stride_w": stride, "depth_multiplier": 1,
                              "fused_activation_function": act})
    return model, [rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)], bias is not None


@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("case", range(len(DW3_CASES)))
def test_depthwise_3x3_5x5_int8_taps_once_equals_portable_and_tflm(backend, levels, case, k):
    """The int8 3x3 / 5x5 AVX-512 kernel (taps widened once per channel tile, the input offset folded into the bias
    for windows inside the input, four pixels sharing their input columns): the portable kernel's bytes and TFLM's,
    per-channel and per-tensor filters, any zero points, every activation, bias or none."""
    model, feeds, has_bias = _dw_q8_case(case, k)
    ref = _every_level(backend, levels, model, feeds, exact=True)
    if has_bias:  # TFLM (and LiteRT) refuse an int8 depthwise without a bias: the portable kernel is the reference
        np.testing.assert_array_equal(ref[0], run_tflm(model, feeds, isolate=True)[0])


# ------------------------------------------------------------------------------------------------ 8-bit tables
# LOGISTIC / TANH int8 and int8 -> int8 QUANTIZE look every element up in a 256-entry table (VPERMI2B, 64 bytes a
# step, at the AVX-512 level on a CPU with VBMI): every byte value, element counts below, at and past 64.
@pytest.mark.parametrize("shape", [(1, 5), (1, 64), (1, 7, 11, 13), (2, 16, 16, 3)])
@pytest.mark.parametrize("op", ["LOGISTIC", "TANH", "QUANTIZE"])
def test_int8_table_ops_simd_equals_portable_and_tflm(backend, levels, op, shape):
    rng = np.random.default_rng(sum(shape) + len(op))
    n = int(np.prod(shape))
    data = np.resize(rng.permutation(np.arange(-128, 128, dtype=np.int8)), n)  # n >= 256: every value
    feeds = [rng.permutation(data).reshape(shape)]
    x = T(shape, "INT8", 0.07, 3)
    if op == "LOGISTIC":
        y = T(shape, "INT8", 1 / 256, -128)
    elif op == "TANH":
        y = T(shape, "INT8", 1 / 128, 0)
    else:  # a concatenation input's requantization (the U-Net's skips): another scale and zero point
        y = T(shape, "INT8", 0.05, -20)
    model = op_model(op, [x], [y])
    ref = _every_level(backend, levels, model, feeds, exact=True)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])
    assert np.unique(ref[0]).size > 1  # the table, not one value


# ------------------------------------------------------------------------------------------------ int8 MAX_POOL_2D
# channel counts the 32-lane loop leaves over: 16 and 8 lanes, then the scalar tail (U-Net / BlazeFace pools).
@pytest.mark.parametrize("c", [8, 16, 24, 40, 56, 5])
def test_max_pool_int8_narrow_channels_equals_portable_and_tflm(backend, levels, c):
    rng = np.random.default_rng(c)
    q = (0.05, -7)
    model = op_model("MAX_POOL_2D", [T((1, 9, 8, c), "INT8", *q)], [T((1, 5, 4, c), "INT8", *q)],
                     options={"padding": "SAME", "stride_w": 2, "stride_h": 2, "filter_width": 2, "filter_height": 2,
                              "fused_activation_function": "RELU" if c == 24 else "NONE"})
    feeds = [rng.integers(-128, 128, (1, 9, 8, c), dtype=np.int8)]
    ref = _every_level(backend, levels, model, feeds, exact=True)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])


# ------------------------------------------------------------------------------------------------ SOFTMAX int8
# at a fast-path level the 256 exps are tabulated once at prepare (not per invoke, not per element for short rows)
@pytest.mark.parametrize("rows, depth, beta, out", [(1, 1000, 1.0, "INT8"), (3, 10, 1.0, "INT8"),
                                                     (2, 300, 0.7, "INT16"), (1, 2, 3.0, "INT8")])
def test_softmax_int8_exp_table_at_prepare_equals_portable_and_tflm(backend, levels, rows, depth, beta, out):
    rng = np.random.default_rng(depth)
    y = T((rows, depth), "INT8", 1 / 256, -128) if out == "INT8" else T((rows, depth), "INT16", 1 / 65536, -32768)
    model = op_model("SOFTMAX", [T((rows, depth), "INT8", 0.1, 5)], [y], options={"beta": beta})
    feeds = [rng.integers(-128, 128, (rows, depth), dtype=np.int8)]
    ref = _every_level(backend, levels, model, feeds, exact=True)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])
    assert np.unique(ref[0]).size > 1


# ------------------------------------------------------------------------------------------------ aarch64 (qemu-user)
# The NEON twins of the paths above (src/simd/edge_simd_dw_arm.c), run by firmware_c built for aarch64 under
# qemu-user at both levels (-cpu cortex-a53: NEON, a Pi 3 / 4 core; -cpu max: SDOT) and at level 0
# (EDGE_SIMD_LEVEL=0, the portable kernels). qemu's timings mean nothing, and a bit-exact path leaves no trace in
# its output: EDGE_SIMD_PATHS=1 makes the runner print how often each path ran, so each case asserts that its path
# was taken (and never at level 0).
def _paths(stderr):
    line = [ln for ln in stderr.splitlines() if ln.startswith("edge-simd-paths ")]
    assert len(line) == 1, stderr[-2000:]
    return {k: int(v) for k, v in (kv.split("=") for kv in line[0].split()[1:])}


def _run_paths(cmd, path, feeds, tmp):
    import subprocess

    inp, outp = tmp / "in.bin", tmp / "out.bin"
    inp.write_bytes(b"".join(np.ascontiguousarray(x).tobytes() for x in feeds))
    outp.unlink(missing_ok=True)
    proc = subprocess.run([*cmd, str(path), str(inp), str(outp)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return outp.read_bytes(), _paths(proc.stderr)


def _neon_cases():
    """(name, model, feeds, the path it must take or None, how its bytes compare): int8 cases first (issue 26's
    priority order). True: the portable kernel's bytes; False: within 1e-5 of its range; "avx2": the x86-64 host
    build's bytes at level 1 (AVX2: edge_simd_dw_f32's FMAs in the order every fast path runs them) and within 1e-5 of
    the portable kernel."""
    rng = np.random.default_rng(26900)
    cases = []
    for case, k in ((0, 3), (2, 5), (3, 3), (5, 5), (6, 3), (7, 3)):  # c 96, 17, 33, 16, 31, 65: partial tiles
        model, feeds, _ = _dw_q8_case(case, k)
        cases.append((f"dw_q8 {DW3_CASES[case]} k{k}", model, feeds, "dw_q8", True))
    model, feeds, _ = _dw_q8_case(4, 3)  # one channel: below a tile, the per-pixel path
    cases.append(("dw_q8 c1", model, feeds, None, True))
    a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
    every = [a.astype(np.int8).reshape(1, 256, 256, 1), b.astype(np.int8).reshape(1, 256, 256, 1)]
    for op, sc, zps in (("ADD", (0.05, 0.07, 0.1), (-3, 17, 5)), ("SUB", (0.1, 0.1, 0.2), (101, -128, -40)),
                        ("ADD", (0.5, 0.00001, 0.3), (127, -128, 0))):
        ts = [T((1, 256, 256, 1), "INT8", s, z) for s, z in zip(sc, zps)]
        cases.append((f"{op} every pair {sc}", op_model(op, ts[:2], ts[2:]), every, "addsub_q8", True))
    for ratio in (1 / 0.7, 600.0, 3e-10):
        ts = [T((1, 256, 256, 1), "INT8", s, z) for s, z in zip((0.5, 0.3, 0.15 / ratio), (127, -128, -40))]
        cases.append((f"MUL every pair {ratio}", op_model("MUL", ts[:2], ts[2:]), every, "mul_q8", True))
    for op, sa, sb in (("ADD", (1, 7, 11, 19), (19,)), ("SUB", (1,), (1, 7, 11, 19)), ("MUL", (1, 7, 11, 19), (1,)),
                       ("MUL", (1, 7, 1, 19), (1, 7, 11, 19))):
        ins = [T(sa, "INT8", 0.05, -3), T(sb, "INT8", 0.07, 11)]
        out = T(np.broadcast_shapes(sa, sb), "INT8", 0.004 if op == "MUL" else 0.09, 5)
        model = op_model(op, ins, [out], options={"fused_activation_function": "RELU"})
        cases.append((f"{op} broadcast {sa} {sb}", model, [rng.integers(-128, 128, s, dtype=np.int8) for s in (sa, sb)],
                      "mul_q8" if op == "MUL" else "addsub_q8", True))
    axes = T((2,), "INT32", data=np.array([1, 2], np.int32))
    for op, c, ratio in (("MEAN", 33, 0.7), ("MEAN", 1280, 40.0), ("SUM", 17, 1 / 300.0), ("MEAN", 300, 3e-11)):
        shape = (2, 5, 3, c)
        ys = 0.05 * (15 if op == "SUM" else 1) / ratio
        model = op_model(op, [T(shape, "INT8", 0.05, -128), axes], [T((2, 1, 1, c), "INT8", ys, 127)],
                         options={"keep_dims": True})
        feeds = [rng.integers(-128, 128, shape, dtype=np.int8)]
        cases.append((f"{op} int8 c{c} ratio {ratio}", model, feeds, "sum_q8", True))
        if ratio != 3e-11:  # a right shift past 31: the caller's scalar loop
            cases.append((f"{op} int8 c{c} ratio {ratio} outputs", model, feeds, "rq_sums_q8", True))
    for op, shape in (("MEAN", (2, 9, 7, 70)), ("SUM", (1, 5, 6, 3)), ("MEAN", (1, 3, 3, 21))):
        model = op_model(op, [F(shape), axes], [F((shape[0], shape[3]))], options={"keep_dims": False})
        cases.append((f"{op} f32 {shape}", model, [(5 + rng.standard_normal(shape)).astype(np.float32)], "sum_f32",
                      True))
    for seed in (1, 2, 5, 8):  # RESIZE_BILINEAR int8 / float32, channels 1 .. 64, every mode
        r = np.random.default_rng(26300 + seed)
        model, feeds = _resize_case(r, seed, "int8")
        cases.append((f"resize int8 seed {seed}", model, feeds, "resize_q8", True))
        r = np.random.default_rng(26400 + seed)
        model, feeds = _resize_case(r, seed, "float32")
        cases.append((f"resize f32 seed {seed}", model, feeds, "resize_f32", True))
    for case, k in ((0, 3), (1, 3), (2, 5), (3, 5), (5, 3), (7, 5)):  # c 96, 96, 17, 33, 16, 65
        model, feeds = _dw_f32_case(case, k)
        cases.append((f"dw_f32 {DW3_CASES[case]} k{k}", model, feeds, "dw_f32", "avx2"))
    model, feeds = _dw_f32_case(4, 5)  # one channel: below a tile, edge_simd_dw_f32
    cases.append(("dw_f32 c1", model, feeds, None, "avx2"))
    for depth, beta in ((37, 1.0), (1001, 0.5), (3, 2.5)):
        x = (rng.standard_normal((3, depth)) * 5).astype(np.float32)
        model = op_model("SOFTMAX", [F((3, depth))], [F((3, depth))], options={"beta": beta})
        cases.append((f"softmax f32 {depth}", model, [x], "softmax_f32", False))
    return cases


@pytest.fixture(scope="module")
def arm64_runner():
    from tests.simd_common import aarch64_build

    return aarch64_build()


@pytest.mark.slow
def test_aarch64_neon_twins_taken_and_equal_portable(backend, arm64_runner, tmp_path):
    """Every NEON twin (int8 DEPTHWISE 3x3 / 5x5, ADD / SUB / MUL int8 on 16 lanes, MEAN / SUM sums and outputs,
    RESIZE_BILINEAR int8 / float32, float32 DEPTHWISE 3x3 / 5x5, SOFTMAX float32) is taken at both aarch64 levels
    and gives the portable kernel's bytes (float DEPTHWISE: x86-64 AVX2's, the fast paths' FMAs in their order;
    SOFTMAX: within 1e-5 of the range, the exp polynomial); level 0 takes none of them. An int8 ADD / MUL of every pair of values covers every rounding boundary of the SSRA + SRSHL shifts."""
    from tests.test_c_cross import HOST_RUNNER

    qemu, sysroot, runner = arm64_runner
    for i, (name, model, feeds, path_name, exact) in enumerate(_neon_cases()):
        path = tmp_path / f"m{i}.tflite"
        path.write_bytes(model)
        base = [qemu, "-E", "EDGE_SIMD_PATHS=1", "-L", sysroot]
        ref, plain = _run_paths([*base[:1], "-cpu", "cortex-a53", "-E", "EDGE_SIMD_LEVEL=0", *base[1:], str(runner)],
                                path, feeds, tmp_path)
        assert not any(plain.values()), f"{name}: level 0 took a fast path {plain}"
        want = ref
        if exact == "avx2":
            want, _ = _run_paths(["env", "EDGE_SIMD_LEVEL=1", "EDGE_SIMD_PATHS=1", str(HOST_RUNNER)], path, feeds,
                                 tmp_path)
        for cpu in ("cortex-a53", "max"):
            got, counts = _run_paths([*base[:1], "-cpu", cpu, *base[1:], str(runner)], path, feeds, tmp_path)
            if path_name:
                assert counts[path_name] > 0, f"{name} -cpu {cpu}: {path_name} not taken {counts}"
            else:
                assert not any(counts.values()), f"{name} -cpu {cpu}: {counts}"
            if exact is not False:
                what = "x86-64 AVX2" if exact == "avx2" else "portable kernel's"
                assert got == want, f"{name} -cpu {cpu}: differs from the {what} bytes"
            if exact is not True:
                g, r = np.frombuffer(got, np.float32), np.frombuffer(ref, np.float32)
                assert_close_of_range(g, r, f"{name} -cpu {cpu} vs the portable kernel", 1e-5)
