/* edge_simd_dw_arm.c - the aarch64 side of edge_simd_dw_x86.c's functions, NEON at both levels (the library is built
 * for plain armv8-a: every 64-bit Pi): SOFTMAX float32, RESIZE_BILINEAR rows (float32, int8), the float32 / int8
 * sums of MEAN / SUM over H, W and their int8 outputs, int8 ADD / SUB and MUL rows on 16 lanes, int8 DEPTHWISE_CONV_2D
 * 3x3 / 5x5 with the filter loaded once per channel tile, and the 8-bit tables. The float32 3x3 / 5x5 depthwise is
 * edge_simd_f32_arm.c's (it shares that file's fused multiply-adds).
 *
 * The resize and sum paths do the portable kernels' operations lane by lane (no FMA: the build's -ffp-contract=off
 * keeps vmulq + vaddq apart): the same bits. The int8 paths requantize with edge_simd_arm.h's lanes (SQRDMULH, SSRA,
 * SRSHL): the portable kernels' bytes (and TFLM's). SOFTMAX runs edge_simd_dw_x86.c's exp polynomial with the same
 * FMAs (x86-64's bits for each e) and sums the row in lanes: within 1e-6 of the portable kernel.
 *
 * Each call that ran counts its path (edge_simd_count: the tests under qemu-user see which paths a model took).
 */
#include "edge_simd.h"

#if EDGE_SIMD && defined(__aarch64__)
#include <arm_neon.h>
#include <math.h>
#include <string.h>
#include "edge_simd_arm.h"

#define INLINE __attribute__((always_inline)) inline

/* ------------------------------------------------------------------------------------- SOFTMAX float32 */

/* exp(t) for t in [-87, 88], edge_simd_dw_x86.c's EXP_POLY step by step: t = n ln2 + r (Cody-Waite, ln2 in two
 * parts), exp(r) by Cephes' degree-5 polynomial (FMAs), times 2^n built in the exponent field. */
static INLINE float32x4_t exp4(float32x4_t t) {
    const float32x4_t n = vrndmq_f32(vfmaq_f32(vdupq_n_f32(0.5f), t, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(t, n, vdupq_n_f32(0.693359375f)), p, z;
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    z = vmulq_f32(r, r);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), vdupq_n_f32(1.9875691500e-4f), r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vaddq_f32(vfmaq_f32(r, p, z), vdupq_n_f32(1.0f));
    /* n is an integer in [-126, 127]: FCVTZS is exact */
    return vmulq_f32(p, vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23)));
}

/* edge_simd_dw_x86.c's softmax_f32_avx2 on 4 lanes: max (0 when a value is not finite); e = exp((x - max) * beta)
 * into y (0 below -87; 0 when some t > 88), the sum in lanes; y / sum. */
static int32_t softmax_f32_neon(const float *x, int32_t n, float beta, float *y) {
    const float32x4_t vbeta = vdupq_n_f32(beta), lo = vdupq_n_f32(-87.0f), hi = vdupq_n_f32(88.0f);
    const float32x4_t zero = vdupq_n_f32(0.0f);
    float32x4_t vmax = vdupq_n_f32(x[0]), vsum = zero;
    uint32x4_t finite = vdupq_n_u32(~0u);
    float max, sum;
    int32_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        finite = vandq_u32(finite, vceqq_f32(vsubq_f32(v, v), zero)); /* inf - inf and NaN: not 0 */
        vmax = vmaxq_f32(vmax, v);
    }
    if (vminvq_u32(finite) == 0) return 0;
    max = vmaxvq_f32(vmax);
    for (; i < n; i++) {
        if (x[i] - x[i] != 0.0f) return 0;
        max = x[i] > max ? x[i] : max;
    }
    vmax = vdupq_n_f32(max);
    for (i = 0; i + 4 <= n; i += 4) {
        const float32x4_t t = vmulq_f32(vsubq_f32(vld1q_f32(x + i), vmax), vbeta);
        float32x4_t e;
        if (vmaxvq_u32(vcgtq_f32(t, hi))) return 0;
        e = exp4(vmaxq_f32(t, lo));
        e = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(e), vcgeq_f32(t, lo)));
        vst1q_f32(y + i, e);
        vsum = vaddq_f32(vsum, e);
    }
    sum = vaddvq_f32(vsum);
    for (; i < n; i++) {
        const float t = (x[i] - max) * beta;
        if (t > 88.0f) return 0;
        y[i] = t < -87.0f ? 0.0f : (float)exp((double)t);
        sum += y[i];
    }
    vsum = vdupq_n_f32(sum);
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(y + i, vdivq_f32(vld1q_f32(y + i), vsum));
    for (; i < n; i++) y[i] = y[i] / sum;
    return 1;
}

int32_t edge_simd_softmax_f32(int32_t level, const float *x, int32_t n, float beta, float *y) {
    if (level < EDGE_SIMD_ARM_NEON || !(beta - beta == 0.0f)) return 0;
    if (!x) return 1;
    if (n <= 0 || !softmax_f32_neon(x, n, beta, y)) return 0;
    edge_simd_count(EDGE_SIMD_PATH_SOFTMAX_F32);
    return 1;
}

/* ------------------------------------------------------------------------------------- RESIZE_BILINEAR */

/* float32: ((a00 * wy0) * wx0 + (a10 * wy1) * wx0) + (a01 * wy0) * wx1 + (a11 * wy1) * wx1, left to right, each
 * step rounded: the portable kernel's bits. */
int32_t edge_simd_resize_row_f32(int32_t level, const float *r0, const float *r1, const int32_t *cols, const float *fx,
                                 int32_t out_w, int32_t ch, float wy1, float *y) {
    const float wy0 = 1.0f - wy1;
    const float32x4_t vy0 = vdupq_n_f32(wy0), vy1 = vdupq_n_f32(wy1);
    int32_t ox, c;
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    if (!y) return 1;
    for (ox = 0; ox < out_w; ox++, y += ch) {
        const int32_t c0 = cols[2 * ox] * ch, c1 = cols[2 * ox + 1] * ch;
        const float wx1 = fx[ox], wx0 = 1.0f - wx1;
        const float32x4_t vx0 = vdupq_n_f32(wx0), vx1 = vdupq_n_f32(wx1);
        for (c = 0; c + 4 <= ch; c += 4) {
            float32x4_t s = vmulq_f32(vmulq_f32(vld1q_f32(r0 + c0 + c), vy0), vx0);
            s = vaddq_f32(s, vmulq_f32(vmulq_f32(vld1q_f32(r1 + c0 + c), vy1), vx0));
            s = vaddq_f32(s, vmulq_f32(vmulq_f32(vld1q_f32(r0 + c1 + c), vy0), vx1));
            s = vaddq_f32(s, vmulq_f32(vmulq_f32(vld1q_f32(r1 + c1 + c), vy1), vx1));
            vst1q_f32(y + c, s);
        }
        for (; c < ch; c++)
            y[c] = r0[c0 + c] * wy0 * wx0 + r1[c0 + c] * wy1 * wx0 + r0[c1 + c] * wy0 * wx1 + r1[c1 + c] * wy1 * wx1;
    }
    edge_simd_count(EDGE_SIMD_PATH_RESIZE_F32);
    return 1;
}

/* int8: acc = a00 w00 + a10 w10 + a01 w01 + a11 w11 (Q20 weights; exact in int32: |acc| <= 2^27), rounded half
 * away from zero to Q0, saturated to int8: the portable kernel's arithmetic. */
static INLINE int8_t resize_q8_one(int32_t acc) {
    int32_t q = ((acc < 0 ? -acc : acc) + (1 << 19)) >> 20;
    q = acc > 0 ? q : -q;
    return (int8_t)(q > 127 ? 127 : q < -128 ? -128 : q);
}

static INLINE int32x4_t resize_q8_round(int32x4_t acc) {
    const int32x4_t q = vshrq_n_s32(vaddq_s32(vabsq_s32(acc), vdupq_n_s32(1 << 19)), 20);
    return vbslq_s32(vcltq_s32(acc, vdupq_n_s32(0)), vnegq_s32(q), q);
}

int32_t edge_simd_resize_row_q8(int32_t level, const int8_t *r0, const int8_t *r1, const int32_t *cols,
                                const int32_t *fx, int32_t out_w, int32_t ch, int32_t fy, int8_t *y) {
    int32_t ox, c;
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    if (!y) return 1;
    for (ox = 0; ox < out_w; ox++, y += ch) {
        const int32_t c0 = cols[2 * ox] * ch, c1 = cols[2 * ox + 1] * ch, f = fx[ox];
        const int32_t s00 = (1024 - fy) * (1024 - f), s10 = fy * (1024 - f), s01 = (1024 - fy) * f, s11 = fy * f;
        const int32x4_t w00 = vdupq_n_s32(s00), w10 = vdupq_n_s32(s10), w01 = vdupq_n_s32(s01), w11 = vdupq_n_s32(s11);
        for (c = 0; c + 8 <= ch; c += 8) {
            const int16x8_t a = vmovl_s8(vld1_s8(r0 + c0 + c)), b = vmovl_s8(vld1_s8(r1 + c0 + c));
            const int16x8_t d = vmovl_s8(vld1_s8(r0 + c1 + c)), e = vmovl_s8(vld1_s8(r1 + c1 + c));
            int32x4_t lo = vmulq_s32(vmovl_s16(vget_low_s16(a)), w00), hi = vmulq_s32(vmovl_high_s16(a), w00);
            lo = vmlaq_s32(lo, vmovl_s16(vget_low_s16(b)), w10);
            hi = vmlaq_s32(hi, vmovl_high_s16(b), w10);
            lo = vmlaq_s32(lo, vmovl_s16(vget_low_s16(d)), w01);
            hi = vmlaq_s32(hi, vmovl_high_s16(d), w01);
            lo = vmlaq_s32(lo, vmovl_s16(vget_low_s16(e)), w11);
            hi = vmlaq_s32(hi, vmovl_high_s16(e), w11);
            vst1_s8(y + c, neon_narrow8(resize_q8_round(lo), resize_q8_round(hi))); /* saturating narrows */
        }
        for (; c < ch; c++)
            y[c] = resize_q8_one(r0[c0 + c] * s00 + r1[c0 + c] * s10 + r0[c1 + c] * s01 + r1[c1 + c] * s11);
    }
    edge_simd_count(EDGE_SIMD_PATH_RESIZE_Q8);
    return 1;
}

/* ------------------------------------------------------------------------------------- MEAN / SUM */

/* int8: sums[i] = the sum over the hw pixels of x[p * stride + i] in int32 (wrapping, as the portable kernel's uint32
 * sum: the same value in any order). 16 channels a step; 256 pixels at a time in int16 lanes (SADDW: |sum| <= 256 *
 * 128 = 2^15, and the positive side 256 * 127 < 2^15), then widened into the int32 sums. */
int32_t edge_simd_sum_hw_q8(int32_t level, const int8_t *x, int64_t hw, int64_t stride, int32_t c, int32_t *sums) {
    int32_t i;
    int64_t p, end;
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    if (!x) return 1;
    for (i = 0; i + 16 <= c; i += 16) {
        int32x4_t s0 = vdupq_n_s32(0), s1 = s0, s2 = s0, s3 = s0;
        for (p = 0; p < hw; p = end) {
            int16x8_t t0 = vdupq_n_s16(0), t1 = t0;
            end = hw - p > 256 ? p + 256 : hw;
            for (; p < end; p++) {
                const int8x16_t v = vld1q_s8(x + p * stride + i);
                t0 = vaddw_s8(t0, vget_low_s8(v));
                t1 = vaddw_high_s8(t1, v);
            }
            s0 = vaddw_s16(s0, vget_low_s16(t0));
            s1 = vaddw_high_s16(s1, t0);
            s2 = vaddw_s16(s2, vget_low_s16(t1));
            s3 = vaddw_high_s16(s3, t1);
        }
        vst1q_s32(sums + i, s0);
        vst1q_s32(sums + i + 4, s1);
        vst1q_s32(sums + i + 8, s2);
        vst1q_s32(sums + i + 12, s3);
    }
    for (; i < c; i++) {
        uint32_t s = 0;
        for (p = 0; p < hw; p++) s += (uint32_t)(int32_t)x[p * stride + i];
        sums[i] = (int32_t)s;
    }
    edge_simd_count(EDGE_SIMD_PATH_SUM_Q8);
    return 1;
}

/* float32: sums[i] = ((0 + x[i]) + x[stride + i]) + ..., each channel in pixel order, one rounding a step (no FMA),
 * divided by hw in float32 when mean: the portable kernel's (and LiteRT's reference) bits. */
int32_t edge_simd_sum_hw_f32(int32_t level, const float *x, int64_t hw, int64_t stride, int32_t c, int32_t mean,
                             float *sums) {
    const float32x4_t nv = vdupq_n_f32((float)hw);
    int32_t i;
    int64_t p;
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    if (!x) return 1;
    for (i = 0; i + 16 <= c; i += 16) {
        float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
        for (p = 0; p < hw; p++) {
            const float *xp = x + p * stride + i;
            s0 = vaddq_f32(s0, vld1q_f32(xp));
            s1 = vaddq_f32(s1, vld1q_f32(xp + 4));
            s2 = vaddq_f32(s2, vld1q_f32(xp + 8));
            s3 = vaddq_f32(s3, vld1q_f32(xp + 12));
        }
        if (mean) {
            s0 = vdivq_f32(s0, nv);
            s1 = vdivq_f32(s1, nv);
            s2 = vdivq_f32(s2, nv);
            s3 = vdivq_f32(s3, nv);
        }
        vst1q_f32(sums + i, s0);
        vst1q_f32(sums + i + 4, s1);
        vst1q_f32(sums + i + 8, s2);
        vst1q_f32(sums + i + 12, s3);
    }
    for (; i + 4 <= c; i += 4) {
        float32x4_t s0 = vdupq_n_f32(0.0f);
        for (p = 0; p < hw; p++) s0 = vaddq_f32(s0, vld1q_f32(x + p * stride + i));
        vst1q_f32(sums + i, mean ? vdivq_f32(s0, nv) : s0);
    }
    for (; i < c; i++) {
        float s = 0.0f;
        for (p = 0; p < hw; p++) s += x[p * stride + i];
        sums[i] = mean ? s / (float)hw : s;
    }
    edge_simd_count(EDGE_SIMD_PATH_SUM_F32);
    return 1;
}

/* y[i] = clamp(edge_mbqm(sums[i] - offset, m, shift) + zp, lo, hi), 8 lanes a step (the last n % 8 on a zero-padded
 * copy): the subtraction and the left shift wrap as edge_mbqm's, then SQRDMULH and edge_simd_arm.h's rounding shift. */
static INLINE int8x8_t rq_sums8(const int32_t *s, int32x4_t off, int32x4_t left, int32x4_t m, int32x4_t nr,
                                int32_t right, int32x4_t zp, int32x4_t lo, int32x4_t hi) {
    int32x4_t h0 = vqrdmulhq_s32(vshlq_s32(vsubq_s32(vld1q_s32(s), off), left), m);
    int32x4_t h1 = vqrdmulhq_s32(vshlq_s32(vsubq_s32(vld1q_s32(s + 4), off), left), m);
    if (right) {
        h0 = neon_rdbpot(h0, nr);
        h1 = neon_rdbpot(h1, nr);
    }
    h0 = vminq_s32(vmaxq_s32(vaddq_s32(h0, zp), lo), hi);
    return neon_narrow8(h0, vminq_s32(vmaxq_s32(vaddq_s32(h1, zp), lo), hi));
}

int32_t edge_simd_rq_sums_q8(int32_t level, const int32_t *sums, int32_t n, int32_t offset, int32_t m, int32_t shift,
                             int32_t zp, int32_t lo, int32_t hi, int8_t *y) {
    const int32_t left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    const int32x4_t vl = vdupq_n_s32(left), vm = vdupq_n_s32(m), nr = vdupq_n_s32(-right), off = vdupq_n_s32(offset);
    const int32x4_t vz = vdupq_n_s32(zp), vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);
    int32_t i;
    /* SQRDMULH is edge_srdhm for m >= 0; edge_mbqm's left shifts of 32 and more give 0 (the caller's loop) */
    if (level < EDGE_SIMD_ARM_NEON || m < 0 || shift < -31 || shift > 31) return 0;
    if (n <= 0) return 1;
    for (i = 0; i + 8 <= n; i += 8) vst1_s8(y + i, rq_sums8(sums + i, off, vl, vm, nr, right, vz, vlo, vhi));
    if (i < n) {
        int32_t t[8] = {0};
        int8_t o[8];
        memcpy(t, sums + i, sizeof(int32_t) * (size_t)(n - i));
        vst1_s8(o, rq_sums8(t, off, vl, vm, nr, right, vz, vlo, vhi));
        memcpy(y + i, o, (size_t)(n - i));
    }
    edge_simd_count(EDGE_SIMD_PATH_RQ_SUMS_Q8);
    return 1;
}

/* ------------------------------------------------------------------------------------- ADD / SUB / MUL int8 */

/* 16 int8 of a row at i (step 1) or its one value (step 0), minus the zero point zp (an int8): exact int16 lanes
 * (-255..255), low and high halves. */
static INLINE void sub16(const int8_t *x, int32_t step, int32_t i, int8x8_t zp, int16x8_t *lo, int16x8_t *hi) {
    const int8x16_t v = step ? vld1q_s8(x + i) : vdupq_n_s8(x[0]);
    *lo = vsubl_s8(vget_low_s8(v), zp);
    *hi = vsubl_s8(vget_high_s8(v), zp);
}

/* The 16 outputs of 4 x 4 int32 lanes in [lo, hi] */
static INLINE void store16(const int32x4_t q[4], int8_t *y, int32_t n) {
    const int8x16_t v = vcombine_s8(neon_narrow8(q[0], q[1]), neon_narrow8(q[2], q[3]));
    if (n >= 16) {
        vst1q_s8(y, v);
    } else {
        int8_t t[16];
        vst1q_s8(t, v);
        memcpy(y, t, (size_t)n);
    }
}

/* edge_rdbpot(SQRDMULH(x, m), e) for one m >= 0 and e 0..31 (nr = -e) */
static INLINE int32x4_t rq_lanes(int32x4_t x, int32x4_t m, int32x4_t nr, int32_t e) {
    const int32x4_t h = vqrdmulhq_s32(x, m);
    return e ? neon_rdbpot(h, nr) : h;
}

typedef struct {
    int8x8_t zp1, zp2;
    int32x4_t m1, m2, mo, nr1, nr2, nro, left, off, lo, hi;
    int32_t r1, r2, ro, sub;
} addsub16_t;

/* add.c's addsub_in: ((x - zp) << 20) scaled by m, a right shift r */
static INLINE int32x4_t addsub_in4(int16x4_t d, int32x4_t m, int32x4_t nr, int32_t r) {
    return rq_lanes(vshlq_n_s32(vmovl_s16(d), 20), m, nr, r);
}

static INLINE void addsub16(const addsub16_t *k, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb,
                            int32_t i, int8_t *y, int32_t n) {
    int16x8_t a0, a1, b0, b1;
    int32x4_t x1[4], x2[4], q[4];
    int32_t j;
    sub16(a, sa, i, k->zp1, &a0, &a1);
    sub16(b, sb, i, k->zp2, &b0, &b1);
    x1[0] = addsub_in4(vget_low_s16(a0), k->m1, k->nr1, k->r1);
    x1[1] = addsub_in4(vget_high_s16(a0), k->m1, k->nr1, k->r1);
    x1[2] = addsub_in4(vget_low_s16(a1), k->m1, k->nr1, k->r1);
    x1[3] = addsub_in4(vget_high_s16(a1), k->m1, k->nr1, k->r1);
    x2[0] = addsub_in4(vget_low_s16(b0), k->m2, k->nr2, k->r2);
    x2[1] = addsub_in4(vget_high_s16(b0), k->m2, k->nr2, k->r2);
    x2[2] = addsub_in4(vget_low_s16(b1), k->m2, k->nr2, k->r2);
    x2[3] = addsub_in4(vget_high_s16(b1), k->m2, k->nr2, k->r2);
    for (j = 0; j < 4; j++) {
        const int32x4_t s = k->sub ? vsubq_s32(x1[j], x2[j]) : vaddq_s32(x1[j], x2[j]);
        const int32x4_t o = vaddq_s32(rq_lanes(vshlq_s32(s, k->left), k->mo, k->nro, k->ro), k->off);
        q[j] = vminq_s32(vmaxq_s32(o, k->lo), k->hi);
    }
    store16(q, y, n);
}

static int zp8(int32_t zp) { return zp >= -128 && zp <= 127; }

int32_t edge_simd_addsub_q8_wide(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                                 int32_t n, const int32_t *p) {
    addsub16_t k;
    int32_t i;
    /* p: zp1, zp2, m1, r1, m2, r2, sign, mo, left_o, right_o, off_out, lo, hi */
    if (level < EDGE_SIMD_ARM_NEON || !zp8(p[0]) || !zp8(p[1]) || p[2] < 0 || p[4] < 0 || p[7] < 0 || p[3] < 0 ||
        p[3] > 31 || p[5] < 0 || p[5] > 31 || p[8] < 0 || p[8] > 31 || p[9] < 0 || p[9] > 31)
        return 0;
    if (n <= 0) return 1;
    k.zp1 = vdup_n_s8((int8_t)p[0]);
    k.zp2 = vdup_n_s8((int8_t)p[1]);
    k.m1 = vdupq_n_s32(p[2]);
    k.r1 = p[3];
    k.nr1 = vdupq_n_s32(-p[3]);
    k.m2 = vdupq_n_s32(p[4]);
    k.r2 = p[5];
    k.nr2 = vdupq_n_s32(-p[5]);
    k.sub = p[6] < 0;
    k.mo = vdupq_n_s32(p[7]);
    k.left = vdupq_n_s32(p[8]);
    k.ro = p[9];
    k.nro = vdupq_n_s32(-p[9]);
    k.off = vdupq_n_s32(p[10]);
    k.lo = vdupq_n_s32(p[11]);
    k.hi = vdupq_n_s32(p[12]);
    for (i = 0; i + 16 <= n; i += 16) addsub16(&k, a, sa, b, sb, i, y + i, 16);
    if (i < n) { /* the n % 16 last elements: the same lanes on a zero-padded copy */
        int8_t ta[16] = {0}, tb[16] = {0};
        memcpy(ta, sa ? a + i : a, (size_t)(sa ? n - i : 1));
        memcpy(tb, sb ? b + i : b, (size_t)(sb ? n - i : 1));
        addsub16(&k, ta, sa, tb, sb, 0, y + i, n - i);
    }
    edge_simd_count(EDGE_SIMD_PATH_ADDSUB_Q8);
    return 1;
}

/* kernels/mul.c's lanes: (x1 - zp1) (x2 - zp2) exact (SMULL of the int16 differences), shifted left (wrapping),
 * then SQRDMULH and the rounding right shift; + the output offset, clamped. */
static INLINE void mul16(const int32_t *p, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int32_t i,
                         int8_t *y, int32_t n) {
    const int32x4_t m = vdupq_n_s32(p[2]), left = vdupq_n_s32(p[3]), nr = vdupq_n_s32(-p[4]);
    const int32x4_t off = vdupq_n_s32(p[5]), lo = vdupq_n_s32(p[6]), hi = vdupq_n_s32(p[7]);
    int16x8_t a0, a1, b0, b1;
    int32x4_t prod[4], q[4];
    int32_t j;
    sub16(a, sa, i, vdup_n_s8((int8_t)p[0]), &a0, &a1);
    sub16(b, sb, i, vdup_n_s8((int8_t)p[1]), &b0, &b1);
    prod[0] = vmull_s16(vget_low_s16(a0), vget_low_s16(b0));
    prod[1] = vmull_high_s16(a0, b0);
    prod[2] = vmull_s16(vget_low_s16(a1), vget_low_s16(b1));
    prod[3] = vmull_high_s16(a1, b1);
    for (j = 0; j < 4; j++)
        q[j] = vminq_s32(vmaxq_s32(vaddq_s32(rq_lanes(vshlq_s32(prod[j], left), m, nr, p[4]), off), lo), hi);
    store16(q, y, n);
}

int32_t edge_simd_mul_q8_wide(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                              int32_t n, const int32_t *p) {
    int32_t i;
    /* p: zp1, zp2, m, left, right, off_out, lo, hi */
    if (level < EDGE_SIMD_ARM_NEON || !zp8(p[0]) || !zp8(p[1]) || p[2] < 0 || p[3] < 0 || p[3] > 31 || p[4] < 0 ||
        p[4] > 31)
        return 0;
    if (n <= 0) return 1;
    for (i = 0; i + 16 <= n; i += 16) mul16(p, a, sa, b, sb, i, y + i, 16);
    if (i < n) {
        int8_t ta[16] = {0}, tb[16] = {0};
        memcpy(ta, sa ? a + i : a, (size_t)(sa ? n - i : 1));
        memcpy(tb, sb ? b + i : b, (size_t)(sb ? n - i : 1));
        mul16(p, ta, sa, tb, sb, 0, y + i, n - i);
    }
    edge_simd_count(EDGE_SIMD_PATH_MUL_Q8);
    return 1;
}

/* ------------------------------------------------------------------------------------- DEPTHWISE 3x3 / 5x5 int8 */

/* One tile of 8 channels: the bias, the bias with the input offset folded in for windows inside the input
 * (bias + off * the sum of the K x K taps, wrapping as the int32 sums do), the channels' multipliers and -rs. */
typedef struct {
    int32x4_t bias[2], bias_all[2], mul[2], nrs[2], zp, lo, hi;
    int16x8_t off;
} dwq_tile_t;

static INLINE int8x8_t dwq_out(const dwq_tile_t *q, int32x4_t a0, int32x4_t a1) {
    return neon_narrow8(neon_rq4(a0, q->mul[0], q->nrs[0], q->zp, q->lo, q->hi),
                        neon_rq4(a1, q->mul[1], q->nrs[1], q->zp, q->lo, q->hi));
}

/* Output row oy of one tile (x, yrow at the tile's first channel; w its K x K taps as int16x8): rows whose window
 * lies inside the input vertically take their interior pixels four at a time from bias_all, the 3 S + K input
 * columns of a filter row widened once for the four (SMLAL of int16: exact int32 products); other pixels add
 * (x + off) * w tap by tap (|x + off| <= 255). Any order gives the portable kernel's int32 sums. */
#define DWQ_ROW(K, S)                                                                                            \
    static void dwq##K##_row_s##S(const edge_simd_dwf_t *p, const int8_t *x, const int16x8_t *w,                  \
                                  const dwq_tile_t *q, int32_t oy, int8_t *yrow) {                               \
        const int32_t c = p->c, iy0 = oy * S - p->pt;                                                            \
        int32_t fy0, fy1, ox = 0, fy, fx, j;                                                                     \
        fy0 = iy0 < 0 ? -iy0 : 0;                                                                                \
        fy1 = iy0 + K > p->h ? p->h - iy0 : K;                                                                   \
        if (fy1 < fy0) fy1 = fy0;                                                                                \
        while (ox < p->ow) {                                                                                     \
            const int32_t ix0 = ox * S - p->pl;                                                                  \
            if (fy0 == 0 && fy1 == K && ix0 >= 0 && ox + 4 <= p->ow && ix0 + 3 * S + K - 1 < p->w) {             \
                int32x4_t acc[4][2];                                                                             \
                for (j = 0; j < 4; j++) acc[j][0] = q->bias_all[0], acc[j][1] = q->bias_all[1];                 \
                for (fy = 0; fy < K; fy++) {                                                                     \
                    const int8_t *r = x + ((int64_t)(iy0 + fy) * p->w + ix0) * c;                                \
                    const int16x8_t *wr = w + fy * K;                                                            \
                    int16x8_t col[3 * S + K];                                                                    \
                    int32_t k;                                                                                   \
                    for (k = 0; k < 3 * S + K; k++) col[k] = vmovl_s8(vld1_s8(r + (int64_t)k * c));              \
                    for (j = 0; j < 4; j++)                                                                      \
                        for (fx = 0; fx < K; fx++) {                                                             \
                            acc[j][0] = vmlal_s16(acc[j][0], vget_low_s16(col[j * S + fx]), vget_low_s16(wr[fx])); \
                            acc[j][1] = vmlal_high_s16(acc[j][1], col[j * S + fx], wr[fx]);                      \
                        }                                                                                        \
                }                                                                                                \
                for (j = 0; j < 4; j++) vst1_s8(yrow + (int64_t)(ox + j) * c, dwq_out(q, acc[j][0], acc[j][1])); \
                ox += 4;                                                                                         \
                continue;                                                                                        \
            }                                                                                                    \
            {                                                                                                    \
                const int32_t fx0 = ix0 < 0 ? -ix0 : 0, fx1 = ix0 + K > p->w ? p->w - ix0 : K;                   \
                int32x4_t a0 = q->bias[0], a1 = q->bias[1];                                                      \
                for (fy = fy0; fy < fy1; fy++)                                                                   \
                    for (fx = fx0; fx < fx1; fx++) {                                                             \
                        const int16x8_t v = vaddq_s16(                                                           \
                            vmovl_s8(vld1_s8(x + ((int64_t)(iy0 + fy) * p->w + ix0 + fx) * c)), q->off);         \
                        a0 = vmlal_s16(a0, vget_low_s16(v), vget_low_s16(w[fy * K + fx]));                       \
                        a1 = vmlal_high_s16(a1, v, w[fy * K + fx]);                                              \
                    }                                                                                            \
                vst1_s8(yrow + (int64_t)ox * c, dwq_out(q, a0, a1));                                             \
            }                                                                                                    \
            ox++;                                                                                                \
        }                                                                                                        \
    }
DWQ_ROW(3, 1)
DWQ_ROW(3, 2)
DWQ_ROW(5, 1)
DWQ_ROW(5, 2)
#undef DWQ_ROW

int32_t edge_simd_dw_q8_3x3_5x5(int32_t level, const edge_simd_dwf_t *p, const int8_t *x, const int16_t *wt,
                                const int32_t *bias, const int32_t *mul, const int32_t *rs, int32_t input_offset,
                                int32_t zp, int32_t lo, int32_t hi, int32_t oy0, int32_t oy1, int8_t *y) {
    const int32_t c = p->c, taps = p->kh * p->kw;
    int32_t ch0, oy, t, h;
    dwq_tile_t q;
    if (level < EDGE_SIMD_ARM_NEON || (p->kh != 3 && p->kh != 5) || p->kw != p->kh || p->dh != 1 || p->dw != 1 ||
        p->sh != p->sw || (p->sw != 1 && p->sw != 2) || c < 8)
        return 0;
    if (!y) return 1;
    q.off = vdupq_n_s16((int16_t)input_offset);
    q.zp = vdupq_n_s32(zp);
    q.lo = vdupq_n_s32(lo);
    q.hi = vdupq_n_s32(hi);
    for (ch0 = 0; ch0 < c; ch0 += 8) {
        /* a last partial tile runs the 8 channels ending at c: it writes some of the tile before again, the same
         * bytes (the rows are this call's; other threads write other rows) */
        const int32_t ch = ch0 + 8 <= c ? ch0 : c - 8;
        int16x8_t w[25];
        int32x4_t sum[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
        for (t = 0; t < taps; t++) {
            w[t] = vld1q_s16(wt + (int64_t)t * c + ch);
            sum[0] = vaddw_s16(sum[0], vget_low_s16(w[t]));
            sum[1] = vaddw_high_s16(sum[1], w[t]);
        }
        for (h = 0; h < 2; h++) {
            q.bias[h] = vld1q_s32(bias + ch + 4 * h);
            q.bias_all[h] = vmlaq_s32(q.bias[h], sum[h], vdupq_n_s32(input_offset));
            q.mul[h] = vld1q_s32(mul + ch + 4 * h);
            q.nrs[h] = vnegq_s32(vld1q_s32(rs + ch + 4 * h));
        }
        for (oy = oy0; oy < oy1; oy++) {
            int8_t *yrow = y + (int64_t)oy * p->ow * c + ch;
            if (p->kh == 3 && p->sw == 1) dwq3_row_s1(p, x + ch, w, &q, oy, yrow);
            else if (p->kh == 3) dwq3_row_s2(p, x + ch, w, &q, oy, yrow);
            else if (p->sw == 1) dwq5_row_s1(p, x + ch, w, &q, oy, yrow);
            else dwq5_row_s2(p, x + ch, w, &q, oy, yrow);
        }
    }
    edge_simd_count(EDGE_SIMD_PATH_DW_Q8);
    return 1;
}

/* y[i] = lut[x[i]], 16 bytes a step: TBL looks the lanes up in the table's first 64 bytes (0 past them), three TBX
 * in the next quarters at x - 64, x - 128, x - 192 (a lane out of a quarter's range keeps its value): every NEON
 * core (the Pi 4's Cortex-A72 too), the same bytes. */
static void lut8_neon(const uint8_t *lut, const uint8_t *x, uint8_t *y, int64_t n) {
    uint8x16x4_t t[4];
    const uint8x16_t step = vdupq_n_u8(64);
    int64_t i;
    int32_t q, k;
    for (q = 0; q < 4; q++)
        for (k = 0; k < 4; k++) t[q].val[k] = vld1q_u8(lut + 64 * q + 16 * k);
    for (i = 0; i + 16 <= n; i += 16) {
        uint8x16_t v = vld1q_u8(x + i), r = vqtbl4q_u8(t[0], v);
        v = vsubq_u8(v, step);
        r = vqtbx4q_u8(r, t[1], v);
        v = vsubq_u8(v, step);
        r = vqtbx4q_u8(r, t[2], v);
        v = vsubq_u8(v, step);
        vst1q_u8(y + i, vqtbx4q_u8(r, t[3], v));
    }
    for (; i < n; i++) y[i] = lut[x[i]];
}

int32_t edge_simd_lut8(int32_t level, const uint8_t *lut, const uint8_t *x, uint8_t *y, int64_t n) {
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    if (n > 0) lut8_neon(lut, x, y, n);
    return 1;
}
#endif
