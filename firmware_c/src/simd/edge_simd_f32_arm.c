/* edge_simd_f32_arm.c - aarch64 float32 fast paths: NEON FMLA (both aarch64 levels run these; see edge_simd.h's
 * float32 section for the numerics).
 *
 * The same algorithms as edge_simd_f32_x86.c, with four floats per vector: SGEMM on a 6 x 16 tile (24 q-register
 * sums; per k four loads of the packed panel and six LD1R broadcasts of a), a single row against two panels at
 * once; depthwise four channels per vector and the last c % 4 one at a time with the scalar FMADD (the same fused
 * operation), the nine weights of a 3x3 window inside the input kept in registers along the row. Every output is
 * the same sequence of fused multiply-adds as on x86-64: the same bits.
 */
#include "edge_simd.h"

#if EDGE_SIMD && defined(__aarch64__)
#include <arm_neon.h>
#include "edge_simd_f32_scalar.h"

#define INLINE __attribute__((always_inline)) inline

#define NR EDGE_SIMD_F32_NR

size_t edge_simd_sgemm_bytes(int32_t level, int32_t n, int32_t k) {
    const size_t npad = (size_t)f32_round_up(n, NR);
    if (level < EDGE_SIMD_ARM_NEON || n <= 0 || k <= 0) return 0;
    return sizeof(float) * (npad + npad * (size_t)k);
}

void edge_simd_sgemm_pack(edge_simd_sgemm_t *g, int32_t level, const float *w, int32_t n, int32_t k, int64_t ldn,
                          int64_t ldk, const float *bias, float lo, float hi, void *dst) {
    f32_sgemm_pack(g, level, w, n, k, ldn, ldk, bias, lo, hi, dst);
}

/* FMAX / FMIN return a NaN when either operand is one: a NaN sum passes, as in the portable kernels. */
static INLINE float32x4_t f32_clamp(float32x4_t v, float32x4_t lo, float32x4_t hi) {
    return vminq_f32(hi, vmaxq_f32(lo, v));
}

static INLINE void f32_store16(float *y, const float32x4_t v[4], int32_t cols) {
    if (cols >= NR) {
        vst1q_f32(y, v[0]);
        vst1q_f32(y + 4, v[1]);
        vst1q_f32(y + 8, v[2]);
        vst1q_f32(y + 12, v[3]);
    } else {
        float t[NR];
        vst1q_f32(t, v[0]);
        vst1q_f32(t + 4, v[1]);
        vst1q_f32(t + 8, v[2]);
        vst1q_f32(t + 12, v[3]);
        memcpy(y, t, sizeof(float) * (size_t)cols);
    }
}

/* mr (<= EDGE_SIMD_F32_MR, a constant after inlining) rows against one panel; the 24 sums are named variables (GCC
 * keeps arrays of vectors indexed in a loop in memory). */
#define SG_ROW(r)                                                                                            \
    if (mr > r) {                                                                                            \
        const float32x4_t av = vld1q_dup_f32(a##r + kk);                                                     \
        s##r##0 = vfmaq_f32(s##r##0, av, b0);                                                                \
        s##r##1 = vfmaq_f32(s##r##1, av, b1);                                                                \
        s##r##2 = vfmaq_f32(s##r##2, av, b2);                                                                \
        s##r##3 = vfmaq_f32(s##r##3, av, b3);                                                                \
    }
#define SG_OUT(r)                                                                                            \
    if (mr > r) {                                                                                            \
        v[0] = f32_clamp(vaddq_f32(s##r##0, bv0), lo, hi);                                                   \
        v[1] = f32_clamp(vaddq_f32(s##r##1, bv1), lo, hi);                                                   \
        v[2] = f32_clamp(vaddq_f32(s##r##2, bv2), lo, hi);                                                   \
        v[3] = f32_clamp(vaddq_f32(s##r##3, bv3), lo, hi);                                                   \
        f32_store16(y + r * ldy, v, cols);                                                                   \
    }
#define SG_ZERO(r) float32x4_t s##r##0 = vdupq_n_f32(0.0f), s##r##1 = s##r##0, s##r##2 = s##r##0, s##r##3 = s##r##0;
static INLINE void sg_tile(const int32_t mr, const float *a, int64_t lda, const float *pb, const float *bias, int32_t k,
                           float32x4_t lo, float32x4_t hi, float *y, int64_t ldy, int32_t cols) {
    SG_ZERO(0) SG_ZERO(1) SG_ZERO(2) SG_ZERO(3) SG_ZERO(4) SG_ZERO(5)
    const float *a0 = a, *a1 = a0 + (mr > 1 ? lda : 0), *a2 = a1 + (mr > 2 ? lda : 0), *a3 = a2 + (mr > 3 ? lda : 0);
    const float *a4 = a3 + (mr > 4 ? lda : 0), *a5 = a4 + (mr > 5 ? lda : 0);
    int32_t kk;
    for (kk = 0; kk < k; kk++, pb += NR) {
        const float32x4_t b0 = vld1q_f32(pb), b1 = vld1q_f32(pb + 4), b2 = vld1q_f32(pb + 8), b3 = vld1q_f32(pb + 12);
        SG_ROW(0) SG_ROW(1) SG_ROW(2) SG_ROW(3) SG_ROW(4) SG_ROW(5)
    }
    {
        const float32x4_t bv0 = vld1q_f32(bias), bv1 = vld1q_f32(bias + 4), bv2 = vld1q_f32(bias + 8),
                          bv3 = vld1q_f32(bias + 12);
        float32x4_t v[4];
        SG_OUT(0) SG_OUT(1) SG_OUT(2) SG_OUT(3) SG_OUT(4) SG_OUT(5)
    }
}

/* More rows: blocks of them in sg_tile's tiles (edge_simd_f32_scalar.h). */
F32_SGEMM_BLOCKS(sg_blocks, INLINE, float32x4_t, sg_tile)

/* One row against two panels at once (eight independent sums). */
static INLINE void sg_row2(const float *a, const float *pb, int64_t pstride, const float *bias, int32_t k,
                           float32x4_t lo, float32x4_t hi, float *y, int32_t cols) {
    SG_ZERO(0) SG_ZERO(1)
    const float *q = pb + pstride;
    float32x4_t v[4];
    int32_t kk;
    for (kk = 0; kk < k; kk++, pb += NR, q += NR) {
        const float32x4_t av = vld1q_dup_f32(a + kk);
        s00 = vfmaq_f32(s00, av, vld1q_f32(pb));
        s01 = vfmaq_f32(s01, av, vld1q_f32(pb + 4));
        s02 = vfmaq_f32(s02, av, vld1q_f32(pb + 8));
        s03 = vfmaq_f32(s03, av, vld1q_f32(pb + 12));
        s10 = vfmaq_f32(s10, av, vld1q_f32(q));
        s11 = vfmaq_f32(s11, av, vld1q_f32(q + 4));
        s12 = vfmaq_f32(s12, av, vld1q_f32(q + 8));
        s13 = vfmaq_f32(s13, av, vld1q_f32(q + 12));
    }
    v[0] = f32_clamp(vaddq_f32(s00, vld1q_f32(bias)), lo, hi);
    v[1] = f32_clamp(vaddq_f32(s01, vld1q_f32(bias + 4)), lo, hi);
    v[2] = f32_clamp(vaddq_f32(s02, vld1q_f32(bias + 8)), lo, hi);
    v[3] = f32_clamp(vaddq_f32(s03, vld1q_f32(bias + 12)), lo, hi);
    f32_store16(y, v, cols);
    if (cols > NR) {
        v[0] = f32_clamp(vaddq_f32(s10, vld1q_f32(bias + NR)), lo, hi);
        v[1] = f32_clamp(vaddq_f32(s11, vld1q_f32(bias + NR + 4)), lo, hi);
        v[2] = f32_clamp(vaddq_f32(s12, vld1q_f32(bias + NR + 8)), lo, hi);
        v[3] = f32_clamp(vaddq_f32(s13, vld1q_f32(bias + NR + 12)), lo, hi);
        f32_store16(y + NR, v, cols - NR);
    }
}

/* No im2col-free float conv on aarch64 yet: conv_2d.c's im2col rows. */
int32_t edge_simd_sconv(const edge_simd_sgemm_t *g, const edge_simd_dwf_t *p, const float *x, int32_t oy0,
                        int32_t oy1, float *y, float *work) {
    (void)g, (void)p, (void)x, (void)oy0, (void)oy1, (void)y, (void)work;
    return 0;
}

void edge_simd_sgemm(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, int32_t n0, int32_t n1,
                     float *y, int64_t ldy) {
    const int32_t k = g->k;
    const int64_t pstride = (int64_t)NR * k;
    const float32x4_t lo = vdupq_n_f32(g->lo), hi = vdupq_n_f32(g->hi);
    const float *bias = g->packed, *panels = g->packed + g->npad;
    int32_t c;
    if (m <= 0 || n0 >= n1) return;
    if (m == 1) {
        for (c = n0; c < n1; c += 2 * NR) {
            const float *pb = panels + (int64_t)(c / NR) * pstride;
            if (n1 - c > NR) sg_row2(a, pb, pstride, bias + c, k, lo, hi, y + c, n1 - c);
            else sg_tile(1, a, lda, pb, bias + c, k, lo, hi, y + c, 0, n1 - c);
        }
        return;
    }
    sg_blocks(g, a, m, lda, n0, n1, y, ldy, lo, hi);
}

/* ------------------------------------------------------------------------------------- depthwise */


static INLINE void dwf_pixel(const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias, int32_t iy0,
                             int32_t ix0, int32_t fy0, int32_t fy1, int32_t fx0, int32_t fx1, float32x4_t lo,
                             float32x4_t hi, float *y) {
    const int32_t c = p->c, c4 = c & ~3;
    int32_t ch, fy, fx;
    for (ch = 0; ch < c4; ch += 4) {
        float32x4_t acc = vdupq_n_f32(0.0f);
        for (fy = fy0; fy < fy1; fy++) {
            const float *xr = x + ((int64_t)(iy0 + fy * p->dh) * p->w + ix0) * c + ch;
            const float *wr = wt + (int64_t)fy * p->kw * c + ch;
            for (fx = fx0; fx < fx1; fx++)
                acc = vfmaq_f32(acc, vld1q_f32(xr + (int64_t)fx * p->dw * c), vld1q_f32(wr + (int64_t)fx * c));
        }
        if (bias) acc = vaddq_f32(acc, vld1q_f32(bias + ch));
        vst1q_f32(y + ch, f32_clamp(acc, lo, hi));
    }
    for (; ch < c; ch++) {
        float acc = 0.0f;
        for (fy = fy0; fy < fy1; fy++) {
            const float *xr = x + ((int64_t)(iy0 + fy * p->dh) * p->w + ix0) * c + ch;
            const float *wr = wt + (int64_t)fy * p->kw * c + ch;
            for (fx = fx0; fx < fx1; fx++) acc = __builtin_fmaf(xr[(int64_t)fx * p->dw * c], wr[(int64_t)fx * c], acc);
        }
        if (bias) acc += bias[ch];
        y[ch] = f32_clamp1(acc, p->lo, p->hi);
    }
}

static INLINE void dwf_put(float *y, float32x4_t acc, float32x4_t bv, int has_bias, float32x4_t lo, float32x4_t hi) {
    if (has_bias) acc = vaddq_f32(acc, bv);
    vst1q_f32(y, f32_clamp(acc, lo, hi));
}

/* Four output pixels whose windows lie inside the input columns (rows fy0..fy1 inside), four channels at ch: per tap one weight load for the
 * four pixels (four independent sums, each the same FMAs in the same (fy, fx) order as dwf_pixel). */
static INLINE void dwf_quad(const edge_simd_dwf_t *p, const float *xq, int64_t xstep, const float *wc, const float *bc,
                            int32_t fy0, int32_t fy1, float32x4_t lo, float32x4_t hi, float *yq) {
    const int32_t c = p->c;
    const int64_t xs = (int64_t)p->dw * c, xrow = (int64_t)p->dh * p->w * c;
    const float *x1 = xq + xstep, *x2 = x1 + xstep, *x3 = x2 + xstep;
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0, bv = a0;
    int32_t fy, fx;
    wc += (int64_t)fy0 * p->kw * c;
    for (fy = fy0; fy < fy1; fy++) {
        const int64_t r = fy * xrow;
        for (fx = 0; fx < p->kw; fx++, wc += c) {
            const int64_t o = r + fx * xs;
            const float32x4_t wv = vld1q_f32(wc);
            a0 = vfmaq_f32(a0, vld1q_f32(xq + o), wv);
            a1 = vfmaq_f32(a1, vld1q_f32(x1 + o), wv);
            a2 = vfmaq_f32(a2, vld1q_f32(x2 + o), wv);
            a3 = vfmaq_f32(a3, vld1q_f32(x3 + o), wv);
        }
    }
    if (bc) bv = vld1q_f32(bc);
    dwf_put(yq, a0, bv, bc != 0, lo, hi);
    dwf_put(yq + c, a1, bv, bc != 0, lo, hi);
    dwf_put(yq + 2 * c, a2, bv, bc != 0, lo, hi);
    dwf_put(yq + 3 * c, a3, bv, bc != 0, lo, hi);
}

/* Channel ch of one output pixel whose window lies inside the input columns (the last c % 4 channels). */
static inline float dwf_one(const edge_simd_dwf_t *p, const float *xq, const float *wc, const float *bias, int32_t fy0,
                            int32_t fy1, int32_t ch) {
    const int32_t c = p->c;
    float acc = 0.0f;
    int32_t fy, fx;
    wc += (int64_t)fy0 * p->kw * c;
    for (fy = fy0; fy < fy1; fy++)
        for (fx = 0; fx < p->kw; fx++, wc += c)
            acc = __builtin_fmaf(xq[((int64_t)fy * p->dh * p->w + (int64_t)fx * p->dw) * c + ch], wc[ch], acc);
    if (bias) acc += bias[ch];
    return f32_clamp1(acc, p->lo, p->hi);
}

/* Four output pixels of one row with windows cut by the input's left / right edge: the union of their column
 * ranges, each pixel's FMA only where the tap lies inside for it (each sum the same FMAs in the same order as
 * dwf_pixel); the last c % 4 channels one pixel at a time. */
static INLINE void dwf_quad_edge(const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias,
                                 int32_t iy0, int32_t ox, int32_t fy0, int32_t fy1, float32x4_t lo, float32x4_t hi,
                                 float *yq) {
    const int32_t c = p->c, c4 = c & ~3;
    const int64_t xs = (int64_t)p->dw * c, xrow = (int64_t)p->dh * p->w * c;
    const float *xp[4];
    int32_t f0[4], f1[4], j, fy, fx, fxa, fxb, ch;
    for (j = 0; j < 4; j++) {
        const int32_t ix0 = (ox + j) * p->sw - p->pl;
        f32_taps(ix0, p->dw, p->w, p->kw, &f0[j], &f1[j]);
        xp[j] = x + ((int64_t)iy0 * p->w + ix0) * c;
    }
    fxa = f0[0];
    fxb = f1[0];
    for (j = 1; j < 4; j++) { /* the union of the four ranges */
        if (f0[j] < fxa) fxa = f0[j];
        if (f1[j] > fxb) fxb = f1[j];
    }
    for (ch = 0; ch < c4; ch += 4) {
        float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0, bv = a0;
        for (fy = fy0; fy < fy1; fy++) {
            const float *wr = wt + (int64_t)fy * p->kw * c + ch;
            for (fx = fxa; fx < fxb; fx++) {
                const int64_t o = fy * xrow + fx * xs + ch;
                const float32x4_t wv = vld1q_f32(wr + (int64_t)fx * c);
                if (fx >= f0[0] && fx < f1[0]) a0 = vfmaq_f32(a0, vld1q_f32(xp[0] + o), wv);
                if (fx >= f0[1] && fx < f1[1]) a1 = vfmaq_f32(a1, vld1q_f32(xp[1] + o), wv);
                if (fx >= f0[2] && fx < f1[2]) a2 = vfmaq_f32(a2, vld1q_f32(xp[2] + o), wv);
                if (fx >= f0[3] && fx < f1[3]) a3 = vfmaq_f32(a3, vld1q_f32(xp[3] + o), wv);
            }
        }
        if (bias) bv = vld1q_f32(bias + ch);
        dwf_put(yq + ch, a0, bv, bias != 0, lo, hi);
        dwf_put(yq + c + ch, a1, bv, bias != 0, lo, hi);
        dwf_put(yq + 2 * c + ch, a2, bv, bias != 0, lo, hi);
        dwf_put(yq + 3 * c + ch, a3, bv, bias != 0, lo, hi);
    }
    for (j = 0; j < 4 && c4 < c; j++) {
        for (ch = c4; ch < c; ch++) {
            float acc = 0.0f;
            for (fy = fy0; fy < fy1; fy++)
                for (fx = f0[j]; fx < f1[j]; fx++)
                    acc = __builtin_fmaf(xp[j][fy * xrow + fx * xs + ch], wt[(int64_t)(fy * p->kw + fx) * c + ch], acc);
            if (bias) acc += bias[ch];
            yq[(int64_t)j * c + ch] = f32_clamp1(acc, p->lo, p->hi);
        }
    }
}

int32_t edge_simd_dw_f32(int32_t level, const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias,
                         int32_t oy0, int32_t oy1, float *y) {
    const float32x4_t lo = vdupq_n_f32(p->lo), hi = vdupq_n_f32(p->hi);
    const int32_t c = p->c, c4 = c & ~3;
    const int64_t xstep = (int64_t)p->sw * c;
    int32_t oy, ox, fy0, fy1, fx0, fx1, oxa, oxb, ch, j;
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    f32_dw_inner_cols(p, &oxa, &oxb);
    for (oy = oy0; oy < oy1; oy++) {
        const int32_t iy0 = oy * p->sh - p->pt;
        float *yrow = y + (int64_t)oy * p->ow * c;
        int32_t a = 0, b = 0;
        f32_taps(iy0, p->dh, p->h, p->kh, &fy0, &fy1);
        if (fy0 < fy1) {
            a = oxa;
            b = oxa + (oxb - oxa) / 4 * 4;
        }
        for (ox = 0; ox < p->ow; ox++) {
            const int32_t ix0 = ox * p->sw - p->pl;
            if (ox == a && a < b) {
                for (; ox < b; ox += 4) {
                    const float *xq = x + ((int64_t)iy0 * p->w + ox * p->sw - p->pl) * c;
                    float *yq = yrow + (int64_t)ox * c;
                    for (ch = 0; ch < c4; ch += 4) dwf_quad(p, xq + ch, xstep, wt + ch, bias ? bias + ch : 0, fy0, fy1, lo, hi, yq + ch);
                    for (j = 0; j < 4 && c4 < c; j++)
                        for (ch = c4; ch < c; ch++) yq[(int64_t)j * c + ch] = dwf_one(p, xq + j * xstep, wt, bias, fy0, fy1, ch);
                }
                ox = b - 1;
                continue;
            }
            if (fy0 < fy1 && ox + 4 <= p->ow && (ox + 4 <= a || ox >= b)) { /* four pixels at an edge */
                dwf_quad_edge(p, x, wt, bias, iy0, ox, fy0, fy1, lo, hi, yrow + (int64_t)ox * c);
                ox += 3;
                continue;
            }
            f32_taps(ix0, p->dw, p->w, p->kw, &fx0, &fx1);
            dwf_pixel(p, x, wt, bias, iy0, ix0, fy0, fy1, fx0, fx1, lo, hi, yrow + (int64_t)ox * c);
        }
    }
    return 1;
}
/* ------------------------------------------------------------------------------------- elementwise */

int32_t edge_simd_prelu_f32(int32_t level, const float *x, const float *alpha, int32_t astep, float *y, int32_t n) {
    const float32x4_t zero = vdupq_n_f32(0.0f), a1 = vdupq_n_f32(alpha[0]);
    int32_t i;
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    for (i = 0; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i), a = astep ? vld1q_f32(alpha + i) : a1;
        vst1q_f32(y + i, vbslq_f32(vcgeq_f32(v, zero), v, vmulq_f32(v, a))); /* a NaN: v * alpha, as the portable */
    }
    f32_prelu_tail(x, alpha, astep, y, i, n);
    return 1;
}
int32_t edge_simd_prelu_f32_rows(int32_t level, const float *x, const float *alpha, int32_t c, int64_t rows, float *y) {
    int64_t r;
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    for (r = 0; x && r < rows; r++) (void)edge_simd_prelu_f32(level, x + r * c, alpha, 1, y + r * c, c);
    return 1;
}

static INLINE void binf_neon(const int32_t kind, const int32_t sa, const int32_t sb, const float *a, const float *b,
                             float *y, int32_t n, float lo, float hi) {
    const float32x4_t vlo = vdupq_n_f32(lo), vhi = vdupq_n_f32(hi), a1 = vdupq_n_f32(a[0]), b1 = vdupq_n_f32(b[0]);
    int32_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        const float32x4_t u = sa ? vld1q_f32(a + i) : a1, v = sb ? vld1q_f32(b + i) : b1;
        const float32x4_t r = kind == EDGE_SIMD_F32_ADD ? vaddq_f32(u, v)
                              : kind == EDGE_SIMD_F32_SUB ? vsubq_f32(u, v) : vmulq_f32(u, v);
        vst1q_f32(y + i, f32_clamp(r, vlo, vhi));
    }
    f32_binary_tail(kind, sa, sb, a, b, y, i, n, lo, hi);
}

#define BINF_STEPS(kind)                                                                                     \
    if (sa && sb) binf_neon(kind, 1, 1, x, z, o, n, f->lo, f->hi);                                           \
    else if (sa) binf_neon(kind, 1, 0, x, z, o, n, f->lo, f->hi);                                            \
    else if (sb) binf_neon(kind, 0, 1, x, z, o, n, f->lo, f->hi);                                            \
    else binf_neon(kind, 0, 0, x, z, o, n, f->lo, f->hi);

void edge_simd_binary_f32_row(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const edge_simd_binf_t *f = (const edge_simd_binf_t *)op;
    const float *x = (const float *)a, *z = (const float *)b;
    float *o = (float *)y;
    if (f->kind == EDGE_SIMD_F32_ADD) {
        BINF_STEPS(EDGE_SIMD_F32_ADD)
    } else if (f->kind == EDGE_SIMD_F32_SUB) {
        BINF_STEPS(EDGE_SIMD_F32_SUB)
    } else {
        BINF_STEPS(EDGE_SIMD_F32_MUL)
    }
}
/* ------------------------------------------------------------------------------------- activations */

/* edge_simd_f32_x86.c's f32_exp, FMA for FMA (the same bits). */
static INLINE float32x4_t f32_exp(float32x4_t x) {
    const float32x4_t n = vrndmq_f32(vfmaq_f32(vdupq_n_f32(0.5f), x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f)), p, z;
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    z = vmulq_f32(r, r);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), vdupq_n_f32(1.9875691500e-4f), r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vaddq_f32(vfmaq_f32(r, p, z), vdupq_n_f32(1.0f));
    return vmulq_f32(p, vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23)));
}

/* edge_simd_f32_x86.c's act_lanes_ok: a bit per lane the polynomial path covers. */
static INLINE int act_lanes_ok(const int32_t kind, float32x4_t v) {
    static const uint32_t bit[4] = {1, 2, 4, 8};
    const uint32x4_t m = kind == EDGE_SIMD_ACT_LOGISTIC ? vcgeq_f32(v, vdupq_n_f32(-87.0f)) : vceqq_f32(v, v);
    return (int)vaddvq_u32(vandq_u32(m, vld1q_u32(bit)));
}

static INLINE float32x4_t act_vec(const int32_t kind, float32x4_t v, float32x4_t p0, float32x4_t p1) {
    const float32x4_t zero = vdupq_n_f32(0.0f);
    if (kind == EDGE_SIMD_ACT_RELU) return vbslq_f32(vcltq_f32(v, zero), zero, v);
    if (kind == EDGE_SIMD_ACT_CLAMP) return vbslq_f32(vcgtq_f32(v, p1), p1, vbslq_f32(vcltq_f32(v, p0), p0, v));
    if (kind == EDGE_SIMD_ACT_LEAKY) return vbslq_f32(vcgtq_f32(v, zero), v, vmulq_f32(v, p0));
    if (kind == EDGE_SIMD_ACT_HARD_SWISH) {
        const float32x4_t six = vdupq_n_f32(6.0f);
        float32x4_t t = vaddq_f32(v, vdupq_n_f32(3.0f));
        t = vbslq_f32(vcltq_f32(t, zero), zero, t);
        t = vbslq_f32(vcgtq_f32(t, six), six, t);
        return vdivq_f32(vmulq_f32(v, t), six);
    }
    if (kind == EDGE_SIMD_ACT_LOGISTIC) {
        const float32x4_t one = vdupq_n_f32(1.0f), floor87 = vdupq_n_f32(-87.0f);
        const uint32x4_t small = vcltq_f32(v, vdupq_n_f32(-9.0f)), big = vcgtq_f32(v, vdupq_n_f32(16.619047164916992188f));
        float32x4_t t = vbslq_f32(small, v, vsubq_f32(zero, v)), e;
        t = vbslq_f32(vcgtq_f32(t, floor87), t, floor87); /* MAXPS(t, -87) */
        e = f32_exp(t);
        return vbslq_f32(big, one, vbslq_f32(small, e, vdivq_f32(one, vaddq_f32(one, e))));
    }
    {
        const float32x4_t one = vdupq_n_f32(1.0f), a = vabsq_f32(v), z = vmulq_f32(a, a);
        const float32x4_t ac = vminq_f32(a, vdupq_n_f32(9.5f));
        float32x4_t p = vfmaq_f32(vdupq_n_f32(2.06390887954e-2f), vdupq_n_f32(-5.70498872745e-3f), z), e, l;
        p = vfmaq_f32(vdupq_n_f32(-5.37397155531e-2f), p, z);
        p = vfmaq_f32(vdupq_n_f32(1.33314422036e-1f), p, z);
        p = vfmaq_f32(vdupq_n_f32(-3.33332819422e-1f), p, z);
        p = vfmaq_f32(a, vmulq_f32(p, z), a);
        e = f32_exp(vaddq_f32(ac, ac));
        l = vsubq_f32(one, vdivq_f32(vdupq_n_f32(2.0f), vaddq_f32(e, one)));
        l = vbslq_f32(vcltq_f32(a, vdupq_n_f32(0.625f)), p, l);
        return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(l),
                                               vandq_u32(vreinterpretq_u32_f32(v), vdupq_n_u32(0x80000000u))));
    }
}

static INLINE void act_neon(const int32_t kind, const float *x, float *y, int64_t n, float p0, float p1) {
    const float32x4_t v0 = vdupq_n_f32(p0), v1 = vdupq_n_f32(p1);
    const int check = kind == EDGE_SIMD_ACT_LOGISTIC || kind == EDGE_SIMD_ACT_TANH;
    float in[4], out[4];
    int64_t i;
    int32_t j, lanes;
    for (i = 0; i < n; i += 4) {
        const int32_t m = n - i < 4 ? (int32_t)(n - i) : 4;
        float32x4_t v;
        if (m == 4) {
            v = vld1q_f32(x + i);
        } else {
            memset(in, 0, sizeof in);
            memcpy(in, x + i, sizeof(float) * (size_t)m);
            v = vld1q_f32(in);
        }
        lanes = check ? act_lanes_ok(kind, v) : 0xF;
        if (m == 4 && lanes == 0xF) {
            vst1q_f32(y + i, act_vec(kind, v, v0, v1));
            continue;
        }
        vst1q_f32(in, v); /* (y may be x: keep the inputs) */
        vst1q_f32(out, act_vec(kind, v, v0, v1));
        for (j = 0; j < 4; j++)
            if (!(lanes >> j & 1)) out[j] = edge_simd_act_f32_one(kind, in[j], p0, p1);
        memcpy(y + i, out, sizeof(float) * (size_t)m);
    }
}

int32_t edge_simd_act_f32(int32_t level, int32_t kind, const float *x, float *y, int64_t n, float p0, float p1) {
    if (level < EDGE_SIMD_ARM_NEON || kind < EDGE_SIMD_ACT_RELU || kind > EDGE_SIMD_ACT_TANH) return 0;
    if (!x || n <= 0) return 1;
    switch (kind) {
    case EDGE_SIMD_ACT_RELU: act_neon(EDGE_SIMD_ACT_RELU, x, y, n, p0, p1); break;
    case EDGE_SIMD_ACT_CLAMP: act_neon(EDGE_SIMD_ACT_CLAMP, x, y, n, p0, p1); break;
    case EDGE_SIMD_ACT_LEAKY: act_neon(EDGE_SIMD_ACT_LEAKY, x, y, n, p0, p1); break;
    case EDGE_SIMD_ACT_HARD_SWISH: act_neon(EDGE_SIMD_ACT_HARD_SWISH, x, y, n, p0, p1); break;
    case EDGE_SIMD_ACT_LOGISTIC: act_neon(EDGE_SIMD_ACT_LOGISTIC, x, y, n, p0, p1); break;
    default: act_neon(EDGE_SIMD_ACT_TANH, x, y, n, p0, p1); break;
    }
    return 1;
}

/* ------------------------------------------------------------------------------------- pooling */

static INLINE float32x4_t poolf_clamp(float32x4_t v, float32x4_t lo, float32x4_t hi) {
    return vbslq_f32(vcltq_f32(v, lo), lo, vbslq_f32(vcgtq_f32(v, hi), hi, v));
}

/* p > a ? p : a (a NaN cell is never taken, as the portable compare; FMAX would take it) */
static INLINE float32x4_t poolf_max(float32x4_t p, float32x4_t a) { return vbslq_f32(vcgtq_f32(p, a), p, a); }

int32_t edge_simd_pool_f32(int32_t level, int32_t average, const float *x, int64_t row, int32_t rows, int32_t cols,
                           int32_t c, float lo, float hi, float *y) {
    const float32x4_t vlo = vdupq_n_f32(lo), vhi = vdupq_n_f32(hi), count = vdupq_n_f32((float)(rows * cols));
    const float32x4_t start = vdupq_n_f32(average ? 0.0f : -3.40282347e+38f);
    int32_t i = 0, r, j;
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    if (!x) return 1;
    for (; i + 16 <= c; i += 16) {
        float32x4_t a0 = start, a1 = start, a2 = start, a3 = start;
        for (r = 0; r < rows; r++) {
            for (j = 0; j < cols; j++) {
                const float *p = x + r * row + (int64_t)j * c + i;
                if (average) {
                    a0 = vaddq_f32(a0, vld1q_f32(p));
                    a1 = vaddq_f32(a1, vld1q_f32(p + 4));
                    a2 = vaddq_f32(a2, vld1q_f32(p + 8));
                    a3 = vaddq_f32(a3, vld1q_f32(p + 12));
                } else {
                    a0 = poolf_max(vld1q_f32(p), a0);
                    a1 = poolf_max(vld1q_f32(p + 4), a1);
                    a2 = poolf_max(vld1q_f32(p + 8), a2);
                    a3 = poolf_max(vld1q_f32(p + 12), a3);
                }
            }
        }
        if (average) {
            a0 = vdivq_f32(a0, count), a1 = vdivq_f32(a1, count);
            a2 = vdivq_f32(a2, count), a3 = vdivq_f32(a3, count);
        }
        vst1q_f32(y + i, poolf_clamp(a0, vlo, vhi));
        vst1q_f32(y + i + 4, poolf_clamp(a1, vlo, vhi));
        vst1q_f32(y + i + 8, poolf_clamp(a2, vlo, vhi));
        vst1q_f32(y + i + 12, poolf_clamp(a3, vlo, vhi));
    }
    for (; i + 4 <= c; i += 4) {
        float32x4_t a0 = start;
        for (r = 0; r < rows; r++)
            for (j = 0; j < cols; j++) {
                const float32x4_t v = vld1q_f32(x + r * row + (int64_t)j * c + i);
                a0 = average ? vaddq_f32(a0, v) : poolf_max(v, a0);
            }
        if (average) a0 = vdivq_f32(a0, count);
        vst1q_f32(y + i, poolf_clamp(a0, vlo, vhi));
    }
    f32_pool_tail(average, x, row, rows, cols, c, i, lo, hi, y);
    return 1;
}

/* ------------------------------------------------------------------------------------- float16 */


int32_t edge_simd_f16_f32(int32_t level, const uint16_t *h, float *y, int64_t n) {
    const uint16x8_t expo = vdupq_n_u16(0x7C00);
    int64_t i, j;
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    for (i = 0; i + 8 <= n; i += 8) {
        const uint16x8_t v = vld1q_u16(h + i);
        if (vmaxvq_u16(vceqq_u16(vandq_u16(v, expo), expo))) { /* an inf / NaN: in C */
            for (j = i; j < i + 8; j++) y[j] = f16_scalar(h[j]);
        } else {
            vst1q_f32(y + i, vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(v))));
            vst1q_f32(y + i + 4, vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(v))));
        }
    }
    for (; i < n; i++) y[i] = f16_scalar(h[i]);
    return 1;
}

/* ------------------------------------------------------------------------------------- DEPTHWISE 3x3 / 5x5 float32 */

/* Output row oy of one tile of 4 channels (x, yrow at the tile's first channel; w its K x K taps, bv its bias): the
 * taps loaded once per tile (held in registers: 9, or 25 of the 32), interior pixels four at a time sharing the
 * 3 S + K input columns of a filter row (3x3 stride 1: 6 loads for 12 FMAs, where dwf_quad loads 15), each sum the
 * same FMAs in the same (fy, fx) order from 0 as dwf_pixel, then dwf_put: edge_simd_dw_f32's bits. Border pixels
 * add the taps inside the input, in the same order. */
#define DWF_ROW(K, S)                                                                                            \
    static void dwf##K##_row_s##S(const edge_simd_dwf_t *p, const float *x, const float32x4_t *w, float32x4_t bv, \
                                  int has_bias, int32_t oy, float *yrow) {                                       \
        const int32_t c = p->c, iy0 = oy * S - p->pt;                                                            \
        const float32x4_t lo = vdupq_n_f32(p->lo), hi = vdupq_n_f32(p->hi);                                      \
        int32_t fy0, fy1, ox = 0, fy, fx, j;                                                                     \
        fy0 = iy0 < 0 ? -iy0 : 0;                                                                                \
        fy1 = iy0 + K > p->h ? p->h - iy0 : K;                                                                   \
        if (fy1 < fy0) fy1 = fy0;                                                                                \
        while (ox < p->ow) {                                                                                     \
            const int32_t ix0 = ox * S - p->pl;                                                                  \
            if (ix0 >= 0 && ox + 4 <= p->ow && ix0 + 3 * S + K - 1 < p->w) {                                     \
                float32x4_t acc[4];                                                                              \
                for (j = 0; j < 4; j++) acc[j] = vdupq_n_f32(0.0f);                                              \
                for (fy = fy0; fy < fy1; fy++) {                                                                 \
                    const float *r = x + ((int64_t)(iy0 + fy) * p->w + ix0) * c;                                 \
                    const float32x4_t *wr = w + fy * K;                                                          \
                    float32x4_t col[3 * S + K];                                                                  \
                    int32_t k;                                                                                   \
                    for (k = 0; k < 3 * S + K; k++) col[k] = vld1q_f32(r + (int64_t)k * c);                      \
                    for (j = 0; j < 4; j++)                                                                      \
                        for (fx = 0; fx < K; fx++) acc[j] = vfmaq_f32(acc[j], col[j * S + fx], wr[fx]);          \
                }                                                                                                \
                for (j = 0; j < 4; j++) dwf_put(yrow + (int64_t)(ox + j) * c, acc[j], bv, has_bias, lo, hi);     \
                ox += 4;                                                                                         \
                continue;                                                                                        \
            }                                                                                                    \
            {                                                                                                    \
                const int32_t fx0 = ix0 < 0 ? -ix0 : 0, fx1 = ix0 + K > p->w ? p->w - ix0 : K;                   \
                float32x4_t a = vdupq_n_f32(0.0f);                                                               \
                for (fy = fy0; fy < fy1; fy++)                                                                   \
                    for (fx = fx0; fx < fx1; fx++)                                                               \
                        a = vfmaq_f32(a, vld1q_f32(x + ((int64_t)(iy0 + fy) * p->w + ix0 + fx) * c), w[fy * K + fx]); \
                dwf_put(yrow + (int64_t)ox * c, a, bv, has_bias, lo, hi);                                        \
            }                                                                                                    \
            ox++;                                                                                                \
        }                                                                                                        \
    }
DWF_ROW(3, 1)
DWF_ROW(3, 2)
DWF_ROW(5, 1)
DWF_ROW(5, 2)
#undef DWF_ROW

int32_t edge_simd_dw_3x3_5x5_f32(int32_t level, const edge_simd_dwf_t *p, const float *x, const float *wt,
                                 const float *bias, int32_t oy0, int32_t oy1, float *y) {
    const int32_t c = p->c, taps = p->kh * p->kw;
    int32_t ch0, oy, t;
    if (level < EDGE_SIMD_ARM_NEON || (p->kh != 3 && p->kh != 5) || p->kw != p->kh || p->dh != 1 || p->dw != 1 ||
        p->sh != p->sw || (p->sw != 1 && p->sw != 2) || c < 4)
        return 0;
    if (!y) return 1;
    for (ch0 = 0; ch0 < c; ch0 += 4) {
        /* a last partial tile runs the 4 channels ending at c: it writes some of the tile before again, the same
         * bits (the rows are this call's) */
        const int32_t ch = ch0 + 4 <= c ? ch0 : c - 4;
        const float32x4_t bv = bias ? vld1q_f32(bias + ch) : vdupq_n_f32(0.0f);
        float32x4_t w[25];
        for (t = 0; t < taps; t++) w[t] = vld1q_f32(wt + (int64_t)t * c + ch);
        for (oy = oy0; oy < oy1; oy++) {
            float *yrow = y + (int64_t)oy * p->ow * c + ch;
            if (p->kh == 3 && p->sw == 1) dwf3_row_s1(p, x + ch, w, bv, bias != 0, oy, yrow);
            else if (p->kh == 3) dwf3_row_s2(p, x + ch, w, bv, bias != 0, oy, yrow);
            else if (p->sw == 1) dwf5_row_s1(p, x + ch, w, bv, bias != 0, oy, yrow);
            else dwf5_row_s2(p, x + ch, w, bv, bias != 0, oy, yrow);
        }
    }
    edge_simd_count(EDGE_SIMD_PATH_DW_F32);
    return 1;
}
#endif
