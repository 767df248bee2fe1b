"""DILATE: the input's elements spread apart by a dilation factor per dimension, the gaps holding a padding
value, as LiteRT's dilate.cc: output dim (d - 1) * k + 1, out[i0 * k0, i1 * k1, ...] = in[i0, i1, ...].

Any numeric type (bytes are copied: a quantized tensor keeps its stored values). The dilations (input 1, INT32,
one per input dimension, each >= 1) must be a constant here so prepare fixes the output shape; the padding value
(input 2, the input's type) is read at run time, its first element.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.bitcast import BITCAST_TYPES
from edge_sdk.runtime.kernels.node import Node


def prepare_dilate(node: Node):
    node.expect_counts(3, 1)
    x, padding, out = node.input(0), node.input(2), node.outputs[0]
    node.expect_types(x, BITCAST_TYPES)
    node.expect_types(padding, (x.type,), "padding value")
    node.expect_types(out, (x.type,), "output")
    node.expect(len(x.shape) >= 1, "the input must have a dimension")
    node.expect(int(np.prod(padding.shape, dtype=np.int64)) >= 1, "the padding value is empty")
    dilations = node.constant_values(1, "dilations", ("INT32",)).astype(np.int64)
    node.expect(len(node.input(1).shape) == 1 and dilations.size == len(x.shape),
                f"dilations {dilations.tolist()} must be 1-D with one factor per input dimension ({len(x.shape)})")
    node.expect(bool((dilations >= 1).all()), f"dilations {dilations.tolist()} must be 1 or more")
    node.expect(all(d >= 1 for d in x.shape), f"input shape {x.shape} has an empty dimension")
    node.set_output_shape(0, [(d - 1) * int(k) + 1 for d, k in zip(x.shape, dilations)])
    spread = tuple(slice(None, None, int(k)) for k in dilations)

    def run(inputs, outputs):
        outputs[0][...] = inputs[2].reshape(-1)[0]
        outputs[0][spread] = inputs[0]
    return run
