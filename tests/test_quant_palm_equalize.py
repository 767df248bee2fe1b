"""Issue 24: cross-layer equalization scaled palm_detection_lite's depthwise -> 1x1 pairs by their weight ranges
while the activation between them already had channels of like range (3.5x): 19 of its 22 pairs left that
activation's channels further apart (mean channel loss under one scale up by 0.3-3.8 dB) and the int8 outputs lost
1.7 dB. With calibration data a pair now stays as it was where its scales would spread the activation further.
The palm-like case: an input whose channels differ 30x, a depthwise whose weights undo that (its output's channels
alike, its weights 30x apart) and a 1x1 conv."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")

C = 8
GAINS = np.geomspace(1.0, 30.0, C)


def _dw_pair():
    from onnx import TensorProto, helper, numpy_helper

    r = np.random.default_rng(11)
    wd = (r.uniform(0.5, 1.0, (C, 1, 3, 3)) / GAINS[:, None, None, None]).astype(np.float32)
    w2 = (r.standard_normal((4, C, 1, 1)) * 0.3).astype(np.float32)
    slope = r.uniform(-0.2, 0.3, (C, 1, 1)).astype(np.float32)
    inits = [numpy_helper.from_array(wd, "wd"), numpy_helper.from_array(w2, "w2"),
             numpy_helper.from_array(slope, "slope")]
    nodes = [helper.make_node("Conv", ["x", "wd"], ["d"], group=C, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("PRelu", ["d", "slope"], ["a"]),
             helper.make_node("Conv", ["a", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "dw_pair", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 12, 12])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _samples(n=8):
    """Channel c about GAINS[c] / 30 of the largest, every value on the int8 input's grid (the range -128 .. 127
    quanta of 0.05 is in every sample): the input's quantization adds no error, only the ops' activations do."""
    r = np.random.default_rng(5)
    out = []
    for _ in range(n):
        q = np.clip(np.round(r.standard_normal((1, C, 12, 12)) * GAINS[None, :, None, None] * 1.4), -128, 127)
        q[0, -1, 0, :2] = (-128, 127)
        out.append([(q * 0.05).astype(np.float32)])
    return out


def test_a_pair_whose_scales_would_spread_the_activation_is_left_as_it_was():
    from converters.import_onnx import import_onnx
    from converters.passes.equalize import equalize
    from converters.quantize import quantize

    model = import_onnx(_dw_pair())
    samples = _samples()
    data_free, pairs = equalize(model)  # the weight ranges alone: the pair is equalized
    assert len(pairs) == 1 and pairs[0]["first_op"] == "DEPTHWISE_CONV_2D" and "kept" not in pairs[0]
    fixed = quantize(model, samples, bias_correction=False)
    report = fixed.report
    assert report["equalized"] == []
    (note,) = [n for n in report["notes"] if n.startswith("cross-layer equalization left 1 pair(s)")]
    before, after = [float(v) for v in note.split(": ")[-1].split(" dB")[0].split(" -> ")]
    assert after > before + 3  # the activation between the ops: its channels further apart by the pair's scales
    # the int8 outputs: better than with the weight-range scales (as every such pair was equalized before)
    forced = quantize(data_free, samples, bias_correction=False, equalize=False)
    kept_snr = report["guard"]["outputs"][0]["snr_db"]
    forced_snr = forced.report["guard"]["outputs"][0]["snr_db"]
    assert kept_snr > forced_snr + 1, (kept_snr, forced_snr)


def test_without_calibration_data_the_pair_is_equalized_as_before():
    from converters.import_onnx import import_onnx
    from converters.passes.equalize import equalize

    model = import_onnx(_dw_pair())
    _, pairs = equalize(model, activation_maxima=None)
    assert [p.get("kept", True) for p in pairs] == [True]
