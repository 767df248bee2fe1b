"""AVERAGE_POOL_2D and MAX_POOL_2D against TFLite Micro: int8/int16 bit for bit, float within 1e-5.

The cases cover SAME padding (averages over windows that overlap the border count only the cells inside the
input), VALID padding, strides that differ from the filter size, every fused activation, and a window sum
whose rounding is exercised on both signs. A direct check of the average's rounding rule against a literal
transcription of TFLM's integer formula needs no peer.

Both runtimes (the ``runtime`` grid: our Python kernels and firmware_c's), the peer run once per case
(tests.oprunner.check_on); inputs from the test's ``rng`` (the same on both runtimes)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from edge_sdk.runtime.kernels import pooling
from edge_sdk.runtime.kernels.conv import window_geometry
from edge_sdk.runtime.kernels.node import Node, TensorInfo
from tests.oprunner import T, check_on, op_model, run_on

CASES = [
    # type, (h, w, c), (fh, fw), (sh, sw), padding, activation
    ("INT8", (7, 7, 3), (3, 3), (2, 2), "SAME", "NONE"),
    ("INT8", (8, 6, 2), (2, 3), (2, 1), "VALID", "RELU"),
    ("INT8", (6, 6, 4), (4, 4), (1, 1), "SAME", "RELU6"),
    ("INT16", (7, 5, 3), (3, 3), (1, 2), "SAME", "RELU_N1_TO_1"),
    ("INT16", (6, 6, 2), (2, 2), (2, 2), "VALID", "NONE"),
    ("FLOAT32", (7, 7, 3), (3, 3), (2, 2), "SAME", "RELU6"),
    ("FLOAT32", (5, 8, 2), (2, 3), (1, 2), "VALID", "NONE"),
]


def _model(op, case):
    type_, (h, w, c), (fh, fw), (sh, sw), padding, act = case
    oh, _ = window_geometry(None, padding, sh, 1, h, fh)
    ow, _ = window_geometry(None, padding, sw, 1, w, fw)
    if type_ == "FLOAT32":
        x, y = T((2, h, w, c), type_), T((2, oh, ow, c), type_)
    else:
        scale, zp = (0.02, -5) if type_ == "INT8" else (0.0004, 0)
        x, y = T((2, h, w, c), type_, scale=scale, zero_point=zp), T((2, oh, ow, c), type_, scale=scale, zero_point=zp)
    opts = dict(padding=padding, stride_h=sh, stride_w=sw, filter_height=fh, filter_width=fw,
                fused_activation_function=act)
    return op_model(op, [x], [y], options=opts, version=2)


def _feed(case, rng):
    type_, (h, w, c) = case[0], case[1]
    if type_ == "FLOAT32":
        return rng.uniform(-8, 8, (2, h, w, c)).astype(np.float32)
    info = np.iinfo(np.int8 if type_ == "INT8" else np.int16)
    return rng.integers(info.min, info.max, (2, h, w, c), endpoint=True).astype(info.dtype)


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[4]}-f{c[2]}-s{c[3]}-{c[5]}")
def test_pool_matches_tflm(runtime, op, case):
    rng = np.random.default_rng(zlib.crc32(repr((op, case)).encode()))
    model = _model(op, case)
    tol = dict(rtol=1e-5, atol=1e-6) if case[0] == "FLOAT32" else {}
    for _ in range(2):
        check_on(runtime, model, [_feed(case, rng)], **tol)


def test_quantized_pool_needs_matching_quantization(runtime):
    x = T((1, 4, 4, 1), "INT8", scale=0.1, zero_point=0)
    y = T((1, 2, 2, 1), "INT8", scale=0.2, zero_point=0)
    model = op_model("AVERAGE_POOL_2D", [x], [y], options=dict(padding="VALID", stride_h=2, stride_w=2,
                                                                filter_height=2, filter_width=2))
    with pytest.raises(ModelError, match="must match"):
        run_on(runtime, model, [np.zeros((1, 4, 4, 1), np.int8)])


def test_average_rounding_is_half_away_from_zero():
    """TFLM: acc > 0 ? (acc + n/2) / n : (acc - n/2) / n with C's truncating division."""
    values = np.array([[1, 2], [-1, -2], [1, 0], [-1, 0], [3, 4], [-3, -4], [127, 127], [-128, -127]], np.int8)
    x = values.reshape(1, 1, len(values) * 2, 1)
    info = TensorInfo(0, "x", "INT8", np.dtype(np.int8), x.shape, np.array([0.1], np.float32), np.array([0]))
    out_info = TensorInfo(1, "y", "INT8", np.dtype(np.int8), (1, 1, len(values), 1), np.array([0.1], np.float32),
                          np.array([0]))
    node = Node(0, 0, "AVERAGE_POOL_2D", 1, dict(padding="VALID", stride_h=1, stride_w=2, filter_height=1,
                                                  filter_width=2, fused_activation_function="NONE"), None,
                [info], [out_info])
    run = pooling.prepare_average_pool_2d(node)
    out = np.zeros((1, 1, len(values), 1), np.int8)
    run([x], [out])

    def tflm(acc, n):
        q = (acc + n // 2) if acc > 0 else (acc - n // 2)
        return int(q / n)  # truncation toward zero, as C

    want = [tflm(int(a) + int(b), 2) for a, b in values]
    assert out.ravel().tolist() == want
