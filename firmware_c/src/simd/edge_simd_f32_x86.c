/* edge_simd_f32_x86.c - x86-64 float32 fast paths: AVX2 + FMA (both x86-64 levels run these; the SGEMM has an AVX-512
 * tile at level 2; see edge_simd.h's float32 section for the numerics).
 *
 * SGEMM: a 6 x 16 register tile (12 ymm sums; per k two loads of the packed panel, six broadcasts of a), over
 * blocks of rows sized so that they stay in L2 while each 16-column panel (k x 64 bytes) is reused from L1/L2.
 * A single row (FULLY_CONNECTED with one batch) runs four panels at once instead (eight independent sums).
 * At the AVX-512 level (EDGE_SIMD_X86_AVX512VNNI: F/BW/VL/DQ are part of it) an 8 x 32 zmm tile (sgemm_512). A conv
 * with a window runs the level's tile on the input where it lies (edge_simd_sconv: an im2col copy of a first layer's
 * 27-float windows cost twice its GEMM), only the pixels at the left / right edges through im2col rows.
 * Depthwise: eight channels per ymm (a masked load / store for the last c % 8), the taps of each output pixel in
 * (fy, fx) order; a 3x3 window wholly inside the input keeps its nine weight vectors in registers along the row.
 * Every function with wider instructions than the x86-64 baseline carries the target attribute.
 */
#include "edge_simd.h"

#if EDGE_SIMD && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include "edge_simd_f32_scalar.h"

#define T_AVX2 __attribute__((target("avx2,fma")))
#define T_F16C __attribute__((target("avx2,fma,f16c")))
#define INLINE __attribute__((always_inline)) inline

#define NR EDGE_SIMD_F32_NR

/* The packed block starts at a cache line (its bias npad floats, then k x 64-byte panel rows: every panel load
 * within one line): the bytes asked for hold SG_PACK_ALIGN more, dst rounded up to it. From the arena's 8-byte
 * persistent steps a panel load straddled two lines: a block at +8 bytes was 1.23x slower at M 49 K 160 N 960,
 * 1.16x at M 196 K 96 N 576 and M 1024 K 256 N 256, 1.13x at M 12544 K 16 N 96 (C microbenchmark, thread CPU
 * time, min of 40-60 interleaved rounds). */
#define SG_PACK_ALIGN 64

size_t edge_simd_sgemm_bytes(int32_t level, int32_t n, int32_t k) {
    const size_t npad = (size_t)f32_round_up(n, NR);
    if (level < EDGE_SIMD_X86_AVX2 || n <= 0 || k <= 0) return 0;
    return sizeof(float) * (npad + npad * (size_t)k) + SG_PACK_ALIGN;
}

void edge_simd_sgemm_pack(edge_simd_sgemm_t *g, int32_t level, const float *w, int32_t n, int32_t k, int64_t ldn,
                          int64_t ldk, const float *bias, float lo, float hi, void *dst) {
    void *line = (void *)(((uintptr_t)dst + SG_PACK_ALIGN - 1) & ~(uintptr_t)(SG_PACK_ALIGN - 1));
    f32_sgemm_pack(g, level, w, n, k, ldn, ldk, bias, lo, hi, line);
}

/* The clamp: max(lo, v) then min(hi, .) with v second, so that a NaN v passes (MAXPS / MINPS return their
 * second operand when one is a NaN), as the portable kernels' compares let it. */
static INLINE T_AVX2 __m256 f32_clamp(__m256 v, __m256 lo, __m256 hi) {
    return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
}

/* Store the 16 values of one tile row, or its first `cols` (the last panel). */
static INLINE T_AVX2 void f32_store16(float *y, __m256 v0, __m256 v1, int32_t cols) {
    if (cols >= NR) {
        _mm256_storeu_ps(y, v0);
        _mm256_storeu_ps(y + 8, v1);
    } else {
        float t[NR];
        _mm256_storeu_ps(t, v0);
        _mm256_storeu_ps(t + 8, v1);
        memcpy(y, t, sizeof(float) * (size_t)cols);
    }
}

/* mr (<= EDGE_SIMD_F32_MR, a constant after inlining) rows of a against one panel: sums from 0 in k order, + bias,
 * clamp. The sums are named variables (GCC keeps arrays of vectors indexed in a loop in memory). */
#define SG_ROW(r)                                                                                            \
    if (mr > r) {                                                                                            \
        const __m256 av = _mm256_broadcast_ss(a##r + kk);                                                    \
        s##r##0 = _mm256_fmadd_ps(av, b0, s##r##0);                                                          \
        s##r##1 = _mm256_fmadd_ps(av, b1, s##r##1);                                                          \
    }
#define SG_OUT(r)                                                                                            \
    if (mr > r)                                                                                              \
        f32_store16(y + r * ldy, f32_clamp(_mm256_add_ps(s##r##0, bv0), lo, hi),                             \
                    f32_clamp(_mm256_add_ps(s##r##1, bv1), lo, hi), cols);
/* (a row's k values in nseg runs of len floats, step apart, as z_tile's: a GEMM one run of k) */
static INLINE T_AVX2 void sg_tile_runs(const int32_t mr, const float *a, int64_t lda, const float *pb, const float *bias,
                                       int32_t nseg, int32_t len, int64_t step, __m256 lo, __m256 hi, float *y,
                                       int64_t ldy, int32_t cols) {
    __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
    __m256 s40 = s00, s41 = s00, s50 = s00, s51 = s00;
    const float *a0 = a, *a1 = a0 + (mr > 1 ? lda : 0), *a2 = a1 + (mr > 2 ? lda : 0), *a3 = a2 + (mr > 3 ? lda : 0);
    const float *a4 = a3 + (mr > 4 ? lda : 0), *a5 = a4 + (mr > 5 ? lda : 0);
    int32_t kk, sg;
    for (sg = 0; sg < nseg; sg++) {
        for (kk = 0; kk < len; kk++, pb += NR) {
            const __m256 b0 = _mm256_loadu_ps(pb), b1 = _mm256_loadu_ps(pb + 8);
            SG_ROW(0) SG_ROW(1) SG_ROW(2) SG_ROW(3) SG_ROW(4) SG_ROW(5)
        }
        a0 += step, a1 += step, a2 += step, a3 += step, a4 += step, a5 += step;
    }
    {
        const __m256 bv0 = _mm256_loadu_ps(bias), bv1 = _mm256_loadu_ps(bias + 8);
        SG_OUT(0) SG_OUT(1) SG_OUT(2) SG_OUT(3) SG_OUT(4) SG_OUT(5)
    }
}

#define sg_tile(mr, a, lda, pb, bias, k, lo, hi, y, ldy, cols) \
    sg_tile_runs(mr, a, lda, pb, bias, 1, k, 0, lo, hi, y, ldy, cols)

/* More rows: blocks of them in sg_tile's tiles (edge_simd_f32_scalar.h). */
F32_SGEMM_BLOCKS(sg_blocks, INLINE T_AVX2, __m256, sg_tile)

/* One row against four panels at once (eight independent sums; the same k-order sum per output). */
#define SG_PANEL(j)                                                                                          \
    {                                                                                                        \
        const int32_t left = cols - j * NR;                                                                  \
        if (left > 0)                                                                                        \
            f32_store16(y + j * NR, f32_clamp(_mm256_add_ps(s##j##0, _mm256_loadu_ps(bias + j * NR)), lo, hi),  \
                        f32_clamp(_mm256_add_ps(s##j##1, _mm256_loadu_ps(bias + j * NR + 8)), lo, hi), left);  \
    }
static INLINE T_AVX2 void sg_row4(const float *a, const float *pb, int64_t pstride, const float *bias, int32_t k,
                                  __m256 lo, __m256 hi, float *y, int32_t cols) {
    __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
    const float *p0 = pb, *p1 = pb + pstride, *p2 = p1 + pstride, *p3 = p2 + pstride;
    int32_t kk;
    for (kk = 0; kk < k; kk++) {
        const __m256 av = _mm256_broadcast_ss(a + kk);
        const int64_t o = (int64_t)kk * NR;
        s00 = _mm256_fmadd_ps(av, _mm256_loadu_ps(p0 + o), s00);
        s01 = _mm256_fmadd_ps(av, _mm256_loadu_ps(p0 + o + 8), s01);
        s10 = _mm256_fmadd_ps(av, _mm256_loadu_ps(p1 + o), s10);
        s11 = _mm256_fmadd_ps(av, _mm256_loadu_ps(p1 + o + 8), s11);
        s20 = _mm256_fmadd_ps(av, _mm256_loadu_ps(p2 + o), s20);
        s21 = _mm256_fmadd_ps(av, _mm256_loadu_ps(p2 + o + 8), s21);
        s30 = _mm256_fmadd_ps(av, _mm256_loadu_ps(p3 + o), s30);
        s31 = _mm256_fmadd_ps(av, _mm256_loadu_ps(p3 + o + 8), s31);
    }
    SG_PANEL(0) SG_PANEL(1) SG_PANEL(2) SG_PANEL(3)
}

static T_AVX2 void sgemm_avx2(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, int32_t n0,
                              int32_t n1, float *y, int64_t ldy) {
    const int32_t k = g->k;
    const int64_t pstride = (int64_t)NR * k;
    const __m256 lo = _mm256_set1_ps(g->lo), hi = _mm256_set1_ps(g->hi);
    const float *bias = g->packed, *panels = g->packed + g->npad;
    int32_t c;
    if (m == 1) {
        for (c = n0; c < n1; c += 4 * NR) {
            const float *pb = panels + (int64_t)(c / NR) * pstride;
            if (n1 - c > 2 * NR && g->npad - c >= 4 * NR) { /* three or four needed, four exist (zeros past n) */
                sg_row4(a, pb, pstride, bias + c, k, lo, hi, y + c, n1 - c);
            } else {
                int32_t cc;
                for (cc = c; cc < n1; cc += NR)
                    sg_tile(1, a, lda, panels + (int64_t)(cc / NR) * pstride, bias + cc, k, lo, hi, y + cc, ldy,
                            n1 - cc);
            }
        }
        return;
    }
    sg_blocks(g, a, m, lda, n0, n1, y, ldy, lo, hi);
}

/* ------------------------------------------------------------------------------------- SGEMM, AVX-512 */

/* The AVX-512 level (EDGE_SIMD_X86_AVX512VNNI and up): an 8 x 32 register tile, two packed panels side by side
 * (16 zmm sums held over the whole k loop; per k two panel loads and eight broadcasts of a, folded into the FMAs),
 * the bias, the clamp and a masked store for the last columns. The same FMAs in the same k order as the AVX2
 * tile: the same bits. */
#define T_SG512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")))
#define Z_MR 8

static INLINE T_SG512 __m512 z_clamp(__m512 v, __m512 lo, __m512 hi) {
    return _mm512_min_ps(hi, _mm512_max_ps(lo, v)); /* v second: a NaN passes, as f32_clamp */
}

static INLINE T_SG512 __mmask16 z_cols(int32_t cols) {
    return cols >= NR ? (__mmask16)0xFFFF : (cols <= 0 ? (__mmask16)0 : (__mmask16)((1u << cols) - 1u));
}

#define Z_ROW(r)                                                                                             \
    if (mr > r) {                                                                                            \
        const __m512 av = _mm512_set1_ps(a##r[kk]);                                                          \
        s##r##0 = _mm512_fmadd_ps(av, b0, s##r##0);                                                          \
        if (two) s##r##1 = _mm512_fmadd_ps(av, b1, s##r##1);                                                 \
    }
#define Z_OUT(r)                                                                                             \
    if (mr > r) {                                                                                            \
        _mm512_mask_storeu_ps(y + r * ldy, m0, z_clamp(_mm512_add_ps(s##r##0, bv0), lo, hi));                \
        if (two) _mm512_mask_storeu_ps(y + r * ldy + NR, m1, z_clamp(_mm512_add_ps(s##r##1, bv1), lo, hi));  \
    }
/* mr (<= Z_MR) rows of a against one panel pb0 (two: and the next, pb1): columns [0, cols) of y's 16 or 32. A row's
 * k values lie in nseg runs of len floats, step floats apart (a GEMM: one run of k; a conv's window: its filter
 * rows, each kw * c input floats, without an im2col copy); the panels' values in the same order. */
static INLINE T_SG512 void z_tile(const int32_t mr, const int two, const float *a, int64_t lda, const float *pb0,
                                const float *pb1, const float *bias, int32_t nseg, int32_t len, int64_t step,
                                __m512 lo, __m512 hi, float *y, int64_t ldy, int32_t cols) {
    __m512 s00 = _mm512_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
    __m512 s40 = s00, s41 = s00, s50 = s00, s51 = s00, s60 = s00, s61 = s00, s70 = s00, s71 = s00;
    const float *a0 = a, *a1 = a0 + (mr > 1 ? lda : 0), *a2 = a1 + (mr > 2 ? lda : 0), *a3 = a2 + (mr > 3 ? lda : 0);
    const float *a4 = a3 + (mr > 4 ? lda : 0), *a5 = a4 + (mr > 5 ? lda : 0), *a6 = a5 + (mr > 6 ? lda : 0);
    const float *a7 = a6 + (mr > 7 ? lda : 0);
    int32_t kk, sg;
    for (sg = 0; sg < nseg; sg++) {
        for (kk = 0; kk < len; kk++, pb0 += NR, pb1 += NR) {
            const __m512 b0 = _mm512_loadu_ps(pb0), b1 = two ? _mm512_loadu_ps(pb1) : b0;
            Z_ROW(0) Z_ROW(1) Z_ROW(2) Z_ROW(3) Z_ROW(4) Z_ROW(5) Z_ROW(6) Z_ROW(7)
        }
        a0 += step, a1 += step, a2 += step, a3 += step, a4 += step, a5 += step, a6 += step, a7 += step;
    }
    {
        const __m512 bv0 = _mm512_loadu_ps(bias), bv1 = two ? _mm512_loadu_ps(bias + NR) : bv0;
        const __mmask16 m0 = z_cols(cols), m1 = z_cols(cols - NR);
        Z_OUT(0) Z_OUT(1) Z_OUT(2) Z_OUT(3) Z_OUT(4) Z_OUT(5) Z_OUT(6) Z_OUT(7)
    }
}

#define Z_CALL(mr, two) z_tile(mr, two, ai, lda, pb, pb + pstride, bias + c, nseg, len, step, lo, hi, yi, ldy, cols)
#define Z_TILES(two)                                                                                         \
    switch (mr) {                                                                                            \
    case 8: Z_CALL(8, two); break;                                                                           \
    case 7: Z_CALL(7, two); break;                                                                           \
    case 6: Z_CALL(6, two); break;                                                                           \
    case 5: Z_CALL(5, two); break;                                                                           \
    case 4: Z_CALL(4, two); break;                                                                           \
    case 3: Z_CALL(3, two); break;                                                                           \
    case 2: Z_CALL(2, two); break;                                                                           \
    default: Z_CALL(1, two); break;                                                                          \
    }

/* Rows of the next tile when `left` rows remain: Z_MR, but the last 9 to 11 rows as two tiles of 4 to 6 (8 + 1:
 * 5 + 4), not 8 and a tile of 1 to 3. A tile's sums are chains of k dependent FMAs (4 cycles each): one row (two
 * chains) ran its k steps at a quarter of the FMA ports' rate, so that a 7 x 7 output (49 rows: 6 x 8 + 1) spent
 * about an eighth of its GEMM on its last row. Any split gives the same bits (a row's sums do not depend on it). */
static INLINE int32_t z_tile_rows(int32_t left) {
    return left <= Z_MR ? left : (left < Z_MR + 4 ? (left + 1) / 2 : Z_MR);
}

/* Rows [0, m) of a (stride lda; each row's values in nseg runs of len, step apart: z_tile) against every pair of
 * panels of [n0, n1), their values from pofs on (a pair: 2 x k x 64 bytes, reused from L1 / L2 by every tile). */
static INLINE T_SG512 void z_rows(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, int32_t nseg,
                                  int32_t len, int64_t step, int64_t pofs, int32_t n0, int32_t n1, float *y,
                                  int64_t ldy, __m512 lo, __m512 hi) {
    const int64_t pstride = (int64_t)NR * g->k;
    const float *bias = g->packed, *panels = g->packed + g->npad + pofs;
    const int32_t i1 = m;
    int32_t i, c, mr;
    for (c = n0; c < n1; c += 2 * NR) {
        const float *pb = panels + (int64_t)(c / NR) * pstride;
        const int32_t cols = n1 - c;
        for (i = 0; i < i1; i += mr) {
            const float *ai = a + (int64_t)i * lda;
            float *yi = y + (int64_t)i * ldy + c;
            mr = z_tile_rows(i1 - i);
            if (cols > NR) {
                Z_TILES(1)
            } else {
                Z_TILES(0)
            }
        }
    }
}

/* Rows in blocks that stay in L2 (about 128 KB of a: 8 to 768 rows), each block against every pair of panels of
 * [n0, n1). */
static T_SG512 void sgemm_512(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, int32_t n0,
                            int32_t n1, float *y, int64_t ldy) {
    const int32_t k = g->k;
    const __m512 lo = _mm512_set1_ps(g->lo), hi = _mm512_set1_ps(g->hi);
    int32_t mc = (int32_t)((128 * 1024 / 4) / (k > 0 ? k : 1)), i0;
    mc = mc < Z_MR ? Z_MR : (mc > 768 ? 768 : mc / Z_MR * Z_MR);
    for (i0 = 0; i0 < m; i0 += mc)
        z_rows(g, a + (int64_t)i0 * lda, m - i0 < mc ? m - i0 : mc, lda, 1, k, 0, 0, n0, n1, y + (int64_t)i0 * ldy,
               ldy, lo, hi);
}

/* Rows [0, m) of a (stride lda, each row's values in nseg runs of len, step apart) against every panel of g, the
 * panels' values from pofs on, into y (stride ldy): a conv's GEMM on its input as it lies, one per level. */
typedef void (*sconv_rows_fn)(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, int32_t nseg,
                              int32_t len, int64_t step, int64_t pofs, int32_t n0, int32_t n1, float *y, int64_t ldy);

static T_SG512 void sconv_rows_512(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, int32_t nseg,
                                   int32_t len, int64_t step, int64_t pofs, int32_t n0, int32_t n1, float *y,
                                   int64_t ldy) {
    z_rows(g, a, m, lda, nseg, len, step, pofs, n0, n1, y, ldy, _mm512_set1_ps(g->lo), _mm512_set1_ps(g->hi));
}

#define SG_RUNS(mr) sg_tile_runs(mr, ai, lda, pb, bias + c, nseg, len, step, lo, hi, yi, ldy, n1 - c)
static T_AVX2 void sconv_rows_avx2(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, int32_t nseg,
                                   int32_t len, int64_t step, int64_t pofs, int32_t n0, int32_t n1, float *y,
                                   int64_t ldy) {
    const __m256 lo = _mm256_set1_ps(g->lo), hi = _mm256_set1_ps(g->hi);
    const int64_t pstride = (int64_t)NR * g->k;
    const float *bias = g->packed, *panels = g->packed + g->npad + pofs;
    int32_t c, i;
    for (c = n0; c < n1; c += NR) {
        const float *pb = panels + (int64_t)(c / NR) * pstride;
        for (i = 0; i < m; i += EDGE_SIMD_F32_MR) {
            const float *ai = a + (int64_t)i * lda;
            float *yi = y + (int64_t)i * ldy + c;
            switch (m - i < EDGE_SIMD_F32_MR ? m - i : EDGE_SIMD_F32_MR) {
            case 6: SG_RUNS(6); break;
            case 5: SG_RUNS(5); break;
            case 4: SG_RUNS(4); break;
            case 3: SG_RUNS(3); break;
            case 2: SG_RUNS(2); break;
            default: SG_RUNS(1); break;
            }
        }
    }
}

/* Output pixel (oy, ox)'s window as an im2col row of k floats (taps in the padding 0: they add nothing). */
static void conv_window_row(const edge_simd_dwf_t *p, const float *x, int32_t oy, int32_t ox, float *row) {
    const int32_t iy0 = oy * p->sh - p->pt, ix0 = ox * p->sw - p->pl, c = p->c;
    int32_t fy, fx;
    for (fy = 0; fy < p->kh; fy++) {
        const int32_t iy = iy0 + fy * p->dh;
        for (fx = 0; fx < p->kw; fx++, row += c) {
            const int32_t ix = ix0 + fx * p->dw;
            if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) memset(row, 0, sizeof(float) * (size_t)c);
            else memcpy(row, x + ((int64_t)iy * p->w + ix) * c, sizeof(float) * (size_t)c);
        }
    }
}

/* count output pixels from (oy, ox), each (dy, dx) after the last, through im2col rows, EDGE_SIMD_F32_CONV_ROWS at
 * a time in work; their outputs go ldy floats apart from y. A row's pixels (dx 1) whose taps all lie in the
 * padding, or a column's (dy 1) cut by the left / right edge: tiles of several rows (a pixel alone is a 1-row tile,
 * a chain of k dependent FMAs: at k = 1152 the two edge pixels of a 16-wide row cost more than its 14 others). */
static void sconv_copied(sconv_rows_fn rows, const edge_simd_sgemm_t *g, const edge_simd_dwf_t *p, const float *x,
                         int32_t oy, int32_t ox, int32_t dy, int32_t dx, int32_t count, float *y, int64_t ldy,
                         float *work) {
    const int32_t k = g->k;
    int32_t i, q;
    for (i = 0; i < count; i += EDGE_SIMD_F32_CONV_ROWS) {
        const int32_t m = count - i < EDGE_SIMD_F32_CONV_ROWS ? count - i : EDGE_SIMD_F32_CONV_ROWS;
        for (q = 0; q < m; q++) conv_window_row(p, x, oy + (i + q) * dy, ox + (i + q) * dx, work + (int64_t)q * k);
        rows(g, work, m, k, 1, k, 0, 0, 0, g->n, y + i * ldy, ldy);
    }
}

/* Row oy's pixels [*a, *b) read in place (windows inside the input's columns, some filter row inside its rows)
 * and its filter rows inside the input [*fy0, *fy1). */
static void sconv_span(const edge_simd_dwf_t *p, int32_t oy, int32_t oxa, int32_t oxb, int32_t *a, int32_t *b,
                       int32_t *fy0, int32_t *fy1) {
    f32_taps(oy * p->sh - p->pt, p->dh, p->h, p->kh, fy0, fy1);
    *a = oxa;
    *b = *fy0 < *fy1 ? oxb : oxa; /* every tap in the padding: the im2col rows (zeros) */
}

/* Output rows in bands of at least SCONV_BAND_PIXELS pixels read in place; per band each slice of 2 x NR columns
 * of the packed filter (2 x k x 64 bytes: beyond L1 for a deep window, 147 KB at k = 9 x 128) is read for the whole
 * band, not once per row. A row's pixels whose windows lie inside the input's columns are GEMM rows sw * c floats
 * apart, each row's k values the filter rows inside the input (runs of kw * c floats, dh * w * c apart); the edge
 * columns' pixels through im2col rows, a column at a time. */
#define SCONV_BAND_PIXELS 48
static void sconv_run(sconv_rows_fn rows, const edge_simd_sgemm_t *g, const edge_simd_dwf_t *p, const float *x,
                      int32_t oy0, int32_t oy1, float *y, float *work) {
    const int32_t c = p->c, len = p->kw * c;
    int32_t oy, ob, oe, n0, oxa, oxb, a, b, fy0, fy1, band;
    f32_dw_inner_cols(p, &oxa, &oxb);
    band = oxb > oxa ? (SCONV_BAND_PIXELS + (oxb - oxa) - 1) / (oxb - oxa) : 1;
    for (ob = oy0; ob < oy1; ob = oe) {
        oe = oy1 - ob < band ? oy1 : ob + band;
        for (n0 = 0; n0 < g->n; n0 += 2 * NR)
            for (oy = ob; oy < oe; oy++) {
                const int32_t iy0 = oy * p->sh - p->pt;
                sconv_span(p, oy, oxa, oxb, &a, &b, &fy0, &fy1);
                if (a < b)
                    rows(g, x + ((int64_t)(iy0 + fy0 * p->dh) * p->w + (int64_t)a * p->sw - p->pl) * c, b - a,
                         (int64_t)p->sw * c, fy1 - fy0, len, (int64_t)p->dh * p->w * c, (int64_t)fy0 * len * NR, n0,
                         g->n - n0 < 2 * NR ? g->n : n0 + 2 * NR, y + ((int64_t)oy * p->ow + a) * g->n, g->n);
            }
        for (oy = ob; oy < oe; oy++) { /* a row whose taps all lie in the padding: its inner pixels too */
            sconv_span(p, oy, oxa, oxb, &a, &b, &fy0, &fy1);
            if (a == b)
                sconv_copied(rows, g, p, x, oy, oxa, 0, 1, oxb - oxa, y + ((int64_t)oy * p->ow + oxa) * g->n, g->n,
                             work);
        }
    }
    for (ob = 0; ob < p->ow; ob++)
        if (ob < oxa || ob >= oxb)
            sconv_copied(rows, g, p, x, oy0, ob, 1, 0, oy1 - oy0, y + ((int64_t)oy0 * p->ow + ob) * g->n,
                         (int64_t)p->ow * g->n, work);
}

int32_t edge_simd_sconv(const edge_simd_sgemm_t *g, const edge_simd_dwf_t *p, const float *x, int32_t oy0,
                        int32_t oy1, float *y, float *work) {
    if (g->level < EDGE_SIMD_X86_AVX2 || p->dw != 1) return 0;
    if (y) sconv_run(g->level >= EDGE_SIMD_X86_AVX512VNNI ? sconv_rows_512 : sconv_rows_avx2, g, p, x, oy0, oy1, y, work);
    return 1;
}

void edge_simd_sgemm(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, int32_t n0, int32_t n1,
                     float *y, int64_t ldy) {
    if (m <= 0 || n0 >= n1) return;
    if (g->level >= EDGE_SIMD_X86_AVX512VNNI && m > 1) sgemm_512(g, a, m, lda, n0, n1, y, ldy);
    else sgemm_avx2(g, a, m, lda, n0, n1, y, ldy);
}

/* ------------------------------------------------------------------------------------- depthwise */


/* One output pixel, every channel: taps [fy0, fy1) x [fx0, fx1). */
static INLINE T_AVX2 void dwf_pixel(const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias,
                                    int32_t iy0, int32_t ix0, int32_t fy0, int32_t fy1, int32_t fx0, int32_t fx1,
                                    __m256i tail, __m256 lo, __m256 hi, float *y) {
    const int32_t c = p->c, c8 = c & ~7;
    int32_t ch, fy, fx;
    for (ch = 0; ch < c8; ch += 8) {
        __m256 acc = _mm256_setzero_ps();
        for (fy = fy0; fy < fy1; fy++) {
            const float *xr = x + ((int64_t)(iy0 + fy * p->dh) * p->w + ix0) * c + ch;
            const float *wr = wt + (int64_t)fy * p->kw * c + ch;
            for (fx = fx0; fx < fx1; fx++)
                acc = _mm256_fmadd_ps(_mm256_loadu_ps(xr + (int64_t)fx * p->dw * c), _mm256_loadu_ps(wr + (int64_t)fx * c),
                                      acc);
        }
        if (bias) acc = _mm256_add_ps(acc, _mm256_loadu_ps(bias + ch));
        _mm256_storeu_ps(y + ch, f32_clamp(acc, lo, hi));
    }
    if (c8 < c) {
        __m256 acc = _mm256_setzero_ps();
        for (fy = fy0; fy < fy1; fy++) {
            const float *xr = x + ((int64_t)(iy0 + fy * p->dh) * p->w + ix0) * c + c8;
            const float *wr = wt + (int64_t)fy * p->kw * c + c8;
            for (fx = fx0; fx < fx1; fx++)
                acc = _mm256_fmadd_ps(_mm256_maskload_ps(xr + (int64_t)fx * p->dw * c, tail),
                                      _mm256_maskload_ps(wr + (int64_t)fx * c, tail), acc);
        }
        if (bias) acc = _mm256_add_ps(acc, _mm256_maskload_ps(bias + c8, tail));
        _mm256_maskstore_ps(y + c8, tail, f32_clamp(acc, lo, hi));
    }
}

/* Eight channels at x (all eight, or the first c % 8 by the mask). */
static INLINE T_AVX2 __m256 dwf_load(const float *x, int full, __m256i tail) {
    return full ? _mm256_loadu_ps(x) : _mm256_maskload_ps(x, tail);
}

static INLINE T_AVX2 void dwf_put(float *y, __m256 acc, __m256 bv, int has_bias, int full, __m256i tail, __m256 lo,
                                  __m256 hi) {
    if (has_bias) acc = _mm256_add_ps(acc, bv);
    acc = f32_clamp(acc, lo, hi);
    if (full) _mm256_storeu_ps(y, acc);
    else _mm256_maskstore_ps(y, tail, acc);
}

/* Four output pixels whose windows lie inside the input columns (rows fy0..fy1 inside), eight channels (the first c % 8 when !full) at ch: per tap
 * one weight load for the four pixels (four independent sums, each the same FMAs in the same (fy, fx) order as
 * dwf_pixel). xq: pixel 0's window origin at channel ch; xstep: floats between the pixels. */
static INLINE T_AVX2 void dwf_quad(const edge_simd_dwf_t *p, const float *xq, int64_t xstep, const float *wc,
                                   const float *bc, int32_t fy0, int32_t fy1, const int full, __m256i tail, __m256 lo, __m256 hi, float *yq) {
    const int32_t c = p->c;
    const int64_t xs = (int64_t)p->dw * c, xrow = (int64_t)p->dh * p->w * c;
    const float *x1 = xq + xstep, *x2 = x1 + xstep, *x3 = x2 + xstep;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, bv = a0;
    int32_t fy, fx;
    wc += (int64_t)fy0 * p->kw * c;
    for (fy = fy0; fy < fy1; fy++) {
        const int64_t r = fy * xrow;
        for (fx = 0; fx < p->kw; fx++, wc += c) {
            const int64_t o = r + fx * xs;
            const __m256 wv = dwf_load(wc, full, tail);
            a0 = _mm256_fmadd_ps(dwf_load(xq + o, full, tail), wv, a0);
            a1 = _mm256_fmadd_ps(dwf_load(x1 + o, full, tail), wv, a1);
            a2 = _mm256_fmadd_ps(dwf_load(x2 + o, full, tail), wv, a2);
            a3 = _mm256_fmadd_ps(dwf_load(x3 + o, full, tail), wv, a3);
        }
    }
    if (bc) bv = dwf_load(bc, full, tail);
    dwf_put(yq, a0, bv, bc != 0, full, tail, lo, hi);
    dwf_put(yq + c, a1, bv, bc != 0, full, tail, lo, hi);
    dwf_put(yq + 2 * c, a2, bv, bc != 0, full, tail, lo, hi);
    dwf_put(yq + 3 * c, a3, bv, bc != 0, full, tail, lo, hi);
}

/* Four output pixels of one row with windows cut by the input's left / right edge: the union of their column
 * ranges, each pixel's FMA only where the tap lies inside for it (each sum the same FMAs in the same order as
 * dwf_pixel, the taps in the padding skipped). */
static INLINE T_AVX2 void dwf_quad_edge(const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias,
                                        int32_t iy0, int32_t ox, int32_t fy0, int32_t fy1, const int full, int32_t ch,
                                        __m256i tail, __m256 lo, __m256 hi, float *yq) {
    const int32_t c = p->c;
    const int64_t xs = (int64_t)p->dw * c, xrow = (int64_t)p->dh * p->w * c;
    const float *xp[4];
    int32_t f0[4], f1[4], j, fy, fx, fxa, fxb;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, bv = a0;
    for (j = 0; j < 4; j++) {
        const int32_t ix0 = (ox + j) * p->sw - p->pl;
        f32_taps(ix0, p->dw, p->w, p->kw, &f0[j], &f1[j]);
        xp[j] = x + ((int64_t)iy0 * p->w + ix0) * c + ch;
    }
    fxa = f0[0];
    fxb = f1[0];
    for (j = 1; j < 4; j++) { /* the union of the four ranges */
        if (f0[j] < fxa) fxa = f0[j];
        if (f1[j] > fxb) fxb = f1[j];
    }
    for (fy = fy0; fy < fy1; fy++) {
        const float *wr = wt + (int64_t)fy * p->kw * c + ch;
        for (fx = fxa; fx < fxb; fx++) {
            const int64_t o = fy * xrow + fx * xs;
            const __m256 wv = dwf_load(wr + (int64_t)fx * c, full, tail);
            if (fx >= f0[0] && fx < f1[0]) a0 = _mm256_fmadd_ps(dwf_load(xp[0] + o, full, tail), wv, a0);
            if (fx >= f0[1] && fx < f1[1]) a1 = _mm256_fmadd_ps(dwf_load(xp[1] + o, full, tail), wv, a1);
            if (fx >= f0[2] && fx < f1[2]) a2 = _mm256_fmadd_ps(dwf_load(xp[2] + o, full, tail), wv, a2);
            if (fx >= f0[3] && fx < f1[3]) a3 = _mm256_fmadd_ps(dwf_load(xp[3] + o, full, tail), wv, a3);
        }
    }
    if (bias) bv = dwf_load(bias + ch, full, tail);
    dwf_put(yq + ch, a0, bv, bias != 0, full, tail, lo, hi);
    dwf_put(yq + c + ch, a1, bv, bias != 0, full, tail, lo, hi);
    dwf_put(yq + 2 * c + ch, a2, bv, bias != 0, full, tail, lo, hi);
    dwf_put(yq + 3 * c + ch, a3, bv, bias != 0, full, tail, lo, hi);
}

static T_AVX2 void dwf_avx2(const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias, int32_t oy0,
                            int32_t oy1, float *y) {
    static const int32_t ones[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    const __m256i tail = _mm256_loadu_si256((const __m256i *)(ones + 8 - (p->c & 7)));
    const __m256 lo = _mm256_set1_ps(p->lo), hi = _mm256_set1_ps(p->hi);
    const int32_t c = p->c, c8 = c & ~7;
    const int64_t xstep = (int64_t)p->sw * c;
    int32_t oy, ox, fy0, fy1, fx0, fx1, oxa, oxb, ch;
    f32_dw_inner_cols(p, &oxa, &oxb);
    for (oy = oy0; oy < oy1; oy++) {
        const int32_t iy0 = oy * p->sh - p->pt;
        float *yrow = y + (int64_t)oy * p->ow * c;
        int32_t a = 0, b = 0;
        f32_taps(iy0, p->dh, p->h, p->kh, &fy0, &fy1);
        if (fy0 < fy1) { /* four pixels at a time along [oxa, oxb), the rows [fy0, fy1) of their windows */
            a = oxa;
            b = oxa + (oxb - oxa) / 4 * 4;
        }
        for (ox = 0; ox < p->ow; ox++) {
            const int32_t ix0 = ox * p->sw - p->pl;
            if (ox == a && a < b) {
                for (; ox < b; ox += 4) {
                    const float *xq = x + ((int64_t)iy0 * p->w + ox * p->sw - p->pl) * c;
                    float *yq = yrow + (int64_t)ox * c;
                    for (ch = 0; ch < c8; ch += 8)
                        dwf_quad(p, xq + ch, xstep, wt + ch, bias ? bias + ch : 0, fy0, fy1, 1, tail, lo, hi, yq + ch);
                    if (c8 < c)
                        dwf_quad(p, xq + c8, xstep, wt + c8, bias ? bias + c8 : 0, fy0, fy1, 0, tail, lo, hi, yq + c8);
                }
                ox = b - 1;
                continue;
            }
            if (fy0 < fy1 && ox + 4 <= p->ow && (ox + 4 <= a || ox >= b)) { /* four pixels at an edge */
                for (ch = 0; ch < c8; ch += 8)
                    dwf_quad_edge(p, x, wt, bias, iy0, ox, fy0, fy1, 1, ch, tail, lo, hi, yrow + (int64_t)ox * c);
                if (c8 < c)
                    dwf_quad_edge(p, x, wt, bias, iy0, ox, fy0, fy1, 0, c8, tail, lo, hi, yrow + (int64_t)ox * c);
                ox += 3;
                continue;
            }
            f32_taps(ix0, p->dw, p->w, p->kw, &fx0, &fx1);
            dwf_pixel(p, x, wt, bias, iy0, ix0, fy0, fy1, fx0, fx1, tail, lo, hi, yrow + (int64_t)ox * c);
        }
    }
}

/* AVX-512 (the level 2 CPUs): the interior quads sixteen channels per zmm (the last c % 16 by a mask); the border
 * pixels as in dwf_avx2. Each lane the same FMAs in the same order: the same bits. */
#define T_512 __attribute__((target("avx2,fma,avx512f,avx512vl")))
static INLINE T_512 void dwf_quad512(const edge_simd_dwf_t *p, const float *xq, int64_t xstep, const float *wc,
                                     const float *bc, int32_t fy0, int32_t fy1, __mmask16 m, __m512 lo, __m512 hi,
                                     float *yq) {
    const int32_t c = p->c;
    const int64_t xs = (int64_t)p->dw * c, xrow = (int64_t)p->dh * p->w * c;
    const float *x1 = xq + xstep, *x2 = x1 + xstep, *x3 = x2 + xstep;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, bv = a0;
    int32_t fy, fx;
    wc += (int64_t)fy0 * p->kw * c;
    for (fy = fy0; fy < fy1; fy++) {
        const int64_t r = fy * xrow;
        for (fx = 0; fx < p->kw; fx++, wc += c) {
            const int64_t o = r + fx * xs;
            const __m512 wv = _mm512_maskz_loadu_ps(m, wc);
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, xq + o), wv, a0);
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x1 + o), wv, a1);
            a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x2 + o), wv, a2);
            a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x3 + o), wv, a3);
        }
    }
    if (bc) {
        bv = _mm512_maskz_loadu_ps(m, bc);
        a0 = _mm512_add_ps(a0, bv);
        a1 = _mm512_add_ps(a1, bv);
        a2 = _mm512_add_ps(a2, bv);
        a3 = _mm512_add_ps(a3, bv);
    }
    _mm512_mask_storeu_ps(yq, m, _mm512_min_ps(hi, _mm512_max_ps(lo, a0)));
    _mm512_mask_storeu_ps(yq + c, m, _mm512_min_ps(hi, _mm512_max_ps(lo, a1)));
    _mm512_mask_storeu_ps(yq + 2 * c, m, _mm512_min_ps(hi, _mm512_max_ps(lo, a2)));
    _mm512_mask_storeu_ps(yq + 3 * c, m, _mm512_min_ps(hi, _mm512_max_ps(lo, a3)));
}

static T_512 void dwf_512(const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias, int32_t oy0,
                          int32_t oy1, float *y) {
    static const int32_t ones[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    const __m256i tail = _mm256_loadu_si256((const __m256i *)(ones + 8 - (p->c & 7)));
    const __m256 lo = _mm256_set1_ps(p->lo), hi = _mm256_set1_ps(p->hi);
    const __m512 lo5 = _mm512_set1_ps(p->lo), hi5 = _mm512_set1_ps(p->hi);
    const int32_t c = p->c, c8 = c & ~7, c16 = c & ~15;
    const __mmask16 m16 = (__mmask16)((1u << (c & 15)) - 1u);
    const int64_t xstep = (int64_t)p->sw * c;
    int32_t oy, ox, fy0, fy1, fx0, fx1, oxa, oxb, ch;
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
                    for (ch = 0; ch < c16; ch += 16)
                        dwf_quad512(p, xq + ch, xstep, wt + ch, bias ? bias + ch : 0, fy0, fy1, (__mmask16)0xFFFF, lo5,
                                    hi5, yq + ch);
                    if (c16 < c)
                        dwf_quad512(p, xq + c16, xstep, wt + c16, bias ? bias + c16 : 0, fy0, fy1, m16, lo5, hi5,
                                    yq + c16);
                }
                ox = b - 1;
                continue;
            }
            if (fy0 < fy1 && ox + 4 <= p->ow && (ox + 4 <= a || ox >= b)) {
                for (ch = 0; ch < c8; ch += 8)
                    dwf_quad_edge(p, x, wt, bias, iy0, ox, fy0, fy1, 1, ch, tail, lo, hi, yrow + (int64_t)ox * c);
                if (c8 < c)
                    dwf_quad_edge(p, x, wt, bias, iy0, ox, fy0, fy1, 0, c8, tail, lo, hi, yrow + (int64_t)ox * c);
                ox += 3;
                continue;
            }
            f32_taps(ix0, p->dw, p->w, p->kw, &fx0, &fx1);
            dwf_pixel(p, x, wt, bias, iy0, ix0, fy0, fy1, fx0, fx1, tail, lo, hi, yrow + (int64_t)ox * c);
        }
    }
}

int32_t edge_simd_dw_f32(int32_t level, const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias,
                         int32_t oy0, int32_t oy1, float *y) {
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    if (level >= EDGE_SIMD_X86_AVX512VNNI) dwf_512(p, x, wt, bias, oy0, oy1, y);
    else dwf_avx2(p, x, wt, bias, oy0, oy1, y);
    return 1;
}

/* ------------------------------------------------------------------------------------- elementwise */

static T_AVX2 void prelu_avx2(const float *x, const float *alpha, int32_t astep, float *y, int32_t n) {
    const __m256 zero = _mm256_setzero_ps(), a1 = _mm256_set1_ps(alpha[0]);
    int32_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i), a = astep ? _mm256_loadu_ps(alpha + i) : a1;
        /* v >= 0 (ordered: a NaN takes v * alpha, a NaN, as the portable compare) */
        _mm256_storeu_ps(y + i, _mm256_blendv_ps(_mm256_mul_ps(v, a), v, _mm256_cmp_ps(v, zero, _CMP_GE_OQ)));
    }
    f32_prelu_tail(x, alpha, astep, y, i, n);
}

/* rows x c contiguous floats, alpha c per-channel slopes (BlazeFace / MediaPipe PReLU: c 24..128): the slopes of a
 * 64-channel group held in registers across the rows, the last 16-lane step masked, one call for the tensor (a row
 * call per pixel cost more than the pixel's few vectors) */
#define T_512F __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")))

static T_512F void prelu_rows_512(const float *x, const float *alpha, int32_t c, int64_t rows, float *y) {
    const __m512 zero = _mm512_setzero_ps();
    int32_t c0, k;
    int64_t r;
    for (c0 = 0; c0 < c; c0 += 64) {
        const int32_t w = c - c0 < 64 ? c - c0 : 64, steps = (w + 15) / 16;
        __m512 a[4];
        __mmask16 m[4];
        for (k = 0; k < steps; k++) {
            const int32_t lanes = w - 16 * k < 16 ? w - 16 * k : 16;
            m[k] = (__mmask16)((1u << lanes) - 1u);
            a[k] = _mm512_maskz_loadu_ps(m[k], alpha + c0 + 16 * k);
        }
        for (r = 0; r < rows; r++) {
            const float *xr = x + r * c + c0;
            float *yr = y + r * c + c0;
            for (k = 0; k < steps; k++) {
                const __m512 v = _mm512_maskz_loadu_ps(m[k], xr + 16 * k);
                /* v >= 0 (ordered: a NaN takes v * alpha, a NaN, as the portable compare) */
                const __mmask16 ge = _mm512_cmp_ps_mask(v, zero, _CMP_GE_OQ);
                _mm512_mask_storeu_ps(yr + 16 * k, m[k], _mm512_mask_blend_ps(ge, _mm512_mul_ps(v, a[k]), v));
            }
        }
    }
}

int32_t edge_simd_prelu_f32_rows(int32_t level, const float *x, const float *alpha, int32_t c, int64_t rows, float *y) {
    int64_t r;
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    if (!x) return 1;
    if (level >= EDGE_SIMD_X86_AVX512VNNI) prelu_rows_512(x, alpha, c, rows, y);
    else
        for (r = 0; r < rows; r++) prelu_avx2(x + r * c, alpha, 1, y + r * c, c);
    return 1;
}

int32_t edge_simd_prelu_f32(int32_t level, const float *x, const float *alpha, int32_t astep, float *y, int32_t n) {
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    prelu_avx2(x, alpha, astep, y, n);
    return 1;
}
static INLINE T_AVX2 void binf_avx2(const int32_t kind, const int32_t sa, const int32_t sb, const float *a,
                                    const float *b, float *y, int32_t n, float lo, float hi) {
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi), a1 = _mm256_set1_ps(a[0]),
                 b1 = _mm256_set1_ps(b[0]);
    int32_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 u = sa ? _mm256_loadu_ps(a + i) : a1, v = sb ? _mm256_loadu_ps(b + i) : b1;
        const __m256 r = kind == EDGE_SIMD_F32_ADD ? _mm256_add_ps(u, v)
                         : kind == EDGE_SIMD_F32_SUB ? _mm256_sub_ps(u, v) : _mm256_mul_ps(u, v);
        _mm256_storeu_ps(y + i, f32_clamp(r, vlo, vhi));
    }
    f32_binary_tail(kind, sa, sb, a, b, y, i, n, lo, hi);
}

#define BINF_STEPS(kind)                                                                                     \
    if (sa && sb) binf_avx2(kind, 1, 1, a, b, y, n, f->lo, f->hi);                                           \
    else if (sa) binf_avx2(kind, 1, 0, a, b, y, n, f->lo, f->hi);                                            \
    else if (sb) binf_avx2(kind, 0, 1, a, b, y, n, f->lo, f->hi);                                            \
    else binf_avx2(kind, 0, 0, a, b, y, n, f->lo, f->hi);

static T_AVX2 void binary_f32_avx2(const edge_simd_binf_t *f, const float *a, int32_t sa, const float *b, int32_t sb,
                                   float *y, int32_t n) {
    if (f->kind == EDGE_SIMD_F32_ADD) {
        BINF_STEPS(EDGE_SIMD_F32_ADD)
    } else if (f->kind == EDGE_SIMD_F32_SUB) {
        BINF_STEPS(EDGE_SIMD_F32_SUB)
    } else {
        BINF_STEPS(EDGE_SIMD_F32_MUL)
    }
}

void edge_simd_binary_f32_row(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    binary_f32_avx2((const edge_simd_binf_t *)op, (const float *)a, sa, (const float *)b, sb, (float *)y, n);
}
/* ------------------------------------------------------------------------------------- activations */

/* exp(x) for x in [-87, 88.5]: x = n ln2 + r (Cody-Waite, ln2 in two parts), exp(r) by Cephes' degree-5
 * polynomial, times 2^n built in the exponent field (n >= -126: a normal float). */
static INLINE T_AVX2 __m256 f32_exp(__m256 x) {
    const __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x), p, z;
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    z = _mm256_mul_ps(r, r);
    p = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_add_ps(_mm256_fmadd_ps(p, z, r), _mm256_set1_ps(1.0f));
    return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(
                                _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)));
}

/* The lanes the polynomial path covers (a bit each: no NaN; LOGISTIC: not x < -87, whose exp(x) would be
 * subnormal); the others take the portable formula, lane by lane (the same result at any vector width). */
static INLINE T_AVX2 int act_lanes_ok(const int32_t kind, __m256 v) {
    if (kind == EDGE_SIMD_ACT_LOGISTIC) return _mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_set1_ps(-87.0f), _CMP_GE_OQ));
    return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_ORD_Q));
}

static INLINE T_AVX2 __m256 act_vec(const int32_t kind, __m256 v, __m256 p0, __m256 p1) {
    const __m256 zero = _mm256_setzero_ps();
    if (kind == EDGE_SIMD_ACT_RELU) return _mm256_blendv_ps(v, zero, _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
    if (kind == EDGE_SIMD_ACT_CLAMP) {
        const __m256 r = _mm256_blendv_ps(v, p0, _mm256_cmp_ps(v, p0, _CMP_LT_OQ));
        return _mm256_blendv_ps(r, p1, _mm256_cmp_ps(v, p1, _CMP_GT_OQ));
    }
    if (kind == EDGE_SIMD_ACT_LEAKY) return _mm256_blendv_ps(_mm256_mul_ps(v, p0), v, _mm256_cmp_ps(v, zero, _CMP_GT_OQ));
    if (kind == EDGE_SIMD_ACT_HARD_SWISH) {
        const __m256 six = _mm256_set1_ps(6.0f);
        __m256 t = _mm256_add_ps(v, _mm256_set1_ps(3.0f));
        t = _mm256_blendv_ps(t, zero, _mm256_cmp_ps(t, zero, _CMP_LT_OQ));
        t = _mm256_blendv_ps(t, six, _mm256_cmp_ps(t, six, _CMP_GT_OQ));
        return _mm256_div_ps(_mm256_mul_ps(v, t), six);
    }
    if (kind == EDGE_SIMD_ACT_LOGISTIC) {
        const __m256 one = _mm256_set1_ps(1.0f);
        const __m256 small = _mm256_cmp_ps(v, _mm256_set1_ps(-9.0f), _CMP_LT_OQ);
        const __m256 big = _mm256_cmp_ps(v, _mm256_set1_ps(16.619047164916992188f), _CMP_GT_OQ);
        const __m256 t = _mm256_max_ps(_mm256_blendv_ps(_mm256_sub_ps(zero, v), v, small), _mm256_set1_ps(-87.0f));
        const __m256 e = f32_exp(t);
        return _mm256_blendv_ps(_mm256_blendv_ps(_mm256_div_ps(one, _mm256_add_ps(one, e)), e, small), one, big);
    }
    {   /* TANH of |x|: below 0.625 Cephes' odd polynomial, beyond 1 - 2 / (exp(2|x|) + 1); then x's sign (-0: -0) */
        const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
        const __m256 a = _mm256_andnot_ps(sign, v), z = _mm256_mul_ps(a, a);
        __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(-5.70498872745e-3f), z, _mm256_set1_ps(2.06390887954e-2f)), e, l;
        p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
        p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
        p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
        p = _mm256_fmadd_ps(_mm256_mul_ps(p, z), a, a);
        e = f32_exp(_mm256_add_ps(_mm256_min_ps(a, _mm256_set1_ps(9.5f)), _mm256_min_ps(a, _mm256_set1_ps(9.5f))));
        l = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
        l = _mm256_blendv_ps(l, p, _mm256_cmp_ps(a, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
        return _mm256_or_ps(l, _mm256_and_ps(v, sign));
    }
}

static INLINE T_AVX2 void act_avx2(const int32_t kind, const float *x, float *y, int64_t n, float p0, float p1) {
    const __m256 v0 = _mm256_set1_ps(p0), v1 = _mm256_set1_ps(p1);
    const int check = kind == EDGE_SIMD_ACT_LOGISTIC || kind == EDGE_SIMD_ACT_TANH;
    float in[8], out[8];
    int64_t i;
    int32_t j, lanes;
    for (i = 0; i < n; i += 8) {
        const int32_t m = n - i < 8 ? (int32_t)(n - i) : 8;
        __m256 v;
        if (m == 8) {
            v = _mm256_loadu_ps(x + i);
        } else { /* the tail through a zero-padded vector (the same lanes' arithmetic) */
            memset(in, 0, sizeof in);
            memcpy(in, x + i, sizeof(float) * (size_t)m);
            v = _mm256_loadu_ps(in);
        }
        lanes = check ? act_lanes_ok(kind, v) : 0xFF;
        if (m == 8 && lanes == 0xFF) {
            _mm256_storeu_ps(y + i, act_vec(kind, v, v0, v1));
            continue;
        }
        _mm256_storeu_ps(in, v); /* (y may be x: keep the inputs) */
        _mm256_storeu_ps(out, act_vec(kind, v, v0, v1));
        for (j = 0; j < 8; j++)
            if (!(lanes >> j & 1)) out[j] = edge_simd_act_f32_one(kind, in[j], p0, p1);
        memcpy(y + i, out, sizeof(float) * (size_t)m);
    }
}

static T_AVX2 void act_f32_avx2(int32_t kind, const float *x, float *y, int64_t n, float p0, float p1) {
    switch (kind) {
    case EDGE_SIMD_ACT_RELU: act_avx2(EDGE_SIMD_ACT_RELU, x, y, n, p0, p1); break;
    case EDGE_SIMD_ACT_CLAMP: act_avx2(EDGE_SIMD_ACT_CLAMP, x, y, n, p0, p1); break;
    case EDGE_SIMD_ACT_LEAKY: act_avx2(EDGE_SIMD_ACT_LEAKY, x, y, n, p0, p1); break;
    case EDGE_SIMD_ACT_HARD_SWISH: act_avx2(EDGE_SIMD_ACT_HARD_SWISH, x, y, n, p0, p1); break;
    case EDGE_SIMD_ACT_LOGISTIC: act_avx2(EDGE_SIMD_ACT_LOGISTIC, x, y, n, p0, p1); break;
    default: act_avx2(EDGE_SIMD_ACT_TANH, x, y, n, p0, p1); break;
    }
}

int32_t edge_simd_act_f32(int32_t level, int32_t kind, const float *x, float *y, int64_t n, float p0, float p1) {
    if (level < EDGE_SIMD_X86_AVX2 || kind < EDGE_SIMD_ACT_RELU || kind > EDGE_SIMD_ACT_TANH) return 0;
    if (x && n > 0) act_f32_avx2(kind, x, y, n, p0, p1);
    return 1;
}

/* ------------------------------------------------------------------------------------- pooling */

static INLINE T_AVX2 __m256 poolf_clamp(__m256 v, __m256 lo, __m256 hi) {
    const __m256 r = _mm256_blendv_ps(v, hi, _mm256_cmp_ps(v, hi, _CMP_GT_OQ));
    return _mm256_blendv_ps(r, lo, _mm256_cmp_ps(v, lo, _CMP_LT_OQ));
}

static T_AVX2 void pool_f32_avx2(int32_t average, const float *x, int64_t row, int32_t rows, int32_t cols, int32_t c,
                                 float lo, float hi, float *y) {
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi), count = _mm256_set1_ps((float)(rows * cols));
    const __m256 start = _mm256_set1_ps(average ? 0.0f : -3.40282347e+38f);
    int32_t i = 0, r, j;
    for (; i + 32 <= c; i += 32) {
        __m256 a0 = start, a1 = start, a2 = start, a3 = start;
        for (r = 0; r < rows; r++) {
            for (j = 0; j < cols; j++) {
                const float *p = x + r * row + (int64_t)j * c + i;
                if (average) {
                    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p));
                    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + 8));
                    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + 16));
                    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + 24));
                } else { /* MAXPS(p, a) = p > a ? p : a, the portable compare exactly */
                    a0 = _mm256_max_ps(_mm256_loadu_ps(p), a0);
                    a1 = _mm256_max_ps(_mm256_loadu_ps(p + 8), a1);
                    a2 = _mm256_max_ps(_mm256_loadu_ps(p + 16), a2);
                    a3 = _mm256_max_ps(_mm256_loadu_ps(p + 24), a3);
                }
            }
        }
        if (average) {
            a0 = _mm256_div_ps(a0, count), a1 = _mm256_div_ps(a1, count);
            a2 = _mm256_div_ps(a2, count), a3 = _mm256_div_ps(a3, count);
        }
        _mm256_storeu_ps(y + i, poolf_clamp(a0, vlo, vhi));
        _mm256_storeu_ps(y + i + 8, poolf_clamp(a1, vlo, vhi));
        _mm256_storeu_ps(y + i + 16, poolf_clamp(a2, vlo, vhi));
        _mm256_storeu_ps(y + i + 24, poolf_clamp(a3, vlo, vhi));
    }
    for (; i + 8 <= c; i += 8) {
        __m256 a0 = start;
        for (r = 0; r < rows; r++)
            for (j = 0; j < cols; j++) {
                const __m256 v = _mm256_loadu_ps(x + r * row + (int64_t)j * c + i);
                a0 = average ? _mm256_add_ps(a0, v) : _mm256_max_ps(v, a0);
            }
        if (average) a0 = _mm256_div_ps(a0, count);
        _mm256_storeu_ps(y + i, poolf_clamp(a0, vlo, vhi));
    }
    f32_pool_tail(average, x, row, rows, cols, c, i, lo, hi, y);
}

/* The AVX2 pool's operations lane by lane on 16 lanes, the last step masked: no scalar tail for the channel counts
 * BlazeFace's shortcut pools have (28, 42, 88: a float 2x2 pool read 2.3x XNNPACK's time with the tail). */
static T_512F void pool_f32_512(int32_t average, const float *x, int64_t row, int32_t rows, int32_t cols, int32_t c,
                                float lo, float hi, float *y) {
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi), count = _mm512_set1_ps((float)(rows * cols));
    const __m512 start = _mm512_set1_ps(average ? 0.0f : -3.40282347e+38f);
    int32_t i, r, j;
    for (i = 0; i < c; i += 16) {
        const __mmask16 m = c - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (c - i)) - 1u);
        __m512 a = start;
        for (r = 0; r < rows; r++)
            for (j = 0; j < cols; j++) {
                const __m512 v = _mm512_maskz_loadu_ps(m, x + r * row + (int64_t)j * c + i);
                a = average ? _mm512_add_ps(a, v) : _mm512_max_ps(v, a); /* MAXPS(v, a) = v > a ? v : a */
            }
        if (average) a = _mm512_div_ps(a, count);
        /* v > hi ? hi : v, then v < lo ? lo : that (a NaN passes), as poolf_clamp */
        _mm512_mask_storeu_ps(y + i, m, _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, vlo, _CMP_LT_OQ),
                                                             _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, vhi, _CMP_GT_OQ), a, vhi),
                                                             vlo));
    }
}

int32_t edge_simd_pool_f32(int32_t level, int32_t average, const float *x, int64_t row, int32_t rows, int32_t cols,
                           int32_t c, float lo, float hi, float *y) {
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    if (x && level >= EDGE_SIMD_X86_AVX512VNNI) pool_f32_512(average, x, row, rows, cols, c, lo, hi, y);
    else if (x) pool_f32_avx2(average, x, row, rows, cols, c, lo, hi, y);
    return 1;
}

/* ------------------------------------------------------------------------------------- float16 */


static T_F16C void f16_avx2(const uint16_t *h, float *y, int64_t n) {
    const __m128i expo = _mm_set1_epi16(0x7C00);
    int64_t i, j;
    for (i = 0; i + 8 <= n; i += 8) {
        const __m128i v = _mm_loadu_si128((const __m128i *)(h + i));
        if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(v, expo), expo))) { /* an inf / NaN: in C */
            for (j = i; j < i + 8; j++) y[j] = f16_scalar(h[j]);
        } else {
            _mm256_storeu_ps(y + i, _mm256_cvtph_ps(v));
        }
    }
    for (; i < n; i++) y[i] = f16_scalar(h[i]);
}

int32_t edge_simd_f16_f32(int32_t level, const uint16_t *h, float *y, int64_t n) {
    static int32_t f16c = -1;
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    if (f16c < 0) { /* CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports has no "f16c") */
        unsigned int eax, ebx, ecx = 0, edx;
        f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx >> 29 & 1u) ? 1 : 0;
    }
    if (!f16c) return 0;
    f16_avx2(h, y, n);
    return 1;
}
#endif
