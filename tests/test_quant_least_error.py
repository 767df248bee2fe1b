"""calib_method="least-error" (issue 24 point 4): each activation's range by the error it causes at the outputs.

The model: x -> MatMul -> h (two of its 64 channels 40x larger) -> Sigmoid -> MatMul -> y, as a gate or a score
channel is. min / max keeps h's two large channels and leaves the sigmoid's working range a few quanta; the
tensor's own MSE and the percentiles keep them too (they are 3% of the values); the sigmoid saturates them, so the
error measured at the outputs clips them. Figures measured by the guard on held-back samples (the int8 model
beside the float one), over four seeded models; the int8 model is TFLM's bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from converters import convert
from converters.quantize.calibrate import Stats, range_candidates
from converters.quantize.least_error import fake_quantized
from tests.oprunner import check_op


def gated_model(seed: int, width: int = 32, hidden: int = 64):
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((width, hidden)).astype(np.float32) * (2 / np.sqrt(width))
    w1[:, :2] *= 40  # two channels of h 40x larger: the sigmoid saturates them (a gate, a score)
    w2 = rng.standard_normal((hidden, 8)).astype(np.float32) / np.sqrt(hidden)
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]), helper.make_node("Sigmoid", ["h"], ["s"]),
             helper.make_node("MatMul", ["s", "W2"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    graph = helper.make_graph(nodes, "g", [x], [y], [numpy_helper.from_array(w1, "W1"),
                                                     numpy_helper.from_array(w2, "W2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def normal_samples(n: int, seed: int, width: int = 32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 1, width)).astype(np.float32)


def _snr(model, calib, method) -> tuple[float, dict, bytes]:
    result = convert(model, calibration=calib, calib_method=method, precision="int8", allow_lossy=True,
                     io="float32")
    q = result.report["quantization"]["report"]
    return q["guard"]["outputs"][0]["snr_db"], q["calibration"], result.tflite


def test_least_error_beats_minmax_mse_and_auto_on_saturated_outlier_channels():
    snr = {m: [] for m in ("minmax", "mse", "auto", "least-error")}
    for seed in range(4):
        model, calib = gated_model(seed), normal_samples(60, 10 + seed)
        for method in snr:
            value, calibration, tflite = _snr(model, calib, method)
            snr[method].append(value)
        assert calibration["method"] == "least-error"
        assert set(calibration["least_error"]) - {"minmax"}  # h clipped
        assert snr["least-error"][-1] >= snr["minmax"][-1], snr  # never worse than min / max here
    mean = {m: float(np.mean(v)) for m, v in snr.items()}
    # measured: minmax 20.3, mse 20.3, auto 22.1, least-error 31.4 dB (the mean over seeds 0-3)
    assert mean["least-error"] > mean["minmax"] + 6.0, mean
    assert mean["least-error"] > max(mean["mse"], mean["auto"]) + 5.0, mean
    check_op(tflite, [normal_samples(1, 99)[0]], peer="tflm")  # the int8 model: ours = TFLM bit for bit


def test_candidates_are_distinct_and_minmax_first():
    s = Stats(0)
    s.add(normal_samples(40, 3), keep_values=True)
    c = range_candidates(s, -128, 127, False)
    assert list(c)[0] == "minmax" and c["minmax"] == (s.min, s.max)
    assert len(set(c.values())) == len(c) >= 3
    x = normal_samples(1, 4)
    lo, hi = c["percentile 99"]
    q = fake_quantized(x, lo, hi, -128, 127, False)
    assert q.min() >= lo - 1e-3 * (hi - lo) and q.max() <= hi + 1e-3 * (hi - lo)  # clipped to the range


def joined_boxes_scores(half: int = 8, pixels: float = 300.0):
    """x [1, 2 x half] -> Split -> boxes = 300 x (first half), scores = sigmoid(second half - 6) -> Concat: a YOLO
    head's join of pixel boxes beside 0..1 scores. Only the scores' half carries a rare tail (the detections)."""
    nodes = [helper.make_node("Split", ["x"], ["fb", "fs"], axis=1, num_outputs=2),
             helper.make_node("Mul", ["fb", "P"], ["b"]), helper.make_node("Add", ["fs", "S"], ["s0"]),
             helper.make_node("Sigmoid", ["s0"], ["s"]), helper.make_node("Concat", ["b", "s"], ["y"], axis=1)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2 * half])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2 * half])],
        [numpy_helper.from_array(np.array(pixels, np.float32), "P"),
         numpy_helper.from_array(np.array(-6.0, np.float32), "S")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_a_joined_output_weighs_each_part_by_its_own_energy(monkeypatch):
    """The input's candidates: min / max (keeps the scores' tail, coarse steps for the boxes) and a range clipped at
    2.5 (finer boxes; every detection's score crushed from ~0.98 to sigmoid(2.5 - 6) = 0.03). Over the joined
    tensor's energy the boxes (300x) rule and the clipped range wins; part by part the scores' loss counts as the
    boxes' gain does, and min / max is kept."""
    import converters.quantize.least_error as least_error
    from converters.quantize.calibrate import Runner
    from edge_sdk.model import read_model

    model = read_model(convert(joined_boxes_scores(), quantize="none").tflite)
    sg = model.subgraphs[0]
    x = next(t for t in sg.inputs)
    assert len(least_error.measured_at(model)[sg.outputs[0]][1]) == 2  # measured at the join, part by part
    rng = np.random.default_rng(5)
    samples = [[v] for v in rng.standard_normal((8, 1, 16)).astype(np.float32)]
    for k, s in enumerate(samples):
        s[0][0, 8 + k % 8] = 10.0  # one detection per sample in the scores' half
    lo = min(float(s[0].min()) for s in samples)
    cands = {x: {"minmax": (lo, 10.0), "clipped": (lo, 2.5)}}
    run = Runner(model)
    chosen = least_error.least_error_ranges(model, cands, samples, run, -128, 127, False)[0][x]
    monkeypatch.setattr(least_error, "measured_at", lambda m: {o: (o, None) for o in m.subgraphs[0].outputs})
    whole = least_error.least_error_ranges(model, cands, samples, run, -128, 127, False)[0][x]
    assert chosen == (lo, 10.0) and whole == (lo, 2.5), (chosen, whole)
