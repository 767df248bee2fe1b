"""Range-aware quantization of joins: a YOLOv8-style head concatenates boxes in pixels (0..320) with class
scores (0..1); under one shared int8 scale every score would be 0 or 1.27. The converter quantizes each part
alone and keeps the join in a wider type (int16 with integer I/O, float32 with float I/O), so the detections
survive at default settings; the per-layer report measures each joined part separately."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters import convert
from edge_sdk.model import read_model
from tests.peers import run_litert, run_tflm
from tests.test_quantize import assert_litert_equal, dequantize_outputs, quantize_inputs, run_ours

NC, SIZE = 3, 32


def yolo_head(seed=0):
    """Conv(s2) + SiLU -> a box branch (Conv 1x1 -> Sigmoid -> x320, 4 rows) and a class branch (Conv 1x1 ->
    Sigmoid, NC rows), each reshaped to (1, rows, cells) and concatenated on axis 1: (1, 4 + NC, cells)."""
    r = np.random.default_rng(seed)
    cells = (SIZE // 2) ** 2
    inits = {
        "w0": (r.standard_normal((16, 3, 3, 3)) * 0.4).astype(np.float32), "b0": np.zeros(16, np.float32),
        "wb": (r.standard_normal((4, 16, 1, 1)) * 0.5).astype(np.float32), "bb": np.zeros(4, np.float32),
        "wc": (r.standard_normal((NC, 16, 1, 1)) * 0.8).astype(np.float32),
        "bc": np.full(NC, -0.5, np.float32),
        "px": np.array(320.0, np.float32),
        "sb": np.array([1, 4, cells], np.int64), "sc": np.array([1, NC, cells], np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["images", "w0", "b0"], ["c0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4),
        helper.make_node("Sigmoid", ["c0"], ["s0"]), helper.make_node("Mul", ["c0", "s0"], ["f0"]),
        helper.make_node("Conv", ["f0", "wb", "bb"], ["cb"], kernel_shape=[1, 1]),
        helper.make_node("Sigmoid", ["cb"], ["sb0"]), helper.make_node("Mul", ["sb0", "px"], ["boxes4"]),
        helper.make_node("Reshape", ["boxes4", "sb"], ["boxes"]),
        helper.make_node("Conv", ["f0", "wc", "bc"], ["cc"], kernel_shape=[1, 1]),
        helper.make_node("Sigmoid", ["cc"], ["scores4"]), helper.make_node("Reshape", ["scores4", "sc"], ["scores"]),
        helper.make_node("Concat", ["boxes", "scores"], ["output0"], axis=1),
    ]
    graph = helper.make_graph(nodes, "yolo_head",
                              [helper.make_tensor_value_info("images", TP.FLOAT, [1, 3, SIZE, SIZE])],
                              [helper.make_tensor_value_info("output0", TP.FLOAT, [1, 4 + NC, cells])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _images(n, seed):
    return np.random.default_rng(seed).standard_normal((n, 1, 3, SIZE, SIZE)).astype(np.float32)


def _float_outputs(model, images):
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [sess.run(None, {"images": x})[0][0] for x in images]


def _detections(out, threshold=0.5):
    """(cell, class) pairs whose score passes ``threshold``, with the cell's box."""
    scores = out[4:]
    cls, cell = np.nonzero(scores > threshold)
    return {(int(c), int(k)): out[:4, c] for k, c in zip(cls, cell)}


def _compare_detections(pairs):
    """Over (float output, quantized output) pairs: how many clear float detections (score > 0.55) there
    are, the fraction found (> 0.5) in the quantized output, the quantized detections the float model
    clearly does not make (< 0.45), and the box errors (px) of the found ones."""
    clear_n, found_n, false_n, errs = 0, 0, 0, []
    for ref, got in pairs:
        clear, found = _detections(ref, 0.55), _detections(got, 0.5)
        clear_n += len(clear)
        for k, box in clear.items():
            if k in found:
                found_n += 1
                errs.append(np.abs(found[k] - box))
        false_n += sum(ref[4 + k[1], k[0]] < 0.45 for k in found)
    errs = np.concatenate(errs) if errs else np.zeros(1)
    return clear_n, found_n / max(clear_n, 1), false_n, errs


@pytest.mark.parametrize("io", ["int8", "float32"])
def test_yolo_head_keeps_detections(io):
    model = yolo_head()
    calib = _images(32, 1)[:, 0]
    res = convert(model, calibration=calib, io=io)
    joins = res.report["quantization"]["report"]["joins"]
    assert len(joins) == 1 and joins[0]["to_output"]
    scores_part = [p for p in joins[0]["parts"] if p["tensor"] == "scores"][0]
    assert scores_part["steps"] < 16  # it would have been crushed under one int8 scale
    assert joins[0]["kept"] == {"int8": "int16", "float32": "float32"}[io]
    from converters.report import format_conversion

    text = format_conversion(res.report)  # the summary says what was done, and measures the parts
    assert "joins parts of very different ranges ('scores'" in text and "parts scores" in text
    q = read_model(res.tflite)
    sg = q.subgraphs[0]
    out_t = sg.tensors[sg.outputs[0]]
    assert out_t.shape == (1, 4 + NC, (SIZE // 2) ** 2)
    assert out_t.type == {"int8": "INT16", "float32": "FLOAT32"}[io]
    assert sg.tensors[sg.inputs[0]].type == {"int8": "INT8", "float32": "FLOAT32"}[io]
    test = _images(12, 2)
    pairs = []
    for x, ref in zip(test, _float_outputs(model, test)):
        feed = quantize_inputs(q, [x])
        ours = run_ours(res.tflite, feed)
        if io == "int8":  # integer I/O: bit-exact with TFLM, LiteRT within one step
            np.testing.assert_array_equal(ours[0], run_tflm(res.tflite, feed)[0].reshape(ours[0].shape))
            assert_litert_equal(ours[0], run_litert(res.tflite, feed)[0])
        pairs.append((ref, dequantize_outputs(q, ours)[0][0]))
    clear, found, false, box_err = _compare_detections(pairs)
    assert clear > 1000 and found > 0.995 and false <= 0.005 * clear
    # boxes: int8 steps before the box sigmoid times its slope (up to 80 px per unit) move them a little
    assert box_err.mean() < 0.01 * 320 and np.percentile(box_err, 95) < 0.03 * 320
    # the per-layer report measures the scores part of the joined output on its own
    layers = res.report["quantization"]["report"]["layers"]
    parts = {r["input"]: r for r in layers if r.get("part_of") == "output0"}
    assert set(parts) == {"boxes", "scores"}
    assert parts["scores"]["snr_db"] > 25


def test_without_range_awareness_scores_are_crushed(monkeypatch):
    """The same head with the join forced to one int8 scale (what happened before): the scores part's SNR
    collapses, and the report shows it part by part, so the problem is visible."""
    from converters.quantize import joins

    model = yolo_head()
    calib = _images(32, 1)[:, 0]
    monkeypatch.setattr(joins, "JOIN_LEVELS", 0)  # no join counts as wide
    res = convert(model, calibration=calib, io="float32", precision="int8", allow_lossy=True)
    layers = res.report["quantization"]["report"]["layers"]
    parts = {r["input"]: r for r in layers if r.get("part_of") == "output0"}
    assert parts["scores"]["snr_db"] < 10 < parts["boxes"]["snr_db"]
    short = res.report["guard"]["short"]  # the guard names the crushed part of the output
    assert [(s["name"], s["part"]) for s in short] == [("output0", "scores")] and res.report["guard"]["lossy"]
    test = _images(4, 2)
    pairs = [(ref, run_ours(res.tflite, [x])[0][0]) for x, ref in zip(test, _float_outputs(model, test))]
    clear, found, false, _ = _compare_detections(pairs)
    assert found < 0.995  # fewer detections kept than the range-aware conversion keeps
    assert len(np.unique(np.round(np.concatenate([got[4:].ravel() for _, got in pairs]), 4))) <= 2  # 0 or 1.27
