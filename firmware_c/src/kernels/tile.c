/* TILE and BROADCAST_TO, as edge_sdk/runtime/kernels/math.py (numpy's tile / broadcast_to): a strided gather
 * (edge_index.h) whose broadcast dimensions step 0. TILE views the output [m0, d0, m1, d1, ...] (multiples m,
 * input dims d; input rank at most 4), BROADCAST_TO aligns the input's dims to the right of the target shape
 * (a constant INT32 / INT64 1-D input, rank at most 8). Types: FLOAT32, FLOAT16, INT8, UINT8, INT16, INT32, INT64,
 * BOOL, UINT32, UINT16.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(TILE, tile, 3, "FLOAT32 FLOAT16 INT8 UINT8 INT16 INT32 INT64 BOOL UINT32 UINT16", "")
EDGE_KERNEL(BROADCAST_TO, broadcast_to, 4, "FLOAT32 FLOAT16 INT8 UINT8 INT16 INT32 INT64 BOOL UINT32 UINT16", "")

typedef struct {
    int32_t rank;
    int32_t dims[EDGE_INDEX_MAX_RANK];
    int64_t step[EDGE_INDEX_MAX_RANK];
} tile_data_t;

static int any_type(int t) {
    return t == EDGE_FLOAT32 || t == EDGE_FLOAT16 || t == EDGE_INT8 || t == EDGE_UINT8 || t == EDGE_INT16 ||
           t == EDGE_INT32 || t == EDGE_INT64 || t == EDGE_BOOL || t == EDGE_UINT32 || t == EDGE_UINT16;
}

static edge_status_t operand_setup(edge_node_t *node, edge_ctx_t *ctx, const edge_tensor_t **x, const edge_tensor_t **op,
                                   tile_data_t **d) {
    const edge_tensor_t *y;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    *x = edge_in(ctx, node, 0);
    *op = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!*x || !*op) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "both inputs are required");
    if (!any_type((*x)->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "input type");
    if (y->type != (*x)->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if ((s = edge_type_built(ctx, (*x)->type)) != EDGE_OK) return s;
    if (!(*op)->is_const || ((*op)->type != EDGE_INT32 && (*op)->type != EDGE_INT64))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "the second input must be a constant INT32 / INT64");
    if ((*op)->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "the second input must be 1-D");
    *d = (tile_data_t *)edge_alloc_persistent(ctx, sizeof **d);
    if (!*d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = *d;
    return EDGE_OK;
}

edge_status_t edge_prepare_tile(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *m;
    tile_data_t *d;
    int32_t k, shape[EDGE_INDEX_MAX_RANK];
    int64_t stride = 1, total = 1;
    edge_status_t s;
    if ((s = operand_setup(node, ctx, &x, &m, &d)) != EDGE_OK) return s;
    if (m->dims[0] != x->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "multiples do not match the input rank");
    if (x->rank > EDGE_INDEX_MAX_RANK / 2) return EDGE_FAIL(ctx, EDGE_LIMIT, "TILE of rank above 4");
    for (k = x->rank - 1; k >= 0; k--) {
        int64_t r = edge_const_int(m, k);
        if (r < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "negative multiples");
        /* r first: a huge multiple times a dim (or the running total) would overflow int64 before the check */
        if (r > 0x7fffffff || r * x->dims[k] > ((int64_t)1 << 31)) return EDGE_FAIL(ctx, EDGE_LIMIT, "output too large");
        total *= r * x->dims[k]; /* both factors at most 2^31 */
        if (total > ((int64_t)1 << 31)) return EDGE_FAIL(ctx, EDGE_LIMIT, "output too large");
        shape[k] = (int32_t)(r * x->dims[k]);
        d->dims[2 * k] = (int32_t)r;
        d->step[2 * k] = 0;
        d->dims[2 * k + 1] = x->dims[k];
        d->step[2 * k + 1] = stride;
        stride *= x->dims[k];
    }
    d->rank = 2 * x->rank;
    if (x->rank == 0) {
        d->rank = 1;
        d->dims[0] = 1;
        d->step[0] = 1;
    }
    return edge_set_output_shape(ctx, node, 0, shape, x->rank);
}

edge_status_t edge_prepare_broadcast_to(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *t;
    tile_data_t *d;
    int32_t k, rank, shape[EDGE_INDEX_MAX_RANK];
    int64_t stride = 1, total = 1;
    edge_status_t s;
    if ((s = operand_setup(node, ctx, &x, &t, &d)) != EDGE_OK) return s;
    rank = t->dims[0];
    if (rank < x->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "target shape has lower rank than the input");
    if (rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "target shape has rank above 8");
    for (k = rank - 1; k >= 0; k--) {
        const int32_t ix = k - (rank - x->rank);
        const int64_t want = edge_const_int(t, k);
        const int32_t have = ix >= 0 ? x->dims[ix] : 1;
        if (want < 0 || want > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "target shape has a negative dimension");
        if (have != want && have != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input shape does not broadcast to the target");
        total *= want;
        if (total > ((int64_t)1 << 31)) return EDGE_FAIL(ctx, EDGE_LIMIT, "output too large");
        shape[k] = (int32_t)want;
        d->dims[k] = (int32_t)want;
        d->step[k] = have == 1 ? 0 : stride;
        if (ix >= 0) stride *= x->dims[ix];
    }
    d->rank = rank;
    if (rank == 0) {
        d->rank = 1;
        d->dims[0] = 1;
        d->step[0] = 1;
    }
    return edge_set_output_shape(ctx, node, 0, shape, rank);
}

static void tile_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const tile_data_t *d = (const tile_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const uint32_t item = edge_type_bytes(x->type);
    if (!y->bytes) return;
    edge_strided_gather(x->data, y->data, (int32_t)item, 0, d->rank, d->dims, d->step, (int64_t)(y->bytes / item));
}

void edge_eval_tile(const edge_node_t *node, edge_ctx_t *ctx) { tile_eval(node, ctx); }
void edge_eval_broadcast_to(const edge_node_t *node, edge_ctx_t *ctx) { tile_eval(node, ctx); }
