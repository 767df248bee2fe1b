/* BROADCAST_ARGS, as edge_sdk/runtime/kernels/movement.py prepare_broadcast_args (LiteRT's and TFLM's
 * broadcast_args.cc): two 1-D shapes (INT32 or INT64, the same type) to the shape they broadcast to, right-aligned,
 * a 1 taking the other's size. Constant shapes are checked in prepare; an incompatible pair at run time gives input
 * 0's size (the peers fail the invoke; this eval has no failure path).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_index.h"

EDGE_KERNEL(BROADCAST_ARGS, broadcast_args, 1, "INT32 INT64", "1-D shapes of one type")

static int64_t ba_dim(const edge_tensor_t *t, int64_t n, int64_t k) {
    /* dimension k of t's shape right-aligned to n dimensions (1 before its first) */
    const int64_t m = edge_tensor_elements(t);
    return k < n - m ? 1 : edge_const_int(t, k - (n - m));
}

edge_status_t edge_prepare_broadcast_args(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *a, *b, *y;
    int64_t n, k;
    int32_t dim;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    a = edge_in(ctx, node, 0);
    b = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!a || !b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "two shapes are required");
    if (a->type != EDGE_INT32 && a->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "shapes must be INT32 or INT64");
    if (b->type != a->type || y->type != a->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "shapes and output must share one type");
    if (a->rank != 1 || b->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "shapes must be 1-D");
    n = a->dims[0] > b->dims[0] ? a->dims[0] : b->dims[0];
    if (a->is_const && b->is_const)
        for (k = 0; k < n; k++) {
            const int64_t x0 = ba_dim(a, n, k), x1 = ba_dim(b, n, k);
            if (x0 != x1 && x0 != 1 && x1 != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "shapes do not broadcast");
        }
    dim = (int32_t)n;
    return edge_set_output_shape(ctx, node, 0, &dim, 1);
}

void edge_eval_broadcast_args(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *a = edge_in(ctx, node, 0), *b = edge_in(ctx, node, 1);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(y);
    int64_t k;
    for (k = 0; k < n; k++) {
        const int64_t x0 = ba_dim(a, n, k), x1 = ba_dim(b, n, k), v = x0 == 1 ? x1 : x0;
        if (y->type == EDGE_INT64) memcpy((uint8_t *)y->data + 8 * k, &v, 8);
        else ((int32_t *)y->data)[k] = (int32_t)v;
    }
}
