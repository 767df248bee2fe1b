"""The GELU fusion (converters.passes.gelu): GELU as exporters write it out becomes one GELU op, whatever
the order of its multiplications, in the erf form (PyTorch before opset 20, ONNX Gelu) and the tanh form
(x^3 as Mul or Pow); a look-alike that is not GELU, or whose inner values are read elsewhere, stays as it
is; a target whose runtime has no GELU keeps the decomposition. Float results match onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters import convert
from converters.import_onnx import import_onnx
from converters.passes import optimize
from tests.test_quantize import run_ours

SHAPE = [1, 8, 32]


def _model(build, opset=17):
    inits, nodes = {}, []

    def c(name, v):
        inits[name] = np.asarray(v, np.float32)
        return name

    def n(op, ins, out, **kw):
        nodes.append(helper.make_node(op, ins, [out], **kw))
        return out

    h = n("MatMul", ["x", c("w", np.random.default_rng(0).standard_normal((32, 32)) / 4)], "h")
    y = build(h, n, c)
    n("Add", [y, c("bias_out", 0.1)], "y")
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TP.FLOAT, SHAPE)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset < 20 else 9
    return m


def erf_pytorch(h, n, c):  # x * erf(x / sqrt2) ...: Div, Erf, Add, Mul, Mul (torch.nn.GELU export)
    e = n("Erf", [n("Div", [h, c("sqrt2", np.sqrt(2.0))], "d")], "e")
    return n("Mul", [n("Mul", [h, n("Add", [e, c("one", 1.0)], "a")], "m"), c("half", 0.5)], "gelu")


def erf_half_first(h, n, c):  # (0.5 * x) * (1 + erf(x * 0.7071))
    e = n("Erf", [n("Mul", [h, c("r2", 1 / np.sqrt(2.0))], "d")], "e")
    return n("Mul", [n("Mul", [c("half", 0.5), h], "hx"), n("Add", [c("one", 1.0), e], "a")], "gelu")


def tanh_pow(h, n, c):  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the cube as Pow
    x3 = n("Pow", [h, c("three", 3.0)], "x3")
    inner = n("Add", [h, n("Mul", [x3, c("k1", 0.044715)], "cx3")], "inner")
    t = n("Tanh", [n("Mul", [inner, c("k2", np.sqrt(2 / np.pi))], "arg")], "t")
    return n("Mul", [n("Mul", [h, c("half", 0.5)], "hx"), n("Add", [t, c("one", 1.0)], "a")], "gelu")


def tanh_mul(h, n, c):  # the cube as x * x * x, the 0.5 last
    x3 = n("Mul", [n("Mul", [h, h], "x2"), h], "x3")
    inner = n("Add", [n("Mul", [c("k1", 0.044715), x3], "cx3"), h], "inner")
    t = n("Tanh", [n("Mul", [c("k2", np.sqrt(2 / np.pi)), inner], "arg")], "t")
    return n("Mul", [n("Mul", [h, n("Add", [t, c("one", 1.0)], "a")], "m"), c("half", 0.5)], "gelu")


def onnx_gelu(h, n, c):
    return n("Gelu", [h], "gelu")


def onnx_gelu_tanh(h, n, c):
    return n("Gelu", [h], "gelu", approximate="tanh")


def _onnx_run(model, x):
    import onnxruntime as ort

    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _ops(res):
    return res.report["output"]["ops"]


@pytest.mark.parametrize("build, approximate, opset", [
    (erf_pytorch, False, 17), (erf_half_first, False, 17), (tanh_pow, True, 17), (tanh_mul, True, 17),
    (onnx_gelu, False, 20), (onnx_gelu_tanh, True, 20)])
def test_decompositions_become_one_gelu(build, approximate, opset):
    model = _model(build, opset)
    res = convert(model, quantize="none")
    ops = _ops(res)
    assert ops.get("GELU") == 1 and set(ops) <= {"FULLY_CONNECTED", "BATCH_MATMUL", "GELU", "ADD"}, ops
    from edge_sdk.model import read_model

    q = read_model(res.tflite)
    (gelu,) = [op for op in q.subgraphs[0].operators if q.op_name(op) == "GELU"]
    assert bool(gelu.options["approximate"]) is approximate
    x = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32) * 2
    ref = _onnx_run(model, x)
    np.testing.assert_allclose(run_ours(res.tflite, [x])[0], ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())


def not_gelu(h, n, c):  # 0.4 instead of 0.5: the same shape of graph, another function
    e = n("Erf", [n("Div", [h, c("sqrt2", np.sqrt(2.0))], "d")], "e")
    return n("Mul", [n("Mul", [h, n("Add", [e, c("one", 1.0)], "a")], "m"), c("half", 0.4)], "gelu")


def shared_inner(h, n, c):  # the erf value is read outside the GELU as well
    e = n("Erf", [n("Div", [h, c("sqrt2", np.sqrt(2.0))], "d")], "e")
    g = n("Mul", [n("Mul", [h, n("Add", [e, c("one", 1.0)], "a")], "m"), c("half", 0.5)], "gelu")
    return n("Add", [g, e], "both")


@pytest.mark.parametrize("build", [not_gelu, shared_inner])
def test_look_alikes_stay_decomposed(build):
    model = _model(build)
    res = convert(model, quantize="none")
    assert "GELU" not in _ops(res)
    x = np.random.default_rng(2).standard_normal(SHAPE).astype(np.float32)
    ref = _onnx_run(model, x)
    np.testing.assert_allclose(run_ours(res.tflite, [x])[0], ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())


def test_fuse_gelu_false_keeps_the_decomposition():
    model = import_onnx(_model(erf_pytorch))
    kept = optimize(model, fuse_gelu=False)
    assert "GELU" not in {kept.op_name(op) for op in kept.subgraphs[0].operators}
    fused = optimize(import_onnx(_model(erf_pytorch)))
    assert "GELU" in {fused.op_name(op) for op in fused.subgraphs[0].operators}
    assert fused.conversion_notes["passes"]["gelu"] == 1


def test_target_without_gelu_keeps_the_decomposition(tmp_path):
    from pathlib import Path

    parent = Path(__file__).resolve().parent.parent / "device_profiles" / "host-linux.toml"
    profile = tmp_path / "no-gelu.toml"
    profile.write_text(f'extends = "{parent}"\ndescription = "no GELU"\n[ops.float32]\n"*" = {{}}\nGELU = false\n')
    model = _model(erf_pytorch)
    res = convert(model, quantize="none", target=str(profile))
    assert "GELU" not in _ops(res) and res.report["check"]["verdict"] != "fails"
    assert _ops(convert(model, quantize="none", target="host-linux")).get("GELU") == 1
