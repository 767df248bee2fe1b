"""CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV and BATCH_MATMUL against TFLite Micro.

Each case is a one-operator model built with tests.oprunner, run by our interpreter and by TFLM on the same
seeded random inputs: int8 and int16 outputs must be equal bit for bit, float within 1e-5 relative. The cases
sweep padding, strides, dilations, fused activations, per-channel and per-tensor weights, 16x8 with int64 and
int32 biases, INT4 weights and depth multipliers. A slow, literal transcription of TFLM's reference loops
also checks our conv kernel directly (no peer), and the vectorized requantizer is checked against
``quant.multiply_by_quantized_multiplier`` on extreme values.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from edge_sdk.runtime.kernels import conv, quant
from tests.conftest import shared_model
from tests.nodes import make_node
from tests.oprunner import T, check_op, op_model, run_ours

ACTS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


def _rand(rng, shape, type_):
    if type_ == "FLOAT32":
        return rng.uniform(-1, 1, shape).astype(np.float32)
    lo, hi = {"INT8": (-128, 127), "INT16": (-32768, 32767), "INT4": (-8, 7)}[type_]
    return rng.integers(lo, hi, shape, endpoint=True).astype(np.int16 if type_ == "INT16" else np.int8)


def _weights(rng, shape, wtype, channels, per_channel, qdim=0):
    data = _rand(rng, shape, wtype)
    if wtype == "FLOAT32":
        return T(shape, "FLOAT32", data=data)
    scale = rng.uniform(0.002, 0.02, channels) if per_channel else 0.01
    return T(shape, wtype, scale=scale, zero_point=0, quantized_dimension=qdim, data=data)


def _bias(rng, n, itype, btype="auto"):
    if itype == "FLOAT32":
        return T((n,), "FLOAT32", data=rng.uniform(-1, 1, n).astype(np.float32))
    if btype == "auto":
        btype = "INT32" if itype == "INT8" else "INT64"
    dtype = {"INT32": np.int32, "INT64": np.int64, "INT16": np.int16}[btype]
    span = 3000 if btype != "INT16" else 300
    scale = 0.05 * 0.01 if itype == "INT8" else 0.0005 * 0.01  # input scale x per-tensor weight scale
    return T((n,), btype, scale=scale, zero_point=0, data=rng.integers(-span, span, n).astype(dtype))


def _act_io(rng, shape, itype, out_shape, seed_zp=True):
    if itype == "FLOAT32":
        return T(shape, "FLOAT32"), T(out_shape, "FLOAT32")
    if itype == "INT8":
        return (T(shape, "INT8", scale=0.05, zero_point=int(rng.integers(-20, 20))),
                T(out_shape, "INT8", scale=0.08, zero_point=int(rng.integers(-10, 10))))
    return T(shape, "INT16", scale=0.0005, zero_point=0), T(out_shape, "INT16", scale=0.002, zero_point=0)


def _check(model, feeds, itype):
    if itype == "FLOAT32":
        return check_op(model, feeds, rtol=1e-5, atol=1e-5)
    return check_op(model, feeds)


# ----------------------------------------------------------------------------------------- CONV_2D

CONV_CASES = [
    # itype, wtype, in (h, w, c), (o, kh, kw), stride, dilation, padding, act, per_channel
    ("INT8", "INT8", (9, 9, 4), (6, 3, 3), (2, 2), (1, 1), "SAME", "RELU", True),
    ("INT8", "INT8", (8, 7, 3), (5, 3, 2), (1, 2), (1, 1), "VALID", "RELU6", True),
    ("INT8", "INT8", (10, 10, 5), (4, 3, 3), (1, 1), (2, 2), "SAME", "NONE", False),
    ("INT8", "INT8", (6, 6, 8), (8, 1, 1), (1, 1), (1, 1), "VALID", "RELU_N1_TO_1", True),
    ("INT8", "INT8", (7, 9, 3), (4, 5, 4), (3, 2), (1, 1), "SAME", "NONE", True),
    ("INT8", "INT4", (8, 8, 4), (5, 3, 3), (1, 1), (1, 1), "SAME", "RELU", True),
    ("INT16", "INT8", (9, 9, 4), (6, 3, 3), (2, 2), (1, 1), "SAME", "NONE", True),
    ("INT16", "INT8", (8, 8, 3), (4, 3, 3), (1, 1), (2, 1), "VALID", "RELU6", False),
    ("FLOAT32", "FLOAT32", (9, 9, 4), (6, 3, 3), (2, 2), (1, 1), "SAME", "RELU6", False),
    ("FLOAT32", "FLOAT32", (8, 8, 3), (5, 2, 3), (1, 1), (2, 2), "VALID", "NONE", False),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c[0]}x{c[1]}-{c[6]}-s{c[4]}-d{c[5]}-{c[7]}")
def test_conv_2d_matches_tflm(case):
    itype, wtype, (h, w, c), (o, kh, kw), (sh, sw), (dh, dw), padding, act, per_channel = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    oh, _ = conv.window_geometry(None, padding, sh, dh, h, kh)
    ow, _ = conv.window_geometry(None, padding, sw, dw, w, kw)
    x, y = _act_io(rng, (2, h, w, c), itype, (2, oh, ow, o))
    model = op_model("CONV_2D", [x, _weights(rng, (o, kh, kw, c), wtype, o, per_channel), _bias(rng, o, itype)], [y],
                     options=dict(padding=padding, stride_h=sh, stride_w=sw, dilation_h_factor=dh,
                                  dilation_w_factor=dw, fused_activation_function=act), version=3)
    _check(model, [_rand(rng, (2, h, w, c), itype)], itype)


def test_conv_2d_grouped_and_without_bias():
    rng = np.random.default_rng(7)
    x, y = _act_io(rng, (1, 6, 6, 8), "INT8", (1, 6, 6, 6))
    model = op_model("CONV_2D", [x, _weights(rng, (6, 3, 3, 4), "INT8", 6, True), None], [y],
                     options=dict(padding="SAME", stride_h=1, stride_w=1))
    check_op(model, [_rand(rng, (1, 6, 6, 8), "INT8")])


@pytest.mark.parametrize("bias_type", ["INT32", None])
def test_conv_2d_16x8_int32_accumulator(bias_type):
    """16x8 with an INT32 bias (or none and quantized_bias_type INT32) accumulates in int32 in TFLM."""
    rng = np.random.default_rng(11)
    x, y = _act_io(rng, (1, 7, 7, 3), "INT16", (1, 7, 7, 4))
    b = _bias(rng, 4, "INT16", "INT32") if bias_type else None
    model = op_model("CONV_2D", [x, _weights(rng, (4, 3, 3, 3), "INT8", 4, True), b], [y],
                     options=dict(padding="SAME", stride_h=1, stride_w=1, quantized_bias_type="INT32"))
    check_op(model, [_rand(rng, (1, 7, 7, 3), "INT16")])


def test_conv_2d_refuses_hybrid_and_odd_types():
    rng = np.random.default_rng(3)
    x = T((1, 4, 4, 2), "FLOAT32")
    w = _weights(rng, (2, 1, 1, 2), "INT8", 2, False)
    model = op_model("CONV_2D", [x, w, None], [T((1, 4, 4, 2), "FLOAT32")], options=dict(padding="VALID"))
    with pytest.raises(UnsupportedOpError, match="hybrid"):
        run_ours(model, [np.zeros((1, 4, 4, 2), np.float32)])
    model = op_model("CONV_2D", [T((1, 4, 4, 2), "INT8", scale=0.1), _weights(rng, (2, 5, 5, 2), "INT8", 2, False),
                                 None], [T((1, 1, 1, 2), "INT8", scale=0.1)],
                     options=dict(padding="VALID", stride_h=1, stride_w=1))
    with pytest.raises(ModelError, match="does not fit"):
        run_ours(model, [np.zeros((1, 4, 4, 2), np.int8)])


# ------------------------------------------------------------------- literal reference (no peer needed)


def _slow_conv_int8(x, wt, bias, in_zp, out_zp, mult, shift, stride, pad, lo, hi, oshape):
    """TFLM's reference_integer_ops::ConvPerChannel, loop for loop."""
    n, h, w, c = x.shape
    o, kh, kw, _ = wt.shape
    out = np.zeros(oshape, np.int64)
    for b in range(n):
        for oy in range(oshape[1]):
            for ox in range(oshape[2]):
                for oc in range(o):
                    acc = 0
                    for fy in range(kh):
                        for fx in range(kw):
                            iy, ix = oy * stride - pad[0] + fy, ox * stride - pad[1] + fx
                            if 0 <= iy < h and 0 <= ix < w:
                                for ic in range(c):
                                    acc += int(wt[oc, fy, fx, ic]) * (int(x[b, iy, ix, ic]) - in_zp)
                    acc += int(bias[oc])
                    v = int(quant.multiply_by_quantized_multiplier(acc, mult[oc], shift[oc])) + out_zp
                    out[b, oy, ox, oc] = min(max(v, lo), hi)
    return out


def test_conv_2d_kernel_equals_reference_loops():
    rng = np.random.default_rng(5)
    xs = T((1, 6, 5, 3), "INT8", scale=0.03, zero_point=-7)
    ws = T((4, 3, 3, 3), "INT8", scale=rng.uniform(0.01, 0.05, 4), zero_point=0, data=_rand(rng, (4, 3, 3, 3), "INT8"))
    bs = T((4,), "INT32", scale=1e-4, data=rng.integers(-5000, 5000, 4).astype(np.int32))
    ys = T((1, 3, 3, 4), "INT8", scale=0.06, zero_point=3)
    node = make_node("CONV_2D", [xs, ws, bs], [ys], dict(padding="SAME", stride_h=2, stride_w=2, dilation_h_factor=1,
                                                         dilation_w_factor=1, fused_activation_function="RELU"),
                     version=3)
    run = conv.prepare_conv_2d(node)
    assert node.output_shapes[0] == (1, 3, 3, 4)
    x = _rand(rng, (1, 6, 5, 3), "INT8")
    out = np.zeros((1, 3, 3, 4), np.int8)
    run([x, node.inputs[1].data, node.inputs[2].data], [out])
    mult, shift = quant.quantize_multipliers([float(np.float32(0.03)) * float(s) / float(np.float32(0.06))
                                              for s in np.float32(ws.scale)])
    lo, hi = quant.activation_range_quantized("RELU", "INT8", 0.06, 3)
    want = _slow_conv_int8(x, node.inputs[1].data, bs.data, -7, 3, mult, shift, 2, (0, 1), lo, hi, (1, 3, 3, 4))
    np.testing.assert_array_equal(out.astype(np.int64), want)
    assert conv.macs_conv_2d(node) == 1 * 3 * 3 * 4 * 3 * 3 * 3


def test_requantizer_equals_fixed_point_core():
    rng = np.random.default_rng(9)
    mult = np.array([1 << 30, (1 << 31) - 1, 1518500250, 1073741825], np.int64)
    shift = np.array([-1, -12, 0, 3], np.int64)
    x = np.concatenate([rng.integers(-(1 << 31), 1 << 31, (4000, 4)),
                        np.array([[-(1 << 31)] * 4, [(1 << 31) - 1] * 4, [0] * 4, [-1] * 4, [1] * 4])])
    got = conv.Requantizer(mult, shift, wrap=True)(x.astype(np.int64).copy())
    want = quant.multiply_by_quantized_multiplier(x, mult, shift)
    np.testing.assert_array_equal(got, want)
    x64 = rng.integers(-(1 << 40), 1 << 40, (2000, 4))
    shift64 = np.array([-1, -12, -20, 3])
    got = conv.Requantizer(mult, shift64, wide=True)(x64.copy())
    np.testing.assert_array_equal(got, quant.multiply_by_quantized_multiplier_int64(x64, mult, shift64))


# ------------------------------------------------------------------------------- DEPTHWISE_CONV_2D

DW_CASES = [
    # itype, wtype, in (h, w, c), multiplier, (kh, kw), stride, dilation, padding, act, per_channel
    ("INT8", "INT8", (9, 9, 4), 1, (3, 3), (2, 2), (1, 1), "SAME", "RELU6", True),
    ("INT8", "INT8", (8, 7, 3), 2, (3, 3), (1, 1), (1, 1), "VALID", "NONE", True),
    ("INT8", "INT8", (10, 10, 2), 3, (3, 2), (1, 2), (2, 2), "SAME", "RELU", False),
    ("INT8", "INT4", (7, 7, 4), 1, (3, 3), (1, 1), (1, 1), "SAME", "RELU_N1_TO_1", True),
    ("INT16", "INT8", (9, 9, 4), 1, (3, 3), (2, 2), (1, 1), "SAME", "NONE", True),
    ("INT16", "INT8", (8, 8, 2), 2, (3, 3), (1, 1), (2, 1), "VALID", "RELU", True),
    ("FLOAT32", "FLOAT32", (9, 9, 4), 2, (3, 3), (2, 1), (1, 1), "SAME", "RELU6", False),
    ("FLOAT32", "FLOAT32", (6, 7, 3), 1, (3, 3), (2, 1), (1, 2), "VALID", "RELU", False),
    ("INT16", "INT8", (7, 6, 3), 1, (2, 3), (1, 1), (2, 1), "SAME", "RELU6", False),
]


@pytest.mark.parametrize("case", DW_CASES, ids=lambda c: f"{c[0]}x{c[1]}-m{c[3]}-{c[7]}-s{c[5]}-d{c[6]}-{c[8]}")
def test_depthwise_conv_2d_matches_tflm(case):
    itype, wtype, (h, w, c), mult, (kh, kw), (sh, sw), (dh, dw), padding, act, per_channel = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    oc = c * mult
    oh, _ = conv.window_geometry(None, padding, sh, dh, h, kh)
    ow, _ = conv.window_geometry(None, padding, sw, dw, w, kw)
    x, y = _act_io(rng, (1, h, w, c), itype, (1, oh, ow, oc))
    model = op_model("DEPTHWISE_CONV_2D",
                     [x, _weights(rng, (1, kh, kw, oc), wtype, oc, per_channel, qdim=3), _bias(rng, oc, itype)], [y],
                     options=dict(padding=padding, stride_h=sh, stride_w=sw, depth_multiplier=mult,
                                  dilation_h_factor=dh, dilation_w_factor=dw, fused_activation_function=act),
                     version=3)
    _check(model, [_rand(rng, (1, h, w, c), itype)], itype)


# --------------------------------------------------------------------------------- FULLY_CONNECTED

FC_CASES = [
    # itype, wtype, input shape, units, per_channel, bias, act, keep_num_dims
    ("INT8", "INT8", (3, 10), 7, False, "auto", "RELU", False),
    ("INT8", "INT8", (2, 3, 8), 5, True, "auto", "NONE", True),
    ("INT8", "INT8", (1, 16), 4, False, None, "RELU6", False),
    ("INT8", "INT4", (2, 12), 6, False, "auto", "NONE", False),
    ("INT16", "INT8", (2, 9), 5, False, "INT64", "NONE", False),
    ("INT16", "INT8", (3, 9), 4, True, "INT64", "RELU", False),
    ("INT16", "INT8", (2, 9), 5, False, "INT32", "NONE", False),
    ("FLOAT32", "FLOAT32", (4, 6), 3, False, "auto", "RELU_N1_TO_1", False),
    ("FLOAT32", "FLOAT32", (2, 2, 6), 5, False, None, "NONE", True),
]


@pytest.mark.parametrize("case", FC_CASES, ids=lambda c: f"{c[0]}x{c[1]}-pc{int(c[4])}-{c[5]}-{c[6]}-k{int(c[7])}")
def test_fully_connected_matches_tflm(case):
    itype, wtype, shape, units, per_channel, bias, act, keep = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    depth = shape[-1]
    out_shape = shape[:-1] + (units,) if keep else (int(np.prod(shape)) // depth, units)
    x, y = _act_io(rng, shape, itype, out_shape)
    b = None if bias is None else _bias(rng, units, itype, bias)
    model = op_model("FULLY_CONNECTED", [x, _weights(rng, (units, depth), wtype, units, per_channel), b], [y],
                     options=dict(fused_activation_function=act, keep_num_dims=keep), version=5)
    _check(model, [_rand(rng, shape, itype)], itype)


def test_fully_connected_refusals():
    rng = np.random.default_rng(2)
    x, y = _act_io(rng, (1, 4), "INT8", (1, 3))
    w = _weights(rng, (3, 4), "INT8", 3, False)
    shuffled = op_model("FULLY_CONNECTED", [x, w, None], [y], options=dict(weights_format="SHUFFLED4x16INT8"))
    with pytest.raises(UnsupportedOpError, match="SHUFFLED4x16INT8"):
        run_ours(shuffled, [np.zeros((1, 4), np.int8)])
    hybrid = op_model("FULLY_CONNECTED", [T((1, 4), "FLOAT32"), w, None], [T((1, 3), "FLOAT32")],
                      options=dict(asymmetric_quantize_inputs=True))
    with pytest.raises(UnsupportedOpError, match="hybrid"):
        run_ours(hybrid, [np.zeros((1, 4), np.float32)])


def test_hello_world_models_match_tflm():
    for name in ("hello_world_int8.tflite", "hello_world_float.tflite"):
        data = shared_model("tflite-micro/" + name).read_bytes()
        x = np.array([[0.5]], np.float32) if "float" in name else np.array([[-37]], np.int8)
        xs = [x, x * 0 if x.dtype == np.float32 else np.array([[100]], np.int8)]
        for feed in xs:
            _check(data, [feed], "FLOAT32" if "float" in name else "INT8")


# ---------------------------------------------------------------------------------- TRANSPOSE_CONV

TC_CASES = [
    # itype, in (h, w, c), (o, kh, kw), stride, padding, act, per_channel, bias
    ("INT8", (4, 4, 3), (5, 3, 3), (2, 2), "SAME", "NONE", True, True),
    ("INT8", (3, 5, 2), (4, 3, 2), (2, 1), "VALID", "RELU", False, False),
    ("INT16", (4, 4, 3), (4, 3, 3), (2, 2), "SAME", "NONE", True, True),
    ("INT16", (5, 3, 2), (3, 4, 4), (3, 2), "VALID", "NONE", True, False),
    ("FLOAT32", (4, 4, 3), (5, 3, 3), (2, 2), "SAME", "RELU6", False, True),
]


@pytest.mark.parametrize("case", TC_CASES, ids=lambda c: f"{c[0]}-{c[4]}-s{c[3]}-b{int(c[7])}")
def test_transpose_conv_matches_tflm(case):
    itype, (h, w, c), (o, kh, kw), (sh, sw), padding, act, per_channel, with_bias = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    if padding == "SAME":
        oh, ow = h * sh, w * sw
    else:
        oh, ow = (h - 1) * sh + kh, (w - 1) * sw + kw
    x, y = _act_io(rng, (1, h, w, c), itype, (1, oh, ow, o))
    shape = T((4,), "INT32", data=np.array([1, oh, ow, o], np.int32))
    b = _bias(rng, o, itype) if with_bias else None
    model = op_model("TRANSPOSE_CONV", [shape, _weights(rng, (o, kh, kw, c), "FLOAT32" if itype == "FLOAT32" else
                                                          "INT8", o, per_channel), x, b], [y],
                     options=dict(padding=padding, stride_h=sh, stride_w=sw, fused_activation_function=act),
                     version=4)
    _check(model, [_rand(rng, (1, h, w, c), itype)], itype)


# ------------------------------------------------------------------------------------ BATCH_MATMUL

BMM_CASES = [
    # type, lhs shape, rhs shape, adj_x, adj_y, rhs constant
    ("FLOAT32", (2, 3, 4), (2, 4, 5), False, False, False),
    ("FLOAT32", (2, 1, 4, 3), (3, 5, 4), True, True, True),
    ("INT8", (2, 3, 4), (2, 4, 5), False, False, False),
    ("INT8", (3, 6, 4), (1, 5, 6), True, True, True),
    ("INT8", (2, 2, 3, 4), (2, 1, 4, 5), False, False, True),
    ("INT16", (2, 3, 4), (2, 5, 4), False, True, False),
]


@pytest.mark.parametrize("case", BMM_CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}-ax{int(c[3])}-ay{int(c[4])}")
def test_batch_matmul_matches_tflm(case):
    type_, ls, rs, adj_x, adj_y, const = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    a = np.swapaxes(np.empty(ls), -1, -2) if adj_x else np.empty(ls)
    b = np.swapaxes(np.empty(rs), -1, -2) if adj_y else np.empty(rs)
    out_shape = np.matmul(a, b).shape
    rdata = _rand(rng, rs, type_) if const else None
    if type_ == "FLOAT32":
        lhs, rhs, y = T(ls, type_), T(rs, type_, data=rdata), T(out_shape, type_)
    elif type_ == "INT8":
        lhs = T(ls, type_, scale=0.05, zero_point=3)
        rhs = T(rs, type_, scale=0.03, zero_point=-2, data=rdata)
        y = T(out_shape, type_, scale=0.4, zero_point=-5)
    else:
        lhs, rhs, y = T(ls, type_, scale=0.001), T(rs, type_, scale=0.002, data=rdata), T(out_shape, type_, scale=0.5)
    model = op_model("BATCH_MATMUL", [lhs, rhs], [y], options=dict(adj_x=adj_x, adj_y=adj_y))
    feeds = [_rand(rng, ls, type_)] + ([] if const else [_rand(rng, rs, type_)])
    _check(model, feeds, type_)


# ------------------------------------------------------------------------------------- real models


@pytest.mark.parametrize("name", ["person_detect",
                                  pytest.param("mobilenet_v2_quantized_1x3x224x224", marks=pytest.mark.slow)])
def test_real_model_conv_layers_match_tflm(name):
    """Every layer of the model up to (not including) a SOFTMAX, all its tensors compared with TFLM's."""
    from edge_sdk.model.reader import read_model
    from edge_sdk.model.writer import write_model
    from tests.peers import run_tflm

    model = read_model(shared_model(f"tflite-micro/{name}.tflite").read_bytes())
    sg = model.subgraphs[0]
    keep = []
    for op in sg.operators:
        if model.operator_codes[op.opcode_index].builtin_code == 25:  # SOFTMAX
            break
        keep.append(op)
    sg.operators = keep
    sg.outputs = [t for op in keep for t in op.outputs]
    data = write_model(model)
    rng = np.random.default_rng(4)
    from edge_sdk import Interpreter

    interp = Interpreter(model_content=data)
    interp.allocate_tensors()
    feeds = [_rand(rng, tuple(d["shape"]), "INT8") for d in interp.get_input_details()]
    ours = run_ours(data, feeds)
    theirs = run_tflm(data, feeds, isolate=True)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.shape == b.shape and np.array_equal(a, b), f"{name}: tensor of layer {i} differs from TFLM"


# ------------------------------------------------------------------------- run-time weights and MACs


def test_weights_computed_at_run_time_match_tflm():
    """Weights fed as model inputs (as after a DEQUANTIZE) take the same path as constants."""
    rng = np.random.default_rng(21)
    x, y = _act_io(rng, (2, 5), "FLOAT32", (2, 3))
    model = op_model("FULLY_CONNECTED", [x, T((3, 5), "FLOAT32"), None], [y])
    check_op(model, [_rand(rng, (2, 5), "FLOAT32"), _rand(rng, (3, 5), "FLOAT32")], rtol=1e-5, atol=1e-6)
    x, y = _act_io(rng, (1, 5, 5, 2), "INT8", (1, 5, 5, 3))
    w = T((3, 3, 3, 2), "INT8", scale=[0.01, 0.02, 0.015], zero_point=0)
    model = op_model("CONV_2D", [x, w, _bias(rng, 3, "INT8")], [y],
                     options=dict(padding="SAME", stride_h=1, stride_w=1))
    check_op(model, [_rand(rng, (1, 5, 5, 2), "INT8"), _rand(rng, (3, 3, 3, 2), "INT8")])


def test_macs_counts():
    node = make_node
    q = dict(scale=0.1, zero_point=0)
    dw = node("DEPTHWISE_CONV_2D", [T((1, 8, 8, 4), **q), T((1, 3, 3, 8), data=np.ones((1, 3, 3, 8)), **q)],
              [T((1, 8, 8, 8), **q)], dict(padding="SAME", stride_h=1, stride_w=1, fused_activation_function="NONE"))
    conv.prepare_depthwise_conv_2d(dw)
    assert conv.macs_depthwise_conv_2d(dw) == 8 * 8 * 8 * 9
    fc = node("FULLY_CONNECTED", [T((3, 10), **q), T((4, 10), data=np.ones((4, 10)), **q)], [T((3, 4), **q)], {})
    conv.prepare_fully_connected(fc)
    assert conv.macs_fully_connected(fc) == 3 * 4 * 10
    tc = node("TRANSPOSE_CONV",
              [T((4,), "INT32", data=np.array([1, 8, 8, 5])), T((5, 3, 3, 2), data=np.ones((5, 3, 3, 2)), **q),
               T((1, 4, 4, 2), **q)], [T((1, 8, 8, 5), **q)], dict(padding="SAME", stride_h=2, stride_w=2))
    conv.prepare_transpose_conv(tc)
    assert tc.output_shapes[0] == (1, 8, 8, 5) and conv.macs_transpose_conv(tc) == 4 * 4 * 2 * 9 * 5
    bmm = node("BATCH_MATMUL", [T((2, 3, 4), "FLOAT32"), T((4, 5), "FLOAT32")], [T((2, 3, 5), "FLOAT32")], {})
    conv.prepare_batch_matmul(bmm)
    assert bmm.output_shapes[0] == (2, 3, 5) and conv.macs_batch_matmul(bmm) == 2 * 3 * 5 * 4
