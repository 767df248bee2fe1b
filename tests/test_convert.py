"""End to end: the digits CNN (examples/digits, trained on scikit-learn's 8x8 digits) from ONNX to an int8
package with convert(); accuracy and calibration against the float model; bit-exact in ours, LiteRT's
reference kernels and TFLM; the manifest (round trip, ignored by the peers, shown by edge inspect); the
device-profile check before writing; `edge convert` exit codes and --json."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.cli import main
from edge_sdk.errors import ConversionError, ModelError, UsageError
from edge_sdk.model import read_model, write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.manifest import MANIFEST_NAME, read_manifest, write_manifest

ROOT = Path(__file__).resolve().parent.parent
DIGITS = ROOT / "examples" / "digits"
ONNX_PATH = DIGITS / "digits_cnn.onnx"
LABELS = DIGITS / "labels.txt"
CALIB_SAMPLES = 200


def _train_module():
    spec = importlib.util.spec_from_file_location("digits_train", DIGITS / "train.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The held-out split as an eval .npz, calibration samples from the training split, and the conversion."""
    from converters import convert

    train = _train_module()
    x_train, _, x_test, y_test = train.load_split()
    d = tmp_path_factory.mktemp("digits")
    np.savez(d / "test.npz", x=x_test, y=y_test)
    np.save(d / "calib.npy", x_train[:CALIB_SAMPLES])
    result = convert(str(ONNX_PATH), quantize="int8", calibration=str(d / "calib.npy"), labels=str(LABELS),
                     preprocess=train.PREPROCESS, eval_data=str(d / "test.npz"))
    return {"dir": d, "result": result, "x_test": x_test, "y_test": y_test, "train": train}


# ------------------------------------------------------------------------------------------ manifest


def _tiny_int8_model():
    g = GraphBuilder()
    x = g.input("x", (1, 4), "INT8", scale=0.05, zero_point=-3)
    w = g.constant("w", np.array([[3, -7, 11, 2], [-5, 8, 1, -9]], np.int8), scale=[0.02, 0.03], zero_point=[0, 0])
    b = g.constant("b", np.array([40, -25], np.int32), scale=[0.001, 0.0015], zero_point=[0, 0])
    y = g.tensor("y", (1, 2), "INT8", scale=0.04, zero_point=5)
    g.op("FULLY_CONNECTED", [x, w, b], [y])
    g.output(y)
    return g.build()


def test_manifest_round_trip_and_replace():
    model = _tiny_int8_model()
    assert read_manifest(model) is None
    doc = {"labels": ["a", "b"], "preprocess": {"size": [8, 8], "mean": np.array([0.5])}, "target": "host-linux",
           "source": {"sha256": "ab" * 32}}
    write_manifest(model, doc)
    back = read_manifest(write_model(model))
    assert back["labels"] == ["a", "b"] and back["preprocess"]["mean"] == [0.5] and back["format"] == 1
    write_manifest(model, {"labels": ["c"]})  # replaces, never duplicates
    data = write_model(model)
    assert [m.name for m in read_model(data).metadata].count(MANIFEST_NAME) == 1
    assert read_manifest(data)["labels"] == ["c"]


def test_manifest_not_json_is_model_error():
    from edge_sdk.model.types import Buffer, Metadata

    model = _tiny_int8_model()
    model.buffers.append(Buffer(b"\xff not json"))
    model.metadata.append(Metadata(MANIFEST_NAME, len(model.buffers) - 1))
    with pytest.raises(ModelError, match="edge_sdk.manifest"):
        read_manifest(write_model(model))


def test_peers_ignore_the_manifest():
    from tests.oprunner import run_ours
    from tests.peers import run_litert, run_tflm

    plain = write_model(_tiny_int8_model())
    model = _tiny_int8_model()
    write_manifest(model, {"labels": [str(i) for i in range(1000)], "accuracy": {"model": {"top1": 0.5}}})
    packaged = write_model(model)
    assert len(packaged) > len(plain) + 3000
    x = [np.array([[10, -20, 30, -128]], np.int8)]
    expected = run_tflm(plain, x)[0]
    for out in (run_tflm(packaged, x)[0], run_litert(packaged, x)[0], run_ours(packaged, x)[0]):
        np.testing.assert_array_equal(out, expected)


def test_inspect_shows_manifest(tmp_path, capsys):
    model = _tiny_int8_model()
    write_manifest(model, {"labels": ["cat", "dog"], "quantization": {"mode": "int8", "method": "minmax"},
                           "converter": {"name": "edge-sdk", "version": "0.1.0"},
                           "source": {"path": "net.onnx", "sha256": "f" * 64}})
    path = tmp_path / "m.tflite"
    write_model(model, path)
    assert main(["inspect", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["manifest"]["labels"] == ["cat", "dog"]
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "manifest" in out and "labels: 2 (cat, dog)" in out and "int8" in out


# ------------------------------------------------------------------------------------------ digits


def test_digits_int8_accuracy_within_one_point(digits):
    acc = digits["result"].report["accuracy"]
    model, ref = acc["model"], acc["reference"]
    assert model["samples"] == ref["samples"] == len(digits["y_test"])
    assert ref["top1"] > 0.95  # the float model learned the task
    assert ref["top1"] - model["top1"] <= 0.01, (model["top1"], ref["top1"])
    for m in (model, ref):
        assert 0.0 <= m["ece"] < 0.2 and m["nll"] > 0
        assert len(m["bins"]) == 15
    assert acc["agreement"] >= 0.97
    assert acc["ece_change"] == pytest.approx(model["ece"] - ref["ece"])


def test_digits_float_reference_matches_onnxruntime(digits):
    """The float model the accuracy is compared against is the ONNX model (same top-1 as onnxruntime)."""
    from converters.evaluate import predict

    x, y = digits["x_test"], digits["y_test"]
    ort_top1 = float((predict(str(ONNX_PATH), x).argmax(1) == y).mean())
    assert digits["result"].report["accuracy"]["reference"]["top1"] == pytest.approx(ort_top1)


def test_digits_int8_bit_exact_in_ours_and_tflm_litert_within_one(digits):
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType
    from tflite_micro.python.tflite_micro import runtime

    from edge_sdk import Interpreter

    data = digits["result"].tflite
    model = read_model(data)
    sg = model.subgraphs[0]
    types = [sg.tensors[t].type for t in sg.inputs + sg.outputs]
    assert types == ["INT8", "INT8"]
    assert {model.op_name(op) for op in sg.operators} <= {"CONV_2D", "MAX_POOL_2D", "FULLY_CONNECTED", "RESHAPE",
                                                           "TRANSPOSE", "QUANTIZE", "DEQUANTIZE"}
    q = sg.tensors[sg.inputs[0]].quantization
    shape = sg.tensors[sg.inputs[0]].shape
    xs = np.clip(np.round(digits["x_test"][:60] / q.scale[0]) + q.zero_point[0], -128, 127).astype(np.int8)
    ours = Interpreter(model_content=data)
    ours.allocate_tensors()
    lite = LiteRT(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF, num_threads=1)
    lite.allocate_tensors()
    tflm = runtime.Interpreter.from_bytes(data, arena_size=1 << 20)
    i_in, i_out = ours.get_input_details()[0]["index"], ours.get_output_details()[0]["index"]
    l_in, l_out = lite.get_input_details()[0]["index"], lite.get_output_details()[0]["index"]
    lite_diffs = []
    for x in xs:
        x = x.reshape(shape)
        ours.set_tensor(i_in, x)
        ours.invoke()
        lite.set_tensor(l_in, x)
        lite.invoke()
        tflm.set_input(x, 0)
        tflm.invoke()
        a, b, c = ours.get_tensor(i_out), lite.get_tensor(l_out), tflm.get_output(0)
        np.testing.assert_array_equal(a, c)  # TFLM is the int8 reference: bit-exact
        lite_diffs.append(np.abs(b.astype(np.int32) - c))
    # LiteRT's reference kernels round some int8 results differently from TFLM (../shared/NOTES.md: up to
    # +-1 on FULLY_CONNECTED models such as hello_world); hold them to that.
    lite_diffs = np.concatenate(lite_diffs)
    assert lite_diffs.max() <= 1 and np.mean(lite_diffs > 0) < 0.05


def test_digits_manifest(digits):
    import hashlib

    result = digits["result"]
    man = read_manifest(result.tflite)
    assert man == json.loads(json.dumps(result.report["manifest"]))  # what the report says is what is embedded
    assert man["source"]["sha256"] == hashlib.sha256(ONNX_PATH.read_bytes()).hexdigest()
    assert man["source"]["format"] == "onnx"
    assert man["labels"] == [str(i) for i in range(10)]
    assert man["preprocess"]["size"] == [8, 8] and man["preprocess"]["layout"] == "NCHW"
    assert man["quantization"] == {"mode": "int8", "method": "minmax", "io": "int8", "exclude": [],
                                   "precision": "auto", "widened": []}
    # every 5th sample (at most 32) held back to measure the result: the guard's samples
    assert man["calibration"]["samples"] == CALIB_SAMPLES - 32 and man["calibration"]["held_back"] == 32
    assert man["converter"]["name"] == "edge-sdk"
    assert man["accuracy"]["model"]["top1"] == result.report["accuracy"]["model"]["top1"]
    assert "bins" not in man["accuracy"]["model"]


def test_evaluate_reads_the_manifest_and_images(digits, tmp_path):
    """A folder of class-named PNGs is pre-processed as the manifest says: same top-1 as the arrays."""
    from PIL import Image

    from converters.evaluate import evaluate

    path = tmp_path / "digits_int8.tflite"
    digits["result"].save(path)
    x, y = digits["x_test"][:40], digits["y_test"][:40]
    for i, (img, label) in enumerate(zip(x, y)):
        (tmp_path / "imgs" / str(label)).mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.round(img[0] * 255).astype(np.uint8), "L").save(tmp_path / "imgs" / str(label) / f"{i}.png")
    from_images = evaluate(path, tmp_path / "imgs")
    from_arrays = evaluate(path, (x, y))
    assert from_images["labels"] == [str(i) for i in range(10)]
    assert from_images["model"]["top1"] == pytest.approx(from_arrays["model"]["top1"])


def test_save_is_atomic_and_equal(digits, tmp_path):
    path = tmp_path / "out.tflite"
    digits["result"].save(path)
    assert path.read_bytes() == digits["result"].tflite
    assert not [p for p in tmp_path.iterdir() if p.name != "out.tflite"]  # no temp file left behind


def test_bad_settings_list_every_problem():
    from converters import convert

    with pytest.raises(ConversionError) as err:
        convert(str(ONNX_PATH), quantize="int4", calib_method="kl2", io="uint8")
    assert len(err.value.problems) == 3


def test_int8_without_calibration_is_refused():
    from converters import convert

    with pytest.raises(UsageError, match="calibration data: give --calib"):
        convert(str(ONNX_PATH), quantize="int8")


# ------------------------------------------------------------------------------------------ CLI


def test_cli_convert_json(digits, tmp_path, capsys):
    d = digits["dir"]
    out = tmp_path / "digits.tflite"
    code = main(["convert", str(ONNX_PATH), "-o", str(out), "--calib", str(d / "calib.npy"), "--labels", str(LABELS),
                 "--eval", str(d / "test.npz"), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["written"] == str(out) and out.exists()
    assert report["output"]["ops"] and report["output"]["bytes"] == out.stat().st_size
    assert report["accuracy"]["reference"]["top1"] - report["accuracy"]["model"]["top1"] <= 0.01
    assert read_manifest(out)["labels"][3] == "3"


def test_cli_convert_text_fp16(tmp_path, capsys):
    out = tmp_path / "digits_fp16.tflite"
    assert main(["convert", str(ONNX_PATH), "-o", str(out), "--quantize", "fp16"]) == 0
    text = capsys.readouterr().out
    assert "fp16" in text and f"wrote {out}" in text
    model = read_model(out)
    assert any(t.type == "FLOAT16" for t in model.subgraphs[0].tensors)


def test_cli_convert_exit_codes(tmp_path, capsys):
    out = tmp_path / "x.tflite"
    assert main(["convert", str(ONNX_PATH), "-o", str(out)]) == 2  # int8 without --calib: a missing flag
    assert "--calib" in capsys.readouterr().err and not out.exists()
    assert main(["convert", str(tmp_path / "absent.onnx"), "-o", str(out), "--quantize", "none"]) == 6
    capsys.readouterr()
    assert main(["convert", str(ONNX_PATH), "-o", str(out), "--json"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["written"] is None and "--calib" in report["error"] and report["kind"] == "usage"
    assert not out.exists()


# ------------------------------------------------------------------------------------------ --target


def test_target_that_cannot_run_it_writes_nothing_and_lists_every_reason(tmp_path, capsys):
    """A float model on the RP2040 (its CPU profile takes no FLOAT32 CONV_2D / MAX_POOL_2D / FULLY_CONNECTED):
    the error lists all three, the file is not written, and the reasons are exactly the checker's errors."""
    from converters import convert
    from edge_sdk.targets.check import check_model

    out = tmp_path / "digits_float.tflite"
    assert main(["convert", str(ONNX_PATH), "-o", str(out), "--quantize", "none", "--target", "rp2040-pico",
                 "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert not out.exists() and report["written"] is None
    ops = sorted(p.split("(")[1].split(" ")[0] for p in report["problems"])
    assert ops == ["CONV_2D", "FULLY_CONNECTED", "MAX_POOL_2D"]
    float_model = convert(str(ONNX_PATH), quantize="none")
    errors = [p["message"] for p in check_model(float_model.tflite, "rp2040-pico").problems if p["severity"] == "error"]
    assert report["problems"] == errors
    # dynamic range (LiteRT's hybrid kernels): the C runtime runs them on Cortex-M too, TFLM does not, and says so
    assert main(["convert", str(ONNX_PATH), "-o", str(out), "--quantize", "dynamic", "--target", "stm32f746-disco"]) == 0
    text = capsys.readouterr().out
    assert out.exists() and "TFLM has no hybrid kernels" in text and "stm32f746-disco: runs" in text


def test_target_that_runs_it_is_recorded(digits, tmp_path):
    from converters import convert

    d = digits["dir"]
    result = convert(str(ONNX_PATH), target="stm32f746-disco", calibration=str(d / "calib.npy"))
    assert result.report["check"]["verdict"] == "runs" and result.report["check"]["reasons"] == []
    assert read_manifest(result.tflite)["target"] == "stm32f746-disco"


def _rgb_onnx():
    """Conv 3x3 (3 -> 4) -> Relu -> GlobalAveragePool -> Flatten -> Gemm (4 -> 5) on a (1, 3, 6, 6) input."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("w", (4, 3, 3, 3)), ("b", (4,)), ("fw", (5, 4)), ("fb", (5,)))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]), helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "rgb", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_nhwc_io():
    """nhwc_io: the input becomes channels-last, recorded in the manifest (and the preprocess layout); NCHW
    calibration/evaluation samples are transposed to fit; the int8 predictions equal the NCHW model's."""
    from converters import convert
    from converters.evaluate import predict

    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, (40, 3, 6, 6)).astype(np.float32)
    y = predict(_rgb_onnx(), x).argmax(1)
    nchw = convert(_rgb_onnx(), calibration=x[:30], eval_data=(x, y))
    nhwc = convert(_rgb_onnx(), calibration=x[:30], eval_data=(x, y), nhwc_io=True)
    man = read_manifest(nhwc.tflite)
    assert man["io"]["inputs"][0]["shape"] == [1, 6, 6, 3] and read_manifest(nchw.tflite)["io"]["inputs"][0]["shape"] == [1, 3, 6, 6]
    assert man["layout"] == "NHWC" and man["preprocess"]["layout"] == "NHWC" and man["nhwc_io"]["inputs"]
    assert nhwc.report["accuracy"]["model"]["top1"] == pytest.approx(nchw.report["accuracy"]["model"]["top1"])
    assert np.array_equal(predict(nhwc.tflite, x), predict(nchw.tflite, x))


def test_nhwc_io_single_channel(digits):
    from converters import convert

    result = convert(str(ONNX_PATH), quantize="none", nhwc_io=True)
    assert read_manifest(result.tflite)["io"]["inputs"][0]["shape"] == [1, 8, 8, 1]


def test_benchmark_network_size_and_smoke(capsys, tmp_path, monkeypatch):
    """benchmarks/convert.py builds a MobileNetV2-size network (3.4-3.6 M parameters) and runs end to end
    (here on a narrow, small-input copy with 4 calibration samples; its aims go to a temporary folder, not to the
    README's benchmarks/results)."""
    monkeypatch.setenv("EDGE_BENCH_RESULTS", str(tmp_path))
    spec = importlib.util.spec_from_file_location("bench_convert", ROOT / "benchmarks" / "convert.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    _, params = bench.mobilenet_v2()
    assert 3.4e6 <= params <= 3.6e6
    assert bench.main(["--samples", "4", "--size", "32", "--width", "0.35"]) == 0
    out = capsys.readouterr().out
    assert "time / goal" in out and "peak memory" in out
    assert (tmp_path / "convert.json").is_file()


@pytest.mark.parametrize("mode,method,io", [("int8", "percentile", "float32"), ("int8", "mse", "int8"),
                                            ("int16x8", "minmax", "int8")])
def test_other_modes_and_methods(digits, mode, method, io):
    from converters import convert

    d = digits["dir"]
    result = convert(str(ONNX_PATH), quantize=mode, calibration=str(d / "calib.npy"), calib_method=method, io=io,
                     eval_data=str(d / "test.npz"))
    acc = result.report["accuracy"]
    assert acc["accuracy_drop"] <= 0.01 and acc["agreement"] >= 0.97
    man = read_manifest(result.tflite)
    assert man["quantization"]["mode"] == mode and man["quantization"]["method"] == method
    sg = read_model(result.tflite).subgraphs[0]
    want = {"int8": "INT8", "float32": "FLOAT32"}[io] if mode == "int8" else "INT16"
    assert sg.tensors[sg.inputs[0]].type == want
    assert result.report["layers"] and result.report["layers"][0]["snr_db"] <= result.report["layers"][-1]["snr_db"]


def test_float_tflite_source(digits):
    """A float .tflite (here: the digits model converted without quantization) converts to int8 as the ONNX does."""
    from converters import convert

    d = digits["dir"]
    float_pkg = convert(str(ONNX_PATH), quantize="none")
    result = convert(float_pkg.tflite, calibration=str(d / "calib.npy"), eval_data=str(d / "test.npz"))
    assert result.report["source"]["format"] == "tflite"
    assert result.report["accuracy"]["accuracy_drop"] <= 0.01
    assert result.report["accuracy"]["model"]["top1"] == pytest.approx(
        digits["result"].report["accuracy"]["model"]["top1"], abs=0.01)


def test_fp16_weight_tflite_converts_to_int8():
    """A float16-weight float .tflite (the digits model stored the way MediaPipe publishes float models)
    converts to int8 like the float one: same accuracy, bit-exact in ours and TFLM, LiteRT within one step."""
    from converters import convert
    from tests.peers import run_litert, run_tflm
    from tests.test_quantize import assert_litert_equal, quantize_inputs, run_ours

    train = _train_module()
    x_train, _, x_test, y_test = train.load_split()
    fp16 = convert(str(ONNX_PATH), quantize="fp16")
    assert "DEQUANTIZE" in fp16.report["output"]["ops"]
    calib = x_train[:64]
    result = convert(fp16.tflite, calibration=calib)
    assert result.report["import"] == {"dequantized_constants": {"FLOAT16": fp16.report["output"]["ops"]["DEQUANTIZE"]}}
    direct = convert(str(ONNX_PATH), calibration=calib)
    q = read_model(result.tflite)
    agree = 0
    for x in x_test[:40]:
        xs = quantize_inputs(q, [x[None].astype(np.float32)])
        ours = run_ours(result.tflite, xs)[0]
        np.testing.assert_array_equal(ours, run_tflm(result.tflite, xs)[0].reshape(ours.shape))
        assert_litert_equal(ours, run_litert(result.tflite, xs)[0])
        ref = run_ours(direct.tflite, quantize_inputs(read_model(direct.tflite), [x[None].astype(np.float32)]))[0]
        agree += int(np.argmax(ours) == np.argmax(ref))
    assert agree >= 38


@pytest.mark.slow
def test_mediapipe_fp16_model_converts_to_int8():
    """palm_detection_lite (float16 weights behind 113 DEQUANTIZE) converts to int8 and runs bit-exactly in
    ours and TFLM."""
    from converters import convert
    from tests.conftest import shared_model
    from tests.peers import run_tflm
    from tests.test_quantize import quantize_inputs, run_ours

    path = shared_model("mediapipe/palm_detection_lite.tflite")
    r = np.random.default_rng(0)
    calib = r.uniform(-1, 1, (4, 192, 192, 3)).astype(np.float32)
    # random images are no palms: measure, but keep every op int8 and write it despite the guard
    result = convert(str(path), calibration=calib, precision="int8", allow_lossy=True)
    assert result.report["import"]["dequantized_constants"] == {"FLOAT16": 113}
    assert result.report["guard"]["outputs"] and not result.report["guard"]["widened"]
    q = read_model(result.tflite)
    assert "DEQUANTIZE" not in result.report["output"]["ops"]
    xs = quantize_inputs(q, [calib[:1]])
    ours = run_ours(result.tflite, xs)
    for o, t in zip(ours, run_tflm(result.tflite, xs, isolate=True)):
        np.testing.assert_array_equal(o, t.reshape(o.shape))
