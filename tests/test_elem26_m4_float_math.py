"""Issue 25: float LOGISTIC, TANH, SOFTMAX and LOG_SOFTMAX on the Cortex-M4 (an FPU without double precision)
compute exp / tanh in single precision (edge_fixedpoint_act.h EDGE_FLOAT_MATH_SINGLE) instead of software double.
On the QEMU board the outputs stay within `edge profile`'s float tolerance (1e-5 of the outputs' magnitude) of the
host build, which computes in double and is within 1e-6 of range of LiteRT's reference kernels here. Issue 26's
QUANTIZE from float32 gives the host's bits on the board."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, op_model, run_on
from tests.peers import run_litert
from tests.test_profile import needs_qemu, state  # noqa: F401 (a fixture: the board state, boards stopped after)


def _inputs(n: int) -> np.ndarray:
    """Both sides of LOGISTIC's cut-offs (-9, 16.619), tanh's saturation, zero, tiny values and a dense middle."""
    x = np.concatenate([np.linspace(-20, 20, n - 8), [-9.0, -9.000001, 16.619047, 16.62, 0.0, -0.0, 1e-30, -1e-7]])
    return x.astype(np.float32).reshape(1, n)


@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize("op", ["LOGISTIC", "TANH", "SOFTMAX", "LOG_SOFTMAX"])
def test_float_exp_ops_single_precision_on_the_m4_board(state, tmp_path, op):  # noqa: F811
    from edge_sdk.tools.profile import profile_model

    x = _inputs(256)
    if op in ("SOFTMAX", "LOG_SOFTMAX"):  # 4 rows of 64: rows with and without the extremes
        x = x.reshape(4, 64)
    options = {"beta": 1.0} if op == "SOFTMAX" else None
    model = op_model(op, [T(x.shape, "FLOAT32")], [T(x.shape, "FLOAT32")], options=options)
    host = run_on("c", model, [x])[0]
    ref = run_litert(model, [x])[0]
    span = max(1.0, float(np.ptp(ref)))
    assert np.max(np.abs(host.astype(np.float64) - ref)) <= 1e-6 * span, "the host build vs LiteRT's reference"
    path = tmp_path / f"{op.lower()}.tflite"
    path.write_bytes(model)
    np.save(tmp_path / "x.npy", x)
    r = profile_model(path, "qemu-mps2-an386", runs=1, inputs=str(tmp_path / "x.npy"), build_dir=tmp_path / "fw")
    assert r["validated"] is True and r["mismatches"] == [], r
    (f,) = r["float_outputs"]
    assert f["within"] is True and f["max_abs_diff"] <= 1e-5, f


@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize("out,scale,zp", [("INT8", 0.02, -3), ("INT16", 0.0031, 0)])
def test_quantize_float_on_the_m4_board_bit_exact(state, tmp_path, out, scale, zp):  # noqa: F811
    """Issue 26 on the Cortex-M4 (-Os: one loop, the integer rounding per element where |x / scale| <= 2^23, the
    reference beyond): the host's bits on ties, their neighbours, the 2^23 / 2^31 bounds and huge values (edge
    profile takes finite inputs only: NaN / inf are the host tests')."""
    from edge_sdk.tools.profile import profile_model
    from tests.test_elem26_convert import _inputs

    x = _inputs(np.random.default_rng(3), 1000, scale).reshape(1, 1000)
    x = np.nan_to_num(x, nan=0.0, posinf=1e30, neginf=-1e30).astype(np.float32)  # huge, x / scale finite
    path = tmp_path / "quantize.tflite"
    path.write_bytes(op_model("QUANTIZE", [T(x.shape, "FLOAT32")], [T(x.shape, out, scale, zp)]))
    np.save(tmp_path / "x.npy", x)
    r = profile_model(path, "qemu-mps2-an386", runs=1, inputs=str(tmp_path / "x.npy"), build_dir=tmp_path / "fw")
    assert r["validated"] is True and r["mismatches"] == [], r
