"""TFLite_Detection_PostProcess with NaN class scores (issue 23). Our order, in both runtimes: a NaN ranks below every
number (-inf too), NaNs among themselves in class order. So an anchor's best score is its best number (what LiteRT
does with one class per detection on rows of up to three classes: measured here), an anchor whose scores are all NaN is
never a candidate, and with max_classes_per_detection > 1 (where LiteRT's std::partial_sort leaves the order
undefined) a detection's NaN classes fill its last slots with their NaN scores. LiteRT's one-class argmax on four or
more classes is not NaN-consistent (measured: [NaN, 0.5, 0.2, 0.7, 0.1] gives no detection, [NaN, 0.6, 0.3, 0.3, 0.3]
one; of four classes a leading NaN always wins): there we hold the two runtimes to our order, not to LiteRT.
Before, the C kernel took a leading NaN as an anchor's best (no candidate) where LiteRT and the Python kernel took the
best number."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import assert_same, peer_outputs, run_on
from tests.test_ops_detection_audio import check_detection, detection_model

NAN, INF = np.float32(np.nan), np.float32(np.inf)
# (y, x, h, w): six anchors far apart (no two overlap), so NMS keeps every candidate and the ranking decides all
ANCHORS = np.array([[0.1 + 0.16 * k, 0.1 + 0.16 * k, 0.1, 0.1] for k in range(6)], np.float32)
# five classes after a background column; NaNs leading, in the middle, trailing, a whole row, beside -inf
SCORES = np.array([[0.0, NAN, 0.5, 0.2, 0.7, 0.1],
                   [0.0, 0.3, NAN, 0.9, NAN, 0.05],
                   [0.0, NAN, NAN, NAN, NAN, NAN],
                   [0.0, -INF, NAN, 0.6, 0.6, NAN],
                   [0.0, 0.8, 0.1, NAN, 0.4, 0.2],
                   [0.0, NAN, NAN, 0.35, NAN, NAN]], np.float32)[None]
FEEDS = [np.zeros((1, 6, 4), np.float32), SCORES]


def _model(per_anchor: int, regular: bool = False) -> bytes:
    return detection_model(5, 1, max_det=6, per_anchor=per_anchor, regular=regular, anchors=ANCHORS,
                           nms_score_threshold=0.25, nms_iou_threshold=0.5, per_class=6)


def test_one_class_per_detection_takes_the_best_number_as_litert(runtime):
    """Three classes: a NaN leading, in the middle, two NaNs and a number."""
    scores = np.array([[0.0, 0.3, NAN, 0.9], [0.0, NAN, 0.5, 0.2], [0.0, NAN, NAN, 0.4], [0.0, NAN, NAN, NAN]],
                      np.float32)[None]
    model = detection_model(3, 1, max_det=4, per_anchor=1, regular=False, anchors=ANCHORS[:4],
                            nms_score_threshold=0.1, nms_iou_threshold=0.5)
    feeds = [np.zeros((1, 4, 4), np.float32), scores]
    ours = run_on(runtime, model, feeds)
    check_detection(ours, peer_outputs(model, feeds, "litert", isolate=True), 1, what=f"{runtime} vs litert")
    assert ours[3][0] == 3 and ours[1][0, :3].tolist() == [2, 1, 2]  # 0.9, 0.5, 0.4; the all-NaN anchor: none


def test_regular_nms_never_selects_a_nan_score_as_litert(runtime):
    model = _model(1, regular=True)
    ours = run_on(runtime, model, FEEDS)
    check_detection(ours, peer_outputs(model, FEEDS, "litert", isolate=True), regular_slots=6,
                    what=f"{runtime} vs litert")
    assert not np.isnan(ours[2]).any()


@pytest.mark.parametrize("per_anchor", [1, 2, 3, 5, 6])
def test_nan_ranks_last_with_one_or_several_classes_per_detection(runtime, per_anchor):
    ours = run_on(runtime, _model(per_anchor), FEEDS)
    boxes, classes, scores = (o[0] for o in ours[:3])
    categories = min(per_anchor, 5)
    assert ours[3][0] == 5  # the all-NaN anchor is never selected
    for k in range(5):
        got_classes = classes[k * per_anchor:k * per_anchor + categories].astype(int)
        got = scores[k * per_anchor:k * per_anchor + categories]
        # the detection's anchor, by its box's centre; the expected order: numbers down (ties by class), then NaNs
        anchor = int(np.argmin(np.abs(ANCHORS[:, 0] - (boxes[k * per_anchor, 0] + boxes[k * per_anchor, 2]) / 2)))
        row = SCORES[0, anchor, 1:]
        numbers = sorted((c for c in range(5) if not np.isnan(row[c])), key=lambda c: (-row[c], c))
        want = (numbers + [c for c in range(5) if np.isnan(row[c])])[:categories]
        assert got_classes.tolist() == want, (anchor, got_classes, want)
        np.testing.assert_array_equal(got, row[want])
        assert not np.isnan(got[0])  # a detection's first class is a number
    if runtime == "c":  # the two runtimes agree slot for slot, NaNs where they are
        assert_same(ours, run_on("python", _model(per_anchor), FEEDS), what="c vs python")
