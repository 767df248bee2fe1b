"""Constant folding: all-constant ops become constants; outputs unchanged (ours and LiteRT)."""

import numpy as np

from converters.passes import fold_constants
from edge_sdk.model.builder import GraphBuilder
from tests.test_passes_support import check_pass, op_counts


def _model():
    rng = np.random.default_rng(0)
    g = GraphBuilder()
    x = g.input("x", (1, 4, 4, 3))
    w_oihw = g.constant("w_oihw", rng.standard_normal((5, 3, 3, 3)).astype(np.float32))
    perm = g.constant("perm", np.array([0, 2, 3, 1], np.int32))
    w = g.tensor("w", (5, 3, 3, 3))
    g.op("TRANSPOSE", [w_oihw, perm], [w])  # weights transposed at run time: foldable
    s = g.constant("s", np.full((5,), 0.5, np.float32))
    two = g.constant("two", np.float32([2.0]))
    s2 = g.tensor("s2", (5,))
    g.op("MUL", [s, two], [s2])  # chain: s2 = s * 2, then b = s2 + s2
    b = g.tensor("b", (5,))
    g.op("ADD", [s2, s2], [b])
    y = g.tensor("y", (1, 4, 4, 5))
    g.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_w=1, stride_h=1)
    q = g.constant("q", np.ones((2, 2), np.float32))
    h = g.tensor("h", (2, 2), "FLOAT16")
    g.op("CAST", [q], [h])
    d = g.tensor("d", (2, 2))
    g.op("DEQUANTIZE", [h], [d])  # float16 weights behind DEQUANTIZE: DEQUANTIZE stays
    e = g.tensor("e", (2, 2))
    g.op("RELU", [d], [e])
    g.output(y, e)
    return g.build()


def test_folds_chains_and_keeps_results():
    after = check_pass(_model(), fold_constants.run)
    assert op_counts(after) == {"CONV_2D": 1, "DEQUANTIZE": 1, "RELU": 1}
    sub = after.subgraphs[0]
    conv = sub.operators[0]
    np.testing.assert_array_equal(after.tensor_data(0, conv.inputs[2]), np.full(5, 2.0, np.float32))
    assert after.tensor_data(0, conv.inputs[1]).shape == (5, 3, 3, 3)
    assert sub.tensors[sub.operators[1].inputs[0]].type == "FLOAT16"  # folded CAST gave a float16 constant


def test_output_stays_an_op_and_unknown_ops_are_left():
    g = GraphBuilder()
    c = g.constant("c", np.ones(3, np.float32))
    y = g.tensor("y", (3,))
    g.op("RELU", [c], [y])
    x = g.input("x", (3,))
    z = g.tensor("z", (3,))
    k = g.tensor("k", (3,))
    g.op("NO_SUCH_CUSTOM", [c], [k])
    g.op("ADD", [x, y], [z])
    g.output(z, y)
    m = g.build()
    assert fold_constants.apply(m) == 0  # y is an output; the custom op has no kernel
    assert op_counts(m) == {"RELU": 1, "NO_SUCH_CUSTOM": 1, "ADD": 1}
