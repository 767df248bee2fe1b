/* ADD and SUB (one file, so a model using either links it): y = act(a +- b), numpy broadcasting up to rank 6.
 *
 * int8 / int16 as edge_sdk/runtime/kernels/elementwise.py (TFLM add.cc / sub.cc): both inputs minus their zero
 * points are shifted left (20 bits for int8, 15 for int16), scaled to a common scale with their own
 * multipliers (ratios to twice the larger input scale, formed in double as the tflite-micro wheel does for
 * both ADD and SUB), summed (or subtracted) in wrapping int32, scaled to the output, offset by the output zero
 * point and clamped to the fused activation's range. float32: plain sum, clamped. int32: wrapping sum; ADD
 * ignores the fused activation, SUB clamps to its integer bounds. int64 (TFLM has none; LiteRT's add.cc /
 * sub.cc, as the Python kernel): wrapping sum or difference, both clamped to the activation's int64 range.
 * Prepare computes the broadcast loop and
 * the multipliers (split into eb_rq_t steps); eval walks coalesced rows (edge_binary.h).
 */
#include "edge_kernel.h"
#include "../edge_binary.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(ADD, add, 6, "FLOAT32 INT8 INT16 INT32 INT64", "inputs of one type; broadcast up to rank 6")
EDGE_KERNEL(SUB, sub, 5, "FLOAT32 INT8 INT16 INT32 INT64", "inputs of one type; broadcast up to rank 6")


/* What a row reads, copied once per row (edge_binary.h). */
typedef struct {
    uint32_t zp1, zp2;          /* input zero points (wrapping subtraction) */
    int32_t off_out, lo, hi;
    eb_rq_t q1, q2, qo;
    float flo, fhi;
    int64_t lo64, hi64;         /* int64: the activation's bounds */
#if EDGE_DSP
    eb_dsp_rq_t d1, d2, dout;   /* int8 on a DSP core: q1, q2 and qo as eb_dsp_rq steps */
    int32_t dsp_fast;           /* int8 on a DSP core: ADDSUB_ROW_DSP's rows apply (dout a right shift >= 2) */
#endif
} addsub_p_t;

typedef struct {
    ea_bcast_t bc;
    int32_t type, sign;
    addsub_p_t p;
    eb_win_t win;               /* how a patch window reads the inputs (edge_binary.h); there with the patch code
                                 * compiled out too (EDGE_WITH_PATCH=0: edge flash's build without a stage), so that
                                 * the op data, and the arena, are the bytes edge check's runner counts */
#if EDGE_SIMD
    int32_t simd;               /* int8 on a 64-bit Linux CPU with a fast path: its level, and its parameters */
    int32_t simd_p[13];
    int32_t fsimd;              /* float32 on a 64-bit Linux CPU: its SIMD level for the rows (0: the portable rows) */
    int32_t prelu_c;            /* float32 ADD running the next PRELU in its pass (edge_add_prelu_next): its
                                 * channels (alpha's count, the last axis; 0: no PRELU), its output, its slopes */
    int32_t prelu_out, prelu_alpha; /* tensors (the slopes may be folded after this prepare: data read at eval) */
    const edge_node_t *prelu;   /* the next PRELU it may run (int8: its table is made at its prepare, after this);
                                 * it does when the planner fused the pair (edge_add_prelu_runs) */
#endif
} addsub_data_t;

static edge_status_t edge_addsub_prepare(edge_node_t *node, edge_ctx_t *ctx, int sign) {
    const int opts = sign > 0 ? EDGE_OPTS_AddOptions : EDGE_OPTS_SubOptions;
    const int32_t act = node->options_type == opts ? edge_opt_int(node, 0, 1, 0) : 0;
    edge_tensor_t *a, *b, *out;
    addsub_data_t *d;
    const edge_status_t s = eb_prepare_types(node, ctx, sizeof *d, act, EB_TYPES_ALL | EB_TYPE(EDGE_INT64),
                                             "C kernel runs FLOAT32, INT8, INT16, INT32, INT64", &a, &b, &out);
    if (s != EDGE_OK) return s;
    d = (addsub_data_t *)node->user_data;
    d->type = a->type;
    d->sign = sign;
#if EDGE_WITH_PATCH
    eb_window_prepare(&d->win, a, b);
#endif
    if (EDGE_WITH_FLOAT32 && a->type == EDGE_FLOAT32) {
        edge_activation_range_float(act, &d->p.flo, &d->p.fhi);
#if EDGE_SIMD
        d->fsimd = edge_simd_level();
        {
            const edge_node_t *prelu = sign > 0 && d->fsimd ? edge_add_prelu_next(ctx, node) : 0;
            if (prelu) {
                d->prelu = prelu;
                d->prelu_c = out->dims[out->rank - 1];
                d->prelu_out = prelu->outputs[0];
                d->prelu_alpha = prelu->inputs[1];
            }
        }
#endif
        return EDGE_OK;
    }
    if (a->type == EDGE_INT64) {
        d->p.lo64 = act == EDGE_ACT_NONE ? INT64_MIN : act == EDGE_ACT_RELU_N1_TO_1 ? -1 : 0;
        d->p.hi64 = act == EDGE_ACT_NONE || act == EDGE_ACT_RELU ? INT64_MAX : act == EDGE_ACT_RELU6 ? 6 : 1;
        return EDGE_OK;
    }
    if (a->type == EDGE_INT32) {
        /* TFLM's int32 ADD ignores the activation; SUB clamps to the activation's integer bounds */
        const int clamp = sign < 0 && act != EDGE_ACT_NONE;
        d->p.lo = !clamp ? EDGE_INT32_MIN : act == EDGE_ACT_RELU_N1_TO_1 ? -1 : 0;
        d->p.hi = !clamp || act == EDGE_ACT_RELU ? EDGE_INT32_MAX : act == EDGE_ACT_RELU6 ? 6 : 1;
        return EDGE_OK;
    }
    if (!a->quantized || !b->quantized || !out->quantized)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ADD/SUB: quantized tensors need quantization parameters");
    if (!ea_good_scale(a) || !ea_good_scale(b) || !ea_good_scale(out))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ADD/SUB: scales must be positive and finite");
    {
        const double twice_max = 2.0 * (double)(a->scale > b->scale ? a->scale : b->scale);
        const int32_t left_shift = a->type == EDGE_INT16 ? 15 : 20;
        int32_t m1, s1, m2, s2, mo, so;
        if (edge_quantize_multiplier((double)a->scale / twice_max, &m1, &s1) ||
            edge_quantize_multiplier((double)b->scale / twice_max, &m2, &s2) ||
            edge_quantize_multiplier(twice_max / ((double)(1 << left_shift) * (double)out->scale), &mo, &so))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ADD/SUB: scales give no multiplier");
        /* the input ratios are at most 1/2: shifts <= 0, which addsub_in relies on */
        eb_rq_init(&d->p.q1, m1, s1);
        eb_rq_init(&d->p.q2, m2, s2);
        eb_rq_init(&d->p.qo, mo, so);
#if EDGE_DSP
        eb_dsp_rq_init(&d->p.d1, d->p.q1);
        eb_dsp_rq_init(&d->p.d2, d->p.q2);
        eb_dsp_rq_init(&d->p.dout, d->p.qo);
        d->p.dsp_fast = a->type == EDGE_INT8 && d->p.dout.left == 0 && d->p.dout.right >= 2;
#endif
    }
    d->p.zp1 = (uint32_t)a->zero_point;
    d->p.zp2 = (uint32_t)b->zero_point;
    d->p.off_out = out->zero_point;
    if (edge_activation_range(act, ea_type_min(a->type), ea_type_max(a->type), out->scale, out->zero_point, &d->p.lo,
                              &d->p.hi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "ADD/SUB: fused activation");
#if EDGE_SIMD
    if (a->type == EDGE_INT8) {
        int32_t *q = d->simd_p;
        q[0] = a->zero_point;
        q[1] = b->zero_point;
        q[2] = d->p.q1.multiplier;
        q[3] = d->p.q1.right;
        q[4] = d->p.q2.multiplier;
        q[5] = d->p.q2.right;
        q[6] = sign;
        q[7] = d->p.qo.multiplier;
        q[8] = d->p.qo.left;
        q[9] = d->p.qo.right;
        q[10] = d->p.off_out;
        q[11] = d->p.lo;
        q[12] = d->p.hi;
        /* the input steps take no left shift (ratios <= 1/2, addsub_in's assumption); a level runs it only
         * when it has the path (a call with n = 0 asks) */
        d->simd = d->p.q1.left == 0 && d->p.q2.left == 0 ? edge_simd_level() : 0;
        if (d->simd && !edge_simd_addsub_q8(d->simd, 0, 0, 0, 0, 0, 0, q)) d->simd = 0;
        d->prelu = sign > 0 ? edge_add_prelu_next(ctx, node) : 0;
    }
#endif
    return EDGE_OK;
}

/* One quantized input on the common scale: (x - zp) << L (L = 20 for int8, 15 for int16), wrapped to int32,
 * times its multiplier (a ratio of at most 1/2: a right shift only, which prepare's eb_rq_init gives). */
static inline int32_t addsub_in(eb_rq_t q, int32_t x, uint32_t zp, int32_t L) {
    return edge_rdbpot(eb_srdhm(edge_wrap32((int64_t)(((uint32_t)x - zp) << L)), q.multiplier), q.right);
}

static inline int32_t addsub_out(const addsub_p_t d, int32_t sum) {
    return (int32_t)ea_clamp((int64_t)eb_rq(d.qo, sum) + d.off_out, d.lo, d.hi);
}

#define ADDSUB_Q(name, op, L)                                                                                   \
    static inline int32_t name(const addsub_p_t d, int32_t x1, int32_t x2) {                                 \
        return addsub_out(d, edge_wrap32((int64_t)addsub_in(d.q1, x1, d.zp1, L) op addsub_in(d.q2, x2, d.zp2, L))); \
    }
ADDSUB_Q(add_q8, +, 20)
ADDSUB_Q(sub_q8, -, 20)
ADDSUB_Q(add_q16, +, 15)
ADDSUB_Q(sub_q16, -, 15)

/* int8 without broadcasting, at least ADDSUB_TABLE_MIN elements: each input's scaled value depends on its
 * byte alone, so its 256 values are tabulated first (int32, 1 KB per input) and each element is two lookups,
 * one sum and the output step. The tables live in the output's last bytes (the output is not read before it is
 * written; eval checks it shares no bytes with the inputs), so they take no memory: the body of the output is
 * computed from them, then the last bytes the tables occupied, element by element. */
#define ADDSUB_TABLE_MIN 4096

static void addsub_int8_tables(const addsub_data_t *dd, const int8_t *x1, const int8_t *x2, int8_t *o, int32_t n,
                               ea_row_fn row) {
    const addsub_p_t d = dd->p;
    const uintptr_t end = (uintptr_t)(o + n);
    int32_t *t1 = (int32_t *)((end - 2 * 256 * sizeof(int32_t)) & ~(uintptr_t)(sizeof(int32_t) - 1));
    int32_t *t2 = t1 + 256;
    const int32_t body = (int32_t)((int8_t *)t1 - o);
    int32_t i;
    for (i = -128; i < 128; i++) {
        /* SUB: the second table negated (a scaled value is never INT32_MIN, so its negation is exact) */
        const int32_t s2 = addsub_in(d.q2, i, d.zp2, 20);
        t1[(uint8_t)i] = addsub_in(d.q1, i, d.zp1, 20);
        t2[(uint8_t)i] = dd->sign > 0 ? s2 : -s2;
    }
    for (i = 0; i < body; i++) o[i] = (int8_t)addsub_out(d, edge_wrap32((int64_t)t1[(uint8_t)x1[i]] + t2[(uint8_t)x2[i]]));
    row(&dd->p, x1 + body, 1, x2 + body, 1, o + body, n - body);
}

static inline float add_f(const addsub_p_t d, float x1, float x2) { return eb_clampf(x1 + x2, d.flo, d.fhi); }
static inline float sub_f(const addsub_p_t d, float x1, float x2) { return eb_clampf(x1 - x2, d.flo, d.fhi); }

static inline int32_t add_i32(const addsub_p_t d, int32_t x1, int32_t x2) {
    return (int32_t)ea_clamp(edge_wrap32((int64_t)x1 + x2), d.lo, d.hi);
}

static inline int32_t sub_i32(const addsub_p_t d, int32_t x1, int32_t x2) {
    return (int32_t)ea_clamp(edge_wrap32((int64_t)x1 - x2), d.lo, d.hi);
}

/* int64: the sum / difference wraps (computed on the unsigned bits), then clamps */
static inline int64_t addsub_i64(const addsub_p_t d, uint64_t v) {
    const int64_t x = v <= (uint64_t)INT64_MAX ? (int64_t)v : (int64_t)(v - ((uint64_t)1 << 63)) + INT64_MIN;
    return x < d.lo64 ? d.lo64 : x > d.hi64 ? d.hi64 : x;
}
static inline int64_t add_i64(const addsub_p_t d, int64_t x1, int64_t x2) {
    return addsub_i64(d, (uint64_t)x1 + (uint64_t)x2);
}
static inline int64_t sub_i64(const addsub_p_t d, int64_t x1, int64_t x2) {
    return addsub_i64(d, (uint64_t)x1 - (uint64_t)x2);
}
EB_ROWS64(add_rows, add, addsub_p_t, add_q8, add_q16, add_i32, add_f, add_i64)
EB_ROWS64(sub_rows, sub, addsub_p_t, sub_q8, sub_q16, sub_i32, sub_f, sub_i64)

#if EDGE_DSP
/* int8 rows on a DSP core (Cortex-M4/M7): add_q8 / sub_q8 in 32 bits (edge_binary.h's eb_dsp_rq_s: SMMLAR, no
 * 64-bit helper) with every parameter in a local, about 30 instructions an element where the element rows take
 * ~96 at -Os. The output step must be a right shift of 2 or more (2 * max input scale / (2^20 * output scale) <
 * 1/4: any output scale above 2^-17 of the inputs'), else the element rows (dsp_fast 0). |x - zp| << 20 < 2^28
 * never wraps; the scaled sum stays below 2^29. */
#define ADDSUB_ROW_DSP(name, elem_row, op)                                                                      \
    static void name(const void *opd, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) { \
        const addsub_p_t *p = (const addsub_p_t *)opd;                                                       \
        const int8_t *x1 = (const int8_t *)a, *x2 = (const int8_t *)b;                                       \
        int8_t *o = (int8_t *)y;                                                                             \
        const int32_t zp1 = (int32_t)p->zp1, m1 = p->d1.mul2, s1 = p->d1.right, r1 = p->d1.rnd;             \
        const int32_t zp2 = (int32_t)p->zp2, m2 = p->d2.mul2, s2 = p->d2.right, r2 = p->d2.rnd;             \
        const int32_t mo = p->dout.mul2, ro = p->dout.rnd, zo = p->off_out, lo = p->lo, hi = p->hi;         \
        int32_t i;                                                                                           \
        if (!p->dsp_fast) {                                                                                  \
            elem_row(opd, a, sa, b, sb, y, n);                                                               \
            return;                                                                                          \
        }                                                                                                    \
        for (i = 0; i < n; i++, x1 += sa, x2 += sb) {                                                        \
            const int32_t sum = eb_dsp_rq_s(*x1 - zp1, 20, m1, s1, r1, 0) op eb_dsp_rq_s(*x2 - zp2, 20, m2, s2, r2, 0); \
            const int32_t r = eb_dsp_rq_r2(sum, mo, ro, zo);                                                 \
            o[i] = (int8_t)(r < lo ? lo : (r > hi ? hi : r));                                                \
        }                                                                                                    \
    }
ADDSUB_ROW_DSP(add_row_int8_dsp, add_row_int8, +)
ADDSUB_ROW_DSP(sub_row_int8_dsp, sub_row_int8, -)
static const eb_rows_t add_rows_dsp = {add_row_int8_dsp, EDGE_WITH_INT16 ? add_row_int16 : 0, add_row_int32,
                                       EDGE_WITH_FLOAT32 ? add_row_float : 0, add_row_int64};
static const eb_rows_t sub_rows_dsp = {sub_row_int8_dsp, EDGE_WITH_INT16 ? sub_row_int16 : 0, sub_row_int32,
                                       EDGE_WITH_FLOAT32 ? sub_row_float : 0, sub_row_int64};
#endif

#if EDGE_SIMD
static void addsub_row_simd(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const addsub_data_t *d = (const addsub_data_t *)op;
    /* 16 lanes where the level has them (src/simd/edge_simd_dw_x86.c), else the level's 8-lane rows */
    if (!edge_simd_addsub_q8_wide(d->simd, (const int8_t *)a, sa, (const int8_t *)b, sb, (int8_t *)y, n, d->simd_p))
        (void)edge_simd_addsub_q8(d->simd, (const int8_t *)a, sa, (const int8_t *)b, sb, (int8_t *)y, n, d->simd_p);
}
#endif

#if EDGE_SIMD
/* ADD then the next PRELU (edge_add_prelu_next, fused by the planner) in one pass over cache-sized blocks of whole
 * rows: each block's sums (the ADD rows' SIMD row, its clamp) into the PRELU's output, then the PRELU's channel rows
 * over them in place while they are in L1: each element's two operations as apart, the same bits. The planner gave
 * the PRELU's output the ADD output's bytes: off the inputs, or exactly at one (read before written). */
#define ADD_PRELU_BLOCK 4096 /* floats: 16 KB of output a block */
static void add_prelu_eval(const addsub_data_t *d, edge_ctx_t *ctx, const edge_node_t *node) {
    const edge_tensor_t *ta = edge_in(ctx, node, 0), *tb = edge_in(ctx, node, 1), *ty = &ctx->tensors[d->prelu_out];
    const float *a = (const float *)ta->data, *b = (const float *)tb->data;
    float *y = (float *)ty->data;
    const float *alpha = (const float *)ctx->tensors[d->prelu_alpha].data;
    const int32_t c = d->prelu_c;
    const int64_t rows = edge_tensor_elements(ty) / c, step = c >= ADD_PRELU_BLOCK ? 1 : ADD_PRELU_BLOCK / c;
    edge_simd_binf_t f;
    int64_t r;
    f.level = d->fsimd;
    f.kind = EDGE_SIMD_F32_ADD;
    f.lo = d->p.flo;
    f.hi = d->p.fhi;
    for (r = 0; r < rows; r += step) { /* rows [r, r + nr): elements at r * c */
        const int64_t nr = rows - r < step ? rows - r : step, at = r * c;
        edge_simd_binary_f32_row(&f, a + at, 1, b + at, 1, y + at, (int32_t)(nr * c));
        (void)edge_simd_prelu_f32_rows(d->fsimd, y + at, alpha, c, nr, y + at);
    }
}
#endif

#if EDGE_SIMD
/* int8 ADD then the next PRELU (edge_add_prelu_next, fused by the planner: the PRELU has its table, at most 256
 * channels, or it offers no pair) in one pass over cache-sized blocks of whole rows: each block's requantized sums
 * (the int8 ADD's row) into the PRELU's output, then the PRELU's per-channel table over them in place while they are
 * in L1: the bits of the two apart. */
#define ADD_PRELU_Q8_BLOCK 16384 /* bytes of output a block */
static void add_prelu_q8_eval(const addsub_data_t *d, edge_ctx_t *ctx, const edge_node_t *node) {
    const edge_tensor_t *ta = edge_in(ctx, node, 0), *tb = edge_in(ctx, node, 1), *ty = edge_out(ctx, d->prelu, 0);
    const int8_t *a = (const int8_t *)ta->data, *b = (const int8_t *)tb->data;
    int8_t *y = (int8_t *)ty->data;
    const int32_t c = edge_prelu_int8_rows(d->prelu, NULL, NULL, 0);
    int64_t rows, step, r;
    rows = edge_tensor_elements(ty) / c;
    step = c >= ADD_PRELU_Q8_BLOCK ? 1 : ADD_PRELU_Q8_BLOCK / c;
    for (r = 0; r < rows; r += step) { /* rows [r, r + nr): elements at r * c */
        const int64_t nr = rows - r < step ? rows - r : step, at = r * c;
        if (d->simd)
            addsub_row_simd(d, a + at, 1, b + at, 1, y + at, (int32_t)(nr * c));
        else
            add_rows.int8(&d->p, a + at, 1, b + at, 1, y + at, (int32_t)(nr * c));
        (void)edge_prelu_int8_rows(d->prelu, y + at, y + at, nr);
    }
}
#endif

/* n bytes at p and at q do not overlap (compared as addresses: they may lie in different objects). */
static int disjoint(const void *p, const void *q, int32_t n) {
    const uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
    return a + (uintptr_t)n <= b || b + (uintptr_t)n <= a;
}

static void edge_addsub_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const addsub_data_t *d = (const addsub_data_t *)node->user_data;
    const void *a = edge_in(ctx, node, 0)->data, *b = edge_in(ctx, node, 1)->data;
    void *y = edge_out(ctx, node, 0)->data;
#if EDGE_DSP
    const eb_rows_t *rows = d->p.dsp_fast ? (d->sign > 0 ? &add_rows_dsp : &sub_rows_dsp)
                                          : (d->sign > 0 ? &add_rows : &sub_rows);
#else
    const eb_rows_t *rows = d->sign > 0 ? &add_rows : &sub_rows;
#endif
#if EDGE_WITH_PATCH
    if (eb_window_eval(node, ctx, &d->win, &d->p, d->type, rows, a, b, y)) return; /* a patch window */
#endif
#if EDGE_SIMD
    if (d->prelu && edge_add_prelu_runs(d->prelu)) { /* the PRELU's output in this pass; invoke skips the PRELU */
        if (d->prelu_c) add_prelu_eval(d, ctx, node);
        else add_prelu_q8_eval(d, ctx, node);
        return;
    }
    if (eb_eval_simd(&d->bc, d->type, d->fsimd, d->sign > 0 ? EDGE_SIMD_F32_ADD : EDGE_SIMD_F32_SUB, d->p.flo,
                     d->p.fhi, d->simd, d, addsub_row_simd, a, b, y))
        return;
#endif
#if EDGE_DSP
    if (d->p.dsp_fast) { /* its rows beat the tables: no table to fill, no output step in 64 bits */
        eb_eval(&d->bc, &d->p, d->type, rows, a, b, y);
        return;
    }
#endif
    if (d->type == EDGE_INT8 && d->bc.rank == 1 && d->bc.a_stride[0] && d->bc.b_stride[0] &&
        d->bc.count >= ADDSUB_TABLE_MIN && disjoint(y, a, d->bc.dims[0]) && disjoint(y, b, d->bc.dims[0])) {
        addsub_int8_tables(d, (const int8_t *)a, (const int8_t *)b, (int8_t *)y, d->bc.dims[0], rows->int8);
        return;
    }
    eb_eval(&d->bc, &d->p, d->type, rows, a, b, y);
}

edge_status_t edge_prepare_add(edge_node_t *node, edge_ctx_t *ctx) { return edge_addsub_prepare(node, ctx, 1); }

void edge_eval_add(const edge_node_t *node, edge_ctx_t *ctx) { edge_addsub_eval(node, ctx); }

edge_status_t edge_prepare_sub(edge_node_t *node, edge_ctx_t *ctx) { return edge_addsub_prepare(node, ctx, -1); }

void edge_eval_sub(const edge_node_t *node, edge_ctx_t *ctx) { edge_addsub_eval(node, ctx); }
