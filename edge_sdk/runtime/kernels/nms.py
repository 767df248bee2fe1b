"""NON_MAX_SUPPRESSION_V4 and NON_MAX_SUPPRESSION_V5 as LiteRT's kernel computes them (TFLite Micro has none).

Inputs: boxes [N, 4] FLOAT32 (y1, x1, y2, x2: either corner first, each box's min / max are taken), scores [N]
FLOAT32, max_output_size (INT32 scalar), iou_threshold and score_threshold (FLOAT32 scalars); V5 adds
soft_nms_sigma (FLOAT32 scalar). max_output_size sizes the outputs: a constant (or a value known at prepare), >= 0.
A threshold known at prepare is checked there (0 <= iou_threshold <= 1, soft_nms_sigma >= 0); one computed from
data is read at eval, unchecked, as LiteRT reads it.
Outputs: V4 (selected_indices INT32 [max_output_size], valid_outputs INT32 scalar); V5 (selected_indices,
selected_scores FLOAT32 [max_output_size], valid_outputs). Slots past valid_outputs are 0.

The algorithm, tie rules included, is LiteRT's reference NonMaxSuppression: every box with score >
score_threshold enters a max-priority queue on the score (a std::priority_queue: the order among equal scores
is the binary heap's, reproduced here push for push and pop for pop as libstdc++'s push_heap / pop_heap move
elements); the best candidate is compared with the boxes selected since it was last looked at, newest first:
an IoU >= iou_threshold suppresses it; with soft_nms_sigma > 0 every IoU scales its score by
exp(-0.5 / sigma * iou^2), and a candidate whose score changed goes back into the queue (if still above
score_threshold) instead of being selected. IoU in float32 as LiteRT: 0 when either box has no area.

LiteRT's quirk, kept: a selected candidate also goes back into the queue (LiteRT re-queues every candidate
still above score_threshold, selected or not); popped again, it meets itself among the selections and its
IoU of 1 suppresses it, except for a box with no area (IoU 0, even with itself): such a box is selected
again and again, up to max_output_size times, while it has the best score.
"""

from __future__ import annotations

import math

import numpy as np

from edge_sdk.runtime.kernels.node import Eval, Node

_F = np.float32


class _Heap:
    """std::priority_queue<Candidate> with `a.score < b.score`, element moves as libstdc++'s heap algorithms."""

    def __init__(self):
        self.a: list[tuple[float, int, int]] = []  # (score, index, suppress_begin_index)

    def _push_up(self, hole: int, top: int, value) -> None:
        a = self.a
        parent = (hole - 1) // 2
        while hole > top and a[parent][0] < value[0]:
            a[hole] = a[parent]
            hole = parent
            parent = (hole - 1) // 2
        a[hole] = value

    def push(self, value) -> None:
        self.a.append(value)
        self._push_up(len(self.a) - 1, 0, value)

    def pop(self):
        a = self.a
        top = a[0]
        n = len(a) - 1  # the heap [0, n) after the top moves to the end
        if n > 0:
            value = a[n]
            a[n] = top
            hole, second = 0, 0
            while second < (n - 1) // 2:
                second = 2 * (second + 1)
                if a[second][0] < a[second - 1][0]:
                    second -= 1
                a[hole] = a[second]
                hole = second
            if n % 2 == 0 and second == (n - 2) // 2:
                second = 2 * (second + 1)
                a[hole] = a[second - 1]
                hole = second - 1
            self._push_up(hole, 0, value)
        a.pop()
        return top

    def __len__(self) -> int:
        return len(self.a)


def non_max_suppression(boxes, scores, max_output: int, iou_threshold, score_threshold, sigma):
    """(selected indices, their scores) as LiteRT's reference NonMaxSuppression; float32 arithmetic."""
    b = np.asarray(boxes, _F).reshape(-1, 4)
    ymin, ymax = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    xmin, xmax = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    area = (ymax - ymin) * (xmax - xmin)  # float32
    zero = _F(0)
    iou_t, score_t = _F(iou_threshold), _F(score_threshold)

    def ious(i: int, others: np.ndarray) -> np.ndarray:
        """IoU of box i with each of `others`, elementwise in float32 (the scalar formula's roundings)."""
        h = np.maximum(np.minimum(ymax[i], ymax[others]) - np.maximum(ymin[i], ymin[others]), zero)
        w = np.maximum(np.minimum(xmax[i], xmax[others]) - np.maximum(xmin[i], xmin[others]), zero)
        inter = h * w
        with np.errstate(divide="ignore", invalid="ignore"):
            o = inter / ((area[i] + area[others]) - inter)
        return np.where((area[i] <= 0) | (area[others] <= 0), zero, o).astype(_F)

    heap = _Heap()
    sc = np.asarray(scores, _F).reshape(-1)
    for i in range(sc.size):
        if sc[i] > score_t:
            heap.push((sc[i], i, 0))
    selected: list[int] = []
    picked: list = []
    n_out = min(len(heap), int(max_output))
    scale = _F(-0.5 / float(sigma)) if sigma > 0 else _F(0)
    while len(selected) < n_out and len(heap):
        score, index, begin = heap.pop()
        original = score
        hard = False
        if begin < len(selected):
            o = ious(index, np.asarray(selected[begin:][::-1], np.int64))  # newest selection first
            if sigma > 0:
                for v in o:
                    if v >= iou_t:
                        hard = True
                        break
                    score = _F(score * _F(math.exp(float(_F(_F(scale * v) * v)))))
                    if score <= score_t:
                        break
            else:
                hard = bool((o >= iou_t).any())  # the score never changes without soft NMS
        begin = len(selected)
        if not hard:
            if score == original:
                selected.append(index)
                picked.append(score)
            if score > score_t:
                heap.push((score, index, begin))
    return selected, picked


def _prepare(node: Node, soft: bool) -> Eval:
    n_in, n_out = (6, 3) if soft else (5, 2)
    node.expect_counts(n_in, n_out)
    boxes, scores = node.input(0), node.input(1)
    node.expect_types(boxes, ("FLOAT32",), "boxes")
    node.expect_types(scores, ("FLOAT32",), "scores")
    if len(boxes.shape) != 2 or boxes.shape[1] != 4:
        raise node.error(f"boxes {boxes.shape} must be [num_boxes, 4]")
    if len(scores.shape) != 1 or scores.shape[0] != boxes.shape[0]:
        raise node.error(f"scores {scores.shape} must be [{boxes.shape[0]}] (one per box)")
    max_output = int(node.constant_scalar(2, "max_output_size", ("INT32",)))  # the outputs' size: at prepare
    iou_t, score_t = _threshold(node, 3, "iou_threshold"), _threshold(node, 4, "score_threshold")
    sigma = _threshold(node, 5, "soft_nms_sigma") if soft else 0.0
    if max_output < 0:
        raise node.error(f"max_output_size {max_output} is negative")
    if iou_t is not None and not 0.0 <= iou_t <= 1.0:
        raise node.error(f"iou_threshold {iou_t} is not within [0, 1]")
    if sigma is not None and not sigma >= 0.0:
        raise node.error(f"soft_nms_sigma {sigma} is negative (invalid for soft NMS)")
    outs = node.outputs
    node.expect_types(outs[0], ("INT32",), "selected_indices output")
    node.expect_types(outs[-1], ("INT32",), "valid_outputs output")
    if soft:
        node.expect_types(outs[1], ("FLOAT32",), "selected_scores output")
    node.set_output_shape(0, (max_output,))
    if soft:
        node.set_output_shape(1, (max_output,))
    node.set_output_shape(n_out - 1, ())

    def run(inputs, outputs):
        iou, score, s = (_F(inputs[k].reshape(-1)[0]) if v is None else v
                         for k, v in ((3, iou_t), (4, score_t), (5, sigma)))
        sel, picked = non_max_suppression(inputs[0], inputs[1], max_output, iou, score, s)
        k = len(sel)
        outputs[0][...] = 0
        outputs[0][:k] = sel
        if soft:
            outputs[1][...] = 0
            outputs[1][:k] = picked
        outputs[-1][...] = k

    return run


def _threshold(node: Node, k: int, what: str) -> float | None:
    """Input ``k``'s one FLOAT32 value when prepare knows it (a constant, or computed from constants), else None:
    eval reads it, unchecked, as LiteRT reads every threshold at eval (max_output_size alone sizes the outputs)."""
    t = node.input(k)
    node.expect_types(t, ("FLOAT32",), what)
    if t.size != 1:
        raise node.error(f"{what} must hold one value, holds {t.size}")
    return None if t.known is None else float(np.asarray(t.known).reshape(-1)[0])


def prepare_non_max_suppression_v4(node: Node) -> Eval:
    return _prepare(node, soft=False)


def prepare_non_max_suppression_v5(node: Node) -> Eval:
    return _prepare(node, soft=True)
