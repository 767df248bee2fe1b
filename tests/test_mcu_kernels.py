"""The Cortex-M kernels chosen at prepare for the MCU models (issue 25): int8 DEPTHWISE_CONV_2D with a depth
multiplier m % 4 == 0 and one or few input channels (micro_speech's and person_detect's first layers: the filter
pre-paired for SMLAD, each staged input loaded once per group of four outputs), the four-channel depthwise on a
layer whose scale ratios edge_rq does not cover (person_detect's second layer), CONV_2D channel pairs summed,
requantized, clamped and stored in one pass (conv_pairs_rq: 1x1 / im2col layers with k % 4 == 0), and PAD /
TRANSPOSE as block copies.

Each case: the portable C build (EDGE_DSP 0: the loop Cortex-M0+ runs, and the reference the DSP path is held
to) == our Python interpreter == TFLM, bit for bit; the DSP code emulated in C on the host (-DEDGE_EMULATE_DSP,
the path the M4 takes) == the portable build; and (slow) the real SXTAB16 / SMLAD assembly in a Cortex-M4 image
under QEMU gives the Python interpreter's output hash.
"""

from __future__ import annotations

import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, m4_image_mismatches, op_model, run_ours
from tests.peers import run_tflm
from tests.test_c_kernels_fc_dsp import _b, _out, _w
from tests.test_ops_conv import _run_c, _run_exe  # backend, dsp_runner: tests/conftest.py

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
    # kw 6: a last tap group of two (the 8-bit filter's remainder taps from their staged word: kw % 4 of 1, 2, 3 over
    # these cases)
    "dw-m4-c1-2x6": ((1, 6, 9, 1, 4, 2, 6, "SAME", (1, 1), (1, 1), "RELU"), True, True, -20, 0.08, 127),
    # multiplier 1 on a layer edge_rq does not cover (person_detect's second layer): the four-channel DSP sums,
    # edge_mbqm per channel; 3x3 inside windows and clipped ones, c % 4 tail channels
    "dw-m1-c10-3x3-ratio-above-quarter": ((1, 7, 8, 10, 1, 3, 3, "SAME", (1, 1), (1, 1), "RELU6"), True, True, -20,
                                          0.004, 5),
    # multiplier 1, 3x3 stride 1 (kws_dscnn's and MobileNet's layers): the inside windows two pixels a pass
    # (dw_run3x3_pairs: columns widened once, pre-widened weights; runs of 8 or more), an even run of 10 (ow 12), RELU6
    "dw-m1-c8-3x3-pairs-even": ((1, 7, 12, 8, 1, 3, 3, "SAME", (1, 1), (1, 1), "RELU6"), True, True, -128, 0.05, 127),
    # an odd run of 11 (the last pixel alone), 12 channels (three groups), a dilation along the height, batch 2
    "dw-m1-c12-3x3-pairs-odd-dilated-h": ((2, 7, 13, 12, 1, 3, 3, "SAME", (1, 1), (2, 1), "NONE"), False, True, 7,
                                          0.06, 127),
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


# CONV_2D layers whose channel pairs run conv_pairs_rq (k % 4 == 0, a bias, edge_rq channels): the sums, the
# requantization and (on the M4) the SSAT + bytewise SSUB8 / SEL clamp of each pair in one pass, two halfword
# stores. name: (n, h, w, c, o, kh, kw, padding, strides, act), per_channel, input zero point, output scale,
# output zero point
CONV_PAIR_CASES = {
    # k = 4 (one chunk: the loop entered at its second chunk), odd pixel count (the last pixel paired with itself:
    # both halfword stores at one address), odd channel count (the lone last channel: conv_gemm's chunk path)
    "conv1x1-k4-odd-pixels-odd-channels": ((1, 3, 5, 4, 7, 1, 1, "VALID", (1, 1), "NONE"), True, -128, 0.02, 5),
    # k = 12 (three chunks: odd, entered at the second), RELU6: lo and hi both inside int8 (both byte clamps bite)
    "conv1x1-k12-relu6": ((1, 4, 4, 12, 10, 1, 1, "SAME", (1, 1), "RELU6"), True, 3, 0.03, -100),
    # k = 32, RELU (lo = the output zero point), per-tensor weights, stride 2 (the 1x1 pixels not contiguous)
    "conv1x1-k32-relu-stride2-per-tensor": ((1, 7, 6, 32, 16, 1, 1, "SAME", (2, 2), "RELU"), False, -7, 0.1, 40),
    # a 3x3 window of 4 channels (k = 36, im2col with padding), batch 2, outputs saturating at both int8 ends
    "conv3x3-k36-batch2-saturating": ((2, 5, 4, 4, 6, 3, 3, "SAME", (1, 1), "NONE"), True, 60, 0.004, 0),
}


# CONV_2D layers of one group whose input channels are not whole chunks of four (c % 4 != 0: one or few input
# channels, a keyword spotter's first layer), their windows staged as bytes and widened in place
# (conv_im2col_staged). name: as CONV_PAIR_CASES, dilations (h, w) after the strides
CONV_FEW_CHANNEL_CASES = {
    # the 10x4 filter on one channel, stride 2 (kws_dscnn's first layer): rows of one word each (the fast row copy),
    # rows above / below the input filled, the left / right columns staged run by run
    "conv10x4-c1-stride2": ((1, 13, 12, 1, 8, 10, 4, "SAME", (2, 2), (1, 1), "RELU"), True, -128, 0.08, -20),
    # 3x3 on three channels (MobileNet's first layer): k = 27 (runs across chunk boundaries, a tail of 3), RELU6
    "conv3x3-c3-stride2-k27": ((1, 9, 8, 3, 6, 3, 3, "SAME", (2, 2), (1, 1), "RELU6"), True, 5, 0.03, -100),
    # 5x5 on one channel, VALID, batch 2: k = 25 (a tail of one value), per-tensor weights, an odd pixel count
    "conv5x5-c1-valid-batch2-k25": ((2, 8, 9, 1, 5, 5, 5, "VALID", (1, 1), (1, 1), "NONE"), False, -3, 0.05, 0),
    # a dilation along the width (runs of one tap each), k = 12 (whole chunks: conv_pairs_rq after the staging)
    "conv3x2-c2-dilated-w": ((1, 7, 9, 2, 4, 3, 2, "SAME", (1, 1), (1, 2), "NONE"), True, 60, 0.04, 3),
    # 1x1 on three channels: k = 3, no whole chunk at all
    "conv1x1-c3-k3": ((1, 4, 5, 3, 7, 1, 1, "VALID", (1, 1), (1, 1), "RELU"), True, -60, 0.01, -128),
    # 2x2 on six channels: rows of 12 bytes (the fast row copy, three words a row), stride 2 past the input's end
    "conv2x2-c6-stride2": ((1, 7, 7, 6, 5, 2, 2, "SAME", (2, 2), (1, 1), "NONE"), True, -7, 0.06, 10),
}


def _conv_pair_model(name):
    geo, pc, izp, oscale, ozp = {**CONV_PAIR_CASES, **CONV_FEW_CHANNEL_CASES}[name]
    if len(geo) == 10:
        geo = geo[:9] + ((1, 1),) + geo[9:]
    n, h, w, c, o, kh, kw, padding, s, dil, act = geo
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    oh, ow = _out(padding, s[0], dil[0], h, kh), _out(padding, s[1], dil[1], w, kw)
    wt = _w(rng, (o, kh, kw, c), o, pc, 0, 127)
    b = _b(rng, o, True, 3000, 0.05 * (wt.scale if isinstance(wt.scale, float) else 0.011))
    model = op_model("CONV_2D", [T((n, h, w, c), "INT8", 0.05, izp), wt, b], [T((n, oh, ow, o), "INT8", oscale, ozp)],
                     options={"padding": padding, "stride_h": s[0], "stride_w": s[1], "dilation_h_factor": dil[0],
                              "dilation_w_factor": dil[1], "fused_activation_function": act},
                     version=3)
    return model, [rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)]


@pytest.mark.parametrize("name", list(CONV_PAIR_CASES) + list(CONV_FEW_CHANNEL_CASES))
def test_conv_pair_requantization_equals_portable_and_tflm(backend, dsp_runner, name, tmp_path):  # noqa: F811
    model, feeds = _conv_pair_model(name)
    plain = _check(backend, dsp_runner, model, feeds, tmp_path)
    assert np.unique(plain).size > 2, "degenerate case: output saturated"


def test_wide_requantization_matches_mbqm(tmp_path):
    """edge_conv_rqw (the DSP requantization of layers edge_rq refuses: right shifts of 0 and 1, left shifts;
    SMMLAR then SMMLSR) == edge_mbqm + zero point over random and edge accumulators, multipliers and shifts, in
    the emulated-DSP build (the M4 case above runs the instructions)."""
    src = tmp_path / "rqw.c"
    src.write_text(r"""
#include <stdio.h>
#include "edge_conv.h"
static unsigned long long s = 88172645463325252ull;
static unsigned rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (unsigned)s; }
int main(void) {
    static const int32_t edge[] = {0, 1, -1, 2, -2, 3, -3, 2147483647, -2147483647 - 1, 1 << 30, -(1 << 30),
                                   (1 << 30) - 1, -(1 << 30) + 1, 12345, -12345};
    long bad = 0, covered = 0, refused = 0, low = 0;
    for (int it = 0; it < 600000; it++) {
        int32_t m = it % 7 == 0 ? 0 : (int32_t)(0x40000000u + (rnd() & 0x3fffffffu));
        int32_t sh = m == 0 ? 0 : (int32_t)(rnd() % 70) - 35, zp = (int32_t)(rnd() % 256) - 128, x;
        edge_conv_rqw_t q;
        if (it % 11 == 1) m = 2147483647;
        if (it % 13 == 2) m = 1 << 30;
        if (it % 5 == 3) sh = (int32_t)(rnd() % 4) - 2; /* the shifts edge_rq refuses: -1, 0, 1 (and -2) */
        x = it % 3 == 0 ? edge[rnd() % 15] : it % 3 == 1 ? (int32_t)rnd() : (int32_t)(rnd() % 200001) - 100000;
        if (edge_conv_rqw_make(&q, m, sh) != 0) { refused++; continue; }
        covered++;
        low += m != 0 && sh > -2;
        if (edge_conv_rqw_apply(&q, x, zp) != edge_mbqm(x, m, sh) + zp) bad++;
    }
    printf("%ld %ld %ld %ld\n", bad, covered, refused, low);
    return 0;
}
""")
    exe = tmp_path / "rqw"
    proc = subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-DEDGE_EMULATE_DSP",
                           f"-I{FW / 'src'}", f"-I{FW / 'include'}", "-o", str(exe), str(src), "-lm"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    bad, covered, refused, low = map(int, subprocess.run([str(exe)], capture_output=True, text=True,
                                                         check=True).stdout.split())
    assert bad == 0 and covered > 400000 and refused > 10000 and low > 100000, (bad, covered, refused, low)


# ------------------------------------------------------------------------------------------- PAD / TRANSPOSE
# name: (dtype, input shape, paddings); the output is numpy's np.pad with the output zero point (int8) or 0

PAD_CASES = {
    # MobileNetV2's PAD of H and W on three channels: runs of W * C bytes at odd output offsets
    "pad-nhwc-hw-3ch": ("INT8", (1, 9, 7, 3), ((0, 0), (1, 1), (1, 1), (0, 0))),
    "pad-nhwc-hw-before-only-32ch": ("INT8", (1, 5, 6, 32), ((0, 0), (1, 0), (2, 0), (0, 0))),
    # the last dimension padded: runs of one row
    "pad-last-dim": ("INT8", (2, 3, 5), ((0, 1), (0, 0), (3, 2))),
    # nothing padded: one run, the whole tensor
    "pad-none-int16": ("INT16", (2, 3, 4), ((0, 0), (0, 0), (0, 0))),
    "pad-batch-only-float": ("FLOAT32", (2, 3, 4, 5), ((1, 2), (0, 0), (0, 0), (0, 0))),
    "pad-rank5-int32": ("INT32", (2, 1, 3, 2, 3), ((0, 0), (1, 1), (0, 0), (2, 1), (0, 0))),
}

TRANSPOSE_CASES = {
    # MobileNetV2's NCHW -> NHWC: [H * W, C] columns (the word-load path on the M4 for int8)
    "transpose-nchw-nhwc-int8": ("INT8", (1, 3, 11, 13), (0, 2, 3, 1)),
    "transpose-nchw-nhwc-batch3-int16": ("INT16", (3, 5, 4, 3), (0, 2, 3, 1)),
    "transpose-nhwc-nchw-float": ("FLOAT32", (2, 6, 5, 7), (0, 3, 1, 2)),
    # the innermost dimension stays: block-copied rows
    "transpose-rows-int8": ("INT8", (4, 3, 9), (1, 0, 2)),
    # size-1 dimensions and a permutation that needs the odometer
    "transpose-odometer-int8": ("INT8", (2, 1, 3, 4, 5), (3, 1, 0, 4, 2)),
    "transpose-int64": ("INT64", (3, 4, 2), (2, 0, 1)),
    "transpose-2d-odd-int8": ("INT8", (7, 3), (1, 0)),
}

_NP = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "FLOAT32": np.float32}


def _data(rng, dtype, shape):
    if dtype == "FLOAT32":
        return rng.standard_normal(shape).astype(np.float32)
    info = np.iinfo(_NP[dtype])
    return rng.integers(max(info.min, -(1 << 30)), min(info.max, 1 << 30), shape, dtype=_NP[dtype])


def _pad_model(name):
    dtype, shape, pads = PAD_CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    q = dict(scale=0.1, zero_point=-5) if dtype == "INT8" else {}
    out_shape = tuple(s + a + b for s, (a, b) in zip(shape, pads))
    model = op_model("PAD", [T(shape, dtype, **q), T((len(shape), 2), "INT32", data=np.array(pads, np.int32))],
                     [T(out_shape, dtype, **q)])
    x = _data(rng, dtype, shape)
    return model, x, np.pad(x, pads, constant_values=-5 if dtype == "INT8" else 0)


def _transpose_model(name):
    dtype, shape, perm = TRANSPOSE_CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    q = dict(scale=0.1, zero_point=0) if dtype in ("INT8", "INT16") else {}
    x = _data(rng, dtype, shape)
    want = np.transpose(x, perm)
    model = op_model("TRANSPOSE", [T(shape, dtype, **q), T((len(perm),), "INT32", data=np.array(perm, np.int32))],
                     [T(want.shape, dtype, **q)])
    return model, x, want


@pytest.mark.parametrize("name", list(PAD_CASES) + list(TRANSPOSE_CASES))
def test_pad_transpose_block_copies(runtime, name):
    from tests.oprunner import run_on

    model, x, want = (_pad_model if name in PAD_CASES else _transpose_model)(name)
    got = run_on(runtime, model, [x])[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------------------- MEAN over H, W
# int8 global average pools (mean.c's mean_hw_q8: on DSP cores eight channels a pass in SXTAB16 int16 lanes, blocks
# of 256 pixels; other channels one at a time). name: (op, shape, keep_dims, input zero point, output zero point
# offset from the mean of random bytes); "extreme": channel k all -128 for even k, all 127 for odd (a lane's bounds)
MEAN_HW_CASES = {
    "mean-hw-c64-25x5-keep": ("MEAN", (1, 25, 5, 64), True, -128, 3),  # kws_dscnn's pool
    "mean-hw-c13-batch2": ("MEAN", (2, 7, 9, 13), False, 5, -7),  # one group of eight, a tail of five
    "mean-hw-c8-300px": ("MEAN", (1, 20, 15, 8), True, 127, 0),  # two pixel blocks (256 + 44)
    "mean-hw-c16-256px-extreme": ("MEAN", (1, 16, 16, 16), False, 0, 0),  # lanes at their bounds, one block
    "mean-hw-c24-sum": ("SUM", (1, 3, 4, 24), True, -3, 10),
    "mean-hw-c3-tail-only": ("MEAN", (1, 6, 5, 3), True, 9, -20),
}


def _mean_hw_model(name):
    op, shape, keep, izp, ozp = MEAN_HW_CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n, h, w, c = shape
    ys = 0.05 * (h * w if op == "SUM" else 1) * 1.5
    ozp = int(np.clip(ozp - round((-0.5 - izp) / 1.5), -128, 127))  # the mean of random bytes near ozp
    model = op_model(op, [T(shape, "INT8", 0.05, izp), T((2,), "INT32", data=np.array([1, 2], np.int32))],
                     [T((n, 1, 1, c) if keep else (n, c), "INT8", ys, ozp)], options={"keep_dims": keep})
    x = rng.integers(-128, 128, shape).astype(np.int8)
    if name.endswith("extreme"):
        x[..., 0::2], x[..., 1::2] = -128, 127
    return model, [x]


@pytest.mark.parametrize("name", list(MEAN_HW_CASES))
def test_mean_over_hw_dsp_equals_portable_and_tflm(backend, dsp_runner, name, tmp_path):  # noqa: F811
    model, feeds = _mean_hw_model(name)
    plain = _check(backend, dsp_runner, model, feeds, tmp_path)
    assert np.unique(plain).size >= 2, "degenerate case: one output value"


# ------------------------------------------------------------------------------------------------ on the M4

@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_mcu_kernels_on_cortex_m4_under_qemu(tmp_path):
    """The real assembly (DW_MULT4's SXTAB16 / SMLAD, conv_pairs_rq's SSAT / SSUB8 / SEL clamp and halfword
    stores, the unaligned word copies of PAD and TRANSPOSE, MEAN's SXTAB16 lanes) in a Cortex-M4 image per case == Python."""
    build = tmp_path / "b"
    models = {name: _dw_model(name)[0] for name in DW_CASES}
    models.update({name: _conv_pair_model(name)[0] for name in [*CONV_PAIR_CASES, *CONV_FEW_CHANNEL_CASES]})
    models.update({name: _pad_model(name)[0] for name in PAD_CASES if PAD_CASES[name][0] == "INT8"})
    models.update({name: _transpose_model(name)[0] for name in TRANSPOSE_CASES
                   if TRANSPOSE_CASES[name][0] == "INT8"})
    models.update({name: _mean_hw_model(name)[0] for name in MEAN_HW_CASES})
    failures = m4_image_mismatches(models, build)
    assert not failures, f"M4 output differs from Python on {failures}"


# FULLY_CONNECTED on the M4 (issue 25): instructions per MAC counted by the board (SysTick ticks x 40 under
# -icount shift=0), the output hash == Python's. name: (batch, depth, units, per_channel, input zero point, bound).
# The kernel before fc_slots (four units per pass, SADD16 for the input offset: 28 instructions per 16 MACs; a last
# group of 1-3 units one MAC at a time): 1.83 and 4.69 on these. fc_slots (SXTAB16, two words a pass: 49 per 32
# MACs; a last group of two units as four slots, rows repeated): 1.61 and 2.23.
FC_M4_CASES = {
    "fc-m4-1024x8": (1, 1024, 8, True, -128, 1.65),  # micro_speech's FC is 4000 x 4
    "fc-m4-512x6": (1, 512, 6, False, 3, 2.3),  # a last group of two units
}


def _fc_m4_model(name):
    batch, depth, units, pc, izp, _ = FC_M4_CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    wt = _w(rng, (units, depth), units, pc, 0, 127)
    b = _b(rng, units, True, 3000, 0.05 * (wt.scale if isinstance(wt.scale, float) else 0.011))
    return op_model("FULLY_CONNECTED", [T((batch, depth), "INT8", 0.05, izp), wt, b],
                    [T((batch, units), "INT8", 0.5, -3)], version=5)


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
@pytest.mark.parametrize("name", list(FC_M4_CASES))
def test_fully_connected_instructions_per_mac_on_cortex_m4(tmp_path, name):
    import re

    from edge_sdk import Interpreter
    from tests.oprunner import image_main_hash, image_main_inputs, m4_image, run_m4_image

    batch, depth, units, _, _, bound = FC_M4_CASES[name]
    model = _fc_m4_model(name)
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(model)
    out = run_m4_image(m4_image(path, tmp_path / "b") / "edge-image.elf")
    py = Interpreter(model_content=model)
    py.allocate_tensors()
    py.set_tensor(py.get_input_details()[0]["index"], image_main_inputs(py)[0])
    py.invoke()
    y = py.get_tensor(py.get_output_details()[0]["index"])
    assert np.unique(y).size > 2, "degenerate case: output saturated"
    assert re.search(r"^out 0 (\d+)$", out, re.M).group(1) == str(image_main_hash(y.tobytes())), out
    ticks = int(re.search(r"^op 0 \d+ (\d+)$", out, re.M).group(1))
    per_mac = ticks * 40 / (batch * depth * units)  # one SysTick tick = 40 instructions at shift=0
    assert per_mac <= bound, f"{name}: {per_mac:.3f} instructions per MAC (bound {bound})"


def test_fast_paths_compiled_only_for_models_that_take_them(tmp_path):
    """gen_ops.build_defines (edge flash, make size): the type switches (type_defines), then EDGE_WITH_CONV_STAGED=0
    for models whose every CONV_2D has a filter depth of whole chunks of four (person_detect's 1x1 layers) and
    EDGE_WITH_DW_PAIRS=0 for models without a 3x3 multiplier-1 DEPTHWISE_CONV_2D (micro_speech), EDGE_WITH_DW_5X5=0
    without a 5x5 one and EDGE_WITH_DW_COLUMN=0 without a kh x 1 one (person_detect: its M4 runtime stays within
    32 KB), EDGE_WITH_MEAN_HW=0
    for models without a MEAN / SUM of a rank-4 input; nothing for a model with such a layer; several models: their
    union."""
    import sys

    from tests import test_c_kernels_fc_dsp as dsp_cases

    sys.path.insert(0, str(FW / "tools"))
    try:
        import gen_ops
    finally:
        sys.path.pop(0)
    paths = {}
    for name, model in {"wide": _conv_pair_model("conv1x1-k32-relu-stride2-per-tensor")[0],
                        "narrow": _conv_pair_model("conv10x4-c1-stride2")[0],
                        "dw3x3": _dw_model("dw-m1-c8-3x3-pairs-even")[0],
                        "dw_m8": _dw_model("dw-m8-c1-3x3-stride2-relu6")[0],
                        "pool": _mean_hw_model("mean-hw-c24-sum")[0],
                        "dw5x5": dsp_cases._model("dw-5x5-inside-c14")[0],
                        "dw_column": dsp_cases._model("dw-13x1-column-valid-c8")[0]}.items():
        paths[name] = str(tmp_path / f"{name}.tflite")
        Path(paths[name]).write_bytes(model)

    stg, pairs, dw5, col, mean = ("-DEDGE_WITH_CONV_STAGED=0", "-DEDGE_WITH_DW_PAIRS=0", "-DEDGE_WITH_DW_5X5=0",
                                  "-DEDGE_WITH_DW_COLUMN=0", "-DEDGE_WITH_MEAN_HW=0")

    def paths_of(*names):  # these five switches (test_c_builds.py tests EDGE_WITH_CONV_LONE / EDGE_WITH_SOFTMAX_DSP)
        defs = gen_ops.build_defines([paths[n] for n in names])[len(gen_ops.type_defines([paths[n] for n in names])):]
        return [d for d in defs if d in (stg, pairs, dw5, col, mean)]
    assert paths_of("wide") == [stg, pairs, dw5, col, mean]
    assert paths_of("narrow") == [pairs, dw5, col, mean]
    assert paths_of("dw3x3") == [stg, dw5, col, mean]
    assert paths_of("dw_m8") == [stg, pairs, dw5, col, mean]
    assert paths_of("dw5x5") == [stg, pairs, col, mean]
    assert paths_of("dw_column") == [stg, pairs, dw5, mean]
    assert paths_of("narrow", "dw3x3") == [dw5, col, mean]
    assert paths_of("pool") == [stg, pairs, dw5, col]
    assert paths_of("narrow", "dw3x3", "pool", "dw5x5", "dw_column") == []
    assert gen_ops.build_defines([]) == []
