/* BATCH_MATMUL: out[..., r, c] = sum_k lhs[..., r, k] * rhs[..., k, c], batch dims broadcast numpy-style.
 *
 * As edge_sdk/runtime/kernels/conv.py prepare_batch_matmul: operands of rank 2 to 5 with one type, adj_x / adj_y take
 * the last two dims of an operand transposed, the batch dims (all but the last two, left-padded with 1s)
 * broadcast. FLOAT32: each output is one dot product accumulated in k order in float32. INT8 / INT16 (int8 and
 * 16x8 full-integer transformer exports): TFLM's reference_ops::BatchMatMul, sum of (l - l_zp) * (r - r_zp) in an
 * int32 accumulator that wraps (INT8) or an int64 one (INT16, zero points 0), requantized by
 * float32(l_scale * r_scale) / out_scale (the int64 overload for INT16), plus the output zero point, clamped to the
 * type. A FLOAT32 lhs with a constant INT8 rhs runs LiteRT's hybrid kernel (hybrid.c).
 */
#include "edge_kernel.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint.h"
#include "../edge_bmm.h"
#include "../edge_hybrid.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(BATCH_MATMUL, batch_matmul, 4, "FLOAT32/FLOAT32 FLOAT32/INT8 INT8/INT8 INT16/INT16", "one operand type; per-tensor scales; INT16: zero points 0; a FLOAT32 lhs with a constant INT8 rhs: LiteRT's hybrid kernel (hybrid.c)")


typedef struct {
    edge_bmm_shape_t g;                       /* rows, cols, depth; the batch broadcast (edge_bmm.h) */
    int32_t adj_x, adj_y;
    int32_t multiplier, shift;                /* INT8 / INT16: the requantization */
    int32_t l_zp, r_zp, out_zp, qmin, qmax;
#if EDGE_DSP
    int32_t dsp_lhs, dsp_rhs;                 /* INT8: scratch for the lhs as [R, K] (adj_x) and the rhs as [C, K]
                                               * (not adj_y), -1: the operand is already rows of K */
    int32_t dsp_rq_ok;                        /* dsp_rq holds the requantization (edge_rq_make took it) */
    edge_rq_t dsp_rq;
#endif
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
    const int64_t rk = d->adj_y ? 1 : d->g.cols, rj = d->adj_y ? d->g.depth : 1;
    edge_simd_sgemm_pack(g, level, rhs, d->g.cols, d->g.depth, rj, rk, 0, -INFINITY, INFINITY, dst);
}

static edge_status_t bmm_prepare_simd(edge_node_t *node, edge_ctx_t *ctx, bmm_data_t *d, const edge_tensor_t *r) {
    const int32_t level = edge_simd_level();
    const size_t bytes = level ? edge_simd_sgemm_bytes(level, d->g.cols, d->g.depth) : 0;
    const int64_t per = (int64_t)d->g.depth * d->g.cols;
    edge_status_t s;
    int32_t i;
    d->simd = 0;
    d->simd_nrhs = 0;
    d->simd_pack = d->simd_lhs = -1;
    if (!bytes || per <= 0 || (int64_t)d->g.rows * d->g.depth > 0x3fffffff) return EDGE_OK;
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
    if (d->adj_x) return edge_request_scratch(ctx, node, sizeof(float) * (size_t)d->g.rows * (size_t)d->g.depth, &d->simd_lhs);
    return EDGE_OK;
}
#endif

/* INT8 / INT16: offsets, range, and the multiplier of float32(l_scale * r_scale) / out_scale (as TFLM). */
static edge_status_t bmm_prepare_int(edge_node_t *node, edge_ctx_t *ctx, bmm_data_t *d, const edge_tensor_t *l,
                                     const edge_tensor_t *r, const edge_tensor_t *out) {
    const float product = l->scale * r->scale;
    (void)node; /* the DSP build's scratch requests */
    if (!l->quantized || !r->quantized || !out->quantized)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: integer operands and output must be quantized");
    if (l->n_scales > 1 || r->n_scales > 1)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "BATCH_MATMUL: per-channel quantized operands");
    if (l->type == EDGE_INT16 && (l->zero_point || r->zero_point || out->zero_point))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: INT16 needs zero points of 0");
    if (edge_quantize_multiplier(EDGE_RATIO_D(product, 1.0f, out->scale), &d->multiplier, &d->shift) != 0)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: operand scales are not finite");
    d->l_zp = l->zero_point;
    d->r_zp = r->zero_point;
    d->out_zp = out->zero_point;
    d->qmin = l->type == EDGE_INT8 ? -128 : -32768;
    d->qmax = l->type == EDGE_INT8 ? 127 : 32767;
#if EDGE_DSP
    d->dsp_lhs = d->dsp_rhs = -1;
    if (l->type == EDGE_INT8) {
        edge_status_t s = EDGE_OK;
        d->dsp_rq_ok = edge_rq_make(&d->dsp_rq, d->multiplier, d->shift) == 0;
        if (d->adj_x) s = edge_request_scratch(ctx, node, (size_t)d->g.rows * (size_t)d->g.depth, &d->dsp_lhs);
        if (s == EDGE_OK && !d->adj_y)
            s = edge_request_scratch(ctx, node, (size_t)d->g.cols * (size_t)d->g.depth, &d->dsp_rhs);
        return s;
    }
#endif
    return EDGE_OK;
}

edge_status_t edge_prepare_batch_matmul(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *l, *r, *out;
    bmm_data_t *d;
    edge_status_t s;

    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL expects 2 inputs and 1 output");
    l = edge_in(ctx, node, 0);
    r = edge_in(ctx, node, 1);
    out = edge_out(ctx, node, 0);
    if (!l || !r) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: both operands are required");
    if (EDGE_WITH_FLOAT32 && edge_hybrid_weights(l, r)) return edge_hybrid_prepare_batch_matmul(node, ctx);
    if ((s = edge_type_built(ctx, l->type)) != EDGE_OK) return s;
    if (l->type != r->type || l->type != out->type)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: lhs, rhs and output must have one type");
    if (l->type != EDGE_FLOAT32 && l->type != EDGE_INT8 && l->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "BATCH_MATMUL: C kernel runs FLOAT32, INT8 and INT16 operands");
    if (l->rank < 2 || l->rank > 5 || r->rank < 2 || r->rank > 5)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BATCH_MATMUL: operands must have rank 2 to 5");
    d = (bmm_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    if (node->options_type == EDGE_OPTS_BatchMatMulOptions) {
        d->adj_x = edge_opt_int(node, 0, 1, 0) != 0;
        d->adj_y = edge_opt_int(node, 1, 1, 0) != 0;
    }
    s = edge_bmm_shape(node, ctx, l, r, d->adj_x, d->adj_y, &d->g);
    if (s == EDGE_OK && l->type != EDGE_FLOAT32) return bmm_prepare_int(node, ctx, d, l, r, out);
#if EDGE_SIMD
    if (s == EDGE_OK) s = bmm_prepare_simd(node, ctx, d, r);
#endif
    return s;
}

/* How one [rows, cols] product walks its operands: lhs element (i, k) at lhs[i * li + k * lk], rhs (k, j) at
 * rhs[k * rk + j * rj] (adj_x / adj_y swap an operand's two strides). */
typedef struct {
    int32_t R, C, K, li, lk, rk, rj;
} bmm_walk_t;

static bmm_walk_t bmm_walk(const bmm_data_t *d) {
    bmm_walk_t w;
    w.R = d->g.rows;
    w.C = d->g.cols;
    w.K = d->g.depth;
    w.li = d->adj_x ? 1 : w.K;
    w.lk = d->adj_x ? w.R : 1;
    w.rk = d->adj_y ? 1 : w.C;
    w.rj = d->adj_y ? w.K : 1;
    return w;
}

/* One float [rows, cols] product (strides: bmm_walk). */
static void bmm_one(const bmm_data_t *d, const float *lhs, const float *rhs, float *y) {
    const bmm_walk_t w = bmm_walk(d);
    const int32_t R = w.R, C = w.C, K = w.K, li = w.li, lk = w.lk, rk = w.rk, rj = w.rj;
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

/* One INT8 [rows, cols] product (strides: bmm_walk): the int32 accumulator wraps like TFLM's. */
static void bmm_one_int8(const bmm_data_t *d, const int8_t *lhs, const int8_t *rhs, int8_t *y) {
    const bmm_walk_t w = bmm_walk(d);
    const int32_t R = w.R, C = w.C, K = w.K, li = w.li, lk = w.lk, rk = w.rk, rj = w.rj;
    int32_t i, j, k;
    for (i = 0; i < R; i++)
        for (j = 0; j < C; j++) {
            uint32_t acc = 0; /* unsigned: wraps as the int32 sum does, without undefined overflow */
            for (k = 0; k < K; k++)
                acc += (uint32_t)(((int32_t)lhs[(int64_t)i * li + (int64_t)k * lk] - d->l_zp) *
                                  ((int32_t)rhs[(int64_t)j * rj + (int64_t)k * rk] - d->r_zp));
            y[(int64_t)i * C + j] = (int8_t)edge_clamp32(
                edge_mbqm(edge_wrap32((int64_t)(int32_t)acc), d->multiplier, d->shift) + d->out_zp, d->qmin, d->qmax);
        }
}

/* One INT16 [rows, cols] product: int64 accumulator, the int64 requantization of the 16x8 kernels. */
static void bmm_one_int16(const bmm_data_t *d, const int16_t *lhs, const int16_t *rhs, int16_t *y) {
    const bmm_walk_t w = bmm_walk(d);
    const int32_t R = w.R, C = w.C, K = w.K, li = w.li, lk = w.lk, rk = w.rk, rj = w.rj;
    int32_t i, j, k;
    for (i = 0; i < R; i++)
        for (j = 0; j < C; j++) {
            int64_t acc = 0;
            for (k = 0; k < K; k++)
                acc += (int64_t)lhs[(int64_t)i * li + (int64_t)k * lk] * rhs[(int64_t)j * rj + (int64_t)k * rk];
            y[(int64_t)i * C + j] = (int16_t)edge_clamp32(edge_mbqm64(acc, d->multiplier, d->shift) + d->out_zp,
                                                          d->qmin, d->qmax);
        }
}

#if EDGE_DSP
/* [R, K] rows <- a [K, R] operand (adj_x lhs / a plain rhs [K, C]): the DSP product reads both operands as rows
 * of K. */
static const int8_t *bmm_rows_of_k(const int8_t *src, int32_t K, int32_t n, int8_t *dst) {
    int32_t i, k;
    for (k = 0; k < K; k++, src += n)
        for (i = 0; i < n; i++) dst[(int64_t)i * K + k] = src[i];
    return dst;
}

static int8_t bmm_rq_int8(const bmm_data_t *d, uint32_t acc) {
    const int32_t v = d->dsp_rq_ok ? edge_rq_apply(&d->dsp_rq, (int32_t)acc, d->out_zp)
                                   : edge_mbqm((int32_t)acc, d->multiplier, d->shift) + d->out_zp;
    return (int8_t)(v < d->qmin ? d->qmin : v > d->qmax ? d->qmax : v);
}

/* One INT8 [R, C] product on the DSP: lhs rows [R, K], rhs rows [C, K] (scratch copies where the operand's layout is
 * the other one). sum_k (l - l_zp) (r - r_zp) = sum_k (l - l_zp) r - r_zp sum_k (l - l_zp): the first sum as SMLAD
 * pairs over a 2 x 2 block of outputs (per four k: two lhs words widened with the offset -l_zp by SXTAB16, two rhs
 * words by SXTB16, eight SMLAD: 20 instructions for 16 MACs), the second once per lhs row. Both wrap in uint32
 * as the portable loop's sum: the same bytes (tests/test_attn_standins_s20.py). */
static void bmm_one_int8_dsp(const bmm_data_t *d, const int8_t *lhs, const int8_t *rhs, int8_t *y) {
    const int32_t R = d->g.rows, C = d->g.cols, K = d->g.depth, K4 = K & ~3;
    const uint32_t off2 = (uint32_t)(uint16_t)(-d->l_zp) * 0x10001u;
    int32_t i, j, k;
    for (i = 0; i < R; i += 2) {
        const int8_t *l0 = lhs + (int64_t)i * K, *l1 = i + 1 < R ? l0 + K : l0; /* a lone last row: twice */
        uint32_t ls0 = 0, ls1 = 0, rz0, rz1;
        for (k = 0; k < K; k++) {
            ls0 += (uint32_t)(l0[k] - d->l_zp);
            ls1 += (uint32_t)(l1[k] - d->l_zp);
        }
        rz0 = ls0 * (uint32_t)d->r_zp;
        rz1 = ls1 * (uint32_t)d->r_zp;
        for (j = 0; j < C; j += 2) {
            const int8_t *r0 = rhs + (int64_t)j * K, *r1 = j + 1 < C ? r0 + K : r0;
            uint32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
            for (k = 0; k < K4; k += 4) {
                const uint32_t x0 = edge_get32(l0 + k), x1 = edge_get32(l1 + k);
                const uint32_t w0 = edge_get32(r0 + k), w1 = edge_get32(r1 + k);
                const uint32_t x0a = edge_sxtab16(off2, x0), x0b = edge_sxtab16_ror8(off2, x0);
                const uint32_t x1a = edge_sxtab16(off2, x1), x1b = edge_sxtab16_ror8(off2, x1);
                const uint32_t w0a = edge_sxtb16(w0), w0b = edge_sxtb16_ror8(w0);
                const uint32_t w1a = edge_sxtb16(w1), w1b = edge_sxtb16_ror8(w1);
                a00 = edge_smlad(x0b, w0b, edge_smlad(x0a, w0a, a00));
                a01 = edge_smlad(x0b, w1b, edge_smlad(x0a, w1a, a01));
                a10 = edge_smlad(x1b, w0b, edge_smlad(x1a, w0a, a10));
                a11 = edge_smlad(x1b, w1b, edge_smlad(x1a, w1a, a11));
            }
            for (; k < K; k++) {
                const int32_t x0 = l0[k] - d->l_zp, x1 = l1[k] - d->l_zp;
                a00 += (uint32_t)(x0 * r0[k]);
                a01 += (uint32_t)(x0 * r1[k]);
                a10 += (uint32_t)(x1 * r0[k]);
                a11 += (uint32_t)(x1 * r1[k]);
            }
            y[(int64_t)i * C + j] = bmm_rq_int8(d, a00 - rz0);
            if (j + 1 < C) y[(int64_t)i * C + j + 1] = bmm_rq_int8(d, a01 - rz0);
            if (i + 1 < R) {
                y[(int64_t)(i + 1) * C + j] = bmm_rq_int8(d, a10 - rz1);
                if (j + 1 < C) y[(int64_t)(i + 1) * C + j + 1] = bmm_rq_int8(d, a11 - rz1);
            }
        }
    }
}
#endif

/* The integer kinds over every batch index (strides in elements, as the float loop). */
static void bmm_eval_int(const edge_node_t *node, edge_ctx_t *ctx, const bmm_data_t *d, const edge_tensor_t *l,
                         const edge_tensor_t *r, edge_tensor_t *out) {
    const int64_t per = (int64_t)d->g.rows * d->g.cols;
    int32_t idx[EDGE_BMM_MAX_BATCH] = {0, 0, 0};
    int64_t lo = 0, ro = 0, yo = 0;
#if EDGE_DSP
    int64_t last_ro = -1; /* the rhs matrix last copied to rows of K (a broadcast rhs is copied once) */
#endif
    (void)node;
    (void)ctx;
    do {
#if EDGE_DSP
        if (out->type == EDGE_INT8) {
            const int8_t *lm = (const int8_t *)l->data + lo, *rm = (const int8_t *)r->data + ro;
            if (d->dsp_lhs >= 0)
                lm = bmm_rows_of_k(lm, d->g.depth, d->g.rows, (int8_t *)edge_scratch(ctx, node, d->dsp_lhs));
            if (d->dsp_rhs >= 0) {
                int8_t *t = (int8_t *)edge_scratch(ctx, node, d->dsp_rhs);
                if (ro != last_ro) bmm_rows_of_k(rm, d->g.depth, d->g.cols, t);
                last_ro = ro;
                rm = t;
            }
            bmm_one_int8_dsp(d, lm, rm, (int8_t *)out->data + yo);
            yo += per;
            continue;
        }
#endif
        if (EDGE_WITH_INT16 && out->type == EDGE_INT16)
            bmm_one_int16(d, (const int16_t *)l->data + lo, (const int16_t *)r->data + ro, (int16_t *)out->data + yo);
        else
            bmm_one_int8(d, (const int8_t *)l->data + lo, (const int8_t *)r->data + ro, (int8_t *)out->data + yo);
        yo += per;
    } while (edge_bmm_next(&d->g, idx, &lo, &ro));
}

#if EDGE_SIMD
/* One [rows, cols] product through the GEMM: the rhs packed (constant: at prepare; else now), the lhs transposed
 * for adj_x. */
static void bmm_one_simd(const edge_node_t *node, edge_ctx_t *ctx, const bmm_data_t *d, const float *lhs,
                         const float *rhs, int64_t ro, float *y) {
    edge_simd_sgemm_t g;
    if (d->simd_nrhs) {
        g = d->simd[ro / ((int64_t)d->g.depth * d->g.cols)];
    } else {
        bmm_pack(d, &g, d->simd->level, rhs + ro, edge_scratch(ctx, node, d->simd_pack));
    }
    if (d->adj_x) { /* lhs [K, R] -> [R, K] */
        float *t = (float *)edge_scratch(ctx, node, d->simd_lhs);
        int32_t i, k;
        for (k = 0; k < d->g.depth; k++)
            for (i = 0; i < d->g.rows; i++) t[(int64_t)i * d->g.depth + k] = lhs[(int64_t)k * d->g.rows + i];
        lhs = t;
    }
    edge_simd_sgemm_threads(&g, lhs, d->g.rows, d->g.depth, y, d->g.cols, d->simd_threads);
}
#endif

void edge_eval_batch_matmul(const edge_node_t *node, edge_ctx_t *ctx) {
    const bmm_data_t *d = (const bmm_data_t *)node->user_data;
    const float *lhs = (const float *)edge_in(ctx, node, 0)->data;
    const float *rhs = (const float *)edge_in(ctx, node, 1)->data;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    const int64_t per = (int64_t)d->g.rows * d->g.cols;
    int32_t idx[EDGE_BMM_MAX_BATCH] = {0, 0, 0};
    int64_t lo = 0, ro = 0;
    if (EDGE_WITH_FLOAT32 && edge_hybrid_weights(edge_in(ctx, node, 0), edge_in(ctx, node, 1))) {
        edge_hybrid_eval_batch_matmul(node, ctx);
        return;
    }
    if (edge_tensor_elements(edge_out(ctx, node, 0)) == 0) return;
    if (edge_out(ctx, node, 0)->type != EDGE_FLOAT32) {
        bmm_eval_int(node, ctx, d, edge_in(ctx, node, 0), edge_in(ctx, node, 1), edge_out(ctx, node, 0));
        return;
    }
    for (;;) {
#if EDGE_SIMD
        if (d->simd) bmm_one_simd(node, ctx, d, lhs + lo, rhs, ro, y);
        else
#endif
            bmm_one(d, lhs + lo, rhs + ro, y);
        y += per;
        if (!edge_bmm_next(&d->g, idx, &lo, &ro)) break;
    }
}
