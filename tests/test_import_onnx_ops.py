"""import_onnx: the ONNX ops and attribute forms exporters emit that issue 24 mapped (torch.onnx, tf2onnx,
paddle2onnx). Each case is a one-node (or few-node) model from onnx.helper; onnxruntime (or onnx's reference
evaluator where onnxruntime lacks the op) gives the expected values, the imported model runs in our interpreter
(float: within 1e-4 relative of the range), and the float cases also convert to int8 without an error."""

from __future__ import annotations

import numpy as np
import pytest

import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters.import_onnx import import_onnx
from edge_sdk import ConversionError
from tests.test_import_onnx import run_ours

_ONNX = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.int64): TP.INT64, np.dtype(np.int32): TP.INT32,
         np.dtype(np.bool_): TP.BOOL}


def f32(*shape, seed=0, scale=1.0, shift=0.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale + shift).astype(np.float32)


def model(nodes, inputs: dict, outputs: dict, inits: dict | None = None, opset=17):
    """``inputs`` name -> example array; ``outputs`` name -> ONNX element type; ``inits`` name -> constant."""
    ins = [helper.make_tensor_value_info(k, _ONNX[v.dtype], list(v.shape)) for k, v in inputs.items()]
    outs = [helper.make_tensor_value_info(k, t, None) for k, t in outputs.items()]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    m = helper.make_model(helper.make_graph(nodes, "t", ins, outs, inits),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = min(m.ir_version, 9)
    return m


def one(op, x, opset=17, inits=None, extra=(), out_type=TP.FLOAT, **attrs):
    """One node: input 'x' (plus constant / extra inputs named in ``extra``) -> 'y'."""
    node = helper.make_node(op, ["x", *extra], ["y"], **attrs)
    return model([node], {"x": x}, {"y": out_type}, inits, opset)


def expected(proto, inputs: dict, reference=False):
    if reference:
        from onnx.reference import ReferenceEvaluator

        return ReferenceEvaluator(proto).run(None, inputs)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def check(proto, inputs: dict, reference=False, rtol=1e-4):
    want = expected(proto, inputs, reference)
    got = run_ours(import_onnx(proto), list(inputs.values()))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        if w.dtype.kind == "f":
            span = float(np.max(np.abs(w[np.isfinite(w)]))) if np.isfinite(w).any() else 1.0
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(span, 1.0))
        else:
            np.testing.assert_array_equal(g, w.astype(g.dtype))
    return want


def int8_converts(proto, x):
    """int8 conversion of a float one-input model runs to the end (a few calibration samples)."""
    from converters import convert

    calib = np.stack([x * s for s in (0.5, 1.0, 1.5, -1.0)])
    result = convert(proto, quantize="int8", calibration=calib, io="float32", allow_lossy=True,
                     equalize=False, bias_correction=False)
    assert result.tflite


X = f32(2, 3, 4, 5)
POS = np.abs(f32(2, 3, 4, 5)) + 0.1
UNIT = np.clip(f32(2, 3, 4, 5, scale=0.4), -0.95, 0.95)

# (id, model, input, onnxruntime lacks it -> reference evaluator)
FLOAT_CASES = [
    ("Ceil", one("Ceil", X), X, False),
    ("Floor", one("Floor", X), X, False),
    ("Round", one("Round", X * 2), X * 2, False),
    ("Sign", one("Sign", X), X, False),
    ("Sin", one("Sin", X), X, False),
    ("Cos", one("Cos", X), X, False),
    ("Tan", one("Tan", UNIT), UNIT, False),
    ("Reciprocal", one("Reciprocal", POS), POS, False),
    ("Mish", one("Mish", X * 4, opset=18), X * 4, False),
    ("Softsign", one("Softsign", X), X, False),
    ("Softplus", one("Softplus", X * 10), X * 10, False),
    ("Celu", one("Celu", X, alpha=0.7), X, False),
    ("ThresholdedRelu", one("ThresholdedRelu", X, alpha=0.3), X, False),
    ("Shrink", one("Shrink", X, lambd=0.4, bias=0.1), X, False),
    ("Sinh", one("Sinh", X), X, False),
    ("Cosh", one("Cosh", X), X, False),
    ("Atan", one("Atan", X), X, False),
    ("Asin", one("Asin", UNIT), UNIT, False),
    ("Acos", one("Acos", UNIT), UNIT, False),
    ("Asinh", one("Asinh", X * 3), X * 3, False),
    ("Acosh", one("Acosh", POS + 1), POS + 1, False),
    ("Atanh", one("Atanh", UNIT), UNIT, False),
    ("Mod_fmod", one("Mod", X * 5, inits={"d": np.float32(1.5)}, extra=("d",), fmod=1), X * 5, False),
    ("Mod_fmod_negative_divisor", one("Mod", X * 5, inits={"d": np.float32(-1.5)}, extra=("d",), fmod=1), X * 5,
     False),
    ("Clip_runtime_bounds", model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
                                  {"x": X, "lo": np.float32(-0.5) * np.ones((), np.float32),
                                   "hi": np.float32(0.7) * np.ones((), np.float32)}, {"y": TP.FLOAT}), None, False),
    ("ReduceL1", one("ReduceL1", X, axes=[1, 3]), X, False),
    ("ReduceL2_opset18", one("ReduceL2", X, opset=18, inits={"ax": np.array([2], np.int64)}, extra=("ax",),
                             keepdims=0), X, False),
    ("ReduceSumSquare", one("ReduceSumSquare", X, axes=[-1]), X, False),
    ("ReduceLogSum", one("ReduceLogSum", POS, axes=[1]), POS, False),
    ("ReduceLogSumExp", one("ReduceLogSumExp", X * 30, axes=[1, 2], keepdims=0), X * 30, False),
    ("ReduceProd", one("ReduceProd", POS, axes=[3]), POS, False),
    ("LpNormalization_p2", one("LpNormalization", X, axis=1), X, False),
    ("LpNormalization_p1", one("LpNormalization", X, axis=-1, p=1), X, False),
    ("MeanVarianceNormalization", one("MeanVarianceNormalization", X), X, False),
    ("MeanVarianceNormalization_axes", one("MeanVarianceNormalization", X, axes=[2, 3]), X, False),
    ("GroupNormalization_18", one("GroupNormalization", f32(2, 6, 4, 4), opset=18, num_groups=3, epsilon=1e-4,
                                  inits={"s": f32(3, seed=1), "b": f32(3, seed=2)}, extra=("s", "b")),
     f32(2, 6, 4, 4), True),
    ("GlobalLpPool", one("GlobalLpPool", X), X, False),
    ("Hardmax", one("Hardmax", X, axis=2), X, False),
    ("Hardmax_opset11", one("Hardmax", X, opset=11, axis=2), X, False),
    ("DepthToSpace_DCR", one("DepthToSpace", f32(1, 8, 3, 4), blocksize=2), f32(1, 8, 3, 4), False),
    ("DepthToSpace_CRD", one("DepthToSpace", f32(1, 8, 3, 4), blocksize=2, mode="CRD"), f32(1, 8, 3, 4), False),
    ("SpaceToDepth", one("SpaceToDepth", f32(1, 3, 4, 6), blocksize=2), f32(1, 3, 4, 6), False),
    ("CumSum", one("CumSum", X, inits={"ax": np.array(2, np.int64)}, extra=("ax",)), X, False),
    ("CumSum_exclusive_reverse", one("CumSum", X, inits={"ax": np.array(-1, np.int32)}, extra=("ax",),
                                     exclusive=1, reverse=1), X, False),
    ("Trilu_upper", one("Trilu", X), X, False),
    ("Trilu_lower_k", one("Trilu", X, upper=0, inits={"k": np.array(-1, np.int64)}, extra=("k",)), X, False),
    ("ScatterND_const", one("ScatterND", X, inits={"i": np.array([[1, 0], [0, 2]], np.int64),
                                                   "u": f32(2, 4, 5, seed=3)}, extra=("i", "u")), X, False),
    ("ScatterElements_const", one("ScatterElements", f32(3, 4), axis=1,
                                  inits={"i": np.array([[1, 3], [0, -1], [2, 0]], np.int64),
                                         "u": f32(3, 2, seed=4)}, extra=("i", "u")), f32(3, 4), False),
    ("GatherND", one("GatherND", X, inits={"i": np.array([[1, 2], [0, 0], [-1, 1]], np.int64)}, extra=("i",)),
     X, False),
    ("Compress", one("Compress", X, axis=2, inits={"c": np.array([True, False, True, True])}, extra=("c",)), X, False),
    ("EyeLike_add", model([helper.make_node("EyeLike", ["x"], ["e"], k=1), helper.make_node("Add", ["x", "e"], ["y"])],
                          {"x": f32(4, 5)}, {"y": TP.FLOAT}), None, False),
    ("ArgMin_last", model([helper.make_node("ArgMin", ["x"], ["i"], axis=1, select_last_index=1),
                           helper.make_node("Cast", ["i"], ["y"], to=TP.FLOAT)],
                          {"x": np.round(X)}, {"y": TP.FLOAT}), None, False),
    ("ArgMax_last", model([helper.make_node("ArgMax", ["x"], ["i"], axis=3, keepdims=0, select_last_index=1),
                           helper.make_node("Cast", ["i"], ["y"], to=TP.FLOAT)],
                          {"x": np.round(X)}, {"y": TP.FLOAT}), None, False),
]


def _inputs(proto, x):
    if x is not None:
        return {"x": x}
    out = {}
    for vi in proto.graph.input:
        if vi.name == "x":
            shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            out["x"] = np.round(X, 0) if "ArgM" in proto.graph.node[0].op_type else f32(*shape)
        else:
            out[vi.name] = {"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)}[vi.name]
    return out


@pytest.mark.parametrize("case", FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
def test_float_op_matches_onnxruntime(case):
    _, proto, x, reference = case
    check(proto, _inputs(proto, x), reference=reference)


# int8: one representative per kind of decomposition (each convert() costs a calibration run)
INT8_IDS = ("Mish", "Celu", "ThresholdedRelu", "ReduceLogSumExp", "LpNormalization_p2", "GroupNormalization_18",
            "DepthToSpace_CRD", "SpaceToDepth", "Trilu_upper", "ScatterND_const", "Hardmax", "Mod_fmod")


@pytest.mark.parametrize("case", [c for c in FLOAT_CASES if c[0] in INT8_IDS], ids=list(INT8_IDS))
def test_int8_conversion_runs(case):
    _, proto, x, _ = case
    int8_converts(proto, x)


def test_integer_ops():
    i = np.array([[7, -7, 3], [-3, 0, 5]], np.int64)
    d = np.array([[2, 2, -2], [2, 3, -4]], np.int64)
    for fmod in (0, 1):
        proto = model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)], {"a": i, "b": d}, {"y": TP.INT64})
        check(proto, {"a": i, "b": d})
    proto = model([helper.make_node("OneHot", ["i", "depth", "v"], ["y"], axis=1)], {"i": np.array([[0, 2, -1]],
                                                                                                   np.int64)},
                  {"y": TP.FLOAT}, {"depth": np.array(4, np.int64), "v": np.array([-1, 3], np.float32)})
    check(proto, {"i": np.array([[0, 2, -1]], np.int64)})
    proto = one("CumSum", i, inits={"ax": np.array(1, np.int64)}, extra=("ax",), out_type=TP.INT64)
    check(proto, {"x": i})


def test_scatter_nd_runtime_indices():
    x, u = f32(4, 3), f32(2, 3, seed=5)
    idx = np.array([[3], [1]], np.int64)
    proto = model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"])], {"x": x, "i": idx, "u": u}, {"y": TP.FLOAT})
    check(proto, {"x": x, "i": idx, "u": u})


def test_refusals_name_the_node_and_the_form():
    proto = one("ScatterND", X, inits={"i": np.array([[1, 0]], np.int64), "u": f32(1, 4, 5)}, extra=("i", "u"),
                reduction="add", opset=18)
    proto.graph.node[0].name = "scatter_add"
    with pytest.raises(ConversionError) as e:
        import_onnx(proto)
    problems = e.value.problems
    assert any("node 'scatter_add' (ScatterND" in p and "reduction 'add'" in p for p in problems), problems


# ---------------------------------------------------------------------------------------------- audio front ends
def dft_model(xshape, opset=17, length=None, **attrs):
    extra = ["n"] if length else []
    return one("DFT", f32(*xshape), opset=opset, extra=extra,
               inits={"n": np.array(length, np.int64)} if length else None, **attrs)


@pytest.mark.parametrize("xshape, length, attrs", [
    ((2, 16, 1), None, {"onesided": 1}),
    ((2, 12, 1), None, {}),  # not a power of two, both sides
    ((1, 3, 10, 2), None, {"axis": 2}),  # complex input
    ((1, 10, 2), None, {"inverse": 1}),
    ((2, 10, 1), 16, {"onesided": 1}),  # zero-padded to dft_length
    ((2, 5, 3, 1), None, {"axis": 1, "onesided": 1}),  # an axis other than the one before last
])
def test_dft(xshape, length, attrs):
    proto = dft_model(xshape, length=length, **attrs)
    check(proto, {"x": f32(*xshape)})


def test_audio_front_end_stft_hann_mel_log_and_int8():
    """signal -> STFT (Hann window of a folded HannWindow) -> power -> MelWeightMatrix (folded) -> log: the
    torchaudio / onnx-exported log-mel front end."""
    nodes = [
        helper.make_node("HannWindow", ["fl"], ["win"], periodic=1),
        helper.make_node("STFT", ["x", "step", "win", "fl"], ["spec"], onesided=1),
        helper.make_node("ReduceSumSquare", ["spec", "last"], ["power"], keepdims=0),
        helper.make_node("MelWeightMatrix", ["mels", "fl", "sr", "lo", "hi"], ["mel_w"]),
        helper.make_node("MatMul", ["power", "mel_w"], ["mel"]),
        helper.make_node("Add", ["mel", "eps"], ["mel_eps"]),
        helper.make_node("Log", ["mel_eps"], ["y"]),
    ]
    x = f32(1, 1024, 1, seed=7)
    inits = {"fl": np.array(256, np.int64), "step": np.array(128, np.int64), "last": np.array([-1], np.int64),
             "mels": np.array(16, np.int64), "sr": np.array(16000, np.int64), "lo": np.array(20.0, np.float32),
             "hi": np.array(8000.0, np.float32), "eps": np.array(1e-6, np.float32)}
    proto = model(nodes, {"x": x}, {"y": TP.FLOAT}, inits, opset=18)
    want = check(proto, {"x": x})
    assert want[0].shape == (1, 7, 16)
    names = {m for m in _op_names(import_onnx(proto))}
    assert "FULLY_CONNECTED" in names and "GATHER" in names, names
    int8_converts(proto, x)


def _op_names(m):
    return [m.op_name(op) for op in m.subgraphs[0].operators]


# ---------------------------------------------------------------------------------------------- bidirectional
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def recurrent_model(op, direction, layout=0, state=False, seq=5, batch=2, n_in=3, hidden=4):
    dirs = 2 if direction == "bidirectional" else 1
    r = np.random.default_rng(12)
    g = GATES[op]
    inits = {"w": (r.standard_normal((dirs, g * hidden, n_in)) * 0.5).astype(np.float32),
             "r": (r.standard_normal((dirs, g * hidden, hidden)) * 0.5).astype(np.float32),
             "b": (r.standard_normal((dirs, 2 * g * hidden)) * 0.5).astype(np.float32)}
    x = f32(*((seq, batch, n_in) if layout == 0 else (batch, seq, n_in)), seed=5)
    ins = {"x": x}
    names = ["x", "w", "r", "b"]
    if state:  # the initial hidden state from an input (a streaming model)
        h0 = f32(*((dirs, batch, hidden) if layout == 0 else (batch, dirs, hidden)), seed=6)
        ins["h0"] = h0
        names += ["", "h0"]
    outs = {"y": TP.FLOAT, "yh": TP.FLOAT}
    node = helper.make_node(op, names, ["y", "yh"], hidden_size=hidden, direction=direction,
                            **({"layout": 1} if layout else {}))
    return model([node], ins, outs, inits, opset=14), ins


@pytest.mark.parametrize("op, direction, layout, state", [
    ("LSTM", "bidirectional", 0, False), ("LSTM", "reverse", 0, False), ("LSTM", "bidirectional", 1, False),
    ("GRU", "bidirectional", 0, False), ("GRU", "reverse", 0, True), ("RNN", "bidirectional", 0, True),
])
def test_bidirectional_and_reverse_recurrent(op, direction, layout, state):
    proto, ins = recurrent_model(op, direction, layout, state)
    check(proto, ins, reference=layout == 1)  # onnxruntime runs only layout 0


# ---------------------------------------------------------------------------------------------- ConvTranspose
@pytest.mark.parametrize("cin, cout_g, attrs", [
    (4, 3, {"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    (4, 1, {"group": 4, "strides": [2, 2], "output_padding": [1, 1]}),  # depthwise upsampling
    (3, 2, {"dilations": [2, 2], "strides": [2, 2]}),
    (4, 2, {"group": 2, "dilations": [1, 2], "strides": [1, 2], "pads": [0, 1, 0, 1]}),
])
def test_conv_transpose_groups_and_dilations(cin, cout_g, attrs):
    x = f32(1, cin, 5, 6)
    proto = one("ConvTranspose", x, inits={"w": f32(cin, cout_g, 3, 3, seed=2), "b": f32(cout_g * attrs.get("group", 1),
                                                                                          seed=3)},
                extra=("w", "b"), **attrs)
    check(proto, {"x": x})


def test_conv_transpose_grouped_int8():
    x = f32(1, 4, 5, 6)
    proto = one("ConvTranspose", x, inits={"w": f32(4, 3, 3, 3, seed=2), "b": f32(6, seed=3)}, extra=("w", "b"),
                group=2, strides=[2, 2])
    int8_converts(proto, x)


# ---------------------------------------------------------------------------------------------- dynamic-shape idioms
def dynamic_idioms_model():
    """x [N, 3, H, W] (symbolic N, H, W) through what exporters emit for x.view(n, c, -1), torch.zeros_like-style
    ConstantOfShape and bias.expand(x.shape): Shape -> Gather -> Unsqueeze -> Concat -> Reshape, ConstantOfShape
    of a computed shape, Expand to a computed shape."""
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
        helper.make_node("Gather", ["shape", "one"], ["c"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
        helper.make_node("Unsqueeze", ["c", "axes0"], ["c1"]),
        helper.make_node("Concat", ["n1", "c1", "minus_one"], ["flat_shape"], axis=0),
        helper.make_node("Reshape", ["x", "flat_shape"], ["flat"]),
        helper.make_node("ConstantOfShape", ["shape"], ["ones"], value=numpy_helper.from_array(np.ones(1, np.float32))),
        helper.make_node("Expand", ["bias", "shape"], ["bias_full"]),
        helper.make_node("Add", ["x", "ones"], ["x1"]),
        helper.make_node("Mul", ["x1", "bias_full"], ["x2"]),
        helper.make_node("Reshape", ["x2", "flat_shape"], ["y2"]),
        helper.make_node("Add", ["flat", "y2"], ["y"]),
    ]
    inits = {"zero": i64(0), "one": i64(1), "axes0": i64([0]), "minus_one": i64([-1]),
             "bias": f32(1, 3, 1, 1, seed=9)}
    graph = helper.make_graph(nodes, "idioms", [helper.make_tensor_value_info("x", TP.FLOAT, ["N", 3, "H", "W"])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    return m


def test_dynamic_shape_idioms_fold_once_the_input_shape_is_given():
    proto = dynamic_idioms_model()
    x = f32(2, 3, 4, 5)
    m = import_onnx(proto, input_shapes={"x": (2, 3, 4, 5)})
    names = set(_op_names(m))
    assert not names & {"SHAPE", "GATHER", "CONCATENATION", "BROADCAST_TO", "FILL"}, names  # all folded
    want = expected(proto, {"x": x})
    np.testing.assert_allclose(run_ours(m, [x])[0], want[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ConversionError, match=r"input 'x' has dynamic dims .*--input-shape x:"):
        import_onnx(proto)


def test_a_shape_from_run_time_values_is_refused_naming_the_node():
    """ConstantOfShape of a shape computed from an input's value (not its shape): no --input-shape makes it
    static; the refusal names the node and the input to pin."""
    nodes = [helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
             helper.make_node("ConstantOfShape", ["n1"], ["y"], name="zeros_of_n")]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("n", TP.INT64, [])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                              [numpy_helper.from_array(np.array([0], np.int64), "axes0")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ConversionError) as e:
        import_onnx(proto)
    assert any("node 'zeros_of_n' (ConstantOfShape" in p and "input 'n'" in p and "--input-value" in p
               for p in e.value.problems), e.value.problems
    m = import_onnx(proto, input_values={"n": 4})  # pinned: it folds
    assert run_ours(m, [])[0].shape == (4,)


# ---------------------------------------------------------------------------------------------- exporter forms
def paddle_se_upsample_model():
    """paddle2onnx's PP-OCR det idioms: Conv -> HardSwish, an SE block with HardSigmoid(alpha=0.2), and a nearest
    Resize whose roi / scales come from Constant nodes (asymmetric, floor)."""
    const = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(v))  # noqa: E731
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("HardSwish", ["c1"], ["h1"]),
        helper.make_node("GlobalAveragePool", ["h1"], ["p"]),
        helper.make_node("Conv", ["p", "w2", "b2"], ["c2"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], kernel_shape=[1, 1]),
        helper.make_node("HardSigmoid", ["c3"], ["gate"], alpha=0.2, beta=0.5),
        helper.make_node("Mul", ["h1", "gate"], ["se"]),
        const("roi", np.array([], np.float32)),
        const("scales", np.array([1, 1, 2, 2], np.float32)),
        helper.make_node("Resize", ["se", "roi", "scales"], ["y"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    ]
    inits = {"w1": f32(8, 3, 3, 3, seed=1, scale=0.4), "b1": f32(8, seed=2), "w2": f32(2, 8, 1, 1, seed=3),
             "b2": f32(2, seed=4), "w3": f32(8, 2, 1, 1, seed=5), "b3": f32(8, seed=6)}
    return model(nodes, {"x": f32(1, 3, 8, 8)}, {"y": TP.FLOAT}, inits, opset=14)  # HardSwish: opset 14


def test_paddle_ocr_idioms_and_int8():
    proto = paddle_se_upsample_model()
    x = f32(1, 3, 8, 8, seed=10)
    check(proto, {"x": x})
    assert "RESIZE_NEAREST_NEIGHBOR" in _op_names(import_onnx(proto))
    int8_converts(proto, x)


# ---------------------------------------------------------------------------------------------- Resize, any mode
def resize_model(xshape, scales, opset=13, **attrs):
    x = f32(*xshape)
    return one("Resize", x, opset=opset, extra=("", "scales"),
               inits={"scales": np.array(scales, np.float32)}, **attrs), x


@pytest.mark.parametrize("xshape, scales, attrs, opset", [
    ((1, 2, 5, 6), [1, 1, 2, 2], {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel",
                                  "cubic_coeff_a": -0.75}, 13),  # torch bicubic
    ((1, 2, 5, 6), [1, 1, 1.5, 2.5], {"mode": "cubic", "exclude_outside": 1}, 13),
    ((1, 3, 7), [1, 1, 2], {"mode": "linear"}, 13),  # 1-D upsampling (audio): rank 3
    ((1, 2, 5, 6), [1, 1, 3, 2], {"mode": "nearest", "coordinate_transformation_mode": "align_corners",
                                  "nearest_mode": "floor"}, 13),
    ((1, 2, 5, 6), [1, 1, 2, 3], {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn",
                                  "nearest_mode": "round_prefer_ceil"}, 13),
    ((1, 2, 8, 8), [1, 1, 0.5, 0.5], {"mode": "linear", "antialias": 1}, 18),
    ((2, 4, 6), [1, 0.5, 1], {"mode": "nearest"}, 13),  # the channel axis
])
def test_resize_modes_tflite_lacks(xshape, scales, attrs, opset):
    proto, x = resize_model(xshape, scales, opset, **attrs)
    check(proto, {"x": x})


def test_resize_cubic_int8():
    proto, x = resize_model((1, 2, 5, 6), [1, 1, 2, 2], mode="cubic")
    int8_converts(proto, x)


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_of_a_zero_vector_is_zero(p):
    """onnxruntime (and ONNX's backend case test_l2normalization_axis_0) give 0 for a zero vector; 0 / 0 gave NaN."""
    x = f32(3, 4, seed=5)
    x[1] = 0.0
    want = check(one("LpNormalization", x, axis=1, p=p), {"x": x})[0]
    assert np.all(want[1] == 0.0)


def test_resize_with_run_time_scales_is_refused_naming_the_input_to_pin():
    """ONNX's backend case test_resize_downsample_scales_linear: X [1, 1, 2, 4], scales a graph input (0.6 at run
    time). The resize's size and interpolation are fixed when converted: the declared output's ratio (1/2, 2/4) is
    not 0.6's, so reading it so was wrong by 27% of the range; refused naming the input, and pinned it is exact."""
    x = np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]]]], np.float32)
    scales = np.array([1, 1, 0.6, 0.6], np.float32)
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")
    proto = helper.make_model(helper.make_graph(
        [node], "t", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 1, 2, 4]),
                      helper.make_tensor_value_info("scales", TP.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TP.FLOAT, [1, 1, 1, 2])]), opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(ConversionError) as err:
        import_onnx(proto)
    assert "its scales 'scales' is known only at run time" in str(err.value)
    assert "--input-value scales=" in str(err.value)
    (want,) = expected(proto, {"x": x, "scales": scales})
    (got,) = run_ours(import_onnx(proto, input_values={"scales": "1,1,0.6,0.6"}), [x])
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_modes(mode):
    """opset 25's SpaceToDepth mode: CRD (PixelUnshuffle's channel order) was written as TFLite's DCR order (off by
    40% of the range on ONNX's backend case test_spacetodepth_crd_mode_example); now one GATHER reorders it."""
    x = f32(1, 3, 4, 6)
    proto = one("SpaceToDepth", x, opset=25, blocksize=2, mode=mode)
    check(proto, {"x": x}, reference=True)


@pytest.mark.parametrize("mode", ["wrap", "edge", "reflect"])
def test_pad_modes(mode):
    x = f32(1, 2, 4, 5)
    proto = one("Pad", x, opset=19, inits={"p": np.array([0, 0, 1, 2, 0, 0, 3, 1], np.int64)}, extra=("p",), mode=mode)
    check(proto, {"x": x})


@pytest.mark.parametrize("eq, shapes", [
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]),  # torch.matmul-style with an ellipsis
    ("bhqd,bhkd->bhqk", [(1, 2, 4, 8), (1, 2, 5, 8)]),  # attention scores
    ("...d,d->...", [(2, 3, 4), (4,)]),
    ("...ij->...ji", [(2, 3, 4)]),
])
def test_einsum_forms(eq, shapes):
    ins = {f"x{i}": f32(*s, seed=i) for i, s in enumerate(shapes)}
    proto = model([helper.make_node("Einsum", list(ins), ["y"], equation=eq)], ins, {"y": TP.FLOAT}, opset=12)
    check(proto, ins)


# ---------------------------------------------------------------------------------------------- both runtimes
def _runtime_cases():
    """A few imported models covering the new decompositions' TFLite ops (ATAN2, SIN / COS, FLOOR_MOD, SELECT_V2,
    REVERSE_V2, ONE_HOT, SCATTER_ND, CUMSUM, DEPTH_TO_SPACE, GATHER, FULLY_CONNECTED DFT / interpolation, grouped
    TRANSPOSE_CONV, a bidirectional LSTM)."""
    pick = {"Asin", "Tan", "Mod_fmod", "ArgMin_last", "Hardmax", "ScatterND_const", "CumSum_exclusive_reverse",
            "DepthToSpace_CRD", "Trilu_lower_k"}
    cases = [(name, proto, _inputs(proto, x)) for name, proto, x, _ in FLOAT_CASES if name in pick]
    cases.append(("DFT", dft_model((2, 12, 1)), {"x": f32(2, 12, 1)}))
    proto, x = resize_model((1, 2, 5, 6), [1, 1, 2, 2], mode="cubic")
    cases.append(("Resize_cubic", proto, {"x": x}))
    cases.append(("LSTM_bidirectional", *recurrent_model("LSTM", "bidirectional")))
    return cases


RUNTIME_CASES = _runtime_cases()


@pytest.mark.parametrize("case", RUNTIME_CASES, ids=[c[0] for c in RUNTIME_CASES])
def test_imported_model_on_both_runtimes(runtime, case):
    from edge_sdk.model import write_model
    from tests.oprunner import run_on

    _, proto, ins = case
    want = expected(proto, ins)
    got = run_on(runtime, write_model(import_onnx(proto)), list(ins.values()))
    for g, w in zip(got, want):
        span = max(float(np.max(np.abs(w))), 1.0) if w.size else 1.0
        np.testing.assert_allclose(g, w.astype(g.dtype), rtol=1e-4, atol=1e-4 * span)


def test_scatter_elements_runtime_indices():
    x, u = f32(3, 5), f32(3, 2, seed=6)
    idx = np.array([[4, 0], [1, 2], [3, 4]], np.int64)
    proto = model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1)], {"x": x, "i": idx, "u": u},
                  {"y": TP.FLOAT})
    check(proto, {"x": x, "i": idx, "u": u})


@pytest.mark.parametrize("p, attrs", [(2, {"kernel_shape": [2, 2], "strides": [2, 2]}),
                                      (1, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})])
def test_lp_pool(p, attrs):
    x = f32(1, 2, 6, 6)
    check(one("LpPool", x, p=p, **attrs), {"x": x})


def test_gather_nd_batch_dims():
    x = f32(2, 3, 4)
    check(one("GatherND", x, inits={"i": np.array([[1], [2]], np.int64)}, extra=("i",), batch_dims=1), {"x": x})
    idx = np.array([[[0, 3], [2, 1]], [[1, 1], [0, 0]]], np.int64)
    proto = model([helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)], {"x": x, "i": idx}, {"y": TP.FLOAT})
    check(proto, {"x": x, "i": idx})


def tf2onnx_block_model():
    """tf2onnx's idioms on an NHWC Keras model: Transpose to NCHW around a SAME_UPPER Conv, Pad with a
    constant_value input, Clip(0, 6) for ReLU6, a nearest Resize given by sizes (empty roi / scales) in TF's
    half-pixel form, Squeeze with an axes input, Transpose back."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["nchw"], perm=[0, 3, 1, 2]),
        helper.make_node("Pad", ["nchw", "pads", "pad_value"], ["padded"], mode="constant"),
        helper.make_node("Conv", ["padded", "w", "b"], ["c"], kernel_shape=[3, 3], strides=[2, 2],
                         auto_pad="SAME_UPPER"),
        helper.make_node("Clip", ["c", "zero", "six"], ["r6"]),
        helper.make_node("Resize", ["r6", "", "", "sizes"], ["up"], mode="nearest",
                         coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil"),
        helper.make_node("ReduceMean", ["up"], ["m"], axes=[2], keepdims=1),
        helper.make_node("Squeeze", ["m", "sq_axes"], ["sq"]),
        helper.make_node("Transpose", ["sq"], ["y"], perm=[0, 2, 1]),
    ]
    inits = {"pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pad_value": np.array(0.5, np.float32),
             "w": f32(4, 3, 3, 3, seed=1, scale=0.4), "b": f32(4, seed=2), "zero": np.array(0, np.float32),
             "six": np.array(6, np.float32), "sizes": np.array([1, 4, 10, 10], np.int64),
             "sq_axes": np.array([2], np.int64)}
    return model(nodes, {"x": f32(1, 8, 8, 3)}, {"y": TP.FLOAT}, inits, opset=13)


def test_tf2onnx_idioms_and_int8():
    proto = tf2onnx_block_model()
    x = f32(1, 8, 8, 3, seed=11)
    check(proto, {"x": x})
    int8_converts(proto, x)


# ---------------------------------------------------------------------------------------------- static sequences
def test_sequences_of_known_length_become_tensors():
    """torch.onnx's list idioms: torch.split into a list (SplitToSequence), an element of it (SequenceAt), a
    list built and concatenated / stacked (SequenceConstruct, SequenceInsert, ConcatFromSequence), its length."""
    nodes = [
        helper.make_node("SplitToSequence", ["x", "sizes"], ["parts"], axis=1),
        helper.make_node("SequenceAt", ["parts", "one"], ["second"]),
        helper.make_node("SequenceAt", ["parts", "minus_one"], ["last"]),
        helper.make_node("SequenceConstruct", ["last", "second"], ["pair"]),
        helper.make_node("SequenceInsert", ["pair", "last"], ["triple"]),
        helper.make_node("ConcatFromSequence", ["triple"], ["stacked"], axis=0, new_axis=1),
        helper.make_node("SequenceLength", ["triple"], ["n"]),
        helper.make_node("Cast", ["n"], ["nf"], to=TP.FLOAT),
        helper.make_node("Mul", ["stacked", "nf"], ["y"]),
        helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
        helper.make_node("ConcatFromSequence", ["rows"], ["y2"], axis=0),
    ]
    x = f32(2, 6)
    inits = {"sizes": np.array([2, 2, 2], np.int64), "one": np.array(1, np.int64),
             "minus_one": np.array(-1, np.int64)}
    proto = model(nodes, {"x": x}, {"y": TP.FLOAT, "y2": TP.FLOAT}, inits, opset=17)
    check(proto, {"x": x})


def test_a_sequence_left_as_a_sequence_is_refused():
    nodes = [helper.make_node("SplitToSequence", ["x"], ["y"], axis=0, name="to_list")]
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                          [helper.make_tensor_sequence_value_info("y", TP.FLOAT, None)])
    proto = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ConversionError) as e:
        import_onnx(proto)
    assert any("node 'to_list' (SplitToSequence" in p and "known at convert time" in p for p in e.value.problems), \
        e.value.problems


@pytest.mark.parametrize("time_axis", [0, 1])
def test_reverse_sequence_constant_lengths(time_axis):
    x = f32(4, 3, 2) if time_axis == 0 else f32(3, 4, 2)
    proto = one("ReverseSequence", x, inits={"lens": np.array([4, 1, 3], np.int64)}, extra=("lens",),
                time_axis=time_axis, batch_axis=1 - time_axis)
    check(proto, {"x": x})


@pytest.mark.parametrize("shape, axes", [([3, 8], [2, 3]), ([2, 7, 3], None), ([5], [-1])])
def test_center_crop_pad(shape, axes):
    x = f32(2, 4, 6, 5)
    extra = {"axes": axes} if axes else {}
    if axes is None:
        x = f32(4, 6, 5)
    proto = one("CenterCropPad", x, opset=18, inits={"s": np.array(shape, np.int64)}, extra=("s",), **extra)
    check(proto, {"x": x})


def test_split_to_sequence_with_a_run_time_split_is_refused_not_split_in_ones():
    """ONNX's backend case test_sequence_model8: SequenceLength(SplitToSequence(X, Splits)), Splits a graph input
    of 3 sizes. A run-time split was read as no split (pieces of one along the axis): the length came out 1, not
    3, without a word. Now the node is refused, named."""
    x_info = helper.make_tensor_value_info("X", TP.FLOAT, ["n"])
    s_info = helper.make_tensor_value_info("Splits", TP.INT64, [3])
    nodes = [helper.make_node("SplitToSequence", ["X", "Splits"], ["seq"], name="split_seq"),
             helper.make_node("SequenceLength", ["seq"], ["len"])]
    proto = helper.make_model(helper.make_graph(nodes, "t", [x_info, s_info],
                                                [helper.make_tensor_value_info("len", TP.INT64, [])]),
                              opset_imports=[helper.make_opsetid("", 12)])
    with pytest.raises(ConversionError) as err:
        import_onnx(proto)
    assert "node 'split_seq' (SplitToSequence, opset 12)" in str(err.value)
    (want,) = expected(proto, {"X": np.zeros(6, np.float32), "Splits": np.array([1, 2, 3], np.int64)})
    assert int(want) == 3  # what the converted model answered 1 to


def test_a_string_input_is_refused_not_taken_as_float():
    """ONNX's backend case test_equal_string: Equal of two STRING inputs converted to a float32 EQUAL with float32
    inputs, without a word. Now the input is named with its type."""
    ins = [helper.make_tensor_value_info(n, TP.STRING, [2]) for n in ("x", "y")]
    proto = helper.make_model(helper.make_graph([helper.make_node("Equal", ["x", "y"], ["z"])], "t", ins,
                                                [helper.make_tensor_value_info("z", TP.BOOL, [2])]),
                              opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(ConversionError, match="input 'x' is an ONNX STRING tensor"):
        import_onnx(proto)


@pytest.mark.parametrize("training", [None, True, False])
def test_dropout_in_training_mode_is_refused_not_written_as_the_identity(training):
    """ONNX's backend cases test_training_dropout*: training_mode a graph input (true there) was converted as the
    identity; a constant false (eval mode) still is."""
    x = f32(3, 4)
    ratio = {"r": np.array(0.5, np.float32)}
    if training is None:
        node = helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="drop")
        proto = model([node], {"x": x, "t": np.array(True)}, {"y": TP.FLOAT}, ratio, opset=13)
    else:
        node = helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="drop")
        proto = model([node], {"x": x}, {"y": TP.FLOAT}, {**ratio, "t": np.array(training)}, opset=13)
    if training is False:
        check(proto, {"x": x})
        return
    with pytest.raises(ConversionError, match="training_mode 't' is (known only at run time|true)"):
        import_onnx(proto)
