/* edge_bmm.h - BATCH_MATMUL's shapes, shared by the float kernel (kernels/batch_matmul.c) and LiteRT's hybrid one
 * (kernels/hybrid.c): both operands padded with leading 1s to one rank (2..5), the product's rows / cols / depth
 * after adj_x / adj_y, and the batch broadcast (numpy rules) as strides in elements, innermost batch dim last,
 * 0 where a dim of 1 meets a larger one.
 */
#ifndef EDGE_BMM_H
#define EDGE_BMM_H

#include "edge_kernel.h"

#define EDGE_BMM_MAX_BATCH 3 /* rank 5: three batch dims */

typedef struct {
    int32_t n_batch;                                          /* batch dims (rank - 2) */
    int32_t batch[EDGE_BMM_MAX_BATCH];                        /* the output's batch dims */
    int64_t l_step[EDGE_BMM_MAX_BATCH], r_step[EDGE_BMM_MAX_BATCH]; /* elements per batch index; 0: broadcast */
    int32_t rows, cols, depth;                                /* [rows, depth] x [depth, cols] per batch */
    int32_t rank;                                             /* the output's rank */
} edge_bmm_shape_t;

/* Fills g from the operands l, r (ranks 2..5, checked by the caller) and sets the output's shape. */
static inline edge_status_t edge_bmm_shape(edge_node_t *node, edge_ctx_t *ctx, const edge_tensor_t *l,
                                           const edge_tensor_t *r, int32_t adj_x, int32_t adj_y, edge_bmm_shape_t *g) {
    int32_t ls[5], rs[5], shape[5], rank = l->rank > r->rank ? l->rank : r->rank, k, nb = rank - 2, kl, kr;
    int64_t lacc, racc;
    for (k = 0; k < rank; k++) {
        const int32_t il = k - (rank - l->rank), ir = k - (rank - r->rank);
        ls[k] = il >= 0 ? l->dims[il] : 1;
        rs[k] = ir >= 0 ? r->dims[ir] : 1;
    }
    g->rank = rank;
    g->rows = adj_x ? ls[rank - 1] : ls[rank - 2];
    kl = adj_x ? ls[rank - 2] : ls[rank - 1];
    kr = adj_y ? rs[rank - 1] : rs[rank - 2];
    g->cols = adj_y ? rs[rank - 2] : rs[rank - 1];
    if (kl != kr) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: inner dimensions differ");
    g->depth = kl;
    lacc = (int64_t)ls[rank - 2] * ls[rank - 1];
    racc = (int64_t)rs[rank - 2] * rs[rank - 1];
    g->n_batch = nb;
    for (k = nb - 1; k >= 0; k--) {
        if (ls[k] != rs[k] && ls[k] != 1 && rs[k] != 1)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: batch dimensions do not broadcast");
        g->batch[k] = ls[k] == 1 ? rs[k] : ls[k];
        g->l_step[k] = ls[k] == 1 ? 0 : lacc;
        g->r_step[k] = rs[k] == 1 ? 0 : racc;
        lacc *= ls[k];
        racc *= rs[k];
        shape[k] = g->batch[k];
    }
    shape[nb] = g->rows;
    shape[nb + 1] = g->cols;
    return edge_set_output_shape(ctx, node, 0, shape, rank);
}

/* The next batch index (innermost batch dim last) and its lhs / rhs offsets; 0 after the last one. */
static inline int edge_bmm_next(const edge_bmm_shape_t *g, int32_t *idx, int64_t *lo, int64_t *ro) {
    int32_t k;
    for (k = g->n_batch - 1; k >= 0; k--) {
        idx[k]++;
        *lo += g->l_step[k];
        *ro += g->r_step[k];
        if (idx[k] < g->batch[k]) return 1;
        *lo -= g->l_step[k] * g->batch[k];
        *ro -= g->r_step[k] * g->batch[k];
        idx[k] = 0;
    }
    return 0;
}

#endif
