"""TOPK_V2 as LiteRT's kernel computes it (TFLite Micro has none).

Inputs (input, k): k a constant scalar (INT32, or INT16 from op version 3), 0 <= k <= the last dimension.
Outputs (values of the input's type and quantization, indices INT32 or INT16) of shape input[:-1] + [k]: the k
largest values of every row along the last dimension, sorted in descending order; equal values keep their
order (the lower index first), as LiteRT's TopContainer sorts (a greater value first, then the lower index).
Input types FLOAT32, INT8, UINT8, INT16, INT32, INT64 (LiteRT's set).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Eval, Node

_TYPES = ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64")


def prepare_topk_v2(node: Node) -> Eval:
    node.expect_counts(2, 2)
    x = node.input(0)
    values, indices = node.outputs
    node.expect_types(x, _TYPES)
    if values.type != x.type:
        raise node.error(f"values output type {values.type} differs from the input type {x.type}")
    node.expect_types(indices, ("INT32", "INT16"), "indices output")
    k = int(node.constant_scalar(1, "k", ("INT32", "INT16")))
    if not x.shape:
        raise node.error("input must have at least one dimension")
    n = int(x.shape[-1])
    if not 0 <= k <= n:
        raise node.error(f"k = {k} is not within 0..{n} (the input's last dimension)")
    shape = tuple(x.shape[:-1]) + (k,)
    node.set_output_shape(0, shape)
    node.set_output_shape(1, shape)
    last = n - 1

    def run(inputs, outputs):
        v = inputs[0]
        # descending with equal values in index order, without negating (INT64's lowest value has no
        # negation): a stable ascending sort of the reversed row puts equal values in reversed-index order;
        # read backwards and mapped back, they come in index order
        order = last - np.argsort(v[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
        outputs[0][...] = np.take_along_axis(v, order, axis=-1)
        outputs[1][...] = order

    return run
