"""BITCAST: the input's bytes read as the output's type, as LiteRT's bitcast.cc.

Equal element sizes keep the shape; a wider input gains a last dimension of size in/out; a narrower input must end
in a dimension of size out/in, which goes. The bytes are copied unchanged (little-endian, as every target here).
"""

from __future__ import annotations

from edge_sdk.model.types import element_bytes
from edge_sdk.runtime.kernels.node import Node

# the numeric types LiteRT's GetSizeOfType knows (its STRING aside), each side
BITCAST_TYPES = ("FLOAT32", "FLOAT16", "FLOAT64", "INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64",
                 "UINT64", "BOOL")


def prepare_bitcast(node: Node):
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, BITCAST_TYPES)
    node.expect_types(out, BITCAST_TYPES, "output")
    size_in, size_out = element_bytes(x.type), element_bytes(out.type)
    shape = list(x.shape)
    if size_in > size_out:
        shape.append(size_in // size_out)
    elif size_in < size_out:
        node.expect(len(shape) >= 1 and shape[-1] == size_out // size_in,
                    f"a {x.type} input to {out.type} must end in a dimension of {size_out // size_in}, "
                    f"has shape {x.shape}")
        shape.pop()
    node.set_output_shape(0, shape)

    def run(inputs, outputs):
        outputs[0][...] = inputs[0].reshape(-1).view(outputs[0].dtype).reshape(outputs[0].shape)
    return run
