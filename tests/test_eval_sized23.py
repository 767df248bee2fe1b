"""edge check and edge bench (text and --json) name the tensors sized at eval: outside the arena, with their bytes
at the data run (bench: measured, == LiteRT's tensor after its invoke) or "sized at eval" with a bound where the
kernel knows one (check: WHERE's condition elements x rank x 8 B; a CAST after it as many elements) and "no bound
known" where none is (a growing WHILE's loop variable). Models built with our writer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.targets.check import check_model, format_check
from edge_sdk.tools.bench import format_bench, run_benchmark
from tests.test_c23d_growing_while import doubling_while


def where_cast_model(shape: tuple[int, ...]) -> bytes:
    """mask (BOOL, ``shape``) -> WHERE -> coords INT64 [n, rank] -> CAST -> INT32 (prepared at eval)."""
    g = GraphBuilder()
    mask = g.input("mask", shape, "BOOL")
    coords = g.tensor("coords", (0, len(shape)), "INT64")
    g.op("WHERE", [mask], [coords])
    small = g.tensor("coords32", (0, len(shape)), "INT32")
    g.op("CAST", [coords], [small], in_data_type="INT64", out_data_type="INT32")
    g.output(small)
    return write_model(g.build())


def litert_output_bytes(model: bytes, x: np.ndarray, tensors: list[str]) -> dict[str, int]:
    """LiteRT's (reference kernels) bytes of the named tensors after one invoke on x."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                     experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return {d["name"]: it.get_tensor(d["index"]).nbytes for d in it.get_tensor_details() if d["name"] in tensors}


@pytest.mark.parametrize("shape,density", [((3, 5), 0.3), ((2, 4, 6), 0.7)])
def test_where_and_its_reader(tmp_path, shape, density):
    model = where_cast_model(shape)
    elements = int(np.prod(shape))
    rows = check_model(model, "raspberry-pi-4").to_dict()["eval_sized"]
    # the CAST's bound: as many elements as WHERE's (op family "unary"), 4 bytes each
    assert [(r["name"], r["max_bytes"], r["bytes"]) for r in rows] == [
        ("coords", elements * len(shape) * 8, None), ("coords32", elements * len(shape) * 4, None)]
    text = format_check(check_model(model, "raspberry-pi-4"))
    assert "outside the arena" in text and "sized at eval" in text and f"at most {elements * len(shape) * 12} B" in text
    x = np.random.default_rng(elements).random(shape) < density
    np.save(tmp_path / "mask.npy", x)
    report = run_benchmark(model, runs=2, warmup=0, profile_runs=1, backend="python", inputs=tmp_path / "mask.npy")
    theirs = litert_output_bytes(model, x, ["coords", "coords32"])
    measured = {r["name"]: r["bytes"] for r in report["eval_sized"]}
    assert measured == theirs and measured["coords"] == np.count_nonzero(x) * len(shape) * 8
    assert report["eval_sized_bytes"] == sum(theirs.values())
    assert f"{sum(theirs.values())} B at this run's data" in format_bench(report)
    json.dumps(report)  # --json prints it


def test_a_growing_loop_variable(tmp_path):
    g, y = doubling_while(3)
    g.output(y)
    model = write_model(g.build())
    (row,) = check_model(model, "raspberry-pi-4").to_dict()["eval_sized"]
    assert row["writer"].startswith("node 0 (WHILE") and row["max_bytes"] is None
    result = check_model(model, "raspberry-pi-4")
    assert result.to_dict()["eval_sized_max_bytes"] is None
    assert "sized at eval, no bound known" in format_check(result)
    x = np.array([[1.0, 2.0, 3.0]], np.float32)  # 3 elements, sum 6, doubled 5 times (sum 192): 96 elements
    np.save(tmp_path / "x.npy", x)
    report = run_benchmark(model, runs=2, warmup=0, profile_runs=1, backend="python", inputs=tmp_path / "x.npy")
    (measured,) = report["eval_sized"]
    assert measured["bytes"] == litert_output_bytes(model, x, [measured["name"]])[measured["name"]] == 96 * 4


def test_a_c_target_and_a_static_model_say_none(tmp_path):
    assert check_model(where_cast_model((3, 5)), "stm32f746-disco").to_dict()["eval_sized"] == []
    g = GraphBuilder()
    x = g.input("x", (1, 4), "FLOAT32")
    y = g.tensor("y", (1, 4), "FLOAT32")
    g.op("RELU", [x], [y])
    g.output(y)
    static = write_model(g.build())
    assert check_model(static, "raspberry-pi-4").to_dict()["eval_sized_max_bytes"] == 0
    report = run_benchmark(static, runs=1, warmup=0, profile_runs=1, backend="python")
    assert report["eval_sized"] == [] and "outside the arena" not in format_bench(report)


def where_broadcast_gather_model(shape: tuple[int, int], table_rows: int, width: int) -> bytes:
    """mask [H, W] -> WHERE -> CAST int32 coords [n, 2] -> ADD [1] (a broadcast, two inputs) and GATHER of a
    constant table [rows, width] at the coords (axis 0) -> [n, 2, width]: both readers prepared at eval."""
    g = GraphBuilder()
    mask = g.input("mask", shape, "BOOL")
    coords = g.tensor("coords", (0, 2), "INT64")
    g.op("WHERE", [mask], [coords])
    small = g.tensor("coords32", (0, 2), "INT32")
    g.op("CAST", [coords], [small], in_data_type="INT64", out_data_type="INT32")
    shifted = g.tensor("shifted", (0, 2), "INT32")
    g.op("ADD", [small, g.constant("one", np.array([1], np.int32))], [shifted])
    table = g.constant("table", np.arange(table_rows * width, dtype=np.float32).reshape(table_rows, width))
    picked = g.tensor("picked", (0, 2, width), "FLOAT32")
    g.op("GATHER", [table, small], [picked], axis=0)
    g.output(shifted)
    g.output(picked)
    return write_model(g.build())


@pytest.mark.parametrize("shape,width", [((3, 5), 4), ((4, 2), 3)])
def test_bounds_after_a_broadcast_and_a_gather(tmp_path, shape, width):
    """The bound check gives an ADD of a bounded tensor and a constant, and a GATHER at bounded positions, is the
    bytes LiteRT holds when the mask is all true (every coordinate: the most there can be); a sparser mask below it."""
    model = where_broadcast_gather_model(shape, max(shape), width)
    bound = {r["name"]: r["max_bytes"] for r in check_model(model, "raspberry-pi-4").to_dict()["eval_sized"]}
    n = int(np.prod(shape))
    assert bound == {"coords": n * 2 * 8, "coords32": n * 2 * 4, "shifted": n * 2 * 4, "picked": n * 2 * width * 4}
    for density in (1.0, 0.4):
        x = np.random.default_rng(n).random(shape) < density
        theirs = litert_output_bytes(model, x, list(bound))
        assert all(theirs[name] <= bound[name] for name in bound)
        assert (theirs == bound) == (density == 1.0)
        np.save(tmp_path / "mask.npy", x)
        report = run_benchmark(model, runs=1, warmup=0, profile_runs=1, backend="python", inputs=tmp_path / "mask.npy")
        assert {r["name"]: r["bytes"] for r in report["eval_sized"]} == theirs


def test_no_bound_from_an_unbounded_input():
    """A two-input op reading a growing loop's output (no bound) keeps "no bound known"."""
    g, y = doubling_while(3)
    z = g.tensor("z", (1, 3), "FLOAT32")
    g.op("ADD", [y, g.constant("half", np.array([0.5], np.float32))], [z])
    g.output(z)
    result = check_model(write_model(g.build()), "raspberry-pi-4")
    assert [r["max_bytes"] for r in result.to_dict()["eval_sized"]] == [None, None]
    assert "no bound known" in format_check(result)
