/* hybrid.c - LiteRT's hybrid (dynamic-range) kernels: FLOAT32 activations, constant INT8 (or legacy UINT8, read as
 * int8 bytes as LiteRT reads them) weights, the float input quantized per batch row on the fly (edge_hybrid.h
 * eh_quantize_row: LiteRT's BatchQuantizeFloats), exact int32 products, scaled back to float. The same arithmetic,
 * in the same float order, as edge_sdk/runtime/kernels/hybrid.py (which says which LiteRT kernel each follows):
 *
 *   FULLY_CONNECTED   y = bias + float(q.w - zp * rowsum(w)) * scale (scale: row scale * weights scale, or
 *                     row scale * unit scale per channel), then the fused activation (any: clamps, TANH,
 *                     SIGN_BIT, SIGMOID); an all-zero input gives act(bias).
 *   CONV_2D           per batch image; one weights scale: symmetric, y = float(acc) * (image scale * w scale) + bias;
 *                     per-channel scales that differ, or groups: asymmetric, y = float(acc) * ch scale * image scale
 *                     + bias. acc sums w * (q - zp) over the taps inside the image. Then the clamp.
 *   DEPTHWISE_CONV_2D per batch image, asymmetric, one scale per output channel: y = float(acc) * (ch scale *
 *                     image scale) + bias, then the clamp.
 *   BATCH_MATMUL      float lhs, constant INT8 rhs; every lhs row (after adj_x) quantized; total = q.r -
 *                     (int32)(float(colsum) * zp) in float as LiteRT; y = scale * float(total).
 *
 * Kernel files dispatch here (fully_connected.c, conv_2d.c, depthwise_conv_2d.c, batch_matmul.c): their prepare
 * calls edge_hybrid_prepare_<op> when the input is FLOAT32 and the weights INT8 / UINT8 (node->user_data is then
 * this file's op data), their eval edge_hybrid_eval_<op> on the same test of the tensor types. Prepare validates
 * and sizes the arena scratch (quantized input, row scales and zero points); the weights' row sums are computed
 * once into persistent memory; eval allocates nothing.
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_bmm.h"
#include "../edge_conv.h"
#include "../edge_hybrid.h"

/* ------------------------------------------------------------------------------------------ shared */

enum { EH_SIGMOID = 6 }; /* ActivationFunctionType SIGMOID (no EDGE_ACT_ name: only the float kernels take it) */

int edge_hybrid_weights(const edge_tensor_t *in, const edge_tensor_t *w) {
    return in && w && in->type == EDGE_FLOAT32 && (w->type == EDGE_INT8 || w->type == EDGE_UINT8);
}

/* The activation of a float output: clamps through lo / hi, else TANH, SIGN_BIT or SIGMOID. */
static float eh_activate(int32_t act, float lo, float hi, float v) {
    if (act == EDGE_ACT_TANH) return tanhf(v);
    if (act == EDGE_ACT_SIGN_BIT) return signbit(v) ? 1.0f : 0.0f;
    if (act == EH_SIGMOID) return 1.0f / (1.0f + expf(-v));
    return v < lo ? lo : (v > hi ? hi : v);
}

/* The checks every hybrid op shares: constant weights with a scale, a FLOAT32 output, FLOAT32 built in. */
static edge_status_t eh_check(edge_ctx_t *ctx, const edge_tensor_t *w, const edge_tensor_t *out) {
    edge_status_t s;
    if ((s = edge_type_built(ctx, EDGE_FLOAT32)) != EDGE_OK) return s;
    if (!w || !out) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "hybrid: weights and output are required"); /* output -1: fuzz */
    if (!w->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "hybrid: the int8 weights must be constant");
    if (w->is_sparse) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "hybrid: sparse weights");
    if (!w->quantized || w->n_scales < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "hybrid: the int8 weights have no scale");
    if (out->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "hybrid: the output must be FLOAT32");
    return EDGE_OK;
}

/* A constant FLOAT32 bias of n values, or none. */
static edge_status_t eh_bias(edge_ctx_t *ctx, const edge_tensor_t *bias, int32_t n) {
    if (!bias) return EDGE_OK;
    if (bias->type != EDGE_FLOAT32 || edge_tensor_elements(bias) != n)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "hybrid: the bias must be FLOAT32 with one value per output channel");
    return EDGE_OK;
}

/* rows x n int8 values' row sums into persistent memory (the asymmetric zero point's correction). */
static int32_t *eh_row_sums(edge_ctx_t *ctx, const int8_t *w, int32_t rows, int32_t n) {
    int32_t *sums = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)(rows > 0 ? rows : 1));
    int32_t r, k;
    if (!sums) return 0;
    for (r = 0; r < rows; r++) {
        int32_t sum = 0;
        for (k = 0; k < n; k++) sum += w[(int64_t)r * n + k];
        sums[r] = sum;
    }
    return sums;
}

/* The scratch of rows quantized rows of n values: rows * n int8, then rows scales (float) and zero points (int32),
 * 4-byte aligned. */
static edge_status_t eh_request_rows(edge_ctx_t *ctx, edge_node_t *node, int64_t rows, int64_t n, int32_t *index) {
    const int64_t q = (rows * n + 3) & ~(int64_t)3, bytes = q + rows * 8;
    if (rows < 0 || n < 0 || bytes > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_LIMIT, "hybrid: input too large");
    return edge_request_scratch(ctx, node, (size_t)(bytes > 0 ? bytes : 4), index);
}

typedef struct {
    int8_t *q;
    float *scale;
    int32_t *zp;
} eh_rows_t;

static eh_rows_t eh_rows(const edge_ctx_t *ctx, const edge_node_t *node, int32_t index, int64_t rows, int64_t n) {
    eh_rows_t r;
    r.q = (int8_t *)edge_scratch(ctx, node, index);
    r.scale = (float *)(void *)(r.q + ((rows * n + 3) & ~(int64_t)3));
    r.zp = (int32_t *)(void *)(r.scale + rows);
    return r;
}

/* ------------------------------------------------------------------------------------------ FULLY_CONNECTED */

typedef struct {
    int32_t batches, depth, units, act, asymmetric, rows_scratch;
    float lo, hi;
    const int32_t *row_sums; /* units (persistent) */
} hfc_data_t;

/* FullyConnectedOptions: 0 fused_activation_function, 1 weights_format, 2 keep_num_dims,
 * 3 asymmetric_quantize_inputs. The output shape rules are fully_connected.c's. */
edge_status_t edge_hybrid_prepare_fully_connected(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == EDGE_OPTS_FullyConnectedOptions;
    const edge_tensor_t *in = edge_in(ctx, node, 0), *w = edge_in(ctx, node, 1), *bias = edge_in(ctx, node, 2);
    const edge_tensor_t *out = edge_out(ctx, node, 0);
    hfc_data_t *d;
    int64_t in_elems;
    int32_t shape[8], rank, k;
    edge_status_t s;

    if ((s = eh_check(ctx, w, out)) != EDGE_OK) return s;
    if (has_opts && edge_opt_int(node, 1, 1, 0) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "FULLY_CONNECTED: only DEFAULT weights_format");
    if (w->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: weights must be 2-D [units, depth]");
    d = (hfc_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    memset(d, 0, sizeof *d);
    node->user_data = d;
    d->units = w->dims[0];
    d->depth = w->dims[1];
    d->act = has_opts ? edge_opt_int(node, 0, 1, 0) : 0;
    d->asymmetric = has_opts && edge_opt_int(node, 3, 1, 0) != 0;
    if (d->act < 0 || d->act > EH_SIGMOID) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "FULLY_CONNECTED: fused activation");
    if (edge_activation_range_float(d->act, &d->lo, &d->hi) != 0) d->lo = -INFINITY, d->hi = INFINITY;
    if (w->n_scales > 1 && (w->n_scales != d->units || w->quantized_dimension != 0))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: per-channel weights need one scale per unit");
    if ((s = eh_bias(ctx, bias, d->units)) != EDGE_OK) return s;
    in_elems = edge_tensor_elements(in);
    if (d->depth <= 0 || in_elems % d->depth) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: input size vs weights depth");
    d->batches = (int32_t)(in_elems / d->depth);
    if (has_opts && edge_opt_int(node, 2, 1, 0)) { /* keep_num_dims */
        if (in->rank < 1 || in->rank > 8 || in->dims[in->rank - 1] != d->depth)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: keep_num_dims needs input's last dim == depth");
        for (k = 0; k < in->rank - 1; k++) shape[k] = in->dims[k];
        shape[in->rank - 1] = d->units;
        rank = in->rank;
    } else if (out->rank >= 1 && out->rank <= 8 && out->dims[out->rank - 1] == d->units &&
               edge_tensor_elements(out) == (int64_t)d->batches * d->units) {
        for (k = 0; k < out->rank; k++) shape[k] = out->dims[k]; /* the declared shape when it holds the values */
        rank = out->rank;
    } else {
        shape[0] = d->batches;
        shape[1] = d->units;
        rank = 2;
    }
    if ((s = edge_set_output_shape(ctx, node, 0, shape, rank)) != EDGE_OK) return s;
    d->row_sums = eh_row_sums(ctx, (const int8_t *)w->data, d->units, d->depth);
    if (!d->row_sums) return EDGE_ARENA_TOO_SMALL;
    return eh_request_rows(ctx, node, d->batches, d->depth, &d->rows_scratch);
}

void edge_hybrid_eval_fully_connected(const edge_node_t *node, edge_ctx_t *ctx) {
    const hfc_data_t *d = (const hfc_data_t *)node->user_data;
    const edge_tensor_t *w = edge_in(ctx, node, 1), *bt = edge_in(ctx, node, 2);
    const float *x = (const float *)edge_in(ctx, node, 0)->data, *bias = bt ? (const float *)bt->data : 0;
    const int8_t *wt = (const int8_t *)w->data;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    const int32_t B = d->batches, D = d->depth, U = d->units;
    const eh_rows_t r = eh_rows(ctx, node, d->rows_scratch, B, D);
    int64_t i, n = (int64_t)B * D;
    int32_t b, u, k, zero = 1;
    for (b = 0; b < B; b++)
        for (u = 0; u < U; u++) y[(int64_t)b * U + u] = bias ? bias[u] : 0.0f;
    for (i = 0; i < n && zero; i++) zero = x[i] == 0.0f;
    if (!zero) { /* LiteRT skips the product for an all-zero input */
        for (b = 0; b < B; b++) {
            const int8_t *q = r.q + (int64_t)b * D;
            float row_scale;
            eh_quantize_row(x + (int64_t)b * D, D, d->asymmetric, r.q + (int64_t)b * D, &r.scale[b], &r.zp[b]);
            row_scale = w->n_scales > 1 ? r.scale[b] : r.scale[b] * w->scale;
            for (u = 0; u < U; u++) {
                const int8_t *wu = wt + (int64_t)u * D;
                int32_t dot = 0;
                for (k = 0; k < D; k++) dot += (int32_t)wu[k] * (int32_t)q[k];
                dot -= d->row_sums[u] * r.zp[b];
                y[(int64_t)b * U + u] += (float)dot * (w->n_scales > 1 ? row_scale * w->scales[u] : row_scale);
            }
        }
    }
    for (i = 0; i < (int64_t)B * U; i++) y[i] = eh_activate(d->act, d->lo, d->hi, y[i]);
}

/* ------------------------------------------------------------------------------------------ CONV_2D, DEPTHWISE */

typedef struct {
    int32_t n, h, w, c, oh, ow, pt, pl, sh, sw, dh, dw, kh, kw, cg, o, groups, mult;
    int32_t per_channel; /* asymmetric images, one scale per output channel (LiteRT's per-channel kernels) */
    int32_t rows_scratch;
    float lo, hi, w_scale;
} hconv_data_t;

/* The geometry both convolutions share; o output channels, filter kh x kw x cg. */
static edge_status_t eh_conv_geometry(edge_node_t *node, edge_ctx_t *ctx, hconv_data_t *d, const edge_conv_opts_t *op,
                                      const edge_tensor_t *in, const edge_tensor_t *w, const edge_tensor_t *out) {
    int32_t shape[4];
    edge_status_t s;
    if ((s = eh_check(ctx, w, out)) != EDGE_OK) return s;
    if (in->rank != 4 || w->rank != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "hybrid: input and filter must be 4-D");
    if (op->act < 0 || op->act > EDGE_ACT_RELU6) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "hybrid: fused activation");
    if (edge_activation_range_float(op->act, &d->lo, &d->hi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "hybrid: fused activation");
    d->n = in->dims[0];
    d->h = in->dims[1];
    d->w = in->dims[2];
    d->c = in->dims[3];
    d->kh = w->dims[1];
    d->kw = w->dims[2];
    d->sh = op->sh;
    d->sw = op->sw;
    d->dh = op->dh;
    d->dw = op->dw;
    if (edge_conv_window(op->padding, op->sh, op->dh, d->h, d->kh, &d->oh, &d->pt) ||
        edge_conv_window(op->padding, op->sw, op->dw, d->w, d->kw, &d->ow, &d->pl))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "hybrid: padding, strides, dilations or window do not fit the input");
    shape[0] = d->n;
    shape[1] = d->oh;
    shape[2] = d->ow;
    shape[3] = d->o;
    if ((s = edge_set_output_shape(ctx, node, 0, shape, 4)) != EDGE_OK) return s;
    if ((s = eh_bias(ctx, edge_in(ctx, node, 2), d->o)) != EDGE_OK) return s;
    return eh_request_rows(ctx, node, d->n, (int64_t)d->h * d->w * d->c, &d->rows_scratch);
}

/* Conv2DOptions: 0 padding, 1 stride_w, 2 stride_h, 3 fused_activation_function, 4 dilation_w, 5 dilation_h. */
edge_status_t edge_hybrid_prepare_conv_2d(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_conv_opts_t op = edge_conv_opts(node, EDGE_OPTS_Conv2DOptions, 3, 4);
    const edge_tensor_t *in = edge_in(ctx, node, 0), *w = edge_in(ctx, node, 1), *out = edge_out(ctx, node, 0);
    hconv_data_t *d = (hconv_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    int32_t k;
    if (!d) return EDGE_ARENA_TOO_SMALL;
    memset(d, 0, sizeof *d);
    node->user_data = d;
    if (w->rank == 4) {
        d->o = w->dims[0];
        d->cg = w->dims[3];
    }
    if (in->rank == 4 && (d->cg <= 0 || in->dims[3] % d->cg))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: input depth is not a multiple of the filter depth");
    d->groups = in->rank == 4 ? in->dims[3] / d->cg : 1;
    if (d->groups <= 0 || d->o % d->groups) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: filters do not split into the groups");
    /* LiteRT: per-channel (asymmetric) when INT8 scales differ, or with groups; else one scale (the first) */
    for (k = 1; k < w->n_scales && w->type == EDGE_INT8; k++) d->per_channel |= w->scales[k] != w->scales[0];
    if (d->groups != 1) {
        if (w->type != EDGE_INT8) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "CONV_2D: hybrid groups need INT8 weights");
        d->per_channel = 1;
    }
    if (d->per_channel && (w->n_scales != d->o || w->quantized_dimension != 0))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: per-channel hybrid weights need one scale per filter");
    d->w_scale = w->n_scales > 0 ? w->scales[0] : w->scale;
    return eh_conv_geometry(node, ctx, d, &op, in, w, out);
}

/* DepthwiseConv2DOptions: 0 padding, 1 stride_w, 2 stride_h, 3 depth_multiplier, 4 fused_activation_function,
 * 5 dilation_w, 6 dilation_h. */
edge_status_t edge_hybrid_prepare_depthwise_conv_2d(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_conv_opts_t op = edge_conv_opts(node, EDGE_OPTS_DepthwiseConv2DOptions, 4, 5);
    const edge_tensor_t *in = edge_in(ctx, node, 0), *w = edge_in(ctx, node, 1), *out = edge_out(ctx, node, 0);
    hconv_data_t *d = (hconv_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    memset(d, 0, sizeof *d);
    node->user_data = d;
    if (w->type != EDGE_INT8) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "DEPTHWISE_CONV_2D: hybrid weights must be INT8");
    if (w->rank != 4 || in->rank != 4 || w->dims[0] != 1 || in->dims[3] <= 0 || w->dims[3] % in->dims[3])
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEPTHWISE_CONV_2D: filter [1, kh, kw, channels * multiplier]");
    d->o = w->dims[3];
    d->mult = d->o / in->dims[3];
    d->per_channel = 1;
    if (w->n_scales != d->o || (d->o > 1 && w->quantized_dimension != 3))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEPTHWISE_CONV_2D: hybrid weights need one scale per output channel");
    return eh_conv_geometry(node, ctx, d, &op, in, w, out);
}

/* Quantize each batch image (h * w * c values) into the rows scratch. */
static eh_rows_t eh_conv_quantize(const edge_node_t *node, edge_ctx_t *ctx, const hconv_data_t *d) {
    const int64_t n = (int64_t)d->h * d->w * d->c;
    const float *x = (const float *)edge_in(ctx, node, 0)->data;
    const eh_rows_t r = eh_rows(ctx, node, d->rows_scratch, d->n, n);
    int32_t b;
    for (b = 0; b < d->n; b++) eh_quantize_row(x + b * n, (int32_t)n, d->per_channel, r.q + b * n, &r.scale[b], &r.zp[b]);
    return r;
}

/* The output value of channel oc of image b from its exact sum. */
static float eh_conv_out(const hconv_data_t *d, const eh_rows_t *r, const edge_tensor_t *w, const float *bias,
                         int32_t b, int32_t oc, int32_t acc, int depthwise) {
    float v;
    if (!d->per_channel) v = (float)acc * (r->scale[b] * d->w_scale);
    else if (depthwise) v = (float)acc * (w->scales[oc] * r->scale[b]);
    else v = (float)acc * w->scales[oc] * r->scale[b];
    if (bias) v += bias[oc];
    return v < d->lo ? d->lo : (v > d->hi ? d->hi : v);
}

/* Both hybrid convolutions: each output channel's int32 sum over its taps of weight x (q - zp), in tap order then
 * input channel order (LiteRT's), then eh_conv_out. CONV_2D: output channel oc reads its group's cg channels from
 * (oc / (o / groups)) * cg, filter [o, kh, kw, cg]; DEPTHWISE_CONV_2D: output channel oc reads input channel
 * oc / mult alone, filter [1, kh, kw, o]. */
static void eh_conv_eval(const edge_node_t *node, edge_ctx_t *ctx, int32_t depthwise) {
    const hconv_data_t *d = (const hconv_data_t *)node->user_data;
    const edge_tensor_t *w = edge_in(ctx, node, 1), *bt = edge_in(ctx, node, 2);
    const int8_t *wt = (const int8_t *)w->data;
    const float *bias = bt ? (const float *)bt->data : 0;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    const eh_rows_t r = eh_conv_quantize(node, ctx, d);
    const int32_t n_in = depthwise ? 1 : d->cg, tap = depthwise ? d->o : d->cg;
    const int32_t per_group = depthwise ? 0 : d->o / d->groups;
    int32_t b, oy, ox, oc, ky, kx, ic, ky0, ky1, kx0, kx1;
    for (b = 0; b < d->n; b++) {
        const int8_t *img = r.q + (int64_t)b * d->h * d->w * d->c;
        const int32_t zp = r.zp[b];
        for (oy = 0; oy < d->oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->pt;
            edge_conv_taps(iy0, d->dh, d->h, d->kh, &ky0, &ky1);
            for (ox = 0; ox < d->ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->pl;
                edge_conv_taps(ix0, d->dw, d->w, d->kw, &kx0, &kx1);
                for (oc = 0; oc < d->o; oc++) {
                    const int32_t c0 = depthwise ? oc / d->mult : (oc / per_group) * d->cg;
                    const int8_t *wo = wt + (depthwise ? oc : (int64_t)oc * d->kh * d->kw * d->cg);
                    int32_t acc = 0;
                    for (ky = ky0; ky < ky1; ky++)
                        for (kx = kx0; kx < kx1; kx++) {
                            const int8_t *px = img + ((int64_t)(iy0 + ky * d->dh) * d->w + (ix0 + kx * d->dw)) * d->c + c0;
                            const int8_t *wk = wo + ((int64_t)ky * d->kw + kx) * tap;
                            for (ic = 0; ic < n_in; ic++) acc += (int32_t)wk[ic] * ((int32_t)px[ic] - zp);
                        }
                    *y++ = eh_conv_out(d, &r, w, bias, b, oc, acc, depthwise);
                }
            }
        }
    }
}

void edge_hybrid_eval_conv_2d(const edge_node_t *node, edge_ctx_t *ctx) { eh_conv_eval(node, ctx, 0); }

void edge_hybrid_eval_depthwise_conv_2d(const edge_node_t *node, edge_ctx_t *ctx) { eh_conv_eval(node, ctx, 1); }

/* ------------------------------------------------------------------------------------------ BATCH_MATMUL */

typedef struct {
    edge_bmm_shape_t g;        /* rows, cols, depth; the batch broadcast (edge_bmm.h, as the float kernel's) */
    int32_t adj_x, adj_y, asymmetric, rows_scratch, col_scratch; /* col: adj_x's gathered row */
    int64_t lhs_rows;          /* rows quantized per invoke: every row of the lhs */
    const int32_t *col_sums;   /* per rhs matrix and column (persistent) */
} hbmm_data_t;

/* BatchMatMulOptions: 0 adj_x, 1 adj_y, 2 asymmetric_quantize_inputs. The batch broadcast is batch_matmul.c's. */
edge_status_t edge_hybrid_prepare_batch_matmul(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *l = edge_in(ctx, node, 0), *r = edge_in(ctx, node, 1), *out = edge_out(ctx, node, 0);
    const int has_opts = node->options_type == EDGE_OPTS_BatchMatMulOptions;
    hbmm_data_t *d;
    int32_t m, j, i, n_mats;
    int32_t *sums;
    edge_status_t s;

    if ((s = eh_check(ctx, r, out)) != EDGE_OK) return s;
    if (r->type != EDGE_INT8) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "BATCH_MATMUL: a hybrid rhs must be INT8");
    if (l->rank < 2 || l->rank > 5 || r->rank < 2 || r->rank > 5)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: operands must have rank 2 to 5");
    d = (hbmm_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    memset(d, 0, sizeof *d);
    node->user_data = d;
    d->adj_x = has_opts && edge_opt_int(node, 0, 1, 0) != 0;
    d->adj_y = has_opts && edge_opt_int(node, 1, 1, 0) != 0;
    d->asymmetric = has_opts && edge_opt_int(node, 2, 1, 0) != 0;
    if ((s = edge_bmm_shape(node, ctx, l, r, d->adj_x, d->adj_y, &d->g)) != EDGE_OK) return s;
    if (r->n_scales > 1 && (r->n_scales != d->g.cols || r->quantized_dimension != r->rank - (d->adj_y ? 2 : 1)))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: per-channel rhs needs one scale per output column");
    /* the column sums of every rhs matrix: ReductionSumVector of LiteRT's transposed rhs */
    n_mats = d->g.depth && d->g.cols ? (int32_t)(edge_tensor_elements(r) / ((int64_t)d->g.depth * d->g.cols)) : 0;
    sums = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)(n_mats * d->g.cols > 0 ? n_mats * d->g.cols : 1));
    if (!sums) return EDGE_ARENA_TOO_SMALL;
    for (m = 0; m < n_mats; m++)
        for (j = 0; j < d->g.cols; j++) {
            const int8_t *rm = (const int8_t *)r->data + (int64_t)m * d->g.depth * d->g.cols;
            int32_t sum = 0;
            for (i = 0; i < d->g.depth; i++) sum += d->adj_y ? rm[(int64_t)j * d->g.depth + i] : rm[(int64_t)i * d->g.cols + j];
            sums[m * d->g.cols + j] = sum;
        }
    d->col_sums = sums;
    d->lhs_rows = edge_tensor_elements(l) / (d->g.depth > 0 ? d->g.depth : 1);
    if ((s = eh_request_rows(ctx, node, d->lhs_rows, d->g.depth, &d->rows_scratch)) != EDGE_OK) return s;
    d->col_scratch = -1;
    return d->adj_x ? edge_request_scratch(ctx, node, sizeof(float) * (size_t)(d->g.depth > 0 ? d->g.depth : 1),
                                           &d->col_scratch)
                    : EDGE_OK;
}

void edge_hybrid_eval_batch_matmul(const edge_node_t *node, edge_ctx_t *ctx) {
    const hbmm_data_t *d = (const hbmm_data_t *)node->user_data;
    const edge_tensor_t *r = edge_in(ctx, node, 1);
    const float *lhs = (const float *)edge_in(ctx, node, 0)->data;
    const int8_t *rhs = (const int8_t *)r->data;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    const int32_t R = d->g.rows, C = d->g.cols, K = d->g.depth;
    const eh_rows_t q = eh_rows(ctx, node, d->rows_scratch, d->lhs_rows, K);
    const int32_t rk = d->adj_y ? 1 : C, rj = d->adj_y ? K : 1;
    int32_t idx[EDGE_BMM_MAX_BATCH] = {0, 0, 0}, i, j, kk;
    int64_t lo = 0, ro = 0, row;
    if (edge_tensor_elements(edge_out(ctx, node, 0)) == 0) return;
    /* every lhs row (the row of adj_x's transposed view) quantized once: matrix m's row i at m * R + i */
    for (row = 0; row < d->lhs_rows; row++) {
        const int64_t m = row / R, ri = row % R;
        const float *src = lhs + m * R * K + ri * K;
        if (d->adj_x) { /* lhs matrix [K, R]: its column ri gathered first */
            float *col = (float *)edge_scratch(ctx, node, d->col_scratch);
            for (kk = 0; kk < K; kk++) col[kk] = lhs[m * R * K + (int64_t)kk * R + ri];
            src = col;
        }
        eh_quantize_row(src, K, d->asymmetric, q.q + row * K, &q.scale[row], &q.zp[row]);
    }
    for (;;) {
        const int64_t lrow0 = lo / K; /* the first row (in quantized rows) of this lhs matrix */
        const int32_t *sums = d->col_sums + (ro / ((int64_t)K * C)) * C;
        for (i = 0; i < R; i++) {
            const int8_t *qi = q.q + (lrow0 + i) * K;
            const float scale = r->n_scales > 1 ? q.scale[lrow0 + i] : q.scale[lrow0 + i] * r->scale;
            const float offset = (float)q.zp[lrow0 + i];
            for (j = 0; j < C; j++) {
                const int8_t *rc = rhs + ro + (int64_t)j * rj;
                int32_t total = 0;
                for (kk = 0; kk < K; kk++) total += (int32_t)qi[kk] * (int32_t)rc[(int64_t)kk * rk];
                total = (int32_t)((float)total - (float)sums[j] * offset); /* LiteRT: in float, truncated */
                y[(int64_t)i * C + j] = (r->n_scales > 1 ? scale * r->scales[j] : scale) * (float)total;
            }
        }
        y += (int64_t)R * C;
        if (!edge_bmm_next(&d->g, idx, &lo, &ro)) break;
    }
}
