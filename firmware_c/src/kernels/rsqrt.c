/* RSQRT: y = 1 / sqrt(x), element-wise.
 *
 * As edge_sdk/runtime/kernels/elementwise.py prepare_rsqrt. FLOAT32: float32 sqrt then a float32 division of 1
 * (both correctly rounded, so the bits equal numpy's). INT8 (TFLM's RsqrtEvalQuantized): prepare tabulates
 * the 256 outputs, each 1 << 20 times the inverse square root of (x - input zero point) as gemmlowp's
 * GetInvSqrtQuantizedMultiplierExp gives it (Newton steps in Q3), requantized by 1 / (sqrt(input scale) *
 * output scale) (float32 factors, the ratio in double) with a 20-bit right shift, plus the output zero point,
 * clamped; x equal to the zero point gives 127. INT16 (16x8 layer norms; zero points 0, as TFLM): the same
 * arithmetic per element at eval (no 64 K-entry table on a microcontroller), x = 0 gives 32767 (LiteRT's int16
 * kernel instead interpolates a 513-entry table: several hundred quanta off TFLM below x ~ 900). x below the zero
 * point (a negative value) has no result: TFLM and the interpreter fail the invoke, this kernel's eval (which
 * cannot fail) returns the result for 0's multiplier — the constraint the EDGE_KERNEL line states.
 */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(RSQRT, rsqrt, 3, "FLOAT32 INT8 INT16", "INT16: zero points 0; inputs below the zero point are not checked at invoke")

typedef struct {
    int32_t type;
    int32_t multiplier, shift, out_zp; /* INT16: the requantization of 1 / (sqrt(input scale) * output scale) */
    int8_t lut[256];                   /* INT8: the output of each input, by its uint8 view */
} rsqrt_data_t;

/* TFLM's RsqrtEvalQuantized for one input value (x - input zero point), before clamping. */
static int32_t rsqrt_quantized(int32_t value, int32_t multiplier, int32_t shift, int32_t out_zp) {
    int32_t inv, inv_shift, data;
    ea_inv_sqrt_multiplier(value > 0 ? value : 0, &inv, &inv_shift);
    data = ea_mbqm(1, inv, inv_shift + 20);
    return ea_mbqm(data, multiplier, shift - 20) + out_zp;
}

edge_status_t edge_prepare_rsqrt(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    rsqrt_data_t *d;
    edge_status_t s = ea_unary_begin(node, ctx, EA_ALSO_INT16, sizeof *d, &x, &out);
    int32_t multiplier, shift, i;
    if (s != EDGE_OK) return s;
    d = (rsqrt_data_t *)node->user_data;
    d->type = x->type;
    if (x->type == EDGE_FLOAT32) return EDGE_OK;
    if ((s = ea_unary_quantized(ctx, x, out)) != EDGE_OK) return s;
    {
        const float root = sqrtf(x->scale);
        const float denominator = root * out->scale;
        /* INT16: the TFLM wheel's multiplier, sqrt and product in double (the float32 ones: 1 quantum off at ties) */
        const double real = EDGE_WITH_INT16 && x->type == EDGE_INT16
                                ? 1.0 / (sqrt((double)x->scale) * (double)out->scale)
                                : 1.0 / (double)denominator;
        if (edge_quantize_multiplier(real, &multiplier, &shift))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "RSQRT: scales give no multiplier");
    }
    if (x->type == EDGE_INT16) {
        if (x->zero_point || out->zero_point) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "RSQRT: INT16 needs zero points of 0");
        d->multiplier = multiplier;
        d->shift = shift;
        d->out_zp = out->zero_point;
        return EDGE_OK;
    }
    for (i = -128; i < 128; i++) {
        const int32_t value = i - x->zero_point;
        const int32_t raw = rsqrt_quantized(value, multiplier, shift, out->zero_point);
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
    } else if (EDGE_WITH_INT16 && d->type == EDGE_INT16) {
        const int16_t *x = (const int16_t *)in->data;
        int16_t *y = (int16_t *)out->data;
        int64_t i;
        for (i = 0; i < n; i++)
            y[i] = (int16_t)(x[i] == 0 ? 32767 : edge_clamp32(rsqrt_quantized(x[i], d->multiplier, d->shift, d->out_zp),
                                                              -32768, 32767));
    } else {
        const float *x = (const float *)in->data;
        float *y = (float *)out->data;
        int64_t i;
        for (i = 0; i < n; i++) y[i] = 1.0f / sqrtf(x[i]);
    }
}
