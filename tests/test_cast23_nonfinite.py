"""CAST of NaN, +-inf and out-of-range floats to every integer type, against LiteRT's reference kernels.

LiteRT 2.3 saturates float -> integer casts and sends NaN (either sign) to the type's maximum; TFLM sends NaN
to 0 (tests/test_ops_quantize.py compares the finite values with TFLM). UINT64, which LiteRT refuses, follows
the same rule: the C kernel is held to the Python one there."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, check_on, op_model

_FLOATS = {"FLOAT32": np.float32, "FLOAT64": np.float64, "FLOAT16": np.float16}
_NEGATIVE_NAN = {"FLOAT32": np.array([0xFFC00001], np.uint32), "FLOAT64": np.array([0xFFF8000000000001], np.uint64),
                 "FLOAT16": np.array([0xFE01], np.uint16)}
_INTEGERS = ["INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64"]


def _nonfinite_input(src: str, rng) -> np.ndarray:
    """NaNs of both signs and payloads, infinities, values past every type's range, near its edges, and a few
    ordinary values (shape [3, 8])."""
    special = [np.nan, -np.nan, np.inf, -np.inf, 5e9, -5e9, 1e20, -1e20, 9.3e18, -9.3e18, 4294967296.0,
               2147483648.0, -2147483904.0, 65535.9, -32768.9, 255.5, -128.5, -0.7]
    x = np.concatenate([special, rng.normal(0, 300, 6)]).astype(np.float64)
    with np.errstate(over="ignore"):  # float16: the big ones become infinities
        x = x.astype(_FLOATS[src])
    x[1:2] = _NEGATIVE_NAN[src].view(x.dtype)  # a negative NaN with a payload
    return x.reshape(3, 8)


@pytest.mark.parametrize("src", list(_FLOATS))
@pytest.mark.parametrize("dst", _INTEGERS)
def test_cast_nonfinite_vs_litert(runtime, src, dst, rng):
    x = _nonfinite_input(src, rng)
    model = op_model("CAST", [T(x.shape, src)], [T(x.shape, dst)])
    out = check_on(runtime, model, [x], peer="litert")[0]
    assert (out.reshape(-1)[:2] == np.iinfo(out.dtype).max).all()  # the NaNs: LiteRT's rule, not 0


@pytest.mark.parametrize("src", list(_FLOATS))
def test_cast_nonfinite_uint64_c_as_python(src, rng):
    x = _nonfinite_input(src, rng)
    model = op_model("CAST", [T(x.shape, src)], [T(x.shape, "UINT64")])
    check_on("c", model, [x], peer="python")
