/* edge_simd_q8_scalar.h - the scalar tails of the int8 fast paths that edge_simd_arm.c and edge_simd_x86.c share
 * (the channels left after the vector loops of MAX / AVERAGE_POOL_2D). Only those two files include it, after
 * their own #if; static inline, so each compiles where the loop stood before.
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

#endif
