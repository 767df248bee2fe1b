"""The C runtime's float32 fast paths (firmware_c/src/simd/edge_simd_f32_*.c): at every SIMD level this CPU has
(edge_simd_set caps the level picked at prepare) CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and BATCH_MATMUL
give the portable kernels' values (level 0) within float rounding — the fast paths fuse each multiply-add (FMA), the
portable loops round twice, so the bits may differ: held to 1e-5 of the output's range — on random shapes (odd
channel counts, padding, strides, dilations, every fused activation, bias or none, constant weights or weights
computed at run time), the same bits for any thread count, and LiteRT's reference kernels' values within 1e-5 of
the output's range on the float models in ../shared.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import shared_model
from tests.oprunner import T, op_model
from tests.peers import run_litert
from tests.conftest import needs_c_runtime
from tests.simd_common import levels  # noqa: F401 (a fixture; backend: tests/conftest.py)
from tests.simd_common import assert_close_of_range, aarch64_build, run_at_level

pytestmark = needs_c_runtime

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


_run = run_at_level


def _at_every_level(backend, levels, model, feeds):
    """The portable kernel's outputs, after checking that every SIMD level is within rounding of them."""
    lib, lv = levels
    ref = _run(backend, lib, 0, model, feeds)
    for level in lv:
        for r, g in zip(ref, _run(backend, lib, level, model, feeds)):
            assert_close_of_range(g, r, f"SIMD level {level} vs the portable kernel")
    return ref


def _out(padding, stride, dil, size, k):
    eff = (k - 1) * dil + 1
    return (size + stride - 1) // stride if padding == "SAME" else (size + stride - eff) // stride


def F(shape, data=None):
    return T(shape, "FLOAT32", data=None if data is None else np.asarray(data, np.float32))


def _conv_case(rng, depthwise=False, runtime_weights=False):
    """A random float conv / depthwise layer; runtime_weights: the filter and bias are model inputs (as the
    outputs of a DEQUANTIZE are: packed at every invoke)."""
    kh, kw = (int(v) for v in rng.choice([1, 1, 2, 3, 3, 5], 2))
    sh, sw = (int(v) for v in rng.choice([1, 1, 2, 3], 2))
    dh, dw = (int(v) for v in rng.choice([1, 1, 2], 2)) if rng.random() < 0.3 else (1, 1)
    padding = str(rng.choice(["SAME", "VALID"]))
    h = int(rng.integers((kh - 1) * dh + 1, 14))
    w = int(rng.integers((kw - 1) * dw + 1, 14))
    n = int(rng.choice([1, 1, 2]))
    c = int(rng.choice([1, 3, 4, 5, 8, 9, 16, 17, 31, 33, 64, 70]))
    o = c if depthwise else int(rng.choice([1, 2, 7, 8, 15, 16, 17, 32, 33, 40, 64, 65]))
    oh, ow = _out(padding, sh, dh, h, kh), _out(padding, sw, dw, w, kw)
    wshape = (1, kh, kw, o) if depthwise else (o, kh, kw, c)
    wdata = rng.standard_normal(wshape).astype(np.float32)
    bdata = rng.standard_normal(o).astype(np.float32)
    has_bias = rng.random() < 0.8
    if runtime_weights:
        wt, b = F(wshape), (F((o,)) if has_bias else None)
    else:
        wt, b = F(wshape, wdata), (F((o,), bdata) if has_bias else None)
    opts = {"padding": padding, "stride_h": sh, "stride_w": sw, "dilation_h_factor": dh, "dilation_w_factor": dw,
            "fused_activation_function": str(rng.choice(ACTS))}
    if depthwise:
        opts["depth_multiplier"] = 1
    op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    model = op_model(op, [F((n, h, w, c)), wt, b], [F((n, oh, ow, o))], options=opts, version=1)
    feeds = [rng.uniform(-2, 2, (n, h, w, c)).astype(np.float32)]
    if runtime_weights:
        feeds += [wdata] + ([bdata] if has_bias else [])
    return model, feeds


@pytest.mark.parametrize("seed", range(30))
def test_conv_2d_f32_simd_close_to_portable(backend, levels, seed):
    rng = np.random.default_rng(11000 + seed)
    model, feeds = _conv_case(rng, runtime_weights=seed % 5 == 4)
    _at_every_level(backend, levels, model, feeds)


@pytest.mark.parametrize("seed", range(30))
def test_depthwise_f32_simd_close_to_portable(backend, levels, seed):
    rng = np.random.default_rng(12000 + seed)
    model, feeds = _conv_case(rng, depthwise=True, runtime_weights=seed % 5 == 4)
    _at_every_level(backend, levels, model, feeds)


@pytest.mark.parametrize("k,stride,c,pad", [(3, 1, 32, "SAME"), (3, 2, 20, "SAME"), (3, 1, 13, "VALID"),
                                             (5, 1, 24, "SAME"), (5, 2, 7, "VALID"), (3, 2, 64, "VALID")])
def test_depthwise_f32_mobilenet_shapes(backend, levels, k, stride, c, pad):
    """The layers MobileNet-class float models are made of (whole 3x3 / 5x5 windows along most of each row)."""
    rng = np.random.default_rng(k * 1000 + stride * 100 + c)
    h, w = 17, 22
    oh, ow = _out(pad, stride, 1, h, k), _out(pad, stride, 1, w, k)
    model = op_model("DEPTHWISE_CONV_2D", [F((1, h, w, c)), F((1, k, k, c), rng.standard_normal((1, k, k, c))),
                                           F((c,), rng.standard_normal(c))], [F((1, oh, ow, c))],
                     options={"padding": pad, "stride_h": stride, "stride_w": stride, "dilation_h_factor": 1,
                              "dilation_w_factor": 1, "depth_multiplier": 1, "fused_activation_function": "RELU6"},
                     version=1)
    feeds = [rng.uniform(-2, 2, (1, h, w, c)).astype(np.float32)]
    ref = _at_every_level(backend, levels, model, feeds)
    assert_close_of_range(ref[0], run_litert(model, feeds)[0], "portable vs LiteRT reference")


@pytest.mark.parametrize("seed", range(16))
def test_fully_connected_f32_simd_close_to_portable(backend, levels, seed):
    rng = np.random.default_rng(13000 + seed)
    batch = int(rng.choice([1, 1, 2, 3, 5, 7, 9, 13]))
    depth = int(rng.choice([1, 3, 8, 15, 16, 64, 100, 257]))
    units = int(rng.choice([1, 2, 10, 16, 17, 33, 48, 65, 128]))
    wdata = rng.standard_normal((units, depth)).astype(np.float32)
    bdata = rng.standard_normal(units).astype(np.float32) if rng.random() < 0.8 else None
    runtime = seed % 4 == 3
    wt = F((units, depth)) if runtime else F((units, depth), wdata)
    b = None if bdata is None else (F((units,)) if runtime else F((units,), bdata))
    model = op_model("FULLY_CONNECTED", [F((batch, depth)), wt, b], [F((batch, units))],
                     options={"fused_activation_function": str(rng.choice(ACTS))})
    feeds = [rng.uniform(-1, 1, (batch, depth)).astype(np.float32)]
    if runtime:
        feeds += [wdata] + ([] if bdata is None else [bdata])
    ref = _at_every_level(backend, levels, model, feeds)
    assert_close_of_range(ref[0], run_litert(model, feeds)[0], "portable vs LiteRT reference")


@pytest.mark.parametrize("seed", range(12))
def test_batch_matmul_f32_simd_close_to_portable(backend, levels, seed):
    """Constant rhs (packed once per distinct matrix, batch dims broadcast) or a run-time one (packed per
    product), adj_x / adj_y."""
    rng = np.random.default_rng(14000 + seed)
    rows, depth, cols = (int(rng.choice(v)) for v in ([1, 2, 7, 8, 13, 30], [1, 5, 16, 33, 64], [1, 3, 16, 17, 40]))
    adj_x, adj_y = bool(seed & 1), bool(seed & 2)
    lb = [int(v) for v in rng.choice([1, 2, 3], int(rng.integers(0, 3)))]
    rb = [int(rng.choice([1, v])) for v in lb]
    lshape = (*lb, depth, rows) if adj_x else (*lb, rows, depth)
    rshape = (*rb, cols, depth) if adj_y else (*rb, depth, cols)
    rdata = rng.standard_normal(rshape).astype(np.float32)
    const = seed % 3 != 2
    out_shape = (*lb, rows, cols)
    model = op_model("BATCH_MATMUL", [F(lshape), F(rshape, rdata) if const else F(rshape)], [F(out_shape)],
                     options={"adj_x": adj_x, "adj_y": adj_y})
    feeds = [rng.uniform(-1, 1, lshape).astype(np.float32)] + ([] if const else [rdata])
    ref = _at_every_level(backend, levels, model, feeds)
    want = np.matmul(np.swapaxes(feeds[0], -1, -2) if adj_x else feeds[0],
                     np.swapaxes(rdata, -1, -2) if adj_y else rdata)
    assert_close_of_range(ref[0], want.astype(np.float32), "portable vs numpy")


@pytest.mark.parametrize("seed", range(8))
def test_prelu_f32_simd_same_bits_as_portable(backend, levels, seed):
    """float PRELU rows (alpha per channel, per pixel, one value, or the whole shape; NaN and -0 inputs): one
    multiply per negative element at every level, so the same bits as the portable kernel."""
    rng = np.random.default_rng(17000 + seed)
    shape = (1, int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.choice([1, 3, 8, 17, 32, 33])))
    ashape = [shape[1:], (1, 1, shape[3]), (1,), (shape[3],)][seed % 4]
    _prelu_same_bits_at_every_level(backend, levels, rng, shape, ashape, nan_step=7, zeros=slice(3, None, 11))


def _prelu_same_bits_at_every_level(backend, levels, rng, shape, ashape, nan_step: int, zeros: slice) -> None:
    """float PRELU of ``shape`` with slopes of ``ashape`` on inputs with NaN every ``nan_step`` and -0.0 at
    ``zeros``: every SIMD level gives the portable kernel's bits, and the portable kernel LiteRT's values."""
    model = op_model("PRELU", [F(shape), F(ashape, rng.uniform(-1, 1, ashape))], [F(shape)])
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    x.reshape(-1)[::nan_step] = np.nan
    x.reshape(-1)[zeros] = -0.0
    lib, lv = levels
    ref = _run(backend, lib, 0, model, [x])[0]
    for level in lv:
        np.testing.assert_array_equal(_run(backend, lib, level, model, [x])[0].view(np.uint32), ref.view(np.uint32),
                                      err_msg=f"SIMD level {level}")
    np.testing.assert_array_equal(ref, run_litert(model, [x])[0])


@pytest.mark.parametrize("seed", range(12))
def test_add_sub_mul_f32_simd_same_bits_as_portable(backend, levels, seed):
    """float ADD / SUB / MUL, same shapes or broadcast (a row, a scalar, either side), every activation, NaN and inf
    inputs: one rounding and the clamp at every level, the same bits as the portable rows (and LiteRT's values on
    finite and NaN inputs)."""
    rng = np.random.default_rng(18000 + seed)
    op = ["ADD", "SUB", "MUL"][seed % 3]
    shape = (1, int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.choice([1, 3, 8, 17, 33])))
    other = [shape, (shape[3],), (1,), (1, shape[1], 1, 1)][(seed // 3) % 4]
    shapes = (shape, other) if seed % 2 == 0 else (other, shape)
    model = op_model(op, [F(shapes[0]), F(shapes[1])], [F(shape)],
                     options={"fused_activation_function": str(rng.choice(ACTS))})
    feeds = [rng.uniform(-3, 3, sh).astype(np.float32) for sh in shapes]
    feeds[0].reshape(-1)[::5] = np.nan
    lib, lv = levels
    np.testing.assert_array_equal(_run(backend, lib, 0, model, feeds)[0], run_litert(model, feeds)[0])
    feeds[1].reshape(-1)[1::7] = np.inf  # (LiteRT clamps an unbounded float activation to +-FLT_MAX: not compared)
    ref = _run(backend, lib, 0, model, feeds)[0]
    for level in lv:
        np.testing.assert_array_equal(_run(backend, lib, level, model, feeds)[0].view(np.uint32), ref.view(np.uint32),
                                      err_msg=f"SIMD level {level}")


def test_dequantize_float16_simd_same_bits_as_portable(backend, levels):
    """Every float16 bit pattern (subnormals, infinities, quiet and signaling NaNs with their payloads) widens to
    the portable kernel's bits at every level."""
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    rng = np.random.default_rng(4)
    h = np.concatenate([h, rng.permutation(h)[:1001]])  # odd length: the tail too
    model = op_model("DEQUANTIZE", [T(h.shape, "FLOAT16", data=h.view(np.float16))], [F(h.shape)])
    lib, lv = levels
    ref = _run(backend, lib, 0, model, [])[0]
    np.testing.assert_array_equal(ref[:65536][np.isfinite(ref[:65536])],
                                  h[:65536].view(np.float16).astype(np.float32)[np.isfinite(ref[:65536])])
    for level in lv:
        np.testing.assert_array_equal(_run(backend, lib, level, model, [])[0].view(np.uint32), ref.view(np.uint32),
                                      err_msg=f"SIMD level {level}")


def test_nan_and_inf_pass_like_the_portable_kernels(backend, levels):
    """A NaN or an infinity in the input reaches the outputs it feeds at every level, with any activation."""
    rng = np.random.default_rng(3)
    for act in ACTS:
        wt = F((8, 3, 3, 5), rng.standard_normal((8, 3, 3, 5)))
        model = op_model("CONV_2D", [F((1, 6, 6, 5)), wt, F((8,), np.zeros(8))], [F((1, 6, 6, 8))],
                         options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                                  "dilation_w_factor": 1, "fused_activation_function": act}, version=1)
        x = rng.uniform(-1, 1, (1, 6, 6, 5)).astype(np.float32)
        x[0, 2, 3, 1] = np.nan
        x[0, 5, 0, 4] = np.inf
        lib, lv = levels
        ref = _run(backend, lib, 0, model, [x])[0]
        for level in lv:
            got = _run(backend, lib, level, model, [x])[0]
            np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=f"NaNs at level {level}, {act}")
            fin = np.isfinite(ref)
            np.testing.assert_array_equal(got[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)])
            assert_close_of_range(np.where(fin, got, 0), np.where(fin, ref, 0), f"level {level} {act}")


def _special_values(rng, n):
    """n float32 inputs: uniform in [-12, 12], the activations' corners (0, -0, -+1, -+3, -+6 and their
    neighbours), NaN, -+inf, large magnitudes and subnormals."""
    x = rng.uniform(-12, 12, n).astype(np.float32)
    corners = np.array([0.0, -0.0, 1, -1, 3, -3, 6, -6, np.nan, np.inf, -np.inf, 3e38, -3e38, 1e-40, -1e-40], np.float32)
    corners = np.concatenate([corners, np.nextafter(corners[2:8], np.float32(np.inf)),
                              np.nextafter(corners[2:8], np.float32(-np.inf))])
    x[rng.choice(n, min(n, corners.size), replace=False)] = corners[: min(n, corners.size)]
    return x


def _same_bits_at_every_level(backend, levels, model, feeds):
    lib, lv = levels
    ref = _run(backend, lib, 0, model, feeds)
    for level in lv:
        for r, g in zip(ref, _run(backend, lib, level, model, feeds)):
            np.testing.assert_array_equal(g.view(np.uint32), r.view(np.uint32), err_msg=f"SIMD level {level}")
    return ref


@pytest.mark.parametrize("op,opts", [("RELU", None), ("RELU6", None), ("RELU_N1_TO_1", None),
                                     ("LEAKY_RELU", {"alpha": 0.2}), ("LEAKY_RELU", {"alpha": -1.5}),
                                     ("HARD_SWISH", None)])
@pytest.mark.parametrize("n", [1, 7, 8, 33, 1000])
def test_activations_f32_simd_same_bits_as_portable(backend, levels, op, opts, n):
    """float RELU / RELU6 / RELU_N1_TO_1 / LEAKY_RELU / HARD_SWISH: the portable loop's compares and roundings lane
    by lane (NaN, -0, infinities, the corners, odd tails): the same bits at every level, and LiteRT's reference
    values on finite inputs."""
    rng = np.random.default_rng(19000 + n)
    model = op_model(op, [F((1, n))], [F((1, n))], options=opts)
    x = _special_values(rng, n)[None]
    _same_bits_at_every_level(backend, levels, model, [x])
    fin = np.isfinite(x) & (np.abs(x) < 1e38)
    xf = np.where(fin, x, np.float32(0.5))
    np.testing.assert_allclose(_run(backend, levels[0], 0, model, [xf])[0], run_litert(model, [xf])[0],
                               rtol=1e-6, atol=1e-7)


def _dense_grid():
    """Every 4099th float32 of magnitude below 120 (both signs: tiny to large, ~1M values), a fine uniform grid
    over [-20, 20], and NaN, infinities, -0, subnormals, beyond-range values."""
    mags = np.arange(0, np.float32(120).view(np.uint32), 4099, dtype=np.uint32).view(np.float32)
    return np.concatenate([mags, -mags, np.linspace(-20, 20, 200001, dtype=np.float32),
                           np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45, -1e-45, 1e30, -1e30, -87.0, -87.01,
                                     16.619047, 16.619049, -9.0, -9.000001, 0.625, -0.625, 0.62499994],
                                    np.float32)])[None]


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_logistic_tanh_f32_simd_within_1e6_relative_of_portable(backend, levels, op):
    """The vectorized exp / tanh against the portable kernel (exp / tanh in double) over a dense grid including
    large |x|, the cut-offs and NaN / inf: within 1e-6 relative, exactly where the portable result is 0, +-1, NaN or
    infinite; then within 1e-6 relative of LiteRT's reference kernel on a random tensor."""
    x = _dense_grid()
    x[0, 5::1013] = np.nan  # NaNs beside ordinary lanes: each lane its own result
    model = op_model(op, [F(x.shape)], [F(x.shape)])
    lib, lv = levels
    ref = _run(backend, lib, 0, model, [x])[0]
    assert np.isnan(ref[np.isnan(x)]).all()
    for level in lv:
        got = _run(backend, lib, level, model, [x])[0]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=f"NaNs at level {level}")
        ok = ~np.isnan(ref)
        g, r = got[ok].astype(np.float64), ref[ok].astype(np.float64)
        rel = np.abs(g - r) / np.maximum(np.abs(r), 1e-300)
        worst = int(np.argmax(rel))
        assert rel[worst] <= 1e-6, f"level {level}: {op}({x[0][ok][worst]!r}) = {g[worst]!r}, portable {r[worst]!r}"
        exact = (r == 0) | (np.abs(r) == 1) | np.isinf(r)
        np.testing.assert_array_equal(got[ok][exact].view(np.uint32), ref[ok][exact].view(np.uint32),
                                      err_msg=f"level {level}: zeros (their signs), +-1, infinities")
        # the in-place plan (the output may overwrite the input in place): the same bits
        np.testing.assert_array_equal(_run(backend, lib, level, model, [x], memory="inplace")[0].view(np.uint32),
                                      got.view(np.uint32), err_msg=f"level {level}, memory='inplace'")
    rng = np.random.default_rng(20000)
    xs = (rng.standard_normal((2, 9, 11, 13)) * 4).astype(np.float32)
    small = op_model(op, [F(xs.shape)], [F(xs.shape)])
    want = run_litert(small, [xs])[0].astype(np.float64)
    for level in [0, *lv]:
        got = _run(backend, lib, level, small, [xs])[0]
        assert np.max(np.abs(got - want) / np.abs(want)) <= 1e-6, f"level {level} vs LiteRT reference"


@pytest.mark.parametrize("seed", range(16))
def test_pool_f32_simd_same_bits_as_portable(backend, levels, seed):
    """float AVERAGE_POOL_2D / MAX_POOL_2D (windows cut by SAME padding, strides, channel counts around the vector
    widths, every fused activation, NaN / inf / -0 cells): the portable pool's sum order and compares, the same bits
    at every level, and LiteRT's reference values on finite inputs."""
    rng = np.random.default_rng(21000 + seed)
    op = ["AVERAGE_POOL_2D", "MAX_POOL_2D"][seed % 2]
    fh, fw = (int(v) for v in rng.choice([1, 2, 3, 5], 2))
    sh, sw = (int(v) for v in rng.choice([1, 2, 3], 2))
    padding = str(rng.choice(["SAME", "VALID"]))
    h, w = int(rng.integers(fh, 12)), int(rng.integers(fw, 12))
    n, c = int(rng.choice([1, 2])), int(rng.choice([1, 3, 4, 8, 13, 16, 31, 32, 33, 40, 64, 67]))
    oh, ow = _out(padding, sh, 1, h, fh), _out(padding, sw, 1, w, fw)
    model = op_model(op, [F((n, h, w, c))], [F((n, oh, ow, c))],
                     options={"padding": padding, "stride_h": sh, "stride_w": sw, "filter_height": fh,
                              "filter_width": fw, "fused_activation_function": str(rng.choice(ACTS))})
    x = rng.uniform(-3, 3, (n, h, w, c)).astype(np.float32)
    _same_bits_at_every_level(backend, levels, model, [x])
    np.testing.assert_allclose(_run(backend, levels[0], 0, model, [x])[0], run_litert(model, [x])[0],
                               rtol=1e-6, atol=1e-6)
    x.reshape(-1)[:: 13] = np.nan
    x.reshape(-1)[5:: 17] = -0.0
    x.reshape(-1)[7:: 29] = np.inf
    x.reshape(-1)[3:: 31] = -np.inf
    _same_bits_at_every_level(backend, levels, model, [x])


@pytest.mark.parametrize("seed", range(8))
def test_mean_sum_over_hw_f32_simd_same_bits_as_portable(backend, levels, seed):
    """float MEAN / SUM of NHWC over H and W (keep_dims or not, axes as given or negative, channel counts around the
    vector widths, NaN / inf / -0): each channel's sum in double in pixel order, the same bits at every level; other
    axes keep the portable loop (checked too); LiteRT's reference values on finite inputs."""
    rng = np.random.default_rng(22000 + seed)
    op = ["MEAN", "SUM"][seed % 2]
    n, h, w = int(rng.choice([1, 2])), int(rng.integers(1, 14)), int(rng.integers(1, 14))
    c = [4, 15, 16, 17, 8, 33, 64, 3][seed]  # every block width of both architectures and their tails
    keep = bool(seed % 4 < 2)
    axes = [[1, 2], [-3, -2], [2, 1], [1, 3]][seed % 4 if seed < 4 else (seed - 4) % 3]
    kept = [d for i, d in enumerate((n, h, w, c)) if i not in {a % 4 for a in axes}]
    oshape = tuple(1 if i in {a % 4 for a in axes} else d for i, d in enumerate((n, h, w, c))) if keep else tuple(kept)
    model = op_model(op, [F((n, h, w, c)), T((len(axes),), "INT32", data=np.array(axes, np.int32))], [F(oshape)],
                     options={"keep_dims": keep})
    x = rng.uniform(-3, 3, (n, h, w, c)).astype(np.float32)
    ref = _same_bits_at_every_level(backend, levels, model, [x])
    np.testing.assert_allclose(ref[0], run_litert(model, [x])[0], rtol=1e-5, atol=1e-6)
    x.reshape(-1)[:: 37] = np.nan
    x.reshape(-1)[3:: 41] = np.inf
    x.reshape(-1)[5:: 11] = -0.0
    _same_bits_at_every_level(backend, levels, model, [x])


def _threaded(backend, model, feeds, threads):
    c = backend.CInterpreter(model_content=model, num_threads=threads)
    c.allocate_tensors()
    for d, x in zip(c.get_input_details(), feeds):
        c.set_tensor(d["index"], x)
    c.invoke()
    return [np.array(c.get_tensor(d["index"])) for d in c.get_output_details()]


@pytest.mark.parametrize("kind", ["conv3x3", "conv1x1s2", "depthwise", "fc", "fc_batch", "bmm"])
def test_f32_threads_give_the_same_bits(backend, levels, kind):
    """Large float layers split across 2, 3 and 7 threads: the bits of one thread (k is never split)."""
    rng = np.random.default_rng(hash(kind) % 1000)
    conv = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1, "dilation_w_factor": 1}
    if kind.startswith("conv"):
        k, s = (3, 1) if kind == "conv3x3" else (1, 2)
        wt = F((48, k, k, 40), rng.standard_normal((48, k, k, 40)))
        model = op_model("CONV_2D", [F((1, 37, 29, 40)), wt, F((48,), rng.standard_normal(48))],
                         [F((1, (37 + s - 1) // s, (29 + s - 1) // s, 48))],
                         options={**conv, "stride_h": s, "stride_w": s}, version=1)
        feeds = [rng.standard_normal((1, 37, 29, 40)).astype(np.float32)]
    elif kind == "depthwise":
        wt = F((1, 3, 3, 96), rng.standard_normal((1, 3, 3, 96)))
        model = op_model("DEPTHWISE_CONV_2D", [F((1, 37, 29, 96)), wt, None], [F((1, 37, 29, 96))],
                         options={**conv, "depth_multiplier": 1}, version=1)
        feeds = [rng.standard_normal((1, 37, 29, 96)).astype(np.float32)]
    elif kind == "bmm":
        model = op_model("BATCH_MATMUL", [F((2, 70, 300)), F((300, 130), rng.standard_normal((300, 130)))],
                         [F((2, 70, 130))])
        feeds = [rng.standard_normal((2, 70, 300)).astype(np.float32)]
    else:
        batch = 1 if kind == "fc" else 33
        wt = F((257, 600), rng.standard_normal((257, 600)))
        model = op_model("FULLY_CONNECTED", [F((batch, 600)), wt, None], [F((batch, 257))])
        feeds = [rng.standard_normal((batch, 600)).astype(np.float32)]
    one = _threaded(backend, model, feeds, 1)
    lib, _ = levels
    for a, b in zip(one, _run(backend, lib, 0, model, feeds)):
        assert_close_of_range(a, b, "one thread vs the portable kernel")
    for n in (2, 3, 7):
        for a, b in zip(one, _threaded(backend, model, feeds, n)):
            np.testing.assert_array_equal(b, a, err_msg=f"{n} threads")


def test_f32_packed_weights_are_counted_in_the_arena(backend, levels):
    """The float GEMM's packed filter lives in the arena's persistent part: more arena than level 0, and exactly
    arena_used bytes are enough at that level (one byte less is refused). (A CPU without a fast path: level 0
    only, and nothing packed.)"""
    from edge_sdk.errors import ArenaTooSmallError

    lib, lv = levels
    top = lv[-1] if lv else 0
    rng = np.random.default_rng(12)
    wt = F((64, 3, 3, 32), rng.standard_normal((64, 3, 3, 32)))
    model = op_model("CONV_2D", [F((1, 10, 10, 32)), wt, None], [F((1, 10, 10, 64))],
                     options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                              "dilation_w_factor": 1}, version=1)
    used, persistent = {}, {}
    for level in sorted({0, top}):
        lib.edge_simd_set(level)
        try:
            it = backend.CInterpreter(model_content=model)
            it.allocate_tensors()
            info = it.plan_info()
            used[level] = max(info["arena_used"], info["high_water"])
            persistent[level] = info["persistent"]
            backend.CInterpreter(model_content=model, arena_size=used[level]).allocate_tensors()
            with pytest.raises(ArenaTooSmallError):
                backend.CInterpreter(model_content=model, arena_size=used[level] - 1).allocate_tensors()
        finally:
            lib.edge_simd_set(-1)
    assert persistent[0] < 4 * 64 * 3 * 3 * 32  # the portable kernel reads the model's filter in place
    if top:
        assert persistent[top] >= persistent[0] + 4 * 64 * 3 * 3 * 32 and used[top] > used[0]


@pytest.mark.parametrize("name", ["mediapipe/palm_detection_lite.tflite", "tflite-micro/hello_world_float.tflite"])
def test_real_float_models_close_to_litert_reference(backend, levels, name):
    """Every level within 1e-5 of LiteRT's reference kernels relative to each output's range (palm detection's
    weights are float16 behind DEQUANTIZE: widened once at prepare, then packed as float32 weights)."""
    path = shared_model(name)
    rng = np.random.default_rng(5)
    lib, lv = levels
    c = backend.CInterpreter(model_path=str(path))
    c.allocate_tensors()
    feeds = [rng.uniform(-1, 1, d["shape"]).astype(np.float32) for d in c.get_input_details()]
    want = run_litert(path.read_bytes(), feeds, isolate=True)
    for level in [0, *lv]:
        for i, (g, w) in enumerate(zip(_run(backend, lib, level, path, feeds), want)):
            assert_close_of_range(g, w, f"SIMD level {level} vs LiteRT reference on {name}, output {i}")


# ------------------------------------------------------------------------------------------------ aarch64 (qemu-user)

@pytest.fixture(scope="module")
def arm64_runner():
    """firmware_c built for aarch64 (make aarch64, under the cross builds' lock), run under qemu-user; skips where
    the cross tools are absent (as tests/test_c_simd.py's)."""
    return aarch64_build()


@pytest.mark.slow
def test_aarch64_neon_f32_gives_the_x86_bits(backend, arm64_runner, tmp_path):
    """The NEON float paths (qemu -cpu cortex-a53) run the same fused multiply-adds in the same order as AVX2: the
    same bits as the x86-64 host build (conv, depthwise, FC, BATCH_MATMUL, float16 DEQUANTIZE, PRELU, ADD / SUB /
    MUL, the RELU family, LEAKY_RELU, HARD_SWISH, LOGISTIC, TANH, AVERAGE / MAX_POOL_2D, MEAN over H, W); the portable aarch64 kernels (EDGE_SIMD_LEVEL=0) within rounding."""
    from tests.test_c_cross import HOST_RUNNER, _run as run_cmd

    qemu, sysroot, runner = arm64_runner
    models = []
    for seed in range(8):
        rng = np.random.default_rng(15000 + seed)
        models.append(_conv_case(rng, depthwise=seed % 2 == 1, runtime_weights=seed == 6))
    rng = np.random.default_rng(16000)
    models.append((op_model("FULLY_CONNECTED", [F((3, 300)), F((37, 300), rng.standard_normal((37, 300))), None],
                            [F((3, 37))]), [rng.standard_normal((3, 300)).astype(np.float32)]))
    models.append((op_model("FULLY_CONNECTED", [F((1, 200)), F((70, 200), rng.standard_normal((70, 200))), None],
                            [F((1, 70))]), [rng.standard_normal((1, 200)).astype(np.float32)]))
    models.append((op_model("BATCH_MATMUL", [F((2, 9, 20)), F((20, 19), rng.standard_normal((20, 19)))],
                            [F((2, 9, 19))]), [rng.standard_normal((2, 9, 20)).astype(np.float32)]))
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16)[::3]
    models.append((op_model("DEQUANTIZE", [T(h.shape, "FLOAT16", data=h.view(np.float16))], [F(h.shape)]), []))
    sh = (1, 5, 7, 19)
    x = rng.standard_normal(sh).astype(np.float32)
    x.reshape(-1)[::9] = np.nan
    models.append((op_model("PRELU", [F(sh), F((19,), rng.standard_normal(19))], [F(sh)]), [x]))
    for op, other in (("ADD", (19,)), ("SUB", sh), ("MUL", (1,))):
        models.append((op_model(op, [F(sh), F(other)], [F(sh)], options={"fused_activation_function": "RELU6"}),
                       [x, rng.standard_normal(other).astype(np.float32)]))
    for op, opts in (("RELU", None), ("RELU6", None), ("RELU_N1_TO_1", None), ("LEAKY_RELU", {"alpha": 0.3}),
                     ("HARD_SWISH", None)):
        models.append((op_model(op, [F(sh)], [F(sh)], options=opts), [x * 4]))
    grid = np.concatenate([np.linspace(-30, 30, 20001, dtype=np.float32), [np.nan, np.inf, -np.inf, -0.0, -100.0]])
    grid = grid.astype(np.float32)[None]
    for op in ("LOGISTIC", "TANH"):
        models.append((op_model(op, [F(grid.shape)], [F(grid.shape)]), [grid]))
    for op, (fh, fw, st, pad) in (("AVERAGE_POOL_2D", (3, 3, 1, "SAME")), ("MAX_POOL_2D", (3, 2, 2, "SAME")),
                                  ("AVERAGE_POOL_2D", (2, 2, 2, "VALID"))):
        px = rng.standard_normal((1, 7, 9, 37)).astype(np.float32)
        px.reshape(-1)[::23] = np.nan
        oh, ow = _out(pad, st, 1, 7, fh), _out(pad, st, 1, 9, fw)
        models.append((op_model(op, [F(px.shape)], [F((1, oh, ow, 37))],
                                options={"padding": pad, "stride_h": st, "stride_w": st, "filter_height": fh,
                                         "filter_width": fw, "fused_activation_function": "RELU6"}), [px]))
    mx = rng.standard_normal((2, 5, 6, 21)).astype(np.float32)
    models.append((op_model("MEAN", [F(mx.shape), T((2,), "INT32", data=np.array([1, 2], np.int32))], [F((2, 21))],
                            options={"keep_dims": False}), [mx]))
    for i, (model, feeds) in enumerate(models):
        path = tmp_path / f"m{i}.tflite"
        path.write_bytes(model)
        host = run_cmd([str(HOST_RUNNER)], path, feeds, tmp_path, 1)
        neon = run_cmd([qemu, "-cpu", "cortex-a53", "-L", sysroot, str(runner)], path, feeds, tmp_path, 1)
        assert neon == host, f"model {i}: aarch64 NEON differs from the x86-64 AVX2 bits"
        plain = run_cmd([qemu, "-cpu", "cortex-a53", "-E", "EDGE_SIMD_LEVEL=0", "-L", sysroot, str(runner)], path,
                        feeds, tmp_path, 1)
        p32, h32 = np.frombuffer(plain, np.float32), np.frombuffer(host, np.float32)
        fin = np.isfinite(h32)
        np.testing.assert_array_equal(p32[~fin], h32[~fin], err_msg=f"model {i}: NaNs / infinities")
        assert_close_of_range(np.where(fin, p32, 0), np.where(fin, h32, 0), f"model {i}: aarch64 portable vs SIMD")


# ------------------------------------------------------------------------------ the SGEMM levels (issue 26)
# (h, w, c, o, k, stride, padding, dilation, activation): M, K, N off the register tiles (AVX2 6 x 16, AVX-512
# 8 x 32: a lone last 16-column panel, partial panels, a last row tile of 1..7 rows), 1x1 stride 2 / padded.
SGEMM_SHAPES = [
    (7, 9, 70, 33, 1, 1, "VALID", 1, "RELU6"),    # 1x1 direct: M 63 (7 x 8 + 7), N 33 (a pair + one column)
    (12, 12, 96, 200, 1, 1, "VALID", 1, "NONE"),  # M 144, N 200 (six pairs + a lone partial panel)
    (24, 24, 16, 96, 1, 1, "SAME", 1, "RELU"),    # MobileNet's expansion shape, K 16
    (6, 6, 130, 17, 1, 2, "SAME", 1, "RELU6"),    # 1x1 stride 2: rows ow input pixels apart
    (5, 5, 9, 31, 1, 1, "SAME", 1, "RELU_N1_TO_1"),
    (9, 9, 3, 32, 3, 2, "SAME", 1, "RELU6"),      # K 27: the first layer of MobileNet
    (10, 11, 20, 40, 3, 1, "SAME", 2, "NONE"),    # dilation 2
    (8, 8, 16, 24, 5, 1, "VALID", 1, "RELU"),     # 5x5, K 400
    (17, 5, 33, 129, 3, 2, "SAME", 1, "NONE"),    # N 129
]


@pytest.mark.parametrize("shape", SGEMM_SHAPES, ids=lambda s: "x".join(map(str, s[:5])) + f"s{s[5]}{s[6]}d{s[7]}")
def test_conv_sgemm_levels_close_to_portable_and_litert(backend, levels, shape):
    """Every float GEMM level within 1e-5 of the output's range of the portable kernel, and the portable kernel
    within 1e-4 of LiteRT's reference kernels (the issue's float goal)."""
    h, w, c, o, k, stride, padding, dil, act = shape
    rng = np.random.default_rng(sum(shape[:6]))
    oh, ow = _out(padding, stride, dil, h, k), _out(padding, stride, dil, w, k)
    model = op_model("CONV_2D", [F((1, h, w, c)), F((o, k, k, c), rng.standard_normal((o, k, k, c))),
                                 F((o,), rng.standard_normal(o))], [F((1, oh, ow, o))],
                     options={"padding": padding, "stride_h": stride, "stride_w": stride, "dilation_h_factor": dil,
                              "dilation_w_factor": dil, "fused_activation_function": act}, version=1)
    feeds = [rng.uniform(-2, 2, (1, h, w, c)).astype(np.float32)]
    ref = _at_every_level(backend, levels, model, feeds)
    assert_close_of_range(ref[0], run_litert(model, feeds)[0], "portable vs LiteRT reference", tol=1e-4)


@pytest.mark.parametrize("batch,depth,units", [(1, 1280, 1000), (2, 257, 48), (7, 64, 33), (9, 70, 40),
                                               (33, 200, 17)])
def test_fully_connected_sgemm_levels_close_to_portable_and_litert(backend, levels, batch, depth, units):
    rng = np.random.default_rng(batch * 1000 + depth + units)
    model = op_model("FULLY_CONNECTED", [F((batch, depth)), F((units, depth), rng.standard_normal((units, depth))),
                                         F((units,), rng.standard_normal(units))], [F((batch, units))],
                     options={"fused_activation_function": "NONE"})
    feeds = [rng.uniform(-1, 1, (batch, depth)).astype(np.float32)]
    ref = _at_every_level(backend, levels, model, feeds)
    assert_close_of_range(ref[0], run_litert(model, feeds)[0], "portable vs LiteRT reference", tol=1e-4)


@pytest.mark.parametrize("kind,m", [("fc", 9), ("fc", 10), ("fc", 11), ("fc", 19), ("conv1x1", 49), ("conv1x1", 9)])
def test_sgemm_split_last_row_tiles_same_bits_at_both_x86_levels(backend, levels, kind, m):
    """The AVX-512 tile runs the last 9-11 rows as two tiles of 4-6 (not 8 and 1-3): the AVX2 level's bits (the
    same FMAs in the same k order whatever the split), and within 1e-4 of LiteRT's reference kernels."""
    lib, lv = levels
    if 1 not in lv or 2 not in lv:
        pytest.skip("needs both x86-64 levels (AVX2 and AVX-512)")
    rng = np.random.default_rng(m * 7 + len(kind))
    k, n = 96, 70  # two 32-column pairs and a partial 16-column panel
    if kind == "fc":
        model = op_model("FULLY_CONNECTED", [F((m, k)), F((n, k), rng.standard_normal((n, k))),
                                             F((n,), rng.standard_normal(n))], [F((m, n))],
                         options={"fused_activation_function": "RELU6"})
        feeds = [rng.uniform(-1, 1, (m, k)).astype(np.float32)]
    else:
        h = int(round(m ** 0.5))
        model = op_model("CONV_2D", [F((1, h, h, k)), F((n, 1, 1, k), rng.standard_normal((n, 1, 1, k))),
                                     F((n,), rng.standard_normal(n))], [F((1, h, h, n))],
                         options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "NONE"},
                         version=1)
        feeds = [rng.uniform(-1, 1, (1, h, h, k)).astype(np.float32)]
    avx2, avx512 = _run(backend, lib, 1, model, feeds)[0], _run(backend, lib, 2, model, feeds)[0]
    assert avx512.tobytes() == avx2.tobytes(), f"{kind} M {m}: AVX-512 differs from AVX2"
    assert_close_of_range(avx512, run_litert(model, feeds)[0], "AVX-512 vs LiteRT reference", tol=1e-4)


@pytest.mark.parametrize("c", [24, 64, 72, 130])
def test_prelu_f32_channel_slopes_one_call_same_bits_as_portable(backend, levels, c):
    """float PRELU whose slopes run along the channels alone (BlazeFace / MediaPipe): the whole tensor in one call,
    the slopes of 64 channels at a time held over the rows, the last step masked: the portable kernel's bits."""
    rng = np.random.default_rng(c)
    shape = (1, 5, 3, c)
    ashape = (c,) if c in (64, 130) else (1, 1, c)
    _prelu_same_bits_at_every_level(backend, levels, rng, shape, ashape, nan_step=13, zeros=slice(5, None, 17))


@pytest.mark.parametrize("c", [28, 42, 88])
@pytest.mark.parametrize("op", ["MAX_POOL_2D", "AVERAGE_POOL_2D"])
def test_pool_f32_masked_channels_same_bits_as_portable(backend, levels, op, c):
    """BlazeFace's shortcut pools (2x2 stride 2 on 28 / 42 / 88 channels): the 16-lane steps' masked last step, no
    scalar tail, with NaN / inf / -0 cells and RELU6: the portable pool's bits."""
    rng = np.random.default_rng(c)
    model = op_model(op, [F((1, 7, 6, c))], [F((1, 4, 3, c))],
                     options={"padding": "SAME", "stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2,
                              "fused_activation_function": "RELU6" if c == 42 else "NONE"})
    x = rng.uniform(-8, 8, (1, 7, 6, c)).astype(np.float32)
    x.reshape(-1)[:: 13] = np.nan
    x.reshape(-1)[5:: 17] = -0.0
    x.reshape(-1)[7:: 29] = np.inf
    _same_bits_at_every_level(backend, levels, model, [x])


# ------------------------------------------------------------------ float conv without im2col (issue 26)
# (h, w, c, o, kh, kw, sh, sw, dh, padding, activation): first layers (3 channels, 3x3 / 5x5 stride 2, MediaPipe's
# 5x5 s2 into 24-32 channels), windows cut by every edge (a row of pixels left and right of the interior, the top and
# bottom rows' taps in the padding), a 7x7 window on a 2-row input, rows with every tap in the padding, odd channel counts,
# a row dilation (runs dh * w * c floats apart), stride 1 3x3 (U-Net), an interior narrower than a tile.
DIRECT_SHAPES = [
    (33, 31, 3, 16, 3, 3, 2, 2, 1, "SAME", "RELU6"),
    (48, 40, 3, 24, 5, 5, 2, 2, 1, "SAME", "NONE"),
    (19, 23, 5, 33, 3, 3, 1, 1, 1, "SAME", "RELU"),
    (2, 9, 7, 17, 7, 7, 1, 1, 1, "SAME", "NONE"),
    (21, 17, 9, 40, 3, 3, 1, 2, 2, "SAME", "RELU_N1_TO_1"),
    (16, 16, 32, 48, 3, 3, 1, 1, 1, "VALID", "NONE"),
    (9, 6, 11, 65, 5, 3, 2, 1, 1, "SAME", "RELU6"),
    (3, 10, 5, 20, 2, 3, 1, 1, 5, "SAME", "RELU"),      # rows 0, 1: both filter rows in the padding
    (16, 16, 128, 40, 3, 3, 1, 1, 1, "SAME", "NONE"),   # k 1152: edge columns as tiles of 8 rows
]


@pytest.mark.parametrize("shape", DIRECT_SHAPES, ids=lambda s: "x".join(map(str, s[:6])) + f"s{s[6]}{s[7]}d{s[8]}{s[9]}")
def test_conv_f32_direct_same_bits_as_im2col_and_close_to_litert(backend, levels, shape):
    """The conv that reads the windows where they lie (edge_simd_sconv) gives the same bits on the AVX-512 8 x 32 tile
    as on the AVX2 6 x 16 one (the same FMAs in the same order; a tap in the padding adds nothing: the im2col GEMM's
    bits, which test_aarch64_neon_f32_gives_the_x86_bits holds against NEON's im2col path), at 1 and 2 threads, within
    1e-5 of the portable kernel; the portable kernel within 1e-4 of LiteRT's reference kernels."""
    h, w, c, o, kh, kw, sh, sw, dh, padding, act = shape
    lib, lv = levels
    rng = np.random.default_rng(sum(shape[:9]))
    oh, ow = _out(padding, sh, dh, h, kh), _out(padding, sw, 1, w, kw)
    model = op_model("CONV_2D", [F((1, h, w, c)), F((o, kh, kw, c), rng.standard_normal((o, kh, kw, c))),
                                 F((o,), rng.standard_normal(o))], [F((1, oh, ow, o))],
                     options={"padding": padding, "stride_h": sh, "stride_w": sw, "dilation_h_factor": dh,
                              "dilation_w_factor": 1, "fused_activation_function": act}, version=1)
    feeds = [rng.uniform(-2, 2, (1, h, w, c)).astype(np.float32)]
    ref = _at_every_level(backend, levels, model, feeds)
    assert_close_of_range(ref[0], run_litert(model, feeds)[0], "portable vs LiteRT reference", tol=1e-4)
    if 2 not in lv:
        pytest.skip("this CPU has no AVX-512 level beside AVX2")
    avx2 = _run(backend, lib, 1, model, feeds)[0]
    for threads in (1, 2):
        avx512 = _run(backend, lib, 2, model, feeds, num_threads=threads)[0]
        np.testing.assert_array_equal(avx512, avx2, err_msg=f"AVX-512 ({threads} threads) vs AVX2")
