/* edge_simd_dw_x86.c - x86-64 fast paths of issue 26 beside the GEMMs (edge_simd_x86.c, edge_simd_f32_x86.c):
 * SOFTMAX float32, RESIZE_BILINEAR rows (float32, int8), the float32 / int8 sums of MEAN / SUM over H, W, and
 * int8 ADD / SUB rows on 16 lanes (the 8-lane AVX2 rows are edge_simd_x86.c's edge_simd_addsub_q8), float32
 * and int8 DEPTHWISE_CONV_2D 3x3 / 5x5 (stride 1 or 2) with the filter loaded once per channel tile.
 *
 * Each function has an AVX-512 body (level EDGE_SIMD_X86_AVX512VNNI: 16 lanes) and an AVX2 body (level
 * EDGE_SIMD_X86_AVX2: 8 lanes), picked by the level the kernel stored at prepare, and carries its own target
 * attribute (the library is compiled for plain x86-64). The resize and sum paths do the portable kernels'
 * operations lane by lane (no FMA: the target attributes below leave it out, and -std=c99 contracts nothing): the
 * same bits. SOFTMAX computes exp with a polynomial (within 2 ulp) and sums the row in lanes: within 1e-6 of the
 * portable kernel's value relative to the row's largest output.
 */
#include "edge_simd.h"

#if EDGE_SIMD && defined(__x86_64__)
#include <immintrin.h>
#include <math.h>
#include <string.h>
#include "edge_simd_q8_scalar.h"

#define T_AVX2 __attribute__((target("avx2")))
#define T_AVX2_FMA __attribute__((target("avx2,fma")))
#define T_512 __attribute__((target("avx2,avx512f,avx512bw,avx512vl")))
#define T_512_FMA __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl")))
#define T_512_VNNI __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vnni")))
#define INLINE __attribute__((always_inline)) inline

/* ------------------------------------------------------------------------------------- SOFTMAX float32 */

/* exp(t) for t in [-87, 88]: t = n ln2 + r (Cody-Waite, ln2 in two parts, |r| <= ln2 / 2), exp(r) by Cephes'
 * degree-5 polynomial, times 2^n built in the exponent field (n >= -126: a normal float). */
#define EXP_POLY(V, set1, fmadd, fnmadd, mul, add, floor_, cvt, addi, slli, cast)                             \
    do {                                                                                                       \
        const __typeof__(V) n_ = floor_(fmadd(V, set1(1.44269504088896341f), set1(0.5f)));                     \
        __typeof__(V) r_ = fnmadd(n_, set1(0.693359375f), V), p_, z_;                                         \
        r_ = fnmadd(n_, set1(-2.12194440e-4f), r_);                                                            \
        z_ = mul(r_, r_);                                                                                      \
        p_ = fmadd(set1(1.9875691500e-4f), r_, set1(1.3981999507e-3f));                                        \
        p_ = fmadd(p_, r_, set1(8.3334519073e-3f));                                                            \
        p_ = fmadd(p_, r_, set1(4.1665795894e-2f));                                                            \
        p_ = fmadd(p_, r_, set1(1.6666665459e-1f));                                                            \
        p_ = fmadd(p_, r_, set1(5.0000001201e-1f));                                                            \
        p_ = add(fmadd(p_, z_, r_), set1(1.0f));                                                               \
        V = mul(p_, cast(slli(addi(cvt(n_), SET1_EPI32(127)), 23)));                                           \
    } while (0)

static INLINE T_512_FMA __m512 exp512(__m512 t) {
#define SET1_EPI32 _mm512_set1_epi32
#define FLOOR512(v) _mm512_roundscale_ps((v), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
    EXP_POLY(t, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_fnmadd_ps, _mm512_mul_ps, _mm512_add_ps, FLOOR512,
             _mm512_cvtps_epi32, _mm512_add_epi32, _mm512_slli_epi32, _mm512_castsi512_ps);
#undef SET1_EPI32
    return t;
}

static INLINE T_AVX2_FMA __m256 exp256(__m256 t) {
#define SET1_EPI32 _mm256_set1_epi32
    EXP_POLY(t, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_fnmadd_ps, _mm256_mul_ps, _mm256_add_ps, _mm256_floor_ps,
             _mm256_cvtps_epi32, _mm256_add_epi32, _mm256_slli_epi32, _mm256_castsi256_ps);
#undef SET1_EPI32
    return t;
}

/* The three passes of a row (max; t = (x - max) * beta as the portable kernel rounds it, e = exp(t) into y, the
 * sum in lanes; y / sum). Returns 0 without a result when a value is not finite or some t > 88 (a negative beta:
 * exp would overflow): the portable kernel answers those. t < -87 gives 0 (the portable kernel: a subnormal). */
static T_512_FMA int32_t softmax_f32_512(const float *x, int32_t n, float beta, float *y) {
    const __m512 vbeta = _mm512_set1_ps(beta), lo = _mm512_set1_ps(-87.0f), hi = _mm512_set1_ps(88.0f);
    __m512 vmax = _mm512_set1_ps(x[0]), vsum = _mm512_setzero_ps();
    __mmask16 bad = 0;
    float max, sum;
    int32_t i;
    for (i = 0; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        bad |= _mm512_cmp_ps_mask(_mm512_sub_ps(v, v), _mm512_setzero_ps(), _CMP_NEQ_UQ); /* inf or NaN */
        vmax = _mm512_max_ps(vmax, v);
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        const __m512 v = _mm512_mask_loadu_ps(vmax, m, x + i);
        bad |= _mm512_cmp_ps_mask(_mm512_sub_ps(v, v), _mm512_setzero_ps(), _CMP_NEQ_UQ);
        vmax = _mm512_max_ps(vmax, v);
    }
    if (bad) return 0;
    max = _mm512_reduce_max_ps(vmax);
    vmax = _mm512_set1_ps(max);
    for (i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        const __m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vmax), vbeta);
        __m512 e;
        if (_mm512_mask_cmp_ps_mask(m, t, hi, _CMP_GT_OQ)) return 0;
        e = exp512(_mm512_max_ps(t, lo));
        e = _mm512_maskz_mov_ps(_mm512_mask_cmp_ps_mask(m, t, lo, _CMP_GE_OQ), e);
        _mm512_mask_storeu_ps(y + i, m, e);
        vsum = _mm512_add_ps(vsum, e);
    }
    sum = _mm512_reduce_add_ps(vsum);
    vsum = _mm512_set1_ps(sum);
    for (i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(y + i, m, _mm512_div_ps(_mm512_maskz_loadu_ps(m, y + i), vsum));
    }
    return 1;
}

static INLINE T_AVX2 float hmax256(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

static INLINE T_AVX2 float hsum256(__m256 v) {
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    m = _mm_add_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

static T_AVX2_FMA int32_t softmax_f32_avx2(const float *x, int32_t n, float beta, float *y) {
    const __m256 vbeta = _mm256_set1_ps(beta), lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(88.0f);
    __m256 vmax = _mm256_set1_ps(x[0]), vsum = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    float max, sum;
    int32_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_sub_ps(v, v), _mm256_setzero_ps(), _CMP_NEQ_UQ));
        vmax = _mm256_max_ps(vmax, v);
    }
    if (_mm256_movemask_ps(bad)) return 0;
    max = hmax256(vmax);
    for (; i < n; i++) {
        if (x[i] - x[i] != 0.0f) return 0;
        max = x[i] > max ? x[i] : max;
    }
    vmax = _mm256_set1_ps(max);
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax), vbeta);
        __m256 e;
        if (_mm256_movemask_ps(_mm256_cmp_ps(t, hi, _CMP_GT_OQ))) return 0;
        e = _mm256_and_ps(exp256(_mm256_max_ps(t, lo)), _mm256_cmp_ps(t, lo, _CMP_GE_OQ));
        _mm256_storeu_ps(y + i, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    sum = hsum256(vsum);
    for (; i < n; i++) {
        const float t = (x[i] - max) * beta;
        if (t > 88.0f) return 0;
        y[i] = t < -87.0f ? 0.0f : (float)exp((double)t);
        sum += y[i];
    }
    vsum = _mm256_set1_ps(sum);
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_div_ps(_mm256_loadu_ps(y + i), vsum));
    for (; i < n; i++) y[i] = y[i] / sum;
    return 1;
}

int32_t edge_simd_softmax_f32(int32_t level, const float *x, int32_t n, float beta, float *y) {
    if (level < EDGE_SIMD_X86_AVX2 || !(beta - beta == 0.0f)) return 0;
    if (!x) return 1;
    if (n <= 0) return 0;
    return level >= EDGE_SIMD_X86_AVX512VNNI ? softmax_f32_512(x, n, beta, y) : softmax_f32_avx2(x, n, beta, y);
}

/* ------------------------------------------------------------------------------------- RESIZE_BILINEAR */

/* float32: out = ((a00 * wy0) * wx0 + (a10 * wy1) * wx0) + (a01 * wy0) * wx1 + (a11 * wy1) * wx1, left to right,
 * each step rounded (no FMA): the portable kernel's bits. */
static T_512 void resize_row_f32_512(const float *r0, const float *r1, const int32_t *cols, const float *fx,
                                     int32_t out_w, int32_t ch, float wy1, float *y) {
    const float wy0 = 1.0f - wy1;
    const __m512 vy0 = _mm512_set1_ps(wy0), vy1 = _mm512_set1_ps(wy1);
    int32_t ox, c;
    for (ox = 0; ox < out_w; ox++, y += ch) {
        const int32_t c0 = cols[2 * ox] * ch, c1 = cols[2 * ox + 1] * ch;
        const float wx1 = fx[ox], wx0 = 1.0f - wx1;
        const __m512 vx0 = _mm512_set1_ps(wx0), vx1 = _mm512_set1_ps(wx1);
        for (c = 0; c < ch; c += 16) {
            const __mmask16 m = ch - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (ch - c)) - 1u);
            __m512 s = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, r0 + c0 + c), vy0), vx0);
            s = _mm512_add_ps(s, _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, r1 + c0 + c), vy1), vx0));
            s = _mm512_add_ps(s, _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, r0 + c1 + c), vy0), vx1));
            s = _mm512_add_ps(s, _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, r1 + c1 + c), vy1), vx1));
            _mm512_mask_storeu_ps(y + c, m, s);
        }
    }
}

static T_AVX2 void resize_row_f32_avx2(const float *r0, const float *r1, const int32_t *cols, const float *fx,
                                       int32_t out_w, int32_t ch, float wy1, float *y) {
    const float wy0 = 1.0f - wy1;
    const __m256 vy0 = _mm256_set1_ps(wy0), vy1 = _mm256_set1_ps(wy1);
    int32_t ox, c;
    for (ox = 0; ox < out_w; ox++, y += ch) {
        const int32_t c0 = cols[2 * ox] * ch, c1 = cols[2 * ox + 1] * ch;
        const float wx1 = fx[ox], wx0 = 1.0f - wx1;
        const __m256 vx0 = _mm256_set1_ps(wx0), vx1 = _mm256_set1_ps(wx1);
        for (c = 0; c + 8 <= ch; c += 8) {
            __m256 s = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(r0 + c0 + c), vy0), vx0);
            s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(r1 + c0 + c), vy1), vx0));
            s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(r0 + c1 + c), vy0), vx1));
            s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(r1 + c1 + c), vy1), vx1));
            _mm256_storeu_ps(y + c, s);
        }
        for (; c < ch; c++)
            y[c] = r0[c0 + c] * wy0 * wx0 + r1[c0 + c] * wy1 * wx0 + r0[c1 + c] * wy0 * wx1 + r1[c1 + c] * wy1 * wx1;
    }
}

int32_t edge_simd_resize_row_f32(int32_t level, const float *r0, const float *r1, const int32_t *cols, const float *fx,
                                 int32_t out_w, int32_t ch, float wy1, float *y) {
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    if (!y) return 1;
    if (level >= EDGE_SIMD_X86_AVX512VNNI) resize_row_f32_512(r0, r1, cols, fx, out_w, ch, wy1, y);
    else resize_row_f32_avx2(r0, r1, cols, fx, out_w, ch, wy1, y);
    return 1;
}

/* int8: acc = a00 w00 + a10 w10 + a01 w01 + a11 w11 (Q20 weights; exact in int32: |acc| <= 2^27), rounded half
 * away from zero to Q0, saturated to int8: the portable kernel's arithmetic. */
static INLINE int8_t resize_q8_one(int32_t acc) {
    int32_t q = ((acc < 0 ? -acc : acc) + (1 << 19)) >> 20;
    q = acc > 0 ? q : -q;
    return (int8_t)(q > 127 ? 127 : q < -128 ? -128 : q);
}

static T_512 void resize_row_q8_512(const int8_t *r0, const int8_t *r1, const int32_t *cols, const int32_t *fx,
                                    int32_t out_w, int32_t ch, int32_t fy, int8_t *y) {
    const __m512i half = _mm512_set1_epi32(1 << 19), zero = _mm512_setzero_si512();
    int32_t ox, c;
    for (ox = 0; ox < out_w; ox++, y += ch) {
        const int32_t c0 = cols[2 * ox] * ch, c1 = cols[2 * ox + 1] * ch, f = fx[ox];
        const __m512i w00 = _mm512_set1_epi32((1024 - fy) * (1024 - f)), w10 = _mm512_set1_epi32(fy * (1024 - f));
        const __m512i w01 = _mm512_set1_epi32((1024 - fy) * f), w11 = _mm512_set1_epi32(fy * f);
        for (c = 0; c < ch; c += 16) {
            const __mmask16 m = ch - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (ch - c)) - 1u);
            __m512i acc = _mm512_mullo_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, r0 + c0 + c)), w00);
            __m512i q;
            acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, r1 + c0 + c)), w10));
            acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, r0 + c1 + c)), w01));
            acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, r1 + c1 + c)), w11));
            q = _mm512_srli_epi32(_mm512_add_epi32(_mm512_abs_epi32(acc), half), 20);
            q = _mm512_mask_sub_epi32(q, _mm512_cmplt_epi32_mask(acc, zero), zero, q);
            _mm_mask_storeu_epi8(y + c, m, _mm512_cvtsepi32_epi8(q));
        }
    }
}

static T_AVX2 void resize_row_q8_avx2(const int8_t *r0, const int8_t *r1, const int32_t *cols, const int32_t *fx,
                                      int32_t out_w, int32_t ch, int32_t fy, int8_t *y) {
    const __m256i half = _mm256_set1_epi32(1 << 19);
    int32_t ox, c;
    for (ox = 0; ox < out_w; ox++, y += ch) {
        const int32_t c0 = cols[2 * ox] * ch, c1 = cols[2 * ox + 1] * ch, f = fx[ox];
        const int32_t s00 = (1024 - fy) * (1024 - f), s10 = fy * (1024 - f), s01 = (1024 - fy) * f, s11 = fy * f;
        const __m256i w00 = _mm256_set1_epi32(s00), w10 = _mm256_set1_epi32(s10);
        const __m256i w01 = _mm256_set1_epi32(s01), w11 = _mm256_set1_epi32(s11);
        for (c = 0; c + 8 <= ch; c += 8) {
#define LOAD8(p) _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p)))
            __m256i acc = _mm256_mullo_epi32(LOAD8(r0 + c0 + c), w00), q;
            __m128i p16;
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(LOAD8(r1 + c0 + c), w10));
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(LOAD8(r0 + c1 + c), w01));
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(LOAD8(r1 + c1 + c), w11));
#undef LOAD8
            q = _mm256_sign_epi32(_mm256_srli_epi32(_mm256_add_epi32(_mm256_abs_epi32(acc), half), 20), acc);
            p16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            _mm_storel_epi64((__m128i *)(y + c), _mm_packs_epi16(p16, p16));
        }
        for (; c < ch; c++)
            y[c] = resize_q8_one(r0[c0 + c] * s00 + r1[c0 + c] * s10 + r0[c1 + c] * s01 + r1[c1 + c] * s11);
    }
}

int32_t edge_simd_resize_row_q8(int32_t level, const int8_t *r0, const int8_t *r1, const int32_t *cols,
                                const int32_t *fx, int32_t out_w, int32_t ch, int32_t fy, int8_t *y) {
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    if (!y) return 1;
    if (level >= EDGE_SIMD_X86_AVX512VNNI) resize_row_q8_512(r0, r1, cols, fx, out_w, ch, fy, y);
    else resize_row_q8_avx2(r0, r1, cols, fx, out_w, ch, fy, y);
    return 1;
}

/* ------------------------------------------------------------------------------------- MEAN / SUM int8 */

/* sums[i] = sum over the hw pixels p of x[p * stride + i], i < c, in int32 (wrapping, as the portable kernel's
 * uint32 sum: the same value in any order). */
static T_512 void sum_hw_q8_512(const int8_t *x, int64_t hw, int64_t stride, int32_t c, int32_t *sums) {
    int32_t i;
    int64_t p;
    for (i = 0; i < c; i += 64) {
        __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
        const int32_t left = c - i;
        for (p = 0; p < hw; p++) {
            const int8_t *xp = x + p * stride + i;
            if (left >= 64) {
                const __m512i v = _mm512_loadu_si512((const void *)xp);
                s0 = _mm512_add_epi32(s0, _mm512_cvtepi8_epi32(_mm512_castsi512_si128(v)));
                s1 = _mm512_add_epi32(s1, _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v, 1)));
                s2 = _mm512_add_epi32(s2, _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v, 2)));
                s3 = _mm512_add_epi32(s3, _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v, 3)));
            } else {
                const __m512i v = _mm512_maskz_loadu_epi8((__mmask64)(~0ull >> (64 - left)), xp);
                s0 = _mm512_add_epi32(s0, _mm512_cvtepi8_epi32(_mm512_castsi512_si128(v)));
                s1 = _mm512_add_epi32(s1, _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v, 1)));
                s2 = _mm512_add_epi32(s2, _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v, 2)));
                s3 = _mm512_add_epi32(s3, _mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(v, 3)));
            }
        }
        {
            int32_t tmp[64], k;
            _mm512_storeu_si512((void *)tmp, s0);
            _mm512_storeu_si512((void *)(tmp + 16), s1);
            _mm512_storeu_si512((void *)(tmp + 32), s2);
            _mm512_storeu_si512((void *)(tmp + 48), s3);
            for (k = 0; k < 64 && k < left; k++) sums[i + k] = tmp[k];
        }
    }
}

static T_AVX2 void sum_hw_q8_avx2(const int8_t *x, int64_t hw, int64_t stride, int32_t c, int32_t *sums) {
    int32_t i;
    int64_t p;
    for (i = 0; i + 16 <= c; i += 16) {
        __m256i s0 = _mm256_setzero_si256(), s1 = s0;
        for (p = 0; p < hw; p++) {
            const __m128i v = _mm_loadu_si128((const __m128i *)(x + p * stride + i));
            s0 = _mm256_add_epi32(s0, _mm256_cvtepi8_epi32(v));
            s1 = _mm256_add_epi32(s1, _mm256_cvtepi8_epi32(_mm_unpackhi_epi64(v, v)));
        }
        _mm256_storeu_si256((__m256i *)(sums + i), s0);
        _mm256_storeu_si256((__m256i *)(sums + i + 8), s1);
    }
    for (; i < c; i++) {
        uint32_t s = 0;
        for (p = 0; p < hw; p++) s += (uint32_t)(int32_t)x[p * stride + i];
        sums[i] = (int32_t)s;
    }
}

/* float32: sums[i] = ((0 + x[i]) + x[stride + i]) + ..., each channel in pixel order, one rounding per step (no
 * FMA), divided by hw in float32 when mean: the portable kernel's and LiteRT's reference bits. */
static T_512 void sum_hw_f32_512(const float *x, int64_t hw, int64_t stride, int32_t c, int32_t mean, float *sums) {
    const __m512 n = _mm512_set1_ps((float)hw);
    int32_t i;
    int64_t p;
    for (i = 0; i < c; i += 64) {
        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        const int32_t left = c - i;
        const __mmask16 m0 = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1u);
        const __mmask16 m1 = left >= 32 ? 0xFFFF : left <= 16 ? 0 : (__mmask16)((1u << (left - 16)) - 1u);
        const __mmask16 m2 = left >= 48 ? 0xFFFF : left <= 32 ? 0 : (__mmask16)((1u << (left - 32)) - 1u);
        const __mmask16 m3 = left >= 64 ? 0xFFFF : left <= 48 ? 0 : (__mmask16)((1u << (left - 48)) - 1u);
        for (p = 0; p < hw; p++) {
            const float *xp = x + p * stride + i;
            s0 = _mm512_add_ps(s0, _mm512_maskz_loadu_ps(m0, xp));
            s1 = _mm512_add_ps(s1, _mm512_maskz_loadu_ps(m1, xp + 16));
            s2 = _mm512_add_ps(s2, _mm512_maskz_loadu_ps(m2, xp + 32));
            s3 = _mm512_add_ps(s3, _mm512_maskz_loadu_ps(m3, xp + 48));
        }
        if (mean) {
            s0 = _mm512_div_ps(s0, n);
            s1 = _mm512_div_ps(s1, n);
            s2 = _mm512_div_ps(s2, n);
            s3 = _mm512_div_ps(s3, n);
        }
        _mm512_mask_storeu_ps(sums + i, m0, s0);
        _mm512_mask_storeu_ps(sums + i + 16, m1, s1);
        _mm512_mask_storeu_ps(sums + i + 32, m2, s2);
        _mm512_mask_storeu_ps(sums + i + 48, m3, s3);
    }
}

static T_AVX2 void sum_hw_f32_avx2(const float *x, int64_t hw, int64_t stride, int32_t c, int32_t mean, float *sums) {
    const __m256 n = _mm256_set1_ps((float)hw);
    int32_t i;
    int64_t p;
    for (i = 0; i + 32 <= c; i += 32) {
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (p = 0; p < hw; p++) {
            const float *xp = x + p * stride + i;
            s0 = _mm256_add_ps(s0, _mm256_loadu_ps(xp));
            s1 = _mm256_add_ps(s1, _mm256_loadu_ps(xp + 8));
            s2 = _mm256_add_ps(s2, _mm256_loadu_ps(xp + 16));
            s3 = _mm256_add_ps(s3, _mm256_loadu_ps(xp + 24));
        }
        if (mean) {
            s0 = _mm256_div_ps(s0, n);
            s1 = _mm256_div_ps(s1, n);
            s2 = _mm256_div_ps(s2, n);
            s3 = _mm256_div_ps(s3, n);
        }
        _mm256_storeu_ps(sums + i, s0);
        _mm256_storeu_ps(sums + i + 8, s1);
        _mm256_storeu_ps(sums + i + 16, s2);
        _mm256_storeu_ps(sums + i + 24, s3);
    }
    for (; i + 8 <= c; i += 8) {
        __m256 s0 = _mm256_setzero_ps();
        for (p = 0; p < hw; p++) s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + p * stride + i));
        _mm256_storeu_ps(sums + i, mean ? _mm256_div_ps(s0, n) : s0);
    }
    for (; i < c; i++) {
        float s = 0.0f;
        for (p = 0; p < hw; p++) s += x[p * stride + i];
        sums[i] = mean ? s / (float)hw : s;
    }
}

int32_t edge_simd_sum_hw_f32(int32_t level, const float *x, int64_t hw, int64_t stride, int32_t c, int32_t mean,
                             float *sums) {
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    if (!x) return 1;
    if (level >= EDGE_SIMD_X86_AVX512VNNI) sum_hw_f32_512(x, hw, stride, c, mean, sums);
    else sum_hw_f32_avx2(x, hw, stride, c, mean, sums);
    return 1;
}

int32_t edge_simd_sum_hw_q8(int32_t level, const int8_t *x, int64_t hw, int64_t stride, int32_t c, int32_t *sums) {
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    if (!x) return 1;
    if (level >= EDGE_SIMD_X86_AVX512VNNI) sum_hw_q8_512(x, hw, stride, c, sums);
    else sum_hw_q8_avx2(x, hw, stride, c, sums);
    return 1;
}
/* ------------------------------------------------------------------------------------- ADD / SUB int8 */

/* round(x * m / 2^31) halves away from zero for m >= 0 (eb_srdhm): bits 31..62 of x * m + 2^30, lane by lane
 * (VPMULDQ on the even lanes, and on the odd lanes shifted down). */
static INLINE T_512 __m512i srdhm512(__m512i x, __m512i m) {
    const __m512i r30 = _mm512_set1_epi64((int64_t)1 << 30);
    const __m512i pe = _mm512_add_epi64(_mm512_mul_epi32(x, m), r30);
    const __m512i po = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(m, 32)), r30);
    return _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(pe, 31), _mm512_slli_epi64(po, 1));
}

/* edge_rdbpot(srdhm512(x, m), r) (add.c's addsub_in after its shift, eb_rq) with one multiplier m >= 0 and shift
 * r (0..31) for every lane, in one 64-bit arithmetic shift per lane (edge_simd_x86.c's rq512_apply, there per channel): with p = x * m (exact, |p| < 2^62)
 *     q = floor((p + 2^30 + 2^(30 + r) - [p < -2^30] 2^31) / 2^(31 + r))
 * is the double rounding's value (floor(floor(X / a) / b) = floor(X / ab)) for r >= 1; for r = 0 edge_rdbpot
 * changes nothing and q = floor((p + 2^30) / 2^31) (no 2^(30 + r) half, no correction: neg never compares). Two
 * VPMULDQ and two VPSRAQ where the two steps spend eight multiplies and shifts, the port the loop is bound on. An
 * int8 ADD whose larger input scale is exactly half the common one has r = 0 (test_c_simd's every-pair test). */
typedef struct {
    __m512i m, add, neg;
    __m128i shift;
} rqs512_t;

static INLINE T_512 rqs512_t rqs512_prep(int32_t m, int32_t r) {
    rqs512_t c;
    c.m = _mm512_set1_epi32(m);
    c.add = _mm512_set1_epi64(((int64_t)1 << 30) + (r ? (int64_t)1 << (30 + r) : 0));
    c.neg = _mm512_set1_epi64(r ? -((int64_t)1 << 30) : INT64_MIN);
    c.shift = _mm_cvtsi32_si128(31 + r);
    return c;
}

static INLINE T_512 __m512i rqs512(__m512i x, const rqs512_t *c) {
    const __m512i r31 = _mm512_set1_epi64((int64_t)1 << 31);
    const __m512i pe = _mm512_mul_epi32(x, c->m);
    const __m512i po = _mm512_mul_epi32(_mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0xF5), c->m);
    __m512i te = _mm512_add_epi64(pe, c->add), to = _mm512_add_epi64(po, c->add);
    te = _mm512_mask_sub_epi64(te, _mm512_cmplt_epi64_mask(pe, c->neg), te, r31);
    to = _mm512_mask_sub_epi64(to, _mm512_cmplt_epi64_mask(po, c->neg), to, r31);
    te = _mm512_sra_epi64(te, c->shift);
    to = _mm512_sra_epi64(to, c->shift);
    return _mm512_mask_blend_epi32((__mmask16)0xAAAA, te, _mm512_shuffle_epi32(to, (_MM_PERM_ENUM)0xB1));
}

/* An input on the common scale: ((x - zp) << 20) scaled by m (a right shift r only; add.c's addsub_in). */
static INLINE T_512 __m512i addsub_in512(__m512i x, __m512i zp, const rqs512_t *c) {
    return rqs512(_mm512_slli_epi32(_mm512_sub_epi32(x, zp), 20), c);
}

/* The same input step in 32-bit lanes (edge_simd_q8_scalar.h's q8_in_step: its constants broadcast), for an int8
 * input (d = x - zp in -255..255) and m >= 2^11 (a quantized multiplier is >= 2^30). Why it is exact: with
 * p = (d << 20) * m, rqs512's numerator p + 2^30 [+ 2^(30 + r) - [d < 0] 2^31 when r >= 1] is 2^20 times an integer
 * (p < -2^30 is d < 0 there), so with m = mh 2^11 + ml (ml < 2^11)
 *     u = floor((d m + 2^10 - [r >= 1 and d < 0] 2^11) / 2^11) = d mh + floor((d ml + 2^10 - ...) / 2^11)
 *     q = floor((u + 2^(r - 1)) / 2^r)     (r >= 1; q = u for r = 0)
 * (the dropped low 11 bits are below one step of the final division). |d mh| < 2^28, |d ml| < 2^19, u + 2^30 <
 * 2^31: no lane wraps. Two VPMULLD instead of rqs512's two VPMULDQ, two shuffles, 64-bit compares and a blend. */
typedef struct {
    __m512i zp, mh, ml, c0, c1, h;
    __m128i r;
} in512_t;

static INLINE T_512 in512_t in512_prep(const q8_in_step_t *s) {
    in512_t c;
    c.zp = _mm512_set1_epi32(s->zp);
    c.mh = _mm512_set1_epi32(s->mh);
    c.ml = _mm512_set1_epi32(s->ml);
    c.c0 = _mm512_set1_epi32(s->c0);
    c.c1 = _mm512_set1_epi32(s->c1);
    c.h = _mm512_set1_epi32(s->h);
    c.r = _mm_cvtsi32_si128(s->r);
    return c;
}

static INLINE T_512 __m512i in512(__m512i x, const in512_t *c) {
    const __m512i d = _mm512_sub_epi32(x, c->zp);
    __m512i lo = _mm512_add_epi32(_mm512_mullo_epi32(d, c->ml), c->c0);
    lo = _mm512_mask_sub_epi32(lo, _mm512_cmplt_epi32_mask(d, _mm512_setzero_si512()), lo, c->c1);
    const __m512i u = _mm512_add_epi32(_mm512_mullo_epi32(d, c->mh), _mm512_srai_epi32(lo, 11));
    return _mm512_sra_epi32(_mm512_add_epi32(u, c->h), c->r);
}

static T_512 void addsub_q8_512(const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y, int32_t n,
                                const int32_t *p) {
    const __m512i zp1 = _mm512_set1_epi32(p[0]), zp2 = _mm512_set1_epi32(p[1]);
    const rqs512_t q1 = rqs512_prep(p[2], p[3]), q2 = rqs512_prep(p[4], p[5]), qo = rqs512_prep(p[7], p[9]);
    const __m512i off = _mm512_set1_epi32(p[10]), lo = _mm512_set1_epi32(p[11]), hi = _mm512_set1_epi32(p[12]);
    const __m128i left = _mm_cvtsi32_si128(p[8]);
    const int32_t sub = p[6] < 0;
    /* a broadcast operand's scaled value once */
    const __m512i c1 = addsub_in512(_mm512_set1_epi32(a[0]), zp1, &q1);
    const __m512i c2 = addsub_in512(_mm512_set1_epi32(b[0]), zp2, &q2);
    q8_in_step_t s1, s2;
    int32_t i;
    if (sa && sb && q8_in_step(p[0], p[2], p[3], &s1) && q8_in_step(p[1], p[4], p[5], &s2)) {
        /* two rows (every int8 ADD / SUB of the zoo): the 32-bit input steps */
        const in512_t i1 = in512_prep(&s1), i2 = in512_prep(&s2);
        for (i = 0; i < n; i += 16) {
            const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
            const __m512i x1 = in512(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, a + i)), &i1);
            const __m512i x2 = in512(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, b + i)), &i2);
            const __m512i s = sub ? _mm512_sub_epi32(x1, x2) : _mm512_add_epi32(x1, x2);
            const __m512i q = _mm512_add_epi32(rqs512(_mm512_sll_epi32(s, left), &qo), off);
            _mm_mask_storeu_epi8(y + i, k, _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi)));
        }
        return;
    }
    for (i = 0; i < n; i += 16) {
        const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        const __m512i x1 = sa ? addsub_in512(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, a + i)), zp1, &q1) : c1;
        const __m512i x2 = sb ? addsub_in512(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, b + i)), zp2, &q2) : c2;
        const __m512i s = sub ? _mm512_sub_epi32(x1, x2) : _mm512_add_epi32(x1, x2);
        const __m512i q = _mm512_add_epi32(rqs512(_mm512_sll_epi32(s, left), &qo), off);
        _mm_mask_storeu_epi8(y + i, k, _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi)));
    }
}

int32_t edge_simd_addsub_q8_wide(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                                 int32_t n, const int32_t *p) {
    if (level < EDGE_SIMD_X86_AVX512VNNI) return 0;
    if (n > 0) addsub_q8_512(a, sa, b, sb, y, n, p);
    return 1;
}
/* ------------------------------------------------------------------------------------- MUL int8 */

/* edge_simd_mul_q8's lanes on 16 at a time: (x1 - zp1) (x2 - zp2) exact in int32 (|x - zp| <= 255), shifted left
 * (wrapping, as kernels/mul.c), then eb_rq's two roundings in rqs512's one 64-bit shift (its r 0..31). */
static T_512 void mul_q8_512(const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y, int32_t n,
                             const int32_t *p) {
    const __m512i zp1 = _mm512_set1_epi32(p[0]), zp2 = _mm512_set1_epi32(p[1]);
    const rqs512_t qo = rqs512_prep(p[2], p[4]);
    const __m128i left = _mm_cvtsi32_si128(p[3]);
    const __m512i off = _mm512_set1_epi32(p[5]), lo = _mm512_set1_epi32(p[6]), hi = _mm512_set1_epi32(p[7]);
    /* a broadcast operand's value once */
    const __m512i c1 = _mm512_sub_epi32(_mm512_set1_epi32(a[0]), zp1), c2 = _mm512_sub_epi32(_mm512_set1_epi32(b[0]), zp2);
    int32_t i;
    for (i = 0; i < n; i += 16) {
        const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        const __m512i x1 = sa ? _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, a + i)), zp1) : c1;
        const __m512i x2 = sb ? _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, b + i)), zp2) : c2;
        const __m512i prod = _mm512_sll_epi32(_mm512_mullo_epi32(x1, x2), left);
        const __m512i q = _mm512_add_epi32(rqs512(prod, &qo), off);
        _mm_mask_storeu_epi8(y + i, k, _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi)));
    }
}

int32_t edge_simd_mul_q8_wide(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                              int32_t n, const int32_t *p) {
    /* rqs512 takes right shifts 0..31 and a multiplier >= 0; others stay on the 8-lane rows */
    if (level < EDGE_SIMD_X86_AVX512VNNI || p[4] < 0 || p[4] > 31 || p[2] < 0) return 0;
    if (n > 0) mul_q8_512(a, sa, b, sb, y, n, p);
    return 1;
}
/* ------------------------------------------------------------------------------------- int32 sums to int8 */

/* y[i] = clamp(edge_mbqm(sums[i] - offset (wrapping), m, shift) + zp, lo, hi), 16 lanes a step, the last masked:
 * the left shift wraps as edge_mbqm's, its two roundings in rqs512's one 64-bit shift (right 0..31). */
static T_512 void rq_sums_q8_512(const int32_t *sums, int32_t n, int32_t offset, int32_t m, int32_t shift, int32_t zp,
                                 int32_t lo, int32_t hi, int8_t *y) {
    const rqs512_t q = rqs512_prep(m, shift > 0 ? 0 : -shift);
    const __m128i left = _mm_cvtsi32_si128(shift > 0 ? shift : 0);
    const __m512i off = _mm512_set1_epi32(offset), z = _mm512_set1_epi32(zp);
    const __m512i vlo = _mm512_set1_epi32(lo), vhi = _mm512_set1_epi32(hi);
    int32_t i;
    for (i = 0; i < n; i += 16) {
        const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        const __m512i x = _mm512_sll_epi32(_mm512_sub_epi32(_mm512_maskz_loadu_epi32(k, sums + i), off), left);
        const __m512i v = _mm512_add_epi32(rqs512(x, &q), z);
        _mm_mask_storeu_epi8(y + i, k, _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(v, vlo), vhi)));
    }
}

int32_t edge_simd_rq_sums_q8(int32_t level, const int32_t *sums, int32_t n, int32_t offset, int32_t m, int32_t shift,
                             int32_t zp, int32_t lo, int32_t hi, int8_t *y) {
    /* rqs512's range: a multiplier >= 0, a right shift 0..31; a left shift 0..31 (edge_mbqm's 32 and more give 0) */
    if (level < EDGE_SIMD_X86_AVX512VNNI || m < 0 || shift < -31 || shift > 31) return 0;
    if (n > 0) rq_sums_q8_512(sums, n, offset, m, shift, zp, lo, hi, y);
    return 1;
}

/* ------------------------------------------------------------------------------------- DEPTHWISE 3x3 / 5x5 float32 */

/* 3x3 stride 2: the n (1..4) pixels of a row from ox that are not an interior block of four (cut by the input's
 * edges, or the row's last < 4), one channel tile (mask m; x and yrow at its first channel), an accumulator each
 * (pixel by pixel each was a chain of 9 dependent FMAs: a 7x7 input at stride 2 has no interior block at all).
 * Each pixel's taps inside the input in (fy, fx) order from 0, then + bias, then the clamp: the same bits.
 * C microbenchmark (thread CPU time, min of 100 interleaved rounds, 3 repeats, loaded machine) against pixel by
 * pixel: 7x7x960 0.63-0.68, 14x14x576 0.83-0.87, 9x9x256 0.84-0.90, 15x15x24 0.88-0.93. Not used at 5x5 or
 * stride 1: there it cost 1.15-1.3 (28x28x240 5x5 s2, 14x14x576 3x3 s1). Inlined into dw3_tile_s2 (a function of
 * its own: inlined into the loop of all four walkers it slowed the stride-1 rows 1.06-1.24) and the row walkers. */
static INLINE T_512_FMA void dwk_edge(const edge_simd_dwf_t *p, const float *x, const __m512 *w,
                                                      const int32_t K, const int32_t S, __m512 bv, int32_t iy0,
                                                      int32_t fy0, int32_t fy1, int32_t ox, int32_t n, __mmask16 m,
                                                      float *yrow) {
    const int32_t c = p->c;
    const __m512 lo = _mm512_set1_ps(p->lo), hi = _mm512_set1_ps(p->hi);
    const float *xr = x + ((int64_t)iy0 * p->w + ox * S - p->pl) * c;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int32_t f0[4], f1[4], j, fy, fx;
    for (j = 0; j < 4; j++) { /* pixel j's taps [f0, f1) inside the input; none for j >= n */
        const int32_t ix0 = (ox + j) * S - p->pl;
        f0[j] = ix0 < 0 ? -ix0 : 0;
        f1[j] = j >= n ? 0 : ix0 + K > p->w ? p->w - ix0 : K;
    }
    for (fy = fy0; fy < fy1; fy++) {
        const float *r = xr + (int64_t)fy * p->w * c;
        _Pragma("GCC unroll 5")
        for (fx = 0; fx < K; fx++) {
            const __m512 wv = w[fy * K + fx];
            if (fx >= f0[0] && fx < f1[0]) a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r + (int64_t)fx * c), wv, a0);
            if (fx >= f0[1] && fx < f1[1])
                a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r + (int64_t)(S + fx) * c), wv, a1);
            if (fx >= f0[2] && fx < f1[2])
                a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r + (int64_t)(2 * S + fx) * c), wv, a2);
            if (fx >= f0[3] && fx < f1[3])
                a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r + (int64_t)(3 * S + fx) * c), wv, a3);
        }
    }
    yrow += (int64_t)ox * c;
    _mm512_mask_storeu_ps(yrow, m, _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(a0, bv))));
    if (n > 1) _mm512_mask_storeu_ps(yrow + c, m, _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(a1, bv))));
    if (n > 2) _mm512_mask_storeu_ps(yrow + 2 * c, m, _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(a2, bv))));
    if (n > 3) _mm512_mask_storeu_ps(yrow + 3 * c, m, _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(a3, bv))));
}

/* dw3_single_note: a 3x3 border pixel (a window cut by the left / right edge) walks its row's three taps unrolled,
 * each FMA kept when its column is inside (the same taps in the same order: the same bits), instead of a loop over
 * the inside columns (an address multiply and a loop step per tap). C microbenchmark (libedge.so of both dlopened
 * side by side, thread CPU time, min of 50 interleaved rounds), 3x3 s1: 7x7x512 0.96, 8x8x960 0.94, 14x14x256
 * 0.92, 14x14x576 0.93, 16x16x64 0.94, 28x28x192 0.92; at 5x5 the same form cost 1.02-1.04 (kept the loop). */

/* One channel tile (16 channels, mask m) of output row oy, the tile's K x K filter taps w and bias bv loaded once
 * per tile (3x3: held in registers). Interior pixels go four at a time: per filter row, the 3 S + K input columns
 * the four windows cover are loaded once (3x3 stride 1: 6 loads for 12 multiply-adds) and each window's taps are
 * added in (fy, fx) order, a fused multiply-add each from 0, then + bias, then the clamp: edge_simd_dw_f32's
 * operations in its order (the same bits). Border pixels add the taps inside the input, in the same order. */
#define DWK_ROW(K, S)                                                                                            \
    static INLINE T_512_FMA void dw##K##_row_s##S(const edge_simd_dwf_t *p, const float *x, const __m512 *w,       \
                                                 __m512 bv, int32_t oy, __mmask16 m, float *yrow) {             \
        const int32_t c = p->c, iy0 = oy * S - p->pt;                                                            \
        const __m512 lo = _mm512_set1_ps(p->lo), hi = _mm512_set1_ps(p->hi);                                    \
        int32_t fy0, fy1, ox = 0, fy, fx, j;                                                                     \
        fy0 = iy0 < 0 ? -iy0 : 0;                                                                                \
        fy1 = iy0 + K > p->h ? p->h - iy0 : K;                                                                   \
        if (fy1 < fy0) fy1 = fy0;                                                                                \
        while (ox < p->ow) {                                                                                     \
            const int32_t ix0 = ox * S - p->pl;                                                                  \
            if (ix0 >= 0 && ox + 4 <= p->ow && ix0 + 3 * S + K - 1 < p->w) {                                     \
                __m512 acc[4];                                                                                   \
                _Pragma("GCC unroll 4")                                                                          \
                for (j = 0; j < 4; j++) acc[j] = _mm512_setzero_ps();                                            \
                for (fy = fy0; fy < fy1; fy++) {                                                                 \
                    const float *r = x + ((int64_t)(iy0 + fy) * p->w + ix0) * c;                                 \
                    const __m512 *wr = w + fy * K;                                                               \
                    __m512 col[3 * S + K];                                                                       \
                    int32_t k;                                                                                   \
                    _Pragma("GCC unroll 16")                                                                     \
                    for (k = 0; k < 3 * S + K; k++) col[k] = _mm512_maskz_loadu_ps(m, r + (int64_t)k * c);       \
                    _Pragma("GCC unroll 4")                                                                      \
                    for (j = 0; j < 4; j++)                                                                      \
                        _Pragma("GCC unroll 5")                                                                  \
                        for (fx = 0; fx < K; fx++) acc[j] = _mm512_fmadd_ps(col[j * S + fx], wr[fx], acc[j]);    \
                }                                                                                                \
                _Pragma("GCC unroll 4")                                                                          \
                for (j = 0; j < 4; j++)                                                                          \
                    _mm512_mask_storeu_ps(yrow + (int64_t)(ox + j) * c, m,                                       \
                                          _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(acc[j], bv))));     \
                ox += 4;                                                                                         \
                continue;                                                                                        \
            }                                                                                                    \
            if (K == 3 && S == 2) {                                                                              \
                const int32_t n = p->ow - ox < 4 ? p->ow - ox : 4;                                               \
                dwk_edge(p, x, w, K, S, bv, iy0, fy0, fy1, ox, n, m, yrow);                                      \
                ox += n;                                                                                         \
                continue;                                                                                        \
            }                                                                                                    \
            {                                                                                                    \
                const int32_t fx0 = ix0 < 0 ? -ix0 : 0, fx1 = ix0 + K > p->w ? p->w - ix0 : K;                   \
                __m512 a = _mm512_setzero_ps();                                                                  \
                for (fy = fy0; fy < fy1; fy++) {                                                                 \
                    const float *r = x + ((int64_t)(iy0 + fy) * p->w + ix0) * c;                                 \
                    if (K == 3) { /* the row's three taps unrolled, each kept when inside (dw3_single_note) */     \
                        _Pragma("GCC unroll 3")                                                                  \
                        for (fx = 0; fx < K; fx++)                                                               \
                            if (fx >= fx0 && fx < fx1)                                                           \
                                a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r + (int64_t)fx * c), w[fy * K + fx], a); \
                    } else {                                                                                     \
                        for (fx = fx0; fx < fx1; fx++)                                                           \
                            a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r + (int64_t)fx * c), w[fy * K + fx], a); \
                    }                                                                                            \
                }                                                                                                \
                _mm512_mask_storeu_ps(yrow + (int64_t)ox * c, m, _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(a, bv)))); \
            }                                                                                                    \
            ox++;                                                                                                \
        }                                                                                                        \
    }
DWK_ROW(3, 1)
DWK_ROW(3, 2)
DWK_ROW(5, 1)
DWK_ROW(5, 2)

/* 3x3 stride 2 or 1 on an input above 1 MB, one output row: blocks of four pixels with every channel tile inside
 * (dwk_tile per row and tile ran the row once per 16-channel tile: each pass read one 64-byte line of every pixel,
 * the K input rows (3 x 112 x 96 floats: 129 KB) left L1 between passes, and all of a block's 3 S + K column loads
 * came from L2 or memory). Here a pixel's lines are read back to back and the tile's taps come from L1 (9 x c
 * floats). Each lane the same FMAs in the same (fy, fx) order from 0, then + bias, then the clamp as
 * dw##K##_row_s##S: the same bits. Stride 1 too (C microbenchmark against dwk_tile per row, libedge.so of both
 * dlopened side by side, 64-byte aligned buffers, thread CPU time, min of 30-40 interleaved rounds: 56x56x96 0.89,
 * 56x56x128 0.86, 80x80x128 0.85, 112x112x64 0.85, 112x112x32 0.88-0.93, 28x28x384 0.87, 40x40x192 0.96, 56x56x160
 * 0.97, 56x56x144 1.02-1.03). Not 5x5: 48x48x128 s1 1.08, 48x48x256 s1 1.19, 56x56x192 s2 1.11 (96x96x64 s2 0.82). */
#define DWK_ROWC(K, S)                                                                                           \
    static INLINE T_512_FMA void dw##K##_rowc_s##S(const edge_simd_dwf_t *p, const float *x, const float *wt,     \
                                                  const float *bias, int32_t oy, float *yrow) {                 \
        const int32_t c = p->c, iy0 = oy * S - p->pt;                                                            \
        const __m512 lo = _mm512_set1_ps(p->lo), hi = _mm512_set1_ps(p->hi);                                    \
        int32_t fy0, fy1, ox, fy, fx, j, ch;                                                                     \
        fy0 = iy0 < 0 ? -iy0 : 0;                                                                                \
        fy1 = iy0 + K > p->h ? p->h - iy0 : K;                                                                   \
        if (fy1 < fy0) fy1 = fy0;                                                                                \
        for (ox = 0; ox < p->ow;) {                                                                              \
            const int32_t ix0 = ox * S - p->pl;                                                                  \
            const int quad = ix0 >= 0 && ox + 4 <= p->ow && ix0 + 3 * S + K - 1 < p->w;                          \
            const int32_t n = quad || p->ow - ox >= 4 ? 4 : p->ow - ox;                                          \
            const float *xp = x + ((int64_t)iy0 * p->w + ix0) * c;                                               \
            float *yp = yrow + (int64_t)ox * c;                                                                  \
            for (ch = 0; ch < c; ch += 16) {                                                                     \
                const __mmask16 m = c - ch >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (c - ch)) - 1u);        \
                const __m512 bv = bias ? _mm512_maskz_loadu_ps(m, bias + ch) : _mm512_setzero_ps();              \
                if (quad) {                                                                                      \
                    __m512 acc[4];                                                                               \
                    _Pragma("GCC unroll 4")                                                                      \
                    for (j = 0; j < 4; j++) acc[j] = _mm512_setzero_ps();                                        \
                    for (fy = fy0; fy < fy1; fy++) {                                                             \
                        const float *r = xp + (int64_t)fy * p->w * c + ch;                                       \
                        const float *wr = wt + (int64_t)fy * K * c + ch;                                         \
                        __m512 col[3 * S + K], wv[K];                                                            \
                        int32_t k;                                                                               \
                        _Pragma("GCC unroll 5")                                                                  \
                        for (fx = 0; fx < K; fx++) wv[fx] = _mm512_maskz_loadu_ps(m, wr + (int64_t)fx * c);      \
                        _Pragma("GCC unroll 16")                                                                 \
                        for (k = 0; k < 3 * S + K; k++) col[k] = _mm512_maskz_loadu_ps(m, r + (int64_t)k * c);   \
                        _Pragma("GCC unroll 4")                                                                  \
                        for (j = 0; j < 4; j++)                                                                  \
                            _Pragma("GCC unroll 5")                                                              \
                            for (fx = 0; fx < K; fx++) acc[j] = _mm512_fmadd_ps(col[j * S + fx], wv[fx], acc[j]); \
                    }                                                                                            \
                    _Pragma("GCC unroll 4")                                                                      \
                    for (j = 0; j < 4; j++)                                                                      \
                        _mm512_mask_storeu_ps(yp + (int64_t)j * c + ch, m,                                       \
                                              _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(acc[j], bv)))); \
                } else {                                                                                         \
                    __m512 w9[K * K];                                                                            \
                    _Pragma("GCC unroll 25")                                                                     \
                    for (j = 0; j < K * K; j++) w9[j] = _mm512_maskz_loadu_ps(m, wt + (int64_t)j * c + ch);      \
                    dwk_edge(p, x + ch, w9, K, S, bv, iy0, fy0, fy1, ox, n, m, yrow + ch);                       \
                }                                                                                                \
            }                                                                                                    \
            ox += n;                                                                                             \
        }                                                                                                        \
    }
DWK_ROWC(3, 2)
DWK_ROWC(3, 1)

/* 3x3 stride 2, output rows [oy0, oy1) of channels [ch, ch + 16) (mask m): dwk_tile's work in a function of its
 * own, so that dwk_edge inlines into these rows (the taps stay in registers) without changing the registers of the
 * other walkers: inlined into the one loop of all four, it made 3x3 s2 0.90-0.92 but 3x3 s1 1.02-1.10. Here (C
 * microbenchmark, libedge.so of both dlopened side by side, min of 80 interleaved rounds, load ~9) 3x3 s2
 * 14x14x576 0.92-0.94, 7x7x960 0.89-0.90, 28x28x192 0.98-1.06, 112x112x96 0.98-0.99; 3x3 s1 and 5x5 (unchanged
 * code) 0.97-1.05. */
static __attribute__((noinline)) T_512_FMA void dw3_tile_s2(const edge_simd_dwf_t *p, const float *x,
                                                             const float *wt, const float *bias, int32_t ch,
                                                             int32_t oy0, int32_t oy1, float *y) {
    const int32_t c = p->c;
    const __mmask16 m = c - ch >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (c - ch)) - 1u);
    const __m512 bv = bias ? _mm512_maskz_loadu_ps(m, bias + ch) : _mm512_setzero_ps();
    __m512 w[9];
    int32_t oy, t;
    for (t = 0; t < 9; t++) w[t] = _mm512_maskz_loadu_ps(m, wt + (int64_t)t * c + ch);
    for (oy = oy0; oy < oy1; oy++) dw3_row_s2(p, x + ch, w, bv, oy, m, y + (int64_t)oy * p->ow * c + ch);
}

/* Output rows [oy0, oy1) of channels [ch, ch + 16) (mask m): the tile's taps and bias loaded once. */

static INLINE T_512_FMA void dwk_tile(const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias,
                                      int32_t ch, int32_t oy0, int32_t oy1, float *y) {
    const int32_t c = p->c, taps = p->kh * p->kw;
    const __mmask16 m = c - ch >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (c - ch)) - 1u);
    const __m512 bv = bias ? _mm512_maskz_loadu_ps(m, bias + ch) : _mm512_setzero_ps();
    __m512 w[25];
    int32_t oy, t;
    if (p->kh == 3 && p->sw == 2) {
        dw3_tile_s2(p, x, wt, bias, ch, oy0, oy1, y);
        return;
    }
    for (t = 0; t < taps; t++) w[t] = _mm512_maskz_loadu_ps(m, wt + (int64_t)t * c + ch);
    for (oy = oy0; oy < oy1; oy++) {
        float *yrow = y + (int64_t)oy * p->ow * c + ch;
        if (p->kh == 3) dw3_row_s1(p, x + ch, w, bv, oy, m, yrow);
        else if (p->sw == 1) dw5_row_s1(p, x + ch, w, bv, oy, m, yrow);
        else dw5_row_s2(p, x + ch, w, bv, oy, m, yrow);
    }
}

/* An input within 1 MB (L2 holds 1.25 MB): channel tiles outer, each tile's taps loaded once for all rows.
 * A larger one at 3x3: dw3_rowc_s1 / dw3_rowc_s2 (stride 1: see DWK_ROWC; stride 2: C microbenchmark, thread CPU
 * time, min of 80 interleaved rounds, loaded machine: 112x112x96 0.67-0.91 of dwk_tile per row, 64x64x96 0.75-0.90, 112x112x32 0.75-0.86, 56x56x144 0.94-0.96, 56x56x192 0.75-0.90, 28x28x576 0.84-0.86 (blocks of 96 - 144
 * channels there: 0.79-0.96, 0.89-0.90);
 * on inputs within 1 MB it cost 1.02-1.2: there the K rows stay in L1 or the taps in registers win). Otherwise
 * output rows outer (each row's K input rows stay in L1 / L2 while every tile reads them; tiles outer
 * streamed the whole input from L3 once per tile: a 64x64x96 3x3 s2 layer 121 -> 98 us, 56x56x144 140 -> 107 us),
 * the taps reloaded per row and tile (on layers that fit, that reload cost 15-25%). */
static T_512_FMA void dwk_512(const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias,
                             int32_t oy0, int32_t oy1, float *y) {
    const int32_t c = p->c;
    int32_t ch, oy;
    if ((int64_t)p->h * p->w * c * (int64_t)sizeof(float) <= 1024 * 1024) {
        for (ch = 0; ch < c; ch += 16) dwk_tile(p, x, wt, bias, ch, oy0, oy1, y);
        return;
    }
    if (p->kh == 3) {
        for (oy = oy0; oy < oy1; oy++)
            if (p->sw == 2) dw3_rowc_s2(p, x, wt, bias, oy, y + (int64_t)oy * p->ow * c);
            else dw3_rowc_s1(p, x, wt, bias, oy, y + (int64_t)oy * p->ow * c);
        return;
    }
    for (oy = oy0; oy < oy1; oy++)
        for (ch = 0; ch < c; ch += 16) dwk_tile(p, x, wt, bias, ch, oy, oy + 1, y);
}

int32_t edge_simd_dw_3x3_5x5_f32(int32_t level, const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias,
                            int32_t oy0, int32_t oy1, float *y) {
    if (level < EDGE_SIMD_X86_AVX512VNNI || (p->kh != 3 && p->kh != 5) || p->kw != p->kh || p->dh != 1 || p->dw != 1 ||
        p->sh != p->sw || (p->sw != 1 && p->sw != 2))
        return 0;
    if (y) dwk_512(p, x, wt, bias, oy0, oy1, y);
    return 1;
}
/* ------------------------------------------------------------------------------------- DEPTHWISE 3x3 / 5x5 int8 */

/* edge_rq_apply on 16 lanes (edge_simd_x86.c's arithmetic): h = bits 31..62 of acc * mul + 2^30, h += h >> 31,
 * y = zp + (h >> rs) + ((h >> (rs - 1)) & 1), clamped to [lo, hi]. */
static INLINE T_512 __m512i dwq_requant(__m512i acc, __m512i mul, __m512i rs, __m512i rs1, __m512i zp, __m512i lo,
                                        __m512i hi) {
    __m512i h = srdhm512(acc, mul), r;
    h = _mm512_add_epi32(h, _mm512_srai_epi32(h, 31));
    r = _mm512_add_epi32(_mm512_srav_epi32(h, rs), _mm512_and_si512(_mm512_srav_epi32(h, rs1), _mm512_set1_epi32(1)));
    return _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(r, zp), lo), hi);
}

typedef struct {
    __m512i bias, bias_all, off, mul, rs, rs1, zp, lo, hi; /* bias_all: bias + off * (the sum of all K x K taps) */
} dwq_tile_t;

/* One channel tile (16 channels, mask m) of output row oy: acc = bias + sum over the taps inside the input of
 * (x + off) * w in int32 (wrapping: any order gives the portable kernel's sums), requantized. Rows whose window
 * lies inside the input vertically take their interior pixels four at a time from bias_all, sharing the 3 S + K
 * input columns of a filter row, two taps a VPDPWSSD: column k's values as int32 lanes X (sign-extended) and
 * X << 16, a pair of neighbouring columns one blend of int16 halves (x_k low, x_k+1 high) against wp's pair of
 * taps, a filter row's odd last tap X itself against its tap with a zero high half (x's sign half times 0): one
 * multiply-add op for two taps where VPMULLD (two ops) and VPADDD took three for one. Other pixels add
 * (x + off) * w tap by tap. */
#define DWQ_ROW(K, S)                                                                                            \
    static INLINE T_512_VNNI void dwq##K##_row_s##S(const edge_simd_dwf_t *p, const int8_t *x, const __m512i *w,  \
                                                   const __m512i *wp, const dwq_tile_t *q, int32_t oy,          \
                                                   __mmask16 m, int8_t *yrow) {                                  \
        const int32_t c = p->c, iy0 = oy * S - p->pt;                                                            \
        int32_t fy0, fy1, ox = 0, fy, fx, j;                                                                     \
        fy0 = iy0 < 0 ? -iy0 : 0;                                                                                \
        fy1 = iy0 + K > p->h ? p->h - iy0 : K;                                                                   \
        if (fy1 < fy0) fy1 = fy0;                                                                                \
        while (ox < p->ow) {                                                                                     \
            const int32_t ix0 = ox * S - p->pl;                                                                  \
            if (fy0 == 0 && fy1 == K && ix0 >= 0 && ox + 4 <= p->ow && ix0 + 3 * S + K - 1 < p->w) {             \
                __m512i acc[4];                                                                                  \
                _Pragma("GCC unroll 4")                                                                          \
                for (j = 0; j < 4; j++) acc[j] = q->bias_all;                                                    \
                for (fy = 0; fy < K; fy++) {                                                                     \
                    const int8_t *r = x + ((int64_t)(iy0 + fy) * p->w + ix0) * c;                                \
                    const __m512i *wr = wp + fy * 3;                                                             \
                    __m512i col[3 * S + K], pair[3 * S + K];                                                     \
                    int32_t k;                                                                                   \
                    _Pragma("GCC unroll 16")                                                                     \
                    for (k = 0; k < 3 * S + K; k++)                                                              \
                        col[k] = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, r + (int64_t)k * c));              \
                    _Pragma("GCC unroll 16")                                                                     \
                    for (k = 0; k + 1 < 3 * S + K; k++) /* x_k low, x_k+1 high (unused ones dropped) */          \
                        pair[k] = _mm512_mask_blend_epi16((__mmask32)0xAAAAAAAAu, col[k],                        \
                                                          _mm512_slli_epi32(col[k + 1], 16));                    \
                    _Pragma("GCC unroll 4")                                                                      \
                    for (j = 0; j < 4; j++) {                                                                    \
                        _Pragma("GCC unroll 2")                                                                  \
                        for (fx = 0; fx + 1 < K; fx += 2)                                                        \
                            acc[j] = _mm512_dpwssd_epi32(acc[j], pair[j * S + fx], wr[fx / 2]);                  \
                        acc[j] = _mm512_dpwssd_epi32(acc[j], col[j * S + K - 1], wr[K / 2]);                     \
                    }                                                                                            \
                }                                                                                                \
                _Pragma("GCC unroll 4")                                                                          \
                for (j = 0; j < 4; j++)                                                                          \
                    _mm_mask_storeu_epi8(yrow + (int64_t)(ox + j) * c, m,                                        \
                                         _mm512_cvtepi32_epi8(dwq_requant(acc[j], q->mul, q->rs, q->rs1, q->zp,   \
                                                                          q->lo, q->hi)));                       \
                ox += 4;                                                                                         \
                continue;                                                                                        \
            }                                                                                                    \
            {                                                                                                    \
                const int32_t fx0 = ix0 < 0 ? -ix0 : 0, fx1 = ix0 + K > p->w ? p->w - ix0 : K;                   \
                __m512i a = q->bias;                                                                             \
                for (fy = fy0; fy < fy1; fy++)                                                                   \
                    for (fx = fx0; fx < fx1; fx++) {                                                             \
                        const __m512i v = _mm512_cvtepi8_epi32(                                                  \
                            _mm_maskz_loadu_epi8(m, x + ((int64_t)(iy0 + fy) * p->w + ix0 + fx) * c));           \
                        a = _mm512_add_epi32(a, _mm512_mullo_epi32(_mm512_add_epi32(v, q->off), w[fy * K + fx]));  \
                    }                                                                                            \
                _mm_mask_storeu_epi8(yrow + (int64_t)ox * c, m,                                                  \
                                     _mm512_cvtepi32_epi8(dwq_requant(a, q->mul, q->rs, q->rs1, q->zp, q->lo, q->hi))); \
            }                                                                                                    \
            ox++;                                                                                                \
        }                                                                                                        \
    }
DWQ_ROW(3, 1)
DWQ_ROW(3, 2)
DWQ_ROW(5, 1)
DWQ_ROW(5, 2)

static T_512_VNNI void dwq_512(const edge_simd_dwf_t *p, const int8_t *x, const int16_t *wt, const int32_t *bias,
                          const int32_t *mul, const int32_t *rs, int32_t input_offset, int32_t zp, int32_t lo,
                          int32_t hi, int32_t oy0, int32_t oy1, int8_t *y) {
    const int32_t c = p->c, taps = p->kh * p->kw;
    int32_t ch, oy, t;
    dwq_tile_t q;
    q.off = _mm512_set1_epi32(input_offset);
    q.zp = _mm512_set1_epi32(zp);
    q.lo = _mm512_set1_epi32(lo);
    q.hi = _mm512_set1_epi32(hi);
    for (ch = 0; ch < c; ch += 16) {
        const __mmask16 m = c - ch >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (c - ch)) - 1u);
        __m512i w[25], wp[15], sum = _mm512_setzero_si512();
        int32_t fy, fx;
        for (t = 0; t < taps; t++) {
            w[t] = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(m, wt + (int64_t)t * c + ch));
            sum = _mm512_add_epi32(sum, w[t]);
        }
        /* the interior's VPDPWSSD operands: per filter row its taps in pairs (int16 halves: tap fx low, fx + 1
         * high), then its last tap with a zero high half */
        for (fy = 0; fy < p->kh; fy++) {
            const __m512i *wr = w + fy * p->kw;
            for (fx = 0; fx + 1 < p->kw; fx += 2)
                wp[fy * 3 + fx / 2] =
                    _mm512_mask_blend_epi16((__mmask32)0xAAAAAAAAu, wr[fx], _mm512_slli_epi32(wr[fx + 1], 16));
            wp[fy * 3 + p->kw / 2] = _mm512_and_si512(wr[p->kw - 1], _mm512_set1_epi32(0xFFFF));
        }
        q.bias = _mm512_maskz_loadu_epi32(m, bias + ch);
        q.bias_all = _mm512_add_epi32(q.bias, _mm512_mullo_epi32(q.off, sum));
        q.mul = _mm512_maskz_loadu_epi32(m, mul + ch);
        /* lanes past c: any valid shift (their results are not stored) */
        q.rs = _mm512_mask_loadu_epi32(_mm512_set1_epi32(2), m, rs + ch);
        q.rs1 = _mm512_sub_epi32(q.rs, _mm512_set1_epi32(1));
        for (oy = oy0; oy < oy1; oy++) {
            int8_t *yrow = y + (int64_t)oy * p->ow * c + ch;
            if (p->kh == 3 && p->sw == 1) dwq3_row_s1(p, x + ch, w, wp, &q, oy, m, yrow);
            else if (p->kh == 3) dwq3_row_s2(p, x + ch, w, wp, &q, oy, m, yrow);
            else if (p->sw == 1) dwq5_row_s1(p, x + ch, w, wp, &q, oy, m, yrow);
            else dwq5_row_s2(p, x + ch, w, wp, &q, oy, m, yrow);
        }
    }
}

int32_t edge_simd_dw_q8_3x3_5x5(int32_t level, const edge_simd_dwf_t *p, const int8_t *x, const int16_t *wt,
                                const int32_t *bias, const int32_t *mul, const int32_t *rs, int32_t input_offset,
                                int32_t zp, int32_t lo, int32_t hi, int32_t oy0, int32_t oy1, int8_t *y) {
    if (level < EDGE_SIMD_X86_AVX512VNNI || (p->kh != 3 && p->kh != 5) || p->kw != p->kh || p->dh != 1 || p->dw != 1 ||
        p->sh != p->sw || (p->sw != 1 && p->sw != 2))
        return 0;
    if (y) dwq_512(p, x, wt, bias, mul, rs, input_offset, zp, lo, hi, oy0, oy1, y);
    return 1;
}
/* ------------------------------------------------------------------------------------- 8-bit tables */

/* y[i] = lut[x[i]] on 64 bytes at a time: VPERMI2B looks 64 lanes up in 128 table bytes by their low 7 bits, two
 * of them cover the table's halves and the index's top bit picks between them (AVX-512 VBMI: not every AVX-512
 * VNNI CPU has it, Cascade Lake has not: asked of cpuid once). */
#define T_VBMI __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vbmi")))

T_VBMI static void lut8_vbmi(const uint8_t *lut, const uint8_t *x, uint8_t *y, int64_t n) {
    const __m512i t0 = _mm512_loadu_si512(lut), t1 = _mm512_loadu_si512(lut + 64);
    const __m512i t2 = _mm512_loadu_si512(lut + 128), t3 = _mm512_loadu_si512(lut + 192);
    int64_t i = 0;
    for (; i < n; i += 64) {
        const __mmask64 m = n - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - i)) - 1);
        const __m512i v = _mm512_maskz_loadu_epi8(m, x + i);
        const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
        _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
    }
}

int32_t edge_simd_lut8(int32_t level, const uint8_t *lut, const uint8_t *x, uint8_t *y, int64_t n) {
    static int vbmi = -1; /* racing threads store the same answer */
    if (level < EDGE_SIMD_X86_AVX512VNNI) return 0;
    if (vbmi < 0) {
        __builtin_cpu_init();
        vbmi = __builtin_cpu_supports("avx512vbmi") ? 1 : 0;
    }
    if (!vbmi) return 0;
    if (n > 0) lut8_vbmi(lut, x, y, n);
    return 1;
}
#endif
