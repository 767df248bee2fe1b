/* PACK and UNPACK along an axis, as edge_sdk/runtime/kernels/shape.py prepare_pack / prepare_unpack (TFLM's
 * kernels): PACK stacks its values_count inputs of one shape into a new dimension `axis`; UNPACK splits
 * dimension `axis` into `num` outputs. Byte copies of runs of (product of the dims after the axis) elements:
 * FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(PACK, pack, 5, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "")
EDGE_KERNEL(UNPACK, unpack, 6, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "")


typedef struct {
    int64_t outer, inner; /* elements before / after the axis (of one slice) */
    uint32_t item;
} pack_data_t;

static edge_status_t pack_data(edge_node_t *node, edge_ctx_t *ctx, const edge_tensor_t *t, int32_t axis, int32_t skip,
                               pack_data_t **out) {
    pack_data_t *d = (pack_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    int32_t k;
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->outer = d->inner = 1;
    for (k = 0; k < axis; k++) d->outer *= t->dims[k];
    for (k = axis + skip; k < t->rank; k++) d->inner *= t->dims[k];
    d->item = edge_type_bytes(t->type);
    node->user_data = d;
    *out = d;
    return EDGE_OK;
}

edge_status_t edge_prepare_pack(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x0, *y;
    int32_t n, axis, k, shape[EDGE_INDEX_MAX_RANK];
    pack_data_t *d;
    edge_status_t s;
    n = node->options_type == EDGE_OPTS_PackOptions ? edge_opt_int(node, 0, 4, 0) : 0;
    if (n == 0) n = node->n_inputs;
    if (n != node->n_inputs || n < 1 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "values_count differs from the input count, or not 1 output");
    x0 = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    for (k = 0; k < n; k++) {
        const edge_tensor_t *x = edge_in(ctx, node, k);
        int32_t j;
        if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "an input is missing");
        if (x->type != x0->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "inputs have different types");
        if (x->rank != x0->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "inputs have different shapes");
        for (j = 0; j < x->rank; j++)
            if (x->dims[j] != x0->dims[j]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "inputs have different shapes");
    }
    if (!edge_index_type_ok(x0->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL");
    if (y->type != x0->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input");
    if ((s = edge_type_built(ctx, x0->type)) != EDGE_OK) return s;
    if (x0->rank + 1 > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    axis = node->options_type == EDGE_OPTS_PackOptions ? edge_opt_int(node, 1, 4, 0) : 0;
    if (axis < 0) axis += x0->rank + 1;
    if (axis < 0 || axis > x0->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "axis out of range");
    for (k = 0; k < axis; k++) shape[k] = x0->dims[k];
    shape[axis] = n;
    for (k = axis; k < x0->rank; k++) shape[k + 1] = x0->dims[k];
    if ((s = pack_data(node, ctx, x0, axis, 0, &d)) != EDGE_OK) return s;
    return edge_set_output_shape(ctx, node, 0, shape, x0->rank + 1);
}

void edge_eval_pack(const edge_node_t *node, edge_ctx_t *ctx) {
    const pack_data_t *d = (const pack_data_t *)node->user_data;
    uint8_t *y = (uint8_t *)edge_out(ctx, node, 0)->data;
    const size_t run = (size_t)d->inner * d->item;
    const int32_t n = node->n_inputs;
    int64_t o;
    int32_t k;
    for (o = 0; o < d->outer; o++)
        for (k = 0; k < n; k++) {
            memcpy(y, (const uint8_t *)edge_in(ctx, node, k)->data + (size_t)o * run, run);
            y += run;
        }
}

edge_status_t edge_prepare_unpack(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x;
    int32_t num, axis, k, r = 0, shape[EDGE_INDEX_MAX_RANK];
    pack_data_t *d;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input");
    x = edge_in(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (!edge_index_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (x->rank < 1 || x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input rank must be 1..8");
    axis = node->options_type == EDGE_OPTS_UnpackOptions ? edge_opt_int(node, 1, 4, 0) : 0;
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "axis out of range");
    num = node->options_type == EDGE_OPTS_UnpackOptions ? edge_opt_int(node, 0, 4, 0) : 0;
    if (num == 0) num = x->dims[axis];
    if (num != x->dims[axis] || num != node->n_outputs) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "num differs from the axis size or the output count");
    for (k = 0; k < x->rank; k++)
        if (k != axis) shape[r++] = x->dims[k];
    for (k = 0; k < num; k++) {
        if (edge_out(ctx, node, k)->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input");
        if ((s = edge_set_output_shape(ctx, node, k, shape, r)) != EDGE_OK) return s;
    }
    return pack_data(node, ctx, x, axis, 1, &d);
}

void edge_eval_unpack(const edge_node_t *node, edge_ctx_t *ctx) {
    const pack_data_t *d = (const pack_data_t *)node->user_data;
    const uint8_t *x = (const uint8_t *)edge_in(ctx, node, 0)->data;
    const size_t run = (size_t)d->inner * d->item;
    const int32_t n = node->n_outputs;
    int64_t o;
    int32_t k;
    for (o = 0; o < d->outer; o++)
        for (k = 0; k < n; k++) {
            memcpy((uint8_t *)edge_out(ctx, node, k)->data + (size_t)o * run, x, run);
            x += run;
        }
}
