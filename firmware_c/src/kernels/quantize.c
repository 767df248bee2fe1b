/* QUANTIZE: float32 -> int8/int16/uint8, or requantize between integer types.
 *
 * As edge_sdk/runtime/kernels/quantize.py prepare_quantize (TFLM quantize.cc):
 *  - from float32: x / scale in float32, rounded half away from zero (TfLiteRound), converted to
 *    int32 as x86 does it (NaN and out-of-range give INT32_MIN; the Python kernel and the TFLM build we compare
 *    with do this), plus the zero point (wrapping int32), clamped to the output type;
 *  - integer -> integer (int8/uint8/int16/int32 pairs TFLM has): (x - in_zp) through MultiplyByQuantized-
 *    Multiplier(in_scale / out_scale, in double), plus out_zp, clamped. 8-bit inputs go through a 256-entry
 *    table built in prepare.
 * Per-channel outputs are refused (TFLM quantizes per tensor).
 *
 * The float32 path runs QBLOCK elements at a time through a fixed-count loop that compilers turn into vector code
 * (SSE2 on x86-64, NEON on aarch64; at -O2 gcc vectorizes a loop only when no scalar remainder is left): with
 * |x / scale| <= 2^23 the truncation of |x / scale| is its floor, and with an int16 zero point the sum cannot
 * wrap, so the reference's bits come from integer steps without libm's floorf or a double compare (soft-float on
 * a Cortex-M4). A block holding a NaN or a larger quotient is redone element by element as the reference. On
 * x86-64 with a SIMD level an AVX2 loop (quantize_float_avx2) gives the same bits for every input, and from AVX-512
 * up a loop that multiplies by 1 / scale (quantize_float_avx512: a block where the product could round otherwise
 * redone by the division) does too; size-optimized
 * builds (-Os: the Cortex-M libraries) keep one loop with the fast path per element.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint_act.h"
#if EDGE_SIMD && defined(__x86_64__)
#include <immintrin.h>
#endif

EDGE_KERNEL(QUANTIZE, quantize, 6, "FLOAT32 INT8 UINT8 INT16 INT32", "output INT8/UINT8/INT16 (INT32 from integer input)")

typedef struct {
    int16_t in_type, out_type;    /* halves: with rq below the struct keeps its pre-DSP-path size on the M4 */
    float scale;                  /* float input: the output scale */
    int32_t in_zp, out_zp, multiplier, shift, qmin, qmax;
    void *lut;                    /* 8-bit input: 256 values of the output type */
#if EDGE_SIMD
    /* two 16-bit levels beside inv keep the struct at 56 bytes on 64-bit hosts, as before inv (the host arena stays
     * within TFLM's on hey_jarvis: 8 bytes more per QUANTIZE node put it over) */
    int16_t lut_simd;             /* 8-bit -> 8-bit on a 64-bit Linux CPU with a table fast path: its level (0: none) */
    int16_t simd;                 /* float input on x86-64: 0 none, 1 quantize_float_avx2, 2 quantize_float_avx512 */
    float inv;                    /* float input: 1 / scale in float32 (normal, else simd is at most 1) */
#endif
#if EDGE_DSP
    edge_rq_t rq;                 /* int16 / int32 input: the multiplier in edge_rq form where it covers it (rq.rnd
                                   * != 0; 0 where not, or a zero multiplier: the 64-bit ea_mbqm path): one SMMLAR
                                   * pair an element, not ea_mbqm (keyword_scrambled_8bit's int16 -> int8 input
                                   * QUANTIZE: 95 instructions an element) */
#endif
} quantize_data_t;

static int pair_supported(int in, int out) {
    switch (in) {
    case EDGE_INT8: return out == EDGE_INT8 || out == EDGE_UINT8 || out == EDGE_INT16 || out == EDGE_INT32;
    case EDGE_UINT8: return out == EDGE_INT8;
    case EDGE_INT16: return out == EDGE_INT8 || out == EDGE_INT16 || out == EDGE_INT32;
    case EDGE_INT32: return out == EDGE_INT8 || out == EDGE_INT16;
    default: return 0;
    }
}

static int32_t requantize(const quantize_data_t *d, int32_t v) {
    int32_t diff = edge_wrap32((int64_t)v - d->in_zp);
    return (int32_t)ea_clamp((int64_t)ea_mbqm(diff, d->multiplier, d->shift) + d->out_zp, d->qmin, d->qmax);
}

static void store(int type, void *y, int64_t i, int32_t v) {
    switch (type) {
    case EDGE_INT8: ((int8_t *)y)[i] = (int8_t)v; break;
    case EDGE_UINT8: ((uint8_t *)y)[i] = (uint8_t)v; break;
    case EDGE_INT16: ((int16_t *)y)[i] = (int16_t)v; break;
    default: ((int32_t *)y)[i] = v; break;
    }
}

/* The reference element, float32 -> the output type: TfLiteRound(x / scale) converted to int32 as x86 does (NaN
 * and out of range: INT32_MIN; r >= -2^31 in float is the reference's (double)r > -2^31 - 1: no float lies
 * between), plus the zero point (wrapping), clamped. */
static int32_t quantize_one(const quantize_data_t *d, float x) {
    const float r = ea_round_f32(x / d->scale);
    int32_t q = EDGE_INT32_MIN;
    if (r >= -2147483648.0f && r < 2147483648.0f) q = (int32_t)r;
    return (int32_t)ea_clamp(edge_wrap32((int64_t)q + d->out_zp), d->qmin, d->qmax);
}

/* Elements per block of the float32 loop: a whole number of vectors of the narrowest type (16 int8: one SSE2 /
 * NEON register; 32: one AVX2 register). */
#define QBLOCK 32

/* quantize_one of x when r = x / scale has small = |r| <= 2^23 (else garbage). With f = |r| or 0,
 * (float)(int32_t)f is floor(f) and f - floor(f) is exact, so the rounding is ea_round_f32's; |round| <= 2^23
 * and the zero point (int16: edge.c refuses others at load) add without a wrap. f comes from an integer mask, not a select: gcc turns a
 * select into a branch around the conversion (which it takes to trap) and then leaves the loop scalar. */
static inline int32_t quantize_small(float r, int32_t small, int32_t zp, int32_t lo, int32_t hi) {
    const float a = fabsf(r);
    uint32_t bits;
    float f;
    int32_t t, m, neg, v;
    memcpy(&bits, &a, 4);
    bits &= (uint32_t)-small;
    memcpy(&f, &bits, 4);
    t = (int32_t)f;
    m = t + (f - (float)t >= 0.5f);
    neg = -(r < 0.0f);
    v = ((m ^ neg) - neg) + zp; /* +-m + zp */
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
}

/* quantize_block_<T>: y[0..QBLOCK) from x[0..QBLOCK); returns 0 when a NaN or a larger quotient was met (y is
 * garbage then: the caller redoes the block element by element). */
#define QUANTIZE_BLOCK(T)                                                                                     \
    static inline __attribute__((always_inline)) int32_t quantize_block_##T(                                 \
        const float *restrict x, float sc, int32_t zp, int32_t lo, int32_t hi, T *restrict y) {             \
        int32_t j, large = 0;                                                                                 \
        for (j = 0; j < QBLOCK; j++) {                                                                        \
            const float r = x[j] / sc;                                                                        \
            const int32_t small = fabsf(r) <= 8388608.0f; /* NaN: 0 */                                        \
            y[j] = (T)quantize_small(r, small, zp, lo, hi);                                                   \
            large |= small ^ 1;                                                                               \
        }                                                                                                     \
        return !large;                                                                                        \
    }
QUANTIZE_BLOCK(int8_t)
QUANTIZE_BLOCK(uint8_t)
QUANTIZE_BLOCK(int16_t)

/* One output type's loop: the blocks, a block the fast path declines and the tail as the reference. */
#define QUANTIZE_BLOCKS(T)                                                                                    \
    do {                                                                                                      \
        T *yt = (T *)y;                                                                                       \
        for (i = 0; i + QBLOCK <= n; i += QBLOCK)                                                            \
            if (!quantize_block_##T(x + i, d->scale, d->out_zp, d->qmin, d->qmax, yt + i))                    \
                for (j = 0; j < QBLOCK; j++) yt[i + j] = (T)quantize_one(d, x[i + j]);                        \
        for (; i < n; i++) yt[i] = (T)quantize_one(d, x[i]);                                                  \
    } while (0)

/* y[0..n) = x quantized to d's output type (INT8, UINT8 or INT16). */
static void quantize_float(const quantize_data_t *d, const float *x, void *y, int64_t n) {
    int64_t i;
#ifdef __OPTIMIZE_SIZE__
    /* a microcontroller (-Os): one loop, the fast path per element (no vectors to fill) */
    for (i = 0; i < n; i++) {
        const float r = x[i] / d->scale;
        const int32_t small = fabsf(r) <= 8388608.0f;
        store(d->out_type, y, i, small ? quantize_small(r, 1, d->out_zp, d->qmin, d->qmax) : quantize_one(d, x[i]));
    }
#else
    int32_t j;
    switch (d->out_type) {
    case EDGE_INT8: QUANTIZE_BLOCKS(int8_t); break;
    case EDGE_UINT8: QUANTIZE_BLOCKS(uint8_t); break;
    default: QUANTIZE_BLOCKS(int16_t); break;
    }
#endif
}

#if EDGE_SIMD && defined(__x86_64__)
/* AVX2 (every x86-64 SIMD level has it), exact for every input without a fallback: q = cvttps2dq(r) is x86's
 * conversion itself (INT32_MIN for NaN and out of range), d = r - trunc(r) is exact and NaN for +-inf and NaN
 * (no step then), and |r| >= 2^23 is whole (d = 0); q + zp wraps as the reference's; the saturating packs are
 * its clamp to the type. 8 quotients: */
__attribute__((target("avx2"))) static inline __m256i quantize8_avx2(const float *x, __m256 scale, __m256i zp) {
    const __m256 r = _mm256_div_ps(_mm256_loadu_ps(x), scale);
    const __m256 d = _mm256_sub_ps(r, _mm256_round_ps(r, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC));
    const __m256i up = _mm256_castps_si256(_mm256_cmp_ps(d, _mm256_set1_ps(0.5f), _CMP_GE_OQ));     /* -1 */
    const __m256i down = _mm256_castps_si256(_mm256_cmp_ps(d, _mm256_set1_ps(-0.5f), _CMP_LE_OQ)); /* -1 */
    return _mm256_add_epi32(_mm256_add_epi32(_mm256_sub_epi32(_mm256_cvttps_epi32(r), up), down), zp);
}

/* y[0..n) as quantize_float, 32 (int8 / uint8) or 16 (int16) outputs a step; the tail as the reference. The
 * packs work within 128-bit lanes: the permutes put the values back in order. */
__attribute__((target("avx2"))) static void quantize_float_avx2(const quantize_data_t *d, const float *x, void *y,
                                                                int64_t n) {
    const __m256 sc = _mm256_set1_ps(d->scale);
    const __m256i zp = _mm256_set1_epi32(d->out_zp), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int64_t i = 0;
    if (d->out_type == EDGE_INT16) {
        for (; i + 16 <= n; i += 16) {
            const __m256i h = _mm256_packs_epi32(quantize8_avx2(x + i, sc, zp), quantize8_avx2(x + i + 8, sc, zp));
            _mm256_storeu_si256((__m256i *)((int16_t *)y + i), _mm256_permute4x64_epi64(h, 0xD8));
        }
    } else {
        for (; i + 32 <= n; i += 32) {
            const __m256i ab = _mm256_packs_epi32(quantize8_avx2(x + i, sc, zp), quantize8_avx2(x + i + 8, sc, zp));
            const __m256i cd = _mm256_packs_epi32(quantize8_avx2(x + i + 16, sc, zp),
                                                  quantize8_avx2(x + i + 24, sc, zp));
            const __m256i b = d->out_type == EDGE_UINT8 ? _mm256_packus_epi16(ab, cd) : _mm256_packs_epi16(ab, cd);
            _mm256_storeu_si256((__m256i *)((int8_t *)y + i), _mm256_permutevar8x32_epi32(b, order));
        }
    }
    for (; i < n; i++) store(d->out_type, y, i, quantize_one(d, x[i]));
}

/* AVX-512 (EDGE_SIMD_X86_AVX512VNNI and up): x * inv with inv = fl(1 / scale), as XNNPACK, instead of x / scale
 * (a VDIVPS zmm per 16 values ran QUANTIZE 48x48x64 at 3.7x LiteRT), with the reference's bits for every input: a
 * lane whose product may round otherwise than the quotient sends its 64-value block through the division.
 *
 * Why the product rounds as the quotient elsewhere. Q = x / scale (real), u = 2^-24. inv = (1 / scale)(1 + e1) and,
 * when x * inv is a normal float, p = fl(x * inv) = x * inv (1 + e2), |e1|, |e2| <= u, so |p - Q| <= |Q| (2u + u^2);
 * the reference's r = fl(Q) has |r - Q| <= |Q| u; with |Q| <= |p| / (1 - 2u - u^2):
 *     |p - r| <= |p| (3u + u^2) / (1 - 2u - u^2) < |p| 2^-22.
 * Let k = rne(p) and d = p - k (VREDUCEPS: exact, |d| <= 1/2). A lane is kept only when
 *     fl(|d| + |p| 2^-21) < 1/2,
 * so (rounding is monotone, 1/2 a float) |d| + |p| 2^-21 < 1/2: p lies in (k - 1/2, k + 1/2) more than |p| 2^-21 >
 * |p - r| from both ends, r lies in the same open interval, and every rounding of r, the reference's half away from
 * zero too, gives k; |p| < 2^20 there (else |p| 2^-21 >= 1/2), so k converts without reaching the int32 edge and
 * adds the zero point (int16) without a wrap, as the reference's. A subnormal or zero p (|x * inv| < 2^-126: its
 * error absolute, <= 2^-150) has |p|, |Q|, |r| below 1/2: k = 0 = the reference's. Every other lane is sent to the
 * division: the ties and their neighbours, |p| >= 2^20 (the 2^31 edge where x86's conversion gives INT32_MIN),
 * overflow (p = +-inf: |p| 2^-21 = inf), NaN (the unordered compare says "not less"). At prepare: scale and inv
 * both normal (a subnormal scale's inverse overflows; a huge scale's inverse is subnormal, its error absolute),
 * else the AVX2 division loop. The test runs on the unsigned bits of |d| + |p| 2^-21 (>= 0 or NaN), their maximum
 * over a block: integer ops beside the float ones, which share one port with the 512-bit multiplies. */
#define T_Q512 __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl")))

/* 16 values through the product: k + zp as int32; *worst collects the lanes' |d| + |p| 2^-21 (as unsigned bits:
 * one order with the floats for the non-negative ones, a NaN of either sign above 1/2) for one compare a block. */
T_Q512 static inline __m512i quantize16_mul(const float *x, __m512 inv, __m512i zp, __m512i *worst) {
    const __m512 p = _mm512_mul_ps(_mm512_loadu_ps(x), inv);
    const __m512 d = _mm512_reduce_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); /* p - rne(p) */
    const __m512 m = _mm512_fmadd_ps(_mm512_abs_ps(p), _mm512_set1_ps(0x1p-21f), _mm512_abs_ps(d));
    *worst = _mm512_max_epu32(*worst, _mm512_castps_si512(m));
    return _mm512_add_epi32(_mm512_cvt_roundps_epi32(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
}

/* 16 values through the division, the reference's bits for every input (quantize8_avx2's steps on 16 lanes). */
T_Q512 static inline __m512i quantize16_div(const float *x, __m512 scale, __m512i zp) {
    const __m512 r = _mm512_div_ps(_mm512_loadu_ps(x), scale);
    const __m512 d = _mm512_sub_ps(r, _mm512_roundscale_ps(r, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC));
    const __mmask16 up = _mm512_cmp_ps_mask(d, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __mmask16 down = _mm512_cmp_ps_mask(d, _mm512_set1_ps(-0.5f), _CMP_LE_OQ);
    const __m512i one = _mm512_set1_epi32(1), t = _mm512_cvttps_epi32(r);
    const __m512i u = _mm512_mask_add_epi32(t, up, t, one); /* + 1 where up, - 1 where down (never both) */
    return _mm512_add_epi32(_mm512_mask_sub_epi32(u, down, u, one), zp);
}

/* y[0..n) as quantize_float, 64 values a step (the saturating packs are the clamp to the type; they work within
 * 128-bit lanes, the permutes put the values back in order); the last n % 64 by quantize_float_avx2. */
T_Q512 static void quantize_float_avx512(const quantize_data_t *d, const float *x, void *y, int64_t n) {
    const __m512 sc = _mm512_set1_ps(d->scale), inv = _mm512_set1_ps(d->inv);
    const __m512i zp = _mm512_set1_epi32(d->out_zp), half = _mm512_set1_epi32(0x3F000000); /* 0.5f's bits */
    const __m512i order8 = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i order16 = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    const int32_t type = d->out_type, size = edge_type_bytes(type);
    int64_t i;
    for (i = 0; i + 64 <= n; i += 64) { /* four vectors by name: an array of them went through the stack */
        const float *xi = x + i;
        __m512i worst = _mm512_setzero_si512();
        __m512i q0 = quantize16_mul(xi, inv, zp, &worst), q1 = quantize16_mul(xi + 16, inv, zp, &worst);
        __m512i q2 = quantize16_mul(xi + 32, inv, zp, &worst), q3 = quantize16_mul(xi + 48, inv, zp, &worst);
        if (_mm512_cmpge_epu32_mask(worst, half)) {
            q0 = quantize16_div(xi, sc, zp);
            q1 = quantize16_div(xi + 16, sc, zp);
            q2 = quantize16_div(xi + 32, sc, zp);
            q3 = quantize16_div(xi + 48, sc, zp);
        }
        if (type == EDGE_INT16) {
            _mm512_storeu_si512((void *)((int16_t *)y + i), _mm512_permutexvar_epi64(order16, _mm512_packs_epi32(q0, q1)));
            _mm512_storeu_si512((void *)((int16_t *)y + i + 32),
                                _mm512_permutexvar_epi64(order16, _mm512_packs_epi32(q2, q3)));
        } else {
            const __m512i ab = _mm512_packs_epi32(q0, q1), cd = _mm512_packs_epi32(q2, q3);
            const __m512i b = type == EDGE_UINT8 ? _mm512_packus_epi16(ab, cd) : _mm512_packs_epi16(ab, cd);
            _mm512_storeu_si512((void *)((int8_t *)y + i), _mm512_permutexvar_epi32(order8, b));
        }
    }
    quantize_float_avx2(d, x + i, (char *)y + i * size, n - i);
}
#endif

#if EDGE_SIMD && defined(__x86_64__)
/* f is a normal float (not zero, subnormal, infinite or NaN) */
static int normal_f32(float f) { return fabsf(f) >= 1.17549435e-38f && fabsf(f) <= 3.40282347e38f; }
#endif

edge_status_t edge_prepare_quantize(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    quantize_data_t *d;
    edge_status_t s;
    int32_t i;

    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "QUANTIZE expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "QUANTIZE: input is required");
    s = edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
    if (s != EDGE_OK) return s;
    if (out->type != EDGE_INT8 && out->type != EDGE_INT16 && out->type != EDGE_INT32 && out->type != EDGE_UINT8)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "QUANTIZE: output must be INT8, INT16, INT32 or UINT8");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK || (s = edge_type_built(ctx, out->type)) != EDGE_OK) return s;
    if (!out->quantized) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "QUANTIZE: output needs quantization parameters");
    if (out->n_scales != 1) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "QUANTIZE: per-channel output");
    d = (quantize_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->in_type = (int16_t)x->type;
    d->out_type = (int16_t)out->type;
    d->out_zp = out->zero_point;
    d->qmin = ea_type_min(out->type);
    d->qmax = ea_type_max(out->type);
    if (x->type == EDGE_FLOAT32) {
        if (out->type == EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "QUANTIZE: float32 -> INT32");
        d->scale = out->scale;
#if EDGE_SIMD && defined(__x86_64__)
        d->inv = 1.0f / d->scale;
        d->simd = (int16_t)(edge_simd_level() > 0);
        if (d->simd && edge_simd_level() >= EDGE_SIMD_X86_AVX512VNNI && normal_f32(d->scale) && normal_f32(d->inv))
            d->simd = 2;
#endif
        return EDGE_OK;
    }
    if (!pair_supported(x->type, out->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "QUANTIZE: type pair");
    if (!x->quantized) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "QUANTIZE: input needs quantization parameters");
    if (!ea_good_scale(x) || !ea_good_scale(out)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "QUANTIZE: scales must be positive and finite");
    if (edge_quantize_multiplier((double)x->scale / (double)out->scale, &d->multiplier, &d->shift))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "QUANTIZE: scales give no multiplier");
    d->in_zp = x->zero_point;
    if (x->type == EDGE_INT8 || x->type == EDGE_UINT8) {
        d->lut = edge_alloc_persistent(ctx, 256 * (size_t)edge_type_bytes(out->type));
        if (!d->lut) return EDGE_ARENA_TOO_SMALL;
        for (i = 0; i < 256; i++) {
            int32_t v = x->type == EDGE_INT8 ? (int32_t)(int8_t)(uint8_t)i : i;
            store(out->type, d->lut, i, requantize(d, v));
        }
#if EDGE_SIMD
        d->lut_simd = (int16_t)(edge_type_bytes(out->type) == 1 ? ea_lut8_level() : 0);
#endif
    }
#if EDGE_DSP
    if (edge_rq_make(&d->rq, d->multiplier, d->shift) != 0) d->rq.rnd = 0; /* not covered: the ea_mbqm path */
#endif
    return EDGE_OK;
}

void edge_eval_quantize(const edge_node_t *node, edge_ctx_t *ctx) {
    const quantize_data_t *d = (const quantize_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(out);
    void *y = out->data;
    int64_t i;
    switch (d->in_type) {
    case EDGE_FLOAT32: {
        if (!EDGE_WITH_FLOAT32) break; /* refused at prepare */
#if EDGE_SIMD && defined(__x86_64__)
        if (d->simd == 2) {
            quantize_float_avx512(d, (const float *)x->data, y, n);
            break;
        }
        if (d->simd) {
            quantize_float_avx2(d, (const float *)x->data, y, n);
            break;
        }
#endif
        quantize_float(d, (const float *)x->data, y, n);
        break;
    }
    case EDGE_INT8:
    case EDGE_UINT8: {
        const uint8_t *xi = (const uint8_t *)x->data;
        switch (d->out_type) {
        case EDGE_INT8:
        case EDGE_UINT8:
#if EDGE_SIMD
            ea_lut8_apply_at(d->lut_simd, (const int8_t *)d->lut, xi, y, n);
#else
            for (i = 0; i < n; i++) ((uint8_t *)y)[i] = ((const uint8_t *)d->lut)[xi[i]];
#endif
            break;
        case EDGE_INT16:
            for (i = 0; i < n; i++) ((int16_t *)y)[i] = ((const int16_t *)d->lut)[xi[i]];
            break;
        default:
            for (i = 0; i < n; i++) ((int32_t *)y)[i] = ((const int32_t *)d->lut)[xi[i]];
            break;
        }
        break;
    }
    case EDGE_INT16: {
        const int16_t *xi = (const int16_t *)x->data;
        if (!EDGE_WITH_INT16) break; /* refused at prepare */
#if EDGE_DSP
        if (d->rq.rnd != 0 && d->out_type == EDGE_INT8) { /* x - in_zp cannot wrap: both int16 */
            for (i = 0; i < n; i++)
                ((int8_t *)y)[i] = (int8_t)edge_clamp32(edge_rq_apply(&d->rq, xi[i] - d->in_zp, d->out_zp), -128, 127);
            break;
        }
        if (d->rq.rnd != 0) {
            for (i = 0; i < n; i++)
                store(d->out_type, y, i, edge_clamp32(edge_rq_apply(&d->rq, xi[i] - d->in_zp, d->out_zp), d->qmin, d->qmax));
            break;
        }
#endif
        for (i = 0; i < n; i++) store(d->out_type, y, i, requantize(d, xi[i]));
        break;
    }
    default: {
        const int32_t *xi = (const int32_t *)x->data;
        for (i = 0; i < n; i++) store(d->out_type, y, i, requantize(d, xi[i]));
        break;
    }
    }
}
