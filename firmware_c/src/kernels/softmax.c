/* SOFTMAX over the last axis.
 *
 * As edge_sdk/runtime/kernels/activations.py prepare_softmax (TFLM softmax.cc, reference softmax.h):
 *  - int8 input (int8 output at 1/256, zp -128; or int16 output at 1/65536, zp -32768): each row's
 *    differences to its maximum (0..255 below it) go through exp in gemmlowp fixed point (Q5.26 input; 0
 *    beyond the input radius, which the reference skips), eval sums the row at Q12, takes GetReciprocal and
 *    scales every exp by it. Small inputs compute exp per element (no table in the arena; a row of at most 32
 *    once, on the stack); inputs over 512
 *    elements tabulate the 256 differences once per invoke in a scratch buffer. A host build (EDGE_SIMD) tabulates
 *    them at prepare and a row's outputs per difference (softmax_int8_row_lut): the same bytes. A DSP build (the
 *    Cortex-M4 / M7: softmax_int8_eval_dsp) computes each exp once -- a per-invoke table of the input's range, or
 *    per element -- with gemmlowp's doubling high multiply as one SMMLAR (softmax_srdhm): the same bytes; a
 *    per-model firmware whose rows are all short (EDGE_WITH_SOFTMAX_DSP=0) runs softmax_int8_row instead (with
 *    the same SMMLAR arithmetic: no per-invoke table, exps twice for rows over 32).
 *  - int16 input / output (zero points 0, output 1/32768): the scaled differences index TFLite's 513-entry
 *    exp table, the sum's reciprocal comes from the 1/(1+x) table (both built in prepare in float32 as
 *    LUTPopulateInt16 does).
 *  - float32: exp((x - max) * beta) in double rounded to float, divided by the row's float32 sum. On a 64-bit
 *    Linux CPU with a fast path (EDGE_SIMD): edge_simd_softmax_f32's vector exp and lane sums (within 1e-6 of
 *    the portable row relative to its largest output); a row with an infinity or a NaN runs the portable row.
 * The int16 and float32 paths (the only users of libm exp) are compiled in only with EDGE_WITH_INT16 /
 * EDGE_WITH_FLOAT32; the int8 path's prepare computes TFLM's multiplier in double (exactness) and its input
 * radius with integers.
 * Refusal reasons leave the op's name to the error message's node prefix ("node 3 (SOFTMAX code N v1): ...").
 */
#include <string.h>
#include "edge_kernel.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint_act.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(SOFTMAX, softmax, 4, "FLOAT32 INT8 INT16", "INT8 input: INT8 or INT16 output")

/* EDGE_WITH_SOFTMAX_DSP=0 (gen_ops.py path_defines: a firmware for models without a long enough int8 row) compiles
 * the DSP rows (softmax_int8_eval_dsp, softmax_int8_row_exps: ~710 B on the M4) out; the rows then run
 * softmax_int8_row (with the same SMMLAR exp and reciprocal) */
#ifndef EDGE_WITH_SOFTMAX_DSP
#define EDGE_WITH_SOFTMAX_DSP 1
#endif
#define SOFTMAX_DSP (EDGE_DSP && EDGE_WITH_SOFTMAX_DSP)

typedef struct {
    int32_t in_type, out_type;
    int64_t rows;
    int32_t depth;
    float beta;
    int32_t out_bits, out_min, out_max;
    int32_t multiplier, shift;   /* int16 input */
    int32_t diff_min;            /* int8: exp of differences below it is 0 (beyond the input radius) */
    int32_t scratch;             /* int8, big inputs: a 256-entry exp table built per invoke; else -1 (d->dsp:
                                  * min(256, elements) int32s, the table or a small input's exps, per invoke) */
#if SOFTMAX_DSP
    int32_t dsp;                 /* int8 rows by softmax_int8_eval_dsp (not under the least-RAM plan unless the input
                                  * has at most SOFTMAX_STACK elements) */
#endif
    int16_t *exp_lut, *recip_lut; /* int16: EA_LUT16_SIZE entries each */
#if EDGE_SIMD
    int32_t simd;                /* float32 on a 64-bit Linux CPU with a fast path: its level (0: none) */
    int32_t lut_level;           /* int8: the level's byte lookups (edge_simd_lut8) for int8 outputs, else 0 */
    int32_t *exp8_table;         /* int8 at a fast-path level: the 256 exps once at prepare (with the packed
                                  * copies), not per invoke (12 us of a 1000-class classifier's 30); its rows run
                                  * softmax_int8_row_lut */
#endif
} softmax_data_t;

#define SOFTMAX_STACK 32 /* an int8 input (DSP builds) or row (softmax_int8_row) of at most this many elements keeps
                          * its exps on the stack */

static float exp_transform(float x) { return (float)exp((double)x); }
static float recip_transform(float x) { return 1.0f / (1.0f + x); }

#if EDGE_DSP
/* gemmlowp's SaturatingRoundingDoublingHighMul in one SMMLAR: its nudged truncating division of a * b by 2^31 is
 * floor((a * b + 2^30) / 2^31) for both signs, the high word of 2 a b + 2^31 = (c << 32) + a * m2 + 2^31 with
 * m2 = 2 b wrapped to int32 and c = a (b >= 2^30), -a (b < -2^30), else 0 (modulo 2^64, which SMMLAR's sum is:
 * exact, 2 a b fits but for a = b = INT32_MIN, the saturating case). edge_srdhm's 64-bit product and division:
 * ~12 instructions on the M4; with a constant b this is one. */
static inline int32_t softmax_srdhm(int32_t a, int32_t b) {
    const int32_t c = b >= (1 << 30) ? a : b < -(1 << 30) ? (int32_t)(0u - (uint32_t)a) : 0;
    if (a == EDGE_INT32_MIN && b == EDGE_INT32_MIN) return EDGE_INT32_MAX;
    return edge_smmlar(a, (int32_t)((uint32_t)b << 1), c);
}

/* ea_exp_on_negative_values(a, 5) (softmax's Q5.26 input) with softmax_srdhm: the same steps on the same values
 * (exp of [-1/4, 0) by its polynomial, then the barrel of exp(-2^e) factors for the remainder's bits 24..30). */
static int32_t softmax_exp_q5(int32_t a) {
    static const int32_t barrel[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int32_t one_quarter = 1 << 24;
    const int32_t a_mod = ea_sub(a & (one_quarter - 1), one_quarter), remainder = ea_sub(a_mod, a);
    /* ea_exp_quarter(ea_rescale(a_mod, 5, 0)): a_mod in [-2^24, 0), so the shift by 5 does not saturate */
    const int32_t x = ea_add((int32_t)((uint32_t)a_mod << 5), (int32_t)1 << 28);
    const int32_t x2 = softmax_srdhm(x, x), x3 = softmax_srdhm(x2, x), x4 = softmax_srdhm(x2, x2);
    const int32_t poly = edge_rdbpot(ea_add(softmax_srdhm(ea_add(edge_rdbpot(x4, 2), x3), 715827883), x2), 1);
    int32_t result = ea_add(1895147668, softmax_srdhm(1895147668, ea_add(x, poly))), e;
    for (e = 0; e < 7; e++)
        if (remainder & ((int32_t)1 << (24 + e))) result = softmax_srdhm(result, barrel[e]);
    return a == 0 ? EDGE_INT32_MAX : result;
}

/* ea_get_reciprocal(x, 12, bits_over) with softmax_srdhm: gemmlowp's Newton-Raphson 1 / (1 + a), the same steps. */
static int32_t softmax_reciprocal(int32_t x, int32_t *num_bits_over_unit) {
    const int32_t headroom_plus_one = ea_clz32((uint32_t)x);
    const uint32_t shifted = headroom_plus_one >= 32 ? 0u : (uint32_t)x << headroom_plus_one;
    const int64_t sum = (int64_t)edge_wrap32((int64_t)shifted - ((int64_t)1 << 31)) + EDGE_INT32_MAX;
    const int32_t half_denominator = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    int32_t r = ea_add(1515870810, softmax_srdhm(half_denominator, -1010580540)), k;
    *num_bits_over_unit = 12 - headroom_plus_one;
    for (k = 0; k < 3; k++) {
        const int32_t one_minus = ea_sub((int32_t)1 << 29, softmax_srdhm(half_denominator, r));
        r = ea_add(r, ea_rescale(softmax_srdhm(r, one_minus), 4, 2));
    }
    return ea_rescale(r, 1, 0);
}
#endif

/* softmax_int8_row's doubling high multiply and reciprocal: SMMLAR's on a DSP build (the same bytes) */
#if EDGE_DSP
#define SOFTMAX_SRDHM softmax_srdhm
#define SOFTMAX_RECIPROCAL softmax_reciprocal
#else
#define SOFTMAX_SRDHM edge_srdhm
#define SOFTMAX_RECIPROCAL(x, bits_over) ea_get_reciprocal(x, 12, bits_over)
#endif

/* exp of -k (k = max - x, 0..255) in Q0.31; 0 beyond the input radius (the reference skips those). */
static int32_t softmax_exp8(const softmax_data_t *d, int32_t k) {
    if (-k < d->diff_min) return 0;
    if (k == 0) return EDGE_INT32_MAX; /* a row's maximum (each row has one): exp(0), its polynomial skipped */
#if EDGE_DSP
    return softmax_exp_q5(softmax_srdhm(edge_wrap32((int64_t)(-k) * ((int64_t)1 << d->shift)), d->multiplier));
#else
    return ea_exp_on_negative_values(edge_srdhm(edge_wrap32((int64_t)(-k) * ((int64_t)1 << d->shift)), d->multiplier), 5);
#endif
}

edge_status_t edge_prepare_softmax(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    softmax_data_t *d;
    edge_status_t s;
    int64_t n;

    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, INT16");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK || (s = edge_type_built(ctx, out->type)) != EDGE_OK) return s;
    if (x->rank < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "needs an input of rank 1 or more");
    s = edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
    if (s != EDGE_OK) return s;
    d = (softmax_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->in_type = x->type;
    d->out_type = out->type;
    d->beta = node->options_type == EDGE_OPTS_SoftmaxOptions ? edge_opt_float(node, 0, 0.0f) : 1.0f;
    d->depth = x->dims[x->rank - 1];
    n = edge_tensor_elements(x);
    if (n >> 32) return EDGE_FAIL(ctx, EDGE_LIMIT, "input of 2^32 elements or more");
    d->rows = d->depth > 0 ? (int32_t)((uint32_t)n / (uint32_t)d->depth) : 0; /* 32-bit: no 64-bit divide linked */
    if (EDGE_WITH_FLOAT32 && x->type == EDGE_FLOAT32) {
        if (out->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be FLOAT32");
#if EDGE_SIMD
        d->simd = edge_simd_level();
        if (d->simd && !edge_simd_softmax_f32(d->simd, NULL, 0, d->beta, NULL)) d->simd = 0;
#endif
        return EDGE_OK;
    }
    if (!x->quantized || !out->quantized) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "tensors need quantization parameters");
    if (!ea_good_scale(x)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input scale must be positive and finite");
    if (x->type == EDGE_INT8) {
        /* beta * scale * 2^26 in double, as TFLM (dividing by the float 2^-26 is the same exact scaling) */
        double real = EDGE_RATIO_D(d->beta, x->scale, 1.0f / 67108864.0f);
        int64_t radius;
        if (out->type == EDGE_INT8) {
            if (out->zero_point != -128 || out->scale != (float)(1.0 / 256))
                return EDGE_FAIL(ctx, EDGE_BAD_NODE, "int8 output needs scale 1/256 and zero point -128");
            d->out_bits = 8;
        } else if (EDGE_WITH_INT16 && out->type == EDGE_INT16) {
            double diff = (double)out->scale - 1.0 / 65536;
            if (out->zero_point != -32768 || (diff < 0 ? -diff : diff) > 0.001 / 65536)
                return EDGE_FAIL(ctx, EDGE_BAD_NODE, "int8->int16 output needs scale 1/65536, zero point -32768");
            d->out_bits = 16;
        } else {
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "int8 input needs an INT8 or INT16 output");
        }
        d->out_min = ea_type_min(out->type);
        d->out_max = ea_type_max(out->type);
        if (d->beta == d->beta && edge_double_gt(real, 2147483647.0)) real = 2147483647.0; /* NaN stays NaN */
        if (edge_quantize_multiplier(real, &d->multiplier, &d->shift) || d->shift < 0 || d->shift > 31)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "beta * input scale out of range");
        /* TFLM's input radius floor(31 * 2^26 / 2^shift), exact in integers (shift is 0..31 here) */
        radius = ((int64_t)31 << 26) >> d->shift;
        d->diff_min = radius > 1000000000 ? -1000000000 : -(int32_t)radius;
        d->scratch = -1;
#if SOFTMAX_DSP
        d->dsp = 0;
#endif
#if EDGE_SIMD
        if (edge_simd_level()) {
            int32_t k;
            d->exp8_table = (int32_t *)edge_alloc_packed(ctx, 256 * sizeof(int32_t));
            if (!d->exp8_table) return EDGE_ARENA_TOO_SMALL;
            for (k = 0; k < 256; k++) d->exp8_table[k] = softmax_exp8(d, k);
            d->lut_level = edge_simd_lut8(edge_simd_level(), NULL, NULL, NULL, 0) ? edge_simd_level() : 0;
            return EDGE_OK;
        }
#endif
#if SOFTMAX_DSP
        /* the M4's rows (softmax_int8_eval_dsp): each exp computed once, in a table or per element, in a scratch of
         * up to 1 KB (on the stack for a small input); the least-RAM plan keeps the rows below for larger inputs
         * (no scratch up to 512 elements) */
        if (n <= SOFTMAX_STACK) { /* a small input: its table or exps on the stack, on every plan */
            d->dsp = 1;
            return EDGE_OK;
        }
        if (!edge_least_ram(ctx->interp)) {
            d->dsp = 1;
            return edge_request_scratch(ctx, node, (size_t)(n < 256 ? n : 256) * sizeof(int32_t), &d->scratch);
        }
#endif
        /* exp per element (twice) is cheaper than tabulating all 256 differences for small inputs */
        if (n > 2 * 256 && (s = edge_request_scratch(ctx, node, 256 * sizeof(int32_t), &d->scratch)) != EDGE_OK) return s;
        return EDGE_OK;
    }
    if (!EDGE_WITH_INT16) return EDGE_UNSUPPORTED_TYPE; /* not reached: edge_type_built refused it */
    /* int16 */
    if (out->type != EDGE_INT16) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "int16 input needs an INT16 output");
    if (x->zero_point || out->zero_point) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "int16 needs zero points of 0");
    {
        double diff = (double)out->scale - 1.0 / 32768;
        if ((diff < 0 ? -diff : diff) > 0.001 / 32768)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "int16 output needs scale 1/32768");
    }
    if (d->depth > 65536) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "int16 rows longer than 65536");
    if (edge_quantize_multiplier((double)x->scale * (double)d->beta / (10.0 / 65535.0), &d->multiplier, &d->shift))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "beta * input scale gives no multiplier");
    d->exp_lut = (int16_t *)edge_alloc_persistent(ctx, EA_LUT16_SIZE * sizeof(int16_t));
    d->recip_lut = (int16_t *)edge_alloc_persistent(ctx, EA_LUT16_SIZE * sizeof(int16_t));
    if (!d->exp_lut || !d->recip_lut) return EDGE_ARENA_TOO_SMALL;
    ea_lut_populate_int16(exp_transform, 10.0f / 65535.0f, 32767, 2.0f / 65535.0f, 0, d->exp_lut);
    ea_lut_populate_int16(recip_transform, 1.0f / 65535.0f, -32768, 2.0f / 65535.0f, 0, d->recip_lut);
    return EDGE_OK;
}

/* table: the 256 exps when the node has its scratch table, else NULL (computed per element; a row of at most
 * SOFTMAX_STACK keeps them on the stack for its second pass: each exp once). */
static void softmax_int8_row(const softmax_data_t *d, const int32_t *table, const int8_t *x, void *y) {
    const int32_t n = d->depth, keep = !table && n <= SOFTMAX_STACK;
    int32_t i, max = -128, inv, bits_over, exponent, exps[SOFTMAX_STACK];
    int64_t total = 0;
    for (i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    for (i = 0; i < n; i++) {
        const int32_t e = table ? table[max - x[i]] : softmax_exp8(d, max - x[i]);
        if (keep) exps[i] = e;
        total += edge_rdbpot(e, 12);
    }
    inv = SOFTMAX_RECIPROCAL(edge_wrap32(total), &bits_over);
    exponent = bits_over + 31 - d->out_bits;
    for (i = 0; i < n; i++) {
        const int32_t e = table ? table[max - x[i]] : keep ? exps[i] : softmax_exp8(d, max - x[i]);
        const int32_t v = SOFTMAX_SRDHM(inv, e); /* >= 0: a 32-bit rounding divide where the exponent allows */
        int64_t r = (exponent >= 0 && exponent <= 31 ? edge_rdbpot(v, exponent) : ea_rdbpot64(v, exponent)) +
                    d->out_min;
        r = ea_clamp(r, d->out_min, d->out_max);
        if (!EDGE_WITH_INT16 || d->out_bits == 8) ((int8_t *)y)[i] = (int8_t)r;
        else ((int16_t *)y)[i] = (int16_t)r;
    }
}

#if EDGE_SIMD
/* softmax_int8_row's bytes with the prepared table (a host build): an output depends on its difference k = max - x
 * alone, so the k present (0..max - min, at most 256) get the row's arithmetic once each (their Q12 exps for the
 * sum, their outputs), and each element is two lookups (the sum's, the output's). A 1000-class head: 1000 64-bit
 * requantizations per row became at most 256, the loops over the row plain loads (the compiler vectorizes the
 * max / min). The same integer steps on the same values: the same bytes (tests/test_elem_s19.py). */
static void softmax_int8_row_lut(const softmax_data_t *d, const int32_t *table, const int8_t *x, void *y) {
    const int32_t n = d->depth;
    int32_t i, k, range, max = -128, min = 127, inv, bits_over, exponent;
    int32_t q12[256];           /* [k]: edge_rdbpot(exp of -k, 12), k <= range */
    int16_t out[256];           /* [k]: the output of difference k */
    uint8_t by_byte[256];       /* int8 output: [(uint8_t)v] the output of input v (an edge_simd_lut8 table) */
    int8_t hi[16], lo[16];      /* lane maxima / minima over blocks of 16 (the compiler keeps them in a vector) */
    int64_t total = 0;
    for (i = 0; i < 16; i++) hi[i] = -128, lo[i] = 127;
    for (k = 0; k + 16 <= n; k += 16)
        for (i = 0; i < 16; i++) {
            hi[i] = x[k + i] > hi[i] ? x[k + i] : hi[i];
            lo[i] = x[k + i] < lo[i] ? x[k + i] : lo[i];
        }
    for (i = 0; i < 16; i++) {
        max = hi[i] > max ? hi[i] : max;
        min = lo[i] < min ? lo[i] : min;
    }
    for (i = k; i < n; i++) {
        max = x[i] > max ? x[i] : max;
        min = x[i] < min ? x[i] : min;
    }
    range = max - min;
    for (k = 0; k <= range; k++) q12[k] = edge_rdbpot(table[k], 12);
    for (i = 0; i < n; i++) total += q12[max - x[i]];
    inv = ea_get_reciprocal(edge_wrap32(total), 12, &bits_over);
    exponent = bits_over + 31 - d->out_bits;
    for (k = 0; k <= range; k++)
        out[k] = (int16_t)ea_clamp(ea_rdbpot64(edge_srdhm(inv, table[k]), exponent) + d->out_min, d->out_min,
                                   d->out_max);
    if (!EDGE_WITH_INT16 || d->out_bits == 8) {
        memset(by_byte, 0, sizeof by_byte); /* (the bytes outside [min, max]: never looked up, read by the lanes) */
        for (k = 0; k <= range; k++) by_byte[(uint8_t)(max - k)] = (uint8_t)out[k];
        if (!edge_simd_lut8(d->lut_level, by_byte, (const uint8_t *)x, (uint8_t *)y, n)) /* VPERMI2B / TBL lanes */
            for (i = 0; i < n; i++) ((int8_t *)y)[i] = (int8_t)out[max - x[i]];
    } else
        for (i = 0; i < n; i++) ((int16_t *)y)[i] = out[max - x[i]];
}
#endif

#if SOFTMAX_DSP
/* One row's outputs from its exps e(i) (Q0.31; table: e(i) = table[max - x[i]], else exps[i]): the sum at Q12,
 * GetReciprocal, each exp scaled -- softmax_int8_row's integer steps, its rounding divide in 32 bits where the
 * exponent allows (the scaled exps are >= 0 and below 2^31: the same value as the 64-bit one). */
static void softmax_int8_row_exps(const softmax_data_t *d, const int32_t *table, const int32_t *exps, int32_t max,
                                  const int8_t *x, void *y) {
    const int32_t n = d->depth;
    int32_t i, inv, bits_over, exponent;
    int64_t total = 0;
    if (table)
        for (i = 0; i < n; i++) total += edge_rdbpot(table[max - x[i]], 12);
    else
        for (i = 0; i < n; i++) total += edge_rdbpot(exps[i], 12);
    inv = softmax_reciprocal(edge_wrap32(total), &bits_over);
    exponent = bits_over + 31 - d->out_bits;
    for (i = 0; i < n; i++) {
        const int32_t e = table ? table[max - x[i]] : exps[i], v = softmax_srdhm(inv, e);
        int64_t r = (exponent >= 0 && exponent <= 31 ? edge_rdbpot(v, exponent) : ea_rdbpot64(v, exponent)) +
                    d->out_min;
        r = ea_clamp(r, d->out_min, d->out_max);
        if (!EDGE_WITH_INT16 || d->out_bits == 8) ((int8_t *)y)[i] = (int8_t)r;
        else ((int16_t *)y)[i] = (int16_t)r;
    }
}

/* int8 input on the M4: each gemmlowp exp (a few hundred instructions) computed once, not twice per element as
 * softmax_int8_row and CMSIS-NN's arm_softmax_s8 do. The differences k = max(row) - x lie in [0, max - min] of
 * the whole input: when that range has fewer values than the input has elements, the exps of those k are
 * tabulated (a [range + 1] int32 table in the scratch; an attention [H, T, T] score tensor: at most 256 exps
 * for H * T * T elements); else (a small input: a 12-class head) each element's exp is kept in the scratch
 * ([n] int32, n < 256) for its row's second pass. */
static void softmax_int8_eval_dsp(const softmax_data_t *d, int32_t *scratch, const int8_t *x, uint8_t *y) {
    const int64_t n = d->rows * d->depth;
    int32_t gmax = -128, gmin = 127, k;
    int64_t i, r;
    for (i = 0; i < n; i++) {
        gmax = x[i] > gmax ? x[i] : gmax;
        gmin = x[i] < gmin ? x[i] : gmin;
    }
    if (gmax - gmin < n) { /* the table: range + 1 <= n values, and at most 256 (the scratch's size) */
        for (k = 0; k <= gmax - gmin; k++) scratch[k] = softmax_exp8(d, k);
        for (r = 0; r < d->rows; r++) {
            const int8_t *row = x + r * d->depth;
            int32_t max = -128;
            for (k = 0; k < d->depth; k++) max = row[k] > max ? row[k] : max;
            softmax_int8_row_exps(d, scratch, NULL, max, row, y + r * d->depth * (d->out_bits / 8));
        }
        return;
    }
    for (r = 0; r < d->rows; r++) { /* n <= 256 here: each element's exp in scratch[0..depth) */
        const int8_t *row = x + r * d->depth;
        int32_t max = -128;
        for (k = 0; k < d->depth; k++) max = row[k] > max ? row[k] : max;
        for (k = 0; k < d->depth; k++) scratch[k] = softmax_exp8(d, max - row[k]);
        softmax_int8_row_exps(d, NULL, scratch, max, row, y + r * d->depth * (d->out_bits / 8));
    }
}
#endif

static int32_t softmax_exp16(const softmax_data_t *d, int32_t diff) {
    int64_t sym = (int64_t)ea_mbqm(diff, d->multiplier, d->shift) + 32767;
    return ea_lut_lookup_int16((int32_t)(sym < -32768 ? -32768 : sym > 32767 ? 32767 : sym), d->exp_lut);
}

static void softmax_int16_row(const softmax_data_t *d, const int16_t *x, int16_t *y) {
    const int32_t n = d->depth;
    int32_t i, max = -32768, h, right;
    int64_t total = 0, shifted, sym_sum, recip;
    for (i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    for (i = 0; i < n; i++) total += softmax_exp16(d, x[i] - max);
    if (total <= 0) {
        for (i = 0; i < n; i++) y[i] = 0;
        return;
    }
    h = ea_clz32((uint32_t)total);
    shifted = ((total << (h - 1)) + (1 << 13)) >> 14;
    sym_sum = shifted - ((1 << 15) + (1 << 16));
    sym_sum = sym_sum < -32768 ? -32768 : sym_sum > 32767 ? 32767 : sym_sum;
    recip = ea_lut_lookup_int16((int32_t)sym_sum, d->recip_lut);
    right = 31 - h;
    for (i = 0; i < n; i++) {
        int64_t e = softmax_exp16(d, x[i] - max);
        int64_t r = (e * recip + ((int64_t)1 << (right - 1))) >> right;
        y[i] = (int16_t)(r < 0 ? 0 : r > 32767 ? 32767 : r);
    }
}

static void softmax_float_row(const softmax_data_t *d, const float *x, float *y) {
    const int32_t n = d->depth;
    int32_t i;
    float max = x[0], sum = 0.0f;
    for (i = 1; i < n; i++) max = x[i] > max ? x[i] : max;
    for (i = 0; i < n; i++) {
        y[i] = ea_exp_f32((x[i] - max) * d->beta); /* double where the FPU has it (edge_fixedpoint_act.h) */
        sum += y[i];
    }
    for (i = 0; i < n; i++) y[i] = y[i] / sum;
}

void edge_eval_softmax(const edge_node_t *node, edge_ctx_t *ctx) {
    const softmax_data_t *d = (const softmax_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    int32_t *table = 0;
    int64_t r;
    if (d->depth <= 0) return;
#if EDGE_SIMD
    if (d->exp8_table) table = d->exp8_table;
#endif
#if SOFTMAX_DSP
    if (d->in_type == EDGE_INT8 && d->dsp) {
        int32_t small[SOFTMAX_STACK]; /* d->scratch < 0: at most SOFTMAX_STACK elements */
        softmax_int8_eval_dsp(d, d->scratch >= 0 ? (int32_t *)edge_scratch(ctx, node, d->scratch) : small,
                              (const int8_t *)x->data, (uint8_t *)out->data);
        return;
    }
#endif
    if (d->in_type == EDGE_INT8 && d->scratch >= 0) {
        int32_t k;
        table = (int32_t *)edge_scratch(ctx, node, d->scratch);
        for (k = 0; k < 256; k++) table[k] = softmax_exp8(d, k);
    }
    for (r = 0; r < d->rows; r++) {
        const int64_t off = r * d->depth;
        if (d->in_type == EDGE_INT8) {
            void *y = (uint8_t *)out->data + off * (d->out_bits / 8);
#if EDGE_SIMD
            if (d->exp8_table) {
                softmax_int8_row_lut(d, table, (const int8_t *)x->data + off, y);
                continue;
            }
#endif
            softmax_int8_row(d, table, (const int8_t *)x->data + off, y);
        } else if (EDGE_WITH_INT16 && d->in_type == EDGE_INT16) {
            softmax_int16_row(d, (const int16_t *)x->data + off, (int16_t *)out->data + off);
        } else if (EDGE_WITH_FLOAT32) {
#if EDGE_SIMD
            /* the vector row, unless it hands the row back (a value that is not finite, exp overflowing) */
            if (d->simd &&
                edge_simd_softmax_f32(d->simd, (const float *)x->data + off, d->depth, d->beta, (float *)out->data + off))
                continue;
#endif
            softmax_float_row(d, (const float *)x->data + off, (float *)out->data + off);
        }
    }
}
