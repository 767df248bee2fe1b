/* edge_binary.h - what the broadcasting two-input kernels (ADD/SUB, MUL, DIV, SQUARED_DIFFERENCE, POW, PRELU)
 * share: the two-input prepare, the per-type row loops over a broadcast (edge_fixedpoint_act.h's
 * ea_bcast_t), the eval dispatch on the tensor type, and a requantization step whose parameters are fixed at
 * prepare.
 *
 * A kernel defines one inline function per type computing one output element from two input elements and its
 * op data, then EB_ROW(name, T, op_t, elem) makes the row function: the contiguous case (both steps 1) and the
 * two broadcast cases (one step 0) are separate loops, so the compiler keeps the broadcast operand's work out
 * of the loop, and the op data is read into the element function as a copy (an int8 store may alias anything
 * a pointer reaches, which would otherwise reload every parameter after every element).
 */
#ifndef EDGE_BINARY_H
#define EDGE_BINARY_H

#include "edge_fixedpoint_act.h"
#include "edge_dsp.h"

/* MultiplyByQuantizedMultiplier (ea_mbqm, any shift) with its shift split at prepare: x << left (wrapped), the
 * doubling high multiply, a rounding right shift. For a multiplier from edge_quantize_multiplier of a
 * non-negative real (0 or in [2^30, 2^31)): never INT32_MIN, so the high multiply's saturating case cannot
 * occur and its result is above INT32_MIN; so a right shift past 31 gives 0, as does a left shift past 31
 * (the shifted value is 0): both become multiplier 0. */
typedef struct {
    int32_t multiplier, left, right;
} eb_rq_t;

static inline void eb_rq_init(eb_rq_t *q, int32_t multiplier, int32_t shift) {
    const int out_of_reach = shift > 31 || shift < -31;
    q->multiplier = out_of_reach ? 0 : multiplier;
    q->left = shift > 0 && !out_of_reach ? shift : 0;
    q->right = shift < 0 && !out_of_reach ? -shift : 0;
}

/* round(x * m / 2^31) with halves away from zero, for m >= 0: (x*m + 2^30) >> 31 gives it for both signs
 * (for a negative product, the reference's truncating division of (x*m + 1 - 2^30) equals that floor). */
static inline int32_t eb_srdhm(int32_t x, int32_t m) {
    return (int32_t)(((int64_t)x * m + ((int64_t)1 << 30)) >> 31);
}

static inline int32_t eb_rq(eb_rq_t q, int32_t x) {
    const int32_t shifted = edge_wrap32((int64_t)(uint32_t)((uint32_t)x << q.left));
    return edge_rdbpot(eb_srdhm(shifted, q.multiplier), q.right);
}

#if EDGE_DSP
/* eb_rq's steps for a DSP core (Cortex-M4/M7), plus a zero point: no 64-bit helper. The doubling high multiply
 * floor((y * m + 2^30) / 2^31) is SMMLAR(y, 2m - 2^32, y) (edge_dsp.h's edge_rq_t: m in [2^30, 2^31), which
 * eb_rq_init's multipliers are, or 0); the rounding right shift (halves away from zero: -1 for a negative h first)
 * is SMMLAR(h, 2^(32 - right), zp) for right >= 2, (h + 1) >> 1 for 1, nothing for 0. A zero multiplier is
 * right 31 with y passed through (SMMLAR(y, 0, y) = y): 0, as eb_rq's, for |x| < 2^30 (the element kernels'
 * values: ADD's scaled sums < 2^29, products of two int8 differences < 2^16). */
typedef struct {
    int32_t left, mul2, right, rnd;
} eb_dsp_rq_t;

static inline void eb_dsp_rq_init(eb_dsp_rq_t *d, eb_rq_t q) {
    d->left = q.left;
    d->mul2 = (int32_t)((uint32_t)q.multiplier << 1);
    d->right = q.multiplier ? q.right : 31;
    d->rnd = d->right >= 2 ? (int32_t)((uint32_t)1 << (32 - d->right)) : 0;
}

/* Forced inline: at -Os GCC keeps a call per element otherwise (the row loops are these kernels' whole cost). */
#if defined(__GNUC__)
#define EB_DSP_INLINE static inline __attribute__((always_inline))
#else
#define EB_DSP_INLINE static inline
#endif

/* eb_rq(q, x) + zp with q's fields (eb_dsp_rq_init) as scalars, for row loops that keep them in registers;
 * bit-exact for every x that eb_rq_init's zero case allows. */
EB_DSP_INLINE int32_t eb_dsp_rq_s(int32_t x, int32_t left, int32_t mul2, int32_t right, int32_t rnd, int32_t zp) {
    const int32_t y = (int32_t)((uint32_t)x << left);
    const int32_t h = edge_smmlar(y, mul2, y);
    if (right >= 2) return edge_smmlar(h + (h >> 31), rnd, zp); /* >> of a negative: arithmetic, as everywhere */
    return (right ? (h + (h >> 31) + 1) >> 1 : h) + zp;
}

/* The same for a right shift of 2 or more and no left shift (the output steps of ADD / SUB / MUL): 4 instructions. */
EB_DSP_INLINE int32_t eb_dsp_rq_r2(int32_t x, int32_t mul2, int32_t rnd, int32_t zp) {
    const int32_t h = edge_smmlar(x, mul2, x);
    return edge_smmlar(h + (h >> 31), rnd, zp);
}
#endif

/* A row function (ea_row_fn) from an element function elem(op_t params, T x1, T x2) -> int32/float; op
 * points at the op_t (keep it small: it is copied once per row). Size-optimized builds (-Os) keep one loop. */
#ifdef __OPTIMIZE_SIZE__
#define EB_ROW_LOOPS(T, elem) for (i = 0; i < n; i++) o[i] = (T)elem(d, x1[i * sa], x2[i * sb]);
#else
#define EB_ROW_LOOPS(T, elem)                                                                                    \
    if (sa && sb)                                                                                                \
        for (i = 0; i < n; i++) o[i] = (T)elem(d, x1[i], x2[i]);                                                 \
    else if (sb)                                                                                                 \
        for (i = 0; i < n; i++) o[i] = (T)elem(d, x1[0], x2[i]);                                                 \
    else if (sa)                                                                                                 \
        for (i = 0; i < n; i++) o[i] = (T)elem(d, x1[i], x2[0]);                                                 \
    else                                                                                                         \
        for (i = 0; i < n; i++) o[i] = (T)elem(d, x1[0], x2[0]);
#endif
#define EB_ROW(name, T, op_t, elem)                                                                              \
    static void name(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {  \
        const op_t d = *(const op_t *)op;                                                                         \
        const T *x1 = (const T *)a, *x2 = (const T *)b;                                                           \
        T *o = (T *)y;                                                                                            \
        int32_t i;                                                                                                \
        EB_ROW_LOOPS(T, elem)                                                                                     \
    }

static inline float eb_clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* The rows of one kernel, by tensor type; NULL for a type the kernel has no row for (int64: ADD/SUB only, their
 * own table; EB_ROWS leaves it NULL). */
typedef struct {
    ea_row_fn int8, int16, int32, f32, int64;
} eb_rows_t;

/* A kernel's four row functions (prefix##_row_int8 ...) from its element functions, and their table `table`
 * (the int16 and float32 rows only in builds with those types; int64: `row64`, 0 for none). */
#define EB_ROWS_WITH(table, prefix, op_t, elem8, elem16, elem32, elemf, row64)                                   \
    EB_ROW(prefix##_row_int8, int8_t, op_t, elem8)                                                               \
    EB_ROW(prefix##_row_int16, int16_t, op_t, elem16)                                                            \
    EB_ROW(prefix##_row_int32, int32_t, op_t, elem32)                                                            \
    EB_ROW(prefix##_row_float, float, op_t, elemf)                                                               \
    static const eb_rows_t table = {prefix##_row_int8, EDGE_WITH_INT16 ? prefix##_row_int16 : 0,                  \
                                    prefix##_row_int32, EDGE_WITH_FLOAT32 ? prefix##_row_float : 0, row64};
#define EB_ROWS(table, prefix, op_t, elem8, elem16, elem32, elemf)                                               \
    EB_ROWS_WITH(table, prefix, op_t, elem8, elem16, elem32, elemf, 0)
/* The same with an int64 row too (prefix##_row_int64 from elem64). */
#define EB_ROWS64(table, prefix, op_t, elem8, elem16, elem32, elemf, elem64)                                     \
    EB_ROW(prefix##_row_int64, int64_t, op_t, elem64)                                                            \
    EB_ROWS_WITH(table, prefix, op_t, elem8, elem16, elem32, elemf, prefix##_row_int64)

/* The input types a binary kernel runs: a mask of 1 << EDGE_<type>, some of FLOAT32, INT8, INT16, INT32, INT64
 * (ADD/SUB only; the test below is written per type so that a constant mask folds to plain compares). */
#define EB_TYPE(t) (1u << (t))
#define EB_TYPES_ALL (EB_TYPE(EDGE_FLOAT32) | EB_TYPE(EDGE_INT8) | EB_TYPE(EDGE_INT16) | EB_TYPE(EDGE_INT32))
static inline int eb_type_in(int32_t t, uint32_t types) {
    return (t == EDGE_FLOAT32 && (types & EB_TYPE(EDGE_FLOAT32))) || (t == EDGE_INT8 && (types & EB_TYPE(EDGE_INT8))) ||
           (t == EDGE_INT16 && (types & EB_TYPE(EDGE_INT16))) || (t == EDGE_INT32 && (types & EB_TYPE(EDGE_INT32))) ||
           (t == EDGE_INT64 && (types & EB_TYPE(EDGE_INT64)));
}

/* The two-input prepare every broadcasting binary kernel shares: two inputs and one output, the first input of
 * a type in `types` (types_msg names them; float32 and int16 only when built in), the second of the same type
 * when same_b (else the kernel checks it: PRELU's alpha), the output of the first input's type, op data of
 * `bytes` (starting with its ea_bcast_t) in node->user_data, the broadcast planned and the output's shape set. */
static inline edge_status_t eb_prepare_io(edge_node_t *node, edge_ctx_t *ctx, size_t bytes, uint32_t types,
                                          const char *types_msg, int same_b, edge_tensor_t **a, edge_tensor_t **b,
                                          edge_tensor_t **out) {
    int32_t shape[8], rank, r;
    edge_status_t s;
    ea_bcast_t *bc;
    (void)types_msg; /* unused when the status strings are stripped */
    *a = *b = *out = (edge_tensor_t *)0;
    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    *a = edge_in(ctx, node, 0);
    *b = edge_in(ctx, node, 1);
    *out = edge_out(ctx, node, 0);
    if (!*a || !*b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "both inputs are required");
    if (!eb_type_in((*a)->type, types))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, types_msg);
    if ((s = edge_type_built(ctx, (*a)->type)) != EDGE_OK) return s;
    if (same_b && (*b)->type != (*a)->type)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "inputs have different types");
    bc = (ea_bcast_t *)edge_alloc_persistent(ctx, bytes);
    if (!bc) return EDGE_ARENA_TOO_SMALL;
    node->user_data = bc;
    r = ea_bcast_prepare(bc, *a, *b, shape, &rank);
    if (r == -1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input shapes do not broadcast");
    if (r == -2) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "broadcasting beyond rank 6");
    if (r == -3) return EDGE_FAIL(ctx, EDGE_LIMIT, "the broadcast output would hold more than 2^40 elements");
    s = edge_set_output_shape(ctx, node, 0, shape, rank);
    if (s != EDGE_OK) return s;
    if ((*out)->type != (*a)->type)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    return EDGE_OK;
}

/* ADD / SUB / MUL / DIV: eb_prepare_io for `types` (EB_TYPES_ALL: FLOAT32, INT8, INT16, INT32; ADD/SUB add
 * INT64) with the fused activation one of NONE..RELU6. */
static inline edge_status_t eb_prepare_types(edge_node_t *node, edge_ctx_t *ctx, size_t bytes, int32_t act,
                                             uint32_t types, const char *types_msg, edge_tensor_t **a,
                                             edge_tensor_t **b, edge_tensor_t **out) {
    const edge_status_t s = eb_prepare_io(node, ctx, bytes, types, types_msg, 1, a, b, out);
    if (s != EDGE_OK) return s;
    if (act < 0 || act > EDGE_ACT_RELU6) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "fused activation");
    return EDGE_OK;
}

static inline edge_status_t eb_prepare(edge_node_t *node, edge_ctx_t *ctx, size_t bytes, int32_t act,
                                       edge_tensor_t **a, edge_tensor_t **b, edge_tensor_t **out) {
    return eb_prepare_types(node, ctx, bytes, act, EB_TYPES_ALL, "C kernel runs FLOAT32, INT8, INT16, INT32", a, b,
                            out);
}

/* Eval of a binary kernel: the row function of the type, over the broadcast loop. */
static inline void eb_eval(const ea_bcast_t *bc, const void *op, int32_t type, const eb_rows_t *rows, const void *a,
                           const void *b, void *y) {
    ea_row_fn row;
    uint32_t size;
    switch (type) {
    case EDGE_INT8: row = rows->int8; size = 1; break;
    case EDGE_INT16: row = rows->int16; size = 2; break;
    case EDGE_INT32: row = rows->int32; size = 4; break;
    case EDGE_INT64: row = rows->int64; size = 8; break;
    default: row = rows->f32; size = 4; break;
    }
    ea_bcast_run(bc, op, a, size, b, size, y, size, row);
}

#if EDGE_SIMD
/* The fast rows of ADD / SUB / MUL over any broadcast: float32 (fsimd set) through edge_simd_binary_f32_row with
 * kind (EDGE_SIMD_F32_*) and the clamp [lo, hi], the same bits as the portable rows; int8 (simd set) through
 * row_q8 with op. 1 when they ran, 0 for the portable rows. */
static inline int eb_eval_simd(const ea_bcast_t *bc, int32_t type, int32_t fsimd, int32_t kind, float lo, float hi,
                               int32_t simd, const void *op, ea_row_fn row_q8, const void *a, const void *b, void *y) {
    if (type == EDGE_FLOAT32 && fsimd) {
        edge_simd_binf_t f;
        f.level = fsimd;
        f.kind = kind;
        f.lo = lo;
        f.hi = hi;
        ea_bcast_run(bc, &f, a, 4, b, 4, y, 4, edge_simd_binary_f32_row);
        return 1;
    }
    if (!simd) return 0;
    ea_bcast_run(bc, op, a, 1, b, 1, y, 1, row_q8);
    return 1;
}
#endif

/* ------------------------------------------------------------ patch windows (edge_init_patch) */

/* How a binary kernel of a patch stage (ADD, SUB, MUL) reads its inputs on a window, fixed at prepare
 * (eb_window_prepare): both run-time tensors of the output's shape, each from its own window (edge_window_t's
 * h, w, pt, pl for input 0, h1, w1, pt1, pl1 for input 1), or one of them a constant that broadcasts along no
 * spatial axis (shape [N or 1, 1, 1, C or 1] aligned right: a scalar, [C], [1, 1, C], ...; the squeeze-excite
 * scale, a hard-swish's 1/6, a bias): its element of batch b and channel ch at b * cn + ch * cc. edge.c's
 * patch_setup admits no other stage node, so eval runs blind. */
typedef struct {
    int32_t konst;  /* -1: both inputs run-time; 0 or 1: that input is the constant */
    int32_t cn, cc; /* the constant's batch and channel steps in elements (0: broadcast) */
} eb_win_t;

static inline void eb_window_prepare(eb_win_t *bw, const edge_tensor_t *a, const edge_tensor_t *b) {
    const edge_tensor_t *k = a->is_const && !b->is_const ? a : !a->is_const && b->is_const ? b : 0;
    int32_t d0 = 1, d3 = 1;
    bw->konst = k == a ? 0 : k == b ? 1 : -1;
    bw->cn = bw->cc = 0;
    if (!k || k->rank < 1 || k->rank > 4) return; /* a scalar, or refused by patch_setup */
    d3 = k->dims[k->rank - 1];
    if (k->rank == 4) d0 = k->dims[0];
    bw->cc = d3 > 1 ? 1 : 0;
    bw->cn = d0 > 1 ? d3 : 0;
}

/* Eval of a binary kernel on a patch window (batch and channels whole): per output row of ow * c elements, a
 * run-time input's row oy - pt from column -pl of its h x w window; a scalar constant broadcast over the row, a
 * per-channel one along each pixel's c channels (one row call per pixel). Offsets are address differences
 * (ptrdiff_t: the windows lie in memory). */
static inline void eb_eval_window(const edge_window_t *w, const eb_win_t *bw, int32_t n, int32_t c, const void *op,
                                  int32_t type, const eb_rows_t *rows, const void *a, const void *b, void *y) {
    ea_row_fn row;
    ptrdiff_t size, px;
    int32_t bi, j, x, pixels, len, sa, sb;
    const uint8_t *pa, *pb;
    ptrdiff_t ra, rb, na, nb, xa, xb;
    uint8_t *o = (uint8_t *)y;
    switch (type) {
    case EDGE_INT8: row = rows->int8; size = 1; break;
    case EDGE_INT16: row = rows->int16; size = 2; break;
    case EDGE_INT32: row = rows->int32; size = 4; break;
    case EDGE_INT64: row = rows->int64; size = 8; break;
    default: row = rows->f32; size = 4; break;
    }
    px = (ptrdiff_t)c * size;
    /* per input: its first row, its step per output row, per batch, per pixel, and its element step */
    pa = (const uint8_t *)a + (bw->konst == 0 ? 0 : (-(ptrdiff_t)w->pt * w->w - w->pl) * px);
    pb = (const uint8_t *)b + (bw->konst == 1 ? 0 : (-(ptrdiff_t)w->pt1 * w->w1 - w->pl1) * px);
    ra = bw->konst == 0 ? 0 : (ptrdiff_t)w->w * px;
    rb = bw->konst == 1 ? 0 : (ptrdiff_t)w->w1 * px;
    na = bw->konst == 0 ? (ptrdiff_t)bw->cn * size : (ptrdiff_t)w->h * ra;
    nb = bw->konst == 1 ? (ptrdiff_t)bw->cn * size : (ptrdiff_t)w->h1 * rb;
    xa = bw->konst == 0 ? 0 : px;
    xb = bw->konst == 1 ? 0 : px;
    sa = bw->konst == 0 ? bw->cc : 1;
    sb = bw->konst == 1 ? bw->cc : 1;
    pixels = bw->konst >= 0 && bw->cc ? w->ow : 1;
    len = pixels > 1 ? c : w->ow * c;
    for (bi = 0; bi < n; bi++)
        for (j = 0; j < w->oh; j++) {
            const uint8_t *qa = pa + bi * na + j * ra, *qb = pb + bi * nb + j * rb;
            for (x = 0; x < pixels; x++) row(op, qa + x * xa, sa, qb + x * xb, sb, o + x * px, len);
            o += (ptrdiff_t)w->ow * px;
        }
}

/* The window branch every binary kernel's eval starts with: on a patch window (ctx->window) the row function of
 * the type over the window (the portable rows: no fast path), and 1; 0 for a whole-tensor call. */
static inline int eb_window_eval(const edge_node_t *node, edge_ctx_t *ctx, const eb_win_t *bw, const void *op,
                                 int32_t type, const eb_rows_t *rows, const void *a, const void *b, void *y) {
    const edge_tensor_t *t;
    if (!(EDGE_WITH_PATCH && ctx->window)) return 0;
    t = edge_out(ctx, node, 0);
    eb_eval_window(ctx->window, bw, t->dims[0], t->dims[3], op, type, rows, a, b, y);
    return 1;
}

#endif /* EDGE_BINARY_H */
