"""The runnable examples (examples/README.md) and `make demo` (examples/demo.py), on small settings.

Each script runs as a user runs it (a child Python process, its output read); the checks are on what it
prints and writes. The device parts need qemu-system-arm and the Arm toolchain (skipped without them) and are
marked slow; the ../shared models skip when absent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import ROOT, SHARED_MODELS, shared_model

EXAMPLES = ROOT / "examples"
HAVE_DEVICE = all(shutil.which(t) for t in ("qemu-system-arm", "arm-none-eabi-gcc", "make"))


def run(script, *args, env=None, timeout=300) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), e.get("PYTHONPATH")]))
    e.update(env or {})
    return subprocess.run([sys.executable, str(EXAMPLES / script), *map(str, args)], check=False, env=e, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def load(script):
    spec = importlib.util.spec_from_file_location(f"example_{script.replace('/', '_')[:-3]}", EXAMPLES / script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ok(proc) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc.stdout


# ------------------------------------------------------------------------------------------ make demo


def test_demo_without_device_tools_runs_the_host_steps(tmp_path):
    """No qemu/toolchain on PATH: the device steps are skipped with the apt-get line, the rest runs."""
    empty = tmp_path / "bin"
    empty.mkdir()
    out = ok(run("demo.py", "--out", tmp_path / "demo", env={"PATH": str(empty)}))
    assert "sudo apt-get install qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi" in out
    assert "flash     skipped: qemu-system-arm" in out
    assert "on qemu-mps2-an386: RUNS  (checked with the C kernel table (no C compiler here)" in out
    assert "estimate" in out  # no compiler: the RAM figure is said to be an estimate
    assert "TFLM      bit-exact with ours on 359 of 359 images" in out
    assert "same top-1 class as ours on 100.00% of images" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith(("float ", "int8 "))}
    assert float(lines["int8"].split()[1].rstrip("%")) >= 95.0
    for name in ("digits_int8.tflite", "reliability.png", "data/test.npz", "data/calibration.npy"):
        assert (tmp_path / "demo" / name).stat().st_size > 0
        assert f"demo/{name}" in out.split("files written")[1]
    assert "demo passed" in out


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_DEVICE, reason="qemu-system-arm / arm-none-eabi-gcc not installed")
def test_demo_end_to_end_on_qemu(tmp_path, monkeypatch):
    from edge_sdk.device.qemu_board import list_boards

    state = tmp_path / "state"
    out = ok(run("demo.py", "--out", tmp_path / "demo", "--runs", 3, "--validate", 8,
                 env={"EDGE_STATE_DIR": str(state)}))
    assert "outputs: identical to the host interpreter (bit for bit)" in out
    assert "device outputs identical to the host's: 8 of 8 images (bit-exact)" in out
    assert "CONV_2D" in out.split("4. edge profile")[1] and "stopped the QEMU board" in out
    for name in ("profile_trace.json", "profile_ops.csv", "profile_ops.png", "firmware/fw.elf"):
        assert (tmp_path / "demo" / name).stat().st_size > 0
    trace = json.loads((tmp_path / "demo" / "profile_trace.json").read_text())
    assert sum(e.get("cat") == "run" for e in trace["traceEvents"]) == 3
    monkeypatch.setenv("EDGE_STATE_DIR", str(state))
    assert list_boards() == []  # the demo stopped its board


# ------------------------------------------------------------------------------------------ image classification


def test_image_classification_quick(tmp_path):
    out = ok(run("image_classification/classify.py", "--out", tmp_path, "--epochs", 3, "--images", 3,
                 "--calib", 64, "--skip-profile"))
    assert "target     raspberry-pi-4: runs" in out and "target     stm32f746-disco: runs" in out
    assert "quantize   int8 (minmax, io float32)" in out and "quantize   int8 (minmax, io int8)" in out
    pngs = sorted((tmp_path / "images").glob("*.png"))
    assert len(pngs) == 3
    # edge run: each image's top label; the file name says the true digit; a 3-epoch model gets most right
    run_part = out.split("== 3.")[1].split("== 4.")[0]
    right = sum(f"{p.name}:\n  {p.stem[-1]} " in run_part for p in pngs)
    assert right >= 2, run_part
    evals = [line for line in out.splitlines() if line.startswith("model      top-1")]
    assert len(evals) == 1 and float(evals[0].split()[2].rstrip("%")) > 80
    assert (tmp_path / "reliability.png").stat().st_size > 0
    assert "skipped (--skip-profile)" in out


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_DEVICE, reason="qemu-system-arm / arm-none-eabi-gcc not installed")
def test_image_classification_profiles_on_qemu(tmp_path):
    out = ok(run("image_classification/classify.py", "--out", tmp_path, "--epochs", 2, "--images", 1,
                 "--calib", 32, env={"EDGE_STATE_DIR": str(tmp_path / "state")}))
    assert "outputs: identical to the host interpreter (bit for bit)" in out
    assert "$ edge board stop socket://127.0.0.1:" in out and "stopped socket://" in out
    assert (tmp_path / "profile_trace.json").exists() and (tmp_path / "profile_ops.png").exists()


# ------------------------------------------------------------------------------------------ person detection


def test_person_detection(tmp_path):
    shared_model("tflite-micro/person_detect.tflite")
    shared_model("tflite-micro/testdata/person_detection/person.bmp")
    out = ok(run("person_detection/detect_person.py", "--out", tmp_path))
    lines = {line.split()[0]: line for line in out.splitlines() if ".bmp " in line}
    assert "int8 values" in lines["person.bmp"] and "-> person " in lines["person.bmp"]
    assert "an image" in lines["no_person.bmp"] and "-> no person" in lines["no_person.bmp"]
    cli = out.split("$ edge run")[1]
    assert "person.png:\n  person " in cli and "no_person.png:\n  no person " in cli
    # the honest part: read as ordinary pixels, TFLM's person.bmp no longer looks like a person
    plain = ok(run("person_detection/detect_person.py", "--out", tmp_path / "plain", "--encoding", "pixels"))
    def person_score(text):
        line = next(x for x in text.splitlines() if x.startswith("person.bmp"))
        return float(re.search(r"  person ([0-9.]+)  no person", line).group(1))

    assert person_score(plain) < 0.6 < person_score(out)


def test_person_detection_skips_without_shared(tmp_path):
    out = ok(run("person_detection/detect_person.py", "--out", tmp_path,
                 env={"EDGE_SHARED_MODELS": str(tmp_path / "absent")}))
    assert out.startswith("skipped:") and "../shared/models" in out


def test_int8_encoding_decoder():
    from PIL import Image

    mod = load("person_detection/detect_person.py")
    pixels = np.array([[0, 127, 128, 255]], np.uint8)
    stored = (pixels.astype(np.int16) - 128).astype(np.int8).view(np.uint8)  # how TFLM's person.bmp is stored
    path = ROOT / "out" / "test_examples_int8.bmp"
    path.parent.mkdir(exist_ok=True)
    try:
        Image.fromarray(stored, "L").save(path)
        photo, why = mod.read_frame(path, "int8")
        assert np.array_equal(np.asarray(photo), pixels) and "int8" in why
        photo, why = mod.read_frame(path, "auto")  # not TFLM's file: read as an ordinary image
        assert np.array_equal(np.asarray(photo), stored) and "an image" in why
    finally:
        path.unlink(missing_ok=True)


# ------------------------------------------------------------------------------------------ keyword spotting


def test_keyword_spotting(tmp_path):
    shared_model("tflite-micro/micro_speech_quantized.tflite")
    shared_model("tflite-micro/testdata/micro_speech/yes_1000ms.wav")
    out = ok(run("keyword_spotting/spot_keywords.py", "--out", tmp_path))
    assert "yes_1000ms.wav       -> yes" in out and "no_1000ms.wav        -> no" in out
    heard = next(line for line in out.splitlines() if line.startswith("heard"))
    assert heard.index("'yes'") < heard.index("'no'") and heard.count("'") == 4, heard  # yes, then no; no false alarm
    cli = out.split("$ edge run")[1]
    assert "yes_1000ms.wav:\n  yes " in cli and "no_1000ms.wav:\n  no " in cli
    assert (tmp_path / "stream.wav").stat().st_size == 4 * 16000 * 2 + 44


def test_keyword_spotting_decision_rule():
    mod = load("keyword_spotting/spot_keywords.py")

    def win(t, **scores):
        base = {"silence": 0.0, "unknown": 0.0, "yes": 0.0, "no": 0.0}
        base.update(scores)
        return (t, sorted(base.items(), key=lambda kv: -kv[1]))

    windows = [win(0.0, yes=0.9), win(0.2, yes=0.95), win(0.4, yes=0.9), win(0.6, yes=0.9),  # one yes, repeats
               win(0.8, no=0.9), win(1.0, yes=1.0), win(1.2, no=0.9),  # a single confident window is not enough
               win(1.4, no=0.9), win(1.6, no=0.9), win(1.8, no=0.95)]
    heard = mod.spot(windows, threshold=0.8, average=3)
    assert [(label, round(t - mod.WINDOW_S, 1)) for t, label, _ in heard] == [("yes", 0.4), ("no", 1.6)]


# ------------------------------------------------------------------------------------------ detection


def test_detection_example(tmp_path):
    out = ok(run("detection/detect_objects.py", "--out", tmp_path))
    assert "per class): keeps [3, 0]" in out and "(class_aware=False): keeps [3]" in out
    assert "after NMS: 2 detection(s)" in out
    cli = out.split("$ edge run")[1]
    assert cli.count("  square ") == 2
    assert (tmp_path / "detections.png").stat().st_size > 0


def test_detection_model_finds_the_squares_and_peers_agree():
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from edge_sdk.tasks.pipeline import Detector

    mod = load("detection/detect_objects.py")
    model = mod.build_detector()
    squares = [(6, 2, 8), (16, 16, 12), (22, 2, 8)]
    img = mod.scene(squares)
    found = mod.Detector(model, anchors=mod.make_anchors(), labels=["square"], iou_threshold=0.3).detect(img)
    got = sorted(tuple(round(v) for v in d.box_pixels) for d in found)
    assert got == sorted((left, top, left + side, top + side) for top, left, side in squares)
    # the built model runs the same in LiteRT (float within 1e-5)
    det = Detector(model, anchors=mod.make_anchors())
    x = det.prepare(img)[0]
    ours = det.runner.run(x)
    lite = LiteRT(model_content=model)
    lite.allocate_tensors()
    lite.set_tensor(lite.get_input_details()[0]["index"], x)
    lite.invoke()
    by_name = {d["name"]: lite.get_tensor(d["index"]) for d in lite.get_output_details()}
    np.testing.assert_allclose(ours[1], by_name["raw_scores"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[0], by_name["raw_boxes"], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------ text generation


def test_text_generation_cli_greedy_is_reproducible():
    model = EXAMPLES / "tiny_lm" / "tiny_lm_int16x8.tflite"
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), e.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "edge_sdk.cli", "generate", str(model), "--prompt", "The ", "--max-tokens", "12",
           "--greedy", "--json"]
    runs = [subprocess.run(cmd, check=False, env=e, capture_output=True, text=True, timeout=120) for _ in range(2)]
    docs = [json.loads(ok(r)) for r in runs]
    for key in ("text", "tokens", "prefill_tokens_per_s", "decode_tokens_per_s", "time_to_first_token_ms",
                "kv_cache_bytes"):
        assert key in docs[0], key
    assert 0 < len(docs[0]["tokens"]) <= 12 and docs[0]["text"]
    assert docs[0]["tokens"] == docs[1]["tokens"] and docs[0]["text"] == docs[1]["text"]


def test_shared_models_location_is_the_tests_one():
    # the examples read ../shared/models the same way the tests do (EDGE_SHARED_MODELS overrides both)
    mod = load("keyword_spotting/spot_keywords.py")
    assert mod.MODEL.parent == SHARED_MODELS / "tflite-micro"
