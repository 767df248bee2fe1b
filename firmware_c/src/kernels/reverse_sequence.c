/* REVERSE_SEQUENCE, as edge_sdk/runtime/kernels/movement.py prepare_reverse_sequence (LiteRT's reverse_sequence.cc;
 * TFLM has none): input FLOAT32, UINT8, INT16, INT32, INT64, seq_lengths INT32 / INT64 [dims[batch_dim]];
 * ReverseSequenceOptions 0 seq_dim, 1 batch_dim. Per batch entry b, positions s < L = seq_lengths[b] along seq_dim
 * read position L - 1 - s, the others their own. A length above dims[seq_dim] stops the invoke with EDGE_BAD_INPUT
 * naming the node, the length's element and value, before any copy (LiteRT's kernel fails there too); a negative
 * one reverses nothing, as LiteRT runs it. One odometer pass over the output.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(REVERSE_SEQUENCE, reverse_sequence, 1, "FLOAT32 UINT8 INT16 INT32 INT64", "INT32/INT64 seq_lengths")

typedef struct {
    int32_t rank, seq_dim, batch_dim, elem, len_type;
    int32_t dims[EDGE_INDEX_MAX_RANK];
    int64_t seq_stride;               /* elements per step along seq_dim */
} rseq_data_t;

edge_status_t edge_prepare_reverse_sequence(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == EDGE_OPTS_ReverseSequenceOptions;
    const edge_tensor_t *x, *l, *y;
    rseq_data_t *d;
    int32_t k;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    l = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !l) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and seq_lengths are required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_UINT8 && x->type != EDGE_INT16 && x->type != EDGE_INT32 && x->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, UINT8, INT16, INT32, INT64");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if ((x->quantized || y->quantized) &&
        (!x->quantized || !y->quantized || x->scale != y->scale || x->zero_point != y->zero_point))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input and output quantization differ (the op copies values)");
    if (l->type != EDGE_INT32 && l->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "seq_lengths must be INT32 or INT64");
    if (x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "rank above 8");
    d = (rseq_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->seq_dim = has_opts ? edge_opt_int(node, 0, 4, 0) : 0;
    d->batch_dim = has_opts ? edge_opt_int(node, 1, 4, 0) : 0;
    if (d->seq_dim < 0 || d->seq_dim >= x->rank || d->batch_dim < 0 || d->batch_dim >= x->rank || d->seq_dim == d->batch_dim)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "seq_dim and batch_dim must be two axes of the input");
    if (l->rank != 1 || l->dims[0] != x->dims[d->batch_dim]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "seq_lengths must hold one length per batch entry");
    d->rank = x->rank;
    d->elem = (int32_t)edge_type_bytes(x->type);
    d->len_type = l->type;
    d->seq_stride = 1;
    for (k = x->rank - 1; k >= 0; k--) {
        d->dims[k] = x->dims[k];
        if (k > d->seq_dim) d->seq_stride *= x->dims[k];
    }
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_reverse_sequence(const edge_node_t *node, edge_ctx_t *ctx) {
    const rseq_data_t *d = (const rseq_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0), *l = edge_in(ctx, node, 1);
    const uint8_t *src = (const uint8_t *)x->data;
    uint8_t *y = (uint8_t *)edge_out(ctx, node, 0)->data;
    const int64_t count = edge_tensor_elements(x);
    int32_t idx[EDGE_INDEX_MAX_RANK] = {0}, k;
    int64_t e;
    for (k = 0; k < d->dims[d->batch_dim]; k++) { /* LiteRT fails the invoke there; the copy would read past the axis */
        const int64_t len = d->len_type == EDGE_INT64 ? edge_const_int(l, k) : ((const int32_t *)l->data)[k];
        if (len > d->dims[d->seq_dim]) {
            EDGE_EVAL_BAD_INPUT(ctx, node, 1, k, len, "REVERSE_SEQUENCE: a seq_length is above the sequence dimension");
            return;
        }
    }
    for (e = 0; e < count; e++) {
        const int32_t b = idx[d->batch_dim], pos = idx[d->seq_dim];
        int64_t len = d->len_type == EDGE_INT64 ? edge_const_int(l, b) : ((const int32_t *)l->data)[b];
        int64_t from = e;
        if (pos < len) from = e + (len - 1 - 2 * (int64_t)pos) * d->seq_stride;
        memcpy(y + e * d->elem, src + from * d->elem, (size_t)d->elem);
        for (k = d->rank - 1; k >= 0; k--) {
            if (++idx[k] < d->dims[k]) break;
            idx[k] = 0;
        }
    }
}
