"""Edge cases a sweep found LiteRT's reference kernels (OpResolverType.BUILTIN_REF) run and we refused or computed
differently (issue 23), on both runtimes (the ``runtime`` grid): a batch of 0 through CONV_2D and
DEPTHWISE_CONV_2D (an empty output), FULLY_CONNECTED with weights of depth 0 (zeros), SQRT on INT16 (a truncated
float32 quotient) and uint8 RESIZE_BILINEAR (LiteRT's float rounding of the uint8 values)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, check_on, op_model

CONV_TYPES = {  # input type, its quantization; filter type, its scale; bias type (None: float)
    "INT8": ({"scale": 0.1, "zero_point": 1}, "INT8", "INT32"),
    "INT16": ({"scale": 0.001, "zero_point": 0}, "INT8", "INT64"),
    "FLOAT32": ({}, "FLOAT32", "FLOAT32"),
}


def _conv_model(op: str, type_: str, hw: tuple[int, int], c: int, m: int, rng) -> bytes:
    """A 3x3 VALID conv (or depthwise conv of multiplier ``m``) over a batch of 0: input (0, h, w, c)."""
    q, wtype, btype = CONV_TYPES[type_]
    o = c * m if op == "DEPTHWISE_CONV_2D" else 4
    wshape = (1, 3, 3, o) if op == "DEPTHWISE_CONV_2D" else (o, 3, 3, c)
    wq = {"scale": 0.05, "zero_point": 0} if wtype == "INT8" else {}
    wdata = rng.integers(-127, 128, wshape).astype(np.int8 if wtype == "INT8" else np.float32)
    bq = {"scale": q["scale"] * 0.05, "zero_point": 0} if q else {}
    bdata = np.arange(o).astype({"INT32": np.int32, "INT64": np.int64, "FLOAT32": np.float32}[btype])
    yq = {"scale": q["scale"] * 2, "zero_point": q["zero_point"]} if q else {}
    x = T((0, *hw, c), type_, **q)
    y = T((0, hw[0] - 2, hw[1] - 2, o), type_, **yq)
    options = {"padding": "VALID", "stride_w": 1, "stride_h": 1}
    if op == "DEPTHWISE_CONV_2D":
        options["depth_multiplier"] = m
    ins = [x, T(wshape, wtype, data=wdata, **wq), T((o,), btype, data=bdata, **bq)]
    return op_model(op, ins, [y], options, version=3 if op == "DEPTHWISE_CONV_2D" or type_ != "INT16" else 4)


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
@pytest.mark.parametrize("type_", list(CONV_TYPES))
@pytest.mark.parametrize("hw,c,m", [((5, 5), 3, 1), ((4, 7), 2, 2)])
def test_conv_batch_of_zero_gives_an_empty_output(runtime, rng, op, type_, hw, c, m):
    model = _conv_model(op, type_, hw, c, m, rng)
    x = np.zeros((0, *hw, c), np.float32 if type_ == "FLOAT32" else getattr(np, type_.lower()))
    (out,) = check_on(runtime, model, [x], peer="litert")
    assert out.shape[0] == 0 and out.shape[1:] == (hw[0] - 2, hw[1] - 2, out.shape[3])


FC_TYPES = {  # input type: its quantization, the weights' type, the bias type
    "INT8": ({"scale": 0.1, "zero_point": 1}, "INT8", "INT32"),
    "INT16": ({"scale": 0.001, "zero_point": 0}, "INT8", "INT64"),
    "FLOAT32": ({}, "FLOAT32", "FLOAT32"),
}


@pytest.mark.parametrize("type_", list(FC_TYPES))
@pytest.mark.parametrize("in_shape,units,keep", [((3, 0), 4, False), ((2, 5, 0), 3, True), ((2, 5, 0), 6, False)])
@pytest.mark.parametrize("act,with_bias", [("NONE", True), ("RELU", True), ("NONE", False)])
def test_fully_connected_of_depth_zero_runs_as_litert(runtime, type_, in_shape, units, keep, act, with_bias):
    """Weights [units, 0]: LiteRT's output is (rows, units) of zero bytes (not the bias, requantized: its
    fully_connected.cc fills the output with zeros before looking at the bias); the output zero point is not 0 so
    that zero bytes and a quantized 0 differ."""
    q, wtype, btype = FC_TYPES[type_]
    wq = {"scale": 0.05, "zero_point": 0} if q else {}
    bq = {"scale": q["scale"] * 0.05, "zero_point": 0} if q else {}
    yq = {"scale": q["scale"] * 0.2, "zero_point": q["zero_point"] - 4 * (type_ == "INT8")} if q else {}
    bias_values = np.linspace(-300, 1000, units).astype({"INT32": np.int32, "INT64": np.int64,
                                                        "FLOAT32": np.float32}[btype])
    bias = T((units,), btype, data=bias_values, **bq) if with_bias else None
    out_shape = (*in_shape[:-1], units) if keep else (int(np.prod(in_shape[:-1])), units)
    model = op_model("FULLY_CONNECTED", [T(in_shape, type_, **q), T((units, 0), wtype, data=np.zeros((units, 0)), **wq),
                                         bias], [T(out_shape, type_, **yq)],
                     {"fused_activation_function": act, "keep_num_dims": keep})
    x = np.zeros(in_shape, np.float32 if type_ == "FLOAT32" else getattr(np, type_.lower()))
    (out,) = check_on(runtime, model, [x], peer="litert")
    assert out.shape == out_shape and not out.any()


SQRT_SCALES = [(0.001, 0.0005), (1e-4, 0.01), (0.05, 1e-4), (0.02, 0.001)]  # (input, output); the third saturates


@pytest.mark.parametrize("scales", SQRT_SCALES)
def test_sqrt_int16_equals_litert_on_every_non_negative_value(runtime, scales):
    """LiteRT's int16 SQRT truncates sqrt(x * s_in) / s_out in float32 (rounding would be 1 off on about half the
    values): every non-negative int16, bit for bit."""
    x = np.arange(32768, dtype=np.int16).reshape(128, 256)
    model = op_model("SQRT", [T(x.shape, "INT16", scale=scales[0], zero_point=0)],
                     [T(x.shape, "INT16", scale=scales[1], zero_point=0)])
    (out,) = check_on(runtime, model, [x], peer="litert")
    assert len(np.unique(out)) > 100


def test_sqrt_int16_negative_input_fails_the_invoke_as_litert(runtime):
    from tests.oprunner import fails_then_runs_as_litert

    model = op_model("SQRT", [T((2, 3), "INT16", scale=0.01, zero_point=0)], [T((2, 3), "INT16", scale=0.01, zero_point=0)])
    good = np.array([[0, 1, 4], [100, 32767, 9]], np.int16)
    bad = np.array([[0, 1, 4], [100, -5, 9]], np.int16)
    fails_then_runs_as_litert(runtime, (model, lambda v: [v], good, bad, "SQRT", "element 4"))


def test_sqrt_int16_zero_points_other_than_0_are_refused_in_one_line(runtime):
    from edge_sdk.errors import ModelError
    from tests.oprunner import refusal_on

    model = op_model("SQRT", [T((4,), "INT16", scale=0.01, zero_point=0)], [T((4,), "INT16", scale=0.01, zero_point=7)])
    err = refusal_on(runtime, model, ModelError)
    assert "zero point" in str(err) and "\n" not in str(err)


RESIZE_SIZES = [((4, 4), (8, 8)), ((5, 3), (2, 7)), ((6, 6), (4, 4)), ((3, 4), (7, 5)), ((1, 1), (3, 2))]


@pytest.mark.parametrize("in_hw,out_hw", RESIZE_SIZES)
@pytest.mark.parametrize("modes", [(False, False), (True, False), (False, True)])
def test_uint8_resize_bilinear_rounds_as_litert(runtime, in_hw, out_hw, modes):
    """LiteRT's uint8 RESIZE_BILINEAR interpolates the uint8 values in float32, adds 0.5 and truncates (its int8
    kernel rounds a Q20 sum instead): a uint8 model, which both runtimes run as int8 (uint8.py), equals it bit for
    bit (before: +-1 on some outputs)."""
    rng = np.random.default_rng(in_hw[0] * 10 + out_hw[1])
    x = T((2, *in_hw, 3), "UINT8", scale=0.1, zero_point=3)
    size = T((2,), "INT32", data=np.array(out_hw, np.int32))
    y = T((2, *out_hw, 3), "UINT8", scale=0.1, zero_point=3)
    model = op_model("RESIZE_BILINEAR", [x, size], [y], {"align_corners": modes[0], "half_pixel_centers": modes[1]},
                     version=3 if modes[1] else 1)
    feed = rng.integers(0, 256, x.shape).astype(np.uint8)
    (out,) = check_on(runtime, model, [feed], peer="litert")
    assert out.dtype == np.uint8


def test_hybrid_fully_connected_of_depth_zero_and_conv_batch_of_zero_run_as_litert(runtime, rng):
    """FLOAT32 data with INT8 weights (LiteRT's hybrid kernels): weights [units, 0] give zeros, a batch of 0 an
    empty output through CONV_2D, as LiteRT (its hybrid DEPTHWISE_CONV_2D refuses a batch of 0 at invoke)."""
    w = T((4, 0), "INT8", scale=0.05, zero_point=0, data=np.zeros((4, 0)))
    fc = op_model("FULLY_CONNECTED", [T((3, 0), "FLOAT32"), w, T((4,), "FLOAT32", data=np.arange(4, dtype=np.float32))],
                  [T((3, 4), "FLOAT32")])
    (out,) = check_on(runtime, fc, [np.zeros((3, 0), np.float32)], peer="litert")
    assert out.shape == (3, 4) and not out.any()
    wc = T((4, 3, 3, 3), "INT8", scale=[0.05] * 4, zero_point=0, data=rng.integers(-127, 128, (4, 3, 3, 3)))
    conv = op_model("CONV_2D", [T((0, 5, 5, 3), "FLOAT32"), wc, T((4,), "FLOAT32", data=np.zeros(4, np.float32))],
                    [T((0, 3, 3, 4), "FLOAT32")], {"padding": "VALID", "stride_w": 1, "stride_h": 1}, version=3)
    (out,) = check_on(runtime, conv, [np.zeros((0, 5, 5, 3), np.float32)], peer="litert")
    assert out.shape == (0, 3, 3, 4)
