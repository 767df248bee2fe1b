"""Single-op float models for the int16x8 kernel probe (tests/test_quantize_widen.py): each op the
quantizer can widen, built with the GraphBuilder, so the table of ops with int16 kernels
(the op table rows' ``int16`` and ``int16_missing`` facts) is checked against the runtimes themselves."""

from __future__ import annotations

import numpy as np

from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder


def _c(g, name, r, shape, s=0.5):
    return g.constant(name, (r.standard_normal(shape) * s).astype(np.float32))


def single_op(op: str, seed: int = 0) -> tuple[bytes, tuple[int, ...]]:
    """(float model bytes, input shape) of a model made of ``op`` alone (plus its constants)."""
    r = np.random.default_rng(seed)
    g = GraphBuilder()
    shape = (1, 4, 4, 8)
    x = g.input("x", shape)
    y = None
    if op == "CONV_2D":
        y = g.tensor("y", (1, 4, 4, 6))
        g.op(op, [x, _c(g, "w", r, (6, 3, 3, 8)), _c(g, "b", r, (6,))], [y], padding="SAME", stride_w=1,
             stride_h=1)
    elif op == "DEPTHWISE_CONV_2D":
        y = g.tensor("y", shape)
        g.op(op, [x, _c(g, "w", r, (1, 3, 3, 8)), _c(g, "b", r, (8,))], [y], padding="SAME", stride_w=1,
             stride_h=1, depth_multiplier=1)
    elif op == "FULLY_CONNECTED":
        shape = (1, 8)
        g = GraphBuilder()
        x = g.input("x", shape)
        y = g.tensor("y", (1, 5))
        g.op(op, [x, _c(g, "w", r, (5, 8)), _c(g, "b", r, (5,))], [y])
    elif op == "TRANSPOSE_CONV":
        y = g.tensor("y", (1, 8, 8, 3))
        g.op(op, [g.constant("os", np.array([1, 8, 8, 3], np.int32)), _c(g, "w", r, (3, 2, 2, 8)), x,
                  _c(g, "b", r, (3,))], [y], padding="SAME", stride_w=2, stride_h=2)
    elif op in ("ADD", "SUB", "MUL", "SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM"):
        y = g.tensor("y", shape)
        g.op(op, [x, _c(g, "k", r, shape)], [y])
    elif op in ("MEAN", "SUM", "REDUCE_MAX"):
        y = g.tensor("y", (1, 1, 1, 8))
        g.op(op, [x, g.constant("axis", np.array([1, 2], np.int32))], [y], keep_dims=True)
    elif op == "SOFTMAX":
        y = g.tensor("y", shape)
        g.op(op, [x], [y], beta=1.0)
    elif op in ("LOGISTIC", "TANH", "RELU", "RELU6", "RELU_N1_TO_1"):
        y = g.tensor("y", shape)
        g.op(op, [x], [y])
    elif op == "PRELU":  # alpha per channel, both signs (a negative slope flips the sign)
        y = g.tensor("y", shape)
        g.op(op, [x, g.constant("alpha", (r.standard_normal((1, 1, 8)) * 0.5).astype(np.float32))], [y])
    elif op == "LEAKY_RELU":
        y = g.tensor("y", shape)
        g.op(op, [x], [y], alpha=0.1)
    elif op == "BATCH_MATMUL":
        y = g.tensor("y", (1, 4, 4, 4))
        g.op(op, [x, _c(g, "k", r, (1, 4, 8, 4))], [y])
    elif op == "CONCATENATION":
        y = g.tensor("y", (1, 4, 4, 16))
        g.op(op, [x, _c(g, "k", r, shape)], [y], axis=3)
    elif op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        y = g.tensor("y", (1, 2, 2, 8))
        g.op(op, [x], [y], padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    elif op == "GELU":
        y = g.tensor("y", shape)
        g.op(op, [x], [y], approximate=False)
    elif op == "RSQRT":  # of x * x + 0.5 (a layer norm's variance plus epsilon): positive inputs
        square, shifted, y = g.tensor("sq", shape), g.tensor("sh", shape), g.tensor("y", shape)
        g.op("MUL", [x, x], [square])
        g.op("ADD", [square, g.constant("eps", np.full((1, 1, 1, 8), 0.5, np.float32))], [shifted])
        g.op(op, [shifted], [y])
    if y is None:
        raise ValueError(f"no probe model for {op}")
    g.output(y)
    return write_model(g.build()), shape


PROBED = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "ADD", "SUB", "MUL",
          "SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM", "MEAN", "SUM", "REDUCE_MAX", "SOFTMAX", "LOGISTIC", "TANH",
          "RELU", "RELU6", "LEAKY_RELU", "PRELU", "BATCH_MATMUL", "CONCATENATION", "AVERAGE_POOL_2D", "MAX_POOL_2D",
          "RSQRT")
