"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR against TFLite Micro (LiteRT's reference kernels for the types
TFLM lacks), bit for bit for integers, 1e-5 for float; up- and down-scaling, align_corners and
half_pixel_centers."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from edge_sdk.runtime.kernels import resize as Z
from edge_sdk.runtime.kernels.node import Node, TensorInfo
from edge_sdk.model.types import numpy_dtype
from tests.nodes import random_full_range
from tests.oprunner import T, check_op, op_model

RNG = np.random.default_rng(99)

SIZES = [((4, 4), (8, 8)), ((5, 3), (2, 7)), ((3, 5), (3, 5)), ((6, 6), (4, 4)), ((2, 3), (9, 1)), ((1, 1), (3, 2))]
MODES = [(False, False), (True, False), (False, True)]


def rand(shape, type_):
    return random_full_range(RNG, shape, type_)


def case(op, type_, in_hw, out_hw, modes, peer="tflm", version=1, feeds=None):
    ac, hp = modes
    q = {"scale": 0.1, "zero_point": 3} if type_ in ("INT8", "UINT8") else {}
    if type_ == "INT16":
        q = {"scale": 0.001, "zero_point": 0}
    x = T((2, *in_hw, 3), type_, **q)
    size = T((2,), "INT32", data=np.array(out_hw, np.int32))
    y = T((2, *out_hw, 3), type_, **q)
    model = op_model(op, [x, size], [y], {"align_corners": ac, "half_pixel_centers": hp}, version=version)
    feeds = feeds or [rand(x.shape, type_)]
    tol = {"rtol": 1e-5, "atol": 1e-6} if type_ == "FLOAT32" else {}
    return check_op(model, feeds, peer=peer, **tol)[0], feeds[0]


@pytest.mark.parametrize("in_hw,out_hw", SIZES)
@pytest.mark.parametrize("modes", MODES)
@pytest.mark.parametrize("type_", ["INT8", "INT16", "FLOAT32"])
def test_nearest(in_hw, out_hw, modes, type_):
    case("RESIZE_NEAREST_NEIGHBOR", type_, in_hw, out_hw, modes, version=3)


def test_nearest_is_a_gather():
    out, x = case("RESIZE_NEAREST_NEIGHBOR", "INT8", (2, 3), (4, 6), (False, False))
    np.testing.assert_array_equal(out, x.repeat(2, axis=1).repeat(2, axis=2))


@pytest.mark.parametrize("in_hw,out_hw", SIZES)
@pytest.mark.parametrize("modes", MODES)
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32"])
def test_bilinear(in_hw, out_hw, modes, type_):
    case("RESIZE_BILINEAR", type_, in_hw, out_hw, modes, version=3)


def test_bilinear_int8_rounding_of_negative_halves():
    # Values whose interpolations land exactly on .5 (positive and negative): the rounding direction shows.
    x = np.array([-3, -2, 1, 2, -1, 0, 5, -6], np.int8).reshape(1, 2, 4, 1).repeat(3, axis=3)
    x = np.concatenate([x, -x], axis=0)
    for modes in MODES:
        case("RESIZE_BILINEAR", "INT8", (2, 4), (4, 8), modes, feeds=[x])
        case("RESIZE_BILINEAR", "INT8", (2, 4), (3, 5), modes, feeds=[x])


@pytest.mark.parametrize("in_hw,out_hw", SIZES[:4])
@pytest.mark.parametrize("modes", MODES)
def test_bilinear_int16_vs_litert(in_hw, out_hw, modes):
    case("RESIZE_BILINEAR", "INT16", in_hw, out_hw, modes, peer="litert", version=4)


def test_nearest_uint8_vs_litert():
    case("RESIZE_NEAREST_NEIGHBOR", "UINT8", (3, 4), (5, 7), (False, True), peer="litert", version=1)


def test_bilinear_refuses_both_modes_and_runtime_size():
    def prepare(inputs, options):
        infos = [TensorInfo(i, f"t{i}", s.type, numpy_dtype(s.type), s.shape, data=s.data) for i, s in enumerate(inputs)]
        out = TensorInfo(9, "y", "INT8", np.dtype(np.int8), (1,))
        return Z.prepare_resize_bilinear(Node(0, 0, "RESIZE_BILINEAR", 1, options, None, infos, [out]))

    x = T((1, 2, 2, 1), "INT8")
    with pytest.raises(ModelError):
        prepare([x, T((2,), "INT32", data=np.array([4, 4], np.int32))], {"align_corners": True, "half_pixel_centers": True})
    with pytest.raises(ModelError):  # UnsupportedOpError is a ModelError
        prepare([x, T((2,), "INT32")], {})
