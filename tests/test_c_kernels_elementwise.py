"""C runtime (firmware_c) element-wise and activation kernels, bit-exact with our Python kernels and TFLM.

ADD, SUB, MUL, SOFTMAX, LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, HARD_SWISH, LEAKY_RELU, PRELU, QUANTIZE,
DEQUANTIZE: one-op models (tests/oprunner.op_model) over types, broadcast shapes, scales / zero points and
fused activations; unary int8 ops over all 256 inputs, binary int8 ops over all 65536 input pairs (a (256, 1)
by (1, 256) broadcast). Integer outputs must equal the Python interpreter's and TFLM's exactly; float32 within
1e-5 relative. The seanet add/sub/leaky_relu/quantize models are checked against TFLM's goldens.
"""

from __future__ import annotations

import csv
import shutil

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError

from tests.conftest import shared_models
from tests.oprunner import T, assert_same, op_model, run_c, run_ours
from tests.peers import run_tflm

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None,
                                reason="the C runtime needs gcc and make")

FLOAT_RTOL = 1e-5
FLOAT_ATOL = 1e-6
ALL_INT8 = np.arange(-128, 128, dtype=np.int8)


@pytest.fixture(scope="module")
def backend():
    from edge_sdk.runtime import c_build, c_interpreter

    c_build.build()
    return c_interpreter


def check(model: bytes, inputs, tflm: bool = True) -> list[np.ndarray]:
    """C == our Python interpreter (== TFLM when it runs the op); float32 to 1e-5 relative."""
    c = run_c(model, inputs)
    ours = run_ours(model, inputs)
    is_float = any(o.dtype.kind == "f" for o in ours)
    tol = dict(rtol=FLOAT_RTOL, atol=FLOAT_ATOL) if is_float else {}
    assert_same(c, ours, what="C vs Python", **tol)
    if tflm:
        assert_same(c, run_tflm(model, inputs), what="C vs TFLM", **tol)
    return c


def rand(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 4).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


DTYPES = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "FLOAT32": np.float32, "UINT8": np.uint8}


def qspec(shape, type_, scale, zp, data=None):
    if type_ in ("FLOAT32", "INT32"):
        return T(shape, type_, data=data)
    return T(shape, type_, scale=scale, zero_point=zp, data=data)


# ------------------------------------------------------------------------------------------------ ADD / SUB / MUL

BINARY_SHAPES = [
    ((2, 3, 4), (2, 3, 4)),
    ((2, 3, 4), (4,)),
    ((2, 1, 4), (1, 3, 1)),
    ((1,), (3, 5)),
    ((2, 1, 3, 1, 2, 2), (1, 2, 1, 4, 1, 2)),  # rank 6 both ways
    ((5, 1), (1,)),
]
# (type, (scale_a, zp_a), (scale_b, zp_b), (scale_out, zp_out))
BINARY_QUANT = [
    ("INT8", (0.05, -3), (0.02, 7), (0.06, 1)),
    ("INT8", (0.5, 100), (0.0001, -128), (0.3, -20)),
    ("INT16", (0.001, 0), (0.0005, 0), (0.002, 0)),
    ("INT16", (3.0e-4, 0), (1.2e-2, 0), (1.5e-2, 0)),
    ("FLOAT32", None, None, None),
    ("INT32", None, None, None),
]


def _binary_case(op, type_, qa, qb, qo, sa, sb, act, rng, exhaustive=False):
    qa = qa or (None, None)
    qb = qb or (None, None)
    qo = qo or (None, None)
    if exhaustive:
        sa, sb = (256, 1), (1, 256)
    out_shape = np.broadcast_shapes(sa, sb)
    a, b = qspec(sa, type_, *qa), qspec(sb, type_, *qb)
    y = qspec(out_shape, type_, *qo)
    model = op_model(op, [a, b], [y], options={"fused_activation_function": act})
    if exhaustive:
        xs = [ALL_INT8.reshape(sa), ALL_INT8.reshape(sb)]
    else:
        xs = [rand(rng, sa, DTYPES[type_]), rand(rng, sb, DTYPES[type_])]
        if type_ == "INT32":
            xs = [x // 4 for x in xs]
        if op == "MUL" and type_ == "INT32":
            xs = [x >> 16 for x in xs]
    return model, xs


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("quant", BINARY_QUANT, ids=lambda q: f"{q[0]}{q[1] or ''}")
@pytest.mark.parametrize("act", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
def test_binary_ops_over_shapes(backend, op, quant, act, rng):
    type_, qa, qb, qo = quant
    if op == "MUL" and type_ == "INT16":
        qa, qb, qo = (qa[0], 0), (qb[0], 0), (qo[0], 0)
    # TFLM has no int32 SUB with an activation / int32 MUL+activation: compare with our Python then
    tflm = not (type_ == "INT32" and (op == "SUB" or act != "NONE"))
    for sa, sb in BINARY_SHAPES:
        model, xs = _binary_case(op, type_, qa, qb, qo, sa, sb, act, rng)
        check(model, xs, tflm=tflm)


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("quant", [q for q in BINARY_QUANT if q[0] == "INT8"], ids=lambda q: str(q[1]))
@pytest.mark.parametrize("act", ["NONE", "RELU6"])
def test_binary_int8_all_input_pairs(backend, op, quant, act, rng):
    type_, qa, qb, qo = quant
    model, xs = _binary_case(op, type_, qa, qb, qo, None, None, act, rng, exhaustive=True)
    y = check(model, xs)
    assert len(np.unique(y[0])) > 1  # not a constant


@pytest.mark.parametrize("op", ["ADD", "SUB"])
@pytest.mark.parametrize("quant", [q for q in BINARY_QUANT if q[0] == "INT8"], ids=lambda q: str(q[1]))
@pytest.mark.parametrize("n", [4095, 4096, 4099, 65536])
def test_addsub_int8_large_contiguous(backend, op, quant, n, rng):
    # int8 ADD/SUB of >= 4096 elements without broadcasting tabulates each input's 256 scaled values in the
    # output's last bytes, then computes those last bytes element by element (4095: below the threshold;
    # 4099: a table start that needs aligning; 65536: every input pair, in one flat vector)
    type_, qa, qb, qo = quant
    if n == 65536:
        xs = [np.repeat(ALL_INT8, 256), np.tile(ALL_INT8, 256)]
    else:
        xs = [rand(rng, (n,), np.int8), rand(rng, (n,), np.int8)]
    model = op_model(op, [qspec((n,), type_, *qa), qspec((n,), type_, *qb)], [qspec((n,), type_, *qo)],
                     options={"fused_activation_function": "RELU6" if n == 4099 else "NONE"})
    y = check(model, xs)
    assert len(np.unique(y[0][-2048:])) > 1 and len(np.unique(y[0][:-2048])) > 1


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("type_", ["INT8", "INT16"])
def test_binary_multiplier_shifts_out_of_reach(backend, op, type_, rng):
    # scale ratios whose multiplier shifts lie past +-31 (a right shift past 31 gives 0; so does a left shift
    # past 31): C == Python (TFLM where it runs the case)
    dt = DTYPES[type_]
    cases = [((1.0, 0), (1e-12, 0), (1.0, 0)),  # SUB/ADD: the second input's ratio 2^-41
             ((1.0, 0), (1.0, 0), (1e-16, 0)),  # ADD/SUB output ratio ~2^34; MUL 1e16
             ((1e-9, 0), (1e-9, 0), (1.0, 0))]  # MUL ratio 1e-18 (shift -59)
    for qa, qb, qo in cases:
        model = op_model(op, [qspec((64,), type_, *qa), qspec((64,), type_, *qb)], [qspec((64,), type_, *qo)])
        xs = [rand(rng, (64,), dt), rand(rng, (64,), dt)]
        c = run_c(model, xs)
        assert_same(c, run_ours(model, xs), what="C vs Python")


def test_binary_refusals(backend):
    from edge_sdk.runtime.c_interpreter import CInterpreter

    bad_shapes = op_model("ADD", [T((2, 3), "FLOAT32"), T((4, 3), "FLOAT32")], [T((2, 3), "FLOAT32")])
    with pytest.raises(ModelError, match="broadcast"):
        CInterpreter(model_content=bad_shapes).allocate_tensors()
    rank7 = op_model("ADD", [T((2, 1, 1, 1, 1, 1, 3), "FLOAT32"), T((1, 2, 1, 1, 1, 1, 3), "FLOAT32")],
                     [T((2, 2, 1, 1, 1, 1, 3), "FLOAT32")])
    with pytest.raises(UnsupportedOpError, match="rank 6"):
        CInterpreter(model_content=rank7).allocate_tensors()
    mixed = op_model("ADD", [T((3,), "INT8", 0.1, 0), T((3,), "INT16", 0.1, 0)], [T((3,), "INT8", 0.1, 0)])
    with pytest.raises(UnsupportedOpError):
        CInterpreter(model_content=mixed).allocate_tensors()
    tanh = op_model("ADD", [T((3,), "FLOAT32"), T((3,), "FLOAT32")], [T((3,), "FLOAT32")],
                    options={"fused_activation_function": "TANH"})
    with pytest.raises(UnsupportedOpError, match="activation"):
        CInterpreter(model_content=tanh).allocate_tensors()


def test_binary_constant_operand_and_same_rank_7(backend, rng):
    # a constant second operand (weights read in place) and equal shapes above rank 6 (no broadcast needed)
    w = rng.integers(-128, 128, size=(4,)).astype(np.int8)
    model = op_model("MUL", [T((3, 4), "INT8", 0.1, 2), T((4,), "INT8", 0.02, -1, data=w)], [T((3, 4), "INT8", 0.01, 0)])
    check(model, [rand(rng, (3, 4), np.int8)])
    shape = (1, 2, 1, 2, 1, 2, 3)
    model = op_model("ADD", [T(shape, "FLOAT32"), T(shape, "FLOAT32")], [T(shape, "FLOAT32")])
    check(model, [rand(rng, shape, np.float32), rand(rng, shape, np.float32)], tflm=False)


# ------------------------------------------------------------------------------------------------ unary activations

ALL_INT16 = np.arange(-32768, 32768, dtype=np.int16)
# (op, type, (in_scale, in_zp), (out_scale, out_zp), options)
UNARY = [
    ("RELU", "INT8", (0.1, 0), (0.05, -10), None),
    ("RELU", "INT8", (0.02, -100), (0.1, 50), None),
    ("RELU", "INT16", (0.001, 0), (0.0007, 0), None),
    ("RELU6", "INT8", (0.05, -20), (0.05, -20), None),
    ("RELU6", "INT8", (0.03, 100), (0.03, 100), None),
    ("RELU6", "INT16", (0.0004, 0), (0.0004, 0), None),
    ("RELU_N1_TO_1", "INT8", (0.01, 3), (1 / 128, 0), None),
    ("RELU_N1_TO_1", "INT16", (1e-4, 0), (4e-5, 0), None),
    ("LEAKY_RELU", "INT8", (0.05, -3), (0.04, 7), {"alpha": 0.2}),
    ("LEAKY_RELU", "INT8", (0.1, 60), (0.3, -60), {"alpha": -0.5}),
    ("LEAKY_RELU", "INT8", (0.02, 0), (0.01, 0), {"alpha": 1.7}),
    ("LEAKY_RELU", "INT16", (3e-4, 0), (2e-4, 0), {"alpha": 0.01}),
    ("HARD_SWISH", "INT8", (0.05, -10), (0.03, -100), None),
    ("HARD_SWISH", "INT8", (0.02, 40), (0.011, 5), None),
    ("HARD_SWISH", "INT8", (0.1, 0), (0.2, -128), None),
    ("LOGISTIC", "INT8", (0.05, 2), (1 / 256, -128), None),
    ("LOGISTIC", "INT8", (0.25, -50), (1 / 256, -128), None),
    ("LOGISTIC", "INT16", (1 / 4096, 0), (1 / 32768, 0), None),
    ("LOGISTIC", "INT16", (3.1e-4, 0), (1 / 32768, 0), None),
    ("TANH", "INT8", (0.03, -5), (1 / 128, 0), None),
    ("TANH", "INT8", (0.125, 90), (1 / 128, 0), None),
    ("TANH", "INT16", (1 / 4096, 0), (1 / 32768, 0), None),
    ("TANH", "INT16", (1 / 2048, 0), (1 / 32768, 0), None),
    ("TANH", "INT16", (7e-5, 0), (1 / 32768, 0), None),
]
NOT_IN_TFLM = {"RELU_N1_TO_1"}


@pytest.mark.parametrize("case", UNARY, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_unary_quantized_over_every_input(backend, case):
    op, type_, (si, zi), (so, zo), options = case
    x = ALL_INT8 if type_ == "INT8" else ALL_INT16
    shape = (2, x.size // 2)
    model = op_model(op, [T(shape, type_, si, zi)], [T(shape, type_, so, zo)], options=options)
    y = check(model, [x.reshape(shape)], tflm=op not in NOT_IN_TFLM)
    assert len(np.unique(y[0])) > 4


@pytest.mark.parametrize("op,options", [("RELU", None), ("RELU6", None), ("RELU_N1_TO_1", None),
                                        ("LEAKY_RELU", {"alpha": 0.3}), ("HARD_SWISH", None), ("LOGISTIC", None),
                                        ("TANH", None)])
def test_unary_float32(backend, op, options, rng):
    x = np.concatenate([(rng.standard_normal(200) * 6), [0.0, -0.0, 3.0, -3.0, 6.0, 1.0, -1.0, 20.0, -20.0,
                                                         16.7, -9.5]]).astype(np.float32)
    model = op_model(op, [T((1, x.size), "FLOAT32")], [T((1, x.size), "FLOAT32")], options=options)
    check(model, [x.reshape(1, -1)], tflm=op not in NOT_IN_TFLM)


def test_unary_refusals(backend):
    from edge_sdk.runtime.c_interpreter import CInterpreter

    cases = [
        (op_model("LOGISTIC", [T((4,), "INT16", 1e-3, 0)], [T((4,), "INT16", 1e-3, 0)]), UnsupportedOpError),
        (op_model("LOGISTIC", [T((4,), "INT8", 0.1, 0)], [T((4,), "INT8", 1 / 256, 0)]), ModelError),
        (op_model("RELU", [T((4,), "INT16", 1e-3, 3)], [T((4,), "INT16", 1e-3, 0)]), ModelError),
        (op_model("HARD_SWISH", [T((4,), "INT16", 1e-3, 0)], [T((4,), "INT16", 1e-3, 0)]), UnsupportedOpError),
        (op_model("TANH", [T((4,), "INT8", 0.1, 0)], [T((4,), "INT16", 1e-3, 0)]), UnsupportedOpError),
        (op_model("RELU", [T((4,), "INT8")], [T((4,), "INT8")]), ModelError),  # no quantization
    ]
    for model, err in cases:
        with pytest.raises(err):
            CInterpreter(model_content=model).allocate_tensors()


# ------------------------------------------------------------------------------------------------ PRELU

@pytest.mark.parametrize("type_", ["INT8", "INT16", "FLOAT32"])
@pytest.mark.parametrize("alpha_const", [True, False], ids=["const-alpha", "input-alpha"])
def test_prelu(backend, type_, alpha_const, rng):
    cases = [((1, 4, 4, 3), (3,)), ((2, 3, 5), (1, 5)), ((1, 2, 2, 4), (1, 2, 2, 4)), ((256,), (1,))]
    for xs, as_ in cases:
        if type_ == "FLOAT32":
            x = T(xs, "FLOAT32")
            a_val = (rng.standard_normal(as_) * 0.5).astype(np.float32)
            alpha = T(as_, "FLOAT32", data=a_val if alpha_const else None)
            y = T(np.broadcast_shapes(xs, as_), "FLOAT32")
            xv = rand(rng, xs, np.float32)
        else:
            zx = 0 if type_ == "INT16" else 5
            x = T(xs, type_, 0.02, zx)
            a_val = rand(rng, as_, np.int8)
            alpha = T(as_, "INT8", 0.004, -7, data=a_val if alpha_const else None)
            y = T(np.broadcast_shapes(xs, as_), type_, 0.015, 0 if type_ == "INT16" else -3)
            xv = ALL_INT8 if xs == (256,) and type_ == "INT8" else rand(rng, xs, DTYPES[type_])
        model = op_model("PRELU", [x, alpha], [y])
        inputs = [xv] if alpha_const else [xv, a_val]
        check(model, inputs)


# ------------------------------------------------------------------------------------------------ QUANTIZE / DEQUANTIZE

QUANT_PAIRS = [  # (in type, in (scale, zp), out type, out (scale, zp))
    ("FLOAT32", None, "INT8", (0.05, -3)),
    ("FLOAT32", None, "INT8", (0.37, 127)),
    ("FLOAT32", None, "UINT8", (0.02, 128)),
    ("FLOAT32", None, "INT16", (0.001, 0)),
    ("INT8", (0.05, -3), "INT8", (0.02, 10)),
    ("INT8", (0.05, -3), "UINT8", (0.05, 125)),
    ("UINT8", (0.05, 128), "INT8", (0.05, 0)),
    ("INT8", (0.1, 4), "INT16", (0.0003, 0)),
    ("INT8", (0.1, 4), "INT32", (0.0001, 0)),
    ("INT16", (0.0002, 0), "INT8", (0.03, -8)),
    ("INT16", (0.0002, 0), "INT16", (0.0007, 0)),
    ("INT16", (0.0002, 0), "INT32", (1e-6, 0)),
    ("INT32", (1e-5, 0), "INT8", (0.04, 2)),
    ("INT32", (1e-5, 0), "INT16", (0.0004, 0)),
]


@pytest.mark.parametrize("case", QUANT_PAIRS, ids=lambda c: f"{c[0]}-{c[2]}-{c[3]}")
def test_quantize(backend, case, rng):
    tin, qin, tout, qout = case
    if tin == "FLOAT32":
        x = np.concatenate([rng.standard_normal(500) * 40, [0.5, -0.5, 1.5, -2.5, 0.025, -0.075, 1e9, -1e9,
                                                            np.inf, -np.inf, np.nan]]).astype(np.float32)
        x = np.concatenate([x, (np.arange(-300, 300) * qout[0] * 0.5).astype(np.float32)])  # halfway points
    elif tin in ("INT8", "UINT8"):
        x = np.arange(256, dtype=np.uint8).view(np.int8) if tin == "INT8" else np.arange(256, dtype=np.uint8)
    elif tin == "INT16":
        x = ALL_INT16
    else:
        x = np.concatenate([rng.integers(-(1 << 31), 1 << 31, 1000), rng.integers(-5000, 5000, 1000),
                            [-(1 << 31), (1 << 31) - 1]]).astype(np.int32)
    xin = T(x.shape, tin, *qin) if qin else T(x.shape, tin)
    model = op_model("QUANTIZE", [xin], [T(x.shape, tout, *qout)])
    # TFLM's float -> int conversion of NaN / inf is the x86 one the Python kernel models; compare with it too
    # (TFLM has no float32 -> uint8 QUANTIZE)
    check(model, [x], tflm=not (tin == "FLOAT32" and tout == "UINT8"))


@pytest.mark.parametrize("case", [("INT8", 0.05, -3), ("UINT8", 0.2, 128), ("INT16", 3e-4, 0), ("INT8", 1e-3, 127)],
                         ids=str)
def test_dequantize_per_tensor(backend, case):
    type_, s, zp = case
    x = ALL_INT16 if type_ == "INT16" else (np.arange(256, dtype=np.uint8) if type_ == "UINT8"
                                            else ALL_INT8)
    model = op_model("DEQUANTIZE", [T(x.shape, type_, s, zp)], [T(x.shape, "FLOAT32")])
    y = check(model, [x])
    # exactly the Python kernel's double-rounded value, not just within tolerance
    assert np.array_equal(y[0], run_ours(model, [x])[0])


def test_dequantize_per_channel_and_float16(backend, rng):
    scales = np.array([0.1, 0.02, 0.5], np.float32)
    w = rand(rng, (2, 3, 4), np.int8)
    model = op_model("DEQUANTIZE", [T((2, 3, 4), "INT8", scales, [0, 3, -5], quantized_dimension=1, data=w)],
                     [T((2, 3, 4), "FLOAT32")])
    y = check(model, [], tflm=False)
    assert np.array_equal(y[0], run_ours(model, [])[0])
    h = np.concatenate([rng.standard_normal(100).astype(np.float16),
                        np.array([0, -0.0, 6e-8, -6e-8, 1e-5, 65504, -65504, np.inf, -np.inf], np.float16)])
    model = op_model("DEQUANTIZE", [T(h.shape, "FLOAT16")], [T(h.shape, "FLOAT32")])
    y = run_c(model, [h])
    assert np.array_equal(y[0], h.astype(np.float32))
    assert_same(y, run_ours(model, [h]))


# ------------------------------------------------------------------------------------------------ SOFTMAX

SOFTMAX_CASES = [  # (in type, (scale, zp), out type, (scale, zp), beta)
    ("INT8", (0.1, -10), "INT8", (1 / 256, -128), 1.0),
    ("INT8", (0.5, 3), "INT8", (1 / 256, -128), 1.0),
    ("INT8", (0.02, 0), "INT8", (1 / 256, -128), 2.0),
    ("INT8", (0.1, -10), "INT16", (1 / 65536, -32768), 1.0),
    ("INT16", (0.001, 0), "INT16", (1 / 32768, 0), 1.0),
    ("INT16", (0.0003, 0), "INT16", (1 / 32768, 0), 0.7),
    ("FLOAT32", None, "FLOAT32", None, 1.0),
    ("FLOAT32", None, "FLOAT32", None, 0.3),
]


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=lambda c: f"{c[0]}-{c[2]}-{c[1]}-b{c[4]}")
@pytest.mark.parametrize("shape", [(1, 10), (3, 2, 17), (4, 256), (5,)], ids=str)
def test_softmax(backend, case, shape, rng):
    tin, qin, tout, qout, beta = case
    x = rand(rng, shape, DTYPES[tin])
    if tin == "INT16":
        x = (x // 8).astype(np.int16)
    if shape == (4, 256) and tin == "INT8":
        x = np.stack([ALL_INT8, ALL_INT8[::-1], np.full(256, 7, np.int8), rand(rng, (256,), np.int8)])
    model = op_model("SOFTMAX", [qspec(shape, tin, *(qin or (None, None)))],
                     [qspec(shape, tout, *(qout or (None, None)))], options={"beta": beta})
    check(model, [x])


def test_softmax_refusals(backend):
    from edge_sdk.runtime.c_interpreter import CInterpreter

    wrong_out = op_model("SOFTMAX", [T((4,), "INT8", 0.1, 0)], [T((4,), "INT8", 1 / 128, 0)], options={"beta": 1.0})
    with pytest.raises(ModelError, match="1/256"):
        CInterpreter(model_content=wrong_out).allocate_tensors()
    int16_to_int8 = op_model("SOFTMAX", [T((4,), "INT16", 1e-3, 0)], [T((4,), "INT8", 1 / 256, -128)],
                             options={"beta": 1.0})
    with pytest.raises(UnsupportedOpError):
        CInterpreter(model_content=int16_to_int8).allocate_tensors()


# ------------------------------------------------------------------------------------------------ seanet goldens

def _read_csv(path, dtype):
    with open(path, newline="") as f:
        return np.array([int(v) for row in csv.reader(f) for v in row if v.strip()], dtype=dtype)


_SEANET = [p for fam in ("add", "sub", "leaky_relu", "quantize")
           for p in shared_models(f"tflite-micro/seanet/{fam}/*.tflite")]
_CSV = {"int8": np.int8, "int16": np.int16, "int32": np.int32}
# TFLM at the shared models' commit made these goldens; the tflite-micro wheel (our reference) computes the
# LEAKY_RELU identity multiplier in double and differs from them in a few elements.
WHEEL_DIFFERS_FROM_GOLDEN = {"leaky_relu3", "leaky_relu11", "leaky_relu18", "leaky_relu19"}


@pytest.mark.parametrize("path", _SEANET, ids=lambda p: p.stem)
def test_seanet_golden(backend, path):
    inputs = sorted(path.parent.glob(f"{path.stem}_input*_*.csv"))
    golden = sorted(path.parent.glob(f"{path.stem}_golden_*.csv"))
    assert inputs and golden, f"{path.stem}: no input / golden csv beside the model"
    model = path.read_bytes()
    from edge_sdk import Interpreter

    interp = Interpreter(model_content=model, backend="c")
    interp.allocate_tensors()
    xs = []
    for d, p in zip(interp.get_input_details(), inputs):
        xs.append(_read_csv(p, _CSV[p.stem.rsplit("_", 1)[1]]).reshape(d["shape"]).astype(d["dtype"]))
    c = run_c(model, xs)
    want = _read_csv(golden[0], _CSV[golden[0].stem.rsplit("_", 1)[1]])
    assert_same(c, run_ours(model, xs), what=f"{path.stem}: C vs Python")
    got = c[0].reshape(-1).astype(np.int64)
    if path.stem in WHEEL_DIFFERS_FROM_GOLDEN:
        assert_same(c, run_tflm(model, xs), what=f"{path.stem}: C vs TFLM wheel")
        assert 0 < np.count_nonzero(got != want) <= 3
    else:
        assert np.array_equal(got, want.astype(np.int64)), f"{path.stem}: differs from TFLM's golden"


def test_seanet_models_found_when_shared_present():
    from tests.conftest import SHARED_MODELS

    if not SHARED_MODELS.exists():
        pytest.skip("../shared/models is absent")
    assert len(_SEANET) >= 40


def test_quantize_rounds_like_tflm_at_the_float32_tie_edge(backend):
    # 0.5 - 2^-25 rounds to 0 (TfLiteRound is std::round); a float32 floor(|x| + 0.5) would give 1.
    # The Python kernel (edge_sdk/runtime/kernels/quantize.py _round_half_away) does the latter; TFLM is the reference.
    below_half = np.nextafter(np.float32(0.5), np.float32(0))
    x = np.array([below_half, -below_half, 0.5, -0.5, 1.5, 2.5, -2.5], np.float32)
    model = op_model("QUANTIZE", [T(x.shape, "FLOAT32")], [T(x.shape, "INT16", 1.0, 0)])
    c = run_c(model, [x])
    assert c[0].tolist() == [0, 0, 1, -1, 2, 3, -3]
    assert_same(c, run_tflm(model, [x]), what="C vs TFLM")


# ------------------------------------------------------------------------------------------------ whole models

# shared models whose every op the C runtime has and which use this file's ops (SOFTMAX, LOGISTIC, QUANTIZE, ADD)
WHOLE_MODELS = ["tflite-micro/person_detect.tflite", "tflite-micro/keyword_scrambled.tflite",
                "tflite-micro/dtln_noise_suppression.tflite", "tflite-micro/micro_speech_quantized.tflite",
                "tflite-micro/simple_add_model.tflite"]


@pytest.mark.parametrize("rel", WHOLE_MODELS, ids=lambda r: r.rsplit("/", 1)[1])
def test_whole_models_bit_exact(backend, rel):
    from tests.conftest import shared_model

    data = shared_model(rel).read_bytes()
    from edge_sdk import Interpreter

    interp = Interpreter(model_content=data, backend="c")
    interp.allocate_tensors()
    rng = np.random.default_rng(7)
    xs = [rand(rng, tuple(d["shape"]), np.dtype(d["dtype"])) for d in interp.get_input_details()]
    c = run_c(data, xs)
    assert_same(c, run_ours(data, xs), what=f"{rel}: C vs Python")
    assert_same(c, run_tflm(data, xs, isolate=True), what=f"{rel}: C vs TFLM")
