"""int8 GEMMs into few output channels (issue 26): at AVX-512 VNNI a 1x1 stride-1 CONV_2D or a FULLY_CONNECTED with
n <= 8 outputs and k a multiple of 4 up to 64 inputs runs vectors of 16 / n2 pixels x n2 channels (n2: n rounded up
to a power of two; edge_simd_qgemm_few) instead of a 16-channel block per pixel. Every level this CPU runs gives the
portable kernel's bytes and TFLM's, on shapes at and around the layout's edges: n 1..8 (n2 = n and n2 > n: lanes
dropped), k 4..64 (one group of pixels per vector up to eight), pixel counts not multiples of a vector (the last
vector's copy), zero points and activations at both ends."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model
from tests.peers import run_tflm
from tests.simd_common import levels  # noqa: F401 (a fixture)
from tests.simd_common import run_at_level

pytestmark = needs_c_runtime


def _same_everywhere(backend, levels, model, feeds):
    lib, lv = levels
    ref = run_at_level(backend, lib, 0, model, feeds)
    for level in lv:
        got = run_at_level(backend, lib, level, model, feeds)
        for r, g in zip(ref, got):
            np.testing.assert_array_equal(g, r, err_msg=f"SIMD level {level} differs from the portable kernel")
    for r, t in zip(ref, run_tflm(model, feeds)):
        np.testing.assert_array_equal(r, t, err_msg="portable kernel vs TFLM")
    return ref


def _weights(rng, o, c, shape):
    wscale = list(rng.uniform(0.3, 3, o) / (20 * np.sqrt(c)))
    wt = T(shape, "INT8", wscale, 0, quantized_dimension=0, data=rng.integers(-127, 128, shape, dtype=np.int8))
    b = T((o,), "INT32", [0.05 * s for s in wscale], 0, quantized_dimension=0,
          data=rng.integers(-300, 300, o).astype(np.int32))
    return wt, b


# (h, w, input channels, output channels, input zero point, output zero point, activation)
_CONV = [(96, 96, 16, 1, 3, -7, "NONE"), (5, 7, 16, 1, -128, 0, "RELU"), (3, 5, 4, 1, 127, -128, "NONE"),
         (7, 9, 8, 2, 0, 5, "RELU6"), (9, 5, 12, 3, -20, -128, "NONE"), (11, 3, 20, 5, 10, 127, "RELU"),
         (13, 13, 24, 6, -3, 0, "NONE"), (6, 11, 32, 7, 5, -3, "RELU6"), (17, 3, 44, 8, -128, 10, "NONE"),
         (9, 9, 64, 2, 127, -20, "NONE"), (5, 5, 64, 1, 1, 1, "RELU"), (1, 1, 16, 4, -5, 2, "NONE"),
         (2, 3, 28, 8, 0, 0, "NONE"), (48, 48, 16, 8, 3, -7, "RELU6"), (4, 4, 68, 2, 1, 1, "NONE")]


@pytest.mark.parametrize("h,w,c,o,zx,zy,act", _CONV, ids=[f"{h}x{w}x{c}-{o}-{a}" for h, w, c, o, _, _, a in _CONV])
def test_conv_1x1_few_channels_equal_portable_and_tflm(backend, levels, h, w, c, o, zx, zy, act):
    rng = np.random.default_rng(h * 1000 + w * 100 + c * 10 + o)
    wt, b = _weights(rng, o, c, (o, 1, 1, c))
    x, y = T((1, h, w, c), "INT8", 0.05, zx), T((1, h, w, o), "INT8", 0.05, zy)
    model = op_model("CONV_2D", [x, wt, b], [y], options={"padding": "SAME", "stride_h": 1, "stride_w": 1,
                                                          "dilation_h_factor": 1, "dilation_w_factor": 1,
                                                          "fused_activation_function": act}, version=3)
    ref = _same_everywhere(backend, levels, model, [rng.integers(-128, 128, (1, h, w, c), dtype=np.int8)])
    if act == "NONE" and h * w * o >= 16:
        assert np.unique(ref[0]).size > 2  # requantized values, not one clamped constant
    elif zy < 127:
        assert np.unique(ref[0]).size > 1
    lib, lv = levels
    if 2 in lv:  # the few-channel GEMM takes no work area (the 16-channel GEMM and the indirection conv: 0 too)
        lib.edge_simd_set(2)
        try:
            it = backend.CInterpreter(model_content=model)
            it.allocate_tensors()
        finally:
            lib.edge_simd_set(-1)
        assert it.arena_parts()["fast_path_scratch"] == 0


@pytest.mark.parametrize("batch,depth,units", [(37, 16, 1), (5, 64, 3), (19, 8, 8), (1, 24, 6), (100, 40, 5)])
def test_fully_connected_few_units_equal_portable_and_tflm(backend, levels, batch, depth, units):
    rng = np.random.default_rng(batch * 100 + depth + units)
    wt, b = _weights(rng, units, depth, (units, depth))
    x, y = T((batch, depth), "INT8", 0.05, int(rng.integers(-20, 20))), T((batch, units), "INT8", 0.05, -3)
    model = op_model("FULLY_CONNECTED", [x, wt, b], [y], options={"fused_activation_function": "NONE"})
    ref = _same_everywhere(backend, levels, model, [rng.integers(-128, 128, (batch, depth), dtype=np.int8)])
    assert np.unique(ref[0]).size > 2


def test_conv_1x1_few_channels_threads_give_the_same_bytes(backend):
    """Threads split the pixels at any multiple of 4: a vector of 16 pixels may start anywhere."""
    rng = np.random.default_rng(26)
    wt, b = _weights(rng, 1, 16, (1, 1, 1, 16))
    x, y = T((1, 61, 67, 16), "INT8", 0.05, 2), T((1, 61, 67, 1), "INT8", 0.05, -1)
    model = op_model("CONV_2D", [x, wt, b], [y], options={"padding": "VALID", "stride_h": 1, "stride_w": 1,
                                                          "dilation_h_factor": 1, "dilation_w_factor": 1}, version=3)
    feeds = [rng.integers(-128, 128, (1, 61, 67, 16), dtype=np.int8)]
    outs = []
    for threads in (1, 2, 3):
        it = backend.CInterpreter(model_content=model, num_threads=threads)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], feeds[0])
        it.invoke()
        outs.append(np.array(it.get_tensor(it.get_output_details()[0]["index"])))
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    np.testing.assert_array_equal(outs[0], run_tflm(model, feeds)[0])
