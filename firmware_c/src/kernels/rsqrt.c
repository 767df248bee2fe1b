/* RSQRT: y = 1 / sqrt(x), element-wise.
 *
 * As edge_sdk/runtime/kernels/elementwise.py prepare_rsqrt. FLOAT32: float32 sqrt then a float32 division of 1
 * (both correctly rounded, so the bits equal numpy's). INT8 (TFLM's RsqrtEvalQuantized): prepare tabulates
 * the 256 outputs, each 1 << 20 times the inverse square root of (x - input zero point) as gemmlowp's
 * GetInvSqrtQuantizedMultiplierExp gives it (Newton steps in Q3), requantized by 1 / (sqrt(input scale) *
 * output scale) (float32 factors, the ratio in double) with a 20-bit right shift, plus the output zero point,
 * clamped; x equal to the zero point gives 127. x below the zero point (a negative value) has no result: TFLM
 * and the interpreter fail the invoke, this kernel's eval (which cannot fail) returns the table's entry for 0's
 * multiplier — the constraint the EDGE_KERNEL line states.
 */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(RSQRT, rsqrt, 3, "FLOAT32 INT8", "INT8: inputs below the zero point are not checked at invoke")

typedef struct {
    int32_t type;
    int8_t lut[256]; /* INT8: the output of each input, by its uint8 view */
} rsqrt_data_t;

edge_status_t edge_prepare_rsqrt(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    rsqrt_data_t *d;
    edge_status_t s = ea_unary_begin(node, ctx, 0, sizeof *d, &x, &out);
    int32_t multiplier, shift, i;
    if (s != EDGE_OK) return s;
    d = (rsqrt_data_t *)node->user_data;
    d->type = x->type;
    if (x->type == EDGE_FLOAT32) return EDGE_OK;
    if ((s = ea_unary_quantized(ctx, x, out)) != EDGE_OK) return s;
    {
        const float root = sqrtf(x->scale);
        const float denominator = root * out->scale;
        if (edge_quantize_multiplier(1.0 / (double)denominator, &multiplier, &shift))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "RSQRT: scales give no multiplier");
    }
    for (i = -128; i < 128; i++) {
        const int32_t value = i - x->zero_point;
        int32_t inv, inv_shift, data, raw;
        ea_inv_sqrt_multiplier(value > 0 ? value : 0, &inv, &inv_shift);
        data = ea_mbqm(1, inv, inv_shift + 20);
        raw = ea_mbqm(data, multiplier, shift - 20) + out->zero_point;
        d->lut[(uint8_t)i] = (int8_t)(value == 0 ? 127 : raw < -128 ? -128 : raw > 127 ? 127 : raw);
    }
    return EDGE_OK;
}

void edge_eval_rsqrt(const edge_node_t *node, edge_ctx_t *ctx) {
    const rsqrt_data_t *d = (const rsqrt_data_t *)node->user_data;
    const edge_tensor_t *in = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(out);
    if (d->type == EDGE_INT8) {
        ea_lut8_apply(d->lut, in->data, out->data, n);
    } else {
        const float *x = (const float *)in->data;
        float *y = (float *)out->data;
        int64_t i;
        for (i = 0; i < n; i++) y[i] = 1.0f / sqrtf(x[i]);
    }
}
