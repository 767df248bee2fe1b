/* HARD_SWISH: y = x * relu6(x + 3) / 6.
 *
 * int8 as edge_sdk/runtime/kernels/activations.py prepare_hard_swish (TFLM hard_swish.cc / reference HardSwish):
 * the input minus its zero point at 7 more fractional bits (int16), a "reluish" factor from the input
 * rescaled to 3/32768 units and mapped to [0, 1], times the input rescaled to the output scale (int16 high
 * multiplies with multipliers rounded to 16 bits), plus out_zp, clamped. All 256 inputs are tabulated in
 * prepare. float32: x * min(6, max(0, x + 3)) / 6 in float32.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(HARD_SWISH, hard_swish, 2, "FLOAT32 INT8", "")

typedef struct {
    int32_t type;
    int8_t lut[256];
#if EDGE_SIMD
    int32_t simd;               /* float32 on a 64-bit Linux CPU with a fast path: its level (0: none) */
#endif
} hard_swish_data_t;

static int32_t downscale_to_int16(int32_t m) {
    if ((int64_t)m >= ((int64_t)1 << 31) - 1 - (1 << 15)) return 32767;
    return (int32_t)(((int64_t)m + (1 << 15)) >> 16);
}

typedef struct {
    int32_t in_zp, out_zp, out_m16, out_e, rel_m16, rel_e;
} hs_params_t;

static int32_t hard_swish_q(const void *params, int32_t v) {
    const hs_params_t *p = (const hs_params_t *)params;
    int32_t value = ea_wrap16((int64_t)v - p->in_zp);
    int32_t hires = ea_wrap16((int64_t)value * 128);
    int32_t preshift = ea_srdhm16(hires, p->out_m16);
    int64_t reluish = hires, prod;
    int32_t high, result;
    if (p->rel_e > 0) reluish = ea_sat16(reluish * ((int64_t)1 << (p->rel_e - 1)));
    reluish = ea_srdhm16((int32_t)reluish, p->rel_m16);
    if (p->rel_e > 0) reluish = ea_sat16(reluish * 2);
    if (p->rel_e < 0) reluish = ea_wrap16(ea_rdbpot64(reluish, -p->rel_e));
    reluish = ea_wrap16((reluish + (1 << 15)) >> 1);
    prod = reluish * preshift; /* SaturatingDoublingHighMul: truncating division by 2^15 */
    high = (reluish == -32768 && preshift == -32768) ? 32767 : ea_wrap16(prod / 32768);
    result = ea_wrap16(ea_rdbpot64(high, -p->out_e));
    result = ea_wrap16((int64_t)result + p->out_zp);
    return (int32_t)ea_clamp(result, -128, 127);
}

edge_status_t edge_prepare_hard_swish(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    hard_swish_data_t *d;
    edge_status_t s;
    hs_params_t p;
    int32_t out_m, rel_m;
    float hires_input_scale, reluish_scale;

    if ((s = ea_unary_begin(node, ctx, 0, sizeof *d, &x, &out)) != EDGE_OK) return s;
    d = (hard_swish_data_t *)node->user_data;
    d->type = x->type;
    if (EDGE_WITH_FLOAT32 && x->type == EDGE_FLOAT32) {
#if EDGE_SIMD
        d->simd = edge_simd_level();
        if (d->simd && !edge_simd_act_f32(d->simd, EDGE_SIMD_ACT_HARD_SWISH, NULL, NULL, 0, 0.0f, 0.0f)) d->simd = 0;
#endif
        return EDGE_OK;
    }
    if ((s = ea_unary_quantized(ctx, x, out)) != EDGE_OK) return s;
    hires_input_scale = (1.0f / 128.0f) * x->scale;
    reluish_scale = 3.0f / 32768.0f;
    if (edge_quantize_multiplier((double)(hires_input_scale / out->scale), &out_m, &p.out_e) ||
        edge_quantize_multiplier((double)(hires_input_scale / reluish_scale), &rel_m, &p.rel_e))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "HARD_SWISH: scales give no multiplier");
    if (p.out_e > 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "HARD_SWISH needs an output multiplier below one");
    if (p.out_e < -62 || p.rel_e < -62 || p.rel_e > 40)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "HARD_SWISH: scale ratio out of range");
    p.out_m16 = downscale_to_int16(out_m);
    p.rel_m16 = downscale_to_int16(rel_m);
    p.in_zp = x->zero_point;
    p.out_zp = out->zero_point;
    ea_lut8_build(d->lut, hard_swish_q, &p);
    return EDGE_OK;
}

/* n contiguous elements (edge_unary_run: the whole tensor, or a patch window's rows) */
static void hard_swish_span(const edge_node_t *node, edge_ctx_t *ctx, const void *xv, void *yv, int64_t n) {
    const hard_swish_data_t *d = (const hard_swish_data_t *)node->user_data;
    int64_t i;
    (void)ctx;
    if (d->type == EDGE_INT8) {
        ea_lut8_apply(d->lut, xv, yv, n);
    } else if (EDGE_WITH_FLOAT32) {
        const float *xf = (const float *)xv;
        float *y = (float *)yv;
#if EDGE_SIMD
        if (d->simd && !(EDGE_WITH_PATCH && ctx->window) &&
            edge_simd_act_f32(d->simd, EDGE_SIMD_ACT_HARD_SWISH, xf, y, n, 0.0f, 0.0f))
            return;
#endif
        for (i = 0; i < n; i++) {
            float v = xf[i], t = v + 3.0f;
            if (t < 0.0f) t = 0.0f;
            if (t > 6.0f) t = 6.0f;
            y[i] = v * t / 6.0f;
        }
    }
}

void edge_eval_hard_swish(const edge_node_t *node, edge_ctx_t *ctx) { edge_unary_run(node, ctx, hard_swish_span); }
