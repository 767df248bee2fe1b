/* REVERSE_V2, as edge_sdk/runtime/kernels/movement.py prepare_reverse_v2: the input (FLOAT32, INT8, UINT8, INT16,
 * INT32, INT64, BOOL; quantized values copied) with the order along constant INT32 axes reversed (negatives count
 * from the end, duplicates once; LiteRT and TFLM take contiguous axes only, any set runs here). Prepare turns the
 * reversal into a strided view (a reversed axis starts at its last element with a negative step); eval copies it
 * with edge_strided_gather.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(REVERSE_V2, reverse_v2, 4, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "INT32 axes, constant")

typedef struct {
    int32_t rank, elem;
    int32_t dims[EDGE_INDEX_MAX_RANK];
    int64_t step[EDGE_INDEX_MAX_RANK];  /* input elements per output index step (negative: reversed) */
    int64_t base;                       /* input element of output element 0 */
} rev_data_t;

edge_status_t edge_prepare_reverse_v2(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *a, *y;
    rev_data_t *d;
    uint32_t reversed = 0;
    int64_t stride = 1, j;
    int32_t k;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    a = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !a) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and axis are required");
    if (!edge_index_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if ((x->quantized || y->quantized) &&
        (!x->quantized || !y->quantized || x->scale != y->scale || x->zero_point != y->zero_point))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input and output quantization differ (the op copies values)");
    if (a->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "axis must be INT32");
    if (!a->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "axis computed at run time");
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    for (j = 0; j < edge_tensor_elements(a); j++) {
        int32_t v = ((const int32_t *)a->data)[j];
        if (v < 0) v += x->rank;
        if (v < 0 || v >= x->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "axis out of range");
        reversed |= 1u << v;
    }
    d = (rev_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->rank = x->rank > 0 ? x->rank : 1;
    d->elem = (int32_t)edge_type_bytes(x->type);
    d->dims[0] = 1;
    d->step[0] = 1;
    for (k = x->rank - 1; k >= 0; k--) {
        d->dims[k] = x->dims[k];
        if ((reversed >> k) & 1) {
            d->step[k] = -stride;
            d->base += (int64_t)(x->dims[k] > 0 ? x->dims[k] - 1 : 0) * stride;
        } else {
            d->step[k] = stride;
        }
        stride *= x->dims[k];
    }
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_reverse_v2(const edge_node_t *node, edge_ctx_t *ctx) {
    const rev_data_t *d = (const rev_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_strided_gather(x->data, edge_out(ctx, node, 0)->data, d->elem, d->base, d->rank, d->dims, d->step,
                        edge_tensor_elements(x));
}
