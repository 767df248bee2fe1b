"""The C runtime's RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (firmware_c/src/kernels/resize.c): single-op models
through Interpreter(backend="c"), bit-exact with our Python interpreter for every type, and with TFLM (int8, int16
nearest, float32: 1e-5) or LiteRT's reference kernels (int16 bilinear, uint8 nearest); up- and down-scaling,
align_corners and half_pixel_centers; refusals named."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from tests.conftest import needs_c_runtime
from tests.nodes import random_full_range
from tests.oprunner import T, assert_same, op_model, run_c, run_ours, run_peer

pytestmark = needs_c_runtime

RNG = np.random.default_rng(1601)
SIZES = [((4, 4), (8, 8)), ((5, 3), (2, 7)), ((3, 5), (3, 5)), ((6, 6), (4, 4)), ((2, 3), (9, 1)), ((1, 1), (3, 2))]
MODES = [(False, False), (True, False), (False, True)]


def _model(op, type_, in_hw, out_hw, modes, version):
    ac, hp = modes
    q = {"scale": 0.1, "zero_point": 3} if type_ in ("INT8", "UINT8") else {}
    if type_ == "INT16":
        q = {"scale": 0.001, "zero_point": 0}
    x = T((2, *in_hw, 3), type_, **q)
    size = T((2,), "INT32", data=np.array(out_hw, np.int32))
    y = T((2, *out_hw, 3), type_, **q)
    return op_model(op, [x, size], [y], {"align_corners": ac, "half_pixel_centers": hp}, version=version), x.shape


def _check(op, type_, in_hw, out_hw, modes, peer, version=3, feed=None):
    model, shape = _model(op, type_, in_hw, out_hw, modes, version)
    feeds = [feed if feed is not None else random_full_range(RNG, shape, type_)]
    c = run_c(model, feeds)
    assert_same(c, run_ours(model, feeds), what="C vs Python")  # bit for bit, float included
    tol = {"rtol": 1e-5, "atol": 1e-6} if type_ == "FLOAT32" else {}
    assert_same(c, run_peer(model, feeds, peer), what=f"C vs {peer}", **tol)
    return c[0], feeds[0]


@pytest.mark.parametrize("in_hw,out_hw", SIZES)
@pytest.mark.parametrize("modes", MODES)
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32"])
def test_bilinear(in_hw, out_hw, modes, type_):
    _check("RESIZE_BILINEAR", type_, in_hw, out_hw, modes, "tflm")


@pytest.mark.parametrize("in_hw,out_hw", SIZES[:4])
@pytest.mark.parametrize("modes", MODES)
def test_bilinear_int16_vs_litert(in_hw, out_hw, modes):
    _check("RESIZE_BILINEAR", "INT16", in_hw, out_hw, modes, "litert", version=4)


def test_bilinear_int8_rounding_of_negative_halves():
    x = np.array([-3, -2, 1, 2, -1, 0, 5, -6], np.int8).reshape(1, 2, 4, 1).repeat(3, axis=3)
    x = np.concatenate([x, -x], axis=0)
    for modes in MODES:
        _check("RESIZE_BILINEAR", "INT8", (2, 4), (4, 8), modes, "tflm", feed=x)
        _check("RESIZE_BILINEAR", "INT8", (2, 4), (3, 5), modes, "tflm", feed=x)


@pytest.mark.parametrize("in_hw,out_hw", SIZES)
@pytest.mark.parametrize("modes", MODES)
@pytest.mark.parametrize("type_", ["INT8", "INT16", "FLOAT32"])
def test_nearest(in_hw, out_hw, modes, type_):
    _check("RESIZE_NEAREST_NEIGHBOR", type_, in_hw, out_hw, modes, "tflm")


def test_nearest_uint8_vs_litert_and_a_gather():
    out, x = _check("RESIZE_NEAREST_NEIGHBOR", "UINT8", (3, 4), (6, 8), (False, False), "litert", version=1)
    np.testing.assert_array_equal(out, x.repeat(2, axis=1).repeat(2, axis=2))


def test_refusals_are_named():
    x = T((1, 2, 2, 1), "INT8", scale=0.1, zero_point=0)
    y = T((1, 4, 4, 1), "INT8", scale=0.1, zero_point=0)
    size = T((2,), "INT32", data=np.array([4, 4], np.int32))
    both = op_model("RESIZE_BILINEAR", [x, size], [y], {"align_corners": True, "half_pixel_centers": True})
    with pytest.raises(ModelError, match="cannot both be set"):
        run_c(both, [np.zeros((1, 2, 2, 1), np.int8)])
    runtime_size = op_model("RESIZE_BILINEAR", [x, T((2,), "INT32")], [y])
    with pytest.raises(ModelError, match="size computed at run time"):
        run_c(runtime_size, [np.zeros((1, 2, 2, 1), np.int8), np.array([4, 4], np.int32)])


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
