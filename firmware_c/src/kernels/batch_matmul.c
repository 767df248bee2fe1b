/* BATCH_MATMUL: out[..., r, c] = sum_k lhs[..., r, k] * rhs[..., k, c], batch dims broadcast numpy-style.
 *
 * As edge_sdk/runtime/kernels/conv.py prepare_batch_matmul: operands of rank 2 to 5 with one type, adj_x / adj_y take
 * the last two dims of an operand transposed, the batch dims (all but the last two, left-padded with 1s)
 * broadcast. This file runs FLOAT32 (what the transformer examples need): each output is one dot product
 * accumulated in k order in float32. A FLOAT32 lhs with a constant INT8 rhs runs LiteRT's hybrid kernel
 * (hybrid.c); quantized operands are refused (UNSUPPORTED_TYPE); use the Python interpreter for those.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_hybrid.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(BATCH_MATMUL, batch_matmul, 4, "FLOAT32/FLOAT32 FLOAT32/INT8", "float operands, or a FLOAT32 lhs with a constant INT8 rhs (LiteRT's hybrid kernel, hybrid.c); no quantized lhs")

enum { BMM_MAX_BATCH = 3 };

typedef struct {
    int32_t n_batch;                          /* batch dims after padding to one rank (0..3) */
    int32_t batch[BMM_MAX_BATCH];             /* output batch dims */
    int64_t l_step[BMM_MAX_BATCH], r_step[BMM_MAX_BATCH]; /* elements per index; 0 where broadcast */
    int32_t rows, cols, depth, adj_x, adj_y;
#if EDGE_SIMD
    edge_simd_sgemm_t *simd;                  /* on a CPU with a float GEMM: one per distinct rhs matrix when the
                                               * rhs is constant (packed here), else one repacked per product into
                                               * simd_pack; NULL: the portable loop */
    int32_t simd_nrhs;                        /* constant rhs: its matrices (0: packed per product) */
    int32_t simd_pack, simd_lhs;              /* scratch: the packed rhs (-1: constant), lhs transposed (adj_x) */
    int32_t simd_threads;
#endif
} bmm_data_t;

#if EDGE_SIMD
/* The rhs [K, C] (adj_y: [C, K]) as GEMM panels: column j's value k at rhs[k * rk + j * rj]. */
static void bmm_pack(const bmm_data_t *d, edge_simd_sgemm_t *g, int32_t level, const float *rhs, void *dst) {
    const int64_t rk = d->adj_y ? 1 : d->cols, rj = d->adj_y ? d->depth : 1;
    edge_simd_sgemm_pack(g, level, rhs, d->cols, d->depth, rj, rk, 0, -INFINITY, INFINITY, dst);
}

static edge_status_t bmm_prepare_simd(edge_node_t *node, edge_ctx_t *ctx, bmm_data_t *d, const edge_tensor_t *r) {
    const int32_t level = edge_simd_level();
    const size_t bytes = level ? edge_simd_sgemm_bytes(level, d->cols, d->depth) : 0;
    const int64_t per = (int64_t)d->depth * d->cols;
    edge_status_t s;
    int32_t i;
    d->simd = 0;
    d->simd_nrhs = 0;
    d->simd_pack = d->simd_lhs = -1;
    if (!bytes || per <= 0 || (int64_t)d->rows * d->depth > 0x3fffffff) return EDGE_OK;
    d->simd_threads = edge_simd_threads();
    if (r->is_const && edge_tensor_elements(r) / per <= 4096) {
        const int32_t nr = (int32_t)(edge_tensor_elements(r) / per);
        d->simd = (edge_simd_sgemm_t *)edge_alloc_persistent(ctx, sizeof *d->simd * (size_t)nr);
        if (!d->simd) return EDGE_ARENA_TOO_SMALL;
        for (i = 0; i < nr; i++) {
            void *packed = edge_alloc_packed(ctx, bytes);
            if (!packed) return EDGE_ARENA_TOO_SMALL;
            bmm_pack(d, &d->simd[i], level, (const float *)r->data + (int64_t)i * per, packed);
        }
        d->simd_nrhs = nr;
    } else {
        d->simd = (edge_simd_sgemm_t *)edge_alloc_persistent(ctx, sizeof *d->simd);
        if (!d->simd) return EDGE_ARENA_TOO_SMALL;
        d->simd->level = level;
        s = edge_request_scratch(ctx, node, bytes, &d->simd_pack);
        if (s != EDGE_OK) return s;
    }
    if (d->adj_x) return edge_request_scratch(ctx, node, sizeof(float) * (size_t)d->rows * (size_t)d->depth, &d->simd_lhs);
    return EDGE_OK;
}
#endif

edge_status_t edge_prepare_batch_matmul(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *l, *r, *out;
    bmm_data_t *d;
    int32_t ls[5], rs[5], shape[5], rank, k, nb, kl, kr;
    int64_t lacc, racc;
    edge_status_t s;

    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL expects 2 inputs and 1 output");
    l = edge_in(ctx, node, 0);
    r = edge_in(ctx, node, 1);
    out = edge_out(ctx, node, 0);
    if (!l || !r) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: both operands are required");
    if (EDGE_WITH_FLOAT32 && edge_hybrid_weights(l, r)) return edge_hybrid_prepare_batch_matmul(node, ctx);
    if ((s = edge_type_built(ctx, l->type)) != EDGE_OK) return s;
    if (l->type != EDGE_FLOAT32 || r->type != EDGE_FLOAT32 || out->type != EDGE_FLOAT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "BATCH_MATMUL: C kernel runs FLOAT32 operands only");
    if (l->rank < 2 || l->rank > 5 || r->rank < 2 || r->rank > 5)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: operands must have rank 2 to 5");
    d = (bmm_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    if (node->options_type == EDGE_OPTS_BatchMatMulOptions) {
        d->adj_x = edge_opt_int(node, 0, 1, 0) != 0;
        d->adj_y = edge_opt_int(node, 1, 1, 0) != 0;
    }
    rank = l->rank > r->rank ? l->rank : r->rank;
    for (k = 0; k < rank; k++) {
        int32_t il = k - (rank - l->rank), ir = k - (rank - r->rank);
        ls[k] = il >= 0 ? l->dims[il] : 1;
        rs[k] = ir >= 0 ? r->dims[ir] : 1;
    }
    nb = rank - 2;
    d->rows = d->adj_x ? ls[rank - 1] : ls[rank - 2];
    kl = d->adj_x ? ls[rank - 2] : ls[rank - 1];
    kr = d->adj_y ? rs[rank - 1] : rs[rank - 2];
    d->cols = d->adj_y ? rs[rank - 2] : rs[rank - 1];
    if (kl != kr) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: inner dimensions differ");
    d->depth = kl;
    /* batch strides, innermost batch dim last; a dim of 1 against a larger one steps by 0 */
    lacc = (int64_t)ls[rank - 2] * ls[rank - 1];
    racc = (int64_t)rs[rank - 2] * rs[rank - 1];
    d->n_batch = nb;
    for (k = nb - 1; k >= 0; k--) {
        if (ls[k] != rs[k] && ls[k] != 1 && rs[k] != 1)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: batch dimensions do not broadcast");
        d->batch[k] = ls[k] == 1 ? rs[k] : ls[k];
        d->l_step[k] = ls[k] == 1 ? 0 : lacc;
        d->r_step[k] = rs[k] == 1 ? 0 : racc;
        lacc *= ls[k];
        racc *= rs[k];
        shape[k] = d->batch[k];
    }
    shape[nb] = d->rows;
    shape[nb + 1] = d->cols;
    s = edge_set_output_shape(ctx, node, 0, shape, rank);
#if EDGE_SIMD
    if (s == EDGE_OK) s = bmm_prepare_simd(node, ctx, d, r);
#endif
    return s;
}

/* One [rows, cols] product: lhs element (i, k) at lhs[i * li + k * lk], rhs (k, j) at rhs[k * rk + j * rj]. */
static void bmm_one(const bmm_data_t *d, const float *lhs, const float *rhs, float *y) {
    const int32_t R = d->rows, C = d->cols, K = d->depth;
    const int32_t li = d->adj_x ? 1 : K, lk = d->adj_x ? R : 1;
    const int32_t rk = d->adj_y ? 1 : C, rj = d->adj_y ? K : 1;
    int32_t i, j, k;
    for (i = 0; i < R; i++) {
        const float *lrow = lhs + (int64_t)i * li;
        float *yrow = y + (int64_t)i * C;
        for (j = 0; j < C; j++) {
            const float *rcol = rhs + (int64_t)j * rj;
            float acc = 0.0f;
            for (k = 0; k < K; k++) acc += lrow[(int64_t)k * lk] * rcol[(int64_t)k * rk];
            yrow[j] = acc;
        }
    }
}

#if EDGE_SIMD
/* One [rows, cols] product through the GEMM: the rhs packed (constant: at prepare; else now), the lhs transposed
 * for adj_x. */
static void bmm_one_simd(const edge_node_t *node, edge_ctx_t *ctx, const bmm_data_t *d, const float *lhs,
                         const float *rhs, int64_t ro, float *y) {
    edge_simd_sgemm_t g;
    if (d->simd_nrhs) {
        g = d->simd[ro / ((int64_t)d->depth * d->cols)];
    } else {
        bmm_pack(d, &g, d->simd->level, rhs + ro, edge_scratch(ctx, node, d->simd_pack));
    }
    if (d->adj_x) { /* lhs [K, R] -> [R, K] */
        float *t = (float *)edge_scratch(ctx, node, d->simd_lhs);
        int32_t i, k;
        for (k = 0; k < d->depth; k++)
            for (i = 0; i < d->rows; i++) t[(int64_t)i * d->depth + k] = lhs[(int64_t)k * d->rows + i];
        lhs = t;
    }
    edge_simd_sgemm_threads(&g, lhs, d->rows, d->depth, y, d->cols, d->simd_threads);
}
#endif

void edge_eval_batch_matmul(const edge_node_t *node, edge_ctx_t *ctx) {
    const bmm_data_t *d = (const bmm_data_t *)node->user_data;
    const float *lhs = (const float *)edge_in(ctx, node, 0)->data;
    const float *rhs = (const float *)edge_in(ctx, node, 1)->data;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    const int64_t per = (int64_t)d->rows * d->cols;
    int32_t idx[BMM_MAX_BATCH] = {0, 0, 0}, k;
    int64_t lo = 0, ro = 0;
    if (EDGE_WITH_FLOAT32 && edge_hybrid_weights(edge_in(ctx, node, 0), edge_in(ctx, node, 1))) {
        edge_hybrid_eval_batch_matmul(node, ctx);
        return;
    }
    if (edge_tensor_elements(edge_out(ctx, node, 0)) == 0) return;
    for (;;) {
#if EDGE_SIMD
        if (d->simd) bmm_one_simd(node, ctx, d, lhs + lo, rhs, ro, y);
        else
#endif
            bmm_one(d, lhs + lo, rhs + ro, y);
        y += per;
        for (k = d->n_batch - 1; k >= 0; k--) {
            idx[k]++;
            lo += d->l_step[k];
            ro += d->r_step[k];
            if (idx[k] < d->batch[k]) break;
            lo -= d->l_step[k] * d->batch[k];
            ro -= d->r_step[k] * d->batch[k];
            idx[k] = 0;
        }
        if (k < 0) break;
    }
}
