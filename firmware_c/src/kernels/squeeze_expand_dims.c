/* SQUEEZE, EXPAND_DIMS and SHAPE, as edge_sdk/runtime/kernels/shape.py: the first two are the same bytes under
 * a new shape (squeeze_dims from SqueezeOptions, every size-1 dimension when empty; EXPAND_DIMS's axis from a
 * constant one-value INT32 / INT64 input, -rank-1..rank), SHAPE writes the input's dimensions as INT32 / INT64.
 * Types moved: FLOAT32, FLOAT16, INT8, UINT8, INT16, INT32, INT64, BOOL, UINT32, UINT16 (the Python list).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_index.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(SQUEEZE, squeeze, 2, "FLOAT32 FLOAT16 INT8 UINT8 INT16 INT32 INT64 BOOL UINT32 UINT16", "")
EDGE_KERNEL(EXPAND_DIMS, expand_dims, 2, "FLOAT32 FLOAT16 INT8 UINT8 INT16 INT32 INT64 BOOL UINT32 UINT16", "")
EDGE_KERNEL(SHAPE, shape, 2, "FLOAT32 FLOAT16 INT32 UINT8 INT64 BOOL INT16 COMPLEX64 INT8 FLOAT64 COMPLEX128 UINT64 UINT32 UINT16 INT4 INT2 UINT4", "INT32/INT64 output")

enum { SQ_MAX_RANK = 16 };

static int copy_type(int t) {
    return t == EDGE_FLOAT32 || t == EDGE_FLOAT16 || t == EDGE_INT8 || t == EDGE_UINT8 || t == EDGE_INT16 ||
           t == EDGE_INT32 || t == EDGE_INT64 || t == EDGE_BOOL || t == EDGE_UINT32 || t == EDGE_UINT16;
}

static edge_status_t copy_io(edge_node_t *node, edge_ctx_t *ctx, int32_t lo, int32_t hi) {
    const edge_tensor_t *x, *y;
    if (node->n_inputs < lo || node->n_inputs > hi || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "wrong input or output count");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input 0 is required");
    if (!copy_type(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "input type");
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input");
    if (x->rank >= SQ_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 15");
    return edge_type_built(ctx, x->type);
}

edge_status_t edge_prepare_squeeze(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x;
    const int32_t *dims = 0;
    int32_t n = 0, k, out = 0, shape[SQ_MAX_RANK];
    uint32_t drop = 0;
    edge_status_t s;
    if ((s = copy_io(node, ctx, 1, 1)) != EDGE_OK) return s;
    x = edge_in(ctx, node, 0);
    if (node->options_type == EDGE_OPTS_SqueezeOptions && (s = edge_opt_int_vector(ctx, node, 0, &dims, &n)) != EDGE_OK)
        return s;
    for (k = 0; k < n; k++) {
        int32_t d = dims[k] < 0 ? dims[k] + x->rank : dims[k];
        if (d < 0 || d >= x->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "squeeze dim out of range");
        if (x->dims[d] != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "cannot squeeze a dimension of size other than 1");
        drop |= 1u << d;
    }
    for (k = 0; k < x->rank; k++) {
        if (n == 0 && x->dims[k] == 1) drop |= 1u << k;
        if (!((drop >> k) & 1)) shape[out++] = x->dims[k];
    }
    return edge_set_output_shape(ctx, node, 0, shape, out);
}

edge_status_t edge_prepare_expand_dims(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *a;
    int32_t axis, k, shape[SQ_MAX_RANK];
    edge_status_t s;
    if ((s = copy_io(node, ctx, 2, 2)) != EDGE_OK) return s;
    x = edge_in(ctx, node, 0);
    a = edge_in(ctx, node, 1);
    if (!a) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "axis is required");
    if ((s = edge_const_axis(ctx, a, x->rank, 1, 1, &axis)) != EDGE_OK) return s;
    for (k = 0; k < axis; k++) shape[k] = x->dims[k];
    shape[axis] = 1;
    for (k = axis; k < x->rank; k++) shape[k + 1] = x->dims[k];
    return edge_set_output_shape(ctx, node, 0, shape, x->rank + 1);
}

static void copy_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    if (y->data != x->data && y->bytes) memmove(y->data, x->data, y->bytes);
}

void edge_eval_squeeze(const edge_node_t *node, edge_ctx_t *ctx) { copy_eval(node, ctx); }
void edge_eval_expand_dims(const edge_node_t *node, edge_ctx_t *ctx) { copy_eval(node, ctx); }

edge_status_t edge_prepare_shape(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *y;
    int32_t n;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (y->type != EDGE_INT32 && y->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be INT32 or INT64");
    n = x->rank;
    return edge_set_output_shape(ctx, node, 0, &n, 1);
}

void edge_eval_shape(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    int32_t k;
    for (k = 0; k < x->rank; k++) {
        if (y->type == EDGE_INT32) {
            ((int32_t *)y->data)[k] = x->dims[k];
        } else {
            int64_t v = x->dims[k];
            memcpy((uint8_t *)y->data + 8 * k, &v, 8);
        }
    }
}
