"""Issue 26: float32 QUANTIZE at the AVX-512 level multiplies by 1 / scale (kernels/quantize.c quantize_float_avx512)
and sends a 64-value block to the division where the product could round otherwise than the reference's quotient.
Every SIMD level must still give the Python kernel's bits (float32 x / scale, round half away from zero, x86's
int32 conversion, wrapping zero-point add, clamp; TFLM's too): many scales (random over twelve decades, powers of
two, thirds, a subnormal scale, one whose inverse is subnormal), random values, every tie k + 1/2 of a range with its
four float neighbours on each side (where x * fl(1 / scale) and x / scale round apart: the test counts them), and
the float32 edge values (+-inf, NaN, subnormals, the 2^31 edge)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model, run_on
from tests.peers import run_tflm
from tests.simd_common import levels  # noqa: F401 (a fixture; backend: tests/conftest.py)
from tests.simd_common import run_at_level

pytestmark = needs_c_runtime

F = np.float32


def _scales() -> list[float]:
    rng = np.random.default_rng(26)
    random = (10.0 ** rng.uniform(-7, 5, 40)).astype(F)
    fixed = np.array([1 / 3, 2 / 3, 0.1, 0.0123, 0.0173, 1.0, 2.0**-7, 2.0**-20, 3.0, 255 / 7, 1e-30,
                      2e-39,  # subnormal scale: 1 / scale overflows (the division loop)
                      2e38], F)  # 1 / scale is subnormal (the division loop)
    return [float(s) for s in np.concatenate([random, fixed])]


def _values(rng, scale: float) -> np.ndarray:
    """Random quotients in +-400 and beyond, every tie of -300..300 with 4 neighbours a side, the edge values."""
    with np.errstate(over="ignore"):  # a huge scale: some products overflow to inf, more edge values
        return _values_of(rng, F(scale))


def _values_of(rng, s: np.float32) -> np.ndarray:
    k = np.arange(-300, 300, dtype=np.float64) + 0.5
    ties = (k * np.float64(s)).astype(F)
    near = [ties]
    up, down = ties.copy(), ties.copy()
    for _ in range(4):
        up, down = np.nextafter(up, F(np.inf)), np.nextafter(down, F(-np.inf))
        near += [up, down]
    big = np.array([2.0**20, 2.0**20 + 1, 2.0**22, 2.0**23, 2.0**31 - 128, 2.0**31, 2.0**32, 1e30], np.float64)
    edges = np.concatenate([big * s, -big * s]).astype(F)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1.1e-38, 3.4e38, -3.4e38], F)
    rand = np.concatenate([rng.uniform(-400, 400, 4096) * s, rng.normal(0, 5e4, 512) * s]).astype(F)
    x = np.concatenate([rand, *near, edges, special]).astype(F)
    return x[rng.permutation(x.size)]  # the edge values spread over the 64-value blocks


def _half_away(r: np.ndarray) -> np.ndarray:
    return np.where(r < 0, -np.floor(-r + 0.5), np.floor(r + 0.5))


def _product_rounds_apart(x: np.ndarray, scale: float) -> int:
    """How many finite x round otherwise through x * fl(1 / scale) than through x / scale (float32 both)."""
    s = F(scale)
    with np.errstate(all="ignore"):
        q, p = _half_away(x / s), _half_away(x * (F(1) / s))
    ok = np.isfinite(q) & np.isfinite(p) & (np.abs(q) < 2.0**31)
    return int(np.count_nonzero(q[ok] != p[ok]))


OUTS = [("INT8", 0), ("INT8", -128), ("UINT8", 128), ("INT16", 0), ("INT8", 127), ("UINT8", 0), ("INT16", -9)]


def test_quantize_float_multiply_path_every_level_bit_exact(backend, levels):  # noqa: F811
    rng = np.random.default_rng(2026)
    lib, lv = levels
    apart = 0
    for i, scale in enumerate(_scales()):
        out, zp = OUTS[i % len(OUTS)]
        x = _values(rng, scale).reshape(1, -1)
        apart += _product_rounds_apart(x, scale)
        model = op_model("QUANTIZE", [T(x.shape, "FLOAT32")], [T(x.shape, out, scale, zp)])
        want = run_on("python", model, [x])[0]
        for level in lv:
            got = run_at_level(backend, lib, level, model, [x])[0]
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (f"scale {scale!r} {out} zp {zp} level {level}: {bad.size} differ, first "
                                   f"x={x.flat[bad[0]]!r} C {got.flat[bad[0]]} Python {want.flat[bad[0]]}")
    # the values do reach the cases the division must take over: without them the test could not fail
    assert apart > 100, apart


@pytest.mark.parametrize("out,scale,zp", [("INT8", 0.0123, -5), ("INT16", 1 / 3, 7), ("INT8", 2.0**-7, 0)])
def test_quantize_float_multiply_path_equals_tflm(backend, levels, out, scale, zp):  # noqa: F811
    x = _values(np.random.default_rng(7), scale).reshape(1, -1)
    model = op_model("QUANTIZE", [T(x.shape, "FLOAT32")], [T(x.shape, out, scale, zp)])
    want = run_tflm(model, [x])[0]
    lib, lv = levels
    for level in [0, *lv]:
        np.testing.assert_array_equal(run_at_level(backend, lib, level, model, [x])[0], want,
                                      err_msg=f"SIMD level {level} vs TFLM")
