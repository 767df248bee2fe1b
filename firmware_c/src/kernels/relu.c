/* RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1 (one file, four registrations).
 *
 * As edge_sdk/runtime/kernels/activations.py: RELU, RELU_N1_TO_1 and RELU_0_TO_1 requantize, out_zp +
 * MultiplyByQuantizedMultiplier(x - in_zp, in_scale / out_scale with the ratio in float32), clamped to the quantized
 * bounds of [0, inf), [-1, 1] or [0, 1] on the output (int16 needs zero points of 0; RELU_0_TO_1 takes LiteRT's
 * UINT8 instead of INT16, per element); RELU6 clamps x itself to [in_zp, round(6 / in_scale) +
 * in_zp] without requantizing (TFLM's Relu6 int8/int16). int8 runs through a 256-entry table built in prepare
 * from the same integer formula; int16 evaluates it per element; float32 clamps.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(RELU, relu, 3, "FLOAT32 INT8 INT16", "INT16: zero points 0")
EDGE_KERNEL(RELU6, relu6, 3, "FLOAT32 INT8 INT16", "INT16: zero points 0")
EDGE_KERNEL(RELU_N1_TO_1, relu_n1_to_1, 2, "FLOAT32 INT8 INT16", "INT16: zero points 0")
EDGE_KERNEL(RELU_0_TO_1, relu_0_to_1, 1, "FLOAT32 INT8 UINT8", "")

enum { KIND_RELU = 0, KIND_RELU6 = 1, KIND_N1 = 2, KIND_0_TO_1 = 3 };

typedef struct {
    int32_t type, kind;
    int32_t in_zp, out_zp, multiplier, shift, lo, hi; /* RELU6: lo = in_zp, hi = six */
    int8_t lut[256];
#if EDGE_SIMD
    int32_t simd;               /* float32 on a 64-bit Linux CPU with a fast path: its level (0: none) */
#endif
} relu_data_t;

static int32_t relu_q(const void *params, int32_t v) {
    const relu_data_t *d = (const relu_data_t *)params;
    if (d->kind == KIND_RELU6) return v > d->hi ? d->hi : (v < d->lo ? d->lo : v);
    return (int32_t)ea_clamp((int64_t)d->out_zp + ea_mbqm(edge_wrap32((int64_t)v - d->in_zp), d->multiplier, d->shift),
                             d->lo, d->hi);
}

static edge_status_t relu_prepare(edge_node_t *node, edge_ctx_t *ctx, int32_t kind) {
    edge_tensor_t *x, *out;
    relu_data_t *d;
    edge_status_t s;
    int32_t qmin, qmax;

    if ((s = ea_unary_begin(node, ctx, kind == KIND_0_TO_1 ? EA_ALSO_UINT8 : EA_ALSO_INT16, sizeof *d, &x, &out)) !=
        EDGE_OK)
        return s;
    d = (relu_data_t *)node->user_data;
    d->type = x->type;
    d->kind = kind;
    if (EDGE_WITH_FLOAT32 && x->type == EDGE_FLOAT32) {
#if EDGE_SIMD
        d->simd = edge_simd_level();
        if (d->simd && !edge_simd_act_f32(d->simd, EDGE_SIMD_ACT_RELU, NULL, NULL, 0, 0.0f, 0.0f)) d->simd = 0;
#endif
        return EDGE_OK;
    }
    if ((s = ea_unary_quantized(ctx, x, out)) != EDGE_OK) return s;
    qmin = ea_type_min(x->type);
    qmax = ea_type_max(x->type);
    if (kind == KIND_RELU6) {
        int ok = 1;
        int64_t six = edge_quantize_value(6.0f, x->scale, x->zero_point, &ok);
        d->lo = x->zero_point;
        d->hi = (int32_t)ea_clamp(six, qmin, qmax);
    } else {
        int ok = 1;
        int64_t lo = edge_quantize_value(kind == KIND_N1 ? -1.0f : 0.0f, out->scale, out->zero_point, &ok);
        int64_t hi = kind == KIND_RELU ? qmax : edge_quantize_value(1.0f, out->scale, out->zero_point, &ok);
        if (EDGE_WITH_INT16 && x->type == EDGE_INT16 && (x->zero_point || out->zero_point))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "RELU: int16 activations need zero points of 0");
        if (!ok) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "RELU: output scale");
        d->lo = (int32_t)(lo > qmin ? lo : qmin);
        d->hi = (int32_t)(hi < qmax ? hi : qmax);
        d->in_zp = x->zero_point;
        d->out_zp = out->zero_point;
        if (edge_quantize_multiplier((double)(x->scale / out->scale), &d->multiplier, &d->shift))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "RELU: scales give no multiplier");
    }
    if (x->type == EDGE_INT8)
        ea_lut8_build(d->lut, relu_q, d);
    return EDGE_OK;
}

/* n contiguous elements (edge_unary_run: the whole tensor, or a patch window's rows) */
static void relu_span(const edge_node_t *node, edge_ctx_t *ctx, const void *xv, void *yv, int64_t n) {
    const relu_data_t *d = (const relu_data_t *)node->user_data;
    int64_t i;
    (void)ctx;
    if (d->type == EDGE_INT8) {
        ea_lut8_apply(d->lut, xv, yv, n);
    } else if (EDGE_WITH_INT16 && d->type == EDGE_INT16) {
        const int16_t *xi = (const int16_t *)xv;
        int16_t *y = (int16_t *)yv;
        for (i = 0; i < n; i++) y[i] = (int16_t)relu_q(d, xi[i]);
    } else if (d->type == EDGE_UINT8) {
        const uint8_t *xi = (const uint8_t *)xv;
        uint8_t *y = (uint8_t *)yv;
        for (i = 0; i < n; i++) y[i] = (uint8_t)relu_q(d, xi[i]);
    } else if (EDGE_WITH_FLOAT32) {
        const float *xf = (const float *)xv;
        float *y = (float *)yv;
        const float lo = d->kind == KIND_N1 ? -1.0f : 0.0f, hi = d->kind == KIND_RELU6 ? 6.0f : 1.0f;
#if EDGE_SIMD
        /* not in a patch window (the portable loops, as the other kernels of a patch stage) */
        if (d->simd && !(EDGE_WITH_PATCH && ctx->window) &&
            edge_simd_act_f32(d->simd, d->kind == KIND_RELU ? EDGE_SIMD_ACT_RELU : EDGE_SIMD_ACT_CLAMP, xf, y, n, lo, hi))
            return;
#endif
        if (d->kind == KIND_RELU)
            for (i = 0; i < n; i++) y[i] = xf[i] < 0.0f ? 0.0f : xf[i];
        else
            for (i = 0; i < n; i++) y[i] = xf[i] > hi ? hi : (xf[i] < lo ? lo : xf[i]);
    }
}

edge_status_t edge_prepare_relu(edge_node_t *node, edge_ctx_t *ctx) { return relu_prepare(node, ctx, KIND_RELU); }
edge_status_t edge_prepare_relu6(edge_node_t *node, edge_ctx_t *ctx) { return relu_prepare(node, ctx, KIND_RELU6); }
edge_status_t edge_prepare_relu_n1_to_1(edge_node_t *node, edge_ctx_t *ctx) { return relu_prepare(node, ctx, KIND_N1); }
edge_status_t edge_prepare_relu_0_to_1(edge_node_t *node, edge_ctx_t *ctx) { return relu_prepare(node, ctx, KIND_0_TO_1); }
void edge_eval_relu(const edge_node_t *node, edge_ctx_t *ctx) { edge_unary_run(node, ctx, relu_span); }
void edge_eval_relu6(const edge_node_t *node, edge_ctx_t *ctx) { edge_unary_run(node, ctx, relu_span); }
void edge_eval_relu_n1_to_1(const edge_node_t *node, edge_ctx_t *ctx) { edge_unary_run(node, ctx, relu_span); }
void edge_eval_relu_0_to_1(const edge_node_t *node, edge_ctx_t *ctx) { edge_unary_run(node, ctx, relu_span); }
