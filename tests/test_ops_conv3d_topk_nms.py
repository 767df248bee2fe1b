"""CONV_3D, TOPK_V2 and NON_MAX_SUPPRESSION_V4 / V5 (LiteRT builtins TFLM lacks; issue 15 point 3): single-op
models on both runtimes (the ``runtime`` grid: our Python interpreter and the C runtime) against LiteRT's
reference kernels: float within 1e-5 of the output's range, indices and counts exact; LiteRT runs once per case.
Inputs from the test's ``rng`` (was a module RNG: the two runtimes of a case see the same inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from tests.conftest import needs_c_runtime
from tests.oprunner import T, assert_same, op_model, peer_outputs, run_c, run_on, run_ours


def compare(runtime, model, feeds, float_tol=1e-5):
    """``runtime`` against LiteRT (run once per case); returns LiteRT's outputs."""
    peer = peer_outputs(model, feeds, "litert")
    runs = [(runtime, run_on(runtime, model, feeds))]
    for what, got in runs:
        assert len(got) == len(peer)
        for g, p in zip(got, peer):
            assert g.shape == p.shape and g.dtype == p.dtype, (what, g.shape, p.shape, g.dtype, p.dtype)
            if p.dtype.kind == "f":
                scale = max(float(np.abs(p).max()) if p.size else 0.0, 1.0)
                np.testing.assert_allclose(g, p, rtol=0, atol=float_tol * scale, err_msg=f"{what} vs LiteRT")
            else:
                assert_same([g], [p], what=f"{what} vs LiteRT")
    return peer


# ------------------------------------------------------------------------------------------------ CONV_3D


def _out_size(padding, size, k, stride, dil):
    eff = (k - 1) * dil + 1
    return -(-size // stride) if padding == "SAME" else (size - eff) // stride + 1


@pytest.mark.parametrize("padding,strides,dilations,act,bias", [
    ("VALID", (1, 1, 1), (1, 1, 1), "NONE", True),
    ("SAME", (2, 1, 2), (1, 1, 1), "RELU", True),
    ("SAME", (1, 2, 1), (2, 1, 2), "NONE", False),
    ("VALID", (2, 2, 3), (1, 2, 1), "RELU6", True),
    ("SAME", (3, 3, 3), (1, 1, 1), "RELU_N1_TO_1", True),
])
def test_conv_3d(runtime, padding, strides, dilations, act, bias, rng):
    n, d, h, w, c, o, k = 2, 6, 7, 5, 3, 4, (3, 2, 3)
    wv = rng.standard_normal(k + (c, o)).astype(np.float32)
    out = tuple(_out_size(padding, s, kk, st, dl) for s, kk, st, dl in zip((d, h, w), k, strides, dilations))
    inputs = [T((n, d, h, w, c), "FLOAT32"), T(wv.shape, "FLOAT32", data=wv)]
    if bias:
        inputs.append(T((o,), "FLOAT32", data=rng.standard_normal(o).astype(np.float32)))
    opts = {"padding": padding, "stride_d": strides[0], "stride_h": strides[1], "stride_w": strides[2],
            "dilation_d_factor": dilations[0], "dilation_h_factor": dilations[1],
            "dilation_w_factor": dilations[2], "fused_activation_function": act}
    model = op_model("CONV_3D", inputs, [T((n,) + out + (o,), "FLOAT32")], opts)
    compare(runtime, model, [rng.standard_normal((n, d, h, w, c)).astype(np.float32)])


def test_conv_3d_refuses_groups_and_int8():
    wv = np.zeros((1, 1, 1, 2, 4), np.float32)
    model = op_model("CONV_3D", [T((1, 2, 2, 2, 4), "FLOAT32"), T(wv.shape, "FLOAT32", data=wv)],
                     [T((1, 2, 2, 2, 4), "FLOAT32")], {"padding": "VALID"})
    with pytest.raises(ModelError, match="filter input depth 2 differs from the input depth 4"):
        run_ours(model, [np.zeros((1, 2, 2, 2, 4), np.float32)])
    wq = np.zeros((1, 1, 1, 4, 4), np.int8)
    model = op_model("CONV_3D", [T((1, 2, 2, 2, 4), "INT8", 0.1, 0), T(wq.shape, "INT8", 0.1, 0, data=wq)],
                     [T((1, 2, 2, 2, 4), "INT8", 0.1, 0)], {"padding": "VALID"})
    with pytest.raises(ModelError, match="FLOAT32"):
        run_ours(model, [np.zeros((1, 2, 2, 2, 4), np.int8)])


# ------------------------------------------------------------------------------------------------ TOPK_V2

_TOPK_Q = {"INT8": dict(scale=0.1, zero_point=-3), "UINT8": dict(scale=0.1, zero_point=120),
           "INT16": dict(scale=0.01, zero_point=0)}


def _topk_feed(rng, shape, type_, ties):
    if type_ == "FLOAT32":
        v = rng.integers(-3, 4, shape).astype(np.float32) if ties else rng.standard_normal(shape).astype(np.float32)
        return v
    dt = {"INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64}[type_]
    info = np.iinfo(dt)
    lo, hi = (0, 3) if ties else (info.min, info.max)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dt)


@pytest.mark.parametrize("type_", ["FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64"])
@pytest.mark.parametrize("shape,k", [((7,), 3), ((3, 4, 9), 9), ((2, 20), 1), ((5, 6), 0)])
@pytest.mark.parametrize("ties", [False, True])
def test_topk_v2(runtime, type_, shape, k, ties, rng):
    q = _TOPK_Q.get(type_, {})
    out = shape[:-1] + (k,)
    version = 2 if type_ == "INT8" else 3 if type_ == "INT16" else 1
    model = op_model("TOPK_V2", [T(shape, type_, **q), T((), "INT32", data=np.array(k, np.int32))],
                     [T(out, type_, **q), T(out, "INT32")], version=version)
    peer = compare(runtime, model, [_topk_feed(rng, shape, type_, ties)])
    assert peer[1].shape == out


def test_topk_v2_int64_extremes(runtime):
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    x = np.array([[3, lo, hi, lo, 0, hi, -1]], np.int64)
    model = op_model("TOPK_V2", [T(x.shape, "INT64"), T((), "INT32", data=np.array(7, np.int32))],
                     [T(x.shape, "INT64"), T(x.shape, "INT32")])
    peer = compare(runtime, model, [x])
    assert list(peer[1][0]) == [2, 5, 0, 4, 6, 1, 3]


def test_topk_v2_int16_indices_and_k(runtime, rng):
    shape, k = (4, 50), 7
    model = op_model("TOPK_V2", [T(shape, "FLOAT32"), T((), "INT16", data=np.array(k, np.int16))],
                     [T((4, k), "FLOAT32"), T((4, k), "INT16")], version=3)
    compare(runtime, model, [_topk_feed(rng, shape, "FLOAT32", True)])


def test_topk_v2_refuses_k_past_the_row():
    model = op_model("TOPK_V2", [T((2, 5), "FLOAT32"), T((), "INT32", data=np.array(6, np.int32))],
                     [T((2, 6), "FLOAT32"), T((2, 6), "INT32")])
    with pytest.raises(ModelError, match="k = 6 is not within 0..5"):
        run_ours(model, [np.zeros((2, 5), np.float32)])


# ------------------------------------------------------------------------------------------------ ONNX import


_CONVERTED: dict[bytes, tuple] = {}  # ONNX model bytes -> (onnxruntime's outputs, the .tflite): once per case


def _onnx_run(runtime, nodes, inputs, outputs, inits, feeds, opset=17):
    """The one-graph ONNX model through onnxruntime and through convert() + ``runtime`` (both once per case, the
    runtimes of a case sharing them): (onnxruntime's outputs, [the runtime's])."""
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    from converters import convert
    from edge_sdk import Interpreter

    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
          for n, v in zip(inputs, feeds)]
    vo = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    graph = helper.make_graph(nodes, "g", vi, vo, [numpy_helper.from_array(v, n) for n, v in inits.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    key = proto.SerializeToString() + b"".join(np.ascontiguousarray(v).tobytes() for v in feeds)
    if key not in _CONVERTED:
        want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, dict(zip(inputs, feeds)))
        _CONVERTED[key] = (want, convert(proto.SerializeToString(), quantize="none").tflite)
    want, tflite = _CONVERTED[key]
    got = []
    for backend in (runtime,):
        it = Interpreter(model_content=tflite, backend=backend)
        it.allocate_tensors()
        for d, v in zip(it.get_input_details(), feeds):
            it.set_tensor(d["index"], v)
        it.invoke()
        got.append([np.array(it.get_tensor(d["index"])) for d in it.get_output_details()])
    return want, got


@pytest.mark.parametrize("shape,k,axis,largest,dtype,ties", [
    ((3, 10), 4, -1, 1, np.float32, False),
    ((3, 10, 5), 3, 1, 1, np.float32, True),
    ((3, 10, 5), 3, 1, 0, np.float32, True),
    ((2, 9), 9, 1, 0, np.float32, False),
    ((6, 4), 6, 0, 1, np.int32, True),
])
def test_onnx_topk(runtime, shape, k, axis, largest, dtype, ties, rng):
    from onnx import TensorProto, helper

    x = (rng.integers(-2, 3, shape) if ties else rng.standard_normal(shape)).astype(dtype)
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)
    want, got = _onnx_run(runtime, [node], ["x"], [("v", helper.np_dtype_to_tensor_dtype(np.dtype(dtype))),
                                          ("i", TensorProto.INT64)], {"k": np.array([k], np.int64)}, [x])
    for ours in got:
        for g, w in zip(ours, want):
            assert g.dtype == w.dtype and np.array_equal(g, w), (g, w)


def test_onnx_topk_opset9_attribute_k(runtime, rng):
    from onnx import TensorProto, helper

    x = rng.integers(-2, 3, (4, 7)).astype(np.float32)
    node = helper.make_node("TopK", ["x"], ["v", "i"], k=3, axis=0)
    want, got = _onnx_run(runtime, [node], ["x"], [("v", TensorProto.FLOAT), ("i", TensorProto.INT64)], {}, [x], opset=9)
    for ours in got:
        assert all(np.array_equal(g, w) for g, w in zip(ours, want))


def test_onnx_topk_refusals():
    from onnx import TensorProto, helper

    from edge_sdk import ConversionError

    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], largest=0)
    with pytest.raises(ConversionError) as err:
        _onnx_run("python", [node], ["x"], [("v", TensorProto.INT32), ("i", TensorProto.INT64)],
                  {"k": np.array([2], np.int64)}, [x])
    assert "largest=0 (the k smallest) on a INT32 input" in "\n".join(err.value.problems)


# ------------------------------------------------------------------------------------------------ NMS V4 / V5


def _boxes(rng, n, ties):
    centre, size = rng.uniform(0, 10, (n, 2)), rng.uniform(0.5, 3, (n, 2))
    b = np.concatenate([centre - size / 2, centre + size / 2], 1).astype(np.float32)
    flip = rng.random(n) < 0.3
    b[flip] = b[flip][:, [2, 3, 0, 1]]  # either corner first
    scores = (rng.integers(0, 2, n) / 2 if ties else rng.random(n)).astype(np.float32)
    return b, scores


def _nms_model(n, max_output, iou, score, sigma=None):
    f = lambda v: T((), "FLOAT32", data=np.array(v, np.float32))  # noqa: E731
    ins = [T((n, 4), "FLOAT32"), T((n,), "FLOAT32"), T((), "INT32", data=np.array(max_output, np.int32)), f(iou),
           f(score)]
    if sigma is None:
        return op_model("NON_MAX_SUPPRESSION_V4", ins, [T((max_output,), "INT32"), T((), "INT32")])
    return op_model("NON_MAX_SUPPRESSION_V5", ins + [f(sigma)],
                    [T((max_output,), "INT32"), T((max_output,), "FLOAT32"), T((), "INT32")])


@pytest.mark.parametrize("seed", range(24))
@pytest.mark.parametrize("soft", [False, True])
def test_non_max_suppression(runtime, seed, soft):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    max_output = int(rng.integers(0, n + 3))
    iou = float(rng.choice([0.0, 0.3, 0.5, 1.0]))
    score = float(rng.choice([-1.0, 0.0, 0.2, 0.5]))
    sigma = float(rng.choice([0.0, 0.5, 2.0])) if soft else None
    boxes, scores = _boxes(rng, n, ties=seed % 2 == 0)
    peer = compare(runtime, _nms_model(n, max_output, iou, score, sigma), [boxes, scores], float_tol=0)
    assert int(peer[-1]) <= max_output


def test_non_max_suppression_equal_scores_in_heap_order(runtime):
    # 12 disjoint boxes of one score: LiteRT's priority queue returns them in its heap's order, not by index
    n = 12
    boxes = np.array([[0, 0, 1, 1]], np.float32) + 3 * np.arange(n, dtype=np.float32)[:, None]
    peer = compare(runtime, _nms_model(n, n, 0.5, 0.0), [boxes, np.full(n, 0.5, np.float32)])
    assert list(peer[0]) == [0, 2, 6, 11, 10, 9, 8, 7, 5, 4, 3, 1] and int(peer[1]) == n


def test_non_max_suppression_zero_area_box_repeats_as_litert(runtime):
    # LiteRT re-queues selected boxes; box 1 (no area: IoU 0 even with itself) is selected until the output is
    # full, box 3 (a copy of box 0) is suppressed by it
    boxes = np.array([[0, 0, 1, 1], [2, 2, 2, 3], [5, 5, 6, 6], [0, 0, 1, 1]], np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.6], np.float32)
    peer = compare(runtime, _nms_model(4, 4, 0.5, 0.0), [boxes, scores])
    assert list(peer[0]) == [0, 1, 1, 1] and int(peer[1]) == 4


def test_non_max_suppression_refusals():
    with pytest.raises(ModelError, match=r"iou_threshold 1.5 is not within \[0, 1\]"):
        run_ours(_nms_model(3, 2, 1.5, 0.0), [np.zeros((3, 4), np.float32), np.zeros(3, np.float32)])
    with pytest.raises(ModelError, match="soft_nms_sigma -1.0 is negative"):
        run_ours(_nms_model(3, 2, 0.5, 0.0, -1.0), [np.zeros((3, 4), np.float32), np.zeros(3, np.float32)])
    model = op_model("NON_MAX_SUPPRESSION_V4", [T((3, 4), "FLOAT32"), T((3,), "FLOAT32"), T((), "INT32"),
                                                T((), "FLOAT32", data=np.array(0.5, np.float32)),
                                                T((), "FLOAT32", data=np.array(0, np.float32))],
                     [T((2,), "INT32"), T((), "INT32")])
    with pytest.raises(ModelError, match="max_output_size .* is computed at run time"):
        run_ours(model, [np.zeros((3, 4), np.float32), np.zeros(3, np.float32), np.array(2, np.int32)])


def _onnx_nms(n, max_out, iou, score, center, seed, classes=1, batches=1, reader=False):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    centre, size = rng.uniform(0, 10, (batches, n, 2)), rng.uniform(0.5, 3, (batches, n, 2))
    boxes = np.concatenate([centre[..., ::-1], size] if center else [centre - size / 2, centre + size / 2], -1)
    boxes = boxes.astype(np.float32)
    scores = rng.random((batches, classes, n)).astype(np.float32)  # distinct scores (see the note on ties)
    inits = {"mo": np.array([max_out], np.int64), "iou": np.array([iou], np.float32)}
    names = ["boxes", "scores", "mo", "iou"]
    if score is not None:
        inits["st"] = np.array([score], np.float32)
        names.append("st")
    nodes = [helper.make_node("NonMaxSuppression", names, ["sel"], center_point_box=center)]
    out = "sel"
    if reader:
        nodes.append(helper.make_node("Identity", ["sel"], ["after"], name="reader"))
        out = "after"
    vi = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in (("boxes", boxes), ("scores", scores))]
    graph = helper.make_graph(nodes, "g", vi, [helper.make_tensor_value_info(out, TensorProto.INT64, None)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), [boxes, scores]


@pytest.mark.parametrize("n,max_out,iou,score,center,seed", [
    (30, 10, 0.3, 0.2, 0, 0), (30, 50, 0.0, None, 1, 1), (40, 5, 0.5, 0.9, 0, 2), (40, 40, 0.2, 0.1, 1, 4),
    (25, 25, 0.6, None, 0, 5),
])
def test_onnx_non_max_suppression(runtime, n, max_out, iou, score, center, seed):
    import onnxruntime as ort

    from converters import convert
    from edge_sdk import Interpreter

    proto, feeds = _onnx_nms(n, max_out, iou, score, center, seed)
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"boxes": feeds[0], "scores": feeds[1]})[0]
    key = proto.SerializeToString()
    if key not in _CONVERTED:  # the conversion once per case, for both runtimes
        _CONVERTED[key] = convert(key, quantize="none")
    result = _CONVERTED[key]
    rows = min(max_out, n)
    assert any(f"has a fixed {rows} rows" in note and "past the selected count are -1" in note
               for note in result.report["notes"]), result.report["notes"]
    for backend in (runtime,):
        it = Interpreter(model_content=result.tflite, backend=backend)
        it.allocate_tensors()
        for d, v in zip(it.get_input_details(), feeds):
            it.set_tensor(d["index"], v)
        it.invoke()
        got = it.get_tensor(it.get_output_details()[0]["index"])
        assert got.dtype == np.int64 and got.shape == (rows, 3), (backend, got.shape)
        k = len(want)
        np.testing.assert_array_equal(got[:k], want, err_msg=backend)
        assert (got[k:] == -1).all(), backend


@pytest.mark.parametrize("kwargs,reason", [
    (dict(classes=2), "2 classes: only one batch and one class"),
    (dict(batches=2), "2 batches and 1 classes"),
    (dict(reader=True), "its [num_selected, 3] result feeds other nodes (reader)"),
    (dict(iou=1.0), "iou_threshold 1.0 outside [0, 1)"),
    (dict(max_out=0), "max_output_boxes_per_class is absent or <= 0"),
])
def test_onnx_non_max_suppression_refusals(kwargs, reason):
    from converters import convert
    from edge_sdk import ConversionError

    args = dict(n=10, max_out=4, iou=0.5, score=0.1, center=0, seed=0)
    args.update(kwargs)
    proto, _ = _onnx_nms(**args)
    with pytest.raises(ConversionError) as err:
        convert(proto.SerializeToString(), quantize="none")
    assert reason in "\n".join(err.value.problems), err.value.problems


def _conv3d_chain(rng):
    from onnx import TensorProto, helper, numpy_helper

    w1 = rng.standard_normal((4, 3, 3, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((6, 2, 1, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1, 1, 1]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "w2"], ["c"], group=2, strides=[1, 2, 2]),
             helper.make_node("MaxPool", ["c"], ["d"], kernel_shape=[2, 2, 2])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 8, 9, 10))],
                              [helper.make_tensor_value_info("d", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_onnx_conv3d_chain_layout_and_int8_report(rng):
    """Conv3d -> Relu -> grouped Conv3d -> MaxPool3d: the layout pass leaves TRANSPOSE only at the input and
    the output, the result equals onnxruntime; under int8 the CONV_3Ds stay float and the report says so,
    with their MACs counted as not int8."""
    import onnxruntime as ort

    from converters import convert
    from edge_sdk import Interpreter

    proto = _conv3d_chain(rng)
    x = rng.standard_normal((1, 3, 8, 9, 10)).astype(np.float32)
    want = ort.InferenceSession(proto, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    result = convert(proto, quantize="none")
    ops = result.report["output"]["ops"]
    assert ops["CONV_3D"] == 3 and ops["TRANSPOSE"] == 2, ops
    it = Interpreter(model_content=result.tflite)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    got = it.get_tensor(it.get_output_details()[0]["index"])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * float(np.abs(want).max()))

    calib = [[rng.standard_normal((1, 3, 8, 9, 10)).astype(np.float32)] for _ in range(8)]
    guard = convert(proto, quantize="int8", calibration=calib).report["quantization"]["report"]["guard"]
    assert [w["op"] for w in guard["widened"]] == ["CONV_3D"] * 3
    assert all("no int8 rule" in w["reason"] for w in guard["widened"])
    # 8*9*10*4 outputs x 3*3*3*3 taps + 2 groups x 8*4*4*3 outputs x 1*3*3*2 taps
    assert guard["cost"]["macs_not_int8"] == guard["cost"]["macs_total"] == 233280 + 13824


@pytest.mark.parametrize("sigma", [None, 0.5])
def test_non_max_suppression_many_boxes(runtime, sigma):
    # an SSD-sized input: 2000 boxes, 100 kept
    rng = np.random.default_rng(7)
    centre, size = rng.uniform(0, 100, (2000, 2)), rng.uniform(1, 10, (2000, 2))
    boxes = np.concatenate([centre - size / 2, centre + size / 2], 1).astype(np.float32)
    peer = compare(runtime, _nms_model(2000, 100, 0.5, 0.1, sigma), [boxes, rng.random(2000).astype(np.float32)], float_tol=0)
    assert int(peer[-1]) == 100


# ------------------------------------------------------------------------------------------------ int8 rules


def test_int8_topk_keeps_the_input_quantization(rng):
    """Conv -> Flatten -> TopK: TOPK_V2 runs in int8 (its values keep the input's scale, the int32 indices are
    copied) and the indices' CAST to int64 is left alone (no float tensor: not 'widened')."""
    from onnx import TensorProto, helper, numpy_helper

    from converters import convert
    from edge_sdk import Interpreter

    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"]), helper.make_node("Flatten", ["a"], ["f"]),
             helper.make_node("TopK", ["f", "k"], ["v", "i"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 8, 8))],
                              [helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("i", TensorProto.INT64, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([5], np.int64), "k")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    calib = [[rng.standard_normal((1, 3, 8, 8)).astype(np.float32)] for _ in range(8)]
    result = convert(proto, quantize="int8", calibration=calib)
    ops = result.report["output"]["ops"]
    assert ops.get("TOPK_V2") == 1 and "DEQUANTIZE" not in ops, ops
    assert result.report["quantization"]["report"]["guard"]["widened"] == []
    it = Interpreter(model_content=result.tflite)
    it.allocate_tensors()
    topk = [d for d in it.get_tensor_details() if d["name"] == "v"]
    assert topk and topk[0]["dtype"] == np.int8


def test_int8_onnx_non_max_suppression_converts():
    """The NMS mapping's int32 row arithmetic (SUB / MINIMUM / MAXIMUM / ADD / PACK / CAST on the count) has no
    float tensor: the quantizer leaves it as it is; only NON_MAX_SUPPRESSION_V4 itself stays float."""
    from converters import convert
    from edge_sdk import Interpreter

    proto, feeds = _onnx_nms(30, 10, 0.3, 0.2, 1, 0)
    rng = np.random.default_rng(3)
    calib = [[feeds[0] + rng.normal(0, 0.01, feeds[0].shape).astype(np.float32), feeds[1]] for _ in range(8)]
    result = convert(proto.SerializeToString(), quantize="int8", calibration=calib)
    widened = result.report["quantization"]["report"]["guard"]["widened"]
    assert [w["op"] for w in widened] == ["NON_MAX_SUPPRESSION_V4"], widened
    it = Interpreter(model_content=result.tflite)
    it.allocate_tensors()
    for d, v in zip(it.get_input_details(), feeds):
        scale, zp = d["quantization"]
        it.set_tensor(d["index"], np.clip(np.round(v / scale) + zp, -128, 127).astype(np.int8))
    it.invoke()
    got = it.get_tensor(it.get_output_details()[0]["index"])
    assert got.dtype == np.int64 and got.shape == (10, 3)
    count = int((got[:, 2] >= 0).sum())
    assert count > 0 and (got[:count, :2] == 0).all() and (got[count:] == -1).all()


# ------------------------------------------------------------------------------------------------ ConvTranspose


@pytest.mark.parametrize("xshape,attrs", [
    ((2, 3, 4, 5), dict(strides=[3, 3], pads=[1, 1, 1, 1], output_padding=[2, 2])),
    ((1, 3, 4, 5), dict(strides=[2, 3], output_padding=[1, 2])),
    ((1, 3, 4, 5), dict(strides=[2, 2], output_shape=[10, 11])),  # one row past the full 9 x 11
    ((1, 3, 7), dict(strides=[2], pads=[1, 0], output_padding=[1])),
])
def test_onnx_conv_transpose_output_padding(runtime, xshape, attrs, rng):
    """output_padding / output_shape past the full output: rows and columns only the bias reaches, as
    onnxruntime computes them (TRANSPOSE_CONV's output_shape grown by less than the stride, then the crop)."""
    from onnx import TensorProto, helper

    cin, cout, k = xshape[1], 2, [3] * (len(xshape) - 2)
    w = rng.standard_normal((cin, cout, *k)).astype(np.float32)
    bias = rng.standard_normal(cout).astype(np.float32)
    x = rng.standard_normal(xshape).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=k, **attrs)
    want, got = _onnx_run(runtime, [node], ["x"], [("y", TensorProto.FLOAT)], {"w": w, "b": bias}, [x])
    for ours in got:
        assert ours[0].shape == want[0].shape
        np.testing.assert_allclose(ours[0], want[0], rtol=0, atol=1e-5 * float(np.abs(want[0]).max()))


@pytest.mark.parametrize("attrs,reason", [
    (dict(output_shape=[12, 9]), "output_shape [12, 9] is larger than the transposed convolution's full output [9, 9]"),
    (dict(output_padding=[2, 0]), "output_padding / output_shape [2, 0] past the full output, not below the strides"),
])
def test_onnx_conv_transpose_refuses_an_output_past_the_stride(attrs, reason):
    # (onnxruntime rejects both models too: 12 rows need an input of 5; output_padding must be below the stride)
    from onnx import TensorProto, helper, numpy_helper

    from converters import convert
    from edge_sdk import ConversionError

    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[3, 3], strides=[2, 2], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 4, 4))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32), "w")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ConversionError) as err:
        convert(proto.SerializeToString(), quantize="none")
    assert reason in "\n".join(err.value.problems), err.value.problems


# ------------------------------------------------------------------------------------------------ Cortex-M4


@needs_c_runtime
@pytest.mark.slow
def test_kernels_on_cortex_m4_under_qemu(tmp_path):
    """One model with CONV_3D (on a dequantized int8 input), int8 TOPK_V2 and NMS V4 + V5 (on dequantized boxes
    and scores) linked into the QEMU mps2-an386 image: every output's hash equals the host C runtime's on the
    image's inputs (the same float operations in the same order), and the Python interpreter's except
    CONV_3D's, whose GEMM sums in another order (within 1e-5 there)."""
    import re
    import subprocess
    import sys

    from edge_sdk import Interpreter
    from edge_sdk.model import write_model
    from edge_sdk.model.builder import GraphBuilder
    from tests.oprunner import image_main_hash, image_main_inputs, m4_image

    rng = np.random.default_rng(4)
    g = GraphBuilder()
    x = g.input("x", (1, 4, 5, 6, 2), "INT8", scale=[0.05], zero_point=[0])
    xf = g.tensor("xf", (1, 4, 5, 6, 2))
    g.op("DEQUANTIZE", [x], [xf])
    w = g.constant("w", rng.standard_normal((2, 3, 3, 2, 3)).astype(np.float32))
    b = g.constant("b", rng.standard_normal(3).astype(np.float32))
    y = g.tensor("y", (1, 4, 3, 6, 3))
    g.op("CONV_3D", [xf, w, b], [y], padding="SAME", stride_d=1, stride_h=2, stride_w=1, dilation_d_factor=2,
         fused_activation_function="RELU")
    t = g.input("t", (3, 40), "INT8", scale=[0.1], zero_point=[0])
    tv, ti = g.tensor("tv", (3, 6), "INT8", scale=[0.1], zero_point=[0]), g.tensor("ti", (3, 6), "INT32")
    g.op("TOPK_V2", [t, g.constant("k", np.array(6, np.int32))], [tv, ti], version=2)
    bq = g.input("bq", (64, 4), "INT8", scale=[0.05], zero_point=[0])
    sq = g.input("sq", (64,), "INT8", scale=[1 / 256], zero_point=[-128])
    bf, sf = g.tensor("bf", (64, 4)), g.tensor("sf", (64,))
    g.op("DEQUANTIZE", [bq], [bf])
    g.op("DEQUANTIZE", [sq], [sf])
    scalars = [g.constant("mo", np.array(20, np.int32)), g.constant("iou", np.array(0.4, np.float32)),
               g.constant("st", np.array(0.1, np.float32))]
    s4, c4 = g.tensor("s4", (20,), "INT32"), g.tensor("c4", (), "INT32")
    g.op("NON_MAX_SUPPRESSION_V4", [bf, sf, *scalars], [s4, c4])
    s5, p5, c5 = g.tensor("s5", (20,), "INT32"), g.tensor("p5", (20,)), g.tensor("c5", (), "INT32")
    g.op("NON_MAX_SUPPRESSION_V5", [bf, sf, *scalars, g.constant("sigma", np.array(0.5, np.float32))], [s5, p5, c5])
    g.output(y, tv, ti, s4, c4, s5, p5, c5)
    model = write_model(g.build())
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    # built with the session's library objects (tests.oprunner.m4_image)
    elf = m4_image(path, tmp_path / "b", f"PYTHON={sys.executable}") / "edge-image.elf"
    run = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none", "-kernel",
                          str(elf), "-icount", "shift=0", "-serial", "stdio", "-semihosting-config",
                          "enable=on,target=native"], capture_output=True, text=True, timeout=120)
    out = run.stdout.replace("\r", "")
    assert run.returncode == 0 and "status 0" in out and "done" in out, out + run.stderr
    hashes = dict(re.findall(r"^out (\d+) (\d+)$", out, re.M))
    py = Interpreter(model_content=model)
    py.allocate_tensors()
    feeds = image_main_inputs(py)
    for d, v in zip(py.get_input_details(), feeds):
        py.set_tensor(d["index"], v)
    py.invoke()
    ours = [np.array(py.get_tensor(d["index"])) for d in py.get_output_details()]
    host = run_c(model, feeds)
    assert int(ours[4]) == 20 and int(ours[7]) > 0  # NMS kept boxes: the comparison is not of empty outputs
    for i, (p, c) in enumerate(zip(ours, host)):
        assert hashes[str(i)] == str(image_main_hash(c.tobytes())), f"output {i}: M4 differs from the host C runtime"
        if i == 0:
            np.testing.assert_allclose(p, c, rtol=0, atol=1e-5 * max(1.0, float(np.abs(c).max())))
        else:
            assert hashes[str(i)] == str(image_main_hash(p.tobytes())), f"output {i}: M4 differs from Python"
