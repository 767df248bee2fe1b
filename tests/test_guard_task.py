"""The accuracy guard judges the task (issue 24 point 5): when the model says what it is -- a classifier (labels in
its manifest, a SOFTMAX output), a detector (--boxes / --scores, a TFLite_Detection_PostProcess op), a segmenter --
the converted model is judged on the task's metric beside the raw SNR, and that metric decides: top-1 agreement,
float detections matched (same class, IoU >= 0.5, score within 0.05), map IoU. A raw-tensor model keeps the SNR
rule. Every model here is built in the test."""

from __future__ import annotations

import json

import numpy as np
import pytest

from converters import convert
from converters.evaluate import (
    apply_task_verdict,
    decode_detections,
    detection_agreement,
    judge_task,
    map_iou,
    match_detections,
    task_spec,
    top1_agreement,
)
from converters.report import format_conversion
from edge_sdk.cli import main
from edge_sdk.errors import ConversionError
from edge_sdk.model import read_model, write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.manifest import manifest_task, read_manifest, write_manifest
from tests.oprunner import flex_options

RNG = np.random.default_rng(24)


def _cli(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


# ------------------------------------------------------------------------------------------------ models


def _classifier(weights: np.ndarray, softmax: bool = False, labels=None) -> bytes:
    """x (1, D) -> FULLY_CONNECTED with ``weights`` (K, D) -> logits (1, K) [-> SOFTMAX probs]; ``labels`` go into
    the .tflite's manifest (the model says it is a classifier)."""
    g = GraphBuilder()
    x = g.input("x", (1, weights.shape[1]), "FLOAT32")
    logits = g.tensor("logits", (1, weights.shape[0]), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, g.constant("w", weights.astype(np.float32)), -1], [logits])
    out = logits
    if softmax:
        out = g.tensor("probs", (1, weights.shape[0]), "FLOAT32")
        g.op("SOFTMAX", [logits], [out])
    g.output(out)
    model = g.build()
    if labels is not None:
        write_manifest(model, {"labels": list(labels)})
    return write_model(model)


def _separated_weights(k=4, d=8):
    """Logit j = 4 * x_j: the argmax has a wide margin on most samples (int8 keeps it), the values spread over
    [-12, 12] (int8 loses ~40 dB of SNR: above 30, below 60)."""
    w = np.zeros((k, d), np.float32)
    w[np.arange(k), np.arange(k)] = 4.0
    return w


def _near_tie_weights():
    """Logits (x0, x0 + 0.004 x1, -x0, x2): classes 0 and 1 are within 0.004 |x1| of each other, far below one
    int8 step of the logits (~0.02): int8 picks the wrong one of the two on many samples while SNR stays high."""
    w = np.zeros((4, 8), np.float32)
    w[0, 0] = 1.0
    w[1, 0], w[1, 1] = 1.0, 0.004
    w[2, 0] = -1.0
    w[3, 2] = 0.3
    return w


def _samples(n=60, d=8, seed=1):
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    x[:, 0] = np.abs(x[:, 0]) + 0.5  # class 0 / 1 lead (the near-tie model's pair), the others stay below
    return x


N_BOXES, N_CLASSES = 24, 3
# corner boxes (ymin, xmin, ymax, xmax) in a 4 x 6 grid of well separated cells
_CELLS = np.array([[r / 4, c / 6, (r + 0.8) / 4, (c + 0.8) / 6] for r in range(4) for c in range(6)], np.float32)


def _detector_parts(g, x, score_shift: float = 0.0):
    """boxes (1, N, 4) = the grid cells + 0.01 * FC(x); scores (1, N, C) = LOGISTIC(FC(x) + shift): a few boxes per
    sample score well above 0.5, the rest well below."""
    rng = np.random.default_rng(7)
    d = 16
    wb = g.constant("wb", (rng.standard_normal((N_BOXES * 4, d)) * 0.3).astype(np.float32))
    ws = g.constant("ws", (rng.standard_normal((N_BOXES * N_CLASSES, d)) * 0.8).astype(np.float32))
    off = g.tensor("offsets_flat", (1, N_BOXES * 4))
    g.op("FULLY_CONNECTED", [x, wb, -1], [off])
    small = g.tensor("offsets_small", (1, N_BOXES * 4))
    g.op("MUL", [off, g.constant("k", np.array([0.01], np.float32))], [small])
    off3 = g.tensor("offsets", (1, N_BOXES, 4))
    g.op("RESHAPE", [small, g.constant("shape_b", np.array([1, N_BOXES, 4], np.int32))], [off3])
    boxes = g.tensor("boxes", (1, N_BOXES, 4))
    g.op("ADD", [off3, g.constant("cells", _CELLS[None])], [boxes])
    lf = g.tensor("logits_flat", (1, N_BOXES * N_CLASSES))
    g.op("FULLY_CONNECTED", [x, ws, g.constant("bs", np.full(N_BOXES * N_CLASSES, -3.0 + score_shift, np.float32))],
         [lf])
    lg = g.tensor("logits", (1, N_BOXES, N_CLASSES))
    g.op("RESHAPE", [lf, g.constant("shape_s", np.array([1, N_BOXES, N_CLASSES], np.int32))], [lg])
    scores = g.tensor("scores", (1, N_BOXES, N_CLASSES))
    g.op("LOGISTIC", [lg], [scores])
    return boxes, scores


def _boxes_detector(score_shift: float = 0.0) -> bytes:
    g = GraphBuilder()
    x = g.input("x", (1, 16), "FLOAT32")
    boxes, scores = _detector_parts(g, x, score_shift)
    g.output(boxes, scores)
    return write_model(g.build())


def _postprocess_detector() -> bytes:
    """The same heads into TFLite_Detection_PostProcess (anchors: the cells; encodings 0.3 * FC(x); a background
    column of zeros): four float outputs, boxes / classes / scores / count."""
    g = GraphBuilder()
    x = g.input("x", (1, 16), "FLOAT32")
    _, scores = _detector_parts(g, x)
    rng = np.random.default_rng(8)
    we = g.constant("we", (rng.standard_normal((N_BOXES * 4, 16)) * 0.3).astype(np.float32))
    ef = g.tensor("enc_flat", (1, N_BOXES * 4))
    g.op("FULLY_CONNECTED", [x, we, -1], [ef])
    enc = g.tensor("enc", (1, N_BOXES, 4))
    g.op("RESHAPE", [ef, g.constant("shape_e", np.array([1, N_BOXES, 4], np.int32))], [enc])
    with_bg = g.tensor("scores_bg", (1, N_BOXES, N_CLASSES + 1))
    g.op("CONCATENATION", [g.constant("bg", np.zeros((1, N_BOXES, 1), np.float32)), scores], [with_bg], axis=2)
    centers = np.stack([(_CELLS[:, 0] + _CELLS[:, 2]) / 2, (_CELLS[:, 1] + _CELLS[:, 3]) / 2,
                        _CELLS[:, 2] - _CELLS[:, 0], _CELLS[:, 3] - _CELLS[:, 1]], axis=1).astype(np.float32)
    outs = [g.tensor("det_boxes", (1, 8, 4)), g.tensor("det_classes", (1, 8)), g.tensor("det_scores", (1, 8)),
            g.tensor("det_count", (1,))]
    g.op("TFLite_Detection_PostProcess", [enc, with_bg, g.constant("anchors", centers)], outs,
         custom_options=flex_options(dict(max_detections=8, max_classes_per_detection=1, detections_per_class=8,
                                   use_regular_nms=False, nms_score_threshold=0.3, nms_iou_threshold=0.5,
                                   num_classes=N_CLASSES, y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0)))
    g.output(*outs)
    return write_model(g.build())


def _raw_model() -> bytes:
    """x (1, 16) -> FC -> TANH -> y (1, 16): tensors, no task."""
    g = GraphBuilder()
    x = g.input("x", (1, 16), "FLOAT32")
    h = g.tensor("h", (1, 16))
    g.op("FULLY_CONNECTED", [x, g.constant("w", (RNG.standard_normal((16, 16)) * 0.5).astype(np.float32)), -1], [h])
    y = g.tensor("y", (1, 16))
    g.op("TANH", [h], [y])
    g.output(y)
    return write_model(g.build())


def _det_samples(n=60, seed=2):
    return np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)


# ------------------------------------------------------------------------------------------- metrics by hand


def test_top1_and_top5_agreement_hand_computed():
    f = np.array([[3, 2, 1, 0, 0, 0], [0, 1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 9]], float)
    q = np.array([[3, 2, 1, 0, 0, 0],   # same top-1
                  [2, 1, 0, 0, 0, 0],   # top-1 0 (float 1): float's class is 2nd -> in the top 5
                  [0, 5, 4, 3, 2, 1],   # float's class 0 is 6th of 6: not in the top 5
                  [0, 0, 0, 0, 0, 9]], float)
    m = top1_agreement(f, q)
    assert m == {"rows": 4, "top1": 0.5, "top5": 0.75}


def _dets(*rows):
    """(boxes, classes, scores) from rows (ymin, xmin, ymax, xmax, class, score)."""
    a = np.asarray(rows, float).reshape(-1, 6)
    return a[:, :4], a[:, 4].astype(int), a[:, 5]


def test_detections_match_greedily_by_iou_class_and_score():
    ref = _dets((0, 0, 1, 1, 0, 0.9), (0, 0, 1, 1, 1, 0.8), (2, 2, 3, 3, 0, 0.7))
    got = _dets((0, 0, 1, 0.9, 0, 0.88),    # IoU 0.9, same class, score -0.02: keeps ref 0
                (0, 0, 1, 1, 2, 0.8),        # ref 1's box, another class: no
                (2, 2, 3, 2.4, 0, 0.7),      # ref 2's class and score, IoU 0.4: no
                (0, 0, 1, 1, 0, 0.9))        # ref 0's twin, but ref 0 is taken by the better IoU? no: IoU 1.0 wins
    assert match_detections(ref, got) == [(0, 3)]
    # the score tolerance: 0.05 is within, 0.06 is not
    assert match_detections(_dets((0, 0, 1, 1, 0, 0.9)), _dets((0, 0, 1, 1, 0, 0.85))) == [(0, 0)]
    assert match_detections(_dets((0, 0, 1, 1, 0, 0.9)), _dets((0, 0, 1, 1, 0, 0.84))) == []
    # IoU exactly 0.5 counts
    assert match_detections(_dets((0, 0, 1, 1, 0, 0.9)), _dets((0, 0, 1, 0.5, 0, 0.9))) == [(0, 0)]


def test_detection_agreement_counts_kept_and_extra_with_the_threshold_tolerance():
    a, b, c = (0, 0, 1, 1), (2, 2, 3, 3), (4, 4, 5, 5)
    ref = [_dets((*a, 0, 0.9), (*b, 0, 0.52))]            # two float detections at >= 0.5
    ref_low = [_dets((*a, 0, 0.9), (*b, 0, 0.52), (*c, 1, 0.47))]
    got = [_dets((*a, 0, 0.91), (*c, 1, 0.51))]            # b fell to 0.49 (below 0.5); c rose to 0.51
    got_low = [_dets((*a, 0, 0.91), (*b, 0, 0.49), (*c, 1, 0.51))]
    m = detection_agreement(ref, ref_low, got, got_low)
    # b is kept (0.49 is within 0.05 of 0.52), c is not extra (the float one scores 0.47, within 0.05)
    assert m == {"float_detections": 2, "model_detections": 2, "kept": 2, "extra": 0, "kept_fraction": 1.0,
                 "extra_fraction": 0.0}
    far = [_dets((*a, 0, 0.9), (0, 4, 1, 5, 2, 0.8))]      # a second, unmatched converted detection
    m = detection_agreement(ref, ref_low, far, far)
    assert (m["kept"], m["extra"], m["kept_fraction"], m["extra_fraction"]) == (1, 1, 0.5, 0.5)


def test_map_iou_of_masks_and_class_maps():
    f = np.zeros((4, 4), bool)
    f[:2] = True                    # 8 pixels
    q = np.zeros((4, 4), bool)
    q[1:3] = True                   # 8 pixels, 4 shared: IoU 4 / 12
    assert map_iou([f], [q]) == {"map_iou": pytest.approx(1 / 3), "classes": 1}
    fc = np.array([[0, 0], [1, 1]])
    qc = np.array([[0, 1], [1, 1]])  # class 0: 1/2, class 1: 2/3
    assert map_iou([fc], [qc])["map_iou"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert map_iou([np.zeros((2, 2), bool)], [np.zeros((2, 2), bool)])["map_iou"] is None


# ---------------------------------------------------------------------------------------- what the task is


def test_the_task_comes_from_the_model():
    labelled = read_model(_classifier(_separated_weights(), labels=["a", "b", "c", "d"]))
    manifest = read_manifest(labelled)
    assert task_spec(labelled, labels=manifest["labels"], manifest=manifest) == {
        "task": "classification", "source": "4 labels", "outputs": ["logits"]}
    assert task_spec(labelled) is None  # logits without labels: raw tensors
    soft = read_model(_classifier(_separated_weights(), softmax=True))
    assert task_spec(soft)["source"] == "SOFTMAX output"
    assert task_spec(soft, task="raw") is None
    post = task_spec(read_model(_postprocess_detector()))
    assert post["format"] == "postprocessed" and post["outputs"] == ["det_boxes", "det_classes", "det_scores",
                                                                     "det_count"]
    det = task_spec(read_model(_boxes_detector()), boxes="boxes", scores=1)
    assert (det["format"], det["boxes"], det["scores"]) == ("boxes", "boxes", "scores")
    assert det["config"] == {"score_activation": "none"}  # LOGISTIC's fixed range: probabilities already
    assert task_spec(read_model(_raw_model())) is None
    assert manifest_task({"detection": {"outputs": {"boxes": 0}}}) == "detection"
    assert manifest_task({"task": "classify"}) == "classification"


@pytest.mark.parametrize("kwargs, words", [
    ({"boxes": "nope", "scores": "scores"}, "boxes (--boxes): no model output 'nope' (outputs: boxes, scores)"),
    ({"boxes": "boxes", "scores": 5}, "scores (--scores): no model output 5"),
    ({"boxes": "scores", "scores": "boxes"}, "do not hold the same boxes"),  # swapped: 3 values per box, not 4
    ({"boxes": "boxes", "scores": "boxes"}, "is not YOLO-style rows"),
    ({"task": "detection"}, "give --boxes and --scores"),
    ({"task": "classification", "boxes": "boxes"}, "but the task is classification"),
    ({"task": "pose"}, "unknown task 'pose'"),
])
def test_a_task_that_does_not_fit_the_model_is_an_error_naming_it(kwargs, words):
    with pytest.raises(ConversionError, match=None) as info:
        task_spec(read_model(_boxes_detector()), **kwargs)
    assert words in str(info.value)


# ------------------------------------------------------------------------------------------- classification


def test_classifier_with_labels_is_kept_on_top1_when_its_snr_is_short_and_the_report_says_both(tmp_path):
    src = _classifier(_separated_weights(), labels=["a", "b", "c", "d"])
    x = _samples()
    # 60 dB is out of int8's reach: by SNR alone the model is refused
    with pytest.raises(ConversionError, match="does not keep its outputs"):
        convert(src, quantize="int8", calibration=x, precision="int8", min_snr=60, task="raw")
    result = convert(src, quantize="int8", calibration=x, precision="int8", min_snr=60)
    guard = result.report["guard"]
    assert guard["judged_by"] == "task" and guard["met"] and not guard["snr_met"] and not guard.get("lossy")
    task = guard["task"]
    assert task["task"] == "classification" and task["source"] == "4 labels" and task["data"] == "held-back"
    assert task["samples"] == 12 and task["metrics"]["top1"] == 1.0 and task["metrics"]["top5"] == 1.0
    assert task["goal"] == {"top1": 0.99}
    assert 30 < guard["outputs"][0]["snr_db"] < 60
    text = format_conversion(result.report)
    assert "accuracy   per output vs float on 12 held-back sample(s) (threshold 60 dB, precision int8): NOT met" in text
    assert "task       classification (4 labels) on 12 held-back sample(s), edge-sdk's interpreter: met" in text
    assert "top-1 agreement 100.0% (goal >= 99.0%), top-5 100.0%" in text
    assert "verdict    kept on the task: task met, SNR NOT met (1 output(s) below 60 dB)" in text
    assert any(n.startswith("kept on its task (top-1 agreement 100.0%") and "SNR below 60 dB on 'logits'" in n
               for n in result.report["quantization"]["report"]["notes"])
    assert "note       kept on its task" not in text  # said once in the text: the verdict line
    manifest = read_manifest(result.tflite)
    assert manifest["task"] == "classification" and manifest["labels"] == ["a", "b", "c", "d"]


def test_the_widening_search_stops_once_the_task_is_kept():
    """precision="auto" widens for the task when one is judged: at 60 dB the raw model (SNR alone) tries widening
    (int8 I/O keeps it short), the same classifier with labels keeps its top-1 in int8 and tries none."""
    src = _classifier(_separated_weights(), labels=["a", "b", "c", "d"])
    x = _samples()
    raw = convert(src, quantize="int8", calibration=x, precision="auto", min_snr=60, task="raw", allow_lossy=True)
    assert raw.report["guard"]["tried_widening"] >= 1 and len(raw.report["guard"]["steps"]) > 1
    kept = convert(src, quantize="int8", calibration=x, precision="auto", min_snr=60)
    guard = kept.report["guard"]
    assert guard["judged_by"] == "task" and guard["met"] and not guard["snr_met"]
    assert not guard["widened"] and not guard.get("tried_widening") and len(guard.get("steps") or []) <= 1
    assert guard["task"]["metrics"]["top1"] == 1.0


def _top1_by_hand(src: bytes, result, x) -> float:
    """The top-1 agreement of the written model with the float one on ``x``, computed here."""
    from edge_sdk import Interpreter
    from edge_sdk.tasks.pipeline import dequantize, to_input

    agree = []
    for path in (src, result.tflite):
        it = Interpreter(model_content=path)
        it.allocate_tensors()
        d, o = it.get_input_details()[0], it.get_output_details()[0]
        rows = []
        for s in x:
            it.set_tensor(d["index"], to_input(s[None], d))
            it.invoke()
            rows.append(dequantize(it.get_tensor(o["index"]), o).reshape(-1).argmax())
        agree.append(np.array(rows))
    return float(np.mean(agree[0] == agree[1]))


def test_a_classifier_whose_top1_flips_is_refused_though_its_snr_is_met(tmp_path):
    src = _classifier(_near_tie_weights(), softmax=False)
    x = _samples()
    labels = ["a", "b", "c", "d"]
    with pytest.raises(ConversionError) as info:
        convert(src, quantize="int8", calibration=x, precision="int8", labels=labels)
    msg = str(info.value)
    assert "the int8 model does not keep its task (task classification: top-1 agreement" in msg
    assert "below its goal (--min-top1)" in msg and "SNR met (30 dB)" in msg and "nothing was written" in msg
    # the same model judged by SNR alone passes: the task is what refuses it
    raw = convert(src, quantize="int8", calibration=x, precision="int8", task="raw")
    assert raw.report["guard"]["met"] and raw.report["guard"]["judged_by"] == "snr"
    # a looser goal keeps it; the record's figure is the agreement computed by hand on the same samples
    kept = convert(src, quantize="int8", calibration=x, precision="int8", labels=labels, min_top1=0.3)
    task = kept.report["guard"]["task"]
    assert task["met"] and task["goal"] == {"top1": 0.3}
    held = x[4::5][:12]
    assert task["metrics"]["top1"] == pytest.approx(_top1_by_hand(src, kept, held)) and task["metrics"]["top1"] < 0.99
    # allow_lossy writes it and says why in the report
    lossy = convert(src, quantize="int8", calibration=x, precision="int8", labels=labels, allow_lossy=True)
    assert lossy.report["guard"]["lossy"][0].startswith("task classification: top-1 agreement")


@pytest.mark.parametrize("mode", ["fp16", "dynamic", "int16x8"])
def test_every_lossy_mode_judges_the_task_beside_the_snr(mode):
    src = _classifier(_separated_weights(), softmax=True)
    result = convert(src, quantize=mode, calibration=_samples())
    guard = result.report["guard"]
    task = guard["task"]
    assert guard["judged_by"] == "task" and task["judged"] and task["metrics"]["top1"] == 1.0 and guard["met"]
    assert task["samples"] == (12 if mode == "int16x8" else 32)
    text = format_conversion(result.report)
    assert "task       classification (SOFTMAX output)" in text and "probs: SNR" in text
    if mode == "dynamic":  # LiteRT's hybrid kernels, which edge-sdk's interpreter runs
        assert task["runtime"] == "edge-sdk's interpreter"


def test_the_eval_data_is_what_the_task_is_judged_on(tmp_path):
    src = _classifier(_separated_weights(), softmax=True)
    x = _samples()
    np.savez(tmp_path / "eval.npz", x=_samples(40, seed=9), y=np.zeros(40, np.int64))
    result = convert(src, quantize="int8", calibration=x, eval_data=str(tmp_path / "eval.npz"))
    task = result.report["guard"]["task"]
    assert task["data"] == "evaluation" and task["samples"] == 40
    assert result.report["accuracy"]["agreement"] == 1.0  # a classifier's accuracy report stays


# ------------------------------------------------------------------------------------------------ detection


def test_detector_with_boxes_and_scores_outputs_is_judged_on_matched_detections(tmp_path):
    src = _boxes_detector()
    x = _det_samples()
    result = convert(src, quantize="int8", calibration=x, boxes="boxes", scores="scores")
    guard = result.report["guard"]
    task = guard["task"]
    assert guard["judged_by"] == "task" and task["judged"] and task["met"]
    m = task["metrics"]
    assert m["float_detections"] >= 12 and m["kept_fraction"] >= 0.9 and m["extra_fraction"] <= 0.1
    assert task["score_activation"] == "none" and m["score_threshold"] == 0.5
    # the written manifest lets `edge run` decode it the same way
    manifest = read_manifest(result.tflite)
    assert manifest["task"] == "detection"
    assert manifest["detection"] == {"format": "boxes", "outputs": {"boxes": "boxes", "scores": "scores"},
                                     "score_activation": "none"}
    text = format_conversion(result.report)
    assert "task       detection (--boxes / --scores) on 12 held-back sample(s)" in text
    assert f"detections kept {100 * m['kept_fraction']:.1f}% ({m['kept']} of {m['float_detections']} float" in text


def test_a_detector_is_judged_on_the_eval_data_and_not_read_as_a_classifier(tmp_path):
    np.savez(tmp_path / "eval.npz", x=_det_samples(20, seed=5), y=np.zeros(20, np.int64))
    result = convert(_boxes_detector(), quantize="int8", calibration=_det_samples(), boxes="boxes", scores="scores",
                     eval_data=str(tmp_path / "eval.npz"))
    task = result.report["guard"]["task"]
    assert task["data"] == "evaluation" and task["samples"] == 20 and task["judged"]
    assert result.report["accuracy"] is None
    assert any("this detection model's task is judged on it by the accuracy guard" in n for n in result.report["notes"])


def test_a_detector_whose_manifest_says_so_needs_no_flags():
    model = read_model(_boxes_detector())
    write_manifest(model, {"task": "detect", "detection": {"outputs": {"boxes": 0, "scores": "scores"}}})
    result = convert(write_model(model), quantize="int8", calibration=_det_samples())
    task = result.report["guard"]["task"]
    assert (task["task"], task["boxes"], task["scores"], task["judged"]) == ("detection", "boxes", "scores", True)
    assert task["source"] == "the manifest"
    from edge_sdk.model.manifest import summarize_manifest

    assert "task: detection" in summarize_manifest(read_manifest(result.tflite))


def _shifted_detector(delta: float) -> bytes:
    """The boxes detector with every box moved down by ``delta`` (of the image): IoU with the original falls."""
    model = read_model(_boxes_detector())
    sg = model.subgraphs[0]
    t = next(t for t in sg.tensors if t.name == "cells")
    cells = np.frombuffer(model.buffers[t.buffer].data, np.float32).reshape(t.shape).copy()
    cells[..., 0] += delta
    cells[..., 2] += delta
    from edge_sdk.model.types import Buffer

    model.buffers[t.buffer] = Buffer(cells.tobytes())
    return write_model(model)


def test_judge_task_counts_exactly_what_a_known_change_breaks():
    """A 'converted' model whose boxes all move by 0.15 of a 0.2-high cell: IoU 0.05 / 0.35 < 0.5 for every box,
    scores unchanged: nothing is kept and every converted detection is extra. Moved by 0.02: IoU 0.18 / 0.22 >= 0.5,
    everything kept."""
    float_model = read_model(_boxes_detector())
    spec = task_spec(float_model, boxes="boxes", scores="scores")
    samples = [[s[None]] for s in _det_samples(10)]
    far = judge_task(spec, float_model, read_model(_shifted_detector(0.15)), samples, "fp16")
    n = far["metrics"]["float_detections"]
    assert n > 0 and far["metrics"]["kept"] == 0 and far["metrics"]["extra"] == n and not far["met"]
    near = judge_task(spec, float_model, read_model(_shifted_detector(0.02)), samples, "fp16")
    assert near["metrics"]["kept"] == n and near["metrics"]["extra"] == 0 and near["met"]



def test_task_judge_runs_the_float_model_once_for_every_model_it_judges(monkeypatch):
    """The widening search judges each step's model on the same samples: ``TaskJudge`` runs the float model on them
    once (its ``FloatReference``) and its records are judge_task's, which runs the float model itself each call."""
    from converters import evaluate

    float_model = read_model(_boxes_detector())
    spec = task_spec(float_model, boxes="boxes", scores="scores")
    samples = [[s[None]] for s in _det_samples(6)]
    float_runs = []
    run_float = evaluate._float_run
    monkeypatch.setattr(evaluate, "_float_run", lambda m: float_runs.append(m) or run_float(m))
    judge = evaluate.TaskJudge(spec, float_model, samples, "fp16")
    steps = [read_model(_shifted_detector(d)) for d in (0.15, 0.02, 0.15)]
    records = [judge(m) for m in steps]
    assert len(float_runs) == 1
    alone = [judge_task(spec, float_model, m, samples, "fp16") for m in steps]
    assert len(float_runs) == 4  # without a reference each call runs the float model again
    assert records == alone and not records[0]["met"] and records[1]["met"]

def test_detector_with_postprocess_op_is_kept_on_its_detections_when_the_class_output_snr_is_meaningless():
    src = _postprocess_detector()
    result = convert(src, quantize="int8", calibration=_det_samples())
    guard = result.report["guard"]
    task = guard["task"]
    assert task["source"] == "the model's TFLite_Detection_PostProcess op" and task["judged"]
    assert task["met"] and guard["met"] and guard["judged_by"] == "task"
    assert task["metrics"]["kept_fraction"] >= 0.9
    snr = {o["name"]: o["snr_db"] for o in guard["outputs"]}
    assert set(snr) == {"det_boxes", "det_classes", "det_scores", "det_count"}  # SNR beside the task, always
    assert read_manifest(result.tflite)["detection"] == {"format": "postprocessed"}


def test_postprocess_outputs_stay_float32_with_integer_io_and_class_ids_read_whole():
    """TFLite_Detection_PostProcess has no integer rule: its four model outputs stay FLOAT32 under io="int8" (as
    TFLite's converter writes them), so a class id reads back whole (an int8 copy gave 0.996 for class 1)."""
    from edge_sdk import Interpreter

    result = convert(_postprocess_detector(), quantize="int8", calibration=_det_samples(), io="int8")
    model = read_model(result.tflite)
    sg = model.subgraphs[0]
    assert [sg.tensors[t].type for t in sg.outputs] == ["FLOAT32"] * 4
    assert sg.tensors[sg.inputs[0]].type == "INT8"  # the input still follows io
    interp = Interpreter(model_content=result.tflite)
    interp.allocate_tensors()
    inp = interp.get_input_details()[0]
    scale, zp = inp["quantization"]
    for sample in _det_samples(4):
        q = np.clip(np.round(sample[None] / scale) + zp, -128, 127).astype(np.int8)
        interp.set_tensor(inp["index"], q)
        interp.invoke()
        classes = interp.get_tensor(interp.get_output_details()[1]["index"])
        assert np.array_equal(classes, np.round(classes))


def test_a_detector_that_detects_nothing_is_judged_by_snr_and_says_why():
    src = _boxes_detector(score_shift=-20.0)  # every score ~ 0: no float detection
    result = convert(src, quantize="int8", calibration=_det_samples(), boxes="boxes", scores="scores",
                     allow_lossy=True)
    guard = result.report["guard"]
    assert guard["judged_by"] == "snr" and not guard["task"]["judged"]
    assert "the float model detects nothing (score >= 0.5) on the 12 samples" in guard["task"]["why"]
    text = format_conversion(result.report)
    assert "task       detection (--boxes / --scores): not judged: the float model detects nothing" in text
    assert "verdict    " in text and "on the SNR" in text


def test_yolo_rows_in_one_output_decode_as_centre_boxes():
    rows = np.zeros((1, 4 + 2, 8))                       # (1, 4 + C, N): YOLOv8's layout
    rows[0, :4, 0] = [10, 10, 4, 4]                     # cx, cy, w, h
    rows[0, 4:, 0] = [0.1, 0.9]
    rows[0, :4, 1] = [11, 10, 4, 4]
    rows[0, 4:, 1] = [0.2, 0.8]                         # overlaps box 0, same class: NMS drops it
    spec = {"task": "detection", "format": "yolo", "boxes": "out", "scores": "out", "score_activation": "none"}
    boxes, classes, scores = decode_detections({"out": rows}, spec, 0.5)
    assert boxes.tolist() == [[8, 8, 12, 12]] and classes.tolist() == [1] and scores.tolist() == [0.9]


# ------------------------------------------------------------------------------------ raw tensors, segmentation


def test_a_raw_tensor_model_keeps_the_snr_rule():
    result = convert(_raw_model(), quantize="int8", calibration=_det_samples(), precision="int8")
    guard = result.report["guard"]
    assert guard["judged_by"] == "snr" and "task" not in guard and guard["met"] == guard["snr_met"]
    assert "task " not in format_conversion(result.report)
    with pytest.raises(ConversionError, match=r"does not keep its outputs \(1 below 80 dB"):
        convert(_raw_model(), quantize="int8", calibration=_det_samples(), precision="int8", min_snr=80)


def _segmenter(tie: float | None = None) -> bytes:
    """x (1, 4, 4, 2) -> per-pixel 1x1 conv -> (1, 4, 4, 3) class scores (x0, x1, -x0 - x1); with ``tie``,
    class 1 scores x0 + tie * x1 instead: a near tie with class 0 that int8 cannot resolve."""
    g = GraphBuilder()
    x = g.input("x", (1, 4, 4, 2), "FLOAT32")
    second = [1.0, tie] if tie is not None else [0.0, 1.0]
    w = g.constant("w", np.array([[[[1.0, 0.0]]], [[[second[0], second[1]]]], [[[-1.0, -1.0]]]], np.float32))
    y = g.tensor("y", (1, 4, 4, 3))
    g.op("CONV_2D", [x, w, g.constant("b", np.zeros(3, np.float32))], [y], padding="VALID", stride_w=1, stride_h=1)
    g.output(y)
    return write_model(g.build())


def test_segmentation_is_judged_on_map_iou():
    x = np.random.default_rng(5).standard_normal((30, 4, 4, 2)).astype(np.float32)
    result = convert(_segmenter(), quantize="int8", calibration=x, task="segmentation")
    task = result.report["guard"]["task"]
    assert task["task"] == "segmentation" and task["output"] == "y" and task["judged"]
    assert task["metrics"]["map_iou"] > 0.9 and task["metrics"]["classes"] == 3
    with pytest.raises(ConversionError, match=r"map IoU .* below its goal \(--min-map-iou\)"):
        convert(_segmenter(tie=0.002), quantize="int8", calibration=x, task="segmentation", min_snr=20,
                precision="int8")
    lossy = convert(_segmenter(tie=0.002), quantize="int8", calibration=x, task="segmentation", min_snr=20,
                    precision="int8", allow_lossy=True)
    assert lossy.report["guard"]["task"]["metrics"]["map_iou"] < 0.9 and lossy.report["guard"]["snr_met"]
    # precision auto (the default): the SNR is met, the map is not -- the search widens for the task until it is
    widened = convert(_segmenter(tie=0.002), quantize="int8", calibration=x, task="segmentation", min_snr=20)
    guard = widened.report["guard"]
    assert guard["met"] and guard["judged_by"] == "task" and guard["widened"]
    assert guard["task"]["metrics"]["map_iou"] >= 0.9


def test_goal_met_is_the_tasks_when_judged_else_the_snr():
    from converters.evaluate import goal_met

    outputs = [{"name": "y", "worst_snr_db": 25.0}, {"name": "z", "worst_snr_db": 40.0}]
    assert not goal_met(outputs, 30.0) and goal_met(outputs, 20.0)
    assert goal_met(outputs, 30.0, {"judged": True, "met": True})
    assert not goal_met(outputs, 20.0, {"judged": True, "met": False})
    assert not goal_met(outputs, 30.0, {"judged": False, "met": None})  # not judged: the SNR decides


def test_apply_task_verdict_keeps_the_snr_verdict_beside():
    guard = {"met": False}
    apply_task_verdict(guard, {"task": "classification", "judged": True, "met": True})
    assert guard["met"] and guard["snr_met"] is False and guard["judged_by"] == "task"
    guard = {"met": True}
    apply_task_verdict(guard, {"task": "detection", "judged": False, "met": None})
    assert guard["met"] and guard["judged_by"] == "snr"


# --------------------------------------------------------------------------------------------------- the CLI


def test_cli_boxes_scores_and_goal_flags(tmp_path, capsys):
    src, out = tmp_path / "det.tflite", tmp_path / "det_int8.tflite"
    src.write_bytes(_boxes_detector())
    np.save(tmp_path / "calib.npy", _det_samples())
    base = ["convert", str(src), "-o", str(out), "--calib", str(tmp_path / "calib.npy")]
    assert _cli(base + ["--boxes", "boxes", "--scores", "scores", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    task = report["guard"]["task"]
    assert task["task"] == "detection" and task["judged"] and report["guard"]["judged_by"] == "task"
    assert read_manifest(out.read_bytes())["detection"]["outputs"] == {"boxes": "boxes", "scores": "scores"}
    out.unlink()
    # a classifier whose top-1 flips: refused, nothing written, the message names the goal's flag
    near, labels = tmp_path / "near.tflite", tmp_path / "labels.txt"
    near.write_bytes(_classifier(_near_tie_weights()))
    labels.write_text("a\nb\nc\nd\n")
    np.save(tmp_path / "x.npy", _samples())
    cls = ["convert", str(near), "-o", str(out), "--calib", str(tmp_path / "x.npy"), "--labels", str(labels),
           "--precision", "int8"]
    assert _cli(cls) == 3
    err = capsys.readouterr().err
    assert "does not keep its task (task classification: top-1 agreement" in err and "(--min-top1)" in err
    assert "Traceback" not in err and not out.exists()
    assert _cli(cls + ["--min-top1", "0.3"]) == 0 and out.exists()
    assert "verdict    kept on the task: task met, SNR met" in capsys.readouterr().out
    assert _cli(base + ["--boxes", "boxes", "--min-top1", "1.5"]) == 2  # argument misuse: exit 2, naming the flag
    err = capsys.readouterr().err
    assert "--min-top1: expected a fraction in [0, 1], not '1.5'" in err and "Traceback" not in err
    with pytest.raises(ConversionError, match=r"--min-detections must be a fraction in \[0, 1\], not -0.1"):
        convert(_boxes_detector(), quantize="none", min_detections=-0.1)
    assert _cli(base + ["--boxes", "nope", "--scores", "scores"]) != 0
    assert "no model output 'nope' (outputs: boxes, scores)" in capsys.readouterr().err


def test_cli_help_documents_the_task_goals(capsys):
    assert _cli(["convert", "--help"]) == 0
    text = capsys.readouterr().out
    for words in ("--min-top1", "--min-detections", "--min-map-iou", "--boxes", "--scores", "top-1 agreement",
                  "IoU >= 0.5, score within 0.05", "its task is judged too"):
        assert words in text


def test_readme_convert_section_documents_the_task_goals():
    from pathlib import Path

    text = Path(__file__).resolve().parents[1].joinpath("README.md").read_text(encoding="utf-8")
    section = text[text.index("**1. Convert a model for a device**"):text.index("**2. Run on a Raspberry Pi")]
    for words in ("--min-top1", "(0.99", "--min-detections", "(0.9)", "--min-map-iou", "--boxes OUTPUT --scores OUTPUT",
                  "IoU >= 0.5", "within 0.05", "the task decides"):
        assert words in section
