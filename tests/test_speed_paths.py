"""Fast paths against the step-by-step arithmetic they replace (bit-exact), and the BLAS threading switch.

* SOFTMAX / LOG_SOFTMAX integer kernels through tables over d = (row max) - x: every output equals the
  element-by-element fixed-point path, on random and adversarial rows (all equal, one hot, the extremes, long
  rows, many rows), several betas and input scales, int8->int8, int8->int16 and int16->int16; plus TFLM on
  the single-row and many-row shapes.
* edge_sdk.kernels.blas: the one place that limits BLAS threads, entered once per invoke.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from edge_sdk.kernels import activations as act
from edge_sdk.kernels import blas
from edge_sdk.kernels import fixedpoint as fp
from tests.oprunner import T, check_op, op_model

BETAS = (1.0, 0.5, 3.0, 0.1, 100.0, 1e-3)
SCALES = (0.1, 0.05, 0.5, 1 / 256, 2.0, 0.003, 30.0)


def _int8_rows(rng):
    """Shapes and values that stress the table path: one row and many, long rows, ties and extremes."""
    yield rng.integers(-128, 128, (1, 4))
    yield rng.integers(-128, 128, (6,))
    yield rng.integers(-128, 128, (1, 1, 300))
    yield rng.integers(-128, 128, (7, 3, 10))
    yield rng.integers(-128, 128, (40, 100))  # above the few-rows limit: vectorized reciprocal
    yield rng.integers(-128, 128, (30, 1))
    yield np.full((3, 17), 5)
    yield np.full((2, 1), -128)
    yield np.full((1, 4000), -128)
    yield np.tile(np.arange(-128, 128), (2, 1))
    yield rng.integers(126, 128, (1, 4095))  # the longest row the table path takes (sum just below 2**31)
    yield rng.integers(120, 128, (3, 4095))
    hot = np.full((5, 12), -128)
    hot[np.arange(5), rng.integers(0, 12, 5)] = 127
    yield hot
    spike = np.full((4, 255), -128)
    spike[:, 0] = 127
    yield spike
    yield np.where(rng.random((50, 64)) < 0.5, 127, -128)


def test_softmax_int8_table_equals_general():
    rng = np.random.default_rng(7)
    cases = [x.astype(np.int8) for x in _int8_rows(rng)]
    checked = 0
    for beta in BETAS:
        for scale in SCALES:
            multiplier, shift = act._softmax_scaling(beta, float(np.float32(scale)))
            diff_min = -act._input_radius(5, shift)
            for out_type, dtype in (("INT8", np.int8), ("INT16", np.int16)):
                general = act._softmax_int8_general(multiplier, shift, diff_min, out_type)
                for x in cases:
                    depth = x.shape[-1]
                    table = act._softmax_int8_table(multiplier, shift, diff_min, out_type, depth, x.size // depth)
                    assert table is not None
                    want, got = np.zeros(x.shape, dtype), np.full(x.shape, 99, dtype)
                    general([x], [want])
                    table([x], [got])
                    assert np.array_equal(got, want), (beta, scale, out_type, x.shape)
                    checked += 1
    assert checked == len(BETAS) * len(SCALES) * 2 * len(cases)


def test_softmax_int8_table_declines_rows_that_could_wrap():
    multiplier, shift = act._softmax_scaling(1.0, 0.1)
    diff_min = -act._input_radius(5, shift)
    assert act._softmax_int8_table(multiplier, shift, diff_min, "INT8", 4095, 1) is not None
    assert act._softmax_int8_table(multiplier, shift, diff_min, "INT8", 4096, 1) is None


def test_python_reciprocal_equals_vectorized():
    rng = np.random.default_rng(3)
    pow2 = 2 ** np.arange(19, 31)
    totals = np.concatenate([
        rng.integers(1 << 19, 1 << 31, 40000), np.arange(1 << 19, (1 << 19) + 2000),
        (1 << 31) - np.arange(1, 2000), pow2, pow2 - 1, pow2 + 1, [1, 2, 3, 12345],
    ]).astype(np.int64)
    inv, bits = fp.get_reciprocal(totals, 12)
    got = [act._py_reciprocal(t, 12) for t in totals.tolist()]
    assert [g[0] for g in got] == inv.tolist()
    assert [g[1] for g in got] == bits.tolist()
    rows = totals[:100].reshape(-1, 1)  # both sides of the few-rows limit
    for n in (1, act._FEW_ROWS, act._FEW_ROWS + 1, 100):
        r_inv, r_bits = act._row_reciprocals(rows[:n], 12)
        assert np.array_equal(r_inv, inv[:n].reshape(-1, 1)) and np.array_equal(r_bits, bits[:n].reshape(-1, 1))


def test_softmax_int16_table_equals_general():
    rng = np.random.default_rng(11)
    f32 = np.float32
    exp_lut = fp.lut_populate_int16(act._exp_float32, f32(10.0) / f32(65535), 32767, f32(2.0) / f32(65535), 0)
    recip_lut = fp.lut_populate_int16(lambda v: (f32(1) / (f32(1) + v)).astype(np.float32),
                                      f32(1.0) / f32(65535), -32768, f32(2.0) / f32(65535), 0)
    cases = [rng.integers(-32768, 32768, (5, 16)), rng.integers(-32768, 32768, (1, 300)), np.full((2, 9), 7),
             np.tile([-32768, 32767], (3, 4)), rng.integers(32000, 32768, (4, 50))]
    for scale in (0.001, 1 / 4096, 0.0002, 0.05):
        for beta in (1.0, 0.3, 2.0):
            multiplier, shift = act.quantize_multiplier(float(np.float32(scale)) * beta / (10.0 / 65535.0))
            slow = act._softmax_int16_run(multiplier, shift, exp_lut, recip_lut, table=False)
            fast = act._softmax_int16_run(multiplier, shift, exp_lut, recip_lut, table=True)
            for x in cases:
                x = x.astype(np.int16)
                want, got = np.zeros(x.shape, np.int16), np.full(x.shape, 99, np.int16)
                slow([x], [want])
                fast([x], [got])
                assert np.array_equal(got, want), (scale, beta, x.shape)


def test_log_softmax_int8_table_equals_general():
    rng = np.random.default_rng(5)
    cases = [x.astype(np.int8) for x in _int8_rows(rng)]
    for scale in SCALES:
        multiplier, shift = act._softmax_scaling(1.0, float(np.float32(scale)))
        rev_m, rev_s = act.quantize_multiplier((1 << (31 - shift)) / float(multiplier))
        diff_min = -act._input_radius(5, shift)
        slow = act._log_softmax_int8_run(multiplier, shift, rev_m, rev_s, diff_min, table=False)
        fast = act._log_softmax_int8_run(multiplier, shift, rev_m, rev_s, diff_min, table=True)
        for x in cases:
            want, got = np.zeros(x.shape, np.int8), np.full(x.shape, 99, np.int8)
            slow([x], [want])
            fast([x], [got])
            assert np.array_equal(got, want), (scale, x.shape)


@pytest.mark.parametrize("shape", [(1, 4), (1, 1, 300), (9, 20)])
def test_softmax_int8_against_tflm(shape):
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(-128, 128, shape).astype(np.int8)
    x.reshape(-1, shape[-1])[0, :2] = [127, -128]
    for beta, (si, zi) in [(1.0, (0.1, 0)), (0.5, (0.05, -20)), (3.0, (0.5, 10))]:
        for out in (("INT8", 1 / 256, -128), ("INT16", 1 / 65536, -32768)):
            model = op_model("SOFTMAX", [T(shape, "INT8", si, zi)], [T(shape, *out)], {"beta": beta})
            check_op(model, [x], peer="tflm")
