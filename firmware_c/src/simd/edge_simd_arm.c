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

size_t edge_simd_qgemm_bytes(int32_t level, int32_t n, int32_t k) {
    const size_t npad = (size_t)round_up(n, NB), kpad = (size_t)round_up(k, kstep(level));
    if (level == EDGE_SIMD_ARM_DOTPROD) return 3 * 4 * npad + npad * kpad;
    if (level == EDGE_SIMD_ARM_NEON) return 3 * 4 * npad + 2 * npad * kpad;
    return 0;
}

size_t edge_simd_qgemm_work(int32_t level, int32_t k) {
    const size_t kpad = (size_t)round_up(k, kstep(level));
    return (size_t)GEMM_MR * kpad * (level == EDGE_SIMD_ARM_DOTPROD ? 1 : 2) + 64;
}

void edge_simd_qgemm_pack(edge_simd_qgemm_t *g, int32_t level, const int8_t *w, int32_t n, int32_t k, int32_t ldw,
                          int32_t kstride, const int32_t *bias, int32_t input_offset, const int32_t *mul,
                          int32_t mul_stride, const int32_t *rs, int32_t rs_stride, int32_t zp, int32_t lo, int32_t hi,
                          void *dst) {
    const int dot = level == EDGE_SIMD_ARM_DOTPROD;
    const int32_t npad = round_up(n, NB), kpad = round_up(k, kstep(level));
    int32_t c, i;
    void *const pack = edge_simd_qgemm_head(g, level, w, n, k, ldw, kstride, bias, input_offset, mul, mul_stride, rs, rs_stride, -1, zp, lo, hi,
                         npad, kpad, dst);
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

static INLINE int32x4_t rq4(int32x4_t acc, int32x4_t mul, int32x4_t nrs, int32x4_t zp, int32x4_t lo, int32x4_t hi) {
    int32x4_t h = vqrdmulhq_s32(acc, mul);
    h = vsraq_n_s32(h, h, 31);
    h = vaddq_s32(vrshlq_s32(h, nrs), zp);
    return vminq_s32(vmaxq_s32(h, lo), hi);
}

/* acc (8 channels of one row, two int32x4) from block c0 -> y[0..nvalid) */
static INLINE void store_row(const edge_simd_qgemm_t *g, int32x4_t a0, int32x4_t a1, int32_t c0, int32_t nvalid,
                             int8_t *y) {
    const int32_t *bias = (const int32_t *)g->packed, *mul = bias + g->npad, *rs = mul + g->npad;
    const int32x4_t zp = vdupq_n_s32(g->zp), lo = vdupq_n_s32(g->lo), hi = vdupq_n_s32(g->hi);
    const int32x4_t q0 = rq4(vaddq_s32(a0, vld1q_s32(bias + c0)), vld1q_s32(mul + c0), vld1q_s32(rs + c0), zp, lo, hi);
    const int32x4_t q1 =
        rq4(vaddq_s32(a1, vld1q_s32(bias + c0 + 4)), vld1q_s32(mul + c0 + 4), vld1q_s32(rs + c0 + 4), zp, lo, hi);
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

int32_t edge_simd_addsub_q8(int32_t level, const int8_t *a, const int8_t *b, int8_t *y, int32_t n, const int32_t *p) {
    (void)level, (void)a, (void)b, (void)y, (void)n, (void)p;
    return 0; /* no NEON ADD yet: kernels/add.c runs its own */
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
        q0 = rq4(a0, vld1q_s32(mul + c0), vnegq_s32(vld1q_s32(rs + c0)), vzp, vlo, vhi);
        q1 = rq4(a1, vld1q_s32(mul + c0 + 4), vnegq_s32(vld1q_s32(rs + c0 + 4)), vzp, vlo, vhi);
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
