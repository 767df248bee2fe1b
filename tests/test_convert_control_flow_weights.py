"""fp16 and dynamic-range conversion of models with run-time IF / WHILE (issue 24 point 3 through point 1): every
subgraph's constants under the main graph's rules (float16 unless float16 cannot hold one, int8 weights for the ops
whose row has ``dynamic``), the accuracy guard run through the whole model, the subgraphs the guard's samples never
reached named in the notes.

Models built with onnx.helper; onnxruntime is the reference; LiteRT (which runs IF / WHILE, float16 DEQUANTIZE and
the hybrid kernels) and our runtimes run the converted models. Each model is converted once per module."""

from __future__ import annotations

import numpy as np
import pytest

from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters import convert
from tests.peers import run_litert
from tests.test_convert_control_flow import f32, model_of, ops, ort_run, snr_db, vi

EPS = 1e-10  # a log epsilon: float16 holds it as 0.0, so it stays float32 (in the else branch)
FP16_SNR_DB = 50.0  # float16 weights: ~11 bits
DYNAMIC_SNR_DB = 30.0  # int8 weights, activations quantized on the fly per invoke


def _gain_if():
    """y = if gain > 0 (gain a rank-0 float input): tanh(x @ W1 + b1) * gain else: log(|x @ W2| + 1 + EPS): a scalar
    condition, a weighted layer in each branch, a constant float16 cannot hold in the else branch."""
    then_g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W1"], ["t_mm"]), helper.make_node("Add", ["t_mm", "b1"], ["t_pre"]),
         helper.make_node("Tanh", ["t_pre"], ["t_th"]), helper.make_node("Mul", ["t_th", "gain"], ["t_y"])],
        "then", [], [vi("t_y", TP.FLOAT, [1, 6])],
        [numpy_helper.from_array(f32(8, 6, seed=1, scale=0.4), "W1"), numpy_helper.from_array(f32(6, seed=2), "b1")])
    else_g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W2"], ["e_mm"]), helper.make_node("Abs", ["e_mm"], ["e_abs"]),
         helper.make_node("Add", ["e_abs", "one"], ["e_one"]), helper.make_node("Add", ["e_one", "eps"], ["e_pos"]), helper.make_node("Log", ["e_pos"], ["e_y"])],
        "else", [], [vi("e_y", TP.FLOAT, [1, 6])],
        [numpy_helper.from_array(f32(8, 6, seed=3, scale=0.4), "W2"),
         numpy_helper.from_array(np.float32(EPS), "eps"), numpy_helper.from_array(np.float32(1), "one")])
    nodes = [helper.make_node("Greater", ["gain", "zero"], ["positive"]),
             helper.make_node("If", ["positive"], ["y"], name="by_gain", then_branch=then_g, else_branch=else_g)]
    return model_of(nodes, [vi("x", TP.FLOAT, [1, 8]), vi("gain", TP.FLOAT, [])], [vi("y", TP.FLOAT, [1, 6])],
                    {"zero": np.float32(0)})


def _gain_samples(count, offset=0, signs=(1, -1)):
    return [[f32(1, 8, seed=offset + k), np.array(signs[k % len(signs)] * (0.5 + k / count), np.float32)]
            for k in range(count)]


def _recurrent_loop():
    """h = h0; for i in range(n): h = tanh(h @ Wh + x @ Wx + b); n a run-time int64 input: WHILE with two weighted
    layers in its body."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h", "Wh"], ["hh"]), helper.make_node("MatMul", ["x", "Wx"], ["xh"]),
         helper.make_node("Add", ["hh", "xh"], ["s"]), helper.make_node("Add", ["s", "b"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]), helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("h", TP.FLOAT, [1, 8])],
        [vi("cond_out", TP.BOOL, []), vi("h_out", TP.FLOAT, [1, 8])],
        [numpy_helper.from_array(f32(8, 8, seed=11, scale=0.3), "Wh"),
         numpy_helper.from_array(f32(4, 8, seed=12, scale=0.5), "Wx"), numpy_helper.from_array(f32(8, seed=13), "b")])
    nodes = [helper.make_node("Loop", ["n", "", "h0"], ["h"], name="steps", body=body)]
    return model_of(nodes, [vi("x", TP.FLOAT, [1, 4]), vi("h0", TP.FLOAT, [1, 8]), vi("n", TP.INT64, [])],
                    [vi("h", TP.FLOAT, [1, 8])])


def _loop_samples(count, offset=0):
    return [[f32(1, 4, seed=offset + k), f32(1, 8, seed=offset + 50 + k), np.array(1 + k % 5, np.int64)]
            for k in range(count)]


MODELS = {"if": (_gain_if, _gain_samples), "while": (_recurrent_loop, _loop_samples)}


@pytest.fixture(scope="module")
def converted():
    """{(model, mode): convert()'s result}, each converted once (guard samples take both branches / 1..5 trips)."""
    out = {}
    for key, (build, samples) in MODELS.items():
        for mode in ("fp16", "dynamic"):
            out[key, mode] = convert(build(), quantize=mode, calibration=samples(10))
    return out


def _report(result):
    return result.report["quantization"]["report"]


@pytest.mark.parametrize("mode", ["fp16", "dynamic"])
def test_if_on_a_scalar_input_converts_every_branch(converted, mode, runtime):
    from tests.oprunner import run_on

    result = converted["if", mode]
    model = result.model
    (if_op,) = [op for op in model.subgraphs[0].operators if model.op_name(op) == "IF"]
    then_i, else_i = if_op.options["then_subgraph_index"], if_op.options["else_subgraph_index"]
    report = _report(result)
    if mode == "fp16":  # every branch's float constants as float16 behind DEQUANTIZE, but the epsilon
        for b in (then_i, else_i):
            assert "DEQUANTIZE" in ops(model, b)
            assert any(t.type == "FLOAT16" for t in model.subgraphs[b].tensors)
        (kept,) = report["kept_float32"]
        assert kept["subgraph"] == else_i and "under-flow" in kept["reason"]
        assert any(f"(subgraph {else_i}) stays float32" in n for n in report["notes"])
        eps = [t for t in model.subgraphs[else_i].tensors if t.name == kept["name"]]
        assert [t.type for t in eps] == ["FLOAT32"]
    else:  # each branch's weights in int8, read by the hybrid FULLY_CONNECTED
        assert sorted(w.get("subgraph", 0) for w in report["weights"]) == sorted([then_i, else_i])
        for b in (then_i, else_i):
            assert any(t.type == "INT8" and t.buffer for t in model.subgraphs[b].tensors)
    guard = report["guard"]
    assert guard["measured"] and guard["met"]
    assert all(int(n) > 0 for n in guard["subgraph_runs"].values()) and not guard["unreached"]
    low = FP16_SNR_DB if mode == "fp16" else DYNAMIC_SNR_DB
    proto = _gain_if()
    taken = set()
    for sample in _gain_samples(4, offset=100):
        (want,) = ort_run(proto, {"x": sample[0], "gain": sample[1]})
        for who, got in ((runtime, run_on(runtime, result.tflite, sample)), ("litert", run_litert(result.tflite, sample))):
            assert snr_db(got[0], want) >= low, (who, mode, float(sample[1]), snr_db(got[0], want))
        taken.add(bool(sample[1] > 0))
    assert taken == {True, False}


@pytest.mark.parametrize("mode", ["fp16", "dynamic"])
def test_while_body_weights_convert_and_match_onnxruntime(converted, mode, runtime):
    from tests.oprunner import run_on

    result = converted["while", mode]
    model = result.model
    (w,) = [op for op in model.subgraphs[0].operators if model.op_name(op) == "WHILE"]
    body = w.options["body_subgraph_index"]
    report = _report(result)
    if mode == "fp16":
        assert ops(model, body).count("DEQUANTIZE") >= 3 and not report["kept_float32"]
    else:
        assert [w_.get("subgraph", 0) for w_ in report["weights"]] == [body, body]
    assert report["guard"]["measured"] and report["guard"]["met"]
    runs = {int(k): v for k, v in report["guard"]["subgraph_runs"].items()}  # the report went through JSON
    assert runs[body] > 0 and not report["guard"]["unreached"]
    low = FP16_SNR_DB if mode == "fp16" else DYNAMIC_SNR_DB
    proto = _recurrent_loop()
    for sample in _loop_samples(3, offset=200) + [[f32(1, 4, seed=9), f32(1, 8, seed=10), np.array(0, np.int64)]]:
        (want,) = ort_run(proto, {"x": sample[0], "h0": sample[1], "n": sample[2]})
        for who, got in ((runtime, run_on(runtime, result.tflite, sample)), ("litert", run_litert(result.tflite, sample))):
            assert snr_db(got[0], want) >= low, (who, mode, int(sample[2]), snr_db(got[0], want))


def test_guard_names_the_branch_its_samples_never_reached():
    """Guard samples that all take the then branch: the else branch's float16 constants are not measured, and the
    notes say which subgraph that is."""
    positive = _gain_samples(6, signs=(1,))
    result = convert(_gain_if(), quantize="fp16", calibration=positive)
    model = result.model
    (if_op,) = [op for op in model.subgraphs[0].operators if model.op_name(op) == "IF"]
    else_i = if_op.options["else_subgraph_index"]
    report = _report(result)
    (note,) = report["guard"]["unreached"]
    assert note.startswith(f"subgraph {else_i} (") and "never ran on the guard's samples" in note
    assert note in report["notes"]
    runs = {int(k): v for k, v in report["guard"]["subgraph_runs"].items()}
    assert runs[else_i] == 0 and runs[if_op.options["then_subgraph_index"]] == 6


def test_fp16_of_a_stateful_model_converts_its_init_subgraph():
    """A model whose state is a resource variable (convert(stateful=True): CALL_ONCE runs an init subgraph) went the
    same way as IF / WHILE (refused before): fp16 converts it, streamed over three invokes in LiteRT it follows the
    float model."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    from edge_sdk.runtime.interpreter import Interpreter
    from tests.test_import_onnx_streaming import _recurrent_model

    stateful = convert(_recurrent_model("LSTM"), quantize="none", stateful=True)
    assert len(stateful.model.subgraphs) == 2
    half = convert(stateful.tflite, quantize="fp16")
    assert len(half.model.subgraphs) == 2 and half.report["quantization"]["report"]["guard"]["measured"]
    lite = LiteRT(model_content=half.tflite, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    ref = Interpreter(model_content=stateful.tflite)
    for it in (lite, ref):
        it.allocate_tensors()
    for step in range(3):
        outs = []
        for it in (lite, ref):
            for d in it.get_input_details():  # the same chunk for both (the state is kept inside)
                it.set_tensor(d["index"], f32(*d["shape"], seed=step))
            it.invoke()
            outs.append([np.array(it.get_tensor(d["index"])) for d in it.get_output_details()])
        for got, want in zip(*outs):
            assert snr_db(got, want) >= FP16_SNR_DB, (step, snr_db(got, want))
