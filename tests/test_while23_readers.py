"""Nodes reading an output sized at eval (issue 23): a greedy decoder's grown token sequence (a WHILE whose body
grows a loop variable by CONCATENATION) post-processed by SLICE / GATHER / CAST / ADD / MEAN / QUANTIZE, and
WHERE's / UNIQUE's outputs read by other ops. LiteRT marks such tensors dynamic and prepares the nodes after them at
invoke; the Python interpreter does too (interpreter.PreparedAtEval: the kernel prepared at the shapes of this
invoke, again when they change, its outputs sized at eval outside the arena). Peers: LiteRT's reference kernels
(exact for integers, float within 1e-4 of the range). The C runtime still refuses the growing WHILE at load.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.errors import ArenaTooSmallError, ModelError, UnsupportedOpError
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.oprunner import run_on, run_peer
from tests.test_c23d_growing_while import decoder_while, doubling_while

VOCAB, DIM = 17, 4


def _decoder_loop(g: GraphBuilder, start: int) -> tuple[list[int], int]:
    """decoder_while's inputs and its grown tokens tensor (declared [1, start]; [1, start + n] at run time)."""
    ins, outs = decoder_while(g, start)
    return ins, outs[2]


def post_processed_decoder(start: int) -> bytes:
    """The decoder's tokens, post-processed: SLICE drops the prompt's first token, CAST to float, ADD 0.5 ->
    'shifted' [1, L-1]; GATHER of a [17, 4] embedding table -> [1, L, 4], MEAN over the tokens -> 'mean' [1, 4]
    (static again); the tokens' last one by STRIDED_SLICE -> 'last' [1, 1]."""
    g = GraphBuilder()
    _, tokens = _decoder_loop(g, start)
    sliced, floats = g.tensor("sliced", (1, start), "INT32"), g.tensor("floats", (1, start), "FLOAT32")
    g.op("SLICE", [tokens, g.constant("begin", np.array([0, 1], np.int32)),
                   g.constant("size", np.array([1, -1], np.int32))], [sliced])
    g.op("CAST", [sliced], [floats])
    shifted = g.tensor("shifted", (1, start), "FLOAT32")
    g.op("ADD", [floats, g.constant("half", np.array([[0.5]], np.float32))], [shifted],
         fused_activation_function="NONE")
    table = np.random.default_rng(7).standard_normal((VOCAB, DIM)).astype(np.float32)
    embedded, mean = g.tensor("embedded", (1, start, DIM), "FLOAT32"), g.tensor("mean", (1, DIM), "FLOAT32")
    g.op("GATHER", [g.constant("table", table), tokens], [embedded], axis=0)
    g.op("MEAN", [embedded, g.constant("axis", np.array([1], np.int32))], [mean], keep_dims=False)
    last = g.tensor("last", (1, 1), "INT32")
    g.op("STRIDED_SLICE", [tokens, g.constant("b", np.array([0, -1], np.int32)),
                           g.constant("e", np.array([1, 0], np.int32)),
                           g.constant("s", np.array([1, 1], np.int32))], [last], end_mask=2)
    g.output(shifted, mean, last)
    return _dynamic(g, {"tokens_out": (1, -1), "sliced": (1, -1), "floats": (1, -1), "shifted": (1, -1),
                        "embedded": (1, -1, DIM)})


def _dynamic(g: GraphBuilder, signatures: dict[str, tuple[int, ...]]) -> bytes:
    """The model with these main-subgraph tensors' shape_signature (-1: a size known at invoke), as converters
    write the tensors after a dynamic loop (LiteRT's SLICE keeps a fully specified output shape)."""
    model = g.build()
    for t in model.subgraphs[0].tensors:
        if t.name in signatures:
            t.shape_signature = signatures[t.name]
    return write_model(model)


def doubling_then(width: int, dtype: str, tail: str) -> bytes:
    """x [1, W] -> WHILE sum(x) < 100: x = CONCATENATION(x, x) -> y [1, W * 2^k] -> ``tail``: "relu_add" (RELU, ADD a
    [1, 1] constant: float32 / int32) or "quantize" (QUANTIZE to int8, scale 0.5, zero point -3: float32)."""
    g, y = doubling_while(width, dtype)
    np_type = np.dtype(dtype.lower())
    if tail == "relu_add":
        r, z = g.tensor("r", (1, width), dtype), g.tensor("z", (1, width), dtype)
        g.op("RELU" if dtype == "FLOAT32" else "ABS", [y], [r])
        g.op("ADD", [r, g.constant("c", np.array([[3]], np_type))], [z], fused_activation_function="NONE")
    else:
        z = g.tensor("z", (1, width), "INT8", scale=[0.5], zero_point=[-3])
        g.op("QUANTIZE", [y], [z])
    g.output(z)
    return _dynamic(g, {"y": (1, -1), "r": (1, -1), "z": (1, -1)})


def _decoder_feeds(start: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(start * 31 + n)
    return [np.array(0, np.int32), np.array(n, np.int32), rng.integers(0, VOCAB, (1, start)).astype(np.int32)]


def _assert_like_litert(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if g.dtype.kind == "f":
            span = float(np.ptp(w)) if w.size else 0.0
            np.testing.assert_allclose(g, w, rtol=0, atol=1e-4 * max(span, 1.0))
        else:
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("start, n", [(1, 1), (2, 3), (3, 9)])
def test_a_decoder_post_processing_its_grown_tokens_runs_as_litert(start, n):
    """SLICE / CAST / ADD, GATHER / MEAN and STRIDED_SLICE after the WHILE, at 1 to 12 tokens."""
    model, feeds = post_processed_decoder(start), _decoder_feeds(start, n)
    got = run_on("python", model, feeds)
    _assert_like_litert(got, run_peer(model, feeds, "litert", isolate=True))
    assert got[0].shape == (1, start + n - 1)


@pytest.mark.parametrize("width, x", [(2, [1, 2]), (3, [0.5, -0.25, 1.0]), (2, [-5, 60]), (1, [150])])
@pytest.mark.parametrize("dtype, tail", [("FLOAT32", "relu_add"), ("INT32", "relu_add"), ("FLOAT32", "quantize")])
def test_elementwise_readers_of_a_doubled_sequence_run_as_litert(width, x, dtype, tail):
    x = np.array([x], np.dtype(dtype.lower()))
    model = doubling_then(width, dtype, tail)
    _assert_like_litert(run_on("python", model, [x]), run_peer(model, [x], "litert", isolate=True))


def test_readers_are_prepared_again_when_the_length_changes_between_invokes():
    """One interpreter, three invokes at 4, 1 and 10 generated tokens: each output and its details at that
    invoke's shape; the static output keeps its shape."""
    interp = Interpreter(model_content=post_processed_decoder(2))
    interp.allocate_tensors()
    ins, outs = interp.get_input_details(), interp.get_output_details()
    table = np.random.default_rng(7).standard_normal((VOCAB, DIM)).astype(np.float32)
    for n in (4, 1, 10):
        feeds = _decoder_feeds(2, n)
        for d, v in zip(ins, feeds):
            interp.set_tensor(d["index"], v)
        interp.invoke()
        tokens = _decoded(feeds[2], n)
        np.testing.assert_array_equal(interp.get_tensor(outs[0]["index"]), tokens[:, 1:].astype(np.float32) + 0.5)
        np.testing.assert_allclose(interp.get_tensor(outs[1]["index"]), table[tokens].mean(axis=1), atol=1e-5)
        np.testing.assert_array_equal(interp.get_tensor(outs[2]["index"]), tokens[:, -1:])
        details = interp.get_output_details()
        assert [tuple(d["shape"]) for d in details] == [(1, 1 + n), (1, DIM), (1, 1)]


def _decoded(start_tokens: np.ndarray, n: int) -> np.ndarray:
    tokens = list(start_tokens.reshape(-1))
    for i in range(n):
        tokens.append((tokens[-1] * 3 + i) % VOCAB)
    return np.array([tokens], np.int32)


def test_a_reader_refusing_the_shapes_of_this_invoke_names_itself_and_the_shapes():
    """ADD of the grown [1, L] and a [1, 3] constant broadcasts only at L = 3 (or 1): at L = 4 the invoke stops with
    one line naming the ADD and its input shapes (LiteRT's invoke fails too)."""
    g = GraphBuilder()
    _, tokens = _decoder_loop(g, 1)
    z = g.tensor("z", (1, 3), "INT32")
    g.op("ADD", [tokens, g.constant("c", np.array([[1, 2, 3]], np.int32))], [z], fused_activation_function="NONE")
    g.output(z)
    interp = Interpreter(model_content=_dynamic(g, {"tokens_out": (1, -1)}))
    interp.allocate_tensors()
    for d, v in zip(interp.get_input_details(), _decoder_feeds(1, 2)):
        interp.set_tensor(d["index"], v)
    interp.invoke()  # 3 tokens: broadcasts
    np.testing.assert_array_equal(interp.get_tensor(interp.get_output_details()[0]["index"]).shape, (1, 3))
    interp.set_tensor(interp.get_input_details()[1]["index"], np.array(3, np.int32))
    with pytest.raises(ModelError) as err:
        interp.invoke()
    text = str(err.value)
    assert "\n" not in text and "node 1 (ADD" in text and "[[1, 4], [1, 3]]" in text, text


def test_a_reader_output_past_the_arena_budget_stops_naming_the_node():
    """The outputs prepared at eval are held to arena_size: a [1, L, 4] float GATHER of 100 tokens (1,600 B) past a
    1,024 B budget is an ArenaTooSmallError naming the GATHER (the loop's own plans fit it)."""
    interp = Interpreter(model_content=post_processed_decoder(1), arena_size=1024)
    interp.allocate_tensors()
    for d, v in zip(interp.get_input_details(), _decoder_feeds(1, 99)):
        interp.set_tensor(d["index"], v)
    with pytest.raises(ArenaTooSmallError, match=r"node 4 \(GATHER v1\): prepared at eval .*outputs too small"):
        interp.invoke()


def test_a_control_flow_node_reading_a_grown_sequence_is_refused_in_one_line():
    """An IF whose branch input is the grown sequence: its branches are planned into the arena, so it is refused at
    prepare, naming the input and the WHILE that sizes it."""
    g = GraphBuilder()
    ins, tokens = _decoder_loop(g, 1)
    branch = g.subgraph("branch")
    b = branch.input("t", (1, 1), "INT32")
    branch.output(b)
    flag, out = g.tensor("flag", (), "BOOL"), g.tensor("out", (1, 1), "INT32")
    g.op("LESS", [ins[0], ins[1]], [flag])
    g.op("IF", [flag, tokens], [out], then_subgraph_index=branch.index, else_subgraph_index=branch.index)
    g.output(out)
    interp = Interpreter(model_content=write_model(g.build()))
    with pytest.raises(UnsupportedOpError) as err:
        interp.allocate_tensors()
    text = str(err.value)
    assert "\n" not in text and "node 2 (IF" in text and "node 0, WHILE" in text, text


def test_edge_check_runs_a_post_processing_decoder_on_a_linux_target_and_the_c_runtime_refuses_it():
    from edge_sdk.targets.check import check_model
    from tests.conftest import require_c_runtime

    for model in (post_processed_decoder(2), decoder_in_a_branch(2)):
        assert check_model(model, "raspberry-pi-4", stack=False).verdict == "runs"
    require_c_runtime()
    for model, where in ((post_processed_decoder(2), "node 0 (WHILE"), (decoder_in_a_branch(2), "subgraph 1 node 0")):
        mcu = check_model(model, "stm32f746-disco", stack=False)
        text = str(mcu.to_dict() if hasattr(mcu, "to_dict") else mcu)
        assert mcu.verdict != "runs" and where in text and "'tokens'" in text, text
        assert "changes this loop variable" in text, text


def test_invoke_traced_has_rows_for_the_nodes_of_a_growing_loop_and_its_readers():
    """The body and cond of a growing WHILE run in interpreters of their own; invoke_traced still has a row per
    step they run, named by the model's subgraph and node (as a WHILE of static shapes): [1, 2] doubled 6 times."""
    interp = Interpreter(model_content=doubling_then(2, "FLOAT32", "relu_add"))
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], np.array([[1, 2]], np.float32))
    rows = interp.invoke_traced()
    ops = [(r["subgraph"], r["node"], r["op"]) for r in rows]
    assert ops.count((2, 0, "CONCATENATION")) == 6, ops
    assert ops.count((1, 0, "SUM")) == ops.count((1, 1, "LESS")) == 7, ops
    assert ops[-3:] == [(0, 0, "WHILE"), (0, 1, "RELU"), (0, 2, "ADD")], ops
    assert all(isinstance(r["ns"], int) and r["ns"] >= 0 for r in rows)
    assert interp.get_tensor(interp.get_output_details()[0]["index"]).shape == (1, 128)


def decoder_in_a_branch(start: int) -> bytes:
    """IF i < n: the decoder loop (then) else the tokens as they are -> 'tokens_out' [1, start + n] or [1, start] ->
    CAST to float -> 'floats'. The IF's output is sized at eval as the loop's is."""
    g = GraphBuilder()
    then = g.subgraph("decode")
    t_ins, t_tokens = _decoder_loop(then, start)
    then.output(t_tokens)
    keep = g.subgraph("keep")
    keep.input("i", (), "INT32"), keep.input("n", (), "INT32")
    keep.output(keep.input("tokens", (1, start), "INT32"))
    ins = [g.input("i", (), "INT32"), g.input("n", (), "INT32"), g.input("tokens", (1, start), "INT32")]
    flag, tokens = g.tensor("flag", (), "BOOL"), g.tensor("tokens_out", (1, start), "INT32")
    floats = g.tensor("floats", (1, start), "FLOAT32")
    g.op("LESS", ins[:2], [flag])
    g.op("IF", [flag, *ins], [tokens], then_subgraph_index=then.index, else_subgraph_index=keep.index)
    g.op("CAST", [tokens], [floats])
    g.output(tokens, floats)
    return _dynamic(g, {"tokens_out": (1, -1), "floats": (1, -1)})


@pytest.mark.parametrize("start, n", [(1, 0), (2, 5)])
def test_a_growing_loop_in_an_if_branch_runs_as_litert(start, n):
    model, feeds = decoder_in_a_branch(start), _decoder_feeds(start, n)
    got = run_on("python", model, feeds)
    _assert_like_litert(got, run_peer(model, feeds, "litert", isolate=True))
    np.testing.assert_array_equal(got[0], _decoded(feeds[2], n))


def decoder_in_a_while_body(start: int, rounds_to: int, step: int) -> bytes:
    """An outer WHILE n < rounds_to: (i, n, tokens) = the decoder loop (i up to n: tokens grow), n += step, its body
    returning the inner loop's grown tokens (sized at eval) -> 'tokens_out' [1, start + final n], then CAST."""
    g = GraphBuilder()
    cond, body = g.subgraph("outer_cond"), g.subgraph("outer_body")
    cn = (cond.input("i", (), "INT32"), cond.input("n", (), "INT32"), cond.input("tokens", (1, start), "INT32"))[1]
    more = cond.tensor("more", (), "BOOL")
    cond.op("LESS", [cn, cond.constant("rounds_to", np.array(rounds_to, np.int32))], [more])
    cond.output(more)
    _, (bi, bn, b_tokens) = decoder_while(body, start)
    bn_next = body.tensor("n_next", (), "INT32")
    body.op("ADD", [bn, body.constant("step", np.array(step, np.int32))], [bn_next], fused_activation_function="NONE")
    body.output(bi, bn_next, b_tokens)
    ins = [g.input("i", (), "INT32"), g.input("n", (), "INT32"), g.input("tokens", (1, start), "INT32")]
    outs = [g.tensor("i_out", (), "INT32"), g.tensor("n_out", (), "INT32"), g.tensor("tokens_out", (1, start), "INT32")]
    floats = g.tensor("floats", (1, start), "FLOAT32")
    g.op("WHILE", ins, outs, cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    g.op("CAST", [outs[2]], [floats])
    g.output(*outs, floats)
    return _dynamic(g, {"tokens_out": (1, -1), "floats": (1, -1)})


@pytest.mark.parametrize("start, n, rounds_to, step", [(1, 1, 7, 2), (2, 0, 5, 3), (1, 9, 4, 1)])
def test_a_growing_loop_in_a_while_body_runs_as_litert(start, n, rounds_to, step):
    """The outer loop's variable grows with the inner loop's sequence (0 to 3 outer rounds, 0 to 10 tokens)."""
    model, feeds = decoder_in_a_while_body(start, rounds_to, step), _decoder_feeds(start, n)
    got = run_on("python", model, feeds)
    _assert_like_litert(got, run_peer(model, feeds, "litert", isolate=True))
    assert int(got[1]) >= rounds_to or n >= rounds_to


@pytest.mark.parametrize("builder", ["while_body", "composite"])
def test_a_growing_loop_returned_by_a_callee_is_refused_by_the_c_runtime_in_one_line(builder):
    from tests.conftest import require_c_runtime

    require_c_runtime()
    model = decoder_in_a_while_body(1, 7, 2) if builder == "while_body" else decoder_in_a_composite(2)
    with pytest.raises(ModelError) as err:
        Interpreter(model_content=model, backend="c").allocate_tensors()
    text = str(err.value)
    assert "\n" not in text and "WHILE" in text and "changes this loop variable's shape" in text, text


def decoder_in_a_composite(start: int) -> bytes:
    """A STABLEHLO_COMPOSITE whose decomposition is the decoder loop, returning (the counter, the grown tokens) ->
    'tokens_out' [1, start + n] (sized at eval as the loop's), then CAST -> 'floats'."""
    from tests.oprunner import flex_options

    g = GraphBuilder()
    dec = g.subgraph("odml.decode")
    _, (di, _, d_tokens) = decoder_while(dec, start)
    dec.output(di, d_tokens)
    ins = [g.input("i", (), "INT32"), g.input("n", (), "INT32"), g.input("tokens", (1, start), "INT32")]
    count, tokens = g.tensor("count", (), "INT32"), g.tensor("tokens_out", (1, start), "INT32")
    floats = g.tensor("floats", (1, start), "FLOAT32")
    g.op("STABLEHLO_COMPOSITE", ins, [count, tokens], name="odml.decode", decomposition_subgraph_index=dec.index,
         composite_attributes=flex_options({"vocab": VOCAB}), composite_attributes_format="FLEXBUFFERS", version=1)
    g.op("CAST", [tokens], [floats])
    g.output(count, tokens, floats)
    return _dynamic(g, {"tokens_out": (1, -1), "floats": (1, -1)})


@pytest.mark.parametrize("start, n", [(1, 0), (2, 4), (3, 11)])
def test_a_growing_loop_in_a_composite_runs_as_litert(start, n):
    model, feeds = decoder_in_a_composite(start), _decoder_feeds(start, n)
    got = run_on("python", model, feeds)
    _assert_like_litert(got, run_peer(model, feeds, "litert", isolate=True))
    np.testing.assert_array_equal(got[1], _decoded(feeds[2], n))


def test_readers_of_a_sized_at_eval_tensor_stay_on_the_interpreter_under_a_delegate():
    """A delegate would prepare them at their placeholder shapes: they run on the interpreter's kernels, said in
    node_backends; the outputs are the ones without a delegate."""
    model, feeds = post_processed_decoder(2), _decoder_feeds(2, 5)
    interp = Interpreter(model_content=model, delegates=["litert"])
    backends = interp.node_backends(0)
    assert all(b == ("cpu", "its input is sized at eval: the interpreter prepares it then") for b in backends[1:])
    interp.allocate_tensors()
    for d, v in zip(interp.get_input_details(), feeds):
        interp.set_tensor(d["index"], v)
    interp.invoke()
    got = [interp.get_tensor(d["index"]) for d in interp.get_output_details()]
    _assert_like_litert(got, run_on("python", model, feeds))


@pytest.mark.parametrize("count", [6, 40])
def test_a_mask_selection_where_then_gather_nd_runs_as_litert(count):
    """x [count] float, WHERE(x > 0) -> [k, 1] INT64 -> GATHER_ND(x, .) -> [k]: boolean-mask selection, k from the
    data (6 elements: the indices also key the prepare by value; 40: by shape only)."""
    g = GraphBuilder()
    x = g.input("x", (count,), "FLOAT32")
    mask, where = g.tensor("mask", (count,), "BOOL"), g.tensor("where", (count, 1), "INT64")
    picked = g.tensor("picked", (count,), "FLOAT32")
    g.op("GREATER", [x, g.constant("zero", np.array(0, np.float32))], [mask])
    g.op("WHERE", [mask], [where])
    g.op("GATHER_ND", [x, where], [picked])
    g.output(picked)
    model = _dynamic(g, {"where": (-1, 1), "picked": (-1,)})
    for seed in (1, 2):
        x_value = np.random.default_rng(seed).standard_normal(count).astype(np.float32)
        got = run_on("python", model, [x_value])
        _assert_like_litert(got, run_peer(model, [x_value], "litert", isolate=True))
        np.testing.assert_array_equal(got[0], x_value[x_value > 0])
