"""edge convert's honesty (issue 24): pinned inputs named in the report (--input-value), every lossy mode through
the one accuracy guard (fp16 constants that under- / overflow float16 stay float32; fp16 and dynamic-range measured
like int8), one count of widened ops, no numpy warning on the terminal, no quantized DIV by a zero quantum."""

from __future__ import annotations

import json

import numpy as np
import pytest

from converters import convert
from edge_sdk.cli import main
from edge_sdk.errors import ConversionError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from tests.test_import_onnx_streaming import _sr_model, f32, ort_run  # noqa: E402


# ------------------------------------------------------------------------------------- --input-value (point 1)
@pytest.mark.parametrize("sr", [16000, 8000])
def test_cli_input_value_pins_the_if_input_and_the_report_says_so(tmp_path, capsys, sr):
    src, out = tmp_path / "sr.onnx", tmp_path / "sr.tflite"
    onnx.save(_sr_model(), src)
    assert main(["convert", str(src), "-o", str(out), "--quantize", "none", "--input-value", f"sr={sr}"]) == 0
    text = capsys.readouterr().out
    assert f"pinned     sr = {sr}: constant, no longer model input" in text
    assert "folded     " in text and "If 'If_0'" in text
    from edge_sdk import Interpreter

    it = Interpreter(model_path=str(out))
    it.allocate_tensors()
    assert [d["name"] for d in it.get_input_details()] == ["x"]  # sr left the signature
    x = f32(1, 4)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    (want,) = ort_run(_sr_model(), {"x": x, "sr": np.array(sr, np.int64)})
    np.testing.assert_allclose(it.get_tensor(it.get_output_details()[0]["index"]), want, atol=1e-5)

    assert main(["convert", str(src), "-o", str(out), "--quantize", "none", "--input-value", f"sr={sr}",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["import"]["pinned_inputs"] == {"sr": sr}


@pytest.mark.parametrize("flags, words", [
    (["--input-value", "sr"], "expected NAME=VALUE"),
    (["--input-value", "sr=fast"], "sr: expected a number or comma-separated numbers, not 'fast'"),
    (["--input-value", "sr=1,,2"], "sr: expected a number"),
    (["--input-value", "sr=16000", "--input-value", "sr=8000"], "--input-value: input 'sr' given twice"),
])
def test_cli_input_value_bad_syntax_exits_2_naming_the_flag(tmp_path, capsys, flags, words):
    src = tmp_path / "sr.onnx"
    onnx.save(_sr_model(), src)
    assert _exit_status(["convert", str(src), "-o", str(tmp_path / "o.tflite"), "--quantize", "none"] + flags) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "o.tflite").exists()


def _exit_status(argv) -> int:
    """The CLI's exit status: argparse exits (SystemExit), the commands return it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_input_values_on_a_tflite_source_is_refused_naming_the_flag(tmp_path):
    m = convert(_sr_model(), quantize="none", input_values={"sr": 16000})
    with pytest.raises(ConversionError, match=r"input_values \(--input-value\) pins inputs of an ONNX source"):
        convert(m.tflite, quantize="none", input_values={"sr": 16000})


# ------------------------------------------------------------------- fp16 / dynamic through the guard (point 3)
def _float_model(build):
    """A one-input float .tflite model: ``build(g, x) -> output tensor`` on input x (1, 16)."""
    from edge_sdk.model import write_model
    from edge_sdk.model.builder import GraphBuilder

    g = GraphBuilder()
    x = g.input("x", (1, 16), "FLOAT32")
    g.output(build(g, x))
    return write_model(g.build())


def _binary(g, op, a, b, name):
    y = g.tensor(name, (1, 16), "FLOAT32")
    g.op(op, [a, b], [y])
    return y


def _log_of_square_plus_eps(g, x):
    """log(x * x + 1e-10): the epsilon float16 flushes to 0.0 (then log(0) = -inf where x is 0)."""
    sq = _binary(g, "MUL", x, x, "sq")
    s = _binary(g, "ADD", sq, g.constant("eps", np.array([1e-10], np.float32)), "sq_eps")
    y = g.tensor("logpow", (1, 16), "FLOAT32")
    g.op("LOG", [s], [y])
    return y


def _silence_and_speech(n=12):
    """Frames of which every other one is silence (zeros): log sees 0 + eps there."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, 16)).astype(np.float32)
    x[::2] = 0.0
    return x


def _run_float(tflite, x):
    from edge_sdk import Interpreter

    it = Interpreter(model_content=tflite)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return np.array(it.get_tensor(it.get_output_details()[0]["index"]))


def test_fp16_keeps_an_underflowing_epsilon_float32_and_says_which():
    src = _float_model(_log_of_square_plus_eps)
    result = convert(src, quantize="fp16", calibration=_silence_and_speech())
    qrep = result.report["quantization"]["report"]
    assert [k["name"] for k in qrep["kept_float32"]] == ["eps"]
    assert "becomes 0 in float16" in qrep["kept_float32"][0]["reason"]
    assert any(n.startswith("constant 'eps' stays float32") for n in qrep["notes"])
    sg = result.model.subgraphs[0]
    eps = next(t for t in sg.tensors if t.name == "eps")
    assert eps.type == "FLOAT32" and not any(t.type == "FLOAT16" and t.name.startswith("eps") for t in sg.tensors)
    guard = result.report["guard"]
    assert guard["met"] and guard["precision"] == "fp16" and guard["data"] == "calibration"
    x = _silence_and_speech()[:1]  # a silent frame: log(1e-10) everywhere
    np.testing.assert_allclose(_run_float(result.tflite, x), _run_float(src, x), rtol=1e-6)
    assert np.isfinite(_run_float(result.tflite, x)).all()


def test_fp16_keeps_an_overflowing_constant_float32(tmp_path):
    src = _float_model(lambda g, x: _binary(g, "MUL", x, g.constant("big", np.array([1e5], np.float32)), "y"))
    result = convert(src, quantize="fp16")  # no data: synthetic samples
    kept = result.report["quantization"]["report"]["kept_float32"]
    assert kept == [{"name": "big", "reason": "100000 overflows float16 (largest finite 65504)"}]
    assert result.report["guard"]["synthetic"] and result.report["guard"]["met"]
    assert result.report["guard"]["outputs"][0]["snr_db"] == float("inf")  # nothing else changed
    # with evaluation data (and no calibration data) the guard measures on the evaluation samples
    np.savez(tmp_path / "eval.npz", x=np.ones((5, 16), np.float32), y=np.zeros(5, np.int64))
    guard = convert(src, quantize="fp16", eval_data=str(tmp_path / "eval.npz")).report["guard"]
    assert guard["data"] == "evaluation" and guard["samples"] == 5 and not guard["synthetic"]


def _lossy_in_fp16(g, x):
    """x * 1.0001 - x: 1.0001 is 1.0 in float16, so the output (1e-4 x) becomes 0."""
    m = _binary(g, "MUL", x, g.constant("k", np.array([1.0001], np.float32)), "m")
    return _binary(g, "SUB", m, x, "y")


def test_fp16_below_min_snr_is_refused_unless_allow_lossy(tmp_path, capsys):
    src = _float_model(_lossy_in_fp16)
    with pytest.raises(ConversionError, match=r"the fp16 model does not keep its outputs \(1 below 30 dB on 16 "
                                              r"synthetic samples; fp16 keeps every op as it is") as err:
        convert(src, quantize="fp16")
    assert err.value.problems[0].startswith("output 'y': SNR ")
    result = convert(src, quantize="fp16", allow_lossy=True)
    assert result.report["guard"]["lossy"] and not result.report["guard"]["met"]
    # the CLI: exit 3 and nothing written; with --allow-lossy written, and the text says LOSSY
    path, out = tmp_path / "lossy.tflite", tmp_path / "out.tflite"
    path.write_bytes(src)
    assert main(["convert", str(path), "-o", str(out), "--quantize", "fp16"]) == 3
    assert "does not keep its outputs" in capsys.readouterr().err and not out.exists()
    assert main(["convert", str(path), "-o", str(out), "--quantize", "fp16", "--allow-lossy"]) == 0
    text = capsys.readouterr().out
    assert "LOSSY (written with allow-lossy): output 'y'" in text and "measured in edge-sdk's interpreter" in text


def _dense(g, x):
    w = g.constant("w", (np.random.default_rng(5).standard_normal((8, 16)) * 0.3).astype(np.float32))
    b = g.constant("b", np.zeros(8, np.float32))
    y = g.tensor("y", (1, 8), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, w, b], [y])
    return y


def test_dynamic_range_is_measured_in_our_hybrid_kernels_and_refused_below_min_snr(tmp_path):
    src = _float_model(_dense)
    data = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    result = convert(src, quantize="dynamic", calibration=data)
    guard = result.report["guard"]
    assert guard["runtime"] == "edge-sdk's interpreter (hybrid kernels)" and guard["data"] == "calibration"
    assert guard["samples"] == 8 and guard["met"] and 30 < guard["outputs"][0]["snr_db"] < 80
    with pytest.raises(ConversionError, match="the dynamic model does not keep its outputs"):
        convert(src, quantize="dynamic", calibration=data, min_snr=90)


def test_dynamic_range_without_a_hybrid_runtime_measures_the_weights_share_and_says_so(monkeypatch):
    import converters.quantize.measure as measure
    from edge_sdk.errors import UnsupportedOpError

    ours = measure.interpreter_runner

    def refusing_hybrid(model):  # a build of the interpreter without hybrid kernels
        if any(t.type == "INT8" for t in model.subgraphs[0].tensors):
            raise UnsupportedOpError("node 0 (FULLY_CONNECTED v9): hybrid kernels are not in this build")
        return ours(model)

    monkeypatch.setattr(measure, "litert_runner", lambda qmodel: None)
    monkeypatch.setattr(measure, "interpreter_runner", refusing_hybrid)
    src = _float_model(_dense)
    data = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    guard = convert(src, quantize="dynamic", calibration=data).report["guard"]
    assert guard["runtime"].startswith("weights only: the float model over the dequantized int8 weights")
    assert guard["met"] and 30 < guard["outputs"][0]["snr_db"] < 80  # int8 weights lose something, not all


# ----------------------------------------------------------------------------- honesty items (point 4)
def _log_of_square(g, x):
    """log(x * x) with no epsilon: -inf on a silent frame (LOG(0)), as in TFLite."""
    y = g.tensor("logpow", (1, 16), "FLOAT32")
    g.op("LOG", [_binary(g, "MUL", x, x, "sq")], [y])
    return y


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("mode", ["fp16", "int8"])
def test_converting_a_model_with_log_of_zero_raises_no_numpy_warning(mode):
    """The kernels compute LOG(0) = -inf (SQRT / POW of negatives NaN) under np.errstate; the guard measures the
    finite elements. Every warning is an error here."""
    src = _float_model(_log_of_square)
    result = convert(src, quantize=mode, calibration=_silence_and_speech(), allow_lossy=True)
    (out,) = result.report["guard"]["outputs"]
    assert out["snr_db"] == out["snr_db"]  # measured (not NaN)
    assert np.isneginf(_run_float(src, np.zeros((1, 16), np.float32))).all()


@pytest.mark.filterwarnings("error")
def test_math_kernels_give_tflites_values_without_warnings():
    from edge_sdk.model import write_model
    from edge_sdk.model.builder import GraphBuilder
    from edge_sdk import Interpreter

    x_values = np.array([[0.0, -1.0, 4.0, 100.0]], np.float32)
    for op, want in (("LOG", np.log), ("SQRT", np.sqrt), ("EXP", np.exp)):
        g = GraphBuilder()
        x = g.input("x", (1, 4), "FLOAT32")
        y = g.tensor("y", (1, 4), "FLOAT32")
        g.op(op, [x], [y])
        g.output(y)
        it = Interpreter(model_content=write_model(g.build()))
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x_values)
        it.invoke()
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), want(x_values))
    g = GraphBuilder()
    x = g.input("x", (1, 4), "FLOAT32")
    y = g.tensor("y", (1, 4), "FLOAT32")
    g.op("POW", [x, g.constant("e", np.array([-0.5], np.float32))], [y])
    g.output(y)
    it = Interpreter(model_content=write_model(g.build()))
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x_values)
    it.invoke()
    got = it.get_tensor(it.get_output_details()[0]["index"])
    assert np.isposinf(got[0, 0]) and np.isnan(got[0, 1]) and got[0, 2] == 0.5


def _div_model():
    from edge_sdk.model import write_model
    from edge_sdk.model.builder import GraphBuilder

    g = GraphBuilder()
    a = g.input("a", (1, 16), "FLOAT32")
    b = g.input("b", (1, 16), "FLOAT32")
    g.output(_binary(g, "DIV", a, b, "ratio"))
    return write_model(g.build())


def _div_samples(lo, hi, n=15):
    rng = np.random.default_rng(2)
    return [[rng.uniform(-1, 1, (1, 16)).astype(np.float32), rng.uniform(lo, hi, (1, 16)).astype(np.float32)]
            for _ in range(n)]


def _ops(tflite):
    from edge_sdk.model import read_model

    m = read_model(tflite)
    sg = m.subgraphs[0]
    return {m.op_name(op): sg.tensors[op.inputs[0]].type for op in sg.operators}


@pytest.mark.parametrize("precision", ["auto", "int8"])
def test_a_div_whose_divisor_reaches_zero_stays_float_and_the_report_says_so(precision):
    result = convert(_div_model(), quantize="int8", calibration=_div_samples(-0.5, 2.0), precision=precision,
                     min_snr=0, io="float32")
    assert _ops(result.tflite)["DIV"] == "FLOAT32"
    notes = result.report["quantization"]["report"]["notes"]
    assert any(n.startswith("op 0 DIV (output 'ratio') stays float32: its divisor 'b' ranges over [") and
               "LiteRT's int8 DIV refuses at invoke" in n for n in notes), notes
    widened = result.report["guard"]["widened"]
    assert [(w["op"], w["to"]) for w in widened] == [("DIV", "float32")] and "zero point" in widened[0]["reason"]
    # LiteRT runs what was written (its int8 DIV would refuse a divisor at its zero point)
    from tests.oprunner import run_peer

    x = _div_samples(0.0, 0.0, 1)[0]  # a zero divisor: float DIV gives inf, as the float model
    run_peer(result.tflite, x, "litert")


def test_a_div_whose_divisor_keeps_away_from_zero_stays_int8_and_litert_runs_it():
    result = convert(_div_model(), quantize="int8", calibration=_div_samples(1.0, 3.0), min_snr=0)
    assert _ops(result.tflite)["DIV"] == "INT8"
    assert result.report["guard"]["widened"] == []
    from tests.oprunner import run_peer

    it_in = result.report["manifest"]["io"]["inputs"]
    x = [np.clip(np.round(v / s["scale"]) + s["zero_point"], -128, 127).astype(np.int8)
         for v, s in zip(_div_samples(1.0, 3.0, 1)[0], it_in)]
    run_peer(result.tflite, x, "litert")


def test_without_the_divisor_rule_litert_would_refuse_the_written_model(monkeypatch):
    """What the rule avoids: the same conversion with the rule switched off writes an int8 DIV that LiteRT
    refuses at invoke on a zero divisor (the reason the rule exists, shown, not assumed)."""
    import converters.quantize as q
    from tests.oprunner import run_peer

    monkeypatch.setattr(q, "zero_divisors", lambda *a: [])
    result = convert(_div_model(), quantize="int8", calibration=_div_samples(-0.5, 2.0), precision="int8",
                     allow_lossy=True, io="float32")
    assert _ops(result.tflite)["DIV"] == "INT8"
    with pytest.raises(RuntimeError, match=r"div.cc:\d+ data\[i\] != zero_point was not true"):
        run_peer(result.tflite, _div_samples(0.0, 0.0, 1)[0], "litert")


def _dense_sin_dense(g, x):
    """FULLY_CONNECTED -> SIN (no int8 rule: float32) -> FULLY_CONNECTED."""
    rng = np.random.default_rng(6)
    h = g.tensor("h", (1, 16), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, g.constant("w1", (rng.standard_normal((16, 16)) * 0.4).astype(np.float32)),
                             g.constant("b1", np.zeros(16, np.float32))], [h])
    s = g.tensor("s", (1, 16), "FLOAT32")
    g.op("SIN", [h], [s])
    y = g.tensor("y", (1, 8), "FLOAT32")
    g.op("FULLY_CONNECTED", [s, g.constant("w2", (rng.standard_normal((8, 16)) * 0.4).astype(np.float32)),
                             g.constant("b2", np.zeros(8, np.float32))], [y])
    return y


def test_the_progress_line_and_the_summary_give_one_count_of_widened_ops(caplog):
    """An op without an int8 rule (SIN, float32) and ops the guard widens for a high min_snr: the last progress
    line and the report's summary count the same ops, to the same types, as the guard's record lists."""
    import logging
    import re

    from converters.report import format_conversion

    src = _float_model(_dense_sin_dense)
    data = np.random.default_rng(4).standard_normal((40, 16)).astype(np.float32)
    with caplog.at_level(logging.DEBUG, logger="edge_sdk"):
        result = convert(src, quantize="int8", calibration=data, min_snr=45, allow_lossy=True)
    guard = result.report["guard"]
    kinds = [w["to"] for w in guard["widened"]]
    assert "float32" in kinds and len(kinds) >= 2  # SIN, and at least one op widened for SNR
    want = f"{len(kinds)} op(s) ({kinds.count('int16')} to int16x8, {kinds.count('float32')} to float32)"
    stages = [r.getMessage() for r in caplog.records if "widen" in r.getMessage()]
    # the last line: the one count, then the search's outcome (int8 MAC share, worst output SNR before -> after)
    assert re.fullmatch(re.escape(f"==> widened {want}") + r"; \d+\.\d% of MACs stay int8; worst output SNR "
                        r"\S+ -> \S+ dB", stages[-1]), stages
    rounds = [m for m in stages if "; round " in m]
    assert rounds and all(re.match(r"==> widening \d+ op\(s\) \(\d+ to int16x8, [1-9]\d* to float32\); round", m)
                          for m in rounds)  # every round counts the float32 SIN too
    summary = [line for line in format_conversion(result.report).splitlines() if line.startswith("widened ")]
    assert summary == [f"widened    {want}: " + ", ".join(f"{w['op']} {w['output']} -> {w['to']}"
                                                         for w in guard["widened"])]
    assert result.report["manifest"]["quantization"]["widened"] == [w["output"] for w in guard["widened"]]


def test_fp16_of_a_model_no_runtime_here_runs_says_its_accuracy_was_not_measured(monkeypatch):
    """Not measured is said, not guessed: the conversion is kept (as before the guard) and the report says why."""
    import converters.quantize.measure as measure
    from converters.report import format_conversion
    from edge_sdk.errors import ModelError

    def refuses(qmodel):
        raise ModelError("node 3 (CUSTOM Foo): no kernel")

    monkeypatch.setattr(measure, "interpreter_runner", refuses)
    monkeypatch.setattr(measure, "litert_runner", lambda qmodel: None)
    result = convert(_float_model(_lossy_in_fp16), quantize="fp16")
    guard = result.report["guard"]
    assert guard["measured"] is False and guard["outputs"] == []
    assert "accuracy   NOT measured: the fp16 model's accuracy was not measured: no runtime here runs it (node 3 " \
           "(CUSTOM Foo): no kernel; ai-edge-litert is not installed)" in format_conversion(result.report)


def test_a_div_kept_float_by_the_divisor_rule_is_a_widened_op_for_its_inputs_and_outputs():
    """a / b, b calibrated over [-0.5, 2], default int8 I/O: the DIV stays float32 by the divisor rule, and as an op
    the guard widens to float32 its model output stays float32 and its inputs, read by it alone, go float32 when
    their int8 quantization loses the goal. Before, the int8 output and int8 inputs of that float DIV kept it at
    7.4 dB ("every op widened", then "the ops that keep it short: DIV 'ratio' (left in int8)")."""
    from edge_sdk.model import read_model

    result = convert(_div_model(), quantize="int8", calibration=_div_samples(-0.5, 2.0, n=30), allow_lossy=True)
    m = read_model(result.tflite)
    sg = m.subgraphs[0]
    assert [sg.tensors[t].type for t in list(sg.inputs) + list(sg.outputs)] == ["FLOAT32"] * 3
    assert result.report["guard"]["met"] and _ops(result.tflite)["DIV"] == "FLOAT32"
    notes = result.report["quantization"]["report"]["notes"]
    assert any(n.startswith("int8 model inputs lose the goal even with every op widened") for n in notes), notes
    assert not any("left in int8" in n for n in notes), notes
