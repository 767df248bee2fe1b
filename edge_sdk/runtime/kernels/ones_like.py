"""ONES_LIKE: ones of the input's type and shape (TensorFlow's OnesLike). schema.fbs has no ONES_LIKE builtin
(ZEROS_LIKE is one): a model names it as a custom op of custom_code "ONES_LIKE", which LiteRT cannot resolve.
FLOAT32, INT32, INT64, as ZEROS_LIKE's LiteRT types; a quantized input has no "one" of its own: refused.
"""

from __future__ import annotations

from edge_sdk.runtime.kernels.node import Eval, Node


def prepare_ones_like(node: Node) -> Eval:
    node.expect_counts(1, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT32", "INT64"))
    node.expect_types(y, (x.type,), "output")
    node.set_output_shape(0, x.shape)

    def run(inputs, outputs):
        outputs[0][...] = 1

    return run
