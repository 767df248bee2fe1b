/* MATRIX_DIAG and MATRIX_SET_DIAG, as edge_sdk/runtime/kernels/movement.py (LiteRT's matrix_diag.cc and
 * matrix_set_diag.cc; TFLM has neither): FLOAT32, INT8, UINT8, INT16, INT32, INT64 (quantized values copied; LiteRT
 * accepts BOOL but writes wrong values, not taken here).
 *  - MATRIX_DIAG: diagonal [..., N] to [..., N, N], the values on the main diagonal, zeros elsewhere.
 *  - MATRIX_SET_DIAG: input [..., M, N] copied with its main diagonal replaced by diagonal [..., min(M, N)].
 * Eval works in bytes of one element (a copy per diagonal cell).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(MATRIX_DIAG, matrix_diag, 1, "FLOAT32 INT8 UINT8 INT16 INT32 INT64", "")
EDGE_KERNEL(MATRIX_SET_DIAG, matrix_set_diag, 1, "FLOAT32 INT8 UINT8 INT16 INT32 INT64", "")

typedef struct {
    int64_t batch;                   /* matrices */
    int32_t m, n, k, elem;           /* rows, columns, diagonal length, element bytes */
} diag_data_t;

static edge_status_t diag_check(edge_ctx_t *ctx, const edge_tensor_t *x, const edge_tensor_t *y) {
    edge_status_t s;
    if (!edge_index_type_ok(x->type) || x->type == EDGE_BOOL)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, INT64");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if ((x->quantized || y->quantized) &&
        (!x->quantized || !y->quantized || x->scale != y->scale || x->zero_point != y->zero_point))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input and output quantization differ (the op copies values)");
    return EDGE_OK;
}

edge_status_t edge_prepare_matrix_diag(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *y;
    diag_data_t *d;
    int32_t k, shape[EDGE_INDEX_MAX_RANK];
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if ((s = diag_check(ctx, x, y)) != EDGE_OK) return s;
    if (x->rank < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "the diagonal must have rank 1 or more");
    if (x->rank + 1 > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    d = (diag_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->m = d->n = d->k = x->dims[x->rank - 1];
    d->batch = d->k ? edge_tensor_elements(x) / d->k : 0;
    d->elem = (int32_t)edge_type_bytes(x->type);
    for (k = 0; k < x->rank; k++) shape[k] = x->dims[k];
    shape[x->rank] = d->n;
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, x->rank + 1);
}

edge_status_t edge_prepare_matrix_set_diag(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *dg, *y;
    diag_data_t *d;
    int32_t k;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    dg = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !dg) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and diagonal are required");
    if ((s = diag_check(ctx, x, y)) != EDGE_OK) return s;
    if (dg->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "diagonal type differs from input");
    if (x->rank < 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must have rank 2 or more");
    d = (diag_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->m = x->dims[x->rank - 2];
    d->n = x->dims[x->rank - 1];
    d->k = d->m < d->n ? d->m : d->n;
    if (dg->rank != x->rank - 1 || dg->dims[dg->rank - 1] != d->k) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "diagonal shape must be [..., min(M, N)]");
    for (k = 0; k < x->rank - 2; k++)
        if (dg->dims[k] != x->dims[k]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "diagonal shape must be [..., min(M, N)]");
    d->batch = (d->m && d->n) ? edge_tensor_elements(x) / ((int64_t)d->m * d->n) : 0;
    d->elem = (int32_t)edge_type_bytes(x->type);
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

/* out = base (or zeros), then diag[b, i] written to out[b, i, i]. */
static void diag_write(const diag_data_t *d, const uint8_t *base, const uint8_t *diag, uint8_t *out) {
    const size_t matrix = (size_t)d->m * (size_t)d->n * (size_t)d->elem;
    int64_t b;
    int32_t i;
    for (b = 0; b < d->batch; b++, out += matrix, diag += (size_t)d->k * d->elem) {
        if (base) memcpy(out, base + b * matrix, matrix);
        else memset(out, 0, matrix);
        for (i = 0; i < d->k; i++)
            memcpy(out + ((size_t)i * d->n + i) * d->elem, diag + (size_t)i * d->elem, (size_t)d->elem);
    }
}

void edge_eval_matrix_diag(const edge_node_t *node, edge_ctx_t *ctx) {
    diag_write((const diag_data_t *)node->user_data, NULL, (const uint8_t *)edge_in(ctx, node, 0)->data,
               (uint8_t *)edge_out(ctx, node, 0)->data);
}

void edge_eval_matrix_set_diag(const edge_node_t *node, edge_ctx_t *ctx) {
    diag_write((const diag_data_t *)node->user_data, (const uint8_t *)edge_in(ctx, node, 0)->data,
               (const uint8_t *)edge_in(ctx, node, 1)->data, (uint8_t *)edge_out(ctx, node, 0)->data);
}
