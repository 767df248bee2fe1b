/* CONV_2D: y[b, oy, ox, o] = act(sum_{fy, fx, i} x[b, oy*sh - pt + fy*dh, ox*sw - pl + fx*dw, g*cg + i]
 *                                   * w[o, fy, fx, i] + bias[o]),   g = o / (O / groups), groups = C / cg.
 *
 * Arithmetic as TFLM's reference ConvPerChannel kernels (and edge_sdk/kernels/conv.py prepare_conv_2d):
 *  - int8 (per-tensor or per-channel int8 weights, optional int32 bias): int32 accumulator of
 *    w * (x + input_offset), taps in the padding contribute nothing, + bias, MultiplyByQuantizedMultiplier
 *    with the channel's multiplier (input_scale * weight_scale / output_scale, in double), + output zero
 *    point, clamp to the fused activation. The weights' zero point is not used (they are symmetric).
 *  - int16x8 (int16 activations, int8 weights): no offsets; with an int64 bias (or no bias and
 *    quantized_bias_type != INT32) an int64 accumulator and the 16-bit-multiplier requantization, with an
 *    int32 bias an int32 accumulator and the int32 requantization; clamp to the activation range.
 *  - float32: the reference's loop order (fy, fx, i), then + bias, then the activation clamp.
 *
 * The int8 path is im2col + a 2x2 register-blocked GEMM (two output pixels x two output channels): the
 * window of each output pixel is expanded once into int16 values with the input offset already added
 * (padding -> 0), then every output channel's weights run against it. On cores with the DSP extension
 * (Cortex-M4/M7/M33: __ARM_FEATURE_DSP) the GEMM uses SXTB16 to widen four int8 weights into two registers
 * and SMLAD to do two 16-bit MACs per instruction; the im2col buffer is then stored in the matching order
 * (x0, x2, x1, x3 for every group of four values). Define EDGE_EMULATE_DSP on the host to run that same
 * path with C versions of the instructions (edge_dsp.h; the tests compare it with the plain build).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_conv.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(CONV_2D, conv_2d, 8)

enum { CONV_FLOAT = 0, CONV_INT8 = 1, CONV_INT16_32 = 2, CONV_INT16_64 = 3 };

typedef struct {
    int32_t kind;
    int32_t n, h, w, c;         /* input */
    int32_t oh, ow, o;          /* output */
    int32_t kh, kw, cg;         /* filter: [o, kh, kw, cg] */
    int32_t groups, opg;        /* groups and output channels per group */
    int32_t sh, sw, dh, dw;     /* strides, dilations */
    int32_t pt, pl;             /* padding before (top, left) */
    int32_t k;                  /* kh * kw * cg: one output channel's weights */
    int32_t kpad;               /* k rounded up to even (int16 im2col rows stay 4-byte aligned) */
    int32_t input_offset, output_offset, lo, hi;
    float flo, fhi;
    int32_t *mult, *shift;      /* per output channel (persistent) */
    int32_t scratch;            /* int8: im2col buffer of 2 pixels x groups x kpad int16 */
} conv_data_t;

/* Conv2DOptions: 0 padding, 1 stride_w, 2 stride_h, 3 fused_activation_function, 4 dilation_w_factor,
 * 5 dilation_h_factor, 6 quantized_bias_type. */
edge_status_t edge_prepare_conv_2d(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == EDGE_OPTS_Conv2DOptions;
    const int32_t padding = has_opts ? edge_opt_int(node, 0, 1, 0) : 0;
    const int32_t sw = has_opts ? edge_opt_int(node, 1, 4, 0) : 1;
    const int32_t sh = has_opts ? edge_opt_int(node, 2, 4, 0) : 1;
    const int32_t act = has_opts ? edge_opt_int(node, 3, 1, 0) : 0;
    const int32_t dw = has_opts ? edge_opt_int(node, 4, 4, 1) : 1;
    const int32_t dh = has_opts ? edge_opt_int(node, 5, 4, 1) : 1;
    const int32_t qbias_type = has_opts ? edge_opt_int(node, 6, 1, 0) : 0;
    edge_tensor_t *in, *w, *bias, *out;
    conv_data_t *d;
    int32_t shape[4], k;
    edge_status_t s;

    if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D expects 2..3 inputs and 1 output");
    in = edge_in(ctx, node, 0);
    w = edge_in(ctx, node, 1);
    bias = edge_in(ctx, node, 2);
    out = edge_out(ctx, node, 0);
    if (!in || !w) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: input and filter are required");
    if (out->type != in->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: output type differs from input");
    if (!((in->type == EDGE_FLOAT32 && w->type == EDGE_FLOAT32) || (in->type == EDGE_INT8 && w->type == EDGE_INT8) ||
          (in->type == EDGE_INT16 && w->type == EDGE_INT8)))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE,
                         "CONV_2D: C kernel runs FLOAT32/FLOAT32, INT8/INT8 and INT16/INT8 (input/filter)");
    if (in->rank != 4 || w->rank != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: input and filter must be 4-D");
    if (w->is_sparse) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "CONV_2D: sparse filter");
    if (act < 0 || act > EDGE_ACT_RELU6) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "CONV_2D: fused activation");

    d = (conv_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->n = in->dims[0];
    d->h = in->dims[1];
    d->w = in->dims[2];
    d->c = in->dims[3];
    d->o = w->dims[0];
    d->kh = w->dims[1];
    d->kw = w->dims[2];
    d->cg = w->dims[3];
    d->sh = sh;
    d->sw = sw;
    d->dh = dh;
    d->dw = dw;
    d->scratch = -1;
    if (d->n <= 0 || d->c <= 0 || d->o <= 0 || d->cg <= 0 || d->c % d->cg)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: input depth is not a multiple of the filter depth");
    d->groups = d->c / d->cg;
    if (d->o % d->groups) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: filters do not split into the groups");
    d->opg = d->o / d->groups;
    if (edge_conv_window(padding, sh, dh, d->h, d->kh, &d->oh, &d->pt) ||
        edge_conv_window(padding, sw, dw, d->w, d->kw, &d->ow, &d->pl))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: padding, strides, dilations or window do not fit the input");
    if ((int64_t)d->kh * d->kw * d->cg > 0x3fffffff) return EDGE_FAIL(ctx, EDGE_LIMIT, "CONV_2D: filter too large");
    d->k = d->kh * d->kw * d->cg;
    d->kpad = (d->k + 1) & ~1;
    shape[0] = d->n;
    shape[1] = d->oh;
    shape[2] = d->ow;
    shape[3] = d->o;
    s = edge_set_output_shape(ctx, node, 0, shape, 4);
    if (s != EDGE_OK) return s;

    if (in->type == EDGE_FLOAT32) {
        d->kind = CONV_FLOAT;
        if (bias && (bias->type != EDGE_FLOAT32 || edge_tensor_elements(bias) != d->o))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: bias must be FLOAT32 with one value per filter");
        edge_activation_range_float(act, &d->flo, &d->fhi);
        return EDGE_OK;
    }

    if (!in->quantized || !w->quantized || !out->quantized)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: quantized tensors need scales and zero points");
    if (in->type == EDGE_INT8) {
        d->kind = CONV_INT8;
        if (bias && bias->type != EDGE_INT32)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "CONV_2D: int8 bias must be INT32");
    } else {
        if (bias && bias->type != EDGE_INT32 && bias->type != EDGE_INT64)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "CONV_2D: int16 bias must be INT32 or INT64");
        d->kind = (bias ? bias->type == EDGE_INT32 : qbias_type == EDGE_INT32) ? CONV_INT16_32 : CONV_INT16_64;
    }
    if (bias && edge_tensor_elements(bias) != d->o)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: bias needs one value per filter");
    if (w->n_scales != 1 && w->n_scales != d->o)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: filter needs one scale or one per output channel");
    if (w->n_scales > 1 && (w->quantized_dimension < 0 || w->quantized_dimension > 3 ||
                            w->dims[w->quantized_dimension] != d->o))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: per-channel filter scales not along the output channels");
    if (edge_activation_range(act, in->type == EDGE_INT8 ? -128 : -32768, in->type == EDGE_INT8 ? 127 : 32767,
                              out->scale, out->zero_point, &d->lo, &d->hi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "CONV_2D: fused activation");
    d->input_offset = in->type == EDGE_INT8 ? -in->zero_point : 0;
    d->output_offset = in->type == EDGE_INT8 ? out->zero_point : 0;
    if (in->type == EDGE_INT8 && (d->input_offset < -32768 + 128 || d->input_offset > 32767 - 128))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "CONV_2D: input zero point out of range");
    d->mult = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)d->o);
    d->shift = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)d->o);
    if (!d->mult || !d->shift) return EDGE_ARENA_TOO_SMALL;
    for (k = 0; k < d->o; k++) {
        float ws;
        memcpy(&ws, &w->scales[w->n_scales > 1 ? k : 0], 4);
        edge_quantize_multiplier((double)in->scale * (double)ws / (double)out->scale, &d->mult[k], &d->shift[k]);
    }
    if (d->kind == CONV_INT8) {
        size_t bytes = sizeof(int16_t) * 2u * (size_t)d->groups * (size_t)d->kpad;
        s = edge_request_scratch(ctx, node, bytes, &d->scratch);
        if (s != EDGE_OK) return s;
    }
    return EDGE_OK;
}

/* ---------------------------------------------------------------------------------------------- int8 */

/* The im2col row of one output pixel: for every group, kh * kw * cg int16 values x + input_offset (0 in
 * the padding), in DSP order when EDGE_DSP (each full group of four stored as v0, v2, v1, v3). */
static void conv_im2col(const conv_data_t *d, const int8_t *xb, int32_t oy, int32_t ox, int16_t *col) {
    const int32_t iy0 = oy * d->sh - d->pt, ix0 = ox * d->sw - d->pl;
    const int32_t off = d->input_offset;
    int32_t g, fy, fx, i;
    for (g = 0; g < d->groups; g++) {
        int16_t *dst = col + (int64_t)g * d->kpad;
#if EDGE_DSP
        const int32_t k4 = d->k & ~3;
        int32_t kk = 0;
#endif
        if (d->kpad != d->k) dst[d->k] = 0;
        for (fy = 0; fy < d->kh; fy++) {
            const int32_t iy = iy0 + fy * d->dh;
            for (fx = 0; fx < d->kw; fx++) {
                const int32_t ix = ix0 + fx * d->dw;
                const int8_t *src = xb + ((int64_t)iy * d->w + ix) * d->c + (int64_t)g * d->cg;
                const int inside = iy >= 0 && iy < d->h && ix >= 0 && ix < d->w;
#if EDGE_DSP
                if ((d->cg & 3) == 0) {
                    /* whole groups of four: widen with SXTB16 and add the offset two at a time */
                    if (!inside) {
                        memset(dst + kk, 0, sizeof(int16_t) * (size_t)d->cg);
                    } else {
                        const uint32_t off2 = (uint32_t)(uint16_t)off * 0x10001u;
                        for (i = 0; i < d->cg; i += 4) {
                            uint32_t v, a, b;
                            memcpy(&v, src + i, 4);
                            a = edge_sadd16(edge_sxtb16(v), off2);
                            b = edge_sadd16(edge_sxtb16_ror8(v), off2);
                            memcpy(dst + kk + i, &a, 4);
                            memcpy(dst + kk + i + 2, &b, 4);
                        }
                    }
                    kk += d->cg;
                    continue;
                }
                for (i = 0; i < d->cg; i++, kk++) {
                    const int32_t pos = kk < k4 ? ((kk & ~3) | ((kk & 1) << 1) | ((kk >> 1) & 1)) : kk;
                    dst[pos] = (int16_t)(inside ? src[i] + off : 0);
                }
#else
                if (!inside) {
                    memset(dst, 0, sizeof(int16_t) * (size_t)d->cg);
                } else {
                    for (i = 0; i < d->cg; i++) dst[i] = (int16_t)(src[i] + off);
                }
                dst += d->cg;
#endif
            }
        }
    }
}

/* Two output channels (weights w0, w1) x two pixels (im2col rows c0, c1): the four int32 sums (wrapping).
 * The DSP loop is ordered so that at most 14 values are live (pointers, sums, two weight words and their
 * widened halves, one input pair): Cortex-M4 keeps all of it in registers, 20 instructions per 16 MACs. */
#if EDGE_DSP && defined(__GNUC__)
__attribute__((noinline))
#endif
static void conv_dot_2x2(const int8_t *w0, const int8_t *w1, const int16_t *c0, const int16_t *c1, int32_t k,
                         uint32_t acc[4]) {
    uint32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0;
    int32_t i = 0;
#if EDGE_DSP
    const int8_t *const w0_end = w0 + (k & ~3);
    while (w0 != w0_end) {
        uint32_t wa, wb, a, b, x;
        memcpy(&wa, w0, 4);
        memcpy(&wb, w1, 4);
        a = edge_sxtb16(wa);
        b = edge_sxtb16(wb);
        memcpy(&x, c0, 4);
        s00 = edge_smlad(a, x, s00);
        s10 = edge_smlad(b, x, s10);
        memcpy(&x, c1, 4);
        s01 = edge_smlad(a, x, s01);
        s11 = edge_smlad(b, x, s11);
        a = edge_sxtb16_ror8(wa);
        b = edge_sxtb16_ror8(wb);
        memcpy(&x, c0 + 2, 4);
        s00 = edge_smlad(a, x, s00);
        s10 = edge_smlad(b, x, s10);
        memcpy(&x, c1 + 2, 4);
        s01 = edge_smlad(a, x, s01);
        s11 = edge_smlad(b, x, s11);
        w0 += 4;
        w1 += 4;
        c0 += 4;
        c1 += 4;
    }
    k &= 3;
#endif
    for (; i < k; i++) {
        s00 += (uint32_t)(w0[i] * c0[i]);
        s01 += (uint32_t)(w0[i] * c1[i]);
        s10 += (uint32_t)(w1[i] * c0[i]);
        s11 += (uint32_t)(w1[i] * c1[i]);
    }
    acc[0] = s00;
    acc[1] = s01;
    acc[2] = s10;
    acc[3] = s11;
}

/* One output channel x one pixel. */
static inline uint32_t conv_dot_1x1(const int8_t *w0, const int16_t *c0, int32_t k) {
    uint32_t s = 0;
    int32_t i = 0;
#if EDGE_DSP
    const int32_t k4 = k & ~3;
    for (; i < k4; i += 4) {
        uint32_t wa, x0, x1;
        memcpy(&wa, w0 + i, 4);
        memcpy(&x0, c0 + i, 4);
        memcpy(&x1, c0 + i + 2, 4);
        s = edge_smlad(edge_sxtb16(wa), x0, s);
        s = edge_smlad(edge_sxtb16_ror8(wa), x1, s);
    }
#endif
    for (; i < k; i++) s += (uint32_t)(w0[i] * c0[i]);
    return s;
}

static inline int8_t conv_requant8(const conv_data_t *d, uint32_t acc, const int32_t *bias, int32_t oc) {
    int32_t r;
    if (bias) acc += (uint32_t)bias[oc];
    r = edge_mbqm(edge_wrap32((int64_t)acc), d->mult[oc], d->shift[oc]) + d->output_offset;
    return (int8_t)edge_clamp32(r, d->lo, d->hi);
}

static void conv_int8(const conv_data_t *d, const int8_t *x, const int8_t *wt, const int32_t *bias, int8_t *y,
                      int16_t *cols) {
    const int32_t npix = d->oh * d->ow, row = d->groups * d->kpad;
    int32_t b, p, g, j;
    for (b = 0; b < d->n; b++) {
        const int8_t *xb = x + (int64_t)b * d->h * d->w * d->c;
        int8_t *yb = y + (int64_t)b * npix * d->o;
        for (p = 0; p < npix; p += 2) {
            const int two = p + 1 < npix;
            int16_t *c0 = cols, *c1 = cols + row;
            int8_t *y0 = yb + (int64_t)p * d->o, *y1 = y0 + d->o;
            conv_im2col(d, xb, p / d->ow, p % d->ow, c0);
            if (two) conv_im2col(d, xb, (p + 1) / d->ow, (p + 1) % d->ow, c1);
            for (g = 0; g < d->groups; g++) {
                const int16_t *g0 = c0 + (int64_t)g * d->kpad, *g1 = c1 + (int64_t)g * d->kpad;
                const int32_t first = g * d->opg, end = first + d->opg;
                int32_t oc = first;
                if (two) {
                    for (; oc + 1 < end; oc += 2) {
                        uint32_t acc[4];
                        conv_dot_2x2(wt + (int64_t)oc * d->k, wt + (int64_t)(oc + 1) * d->k, g0, g1, d->k, acc);
                        y0[oc] = conv_requant8(d, acc[0], bias, oc);
                        y1[oc] = conv_requant8(d, acc[1], bias, oc);
                        y0[oc + 1] = conv_requant8(d, acc[2], bias, oc + 1);
                        y1[oc + 1] = conv_requant8(d, acc[3], bias, oc + 1);
                    }
                    for (; oc < end; oc++) {
                        y0[oc] = conv_requant8(d, conv_dot_1x1(wt + (int64_t)oc * d->k, g0, d->k), bias, oc);
                        y1[oc] = conv_requant8(d, conv_dot_1x1(wt + (int64_t)oc * d->k, g1, d->k), bias, oc);
                    }
                } else {
                    for (j = first; j < end; j++)
                        y0[j] = conv_requant8(d, conv_dot_1x1(wt + (int64_t)j * d->k, g0, d->k), bias, j);
                }
            }
        }
    }
}

/* ------------------------------------------------------------------------------------- int16, float */

static void conv_int16(const conv_data_t *d, const int16_t *x, const int8_t *wt, const void *bias, int16_t *y) {
    const int wide = d->kind == CONV_INT16_64;
    const int64_t *b64 = (const int64_t *)bias;
    const int32_t *b32 = (const int32_t *)bias;
    int32_t b, oy, ox, oc, fy, fx, i, fy0, fy1, fx0, fx1;
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->pt;
            edge_conv_taps(iy0, d->dh, d->h, d->kh, &fy0, &fy1);
            for (ox = 0; ox < d->ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->pl;
                int16_t *yp = y + (((int64_t)b * d->oh + oy) * d->ow + ox) * d->o;
                edge_conv_taps(ix0, d->dw, d->w, d->kw, &fx0, &fx1);
                for (oc = 0; oc < d->o; oc++) {
                    const int32_t g = oc / d->opg;
                    int64_t acc64 = 0;
                    uint32_t acc32 = 0;
                    int32_t r;
                    for (fy = fy0; fy < fy1; fy++) {
                        const int32_t iy = iy0 + fy * d->dh;
                        for (fx = fx0; fx < fx1; fx++) {
                            const int32_t ix = ix0 + fx * d->dw;
                            const int16_t *xp = x + (((int64_t)b * d->h + iy) * d->w + ix) * d->c + (int64_t)g * d->cg;
                            const int8_t *wp = wt + (((int64_t)oc * d->kh + fy) * d->kw + fx) * d->cg;
                            int32_t part = 0; /* cg products of |v| <= 2^22: summed in int64 when cg is large */
                            if (d->cg <= 256) {
                                for (i = 0; i < d->cg; i++) part += xp[i] * wp[i];
                                acc64 += part;
                                acc32 += (uint32_t)part;
                            } else {
                                for (i = 0; i < d->cg; i++) {
                                    acc64 += xp[i] * wp[i];
                                    acc32 += (uint32_t)(xp[i] * wp[i]);
                                }
                            }
                        }
                    }
                    if (wide) {
                        if (b64) acc64 += b64[oc];
                        r = edge_mbqm64(acc64, d->mult[oc], d->shift[oc]);
                    } else {
                        if (b32) acc32 += (uint32_t)b32[oc];
                        r = edge_mbqm(edge_wrap32((int64_t)acc32), d->mult[oc], d->shift[oc]);
                    }
                    yp[oc] = (int16_t)edge_clamp32(r, d->lo, d->hi);
                }
            }
        }
    }
}

static void conv_float(const conv_data_t *d, const float *x, const float *wt, const float *bias, float *y) {
    int32_t b, oy, ox, oc, fy, fx, i, fy0, fy1, fx0, fx1;
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->pt;
            edge_conv_taps(iy0, d->dh, d->h, d->kh, &fy0, &fy1);
            for (ox = 0; ox < d->ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->pl;
                float *yp = y + (((int64_t)b * d->oh + oy) * d->ow + ox) * d->o;
                edge_conv_taps(ix0, d->dw, d->w, d->kw, &fx0, &fx1);
                for (oc = 0; oc < d->o; oc++) {
                    const int32_t g = oc / d->opg;
                    float acc = 0.0f;
                    for (fy = fy0; fy < fy1; fy++) {
                        const int32_t iy = iy0 + fy * d->dh;
                        for (fx = fx0; fx < fx1; fx++) {
                            const int32_t ix = ix0 + fx * d->dw;
                            const float *xp = x + (((int64_t)b * d->h + iy) * d->w + ix) * d->c + (int64_t)g * d->cg;
                            const float *wp = wt + (((int64_t)oc * d->kh + fy) * d->kw + fx) * d->cg;
                            for (i = 0; i < d->cg; i++) acc += xp[i] * wp[i];
                        }
                    }
                    if (bias) acc += bias[oc];
                    yp[oc] = acc < d->flo ? d->flo : (acc > d->fhi ? d->fhi : acc);
                }
            }
        }
    }
}

void edge_eval_conv_2d(const edge_node_t *node, edge_ctx_t *ctx) {
    const conv_data_t *d = (const conv_data_t *)node->user_data;
    const edge_tensor_t *in = edge_in(ctx, node, 0), *w = edge_in(ctx, node, 1), *bt = edge_in(ctx, node, 2);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    switch (d->kind) {
    case CONV_INT8:
        conv_int8(d, (const int8_t *)in->data, (const int8_t *)w->data, bt ? (const int32_t *)bt->data : 0,
                  (int8_t *)out->data, (int16_t *)edge_scratch(ctx, node, d->scratch));
        break;
    case CONV_FLOAT:
        conv_float(d, (const float *)in->data, (const float *)w->data, bt ? (const float *)bt->data : 0,
                   (float *)out->data);
        break;
    default:
        conv_int16(d, (const int16_t *)in->data, (const int8_t *)w->data, bt ? bt->data : 0, (int16_t *)out->data);
        break;
    }
}
