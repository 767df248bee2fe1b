"""CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV and BATCH_MATMUL against TFLite Micro.

Each case is a one-operator model built with tests.oprunner, run by our interpreter and by TFLM on the same
seeded random inputs: int8 and int16 outputs must be equal bit for bit, float within 1e-5 relative. The cases
sweep padding, strides, dilations, fused activations, per-channel and per-tensor weights, 16x8 with int64 and
int32 biases, INT4 weights and depth multipliers. A slow, literal transcription of TFLM's reference loops
also checks our conv kernel directly (no peer), and the vectorized requantizer is checked against
``quant.multiply_by_quantized_multiplier`` on extreme values.
"""

from __future__ import annotations

import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from edge_sdk.runtime.kernels import conv, quant
from tests.conftest import grid_cases, needs_c_runtime, shared_model
from tests.nodes import make_node
from tests.oprunner import T, check_on, keep_python_outputs, op_model, peer_outputs, refused_on, run_on, run_ours
from tests.peers import PeerCrashed

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"

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


def _check(runtime, model, feeds, itype):
    if itype == "FLOAT32":
        return check_on(runtime, model, feeds, rtol=1e-5, atol=1e-5)
    return check_on(runtime, model, feeds)


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


@pytest.mark.parametrize(("runtime", "case"), grid_cases(CONV_CASES,
                                                         ids=lambda c: f"{c[0]}x{c[1]}-{c[6]}-s{c[4]}-d{c[5]}-{c[7]}"),
                         indirect=["runtime"])
def test_conv_2d_matches_tflm(runtime, case):
    itype, wtype, (h, w, c), (o, kh, kw), (sh, sw), (dh, dw), padding, act, per_channel = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    oh, _ = conv.window_geometry(None, padding, sh, dh, h, kh)
    ow, _ = conv.window_geometry(None, padding, sw, dw, w, kw)
    x, y = _act_io(rng, (2, h, w, c), itype, (2, oh, ow, o))
    model = op_model("CONV_2D", [x, _weights(rng, (o, kh, kw, c), wtype, o, per_channel), _bias(rng, o, itype)], [y],
                     options=dict(padding=padding, stride_h=sh, stride_w=sw, dilation_h_factor=dh,
                                  dilation_w_factor=dw, fused_activation_function=act), version=3)
    _check(runtime, model, [_rand(rng, (2, h, w, c), itype)], itype)


def test_conv_2d_grouped_and_without_bias(runtime):
    rng = np.random.default_rng(7)
    x, y = _act_io(rng, (1, 6, 6, 8), "INT8", (1, 6, 6, 6))
    model = op_model("CONV_2D", [x, _weights(rng, (6, 3, 3, 4), "INT8", 6, True), None], [y],
                     options=dict(padding="SAME", stride_h=1, stride_w=1))
    check_on(runtime, model, [_rand(rng, (1, 6, 6, 8), "INT8")])


@pytest.mark.parametrize("bias_type", ["INT32", None])
def test_conv_2d_16x8_int32_accumulator(runtime, bias_type):
    """16x8 with an INT32 bias (or none and quantized_bias_type INT32) accumulates in int32 in TFLM."""
    rng = np.random.default_rng(11)
    x, y = _act_io(rng, (1, 7, 7, 3), "INT16", (1, 7, 7, 4))
    b = _bias(rng, 4, "INT16", "INT32") if bias_type else None
    model = op_model("CONV_2D", [x, _weights(rng, (4, 3, 3, 3), "INT8", 4, True), b], [y],
                     options=dict(padding="SAME", stride_h=1, stride_w=1, quantized_bias_type="INT32"))
    check_on(runtime, model, [_rand(rng, (1, 7, 7, 3), "INT16")])


def test_conv_2d_refuses_odd_types(runtime):
    # hybrid (FLOAT32 input, INT8 weights) runs: tests/test_ops_hybrid.py; FLOAT32 with INT16 weights runs nowhere
    rng = np.random.default_rng(3)
    x = T((1, 4, 4, 2), "FLOAT32")
    w = _weights(rng, (2, 1, 1, 2), "INT16", 2, False)
    model = op_model("CONV_2D", [x, w, None], [T((1, 4, 4, 2), "FLOAT32")], options=dict(padding="VALID"))
    refused_on(runtime, model, [np.zeros((1, 4, 4, 2), np.float32)], UnsupportedOpError,
               {"python": "INT16 weights", "c": "C kernel runs FLOAT32/FLOAT32, INT8/INT8 and INT16/INT8"}[runtime])
    model = op_model("CONV_2D", [T((1, 4, 4, 2), "INT8", scale=0.1), _weights(rng, (2, 5, 5, 2), "INT8", 2, False),
                                 None], [T((1, 1, 1, 2), "INT8", scale=0.1)],
                     options=dict(padding="VALID", stride_h=1, stride_w=1))
    refused_on(runtime, model, [np.zeros((1, 4, 4, 2), np.int8)], ModelError,
               {"python": "does not fit", "c": "do not fit the input"}[runtime])


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


@pytest.mark.parametrize(("runtime", "case"),
                         grid_cases(DW_CASES,
                                    ids=lambda c: f"{c[0]}x{c[1]}-m{c[3]}-{c[7]}-s{c[5]}-d{c[6]}-{c[8]}"),
                         indirect=["runtime"])
def test_depthwise_conv_2d_matches_tflm(runtime, case):
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
    _check(runtime, model, [_rand(rng, (1, h, w, c), itype)], itype)


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


@pytest.mark.parametrize(("runtime", "case"),
                         grid_cases(FC_CASES,
                                    ids=lambda c: f"{c[0]}x{c[1]}-pc{int(c[4])}-{c[5]}-{c[6]}-k{int(c[7])}"),
                         indirect=["runtime"])
def test_fully_connected_matches_tflm(runtime, case):
    itype, wtype, shape, units, per_channel, bias, act, keep = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    depth = shape[-1]
    out_shape = shape[:-1] + (units,) if keep else (int(np.prod(shape)) // depth, units)
    x, y = _act_io(rng, shape, itype, out_shape)
    b = None if bias is None else _bias(rng, units, itype, bias)
    model = op_model("FULLY_CONNECTED", [x, _weights(rng, (units, depth), wtype, units, per_channel), b], [y],
                     options=dict(fused_activation_function=act, keep_num_dims=keep), version=5)
    _check(runtime, model, [_rand(rng, shape, itype)], itype)


def test_fully_connected_refusals(runtime):
    rng = np.random.default_rng(2)
    x, y = _act_io(rng, (1, 4), "INT8", (1, 3))
    w = _weights(rng, (3, 4), "INT8", 3, False)
    shuffled = op_model("FULLY_CONNECTED", [x, w, None], [y], options=dict(weights_format="SHUFFLED4x16INT8"))
    refused_on(runtime, shuffled, [np.zeros((1, 4), np.int8)], UnsupportedOpError,
               {"python": "SHUFFLED4x16INT8", "c": "only DEFAULT weights_format"}[runtime])
    # hybrid (FLOAT32 input, INT8 weights) runs: tests/test_ops_hybrid.py; FLOAT32 with INT16 weights runs nowhere
    w16 = _weights(rng, (3, 4), "INT16", 3, False)
    odd = op_model("FULLY_CONNECTED", [T((1, 4), "FLOAT32"), w16, None], [T((1, 3), "FLOAT32")],
                   options=dict(asymmetric_quantize_inputs=True))
    refused_on(runtime, odd, [np.zeros((1, 4), np.float32)], UnsupportedOpError,
               {"python": "INT16 weights", "c": "C kernel runs INT8/INT8, INT16/INT8 and FLOAT32/FLOAT32"}[runtime])


def test_hello_world_models_match_tflm(runtime):
    for name in ("hello_world_int8.tflite", "hello_world_float.tflite"):
        data = shared_model("tflite-micro/" + name).read_bytes()
        x = np.array([[0.5]], np.float32) if "float" in name else np.array([[-37]], np.int8)
        xs = [x, x * 0 if x.dtype == np.float32 else np.array([[100]], np.int8)]
        for feed in xs:
            _check(runtime, data, [feed], "FLOAT32" if "float" in name else "INT8")


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
def test_transpose_conv_matches_tflm(runtime, case):
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
    _check(runtime, model, [_rand(rng, (1, h, w, c), itype)], itype)


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


@pytest.mark.parametrize(("runtime", "case"),
                         grid_cases(BMM_CASES, c_runs=lambda c: c[0] == "FLOAT32",  # C: float BATCH_MATMUL only
                                    ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}-ax{int(c[3])}-ay{int(c[4])}"),
                         indirect=["runtime"])
def test_batch_matmul_matches_tflm(runtime, case):
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
    _check(runtime, model, feeds, type_)


# ------------------------------------------------------------------------------------- real models


@pytest.mark.parametrize("name", ["person_detect",
                                  pytest.param("mobilenet_v2_quantized_1x3x224x224", marks=pytest.mark.slow)])
def test_real_model_conv_layers_match_tflm(runtime, name):
    """Every layer of the model up to (not including) a SOFTMAX, all its tensors compared with TFLM's."""
    from edge_sdk.model.reader import read_model
    from edge_sdk.model.writer import write_model
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
    ours = run_on(runtime, data, feeds)
    theirs = peer_outputs(data, feeds, "tflm", isolate=True)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.shape == b.shape and np.array_equal(a, b), f"{name}: tensor of layer {i} differs from TFLM"


# ------------------------------------------------------------------------- run-time weights and MACs


def test_weights_computed_at_run_time_match_tflm(runtime):
    """Weights fed as model inputs (as after a DEQUANTIZE) take the same path as constants."""
    rng = np.random.default_rng(21)
    x, y = _act_io(rng, (2, 5), "FLOAT32", (2, 3))
    model = op_model("FULLY_CONNECTED", [x, T((3, 5), "FLOAT32"), None], [y])
    check_on(runtime, model, [_rand(rng, (2, 5), "FLOAT32"), _rand(rng, (3, 5), "FLOAT32")], rtol=1e-5, atol=1e-6)
    x, y = _act_io(rng, (1, 5, 5, 2), "INT8", (1, 5, 5, 3))
    w = T((3, 3, 3, 2), "INT8", scale=[0.01, 0.02, 0.015], zero_point=0)
    model = op_model("CONV_2D", [x, w, _bias(rng, 3, "INT8")], [y],
                     options=dict(padding="SAME", stride_h=1, stride_w=1))
    check_on(runtime, model, [_rand(rng, (1, 5, 5, 2), "INT8"), _rand(rng, (3, 3, 3, 2), "INT8")])


@needs_c_runtime
def test_c_refuses_per_channel_batch_matmul():
    """What the C runtime's BATCH_MATMUL still refuses by name: per-channel operand scales (as the Python
    interpreter; LiteRT takes per-tensor only). INT8 / INT16 operands run in C since session 18
    (tests/test_gen23_exporter_forms.py); INT4 weights since issue 23 (tests/test_ops_int4.py)."""
    model = op_model("BATCH_MATMUL", [T((2, 3), "INT8", 0.05, 3), T((3, 4), "INT8", [0.03] * 4, 0, 1)],
                     [T((2, 4), "INT8", 0.4, -5)])
    refused_on("c", model, [np.zeros((2, 3), np.int8), np.zeros((3, 4), np.int8)], UnsupportedOpError,
               "per-channel quantized operands")


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


# ------------------------------------------------------------------- the C runtime file's cases, on both runtimes
# (each case seeded by its parameters; "kind": int8, int16 (int64 bias), int16_32 (int32 bias), float)


# dsp_runner (edge-run-c with -DEDGE_EMULATE_DSP): tests/conftest.py, built once per session


def _run_c(backend, model: bytes, feeds):
    c = backend.CInterpreter(model_content=model)
    c.allocate_tensors()
    for d, x in zip(c.get_input_details(), feeds):
        c.set_tensor(d["index"], x)
    c.invoke()
    return [c.get_tensor(d["index"]) for d in c.get_output_details()]


def _run_exe(exe, model: bytes, feeds, like: np.ndarray, tmp_path) -> np.ndarray:
    (tmp_path / "m.tflite").write_bytes(model)
    (tmp_path / "in.bin").write_bytes(b"".join(np.ascontiguousarray(x).tobytes() for x in feeds))
    proc = subprocess.run([str(exe), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return np.frombuffer((tmp_path / "out.bin").read_bytes(), like.dtype)[:like.size].reshape(like.shape)


def _out_size(padding, stride, dilation, size, k):
    eff = (k - 1) * dilation + 1
    return (size + stride - 1) // stride if padding == "SAME" else (size + stride - eff) // stride


def _kind_feed(rng, kind, shape):
    if kind == "int8":
        return rng.integers(-128, 128, shape, dtype=np.int8)
    if kind.startswith("int16"):
        return rng.integers(-32768, 32768, shape).astype(np.int16)
    return rng.standard_normal(shape).astype(np.float32)


def _kind_weights(rng, kind, shape, o, per_channel, qdim=0):
    if kind == "float":
        return T(shape, "FLOAT32", data=rng.standard_normal(shape).astype(np.float32))
    scale = list(rng.uniform(0.002, 0.02, o)) if per_channel else 0.01
    return T(shape, "INT8", scale, 0, quantized_dimension=qdim, data=rng.integers(-127, 128, shape, dtype=np.int8))


def _kind_bias(rng, kind, o, btype=None):
    if kind == "float":
        return T((o,), "FLOAT32", data=rng.standard_normal(o).astype(np.float32))
    btype = btype or {"int8": "INT32", "int16": "INT64", "int16_32": "INT32"}[kind]
    limit = 2000 if kind == "int8" else 20000
    dt = {"INT32": np.int32, "INT64": np.int64, "INT16": np.int16}[btype]
    return T((o,), btype, 1.0, 0, data=rng.integers(-limit, limit, o).astype(dt))


def _kind_io(kind, shape, scale, zp):
    if kind == "float":
        return T(shape, "FLOAT32")
    if kind == "int8":
        return T(shape, "INT8", scale, zp)
    return T(shape, "INT16", scale / 50, 0)


def _compare(runtime, model, feeds, kind, tflm_may_crash=False):
    """``runtime`` == TFLM, and the C case == the Python case (bit for bit; float within 1e-5). Returns the
    runtime's output."""
    outs = run_on(runtime, model, feeds)
    out = outs[0]
    try:
        tflm = peer_outputs(model, feeds, "tflm", isolate=tflm_may_crash)[0]
    except PeerCrashed:
        tflm = None  # TFLM (and LiteRT) cannot run a bias-less depthwise conv: Python is the reference then
    if runtime == "python":
        keep_python_outputs(model, feeds, outs)
        py = out
    else:
        py = peer_outputs(model, feeds, "python")[0]
    assert out.shape == py.shape
    if kind == "float":
        np.testing.assert_allclose(out, py, rtol=1e-5, atol=1e-5)
        if tflm is not None:
            np.testing.assert_allclose(out, tflm, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(out, py)
        if tflm is not None:
            np.testing.assert_array_equal(out, tflm)
    assert kind == "float" or np.unique(out).size > 1, "degenerate case: output saturated"
    return out


# ------------------------------------------------------------------------------------------------ CONV_2D

# (kind, n, h, w, c, o, kh, kw, groups, padding, strides, dilations, activation, per_channel, bias)
CONV_GEOMETRIES = [
    ("int8", 1, 5, 6, 3, 4, 3, 3, 1, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int8", 2, 7, 5, 8, 6, 3, 2, 1, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("int8", 1, 9, 9, 8, 5, 3, 3, 1, "SAME", (2, 2), (2, 1), "RELU6", False, True),
    ("int8", 1, 6, 6, 8, 6, 1, 1, 2, "SAME", (1, 1), (1, 1), "NONE", True, False),
    ("int8", 1, 4, 7, 12, 8, 2, 3, 4, "SAME", (1, 2), (1, 1), "RELU_N1_TO_1", True, True),
    ("int8", 1, 3, 3, 5, 3, 3, 3, 1, "VALID", (1, 1), (1, 1), "NONE", True, True),
    ("int8", 1, 8, 8, 16, 9, 3, 3, 1, "SAME", (1, 1), (1, 3), "NONE", True, True),
    ("int8", 1, 5, 5, 7, 1, 1, 1, 1, "VALID", (1, 1), (1, 1), "NONE", False, True),
    ("int16", 1, 5, 6, 3, 4, 3, 3, 1, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int16", 2, 7, 5, 8, 6, 3, 2, 1, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("int16", 1, 9, 9, 8, 5, 3, 3, 1, "SAME", (2, 2), (2, 1), "RELU6", False, True),
    ("int16", 1, 6, 6, 8, 6, 1, 1, 2, "SAME", (1, 1), (1, 1), "NONE", True, False),
    ("int16_32", 1, 5, 6, 3, 4, 3, 3, 1, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int16_32", 1, 4, 7, 12, 8, 2, 3, 4, "SAME", (1, 2), (1, 1), "RELU_N1_TO_1", True, True),
    ("float", 1, 5, 6, 3, 4, 3, 3, 1, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("float", 2, 7, 5, 8, 6, 3, 2, 1, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("float", 1, 9, 9, 8, 5, 3, 3, 1, "SAME", (2, 2), (2, 1), "RELU6", True, False),
    ("float", 1, 4, 7, 12, 8, 2, 3, 4, "SAME", (1, 2), (1, 1), "RELU_N1_TO_1", True, True),
]


def _conv_model(case, rng):
    kind, n, h, w, c, o, kh, kw, groups, padding, s, dil, act, pc, bias = case
    oh, ow = _out_size(padding, s[0], dil[0], h, kh), _out_size(padding, s[1], dil[1], w, kw)
    x = _kind_io(kind, (n, h, w, c), 0.05, 3)
    y = _kind_io(kind, (n, oh, ow, o), 0.1 if groups == 1 else 0.05, -5)
    wt = _kind_weights(rng, kind, (o, kh, kw, c // groups), o, pc)
    b = _kind_bias(rng, kind, o) if bias else None
    opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "dilation_h_factor": dil[0],
            "dilation_w_factor": dil[1], "fused_activation_function": act}
    return op_model("CONV_2D", [x, wt, b], [y], options=opts, version=3), [_kind_feed(rng, kind, (n, h, w, c))]


def _id(case):
    return "-".join(str(v).replace(" ", "").replace("(", "").replace(")", "").replace(",", "x") for v in case)


@pytest.mark.parametrize("case", CONV_GEOMETRIES, ids=_id)
def test_conv_2d(runtime, case):
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    model, feeds = _conv_model(case, rng)
    _compare(runtime, model, feeds, case[0])


# ------------------------------------------------------------------------------------------------ DEPTHWISE

# (kind, n, h, w, c, multiplier, kh, kw, padding, strides, dilations, activation, per_channel, bias)
DW_GEOMETRIES = [
    ("int8", 1, 5, 6, 3, 1, 3, 3, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int8", 1, 6, 6, 8, 1, 3, 3, "SAME", (1, 1), (1, 1), "RELU6", True, True),
    ("int8", 2, 7, 5, 4, 2, 3, 2, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("int8", 1, 9, 9, 8, 1, 3, 3, "SAME", (2, 2), (2, 1), "NONE", False, True),
    ("int8", 1, 6, 6, 3, 3, 1, 1, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int8", 1, 6, 6, 8, 1, 3, 3, "SAME", (1, 1), (1, 1), "NONE", True, False),
    ("int8", 1, 4, 7, 12, 1, 5, 3, "SAME", (1, 2), (1, 1), "RELU_N1_TO_1", True, True),
    ("int16", 1, 5, 6, 3, 1, 3, 3, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int16", 2, 7, 5, 4, 2, 3, 2, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("int16", 1, 9, 9, 8, 1, 3, 3, "SAME", (2, 2), (2, 1), "RELU6", False, True),
    ("float", 1, 5, 6, 3, 1, 3, 3, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("float", 2, 7, 5, 4, 2, 3, 2, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("float", 1, 9, 9, 8, 1, 3, 3, "SAME", (2, 2), (2, 1), "RELU6", True, True),
]


def _dw_model(case, rng):
    kind, n, h, w, c, m, kh, kw, padding, s, dil, act, pc, bias = case
    o = c * m
    oh, ow = _out_size(padding, s[0], dil[0], h, kh), _out_size(padding, s[1], dil[1], w, kw)
    x = _kind_io(kind, (n, h, w, c), 0.05, -7)
    y = _kind_io(kind, (n, oh, ow, o), 0.08, 4)
    wt = _kind_weights(rng, kind, (1, kh, kw, o), o, pc, qdim=3)
    b = _kind_bias(rng, kind, o) if bias else None
    opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "dilation_h_factor": dil[0],
            "dilation_w_factor": dil[1], "fused_activation_function": act, "depth_multiplier": m}
    return op_model("DEPTHWISE_CONV_2D", [x, wt, b], [y], options=opts, version=3), [_kind_feed(rng, kind, (n, h, w, c))]


@pytest.mark.parametrize("case", DW_GEOMETRIES, ids=_id)
def test_depthwise_conv_2d(runtime, case):
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    model, feeds = _dw_model(case, rng)
    _compare(runtime, model, feeds, case[0], tflm_may_crash=not case[-1])


# ------------------------------------------------------------------------------------------------ TRANSPOSE_CONV

# (kind, n, h, w, c, o, kh, kw, padding, strides, activation, per_channel, bias, bias type)
TC_GEOMETRIES = [
    ("int8", 1, 4, 5, 3, 4, 3, 3, "SAME", (2, 2), "NONE", True, True, None),
    ("int8", 2, 3, 3, 5, 2, 2, 3, "VALID", (2, 1), "RELU", True, True, None),
    ("int8", 1, 4, 4, 8, 6, 3, 3, "SAME", (1, 1), "RELU6", False, True, None),
    ("int8", 1, 3, 4, 4, 3, 4, 4, "SAME", (2, 2), "NONE", True, False, None),
    ("int16", 1, 4, 5, 3, 4, 3, 3, "SAME", (2, 2), "NONE", True, True, None),
    ("int16", 2, 3, 3, 5, 2, 2, 3, "VALID", (2, 1), "RELU", True, True, None),
    ("int16", 1, 4, 5, 3, 4, 3, 3, "SAME", (2, 2), "NONE", True, True, "INT16"),
    ("float", 1, 4, 5, 3, 4, 3, 3, "SAME", (2, 2), "NONE", True, True, None),
    ("float", 1, 3, 4, 4, 3, 4, 4, "SAME", (2, 2), "RELU6", True, False, None),
]


def _tc_model(case, rng):
    kind, n, h, w, c, o, kh, kw, padding, s, act, pc, bias, btype = case
    oh = h * s[0] if padding == "SAME" else (h - 1) * s[0] + kh
    ow = w * s[1] if padding == "SAME" else (w - 1) * s[1] + kw
    shape = T((4,), "INT32", data=np.array([n, oh, ow, o], np.int32))
    x = _kind_io(kind, (n, h, w, c), 0.05, 3)
    y = _kind_io(kind, (n, oh, ow, o), 0.1, -5)
    wt = _kind_weights(rng, kind, (o, kh, kw, c), o, pc)
    b = _kind_bias(rng, kind, o, btype) if bias else None
    opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "fused_activation_function": act}
    return op_model("TRANSPOSE_CONV", [shape, wt, x, b], [y], options=opts, version=3), [_kind_feed(rng, kind, (n, h, w, c))]


@pytest.mark.parametrize("case", TC_GEOMETRIES, ids=_id)
def test_transpose_conv(runtime, case):
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    model, feeds = _tc_model(case, rng)
    _compare(runtime, model, feeds, case[0])


# ------------------------------------------------------------------------------------------------ pooling

POOL_CASES = [(op, kind, *geo) for op in ("AVERAGE_POOL_2D", "MAX_POOL_2D") for kind in ("int8", "int16", "float")
              for geo in [(1, 5, 6, 3, 3, 3, "SAME", (1, 1), "NONE"), (2, 7, 5, 8, 2, 2, "SAME", (2, 2), "RELU"),
                          (1, 9, 9, 4, 3, 2, "VALID", (2, 1), "RELU6"), (1, 4, 7, 5, 4, 3, "SAME", (1, 2), "RELU_N1_TO_1")]]


@pytest.mark.parametrize("case", POOL_CASES, ids=_id)
def test_pooling(runtime, case):
    op, kind, n, h, w, c, fh, fw, padding, s, act = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    oh, ow = _out_size(padding, s[0], 1, h, fh), _out_size(padding, s[1], 1, w, fw)
    x = _kind_io(kind, (n, h, w, c), 0.05, -3)
    y = _kind_io(kind, (n, oh, ow, c), 0.05, -3)
    opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "filter_height": fh, "filter_width": fw,
            "fused_activation_function": act}
    model = op_model(op, [x], [y], options=opts, version=2)
    _compare(runtime, model, [_kind_feed(rng, kind, (n, h, w, c))], kind)


# ------------------------------------------------------------------------------------------------ DSP path

@needs_c_runtime
@pytest.mark.parametrize("case", [c for c in CONV_GEOMETRIES if c[0] == "int8"] + [c for c in DW_GEOMETRIES if c[0] == "int8"],
                         ids=_id)
def test_dsp_path_equals_plain_path(backend, dsp_runner, case, tmp_path):
    """The SXTB16/SMLAD code (emulated in C on the host) gives the plain build's bytes (and TFLM's)."""
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    model, feeds = (_conv_model if len(case) == 15 else _dw_model)(case, rng)
    plain = _run_c(backend, model, feeds)[0]
    dsp = _run_exe(dsp_runner, model, feeds, plain, tmp_path)
    np.testing.assert_array_equal(dsp, plain)
    assert np.unique(plain).size > 2


@needs_c_runtime
def test_dsp_path_large_channels(backend, dsp_runner, tmp_path):
    """im2col with whole groups of four channels (the SXTB16 copy) and odd output-channel / pixel counts."""
    case = ("int8", 1, 7, 5, 32, 11, 3, 3, 1, "SAME", (1, 1), (1, 1), "RELU", True, True)
    rng = np.random.default_rng(11)
    model, feeds = _conv_model(case, rng)
    plain = _compare("c", model, feeds, "int8")
    np.testing.assert_array_equal(_run_exe(dsp_runner, model, feeds, plain, tmp_path), plain)


@needs_c_runtime
@pytest.mark.parametrize("op", ["DEPTHWISE_CONV_2D", "CONV_2D"])
def test_requantization_edge_rq_does_not_cover(backend, dsp_runner, op, tmp_path):
    """A last channel whose multiplier is >= 0.25 (edge_rq covers only right shifts >= 2): every channel falls back
    to edge_mbqm's multiplier and shift (the 5-byte per-channel form restarted from channel 0); plain and DSP builds
    equal Python and TFLM."""
    rng = np.random.default_rng(21)
    c = 8
    scales = list(rng.uniform(0.002, 0.02, c - 1)) + [0.6]  # multiplier 0.05 * 0.6 / 0.1 = 0.3
    shape = (1, 3, 3, c) if op == "DEPTHWISE_CONV_2D" else (c, 3, 3, c)
    data = rng.integers(-127, 128, shape, dtype=np.int8)
    last = (..., c - 1) if op == "DEPTHWISE_CONV_2D" else (c - 1,)
    data[last] = rng.integers(-1, 2, data[last].shape)  # small weights: the big multiplier does not saturate
    wt = T(shape, "INT8", scales, 0, quantized_dimension=3 if op == "DEPTHWISE_CONV_2D" else 0, data=data)
    b = T((c,), "INT32", 1.0, 0, data=rng.integers(-200, 200, c).astype(np.int32))
    opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
    if op == "DEPTHWISE_CONV_2D":
        opts["depth_multiplier"] = 1
    model = op_model(op, [T((1, 6, 5, c), "INT8", 0.05, 3), wt, b], [T((1, 6, 5, c), "INT8", 0.1, -5)], options=opts,
                     version=3)
    feeds = [rng.integers(-128, 128, (1, 6, 5, c), dtype=np.int8)]
    plain = _compare("c", model, feeds, "int8")
    np.testing.assert_array_equal(_run_exe(dsp_runner, model, feeds, plain, tmp_path), plain)
    assert np.unique(plain[..., -1]).size > 2 and np.unique(plain[..., 0]).size > 2


# ------------------------------------------------------------------------------------------------ refusals

def test_refusals_name_the_problem(runtime):
    from edge_sdk.errors import ModelError

    rng = np.random.default_rng(5)
    x = T((1, 4, 4, 3), "INT8", 0.05, 0)
    y = T((1, 4, 4, 2), "INT8", 0.1, 0)
    # float input with int16 weights runs nowhere (int8 weights: LiteRT's hybrid kernel, tests/test_ops_hybrid.py)
    xf, yf = T((1, 4, 4, 3), "FLOAT32"), T((1, 4, 4, 2), "FLOAT32")
    w16 = T((2, 3, 3, 3), "INT16", 0.01, 0, data=rng.integers(-127, 128, (2, 3, 3, 3)).astype(np.int16))
    odd = op_model("CONV_2D", [xf, w16, None], [yf], options={"padding": "SAME", "stride_h": 1, "stride_w": 1})
    refused_on(runtime, odd, [np.zeros((1, 4, 4, 3), np.float32)], ModelError)
    # pooling with different input / output quantization
    bad_pool = op_model("MAX_POOL_2D", [x], [T((1, 4, 4, 3), "INT8", 0.1, 0)],
                        options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "filter_height": 2, "filter_width": 2})
    refused_on(runtime, bad_pool, [np.zeros((1, 4, 4, 3), np.int8)], ModelError)
    # depth_multiplier contradicting the filter: the C runtime refuses it (Python takes the filter's multiplier)
    if runtime == "c":
        dw = op_model("DEPTHWISE_CONV_2D", [x, _kind_weights(rng, "int8", (1, 3, 3, 6), 6, True, 3), None],
                      [T((1, 4, 4, 6), "INT8", 0.1, 0)],
                      options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 3})
        refused_on(runtime, dw, [np.zeros((1, 4, 4, 3), np.int8)], ModelError)
    del y


# ------------------------------------------------------------------------------------------------ real models

@needs_c_runtime
@pytest.mark.parametrize("relative", ["tflite-micro/person_detect.tflite",
                                      pytest.param("tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite",
                                                   marks=pytest.mark.slow)])
def test_real_model_bit_exact(backend, relative):
    """Whole models: the C runtime has all their ops."""
    from edge_sdk.model import read_model

    path = shared_model(relative)
    assert backend.missing_ops(read_model(path)) == []
    model = path.read_bytes()
    rng = np.random.default_rng(3)
    c = backend.CInterpreter(model_content=model)
    c.allocate_tensors()
    feeds = [rng.integers(-128, 128, tuple(d["shape"])).astype(d["dtype"]) for d in c.get_input_details()]
    ours_c = _run_c(backend, model, feeds)
    for a, b in zip(ours_c, run_ours(model, feeds)):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------------------------------ build switches

@needs_c_runtime
def test_build_without_float32_int16_refuses_those_convs(tmp_path):
    """A runner built with -DEDGE_WITH_FLOAT32=0 -DEDGE_WITH_INT16=0 (a per-model build's switches) still runs an
    int8 CONV_2D bit-exactly, and refuses float32 CONV_2D / TRANSPOSE_CONV and int16 DEPTHWISE_CONV_2D at load
    with EDGE_UNSUPPORTED_TYPE (exit 3, the reason naming the op and the compiled-out type)."""
    import re

    table = tmp_path / "edge_ops_generated.c"
    subprocess.run(["python3", str(FW / "tools" / "gen_ops.py"), str(table)], check=True, capture_output=True)
    exe = tmp_path / "edge-run-c"
    sources = [str(FW / "src" / "edge.c"), *map(str, sorted((FW / "src" / "kernels").glob("*.c"))),
               str(FW / "host" / "edge_host.c"), str(FW / "host" / "edge_run.c"), str(table)]
    proc = subprocess.run(["gcc", "-std=c99", "-O0", "-Wall", "-Wextra", "-Werror", "-DEDGE_WITH_FLOAT32=0",
                           "-DEDGE_WITH_INT16=0", f"-I{FW / 'include'}", f"-I{FW / 'src'}", f"-I{FW / 'host'}", "-o",
                           str(exe), *sources, "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rng = np.random.default_rng(11)
    model, feeds = _conv_model(CONV_GEOMETRIES[0], rng)
    want = run_ours(model, feeds)[0]
    assert np.array_equal(_run_exe(exe, model, feeds, want, tmp_path), want)
    codes = re.findall(r"^EDGE_STATUS\((\w+),", (FW / "include" / "edge_status.def").read_text(), re.M)
    refused = {"CONV_2D FLOAT32": _conv_model(CONV_GEOMETRIES[14], rng), "DEPTHWISE_CONV_2D INT16": _dw_model(DW_GEOMETRIES[7], rng),
               "TRANSPOSE_CONV FLOAT32": _tc_model(TC_GEOMETRIES[-1], rng)}
    for what, (data, feeds) in refused.items():
        op, dtype = what.split()
        (tmp_path / "r.tflite").write_bytes(data)
        (tmp_path / "r.in").write_bytes(b"".join(np.ascontiguousarray(x).tobytes() for x in feeds))
        proc = subprocess.run([str(exe), str(tmp_path / "r.tflite"), str(tmp_path / "r.in"), str(tmp_path / "r.out")],
                              capture_output=True, text=True)
        assert proc.returncode == 3, (what, proc.returncode, proc.stderr)
        assert f"status {codes.index('EDGE_UNSUPPORTED_TYPE')}:" in proc.stderr, (what, proc.stderr)
        assert f"({op} " in proc.stderr and f"{dtype} compiled out" in proc.stderr, (what, proc.stderr)


# ------------------------------------------------------------------------------------------------ Cortex-M4 asm

# depthwise int8 shapes for the M4 asm paths (the host runs their C twins): inside runs of 3x3 windows, borders
# on the SXTAB16 row loop, strides, dilations, a 5x3 window, channels past a multiple of four, no bias.
DW_ASM_CASES = [
    ("int8", 1, 7, 9, 12, 1, 3, 3, "SAME", (2, 2), (1, 1), "RELU6", True, True),
    ("int8", 1, 9, 9, 8, 1, 3, 3, "SAME", (2, 1), (2, 2), "NONE", True, True),
    ("int8", 1, 5, 7, 14, 1, 5, 3, "SAME", (1, 2), (1, 1), "RELU_N1_TO_1", True, False),
]


@needs_c_runtime
@pytest.mark.slow
def test_depthwise_asm_on_qemu(backend, tmp_path, monkeypatch):
    """The DSP asm (dw_run3x3, DW_ROW4 with SXTAB16, dw_store4) on the emulated Cortex-M4 board equals the host
    build (itself checked against Python / TFLM by the tests above), one firmware per case."""
    if not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")):
        pytest.skip("qemu-system-arm / arm-none-eabi-gcc missing")
    from edge_sdk.device import qemu_board as qb
    from edge_sdk.tools import flash as fl
    from edge_sdk.device.serial_link import SerialLink

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    for k, case in enumerate(DW_ASM_CASES):
        rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
        model, feeds = _dw_model(case, rng)
        want = _run_c(backend, model, feeds)[0]
        path = tmp_path / f"dw{k}.tflite"
        path.write_bytes(model)
        r = fl.flash(path, "qemu-mps2-an386", build_dir=tmp_path / f"build{k}")
        try:
            with SerialLink(r.port, timeout=1.0) as link:
                link.expect_model(model)
                link.set_input(0, feeds[0])
                link.invoke(1)
                got = np.asarray(link.get_output(0)).reshape(want.shape)
        finally:
            if r.pid:
                qb._kill_group(r.pid, r.pid)
            qb.stop_board(all=True)
        np.testing.assert_array_equal(got, want, err_msg=repr(case))
        assert np.unique(want).size > 2


@needs_c_runtime
@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV"])
def test_int16_bias_near_int64_limits_under_ubsan(op, tmp_path, asan_runner):
    """An INT64 bias next to INT64_MIN / INT64_MAX (a fuzzer finding on TRANSPOSE_CONV): the int16 kernels add it
    wrapping, like the hardware add, so the ASan/UBSan runner reports no signed overflow."""
    runner = asan_runner
    rng = np.random.default_rng(8)
    lim = np.iinfo(np.int64)
    b = T((2,), "INT64", [2e-5, 4e-5], 0, data=np.array([lim.min + 5, lim.max - 5], np.int64))
    x = T((1, 4, 4, 2), "INT16", 0.002, 0)
    opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
    if op == "TRANSPOSE_CONV":
        shape = T((4,), "INT32", data=np.array([1, 4, 4, 2], np.int32))
        w = T((2, 3, 3, 2), "INT8", [0.01, 0.02], 0, data=rng.integers(-127, 128, (2, 3, 3, 2), dtype=np.int8))
        model = op_model(op, [shape, w, x, b], [T((1, 4, 4, 2), "INT16", 0.01, 0)], options=opts, version=3)
    else:
        shape_w = (1, 3, 3, 2) if op == "DEPTHWISE_CONV_2D" else (2, 3, 3, 2)
        w = T(shape_w, "INT8", [0.01, 0.02], 0, quantized_dimension=3 if op == "DEPTHWISE_CONV_2D" else 0,
              data=rng.integers(-127, 128, shape_w, dtype=np.int8))
        if op == "DEPTHWISE_CONV_2D":
            opts["depth_multiplier"] = 1
        model = op_model(op, [x, w, b], [T((1, 4, 4, 2), "INT16", 0.01, 0)], options=opts, version=3)
    feeds = [rng.integers(-3000, 3000, (1, 4, 4, 2)).astype(np.int16)]
    (tmp_path / "m.tflite").write_bytes(model)
    (tmp_path / "in.bin").write_bytes(feeds[0].tobytes())
    proc = subprocess.run([str(runner), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "runtime error" not in proc.stderr, proc.stderr[-2000:]


# ------------------------------------------------------------------------------------------------ window edges

@needs_c_runtime
def test_conv_window_edges(backend):
    """edge_conv_window's 32-bit arithmetic at its edges: a VALID dilated window exactly as large as the input
    (one output), a stride of 2^31 - 1 with SAME (in + stride - 1 past INT32_MAX; TFLM's int arithmetic overflows
    there, so Python is the reference), and a VALID window one larger than the input refused."""
    from edge_sdk.errors import ModelError

    rng = np.random.default_rng(31)
    # h 7, w 5, a 3x2 window: dilations 3, 4 make it 7x5 (exact fit), strides larger than the input
    exact = ("int8", 1, 7, 5, 4, 3, 3, 2, 1, "VALID", (5, 3), (3, 4), "NONE", True, True)
    model, feeds = _conv_model(exact, rng)
    assert _compare("c", model, feeds, "int8").shape == (1, 1, 1, 3)
    huge = ("int8", 1, 7, 5, 4, 3, 3, 2, 1, "SAME", (2**31 - 1, 2**31 - 1), (1, 2), "NONE", True, True)
    model, feeds = _conv_model(huge, rng)
    c_out = _run_c(backend, model, feeds)[0]
    assert c_out.shape == (1, 1, 1, 3)
    np.testing.assert_array_equal(c_out, run_ours(model, feeds)[0])
    assert np.unique(c_out).size > 1
    for dil in ((4, 1), (1, 5)):  # eff 9 > h = 7, eff 6 > w = 5
        x, wt = T((1, 7, 5, 4), "INT8", 0.05, 3), _kind_weights(rng, "int8", (3, 3, 2, 4), 3, True)
        bad = op_model("CONV_2D", [x, wt, None], [T((1, 1, 1, 3), "INT8", 0.1, -5)],
                       options={"padding": "VALID", "stride_h": 1, "stride_w": 1, "dilation_h_factor": dil[0],
                                "dilation_w_factor": dil[1]}, version=3)
        with pytest.raises(ModelError, match="window"):
            backend.CInterpreter(model_content=bad).allocate_tensors()
