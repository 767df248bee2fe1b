/* ABS: y = |x|, element-wise.
 *
 * As edge_sdk/runtime/kernels/math.py prepare_abs: FLOAT32 (fabsf: clears the sign bit, as numpy), INT32 and INT64
 * (two's complement: the most negative value stays itself, as numpy's abs), INT8 saturating (|-128| is 127).
 * Integer tensors that carry quantization must share one scale with zero points of 0 (then the raw values
 * are the real ones up to that scale); anything else is UNSUPPORTED.
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(ABS, abs, 5, "FLOAT32 INT8 INT32 INT64", "quantized: one scale, zero points 0")

edge_status_t edge_prepare_abs(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ABS expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ABS: input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_INT32 && x->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "ABS: C kernel runs FLOAT32, INT8, INT32, INT64");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (out->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "ABS: output type differs from input");
    if (x->type != EDGE_FLOAT32 && (x->quantized || out->quantized) &&
        !(x->quantized && out->quantized && x->scale == out->scale && x->zero_point == 0 && out->zero_point == 0))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "ABS: quantized input and output must share a scale with zero point 0");
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_abs(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    switch (x->type) {
    case EDGE_INT8: {
        const int8_t *a = (const int8_t *)x->data;
        int8_t *y = (int8_t *)out->data;
        for (i = 0; i < n; i++) y[i] = (int8_t)(a[i] == -128 ? 127 : (a[i] < 0 ? -a[i] : a[i]));
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
