"""TFLite_Detection_PostProcess on more anchors and more selections per class than the Python kernel's NMS block
(kernels/detection.NMS_BLOCK): its columns advance through their candidates a block at a time, judging each
block against the boxes kept in earlier ones. Both runtimes against LiteRT's reference kernels, slot for slot."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.runtime.kernels.detection import FEW_COLUMNS, NMS_BLOCK
from tests.oprunner import peer_outputs, run_on
from tests.test_ops_detection_audio import check_detection, detection_model


def _anchors(n: int, centres: int, rng) -> np.ndarray:
    """n anchors (y, x, h, w) around ``centres`` random points: few centres crowd them (most suppressed)."""
    middle = rng.random((centres, 2))[rng.integers(0, centres, n)] + rng.normal(0, 0.05, (n, 2))
    return np.concatenate([middle, rng.uniform(0.02, 0.2, (n, 2))], axis=1).astype(np.float32)


@pytest.mark.parametrize("regular,classes", [(True, FEW_COLUMNS), (True, FEW_COLUMNS + 5), (False, 3)])
@pytest.mark.parametrize("n,centres,per_class,max_det", [
    (3 * NMS_BLOCK + 5, 40, 2 * NMS_BLOCK + 3, 3 * NMS_BLOCK),  # a class keeps more than a block's worth
    (5 * NMS_BLOCK, 3, 20, 40),                                   # crowded: a class walks every block
])
def test_nms_across_blocks_vs_litert(runtime, regular, classes, n, centres, per_class, max_det):
    """Regular NMS with few classes (walked one by one over bit sets) and more (walked together), fast NMS."""
    rng = np.random.default_rng(n + centres + classes)
    model = detection_model(classes, 1, max_det=max_det, per_anchor=1, regular=regular, per_class=per_class,
                            anchors=_anchors(n, centres, rng), nms_score_threshold=0.05, nms_iou_threshold=0.3)
    feeds = [(rng.standard_normal((1, n, 4)) * 0.3).astype(np.float32),
             rng.choice(np.linspace(0.0, 1.0, 40, dtype=np.float32), (1, n, classes + 1))]  # ties too
    ours = run_on(runtime, model, feeds)
    check_detection(ours, peer_outputs(model, feeds, "litert"), None if regular else 1, max_det if regular else None,
                    what=f"{runtime} vs litert")
    assert int(ours[3][0]) > NMS_BLOCK if centres > 10 else int(ours[3][0]) > 0
