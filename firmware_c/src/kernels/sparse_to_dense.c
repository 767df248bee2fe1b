/* SPARSE_TO_DENSE, as edge_sdk/runtime/kernels/movement.py prepare_sparse_to_dense (LiteRT's sparse_to_dense.cc;
 * TFLM has none): indices INT32 / INT64 ([N, K], [N] for a 1-D output, or one scalar index), a constant output_shape
 * of the indices' type (it sets the output size), values [N] or one value and a one-value default_value (FLOAT32,
 * INT8, UINT8, INT32, INT64). The output holds the default, then each value is written at its index in input order
 * (a repeated index keeps the last). An index outside the shape stops the invoke with EDGE_BAD_INPUT naming the node,
 * the index's element and its value, before anything is written there (LiteRT fails the invoke too).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(SPARSE_TO_DENSE, sparse_to_dense, 3, "INT32 INT64", "constant output_shape; values FLOAT32/INT8/UINT8/INT32/INT64")

typedef struct {
    int32_t k, elem, idx_type, one_value;
    int32_t dims[EDGE_INDEX_MAX_RANK];
    int64_t n;
} s2d_data_t;

edge_status_t edge_prepare_sparse_to_dense(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *idx, *shp, *vals, *dflt, *y;
    s2d_data_t *d;
    int32_t k, rank;
    edge_status_t s;
    if (node->n_inputs != 4 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 4 inputs and 1 output");
    idx = edge_in(ctx, node, 0);
    shp = edge_in(ctx, node, 1);
    vals = edge_in(ctx, node, 2);
    dflt = edge_in(ctx, node, 3);
    y = edge_out(ctx, node, 0);
    if (!idx || !shp || !vals || !dflt) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "indices, output_shape, values and default_value are required");
    if (idx->type != EDGE_INT32 && idx->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "indices must be INT32 or INT64");
    if (shp->type != idx->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output_shape must have the indices' type");
    if (vals->type != EDGE_FLOAT32 && vals->type != EDGE_INT8 && vals->type != EDGE_UINT8 && vals->type != EDGE_INT32 && vals->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "values type (FLOAT32, INT8, UINT8, INT32, INT64)");
    if ((s = edge_type_built(ctx, vals->type)) != EDGE_OK) return s;
    if (dflt->type != vals->type || y->type != vals->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "default_value and output must have the values' type");
    if (!shp->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "output_shape computed at run time (it sets the output size)");
    rank = (int32_t)edge_tensor_elements(shp);
    if (rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    if (idx->rank > 2 || edge_tensor_elements(dflt) != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "indices 0-D to 2-D, one default_value");
    d = (s2d_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->k = idx->rank == 2 ? idx->dims[1] : 1;
    d->n = idx->rank >= 1 ? idx->dims[0] : 1;
    if (d->k != rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "indices do not fit output_shape");
    if (edge_tensor_elements(vals) != 1 && edge_tensor_elements(vals) != d->n) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "values must hold one value or one per index");
    d->one_value = edge_tensor_elements(vals) == 1 && d->n != 1;
    d->elem = (int32_t)edge_type_bytes(vals->type);
    d->idx_type = idx->type;
    for (k = 0; k < rank; k++) {
        const int64_t v = edge_const_int(shp, k);
        if (v < 0 || v > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_shape values out of range");
        d->dims[k] = (int32_t)v;
    }
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, d->dims, rank);
}

void edge_eval_sparse_to_dense(const edge_node_t *node, edge_ctx_t *ctx) {
    const s2d_data_t *d = (const s2d_data_t *)node->user_data;
    const edge_tensor_t *idx = edge_in(ctx, node, 0);
    const uint8_t *vals = (const uint8_t *)edge_in(ctx, node, 2)->data, *dflt = (const uint8_t *)edge_in(ctx, node, 3)->data;
    edge_tensor_t *y = edge_out(ctx, node, 0);
    uint8_t *o = (uint8_t *)y->data;
    const int64_t count = edge_tensor_elements(y);
    int64_t i, at;
    int32_t k;
    for (i = 0; i < count; i++) memcpy(o + i * d->elem, dflt, (size_t)d->elem);
    for (i = 0; i < d->n; i++) {
        at = 0;
        for (k = 0; k < d->k; k++) {
            const int64_t v = d->idx_type == EDGE_INT64 ? edge_const_int(idx, i * d->k + k) : ((const int32_t *)idx->data)[i * d->k + k];
            if (v < 0 || v >= d->dims[k]) {
                EDGE_EVAL_BAD_INPUT(ctx, node, 0, i * d->k + k, v, "SPARSE_TO_DENSE: an index is outside output_shape");
                return;
            }
            at = at * d->dims[k] + v;
        }
        memcpy(o + at * d->elem, vals + (d->one_value ? 0 : i) * d->elem, (size_t)d->elem);
    }
}
