/* TOPK_V2 as LiteRT's kernel (TFLM has none; edge_sdk/runtime/kernels/topk.py): inputs (input, k), k a
 * constant INT32 / INT16 scalar with 0 <= k <= the last dimension; outputs (values of the input's type,
 * indices INT32 / INT16) of shape input[:-1] + [k]: every row's k largest values in descending order, equal
 * values in index order (LiteRT's TopContainer: a greater value first, then the lower index). Inputs FLOAT32,
 * INT8, UINT8, INT16, INT32, INT64. One pass per row keeps the best k so far sorted in the index output (an
 * insertion where a value beats the k-th: strictly greater, so an earlier equal value stays ahead); then the
 * values are gathered (INT16 indices rank in a scratch row of k int32).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(TOPK_V2, topk_v2, 3, "FLOAT32 INT8 UINT8 INT16 INT32 INT64", "last axis; k a constant INT32/INT16 scalar; INT32 or INT16 indices")

typedef struct {
    int64_t rows;
    int32_t n, k;
    int32_t scratch; /* INT16 indices: k int32 slots to rank a row in; -1 for INT32 indices */
} topk_data_t;

edge_status_t edge_prepare_topk_v2(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *kt, *v, *ix;
    topk_data_t *d;
    int32_t r, shape[EDGE_INDEX_MAX_RANK];
    int64_t k;
    int t;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TOPK_V2 expects 2 inputs and 2 outputs");
    x = edge_in(ctx, node, 0);
    kt = edge_in(ctx, node, 1);
    v = edge_out(ctx, node, 0);
    ix = edge_out(ctx, node, 1);
    if (!x || !kt) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TOPK_V2: input and k are required");
    t = x->type;
    if (t != EDGE_FLOAT32 && t != EDGE_INT8 && t != EDGE_UINT8 && t != EDGE_INT16 && t != EDGE_INT32 && t != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "TOPK_V2 runs FLOAT32, INT8, UINT8, INT16, INT32, INT64");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (v->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TOPK_V2: values output type differs from the input");
    if (ix->type != EDGE_INT32 && ix->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "TOPK_V2: indices output must be INT32 or INT16");
    if (kt->type != EDGE_INT32 && kt->type != EDGE_INT16) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "TOPK_V2: k must be INT32 or INT16");
    if (!kt->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TOPK_V2: k computed at run time");
    if (edge_tensor_elements(kt) != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TOPK_V2: k must hold one value");
    if (x->rank < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TOPK_V2: input must have at least one dimension");
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "TOPK_V2: rank above 8");
    k = edge_const_int(kt, 0);
    if (k < 0 || k > x->dims[x->rank - 1]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TOPK_V2: k not within 0..the last dimension");
    if (ix->type == EDGE_INT16 && x->dims[x->rank - 1] > 32768)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TOPK_V2: INT16 indices for a row above 32768");
    d = (topk_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->n = x->dims[x->rank - 1];
    d->k = (int32_t)k;
    d->rows = 1;
    for (r = 0; r < x->rank - 1; r++) {
        d->rows *= x->dims[r];
        shape[r] = x->dims[r];
    }
    shape[x->rank - 1] = d->k;
    d->scratch = -1;
    if (ix->type == EDGE_INT16 && d->k > 0 &&
        (s = edge_request_scratch(ctx, node, sizeof(int32_t) * (size_t)d->k, &d->scratch)) != EDGE_OK)
        return s;
    if ((s = edge_set_output_shape(ctx, node, 0, shape, x->rank)) != EDGE_OK) return s;
    return edge_set_output_shape(ctx, node, 1, shape, x->rank);
}

/* One row: best[0..k) the indices of the k largest so far, in output order. */
#define TOPK_ROW(T)                                                                                    \
    do {                                                                                               \
        const T *p = (const T *)x->data + row * n;                                                     \
        T *out = (T *)v->data + row * k;                                                               \
        int32_t m = 0, j, q;                                                                           \
        for (j = 0; j < n; j++) {                                                                      \
            const T val = p[j];                                                                        \
            if (m == k && !(val > p[best[k - 1]])) continue;                                           \
            q = m < k ? m++ : k - 1;                                                                   \
            while (q > 0 && val > p[best[q - 1]]) { best[q] = best[q - 1]; q--; }                      \
            best[q] = j;                                                                               \
        }                                                                                              \
        for (j = 0; j < k; j++) out[j] = p[best[j]];                                                   \
    } while (0)

void edge_eval_topk_v2(const edge_node_t *node, edge_ctx_t *ctx) {
    const topk_data_t *d = (const topk_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *v = edge_out(ctx, node, 0), *ix = edge_out(ctx, node, 1);
    const int32_t n = d->n, k = d->k;
    int64_t row;
    int32_t j0;
    if (k == 0) return;
    for (row = 0; row < d->rows; row++) {
        /* INT32 indices rank in place; INT16 ones in the scratch row, then narrowed */
        int32_t *best = d->scratch >= 0 ? (int32_t *)edge_scratch(ctx, node, d->scratch) : (int32_t *)ix->data + row * k;
        switch (x->type) {
        case EDGE_FLOAT32: if (EDGE_WITH_FLOAT32) TOPK_ROW(float); break;
        case EDGE_INT8: TOPK_ROW(int8_t); break;
        case EDGE_UINT8: TOPK_ROW(uint8_t); break;
        case EDGE_INT16: if (EDGE_WITH_INT16) TOPK_ROW(int16_t); break;
        case EDGE_INT32: TOPK_ROW(int32_t); break;
        default: TOPK_ROW(int64_t); break;
        }
        if (d->scratch >= 0)
            for (j0 = 0; j0 < k; j0++) ((int16_t *)ix->data)[row * k + j0] = (int16_t)best[j0];
    }
}
