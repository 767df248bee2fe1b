/* MEAN and SUM over constant axes (edge_sdk/runtime/kernels/reduce.py, TFLM reduce_common.cc QuantizedMeanOrSum).
 *
 * Quantized (int8 / int16, per-tensor): the int32 (wrapping) sum of the raw values minus zero_point * n,
 * requantized with MultiplyByQuantizedMultiplier by input_scale / output_scale, plus the output zero point,
 * clamped. For MEAN the division by n is folded into the multiplier: shifted left by min(floor(log2 n), 32,
 * 31 + shift), integer-divided by n, the shift lowered by as much. float32: as LiteRT's reference kernels
 * (reference_ops::Mean / ReduceSumImpl), the sum in float32 from 0, one rounding per element in the input's
 * row-major order, then divided by n in float32 (MEAN): their bits. (A sum in double drifts from theirs by up to
 * 1e-2 of the output's range on a 128x128 average of values far from 0 - issue 26's pose_landmark_full
 * Identity_2; the Python kernel sums the same way.)
 *
 * Integers (not quantized; LiteRT's reference ReduceSumImpl / Mean, which TFLM lacks): SUM of INT32 / INT64 wraps
 * in the type, SUM of BOOL is whether any value is true; MEAN of INT32 / INT64 sums in int64 and divides by n
 * truncating toward zero (C++'s integer division).
 *
 * Prepare reorders the input's dimensions as (kept..., reduced...) and precomputes per-dimension strides, so
 * eval walks every output element's reduced block with one odometer. On a 64-bit Linux CPU with a fast path
 * (EDGE_SIMD), NHWC inputs reduced over H, W (a global average pool) sum in vectors over the channels, each channel
 * in pixel order: float32 edge_simd_sum_hw_f32, int8 edge_simd_sum_hw_q8 (the same sums: the same bits).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint.h"
#include "../simd/edge_simd.h"

/* EDGE_WITH_MEAN_HW (gen_ops.py path_defines: 0 for a build whose models have no int8 MEAN / SUM over H, W of an
 * NHWC tensor): mean_hw_q8, the channel sums of a global average pool without the odometer. */
#ifndef EDGE_WITH_MEAN_HW
#define EDGE_WITH_MEAN_HW 1
#endif

EDGE_KERNEL(MEAN, mean, 3, "FLOAT32 INT8 INT16 INT32 INT64", "INT32 / INT64: the int64 sum divided toward zero")
EDGE_KERNEL(SUM, sum, 2, "FLOAT32 INT8 INT16 INT32 INT64 BOOL", "INT32 / INT64 wrap; BOOL: any")

#define REDUCER_OPTS 27 /* ReducerOptions: 0 keep_dims */
#define MEAN_MAX_RANK 8

typedef struct {
    int32_t type;
    int32_t is_mean;
    int64_t n_out, n_red;                 /* output elements, elements reduced into each */
    int32_t n_kept, n_reduced;            /* odometer dimensions of each kind */
    int32_t kept_dims[MEAN_MAX_RANK], red_dims[MEAN_MAX_RANK];
    int64_t kept_stride[MEAN_MAX_RANK], red_stride[MEAN_MAX_RANK]; /* input elements */
    int32_t multiplier, shift, in_zp, out_zp, lo, hi;
    uint32_t offset;                      /* in_zp * n, wrapped to 32 bits */
    int32_t hw;                           /* int8 NHWC over H, W (kept {N, C}): mean_hw_q8 */
#if EDGE_SIMD
    int32_t simd;                         /* float32 / int8 NHWC over H, W on a 64-bit Linux CPU: its level (0: none) */
#endif
} mean_data_t;

static edge_status_t reduce_prepare(edge_node_t *node, edge_ctx_t *ctx, int is_mean) {
    const int keep = node->options_type == REDUCER_OPTS ? edge_opt_int(node, 0, 1, 0) != 0 : 0;
    edge_tensor_t *x, *a, *y;
    mean_data_t *d;
    int32_t rank, k, is_axis[MEAN_MAX_RANK] = {0}, shape[MEAN_MAX_RANK], out_rank = 0;
    int64_t stride[MEAN_MAX_RANK], n_axes, j;

    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MEAN/SUM expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    a = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !a) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MEAN/SUM: input and axis are required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_INT16 && x->type != EDGE_INT32 &&
        x->type != EDGE_INT64 && (is_mean || x->type != EDGE_BOOL))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "MEAN/SUM: input type (FLOAT32, INT8, INT16, INT32, INT64; SUM: BOOL)");
    {
        edge_status_t s = edge_type_built(ctx, x->type);
        if (s != EDGE_OK) return s;
    }
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MEAN/SUM: output type differs from input");
    if (a->type != EDGE_INT32 && a->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MEAN/SUM: axis type (INT32)");
    if (!a->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MEAN/SUM: axis computed at run time");
    rank = x->rank;
    if (rank > MEAN_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MEAN/SUM: rank above 8");
    n_axes = edge_tensor_elements(a);
    for (j = 0; j < n_axes; j++) {
        int64_t v;
        if (a->type == EDGE_INT64) memcpy(&v, (const uint8_t *)a->data + 8 * j, 8);
        else v = ((const int32_t *)a->data)[j];
        if (v < 0) v += rank;
        if (v < 0 || v >= (rank > 1 ? rank : 1)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MEAN/SUM: axis out of range");
        if (rank) is_axis[v] = 1;
    }
    for (k = 0; k < rank; k++) {
        if (!is_axis[k]) shape[out_rank++] = x->dims[k];
        else if (keep) shape[out_rank++] = 1;
    }
    {
        edge_status_t s = edge_set_output_shape(ctx, node, 0, shape, out_rank);
        if (s != EDGE_OK) return s;
    }
    d = (mean_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->type = x->type;
    d->is_mean = is_mean;
    if (rank) stride[rank - 1] = 1;
    for (k = rank - 2; k >= 0; k--) stride[k] = stride[k + 1] * x->dims[k + 1];
    d->n_out = d->n_red = 1;
    for (k = 0; k < rank; k++) {
        if (is_axis[k]) {
            d->red_dims[d->n_reduced] = x->dims[k];
            d->red_stride[d->n_reduced++] = stride[k];
            d->n_red *= x->dims[k];
        } else {
            d->kept_dims[d->n_kept] = x->dims[k];
            d->kept_stride[d->n_kept++] = stride[k];
            d->n_out *= x->dims[k];
        }
    }
    if (edge_tensor_elements(x) == 0) d->n_red = 0; /* eval fills zeros */
    if (x->type == EDGE_INT32 || x->type == EDGE_INT64 || x->type == EDGE_BOOL) return EDGE_OK; /* mean_integer */
    if (EDGE_WITH_FLOAT32 && x->type == EDGE_FLOAT32) {
#if EDGE_SIMD
        d->simd = rank == 4 && !is_axis[0] && is_axis[1] && is_axis[2] && !is_axis[3] && d->n_red > 0 ? edge_simd_level() : 0;
        if (d->simd && !edge_simd_sum_hw_f32(d->simd, NULL, 0, 0, 0, 0, NULL)) d->simd = 0;
#endif
        return EDGE_OK;
    }

    if (!x->quantized || !y->quantized) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MEAN/SUM: needs quantized input and output");
    if (x->n_scales != 1 || y->n_scales != 1) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MEAN/SUM: per-channel quantization");
    if (edge_quantize_multiplier((double)x->scale / (double)y->scale, &d->multiplier, &d->shift) != 0)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MEAN/SUM: scales are not finite");
    if (is_mean && d->n_red > 0) {
        int32_t bits = 0, fold;
        int64_t n = d->n_red;
        while ((n >> (bits + 1)) > 0) bits++; /* floor(log2 n) */
        fold = bits < 32 ? bits : 32;
        if (31 + d->shift < fold) fold = 31 + d->shift;
        if (fold < 0) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MEAN: scale ratio too small");
        d->multiplier = (int32_t)((int64_t)(((uint64_t)(uint32_t)d->multiplier << fold) / (uint64_t)n));
        d->shift -= fold;
    }
    if (d->shift < -31) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MEAN/SUM: scale ratio too small");
    d->in_zp = x->zero_point;
    d->out_zp = y->zero_point;
    d->offset = (uint32_t)(int32_t)x->zero_point * (uint32_t)(d->n_red & 0xffffffff);
    d->lo = x->type == EDGE_INT8 ? -128 : -32768;
    d->hi = x->type == EDGE_INT8 ? 127 : 32767;
    d->hw = EDGE_WITH_MEAN_HW && x->type == EDGE_INT8 && rank == 4 && !is_axis[0] && is_axis[1] && is_axis[2] &&
            !is_axis[3] && d->n_red > 0 && d->n_red <= INT32_MAX;
#if EDGE_SIMD
    /* int8 NHWC over H, W: the channels' sums in vectors (the same int32 values), requantized as below */
    d->simd = x->type == EDGE_INT8 && rank == 4 && !is_axis[0] && is_axis[1] && is_axis[2] && !is_axis[3] &&
                      d->n_red > 0 ? edge_simd_level() : 0;
    if (d->simd && !edge_simd_sum_hw_q8(d->simd, NULL, 0, 0, 0, NULL)) d->simd = 0;
#endif
    return EDGE_OK;
}

edge_status_t edge_prepare_mean(edge_node_t *node, edge_ctx_t *ctx) { return reduce_prepare(node, ctx, 1); }
edge_status_t edge_prepare_sum(edge_node_t *node, edge_ctx_t *ctx) { return reduce_prepare(node, ctx, 0); }

/* The integer kinds: the sum of output o's block in uint64 (wrapping), as SUM / MEAN of the type. */
static void mean_integer(const mean_data_t *d, const edge_tensor_t *x, edge_tensor_t *y, int64_t o, int64_t base) {
    int32_t ridx[MEAN_MAX_RANK] = {0}, k;
    int64_t r, pos = base, v;
    uint64_t s = 0;
    for (r = 0; r < d->n_red; r++) {
        if (d->type == EDGE_INT64) {
            int64_t e;
            memcpy(&e, (const uint8_t *)x->data + 8 * pos, 8);
            s += (uint64_t)e;
        } else if (d->type == EDGE_INT32) {
            s += (uint64_t)(int64_t)((const int32_t *)x->data)[pos];
        } else {
            s |= ((const uint8_t *)x->data)[pos] != 0;
        }
        for (k = d->n_reduced - 1; k >= 0; k--) {
            pos += d->red_stride[k];
            if (++ridx[k] < d->red_dims[k]) break;
            pos -= d->red_stride[k] * d->red_dims[k];
            ridx[k] = 0;
        }
    }
    v = (int64_t)s;
    if (d->is_mean) v /= d->n_red; /* toward zero */
    if (d->type == EDGE_INT64) memcpy((uint8_t *)y->data + 8 * o, &v, 8);
    else if (d->type == EDGE_INT32) ((int32_t *)y->data)[o] = (int32_t)(uint32_t)(uint64_t)v;
    else ((uint8_t *)y->data)[o] = (uint8_t)(s != 0);
}

/* One int8 output from a channel's int32 sum (wrapping, as TFLM's): minus in_zp * n, requantized, clamped. */
static int8_t mean_rq_q8(const mean_data_t *d, uint32_t s) {
    int64_t v = (int64_t)edge_mbqm(edge_wrap32((int64_t)(s - d->offset)), d->multiplier, d->shift) + d->out_zp;
    return (int8_t)(v < d->lo ? d->lo : (v > d->hi ? d->hi : v));
}

#if EDGE_WITH_MEAN_HW
/* Channel ch's sum over the n pixels of x [n, c], one byte every c: the plain loop (channels a DSP group leaves). */
static uint32_t mean_hw_channel(const int8_t *x, int32_t n, int32_t c) {
    uint32_t s = 0;
    int32_t p;
    for (p = 0; p < n; p++, x += c) s += (uint32_t)(int32_t)*x;
    return s;
}

#if EDGE_DSP
/* Eight channels over np (1..256) pixels from px, one pixel every c bytes: lane[0] channels 0, 2 (int16 halves),
 * lane[1] 1, 3, lane[2] 4, 6, lane[3] 5, 7. On the M4 one asm loop, 9 instructions a pixel (GCC -Os spills the
 * four accumulators of the C loop). */
static void mean_hw_lanes8(const int8_t *px, int32_t np, int32_t c, uint32_t lane[4]) {
    uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
#if EDGE_DSP_ASM
    uint32_t w0, w1;
    __asm__ volatile(
        "1:\n\t"
        "ldr %[w0], [%[p]]\n\t"
        "ldr %[w1], [%[p], #4]\n\t"
        "add %[p], %[p], %[c]\n\t"
        "sxtab16 %[a0], %[a0], %[w0]\n\t"
        "sxtab16 %[a1], %[a1], %[w0], ror #8\n\t"
        "sxtab16 %[a2], %[a2], %[w1]\n\t"
        "sxtab16 %[a3], %[a3], %[w1], ror #8\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n\t"
        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [w0] "=&r"(w0), [w1] "=&r"(w1), [p] "+r"(px),
          [n] "+r"(np)
        : [c] "r"(c)
        : "cc", "memory");
#else
    for (; np > 0; np--, px += c) {
        const uint32_t w0 = edge_get32(px), w1 = edge_get32(px + 4);
        a0 = edge_sxtab16(a0, w0);
        a1 = edge_sxtab16_ror8(a1, w0);
        a2 = edge_sxtab16(a2, w1);
        a3 = edge_sxtab16_ror8(a3, w1);
    }
#endif
    lane[0] = a0, lane[1] = a1, lane[2] = a2, lane[3] = a3;
}
#endif

/* NHWC int8 over H, W: x [N, n = H * W, c] -> y [N, c]. Integer sums wrap mod 2^32, so any order gives TFLM's.
 * DSP cores: eight channels a pass, SXTAB16 into int16 lanes (mean_hw_lanes8); a lane holds 256 int8 values
 * (|sum| <= 32768), so blocks of 256 pixels, each block's lanes added to int32 sums. Other channels (and cores
 * without DSP): mean_hw_channel, the bytes of one channel in turn. */
static void mean_hw_q8(const mean_data_t *d, const int8_t *x, int8_t *y, int32_t batches, int32_t n, int32_t c) {
    int32_t b, ch;
    for (b = 0; b < batches; b++, x += (int64_t)n * c, y += c) {
        ch = 0;
#if EDGE_DSP
        for (; ch + 8 <= c; ch += 8) {
            uint32_t s[8] = {0}, lane[4];
            int32_t p0, i;
            for (p0 = 0; p0 < n; p0 += 256) {
                mean_hw_lanes8(x + (int64_t)p0 * c + ch, n - p0 < 256 ? n - p0 : 256, c, lane);
                for (i = 0; i < 4; i++) { /* lane i: channels 4 * (i / 2) + i % 2 + {0, 2} */
                    const int32_t k = 4 * (i >> 1) + (i & 1);
                    s[k] += (uint32_t)(int32_t)(int16_t)(lane[i] & 0xffff);
                    s[k + 2] += (uint32_t)(int32_t)(int16_t)(lane[i] >> 16);
                }
            }
            for (i = 0; i < 8; i++) y[ch + i] = mean_rq_q8(d, s[i]);
        }
#endif
        for (; ch < c; ch++) y[ch] = mean_rq_q8(d, mean_hw_channel(x + ch, n, c));
    }
}
#endif

void edge_eval_mean(const edge_node_t *node, edge_ctx_t *ctx) {
    const mean_data_t *d = (const mean_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    int32_t kidx[MEAN_MAX_RANK] = {0};
    int64_t o, base = 0;
    int32_t k;

    if (d->n_red == 0) {
        memset(y->data, 0, y->bytes);
        return;
    }
#if EDGE_SIMD
    if (d->simd && d->type == EDGE_INT8 && !(EDGE_WITH_PATCH && ctx->window)) { /* NHWC over H, W: kept {N, C} */
        const int32_t c = d->kept_dims[1];
        int32_t sums[256], c0, i;
        for (o = 0; o < d->kept_dims[0]; o++) {
            for (c0 = 0; c0 < c; c0 += 256) {
                const int32_t nc = c - c0 < 256 ? c - c0 : 256;
                int8_t *yo = (int8_t *)y->data + o * c + c0;
                (void)edge_simd_sum_hw_q8(d->simd, (const int8_t *)x->data + o * d->n_red * c + c0, d->n_red, c, nc,
                                          sums);
                if (edge_simd_rq_sums_q8(d->simd, sums, nc, (int32_t)d->offset, d->multiplier, d->shift, d->out_zp,
                                         d->lo, d->hi, yo))
                    continue; /* 16 outputs a step */
                for (i = 0; i < nc; i++) {
                    int64_t v = (int64_t)edge_mbqm(edge_wrap32((int64_t)((uint32_t)sums[i] - d->offset)), d->multiplier,
                                                   d->shift) + d->out_zp;
                    yo[i] = (int8_t)(v < d->lo ? d->lo : (v > d->hi ? d->hi : v));
                }
            }
        }
        return;
    }
    if (d->simd && !(EDGE_WITH_PATCH && ctx->window)) { /* NHWC over H, W: kept_dims = {N, C} */
        const int32_t c = d->kept_dims[1];
        for (o = 0; o < d->kept_dims[0]; o++)
            (void)edge_simd_sum_hw_f32(d->simd, (const float *)x->data + o * d->n_red * c, d->n_red, c, c, d->is_mean,
                                       (float *)y->data + o * c);
        return;
    }
#endif
#if EDGE_WITH_MEAN_HW
    if (d->hw && !(EDGE_WITH_PATCH && ctx->window)) {
        mean_hw_q8(d, (const int8_t *)x->data, (int8_t *)y->data, d->kept_dims[0], (int32_t)d->n_red, d->kept_dims[1]);
        return;
    }
#endif
    for (o = 0; o < d->n_out; o++) {
        int32_t ridx[MEAN_MAX_RANK] = {0};
        int64_t r, pos = base;
        if (d->type == EDGE_INT32 || d->type == EDGE_INT64 || d->type == EDGE_BOOL) {
            mean_integer(d, x, y, o, base);
        } else if (EDGE_WITH_FLOAT32 && d->type == EDGE_FLOAT32) {
            const float *in = (const float *)x->data;
            float s = 0.0f;
            for (r = 0; r < d->n_red; r++) {
                s += in[pos];
                for (k = d->n_reduced - 1; k >= 0; k--) {
                    pos += d->red_stride[k];
                    if (++ridx[k] < d->red_dims[k]) break;
                    pos -= d->red_stride[k] * d->red_dims[k];
                    ridx[k] = 0;
                }
            }
            if (d->is_mean) s /= (float)d->n_red;
            ((float *)y->data)[o] = s;
        } else {
            uint32_t s = 0; /* TFLM's int32 sum, wrapping */
            int64_t v;
            if (!EDGE_WITH_INT16 || d->type == EDGE_INT8) {
                const int8_t *in = (const int8_t *)x->data;
                for (r = 0; r < d->n_red; r++) {
                    s += (uint32_t)(int32_t)in[pos];
                    for (k = d->n_reduced - 1; k >= 0; k--) {
                        pos += d->red_stride[k];
                        if (++ridx[k] < d->red_dims[k]) break;
                        pos -= d->red_stride[k] * d->red_dims[k];
                        ridx[k] = 0;
                    }
                }
            } else {
                const int16_t *in = (const int16_t *)x->data;
                for (r = 0; r < d->n_red; r++) {
                    s += (uint32_t)(int32_t)in[pos];
                    for (k = d->n_reduced - 1; k >= 0; k--) {
                        pos += d->red_stride[k];
                        if (++ridx[k] < d->red_dims[k]) break;
                        pos -= d->red_stride[k] * d->red_dims[k];
                        ridx[k] = 0;
                    }
                }
            }
            if (d->type == EDGE_INT8) {
                ((int8_t *)y->data)[o] = mean_rq_q8(d, s);
            } else {
                v = (int64_t)edge_mbqm(edge_wrap32((int64_t)(s - d->offset)), d->multiplier, d->shift) + d->out_zp;
                ((int16_t *)y->data)[o] = (int16_t)(v < d->lo ? d->lo : (v > d->hi ? d->hi : v));
            }
        }
        for (k = d->n_kept - 1; k >= 0; k--) {
            base += d->kept_stride[k];
            if (++kidx[k] < d->kept_dims[k]) break;
            base -= d->kept_stride[k] * d->kept_dims[k];
            kidx[k] = 0;
        }
    }
}

void edge_eval_sum(const edge_node_t *node, edge_ctx_t *ctx) { edge_eval_mean(node, ctx); }
