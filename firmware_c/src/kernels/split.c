/* SPLIT (axis, input; equal parts, one per output) and SPLIT_V (input, size_splits, axis; one -1 entry is
 * inferred), with constant axis and sizes (edge_sdk/runtime/kernels/shape.py prepare_split / prepare_split_v, TFLM
 * split.cc / split_v.cc). Eval copies, for each index of the dimensions before the axis, one contiguous
 * block into every output in turn.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(SPLIT, split, 5, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "")
EDGE_KERNEL(SPLIT_V, split_v, 3, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "")

typedef struct {
    int32_t data_input;     /* 1 for SPLIT, 0 for SPLIT_V */
    int32_t n_outputs;
    int64_t outer;
    int64_t in_block;       /* bytes of the input per outer index */
    uint32_t *block;        /* bytes of output i per outer index */
} split_data_t;

/* Shared tail: outputs' shapes from sizes[] along axis, and the copy plan. */
static edge_status_t split_finish(edge_node_t *node, edge_ctx_t *ctx, const edge_tensor_t *x, int32_t axis,
                                  const int64_t *sizes, int32_t data_input) {
    split_data_t *d;
    int32_t i, k, shape[EDGE_INDEX_MAX_RANK];
    int64_t inner = edge_type_bytes(x->type);
    for (i = 0; i < node->n_outputs; i++) {
        edge_status_t s;
        if (edge_out(ctx, node, i)->type != x->type)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT: an output's type differs from the input");
        for (k = 0; k < x->rank; k++) shape[k] = x->dims[k];
        shape[axis] = (int32_t)sizes[i];
        if ((s = edge_set_output_shape(ctx, node, i, shape, x->rank)) != EDGE_OK) return s;
    }
    d = (split_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->block = (uint32_t *)edge_alloc_persistent(ctx, sizeof(uint32_t) * (size_t)node->n_outputs);
    if (!d->block) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->data_input = data_input;
    d->n_outputs = node->n_outputs;
    d->outer = 1;
    for (k = 0; k < axis; k++) d->outer *= x->dims[k];
    for (k = axis + 1; k < x->rank; k++) inner *= x->dims[k];
    d->in_block = inner * x->dims[axis];
    if (!d->in_block) d->outer = 0; /* no bytes to copy: no loop over (up to 2^31) empty rows either */
    for (i = 0; i < node->n_outputs; i++) d->block[i] = (uint32_t)(inner * sizes[i]);
    return EDGE_OK;
}

static edge_status_t split_axis(edge_ctx_t *ctx, const edge_tensor_t *a, const edge_tensor_t *x, int32_t *axis) {
    if (!a) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT: axis is required");
    return edge_const_axis(ctx, a, x->rank, 0, 1, axis);
}

edge_status_t edge_prepare_split(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *a, *x;
    int64_t sizes[64];
    int32_t axis, i, n = node->n_outputs;
    edge_status_t s;
    if (node->n_inputs != 2 || n < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT expects 2 inputs and outputs");
    a = edge_in(ctx, node, 0);
    x = edge_in(ctx, node, 1);
    if (!a || !x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT: axis and input are required");
    if (!edge_index_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SPLIT: input type");
    if (edge_type_built(ctx, x->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SPLIT: rank above 8");
    if (n > 64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SPLIT: more than 64 outputs");
    if ((s = split_axis(ctx, a, x, &axis)) != EDGE_OK) return s;
    if (x->dims[axis] % n) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT: dimension not divisible by the outputs");
    for (i = 0; i < n; i++) sizes[i] = x->dims[axis] / n;
    return split_finish(node, ctx, x, axis, sizes, 1);
}

edge_status_t edge_prepare_split_v(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *sz, *a;
    int64_t sizes[64], total = 0;
    int32_t axis, i, n = node->n_outputs, infer = -1;
    edge_status_t s;
    if (node->n_inputs != 3 || n < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT_V expects 3 inputs and outputs");
    x = edge_in(ctx, node, 0);
    sz = edge_in(ctx, node, 1);
    a = edge_in(ctx, node, 2);
    if (!x || !sz || !a) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT_V: input, size_splits and axis are required");
    if (!edge_index_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SPLIT_V: input type");
    if (edge_type_built(ctx, x->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SPLIT_V: rank above 8");
    if (n > 64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SPLIT_V: more than 64 outputs");
    if ((s = split_axis(ctx, a, x, &axis)) != EDGE_OK) return s;
    if (!edge_const_ints_ok(sz)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SPLIT_V: size_splits must be a constant INT32/INT64");
    if (edge_tensor_elements(sz) != n) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT_V: one size per output");
    for (i = 0; i < n; i++) {
        sizes[i] = edge_const_int(sz, i);
        if (sizes[i] == -1) {
            if (infer >= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT_V: more than one -1 size");
            infer = i;
        } else if (sizes[i] < -1 || sizes[i] > x->dims[axis]) {
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT_V: size out of range");
        }
        total += sizes[i];
    }
    if (infer >= 0) {
        sizes[infer] = x->dims[axis] - (total + 1);
        total = x->dims[axis];
    }
    for (i = 0; i < n; i++)
        if (sizes[i] < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT_V: sizes do not add up");
    if (total != x->dims[axis]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPLIT_V: sizes do not add up");
    return split_finish(node, ctx, x, axis, sizes, 0);
}

void edge_eval_split(const edge_node_t *node, edge_ctx_t *ctx) {
    const split_data_t *d = (const split_data_t *)node->user_data;
    const uint8_t *src = (const uint8_t *)edge_in(ctx, node, d->data_input)->data;
    int64_t o;
    int32_t i;
    for (o = 0; o < d->outer; o++)
        for (i = 0; i < d->n_outputs; i++) {
            memcpy((uint8_t *)edge_out(ctx, node, i)->data + o * d->block[i], src, d->block[i]);
            src += d->block[i];
        }
}

void edge_eval_split_v(const edge_node_t *node, edge_ctx_t *ctx) { edge_eval_split(node, ctx); }
