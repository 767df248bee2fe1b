"""Issue 24's int8 goals at default settings for raspberry-pi-4 on the stand-ins of benchmarks/convert_goals.py at
small sizes (``convert(onnx, target="raspberry-pi-4", calibration=...)``, nothing else): each converted model keeps
its task against onnxruntime on a separate evaluation set -- detections kept, a text map's IoU, CTC strings, the
landmarks' and the posteriorgrams' SNR. And the recognition task the guard judges a CTC model by."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import convert_goals  # noqa: E402

from converters import evaluate  # noqa: E402


def test_ctc_greedy_collapses_repeats_and_drops_blanks():
    steps = np.eye(5)[[0, 3, 3, 0, 3, 1, 1, 0, 0, 4]]  # one-hot (T, C): blank 0
    assert evaluate.ctc_greedy(steps) == (3, 3, 1, 4)
    assert evaluate.ctc_greedy(np.eye(5)[[0, 0]]) == ()


def test_recognition_strings_metric():
    probs = np.eye(6)[[0, 2, 2, 0, 5, 0]][None]
    other = probs.copy()
    other[0, 4] = np.eye(6)[4]  # one step's argmax differs: a different string
    spec = {"task": "recognition", "output": "probs", "blank": 0}
    same = evaluate.task_metrics(spec, [{"probs": probs}] * 2, [{"probs": probs}, {"probs": other}])
    assert same["judged"] and same["metrics"]["strings"] == 0.5 and not same["met"]
    assert same["metrics"]["steps"] == pytest.approx(11 / 12)


def test_a_ctc_softmax_output_is_judged_by_its_strings():
    """A [1, T, C] SOFTMAX output says recognition (no --task needed); --task recognition says it of any
    (1, T, C) output; a classifier's (1, C) SOFTMAX stays classification."""
    from converters.import_onnx import import_onnx
    from onnx import TensorProto, helper

    def model(t, c, softmax=True):
        nodes = [helper.make_node("Softmax" if softmax else "Relu", ["x"], ["y"], **({"axis": -1} if softmax else {}))]
        shape = [1, t, c] if t else [1, c]
        g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
        return import_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))

    assert evaluate.task_spec(model(8, 30))["task"] == "recognition"
    assert evaluate.task_spec(model(8, 30, softmax=False)) is None
    assert evaluate.task_spec(model(8, 30, softmax=False), task="recognition")["output"] == "y"
    assert evaluate.task_spec(model(0, 30))["task"] == "classification"


def test_a_text_map_and_yolo_rows_are_judged_by_their_task():
    """Without --task: the DB-like detector's one probability map the input's size is a segmentation, the YOLO-like
    model's one output of 4 box rows joined with sigmoid scores is detections."""
    from converters.import_onnx import import_onnx

    det = evaluate.task_spec(import_onnx(convert_goals.ocr_det_like(32, 0.25)))
    assert det["task"] == "segmentation" and det["output"] == "maps"
    yolo = evaluate.task_spec(import_onnx(convert_goals.yolo_like(64, (8, 8, 8, 8, 8), classes=3)))
    assert yolo["task"] == "detection" and yolo["format"] == "yolo"


@pytest.mark.parametrize("name", list(convert_goals.STANDINS))
def test_standin_keeps_its_task_at_default_settings(name, monkeypatch, tmp_path):
    monkeypatch.setenv("EDGE_CACHE_DIR", str(tmp_path))
    r = convert_goals.measure(name, small=True)
    assert r["figure"] is not None
    assert r["figure"] >= r["goal"], (name, r["figure"], r["detail"], r["widened"])
    assert not r["refused"], name
    # kept by the search, not by widening every op: the share of MACs left in int8 it reaches (0 when all-float32)
    assert r["int8_macs"] >= convert_goals.STANDINS[name].int8_small, (name, r["int8_macs"], r["widened"])
    # int8 made better before the search: the landmark-like model's conv pairs equalized, the stem's through its
    # PRelu and the next conv's PAD too (8 pairs before, none through a PAD), the recognizer's LayerNorm outliers
    # migrated into its FCs
    if name == "landmark":
        pairs = r["report"]["quantization"]["report"]["equalized"]
        assert len(pairs) >= 9 and any("PAD" in p["through"] for p in pairs), [p["through"] for p in pairs]
    if name == "ocr_rec":
        assert r["migrated"] >= 3, r["migrated"]
    guard = r["report"]["quantization"]["report"]["guard"]
    search = guard.get("search") or {}
    if guard["steps"]:  # the search ran: the report says the goal's figure before and after it, and the int8 share
        assert search["int8_mac_share"] == pytest.approx(r["int8_macs"]) and "before" in search and "after" in search
