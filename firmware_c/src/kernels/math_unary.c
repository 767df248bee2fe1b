/* EXP, LOG, SQRT and NEG, element-wise, as edge_sdk/runtime/kernels/math.py: FLOAT32 through expf / logf /
 * sqrtf (sqrt is exact; exp and log within an ulp of numpy's), NEG also INT32 and INT64 (two's complement
 * wrap, as numpy). Integer tensors that carry quantization must share one scale with zero points of 0.
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(EXP, exp, 2, "FLOAT32", "")
EDGE_KERNEL(LOG, log, 2, "FLOAT32", "")
EDGE_KERNEL(SQRT, sqrt, 1, "FLOAT32", "")
EDGE_KERNEL(NEG, neg, 1, "FLOAT32 INT32 INT64", "")

static edge_status_t unary_prepare(edge_node_t *node, edge_ctx_t *ctx, int ints) {
    edge_tensor_t *x, *out;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 && !(ints && (x->type == EDGE_INT32 || x->type == EDGE_INT64)))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, ints ? "C kernel runs FLOAT32, INT32, INT64" : "C kernel runs FLOAT32");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (out->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if (x->type != EDGE_FLOAT32 && (x->quantized || out->quantized) &&
        !(x->quantized && out->quantized && x->scale == out->scale && x->zero_point == 0 && out->zero_point == 0))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "quantized input and output must share a scale with zero point 0");
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

edge_status_t edge_prepare_exp(edge_node_t *node, edge_ctx_t *ctx) { return unary_prepare(node, ctx, 0); }
edge_status_t edge_prepare_log(edge_node_t *node, edge_ctx_t *ctx) { return unary_prepare(node, ctx, 0); }
edge_status_t edge_prepare_sqrt(edge_node_t *node, edge_ctx_t *ctx) { return unary_prepare(node, ctx, 0); }
edge_status_t edge_prepare_neg(edge_node_t *node, edge_ctx_t *ctx) { return unary_prepare(node, ctx, 1); }

#define UNARY_FLOAT(name, expr)                                                                  \
    void edge_eval_##name(const edge_node_t *node, edge_ctx_t *ctx) {                            \
        const float *a = (const float *)edge_in(ctx, node, 0)->data;                             \
        edge_tensor_t *out = edge_out(ctx, node, 0);                                             \
        float *y = (float *)out->data;                                                           \
        const int64_t n = edge_tensor_elements(out);                                             \
        int64_t i;                                                                               \
        if (!EDGE_WITH_FLOAT32) return;                                                          \
        for (i = 0; i < n; i++) y[i] = expr(a[i]);                                               \
    }

UNARY_FLOAT(exp, expf)
UNARY_FLOAT(log, logf)
UNARY_FLOAT(sqrt, sqrtf)

void edge_eval_neg(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    if (x->type == EDGE_INT32) {
        const uint32_t *a = (const uint32_t *)x->data;
        uint32_t *y = (uint32_t *)out->data;
        for (i = 0; i < n; i++) y[i] = 0u - a[i];
    } else if (x->type == EDGE_INT64) {
        const uint8_t *a = (const uint8_t *)x->data;
        uint8_t *y = (uint8_t *)out->data;
        for (i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, a + 8 * i, 8);
            v = 0u - v;
            memcpy(y + 8 * i, &v, 8);
        }
    } else if (EDGE_WITH_FLOAT32) {
        const float *a = (const float *)x->data;
        float *y = (float *)out->data;
        for (i = 0; i < n; i++) y[i] = -a[i];
    }
}
