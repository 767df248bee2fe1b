"""Per-op rows of the per-call-site subgraph copies (issue 23): a subgraph called at two shape sets runs, in the C
runtime, as a copy per call site (kernels.control_flow.with_call_site_copy, appended to the bytes it loads:
edge_sdk.runtime.c_loaded). `edge bench --backend c` and `edge profile` name the rows of those copies from the
model the C runtime loaded: their caller ("(in 1)"), their output shape, not "(in ?)" and "-" (the model the user
gave has no such subgraph)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.conftest import needs_c_runtime
from tests.test_call_site_shapes import if_at_lengths


def nested_if_at_lengths(lengths) -> bytes:
    """cond, x_n [1, n, 4] -> IF_n(cond, cond, x_n) per n, one pair of outer branches declared at the first length:
    outer then = IF(c, a) over inner branches (a + a / a * a), outer else = a - a. A second length copies the outer
    branches and, inside the copy, the inner ones (a nested call site)."""
    g = GraphBuilder()
    n0 = lengths[0]
    inner = [g.subgraph(f"inner_{op.lower()}") for op in ("ADD", "MUL")]
    for sub, op in zip(inner, ("ADD", "MUL")):
        a, b = sub.input("a", (1, n0, 4), "FLOAT32"), sub.tensor("b", (1, n0, 4), "FLOAT32")
        sub.op(op, [a, a], [b], fused_activation_function="NONE")
        sub.output(b)
    then, other = g.subgraph("outer_then"), g.subgraph("outer_else")
    for sub in (then, other):
        c, a = sub.input("c", (1,), "BOOL"), sub.input("a", (1, n0, 4), "FLOAT32")
        b = sub.tensor("b", (1, n0, 4), "FLOAT32")
        if sub is then:
            sub.op("IF", [c, a], [b], then_subgraph_index=inner[0].index, else_subgraph_index=inner[1].index)
        else:
            sub.op("SUB", [a, a], [b], fused_activation_function="NONE")
        sub.output(b)
    cond = g.input("cond", (1,), "BOOL")
    for k, n in enumerate(lengths):
        x, y = g.input(f"x{k}", (1, n, 4), "FLOAT32"), g.tensor(f"y{k}", (1, n, 4), "FLOAT32")
        g.op("IF", [cond, cond, x], [y], then_subgraph_index=then.index, else_subgraph_index=other.index)
        g.output(y)
    return write_model(g.build())


def _true_cond(details, seed, required=None):
    """bench's inputs: cond true (the then branches run, nested IF included), x random."""
    rng = np.random.default_rng(seed)
    return [np.ones(d["shape"], bool) if d["dtype"] == np.bool_ else rng.standard_normal(d["shape"]).astype(d["dtype"])
            for d in details]


def _rows(report) -> dict:
    return {(o["subgraph"], o["index"]): o for o in report["ops"]}


@needs_c_runtime
def test_the_c_interpreter_says_which_model_it_loaded():
    """CInterpreter.model: the model given (3 subgraphs); loaded_model: the bytes the C runtime runs (two copies for
    the second IF's branches), whose indices its trace names."""
    from edge_sdk.runtime.c_interpreter import CInterpreter

    interp = CInterpreter(model_content=if_at_lengths((6, 3)))
    assert len(interp.model.subgraphs) == 3
    loaded = interp.loaded_model
    assert [sg.name for sg in loaded.subgraphs[3:]] == ["then@0.1", "else@0.1"]
    assert interp.loaded_model is loaded  # read once per load


@needs_c_runtime
@pytest.mark.parametrize("lengths", [(6, 3), (2, 5, 7)])
def test_bench_c_names_the_rows_of_call_site_copies(monkeypatch, lengths):
    """Each IF past the first calls its own copy of the then branch: its ADD row sits under that IF with that IF's
    shape (was '(in ?)' with no shape)."""
    from edge_sdk.tools import bench

    monkeypatch.setattr(bench, "_random_inputs", _true_cond)
    report = bench.run_benchmark(if_at_lengths(lengths), runs=1, warmup=0, backend="c", profile_runs=2)
    rows = _rows(report)
    assert rows[(1, 0)]["caller"] == [0, 0] and rows[(1, 0)]["output_shape"] == [1, lengths[0], 4]
    for k, n in enumerate(lengths[1:], start=1):
        copy = 1 + 2 * k  # the then branch's copy for IF k (its else copy follows it)
        row = rows[(copy, 0)]
        assert (row["op"], row["caller"], row["output_shape"]) == ("ADD", [0, k], [1, n, 4]), row
    text = bench.format_bench(report)
    assert "(in ?)" not in text and f"ADD (in {len(lengths) - 1})" in text, text
    # the copies are said to be the runtime's: which subgraph each copies, for which node
    copies = [(c["subgraph"], c["copy_of"], c["caller"]) for c in report["call_site_copies"]]
    assert copies == [(1 + 2 * k + b, 1 + b, [0, k]) for k in range(1, len(lengths)) for b in (0, 1)], copies
    assert "note: call-site copies" in text and f"{1 + 2 * (len(lengths) - 1)} of 1 for node {len(lengths) - 1}" in text


@needs_c_runtime
def test_a_model_without_call_site_copies_says_none():
    from edge_sdk.tools import bench
    from edge_sdk.tools.profile import call_site_copies, copies_line
    from edge_sdk.model import read_model

    report = bench.run_benchmark(if_at_lengths((4, 4)), runs=1, warmup=0, backend="c", profile_runs=1)
    assert report["call_site_copies"] == [] and "call-site copies" not in bench.format_bench(report)
    assert call_site_copies(read_model(if_at_lengths((4, 4)))) == [] and copies_line([]) is None


@needs_c_runtime
def test_bench_c_names_nested_call_site_copies(monkeypatch):
    """The second IF's copy of the outer then branch calls copies of the inner branches: the inner ADD's row is under
    the copy's IF (5:0), which is under node 1."""
    from edge_sdk.tools import bench

    monkeypatch.setattr(bench, "_random_inputs", _true_cond)
    report = bench.run_benchmark(nested_if_at_lengths((6, 3)), runs=1, warmup=0, backend="c", profile_runs=1)
    rows = _rows(report)
    assert [(s, k, rows[(s, k)]["caller"]) for s, k in [(3, 0), (1, 0), (5, 0), (6, 0)]] == [
        (3, 0, [0, 0]), (1, 0, [3, 0]), (5, 0, [0, 1]), (6, 0, [5, 0])]
    assert rows[(6, 0)]["op"] == "ADD" and rows[(6, 0)]["output_shape"] == [1, 3, 4]
    order = [(o["subgraph"], o["index"]) for o in report["ops"]]
    assert order == [(0, 0), (3, 0), (1, 0), (0, 1), (5, 0), (6, 0)], order  # each under its caller
    assert "(in ?)" not in bench.format_bench(report)


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                    reason="apt-get install qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi")
def test_profile_on_qemu_names_the_rows_of_call_site_copies(tmp_path, monkeypatch):
    """`edge profile` of the float model on the QEMU board: the copy's ADD row is under node 1 at [1, 3, 4], and the
    float outputs validate."""
    from edge_sdk.cli import main
    from edge_sdk.device import qemu_board as qb

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    path, data = tmp_path / "if63.tflite", tmp_path / "in.npz"
    path.write_bytes(if_at_lengths((6, 3)))
    rng = np.random.default_rng(1)
    np.savez(data, cond=np.array([True]), x0=rng.standard_normal((1, 6, 4)).astype(np.float32),
             x1=rng.standard_normal((1, 3, 4)).astype(np.float32))
    import contextlib
    import io

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code = main(["profile", str(path), "--target", "qemu-mps2-an386", "--runs", "1", "--inputs", str(data),
                         "--json"])
    finally:
        qb.stop_board(all=True)
    assert code == 0, out.getvalue()
    r = json.loads(out.getvalue())
    assert r["validated"], r["mismatches"]
    rows = _rows(r)
    assert rows[(3, 0)]["op"] == "ADD" and rows[(3, 0)]["caller"] == [0, 1], rows
    assert rows[(3, 0)]["output_shape"] == [1, 3, 4] and rows[(1, 0)]["caller"] == [0, 0]
    assert [(c["subgraph"], c["copy_of"], c["caller"]) for c in r["call_site_copies"]] == [(3, 1, [0, 1]),
                                                                                          (4, 2, [0, 1])]
