/* GELU (builtin 150, GeluOptions.approximate): y = x * Phi(x).
 *
 * As edge_sdk/runtime/kernels/gelu.py prepare_gelu (LiteRT gelu.cc and its reference header; TFLM has no GELU):
 *  - exact: 0.5f * x * erfc(-x * sqrt(1/2)); approximate: 0.5f * x * (1 + tanh(sqrt(2/pi) * x * (1 + 0.044715 x^2))),
 *    in float arithmetic with erfc / tanh evaluated in double and rounded to float (erfc by Numerical Recipes'
 *    Chebyshev-fitted erfcc, fractional error below 1.2e-7, the same formula as the Python kernel's); float32
 *    tensors in single precision on cores without a double FPU (gelu_value_f32);
 *  - int8: a 256-entry table built in prepare as LiteRT's LUTPopulate: the input dequantized in float, the
 *    formula, times 1 / output scale, rounded half away from zero, plus the output zero point, clamped;
 *  - int16: LiteRT's 513-entry interpolated table of the float formula (LUTPopulateInt16, LUTLookup).
 */
#include <stddef.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(GELU, gelu, 3, "FLOAT32 INT8 INT16", "INT8: 256-entry table; INT16: 513-entry interpolated table")

typedef struct {
    int32_t type, approximate;
    union {
        int8_t lut8[256];             /* int8: the output of every input */
        int16_t lut16[EA_LUT16_SIZE]; /* int16: LUTLookup's samples */
    } t;
} gelu_data_t;

typedef struct {
    float in_scale, inv_out;
    int32_t in_zp, out_zp, approximate;
} gelu_params_t;

static double gelu_erfc(double x) {
    static const double c[10] = {-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                                 0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277};
    double z = x < 0 ? -x : x, t = 1.0 / (1.0 + 0.5 * z), poly = c[9], ans;
    int k;
    for (k = 8; k >= 0; k--) poly = c[k] + t * poly;
    ans = t * exp(-z * z + poly);
    return x >= 0 ? ans : 2.0 - ans;
}

static float gelu_value(float v, int32_t approximate) {
    if (approximate) {
        float inner = 0.79788456080286535588f * v * (1.0f + 0.044715f * v * v);
        float t = (float)tanh((double)inner);
        return 0.5f * v * (1.0f + t);
    }
    return 0.5f * v * (float)gelu_erfc((double)(v * -0.70710678118654752440f));
}

/* The float32 kernel's value: in single precision on cores without a double FPU (EDGE_FLOAT_MATH_SINGLE: erfcc's
 * polynomial and exp in float, tanhf; within a few ulps of the double form, float outputs are held to 1e-4 of
 * range). The int8 / int16 tables (built once at prepare) keep the double form: their rounding to integers is
 * LiteRT's exactly. */
static float gelu_value_f32(float v, int32_t approximate) {
#if EDGE_FLOAT_MATH_SINGLE
    static const float c[10] = {-1.26551223f, 1.00002368f, 0.37409196f, 0.09678418f, -0.18628806f,
                                0.27886807f, -1.13520398f, 1.48851587f, -0.82215223f, 0.17087277f};
    float x, z, t, poly, e;
    int k;
    if (approximate) return 0.5f * v * (1.0f + tanhf(0.79788456080286535588f * v * (1.0f + 0.044715f * v * v)));
    x = v * -0.70710678118654752440f;
    z = fabsf(x);
    t = 1.0f / (1.0f + 0.5f * z);
    poly = c[9];
    for (k = 8; k >= 0; k--) poly = c[k] + t * poly;
    e = t * expf(-z * z + poly);
    return 0.5f * v * (x >= 0.0f ? e : 2.0f - e);
#else
    return gelu_value(v, approximate);
#endif
}

static float gelu_transform(const void *approximate, float v) { return gelu_value(v, *(const int32_t *)approximate); }

static int32_t gelu_q(const void *params, int32_t v) {
    const gelu_params_t *p = (const gelu_params_t *)params;
    float deq = p->in_scale * (float)(v - p->in_zp);
    float r = gelu_value(deq, p->approximate) * p->inv_out;
    float whole = ea_round_f32(r); /* std::round: halves away from zero */
    int64_t q;
    if (whole > 1e9f) whole = 1e9f;
    if (whole < -1e9f) whole = -1e9f;
    q = (int64_t)whole + p->out_zp;
    return (int32_t)ea_clamp(q, -128, 127);
}

edge_status_t edge_prepare_gelu(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    gelu_data_t *d;
    edge_status_t s;
    gelu_params_t p;

    /* the int16 table (1026 B) only for an int16 input: float32 / int8 nodes keep the 256-entry one */
    const edge_tensor_t *in = node->n_inputs >= 1 ? edge_in(ctx, node, 0) : (const edge_tensor_t *)0;
    const size_t bytes = in && in->type == EDGE_INT16 ? sizeof *d : offsetof(gelu_data_t, t) + 256;
    if ((s = ea_unary_begin(node, ctx, EA_ALSO_INT16, bytes, &x, &out)) != EDGE_OK) return s;
    d = (gelu_data_t *)node->user_data;
    d->type = x->type;
    d->approximate = node->options_type == EDGE_OPTS_GeluOptions ? (edge_opt_int(node, 0, 1, 0) != 0) : 0;
    if (EDGE_WITH_FLOAT32 && x->type == EDGE_FLOAT32) return EDGE_OK;
    if ((s = ea_unary_quantized(ctx, x, out)) != EDGE_OK) return s;
    if (x->type == EDGE_INT16) {
        ea_lut_populate_int16_p(gelu_transform, &d->approximate, x->scale, x->zero_point, out->scale, out->zero_point,
                                d->t.lut16);
        return EDGE_OK;
    }
    p.in_scale = x->scale;
    p.inv_out = 1.0f / out->scale;
    p.in_zp = x->zero_point;
    p.out_zp = out->zero_point;
    p.approximate = d->approximate;
    ea_lut8_build(d->t.lut8, gelu_q, &p);
    return EDGE_OK;
}

void edge_eval_gelu(const edge_node_t *node, edge_ctx_t *ctx) {
    const gelu_data_t *d = (const gelu_data_t *)node->user_data;
    const edge_tensor_t *x;
    edge_tensor_t *out;
    int64_t n, i;
    if (ea_lut8_eval(node, ctx, d->type, d->t.lut8, &x, &out, &n)) return;
    if (d->type == EDGE_INT16) {
        const int16_t *a = (const int16_t *)x->data;
        int16_t *y = (int16_t *)out->data;
        for (i = 0; i < n; i++) y[i] = (int16_t)ea_lut_lookup_int16(a[i], d->t.lut16);
        return;
    }
    if (EDGE_WITH_FLOAT32) {
        const float *xf = (const float *)x->data;
        float *y = (float *)out->data;
        for (i = 0; i < n; i++) y[i] = gelu_value_f32(xf[i], d->approximate);
    }
}
