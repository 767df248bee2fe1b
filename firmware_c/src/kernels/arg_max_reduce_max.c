/* ARG_MAX and REDUCE_MAX, as edge_sdk/runtime/kernels/reduce.py.
 *  - ARG_MAX: over one constant axis (INT32 / INT64, one value), output INT32 / INT64; the first maximum wins
 *    (a plain '>' as TFLM: a NaN never replaces the running maximum, a leading NaN's index 0 stands). Inputs
 *    FLOAT32, INT8, UINT8, INT16, INT32, BOOL.
 *  - REDUCE_MAX: over constant axes (duplicates and negatives allowed; keep_dims from ReducerOptions), FLOAT32
 *    (a NaN propagates, as numpy's max), INT8 / INT16 (quantized input and output equal), INT32; an empty input
 *    gives the type's lowest value. One pass over the input, each element folded into its output.
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(ARG_MAX, arg_max, 3, "FLOAT32 INT8 UINT8 INT16 INT32 BOOL", "INT32/INT64 output and axis")
EDGE_KERNEL(REDUCE_MAX, reduce_max, 3, "FLOAT32 INT8 INT16 INT32", "")


typedef struct {
    int64_t outer, n, inner;
} argmax_data_t;

edge_status_t edge_prepare_arg_max(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *a, *y;
    argmax_data_t *d;
    int64_t axis;
    int32_t k, r = 0, shape[EDGE_INDEX_MAX_RANK];
    int t;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    a = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !a) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and axis are required");
    t = x->type;
    if (t != EDGE_FLOAT32 && t != EDGE_INT8 && t != EDGE_UINT8 && t != EDGE_INT16 && t != EDGE_INT32 && t != EDGE_BOOL)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, BOOL");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != EDGE_INT32 && y->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be INT32 or INT64");
    if (a->type != EDGE_INT32 && a->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "axis must be INT32 or INT64");
    if (!a->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "axis computed at run time");
    if (edge_tensor_elements(a) != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "axis must hold one value");
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    axis = edge_const_int(a, 0);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "axis out of range");
    if (x->dims[axis] == 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ARG_MAX over an empty dimension");
    d = (argmax_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->outer = d->inner = 1;
    for (k = 0; k < x->rank; k++) {
        if (k < axis) d->outer *= x->dims[k];
        if (k > axis) d->inner *= x->dims[k];
        if (k != axis) shape[r++] = x->dims[k];
    }
    d->n = x->dims[axis];
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, r);
}

#define ARGMAX_LOOP(T)                                                                       \
    do {                                                                                     \
        const T *v = (const T *)x->data;                                                     \
        for (o = 0; o < d->outer; o++)                                                       \
            for (i = 0; i < d->inner; i++) {                                                 \
                const T *p = v + o * d->n * d->inner + i;                                    \
                T best = p[0];                                                               \
                int64_t at = 0, j;                                                           \
                for (j = 1; j < d->n; j++)                                                   \
                    if (p[j * d->inner] > best) { best = p[j * d->inner]; at = j; }          \
                if (y->type == EDGE_INT32) ((int32_t *)y->data)[o * d->inner + i] = (int32_t)at; \
                else memcpy((uint8_t *)y->data + 8 * (o * d->inner + i), &at, 8);           \
            }                                                                                \
    } while (0)

void edge_eval_arg_max(const edge_node_t *node, edge_ctx_t *ctx) {
    const argmax_data_t *d = (const argmax_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    int64_t o, i;
    switch (x->type) {
    case EDGE_INT8: ARGMAX_LOOP(int8_t); break;
    case EDGE_UINT8: case EDGE_BOOL: ARGMAX_LOOP(uint8_t); break;
    case EDGE_INT16: ARGMAX_LOOP(int16_t); break;
    case EDGE_INT32: ARGMAX_LOOP(int32_t); break;
    default: if (EDGE_WITH_FLOAT32) ARGMAX_LOOP(float); break;
    }
}
#undef ARGMAX_LOOP

typedef struct {
    int32_t rank;
    int32_t dims[EDGE_INDEX_MAX_RANK];
    int64_t out_step[EDGE_INDEX_MAX_RANK]; /* output elements per unit of input index k (0: reduced) */
} rmax_data_t;

edge_status_t edge_prepare_reduce_max(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *a, *y;
    rmax_data_t *d;
    int32_t k, r = 0, shape[EDGE_INDEX_MAX_RANK], keep;
    uint32_t reduced = 0;
    int64_t step = 1, n;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    a = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !a) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and axis are required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_INT16 && x->type != EDGE_INT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, INT16, INT32");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if ((x->type == EDGE_INT8 || x->type == EDGE_INT16) && x->quantized &&
        (!y->quantized || x->scale != y->scale || x->zero_point != y->zero_point))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input and output quantization differ (TFLM requires them equal)");
    if (a->type != EDGE_INT32 && a->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "axis must be INT32 or INT64");
    if (!a->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "axis computed at run time");
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    n = edge_tensor_elements(a);
    for (k = 0; k < n; k++) {
        int64_t v = edge_const_int(a, k);
        if (v < 0) v += x->rank;
        if (v < 0 || v >= (x->rank > 1 ? x->rank : 1)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "axis out of range");
        if (x->rank) reduced |= 1u << v;
    }
    keep = node->options_type == EDGE_OPTS_ReducerOptions ? edge_opt_int(node, 0, 1, 0) != 0 : 0;
    d = (rmax_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->rank = x->rank;
    for (k = x->rank - 1; k >= 0; k--) {
        d->dims[k] = x->dims[k];
        d->out_step[k] = ((reduced >> k) & 1) ? 0 : step;
        if (!((reduced >> k) & 1)) step *= x->dims[k];
    }
    for (k = 0; k < x->rank; k++) {
        if (!((reduced >> k) & 1)) shape[r++] = x->dims[k];
        else if (keep) shape[r++] = 1;
    }
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, r);
}

#define RMAX_LOOP(T, lowest, better)                                                         \
    do {                                                                                     \
        const T *v = (const T *)x->data;                                                     \
        T *o = (T *)y->data;                                                                 \
        for (j = 0; j < m; j++) o[j] = lowest;                                               \
        if (count == 0) break;                                                               \
        for (e = 0; e < count; e++) {                                                        \
            if (better(v[e], o[pos])) o[pos] = v[e];                                         \
            for (k = d->rank - 1; k >= 0; k--) {                                             \
                pos += d->out_step[k];                                                       \
                if (++idx[k] < d->dims[k]) break;                                            \
                pos -= d->out_step[k] * d->dims[k];                                          \
                idx[k] = 0;                                                                  \
            }                                                                                \
        }                                                                                    \
    } while (0)

#define RMAX_GT(a, b) ((a) > (b))
#define RMAX_GT_NAN(a, b) ((a) > (b) || ((a) != (a) && (b) == (b)))

void edge_eval_reduce_max(const edge_node_t *node, edge_ctx_t *ctx) {
    const rmax_data_t *d = (const rmax_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int64_t count = edge_tensor_elements(x), m = edge_tensor_elements(y);
    int32_t idx[EDGE_INDEX_MAX_RANK] = {0}, k;
    int64_t e, j, pos = 0;
    switch (x->type) {
    case EDGE_INT8: RMAX_LOOP(int8_t, -128, RMAX_GT); break;
    case EDGE_INT16: if (EDGE_WITH_INT16) RMAX_LOOP(int16_t, -32768, RMAX_GT); break;
    case EDGE_INT32: RMAX_LOOP(int32_t, INT32_MIN, RMAX_GT); break;
    default: if (EDGE_WITH_FLOAT32) RMAX_LOOP(float, -INFINITY, RMAX_GT_NAN); break;
    }
}
