"""The custom op TFLite_Detection_PostProcess (every SSD detector's last op), as LiteRT's detection_postprocess.cc.

Inputs: box encodings [1, N, >= 4] (y, x, h, w per anchor: the first four values of each row), class predictions
[1, N, C_bg] (C_bg = num_classes, or num_classes + 1 with a background class first), anchors [N, 4] (y, x, h, w),
a constant. Types as LiteRT: box encodings FLOAT32 with FLOAT32 anchors, or UINT8 with UINT8 anchors (or INT8
with INT8 anchors: a legacy uint8 model as edge_sdk/runtime/uint8.py presents it; each
dequantized with its own scale / zero point, (q - zp) * s in float32); class predictions FLOAT32, UINT8 (LiteRT's)
or INT8 (the same dequantization; LiteRT refuses int8). Outputs, all FLOAT32: boxes [1, D, 4] (ymin, xmin, ymax,
xmax), classes [1, D], scores [1, D], num_detections [1], D = max_detections * max_classes_per_detection.

Options (a FlexBuffers map in custom_options): max_detections, max_classes_per_detection, num_classes,
nms_score_threshold, nms_iou_threshold, y_scale, x_scale, h_scale, w_scale (required here: LiteRT would read a
missing one as 0), detections_per_class (default 100), use_regular_nms (default false).

Decoding, in double as LiteRT and TFLM: ycenter = y / y_scale * anchor.h + anchor.y, half_h = 0.5 * exp(h /
h_scale) * anchor.h (x and w alike), each rounded to float32; ymin = ycenter - half_h ... in float32.

NMS of one score column (LiteRT's NonMaxSuppressionSingleClassHelper): the boxes with score >= nms_score_threshold,
sorted by descending score (stable: ties in anchor order), greedily selected while a box's IoU with a selected one
is not above (strictly) nms_iou_threshold; IoU in float32, 0 when either box has no area. It is not
NON_MAX_SUPPRESSION_V4's (kernels/nms.py: IoU >= threshold suppresses, corners normalized, a priority queue):
nothing of it is shared.
- Fast NMS (use_regular_nms false): each anchor's classes sorted by score (ties: the lower class first, as TFLM;
  LiteRT's std::partial_sort leaves ties unspecified) and NMS over each anchor's best score; selected anchor k
  fills slots k * max_classes_per_detection + c for its top min(max_classes_per_detection, num_classes) classes;
  num_detections counts the anchors. Slots no anchor fills are 0 here (LiteRT leaves them unwritten). A NaN score
  ranks below every number (-inf too), NaNs in class order: an anchor's best score is its best number (LiteRT's
  choice with one class per detection, measured), a row of NaNs is no candidate, and with
  max_classes_per_detection > 1 (LiteRT's partial sort leaves that order undefined) NaN classes fill a detection's
  last slots with their NaN scores; the C kernel ranks alike.
- Regular NMS: NMS per class (up to min(detections_per_class, max_detections) boxes each), the classes' selections
  merged by descending score (earlier classes first on ties), the best max_detections kept; the slots after them
  are 0; num_detections counts the kept ones.

Checks LiteRT makes at eval move to prepare: 0 < nms_iou_threshold <= 1, and the decoded boxes' validity (LiteRT
fails an invoke on a box with ymin > ymax): anchors with h, w >= 0 make every box valid. Constant anchors are read
and checked at prepare; anchors computed at run time (a DEQUANTIZE of float16 / int8 anchors in a converted model,
or an input) at every invoke, as LiteRT reads them (a negative h or w then fails the invoke: DataError).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from edge_sdk.errors import DataError
from edge_sdk.runtime.kernels.flexbuffers import FlexBufferError, read_map
from edge_sdk.runtime.kernels.node import Eval, Node, TensorInfo

_F = np.float32
_LITTLE_ENDIAN = sys.byteorder == "little"
DEFAULT_DETECTIONS_PER_CLASS = 100  # LiteRT's kNumDetectionsPerClass
_REQUIRED_INTS = ("max_detections", "max_classes_per_detection", "num_classes")
_REQUIRED_FLOATS = ("nms_score_threshold", "nms_iou_threshold", "y_scale", "x_scale", "h_scale", "w_scale")


def flex_options(node: Node) -> dict:
    """The node's custom options (a FlexBuffers map); a missing or malformed buffer is a model error."""
    if not node.custom_options:
        raise node.error("custom options (a FlexBuffers map) are missing")
    try:
        return read_map(node.custom_options)
    except FlexBufferError as exc:
        raise node.error(f"custom options: {exc}") from None


def flex_number(node: Node, opts: dict, key: str, kind: type, default=None):
    """Option ``key`` as ``kind`` (int or float; a bool reads as 0 / 1, a float as an int truncates, as
    flexbuffers' AsInt64); a missing key takes ``default``, or is a model error without one."""
    value = opts.get(key, default)
    if value is None:
        raise node.error(f"custom option '{key}' is missing")
    if not isinstance(value, (int, float, bool)):
        raise node.error(f"custom option '{key}' is a {type(value).__name__}, not a number")
    if kind is int:
        if isinstance(value, float) and not math.isfinite(value):
            raise node.error(f"custom option '{key}' is {value}, not an integer")
        return int(value)
    return float(value)


def _dequantized(t: TensorInfo, q: np.ndarray) -> np.ndarray:
    """(q - zero point) * scale rounded once to float32 (the product is exact in double)."""
    return ((q.astype(np.float64) - t.zp) * float(_F(t.s))).astype(_F)


def decode_boxes(encodings: np.ndarray, anchors: np.ndarray, scales: tuple[float, float, float, float]) -> np.ndarray:
    """Corner boxes [N, 4] float32 (ymin, xmin, ymax, xmax) from center-size encodings [N, >= 4] and anchors
    [N, 4] (float32 each), in double as LiteRT: one libm exp per value (math.exp, glibc's as LiteRT's std::exp;
    numpy's own exp may differ in the last bit), the rest elementwise in float64 as one scalar expression would."""
    ys, xs, hs, ws = (float(_F(v)) for v in scales)
    e, a = encodings[:, :4].astype(np.float64), anchors.astype(np.float64)
    exp_h = np.array([math.exp(v) for v in (e[:, 2] / hs).tolist()], np.float64)
    exp_w = np.array([math.exp(v) for v in (e[:, 3] / ws).tolist()], np.float64)
    yc = (e[:, 0] / ys * a[:, 2] + a[:, 0]).astype(_F)
    xc = (e[:, 1] / xs * a[:, 3] + a[:, 1]).astype(_F)
    half_h = (0.5 * exp_h * a[:, 2]).astype(_F)
    half_w = (0.5 * exp_w * a[:, 3]).astype(_F)
    return np.stack([yc - half_h, xc - half_w, yc + half_h, xc + half_w], axis=1)


class BoxTable:
    """Corner boxes of N anchors as the columns NMS reads (ymin, xmin, ymax, xmax, area: float32 [N] each; an area
    that is not > 0 given as NaN, see _overlaps), decoded only for the anchors NMS reaches (``fill``): fast NMS
    visits a few blocks of its best-first candidates, so most of the per-value libm exps are never needed."""

    def __init__(self, encodings: np.ndarray | None, anchors: np.ndarray | None, scales=None,
                 boxes: np.ndarray | None = None):
        """Encodings [N, >= 4] and anchors [N, 4] (float32, decoded as ``fill`` asks), or ``boxes`` [N, 4]."""
        self.encodings, self.anchors, self.scales = encodings, anchors, scales
        n = len(boxes) if boxes is not None else len(encodings)
        self.corners = [np.zeros(n, _F) for _ in range(5)]
        self.done = np.zeros(n, bool)
        if boxes is not None:
            self._store(np.arange(n), np.asarray(boxes, _F))

    def _store(self, at: np.ndarray, boxes: np.ndarray) -> None:
        area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])  # float32
        area[~(area > 0)] = np.nan  # no area (or NaN): IoU 0 with every box (_overlaps)
        for k in range(4):
            self.corners[k][at] = boxes[:, k]
        self.corners[4][at] = area
        self.done[at] = True

    def fill(self, anchors: np.ndarray) -> None:
        """Decode the boxes of ``anchors`` (any shape of indices) not decoded yet."""
        need = np.unique(anchors[~self.done[anchors]])  # regular NMS: classes share anchors
        if need.size:
            self._store(need, decode_boxes(self.encodings[need], self.anchors[need], self.scales))

    def boxes(self, anchors: np.ndarray) -> np.ndarray:
        """[len(anchors), 4] corner boxes (ymin, xmin, ymax, xmax) of anchors."""
        self.fill(anchors)
        return np.stack([self.corners[k][anchors] for k in range(4)], axis=1)


def _overlaps(a: list, b: list, iou_threshold) -> np.ndarray:
    """IoU(a, b) > iou_threshold, broadcast over boxes a and b, each [ymin, xmin, ymax, xmax, area] arrays:
    LiteRT's ComputeIntersectionOverUnion in float32 (the same operations in the same order), 0 when either box
    has no area: such an area is given here as NaN (nms_classes), which makes the quotient NaN, never above the
    threshold (> 0), as 0 is not. In place where it can: the arrays are [classes, block, block] large."""
    inter = np.minimum(a[2], b[2])
    inter -= np.maximum(a[0], b[0])
    np.maximum(inter, _F(0), out=inter)  # h
    w = np.minimum(a[3], b[3])
    w -= np.maximum(a[1], b[1])
    np.maximum(w, _F(0), out=w)
    inter *= w
    union = np.add(a[4], b[4], out=w)
    union -= inter
    with np.errstate(divide="ignore", invalid="ignore"):
        inter /= union
    return inter > iou_threshold


# Candidates of every class are judged in blocks of this many (per class): a block's IoUs against the boxes kept
# so far and among themselves are numpy arrays [classes, block, kept + block]; a smaller block wastes fewer IoUs
# past the candidate that fills a class, a larger one has fewer Python steps.
NMS_BLOCK = 64


def nms_classes(boxes: np.ndarray | BoxTable, scores: np.ndarray, limit: int, score_threshold: float,
                iou_threshold: float) -> list[np.ndarray]:
    """LiteRT's single-class NMS (see the module docstring) of every score column of scores [N, C] at once: per
    class, the anchor indices it selects, best first (at most ``limit``).

    A candidate is selected iff fewer than ``limit`` are selected before it and no box selected before it
    overlaps it above the threshold (LiteRT's sort-then-deactivate, in the order it visits candidates). The
    columns advance together through their sorted candidates, a block at a time: a block's overlaps with the
    boxes kept so far and among themselves are computed at once; only the walk along the block, which decides
    what each kept candidate suppresses after it, is a Python loop (over the block, for all columns at once).
    ``boxes``: [N, 4] corner boxes, or a BoxTable decoding each block's candidates as the walk reaches them."""
    n, c = scores.shape
    order, candidates = _candidates_best_first(scores, score_threshold)
    table = boxes if isinstance(boxes, BoxTable) else BoxTable(None, None, boxes=boxes)
    corners = table.corners  # ymin, xmin, ymax, xmax, area [N]
    iou_t = _F(iou_threshold)
    kept = np.zeros((c, max(limit, 1)), np.int64)  # per class, the anchors selected, in order
    count = np.zeros(c, np.int64)
    live = np.flatnonzero((candidates > 0) & (limit > 0))
    start = 0
    while live.size:
        stop = min(start + NMS_BLOCK, n)
        anchor = order[live, start:stop]  # [L, B]
        valid = np.arange(start, stop)[None, :] < candidates[live, None]
        table.fill(anchor[valid])  # the boxes kept so far were filled with their blocks
        box = [v[anchor] for v in corners]  # 5 x [L, B]
        suppressed = ~valid | _overlapping_kept(box, corners, kept[live], count[live], iou_t)
        taken = _walk_block(suppressed, _overlapping_within(box, iou_t), count[live], limit)
        rows, cols = np.nonzero(taken)
        slots = (np.cumsum(taken, axis=1) - 1 + count[live, None])[rows, cols]
        kept[live[rows], slots] = anchor[rows, cols]
        count[live] += taken.sum(axis=1)
        start = stop
        live = live[(count[live] < limit) & (candidates[live] > start)]
    return [kept[k, :count[k]] for k in range(c)]


# _overlaps' arrays are computed for this many elements at a time (classes in chunks): its float32 temporaries then
# stay in the L2 cache (4x faster on a [91, 64, 64] block than all classes at once)
CHUNK_ELEMENTS = 1 << 16


def _row_chunks(rows: int, per_row: int) -> list[slice]:
    step = max(1, CHUNK_ELEMENTS // max(per_row, 1))
    return [slice(start, start + step) for start in range(0, rows, step)]


def _overlapping_kept(box: list, corners: list, kept: np.ndarray, count: np.ndarray, iou_t) -> np.ndarray:
    """[L, B]: whether each candidate of a block (box: 5 x [L, B]) overlaps a box its class kept so far (kept
    [L, >= held] anchors, count [L] of them; corners: ymin, xmin, ymax, xmax, area per anchor)."""
    n_rows, width = box[0].shape
    out = np.zeros((n_rows, width), bool)
    held = int(count.max()) if count.size else 0
    if not held:
        return out
    k_box = [v[kept[:, :held]] for v in corners]  # 5 x [L, held]
    k_valid = np.arange(held)[None, :] < count[:, None]  # a row past a class's count is no box of it
    for rows in _row_chunks(n_rows, width * held):
        over = _overlaps([v[rows, :, None] for v in box], [v[rows, None] for v in k_box], iou_t)
        over &= k_valid[rows, None, :]
        out[rows] = over.any(axis=2)
    return out


def _overlapping_within(box: list, iou_t) -> np.ndarray:
    """[L, B, B]: whether candidates i and j of a block (box: 5 x [L, B]) overlap above the threshold."""
    n_rows, width = box[0].shape
    out = np.empty((n_rows, width, width), bool)
    for rows in _row_chunks(n_rows, width * width):
        out[rows] = _overlaps([v[rows, :, None] for v in box], [v[rows, None] for v in box], iou_t)
    return out


def _candidates_best_first(scores: np.ndarray, score_threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Per column of scores [N, C]: the anchors by descending score, ties in anchor order, those with a score >=
    the threshold first (order [C, N]), and how many those are (candidates [C]).

    One sort of unique uint64 keys (the score's bits made to order as the float does, above the anchor index)
    instead of a stable argsort: the same order, several times faster. Anchors below the threshold (and NaN
    scores) take the largest score key, after every candidate."""
    n = scores.shape[0]
    columns = np.ascontiguousarray(scores.T)  # [C, N]
    is_candidate = columns >= _F(score_threshold)
    negated = np.negative(columns)
    negated += _F(0)  # -0.0 becomes 0.0, equal to it as LiteRT compares
    bits = negated.view(np.uint32)
    # unsigned order = float order: a negative float's bits inverted, a positive one's sign bit set
    ordered = bits ^ ((bits >> np.uint32(31)) * np.uint32(0x7FFFFFFF)) ^ np.uint32(0x80000000)
    ordered[~is_candidate] = np.uint32(0xFFFFFFFF)
    keys = ordered.astype(np.uint64)
    keys <<= np.uint64(32)
    keys |= np.arange(n, dtype=np.uint64)
    keys.sort(axis=1)
    anchors = keys.view(np.uint32)[:, 0::2] if _LITTLE_ENDIAN else keys & np.uint64(0xFFFFFFFF)  # the low halves
    return anchors, np.count_nonzero(is_candidate, axis=1)


def _walk_block(suppressed: np.ndarray, within: np.ndarray, count: np.ndarray, limit: int) -> np.ndarray:
    """The candidates [L, B] a block selects, walking it in order for all L columns at once: a candidate not
    suppressed while its column holds fewer than ``limit`` is taken and suppresses the later ones it overlaps
    (within [L, B, B]). suppressed is updated in place; count is not. A few columns (fast NMS: one) walk one by
    one over Python integers as bit sets, cheaper there than numpy steps on arrays of a few elements."""
    if suppressed.shape[0] <= FEW_COLUMNS:
        return np.stack([_walk_bits(s, w, int(c), limit) for s, w, c in zip(suppressed, within, count)])
    taken = np.zeros_like(suppressed)
    held = count.copy()
    for i in range(suppressed.shape[1]):
        take = ~suppressed[:, i] & (held < limit)
        if not take.any():
            continue
        taken[:, i] = take
        held += take
        suppressed[:, i + 1:] |= take[:, None] & within[:, i, i + 1:]
    return taken


FEW_COLUMNS = 4  # _walk_block: at most this many columns walk one by one (bit sets)


def _bits(row: np.ndarray) -> int:
    """A bool vector as an integer whose bit k is element k."""
    return int.from_bytes(np.packbits(row, bitorder="little").tobytes(), "little")


def _walk_bits(suppressed: np.ndarray, within: np.ndarray, held: int, limit: int) -> np.ndarray:
    """_walk_block of one column: suppressed [B], within [B, B], ``held`` already kept."""
    mask = _bits(suppressed)
    rows = np.packbits(within, axis=1, bitorder="little").tobytes()  # row i: bytes [i * width, (i + 1) * width)
    width = (suppressed.size + 7) // 8
    taken = np.zeros(suppressed.shape, bool)
    for i in range(suppressed.size):
        if held >= limit:
            break
        if not (mask >> i) & 1:
            taken[i] = True
            held += 1
            mask |= int.from_bytes(rows[i * width:(i + 1) * width], "little")
    return taken


def prepare_tflite_detection_postprocess(node: Node) -> Eval:
    node.expect_counts(3, 4)
    enc, cls, anc = node.input(0), node.input(1), node.input(2)
    opts = flex_options(node)
    ints = {k: flex_number(node, opts, k, int) for k in _REQUIRED_INTS}
    floats = {k: flex_number(node, opts, k, float) for k in _REQUIRED_FLOATS}
    max_det, per_anchor, num_classes = ints["max_detections"], ints["max_classes_per_detection"], ints["num_classes"]
    per_class = flex_number(node, opts, "detections_per_class", int, DEFAULT_DETECTIONS_PER_CLASS)
    regular = bool(opts.get("use_regular_nms") or False)

    node.expect_types(enc, ("FLOAT32", "UINT8", "INT8"), "box encodings")
    node.expect_types(cls, ("FLOAT32", "UINT8", "INT8"), "class predictions")
    node.expect_types(anc, (enc.type,), "anchors (the box encodings' type)")
    if len(enc.shape) != 3 or enc.shape[0] != 1 or enc.shape[2] < 4:
        raise node.error(f"box encodings {enc.shape} must be [1, num_boxes, >= 4]")
    n = enc.shape[1]
    if len(cls.shape) != 3 or cls.shape[0] != 1 or cls.shape[1] != n:
        raise node.error(f"class predictions {cls.shape} must be [1, {n}, num_classes (+ 1 background)]")
    if len(anc.shape) != 2 or anc.shape != (n, 4):
        raise node.error(f"anchors {anc.shape} must be [{n}, 4]")
    with_background = cls.shape[2]
    if num_classes <= 0:
        raise node.error(f"num_classes {num_classes} must be positive")
    label_offset = with_background - num_classes
    if label_offset not in (0, 1):
        raise node.error(f"class predictions have {with_background} columns: num_classes {num_classes} (+ 1 "
                         "background class) expected")
    for key, v in (("max_detections", max_det), ("max_classes_per_detection", per_anchor),
                   ("detections_per_class", per_class)):
        if v < 0:
            raise node.error(f"{key} {v} is negative")
    if not 0.0 < floats["nms_iou_threshold"] <= 1.0:
        raise node.error(f"nms_iou_threshold {floats['nms_iou_threshold']} is not within (0, 1]")
    if regular and min(per_class, max_det) <= 0:
        raise node.error("regular NMS needs detections_per_class and max_detections above 0")
    if not regular and per_anchor <= 0:
        raise node.error("fast NMS needs max_classes_per_detection above 0")
    if enc.type != "FLOAT32":
        node.expect_quantized(enc, anc)
    if cls.type != "FLOAT32":
        node.expect_quantized(cls)
    where = node.where()

    def anchors_of(raw: np.ndarray, error=node.error) -> np.ndarray:
        """[N, 4] float32 anchors; h, w >= 0, else every box they make is invalid (LiteRT fails the invoke)."""
        a = raw.reshape(n, 4)
        a = _dequantized(anc, a) if anc.type != "FLOAT32" else a.astype(_F)
        if not np.all(a[:, 2:] >= 0):
            raise error("anchors have a negative (or NaN) height or width: their boxes would be invalid")
        return a

    # constant anchors (every export): read once here; anchors computed at run time (a DEQUANTIZE of float16 or
    # int8 anchors) are read at every invoke, as LiteRT reads them
    anchors = anchors_of(np.asarray(anc.data)) if anc.is_const else None

    def run_time_error(message: str) -> DataError:
        return DataError(f"{where}: {message} (a run-time input)")
    for k, out in enumerate(node.outputs):
        node.expect_types(out, ("FLOAT32",), f"output {k}")
    slots = max_det * per_anchor
    node.set_output_shape(0, (1, slots, 4))
    node.set_output_shape(1, (1, slots))
    node.set_output_shape(2, (1, slots))
    node.set_output_shape(3, (1,))
    scales = (floats["y_scale"], floats["x_scale"], floats["h_scale"], floats["w_scale"])
    score_t, iou_t = floats["nms_score_threshold"], floats["nms_iou_threshold"]
    per_class = min(per_class, max_det)
    categories = min(per_anchor, num_classes)

    def scores_of(raw: np.ndarray) -> np.ndarray:
        """[N, num_classes] float32 scores, the background column dropped."""
        s = raw.reshape(n, with_background)
        s = s.astype(_F, copy=False) if cls.type == "FLOAT32" else _dequantized(cls, s)
        return s[:, label_offset:]  # a view: fast NMS reads one argmax of it, regular NMS sorts its columns

    def decoded(raw: np.ndarray, raw_anchors: np.ndarray) -> np.ndarray:
        return decode_boxes(encodings_of(raw), anchors if anchors is not None else
                            anchors_of(raw_anchors, run_time_error), scales)

    def encodings_of(raw: np.ndarray) -> np.ndarray:
        e = raw.reshape(n, -1)[:, :4]
        return e.astype(_F) if enc.type == "FLOAT32" else _dequantized(enc, e)

    def run_fast(inputs, outputs):
        scores = scores_of(inputs[1])
        ranked = np.argmax(scores, axis=1)[:, None]  # the best class: the first of equal ones, as below
        best = np.take_along_axis(scores, ranked, axis=1)[:, 0]
        if categories > 1 or np.isnan(best).any():  # argmax takes a row's NaN: best is NaN iff the row holds one
            ranked = np.argsort(-scores, axis=1, kind="stable")[:, :categories]  # ties: the lower class first
            best = np.take_along_axis(scores, ranked[:, :1], axis=1)[:, 0]
        # boxes decoded only for the candidates NMS reaches (BoxTable), not all N
        table = BoxTable(encodings_of(inputs[0]), anchors if anchors is not None else
                         anchors_of(inputs[2], run_time_error), scales)
        selected = nms_classes(table, best[:, None], max_det, score_t, iou_t)[0]
        out_boxes, out_classes, out_scores = (o.reshape(-1, *o.shape[2:]) for o in outputs[:3])
        for o in outputs:
            o[...] = 0
        # selected anchor k fills slots k * per_anchor + c, c < categories
        slots = (np.arange(len(selected))[:, None] * per_anchor + np.arange(categories)).reshape(-1)
        out_boxes[slots] = np.repeat(table.boxes(selected), categories, axis=0)
        out_classes[slots] = ranked[selected].reshape(-1)
        out_scores[slots] = np.take_along_axis(scores[selected], ranked[selected], axis=1).reshape(-1)
        outputs[3][0] = len(selected)

    def run_regular(inputs, outputs):
        boxes, scores = decoded(inputs[0], inputs[2]), scores_of(inputs[1])
        selected = nms_classes(boxes, scores, per_class, score_t, iou_t)
        anchor = np.concatenate(selected)  # class after class, each best first
        label = np.repeat(np.arange(num_classes), [len(s) for s in selected])
        picked = scores[anchor, label]
        # a stable sort: ties keep earlier classes first, as LiteRT's merge of each class's selection
        best = np.argsort(-picked, kind="stable")[:max_det]
        out_boxes, out_classes, out_scores = (o.reshape(-1, *o.shape[2:]) for o in outputs[:3])
        for o in outputs:
            o[...] = 0
        m = len(best)
        out_boxes[:m] = boxes[anchor[best]]
        out_classes[:m] = label[best]
        out_scores[:m] = picked[best]
        outputs[3][0] = m

    return run_regular if regular else run_fast
