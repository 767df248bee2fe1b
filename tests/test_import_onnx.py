"""import_onnx: every covered ONNX op (several attribute variants) and small whole networks.

Each case builds an ONNX model with onnx.helper, runs onnxruntime on it, imports it, and runs the imported
Model in our interpreter and (written to bytes) in LiteRT's reference kernels: float results must agree with
onnxruntime within 1e-4 relative (plus a small absolute tolerance).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import onnx  # test dependencies (pyproject [test])
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters.import_onnx import import_onnx
from edge_sdk import ConversionError, Interpreter
from edge_sdk.model import read_model, write_model
from tests.peers import run_litert

RTOL, ATOL = 1e-4, 1e-5
_NP_TO_ONNX = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.int64): TP.INT64, np.dtype(np.int32): TP.INT32}


def rng(seed=0):
    return np.random.default_rng(seed)


def f32(*shape, seed=0, scale=1.0):
    return (rng(seed).standard_normal(shape) * scale).astype(np.float32)


def make(nodes, inputs: dict, outputs, inits: dict | None = None, opset=17, out_types=None, dynamic=None):
    """An ONNX model: ``inputs`` name -> example array; ``outputs`` names; ``inits`` name -> constant."""
    ins = []
    for name, v in inputs.items():
        shape = list(v.shape)
        if dynamic and name in dynamic:
            shape = [d if i not in dynamic[name] else "N" for i, d in enumerate(shape)]
        ins.append(helper.make_tensor_value_info(name, _NP_TO_ONNX[v.dtype], shape))
    outs = [helper.make_tensor_value_info(o, (out_types or {}).get(o, TP.FLOAT), None) for o in outputs]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    graph = helper.make_graph(nodes, "test", ins, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    return model


def run_ours(model, feeds):
    it = Interpreter(model=model)
    it.allocate_tensors()
    for d, v in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], v)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def check(proto, inputs: dict, rtol=RTOL, atol=ATOL, litert=True, reference=False):
    """Import ``proto``; ours and LiteRT must match onnxruntime (or onnx's reference evaluator where
    onnxruntime lacks the variant). Returns the imported Model."""
    feeds = list(inputs.values())
    if reference:
        from onnx.reference import ReferenceEvaluator

        want = ReferenceEvaluator(proto).run(None, inputs)
    else:
        want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)
    model = import_onnx(proto)
    got = run_ours(model, feeds)
    peers = {"ours": got}
    if litert:
        peers["litert"] = run_litert(write_model(model), feeds)
    for who, outs in peers.items():
        assert len(outs) == len(want)
        for i, (g, w) in enumerate(zip(outs, want)):
            assert g.shape == w.shape, f"{who} output {i}: shape {g.shape} vs onnxruntime {w.shape}"
            if w.dtype.kind == "f":
                np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{who} output {i}")
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"{who} output {i}")
    return model


def op_names(model):
    return [model.op_name(op) for op in model.subgraphs[0].operators]


def single(op, x, opset=17, inits=None, extra_inputs=(), n_out=1, out_types=None, **attrs):
    """One-node model: input 'x' (plus inits / extra input names) -> outputs y0..yn."""
    outs = ["y"] if n_out == 1 else [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, ["x", *extra_inputs], outs, **attrs)
    return make([node], {"x": x}, outs, inits, opset=opset, out_types=out_types)


# ---------------------------------------------------------------------------------------------- convolution
CONV_CASES = [
    {},
    {"pads": [1, 1, 1, 1]},
    {"pads": [1, 1, 1, 1], "strides": [2, 2]},
    {"pads": [0, 1, 2, 1], "strides": [2, 1]},  # asymmetric pads: explicit PAD
    {"dilations": [2, 2], "pads": [2, 2, 2, 2]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"auto_pad": "SAME_LOWER", "strides": [2, 2]},
    {"auto_pad": "VALID", "strides": [1, 2]},
]


@pytest.mark.parametrize("attrs", CONV_CASES)
def test_conv2d(attrs):
    x = f32(1, 4, 9, 8)
    w = f32(6, 4, 3, 3, seed=1, scale=0.3)
    b = f32(6, seed=2)
    model = check(single("Conv", x, inits={"w": w, "b": b}, extra_inputs=["w", "b"], **attrs), {"x": x})
    assert "CONV_2D" in op_names(model)


@pytest.mark.parametrize("group,cout", [(2, 6), (4, 4), (4, 8)])
def test_conv2d_grouped_and_depthwise(group, cout):
    x = f32(2, 4, 7, 7)
    w = f32(cout, 4 // group, 3, 3, seed=1)
    model = check(single("Conv", x, inits={"w": w}, extra_inputs=["w"], group=group, pads=[1, 1, 1, 1]), {"x": x})
    if group == 4:
        assert "DEPTHWISE_CONV_2D" in op_names(model)


@pytest.mark.parametrize("attrs", [{}, {"pads": [2, 1], "strides": [2]}, {"dilations": [3], "group": 2}])
def test_conv1d(attrs):
    x = f32(1, 4, 20)
    w = f32(6, 4 // attrs.get("group", 1), 3, seed=1)
    check(single("Conv", x, inits={"w": w, "b": f32(6, seed=3)}, extra_inputs=["w", "b"], **attrs), {"x": x})


@pytest.mark.parametrize("attrs", [{}, {"strides": [2, 2]}, {"strides": [2, 2], "pads": [1, 1, 1, 1]},
                                   {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
                                   {"strides": [3, 2], "pads": [0, 1, 2, 0]},
                                   {"strides": [2, 2], "output_shape": [9, 8]},
                                   {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
                                   {"strides": [2, 2], "auto_pad": "SAME_LOWER"}])
def test_conv_transpose(attrs):
    x = f32(1, 3, 5, 4)
    w = f32(3, 2, 3, 3, seed=1)
    check(single("ConvTranspose", x, inits={"w": w, "b": f32(2, seed=2)}, extra_inputs=["w", "b"], **attrs), {"x": x})


def test_conv_transpose_1d():
    x = f32(1, 3, 6)
    w = f32(3, 2, 4, seed=1)
    check(single("ConvTranspose", x, inits={"w": w}, extra_inputs=["w"], strides=[2], pads=[1, 1]), {"x": x})


# ---------------------------------------------------------------------------------------------- matrix products
@pytest.mark.parametrize("attrs,bshape,cshape", [
    ({}, (5, 3), (3,)),
    ({"transB": 1}, (3, 5), (1, 3)),
    ({"alpha": 0.5, "beta": 2.0, "transB": 1}, (3, 5), (3,)),
    ({"transA": 1}, (5, 3), (4, 3)),
    ({}, (5, 3), None),
])
def test_gemm(attrs, bshape, cshape):
    x = f32(5, 4) if attrs.get("transA") else f32(4, 5)
    inits = {"b": f32(*bshape, seed=1)}
    extra = ["b"]
    if cshape:
        inits["c"] = f32(*cshape, seed=2)
        extra.append("c")
    model = check(single("Gemm", x, inits=inits, extra_inputs=extra, **attrs), {"x": x})
    assert "FULLY_CONNECTED" in op_names(model)


def test_gemm_runtime_b():
    a, b = f32(4, 5), f32(3, 5, seed=1)
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transB=1, alpha=2.0)
    check(make([node], {"a": a, "b": b}, ["y"], {"c": f32(3, seed=2)}), {"a": a, "b": b})


@pytest.mark.parametrize("xshape,wshape", [((4, 5), (5, 3)), ((2, 3, 5), (5, 4)), ((5,), (5, 2))])
def test_matmul_const(xshape, wshape):
    x = f32(*xshape)
    model = check(single("MatMul", x, inits={"w": f32(*wshape, seed=1)}, extra_inputs=["w"]), {"x": x})
    assert "FULLY_CONNECTED" in op_names(model)


@pytest.mark.parametrize("ashape,bshape", [((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5))])
def test_matmul_runtime(ashape, bshape):
    a, b = f32(*ashape), f32(*bshape, seed=1)
    model = check(make([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a, "b": b}, ["y"]), {"a": a, "b": b})
    assert "BATCH_MATMUL" in op_names(model)


# ---------------------------------------------------------------------------------------------- element-wise
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Min", "Max"])
@pytest.mark.parametrize("bshape", [(2, 3, 4, 5), (4, 1), (), (3, 1, 1)])
def test_binary_broadcast(op, bshape):
    a = f32(2, 3, 4, 5)
    b = f32(*bshape, seed=1) if bshape else np.float32(0.7)
    if op == "Div":
        b = np.where(np.abs(b) < 0.3, 0.5, b).astype(np.float32)
    check(single(op, a, inits={"b": np.asarray(b, np.float32)}, extra_inputs=["b"]), {"x": a})


def test_binary_two_runtime_inputs_and_variadic():
    a, b, c = f32(3, 4), f32(1, 4, seed=1), f32(3, 1, seed=2)
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Max", ["s", "c", "a"], ["m"]),
             helper.make_node("Min", ["m", "b"], ["y"])]
    check(make(nodes, {"a": a, "b": b, "c": c}, ["y"]), {"a": a, "b": b, "c": c})


@pytest.mark.parametrize("exponent", [2.0, 3.0, 0.5, -0.5, -1.0, 1.0, 1.7])
def test_pow_const(exponent):
    x = np.abs(f32(2, 3, 4)) + 0.2
    model = check(single("Pow", x, inits={"e": np.float32(exponent)}, extra_inputs=["e"]), {"x": x})
    if exponent == 2.0:
        assert op_names(model) == ["MUL"]


def test_pow_runtime():
    x, e = np.abs(f32(2, 3)) + 0.2, f32(2, 3, seed=1)
    check(make([helper.make_node("Pow", ["x", "e"], ["y"])], {"x": x, "e": e}, ["y"]), {"x": x, "e": e})


@pytest.mark.parametrize("op", ["Sqrt", "Exp", "Log", "Abs", "Neg", "Relu", "Sigmoid", "Tanh", "HardSwish", "Erf"])
def test_unary(op):
    x = f32(2, 3, 4, 5, scale=2.0)
    if op in ("Sqrt", "Log"):
        x = np.abs(x) + 0.05
    check(single(op, x), {"x": x})


def test_erf_wide_range():
    x = np.concatenate([np.linspace(-6, 6, 601), [0.0, 1e-4, -1e-3, 3.99, 4.01]]).astype(np.float32)
    check(single("Erf", x), {"x": x}, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = f32(3, 16, scale=3.0)
    check(single("Gelu", x, opset=20, approximate=approximate), {"x": x})


@pytest.mark.parametrize("attrs", [{}, {"alpha": 0.3}])
def test_leaky_relu_and_elu(attrs):
    x = f32(2, 3, 4, scale=2.0)
    check(single("LeakyRelu", x, **attrs), {"x": x})
    check(single("Elu", x, **attrs), {"x": x})


@pytest.mark.parametrize("attrs", [{}, {"alpha": 0.5, "beta": 0.2}])
def test_hard_sigmoid(attrs):
    x = f32(2, 3, 4, scale=4.0)
    check(single("HardSigmoid", x, **attrs), {"x": x})


@pytest.mark.parametrize("slope_shape", [(3, 1, 1), (1,), (5,)])
def test_prelu(slope_shape):
    x = f32(2, 3, 4, 5, scale=2.0)
    check(single("PRelu", x, inits={"s": f32(*slope_shape, seed=1)}, extra_inputs=["s"]), {"x": x})


@pytest.mark.parametrize("bounds,expect", [((0.0, 6.0), "RELU6"), ((-1.0, 1.0), "RELU_N1_TO_1"),
                                           ((-0.5, 2.0), "MINIMUM"), ((0.0, None), "RELU"), ((None, 0.3), "MINIMUM")])
def test_clip(bounds, expect):
    x = f32(2, 3, 8, scale=4.0)
    inits, extra = {}, []
    lo, hi = bounds
    extra.append("lo" if lo is not None else "")
    if lo is not None:
        inits["lo"] = np.float32(lo)
    if hi is not None:
        extra.append("hi")
        inits["hi"] = np.float32(hi)
    model = check(single("Clip", x, inits=inits, extra_inputs=extra), {"x": x})
    assert expect in op_names(model)


def test_clip_opset6_attributes():
    x = f32(2, 8, scale=4.0)
    check(single("Clip", x, opset=6, min=0.0, max=6.0), {"x": x})


# ---------------------------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis,opset", [(-1, 13), (1, 13), (0, 17), (1, 11), (2, 11)])
def test_softmax(op, axis, opset):
    x = f32(2, 3, 4, scale=2.0)
    check(single(op, x, opset=opset, axis=axis), {"x": x})


# ---------------------------------------------------------------------------------------------- pooling
POOL_CASES = [
    {"kernel_shape": [2, 2], "strides": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 1, 1, 0]},
    {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
]


@pytest.mark.parametrize("attrs", POOL_CASES)
def test_max_pool(attrs):
    x = f32(1, 3, 9, 8)
    check(single("MaxPool", x, **attrs), {"x": x})


@pytest.mark.parametrize("attrs", POOL_CASES + [{"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                                                     "count_include_pad": 1},
                                                {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1,
                                                     "pads": [1, 1, 1, 1], "count_include_pad": 1}])
def test_average_pool(attrs):
    x = f32(1, 3, 9, 8)
    check(single("AveragePool", x, **attrs), {"x": x})


def test_pool_1d():
    x = f32(1, 3, 11)
    check(single("MaxPool", x, kernel_shape=[3], strides=[2], pads=[1, 1]), {"x": x})
    check(single("AveragePool", x, kernel_shape=[2], strides=[2]), {"x": x})


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 4, 7)])
def test_global_pool(op, shape):
    x = f32(*shape)
    check(single(op, x), {"x": x})


# ---------------------------------------------------------------------------------------------- shape ops
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_flatten(axis):
    x = f32(2, 3, 4, 5)
    check(single("Flatten", x, axis=axis), {"x": x})


@pytest.mark.parametrize("shape", [(6, -1), (0, 0, 20), (2, 60), (-1,)])
def test_reshape(shape):
    x = f32(2, 3, 4, 5)
    check(single("Reshape", x, inits={"s": np.array(shape, np.int64)}, extra_inputs=["s"]), {"x": x})


@pytest.mark.parametrize("perm", [None, [0, 2, 3, 1], [1, 0, 3, 2]])
def test_transpose(perm):
    x = f32(2, 3, 4, 5)
    attrs = {} if perm is None else {"perm": perm}
    check(single("Transpose", x, **attrs), {"x": x})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    a, b = f32(2, 3, 4), f32(2, 3, 4, seed=1)
    c = f32(2, 3, 4, seed=2)
    node = helper.make_node("Concat", ["a", "c", "b"], ["y"], axis=axis)
    check(make([node], {"a": a, "b": b}, ["y"], {"c": c}), {"a": a, "b": b})


@pytest.mark.parametrize("opset,split,attrs", [(13, [2, 4], {"axis": 1}), (11, None, {"axis": -1}),
                                               (11, [1, 2], {"axis": 2}), (18, None, {"axis": 1, "num_outputs": 3})])
def test_split(opset, split, attrs):
    x = f32(2, 6, 3)
    n = len(split) if split else attrs.get("num_outputs", 3)
    inits, extra = {}, []
    if split and opset >= 13:
        inits["s"] = np.array(split, np.int64)
        extra = ["s"]
    elif split:
        attrs = dict(attrs, split=split)
    check(single("Split", x, opset=opset, inits=inits, extra_inputs=extra, n_out=n, **attrs), {"x": x})


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1], [3], [1], None),
    ([0, 1], [-1, 1000], [2, 3], None),
    ([-2], [-100], [3], [-1]),
    ([4, 0], [0, 5], [3, 1], [-2, 2]),
    ([1, 0, 1], [2, 3, 5], None, None),
])
def test_slice(starts, ends, axes, steps):
    x = f32(2, 3, 4, 5)
    inits = {"s": np.array(starts, np.int64), "e": np.array(ends, np.int64)}
    extra = ["s", "e"]
    if axes is not None:
        inits["a"] = np.array(axes, np.int64)
        extra.append("a")
    if steps is not None:
        if axes is None:
            extra.append("")
        inits["st"] = np.array(steps, np.int64)
        extra.append("st")
    check(single("Slice", x, inits=inits, extra_inputs=extra), {"x": x})


@pytest.mark.parametrize("pads,value,opset", [([0, 0, 1, 2, 0, 0, 2, 1], None, 13), ([0, 1, 1, 0, 0, 1, 0, 3], 1.5, 13),
                                              ([0, 0, 1, 1, 0, 0, 1, 1], None, 2)])
def test_pad(pads, value, opset):
    x = f32(1, 2, 3, 4)
    if opset < 11:
        check(single("Pad", x, opset=opset, pads=pads, value=value or 0.0), {"x": x})
        return
    inits, extra = {"p": np.array(pads, np.int64)}, ["p"]
    if value is not None:
        inits["v"] = np.float32(value)
        extra.append("v")
    check(single("Pad", x, opset=opset, inits=inits, extra_inputs=extra), {"x": x})


def test_pad_reflect():
    x = f32(1, 2, 4, 5)
    model = check(single("Pad", x, inits={"p": np.array([0, 0, 2, 1, 0, 0, 3, 4], np.int64)}, extra_inputs=["p"],
                         mode="reflect"), {"x": x})
    assert op_names(model) == ["MIRROR_PAD"]


def test_pad_axes_opset18():
    x = f32(1, 2, 3, 4)
    inits = {"p": np.array([1, 2, 0, 1], np.int64), "a": np.array([-1, 1], np.int64)}
    check(single("Pad", x, opset=18, inits=inits, extra_inputs=["p", "", "a"]), {"x": x})


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze(opset):
    x = f32(1, 3, 1, 4)
    if opset >= 13:
        nodes = [helper.make_node("Squeeze", ["x", "a"], ["s"]), helper.make_node("Unsqueeze", ["s", "b"], ["y"])]
        inits = {"a": np.array([0, -2], np.int64), "b": np.array([-1, 0], np.int64)}
    else:
        nodes = [helper.make_node("Squeeze", ["x"], ["s"], axes=[0, 2]),
                 helper.make_node("Unsqueeze", ["s"], ["y"], axes=[0, 3])]
        inits = {}
    check(make(nodes, {"x": x}, ["y"], inits, opset=opset), {"x": x})


def test_squeeze_all():
    x = f32(1, 3, 1, 4)
    check(single("Squeeze", x), {"x": x})


@pytest.mark.parametrize("indices,axis", [(np.array([2, 0, -1]), 1), (np.array(1), 0), (np.array([[0, 1], [3, 2]]), -1)])
def test_gather_const_indices(indices, axis):
    x = f32(4, 3, 4)
    check(single("Gather", x, inits={"i": indices.astype(np.int64)}, extra_inputs=["i"], axis=axis), {"x": x})


def test_gather_runtime_indices():
    table, idx = f32(10, 4), np.array([[1, 9, 3]], np.int64)
    node = helper.make_node("Gather", ["idx", "t"], ["y"], axis=0)
    node = helper.make_node("Gather", ["t", "idx"], ["y"], axis=0)
    check(make([node], {"idx": idx}, ["y"], {"t": table}), {"idx": idx})


def test_shape_chain_folds():
    """The exporter pattern Shape -> Gather -> Unsqueeze -> Concat -> Reshape folds to one RESHAPE."""
    x = f32(2, 3, 4)
    nodes = [helper.make_node("Shape", ["x"], ["sh"]),
             helper.make_node("Gather", ["sh", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    inits = {"zero": np.array(0, np.int64), "ax": np.array([0], np.int64), "minus1": np.array([-1], np.int64)}
    model = check(make(nodes, {"x": x}, ["y"], inits), {"x": x})
    assert op_names(model) == ["RESHAPE"]


def test_constant_constant_of_shape_identity_dropout():
    x = f32(2, 3)
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(f32(2, 3, seed=1))),
             helper.make_node("ConstantOfShape", ["shp"], ["k"], value=numpy_helper.from_array(np.array([0.5], np.float32))),
             helper.make_node("Identity", ["x"], ["i"]),
             helper.make_node("Dropout", ["i"], ["d"]),
             helper.make_node("Add", ["d", "c"], ["s"]),
             helper.make_node("Mul", ["s", "k"], ["y"])]
    check(make(nodes, {"x": x}, ["y"], {"shp": np.array([2, 3], np.int64)}), {"x": x})


def test_cast():
    x = f32(2, 5, scale=10)
    nodes = [helper.make_node("Cast", ["x"], ["i"], to=TP.INT32), helper.make_node("Cast", ["i"], ["f"], to=TP.FLOAT),
             helper.make_node("Cast", ["f"], ["y"], to=TP.FLOAT)]
    check(make(nodes, {"x": x}, ["y"]), {"x": x})


@pytest.mark.parametrize("xshape,shape", [((3, 1), (2, 3, 4)), ((1, 4), (3, 1)), ((2, 3), (2, 3))])
def test_expand(xshape, shape):
    x = f32(*xshape)
    check(single("Expand", x, inits={"s": np.array(shape, np.int64)}, extra_inputs=["s"]), {"x": x})


@pytest.mark.parametrize("reps", [(1, 2, 3), (2, 1, 1)])
def test_tile(reps):
    x = f32(2, 3, 2)
    check(single("Tile", x, inits={"r": np.array(reps, np.int64)}, extra_inputs=["r"]), {"x": x})


@pytest.mark.parametrize("axis,keepdims", [(1, 1), (-1, 0), (0, 1)])
def test_argmax(axis, keepdims):
    x = f32(3, 5, 4)
    check(single("ArgMax", x, axis=axis, keepdims=keepdims, out_types={"y": TP.INT64}), {"x": x})


# ---------------------------------------------------------------------------------------------- normalization
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3), (2, 3, 7)])
def test_batch_norm(shape):
    x = f32(*shape)
    c = shape[1]
    inits = {"g": f32(c, seed=1), "b": f32(c, seed=2), "m": f32(c, seed=3), "v": np.abs(f32(c, seed=4)) + 0.5}
    check(single("BatchNormalization", x, inits=inits, extra_inputs=["g", "b", "m", "v"], epsilon=1e-3), {"x": x})


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 4, 9)])
def test_instance_norm(shape):
    x = f32(*shape, scale=3.0) + 1.0
    c = shape[1]
    check(single("InstanceNormalization", x, inits={"s": f32(c, seed=1), "b": f32(c, seed=2)},
                 extra_inputs=["s", "b"]), {"x": x})


@pytest.mark.parametrize("axis,bias", [(-1, True), (1, True), (2, False)])
def test_layer_norm(axis, bias):
    x = f32(2, 3, 8, scale=2.0) + 0.5
    nshape = x.shape[axis:]
    inits = {"s": f32(*nshape, seed=1)}
    extra = ["s"]
    if bias:
        inits["b"] = f32(*nshape, seed=2)
        extra.append("b")
    check(single("LayerNormalization", x, inits=inits, extra_inputs=extra, axis=axis, epsilon=1e-5), {"x": x})


# ---------------------------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax"])
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([-1, 0], 0), (None, 1), ([2, 3], 1)])
def test_reduce(op, axes, keepdims):
    x = f32(2, 3, 4, 5)
    as_input = op == "ReduceSum"  # ReduceSum takes axes as an input from opset 13, the others from 18
    inits, extra, attrs = {}, [], {"keepdims": keepdims}
    if axes is not None:
        if as_input:
            inits["a"] = np.array(axes, np.int64)
            extra = ["a"]
        else:
            attrs["axes"] = axes
    check(single(op, x, opset=13, inits=inits, extra_inputs=extra, **attrs), {"x": x})


def test_reduce_axes_input_opset18():
    x = f32(2, 3, 4)
    check(single("ReduceMean", x, opset=18, inits={"a": np.array([-1], np.int64)}, extra_inputs=["a"]), {"x": x})


# ---------------------------------------------------------------------------------------------- resize
@pytest.mark.parametrize("mode,ctm,nearest,scales,sizes", [
    ("nearest", "asymmetric", "floor", [1, 1, 2, 2], None),
    ("nearest", "half_pixel", "round_prefer_floor", [1, 1, 2, 3], None),
    ("nearest", "asymmetric", "round_prefer_floor", [1, 1, 2, 2], None),
    ("nearest", "align_corners", "round_prefer_ceil", None, [1, 2, 7, 9]),
    ("linear", "half_pixel", None, [1, 1, 2, 2], None),
    ("linear", "pytorch_half_pixel", None, None, [1, 2, 8, 5]),
    ("linear", "align_corners", None, None, [1, 2, 7, 9]),
    ("linear", "asymmetric", None, [1, 1, 2, 2], None),
])
def test_resize(mode, ctm, nearest, scales, sizes):
    x = f32(1, 2, 4, 3)
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if nearest:
        attrs["nearest_mode"] = nearest
    inits = {"roi": np.zeros(0, np.float32)}
    if scales is not None:
        inits["sc"] = np.array(scales, np.float32)
        extra = ["roi", "sc"]
    else:
        inits["sz"] = np.array(sizes, np.int64)
        extra = ["roi", "", "sz"]
    check(single("Resize", x, opset=13, inits=inits, extra_inputs=extra, **attrs), {"x": x})


def test_upsample_opset9():
    x = f32(1, 2, 3, 3)
    check(single("Upsample", x, opset=9, inits={"s": np.array([1, 1, 2, 2], np.float32)}, extra_inputs=["s"]),
          {"x": x})


# ---------------------------------------------------------------------------------------------- LSTM
def _lstm_model(seq=5, batch=2, n_in=3, hidden=4, layout=0, outputs=("y", "yh"), opset=14):
    r = rng(11)
    w = (r.standard_normal((1, 4 * hidden, n_in)) * 0.5).astype(np.float32)
    rr = (r.standard_normal((1, 4 * hidden, hidden)) * 0.5).astype(np.float32)
    b = (r.standard_normal((1, 8 * hidden)) * 0.5).astype(np.float32)
    attrs = {"hidden_size": hidden}
    if layout:
        attrs["layout"] = 1
    node = helper.make_node("LSTM", ["x", "w", "r", "b"], [o if o in outputs else "" for o in ("y", "yh")], **attrs)
    x = f32(*((seq, batch, n_in) if layout == 0 else (batch, seq, n_in)), seed=5)
    return make([node], {"x": x}, list(outputs), {"w": w, "r": rr, "b": b}, opset=opset), x


@pytest.mark.parametrize("layout", [0, 1])
def test_lstm(layout):
    model, x = _lstm_model(layout=layout)
    m = check(model, {"x": x}, reference=layout == 1)  # onnxruntime runs only layout 0
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in op_names(m)


# ---------------------------------------------------------------------------------------------- networks
def test_cnn_bn_relu_pool_gemm():
    x = f32(1, 3, 12, 12)
    inits = {"w1": f32(8, 3, 3, 3, seed=1, scale=0.3), "b1": f32(8, seed=2),
             "g": f32(8, seed=3), "be": f32(8, seed=4), "m": f32(8, seed=5), "v": np.abs(f32(8, seed=6)) + 0.5,
             "w2": f32(8, 1, 3, 3, seed=7), "fc": f32(10, 8 * 3 * 3, seed=8, scale=0.1), "fb": f32(10, seed=9)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "g", "be", "m", "v"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], group=8, pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"]),
             helper.make_node("Flatten", ["r2"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fb"], ["logits"], transB=1),
             helper.make_node("Softmax", ["logits"], ["y"], axis=1)]
    inits.update(lo=np.float32(0), hi=np.float32(6))
    model = check(make(nodes, {"x": x}, ["y"], inits, opset=13), {"x": x})
    assert "DEPTHWISE_CONV_2D" in op_names(model)


def test_residual_block_dynamic_batch():
    x = f32(1, 4, 6, 6)
    inits = {"w1": f32(4, 4, 3, 3, seed=1, scale=0.3), "w2": f32(4, 4, 3, 3, seed=2, scale=0.3)}
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    model = check(make(nodes, {"x": x}, ["y"], inits, dynamic={"x": [0]}), {"x": x})
    sg = model.subgraphs[0]
    assert sg.tensors[sg.inputs[0]].shape == (1, 4, 6, 6)
    assert sg.tensors[sg.inputs[0]].shape_signature == (-1, 4, 6, 6)
    again = read_model(write_model(model))
    assert again.subgraphs[0].tensors[again.subgraphs[0].inputs[0]].shape_signature == (-1, 4, 6, 6)


def test_mlp_layernorm_gelu():
    x = f32(2, 5, 16)
    inits = {"w1": f32(16, 32, seed=1, scale=0.25), "b1": f32(32, seed=2), "s": f32(32, seed=3), "bb": f32(32, seed=4),
             "w2": f32(32, 8, seed=5, scale=0.2), "sq2": np.float32(math.sqrt(2)), "one": np.float32(1),
             "half": np.float32(0.5)}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("LayerNormalization", ["hb", "s", "bb"], ["ln"], axis=-1),
             # Gelu as PyTorch exports it before opset 20: x * 0.5 * (1 + erf(x / sqrt 2))
             helper.make_node("Div", ["ln", "sq2"], ["d"]),
             helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]),
             helper.make_node("Mul", ["ln", "e1"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["g"]),
             helper.make_node("MatMul", ["g", "w2"], ["y"])]
    check(make(nodes, {"x": x}, ["y"], inits), {"x": x})


def test_lstm_sequence_model():
    seq, batch, n_in, hidden = 6, 1, 4, 8
    r = rng(3)
    inits = {"w": (r.standard_normal((1, 4 * hidden, n_in)) * 0.4).astype(np.float32),
             "r": (r.standard_normal((1, 4 * hidden, hidden)) * 0.4).astype(np.float32),
             "b": (r.standard_normal((1, 8 * hidden)) * 0.4).astype(np.float32),
             "fc": f32(hidden, 3, seed=4), "h0": np.zeros((1, batch, hidden), np.float32)}
    nodes = [helper.make_node("LSTM", ["x", "w", "r", "b", "", "h0"], ["", "yh"], hidden_size=hidden),
             helper.make_node("Squeeze", ["yh", "ax"], ["h"]),
             helper.make_node("MatMul", ["h", "fc"], ["y"])]
    inits["ax"] = np.array([0], np.int64)
    x = f32(seq, batch, n_in, seed=9)
    check(make(nodes, {"x": x}, ["y"], inits, opset=14), {"x": x})


# ---------------------------------------------------------------------------------------------- sources, errors
def test_shapes_inference_leaves_open_are_measured(monkeypatch):
    """With onnx.shape_inference giving nothing, shapes come from one reference run of the graph."""
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", lambda m, **kw: m)
    x = f32(1, 3, 6, 6)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["y"])]
    check(make(nodes, {"x": x}, ["y"], {"w": f32(4, 3, 3, 3, seed=1)}), {"x": x})


def test_sources_path_and_bytes(tmp_path):
    x = f32(1, 4)
    proto = single("Relu", x)
    path = tmp_path / "m.onnx"
    onnx.save(proto, str(path))
    a = write_model(import_onnx(str(path)))
    b = write_model(import_onnx(proto.SerializeToString()))
    assert a == b


def test_every_unsupported_node_is_reported():
    x = f32(1, 2, 4, 4)
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("NonMaxSuppression", ["a"], ["b"], name="bad_op"),
             helper.make_node("Pad", ["a", "p"], ["c"], name="bad_pad"),
             helper.make_node("LSTM", ["seq", "w", "r"], ["d"], hidden_size=2, direction="bidirectional",
                              name="bad_lstm"),
             helper.make_node("Relu", ["c"], ["after_bad"], name="downstream")]
    seq = f32(3, 1, 2)
    # (issue 24 mapped Pad 'wrap' and a bidirectional LSTM with constant weights: negative pads and run-time
    # weights W stay refused)
    proto = make(nodes, {"x": x, "seq": seq, "w": f32(2, 8, 2)}, ["after_bad", "b", "d"],
                 {"p": np.array([0, 0, -1, 1, 0, 0, 1, 1], np.int64), "r": f32(2, 8, 2)})
    with pytest.raises(ConversionError) as err:
        import_onnx(proto)
    problems = err.value.problems
    assert len(problems) == 3, problems
    joined = "\n".join(problems)
    for name, op in (("bad_op", "NonMaxSuppression"), ("bad_pad", "Pad"), ("bad_lstm", "LSTM")):
        assert f"'{name}' ({op}, opset 17)" in joined
    assert "negative pads" in joined and "bidirectional" in joined


def test_not_onnx():
    from edge_sdk import ModelError

    with pytest.raises(ModelError):
        import_onnx(b"definitely not a protobuf \xff\xff")


@pytest.mark.parametrize("opset", [11, 21])
def test_small_cnn_across_opsets(opset):
    """The same network at the oldest opset we cover and a recent one onnxruntime runs."""
    x = f32(1, 2, 8, 8)
    inits = {"w": f32(4, 2, 3, 3, seed=1, scale=0.3), "fc": f32(4 * 4 * 4, 3, seed=2, scale=0.2),
             "s": np.array([1, -1], np.int64)}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("LeakyRelu", ["c"], ["r"], alpha=0.2),
             helper.make_node("AveragePool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Reshape", ["p", "s"], ["f"]),
             helper.make_node("MatMul", ["f", "fc"], ["m"]),
             helper.make_node("Softmax", ["m"], ["y"], axis=-1)]
    check(make(nodes, {"x": x}, ["y"], inits, opset=opset), {"x": x})


# ---------------------------------------------------------------------------------------------- issue 15 coverage
@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2, 2]},
    {"kernel_shape": [3, 2, 3], "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0]},
    {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "ceil_mode": 1},
])
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool3d_separable(op, attrs):
    x = f32(2, 3, 5, 6, 7)
    extra = {"count_include_pad": 1} if op == "AveragePool" and "pads" in attrs else {}
    model = check(single(op, x, **attrs, **extra), {"x": x})
    assert {"MAX_POOL_2D", "AVERAGE_POOL_2D"} & set(op_names(model))


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "dilations": [2, 2], "strides": [2, 2], "pads": [1, 2, 1, 2]},  # stride % dilation == 0
    {"kernel_shape": [2, 3], "dilations": [2, 3], "strides": [1, 2]},  # strided slices, one per tap
    {"kernel_shape": [3, 3], "dilations": [2, 2], "strides": [2, 2], "ceil_mode": 1},
])
def test_max_pool_dilated(attrs):
    x = f32(1, 3, 11, 13)
    check(single("MaxPool", x, opset=12, **attrs), {"x": x})


def test_edge_pad():
    x = f32(1, 2, 3, 4)
    pads = np.array([0, 0, 2, 1, 0, 0, 1, 3], np.int64)
    model = check(single("Pad", x, inits={"pads": pads}, extra_inputs=["pads"], mode="edge"), {"x": x})
    assert "GATHER" in op_names(model)


@pytest.mark.parametrize("op,attrs", [("Selu", {}), ("Selu", {"alpha": 1.5, "gamma": 0.8}), ("Softplus", {})])
def test_selu_softplus(op, attrs):
    x = f32(2, 5, 7, scale=4.0)
    x.flat[0], x.flat[1] = 60.0, -60.0  # softplus must not overflow
    check(single(op, x, **attrs), {"x": x})


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_variadic_with_broadcast(op):
    xs = {"a": f32(2, 3, 4), "b": f32(3, 1, seed=1), "c": f32(4, seed=2)}
    node = helper.make_node(op, list(xs), ["y"])
    check(make([node], xs, ["y"]), xs)


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 4, 5, 6)])
def test_prelu_per_channel_slope_any_rank(shape):
    x = f32(*shape)
    slope = np.array([0.1, -0.2, 0.3], np.float32)
    proto = single("PRelu", x, opset=6, inits={"slope": slope}, extra_inputs=["slope"])
    want = np.where(x > 0, x, x * slope.reshape((3,) + (1,) * (len(shape) - 2)))  # PyTorch's nn.PReLU(3)
    got = run_ours(import_onnx(proto), [x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("attrs", [{"size": 5, "alpha": 1e-2, "beta": 0.75, "bias": 2.0}, {"size": 2},
                                   {"size": 3, "beta": 0.5}])
def test_lrn(attrs):
    x = f32(2, 7, 5, 4, scale=3.0)
    proto = single("LRN", x, **attrs)
    if attrs["size"] % 2:
        model = check(proto, {"x": x})
    else:  # onnxruntime refuses an even size (and onnx's reference evaluator loops over the batch): the spec
        size, c = attrs["size"], x.shape[1]
        sq = np.stack([np.sum(x[:, max(0, k - (size - 1) // 2):min(c, k + size // 2 + 1)] ** 2, axis=1)
                       for k in range(c)], axis=1)
        want = x / (1.0 + 1e-4 / size * sq) ** 0.75
        model = import_onnx(proto)
        np.testing.assert_allclose(run_ours(model, [x])[0], want, rtol=1e-5, atol=1e-6)
    assert "AVERAGE_POOL_2D" in op_names(model)


@pytest.mark.parametrize("op", ["ReduceL2", "ReduceMin", "ReduceSumSquare"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_more_reductions(op, keepdims):
    x = f32(2, 3, 4, 5)
    check(single(op, x, opset=13, axes=[1, 3], keepdims=keepdims), {"x": x})


@pytest.mark.parametrize("eq,shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),                      # implicit output
    ("bhid,bhjd->bhij", [(1, 2, 5, 8), (1, 2, 6, 8)]),  # attention scores
    ("bhij,bhjd->bhid", [(1, 2, 5, 6), (1, 2, 6, 8)]),
    ("nchw,kc->nkhw", [(2, 3, 4, 5), (6, 3)]),
    ("ij,ij->i", [(4, 5), (4, 5)]),                   # row-wise dot
    ("i,j->ij", [(4,), (3,)]),                         # outer product
    ("abc,cd->dba", [(2, 3, 4), (4, 5)]),
    ("ijk->kj", [(2, 3, 4)]),                          # one operand: sum and transpose
    ("ij,jk->", [(3, 4), (4, 2)]),                     # everything summed
])
def test_einsum(eq, shapes):
    inputs = {f"x{k}": f32(*s, seed=k) for k, s in enumerate(shapes)}
    node = helper.make_node("Einsum", list(inputs), ["y"], equation=eq)
    check(make([node], inputs, ["y"], opset=12), inputs)


@pytest.mark.parametrize("op,attrs,layout", [
    ("RNN", {}, 0), ("GRU", {}, 0), ("GRU", {"linear_before_reset": 1}, 0), ("GRU", {}, 1), ("RNN", {}, 1),
])
@pytest.mark.parametrize("with_h0", [False, True])
def test_rnn_gru_unrolled(op, attrs, layout, with_h0):
    steps, batch, feat, hidden = 5, 2, 3, 4
    gates = 1 if op == "RNN" else 3
    x = f32(*((steps, batch, feat) if layout == 0 else (batch, steps, feat)))
    inits = {"w": f32(1, gates * hidden, feat, seed=1, scale=0.5), "r": f32(1, gates * hidden, hidden, seed=2, scale=0.5),
             "b": f32(1, 2 * gates * hidden, seed=3, scale=0.2)}
    inputs = {"x": x}
    names = ["x", "w", "r", "b"]
    if with_h0:
        inputs["h0"] = f32(*((1, batch, hidden) if layout == 0 else (batch, 1, hidden)), seed=4)
        names += ["", "h0"]
    node = helper.make_node(op, names, ["y", "yh"], hidden_size=hidden, layout=layout, **attrs)
    # onnxruntime has no batch-major (layout 1) RNN: onnx's reference evaluator checks those
    check(make([node], inputs, ["y", "yh"], inits, opset=14), inputs, reference=layout == 1)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_constant_indices(axis):
    x = f32(3, 4, 5)
    shape = [3, 4, 5]
    shape[axis] = 6
    idx = rng(5).integers(-x.shape[axis], x.shape[axis], shape).astype(np.int64)
    model = check(single("GatherElements", x, inits={"i": idx}, extra_inputs=["i"], axis=axis), {"x": x})
    assert "GATHER" in op_names(model)


@pytest.mark.parametrize("x_shape,y_shape", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 4), (3, 1))])
def test_where_constant_condition(x_shape, y_shape):
    out = np.broadcast_shapes(x_shape, y_shape)
    cond = rng(3).random(out[-2:]) > 0.5  # broadcasts too
    inputs = {"x": f32(*x_shape), "y": f32(*y_shape, seed=1)}
    node = helper.make_node("Where", ["c", "x", "y"], ["z"])
    check(make([node], inputs, ["z"], {"c": cond}), inputs)


def test_range_of_constants_folds():
    node = helper.make_node("Range", ["s", "l", "d"], ["r"])
    add = helper.make_node("Add", ["x", "r"], ["y"])
    inputs = {"x": f32(2, 5)}
    consts = {"s": np.array(1.0, np.float32), "l": np.array(3.5, np.float32), "d": np.array(0.5, np.float32)}
    model = check(make([node, add], inputs, ["y"], consts), inputs)
    assert op_names(model) == ["ADD"]
