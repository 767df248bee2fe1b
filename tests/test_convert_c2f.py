"""No transpose soup: a YOLOv8-style network (C2f blocks: Split + bottlenecks with residual Add + Concat, an
SPPF block, nearest upsampling + Concat with an earlier feature) converts with TRANSPOSE only at the model's
NCHW input and output; the layout pass moves transposes through SPLIT_V, CONCATENATION, the residual ADDs,
PAD and the activations. The convert summary prints the count."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters import convert
from converters.report import format_conversion
from edge_sdk.model import read_model
from tests.test_quantize import run_ours


def c2f_net(seed=0, size=32):
    """YOLOv8-style: Conv-SiLU stem, C2f (Split + bottlenecks with residual Add + Concat), SPPF
    (MaxPool x3 + Concat), Upsample + Concat with an earlier feature, a head Conv."""
    r = np.random.default_rng(seed)
    inits, nodes = {}, []
    k = [0]
    def name(t):
        k[0] += 1
        return f"{t}{k[0]}"
    def conv(x, cin, cout, ks=1, stride=1):
        w, b, y = name("w"), name("b"), name("conv")
        inits[w] = (r.standard_normal((cout, cin, ks, ks)) / np.sqrt(cin * ks * ks)).astype(np.float32)
        inits[b] = (0.1 * r.standard_normal(cout)).astype(np.float32)
        nodes.append(helper.make_node("Conv", [x, w, b], [y], kernel_shape=[ks, ks], strides=[stride, stride],
                                      pads=[ks // 2] * 4))
        s, o = name("sig"), name("silu")
        nodes.append(helper.make_node("Sigmoid", [y], [s]))
        nodes.append(helper.make_node("Mul", [y, s], [o]))
        return o
    def c2f(x, c, n=2):
        y = conv(x, c, c)
        a, b = name("split_a"), name("split_b")
        sp = name("split")
        inits[sp] = np.array([c // 2, c // 2], np.int64)
        nodes.append(helper.make_node("Split", [y, sp], [a, b], axis=1))
        parts, cur = [a, b], b
        for _ in range(n):
            h = conv(conv(cur, c // 2, c // 2, 3), c // 2, c // 2, 3)
            s = name("res")
            nodes.append(helper.make_node("Add", [cur, h], [s]))
            parts.append(s)
            cur = s
        cat = name("cat")
        nodes.append(helper.make_node("Concat", parts, [cat], axis=1))
        return conv(cat, c // 2 * len(parts), c)
    def sppf(x, c):
        y = conv(x, c, c // 2)
        p1, p2, p3 = name("mp"), name("mp"), name("mp")
        for src, dst in ((y, p1), (p1, p2), (p2, p3)):
            nodes.append(helper.make_node("MaxPool", [src], [dst], kernel_shape=[5, 5], pads=[2, 2, 2, 2]))
        cat = name("cat")
        nodes.append(helper.make_node("Concat", [y, p1, p2, p3], [cat], axis=1))
        return conv(cat, c * 2, c)
    x = conv("images", 3, 16, 3, 2)          # 16 x 16
    f1 = c2f(x, 16)
    x = conv(f1, 16, 32, 3, 2)                # 8 x 8
    x = c2f(x, 32)
    x = sppf(x, 32)
    up = name("up")
    inits["scales"] = np.array([1, 1, 2, 2], np.float32)
    nodes.append(helper.make_node("Resize", [x, "", "scales"], [up], mode="nearest"))
    cat = name("cat")
    nodes.append(helper.make_node("Concat", [up, f1], [cat], axis=1))
    x = c2f(conv(cat, 48, 16), 16)
    nodes.append(helper.make_node("Conv", [x, "hw", "hb"], ["out"], kernel_shape=[1, 1]))
    inits["hw"] = (r.standard_normal((8, 16, 1, 1)) / 4).astype(np.float32)
    inits["hb"] = np.zeros(8, np.float32)
    graph = helper.make_graph(nodes, "c2f", [helper.make_tensor_value_info("images", TP.FLOAT, [1, 3, size, size])],
                              [helper.make_tensor_value_info("out", TP.FLOAT, [1, 8, size // 2, size // 2])],
                              [numpy_helper.from_array(v, k_) for k_, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _transposes(tflite):
    """(op index, reads a tensor computed from the model input only through shape-free ops?, writes a model
    output?) for every TRANSPOSE."""
    m = read_model(tflite)
    sg = m.subgraphs[0]
    prod = {t: i for i, op in enumerate(sg.operators) for t in op.outputs}
    found = []
    for i, op in enumerate(sg.operators):
        if m.op_name(op) != "TRANSPOSE":
            continue
        t, near_input = op.inputs[0], False
        while True:
            if t in sg.inputs:
                near_input = True
                break
            j = prod.get(t)
            if j is None or m.op_name(sg.operators[j]) not in ("PAD", "PADV2", "QUANTIZE"):
                break
            t = sg.operators[j].inputs[0]
        found.append((i, near_input, op.outputs[0] in sg.outputs))
    return found


def test_c2f_network_has_transposes_only_at_io():
    import onnxruntime as ort

    model = c2f_net()
    res = convert(model, quantize="none")
    ops = res.report["output"]["ops"]
    assert ops["SPLIT_V"] == 3 and ops["CONCATENATION"] == 5 and ops["ADD"] == 6
    found = _transposes(res.tflite)
    assert len(found) == ops["TRANSPOSE"] == 2, found
    assert [(near_in, is_out) for _, near_in, is_out in found] == [(True, False), (False, True)]
    assert "transposes 2" in format_conversion(res.report)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"images": x})[0]
    got = run_ours(res.tflite, [x])[0]
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()


def test_c2f_int8_adds_no_transposes():
    model = c2f_net()
    calib = np.random.default_rng(1).standard_normal((10, 1, 3, 32, 32)).astype(np.float32)
    res = convert(model, calibration=calib[:, 0], precision="int8", allow_lossy=True)
    assert res.report["output"]["ops"]["TRANSPOSE"] == 2
    assert len(_transposes(res.tflite)) == 2


def test_c2f_network_with_nhwc_io_has_no_transpose():
    """Channels-last I/O: the input's boundary transpose is hoisted above the stem's PAD and removed."""
    import onnxruntime as ort

    model = c2f_net()
    res = convert(model, quantize="none", nhwc_io=True)
    assert "TRANSPOSE" not in res.report["output"]["ops"]
    assert "transposes 0" in format_conversion(res.report)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"images": x})[0]
    got = run_ours(res.tflite, [x.transpose(0, 2, 3, 1)])[0].transpose(0, 3, 1, 2)
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()
