/* edge_simd_q8_scalar.h - the scalar parts of the int8 fast paths that edge_simd_arm.c, edge_simd_x86.c and
 * edge_simd_dw_x86.c share: the tails of MAX / AVERAGE_POOL_2D (the channels left after the vector loops) and the
 * constants of int8 ADD / SUB's 32-bit input step (q8_in_step: x86-64's in256 and in512 broadcast them). Only those
 * files include it, after their own #if; static inline, so each compiles where its code stood before.
 */
#ifndef EDGE_SIMD_Q8_SCALAR_H
#define EDGE_SIMD_Q8_SCALAR_H

#include "edge_simd.h"

/* MAX_POOL_2D, channels [i, c): the window's maximum, clamped to [lo, hi]. */
static inline void q8_pool_max_tail(const int8_t *x, int64_t row, int32_t rows, int32_t cols, int32_t c, int32_t i,
                                    int32_t lo, int32_t hi, int8_t *y) {
    int32_t r, j;
    for (; i < c; i++) {
        int32_t m = -128;
        for (r = 0; r < rows; r++)
            for (j = 0; j < cols; j++) {
                const int32_t v = x[r * row + (int64_t)j * c + i];
                m = v > m ? v : m;
            }
        y[i] = (int8_t)(m < lo ? lo : (m > hi ? hi : m));
    }
}

/* AVERAGE_POOL_2D's first pass, channels [i, c): the window's int32 sum into acc. */
static inline void q8_pool_sum_tail(const int8_t *x, int64_t row, int32_t rows, int32_t cols, int32_t c, int32_t i,
                                    int32_t *acc) {
    int32_t r, j;
    for (; i < c; i++) {
        int32_t s = 0;
        for (r = 0; r < rows; r++)
            for (j = 0; j < cols; j++) s += x[r * row + (int64_t)j * c + i];
        acc[i] = s;
    }
}

/* AVERAGE_POOL_2D's second pass, channels [i, c): (s +- half) / count truncated, clamped to [lo, hi]. */
static inline void q8_pool_avg_tail(const int32_t *acc, int32_t c, int32_t i, int32_t count, int32_t half, int32_t lo,
                                    int32_t hi, int8_t *y) {
    for (; i < c; i++) {
        const int32_t s = acc[i], v = s > 0 ? (s + half) / count : (s - half) / count;
        y[i] = (int8_t)(v < lo ? lo : (v > hi ? hi : v));
    }
}

/* The 32-bit-lane input step of int8 ADD / SUB (add.c's addsub_in: ((x - zp) << 20) scaled by m, then edge_rdbpot by
 * r) for an int8 input, d = x - zp in -255..255, and m >= 2^11 (a quantized multiplier is >= 2^30): with
 * m = mh 2^11 + ml (ml < 2^11)
 *     u = d mh + floor((d ml + c0 - [d < 0] c1) / 2^11),  c0 = 2^10, c1 = 2^11 when r >= 1 (else 0)
 *     q = floor((u + h) / 2^r),                          h = 2^(r - 1) when r >= 1 (else 0)
 * the same integers as the 64-bit steps (edge_simd_dw_x86.c's in512 says why); no lane wraps. */
typedef struct {
    int32_t zp, mh, ml, c0, c1, h, r;
} q8_in_step_t;

/* s's constants and 1 when the step fits (an int8 zero point, a multiplier of at least 2^11, a shift 0..31), else 0 */
static inline int32_t q8_in_step(int32_t zp, int32_t m, int32_t r, q8_in_step_t *s) {
    if (zp < -128 || zp > 127 || m < 2048 || r < 0 || r > 31) return 0;
    s->zp = zp;
    s->mh = m >> 11;
    s->ml = m & 2047;
    s->c0 = 1 << 10;
    s->c1 = r ? 1 << 11 : 0;
    s->h = r ? (int32_t)(1u << (r - 1)) : 0;
    s->r = r;
    return 1;
}

#endif
