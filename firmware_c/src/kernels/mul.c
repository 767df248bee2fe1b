/* MUL: y = act(a * b) with numpy broadcasting up to rank 6.
 *
 * int8 / int16 as edge_sdk/runtime/kernels/elementwise.py prepare_mul (TFLM mul.cc): (a - za) * (b - zb) in wrapping
 * int32, scaled by one multiplier (sa * sb / so, in double), plus the output zero point, clamped to the fused
 * activation's range; int16 needs zero points of 0. float32: product, clamped. int32: wrapping product
 * clamped to the activation's integer bounds; int64 (TFLM has none; LiteRT's mul.cc, as the Python kernel)
 * likewise in int64. The rows and the eval dispatch are edge_binary.h's (shared with
 * ADD/SUB).
 */
#include "edge_kernel.h"
#include "../edge_binary.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(MUL, mul, 8, "FLOAT32 INT8 INT16 INT32 INT64", "INT16: zero points 0; broadcast up to rank 6")


/* What a row reads, copied once per row (edge_binary.h). */
typedef struct {
    uint32_t zp1, zp2;          /* input zero points (wrapping subtraction) */
    int32_t off_out, lo, hi;
    eb_rq_t q;
    float flo, fhi;
    int64_t lo64, hi64;         /* int64: the activation's bounds */
#if EDGE_DSP
    eb_dsp_rq_t dq;             /* int8 on a DSP core: q as eb_dsp_rq steps */
    int32_t dsp_fast;           /* int8 on a DSP core: mul_row_int8_dsp applies (dq a right shift >= 2) */
#endif
} mul_p_t;

typedef struct {
    ea_bcast_t bc;
    int32_t type;
    mul_p_t p;
    eb_win_t win;               /* how a patch window reads the inputs (edge_binary.h); there with the patch code
                                 * compiled out too (EDGE_WITH_PATCH=0: edge flash's build without a stage), so that
                                 * the op data, and the arena, are the bytes edge check's runner counts */
#if EDGE_SIMD
    int32_t simd;               /* int8 on a 64-bit Linux CPU with a fast path: its level, and its parameters */
    int32_t simd_p[8];
    int32_t fsimd;              /* float32 on a 64-bit Linux CPU: its SIMD level for the rows (0: the portable rows) */
#endif
} mul_data_t;

edge_status_t edge_prepare_mul(edge_node_t *node, edge_ctx_t *ctx) {
    const int32_t act = node->options_type == EDGE_OPTS_MulOptions ? edge_opt_int(node, 0, 1, 0) : 0;
    edge_tensor_t *a, *b, *out;
    mul_data_t *d;
    const edge_status_t s = eb_prepare_types(node, ctx, sizeof *d, act, EB_TYPES_ALL | EB_TYPE(EDGE_INT64),
                                             "C kernel runs FLOAT32, INT8, INT16, INT32, INT64", &a, &b, &out);
    if (s != EDGE_OK) return s;
    d = (mul_data_t *)node->user_data;
    d->type = a->type;
#if EDGE_WITH_PATCH
    eb_window_prepare(&d->win, a, b);
#endif
    if (EDGE_WITH_FLOAT32 && a->type == EDGE_FLOAT32) {
        edge_activation_range_float(act, &d->p.flo, &d->p.fhi);
#if EDGE_SIMD
        d->fsimd = edge_simd_level();
#endif
        return EDGE_OK;
    }
    if (a->type == EDGE_INT64) {
        d->p.lo64 = act == EDGE_ACT_NONE ? INT64_MIN : act == EDGE_ACT_RELU_N1_TO_1 ? -1 : 0;
        d->p.hi64 = act == EDGE_ACT_NONE || act == EDGE_ACT_RELU ? INT64_MAX : act == EDGE_ACT_RELU6 ? 6 : 1;
        return EDGE_OK;
    }
    if (a->type == EDGE_INT32) {
        d->p.lo = act == EDGE_ACT_NONE ? EDGE_INT32_MIN : act == EDGE_ACT_RELU_N1_TO_1 ? -1 : 0;
        d->p.hi = act == EDGE_ACT_NONE || act == EDGE_ACT_RELU ? EDGE_INT32_MAX : act == EDGE_ACT_RELU6 ? 6 : 1;
        return EDGE_OK;
    }
    if (!a->quantized || !b->quantized || !out->quantized)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MUL: quantized tensors need quantization parameters");
    if (!ea_good_scale(a) || !ea_good_scale(b) || !ea_good_scale(out))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MUL: scales must be positive and finite");
    if (a->type == EDGE_INT16 && (a->zero_point || b->zero_point || out->zero_point))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MUL: int16 needs zero points of 0");
    if (edge_activation_range(act, ea_type_min(a->type), ea_type_max(a->type), out->scale, out->zero_point, &d->p.lo,
                              &d->p.hi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "MUL: fused activation");
    {
        int32_t multiplier, shift;
        if (edge_quantize_multiplier((double)a->scale * (double)b->scale / (double)out->scale, &multiplier, &shift))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "MUL: scales give no multiplier");
        eb_rq_init(&d->p.q, multiplier, shift);
#if EDGE_DSP
        eb_dsp_rq_init(&d->p.dq, d->p.q);
        d->p.dsp_fast = a->type == EDGE_INT8 && d->p.dq.left == 0 && d->p.dq.right >= 2;
#endif
    }
    d->p.zp1 = (uint32_t)a->zero_point;
    d->p.zp2 = (uint32_t)b->zero_point;
    d->p.off_out = out->zero_point;
#if EDGE_SIMD
    if (a->type == EDGE_INT8) {
        int32_t *q = d->simd_p;
        q[0] = a->zero_point;
        q[1] = b->zero_point;
        q[2] = d->p.q.multiplier;
        q[3] = d->p.q.left;
        q[4] = d->p.q.right;
        q[5] = d->p.off_out;
        q[6] = d->p.lo;
        q[7] = d->p.hi;
        d->simd = edge_simd_level();
        if (d->simd && !edge_simd_mul_q8(d->simd, 0, 0, 0, 0, 0, 0, q)) d->simd = 0; /* n = 0: has the level it? */
    }
#endif
    return EDGE_OK;
}

/* (x1 - zp1) * (x2 - zp2) in wrapping int32 (the low 32 bits of the exact product), requantized. */
static inline int32_t mul_q(const mul_p_t d, int32_t x1, int32_t x2) {
    const int32_t p = edge_wrap32((int64_t)(((uint32_t)x1 - d.zp1) * ((uint32_t)x2 - d.zp2)));
    return (int32_t)ea_clamp((int64_t)eb_rq(d.q, p) + d.off_out, d.lo, d.hi);
}

static inline float mul_f(const mul_p_t d, float x1, float x2) { return eb_clampf(x1 * x2, d.flo, d.fhi); }

static inline int32_t mul_i32(const mul_p_t d, int32_t x1, int32_t x2) {
    return (int32_t)ea_clamp(edge_wrap32((int64_t)((uint32_t)x1 * (uint32_t)x2)), d.lo, d.hi);
}

/* int64: the wrapping product (on the unsigned bits), clamped */
static inline int64_t mul_i64(const mul_p_t d, int64_t x1, int64_t x2) {
    const uint64_t v = (uint64_t)x1 * (uint64_t)x2;
    const int64_t x = v <= (uint64_t)INT64_MAX ? (int64_t)v : (int64_t)(v - ((uint64_t)1 << 63)) + INT64_MIN;
    return x < d.lo64 ? d.lo64 : x > d.hi64 ? d.hi64 : x;
}

EB_ROWS64(mul_rows, mul, mul_p_t, mul_q, mul_q, mul_i32, mul_f, mul_i64)

#if EDGE_DSP
/* int8 rows on a DSP core (Cortex-M4/M7): mul_q with the requantization in 32 bits (eb_dsp_rq_r2: SMMLAR, no
 * 64-bit helper) and every parameter in a local; |product| <= 255 * 255 < 2^16 never wraps. For a right shift of
 * 2 or more (sa * sb / so < 1/4, the usual gate or scale), else the element rows (dsp_fast 0). */
static void mul_row_int8_dsp(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const mul_p_t *p = (const mul_p_t *)op;
    const int8_t *x1 = (const int8_t *)a, *x2 = (const int8_t *)b;
    int8_t *o = (int8_t *)y;
    const int32_t zp1 = (int32_t)p->zp1, zp2 = (int32_t)p->zp2, m = p->dq.mul2, rnd = p->dq.rnd, zo = p->off_out;
    const int32_t lo = p->lo, hi = p->hi;
    int32_t i;
    if (!p->dsp_fast) {
        mul_row_int8(op, a, sa, b, sb, y, n);
        return;
    }
    for (i = 0; i < n; i++, x1 += sa, x2 += sb) {
        const int32_t r = eb_dsp_rq_r2((*x1 - zp1) * (*x2 - zp2), m, rnd, zo);
        o[i] = (int8_t)(r < lo ? lo : (r > hi ? hi : r));
    }
}
static const eb_rows_t mul_rows_dsp = {mul_row_int8_dsp, EDGE_WITH_INT16 ? mul_row_int16 : 0, mul_row_int32,
                                       EDGE_WITH_FLOAT32 ? mul_row_float : 0, mul_row_int64};
#define MUL_ROWS(d) ((d)->p.dsp_fast ? &mul_rows_dsp : &mul_rows)
#else
#define MUL_ROWS(d) (&mul_rows)
#endif

#if EDGE_SIMD
static void mul_row_simd(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const mul_data_t *d = (const mul_data_t *)op;
    /* 16 lanes where the level has them (src/simd/edge_simd_dw_x86.c), else the level's 8-lane rows */
    if (!edge_simd_mul_q8_wide(d->simd, (const int8_t *)a, sa, (const int8_t *)b, sb, (int8_t *)y, n, d->simd_p))
        (void)edge_simd_mul_q8(d->simd, (const int8_t *)a, sa, (const int8_t *)b, sb, (int8_t *)y, n, d->simd_p);
}
#endif

void edge_eval_mul(const edge_node_t *node, edge_ctx_t *ctx) {
    const mul_data_t *d = (const mul_data_t *)node->user_data;
    const void *a = edge_in(ctx, node, 0)->data, *b = edge_in(ctx, node, 1)->data;
    void *y = edge_out(ctx, node, 0)->data;
#if EDGE_WITH_PATCH
    if (eb_window_eval(node, ctx, &d->win, &d->p, d->type, MUL_ROWS(d), a, b, y)) return; /* a patch window */
#endif
#if EDGE_SIMD
    if (eb_eval_simd(&d->bc, d->type, d->fsimd, EDGE_SIMD_F32_MUL, d->p.flo, d->p.fhi, d->simd, d, mul_row_simd, a,
                     b, y))
        return;
#endif
    eb_eval(&d->bc, &d->p, d->type, MUL_ROWS(d), a, b, y);
}
