"""The accuracy guard: float against quantized on held-back calibration samples, per output (SNR; argmax
agreement for class distributions), in the report and the summary; precision="auto" widens the ops that
lose the most to float32 until every output meets the threshold; precision="int8" keeps full int8; a
model that stays short is not written unless allow_lossy, and the message names the output and the gap."""

from __future__ import annotations

import numpy as np
import pytest

from converters import convert
from edge_sdk import ConversionError
from edge_sdk.cli import main
from edge_sdk.model import read_model, write_model
from edge_sdk.model.builder import GraphBuilder
from tests.test_quantize import dequantize_outputs, quantize_inputs, run_ours


def outlier_mlp(seed=0):
    """FC (16 -> 16, ReLU), FC (16 -> 16) whose channel 0 is 400x the others, then FC (16 -> 8) that ignores
    channel 0: under one per-tensor int8 scale the 15 small channels of the hidden tensor get about one step
    each, so int8 loses the output; the first FC is harmless."""
    r = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", (1, 16))
    f = g.tensor("first", (1, 16))
    g.op("FULLY_CONNECTED", [x, g.constant("w0", (r.standard_normal((16, 16)) * 0.3).astype(np.float32)),
                             g.constant("b0", np.full(16, 0.1, np.float32))], [f], fused_activation_function="RELU")
    w1 = (r.standard_normal((16, 16)) * 0.3).astype(np.float32)
    w1[0] *= 400
    h = g.tensor("hidden", (1, 16))
    g.op("FULLY_CONNECTED", [f, g.constant("w1", w1), g.constant("b1", np.zeros(16, np.float32))], [h])
    w2 = (r.standard_normal((8, 16)) * 0.3).astype(np.float32)
    w2[:, 0] = 0.0
    y = g.tensor("y", (1, 8))
    g.op("FULLY_CONNECTED", [h, g.constant("w2", w2), g.constant("b2", np.zeros(8, np.float32))], [y])
    g.output(y)
    return write_model(g.build())


def _calib(n=60, seed=1):
    return np.random.default_rng(seed).standard_normal((n, 1, 16)).astype(np.float32)


def _snr(ref, got):
    ref, got = np.ravel(ref).astype(np.float64), np.ravel(got).astype(np.float64)
    return 10 * np.log10((ref @ ref) / ((ref - got) @ (ref - got)))


def _float(model, xs):
    return [run_ours(model, [x])[0] for x in xs]


def test_int8_that_loses_the_output_is_refused_naming_it():
    with pytest.raises(ConversionError) as err:
        convert(outlier_mlp(), calibration=_calib(), precision="int8")
    msg = str(err.value)
    assert "nothing was written" in msg and "below 30 dB" in msg and "12 held-back samples" in msg
    (problem,) = err.value.problems
    assert problem.startswith("output 'y': SNR ") and "dB below 30 dB" in problem


def test_allow_lossy_writes_it_and_says_so():
    res = convert(outlier_mlp(), calibration=_calib(), precision="int8", allow_lossy=True)
    g = res.report["guard"]
    assert not g["met"] and g["lossy"] and g["short"][0]["name"] == "y" and g["short"][0]["short_db"] > 5
    assert not g["widened"]
    assert any(n.startswith("lossy:") for n in res.report["quantization"]["report"]["notes"])


def test_auto_widens_until_the_output_meets_the_threshold():
    src = outlier_mlp()
    res = convert(src, calibration=_calib())
    g = res.report["guard"]
    assert g["met"] and g["precision"] == "auto" and g["held_back"] and g["samples"] == 12
    # without a target, FULLY_CONNECTED widens to int16x8 (both edge-sdk runtimes and TFLM have it)
    assert g["widened"] and all(w["to"] == "int16" for w in g["widened"])
    # the two FCs around the outlier tensor, not the harmless first one
    assert sorted(w["output"] for w in g["widened"]) == ["hidden", "y"]
    assert g["cost"]["bytes"] > 0 and g["cost"]["macs_not_int8"] == 16 * 16 + 16 * 8
    assert g["cost"]["macs_int16"] == 16 * 16 + 16 * 8 and g["cost"]["macs_float32"] == 0
    assert g["cost"]["macs_total"] == 16 * 16 * 2 + 16 * 8
    assert res.report["manifest"]["quantization"]["widened"] == [w["output"] for w in g["widened"]]
    # what the guard measured is what the model does, on samples it has never seen
    q = read_model(res.tflite)
    test = list(np.random.default_rng(7).standard_normal((20, 1, 16)).astype(np.float32))
    ref = np.concatenate(_float(src, test))
    got = np.concatenate([dequantize_outputs(q, run_ours(res.tflite, quantize_inputs(q, [x])))[0] for x in test])
    assert _snr(ref, got) > 30
    assert g["outputs"][0]["snr_db"] > 30


def test_min_snr_lower_needs_no_widening():
    int8 = convert(outlier_mlp(), calibration=_calib(), precision="int8", allow_lossy=True)
    snr = int8.report["guard"]["outputs"][0]["snr_db"]
    res = convert(outlier_mlp(), calibration=_calib(), min_snr=snr - 1)
    assert res.report["guard"]["met"] and not res.report["guard"]["widened"]
    def tensors(r):
        return [(t.name, t.type) for t in read_model(r.tflite).subgraphs[0].tensors]

    assert tensors(res) == tensors(int8) and "FLOAT32" not in {t for _, t in tensors(res)}


def test_class_distribution_reports_argmax_agreement():
    from tests.test_quantize import cnn_model

    data = write_model(cnn_model())
    calib = np.random.default_rng(2).standard_normal((40, 1, 12, 12, 3)).astype(np.float32)
    res = convert(data, calibration=calib)
    (out,) = res.report["guard"]["outputs"]
    held = calib[4::5]  # every 5th sample is held back
    assert res.report["guard"]["samples"] == len(held) == 8
    q = read_model(res.tflite)
    same = [np.argmax(run_ours(data, [x])[0]) == np.argmax(run_ours(res.tflite, quantize_inputs(q, [x]))[0])
            for x in held]
    assert out["name"] == "probs" and out["argmax_agreement"] == pytest.approx(np.mean(same))


def test_a_softmax_over_rows_is_a_distribution_by_its_row():
    """A (1, rows, classes) SOFTMAX output is not (batch, classes): the op's row (``distribution``) makes the
    guard report its argmax agreement, row by row; the same values through ADD are not a distribution."""
    from edge_sdk.model.builder import GraphBuilder
    from edge_sdk.runtime import op_table

    assert {n for n, r in op_table.ROWS.items() if r.distribution} == {"SOFTMAX", "LOG_SOFTMAX"}
    outputs = {}
    for op in ("SOFTMAX", "ADD"):
        g = GraphBuilder()
        x = g.input("x", (1, 4, 6))
        y = g.tensor("y", (1, 4, 6))
        if op == "SOFTMAX":
            g.op(op, [x], [y], beta=1.0)
        else:
            g.op(op, [x, g.constant("zero", np.zeros((1, 1, 6), np.float32))], [y])
        g.output(y)
        calib = np.random.default_rng(3).standard_normal((20, 1, 4, 6)).astype(np.float32)
        (outputs[op],) = convert(write_model(g.build()), calibration=calib, precision="int8",
                                 allow_lossy=True).report["guard"]["outputs"]
    assert 0.5 <= outputs["SOFTMAX"]["argmax_agreement"] <= 1.0
    assert "argmax_agreement" not in outputs["ADD"]


def test_cli_flags_and_summary(tmp_path, capsys):
    src = tmp_path / "mlp.tflite"
    src.write_bytes(outlier_mlp())
    np.save(tmp_path / "calib.npy", _calib())
    out = tmp_path / "out.tflite"
    base = ["convert", str(src), "--calib", str(tmp_path / "calib.npy"), "-o", str(out)]
    code = main(base + ["--precision", "int8"])
    err = capsys.readouterr().err
    assert code != 0 and not out.exists() and "output 'y'" in err
    assert main(base + ["--precision", "int8", "--allow-lossy"]) == 0 and out.exists()
    text = capsys.readouterr().out
    assert "accuracy   per output" in text and "NOT met" in text and "LOSSY" in text and "transposes 0" in text
    out.unlink()
    assert main(base) == 0
    text = capsys.readouterr().out
    assert "widened    " in text and "MACs not in int8" in text and ": met" in text
    with pytest.raises(SystemExit) as exit_:  # argument misuse: argparse's exit 2
        main(base + ["--min-snr", "nope"])
    assert exit_.value.code == 2
