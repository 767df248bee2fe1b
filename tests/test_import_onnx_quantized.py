"""Quantized ONNX in (converters.onnx_quantized): QDQ graphs from onnxruntime's quantize_static, dynamic-int8
graphs from quantize_dynamic, and onnxruntime's com.microsoft fused ops -- each imported model run by our
interpreter against onnxruntime running the same ONNX file."""

from __future__ import annotations

import math

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

from converters.import_onnx import import_onnx
from edge_sdk import ConversionError, Interpreter
from edge_sdk.model import write_model

RNG = np.random.default_rng(7)


def _f32(name, a):
    return nh.from_array(np.asarray(a, np.float32), name)


def _model(nodes, inputs, outputs, inits=(), opset=17, ms=False):
    ops = [h.make_opsetid("", opset)] + ([h.make_opsetid("com.microsoft", 1)] if ms else [])
    return h.make_model(h.make_graph(nodes, "g", inputs, outputs, list(inits)), opset_imports=ops, ir_version=8)


def _vi(name, shape, t=TP.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


def _ort(model, feeds):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def _ours(model, feeds, **kw):
    m = import_onnx(model, **kw)
    it = Interpreter(model_content=write_model(m))
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], feeds[d["name"]])
    it.invoke()
    return m, [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]


def _ops(m):
    return [m.op_name(op) for op in m.subgraphs[0].operators]


def _ranges(m):
    return {t.name: t.quantization for t in m.subgraphs[0].tensors if t.quantization is not None}


# ------------------------------------------------------------------------------------------ QDQ (static)
def _conv_net():
    w1, b1 = RNG.standard_normal((8, 3, 3, 3)) * 0.3, RNG.standard_normal(8) * 0.1
    w2, b2 = RNG.standard_normal((4, 8, 3, 3)) * 0.2, RNG.standard_normal(4) * 0.1
    nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c1"], ["r1"]),
             h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             h.make_node("Sigmoid", ["c2"], ["s"]), h.make_node("GlobalAveragePool", ["s"], ["y"])]
    return _model(nodes, [_vi("x", [1, 3, 12, 12])], [_vi("y", [1, 4, 1, 1])],
                  [_f32("w1", w1), _f32("b1", b1), _f32("w2", w2), _f32("b2", b2)], opset=13)


@pytest.fixture(scope="module", params=["QInt8", "QUInt8"])
def qdq_conv(tmp_path_factory, request):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    d = tmp_path_factory.mktemp("qdq")
    onnx.save(_conv_net(), d / "f.onnx")
    samples = [RNG.standard_normal((1, 3, 12, 12)).astype(np.float32) for _ in range(16)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": s} for s in samples])

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(d / "f.onnx"), str(d / "q.onnx"), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=getattr(QuantType, request.param), weight_type=QuantType.QInt8)
    return onnx.load(d / "f.onnx"), onnx.load(d / "q.onnx"), samples


def test_qdq_conv_net_imports_float_with_the_models_own_ranges(qdq_conv):
    float_model, qdq, samples = qdq_conv
    kinds = {n.op_type for n in qdq.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= kinds
    inits = {i.name: nh.to_array(i) for i in qdq.graph.initializer}
    for x in samples[:4]:
        m, (got,) = _ours(qdq, {"x": x})
        (want,) = _ort(qdq, {"x": x})
        (ref,) = _ort(float_model, {"x": x})
        y_scale = float(inits[next(n.input[1] for n in qdq.graph.node if n.op_type == "DequantizeLinear"
                                   and n.output[0] == "y")])
        # the float import is the float model up to the int8 weights' rounding; the QDQ run is within a few
        # of its output quanta
        assert np.abs(got - ref).max() < 5e-3
        assert np.abs(got - want).max() <= 4 * y_scale, (np.abs(got - want).max(), y_scale)
    assert not {"QUANTIZE", "DEQUANTIZE"} & set(_ops(m))
    # every activation Q/DQ pair's (scale, zero point) is recorded exactly, and put on the float tensor
    given = m.import_notes["quantized_source"]["given_ranges"]
    assert m.import_notes["quantized_source"]["format"] == "qdq"
    pairs = {}
    for n in qdq.graph.node:
        if n.op_type == "QuantizeLinear":
            pairs[n.input[0]] = (float(inits[n.input[1]]), int(inits[n.input[2]]))
            qmin, qmax = (-128, 127) if inits[n.input[2]].dtype == np.int8 else (0, 255)
    assert len(given) >= 3
    ranges = _ranges(m)
    for name, e in given.items():
        assert (e["scale"], e["zero_point"]) in pairs.values(), (name, e)
        q = ranges[name]
        assert q.scale.size == 0  # a recorded range, not a quantized tensor: readers keep treating it as float
        s, z = e["scale"], e["zero_point"]
        assert q.min[0] == np.float32(s * (qmin - z)) and q.max[0] == np.float32(s * (qmax - z))
        # what the quantizer gets back from min / max for int8: the source's scale and (int8) zero point
        again = (float(q.max[0]) - float(q.min[0])) / 255
        assert abs(again - s) <= 1e-6 * s
        assert -128 - round(float(q.min[0]) / again) == (z if qmin == -128 else z - 128)
    assert given["x"]["scale"] == pairs["x"][0] and given["x"]["zero_point"] == pairs["x"][1]
    # the weights' per-channel scales: as in the ONNX file, and what max-abs / 127 gives again
    weights = m.import_notes["quantized_source"]["weights"]
    for n in qdq.graph.node:
        if n.op_type == "DequantizeLinear" and n.input[0] in inits and inits[n.input[0]].dtype == np.int8:
            assert np.array_equal(np.float32(weights[n.output[0]]["scale"]), inits[n.input[1]])
            wf = (inits[n.input[0]].astype(np.float32) * inits[n.input[1]].reshape(-1, 1, 1, 1))
            assert np.allclose(np.abs(wf).reshape(len(wf), -1).max(1) / 127, inits[n.input[1]], rtol=1e-6)


def test_qdq_pair_with_a_range_from_zero_keeps_the_relu_onnxruntime_folded_into_it(qdq_conv):
    """quantize_static drops a Relu whose output range starts at 0 (the Q clamps): the import puts it back."""
    _, qdq, samples = qdq_conv
    assert "Relu" not in {n.op_type for n in qdq.graph.node}
    m, _ = _ours(qdq, {"x": samples[0]})
    assert "RELU" in _ops(m)
    relu_out = next(m.subgraphs[0].tensors[op.outputs[0]] for op in m.subgraphs[0].operators
                    if m.op_name(op) == "RELU")
    assert relu_out.quantization is not None and relu_out.quantization.min[0] == 0.0


def test_hand_built_qdq_per_axis_matmul_weights_and_lone_quantize_dequantize():
    """onnx.helper QDQ: a per-axis int8 MatMul weight behind DequantizeLinear folds to float; an int8 graph input
    through a lone DequantizeLinear is DEQUANTIZE and a lone QuantizeLinear output is QUANTIZE (uint8)."""
    wq = RNG.integers(-127, 128, (6, 5)).astype(np.int8)
    ws = (RNG.random(5) * 0.05 + 0.01).astype(np.float32)
    inits = [nh.from_array(wq, "wq"), _f32("ws", ws), nh.from_array(np.zeros(5, np.int8), "wz"),
             _f32("xs", 0.05), nh.from_array(np.array(3, np.int8), "xz"),
             _f32("ys", 0.1), nh.from_array(np.array(128, np.uint8), "yz")]
    nodes = [h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["x"]),
             h.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=1),
             h.make_node("MatMul", ["x", "w"], ["m"]),
             h.make_node("QuantizeLinear", ["m", "ys", "yz"], ["y"])]
    model = _model(nodes, [_vi("xq", [2, 6], TP.INT8)], [_vi("y", [2, 5], TP.UINT8)], inits)
    xq = RNG.integers(-128, 128, (2, 6)).astype(np.int8)
    m, (got,) = _ours(model, {"xq": xq})
    (want,) = _ort(model, {"xq": xq})
    assert got.dtype == np.uint8 and np.abs(got.astype(int) - want.astype(int)).max() <= 1
    assert _ops(m)[0] == "DEQUANTIZE" and _ops(m)[-1] == "QUANTIZE"
    assert np.array_equal(np.float32(m.import_notes["quantized_source"]["weights"]["w"]["scale"]), ws)


# ------------------------------------------------------------------------------------------ dynamic int8
def _quantize_dynamic(tmp_path, model, **kw):
    from onnxruntime.quantization import quantize_dynamic

    onnx.save(model, tmp_path / "f.onnx")
    quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), **kw)
    return onnx.load(tmp_path / "q.onnx")


def _block():
    """A small transformer feed-forward block: MatMul + bias, Gelu-free Relu, MatMul, residual, LayerNorm."""
    d, f = 16, 32
    nodes = [h.make_node("MatMul", ["x", "w1"], ["m1"]), h.make_node("Add", ["m1", "b1"], ["a1"]),
             h.make_node("Relu", ["a1"], ["r1"]), h.make_node("MatMul", ["r1", "w2"], ["m2"]),
             h.make_node("Add", ["m2", "x"], ["res"]),
             h.make_node("LayerNormalization", ["res", "g", "b"], ["y"], axis=-1, epsilon=1e-5)]
    inits = [_f32("w1", RNG.standard_normal((d, f)) * 0.3), _f32("b1", RNG.standard_normal(f) * 0.1),
             _f32("w2", RNG.standard_normal((f, d)) * 0.3), _f32("g", RNG.random(d) + 0.5),
             _f32("b", RNG.standard_normal(d) * 0.1)]
    return _model(nodes, [_vi("x", [1, 5, d])], [_vi("y", [1, 5, d])], inits)


def test_dynamic_int8_transformer_block_imports_as_float_matmuls(tmp_path):
    from onnxruntime.quantization import QuantType

    float_model = _block()
    q = _quantize_dynamic(tmp_path, float_model, weight_type=QuantType.QInt8, per_channel=True)
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= {n.op_type for n in q.graph.node}
    x = RNG.standard_normal((1, 5, 16)).astype(np.float32)
    m, (got,) = _ours(q, {"x": x})
    (dyn,) = _ort(q, {"x": x})
    (ref,) = _ort(float_model, {"x": x})
    # weights dequantized: the float model up to the weights' rounding; onnxruntime's dynamic run as close
    assert np.abs(got - ref).max() < 0.05 and np.abs(got - dyn).max() < 0.1
    assert not {"QUANTIZE", "DEQUANTIZE"} & set(_ops(m))
    notes = m.import_notes["quantized_source"]
    assert notes["format"] == "dynamic-int8" and notes["rewritten"] == {"MatMulInteger": 2}
    assert "dynamic" in notes["hint"]
    inits = {i.name: nh.to_array(i) for i in q.graph.initializer}
    assert sorted(notes["weights"]) == ["w1_quantized_dequantized", "w2_quantized_dequantized"]
    assert notes["weights"]["w1_quantized_dequantized"]["scale"] == "32 per-channel scales along axis 1"
    for k in (1, 2):
        e = m.given_quantization[f"w{k}_quantized_dequantized"]
        assert np.array_equal(e["scale"], inits[f"w{k}_scale"]) and e["axis"] == 1 and e["kind"] == "weight"
        assert np.array_equal(e["zero_point"], inits[f"w{k}_zero_point"].astype(np.int64))


def test_dynamic_uint8_conv_integer(tmp_path):
    from onnxruntime.quantization import QuantType

    w, b = RNG.standard_normal((6, 3, 3, 3)) * 0.3, RNG.standard_normal(6)
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c"], ["y"])]
    float_model = _model(nodes, [_vi("x", [1, 3, 7, 7])], [_vi("y", [1, 6, 7, 7])], [_f32("w", w), _f32("b", b)])
    q = _quantize_dynamic(tmp_path, float_model, weight_type=QuantType.QUInt8, op_types_to_quantize=["Conv"])
    assert "ConvInteger" in {n.op_type for n in q.graph.node}
    x = RNG.standard_normal((1, 3, 7, 7)).astype(np.float32)
    m, (got,) = _ours(q, {"x": x})
    (dyn,) = _ort(q, {"x": x})
    (ref,) = _ort(float_model, {"x": x})
    assert np.abs(got - ref).max() < 0.05 and np.abs(got - dyn).max() < 0.1
    assert m.import_notes["quantized_source"]["weights"]  # uint8 weights with their zero point
    assert next(iter(m.import_notes["quantized_source"]["weights"].values()))["dtype"] == "uint8"


def test_dynamic_quantize_lstm(tmp_path):
    from onnxruntime.quantization import QuantType

    hidden, inp, steps = 8, 5, 4
    wts = [_f32("W", RNG.standard_normal((1, 4 * hidden, inp)) * 0.4),
           _f32("R", RNG.standard_normal((1, 4 * hidden, hidden)) * 0.4),
           _f32("B", RNG.standard_normal((1, 8 * hidden)) * 0.1)]
    nodes = [h.make_node("LSTM", ["x", "W", "R", "B"], ["Y"], hidden_size=hidden)]
    float_model = _model(nodes, [_vi("x", [steps, 1, inp])], [_vi("Y", [steps, 1, 1, hidden])], wts)
    q = _quantize_dynamic(tmp_path, float_model, weight_type=QuantType.QInt8, op_types_to_quantize=["LSTM"])
    assert "DynamicQuantizeLSTM" in {n.op_type for n in q.graph.node}
    x = RNG.standard_normal((steps, 1, inp)).astype(np.float32)
    m, (got,) = _ours(q, {"x": x})
    (dyn,) = _ort(q, {"x": x})
    (ref,) = _ort(float_model, {"x": x})
    assert np.abs(got.reshape(ref.shape) - ref).max() < 0.03
    assert np.abs(got.reshape(dyn.shape) - dyn).max() < 0.05
    assert m.import_notes["quantized_source"]["rewritten"] == {"DynamicQuantizeLSTM": 1}
    inits = {i.name: nh.to_array(i) for i in q.graph.initializer}
    lstm = next(n for n in q.graph.node if n.op_type == "DynamicQuantizeLSTM")
    recorded = {e["kind"]: e for e in m.given_quantization.values()}
    assert len(m.given_quantization) == 2 and set(recorded) == {"weight"}
    scales = sorted(np.asarray(e["scale"]).tolist() for e in m.given_quantization.values())
    assert scales == sorted(inits[lstm.input[k]].reshape(-1).tolist() for k in (8, 10))


# ------------------------------------------------------------------------------------------ com.microsoft
def _ms(op, inputs, outputs, **attrs):
    return h.make_node(op, inputs, outputs, domain="com.microsoft", **attrs)


def _compare(model, feeds, atol=2e-5):
    m, got = _ours(model, feeds)
    want = _ort(model, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, atol=atol, rtol=1e-5)
    return m


@pytest.mark.parametrize("opset", [13, 17])
def test_skip_layer_normalization_with_bias_and_the_sum_output(opset):
    hid = 12
    nodes = [_ms("SkipLayerNormalization", ["x", "skip", "g", "b", "bias"], ["y", "", "", "sum"], epsilon=1e-5)]
    inits = [_f32("g", RNG.random(hid) + 0.5), _f32("b", RNG.standard_normal(hid)),
             _f32("bias", RNG.standard_normal(hid))]
    model = _model(nodes, [_vi("x", [2, 3, hid]), _vi("skip", [2, 3, hid])], [_vi("y", [2, 3, hid]),
                   _vi("sum", [2, 3, hid])], inits, opset=opset, ms=True)
    feeds = {"x": RNG.standard_normal((2, 3, hid)).astype(np.float32),
             "skip": RNG.standard_normal((2, 3, hid)).astype(np.float32)}
    m = _compare(model, feeds, atol=1e-4)
    assert m.import_notes["quantized_source"]["rewritten"] == {"SkipLayerNormalization": 1}


@pytest.mark.parametrize("op,inputs", [("FastGelu", ["x", "bias"]), ("FastGelu", ["x"]), ("BiasGelu", ["x", "bias"]),
                                       ("Gelu", ["x"]), ("QuickGelu", ["x"])])
def test_gelu_family(op, inputs):
    model = _model([_ms(op, inputs, ["y"])], [_vi("x", [2, 5, 8])], [_vi("y", [2, 5, 8])],
                   [_f32("bias", RNG.standard_normal(8))], ms=True)
    _compare(model, {"x": (RNG.standard_normal((2, 5, 8)) * 3).astype(np.float32)}, atol=1e-5)


@pytest.mark.parametrize("trans_a,trans_b,alpha", [(0, 1, 0.5), (1, 0, 1.0), (1, 1, 2.0)])
def test_fused_matmul(trans_a, trans_b, alpha):
    a_shape = [2, 6, 4] if trans_a else [2, 4, 6]
    b = RNG.standard_normal((5, 6) if trans_b else (6, 5))
    model = _model([_ms("FusedMatMul", ["a", "b"], ["y"], transA=trans_a, transB=trans_b, alpha=alpha)],
                   [_vi("a", a_shape)], [_vi("y", [2, 4, 5])], [_f32("b", b)], ms=True)
    _compare(model, {"a": RNG.standard_normal(a_shape).astype(np.float32)}, atol=1e-5)


@pytest.mark.parametrize("mask,unidirectional", [(None, 0), ("2d", 0), (None, 1), ("3d", 1)])
def test_attention_packed_qkv(mask, unidirectional):
    b, s, hid, heads = 2, 5, 16, 4
    ins = ["x", "w", "bias"]
    inputs = [_vi("x", [b, s, hid])]
    feeds = {"x": RNG.standard_normal((b, s, hid)).astype(np.float32)}
    if mask:
        shape = [b, s] if mask == "2d" else [b, s, s]
        m = np.ones(shape, np.int32)
        m[0, ..., -2:] = 0
        inputs.append(_vi("mask", shape, TP.INT32))
        feeds["mask"] = m
        ins.append("mask")
    node = _ms("Attention", ins, ["y"], num_heads=heads, unidirectional=unidirectional)
    model = _model([node], inputs, [_vi("y", [b, s, hid])],
                   [_f32("w", RNG.standard_normal((hid, 3 * hid)) * 0.3), _f32("bias", RNG.standard_normal(3 * hid))],
                   ms=True)
    m = _compare(model, feeds, atol=1e-4)
    assert "SOFTMAX" in _ops(m)


def test_contrib_refusals_name_the_op_and_the_reason():
    hid = 8
    nodes = [_ms("Attention", ["x", "w", "", "", "past"], ["y", "present"], num_heads=2),
             _ms("Rfft", ["x"], ["z"])]
    model = _model(nodes, [_vi("x", [1, 3, hid]), _vi("past", [2, 1, 2, 2, 4])],
                   [_vi("y", [1, 3, hid]), _vi("present", [2, 1, 2, 5, 4]), _vi("z", [1, 3, 5, 2])],
                   [_f32("w", RNG.standard_normal((hid, 3 * hid)))], ms=True)
    with pytest.raises(ConversionError) as err:
        import_onnx(model)
    text = "\n".join(err.value.problems)
    assert "past / present state is not mapped" in text
    assert "onnxruntime contrib op 'Rfft' has no mapping" in text


def test_matmul_integer_outside_quantize_dynamic_form_is_refused():
    """MatMulInteger on run-time int8 inputs (no DynamicQuantizeLinear): refused with the supported form."""
    nodes = [h.make_node("MatMulInteger", ["a", "bq"], ["y"])]
    model = _model(nodes, [_vi("a", [2, 3], TP.INT8)], [_vi("y", [2, 4], TP.INT32)],
                   [nh.from_array(np.ones((3, 4), np.int8), "bq")])
    with pytest.raises(ConversionError) as err:
        import_onnx(model)
    assert "quantize_dynamic form" in "\n".join(err.value.problems)


def test_float_model_without_quantized_nodes_is_untouched():
    model = _model([h.make_node("Relu", ["x"], ["y"])], [_vi("x", [2, 3])], [_vi("y", [2, 3])])
    m = import_onnx(model)
    assert "quantized_source" not in m.import_notes and not _ranges(m)


def test_dynamic_int8_qattention_over_an_int8_embedding_table(tmp_path):
    """quantize_dynamic turns Gather(embedding) -> com.microsoft Attention into Gather(int8 table) -> QAttention:
    imported as Gather of the dequantized table -> the attention decomposition over dequantized weights."""
    from onnxruntime.quantization import QuantType

    emb, w = RNG.standard_normal((50, 16)) * 0.5, RNG.standard_normal((16, 48)) * 0.3
    nodes = [h.make_node("Gather", ["emb", "ids"], ["e"]), _ms("Attention", ["e", "w", "b"], ["y"], num_heads=4)]
    float_model = _model(nodes, [_vi("ids", [1, 5], TP.INT64)], [_vi("y", [1, 5, 16])],
                         [_f32("emb", emb), _f32("w", w), _f32("b", RNG.standard_normal(48) * 0.1)], ms=True)
    q = _quantize_dynamic(tmp_path, float_model, weight_type=QuantType.QInt8)
    assert "QAttention" in {n.op_type for n in q.graph.node}
    ids = np.array([[3, 1, 49, 0, 7]], np.int64)
    m, (got,) = _ours(q, {"ids": ids})
    (dyn,) = _ort(q, {"ids": ids})
    (ref,) = _ort(float_model, {"ids": ids})
    assert np.abs(got - ref).max() < 0.05 and np.abs(got - dyn).max() < 0.05
    assert m.import_notes["quantized_source"]["format"] == "dynamic-int8"
    assert not {"QUANTIZE", "DEQUANTIZE"} & set(_ops(m))
    assert all(t.type != "UINT8" for t in m.subgraphs[0].tensors)  # the int8 table went with its Gather


def test_fake_quantized_constant_weights_fold_and_are_recorded():
    """QuantizeLinear -> DequantizeLinear of a float constant (a fake-quant export's weights): the weights fold to
    their rounded values, the scale recorded as a weight's; the activation pair on x stays a range."""
    w = RNG.standard_normal((4, 3)).astype(np.float32)
    nodes = [h.make_node("QuantizeLinear", ["w", "ws", "wz"], ["wq"]),
             h.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"]),
             h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]), h.make_node("MatMul", ["xd", "wd"], ["y"])]
    inits = [_f32("w", w), _f32("ws", 0.02), nh.from_array(np.array(0, np.int8), "wz"), _f32("xs", 0.03),
             nh.from_array(np.array(-5, np.int8), "xz")]
    model = _model(nodes, [_vi("x", [2, 4])], [_vi("y", [2, 3])], inits)
    x = (RNG.standard_normal((2, 4)) * 0.5).astype(np.float32)
    m, (got,) = _ours(model, {"x": x})
    np.testing.assert_allclose(got, x @ (np.clip(np.round(w / 0.02), -128, 127) * np.float32(0.02)), atol=1e-5)  # int8 saturates
    assert np.abs(got - _ort(model, {"x": x})[0]).max() < 0.05
    assert m.given_quantization["wd"]["kind"] == "weight" and m.given_quantization["xd"]["kind"] == "activation"
    assert _ranges(m)["x"].min[0] == np.float32(0.03) * np.float32(-128 + 5)


def test_dynamic_int8_embedding_gather_then_dequantize_linear():
    """Gather(int8 table) -> DequantizeLinear (quantize_dynamic's embeddings before a float op) is a float Gather."""
    tq = RNG.integers(-127, 128, (20, 6)).astype(np.int8)
    nodes = [h.make_node("Gather", ["tq", "ids"], ["eq"]), h.make_node("DequantizeLinear", ["eq", "s", "z"], ["e"]),
             h.make_node("Relu", ["e"], ["y"])]
    model = _model(nodes, [_vi("ids", [4], TP.INT64)], [_vi("y", [4, 6])],
                   [nh.from_array(tq, "tq"), _f32("s", 0.02), nh.from_array(np.array(0, np.int8), "z")])
    ids = np.array([0, 19, 5, 5], np.int64)
    m, (got,) = _ours(model, {"ids": ids})
    np.testing.assert_allclose(got, _ort(model, {"ids": ids})[0], rtol=1e-6)
    assert _ops(m) == ["GATHER", "RELU"]


def test_fused_matmul_on_computed_tensors_after_other_contrib_ops():
    """An onnxruntime-optimized attention score: FusedMatMul(q, k, transB=1, alpha) on tensors computed after a
    SkipLayerNormalization -- their rank comes from shape inference once the nodes before are rewritten."""
    hid = 8
    nodes = [_ms("SkipLayerNormalization", ["x", "skip", "g"], ["n"]),
             h.make_node("MatMul", ["n", "wq"], ["q"]), h.make_node("MatMul", ["n", "wk"], ["k"]),
             _ms("FusedMatMul", ["q", "k"], ["s"], transB=1, alpha=0.25), _ms("FastGelu", ["s"], ["y"])]
    model = _model(nodes, [_vi("x", [2, 3, hid]), _vi("skip", [2, 3, hid])], [_vi("y", [2, 3, 3])],
                   [_f32("g", RNG.random(hid) + 0.5), _f32("wq", RNG.standard_normal((hid, hid))),
                    _f32("wk", RNG.standard_normal((hid, hid)))], ms=True)
    feeds = {"x": RNG.standard_normal((2, 3, hid)).astype(np.float32),
             "skip": RNG.standard_normal((2, 3, hid)).astype(np.float32)}
    m = _compare(model, feeds, atol=1e-4)
    assert m.import_notes["quantized_source"]["rewritten"] == {"SkipLayerNormalization": 1, "FusedMatMul": 1,
                                                               "FastGelu": 1}


def _tts_like():
    """LSTM -> feed-forward block with an erf Gelu -> residual LayerNorm -> a self-similarity MatMul with a
    transposed operand: onnxruntime's extended optimizations fuse it into com.microsoft Gelu,
    SkipLayerNormalization and FusedMatMul (and Gemm), quantize_dynamic then makes DynamicQuantizeLSTM and
    DynamicQuantizeLinear -> MatMulInteger -- the node kinds of the TTS model of issue 24."""
    d, ff, inp = 16, 32, 8
    nodes = [h.make_node("LSTM", ["x", "W", "R", "B"], ["Y"], hidden_size=d),
             h.make_node("Squeeze", ["Y", "ax1"], ["ys"]), h.make_node("Transpose", ["ys"], ["t"], perm=[1, 0, 2]),
             h.make_node("MatMul", ["t", "w1"], ["m1"]), h.make_node("Add", ["m1", "b1"], ["a1"]),
             h.make_node("Div", ["a1", "sq2"], ["dv"]), h.make_node("Erf", ["dv"], ["e"]),
             h.make_node("Add", ["e", "one"], ["e1"]), h.make_node("Mul", ["a1", "e1"], ["g0"]),
             h.make_node("Mul", ["g0", "half"], ["gl"]), h.make_node("MatMul", ["gl", "w2"], ["m2"]),
             h.make_node("Add", ["m2", "b2"], ["a2"]), h.make_node("Add", ["a2", "t"], ["res"]),
             h.make_node("LayerNormalization", ["res", "g", "bb"], ["ln"], axis=-1, epsilon=1e-5),
             h.make_node("Transpose", ["ln"], ["lt"], perm=[0, 2, 1]), h.make_node("MatMul", ["ln", "lt"], ["y"])]
    inits = [_f32("W", RNG.standard_normal((1, 4 * d, inp)) * .3), _f32("R", RNG.standard_normal((1, 4 * d, d)) * .3),
             _f32("B", RNG.standard_normal((1, 8 * d)) * .1), nh.from_array(np.array([1], np.int64), "ax1"),
             _f32("w1", RNG.standard_normal((d, ff)) * .3), _f32("b1", RNG.standard_normal(ff) * .1),
             _f32("sq2", math.sqrt(2)), _f32("one", 1.0), _f32("half", 0.5),
             _f32("w2", RNG.standard_normal((ff, d)) * .3), _f32("b2", RNG.standard_normal(d) * .1),
             _f32("g", RNG.random(d) + .5), _f32("bb", RNG.standard_normal(d) * .1)]
    return _model(nodes, [_vi("x", [6, 1, inp])], [_vi("y", [1, 6, 6])], inits)


def tts_like_dynamic_int8(folder) -> None:
    """``_tts_like`` as onnxruntime's tools make it: f.onnx, opt.onnx (its extended optimizations: the contrib
    fusions) and q.onnx (quantize_dynamic, int8 weights) in ``folder``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    onnx.save(_tts_like(), folder / "f.onnx")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = str(folder / "opt.onnx")
    ort.InferenceSession(str(folder / "f.onnx"), so, providers=["CPUExecutionProvider"])
    quantize_dynamic(str(folder / "opt.onnx"), str(folder / "q.onnx"), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": TP.FLOAT})


def test_tts_like_model_optimized_and_dynamically_quantized_by_onnxruntime(tmp_path):
    from converters import convert

    tts_like_dynamic_int8(tmp_path)
    q = onnx.load(tmp_path / "q.onnx")
    kinds = {(n.domain, n.op_type) for n in q.graph.node}
    assert {("com.microsoft", "DynamicQuantizeLSTM"), ("com.microsoft", "SkipLayerNormalization"),
            ("com.microsoft", "Gelu"), ("com.microsoft", "FusedMatMul"), ("", "MatMulInteger"),
            ("", "DynamicQuantizeLinear")} <= kinds
    x = RNG.standard_normal((6, 1, 8)).astype(np.float32)
    m, (got,) = _ours(q, {"x": x})
    (dyn,) = _ort(q, {"x": x})
    (ref,) = _ort(onnx.load(tmp_path / "f.onnx"), {"x": x})
    scale = np.abs(ref).max()
    assert np.abs(got - ref).max() < 0.02 * scale and np.abs(got - dyn).max() < 0.03 * scale
    assert m.import_notes["quantized_source"]["rewritten"] == {
        "MatMulInteger": 2, "DynamicQuantizeLSTM": 1, "Gelu": 1, "SkipLayerNormalization": 1, "FusedMatMul": 1}
    result = convert(str(tmp_path / "q.onnx"), quantize="dynamic")
    assert result.report["import"]["quantized_source"]["format"] == "dynamic-int8"


def _classifier():
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c"], ["r"]),
             h.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             h.make_node("Flatten", ["p"], ["fl"]), h.make_node("Gemm", ["fl", "wf", "bf"], ["g"], transB=1),
             h.make_node("Add", ["g", "g"], ["a"]), h.make_node("Softmax", ["a"], ["y"])]
    inits = [_f32("w", RNG.standard_normal((4, 3, 3, 3)) * .3), _f32("b", RNG.standard_normal(4) * .1),
             _f32("wf", RNG.standard_normal((10, 64)) * .2), _f32("bf", RNG.standard_normal(10) * .1)]
    return _model(nodes, [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 10])], inits, opset=13)


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_qdq_classifier_converts_to_the_float_models_ops_and_qoperator_is_refused_with_the_way_out(tmp_path, fmt):
    """A Q/DQ pair with a range from 0 after an op that is >= 0 anyway (MaxPool of a ReLU, Softmax) adds no
    Relu: the QDQ model converts to the float model's ops. QOperator graphs (QLinearConv ...) are refused, naming
    the QDQ export."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    from converters import convert

    float_model = _classifier()
    onnx.save(float_model, tmp_path / "f.onnx")
    samples = [RNG.standard_normal((1, 3, 8, 8)).astype(np.float32) for _ in range(8)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": s} for s in samples])

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), Reader(),
                    quant_format=getattr(QuantFormat, fmt))
    q = onnx.load(tmp_path / "q.onnx")
    if fmt == "QOperator":
        with pytest.raises(ConversionError) as err:
            import_onnx(q)
        assert "QLinearConv" in str(err.value.problems) and "QuantFormat.QDQ" in str(err.value.problems)
        return
    def ops(src):
        model = convert(src, quantize="none").model
        return [model.op_name(o) for o in model.subgraphs[0].operators]

    assert ops(q) == ops(float_model)
    m, (got,) = _ours(q, {"x": samples[0]})
    (want,) = _ort(q, {"x": samples[0]})
    assert np.abs(got - want).max() < 0.03
    assert len(m.import_notes["quantized_source"]["given_ranges"]) >= 6
