/* edge_conv.h - the window arithmetic shared by CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV and the 2-D pools.
 *
 * Output size and padding of a strided, dilated window (TFLite's ComputeOutSize and
 * ComputePaddingWithOffset), and the range of filter taps that land inside the input (so the loops need no
 * per-tap bounds checks); the geometry the window kernels run on, and a patch window's rule on it
 * (edge_window_apply).
 */
#ifndef EDGE_CONV_H
#define EDGE_CONV_H

#include <stdint.h>
#include <string.h>

#include "edge_kernel.h"
#include "edge_dsp.h"
#include "edge_fixedpoint.h"
#include "simd/edge_simd.h"

/* One spatial dimension: padding EDGE_PAD_SAME or EDGE_PAD_VALID; stride, dilation, input size, filter size. *out gets the
 * output size, *pad the padding before. Returns 0, or -1 when the window does not fit (or a value is not
 * positive, or the padding is neither). TRANSPOSE_CONV computes its padding with in = its output size and
 * dilation 1. */
static inline int edge_conv_window(int32_t padding, int32_t stride, int32_t dil, int32_t in, int32_t k, int32_t *out,
                                   int32_t *pad) {
    int64_t eff, total;
    uint32_t o;
    if (stride <= 0 || dil <= 0 || k <= 0 || in <= 0 || (padding != EDGE_PAD_SAME && padding != EDGE_PAD_VALID)) return -1;
    eff = (int64_t)(k - 1) * dil + 1;
    /* TFLite's (in + stride - 1) / stride and (in + stride - eff) / stride (truncated), in 32 bits (no 64-bit
     * division helper): the first numerator fits a uint32; the second is < stride (no output) unless
     * eff <= in, and then it is (in - eff) / stride + 1 */
    if (padding == EDGE_PAD_SAME) {
        o = ((uint32_t)in + (uint32_t)stride - 1u) / (uint32_t)stride;
    } else {
        if (eff > in) return -1;
        o = (uint32_t)(in - (int32_t)eff) / (uint32_t)stride + 1u;
    }
    total = (int64_t)(o - 1u) * stride + eff - in;
    if (total < 0) total = 0;
    *out = (int32_t)o;
    *pad = (int32_t)(total >> 1);
    return 0;
}

/* The geometry CONV_2D, DEPTHWISE_CONV_2D and the 2-D pools run on (in their op data): input h x w, output
 * oh x ow, padding before pt (top) / pl (left; a patch window's may be negative), and where the build has
 * fast paths (EDGE_SIMD), fast: the one the kernel prepared, which it takes only while fast is nonzero (the
 * pools and DEPTHWISE_CONV_2D: its SIMD level; CONV_2D: CONV_FAST_*); 0: the portable loops. */
typedef struct {
    int32_t h, w, oh, ow, pt, pl;
#if EDGE_SIMD
    int32_t fast;
#endif
} edge_conv_geom_t;

/* A patch window (edge_window_t) on a copy of a kernel's prepared geometry: the window's input, output and
 * padding, and the portable loops (a fast path's packing and scratch are sized for the whole tensor). */
static inline void edge_window_apply(edge_conv_geom_t *g, const edge_window_t *win) {
    g->h = win->h;
    g->w = win->w;
    g->oh = win->oh;
    g->ow = win->ow;
    g->pt = win->pt;
    g->pl = win->pl;
#if EDGE_SIMD
    g->fast = 0;
#endif
}

/* The filter taps f in [*lo, *hi) whose coordinate origin + f * dil lies in [0, size). */
static inline void edge_conv_taps(int32_t origin, int32_t dil, int32_t size, int32_t k, int32_t *lo, int32_t *hi) {
    int32_t a = 0, b = k;
    if (origin < 0) a = (-origin + dil - 1) / dil;
    if (origin + (int64_t)(k - 1) * dil >= size) b = (size - origin + dil - 1) / dil;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

/* a + b wrapping like the int64 hardware add (a model's int64 bias can be anything: no signed overflow). */
static inline int64_t edge_conv_add64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

/* The options the three share, read as the kernels need them (no options table: SAME, strides 1, no
 * activation, dilations 1): padding, stride_w, stride_h at slots 0..2, the activation at act_slot, the
 * dilations (w, h) at dil_slot, dil_slot + 1 (dil_slot < 0: none, 1). */
typedef struct {
    int32_t padding, sw, sh, act, dw, dh;
} edge_conv_opts_t;

static inline edge_conv_opts_t edge_conv_opts(const edge_node_t *node, int32_t type, int32_t act_slot,
                                              int32_t dil_slot) {
    const int has = node->options_type == type;
    edge_conv_opts_t o;
    o.padding = has ? edge_opt_int(node, 0, 1, 0) : 0;
    o.sw = has ? edge_opt_int(node, 1, 4, 0) : 1;
    o.sh = has ? edge_opt_int(node, 2, 4, 0) : 1;
    o.act = has ? edge_opt_int(node, act_slot, 1, 0) : 0;
    o.dw = has && dil_slot >= 0 ? edge_opt_int(node, dil_slot, 4, 1) : 1;
    o.dh = has && dil_slot >= 0 ? edge_opt_int(node, dil_slot + 1, 4, 1) : 1;
    return o;
}

/* The geometry a window kernel (CONV_2D, DEPTHWISE_CONV_2D, the 2-D pools) prepares over its input 0, whose h x w
 * `g` holds: output oh x ow and padding before pt / pl (edge_conv_window on each axis); -1 when the window does not
 * fit. A PAD folded into the node (edge_pad_folds; edge_conv_source) makes the plane the PAD's input (its h x w)
 * and adds the PAD's padding before to pt / pl; bottom / right follow from oh, ow. */
static inline int edge_conv_geom_fold_pad(edge_ctx_t *ctx, const edge_node_t *node, const edge_conv_opts_t *op,
                                          int32_t kh, int32_t kw, edge_conv_geom_t *g) {
    int32_t top, left, src;
    if (edge_conv_window(op->padding, op->sh, op->dh, g->h, kh, &g->oh, &g->pt) ||
        edge_conv_window(op->padding, op->sw, op->dw, g->w, kw, &g->ow, &g->pl))
        return -1;
    src = edge_conv_source(ctx, node, &top, &left);
    if (src >= 0 && src != node->inputs[0]) {
        g->h = ctx->tensors[src].dims[1];
        g->w = ctx->tensors[src].dims[2];
        g->pt += top;
        g->pl += left;
    }
    return 0;
}

/* The checks CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV share (the error names the op): output of the
 * input's type, input / filter FLOAT32 / FLOAT32, INT8 / INT8 or INT16 / INT8 (a type compiled out of this
 * build refused), both 4-D, a dense filter, an activation the kernels know. */
static inline edge_status_t edge_conv_check(edge_ctx_t *ctx, const edge_tensor_t *in, const edge_tensor_t *w,
                                            const edge_tensor_t *out, int32_t act) {
    if (out->type != in->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input");
    if (!((in->type == EDGE_FLOAT32 && w->type == EDGE_FLOAT32) || (in->type == EDGE_INT8 && w->type == EDGE_INT8) ||
          (in->type == EDGE_INT16 && w->type == EDGE_INT8)))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE,
                         "C kernel runs FLOAT32/FLOAT32, INT8/INT8 and INT16/INT8 (input/filter)");
    if (edge_type_built(ctx, in->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (in->rank != 4 || w->rank != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and filter must be 4-D");
    if (w->is_sparse) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "sparse filter");
    if (act < 0 || act > EDGE_ACT_RELU6) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "fused activation");
    return EDGE_OK;
}

/* A quantized layer with n output channels: scales and zero points on input, filter and output, one filter
 * scale or one per output channel (along the filter dimension that has n), the activation's clamp in *lo /
 * *hi, an int8 input zero point the kernels' int16 arithmetic holds. */
static inline edge_status_t edge_conv_check_quant(edge_ctx_t *ctx, const edge_tensor_t *in, const edge_tensor_t *w,
                                                  const edge_tensor_t *out, int32_t n, int32_t act, int32_t *lo,
                                                  int32_t *hi) {
    const int i8 = in->type == EDGE_INT8;
    if (!in->quantized || !w->quantized || !out->quantized)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "quantized tensors need scales and zero points");
    if (w->n_scales != 1 && w->n_scales != n)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "filter needs one scale or one per output channel");
    if (w->n_scales > 1 &&
        (w->quantized_dimension < 0 || w->quantized_dimension > 3 || w->dims[w->quantized_dimension] != n))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "per-channel filter scales not along the output channels");
    if (edge_activation_range(act, i8 ? -128 : -32768, i8 ? 127 : 32767, out->scale, out->zero_point, lo, hi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "fused activation");
    if (i8 && (-in->zero_point < -32768 + 128 || -in->zero_point > 32767 - 128))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input zero point out of range");
    return EDGE_OK;
}

/* Channel k's real multiplier in->scale * w->scales[k, or 0 when per-tensor] / out->scale in double, as TFLM
 * computes it: the double instructions where the FPU has double precision (the host, Cortex-A, Cortex-M7 with
 * fpv5-d16), else edge_ratio_d on the bits (the same double; no soft-double multiply / divide on the Cortex-M4 / M33,
 * nor on cores without an FPU). */
static inline double edge_conv_real(const edge_tensor_t *in, const edge_tensor_t *w, const edge_tensor_t *out,
                                    int32_t k) {
    float ws;
    memcpy(&ws, &w->scales[w->n_scales > 1 ? k : 0], 4);
    return EDGE_RATIO_D(in->scale, ws, out->scale);
}

/* The per-channel requantization of a quantized convolution in one persistent block of 5 bytes a channel
 * (see edge_rq_pack): channel k's multiplier is in->scale * w->scales[k, or 0 when per-tensor] / out->scale
 * in double, as TFLM's. int8 layers get edge_rq's form while it covers every channel (*generic = 0); else, and
 * for int16 layers, every channel keeps edge_mbqm's multiplier and shift (edge_conv_mult / edge_conv_shift). */
static inline edge_status_t edge_conv_rq(edge_ctx_t *ctx, const edge_tensor_t *in, const edge_tensor_t *w,
                                         const edge_tensor_t *out, int32_t n, int int8, int32_t **rq,
                                         int32_t *generic) {
    int32_t *r = (int32_t *)edge_alloc_persistent(ctx, 5u * (size_t)n);
    int32_t k;
    if (!r) return EDGE_ARENA_TOO_SMALL;
    *rq = r;
    *generic = !int8;
    for (k = 0; k < n; k++) {
        int32_t m, sh;
        edge_rq_t q;
        edge_quantize_multiplier(edge_conv_real(in, w, out, k), &m, &sh);
        if (!*generic && edge_rq_make(&q, m, sh) == 0) {
            edge_rq_pack(r, n, k, &q);
        } else if (!*generic) {
            *generic = 1; /* a ratio edge_rq does not cover: every channel in edge_mbqm's form, from the start */
            k = -1;
        } else {
            if (sh < -128 || sh > 127) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "requantization scale out of range");
            r[k] = m;
            ((int8_t *)(r + n))[k] = (int8_t)sh;
        }
    }
    return EDGE_OK;
}
#if EDGE_DSP
/* The DSP paths' requantization of a layer edge_rq does not cover (some channel's ratio of scales at 1/4 or
 * above: a right shift of 0 or 1, or a left shift), bit-exact with edge_mbqm(x, M, shift) + zp for M in
 * [2^30, 2^31) or 0 and shift in [-31, 31] (edge_conv_rqw_make refuses others):
 *   x' = x << left (wrapping, as edge_mbqm), h = SRDHM(x', M) = SMMLAR(x', 2M - 2^32, x') (edge_dsp.h's identity)
 *   right shift rs 1..31: y = zp + floor((h' + 2^(rs-1)) / 2^rs), h' = h - (h < 0) (edge_dsp.h's rounding divide)
 *      = SMMLSR(h', -2^(32 - rs), zp): (zp << 32) + h' * 2^(32 - rs) + 2^31 over 2^32; -2^31 fits for rs = 1,
 *      where edge_rq's SMMLAR(h', 2^(32 - rs), zp) has no operand
 *   rs = 0: y = h + zp.   M = 0: nrnd = 0 gives y = zp. */
typedef struct {
    int32_t mul;  /* 2M wrapped to int32 */
    int32_t nrnd; /* -2^(32 - rs); 0 with rs = 0 (then rs0) or M = 0 */
    int32_t left; /* left shift 0..31 */
    int32_t rs0;  /* 1: no right shift (y = h + zp) */
} edge_conv_rqw_t;

static inline int edge_conv_rqw_make(edge_conv_rqw_t *q, int32_t multiplier, int32_t shift) {
    if (multiplier < 0 || (multiplier > 0 && multiplier < (1 << 30)) || shift < -31 || shift > 31) return -1;
    q->mul = (int32_t)((uint32_t)multiplier << 1);
    q->left = shift > 0 ? shift : 0;
    q->rs0 = multiplier != 0 && shift >= 0;
    q->nrnd = multiplier == 0 || shift >= 0 ? 0 : (int32_t)(0u - ((uint32_t)1 << (32 + shift)));
    return 0;
}

static inline int32_t edge_conv_rqw_apply(const edge_conv_rqw_t *q, int32_t acc, int32_t zp) {
    const int32_t x = (int32_t)((uint32_t)acc << q->left);
    int32_t h = edge_smmlar(x, q->mul, x);
    if (q->rs0) return h + zp;
    h += h >> 31;
#if EDGE_DSP_ASM
    {
        int32_t r;
        __asm__("smmlsr %0, %1, %2, %3" : "=r"(r) : "r"(h), "r"(q->nrnd), "r"(zp));
        return r;
    }
#else
    return (int32_t)(uint32_t)((((uint64_t)(uint32_t)zp << 32) - (uint64_t)((int64_t)h * (int64_t)q->nrnd) +
                                0x80000000u) >> 32);
#endif
}
#endif

static inline int32_t edge_conv_mult(const int32_t *rq, int32_t k) { return rq[k]; }
static inline int32_t edge_conv_shift(const int32_t *rq, int32_t n, int32_t k) {
    return ((const int8_t *)(rq + n))[k];
}

/* CONV_3D and CONV_3D_TRANSPOSE (float32, NDHWC input, 5-D filter): one geometry. n, d, h, w, c are the input's
 * dims, o the output channels, kd, kh, kw the taps; od, oh, ow the output's spatial dims; strides, dilations,
 * paddings-before (pd, pt, pl) and the activation's clamp [lo, hi]. */
typedef struct {
    int32_t n, d, h, w, c, o, kd, kh, kw;
    int32_t od, oh, ow, sd, sh, sw, dd, dh, dw, pd, pt, pl;
    float lo, hi;
} edge_conv3d_t;

/* The checks and options both 3-D convolutions share: FLOAT32 input, filter, output and bias (as LiteRT), 5-D
 * input and filter, a dense filter; Conv3DOptions (slots 0 padding, 1 stride_d, 2 stride_w, 3 stride_h, 4
 * fused activation, 5 dilation_d, 6 dilation_w, 7 dilation_h; absent: SAME, 1s, none) into g with the input's
 * dims and the filter's taps. *padding gets the padding; the caller sets o and the output dims. */
static inline edge_status_t edge_conv3d_prepare(edge_ctx_t *ctx, const edge_node_t *node, const edge_tensor_t *in,
                                                const edge_tensor_t *w, const edge_tensor_t *bias,
                                                const edge_tensor_t *out, edge_conv3d_t *g, int32_t *padding) {
    const int has = node->options_type == EDGE_OPTS_Conv3DOptions;
    int32_t act;
    edge_status_t s;
    if (in->type != EDGE_FLOAT32 || w->type != EDGE_FLOAT32 || out->type != EDGE_FLOAT32 ||
        (bias && bias->type != EDGE_FLOAT32))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "3-D convolutions run FLOAT32 only (as LiteRT)");
    if ((s = edge_type_built(ctx, in->type)) != EDGE_OK) return s;
    if (in->rank != 5 || w->rank != 5) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and filter must be 5-D");
    if (w->is_sparse) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "sparse filter");
    *padding = has ? edge_opt_int(node, 0, 1, 0) : EDGE_PAD_SAME;
    g->sd = has ? edge_opt_int(node, 1, 4, 0) : 1;
    g->sw = has ? edge_opt_int(node, 2, 4, 0) : 1;
    g->sh = has ? edge_opt_int(node, 3, 4, 0) : 1;
    act = has ? edge_opt_int(node, 4, 1, 0) : EDGE_ACT_NONE;
    g->dd = has ? edge_opt_int(node, 5, 4, 1) : 1;
    g->dw = has ? edge_opt_int(node, 6, 4, 1) : 1;
    g->dh = has ? edge_opt_int(node, 7, 4, 1) : 1;
    if (edge_activation_range_float(act, &g->lo, &g->hi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "fused activation");
    g->n = in->dims[0];
    g->d = in->dims[1];
    g->h = in->dims[2];
    g->w = in->dims[3];
    g->c = in->dims[4];
    g->kd = w->dims[0];
    g->kh = w->dims[1];
    g->kw = w->dims[2];
    return EDGE_OK;
}

#endif /* EDGE_CONV_H */
