/* FLOOR_DIV, FLOOR_MOD, ATAN2, BITWISE_XOR, RIGHT_SHIFT (two inputs of one type, broadcast numpy-style through
 * edge_fixedpoint_act.h's coalesced loop, up to rank 6) and ADD_N (n inputs of one shape), as
 * edge_sdk/runtime/kernels/binary_math.py and LiteRT's kernels:
 *  - FLOOR_DIV: float32 floor of the double quotient, rounded to float once; integers the exact floor quotient,
 *    wrapped to the type (int8 -128 / -1 is -128);
 *  - FLOOR_MOD: C's truncated remainder (fmodf for float32), plus the divisor when the signs differ;
 *  - a zero integer divisor gives 0 (LiteRT stops with "Division by 0"; eval here cannot fail), x % -1 is 0;
 *  - ATAN2: atan2f / atan2 of the C library (FLOAT16 through float, rounded to half once);
 *  - BITWISE_XOR: a ^ b; RIGHT_SHIFT: a >> b with b clamped to [0, bits - 1], arithmetic for signed types;
 *  - ADD_N: 2 or more inputs. FLOAT32 / INT32: the sum from 0 in input order (float32 rounding each addition,
 *    infinities kept as TFLM keeps them where LiteRT clamps to +-FLT_MAX; int32 wraps). INT8 as TFLM's add_n.cc
 *    (LiteRT has none): inputs of one scale and zero point, each (q - zp) * 2^20 through a Q31 multiplier of 0.5,
 *    summed from the zero point's own term, rescaled by 2 * scale / (2^20 * output scale), clamped.
 * Integer tensors are plain integers (quantization parameters are not read, as LiteRT).
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"
#include "../edge_half.h"

EDGE_KERNEL(FLOOR_DIV, floor_div, 3, "FLOAT32 INT8 INT16 INT32", "integer division by 0 gives 0")
EDGE_KERNEL(FLOOR_MOD, floor_mod, 2, "FLOAT32 INT8 INT16 INT32 INT64", "integer division by 0 gives 0")
EDGE_KERNEL(ATAN2, atan2, 1, "FLOAT32 FLOAT16 FLOAT64", "")
EDGE_KERNEL(BITWISE_XOR, bitwise_xor, 1, "INT8 UINT8 INT16 UINT16 INT32 UINT32", "")
EDGE_KERNEL(RIGHT_SHIFT, right_shift, 1, "INT8 UINT8 INT16 UINT16 INT32 UINT32", "")
EDGE_KERNEL(ADD_N, add_n, 1, "FLOAT32 INT32 INT8", "inputs of one shape; INT8: one input scale")

enum { OP_FLOOR_DIV, OP_FLOOR_MOD, OP_ATAN2, OP_XOR, OP_RIGHT_SHIFT };

typedef struct {
    ea_bcast_t bc;
    int32_t op, type;
    uint32_t size; /* bytes of one element */
} binary_math_data_t;

static int type_in(int type, const uint8_t *types, int n) {
    int k;
    for (k = 0; k < n; k++)
        if (types[k] == type) return 1;
    return 0;
}

static const uint8_t floor_div_types[] = {EDGE_FLOAT32, EDGE_INT8, EDGE_INT16, EDGE_INT32};
static const uint8_t floor_mod_types[] = {EDGE_FLOAT32, EDGE_INT8, EDGE_INT16, EDGE_INT32, EDGE_INT64};
static const uint8_t atan2_types[] = {EDGE_FLOAT32, EDGE_FLOAT16, EDGE_FLOAT64};
static const uint8_t int_types[] = {EDGE_INT8, EDGE_UINT8, EDGE_INT16, EDGE_UINT16, EDGE_INT32, EDGE_UINT32};

static edge_status_t binary_math_prepare(edge_node_t *node, edge_ctx_t *ctx, int32_t op) {
    static const uint8_t *const types[] = {floor_div_types, floor_mod_types, atan2_types, int_types, int_types};
    static const int n_types[] = {4, 5, 3, 6, 6};
    const edge_tensor_t *a, *b;
    edge_tensor_t *out;
    binary_math_data_t *d;
    int32_t shape[8], rank, r;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    a = edge_in(ctx, node, 0);
    b = edge_in(ctx, node, 1);
    out = edge_out(ctx, node, 0);
    if (!a || !b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "both inputs are required");
    if (!type_in(a->type, types[op], n_types[op]))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE,
                         op == OP_FLOOR_DIV   ? "C kernel runs FLOAT32, INT8, INT16, INT32"
                         : op == OP_FLOOR_MOD ? "C kernel runs FLOAT32, INT8, INT16, INT32, INT64"
                         : op == OP_ATAN2     ? "C kernel runs FLOAT32, FLOAT16, FLOAT64"
                                              : "C kernel runs INT8, UINT8, INT16, UINT16, INT32, UINT32");
    if ((s = edge_type_built(ctx, a->type)) != EDGE_OK) return s;
    if (b->type != a->type || out->type != a->type)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "inputs and output must have one type");
    d = (binary_math_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->op = op;
    d->type = a->type;
    d->size = edge_type_bytes(a->type);
    r = ea_bcast_prepare(&d->bc, a, b, shape, &rank);
    if (r == -1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input shapes do not broadcast");
    if (r == -2) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "broadcasting beyond rank 6");
    if (r == -3) return EDGE_FAIL(ctx, EDGE_LIMIT, "the broadcast output would hold more than 2^40 elements");
    return edge_set_output_shape(ctx, node, 0, shape, rank);
}

/* ---- one pair of elements, by type family ---- */

static int64_t floor_div_int(int64_t x, int64_t y) {
    int64_t q;
    if (y == 0) return 0;
    q = x / y;
    return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}

/* the truncated remainder plus the divisor when their signs differ (int64 with INT64_MIN % -1 as 0) */
static int64_t floor_mod_int(int64_t x, int64_t y) {
    int64_t m;
    if (y == 0 || y == -1) return 0;
    m = x % y;
    return (m != 0 && ((y < 0) != (m < 0))) ? m + y : m;
}

static float floor_mod_f32(float x, float y) {
    const float m = fmodf(x, y);
    return (m != 0.0f && ((y < 0.0f) != (m < 0.0f))) ? m + y : m;
}

/* element i of an integer tensor of `type`, widened (int64 data is only 4-aligned in a model: memcpy) */
static int64_t load_int(const void *p, int type, int64_t i) {
    switch (type) {
    case EDGE_INT8: return ((const int8_t *)p)[i];
    case EDGE_UINT8: return ((const uint8_t *)p)[i];
    case EDGE_INT16: return ((const int16_t *)p)[i];
    case EDGE_UINT16: return ((const uint16_t *)p)[i];
    case EDGE_INT32: return ((const int32_t *)p)[i];
    case EDGE_UINT32: return ((const uint32_t *)p)[i];
    default: {
        int64_t v;
        memcpy(&v, (const uint8_t *)p + 8 * i, 8);
        return v;
    }
    }
}

/* v stored at element i, wrapped to the type's width (two's complement) */
static void store_int(void *p, int type, int64_t i, int64_t v) {
    switch (type) {
    case EDGE_INT8: case EDGE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case EDGE_INT16: case EDGE_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case EDGE_INT32: case EDGE_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: memcpy((uint8_t *)p + 8 * i, &v, 8); break;
    }
}

static int64_t int_op(int32_t op, int type, int64_t x, int64_t y) {
    const int64_t bits = 8 * (int64_t)edge_type_bytes(type);
    switch (op) {
    case OP_FLOOR_DIV: return floor_div_int(x, y);
    case OP_FLOOR_MOD: return floor_mod_int(x, y);
    case OP_XOR: return x ^ y;
    default: /* OP_RIGHT_SHIFT: x is sign- or zero-extended, so the wide shift is the narrow one */
        return x >> (y < 0 ? 0 : (y > bits - 1 ? bits - 1 : y));
    }
}

static void binary_math_row(const void *op_data, const void *a, int32_t sa, const void *b, int32_t sb, void *y,
                            int32_t n) {
    const binary_math_data_t *d = (const binary_math_data_t *)op_data;
    int32_t i;
    if (d->type == EDGE_FLOAT32) {
        const float *x1 = (const float *)a, *x2 = (const float *)b;
        float *o = (float *)y;
        if (d->op == OP_FLOOR_DIV)
            for (i = 0; i < n; i++) o[i] = ea_floor_div_f32(x1[(int64_t)i * sa], x2[(int64_t)i * sb]);
        else if (d->op == OP_FLOOR_MOD)
            for (i = 0; i < n; i++) o[i] = floor_mod_f32(x1[(int64_t)i * sa], x2[(int64_t)i * sb]);
        else
            for (i = 0; i < n; i++) o[i] = atan2f(x1[(int64_t)i * sa], x2[(int64_t)i * sb]);
    } else if (d->type == EDGE_FLOAT16) { /* ATAN2 */
        const uint16_t *x1 = (const uint16_t *)a, *x2 = (const uint16_t *)b;
        uint16_t *o = (uint16_t *)y;
        for (i = 0; i < n; i++)
            o[i] = double_to_half((double)atan2f(half_to_float(x1[(int64_t)i * sa]), half_to_float(x2[(int64_t)i * sb])));
    } else if (d->type == EDGE_FLOAT64) { /* ATAN2; 8-byte elements may sit at 4-aligned model offsets */
        const uint8_t *x1 = (const uint8_t *)a, *x2 = (const uint8_t *)b;
        uint8_t *o = (uint8_t *)y;
        for (i = 0; i < n; i++) {
            double u, v, r;
            memcpy(&u, x1 + 8 * (int64_t)i * sa, 8);
            memcpy(&v, x2 + 8 * (int64_t)i * sb, 8);
            r = atan2(u, v);
            memcpy(o + 8 * (int64_t)i, &r, 8);
        }
    } else {
        for (i = 0; i < n; i++)
            store_int(y, d->type, i,
                      int_op(d->op, d->type, load_int(a, d->type, (int64_t)i * sa), load_int(b, d->type, (int64_t)i * sb)));
    }
}

static void binary_math_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const binary_math_data_t *d = (const binary_math_data_t *)node->user_data;
    ea_bcast_run(&d->bc, d, edge_in(ctx, node, 0)->data, d->size, edge_in(ctx, node, 1)->data, d->size,
                 edge_out(ctx, node, 0)->data, d->size, binary_math_row);
}

edge_status_t edge_prepare_floor_div(edge_node_t *node, edge_ctx_t *ctx) { return binary_math_prepare(node, ctx, OP_FLOOR_DIV); }
edge_status_t edge_prepare_floor_mod(edge_node_t *node, edge_ctx_t *ctx) { return binary_math_prepare(node, ctx, OP_FLOOR_MOD); }
edge_status_t edge_prepare_atan2(edge_node_t *node, edge_ctx_t *ctx) { return binary_math_prepare(node, ctx, OP_ATAN2); }
edge_status_t edge_prepare_bitwise_xor(edge_node_t *node, edge_ctx_t *ctx) { return binary_math_prepare(node, ctx, OP_XOR); }
edge_status_t edge_prepare_right_shift(edge_node_t *node, edge_ctx_t *ctx) { return binary_math_prepare(node, ctx, OP_RIGHT_SHIFT); }
void edge_eval_floor_div(const edge_node_t *node, edge_ctx_t *ctx) { binary_math_eval(node, ctx); }
void edge_eval_floor_mod(const edge_node_t *node, edge_ctx_t *ctx) { binary_math_eval(node, ctx); }
void edge_eval_atan2(const edge_node_t *node, edge_ctx_t *ctx) { binary_math_eval(node, ctx); }
void edge_eval_bitwise_xor(const edge_node_t *node, edge_ctx_t *ctx) { binary_math_eval(node, ctx); }
void edge_eval_right_shift(const edge_node_t *node, edge_ctx_t *ctx) { binary_math_eval(node, ctx); }

/* ---------------------------------------------------------------------------------------------------- ADD_N */

enum { ADD_N_INTEGER_SHIFT = 20 }; /* TFLM's kAddNIntegerShift */

typedef struct {
    int32_t input_offset, output_offset;
    int32_t input_multiplier, input_shift, output_multiplier, output_shift;
} add_n_data_t;

edge_status_t edge_prepare_add_n(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *first;
    edge_tensor_t *out;
    int32_t i, k;
    edge_status_t s;
    if (node->n_inputs < 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 or more inputs and 1 output");
    first = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!first) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "every input is required");
    if (first->type != EDGE_FLOAT32 && first->type != EDGE_INT32 && first->type != EDGE_INT8)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT32, INT8");
    if ((s = edge_type_built(ctx, first->type)) != EDGE_OK) return s;
    for (i = 1; i < node->n_inputs; i++) {
        const edge_tensor_t *t = edge_in(ctx, node, i);
        if (!t) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "every input is required");
        if (t->type != first->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "inputs differ in type");
        if (t->rank != first->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "inputs differ in shape");
        for (k = 0; k < t->rank; k++)
            if (t->dims[k] != first->dims[k]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "inputs differ in shape");
        if (first->type == EDGE_INT8 &&
            !(t->quantized && t->scale == first->scale && t->zero_point == first->zero_point))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "int8 inputs need one scale and zero point");
    }
    if (out->type != first->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if (first->type == EDGE_INT8) {
        add_n_data_t *d;
        double twice_input_scale, real_output;
        if ((s = ea_unary_quantized(ctx, first, out)) != EDGE_OK) return s;
        d = (add_n_data_t *)edge_alloc_persistent(ctx, sizeof *d);
        if (!d) return EDGE_ARENA_TOO_SMALL;
        node->user_data = d;
        twice_input_scale = 2.0 * (double)first->scale;
        real_output = twice_input_scale / ((double)(1 << ADD_N_INTEGER_SHIFT) * (double)out->scale);
        if (!(real_output < 1.0)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "output scale too small for the input scale");
        if (edge_quantize_multiplier((double)first->scale / twice_input_scale, &d->input_multiplier, &d->input_shift) ||
            edge_quantize_multiplier(real_output, &d->output_multiplier, &d->output_shift))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "scales give no multiplier");
        d->input_offset = -first->zero_point;
        d->output_offset = out->zero_point;
    }
    return edge_set_output_shape(ctx, node, 0, first->dims, first->rank);
}

void edge_eval_add_n(const edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(out);
    int64_t e;
    int32_t i;
    /* element by element, the sum from 0 (0 + -0.0 is +0.0, as the reference's) */
    if (out->type == EDGE_INT8) {
        const add_n_data_t *d = (const add_n_data_t *)node->user_data;
        const int32_t offset_term = ea_mbqm(d->input_offset * (1 << ADD_N_INTEGER_SHIFT), d->input_multiplier, d->input_shift);
        int8_t *y = (int8_t *)out->data;
        for (e = 0; e < n; e++) {
            int32_t acc = offset_term;
            for (i = 0; i < node->n_inputs; i++) {
                const int32_t q = ((const int8_t *)edge_in(ctx, node, i)->data)[e];
                acc = ea_add(acc, ea_mbqm((q + d->input_offset) * (1 << ADD_N_INTEGER_SHIFT), d->input_multiplier,
                                          d->input_shift));
            }
            y[e] = (int8_t)ea_clamp((int64_t)ea_mbqm(acc, d->output_multiplier, d->output_shift) + d->output_offset, -128,
                                    127);
        }
    } else if (out->type == EDGE_INT32) {
        uint32_t *y = (uint32_t *)out->data;
        for (e = 0; e < n; e++) {
            uint32_t acc = 0;
            for (i = 0; i < node->n_inputs; i++) acc += ((const uint32_t *)edge_in(ctx, node, i)->data)[e];
            y[e] = acc;
        }
    } else if (EDGE_WITH_FLOAT32) {
        float *y = (float *)out->data;
        for (e = 0; e < n; e++) {
            float acc = 0.0f;
            for (i = 0; i < node->n_inputs; i++) acc += ((const float *)edge_in(ctx, node, i)->data)[e];
            y[e] = acc;
        }
    }
}
