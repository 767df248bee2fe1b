"""A transformer block (LayerNorm as ReduceMean / Sub / Pow / Sqrt / Div, single-head attention with
MatMul / Softmax, GELU in its Erf form, residual adds) built with onnx.helper, as PyTorch exports it:
converts at default settings (int8, precision auto) with no --exclude, its GELU as one GELU op, meets the
accuracy guard's threshold, and runs in ours as in LiteRT (TFLM has no GELU kernel; LiteRT's pip build
requantizes with one rounding, a step apart on near-ties, which compound over the block's ops)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters import convert
from edge_sdk.model import read_model
from tests.peers import run_litert
from tests.test_quantize import dequantize_outputs, quantize_inputs, run_ours

T, D, H = 16, 32, 64


def block(T=16, D=32, H=64, seed=0, heads=1):
    r = np.random.default_rng(seed)
    inits = {}
    def c(name, arr):
        inits[name] = np.asarray(arr, np.float32); return name
    nodes = []
    def n(op, ins, out, **kw):
        nodes.append(helper.make_node(op, ins, [out], **kw)); return out
    def ln(x, tag):
        m = n("ReduceMean", [x], f"{tag}_mean", axes=[-1], keepdims=1)
        d = n("Sub", [x, m], f"{tag}_d")
        p = n("Pow", [d, c(f"{tag}_two", 2.0)], f"{tag}_p")
        v = n("ReduceMean", [p], f"{tag}_var", axes=[-1], keepdims=1)
        e = n("Add", [v, c(f"{tag}_eps", 1e-5)], f"{tag}_e")
        s = n("Sqrt", [e], f"{tag}_s")
        y = n("Div", [d, s], f"{tag}_n")
        y = n("Mul", [y, c(f"{tag}_g", 1 + 0.1 * r.standard_normal(D))], f"{tag}_gy")
        return n("Add", [y, c(f"{tag}_b", 0.1 * r.standard_normal(D))], f"{tag}_out")
    def lin(x, i, o, tag, bias=True):
        y = n("MatMul", [x, c(f"{tag}_w", r.standard_normal((i, o)) / np.sqrt(i))], f"{tag}_mm")
        return n("Add", [y, c(f"{tag}_bias", 0.05 * r.standard_normal(o))], f"{tag}_out") if bias else y
    y = ln("x", "ln1")
    q, k, v = lin(y, D, D, "q"), lin(y, D, D, "k"), lin(y, D, D, "v")
    kt = n("Transpose", [k], "kt", perm=[0, 2, 1])
    sc = n("MatMul", [q, kt], "scores")
    sc = n("Mul", [sc, c("scale", 1 / np.sqrt(D))], "scaled")
    a = n("Softmax", [sc], "attn", axis=-1)
    o = n("MatMul", [a, v], "ctx")
    o = lin(o, D, D, "proj")
    r1 = n("Add", ["x", o], "res1")
    y2 = ln(r1, "ln2")
    h = lin(y2, D, H, "fc1")
    # GELU (erf form), as PyTorch exports it before opset 20
    g1 = n("Div", [h, c("sqrt2", np.sqrt(2.0))], "g_div")
    g2 = n("Erf", [g1], "g_erf")
    g3 = n("Add", [g2, c("one", 1.0)], "g_add")
    g4 = n("Mul", [h, g3], "g_mul")
    g5 = n("Mul", [g4, c("half", 0.5)], "gelu")
    out = lin(g5, H, D, "fc2")
    n("Add", [r1, out], "y")
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TP.FLOAT, [1, T, D])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, [1, T, D])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _x(n, seed):
    return np.random.default_rng(seed).standard_normal((n, 1, T, D)).astype(np.float32)


def _onnx_run(model, xs):
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [sess.run(None, {"x": x})[0] for x in xs]


def _snr(ref, got):
    ref, got = np.ravel(ref).astype(np.float64), np.ravel(got).astype(np.float64)
    return 10 * np.log10((ref @ ref) / ((ref - got) @ (ref - got)))


def test_float_conversion_still_matches_onnxruntime():
    model = block()
    res = convert(model, quantize="none")
    ops = res.report["output"]["ops"]
    assert "SQRT" not in ops and ops["RSQRT"] == 2  # LayerNorm's Div(d, Sqrt(v)) became Mul(d, Rsqrt(v))
    xs = _x(4, 5)
    for x, ref in zip(xs, _onnx_run(model, xs)):
        got = run_ours(res.tflite, [x])[0]
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=2e-5 * np.abs(ref).max())


@pytest.mark.slow
def test_transformer_block_quantizes_at_default_settings():
    model = block()
    res = convert(model, calibration=_x(40, 0)[:, 0])
    g = res.report["guard"]
    assert g["met"] and g["outputs"][0]["snr_db"] >= 30, g["outputs"]
    qops = res.report["output"]["ops"]
    assert qops["BATCH_MATMUL"] == 2 and qops["SOFTMAX"] == 1 and qops["GELU"] == 1
    assert "DIV" not in qops and "MINIMUM" not in qops  # no Erf arithmetic left
    q = read_model(res.tflite)
    sg = q.subgraphs[0]
    types = {sg.tensors[op.outputs[0]].name: sg.tensors[op.outputs[0]].type for op in sg.operators}
    # attention, LayerNorm, the GELU and the MLP in int8, nothing widened
    for name in ("scores", "attn", "ctx", "ln1_mean", "ln1_var", "ln2_n", "fc1_out", "gelu", "fc2_out"):
        assert types[name] == "INT8", (name, types[name])
    assert g["widened"] == []
    # new samples: as LiteRT runs it, and close to the float model
    xs = _x(10, 9)
    snrs = []
    for x, ref in zip(xs, _onnx_run(model, xs)):
        feed = quantize_inputs(q, [x])
        ours = run_ours(res.tflite, feed)
        theirs = run_litert(res.tflite, feed)[0].reshape(ours[0].shape)
        assert np.abs(ours[0].astype(int) - theirs.astype(int)).max() <= 2
        snrs.append(_snr(ref, dequantize_outputs(q, ours)[0]))
    assert np.mean(snrs) > 28, snrs
