"""Issue 23 (audit): the WHILE loops the ONNX importer writes for a Loop with a run-time trip count count their
iterations in INT32 (converters/import_onnx.py: cond subgraph LESS(i, M) in INT32, the int64 trip count clamped and
cast once; the body reads the iteration number as int64 through a CAST where ONNX's body uses it), so TFLM runs
them too (its ADD / LESS have no INT64 kernels: tests/test_convert_control_flow.py runs TFLM). Both runtimes run
such a converted model (the ``runtime`` grid) and agree with onnxruntime and LiteRT's reference kernels for trip
counts 0, 1 and 5, with and without a run-time condition.

(The file name follows the worktree's naming rule for new tests; tests/test_convert_while_int64.py would say it.)
"""

from __future__ import annotations

import numpy as np
import pytest

from converters import convert
from tests.oprunner import peer_outputs, run_on
from tests.test_convert_control_flow import _counting_loop, f32, ort_run


@pytest.fixture(scope="module")
def converted():
    """{with a run-time condition input: (onnx proto, converted .tflite bytes, converted Model)}."""
    out = {}
    for with_cond in (False, True):
        proto = _counting_loop(with_cond_input=with_cond)
        result = convert(proto, quantize="none")
        out[with_cond] = (proto, result.tflite, result.model)
    return out


def _counter_ops(model):
    """(op, input types) of the WHILE's cond and body subgraphs."""
    (w,) = [op for op in model.subgraphs[0].operators if model.op_name(op) == "WHILE"]
    found = []
    for key in ("cond_subgraph_index", "body_subgraph_index"):
        sg = model.subgraphs[w.options[key]]
        found += [(model.op_name(op), tuple(sg.tensors[t].type for t in op.inputs)) for op in sg.operators]
    return found


@pytest.mark.parametrize("with_cond", [False, True])
def test_converted_loop_counts_in_int32(converted, with_cond):
    ops = _counter_ops(converted[with_cond][2])
    assert ("LESS", ("INT32", "INT32")) in ops, ops  # iteration < trip count, in the cond subgraph
    assert ("LESS", ("INT64", "INT64")) not in ops, ops
    assert ("CAST", ("INT32",)) in ops, ops  # the iteration number as the body's int64, cast once


@pytest.mark.parametrize("with_cond,n,go", [(False, 0, None), (False, 1, None), (False, 5, None),
                                            (True, 5, True), (True, 3, False)])
def test_converted_int64_while_runs_on_both_runtimes(runtime, converted, with_cond, n, go):
    proto, tflite, _ = converted[with_cond]
    feeds = {"x": f32(1, 4, seed=1), "acc0": f32(1, 4, seed=2), "n": np.array(n, np.int64)}
    if with_cond:
        feeds["go"] = np.array(go)
    inputs = list(feeds.values())
    want = ort_run(proto, feeds)
    ours = run_on(runtime, tflite, inputs)
    np.testing.assert_allclose(ours[0], want[0], rtol=0, atol=1e-5, err_msg=f"{runtime} vs onnxruntime")
    np.testing.assert_allclose(ours[0], peer_outputs(tflite, inputs, "litert")[0], rtol=0, atol=1e-6,
                               err_msg=f"{runtime} vs litert")
    if n > 1 and go is not False:
        assert not np.allclose(ours[0], feeds["acc0"]), "the loop did not run"
