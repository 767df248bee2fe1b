/* ARG_MAX, ARG_MIN, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ANY and REDUCE_ALL, as
 * edge_sdk/runtime/kernels/reduce.py.
 *  - ARG_MAX / ARG_MIN: over one constant axis (INT32 / INT64, one value), output INT32 / INT64; the first
 *    extreme wins (a plain '>' / '<' as TFLM: a NaN never replaces the running extreme, a leading NaN's index 0
 *    stands). Inputs FLOAT32, INT8, UINT8, INT16, INT32, BOOL.
 *  - REDUCE_MAX: over constant axes (duplicates and negatives allowed; keep_dims from ReducerOptions), FLOAT32
 *    (a NaN propagates, as numpy's max), INT8 / UINT8 / INT16 (quantized input and output equal), INT32, INT64,
 *    BOOL (any: LiteRT's ReduceGeneric takes it); an empty input gives the type's lowest value. One pass over the input, each element folded into its output.
 *  - REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL (LiteRT reduce.cc's ReduceGeneric; TFLM has REDUCE_MIN
 *    float32 / int8): over constant INT32 axes, each output starts at the fold's initial value (MIN: the type's
 *    numeric maximum, FLT_MAX for float32; PROD: 1; ANY: false; ALL: true) and takes the elements of its block
 *    in the input's row-major order: MIN keeps 'in < current ? in : current' (a NaN never wins, +inf leaves
 *    FLT_MAX), PROD multiplies (integers wrap), ANY / ALL or / and BOOL values. MIN's quantized INT8 / UINT8 /
 *    INT16 need equal input and output quantization. Quantized INT8 / INT16 PROD (LiteRT's QuantizedReduceProd):
 *    the first value minus the zero point, then acc = mbqm64(acc * (q - zp)) with the multiplier of
 *    input_scale / output_scale^(1/n), a last mbqm64 of acc, plus the output zero point, clamped (n factors of
 *    the multiplier in all); its int32 accumulators live in scratch. INT16 needs zero points 0 (LiteRT).
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(ARG_MAX, arg_max, 3, "FLOAT32 INT8 UINT8 INT16 INT32 BOOL", "INT32/INT64 output and axis")
EDGE_KERNEL(REDUCE_MAX, reduce_max, 3, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "")
EDGE_KERNEL(ARG_MIN, arg_min, 3, "FLOAT32 INT8 UINT8 INT16 INT32 BOOL", "INT32/INT64 output and axis")
EDGE_KERNEL(REDUCE_MIN, reduce_min, 3, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "INT32 axis; quantized: input and output equal")
EDGE_KERNEL(REDUCE_PROD, reduce_prod, 2, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "INT32 axis; UINT8 not quantized")
EDGE_KERNEL(REDUCE_ANY, reduce_any, 1, "BOOL", "INT32 axis")
EDGE_KERNEL(REDUCE_ALL, reduce_all, 1, "BOOL", "INT32 axis")


typedef struct {
    int64_t outer, n, inner;
} argmax_data_t;

static edge_status_t arg_prepare(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *a, *y;
    argmax_data_t *d;
    int32_t axis, k, r = 0, shape[EDGE_INDEX_MAX_RANK];
    int t;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    a = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !a) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and axis are required");
    t = x->type;
    if (t != EDGE_FLOAT32 && t != EDGE_INT8 && t != EDGE_UINT8 && t != EDGE_INT16 && t != EDGE_INT32 && t != EDGE_BOOL)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, BOOL");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != EDGE_INT32 && y->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be INT32 or INT64");
    if ((s = edge_const_axis(ctx, a, x->rank, 0, 1, &axis)) != EDGE_OK) return s;
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    if (x->dims[axis] == 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ARG_MAX / ARG_MIN over an empty dimension");
    d = (argmax_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->outer = d->inner = 1;
    for (k = 0; k < x->rank; k++) {
        if (k < axis) d->outer *= x->dims[k];
        if (k > axis) d->inner *= x->dims[k];
        if (k != axis) shape[r++] = x->dims[k];
    }
    d->n = x->dims[axis];
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, r);
}

edge_status_t edge_prepare_arg_max(edge_node_t *node, edge_ctx_t *ctx) { return arg_prepare(node, ctx); }
edge_status_t edge_prepare_arg_min(edge_node_t *node, edge_ctx_t *ctx) { return arg_prepare(node, ctx); }

#define ARGMAX_LOOP(T, BETTER)                                                               \
    do {                                                                                     \
        const T *v = (const T *)x->data;                                                     \
        for (o = 0; o < d->outer; o++)                                                       \
            for (i = 0; i < d->inner; i++) {                                                 \
                const T *p = v + o * d->n * d->inner + i;                                    \
                T best = p[0];                                                               \
                int64_t at = 0, j;                                                           \
                for (j = 1; j < d->n; j++)                                                   \
                    if (BETTER(p[j * d->inner], best)) { best = p[j * d->inner]; at = j; }   \
                if (y->type == EDGE_INT32) ((int32_t *)y->data)[o * d->inner + i] = (int32_t)at; \
                else memcpy((uint8_t *)y->data + 8 * (o * d->inner + i), &at, 8);           \
            }                                                                                \
    } while (0)

/* the first extreme wins: a strict comparison, '<' for ARG_MIN, '>' for ARG_MAX (NaN never replaces) */
#define ARG_BETTER(a, b) (want_min ? (a) < (b) : (a) > (b))

static void arg_eval(const edge_node_t *node, edge_ctx_t *ctx, int want_min) {
    const argmax_data_t *d = (const argmax_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    int64_t o, i;
    switch (x->type) {
    case EDGE_INT8: ARGMAX_LOOP(int8_t, ARG_BETTER); break;
    case EDGE_UINT8: case EDGE_BOOL: ARGMAX_LOOP(uint8_t, ARG_BETTER); break;
    case EDGE_INT16: ARGMAX_LOOP(int16_t, ARG_BETTER); break;
    case EDGE_INT32: ARGMAX_LOOP(int32_t, ARG_BETTER); break;
    default: if (EDGE_WITH_FLOAT32) ARGMAX_LOOP(float, ARG_BETTER); break;
    }
}

void edge_eval_arg_max(const edge_node_t *node, edge_ctx_t *ctx) { arg_eval(node, ctx, 0); }
void edge_eval_arg_min(const edge_node_t *node, edge_ctx_t *ctx) { arg_eval(node, ctx, 1); }
#undef ARG_BETTER
#undef ARGMAX_LOOP

typedef struct {
    int32_t rank;
    int32_t dims[EDGE_INDEX_MAX_RANK];
    int64_t out_step[EDGE_INDEX_MAX_RANK]; /* output elements per unit of input index k (0: reduced) */
} rmax_data_t;

static edge_status_t fold_geometry(edge_node_t *node, edge_ctx_t *ctx, const edge_tensor_t *x, const edge_tensor_t *a,
                                   size_t bytes);

edge_status_t edge_prepare_reduce_max(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *a, *y;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    a = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !a) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and axis are required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_UINT8 && x->type != EDGE_INT16 &&
        x->type != EDGE_INT32 && x->type != EDGE_INT64 && x->type != EDGE_BOOL)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if ((x->type == EDGE_INT8 || x->type == EDGE_UINT8 || x->type == EDGE_INT16) && x->quantized &&
        (!y->quantized || x->scale != y->scale || x->zero_point != y->zero_point))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input and output quantization differ (TFLM requires them equal)");
    if (a->type != EDGE_INT32 && a->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "axis must be INT32 or INT64");
    return fold_geometry(node, ctx, x, a, sizeof(rmax_data_t));
}

/* The reductions' shared prepare tail: the axes (constant; duplicates and negatives resolved), keep_dims, the
 * output shape and the per-dimension output steps of the one-pass fold, in `bytes` of op data that start with an
 * rmax_data_t (node->user_data). */
static edge_status_t fold_geometry(edge_node_t *node, edge_ctx_t *ctx, const edge_tensor_t *x, const edge_tensor_t *a,
                                   size_t bytes) {
    rmax_data_t *d;
    int32_t k, r = 0, shape[EDGE_INDEX_MAX_RANK], keep;
    uint32_t reduced = 0;
    int64_t step = 1, n;
    if (!a->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "axis computed at run time");
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    n = edge_tensor_elements(a);
    for (k = 0; k < n; k++) {
        int64_t v = edge_const_int(a, k);
        if (v < 0) v += x->rank;
        if (v < 0 || v >= (x->rank > 1 ? x->rank : 1)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "axis out of range");
        if (x->rank) reduced |= 1u << v;
    }
    keep = node->options_type == EDGE_OPTS_ReducerOptions ? edge_opt_int(node, 0, 1, 0) != 0 : 0;
    d = (rmax_data_t *)edge_alloc_persistent(ctx, bytes);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->rank = x->rank;
    for (k = x->rank - 1; k >= 0; k--) {
        d->dims[k] = x->dims[k];
        d->out_step[k] = ((reduced >> k) & 1) ? 0 : step;
        if (!((reduced >> k) & 1)) step *= x->dims[k];
    }
    for (k = 0; k < x->rank; k++) {
        if (!((reduced >> k) & 1)) shape[r++] = x->dims[k];
        else if (keep) shape[r++] = 1;
    }
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, r);
}

/* One pass over the input in row-major order: each element folded into its output, o = STEP(o, v). */
#define FOLD_LOOP(T, init, STEP)                                                             \
    do {                                                                                     \
        const T *v = (const T *)x->data;                                                     \
        T *o = (T *)y->data;                                                                 \
        for (j = 0; j < m; j++) o[j] = init;                                                 \
        if (count == 0) break;                                                               \
        for (e = 0; e < count; e++) {                                                        \
            o[pos] = STEP(o[pos], v[e]);                                                     \
            for (k = g->rank - 1; k >= 0; k--) {                                             \
                pos += g->out_step[k];                                                       \
                if (++idx[k] < g->dims[k]) break;                                            \
                pos -= g->out_step[k] * g->dims[k];                                          \
                idx[k] = 0;                                                                  \
            }                                                                                \
        }                                                                                    \
    } while (0)

/* REDUCE_MAX: a larger value replaces; for float32 a NaN replaces too (and then stays: numpy's max) */
#define FOLD_MAX(c, in) ((in) > (c) ? (in) : (c))
#define FOLD_MAX_NAN(c, in) (((in) > (c) || ((in) != (in) && (c) == (c))) ? (in) : (c))

void edge_eval_reduce_max(const edge_node_t *node, edge_ctx_t *ctx) {
    const rmax_data_t *g = (const rmax_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int64_t count = edge_tensor_elements(x), m = edge_tensor_elements(y);
    int32_t idx[EDGE_INDEX_MAX_RANK] = {0}, k;
    int64_t e, j, pos = 0;
    switch (x->type) {
    case EDGE_INT8: FOLD_LOOP(int8_t, -128, FOLD_MAX); break;
    case EDGE_UINT8: FOLD_LOOP(uint8_t, 0, FOLD_MAX); break;
    case EDGE_BOOL: FOLD_LOOP(uint8_t, 0, FOLD_MAX); break;
    case EDGE_INT16: if (EDGE_WITH_INT16) FOLD_LOOP(int16_t, -32768, FOLD_MAX); break;
    case EDGE_INT32: FOLD_LOOP(int32_t, INT32_MIN, FOLD_MAX); break;
    case EDGE_INT64: FOLD_LOOP(int64_t, INT64_MIN, FOLD_MAX); break;
    default: if (EDGE_WITH_FLOAT32) FOLD_LOOP(float, -INFINITY, FOLD_MAX_NAN); break;
    }
}


/* ---- REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL ---- */

typedef struct {
    rmax_data_t g;                  /* the fold's geometry (fold_geometry) */
    int32_t quantized;              /* REDUCE_PROD on quantized INT8 / INT16 */
    int32_t multiplier, shift, in_zp, out_zp, lo, hi;
    int32_t acc_scratch;            /* int32 accumulator per output element (quantized REDUCE_PROD) */
} fold_data_t;

/* The checks every new reduction shares: 2 inputs, 1 output of the input's type, a constant INT32 axis, the types
 * `ok` of this op, INT16 zero points 0 (LiteRT). */
static edge_status_t fold_prepare(edge_node_t *node, edge_ctx_t *ctx, int ok) {
    const edge_tensor_t *x, *a, *y;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    a = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !a) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and axis are required");
    if (!ok) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "input type not taken by this reduction");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if (a->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "axis must be INT32");
    if (x->type == EDGE_INT16 && ((x->quantized && x->zero_point != 0) || (y->quantized && y->zero_point != 0)))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "INT16 needs zero points 0");
    return fold_geometry(node, ctx, x, a, sizeof(fold_data_t));
}

static int fold_numeric_type(int t) {
    return t == EDGE_FLOAT32 || t == EDGE_INT8 || t == EDGE_UINT8 || t == EDGE_INT16 || t == EDGE_INT32 ||
           t == EDGE_INT64 || t == EDGE_BOOL;
}

edge_status_t edge_prepare_reduce_min(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0), *y = edge_out(ctx, node, 0);
    edge_status_t s = fold_prepare(node, ctx, x && fold_numeric_type(x->type));
    if (s != EDGE_OK) return s;
    if ((x->type == EDGE_INT8 || x->type == EDGE_UINT8 || x->type == EDGE_INT16) && (x->quantized || y->quantized) &&
        (!x->quantized || !y->quantized || x->scale != y->scale || x->zero_point != y->zero_point))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input and output quantization differ (LiteRT and TFLM require them equal)");
    return EDGE_OK;
}

edge_status_t edge_prepare_reduce_prod(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0), *y = edge_out(ctx, node, 0);
    fold_data_t *d;
    int64_t n, m;
    edge_status_t s = fold_prepare(node, ctx, x && fold_numeric_type(x->type));
    if (s != EDGE_OK) return s;
    if (x->type == EDGE_UINT8 && x->quantized)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "a quantized UINT8 product (LiteRT takes quantized INT8 and INT16 only)");
    d = (fold_data_t *)node->user_data;
    if (!((x->type == EDGE_INT8 || x->type == EDGE_INT16) && x->quantized) || edge_tensor_elements(x) == 0) return EDGE_OK;
    if (!y->quantized) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "a quantized REDUCE_PROD needs a quantized output");
    if (x->n_scales > 1 || y->n_scales > 1) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "per-channel quantization on a reduction");
    m = edge_tensor_elements(y);
    n = edge_tensor_elements(x) / m;
    /* each of the n steps scales by input_scale / output_scale^(1/n): the product of n factors ends at
     * input_scale^n / output_scale without leaving int32 on the way */
    if (edge_quantize_multiplier((double)x->scale / pow((double)y->scale, 1.0 / (double)n), &d->multiplier, &d->shift) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "product scale out of range");
    d->quantized = 1;
    d->in_zp = x->zero_point;
    d->out_zp = y->zero_point;
    d->lo = x->type == EDGE_INT8 ? -128 : -32768;
    d->hi = x->type == EDGE_INT8 ? 127 : 32767;
    return edge_request_scratch(ctx, node, (size_t)m * sizeof(int32_t), &d->acc_scratch);
}

edge_status_t edge_prepare_reduce_any(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    return fold_prepare(node, ctx, x && x->type == EDGE_BOOL);
}

edge_status_t edge_prepare_reduce_all(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    return fold_prepare(node, ctx, x && x->type == EDGE_BOOL);
}

#define FOLD_MIN(c, in) ((in) < (c) ? (in) : (c))
/* integer products wrap (through the unsigned type: no signed overflow) */
#define FOLD_MUL_I8(c, in) ((int8_t)(uint8_t)((uint32_t)(int32_t)(c) * (uint32_t)(int32_t)(in)))
#define FOLD_MUL_U8(c, in) ((uint8_t)((uint32_t)(c) * (uint32_t)(in)))
#define FOLD_MUL_I16(c, in) ((int16_t)(uint16_t)((uint32_t)(int32_t)(c) * (uint32_t)(int32_t)(in)))
#define FOLD_MUL_I32(c, in) ((int32_t)((uint32_t)(c) * (uint32_t)(in)))
#define FOLD_MUL_I64(c, in) ((int64_t)((uint64_t)(c) * (uint64_t)(in)))
#define FOLD_MUL_F(c, in) ((c) * (in))
#define FOLD_AND(c, in) ((uint8_t)((c) && (in)))
#define FOLD_OR(c, in) ((uint8_t)((c) || (in)))

#define FOLD_EVAL_HEAD                                                                       \
    const fold_data_t *d = (const fold_data_t *)node->user_data;                             \
    const rmax_data_t *g = &d->g;                                                            \
    const edge_tensor_t *x = edge_in(ctx, node, 0);                                          \
    edge_tensor_t *y = edge_out(ctx, node, 0);                                               \
    const int64_t count = edge_tensor_elements(x), m = edge_tensor_elements(y);              \
    int32_t idx[EDGE_INDEX_MAX_RANK] = {0}, k;                                               \
    int64_t e, j, pos = 0

void edge_eval_reduce_min(const edge_node_t *node, edge_ctx_t *ctx) {
    FOLD_EVAL_HEAD;
    switch (x->type) {
    case EDGE_INT8: FOLD_LOOP(int8_t, 127, FOLD_MIN); break;
    case EDGE_UINT8: FOLD_LOOP(uint8_t, 255, FOLD_MIN); break;
    case EDGE_BOOL: FOLD_LOOP(uint8_t, 1, FOLD_MIN); break;
    case EDGE_INT16: if (EDGE_WITH_INT16) FOLD_LOOP(int16_t, 32767, FOLD_MIN); break;
    case EDGE_INT32: FOLD_LOOP(int32_t, INT32_MAX, FOLD_MIN); break;
    case EDGE_INT64: FOLD_LOOP(int64_t, INT64_MAX, FOLD_MIN); break;
    default: if (EDGE_WITH_FLOAT32) FOLD_LOOP(float, FLT_MAX, FOLD_MIN); break;
    }
}

/* Quantized REDUCE_PROD: the block's first value minus the zero point (all reduced indices 0), then
 * acc = mbqm64(acc * (q - zp)) per further value; a last mbqm64, plus the output zero point, clamped. */
static void prod_quantized(const fold_data_t *d, const edge_node_t *node, edge_ctx_t *ctx, const edge_tensor_t *x,
                           edge_tensor_t *y, int64_t count, int64_t m) {
    const rmax_data_t *g = &d->g;
    int32_t *acc = (int32_t *)edge_scratch(ctx, node, d->acc_scratch);
    int32_t idx[EDGE_INDEX_MAX_RANK] = {0}, k;
    int64_t e, j, pos = 0;
    for (e = 0; e < count; e++) {
        int32_t q = (x->type == EDGE_INT8 ? ((const int8_t *)x->data)[e] : ((const int16_t *)x->data)[e]) - d->in_zp;
        int first = 1;
        for (k = 0; k < g->rank; k++)
            if (g->out_step[k] == 0 && idx[k] != 0) first = 0;
        acc[pos] = first ? q : edge_mbqm64((int64_t)acc[pos] * q, d->multiplier, d->shift);
        for (k = g->rank - 1; k >= 0; k--) {
            pos += g->out_step[k];
            if (++idx[k] < g->dims[k]) break;
            pos -= g->out_step[k] * g->dims[k];
            idx[k] = 0;
        }
    }
    for (j = 0; j < m; j++) {
        int32_t v = edge_clamp32(edge_mbqm64(acc[j], d->multiplier, d->shift) + d->out_zp, d->lo, d->hi);
        if (x->type == EDGE_INT8) ((int8_t *)y->data)[j] = (int8_t)v;
        else ((int16_t *)y->data)[j] = (int16_t)v;
    }
}

void edge_eval_reduce_prod(const edge_node_t *node, edge_ctx_t *ctx) {
    FOLD_EVAL_HEAD;
    if (d->quantized) {
        prod_quantized(d, node, ctx, x, y, count, m);
        return;
    }
    switch (x->type) {
    case EDGE_INT8: FOLD_LOOP(int8_t, 1, FOLD_MUL_I8); break;
    case EDGE_UINT8: FOLD_LOOP(uint8_t, 1, FOLD_MUL_U8); break;
    case EDGE_BOOL: FOLD_LOOP(uint8_t, 1, FOLD_AND); break;
    case EDGE_INT16: if (EDGE_WITH_INT16) FOLD_LOOP(int16_t, 1, FOLD_MUL_I16); break;
    case EDGE_INT32: FOLD_LOOP(int32_t, 1, FOLD_MUL_I32); break;
    case EDGE_INT64: FOLD_LOOP(int64_t, 1, FOLD_MUL_I64); break;
    default: if (EDGE_WITH_FLOAT32) FOLD_LOOP(float, 1.0f, FOLD_MUL_F); break;
    }
}

void edge_eval_reduce_any(const edge_node_t *node, edge_ctx_t *ctx) {
    FOLD_EVAL_HEAD;
    FOLD_LOOP(uint8_t, 0, FOLD_OR);
}

void edge_eval_reduce_all(const edge_node_t *node, edge_ctx_t *ctx) {
    FOLD_EVAL_HEAD;
    FOLD_LOOP(uint8_t, 1, FOLD_AND);
}
