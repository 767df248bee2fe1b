/* SEGMENT_SUM and UNSORTED_SEGMENT_SUM / _PROD / _MAX / _MIN, as edge_sdk/runtime/kernels/segment.py (LiteRT's
 * unsorted_segment.cc; TFLM has none): data [ids..., rest...] FLOAT32 / INT32, segment ids INT32 of the data's
 * leading shape, constant INT32 num_segments; output [num_segments, rest...]. Each segment starts at the fold's
 * initial value (0, 1, the type's lowest, its highest: FLT_MAX / -FLT_MAX for float32) and folds the rows of its ids
 * in input order; negative ids and ids from num_segments on are skipped; MAX / MIN never take a NaN. INT32 sums and
 * products wrap.
 * SEGMENT_SUM (LiteRT's segment_sum.cc): the same sum with ids [n] sorted in steps of 0 or 1 from 0, output
 * [ids[-1] + 1, rest...]: its size comes from the ids' values, so the ids must be constant (refused otherwise).
 */
#include <float.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(SEGMENT_SUM, segment_sum, 1, "FLOAT32 INT32", "constant sorted INT32 ids (output size from their values)")
EDGE_KERNEL(UNSORTED_SEGMENT_SUM, unsorted_segment_sum, 1, "FLOAT32 INT32", "INT32 ids; constant num_segments")
EDGE_KERNEL(UNSORTED_SEGMENT_PROD, unsorted_segment_prod, 1, "FLOAT32 INT32", "INT32 ids; constant num_segments")
EDGE_KERNEL(UNSORTED_SEGMENT_MAX, unsorted_segment_max, 1, "FLOAT32 INT32", "INT32 ids; constant num_segments")
EDGE_KERNEL(UNSORTED_SEGMENT_MIN, unsorted_segment_min, 1, "FLOAT32 INT32", "INT32 ids; constant num_segments")

typedef struct {
    int64_t n_ids, row;
    int32_t num;
} useg_data_t;

/* num_segments < 0: SEGMENT_SUM, the count from the constant sorted ids (input 1) */
static edge_status_t useg_prepare(edge_node_t *node, edge_ctx_t *ctx, int sorted) {
    const edge_tensor_t *x, *ids, *n, *y;
    useg_data_t *d;
    int32_t k, r = 0, shape[EDGE_INDEX_MAX_RANK];
    edge_status_t s;
    if (node->n_inputs != (sorted ? 2 : 3) || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input or output count");
    x = edge_in(ctx, node, 0);
    ids = edge_in(ctx, node, 1);
    n = sorted ? ids : edge_in(ctx, node, 2);
    y = edge_out(ctx, node, 0);
    if (!x || !ids || !n) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "data, segment_ids (and num_segments) are required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT32");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from the data");
    if (ids->type != EDGE_INT32 || n->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "segment_ids and num_segments must be INT32");
    if (sorted && !ids->is_const)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input 1 segment_ids is computed at run time from data (the output size depends on their values); only a constant or a value known at prepare");
    if (sorted && (ids->rank != 1 || x->rank < 1)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "segment_ids must be 1-D");
    if (!sorted && (!n->is_const || edge_tensor_elements(n) != 1)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "num_segments must be one constant value");
    if (ids->rank > x->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "segment_ids must be the leading shape of the data");
    for (k = 0; k < ids->rank; k++)
        if (ids->dims[k] != x->dims[k]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "segment_ids must be the leading shape of the data");
    if (x->rank - ids->rank + 1 > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    d = (useg_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->n_ids = edge_tensor_elements(ids);
    if (sorted) {
        const int32_t *v = (const int32_t *)ids->data;
        int64_t i;
        for (i = 0; i < d->n_ids; i++)
            if ((i == 0 && v[0] < 0) || (i > 0 && v[i] - v[i - 1] != 0 && v[i] - v[i - 1] != 1))
                return EDGE_FAIL(ctx, EDGE_BAD_NODE, "segment_ids must be sorted, from 0 on, in steps of 0 or 1");
        d->num = d->n_ids ? v[d->n_ids - 1] + 1 : 0;
    } else {
        d->num = ((const int32_t *)n->data)[0];
    }
    if (d->num < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "num_segments is negative");
    d->row = 1;
    shape[r++] = d->num;
    for (k = ids->rank; k < x->rank; k++) {
        d->row *= x->dims[k];
        shape[r++] = x->dims[k];
    }
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, r);
}

edge_status_t edge_prepare_segment_sum(edge_node_t *node, edge_ctx_t *ctx) { return useg_prepare(node, ctx, 1); }
edge_status_t edge_prepare_unsorted_segment_sum(edge_node_t *node, edge_ctx_t *ctx) { return useg_prepare(node, ctx, 0); }
edge_status_t edge_prepare_unsorted_segment_prod(edge_node_t *node, edge_ctx_t *ctx) { return useg_prepare(node, ctx, 0); }
edge_status_t edge_prepare_unsorted_segment_max(edge_node_t *node, edge_ctx_t *ctx) { return useg_prepare(node, ctx, 0); }
edge_status_t edge_prepare_unsorted_segment_min(edge_node_t *node, edge_ctx_t *ctx) { return useg_prepare(node, ctx, 0); }

#define USEG_LOOP(T, init, STEP)                                                             \
    do {                                                                                     \
        const T *v = (const T *)x->data;                                                     \
        T *o = (T *)y->data;                                                                 \
        for (j = 0; j < (int64_t)d->num * d->row; j++) o[j] = init;                          \
        for (i = 0; i < d->n_ids; i++) {                                                     \
            const int32_t sg = ids[i];                                                       \
            if (sg < 0 || sg >= d->num) continue;                                            \
            for (j = 0; j < d->row; j++) {                                                   \
                T *c = o + (int64_t)sg * d->row + j;                                         \
                const T in = v[i * d->row + j];                                              \
                *c = STEP(*c, in);                                                           \
            }                                                                                \
        }                                                                                    \
    } while (0)

#define USEG_ADD(c, in) ((c) + (in))
#define USEG_ADD_I(c, in) ((int32_t)((uint32_t)(c) + (uint32_t)(in)))
#define USEG_MUL(c, in) ((c) * (in))
#define USEG_MUL_I(c, in) ((int32_t)((uint32_t)(c) * (uint32_t)(in)))
#define USEG_MAX(c, in) ((c) < (in) ? (in) : (c))
#define USEG_MIN(c, in) ((in) < (c) ? (in) : (c))

#define USEG_EVAL(name, INIT_F, INIT_I, STEP_F, STEP_I)                                      \
    void edge_eval_##name(const edge_node_t *node, edge_ctx_t *ctx) {                         \
        const useg_data_t *d = (const useg_data_t *)node->user_data;                         \
        const edge_tensor_t *x = edge_in(ctx, node, 0);                                      \
        const int32_t *ids = (const int32_t *)edge_in(ctx, node, 1)->data;                   \
        edge_tensor_t *y = edge_out(ctx, node, 0);                                           \
        int64_t i, j;                                                                        \
        if (x->type == EDGE_INT32) USEG_LOOP(int32_t, INIT_I, STEP_I);                       \
        else if (EDGE_WITH_FLOAT32) USEG_LOOP(float, INIT_F, STEP_F);                        \
    }

USEG_EVAL(segment_sum, 0.0f, 0, USEG_ADD, USEG_ADD_I)
USEG_EVAL(unsorted_segment_sum, 0.0f, 0, USEG_ADD, USEG_ADD_I)
USEG_EVAL(unsorted_segment_prod, 1.0f, 1, USEG_MUL, USEG_MUL_I)
USEG_EVAL(unsorted_segment_max, -FLT_MAX, INT32_MIN, USEG_MAX, USEG_MAX)
USEG_EVAL(unsorted_segment_min, FLT_MAX, INT32_MAX, USEG_MIN, USEG_MIN)
