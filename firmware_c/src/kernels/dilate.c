/* DILATE: the input's elements spread apart by a dilation factor per dimension, the gaps holding the padding
 * value, as edge_sdk/runtime/kernels/dilate.py (LiteRT's dilate.cc): output dim (d - 1) * k + 1,
 * out[i0 * k0, i1 * k1, ...] = in[i0, i1, ...]. Bytes are copied, any numeric type. The dilations (input 1, a
 * constant INT32 vector, one factor >= 1 per dimension, rank at most 8) fix the output shape at prepare; the
 * padding value (input 2, the input's type) is read at eval, its first element.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(DILATE, dilate, 1, "FLOAT32 FLOAT16 FLOAT64 INT8 UINT8 INT16 UINT16 INT32 UINT32 INT64 UINT64 BOOL", "constant INT32 dilations; rank <= 8")

typedef struct {
    int32_t rank;
    uint32_t width;                       /* bytes of one element */
    int32_t dims[EDGE_INDEX_MAX_RANK];    /* the input's */
    int64_t step[EDGE_INDEX_MAX_RANK];    /* output elements between neighbours of input dimension k */
} dilate_data_t;

static int dilate_type(int t) {
    return t == EDGE_FLOAT32 || t == EDGE_FLOAT16 || t == EDGE_FLOAT64 || t == EDGE_INT8 || t == EDGE_UINT8 ||
           t == EDGE_INT16 || t == EDGE_UINT16 || t == EDGE_INT32 || t == EDGE_UINT32 || t == EDGE_INT64 ||
           t == EDGE_UINT64 || t == EDGE_BOOL;
}

edge_status_t edge_prepare_dilate(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *dil, *pad;
    edge_tensor_t *out;
    dilate_data_t *d;
    int32_t shape[EDGE_INDEX_MAX_RANK], k;
    int64_t stride = 1, total = 1;
    edge_status_t s;
    if (node->n_inputs != 3 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 3 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    dil = edge_in(ctx, node, 1);
    pad = edge_in(ctx, node, 2);
    out = edge_out(ctx, node, 0);
    if (!x || !dil || !pad) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input, dilations and padding value are required");
    if (!dilate_type(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "input type");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (pad->type != x->type || out->type != x->type)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "padding value and output must have the input's type");
    if (edge_tensor_elements(pad) < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "the padding value is empty");
    if (x->rank < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "the input must have a dimension");
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    if (!dil->is_const || dil->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "dilations must be a constant INT32");
    if (dil->rank != 1 || dil->dims[0] != x->rank)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "dilations must be 1-D with one factor per input dimension");
    d = (dilate_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->rank = x->rank;
    d->width = edge_type_bytes(x->type);
    for (k = x->rank - 1; k >= 0; k--) {
        const int64_t factor = edge_const_int(dil, k), n = x->dims[k];
        int64_t dim;
        if (factor < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "dilations must be 1 or more");
        if (n < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "the input has an empty dimension");
        dim = (n - 1) * factor + 1;
        total *= dim;
        if (dim > 0x7fffffff || total > ((int64_t)1 << 31)) return EDGE_FAIL(ctx, EDGE_LIMIT, "output too large");
        shape[k] = (int32_t)dim;
        d->dims[k] = (int32_t)n;
        d->step[k] = stride * factor;
        stride *= dim;
    }
    return edge_set_output_shape(ctx, node, 0, shape, x->rank);
}

void edge_eval_dilate(const edge_node_t *node, edge_ctx_t *ctx) {
    const dilate_data_t *d = (const dilate_data_t *)node->user_data;
    const uint8_t *x = (const uint8_t *)edge_in(ctx, node, 0)->data;
    const uint8_t *pad = (const uint8_t *)edge_in(ctx, node, 2)->data;
    edge_tensor_t *out = edge_out(ctx, node, 0);
    uint8_t *y = (uint8_t *)out->data;
    const int64_t n_out = edge_tensor_elements(out);
    const size_t w = d->width;
    int32_t idx[EDGE_INDEX_MAX_RANK] = {0, 0, 0, 0, 0, 0, 0, 0}, k;
    int64_t i, pos = 0, n_in = 1;
    for (i = 0; i < n_out; i++) memcpy(y + (size_t)i * w, pad, w);
    for (k = 0; k < d->rank; k++) n_in *= d->dims[k];
    /* input elements in order; pos follows their output element (an odometer over the input's dims) */
    for (i = 0; i < n_in; i++) {
        memcpy(y + (size_t)pos * w, x + (size_t)i * w, w);
        for (k = d->rank - 1; k >= 0; k--) {
            pos += d->step[k];
            if (++idx[k] < d->dims[k]) break;
            pos -= d->step[k] * d->dims[k];
            idx[k] = 0;
        }
    }
}
