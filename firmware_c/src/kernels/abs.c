/* ABS: y = |x|, element-wise.
 *
 * As edge_sdk/runtime/kernels/math.py prepare_abs: FLOAT32 (fabsf: clears the sign bit, as numpy), INT32 and INT64
 * (two's complement: the most negative value stays itself, as numpy's abs). INT8 and quantized INT16 as
 * elementwise.cc's AbsEvalQuantized (LiteRT and TFLM): v = |x - zp_in|; when the scales differ, v times the
 * multiplier of in_scale / out_scale (TFLM's two roundings, MultiplyByQuantizedMultiplier; LiteRT's pip build
 * rounds once: +-1 there); plus zp_out, clamped (|-128| with one scale saturates to 127). INT16 needs zero
 * points of 0; INT16 without quantization is LiteRT's AbsInt16EvalImpl: |x| cast to int16 (|-32768| wraps).
 * An INT8 pair without quantization is one scale with zero points 0.
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(ABS, abs, 5, "FLOAT32 INT8 INT16 INT32 INT64", "quantized INT16: zero points 0")

typedef struct {
    int32_t in_zp, out_zp, lo, hi;
    int32_t rescale, multiplier, shift; /* rescale: the scales differ */
} abs_data_t;

edge_status_t edge_prepare_abs(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    abs_data_t *d;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ABS expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ABS: input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_INT16 && x->type != EDGE_INT32 &&
        x->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "ABS: C kernel runs FLOAT32, INT8, INT16, INT32, INT64");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (out->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "ABS: output type differs from input");
    if (x->type == EDGE_INT8 || x->type == EDGE_INT16) {
        if (x->quantized != out->quantized)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "ABS: quantized input with an unquantized output (or the reverse)");
        d = (abs_data_t *)edge_alloc_persistent(ctx, sizeof *d);
        if (!d) return EDGE_ARENA_TOO_SMALL;
        node->user_data = d;
        d->lo = x->type == EDGE_INT8 ? -128 : -32768;
        d->hi = x->type == EDGE_INT8 ? 127 : 32767;
        if (x->quantized) {
            d->in_zp = x->zero_point;
            d->out_zp = out->zero_point;
            if (x->type == EDGE_INT16 && (d->in_zp != 0 || d->out_zp != 0))
                return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "ABS: int16 input and output need zero points of 0");
            if (x->scale != out->scale) {
                d->rescale = 1;
                if (edge_quantize_multiplier((double)x->scale / (double)out->scale, &d->multiplier, &d->shift))
                    return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ABS: scales give no multiplier");
            }
        } else if (x->type == EDGE_INT16) {
            d->lo = 1; /* unquantized int16: the wrapping |x| (eval reads lo > hi as that) */
            d->hi = 0;
        }
    } else if (x->type != EDGE_FLOAT32 && (x->quantized || out->quantized) &&
               !(x->quantized && out->quantized && x->scale == out->scale && x->zero_point == 0 && out->zero_point == 0))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "ABS: quantized input and output must share a scale with zero point 0");
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

static inline int32_t abs_q(const abs_data_t *d, int32_t x) {
    int32_t v = x - d->in_zp;
    v = v < 0 ? -v : v;
    if (d->rescale) v = edge_mbqm(v, d->multiplier, d->shift);
    return (int32_t)ea_clamp((int64_t)v + d->out_zp, d->lo, d->hi);
}

void edge_eval_abs(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    switch (x->type) {
    case EDGE_INT8: {
        const abs_data_t *d = (const abs_data_t *)node->user_data;
        const int8_t *a = (const int8_t *)x->data;
        int8_t *y = (int8_t *)out->data;
        for (i = 0; i < n; i++) y[i] = (int8_t)abs_q(d, a[i]);
        break;
    }
    case EDGE_INT16: {
        const abs_data_t *d = (const abs_data_t *)node->user_data;
        const int16_t *a = (const int16_t *)x->data;
        int16_t *y = (int16_t *)out->data;
        if (d->lo > d->hi)
            for (i = 0; i < n; i++) y[i] = (int16_t)(uint16_t)(a[i] < 0 ? 0u - (uint16_t)a[i] : (uint16_t)a[i]);
        else
            for (i = 0; i < n; i++) y[i] = (int16_t)abs_q(d, a[i]);
        break;
    }
    case EDGE_INT32: {
        const uint32_t *a = (const uint32_t *)x->data;
        uint32_t *y = (uint32_t *)out->data;
        for (i = 0; i < n; i++) y[i] = (a[i] & 0x80000000u) ? 0u - a[i] : a[i]; /* wraps like numpy */
        break;
    }
    case EDGE_INT64: {
        const uint8_t *a = (const uint8_t *)x->data;
        uint8_t *y = (uint8_t *)out->data;
        for (i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, a + 8 * i, 8);
            if (v >> 63) v = 0u - v;
            memcpy(y + 8 * i, &v, 8);
        }
        break;
    }
    default: {
        const float *a = (const float *)x->data;
        float *y = (float *)out->data;
        if (EDGE_WITH_FLOAT32)
            for (i = 0; i < n; i++) y[i] = fabsf(a[i]);
        break;
    }
    }
}
