/* SCATTER_ND, as edge_sdk/runtime/kernels/movement.py prepare_scatter_nd (LiteRT's scatter_nd.cc; TFLM has none):
 * indices INT32 [..., K] (LiteRT takes no other), updates [..., slice] (FLOAT32, INT8, UINT8, INT32, INT64, BOOL), a
 * constant INT32 shape (it sets the output's size). The output starts at zeros and each update slice is added
 * (BOOL: or-ed; integers wrap) at its index vector in input order; a coordinate outside the shape stops the invoke
 * with EDGE_BAD_INPUT naming the node, the coordinate's element and its value (LiteRT fails the invoke there too).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(SCATTER_ND, scatter_nd, 1, "INT32", "constant shape; updates FLOAT32/INT8/UINT8/INT32/INT64/BOOL")

typedef struct {
    int32_t k, upd_type;
    int32_t outer[EDGE_INDEX_MAX_RANK];
    int64_t slices, row;             /* index vectors; elements per slice */
} scatter_data_t;

edge_status_t edge_prepare_scatter_nd(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *idx, *upd, *shp, *y;
    scatter_data_t *d;
    int32_t k, rank, shape[EDGE_INDEX_MAX_RANK];
    edge_status_t s;
    if (node->n_inputs != 3 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 3 inputs and 1 output");
    idx = edge_in(ctx, node, 0);
    upd = edge_in(ctx, node, 1);
    shp = edge_in(ctx, node, 2);
    y = edge_out(ctx, node, 0);
    if (!idx || !upd || !shp) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "indices, updates and shape are required");
    if (idx->type != EDGE_INT32 || shp->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "indices and shape must be INT32");
    if (upd->type != EDGE_FLOAT32 && upd->type != EDGE_INT8 && upd->type != EDGE_UINT8 && upd->type != EDGE_INT32 &&
        upd->type != EDGE_INT64 && upd->type != EDGE_BOOL)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "updates type (FLOAT32, INT8, UINT8, INT32, INT64, BOOL)");
    if ((s = edge_type_built(ctx, upd->type)) != EDGE_OK) return s;
    if (y->type != upd->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from the updates");
    if (!shp->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "shape computed at run time (it sets the output size)");
    rank = (int32_t)edge_tensor_elements(shp);
    if (rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    if (idx->rank < 1 || idx->dims[idx->rank - 1] < 1 || idx->dims[idx->rank - 1] > rank)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "indices must end in K with 1 <= K <= the shape's rank");
    d = (scatter_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->k = idx->dims[idx->rank - 1];
    d->upd_type = upd->type;
    d->row = 1;
    for (k = 0; k < rank; k++) {
        const int64_t v = edge_const_int(shp, k);
        if (v < 0 || v > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "shape values out of range");
        shape[k] = (int32_t)v;
        if (k < d->k) d->outer[k] = shape[k];
        else d->row *= shape[k];
    }
    d->slices = edge_tensor_elements(idx) / d->k;
    if (upd->rank != idx->rank - 1 + rank - d->k) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "updates shape must be indices[:-1] + shape[K:]");
    for (k = 0; k < idx->rank - 1; k++)
        if (upd->dims[k] != idx->dims[k]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "updates shape must be indices[:-1] + shape[K:]");
    for (k = d->k; k < rank; k++)
        if (upd->dims[idx->rank - 1 + k - d->k] != shape[k]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "updates shape must be indices[:-1] + shape[K:]");
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, rank);
}

#define SCATTER_ADD(T, UT)                                                                   \
    do {                                                                                     \
        T *o = (T *)y->data + at;                                                            \
        const T *u = (const T *)upd->data + i * d->row;                                      \
        for (j = 0; j < d->row; j++) o[j] = (T)((UT)o[j] + (UT)u[j]);                        \
    } while (0)

void edge_eval_scatter_nd(const edge_node_t *node, edge_ctx_t *ctx) {
    const scatter_data_t *d = (const scatter_data_t *)node->user_data;
    const edge_tensor_t *idx = edge_in(ctx, node, 0), *upd = edge_in(ctx, node, 1);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    int64_t i, j;
    int32_t k;
    memset(y->data, 0, (size_t)edge_tensor_elements(y) * edge_type_bytes(y->type));
    for (i = 0; i < d->slices; i++) {
        int64_t at = 0;
        for (k = 0; k < d->k; k++) {
            const int64_t v = ((const int32_t *)idx->data)[i * d->k + k];
            if (v < 0 || v >= d->outer[k]) {
                EDGE_EVAL_BAD_INPUT(ctx, node, 0, i * d->k + k, v, "SCATTER_ND: an index is outside the shape");
                return;
            }
            at = at * d->outer[k] + v;
        }
        at *= d->row;
        switch (d->upd_type) {
        case EDGE_INT8: SCATTER_ADD(int8_t, uint8_t); break;
        case EDGE_UINT8: SCATTER_ADD(uint8_t, uint8_t); break;
        case EDGE_INT32: SCATTER_ADD(int32_t, uint32_t); break;
        case EDGE_INT64: SCATTER_ADD(int64_t, uint64_t); break;
        case EDGE_BOOL: {
            uint8_t *o = (uint8_t *)y->data + at;
            const uint8_t *u = (const uint8_t *)upd->data + i * d->row;
            for (j = 0; j < d->row; j++) o[j] = (uint8_t)(o[j] || u[j]);
            break;
        }
        default:
            if (EDGE_WITH_FLOAT32) {
                float *o = (float *)y->data + at;
                const float *u = (const float *)upd->data + i * d->row;
                for (j = 0; j < d->row; j++) o[j] += u[j];
            }
            break;
        }
    }
}
