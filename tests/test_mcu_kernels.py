"""The Cortex-M kernels chosen at prepare for the MCU models (issue 25): int8 DEPTHWISE_CONV_2D with a depth
multiplier m % 4 == 0 and one or few input channels (micro_speech's and person_detect's first layers: the filter
pre-paired for SMLAD, each staged input loaded once per group of four outputs), the four-channel depthwise on a
layer whose scale ratios edge_rq does not cover (person_detect's second layer), and PAD / TRANSPOSE as block
copies.

Each case: the portable C build (EDGE_DSP 0: the loop Cortex-M0+ runs, and the reference the DSP path is held
to) == our Python interpreter == TFLM, bit for bit; the DSP code emulated in C on the host (-DEDGE_EMULATE_DSP,
the path the M4 takes) == the portable build; and (slow) the real SXTAB16 / SMLAD assembly in a Cortex-M4 image
under QEMU gives the Python interpreter's output hash.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, image_main_hash, image_main_inputs, op_model, run_ours
from tests.peers import run_tflm
from tests.test_c_kernels_fc_dsp import _b, _out, _w
from tests.test_ops_conv import _run_c, _run_exe, backend, dsp_runner  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"

pytestmark = needs_c_runtime

# name: (n, h, w, c, multiplier, kh, kw, padding, strides, dilations, act), per_channel, bias, input zero point,
# output scale, weight limit
DW_CASES = {
    # micro_speech's layer: 49x40x1, 10x8 filter, multiplier 8, stride 2, SAME (borders on all four sides)
    "dw-m8-c1-10x8-stride2": ((1, 49, 40, 1, 8, 10, 8, "SAME", (2, 2), (1, 1), "NONE"), True, True, -128, 0.3, 127),
    # person_detect's first layer: 3x3 (kw 3: the fourth tap of each staged row has weight 0), stride 2
    "dw-m8-c1-3x3-stride2-relu6": ((1, 20, 18, 1, 8, 3, 3, "SAME", (2, 2), (1, 1), "RELU6"), True, True, 127, 0.08,
                                   127),
    # two input channels (staged byte by byte), m 4, kw 5 (two tap groups, three zero-weight taps), VALID,
    # per-tensor weights, dilation along the height
    "dw-m4-c2-5x5-dilated-h": ((1, 11, 9, 2, 4, 5, 5, "VALID", (1, 1), (2, 1), "RELU"), False, True, 5, 0.1, 127),
    # a dilation along the width (no direct row copy), m 12 (three groups), batch 2
    "dw-m12-c1-dilated-w-batch2": ((2, 7, 12, 1, 12, 2, 3, "SAME", (1, 1), (1, 2), "NONE"), True, True, -7, 0.08,
                                   127),
    # three input channels, a ratio above 1/4 (edge_mbqm per channel instead of edge_rq)
    "dw-m8-c3-ratio-above-quarter": ((1, 6, 5, 3, 8, 3, 3, "SAME", (1, 1), (1, 1), "NONE"), True, True, 2, 0.002, 3),
    # a window wider than the input: every row staged with padding on both sides; 1x1 filter rows of kw 1
    "dw-m4-c1-window-wider-than-input": ((1, 4, 3, 1, 4, 2, 7, "SAME", (1, 1), (1, 1), "NONE"), True, True, 90, 0.1,
                                         127),
    "dw-m4-c1-1x1": ((1, 5, 6, 1, 4, 1, 1, "VALID", (1, 1), (1, 1), "NONE"), True, True, -60, 0.05, 127),
    # multiplier 1 on a layer edge_rq does not cover (person_detect's second layer): the four-channel DSP sums,
    # edge_mbqm per channel; 3x3 inside windows and clipped ones, c % 4 tail channels
    "dw-m1-c10-3x3-ratio-above-quarter": ((1, 7, 8, 10, 1, 3, 3, "SAME", (1, 1), (1, 1), "RELU6"), True, True, -20,
                                          0.004, 5),
    # m 2 (not a multiple of four: the portable multiplier loop on every core)
    "dw-m2-c3-portable": ((1, 6, 6, 3, 2, 3, 3, "SAME", (1, 1), (1, 1), "NONE"), True, True, 0, 0.08, 127),
}


def _dw_model(name):
    geo, pc, bias, izp, oscale, wlim = DW_CASES[name]
    n, h, w, c, m, kh, kw, padding, s, dil, act = geo
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    o, xs = c * m, 0.05
    oh, ow = _out(padding, s[0], dil[0], h, kh), _out(padding, s[1], dil[1], w, kw)
    wt = _w(rng, (1, kh, kw, o), o, pc, 3, wlim)
    opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "dilation_h_factor": dil[0],
            "dilation_w_factor": dil[1], "fused_activation_function": act, "depth_multiplier": m}
    b = _b(rng, o, bias, 3000 if wlim > 5 else 30, xs * (wt.scale if isinstance(wt.scale, float) else 0.011))
    model = op_model("DEPTHWISE_CONV_2D", [T((n, h, w, c), "INT8", xs, izp), wt, b],
                     [T((n, oh, ow, o), "INT8", oscale, -3)], options=opts, version=3)
    return model, [rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)]


def _check(backend, dsp_runner, model, feeds, tmp_path, tflm=True):  # noqa: F811
    plain = _run_c(backend, model, feeds)[0]
    np.testing.assert_array_equal(plain, run_ours(model, feeds)[0])
    if tflm:
        np.testing.assert_array_equal(plain, run_tflm(model, feeds, isolate=True)[0])
    np.testing.assert_array_equal(_run_exe(dsp_runner, model, feeds, plain, tmp_path), plain)
    return plain


@pytest.mark.parametrize("name", list(DW_CASES))
def test_depthwise_dsp_paths_equal_portable_and_tflm(backend, dsp_runner, name, tmp_path):  # noqa: F811
    model, feeds = _dw_model(name)
    plain = _check(backend, dsp_runner, model, feeds, tmp_path)
    assert np.unique(plain).size > 2, "degenerate case: output saturated"
