"""The least-RAM plan's in-place int8 depthwise (multiplier 1) on DSP cores (issue 25): a channel's windows inside
the input take four taps of a row per word (SXTAB16 + two SMLAD, depthwise_conv_2d.c dw_plane_run), the border
windows the portable loop's taps.

Each case: the C runtime's DSP path emulated on the host (-DEDGE_EMULATE_DSP, the code a Cortex-M4 runs) with the
depthwise output written over its input (--memory-min; the plan says so) == the portable C build's in-place run ==
the same model's layer-by-layer plan in our Python interpreter == TFLM, bit for bit. The depthwise output reaches the
model output through a 2x2 stride-2 MAX_POOL_2D: its output small enough that the in-place plan needs less than the
layer plan (a copy of the depthwise output would live as long as it, in place or not); at most 10 channels (TFLM's
CONCATENATION takes no more inputs).
"""

from __future__ import annotations

import subprocess
import zlib

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.model.types import Quantization
from tests.conftest import needs_c_runtime
from tests.peers import run_tflm
from tests.test_memory_min import dw_chain_graph

pytestmark = needs_c_runtime

# name: (n, h, w, c, kh, kw, stride, padding, dilation_h, output scale): an output scale of 0.002 makes the
# channels' ratios above 1/4 (the generic requantization, edge_mbqm per output; weights within +-3 then)
CASES = {
    "3x3-s1-same": (1, 9, 11, 10, 3, 3, 1, "SAME", 1, 0.09),
    "3x3-s2-same": (1, 12, 13, 10, 3, 3, 2, "SAME", 1, 0.09),
    "3x3-s1-valid-batch2": (2, 7, 8, 8, 3, 3, 1, "VALID", 1, 0.09),
    "3x3-s2-valid-odd": (1, 11, 9, 9, 3, 3, 2, "VALID", 1, 0.09),
    "3x3-s1-dilated-h": (1, 10, 7, 8, 3, 3, 1, "SAME", 2, 0.09),
    "3x3-generic-ratio": (1, 8, 9, 8, 3, 3, 1, "VALID", 1, 0.002),
    "5x5-s1-same": (1, 9, 10, 8, 5, 5, 1, "SAME", 1, 0.2),
    "5x5-s2-valid": (1, 13, 14, 8, 5, 5, 2, "VALID", 1, 0.2),
    "7x7-s1-valid": (1, 10, 12, 8, 7, 7, 1, "VALID", 1, 0.3),
    "2x4-s1-valid": (1, 6, 9, 9, 2, 4, 1, "VALID", 1, 0.09),
    "1x1-s2-valid": (1, 6, 7, 10, 1, 1, 2, "VALID", 1, 0.05),
    # planes narrower than a word: a window's word reaches into the rows below, never past the plane's end
    "1x1-w2": (1, 8, 2, 8, 1, 1, 1, "VALID", 1, 0.05),
    "2x2-w2-same": (1, 8, 2, 8, 2, 2, 1, "SAME", 1, 0.09),
    "3x3-w3-same": (1, 6, 3, 8, 3, 3, 1, "SAME", 1, 0.09),
}


def _out(n, k, stride, padding, dil=1):
    return (n + stride - 1) // stride if padding == "SAME" else (n - (k - 1) * dil - 1) // stride + 1


def _model(name, filter_zp: int = 0) -> bytes:
    """test_memory_min.dw_chain_graph (x -> CONCATENATION -> DEPTHWISE_CONV_2D -> MAX_POOL_2D) of the case's geometry:
    per-channel int8 weights and a bias; with ``filter_zp`` per-tensor weights of that zero point, a legacy uint8
    layer's form."""
    n, h, w, c, kh, kw, stride, padding, dil, oscale = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    oh, ow = _out(h, kh, stride, padding, dil), _out(w, kw, stride, padding)
    qx = Quantization(np.array([0.04], np.float32), np.array([-5], np.int64))
    qy = Quantization(np.array([oscale], np.float32), np.array([7], np.int64))
    qw = Quantization(rng.uniform(0.002, 0.02, c).astype(np.float32), np.zeros(c, np.int64), 3)
    if filter_zp:
        qw = Quantization(np.array([0.01], np.float32), np.array([filter_zp], np.int64))
    qb = Quantization((0.04 * qw.scale).astype(np.float32), np.zeros(qw.scale.size, np.int64))
    lim = 4 if oscale < 0.01 else 128  # the generic case: small sums, or every output saturates
    wt = rng.integers(-lim + 1, lim, (1, kh, kw, c)).astype(np.int8)
    bias = rng.integers(-lim * 16, lim * 16, c).astype(np.int32)
    return dw_chain_graph((n, h, w, c), (n, oh, ow, c), wt, bias, qx, qw, qb, qy, stride, padding, dil,
                          description=f"dw in place {name}")


def _run_c(data: bytes, memory: str, feeds) -> np.ndarray:
    it = Interpreter(model_content=data, memory=memory, backend="c")
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], feeds[0])
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"]).copy()


def _runner(exe, data: bytes, feeds, like: np.ndarray, tmp_path, *flags) -> np.ndarray:
    (tmp_path / "m.tflite").write_bytes(data)
    (tmp_path / "in.bin").write_bytes(feeds[0].tobytes())
    proc = subprocess.run([str(exe), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin"),
                           *flags], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return np.frombuffer((tmp_path / "out.bin").read_bytes(), np.int8)[:like.size].reshape(like.shape)


def _offsets(exe, tmp_path) -> dict[int, int]:
    """{tensor: arena offset} of the DSP runner's --memory-min plan (the model written by _runner)."""
    proc = subprocess.run([str(exe), str(tmp_path / "m.tflite"), "--plan", "--memory-min"], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("entry ")]
    return {int(r[2]): int(r[6]) for r in rows if r[1] == "0"}


@pytest.mark.parametrize("name", list(CASES))
def test_in_place_depthwise_dsp_equals_portable_python_and_tflm(dsp_runner, name, tmp_path):
    data = _model(name)
    n, h, w = CASES[name][:3]
    feeds = [np.random.default_rng(zlib.crc32(name.encode()) + 1).integers(-128, 128, (n, h, w, 1)).astype(np.int8)]
    want = run_tflm(data, feeds, isolate=True)[0]
    py = Interpreter(model_content=data, memory="layer")
    py.allocate_tensors()
    py.set_tensor(py.get_input_details()[0]["index"], feeds[0])
    py.invoke()
    np.testing.assert_array_equal(py.get_tensor(py.get_output_details()[0]["index"]), want)
    np.testing.assert_array_equal(_run_c(data, "inplace", feeds), want)  # the portable in-place loop
    got = _runner(dsp_runner, data, feeds, want, tmp_path, "--memory-min")
    off = _offsets(dsp_runner, tmp_path)
    assert off[1] == off[4], "the depthwise did not run in place"
    np.testing.assert_array_equal(got, want)
    assert np.unique(want).size > 5, "degenerate case: output saturated"


@pytest.mark.parametrize("name", ["3x3-s1-same", "5x5-s2-valid", "2x4-s1-valid"])
def test_in_place_depthwise_dsp_with_a_filter_zero_point(dsp_runner, name, tmp_path):
    """Per-tensor weights with a zero point (legacy uint8 layers: (w + filter offset) paired, 0 past kw): the DSP
    in-place run == the portable one == our Python interpreter (LiteRT / TFLM take no int8 filter zero point)."""
    data = _model(name, filter_zp=5)
    n, h, w = CASES[name][:3]
    feeds = [np.random.default_rng(zlib.crc32(name.encode()) + 2).integers(-128, 128, (n, h, w, 1)).astype(np.int8)]
    py = Interpreter(model_content=data, memory="layer")
    py.allocate_tensors()
    py.set_tensor(py.get_input_details()[0]["index"], feeds[0])
    py.invoke()
    want = py.get_tensor(py.get_output_details()[0]["index"])
    np.testing.assert_array_equal(_run_c(data, "inplace", feeds), want)
    got = _runner(dsp_runner, data, feeds, want, tmp_path, "--memory-min")
    off = _offsets(dsp_runner, tmp_path)
    assert off[1] == off[4], "the depthwise did not run in place"
    np.testing.assert_array_equal(got, want)
    assert np.unique(want).size > 5, "degenerate case: output saturated"
