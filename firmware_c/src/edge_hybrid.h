/* edge_hybrid.h - LiteRT's hybrid kernels' arithmetic (float activations, int8 weights): the per-row quantization
 * of a float vector and the scaled int8 product, shared by the hybrid RNNs (rnn.c), LSTMs (the float LSTM cell,
 * unidirectional_sequence_lstm.c), SVDF (svdf.c) and the hybrid FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D and
 * BATCH_MATMUL of kernels/hybrid.c, whose entry points the kernel files of those ops dispatch to.
 */
#ifndef EDGE_HYBRID_H
#define EDGE_HYBRID_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "edge_kernel.h"

/* kernels/hybrid.c: whether an op with this input and these weights is LiteRT's hybrid kernel (FLOAT32 input, INT8
 * or UINT8 weights), and the hybrid prepare / eval of the weighted ops (node->user_data is hybrid.c's op data). */
int edge_hybrid_weights(const edge_tensor_t *in, const edge_tensor_t *w);
edge_status_t edge_hybrid_prepare_fully_connected(edge_node_t *node, edge_ctx_t *ctx);
void edge_hybrid_eval_fully_connected(const edge_node_t *node, edge_ctx_t *ctx);
edge_status_t edge_hybrid_prepare_conv_2d(edge_node_t *node, edge_ctx_t *ctx);
void edge_hybrid_eval_conv_2d(const edge_node_t *node, edge_ctx_t *ctx);
edge_status_t edge_hybrid_prepare_depthwise_conv_2d(edge_node_t *node, edge_ctx_t *ctx);
void edge_hybrid_eval_depthwise_conv_2d(const edge_node_t *node, edge_ctx_t *ctx);
edge_status_t edge_hybrid_prepare_batch_matmul(edge_node_t *node, edge_ctx_t *ctx);
void edge_hybrid_eval_batch_matmul(const edge_node_t *node, edge_ctx_t *ctx);

/* LiteRT's BatchQuantizeFloats of one row of n floats: q, its scale and zero point. Symmetric: scale max|v| / 127,
 * q = round(v * 127 / max|v|) in [-127, 127]. Asymmetric: [min(0, min v), max(0, max v)] over [-128, 127] in
 * double, the nudged zero point, q = round(zp + v / scale) in [-128, 127]. An all-zero row: 0, scale 1, zp 0. */
/* roundf(f) clamped to [lo, hi] in float before the int conversion (NaN -> 0: a NaN or inf input row, which the
 * fuzzer feeds, made the cast undefined). */
static inline int8_t eh_round_clamp(float f, float lo, float hi) {
    f = roundf(f);
    return (int8_t)(f != f ? 0 : f < lo ? (int32_t)lo : f > hi ? (int32_t)hi : (int32_t)f);
}

static inline void eh_quantize_row(const float *v, int32_t n, int32_t asymmetric, int8_t *q, float *scale, int32_t *zp) {
    float lo = n > 0 ? v[0] : 0.0f, hi = lo, inv;
    int32_t k;
    for (k = 1; k < n; k++) {
        lo = v[k] < lo ? v[k] : lo;
        hi = v[k] > hi ? v[k] : hi;
    }
    *zp = 0;
    *scale = 1.0f;
    if (!asymmetric) {
        const float span = fabsf(lo) > fabsf(hi) ? fabsf(lo) : fabsf(hi);
        if (span == 0.0f) {
            memset(q, 0, (size_t)n);
            return;
        }
        *scale = span / 127.0f;
        inv = 127.0f / span;
        for (k = 0; k < n; k++) q[k] = eh_round_clamp(v[k] * inv, -127.0f, 127.0f);
        return;
    }
    {
        const double rmin = (double)(lo < 0.0f ? lo : 0.0f), rmax = (double)(hi > 0.0f ? hi : 0.0f);
        double ds, from_min, from_max, zd;
        if (rmin == rmax) {
            memset(q, 0, (size_t)n);
            return;
        }
        /* the span in float, then divided in double: LiteRT's build (ai-edge-litert 2.3.0) computes this */
        ds = (double)((hi > 0.0f ? hi : 0.0f) - (lo < 0.0f ? lo : 0.0f)) / 255.0;
        from_min = -128.0 - rmin / ds;
        from_max = 127.0 - rmax / ds;
        zd = 128.0 + fabs(rmin / ds) < 127.0 + fabs(rmax / ds) ? from_min : from_max;
        *zp = zd != zd ? 0 : zd <= -128.0 ? -128 : (zd >= 127.0 ? 127 : (int32_t)round(zd));
        *scale = (float)ds;
        inv = 1.0f / *scale;
        for (k = 0; k < n; k++) q[k] = eh_round_clamp((float)*zp + v[k] * inv, -128.0f, 127.0f);
    }
}

/* float(q . w - zp * sum(w)) * scale over n values: one int8 row product of MatrixBatchVectorMultiplyAccumulate
 * (the row sum takes the asymmetric zero point off; scale is the row's scale times the weights'). */
static inline float eh_product(const int8_t *q, const int8_t *w, int32_t n, int32_t zp, float scale) {
    int32_t dot = 0, sum = 0, k;
    for (k = 0; k < n; k++) {
        dot += (int32_t)w[k] * (int32_t)q[k];
        sum += w[k];
    }
    return (float)(dot - sum * zp) * scale;
}

#endif /* EDGE_HYBRID_H */
