"""The Cortex-M4 fast paths of the int8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED C kernels at their edge
sizes: output channels and pixels not multiples of the 2x2 block, channel counts not multiples of four (the
k % 4 / channel tails), windows clipped by the padding, strides and dilations, groups, per-tensor and
per-channel weights, input zero points from -128 to 127, no bias, and scale ratios the two-SMMLAR
requantization (edge_rq) does not cover (those layers keep edge_mbqm).

Each case runs on the runtime grid (the Python interpreter and the C runtime): == TFLM (bit for bit) on both, the
plain C build == our Python interpreter; and, C-only by nature, the DSP code emulated in C on the host
(-DEDGE_EMULATE_DSP) == the plain build, and (slow) the real SXTB16/SMLAD/SMMLAR assembly in a Cortex-M4 image
under QEMU (mps2-an386) gives the Python interpreter's output hash.
"""

from __future__ import annotations

import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import (T, m4_image_mismatches, keep_python_outputs, op_model, peer_outputs,
                            run_on)
from tests.peers import PeerCrashed
from tests.test_ops_conv import _run_exe  # dsp_runner: a fixture of tests/conftest.py

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"


def _out(padding, stride, dil, size, k):
    eff = (k - 1) * dil + 1
    return (size + stride - 1) // stride if padding == "SAME" else (size + stride - eff) // stride


def _w(rng, shape, n, per_channel, qdim, limit=127, scale=(0.002, 0.02)):
    s = list(rng.uniform(*scale, n)) if per_channel else float(np.mean(scale))
    return T(shape, "INT8", s, 0, quantized_dimension=qdim,
             data=rng.integers(-limit, limit + 1, shape).astype(np.int8))


def _b(rng, n, bias, limit, scale):
    return T((n,), "INT32", scale, 0, data=rng.integers(-limit, limit, n).astype(np.int32)) if bias else None


# name: (op, geometry..., per_channel, bias, input zero point, output scale, weight limit)
CASES = {
    # CONV_2D (n, h, w, c, o, kh, kw, groups, padding, strides, dilations, act)
    "conv1x1-odd-pixels-odd-channels": ("CONV_2D", (1, 5, 7, 16, 9, 1, 1, 1, "VALID", (1, 1), (1, 1), "RELU6"),
                                        True, True, -128, 0.1, 127),
    "conv3x3-k54-tail-per-tensor": ("CONV_2D", (1, 6, 5, 6, 7, 3, 3, 1, "SAME", (1, 1), (1, 1), "NONE"),
                                    False, True, 127, 0.1, 127),
    "conv3x3-groups-stride2-nobias": ("CONV_2D", (2, 5, 5, 8, 6, 3, 3, 2, "SAME", (2, 2), (1, 1), "RELU"),
                                      True, False, 0, 0.05, 127),
    "conv3x3-37-channels-chunks": ("CONV_2D", (1, 4, 5, 8, 37, 3, 3, 1, "SAME", (1, 1), (1, 1), "RELU"),
                                   True, True, -9, 0.1, 127),
    "conv-dilated-one-channel": ("CONV_2D", (1, 9, 8, 5, 1, 3, 2, 1, "SAME", (1, 1), (2, 3), "NONE"),
                                 True, True, 17, 0.1, 127),
    "conv-ratio-above-quarter": ("CONV_2D", (1, 4, 5, 3, 3, 1, 1, 1, "VALID", (1, 1), (1, 1), "NONE"),
                                 True, True, 5, 0.002, 3),
    # DEPTHWISE_CONV_2D (n, h, w, c, multiplier, kh, kw, padding, strides, dilations, act)
    "dw-c14-tail-padding": ("DEPTHWISE_CONV_2D", (1, 7, 6, 14, 1, 3, 3, "SAME", (1, 1), (1, 1), "RELU6"),
                            True, True, -128, 0.08, 127),
    "dw-stride2-dilation2-per-tensor": ("DEPTHWISE_CONV_2D", (1, 9, 8, 8, 1, 3, 3, "SAME", (2, 2), (2, 2), "NONE"),
                                        False, True, 127, 0.08, 127),
    "dw-window-equals-input-nobias": ("DEPTHWISE_CONV_2D", (2, 5, 5, 4, 1, 5, 5, "VALID", (1, 1), (1, 1), "NONE"),
                                      True, False, -3, 0.08, 127),
    "dw-5x3-c20": ("DEPTHWISE_CONV_2D", (1, 6, 7, 20, 1, 5, 3, "SAME", (1, 2), (1, 1), "RELU"),
                   True, True, 40, 0.08, 127),
    "dw-ratio-above-quarter": ("DEPTHWISE_CONV_2D", (1, 5, 5, 8, 1, 2, 1, "SAME", (1, 1), (1, 1), "NONE"),
                               True, True, 2, 0.002, 3),
    # 5x5 windows inside the input (DW_5X5 from the folded sums) beside clipped ones, a channel tail (c % 4)
    "dw-5x5-inside-c14": ("DEPTHWISE_CONV_2D", (1, 9, 11, 14, 1, 5, 5, "SAME", (1, 1), (1, 1), "RELU6"),
                          True, True, -77, 0.08, 127),
    "dw-5x5-stride2-dilation-w2": ("DEPTHWISE_CONV_2D", (1, 12, 13, 8, 1, 5, 5, "SAME", (2, 2), (1, 2), "NONE"),
                                   False, True, 127, 0.08, 127),
    # column filters (hey_jarvis's kh x 1 over a width-1 input): the valid taps in one run down the column
    "dw-13x1-column-valid-c8": ("DEPTHWISE_CONV_2D", (1, 15, 1, 8, 1, 13, 1, "VALID", (1, 1), (1, 1), "NONE"),
                                True, True, -20, 0.2, 127),
    "dw-9x1-column-same-c14-stride2": ("DEPTHWISE_CONV_2D", (1, 12, 3, 14, 1, 9, 1, "SAME", (2, 1), (1, 1), "RELU"),
                                       True, True, 60, 0.1, 127),
    "dw-5x5-ratio-above-quarter": ("DEPTHWISE_CONV_2D", (1, 8, 8, 8, 1, 5, 5, "VALID", (1, 1), (1, 1), "NONE"),
                                   True, True, 2, 0.002, 3),
    # TRANSPOSE_CONV (n, h, w, c, o, kh, kw, padding, strides, act): the DSP scatter's two-filter dot products
    # (tc_dot2) with a c % 4 tail and an odd filter count (the last filter paired with itself), U-Net's 2x2 s2
    "tc-2x2-s2-c14-o7": ("TRANSPOSE_CONV", (1, 4, 5, 14, 7, 2, 2, "VALID", (2, 2), "RELU"), True, True, -100, 0.2,
                         127),
    "tc-3x3-s2-same-c8-o6-per-tensor": ("TRANSPOSE_CONV", (2, 3, 4, 8, 6, 3, 3, "SAME", (2, 2), "NONE"), False,
                                        False, 90, 0.2, 127),
    # FULLY_CONNECTED (batch shape, units, act)
    "fc-depth37-units10": ("FULLY_CONNECTED", ((2, 37), 10, "NONE"), True, True, -128, 0.08, 127),
    "fc-depth64-units8-per-tensor": ("FULLY_CONNECTED", ((3, 64), 8, "RELU"), False, True, 127, 0.1, 127),
    "fc-depth3-units3-nobias": ("FULLY_CONNECTED", ((1, 3), 3, "RELU6"), True, False, 9, 0.02, 127),
    "fc-depth1030-units6": ("FULLY_CONNECTED", ((1, 1030), 6, "NONE"), True, True, -20, 0.4, 127),
    "fc-ratio-above-quarter": ("FULLY_CONNECTED", ((2, 3), 5, "NONE"), True, True, 3, 0.002, 3),
    # a last group of three units (DSP slots: rows u, u+1, u+1, u+2), an odd word count (the two-word loop
    # entered at its second word), a depth % 4 tail
    "fc-depth22-units7-last-group-3": ("FULLY_CONNECTED", ((2, 22), 7, "NONE"), True, True, -5, 0.1, 127),
    # one unit (all four slots the same row), per-tensor weights
    "fc-depth40-units1": ("FULLY_CONNECTED", ((3, 40), 1, "NONE"), False, True, 100, 0.3, 127),
    # an input zero point outside int8 (x + input offset does not fit SXTAB16's int16 halves): the generic path
    "fc-input-zero-point-32700": ("FULLY_CONNECTED", ((1, 12), 5, "NONE"), True, True, 32700, 60.0, 127),
}


def _model(name):
    op, geo, pc, bias, izp, oscale, wlim = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    xs = 0.05
    if op == "CONV_2D":
        n, h, w, c, o, kh, kw, groups, padding, s, dil, act = geo
        oh, ow = _out(padding, s[0], dil[0], h, kh), _out(padding, s[1], dil[1], w, kw)
        wt = _w(rng, (o, kh, kw, c // groups), o, pc, 0, wlim)
        opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "dilation_h_factor": dil[0],
                "dilation_w_factor": dil[1], "fused_activation_function": act}
        ins, out_shape, version = (n, h, w, c), (n, oh, ow, o), 3
    elif op == "DEPTHWISE_CONV_2D":
        n, h, w, c, m, kh, kw, padding, s, dil, act = geo
        o = c * m
        oh, ow = _out(padding, s[0], dil[0], h, kh), _out(padding, s[1], dil[1], w, kw)
        wt = _w(rng, (1, kh, kw, o), o, pc, 3, wlim)
        opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "dilation_h_factor": dil[0],
                "dilation_w_factor": dil[1], "fused_activation_function": act, "depth_multiplier": m}
        ins, out_shape, version = (n, h, w, c), (n, oh, ow, o), 3
    elif op == "TRANSPOSE_CONV":
        n, h, w, c, o, kh, kw, padding, s, act = geo
        oh, ow = (h * s[0], w * s[1]) if padding == "SAME" else ((h - 1) * s[0] + kh, (w - 1) * s[1] + kw)
        wt = _w(rng, (o, kh, kw, c), o, pc, 0, wlim)
        opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "fused_activation_function": act}
        ins, out_shape, version = (n, h, w, c), (n, oh, ow, o), 4
    else:
        shape, o, act = geo
        wt = _w(rng, (o, shape[-1]), o, pc, 0, wlim)
        opts = {"fused_activation_function": act}
        ins, out_shape, version = shape, (shape[0], o), 5
    x = T(ins, "INT8", xs, izp)
    y = T(out_shape, "INT8", oscale, -3)
    # a bias on the input x weight scale (FULLY_CONNECTED checks it for per-tensor weights), small where the
    # scale ratio is large
    b = _b(rng, o, bias, 3000 if wlim > 3 else 30, xs * (wt.scale if isinstance(wt.scale, float) else 0.011))
    if op == "TRANSPOSE_CONV":  # inputs (output_shape, weights, input, bias)
        shape = T((4,), "INT32", data=np.array(out_shape, np.int32))
        model = op_model(op, [shape, wt, x, b], [y], options=opts, version=version)
        return model, [rng.integers(-128, 128, ins).astype(np.int8)]
    model = op_model(op, [x, wt, b], [y], options=opts, version=version)
    return model, [rng.integers(-128, 128, ins).astype(np.int8)]


@pytest.mark.parametrize("name", list(CASES))
def test_fast_paths_bit_exact(runtime, name, tmp_path, request):
    model, feeds = _model(name)
    outputs = run_on(runtime, model, feeds)
    if runtime == "python":  # the C case's reference
        keep_python_outputs(model, feeds, outputs)
    got = outputs[0]
    try:
        np.testing.assert_array_equal(got, peer_outputs(model, feeds, "tflm", isolate=True)[0])
    except PeerCrashed:
        assert CASES[name][0] == "DEPTHWISE_CONV_2D" and not CASES[name][3]  # TFLM needs a depthwise bias
    assert np.unique(got).size > 2, "degenerate case: output saturated"
    if runtime == "c":  # the plain build == Python; the DSP code emulated on the host (C-only) == the plain build
        np.testing.assert_array_equal(got, peer_outputs(model, feeds, "python")[0])
        dsp_runner = request.getfixturevalue("dsp_runner")  # built only when a C case runs
        np.testing.assert_array_equal(_run_exe(dsp_runner, model, feeds, got, tmp_path), got)


@needs_c_runtime
def test_requantization_fast_form_matches_mbqm(tmp_path):
    """edge_rq_make / edge_rq_apply (two SMMLAR on DSP cores) == edge_mbqm + zero point over random and edge
    accumulators, multipliers and shifts, in the plain and the emulated-DSP build."""
    src = tmp_path / "rq.c"
    src.write_text(r"""
#include <stdio.h>
#include "edge_fixedpoint.h"
#include "edge_dsp.h"
static unsigned long long s = 88172645463325252ull;
static uint32_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (uint32_t)s; }
int main(void) {
    static const int32_t edge[] = {0, 1, -1, 2, -2, 3, -3, 2147483647, -2147483647 - 1, 1 << 30, -(1 << 30),
                                   (1 << 30) - 1, -(1 << 30) + 1, 12345, -12345};
    long bad = 0, covered = 0, refused = 0;
    for (int it = 0; it < 400000; it++) {
        int32_t m = it % 7 == 0 ? 0 : (int32_t)(0x40000000u + (rnd() & 0x3fffffffu));
        int32_t sh = m == 0 ? 0 : (int32_t)(rnd() % 40) - 35, zp = (int32_t)(rnd() % 256) - 128, x;
        edge_rq_t q;
        if (it % 11 == 1) m = 2147483647;
        if (it % 13 == 2) m = 1 << 30;
        x = it % 3 == 0 ? edge[rnd() % 15] : it % 3 == 1 ? (int32_t)rnd() : (int32_t)(rnd() % 200001) - 100000;
        if (edge_rq_make(&q, m, sh) != 0) { refused++; continue; }
        covered++;
        if (edge_rq_apply(&q, x, zp) != edge_mbqm(x, m, sh) + zp) bad++;
    }
    printf("%ld %ld %ld\n", bad, covered, refused);
    return 0;
}
""")
    for flags in ([], ["-DEDGE_EMULATE_DSP"]):
        exe = tmp_path / "rq"
        proc = subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", *flags, f"-I{FW / 'src'}",
                               f"-I{FW / 'include'}", "-o", str(exe), str(src), "-lm"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        bad, covered, refused = map(int, subprocess.run([str(exe)], capture_output=True, text=True,
                                                        check=True).stdout.split())
        assert bad == 0 and covered > 200000 and refused > 10000, (flags, bad, covered, refused)


# ------------------------------------------------------------------------------------------------ on the M4

@pytest.mark.slow
@needs_c_runtime
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_fast_paths_on_cortex_m4_under_qemu(tmp_path):
    """The real assembly loops and SMMLAR requantization (a Cortex-M4 image per case, and person_detect when
    ../shared is there) == Python."""
    build = tmp_path / "b"
    models = {name: _model(name)[0] for name in CASES}
    person = ROOT.parent / "shared" / "models" / "tflite-micro" / "person_detect.tflite"
    if person.is_file():
        models["person_detect"] = person.read_bytes()
    failures = m4_image_mismatches(models, build)
    assert not failures, f"M4 output differs from Python on {failures}"


@pytest.mark.parametrize("units,depth,batches,bias,act", [(1, 3, 1, True, "NONE"), (3, 7, 2, False, "RELU"),
                                                          (4, 16, 1, True, "RELU6"), (10, 37, 3, True, "NONE"),
                                                          (13, 560, 1, False, "RELU_N1_TO_1"),
                                                          (16, 9, 2, True, "NONE")])
def test_fully_connected_float32_unit_groups(runtime, units, depth, batches, bias, act):
    # float32 FULLY_CONNECTED runs eight units at a time in C (the last group repeats its last row where units
    # run out): each runtime == numpy and TFLM within the float tolerance, and C == Python, every unit of the
    # last group written from its own row
    rng = np.random.default_rng(units * 1000 + depth)
    w = T((units, depth), "FLOAT32", data=rng.standard_normal((units, depth)).astype(np.float32))
    b = T((units,), "FLOAT32", data=rng.standard_normal(units).astype(np.float32)) if bias else None
    model = op_model("FULLY_CONNECTED", [T((batches, depth), "FLOAT32"), w, b], [T((batches, units), "FLOAT32")],
                     options={"fused_activation_function": act})
    feeds = [rng.standard_normal((batches, depth)).astype(np.float32)]
    outputs = run_on(runtime, model, feeds)
    if runtime == "python":  # the C case's reference
        keep_python_outputs(model, feeds, outputs)
    got = outputs[0]
    ref = feeds[0] @ w.data.T.astype(np.float64) + (b.data if bias else 0)
    lo, hi = {"NONE": (-np.inf, np.inf), "RELU": (0, np.inf), "RELU6": (0, 6), "RELU_N1_TO_1": (-1, 1)}[act]
    np.testing.assert_allclose(got, np.clip(ref, lo, hi), rtol=1e-5, atol=1e-5)
    for peer in ("python", "tflm") if runtime == "c" else ("tflm",):
        np.testing.assert_allclose(got, peer_outputs(model, feeds, peer)[0], rtol=1e-5, atol=1e-6, err_msg=peer)


@pytest.mark.parametrize("offset, refused", [(0.0195, False), (0.0205, True), (-0.0205, True)])
def test_fully_connected_bias_scale_check(runtime, offset, refused):
    """A per-tensor int8 FULLY_CONNECTED whose bias scale is input x weight scale moved by ``offset`` x the output
    scale: within 0.02 it runs (== TFLM), past it both runtimes refuse the node in one line. The C check works on
    the scales' bits with integers (edge_far_ratio: no soft double on the Cortex-M4F); the Python one in double."""
    from edge_sdk.errors import ModelError

    in_s, w_s, out_s = 0.05, 0.01, 0.02
    bias_s = float(np.float32(in_s) * np.float64(np.float32(w_s)) + offset * np.float32(out_s))
    rng = np.random.default_rng(3)
    model = op_model("FULLY_CONNECTED", [T((2, 8), "INT8", in_s, 3),
                                         T((4, 8), "INT8", w_s, 0, data=rng.integers(-127, 128, (4, 8), np.int8)),
                                         T((4,), "INT32", bias_s, 0, data=rng.integers(-500, 500, 4, np.int32))],
                     [T((2, 4), "INT8", out_s, -2)])
    x = rng.integers(-128, 128, (2, 8), np.int8)
    if refused:
        with pytest.raises(ModelError, match="bias scale"):
            run_on(runtime, model, [x])
        return
    (y,) = run_on(runtime, model, [x])
    assert np.array_equal(y, peer_outputs(model, [x], "tflm")[0])
