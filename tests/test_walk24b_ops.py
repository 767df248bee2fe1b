"""Issue 24 walk (part b), op level: a float DIV of 0 / 0 printed numpy's RuntimeWarning to the terminal; MIRROR_PAD
and ABS had no int8 rule."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.oprunner import T, op_model, run_on, run_ours, run_peer


def test_float_div_of_zero_by_zero_is_nan_without_a_warning():
    model = op_model("DIV", [T([4], "FLOAT32"), T([4], "FLOAT32")], [T([4], "FLOAT32")],
                     options={"fused_activation_function": "NONE"})
    inputs = [np.array([0.0, 1.0, -1.0, 6.0], np.float32), np.array([0.0, 0.0, 0.0, 3.0], np.float32)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (invalid value / divide by zero) fails the test
        (ours,) = run_ours(model, inputs)
    (litert,) = run_peer(model, inputs, "litert")
    # 0/0 is NaN on both; x/0 is inf here, +-FLT_MAX in LiteRT (it clamps an unbounded activation: NOTES.md)
    assert np.isnan(ours[0]) and np.isnan(litert[0])
    assert ours[1] >= litert[1] > 3e38 and ours[2] <= litert[2] < -3e38 and ours[3] == litert[3] == 2.0


# ---------------------------------------------------------------- int8 rules of MIRROR_PAD, ABS
# Silero-style front ends reflect-pad the audio and take a magnitude: precision int8 refused such models
# ("no int8 rule for this op") unless the user excluded them, though LiteRT and both runtimes run these int8.

def _front_end():
    """x [1, 64] -> Pad reflect 8 -> Abs -> Add 0.01 -> [1, 80]"""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto as TP
    from onnx import helper, numpy_helper

    inits = [numpy_helper.from_array(np.array([0, 8, 0, 8], np.int64), "pads"),
             numpy_helper.from_array(np.array(0.01, np.float32), "eps")]
    nodes = [helper.make_node("Pad", ["x", "pads"], ["padded"], mode="reflect"),
             helper.make_node("Abs", ["padded"], ["mag"]),
             helper.make_node("Add", ["mag", "eps"], ["logmag"])]
    graph = helper.make_graph(nodes, "front", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("logmag", TP.FLOAT, [1, 80])], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    return proto


@pytest.fixture(scope="module")
def front_int8():
    from converters import convert

    calib = np.random.default_rng(4).standard_normal((32, 1, 64)).astype(np.float32)
    return convert(_front_end(), quantize="int8", calibration=calib, precision="int8", io="int8", allow_lossy=True)


def test_mirror_pad_and_abs_quantize_to_int8(front_int8):
    model = front_int8.model
    sg = model.subgraphs[0]
    kinds = {model.op_name(op): sg.tensors[op.outputs[0]].type for op in sg.operators}
    assert kinds["MIRROR_PAD"] == kinds["ABS"] == kinds["ADD"] == "INT8", kinds


def test_int8_front_end_runs_as_litert_on_both_runtimes(front_int8, runtime):
    x = np.random.default_rng(9).integers(-128, 128, (1, 64)).astype(np.int8)
    (ours,) = run_on(runtime, front_int8.tflite, [x])
    (litert,) = run_peer(front_int8.tflite, [x], "litert")
    # LiteRT's pip build requantizes ADD with one rounding, TFLM / ours with two: +-1 near ties (NOTES.md)
    assert np.abs(ours.astype(np.int32) - litert.astype(np.int32)).max() <= 1
