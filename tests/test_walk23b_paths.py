"""What the walk of issue 23's paths left (session 12, walk23b), each pinned cheaply (in-process, no board):

- `edge run` takes an .npz of every input (keys: input names, or arg_0.. in signature order) and prints each
  output; a missing / extra / misshapen key is one line naming the input and what it takes.
- `edge bench --backend python` lists the rows of IF branches / WHILE bodies under their calling node, as the C
  backend does (one row layout: bench._profile_ops over both runtimes' trace entries).
- `edge check` says the input shapes it judged (given by --input-shape, or the stored shape of a dynamic input).
- the host C runtime's arena figure says what it counts.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from edge_sdk import cli
from tests.conftest import needs_c_runtime
from tests.test_walk23_paths import _fc_loop_model


# ------------------------------------------------------------------------------------------------ bench python
def test_bench_python_places_subgraph_rows_under_their_caller_with_shapes_and_macs(monkeypatch):
    from edge_sdk.tools import bench

    monkeypatch.setattr(bench, "_random_inputs", lambda details, seed, required=None: [
        np.zeros(d["shape"], d["dtype"]) for d in details])  # i = 0: three iterations every run
    report = bench.run_benchmark(_fc_loop_model(), runs=1, warmup=0, backend="python", profile_runs=2)
    rows = {(o["subgraph"], o["index"]): o for o in report["ops"]}
    assert rows[(0, 0)]["op"] == "WHILE" and rows[(0, 0)]["caller"] is None
    fc = rows[(2, 0)]
    assert fc["op"] == "FULLY_CONNECTED" and fc["caller"] == [0, 0], fc
    assert fc["output_shape"] == [1, 4] and fc["macs"] == 3 * 16, fc  # per run: 3 calls of 16 MACs
    assert rows[(1, 0)]["op"] == "LESS" and rows[(1, 0)]["caller"] == [0, 0]  # cond: 4 calls a run
    assert rows[(2, 1)]["op"] == "ADD" and len(rows) == 4
    assert "(in 0)" in bench.format_bench(report)


def test_invoke_traced_times_every_subgraph_and_invoke_profiled_keeps_subgraph_0(runtime):
    from edge_sdk.runtime.c_interpreter import CInterpreter
    from edge_sdk.runtime.interpreter import Interpreter

    it = (Interpreter if runtime == "python" else CInterpreter)(model_content=_fc_loop_model())
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], np.array([1], np.int32))
    it.set_tensor(it.get_input_details()[1]["index"], np.ones((1, 4), np.float32))
    entries = it.invoke_traced()
    seen = [(e["subgraph"], e["node"], e["op"]) for e in entries]
    # i = 1, 3 steps: cond, body x2, cond (false); the WHILE ends last (it includes its callees' time)
    assert seen == [(1, 0, "LESS"), (2, 0, "FULLY_CONNECTED"), (2, 1, "ADD")] * 2 + [(1, 0, "LESS"),
                                                                                     (0, 0, "WHILE")]
    assert all(e["ns"] >= 0 for e in entries)
    np.testing.assert_allclose(it.get_tensor(it.get_output_details()[1]["index"]), 0.25 * np.ones((1, 4)))
    if runtime == "python":
        assert "_run" not in vars(it)  # the timed stand-in is gone: invoke() runs untimed again
    assert [(k, op) for k, op, _ in it.invoke_profiled()] == [(0, "WHILE")]


# ------------------------------------------------------------------------------------------------ run .npz
def test_run_takes_an_npz_of_every_input_and_prints_each_output(tmp_path, capsys):
    from tests.test_control_flow import counting_while_model, if_model

    model = tmp_path / "loop.tflite"
    model.write_bytes(counting_while_model())  # (i, x): while i < 10: i += 1, x += 0.5
    by_name, by_arg = tmp_path / "named.npz", tmp_path / "args.npz"
    np.savez(by_name, i=np.array([7], np.int32), x=np.array([[0.0, 1.0, 2.0]], np.float32))
    np.savez(by_arg, arg_0=np.array([8], np.int32), arg_1=np.array([0.0, 1.0, 2.0], np.float32))  # batch added
    assert cli.main(["run", str(model), str(by_name), str(by_arg), "--backend", "python", "--json"]) == 0
    first, second = json.loads(capsys.readouterr().out)
    assert first["input"] == str(by_name) and [o["name"] for o in first["outputs"]] == ["i_out", "x_out"]
    assert first["outputs"][0] == {"name": "i_out", "shape": [1], "dtype": "int32", "values": [10]}
    np.testing.assert_allclose(first["outputs"][1]["values"], [[1.5, 2.5, 3.5]])
    np.testing.assert_allclose(second["outputs"][1]["values"], [[1.0, 2.0, 3.0]])
    assert cli.main(["run", str(model), str(by_name), "--backend", "python"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [f"{by_name}:", "  i_out [1] int32:", "    [10]", "  x_out [1,3] float32:",
                       "    [[1.5, 2.5, 3.5]]"]

    cond = tmp_path / "if.tflite"
    cond.write_bytes(if_model("FLOAT32"))  # IF on a bool input: x + x, else x * x
    feed = tmp_path / "if.npz"
    np.savez(feed, cond=np.array([False]), x=np.array([[0.5, -1.0, 2.0, 3.0]], np.float32))
    assert cli.main(["run", str(cond), str(feed), "--backend", "python", "--json"]) == 0
    np.testing.assert_allclose(json.loads(capsys.readouterr().out)[0]["outputs"][0]["values"],
                               [[0.25, 1.0, 4.0, 9.0]])


@pytest.mark.parametrize("arrays, line", [
    ({"i": np.array([1], np.int32)},
     "{f}: no array for input 'x' [1,3] float32 (keys: input tensor names, or arg_0, arg_1.. in signature order; "
     "the file has i)"),
    ({"i": np.array([1], np.int32), "x": np.zeros((1, 3), np.float32), "y": np.zeros(2)},
     "{f}: array 'y' names no input of {m} (inputs: 'i' [1] int32, 'x' [1,3] float32; keys: input tensor "
     "names, or arg_0, arg_1.. in signature order)"),
    ({"i": np.array([1], np.int32), "x": np.zeros((1, 4), np.float32)},
     "{f}: array 'x' shaped [1, 4] float32 for input 'x' [1,3] float32"),
    ({"i": np.array([1.5]), "x": np.zeros((1, 3), np.float32)},
     "{f}: array 'i': cannot feed float64 values to the int32 input 'i'"),
])
def test_run_names_a_missing_extra_or_misshapen_npz_key(tmp_path, capsys, arrays, line):
    from tests.test_control_flow import counting_while_model

    model = tmp_path / "loop.tflite"
    model.write_bytes(counting_while_model())
    feed = tmp_path / "in.npz"
    np.savez(feed, **arrays)
    assert cli.main(["run", str(model), str(feed), "--backend", "python"]) == 3
    said = line.format(f=feed, m=model)  # the CLI names the model first when the line does not
    assert capsys.readouterr().err.splitlines() == [
        "edge run: error: " + ("" if str(model) in said else f"MODEL {model}: ") + said]


def test_run_says_a_model_with_several_inputs_takes_an_npz(tmp_path, capsys):
    from tests.test_control_flow import counting_while_model

    model = tmp_path / "loop.tflite"
    model.write_bytes(counting_while_model())
    sample = tmp_path / "x.npy"
    np.save(sample, np.zeros((1, 3), np.float32))
    assert cli.main(["run", str(model), str(sample), "--backend", "python"]) == 3
    assert capsys.readouterr().err.splitlines() == [
        f"edge run: error: {sample}: {model} takes 2 inputs ('i' [1] int32, 'x' [1,3] float32): give them in "
        "one .npz (keys: input tensor names, or arg_0, arg_1.. in signature order)"]
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    assert cli.main(["run", str(model), str(bad), "--backend", "python"]) != 0
    assert "not an image (JPEG/PNG/BMP), a .wav, a .npy array or an .npz of every input: not a .npz (zip) archive" \
        in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ check
def _batch_dynamic_fc() -> bytes:
    """x [-1, 4] (stored [1, 4]) -> FULLY_CONNECTED 3: a dynamic batch, judged at its stored shape."""
    from edge_sdk.model import write_model
    from edge_sdk.model.builder import GraphBuilder

    g = GraphBuilder()
    x = g.input("x", (1, 4), "FLOAT32")
    y = g.tensor("y", (1, 3), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, g.constant("w", np.ones((3, 4), np.float32)), -1], [y])
    g.output(y)
    model = g.build()
    model.subgraphs[0].tensors[model.subgraphs[0].inputs[0]].shape_signature = (-1, 4)
    return write_model(model)


def test_check_says_the_input_shapes_it_judged(tmp_path, capsys):
    from tests.test_input_shapes import log_mel_like

    model = tmp_path / "fe.tflite"
    model.write_bytes(log_mel_like())  # x [-1, -1]
    assert cli.main(["check", str(model), "--target", "host-linux", "--input-shape", "x:4,8"]) == 0
    assert "  inputs judged at x 4x8 (--input-shape; signature [-1,-1])" in capsys.readouterr().out.splitlines()
    assert cli.main(["check", str(model), "--target", "host-linux", "--json", "--input-shape", "x:4,8"]) == 0
    assert json.loads(capsys.readouterr().out)["input_shapes"] == [
        {"name": "x", "shape": [4, 8], "signature": [-1, -1], "source": "--input-shape"}]

    batch = tmp_path / "fc.tflite"
    batch.write_bytes(_batch_dynamic_fc())
    assert cli.main(["check", str(batch), "--target", "host-linux"]) == 0
    assert ("  inputs judged at x 1x4 (the stored shape: signature [-1,4] is dynamic; --input-shape sets another)"
            in capsys.readouterr().out.splitlines())
    assert cli.main(["check", str(batch), "--target", "host-linux", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["input_shapes"] == [
        {"name": "x", "shape": [1, 4], "signature": [-1, 4], "source": "stored"}]

    static = tmp_path / "static.tflite"
    static.write_bytes(_static_fc())
    assert cli.main(["check", str(static), "--target", "host-linux"]) == 0
    assert "inputs judged" not in capsys.readouterr().out  # a static model: nothing to say
    assert cli.main(["check", str(static), "--target", "host-linux", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["input_shapes"] == [
        {"name": "x", "shape": [1, 4], "signature": [1, 4], "source": "static"}]


def _static_fc() -> bytes:
    from edge_sdk.model import read_model, write_model

    model = read_model(_batch_dynamic_fc())
    model.subgraphs[0].tensors[model.subgraphs[0].inputs[0]].shape_signature = None
    return write_model(model)


# ------------------------------------------------------------------------------------------------ host C arena
def _wide_window_front_end(samples: int = 1760, window: int = 512, hop: int = 160, mels: int = 40) -> bytes:
    """x [-1, -1] shaped [1, samples] -> RESHAPE [1, 1, samples, 1] -> CONV_2D 1 x window, stride hop, mels
    filters (a float log-mel-like front end): the host's float GEMM fast path runs it on im2col blocks."""
    from edge_sdk.model import write_model
    from edge_sdk.model.builder import GraphBuilder
    from edge_sdk.model.input_shapes import shaped_model

    g = GraphBuilder()
    x = g.input("x", (1, 1), "FLOAT32")
    x4 = g.tensor("x4", (1, 1, 1, 1), "FLOAT32")
    g.op("RESHAPE", [x, g.constant("s4", np.array([1, 1, -1, 1], np.int32))], [x4])
    w = np.random.default_rng(0).standard_normal((mels, 1, window, 1)).astype(np.float32)
    c = g.tensor("c", (1, 1, 1, mels), "FLOAT32")
    g.op("CONV_2D", [x4, g.constant("w", w), g.constant("b", np.zeros(mels, np.float32))], [c], padding="VALID",
         stride_w=hop, stride_h=1)
    y = g.tensor("y", (1, 1), "FLOAT32")
    g.op("RESHAPE", [c, g.constant("flat", np.array([1, -1], np.int32))], [y])
    g.output(y)
    model = g.build()
    model.subgraphs[0].tensors[model.subgraphs[0].inputs[0]].shape_signature = (-1, -1)
    return shaped_model(write_model(model), {"x": (1, samples)})


@needs_c_runtime
def test_the_host_c_arena_names_its_fast_path_scratch(monkeypatch):
    from edge_sdk.runtime.c_interpreter import CInterpreter
    from edge_sdk.runtime.interpreter import Interpreter
    from edge_sdk.tools import bench

    data = _wide_window_front_end()
    py = Interpreter(model_content=data)
    py.allocate_tensors()
    c = CInterpreter(model_content=data)
    c.allocate_tensors()
    parts = c.arena_parts()
    assert parts["tensors"] == py.arena_size == 2 * 1760 * 4  # the same tensor plan: the input and its reshape
    assert parts["arena_size"] == c.arena_size == (parts["tensors"] + parts["scratch"] + parts["persistent"]
                                                    + parts["alignment"] + parts["init_extra"])
    assert parts["packed_weights"] == c.packed_weights_bytes  # apart, not in arena_size
    if parts["scratch"]:  # a CPU with the float fast path: its im2col blocks are the scratch, and named so
        assert parts["fast_path_scratch"] == parts["scratch"] == 48 * 512 * 4
        report = bench.run_benchmark(data, runs=1, warmup=0, backend="c", profile_runs=1)
        assert report["arena_parts"] == parts
        assert f"of the arena: fast-path scratch {48 * 512 * 4} B (this host build's SIMD kernels" \
            in bench.format_bench(report)
    else:
        assert parts["fast_path_scratch"] == 0
