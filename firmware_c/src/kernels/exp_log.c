/* EXP and LOG, element-wise, as edge_sdk/runtime/kernels/math.py prepare_exp / prepare_log (LiteRT exp.cc and
 * elementwise.cc; TFLM has neither on integers):
 *  - FLOAT32: expf / logf (within an ulp of numpy's);
 *  - INT8: a 256-entry table built in prepare as LiteRT's LUTPopulateInt8: the input dequantized in float, the
 *    function in float, times 1 / output scale, rounded half away from zero, plus the output zero point, clamped
 *    (a rescaled value beyond int32 saturates: LiteRT's float -> int32 cast is undefined there);
 *  - INT16 (zero points 0): LiteRT's 513-entry interpolated table (LUTPopulateInt16, LUTLookup).
 * LOG of a value <= 0 is the real value of the output type's lowest integer (LiteRT's LogLUTPrepare).
 * Tensors of any other quantization are refused at prepare.
 */
#include <math.h>

#include <stddef.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(EXP, exp, 2, "FLOAT32 INT8 INT16", "INT8: 256-entry table; INT16: zero points 0")
EDGE_KERNEL(LOG, log, 2, "FLOAT32 INT8 INT16", "INT8: 256-entry table; INT16: zero points 0")

typedef struct {
    int32_t type;
    union {
        int8_t lut8[256];                 /* INT8: the output of every input (index: its byte) */
        int16_t lut16[EA_LUT16_SIZE];     /* INT16: LUTLookup's samples */
    } t;
} exp_log_data_t;

typedef struct {
    int32_t is_log;
    float output_min;  /* LOG of a value <= 0: the real value of the output's lowest integer */
    float in_scale, inv_out;
    int32_t in_zp, out_zp;
} exp_log_params_t;

static float exp_log_value(const void *params, float v) {
    const exp_log_params_t *p = (const exp_log_params_t *)params;
    if (!p->is_log) return expf(v);
    return v <= 0.0f ? p->output_min : logf(v);
}

static int32_t exp_log_q8(const void *params, int32_t v) {
    const exp_log_params_t *p = (const exp_log_params_t *)params;
    const float deq = p->in_scale * (float)(v - p->in_zp);
    float whole = ea_round_f32(exp_log_value(params, deq) * p->inv_out);
    if (!(whole == whole)) whole = 0.0f;
    if (whole > 2147483647.0f) whole = 2147483647.0f;
    if (whole < -2147483648.0f) whole = -2147483648.0f;
    return (int32_t)ea_clamp((int64_t)whole + p->out_zp, -128, 127);
}

static edge_status_t exp_log_prepare(edge_node_t *node, edge_ctx_t *ctx, int32_t is_log) {
    edge_tensor_t *x, *out;
    exp_log_data_t *d;
    exp_log_params_t p;
    edge_status_t s;

    /* the int16 table (1026 B) only for an int16 input: float32 / int8 nodes keep the 256-entry one */
    const edge_tensor_t *in = node->n_inputs >= 1 ? edge_in(ctx, node, 0) : (const edge_tensor_t *)0;
    const size_t bytes = in && in->type == EDGE_INT16 ? sizeof *d : offsetof(exp_log_data_t, t) + 256;
    if ((s = ea_unary_begin(node, ctx, EA_ALSO_INT16, bytes, &x, &out)) != EDGE_OK) return s;
    d = (exp_log_data_t *)node->user_data;
    d->type = x->type;
    if (x->type == EDGE_FLOAT32) {
        if (x->quantized || out->quantized) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "float tensors carry no quantization");
        return EDGE_OK;
    }
    if ((s = ea_unary_quantized(ctx, x, out)) != EDGE_OK) return s;
    p.is_log = is_log;
    p.output_min = (float)((x->type == EDGE_INT8 ? -128 : -32768) - out->zero_point) * out->scale;
    p.in_scale = x->scale;
    p.inv_out = 1.0f / out->scale;
    p.in_zp = x->zero_point;
    p.out_zp = out->zero_point;
    if (x->type == EDGE_INT8) {
        ea_lut8_build(d->t.lut8, exp_log_q8, &p);
        return EDGE_OK;
    }
    if (x->zero_point != 0 || out->zero_point != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "int16 input and output need zero points of 0");
    ea_lut_populate_int16_p(exp_log_value, &p, x->scale, 0, out->scale, 0, d->t.lut16);
    return EDGE_OK;
}

edge_status_t edge_prepare_exp(edge_node_t *node, edge_ctx_t *ctx) { return exp_log_prepare(node, ctx, 0); }
edge_status_t edge_prepare_log(edge_node_t *node, edge_ctx_t *ctx) { return exp_log_prepare(node, ctx, 1); }

static void exp_log_eval(const edge_node_t *node, edge_ctx_t *ctx, float (*f)(float)) {
    const exp_log_data_t *d = (const exp_log_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    if (d->type == EDGE_INT8) {
        ea_lut8_apply(d->t.lut8, x->data, out->data, n);
    } else if (d->type == EDGE_INT16) {
        const int16_t *a = (const int16_t *)x->data;
        int16_t *y = (int16_t *)out->data;
        for (i = 0; i < n; i++) y[i] = (int16_t)ea_lut_lookup_int16(a[i], d->t.lut16);
    } else if (EDGE_WITH_FLOAT32) {
        const float *a = (const float *)x->data;
        float *y = (float *)out->data;
        for (i = 0; i < n; i++) y[i] = f(a[i]);
    }
}

void edge_eval_exp(const edge_node_t *node, edge_ctx_t *ctx) { exp_log_eval(node, ctx, expf); }
void edge_eval_log(const edge_node_t *node, edge_ctx_t *ctx) { exp_log_eval(node, ctx, logf); }
