/* TRANSPOSE_CONV: inputs (output_shape, weights [O, kh, kw, C], input [N, H, W, C], optional bias [O]).
 * Every input pixel scatters x[b, iy, ix, :] . w[o, fy, fx, :] into output cell (iy*sh - pt + fy,
 * ix*sw - pl + fx, o) when that cell lies inside the output; padding (SAME / VALID) is computed from the
 * output size with dilation 1. As TFLM's reference TransposeConv kernels (edge_sdk/runtime/kernels/conv.py
 * prepare_transpose_conv):
 *  - int8: int32 scratch sums of (x + input_offset) * w (wrapping), + int32 bias, the channel's
 *    MultiplyByQuantizedMultiplier, + output zero point, activation clamp;
 *  - int16x8: int64 scratch sums of x * w, + bias (INT64, or INT16 widened), the 16-bit-multiplier
 *    requantization, activation clamp (no offsets);
 *  - float32: products added one by one into the zeroed output in the reference's order, then + bias,
 *    then the clamp;
 *  - hybrid (FLOAT32 input, constant INT8 filter: LiteRT's EvalHybrid / reference HybridTransposeConv, which TFLM
 *    lacks): each batch image quantized asymmetric (eh_quantize_row), every input element's (q - zp) * w, as
 *    float32 times the channel's scale (one per tensor repeated) times the image's scale, added into the zeroed
 *    float32 output in the input's order (y, x, c, then the taps), then + bias and the clamp (hybrid.py).
 * The output shape comes from the constant output_shape tensor (else the model's declared output shape, which an
 * output_shape computed at run time must hold: eval checks it, EDGE_BAD_INPUT naming the element that differs).
 *
 * Fast path (EDGE_SIMD, a CPU level with a GEMM; int8 and float32, constant filter and bias): when the stride
 * equals the filter (kh == sh, kw == sw: U-Net's 2x2 s2 up-sampling) with no padding and the output exactly
 * h * sh x w * sw, every output cell gets exactly one tap, so the layer is kh * kw GEMMs, one per tap (fy, fx):
 * rows = the input pixels of one input row [w, c], columns = the o filters' tap (fy, fx) [o, c] (packed once at
 * prepare, bias, requantization and clamp fused), written straight into output row iy * sh + fy at columns
 * ix * sw + fx (stride sw * o). No sums buffer, no scatter. int8: the GEMM's sums are exact and its
 * requantization is edge_rq_apply's, bit-exact with the portable kernel's edge_mbqm for the multipliers edge_rq
 * covers (else the portable kernel). float32: one sum in input-channel order per output, each step a fused
 * multiply-add, + bias, clamp: within rounding of the portable kernel's separately rounded steps.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_conv.h"
#include "../edge_fixedpoint.h"
#include "../edge_hybrid.h"

EDGE_KERNEL(TRANSPOSE_CONV, transpose_conv, 5, "input 2: FLOAT32/FLOAT32 INT8/INT8 INT16/INT8 FLOAT32/INT8", "NHWC 4-D; quantized filter per-tensor or per-channel; FLOAT32 input with a constant INT8 filter: LiteRT's hybrid kernel")

enum { TC_FLOAT = 0, TC_INT8 = 1, TC_INT16 = 2, TC_HYBRID = 3 };

typedef struct {
    int32_t kind;
    int32_t n, h, w, c;         /* input */
    int32_t oh, ow, o;          /* output */
    int32_t kh, kw, sh, sw, pt, pl;
    int32_t bias16;             /* int16 kernel with an INT16 bias (widened) */
    int32_t input_offset, output_offset, lo, hi;
    float flo, fhi;
    int32_t *rq;                /* per output channel: edge_mbqm's multiplier and shift, 5 bytes (edge_conv_rq) */
    const float *wscales;       /* hybrid: the filter's scales in the model (n_wscales: 1 or one per filter) */
    int32_t n_wscales;
    int32_t scratch;            /* int32 (int8) / int64 (int16) sums, one per output value; the fast path: the int8
                                 * GEMM's work */
#if EDGE_SIMD
    edge_simd_qgemm_t *qtap;    /* int8 fast path: kh * kw packed GEMMs (tap fy * kw + fx), NULL: portable */
    edge_simd_sgemm_t *ftap;    /* float32 fast path: the same, NULL: portable */
#endif
} tc_data_t;

#if EDGE_SIMD
/* Whether every output cell gets exactly one tap (stride == filter, no padding, output h * sh x w * sw) and the
 * filter and bias are constants: the per-tap GEMMs of the fast path. */
static int tc_one_tap_each(const tc_data_t *d, const edge_tensor_t *w, const edge_tensor_t *bias) {
    return d->kh == d->sh && d->kw == d->sw && d->pt == 0 && d->pl == 0 && d->oh == d->h * d->sh &&
           d->ow == d->w * d->sw && w->is_const && (!bias || bias->is_const);
}

/* float32: tap t's GEMM packs filter o's values w[o, fy, fx, :] (k = c, ldn = kh * kw * c) with the bias. */
static edge_status_t tc_prepare_simd_f32(edge_ctx_t *ctx, tc_data_t *d, const edge_tensor_t *w,
                                         const edge_tensor_t *bias) {
    const int32_t level = edge_simd_level(), taps = d->kh * d->kw;
    const size_t bytes = level ? edge_simd_sgemm_bytes(level, d->o, d->c) : 0;
    int32_t t;
    if (!bytes || !tc_one_tap_each(d, w, bias)) return EDGE_OK;
    d->ftap = (edge_simd_sgemm_t *)edge_alloc_persistent(ctx, sizeof *d->ftap * (size_t)taps);
    if (!d->ftap) return EDGE_ARENA_TOO_SMALL;
    for (t = 0; t < taps; t++) {
        void *packed = edge_alloc_packed(ctx, bytes);
        if (!packed) return EDGE_ARENA_TOO_SMALL;
        edge_simd_sgemm_pack(&d->ftap[t], level, (const float *)w->data + (int64_t)t * d->c, d->o, d->c,
                             (int64_t)taps * d->c, 1, bias ? (const float *)bias->data : 0, d->flo, d->fhi, packed);
        d->ftap[t].pack_scratch = -1;
        d->ftap[t].rows = 0;
    }
    return EDGE_OK;
}

/* int8: the same per-tap GEMMs, with edge_rq's form of every channel's multiplier and shift (from the rq block's
 * edge_mbqm form); a channel edge_rq does not cover keeps the portable kernel. Returns with d->qtap set when it
 * packed; scratch: the GEMM's work. */
static edge_status_t tc_prepare_simd_int8(edge_node_t *node, edge_ctx_t *ctx, tc_data_t *d, const edge_tensor_t *w,
                                          const edge_tensor_t *bias) {
    const int32_t level = edge_simd_level(), taps = d->kh * d->kw;
    const size_t bytes = level ? edge_simd_qgemm_bytes(level, d->o, d->c) : 0;
    int32_t *mul, *rs, t, ch;
    if (!bytes || !tc_one_tap_each(d, w, bias)) return EDGE_OK;
    mul = (int32_t *)edge_alloc_persistent(ctx, 2 * sizeof(int32_t) * (size_t)d->o);
    if (!mul) return EDGE_ARENA_TOO_SMALL;
    rs = mul + d->o;
    for (ch = 0; ch < d->o; ch++) {
        edge_rq_t q;
        if (edge_rq_make(&q, edge_conv_mult(d->rq, ch), edge_conv_shift(d->rq, d->o, ch)) != 0) return EDGE_OK;
        mul[ch] = q.mul;
        rs[ch] = q.rnd;
    }
    d->qtap = (edge_simd_qgemm_t *)edge_alloc_persistent(ctx, sizeof *d->qtap * (size_t)taps);
    if (!d->qtap) return EDGE_ARENA_TOO_SMALL;
    for (t = 0; t < taps; t++) {
        void *packed = edge_alloc_packed(ctx, bytes);
        if (!packed) return EDGE_ARENA_TOO_SMALL;
        edge_simd_qgemm_pack(&d->qtap[t], level, (const int8_t *)w->data + (int64_t)t * d->c, d->o, d->c,
                             taps * d->c, 1, bias ? (const int32_t *)bias->data : 0, d->input_offset, mul, 1, rs, 1,
                             d->output_offset, d->lo, d->hi, packed);
    }
    return edge_request_scratch(ctx, node, edge_simd_qgemm_work(level, d->c, 0), &d->scratch);
}
#endif

/* TransposeConvOptions: 0 padding, 1 stride_w, 2 stride_h, 3 fused_activation_function, 4 quantized_bias_type. */
/* The hybrid kind's tensors (FLOAT32 input and output, constant quantized INT8 filter, 4-D); EDGE_UNSUPPORTED_TYPE
 * without a failure recorded when the node is another kind. */
static edge_status_t tc_hybrid_check(edge_ctx_t *ctx, const edge_tensor_t *in, const edge_tensor_t *w,
                                     const edge_tensor_t *out, int32_t act) {
    if (in->type != EDGE_FLOAT32 || w->type != EDGE_INT8) return EDGE_UNSUPPORTED_TYPE;
    if (!EDGE_WITH_FLOAT32) return edge_type_built(ctx, EDGE_FLOAT32);
    if (out->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: hybrid output must be FLOAT32");
    if (in->rank != 4 || w->rank != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and filter must be 4-D");
    if (!w->is_const || w->is_sparse || !w->quantized)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE_CONV: a hybrid filter must be constant, dense and quantized");
    if (act < 0 || act > EDGE_ACT_RELU6) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "fused activation");
    return EDGE_OK;
}

/* Hybrid: the float clamp, the filter's scales, a float bias, and scratch for the quantized input (n * h * w * c
 * int8) with each image's scale and zero point. */
static edge_status_t tc_prepare_hybrid(edge_node_t *node, edge_ctx_t *ctx, tc_data_t *d, const edge_tensor_t *w,
                                       const edge_tensor_t *bias, int32_t act) {
    const size_t values = (size_t)d->n * (size_t)d->h * (size_t)d->w * (size_t)d->c;
    d->kind = TC_HYBRID;
    if (bias && (bias->type != EDGE_FLOAT32 || edge_tensor_elements(bias) != d->o || !bias->is_const))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: a hybrid bias must be a FLOAT32 constant, one per filter");
    if (w->n_scales != 1 && w->n_scales != d->o)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: filter needs one scale or one per filter");
    d->wscales = w->scales;
    d->n_wscales = w->n_scales;
    edge_activation_range_float(act, &d->flo, &d->fhi);
    return edge_request_scratch(ctx, node, (values + 7) / 8 * 8 + (size_t)d->n * 8, &d->scratch);
}

edge_status_t edge_prepare_transpose_conv(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_conv_opts_t op = edge_conv_opts(node, EDGE_OPTS_TransposeConvOptions, 3, -1);
    edge_tensor_t *shp, *w, *in, *bias, *out;
    tc_data_t *d;
    int32_t target[4], k, unused;
    edge_status_t s;

    if (node->n_inputs < 3 || node->n_inputs > 4 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV expects 3..4 inputs and 1 output");
    shp = edge_in(ctx, node, 0);
    w = edge_in(ctx, node, 1);
    in = edge_in(ctx, node, 2);
    bias = edge_in(ctx, node, 3);
    out = edge_out(ctx, node, 0);
    if (!shp || !w || !in) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: output_shape, weights and input are required");
    s = tc_hybrid_check(ctx, in, w, out, op.act);
    if (s == EDGE_UNSUPPORTED_TYPE) s = edge_conv_check(ctx, in, w, out, op.act); /* not hybrid: the other kinds */
    if (s != EDGE_OK) return s;
    if (w->dims[3] != in->dims[3]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: weights depth differs from input depth");

    if (shp->is_const) {
        if (shp->type != EDGE_INT32 || edge_tensor_elements(shp) != 4)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: output_shape must be 4 INT32 values");
        memcpy(target, shp->data, sizeof target);
    } else { /* computed at run time from data: the declared shape, checked at every eval (tc_shape_differs) */
        if (shp->type != EDGE_INT32 || edge_tensor_elements(shp) != 4)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: output_shape must be 4 INT32 values");
        if (out->rank != 4) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE_CONV: output_shape must be a constant tensor");
        for (k = 0; k < 4; k++) {
            target[k] = out->dims[k];
            if (target[k] <= 0) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE_CONV: output_shape must be a constant tensor");
        }
    }
    if (target[0] != in->dims[0] || target[3] != w->dims[0] || target[1] <= 0 || target[2] <= 0)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: output_shape does not fit the batch and the filters");

    d = (tc_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->n = in->dims[0];
    d->h = in->dims[1];
    d->w = in->dims[2];
    d->c = in->dims[3];
    d->o = w->dims[0];
    d->kh = w->dims[1];
    d->kw = w->dims[2];
    d->oh = target[1];
    d->ow = target[2];
    d->sh = op.sh;
    d->sw = op.sw;
    d->scratch = -1;
    if (d->n <= 0 || d->c <= 0 || d->o <= 0 || d->h <= 0 || d->w <= 0)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: empty input or weights");
    /* the op.padding a forward convolution of the output's size would use (dilation 1) */
    if (edge_conv_window(op.padding, op.sh, 1, d->oh, d->kh, &unused, &d->pt) ||
        edge_conv_window(op.padding, op.sw, 1, d->ow, d->kw, &unused, &d->pl))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: padding, strides or window do not fit the output");
    /* the scatter's first output row / column iy * sh - pt (and h * sh) in int32: a stride of 2^31 / 2 overflowed
     * (UBSan, session 18's fuzz finding) */
    if ((int64_t)d->h * d->sh + d->kh > 0x7fffffff || (int64_t)d->w * d->sw + d->kw > 0x7fffffff)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: strides too large for the input");
    s = edge_set_output_shape(ctx, node, 0, target, 4);
    if (s != EDGE_OK) return s;

    if (in->type == EDGE_FLOAT32 && w->type == EDGE_INT8) return tc_prepare_hybrid(node, ctx, d, w, bias, op.act);
    if (in->type == EDGE_FLOAT32) {
        d->kind = TC_FLOAT;
        if (bias && (bias->type != EDGE_FLOAT32 || edge_tensor_elements(bias) != d->o))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: bias must be FLOAT32 with one value per filter");
        edge_activation_range_float(op.act, &d->flo, &d->fhi);
#if EDGE_SIMD
        return tc_prepare_simd_f32(ctx, d, w, bias);
#else
        return EDGE_OK;
#endif
    }
    d->kind = in->type == EDGE_INT8 ? TC_INT8 : TC_INT16;
    if (bias) {
        const int ok = d->kind == TC_INT8 ? bias->type == EDGE_INT32
                                          : (bias->type == EDGE_INT64 || bias->type == EDGE_INT16);
        if (!ok) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "TRANSPOSE_CONV: bias must be INT32 (int8) or INT64/INT16 (int16)");
        if (edge_tensor_elements(bias) != d->o)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE_CONV: bias needs one value per filter");
        d->bias16 = bias->type == EDGE_INT16;
    }
    s = edge_conv_check_quant(ctx, in, w, out, d->o, op.act, &d->lo, &d->hi);
    if (s != EDGE_OK) return s;
    d->input_offset = d->kind == TC_INT8 ? -in->zero_point : 0;
    d->output_offset = d->kind == TC_INT8 ? out->zero_point : 0;
    {
        int32_t generic;
        s = edge_conv_rq(ctx, in, w, out, d->o, 0, &d->rq, &generic);
        if (s != EDGE_OK) return s;
    }
#if EDGE_SIMD
    if (d->kind == TC_INT8) {
        s = tc_prepare_simd_int8(node, ctx, d, w, bias);
        if (s != EDGE_OK || d->qtap) return s;
    }
#endif
    {
        const int64_t elems = (int64_t)d->n * d->oh * d->ow * d->o;
        const size_t bytes = (size_t)elems * (d->kind == TC_INT8 ? sizeof(int32_t) : sizeof(int64_t));
        s = edge_request_scratch(ctx, node, bytes, &d->scratch);
        if (s != EDGE_OK) return s;
    }
    return EDGE_OK;
}

/* Every input pixel's products into the sums of the output cells its taps reach, one dot product over the
 * input channels per (tap, output channel): int8 (x8 + input offset) into wrapping uint32 sums acc32, int16
 * (x16, x8 null) into int64 sums acc64. On DSP cores the int8 dot products run two filters at a time
 * (edge_dot2_s8: ~1.6 instructions per MAC, where the portable loop's byte loads, 64-bit index arithmetic and
 * MLA took ~16 on the M4: U-Net 96's 2x2 s2 up-sampling 79 M instructions, TFLM + CMSIS-NN's 33 M). */
static void tc_scatter(const tc_data_t *d, const int8_t *x8, const int16_t *x16, const int8_t *wt, uint32_t *acc32,
                       int64_t *acc64) {
    const int32_t c = d->c, o = d->o, off = d->input_offset;
    const int i8 = !EDGE_WITH_INT16 || x8 != 0;
    int32_t b, iy, ix, fy, fx, oc, i, fy0, fy1, fx0, fx1;
    for (b = 0; b < d->n; b++) {
        for (iy = 0; iy < d->h; iy++) {
            const int32_t oy0 = iy * d->sh - d->pt;
            edge_conv_taps(oy0, 1, d->oh, d->kh, &fy0, &fy1);
            for (ix = 0; ix < d->w; ix++) {
                const int32_t ox0 = ix * d->sw - d->pl;
                const int64_t xo = (((int64_t)b * d->h + iy) * d->w + ix) * c;
                edge_conv_taps(ox0, 1, d->ow, d->kw, &fx0, &fx1);
                for (fy = fy0; fy < fy1; fy++) {
                    for (fx = fx0; fx < fx1; fx++) {
                        const int64_t ao = (((int64_t)b * d->oh + oy0 + fy) * d->ow + ox0 + fx) * o;
#if EDGE_DSP
                        if (i8) { /* filters oc, oc + 1 (a lone last one paired with itself), kh * kw * c apart */
                            const int32_t fstep = d->kh * d->kw * c;
                            const int8_t *wp = wt + ((int64_t)fy * d->kw + fx) * c, *xp = x8 + xo;
                            uint32_t *ap = acc32 + ao, s0, s1;
                            for (oc = 0; oc < o; oc += 2, wp += 2 * fstep, ap += 2) {
                                const int two = oc + 1 < o;
                                edge_dot2_s8(xp, wp, two ? wp + fstep : wp, c, off, &s0, &s1);
                                ap[0] += s0;
                                if (two) ap[1] += s1;
                            }
                            continue;
                        }
#endif
                        for (oc = 0; oc < o; oc++) {
                            const int8_t *wp = wt + (((int64_t)oc * d->kh + fy) * d->kw + fx) * c;
                            if (i8) {
                                uint32_t sum = 0;
                                for (i = 0; i < c; i++) sum += (uint32_t)((x8[xo + i] + off) * wp[i]);
                                acc32[ao + oc] += sum;
                            } else {
                                int64_t sum = 0;
                                for (i = 0; i < c; i++) sum += (int32_t)x16[xo + i] * wp[i];
                                acc64[ao + oc] += sum;
                            }
                        }
                    }
                }
            }
        }
    }
}

static void tc_int8(const tc_data_t *d, const int8_t *x, const int8_t *wt, const int32_t *bias, int8_t *y,
                    uint32_t *acc) {
    const int32_t o = d->o;
    const int64_t npix = (int64_t)d->n * d->oh * d->ow;
    int64_t p, e = 0;
    int32_t ch;
    memset(acc, 0, sizeof(uint32_t) * (size_t)(npix * o));
    tc_scatter(d, x, 0, wt, acc, 0);
    for (p = 0; p < npix; p++) {
        for (ch = 0; ch < o; ch++, e++) {
            uint32_t a = acc[e] + (bias ? (uint32_t)bias[ch] : 0u);
            int32_t r = edge_mbqm(edge_wrap32((int64_t)a), edge_conv_mult(d->rq, ch), edge_conv_shift(d->rq, o, ch));
            r += d->output_offset;
            y[e] = (int8_t)edge_clamp32(r, d->lo, d->hi);
        }
    }
}

static void tc_int16(const tc_data_t *d, const int16_t *x, const int8_t *wt, const void *bias, int16_t *y,
                     int64_t *acc) {
    const int32_t o = d->o;
    const int64_t npix = (int64_t)d->n * d->oh * d->ow;
    int64_t p, e = 0;
    int32_t ch;
    memset(acc, 0, sizeof(int64_t) * (size_t)(npix * o));
    tc_scatter(d, 0, x, wt, 0, acc);
    for (p = 0; p < npix; p++) {
        for (ch = 0; ch < o; ch++, e++) {
            int64_t a = acc[e];
            int32_t r;
            if (bias)
                a = edge_conv_add64(a, d->bias16 ? (int64_t)((const int16_t *)bias)[ch] : ((const int64_t *)bias)[ch]);
            r = edge_mbqm64(a, edge_conv_mult(d->rq, ch), edge_conv_shift(d->rq, o, ch));
            y[e] = (int16_t)edge_clamp32(r, d->lo, d->hi);
        }
    }
}

static void tc_float(const tc_data_t *d, const float *x, const float *wt, const float *bias, float *y) {
    const int32_t c = d->c, o = d->o;
    const int64_t total = (int64_t)d->n * d->oh * d->ow * o;
    int32_t b, iy, ix, fy, fx, oc, i, fy0, fy1, fx0, fx1;
    int64_t e;
    for (e = 0; e < total; e++) y[e] = 0.0f;
    for (b = 0; b < d->n; b++) {
        for (iy = 0; iy < d->h; iy++) {
            const int32_t oy0 = iy * d->sh - d->pt;
            edge_conv_taps(oy0, 1, d->oh, d->kh, &fy0, &fy1);
            for (ix = 0; ix < d->w; ix++) {
                const int32_t ox0 = ix * d->sw - d->pl;
                const float *xp = x + (((int64_t)b * d->h + iy) * d->w + ix) * c;
                edge_conv_taps(ox0, 1, d->ow, d->kw, &fx0, &fx1);
                for (fy = fy0; fy < fy1; fy++) {
                    for (fx = fx0; fx < fx1; fx++) {
                        float *yp = y + (((int64_t)b * d->oh + oy0 + fy) * d->ow + ox0 + fx) * o;
                        for (oc = 0; oc < o; oc++) {
                            const float *wp = wt + (((int64_t)oc * d->kh + fy) * d->kw + fx) * c;
                            /* one product at a time, in input-channel order, as the reference adds them */
                            for (i = 0; i < c; i++) yp[oc] += xp[i] * wp[i];
                        }
                    }
                }
            }
        }
    }
    for (oc = 0, e = 0; e < total; e++) {
        float v = y[e] + (bias ? bias[oc] : 0.0f);
        y[e] = v < d->flo ? d->flo : (v > d->fhi ? d->fhi : v);
        if (++oc == o) oc = 0; /* e's channel, without a 64-bit % */
    }
}

/* Hybrid (tc_prepare_hybrid): q and its per-image scale / zero point in the scratch `work`, then LiteRT's scatter
 * in float32: one product term at a time per output value, in the input's order, then bias and clamp. */
static void tc_hybrid(const tc_data_t *d, const float *x, const int8_t *wt, const float *bias, float *y, void *work) {
    const int32_t c = d->c, o = d->o;
    const int64_t image = (int64_t)d->h * d->w * c, total = (int64_t)d->n * d->oh * d->ow * o;
    int8_t *q = (int8_t *)work;
    float *scales = (float *)((uint8_t *)work + ((size_t)d->n * (size_t)image + 7) / 8 * 8);
    int32_t *zps = (int32_t *)(scales + d->n);
    int32_t b, iy, ix, i, fy, fx, oc, fy0, fy1, fx0, fx1;
    int64_t e;
    for (b = 0; b < d->n; b++) eh_quantize_row(x + b * image, (int32_t)image, 1, q + b * image, &scales[b], &zps[b]);
    for (e = 0; e < total; e++) y[e] = 0.0f;
    for (b = 0; b < d->n; b++) {
        const float sf = scales[b];
        for (iy = 0; iy < d->h; iy++) {
            const int32_t oy0 = iy * d->sh - d->pt;
            edge_conv_taps(oy0, 1, d->oh, d->kh, &fy0, &fy1);
            for (ix = 0; ix < d->w; ix++) {
                const int32_t ox0 = ix * d->sw - d->pl;
                const int8_t *xp = q + (((int64_t)b * d->h + iy) * d->w + ix) * c;
                edge_conv_taps(ox0, 1, d->ow, d->kw, &fx0, &fx1);
                for (i = 0; i < c; i++) {
                    const int32_t xv = (int32_t)xp[i] - zps[b];
                    for (fy = fy0; fy < fy1; fy++) {
                        for (fx = fx0; fx < fx1; fx++) {
                            float *yp = y + (((int64_t)b * d->oh + oy0 + fy) * d->ow + ox0 + fx) * o;
                            for (oc = 0; oc < o; oc++) {
                                const int32_t acc = xv * wt[(((int64_t)oc * d->kh + fy) * d->kw + fx) * c + i];
                                float ws;
                                memcpy(&ws, &d->wscales[d->n_wscales == 1 ? 0 : oc], 4);
                                yp[oc] += (float)acc * ws * sf;
                            }
                        }
                    }
                }
            }
        }
    }
    for (oc = 0, e = 0; e < total; e++) {
        const float v = bias ? y[e] + bias[oc] : y[e]; /* no bias: nothing added (a -0.0 stays), as LiteRT */
        y[e] = v < d->flo ? d->flo : (v > d->fhi ? d->fhi : v);
        if (++oc == o) oc = 0;
    }
}

#if EDGE_SIMD
/* The fast path (tc_one_tap_each): for every input row iy and tap (fy, fx), the GEMM of the row's w pixels [w, c]
 * against the tap's packed filters into output row iy * sh + fy, pixels ix * sw + fx ([w, o] at a stride of
 * sw * o values). */
static void tc_simd(const tc_data_t *d, const void *x, void *y, size_t esize, void *work) {
    int32_t b, iy, fy, fx;
    for (b = 0; b < d->n; b++) {
        for (iy = 0; iy < d->h; iy++) {
            const char *xr = (const char *)x + (((int64_t)b * d->h + iy) * d->w) * d->c * (int64_t)esize;
            for (fy = 0; fy < d->kh; fy++) {
                for (fx = 0; fx < d->kw; fx++) {
                    const int32_t t = fy * d->kw + fx;
                    char *yr = (char *)y + (((int64_t)b * d->oh + (int64_t)iy * d->sh + fy) * d->ow + fx) * d->o *
                                               (int64_t)esize;
                    if (d->qtap)
                        edge_simd_qgemm(&d->qtap[t], (const int8_t *)xr, d->w, d->c, 0, d->o, (int8_t *)yr,
                                        d->sw * d->o, work);
                    else
                        edge_simd_sgemm(&d->ftap[t], (const float *)xr, d->w, d->c, 0, d->o, (float *)yr,
                                        (int64_t)d->sw * d->o);
                }
            }
        }
    }
}
#endif

/* An output_shape computed at run time against the output shape prepared: the first differing element, else -1. */
static int32_t tc_shape_differs(const edge_tensor_t *shp, const edge_tensor_t *out) {
    int32_t k;
    for (k = 0; k < 4; k++)
        if (((const int32_t *)shp->data)[k] != out->dims[k]) return k;
    return -1;
}

void edge_eval_transpose_conv(const edge_node_t *node, edge_ctx_t *ctx) {
    const tc_data_t *d = (const tc_data_t *)node->user_data;
    const edge_tensor_t *w = edge_in(ctx, node, 1), *in = edge_in(ctx, node, 2), *bt = edge_in(ctx, node, 3);
    const edge_tensor_t *shp = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    if (!shp->is_const) { /* LiteRT would resize the output to it; this runtime sized it at prepare */
        int32_t k = tc_shape_differs(shp, out);
        if (k >= 0) {
            EDGE_EVAL_BAD_INPUT(ctx, node, 0, k, ((const int32_t *)shp->data)[k],
                                "TRANSPOSE_CONV: the run-time output_shape differs from the output shape prepared");
            return;
        }
    }
#if EDGE_SIMD
    if (d->qtap) {
        tc_simd(d, in->data, out->data, 1, edge_scratch(ctx, node, d->scratch));
        return;
    }
    if (d->ftap) {
        tc_simd(d, in->data, out->data, sizeof(float), 0);
        return;
    }
#endif
    switch (d->kind) {
    case TC_INT8:
        tc_int8(d, (const int8_t *)in->data, (const int8_t *)w->data, bt ? (const int32_t *)bt->data : 0,
                (int8_t *)out->data, (uint32_t *)edge_scratch(ctx, node, d->scratch));
        break;
    case TC_INT16:
        if (EDGE_WITH_INT16)
            tc_int16(d, (const int16_t *)in->data, (const int8_t *)w->data, bt ? bt->data : 0, (int16_t *)out->data,
                     (int64_t *)edge_scratch(ctx, node, d->scratch));
        break;
    case TC_HYBRID:
        if (EDGE_WITH_FLOAT32)
            tc_hybrid(d, (const float *)in->data, (const int8_t *)w->data, bt ? (const float *)bt->data : 0,
                      (float *)out->data, edge_scratch(ctx, node, d->scratch));
        break;
    default:
        if (EDGE_WITH_FLOAT32)
            tc_float(d, (const float *)in->data, (const float *)w->data, bt ? (const float *)bt->data : 0,
                     (float *)out->data);
        break;
    }
}
