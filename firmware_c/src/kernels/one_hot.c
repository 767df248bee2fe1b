/* ONE_HOT, as edge_sdk/runtime/kernels/movement.py prepare_one_hot (LiteRT's one_hot.cc; TFLM has none): indices
 * INT32 / INT64, a constant INT32 depth, scalar on_value and off_value of the output's type (FLOAT32, INT8, UINT8,
 * INT32, INT64, BOOL); OneHotOptions 0 axis (-1: last) places the depth dimension. Viewed as [prefix, depth,
 * suffix] with the indices [prefix, suffix]: out[p, d, s] = indices[p, s] == d ? on_value : off_value (a byte copy
 * of one element; an index outside [0, depth) gives off_value throughout).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(ONE_HOT, one_hot, 1, "INT32 INT64", "constant depth; output FLOAT32/INT8/UINT8/INT32/INT64/BOOL")

typedef struct {
    int64_t prefix, suffix;
    int32_t depth, elem, idx_type;
} one_hot_data_t;

edge_status_t edge_prepare_one_hot(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *idx, *dep, *on, *off, *y;
    one_hot_data_t *d;
    int32_t axis, k, r = 0, shape[EDGE_INDEX_MAX_RANK];
    if (node->n_inputs != 4 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 4 inputs and 1 output");
    idx = edge_in(ctx, node, 0);
    dep = edge_in(ctx, node, 1);
    on = edge_in(ctx, node, 2);
    off = edge_in(ctx, node, 3);
    y = edge_out(ctx, node, 0);
    if (!idx || !dep || !on || !off) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "indices, depth, on_value and off_value are required");
    if (idx->type != EDGE_INT32 && idx->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "indices must be INT32 or INT64");
    if (y->type != EDGE_FLOAT32 && y->type != EDGE_INT8 && y->type != EDGE_UINT8 && y->type != EDGE_INT32 &&
        y->type != EDGE_INT64 && y->type != EDGE_BOOL)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be FLOAT32, INT8, UINT8, INT32, INT64 or BOOL");
    if (on->type != y->type || off->type != y->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "on_value / off_value type differs from the output");
    if (edge_tensor_elements(on) != 1 || edge_tensor_elements(off) != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "on_value and off_value must hold one value");
    if (dep->type != EDGE_INT32 || edge_tensor_elements(dep) != 1) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "depth must be one INT32");
    if (!dep->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "depth computed at run time");
    if (idx->rank + 1 > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    d = (one_hot_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->depth = ((const int32_t *)dep->data)[0];
    if (d->depth < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "depth is negative");
    axis = node->options_type == EDGE_OPTS_OneHotOptions ? edge_opt_int(node, 0, 4, 0) : 0; /* schema default 0 */
    if (axis == -1) axis = idx->rank;
    if (axis < 0 || axis > idx->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "axis out of range");
    d->prefix = d->suffix = 1;
    for (k = 0; k < idx->rank; k++) {
        if (k == axis) shape[r++] = d->depth;
        shape[r++] = idx->dims[k];
        if (k < axis) d->prefix *= idx->dims[k];
        else d->suffix *= idx->dims[k];
    }
    if (axis == idx->rank) shape[r++] = d->depth;
    d->elem = (int32_t)edge_type_bytes(y->type);
    d->idx_type = idx->type;
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, r);
}

void edge_eval_one_hot(const edge_node_t *node, edge_ctx_t *ctx) {
    const one_hot_data_t *d = (const one_hot_data_t *)node->user_data;
    const edge_tensor_t *idx = edge_in(ctx, node, 0);
    const uint8_t *on = (const uint8_t *)edge_in(ctx, node, 2)->data, *off = (const uint8_t *)edge_in(ctx, node, 3)->data;
    uint8_t *y = (uint8_t *)edge_out(ctx, node, 0)->data;
    int64_t p, s, at;
    int32_t dd;
    for (p = 0; p < d->prefix; p++)
        for (dd = 0; dd < d->depth; dd++)
            for (s = 0; s < d->suffix; s++, y += d->elem) {
                int64_t v;
                at = p * d->suffix + s;
                if (d->idx_type == EDGE_INT64) memcpy(&v, (const uint8_t *)idx->data + 8 * at, 8);
                else v = ((const int32_t *)idx->data)[at];
                memcpy(y, v == dd ? on : off, (size_t)d->elem);
            }
}
