/* LOG_SOFTMAX over the last dimension, FLOAT32, as edge_sdk/runtime/kernels/activations.py prepare_log_softmax:
 * shifted = x - max, sum of exp(shifted) (exp in double rounded to float, summed in float), out = shifted -
 * (float)log(sum). The Python kernel sums pairwise (numpy): results agree within a few ulps.
 * INT8 (TFLM's fixed-point LogSoftmax) is not in the C runtime yet: prepare refuses it (UNSUPPORTED_TYPE).
 */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(LOG_SOFTMAX, log_softmax, 2)

edge_status_t edge_prepare_log_softmax(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *y;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32 (int8 LOG_SOFTMAX: Python interpreter)");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input");
    if (x->rank < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must have at least one dimension");
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_log_softmax(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int64_t depth = x->dims[x->rank - 1];
    const int64_t rows = depth ? edge_tensor_elements(x) / depth : 0;
    const float *in = (const float *)x->data;
    float *out = (float *)y->data;
    int64_t r, i;
    if (!EDGE_WITH_FLOAT32) return;
    for (r = 0; r < rows; r++) {
        const float *v = in + r * depth;
        float *o = out + r * depth;
        float mx = v[0], sum = 0.0f, ls;
        for (i = 1; i < depth; i++)
            if (v[i] > mx) mx = v[i];
        for (i = 0; i < depth; i++) sum += (float)exp((double)(v[i] - mx));
        ls = (float)log((double)sum);
        for (i = 0; i < depth; i++) o[i] = (v[i] - mx) - ls;
    }
}
