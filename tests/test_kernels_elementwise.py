"""Element-wise arithmetic kernels against TFLM (bit-exact for integers), on one-op models."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from tests.oprunner import T, check_op, op_model, run_ours

INT8_ALL = np.arange(-128, 128, dtype=np.int8)


def _rand(rng, shape, type_):
    if type_ == "INT8":
        x = rng.integers(-128, 128, shape).astype(np.int8)
        lo, hi = -128, 127
    elif type_ == "INT16":
        x = rng.integers(-32768, 32768, shape).astype(np.int16)
        lo, hi = -32768, 32767
    elif type_ == "INT32":
        return rng.integers(-1000, 1000, shape).astype(np.int32)
    elif type_ == "INT64":
        return rng.integers(-(1 << 40), 1 << 40, shape).astype(np.int64)
    else:
        return rng.normal(0, 3, shape).astype(np.float32)
    flat = x.reshape(-1)
    if flat.size >= 4:
        flat[:4] = [lo, hi, 0, lo]  # extremes always present
    return x


def _pair_inputs():
    """Every (a, b) int8 pair as two flat tensors of 65536 values."""
    a = np.repeat(INT8_ALL, 256)
    b = np.tile(INT8_ALL, 256)
    return a, b


# (scale1, zp1, scale2, zp2, scale_out, zp_out): equal scales, input scale > output scale, tiny output scale
INT8_QUANT = [
    (0.05, 3, 0.1, -5, 0.12, -2),
    (0.5, -128, 0.02, 127, 0.01, 10),
    (0.0078125, 0, 0.0078125, 0, 0.0078125, 0),
]
INT16_QUANT = [(1 / 4096, 0, 1 / 2048, 0, 1 / 1024, 0), (0.003, 0, 0.0007, 0, 0.0001, 0)]
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 5)), ((5,), (1,)), ((1, 2, 1, 2, 1, 3), (2, 1, 2, 1, 3, 1))]
ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def _binary_check(op, type_, q, sa, sb, act, rng, options=None, peer="tflm"):
    s1, z1, s2, z2, so, zo = q if q else (None, None, None, None, None, None)
    out_shape = np.broadcast_shapes(sa, sb)
    a = T(sa, type_, s1, z1)
    b = T(sb, type_, s2, z2)
    y = T(out_shape, type_, so, zo)
    opts = dict(options or {})
    if act is not None:
        opts["fused_activation_function"] = act
    model = op_model(op, [a, b], [y], opts)
    xa, xb = _rand(rng, sa, type_), _rand(rng, sb, type_)
    if op == "DIV" and type_ != "FLOAT32":
        zero = z2 if z2 is not None else 0
        xb = np.where(xb == zero, zero + 1, xb).astype(xb.dtype)
    tol = {"rtol": 1e-5, "atol": 1e-6} if type_ == "FLOAT32" else {}
    return check_op(model, [xa, xb], peer=peer, **tol)


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("act", ACTS)
def test_int8_add_sub_mul(op, act, rng):
    for q in INT8_QUANT:
        for sa, sb in SHAPES:
            _binary_check(op, "INT8", q, sa, sb, act, rng)


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("act", ["NONE", "RELU", "RELU_N1_TO_1"])
def test_int16_add_sub_mul(op, act, rng):
    for q in INT16_QUANT:
        for sa, sb in SHAPES[:4]:
            _binary_check(op, "INT16", q, sa, sb, act, rng)


def test_int16_add_sub_with_zero_points(rng):
    # TFLM's general int16 ADD/SUB path accepts zero points; keep them small so the peers agree on the domain.
    for op in ("ADD", "SUB"):
        _binary_check(op, "INT16", (0.001, 7, 0.002, -3, 0.003, 5), (3, 4), (3, 4), "NONE", rng)


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM"])
def test_float32(op, rng):
    acts = ACTS if op in ("ADD", "SUB", "MUL", "DIV") else [None]
    for act in acts:
        for sa, sb in SHAPES:
            _binary_check(op, "FLOAT32", None, sa, sb, act, rng)


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM"])
def test_int32(op, rng):
    acts = ACTS if op in ("ADD", "SUB", "MUL", "DIV") else [None]
    for act in acts:
        for sa, sb in SHAPES[:4]:
            _binary_check(op, "INT32", None, sa, sb, act, rng)


def test_int32_wraparound():
    big = np.array([2**31 - 1, -(2**31), 2**30, -5], np.int32)
    other = np.array([1, -1, 4, 3], np.int32)
    for op in ("ADD", "SUB", "MUL"):
        model = op_model(op, [T((4,), "INT32"), T((4,), "INT32")], [T((4,), "INT32")])
        check_op(model, [big, other])


def test_int32_div_truncates_toward_zero():
    x = np.array([7, -7, 7, -7, 0, 100], np.int32)
    y = np.array([2, 2, -2, -2, 3, -7], np.int32)
    model = op_model("DIV", [T((6,), "INT32"), T((6,), "INT32")], [T((6,), "INT32")])
    out = check_op(model, [x, y])[0]
    assert out.tolist() == [3, -3, -3, 3, 0, -14]


@pytest.mark.parametrize("type_", ["INT8", "INT16", "INT64"])
def test_maximum_minimum_ints(type_, rng):
    for op in ("MAXIMUM", "MINIMUM"):
        for sa, sb in SHAPES[:4]:
            q = (0.1, 0, 0.1, 0, 0.1, 0) if type_ != "INT64" else None
            _binary_check(op, type_, q, sa, sb, None, rng)


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "SQUARED_DIFFERENCE"])
def test_int8_every_input_pair(op):
    """All 65536 int8 input pairs (the table our kernel builds), two scale/zero-point settings."""
    a, b = _pair_inputs()
    settings = [(0.05, 3, 0.1, -5, 0.12, -2), (0.7, -20, 0.3, 60, 0.02, 100)]
    for s1, z1, s2, z2, so, zo in settings:
        xb = b
        if op == "DIV":
            keep = (b.astype(np.int32) - z2) != 0
            xa, xb = a[keep], b[keep]
        else:
            xa = a
        n = xa.size
        model = op_model(op, [T((n,), "INT8", s1, z1), T((n,), "INT8", s2, z2)], [T((n,), "INT8", so, zo)])
        check_op(model, [xa, xb])


@pytest.mark.parametrize("act", ACTS)
def test_int8_div(act, rng):
    for q in INT8_QUANT:
        for sa, sb in SHAPES:
            _binary_check("DIV", "INT8", q, sa, sb, act, rng)


@pytest.mark.parametrize("type_", ["INT8", "INT16"])
def test_squared_difference_quantized(type_, rng):
    qs = INT8_QUANT if type_ == "INT8" else INT16_QUANT
    for q in qs:
        for sa, sb in SHAPES:
            _binary_check("SQUARED_DIFFERENCE", type_, q, sa, sb, None, rng)


def test_rsqrt_float(rng):
    x = np.abs(rng.normal(0, 5, (3, 7))).astype(np.float32) + np.float32(1e-3)
    model = op_model("RSQRT", [T((3, 7), "FLOAT32")], [T((3, 7), "FLOAT32")])
    check_op(model, [x], rtol=1e-6, atol=0)


@pytest.mark.parametrize("si,zi,so,zo", [(0.05, -128, 0.02, -128), (0.5, 0, 0.01, -100), (0.003, -30, 0.3, 5)])
def test_rsqrt_int8_every_valid_input(si, zi, so, zo):
    x = np.arange(zi, 128, dtype=np.int8)
    model = op_model("RSQRT", [T(x.shape, "INT8", si, zi)], [T(x.shape, "INT8", so, zo)])
    check_op(model, [x])


def test_rsqrt_int8_negative_input_is_an_error():
    model = op_model("RSQRT", [T((2,), "INT8", 0.1, 0)], [T((2,), "INT8", 0.1, 0)])
    with pytest.raises(ModelError, match="negative"):
        run_ours(model, [np.array([3, -1], np.int8)])


def test_unsupported_and_malformed():
    model = op_model("ADD", [T((2, 3), "INT8", 0.1, 0), T((4,), "INT8", 0.1, 0)], [T((2, 3), "INT8", 0.1, 0)])
    with pytest.raises(ModelError, match="broadcast"):
        run_ours(model, [np.zeros((2, 3), np.int8), np.zeros(4, np.int8)])
    model = op_model("DIV", [T((2,), "INT16", 0.1, 0), T((2,), "INT16", 0.1, 0)], [T((2,), "INT16", 0.1, 0)])
    with pytest.raises(UnsupportedOpError, match="INT16"):
        run_ours(model, [np.zeros(2, np.int16), np.ones(2, np.int16)])
    model = op_model("ADD", [T((2,), "INT8", 0.1, 0), T((2,), "INT8", 0.1, 0)], [T((2,), "INT8", 0.1, 0)],
                     {"fused_activation_function": "TANH"})
    with pytest.raises(UnsupportedOpError, match="TANH"):
        run_ours(model, [np.zeros(2, np.int8), np.zeros(2, np.int8)])


def _csv(path):
    return np.loadtxt(path, delimiter=",", dtype=np.int64).reshape(-1)


