/* EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL (one file, six registrations): two inputs of one
 * type, numpy broadcasting up to rank 6, a BOOL output (one byte per element, 0 or 1).
 *
 * As edge_sdk/runtime/kernels/compare.py:
 *  - FLOAT32, INT32, INT64 (BOOL for EQUAL / NOT_EQUAL): the raw values are compared (a NaN compares unequal).
 *  - INT8 with quantization (TFLM comparisons_common.cc): each side is rescaled, ((x - zero_point) << 8)
 *    times the multiplier of its own scale (QuantizeMultiplierSmallerThanOneExp: the scale must lie in (0, 1)),
 *    and the rescaled values are compared.
 *  - INT16: both inputs share one scale and zero point (or have none); the raw values are compared (LiteRT).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(EQUAL, equal, 5, "FLOAT32 INT8 INT16 INT32 INT64 BOOL", "both inputs one type; BOOL output; INT8 input scales below 1")
EDGE_KERNEL(NOT_EQUAL, not_equal, 4, "FLOAT32 INT8 INT16 INT32 INT64 BOOL", "both inputs one type; BOOL output; INT8 input scales below 1")
EDGE_KERNEL(LESS, less, 3, "FLOAT32 INT8 INT16 INT32 INT64", "both inputs one type; BOOL output; INT8 input scales below 1")
EDGE_KERNEL(LESS_EQUAL, less_equal, 2, "FLOAT32 INT8 INT16 INT32 INT64", "both inputs one type; BOOL output; INT8 input scales below 1")
EDGE_KERNEL(GREATER, greater, 2, "FLOAT32 INT8 INT16 INT32 INT64", "both inputs one type; BOOL output; INT8 input scales below 1")
EDGE_KERNEL(GREATER_EQUAL, greater_equal, 3, "FLOAT32 INT8 INT16 INT32 INT64", "both inputs one type; BOOL output; INT8 input scales below 1")

enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE };

typedef struct {
    ea_bcast_t bc;
    int32_t type, kind, scaled;
    int32_t off1, mult1, shift1, off2, mult2, shift2; /* INT8 with quantization */
} cmp_data_t;

static int cmp_scale_ok(const edge_tensor_t *t) { return t->scale > 0.0f && t->scale < 1.0f; }

static edge_status_t cmp_prepare(edge_node_t *node, edge_ctx_t *ctx, int32_t kind) {
    edge_tensor_t *a, *b, *out;
    cmp_data_t *d;
    int32_t shape[8], rank, r, t;
    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "comparison expects 2 inputs and 1 output");
    a = edge_in(ctx, node, 0);
    b = edge_in(ctx, node, 1);
    out = edge_out(ctx, node, 0);
    if (!a || !b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "comparison: both inputs are required");
    t = a->type;
    if (t != EDGE_FLOAT32 && t != EDGE_INT8 && t != EDGE_INT16 && t != EDGE_INT32 && t != EDGE_INT64 &&
        !(t == EDGE_BOOL && (kind == CMP_EQ || kind == CMP_NE)))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE,
                         "comparison: C kernel runs FLOAT32, INT8, INT16, INT32, INT64 (BOOL: EQUAL, NOT_EQUAL)");
    if (b->type != t) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "comparison: inputs have different types");
    if (edge_type_built(ctx, t) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (out->type != EDGE_BOOL) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "comparison: output must be BOOL");
    d = (cmp_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->type = t;
    d->kind = kind;
    if (t == EDGE_INT8 && (a->quantized || b->quantized)) {
        if (!a->quantized || !b->quantized)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "comparison: an int8 input lacks quantization parameters");
        if (!cmp_scale_ok(a) || !cmp_scale_ok(b))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "comparison: int8 input scale not below 1 (TFLM's rule)");
        if (edge_quantize_multiplier((double)a->scale, &d->mult1, &d->shift1) != 0 ||
            edge_quantize_multiplier((double)b->scale, &d->mult2, &d->shift2) != 0)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "comparison: input scale is not finite");
        d->off1 = -(int32_t)a->zero_point;
        d->off2 = -(int32_t)b->zero_point;
        d->scaled = 1;
    }
    if (t == EDGE_INT16 && (a->quantized || b->quantized) &&
        !(a->quantized && b->quantized && a->scale == b->scale && a->zero_point == b->zero_point))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "comparison: int16 inputs need one scale and zero point");
    r = ea_bcast_prepare(&d->bc, a, b, shape, &rank);
    if (r == -1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "comparison: input shapes do not broadcast");
    if (r == -2) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "comparison: broadcasting beyond rank 6");
    if (r == -3) return EDGE_FAIL(ctx, EDGE_LIMIT, "comparison: the broadcast output would hold more than 2^40 elements");
    return edge_set_output_shape(ctx, node, 0, shape, rank);
}

/* One row for element type T: the comparison picked once per row, values loaded by LOAD(pointer, index). */
#define CMP_LOOP(OPR, LOAD)                                                                      \
    for (i = 0; i < n; i++) o[i] = (uint8_t)(LOAD(a, (int64_t)i * sa) OPR LOAD(b, (int64_t)i * sb));
#define CMP_ROW_BODY(LOAD)                                                                       \
    switch (((const cmp_data_t *)op)->kind) {                                                    \
    case CMP_EQ: CMP_LOOP(==, LOAD) break;                                                       \
    case CMP_NE: CMP_LOOP(!=, LOAD) break;                                                       \
    case CMP_LT: CMP_LOOP(<, LOAD) break;                                                        \
    case CMP_LE: CMP_LOOP(<=, LOAD) break;                                                       \
    case CMP_GT: CMP_LOOP(>, LOAD) break;                                                        \
    default: CMP_LOOP(>=, LOAD) break;                                                           \
    }

#define LOAD_F32(p, k) (((const float *)(p))[k])
#define LOAD_I8(p, k) (((const int8_t *)(p))[k])
#define LOAD_I16(p, k) (((const int16_t *)(p))[k])
#define LOAD_I32(p, k) (((const int32_t *)(p))[k])
#define LOAD_BOOL(p, k) (((const uint8_t *)(p))[k] != 0)

static inline int64_t load_i64(const void *p, int64_t k) { /* INT64 data may be only 4-aligned in the model */
    int64_t v;
    memcpy(&v, (const uint8_t *)p + 8 * k, 8);
    return v;
}
#define LOAD_I64(p, k) load_i64((p), (k))

#define CMP_ROW(name, LOAD)                                                                                    \
    static void name(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) { \
        uint8_t *o = (uint8_t *)y;                                                                             \
        int32_t i;                                                                                             \
        CMP_ROW_BODY(LOAD)                                                                                     \
    }

CMP_ROW(row_f32, LOAD_F32)
CMP_ROW(row_i8, LOAD_I8)
CMP_ROW(row_i16, LOAD_I16)
CMP_ROW(row_i32, LOAD_I32)
CMP_ROW(row_i64, LOAD_I64)
CMP_ROW(row_bool, LOAD_BOOL)

/* INT8 with quantization: both sides rescaled first (MultiplyByQuantizedMultiplierSmallerThanOneExp). */
static void row_i8_scaled(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const cmp_data_t *d = (const cmp_data_t *)op;
    const int8_t *x1 = (const int8_t *)a, *x2 = (const int8_t *)b;
    uint8_t *o = (uint8_t *)y;
    int32_t i;
    for (i = 0; i < n; i++) {
        const int32_t u = ea_mbqm((x1[(int64_t)i * sa] + d->off1) * 256, d->mult1, d->shift1);
        const int32_t v = ea_mbqm((x2[(int64_t)i * sb] + d->off2) * 256, d->mult2, d->shift2);
        switch (d->kind) {
        case CMP_EQ: o[i] = (uint8_t)(u == v); break;
        case CMP_NE: o[i] = (uint8_t)(u != v); break;
        case CMP_LT: o[i] = (uint8_t)(u < v); break;
        case CMP_LE: o[i] = (uint8_t)(u <= v); break;
        case CMP_GT: o[i] = (uint8_t)(u > v); break;
        default: o[i] = (uint8_t)(u >= v); break;
        }
    }
}

static void cmp_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const cmp_data_t *d = (const cmp_data_t *)node->user_data;
    const edge_tensor_t *a = edge_in(ctx, node, 0), *b = edge_in(ctx, node, 1);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    ea_row_fn row;
    uint32_t size;
    switch (d->type) {
    case EDGE_INT8: row = d->scaled ? row_i8_scaled : row_i8; size = 1; break;
    case EDGE_BOOL: row = row_bool; size = 1; break;
    case EDGE_INT16: row = EDGE_WITH_INT16 ? row_i16 : row_i8; size = 2; break; /* prepare refused it when 0 */
    case EDGE_INT32: row = row_i32; size = 4; break;
    case EDGE_INT64: row = row_i64; size = 8; break;
    default: row = EDGE_WITH_FLOAT32 ? row_f32 : row_i32; size = 4; break;
    }
    ea_bcast_run(&d->bc, d, a->data, size, b->data, size, out->data, 1, row);
}

edge_status_t edge_prepare_equal(edge_node_t *node, edge_ctx_t *ctx) { return cmp_prepare(node, ctx, CMP_EQ); }
edge_status_t edge_prepare_not_equal(edge_node_t *node, edge_ctx_t *ctx) { return cmp_prepare(node, ctx, CMP_NE); }
edge_status_t edge_prepare_less(edge_node_t *node, edge_ctx_t *ctx) { return cmp_prepare(node, ctx, CMP_LT); }
edge_status_t edge_prepare_less_equal(edge_node_t *node, edge_ctx_t *ctx) { return cmp_prepare(node, ctx, CMP_LE); }
edge_status_t edge_prepare_greater(edge_node_t *node, edge_ctx_t *ctx) { return cmp_prepare(node, ctx, CMP_GT); }
edge_status_t edge_prepare_greater_equal(edge_node_t *node, edge_ctx_t *ctx) { return cmp_prepare(node, ctx, CMP_GE); }
void edge_eval_equal(const edge_node_t *node, edge_ctx_t *ctx) { cmp_eval(node, ctx); }
void edge_eval_not_equal(const edge_node_t *node, edge_ctx_t *ctx) { cmp_eval(node, ctx); }
void edge_eval_less(const edge_node_t *node, edge_ctx_t *ctx) { cmp_eval(node, ctx); }
void edge_eval_less_equal(const edge_node_t *node, edge_ctx_t *ctx) { cmp_eval(node, ctx); }
void edge_eval_greater(const edge_node_t *node, edge_ctx_t *ctx) { cmp_eval(node, ctx); }
void edge_eval_greater_equal(const edge_node_t *node, edge_ctx_t *ctx) { cmp_eval(node, ctx); }
