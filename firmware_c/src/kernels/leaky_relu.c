/* LEAKY_RELU: y = x for x >= 0, alpha * x below.
 *
 * int8 / int16 as edge_sdk/runtime/kernels/activations.py prepare_leaky_relu (TFLM leaky_relu.cc as the tflite-micro
 * wheel builds it: both multipliers from double ratios): x - in_zp scaled by the identity multiplier
 * (in_scale / out_scale) when >= 0, else by the alpha multiplier (in_scale * alpha / out_scale; a negative
 * alpha is applied as a negated product), plus out_zp, clamped to the type. int8: a 256-entry table from that
 * formula in prepare; int16: the formula per element. float32: x > 0 ? x : x * alpha.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(LEAKY_RELU, leaky_relu, 2, "FLOAT32 INT8 INT16", "")


typedef struct {
    int32_t type;
    float alpha;
    int32_t in_zp, out_zp, m_id, s_id, s_alpha, negative_alpha, qmin, qmax;
    int64_t m_alpha; /* |alpha multiplier|: may be 2^31 when the mantissa was -2^31 */
    int8_t lut[256];
#if EDGE_SIMD
    int32_t simd;               /* float32 on a 64-bit Linux CPU with a fast path: its level (0: none) */
#endif
} leaky_data_t;

/* MultiplyByQuantizedMultiplier with a non-negative multiplier up to 2^31 (Python's int64 arithmetic). */
static int32_t mbqm_wide(int32_t x, int64_t multiplier, int32_t shift) {
    int32_t left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    int32_t shifted, high;
    if (multiplier < ((int64_t)1 << 31)) return ea_mbqm(x, (int32_t)multiplier, shift);
    shifted = left > 31 ? 0 : edge_wrap32((int64_t)((uint64_t)(int64_t)x << left));
    high = shifted; /* SaturatingRoundingDoublingHighMul(a, 2^31) == a */
    return (int32_t)ea_rdbpot64(high, right);
}

static int32_t leaky_q(const void *params, int32_t v) {
    const leaky_data_t *d = (const leaky_data_t *)params;
    int32_t diff = edge_wrap32((int64_t)v - d->in_zp);
    int64_t r;
    if (diff >= 0) {
        r = ea_mbqm(diff, d->m_id, d->s_id);
    } else {
        r = mbqm_wide(diff, d->m_alpha, d->s_alpha);
        if (d->negative_alpha) r = -r;
    }
    return (int32_t)ea_clamp(d->out_zp + r, d->qmin, d->qmax);
}

edge_status_t edge_prepare_leaky_relu(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    leaky_data_t *d;
    edge_status_t s;
    int32_t m_alpha;

    if ((s = ea_unary_begin(node, ctx, EA_ALSO_INT16, sizeof *d, &x, &out)) != EDGE_OK) return s;
    d = (leaky_data_t *)node->user_data;
    d->type = x->type;
    d->alpha = node->options_type == EDGE_OPTS_LeakyReluOptions ? edge_opt_float(node, 0, 0.0f) : 0.0f;
    if (EDGE_WITH_FLOAT32 && x->type == EDGE_FLOAT32) {
#if EDGE_SIMD
        d->simd = edge_simd_level();
        if (d->simd && !edge_simd_act_f32(d->simd, EDGE_SIMD_ACT_LEAKY, NULL, NULL, 0, 0.0f, 0.0f)) d->simd = 0;
#endif
        return EDGE_OK;
    }
    if ((s = ea_unary_quantized(ctx, x, out)) != EDGE_OK) return s;
    if (edge_quantize_multiplier((double)x->scale * (double)d->alpha / (double)out->scale, &m_alpha, &d->s_alpha) ||
        edge_quantize_multiplier((double)x->scale / (double)out->scale, &d->m_id, &d->s_id))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LEAKY_RELU: alpha or scales give no multiplier");
    d->negative_alpha = m_alpha < 0;
    d->m_alpha = m_alpha < 0 ? -(int64_t)m_alpha : (int64_t)m_alpha;
    d->in_zp = x->zero_point;
    d->out_zp = out->zero_point;
    d->qmin = ea_type_min(x->type);
    d->qmax = ea_type_max(x->type);
    if (x->type == EDGE_INT8)
        ea_lut8_build(d->lut, leaky_q, d);
    return EDGE_OK;
}

/* n contiguous elements (edge_unary_run: the whole tensor, or a patch window's rows) */
static void leaky_span(const edge_node_t *node, edge_ctx_t *ctx, const void *xv, void *yv, int64_t n) {
    const leaky_data_t *d = (const leaky_data_t *)node->user_data;
    int64_t i;
    (void)ctx;
    if (d->type == EDGE_INT8) {
        ea_lut8_apply(d->lut, xv, yv, n);
    } else if (EDGE_WITH_INT16 && d->type == EDGE_INT16) {
        const int16_t *xi = (const int16_t *)xv;
        int16_t *y = (int16_t *)yv;
        for (i = 0; i < n; i++) y[i] = (int16_t)leaky_q(d, xi[i]);
    } else if (EDGE_WITH_FLOAT32) {
        const float *xf = (const float *)xv;
        float *y = (float *)yv;
        const float alpha = d->alpha;
#if EDGE_SIMD
        if (d->simd && !(EDGE_WITH_PATCH && ctx->window) &&
            edge_simd_act_f32(d->simd, EDGE_SIMD_ACT_LEAKY, xf, y, n, alpha, 0.0f))
            return;
#endif
        for (i = 0; i < n; i++) y[i] = xf[i] > 0.0f ? xf[i] : xf[i] * alpha;
    }
}

void edge_eval_leaky_relu(const edge_node_t *node, edge_ctx_t *ctx) { edge_unary_run(node, ctx, leaky_span); }
