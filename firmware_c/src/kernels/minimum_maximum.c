/* MINIMUM and MAXIMUM (one file, two registrations): element-wise with numpy broadcasting up to rank 6.
 *
 * As edge_sdk/runtime/kernels/elementwise.py prepare_minimum / prepare_maximum: FLOAT32, INT8, INT16, INT32, INT64,
 * both inputs and the output of one type; the raw values are compared (quantized operands are taken to share
 * their quantization, as TFLM's kernel does). The pick is `a < b ? a : b` (`a > b ? a : b`), numpy's
 * where(x < y, x, y): a NaN in a gives b.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(MINIMUM, minimum, 4, "FLOAT32 INT8 INT16 INT32 INT64", "inputs of one type")
EDGE_KERNEL(MAXIMUM, maximum, 4, "FLOAT32 INT8 INT16 INT32 INT64", "inputs of one type")

typedef struct {
    ea_bcast_t bc;
    int32_t type, is_max;
} minmax_data_t;

static edge_status_t minmax_prepare(edge_node_t *node, edge_ctx_t *ctx, int32_t is_max) {
    edge_tensor_t *a, *b, *out;
    minmax_data_t *d;
    int32_t shape[8], rank, r;
    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MINIMUM/MAXIMUM expects 2 inputs and 1 output");
    a = edge_in(ctx, node, 0);
    b = edge_in(ctx, node, 1);
    out = edge_out(ctx, node, 0);
    if (!a || !b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MINIMUM/MAXIMUM: both inputs are required");
    if (a->type != EDGE_FLOAT32 && a->type != EDGE_INT8 && a->type != EDGE_INT16 && a->type != EDGE_INT32 &&
        a->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "MINIMUM/MAXIMUM: C kernel runs FLOAT32, INT8, INT16, INT32, INT64");
    if (b->type != a->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "MINIMUM/MAXIMUM: inputs have different types");
    if (edge_type_built(ctx, a->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (out->type != a->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "MINIMUM/MAXIMUM: output type differs from input");
    d = (minmax_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->type = a->type;
    d->is_max = is_max;
    r = ea_bcast_prepare(&d->bc, a, b, shape, &rank);
    if (r == -1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MINIMUM/MAXIMUM: input shapes do not broadcast");
    if (r == -2) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MINIMUM/MAXIMUM: broadcasting beyond rank 6");
    if (r == -3) return EDGE_FAIL(ctx, EDGE_LIMIT, "MINIMUM/MAXIMUM: the broadcast output would hold more than 2^40 elements");
    return edge_set_output_shape(ctx, node, 0, shape, rank);
}

#define MINMAX_ROW(name, T)                                                                                 \
    static void name(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) { \
        const T *x1 = (const T *)a, *x2 = (const T *)b;                                                     \
        T *o = (T *)y;                                                                                      \
        int32_t i;                                                                                          \
        if (((const minmax_data_t *)op)->is_max)                                                            \
            for (i = 0; i < n; i++) { T u = x1[i * sa], v = x2[i * sb]; o[i] = u > v ? u : v; }             \
        else                                                                                                \
            for (i = 0; i < n; i++) { T u = x1[i * sa], v = x2[i * sb]; o[i] = u < v ? u : v; }             \
    }

MINMAX_ROW(row_f32, float)
MINMAX_ROW(row_i8, int8_t)
MINMAX_ROW(row_i16, int16_t)
MINMAX_ROW(row_i32, int32_t)

/* INT64 data may be only 4-aligned in the model: read and write through memcpy */
static void row_i64(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const uint8_t *x1 = (const uint8_t *)a, *x2 = (const uint8_t *)b;
    uint8_t *o = (uint8_t *)y;
    const int32_t is_max = ((const minmax_data_t *)op)->is_max;
    int32_t i;
    for (i = 0; i < n; i++) {
        int64_t u, v, w;
        memcpy(&u, x1 + 8 * (int64_t)i * sa, 8);
        memcpy(&v, x2 + 8 * (int64_t)i * sb, 8);
        w = is_max ? (u > v ? u : v) : (u < v ? u : v);
        memcpy(o + 8 * (int64_t)i, &w, 8);
    }
}

static void minmax_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const minmax_data_t *d = (const minmax_data_t *)node->user_data;
    const edge_tensor_t *a = edge_in(ctx, node, 0), *b = edge_in(ctx, node, 1);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    ea_row_fn row;
    uint32_t size;
    switch (d->type) {
    case EDGE_INT8: row = row_i8; size = 1; break;
    case EDGE_INT16: row = EDGE_WITH_INT16 ? row_i16 : row_i8; size = 2; break; /* prepare refused it when 0 */
    case EDGE_INT32: row = row_i32; size = 4; break;
    case EDGE_INT64: row = row_i64; size = 8; break;
    default: row = EDGE_WITH_FLOAT32 ? row_f32 : row_i32; size = 4; break;
    }
    ea_bcast_run(&d->bc, d, a->data, size, b->data, size, out->data, size, row);
}

edge_status_t edge_prepare_minimum(edge_node_t *node, edge_ctx_t *ctx) { return minmax_prepare(node, ctx, 0); }
edge_status_t edge_prepare_maximum(edge_node_t *node, edge_ctx_t *ctx) { return minmax_prepare(node, ctx, 1); }
void edge_eval_minimum(const edge_node_t *node, edge_ctx_t *ctx) { minmax_eval(node, ctx); }
void edge_eval_maximum(const edge_node_t *node, edge_ctx_t *ctx) { minmax_eval(node, ctx); }
