"""converters.graph: the editing helpers keep models valid (they write, run, and LiteRT loads them)."""

import numpy as np
import pytest

from converters import graph as G
from edge_sdk.errors import ModelError
from edge_sdk.model import read_model, write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.types import Buffer, Metadata, SignatureDef
from tests.peers import run_litert
from tests.test_passes_support import op_counts, run_ours


def _chain():
    """x -> ADD(c) -> a -> RELU -> y (output); a also feeds a dead MUL; plus an unused constant."""
    g = GraphBuilder()
    x = g.input("x", (2, 3))
    c = g.constant("c", np.arange(3, dtype=np.float32))
    g.constant("unused", np.ones(5, np.float32))
    a = g.tensor("a", (2, 3))
    y = g.tensor("y", (2, 3))
    dead = g.tensor("dead", (2, 3))
    g.op("ADD", [x, c], [a])
    g.op("MUL", [a, a], [dead])
    g.op("RELU", [a], [y])
    g.output(y)
    return g.build(), {"x": x, "c": c, "a": a, "y": y, "dead": dead}


def test_producers_consumers_and_queries():
    m, t = _chain()
    assert G.producers(m) == {t["a"]: 0, t["dead"]: 1, t["y"]: 2}
    assert G.consumers(m) == {t["x"]: [0], t["c"]: [0], t["a"]: [1, 2]}  # MUL reads a twice: listed once
    assert G.is_constant(m, t["c"]) and not G.is_constant(m, t["x"]) and not G.is_constant(m, -1)
    np.testing.assert_array_equal(G.constant_value(m, t["c"]), [0, 1, 2])
    assert G.sole_consumer(m, t["x"]) == 0 and G.sole_consumer(m, t["a"]) is None
    assert G.sole_consumer(m, t["y"]) is None  # outputs are read by the caller
    assert G.options(m, m.subgraphs[0].operators[0])["fused_activation_function"] == "NONE"


def test_dead_code_elimination_remaps_everything():
    m, t = _chain()
    sub = m.subgraphs[0]
    m.metadata.append(Metadata("notes", len(m.buffers)))
    m.buffers.append(Buffer(b"hello"))
    m.signature_defs.append(SignatureDef("serve", 0, {"x": t["x"]}, {"y": t["y"]}))
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    want = run_ours(m, [x])
    assert G.dead_ops(m) == [1]
    assert G.eliminate_dead_code(m) == 1
    assert op_counts(m) == {"ADD": 1, "RELU": 1}
    names = [tt.name for tt in sub.tensors]
    assert names == ["x", "c", "a", "y"]  # 'unused' and 'dead' gone, order kept
    assert len(m.buffers) == 3 and m.metadata_bytes("notes") == b"hello"  # empty, c, metadata
    assert m.signature_defs[0].inputs == {"x": 0} and m.signature_defs[0].outputs == {"y": 3}
    assert sub.outputs == [3] and sub.operators[1].inputs == [2]
    np.testing.assert_array_equal(G.constant_value(m, 1), [0, 1, 2])
    data = write_model(m)
    back = read_model(data)
    np.testing.assert_allclose(run_ours(back, [x])[0], want[0])
    np.testing.assert_allclose(run_litert(data, [x])[0], want[0])
    assert G.eliminate_dead_code(m) == 0


def test_side_effect_ops_and_variables_survive_dce():
    g = GraphBuilder()
    x = g.input("x", (1, 2))
    h = g.tensor("h", (), "RESOURCE")
    g.op("VAR_HANDLE", [], [h], container="", shared_name="v")
    g.op("ASSIGN_VARIABLE", [h, x], [])
    y = g.tensor("y", (1, 2))
    g.op("RELU", [x], [y])
    g.output(y)
    m = g.build()
    assert G.dead_ops(m) == []


def test_insert_ops_constants_and_replace_uses():
    m, _ = _chain()
    G.eliminate_dead_code(m)
    sub = m.subgraphs[0]
    a = next(i for i, tt in enumerate(sub.tensors) if tt.name == "a")
    y = sub.outputs[0]
    # put a MUL by 2 between ADD and RELU: ADD -> a -> MUL -> a2 -> RELU
    two = G.add_constant(m, "c", np.float32(2.0))  # the name 'c' is taken: made unique
    assert sub.tensors[two].name == "c_1" and len(m.buffers[sub.tensors[two].buffer].data) == 4
    assert sub.tensors[two].shape == ()  # a scalar stays 0-d
    a2 = G.add_tensor(m, "a", (2, 3), like=a)
    assert sub.tensors[a2].name == "a_1"
    assert G.replace_uses(m, a, a2) == 1
    G.add_op(m, "MUL", [a, two], [a2], position=G.producers(m)[a] + 1)
    assert G.topological_problems(m) == []
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    want = np.maximum((x + np.arange(3)) * 2, 0)
    np.testing.assert_allclose(run_ours(m, [x])[0], want, rtol=1e-6)
    # replace_uses reaches the subgraph outputs too
    y2 = G.add_tensor(m, "y2", (2, 3))
    G.add_op(m, "NEG", [y], [y2])
    assert G.replace_uses(m, y, y2, skip=[len(sub.operators) - 1]) == 1
    assert sub.outputs == [y2]


def test_topological_check_and_sort():
    m, _ = _chain()
    sub = m.subgraphs[0]
    sub.operators.reverse()
    problems = G.topological_problems(m)
    assert problems and "before op" in problems[0]
    with pytest.raises(ModelError, match="not in executable order"):
        G.check_topological(m)
    G.topological_sort(m)
    assert G.topological_problems(m) == []
    assert G.op_name(m, sub.operators[0]) == "ADD"
    # an operator writing a constant, or a tensor written twice
    sub.operators[1].outputs = [1]
    assert any("constant" in p for p in G.topological_problems(m))


def test_unique_names():
    m, _ = _chain()
    sub = m.subgraphs[0]
    sub.tensors[1].name = "x"
    sub.tensors[2].name = "x"
    assert G.make_names_unique(m) == 2
    assert len({t.name for t in sub.tensors}) == len(sub.tensors)
    assert G.unique_name(m, "fresh") == "fresh" and G.unique_name(m, "x") != "x"


def test_bypass_keeps_output_tensor():
    g = GraphBuilder()
    x = g.input("x", (2, 3))
    a = g.tensor("a", (2, 3))
    y = g.tensor("y", (2, 3))
    z = g.tensor("z", (2, 3))
    s = g.constant("s", np.array([2, 3], np.int32))
    g.op("RELU", [x], [a])
    g.op("RESHAPE", [a, s], [y], new_shape=[2, 3])
    g.op("NEG", [a], [z])
    g.output(y, z)
    m = g.build()
    x0 = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    want = run_ours(m, [x0])
    assert G.bypass(m, 1)
    G.eliminate_dead_code(m)
    sub = m.subgraphs[0]
    assert op_counts(m) == {"RELU": 1, "NEG": 1}
    assert [sub.tensors[t].name for t in sub.outputs] == ["y", "z"]  # the output tensor itself survives
    for got, w in zip(run_ours(m, [x0]), want):
        np.testing.assert_allclose(got, w)
    # an input passed straight to an output cannot be bypassed
    g = GraphBuilder()
    x = g.input("x", (2, 3))
    y = g.tensor("y", (2, 3))
    g.op("RESHAPE", [x, g.constant("s", np.array([2, 3], np.int32))], [y], new_shape=[2, 3])
    g.output(y)
    m = g.build()
    assert not G.bypass(m, 0) and len(m.subgraphs[0].operators) == 1
