"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR on both runtimes (the ``runtime`` grid: our Python kernels and
firmware_c/src/kernels/resize.c) against TFLite Micro (LiteRT's reference kernels for the types TFLM lacks: int16
bilinear, uint8 nearest), bit for bit for integers, 1e-5 for float (and the C runtime's float equal to Python's bit
for bit); up- and down-scaling, align_corners and half_pixel_centers; the same refusals on both."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from edge_sdk.model.types import numpy_dtype
from edge_sdk.runtime.kernels import resize as Z
from edge_sdk.runtime.kernels.node import Node, TensorInfo
from tests.conftest import needs_c_runtime
from tests.nodes import random_full_range
from tests.oprunner import T, check_on, op_model, refused_on

SIZES = [((4, 4), (8, 8)), ((5, 3), (2, 7)), ((3, 5), (3, 5)), ((6, 6), (4, 4)), ((2, 3), (9, 1)), ((1, 1), (3, 2))]
MODES = [(False, False), (True, False), (False, True)]


def case(runtime, rng, op, type_, in_hw, out_hw, modes, peer="tflm", version=3, feeds=None):
    """One resize model on ``runtime`` against ``peer``: (its output, its input)."""
    ac, hp = modes
    q = {"scale": 0.1, "zero_point": 3} if type_ in ("INT8", "UINT8") else {}
    if type_ == "INT16":
        q = {"scale": 0.001, "zero_point": 0}
    x = T((2, *in_hw, 3), type_, **q)
    size = T((2,), "INT32", data=np.array(out_hw, np.int32))
    y = T((2, *out_hw, 3), type_, **q)
    model = op_model(op, [x, size], [y], {"align_corners": ac, "half_pixel_centers": hp}, version=version)
    feeds = feeds or [random_full_range(rng, x.shape, type_)]
    tol = {"rtol": 1e-5, "atol": 1e-6} if type_ == "FLOAT32" else {}
    return check_on(runtime, model, feeds, peer=peer, c_equals_python=True, **tol)[0], feeds[0]


@pytest.mark.parametrize("in_hw,out_hw", SIZES)
@pytest.mark.parametrize("modes", MODES)
@pytest.mark.parametrize("type_", ["INT8", "INT16", "FLOAT32"])
def test_nearest(runtime, rng, in_hw, out_hw, modes, type_):
    case(runtime, rng, "RESIZE_NEAREST_NEIGHBOR", type_, in_hw, out_hw, modes)


def test_nearest_is_a_gather(runtime, rng):
    out, x = case(runtime, rng, "RESIZE_NEAREST_NEIGHBOR", "INT8", (2, 3), (4, 6), (False, False))
    np.testing.assert_array_equal(out, x.repeat(2, axis=1).repeat(2, axis=2))


def test_nearest_uint8_vs_litert(runtime, rng):
    case(runtime, rng, "RESIZE_NEAREST_NEIGHBOR", "UINT8", (3, 4), (5, 7), (False, True), peer="litert", version=1)


def test_nearest_uint8_vs_litert_and_a_gather(runtime, rng):
    out, x = case(runtime, rng, "RESIZE_NEAREST_NEIGHBOR", "UINT8", (3, 4), (6, 8), (False, False), peer="litert",
                  version=1)
    np.testing.assert_array_equal(out, x.repeat(2, axis=1).repeat(2, axis=2))


@pytest.mark.parametrize("in_hw,out_hw", SIZES)
@pytest.mark.parametrize("modes", MODES)
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32"])
def test_bilinear(runtime, rng, in_hw, out_hw, modes, type_):
    case(runtime, rng, "RESIZE_BILINEAR", type_, in_hw, out_hw, modes)


def test_bilinear_int8_rounding_of_negative_halves(runtime, rng):
    # Values whose interpolations land exactly on .5 (positive and negative): the rounding direction shows.
    x = np.array([-3, -2, 1, 2, -1, 0, 5, -6], np.int8).reshape(1, 2, 4, 1).repeat(3, axis=3)
    x = np.concatenate([x, -x], axis=0)
    for modes in MODES:
        case(runtime, rng, "RESIZE_BILINEAR", "INT8", (2, 4), (4, 8), modes, feeds=[x])
        case(runtime, rng, "RESIZE_BILINEAR", "INT8", (2, 4), (3, 5), modes, feeds=[x])


@pytest.mark.parametrize("in_hw,out_hw", SIZES[:4])
@pytest.mark.parametrize("modes", MODES)
def test_bilinear_int16_vs_litert(runtime, rng, in_hw, out_hw, modes):
    case(runtime, rng, "RESIZE_BILINEAR", "INT16", in_hw, out_hw, modes, peer="litert", version=4)


def test_refusals_are_named(runtime):
    x = T((1, 2, 2, 1), "INT8", scale=0.1, zero_point=0)
    y = T((1, 4, 4, 1), "INT8", scale=0.1, zero_point=0)
    size = T((2,), "INT32", data=np.array([4, 4], np.int32))
    both = op_model("RESIZE_BILINEAR", [x, size], [y], {"align_corners": True, "half_pixel_centers": True})
    refused_on(runtime, both, [np.zeros((1, 2, 2, 1), np.int8)], ModelError, "cannot both be set")
    runtime_size = op_model("RESIZE_BILINEAR", [x, T((2,), "INT32")], [y])
    # UnsupportedOpError (Python) is a ModelError
    refused_on(runtime, runtime_size, [np.zeros((1, 2, 2, 1), np.int8), np.array([4, 4], np.int32)], ModelError,
               "computed at run time")


def test_bilinear_prepare_refuses_both_modes_and_runtime_size():
    """Python's prepare itself (no model): the same two refusals."""
    def prepare(inputs, options):
        infos = [TensorInfo(i, f"t{i}", s.type, numpy_dtype(s.type), s.shape, data=s.data) for i, s in enumerate(inputs)]
        out = TensorInfo(9, "y", "INT8", np.dtype(np.int8), (1,))
        return Z.prepare_resize_bilinear(Node(0, 0, "RESIZE_BILINEAR", 1, options, None, infos, [out]))

    x = T((1, 2, 2, 1), "INT8")
    with pytest.raises(ModelError):
        prepare([x, T((2,), "INT32", data=np.array([4, 4], np.int32))], {"align_corners": True, "half_pixel_centers": True})
    with pytest.raises(ModelError):  # UnsupportedOpError is a ModelError
        prepare([x, T((2,), "INT32")], {})


@needs_c_runtime
def test_palm_detection_runs_in_c_and_matches_python_and_litert():
    # MediaPipe's palm detector (float, RESIZE_BILINEAR, float16 weights behind DEQUANTIZE) through the C runtime
    from edge_sdk import Interpreter
    from tests.conftest import shared_model
    from tests.peers import run_litert

    path = shared_model("mediapipe/palm_detection_lite.tflite")
    x = np.random.default_rng(7).uniform(-1, 1, (1, 192, 192, 3)).astype(np.float32)
    outs = {}
    for backend in ("python", "c"):
        interp = Interpreter(model_path=str(path), backend=backend)
        interp.allocate_tensors()
        interp.set_tensor(interp.get_input_details()[0]["index"], x)
        interp.invoke()
        outs[backend] = [np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()]
    theirs = run_litert(path.read_bytes(), [x], reference=True, isolate=True)
    for c, py, ref in zip(outs["c"], outs["python"], theirs):
        scale = float(np.abs(ref).max())
        np.testing.assert_allclose(c, py, rtol=0, atol=1e-5 * scale)
        np.testing.assert_allclose(c, ref, rtol=0, atol=1e-5 * scale)
