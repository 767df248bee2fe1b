/* BUCKETIZE, as edge_sdk/runtime/kernels/bucketize.py (LiteRT's bucketize.cc): output INT32 of the input's shape,
 * each value's index = how many boundaries (BucketizeOptions slot 0, [float], sorted) are <= it (upper_bound).
 * Inputs FLOAT32, FLOAT64, INT32, INT64; an integer value is converted to float before the comparison, a FLOAT64
 * one compares with the boundary widened to double (C++'s conversions). NaN: past every boundary. */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(BUCKETIZE, bucketize, 1, "FLOAT32 FLOAT64 INT32 INT64", "INT32 output")

typedef struct {
    const int32_t *bits;  /* the boundaries' float32 bit patterns, in the model */
    int32_t count;
} bucketize_data_t;

static float boundary(const bucketize_data_t *d, int32_t i) {
    float f;
    memcpy(&f, &d->bits[i], sizeof f);
    return f;
}

edge_status_t edge_prepare_bucketize(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *y;
    bucketize_data_t *d;
    int32_t i;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_FLOAT64 && x->type != EDGE_INT32 && x->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, FLOAT64, INT32, INT64");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be INT32");
    d = (bucketize_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    if (node->options_type == EDGE_OPTS_BucketizeOptions &&
        (s = edge_opt_int_vector(ctx, node, 0, &d->bits, &d->count)) != EDGE_OK)
        return s;
    for (i = 1; i < d->count; i++)
        if (boundary(d, i) < boundary(d, i - 1)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "boundaries are not sorted");
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

/* upper_bound: the first boundary the value is below (BELOW(i): value < boundary i, in the compared type) */
#define BUCKET_LOOP(T, BELOW)                                              \
    do {                                                                   \
        const T *v = (const T *)x->data;                                   \
        for (k = 0; k < n; k++) {                                          \
            int32_t lo = 0, hi = d->count;                                 \
            while (lo < hi) {                                              \
                const int32_t mid = lo + (hi - lo) / 2;                    \
                if (BELOW(v[k], mid)) hi = mid; else lo = mid + 1;         \
            }                                                              \
            o[k] = lo;                                                     \
        }                                                                  \
    } while (0)
#define BELOW_FLOAT(value, i) ((float)(value) < boundary(d, (i)))
#define BELOW_DOUBLE(value, i) ((value) < (double)boundary(d, (i)))

void edge_eval_bucketize(const edge_node_t *node, edge_ctx_t *ctx) {
    const bucketize_data_t *d = (const bucketize_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    int32_t *o = (int32_t *)edge_out(ctx, node, 0)->data;
    const int64_t n = edge_tensor_elements(x);
    int64_t k;
    switch (x->type) {
    case EDGE_FLOAT64: BUCKET_LOOP(double, BELOW_DOUBLE); break;
    case EDGE_INT32: BUCKET_LOOP(int32_t, BELOW_FLOAT); break;
    case EDGE_INT64: BUCKET_LOOP(int64_t, BELOW_FLOAT); break;
    default:
        if (EDGE_WITH_FLOAT32) BUCKET_LOOP(float, BELOW_FLOAT);
        break;
    }
}
