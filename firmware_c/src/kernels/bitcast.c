/* BITCAST: the input's bytes read as the output's type, as edge_sdk/runtime/kernels/bitcast.py (LiteRT's
 * bitcast.cc): equal element sizes keep the shape, a wider input gains a last dimension of size in / out, a
 * narrower one must end in a dimension of size out / in, which goes. Eval copies the bytes.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(BITCAST, bitcast, 1, "FLOAT32 FLOAT16 FLOAT64 INT8 UINT8 INT16 UINT16 INT32 UINT32 INT64 UINT64 BOOL", "output: one of the same types")

static int bitcast_type(int t) {
    return t == EDGE_FLOAT32 || t == EDGE_FLOAT16 || t == EDGE_FLOAT64 || t == EDGE_INT8 || t == EDGE_UINT8 ||
           t == EDGE_INT16 || t == EDGE_UINT16 || t == EDGE_INT32 || t == EDGE_UINT32 || t == EDGE_INT64 ||
           t == EDGE_UINT64 || t == EDGE_BOOL;
}

edge_status_t edge_prepare_bitcast(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x;
    edge_tensor_t *out;
    uint32_t size_in, size_out;
    int32_t shape[128], rank, k;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (!bitcast_type(x->type) || !bitcast_type(out->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "input or output type");
    size_in = edge_type_bytes(x->type);
    size_out = edge_type_bytes(out->type);
    rank = x->rank;
    for (k = 0; k < rank; k++) shape[k] = x->dims[k];
    if (size_in > size_out) {
        if (rank >= 127) return EDGE_FAIL(ctx, EDGE_LIMIT, "output rank above 127");
        shape[rank++] = (int32_t)(size_in / size_out);
    } else if (size_in < size_out) {
        if (rank < 1 || shape[rank - 1] != (int32_t)(size_out / size_in))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "a narrower input must end in a dimension of out / in element bytes");
        rank--;
    }
    return edge_set_output_shape(ctx, node, 0, shape, rank);
}

void edge_eval_bitcast(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const size_t bytes = (size_t)edge_tensor_elements(out) * edge_type_bytes(out->type);
    if (out->data != x->data) memmove(out->data, x->data, bytes);
}
