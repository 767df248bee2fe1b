"""GELU (builtin 150): our Python kernel and the C runtime's against LiteRT (TFLM's wheel has no GELU):
float32 within float rounding of LiteRT's reference kernel, int8 (a 256-entry table as LiteRT's
LUTPopulate) within one step of it (equal on these cases), and the C kernel bit-exact with the Python one.
Both runtimes from one grid (``runtime``): LiteRT runs once per case, and the C case is held to the Python case's
outputs bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from tests.oprunner import T, keep_python_outputs, op_model, peer_outputs, refused_on, run_on, run_ours

CASES = [(0.05, 3, 0.03, -20), (0.02, -128, 0.01, -100), (0.1, 0, 0.05, -50), (0.5, 10, 0.002, -128)]


def _float_model(approximate, shape=(2, 1001)):
    return op_model("GELU", [T(shape, "FLOAT32")], [T(shape, "FLOAT32")], {"approximate": approximate})


def _int8_model(approximate, s_in, zp_in, s_out, zp_out):
    return op_model("GELU", [T((1, 256), "INT8", s_in, zp_in)], [T((1, 256), "INT8", s_out, zp_out)],
                    {"approximate": approximate}, version=2)


@pytest.mark.parametrize("approximate", [False, True])
def test_float_matches_litert(runtime, approximate):
    model = _float_model(approximate)
    x = np.concatenate([np.linspace(-12, 12, 1001), np.random.default_rng(0).standard_normal(1001) * 3])
    x = x.reshape(2, 1001).astype(np.float32)
    ours = _run_and_hold_c_to_python(runtime, model, [x])
    ref = peer_outputs(model, [x], "litert")[0]
    np.testing.assert_allclose(ours, ref, rtol=2e-6, atol=1e-6)


def _run_and_hold_c_to_python(runtime, model, feeds):
    """``runtime``'s output; the C case equal to the Python case's bit for bit (the same float arithmetic)."""
    outs = run_on(runtime, model, feeds)
    if runtime == "python":
        keep_python_outputs(model, feeds, outs)
    else:
        np.testing.assert_array_equal(outs[0], peer_outputs(model, feeds, "python")[0])
    return outs[0]


@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("params", CASES)
def test_int8_table_matches_litert_and_c_is_bit_exact(runtime, approximate, params):
    model = _int8_model(approximate, *params)
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)  # every input value
    ours = _run_and_hold_c_to_python(runtime, model, [x])
    ref = peer_outputs(model, [x], "litert")[0]
    assert np.abs(ours.astype(int) - ref.astype(int)).max() <= 1


def test_erf_and_tanh_forms_differ():
    x = np.linspace(-4, 4, 101, dtype=np.float32).reshape(1, 101)
    exact = run_ours(_float_model(False, (1, 101)), [x])[0]
    approx = run_ours(_float_model(True, (1, 101)), [x])[0]
    assert 1e-4 < np.abs(exact - approx).max() < 1e-3


def test_other_types_and_missing_quantization_are_refused(runtime):
    # (INT16 runs since issue 23: LiteRT's interpolated table, tests/test_quantized_math_litert.py)
    model = op_model("GELU", [T((1, 8), "INT32")], [T((1, 8), "INT32")], version=2)
    refused_on(runtime, model, [np.zeros((1, 8), np.int32)], ModelError, {"python": "GELU", "c": "FLOAT32, INT8"}[runtime])
    model = op_model("GELU", [T((1, 8), "INT8")], [T((1, 8), "INT8", 0.01, 0)], version=2)
    refused_on(runtime, model, [np.zeros((1, 8), np.int8)], ModelError, "quantization")
