/* TFLite's sparse constants (SparsityParameters) expanded to their dense form, once, at prepare: DENSIFY's kernel
 * (kernels/densify.c) and the weighted kernels that read a sparse filter themselves (FULLY_CONNECTED, as LiteRT's).
 * In a header, not densify.c: a firmware compiles only its model's kernels, and a model with a sparse FULLY_CONNECTED
 * has no DENSIFY node.
 *
 * As edge_sdk/runtime/kernels/shape.py densify: levels are walked in traversal order (depth first, in index order);
 * a DENSE level enumerates dense_size positions, a SPARSE_CSR level the indices array_indices[segments[p] ..
 * segments[p + 1]) of its parent position p; each leaf takes the next stored value. The first `rank` traversal
 * entries name original dimensions, the rest block dimensions, a block coordinate refining its dimension as
 * outer * block + inner. Malformed structures (orders out of range, indices outside the dense shape, more leaves than
 * values, a walk far longer than the dense tensor) are refused before or during the walk, so nothing runs long or
 * writes out of bounds. */
#ifndef EDGE_SPARSE_H
#define EDGE_SPARSE_H

#include <string.h>

#include "edge_kernel.h"

typedef struct {
    const edge_sparsity_t *sp;
    int32_t rank, levels;
    int32_t shape[EDGE_SPARSE_MAX_DIMS];
    int32_t block_size[EDGE_SPARSE_MAX_DIMS];
    int32_t coords[EDGE_SPARSE_MAX_DIMS];
    const uint8_t *values;
    int64_t n_values, leaves, budget;
    uint32_t item;
    uint8_t *dense;
} walk_t;

static inline int64_t index_at(const void *v, uint8_t type, int32_t k) {
    if (type == 1) return ((const int32_t *)v)[k];
    if (type == 2) return ((const uint16_t *)v)[k];
    return ((const uint8_t *)v)[k];
}

/* 0: fine; 1: more leaves than values; 2: an index outside the dense shape; 3: the walk's budget is spent. */
static inline int walk(walk_t *w, int32_t level, int64_t parent) {
    const edge_sparse_dim_t *m;
    int r;
    if (--w->budget < 0) return 3;
    if (level == w->levels) {
        int32_t full[EDGE_SPARSE_MAX_DIMS], k;
        int64_t offset = 0;
        const int32_t *order = w->sp->traversal_order;
        if (w->leaves >= w->n_values) return 1;
        for (k = 0; k < w->rank; k++) full[order[k]] = w->coords[k];
        for (k = w->rank; k < w->levels; k++) {
            const int32_t b = order[k] - w->rank, d = w->sp->block_map[b];
            full[d] = full[d] * w->block_size[b] + w->coords[k];
        }
        for (k = 0; k < w->rank; k++) {
            if (full[k] < 0 || full[k] >= w->shape[k]) return 2;
            offset = offset * w->shape[k] + full[k];
        }
        memcpy(w->dense + offset * w->item, w->values + w->leaves * w->item, w->item);
        w->leaves++;
        return 0;
    }
    m = &w->sp->dims[level];
    if (m->format == 0) {
        int32_t pos;
        for (pos = 0; pos < m->dense_size; pos++) {
            w->coords[level] = pos;
            if ((r = walk(w, level + 1, parent * m->dense_size + pos)) != 0) return r;
        }
    } else {
        int64_t k, lo, hi;
        if (parent + 1 >= m->n_segments) return 0;
        lo = index_at(m->segments, m->segments_type, (int32_t)parent);
        hi = index_at(m->segments, m->segments_type, (int32_t)parent + 1);
        if (hi > m->n_indices) hi = m->n_indices;
        for (k = lo; k < hi; k++) {
            int64_t c = index_at(m->indices, m->indices_type, (int32_t)k);
            if (c < 0 || c > 0x7fffffff) return 2;
            w->coords[level] = (int32_t)c;
            if ((r = walk(w, level + 1, k)) != 0) return r;
        }
    }
    return 0;
}

/* x (a sparse constant) expanded into w->dense: its dense shape is x's declared shape, or y's when x is declared as
 * its flat stored values (y may be NULL); the bytes from edge_alloc_packed (`packed`: a weights copy, reported apart
 * from the arena) or edge_alloc_persistent. Malformed structures are refused here, before any walk runs long. */
static inline edge_status_t expand(edge_ctx_t *ctx, const edge_tensor_t *x, const edge_tensor_t *y, int32_t packed,
                            edge_sparsity_t *sp, walk_t *w) {
    const int32_t *dims;
    int32_t k, seen = 0;
    int64_t elems = 1;
    edge_status_t s;
    int r;
    if ((s = edge_tensor_sparsity(ctx, x, sp)) != EDGE_OK) return s;
    memset(w, 0, sizeof *w);
    w->sp = sp;
    w->levels = sp->n_order;
    w->rank = sp->n_order - sp->n_block_map;
    if (sp->n_dims != w->levels || w->rank < 1 || sp->n_block_map < 0)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "sparsity levels do not match traversal order and block map");
    if (x->rank == w->rank) dims = x->dims;
    else if (y && y->rank == w->rank) dims = y->dims;
    else return EDGE_FAIL(ctx, EDGE_BAD_NODE, "cannot tell the dense shape of the sparse tensor");
    for (k = 0; k < w->rank; k++) {
        w->shape[k] = dims[k];
        elems *= dims[k];
        if (elems > ((int64_t)1 << 31)) return EDGE_FAIL(ctx, EDGE_LIMIT, "dense tensor above 2^31 elements");
    }
    for (k = 0; k < w->levels; k++) {
        const int32_t o = sp->traversal_order[k];
        if (o < 0 || o >= w->levels || (seen >> o) & 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "traversal order is not a permutation");
        seen |= 1 << o;
        if ((k < w->rank) != (o < w->rank)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "traversal order mixes dimensions and blocks");
    }
    for (k = 0; k < sp->n_block_map; k++) {
        if (sp->block_map[k] < 0 || sp->block_map[k] >= w->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "block map out of range");
        w->block_size[k] = sp->dims[sp->traversal_order[w->rank + k]].dense_size;
    }
    for (k = 0; k < w->levels; k++) {
        const edge_sparse_dim_t *m = &sp->dims[k];
        const int32_t o = sp->traversal_order[k];
        const int32_t extent = o < w->rank ? w->shape[o] : w->shape[sp->block_map[o - w->rank]];
        if (m->format > 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "unknown dimension format");
        if (m->format == 0 && (m->dense_size < 0 || m->dense_size > extent))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "dense_size outside its dimension");
        if (m->format == 1 && (!m->segments || !m->indices))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SPARSE_CSR level without segments or indices");
        if (m->format == 1) {
            int32_t j;
            for (j = 0; j < m->n_segments; j++)
                if (index_at(m->segments, m->segments_type, j) < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "negative segment");
        }
    }
    w->item = edge_type_bytes(x->type);
    w->values = (const uint8_t *)x->data;
    w->n_values = x->bytes / w->item;
    w->budget = (elems + w->n_values + 1) * (w->levels + 1);
    w->dense = (uint8_t *)(packed ? edge_alloc_packed(ctx, (size_t)elems * w->item)
                                  : edge_alloc_persistent(ctx, (size_t)elems * w->item));
    if (!w->dense && elems) return EDGE_ARENA_TOO_SMALL;
    r = walk(w, 0, 0);
    if (r == 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "sparse tensor names more values than it stores");
    if (r == 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "sparse index outside the dense shape");
    if (r == 3) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "sparse structure far larger than the dense tensor");
    return EDGE_OK;
}

/* A weighted kernel's prepare (FULLY_CONNECTED: LiteRT reads sparse weights there) on its filter first: a sparse
 * constant is expanded once into a dense copy (edge_alloc_packed: reported as packed weights) and the tensor then
 * reads as dense; a dense tensor is untouched. The tensor struct is reloaded from the model by every edge_init, so
 * a re-prepare expands afresh (as edge_int4_to_int8). */
static inline edge_status_t edge_densify_weights(edge_ctx_t *ctx, edge_tensor_t *t) {
    edge_sparsity_t sp;
    walk_t w;
    edge_status_t s;
    if (!t || !t->is_sparse) return EDGE_OK;
    if (!t->is_const) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "sparse weights must be a constant");
    if (t->type != EDGE_FLOAT32 && t->type != EDGE_FLOAT16 && t->type != EDGE_INT8)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "sparse weights: FLOAT32, FLOAT16 or INT8 values");
    if ((s = expand(ctx, t, NULL, 1, &sp, &w)) != EDGE_OK) return s;
    t->data = w.dense;
    t->bytes = (uint32_t)(edge_tensor_elements(t) * (int64_t)w.item);
    t->is_sparse = 0;
    return EDGE_OK;
}

#endif
