/* edge_simd_f32_scalar.h - the scalar pieces of the float32 fast paths that edge_simd_f32_arm.c and
 * edge_simd_f32_x86.c share: weight packing, the SGEMM's row blocking (a macro over the arch's tile), tap ranges,
 * and the per-element tails each vector loop ends with.
 * Only those two files include it (after their own #if); everything here is static inline so that it compiles
 * into the caller's context (on x86-64 inside the AVX2 + FMA functions, as the loops were before). None of these
 * expressions holds a multiply feeding an add, so no FMA contraction can change a result.
 */
#ifndef EDGE_SIMD_F32_SCALAR_H
#define EDGE_SIMD_F32_SCALAR_H

#include "edge_simd.h"
#include <string.h>

static inline int32_t f32_round_up(int32_t v, int32_t m) { return (v + m - 1) / m * m; }

static inline float f32_clamp1(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* The SGEMM panels at dst: npad bias floats, then NR-column panels k x NR (columns past n zero). */
static inline void f32_sgemm_pack(edge_simd_sgemm_t *g, int32_t level, const float *w, int32_t n, int32_t k,
                                  int64_t ldn, int64_t ldk, const float *bias, float lo, float hi, void *dst) {
    float *p = (float *)dst, *panel;
    int32_t c, i;
    g->level = level;
    g->n = n;
    g->k = k;
    g->npad = f32_round_up(n, EDGE_SIMD_F32_NR);
    g->lo = lo;
    g->hi = hi;
    g->packed = p;
    for (c = 0; c < g->npad; c++) p[c] = bias && c < n ? bias[c] : 0.0f;
    panel = p + g->npad;
    for (c = 0; c < g->npad; c += EDGE_SIMD_F32_NR, panel += (size_t)EDGE_SIMD_F32_NR * (size_t)k) {
        int32_t j;
        for (j = 0; j < EDGE_SIMD_F32_NR; j++) {
            const float *src = w + (int64_t)(c + j) * ldn;
            if (c + j >= n) {
                for (i = 0; i < k; i++) panel[(size_t)i * EDGE_SIMD_F32_NR + j] = 0.0f;
            } else {
                for (i = 0; i < k; i++) panel[(size_t)i * EDGE_SIMD_F32_NR + j] = src[(int64_t)i * ldk];
            }
        }
    }
}

/* F32_SGEMM_BLOCKS(NAME, ATTRS, VEC, TILE) defines edge_simd_sgemm's row blocking for one arch:
 *     static ATTRS void NAME(g, a, m, lda, n0, n1, y, ldy, VEC lo, VEC hi)
 * runs rows [0, m) of a in blocks of about 128 KB (whole tiles, 6 to 768 rows), each block against every panel of
 * columns [n0, n1) in tiles of EDGE_SIMD_F32_MR rows (a block's last one shorter) by the arch's register tile
 *     TILE(mr, a, lda, pb, bias, k, lo, hi, y, ldy, cols)
 * (lo / hi: the clamp as the arch's vectors, VEC). Every call names mr as a constant, so that the tile inlines with
 * the rows it does not have gone; a macro because the tile, its vector type and its target attribute are the
 * arch's. */
#define F32_SGEMM_BLOCKS(NAME, ATTRS, VEC, TILE)                                                                \
    static ATTRS void NAME(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, int32_t n0,       \
                           int32_t n1, float *y, int64_t ldy, VEC lo, VEC hi) {                                 \
        const int32_t k = g->k, mr = EDGE_SIMD_F32_MR;                                                          \
        const int64_t pstride = (int64_t)EDGE_SIMD_F32_NR * k;                                                  \
        const float *bias = g->packed, *panels = g->packed + g->npad;                                           \
        int32_t mc = (int32_t)((128 * 1024 / 4) / (k > 0 ? k : 1)), i0, i, c;                                  \
        mc = mc < mr ? mr : (mc > 768 ? 768 : mc / mr * mr);                                                    \
        for (i0 = 0; i0 < m; i0 += mc) {                                                                        \
            const int32_t i1 = m - i0 < mc ? m : i0 + mc;                                                       \
            for (c = n0; c < n1; c += EDGE_SIMD_F32_NR) {                                                       \
                const float *pb = panels + (int64_t)(c / EDGE_SIMD_F32_NR) * pstride;                           \
                const int32_t cols = n1 - c;                                                                    \
                for (i = i0; i < i1; i += mr) {                                                                 \
                    const float *ai = a + (int64_t)i * lda;                                                     \
                    float *yi = y + (int64_t)i * ldy + c;                                                       \
                    switch (i1 - i < mr ? i1 - i : mr) {                                                        \
                    case 6: TILE(6, ai, lda, pb, bias + c, k, lo, hi, yi, ldy, cols); break;                    \
                    case 5: TILE(5, ai, lda, pb, bias + c, k, lo, hi, yi, ldy, cols); break;                    \
                    case 4: TILE(4, ai, lda, pb, bias + c, k, lo, hi, yi, ldy, cols); break;                    \
                    case 3: TILE(3, ai, lda, pb, bias + c, k, lo, hi, yi, ldy, cols); break;                    \
                    case 2: TILE(2, ai, lda, pb, bias + c, k, lo, hi, yi, ldy, cols); break;                    \
                    default: TILE(1, ai, lda, pb, bias + c, k, lo, hi, yi, ldy, cols); break;                   \
                    }                                                                                           \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    }
#if EDGE_SIMD_F32_MR != 6
#error "F32_SGEMM_BLOCKS's switch names the tile's rows 1..6"
#endif

/* The taps [lo, hi) of a window starting at `origin` that land inside [0, size) (edge_conv.h's edge_conv_taps). */
static inline void f32_taps(int32_t origin, int32_t dil, int32_t size, int32_t k, int32_t *lo, int32_t *hi) {
    int32_t a = 0, b = k;
    if (origin < 0) a = (-origin + dil - 1) / dil;
    if (origin + (int64_t)(k - 1) * dil >= size) b = (size - origin + dil - 1) / dil;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

/* The output columns [*oxa, *oxb) of a depthwise layer whose windows lie inside the input's columns. */
static inline void f32_dw_inner_cols(const edge_simd_dwf_t *p, int32_t *oxa, int32_t *oxb) {
    int32_t a, b;
    for (a = 0; a < p->ow && a * p->sw - p->pl < 0; a++) {
    }
    for (b = a; b < p->ow && b * p->sw - p->pl + (int64_t)(p->kw - 1) * p->dw < p->w; b++) {
    }
    *oxa = a;
    *oxb = b;
}

/* PRELU, elements [i, n). */
static inline void f32_prelu_tail(const float *x, const float *alpha, int32_t astep, float *y, int32_t i, int32_t n) {
    for (; i < n; i++) {
        const float v = x[i];
        y[i] = v >= 0.0f ? v : v * alpha[i * astep];
    }
}

/* ADD / SUB / MUL (kind: EDGE_SIMD_F32_*) with the clamp, elements [i, n); sa / sb 0 broadcast element 0. */
static inline void f32_binary_tail(const int32_t kind, const int32_t sa, const int32_t sb, const float *a,
                                   const float *b, float *y, int32_t i, int32_t n, float lo, float hi) {
    for (; i < n; i++) {
        const float u = a[i * sa], v = b[i * sb];
        const float r = kind == EDGE_SIMD_F32_ADD ? u + v : kind == EDGE_SIMD_F32_SUB ? u - v : u * v;
        y[i] = f32_clamp1(r, lo, hi);
    }
}

/* Average / max pooling, channels [i, c) one at a time. */
static inline void f32_pool_tail(int32_t average, const float *x, int64_t row, int32_t rows, int32_t cols,
                                 int32_t c, int32_t i, float lo, float hi, float *y) {
    int32_t r, j;
    for (; i < c; i++) {
        float a = average ? 0.0f : -3.40282347e+38f, v;
        for (r = 0; r < rows; r++)
            for (j = 0; j < cols; j++) {
                const float u = x[r * row + (int64_t)j * c + i];
                if (average) a += u;
                else a = u > a ? u : a;
            }
        v = average ? a / (float)(rows * cols) : a;
        y[i] = f32_clamp1(v, lo, hi);
    }
}

/* The portable kernel's widening of one half (kernels/dequantize.c): every half exactly, NaN payloads kept. */
static inline float f16_scalar(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, bits;
    float f;
    if (e == 0x1F) {
        bits = sign | 0x7F800000u | (m << 13);
    } else if (e != 0) {
        bits = sign | ((e + 112u) << 23) | (m << 13);
    } else if (m == 0) {
        bits = sign;
    } else {
        e = 113;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        bits = sign | (e << 23) | ((m & 0x3FFu) << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

#endif
