"""BatchNorm folding: per-channel MUL then ADD after CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED."""

import numpy as np
import pytest

from converters import graph as G
from converters.passes import batchnorm
from edge_sdk.model.builder import GraphBuilder
from tests.test_passes_support import check_pass, op_counts

RNG = np.random.default_rng(7)


def _layer(g, kind, x):
    shape = g.tensors[x].shape
    if kind == "CONV_2D":
        w = g.constant("w", RNG.standard_normal((6, 3, 3, shape[-1])).astype(np.float32))
        y = g.tensor("y", shape[:-1] + (6,))
        g.op(kind, [x, w, g.constant("b", RNG.standard_normal(6).astype(np.float32))], [y], padding="SAME",
             stride_w=1, stride_h=1)
    elif kind == "DEPTHWISE_CONV_2D":
        w = g.constant("w", RNG.standard_normal((1, 3, 3, 2 * shape[-1])).astype(np.float32))
        y = g.tensor("y", shape[:-1] + (2 * shape[-1],))
        g.op(kind, [x, w, -1], [y], padding="SAME", stride_w=1, stride_h=1, depth_multiplier=2)  # no bias
    else:
        w = g.constant("w", RNG.standard_normal((6, shape[-1])).astype(np.float32))
        y = g.tensor("y", shape[:-1] + (6,))
        g.op(kind, [x, w], [y])
    return y


@pytest.mark.parametrize("kind", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"])
def test_mul_add_fold_into_layer(kind):
    g = GraphBuilder()
    x = g.input("x", (1, 4, 4, 3) if kind != "FULLY_CONNECTED" else (2, 3))
    y = _layer(g, kind, x)
    c = g.tensors[y].shape[-1]
    rank = len(g.tensors[y].shape)
    scale = g.constant("scale", RNG.uniform(0.5, 2, (1,) * (rank - 1) + (c,)).astype(np.float32))
    shift = g.constant("shift", RNG.standard_normal(c).astype(np.float32))
    m = g.tensor("m", g.tensors[y].shape)
    a = g.tensor("a", g.tensors[y].shape)
    g.op("MUL", [scale, y], [m])  # constant first
    g.op("ADD", [m, shift], [a], fused_activation_function="RELU")  # the activation moves onto the layer
    g.output(a)
    after = check_pass(g.build(), batchnorm.run)
    assert op_counts(after) == {kind: 1}
    op = after.subgraphs[0].operators[0]
    assert G.options(after, op)["fused_activation_function"] == "RELU"
    assert after.subgraphs[0].tensors[op.outputs[0]].name == "a"


def test_sub_and_scalar_fold_and_refusals():
    g = GraphBuilder()
    x = g.input("x", (1, 4, 4, 3))
    y = _layer(g, "CONV_2D", x)
    s = g.tensor("s", (1, 4, 4, 6))
    g.op("SUB", [y, g.constant("k", np.float32([0.25]))], [s])
    # not per-channel (varies along W): stays
    m = g.tensor("m", (1, 4, 4, 6))
    g.op("MUL", [s, g.constant("map", RNG.standard_normal((1, 1, 4, 6)).astype(np.float32))], [m])
    g.output(m)
    after = check_pass(g.build(), batchnorm.run)
    assert op_counts(after) == {"CONV_2D": 1, "MUL": 1}


def test_shared_layer_output_is_not_folded():
    g = GraphBuilder()
    x = g.input("x", (2, 3))
    y = _layer(g, "FULLY_CONNECTED", x)
    a = g.tensor("a", (2, 6))
    g.op("ADD", [y, g.constant("bias", np.ones(6, np.float32))], [a])
    g.output(a, y)
    after = check_pass(g.build(), batchnorm.run)
    assert op_counts(after) == {"FULLY_CONNECTED": 1, "ADD": 1}


def test_transpose_conv_takes_bias_input_3():
    g = GraphBuilder()
    x = g.input("x", (1, 3, 3, 2))
    w = g.constant("w", RNG.standard_normal((4, 3, 3, 2)).astype(np.float32))
    y = g.tensor("y", (1, 6, 6, 4))
    g.op("TRANSPOSE_CONV", [g.constant("os", np.array([1, 6, 6, 4], np.int32)), w, x,
                            g.constant("b", RNG.standard_normal(4).astype(np.float32))], [y],
         padding="SAME", stride_w=2, stride_h=2)
    m = g.tensor("m", (1, 6, 6, 4))
    g.op("MUL", [y, g.constant("s", RNG.uniform(0.5, 2, 4).astype(np.float32))], [m])
    a = g.tensor("a", (1, 6, 6, 4))
    g.op("ADD", [m, g.constant("t", RNG.standard_normal(4).astype(np.float32))], [a])
    g.output(a)
    after = check_pass(g.build(), batchnorm.run)
    assert op_counts(after) == {"TRANSPOSE_CONV": 1}
