/* GATHER: rows of params picked by positions along one axis (with optional leading batch dims).
 *
 * As edge_sdk/runtime/kernels/shape.py prepare_gather: params FLOAT32, INT8, UINT8, INT16, INT32, INT64 or BOOL (the
 * output has its type; quantized values are copied unchanged), positions INT32, INT64 or INT16; options axis
 * (negative counts from the end) and batch_dims (negative counts from the positions' rank). Output shape
 * params[:axis] + positions[batch_dims:] + params[axis + 1:]. Viewed as params [batch, outer, n, inner] and
 * positions [batch, coords], out[b, o, c, :] = params[b, o, positions[b, c], :] (a byte copy of inner
 * elements). Constant positions are range-checked in prepare; a run-time position outside [0, n) stops the
 * invoke with EDGE_BAD_INPUT naming the node, the position's element and its value (LiteRT and TFLM fail there).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(GATHER, gather, 8, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "INT16/INT32/INT64 positions")

enum { GATHER_MAX_RANK = 8 };

typedef struct {
    int64_t batch, outer, inner_bytes, coords;
    int32_t n, pos_type;
} gather_data_t;

static int64_t gather_pos(const void *p, int32_t type, int64_t k) {
    if (type == EDGE_INT64) {
        int64_t v;
        memcpy(&v, (const uint8_t *)p + 8 * k, 8);
        return v;
    }
    if (type == EDGE_INT16) return ((const int16_t *)p)[k];
    return ((const int32_t *)p)[k];
}

static int64_t prod(const int32_t *dims, int32_t from, int32_t to) {
    int64_t n = 1;
    int32_t k;
    for (k = from; k < to; k++) n *= dims[k];
    return n;
}

edge_status_t edge_prepare_gather(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *idx, *out;
    gather_data_t *d;
    int32_t axis = 0, batch_dims = 0, shape[GATHER_MAX_RANK], rank = 0, k;
    uint32_t item;

    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "GATHER expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    idx = edge_in(ctx, node, 1);
    out = edge_out(ctx, node, 0);
    if (!x || !idx) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "GATHER: params and positions are required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_UINT8 && x->type != EDGE_INT16 &&
        x->type != EDGE_INT32 && x->type != EDGE_INT64 && x->type != EDGE_BOOL)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "GATHER: C kernel takes FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL params");
    if (edge_type_built(ctx, x->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (idx->type != EDGE_INT32 && idx->type != EDGE_INT64 && idx->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "GATHER: positions must be INT32, INT64 or INT16");
    if (out->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "GATHER: output type differs from params");
    if (node->options_type == EDGE_OPTS_GatherOptions) {
        axis = edge_opt_int(node, 0, 4, 0);
        batch_dims = edge_opt_int(node, 1, 4, 0);
    }
    if (x->rank < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "GATHER: params must have rank 1 or more");
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "GATHER: axis out of range");
    if (batch_dims < 0) batch_dims += idx->rank;
    if (batch_dims < 0 || batch_dims > axis || batch_dims > idx->rank)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "GATHER: batch_dims is invalid for this axis");
    for (k = 0; k < batch_dims; k++)
        if (x->dims[k] != idx->dims[k]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "GATHER: batch dims of params and positions differ");
    if (x->rank - 1 + idx->rank - batch_dims > GATHER_MAX_RANK)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "GATHER: output rank above 8");
    for (k = 0; k < axis; k++) shape[rank++] = x->dims[k];
    for (k = batch_dims; k < idx->rank; k++) shape[rank++] = idx->dims[k];
    for (k = axis + 1; k < x->rank; k++) shape[rank++] = x->dims[k];
    d = (gather_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    item = edge_type_bytes(x->type);
    d->batch = prod(x->dims, 0, batch_dims);
    d->outer = prod(x->dims, batch_dims, axis);
    d->n = x->dims[axis];
    d->inner_bytes = prod(x->dims, axis + 1, x->rank) * item;
    d->coords = prod(idx->dims, batch_dims, idx->rank);
    d->pos_type = idx->type;
    if (idx->is_const) {
        int64_t total = edge_tensor_elements(idx), i;
        for (i = 0; i < total; i++) {
            int64_t v = gather_pos(idx->data, idx->type, i);
            if (v < 0 || v >= d->n) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "GATHER: a constant position is out of range");
        }
    }
    return edge_set_output_shape(ctx, node, 0, shape, rank);
}

void edge_eval_gather(const edge_node_t *node, edge_ctx_t *ctx) {
    const gather_data_t *d = (const gather_data_t *)node->user_data;
    const uint8_t *x = (const uint8_t *)edge_in(ctx, node, 0)->data;
    const void *pos = edge_in(ctx, node, 1)->data;
    uint8_t *y = (uint8_t *)edge_out(ctx, node, 0)->data;
    const int64_t row = d->inner_bytes, block = (int64_t)d->n * row;
    int64_t b, o, c;
    for (b = 0; b < d->batch; b++)
        for (o = 0; o < d->outer; o++) {
            const uint8_t *src = x + (b * d->outer + o) * block;
            for (c = 0; c < d->coords; c++, y += row) {
                const int64_t at = b * d->coords + c, v = gather_pos(pos, d->pos_type, at);
                if (v < 0 || v >= d->n) {
                    EDGE_EVAL_BAD_INPUT(ctx, node, 1, at, v, "GATHER: a position is outside [0, params.shape[axis])");
                    return;
                }
                memcpy(y, src + v * row, (size_t)row);
            }
        }
}
