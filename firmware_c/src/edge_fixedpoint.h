/* edge_fixedpoint.h - TFLM's integer requantization arithmetic, shared by the kernels.
 *
 * The same steps, order and rounding as edge_sdk/runtime/kernels/quant.py (and TFLM's reference kernels):
 * a real multiplier M is an int32 Q0.31 mantissa and a power-of-two shift; it is applied with gemmlowp's
 * saturating rounding doubling high multiply and a rounding (half away from zero) right shift.
 * Every signed overflow the reference code relies on wrapping for is done in unsigned arithmetic here,
 * so the results are defined C and identical on every target.
 */
#ifndef EDGE_FIXEDPOINT_H
#define EDGE_FIXEDPOINT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "edge_kernel.h"

#define EDGE_INT32_MIN (-2147483647 - 1)
#define EDGE_INT32_MAX 2147483647

/* int32 <- the low 32 bits of v (two's complement wrap, as the reference's int32 arithmetic does). */
static inline int32_t edge_wrap32(int64_t v) {
    uint32_t u = (uint32_t)(uint64_t)v;
    return u <= 0x7fffffffu ? (int32_t)u : (int32_t)(int64_t)(u - 0x80000000u) + EDGE_INT32_MIN;
}

/* gemmlowp SaturatingRoundingDoublingHighMul: round(a * b / 2^31), saturating the one overflow case. */
static inline int32_t edge_srdhm(int32_t a, int32_t b) {
    int64_t ab, nudge, q;
    if (a == EDGE_INT32_MIN && b == EDGE_INT32_MIN) return EDGE_INT32_MAX;
    ab = (int64_t)a * (int64_t)b;
    nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
    q = (ab + nudge) / ((int64_t)1 << 31); /* C division truncates toward zero, as gemmlowp's does */
    return (int32_t)q;
}

/* gemmlowp RoundingDivideByPOT: x / 2^exponent, halves away from zero (exponent 0..31). */
static inline int32_t edge_rdbpot(int32_t x, int32_t exponent) {
    int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    int32_t remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0); /* >> of a negative: arithmetic on our compilers */
}

/* TFLM MultiplyByQuantizedMultiplier(int32 x, int32 multiplier, int shift). */
static inline int32_t edge_mbqm(int32_t x, int32_t multiplier, int32_t shift) {
    int32_t left = shift > 0 ? shift : 0;
    int32_t right = shift > 0 ? 0 : -shift;
    int32_t shifted = left > 31 ? 0 : edge_wrap32((int64_t)(uint32_t)((uint32_t)x << left)); /* wrapped */
    return edge_rdbpot(edge_srdhm(shifted, multiplier), right);
}

/* TFLM MultiplyByQuantizedMultiplier(int64 x, int32 multiplier, int shift) of the 16x8 kernels: the
 * multiplier rounded to 16 bits, one rounding shift by 15 - shift, the result truncated to int32. */
static inline int32_t edge_mbqm64(int64_t x, int32_t multiplier, int32_t shift) {
    int32_t reduced = multiplier < 0x7FFF0000 ? (int32_t)(((int64_t)multiplier + (1 << 15)) >> 16) : 0x7FFF;
    int32_t total_shift = 15 - shift;
    uint64_t v;
    if (total_shift < 1) { /* shift > 14: a ratio of scales above 2^14 (absurd; found by the fuzzer): no
                            * rounding term, a left shift, wrapped like the int64 arithmetic */
        v = (uint64_t)x * (uint64_t)(int64_t)reduced;
        return -total_shift >= 64 ? 0 : edge_wrap32((int64_t)(v << -total_shift));
    }
    v = (uint64_t)x * (uint64_t)(int64_t)reduced + ((uint64_t)1 << (total_shift - 1));
    int64_t sv = (int64_t)v; /* the reference's int64 arithmetic, wrapped (it never overflows in practice) */
    return edge_wrap32(sv >> total_shift);
}

/* (double)f, exactly, from the IEEE-754 bits with integers: the same value as the conversion, without the soft-float
 * helper on cores whose FPU is single precision (Cortex-M4 links __aeabi_f2d from libgcc's add/sub object, ~900 B,
 * for nothing else). For prepare-time multiplier arithmetic, where TFLM widens float scales to double. */
static inline double edge_f2d(float f) {
    uint32_t u, e, m;
    uint64_t r;
    double d;
    memcpy(&u, &f, sizeof u);
    e = (u >> 23) & 0xffu;
    m = u & 0x7fffffu;
    if (e == 0xffu) {
        r = ((uint64_t)0x7ff << 52) | ((uint64_t)m << 29); /* inf, NaN (payload kept) */
    } else if (e != 0) {
        r = ((uint64_t)(e + 896) << 52) | ((uint64_t)m << 29); /* normal: rebias 127 -> 1023 */
    } else if (m != 0) {
        int32_t top = 22; /* subnormal m * 2^-149: normal as a double */
        while (!(m >> top)) top--;
        r = ((uint64_t)(top - 149 + 1023) << 52) | (((uint64_t)m << (52 - top)) & (((uint64_t)1 << 52) - 1));
    } else {
        r = 0;
    }
    r |= (uint64_t)(u >> 31) << 63;
    memcpy(&d, &r, sizeof d);
    return d;
}

/* A float's class (0 zero, 1 finite nonzero, 2 infinity, 3 NaN) and, finite, its value m * 2^*ex with the
 * significand m in [2^23, 2^24) (subnormals normalised). */
static inline int edge_f_unpack(float f, uint32_t *m, int32_t *ex) {
    uint32_t u, frac;
    int32_t e;
    memcpy(&u, &f, sizeof u);
    e = (int32_t)((u >> 23) & 0xffu);
    frac = u & 0x7fffffu;
    if (e == 0xff) return frac ? 3 : 2;
    if (e == 0 && frac == 0) return 0;
    if (e == 0) /* subnormal: frac * 2^-149 */
        for (e = 1; !(frac & 0x800000u); e--) frac <<= 1;
    *m = frac | 0x800000u;
    *ex = e - 150;
    return 1;
}

/* (double)a * (double)b / (double)c from the IEEE-754 bits with integers: the same double as that arithmetic, without
 * libgcc's soft-double multiply and divide (~1 KB of a Cortex-M4 image) on cores whose FPU is single precision or
 * absent. The product of two floats is exact in a double (48-bit significand); the quotient, rounded once to nearest
 * even, is a normal double for finite nonzero operands (2^-426 .. 2^405). NaN (sign not kept) for a NaN operand,
 * 0 * inf, inf / inf and 0 / 0; else signed inf or zero as IEEE. For prepare-time multipliers (TFLM computes
 * input_scale * filter_scale / output_scale in double). */
static inline double edge_ratio_d(float a, float b, float c) {
    uint32_t ma = 0, mb = 0, mc = 0, rem = 0, fa, fb, fc;
    int32_t ea = 0, eb = 0, ec = 0, e, i;
    const int ka = edge_f_unpack(a, &ma, &ea), kb = edge_f_unpack(b, &mb, &eb), kc = edge_f_unpack(c, &mc, &ec);
    const int kp = ka == 3 || kb == 3 || (ka == 0 && kb == 2) || (ka == 2 && kb == 0) ? 3 : ka == 0 || kb == 0 ? 0
                   : ka == 2 || kb == 2 ? 2 : 1; /* the product's class */
    uint64_t n, q = 0, r;
    double d;
    memcpy(&fa, &a, 4);
    memcpy(&fb, &b, 4);
    memcpy(&fc, &c, 4);
    r = (uint64_t)((fa ^ fb ^ fc) >> 31) << 63;
    if (kp == 3 || kc == 3 || (kp == 2 && kc == 2) || (kp == 0 && kc == 0)) {
        r = (uint64_t)0x7ff8 << 48; /* NaN */
    } else if (kp == 2 || kc == 0) {
        r |= (uint64_t)0x7ff << 52; /* inf */
    } else if (kp == 1 && kc == 1) {
        /* q = floor(n * 2^32 / mc), n = ma * mb in [2^46, 2^48): a byte of n * 2^32 at a time from the top
         * (rem < mc < 2^24: 32-bit divides), q in (2^54, 2^57); rem != 0 is the sticky bit below q. Constant
         * shifts only: variable 64-bit shifts are long on 32-bit cores. */
        n = (uint64_t)ma * mb;
        for (i = 0; i < 10; i++, n <<= 8) {
            uint32_t digit;
            rem = (rem << 8) | ((uint32_t)(n >> 40) & 0xffu);
            digit = rem / mc;
            rem -= digit * mc;
            q = (q << 8) | digit;
        }
        for (e = ea + eb - 32 - ec; !(q >> 56); e--) q <<= 1; /* q * 2^e, q in [2^56, 2^57) */
        n = q >> 4; /* 53 bits, rounded to nearest, ties to even, on the 4 bits below and the remainder */
        if ((q & 8u) && ((q & 7u) || rem || (n & 1u))) n++;
        if (n >> 53) {
            n >>= 1;
            e++;
        }
        r |= ((uint64_t)(e + 4 + 52 + 1023) << 52) | (n & (((uint64_t)1 << 52) - 1));
    } /* else a zero (kp 0 or kc 2): the sign alone */
    memcpy(&d, &r, sizeof d);
    return d;
}

/* |m * 2^e| as a 63-bit significand (bit 62 set, or m = 0) and its exponent: edge_far_ratio's numbers. */
typedef struct edge_wide_f {
    uint64_t m;
    int32_t e;
} edge_wide_f_t;

static inline edge_wide_f_t edge_wide_norm(uint64_t m, int32_t e) {
    edge_wide_f_t r;
    for (; m && !(m >> 62); e--) m <<= 1;
    r.m = m;
    r.e = m ? e : 0;
    return r;
}

/* a > b (magnitudes) */
static inline int edge_wide_gt(edge_wide_f_t a, edge_wide_f_t b) {
    if (!a.m || !b.m) return a.m != 0;
    return a.e != b.e ? a.e > b.e : a.m > b.m;
}

/* Whether |a * b - c| / d > 0.02 as doubles compute it (FULLY_CONNECTED's bias-scale check, TFLM's product in
 * double), from the IEEE-754 bits with integers: cores without a double FPU link no soft-double add, multiply,
 * divide or compare for it (~3 KB on a Cortex-M4F). NaN, inf and zero operands, and a negative d, answer as the
 * double expression does. Finite: a * b is exact (48 bits), the difference keeps 63 bits (truncated) and is
 * compared with d / 50 (d x 2^-6 bits): the same answer unless |a * b - c| / d is within 2^-55 of 0.02 (the
 * double expression rounds three times at 2^-53). */
static inline int edge_far_ratio(float a, float b, float c, float d) {
    uint32_t ma = 0, mb = 0, mc = 0, md = 0, fa, fb, fc, fd;
    int32_t ea = 0, eb = 0, ec = 0, ed = 0, k;
    const int ka = edge_f_unpack(a, &ma, &ea), kb = edge_f_unpack(b, &mb, &eb), kc = edge_f_unpack(c, &mc, &ec),
              kd = edge_f_unpack(d, &md, &ed);
    const int kp = (ka == 0 && kb == 2) || (ka == 2 && kb == 0) ? 3 : ka == 0 || kb == 0 ? 0
                   : ka == 2 || kb == 2 ? 2 : 1; /* the product's class */
    edge_wide_f_t p, q, diff, lim;
    memcpy(&fa, &a, 4);
    memcpy(&fb, &b, 4);
    memcpy(&fc, &c, 4);
    memcpy(&fd, &d, 4);
    if (ka == 3 || kb == 3 || kc == 3 || kd == 3 || kp == 3 || (fd >> 31)) return 0; /* NaN, or a negative ratio */
    if (kp == 2 || kc == 2) /* |diff| inf, or NaN (inf - inf) */
        return !(kp == 2 && kc == 2 && ((fa ^ fb) >> 31) == (fc >> 31)) && kd != 2;
    if (kd == 2) return 0; /* finite / inf */
    p = edge_wide_norm(kp ? (uint64_t)ma * mb : 0, ea + eb);
    q = edge_wide_norm(kc ? mc : 0, ec);
    if (((fa ^ fb) >> 31) != (fc >> 31)) { /* opposite signs: |p| + |c|, in 63 bits after a halving */
        edge_wide_f_t t;
        if (edge_wide_gt(q, p)) { t = p; p = q; q = t; }
        for (k = p.e - q.e + 1; k > 0 && q.m; k--) q.m >>= 1;
        diff = edge_wide_norm((p.m >> 1) + q.m, p.e + 1);
    } else {
        if (edge_wide_gt(q, p)) { diff = p; p = q; q = diff; }
        for (k = p.e - q.e; k > 0 && q.m; k--) q.m >>= 1;
        diff = edge_wide_norm(p.m - q.m, p.e);
    }
    if (kd == 0) return diff.m != 0; /* x / +0: inf, or NaN for 0 / 0 */
    diff = edge_wide_norm((diff.m >> 6) * 50u, diff.e + 6);
    lim = edge_wide_norm(md, ed);
    return edge_wide_gt(diff, lim);
}

/* (double)a * (double)b / (double)c: the double instructions where the FPU has them, else edge_ratio_d */
#if !defined(__ARM_ARCH) || (defined(__ARM_FP) && (__ARM_FP & 8))
#define EDGE_RATIO_D(a, b, c) ((double)(a) * (double)(b) / (double)(c))
#else
#define EDGE_RATIO_D(a, b, c) edge_ratio_d(a, b, c)
#endif

/* a > b for doubles that are not NaN, on the IEEE bits (no soft-float compare): sign-magnitude ordered as
 * integers. -0 and +0 compare equal. */
static inline int edge_double_gt(double a, double b) {
    uint64_t ua, ub;
    int64_t ka, kb;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    ka = (ua >> 63) ? -(int64_t)(ua & ~((uint64_t)1 << 63)) : (int64_t)ua;
    kb = (ub >> 63) ? -(int64_t)(ub & ~((uint64_t)1 << 63)) : (int64_t)ub;
    return ka > kb;
}

/* std::round: halves away from zero. */
static inline double edge_round(double x) { return x < 0 ? -floor(-x + 0.5) : floor(x + 0.5); }

/* TFLM QuantizeMultiplier: real ~= *multiplier * 2^(*shift - 31), multiplier in [2^30, 2^31) (or 0).
 * Returns -1 (and 0, 0) for a real that is not finite, which no kernel can run (the Python kernels fail too).
 * The same result as frexp + round(q * 2^31) on the double (quant.quantize_multiplier), computed from the
 * IEEE-754 bits with integers, so firmware links no libm frexp/floor: for a normal double with 53-bit
 * significand m (implicit bit set) and biased exponent e, frexp gives q = m / 2^53 and exponent e - 1022,
 * and q * 2^31 = m / 2^22 exactly, so its half-away rounding is (m + 2^21) >> 22 on the magnitude.
 * Subnormals have exponent < -31 (result 0, 0), as with frexp. */
static inline int edge_quantize_multiplier(double real, int32_t *multiplier, int32_t *shift) {
    uint64_t u, m;
    int32_t e, exponent;
    int64_t q_fixed;
    *multiplier = 0;
    *shift = 0;
    memcpy(&u, &real, sizeof u);
    e = (int32_t)((u >> 52) & 0x7ff);
    m = u & (((uint64_t)1 << 52) - 1);
    if (e == 0x7ff) return -1; /* inf or nan */
    if (e == 0) return 0;      /* zero or subnormal */
    m |= (uint64_t)1 << 52;
    exponent = e - 1022;
    q_fixed = (int64_t)((m + ((uint64_t)1 << 21)) >> 22);
    if (u >> 63) q_fixed = -q_fixed;
    if (q_fixed == ((int64_t)1 << 31)) { q_fixed /= 2; exponent += 1; }
    if (exponent < -31) { exponent = 0; q_fixed = 0; }
    *multiplier = (int32_t)q_fixed;
    *shift = exponent;
    return 0;
}

/* zero_point + round(f / scale), the division in float32 (TFLM's activation-range helper), saturated to
 * +-2^40 so that absurd scales stay defined (the caller clamps to the type's range anyway); *ok = 0 for NaN. */
static inline int64_t edge_quantize_value(float f, float scale, int32_t zero_point, int *ok) {
    /* round(q) halves away from zero from the float's bits (no libm): |q| < 2^40 has a 24-bit significand
     * m and exponent E = e - 150, so the value is m * 2^E; (double)q + 0.5 is exact, so floor of it equals
     * the integer rounding below. */
    float q = f / scale;
    uint32_t u, m;
    int32_t e;
    int64_t r;
    if (q != q) { *ok = 0; return 0; }
    memcpy(&u, &q, sizeof u);
    e = (int32_t)((u >> 23) & 0xff);
    m = (u & 0x7fffffu) | 0x800000u;
    if (e >= 127 + 40) r = (int64_t)1 << 40;                 /* |q| >= 2^40 (and inf): saturate */
    else if (e < 126) r = 0;                                  /* |q| < 0.5 */
    else if (e >= 150) r = (int64_t)m << (e - 150);           /* an integer already */
    else r = (int64_t)((m + ((uint32_t)1 << (149 - e))) >> (150 - e));
    if (u >> 31) r = -r;
    return (int64_t)zero_point + r;
}

/* TFLM CalculateActivationRangeQuantized for a fused activation (EDGE_ACT_*) on a quantized output whose
 * type range is [qmin, qmax]. Returns 0, or -1 for an activation that has no quantized clamp. */
static inline int edge_activation_range(int activation, int32_t qmin, int32_t qmax, float scale,
                                        int32_t zero_point, int32_t *lo, int32_t *hi) {
    int64_t a = qmin, b = qmax, v;
    int ok = 1;
    switch (activation) {
    case 0: break; /* NONE */
    case 1: /* RELU */
        v = edge_quantize_value(0.0f, scale, zero_point, &ok);
        a = v > qmin ? v : qmin;
        break;
    case 3: /* RELU6 */
        v = edge_quantize_value(0.0f, scale, zero_point, &ok);
        a = v > qmin ? v : qmin;
        v = edge_quantize_value(6.0f, scale, zero_point, &ok);
        b = v < qmax ? v : qmax;
        break;
    case 2: /* RELU_N1_TO_1 */
        v = edge_quantize_value(-1.0f, scale, zero_point, &ok);
        a = v > qmin ? v : qmin;
        v = edge_quantize_value(1.0f, scale, zero_point, &ok);
        b = v < qmax ? v : qmax;
        break;
    default: return -1;
    }
    if (!ok) return -1;
    *lo = (int32_t)a;
    *hi = (int32_t)b;
    return 0;
}

/* The clamp of a fused activation on float outputs (-1 for unsupported activations). */
static inline int edge_activation_range_float(int activation, float *lo, float *hi) {
    switch (activation) {
    case 0: *lo = -INFINITY; *hi = INFINITY; return 0;
    case 1: *lo = 0.0f; *hi = INFINITY; return 0;
    case 2: *lo = -1.0f; *hi = 1.0f; return 0;
    case 3: *lo = 0.0f; *hi = 6.0f; return 0;
    default: return -1;
    }
}

static inline int32_t edge_clamp32(int32_t x, int32_t lo, int32_t hi) { return x < lo ? lo : (x > hi ? hi : x); }

/* Prepare: EDGE_OK, or EDGE_UNSUPPORTED_TYPE (recorded through EDGE_FAIL) when `type` is a tensor type this
 * build compiled out (include/edge_kernel.h: EDGE_WITH_FLOAT32 / EDGE_WITH_INT16 set to 0 by a per-model
 * build). The error message's node prefix names the op; the reason names the type and the switch (one text
 * for every kernel, so a build keeps one copy). With both switches 1 this folds to EDGE_OK. */
static inline edge_status_t edge_type_built(edge_ctx_t *ctx, int32_t type) {
    if (!EDGE_WITH_FLOAT32 && type == EDGE_FLOAT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "FLOAT32 compiled out of this build (EDGE_WITH_FLOAT32=0)");
    if (!EDGE_WITH_INT16 && type == EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "INT16 compiled out of this build (EDGE_WITH_INT16=0)");
    return EDGE_OK;
}

#endif /* EDGE_FIXEDPOINT_H */
