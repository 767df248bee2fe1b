/* EMBEDDING_LOOKUP, as edge_sdk/runtime/kernels/movement.py prepare_embedding_lookup (LiteRT's embedding_lookup.cc;
 * TFLM has FLOAT32 / INT8): ids INT32 [K], table [rows, ...] (FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL),
 * output [K, ...]. Output of the table's type: rows copied (quantization shared). FLOAT32 output of an INT8 / UINT8
 * table with zero point 0 (LiteRT's hybrid kernel): each byte read as int8 times the row's scale (per tensor or per
 * row), in float32. An id outside [0, rows) stops the invoke with EDGE_BAD_INPUT naming the node, the id's
 * element and its value (the peers fail the invoke too); constant ids are range-checked in prepare.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"
#include "../edge_int4.h"

EDGE_KERNEL(EMBEDDING_LOOKUP, embedding_lookup, 5, "INT32", "table FLOAT32/INT8/UINT8/INT16/INT32/INT64/BOOL; hybrid INT8/UINT8/INT4 to FLOAT32")

typedef struct {
    int64_t ids;
    int32_t rows, hybrid, n_scales;
    uint32_t row_elems, row_bytes;
    const float *scales;             /* hybrid: the table's scales, in the model */
} emb_data_t;

edge_status_t edge_prepare_embedding_lookup(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *ids, *y;
    edge_tensor_t *t;
    emb_data_t *d;
    int32_t k, shape[EDGE_INDEX_MAX_RANK];
    int64_t j, row = 1;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    ids = edge_in(ctx, node, 0);
    t = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!ids || !t) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ids and table are required");
    if (ids->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "ids must be INT32");
    if (t->type == EDGE_INT4 && y && y->type == EDGE_FLOAT32) { /* a 4-bit table (hybrid only, as LiteRT) */
        edge_status_t s = edge_int4_to_int8(ctx, t);
        if (s != EDGE_OK) return s;
    }
    if (!edge_index_type_ok(t->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "table type (FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL)");
    if (ids->rank != 1 || t->rank < 1 || t->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ids must be 1-D and the table 1-D to 8-D");
    d = (emb_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->hybrid = y->type == EDGE_FLOAT32 && (t->type == EDGE_INT8 || t->type == EDGE_UINT8);
    if (d->hybrid) {
        if (!EDGE_WITH_FLOAT32) return edge_type_built(ctx, EDGE_FLOAT32);
        if (!t->quantized) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "a hybrid lookup needs a quantized table");
        for (k = 0; k < t->n_scales; k++)
            if (edge_tensor_zero_point(t, k) != 0) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "a hybrid lookup needs table zero points 0");
        if (t->n_scales != 1 && t->n_scales != t->dims[0]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "table scales: one, or one per row");
        d->scales = t->scales;
        d->n_scales = t->n_scales;
    } else {
        edge_status_t s;
        if (y->type != t->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from the table");
        if ((s = edge_type_built(ctx, t->type)) != EDGE_OK) return s;
        if ((t->quantized || y->quantized) &&
            (!t->quantized || !y->quantized || t->scale != y->scale || t->zero_point != y->zero_point))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "table and output quantization differ (the op copies values)");
    }
    d->rows = t->dims[0];
    for (k = 1; k < t->rank; k++) row *= t->dims[k];
    d->row_elems = (uint32_t)row;
    d->row_bytes = (uint32_t)(row * edge_type_bytes(t->type));
    d->ids = ids->dims[0];
    if (ids->is_const)
        for (j = 0; j < d->ids; j++) {
            const int32_t v = ((const int32_t *)ids->data)[j];
            if (v < 0 || v >= d->rows) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "EMBEDDING_LOOKUP ids out of range");
        }
    shape[0] = ids->dims[0];
    for (k = 1; k < t->rank; k++) shape[k] = t->dims[k];
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, t->rank);
}

void edge_eval_embedding_lookup(const edge_node_t *node, edge_ctx_t *ctx) {
    const emb_data_t *d = (const emb_data_t *)node->user_data;
    const int32_t *ids = (const int32_t *)edge_in(ctx, node, 0)->data;
    const uint8_t *t = (const uint8_t *)edge_in(ctx, node, 1)->data;
    uint8_t *y = (uint8_t *)edge_out(ctx, node, 0)->data;
    int64_t i;
    uint32_t j;
    for (i = 0; i < d->ids; i++) {
        const int32_t v = ids[i];
        if (v < 0 || v >= d->rows) {
            EDGE_EVAL_BAD_INPUT(ctx, node, 0, i, v, "EMBEDDING_LOOKUP: an id is outside [0, rows)");
            return;
        }
        if (d->hybrid) {
            float *o = (float *)y + i * d->row_elems;
            const int8_t *q = (const int8_t *)t + (int64_t)v * d->row_elems;
            const float scale = d->scales[d->n_scales == 1 ? 0 : v];
            for (j = 0; j < d->row_elems; j++) o[j] = (float)q[j] * scale;
        } else {
            memcpy(y + i * d->row_bytes, t + (int64_t)v * d->row_bytes, d->row_bytes);
        }
    }
}
