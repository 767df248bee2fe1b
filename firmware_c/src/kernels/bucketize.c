/* BUCKETIZE, as edge_sdk/runtime/kernels/lookup.py (LiteRT's bucketize.cc): each value's index among the sorted
 * float boundaries (BucketizeOptions 0, a [float] vector in the model), the count of boundaries <= the value
 * (std::upper_bound, an integer compared as float). FLOAT32 / INT32 / INT64 in, INT32 out.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(BUCKETIZE, bucketize, 1, "FLOAT32 INT32 INT64", "INT32 output; sorted boundaries")

typedef struct {
    const int32_t *boundaries; /* float bits, in the model */
    int32_t n;
} bucketize_data_t;

edge_status_t edge_prepare_bucketize(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *y;
    bucketize_data_t *d;
    float prev = 0.0f, v;
    int32_t k;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT32 && x->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT32, INT64");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be INT32");
    d = (bucketize_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->boundaries = 0;
    d->n = 0;
    if (node->options_type == EDGE_OPTS_BucketizeOptions &&
        (s = edge_opt_int_vector(ctx, node, 0, &d->boundaries, &d->n)) != EDGE_OK)
        return s;
    for (k = 0; k < d->n; k++) {
        memcpy(&v, d->boundaries + k, sizeof v);
        if (k > 0 && !(v >= prev)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "boundaries must be sorted");
        prev = v;
    }
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_bucketize(const edge_node_t *node, edge_ctx_t *ctx) {
    const bucketize_data_t *d = (const bucketize_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    int32_t *y = (int32_t *)edge_out(ctx, node, 0)->data;
    const int64_t n = edge_tensor_elements(x);
    int64_t i;
    for (i = 0; i < n; i++) {
        float v, b;
        int32_t lo = 0, hi = d->n;
        if (x->type == EDGE_FLOAT32) v = ((const float *)x->data)[i];
        else if (x->type == EDGE_INT32) v = (float)((const int32_t *)x->data)[i];
        else v = (float)((const int64_t *)x->data)[i];
        while (lo < hi) { /* the first boundary > v */
            const int32_t mid = lo + (hi - lo) / 2;
            memcpy(&b, d->boundaries + mid, sizeof b);
            if (b <= v) lo = mid + 1;
            else hi = mid;
        }
        y[i] = lo;
    }
}
