/* LOGISTIC: y = 1 / (1 + exp(-x)).
 *
 * As edge_sdk/runtime/kernels/activations.py prepare_logistic (TFLM logistic.cc and the reference integer kernels):
 *  - int8: x - in_zp rescaled to Q4.27, gemmlowp logistic in fixed point, rounded to Q0.8 and offset by -128;
 *    inputs at or beyond the saturation radius give -128 / 127. All 256 inputs are tabulated in prepare.
 *  - int16 (zero points 0, output scale 2^-15): the input scaled by a small integer multiplier, then linear
 *    interpolation in the 256-sample sigmoid table (TFLM's table method), per element in eval.
 *  - float32: 1 / (1 + exp(-x)) with exp in double rounded to float (x > 16.619 -> 1, x < -9 -> exp(x)).
 * Prepare and eval are TANH's (ea_sigmoid_prepare / ea_sigmoid_eval in edge_fixedpoint_act.h) with this curve.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(LOGISTIC, logistic, 3, "FLOAT32 INT8 INT16", "INT16: zero points 0, output scale 2^-15")

static int32_t logistic_int8(const void *params, int32_t v) {
    int saturated;
    const int32_t q4 = ea_int8_radius_input((const ea_radius_t *)params, v, &saturated);
    if (saturated) return saturated < 0 ? -128 : 127;
    return (int32_t)ea_clamp((int64_t)edge_rdbpot(ea_logistic(q4, 4), 23) - 128, -128, 127);
}

edge_status_t edge_prepare_logistic(edge_node_t *node, edge_ctx_t *ctx) {
    return ea_sigmoid_prepare(node, ctx, 0, logistic_int8);
}

static void logistic_span(const edge_node_t *node, edge_ctx_t *ctx, const void *x, void *y, int64_t n) {
    ea_sigmoid_span(node, ctx, x, y, n, 0);
}

void edge_eval_logistic(const edge_node_t *node, edge_ctx_t *ctx) { edge_unary_run(node, ctx, logistic_span); }
