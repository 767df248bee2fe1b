"""Issue 27 points 7 and 8, a new user's first hour, part 2: the README's Python snippet prints what it says; the
converted model keeps the calibration file's base name, never a folder of the machine; the exported project's
README shows C, not a Python tuple; `edge check`'s fix for a too-big model is true for an int8 one; the per-op
plot says each thing once; a WAV for a raw-audio model without a manifest asks for --sample-rate; an interrupted
dpkg is finished (root) or named (`make` names the command)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from PIL import Image

from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.conftest import ROOT
from tests.test_first_hour import edge, one_line_error

DIGITS = ROOT / "examples" / "digits"


def _digits_data(folder: Path) -> tuple[Path, Path]:
    """calib.npz (80 training digits) and test.npz (x, y: 60 held-out digits), as the README's snippet names them."""
    sys.path.insert(0, str(DIGITS))
    try:
        import train
    finally:
        sys.path.remove(str(DIGITS))
    x_train, _, x_test, y_test = train.load_split()
    np.savez(folder / "calib.npz", x=x_train[:80])
    np.savez(folder / "test.npz", x=x_test[:60], y=y_test[:60])
    return folder / "calib.npz", folder / "test.npz"


def test_readme_python_snippet_prints_the_accuracy(tmp_path):
    """The README's convert() snippet, run as it is written (model.onnx, calib.npz, test.npz beside it)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    snippet = next(b for b in blocks if "from converters import convert" in b)
    assert 'print(result.report["accuracy"]' in snippet
    shutil.copy(DIGITS / "digits_cnn.onnx", tmp_path / "model.onnx")
    _digits_data(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, capture_output=True, text=True, env=env,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    printed = p.stdout.strip().splitlines()[-1]
    assert printed != "None" and 0.5 < float(printed) <= 1.0, p.stdout  # the int8 model's top-1 on test.npz
    assert (tmp_path / "model_int8.tflite").is_file()


def test_the_model_keeps_the_calibration_files_base_name(tmp_path):
    from edge_sdk.model import read_model
    from edge_sdk.model.manifest import read_manifest

    calib, _ = _digits_data(tmp_path)
    out = tmp_path / "m.tflite"
    p = edge("convert", DIGITS / "digits_cnn.onnx", "-o", out, "--calib", calib.resolve(), timeout=600)
    assert p.returncode == 0, p.stderr
    manifest = read_manifest(read_model(out.read_bytes()))
    assert manifest["calibration"]["source"] == "calib.npz", manifest["calibration"]
    assert str(tmp_path) not in out.read_bytes().decode("latin-1")


def _relu_int8(path: Path) -> Path:
    g = GraphBuilder()
    x = g.input("x", (1, 8), "INT8", scale=0.1, zero_point=0)
    y = g.tensor("y", (1, 8), "INT8", scale=0.1, zero_point=0)
    g.op("RELU", [x], [y])
    g.output(y)
    write_model(g.build(), path)
    return path


@needs_c_runtime  # edge export's C sources need no build, but its check of the model builds the C runtime
def test_exported_readme_shows_c_not_a_python_tuple(tmp_path):
    out = tmp_path / "exp"
    p = edge("export", _relu_int8(tmp_path / "relu.tflite"), "--target", "qemu-mps2-an386", "--format", "make",
             "-o", out, timeout=600)
    assert p.returncode == 0, p.stderr
    text = (out / "README.md").read_text(encoding="utf-8")
    assert "Ellipsis" not in text and "{..., 0, 0}" not in text
    assert "least-RAM patch stage: none (the layer-by-layer plan runs every op whole" in text


def _fc_model(path: Path, dtype: str, rows: int, cols: int) -> Path:
    """One FULLY_CONNECTED with rows x cols weights: int8 (int8 activations) or float32."""
    g = GraphBuilder()
    rng = np.random.default_rng(0)
    if dtype == "INT8":
        x = g.input("x", (1, cols), "INT8", scale=0.05, zero_point=0)
        w = g.constant("w", rng.integers(-127, 128, (rows, cols), dtype=np.int8), scale=0.01, zero_point=0)
        y = g.tensor("y", (1, rows), "INT8", scale=0.5, zero_point=0)
    else:
        x = g.input("x", (1, cols), "FLOAT32")
        w = g.constant("w", rng.standard_normal((rows, cols)).astype(np.float32))
        y = g.tensor("y", (1, rows), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    g.output(y)
    write_model(g.build(), path)
    return path


def test_check_fix_for_a_model_too_big_for_flash_is_true(tmp_path, capsys):
    """stm32f746-disco has 768 KiB for the model: 1 MiB of int8 weights cannot shrink by int8 quantization."""
    from edge_sdk.cli import main

    int8 = _fc_model(tmp_path / "int8.tflite", "INT8", 1024, 1024)
    assert main(["check", str(int8), "--target", "stm32f746-disco", "--json"]) == 1
    import json

    fixes = json.loads(capsys.readouterr().out)["fixes"]
    assert not any("--quantize int8" in f for f in fixes), fixes
    assert any("already integer" in f and "more flash" in f for f in fixes), fixes
    flt = _fc_model(tmp_path / "float.tflite", "FLOAT32", 512, 512)
    assert main(["check", str(flt), "--target", "stm32f746-disco", "--json"]) == 1
    fixes = json.loads(capsys.readouterr().out)["fixes"]
    assert any("--quantize int8" in f and "1024.0 KiB of the model's weights are float" in f for f in fixes), fixes


def test_op_plot_says_each_thing_once(tmp_path):
    from edge_sdk.tools.op_report import OpProfile, OpTiming, write_plot

    prof = OpProfile(ops=[OpTiming(0, "CONV_2D", [120.0, 110.0], macs=100, output_shape=[1, 8]),
                          OpTiming(1, "SOFTMAX", [10.0, 12.0], output_shape=[1, 8])],
                     unit="ticks", run_totals=[130.0, 122.0], us_per_unit=None, model="dir/kws.tflite", where="qemu")
    path = tmp_path / "ops.png"
    write_plot(prof, path)
    with Image.open(path) as img:
        text = dict(img.text)
    words = (text["Title"] + " " + text["x_label"]).replace(";", " ").replace(",", " ").split()
    assert words.count("ticks") + words.count("(ticks") == 1, text
    assert (text["Title"] + text["x_label"]).count("time per op") == 1, text


def _wav(path: Path, rate: int, n: int) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.sin(np.arange(n) / 3.0) * 8000).astype("<i2").tobytes())
    return path


def _raw_audio_model(path: Path, shape: tuple[int, ...]) -> Path:
    """Raw samples in (float, no manifest), three class logits out."""
    n = int(np.prod(shape))
    g = GraphBuilder()
    x = g.input("samples", shape, "FLOAT32")
    flat = g.tensor("flat", (1, n), "FLOAT32")
    g.op("RESHAPE", [x, g.constant("shape", np.array([1, n], np.int32))], [flat])
    y = g.tensor("y", (1, 3), "FLOAT32")
    g.op("FULLY_CONNECTED", [flat, g.constant("w", np.random.default_rng(1).standard_normal((3, n)).astype(
        np.float32)), -1], [y])
    g.output(y)
    write_model(g.build(), path)
    return path


def test_wav_for_a_raw_audio_model_without_manifest_asks_for_the_sample_rate(tmp_path):
    model = _raw_audio_model(tmp_path / "raw.tflite", (1, 160, 1))
    clip = _wav(tmp_path / "clip.wav", 8000, 160)
    one_line_error(edge("run", model, clip), 3, "clip.wav", "no 'audio' manifest entry", "--sample-rate HZ")
    ok = edge("run", model, clip, "--sample-rate", "8000", "--backend", "python")
    assert ok.returncode == 0, ok.stderr
    assert "clip.wav:" in ok.stdout and len(ok.stdout.splitlines()) >= 4
    # a [1, N] input is taken for samples, but its rate is not guessed in silence: 16 kHz assumed, 8 kHz given
    vector = _raw_audio_model(tmp_path / "vec.tflite", (1, 160))
    one_line_error(edge("run", vector, clip), 3, "clip.wav", "8000 Hz", "16000 Hz assumed", "--sample-rate HZ")
    assert edge("run", vector, clip, "--sample-rate", "8000", "--backend", "python").returncode == 0
    one_line_error(edge("run", vector, clip, "--sample-rate", "0"), 2, "--sample-rate")


# ------------------------------------------------------------------------------- point 7: an interrupted dpkg
def _fake_tools(folder: Path, uid: int, audit: str = "", apt_fails: bool = False) -> Path:
    """dpkg / apt-get / id stand-ins that log their calls: no package is installed; `dpkg --audit` prints
    ``audit``."""
    bin_ = folder / "bin"
    bin_.mkdir()
    log = folder / "calls.log"
    scripts = {
        "dpkg": f'echo "dpkg $*" >> {log}\ncase "$1" in -s) exit 1;; --audit) printf "%s" "{audit}";; esac\nexit 0',
        "apt-get": f'echo "apt-get $*" >> {log}\nexit {1 if apt_fails else 0}',
        "id": f'echo {uid}',
    }
    for name, body in scripts.items():
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    return bin_


def _make_system_deps(tmp_path: Path, bin_: Path, journal: bool = False) -> subprocess.CompletedProcess:
    admin = tmp_path / "dpkg-admin"
    (admin / "updates").mkdir(parents=True)
    if journal:
        (admin / "updates" / "0001").write_text("half-written\n")
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")  # the recipe alone: no venv, no real package
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}"}
    return subprocess.run(["make", "--no-print-directory", "-C", str(tmp_path), "system-deps",
                           "DEBIAN_PACKAGES=pkg-a pkg-b", f"DPKG_ADMINDIR={admin}"],
                          capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.skipif(shutil.which("make") is None, reason="the Makefile's recipe runs under make")
@pytest.mark.parametrize("journal,audit", [(True, ""), (False, "The following packages are only half configured")])
def test_interrupted_dpkg_is_finished_as_root(tmp_path, journal, audit):
    p = _make_system_deps(tmp_path, _fake_tools(tmp_path, 0, audit), journal)
    assert p.returncode == 0, p.stdout + p.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    configure = calls.index("dpkg --configure -a")
    install = next(i for i, c in enumerate(calls) if c.startswith("apt-get") and "install" in c)
    assert configure < install and calls[install].endswith("pkg-a pkg-b"), calls
    assert "dpkg was interrupted" in p.stdout and "running dpkg --configure -a" in p.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="the Makefile's recipe runs under make")
def test_interrupted_dpkg_is_named_for_another_user_and_a_failed_install_says_what_to_run(tmp_path):
    p = _make_system_deps(tmp_path, _fake_tools(tmp_path, 1000), journal=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "sudo dpkg --configure -a" in p.stdout and "sudo apt-get install pkg-a pkg-b" in p.stdout, p.stdout
    assert "--configure" not in (tmp_path / "calls.log").read_text()  # another user's make runs nothing as root
    root = tmp_path / "root"
    root.mkdir()
    failed = _make_system_deps(root, _fake_tools(root, 0, apt_fails=True))
    assert failed.returncode != 0
    assert "to finish by hand: dpkg --configure -a && apt-get install pkg-a pkg-b" in failed.stdout, failed.stdout
