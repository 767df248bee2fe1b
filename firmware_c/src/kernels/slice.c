/* SLICE, as edge_sdk/runtime/kernels/shape.py prepare_slice: constant begin and size (INT16 / INT32 / INT64,
 * one entry per input dimension; size -1 takes the rest), a strided gather of the box (edge_index.h):
 * FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(SLICE, slice, 8, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "")

typedef struct {
    int64_t base;
    int32_t rank;
    int32_t dims[EDGE_INDEX_MAX_RANK];
    int64_t step[EDGE_INDEX_MAX_RANK];
} slice_data_t;

edge_status_t edge_prepare_slice(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *begin, *size, *y;
    slice_data_t *d;
    int32_t k;
    int64_t stride = 1;
    edge_status_t s;
    if (node->n_inputs != 3 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 3 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    begin = edge_in(ctx, node, 1);
    size = edge_in(ctx, node, 2);
    y = edge_out(ctx, node, 0);
    if (!x || !begin || !size) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input, begin and size are required");
    if (!edge_index_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL");
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (!edge_const_ints_ok(begin) || !edge_const_ints_ok(size))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "begin and size must be constant INT16 / INT32 / INT64");
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    if (edge_tensor_elements(begin) != x->rank || edge_tensor_elements(size) != x->rank)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "begin and size need one entry per input dimension");
    d = (slice_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->rank = x->rank;
    for (k = x->rank - 1; k >= 0; k--) {
        int64_t b = edge_const_int(begin, k), n = edge_const_int(size, k);
        if (n == -1) n = x->dims[k] - b;
        if (b < 0 || n < 0 || b + n > x->dims[k]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "slice out of range");
        d->dims[k] = (int32_t)n;
        d->step[k] = stride;
        d->base += b * stride;
        stride *= x->dims[k];
    }
    node->user_data = d;
    if (x->rank == 0) {
        d->rank = 1;
        d->dims[0] = 1;
        d->step[0] = 1;
        return edge_set_output_shape(ctx, node, 0, x->dims, 0);
    }
    return edge_set_output_shape(ctx, node, 0, d->dims, x->rank);
}

void edge_eval_slice(const edge_node_t *node, edge_ctx_t *ctx) {
    const slice_data_t *d = (const slice_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const uint32_t item = edge_type_bytes(x->type);
    if (!y->bytes) return;
    edge_strided_gather(x->data, y->data, (int32_t)item, d->base, d->rank, d->dims, d->step, (int64_t)(y->bytes / item));
}
