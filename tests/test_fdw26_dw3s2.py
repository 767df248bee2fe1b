"""Float32 DEPTHWISE_CONV_2D 3x3 stride 2 and stride 1 on inputs above 1 MB: the AVX-512 kernel runs each output row
in blocks of four pixels with every channel tile inside. Each lane does the same fused multiply-adds in the same (fy, fx)
order as the AVX2 path: the same bits as level 1, within 1e-5 of the portable kernel's range and of LiteRT's
reference kernel's (only with a bias: that kernel needs one); odd / even sizes, SAME / VALID, channels 1..67 and
177, every activation (ReLU6 among them), bias or none."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model
from tests.peers import run_litert
from tests.simd_common import levels  # noqa: F401 (a fixture; backend: tests/conftest.py)
from tests.simd_common import assert_close_of_range, run_at_level

pytestmark = needs_c_runtime

# (padding, c, h, w, activation, bias): every input above 1 MB of float32 (the path this file is about)
CASES = [("SAME", 67, 57, 71, "RELU6", True), ("VALID", 1, 515, 514, "NONE", True),
         ("SAME", 24, 106, 107, "RELU", False), ("VALID", 177, 40, 38, "RELU6", True),
         ("SAME", 16, 128, 130, "RELU_N1_TO_1", True), ("VALID", 33, 90, 91, "RELU6", False)]


def _case(i, stride):
    padding, c, h, w, act, has_bias = CASES[i]
    assert h * w * c * 4 > 1024 * 1024
    rng = np.random.default_rng(2600 + i)
    oh = -(-h // stride) if padding == "SAME" else (h - 3) // stride + 1
    ow = -(-w // stride) if padding == "SAME" else (w - 3) // stride + 1
    f = lambda shape, data=None: T(shape, "FLOAT32", data=None if data is None else data.astype(np.float32))
    bias = f((c,), rng.standard_normal(c)) if has_bias else None
    model = op_model("DEPTHWISE_CONV_2D", [f((1, h, w, c)), f((1, 3, 3, c), rng.standard_normal((1, 3, 3, c))), bias],
                     [f((1, oh, ow, c))],
                     options={"padding": padding, "stride_h": stride, "stride_w": stride, "depth_multiplier": 1,
                              "fused_activation_function": act})
    return model, [rng.uniform(-2, 2, (1, h, w, c)).astype(np.float32)]


@pytest.mark.parametrize("stride", [2, 1])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_depthwise_3x3_large_same_bits_as_avx2_close_to_litert(backend, levels, case, stride):
    model, feeds = _case(case, stride)
    lib, lv = levels
    portable = run_at_level(backend, lib, 0, model, feeds)[0]
    top = run_at_level(backend, lib, lv[-1], model, feeds)[0]
    assert_close_of_range(top, portable, f"SIMD level {lv[-1]} vs the portable kernel", 1e-5)
    if CASES[case][5]:  # LiteRT's reference DEPTHWISE_CONV_2D needs a bias tensor
        assert_close_of_range(top, run_litert(model, feeds)[0], "vs LiteRT's reference kernel", 1e-5)
    if len(lv) < 2:
        pytest.skip("this CPU has no AVX-512 level beside AVX2")
    np.testing.assert_array_equal(top, run_at_level(backend, lib, 1, model, feeds)[0])
