/* edge_simd_arm.h - the NEON requantization lanes that edge_simd_arm.c (the GEMMs, the depthwise pixel) and
 * edge_simd_dw_arm.c (the 3x3 / 5x5 depthwise tiles, ADD / MUL / MEAN rows) share. Only those two files include it,
 * after their own #if (aarch64); static inline, so each compiles in place.
 *
 * TFLM's double rounding in NEON's own instructions, bit-exact with the plain C (edge_dsp.h's edge_rq_apply,
 * edge_fixedpoint.h's edge_mbqm) for a multiplier m >= 0:
 *     h = SQRDMULH(x, m)         = floor((x m + 2^30) / 2^31): edge_srdhm (they differ only at x = m = INT32_MIN)
 *     edge_rdbpot(h, e), e 1..31 = floor((h + 2^(e - 1) - [h < 0]) / 2^e): SSRA h += h >> 31, then SRSHL by -e
 *                                  (its rounding add is done without overflow; |h| < 2^31 - 1 since m < 2^31, so
 *                                  h - 1 does not wrap); e = 0: h.
 */
#ifndef EDGE_SIMD_ARM_H
#define EDGE_SIMD_ARM_H

#include <arm_neon.h>

/* edge_rdbpot(h, e) on 4 lanes, nrs = -e (1..31) in every lane */
static inline __attribute__((always_inline)) int32x4_t neon_rdbpot(int32x4_t h, int32x4_t nrs) {
    return vrshlq_s32(vsraq_n_s32(h, h, 31), nrs);
}

/* edge_rq_apply of 4 accumulators (per-lane mul >= 0 and nrs = -rs, rs 1..31), + zp, clamped to [lo, hi] */
static inline __attribute__((always_inline)) int32x4_t neon_rq4(int32x4_t acc, int32x4_t mul, int32x4_t nrs,
                                                                int32x4_t zp, int32x4_t lo, int32x4_t hi) {
    const int32x4_t h = neon_rdbpot(vqrdmulhq_s32(acc, mul), nrs);
    return vminq_s32(vmaxq_s32(vaddq_s32(h, zp), lo), hi);
}

/* 8 int32 lanes already in [-128, 127] (clamped) as 8 int8 */
static inline __attribute__((always_inline)) int8x8_t neon_narrow8(int32x4_t q0, int32x4_t q1) {
    return vqmovn_s16(vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1)));
}

#endif
