"""Quantized ONNX in -> int8 with the source's own scales (issue 24 point 6, the quantizer's side): each QDQ pair's
range, recorded by the importer on the float tensor (an empty scale and min / max), is the activation's range, so
the int8 model's scales and zero points are the source's, and a graph whose every activation has one converts
without calibration data."""

from __future__ import annotations

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

from converters import convert  # noqa: E402
from edge_sdk import Interpreter  # noqa: E402
from edge_sdk.cli import main  # noqa: E402
from edge_sdk.errors import ConversionError, UsageError  # noqa: E402

RNG = np.random.default_rng(24)
W1 = (RNG.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
B1 = (RNG.standard_normal(8) * 0.1).astype(np.float32)
W2 = (RNG.standard_normal((512, 10)) * 0.05).astype(np.float32)
SAMPLES = [RNG.uniform(-1.0, 1.5, (1, 3, 8, 8)).astype(np.float32) for _ in range(24)]


def _float_nodes(x, w1, w2):
    """Conv(3->8, 3x3) -> Relu -> Reshape(1, 512) -> MatMul(512x10): the activations x, c1, r1, flat, mm."""
    return [h.make_node("Conv", [x, w1, "b1"], ["c1"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c1"], ["r1"]),
            h.make_node("Reshape", ["r1", "shape"], ["flat"]), h.make_node("MatMul", ["flat", w2], ["mm"])]


def _graph(nodes, inits):
    g = h.make_graph(nodes, "qdq", [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])],
                     [h.make_tensor_value_info("y", TP.FLOAT, [1, 10])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)], ir_version=8)


def _ort(proto, x):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})


def _observed():
    """Each activation's extremes over SAMPLES in the float model (what quantize_static would calibrate)."""
    inits = [nh.from_array(W1, "w1"), nh.from_array(B1, "b1"), nh.from_array(W2, "w2"),
             nh.from_array(np.array([1, 512], np.int64), "shape")]
    names = ["c1", "r1", "flat", "mm"]
    nodes = _float_nodes("x", "w1", "w2") + [h.make_node("Identity", ["mm"], ["y"])]
    proto = _graph(nodes, inits)
    proto.graph.output.extend(h.make_tensor_value_info(n, TP.FLOAT, None) for n in names)
    runs = [_ort(proto, x)[1:] for x in SAMPLES]
    ranges = {n: (min(0.0, min(float(r[k].min()) for r in runs)), max(0.0, max(float(r[k].max()) for r in runs)))
              for k, n in enumerate(names)}
    ranges["x"] = (min(0.0, min(float(x.min()) for x in SAMPLES)), max(float(x.max()) for x in SAMPLES))
    return ranges


def qdq_model(dtype=np.int8):
    """The graph above with a QuantizeLinear -> DequantizeLinear pair (per tensor, ``dtype``) on every activation
    but the Conv's (its Relu follows) and per-channel symmetric int8 weights behind a DequantizeLinear: a QDQ graph
    as quantize_static writes one.
    Returns the model and each activation's (scale, zero point)."""
    qmin, qmax = (-128, 127) if dtype == np.int8 else (0, 255)
    params = {}
    for name, (lo, hi) in _observed().items():
        scale = np.float32((hi - lo) / (qmax - qmin))
        params[name] = (float(scale), int(np.clip(np.round(qmin - lo / scale), qmin, qmax)))
    nodes, inits = [], [nh.from_array(B1, "b1"), nh.from_array(np.array([1, 512], np.int64), "shape")]

    def pair(name):
        scale, zp = params[name]
        inits.extend([nh.from_array(np.array(scale, np.float32), f"{name}_s"),
                      nh.from_array(np.array(zp, dtype), f"{name}_z")])
        nodes.extend([h.make_node("QuantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_q"]),
                      h.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_dq"])])
        return f"{name}_dq"

    def weights(name, w, axis):
        s = (np.abs(np.moveaxis(w, axis, 0)).reshape(w.shape[axis], -1).max(1) / 127).astype(np.float32)
        shape = [1] * w.ndim
        shape[axis] = -1
        q = np.clip(np.round(w / s.reshape(shape)), -127, 127).astype(np.int8)
        inits.extend([nh.from_array(q, f"{name}_q"), nh.from_array(s, f"{name}_s"),
                      nh.from_array(np.zeros(s.size, np.int8), f"{name}_z")])
        nodes.append(h.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_dq"],
                                 axis=axis))
        return f"{name}_dq"

    x = pair("x")
    conv, relu, reshape, matmul = _float_nodes(x, weights("w1", W1, 0), weights("w2", W2, 1))
    nodes.extend([conv, relu])  # no pair between Conv and Relu: quantize_static fuses them (one int8 op)
    reshape.input[0] = pair("r1")
    nodes.append(reshape)
    matmul.input[0] = pair("flat")
    nodes.append(matmul)
    nodes.append(h.make_node("Identity", [pair("mm")], ["y"]))
    return _graph(nodes, inits), params


def _run_int8(tflite, x):
    it = Interpreter(model_content=tflite)
    it.allocate_tensors()
    (ind,), (outd,) = it.get_input_details(), it.get_output_details()
    scale, zp = ind["quantization"]
    it.set_tensor(ind["index"], np.clip(np.round(x / scale) + zp, -128, 127).astype(np.int8))
    it.invoke()
    return it.get_tensor(outd["index"]), outd["quantization"]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_qdq_graph_converts_to_int8_with_its_own_scales_without_calibration(dtype):
    proto, params = qdq_model(dtype)
    shift = 0 if dtype == np.int8 else -128  # a uint8 source's zero point minus 128
    result = convert(proto, quantize="int8")  # no calibration data
    sg = result.model.subgraphs[0]
    (t_in,), (t_out,) = [sg.tensors[t] for t in sg.inputs], [sg.tensors[t] for t in sg.outputs]
    for tensor, name in ((t_in, "x"), (t_out, "mm")):
        assert tensor.type == "INT8"
        assert float(tensor.quantization.scale[0]) == pytest.approx(params[name][0], rel=0, abs=0)
        assert int(tensor.quantization.zero_point[0]) == params[name][1] + shift
    # the activations between (the conv's fused Relu output, the reshape) keep the source's parameters too
    by_name = {t.name: t for t in sg.tensors}
    flat = by_name["flat"].quantization
    assert (float(flat.scale[0]), int(flat.zero_point[0])) == (params["flat"][0], params["flat"][1] + shift)
    # no float tensor of the result keeps a range-only quantization
    assert not [t.name for t in sg.tensors if t.type == "FLOAT32" and t.quantization is not None]
    # within one output quantum of onnxruntime's QDQ run
    out_scale = params["mm"][0]
    for x in SAMPLES[:8]:
        (want,) = _ort(proto, x)
        got, (scale, zp) = _run_int8(result.tflite, x)
        assert np.abs((got.astype(np.float64) - zp) * scale - want).max() <= out_scale * 1.0001
    report = result.report
    assert report["calibration"]["method"] == "given"
    assert "no calibration data needed" in " ".join(report["quantization"]["report"]["notes"])
    assert report["guard"]["synthetic"] and report["guard"]["met"]
    given = {r["name"]: r["given"] for r in report["quantization"]["report"]["tensors"]}
    assert given["x"] and given["flat"]


def test_qdq_ranges_win_over_calibration_and_the_rest_is_calibrated():
    """With calibration data, the given ranges are kept (not the observed ones)."""
    proto, params = qdq_model()
    near = [x * 0.5 for x in SAMPLES]  # observed ranges about half the given ones
    result = convert(proto, quantize="int8", calibration=np.concatenate(near))
    sg = result.model.subgraphs[0]
    q = sg.tensors[sg.outputs[0]].quantization
    assert (float(q.scale[0]), int(q.zero_point[0])) == params["mm"]
    table = {r["name"]: r for r in result.report["quantization"]["report"]["tensors"]}
    assert table["x"]["given"] and table["x"]["range"] != table["x"]["observed"]


def test_a_float_onnx_model_without_calibration_is_refused_naming_what_is_missing(tmp_path, capsys):
    proto, _ = qdq_model()
    float_proto = _graph(_float_nodes("x", "w1", "w2") + [h.make_node("Identity", ["mm"], ["y"])],
                         [nh.from_array(W1, "w1"), nh.from_array(B1, "b1"), nh.from_array(W2, "w2"),
                          nh.from_array(np.array([1, 512], np.int64), "shape")])
    with pytest.raises(UsageError, match="needs calibration data: give --calib .*not a QDQ graph.*fp16 / none"):
        convert(float_proto, quantize="int8")  # a missing setting (exit 2), not the graph's internals
    src = tmp_path / "float.onnx"
    onnx.save(float_proto, src)
    assert main(["convert", str(src), "-o", str(tmp_path / "f.tflite")]) == 2
    err = capsys.readouterr().err
    assert "--calib" in err and "has no range" not in err and not (tmp_path / "f.tflite").exists()
    # a QDQ graph with one pair missing: calibration is needed for that activation, and the error names it
    partial = onnx.ModelProto()
    partial.CopyFrom(proto)
    kept = [n for n in partial.graph.node if n.output[0] not in ("mm_q", "mm_dq")]  # the MatMul's pair dropped
    kept[-1].input[0] = "mm"  # y = Identity(mm): the MatMul's output has no range
    del partial.graph.node[:]
    partial.graph.node.extend(kept)
    with pytest.raises(ConversionError, match=r"give the range of \d+ activation\(s\) but not of 1") as err:
        convert(partial, quantize="int8")
    assert err.value.problems[1:] == ["activation 'y' has no range"]
    # the Reshape after the Relu's pair needs none of its own: it keeps its input's quantization
    convert(proto, quantize="int8")
    # the CLI: exit 3, one line, nothing written
    src = tmp_path / "partial.onnx"
    onnx.save(partial, src)
    assert main(["convert", str(src), "-o", str(tmp_path / "o.tflite")]) == 3
    assert "needs calibration data" in capsys.readouterr().err
    assert not (tmp_path / "o.tflite").exists()


def test_cli_converts_a_qdq_graph_without_calib_and_says_so(tmp_path, capsys):
    proto, params = qdq_model()
    src, out = tmp_path / "q.onnx", tmp_path / "q.tflite"
    onnx.save(proto, src)
    assert main(["convert", str(src), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "no calibration data needed" in text and "synthetic sample(s)" in text
    assert main(["convert", str(src), "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["calibration"]["source"].startswith("none: every activation range is the source's own")
    assert report["manifest"]["io"]["outputs"][0]["scale"] == params["mm"][0]
    assert report["manifest"]["calibration"]["method"] == "given"
