"""Named / symbolic ONNX input dims (issue 24): -1 in the converted model's shape signature where it resizes.

Models built here with onnx.helper: dims named ("batch", "seq", "H"), left without a value, or of 0. The
converted model, resized (our interpreters and LiteRT), must compute what onnxruntime computes at that size; a
model whose graph folds the size into a constant (a Reshape to [1, seq * 4]) stays static at its stored shape and
says so.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from converters import convert
from converters.report import format_conversion
from edge_sdk import ConversionError
from edge_sdk.model import read_model

ort = pytest.importorskip("onnxruntime")


def _model(nodes, dims, inits, opset=17):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                             opset_imports=[helper.make_opsetid("", opset)])


def matmul_model(dims, width=16):
    """x [.., width] @ W [width, 8] -> Relu: a sequence model (seq and batch free)."""
    w = np.random.default_rng(0).standard_normal((width, 8)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Relu", ["m"], ["y"])]
    return _model(nodes, dims, [numpy_helper.from_array(w, "W")])


def conv_model(dims, stride=1):
    """NCHW conv 3x3 (pads 1) -> Relu -> GlobalAveragePool: an image model (N, H, W free)."""
    w = np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1], strides=[stride, stride]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    return _model(nodes, dims, [numpy_helper.from_array(w, "W")])


def flatten_model(dims):
    """x [1, seq, 4] -> Shape -> Reshape to [1, -1] -> Relu: the flat size folds at the stored seq."""
    nodes = [helper.make_node("Reshape", ["x", "s"], ["f"]), helper.make_node("Relu", ["f"], ["y"])]
    return _model(nodes, dims, [numpy_helper.from_array(np.array([1, -1], np.int64), "s")])


def offset_model(dims):
    """x + ConstantOfShape(Shape(x), 0.5): the offset folds into a constant of the stored size."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["c"],
                              value=numpy_helper.from_array(np.array([0.5], np.float32))),
             helper.make_node("Add", ["x", "c"], ["y"])]
    return _model(nodes, dims, [])


def _zero_dim(model, axis):
    d = model.graph.input[0].type.tensor_type.shape.dim[axis]
    d.Clear()
    d.dim_value = 0
    return model


def _onnx_run(model, x):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _signature(tflite, which="inputs"):
    sg = read_model(tflite).subgraphs[0]
    t = sg.tensors[getattr(sg, which)[0]]
    return tuple(t.shape), tuple(t.shape_signature) if t.shape_signature is not None else None


def _run_resized(tflite, x, backend):
    from edge_sdk.runtime.interpreter import Interpreter

    it = Interpreter(model_content=tflite, backend=backend)
    it.resize_tensor_input(0, x.shape, strict=True)  # strict: only the signature's -1 axes may change
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def _run_litert(tflite, x):
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=tflite, num_threads=1)
    it.resize_tensor_input(0, x.shape, strict=True)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


@pytest.mark.parametrize("dims, given, stored, signature", [
    (["batch", 4, 16], None, (1, 4, 16), (-1, 4, 16)),
    ([1, "seq", 16], None, (1, 1, 16), (1, -1, 16)),  # no shape given: stored as 1
    ([1, "seq", 16], {"x": (1, 10, 16)}, (1, 10, 16), (1, -1, 16)),
    ([None, "seq", 16], {"x": (2, 10, 16)}, (2, 10, 16), (-1, -1, 16)),  # a dim without a name
    ("zero", {"x": (1, 6, 16)}, (1, 6, 16), (1, -1, 16)),  # a dim of 0
])
def test_named_dims_are_minus_one_and_the_model_runs_resized(dims, given, stored, signature, runtime):
    model = _zero_dim(matmul_model([1, 5, 16]), 1) if dims == "zero" else matmul_model(dims)
    result = convert(model, quantize="none", input_shapes=given)
    assert _signature(result.tflite) == (stored, signature)
    assert _signature(result.tflite, "outputs")[1] == signature[:-1] + (8,)
    assert any("-1 in the shape signature" in n for n in result.report["notes"])
    assert "dims       dim '" in format_conversion(result.report)  # `edge convert` prints it
    for n in (3, 17):
        shape = tuple(n if s < 0 else s for s in signature)
        x = np.random.default_rng(n).standard_normal(shape).astype(np.float32)
        reference = matmul_model([1, None, 16]) if dims == "zero" else model  # onnxruntime takes a 0 literally
        np.testing.assert_allclose(_run_resized(result.tflite, x, runtime), _onnx_run(reference, x), rtol=1e-5,
                                   atol=1e-5)


@pytest.mark.parametrize("stride", [1, 2])
def test_an_image_model_resizes_in_litert_and_ours(stride):
    """N, H, W named; converted at 8x8 and run at 9x9 (odd) and 16x12: a stride-2 conv's pads stay explicit."""
    model = conv_model(["N", 3, "H", "W"], stride)
    result = convert(model, quantize="none", input_shapes={"x": (1, 3, 8, 8)})
    stored, sig = _signature(result.tflite)
    assert sig is not None and sorted(sig).count(-1) == 3, sig  # N, H, W (NCHW or NHWC at the boundary)
    for h, w in ((9, 9), (16, 12)):
        x = np.random.default_rng(h).standard_normal((2, 3, h, w)).astype(np.float32)
        x_in = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if stored[-1] == 3 else x  # an NHWC model input
        want = _onnx_run(model, x).reshape(-1)
        np.testing.assert_allclose(_run_resized(result.tflite, x_in, "python").reshape(-1), want, rtol=1e-4,
                                   atol=1e-4)
        np.testing.assert_allclose(_run_litert(result.tflite, x_in).reshape(-1), want, rtol=1e-4, atol=1e-4)


def test_a_stride_two_conv_converted_at_an_odd_size_keeps_h_and_w_static():
    """At 9x9 ONNX's pads (1, 1) are TFLite's SAME padding; at an even size SAME pads (0, 1): the converted model
    would compute another thing there, so H and W stay static; N, probed on its own, resizes."""
    model = conv_model(["N", 3, "H", "W"], 2)
    result = convert(model, quantize="none", input_shapes={"x": (1, 3, 9, 9)})
    stored, sig = _signature(result.tflite)
    assert sig is not None and sig[0] == -1 and sorted(sig[1:]) == [3, 9, 9], sig
    static = [n for n in result.report["notes"] if "does not resize" in n]
    assert len(static) == 2 and all("static at 9" in n for n in static), static
    x = np.random.default_rng(2).standard_normal((3, 3, 9, 9)).astype(np.float32)
    x_in = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if stored[-1] == 3 else x
    np.testing.assert_allclose(_run_resized(result.tflite, x_in, "python").reshape(-1),
                               _onnx_run(model, x).reshape(-1), rtol=1e-4, atol=1e-4)


def test_a_flattening_reshape_resizes():
    model = flatten_model([1, "seq", 4])
    result = convert(model, quantize="none", input_shapes={"x": (1, 6, 4)})
    assert _signature(result.tflite) == ((1, 6, 4), (1, -1, 4))
    x = np.random.default_rng(0).standard_normal((1, 11, 4)).astype(np.float32)
    np.testing.assert_allclose(_run_resized(result.tflite, x, "python"), _onnx_run(model, x), rtol=1e-6)


def test_a_model_that_folds_the_size_stays_static_and_says_why():
    model = offset_model([1, "seq", 4])
    result = convert(model, quantize="none", input_shapes={"x": (1, 6, 4)})
    assert _signature(result.tflite) == ((1, 6, 4), None)
    note = next(n for n in result.report["notes"] if "does not resize" in n)
    assert "[1, seq, 4]" in note and "ADD" in note, note
    x = np.random.default_rng(0).standard_normal((1, 6, 4)).astype(np.float32)
    np.testing.assert_allclose(_run_resized(result.tflite, x, "python"), _onnx_run(model, x), rtol=1e-6)


def test_a_placeholder_dim_that_does_not_resize_asks_for_the_shape():
    with pytest.raises(ConversionError) as info:
        convert(offset_model([1, "seq", 4]), quantize="none")
    message = str(info.value)
    assert "--input-shape x:1,D,4" in message and "ADD" in message, message


def test_int8_keeps_the_signature_and_runs_resized():
    model = matmul_model([1, "seq", 16])
    calib = np.random.default_rng(5).standard_normal((24, 1, 10, 16)).astype(np.float32)
    result = convert(model, quantize="int8", calibration=calib, input_shapes={"x": (1, 10, 16)}, io="float32",
                     allow_lossy=True)
    assert _signature(result.tflite)[1] == (1, -1, 16)
    x = np.random.default_rng(6).standard_normal((1, 23, 16)).astype(np.float32)
    got = _run_resized(result.tflite, x, "python")
    want = _onnx_run(model, x)
    assert got.shape == want.shape
    snr = 10 * np.log10(np.sum(want ** 2) / np.sum((got - want) ** 2))
    assert snr > 25, snr


def test_a_torch_style_classifier_with_a_dynamic_batch_runs_at_batch_five():
    """torch.onnx's flatten: Shape -> Gather(0) -> Unsqueeze -> Concat([n, -1]) -> Reshape before a Gemm. Folded at
    batch 1 the RESHAPE holds [1, 256]; the probe at batch 2 frees its batch axis (-1), and the model runs at batch 5
    in both edge-sdk runtimes and LiteRT as onnxruntime does."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array((rng.standard_normal((10, 256)) * 0.05).astype(np.float32), "G"),
             numpy_helper.from_array(rng.standard_normal(10).astype(np.float32), "B"),
             numpy_helper.from_array(np.array(0, np.int64), "i0"),
             numpy_helper.from_array(np.array([0], np.int64), "ax"),
             numpy_helper.from_array(np.array([-1], np.int64), "m1")]
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Shape", ["r"], ["s"]), helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "ax"], ["nu"]),
             helper.make_node("Concat", ["nu", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["r", "shape"], ["f"]),
             helper.make_node("Gemm", ["f", "G", "B"], ["y"], transB=1)]
    model = _model(nodes, ["batch", 3, 8, 8], inits)
    result = convert(model, quantize="none")
    stored, sig = _signature(result.tflite)
    assert sig == (-1,) + tuple(stored[1:]), sig
    x = rng.standard_normal((5, 3, 8, 8)).astype(np.float32)
    x_in = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if stored[-1] == 3 else x
    want = _onnx_run(model, x)
    for got in (_run_resized(result.tflite, x_in, "python"), _run_resized(result.tflite, x_in, "c"),
                _run_litert(result.tflite, x_in)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
