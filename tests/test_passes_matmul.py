"""MatMul canonicalization: BATCH_MATMUL with a constant 2-D rhs -> FULLY_CONNECTED; FC + ADD -> FC bias."""

import numpy as np
import pytest

from converters import graph as G
from converters.passes import matmul
from edge_sdk.model.builder import GraphBuilder
from tests.test_passes_support import check_pass, op_counts

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("adj_y", [False, True])
def test_batch_matmul_const_rhs_becomes_fc_with_bias(adj_y):
    g = GraphBuilder()
    x = g.input("x", (2, 3, 5))
    w = RNG.standard_normal((5, 4)).astype(np.float32)
    b = g.constant("B", w.T.copy() if adj_y else w)
    y = g.tensor("y", (2, 3, 4))
    g.op("BATCH_MATMUL", [x, b], [y], adj_x=False, adj_y=adj_y)
    z = g.tensor("z", (2, 3, 4))
    g.op("ADD", [y, g.constant("bias", RNG.standard_normal((1, 1, 4)).astype(np.float32))], [z])
    g.output(z)
    after = check_pass(g.build(), matmul.run)
    assert op_counts(after) == {"FULLY_CONNECTED": 1}
    op = after.subgraphs[0].operators[0]
    assert G.options(after, op)["keep_num_dims"] is True
    assert after.tensor_data(0, op.inputs[1]).shape == (4, 5)


def test_runtime_rhs_or_adj_x_stay():
    g = GraphBuilder()
    x = g.input("x", (1, 3, 5))
    r = g.input("r", (1, 5, 4))
    y = g.tensor("y", (1, 3, 4))
    g.op("BATCH_MATMUL", [x, r], [y])
    xt = g.input("xt", (1, 5, 3))
    z = g.tensor("z", (1, 3, 4))
    g.op("BATCH_MATMUL", [xt, g.constant("B", RNG.standard_normal((5, 4)).astype(np.float32))], [z], adj_x=True)
    g.output(y, z)
    after = check_pass(g.build(), matmul.run)
    assert op_counts(after) == {"BATCH_MATMUL": 2}
