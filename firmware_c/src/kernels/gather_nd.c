/* GATHER_ND, as edge_sdk/runtime/kernels/movement.py prepare_gather_nd: params [outer_0..outer_{K-1}, inner...]
 * (FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL; quantized values copied), indices INT16 / INT32 / INT64
 * [..., K]; output indices.shape[:-1] + inner, each slice a byte copy of the params row the index vector names.
 * Constant indices are range-checked in prepare; a run-time coordinate outside its dimension stops the invoke with
 * EDGE_BAD_INPUT naming the node, the coordinate's element and its value (LiteRT and TFLM fail there too).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(GATHER_ND, gather_nd, 6, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "INT16/INT32/INT64 indices")

typedef struct {
    int32_t k, idx_type;
    int32_t outer[EDGE_INDEX_MAX_RANK];
    int64_t slices;                      /* index vectors */
    uint32_t slice_bytes;
} gnd_data_t;

edge_status_t edge_prepare_gather_nd(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *idx, *y;
    gnd_data_t *d;
    int32_t k, r = 0, shape[EDGE_INDEX_MAX_RANK];
    int64_t inner = 1, j;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    idx = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !idx) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "params and indices are required");
    if (!edge_index_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from params");
    if ((x->quantized || y->quantized) &&
        (!x->quantized || !y->quantized || x->scale != y->scale || x->zero_point != y->zero_point))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "params and output quantization differ (the op copies values)");
    if (idx->type != EDGE_INT16 && idx->type != EDGE_INT32 && idx->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "indices must be INT16, INT32 or INT64");
    if (idx->rank < 1 || idx->dims[idx->rank - 1] < 1 || idx->dims[idx->rank - 1] > x->rank)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "indices must end in K with 1 <= K <= params rank");
    if (x->rank > EDGE_INDEX_MAX_RANK || idx->rank - 1 + x->rank - idx->dims[idx->rank - 1] > EDGE_INDEX_MAX_RANK)
        return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    d = (gnd_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->k = idx->dims[idx->rank - 1];
    d->idx_type = idx->type;
    for (k = 0; k < d->k; k++) d->outer[k] = x->dims[k];
    for (k = d->k; k < x->rank; k++) inner *= x->dims[k];
    d->slice_bytes = (uint32_t)(inner * edge_type_bytes(x->type));
    d->slices = d->k ? edge_tensor_elements(idx) / d->k : 0;
    if (idx->is_const)
        for (j = 0; j < d->slices * d->k; j++) {
            const int64_t v = edge_const_int(idx, j);
            if (v < 0 || v >= d->outer[j % d->k]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "GATHER_ND indices out of range");
        }
    for (k = 0; k < idx->rank - 1; k++) shape[r++] = idx->dims[k];
    for (k = d->k; k < x->rank; k++) shape[r++] = x->dims[k];
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, r);
}

void edge_eval_gather_nd(const edge_node_t *node, edge_ctx_t *ctx) {
    const gnd_data_t *d = (const gnd_data_t *)node->user_data;
    const edge_tensor_t *idx = edge_in(ctx, node, 1);
    const uint8_t *x = (const uint8_t *)edge_in(ctx, node, 0)->data;
    uint8_t *y = (uint8_t *)edge_out(ctx, node, 0)->data;
    int64_t i, row;
    int32_t k;
    for (i = 0; i < d->slices; i++, y += d->slice_bytes) {
        row = 0;
        for (k = 0; k < d->k; k++) {
            const int64_t at = i * d->k + k;
            int64_t v;
            if (d->idx_type == EDGE_INT64) memcpy(&v, (const uint8_t *)idx->data + 8 * at, 8);
            else if (d->idx_type == EDGE_INT32) v = ((const int32_t *)idx->data)[at];
            else v = ((const int16_t *)idx->data)[at];
            if (v < 0 || v >= d->outer[k]) {
                EDGE_EVAL_BAD_INPUT(ctx, node, 1, at, v, "GATHER_ND: an index is outside its params dimension");
                return;
            }
            row = row * d->outer[k] + v;
        }
        memcpy(y, x + row * d->slice_bytes, d->slice_bytes);
    }
}
