"""SEGMENT_SUM (prepare_segment_sum) and UNSORTED_SEGMENT_SUM / _PROD / _MAX / _MIN (LiteRT's unsorted_segment.cc; TFLM has none): data [ids..., rest...]
(FLOAT32 / INT32), segment ids INT32 of the data's leading shape, a constant INT32 num_segments: output
[num_segments, rest...]. Each segment starts at the fold's initial value (sum 0, product 1, max the type's lowest,
min its highest: FLT_MAX for float32, not infinity) and takes the rows of its ids in input order (float32 sums and
products round in that order); a negative id is skipped, as is one from num_segments on (LiteRT
fails the invoke there; our evals cannot). MAX and MIN never take a NaN
(std::max / std::min against the running value).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Eval, Node

def _unsorted_segment(node: Node, ufunc, init_float, init_int) -> Eval:
    """Each segment folds its rows by ``ufunc`` (applied in order by .at) from ``init_float`` (float32) or
    ``init_int`` (int32)."""
    node.expect_counts(3, 1)
    x, ids, y = node.input(0), node.input(1), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT32"))
    node.expect_types(ids, ("INT32",), "segment_ids")
    node.expect_types(y, (x.type,), "output")
    num = int(node.constant_scalar(2, "num_segments", ("INT32",)))
    if num < 0:
        raise node.error(f"num_segments {num} is negative")
    k = len(ids.shape)
    if x.shape[:k] != ids.shape:
        raise node.error(f"segment_ids {ids.shape} must be the leading shape of the data {x.shape}")
    rest = x.shape[k:]
    node.set_output_shape(0, (num,) + rest)
    init = init_float if x.type == "FLOAT32" else init_int
    row = int(np.prod(rest, dtype=np.int64))

    def run(inputs, outputs):
        acc = np.full((num, row), init, x.dtype)
        s = inputs[1].reshape(-1).astype(np.int64)
        keep = (s >= 0) & (s < num)
        with np.errstate(over="ignore", invalid="ignore"):
            ufunc.at(acc, s[keep], inputs[0].reshape(-1, row)[keep])  # row by row in input order
        outputs[0][...] = acc.reshape(outputs[0].shape)

    return run


def prepare_unsorted_segment_sum(node: Node) -> Eval:
    return _unsorted_segment(node, np.add, 0, 0)


def prepare_unsorted_segment_prod(node: Node) -> Eval:
    return _unsorted_segment(node, np.multiply, 1, 1)


def prepare_unsorted_segment_max(node: Node) -> Eval:
    return _unsorted_segment(node, np.fmax, -np.finfo(np.float32).max, np.iinfo(np.int32).min)


def prepare_unsorted_segment_min(node: Node) -> Eval:
    return _unsorted_segment(node, np.fmin, np.finfo(np.float32).max, np.iinfo(np.int32).max)


def prepare_segment_sum(node: Node) -> Eval:
    """SEGMENT_SUM (LiteRT's segment_sum.cc; TFLM has none): data [n, rest...] FLOAT32 / INT32, segment ids INT32 [n]
    sorted with steps of 0 or 1: output [ids[-1] + 1, rest...], the rows summed per segment in input order. The
    output's size comes from the ids' values: constant ids only (ids computed at run time are refused)."""
    node.expect_counts(2, 1)
    x, ids, y = node.input(0), node.input(1), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT32"))
    node.expect_types(y, (x.type,), "output")
    s = node.constant_values(1, "segment_ids", ("INT32",)).astype(np.int64)
    if len(ids.shape) != 1 or not x.shape or ids.shape[0] != x.shape[0]:
        raise node.error(f"segment_ids {ids.shape} must be 1-D of the data's first dimension {x.shape}")
    steps = np.diff(s)
    if s.size and (s[0] < 0 or ((steps != 0) & (steps != 1)).any()):
        raise node.error("segment_ids must be sorted, from 0 on, in steps of 0 or 1")
    num = int(s[-1]) + 1 if s.size else 0
    node.set_output_shape(0, (num,) + x.shape[1:])
    row = int(np.prod(x.shape[1:], dtype=np.int64))

    def run(inputs, outputs):
        acc = np.zeros((num, row), x.dtype)
        with np.errstate(over="ignore"):
            np.add.at(acc, s, inputs[0].reshape(-1, row))  # row by row in input order
        outputs[0][...] = acc.reshape(outputs[0].shape)

    return run
