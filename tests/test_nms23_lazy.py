"""Fast NMS (TFLite_Detection_PostProcess, use_regular_nms false) decodes only the boxes its walk reaches
(kernels/detection.BoxTable): those boxes are bit for bit the ones decoding every anchor gives, and the op's outputs
equal LiteRT's reference kernels' on SSD-sized inputs (many anchors, one or several classes per detection, rows
with NaN scores, a crowd that makes the walk visit many blocks)."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.runtime.kernels.detection import NMS_BLOCK, BoxTable, decode_boxes
from tests.oprunner import peer_outputs, run_on
from tests.test_nms23_blocks import _anchors
from tests.test_ops_detection_audio import check_detection, detection_model

SCALES = (10.0, 10.0, 5.0, 5.0)


def test_box_table_decodes_only_what_is_asked_bit_equal_to_all():
    rng = np.random.default_rng(7)
    n = 500
    enc = (rng.standard_normal((n, 4)) * 2).astype(np.float32)
    anchors = _anchors(n, 10, rng)
    table = BoxTable(enc, anchors, SCALES)
    asked = rng.choice(n, 60, replace=False)
    got = table.boxes(asked)
    assert int(table.done.sum()) == 60
    full = decode_boxes(enc, anchors, SCALES)
    np.testing.assert_array_equal(got.view(np.uint32), full[asked].view(np.uint32))
    table.fill(np.concatenate([asked[:10], asked[:10]]))  # decoded ones are not decoded again
    assert int(table.done.sum()) == 60


@pytest.mark.parametrize("n,classes,per_anchor,centres,nan_rows", [
    (1917, 91, 1, 40, 0),               # SSD MobileNet's shapes, anchors spread
    (1917, 91, 1, 3, 0),                # crowded: the walk visits many blocks
    (6 * NMS_BLOCK + 9, 7, 3, 20, 0),   # three classes per detection
    (6 * NMS_BLOCK + 9, 7, 1, 20, 5),   # rows with a NaN score (their best class: the NaN, as LiteRT)
])
def test_fast_nms_vs_litert(n, classes, per_anchor, centres, nan_rows):
    rng = np.random.default_rng(n + classes + centres)
    model = detection_model(classes, 1, max_det=100, per_anchor=per_anchor, regular=False,
                            anchors=_anchors(n, centres, rng), nms_score_threshold=1e-8, nms_iou_threshold=0.6)
    scores = (1 / (1 + np.exp(-rng.normal(-4, 2, (1, n, classes + 1))))).astype(np.float32)
    scores[0, rng.choice(n, nan_rows, replace=False), 2] = np.nan
    feeds = [rng.standard_normal((1, n, 4)).astype(np.float32), scores]
    ours = run_on("python", model, feeds)
    check_detection(ours, peer_outputs(model, feeds, "litert"), per_anchor, what="python vs litert")
    assert int(ours[3][0]) > 0
