"""MEAN, SUM, REDUCE_MAX and ARG_MAX against TFLite Micro, bit for bit (float within 1e-5), on one-op models.

Quantized MEAN is the interesting one: TFLM folds 1/n into the requantization multiplier (see reduce.py), so
the cases vary the element count n (powers of two and not), the in/out scale ratio and the zero points.

Both runtimes (the ``runtime`` grid: our Python kernels and firmware_c's), the peer run once per case
(tests.oprunner.check_on); inputs from the test's ``rng`` (the same on both runtimes)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from edge_sdk.errors import UnsupportedOpError
from edge_sdk.runtime.kernels import reduce as R
from tests.nodes import make_node, random_full_range
from tests.oprunner import T, check_on, op_model

PREPARE = {"MEAN": R.prepare_mean, "SUM": R.prepare_sum, "REDUCE_MAX": R.prepare_reduce_max,
           "ARG_MAX": R.prepare_arg_max}


def our_shape(op, inputs, out, options):
    node = make_node(op, inputs, [out], options)
    PREPARE[op](node)
    return node.output_shapes[0]


def rand(rng, shape, type_):
    return random_full_range(rng, shape, type_)


def run(runtime, op, x, axes, out, keep_dims, peer="tflm", version=1, feeds=None, rtol=0.0, atol=0.0):
    a = T((len(axes),), "INT32", data=np.array(axes, np.int32))
    opts = {"keep_dims": keep_dims} if op != "ARG_MAX" else {"output_type": out.type}
    shape = our_shape(op, [x, a], out, opts)
    y = T(shape, out.type, out.scale, out.zero_point)
    model = op_model(op, [x, a], [y], opts, version=version)
    if feeds is None:  # seeded by the case: the same input on both runtimes, whatever ran before
        rng = np.random.default_rng(zlib.crc32(repr((op, x.shape, x.type, axes, keep_dims, out.type)).encode()))
        feeds = [rand(rng, x.shape, x.type)]
    return check_on(runtime, model, feeds, peer=peer, rtol=rtol, atol=atol), feeds


MEAN_SHAPES = [
    ((1, 7, 7, 16), [1, 2], True),  # mobilenet_v2's global average pool
    ((1, 7, 7, 16), [2, 1], False),
    ((2, 3, 5, 4), [-1], False),
    ((2, 3, 5, 4), [0, 2], True),
    ((2, 3, 5, 4), [1, 1, -3], False),  # duplicates and negatives resolve to axis 1
    ((3, 10), [0, 1], False),
    ((4, 8, 8, 3), [1, 2], True),  # n = 64, a power of two
    ((1, 33, 9, 2), [1, 2], True),  # n = 297
]
SCALES = [(0.05, -3, 0.05, -3), (0.02, 5, 0.01, -10), (0.1, -128, 0.003, 2), (0.007, 0, 0.2, 7)]


@pytest.mark.parametrize("shape,axes,keep", MEAN_SHAPES)
@pytest.mark.parametrize("scales", range(len(SCALES)))
def test_mean_int8(runtime, shape, axes, keep, scales):
    si, zi, so, zo = SCALES[scales]
    run(runtime, "MEAN", T(shape, "INT8", si, zi), axes, T((1,), "INT8", so, zo), keep, version=2)


@pytest.mark.parametrize("shape,axes,keep", MEAN_SHAPES[:5])
@pytest.mark.parametrize("ratio", [1.0, 2.5, 0.3])
def test_mean_int16(runtime, shape, axes, keep, ratio):
    run(runtime, "MEAN", T(shape, "INT16", 0.001, 0), axes, T((1,), "INT16", 0.001 / ratio, 0), keep, version=3)


@pytest.mark.parametrize("shape,axes,keep", MEAN_SHAPES)
def test_mean_float(runtime, shape, axes, keep):
    run(runtime, "MEAN", T(shape, "FLOAT32"), axes, T((1,), "FLOAT32"), keep, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["MEAN", "SUM"])
def test_float_mean_and_sum_are_litert_reference_bits(runtime, op):
    """A 128x128 average of values far from 0 (pose_landmark_full's Identity_2 drifted 6.6e-4 of its range with a
    sum in double): summed in float32 in the input's order, as LiteRT's reference kernels, the same bits."""
    rng = np.random.default_rng(7)
    feeds = [(5.0 + rng.standard_normal((1, 128, 128, 3))).astype(np.float32)]
    run(runtime, op, T((1, 128, 128, 3), "FLOAT32"), [1, 2], T((1,), "FLOAT32"), True, peer="litert", feeds=feeds)


def test_mean_int8_numpy_model(runtime, rng):
    # An independent reading of the arithmetic for one case: the multiplier with 1/n folded in.
    x = rand(rng, (1, 3, 3, 2), "INT8")
    (ours,), _ = run(runtime, "MEAN", T(x.shape, "INT8", 0.05, 1), [1, 2], T((1,), "INT8", 0.02, -2), True, feeds=[x])
    from edge_sdk.runtime.kernels.quant import multiply_by_quantized_multiplier, quantize_multiplier

    m, s = quantize_multiplier(0.05 / 0.02)
    n = 9
    fold = n.bit_length() - 1
    m2, s2 = (m << fold) // n, s - fold
    acc = x.astype(np.int64).sum(axis=(1, 2), keepdims=True) - 1 * n
    want = np.clip(multiply_by_quantized_multiplier(acc, m2, s2) - 2, -128, 127)
    np.testing.assert_array_equal(ours, want)


@pytest.mark.parametrize("shape,axes,keep", MEAN_SHAPES[:6])
@pytest.mark.parametrize("type_", ["INT8", "INT16", "FLOAT32"])
def test_sum(runtime, shape, axes, keep, type_):
    if type_ == "FLOAT32":
        run(runtime, "SUM", T(shape, type_), axes, T((1,), type_), keep, rtol=1e-5, atol=1e-5)
    elif type_ == "INT8":
        run(runtime, "SUM", T(shape, type_, 0.01, 3), axes, T((1,), type_, 0.5, -4), keep)
    else:
        run(runtime, "SUM", T(shape, type_, 0.0005, 0), axes, T((1,), type_, 0.02, 0), keep)


@pytest.mark.parametrize("shape,axes,keep", MEAN_SHAPES[:6])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32"])
def test_reduce_max(runtime, shape, axes, keep, type_):
    q = (0.1, 4) if type_ == "INT8" else (None, None)
    (ours,), (x,) = run(runtime, "REDUCE_MAX", T(shape, type_, *q), axes, T((1,), type_, *q), keep, version=2)
    ax = tuple(sorted({a % len(shape) for a in axes}))
    np.testing.assert_array_equal(ours, x.max(axis=ax, keepdims=keep))


def test_reduce_max_int16_vs_litert(runtime):
    run(runtime, "REDUCE_MAX", T((2, 3, 4), "INT16", 0.01, 0), [1], T((1,), "INT16", 0.01, 0), False, peer="litert", version=3)


def test_reduce_max_refuses_requantization():
    x, a = T((2, 3), "INT8", 0.1, 0), T((1,), "INT32", data=np.array([1], np.int32))
    with pytest.raises(UnsupportedOpError):
        our_shape("REDUCE_MAX", [x, a], T((1,), "INT8", 0.2, 0), {"keep_dims": False})


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32"])
def test_arg_max(runtime, axis, type_, rng):
    shape = (3, 4, 5)
    x = rand(rng, shape, type_)
    if type_ == "INT8":
        x = (x // 40).astype(np.int8)  # many ties: the first index must win
    (ours,), _ = run(runtime, "ARG_MAX", T(shape, type_), [axis], T((1,), "INT32"), False, version=2, feeds=[x])
    np.testing.assert_array_equal(ours, np.argmax(x, axis=axis))


def test_arg_max_int64_output_vs_litert(runtime):
    (ours,), _ = run(runtime, "ARG_MAX", T((2, 6), "FLOAT32"), [1], T((1,), "INT64"), False, peer="litert", version=2)
    assert ours.dtype == np.int64


def test_arg_max_nan(runtime):
    x = np.array([[np.nan, 1.0, 3.0, 3.0], [np.nan, np.nan, np.nan, np.nan], [np.nan, -np.inf, np.nan, -np.inf],
                  [2.0, np.nan, 5.0, np.nan]], np.float32)
    (ours,), _ = run(runtime, "ARG_MAX", T(x.shape, "FLOAT32"), [1], T((1,), "INT32"), False, version=2, feeds=[x])
    np.testing.assert_array_equal(ours, [0, 0, 0, 2])  # TFLM compares with a plain '>'
