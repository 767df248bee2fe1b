"""LiteRT's hybrid (dynamic-range) kernels on both runtimes against LiteRT's reference kernels: float activations,
constant INT8 (or UINT8) weights, the input quantized on the fly per batch row (edge_sdk/runtime/kernels/hybrid.py,
firmware_c/src/kernels/hybrid.c).

Each case holds ours within 1e-4 of the peer's output range (the issue's bar); the cases say where they are bit for
bit. Batches > 1 hold an all-zero row (its scale is 1 and its product 0) beside rows of other ranges.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.oprunner import T, op_model, run_invokes, run_on, run_peer

RNG = np.random.default_rng(23)


def _close(ours, theirs, what: str) -> None:
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape, f"{what}: shape {a.shape} vs LiteRT {b.shape}"
        span = float(np.max(b) - np.min(b)) if b.size else 0.0
        err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if b.size else 0.0
        assert err <= 1e-4 * max(span, 1.0), f"{what}: max difference {err:.3g} over a range of {span:.3g}"


def _rows(shape, zero_row: bool = True) -> np.ndarray:
    """Float input rows of different ranges; row 0 all zero when there are several rows."""
    x = RNG.normal(size=shape).astype(np.float32)
    flat = x.reshape(shape[0], -1)
    flat *= np.linspace(0.2, 5.0, shape[0], dtype=np.float32)[:, None]
    if zero_row and shape[0] > 1:
        flat[0] = 0
    flat[-1] += 0.7  # a one-sided row: the asymmetric zero point moves
    return x


def _weights(shape, per_channel_axis: int | None, type_: str = "INT8"):
    """Symmetric int8 weights (as the converter writes them) with per-tensor or per-channel scales."""
    w = RNG.integers(-127, 128, size=shape).astype(np.int8)
    if per_channel_axis is None:
        return T(shape, type_, scale=0.013, zero_point=0, data=w if type_ == "INT8" else w.view(np.uint8))
    n = shape[per_channel_axis]
    scales = np.linspace(0.004, 0.03, n).astype(np.float32)
    return T(shape, type_, scale=scales, zero_point=[0] * n, quantized_dimension=per_channel_axis, data=w)


def _check(runtime, model, inputs, what):
    _close(run_on(runtime, model, inputs), run_peer(model, inputs, "litert"), what)


# --------------------------------------------------------------------------------------------- FULLY_CONNECTED


@pytest.mark.parametrize("batch,depth,units", [(1, 8, 4), (3, 16, 5), (4, 33, 7)])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("asymmetric", [False, True])
def test_fully_connected(runtime, batch, depth, units, per_channel, asymmetric):
    w = _weights((units, depth), 0 if per_channel else None)
    b = RNG.normal(size=units).astype(np.float32)
    model = op_model("FULLY_CONNECTED", [T((batch, depth), "FLOAT32"), w, T((units,), "FLOAT32", data=b)],
                     [T((batch, units), "FLOAT32")], {"asymmetric_quantize_inputs": asymmetric}, version=9)
    _check(runtime, model, [_rows((batch, depth))], "FULLY_CONNECTED")


@pytest.mark.parametrize("act", ["RELU", "RELU6", "RELU_N1_TO_1", "TANH"])
def test_fully_connected_activation_keep_num_dims(runtime, act):
    w = _weights((6, 10), None)
    model = op_model("FULLY_CONNECTED", [T((2, 3, 10), "FLOAT32"), w, None], [T((2, 3, 6), "FLOAT32")],
                     {"fused_activation_function": act, "keep_num_dims": True, "asymmetric_quantize_inputs": True},
                     version=9)
    _check(runtime, model, [_rows((2, 3, 10)) * 3], f"FULLY_CONNECTED {act}")


def test_fully_connected_uint8_weights_and_zero_input(runtime):
    """Legacy UINT8 weights (LiteRT reads their bytes as int8) and an all-zero input (y = act(bias))."""
    w = _weights((5, 12), None, "UINT8")
    b = RNG.normal(size=5).astype(np.float32)
    model = op_model("FULLY_CONNECTED", [T((2, 12), "FLOAT32"), w, T((5,), "FLOAT32", data=b)],
                     [T((2, 5), "FLOAT32")], {"fused_activation_function": "RELU"}, version=9)
    _check(runtime, model, [_rows((2, 12))], "FULLY_CONNECTED UINT8")
    _check(runtime, model, [np.zeros((2, 12), np.float32)], "FULLY_CONNECTED zero input")


# --------------------------------------------------------------------------------------------- CONV_2D


CONV_CASES = [  # (input shape, filter (o, kh, kw), stride, dilation, padding)
    ((1, 6, 6, 3), (4, 3, 3), 1, 1, "SAME"),
    ((2, 7, 9, 4), (5, 3, 2), 2, 1, "VALID"),
    ((3, 8, 8, 2), (3, 3, 3), 1, 2, "SAME"),
    ((2, 5, 5, 8), (6, 1, 1), 1, 1, "VALID"),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "x".join(map(str, c[0])))
@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_2d(runtime, case, per_channel):
    """Per-tensor weights: LiteRT's EvalHybrid (symmetric); per-channel: EvalHybridPerChannel (asymmetric)."""
    shape, (o, kh, kw), stride, dilation, padding = case
    w = _weights((o, kh, kw, shape[3]), 0 if per_channel else None)
    b = RNG.normal(size=o).astype(np.float32)
    options = {"padding": padding, "stride_h": stride, "stride_w": stride, "dilation_h_factor": dilation,
               "dilation_w_factor": dilation, "fused_activation_function": "RELU6"}
    model = op_model("CONV_2D", [T(shape, "FLOAT32"), w, T((o,), "FLOAT32", data=b)], [T((1,), "FLOAT32")],
                     options, version=5)
    _check(runtime, model, [_rows(shape)], "CONV_2D")


def test_conv_2d_uint8_weights(runtime):
    """Legacy UINT8 filter bytes read as int8 (LiteRT's EvalHybrid, symmetric, one scale)."""
    w = _weights((3, 2, 2, 4), None, "UINT8")
    b = RNG.normal(size=3).astype(np.float32)  # LiteRT's hybrid conv needs its bias input
    model = op_model("CONV_2D", [T((2, 5, 5, 4), "FLOAT32"), w, T((3,), "FLOAT32", data=b)], [T((1,), "FLOAT32")],
                     {"padding": "VALID", "stride_h": 1, "stride_w": 1}, version=5)
    _check(runtime, model, [_rows((2, 5, 5, 4))], "CONV_2D UINT8")


def test_conv_2d_grouped(runtime):
    """Groups run LiteRT's per-channel kernel (asymmetric; it needs one scale per filter)."""
    w = _weights((4, 3, 3, 2), 0)
    b = RNG.normal(size=4).astype(np.float32)
    model = op_model("CONV_2D", [T((2, 5, 5, 4), "FLOAT32"), w, T((4,), "FLOAT32", data=b)], [T((1,), "FLOAT32")],
                     {"padding": "SAME", "stride_h": 1, "stride_w": 1}, version=5)
    _check(runtime, model, [_rows((2, 5, 5, 4))], "CONV_2D grouped")


# --------------------------------------------------------------------------------------------- DEPTHWISE_CONV_2D


@pytest.mark.parametrize("shape,k,mult,stride,padding", [
    ((1, 6, 6, 3), 3, 1, 1, "SAME"),
    ((2, 7, 8, 4), 3, 2, 2, "VALID"),
    ((3, 5, 5, 2), 2, 3, 1, "SAME"),
])
def test_depthwise_conv_2d(runtime, shape, k, mult, stride, padding):
    oc = shape[3] * mult
    w = _weights((1, k, k, oc), 3)
    b = RNG.normal(size=oc).astype(np.float32)
    model = op_model("DEPTHWISE_CONV_2D", [T(shape, "FLOAT32"), w, T((oc,), "FLOAT32", data=b)],
                     [T((1,), "FLOAT32")], {"padding": padding, "stride_h": stride, "stride_w": stride,
                                            "depth_multiplier": mult, "fused_activation_function": "RELU"},
                     version=6)
    _check(runtime, model, [_rows(shape)], "DEPTHWISE_CONV_2D")


# --------------------------------------------------------------------------------------------- BATCH_MATMUL


@pytest.mark.parametrize("lhs,rhs,adj_x,adj_y", [
    ((3, 8), (8, 5), False, False),
    ((2, 4, 6), (6, 3), False, False),
    ((2, 6, 4), (3, 6), True, True),
    ((2, 3, 7), (2, 7, 4), False, False),
])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("asymmetric", [False, True])
def test_batch_matmul(runtime, lhs, rhs, adj_x, adj_y, per_channel, asymmetric):
    axis = (len(rhs) - 2 if adj_y else len(rhs) - 1) if per_channel else None
    w = _weights(rhs, axis)
    model = op_model("BATCH_MATMUL", [T(lhs, "FLOAT32"), w], [T((1,), "FLOAT32")],
                     {"adj_x": adj_x, "adj_y": adj_y, "asymmetric_quantize_inputs": asymmetric})
    x = _rows((int(np.prod(lhs[:-1])), lhs[-1])).reshape(lhs)
    _check(runtime, model, [x], "BATCH_MATMUL")


# --------------------------------------------------------------------------------------------- SVDF, EMBEDDING_LOOKUP


@pytest.mark.parametrize("asymmetric", [False, True])
def test_svdf(runtime, asymmetric):
    """Hybrid SVDF over three invokes (the state carries the quantized feature products)."""
    batch, n_input, rank, units, memory = 2, 6, 2, 3, 4
    filters = rank * units
    wf = _weights((filters, n_input), None)
    wt = T((filters, memory), "INT8", scale=0.02, zero_point=0,
           data=RNG.integers(-127, 128, size=(filters, memory)).astype(np.int8))
    b = RNG.normal(size=units).astype(np.float32)
    state = T((batch, filters * memory), "FLOAT32", is_variable=True)
    model = op_model("SVDF", [T((batch, n_input), "FLOAT32"), wf, wt, T((units,), "FLOAT32", data=b), state],
                     [T((batch, units), "FLOAT32")], {"rank": rank, "fused_activation_function": "RELU",
                                                      "asymmetric_quantize_inputs": asymmetric}, version=4)
    x = _rows((batch, n_input))
    ours = run_invokes(runtime, model, [x], invocations=3)
    _close(ours, run_peer(model, [x], "litert", invocations=3), "SVDF")


@pytest.mark.parametrize("table_type", ["INT8", "UINT8"])
def test_embedding_lookup(runtime, table_type):
    """An INT8 / UINT8 table to float rows: LiteRT dequantizes the picked rows (bytes read as int8, zero point 0)."""
    table = RNG.integers(-127, 128, size=(6, 4)).astype(np.int8)
    data = table if table_type == "INT8" else table.view(np.uint8)
    model = op_model("EMBEDDING_LOOKUP", [T((3,), "INT32"), T((6, 4), table_type, scale=0.05, zero_point=0,
                                                                data=data)], [T((3, 4), "FLOAT32")])
    ids = np.array([5, 0, 3], np.int32)
    _close(run_on(runtime, model, [ids]), run_peer(model, [ids], "litert"), "EMBEDDING_LOOKUP")


# --------------------------------------------------------------------------------------------- a whole model


def _float_cnn() -> bytes:
    """conv(relu) -> depthwise(relu6) -> max pool -> reshape -> fc -> softmax, float32, our writer."""
    from tests.test_quantize import cnn_model
    from edge_sdk.model import write_model

    return write_model(cnn_model(seed=3))


@pytest.fixture(scope="module")
def dynamic_cnn(tmp_path_factory) -> bytes:
    """The float CNN through `edge convert --quantize dynamic` (int8 weights, float activations)."""
    from edge_sdk.cli import main

    folder = tmp_path_factory.mktemp("dynamic")
    (folder / "cnn.tflite").write_bytes(_float_cnn())
    assert main(["convert", str(folder / "cnn.tflite"), "-o", str(folder / "dyn.tflite"), "--quantize", "dynamic"]) == 0
    return (folder / "dyn.tflite").read_bytes()


def test_dynamic_range_model_runs_as_litert(runtime, dynamic_cnn):
    from edge_sdk.model import read_model

    model = read_model(dynamic_cnn)
    sg = model.subgraphs[0]
    hybrid = [model.op_name(op) for op in sg.operators if sg.tensors[op.inputs[0]].type == "FLOAT32"
              and len(op.inputs) > 1 and op.inputs[1] >= 0 and sg.tensors[op.inputs[1]].type == "INT8"]
    assert sorted(hybrid) == ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"]
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((1, 12, 12, 3)).astype(np.float32)
        _check(runtime, dynamic_cnn, [x], f"dynamic-range CNN, sample {seed}")


def test_check_on_an_mcu_says_who_runs_the_hybrid_kernels(dynamic_cnn):
    """The C runtime builds its hybrid kernels for Cortex-M: check says they run there and that TFLM has none."""
    from edge_sdk.targets.check import RUNS, check_model

    r = check_model(dynamic_cnn, "qemu-mps2-an386", stack=False)
    assert r.verdict == RUNS, r.problems
    note = next(n for n in r.notes if "hybrid kernels" in n)
    assert "CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED" in note and "on Cortex-M too" in note
    assert "TFLM has no hybrid kernels" in note


def _dequantized_front(layers) -> bytes:
    """An INT8 input (scale 0.05) -> DEQUANTIZE -> ``layers(g, x, rng)`` -> output: finite float activations from any
    input bytes (the M4 image feeds random bytes; as floats they would hold NaN / inf, whose casts are undefined)."""
    from edge_sdk.model import write_model
    from edge_sdk.model.builder import GraphBuilder

    g = GraphBuilder()
    rng = np.random.default_rng(7)
    q = g.input("q", (2, 6, 6, 3), "INT8", scale=0.05, zero_point=3)
    x = g.tensor("x", (2, 6, 6, 3), "FLOAT32")
    g.op("DEQUANTIZE", [q], [x], version=2)
    g.output(layers(g, x, rng))
    return write_model(g.build())


def _int8_const(g, name, rng, shape, axis=None):
    w = rng.integers(-127, 128, size=shape).astype(np.int8)
    if axis is None:
        return g.constant(name, w, scale=0.011, zero_point=0)
    n = shape[axis]
    return g.constant(name, w, scale=np.linspace(0.004, 0.03, n).astype(np.float32), zero_point=np.zeros(n, np.int64),
                      quantized_dimension=axis)


def _conv_dw_fc(g, x, rng):
    """Hybrid CONV_2D (per-channel: asymmetric) -> DEPTHWISE_CONV_2D -> CONV_2D (per-tensor: symmetric) -> FC."""
    c1 = g.tensor("c1", (2, 6, 6, 4), "FLOAT32")
    g.op("CONV_2D", [x, _int8_const(g, "w1", rng, (4, 3, 3, 3), 0), g.constant("b1", np.full(4, 0.1, np.float32))],
         [c1], version=5, padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU")
    c2 = g.tensor("c2", (2, 3, 3, 8), "FLOAT32")
    dw_b = g.constant("db", np.zeros(8, np.float32))
    g.op("DEPTHWISE_CONV_2D", [c1, _int8_const(g, "dw", rng, (1, 3, 3, 8), 3), dw_b], [c2], version=6,
         padding="SAME", stride_w=2, stride_h=2, depth_multiplier=2, fused_activation_function="RELU6")
    c3 = g.tensor("c3", (2, 3, 3, 5), "FLOAT32")
    g.op("CONV_2D", [c2, _int8_const(g, "w3", rng, (5, 1, 1, 8)), g.constant("b3", np.zeros(5, np.float32))], [c3],
         version=5, padding="VALID", stride_w=1, stride_h=1)
    y = g.tensor("y", (2, 4), "FLOAT32")
    g.op("FULLY_CONNECTED", [c3, _int8_const(g, "fw", rng, (4, 45), 0), g.constant("fb", np.zeros(4, np.float32))],
         [y], version=9, asymmetric_quantize_inputs=True, fused_activation_function="RELU")
    return y


def _bmm(g, x, rng):
    """A rank-3 lhs: LiteRT's hybrid BatchMatMul steps its row scales by one matrix per batch index whatever the
    batch dims (batch_matmul.h), so it differs from the product for an lhs of two batch dims or more."""
    x3 = g.tensor("x3", (12, 6, 3), "FLOAT32")
    g.op("RESHAPE", [x, g.constant("shape", np.array([12, 6, 3], np.int32))], [x3])
    y = g.tensor("y", (12, 6, 5), "FLOAT32")
    g.op("BATCH_MATMUL", [x3, _int8_const(g, "r", rng, (3, 5), 1)], [y], asymmetric_quantize_inputs=True)
    return y


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_hybrid_kernels_on_cortex_m4_under_qemu(tmp_path):
    """Cortex-M4 images (QEMU mps2-an386) of hybrid CONV_2D (both kernels), DEPTHWISE_CONV_2D, FULLY_CONNECTED and
    BATCH_MATMUL give the Python interpreter's output bit for bit."""
    from tests.oprunner import m4_image_mismatches

    models = {"hybrid_conv_dw_fc": _dequantized_front(_conv_dw_fc), "hybrid_bmm": _dequantized_front(_bmm)}
    for name, model in models.items():  # the models themselves: as LiteRT on a few inputs
        q = np.random.default_rng(1).integers(-128, 128, size=(2, 6, 6, 3)).astype(np.int8)
        _check("python", model, [q], name)
    failures = m4_image_mismatches(models, tmp_path / "b")
    assert not failures, f"M4 output differs from Python on {failures}"
