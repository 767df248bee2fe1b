/* TRANSPOSE: y = x.transpose(perm) with a constant perm (edge_sdk/runtime/kernels/shape.py prepare_transpose, TFLM
 * transpose.cc). Prepare works out, for every output dimension, the input stride it walks; eval runs an
 * odometer over the output in order, the innermost dimension in a tight strided loop.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(TRANSPOSE, transpose, 6, "FLOAT32 FLOAT16 INT8 UINT8 INT16 INT32 INT64 BOOL UINT32 UINT16", "")

typedef struct {
    int32_t rank;                          /* >= 1 (a scalar is one element) */
    int32_t elem;
    int32_t dims[EDGE_INDEX_MAX_RANK];     /* output dims */
    int64_t stride[EDGE_INDEX_MAX_RANK];   /* input elements per step along output dim k */
    int64_t count;                         /* output elements */
} transpose_data_t;

static int transpose_type_ok(int type) {
    switch (type) {
    case EDGE_FLOAT32: case EDGE_FLOAT16: case EDGE_INT8: case EDGE_UINT8: case EDGE_INT16: case EDGE_INT32:
    case EDGE_INT64: case EDGE_BOOL: case EDGE_UINT32: case EDGE_UINT16: return 1;
    default: return 0;
    }
}

edge_status_t edge_prepare_transpose(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *p, *y;
    transpose_data_t *d;
    int32_t k, rank, shape[EDGE_INDEX_MAX_RANK], perm[EDGE_INDEX_MAX_RANK], seen = 0;
    int64_t in_stride[EDGE_INDEX_MAX_RANK];

    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    p = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !p) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE: input and perm are required");
    if (!transpose_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "TRANSPOSE: input type");
    if (edge_type_built(ctx, x->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE: output type differs from input");
    if (p->type != EDGE_INT32 && p->type != EDGE_INT64 && p->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE: perm type (INT32, INT64)");
    if (!p->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE: perm computed at run time");
    rank = x->rank;
    if (rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE: rank above 8");
    if (edge_tensor_elements(p) != rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE: perm is not a permutation");
    for (k = 0; k < rank; k++) {
        int64_t v = edge_const_int(p, k);
        if (v < 0 || v >= rank || (seen >> v) & 1)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE: perm is not a permutation");
        seen |= 1 << v;
        perm[k] = (int32_t)v;
        shape[k] = x->dims[v];
    }
    {
        edge_status_t s = edge_set_output_shape(ctx, node, 0, shape, rank);
        if (s != EDGE_OK) return s;
    }
    d = (transpose_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->elem = (int32_t)edge_type_bytes(x->type);
    d->count = edge_tensor_elements(x);
    if (rank == 0) {
        d->rank = 1;
        d->dims[0] = 1;
        d->stride[0] = 1;
        return EDGE_OK;
    }
    in_stride[rank - 1] = 1;
    for (k = rank - 2; k >= 0; k--) in_stride[k] = in_stride[k + 1] * x->dims[k + 1];
    d->rank = rank;
    for (k = 0; k < rank; k++) {
        d->dims[k] = shape[k];
        d->stride[k] = in_stride[perm[k]];
    }
    return EDGE_OK;
}

void edge_eval_transpose(const edge_node_t *node, edge_ctx_t *ctx) {
    const transpose_data_t *d = (const transpose_data_t *)node->user_data;
    edge_strided_gather(edge_in(ctx, node, 0)->data, edge_out(ctx, node, 0)->data, d->elem, 0, d->rank, d->dims,
                        d->stride, d->count);
}
