/* ADD and SUB (one file, so a model using either links it): y = act(a +- b), numpy broadcasting up to rank 6.
 *
 * int8 / int16 as edge_sdk/kernels/elementwise.py (TFLM add.cc / sub.cc): both inputs minus their zero
 * points are shifted left (20 bits for int8, 15 for int16), scaled to a common scale with their own
 * multipliers (ratios to twice the larger input scale, formed in double as the tflite-micro wheel does for
 * both ADD and SUB), summed (or subtracted) in wrapping int32, scaled to the output, offset by the output zero
 * point and clamped to the fused activation's range. float32: plain sum, clamped. int32: wrapping sum; ADD
 * ignores the fused activation, SUB clamps to its integer bounds. Prepare computes the broadcast loop and
 * the multipliers; eval walks coalesced rows.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(ADD, add, 5)
EDGE_KERNEL(SUB, sub, 5)

enum { OPTS_AddOptions = 11, OPTS_SubOptions = 28 };

typedef struct {
    ea_bcast_t bc;
    int32_t type, sign, has_clamp;
    int32_t left_shift;
    int64_t off1, off2;
    int32_t off_out;
    int32_t m1, s1, m2, s2, mo, so;
    int32_t lo, hi;
    float flo, fhi;
} addsub_data_t;

static edge_status_t edge_addsub_prepare(edge_node_t *node, edge_ctx_t *ctx, int sign) {
    const int opts = sign > 0 ? OPTS_AddOptions : OPTS_SubOptions;
    const int32_t act = node->options_type == opts ? edge_opt_int(node, 0, 1, 0) : 0;
    edge_tensor_t *a, *b, *out;
    addsub_data_t *d;
    int32_t shape[8], rank, r;
    edge_status_t s;

    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ADD/SUB expects 2 inputs and 1 output");
    a = edge_in(ctx, node, 0);
    b = edge_in(ctx, node, 1);
    out = edge_out(ctx, node, 0);
    if (!a || !b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ADD/SUB: both inputs are required");
    if (a->type != EDGE_FLOAT32 && a->type != EDGE_INT8 && a->type != EDGE_INT16 && a->type != EDGE_INT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "ADD/SUB: C kernel runs FLOAT32, INT8, INT16, INT32");
    if (b->type != a->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "ADD/SUB: inputs have different types");
    d = (addsub_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    r = ea_bcast_prepare(&d->bc, a, b, shape, &rank);
    if (r == -1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ADD/SUB: input shapes do not broadcast");
    if (r == -2) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "ADD/SUB: broadcasting beyond rank 6");
    s = edge_set_output_shape(ctx, node, 0, shape, rank);
    if (s != EDGE_OK) return s;
    if (out->type != a->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "ADD/SUB: output type differs from input");
    if (act < 0 || act > EDGE_ACT_RELU6) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "ADD/SUB: fused activation");
    d->type = a->type;
    d->sign = sign;
    if (a->type == EDGE_FLOAT32) {
        d->has_clamp = act != EDGE_ACT_NONE;
        edge_activation_range_float(act, &d->flo, &d->fhi);
        return EDGE_OK;
    }
    if (a->type == EDGE_INT32) {
        /* TFLM's int32 ADD ignores the activation; SUB clamps to the activation's integer bounds */
        d->has_clamp = sign < 0 && act != EDGE_ACT_NONE;
        d->lo = act == EDGE_ACT_RELU_N1_TO_1 ? -1 : 0;
        d->hi = act == EDGE_ACT_RELU ? EDGE_INT32_MAX : act == EDGE_ACT_RELU6 ? 6 : 1;
        return EDGE_OK;
    }
    if (!a->quantized || !b->quantized || !out->quantized)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ADD/SUB: quantized tensors need quantization parameters");
    if (!ea_good_scale(a) || !ea_good_scale(b) || !ea_good_scale(out))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ADD/SUB: scales must be positive and finite");
    {
        const double twice_max = 2.0 * (double)(a->scale > b->scale ? a->scale : b->scale);
        d->left_shift = a->type == EDGE_INT16 ? 15 : 20;
        if (edge_quantize_multiplier((double)a->scale / twice_max, &d->m1, &d->s1) ||
            edge_quantize_multiplier((double)b->scale / twice_max, &d->m2, &d->s2) ||
            edge_quantize_multiplier(twice_max / ((double)(1 << d->left_shift) * (double)out->scale), &d->mo, &d->so))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ADD/SUB: scales give no multiplier");
    }
    d->off1 = -(int64_t)a->zero_point;
    d->off2 = -(int64_t)b->zero_point;
    d->off_out = out->zero_point;
    if (edge_activation_range(act, ea_type_min(a->type), ea_type_max(a->type), out->scale, out->zero_point, &d->lo,
                              &d->hi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "ADD/SUB: fused activation");
    return EDGE_OK;
}

static inline int32_t addsub_q(const addsub_data_t *d, int32_t x1, int32_t x2) {
    const int64_t scale = (int64_t)1 << d->left_shift;
    int32_t v1 = edge_wrap32(((int64_t)x1 + d->off1) * scale);
    int32_t v2 = edge_wrap32(((int64_t)x2 + d->off2) * scale);
    int32_t s1 = ea_mbqm(v1, d->m1, d->s1);
    int32_t s2 = ea_mbqm(v2, d->m2, d->s2);
    int32_t sum = edge_wrap32(d->sign > 0 ? (int64_t)s1 + s2 : (int64_t)s1 - s2);
    return (int32_t)ea_clamp((int64_t)ea_mbqm(sum, d->mo, d->so) + d->off_out, d->lo, d->hi);
}

static void row_int8(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const addsub_data_t *d = (const addsub_data_t *)op;
    const int8_t *x1 = (const int8_t *)a, *x2 = (const int8_t *)b;
    int8_t *o = (int8_t *)y;
    int32_t i;
    for (i = 0; i < n; i++) o[i] = (int8_t)addsub_q(d, x1[i * sa], x2[i * sb]);
}

static void row_int16(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const addsub_data_t *d = (const addsub_data_t *)op;
    const int16_t *x1 = (const int16_t *)a, *x2 = (const int16_t *)b;
    int16_t *o = (int16_t *)y;
    int32_t i;
    for (i = 0; i < n; i++) o[i] = (int16_t)addsub_q(d, x1[i * sa], x2[i * sb]);
}

static void row_float(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const addsub_data_t *d = (const addsub_data_t *)op;
    const float *x1 = (const float *)a, *x2 = (const float *)b;
    float *o = (float *)y;
    int32_t i;
    if (d->sign > 0)
        for (i = 0; i < n; i++) o[i] = x1[i * sa] + x2[i * sb];
    else
        for (i = 0; i < n; i++) o[i] = x1[i * sa] - x2[i * sb];
    if (d->has_clamp)
        for (i = 0; i < n; i++) {
            float v = o[i];
            if (v < d->flo) v = d->flo;
            if (v > d->fhi) v = d->fhi;
            o[i] = v;
        }
}

static void row_int32(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const addsub_data_t *d = (const addsub_data_t *)op;
    const int32_t *x1 = (const int32_t *)a, *x2 = (const int32_t *)b;
    int32_t *o = (int32_t *)y;
    int32_t i;
    for (i = 0; i < n; i++) {
        int32_t v = edge_wrap32(d->sign > 0 ? (int64_t)x1[i * sa] + x2[i * sb] : (int64_t)x1[i * sa] - x2[i * sb]);
        o[i] = d->has_clamp ? (int32_t)ea_clamp(v, d->lo, d->hi) : v;
    }
}

static void edge_addsub_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const addsub_data_t *d = (const addsub_data_t *)node->user_data;
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

edge_status_t edge_prepare_add(edge_node_t *node, edge_ctx_t *ctx) { return edge_addsub_prepare(node, ctx, 1); }

void edge_eval_add(const edge_node_t *node, edge_ctx_t *ctx) { edge_addsub_eval(node, ctx); }

edge_status_t edge_prepare_sub(edge_node_t *node, edge_ctx_t *ctx) { return edge_addsub_prepare(node, ctx, -1); }

void edge_eval_sub(const edge_node_t *node, edge_ctx_t *ctx) { edge_addsub_eval(node, ctx); }
