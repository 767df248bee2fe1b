/* ONES_LIKE, as edge_sdk/runtime/kernels/ones_like.py: ones of the input's type and shape (FLOAT32, INT32, INT64;
 * TensorFlow's OnesLike). Not a builtin of schema.fbs: the custom op of custom_code "ONES_LIKE" (LiteRT has no
 * kernel for it). A quantized type has no "one" of its own: refused. */
#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_CUSTOM_KERNEL("ONES_LIKE", ones_like, 1, "FLOAT32 INT32 INT64", "")

edge_status_t edge_prepare_ones_like(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *y;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT32 && x->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT32, INT64");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_ones_like(const edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(y);
    int64_t i;
    if (y->type == EDGE_INT32) {
        int32_t *o = (int32_t *)y->data;
        for (i = 0; i < n; i++) o[i] = 1;
    } else if (y->type == EDGE_INT64) {
        int64_t *o = (int64_t *)y->data;
        for (i = 0; i < n; i++) o[i] = 1;
    } else if (EDGE_WITH_FLOAT32) {
        float *o = (float *)y->data;
        for (i = 0; i < n; i++) o[i] = 1.0f;
    }
}
