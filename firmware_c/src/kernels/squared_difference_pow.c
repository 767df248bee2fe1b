/* SQUARED_DIFFERENCE and POW, element-wise with numpy broadcasting up to rank 6, as
 * edge_sdk/runtime/kernels/elementwise.py prepare_squared_difference and math.py prepare_pow.
 *  - SQUARED_DIFFERENCE: FLOAT32 (x - y)^2; INT32 (x - y)^2 wrapping; INT8 / INT16 quantized as TFLM: both
 *    inputs rescaled to twice the larger input scale (int8 with a left shift of 7, int16 zero points 0), the
 *    difference squared in int32 and requantized to the output.
 *  - POW: FLOAT32 powf; INT32 by repeated squaring, wrapping mod 2^32 (numpy's int64 power cast to int32);
 *    a negative integer exponent gives the truncated value (1 for base 1, +-1 for base -1, else 0).
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_binary.h"

EDGE_KERNEL(SQUARED_DIFFERENCE, squared_difference, 2, "FLOAT32 INT8 INT16 INT32", "inputs of one type")
EDGE_KERNEL(POW, pow, 1, "FLOAT32 INT32", "inputs of one type")

typedef struct {
    ea_bcast_t bc;
    int32_t type, left_shift, off1, off2, off_out, qmin, qmax;
    int32_t m1, s1, m2, s2, mo, so;
} sqd_data_t;

edge_status_t edge_prepare_squared_difference(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *a, *b, *out;
    sqd_data_t *d;
    double twice_max;
    const edge_status_t s = eb_prepare_io(node, ctx, sizeof *d, EB_TYPES_ALL, "C kernel runs FLOAT32, INT8, INT16, INT32",
                                          1, &a, &b, &out);
    if (s != EDGE_OK) return s;
    d = (sqd_data_t *)node->user_data;
    d->type = a->type;
    if (d->type != EDGE_INT8 && d->type != EDGE_INT16) return EDGE_OK;
    if (!ea_per_tensor(a) || !ea_per_tensor(b) || !ea_per_tensor(out))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "quantized SQUARED_DIFFERENCE needs per-tensor quantization parameters");
    d->qmin = ea_type_min(d->type);
    d->qmax = ea_type_max(d->type);
    if (d->type == EDGE_INT8) {
        if (a->zero_point < -128 || a->zero_point > 127 || b->zero_point < -128 || b->zero_point > 127 ||
            out->zero_point < -128 || out->zero_point > 127)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "zero point outside the int8 range");
        d->left_shift = 7;
    } else {
        if (a->zero_point || b->zero_point || out->zero_point)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "int16 SQUARED_DIFFERENCE needs zero points of 0");
        d->left_shift = 0;
    }
    twice_max = 2.0 * (double)(a->scale > b->scale ? a->scale : b->scale);
    if (!(twice_max > 0.0) || !(out->scale > 0.0f)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "scales must be positive");
    if (edge_quantize_multiplier((double)a->scale / twice_max, &d->m1, &d->s1) != 0 ||
        edge_quantize_multiplier((double)b->scale / twice_max, &d->m2, &d->s2) != 0 ||
        edge_quantize_multiplier(twice_max * twice_max /
                                      (double)((float)(1 << (2 * d->left_shift)) * out->scale), &d->mo, &d->so) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "scale ratio out of range");
    d->off1 = -a->zero_point;
    d->off2 = -b->zero_point;
    d->off_out = out->zero_point;
    return EDGE_OK;
}

static inline int32_t sqd_q(const sqd_data_t *d, int32_t x1, int32_t x2) {
    const int32_t s1 = ea_mbqm(edge_wrap32((int64_t)(x1 + d->off1) * ((int64_t)1 << d->left_shift)), d->m1, d->s1);
    const int32_t s2 = ea_mbqm(edge_wrap32((int64_t)(x2 + d->off2) * ((int64_t)1 << d->left_shift)), d->m2, d->s2);
    const int32_t diff = edge_wrap32((int64_t)s1 - s2);
    const int64_t v = (int64_t)ea_mbqm(edge_wrap32((int64_t)diff * diff), d->mo, d->so) + d->off_out;
    return (int32_t)ea_clamp(v, d->qmin, d->qmax);
}

static void sqd_f32(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const float *x1 = (const float *)a, *x2 = (const float *)b;
    float *o = (float *)y;
    int32_t i;
    (void)op;
    for (i = 0; i < n; i++) {
        const float v = x1[i * sa] - x2[i * sb];
        o[i] = v * v;
    }
}
static void sqd_i32(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const int32_t *x1 = (const int32_t *)a, *x2 = (const int32_t *)b;
    int32_t *o = (int32_t *)y, i;
    (void)op;
    for (i = 0; i < n; i++) {
        const uint32_t v = (uint32_t)x1[i * sa] - (uint32_t)x2[i * sb];
        o[i] = (int32_t)(v * v);
    }
}
static void sqd_i8(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const int8_t *x1 = (const int8_t *)a, *x2 = (const int8_t *)b;
    int8_t *o = (int8_t *)y;
    int32_t i;
    for (i = 0; i < n; i++) o[i] = (int8_t)sqd_q((const sqd_data_t *)op, x1[i * sa], x2[i * sb]);
}
static void sqd_i16(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const int16_t *x1 = (const int16_t *)a, *x2 = (const int16_t *)b;
    int16_t *o = (int16_t *)y;
    int32_t i;
    for (i = 0; i < n; i++) o[i] = (int16_t)sqd_q((const sqd_data_t *)op, x1[i * sa], x2[i * sb]);
}

void edge_eval_squared_difference(const edge_node_t *node, edge_ctx_t *ctx) {
    const sqd_data_t *d = (const sqd_data_t *)node->user_data;
    const void *a = edge_in(ctx, node, 0)->data, *b = edge_in(ctx, node, 1)->data;
    void *y = edge_out(ctx, node, 0)->data;
    switch (d->type) {
    case EDGE_INT8: ea_bcast_run(&d->bc, d, a, 1, b, 1, y, 1, sqd_i8); break;
    case EDGE_INT16: if (EDGE_WITH_INT16) ea_bcast_run(&d->bc, d, a, 2, b, 2, y, 2, sqd_i16); break;
    case EDGE_INT32: ea_bcast_run(&d->bc, d, a, 4, b, 4, y, 4, sqd_i32); break;
    default: if (EDGE_WITH_FLOAT32) ea_bcast_run(&d->bc, d, a, 4, b, 4, y, 4, sqd_f32); break;
    }
}

edge_status_t edge_prepare_pow(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *a, *b, *out;
    const edge_status_t s = eb_prepare_io(node, ctx, sizeof(sqd_data_t), EB_TYPE(EDGE_FLOAT32) | EB_TYPE(EDGE_INT32),
                                          "C kernel runs FLOAT32, INT32", 1, &a, &b, &out);
    if (s == EDGE_OK) ((sqd_data_t *)node->user_data)->type = a->type;
    return s;
}

static int32_t ipow(int32_t base, int32_t e) {
    uint32_t r = 1u, b = (uint32_t)base;
    if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
    while (e) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return (int32_t)r;
}

static void pow_f32(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const float *x1 = (const float *)a, *x2 = (const float *)b;
    float *o = (float *)y;
    int32_t i;
    (void)op;
    for (i = 0; i < n; i++) o[i] = powf(x1[i * sa], x2[i * sb]);
}
static void pow_i32(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const int32_t *x1 = (const int32_t *)a, *x2 = (const int32_t *)b;
    int32_t *o = (int32_t *)y, i;
    (void)op;
    for (i = 0; i < n; i++) o[i] = ipow(x1[i * sa], x2[i * sb]);
}

void edge_eval_pow(const edge_node_t *node, edge_ctx_t *ctx) {
    const sqd_data_t *d = (const sqd_data_t *)node->user_data;
    const void *a = edge_in(ctx, node, 0)->data, *b = edge_in(ctx, node, 1)->data;
    void *y = edge_out(ctx, node, 0)->data;
    if (d->type == EDGE_INT32) ea_bcast_run(&d->bc, d, a, 4, b, 4, y, 4, pow_i32);
    else if (EDGE_WITH_FLOAT32) ea_bcast_run(&d->bc, d, a, 4, b, 4, y, 4, pow_f32);
}
