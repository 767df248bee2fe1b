"""Ops whose output values do not come from their data input's values: ZEROS_LIKE, FILL, RANGE, RANK.

As LiteRT's kernels (zeros_like.cc, fill.cc, range.cc, rank.cc), with one restriction of this runtime: output
shapes are fixed at prepare, so FILL's dims and RANGE's start / limit / delta must be constants (LiteRT then also
sizes the output at prepare; otherwise it makes it dynamic).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Node

# FILL: the value types LiteRT's kernel takes (STRING aside)
FILL_TYPES = ("FLOAT32", "FLOAT16", "FLOAT64", "INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "BOOL")
RANK_TYPES = FILL_TYPES  # RANK reads only its input's rank


def prepare_zeros_like(node: Node):
    """ZEROS_LIKE: zeros of the input's type and shape (LiteRT: FLOAT32, INT32, INT64; TFLM also INT8, whose
    stored bytes are 0 whatever the zero point)."""
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT32", "INT64", "INT8"))
    node.expect_types(out, (x.type,), "output")
    node.set_output_shape(0, x.shape)

    def run(inputs, outputs):
        outputs[0][...] = 0
    return run


def prepare_fill(node: Node):
    """FILL: output of shape dims (input 0, a constant 1-D INT32 / INT64) holding the scalar value (input 1)
    everywhere. A quantized value keeps its stored bytes: the output must carry the same quantization."""
    node.expect_counts(2, 1)
    value, out = node.input(1), node.outputs[0]
    dims = node.constant_values(0, "dims", ("INT32", "INT64")).astype(np.int64)
    node.expect(len(node.input(0).shape) == 1, f"dims must be 1-D, has shape {node.input(0).shape}")
    node.expect(bool((dims >= 0).all()), f"negative dims {dims.tolist()}")
    node.expect_types(value, FILL_TYPES, "value")
    node.expect(len(value.shape) == 0, f"value must be a scalar, has shape {value.shape}")
    node.expect_types(out, (value.type,), "output")
    if value.quantized or out.quantized:
        node.expect(value.quantized and out.quantized and value.s == out.s and value.zp == out.zp,
                    "a quantized value and the output must share scale and zero point")
    node.set_output_shape(0, [int(d) for d in dims])

    def run(inputs, outputs):
        outputs[0][...] = inputs[1]
    return run


def _range_size(start, limit, delta, integer: bool) -> int | None:
    """range.cc's GetSize: None when delta is 0 or points away from limit."""
    if delta == 0 or not ((start > limit and delta < 0) or (start < limit and delta > 0)):
        return None
    if integer:
        return int((abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta)))
    with np.errstate(over="ignore"):
        return int(np.ceil(np.abs((np.float32(limit) - np.float32(start)) / np.float32(delta))))


def prepare_range(node: Node):
    """RANGE: start, start + delta, ... below limit (above it for a negative delta), accumulated one addition at a
    time in the input type as range.cc does (float32 values therefore drift from start + i * delta). FLOAT32,
    INT32, INT64 (integers wrap); the three scalar inputs must be constants here."""
    node.expect_counts(3, 1)
    start_t, out = node.input(0), node.outputs[0]
    node.expect_types(start_t, ("FLOAT32", "INT32", "INT64"), "start")
    for i, what in ((1, "limit"), (2, "delta")):
        node.expect_types(node.input(i), (start_t.type,), what)
    for i in range(3):
        node.expect(len(node.input(i).shape) == 0, f"input {i} must be a scalar, has shape {node.input(i).shape}")
    node.expect_types(out, (start_t.type,), "output")
    start, limit, delta = (node.constant_scalar(i, w, (start_t.type,)) for i, w in enumerate(("start", "limit", "delta")))
    size = _range_size(start, limit, delta, start_t.type != "FLOAT32")
    node.expect(size is not None, f"delta {delta} does not lead from start {start} to limit {limit}")
    node.expect(size < 1 << 31, f"range from {start} to {limit} by {delta} has {size} values")
    node.set_output_shape(0, [size])
    dtype = start.dtype
    values = np.empty(size, dtype)
    with np.errstate(over="ignore"):
        acc = np.array(start, dtype)
        for i in range(size):  # one rounding (or wrap) per step, as the reference's value += delta
            values[i] = acc
            acc = (acc + np.array(delta, dtype)).astype(dtype)

    def run(inputs, outputs):
        outputs[0][...] = values
    return run


def prepare_rank(node: Node):
    """RANK: the input's rank as an INT32 scalar (LiteRT's output type; INT64 is refused there too)."""
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, RANK_TYPES)
    node.expect_types(out, ("INT32",), "output")
    node.set_output_shape(0, ())
    rank = len(x.shape)

    def run(inputs, outputs):
        outputs[0][...] = rank
    return run
