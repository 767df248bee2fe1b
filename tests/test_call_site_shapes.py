"""One subgraph called from two call sites at different shapes (issue 23): LiteRT re-prepares a callee at each call;
here each call site passing other shapes gets a copy of the subgraph of its own (kernels.control_flow
.with_call_site_copy, made by the Python prepare: Interpreter._prepare_in_call_order), and the bytes the C runtime
loads hold the same copies (c_loaded over that prepare), so both runtimes run each call at its caller's shapes.
A WHILE body that changes a loop variable's shape from one iteration to the next runs in the Python interpreter
(tests/test_c23d_growing_while.py); the C runtime refuses it in one line.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.errors import ModelError
from edge_sdk.model import read_model, write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.runtime.c_loaded import c_bytes
from edge_sdk.runtime.kernels import control_flow
from tests.oprunner import run_on, run_peer
from tests.test_shape_arithmetic import halving_loop

Q = dict(scale=0.05, zero_point=-3)


def _branches(g: GraphBuilder, length: int, dtype: str, tag: str = ""):
    """then: a + a, else: a * a, both declared at [1, length, 4]."""
    q = Q if dtype == "INT8" else {}
    then, other = g.subgraph(f"then{tag}"), g.subgraph(f"else{tag}")
    for sub, op in ((then, "ADD"), (other, "MUL")):
        a = sub.input("a", (1, length, 4), dtype, **q)
        b = sub.tensor("b", (1, length, 4), dtype, **q)
        sub.op(op, [a, a], [b], fused_activation_function="NONE")
        sub.output(b)
    return then.index, other.index


def if_at_lengths(lengths, dtype: str = "FLOAT32", shared: bool = True) -> bytes:
    """cond, x_n [1, n, 4] per n in ``lengths`` -> one IF per n -> y_n. ``shared``: every IF calls the same two
    branches (declared at the first length); else each IF its own pair, declared at its length (the static-shape
    model TFLM takes)."""
    g = GraphBuilder()
    q = Q if dtype == "INT8" else {}
    cond = g.input("cond", (1,), "BOOL")
    xs = [g.input(f"x{k}", (1, n, 4), dtype, **q) for k, n in enumerate(lengths)]
    pair = _branches(g, lengths[0], dtype) if shared else None
    for k, (x, n) in enumerate(zip(xs, lengths)):
        then, other = pair or _branches(g, n, dtype, tag=str(k))
        y = g.tensor(f"y{k}", (1, n, 4), dtype, **q)
        g.op("IF", [cond, x], [y], then_subgraph_index=then, else_subgraph_index=other)
        g.output(y)
    return write_model(g.build())


def while_at_lengths(lengths, shared: bool = True) -> bytes:
    """Per n in ``lengths``: (i0, x_n [1, n]) -> WHILE i < 3: (i + 1, x * 0.5) -> (i_n, y_n). ``shared``: every
    WHILE calls the same cond and body (declared at the first length); else each its own, at its length."""
    g = GraphBuilder()
    pair = halving_loop(g, lengths[0]) if shared else None
    for k, n in enumerate(lengths):
        cond, body = pair or halving_loop(g, n, tag=str(k))
        i, x = g.input(f"i{k}", (), "INT32"), g.input(f"x{k}", (1, n), "FLOAT32")
        i_out, x_out = g.tensor(f"i_out{k}", (), "INT32"), g.tensor(f"x_out{k}", (1, n), "FLOAT32")
        g.op("WHILE", [i, x], [i_out, x_out], cond_subgraph_index=cond, body_subgraph_index=body)
        g.output(i_out)
        g.output(x_out)
    return write_model(g.build())


def _if_feeds(lengths, dtype: str, cond: bool, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = [rng.integers(-128, 128, (1, n, 4), dtype=np.int8) if dtype == "INT8" else
          rng.standard_normal((1, n, 4)).astype(np.float32) for n in lengths]
    return [np.array([cond]), *xs]


def _close_to(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    """Float within 1e-4 of each output's range (LiteRT's reference kernels)."""
    assert [g.shape for g in got] == [w.shape for w in want]
    for g_, w_ in zip(got, want):
        span = float(np.max(w_) - np.min(w_)) or 1.0
        assert np.abs(g_.astype(np.float64) - w_).max(initial=0) <= 1e-4 * span


@pytest.mark.parametrize("lengths", [(6, 3), (2, 7, 2, 5)])
@pytest.mark.parametrize("cond", [True, False])
def test_if_branches_shared_by_call_sites_at_other_lengths_run_as_litert(runtime, lengths, cond):
    """Two to four IF nodes, one pair of branches, other lengths: each call runs at its caller's shape (was: a
    ModelError 'a subgraph runs at one set of input shapes' / C: 'a branch input differs from the node's input')."""
    model = if_at_lengths(lengths)
    xs = _if_feeds(lengths, "FLOAT32", cond, len(lengths))
    _close_to(run_on(runtime, model, xs), run_peer(model, xs, "litert"))


@pytest.mark.parametrize("cond", [True, False])
def test_int8_branches_shared_by_call_sites_are_bit_exact_with_tflm(runtime, cond):
    """int8: TFLM (static shapes only) runs the same graph with a pair of branches per IF; ours run the shared one."""
    lengths = (5, 2)
    xs = _if_feeds(lengths, "INT8", cond, 9)
    got = run_on(runtime, if_at_lengths(lengths, "INT8"), xs)
    want = run_peer(if_at_lengths(lengths, "INT8", shared=False), xs, "tflm", isolate=True)
    for g_, w_ in zip(got, want):
        np.testing.assert_array_equal(g_, w_)


def test_a_while_body_shared_by_call_sites_at_other_lengths_runs_as_litert(runtime):
    lengths = (5, 11, 1)
    rng = np.random.default_rng(5)
    xs = [v for n in lengths for v in (np.array(0, np.int32), rng.standard_normal((1, n)).astype(np.float32))]
    # LiteRT 2.3.0 fails the invoke of this model ("Node number 0 (WHILE) failed to invoke"): its peer is the same
    # graph with a cond and body per WHILE
    got, want = run_on(runtime, while_at_lengths(lengths), xs), run_peer(while_at_lengths(lengths, False), xs, "litert")
    assert [int(v) for v in got[0::2]] == [int(v) for v in want[0::2]] == [3, 3, 3]
    _close_to(got[1::2], want[1::2])


def test_the_c_runtimes_bytes_hold_a_copy_per_call_site_at_other_shapes():
    """c_bytes: the second IF calls appended copies of both branches, declared at its length; the first IF, the
    original subgraphs and every node index stay. The model on an equal-shape call pays no copy."""
    model = read_model(c_bytes(if_at_lengths((6, 3)))[0])
    assert len(model.subgraphs) == 5
    first, second = model.subgraphs[0].operators
    assert (first.options["then_subgraph_index"], first.options["else_subgraph_index"]) == (1, 2)
    assert (second.options["then_subgraph_index"], second.options["else_subgraph_index"]) == (3, 4)
    for s in (3, 4):
        sg = model.subgraphs[s]
        assert tuple(sg.tensors[sg.inputs[0]].shape) == (1, 3, 4) and sg.name.endswith("@0.1"), sg.name
    same = read_model(c_bytes(if_at_lengths((6, 6)))[0])
    assert len(same.subgraphs) == 3


def test_a_resized_input_gives_only_the_call_site_it_reaches_a_copy(runtime):
    """Two IF nodes at [1, 6, 4] (one pair of branches) and resize_tensor_input of the second input to [1, 9, 4]:
    LiteRT's result at each call's length."""
    model = if_at_lengths((6, 6))
    rng = np.random.default_rng(2)
    xs = [np.array([True]), rng.standard_normal((1, 6, 4)).astype(np.float32),
          rng.standard_normal((1, 9, 4)).astype(np.float32)]
    interp = Interpreter(model_content=model, backend=runtime)
    interp.resize_tensor_input(interp.get_input_details()[2]["index"], [1, 9, 4])
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), xs):
        interp.set_tensor(d["index"], x)
    interp.invoke()
    got = [interp.get_tensor(d["index"]) for d in interp.get_output_details()]
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

    peer = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF, num_threads=1)
    peer.resize_tensor_input(peer.get_input_details()[2]["index"], [1, 9, 4])
    peer.allocate_tensors()
    for d, x in zip(peer.get_input_details(), xs):
        peer.set_tensor(d["index"], x)
    peer.invoke()
    _close_to(got, [peer.get_tensor(d["index"]) for d in peer.get_output_details()])


def test_call_sites_past_the_copy_bound_are_refused_in_one_line(runtime, monkeypatch):
    """Past MAX_CALL_SITE_COPIES (here 2: both branches for the second IF) the third IF at other shapes is a
    ModelError naming both calls."""
    monkeypatch.setattr(control_flow, "MAX_CALL_SITE_COPIES", 2)  # the branches of one IF
    interp = Interpreter(model_content=if_at_lengths((6, 3, 2)), backend=runtime)
    with pytest.raises(ModelError) as err:
        interp.allocate_tensors()
    text = str(err.value)
    assert "\n" not in text and "(IF" in text, text
    if runtime == "python":
        assert "node 2 (IF" in text and "input shapes [[1, 2, 4]]" in text and "node 0 (IF" in text, text
    else:  # the C runtime loads the model without the copies then, and names its own refusal of the first call
        assert "node 1 (IF" in text and "a branch input differs from the node's input" in text, text


def test_a_while_body_that_changes_a_loop_variables_shape_is_refused_in_one_line_by_the_c_runtime():
    """body: x -> CONCATENATION(x, x) (its length doubles every iteration): dynamic shapes, refused at load by the C
    runtime, naming the WHILE node and the loop variable (the Python interpreter runs it:
    tests/test_c23d_growing_while.py)."""
    from tests.test_c23d_growing_while import doubling_model

    interp = Interpreter(model_content=doubling_model(2), backend="c")
    with pytest.raises(ModelError) as err:
        interp.allocate_tensors()
    text = str(err.value)
    assert "\n" not in text and "node 0 (WHILE" in text and "tensor 0 'x'" in text, text
    assert "changes this loop variable's shape" in text, text


def test_edge_check_on_a_microcontroller_runs_branches_shared_at_other_shapes():
    """`edge check MODEL --target stm32f746-disco` of an int8 model whose two IF nodes share branches at lengths 6
    and 3: the C runtime's own prepare (board layout) takes the copies; its tensor plan is the Python
    interpreter's of the bytes it loads (was: refused, 'a branch input differs from the node's input')."""
    from edge_sdk.targets import c_check
    from edge_sdk.targets.check import check_model
    from tests.conftest import require_c_runtime

    require_c_runtime()
    model = if_at_lengths((6, 3), "INT8")
    assert check_model(model, "stm32f746-disco", stack=False).verdict == "runs"
    plan = c_check.target_plan(model, c_check.HOST)
    assert plan.ok, plan.message
    python = Interpreter(model_content=c_bytes(model)[0])
    python.allocate_tensors()
    assert plan.figures["tensor_total"] == python.arena_plan().total
