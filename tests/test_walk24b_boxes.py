"""Issue 24 walk (part b): separate --boxes / --scores were always read as corners, so a detector writing
cx, cy, w, h lost every detection in the task metric ("0 of 761 float detections kept") with no hint."""

from __future__ import annotations

import numpy as np

from converters.evaluate import box_reading, task_metrics

N, CLASSES = 64, 3
SPEC = {"task": "detection", "source": "--boxes / --scores", "format": "boxes", "boxes": "boxes",
        "scores": "scores", "config": {"score_activation": "none"}}


def _samples(centre: bool, n=6):
    """Float-model outputs per sample and the converted model's (boxes nudged by 0.002, scores by 0.01)."""
    r = np.random.default_rng(2)
    ref, got = [], []
    for _ in range(n):
        cx, cy = r.uniform(0.1, 0.9, N), r.uniform(0.1, 0.9, N)
        w, h = r.uniform(0.05, 0.3, N), r.uniform(0.05, 0.3, N)
        boxes = (np.stack([cx, cy, w, h], 1) if centre
                 else np.stack([cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2], 1)).astype(np.float32)
        scores = r.uniform(0, 1, (N, CLASSES)).astype(np.float32)
        ref.append({"boxes": boxes[None], "scores": scores[None]})
        got.append({"boxes": boxes[None] + 0.002, "scores": np.clip(scores[None] + 0.01, 0, 1)})
    return ref, got


def test_centre_boxes_are_read_as_centre_form_and_kept():
    ref, got = _samples(centre=True)
    record = task_metrics(SPEC, ref, got)
    assert record["box_reading"].startswith("centre form cx, cy, w, h"), record["box_reading"]
    assert record["metrics"]["float_detections"] > 0 and record["metrics"]["kept_fraction"] > 0.9
    assert record["met"]


def test_corner_boxes_stay_corners():
    ref, got = _samples(centre=False)
    record = task_metrics(SPEC, ref, got)
    assert record["box_reading"].startswith("corners (0%"), record["box_reading"]
    assert record["metrics"]["kept_fraction"] > 0.9 and record["met"]


def test_a_spec_that_says_its_order_is_not_second_guessed():
    ref, got = _samples(centre=True)
    spec = {**SPEC, "config": {**SPEC["config"], "box_order": "yxyx"}}
    record = task_metrics(spec, ref, got)
    assert "box_reading" not in record
    assert record["metrics"]["kept_fraction"] < 0.1  # centre boxes read as corners: what the walk met
    assert box_reading([]) == ("yxyx", "corners (no boxes to tell)")
