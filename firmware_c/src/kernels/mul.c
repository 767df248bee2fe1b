/* MUL: y = act(a * b) with numpy broadcasting up to rank 6.
 *
 * int8 / int16 as edge_sdk/kernels/elementwise.py prepare_mul (TFLM mul.cc): (a - za) * (b - zb) in wrapping
 * int32, scaled by one multiplier (sa * sb / so, in double), plus the output zero point, clamped to the fused
 * activation's range; int16 needs zero points of 0. float32: product, clamped. int32: wrapping product
 * clamped to the activation's integer bounds.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(MUL, mul, 7)

enum { OPTS_MulOptions = 21 };

typedef struct {
    ea_bcast_t bc;
    int32_t type, has_clamp;
    int64_t off1, off2;
    int32_t off_out, multiplier, shift, lo, hi;
    float flo, fhi;
} mul_data_t;

edge_status_t edge_prepare_mul(edge_node_t *node, edge_ctx_t *ctx) {
    const int32_t act = node->options_type == OPTS_MulOptions ? edge_opt_int(node, 0, 1, 0) : 0;
    edge_tensor_t *a, *b, *out;
    mul_data_t *d;
    int32_t shape[8], rank, r;
    edge_status_t s;

    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MUL expects 2 inputs and 1 output");
    a = edge_in(ctx, node, 0);
    b = edge_in(ctx, node, 1);
    out = edge_out(ctx, node, 0);
    if (!a || !b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MUL: both inputs are required");
    if (a->type != EDGE_FLOAT32 && a->type != EDGE_INT8 && a->type != EDGE_INT16 && a->type != EDGE_INT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "MUL: C kernel runs FLOAT32, INT8, INT16, INT32");
    if (b->type != a->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "MUL: inputs have different types");
    d = (mul_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    r = ea_bcast_prepare(&d->bc, a, b, shape, &rank);
    if (r == -1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MUL: input shapes do not broadcast");
    if (r == -2) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MUL: broadcasting beyond rank 6");
    s = edge_set_output_shape(ctx, node, 0, shape, rank);
    if (s != EDGE_OK) return s;
    if (act < 0 || act > EDGE_ACT_RELU6) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MUL: fused activation");
    if (out->type != a->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "MUL: output type differs from input");
    d->type = a->type;
    if (a->type == EDGE_FLOAT32) {
        d->has_clamp = act != EDGE_ACT_NONE;
        edge_activation_range_float(act, &d->flo, &d->fhi);
        return EDGE_OK;
    }
    if (a->type == EDGE_INT32) {
        d->has_clamp = act != EDGE_ACT_NONE;
        d->lo = act == EDGE_ACT_RELU_N1_TO_1 ? -1 : 0;
        d->hi = act == EDGE_ACT_RELU ? EDGE_INT32_MAX : act == EDGE_ACT_RELU6 ? 6 : 1;
        return EDGE_OK;
    }
    if (!a->quantized || !b->quantized || !out->quantized)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MUL: quantized tensors need quantization parameters");
    if (!ea_good_scale(a) || !ea_good_scale(b) || !ea_good_scale(out))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MUL: scales must be positive and finite");
    if (a->type == EDGE_INT16 && (a->zero_point || b->zero_point || out->zero_point))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MUL: int16 needs zero points of 0");
    if (edge_activation_range(act, ea_type_min(a->type), ea_type_max(a->type), out->scale, out->zero_point, &d->lo,
                              &d->hi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MUL: fused activation");
    if (edge_quantize_multiplier((double)a->scale * (double)b->scale / (double)out->scale, &d->multiplier, &d->shift))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MUL: scales give no multiplier");
    d->off1 = -(int64_t)a->zero_point;
    d->off2 = -(int64_t)b->zero_point;
    d->off_out = out->zero_point;
    return EDGE_OK;
}

static inline int32_t mul_q(const mul_data_t *d, int32_t x1, int32_t x2) {
    int32_t p = edge_wrap32((int64_t)(uint64_t)(((uint64_t)((int64_t)x1 + d->off1)) * (uint64_t)((int64_t)x2 + d->off2)));
    return (int32_t)ea_clamp((int64_t)ea_mbqm(p, d->multiplier, d->shift) + d->off_out, d->lo, d->hi);
}

static void row_int8(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const mul_data_t *d = (const mul_data_t *)op;
    const int8_t *x1 = (const int8_t *)a, *x2 = (const int8_t *)b;
    int8_t *o = (int8_t *)y;
    int32_t i;
    for (i = 0; i < n; i++) o[i] = (int8_t)mul_q(d, x1[i * sa], x2[i * sb]);
}

static void row_int16(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const mul_data_t *d = (const mul_data_t *)op;
    const int16_t *x1 = (const int16_t *)a, *x2 = (const int16_t *)b;
    int16_t *o = (int16_t *)y;
    int32_t i;
    for (i = 0; i < n; i++) o[i] = (int16_t)mul_q(d, x1[i * sa], x2[i * sb]);
}

static void row_float(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const mul_data_t *d = (const mul_data_t *)op;
    const float *x1 = (const float *)a, *x2 = (const float *)b;
    float *o = (float *)y;
    int32_t i;
    for (i = 0; i < n; i++) o[i] = x1[i * sa] * x2[i * sb];
    if (d->has_clamp)
        for (i = 0; i < n; i++) {
            float v = o[i];
            if (v < d->flo) v = d->flo;
            if (v > d->fhi) v = d->fhi;
            o[i] = v;
        }
}

static void row_int32(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const mul_data_t *d = (const mul_data_t *)op;
    const int32_t *x1 = (const int32_t *)a, *x2 = (const int32_t *)b;
    int32_t *o = (int32_t *)y;
    int32_t i;
    for (i = 0; i < n; i++) {
        int32_t v = edge_wrap32((int64_t)((uint64_t)(int64_t)x1[i * sa] * (uint64_t)(int64_t)x2[i * sb]));
        o[i] = d->has_clamp ? (int32_t)ea_clamp(v, d->lo, d->hi) : v;
    }
}

void edge_eval_mul(const edge_node_t *node, edge_ctx_t *ctx) {
    const mul_data_t *d = (const mul_data_t *)node->user_data;
    const edge_tensor_t *a = edge_in(ctx, node, 0), *b = edge_in(ctx, node, 1);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    ea_row_fn row;
    uint32_t size;
    switch (d->type) {
    case EDGE_INT8: row = row_int8; size = 1; break;
    case EDGE_INT16: row = row_int16; size = 2; break;
    case EDGE_INT32: row = row_int32; size = 4; break;
    default: row = row_float; size = 4; break;
    }
    ea_bcast_run(&d->bc, d, a->data, size, b->data, size, out->data, size, row);
}
