"""Activation fusion: RELU/RELU6/RELU_N1_TO_1 and MIN/MAX clamps fused into the producer."""

import numpy as np
import pytest

from converters import graph as G
from converters.passes import activation
from edge_sdk.model.builder import GraphBuilder
from tests.test_passes_support import check_pass, op_counts


def _conv(g, x, c_out=4, name="y"):
    rng = np.random.default_rng(len(g.tensors))
    c_in = g.tensors[x].shape[-1]
    w = g.constant(f"{name}_w", rng.standard_normal((c_out, 3, 3, c_in)).astype(np.float32) * 3)
    b = g.constant(f"{name}_b", rng.standard_normal(c_out).astype(np.float32))
    y = g.tensor(name, g.tensors[x].shape[:-1] + (c_out,))
    g.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_w=1, stride_h=1)
    return y


@pytest.mark.parametrize("act", ["RELU", "RELU6", "RELU_N1_TO_1"])
def test_activation_ops_fuse(act):
    g = GraphBuilder()
    x = g.input("x", (1, 5, 5, 3))
    y = _conv(g, x)
    z = g.tensor("z", (1, 5, 5, 4))
    g.op(act, [y], [z])
    g.output(z)
    after = check_pass(g.build(), activation.run)
    assert op_counts(after) == {"CONV_2D": 1}
    op = after.subgraphs[0].operators[0]
    assert G.options(after, op)["fused_activation_function"] == act


@pytest.mark.parametrize("order", ["max_min", "min_max"])
def test_min_max_clamp_is_relu6_and_fuses(order):
    g = GraphBuilder()
    x = g.input("x", (2, 6))
    c = g.constant("c", np.full((1, 6), 0.3, np.float32))
    a = g.tensor("a", (2, 6))
    g.op("ADD", [x, c], [a])
    m = g.tensor("m", (2, 6))
    y = g.tensor("y", (2, 6))
    zero, six = g.constant("zero", np.zeros(1, np.float32)), g.constant("six", np.full((1,), 6, np.float32))
    first, second = (("MAXIMUM", zero), ("MINIMUM", six)) if order == "max_min" else (("MINIMUM", six), ("MAXIMUM", zero))
    g.op(first[0], [a, first[1]], [m])
    g.op(second[0], [second[1], m], [y])  # constant first: still recognised
    g.output(y)
    model = g.build()
    after = check_pass(model, activation.run, seeds=(0,))
    assert op_counts(after) == {"ADD": 1}
    assert G.options(after, after.subgraphs[0].operators[0])["fused_activation_function"] == "RELU6"
    # values well outside [0, 6] really are clamped
    from tests.test_passes_support import run_ours

    xs = [np.linspace(-20, 20, 12, dtype=np.float32).reshape(2, 6)]
    np.testing.assert_allclose(run_ours(after, xs)[0], np.clip(xs[0] + 0.3, 0, 6), rtol=1e-6)


def test_maximum_zero_alone_becomes_relu_and_relu_then_relu6_composes():
    g = GraphBuilder()
    x = g.input("x", (1, 4, 4, 2))
    y = g.tensor("y", (1, 2, 2, 2))
    g.op("MAX_POOL_2D", [x], [y], padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2,
         fused_activation_function="RELU")
    z = g.tensor("z", (1, 2, 2, 2))
    g.op("RELU6", [y], [z])
    w = g.tensor("w", (1, 2, 2, 2))
    g.op("MAXIMUM", [z, g.constant("zero", np.zeros((1, 1, 1, 1), np.float32))], [w])
    g.output(w)
    after = check_pass(g.build(), activation.run)
    assert op_counts(after) == {"MAX_POOL_2D": 1}
    assert G.options(after, after.subgraphs[0].operators[0])["fused_activation_function"] == "RELU6"


def test_not_fused_when_shared_output_or_concat_or_odd_clamp():
    g = GraphBuilder()
    x = g.input("x", (1, 5, 5, 3))
    y = _conv(g, x)
    r = g.tensor("r", (1, 5, 5, 4))
    g.op("RELU", [y], [r])
    n = g.tensor("n", (1, 5, 5, 4))
    g.op("NEG", [y], [n])  # y has two readers: no fusion
    cat = g.tensor("cat", (1, 5, 5, 8))
    g.op("CONCATENATION", [r, n], [cat], axis=3)
    r2 = g.tensor("r2", (1, 5, 5, 8))
    g.op("RELU", [cat], [r2])  # TFLM refuses fused activations on CONCATENATION
    m = g.tensor("m", (1, 5, 5, 8))
    g.op("MINIMUM", [r2, g.constant("three", np.full(1, 3, np.float32))], [m])  # clamp to 3: no TFLite activation
    g.output(m)
    after = check_pass(g.build(), activation.run)
    assert op_counts(after) == {"CONV_2D": 1, "RELU": 2, "NEG": 1, "CONCATENATION": 1, "MINIMUM": 1}


# ------------------------------------------------------------------------------------- hard-swish written out
def _paddle_hardswish_onnx(order):
    """Paddle's hard_swish export: Add(x, 3) -> Clip(0, 6) (as Max/Min) -> Mul(x, .) -> Div(., 6)."""
    from onnx import TensorProto as TP
    from onnx import helper, numpy_helper

    inits = {"three": np.array(3.0, np.float32), "zero": np.array(0.0, np.float32),
             "six": np.array(6.0, np.float32)}
    nodes = [helper.make_node("Add", ["x", "three"], ["a"]), helper.make_node("Max", ["a", "zero"], ["lo"]),
             helper.make_node("Min", ["lo", "six"], ["r6"])]
    if order == "mul_first":
        nodes += [helper.make_node("Mul", ["x", "r6"], ["m"]), helper.make_node("Div", ["m", "six"], ["y"])]
    else:
        nodes += [helper.make_node("Div", ["x", "six"], ["d"]), helper.make_node("Mul", ["d", "r6"], ["y"])]
    graph = helper.make_graph(nodes, "hs", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 4, 5, 6])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, [1, 4, 5, 6])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("order", ["mul_first", "div_first"])
def test_written_out_hard_swish_becomes_one_op(order):
    pytest.importorskip("onnx")
    from converters import convert
    from edge_sdk import Interpreter

    res = convert(_paddle_hardswish_onnx(order), quantize="none")
    assert res.report["output"]["ops"] == {"HARD_SWISH": 1}
    x = (np.random.default_rng(0).standard_normal((1, 4, 5, 6)) * 4).astype(np.float32)
    it = Interpreter(model_content=res.tflite)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    got = it.get_tensor(it.get_output_details()[0]["index"])
    np.testing.assert_allclose(got, x * np.clip(x + 3, 0, 6) / 6, rtol=1e-6, atol=1e-6)
