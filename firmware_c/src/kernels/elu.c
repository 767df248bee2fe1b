/* ELU: x < 0 ? exp(x) - 1 : x, as edge_sdk/runtime/kernels/activations.py prepare_elu.
 *
 * FLOAT32 through expm1f (within an ulp of the Python kernel's double expm1 rounded once; TFLM and LiteRT call
 * the C library's expm1 too). INT8 through a 256-entry table built in prepare as TFLM's elu.cc: dequantize in
 * float32 (scale * (q - zp)), expf(v) - 1 in float32 for v < 0, times 1 / output scale (float32), rounded half
 * away from zero, plus the output zero point, clamped to int8.
 */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(ELU, elu, 1, "FLOAT32 INT8", "")

typedef struct {
    int32_t type;
    int8_t lut[256];
} elu_data_t;

typedef struct {
    float in_scale, inverse_out_scale;
    int32_t in_zp, out_zp;
} elu_table_params_t;

static int32_t elu_int8_value(const void *params, int32_t q) {
    const elu_table_params_t *p = (const elu_table_params_t *)params;
    const float dequantized = p->in_scale * (float)(q - p->in_zp);
    const float transformed = dequantized < 0.0f ? expf(dequantized) - 1.0f : dequantized;
    float rescaled = ea_round_f32(transformed * p->inverse_out_scale) + (float)p->out_zp;
    /* clamped in float before the conversion (a tiny output scale puts it far outside int32) */
    rescaled = rescaled < -128.0f ? -128.0f : (rescaled > 127.0f ? 127.0f : rescaled);
    return (int32_t)rescaled;
}

edge_status_t edge_prepare_elu(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    elu_data_t *d;
    elu_table_params_t p;
    edge_status_t s;
    if ((s = ea_unary_begin(node, ctx, 0, sizeof *d, &x, &out)) != EDGE_OK) return s;
    d = (elu_data_t *)node->user_data;
    d->type = x->type;
    if (x->type != EDGE_INT8) return EDGE_OK;
    if ((s = ea_unary_quantized(ctx, x, out)) != EDGE_OK) return s;
    p.in_scale = x->scale;
    p.inverse_out_scale = 1.0f / out->scale;
    p.in_zp = x->zero_point;
    p.out_zp = out->zero_point;
    ea_lut8_build(d->lut, elu_int8_value, &p);
    return EDGE_OK;
}

void edge_eval_elu(const edge_node_t *node, edge_ctx_t *ctx) {
    const elu_data_t *d = (const elu_data_t *)node->user_data;
    const edge_tensor_t *x;
    edge_tensor_t *out;
    int64_t n, i;
    if (ea_lut8_eval(node, ctx, d->type, d->lut, &x, &out, &n)) return;
    if (EDGE_WITH_FLOAT32) {
        const float *a = (const float *)x->data;
        float *y = (float *)out->data;
        for (i = 0; i < n; i++) y[i] = a[i] < 0.0f ? expm1f(a[i]) : a[i];
    }
}
