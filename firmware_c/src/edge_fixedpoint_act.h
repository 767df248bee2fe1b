/* edge_fixedpoint_act.h - the arithmetic of the element-wise and activation kernels.
 *
 * Mirrors edge_sdk/runtime/kernels/quant.py, fixedpoint.py, elementwise.py and activations.py step for step, so the
 * C kernels give the Python kernels' bits (and so TFLM's):
 *  - TFLite's float32 round (QUANTIZE, the int16 tables), the type bounds and a clamp in the reference's order;
 *  - a MultiplyByQuantizedMultiplier that also takes right shifts past 31 (int64 like numpy);
 *  - gemmlowp fixed point on int32 raw values: exp on negative values, 1/(1+x), (1-x)/(1+x), logistic, tanh,
 *    GetReciprocal; int16 SaturatingRoundingDoublingHighMul;
 *  - TFLite's int16 interpolation tables (LUTPopulateInt16 / LUTLookup) and the uint16 sigmoid samples with
 *    their int16 logistic / tanh lookups (shared with the LSTM);
 *  - int8 kernels as 256-entry tables built at prepare (ea_lut8_build / ea_lut8_apply);
 *  - broadcasting of two operands up to rank 6, coalesced in prepare into the fewest dims with 0/1 strides.
 * Signed wraps are done through edge_wrap32 (defined C); right shifts of negative values are arithmetic on
 * every compiler we build with (gcc, arm-none-eabi-gcc).
 */
#ifndef EDGE_FIXEDPOINT_ACT_H
#define EDGE_FIXEDPOINT_ACT_H

#include <math.h>
#include <stdint.h>

#include "edge_kernel.h"
#include "edge_fixedpoint.h"
#include "simd/edge_simd.h"

/* ------------------------------------------------------------------------------------ rounding, ranges */

/* TfLiteRound / std::round of a float32: halves away from zero, exactly (|x| - floor(|x|) is exact in float).
 * The Python kernels' float32 floor(|x| + 0.5f) differs from it at |x| = 0.5 - 2^-25 (and at odd integers
 * in [2^23, 2^24), which saturate everywhere it is used); TFLM, the reference, rounds those exactly. */
static inline float ea_round_f32(float x) {
    const float a = fabsf(x);
    float r = floorf(a);
    if (a - r >= 0.5f) r += 1.0f;
    return x < 0.0f ? -r : r;
}

/* Fused-activation ranges and quantized values are edge_fixedpoint.h's edge_activation_range and
 * edge_quantize_value (the same float32 division and exact half-away rounding as quant.py); with a positive
 * finite output scale (ea_good_scale, which every caller here checks first) the range always fits int32. */

/* min(max(x, lo), hi) in that order (numpy clip / the reference's clamp when lo > hi). */
static inline int64_t ea_clamp(int64_t x, int32_t lo, int32_t hi) {
    if (x < lo) x = lo;
    if (x > hi) x = hi;
    return x;
}

static inline int32_t ea_type_min(int type) {
    return type == EDGE_INT8 ? -128 : type == EDGE_INT16 ? -32768 : type == EDGE_UINT8 ? 0 : EDGE_INT32_MIN;
}
static inline int32_t ea_type_max(int type) {
    return type == EDGE_INT8 ? 127 : type == EDGE_INT16 ? 32767 : type == EDGE_UINT8 ? 255 : EDGE_INT32_MAX;
}

/* A finite, positive per-tensor scale (what every quantized kernel here needs). */
static inline int ea_good_scale(const edge_tensor_t *t) {
    return t->quantized && t->scale > 0.0f && t->scale - t->scale == 0.0f;
}

/* Quantized with one scale (the sequence kernels' weights and states). */
static inline int ea_per_tensor(const edge_tensor_t *t) { return t->quantized && t->n_scales == 1; }

/* ------------------------------------------------------------------------------------ int32 fixed point */

static inline int32_t ea_add(int32_t a, int32_t b) { return edge_wrap32((int64_t)a + b); }
static inline int32_t ea_sub(int32_t a, int32_t b) { return edge_wrap32((int64_t)a - b); }

/* RoundingDivideByPOT on an int64 (exponent 0..62), as numpy's int64 version. */
static inline int64_t ea_rdbpot64(int64_t x, int32_t exponent) {
    int64_t mask, remainder, threshold;
    if (exponent <= 0) return x;
    if (exponent > 62) exponent = 62;
    mask = ((int64_t)1 << exponent) - 1;
    remainder = x & mask;
    threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* quant.multiply_by_quantized_multiplier for one int32 x: any shift (right shifts past 31 as numpy does). */
static inline int32_t ea_mbqm(int32_t x, int32_t multiplier, int32_t shift) {
    if (shift >= -31) return edge_mbqm(x, multiplier, shift);
    return (int32_t)ea_rdbpot64(edge_srdhm(x, multiplier), -shift);
}

/* gemmlowp SaturatingRoundingMultiplyByPOT<exponent> on int32. */
static inline int32_t ea_mul_by_pot(int32_t x, int32_t exponent) {
    if (exponent > 0) {
        int32_t threshold = (int32_t)(((int64_t)1 << (31 - exponent)) - 1);
        if (x > threshold) return EDGE_INT32_MAX;
        if (x < -threshold) return EDGE_INT32_MIN;
        return edge_wrap32((int64_t)((uint64_t)(int64_t)x << exponent));
    }
    if (exponent < 0) return edge_rdbpot(x, -exponent);
    return x;
}

/* gemmlowp Rescale from src to dst integer bits. */
static inline int32_t ea_rescale(int32_t x, int32_t src_bits, int32_t dst_bits) {
    return ea_mul_by_pot(x, src_bits - dst_bits);
}

/* exp(a) for a in [-1/4, 0), Q0.31 in and out. */
static inline int32_t ea_exp_quarter(int32_t a) {
    const int32_t constant_term = 1895147668; /* exp(-1/8) */
    const int32_t one_third = 715827883;
    int32_t x = ea_add(a, (int32_t)1 << 28);  /* a + 1/8 */
    int32_t x2 = edge_srdhm(x, x);
    int32_t x3 = edge_srdhm(x2, x);
    int32_t x4 = edge_srdhm(x2, x2);
    int32_t x4_over_4 = ea_mul_by_pot(x4, -2);
    int32_t poly = ea_mul_by_pot(ea_add(edge_srdhm(ea_add(x4_over_4, x3), one_third), x2), -1);
    return ea_add(constant_term, edge_srdhm(constant_term, ea_add(x, poly)));
}

/* exp(a) for a <= 0 held as FixedPoint<int32, integer_bits> (0..29); result Q0.31. */
static inline int32_t ea_exp_on_negative_values(int32_t a, int32_t integer_bits) {
    static const int32_t barrel[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int32_t fractional_bits = 31 - integer_bits;
    const int32_t one_quarter = (int32_t)1 << (29 - integer_bits);
    int32_t a_mod = ea_sub(a & (one_quarter - 1), one_quarter);
    int32_t result = ea_exp_quarter(ea_rescale(a_mod, integer_bits, 0));
    int32_t remainder = ea_sub(a_mod, a);
    int32_t e;
    for (e = -2; e <= 4; e++) {
        if (integer_bits > e) {
            int32_t bit = fractional_bits + e;
            if (bit >= 0 && bit <= 30 && (remainder & ((int32_t)1 << bit))) result = edge_srdhm(result, barrel[e + 2]);
        }
    }
    if (integer_bits > 5 && a < -((int32_t)1 << (36 - integer_bits))) result = 0;
    return a == 0 ? EDGE_INT32_MAX : result;
}

/* Newton-Raphson 1 / (1 + a) of gemmlowp in Q2.29, for a in [0, 1) (Q0.31). */
static inline int32_t ea_newton_half_denominator(int32_t a) {
    int64_t s = (int64_t)a + EDGE_INT32_MAX;
    int32_t half_denominator = (int32_t)((s + (s >= 0 ? 1 : -1)) / 2);
    int32_t x = ea_add(1515870810, edge_srdhm(half_denominator, -1010580540));
    int k;
    for (k = 0; k < 3; k++) {
        int32_t one_minus = ea_sub((int32_t)1 << 29, edge_srdhm(half_denominator, x));
        x = ea_add(x, ea_rescale(edge_srdhm(x, one_minus), 4, 2));
    }
    return x;
}

static inline int32_t ea_one_over_one_plus_x(int32_t a) { return ea_rescale(ea_newton_half_denominator(a), 1, 0); }

static inline int32_t ea_one_minus_x_over_one_plus_x(int32_t a) {
    return ea_rescale(ea_sub(ea_newton_half_denominator(a), (int32_t)1 << 29), 2, 0);
}

/* gemmlowp logistic / tanh of FixedPoint<int32, integer_bits>; Q0.31 results. */
static inline int32_t ea_logistic(int32_t a, int32_t integer_bits) {
    int32_t abs_input = a > 0 ? a : edge_wrap32(-(int64_t)a);
    int32_t pos = ea_one_over_one_plus_x(ea_exp_on_negative_values(edge_wrap32(-(int64_t)abs_input), integer_bits));
    if (a == 0) return (int32_t)1 << 30;
    return a > 0 ? pos : ea_sub(EDGE_INT32_MAX, pos);
}

static inline int32_t ea_tanh(int32_t a, int32_t integer_bits) {
    int32_t n = a < 0 ? a : edge_wrap32(-(int64_t)a);
    int32_t t = ea_one_minus_x_over_one_plus_x(ea_exp_on_negative_values(n, integer_bits + 1));
    if (a == 0) return 0;
    return a < 0 ? edge_wrap32(-(int64_t)t) : t;
}

/* Leading zeros of x (32 for 0): one CLZ / LZCNT where the compiler has the builtin (Cortex-M3 and up, x86,
 * aarch64; libgcc's table on an M0+), else the bit loop. */
static inline int32_t ea_clz32(uint32_t x) {
    if (!x) return 32;
#if defined(__GNUC__)
    return (int32_t)__builtin_clz(x);
#else
    {
        int32_t n = 0;
        while (!(x & 0x80000000u)) { x <<= 1; n++; }
        return n;
    }
#endif
}

/* TFLite GetReciprocal: 1/x as Q0.31 in [0.5, 1) and *num_bits_over_unit. */
static inline int32_t ea_get_reciprocal(int32_t x, int32_t x_integer_digits, int32_t *num_bits_over_unit) {
    int32_t headroom_plus_one = ea_clz32((uint32_t)x);
    uint32_t shifted = headroom_plus_one >= 32 ? 0u : (uint32_t)x << headroom_plus_one;
    *num_bits_over_unit = x_integer_digits - headroom_plus_one;
    return ea_one_over_one_plus_x(edge_wrap32((int64_t)shifted - ((int64_t)1 << 31)));
}

/* gemmlowp / TFLite GetInvSqrtQuantizedMultiplierExp(x, reverse_shift -1), for x >= 0 (RSQRT, L2_NORMALIZATION). */
static inline void ea_inv_sqrt_multiplier(int32_t x, int32_t *mult, int32_t *shift) {
    int32_t s = 11, pairs, f3_half, v, i;
    if (x <= 1) {
        *mult = EDGE_INT32_MAX;
        *shift = 0;
        return;
    }
    while (x >= (1 << 29)) {
        x /= 4;
        s++;
    }
    pairs = (ea_clz32((uint32_t)x) - 1) / 2 - 1;
    s -= pairs;
    x <<= 2 * pairs;
    f3_half = ea_mul_by_pot(x >> 1, -1);
    v = (int32_t)1 << 28; /* F3 one */
    for (i = 0; i < 5; i++) {
        const int32_t v3 = ea_rescale(edge_srdhm(edge_srdhm(v, v), v), 9, 3);
        v = ea_rescale(ea_sub(edge_srdhm((1 << 28) + (1 << 27), v), edge_srdhm(f3_half, v3)), 6, 3);
    }
    v = edge_srdhm(v, 1518500250); /* * sqrt(2) / 2 */
    if (s < 0) {
        v = edge_wrap32((int64_t)((uint64_t)(uint32_t)v << -s));
        s = 0;
    }
    *mult = v;
    *shift = -s;
}

/* ------------------------------------------------------------------------------------ int16 helpers */

static inline int32_t ea_wrap16(int64_t x) { return (int32_t)(((x + 32768) & 0xFFFF) - 32768); }
static inline int32_t ea_sat16(int64_t x) { return (int32_t)(x < -32768 ? -32768 : x > 32767 ? 32767 : x); }

/* gemmlowp SaturatingRoundingDoublingHighMul on int16 raw values. */
static inline int32_t ea_srdhm16(int32_t a, int32_t b) {
    int64_t ab = (int64_t)a * b;
    int64_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    if (a == -32768 && b == -32768) return 32767;
    return ea_wrap16((ab + nudge) / 32768);
}

/* ------------------------------------------------------------------------------------ int16 tables */

#define EA_LUT16_SIZE 513

/* LUTPopulateInt16 (fixedpoint.lut_populate_int16) in float32 arithmetic; transform(params, x) returns float
 * (LOG's value below its domain depends on the output scale: its params). */
static inline void ea_lut_populate_int16_p(float (*transform)(const void *, float), const void *params,
                                           float input_scale, int32_t input_zp, float output_scale, int32_t output_zp,
                                           int16_t *lut) {
    const float input_min = input_scale * (float)(-32768 - input_zp);
    const float input_max = input_scale * (float)(32767 - input_zp);
    const float output_min = output_scale * (float)(-32768 - output_zp);
    const float output_max = output_scale * (float)(32767 - output_zp);
    const float step = (input_max - input_min) / 512.0f;
    const float half_step = step / 2.0f;
    const float inv = 65536.0f / (output_max - output_min);
    float last;
    int i;
    for (i = 0; i < 512; i++) {
        float fi = (float)i;
        float x0 = input_min + fi * step;
        float xm = x0 + half_step;
        float x1 = input_min + (fi + 1.0f) * step;
        float val = transform(params, x0), val_mid = transform(params, xm), val_next = transform(params, x1);
        float sample = ea_round_f32(val * inv);
        float interp = ea_round_f32((val_next * inv + ea_round_f32(val * inv)) / 2.0f);
        float mid = ea_round_f32(val_mid * inv);
        float bias = ea_round_f32((interp - mid) / 2.0f);
        float v = sample - bias;
        if (v != v) v = 0.0f; /* inf - inf of an overflowing transform (EXP): LiteRT's cast gives 0 on x86 */
        v = v < -32768.0f ? -32768.0f : (v > 32767.0f ? 32767.0f : v);
        lut[i] = (int16_t)v;
    }
    last = ea_round_f32(transform(params, input_max) * inv);
    if (last != last) last = 0.0f;
    last = last < -32768.0f ? -32768.0f : (last > 32767.0f ? 32767.0f : last);
    lut[512] = (int16_t)last;
}

typedef struct {
    float (*f)(float);
} ea_lut_fn_t;

static inline float ea_lut_call(const void *params, float x) { return ((const ea_lut_fn_t *)params)->f(x); }

/* LUTPopulateInt16 of a transform without parameters */
static inline void ea_lut_populate_int16(float (*transform)(float), float input_scale, int32_t input_zp,
                                         float output_scale, int32_t output_zp, int16_t *lut) {
    ea_lut_fn_t fn;
    fn.f = transform;
    ea_lut_populate_int16_p(ea_lut_call, &fn, input_scale, input_zp, output_scale, output_zp, lut);
}

/* LUTLookup(int16): 9-bit index, 7-bit linear interpolation. */
static inline int32_t ea_lut_lookup_int16(int32_t value, const int16_t *lut) {
    int32_t index = 256 + (value >> 7);
    int32_t offset = value & 0x7F;
    int32_t base = lut[index];
    int32_t slope = ea_wrap16((int64_t)lut[index + 1] - base);
    return ea_wrap16(base + ((slope * offset + 64) >> 7));
}

/* sigmoid(i / 24) in unsigned Q0.16, i = 0..255: the constant table TFLite's int16 logistic/tanh
 * interpolate (data copied as values, as fixedpoint.SIGMOID_TABLE_UINT16). */
static inline uint16_t ea_sigmoid_table(int32_t i) {
    static const uint16_t table[256] = {
        32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064,
        42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464,
        50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503,
        56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
        60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666,
        62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968,
        64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687,
        64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
        65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291,
        65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404,
        65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465,
        65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
        65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
        65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
        65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530,
        65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
        65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
        65535};
    return table[i];
}

/* TFLM's int16 logistic of x, the input already scaled to the table's units (9 fractional bits): |x| >> 9
 * picks a sample of the sigmoid table, its low 9 bits interpolate to the next; Q0.15 out (LOGISTIC and the
 * LSTM gates). */
static inline int32_t ea_sigmoid16_lookup(int64_t x) {
    const int64_t a = x < 0 ? -x : x;
    const int64_t uh = a >> 9;
    int64_t res;
    if (uh < 255) {
        int64_t ua = ea_sigmoid_table((int32_t)uh), ub = ea_sigmoid_table((int32_t)uh + 1);
        res = (ua << 9) + (a & 0x1FF) * (ub - ua);
    } else {
        res = (int64_t)0x7FFF << 10;
    }
    res = x >= 0 ? res + (1 << 9) : ((int64_t)1 << 25) - res + (1 << 9) - 1;
    return ea_wrap16((int64_t)((uint64_t)res & 0xFFFFFFFFu) >> 10);
}

/* TFLM's int16 tanh the same way: 2 * sigmoid(2x) - 1 on the table with 8 fractional bits of x. */
static inline int32_t ea_tanh16_lookup(int64_t x) {
    const int64_t a = x < 0 ? -x : x;
    const int64_t uh = a >> 8;
    int64_t res;
    if (uh < 255) {
        int64_t ua = ea_sigmoid_table((int32_t)uh), ub = ea_sigmoid_table((int32_t)uh + 1);
        res = (ua << 8) + (a & 0xFF) * (ub - ua);
    } else {
        res = (int64_t)0xFFFF << 8;
    }
    res = x >= 0 ? res - (1 << 23) + (1 << 7) : -res + (1 << 23) + (1 << 7) - 1;
    return ea_wrap16(edge_wrap32(res) >> 8);
}

/* float32 log2 test of a scale (activations._checked_log2): *log2 = round(log2(x)); 1 when it is a power of 2
 * within 1e-3. */
static inline int ea_checked_log2(float x, int32_t *log2) {
    const float inv_ln2 = (float)(1.0 / log(2.0));
    float x_log2;
    if (!(x > 0.0f && x <= 3.4028235e38f)) { /* 0, negative, inf, NaN (a malformed scale, found by the fuzzer): the
                                               * log would be -inf / NaN, undefined as an int */
        *log2 = 0;
        return 0;
    }
    x_log2 = (float)log((double)x) * inv_ln2;
    float rounded = ea_round_f32(x_log2);
    *log2 = (int32_t)rounded;
    return fabsf(x_log2 - rounded) < 1e-3f;
}

/* ------------------------------------------------------------------------------------ LOGISTIC / TANH */

/* int8 LOGISTIC/TANH input rescale (activations._int8_radius_params): x - in_zp to Q4.27 through
 * (multiplier, shift); |x - in_zp| >= radius saturates. */
typedef struct {
    int32_t in_zp, multiplier, shift;
    int64_t radius;
} ea_radius_t;

static inline void ea_int8_radius_params(float scale, int32_t in_zp, ea_radius_t *p) {
    int left_shift = 0;
    double q = frexp((double)scale * 134217728.0, &left_shift);
    double r = floor(15.0 * 134217728.0 * ldexp(1.0, -left_shift));
    p->in_zp = in_zp;
    p->multiplier = (int32_t)edge_round(q * 2147483648.0);
    p->shift = left_shift;
    p->radius = r > 4.0e18 ? (int64_t)4000000000000000000LL : (int64_t)r;
}

/* The Q4.27 input of int8 value v; *saturated = -1 / 1 (and 0 returned) at or beyond the radius, else 0. */
static inline int32_t ea_int8_radius_input(const ea_radius_t *p, int32_t v, int *saturated) {
    const int64_t diff = (int64_t)v - p->in_zp;
    *saturated = diff <= -p->radius ? -1 : diff >= p->radius ? 1 : 0;
    return *saturated ? 0 : ea_mbqm(edge_wrap32(diff), p->multiplier, p->shift);
}

/* int16 LOGISTIC/TANH input scaling (activations._int16_sigmoid_params): d = (x * multiplier + round) >>
 * left_shift. Returns 0, -1 when the output scale is not 2^-15 (unsupported). */
static inline int ea_int16_sigmoid_params(float in_scale, float out_scale, int is_tanh, int64_t *multiplier,
                                          int32_t *left_shift) {
    int32_t log2 = 0, out_log2 = 0, shift;
    int pot = ea_checked_log2(in_scale, &log2);
    int64_t m_int = 0;
    shift = 12 + log2;
    pot = pot && (shift == 0 || (is_tanh && shift == 1));
    if (!pot) {
        double m = (double)in_scale * 4096.0 * 3.0;
        shift = 0;
        while (m <= 32767.0 / 2.0 && shift <= 30) {
            shift++;
            m *= 2.0;
        }
        m_int = m < 9.0e18 ? (int64_t)m : (int64_t)9000000000000000000LL;
    }
    if (!ea_checked_log2(out_scale, &out_log2) || out_log2 != -15) return -1;
    if (m_int == 0) {
        m_int = (int64_t)3 << shift;
        shift = 0;
    }
    *multiplier = m_int;
    *left_shift = shift;
    return 0;
}

/* ------------------------------------------------------------------------------------ int8 tables */

/* An int8 element-wise kernel as a 256-entry table: prepare evaluates the kernel's integer formula
 * f(params, x) for every input, eval looks each element up (LOGISTIC, TANH, RELU*, LEAKY_RELU, HARD_SWISH). */
typedef int32_t (*ea_lut8_fn)(const void *params, int32_t x);

static inline void ea_lut8_build(int8_t lut[256], ea_lut8_fn f, const void *params) {
    int32_t i;
    for (i = -128; i < 128; i++) lut[(uint8_t)i] = (int8_t)f(params, i);
}

static inline void ea_lut8_apply(const int8_t lut[256], const void *x, void *y, int64_t n) {
    const uint8_t *xi = (const uint8_t *)x;
    int8_t *yo = (int8_t *)y;
    int64_t i;
    for (i = 0; i < n; i++) yo[i] = lut[xi[i]];
}

/* ea_lut8_apply on the host fast path of `level` (the kernel's, asked at prepare with ea_lut8_level; 0: the loop
 * above): the same bytes. */
static inline void ea_lut8_apply_at(int32_t level, const int8_t lut[256], const void *x, void *y, int64_t n) {
#if EDGE_SIMD
    if (level && edge_simd_lut8(level, (const uint8_t *)lut, (const uint8_t *)x, (uint8_t *)y, n)) return;
#else
    (void)level;
#endif
    ea_lut8_apply(lut, x, y, n);
}

/* The level ea_lut8_apply_at runs for a node prepared now (0: no fast table path on this build or CPU). */
static inline int32_t ea_lut8_level(void) {
#if EDGE_SIMD
    const int32_t level = edge_simd_level();
    return level && edge_simd_lut8(level, (const uint8_t *)0, (const uint8_t *)0, (uint8_t *)0, 0) ? level : 0;
#else
    return 0;
#endif
}

/* The start of a table kernel's eval: the node's input and output and the element count; an INT8 node runs its
 * table here and returns 1 (done), any other type returns 0 for the kernel's own int16 / float32 loop. */
static inline int ea_lut8_eval(const edge_node_t *node, edge_ctx_t *ctx, int32_t type, const int8_t lut[256],
                               const edge_tensor_t **x, edge_tensor_t **out, int64_t *n) {
    *x = edge_in(ctx, node, 0);
    *out = edge_out(ctx, node, 0);
    *n = edge_tensor_elements(*out);
    if (type != EDGE_INT8) return 0;
    ea_lut8_apply(lut, (*x)->data, (*out)->data, *n);
    return 1;
}

/* ------------------------------------------------------------------------------------ one-input kernels */

/* The start every one-input elementwise prepare shares (RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, LEAKY_RELU,
 * HARD_SWISH, LOGISTIC, TANH, ELU): one input and one output, the input FLOAT32 / INT8 (/ INT16 with EA_ALSO_INT16,
 * / UINT8 with EA_ALSO_UINT8 in `also`) and built in (edge_type_built), the output given the input's shape and of
 * its type, and `bytes` of zeroed op data in node->user_data. Reasons leave the op's name to the error message's
 * node prefix. */
enum { EA_ALSO_INT16 = 1, EA_ALSO_UINT8 = 2 };
static inline edge_status_t ea_unary_begin(edge_node_t *node, edge_ctx_t *ctx, int also, size_t bytes,
                                           edge_tensor_t **x, edge_tensor_t **out) {
    edge_status_t s;
    edge_tensor_t *in;
    *x = *out = (edge_tensor_t *)0;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    in = *x = edge_in(ctx, node, 0);
    *out = edge_out(ctx, node, 0);
    if (!in) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (in->type != EDGE_FLOAT32 && in->type != EDGE_INT8 && !((also & EA_ALSO_INT16) && in->type == EDGE_INT16) &&
        !((also & EA_ALSO_UINT8) && in->type == EDGE_UINT8))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE,
                         also == EA_ALSO_INT16   ? "C kernel runs FLOAT32, INT8, INT16"
                         : also == EA_ALSO_UINT8 ? "C kernel runs FLOAT32, INT8, UINT8"
                         : also                  ? "C kernel runs FLOAT32, INT8, INT16, UINT8"
                                                 : "C kernel runs FLOAT32, INT8");
    if ((s = edge_type_built(ctx, in->type)) != EDGE_OK) return s;
    if ((s = edge_set_output_shape(ctx, node, 0, in->dims, in->rank)) != EDGE_OK) return s;
    if ((*out)->type != in->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    node->user_data = edge_alloc_persistent(ctx, bytes);
    return node->user_data ? EDGE_OK : EDGE_ARENA_TOO_SMALL;
}

/* Quantized one-input kernels: both tensors quantized with positive finite scales. */
static inline edge_status_t ea_unary_quantized(edge_ctx_t *ctx, const edge_tensor_t *x, const edge_tensor_t *out) {
    if (!x->quantized || !out->quantized) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "tensors need quantization parameters");
    if (!ea_good_scale(x) || !ea_good_scale(out)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "scales must be positive and finite");
    return EDGE_OK;
}

/* ------------------------------------------------------------------------------------ LOGISTIC / TANH kernels */

/* LOGISTIC and TANH are one kernel with two curves (logistic.c, tanh.c pass theirs): the same checks, the same
 * op data, the same eval loops. int8: a 256-entry table from the op's int8_value (given the Q4.27 radius
 * parameters); int16: TFLM's 256-sample table method after a small integer multiplier (ea_int16_sigmoid_params);
 * float32: in double, rounded to float. Error reasons leave the op's name to the message's node prefix. */
typedef struct {
    int32_t type;
    int32_t left_shift16;  /* int16 */
    int64_t multiplier16;  /* int16 */
    int8_t lut[256];       /* int8: the output of every input */
#if EDGE_SIMD
    int32_t simd;          /* float32 / int8 on a 64-bit Linux CPU with a fast path: its level (0: none) */
#endif
} ea_sigmoid_data_t;

static inline edge_status_t ea_sigmoid_prepare(edge_node_t *node, edge_ctx_t *ctx, int is_tanh, ea_lut8_fn int8_value) {
    edge_tensor_t *x, *out;
    ea_sigmoid_data_t *d;
    edge_status_t s = ea_unary_begin(node, ctx, EA_ALSO_INT16, sizeof *d, &x, &out);

    if (s != EDGE_OK) return s;
    d = (ea_sigmoid_data_t *)node->user_data;
    d->type = x->type;
    if (EDGE_WITH_FLOAT32 && x->type == EDGE_FLOAT32) {
#if EDGE_SIMD
        d->simd = edge_simd_level();
        if (d->simd && !edge_simd_act_f32(d->simd, EDGE_SIMD_ACT_LOGISTIC, NULL, NULL, 0, 0.0f, 0.0f)) d->simd = 0;
#endif
        return EDGE_OK;
    }
    if ((s = ea_unary_quantized(ctx, x, out)) != EDGE_OK) return s;
    if (x->type == EDGE_INT8) {
        ea_radius_t radius;
        if (!is_tanh && out->zero_point != -128) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LOGISTIC: int8 output zero point must be -128");
        ea_int8_radius_params(x->scale, x->zero_point, &radius);
        ea_lut8_build(d->lut, int8_value, &radius);
#if EDGE_SIMD
        d->simd = ea_lut8_level();
#endif
        return EDGE_OK;
    }
    if (!EDGE_WITH_INT16) return EDGE_UNSUPPORTED_TYPE; /* not reached: edge_type_built refused it */
    if (x->zero_point || out->zero_point) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "int16 needs zero points of 0");
    if (ea_int16_sigmoid_params(x->scale, out->scale, is_tanh, &d->multiplier16, &d->left_shift16) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "int16 output scale must be 2^-15");
    return EDGE_OK;
}

/* Float LOGISTIC / TANH's exp and tanh: in double rounded to float (the Python kernels' and the reference's values)
 * where the FPU computes double, in single precision on cores whose FPU has none (__ARM_FP bit 3 clear: Cortex-M4F,
 * M33; no FPU: M0+), where double math is software: ~1,800 instructions a LOGISTIC element on the M4 under QEMU
 * with exp in double. expf / tanhf are within an ulp or two of the double results (float outputs are held to
 * 1e-4 of range). EDGE_FLOAT_MATH_SINGLE=1 forces the single-precision math (a host test build). */
#ifndef EDGE_FLOAT_MATH_SINGLE
#if defined(__arm__) && !(defined(__ARM_FP) && (__ARM_FP & 8))
#define EDGE_FLOAT_MATH_SINGLE 1
#else
#define EDGE_FLOAT_MATH_SINGLE 0
#endif
#endif

static inline float ea_exp_f32(float v) {
#if EDGE_FLOAT_MATH_SINGLE
    return expf(v);
#else
    return (float)exp((double)v);
#endif
}

static inline float ea_tanh_f32(float v) {
#if EDGE_FLOAT_MATH_SINGLE
    return tanhf(v);
#else
    return (float)tanh((double)v);
#endif
}

/* FLOOR_DIV float32: floor((double)x / (double)y) rounded to float (LiteRT's floor_div.cc), the same bits in single
 * precision where EDGE_FLOAT_MATH_SINGLE: q = x / y rounded to float; a q that is not an integer has no integer
 * between it and the exact quotient (|q| < 2^23; an integer there, representable, would be nearer), so floor(q) is
 * the floor; an integer q below 2^24 may sit just above the exact quotient: the remainder x - q * y (exact for the
 * rounded quotient, one FMA) says which side (its sign against y's), and a 24-bit quotient's double is never an
 * integer it is not, so the double expression floors the same. Quotients from 2^24 (rounded to even there) keep
 * the double expression; infinities and NaN pass as they do through it. */
static inline float ea_floor_div_f32(float x, float y) {
#if EDGE_FLOAT_MATH_SINGLE
    const float q = x / y, f = floorf(q), big = 16777216.0f;
    if (f != q && fabsf(q) < big) return f;
    if (f == q && fabsf(q) < big) {
        const float r = fmaf(-q, y, x);
        return (r != 0.0f && r == r && ((r < 0.0f) != (y < 0.0f))) ? f - 1.0f : f; /* r NaN: y infinite */
    }
    if (!(fabsf(q) < 3.4028234663852886e38f)) return f; /* inf, NaN */
#endif
    return (float)floor((double)x / (double)y);
}

static inline void ea_sigmoid_span(const edge_node_t *node, edge_ctx_t *ctx, const void *xv, void *yv, int64_t n,
                                   int is_tanh) {
    const ea_sigmoid_data_t *d = (const ea_sigmoid_data_t *)node->user_data;
    int64_t i;
    (void)ctx;
    if (d->type == EDGE_INT8) {
#if EDGE_SIMD
        ea_lut8_apply_at(d->simd, d->lut, xv, yv, n);
#else
        ea_lut8_apply(d->lut, xv, yv, n);
#endif
    } else if (EDGE_WITH_INT16 && d->type == EDGE_INT16) {
        const int16_t *xi = (const int16_t *)xv;
        int16_t *y = (int16_t *)yv;
        const int32_t ls = d->left_shift16;
        const int64_t rnd = ls > 0 ? ((int64_t)1 << (ls - 1)) : 0;
        for (i = 0; i < n; i++) {
            const int64_t v = ((int64_t)xi[i] * d->multiplier16 + rnd) >> ls;
            y[i] = (int16_t)(is_tanh ? ea_tanh16_lookup(v) : ea_sigmoid16_lookup(v));
        }
    } else if (EDGE_WITH_FLOAT32) {
        const float *xf = (const float *)xv;
        float *y = (float *)yv;
#if EDGE_SIMD
        /* within 1e-6 relative of the loop below (edge_simd.h); not in a patch window (the portable loops) */
        if (d->simd && !(EDGE_WITH_PATCH && ctx->window) &&
            edge_simd_act_f32(d->simd, is_tanh ? EDGE_SIMD_ACT_TANH : EDGE_SIMD_ACT_LOGISTIC, xf, y, n, 0.0f, 0.0f))
            return;
#endif
        for (i = 0; i < n; i++) {
            const float v = xf[i];
            if (is_tanh) y[i] = ea_tanh_f32(v);
            else if (v > 16.619047164916992188f) y[i] = 1.0f; /* TFLM's float logistic cut-offs */
            else if (v < -9.0f) y[i] = ea_exp_f32(v);
            else y[i] = 1.0f / (1.0f + ea_exp_f32(-v));
        }
    }
}

/* ------------------------------------------------------------------------------------ broadcasting */

#define EA_BCAST_MAX_RANK 6

/* Two operands broadcast numpy-style, coalesced: rank dims, per-dim element strides (0 = broadcast) of each
 * operand; the innermost stride of each is 0 or 1. */
typedef struct {
    int32_t rank;
    int32_t dims[EA_BCAST_MAX_RANK];
    int32_t a_stride[EA_BCAST_MAX_RANK], b_stride[EA_BCAST_MAX_RANK];
    int64_t count;
} ea_bcast_t;

/* Output shape of broadcasting a and b into out_dims/out_rank (room for 8) and the coalesced loop.
 * Returns 0, -1 when the shapes do not broadcast, -2 when different shapes need a rank above 6, -3 when the
 * output would hold more than 2^40 elements (the loader's cap on one tensor: each input passed it, their
 * broadcast need not, and the product must not overflow int64). */
static inline int ea_bcast_prepare(ea_bcast_t *bc, const edge_tensor_t *a, const edge_tensor_t *b,
                                   int32_t *out_dims, int32_t *out_rank) {
    int32_t rank = a->rank > b->rank ? a->rank : b->rank, k, same = a->rank == b->rank;
    int32_t n = 0, prev_a = -1, prev_b = -1;
    int64_t acc_a = 1, acc_b = 1;
    int32_t dims[8], full_a[8], full_b[8];
    if (same)
        for (k = 0; k < a->rank; k++) same &= a->dims[k] == b->dims[k];
    if (rank > 8 || (!same && rank > EA_BCAST_MAX_RANK)) return -2;
    bc->count = 1;
    for (k = 0; k < rank; k++) {
        int32_t ia = k - (rank - a->rank), ib = k - (rank - b->rank);
        int32_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1, d;
        if (da == db) d = da;
        else if (da == 1) d = db;
        else if (db == 1) d = da;
        else return -1;
        out_dims[k] = d;
        if (d > 0 && bc->count > ((int64_t)1 << 40) / d) return -3;
        bc->count *= d;
    }
    *out_rank = rank;
    /* coalesce: drop size-1 dims, merge neighbours whose operands are both full or both broadcast alike */
    for (k = 0; k < rank; k++) {
        int32_t ia = k - (rank - a->rank), ib = k - (rank - b->rank);
        int32_t d = out_dims[k];
        int32_t fa = ia >= 0 && a->dims[ia] == d, fb = ib >= 0 && b->dims[ib] == d;
        if (d == 1) continue;
        /* merged while the product fits int32 (a zero-size output counts 0 elements yet may pair dims whose
         * product does not: UBSan, session 18's fuzz finding) */
        if (n > 0 && fa == prev_a && fb == prev_b && (int64_t)dims[n - 1] * d <= 0x7fffffff) {
            dims[n - 1] *= d;
        } else {
            dims[n] = d;
            full_a[n] = fa;
            full_b[n] = fb;
            n++;
        }
        prev_a = fa;
        prev_b = fb;
    }
    if (n == 0) { dims[0] = 1; full_a[0] = full_b[0] = 1; n = 1; }
    if (n > EA_BCAST_MAX_RANK) return -2; /* same shapes of rank 7-8 that did not merge into the loop's room */
    bc->rank = n;
    for (k = n - 1; k >= 0; k--) {
        bc->dims[k] = dims[k];
        bc->a_stride[k] = full_a[k] ? (int32_t)acc_a : 0;
        bc->b_stride[k] = full_b[k] ? (int32_t)acc_b : 0;
        if (full_a[k]) acc_a *= dims[k];
        if (full_b[k]) acc_b *= dims[k];
    }
    return 0;
}

/* One row of the broadcast loop: n elements, operand steps 0 or 1 (in elements). */
typedef void (*ea_row_fn)(const void *op, const void *a, int32_t a_step, const void *b, int32_t b_step, void *y,
                          int32_t n);

static inline void ea_bcast_run(const ea_bcast_t *bc, const void *op, const void *a, uint32_t a_size, const void *b,
                                uint32_t b_size, void *y, uint32_t y_size, ea_row_fn row) {
    const int32_t last = bc->rank - 1, n = bc->dims[last];
    int32_t idx[EA_BCAST_MAX_RANK] = {0, 0, 0, 0, 0, 0}, k;
    int64_t oa = 0, ob = 0, oy = 0;
    if (bc->count == 0) return;
    for (;;) {
        row(op, (const uint8_t *)a + oa * a_size, bc->a_stride[last], (const uint8_t *)b + ob * b_size,
            bc->b_stride[last], (uint8_t *)y + oy * y_size, n);
        oy += n;
        for (k = last - 1; k >= 0; k--) {
            idx[k]++;
            oa += bc->a_stride[k];
            ob += bc->b_stride[k];
            if (idx[k] < bc->dims[k]) break;
            oa -= (int64_t)bc->a_stride[k] * bc->dims[k];
            ob -= (int64_t)bc->b_stride[k] * bc->dims[k];
            idx[k] = 0;
        }
        if (k < 0) break;
    }
}

#endif /* EDGE_FIXEDPOINT_ACT_H */
