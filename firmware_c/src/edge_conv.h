/* edge_conv.h - the window arithmetic shared by CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV.
 *
 * Output size and padding of a strided, dilated window (TFLite's ComputeOutSize and
 * ComputePaddingWithOffset), and the range of filter taps that land inside the input (so the loops need no
 * per-tap bounds checks).
 */
#ifndef EDGE_CONV_H
#define EDGE_CONV_H

#include <stdint.h>
#include <string.h>

#include "edge_kernel.h"
#include "edge_dsp.h"
#include "edge_fixedpoint.h"

/* One spatial dimension: padding 0 SAME, 1 VALID; stride, dilation, input size, filter size. *out gets the
 * output size, *pad the padding before. Returns 0, or -1 when the window does not fit (or a value is not
 * positive, or the padding is neither). TRANSPOSE_CONV computes its padding with in = its output size and
 * dilation 1. */
static inline int edge_conv_window(int32_t padding, int32_t stride, int32_t dil, int32_t in, int32_t k, int32_t *out,
                                   int32_t *pad) {
    int64_t eff, o, total;
    if (stride <= 0 || dil <= 0 || k <= 0 || in <= 0 || (padding != 0 && padding != 1)) return -1;
    eff = (int64_t)(k - 1) * dil + 1;
    if (padding == 0) o = ((int64_t)in + stride - 1) / stride;
    else o = ((int64_t)in + stride - eff) / stride; /* C division truncates, as TFLite's */
    if (o <= 0 || o > 0x7fffffff) return -1;
    total = (o - 1) * stride + eff - in;
    if (total < 0) total = 0;
    *out = (int32_t)o;
    *pad = (int32_t)(total / 2);
    return 0;
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
        float ws;
        int32_t m, sh;
        edge_rq_t q;
        memcpy(&ws, &w->scales[w->n_scales > 1 ? k : 0], 4);
        edge_quantize_multiplier((double)in->scale * (double)ws / (double)out->scale, &m, &sh);
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
static inline int32_t edge_conv_mult(const int32_t *rq, int32_t k) { return rq[k]; }
static inline int32_t edge_conv_shift(const int32_t *rq, int32_t n, int32_t k) {
    return ((const int8_t *)(rq + n))[k];
}

#endif /* EDGE_CONV_H */
