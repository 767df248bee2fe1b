/* L2_NORMALIZATION along the last dimension, as edge_sdk/runtime/kernels/normalization.py (LiteRT's l2norm.cc
 * reference kernels, TFLM's l2norm.cc). Ranks 1 to 4, no fused activation (both peers refuse one).
 *  - FLOAT32: per row, the float32 sum of squares in order, sqrtf, raised to at least 1e-6, each value divided.
 *  - INT8: the int32 sum of (q - zp)^2, gemmlowp's inverse square root (multiplier, shift), each (q - zp)
 *    through MultiplyByQuantizedMultiplier with the shift raised by 7; output scale 1/128, zero point 0.
 *  - UINT8: the same inverse square root applied to 128 * (q - zp), plus 128; output scale 1/128, zero point 128.
 */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(L2_NORMALIZATION, l2_normalization, 2, "FLOAT32 INT8 UINT8", "ranks 1-4; output scale 1/128")

typedef struct {
    int64_t rows;
    int32_t depth, in_zp;
} l2n_data_t;

edge_status_t edge_prepare_l2_normalization(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *y;
    l2n_data_t *d;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_UINT8)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if (x->rank < 1 || x->rank > 4) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "rank outside 1 to 4");
    if (node->options_type == EDGE_OPTS_L2NormOptions && edge_opt_int(node, 0, 1, EDGE_ACT_NONE) != EDGE_ACT_NONE)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "a fused activation (LiteRT and TFLM take NONE only)");
    if (x->type != EDGE_FLOAT32) {
        if (!x->quantized || !y->quantized) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "needs quantized input and output");
        if (y->scale != 1.0f / 128.0f || y->zero_point != (x->type == EDGE_INT8 ? 0 : 128))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "output quantization must be scale 1/128, zero point 0 (INT8) or 128 (UINT8)");
    }
    d = (l2n_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->depth = x->dims[x->rank - 1];
    d->rows = d->depth ? edge_tensor_elements(x) / d->depth : 0;
    d->in_zp = x->type == EDGE_FLOAT32 ? 0 : x->zero_point;
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_l2_normalization(const edge_node_t *node, edge_ctx_t *ctx) {
    const l2n_data_t *d = (const l2n_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    int64_t r;
    int32_t c;
    if (EDGE_WITH_FLOAT32 && x->type == EDGE_FLOAT32) {
        for (r = 0; r < d->rows; r++) {
            const float *v = (const float *)x->data + r * d->depth;
            float *o = (float *)y->data + r * d->depth;
            float acc = 0.0f, norm;
            for (c = 0; c < d->depth; c++) acc += v[c] * v[c];
            norm = sqrtf(acc);
            if (norm < 1e-6f) norm = 1e-6f;
            for (c = 0; c < d->depth; c++) o[c] = v[c] / norm;
        }
        return;
    }
    for (r = 0; r < d->rows; r++) {
        const int64_t base = r * d->depth;
        uint32_t acc = 0; /* the reference's int32 sum, wrapped through unsigned */
        int32_t mult, shift;
        for (c = 0; c < d->depth; c++) {
            const int32_t q = (x->type == EDGE_INT8 ? ((const int8_t *)x->data)[base + c]
                                                    : ((const uint8_t *)x->data)[base + c]) - d->in_zp;
            acc += (uint32_t)(q * q);
        }
        ea_inv_sqrt_multiplier(edge_wrap32((int64_t)acc), &mult, &shift);
        for (c = 0; c < d->depth; c++) {
            if (x->type == EDGE_INT8) {
                const int32_t q = ((const int8_t *)x->data)[base + c] - d->in_zp;
                ((int8_t *)y->data)[base + c] = (int8_t)edge_clamp32(ea_mbqm(q, mult, shift + 7), -128, 127);
            } else {
                const int32_t q = ((const uint8_t *)x->data)[base + c] - d->in_zp;
                ((uint8_t *)y->data)[base + c] = (uint8_t)edge_clamp32(128 + ea_mbqm(128 * q, mult, shift), 0, 255);
            }
        }
    }
}
