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
from tests.test_walk23_paths import _fc_loop_model


# ------------------------------------------------------------------------------------------------ bench python
def test_bench_python_places_subgraph_rows_under_their_caller_with_shapes_and_macs(monkeypatch):
    from edge_sdk.tools import bench

    monkeypatch.setattr(bench, "_random_inputs", lambda details, seed: [
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


def test_invoke_traced_times_every_subgraph_and_invoke_profiled_keeps_subgraph_0():
    from edge_sdk.runtime.interpreter import Interpreter

    it = Interpreter(model_content=_fc_loop_model())
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
    assert "_run" not in vars(it)  # the timed stand-in is gone: invoke() runs untimed again
    assert [(k, op) for k, op, _ in it.invoke_profiled()] == [(0, "WHILE")]
