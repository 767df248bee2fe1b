"""Control flow (issue 23 point 2): IF and WHILE with their subgraphs, in both runtimes (the ``runtime`` grid),
against LiteRT's reference kernels and TFLM (bit-exact for int8); the arena plans of both runtimes agree; calls
that form a cycle are refused at load; ``max_while_iterations`` stops a loop that does not end.

Models are built with edge_sdk.model.builder.GraphBuilder (``g.subgraph(name)`` for the branches and bodies)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.errors import ModelError, UnsupportedOpError
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.conftest import needs_c_runtime
from tests.oprunner import check_on, peer_outputs, refused_on, run_on

Q = dict(scale=0.05, zero_point=-3)  # the int8 activations' quantization


def _act(g, name, shape, dtype, **extra):
    quant = Q if dtype == "INT8" else {}
    return g.tensor(name, shape, dtype, **quant, **extra)


def if_model(dtype: str) -> bytes:
    """y = x + x when cond, else x * x (two branches of different ops); shape (1, 4)."""
    g = GraphBuilder()
    cond = g.input("cond", (1,), "BOOL")
    x = g.input("x", (1, 4), dtype, **(Q if dtype == "INT8" else {}))
    y = _act(g, "y", (1, 4), dtype)
    then, other = g.subgraph("then"), g.subgraph("else")
    for sub, op in ((then, "ADD"), (other, "MUL")):
        a = sub.input("a", (1, 4), dtype, **(Q if dtype == "INT8" else {}))
        b = _act(sub, "b", (1, 4), dtype)
        sub.op(op, [a, a], [b], fused_activation_function="NONE")
        sub.output(b)
    g.op("IF", [cond, x], [y], then_subgraph_index=then.index, else_subgraph_index=other.index)
    g.output(y)
    return write_model(g.build())


def counting_while_model(limit: int = 10, step: float = 0.5) -> bytes:
    """(i, x) = (0, x); while i < limit: (i, x) = (i + 1, x + step): a counting loop (int32 counter, float state)."""
    g = GraphBuilder()
    i0 = g.input("i", (1,), "INT32")
    x0 = g.input("x", (1, 3), "FLOAT32")
    i1, x1 = g.tensor("i_out", (1,), "INT32"), g.tensor("x_out", (1, 3), "FLOAT32")
    cond, body = g.subgraph("cond"), g.subgraph("body")
    ci, cx = cond.input("i", (1,), "INT32"), cond.input("x", (1, 3), "FLOAT32")
    lim = cond.constant("limit", np.array([limit], np.int32))
    go = cond.tensor("go", (1,), "BOOL")
    cond.op("LESS", [ci, lim], [go])
    cond.output(go)
    bi, bx = body.input("i", (1,), "INT32"), body.input("x", (1, 3), "FLOAT32")
    one = body.constant("one", np.array([1], np.int32))
    inc = body.constant("step", np.full((1, 3), step, np.float32))
    ni, nx = body.tensor("i_next", (1,), "INT32"), body.tensor("x_next", (1, 3), "FLOAT32")
    body.op("ADD", [bi, one], [ni], fused_activation_function="NONE")
    body.op("ADD", [bx, inc], [nx], fused_activation_function="NONE")
    body.output(ni, nx)
    g.op("WHILE", [i0, x0], [i1, x1], cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    g.output(i1, x1)
    return write_model(g.build())


def halving_while_model() -> bytes:
    """x = x * 0.5 until sum(x) < 1 (float state; the cond subgraph reduces)."""
    g = GraphBuilder()
    x0 = g.input("x", (1, 4), "FLOAT32")
    x1 = g.tensor("x_out", (1, 4), "FLOAT32")
    cond, body = g.subgraph("cond"), g.subgraph("body")
    cx = cond.input("x", (1, 4), "FLOAT32")
    axes = cond.constant("axes", np.array([1], np.int32))
    total = cond.tensor("sum", (1,), "FLOAT32")  # (LiteRT's WHILE wants a cond output of rank 1)
    one = cond.constant("one", np.ones((1,), np.float32))
    go = cond.tensor("go", (1,), "BOOL")
    cond.op("SUM", [cx, axes], [total], keep_dims=False)
    cond.op("GREATER_EQUAL", [total, one], [go])
    cond.output(go)
    bx = body.input("x", (1, 4), "FLOAT32")
    half = body.constant("half", np.full((1, 4), 0.5, np.float32))
    nx = body.tensor("x_next", (1, 4), "FLOAT32")
    body.op("MUL", [bx, half], [nx], fused_activation_function="NONE")
    body.output(nx)
    g.op("WHILE", [x0], [x1], cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    g.output(x1)
    return write_model(g.build())


def nested_model(dtype: str) -> bytes:
    """A WHILE of 5 iterations whose body holds an IF: x = x + x while i < 2, else x * x... i.e. the branch
    changes with the counter (int8: saturating int8 arithmetic, float: exact)."""
    q = Q if dtype == "INT8" else {}
    g = GraphBuilder()
    i0, x0 = g.input("i", (1,), "INT32"), g.input("x", (1, 4), dtype, **q)
    i1, x1 = g.tensor("i_out", (1,), "INT32"), _act(g, "x_out", (1, 4), dtype)
    cond, body, then, other = (g.subgraph(n) for n in ("cond", "body", "then", "else"))
    ci, _ = cond.input("i", (1,), "INT32"), cond.input("x", (1, 4), dtype, **q)
    go = cond.tensor("go", (1,), "BOOL")
    cond.op("LESS", [ci, cond.constant("five", np.array([5], np.int32))], [go])
    cond.output(go)
    bi, bx = body.input("i", (1,), "INT32"), body.input("x", (1, 4), dtype, **q)
    small = body.tensor("small", (1,), "BOOL")
    body.op("LESS", [bi, body.constant("two", np.array([2], np.int32))], [small])
    ni, nx = body.tensor("i_next", (1,), "INT32"), _act(body, "x_next", (1, 4), dtype)
    body.op("IF", [small, bx], [nx], then_subgraph_index=then.index, else_subgraph_index=other.index)
    body.op("ADD", [bi, body.constant("one", np.array([1], np.int32))], [ni], fused_activation_function="NONE")
    body.output(ni, nx)
    for sub, op in ((then, "ADD"), (other, "MUL")):
        a = sub.input("a", (1, 4), dtype, **q)
        b = _act(sub, "b", (1, 4), dtype)
        sub.op(op, [a, a], [b], fused_activation_function="NONE")
        sub.output(b)
    g.op("WHILE", [i0, x0], [i1, x1], cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    g.output(i1, x1)
    return write_model(g.build())


X_FLOAT = np.array([[0.5, -1.25, 2.0, 3.5]], np.float32)
X_INT8 = np.array([[7, -20, 33, 90]], np.int8)


@pytest.mark.parametrize("dtype", ["FLOAT32", "INT8"])
@pytest.mark.parametrize("cond", [True, False])
def test_if_chooses_its_branch(runtime, dtype, cond):
    model = if_model(dtype)
    x = X_INT8 if dtype == "INT8" else X_FLOAT
    inputs = [np.array([cond]), x]
    if dtype == "INT8":
        check_on(runtime, model, inputs, "tflm")
        check_on(runtime, model, inputs, "litert", atol=1)
    else:
        out = check_on(runtime, model, inputs, ["litert", "tflm"], rtol=1e-6)
        np.testing.assert_array_equal(out[0], x + x if cond else x * x)


def test_while_counting_loop(runtime):
    model = counting_while_model()
    inputs = [np.array([0], np.int32), X_FLOAT[:, :3]]
    i, x = check_on(runtime, model, inputs, ["litert", "tflm"])
    assert i.tolist() == [10]
    np.testing.assert_allclose(x, X_FLOAT[:, :3] + 5.0)


def test_while_float_state_halves_until_small(runtime):
    x = np.array([[3.0, 1.5, 0.25, 2.0]], np.float32)
    (out,) = check_on(runtime, halving_while_model(), [x], ["litert", "tflm"])
    assert out.sum() < 1 <= 2 * out.sum()
    np.testing.assert_array_equal(out, x / 8)


@pytest.mark.parametrize("dtype", ["FLOAT32", "INT8"])
def test_if_nested_in_while(runtime, dtype):
    x = (X_INT8 // 8) if dtype == "INT8" else X_FLOAT
    inputs = [np.array([0], np.int32), x]
    if dtype == "INT8":
        check_on(runtime, nested_model(dtype), inputs, "tflm")
        check_on(runtime, nested_model(dtype), inputs, "litert", atol=1)
    else:
        i, out = check_on(runtime, nested_model(dtype), inputs, ["litert", "tflm"], rtol=1e-6)
        expected = x * 4
        for _ in range(3):
            expected = expected * expected
        assert i.tolist() == [5]
        np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_while_iteration_bound(runtime):
    model = counting_while_model(limit=1 << 30)  # would take ages: the bound stops it
    x = X_FLOAT[:, :3]
    interp = Interpreter(model_content=model, backend=runtime, max_while_iterations=25)
    interp.allocate_tensors()
    interp.set_tensor(0, np.array([0], np.int32))
    interp.set_tensor(1, x)
    with pytest.raises(ModelError, match=r"node 0 \(WHILE( code \d+)? v1\).*max_while_iterations=25"):
        interp.invoke()
    # a loop within the bound runs, past it is refused, and the same interpreter runs again after the refusal
    interp = Interpreter(model_content=counting_while_model(limit=25), backend=runtime, max_while_iterations=25)
    interp.allocate_tensors()
    for start, runs in ((0, True), (-1, False), (5, True)):
        interp.set_tensor(0, np.array([start], np.int32))
        interp.set_tensor(1, x)
        if runs:
            interp.invoke()
            assert interp.get_tensor(interp.get_output_details()[0]["index"]).tolist() == [25]
            np.testing.assert_allclose(interp.get_tensor(interp.get_output_details()[1]["index"]),
                                       x + 0.5 * (25 - start))
        else:
            with pytest.raises(ModelError, match="WHILE"):
                interp.invoke()
    with pytest.raises(ValueError, match="max_while_iterations"):
        Interpreter(model_content=model, backend=runtime, max_while_iterations=-1)


def _cyclic_model() -> bytes:
    """subgraph 0 IFs into 1 or 2; subgraph 2 IFs into 1 or back into 0: a cycle 0 -> 2 -> 0."""
    g = GraphBuilder()
    subs = [g, g.subgraph("one"), g.subgraph("two")]
    for k, sub in enumerate(subs):
        c = sub.input("c", (1,), "BOOL")
        x = sub.input("x", (1, 2), "FLOAT32")
        y = sub.tensor("y", (1, 2), "FLOAT32")
        if k == 1:
            sub.op("ADD", [x, x], [y], fused_activation_function="NONE")
        else:
            sub.op("IF", [c, x], [y], then_subgraph_index=1, else_subgraph_index=2 if k == 0 else 0)
        sub.output(y)
    return write_model(g.build())


def test_call_cycle_refused_at_load(runtime):
    if runtime == "python":
        with pytest.raises(ModelError, match=r"subgraph 0 calls itself through a cycle of subgraph calls 0 -> 2 -> 0"):
            Interpreter(model_content=_cyclic_model())
    else:
        refused_on(runtime, _cyclic_model(), [np.array([True]), np.zeros((1, 2), np.float32)], ModelError,
                   r"subgraph 2 node 0 \(IF( code \d+)? v1\).*cycle")


def _if_with(then_shape=(1, 4), cond_type="BOOL") -> bytes:
    g = GraphBuilder()
    cond = g.input("cond", (1,), cond_type)
    x = g.input("x", (1, 4), "FLOAT32")
    y = g.tensor("y", (1, 4), "FLOAT32")
    then, other = g.subgraph("then"), g.subgraph("else")
    for sub, shape in ((then, then_shape), (other, (1, 4))):
        a = sub.input("a", (1, 4), "FLOAT32")
        b = sub.tensor("b", shape, "FLOAT32")
        if shape == (1, 4):
            sub.op("ADD", [a, a], [b], fused_activation_function="NONE")
        else:
            sub.op("RESHAPE", [a], [b], new_shape=list(shape))
        sub.output(b)
    g.op("IF", [cond, x], [y], then_subgraph_index=then.index, else_subgraph_index=other.index)
    g.output(y)
    return write_model(g.build())


def test_if_refusals(runtime):
    cond = [np.array([1.0], np.float32), X_FLOAT]
    refused_on(runtime, _if_with(cond_type="FLOAT32"), cond, UnsupportedOpError, r"node 0 \(IF( code \d+)? v1\).*BOOL")
    refused_on(runtime, _if_with(then_shape=(2, 2)), [np.array([True]), X_FLOAT], ModelError,
               r"node 0 \(IF( code \d+)? v1\).*(shape|static)")


def test_while_body_changing_shape_refused(runtime):
    g = GraphBuilder()
    x0 = g.input("x", (1, 4), "FLOAT32")
    x1 = g.tensor("x_out", (1, 4), "FLOAT32")
    cond, body = g.subgraph("cond"), g.subgraph("body")
    cx = cond.input("x", (1, 4), "FLOAT32")
    go = cond.tensor("go", (1,), "BOOL")
    cond.op("LESS", [cond.constant("a", np.zeros(1, np.float32)), cond.constant("b", np.ones(1, np.float32))], [go])
    cond.output(go)
    del cx
    bx = body.input("x", (1, 4), "FLOAT32")
    nx = body.tensor("x_next", (2, 2), "FLOAT32")
    body.op("RESHAPE", [bx], [nx], new_shape=[2, 2])
    body.output(nx)
    g.op("WHILE", [x0], [x1], cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    g.output(x1)
    model = write_model(g.build())
    if runtime == "c":  # the C runtime plans every byte before the first invoke: refused at load
        refused_on(runtime, model, [X_FLOAT], ModelError, r"node 0 \(WHILE( code \d+)? v1\).*'x'.*shape")
        return
    # the Python interpreter runs a loop that changes shapes as LiteRT does (tests/test_c23d_growing_while.py); this
    # cond never ends it (LiteRT loops forever too): the iteration bound stops it, naming the node
    interp = Interpreter(model_content=model, max_while_iterations=3)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], X_FLOAT)
    with pytest.raises(ModelError, match=r"node 0 \(WHILE v1\).*max_while_iterations=3"):
        interp.invoke()


@needs_c_runtime
@pytest.mark.parametrize("make", [lambda: if_model("INT8"), lambda: nested_model("FLOAT32"), halving_while_model],
                         ids=["if", "nested", "halving"])
def test_arena_plans_agree_across_subgraphs(make):
    model = make()
    py = Interpreter(model_content=model)
    py.allocate_tensors()
    c = Interpreter(model_content=model, backend="c")
    c.allocate_tensors()
    ours = {b.key: (b.offset, b.size, b.first_use, b.last_use) for b in py.arena_plan().buffers if b.size}
    theirs = {b.key: (b.offset, b.size, b.first_use, b.last_use) for b in c.arena_plan().buffers if b.size}
    assert ours == theirs
    assert any(key[0] > 0 for key in ours)  # the callees' tensors are in the plan
    assert py.arena_plan().total == c.arena_plan().total


# ------------------------------------------------------------------------------------------------ tools
def _bad_branch_model() -> bytes:
    """An IF whose else branch (subgraph 2) holds an op no runtime has: the problem is inside a subgraph."""
    g = GraphBuilder()
    cond, x = g.input("cond", (1,), "BOOL"), g.input("x", (1, 4), "FLOAT32")
    y = g.tensor("y", (1, 4), "FLOAT32")
    then, other = g.subgraph("then"), g.subgraph("else")
    for sub, op in ((then, "ADD"), (other, "MyMadeUpOp")):
        a = sub.input("a", (1, 4), "FLOAT32")
        b = sub.tensor("b", (1, 4), "FLOAT32")
        sub.op(op, [a, a], [b])
        sub.output(b)
    g.op("IF", [cond, x], [y], then_subgraph_index=then.index, else_subgraph_index=other.index)
    g.output(y)
    return write_model(g.build())


# the MCU target's check runs the model through the C runtime (built with gcc and make)
@pytest.mark.parametrize("target", ["host-linux", pytest.param("nrf52840-dk", marks=needs_c_runtime)])
def test_check_runs_control_flow_and_names_nodes_inside_subgraphs(tmp_path, target):
    from edge_sdk.targets.check import check_model

    good, bad = tmp_path / "nested.tflite", tmp_path / "bad.tflite"
    good.write_bytes(nested_model("INT8"))
    bad.write_bytes(_bad_branch_model())
    assert check_model(good, target).verdict == "runs"
    r = check_model(bad, target)
    assert r.verdict == "fails"
    assert [(p["subgraph"], p["node"], p["op"]) for p in r.problems if p["severity"] == "error"] == \
        [(2, 0, "MyMadeUpOp")]
    assert any(p["message"].startswith("subgraph 2 node 0 (MyMadeUpOp v1)") for p in r.problems)


def test_inspect_lists_the_ops_of_every_subgraph(tmp_path):
    from edge_sdk.tools.inspection import format_inspection, inspect_model

    path = tmp_path / "nested.tflite"
    path.write_bytes(nested_model("INT8"))
    report = inspect_model(path)
    assert [(sub["name"], [o["op"] for o in sub["ops"]]) for sub in report["subgraphs"]] == [
        ("main", ["WHILE"]), ("cond", ["LESS"]), ("body", ["LESS", "IF", "ADD"]), ("then", ["ADD"]), ("else", ["MUL"])]
    text = format_inspection(report)
    assert "subgraph 2 'body'" in text and "subgraph 4 'else'" in text and not report["problems"]


def test_profile_sums_a_nodes_runs_inside_called_subgraphs():
    from types import SimpleNamespace as R

    from edge_sdk.tools.profile import _run_op_ticks

    # one run of WHILE (node 0) whose body (subgraph 2) ran twice and whose cond (subgraph 1) three times
    records = [R(subgraph=1, index=0, ticks=3), R(subgraph=2, index=0, ticks=5), R(subgraph=1, index=0, ticks=3),
               R(subgraph=2, index=0, ticks=6), R(subgraph=1, index=0, ticks=4), R(subgraph=0, index=0, ticks=30)]
    assert _run_op_ticks(records) == [((1, 0), 10, 3), ((2, 0), 11, 2), ((0, 0), 30, 1)]


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                    reason="apt-get install qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi")
def test_profile_on_qemu_has_rows_inside_subgraphs(tmp_path, monkeypatch):
    from edge_sdk.device import qemu_board as qb
    from edge_sdk.tools.profile import profile_model

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    path, data = tmp_path / "nested.tflite", tmp_path / "in.npz"
    path.write_bytes(nested_model("INT8"))
    np.savez(data, i=np.array([0], np.int32), x=X_INT8 // 8)
    try:
        r = profile_model(path, "qemu-mps2-an386", runs=2, inputs=data)
    finally:
        for b in qb._read_state():
            qb.stop_board(b["url"])
    assert r["validated"], r["mismatches"]
    rows = {(o["subgraph"], o["index"]): o for o in r["ops"]}
    # WHILE; cond 6 runs; body 5 runs (its IF: then twice, else three times)
    assert [(k, rows[k]["op"]) for k in sorted(rows)] == [((0, 0), "WHILE"), ((1, 0), "LESS"), ((2, 0), "LESS"),
                                                         ((2, 1), "IF"), ((2, 2), "ADD"), ((3, 0), "ADD"),
                                                         ((4, 0), "MUL")]
    assert all(o["time"] > 0 for o in r["ops"])
    assert r["total"]["ops_sum"] == rows[(0, 0)]["time"]  # callees' time is inside the WHILE's


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed (make system-deps)")
def test_export_runs_control_flow_like_the_interpreter(tmp_path):
    from tests.test_export import _host_example, _interpreter_outputs

    path = tmp_path / "nested.tflite"
    path.write_bytes(nested_model("INT8"))
    raw = np.array([0], np.int32).tobytes() + (X_INT8 // 8).tobytes()
    got, r = _host_example(path, tmp_path, raw)
    assert got == _interpreter_outputs(path, raw)
    assert "control_flow.c" in r["kernels"]
