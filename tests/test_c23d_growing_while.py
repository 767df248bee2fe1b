"""A WHILE whose body changes a loop variable's shape each iteration (issue 23; LiteRT marks the outputs dynamic and
re-prepares cond and body at each iteration's shapes): a sequence grown by CONCATENATION, as greedy decoders write.

The Python interpreter runs it as LiteRT does (kernels.control_flow._reshaping_loop: cond and body in interpreters
of their own, prepared again when the shapes change; the growing outputs sized at eval, the nodes reading them
prepared at eval too: tests/test_while23_readers.py); the C runtime, which plans every byte before the first invoke,
refuses it at load in one line naming the WHILE node and the loop variable (tests/test_call_site_shapes.py);
`edge check` says which runs it.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.errors import ModelError
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.oprunner import run_on, run_peer


def doubling_while(width: int, dtype: str = "FLOAT32", limit: float = 100):
    """The main graph's x [1, W] -> WHILE sum(x) < limit: x = CONCATENATION(x, x) along axis 1 -> y (length W * 2^k,
    k from x): (the GraphBuilder, y) for a caller to read y further or make it the output."""
    g = GraphBuilder()
    cond, body = g.subgraph("cond"), g.subgraph("body")
    cx = cond.input("x", (1, width), dtype)
    total, more = cond.tensor("total", (), dtype), cond.tensor("more", (), "BOOL")
    cond.op("SUM", [cx, cond.constant("axes", np.array([0, 1], np.int32))], [total], keep_dims=False)
    cond.op("LESS", [total, cond.constant("limit", np.array(limit, np.dtype(dtype.lower())))], [more])
    cond.output(more)
    bx = body.input("x", (1, width), dtype)
    twice = body.tensor("twice", (1, 2 * width), dtype)
    body.op("CONCATENATION", [bx, bx], [twice], axis=1)
    body.output(twice)
    x, y = g.input("x", (1, width), dtype), g.tensor("y", (1, width), dtype)
    g.op("WHILE", [x], [y], cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    return g, y


def doubling_model(width: int, dtype: str = "FLOAT32", limit: float = 100) -> bytes:
    """x [1, W] -> WHILE sum(x) < limit: x = CONCATENATION(x, x) along axis 1 -> y (length W * 2^k, k from x)."""
    g, y = doubling_while(width, dtype, limit)
    g.output(y)
    return write_model(g.build())


def decoder_while(g: GraphBuilder, start: int) -> tuple[list[int], list[int]]:
    """A greedy decoder's loop in ``g`` (a model or a subgraph builder): (i, n, tokens [1, start]) -> WHILE i < n:
    tokens = CONCATENATION(tokens, [[last * 3 + i] mod 17]) (the last token by STRIDED_SLICE), i += 1 -> (i_out,
    n_out, tokens_out declared [1, start], [1, start + n] at run time). Returns (its inputs, its outputs)."""
    cond, body = g.subgraph("cond"), g.subgraph("body")
    ci, cn, _ = cond.input("i", (), "INT32"), cond.input("n", (), "INT32"), cond.input("tokens", (1, start), "INT32")
    more = cond.tensor("more", (), "BOOL")
    cond.op("LESS", [ci, cn], [more])
    cond.output(more)
    bi, bn, bt = body.input("i", (), "INT32"), body.input("n", (), "INT32"), body.input("tokens", (1, start), "INT32")
    last = body.tensor("last", (1, 1), "INT32")
    body.op("STRIDED_SLICE", [bt, body.constant("begin", np.array([0, -1], np.int32)),
                              body.constant("end", np.array([1, 0], np.int32)),
                              body.constant("strides", np.array([1, 1], np.int32))], [last], end_mask=2)
    tripled, mixed = body.tensor("tripled", (1, 1), "INT32"), body.tensor("mixed", (1, 1), "INT32")
    body.op("MUL", [last, body.constant("three", np.array([[3]], np.int32))], [tripled],
            fused_activation_function="NONE")
    body.op("ADD", [tripled, bi], [mixed], fused_activation_function="NONE")
    token = body.tensor("token", (1, 1), "INT32")
    body.op("FLOOR_MOD", [mixed, body.constant("vocab", np.array([[17]], np.int32))], [token])
    grown, i_next = body.tensor("grown", (1, start + 1), "INT32"), body.tensor("i_next", (), "INT32")
    body.op("CONCATENATION", [bt, token], [grown], axis=1)
    body.op("ADD", [bi, body.constant("one", np.array(1, np.int32))], [i_next], fused_activation_function="NONE")
    body.output(i_next, bn, grown)
    ins = [g.input("i", (), "INT32"), g.input("n", (), "INT32"), g.input("tokens", (1, start), "INT32")]
    outs = [g.tensor("i_out", (), "INT32"), g.tensor("n_out", (), "INT32"), g.tensor("tokens_out", (1, start), "INT32")]
    g.op("WHILE", ins, outs, cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    return ins, outs


def decoder_model(start: int) -> bytes:
    """decoder_while as a model: its three outputs are the model's. The counter keeps its shape (a static output),
    the sequence grows by one each iteration."""
    g = GraphBuilder()
    g.output(*decoder_while(g, start)[1])
    return write_model(g.build())


def _decoded(start_tokens: np.ndarray, n: int) -> np.ndarray:
    tokens = list(start_tokens.reshape(-1))
    for i in range(n):
        tokens.append((tokens[-1] * 3 + i) % 17)
    return np.array([tokens], np.int32)


@pytest.mark.parametrize("width, x", [(2, [1, 2]), (2, [30, 40]), (3, [0.5, -0.25, 1.0]), (1, [200])])
@pytest.mark.parametrize("dtype", ["FLOAT32", "INT32"])
def test_a_loop_doubling_its_sequence_runs_as_litert(width, x, dtype):
    """Outputs of 1 to 128 elements by the data (0 to 7 iterations); LiteRT's reference kernels, exact."""
    x = np.array([x], np.dtype(dtype.lower()))
    model = doubling_model(width, dtype)
    (got,) = run_on("python", model, [x])
    (want,) = run_peer(model, [x], "litert", isolate=True)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("start, n", [(1, 0), (1, 5), (3, 12)])
def test_a_greedy_decoder_loop_grows_its_tokens_as_litert(start, n):
    """The counter keeps its shape, the tokens grow by one per iteration: LiteRT's answer and the arithmetic's."""
    rng = np.random.default_rng(start * 100 + n)
    feeds = [np.array(0, np.int32), np.array(n, np.int32), rng.integers(0, 17, (1, start)).astype(np.int32)]
    model = decoder_model(start)
    got = run_on("python", model, feeds)
    want = run_peer(model, feeds, "litert", isolate=True)
    assert [int(v) for v in got[:2]] == [int(v) for v in want[:2]] == [n, n]
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[2], _decoded(feeds[2], n))


def test_the_grown_output_is_reported_at_its_run_time_shape_and_invokes_repeat():
    """get_output_details / get_tensor show the last invoke's shape; a later invoke with other data re-sizes it."""
    interp = Interpreter(model_content=doubling_model(2))
    interp.allocate_tensors()
    (d,), out = interp.get_input_details(), interp.get_output_details()[0]["index"]
    for x, length in (([[1, 2]], 128), ([[30, 40]], 4), ([[60, 60]], 2)):
        interp.set_tensor(d["index"], np.array(x, np.float32))
        interp.invoke()
        assert interp.get_tensor(out).shape == (1, length)
        assert tuple(interp.get_output_details()[0]["shape"]) == (1, length)


def test_the_while_bound_holds_for_a_growing_loop():
    interp = Interpreter(model_content=doubling_model(2), max_while_iterations=3)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], np.array([[1, 2]], np.float32))
    with pytest.raises(ModelError, match=r"node 0 \(WHILE.*max_while_iterations=3"):
        interp.invoke()


def test_edge_check_says_which_runtime_runs_a_growing_loop():
    """A microcontroller (the C runtime) fails it naming the WHILE and the loop variable, and says a Linux target
    (the Python interpreter) runs it; raspberry-pi-4 runs it."""
    from edge_sdk.targets.check import check_model
    from tests.conftest import require_c_runtime

    model = doubling_model(2)
    pi = check_model(model, "raspberry-pi-4", stack=False)
    assert pi.verdict == "runs", pi
    require_c_runtime()
    mcu = check_model(model, "stm32f746-disco", stack=False)
    text = str(mcu.to_dict() if hasattr(mcu, "to_dict") else mcu)
    assert mcu.verdict != "runs" and "WHILE" in text and "'x'" in text and "changes this loop variable" in text, text
    assert "Linux target" in text, text


def test_a_growing_loop_past_the_arena_budget_stops_naming_the_node_and_iteration():
    """Each iteration's plan is held to the interpreter's arena_size: a sequence that outgrows it stops the invoke
    with an ArenaTooSmallError naming the WHILE node, the iteration and its shapes (never an unbounded allocation)."""
    interp = Interpreter(model_content=doubling_model(2, limit=1e9), arena_size=4096)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], np.ones((1, 2), np.float32))
    with pytest.raises(ModelError, match=r"node 0 \(WHILE v1\): iteration \d+ at \[\[1, \d+\]\]: arena too small"):
        interp.invoke()
