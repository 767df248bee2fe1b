"""WHERE and UNIQUE, as LiteRT's where.cc and unique.cc: ops whose output size depends on the input values.

Their rows name those outputs (``OpRow.data_sized``): prepare gives such an output an empty placeholder shape, the
interpreter plans no arena bytes for it and hands eval a ``DataSizedOutput`` instead of an array; eval sizes it
with ``resize(shape)`` (as LiteRT marks the tensor dynamic and resizes it at eval) and writes the array that
returns. The interpreter prepares the ops reading such a tensor at eval, at its size then (interpreter.PreparedAtEval;
an IF / WHILE reading it is refused at prepare). The C runtime refuses both ops (it plans every byte before the
first invoke).

- WHERE (one input: the condition): the coordinates of its nonzero elements, row-major order, as INT64
  [count, rank]. Condition types as LiteRT: BOOL, FLOAT32, INT32, INT64, INT8, UINT8 (nonzero: != 0, NaN counts).
- UNIQUE (a 1-D input): output 0 the distinct values in order of first appearance [k] (the input's type: FLOAT32,
  INT8, INT16, INT32, INT64, UINT8), output 1 the index of each input element's value in output 0 (INT32 or INT64:
  the idx_out_type option), the input's shape.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Eval, Node

WHERE_TYPES = ("BOOL", "FLOAT32", "INT32", "INT64", "INT8", "UINT8")
UNIQUE_TYPES = ("FLOAT32", "INT8", "INT16", "INT32", "INT64", "UINT8")


def _elements(x) -> int | None:
    """An input's elements, None when it is itself sized at eval (its shape now a placeholder)."""
    return None if x.sized_at_eval else int(np.prod(x.shape, dtype=np.int64))


def prepare_where(node: Node) -> Eval:
    node.expect_counts(1, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, WHERE_TYPES, "condition")
    node.expect_types(y, ("INT64",), "output")
    rank = len(x.shape)
    node.set_output_shape(0, (0, rank))  # a placeholder: the count of nonzero elements is known at eval
    y.max_elements = None if _elements(x) is None else _elements(x) * rank  # every element nonzero

    def run(inputs, outputs):
        coords = np.argwhere(inputs[0] != 0)  # [count, rank], row-major
        outputs[0].resize(coords.shape)[...] = coords

    return run


def prepare_unique(node: Node) -> Eval:
    node.expect_counts(1, 2)
    x, values, index = node.input(0), node.outputs[0], node.outputs[1]
    node.expect_types(x, UNIQUE_TYPES)
    node.expect_types(values, (x.type,), "output 0 (unique values)")
    idx_type = node.options.get("idx_out_type", "INT32")
    node.expect_types(index, ("INT32", "INT64"), "output 1 (indices)")
    if index.type != idx_type:
        raise node.error(f"output 1 has type {index.type}, the idx_out_type option says {idx_type}")
    if len(x.shape) != 1:
        raise node.error(f"input {x.shape} must be 1-D")
    node.set_output_shape(0, (0,))  # a placeholder: the count of distinct values is known at eval
    values.max_elements = _elements(x)  # every value distinct
    node.set_output_shape(1, x.shape)

    def run(inputs, outputs):
        v = inputs[0]
        _, first, inverse = np.unique(v, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # distinct values by first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        outputs[0].resize((order.size,))[...] = v[first[order]]
        outputs[1][...] = rank[inverse.reshape(-1)]

    return run
