"""Issue 27 points 4 and 5, a new user's first hour, part 2: files are checked first (they exist and are what they
claim), then the settings; non-finite input is refused naming it; every misuse of the command line exits 2 (an
unknown --target too, with "did you mean"); with --json an error is a JSON object on stdout beside its one line on
stderr; Ctrl-C exits 130 and SIGTERM 143, `edge serve` included. Each case runs the `edge` command as a user
would (a subprocess, or the CLI's main with capsys) and checks the exit status and the one line."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from edge_sdk import cli, errors
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.conftest import ROOT
from tests.test_first_hour import edge, fc_model, one_line_error


def json_error(p: subprocess.CompletedProcess, code: int, kind: str, *needles: str) -> dict:
    """--json: the one error line on stderr and the same error as a JSON object on stdout."""
    line = one_line_error(p, code, *needles)
    doc = json.loads(p.stdout)
    assert doc["exit"] == code and doc["kind"] == kind, doc
    for n in needles:
        assert n in doc["error"], (n, doc)
    assert doc["error"] in line, (doc, line)
    return doc


def picture(path: Path) -> Path:
    Image.new("RGB", (8, 8), (200, 30, 30)).save(path)
    return path


def float_classifier(path: Path) -> Path:
    """float [1, 1, 8, 8] -> FULLY_CONNECTED -> [1, 3] logits (no SOFTMAX: `edge run` applies one)."""
    g = GraphBuilder()
    x = g.input("x", (1, 1, 8, 8), "FLOAT32")
    flat = g.tensor("flat", (1, 64), "FLOAT32")
    g.op("RESHAPE", [x, g.constant("shape", np.array([1, 64], np.int32))], [flat])
    w = g.constant("w", np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32) * 0.1)
    y = g.tensor("y", (1, 3), "FLOAT32")
    g.op("FULLY_CONNECTED", [flat, w, -1], [y])
    g.output(y)
    write_model(g.build(), path)
    return path


# ------------------------------------------------------------------------------- files first, then settings
def test_a_picture_given_as_the_model_is_named_before_any_setting(tmp_path):
    png = picture(tmp_path / "picture.png")
    out = tmp_path / "x.tflite"
    # no calibration data, a bad target: neither is mentioned, the file is the first problem
    line = one_line_error(edge("convert", png, "-o", out, "--target", "bogus"), 3, "picture.png",
                          "not an ONNX or TFLite model", "PNG image")
    assert "calibration" not in line and "bogus" not in line
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    one_line_error(edge("convert", text, "-o", out), 3, "notes.txt", "not an ONNX or TFLite model", "text")
    one_line_error(edge("check", png, "--target", "stm32f747"), 3, "MODEL", "picture.png", "not a TFLite model")
    one_line_error(edge("run", png, png), 3, "picture.png", "not a TFLite model", "PNG image")
    assert not out.exists()


def _main_error(capsys, argv, code: int, *needles: str) -> str:
    """cli.main in-process (no interpreter start): exit ``code`` and one error line on stderr holding the needles."""
    assert cli.main([str(a) for a in argv]) == code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error" in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def test_an_empty_or_truncated_tflite_is_named_before_any_setting(tmp_path, capsys):
    """`edge convert empty.tflite` said "bad settings - int8 quantization needs calibration data" (the name's suffix
    passed for a model); a truncated .tflite the same, and every other command named the byte, not the file."""
    model = fc_model(tmp_path / "m.tflite")
    empty = tmp_path / "empty.tflite"
    empty.write_bytes(b"")
    truncated = tmp_path / "cut.tflite"
    truncated.write_bytes(model.read_bytes()[:200])
    out = tmp_path / "o.tflite"
    line = _main_error(capsys, ["convert", empty, "-o", out], 3, "SRC", "empty.tflite", "it is empty")
    assert "calibration" not in line
    line = _main_error(capsys, ["convert", truncated, "-o", out], 3, "SRC", "cut.tflite", "truncated", "past the end")
    assert "calibration" not in line
    for argv in (["inspect", truncated], ["check", truncated, "--target", "stm32f746-disco"]):
        _main_error(capsys, argv, 3, f"MODEL {truncated}", "past the end")
    assert not out.exists()


def test_convert_refuses_a_float_model_with_nan_weights(tmp_path, capsys):
    """A NaN in a float constant made every output NaN, and `edge convert` measured the int8 model against that
    float one as "SNR inf dB ... met"; the constant is named before any work. A -inf (an attention mask) is kept."""
    def model(path: Path, bad: float) -> Path:
        g = GraphBuilder()
        x = g.input("x", (1, 4), "FLOAT32")
        w = np.ones((3, 4), np.float32)
        w[1, 2] = bad
        y = g.tensor("y", (1, 3), "FLOAT32")
        g.op("FULLY_CONNECTED", [x, g.constant("weights", w), -1], [y])
        g.output(y)
        write_model(g.build(), path)
        return path
    out = tmp_path / "o.tflite"
    _main_error(capsys, ["convert", model(tmp_path / "nan.tflite", np.nan), "-o", out, "--quantize", "fp16"], 3,
                "SRC", "nan.tflite", "'weights'", "1 NaN of 12")
    assert not out.exists()
    assert cli.main(["convert", str(model(tmp_path / "inf.tflite", -np.inf)), "-o", str(out), "--quantize",
                     "fp16"]) == 0
    assert out.exists()


def test_run_names_nan_outputs_and_json_stays_json(tmp_path, capsys):
    """A model that computes NaN (here a NaN weight) printed "nan" scores as an answer, exit 0, and --json wrote a
    bare NaN, which strict JSON parsers (jq, JavaScript) refuse: now a warning names the input and the scores are
    null."""
    g = GraphBuilder()
    x = g.input("x", (1, 4), "FLOAT32")
    w = np.ones((3, 4), np.float32)
    w[0, 0] = np.nan
    y = g.tensor("y", (1, 3), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, g.constant("w", w), -1], [y])
    g.output(y)
    model = tmp_path / "nanw.tflite"
    write_model(g.build(), model)
    sample = tmp_path / "x.npy"
    np.save(sample, np.ones((1, 4), np.float32))

    def strict(token):
        raise ValueError(f"not JSON: {token}")
    assert cli.main(["run", str(model), str(sample), "--backend", "python", "--json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out, parse_constant=strict)
    assert [p["score"] for p in doc[0]["predictions"]] == [None, None, None], doc
    assert "x.npy: 3 of 3 score(s) are NaN or inf" in err and "nanw.tflite" in err, err


def test_data_files_are_what_they_claim(tmp_path):
    src = ROOT / "examples" / "digits" / "digits_cnn.onnx"
    model = float_classifier(tmp_path / "m.tflite")
    not_npy = tmp_path / "calib.npy"
    not_npy.write_text("1,2,3\n")
    one_line_error(edge("convert", src, "-o", tmp_path / "o.tflite", "--calib", not_npy), 3, "--calib", "calib.npy",
                   "not a .npy array", "text")
    objects = tmp_path / "objects.npy"
    np.save(objects, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    one_line_error(edge("run", model, objects), 3, "objects.npy", "Python objects")  # was an internal error in convert
    one_line_error(edge("convert", src, "-o", tmp_path / "o.tflite", "--calib", objects), 3, "objects.npy",
                   "Python objects")
    fake_wav = tmp_path / "clip.wav"
    fake_wav.write_bytes(b"not a wav at all")
    one_line_error(edge("run", model, fake_wav), 3, "clip.wav", "not a WAV file")
    not_zip = tmp_path / "eval.npz"
    not_zip.write_bytes(b"nope")
    one_line_error(edge("convert", src, "-o", tmp_path / "o.tflite", "--eval", not_zip, "--quantize", "none"), 3,
                   "eval.npz", "not a .npz (zip) archive")
    one_line_error(edge("run", model, tmp_path / "x.npy", "--labels", picture(tmp_path / "l.png")), 6, "x.npy")
    np.save(tmp_path / "x.npy", np.zeros((1, 1, 8, 8), np.float32))
    one_line_error(edge("run", model, tmp_path / "x.npy", "--labels", tmp_path / "l.png"), 3, "--labels", "l.png",
                   "not a labels file")


def test_nonfinite_input_is_refused_naming_it_or_run_with_a_flag(tmp_path):
    model = float_classifier(tmp_path / "m.tflite")
    nan = tmp_path / "nan_in.npy"
    np.save(nan, np.full((1, 1, 8, 8), np.nan, np.float32))
    p = edge("run", model, nan, "--backend", "python")
    one_line_error(p, 3, "nan_in.npy", "64 of 64", "not finite", "--allow-nonfinite")
    assert p.stdout == ""
    json_error(edge("run", model, nan, "--json", "--backend", "python"), 3, "data", "nan_in.npy", "not finite")
    ok = edge("run", model, nan, "--allow-nonfinite", "--backend", "python")
    assert ok.returncode == 0, ok.stderr
    assert "RuntimeWarning" not in ok.stderr and "Traceback" not in ok.stderr, ok.stderr  # softmax of NaN: quiet
    assert [line for line in ok.stderr.splitlines() if line.startswith("warning:")] == [
        f"warning: {nan}: 64 of 64 value(s) are not finite (NaN or inf); run anyway (--allow-nonfinite): its "
        "scores mean nothing"]
    assert "nan" in ok.stdout


def test_npy_input_for_a_detector(tmp_path):
    """`edge run --help` lists .npy among the inputs: a detector takes one (the pre-processed tensor)."""
    g = GraphBuilder()
    x = g.input("x", (1, 4, 4, 3), "FLOAT32")  # an image input, as a detector's
    flat = g.tensor("flat", (1, 48), "FLOAT32")
    g.op("RESHAPE", [x, g.constant("fshape", np.array([1, 48], np.int32))], [flat])
    pick = np.zeros((8, 48), np.float32)  # box i, coordinate j: input value 4 i + j
    pick[np.arange(8), np.arange(8)] = 1.0
    sums = np.zeros((2, 48), np.float32)  # box i's score: the sum of its coordinates
    sums[0, 0:4] = sums[1, 4:8] = 1.0
    b = g.tensor("b", (1, 8), "FLOAT32")
    g.op("FULLY_CONNECTED", [flat, g.constant("pick", pick), -1], [b])
    boxes = g.tensor("boxes", (1, 2, 4), "FLOAT32")
    g.op("RESHAPE", [b, g.constant("bshape", np.array([1, 2, 4], np.int32))], [boxes])
    s = g.tensor("s", (1, 2), "FLOAT32")
    g.op("FULLY_CONNECTED", [flat, g.constant("sums", sums), -1], [s])
    scores = g.tensor("scores", (1, 2, 1), "FLOAT32")
    g.op("RESHAPE", [s, g.constant("sshape", np.array([1, 2, 1], np.int32))], [scores])
    g.output(boxes)
    g.output(scores)
    model = tmp_path / "det.tflite"
    write_model(g.build(), model)
    t = np.zeros((1, 4, 4, 3), np.float32)
    t.reshape(-1)[0:4] = (0.1, 0.2, 0.5, 0.6)  # box 0: ymin, xmin, ymax, xmax; score sigmoid(1.4)
    t.reshape(-1)[4:8] = -1.0                    # box 1: score sigmoid(-4), below the threshold
    np.save(tmp_path / "t.npy", t)
    p = edge("run", model, tmp_path / "t.npy", "--json", "--backend", "python")
    assert p.returncode == 0, p.stderr
    (result,) = json.loads(p.stdout)
    dets = result["detections"]
    assert len(dets) == 1 and dets[0]["box"] == [0.2, 0.1, 0.6, 0.5], dets
    assert dets[0]["score"] == pytest.approx(1 / (1 + np.exp(-1.4)), abs=1e-6)


# ------------------------------------------------------------------------------- exit codes
@pytest.mark.parametrize("argv,needles", [
    (["check", "{m}", "--target", "stm32f747"], ["--target", "stm32f747", "did you mean stm32f746-disco?"]),
    (["convert", "{src}", "-o", "{o}", "--target", "rp2040"], ["--target", "did you mean rp2040-pico?"]),
    (["flash", "{m}", "--target", "raspberry-pi-4"], ["--target raspberry-pi-4", "microcontrollers", "edge deploy"]),
    (["run", "{m}", "{x}", "--top-k", "0"], ["--top-k", "must be >= 1"]),
    (["convert", "{src}", "-o", "{o}", "--min-snr", "-5"], ["--min-snr", "must be >= 0"]),
    (["check", "{m}", "--target", "host-linux", "--link"], ["--link", "host-linux"]),
])
def test_every_misuse_exits_2_with_one_line_and_json(tmp_path, argv, needles):
    fmt = dict(m=fc_model(tmp_path / "m.tflite"), src=ROOT / "examples" / "digits" / "digits_cnn.onnx",
               o=tmp_path / "o.tflite", x=tmp_path / "x.npy")
    np.save(fmt["x"], np.zeros((1, 4), np.float32))
    argv = [a.format(**fmt) for a in argv]
    one_line_error(edge(*argv), 2, *needles)
    json_error(edge(*argv, "--json"), 2, "usage", *needles)


def test_json_errors_of_other_kinds(tmp_path):
    model = fc_model(tmp_path / "m.tflite")
    json_error(edge("run", model, tmp_path / "absent.npy", "--json"), 6, "file", "absent.npy")
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x10\x00\x00\x00NOPE" + bytes(40))
    json_error(edge("inspect", bad, "--json"), 3, "model", "bad.tflite", "not a TFLite model")
    doc = json_error(edge("bench", model, "--runs", "0", "--json"), 2, "usage", "--runs")  # argparse's own error
    assert set(doc) == {"error", "kind", "exit"}


def test_exit_statuses_come_from_one_table_and_are_documented():
    assert cli.EXIT_CODES is errors.EXIT_CODES
    help_text = edge("--help").stdout
    for code, _ in errors.EXIT_STATUSES:
        assert re.search(rf"^  {code} ", help_text, re.M), code
    assert "143" in help_text and "SIGTERM" in help_text
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert errors.exit_status_markdown() in readme
    assert {code for _, code in errors.EXIT_CODES} <= {code for code, _ in errors.EXIT_STATUSES}


def _serve(model, *flags):
    proc = subprocess.Popen([sys.executable, "-m", "edge_sdk.cli", "serve", str(model), "--port", "0", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = []
    for line in proc.stdout:
        out.append(line)
        if line.startswith("serving"):
            break
    return proc, out


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_serve_exits_128_plus_the_signal_and_notes_batching_once(tmp_path, sig, code):
    proc, out = _serve(fc_model(tmp_path / "fixed.tflite", batchable=False), "--max-batch", "8")
    try:
        time.sleep(0.2)
        proc.send_signal(sig)
        rest, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = "".join(out) + rest
    assert proc.returncode == code, (proc.returncode, err)
    assert "Traceback" not in err, err
    assert err.count("max batch 1, not 8") == 1 and "max batch 1, not 8" not in out, (out, err)
    assert err.splitlines()[-1] == ("interrupted" if sig == signal.SIGINT else "interrupted (SIGTERM)")


def test_serve_refuses_nonfinite_raw_tensors_naming_the_input(tmp_path):
    from edge_sdk.tools.serve import Server, _Reject

    with Server(fc_model(tmp_path / "m.tflite"), port=0) as srv:
        body = np.array([[1, np.nan, 3, np.inf]], np.float32).tobytes()
        with pytest.raises(_Reject, match=r"raw tensor \(input 'x'\): 2 non-finite value\(s\)"):
            srv.parse_raw(body, {"X-Shape": "1,4", "X-Dtype": "float32"})
