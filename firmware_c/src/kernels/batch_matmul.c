/* BATCH_MATMUL: out[..., r, c] = sum_k lhs[..., r, k] * rhs[..., k, c], batch dims broadcast numpy-style.
 *
 * As edge_sdk/runtime/kernels/conv.py prepare_batch_matmul: operands of rank 2 to 5 with one type, adj_x / adj_y take
 * the last two dims of an operand transposed, the batch dims (all but the last two, left-padded with 1s)
 * broadcast. FLOAT32: each output is one dot product accumulated in k order in float32. INT8 / INT16 (int8 and
 * 16x8 full-integer transformer exports): TFLM's reference_ops::BatchMatMul, sum of (l - l_zp) * (r - r_zp) in an
 * int32 accumulator that wraps (INT8) or an int64 one (INT16, zero points 0), requantized by
 * float32(l_scale * r_scale) / out_scale (the int64 overload for INT16), plus the output zero point, clamped to the
 * type. A FLOAT32 lhs with a constant INT8 rhs runs LiteRT's hybrid kernel (hybrid.c). A DSP build (the Cortex-M4 /
 * M7) runs INT8 products as 2 x 2 SMLAD blocks against rhs column pairs packed as int16 (bmm_one_int8_dsp): the same
 * bytes.
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
    int32_t dsp_lhs, dsp_rhs;                 /* INT8: scratch for the lhs as [R, K] (adj_x; else -1) and one
                                               * packed pair of rhs columns (bmm_pack_pair) */
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
        if (s == EDGE_OK) /* one packed pair of rhs columns: 2 K int16 */
            s = edge_request_scratch(ctx, node, 2 * (size_t)d->g.depth * sizeof(int16_t), &d->dsp_rhs);
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
/* [R, K] rows <- a [K, R] operand (the adj_x lhs): the DSP product reads the lhs as rows of K. */
static const int8_t *bmm_rows_of_k(const int8_t *src, int32_t K, int32_t n, int8_t *dst) {
    int32_t i, k;
    for (k = 0; k < K; k++, src += n)
        for (i = 0; i < n; i++) dst[(int64_t)i * K + k] = src[i];
    return dst;
}

/* Columns j, j + 1 of one product's rhs (a lone last column twice) as int16 (r - r_zp), 2 K values: per four k,
 * (j: k, k+2), (j+1: k, k+2), (j: k+1, k+3), (j+1: k+1, k+3) -- the halves SMLAD meets with SXTB16 / SXTB16 ROR 8
 * of four lhs bytes -- then the K % 4 tail as (j: k), (j+1: k). sums: the two columns' sums of (r - r_zp), for the
 * lhs zero point. Strides: bmm_walk's (rk, rj: adj_y or not). */
static void bmm_pack_pair(const bmm_walk_t *w, int32_t rz, const int8_t *rhs, int32_t j, int16_t *c, int32_t *sums) {
    const int8_t *r0 = rhs + (int64_t)j * w->rj, *r1 = j + 1 < w->C ? r0 + w->rj : r0;
    const int32_t K4 = w->K & ~3;
    int32_t k, q, s0 = 0, s1 = 0;
    for (k = 0; k < K4; k += 4, c += 8)
        for (q = 0; q < 4; q++) { /* q: k + (0, 2, 1, 3)[q] */
            const int64_t kk = k + (q >> 1) + 2 * (q & 1);
            const int32_t v0 = r0[kk * w->rk] - rz, v1 = r1[kk * w->rk] - rz;
            c[(q >> 1) * 4 + (q & 1)] = (int16_t)v0;
            c[(q >> 1) * 4 + 2 + (q & 1)] = (int16_t)v1;
            s0 += v0;
            s1 += v1;
        }
    for (; k < w->K; k++, c += 2) {
        const int32_t v0 = r0[(int64_t)k * w->rk] - rz, v1 = r1[(int64_t)k * w->rk] - rz;
        c[0] = (int16_t)v0;
        c[1] = (int16_t)v1;
        s0 += v0;
        s1 += v1;
    }
    sums[0] = s0;
    sums[1] = s1;
}

/* s[0..3] += the 2 x 2 block (lhs rows l0, l1) x (packed columns c) over n4 chunks of four k: per chunk two lhs
 * words, four SXTB16, four packed words, eight SMLAD (20 instructions for 16 MACs with the loop). */
#if defined(__GNUC__)
__attribute__((noinline)) /* its own registers: inlined, GCC -Os spills the 13 live values */
#endif
static void bmm_block_2x2(const int8_t *l0, const int8_t *l1, const int16_t *c, int32_t n4, uint32_t *s) {
    uint32_t s00 = s[0], s01 = s[1], s10 = s[2], s11 = s[3];
#if EDGE_DSP_ASM
    uint32_t wa, wb, a, b, x;
    __asm__ volatile("1:\n\t"
                     "ldr %[wa], [%[l0]], #4\n\t"
                     "ldr %[wb], [%[l1]], #4\n\t"
                     "ldr %[x], [%[c]], #16\n\t"
                     "sxtb16 %[a], %[wa]\n\t"
                     "sxtb16 %[b], %[wb]\n\t"
                     "smlad %[s00], %[a], %[x], %[s00]\n\t"
                     "smlad %[s10], %[b], %[x], %[s10]\n\t"
                     "ldr %[x], [%[c], #-12]\n\t"
                     "smlad %[s01], %[a], %[x], %[s01]\n\t"
                     "smlad %[s11], %[b], %[x], %[s11]\n\t"
                     "sxtb16 %[a], %[wa], ror #8\n\t"
                     "sxtb16 %[b], %[wb], ror #8\n\t"
                     "ldr %[x], [%[c], #-8]\n\t"
                     "smlad %[s00], %[a], %[x], %[s00]\n\t"
                     "smlad %[s10], %[b], %[x], %[s10]\n\t"
                     "ldr %[x], [%[c], #-4]\n\t"
                     "smlad %[s01], %[a], %[x], %[s01]\n\t"
                     "smlad %[s11], %[b], %[x], %[s11]\n\t"
                     "subs %[n4], %[n4], #1\n\t"
                     "bne 1b"
                     : [l0] "+&r"(l0), [l1] "+&r"(l1), [c] "+&r"(c), [n4] "+&r"(n4), [s00] "+&r"(s00),
                       [s01] "+&r"(s01), [s10] "+&r"(s10), [s11] "+&r"(s11), [wa] "=&r"(wa), [wb] "=&r"(wb),
                       [a] "=&r"(a), [b] "=&r"(b), [x] "=&r"(x)
                     :
                     : "cc", "memory");
#else /* the asm's instructions in its order (the emulated-DSP host build) */
    for (; n4 > 0; n4--, l0 += 4, l1 += 4, c += 8) {
        const uint32_t wa = edge_get32(l0), wb = edge_get32(l1);
        uint32_t a = edge_sxtb16(wa), b = edge_sxtb16(wb), x = edge_get32(c);
        s00 = edge_smlad(a, x, s00);
        s10 = edge_smlad(b, x, s10);
        x = edge_get32(c + 2);
        s01 = edge_smlad(a, x, s01);
        s11 = edge_smlad(b, x, s11);
        a = edge_sxtb16_ror8(wa);
        b = edge_sxtb16_ror8(wb);
        x = edge_get32(c + 4);
        s00 = edge_smlad(a, x, s00);
        s10 = edge_smlad(b, x, s10);
        x = edge_get32(c + 6);
        s01 = edge_smlad(a, x, s01);
        s11 = edge_smlad(b, x, s11);
    }
#endif
    s[0] = s00;
    s[1] = s01;
    s[2] = s10;
    s[3] = s11;
}

/* One output: the requantization edge_rq_make took (q, a local copy: two SMMLAR), else edge_mbqm; the clamp to
 * int8 (one SSAT). Inlined at its four uses (GCC -Os would call it: ~10 more instructions an output). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline int8_t bmm_out_int8(const bmm_data_t *d, const edge_rq_t *q, uint32_t acc) {
    const int32_t v = q ? edge_rq_apply(q, (int32_t)acc, d->out_zp)
                        : edge_mbqm((int32_t)acc, d->multiplier, d->shift) + d->out_zp;
#if EDGE_DSP_ASM
    int32_t r;
    __asm__("ssat %0, #8, %1" : "=r"(r) : "r"(v));
    return (int8_t)r;
#else
    return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
#endif
}

/* One INT8 [R, C] product on the DSP, a pair of rhs columns at a time (packed into c: 2 K int16, bmm_pack_pair)
 * against every pair of lhs rows [R, K] (a scratch copy for adj_x). sum_k (l - l_zp)(r - r_zp) = sum_k l (r - r_zp)
 * - l_zp sum_k (r - r_zp): the first sum in 2 x 2 blocks of outputs (bmm_block_2x2), the second from the pair's
 * column sums. Both wrap in uint32 as the portable loop's sum: the same bytes (tests/test_attn_standins_s20.py). */
static void bmm_one_int8_dsp(const bmm_data_t *d, const int8_t *lhs, const int8_t *rhs, int16_t *c, int8_t *y) {
    const bmm_walk_t w = bmm_walk(d);
    const int32_t R = w.R, C = w.C, K = w.K, K4 = K & ~3;
    const edge_rq_t rq = d->dsp_rq, *q = d->dsp_rq_ok ? &rq : NULL;
    const uint32_t lz = (uint32_t)d->l_zp;
    int32_t i, j, k, sums[2];
    for (j = 0; j < C; j += 2) {
        uint32_t z0, z1;
        bmm_pack_pair(&w, d->r_zp, rhs, j, c, sums);
        z0 = lz * (uint32_t)sums[0];
        z1 = lz * (uint32_t)sums[1];
        for (i = 0; i < R; i += 2) {
            const int8_t *l0 = lhs + (int64_t)i * K, *l1 = i + 1 < R ? l0 + K : l0; /* a lone last row: twice */
            int8_t *y0 = y + (int64_t)i * C + j, *y1 = i + 1 < R ? y0 + C : y0;      /* (written twice, same value) */
            const int16_t *t = c + 2 * K4;
            uint32_t s[4] = {0, 0, 0, 0};
            if (K4) bmm_block_2x2(l0, l1, c, K4 / 4, s);
            for (k = K4; k < K; k++, t += 2) {
                s[0] += (uint32_t)(l0[k] * t[0]);
                s[1] += (uint32_t)(l0[k] * t[1]);
                s[2] += (uint32_t)(l1[k] * t[0]);
                s[3] += (uint32_t)(l1[k] * t[1]);
            }
            y0[0] = bmm_out_int8(d, q, s[0] - z0);
            y1[0] = bmm_out_int8(d, q, s[2] - z0);
            if (j + 1 < C) {
                y0[1] = bmm_out_int8(d, q, s[1] - z1);
                y1[1] = bmm_out_int8(d, q, s[3] - z1);
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
    (void)node;
    (void)ctx;
    do {
#if EDGE_DSP
        if (out->type == EDGE_INT8) {
            const int8_t *lm = (const int8_t *)l->data + lo;
            if (d->dsp_lhs >= 0)
                lm = bmm_rows_of_k(lm, d->g.depth, d->g.rows, (int8_t *)edge_scratch(ctx, node, d->dsp_lhs));
            bmm_one_int8_dsp(d, lm, (const int8_t *)r->data + ro, (int16_t *)edge_scratch(ctx, node, d->dsp_rhs),
                             (int8_t *)out->data + yo);
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
