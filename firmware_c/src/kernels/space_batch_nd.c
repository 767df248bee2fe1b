/* SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND, as edge_sdk/runtime/kernels/movement.py (LiteRT's and TFLM's
 * semantics): input [batch, spatial_1..spatial_M, rest...] with constant INT32 block_shape [M] and paddings (or
 * crops) [M, 2]. SPACE_TO_BATCH_ND: output [batch * prod(block), padded_k / block_k..., rest...]; output batch
 * ob = (block offset, row-major) * batch + b; its cell o_k reads input o_k * block_k + offset_k - pad_k, or the
 * fill (0, the output zero point when quantized) in the padding. BATCH_TO_SPACE_ND: output [batch / prod(block),
 * spatial_k * block_k - crops..., rest...]; its cell o_k + crop_k = i_k * block_k + offset_k reads input batch
 * (offset, row-major) * batch + b. Prepare resolves the geometry; eval copies rows of the trailing `rest`
 * elements (memcpy), one per spatial cell.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(SPACE_TO_BATCH_ND, space_to_batch_nd, 4, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "INT32 block_shape and paddings, constant")
EDGE_KERNEL(BATCH_TO_SPACE_ND, batch_to_space_nd, 4, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "INT32 block_shape and crops, constant")

#define SB_MAX_SPATIAL (EDGE_INDEX_MAX_RANK - 1)

typedef struct {
    int32_t to_batch;                    /* 1: SPACE_TO_BATCH_ND, 0: BATCH_TO_SPACE_ND */
    int32_t m, batch;                    /* spatial dimensions; the smaller batch (input's / output's) */
    int32_t block[SB_MAX_SPATIAL], edge[SB_MAX_SPATIAL]; /* block_shape; paddings / crops before */
    int32_t in_sp[SB_MAX_SPATIAL], out_sp[SB_MAX_SPATIAL];
    int32_t out_batch;
    uint32_t row_bytes, elem;            /* bytes of one cell's trailing dimensions; of one element */
    uint8_t fill[8];                     /* one padding element (SPACE_TO_BATCH_ND) */
} sb_data_t;

static edge_status_t sb_prepare(edge_node_t *node, edge_ctx_t *ctx, int to_batch) {
    const edge_tensor_t *x, *b, *e, *y;
    sb_data_t *d;
    int32_t k, shape[EDGE_INDEX_MAX_RANK];
    int64_t rest = 1, nb = 1;
    edge_status_t s;
    if (node->n_inputs != 3 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 3 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    b = edge_in(ctx, node, 1);
    e = edge_in(ctx, node, 2);
    y = edge_out(ctx, node, 0);
    if (!x || !b || !e) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input, block_shape and paddings / crops are required");
    if (!edge_index_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if ((x->quantized || y->quantized) &&
        (!x->quantized || !y->quantized || x->scale != y->scale || x->zero_point != y->zero_point))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input and output quantization differ (the op copies values)");
    if (b->type != EDGE_INT32 || e->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "block_shape and paddings / crops must be INT32");
    if (!b->is_const || !e->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "block_shape or paddings / crops computed at run time");
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    d = (sb_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->m = (int32_t)edge_tensor_elements(b);
    if (d->m < 1 || x->rank < d->m + 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input rank needs a batch and the block's spatial dimensions");
    if (edge_tensor_elements(e) != 2 * (int64_t)d->m) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "paddings / crops must be [M, 2]");
    d->to_batch = to_batch;
    d->elem = edge_type_bytes(x->type);
    for (k = d->m + 1; k < x->rank; k++) rest *= x->dims[k];
    d->row_bytes = (uint32_t)(rest * d->elem);
    for (k = 0; k < d->m; k++) {
        const int32_t blk = ((const int32_t *)b->data)[k];
        const int32_t before = ((const int32_t *)e->data)[2 * k], after = ((const int32_t *)e->data)[2 * k + 1];
        if (blk < 1 || before < 0 || after < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "block_shape must be >= 1 and paddings / crops >= 0");
        d->block[k] = blk;
        d->edge[k] = before;
        d->in_sp[k] = x->dims[k + 1];
        nb *= blk;
        if (to_batch) {
            const int64_t padded = (int64_t)x->dims[k + 1] + before + after;
            if (padded % blk) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "padded spatial size is not a multiple of block_shape");
            d->out_sp[k] = (int32_t)(padded / blk);
        } else {
            const int64_t cropped = (int64_t)x->dims[k + 1] * blk - before - after;
            if (cropped < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "crops exceed the spatial size");
            d->out_sp[k] = (int32_t)cropped;
        }
    }
    if (to_batch) {
        d->batch = x->dims[0];
        if ((int64_t)x->dims[0] * nb > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_LIMIT, "output batch above 2^31");
        d->out_batch = (int32_t)(x->dims[0] * nb);
    } else {
        if (nb > 0x7fffffff || x->dims[0] % (int32_t)nb) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "batch is not a multiple of the block count");
        d->batch = x->dims[0] / (int32_t)nb;
        d->out_batch = d->batch;
    }
    memset(d->fill, 0, sizeof d->fill);
    if (y->quantized) {
        const int32_t zp = y->zero_point;
        if (x->type == EDGE_INT16) { const int16_t v = (int16_t)zp; memcpy(d->fill, &v, 2); }
        else d->fill[0] = (uint8_t)zp; /* INT8 / UINT8: the zero point's byte */
    }
    shape[0] = d->out_batch;
    for (k = 0; k < d->m; k++) shape[k + 1] = d->out_sp[k];
    for (k = d->m + 1; k < x->rank; k++) shape[k] = x->dims[k];
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, x->rank);
}

edge_status_t edge_prepare_space_to_batch_nd(edge_node_t *node, edge_ctx_t *ctx) { return sb_prepare(node, ctx, 1); }
edge_status_t edge_prepare_batch_to_space_nd(edge_node_t *node, edge_ctx_t *ctx) { return sb_prepare(node, ctx, 0); }

static void sb_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const sb_data_t *d = (const sb_data_t *)node->user_data;
    const uint8_t *x = (const uint8_t *)edge_in(ctx, node, 0)->data;
    uint8_t *y = (uint8_t *)edge_out(ctx, node, 0)->data;
    int64_t cells = 1, c;
    int32_t ob, k, o[SB_MAX_SPATIAL], off[SB_MAX_SPATIAL]; /* 32-bit batch arithmetic: no 64-bit division */
    for (k = 0; k < d->m; k++) cells *= d->out_sp[k];
    for (ob = 0; ob < d->out_batch; ob++) {
        int32_t bo = d->to_batch ? ob / d->batch : 0;
        for (k = d->m - 1; k >= 0; k--) { /* SPACE_TO_BATCH_ND: this output batch's block offsets */
            off[k] = bo % d->block[k];
            bo /= d->block[k];
            o[k] = 0;
        }
        for (c = 0; c < cells; c++) {
            int64_t row = 0, src_batch = d->to_batch ? ob % d->batch : 0, block_index = 0;
            int inside = 1;
            for (k = 0; k < d->m; k++) {
                int32_t i;
                if (d->to_batch) {
                    i = o[k] * d->block[k] + off[k] - d->edge[k];
                    if (i < 0 || i >= d->in_sp[k]) inside = 0;
                } else {
                    const int32_t full = o[k] + d->edge[k];
                    i = full / d->block[k];
                    block_index = block_index * d->block[k] + full % d->block[k];
                }
                row = row * d->in_sp[k] + i;
            }
            if (!d->to_batch) src_batch = block_index * d->batch + ob;
            if (inside) {
                int64_t start = src_batch;
                for (k = 0; k < d->m; k++) start *= d->in_sp[k];
                memcpy(y, x + (start + row) * d->row_bytes, d->row_bytes);
            } else {
                uint32_t e;
                for (e = 0; e < d->row_bytes; e += d->elem) memcpy(y + e, d->fill, d->elem);
            }
            y += d->row_bytes;
            for (k = d->m - 1; k >= 0; k--) { /* next output cell, last spatial dimension fastest */
                if (++o[k] < d->out_sp[k]) break;
                o[k] = 0;
            }
        }
    }
}

void edge_eval_space_to_batch_nd(const edge_node_t *node, edge_ctx_t *ctx) { sb_eval(node, ctx); }
void edge_eval_batch_to_space_nd(const edge_node_t *node, edge_ctx_t *ctx) { sb_eval(node, ctx); }
