/* TANH: y = tanh(x).
 *
 * As edge_sdk/runtime/kernels/activations.py prepare_tanh (TFLM tanh.cc and the reference integer kernels):
 *  - int8: x - in_zp rescaled to Q4.27, gemmlowp tanh in fixed point, rounded to Q0.7;
 *    inputs at or beyond the saturation radius give -128 / 127. All 256 inputs are tabulated in prepare.
 *  - int16 (zero points 0, output scale 2^-15): the input scaled by a small integer multiplier, then linear
 *    interpolation in the 256-sample sigmoid table (TFLM's table method), per element in eval.
 *  - float32: tanh in double, rounded to float.
 * Prepare and eval are LOGISTIC's (ea_sigmoid_prepare / ea_sigmoid_eval in edge_fixedpoint_act.h) with this curve.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(TANH, tanh, 3, "FLOAT32 INT8 INT16", "INT16: zero points 0, output scale 2^-15")

static int32_t tanh_int8(const void *params, int32_t v) {
    int saturated;
    const int32_t q4 = ea_int8_radius_input((const ea_radius_t *)params, v, &saturated);
    if (saturated) return saturated < 0 ? -128 : 127;
    return (int32_t)ea_clamp(edge_rdbpot(ea_tanh(q4, 4), 24), -128, 127);
}

edge_status_t edge_prepare_tanh(edge_node_t *node, edge_ctx_t *ctx) { return ea_sigmoid_prepare(node, ctx, 1, tanh_int8); }

static void tanh_span(const edge_node_t *node, edge_ctx_t *ctx, const void *x, void *y, int64_t n) {
    ea_sigmoid_span(node, ctx, x, y, n, 1);
}

void edge_eval_tanh(const edge_node_t *node, edge_ctx_t *ctx) { edge_unary_run(node, ctx, tanh_span); }
