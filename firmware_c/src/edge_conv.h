/* edge_conv.h - the window arithmetic shared by CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV.
 *
 * Output size and padding of a strided, dilated window (TFLite's ComputeOutSize and
 * ComputePaddingWithOffset), and the range of filter taps that land inside the input (so the loops need no
 * per-tap bounds checks).
 */
#ifndef EDGE_CONV_H
#define EDGE_CONV_H

#include <stdint.h>

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

#endif /* EDGE_CONV_H */
