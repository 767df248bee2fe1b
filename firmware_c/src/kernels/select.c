/* SELECT and SELECT_V2 (one file, two registrations): output = condition ? x : y, element-wise.
 *
 * As edge_sdk/runtime/kernels/compare.py prepare_select / prepare_select_v2: a BOOL condition; x, y and the output
 * of one type (FLOAT32, INT8, INT16, INT32, INT64, BOOL) and, when quantized, one scale and zero point (values are
 * copied, never requantized). SELECT_V2 broadcasts all three numpy-style (up to rank 6; any rank when the three
 * shapes agree). SELECT (v1) takes x and y of one shape and a condition of that shape, or a 1-D condition over
 * the first dimension (one pick per row).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(SELECT, select, 4, "input 1: FLOAT32 INT8 INT16 INT32 INT64 BOOL", "BOOL condition; values and output share type and quantization")
EDGE_KERNEL(SELECT_V2, select_v2, 2, "input 1: FLOAT32 INT8 INT16 INT32 INT64 BOOL", "BOOL condition; values and output share type and quantization")

#define SELECT_MAX_RANK 6

typedef struct {
    int32_t rank;               /* 0: the three operands have the output's shape (one flat loop) */
    int32_t dims[SELECT_MAX_RANK];
    int32_t c_stride[SELECT_MAX_RANK], x_stride[SELECT_MAX_RANK], y_stride[SELECT_MAX_RANK]; /* 0: broadcast */
    int64_t count;
    int32_t size;               /* bytes per value */
} select_data_t;

static int select_type_ok(int32_t t) {
    return t == EDGE_FLOAT32 || t == EDGE_INT8 || t == EDGE_INT16 || t == EDGE_INT32 || t == EDGE_INT64 ||
           t == EDGE_BOOL;
}

static int same_quant(const edge_tensor_t *a, const edge_tensor_t *b) {
    return a->quantized == b->quantized && (!a->quantized || (a->scale == b->scale && a->zero_point == b->zero_point));
}

static int same_shape(const edge_tensor_t *a, const edge_tensor_t *b) {
    return a->rank == b->rank && (a->rank == 0 || memcmp(a->dims, b->dims, sizeof(int32_t) * (size_t)a->rank) == 0);
}

/* Element strides of t (rank <= rank, right-aligned) against the output dims: 0 where t is broadcast. */
static void select_strides(const edge_tensor_t *t, const int32_t *dims, int32_t rank, int32_t *stride) {
    int64_t acc = 1;
    int32_t k;
    for (k = rank - 1; k >= 0; k--) {
        const int32_t it = k - (rank - t->rank);
        const int32_t dt = it >= 0 ? t->dims[it] : 1;
        stride[k] = (dt == dims[k] && dt != 1) ? (int32_t)acc : 0;
        acc *= dt;
    }
}

static edge_status_t select_prepare(edge_node_t *node, edge_ctx_t *ctx, int32_t v2) {
    edge_tensor_t *c, *x, *y, *out;
    select_data_t *d;
    int32_t shape[8], rank, k;
    if (node->n_inputs != 3 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SELECT expects 3 inputs and 1 output");
    c = edge_in(ctx, node, 0);
    x = edge_in(ctx, node, 1);
    y = edge_in(ctx, node, 2);
    out = edge_out(ctx, node, 0);
    if (!c || !x || !y) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SELECT: all three inputs are required");
    if (c->type != EDGE_BOOL) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SELECT: the condition must be BOOL");
    if (!select_type_ok(x->type))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SELECT: C kernel runs FLOAT32, INT8, INT16, INT32, INT64, BOOL values");
    if (y->type != x->type || out->type != x->type)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SELECT: values and output have different types");
    if (edge_type_built(ctx, x->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (!same_quant(x, y) || !same_quant(x, out))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SELECT: the values and the output need one scale and zero point");
    d = (select_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->size = (int32_t)edge_type_bytes(x->type);
    if (same_shape(c, x) && same_shape(x, y)) {
        d->rank = 0;
        d->count = edge_tensor_elements(x);
        return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
    }
    if (!v2) {
        if (!same_shape(x, y)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SELECT: x and y need one shape");
        if (c->rank != 1 || x->rank < 1 || c->dims[0] != x->dims[0])
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SELECT: condition is neither the values' shape nor 1-D over dim 0");
        if (x->rank > SELECT_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SELECT: a 1-D condition over rank above 6");
        rank = x->rank;
        for (k = 0; k < rank; k++) shape[k] = x->dims[k];
    } else {
        rank = c->rank;
        if (x->rank > rank) rank = x->rank;
        if (y->rank > rank) rank = y->rank;
        if (rank > SELECT_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SELECT_V2: broadcasting beyond rank 6");
        for (k = 0; k < rank; k++) {
            const edge_tensor_t *ts[3];
            int32_t j, dk = 1;
            ts[0] = c; ts[1] = x; ts[2] = y;
            for (j = 0; j < 3; j++) {
                const int32_t it = k - (rank - ts[j]->rank);
                const int32_t dt = it >= 0 ? ts[j]->dims[it] : 1;
                if (dt == dk || dt == 1) continue;
                if (dk != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SELECT_V2: input shapes do not broadcast");
                dk = dt;
            }
            shape[k] = dk;
        }
    }
    d->rank = rank;
    d->count = 1;
    for (k = 0; k < rank; k++) {
        d->dims[k] = shape[k];
        if (shape[k] > 0 && d->count > ((int64_t)1 << 40) / shape[k])
            return EDGE_FAIL(ctx, EDGE_LIMIT, "SELECT: the broadcast output would hold more than 2^40 elements");
        d->count *= shape[k];
    }
    if (!v2) { /* the 1-D condition walks dim 0 only */
        for (k = 0; k < rank; k++) d->c_stride[k] = 0;
        d->c_stride[0] = 1;
    } else {
        select_strides(c, shape, rank, d->c_stride);
    }
    select_strides(x, shape, rank, d->x_stride);
    select_strides(y, shape, rank, d->y_stride);
    return edge_set_output_shape(ctx, node, 0, shape, rank);
}

static void select_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const select_data_t *d = (const select_data_t *)node->user_data;
    const uint8_t *c = (const uint8_t *)edge_in(ctx, node, 0)->data;
    const uint8_t *x = (const uint8_t *)edge_in(ctx, node, 1)->data;
    const uint8_t *y = (const uint8_t *)edge_in(ctx, node, 2)->data;
    uint8_t *o = (uint8_t *)edge_out(ctx, node, 0)->data;
    const size_t size = (size_t)d->size;
    int32_t idx[SELECT_MAX_RANK] = {0, 0, 0, 0, 0, 0}, k, last, n;
    int64_t oc = 0, ox = 0, oy = 0, i;
    if (d->count == 0) return;
    if (d->rank == 0) {
        for (i = 0; i < d->count; i++) memcpy(o + (size_t)i * size, (c[i] ? x : y) + (size_t)i * size, size);
        return;
    }
    last = d->rank - 1;
    n = d->dims[last];
    for (;;) {
        const int32_t sc = d->c_stride[last], sx = d->x_stride[last], sy = d->y_stride[last];
        int32_t j;
        for (j = 0; j < n; j++) {
            const uint8_t *src = c[oc + (int64_t)j * sc] ? x + (size_t)(ox + (int64_t)j * sx) * size
                                                        : y + (size_t)(oy + (int64_t)j * sy) * size;
            memcpy(o, src, size);
            o += size;
        }
        for (k = last - 1; k >= 0; k--) {
            idx[k]++;
            oc += d->c_stride[k];
            ox += d->x_stride[k];
            oy += d->y_stride[k];
            if (idx[k] < d->dims[k]) break;
            oc -= (int64_t)d->c_stride[k] * d->dims[k];
            ox -= (int64_t)d->x_stride[k] * d->dims[k];
            oy -= (int64_t)d->y_stride[k] * d->dims[k];
            idx[k] = 0;
        }
        if (k < 0) break;
    }
}

edge_status_t edge_prepare_select(edge_node_t *node, edge_ctx_t *ctx) { return select_prepare(node, ctx, 0); }
edge_status_t edge_prepare_select_v2(edge_node_t *node, edge_ctx_t *ctx) { return select_prepare(node, ctx, 1); }
void edge_eval_select(const edge_node_t *node, edge_ctx_t *ctx) { select_eval(node, ctx); }
void edge_eval_select_v2(const edge_node_t *node, edge_ctx_t *ctx) { select_eval(node, ctx); }
