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
def _if_model():
    """y, z = if sum(x) > 0: (relu(x @ W + b_local), x * 2) else: (sigmoid(x) * k, x - bias): the condition is
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
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
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


def test_int8_of_a_model_with_runtime_if_is_refused_with_what_to_do():
    proto = _if_model()
    with pytest.raises(ConversionError) as err:
        convert(proto, quantize="int8", calibration=[f32(2, 3, seed=k) for k in range(8)])
    message = str(err.value)
    assert "IF" in message and "not quantized yet" in message and "--quantize none" in message
    assert "\n" not in message


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
