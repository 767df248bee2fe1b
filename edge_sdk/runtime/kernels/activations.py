"""Activations: SOFTMAX, LOG_SOFTMAX, LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, HARD_SWISH, LEAKY_RELU,
PRELU, ELU.

Integer paths follow TFLite Micro's kernels and the reference headers they call. Unary int8 and int16 ops
run through a table over every possible input (256 or 65536 entries) that prepare fills by evaluating the
exact integer formula, vectorized; eval is then a single gather.
"""

from __future__ import annotations

import math

import numpy as np

from edge_sdk.runtime.kernels import fixedpoint as fp
from edge_sdk.runtime.kernels.lut import int8_pair_table_run, table_run
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.runtime.kernels.quant import (
    INT32_MAX,
    INT32_MIN,
    TYPE_RANGES,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    quantize_value,
    tflite_round,
)


def _unary_setup(node: Node, allowed: tuple[str, ...]):
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, allowed)
    node.set_output_shape(0, x.shape)
    return x, out


def _float_run(f):
    def run(inputs, outputs):
        outputs[0][...] = f(inputs[0])
    return run


def _same_type(node: Node, x, out):
    if out.type != x.type:
        raise node.unsupported(f"output type {out.type} with input type {x.type}")


# ---------------------------------------------------------------- RELU family

def _relu_like(node: Node, act_min: float, act_max: float | None, float_fn,
               types: tuple[str, ...] = ("FLOAT32", "INT8", "INT16")):
    x, out = _unary_setup(node, types)
    _same_type(node, x, out)
    if x.type == "FLOAT32":
        return _float_run(float_fn)
    node.expect_quantized(x, out)
    if x.type == "INT16":
        node.expect(x.zp == 0 and out.zp == 0, "int16 activations need zero points of 0")
    qmin, qmax = TYPE_RANGES[x.type]
    mult = quantize_multiplier(float(np.float32(x.s) / np.float32(out.s)))
    lo = max(qmin, quantize_value(act_min, out.s, out.zp))
    hi = qmax if act_max is None else min(qmax, quantize_value(act_max, out.s, out.zp))
    in_zp, out_zp = x.zp, out.zp
    return table_run(x.type, lambda v: np.clip(out_zp + multiply_by_quantized_multiplier(v - in_zp, *mult), lo, hi))


def prepare_relu(node: Node):
    zero = np.float32(0)
    return _relu_like(node, 0.0, None, lambda v: np.where(v < zero, zero, v))


def prepare_relu_n1_to_1(node: Node):
    # Not in TFLM; LiteRT's reference kernel requantizes like RELU with the range [-1, 1].
    lo, hi = np.float32(-1), np.float32(1)
    return _relu_like(node, -1.0, 1.0, lambda v: np.where(v > hi, hi, np.where(v < lo, lo, v)))


def prepare_relu_0_to_1(node: Node):
    # Not in TFLM; LiteRT's kernel requantizes like RELU with the range [0, 1], on FLOAT32, INT8 and UINT8.
    lo, hi = np.float32(0), np.float32(1)
    return _relu_like(node, 0.0, 1.0, lambda v: np.where(v > hi, hi, np.where(v < lo, lo, v)),
                      ("FLOAT32", "INT8", "UINT8"))


def prepare_relu6(node: Node):
    x, out = _unary_setup(node, ("FLOAT32", "INT8", "INT16"))
    _same_type(node, x, out)
    lo_f, hi_f = np.float32(0), np.float32(6)
    if x.type == "FLOAT32":
        return _float_run(lambda v: np.where(v > hi_f, hi_f, np.where(v < lo_f, lo_f, v)))
    node.expect_quantized(x, out)
    qmin, qmax = TYPE_RANGES[x.type]
    zero = x.zp
    six = int(np.clip(int(tflite_round(np.float32(6.0) / np.float32(x.s))) + x.zp, qmin, qmax))
    return table_run(x.type, lambda v: np.where(v > six, six, np.where(v < zero, zero, v)))


# ---------------------------------------------------------------- ELU

def prepare_elu(node: Node):
    """ELU: x < 0 ? exp(x) - 1 : x. FLOAT32 through expm1 (in double, rounded once: within an ulp of the C
    library's expm1f that TFLM and LiteRT call); INT8 through TFLM's table: dequantize in float32, exp(v) - 1 in
    float32, times 1 / output scale, rounded half away, plus the zero point, clamped."""
    x, out = _unary_setup(node, ("FLOAT32", "INT8"))
    _same_type(node, x, out)
    if x.type == "FLOAT32":
        def elu(v):
            with np.errstate(over="ignore"):
                negative = np.expm1(v.astype(np.float64)).astype(np.float32)
            return np.where(v < 0, negative, v)
        return _float_run(elu)
    node.expect_quantized(x, out)
    in_scale, out_zp = np.float32(x.s), out.zp
    inverse_scale = np.float32(1) / np.float32(out.s)
    qmin, qmax = TYPE_RANGES["INT8"]

    def table(v):
        dequantized = in_scale * (v - x.zp).astype(np.float32)
        with np.errstate(over="ignore"):
            exp = np.exp(dequantized.astype(np.float64)).astype(np.float32)
            transformed = np.where(dequantized < 0, exp - np.float32(1), dequantized)
            rescaled = tflite_round(transformed * inverse_scale)
        # rescaled + zero point in float32 (TFLM's order), clamped before the integer conversion
        return np.clip(rescaled + np.float32(out_zp), np.float32(qmin), np.float32(qmax)).astype(np.int64)
    return table_run("INT8", table)


# ---------------------------------------------------------------- LEAKY_RELU

def prepare_leaky_relu(node: Node):
    x, out = _unary_setup(node, ("FLOAT32", "INT8", "INT16"))
    _same_type(node, x, out)
    alpha = np.float32(node.options.get("alpha", 0.0))
    if x.type == "FLOAT32":
        zero = np.float32(0)
        return _float_run(lambda v: np.where(v > zero, v, v * alpha))
    node.expect_quantized(x, out)
    qmin, qmax = TYPE_RANGES[x.type]
    m_alpha, s_alpha = quantize_multiplier(float(x.s) * float(alpha) / float(out.s))
    m_id, s_id = quantize_multiplier(float(x.s) / float(out.s))  # double, as the TFLM wheel
    negative_alpha = m_alpha < 0
    safe_alpha = -m_alpha if negative_alpha else m_alpha
    in_zp, out_zp = x.zp, out.zp

    def f(v):
        d = v - in_zp
        pos = multiply_by_quantized_multiplier(d, m_id, s_id)
        neg = multiply_by_quantized_multiplier(d, safe_alpha, s_alpha)
        if negative_alpha:
            neg = -neg
        return np.clip(out_zp + np.where(d >= 0, pos, neg), qmin, qmax)
    return table_run(x.type, f)


# ---------------------------------------------------------------- HARD_SWISH

def _downscale_to_int16(m: int) -> int:
    if m >= (1 << 31) - 1 - (1 << 15):
        return 32767
    return (m + (1 << 15)) >> 16


def prepare_hard_swish(node: Node):
    x, out = _unary_setup(node, ("FLOAT32", "INT8"))
    _same_type(node, x, out)
    if x.type == "FLOAT32":
        f32 = np.float32

        def hs(v):
            return (v * np.minimum(f32(6), np.maximum(f32(0), v + f32(3))) / f32(6)).astype(np.float32)
        return _float_run(hs)
    node.expect_quantized(x, out)
    f32 = np.float32
    hires_input_scale = f32(1.0 / 128.0) * f32(x.s)
    reluish_scale = f32(3.0 / 32768.0)
    out_m, out_e = quantize_multiplier(float(hires_input_scale / f32(out.s)))
    out_m16 = _downscale_to_int16(out_m)
    node.expect(out_e <= 0, "HARD_SWISH needs an output multiplier below one")
    rel_m, rel_e = quantize_multiplier(float(hires_input_scale / reluish_scale))
    rel_m16 = _downscale_to_int16(rel_m)
    in_zp, out_zp = x.zp, out.zp

    def sat16(v):
        return np.clip(v, -32768, 32767)

    def f(v):
        value = fp.wrap16(v - in_zp)
        hires = fp.wrap16(value * 128)
        preshift = fp.srdhm16(hires, out_m16)
        reluish = hires
        if rel_e > 0:
            reluish = sat16(reluish * (1 << (rel_e - 1)))
        reluish = fp.srdhm16(reluish, rel_m16)
        if rel_e > 0:
            reluish = sat16(reluish * 2)
        if rel_e < 0:
            reluish = fp.wrap16(fp.rdivpot(reluish, -rel_e))
        reluish = fp.wrap16((reluish + (1 << 15)) >> 1)
        prod = reluish * preshift  # SaturatingDoublingHighMul (truncating) on int16
        high = np.where((reluish == -32768) & (preshift == -32768), 32767, fp.wrap16(fp.trunc_div(prod, 1 << 15)))
        result = fp.wrap16(fp.rdivpot(high, -out_e))
        result = fp.wrap16(result + out_zp)
        return np.clip(result, -128, 127)
    return table_run("INT8", f)


# ---------------------------------------------------------------- LOGISTIC / TANH

def _checked_log2(x: float) -> tuple[bool, int]:
    if not (np.isfinite(x) and x > 0):  # no power of two (a malformed scale): no log of it
        return False, 0
    f32 = np.float32
    x_log2 = f32(f32(np.log(np.float64(f32(x)))) * f32(1.0 / np.log(np.float64(2.0))))
    rounded = f32(tflite_round(x_log2))
    return bool(abs(f32(x_log2 - rounded)) < f32(1e-3)), int(rounded)


def _int8_radius_params(x):
    """input multiplier / shift / range radius of the int8 LOGISTIC and TANH kernels (4 integer bits)."""
    real = float(np.float32(x.s)) * float(1 << 27)
    q, left_shift = math.frexp(real)
    multiplier = int(tflite_round(q * (1 << 31)))
    radius = math.floor(((1 << 4) - 1) * (1 << 27) / (1 << left_shift)) if left_shift >= 0 else \
        math.floor(((1 << 4) - 1) * (1 << 27) * (2.0 ** -left_shift))
    return multiplier, left_shift, radius


def _int8_sigmoid_run(x, finish):
    """The int8 LOGISTIC/TANH table: the input rescaled to Q4.27, ``finish`` (Q4.27 -> clamped int8), and the
    saturation outside the radius."""
    multiplier, shift, radius = _int8_radius_params(x)
    in_zp = x.zp

    def f(v):
        d = v - in_zp
        r = finish(multiply_by_quantized_multiplier(d, multiplier, shift))
        return np.where(d <= -radius, -128, np.where(d >= radius, 127, r))
    return table_run("INT8", f)


def _int16_sigmoid_params(node: Node, x, out, tanh: bool):
    node.expect(x.zp == 0 and out.zp == 0, "int16 LOGISTIC/TANH need zero points of 0")
    pot, log2 = _checked_log2(x.s)
    left_shift = (15 - 3) + log2
    pot = pot and (left_shift in ((0, 1) if tanh else (0,)))
    if pot:
        multiplier = 0
    else:
        m = float(np.float32(x.s)) * 4096.0 * 3.0
        left_shift = 0
        while m <= 32767.0 / 2.0 and left_shift <= 30:
            left_shift += 1
            m *= 2.0
        multiplier = int(m)
    ok, out_log2 = _checked_log2(out.s)
    if not ok or out_log2 != -15:
        raise node.unsupported(f"int16 output scale must be 2^-15, got {out.s}")
    return multiplier, left_shift  # multiplier 0: a power-of-two input scale (see fp.logistic_int16)


def prepare_logistic(node: Node):
    x, out = _unary_setup(node, ("FLOAT32", "INT8", "INT16"))
    _same_type(node, x, out)
    if x.type == "FLOAT32":
        upper, lower = np.float32(16.619047164916992188), np.float32(-9.0)

        def lg(v):
            e = np.exp(-v.astype(np.float64)).astype(np.float32)
            mid = (np.float32(1) / (np.float32(1) + e)).astype(np.float32)
            small = np.exp(v.astype(np.float64)).astype(np.float32)
            return np.where(v > upper, np.float32(1), np.where(v < lower, small, mid))
        return _float_run(lg)
    node.expect_quantized(x, out)
    if x.type == "INT8":
        node.expect(out.zp == -128, "int8 LOGISTIC needs an output zero point of -128")
        return _int8_sigmoid_run(x, lambda q4: np.clip(fp.rdivpot(fp.logistic(q4, 4), 23) - 128, -128, 127))
    multiplier, left_shift = _int16_sigmoid_params(node, x, out, tanh=False)
    return table_run("INT16", lambda v: fp.logistic_int16(v, multiplier, left_shift))


def prepare_tanh(node: Node):
    x, out = _unary_setup(node, ("FLOAT32", "INT8", "INT16"))
    _same_type(node, x, out)
    if x.type == "FLOAT32":
        return _float_run(lambda v: np.tanh(v.astype(np.float64)).astype(np.float32))
    node.expect_quantized(x, out)
    if x.type == "INT8":
        return _int8_sigmoid_run(x, lambda q4: np.clip(fp.rdivpot(fp.tanh(q4, 4), 24), -128, 127))
    multiplier, left_shift = _int16_sigmoid_params(node, x, out, tanh=True)
    return table_run("INT16", lambda v: fp.tanh_int16(v, multiplier, left_shift))


# ---------------------------------------------------------------- SOFTMAX / LOG_SOFTMAX
#
# The integer kernels see each element only through d = (row max) - x, which takes 256 values for int8 input
# and 65536 for int16: every per-element function of d (the scaled exp, its rescaled summand, the log-softmax
# numerator) becomes a table filled in prepare by the exact fixed-point formula. Eval gathers from the tables,
# sums per row and does the per-row reciprocal (or log) and the final rescale with the same integer steps.

def _input_radius(integer_bits: int, left_shift: int, total_bits: int = 31) -> int:
    return math.floor(((1 << integer_bits) - 1) * float(1 << (total_bits - integer_bits)) / float(1 << left_shift))


def _softmax_scaling(beta: float, input_scale: float, integer_bits: int = 5):
    real = min(beta * input_scale * (1 << (31 - integer_bits)), float((1 << 31) - 1))
    return quantize_multiplier(real)


def _exp_float32(v):
    return np.exp(v.astype(np.float64)).astype(np.float32)


def _py_srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    ab += (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return ab >> 31 if ab >= 0 else -((-ab) >> 31)


def _py_wrap32(x: int) -> int:
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _py_sat_shift_left(x: int, exponent: int) -> int:
    threshold = (1 << (31 - exponent)) - 1
    if x > threshold:
        return INT32_MAX
    if x < -threshold:
        return INT32_MIN
    return _py_wrap32(x << exponent)


def _py_reciprocal(total: int, integer_bits: int) -> tuple[int, int]:
    """fixedpoint.get_reciprocal on one int32 value, in Python ints (for a few rows, far quicker than numpy)."""
    x = total & 0xFFFFFFFF
    headroom_plus_one = 32 - x.bit_length()
    shifted = (x << headroom_plus_one) & 0xFFFFFFFF
    a = _py_wrap32(shifted - (1 << 31))
    s = a + INT32_MAX  # rounding half sum with one
    half_denominator = (s + 1) // 2 if s >= 0 else -((-(s - 1)) // 2)
    r = _py_wrap32(1515870810 + _py_srdhm(half_denominator, -1010580540))
    for _ in range(3):
        one_minus = _py_wrap32((1 << 29) - _py_srdhm(half_denominator, r))
        r = _py_wrap32(r + _py_sat_shift_left(_py_srdhm(r, one_minus), 2))
    return _py_sat_shift_left(r, 1), integer_bits - headroom_plus_one


_FEW_ROWS = 16  # up to this many rows the reciprocal runs in Python ints, above it vectorized


def _row_reciprocals(totals: np.ndarray, integer_bits: int):
    """(reciprocal, bits over unit) per row of a (rows, 1) int64 array of int32 totals, as int64 arrays."""
    if totals.size <= _FEW_ROWS:
        pairs = [_py_reciprocal(t, integer_bits) for t in totals.ravel().tolist()]
        inv = np.array([p[0] for p in pairs], np.int64).reshape(totals.shape)
        bits = np.array([p[1] for p in pairs], np.int64).reshape(totals.shape)
        return inv, bits
    return fp.get_reciprocal(totals, integer_bits)


def _softmax_int8_general(multiplier: int, shift: int, diff_min: int, out_type: str):
    """The int8 kernel step by step on every element (reference for the table path; used for rows too long
    for it)."""
    out_bits = 8 if out_type == "INT8" else 16
    out_min, out_max = TYPE_RANGES[out_type]

    def run(inputs, outputs):
        v = inputs[0].astype(np.int64)
        diff = v - v.max(axis=-1, keepdims=True)
        keep = diff >= diff_min
        scaled = fp.srdhm(fp.wrap32(diff << shift), multiplier)
        e = fp.exp_on_negative_values(scaled, 5)
        total = np.where(keep, fp.rescale(e, 0, 12), 0).sum(axis=-1, keepdims=True)
        inv, bits_over = fp.get_reciprocal(fp.wrap32(total), 12)
        exponent = bits_over + 31 - out_bits
        r = fp.rdivpot(fp.srdhm(inv, e), exponent) + out_min
        outputs[0][...] = np.where(keep, np.clip(r, out_min, out_max), out_min)
    return run


def _softmax_int8_table(multiplier: int, shift: int, diff_min: int, out_type: str, depth: int, rows: int):
    """The int8 kernel through 256-entry tables over d = max - x; None when a row is too long for it.

    exp[d] is exp_on_negative_values of the scaled difference (0 where d is beyond the radius, which then
    contributes nothing to the sum and gives the output minimum, as the kernel's skip does); summand[d] its
    Rescale to 12 integer bits. Each row's sum of summands is at least summand[0] = 2**19 (d = 0 at the max)
    and below 2**31 while depth * 2**19 < 2**31 (no int32 wrap), so the reciprocal's bits over unit are in
    [0, 11] and the output shift k in [15, 34]. The product p = reciprocal * exp is non-negative (both are) and
    below 2**62, so the saturating doubling high mul is y = (p + 2**30) >> 31 < 2**31 and the rounding divide
    (y + 2**(k-1)) >> k; the two floors nest into one: (p + 2**30 + 2**(30+k)) >> (31+k). For k >= 32 the
    result is 0 (y < 2**(k-1)), which k = 32 also gives, and with k <= 32 the sum stays below 2**63.
    """
    d = np.arange(256, dtype=np.int64)
    keep = -d >= diff_min
    exp = np.where(keep, fp.exp_on_negative_values(fp.srdhm(fp.wrap32((-d) << shift), multiplier), 5), 0)
    summand = fp.rescale(exp, 0, 12)
    if depth < 1 or depth * int(summand.max()) >= 1 << 31:
        return None
    out_bits = 8 if out_type == "INT8" else 16
    out_min, out_max = TYPE_RANGES[out_type]
    span = out_max - out_min
    exp = exp.astype(np.int64)
    summand = summand.astype(np.int64)

    if rows == 1:
        def run_row(inputs, outputs):
            x = inputs[0]
            d = np.subtract(x.max(), x, dtype=np.int16)
            inv, bits_over = _py_reciprocal(int(summand.take(d).sum()), 12)
            k = min(bits_over + 31 - out_bits, 32)
            p = exp.take(d)
            p *= inv
            p += (1 << 30) + (1 << (30 + k))
            p >>= 31 + k
            np.minimum(p, span, out=p)
            np.add(p, out_min, out=outputs[0], casting="unsafe")
        return run_row

    def run(inputs, outputs):
        x = inputs[0]
        d = np.subtract(x.max(axis=-1, keepdims=True), x, dtype=np.int16)
        inv, bits_over = _row_reciprocals(summand.take(d).sum(axis=-1, keepdims=True), 12)
        k = np.minimum(bits_over + (31 - out_bits), 32)
        p = exp.take(d)
        p *= inv
        p += (np.int64(1) << (30 + k)) + (1 << 30)
        p >>= 31 + k
        np.minimum(p, span, out=p)
        np.add(p, out_min, out=outputs[0], casting="unsafe")
    return run


def _softmax_int16_run(multiplier: int, shift: int, exp_lut: np.ndarray, recip_lut: np.ndarray, table: bool):
    """The int16 kernel; with ``table`` the per-element exp comes from a 65536-entry table over d = max - x."""
    def exp_of(diff):
        scaled = multiply_by_quantized_multiplier(diff, multiplier, shift)
        return fp.lut_lookup_int16(np.clip(scaled + 32767, -32768, 32767), exp_lut)

    exp_table = exp_of(-np.arange(65536, dtype=np.int64)) if table else None

    def run16(inputs, outputs):
        x = inputs[0]
        if exp_table is None:
            v = x.astype(np.int64)
            e = exp_of(v - v.max(axis=-1, keepdims=True))
        else:
            e = exp_table.take(np.subtract(x.max(axis=-1, keepdims=True), x, dtype=np.int32))
        total = e.sum(axis=-1, keepdims=True)
        h = fp.count_leading_zeros32(total)
        shifted = ((total << (h - 1)) + (1 << 13)) >> 14
        sym_sum = np.clip(shifted - ((1 << 15) + (1 << 16)), -32768, 32767)
        recip = fp.lut_lookup_int16(sym_sum, recip_lut)
        right = 31 - h
        r = (e * recip + (np.int64(1) << (right - 1))) >> right
        outputs[0][...] = np.clip(r, 0, 32767)
    return run16


def prepare_softmax(node: Node):
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT8", "INT16"))
    node.expect(len(x.shape) >= 1, "SOFTMAX needs an input of rank 1 or more")
    node.set_output_shape(0, x.shape)
    beta = float(np.float32(node.options.get("beta", 1.0)))
    if x.type == "FLOAT32":
        node.expect_types(out, ("FLOAT32",), "output")
        fbeta = np.float32(beta)

        def run(inputs, outputs):
            v = inputs[0]
            e = _exp_float32((v - v.max(axis=-1, keepdims=True)) * fbeta)
            outputs[0][...] = e / e.sum(axis=-1, keepdims=True, dtype=np.float32)
        return run
    node.expect_quantized(x, out)
    if x.type == "INT8":
        if out.type == "INT8":
            node.expect(out.zp == -128 and np.float32(out.s) == np.float32(1 / 256),
                        "int8 SOFTMAX output needs scale 1/256 and zero point -128")
        elif out.type == "INT16":
            node.expect(out.zp == -32768 and abs(out.s - 1 / 65536) <= 0.001 / 65536,
                        "int8->int16 SOFTMAX output needs scale 1/65536 and zero point -32768")
        else:
            raise node.unsupported(f"output type {out.type}")
        multiplier, shift = _softmax_scaling(beta, float(np.float32(x.s)))
        diff_min = -_input_radius(5, shift)
        depth = x.shape[-1]
        fast = None
        if math.prod(x.shape) > 0:
            fast = _softmax_int8_table(multiplier, shift, diff_min, out.type, depth, math.prod(x.shape) // depth)
        return fast or _softmax_int8_general(multiplier, shift, diff_min, out.type)
    node.expect_types(out, ("INT16",), "output")
    node.expect(x.zp == 0 and out.zp == 0, "int16 SOFTMAX needs zero points of 0")
    node.expect(abs(out.s - 1 / 32768) <= 0.001 / 32768, "int16 SOFTMAX output needs scale 1/32768")
    rng = 65535
    f32 = np.float32
    exp_lut = fp.lut_populate_int16(_exp_float32, f32(10.0) / f32(rng), 32767, f32(2.0) / f32(rng), 0)
    recip_lut = fp.lut_populate_int16(lambda v: (f32(1) / (f32(1) + v)).astype(np.float32),
                                      f32(1.0) / f32(rng), -32768, f32(2.0) / f32(rng), 0)
    multiplier, shift = quantize_multiplier(float(np.float32(x.s)) * beta / (10.0 / 65535.0))
    return _softmax_int16_run(multiplier, shift, exp_lut, recip_lut, table=math.prod(x.shape) > 0)


def _log_softmax_int8_run(multiplier: int, shift: int, rev_m: int, rev_s: int, diff_min: int, table: bool):
    """The int8 LOG_SOFTMAX kernel; with ``table`` the scaled difference and its exp summand come from
    256-entry tables over d = max - x (summand 0 beyond the radius)."""
    def per_element(diff):
        q5 = multiply_by_quantized_multiplier(diff, multiplier, shift)
        e = fp.rescale(fp.exp_on_negative_values(q5, 5), 0, 12)
        return q5, np.where(diff >= diff_min, e, 0)

    if table:
        q5_table, summand_table = per_element(-np.arange(256, dtype=np.int64))

    def run(inputs, outputs):
        x = inputs[0]
        if table:
            d = np.subtract(x.max(axis=-1, keepdims=True), x, dtype=np.int16)
            q5, summand = q5_table.take(d), summand_table.take(d)
            diff = -d.astype(np.int64)
        else:
            v = x.astype(np.int64)
            diff = v - v.max(axis=-1, keepdims=True)
            q5, summand = per_element(diff)
        total = fp.wrap32(summand.sum(axis=-1, keepdims=True))
        log_sum = fp.log_x_for_x_greater_than_or_equal_to_1(total, 5, 12)
        adjusted = np.maximum(diff_min - 1, multiply_by_quantized_multiplier(fp.wrap32(log_sum - (1 << 31)), rev_m, rev_s))
        r = np.clip(fp.rdivpot(fp.wrap32(q5 - log_sum), 31 - 5 - 4) + 127, -128, 127)
        outputs[0][...] = np.where(diff > adjusted, r, -128)
    return run


def prepare_log_softmax(node: Node):
    x, out = _unary_setup(node, ("FLOAT32", "INT8"))
    _same_type(node, x, out)
    if x.type == "FLOAT32":
        def run(inputs, outputs):
            v = inputs[0]
            shifted = v - v.max(axis=-1, keepdims=True)
            s = _exp_float32(shifted).sum(axis=-1, keepdims=True, dtype=np.float32)
            outputs[0][...] = shifted - np.log(s.astype(np.float64)).astype(np.float32)
        return run
    node.expect_quantized(x, out)
    node.expect(np.float32(out.s) == np.float32(16.0 / 256) and out.zp == 127,
                "int8 LOG_SOFTMAX output needs scale 16/256 and zero point 127")
    multiplier, shift = _softmax_scaling(1.0, float(np.float32(x.s)))
    reverse = (1 << (31 - shift)) / float(multiplier)
    rev_m, rev_s = quantize_multiplier(reverse)
    diff_min = -_input_radius(5, shift)
    return _log_softmax_int8_run(multiplier, shift, rev_m, rev_s, diff_min, table=math.prod(x.shape) > 0)


# ---------------------------------------------------------------- PRELU

def prepare_prelu(node: Node):
    node.expect_counts(2, 1)
    x, alpha, out = node.input(0), node.input(1), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT8", "INT16"))
    try:
        shape = np.broadcast_shapes(x.shape, alpha.shape)
    except ValueError:
        raise node.error(f"input shape {x.shape} and alpha shape {alpha.shape} do not broadcast") from None
    node.set_output_shape(0, shape)
    if x.type == "FLOAT32":
        node.expect_types(alpha, ("FLOAT32",), "alpha")
        if len(shape) > 4:
            raise node.unsupported("float PRELU beyond rank 4")
        zero = np.float32(0)

        def run(inputs, outputs):
            v, a = inputs[0], inputs[1]
            outputs[0][...] = np.where(v >= zero, v, v * a)
        return run
    node.expect_types(alpha, ("INT8",) if x.type == "INT16" else ("INT8",), "alpha")
    _same_type(node, x, out)
    node.expect_quantized(x, alpha, out)
    m1 = quantize_multiplier(float(x.s) / float(out.s))
    m2 = quantize_multiplier(float(x.s) * float(alpha.s) / float(out.s))
    in_off, a_off, out_off = -x.zp, -alpha.zp, out.zp
    qmin, qmax = TYPE_RANGES[x.type]

    def f(v, a):
        iv = v + in_off
        pos = multiply_by_quantized_multiplier(iv, *m1)
        neg = multiply_by_quantized_multiplier(fp.wrap32(iv * (a + a_off)), *m2)
        return np.clip(np.where(iv >= 0, pos, neg) + out_off, qmin, qmax)

    if x.type == "INT8":
        return int8_pair_table_run(f)

    def run16(inputs, outputs):
        outputs[0][...] = f(inputs[0].astype(np.int64), inputs[1].astype(np.int64))
    return run16
