"""Integer reductions ai-edge-torch graphs carry (issue 23): SUM and MEAN of INT32 / INT64 (SUM of BOOL: any),
REDUCE_MAX of UINT8 / INT64 / BOOL, bit for bit with LiteRT's reference kernels on both runtimes: SUM wraps in the
type, MEAN divides the int64 sum toward zero. Values across the whole int32 range, several axis sets."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, check_on, op_model

CASES = [(op, dtype) for op, dtypes in (("SUM", ("INT32", "INT64", "BOOL")), ("MEAN", ("INT32", "INT64")),
                                         ("REDUCE_MAX", ("UINT8", "INT64", "BOOL")))
         for dtype in dtypes]


def _values(rng, dtype, shape):
    if dtype == "BOOL":
        return rng.random(shape) > 0.5
    lo, hi = (0, 255) if dtype == "UINT8" else (-2**31, 2**31 - 1)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype.lower())


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("axes", [[1], [0, 2], [-1]], ids=str)
def test_integer_reduction_as_litert(runtime, case, axes):
    op, dtype = case
    rng = np.random.default_rng(len(axes) + len(op))
    x = _values(rng, dtype, (2, 5, 7))
    shape = [1 if d in [a % 3 for a in axes] else n for d, n in enumerate(x.shape)]
    model = op_model(op, [T(x.shape, dtype), T((len(axes),), "INT32", data=np.array(axes, np.int32))],
                     [T(tuple(shape), dtype)], options={"keep_dims": True})
    check_on(runtime, model, [x], peer="litert")
