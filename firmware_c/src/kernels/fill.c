/* ZEROS_LIKE, FILL, RANGE and RANK: outputs whose values do not come from the data input's values, as
 * edge_sdk/runtime/kernels/fill.py (LiteRT's zeros_like.cc, fill.cc, range.cc, rank.cc).
 *  - ZEROS_LIKE: zero bytes of the input's type and shape (FLOAT32, INT32, INT64; INT8 as TFLM, 0 whatever the
 *    zero point).
 *  - FILL: the scalar value (input 1, any numeric type; a quantized one with the output's quantization) copied
 *    into the shape given by dims (input 0: a constant 1-D INT32 / INT64).
 *  - RANGE: start, then value += delta one step at a time in the input type (float32 accumulates its roundings,
 *    integers wrap), the count as range.cc's GetSize; start, limit and delta must be constant scalars here.
 *  - RANK: the input's rank, an INT32 scalar.
 * Output shapes are fixed at prepare (this runtime has no dynamic tensors).
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(ZEROS_LIKE, zeros_like, 1, "FLOAT32 INT32 INT64 INT8", "")
EDGE_KERNEL(FILL, fill, 5, "input 1: FLOAT32 FLOAT16 FLOAT64 INT8 UINT8 INT16 UINT16 INT32 UINT32 INT64 BOOL", "constant dims")
EDGE_KERNEL(RANGE, range, 2, "FLOAT32 INT32 INT64", "constant start, limit, delta")
EDGE_KERNEL(RANK, rank, 1, "FLOAT32 FLOAT16 FLOAT64 INT8 UINT8 INT16 UINT16 INT32 UINT32 INT64 BOOL", "INT32 output")

/* FILL's value types and RANK's input types (LiteRT's numeric ones) */
static int numeric_type(int t) {
    return t == EDGE_FLOAT32 || t == EDGE_FLOAT16 || t == EDGE_FLOAT64 || t == EDGE_INT8 || t == EDGE_UINT8 ||
           t == EDGE_INT16 || t == EDGE_UINT16 || t == EDGE_INT32 || t == EDGE_UINT32 || t == EDGE_INT64 ||
           t == EDGE_BOOL;
}

/* ---------------------------------------------------------------------------------------------- ZEROS_LIKE */

edge_status_t edge_prepare_zeros_like(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT32 && x->type != EDGE_INT64 && x->type != EDGE_INT8)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT32, INT64, INT8");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (out->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_zeros_like(const edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *out = edge_out(ctx, node, 0);
    memset(out->data, 0, (size_t)edge_tensor_elements(out) * edge_type_bytes(out->type));
}

/* ---------------------------------------------------------------------------------------------------- FILL */

edge_status_t edge_prepare_fill(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *dims, *value;
    edge_tensor_t *out;
    int32_t shape[EDGE_INDEX_MAX_RANK], k;
    int64_t total = 1;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    dims = edge_in(ctx, node, 0);
    value = edge_in(ctx, node, 1);
    out = edge_out(ctx, node, 0);
    if (!dims || !value) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "both inputs are required");
    if (!numeric_type(value->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "value type");
    if ((s = edge_type_built(ctx, value->type)) != EDGE_OK) return s;
    if (out->type != value->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from the value's");
    if (value->rank != 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "value must be a scalar");
    if ((value->quantized || out->quantized) &&
        !(value->quantized && out->quantized && value->scale == out->scale && value->zero_point == out->zero_point))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "a quantized value and the output must share scale and zero point");
    if (!dims->is_const || (dims->type != EDGE_INT32 && dims->type != EDGE_INT64))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "dims must be a constant INT32 / INT64");
    if (dims->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "dims must be 1-D");
    if (dims->dims[0] > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "output rank above 8");
    for (k = 0; k < dims->dims[0]; k++) {
        const int64_t d = edge_const_int(dims, k);
        if (d < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "negative dims");
        total *= d;
        if (d > 0x7fffffff || total > ((int64_t)1 << 31)) return EDGE_FAIL(ctx, EDGE_LIMIT, "output too large");
        shape[k] = (int32_t)d;
    }
    return edge_set_output_shape(ctx, node, 0, shape, dims->dims[0]);
}

void edge_eval_fill(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *value = edge_in(ctx, node, 1);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const size_t width = edge_type_bytes(out->type);
    const int64_t n = edge_tensor_elements(out);
    uint8_t *y = (uint8_t *)out->data;
    int64_t i;
    for (i = 0; i < n; i++) memcpy(y + (size_t)i * width, value->data, width);
}

/* --------------------------------------------------------------------------------------------------- RANGE */

typedef struct {
    int64_t start_i, delta_i;  /* INT32 / INT64 */
    float start_f, delta_f;    /* FLOAT32 */
} range_data_t;

edge_status_t edge_prepare_range(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *in[3];
    edge_tensor_t *out;
    range_data_t *d;
    int64_t size;
    int32_t shape[1], k;
    edge_status_t s;
    if (node->n_inputs != 3 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 3 inputs and 1 output");
    for (k = 0; k < 3; k++) {
        in[k] = edge_in(ctx, node, k);
        if (!in[k]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "start, limit and delta are required");
    }
    out = edge_out(ctx, node, 0);
    if (in[0]->type != EDGE_FLOAT32 && in[0]->type != EDGE_INT32 && in[0]->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT32, INT64");
    if ((s = edge_type_built(ctx, in[0]->type)) != EDGE_OK) return s;
    for (k = 0; k < 3; k++) {
        if (in[k]->type != in[0]->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "start, limit and delta differ in type");
        if (in[k]->rank != 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "start, limit and delta must be scalars");
        if (!in[k]->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "start, limit and delta must be constants");
    }
    if (out->type != in[0]->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    d = (range_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    if (in[0]->type == EDGE_FLOAT32) {
        float start, limit, delta, count;
        memcpy(&start, in[0]->data, 4);
        memcpy(&limit, in[1]->data, 4);
        memcpy(&delta, in[2]->data, 4);
        if (delta == 0.0f || !((start > limit && delta < 0.0f) || (start < limit && delta > 0.0f)))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "delta does not lead from start to limit");
        count = ceilf(fabsf((limit - start) / delta));
        if (!(count < 2147483648.0f)) return EDGE_FAIL(ctx, EDGE_LIMIT, "output too large");
        size = (int64_t)count;
        d->start_f = start;
        d->delta_f = delta;
    } else {
        const int64_t start = edge_const_int(in[0], 0), limit = edge_const_int(in[1], 0), delta = edge_const_int(in[2], 0);
        uint64_t span, step;
        if (delta == 0 || !((start > limit && delta < 0) || (start < limit && delta > 0)))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "delta does not lead from start to limit");
        /* (|limit - start| + |delta| - 1) / |delta| without overflow: magnitudes as unsigned */
        span = limit > start ? (uint64_t)limit - (uint64_t)start : (uint64_t)start - (uint64_t)limit;
        step = delta > 0 ? (uint64_t)delta : 0u - (uint64_t)delta;
        size = (int64_t)(span / step + (span % step != 0));
        if (size >= ((int64_t)1 << 31)) return EDGE_FAIL(ctx, EDGE_LIMIT, "output too large");
        d->start_i = start;
        d->delta_i = delta;
    }
    shape[0] = (int32_t)size;
    return edge_set_output_shape(ctx, node, 0, shape, 1);
}

void edge_eval_range(const edge_node_t *node, edge_ctx_t *ctx) {
    const range_data_t *d = (const range_data_t *)node->user_data;
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    if (out->type == EDGE_INT32) {
        int32_t *y = (int32_t *)out->data;
        uint32_t value = (uint32_t)d->start_i;
        for (i = 0; i < n; i++, value += (uint32_t)d->delta_i) y[i] = (int32_t)value;
    } else if (out->type == EDGE_INT64) {
        uint8_t *y = (uint8_t *)out->data;
        uint64_t value = (uint64_t)d->start_i;
        for (i = 0; i < n; i++, value += (uint64_t)d->delta_i) memcpy(y + 8 * i, &value, 8);
    } else if (EDGE_WITH_FLOAT32) {
        float *y = (float *)out->data;
        float value = d->start_f;
        for (i = 0; i < n; i++, value += d->delta_f) y[i] = value;
    }
}

/* ---------------------------------------------------------------------------------------------------- RANK */

edge_status_t edge_prepare_rank(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x;
    edge_tensor_t *out;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (!numeric_type(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "input type");
    if (out->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be INT32");
    return edge_set_output_shape(ctx, node, 0, (const int32_t *)0, 0);
}

void edge_eval_rank(const edge_node_t *node, edge_ctx_t *ctx) {
    *(int32_t *)edge_out(ctx, node, 0)->data = (int32_t)edge_in(ctx, node, 0)->rank;
}
