"""Issue 24 walked from the CLI as a user (session 12): what failed on models built like the real ones.

- A streaming VAD exported with symbolic dims (input [batch, samples], state [2, batch, H]) and converted with
  --input-shape kept -1s in its signature, so ``edge convert --target`` (and ``edge check`` / ``edge flash`` after it)
  stopped asking for --input-shape again, though the folded graph runs only at the given shape.
- The text report said nothing about the state tensors (only --json had them), and labelled an If kept as TFLite IF
  "folded".
- A QDQ graph as onnxruntime's quantize_static writes it (a Conv's Relu dropped into its QDQ range, a residual Add)
  asked for calibration data: the Conv's range sat on the NCHW tensor the layout pass removes.
- The dynamic-range report line read "quantize   dynamic (None, io float32)".
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

from edge_sdk.cli import main  # noqa: E402

HIDDEN, SAMPLES = 8, 48


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TP.INT64 if name == "sr" else TP.FLOAT, shape)


def _branch(tag: str, seed: int):
    """audio [1, SAMPLES] -> MatMul -> LSTM from state[0] / state[1] -> ReLU -> MatMul -> sigmoid [1, 1], stateN."""
    r = np.random.default_rng(seed)
    w = {f"{tag}_proj": r.standard_normal((SAMPLES, 16)).astype(np.float32) / 4,
         f"{tag}_W": r.standard_normal((1, 4 * HIDDEN, 16)).astype(np.float32) / 4,
         f"{tag}_R": r.standard_normal((1, 4 * HIDDEN, HIDDEN)).astype(np.float32) / 3,
         f"{tag}_B": r.standard_normal((1, 8 * HIDDEN)).astype(np.float32) / 10,
         f"{tag}_dec": r.standard_normal((HIDDEN, 1)).astype(np.float32),
         f"{tag}_i0": np.array(0, np.int64), f"{tag}_i1": np.array(1, np.int64), f"{tag}_ax": np.array([0], np.int64),
         f"{tag}_o": np.array([1, 1], np.int64), f"{tag}_h": np.array([1, HIDDEN], np.int64)}
    t = tag + "_"
    nodes = [helper.make_node("MatMul", ["input", t + "proj"], [t + "f"]),
             helper.make_node("Unsqueeze", [t + "f", t + "ax"], [t + "seq"]),
             helper.make_node("Gather", ["state", t + "i0"], [t + "hg"], axis=0),
             helper.make_node("Gather", ["state", t + "i1"], [t + "cg"], axis=0),
             helper.make_node("Unsqueeze", [t + "hg", t + "ax"], [t + "h0"]),
             helper.make_node("Unsqueeze", [t + "cg", t + "ax"], [t + "c0"]),
             helper.make_node("LSTM", [t + "seq", t + "W", t + "R", t + "B", "", t + "h0", t + "c0"],
                              [t + "y", t + "hn", t + "cn"], hidden_size=HIDDEN, name=f"/{tag}/decoder/rnn/LSTM"),
             helper.make_node("Concat", [t + "hn", t + "cn"], [t + "stateN"], axis=0),
             helper.make_node("Reshape", [t + "hn", t + "h"], [t + "h2"]),
             helper.make_node("Relu", [t + "h2"], [t + "hr"]),
             helper.make_node("MatMul", [t + "hr", t + "dec"], [t + "d"]),
             helper.make_node("Sigmoid", [t + "d"], [t + "p"]),
             helper.make_node("Reshape", [t + "p", t + "o"], [t + "out"])]
    return helper.make_graph(nodes, tag, [], [_vi(t + "out", [1, 1]), _vi(t + "stateN", [2, 1, HIDDEN])],
                             [numpy_helper.from_array(v, k) for k, v in w.items()])


def vad_proto():
    """A silero-like VAD as exporters write it: symbolic dims, an If on the int64 scalar sr, the LSTM state as one
    [2, batch, H] input and output read in the branches."""
    nodes = [helper.make_node("Equal", ["sr", "k16000"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["output", "stateN"], name="If_0", then_branch=_branch("k16", 1),
                              else_branch=_branch("k8", 2))]
    graph = helper.make_graph(nodes, "vad", [_vi("input", ["batch", "samples"]), _vi("state", [2, "batch", HIDDEN]),
                                             _vi("sr", [])],
                              [_vi("output", ["batch", 1]), _vi("stateN", [2, "batch", HIDDEN])],
                              [numpy_helper.from_array(np.array(16000, np.int64), "k16000")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)


@pytest.fixture(scope="module")
def vad(tmp_path_factory):
    path = tmp_path_factory.mktemp("walk24") / "vad.onnx"
    onnx.save(vad_proto(), path)
    return path


SHAPES = ["--input-shape", f"input:1,{SAMPLES}", "--input-shape", f"state:2,1,{HIDDEN}"]


def _convert(capsys, src, out, *flags):
    assert main(["convert", str(src), "-o", str(out), "--quantize", "none", *SHAPES, *flags]) == 0
    return capsys.readouterr().out


def test_given_shapes_are_static_and_the_report_lists_the_state(vad, tmp_path, capsys):
    from edge_sdk.model import read_model
    from edge_sdk.model.input_shapes import dynamic_inputs

    out = tmp_path / "vad.tflite"
    text = _convert(capsys, vad, out, "--input-value", "sr=16000")
    assert "pinned     sr = 16000: constant, no longer model input" in text
    assert "folded     If 'If_0': condition 'is16k' is True at convert time" in text
    assert (f"state      input 'state' [2, 1, {HIDDEN}] FLOAT32 -> output 'stateN' (/k16/decoder/rnn/LSTM:initial_h, "
            "/k16/decoder/rnn/LSTM:initial_c): feed each invoke's 'stateN' back as the next 'state'") in text
    model = read_model(out.read_bytes())
    sg = model.subgraphs[0]
    # the given shapes are the model's: no -1 left for check / flash / LiteRT to ask about (the batch dim too)
    assert dynamic_inputs(model) == []
    assert [list(sg.tensors[t].shape_signature or sg.tensors[t].shape) for t in sg.inputs] == \
        [[1, SAMPLES], [2, 1, HIDDEN]]
    # `edge check` takes the converted model without --input-shape
    assert main(["check", str(out), "--target", "raspberry-pi-4", "--json"]) == 0
    capsys.readouterr()


def test_stateful_report_names_the_variable_and_the_reset(vad, tmp_path, capsys):
    text = _convert(capsys, vad, tmp_path / "vad_s.tflite", "--input-value", "sr=16000", "--stateful")
    assert (f"state      variable 'state' [2, 1, {HIDDEN}] FLOAT32: was input 'state' / output 'stateN' "
            "(/k16/decoder/rnn/LSTM:initial_h, /k16/decoder/rnn/LSTM:initial_c), kept on the device") in text
    assert "  reset: the state variables start at zero" in text


def test_an_if_kept_at_run_time_is_not_called_folded(vad, tmp_path, capsys):
    text = _convert(capsys, vad, tmp_path / "vad_if.tflite")
    (line,) = [ln for ln in text.splitlines() if "If 'If_0'" in ln]
    assert line.startswith("control    If 'If_0': condition 'is16k' is known only at run time: TFLite IF"), line
    # the state read in both branches: one pair, its states from both LSTMs
    assert "/k8/decoder/rnn/LSTM:initial_h" in text and "state      input 'state'" in text


def _qdq_by_onnxruntime(path):
    """Conv -> Relu -> Conv -> Add(residual) -> Relu -> Reshape -> MatMul -> Add, through onnxruntime's
    quantize_static (QDQ, int8, per-channel weights): it drops each Relu into its QDQ range."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    r = np.random.default_rng(24)
    w = {"w1": r.standard_normal((8, 3, 3, 3)) / 5, "b1": r.standard_normal(8) / 10,
         "w2": r.standard_normal((8, 8, 3, 3)) / 8, "b2": r.standard_normal(8) / 10,
         "wf": r.standard_normal((512, 10)) / 20, "bf": r.standard_normal(10) / 10}
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in w.items()]
    inits.append(numpy_helper.from_array(np.array([1, -1], np.int64), "shp"))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1] * 4),
             helper.make_node("Add", ["c2", "r1"], ["s"]), helper.make_node("Relu", ["s"], ["r2"]),
             helper.make_node("Reshape", ["r2", "shp"], ["f"]), helper.make_node("MatMul", ["f", "wf"], ["mm"]),
             helper.make_node("Add", ["mm", "bf"], ["logits"])]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("logits", TP.FLOAT, [1, 10])], inits)
    float_path = path.with_name("cnn_float.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), float_path)
    xs = [r.standard_normal((1, 3, 8, 8)).astype(np.float32) for _ in range(16)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{"x": x} for x in xs])

        def get_next(self):
            return next(self.feeds, None)

    quantize_static(str(float_path), str(path), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=True)
    return xs


def test_qdq_from_quantize_static_converts_without_calibration_within_a_quantum(tmp_path):
    from converters import convert
    from edge_sdk import Interpreter

    src = tmp_path / "cnn_qdq.onnx"
    xs = _qdq_by_onnxruntime(src)
    # every activation's range is the source's (the Conv before the residual Add included): no calibration data
    result = convert(str(src), quantize="int8", precision="int8", allow_lossy=True)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(src), opts, providers=["CPUExecutionProvider"])
    it = Interpreter(model_content=result.tflite)
    it.allocate_tensors()
    (ind,), (outd,) = it.get_input_details(), it.get_output_details()
    (s_in, z_in), (s_out, z_out) = ind["quantization"], outd["quantization"]
    assert ind["dtype"] == np.int8 and outd["dtype"] == np.int8
    for x in xs[:6]:
        it.set_tensor(ind["index"], np.clip(np.round(x / s_in) + z_in, -128, 127).astype(np.int8))
        it.invoke()
        got = (it.get_tensor(outd["index"]).astype(np.float64) - z_out) * s_out
        (want,) = sess.run(None, {"x": x})
        assert np.abs(got - want).max() <= s_out * 1.0001


def test_dynamic_range_report_line_has_no_none(vad, tmp_path, capsys):
    text = _convert(capsys, vad, tmp_path / "vad_dyn.tflite", "--input-value", "sr=16000")
    assert "quantize   none" in text
    from converters.report import format_conversion

    line = [ln for ln in format_conversion({"quantization": {"mode": "dynamic", "method": None, "io": "float32"}})
            .splitlines() if ln.startswith("quantize")]
    assert line == ["quantize   dynamic (io float32)"]
