"""Streaming state through convert(): a recurrent ONNX model whose state is a graph input and output keeps it so by
default; ``stateful=True`` (``edge convert --stateful``) turns each state input / output pair into a resource
variable (VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE, zero at start through a CALL_ONCE init subgraph) that the
model keeps between invokes.

The models are built here with onnx.helper. onnxruntime is the reference, with its state carried by hand from chunk
to chunk; the stateful models are streamed chunk by chunk through edge-sdk's runtimes (the ``runtime`` grid) and
LiteRT's reference kernels, each keeping its own state.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters import convert
from edge_sdk import ConversionError, Interpreter
from edge_sdk.tasks.pipeline import dequantize, to_input

ATOL = 1e-4
HIDDEN, FEAT, STEPS = 6, 3, 2


def f32(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def vi(name, elem=TP.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def recurrent_model(op, seed=0, extra_output=False):
    """x [STEPS, 1, FEAT] (+ h [1, 1, HIDDEN], + c for LSTM) -> y, yh (, yc); with ``extra_output`` also a
    classifier on Y_h (score [1, 1]: the final state reaches an output that is not a state)."""
    gates = {"LSTM": 4, "GRU": 3}[op]
    r = np.random.default_rng(seed)
    inits = {"w": (r.standard_normal((1, gates * HIDDEN, FEAT)) * 0.5).astype(np.float32),
             "r": (r.standard_normal((1, gates * HIDDEN, HIDDEN)) * 0.5).astype(np.float32),
             "b": (r.standard_normal((1, 2 * gates * HIDDEN)) * 0.3).astype(np.float32)}
    inputs = [vi("x", TP.FLOAT, [STEPS, 1, FEAT]), vi("h", TP.FLOAT, [1, 1, HIDDEN])]
    names, outs = ["x", "w", "r", "b", "", "h"], ["y", "yh"]
    if op == "LSTM":
        names.append("c")
        inputs.append(vi("c", TP.FLOAT, [1, 1, HIDDEN]))
        outs.append("yc")
    nodes = [helper.make_node(op, names, outs, hidden_size=HIDDEN, name=f"rec_{op}")]
    outputs = [vi("y", TP.FLOAT, [STEPS, 1, 1, HIDDEN])] + [vi(o, TP.FLOAT, [1, 1, HIDDEN]) for o in outs[1:]]
    if extra_output:
        inits["head"] = (r.standard_normal((HIDDEN, 1)) * 0.5).astype(np.float32)
        nodes += [helper.make_node("Reshape", ["yh", "flat"], ["yh_flat"]),
                  helper.make_node("MatMul", ["yh_flat", "head"], ["score"])]
        inits["flat"] = np.array([1, HIDDEN], np.int64)
        outputs.append(vi("score", TP.FLOAT, [1, 1]))
    graph = helper.make_graph(nodes, "stream", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m


class OnnxStream:
    """onnxruntime, the state carried by hand: each chunk's state outputs are the next chunk's state inputs."""

    def __init__(self, proto):
        self.sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.sess.get_inputs()]
        self.out_names = [o.name for o in self.sess.get_outputs()]
        self.reset()

    def reset(self):
        self.state = {n: np.zeros(i.shape, np.float32) for n, i in zip(self.names, self.sess.get_inputs())
                      if n in ("h", "c")}

    def __call__(self, x):
        outs = dict(zip(self.out_names, self.sess.run(None, {"x": x, **self.state})))
        self.state = {"h": outs["yh"], **({"c": outs["yc"]} if "c" in self.state else {})}
        return outs


class Stream:
    """A converted model invoked chunk by chunk in one interpreter (edge-sdk's on ``backend``, or LiteRT's reference
    kernels): float values in and out, (de)quantized at integer I/O."""

    def __init__(self, tflite: bytes, backend: str):
        if backend == "litert":
            from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

            self.it = LiteRT(model_content=tflite, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                             num_threads=1)
        else:
            self.it = Interpreter(model_content=tflite, backend=backend)
        self.it.allocate_tensors()

    def __call__(self, x):
        return self.step(x)

    def step(self, *values):
        """One invoke with the model's inputs in order (float values)."""
        for d, x in zip(self.it.get_input_details(), values):  # quantized at integer inputs (an int64 rate as it is)
            self.it.set_tensor(d["index"], to_input(x, d))
        self.it.invoke()
        # a float output of an int8 model is 'NAME_dequant'
        out = {o["name"].removesuffix("_dequant"): dequantize(self.it.get_tensor(o["index"]), o)
               for o in self.it.get_output_details()}
        return out


def chunks(n=5, seed=10):
    return [f32(STEPS, 1, FEAT, seed=seed + k) for k in range(n)]


def ops(model, sg=0):
    return [model.op_name(op) for op in model.subgraphs[sg].operators]


# ---------------------------------------------------------------------------------------------- float
@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_stateful_streams_like_onnxruntime_carrying_state_by_hand(runtime, op):
    proto = recurrent_model(op)
    result = convert(proto, quantize="none", stateful=True)
    model = result.model
    sg = model.subgraphs[0]
    assert [sg.tensors[t].name for t in sg.inputs] == ["x"] and [sg.tensors[t].name for t in sg.outputs] == ["y"]
    states = ["h", "c"] if op == "LSTM" else ["h"]
    assert ops(model)[:1 + 2 * len(states)] == ["CALL_ONCE"] + ["VAR_HANDLE", "READ_VARIABLE"] * len(states)
    assert ops(model).count("ASSIGN_VARIABLE") == len(states) and ops(model)[-1] == "ASSIGN_VARIABLE"
    assert ops(model, 1) == ["VAR_HANDLE", "ASSIGN_VARIABLE"] * len(states)  # the init subgraph: zeros
    # the report lists the state tensors
    report = result.report["state"]
    assert report["stateful"] is True and "reset_all_variables" in report["reset"]
    assert [(v["input"], v["output"], v["shape"], v["type"]) for v in report["variables"]] == \
        [(s, f"y{s}", [1, 1, HIDDEN], "FLOAT32") for s in states]
    assert result.manifest["io"]["inputs"] == [{"name": "x", "shape": [STEPS, 1, FEAT], "type": "FLOAT32"}]
    reference = OnnxStream(proto)
    ours, litert = Stream(result.tflite, runtime), Stream(result.tflite, "litert")
    for k, x in enumerate(chunks()):
        want = reference(x)["y"]
        np.testing.assert_allclose(ours(x)["y"], want, rtol=0, atol=ATOL, err_msg=f"{runtime}, chunk {k}")
        np.testing.assert_allclose(litert(x)["y"], want, rtol=0, atol=ATOL, err_msg=f"litert, chunk {k}")
    assert np.abs(reference.state["h"]).max() > 0.1  # the state did carry something


def test_reset_starts_a_new_sequence(runtime):
    """reset_all_variables() of our runtimes puts the state back to zero (the variables read as their zero point);
    with LiteRT, whose reset_all_variables() leaves resource variables alone, a new Interpreter does."""
    proto = recurrent_model("LSTM", seed=3)
    result = convert(proto, quantize="none", stateful=True)
    xs = chunks(3, seed=30)
    reference = OnnxStream(proto)
    first = [reference(x)["y"] for x in xs]
    ours = Stream(result.tflite, runtime)
    for x in xs:
        ours(x)
    ours.it.reset_all_variables()
    for k, x in enumerate(xs):
        np.testing.assert_allclose(ours(x)["y"], first[k], rtol=0, atol=ATOL, err_msg=f"after reset, chunk {k}")
    litert = Stream(result.tflite, "litert")
    np.testing.assert_allclose(litert(xs[0])["y"], first[0], rtol=0, atol=ATOL)


def test_default_keeps_the_state_as_inputs_and_outputs_and_lists_it():
    proto = recurrent_model("LSTM")
    result = convert(proto, quantize="none")
    sg = result.model.subgraphs[0]
    assert [sg.tensors[t].name for t in sg.inputs] == ["x", "h", "c"]
    assert [sg.tensors[t].name for t in sg.outputs] == ["y", "yh", "yc"]
    assert len(result.model.subgraphs) == 1 and "READ_VARIABLE" not in ops(result.model)
    state = result.report["state"]
    assert state["stateful"] is False
    assert [(t["input"], t["output"], t["shape"]) for t in state["tensors"]] == \
        [("h", "yh", [1, 1, HIDDEN]), ("c", "yc", [1, 1, HIDDEN])]
    assert state["tensors"][0]["states"] == ["rec_LSTM:initial_h"]


def test_a_state_that_also_feeds_another_output_pairs_with_its_own_output(runtime):
    """Y_h reaches two outputs (yh and a score computed from it): the pair is the one of the state's shape."""
    proto = recurrent_model("GRU", seed=5, extra_output=True)
    result = convert(proto, quantize="none", stateful=True)
    assert [(v["input"], v["output"]) for v in result.report["state"]["variables"]] == [("h", "yh")]
    sg = result.model.subgraphs[0]
    assert [sg.tensors[t].name for t in sg.outputs] == ["y", "score"]
    reference, ours = OnnxStream(proto), Stream(result.tflite, runtime)
    for k, x in enumerate(chunks(4, seed=50)):
        want, got = reference(x), ours(x)
        for name in ("y", "score"):
            np.testing.assert_allclose(got[name], want[name], rtol=0, atol=ATOL, err_msg=f"{name}, chunk {k}")


def test_silero_like_state_of_two_lstm_states_is_one_variable():
    """silero VAD keeps h and c in one [2, 1, H] input / output: the two states pair once."""
    from tests.test_import_onnx_streaming import CHUNK, H, _vad_model

    proto = _vad_model()
    sr = 16000
    # sr pinned (its If folds to the 16 kHz branch): an initializer takes the input's place
    pinned = type(proto)()
    pinned.CopyFrom(proto)
    keep = [i for i in pinned.graph.input if i.name != "sr"]
    del pinned.graph.input[:]
    pinned.graph.input.extend(keep)
    pinned.graph.initializer.append(numpy_helper.from_array(np.array(sr, np.int64), "sr"))
    result = convert(pinned, quantize="none", stateful=True)
    (var,) = result.report["state"]["variables"]
    assert (var["input"], var["output"], var["shape"]) == ("state", "stateN", [2, 1, H])
    assert sorted(var["states"]) == ["/k16/decoder/rnn/LSTM:initial_c", "/k16/decoder/rnn/LSTM:initial_h"]
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    state = np.zeros((2, 1, H), np.float32)
    ours, litert = Stream(result.tflite, "python"), Stream(result.tflite, "litert")
    t = np.arange(4 * CHUNK) / sr
    audio = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * np.random.default_rng(0).standard_normal(t.size)
    for k in range(4):
        chunk = audio[k * CHUNK:(k + 1) * CHUNK].astype(np.float32)[None]
        want, state = sess.run(None, {"input": chunk, "state": state, "sr": np.array(sr, np.int64)})
        np.testing.assert_allclose(ours(chunk)["output"], want, rtol=0, atol=ATOL, err_msg=f"ours, chunk {k}")
        np.testing.assert_allclose(litert(chunk)["output"], want, rtol=0, atol=ATOL, err_msg=f"litert, chunk {k}")


def test_stateful_without_a_state_pair_is_refused():
    proto = recurrent_model("GRU")
    del proto.graph.output[1:]  # no state output: nothing to keep
    with pytest.raises(ConversionError) as err:
        convert(proto, quantize="none", stateful=True)
    assert "--stateful: no state input / output pair" in str(err.value) and "\n" not in str(err.value)


# ---------------------------------------------------------------------------------------------- int8
def _calibration(proto, n=48):
    """Samples [x, h] (+ c) with the states a stream really passes through (onnxruntime carrying them)."""
    reference = OnnxStream(proto)
    samples = []
    for k in range(n):
        x = f32(STEPS, 1, FEAT, seed=200 + k)
        samples.append([x, *reference.state.values()])
        reference(x)
    return samples


@pytest.mark.parametrize("mode,io", [("int8", "int8"), ("int8", "float32"), ("int16x8", "int8")])
def test_quantized_stateful_keeps_an_integer_variable_at_one_scale(mode, io):
    proto = recurrent_model("GRU", seed=1)
    act = "INT8" if mode == "int8" else "INT16"
    # allow_lossy: the accuracy guard judges the quantizer; this test compares the stateful model with the same
    # quantized model carrying its state by hand
    result = convert(proto, quantize=mode, calibration=_calibration(proto), io=io, stateful=True, allow_lossy=True)
    model = result.model
    sg = model.subgraphs[0]
    (read,) = [op for op in sg.operators if model.op_name(op) == "READ_VARIABLE"]
    (assign,) = [op for op in sg.operators if model.op_name(op) == "ASSIGN_VARIABLE"]
    held, written = sg.tensors[read.outputs[0]], sg.tensors[assign.inputs[1]]
    assert held.type == written.type == act
    assert held.quantization.scale.tolist() == written.quantization.scale.tolist()
    assert held.quantization.zero_point.tolist() == written.quantization.zero_point.tolist()
    # the init subgraph assigns real 0: the zero point
    init = model.subgraphs[1]
    assert ops(model, 1) == ["VAR_HANDLE", "ASSIGN_VARIABLE"]
    init_assign = init.operators[1]
    zeros = model.tensor_data(1, init_assign.inputs[1])
    assert np.all(zeros == held.quantization.zero_point[0])
    (var,) = result.report["state"]["variables"]
    assert var["type"] == act and var["scale"] == pytest.approx(float(held.quantization.scale[0]))
    if io == "float32":  # the float state input's QUANTIZE and output's DEQUANTIZE went with the pair
        assert [sg.tensors[t].name for t in sg.inputs] == ["x"]
        assert not [t.name for t in sg.tensors if t.type == "FLOAT32" and t.name in ("h", "yh", "yh_dequant")]
    # the same int8 model without --stateful, its state carried by hand (dequantized from the state output's
    # scale, quantized to the state input's): what the variable must do inside the model
    plain = convert(proto, quantize=mode, calibration=_calibration(proto), io=io, allow_lossy=True)
    reference = OnnxStream(proto)
    for backend in ("python", "litert"):
        stream, by_hand = Stream(result.tflite, backend), Stream(plain.tflite, backend)
        state_in = next(d for d in by_hand.it.get_input_details() if d["name"] == "h")
        h = np.zeros((1, 1, HIDDEN), np.float32)
        errors = []
        for k, x in enumerate(chunks(8, seed=70)):
            got = stream(x)["y"]
            want = by_hand.step(x, h)
            h = want["yh"]
            if state_in["dtype"] != np.float32:  # the carried state takes the input's scale, as the variable does
                scale, zp = state_in["quantization"]
                info = np.iinfo(state_in["dtype"])
                h = (np.clip(np.round(h / scale) + zp, info.min, info.max) - zp).astype(np.float32) * scale
            y_hand = want["y"]
            # the model requantizes the state with QUANTIZE's fixed-point multiplier, the hand carry in float: a
            # near-tie may round apart by one step of the state, a few int16 steps of y later
            steps = 1.01 if mode == "int8" else 4.01
            np.testing.assert_allclose(got, y_hand, rtol=0, atol=steps * _scale_of(plain, "y"),
                                       err_msg=f"{backend}, chunk {k}: stateful vs state carried by hand")
            errors.append(np.abs(got - reference(x)["y"]) if backend == "python" else 0)
        if backend == "python":  # and it tracks the float model (int8 error, no drift)
            assert np.mean(errors) < 0.05 and np.max(errors) < 0.3


def _scale_of(result, name) -> float:
    sg = result.model.subgraphs[0]
    prod = {t: op for op in sg.operators for t in op.outputs}
    for t in sg.outputs:
        tensor = sg.tensors[t]
        if tensor.name in (name, f"{name}_dequant"):
            if tensor.type == "FLOAT32":  # float I/O: the DEQUANTIZE's integer input
                tensor = sg.tensors[prod[t].inputs[0]]
            return float(tensor.quantization.scale[0])
    raise KeyError(name)


def test_cli_stateful_flag(tmp_path, capsys):
    from edge_sdk.cli import main

    src = tmp_path / "gru.onnx"
    src.write_bytes(recurrent_model("GRU").SerializeToString())
    out = tmp_path / "gru.tflite"
    assert main(["convert", str(src), "-o", str(out), "--quantize", "none", "--stateful", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(v["input"], v["output"]) for v in report["state"]["variables"]] == [("h", "yh")]
    ours = Stream(out.read_bytes(), "python")
    reference = OnnxStream(recurrent_model("GRU"))
    for x in chunks(3):
        np.testing.assert_allclose(ours(x)["y"], reference(x)["y"], rtol=0, atol=ATOL)


def test_stateful_with_eval_data_is_refused_before_any_work(tmp_path):
    data = tmp_path / "eval.npz"
    np.savez(data, x=np.zeros((2, STEPS, 1, FEAT), np.float32), y=np.zeros(2, np.int64))
    with pytest.raises(ConversionError) as err:
        convert(recurrent_model("GRU"), quantize="none", stateful=True, eval_data=data)
    assert str(err.value).splitlines()[0] == "cannot convert: bad settings"
    assert any("not with stateful" in p for p in err.value.problems)
