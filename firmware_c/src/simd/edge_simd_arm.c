/* edge_simd_arm.c - aarch64 fast paths: NEON (every 64-bit Pi: Cortex-A53 / A72 / A76) and the ARMv8.2 dot
 * product (SDOT: Cortex-A76 in the Pi 5), chosen at run time from the kernel's hwcaps (getauxval).
 *
 * The library is built for plain armv8-a; the SDOT functions carry a target attribute. Requantization with
 * NEON's own instructions, bit-exact with the plain-C edge_rq_apply (edge_dsp.h):
 *     h = SQRDMULH(acc, mul)       = floor((acc * mul + 2^30) / 2^31)  (never saturates: mul > 0 or 0)
 *     h += h >> 31                 (SSRA)
 *     y = SRSHL(h, -rs)            = floor((h + 2^(rs - 1)) / 2^rs)    (computed without overflow)
 * int8 GEMM: NEON multiplies int16 (SMLAL by lane: exact int32 products); SDOT multiplies signed int8 quads.
 */
#include "edge_simd.h"

#if EDGE_SIMD && defined(__aarch64__)
#include <arm_neon.h>
#include "edge_simd_arm.h"
#include "edge_simd_q8_scalar.h"
#include <string.h>
#include <sys/auxv.h>

#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

#define T_DOT __attribute__((target("arch=armv8.2-a+dotprod")))
#define INLINE __attribute__((always_inline)) inline

int32_t edge_simd_cpu_level(void) {
    const unsigned long hw = getauxval(AT_HWCAP);
    if (!(hw & HWCAP_ASIMD)) return EDGE_SIMD_NONE;
    return (hw & HWCAP_ASIMDDP) ? EDGE_SIMD_ARM_DOTPROD : EDGE_SIMD_ARM_NEON;
}

#define NB 8      /* channels per block (both levels) */
#define GEMM_MR 4 /* rows per tile */

static int32_t round_up(int32_t v, int32_t m) { return (v + m - 1) / m * m; }
static int32_t kstep(int32_t level) { return level == EDGE_SIMD_ARM_DOTPROD ? 16 : 8; }

/* The packed block starts at a cache line (64 bytes on the Cortex-A cores): the bytes ask for QG_PACK_ALIGN more
 * and edge_simd_qgemm_pack rounds dst up. The head (12 npad bytes, npad a multiple of 8: 96-byte steps) keeps the
 * weights 32-byte aligned, so that no 16-byte weight load straddles two lines; from the arena's 8-byte persistent
 * steps one in four did (x86-64's VNNI block at +8 bytes ran 1.20-1.30x slower). */
#define QG_PACK_ALIGN 64

size_t edge_simd_qgemm_bytes(int32_t level, int32_t n, int32_t k) {
    const size_t npad = (size_t)round_up(n, NB), kpad = (size_t)round_up(k, kstep(level));
    if (level == EDGE_SIMD_ARM_DOTPROD) return 3 * 4 * npad + npad * kpad + QG_PACK_ALIGN;
    if (level == EDGE_SIMD_ARM_NEON) return 3 * 4 * npad + 2 * npad * kpad + QG_PACK_ALIGN;
    return 0;
}

size_t edge_simd_qgemm_work(int32_t level, int32_t k, int32_t rows) {
    const size_t kpad = (size_t)round_up(k, kstep(level));
    const size_t mr = rows >= 1 && rows < GEMM_MR ? (size_t)rows : GEMM_MR; /* rows stored one after another */
    return mr * kpad * (level == EDGE_SIMD_ARM_DOTPROD ? 1 : 2) + 64;
}

void edge_simd_qgemm_pack(edge_simd_qgemm_t *g, int32_t level, const int8_t *w, int32_t n, int32_t k, int32_t ldw,
                          int32_t kstride, const int32_t *bias, int32_t input_offset, const int32_t *mul,
                          int32_t mul_stride, const int32_t *rs, int32_t rs_stride, int32_t zp, int32_t lo, int32_t hi,
                          void *dst) {
    const int dot = level == EDGE_SIMD_ARM_DOTPROD;
    const int32_t npad = round_up(n, NB), kpad = round_up(k, kstep(level));
    int32_t c, i;
    void *const line = (void *)(((uintptr_t)dst + QG_PACK_ALIGN - 1) & ~(uintptr_t)(QG_PACK_ALIGN - 1));
    void *const pack = edge_simd_qgemm_head(g, level, w, n, k, ldw, kstride, bias, input_offset, mul, mul_stride, rs, rs_stride, -1, zp, lo, hi,
                         npad, kpad, line);
    if (dot) { /* per block, per 4 values of k: 8 channels x 4 int8 (two SDOT operands of 4 channels) */
        int8_t *pw = (int8_t *)pack;
        memset(pw, 0, (size_t)npad * (size_t)kpad);
        for (c = 0; c < n; c++) {
            const int8_t *wr = w + (int64_t)c * ldw;
            int8_t *blk = pw + (int64_t)(c / NB) * kpad * NB + (c % NB) * 4;
            for (i = 0; i < k; i++) blk[(int64_t)(i / 4) * 32 + (i % 4)] = wr[(int64_t)i * kstride];
        }
    } else { /* per block, per value of k: 8 channels as int16 */
        int16_t *pw = (int16_t *)pack;
        memset(pw, 0, 2 * (size_t)npad * (size_t)kpad);
        for (c = 0; c < n; c++) {
            const int8_t *wr = w + (int64_t)c * ldw;
            int16_t *blk = pw + (int64_t)(c / NB) * kpad * NB + (c % NB);
            for (i = 0; i < k; i++) blk[(int64_t)i * NB] = wr[(int64_t)i * kstride];
        }
    }
}

/* acc (8 channels of one row, two int32x4) from block c0 -> y[0..nvalid) */
static INLINE void store_row(const edge_simd_qgemm_t *g, int32x4_t a0, int32x4_t a1, int32_t c0, int32_t nvalid,
                             int8_t *y) {
    const int32_t *bias = (const int32_t *)g->packed, *mul = bias + g->npad, *rs = mul + g->npad;
    const int32x4_t zp = vdupq_n_s32(g->zp), lo = vdupq_n_s32(g->lo), hi = vdupq_n_s32(g->hi);
    const int32x4_t q0 =
        neon_rq4(vaddq_s32(a0, vld1q_s32(bias + c0)), vld1q_s32(mul + c0), vld1q_s32(rs + c0), zp, lo, hi);
    const int32x4_t q1 =
        neon_rq4(vaddq_s32(a1, vld1q_s32(bias + c0 + 4)), vld1q_s32(mul + c0 + 4), vld1q_s32(rs + c0 + 4), zp, lo, hi);
    const int8x8_t v = vqmovn_s16(vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1)));
    if (nvalid >= 8) {
        vst1_s8(y + c0, v);
    } else {
        int8_t t[8];
        vst1_s8(t, v);
        memcpy(y + c0, t, (size_t)nvalid);
    }
}

static INLINE void neon_tile(const edge_simd_qgemm_t *g, const int16_t *a, int32_t mr, int32_t j, int32_t nvalid,
                             int8_t *y, int32_t ldy) {
    const int32_t kpad = g->kpad, npad = g->npad;
    const int16_t *w = (const int16_t *)((const int32_t *)g->packed + 3 * npad) + (int64_t)j * kpad * NB;
    int32x4_t acc[GEMM_MR][2];
    int32_t r, s;
    for (r = 0; r < GEMM_MR; r++) acc[r][0] = acc[r][1] = vdupq_n_s32(0);
    for (s = 0; s < kpad; s += 8, w += 8 * NB) {
        int16x8_t x[GEMM_MR];
        for (r = 0; r < GEMM_MR; r++) x[r] = r < mr ? vld1q_s16(a + (int64_t)r * kpad + s) : vdupq_n_s16(0);
#define NEON_LANE(L)                                                                     \
    {                                                                                    \
        const int16x8_t wv = vld1q_s16(w + (L) * NB);                                    \
        for (r = 0; r < GEMM_MR; r++) {                                                  \
            if (r < mr) {                                                                \
                acc[r][0] = vmlal_laneq_s16(acc[r][0], vget_low_s16(wv), x[r], L);       \
                acc[r][1] = vmlal_high_laneq_s16(acc[r][1], wv, x[r], L);                \
            }                                                                            \
        }                                                                                \
    }
        NEON_LANE(0) NEON_LANE(1) NEON_LANE(2) NEON_LANE(3) NEON_LANE(4) NEON_LANE(5) NEON_LANE(6) NEON_LANE(7)
#undef NEON_LANE
    }
    for (r = 0; r < mr; r++) store_row(g, acc[r][0], acc[r][1], j * NB, nvalid, y + (int64_t)r * ldy);
}

T_DOT static INLINE void dot_tile(const edge_simd_qgemm_t *g, const int8_t *a, int32_t mr, int32_t j, int32_t nvalid,
                                  int8_t *y, int32_t ldy) {
    const int32_t kpad = g->kpad, npad = g->npad;
    const int8_t *w = (const int8_t *)((const int32_t *)g->packed + 3 * npad) + (int64_t)j * kpad * NB;
    int32x4_t acc[GEMM_MR][2];
    int32_t r, s;
    for (r = 0; r < GEMM_MR; r++) acc[r][0] = acc[r][1] = vdupq_n_s32(0);
    for (s = 0; s < kpad; s += 16, w += 4 * 32) {
        int8x16_t x[GEMM_MR];
        for (r = 0; r < GEMM_MR; r++) x[r] = r < mr ? vld1q_s8(a + (int64_t)r * kpad + s) : vdupq_n_s8(0);
#define DOT_LANE(L)                                                                      \
    {                                                                                    \
        const int8x16_t w0 = vld1q_s8(w + (L) * 32), w1 = vld1q_s8(w + (L) * 32 + 16);   \
        for (r = 0; r < GEMM_MR; r++) {                                                  \
            if (r < mr) {                                                                \
                acc[r][0] = vdotq_laneq_s32(acc[r][0], w0, x[r], L);                     \
                acc[r][1] = vdotq_laneq_s32(acc[r][1], w1, x[r], L);                     \
            }                                                                            \
        }                                                                                \
    }
        DOT_LANE(0) DOT_LANE(1) DOT_LANE(2) DOT_LANE(3)
#undef DOT_LANE
    }
    for (r = 0; r < mr; r++) store_row(g, acc[r][0], acc[r][1], j * NB, nvalid, y + (int64_t)r * ldy);
}

static void neon_gemm(const edge_simd_qgemm_t *g, const int8_t *a, int32_t m, int32_t lda, int32_t n0, int32_t n1,
                      int8_t *y, int32_t ldy, void *work) {
    const int32_t k = g->k, kpad = g->kpad;
    int16_t *buf = (int16_t *)work;
    int32_t m0, r, j;
    for (m0 = 0; m0 < m; m0 += GEMM_MR) {
        const int32_t mr = m - m0 < GEMM_MR ? m - m0 : GEMM_MR;
        for (r = 0; r < mr; r++) {
            const int8_t *src = a + (int64_t)(m0 + r) * lda;
            int16_t *d = buf + (int64_t)r * kpad;
            int32_t i = 0;
            for (; i + 8 <= k; i += 8) vst1q_s16(d + i, vmovl_s8(vld1_s8(src + i)));
            for (; i < k; i++) d[i] = src[i];
            for (; i < kpad; i++) d[i] = 0;
        }
        for (j = n0 / NB; j * NB < n1; j++) {
            if (mr == GEMM_MR) neon_tile(g, buf, GEMM_MR, j, n1 - j * NB, y + (int64_t)m0 * ldy, ldy);
            else neon_tile(g, buf, mr, j, n1 - j * NB, y + (int64_t)m0 * ldy, ldy);
        }
    }
}

T_DOT static void dot_gemm(const edge_simd_qgemm_t *g, const int8_t *a, int32_t m, int32_t lda, int32_t n0,
                           int32_t n1, int8_t *y, int32_t ldy, void *work) {
    const int32_t k = g->k, kpad = g->kpad;
    int8_t *buf = (int8_t *)work;
    int32_t m0, r, j;
    for (m0 = 0; m0 < m; m0 += GEMM_MR) {
        const int32_t mr = m - m0 < GEMM_MR ? m - m0 : GEMM_MR;
        for (r = 0; r < mr; r++) {
            memcpy(buf + (int64_t)r * kpad, a + (int64_t)(m0 + r) * lda, (size_t)k);
            memset(buf + (int64_t)r * kpad + k, 0, (size_t)(kpad - k));
        }
        for (j = n0 / NB; j * NB < n1; j++) {
            if (mr == GEMM_MR) dot_tile(g, buf, GEMM_MR, j, n1 - j * NB, y + (int64_t)m0 * ldy, ldy);
            else dot_tile(g, buf, mr, j, n1 - j * NB, y + (int64_t)m0 * ldy, ldy);
        }
    }
}

void edge_simd_qgemm(const edge_simd_qgemm_t *g, const int8_t *a, int32_t m, int32_t lda, int32_t n0, int32_t n1,
                     int8_t *y, int32_t ldy, void *work) {
    if (g->level == EDGE_SIMD_ARM_DOTPROD) dot_gemm(g, a, m, lda, n0, n1, y, ldy, work);
    else neon_gemm(g, a, m, lda, n0, n1, y, ldy, work);
}

/* ------------------------------------------------------------------------------------- ADD / SUB / MUL int8 */

/* edge_rdbpot by e (0..31) on 4 lanes: x >> e, plus one when the remainder is above half (halves away) */
static INLINE int32x4_t rdbpot4(int32x4_t x, int32_t e) {
    const int32x4_t mask = vdupq_n_s32((int32_t)(((int64_t)1 << e) - 1));
    const int32x4_t thr = vsubq_s32(vshrq_n_s32(mask, 1), vshrq_n_s32(x, 31));
    const int32x4_t rem = vandq_s32(x, mask);
    return vsubq_s32(vshlq_s32(x, vdupq_n_s32(-e)), vreinterpretq_s32_u32(vcgtq_s32(rem, thr)));
}

/* eb_srdhm: (x * m + 2^30) >> 31 = SQRDMULH for m >= 0 (its saturating case needs m = INT32_MIN) */
static INLINE int32x4_t srdhm4(int32x4_t x, int32x4_t m) { return vqrdmulhq_s32(x, m); }

/* 8 int8 of a row (step 1) or its one value (step 0), as two int32x4. */
static INLINE void load8(const int8_t *x, int32_t step, int32_t i, int32x4_t *lo, int32x4_t *hi) {
    const int16x8_t v = step ? vmovl_s8(vld1_s8(x + i)) : vdupq_n_s16(x[0]);
    *lo = vmovl_s16(vget_low_s16(v));
    *hi = vmovl_high_s16(v);
}

static INLINE void store8n(int32x4_t q0, int32x4_t q1, int8_t *y, int32_t n) {
    const int8x8_t v = vqmovn_s16(vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1)));
    if (n >= 8) {
        vst1_s8(y, v);
    } else {
        int8_t t[8];
        vst1_s8(t, v);
        memcpy(y, t, (size_t)n);
    }
}

static INLINE int32x4_t addsub_in4(int32x4_t x, int32x4_t zp, int32x4_t m, int32_t r) {
    return rdbpot4(srdhm4(vshlq_n_s32(vsubq_s32(x, zp), 20), m), r);
}

static INLINE int32x4_t addsub_out4(int32x4_t x1, int32x4_t x2, const int32_t *p, int32_t sub) {
    const int32x4_t s = sub ? vsubq_s32(x1, x2) : vaddq_s32(x1, x2);
    const int32x4_t q = rdbpot4(srdhm4(vshlq_s32(s, vdupq_n_s32(p[8])), vdupq_n_s32(p[7])), p[9]);
    return vminq_s32(vmaxq_s32(vaddq_s32(q, vdupq_n_s32(p[10])), vdupq_n_s32(p[11])), vdupq_n_s32(p[12]));
}

static void addsub_block(const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int32_t i, int8_t *y, int32_t n,
                         const int32_t *p) {
    const int32x4_t zp1 = vdupq_n_s32(p[0]), zp2 = vdupq_n_s32(p[1]), m1 = vdupq_n_s32(p[2]), m2 = vdupq_n_s32(p[4]);
    const int32_t sub = p[6] < 0;
    int32x4_t a0, a1, b0, b1;
    load8(a, sa, i, &a0, &a1);
    load8(b, sb, i, &b0, &b1);
    a0 = addsub_in4(a0, zp1, m1, p[3]);
    a1 = addsub_in4(a1, zp1, m1, p[3]);
    b0 = addsub_in4(b0, zp2, m2, p[5]);
    b1 = addsub_in4(b1, zp2, m2, p[5]);
    store8n(addsub_out4(a0, b0, p, sub), addsub_out4(a1, b1, p, sub), y, n);
}

int32_t edge_simd_addsub_q8(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                            int32_t n, const int32_t *p) {
    int32_t i;
    if (level < EDGE_SIMD_ARM_NEON) return 0; /* (n = 0: the caller asks whether the level has the path) */
    for (i = 0; i + 8 <= n; i += 8) addsub_block(a, sa, b, sb, i, y + i, 8, p);
    if (i < n) { /* the n % 8 last elements: the same lanes on a zero-padded copy */
        int8_t ta[8] = {0}, tb[8] = {0};
        memcpy(ta, sa ? a + i : a, (size_t)(sa ? n - i : 1));
        memcpy(tb, sb ? b + i : b, (size_t)(sb ? n - i : 1));
        addsub_block(ta, sa, tb, sb, 0, y + i, n - i, p);
    }
    return 1;
}

static INLINE int32x4_t mul_out4(int32x4_t x1, int32x4_t x2, const int32_t *p) {
    const int32x4_t prod = vmulq_s32(vsubq_s32(x1, vdupq_n_s32(p[0])), vsubq_s32(x2, vdupq_n_s32(p[1])));
    const int32x4_t q = rdbpot4(srdhm4(vshlq_s32(prod, vdupq_n_s32(p[3])), vdupq_n_s32(p[2])), p[4]);
    return vminq_s32(vmaxq_s32(vaddq_s32(q, vdupq_n_s32(p[5])), vdupq_n_s32(p[6])), vdupq_n_s32(p[7]));
}

static void mul_block(const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int32_t i, int8_t *y, int32_t n,
                      const int32_t *p) {
    int32x4_t a0, a1, b0, b1;
    load8(a, sa, i, &a0, &a1);
    load8(b, sb, i, &b0, &b1);
    store8n(mul_out4(a0, b0, p), mul_out4(a1, b1, p), y, n);
}

int32_t edge_simd_mul_q8(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                         int32_t n, const int32_t *p) {
    int32_t i;
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    for (i = 0; i + 8 <= n; i += 8) mul_block(a, sa, b, sb, i, y + i, 8, p);
    if (i < n) {
        int8_t ta[8] = {0}, tb[8] = {0};
        memcpy(ta, sa ? a + i : a, (size_t)(sa ? n - i : 1));
        memcpy(tb, sb ? b + i : b, (size_t)(sb ? n - i : 1));
        mul_block(ta, sa, tb, sb, 0, y + i, n - i, p);
    }
    return 1;
}

/* ------------------------------------------------------------------------------------- pooling int8 */

int32_t edge_simd_pool_q8(int32_t level, int32_t average, const int8_t *x, int64_t row, int32_t rows, int32_t cols,
                          int32_t c, int32_t lo, int32_t hi, int32_t *acc, int8_t *y) {
    int32_t r, j, i = 0;
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    if (!average) {
        const int8x16_t vlo = vdupq_n_s8((int8_t)lo), vhi = vdupq_n_s8((int8_t)hi);
        for (; i + 16 <= c; i += 16) {
            int8x16_t m = vdupq_n_s8(-128);
            for (r = 0; r < rows; r++)
                for (j = 0; j < cols; j++) m = vmaxq_s8(m, vld1q_s8(x + r * row + (int64_t)j * c + i));
            vst1q_s8(y + i, vminq_s8(vmaxq_s8(m, vlo), vhi));
        }
        q8_pool_max_tail(x, row, rows, cols, c, i, lo, hi, y);
        return 1;
    }
    {
        const int32_t count = rows * cols, half = count / 2;
        const int32x4_t vhalf = vdupq_n_s32(half), vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);
        const float64x2_t dcount = vdupq_n_f64((double)count);
        for (; i + 8 <= c; i += 8) {
            int32x4_t s0 = vdupq_n_s32(0), s1 = vdupq_n_s32(0);
            for (r = 0; r < rows; r++)
                for (j = 0; j < cols; j++) {
                    const int16x8_t v = vmovl_s8(vld1_s8(x + r * row + (int64_t)j * c + i));
                    s0 = vaddw_s16(s0, vget_low_s16(v));
                    s1 = vaddw_high_s16(s1, v);
                }
            vst1q_s32(acc + i, s0);
            vst1q_s32(acc + i + 4, s1);
        }
        q8_pool_sum_tail(x, row, rows, cols, c, i, acc);
        /* (s +- half) / count truncated, in double (exact for integers below 2^31: see edge_simd_x86.c) */
        for (i = 0; i + 8 <= c; i += 8) {
            int32x4_t q[2];
            int32_t h;
            for (h = 0; h < 2; h++) {
                const int32x4_t s = vld1q_s32(acc + i + 4 * h);
                const int32x4_t neg = vreinterpretq_s32_u32(vcltq_s32(s, vdupq_n_s32(0)));
                const int32x4_t t = vsubq_s32(vaddq_s32(s, vhalf), vandq_s32(neg, vaddq_s32(vhalf, vhalf)));
                const int64x2_t q0 = vcvtq_s64_f64(vdivq_f64(vcvtq_f64_s64(vmovl_s32(vget_low_s32(t))), dcount));
                const int64x2_t q1 = vcvtq_s64_f64(vdivq_f64(vcvtq_f64_s64(vmovl_high_s32(t)), dcount));
                q[h] = vminq_s32(vmaxq_s32(vcombine_s32(vmovn_s64(q0), vmovn_s64(q1)), vlo), vhi);
            }
            store8n(q[0], q[1], y + i, 8);
        }
        q8_pool_avg_tail(acc, c, i, count, half, lo, hi, y);
    }
    return 1;
}

void edge_simd_dw_pixel(int32_t level, const int8_t *x, const int32_t *xoff, const int16_t *const *wtap,
                        int32_t ntaps, int32_t c, int32_t input_offset, const int32_t *bias, const int32_t *mul,
                        const int32_t *rs, int32_t zp, int32_t lo, int32_t hi, int8_t *y) {
    const int16x8_t off = vdupq_n_s16((int16_t)input_offset);
    const int32x4_t vzp = vdupq_n_s32(zp), vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);
    int32_t c0, t;
    (void)level;
    for (c0 = 0; c0 + 8 <= c; c0 += 8) {
        int32x4_t a0 = vld1q_s32(bias + c0), a1 = vld1q_s32(bias + c0 + 4), q0, q1;
        for (t = 0; t < ntaps; t++) {
            const int16x8_t xv = vaddq_s16(vmovl_s8(vld1_s8(x + xoff[t] + c0)), off);
            const int16x8_t wv = vld1q_s16(wtap[t] + c0);
            a0 = vmlal_s16(a0, vget_low_s16(xv), vget_low_s16(wv));
            a1 = vmlal_high_s16(a1, xv, wv);
        }
        q0 = neon_rq4(a0, vld1q_s32(mul + c0), vnegq_s32(vld1q_s32(rs + c0)), vzp, vlo, vhi);
        q1 = neon_rq4(a1, vld1q_s32(mul + c0 + 4), vnegq_s32(vld1q_s32(rs + c0 + 4)), vzp, vlo, vhi);
        vst1_s8(y + c0, vqmovn_s16(vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1))));
    }
    for (; c0 < c; c0++) { /* the c % 8 last channels: the plain-C edge_rq_apply */
        uint32_t acc = (uint32_t)bias[c0];
        int32_t h, r;
        for (t = 0; t < ntaps; t++) acc += (uint32_t)((x[xoff[t] + c0] + input_offset) * wtap[t][c0]);
        h = (int32_t)(((int64_t)(int32_t)acc * mul[c0] + ((int64_t)1 << 30)) >> 31);
        h += h >> 31;
        r = zp + (int32_t)(((int64_t)h + ((int64_t)1 << (rs[c0] - 1))) >> rs[c0]);
        y[c0] = (int8_t)(r < lo ? lo : (r > hi ? hi : r));
    }
}
#endif
