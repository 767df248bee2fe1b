/* DYNAMIC_UPDATE_SLICE, as edge_sdk/runtime/kernels/dynamic_update_slice.py (LiteRT's dynamic_update_slice.cc):
 * the operand copied to the output, then the update written at the start indices (INT32 / INT64, constant or
 * computed at run time), each clamped to [0, operand dim - update dim]. Bytes are copied (any element size; a
 * quantized update carries the operand's quantization).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(DYNAMIC_UPDATE_SLICE, dynamic_update_slice, 6, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "update <= operand per dim; INT32/INT64 starts")

#define DUS_MAX_RANK 8

edge_status_t edge_prepare_dynamic_update_slice(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *u, *st, *y;
    int32_t k;
    edge_status_t s;
    if (node->n_inputs != 3 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 3 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    u = edge_in(ctx, node, 1);
    st = edge_in(ctx, node, 2);
    y = edge_out(ctx, node, 0);
    if (!x || !u || !st) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "operand, update and start indices are required");
    switch (x->type) {
    case EDGE_FLOAT32: case EDGE_INT8: case EDGE_UINT8: case EDGE_INT16: case EDGE_INT32: case EDGE_INT64: case EDGE_BOOL:
        break;
    default:
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL");
    }
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (u->type != x->type || y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "update and output must have the operand's type");
    if (st->type != EDGE_INT32 && st->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "start indices must be INT32 or INT64");
    if (x->rank > DUS_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "rank above 8");
    if (u->rank != x->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "update must have the operand's rank");
    if (st->rank != 1 || st->dims[0] != x->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "start indices must be (rank)");
    for (k = 0; k < x->rank; k++)
        if (u->dims[k] > x->dims[k]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "update is larger than the operand");
    if ((x->quantized || u->quantized || y->quantized) &&
        !(x->quantized && u->quantized && y->quantized && u->scale == x->scale && y->scale == x->scale &&
          u->zero_point == x->zero_point && y->zero_point == x->zero_point))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "operand, update and output quantization differ (the op copies values)");
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_dynamic_update_slice(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0), *u = edge_in(ctx, node, 1), *st = edge_in(ctx, node, 2);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int32_t rank = x->rank, esize = (int32_t)edge_type_bytes(x->type);
    int64_t start[DUS_MAX_RANK], stride[DUS_MAX_RANK], idx[DUS_MAX_RANK], rows = 1, r, row_bytes;
    int32_t k;
    if (y->data != x->data) memcpy(y->data, x->data, x->bytes);
    if (edge_tensor_elements(u) == 0) return;
    for (k = rank - 1; k >= 0; k--) {
        const int64_t hi = (int64_t)x->dims[k] - u->dims[k];
        int64_t v = st->type == EDGE_INT32 ? ((const int32_t *)st->data)[k] : ((const int64_t *)st->data)[k];
        start[k] = v < 0 ? 0 : (v > hi ? hi : v);
        stride[k] = k == rank - 1 ? 1 : stride[k + 1] * x->dims[k + 1];
        idx[k] = 0;
    }
    if (rank == 0) {
        memcpy(y->data, u->data, (size_t)esize);
        return;
    }
    /* the update's rows along its last dim, each one contiguous run of bytes in the output */
    for (k = 0; k < rank - 1; k++) rows *= u->dims[k];
    row_bytes = (int64_t)u->dims[rank - 1] * esize;
    for (r = 0; r < rows; r++) {
        int64_t at = start[rank - 1];
        for (k = 0; k < rank - 1; k++) at += (start[k] + idx[k]) * stride[k];
        memcpy((uint8_t *)y->data + at * esize, (const uint8_t *)u->data + r * row_bytes, (size_t)row_bytes);
        for (k = rank - 2; k >= 0; k--) { /* next row: odometer over the update's leading dims */
            if (++idx[k] < u->dims[k]) break;
            idx[k] = 0;
        }
    }
}
