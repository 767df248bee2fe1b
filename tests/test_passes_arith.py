"""passes.arith: DIV(x, SQRT(v)) -> MUL(x, RSQRT(v)); DIV by a constant -> MUL by its reciprocal."""

import numpy as np

from converters.passes import arith
from edge_sdk import Interpreter
from edge_sdk.model.builder import GraphBuilder


def _run(model, x):
    it = Interpreter(model=model)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return np.array(it.get_tensor(it.get_output_details()[0]["index"]))


def _ops(model):
    return [model.op_name(op) for op in model.subgraphs[0].operators]


def _layernorm_tail(share_sqrt=False):
    g = GraphBuilder()
    x = g.input("x", (1, 4, 8))
    v = g.tensor("v", (1, 4, 8))
    g.op("MUL", [x, x], [v])
    s = g.tensor("s", (1, 4, 8))
    g.op("SQRT", [v], [s])
    y = g.tensor("y", (1, 4, 8))
    g.op("DIV", [x, s], [y])
    z = g.tensor("z", (1, 4, 8))
    g.op("DIV", [y, g.constant("c", np.array([1.5, -2.0, 4.0, 0.25] * 2, np.float32))], [z])
    outs = [z, s] if share_sqrt else [z]
    g.output(*outs)
    return g.build()


def test_div_by_sqrt_and_by_constant_become_mul():
    x = np.random.default_rng(0).standard_normal((1, 4, 8)).astype(np.float32) + 0.1
    model = _layernorm_tail()
    ref = _run(model, x)
    assert arith.run(model) is model
    assert _ops(model) == ["MUL", "RSQRT", "MUL", "MUL"]
    np.testing.assert_allclose(_run(model, x), ref, rtol=3e-7, atol=0)


def test_sqrt_read_elsewhere_is_kept():
    model = _layernorm_tail(share_sqrt=True)
    arith.run(model)
    assert _ops(model) == ["MUL", "SQRT", "DIV", "MUL"]  # only the constant division changed


def test_division_by_a_constant_with_zeros_is_kept():
    g = GraphBuilder()
    x = g.input("x", (1, 2))
    y = g.tensor("y", (1, 2))
    g.op("DIV", [x, g.constant("c", np.array([0.0, 2.0], np.float32))], [y])
    g.output(y)
    model = g.build()
    assert arith.apply(model) == 0 and _ops(model) == ["DIV"]
