"""gemmlowp-style fixed-point math as TFLite Micro's reference kernels use it, vectorized over numpy int64.

Every function takes and returns int64 arrays (or scalars) holding the raw int32 (or int16) value of a
gemmlowp ``FixedPoint<raw, integer_bits>``; the integer-bit counts are plain arguments. Wrapping int32
additions, saturating shifts and the rounding rules follow gemmlowp's scalar definitions, so the results are
bit-identical with the C kernels. The TFLite helpers built on top (GetReciprocal, log(x) for x >= 1, the
inverse square root multiplier, the int16 LUT builder and lookup) are here too.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.quant import (
    INT32_MAX,
    INT32_MIN,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    tflite_round,
)

srdhm = saturating_rounding_doubling_high_mul
rdivpot = rounding_divide_by_pot


def i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def wrap32(x) -> np.ndarray:
    """Two's-complement wrap of an int64 array into int32 range (C int32 overflow as the hardware does it)."""
    return ((i64(x) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def wrap16(x) -> np.ndarray:
    return ((i64(x) + (1 << 15)) & 0xFFFF) - (1 << 15)


def wrap8(x) -> np.ndarray:
    return ((i64(x) + (1 << 7)) & 0xFF) - (1 << 7)


def trunc_div(x, d: int) -> np.ndarray:
    """C integer division (toward zero) by a positive constant."""
    x = i64(x)
    q = np.abs(x) // d
    return np.where(x < 0, -q, q)


def srdhm16(a, b) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul for int16 raw values."""
    a = i64(a)
    b = i64(b)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    result = wrap16(trunc_div(ab + nudge, 1 << 15))
    return np.where((a == -32768) & (b == -32768), 32767, result)


def saturating_left_shift(x, exponent: int, bits: int = 32) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOT with a positive exponent: shift left, saturating."""
    x = i64(x)
    if exponent == 0:
        return x
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    threshold = (1 << (bits - 1 - exponent)) - 1
    shifted = wrap32(x << exponent) if bits == 32 else wrap16(x << exponent)
    return np.where(x > threshold, hi, np.where(x < -threshold, lo, shifted))


def mul_by_pot(x, exponent: int, bits: int = 32) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOT<exponent>."""
    if exponent > 0:
        return saturating_left_shift(x, exponent, bits)
    if exponent < 0:
        return rdivpot(x, -exponent)
    return i64(x)


def rescale(x, src_integer_bits: int, dst_integer_bits: int) -> np.ndarray:
    """gemmlowp Rescale<dst>(FixedPoint<int32, src>)."""
    return mul_by_pot(x, src_integer_bits - dst_integer_bits)


def add(a, b) -> np.ndarray:
    return wrap32(i64(a) + i64(b))


def sub(a, b) -> np.ndarray:
    return wrap32(i64(a) - i64(b))


def rounding_half_sum(a, b) -> np.ndarray:
    s = i64(a) + i64(b)
    return trunc_div(s + np.where(s >= 0, 1, -1), 2)


def saturating_add32(a, b) -> np.ndarray:
    return np.clip(i64(a) + i64(b), INT32_MIN, INT32_MAX)


def saturating_sub32(a, b) -> np.ndarray:
    return np.clip(i64(a) - i64(b), INT32_MIN, INT32_MAX)


def one(integer_bits: int) -> int:
    return INT32_MAX if integer_bits == 0 else 1 << (31 - integer_bits)


def constant_pot(integer_bits: int, exponent: int) -> int:
    return 1 << (31 - integer_bits + exponent)


# ---- exp, 1/(1+x), logistic, tanh (gemmlowp fixedpoint.h) ----

def exp_on_interval_between_negative_one_quarter_and_0_excl(a) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), a and result Q0.31."""
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = add(a, constant_pot(0, -3))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = mul_by_pot(x4, -2)
    poly = mul_by_pot(add(srdhm(add(x4_over_4, x3), constant_1_over_3), x2), -1)
    return add(constant_term, srdhm(constant_term, add(x, poly)))


_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401), (4, 242))


def exp_on_negative_values(a, integer_bits: int) -> np.ndarray:
    """exp(a) for a <= 0 given as FixedPoint<int32, integer_bits>; result Q0.31."""
    a = i64(a)
    fractional_bits = 31 - integer_bits
    one_quarter = constant_pot(integer_bits, -2)
    mask = one_quarter - 1
    a_mod_quarter_minus_one_quarter = sub(a & mask, one_quarter)
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0))
    remainder = sub(a_mod_quarter_minus_one_quarter, a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            shift = fractional_bits + exponent
            result = np.where((remainder & (1 << shift)) != 0, srdhm(result, multiplier), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, INT32_MAX, result)


def _newton_reciprocal_half_denominator(a) -> np.ndarray:
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = add(1515870810, srdhm(half_denominator, -1010580540))  # 48/17 + hd * (-32/17), Q2.29
    one_f2 = one(2)
    for _ in range(3):
        hd_x = srdhm(half_denominator, x)
        one_minus = sub(one_f2, hd_x)
        x = add(x, rescale(srdhm(x, one_minus), 4, 2))
    return x


def one_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    """1 / (1 + a) for a in [0, 1) in Q0.31."""
    x = _newton_reciprocal_half_denominator(a)
    return rescale(x, 1, 0)  # ExactMulByPot<-1> makes it Q1.30, then Rescale<0>


def one_minus_x_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    x = _newton_reciprocal_half_denominator(a)
    return rescale(sub(x, one(2)), 2, 0)


def logistic(a, integer_bits: int) -> np.ndarray:
    """gemmlowp logistic on FixedPoint<int32, integer_bits>; result Q0.31."""
    a = i64(a)
    positive = a > 0
    abs_input = np.where(positive, a, wrap32(-a))
    result_if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(wrap32(-abs_input), integer_bits))
    result_if_negative = sub(INT32_MAX, result_if_positive)
    return np.where(a == 0, 1 << 30, np.where(positive, result_if_positive, result_if_negative))


def tanh(a, integer_bits: int) -> np.ndarray:
    """gemmlowp tanh on FixedPoint<int32, integer_bits>; result Q0.31."""
    a = i64(a)
    negative = a < 0
    n = np.where(negative, a, wrap32(-a))
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, wrap32(-t), t))


# ---- TFLite helpers from kernels/internal/common.h ----

def count_leading_zeros32(x) -> np.ndarray:
    """__builtin_clz on uint32 values (32 for zero)."""
    x = i64(x) & 0xFFFFFFFF
    _, e = np.frexp(x.astype(np.float64))
    return np.where(x == 0, 32, 32 - e).astype(np.int64)


def count_leading_sign_bits32(x) -> np.ndarray:
    x = i64(x)
    return count_leading_zeros32(np.where(x < 0, ~x, x)) - 1


def get_reciprocal(x, x_integer_digits: int):
    """TFLite GetReciprocal: (Q0.31 of 1/x scaled into [0.5, 1), num_bits_over_unit)."""
    x = i64(x)
    headroom_plus_one = count_leading_zeros32(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted = ((x & 0xFFFFFFFF) << np.minimum(headroom_plus_one, 32)) & 0xFFFFFFFF
    shifted_sum_minus_one = wrap32(shifted - (1 << 31))
    return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit


def saturating_left_shift_param(x, exponent) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOTParam with a run-time (array) exponent >= 0, int32."""
    x = i64(x)
    exponent = i64(exponent)
    threshold = (np.int64(1) << (31 - exponent)) - 1
    shifted = wrap32(x << exponent)
    out = np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, shifted))
    return np.where(exponent == 0, x, out)


def log_x_for_x_greater_than_or_equal_to_1(input_raw, output_integer_bits: int, input_integer_bits: int):
    """log(x) for x >= 1 given as FixedPoint<int32, input_integer_bits>; result FixedPoint<output_integer_bits>."""
    accum_bits = output_integer_bits + 1
    log_2 = 1488522236
    sqrt_sqrt_half = 1805811301
    sqrt_half = 1518500250
    one_quarter = 536870912
    alpha_n = 117049297
    alpha_d = 127690142
    alpha_i = 1057819769
    alpha_f = 638450708
    shifted_quarter = rescale(one_quarter, 0, accum_bits)

    z_a = i64(input_raw)
    z_a_headroom_plus_1 = count_leading_zeros32(z_a)
    r_a_tmp = saturating_left_shift_param(z_a, z_a_headroom_plus_1 - 1)
    r_a_raw = saturating_left_shift_param(srdhm(r_a_tmp, sqrt_half), 1)
    z_a_pow_2_adj = saturating_add32(
        saturating_left_shift_param(input_integer_bits - z_a_headroom_plus_1, 31 - accum_bits), shifted_quarter)

    z_b = srdhm(z_a, sqrt_half)
    z_b_headroom = count_leading_zeros32(z_b) - 1
    r_b_raw = saturating_left_shift_param(z_a, z_b_headroom)
    z_b_pow_2_adj = saturating_sub32(
        saturating_left_shift_param(input_integer_bits - z_b_headroom, 31 - accum_bits), shifted_quarter)

    r = np.minimum(r_a_raw, r_b_raw)
    z_pow_2_adj = np.maximum(z_a_pow_2_adj, z_b_pow_2_adj)

    p = rounding_half_sum(r, sqrt_sqrt_half)
    q = sub(r, sqrt_sqrt_half)
    q = add(q, q)
    common_sq = srdhm(q, q)
    num = add(srdhm(q, r), srdhm(srdhm(q, common_sq), alpha_n))
    denom_minus_one_0 = add(srdhm(p, add(add(alpha_i, q), srdhm(alpha_d, common_sq))), srdhm(alpha_f, q))
    recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one_0)
    num_scaled = rescale(num, 0, accum_bits)
    total = add(srdhm(z_pow_2_adj, log_2), srdhm(num_scaled, recip_denom))
    return rescale(total, accum_bits, output_integer_bits)


def get_inv_sqrt_quantized_multiplier_exp(x, reverse_shift: int):
    """TFLite GetInvSqrtQuantizedMultiplierExp, vectorized: (multiplier, shift) arrays."""
    x = i64(x).copy()
    small = x <= 1
    x = np.where(small, 2, x)  # placeholder, replaced below
    shift = np.full(x.shape, 11, dtype=np.int64)
    for _ in range(2):
        big = x >= (1 << 29)
        x = np.where(big, x // 4, x)
        shift = shift + big
    max_left_shift_bits = count_leading_zeros32(x) - 1
    left_shift_bit_pairs = max_left_shift_bits // 2 - 1
    shift = shift - left_shift_bit_pairs
    x = x << (2 * left_shift_bit_pairs)
    f3_input = x >> 1
    f3_half_input = mul_by_pot(f3_input, -1)
    half_three = (1 << 28) + (1 << 27)
    v = np.full(x.shape, one(3), dtype=np.int64)
    for _ in range(5):
        v3 = rescale(srdhm(srdhm(v, v), v), 9, 3)
        v = rescale(sub(srdhm(half_three, v), srdhm(f3_half_input, v3)), 6, 3)
    v = srdhm(v, 1518500250)  # * sqrt(2)/2, Q3
    neg = shift < 0
    v = np.where(neg, wrap32(v << np.where(neg, -shift, 0)), v)
    shift = np.where(neg, 0, shift)
    shift = shift * reverse_shift
    return np.where(small, INT32_MAX, v), np.where(small, 0, shift)


# ---- int16 LUTs (kernels/internal/common.h LUTPopulateInt16 / LUTLookup) ----

def _f32(x):
    return np.float32(x)


def lut_populate_int16(transform, input_scale: float, input_zero_point: int, output_scale: float,
                       output_zero_point: int) -> np.ndarray:
    """The 513-entry interpolation table TFLite builds in float32 arithmetic; ``transform`` maps float32 arrays.

    ``transform`` should compute in float64 and round once to float32 (the C code calls the float libm).
    """
    f = np.float32
    input_min = f(f(input_scale) * f(-32768 - input_zero_point))
    input_max = f(f(input_scale) * f(32767 - input_zero_point))
    output_min = f(f(output_scale) * f(-32768 - output_zero_point))
    output_max = f(f(output_scale) * f(32767 - output_zero_point))
    nb_steps = 512
    step = f((input_max - input_min) / f(nb_steps))
    half_step = f(step / f(2))
    output_scaling_inv = f(f(65536.0) / f(output_max - output_min))
    i = np.arange(nb_steps, dtype=np.float32)
    x0 = (input_min + i * step).astype(np.float32)
    xm = (x0 + half_step).astype(np.float32)
    x1 = (input_min + (i + np.float32(1)) * step).astype(np.float32)
    val = transform(x0).astype(np.float32)
    val_mid = transform(xm).astype(np.float32)
    val_next = transform(x1).astype(np.float32)
    r = lambda v: tflite_round(v).astype(np.float32)  # noqa: E731
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowing transform (EXP): inf - inf below
        sample_val = r(val * output_scaling_inv)
        midpoint_interp_val = r((val_next * output_scaling_inv + r(val * output_scaling_inv)) / np.float32(2))
        midpoint_val = r(val_mid * output_scaling_inv)
        midpoint_err = (midpoint_interp_val - midpoint_val).astype(np.float32)
        bias = r(midpoint_err / np.float32(2))
        entry = sample_val - bias
    lut = np.empty(nb_steps + 1, dtype=np.int64)
    # a NaN entry (inf - inf) is 0: LiteRT's float -> int16 cast of NaN is undefined, x86 gives 0
    lut[:nb_steps] = np.clip(np.where(np.isnan(entry), 0.0, entry), -32768.0, 32767.0).astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        last = r(transform(np.array([input_max], dtype=np.float32)).astype(np.float32) * output_scaling_inv)
    lut[nb_steps] = int(np.clip(np.where(np.isnan(last), 0.0, last), -32768.0, 32767.0)[0])
    return lut


def lut_lookup_int16(value, lut: np.ndarray) -> np.ndarray:
    """TFLite LUTLookup(int16, lut): 9-bit index plus 7-bit linear interpolation."""
    value = i64(value)
    index = 256 + (value >> 7)
    offset = value & 0x7F
    base = lut[index]
    slope = wrap16(lut[index + 1] - base)
    return wrap16(base + ((slope * offset + 64) >> 7))


# ---- the sigmoid table the int16 logistic/tanh kernels interpolate ----
# 256 samples of sigmoid(i / 24) in unsigned Q0.16, the constant table of TFLite's kernels/internal/common.h
# (the values are data, not a formula: a few differ by one from any simple rounding of the function).

SIGMOID_TABLE_UINT16 = np.array("""
    32768 33451 34133 34813 35493 36169 36843 37513 38180 38841 39498 40149 40794 41432 42064 42688 43304 43912
    44511 45102 45683 46255 46817 47369 47911 48443 48964 49475 49975 50464 50942 51409 51865 52311 52745 53169
    53581 53983 54374 54755 55125 55485 55834 56174 56503 56823 57133 57433 57724 58007 58280 58544 58800 59048
    59288 59519 59743 59959 60168 60370 60565 60753 60935 61110 61279 61441 61599 61750 61896 62036 62172 62302
    62428 62549 62666 62778 62886 62990 63090 63186 63279 63368 63454 63536 63615 63691 63765 63835 63903 63968
    64030 64090 64148 64204 64257 64308 64357 64405 64450 64494 64536 64576 64614 64652 64687 64721 64754 64786
    64816 64845 64873 64900 64926 64950 64974 64997 65019 65039 65060 65079 65097 65115 65132 65149 65164 65179
    65194 65208 65221 65234 65246 65258 65269 65280 65291 65301 65310 65319 65328 65337 65345 65352 65360 65367
    65374 65381 65387 65393 65399 65404 65410 65415 65420 65425 65429 65433 65438 65442 65445 65449 65453 65456
    65459 65462 65465 65468 65471 65474 65476 65479 65481 65483 65485 65488 65489 65491 65493 65495 65497 65498
    65500 65501 65503 65504 65505 65507 65508 65509 65510 65511 65512 65513 65514 65515 65516 65517 65517 65518
    65519 65520 65520 65521 65522 65522 65523 65523 65524 65524 65525 65525 65526 65526 65526 65527 65527 65528
    65528 65528 65529 65529 65529 65529 65530 65530 65530 65530 65531 65531 65531 65531 65531 65532 65532 65532
    65532 65532 65532 65533 65533 65533 65533 65533 65533 65533 65533 65534 65534 65534 65534 65534 65534 65534
    65534 65534 65534 65535
""".split(), dtype=np.int64)


# ---- int16 LOGISTIC / TANH (reference_integer_ops Logistic and Tanh on int16) ----
# Both interpolate linearly in the table above: logistic steps through it every 1/24 of input, tanh through
# tanh(x) = 2 * sigmoid(2x) - 1 with half that step. Their input is first scaled by a (multiplier, left shift)
# pair; a zero multiplier means a power-of-two input scale, applied as multiplier 3 << shift (the 3/4 scaling
# that widens the table's [-8, 8] reach to about [-10.7, 10.7]). Unsigned C intermediates are non-negative
# here by construction, so int64 holds them exactly.

# Index pairs (entry, next entry) for interpolation; the last entry is only reached through saturation.
_TABLE_NEXT = np.append(SIGMOID_TABLE_UINT16[1:], SIGMOID_TABLE_UINT16[-1])


def _scale_input(x: np.ndarray, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    if input_multiplier == 0:  # power-of-two input scale
        input_multiplier, input_left_shift = 3 << input_left_shift, 0
    rounding = (1 << (input_left_shift - 1)) if input_left_shift > 0 else 0
    return (np.asarray(x, dtype=np.int64) * input_multiplier + rounding) >> input_left_shift


def _table_interpolate(a: np.ndarray, step_bits: int, saturated: int) -> np.ndarray:
    """The table entry at a >> step_bits plus the slope times the low step_bits of a; past the last pair of
    entries the C code returns ``saturated``."""
    hi = a >> step_bits
    idx = np.minimum(hi, 254)
    lo_val = SIGMOID_TABLE_UINT16[idx]
    interp = (lo_val << step_bits) + (a & ((1 << step_bits) - 1)) * (_TABLE_NEXT[idx] - lo_val)
    return np.where(hi >= 255, saturated, interp)


def logistic_int16(x, input_multiplier: int = 0, input_left_shift: int = 0) -> np.ndarray:
    """reference_integer_ops::Logistic on int16 data (output Q0.15); returns int64 values in int16 range."""
    v = _scale_input(x, input_multiplier, input_left_shift)
    r = _table_interpolate(np.abs(v), 9, 0x7FFF << 10)
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1) >> 10
    return wrap16(r)  # the C code stores the uint32 into an int16


def tanh_int16(x, input_multiplier: int = 0, input_left_shift: int = 0) -> np.ndarray:
    """reference_integer_ops::Tanh on int16 data (output Q0.15); returns int64 values in int16 range."""
    v = _scale_input(x, input_multiplier, input_left_shift)
    r = _table_interpolate(np.abs(v), 8, 0xFFFF << 8)
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1) >> 8
    return wrap16(r)
