"""Identity removal: identities go, reshape chains merge, dead code goes; outputs unchanged."""

import numpy as np

from converters.passes import identity
from edge_sdk.model.builder import GraphBuilder
from tests.test_passes_support import check_pass, op_counts


def _shape(g, shape):
    return g.constant("shape", np.array(shape, np.int32))


def test_identities_removed():
    g = GraphBuilder()
    x = g.input("x", (2, 3, 4))
    t = [g.tensor(f"t{i}", (2, 3, 4)) for i in range(8)]
    g.op("RESHAPE", [x, _shape(g, (2, 3, 4))], [t[0]], new_shape=[2, 3, 4])
    g.op("TRANSPOSE", [t[0], g.constant("perm", np.array([0, 1, 2], np.int32))], [t[1]])
    g.op("CAST", [t[1]], [t[2]], in_data_type="FLOAT32", out_data_type="FLOAT32")
    g.op("CONCATENATION", [t[2]], [t[3]], axis=1)
    g.op("PAD", [t[3], g.constant("pads", np.zeros((3, 2), np.int32))], [t[4]])
    g.op("SLICE", [t[4], g.constant("begin", np.zeros(3, np.int32)), g.constant("size", np.array([2, 3, 4], np.int32))],
         [t[5]])
    g.op("RELU", [t[5]], [t[6]])
    g.op("RESHAPE", [t[6], _shape(g, (2, 3, 4))], [t[7]], new_shape=[2, 3, 4])  # the output: kept as a tensor
    # not identities: a real transpose and a real pad
    u = g.tensor("u", (4, 3, 2))
    g.op("TRANSPOSE", [t[6], g.constant("perm2", np.array([2, 1, 0], np.int32))], [u])
    dead = g.tensor("dead", (2, 3, 4))
    g.op("NEG", [x], [dead])
    g.output(t[7], u)
    after = check_pass(g.build(), identity.run)
    assert op_counts(after) == {"RELU": 1, "TRANSPOSE": 1}
    sub = after.subgraphs[0]
    assert [sub.tensors[o].name for o in sub.outputs] == ["t7", "u"]


def test_reshape_chains_merge():
    g = GraphBuilder()
    x = g.input("x", (2, 6))
    a = g.tensor("a", (12,))
    b = g.tensor("b", (3, 4))
    c = g.tensor("c", (1, 3, 4))
    y = g.tensor("y", (1, 3, 4))
    g.op("RESHAPE", [x, _shape(g, (12,))], [a], new_shape=[12])
    g.op("RESHAPE", [a, _shape(g, (3, 4))], [b], new_shape=[3, 4])
    g.op("EXPAND_DIMS", [b, g.constant("axis", np.array([0], np.int32))], [c])
    g.op("LOGISTIC", [c], [y])
    g.output(y)
    after = check_pass(g.build(), identity.run)
    assert op_counts(after) == {"RESHAPE": 1, "LOGISTIC": 1}
