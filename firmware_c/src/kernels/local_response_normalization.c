/* LOCAL_RESPONSE_NORMALIZATION, as edge_sdk/runtime/kernels/normalization.py (LiteRT's reference kernel; float32
 * only, 4-D; TFLM has none). LocalResponseNormalizationOptions: 0 radius, 1 bias, 2 alpha, 3 beta. For channel c
 * of each row: the float32 sum of squares over channels [c - radius, c + radius) (the reference's window, upper
 * end exclusive) in order, then x * powf(bias + alpha * sum, -beta). powf is the C library's and not correctly
 * rounded: results agree with LiteRT's and the Python kernel's to about an ulp (tests hold them to 4).
 */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(LOCAL_RESPONSE_NORMALIZATION, local_response_normalization, 1, "FLOAT32", "4-D")

typedef struct {
    int64_t rows;
    int32_t depth, radius;
    float bias, alpha, neg_beta;
} lrn_data_t;

edge_status_t edge_prepare_local_response_normalization(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == EDGE_OPTS_LocalResponseNormalizationOptions;
    const edge_tensor_t *x, *y;
    lrn_data_t *d;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if (x->rank != 4) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input must be 4-D");
    d = (lrn_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->radius = has_opts ? edge_opt_int(node, 0, 4, 0) : 0;
    d->bias = has_opts ? edge_opt_float(node, 1, 0.0f) : 0.0f;
    d->alpha = has_opts ? edge_opt_float(node, 2, 0.0f) : 0.0f;
    d->neg_beta = -(has_opts ? edge_opt_float(node, 3, 0.0f) : 0.0f);
    d->depth = x->dims[3];
    d->rows = d->depth ? edge_tensor_elements(x) / d->depth : 0;
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_local_response_normalization(const edge_node_t *node, edge_ctx_t *ctx) {
    const lrn_data_t *d = (const lrn_data_t *)node->user_data;
    const float *x = (const float *)edge_in(ctx, node, 0)->data;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    int64_t r;
    int32_t c, k;
    if (!EDGE_WITH_FLOAT32) return;
    for (r = 0; r < d->rows; r++, x += d->depth, y += d->depth)
        for (c = 0; c < d->depth; c++) {
            const int32_t lo = c - d->radius > 0 ? c - d->radius : 0;
            const int32_t hi = c + d->radius < d->depth ? c + d->radius : d->depth;
            float acc = 0.0f;
            for (k = lo; k < hi; k++) acc += x[k] * x[k];
            y[c] = x[c] * powf(d->bias + d->alpha * acc, d->neg_beta);
        }
}
