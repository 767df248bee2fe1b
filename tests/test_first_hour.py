"""Issue 14, a new user's first hour: every misuse of the real `edge` command (run in a subprocess) is one
line naming the problem with the right exit code and no traceback; scores are what the model computed; dynamic
ONNX dims, calibration data and paths are checked before any work; `edge serve` bounds; Ctrl-C during
`edge flash` leaves no QEMU behind."""

from __future__ import annotations

import base64
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.conftest import shared_model

ROOT = Path(__file__).resolve().parent.parent


def edge(*argv, timeout=300, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edge_sdk.cli", *map(str, argv)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd)


def one_line_error(p: subprocess.CompletedProcess, code: int, *needles: str) -> str:
    """Exit ``code``, no traceback, exactly one error line on stderr holding every needle."""
    assert p.returncode == code, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr
    lines = [line for line in p.stderr.splitlines() if "error" in line]
    assert len(lines) == 1, p.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def fc_model(path: Path, batchable: bool = True) -> Path:
    """float (1, 4) -> (1, 3); ``batchable=False`` adds a RESHAPE to a fixed [1, 3] (no batch axis to resize)."""
    g = GraphBuilder()
    x = g.input("x", (1, 4), "FLOAT32")
    w = g.constant("w", (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 10)
    y = g.tensor("y", (1, 3), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    if not batchable:
        shape = g.constant("shape", np.array([1, 3], np.int32))
        z = g.tensor("z", (1, 3), "FLOAT32")
        g.op("RESHAPE", [y, shape], [z])
        y = z
    g.output(y)
    write_model(g.build(), path)
    return path


# ------------------------------------------------------------------------------------------ argument misuse
def test_serve_port_out_of_range_exits_2(tmp_path):
    one_line_error(edge("serve", fc_model(tmp_path / "m.tflite"), "--port", "70000"), 2, "--port", "70000")


def test_serve_port_in_use_is_one_line(tmp_path):
    model = fc_model(tmp_path / "m.tflite")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        p = edge("serve", model, "--port", port, timeout=60)
    one_line_error(p, 5, f"127.0.0.1:{port}", "in use", "--port")


@pytest.mark.parametrize("argv,flag", [
    (["bench", "{m}", "--runs", "0"], "--runs"),
    (["bench", "{m}", "--warmup", "-1"], "--warmup"),
    (["profile", "{m}", "--target", "qemu-mps2-an386", "--runs", "0"], "--runs"),
    (["profile", "{m}", "--target", "qemu-mps2-an386", "--timeout", "0"], "--timeout"),
    (["serve", "{m}", "--max-batch", "0"], "--max-batch"),
    (["generate", "{m}", "--greedy", "--temperature", "0.5"], "--greedy"),
    (["generate", "{m}", "--temperature", "0"], "--temperature"),
    (["generate", "{m}", "--top-p", "1.5"], "--top-p"),
    (["serve", "{m}", "--max-wait-ms", "-1"], "--max-wait-ms"),
    (["run", "{m}", "x.npy", "--top-k", "-1"], "--top-k"),
    (["convert", "{m}", "-o", "o.tflite", "--input-shape", "x:1,a"], "--input-shape"),
    (["bench", "{m}", "--backend", "litert", "--csv", "o.csv"], "--csv"),
    (["flash", "{m}", "--port", "COM3"], "--port"),
])
def test_argument_misuse_exits_2_naming_the_flag(tmp_path, argv, flag):
    model = fc_model(tmp_path / "m.tflite")
    one_line_error(edge(*[a.format(m=model) for a in argv]), 2, flag)


def test_library_range_checks_are_usage_errors(tmp_path):
    from edge_sdk.errors import UsageError
    from edge_sdk.tools.bench import bench, run_benchmark
    from edge_sdk.tools.serve import Server

    model = fc_model(tmp_path / "m.tflite")
    with pytest.raises(UsageError, match="--runs"):
        run_benchmark(model, runs=0)
    with pytest.raises(UsageError, match="--warmup"):
        bench(model, runs=1, warmup=-1)
    with pytest.raises(UsageError, match="port"):
        Server(model, port=70000)


def test_bench_litert_refusal_is_our_error():
    model = shared_model("tflite-micro/person_detect.tflite")  # LiteRT refuses its bias quantized_dimension
    one_line_error(edge("bench", model, "--backend", "litert", "--runs", "1", "--warmup", "0"), 3,
                   "LiteRT", "person_detect.tflite", "quantized_dimension")


def test_flash_target_has_a_real_default():
    from edge_sdk.cli import DEFAULT_FLASH_TARGET, build_parser

    args = build_parser().parse_args(["flash", "m.tflite"])
    assert args.target == DEFAULT_FLASH_TARGET == "qemu-mps2-an386"
    from edge_sdk.targets.profiles import load_profile

    assert load_profile(args.target).flash["method"] == "qemu"


def test_help_says_defaults_data_formats_and_the_http_format():
    convert = edge("convert", "--help").stdout
    for text in ("default int8", "default minmax", "--input-shape", "uint8 0..255", "finite", "[N, H, W, C]"):
        assert text in convert, text
    assert "y: integer class ids" in edge("evaluate", "--help").stdout
    serve = edge("serve", "--help").stdout
    for text in ("POST /predict", "application/octet-stream", "X-Shape", "GET /metrics", "--boxes"):
        assert text in serve, text
    assert "qemu-mps2-an386" in edge("flash", "--help").stdout


# ------------------------------------------------------------------------------------------ edge serve
def _request(port, method, path, body: bytes | None = None, ctype="application/json"):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body, {"Content-Type": ctype} if body is not None else {})
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        conn.close()


def test_serve_deep_json_is_400_and_connection_503s_are_counted(tmp_path):
    from edge_sdk.tools.serve import Server

    with Server(fc_model(tmp_path / "m.tflite"), port=0, max_connections=1, socket_timeout_s=5) as srv:
        deep = b'{"inputs": ' + b"[" * 5000 + b"]" * 5000 + b"}"
        def slot_free():  # the one connection slot is let go once the previous request's thread ends
            end = time.monotonic() + 10
            while srv._httpd._slots._value != 1 and time.monotonic() < end:
                time.sleep(0.005)

        status, doc = _request(srv.port, "POST", "/predict", deep)
        assert status == 400 and "nested" in doc["error"]
        slot_free()
        ok, _ = _request(srv.port, "POST", "/predict", json.dumps({"inputs": [[1, 2, 3, 4]]}).encode())
        assert ok == 200
        slot_free()
        idle = socket.create_connection(("127.0.0.1", srv.port), timeout=10)  # holds the only slot
        try:
            end = time.monotonic() + 10
            while srv._httpd._slots._value != 0 and time.monotonic() < end:
                time.sleep(0.005)
            for _ in range(3):
                status, doc = _request(srv.port, "GET", "/health")
                assert status == 503 and "too many connections" in doc["error"]
        finally:
            idle.close()
        slot_free()
        m = srv.metrics()
    assert m["rejected_connections"] == 3
    assert m["responses_by_status"]["503"] == 3 and m["responses_by_status"]["400"] == 1


def _serve_until_ready(model, *flags):
    proc = subprocess.Popen([sys.executable, "-m", "edge_sdk.cli", "serve", str(model), "--port", "0", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("serving"):
                # the batching note (if any) went to stderr before it
                break
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.stdout.read(), proc.stderr.read()  # (communicate would skip what the reader buffered)
        proc.wait(timeout=30)
    return proc.returncode, "".join(lines) + out, err


def test_serve_max_batch_batches_or_says_why_not(tmp_path):
    from edge_sdk.tools.serve import Server

    code, out, err = _serve_until_ready(fc_model(tmp_path / "fixed.tflite", batchable=False), "--max-batch", "8")
    assert code == 143 and "Traceback" not in err, err  # SIGTERM: 128 + 15, as every command (issue 27)
    assert "max batch 1" in out and "warning: serve: max batch 1, not 8:" in err, (out, err)
    assert "not 8" not in out and err.count("not 8") == 1, (out, err)  # the note once, on stderr
    with Server(fc_model(tmp_path / "ok.tflite"), port=0, max_batch=8) as srv:
        assert srv.max_batch == 8 and srv.batch_note == "" and srv.health()["batching"]
    with Server(tmp_path / "fixed.tflite", port=0, max_batch=8) as srv:
        assert srv.max_batch == 1 and srv.health()["batching_note"].startswith("max batch 1, not 8")


# ------------------------------------------------------------------------------------------ scores, inputs
def test_single_sigmoid_output_is_not_softmaxed(tmp_path):
    """hey_jarvis: one uint8 sigmoid output; `edge run` prints what the model computed."""
    from edge_sdk.runtime.interpreter import Interpreter

    model = shared_model("pymicro-wakeword/hey_jarvis.tflite")
    it = Interpreter(str(model))
    it.allocate_tensors()
    d_in, d_out = it.get_input_details()[0], it.get_output_details()[0]
    rng = np.random.default_rng(3)
    scale, zp = d_out["quantization"]
    for k, x in enumerate([np.zeros(tuple(d_in["shape"]), np.float32),
                           rng.uniform(-2, 2, tuple(d_in["shape"])).astype(np.float32)]):
        path = tmp_path / f"x{k}.npy"
        np.save(path, x)
        p = edge("run", model, path, "--json")
        assert p.returncode == 0, p.stderr
        (r,) = json.loads(p.stdout)
        (pred,) = r["predictions"]
        assert r["scores"] == "as computed"
        s_in, zp_in = d_in["quantization"]
        it.set_tensor(d_in["index"], np.clip(np.round(x / s_in) + zp_in, -128, 127).astype(np.int8))
        it.invoke()
        want = (float(it.get_tensor(d_out["index"]).reshape(-1)[0]) - zp) * scale
        assert pred["score"] == pytest.approx(want, abs=1e-6)


def test_edge_run_says_when_it_applied_softmax(tmp_path):
    from tests.test_pipeline import MANIFEST, classifier_model

    model = tmp_path / "logits.tflite"
    model.write_bytes(classifier_model(False, MANIFEST))
    img = tmp_path / "red.png"
    Image.new("RGB", (4, 4), (250, 5, 5)).save(img)
    p = edge("run", model, img)
    assert p.returncode == 0 and "(scores: softmax of the model's outputs)" in p.stdout, p.stdout + p.stderr
    model.write_bytes(classifier_model(True, MANIFEST))
    p = edge("run", model, img, "--json")
    assert json.loads(p.stdout)[0]["scores"] == "as computed"


def test_auto_scores():
    from edge_sdk.tasks.pipeline import to_scores

    assert to_scores(np.array([0.0]))[0] == 0.0  # a probability, kept
    assert to_scores(np.array([0.3]))[0] == pytest.approx(0.3)
    assert to_scores(np.array([2.0]))[0] == pytest.approx(1 / (1 + np.exp(-2)))  # one logit: sigmoid
    np.testing.assert_allclose(to_scores(np.array([0.2, 0.8])), [0.2, 0.8])  # normalized: kept
    e = np.exp([1.0, 3.0])
    np.testing.assert_allclose(to_scores(np.array([1.0, 3.0])), e / e.sum(), rtol=1e-6)


def test_sigmoid_outputs_kept_as_computed():
    """A LOGISTIC output of several classes (multi-label) is not re-normalized."""
    from edge_sdk.tasks.pipeline import ModelRunner, TensorClassifier

    g = GraphBuilder()
    x = g.input("x", (1, 3), "FLOAT32")
    y = g.tensor("y", (1, 3), "FLOAT32")
    g.op("LOGISTIC", [x], [y])
    g.output(y)
    runner = ModelRunner(write_model(g.build()))
    preds = TensorClassifier(runner, None, 3).predict_tensor(np.array([[2.0, 1.0, -1.0]], np.float32))
    want = 1 / (1 + np.exp(-np.array([2.0, 1.0, -1.0])))
    np.testing.assert_allclose([p.score for p in preds], want, rtol=1e-5)


def test_wav_for_an_image_model_is_refused(tmp_path):
    from tests.test_pipeline import MANIFEST, classifier_model, write_wav

    model = tmp_path / "clf.tflite"
    model.write_bytes(classifier_model(False, MANIFEST))
    wav = tmp_path / "x.wav"
    write_wav(wav, (np.sin(np.arange(16000) / 5) * 3000).astype(np.int16))
    one_line_error(edge("run", model, wav), 3, "x.wav", "WAV", "image")


def _three_output_detector(path: Path) -> Path:
    """float image -> outputs (extra, scores, loc): the box output is neither found by shape nor by count."""
    g = GraphBuilder()
    x = g.input("image", (1, 8, 8, 3), "FLOAT32")
    axes = g.constant("axes", np.array([1, 2, 3], np.int32))
    m = g.tensor("mean", (1,), "FLOAT32")
    g.op("MEAN", [x, axes], [m], keep_dims=False)
    zero = g.constant("zero", np.zeros(1, np.float32))
    z = g.tensor("z", (1,), "FLOAT32")
    g.op("MUL", [m, zero], [z])
    outs = []
    for name, value in (("extra", np.zeros((1, 5))), ("scores", np.array([[4.0], [-4.0]])),
                        ("loc", np.array([[0.1, 0.2, 0.5, 0.6], [0.0, 0.0, 1.0, 1.0]]))):
        c = g.constant(name + "_const", value.astype(np.float32)[None])
        o = g.tensor(name, (1,) + value.shape, "FLOAT32")
        g.op("ADD", [c, z], [o])
        outs.append(o)
    g.output(*outs)
    write_model(g.build(), path)
    return path


def test_detection_output_flags_for_run_and_serve(tmp_path):
    from edge_sdk.tools.serve import Server

    model = _three_output_detector(tmp_path / "det.tflite")
    img = tmp_path / "x.png"
    Image.new("RGB", (8, 8), (10, 20, 30)).save(img)
    for boxes, scores in (("loc", "scores"), ("2", "1")):
        p = edge("run", model, img, "--boxes", boxes, "--scores", scores, "--json")
        assert p.returncode == 0, p.stderr
        (r,) = json.loads(p.stdout)
        (d,) = r["detections"]
        assert d["score"] == pytest.approx(1 / (1 + np.exp(-4.0)), rel=1e-5)
        assert d["box"] == pytest.approx([0.2, 0.1, 0.6, 0.5], abs=1e-6)  # xmin, ymin, xmax, ymax
    one_line_error(edge("run", model, img, "--boxes", "nope", "--scores", "1"), 3, "nope", "loc")
    with Server(model, port=0, detection={"outputs": {"boxes": "loc", "scores": "scores"}}) as srv:
        buf = io.BytesIO()
        Image.new("RGB", (8, 8)).save(buf, "PNG")
        status, doc = _request(srv.port, "POST", "/predict",
                               json.dumps({"image": base64.b64encode(buf.getvalue()).decode()}).encode())
    assert status == 200 and len(doc["detections"]) == 1


# ------------------------------------------------------------------------------------------ convert
def _dynamic_onnx(path: Path, dims=("N", 3, "H", "W")) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3, "w")
    b = numpy_helper.from_array(np.linspace(-0.2, 0.2, 4).astype(np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    out_dims = [dims[0], 4, dims[2], dims[3]]
    graph = helper.make_graph(nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_dims)], [w, b])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def _pictures(n=8, size=8) -> np.ndarray:
    return np.random.default_rng(5).integers(0, 256, (n, size, size, 3), dtype=np.uint8)


def test_dynamic_dims_need_input_shape(tmp_path):
    src = _dynamic_onnx(tmp_path / "dyn.onnx")
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(1).uniform(0, 1, (4, 3, 8, 8)).astype(np.float32))
    out = tmp_path / "out.tflite"
    line = one_line_error(edge("convert", src, "-o", out, "--calib", calib), 3, "input 'x'", "[N, 3, H, W]",
                          "--input-shape")
    assert "H" in line and not out.exists()
    p = edge("convert", src, "-o", out, "--calib", calib, "--input-shape", "x:1,3,8,8", "--json")
    assert p.returncode == 0, p.stderr
    from edge_sdk.runtime.interpreter import Interpreter

    it = Interpreter(str(out))
    it.allocate_tensors()
    assert sorted(int(d) for d in it.get_input_details()[0]["shape"]) == [1, 3, 8, 8]
    # the bare form, for a one-input model, through the library
    from converters import convert

    r = convert(str(src), calibration=str(calib), input_shapes=(1, 3, 8, 8))
    assert sorted(r.report["output"]["inputs"][0]["shape"] if "inputs" in r.report["output"]
                  else r.report["manifest"]["io"]["inputs"][0]["shape"]) == [1, 3, 8, 8]
    # a flag naming no input of the model is misuse: exit 2 (converters' SettingError)
    one_line_error(edge("convert", src, "-o", out, "--input-shape", "y:1,3,8,8", "--calib", calib), 2, "'y'", "x")


def test_dynamic_batch_alone_is_one_with_a_note(tmp_path):
    from converters import convert

    src = _dynamic_onnx(tmp_path / "b.onnx", ("batch", 3, 8, 8))
    r = convert(str(src), quantize="none")
    # stored as 1; the model resizes, so the signature keeps -1 there (issue 24: named dims stay dynamic)
    assert any("batch" in n and "stored as 1" in n for n in r.report["notes"])
    from edge_sdk.model import read_model

    sg = read_model(r.tflite).subgraphs[0]
    x = sg.tensors[sg.inputs[0]]
    assert tuple(x.shape) == (1, 3, 8, 8) and tuple(x.shape_signature) == (-1, 3, 8, 8)


def test_convert_validates_target_and_output_before_any_work(tmp_path):
    """The calibration data here is all NaN: a late check would report that; the early ones come first."""
    src = _dynamic_onnx(tmp_path / "s.onnx", (1, 3, 8, 8))
    nan = tmp_path / "nan.npy"
    np.save(nan, np.full((4, 3, 8, 8), np.nan, np.float32))
    one_line_error(edge("convert", src, "-o", tmp_path / "o.tflite", "--calib", nan, "--target", "no-such-board"), 2,
                   "no-such-board")
    one_line_error(edge("convert", src, "-o", tmp_path / "missing" / "o.tflite", "--calib", nan), 2,
                   "--output", "missing")
    one_line_error(edge("convert", src, "-o", tmp_path / "o.tflite", "--calib", tmp_path / "absent.npy"), 6,
                   "absent.npy")
    # and the NaN itself: refused naming the file and the sample
    one_line_error(edge("convert", src, "-o", tmp_path / "o.tflite", "--calib", nan), 3, "nan.npy", "sample 0",
                   "non-finite")
    assert not (tmp_path / "o.tflite").exists()


def test_nan_in_a_later_sample_is_named(tmp_path):
    from converters.calibration import calibration_data
    from edge_sdk.errors import ModelError

    x = np.zeros((5, 1, 4), np.float32)
    x[3, 0, 2] = np.inf
    p = tmp_path / "c.npy"
    np.save(p, x)
    with pytest.raises(ModelError, match=r"c\.npy sample 3.*non-finite"):
        list(calibration_data(str(p), inputs=[((1, 4), "float32", "x")]))


def test_uint8_image_arrays_are_preprocessed_like_a_folder(tmp_path):
    from converters import convert

    src = _dynamic_onnx(tmp_path / "s.onnx", (1, 3, 8, 8))
    pics = _pictures()
    folder = tmp_path / "imgs"
    folder.mkdir()
    for i, a in enumerate(pics):
        Image.fromarray(a).save(folder / f"{i}.png")
    np.save(tmp_path / "pics.npy", pics)
    a = convert(str(src), calibration=str(folder)).report["manifest"]["io"]["inputs"][0]
    b = convert(str(src), calibration=str(tmp_path / "pics.npy")).report["manifest"]["io"]["inputs"][0]
    assert a["scale"] == b["scale"] and a["zero_point"] == b["zero_point"]
    assert a["scale"] < 0.01  # 0..1 pixels, not 0..255 values


# ------------------------------------------------------------------------------------------ Ctrl-C in edge flash
def _qemus_running(build_dir: Path) -> set[int]:
    pids = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if b"qemu-system-arm" in cmd and str(build_dir).encode() in cmd and state != "Z":
            pids.add(int(proc.name))
    return pids


@pytest.mark.slow
def test_ctrl_c_during_flash_leaves_no_qemu(tmp_path):
    import shutil

    if not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")):
        pytest.skip("needs qemu-system-arm and arm-none-eabi-gcc (apt-get install qemu-system-arm gcc-arm-none-eabi "
                    "libnewlib-arm-none-eabi)")
    from tests.test_flash import _tiny_model

    model = _tiny_model(tmp_path)
    build = tmp_path / "build"
    env = dict(os.environ, EDGE_STATE_DIR=str(tmp_path / "state"))
    argv = [sys.executable, "-m", "edge_sdk.cli", "flash", str(model), "--target", "qemu-mps2-an386", "--build-dir",
            str(build)]
    # the moments: a stage line of `edge flash` on stderr, then a delay; most fall where QEMU starts and the
    # board is checked (after the build), whatever the machine's speed
    moments = [("==> generating", 0.0), ("==> building", 0.0)] + [("build: done", d)
                                                                  for d in (0.0, 0.03, 0.08, 0.15, 0.25, 0.4, 0.6)]
    try:
        full = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)  # builds the firmware
        assert full.returncode == 0, full.stderr
        assert len(_qemus_running(build)) == 1
        assert edge("board", "stop", "--all", env=env, timeout=60).returncode == 0
        assert not _qemus_running(build)
        interrupted = 0
        for k, (stage, delay) in enumerate(moments):
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            err = ""
            while not err.endswith("\n") or not err.splitlines()[-1].startswith(stage):
                line = proc.stderr.readline()
                assert line, err  # the stage came
                err += line
            time.sleep(delay)
            proc.send_signal(signal.SIGINT if k % 2 else signal.SIGTERM)  # Ctrl-C, or a service manager's stop
            err += proc.stderr.read()
            out = proc.stdout.read()
            proc.wait(timeout=120)
            assert "Traceback" not in err, err
            survivors = _qemus_running(build)
            listed = {b["pid"] for b in json.loads(edge("board", "list", "--json", env=env, timeout=60).stdout)}
            assert survivors <= listed, (k, survivors, listed, err)  # whatever survived, `edge board` knows
            if "started QEMU" in out:  # the signal came after flash had finished: its board stays, listed
                assert len(survivors) == 1, (k, proc.returncode, err)
            else:  # interrupted before flash finished: nothing may survive
                interrupted += 1
                # 130, or death by the signal itself after "interrupted" (seen once in a CI run: a second
                # KeyboardInterrupt at exit); the shell reports both as 128 + signal. What matters: no QEMU left.
                assert proc.returncode in ((130, -signal.SIGINT) if k % 2 else (143, -signal.SIGTERM)), (
                    k, proc.returncode, err)
                assert "interrupted" in err, err
                assert not survivors, (k, out, err)
            assert edge("board", "stop", "--all", env=env, timeout=60).returncode == 0
            assert not _qemus_running(build)
        assert interrupted >= 5, interrupted
    finally:
        for pid in _qemus_running(build):
            os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------------------------------------ plots
def test_reliability_plot_names_the_model_and_counts(tmp_path):
    from converters import evaluate as ev
    from converters.report import reliability_diagram

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), 200).astype(np.float32)
    y = rng.integers(0, 3, 200)
    bins = ev.reliability_bins(probs, y)
    path = tmp_path / "rel.png"
    reliability_diagram(bins, path, title="top-1 40%", model="net_int8.tflite")
    with Image.open(path) as img:
        text = dict(img.text)
        pixels = np.asarray(img.convert("RGB"))
    assert "net_int8.tflite" in text["Title"] and "200 samples" in text["Title"]
    assert "confidence" in text["x_label"] and "0..1" in text["x_label"]
    assert "accuracy" in text["y_label"] and "0..1" in text["y_label"]
    assert [int(c) for c in text["bin_counts"].split(",")] == [b["count"] for b in bins]
    assert sum(b["count"] for b in bins) == 200
    # the heading, the legend and the y label each have their own row above the plot (no ink shared between them)
    ink = (pixels < 128).all(axis=2)
    assert ink[4:16].any() and ink[18:30].any() and ink[34:46].any()
    assert not ink[16:18].any() and not ink[30:34].any()


def test_op_plot_axis_has_its_unit(tmp_path):
    from edge_sdk.tools.op_report import OpProfile, OpTiming, write_plot

    prof = OpProfile(ops=[OpTiming(0, "CONV_2D", [120.0, 110.0], macs=100, output_shape=[1, 8]),
                          OpTiming(1, "SOFTMAX", [10.0, 12.0], output_shape=[1, 8])],
                     unit="ticks", run_totals=[130.0, 122.0], us_per_unit=None, model="dir/kws.tflite", where="qemu")
    path = tmp_path / "ops.png"
    write_plot(prof, path)
    with Image.open(path) as img:
        text = dict(img.text)
    assert "kws.tflite" in text["Title"] and "qemu" in text["Title"]
    assert "(ticks, emulated)" in text["x_label"]


def test_missing_files_are_named_before_the_model_is_run(tmp_path):
    model = fc_model(tmp_path / "m.tflite")
    one_line_error(edge("run", model, tmp_path / "missing.png"), 6, "missing.png")
    one_line_error(edge("serve", model, "--labels", tmp_path / "nope.txt", "--port", "0", timeout=60), 6, "nope.txt")


# ------------------------------------------------------------------------------------------ make's quiet install
FAKE_PYTHON = """#!/bin/sh
# stands in for python3 and the venv's python: `-m venv DIR` makes DIR/bin/python (this script);
# `-m pip ...` prints pip-like noise and fails when FAKE_PIP_FAIL is set
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; exit 0; fi
i=0; while [ $i -lt 60 ]; do echo "Collecting something-$i"; i=$((i+1)); done
if [ -n "$FAKE_PIP_FAIL" ]; then echo "ERROR: No matching distribution found for nothing-here" >&2; exit 1; fi
exit 0
"""


@pytest.mark.parametrize("fail", [False, True])
def test_make_install_is_quiet_and_shows_the_log_on_failure(tmp_path, fail):
    import shutil

    if not shutil.which("make"):
        pytest.skip("needs make")
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    venv = tmp_path / "venv"
    env = dict(os.environ, **({"FAKE_PIP_FAIL": "1"} if fail else {}))
    p = subprocess.run(["make", "-s", "-C", str(ROOT), f"VENV={venv}", f"PYTHON={fake}", f"{venv}/.installed"],
                       capture_output=True, text=True, env=env, timeout=60)
    out = p.stdout + p.stderr
    log_text = (venv / "install.log").read_text()
    assert log_text.count("Collecting something-") == 120 if not fail else "No matching distribution" in log_text
    if not fail:
        assert p.returncode == 0 and (venv / ".installed").exists(), out
        assert "Collecting" not in out and len(out.splitlines()) == 1, out  # one "==> installing" line
    else:
        assert p.returncode != 0 and not (venv / ".installed").exists()
        assert "No matching distribution found for nothing-here" in out and "install.log" in out, out


def test_the_first_c_runtime_build_says_so(tmp_path, monkeypatch, caplog):
    """Issue 27 point 6: a fresh clone's first `edge run` sat silent for minutes while `make host` compiled the C
    runtime; now a stage line says what is built, a progress bar advances on each compile make echoes (a line of
    the bar's when the log is not a terminal), one line when it is done, and a later, up-to-date call says
    nothing. make runs a Makefile of this test's that echoes three compiler lines (a real build is the suite's)."""
    import logging

    from edge_sdk.runtime import c_build

    tree = tmp_path / "firmware_c"
    (tree / "src" / "kernels").mkdir(parents=True)
    for name in ("edge.c", "kernels/add.c", "kernels/conv.c"):
        (tree / "src" / name).write_text("/* a source */\n")
    library = tree / "build" / "host" / "libedge.so"
    (tree / "Makefile").write_text(
        "host:\n" + "".join(f"\t@echo cc -O2 -c src/{n} -o x.o\n" for n in ("edge.c", "kernels/add.c", "kernels/conv.c"))
        + f"\tmkdir -p {library.parent} && echo so > {library} && echo exe > {library.parent / 'edge-run-c'}\n")
    monkeypatch.setattr(c_build, "HOST_TREE", tree)
    monkeypatch.setattr(c_build, "FIRMWARE", tree)
    monkeypatch.setattr(c_build, "LIBRARY", library)
    monkeypatch.setattr(c_build, "RUNNER", library.parent / "edge-run-c")
    monkeypatch.setattr(c_build, "build_pyfast", lambda: None)
    caplog.set_level(logging.DEBUG)
    c_build.build()
    stages = [r.getMessage() for r in caplog.records if "C runtime" in r.getMessage()]
    assert any("building the C runtime for this machine" in m for m in stages), stages
    assert "building the C runtime: done (3/3)" in stages, stages  # every echoed compile counted
    assert any("C runtime built" in m for m in stages), stages
    caplog.clear()
    os.utime(library, (time.time() + 5, time.time() + 5))
    os.utime(library.parent / "edge-run-c", (time.time() + 5, time.time() + 5))
    c_build.build()  # up to date: silent
    assert not [r for r in caplog.records if "C runtime" in r.getMessage()]
    os.utime(tree / "src" / "edge.c", (time.time() + 10, time.time() + 10))  # a source changed since
    assert c_build._library_stale()
