"""Fixed-point pieces of TFLite Micro's integer LSTM: the int16 sigmoid and tanh of the gates and cell state.

TFLM's integer LSTM keeps gate pre-activations in Q3.12 (scale 2**-12) and gate outputs in Q0.15
(scale 2**-15). It applies the int16 logistic and tanh of reference integer_ops, which live in
``fixedpoint`` (``logistic_int16``, ``tanh_int16``; the LOGISTIC and TANH kernels use them too). This module
adds the LSTM's own parameters and the whole-domain gate tables built from them.
"""

from __future__ import annotations

import functools

import numpy as np

# The int16 sigmoid/tanh and their table live in fixedpoint.py (one copy); imported here for the LSTM kernels.
from edge_sdk.runtime.kernels.fixedpoint import SIGMOID_TABLE_UINT16, logistic_int16, tanh_int16  # noqa: F401
from edge_sdk.runtime.kernels.quant import tflite_round


def tanh_params_for_power(scale_power: int) -> tuple[int, int]:
    """TFLM lstm_internal::Tanh: (input_multiplier, input_left_shift) for an int16 input of scale 2**power."""
    shift = 15 + scale_power - 3
    if shift < 0:
        return 3, -shift
    return 0, shift


def checked_log2(x: float) -> int:
    """TFLite CheckedLog2's integer result: round(log2(x)) computed in float32, halves away from zero."""
    v = np.float32(np.log(np.float32(x))) * (np.float32(1.0) / np.float32(np.log(np.float32(2.0))))
    v = np.float32(v)
    return int(tflite_round(v))


# ---- whole-domain tables: the exact functions above evaluated once on every input they can see ----

SAT_DOMAIN = 1 << 16  # tables indexed by u + SAT_DOMAIN cover the unsaturated sum of two int16 values


def saturated_domain() -> np.ndarray:
    """Every u in [-65536, 65535] saturated to int16: the argument the kernels apply their function to."""
    return np.clip(np.arange(-SAT_DOMAIN, SAT_DOMAIN, dtype=np.int64), -32768, 32767)


@functools.lru_cache(maxsize=2)
def gate_tables(cell_gate: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(cell gate table, sigmoid table, smallest sigmoid output) over the saturated domain (Q3.12 in, Q0.15 out).

    Shared between kernels (read-only).
    """
    u = saturated_domain()
    sig = logistic_int16(u)
    cg = tanh_int16(u) if cell_gate == "TANH" else sig.copy()
    sig.flags.writeable = False
    cg.flags.writeable = False
    return cg, sig, int(sig.min())


# ---- gemmlowp's int16 logistic and tanh (LiteRT's integer LSTM: tensor_utils ApplySigmoid / ApplyTanh) ----
# gemmlowp FixedPoint<int16_t, integer_bits> arithmetic on int64 arrays holding int16 raw values: + and - wrap
# as the int16 raw type does, constants are the int32 ones rounded by 16 bits (RescaleConstantInitializer).
# LiteRT's integer LSTM (lstm_eval.cc, 8x8_16) runs its gates through these, TFLM's through the LUT above: the
# two differ by a few Q0.15 units.


def _w16(x) -> np.ndarray:
    return ((np.asarray(x, np.int64) + (1 << 15)) & 0xFFFF) - (1 << 15)


def _rdivpot(x, exponent: int) -> np.ndarray:
    x = np.asarray(x, np.int64)
    mask = (1 << exponent) - 1
    return (x >> exponent) + ((x & mask) > ((mask >> 1) + (x < 0)))


def _c16(int32_value: int) -> int:
    """RescaleConstantInitializer<int16>: an int32 fixed-point constant rounded to its top 16 bits."""
    return int(_rdivpot(np.int64(int32_value), 16))


def _mul16(a, b) -> np.ndarray:
    """SaturatingRoundingDoublingHighMul<int16_t>."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    q = ab + nudge
    high = np.where(q < 0, -((-q) >> 15), q >> 15)  # C division truncates toward zero
    return np.where((a == -32768) & (b == -32768), 32767, _w16(high))


def _shl_sat16(x, exponent: int) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT<exponent > 0> on int16."""
    if exponent == 0:
        return np.asarray(x, np.int64)
    threshold = (1 << (15 - exponent)) - 1
    x = np.asarray(x, np.int64)
    return np.where(x > threshold, 32767, np.where(x < -threshold, -32768, _w16(x << exponent)))


def _exp_quarter16(a) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), Q0.15."""
    constant_term, third = _c16(1895147668), _c16(715827883)
    x = _w16(a + (1 << 12))
    x2 = _mul16(x, x)
    x3 = _mul16(x2, x)
    x4 = _mul16(x2, x2)
    poly = _rdivpot(_w16(_mul16(_w16(_rdivpot(x4, 2) + x3), third) + x2), 1)
    return np.clip(constant_term + _mul16(constant_term, _w16(x + poly)), -32768, 32767)


_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
               (4, 242))


def _exp_negative16(a, integer_bits: int) -> np.ndarray:
    """exp(a) for a <= 0 given as FixedPoint<int16, integer_bits>; Q0.15."""
    frac = 15 - integer_bits
    quarter = 1 << (frac - 2)
    a = np.asarray(a, np.int64)
    a_mod = _w16((a & (quarter - 1)) - quarter)
    result = _exp_quarter16(_shl_sat16(a_mod, integer_bits))
    remainder = _w16(a_mod - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = 1 << (frac + exponent)
            result = np.where(remainder & bit, _mul16(result, _c16(multiplier)), result)
    if integer_bits > 5:
        result = np.where(a < _c16(-(1 << (36 - integer_bits))), 0, result)
    return np.where(a == 0, 32767, result)


def _newton_f2(half_denominator) -> np.ndarray:
    """The Newton-Raphson reciprocal of gemmlowp's one_over_one_plus_x / one_minus_x_over_one_plus_x (Q2.13)."""
    x = _w16(_c16(1515870810) + _mul16(half_denominator, _c16(-1010580540)))
    for _ in range(3):
        one_minus = _w16((1 << 13) - _mul16(half_denominator, x))
        x = _w16(x + _shl_sat16(_mul16(x, one_minus), 2))
    return x


def _half_denominator16(a) -> np.ndarray:
    s = np.asarray(a, np.int64) + 32767
    s = s + np.where(s >= 0, 1, -1)
    return np.where(s < 0, -((-s) // 2), s // 2)


def logistic_gemmlowp16(a, integer_bits: int) -> np.ndarray:
    """gemmlowp::logistic of FixedPoint<int16, integer_bits> raw values: Q0.15 raw values."""
    a = np.asarray(a, np.int64)
    positive = a > 0
    abs_input = np.where(positive, a, _w16(-a))
    x = _newton_f2(_half_denominator16(_exp_negative16(_w16(-abs_input), integer_bits)))
    if_positive = _shl_sat16(x, 1)  # Rescale<0>(ExactMulByPot<-1>(x))
    if_negative = _w16(32767 - if_positive)
    return np.where(a == 0, _c16(1 << 30), np.where(positive, if_positive, if_negative))


def tanh_gemmlowp16(a, integer_bits: int) -> np.ndarray:
    """gemmlowp::tanh of FixedPoint<int16, integer_bits> raw values: Q0.15 raw values."""
    a = np.asarray(a, np.int64)
    negative = a < 0
    n = np.where(negative, a, _w16(-a))
    x = _newton_f2(_half_denominator16(_exp_negative16(n, integer_bits + 1)))
    t = _shl_sat16(_w16(x - (1 << 13)), 2)  # Rescale<0>(x - 1)
    return np.where(a == 0, 0, np.where(negative, _w16(-t), t))


@functools.lru_cache(maxsize=None)
def gemmlowp16_table(function: str, integer_bits: int) -> np.ndarray:
    """``function`` ("logistic" or "tanh") over every int16 raw value, indexed by value + 32768 (read-only)."""
    domain = np.arange(-32768, 32768, dtype=np.int64)
    table = (logistic_gemmlowp16 if function == "logistic" else tanh_gemmlowp16)(domain, integer_bits)
    table.flags.writeable = False
    return table
