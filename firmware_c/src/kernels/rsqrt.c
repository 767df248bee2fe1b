/* RSQRT: y = 1 / sqrt(x), element-wise.
 *
 * As edge_sdk/runtime/kernels/elementwise.py prepare_rsqrt for FLOAT32: float32 sqrt then a float32 division of 1
 * (both correctly rounded, so the bits equal numpy's). The int8 form (TFLM's inverse-sqrt multiplier table)
 * is refused: UNSUPPORTED_TYPE.
 */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(RSQRT, rsqrt, 3, "FLOAT32", "")

edge_status_t edge_prepare_rsqrt(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "RSQRT expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "RSQRT: input is required");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (x->type != EDGE_FLOAT32 || out->type != EDGE_FLOAT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "RSQRT: C kernel runs FLOAT32 only");
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_rsqrt(const edge_node_t *node, edge_ctx_t *ctx) {
    const float *x = (const float *)edge_in(ctx, node, 0)->data;
    edge_tensor_t *out = edge_out(ctx, node, 0);
    float *y = (float *)out->data;
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    for (i = 0; i < n; i++) y[i] = 1.0f / sqrtf(x[i]);
}
