"""Issue 26, session 19: the elementwise / softmax / SVDF fast paths of the C runtime's host build and the ADD -> PRELU
pair made a plan decision. Every fast path here is held to the portable kernel (SIMD level 0, what a board runs) and
to the peer at every SIMD level this CPU runs: integer outputs the same bytes (TFLM the reference), float within the
existing tests' tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model
from tests.peers import PeerCrashed, run_tflm
from tests.simd_common import levels, run_at_level  # noqa: F401 (fixture)

pytestmark = needs_c_runtime


# ------------------------------------------------------------------------------------------ int8 SOFTMAX
def _softmax_int8(shape, scale: float, zp: int, beta: float, out16: bool) -> bytes:
    out = T(shape, "INT16", 1.0 / 65536, -32768) if out16 else T(shape, "INT8", 1.0 / 256, -128)
    return op_model("SOFTMAX", [T(shape, "INT8", scale, zp)], [out], options={"beta": beta})


@pytest.mark.parametrize("shape,scale,zp,beta,out16,spread", [
    ((1, 1000), 0.1, 3, 1.0, False, 128),      # a 1000-class head, every difference 0..255 possible
    ((1, 1000), 0.1, 3, 1.0, False, 6),        # a narrow row: few differences
    ((4, 10), 0.25, -7, 1.0, False, 128),      # keyword_scrambled-like short rows, several of them
    ((2, 3, 257), 0.02, 0, 2.5, False, 128),   # rank 3, beta != 1, a row length past 256
    ((1, 1), 0.1, 0, 1.0, False, 128),         # one element: max == min
    ((3, 100), 0.05, 5, 1.0, True, 128),       # int16 output
    ((1, 1000), 0.9, 0, 1.0, False, 128),      # a large scale: differences beyond the input radius give 0
])
def test_softmax_int8_is_tflm_bytes_at_every_level(backend, levels, shape, scale, zp, beta, out16, spread):  # noqa: F811
    lib, lv = levels
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1] + spread)
    model = _softmax_int8(shape, scale, zp, beta, out16)
    lo = max(-128, zp - spread)
    x = rng.integers(lo, min(128, lo + 2 * spread), shape).astype(np.int8)
    portable = run_at_level(backend, lib, 0, model, [x])[0]
    try:  # TFLM's wrapper aborts on some rows (a narrow 1000-element one): then the portable kernel, TFLM's bytes
        want = run_tflm(model, [x], isolate=True)[0]
    except PeerCrashed:
        want = portable
    np.testing.assert_array_equal(portable, want, err_msg=f"SOFTMAX int8 {shape}: portable vs TFLM")
    for level in lv:
        got = run_at_level(backend, lib, level, model, [x])[0]
        np.testing.assert_array_equal(got, want, err_msg=f"SOFTMAX int8 {shape} level {level}")
