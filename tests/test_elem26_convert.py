"""Issue 26: firmware_c's float32 <-> integer conversions (QUANTIZE from float32, DEQUANTIZE to float32). QUANTIZE
runs vectorized 32-element blocks at level 0 (a block with a NaN or |x / scale| > 2^23 redone element by element)
and an AVX2 loop exact for every input at the x86-64 SIMD levels; DEQUANTIZE vectorized blocks. Every SIMD level
(and level 0) must give the bits of the Python kernel (the old C kernel's arithmetic: float32 division, round half
away from zero, x86's int32 conversion, wrapping zero-point add, clamp) and of TFLM, on ties, +-inf, NaN, huge
and subnormal values, at sizes with and without a tail."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model, run_on
from tests.peers import run_litert, run_tflm
from tests.simd_common import levels  # noqa: F401 (a fixture; backend: tests/conftest.py)
from tests.simd_common import run_at_level

pytestmark = needs_c_runtime


def _edge_values(scale: float) -> np.ndarray:
    """Values whose quotient by scale sits on or next to a tie, at the 2^23 / 2^31 bounds, or is not finite."""
    f = np.float32
    k = np.arange(-6, 7, dtype=np.float32)
    ties = (k + f(0.5)) * f(scale)
    near = np.concatenate([np.nextafter(ties, f(np.inf)), np.nextafter(ties, f(-np.inf))])
    bounds = np.array([2.0**23, 2.0**23 + 2, 2.0**24, 2.0**31 - 128, 2.0**31, 2.0**32, 3e38], np.float32) * f(scale)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1.2e-38, 0.49999997, -0.49999997,
                        np.float32(0.5) - np.float32(2**-25)], np.float32)
    return np.concatenate([ties, near, bounds, -bounds, special]).astype(np.float32)


def _inputs(rng, n: int, scale: float) -> np.ndarray:
    """n values: random ones over the output range and beyond, then the edge values sprinkled in."""
    x = (rng.normal(0, 200, n) * scale).astype(np.float32)
    edges = _edge_values(scale)
    at = rng.choice(n, size=min(n, len(edges)), replace=False)
    x[at] = edges[: len(at)]
    return x


# (output type, scale, zero point): a power-of-two scale (exact ties), odd scales, the extreme zero points the
# runtime loads (int16: the zero-point add wraps int32 next to 2^31)
CASES = [("INT8", 0.25, -3), ("INT8", 0.0173, 127), ("UINT8", 0.02, 128), ("UINT8", 0.5, 0), ("INT16", 2.0**-10, 0),
         ("INT16", 0.0031, -7), ("INT8", 1.0, 32767), ("INT8", 0.3, -32768)]


@pytest.mark.parametrize("out,scale,zp", CASES)
@pytest.mark.parametrize("n", [7, 64, 1001])
def test_quantize_float_every_level_equals_python_and_tflm(backend, levels, out, scale, zp, n):  # noqa: F811
    rng = np.random.default_rng(n * 31 + int(scale * 1e4))
    x = _inputs(rng, n, scale).reshape(1, n)
    model = op_model("QUANTIZE", [T(x.shape, "FLOAT32")], [T(x.shape, out, scale, zp)])
    want = run_on("python", model, [x])[0]
    lib, lv = levels
    for level in [0, *lv]:
        got = run_at_level(backend, lib, level, model, [x])[0]
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, f"level {level}: {bad.size} differ, first x={x[0, bad[0]]!r} C {got.flat[bad[0]]} " \
                              f"Python {want.flat[bad[0]]}"
    if out != "UINT8":
        np.testing.assert_array_equal(want, run_tflm(model, [x])[0], err_msg="the Python kernel vs TFLM")
        return
    # TFLM has no float32 -> UINT8 QUANTIZE: LiteRT's reference kernel (the same AffineQuantize arithmetic) where
    # the quotient converts to int32; NaN and out-of-range differ (ours as the int8 kernel, shifted by 128: 255
    # with zero point 0; LiteRT 0) as they did before issue 26
    fits = np.abs(x.astype(np.float64) / np.float32(scale)) < 2.0**31
    np.testing.assert_array_equal(want[fits], run_litert(model, [x])[0][fits], err_msg="the Python kernel vs LiteRT")


def test_quantize_float_every_normal_quotient_near_ties(backend, levels):  # noqa: F811
    """2^16 random quotients in +-300 and every tie k + 0.5 with its two neighbours, odd scale: all levels equal."""
    rng = np.random.default_rng(7)
    scale = np.float32(0.0123)
    ties = (np.arange(-300, 300, dtype=np.float32) + np.float32(0.5)) * scale
    x = np.concatenate([rng.uniform(-300, 300, 1 << 16).astype(np.float32) * scale, ties,
                        np.nextafter(ties, np.float32(1e9)), np.nextafter(ties, np.float32(-1e9))]).astype(np.float32)
    model = op_model("QUANTIZE", [T(x.shape, "FLOAT32")], [T(x.shape, "INT16", float(scale), 3)])
    want = run_on("python", model, [x])[0]
    lib, lv = levels
    for level in [0, *lv]:
        np.testing.assert_array_equal(run_at_level(backend, lib, level, model, [x])[0], want,
                                      err_msg=f"SIMD level {level}")


@pytest.mark.parametrize("src,scale,zp", [("INT8", 0.0173, -3), ("INT8", 3e-7, 127), ("UINT8", 0.02, 128),
                                          ("UINT8", 1e4, 0), ("INT16", 2.0**-15, 0), ("INT16", 0.0031, -32768)])
@pytest.mark.parametrize("n", [7, 64, 1001])
def test_dequantize_every_level_equals_python_and_tflm(backend, levels, src, scale, zp, n):  # noqa: F811
    lo, hi, dtype = {"INT8": (-128, 128, np.int8), "UINT8": (0, 256, np.uint8), "INT16": (-32768, 32768, np.int16)}[src]
    x = np.random.default_rng(n).integers(lo, hi, (1, n)).astype(dtype)
    x[0, : min(n, 3)] = [lo, hi - 1, 0][: min(n, 3)]
    model = op_model("DEQUANTIZE", [T(x.shape, src, scale, zp)], [T(x.shape, "FLOAT32")])
    want = run_on("python", model, [x])[0]
    lib, lv = levels
    for level in [0, *lv]:
        np.testing.assert_array_equal(run_at_level(backend, lib, level, model, [x])[0], want,
                                      err_msg=f"SIMD level {level}")
    np.testing.assert_array_equal(want, run_tflm(model, [x])[0], err_msg="the Python kernel vs TFLM")
