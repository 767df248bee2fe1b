/* EMBEDDING_LOOKUP_SPARSE, float32, as edge_sdk/runtime/kernels/lookup.py (LiteRT's embedding_lookup_sparse.cc).
 *
 * ids INT32 (N), indices INT32 (N, rank), dense_shape INT32 (rank, constant: it fixes the output shape), weights
 * FLOAT32 (N), params FLOAT32 (rows, ...) -> output dense_shape[:-1] + params.shape[1:]. The ids in order: each
 * adds params[id] * weight to the bucket its index row names without its last coordinate; when the next id names
 * another bucket the current one is finalized (MEAN: divided by its weights' sum; SQRTN: by the root of their
 * squares' sum; SUM: as is). An id outside [0, rows) stops the invoke with EDGE_BAD_INPUT naming the node, the
 * id's element and its value (LiteRT fails the invoke too), and so does an index row whose bucket lies outside the
 * output, naming the row's first coordinate outside its dimension (as lookup.py; checked before any write to the
 * bucket, so no write leaves the output).
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(EMBEDDING_LOOKUP_SPARSE, embedding_lookup_sparse, 1, "FLOAT32", "constant dense_shape")

#define ELS_MAX_RANK 8

typedef struct {
    int64_t buckets, width, rows;
    int64_t strides[ELS_MAX_RANK]; /* bucket of an index row: sum of coordinates[k] * strides[k], k < rank - 1 */
    int32_t dims[ELS_MAX_RANK];    /* dense_shape: coordinate k lies in [0, dims[k]) */
    int32_t n, rank, combiner;     /* combiner: 0 SUM, 1 MEAN, 2 SQRTN */
} els_data_t;

edge_status_t edge_prepare_embedding_lookup_sparse(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *ids, *idx, *dense, *w, *params;
    const int32_t *dims;
    els_data_t *d;
    int32_t k, rank, shape[ELS_MAX_RANK];
    edge_status_t s;

    if (node->n_inputs != 5 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 5 inputs and 1 output");
    ids = edge_in(ctx, node, 0);
    idx = edge_in(ctx, node, 1);
    dense = edge_in(ctx, node, 2);
    w = edge_in(ctx, node, 3);
    params = edge_in(ctx, node, 4);
    if (!ids || !idx || !dense || !w || !params) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "every input is required");
    if (ids->type != EDGE_INT32 || idx->type != EDGE_INT32 || dense->type != EDGE_INT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "ids, indices and dense_shape must be INT32");
    if (w->type != EDGE_FLOAT32 || params->type != EDGE_FLOAT32 || edge_out(ctx, node, 0)->type != EDGE_FLOAT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "weights, params and output must be FLOAT32");
    if ((s = edge_type_built(ctx, EDGE_FLOAT32)) != EDGE_OK) return s;
    if (!dense->is_const)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input 2 dense_shape is computed at run time from data (the output shape follows its values); only a constant or a value known at prepare");
    rank = (int32_t)edge_tensor_elements(dense);
    if (ids->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ids must be 1-D");
    if (rank < 1 || rank > ELS_MAX_RANK) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "dense_shape must hold 1..8 dimensions");
    if (idx->rank != 2 || idx->dims[0] != ids->dims[0] || idx->dims[1] != rank)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "indices must be (ids, rank of dense_shape)");
    if (w->rank != 1 || w->dims[0] != ids->dims[0]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "weights must be (ids)");
    if (params->rank < 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "params must be at least 2-D");
    if (rank - 1 + params->rank - 1 > ELS_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "output rank too large");
    dims = (const int32_t *)dense->data;
    d = (els_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    memset(d, 0, sizeof *d);
    node->user_data = d;
    d->n = ids->dims[0];
    d->rank = rank;
    d->rows = params->dims[0];
    d->combiner = node->options_type == EDGE_OPTS_EmbeddingLookupSparseOptions ? edge_opt_int(node, 0, 1, 0) : 0;
    if (d->combiner < 0 || d->combiner > 2) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "combiner (SUM, MEAN, SQRTN)");
    d->buckets = 1;
    for (k = rank - 2; k >= 0; k--) {
        if (dims[k] < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "dense_shape has a negative dimension");
        d->strides[k] = d->buckets;
        d->dims[k] = dims[k];
        d->buckets *= dims[k];
        shape[k] = dims[k];
    }
    d->width = 1;
    for (k = 1; k < params->rank; k++) {
        d->width *= params->dims[k];
        shape[rank - 2 + k] = params->dims[k];
    }
    return edge_set_output_shape(ctx, node, 0, shape, rank - 1 + params->rank - 1);
}

static void finalize(const els_data_t *d, float *y, int64_t bucket, int32_t count, float total, float squares) {
    const float m = d->combiner == 1 ? total : sqrtf(squares);
    int64_t k;
    if (d->combiner == 0 || count == 0 || bucket < 0 || bucket >= d->buckets) return;
    for (k = 0; k < d->width; k++) y[bucket * d->width + k] /= m;
}

void edge_eval_embedding_lookup_sparse(const edge_node_t *node, edge_ctx_t *ctx) {
    const els_data_t *d = (const els_data_t *)node->user_data;
    const int32_t *ids = (const int32_t *)edge_in(ctx, node, 0)->data, *idx = (const int32_t *)edge_in(ctx, node, 1)->data;
    const float *w = (const float *)edge_in(ctx, node, 3)->data, *params = (const float *)edge_in(ctx, node, 4)->data;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    int64_t current = 0, i, k;
    int32_t count = 0;
    float total = 0.0f, squares = 0.0f;
    memset(y, 0, sizeof(float) * (size_t)(d->buckets * d->width));
    for (i = 0; i < d->n; i++) {
        const int64_t id = ids[i];
        int64_t bucket = 0;
        float wi = w[i];
        if (id < 0 || id >= d->rows) {
            EDGE_EVAL_BAD_INPUT(ctx, node, 0, i, id, "EMBEDDING_LOOKUP_SPARSE: an id is outside [0, rows)");
            return;
        }
        for (k = 0; k < d->rank - 1; k++) bucket += (int64_t)idx[i * d->rank + k] * d->strides[k];
        if (bucket < 0 || bucket >= d->buckets) { /* then some coordinate lies outside its dimension */
            for (k = 0; k < d->rank - 2 && idx[i * d->rank + k] >= 0 && idx[i * d->rank + k] < d->dims[k]; k++) {}
            EDGE_EVAL_BAD_INPUT(ctx, node, 1, i * d->rank + k, idx[i * d->rank + k],
                                "EMBEDDING_LOOKUP_SPARSE: an index row names a bucket outside dense_shape");
            return;
        }
        if (bucket != current) {
            finalize(d, y, current, count, total, squares);
            current = bucket;
            count = 0;
            total = squares = 0.0f;
        }
        count++;
        squares += wi * wi;
        total += wi;
        for (k = 0; k < d->width; k++) y[bucket * d->width + k] += params[id * d->width + k] * wi;
    }
    finalize(d, y, current, count, total, squares);
}
