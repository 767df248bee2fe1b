/* TANH: y = tanh(x).
 *
 * As edge_sdk/kernels/activations.py prepare_tanh (TFLM tanh.cc and the reference integer kernels):
 *  - int8: x - in_zp rescaled to Q4.27, gemmlowp tanh in fixed point, rounded to Q0.7;
 *    inputs at or beyond the saturation radius give -128 / 127. All 256 inputs are tabulated in prepare.
 *  - int16 (zero points 0, output scale 2^-15): the input scaled by a small integer multiplier, then linear
 *    interpolation in the 256-sample sigmoid table (TFLM's table method), per element in eval.
 *  - float32: tanh in double, rounded to float.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(TANH, tanh, 3)

typedef struct {
    int32_t type;
    int64_t multiplier16; /* int16 */
    int32_t left_shift16;
    int8_t lut[256];      /* int8 */
} tanh_data_t;

static int32_t tanh_int8(const void *params, int32_t v) {
    int saturated;
    const int32_t q4 = ea_int8_radius_input((const ea_radius_t *)params, v, &saturated);
    if (saturated) return saturated < 0 ? -128 : 127;
    return (int32_t)ea_clamp(edge_rdbpot(ea_tanh(q4, 4), 24), -128, 127);
}

static int32_t tanh_int16(const tanh_data_t *d, int32_t v) {
    const int32_t ls = d->left_shift16;
    const int64_t rnd = ls > 0 ? ((int64_t)1 << (ls - 1)) : 0;
    return ea_tanh16_lookup(((int64_t)v * d->multiplier16 + rnd) >> ls);
}

edge_status_t edge_prepare_tanh(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    tanh_data_t *d;
    edge_status_t s;

    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TANH expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TANH: input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "TANH: C kernel runs FLOAT32, INT8, INT16");
    s = edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
    if (s != EDGE_OK) return s;
    if (out->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "TANH: output type differs from input");
    d = (tanh_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->type = x->type;
    if (x->type == EDGE_FLOAT32) return EDGE_OK;
    if (!x->quantized || !out->quantized) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TANH: tensors need quantization parameters");
    if (!ea_good_scale(x) || !ea_good_scale(out)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TANH: scales must be positive and finite");
    if (x->type == EDGE_INT8) {
        ea_radius_t radius;
        ea_int8_radius_params(x->scale, x->zero_point, &radius);
        ea_lut8_build(d->lut, tanh_int8, &radius);
        return EDGE_OK;
    }
    if (x->zero_point || out->zero_point) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TANH: int16 needs zero points of 0");
    if (ea_int16_sigmoid_params(x->scale, out->scale, 1, &d->multiplier16, &d->left_shift16) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TANH: int16 output scale must be 2^-15");
    return EDGE_OK;
}

void edge_eval_tanh(const edge_node_t *node, edge_ctx_t *ctx) {
    const tanh_data_t *d = (const tanh_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    if (d->type == EDGE_INT8) {
        ea_lut8_apply(d->lut, x->data, out->data, n);
    } else if (d->type == EDGE_INT16) {
        const int16_t *xi = (const int16_t *)x->data;
        int16_t *y = (int16_t *)out->data;
        for (i = 0; i < n; i++) y[i] = (int16_t)tanh_int16(d, xi[i]);
    } else {
        const float *xf = (const float *)x->data;
        float *y = (float *)out->data;
        for (i = 0; i < n; i++) y[i] = (float)tanh((double)xf[i]);
    }
}
