"""Issue 24 walk (part b), op level: a float DIV of 0 / 0 printed numpy's RuntimeWarning to the terminal."""

from __future__ import annotations

import warnings

import numpy as np

from tests.oprunner import T, op_model, run_ours, run_peer


def test_float_div_of_zero_by_zero_is_nan_without_a_warning():
    model = op_model("DIV", [T([4], "FLOAT32"), T([4], "FLOAT32")], [T([4], "FLOAT32")],
                     options={"fused_activation_function": "NONE"})
    inputs = [np.array([0.0, 1.0, -1.0, 6.0], np.float32), np.array([0.0, 0.0, 0.0, 3.0], np.float32)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (invalid value / divide by zero) fails the test
        (ours,) = run_ours(model, inputs)
    (litert,) = run_peer(model, inputs, "litert")
    # 0/0 is NaN on both; x/0 is inf here, +-FLT_MAX in LiteRT (it clamps an unbounded activation: NOTES.md)
    assert np.isnan(ours[0]) and np.isnan(litert[0])
    assert ours[1] >= litert[1] > 3e38 and ours[2] <= litert[2] < -3e38 and ours[3] == litert[3] == 2.0
