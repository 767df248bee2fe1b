/* edge_half.h - IEEE half (FLOAT16) bits to and from wider floats, exactly as numpy converts them; for the kernels
 * that take FLOAT16 tensors (cast.c, float_unary.c). Header-only: static inline, nothing linked unless used.
 */
#ifndef EDGE_HALF_H
#define EDGE_HALF_H

#include <stdint.h>
#include <string.h>

/* a half's bits widened to float32's (exact; NaN payloads kept bit for bit, as numpy's half conversions) */
static inline uint32_t half_to_float_bits(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
    if (exponent == 0x1F) return sign | 0x7F800000u | (mantissa << 13); /* inf / NaN */
    if (exponent != 0) return sign | ((exponent + 112u) << 23) | (mantissa << 13);
    if (mantissa == 0) return sign;
    exponent = 113; /* subnormal half: normalize */
    while (!(mantissa & 0x400u)) {
        mantissa <<= 1;
        exponent--;
    }
    return sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13);
}

/* q (a half's magnitude bits before rounding) rounded by its dropped bits rem of `shift` bits: ties to even */
static inline uint16_t half_round(uint64_t q, uint64_t rem, int shift) {
    const uint64_t half = (uint64_t)1 << (shift - 1);
    return (uint16_t)(rem > half || (rem == half && (q & 1)) ? q + 1 : q);
}

/* float64 bits rounded to half (numpy's npy_doublebits_to_halfbits; its float32 one gives the same for a
 * float32 widened exactly) */
static inline uint16_t double_bits_to_half(uint64_t b) {
    const uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
    int64_t e = (int64_t)((b >> 52) & 0x7FFu);
    const uint64_t sig = b & (((uint64_t)1 << 52) - 1);
    if (e == 0x7FF) {
        uint16_t r = (uint16_t)(0x7C00u + (sig >> 42));
        if (sig && r == 0x7C00u) r++; /* a NaN stays a NaN */
        return (uint16_t)(sign | r);
    }
    e -= 1023 - 15; /* half's biased exponent */
    if (e >= 31) return (uint16_t)(sign | 0x7C00u);
    if (e <= 0) { /* a subnormal half (or 0): units of 2^-24 */
        const int shift = (int)(43 - e);
        const uint64_t m = sig | ((uint64_t)1 << 52);
        if (shift > 53) return sign; /* below 2^-25: rounds to 0 */
        return (uint16_t)(sign | half_round(m >> shift, m & (((uint64_t)1 << shift) - 1), shift));
    }
    /* normal: a carry out of the mantissa steps the exponent (up to infinity), as it should */
    return (uint16_t)(sign | half_round(((uint64_t)e << 10) | (sig >> 42), sig & (((uint64_t)1 << 42) - 1), 42));
}

static inline uint16_t double_to_half(double v) {
    uint64_t b;
    memcpy(&b, &v, 8);
    return double_bits_to_half(b);
}

/* a half's value as a float (exact) */
static inline float half_to_float(uint16_t h) {
    const uint32_t b = half_to_float_bits(h);
    float v;
    memcpy(&v, &b, 4);
    return v;
}

#endif /* EDGE_HALF_H */
