/* SQRT, NEG, SQUARE, FLOOR, CEIL, ROUND, SIN, COS and SIGN, element-wise, as edge_sdk/runtime/kernels/math.py:
 * LiteRT's builtins of one float input (EXP and LOG, which also take int8 / int16 tables: exp_log.c).
 *  - SQRT through sqrtf (exact); INT16 (zero points 0, as LiteRT) as LiteRT's elementwise.cc: in float32,
 *    sqrtf(x * input scale) / output scale truncated toward 0 and clamped; a negative input fails the invoke
 *    (EDGE_EVAL_BAD_INPUT), as LiteRT's;
 *  - NEG also INT32 and INT64 (two's complement wrap, as numpy); integer tensors that carry quantization must
 *    share one scale with zero points of 0; INT8 and INT16 as LiteRT's reference Negate: the stored values
 *    negated (wrapping: -(-128) is -128) whatever the quantization says (a zero point is ignored, as LiteRT);
 *  - SQUARE x * x (one rounding: bit-exact), FLOOR floorf, CEIL ceilf (exact);
 *  - ROUND as TFLite's RoundToNearest: floor, then up past .5 and at .5 onto the even neighbour (-0.5 gives
 *    +0.0: floor -1 plus 1), bit-exact;
 *  - SIN, COS sinf / cosf of the C library (glibc's and newlib's are within an ulp of the exact value, as
 *    LiteRT's and TFLM's std::sin);
 *  - SIGN (0 < x) - (x < 0) as LiteRT's (+0.0 for either zero; a NaN passes bit for bit), on FLOAT32, FLOAT64
 *    and INT32.
 * FLOOR, ROUND, SIN and COS also take FLOAT16 (as LiteRT; CEIL does not there): computed on the float value,
 * rounded once to half (edge_half.h, as numpy).
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_half.h"

EDGE_KERNEL(SQRT, sqrt, 2, "FLOAT32 INT16", "INT16: zero points 0; a negative input fails the invoke (LiteRT)")
EDGE_KERNEL(NEG, neg, 1, "FLOAT32 INT8 INT16 INT32 INT64", "INT8 / INT16: stored values negated, quantization ignored (LiteRT)")
EDGE_KERNEL(SQUARE, square, 1, "FLOAT32", "")
EDGE_KERNEL(FLOOR, floor, 1, "FLOAT32 FLOAT16", "")
EDGE_KERNEL(CEIL, ceil, 1, "FLOAT32", "")
EDGE_KERNEL(ROUND, round, 1, "FLOAT32 FLOAT16", "")
EDGE_KERNEL(SIN, sin, 2, "FLOAT32 FLOAT16", "")
EDGE_KERNEL(COS, cos, 2, "FLOAT32 FLOAT16", "")
EDGE_KERNEL(SIGN, sign, 2, "FLOAT32 FLOAT64 INT32", "")

enum { TAKES_FLOAT32 = 0, TAKES_FLOAT16 = 1, TAKES_SIGN_TYPES = 2, TAKES_NEG_TYPES = 3 };

/* One input, one output of its type and shape; FLOAT32, and FLOAT16, SIGN's FLOAT64 and INT32 or NEG's INT32
 * and INT64 as `takes` says. None quantized, but NEG's integers with one scale and zero points 0. */
static edge_status_t float_unary_prepare(edge_node_t *node, edge_ctx_t *ctx, int takes) {
    edge_tensor_t *x, *out;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 && !(takes == TAKES_FLOAT16 && x->type == EDGE_FLOAT16) &&
        !(takes == TAKES_SIGN_TYPES && (x->type == EDGE_FLOAT64 || x->type == EDGE_INT32)) &&
        !(takes == TAKES_NEG_TYPES && (x->type == EDGE_INT8 || x->type == EDGE_INT16 || x->type == EDGE_INT32 ||
                                       x->type == EDGE_INT64)))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE,
                         takes == TAKES_FLOAT16      ? "C kernel runs FLOAT32, FLOAT16"
                         : takes == TAKES_SIGN_TYPES ? "C kernel runs FLOAT32, FLOAT64, INT32"
                         : takes == TAKES_NEG_TYPES  ? "C kernel runs FLOAT32, INT8, INT16, INT32, INT64"
                                                     : "C kernel runs FLOAT32");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (out->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if (takes == TAKES_NEG_TYPES && (x->type == EDGE_INT8 || x->type == EDGE_INT16)) {
        /* LiteRT negates the stored values whatever the quantization says: so do we */
    } else if (takes == TAKES_NEG_TYPES && x->type != EDGE_FLOAT32 && (x->quantized || out->quantized)) {
        if (!(x->quantized && out->quantized && x->scale == out->scale && x->zero_point == 0 && out->zero_point == 0))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "quantized input and output must share a scale with zero point 0");
    } else if (x->quantized || out->quantized)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "takes no quantized tensors");
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

typedef struct {
    float in_scale, out_scale; /* SQRT INT16 */
} sqrt_int16_data_t;

edge_status_t edge_prepare_sqrt(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x = node->n_inputs == 1 ? edge_in(ctx, node, 0) : 0, *out;
    sqrt_int16_data_t *d;
    edge_status_t s;
    node->user_data = 0; /* eval: FLOAT32 */
    if (!x || x->type != EDGE_INT16 || node->n_outputs != 1) return float_unary_prepare(node, ctx, TAKES_FLOAT32);
    out = edge_out(ctx, node, 0);
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (out->type != EDGE_INT16) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if (!x->quantized || !out->quantized || x->zero_point || out->zero_point)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SQRT: INT16 needs quantized tensors with zero points of 0 (LiteRT)");
    d = (sqrt_int16_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->in_scale = x->scale;
    d->out_scale = out->scale;
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

edge_status_t edge_prepare_neg(edge_node_t *node, edge_ctx_t *ctx) { return float_unary_prepare(node, ctx, TAKES_NEG_TYPES); }
edge_status_t edge_prepare_square(edge_node_t *node, edge_ctx_t *ctx) { return float_unary_prepare(node, ctx, TAKES_FLOAT32); }
edge_status_t edge_prepare_floor(edge_node_t *node, edge_ctx_t *ctx) { return float_unary_prepare(node, ctx, TAKES_FLOAT16); }
edge_status_t edge_prepare_ceil(edge_node_t *node, edge_ctx_t *ctx) { return float_unary_prepare(node, ctx, TAKES_FLOAT32); }
edge_status_t edge_prepare_round(edge_node_t *node, edge_ctx_t *ctx) { return float_unary_prepare(node, ctx, TAKES_FLOAT16); }
edge_status_t edge_prepare_sin(edge_node_t *node, edge_ctx_t *ctx) { return float_unary_prepare(node, ctx, TAKES_FLOAT16); }
edge_status_t edge_prepare_cos(edge_node_t *node, edge_ctx_t *ctx) { return float_unary_prepare(node, ctx, TAKES_FLOAT16); }
edge_status_t edge_prepare_sign(edge_node_t *node, edge_ctx_t *ctx) { return float_unary_prepare(node, ctx, TAKES_SIGN_TYPES); }

static float square_f32(float v) { return v * v; }

static float round_half_even_f32(float v) {
    const float floor_v = floorf(v);
    const float diff = v - floor_v; /* exact: v's fractional bits (0 from 2^23 on, NaN for NaN and inf) */
    if (diff < 0.5f || (diff == 0.5f && fmodf(floor_v, 2.0f) == 0.0f)) return floor_v;
    return floor_v + 1.0f;
}

/* FLOAT32 elements through expr. The ops whose prepare takes FLOAT16 add the half loop (FLOAT_UNARY_HALF):
 * the others carry no half conversion code (double arithmetic on a Cortex-M4F is a library call). */
#define FLOAT_UNARY_F32_LOOP(x, out, n, expr)                                                    \
    if (EDGE_WITH_FLOAT32) {                                                                     \
        const float *a = (const float *)(x)->data;                                               \
        float *y = (float *)(out)->data;                                                         \
        int64_t i;                                                                               \
        for (i = 0; i < (n); i++) y[i] = expr(a[i]);                                             \
    }

#define FLOAT_UNARY(name, expr)                                                                  \
    void edge_eval_##name(const edge_node_t *node, edge_ctx_t *ctx) {                            \
        const edge_tensor_t *x = edge_in(ctx, node, 0);                                          \
        edge_tensor_t *out = edge_out(ctx, node, 0);                                             \
        const int64_t n = edge_tensor_elements(out);                                             \
        FLOAT_UNARY_F32_LOOP(x, out, n, expr)                                                    \
    }

/* FLOAT16 elements: the float of each half through expr, rounded to half once */
#define FLOAT_UNARY_HALF(name, expr)                                                             \
    void edge_eval_##name(const edge_node_t *node, edge_ctx_t *ctx) {                            \
        const edge_tensor_t *x = edge_in(ctx, node, 0);                                          \
        edge_tensor_t *out = edge_out(ctx, node, 0);                                             \
        const int64_t n = edge_tensor_elements(out);                                             \
        if (x->type == EDGE_FLOAT16) {                                                           \
            const uint16_t *a = (const uint16_t *)x->data;                                       \
            uint16_t *y = (uint16_t *)out->data;                                                 \
            int64_t i;                                                                           \
            for (i = 0; i < n; i++) y[i] = double_to_half((double)expr(half_to_float(a[i])));    \
        } else {                                                                                 \
            FLOAT_UNARY_F32_LOOP(x, out, n, expr)                                                \
        }                                                                                        \
    }

static void sqrt_int16_eval(const edge_node_t *node, edge_ctx_t *ctx, const sqrt_int16_data_t *d) {
    const int16_t *x = (const int16_t *)edge_in(ctx, node, 0)->data;
    edge_tensor_t *out = edge_out(ctx, node, 0);
    int16_t *y = (int16_t *)out->data;
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    for (i = 0; i < n; i++) {
        float q;
        if (x[i] < 0) {
            EDGE_EVAL_BAD_INPUT(ctx, node, 0, i, x[i], "SQRT of a negative value");
            return;
        }
        q = sqrtf((float)x[i] * d->in_scale) / d->out_scale; /* >= 0: truncation is the cast */
        y[i] = q >= 32767.0f ? (int16_t)32767 : (int16_t)q;
    }
}

static FLOAT_UNARY(sqrt_float, sqrtf)

void edge_eval_sqrt(const edge_node_t *node, edge_ctx_t *ctx) {
    if (EDGE_WITH_INT16 && node->user_data) {
        sqrt_int16_eval(node, ctx, (const sqrt_int16_data_t *)node->user_data);
        return;
    }
    edge_eval_sqrt_float(node, ctx);
}
FLOAT_UNARY(square, square_f32)
FLOAT_UNARY_HALF(floor, floorf)
FLOAT_UNARY(ceil, ceilf)
FLOAT_UNARY_HALF(round, round_half_even_f32)
FLOAT_UNARY_HALF(sin, sinf)
FLOAT_UNARY_HALF(cos, cosf)

void edge_eval_sign(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    if (x->type == EDGE_INT32) {
        const int32_t *a = (const int32_t *)x->data;
        int32_t *y = (int32_t *)out->data;
        for (i = 0; i < n; i++) y[i] = (a[i] > 0) - (a[i] < 0);
    } else if (x->type == EDGE_FLOAT64) {
        const uint8_t *a = (const uint8_t *)x->data; /* 8-byte elements at 4-aligned offsets: memcpy */
        uint8_t *y = (uint8_t *)out->data;
        for (i = 0; i < n; i++) {
            double v;
            memcpy(&v, a + 8 * i, 8);
            if (v == v) v = (double)((v > 0.0) - (v < 0.0));
            memcpy(y + 8 * i, &v, 8);
        }
    } else if (EDGE_WITH_FLOAT32) {
        const float *a = (const float *)x->data;
        float *y = (float *)out->data;
        for (i = 0; i < n; i++) y[i] = a[i] == a[i] ? (float)((a[i] > 0.0f) - (a[i] < 0.0f)) : a[i];
    }
}

void edge_eval_neg(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    if (x->type == EDGE_INT8) {
        const int8_t *a = (const int8_t *)x->data;
        int8_t *y = (int8_t *)out->data;
        for (i = 0; i < n; i++) y[i] = (int8_t)(uint8_t)(0u - (uint8_t)a[i]);
    } else if (x->type == EDGE_INT16) {
        const int16_t *a = (const int16_t *)x->data;
        int16_t *y = (int16_t *)out->data;
        for (i = 0; i < n; i++) y[i] = (int16_t)(uint16_t)(0u - (uint16_t)a[i]);
    } else if (x->type == EDGE_INT32) {
        const uint32_t *a = (const uint32_t *)x->data;
        uint32_t *y = (uint32_t *)out->data;
        for (i = 0; i < n; i++) y[i] = 0u - a[i];
    } else if (x->type == EDGE_INT64) {
        const uint8_t *a = (const uint8_t *)x->data;
        uint8_t *y = (uint8_t *)out->data;
        for (i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, a + 8 * i, 8);
            v = 0u - v;
            memcpy(y + 8 * i, &v, 8);
        }
    } else if (EDGE_WITH_FLOAT32) {
        const float *a = (const float *)x->data;
        float *y = (float *)out->data;
        for (i = 0; i < n; i++) y[i] = -a[i];
    }
}
