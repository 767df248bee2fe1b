"""C runtime kernels CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, AVERAGE_POOL_2D, MAX_POOL_2D
(firmware_c/src/kernels/): one-op models run through the C backend (ctypes), compared bit for bit with our
Python interpreter and with TFLM (int8 / int16x8; float32 within 1e-5). The DSP fast path (SXTB16/SMLAD,
compiled for Cortex-M4) is run on the host with -DEDGE_EMULATE_DSP, in a runner built here, and must give
the same bytes as the plain build.
"""

from __future__ import annotations

import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import shared_model
from tests.oprunner import T, op_model, run_ours
from tests.peers import PeerCrashed, run_tflm

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None,
                                reason="the C runtime needs gcc and make")


@pytest.fixture(scope="module")
def backend():
    from edge_sdk.runtime import c_build, c_interpreter

    c_build.build()
    return c_interpreter


@pytest.fixture(scope="module")
def dsp_runner(tmp_path_factory):
    """edge-run-c built with the DSP path emulated in C (-DEDGE_EMULATE_DSP)."""
    out = tmp_path_factory.mktemp("dsp")
    table = out / "edge_ops_generated.c"
    subprocess.run(["python3", str(FW / "tools" / "gen_ops.py"), str(table)], check=True, capture_output=True)
    exe = out / "edge-run-c"
    sources = [str(FW / "src" / "edge.c"), *map(str, sorted((FW / "src" / "kernels").glob("*.c"))),
               str(FW / "host" / "edge_host.c"), str(FW / "host" / "edge_run.c"), str(table)]
    proc = subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-DEDGE_EMULATE_DSP",
                           f"-I{FW / 'include'}", f"-I{FW / 'src'}", f"-I{FW / 'host'}", "-o", str(exe),
                           *sources, "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return exe


def _run_c(backend, model: bytes, feeds):
    c = backend.CInterpreter(model_content=model)
    c.allocate_tensors()
    for d, x in zip(c.get_input_details(), feeds):
        c.set_tensor(d["index"], x)
    c.invoke()
    return [c.get_tensor(d["index"]) for d in c.get_output_details()]


def _run_exe(exe, model: bytes, feeds, like: np.ndarray, tmp_path) -> np.ndarray:
    (tmp_path / "m.tflite").write_bytes(model)
    (tmp_path / "in.bin").write_bytes(b"".join(np.ascontiguousarray(x).tobytes() for x in feeds))
    proc = subprocess.run([str(exe), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return np.frombuffer((tmp_path / "out.bin").read_bytes(), like.dtype)[:like.size].reshape(like.shape)


def _out_size(padding, stride, dilation, size, k):
    eff = (k - 1) * dilation + 1
    return (size + stride - 1) // stride if padding == "SAME" else (size + stride - eff) // stride


def _feed(rng, kind, shape):
    if kind == "int8":
        return rng.integers(-128, 128, shape, dtype=np.int8)
    if kind.startswith("int16"):
        return rng.integers(-32768, 32768, shape).astype(np.int16)
    return rng.standard_normal(shape).astype(np.float32)


def _weights(rng, kind, shape, o, per_channel, qdim=0):
    if kind == "float":
        return T(shape, "FLOAT32", data=rng.standard_normal(shape).astype(np.float32))
    scale = list(rng.uniform(0.002, 0.02, o)) if per_channel else 0.01
    return T(shape, "INT8", scale, 0, quantized_dimension=qdim, data=rng.integers(-127, 128, shape, dtype=np.int8))


def _bias(rng, kind, o, btype=None):
    if kind == "float":
        return T((o,), "FLOAT32", data=rng.standard_normal(o).astype(np.float32))
    btype = btype or {"int8": "INT32", "int16": "INT64", "int16_32": "INT32"}[kind]
    limit = 2000 if kind == "int8" else 20000
    dt = {"INT32": np.int32, "INT64": np.int64, "INT16": np.int16}[btype]
    return T((o,), btype, 1.0, 0, data=rng.integers(-limit, limit, o).astype(dt))


def _io(kind, shape, scale, zp):
    if kind == "float":
        return T(shape, "FLOAT32")
    if kind == "int8":
        return T(shape, "INT8", scale, zp)
    return T(shape, "INT16", scale / 50, 0)


def _compare(backend, model, feeds, kind, tflm_may_crash=False):
    """C == Python == TFLM (bit for bit; float within 1e-5). Returns the C output."""
    c_out = _run_c(backend, model, feeds)[0]
    py = run_ours(model, feeds)[0]
    try:
        tflm = run_tflm(model, feeds, isolate=tflm_may_crash)[0]
    except PeerCrashed:
        tflm = None  # TFLM (and LiteRT) cannot run a bias-less depthwise conv: Python is the reference then
    assert c_out.shape == py.shape
    if kind == "float":
        np.testing.assert_allclose(c_out, py, rtol=1e-5, atol=1e-5)
        if tflm is not None:
            np.testing.assert_allclose(c_out, tflm, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(c_out, py)
        if tflm is not None:
            np.testing.assert_array_equal(c_out, tflm)
    assert kind == "float" or np.unique(c_out).size > 1, "degenerate case: output saturated"
    return c_out


# ------------------------------------------------------------------------------------------------ CONV_2D

# (kind, n, h, w, c, o, kh, kw, groups, padding, strides, dilations, activation, per_channel, bias)
CONV_CASES = [
    ("int8", 1, 5, 6, 3, 4, 3, 3, 1, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int8", 2, 7, 5, 8, 6, 3, 2, 1, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("int8", 1, 9, 9, 8, 5, 3, 3, 1, "SAME", (2, 2), (2, 1), "RELU6", False, True),
    ("int8", 1, 6, 6, 8, 6, 1, 1, 2, "SAME", (1, 1), (1, 1), "NONE", True, False),
    ("int8", 1, 4, 7, 12, 8, 2, 3, 4, "SAME", (1, 2), (1, 1), "RELU_N1_TO_1", True, True),
    ("int8", 1, 3, 3, 5, 3, 3, 3, 1, "VALID", (1, 1), (1, 1), "NONE", True, True),
    ("int8", 1, 8, 8, 16, 9, 3, 3, 1, "SAME", (1, 1), (1, 3), "NONE", True, True),
    ("int8", 1, 5, 5, 7, 1, 1, 1, 1, "VALID", (1, 1), (1, 1), "NONE", False, True),
    ("int16", 1, 5, 6, 3, 4, 3, 3, 1, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int16", 2, 7, 5, 8, 6, 3, 2, 1, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("int16", 1, 9, 9, 8, 5, 3, 3, 1, "SAME", (2, 2), (2, 1), "RELU6", False, True),
    ("int16", 1, 6, 6, 8, 6, 1, 1, 2, "SAME", (1, 1), (1, 1), "NONE", True, False),
    ("int16_32", 1, 5, 6, 3, 4, 3, 3, 1, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int16_32", 1, 4, 7, 12, 8, 2, 3, 4, "SAME", (1, 2), (1, 1), "RELU_N1_TO_1", True, True),
    ("float", 1, 5, 6, 3, 4, 3, 3, 1, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("float", 2, 7, 5, 8, 6, 3, 2, 1, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("float", 1, 9, 9, 8, 5, 3, 3, 1, "SAME", (2, 2), (2, 1), "RELU6", True, False),
    ("float", 1, 4, 7, 12, 8, 2, 3, 4, "SAME", (1, 2), (1, 1), "RELU_N1_TO_1", True, True),
]


def _conv_model(case, rng):
    kind, n, h, w, c, o, kh, kw, groups, padding, s, dil, act, pc, bias = case
    oh, ow = _out_size(padding, s[0], dil[0], h, kh), _out_size(padding, s[1], dil[1], w, kw)
    x = _io(kind, (n, h, w, c), 0.05, 3)
    y = _io(kind, (n, oh, ow, o), 0.1 if groups == 1 else 0.05, -5)
    wt = _weights(rng, kind, (o, kh, kw, c // groups), o, pc)
    b = _bias(rng, kind, o) if bias else None
    opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "dilation_h_factor": dil[0],
            "dilation_w_factor": dil[1], "fused_activation_function": act}
    return op_model("CONV_2D", [x, wt, b], [y], options=opts, version=3), [_feed(rng, kind, (n, h, w, c))]


def _id(case):
    return "-".join(str(v).replace(" ", "").replace("(", "").replace(")", "").replace(",", "x") for v in case)


@pytest.mark.parametrize("case", CONV_CASES, ids=_id)
def test_conv_2d(backend, case):
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    model, feeds = _conv_model(case, rng)
    _compare(backend, model, feeds, case[0])


# ------------------------------------------------------------------------------------------------ DEPTHWISE

# (kind, n, h, w, c, multiplier, kh, kw, padding, strides, dilations, activation, per_channel, bias)
DW_CASES = [
    ("int8", 1, 5, 6, 3, 1, 3, 3, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int8", 1, 6, 6, 8, 1, 3, 3, "SAME", (1, 1), (1, 1), "RELU6", True, True),
    ("int8", 2, 7, 5, 4, 2, 3, 2, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("int8", 1, 9, 9, 8, 1, 3, 3, "SAME", (2, 2), (2, 1), "NONE", False, True),
    ("int8", 1, 6, 6, 3, 3, 1, 1, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int8", 1, 6, 6, 8, 1, 3, 3, "SAME", (1, 1), (1, 1), "NONE", True, False),
    ("int8", 1, 4, 7, 12, 1, 5, 3, "SAME", (1, 2), (1, 1), "RELU_N1_TO_1", True, True),
    ("int16", 1, 5, 6, 3, 1, 3, 3, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("int16", 2, 7, 5, 4, 2, 3, 2, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("int16", 1, 9, 9, 8, 1, 3, 3, "SAME", (2, 2), (2, 1), "RELU6", False, True),
    ("float", 1, 5, 6, 3, 1, 3, 3, "SAME", (1, 1), (1, 1), "NONE", True, True),
    ("float", 2, 7, 5, 4, 2, 3, 2, "VALID", (2, 1), (1, 1), "RELU", True, True),
    ("float", 1, 9, 9, 8, 1, 3, 3, "SAME", (2, 2), (2, 1), "RELU6", True, True),
]


def _dw_model(case, rng):
    kind, n, h, w, c, m, kh, kw, padding, s, dil, act, pc, bias = case
    o = c * m
    oh, ow = _out_size(padding, s[0], dil[0], h, kh), _out_size(padding, s[1], dil[1], w, kw)
    x = _io(kind, (n, h, w, c), 0.05, -7)
    y = _io(kind, (n, oh, ow, o), 0.08, 4)
    wt = _weights(rng, kind, (1, kh, kw, o), o, pc, qdim=3)
    b = _bias(rng, kind, o) if bias else None
    opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "dilation_h_factor": dil[0],
            "dilation_w_factor": dil[1], "fused_activation_function": act, "depth_multiplier": m}
    return op_model("DEPTHWISE_CONV_2D", [x, wt, b], [y], options=opts, version=3), [_feed(rng, kind, (n, h, w, c))]


@pytest.mark.parametrize("case", DW_CASES, ids=_id)
def test_depthwise_conv_2d(backend, case):
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    model, feeds = _dw_model(case, rng)
    _compare(backend, model, feeds, case[0], tflm_may_crash=not case[-1])


# ------------------------------------------------------------------------------------------------ TRANSPOSE_CONV

# (kind, n, h, w, c, o, kh, kw, padding, strides, activation, per_channel, bias, bias type)
TC_CASES = [
    ("int8", 1, 4, 5, 3, 4, 3, 3, "SAME", (2, 2), "NONE", True, True, None),
    ("int8", 2, 3, 3, 5, 2, 2, 3, "VALID", (2, 1), "RELU", True, True, None),
    ("int8", 1, 4, 4, 8, 6, 3, 3, "SAME", (1, 1), "RELU6", False, True, None),
    ("int8", 1, 3, 4, 4, 3, 4, 4, "SAME", (2, 2), "NONE", True, False, None),
    ("int16", 1, 4, 5, 3, 4, 3, 3, "SAME", (2, 2), "NONE", True, True, None),
    ("int16", 2, 3, 3, 5, 2, 2, 3, "VALID", (2, 1), "RELU", True, True, None),
    ("int16", 1, 4, 5, 3, 4, 3, 3, "SAME", (2, 2), "NONE", True, True, "INT16"),
    ("float", 1, 4, 5, 3, 4, 3, 3, "SAME", (2, 2), "NONE", True, True, None),
    ("float", 1, 3, 4, 4, 3, 4, 4, "SAME", (2, 2), "RELU6", True, False, None),
]


def _tc_model(case, rng):
    kind, n, h, w, c, o, kh, kw, padding, s, act, pc, bias, btype = case
    oh = h * s[0] if padding == "SAME" else (h - 1) * s[0] + kh
    ow = w * s[1] if padding == "SAME" else (w - 1) * s[1] + kw
    shape = T((4,), "INT32", data=np.array([n, oh, ow, o], np.int32))
    x = _io(kind, (n, h, w, c), 0.05, 3)
    y = _io(kind, (n, oh, ow, o), 0.1, -5)
    wt = _weights(rng, kind, (o, kh, kw, c), o, pc)
    b = _bias(rng, kind, o, btype) if bias else None
    opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "fused_activation_function": act}
    return op_model("TRANSPOSE_CONV", [shape, wt, x, b], [y], options=opts, version=3), [_feed(rng, kind, (n, h, w, c))]


@pytest.mark.parametrize("case", TC_CASES, ids=_id)
def test_transpose_conv(backend, case):
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    model, feeds = _tc_model(case, rng)
    _compare(backend, model, feeds, case[0])


# ------------------------------------------------------------------------------------------------ pooling

POOL_CASES = [(op, kind, *geo) for op in ("AVERAGE_POOL_2D", "MAX_POOL_2D") for kind in ("int8", "int16", "float")
              for geo in [(1, 5, 6, 3, 3, 3, "SAME", (1, 1), "NONE"), (2, 7, 5, 8, 2, 2, "SAME", (2, 2), "RELU"),
                          (1, 9, 9, 4, 3, 2, "VALID", (2, 1), "RELU6"), (1, 4, 7, 5, 4, 3, "SAME", (1, 2), "RELU_N1_TO_1")]]


@pytest.mark.parametrize("case", POOL_CASES, ids=_id)
def test_pooling(backend, case):
    op, kind, n, h, w, c, fh, fw, padding, s, act = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    oh, ow = _out_size(padding, s[0], 1, h, fh), _out_size(padding, s[1], 1, w, fw)
    x = _io(kind, (n, h, w, c), 0.05, -3)
    y = _io(kind, (n, oh, ow, c), 0.05, -3)
    opts = {"padding": padding, "stride_h": s[0], "stride_w": s[1], "filter_height": fh, "filter_width": fw,
            "fused_activation_function": act}
    model = op_model(op, [x], [y], options=opts, version=2)
    _compare(backend, model, [_feed(rng, kind, (n, h, w, c))], kind)


# ------------------------------------------------------------------------------------------------ DSP path

@pytest.mark.parametrize("case", [c for c in CONV_CASES if c[0] == "int8"] + [c for c in DW_CASES if c[0] == "int8"],
                         ids=_id)
def test_dsp_path_equals_plain_path(backend, dsp_runner, case, tmp_path):
    """The SXTB16/SMLAD code (emulated in C on the host) gives the plain build's bytes (and TFLM's)."""
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    model, feeds = (_conv_model if len(case) == 15 else _dw_model)(case, rng)
    plain = _run_c(backend, model, feeds)[0]
    dsp = _run_exe(dsp_runner, model, feeds, plain, tmp_path)
    np.testing.assert_array_equal(dsp, plain)
    assert np.unique(plain).size > 2


def test_dsp_path_large_channels(backend, dsp_runner, tmp_path):
    """im2col with whole groups of four channels (the SXTB16 copy) and odd output-channel / pixel counts."""
    case = ("int8", 1, 7, 5, 32, 11, 3, 3, 1, "SAME", (1, 1), (1, 1), "RELU", True, True)
    rng = np.random.default_rng(11)
    model, feeds = _conv_model(case, rng)
    plain = _compare(backend, model, feeds, "int8")
    np.testing.assert_array_equal(_run_exe(dsp_runner, model, feeds, plain, tmp_path), plain)


@pytest.mark.parametrize("op", ["DEPTHWISE_CONV_2D", "CONV_2D"])
def test_requantization_edge_rq_does_not_cover(backend, dsp_runner, op, tmp_path):
    """A last channel whose multiplier is >= 0.25 (edge_rq covers only right shifts >= 2): every channel falls back
    to edge_mbqm's multiplier and shift (the 5-byte per-channel form restarted from channel 0); plain and DSP builds
    equal Python and TFLM."""
    rng = np.random.default_rng(21)
    c = 8
    scales = list(rng.uniform(0.002, 0.02, c - 1)) + [0.6]  # multiplier 0.05 * 0.6 / 0.1 = 0.3
    shape = (1, 3, 3, c) if op == "DEPTHWISE_CONV_2D" else (c, 3, 3, c)
    data = rng.integers(-127, 128, shape, dtype=np.int8)
    last = (..., c - 1) if op == "DEPTHWISE_CONV_2D" else (c - 1,)
    data[last] = rng.integers(-1, 2, data[last].shape)  # small weights: the big multiplier does not saturate
    wt = T(shape, "INT8", scales, 0, quantized_dimension=3 if op == "DEPTHWISE_CONV_2D" else 0, data=data)
    b = T((c,), "INT32", 1.0, 0, data=rng.integers(-200, 200, c).astype(np.int32))
    opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
    if op == "DEPTHWISE_CONV_2D":
        opts["depth_multiplier"] = 1
    model = op_model(op, [T((1, 6, 5, c), "INT8", 0.05, 3), wt, b], [T((1, 6, 5, c), "INT8", 0.1, -5)], options=opts,
                     version=3)
    feeds = [rng.integers(-128, 128, (1, 6, 5, c), dtype=np.int8)]
    plain = _compare(backend, model, feeds, "int8")
    np.testing.assert_array_equal(_run_exe(dsp_runner, model, feeds, plain, tmp_path), plain)
    assert np.unique(plain[..., -1]).size > 2 and np.unique(plain[..., 0]).size > 2


# ------------------------------------------------------------------------------------------------ refusals

def test_refusals_name_the_problem(backend):
    from edge_sdk.errors import ModelError

    rng = np.random.default_rng(5)
    x = T((1, 4, 4, 3), "INT8", 0.05, 0)
    y = T((1, 4, 4, 2), "INT8", 0.1, 0)
    # float input with int8 weights (hybrid) is not run by TFLM nor by the C kernel
    xf, yf = T((1, 4, 4, 3), "FLOAT32"), T((1, 4, 4, 2), "FLOAT32")
    hybrid = op_model("CONV_2D", [xf, _weights(rng, "int8", (2, 3, 3, 3), 2, True), None], [yf],
                      options={"padding": "SAME", "stride_h": 1, "stride_w": 1})
    with pytest.raises(ModelError):
        backend.CInterpreter(model_content=hybrid).allocate_tensors()
    # pooling with different input / output quantization
    bad_pool = op_model("MAX_POOL_2D", [x], [T((1, 4, 4, 3), "INT8", 0.1, 0)],
                        options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "filter_height": 2, "filter_width": 2})
    with pytest.raises(ModelError):
        backend.CInterpreter(model_content=bad_pool).allocate_tensors()
    # depth_multiplier contradicting the filter
    dw = op_model("DEPTHWISE_CONV_2D", [x, _weights(rng, "int8", (1, 3, 3, 6), 6, True, 3), None],
                  [T((1, 4, 4, 6), "INT8", 0.1, 0)],
                  options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 3})
    with pytest.raises(ModelError):
        backend.CInterpreter(model_content=dw).allocate_tensors()
    del y


# ------------------------------------------------------------------------------------------------ real models

@pytest.mark.parametrize("relative", ["tflite-micro/person_detect.tflite",
                                      pytest.param("tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite",
                                                   marks=pytest.mark.slow)])
def test_real_model_bit_exact(backend, relative):
    """Whole models: the C runtime has all their ops."""
    from edge_sdk.model import read_model

    path = shared_model(relative)
    assert backend.missing_ops(read_model(path)) == []
    model = path.read_bytes()
    rng = np.random.default_rng(3)
    c = backend.CInterpreter(model_content=model)
    c.allocate_tensors()
    feeds = [rng.integers(-128, 128, tuple(d["shape"])).astype(d["dtype"]) for d in c.get_input_details()]
    ours_c = _run_c(backend, model, feeds)
    for a, b in zip(ours_c, run_ours(model, feeds)):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------------------------------ build switches

def test_build_without_float32_int16_refuses_those_convs(tmp_path):
    """A runner built with -DEDGE_WITH_FLOAT32=0 -DEDGE_WITH_INT16=0 (a per-model build's switches) still runs an
    int8 CONV_2D bit-exactly, and refuses float32 CONV_2D / TRANSPOSE_CONV and int16 DEPTHWISE_CONV_2D at load
    with EDGE_UNSUPPORTED_TYPE (exit 3, the reason naming the op and the compiled-out type)."""
    import re

    table = tmp_path / "edge_ops_generated.c"
    subprocess.run(["python3", str(FW / "tools" / "gen_ops.py"), str(table)], check=True, capture_output=True)
    exe = tmp_path / "edge-run-c"
    sources = [str(FW / "src" / "edge.c"), *map(str, sorted((FW / "src" / "kernels").glob("*.c"))),
               str(FW / "host" / "edge_host.c"), str(FW / "host" / "edge_run.c"), str(table)]
    proc = subprocess.run(["gcc", "-std=c99", "-O0", "-Wall", "-Wextra", "-Werror", "-DEDGE_WITH_FLOAT32=0",
                           "-DEDGE_WITH_INT16=0", f"-I{FW / 'include'}", f"-I{FW / 'src'}", f"-I{FW / 'host'}", "-o",
                           str(exe), *sources, "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rng = np.random.default_rng(11)
    model, feeds = _conv_model(CONV_CASES[0], rng)
    want = run_ours(model, feeds)[0]
    assert np.array_equal(_run_exe(exe, model, feeds, want, tmp_path), want)
    codes = re.findall(r"^EDGE_STATUS\((\w+),", (FW / "include" / "edge_status.def").read_text(), re.M)
    refused = {"CONV_2D FLOAT32": _conv_model(CONV_CASES[14], rng), "DEPTHWISE_CONV_2D INT16": _dw_model(DW_CASES[7], rng),
               "TRANSPOSE_CONV FLOAT32": _tc_model(TC_CASES[-1], rng)}
    for what, (data, feeds) in refused.items():
        op, dtype = what.split()
        (tmp_path / "r.tflite").write_bytes(data)
        (tmp_path / "r.in").write_bytes(b"".join(np.ascontiguousarray(x).tobytes() for x in feeds))
        proc = subprocess.run([str(exe), str(tmp_path / "r.tflite"), str(tmp_path / "r.in"), str(tmp_path / "r.out")],
                              capture_output=True, text=True)
        assert proc.returncode == 3, (what, proc.returncode, proc.stderr)
        assert f"status {codes.index('EDGE_UNSUPPORTED_TYPE')}:" in proc.stderr, (what, proc.stderr)
        assert f"({op} " in proc.stderr and f"{dtype} compiled out" in proc.stderr, (what, proc.stderr)


# ------------------------------------------------------------------------------------------------ Cortex-M4 asm

# depthwise int8 shapes for the M4 asm paths (the host runs their C twins): inside runs of 3x3 windows, borders
# on the SXTAB16 row loop, strides, dilations, a 5x3 window, channels past a multiple of four, no bias.
DW_ASM_CASES = [
    ("int8", 1, 7, 9, 12, 1, 3, 3, "SAME", (2, 2), (1, 1), "RELU6", True, True),
    ("int8", 1, 9, 9, 8, 1, 3, 3, "SAME", (2, 1), (2, 2), "NONE", True, True),
    ("int8", 1, 5, 7, 14, 1, 5, 3, "SAME", (1, 2), (1, 1), "RELU_N1_TO_1", True, False),
]


@pytest.mark.slow
def test_depthwise_asm_on_qemu(backend, tmp_path, monkeypatch):
    """The DSP asm (dw_run3x3, DW_ROW4 with SXTAB16, dw_store4) on the emulated Cortex-M4 board equals the host
    build (itself checked against Python / TFLM by the tests above), one firmware per case."""
    if not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")):
        pytest.skip("qemu-system-arm / arm-none-eabi-gcc missing")
    from edge_sdk.device import qemu_board as qb
    from edge_sdk.tools import flash as fl
    from edge_sdk.device.serial_link import SerialLink

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    for k, case in enumerate(DW_ASM_CASES):
        rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
        model, feeds = _dw_model(case, rng)
        want = _run_c(backend, model, feeds)[0]
        path = tmp_path / f"dw{k}.tflite"
        path.write_bytes(model)
        r = fl.flash(path, "qemu-mps2-an386", build_dir=tmp_path / f"build{k}")
        try:
            with SerialLink(r.port, timeout=1.0) as link:
                link.expect_model(model)
                link.set_input(0, feeds[0])
                link.invoke(1)
                got = np.asarray(link.get_output(0)).reshape(want.shape)
        finally:
            if r.pid:
                qb._kill_group(r.pid, r.pid)
            qb.stop_board(all=True)
        np.testing.assert_array_equal(got, want, err_msg=repr(case))
        assert np.unique(want).size > 2


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV"])
def test_int16_bias_near_int64_limits_under_ubsan(op, tmp_path):
    """An INT64 bias next to INT64_MIN / INT64_MAX (a fuzzer finding on TRANSPOSE_CONV): the int16 kernels add it
    wrapping, like the hardware add, so the ASan/UBSan runner reports no signed overflow."""
    proc = subprocess.run(["make", "-C", str(FW), "host-asan"], capture_output=True, text=True)
    runner = FW / "build" / "host-asan" / "edge-run-c"
    if proc.returncode != 0 or not runner.exists():
        pytest.skip(f"this gcc cannot build the ASan/UBSan runner: {proc.stderr[-500:]}")
    rng = np.random.default_rng(8)
    lim = np.iinfo(np.int64)
    b = T((2,), "INT64", [2e-5, 4e-5], 0, data=np.array([lim.min + 5, lim.max - 5], np.int64))
    x = T((1, 4, 4, 2), "INT16", 0.002, 0)
    opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
    if op == "TRANSPOSE_CONV":
        shape = T((4,), "INT32", data=np.array([1, 4, 4, 2], np.int32))
        w = T((2, 3, 3, 2), "INT8", [0.01, 0.02], 0, data=rng.integers(-127, 128, (2, 3, 3, 2), dtype=np.int8))
        model = op_model(op, [shape, w, x, b], [T((1, 4, 4, 2), "INT16", 0.01, 0)], options=opts, version=3)
    else:
        shape_w = (1, 3, 3, 2) if op == "DEPTHWISE_CONV_2D" else (2, 3, 3, 2)
        w = T(shape_w, "INT8", [0.01, 0.02], 0, quantized_dimension=3 if op == "DEPTHWISE_CONV_2D" else 0,
              data=rng.integers(-127, 128, shape_w, dtype=np.int8))
        if op == "DEPTHWISE_CONV_2D":
            opts["depth_multiplier"] = 1
        model = op_model(op, [x, w, b], [T((1, 4, 4, 2), "INT16", 0.01, 0)], options=opts, version=3)
    feeds = [rng.integers(-3000, 3000, (1, 4, 4, 2)).astype(np.int16)]
    (tmp_path / "m.tflite").write_bytes(model)
    (tmp_path / "in.bin").write_bytes(feeds[0].tobytes())
    proc = subprocess.run([str(runner), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "runtime error" not in proc.stderr, proc.stderr[-2000:]


# ------------------------------------------------------------------------------------------------ window edges

def test_conv_window_edges(backend):
    """edge_conv_window's 32-bit arithmetic at its edges: a VALID dilated window exactly as large as the input
    (one output), a stride of 2^31 - 1 with SAME (in + stride - 1 past INT32_MAX; TFLM's int arithmetic overflows
    there, so Python is the reference), and a VALID window one larger than the input refused."""
    from edge_sdk.errors import ModelError

    rng = np.random.default_rng(31)
    # h 7, w 5, a 3x2 window: dilations 3, 4 make it 7x5 (exact fit), strides larger than the input
    exact = ("int8", 1, 7, 5, 4, 3, 3, 2, 1, "VALID", (5, 3), (3, 4), "NONE", True, True)
    model, feeds = _conv_model(exact, rng)
    assert _compare(backend, model, feeds, "int8").shape == (1, 1, 1, 3)
    huge = ("int8", 1, 7, 5, 4, 3, 3, 2, 1, "SAME", (2**31 - 1, 2**31 - 1), (1, 2), "NONE", True, True)
    model, feeds = _conv_model(huge, rng)
    c_out = _run_c(backend, model, feeds)[0]
    assert c_out.shape == (1, 1, 1, 3)
    np.testing.assert_array_equal(c_out, run_ours(model, feeds)[0])
    assert np.unique(c_out).size > 1
    for dil in ((4, 1), (1, 5)):  # eff 9 > h = 7, eff 6 > w = 5
        x, wt = T((1, 7, 5, 4), "INT8", 0.05, 3), _weights(rng, "int8", (3, 3, 2, 4), 3, True)
        bad = op_model("CONV_2D", [x, wt, None], [T((1, 1, 1, 3), "INT8", 0.1, -5)],
                       options={"padding": "VALID", "stride_h": 1, "stride_w": 1, "dilation_h_factor": dil[0],
                                "dilation_w_factor": dil[1]}, version=3)
        with pytest.raises(ModelError, match="window"):
            backend.CInterpreter(model_content=bad).allocate_tensors()
