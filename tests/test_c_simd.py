"""The C runtime's fast paths for 64-bit Linux CPUs (firmware_c/src/simd/): every SIMD level this CPU has
(edge_simd_set caps the level picked at prepare) must give the same bytes as the portable C kernels (level 0)
on random shapes — odd channel counts, padding, strides, dilations, per-channel and per-tensor weights, input
and output zero points, bias or none — and the same bytes as TFLM on the real models in ../shared.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import shared_model
from tests.oprunner import T, op_model
from tests.peers import run_tflm
from tests.conftest import needs_c_runtime
from tests.simd_common import levels  # noqa: F401 (a fixture; backend: tests/conftest.py)
from tests.simd_common import aarch64_build, run_at_level

pytestmark = needs_c_runtime


_run = run_at_level


def _same_at_every_level(backend, levels, model, feeds, **kw):
    lib, lv = levels
    ref = _run(backend, lib, 0, model, feeds)
    for level in lv:
        got = _run(backend, lib, level, model, feeds, **kw)
        for r, g in zip(ref, got):
            np.testing.assert_array_equal(g, r, err_msg=f"SIMD level {level} differs from the portable kernel")
    return ref


def _out(padding, stride, dil, size, k):
    eff = (k - 1) * dil + 1
    return (size + stride - 1) // stride if padding == "SAME" else (size + stride - eff) // stride


def _q(shape, rng, scale):
    return T(shape, "INT8", scale, int(rng.integers(-128, 128)))


def _conv_case(rng, depthwise=False, multiplier=None):
    kh, kw = (int(v) for v in rng.choice([1, 1, 2, 3, 3, 5], 2))
    sh, sw = (int(v) for v in rng.choice([1, 1, 2, 3], 2))
    dh, dw = (int(v) for v in rng.choice([1, 1, 2], 2)) if rng.random() < 0.3 else (1, 1)
    padding = str(rng.choice(["SAME", "VALID"]))
    h = int(rng.integers((kh - 1) * dh + 1, 14))
    w = int(rng.integers((kw - 1) * dw + 1, 14))
    n = int(rng.choice([1, 1, 2]))
    c = int(rng.choice([1, 3, 4, 5, 8, 16, 17, 31, 33, 64, 70]))
    if depthwise and rng.random() < 0.4:  # one input channel, several outputs (micro_speech's first layer)
        c = 1
    mult = int(rng.choice([1, 4, 8, 17])) if depthwise and c == 1 else (int(rng.choice([1, 1, 1, 2])) if depthwise else 1)
    if multiplier:  # several input channels, depth multiplier > 1
        c = max(c, 2)
        mult = multiplier
    o = c * mult if depthwise else int(rng.choice([1, 2, 7, 8, 15, 16, 17, 32, 33, 40, 64, 65]))
    oh, ow = _out(padding, sh, dh, h, kh), _out(padding, sw, dw, w, kw)
    pc = bool(rng.random() < 0.7)
    wshape = (1, kh, kw, o) if depthwise else (o, kh, kw, c)
    k = kh * kw * (1 if depthwise else c)
    wscale = list(rng.uniform(0.3, 3, o) / (20 * np.sqrt(k))) if pc else float(1 / (20 * np.sqrt(k)))
    wt = T(wshape, "INT8", wscale, 0, quantized_dimension=3 if depthwise else 0,
           data=rng.integers(-127, 128, wshape, dtype=np.int8))
    b = T((o,), "INT32", 1.0, 0, data=rng.integers(-3000, 3000, o).astype(np.int32)) if rng.random() < 0.8 else None
    act = str(rng.choice(["NONE", "RELU", "RELU6"]))
    opts = {"padding": padding, "stride_h": sh, "stride_w": sw, "dilation_h_factor": dh, "dilation_w_factor": dw,
            "fused_activation_function": act}
    if depthwise:
        opts["depth_multiplier"] = mult
    x = _q((n, h, w, c), rng, 0.05)
    y = _q((n, oh, ow, o), rng, 0.02)
    op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    model = op_model(op, [x, wt, b], [y], options=opts, version=3)
    return model, [rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)]


@pytest.mark.parametrize("seed", range(40))
def test_conv_2d_simd_equals_portable(backend, levels, seed):
    rng = np.random.default_rng(1000 + seed)
    model, feeds = _conv_case(rng)
    _same_at_every_level(backend, levels, model, feeds)


# (pixels h x w, input channels, output channels): the VNNI GEMM's tails. Its passes take 12 pixels (two halves of 6
# beside 4 blocks of 16 channels, 12 rows beside the last 1-2 blocks), its k steps 4 values (a 64-byte chunk of a
# row 16 steps): pixels 1 (the one-row path), 5, 7, 11, 13, 25 (not multiples of 6 / 12, a half-empty second half),
# output channels 1, 24, 40, 65 (a block partly valid), 48 (6 x 3), 72, 200 (after full 64-channel groups: 1 and 1/2
# blocks left), input channels not multiples of 4 and past one 64-byte chunk (67, 130). At that level an expansion
# (o >= 2c: the first three, 3x4x64-128 and the last three) runs the GEMM, the others the indirection conv.
_GEMM_TAILS = [((1, 1), 5, 200), ((1, 5), 3, 24), ((1, 7), 16, 48), ((1, 11), 67, 65), ((13, 1), 130, 72),
               ((5, 5), 33, 40), ((2, 6), 8, 1), ((3, 4), 64, 128), ((1, 13), 7, 72), ((5, 5), 16, 200), ((1, 11), 24, 96)]


@pytest.mark.parametrize("hw,c,o", _GEMM_TAILS, ids=[f"{h}x{w}x{c}-{o}" for (h, w), c, o in _GEMM_TAILS])
def test_conv_1x1_gemm_tails_equal_portable_and_tflm(backend, levels, hw, c, o):
    """int8 1x1 stride-1 CONV_2D at every level: the same bytes as the portable kernel and TFLM on pixel counts, input
    and output channels off the tiles' multiples; at AVX-512 VNNI the indirection conv's one tap, or the direct
    GEMM for a narrow input widened."""
    rng = np.random.default_rng(hw[0] * 1000 + hw[1] * 100 + c + o)
    wscale = list(rng.uniform(0.3, 3, o) / (20 * np.sqrt(c)))
    wt = T((o, 1, 1, c), "INT8", wscale, 0, quantized_dimension=0, data=rng.integers(-127, 128, (o, 1, 1, c), dtype=np.int8))
    b = T((o,), "INT32", 1.0, 0, data=rng.integers(-300, 300, o).astype(np.int32))
    x, y = T((1, *hw, c), "INT8", 0.05, int(rng.integers(-20, 20))), T((1, *hw, o), "INT8", 0.02, int(rng.integers(-20, 20)))
    model = op_model("CONV_2D", [x, wt, b], [y], options={"padding": "VALID", "stride_h": 1, "stride_w": 1,
                                                          "dilation_h_factor": 1, "dilation_w_factor": 1,
                                                          "fused_activation_function": "NONE"}, version=3)
    feeds = [rng.integers(-128, 128, (1, *hw, c), dtype=np.int8)]
    ref = _same_at_every_level(backend, levels, model, feeds)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])
    assert np.unique(ref[0]).size > 1  # requantized values, not one clamped constant
    lib, lv = levels
    if 2 not in lv:
        return
    # the path at AVX-512 VNNI (conv_2d.c): the indirection conv (no fast-path scratch) but for an expansion (o >= 2c),
    # which keeps the GEMM on its flipped copy of 12 rows (its work area as scratch), unless few channels (o <= 8, c a
    # multiple of 4 up to 64: edge_simd_qgemm_few, no work area) or the pixel-lane kernel takes it (AVX-512 VBMI)
    lib.edge_simd_set(2)
    try:
        it = backend.CInterpreter(model_content=model)
        it.allocate_tensors()
    finally:
        lib.edge_simd_set(-1)
    lanes = has_vbmi() and qconv_lanes_bytes((*hw, c, o, 1, 1, 1, "VALID", 1)) > 0
    gemm = o >= 2 * c and not (o <= 8 and c % 4 == 0 and c <= 64) and not lanes
    assert (it.arena_parts()["fast_path_scratch"] > 0) == gemm


@pytest.mark.parametrize("seed", range(40))
def test_depthwise_simd_equals_portable(backend, levels, seed):
    rng = np.random.default_rng(2000 + seed)
    model, feeds = _conv_case(rng, depthwise=True)
    _same_at_every_level(backend, levels, model, feeds)


@pytest.mark.parametrize("seed", range(12))
def test_depthwise_multiplier_above_one_simd_equals_portable_and_tflm(backend, levels, seed):
    """Depth multiplier 2, 3, 4, 8 on several input channels (the fast path's m passes over one pixel's taps)."""
    rng = np.random.default_rng(2500 + seed)
    model, feeds = _conv_case(rng, depthwise=True, multiplier=(2, 3, 4, 8)[seed % 4])
    ref = _same_at_every_level(backend, levels, model, feeds)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])


@pytest.mark.parametrize("seed", range(20))
def test_fully_connected_simd_equals_portable(backend, levels, seed):
    rng = np.random.default_rng(3000 + seed)
    batch = int(rng.choice([1, 1, 2, 3, 5, 9]))
    depth = int(rng.choice([1, 3, 8, 15, 16, 64, 100, 257]))
    units = int(rng.choice([1, 2, 10, 16, 17, 33, 128]))
    pc = bool(rng.random() < 0.5)
    wscale = list(rng.uniform(0.3, 3, units) / (20 * np.sqrt(depth))) if pc else float(1 / (20 * np.sqrt(depth)))
    wt = T((units, depth), "INT8", wscale, 0, data=rng.integers(-127, 128, (units, depth), dtype=np.int8))
    bscale = [0.05 * v for v in wscale] if pc else 0.05 * wscale  # TFLM checks it against input x weight scale
    b = T((units,), "INT32", bscale, 0, data=rng.integers(-3000, 3000, units).astype(np.int32)) \
        if rng.random() < 0.8 else None
    x = _q((batch, depth), rng, 0.05)
    y = _q((batch, units), rng, 0.02)
    model = op_model("FULLY_CONNECTED", [x, wt, b], [y],
                     options={"fused_activation_function": str(rng.choice(["NONE", "RELU"]))})
    _same_at_every_level(backend, levels, model, [rng.integers(-128, 128, (batch, depth), dtype=np.int8)])


def test_saturating_sums_and_extreme_zero_points(backend, levels):
    """Input zero point -128 / 127, weights at +-127 and inputs at the extremes: the largest products and the
    bias fold (input_offset * sum w) at its widest."""
    rng = np.random.default_rng(7)
    for zp in (-128, 127):
        wt = T((33, 3, 3, 70), "INT8", 0.0005, 0, data=np.where(rng.random((33, 3, 3, 70)) < 0.5, -127, 127)
               .astype(np.int8))
        x = T((1, 6, 7, 70), "INT8", 0.05, zp)
        y = T((1, 6, 7, 33), "INT8", 0.5, int(rng.integers(-20, 20)))
        model = op_model("CONV_2D", [x, wt, None], [y], options={"padding": "SAME", "stride_h": 1, "stride_w": 1,
                                                                   "dilation_h_factor": 1, "dilation_w_factor": 1}, version=3)
        feeds = [np.where(rng.random((1, 6, 7, 70)) < 0.5, -128, 127).astype(np.int8)]
        out = _same_at_every_level(backend, levels, model, feeds)[0]
        assert np.unique(out).size > 2


@pytest.mark.parametrize("out_zp", [-128, -3, 127])
@pytest.mark.parametrize("kernel,c,o,act", [(1, 16, 96, "RELU6"), (1, 24, 40, "NONE"), (3, 8, 64, "RELU"),
                                            (3, 20, 72, "RELU6")])
def test_vnni_pairs_of_blocks_packed_to_bytes_equal_portable_and_tflm(backend, levels, out_zp, kernel, c, o, act):
    """At AVX-512 VNNI two whole 16-channel blocks are requantized and packed to 32 bytes together (saturating
    packs, the zero point added in int16, the clamp on bytes), an odd or partial last block alone: the GEMM (1x1,
    a narrow input widened) and the indirection conv (3x3), output zero points at both ends (every value
    saturating one way), RELU / RELU6's narrow clamps; the portable kernel's and TFLM's bytes."""
    rng = np.random.default_rng((out_zp + 128) * 7 + kernel * 100 + c + o)
    k = kernel * kernel * c
    wt = T((o, kernel, kernel, c), "INT8", list(rng.uniform(0.3, 3, o) / (20 * np.sqrt(k))), 0, quantized_dimension=0,
           data=rng.integers(-127, 128, (o, kernel, kernel, c), dtype=np.int8))
    b = T((o,), "INT32", 1.0, 0, data=rng.integers(-3000, 3000, o).astype(np.int32))
    x, y = T((1, 9, 11, c), "INT8", 0.05, int(rng.integers(-20, 20))), T((1, 9, 11, o), "INT8", 0.02, out_zp)
    model = op_model("CONV_2D", [x, wt, b], [y], options={"padding": "SAME", "stride_h": 1, "stride_w": 1,
                                                          "dilation_h_factor": 1, "dilation_w_factor": 1,
                                                          "fused_activation_function": act}, version=3)
    feeds = [rng.integers(-128, 128, (1, 9, 11, c), dtype=np.int8)]
    ref = _same_at_every_level(backend, levels, model, feeds)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])
    if act == "NONE" or out_zp < 127:  # RELU / RELU6 from zero point 127 clamp everything to 127
        assert np.unique(ref[0]).size > 2  # requantized values, not one clamped constant


@pytest.mark.parametrize("c,o", [(576, 1024), (130, 40), (72, 17), (5000, 33)])
def test_conv_1x1_on_one_pixel_equals_portable_and_tflm(backend, levels, c, o):
    """A 1x1 CONV_2D on a 1x1 input (squeeze-excite, classifier heads): at AVX-512 VNNI the pixel goes through the
    FULLY_CONNECTED row kernel (its filter packed as the GEMM's); c 5000 is past that path's 4096-byte copy (the
    indirection tile's). The portable kernel's and TFLM's bytes."""
    rng = np.random.default_rng(c + o)
    wt = T((o, 1, 1, c), "INT8", list(rng.uniform(0.3, 3, o) / (20 * np.sqrt(c))), 0, quantized_dimension=0,
           data=rng.integers(-127, 128, (o, 1, 1, c), dtype=np.int8))
    b = T((o,), "INT32", 1.0, 0, data=rng.integers(-3000, 3000, o).astype(np.int32))
    x, y = T((1, 1, 1, c), "INT8", 0.05, int(rng.integers(-20, 20))), T((1, 1, 1, o), "INT8", 0.5, -7)
    model = op_model("CONV_2D", [x, wt, b], [y], options={"padding": "SAME", "stride_h": 1, "stride_w": 1,
                                                          "dilation_h_factor": 1, "dilation_w_factor": 1,
                                                          "fused_activation_function": "RELU"}, version=3)
    feeds = [rng.integers(-128, 128, (1, 1, 1, c), dtype=np.int8)]
    ref = _same_at_every_level(backend, levels, model, feeds)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])
    assert np.unique(ref[0]).size > 2


@pytest.mark.parametrize("name", ["tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite",
                                  "tflite-micro/person_detect.tflite"])
def test_real_models_bit_exact_with_tflm(backend, levels, name):
    path = shared_model(name)
    rng = np.random.default_rng(5)
    lib, lv = levels
    c = backend.CInterpreter(model_path=str(path))
    c.allocate_tensors()
    feeds = [rng.integers(-128, 128, d["shape"], dtype=np.int8) for d in c.get_input_details()]
    tflm = run_tflm(path.read_bytes(), feeds, isolate=True)
    for level in [0, *lv]:
        got = _run(backend, lib, level, path, feeds)
        for g, t in zip(got, tflm):
            np.testing.assert_array_equal(g, t, err_msg=f"SIMD level {level} vs TFLM on {name}")


def _threaded(backend, model, feeds, threads):
    c = backend.CInterpreter(model_content=model, num_threads=threads)
    c.allocate_tensors()
    assert c.num_threads == threads
    for d, x in zip(c.get_input_details(), feeds):
        c.set_tensor(d["index"], x)
    c.invoke()
    return [np.array(c.get_tensor(d["index"])) for d in c.get_output_details()]


@pytest.mark.parametrize("seed", range(6))
def test_threads_give_the_same_bytes(backend, seed):
    """Large conv / depthwise / FC layers split across 2, 3 and 7 threads: the bytes of one thread."""
    rng = np.random.default_rng(4000 + seed)
    kind = seed % 3
    if kind == 2:
        depth, units, batch = 2100, 257, int(rng.choice([1, 9, 33]))  # batch 1: 540K MACs, still 2 threads
        wt = T((units, depth), "INT8", 0.002, 0, data=rng.integers(-127, 128, (units, depth), dtype=np.int8))
        model = op_model("FULLY_CONNECTED", [_q((batch, depth), rng, 0.05), wt, None], [_q((batch, units), rng, 0.05)])
        feeds = [rng.integers(-128, 128, (batch, depth), dtype=np.int8)]
    else:
        c, o, k = (64, 96, 3) if kind == 0 else (96, 96, 3)
        shape = (o, k, k, c) if kind == 0 else (1, k, k, o)
        wt = T(shape, "INT8", list(rng.uniform(0.001, 0.004, o)), 0, quantized_dimension=3 if kind else 0,
               data=rng.integers(-127, 128, shape, dtype=np.int8))
        opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1, "dilation_w_factor": 1}
        if kind:
            opts["depth_multiplier"] = 1
        model = op_model("DEPTHWISE_CONV_2D" if kind else "CONV_2D",
                         [_q((1, 37, 29, c), rng, 0.05), wt, None], [_q((1, 37, 29, o), rng, 0.05)],
                         options=opts, version=3)
        feeds = [rng.integers(-128, 128, (1, 37, 29, c), dtype=np.int8)]
    one = _threaded(backend, model, feeds, 1)
    for n in (2, 3, 7):
        for a, b in zip(one, _threaded(backend, model, feeds, n)):
            np.testing.assert_array_equal(b, a, err_msg=f"{n} threads")


def test_pool_runs_every_part_once_in_its_slots(backend):
    """edge_simd_parallel (src/simd/edge_threads.c): every part of every job runs exactly once, in a slot below
    the job's own count even when more workers exist (a 7-slot job first starts 6 of them), one job after
    another with and without pauses (workers spinning, then asleep)."""
    import ctypes
    import time

    lib = backend.library()
    fn_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
    lib.edge_simd_parallel.argtypes = [ctypes.c_int32, ctypes.c_int32, fn_t, ctypes.c_void_p]
    lib.edge_simd_parallel.restype = None
    runs = []
    cb = fn_t(lambda _ctx, t, n, slot: runs.append((t, n, slot)))
    for i, (parts, slots) in enumerate([(14, 7), (8, 2), (5, 3), (1, 4), (9, 1), (64, 2), (3, 7), (6, 2)] * 3):
        runs.clear()
        lib.edge_simd_parallel(parts, slots, cb, None)
        assert sorted(t for t, _, _ in runs) == list(range(parts)), (parts, slots, runs)
        top = slots if parts > 1 and slots > 1 else 1  # one part or one slot: all in the caller's slot 0
        assert all(n == parts and 0 <= slot < top for _, n, slot in runs), (parts, slots, runs)
        if i % 4 == 3:
            time.sleep(0.002)  # past the spin: the workers sleep


def test_two_interpreters_invoked_from_two_threads(backend):
    """Two 2-thread interpreters invoked at once from two Python threads (the pool is one per process: the
    second caller runs its parts itself): each gives its one-thread bytes, every time."""
    import threading

    rng = np.random.default_rng(77)
    wt = T((64, 3, 3, 32), "INT8", 0.002, 0, data=rng.integers(-127, 128, (64, 3, 3, 32), dtype=np.int8))
    model = op_model("CONV_2D", [_q((1, 30, 30, 32), rng, 0.05), wt, None], [_q((1, 30, 30, 64), rng, 0.05)],
                     options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                              "dilation_w_factor": 1}, version=3)
    feeds = [[rng.integers(-128, 128, (1, 30, 30, 32), dtype=np.int8)] for _ in range(2)]
    want = [_threaded(backend, model, f, 1)[0] for f in feeds]
    its = []
    for f in feeds:
        it = backend.CInterpreter(model_content=model, num_threads=2)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], f[0])
        its.append(it)
    bad = []

    def loop(k):
        for _ in range(30):
            its[k].invoke()
            if not np.array_equal(its[k].get_tensor(its[k].get_output_details()[0]["index"]), want[k]):
                bad.append(k)

    threads = [threading.Thread(target=loop, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads) and not bad


def test_num_threads_checked_like_litert(backend):
    model = op_model("FULLY_CONNECTED", [T((1, 4), "INT8", 0.1, 0),
                                         T((2, 4), "INT8", 0.1, 0, data=np.ones((2, 4), np.int8)), None],
                     [T((1, 2), "INT8", 0.1, 0)])
    with pytest.raises(ValueError, match="num_threads should >= 1"):
        backend.CInterpreter(model_content=model, num_threads=0)
    with pytest.raises(ValueError, match="type of num_threads should be int"):
        backend.CInterpreter(model_content=model, num_threads=1.5)


def test_real_model_threads(backend):
    path = shared_model("tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite")
    rng = np.random.default_rng(9)
    feeds = [rng.integers(-128, 128, (1, 3, 224, 224), dtype=np.int8)]
    data = path.read_bytes()
    one = _threaded(backend, data, feeds, 1)
    for a, b in zip(one, _threaded(backend, data, feeds, 2)):
        np.testing.assert_array_equal(b, a)


def test_cli_threads_flag(backend, tmp_path):
    """--threads on edge bench / run / serve: an int >= 1 (else exit 2); bench --backend c runs with it."""
    import json
    import subprocess
    import sys

    rng = np.random.default_rng(3)
    wt = T((16, 3, 3, 8), "INT8", 0.01, 0, data=rng.integers(-127, 128, (16, 3, 3, 8), dtype=np.int8))
    model = op_model("CONV_2D", [_q((1, 20, 20, 8), rng, 0.05), wt, None], [_q((1, 20, 20, 16), rng, 0.05)],
                     options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                              "dilation_w_factor": 1}, version=3)
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    cli = [sys.executable, "-m", "edge_sdk.cli"]
    ok = subprocess.run([*cli, "bench", str(path), "--backend", "c", "--threads", "2", "--runs", "3", "--json"],
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert json.loads(ok.stdout)["threads"] == 2
    for cmd in (["bench", str(path)], ["run", str(path), "x.npy"], ["serve", str(path)]):
        bad = subprocess.run([*cli, *cmd, "--threads", "0"], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "--threads: must be an integer >= 1" in bad.stderr, (cmd, bad.stderr)


# ------------------------------------------------------------------------------------------------ aarch64 (qemu-user)

@pytest.fixture(scope="module")
def aarch64_runner():
    """firmware_c built for aarch64 (make aarch64), run under qemu-user; skips where the cross tools are absent."""
    return aarch64_build()


@pytest.mark.slow
def test_aarch64_neon_and_sdot_equal_portable_and_x86(backend, aarch64_runner, tmp_path):
    """NEON (qemu -cpu cortex-a53: a Pi 3 / 4 core, no SDOT), SDOT (-cpu max) and the portable kernels
    (EDGE_SIMD_LEVEL=0) give the bytes of the x86-64 host build (its own SIMD level) on random int8 conv /
    depthwise / FC / ADD / SUB / MUL / pooling layers and on person_detect."""
    from tests.test_c_cross import HOST_RUNNER, _run

    qemu, sysroot, runner = aarch64_runner
    models = []
    for seed in range(8):
        rng = np.random.default_rng(5000 + seed)
        models.append(_conv_case(rng, depthwise=seed % 2 == 1))
    for seed in (0, 1, 2):  # depth multiplier > 1 on several channels (seeds whose multipliers take the fast path)
        models.append(_conv_case(np.random.default_rng(2500 + seed), depthwise=True, multiplier=(2, 3, 4)[seed]))
    rng = np.random.default_rng(6000)
    wt = T((37, 300), "INT8", list(rng.uniform(0.001, 0.004, 37)), 0,
           data=rng.integers(-127, 128, (37, 300), dtype=np.int8))
    models.append((op_model("FULLY_CONNECTED", [_q((3, 300), rng, 0.05), wt, None], [_q((3, 37), rng, 0.05)]),
                   [rng.integers(-128, 128, (3, 300), dtype=np.int8)]))
    for seed in range(6):  # ADD / SUB / MUL (same shapes and broadcasts) and both pools
        rng = np.random.default_rng(6100 + seed)
        if seed < 4:
            sa_shape, sb_shape = _binary_shapes(rng, seed)
            ins = [T(sa_shape, "INT8", 0.05, -3), T(sb_shape, "INT8", 0.07, 11)]
            op = ("ADD", "SUB", "MUL", "MUL")[seed]
            so = 0.004 if op == "MUL" else 0.09
            models.append((op_model(op, ins, [T(np.broadcast_shapes(sa_shape, sb_shape), "INT8", so, 5)]),
                           [rng.integers(-128, 128, sh, dtype=np.int8) for sh in (sa_shape, sb_shape)]))
        else:
            models.append(_pool_case(rng, "AVERAGE_POOL_2D" if seed == 4 else "MAX_POOL_2D"))
    # 8-bit tables (TBL / TBX at the NEON levels), int8 PRELU's per-channel table, int8 SOFTMAX's exps at prepare
    every = np.resize(np.arange(-128, 128, dtype=np.int8), (1, 5, 7, 19))
    for op, y in (("LOGISTIC", T(every.shape, "INT8", 1 / 256, -128)), ("QUANTIZE", T(every.shape, "INT8", 0.05, -20))):
        models.append((op_model(op, [T(every.shape, "INT8", 0.07, 3)], [y]), [every]))
    slopes = rng.integers(-128, 128, (19,), dtype=np.int8)
    models.append((op_model("PRELU", [T(every.shape, "INT8", 0.05, 3), T((19,), "INT8", 0.01, -7, data=slopes)],
                            [T(every.shape, "INT8", 0.04, -2)]), [every]))
    models.append((op_model("SOFTMAX", [T((2, 700), "INT8", 0.1, 5)], [T((2, 700), "INT8", 1 / 256, -128)],
                            options={"beta": 1.0}), [rng.integers(-128, 128, (2, 700), dtype=np.int8)]))
    try:
        pd = shared_model("tflite-micro/person_detect.tflite")
        models.append((pd.read_bytes(), [rng.integers(-128, 128, (1, 96, 96, 1), dtype=np.int8)]))
    except pytest.skip.Exception:
        pass
    for i, (model, feeds) in enumerate(models):
        path = tmp_path / f"m{i}.tflite"
        path.write_bytes(model)
        host = _run([str(HOST_RUNNER)], path, feeds, tmp_path, 1)
        for cpu, env in (("cortex-a53", []), ("max", []), ("max", ["-E", "EDGE_SIMD_LEVEL=0"])):
            got = _run([qemu, "-cpu", cpu, *env, "-L", sysroot, str(runner)], path, feeds, tmp_path, 1)
            assert got == host, f"model {i}: aarch64 -cpu {cpu} {env} differs from the x86-64 host build"


def test_packed_weights_are_counted_in_the_arena(backend, levels):
    """The repacked weights live in the arena's persistent part: a SIMD level needs more arena than level 0 on
    a conv model, and exactly arena_used bytes are enough at that level (one byte less is refused)."""
    from edge_sdk.errors import ArenaTooSmallError

    lib, lv = levels
    if not lv:
        pytest.skip("this CPU has no SIMD level")
    rng = np.random.default_rng(11)
    wt = T((64, 3, 3, 32), "INT8", 0.002, 0, data=rng.integers(-127, 128, (64, 3, 3, 32), dtype=np.int8))
    model = op_model("CONV_2D", [_q((1, 10, 10, 32), rng, 0.05), wt, None], [_q((1, 10, 10, 64), rng, 0.05)],
                     options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                              "dilation_w_factor": 1}, version=3)
    used = {}
    for level in (0, lv[-1]):
        lib.edge_simd_set(level)
        try:
            it = backend.CInterpreter(model_content=model)
            it.allocate_tensors()
            info = it.plan_info()
            used[level] = max(info["arena_used"], info["high_water"])
            if level:
                backend.CInterpreter(model_content=model, arena_size=used[level]).allocate_tensors()
                with pytest.raises(ArenaTooSmallError):
                    backend.CInterpreter(model_content=model, arena_size=used[level] - 1).allocate_tensors()
        finally:
            lib.edge_simd_set(-1)
    assert info["persistent"] >= 64 * 3 * 3 * 32 and used[lv[-1]] > used[0]


@pytest.mark.parametrize("seed", range(16))
def test_add_sub_int8_simd_equals_portable_and_tflm(backend, levels, seed):
    """int8 ADD / SUB of same-shape inputs (odd lengths, any zero points and scales, activations, in place or
    not): every SIMD level == the portable kernel == TFLM."""
    rng = np.random.default_rng(8000 + seed)
    op = "ADD" if seed % 2 == 0 else "SUB"
    shape = (1, int(rng.integers(1, 40)), int(rng.integers(1, 40)), int(rng.choice([1, 3, 8, 17])))
    sa, sb, so = (float(v) for v in rng.uniform(0.01, 0.2, 3))
    a = T(shape, "INT8", sa, int(rng.integers(-128, 128)))
    b = T(shape, "INT8", sb, int(rng.integers(-128, 128)))
    y = T(shape, "INT8", so, int(rng.integers(-128, 128)))
    act = str(rng.choice(["NONE", "RELU", "RELU6"]))
    model = op_model(op, [a, b], [y], options={"fused_activation_function": act})
    feeds = [rng.integers(-128, 128, shape, dtype=np.int8) for _ in range(2)]
    ref = _same_at_every_level(backend, levels, model, feeds)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])


@pytest.mark.parametrize("scales", [(0.05, 0.07, 0.1), (0.1, 0.1, 0.2), (0.02, 0.0199, 0.0011), (0.2, 0.003, 0.05),
                                    (0.5, 0.00001, 0.3), (0.000007, 0.9, 0.01)])
def test_add_sub_int8_every_pair_of_values_at_every_level(backend, levels, scales):
    """Every (a, b) pair of int8 values (a 256 x 256 tensor) through ADD and SUB, scales with input ratios near 1/2
    and far below it (a right shift of 16 / 17 on the smaller input) and an output scale that takes a left shift:
    every SIMD level == the portable kernel (the 16-lane rows' one-shift requantization and both levels' 32-bit input
    steps, every rounding boundary the values reach; zero points -128 and 127 give |x - zp| = 255)."""
    sa, sb, so = scales
    a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
    feeds = [a.astype(np.int8).reshape(1, 256, 256, 1), b.astype(np.int8).reshape(1, 256, 256, 1)]
    for op, zps in (("ADD", (-3, 17, 5)), ("SUB", (101, -128, -40)), ("ADD", (127, -128, 0))):
        ts = [T((1, 256, 256, 1), "INT8", sc, zp) for sc, zp in zip((sa, sb, so), zps)]
        model = op_model(op, ts[:2], ts[2:], options={"fused_activation_function": "NONE"})
        _same_at_every_level(backend, levels, model, feeds)


def _binary_shapes(rng, seed):
    """Same shapes (odd lengths) for even seeds, broadcasts for odd ones: a scalar, a per-channel vector, a
    middle dimension of 1 (rows of step 0 and 1 on either side)."""
    shape = (1, int(rng.integers(1, 30)), int(rng.integers(1, 30)), int(rng.choice([1, 3, 8, 17, 40])))
    if seed % 2 == 0:
        return shape, shape
    kind = (seed // 2) % 4
    other = {0: (1,), 1: (shape[-1],), 2: (1, shape[1], 1, shape[3]), 3: (1, 1, shape[2], 1)}[kind]
    return (shape, other) if seed % 4 == 1 else (other, shape)


@pytest.mark.parametrize("seed", range(16))
def test_add_sub_broadcast_int8_simd_equals_portable_and_tflm(backend, levels, seed):
    """int8 ADD / SUB over broadcasts (each broadcast row through the fast path, operand steps 0 and 1)."""
    rng = np.random.default_rng(8500 + seed)
    op = "ADD" if seed % 3 else "SUB"
    sa_shape, sb_shape = _binary_shapes(rng, seed)
    out_shape = np.broadcast_shapes(sa_shape, sb_shape)
    sa, sb, so = (float(v) for v in rng.uniform(0.01, 0.2, 3))
    a = T(sa_shape, "INT8", sa, int(rng.integers(-128, 128)))
    b = T(sb_shape, "INT8", sb, int(rng.integers(-128, 128)))
    y = T(out_shape, "INT8", so, int(rng.integers(-128, 128)))
    model = op_model(op, [a, b], [y], options={"fused_activation_function": str(rng.choice(["NONE", "RELU"]))})
    feeds = [rng.integers(-128, 128, sa_shape, dtype=np.int8), rng.integers(-128, 128, sb_shape, dtype=np.int8)]
    ref = _same_at_every_level(backend, levels, model, feeds)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])


@pytest.mark.parametrize("ratio", [1 / 0.7, 600.0, 1 / 40.0, 3e-10, 1e-10])  # 0.5 * 0.3 / the output scale
def test_mul_int8_every_pair_of_values_at_every_level(backend, levels, ratio):
    """Every (a, b) pair of int8 values through MUL (a 256 x 256 tensor), output scales whose multiplier shifts left,
    right by a little and right by more than 31 (the 16-lane rows take 0..31, the 8-lane rows the rest), zero points
    at both ends: every SIMD level == the portable kernel, at every rounding boundary the products reach."""
    a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
    feeds = [a.astype(np.int8).reshape(1, 256, 256, 1), b.astype(np.int8).reshape(1, 256, 256, 1)]
    for zps in ((-3, 17, 5), (127, -128, -40)):
        ts = [T((1, 256, 256, 1), "INT8", sc, zp) for sc, zp in zip((0.5, 0.3, 0.5 * 0.3 / ratio), zps)]
        model = op_model("MUL", ts[:2], ts[2:], options={"fused_activation_function": "NONE"})
        ref = _same_at_every_level(backend, levels, model, feeds)
        assert np.unique(ref[0]).size > 1 or ratio < 1e-6  # a tiny multiplier rounds every product to the zp


@pytest.mark.parametrize("seed", range(16))
def test_mul_int8_simd_equals_portable_and_tflm(backend, levels, seed):
    """int8 MUL, same shapes and broadcasts, scales whose multiplier shifts left or right, zero points at
    the extremes, activations: every SIMD level == the portable kernel == TFLM."""
    rng = np.random.default_rng(8800 + seed)
    sa_shape, sb_shape = _binary_shapes(rng, seed)
    out_shape = np.broadcast_shapes(sa_shape, sb_shape)
    sa, sb = (float(v) for v in rng.uniform(0.005, 0.5, 2))
    so = float(sa * sb * rng.choice([0.3, 2.0, 40.0, 600.0]))  # a multiplier > 1 (left shift) and < 1
    zps = [int(v) for v in rng.integers(-128, 128, 3)]
    if seed % 5 == 0:
        zps = [-128, 127, 0]
    a = T(sa_shape, "INT8", sa, zps[0])
    b = T(sb_shape, "INT8", sb, zps[1])
    y = T(out_shape, "INT8", so, zps[2])
    act = "NONE" if seed % 5 == 0 else str(rng.choice(["NONE", "RELU", "RELU6"]))  # (x - -128) * (y - 127) <= 0
    model = op_model("MUL", [a, b], [y], options={"fused_activation_function": act})
    feeds = [rng.integers(-128, 128, sa_shape, dtype=np.int8), rng.integers(-128, 128, sb_shape, dtype=np.int8)]
    ref = _same_at_every_level(backend, levels, model, feeds)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])
    if act == "NONE" and (1,) not in (sa_shape, sb_shape):  # not all one value (RELU6 at a large scale may be)
        assert np.unique(ref[0]).size > 1


def _pool_case(rng, op):
    fh, fw = (int(v) for v in rng.choice([1, 2, 3, 5, 7], 2))
    sh, sw = (int(v) for v in rng.choice([1, 2, 3], 2))
    padding = str(rng.choice(["SAME", "VALID"]))
    h, w = int(rng.integers(fh, 16)), int(rng.integers(fw, 16))
    n = int(rng.choice([1, 1, 2]))
    c = int(rng.choice([1, 3, 8, 15, 16, 17, 32, 33, 64, 70]))
    oh, ow = _out(padding, sh, 1, h, fh), _out(padding, sw, 1, w, fw)
    q = (float(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 128)))
    model = op_model(op, [T((n, h, w, c), "INT8", *q)], [T((n, oh, ow, c), "INT8", *q)],
                     options={"padding": padding, "stride_w": sw, "stride_h": sh, "filter_width": fw,
                              "filter_height": fh, "fused_activation_function": str(rng.choice(["NONE", "RELU", "RELU6"]))})
    return model, [rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)]


@pytest.mark.parametrize("seed", range(20))
def test_pooling_int8_simd_equals_portable_and_tflm(backend, levels, seed):
    """int8 AVERAGE_POOL_2D / MAX_POOL_2D: windows cut by the padding (fewer cells, other counts), odd channel
    counts, strides, activations; a global 7x7 average as mobilenet's last pool."""
    rng = np.random.default_rng(9100 + seed)
    op = "AVERAGE_POOL_2D" if seed % 2 == 0 else "MAX_POOL_2D"
    if seed == 0:
        q = (0.02, -5)
        model = op_model(op, [T((1, 7, 7, 1280), "INT8", *q)], [T((1, 1, 1, 1280), "INT8", *q)],
                         options={"padding": "VALID", "stride_w": 1, "stride_h": 1, "filter_width": 7,
                                  "filter_height": 7})
        feeds = [rng.integers(-128, 128, (1, 7, 7, 1280), dtype=np.int8)]
    else:
        model, feeds = _pool_case(rng, op)
    ref = _same_at_every_level(backend, levels, model, feeds)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])


def test_average_pool_rounds_halves_away_from_zero(backend, levels):
    """Sums that sit exactly on a half (count 2 and 4, both signs): the double division truncates as C's."""
    q = (0.05, 0)
    model = op_model("AVERAGE_POOL_2D", [T((1, 2, 2, 16), "INT8", *q)], [T((1, 1, 2, 16), "INT8", *q)],
                     options={"padding": "SAME", "stride_w": 1, "stride_h": 2, "filter_width": 2, "filter_height": 2})
    x = np.zeros((1, 2, 2, 16), np.int8)
    x[0, :, 0, :] = np.array([[1, -1, 3, -3, 5, -5, 127, -128, 2, -2, 0, 1, -1, 126, -127, 7]] * 2, np.int8)
    x[0, 0, 1, :] = np.arange(-8, 8)
    x[0, 1, 1, :] = np.arange(-8, 8) + 1
    ref = _same_at_every_level(backend, levels, model, [x])
    np.testing.assert_array_equal(ref[0], run_tflm(model, [x])[0])


# ------------------------------------------------------------------------------ the GEMM levels (issue 26)
# (h, w, c, o, k, stride, padding, dilation): K = k * k * c, M = output pixels and N = o chosen off the blocks of
# every level (AVX2 8 channels x 4 rows, VNNI 16 x 4, AMX 32 x 32 with k in tiles of 64): K below, at and above 64,
# not a multiple of 4 or of 64; M under 8 (AMX leaves it to VNNI), between 16 and 32, past 32 by a few; N with a
# lone last 16-channel block and a partial one; 1x1 with stride 2 and with padding (the im2col route).
GEMM_SHAPES = [
    (7, 9, 70, 33, 1, 1, "VALID", 1),    # 1x1 direct, K 70 (two AMX tiles, the second mostly padding), M 63
    (12, 12, 96, 200, 1, 1, "VALID", 1),  # MobileNet-like 1x1: M 144 (4.5 passes of 32), N 200 (a lone block)
    (5, 7, 64, 48, 1, 1, "SAME", 1),      # K exactly one tile
    (6, 6, 130, 17, 1, 2, "SAME", 1),     # 1x1 stride 2: 9 pixels, K 130
    (3, 3, 27, 40, 1, 1, "VALID", 1),     # 9 rows: AMX with one partial A tile
    (2, 3, 160, 70, 1, 1, "VALID", 1),    # 6 rows: the VNNI path at the AMX level
    (9, 9, 3, 32, 3, 2, "SAME", 1),       # K 27 (one short tile)
    (10, 11, 20, 40, 3, 1, "SAME", 2),    # dilation 2, K 180
    (8, 8, 16, 24, 5, 1, "VALID", 1),     # 5x5, K 400
    (17, 5, 33, 129, 3, 2, "SAME", 1),    # N 129: one valid channel in the last block
]


def _gemm_conv_case(shape, seed):
    h, w, c, o, k, stride, padding, dil = shape
    rng = np.random.default_rng(seed)
    oh, ow = _out(padding, stride, dil, h, k), _out(padding, stride, dil, w, k)
    kk = k * k * c
    wscale = list(rng.uniform(0.3, 3, o) / (20 * np.sqrt(kk)))
    wt = T((o, k, k, c), "INT8", wscale, 0, data=rng.integers(-127, 128, (o, k, k, c), dtype=np.int8))
    b = T((o,), "INT32", [0.05 * v for v in wscale], 0, data=rng.integers(-3000, 3000, o).astype(np.int32))
    model = op_model("CONV_2D", [_q((1, h, w, c), rng, 0.05), wt, b], [_q((1, oh, ow, o), rng, 0.02)],
                     options={"padding": padding, "stride_h": stride, "stride_w": stride, "dilation_h_factor": dil,
                              "dilation_w_factor": dil, "fused_activation_function": "RELU6"}, version=3)
    return model, [rng.integers(-128, 128, (1, h, w, c), dtype=np.int8)]


@pytest.mark.parametrize("shape", GEMM_SHAPES, ids=lambda s: "x".join(map(str, s[:5])) + f"s{s[5]}{s[6]}d{s[7]}")
def test_conv_gemm_levels_equal_portable_tflm_and_litert(backend, levels, shape):
    """Every GEMM level (AVX2, AVX-512 VNNI, AMX where the CPU has them) gives the portable kernel's bytes, which
    are TFLM's; LiteRT's reference kernels within one quantum (its single rounding, ../shared/NOTES.md)."""
    from tests.peers import run_litert

    model, feeds = _gemm_conv_case(shape, sum(shape[:6]))
    ref = _same_at_every_level(backend, levels, model, feeds)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])
    lite = run_litert(model, feeds)[0]
    assert np.max(np.abs(ref[0].astype(np.int32) - lite.astype(np.int32))) <= 1


# (h, w, c, o, kh, kw, stride, padding, dilation, batch): the indirection conv's cases (edge_simd_qconv, level
# AVX-512 VNNI): c % 4 = 1, 2, 3 (each tap's last step a masked load of c % 4 bytes; c 3: a first layer, its last
# pixel's row the input's last bytes), c a multiple of 4; o under one 16-channel block, 4 blocks + a partial one
# (a 4-block tile and a 2-block one), 129 (one valid channel in the last block); pixels not a multiple of the tile's
# 6 rows; padding on every side, strides 2 and 3, dilation 2, a 1x1 filter with stride 2 (one tap), 5x3, batch 2;
# rows wide enough for tiles of 6 pixels with every tap inside (the tile's one address per tap), at c 3 too (its
# taps' 4th byte read whole where the input goes on past it).
QCONV_SHAPES = [
    (5, 30, 8, 24, 3, 3, 1, "SAME", 1, 1),
    (7, 40, 3, 16, 3, 3, 2, "SAME", 1, 2),
    (9, 33, 4, 16, 3, 3, 1, "SAME", 2, 1),
    (6, 29, 5, 70, 3, 5, 1, "VALID", 1, 1),
    (9, 9, 3, 32, 3, 3, 2, "SAME", 1, 1),
    (11, 7, 3, 16, 3, 3, 2, "VALID", 1, 2),
    (8, 8, 1, 8, 3, 3, 2, "SAME", 1, 1),
    (7, 9, 2, 5, 3, 3, 1, "SAME", 1, 1),
    (6, 6, 8, 72, 3, 3, 1, "SAME", 1, 1),
    (10, 11, 20, 40, 3, 3, 1, "SAME", 2, 1),
    (9, 8, 17, 129, 5, 3, 3, "SAME", 1, 1),
    (6, 6, 130, 17, 1, 1, 2, "SAME", 1, 1),
    (5, 5, 64, 64, 3, 3, 1, "VALID", 1, 2),
]


def has_vbmi() -> bool:
    """/proc/cpuinfo lists avx512vbmi (edge_simd_x86.c's pixel-lane kernel needs VPERMT2B / VPERMB)."""
    from pathlib import Path

    try:
        return "avx512vbmi" in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


def qconv_lanes_bytes(shape) -> int:
    """The pixel-lane block edge_simd_qconv_bytes adds for few input channels or a 1x1 projection into at most 32
    (edge_simd_x86.c lanes_fit, lanes_layout): a 128-byte head, 16 bytes of step data (rounded to a line) and a
    128-byte window permute per 4-byte step of k = kh * kw * c, the weights as 16-channel blocks of step dwords, each
    channel's multiplier (4 bytes, then rounded to 8) and two 64-bit constants; + 64 to start on a line. 0 where the
    shape fits neither form."""
    h, w, c, o, kh, kw, stride, padding, dil = shape[:9]
    point = kh == kw == 1 and stride == 1 and c % 4 == 0 and 8 <= c <= 64 and o <= 32
    window = c <= 4 and kw * c >= 3 and dil == 1 and kh <= 8 and 15 * stride * c + kw * c <= 128 and kh * kw * c <= 256
    if not point and not window:
        return 0
    steps, npad = -(-kh * kw * c // 4), -(-o // 16) * 16
    at = 128 + -(-steps * 16 // 64) * 64 + steps * 128 + npad * steps * 4 + npad * 4
    return -(-at // 8) * 8 + npad * 16 + 64


def _qconv_case(shape, seed):
    h, w, c, o, kh, kw, stride, padding, dil, n = shape
    rng = np.random.default_rng(seed)
    oh, ow = _out(padding, stride, dil, h, kh), _out(padding, stride, dil, w, kw)
    kk = kh * kw * c
    wscale = list(rng.uniform(0.3, 3, o) / (20 * np.sqrt(kk)))
    wt = T((o, kh, kw, c), "INT8", wscale, 0, data=rng.integers(-127, 128, (o, kh, kw, c), dtype=np.int8))
    b = T((o,), "INT32", [0.05 * v for v in wscale], 0, data=rng.integers(-3000, 3000, o).astype(np.int32))
    model = op_model("CONV_2D", [_q((n, h, w, c), rng, 0.05), wt, b], [_q((n, oh, ow, o), rng, 0.02)],
                     options={"padding": padding, "stride_h": stride, "stride_w": stride, "dilation_h_factor": dil,
                              "dilation_w_factor": dil, "fused_activation_function": "NONE"}, version=3)
    return model, [rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)], (oh, ow)


@pytest.mark.parametrize("shape", QCONV_SHAPES, ids=lambda s: "x".join(map(str, s[:6])) + f"s{s[6]}{s[7]}d{s[8]}n{s[9]}")
def test_indirection_conv_equals_portable_and_tflm_and_copies_no_window(backend, levels, shape):
    """At AVX-512 VNNI an int8 conv with a window runs the indirection conv: the portable kernel's bytes (TFLM's),
    no fast-path scratch (before it: 32 im2col rows of the window and the GEMM's work), and its packed bytes are the
    filter packed tap by tap, the two axis tables and the zero row (edge_simd_qconv_bytes), to the byte."""
    lib, lv = levels
    model, feeds, (oh, ow) = _qconv_case(shape, sum(shape[:7]))
    ref = _same_at_every_level(backend, levels, model, feeds)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])
    if 2 not in lv:
        pytest.skip("this CPU has no AVX-512 VNNI level: no indirection conv to measure")
    h, w, c, o, kh, kw = shape[:6]
    lib.edge_simd_set(2)
    try:
        it = backend.CInterpreter(model_content=model)
        it.allocate_tensors()
    finally:
        lib.edge_simd_set(-1)
    parts = it.arena_parts()
    npad, cpad = -(-o // 16) * 16, -(-c // 4) * 4
    # + 64: the block rounded up to a cache line (edge_simd_qconv_pack); + under 8: the persistent allocator's steps;
    # + the pixel-lane block (few input channels) and its own line
    want = 12 * npad + npad * kh * kw * cpad + 4 * (oh * kh + ow * kw) + cpad + 64 + qconv_lanes_bytes(shape)
    assert parts["fast_path_scratch"] == 0
    assert want <= parts["packed_weights"] < want + 8


@pytest.mark.parametrize("batch,depth,units", [(1, 1280, 1000), (1, 100, 129), (2, 257, 48), (3, 64, 33),
                                               (8, 70, 40), (33, 200, 17), (40, 96, 65)])
def test_fully_connected_gemm_levels_equal_portable_and_tflm(backend, levels, batch, depth, units):
    """One row (the 8-block row kernel), 2-3 rows (the constant-row tails), 8 rows and more (AMX at level 3)."""
    rng = np.random.default_rng(batch * 1000 + depth + units)
    wscale = list(rng.uniform(0.3, 3, units) / (20 * np.sqrt(depth)))
    wt = T((units, depth), "INT8", wscale, 0, data=rng.integers(-127, 128, (units, depth), dtype=np.int8))
    b = T((units,), "INT32", [0.05 * v for v in wscale], 0, data=rng.integers(-3000, 3000, units).astype(np.int32))
    model = op_model("FULLY_CONNECTED", [_q((batch, depth), rng, 0.05), wt, b], [_q((batch, units), rng, 0.02)],
                     options={"fused_activation_function": "NONE"})
    feeds = [rng.integers(-128, 128, (batch, depth), dtype=np.int8)]
    ref = _same_at_every_level(backend, levels, model, feeds)
    np.testing.assert_array_equal(ref[0], run_tflm(model, feeds)[0])


@pytest.mark.parametrize("shape", GEMM_SHAPES[:4] + GEMM_SHAPES[7:8], ids=lambda s: "x".join(map(str, s[:5])))
def test_conv_gemm_shapes_on_the_runtime_grid(runtime, shape):
    """The same layers on the Python interpreter and on the C runtime (its best level): TFLM's bytes."""
    from tests.oprunner import run_on

    model, feeds = _gemm_conv_case(shape, sum(shape[:6]))
    np.testing.assert_array_equal(run_on(runtime, model, feeds)[0], run_tflm(model, feeds)[0])


def _kernel_grants_amx() -> bool:
    """arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) (syscall 158 on x86-64) succeeds: Linux 5.16+."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True).syscall(158, 0x1023, 18) == 0


def test_amx_level_selected_where_the_cpu_has_it(backend, levels):
    """edge_simd_cpu_level picks the widest level this CPU (and its kernel) runs: AMX where /proc/cpuinfo lists
    amx_tile and amx_int8, else AVX-512 VNNI where it lists avx512_vnni and avx512bw (x86-64 Linux only)."""
    import platform
    from pathlib import Path

    if platform.machine() != "x86_64" or not Path("/proc/cpuinfo").is_file():
        pytest.skip("x86-64 Linux only")
    flags = set(next((ln.split(":", 1)[1].split() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("flags")), []))
    lib, lv = levels
    top = lv[-1] if lv else 0
    if {"amx_tile", "amx_int8", "avx512_vnni"} <= flags and _kernel_grants_amx():
        assert top == 3
    elif {"avx512_vnni", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        assert top == 2
    elif {"avx2", "fma"} <= flags:
        assert top == 1


@pytest.mark.parametrize("c", [1, 24, 88, 130])
def test_prelu_int8_channel_table_equals_portable_and_tflm(backend, levels, c):
    """int8 PRELU with constant per-channel slopes (BlazeFace): a table of each channel's 256 outputs at prepare
    at the fast-path levels, every input byte looked up: the portable formula's bytes and TFLM's."""
    rng = np.random.default_rng(300 + c)
    shape = (1, 4, 64, c)
    ashape = (1, 1, c) if c % 2 == 0 else (c,)
    alpha = rng.integers(-128, 128, ashape, dtype=np.int8)
    model = op_model("PRELU", [T(shape, "INT8", 0.05, 3), T(ashape, "INT8", 0.01, -7, data=alpha)],
                     [T(shape, "INT8", 0.04, -2)])
    # every byte in every channel
    x = ((np.arange(256)[:, None] + np.arange(c)[None, :]) % 256 - 128).astype(np.int8).reshape(shape)
    ref = _same_at_every_level(backend, levels, model, [x])
    np.testing.assert_array_equal(ref[0], run_tflm(model, [x])[0])
