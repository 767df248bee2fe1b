"""A QDQ source whose weights are int8 PER TENSOR (onnxruntime's quantize_static default, per_channel=False): the
int8 model keeps the source's own integers and scale. Per-channel max-abs scales re-rounded them (a channel whose
largest integer is 40 got a scale 127 / 40 finer: up to 3 quanta off the source's integers)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

C = 8


def _float_net():
    """[1, 3, 8, 8] -> conv 3x3 (C, channel gains 0.1 .. 1: most channels' largest integer well below 127 under one
    scale) -> Relu -> conv 1x1 (4, no bias) -> [1, 4, 8, 8]."""
    r = np.random.default_rng(0)
    gains = np.geomspace(0.1, 1.0, C)[:, None, None, None]
    inits = [nh.from_array((r.standard_normal((C, 3, 3, 3)) * 0.3 * gains).astype(np.float32), "w1"),
             nh.from_array((r.standard_normal(C) * 0.1).astype(np.float32), "b1"),
             nh.from_array((r.standard_normal((4, C, 1, 1)) * 0.3 * gains[:4]).astype(np.float32), "w2")]
    nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c1"], ["r1"]), h.make_node("Conv", ["r1", "w2"], ["y"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])],
                     [h.make_tensor_value_info("y", TP.FLOAT, [1, 4, 8, 8])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def per_tensor_qdq(tmp_path_factory):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    d = tmp_path_factory.mktemp("qdq_per_tensor")
    onnx.save(_float_net(), d / "f.onnx")
    r = np.random.default_rng(1)
    samples = [r.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32) for _ in range(8)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": s} for s in samples])

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(d / "f.onnx"), str(d / "q.onnx"), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=False, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return onnx.load(d / "q.onnx")


def test_per_tensor_qdq_weights_keep_the_sources_integers(per_tensor_qdq):
    from converters import convert
    from edge_sdk.model import read_model

    inits = {i.name: nh.to_array(i) for i in per_tensor_qdq.graph.initializer}
    theirs = [(inits[n.input[0]], float(inits[n.input[1]])) for n in per_tensor_qdq.graph.node
              if n.op_type == "DequantizeLinear" and n.input[0] in inits and inits[n.input[0]].ndim == 4]
    assert len(theirs) == 2 and all(np.asarray(s).size == 1 for _, s in theirs)  # per tensor
    result = convert(per_tensor_qdq.SerializeToString())  # no calibration data: every range is the source's
    q = read_model(result.tflite)
    sg = q.subgraphs[0]
    convs = [op for op in sg.operators if q.op_name(op) == "CONV_2D"]
    assert len(convs) == 2
    for op, (w_int, w_scale) in zip(convs, theirs):
        t = sg.tensors[op.inputs[1]]
        ours = np.frombuffer(q.buffers[t.buffer].data, np.int8).reshape(t.shape)
        want = w_int.transpose(0, 2, 3, 1)  # ONNX OIHW -> TFLite OHWI
        # per channel max-abs re-rounded these (up to 3 quanta off); the source's integers and scale now
        assert np.array_equal(ours, want), np.abs(ours.astype(int) - want).max()
        assert np.allclose(t.quantization.scale, np.float32(w_scale), rtol=0, atol=0)
    # the bias: the source's int32 at input scale x its weight scale
    b_int = next(v for k, v in inits.items() if v.dtype == np.int32 and v.ndim == 1)
    bt = sg.tensors[convs[0].inputs[2]]
    assert np.array_equal(np.frombuffer(q.buffers[bt.buffer].data, np.int32), b_int)


def test_a_float_weight_matching_no_given_scale_keeps_per_channel_scales():
    from converters.quantize.given import source_weight_scale

    s = 0.01
    w = np.arange(-127, 128, dtype=np.float64).astype(np.float32) * np.float32(s)
    assert source_weight_scale(w, [0.02, s]) == s
    assert source_weight_scale(w + np.float32(0.004), [s]) is None  # off the grid: not the source's integers
    assert source_weight_scale(w * 2, [s]) is None  # past 127 quanta
    assert source_weight_scale(np.zeros(4), [s]) is None
