"""BUCKETIZE as LiteRT's bucketize.cc: output INT32 of the input's shape, each value's bucket index = the number of
boundaries (BucketizeOptions ``boundaries``, float32, sorted ascending) that are <= the value (std::upper_bound).
Inputs FLOAT32, FLOAT64, INT32, INT64. The comparison is C++'s mixed one: an integer value becomes a float32
before it is compared with a float32 boundary, a float64 value compares with the boundary widened to double.
A NaN value is past every boundary (upper_bound's !(v < b) is true for each).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Eval, Node

BUCKETIZE_TYPES = ("FLOAT32", "FLOAT64", "INT32", "INT64")


def prepare_bucketize(node: Node) -> Eval:
    node.expect_counts(1, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, BUCKETIZE_TYPES)
    node.expect_types(y, ("INT32",), "output")
    boundaries = np.asarray(node.options.get("boundaries") or [], np.float32)
    if boundaries.size > 1 and not bool((boundaries[1:] >= boundaries[:-1]).all()):
        raise node.error(f"boundaries {boundaries.tolist()} are not sorted ascending")
    node.set_output_shape(0, x.shape)
    as_type = np.float64 if x.type == "FLOAT64" else np.float32  # the type both sides of the comparison take
    edges = boundaries.astype(as_type)

    def run(inputs, outputs):
        outputs[0][...] = np.searchsorted(edges, inputs[0].astype(as_type), side="right")

    return run
