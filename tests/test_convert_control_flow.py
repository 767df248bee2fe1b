"""Run-time control flow through convert(): an ONNX If whose condition is known only at run time becomes TFLite IF
(then / else subgraphs), a Loop with a run-time trip count or condition becomes WHILE (cond / body subgraphs).

Every model is built here with onnx.helper; onnxruntime is the reference. The converted models run in LiteRT's
reference kernels (edge-sdk's runtimes get IF / WHILE kernels separately; until then convert writes the float model
and says our interpreter did not prepare it).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters import convert
from edge_sdk import ConversionError
from tests.peers import run_litert

ATOL = 1e-5


def f32(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def vi(name, elem=TP.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def model_of(nodes, inputs, outputs, inits=None, opset=16):
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    m = helper.make_model(helper.make_graph(nodes, "test", inputs, outputs, inits),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def ort_run(proto, feeds: dict):
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def close(got, want, what=""):
    assert len(got) == len(want), what
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, (what, k, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=0, atol=ATOL, err_msg=f"{what} output {k}")


def ops(model, sg=0):
    return [model.op_name(op) for op in model.subgraphs[sg].operators]


# ---------------------------------------------------------------------------------------------- If
def _if_model(reduce="ReduceSum"):
    """y, z = if sum(x) > 0 (``reduce``: mean for the int8 tests -- LiteRT 2.3's int8 reference SUM is wrong, 2x its
    sum on [[10, -41, 68], [74, 30, 58]] where TFLM and ours agree): (relu(x @ W + b_local), x * 2) else: (sigmoid(x) * k, x - bias): the condition is
    computed from the data; both branches read outer values (x, W, bias) and the then branch a local constant."""
    then_g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["t_mm"]),
         helper.make_node("Add", ["t_mm", "t_b"], ["t_pre"]),
         helper.make_node("Relu", ["t_pre"], ["t_y"]),
         helper.make_node("Mul", ["x", "two"], ["t_z"])],
        "then", [], [vi("t_y", TP.FLOAT, [2, 4]), vi("t_z", TP.FLOAT, [2, 3])],
        [numpy_helper.from_array(f32(4, seed=7), "t_b")])
    else_g = helper.make_graph(
        [helper.make_node("Sigmoid", ["xx"], ["e_s"]),
         helper.make_node("Slice", ["e_s", "starts", "ends", "axes"], ["e_sl"]),
         helper.make_node("Mul", ["e_sl", "e_k"], ["e_y"]),
         helper.make_node("Sub", ["x", "bias"], ["e_z"])],
        "else", [], [vi("e_y", TP.FLOAT, [2, 4]), vi("e_z", TP.FLOAT, [2, 3])],
        [numpy_helper.from_array(v, k) for k, v in {"e_k": f32(2, 4, seed=8), "starts": np.array([0], np.int64),
                                                    "ends": np.array([4], np.int64),
                                                    "axes": np.array([1], np.int64)}.items()])
    nodes = [helper.make_node(reduce, ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["positive"]),
             helper.make_node("Concat", ["x", "x"], ["xx"], axis=1),  # [2, 6] for the else branch's slice
             helper.make_node("If", ["positive"], ["y", "z"], name="branch", then_branch=then_g, else_branch=else_g)]
    return model_of(nodes, [vi("x", TP.FLOAT, [2, 3])], [vi("y", TP.FLOAT, [2, 4]), vi("z", TP.FLOAT, [2, 3])],
                    {"W": f32(3, 4, seed=5), "bias": f32(2, 3, seed=6), "zero": np.float32(0), "two": np.float32(2)})


def test_runtime_if_becomes_if_and_matches_onnxruntime_for_both_branches():
    proto = _if_model()
    result = convert(proto, quantize="none")
    model = result.model
    assert ops(model).count("IF") == 1 and len(model.subgraphs) == 3
    (if_op,) = [op for op in model.subgraphs[0].operators if model.op_name(op) == "IF"]
    then_i, else_i = if_op.options["then_subgraph_index"], if_op.options["else_subgraph_index"]
    assert {then_i, else_i} == {1, 2}
    # IF's inputs after the condition are the outer run-time values the branches read: x (then) and xx (else)
    sg = model.subgraphs[0]
    captured = sorted(sg.tensors[t].name for t in if_op.inputs[1:])
    assert captured == ["x", "xx"]
    for b in (then_i, else_i):
        assert len(model.subgraphs[b].inputs) == len(if_op.inputs) - 1
        assert len(model.subgraphs[b].outputs) == len(if_op.outputs) == 2
    assert "MATMUL" not in ops(model, then_i) and "LOGISTIC" in ops(model, else_i)
    seen = set()
    for seed in range(12):
        x = f32(2, 3, seed=seed) + (0.8 if seed % 2 else -0.8)
        want = ort_run(proto, {"x": x})
        close(run_litert(result.tflite, [x]), want, f"seed {seed}")
        seen.add(bool(x.sum() > 0))
    assert seen == {True, False}  # both branches ran
    assert any("If 'branch'" in n and "known only at run time" in n for n in result.report["import"]["control_flow"])


def test_if_on_a_bool_input_and_a_nested_runtime_if():
    """cond is a graph input; the then branch holds another run-time If (on a second bool input): IF in IF."""
    inner = helper.make_node(
        "If", ["c2"], ["inner_y"], name="inner",
        then_branch=helper.make_graph([helper.make_node("Tanh", ["x"], ["i_t"])], "it", [],
                                      [vi("i_t", TP.FLOAT, [1, 5])]),
        else_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["i_e"])], "ie", [],
                                      [vi("i_e", TP.FLOAT, [1, 5])]))
    then_g = helper.make_graph([inner, helper.make_node("Add", ["inner_y", "x"], ["t_y"])], "then", [],
                               [vi("t_y", TP.FLOAT, [1, 5])])
    else_g = helper.make_graph([helper.make_node("Abs", ["x"], ["e_y"])], "else", [], [vi("e_y", TP.FLOAT, [1, 5])])
    proto = model_of([helper.make_node("If", ["c1"], ["y"], name="outer", then_branch=then_g, else_branch=else_g)],
                     [vi("x", TP.FLOAT, [1, 5]), vi("c1", TP.BOOL, []), vi("c2", TP.BOOL, [])],
                     [vi("y", TP.FLOAT, [1, 5])])
    result = convert(proto, quantize="none")
    assert len(result.model.subgraphs) == 5  # main, outer then / else, inner then / else
    x = f32(1, 5, seed=3)
    for c1 in (True, False):
        for c2 in (True, False):
            feeds = {"x": x, "c1": np.array(c1), "c2": np.array(c2)}
            close(run_litert(result.tflite, list(feeds.values())), ort_run(proto, feeds), f"c1={c1} c2={c2}")


def test_branches_of_different_shapes_are_refused_in_one_line():
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [vi("t", TP.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["e"], axis=1)], "else", [],
                               [vi("e", TP.FLOAT, None)])
    proto = model_of([helper.make_node("If", ["c"], ["y"], name="ragged", then_branch=then_g, else_branch=else_g)],
                     [vi("x", TP.FLOAT, [1, 2]), vi("c", TP.BOOL, [])], [vi("y", TP.FLOAT, None)])
    with pytest.raises(ConversionError) as err:
        convert(proto, quantize="none")
    (problem,) = err.value.problems
    assert problem.startswith("node 'ragged' (If, opset 16): ") and "\n" not in problem


def test_fp16_and_dynamic_of_a_model_with_runtime_if_convert():
    """fp16 and dynamic-range convert IF / WHILE subgraphs too (they were refused before issue 24's last points;
    tests/test_convert_control_flow_weights.py checks them on every runtime): the IF stays, with its subgraphs."""
    proto = _if_model()
    for mode in ("fp16", "dynamic"):
        result = convert(proto, quantize=mode, calibration=_if_samples(6))
        assert ops(result.model).count("IF") == 1 and len(result.model.subgraphs) == 3, mode
        for x in _if_samples(2, offset=30):
            (got_y, got_z), (want_y, want_z) = run_litert(result.tflite, [x]), ort_run(proto, {"x": x})
            np.testing.assert_allclose(got_z, want_z, rtol=0, atol=1e-2, err_msg=mode)
            np.testing.assert_allclose(got_y, want_y, rtol=0, atol=5e-2, err_msg=mode)


# ---------------------------------------------------------------------------------------------- int8 with IF / WHILE
INT8_SNR_DB = 20.0  # each output of each run against onnxruntime (8 bits over the union of both branches' ranges)


def snr_db(got, want) -> float:
    want = np.asarray(want, np.float64)
    err = np.asarray(got, np.float64) - want
    return float(10 * np.log10(max(np.sum(want ** 2), 1e-30) / max(np.sum(err ** 2), 1e-30)))


def _if_samples(count, offset=0):
    """Samples taking both branches (odd seeds: sum > 0, the then branch)."""
    return [f32(2, 3, seed=offset + k) + (0.8 if k % 2 else -0.8) for k in range(count)]


_CONVERTED: dict = {}


def _int8(key, build, calibration, **kwargs):
    """A model converted once per module (the runtime grid runs each test twice)."""
    if key not in _CONVERTED:
        _CONVERTED[key] = convert(build(), quantize="int8", calibration=calibration, io="float32", min_snr=20,
                                  **kwargs)
    return _CONVERTED[key]


def _quant(model, sg, t):
    q = model.subgraphs[sg].tensors[t].quantization
    return model.subgraphs[sg].tensors[t].type, float(q.scale[0]), int(q.zero_point[0])


def test_int8_of_a_runtime_if_matches_onnxruntime_on_both_branches(runtime):
    from tests.oprunner import run_on

    proto = _if_model("ReduceMean")
    result = _int8("if", lambda: _if_model("ReduceMean"), _if_samples(64))
    model = result.model
    (if_op,) = [op for op in model.subgraphs[0].operators if model.op_name(op) == "IF"]
    branches = (if_op.options["then_subgraph_index"], if_op.options["else_subgraph_index"])
    # one scale per value crossing the call: the caller's tensor and each branch's input / output
    for b in branches:
        sub = model.subgraphs[b]
        assert "QUANTIZE" not in ops(model, b)[:1] and "DEQUANTIZE" not in ops(model, b)  # integer inside
        for k, t in enumerate(if_op.inputs[1:]):
            assert _quant(model, b, sub.inputs[k]) == _quant(model, 0, t)
        for k, t in enumerate(if_op.outputs):
            assert _quant(model, b, sub.outputs[k]) == _quant(model, 0, t)
    assert _quant(model, 0, if_op.outputs[0])[0] == "INT8"
    notes = result.report["quantization"]["report"]["notes"]
    assert any("2 subgraph(s) of IF / WHILE quantized" in n and "2 reached" in n for n in notes)
    taken = set()
    for x in _if_samples(6, offset=100):
        want = ort_run(proto, {"x": x})
        peers = {runtime: run_on(runtime, result.tflite, [x]), "litert": run_litert(result.tflite, [x])}
        for who, got in peers.items():
            for k, (g, w) in enumerate(zip(got, want)):
                assert snr_db(g, w) >= INT8_SNR_DB, (who, k, bool(x.sum() > 0), snr_db(g, w))
        taken.add(bool(x.sum() > 0))
    assert taken == {True, False}


def test_int8_of_a_while_matches_onnxruntime_for_every_trip_count(runtime):
    """The loop-carried accumulator keeps one scale over every iteration: WHILE's input and output, the cond's and
    the body's inputs and the body's output (calibration saw 0..5 iterations, the body on each)."""
    from tests.oprunner import run_on

    proto = _counting_loop()
    calibration = [[f32(1, 4, seed=k), f32(1, 4, seed=100 + k), np.array(k % 6, np.int64)] for k in range(24)]
    result = _int8("while", _counting_loop, calibration)
    model = result.model
    (w,) = [op for op in model.subgraphs[0].operators if model.op_name(op) == "WHILE"]
    cond, body = w.options["cond_subgraph_index"], w.options["body_subgraph_index"]
    carried = [k for k, t in enumerate(w.inputs) if model.subgraphs[0].tensors[t].type == "INT8"]
    assert carried  # the accumulator and the outer values the body reads
    for k in carried:
        one = _quant(model, 0, w.inputs[k])
        assert one == _quant(model, 0, w.outputs[k]) == _quant(model, cond, model.subgraphs[cond].inputs[k])
        assert one == _quant(model, body, model.subgraphs[body].inputs[k])
        assert one == _quant(model, body, model.subgraphs[body].outputs[k])
    # the counters are INT32 (TFLM has no INT64 ADD / LESS)
    assert model.subgraphs[body].tensors[model.subgraphs[body].inputs[0]].type == "INT32"
    x, acc0 = f32(1, 4, seed=50), f32(1, 4, seed=51)
    for n in (0, 1, 3, 5):
        feeds = {"x": x, "acc0": acc0, "n": np.array(n, np.int64)}
        (want,) = ort_run(proto, feeds)
        for who, got in ((runtime, run_on(runtime, result.tflite, list(feeds.values()))),
                         ("litert", run_litert(result.tflite, list(feeds.values())))):
            assert snr_db(got[0], want) >= INT8_SNR_DB, (who, n, snr_db(got[0], want))


def test_int8_branch_calibration_never_reached_stays_float_inside():
    """Calibrated on samples that all take the then branch: the else branch never ran, so its ops stay float32
    between a DEQUANTIZE of its inputs and a QUANTIZE of its outputs at the caller's scales (said in the notes);
    it still runs the other branch's samples."""
    from tests.oprunner import run_on

    positive = [s for s in _if_samples(24) if s.sum() > 0]
    result = convert(_if_model(), quantize="int8", calibration=positive, io="float32", min_snr=20)
    model = result.model
    (if_op,) = [op for op in model.subgraphs[0].operators if model.op_name(op) == "IF"]
    then_i, else_i = if_op.options["then_subgraph_index"], if_op.options["else_subgraph_index"]
    assert "DEQUANTIZE" not in ops(model, then_i)
    assert "DEQUANTIZE" in ops(model, else_i) and "QUANTIZE" in ops(model, else_i)
    logistic = [op for op in model.subgraphs[else_i].operators if model.op_name(op) == "LOGISTIC"]
    assert model.subgraphs[else_i].tensors[logistic[0].outputs[0]].type == "FLOAT32"
    for k, t in enumerate(if_op.outputs):
        assert _quant(model, else_i, model.subgraphs[else_i].outputs[k]) == _quant(model, 0, t)
    notes = result.report["quantization"]["report"]["notes"]
    assert any(f"subgraph {else_i}" in n and "never ran on the calibration samples" in n for n in notes)
    x = _if_samples(2, offset=300)[0]  # k = 0: the else branch
    assert x.sum() < 0
    got = run_on("python", result.tflite, [x])
    assert np.isfinite(got[0]).all() and got[0].shape == (2, 4)


# ---------------------------------------------------------------------------------------------- TFLM runs WHILE
def _until_loop():
    """acc += x * (i + 1) until sum(acc) >= 6 or 20 iterations: the body reads the iteration number through a Cast
    to float (TorchScript's `for i in range(...)` as float)."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=TP.FLOAT),
         helper.make_node("Add", ["fi", "one"], ["fi1"]),
         helper.make_node("Mul", ["x", "fi1"], ["step"]),
         helper.make_node("Add", ["acc", "step"], ["acc_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"])],
        "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("acc", TP.FLOAT, [1, 3])],
        [vi("cond_out", TP.BOOL, []), vi("acc_out", TP.FLOAT, [1, 3])],
        [numpy_helper.from_array(np.float32(6), "limit"), numpy_helper.from_array(np.float32(1), "one")])
    return model_of([helper.make_node("Loop", ["M", "", "acc0"], ["acc"], name="until", body=body)],
                    [vi("x", TP.FLOAT, [1, 3]), vi("acc0", TP.FLOAT, [1, 3])], [vi("acc", TP.FLOAT, [1, 3])],
                    {"M": np.array(20, np.int64)})


def test_while_counters_are_int32_and_tflm_runs_the_loop():
    """TFLM has no INT64 ADD / LESS / CAST: the iteration number and the trip count are INT32 loop variables, and a
    body that reads the iteration number only through a Cast casts the int32 counter itself. TFLM then runs the
    float model (equal to onnxruntime) and the int8 one (bit-exact with our interpreter: TFLM is the integer
    reference)."""
    from tests.oprunner import run_peer

    proto = _until_loop()
    result = convert(proto, quantize="none")
    model = result.model
    (w,) = [op for op in model.subgraphs[0].operators if model.op_name(op) == "WHILE"]
    every = [model.subgraphs[s].tensors[t].type for s in range(len(model.subgraphs))
             for t in range(len(model.subgraphs[s].tensors))]
    assert "INT64" not in every
    body = model.subgraphs[w.options["body_subgraph_index"]]
    assert body.tensors[body.inputs[0]].type == "INT32"
    samples = [np.abs(f32(1, 3, seed=seed, scale=scale)) for seed, scale in ((1, 0.3), (2, 1.0), (3, 0.05))]
    zeros = np.zeros((1, 3), np.float32)
    for x in samples:
        (want,) = ort_run(proto, {"x": x, "acc0": zeros})
        for peer in ("tflm", "litert", "python"):
            np.testing.assert_allclose(run_peer(result.tflite, [x, zeros], peer, isolate=peer == "tflm")[0], want,
                                       rtol=0, atol=ATOL, err_msg=peer)
    calibration = [[np.abs(f32(1, 3, seed=k, scale=0.05 + 0.1 * (k % 10))), zeros] for k in range(30)]
    q = convert(proto, quantize="int8", calibration=calibration, allow_lossy=True)
    sg = q.model.subgraphs[0]
    (qx, qa) = (sg.tensors[t].quantization for t in sg.inputs)
    for x in samples:
        xi = np.clip(np.round(x / qx.scale[0]) + qx.zero_point[0], -128, 127).astype(np.int8)
        a0 = np.full((1, 3), qa.zero_point[0], np.int8)
        np.testing.assert_array_equal(run_peer(q.tflite, [xi, a0], "tflm", isolate=True)[0],
                                      run_peer(q.tflite, [xi, a0], "python")[0])


def test_convert_none_writes_the_model_our_interpreter_cannot_prepare_yet(tmp_path):
    """Until edge-sdk's runtimes have IF / WHILE kernels, convert still writes the float model and says why our
    interpreter did not prepare it (a row's kernel decides: once IF has one, the note goes and the arena is ours)."""
    from edge_sdk.runtime import op_table

    result = convert(_if_model(), quantize="none")
    out = result.save(tmp_path / "if.tflite")
    assert out.read_bytes() == result.tflite and result.tflite[4:8] == b"TFL3"
    if op_table.runtime_refusal("python", "IF", 1) is not None:
        assert any("not prepared by edge-sdk's interpreter" in n for n in result.report["notes"])
        assert result.report["output"]["arena_bytes"] is None and result.report["output"]["problems"]
    else:
        assert result.report["output"]["arena_bytes"] > 0


def test_cli_converts_a_runtime_if_with_quantize_none(tmp_path, capsys):
    from edge_sdk.cli import main

    src = tmp_path / "if.onnx"
    src.write_bytes(_if_model().SerializeToString())
    out = tmp_path / "if.tflite"
    assert main(["convert", str(src), "-o", str(out), "--quantize", "none", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["written"] == str(out) and report["output"]["ops"]["IF"] == 1
    x = f32(2, 3, seed=1)
    close(run_litert(out.read_bytes(), [x]), ort_run(_if_model(), {"x": x}))


# ---------------------------------------------------------------------------------------------- Loop -> WHILE
def _counting_loop(with_cond_input=False):
    """acc = acc0; for i in range(n) [while go]: acc = acc * 0.5 + x * (i + 1) + offset; n (int64 scalar) is a graph
    input, offset an outer run-time value the body reads (x - 1)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["i", "one_i"], ["i1"]),
         helper.make_node("Cast", ["i1"], ["fi"], to=TP.FLOAT),
         helper.make_node("Mul", ["x", "fi"], ["step"]),
         helper.make_node("Mul", ["acc", "half"], ["decayed"]),
         helper.make_node("Add", ["decayed", "step"], ["acc_s"]),
         helper.make_node("Add", ["acc_s", "offset"], ["acc_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("acc", TP.FLOAT, [1, 4])],
        [vi("cond_out", TP.BOOL, []), vi("acc_out", TP.FLOAT, [1, 4])],
        [numpy_helper.from_array(np.array(1, np.int64), "one_i"), numpy_helper.from_array(np.float32(0.5), "half")])
    nodes = [helper.make_node("Sub", ["x", "one_f"], ["offset"]),
             helper.make_node("Loop", ["n", "go" if with_cond_input else "", "acc0"], ["acc"], name="count",
                              body=body)]
    inputs = [vi("x", TP.FLOAT, [1, 4]), vi("acc0", TP.FLOAT, [1, 4]), vi("n", TP.INT64, [])]
    if with_cond_input:
        inputs.append(vi("go", TP.BOOL, []))
    return model_of(nodes, inputs, [vi("acc", TP.FLOAT, [1, 4])], {"one_f": np.float32(1)})


def test_loop_counting_to_a_runtime_n_becomes_while():
    proto = _counting_loop()
    result = convert(proto, quantize="none")
    model = result.model
    assert ops(model).count("WHILE") == 1 and len(model.subgraphs) == 3
    (w,) = [op for op in model.subgraphs[0].operators if model.op_name(op) == "WHILE"]
    cond_i, body_i = w.options["cond_subgraph_index"], w.options["body_subgraph_index"]
    assert len(w.inputs) == len(w.outputs) == len(model.subgraphs[cond_i].inputs) == \
        len(model.subgraphs[body_i].inputs) == len(model.subgraphs[body_i].outputs)
    assert "LESS" in ops(model, cond_i) and len(model.subgraphs[cond_i].outputs) == 1
    x, acc0 = f32(1, 4, seed=1), f32(1, 4, seed=2)
    for n in (0, 1, 2, 5, 9):
        feeds = {"x": x, "acc0": acc0, "n": np.array(n, np.int64)}
        close(run_litert(result.tflite, list(feeds.values())), ort_run(proto, feeds), f"n={n}")
    assert any("Loop 'count'" in note and "WHILE" in note and "'n'" in note
               for note in result.report["import"]["control_flow"])


def test_loop_with_runtime_trip_count_and_condition():
    proto = _counting_loop(with_cond_input=True)
    result = convert(proto, quantize="none")
    x, acc0 = f32(1, 4, seed=3), f32(1, 4, seed=4)
    for n, go in ((3, True), (3, False), (0, True)):
        feeds = {"x": x, "acc0": acc0, "n": np.array(n, np.int64), "go": np.array(go)}
        close(run_litert(result.tflite, list(feeds.values())), ort_run(proto, feeds), f"n={n} go={go}")


def test_loop_ending_on_the_data_becomes_while():
    """M = 50 (a constant) but the body stops once sum(acc) >= 3: the trip count depends on the data."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "x"], ["acc_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"])],
        "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("acc", TP.FLOAT, [1, 3])],
        [vi("cond_out", TP.BOOL, []), vi("acc_out", TP.FLOAT, [1, 3])],
        [numpy_helper.from_array(np.float32(3), "limit")])
    proto = model_of([helper.make_node("Loop", ["M", "", "acc0"], ["acc"], name="until", body=body)],
                     [vi("x", TP.FLOAT, [1, 3]), vi("acc0", TP.FLOAT, [1, 3])], [vi("acc", TP.FLOAT, [1, 3])],
                     {"M": np.array(50, np.int64)})
    result = convert(proto, quantize="none")
    assert "WHILE" in ops(result.model)
    for seed, scale in ((1, 0.3), (2, 1.0), (3, 0.05)):
        x = np.abs(f32(1, 3, seed=seed, scale=scale))
        feeds = {"x": x, "acc0": np.zeros((1, 3), np.float32)}
        close(run_litert(result.tflite, list(feeds.values())), ort_run(proto, feeds), f"seed {seed}")


def test_runtime_if_whose_branch_holds_a_constant_loop_unrolls_it_inside():
    """then: a Loop of 3 iterations (acc = acc * 2 + x) inside the branch unrolls there; else: x; cond run-time."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc", "two"], ["acc2"]), helper.make_node("Add", ["acc2", "x"], ["acc_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("acc", TP.FLOAT, [1, 3])],
        [vi("cond_out", TP.BOOL, []), vi("acc_out", TP.FLOAT, [1, 3])],
        [numpy_helper.from_array(np.float32(2), "two")])
    then_g = helper.make_graph([helper.make_node("Loop", ["three", "", "x"], ["t_y"], name="inner_loop", body=body)],
                               "then", [], [vi("t_y", TP.FLOAT, [1, 3])],
                               [numpy_helper.from_array(np.array(3, np.int64), "three")])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["e_y"])], "else", [],
                               [vi("e_y", TP.FLOAT, [1, 3])])
    proto = model_of([helper.make_node("If", ["c"], ["y"], name="pick", then_branch=then_g, else_branch=else_g)],
                     [vi("x", TP.FLOAT, [1, 3]), vi("c", TP.BOOL, [])], [vi("y", TP.FLOAT, [1, 3])])
    result = convert(proto, quantize="none")
    model = result.model
    assert len(model.subgraphs) == 3 and "WHILE" not in [model.op_name(op) for sg in model.subgraphs
                                                          for op in sg.operators]
    assert any("Loop 'inner_loop'" in n and "unrolled" in n for n in result.report["import"]["control_flow"])
    x = f32(1, 3, seed=9)
    for c in (True, False):
        feeds = {"x": x, "c": np.array(c)}
        close(run_litert(result.tflite, list(feeds.values())), ort_run(proto, feeds), f"c={c}")


def test_a_branch_whose_declared_shape_is_wrong_is_caught_by_preparing_it():
    """The branch declares [2, 4] but computes [2, 3] * [2, 4]: our interpreter prepares the model, IF's branches
    first, so the import refuses the model instead of writing one LiteRT would reject."""
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "k"], ["t_y"])], "then", [],
                               [vi("t_y", TP.FLOAT, [2, 4])],
                               [numpy_helper.from_array(f32(2, 4, seed=1), "k")])
    else_g = helper.make_graph([helper.make_node("Identity", ["w"], ["e_y"])], "else", [],
                               [vi("e_y", TP.FLOAT, [2, 4])])
    proto = model_of([helper.make_node("If", ["c"], ["y"], name="bad", then_branch=then_g, else_branch=else_g)],
                     [vi("x", TP.FLOAT, [2, 3]), vi("w", TP.FLOAT, [2, 4]), vi("c", TP.BOOL, [])],
                     [vi("y", TP.FLOAT, [2, 4])])
    with pytest.raises(ConversionError) as err:
        convert(proto, quantize="none")
    assert str(err.value).splitlines()[0] == "the converted model does not prepare in edge-sdk's interpreter"
    (problem,) = err.value.problems
    assert "MUL" in problem and "(2, 3), (2, 4)" in problem


def test_int16x8_of_a_runtime_if_keeps_int16_branches():
    """int16x8: the branches compute in int16 (symmetric, one scale per crossing value) and both keep >= 45 dB."""
    from tests.oprunner import run_on

    proto = _if_model("ReduceMean")
    result = convert(proto, quantize="int16x8", calibration=_if_samples(64), io="float32")
    model = result.model
    for b in (1, 2):
        sub = model.subgraphs[b]
        assert {sub.tensors[t].type for t in list(sub.inputs) + list(sub.outputs)} == {"INT16"}
        assert all(int(sub.tensors[t].quantization.zero_point[0]) == 0 for t in sub.inputs)
    taken = set()
    for x in _if_samples(6, offset=100):
        for k, (g, w) in enumerate(zip(run_on("python", result.tflite, [x]), ort_run(proto, {"x": x}))):
            assert snr_db(g, w) >= 45, (k, bool(x.sum() > 0), snr_db(g, w))
        taken.add(bool(x.sum() > 0))
    assert taken == {True, False}


def test_int8_division_in_a_branch_by_a_value_that_may_be_zero_stays_float():
    """A DIV inside a branch whose divisor's range holds zero (its quantized form may equal the zero point, which
    LiteRT's int8 DIV refuses at invoke) stays float32 in its subgraph, as in the main graph, and says so."""
    then_g = helper.make_graph([helper.make_node("Add", ["y", "three"], ["t_d"]),
                                helper.make_node("Div", ["x", "t_d"], ["t_q"])], "then", [],
                               [vi("t_q", TP.FLOAT, [1, 4])], [numpy_helper.from_array(np.float32(0.5), "three")])
    else_g = helper.make_graph([helper.make_node("Mul", ["x", "y"], ["e_q"])], "else", [], [vi("e_q", TP.FLOAT, [1, 4])])
    proto = model_of([helper.make_node("If", ["c"], ["q"], name="pick", then_branch=then_g, else_branch=else_g)],
                     [vi("x", TP.FLOAT, [1, 4]), vi("y", TP.FLOAT, [1, 4]), vi("c", TP.BOOL, [])],
                     [vi("q", TP.FLOAT, [1, 4])])
    samples = [[f32(1, 4, seed=k), np.abs(f32(1, 4, seed=50 + k)) + 1.0 - 2.0 * (k % 3 == 0), np.array(k % 2 == 0)]
               for k in range(24)]
    result = convert(proto, quantize="int8", calibration=samples, io="float32", allow_lossy=True)
    model = result.model
    (if_op,) = [op for op in model.subgraphs[0].operators if model.op_name(op) == "IF"]
    then_i = if_op.options["then_subgraph_index"]
    (div,) = [op for op in model.subgraphs[then_i].operators if model.op_name(op) == "DIV"]
    assert model.subgraphs[then_i].tensors[div.outputs[0]].type == "FLOAT32"
    notes = result.report["quantization"]["report"]["notes"]
    assert any(f"subgraph {then_i} op" in n and "DIV stays float32" in n and "zero point" in n for n in notes)
    x, y = f32(1, 4, seed=99), np.full((1, 4), 0.7, np.float32)
    got = run_litert(result.tflite, [x, y, np.array(True)])  # LiteRT runs it (no int8 DIV by a zero quantum)
    assert np.isfinite(got[0]).all()


def _scan_loop():
    """acc = acc0; rows = []; for i in range(M = 12) while sum(acc) < 3: acc = acc * 0.5 + x; rows += [tanh(acc)]:
    a constant trip count, a data-dependent end, a scan output (a model output)."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc", "half"], ["decayed"]), helper.make_node("Add", ["decayed", "x"], ["acc_out"]),
         helper.make_node("Tanh", ["acc_out"], ["row"]),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"])],
        "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("acc", TP.FLOAT, [1, 4])],
        [vi("cond_out", TP.BOOL, []), vi("acc_out", TP.FLOAT, [1, 4]), vi("row", TP.FLOAT, [1, 4])],
        [numpy_helper.from_array(np.float32(0.5), "half"), numpy_helper.from_array(np.float32(3), "limit")])
    nodes = [helper.make_node("Loop", ["M", "", "acc0"], ["acc", "rows"], name="scan_rows", body=body)]
    return model_of(nodes, [vi("x", TP.FLOAT, [1, 4]), vi("acc0", TP.FLOAT, [1, 4])],
                    [vi("acc", TP.FLOAT, [1, 4]), vi("rows", TP.FLOAT, None)], {"M": np.array(12, np.int64)})


def test_loop_with_scan_output_and_a_data_dependent_end_writes_trip_count_rows(runtime):
    """convert() of a WHILE with a scan output buffer (DYNAMIC_UPDATE_SLICE at the iteration number): the rows run
    equal onnxruntime's, the others stay zero, on both runtimes and LiteRT."""
    from tests.oprunner import run_on

    proto = _scan_loop()
    result = _CONVERTED.get("scan") or _CONVERTED.setdefault("scan", convert(proto, quantize="none"))
    (w,) = [op for op in result.model.subgraphs[0].operators if result.model.op_name(op) == "WHILE"]
    assert "DYNAMIC_UPDATE_SLICE" in ops(result.model, w.options["body_subgraph_index"])
    assert any("into buffers of 12 rows" in n and "stay zero" in n for n in result.report["notes"])
    counts = set()
    for seed, scale in ((1, 0.3), (2, 2.0), (3, 0.05)):
        x, acc0 = np.abs(f32(1, 4, seed=seed, scale=scale)), f32(1, 4, seed=seed + 10, scale=0.1)
        acc, rows = ort_run(proto, {"x": x, "acc0": acc0})
        counts.add(len(rows))
        for who, got in ((runtime, run_on(runtime, result.tflite, [x, acc0])),
                         ("litert", run_litert(result.tflite, [x, acc0]))):
            assert got[1].shape == (12, 1, 4), who
            close([got[0], got[1][:len(rows)]], [acc, rows], f"{who} seed {seed}")
            assert not got[1][len(rows):].any(), (who, seed)
    assert len(counts) > 1 and min(counts) < 12  # ended early, after different counts
