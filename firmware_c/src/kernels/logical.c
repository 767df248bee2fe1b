/* LOGICAL_AND, LOGICAL_OR (two BOOL inputs, numpy broadcasting up to rank 6) and LOGICAL_NOT (one BOOL input):
 * a BOOL output, one byte per element, 0 or 1 (any non-zero input byte counts as true).
 *
 * As edge_sdk/runtime/kernels/compare.py prepare_logical (its LOGICAL_OPS table).
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(LOGICAL_AND, logical_and, 1, "BOOL", "")
EDGE_KERNEL(LOGICAL_OR, logical_or, 1, "BOOL", "")
EDGE_KERNEL(LOGICAL_NOT, logical_not, 1, "BOOL", "")

typedef struct {
    ea_bcast_t bc;
    int32_t is_or;
} logical_data_t;

static edge_status_t logical_prepare(edge_node_t *node, edge_ctx_t *ctx, int32_t is_or) {
    edge_tensor_t *a, *b, *out;
    logical_data_t *d;
    int32_t shape[8], rank, r;
    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LOGICAL_AND/OR expects 2 inputs and 1 output");
    a = edge_in(ctx, node, 0);
    b = edge_in(ctx, node, 1);
    out = edge_out(ctx, node, 0);
    if (!a || !b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LOGICAL_AND/OR: both inputs are required");
    if (a->type != EDGE_BOOL || b->type != EDGE_BOOL || out->type != EDGE_BOOL)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "LOGICAL_AND/OR: inputs and output must be BOOL");
    d = (logical_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->is_or = is_or;
    r = ea_bcast_prepare(&d->bc, a, b, shape, &rank);
    if (r == -1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LOGICAL_AND/OR: input shapes do not broadcast");
    if (r == -2) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LOGICAL_AND/OR: broadcasting beyond rank 6");
    if (r == -3) return EDGE_FAIL(ctx, EDGE_LIMIT, "LOGICAL_AND/OR: the broadcast output would hold more than 2^40 elements");
    return edge_set_output_shape(ctx, node, 0, shape, rank);
}

static void logical_row(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const uint8_t *x1 = (const uint8_t *)a, *x2 = (const uint8_t *)b;
    uint8_t *o = (uint8_t *)y;
    int32_t i;
    if (((const logical_data_t *)op)->is_or)
        for (i = 0; i < n; i++) o[i] = (uint8_t)(x1[(int64_t)i * sa] != 0 || x2[(int64_t)i * sb] != 0);
    else
        for (i = 0; i < n; i++) o[i] = (uint8_t)(x1[(int64_t)i * sa] != 0 && x2[(int64_t)i * sb] != 0);
}

static void logical_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const logical_data_t *d = (const logical_data_t *)node->user_data;
    ea_bcast_run(&d->bc, d, edge_in(ctx, node, 0)->data, 1, edge_in(ctx, node, 1)->data, 1, edge_out(ctx, node, 0)->data,
                 1, logical_row);
}

edge_status_t edge_prepare_logical_and(edge_node_t *node, edge_ctx_t *ctx) { return logical_prepare(node, ctx, 0); }
edge_status_t edge_prepare_logical_or(edge_node_t *node, edge_ctx_t *ctx) { return logical_prepare(node, ctx, 1); }
void edge_eval_logical_and(const edge_node_t *node, edge_ctx_t *ctx) { logical_eval(node, ctx); }
void edge_eval_logical_or(const edge_node_t *node, edge_ctx_t *ctx) { logical_eval(node, ctx); }

edge_status_t edge_prepare_logical_not(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    if (node->n_inputs != 1 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LOGICAL_NOT expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LOGICAL_NOT: the input is required");
    if (x->type != EDGE_BOOL || out->type != EDGE_BOOL)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "LOGICAL_NOT: input and output must be BOOL");
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_logical_not(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const uint8_t *p = (const uint8_t *)x->data;
    uint8_t *o = (uint8_t *)out->data;
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    for (i = 0; i < n; i++) o[i] = (uint8_t)(p[i] == 0);
}
