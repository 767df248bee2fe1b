/* SVDF: a rank-r filter bank with a memory of the last n_memory feature projections, kept in a variable
 * state tensor across invokes (edge_sdk/runtime/kernels/sequence.py prepare_svdf, TFLM svdf_common.cc).
 *
 * Each invoke, per batch row and filter f: the filter's memory moves one step left; the new projection
 * sum_i (x_i - x_zp) * wf[f, i] is requantized (multiplier 1), clamped to the state type and offset by the
 * state zero point into the last slot; then sum_m (state[f, m] - state_zp) * wt[f, m] is added into its unit
 * (f / rank) with the bias, requantized (multiplier 2) to int8 with the output zero point. TFLM's integer
 * path applies no fused activation (only the int8 clamp); the float path does. Integer sums wrap at 32 bits
 * as TFLM's int32 accumulators do. The input zero point is subtracted in the projection's dot product (as
 * TFLM does), so the op keeps no per-filter tables.
 *
 * Hybrid (FLOAT32 input, INT8 / UINT8 weights: LiteRT's EvalHybridSVDF): the float path with each row's projection
 * from the row quantized on the fly (edge_hybrid.h; asymmetric_quantize_inputs) times the int8 weights_feature,
 * float(dot - zp * rowsum) * (row scale * weights scale), zeros for an all-zero input; weights_time dequantized
 * once at prepare into persistent floats (int8 * scale), as LiteRT does at its first invoke.
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint_act.h"
#include "../edge_hybrid.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(SVDF, svdf, 4, "FLOAT32 INT8", "INT8: weights_time and state INT8 or INT16; FLOAT32 input with INT8/UINT8 weights: LiteRT's hybrid SVDF")

#define SVDF_OPTS 6 /* SVDFOptions: 0 rank, 1 fused_activation_function, 2 asymmetric_quantize_inputs */

typedef struct {
    int32_t batch, n_input, n_filter, n_unit, rank, n_memory;
    float flo, fhi;
    int32_t m1, s1, m2, s2;
    int32_t x_zp, state_zp, out_zp;
    uint8_t is_float, state16;
    uint8_t act;                       /* float: EDGE_ACT_* */
    uint8_t hybrid, asymmetric;        /* hybrid: int8 weights_feature, the input quantized per row */
    int32_t rows_scratch;              /* hybrid: quantized rows (batch x n_input), row scales, zero points,
                                        * then the projections (batch x n_filter floats) */
    const int32_t *row_sums;           /* hybrid: weights_feature row sums (persistent) */
    const float *wt_float;             /* hybrid: weights_time dequantized (persistent) */
#if EDGE_SIMD
    const uint32_t *w_sums;            /* integer, host builds: per filter sum_k weights_feature[f, k], then
                                        * sum_m weights_time[f, m] (2 x n_filter, with the packed copies): the zero
                                        * points' terms once at prepare, not a second sum in every dot product */
#endif
#if EDGE_DSP
    struct svdf_rq {                   /* integer, DSP cores: m1 / s1 (rq[0]) and m2 / s2 (rq[1]) as svdf_rq_make */
        int32_t mul, rnd;
        uint8_t kind, left;
    } rq[2];
#endif
} svdf_data_t;

/* The hybrid scratch: rows of quantized input, their scales and zero points, the projections. */
static size_t svdf_hybrid_bytes(int32_t batch, int32_t n_input, int32_t n_filter, size_t *proj_at) {
    const size_t q = ((size_t)batch * (size_t)n_input + 3u) & ~(size_t)3u;
    *proj_at = q + (size_t)batch * 8u;
    return *proj_at + sizeof(float) * (size_t)batch * (size_t)n_filter;
}

static edge_status_t svdf_prepare_hybrid(edge_node_t *node, edge_ctx_t *ctx, svdf_data_t *d, const edge_tensor_t *wf,
                                         const edge_tensor_t *wt, int32_t act) {
    const int8_t *w = (const int8_t *)wf->data, *t = (const int8_t *)wt->data;
    int32_t *sums;
    float *wtf;
    size_t proj_at;
    int64_t i, n = (int64_t)d->n_filter * d->n_memory;
    int32_t f;
    if ((wt->type != EDGE_INT8 && wt->type != EDGE_UINT8) || !wf->quantized || !wt->quantized || wf->n_scales != 1 ||
        wt->n_scales != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: hybrid weights INT8 (or UINT8) with one scale each");
    d->is_float = 1;
    d->hybrid = 1;
    d->act = (uint8_t)act;
    if (act != EDGE_ACT_TANH && edge_activation_range_float(act, &d->flo, &d->fhi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SVDF: fused activation");
    sums = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)(d->n_filter > 0 ? d->n_filter : 1));
    wtf = (float *)edge_alloc_persistent(ctx, sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!sums || !wtf) return EDGE_ARENA_TOO_SMALL;
    for (f = 0; f < d->n_filter; f++) {
        int32_t k, sum = 0;
        for (k = 0; k < d->n_input; k++) sum += w[(int64_t)f * d->n_input + k];
        sums[f] = sum;
    }
    for (i = 0; i < n; i++) wtf[i] = (float)t[i] * wt->scale;
    d->row_sums = sums;
    d->wt_float = wtf;
    return edge_request_scratch(ctx, node, svdf_hybrid_bytes(d->batch, d->n_input, d->n_filter, &proj_at),
                                &d->rows_scratch);
}

#if EDGE_DSP
/* edge_mbqm(x, m, shift) on DSP cores in a few instructions, bit-exact for every int32 x (the value without a zero
 * point: callers clamp, then add theirs, so no sum can wrap). kind 0: edge_rq (a right shift of 2..31, two SMMLAR);
 * kind 1: a multiplier in [2^30, 2^31) with a right shift of 0 or 1 or a left shift (int16-state SVDFs' first ratio
 * is often above 1/4): x << left (wrapping, as edge_mbqm), h = SMMLAR(x, 2m, x) = gemmlowp's doubling high multiply
 * (edge_rq's first step), then for right 1 its rounding halving (h - (h < 0) + 1) >> 1; kind 2: edge_mbqm. */
static void svdf_rq_make(struct svdf_rq *q, int32_t m, int32_t shift) {
    edge_rq_t r;
    q->left = 0;
    if (edge_rq_make(&r, m, shift) == 0) {
        q->kind = 0;
        q->mul = r.mul;
        q->rnd = r.rnd;
    } else if (m >= (1 << 30) && shift >= -1 && shift <= 31) {
        q->kind = 1;
        q->mul = (int32_t)((uint32_t)m << 1);
        q->left = (uint8_t)(shift > 0 ? shift : 0);
        q->rnd = shift < 0;
    } else {
        q->kind = 2;
        q->mul = m;
        q->rnd = shift;
    }
}

#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline int32_t svdf_rq_apply(const struct svdf_rq *q, int32_t x) {
    int32_t h;
    if (q->kind == 0) {
        edge_rq_t r;
        r.mul = q->mul;
        r.rnd = q->rnd;
        return edge_rq_apply(&r, x, 0);
    }
    if (q->kind == 2) return edge_mbqm(x, q->mul, q->rnd);
    x = (int32_t)((uint32_t)x << q->left);
    h = edge_smmlar(x, q->mul, x);
    if (q->rnd) {
        h += h >> 31;
        h = (h + 1) >> 1; /* h <= 2^31 - 2 here: no wrap */
    }
    return h;
}
#endif

edge_status_t edge_prepare_svdf(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == SVDF_OPTS;
    const int32_t rank = has_opts ? edge_opt_int(node, 0, 4, 0) : 0;
    const int32_t act = has_opts ? edge_opt_int(node, 1, 1, 0) : 0;
    edge_tensor_t *x, *wf, *wt, *bias, *st, *y;
    svdf_data_t *d;
    int32_t batch, n_input, n_filter, n_unit, n_memory, shape[2];

    if (node->n_inputs != 5 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF expects 5 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    wf = edge_in(ctx, node, 1);
    wt = edge_in(ctx, node, 2);
    bias = edge_in(ctx, node, 3);
    st = edge_in(ctx, node, 4);
    y = edge_out(ctx, node, 0);
    if (!x || !wf || !wt || !st) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: input, weights and state are required");
    {
        edge_status_t s;
        if ((s = edge_type_built(ctx, x->type)) != EDGE_OK || (s = edge_type_built(ctx, st->type)) != EDGE_OK) return s;
    }
    if (x->rank != 2 || wf->rank != 2 || wt->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: input and weights must be 2-D");
    if (rank <= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: rank must be positive");
    batch = x->dims[0];
    n_input = x->dims[1];
    n_filter = wf->dims[0];
    if (n_filter % rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: num_filters is not a multiple of rank");
    n_unit = n_filter / rank;
    n_memory = wt->dims[1];
    if (wf->dims[1] != n_input) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: weights_feature does not match the input");
    if (wt->dims[0] != n_filter) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: weights_time filters differ");
    if (bias && (bias->rank < 1 || bias->dims[0] != n_unit)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: bias needs one value per unit");
    if (bias && edge_tensor_elements(bias) != n_unit) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: bias needs one value per unit");
    if (st->rank != 2 || st->dims[0] != batch || (int64_t)st->dims[1] != (int64_t)n_memory * n_filter)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: activation state must be (batch, memory * filters)");
    if (!st->is_variable) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: activation state must be a variable tensor");
    if (!wf->is_const || !wt->is_const || (bias && !bias->is_const))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SVDF: weights and bias must be constant");
    if (n_memory < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: memory size must be positive");
    shape[0] = batch;
    shape[1] = n_unit;
    {
        edge_status_t s = edge_set_output_shape(ctx, node, 0, shape, 2);
        if (s != EDGE_OK) return s;
    }
    d = (svdf_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    memset(d, 0, sizeof *d); /* hybrid fields stay 0 on the float and integer paths */
    node->user_data = d;
    d->batch = batch;
    d->n_input = n_input;
    d->n_filter = n_filter;
    d->n_unit = n_unit;
    d->rank = rank;
    d->n_memory = n_memory;

    if (x->type == EDGE_FLOAT32 && (wf->type == EDGE_INT8 || wf->type == EDGE_UINT8)) {
        if (st->type != EDGE_FLOAT32 || y->type != EDGE_FLOAT32 || (bias && bias->type != EDGE_FLOAT32))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: hybrid SVDF needs FLOAT32 input, state, bias and output");
        d->asymmetric = has_opts && edge_opt_int(node, 2, 1, 0) != 0;
        return svdf_prepare_hybrid(node, ctx, d, wf, wt, act);
    }
    if (x->type == EDGE_FLOAT32) {
        if (wf->type != EDGE_FLOAT32 || wt->type != EDGE_FLOAT32 || st->type != EDGE_FLOAT32 || y->type != EDGE_FLOAT32 ||
            (bias && bias->type != EDGE_FLOAT32))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: float SVDF needs FLOAT32 everywhere");
        d->is_float = 1;
        d->act = (uint8_t)act;
        if (act == EDGE_ACT_TANH) return EDGE_OK;
        if (edge_activation_range_float(act, &d->flo, &d->fhi) != 0)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SVDF: fused activation");
        return EDGE_OK;
    }
    if (x->type != EDGE_INT8) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SVDF runs on FLOAT32 or INT8 input");
    if (wf->type != EDGE_INT8 || y->type != EDGE_INT8) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: int8 weights_feature and output");
    if (wt->type != EDGE_INT8 && wt->type != EDGE_INT16) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: weights_time INT8/INT16");
    if (st->type != EDGE_INT8 && st->type != EDGE_INT16) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: state INT8/INT16");
    if (st->type != wt->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SVDF: state type must match weights_time");
    if (bias && bias->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: bias must be INT32");
    if (!ea_per_tensor(x) || !ea_per_tensor(wf) || !ea_per_tensor(wt) || !ea_per_tensor(st) || !ea_per_tensor(y))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "SVDF: tensors must be quantized per tensor");
    {
        /* both effective scales in float32, widened to double (TFLM) */
        float p1 = x->scale * wf->scale, p2 = st->scale * wt->scale;
        float r1 = p1 / st->scale, r2 = p2 / y->scale;
        if (bias && bias->quantized) {
            double diff = (double)bias->scale - (double)p2;
            if (!((diff < 0 ? -diff : diff) < 1e-5))
                return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: bias scale differs from state x weights_time scale");
        }
        if (edge_quantize_multiplier((double)r1, &d->m1, &d->s1) != 0 || edge_quantize_multiplier((double)r2, &d->m2, &d->s2) != 0)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SVDF: scales are not finite");
    }
    d->state16 = st->type == EDGE_INT16;
    d->x_zp = x->zero_point;
    d->state_zp = st->zero_point;
    d->out_zp = y->zero_point;
#if EDGE_SIMD
    if (edge_simd_level()) {
        uint32_t *sums = (uint32_t *)edge_alloc_packed(ctx, 2 * sizeof(uint32_t) * (size_t)n_filter);
        int32_t f, k;
        if (!sums) return EDGE_ARENA_TOO_SMALL;
        for (f = 0; f < n_filter; f++) {
            uint32_t sw = 0, st_sum = 0;
            for (k = 0; k < n_input; k++) sw += (uint32_t)((const int8_t *)wf->data)[(int64_t)f * n_input + k];
            for (k = 0; k < n_memory; k++)
                st_sum += d->state16 ? (uint32_t)((const int16_t *)wt->data)[(int64_t)f * n_memory + k]
                                     : (uint32_t)((const int8_t *)wt->data)[(int64_t)f * n_memory + k];
            sums[f] = sw;
            sums[n_filter + f] = st_sum;
        }
        d->w_sums = sums;
    }
#endif
#if EDGE_DSP
    svdf_rq_make(&d->rq[0], d->m1, d->s1);
    svdf_rq_make(&d->rq[1], d->m2, d->s2);
#endif
    return EDGE_OK;
}

/* Every filter's memory one step left in one move of the whole state (TFLM does the same): a filter's last slot
 * receives the next filter's first value, which the new projection then overwrites. */
static void shift_state(void *state, int64_t elements, size_t size) {
    if (elements > 1) memmove(state, (uint8_t *)state + size, size * (size_t)(elements - 1));
}

/* proj: the hybrid kernel's projections (batch x n_filter), or NULL: float products with wf. */
static void svdf_float(const svdf_data_t *d, const float *x, const float *wf, const float *wt, const float *bias,
                       const float *proj, float *state, float *y) {
    int32_t b, u, r, i, m;
    const int32_t M = d->n_memory;
    shift_state(state, (int64_t)d->batch * d->n_filter * M, sizeof(float));
    for (b = 0; b < d->batch; b++) {
        const float *xb = x + (int64_t)b * d->n_input;
        for (u = 0; u < d->n_unit; u++) {
            float acc = 0.0f, v;
            for (r = 0; r < d->rank; r++) {
                const int32_t f = u * d->rank + r;
                float *mem = state + ((int64_t)b * d->n_filter + f) * M;
                const float *w = wf + (int64_t)f * d->n_input;
                const float *tw = wt + (int64_t)f * M;
                float p = 0.0f, sum = 0.0f;
                if (proj) p = proj[(int64_t)b * d->n_filter + f];
                else
                    for (i = 0; i < d->n_input; i++) p += xb[i] * w[i];
                mem[M - 1] = p;
                for (m = 0; m < M; m++) sum += mem[m] * tw[m];
                acc += sum;
            }
            v = acc + (bias ? bias[u] : 0.0f);
            if (d->act == EDGE_ACT_TANH) v = tanhf(v);
            else v = v < d->flo ? d->flo : (v > d->fhi ? d->fhi : v);
            y[(int64_t)b * d->n_unit + u] = v;
        }
    }
}

/* The hybrid projections into the scratch: zeros for an all-zero input (LiteRT skips the product), else each row
 * quantized, float(q.w - zp * rowsum(w)) * (row scale * weights scale). */
static const float *svdf_hybrid_projections(const edge_node_t *node, edge_ctx_t *ctx, const svdf_data_t *d,
                                            const float *x, const int8_t *wf, float wf_scale) {
    size_t proj_at;
    int8_t *q = (int8_t *)edge_scratch(ctx, node, d->rows_scratch);
    const size_t q_bytes = ((size_t)d->batch * (size_t)d->n_input + 3u) & ~(size_t)3u;
    float *scale = (float *)(void *)(q + q_bytes);
    int32_t *zp = (int32_t *)(void *)(scale + d->batch);
    float *proj;
    int64_t i, n = (int64_t)d->batch * d->n_input;
    int32_t b, f, k, zero = 1;
    svdf_hybrid_bytes(d->batch, d->n_input, d->n_filter, &proj_at);
    proj = (float *)(void *)(q + proj_at);
    for (i = 0; i < (int64_t)d->batch * d->n_filter; i++) proj[i] = 0.0f;
    for (i = 0; i < n && zero; i++) zero = x[i] == 0.0f;
    if (zero) return proj;
    for (b = 0; b < d->batch; b++) {
        const int8_t *qb = q + (int64_t)b * d->n_input;
        float row_scale;
        eh_quantize_row(x + (int64_t)b * d->n_input, d->n_input, d->asymmetric, q + (int64_t)b * d->n_input, &scale[b],
                        &zp[b]);
        row_scale = scale[b] * wf_scale;
        for (f = 0; f < d->n_filter; f++) {
            const int8_t *w = wf + (int64_t)f * d->n_input;
            int32_t dot = 0;
            for (k = 0; k < d->n_input; k++) dot += (int32_t)w[k] * (int32_t)qb[k];
            dot -= d->row_sums[f] * zp[b];
            proj[(int64_t)b * d->n_filter + f] += (float)dot * row_scale;
        }
    }
    return proj;
}

/* sum_k (x[k] - zp) * w[k] in wrapping 32-bit arithmetic, as sum x*w - zp * sum w (the same value modulo 2^32).
 * Blocks of a fixed length (16 int8 / 8 int16 elements) let the compiler use vector multiply-adds. */
#define SVDF_DOT(name, T, BLOCK)                                                                                 \
    static uint32_t name(const T *x, const T *w, int32_t n, uint32_t zp) {                                      \
        uint32_t s = 0, sw = 0;                                                                                  \
        int32_t k = 0, j;                                                                                        \
        for (; k + (BLOCK) <= n; k += (BLOCK)) {                                                                 \
            uint32_t t = 0, tw = 0;                                                                              \
            for (j = 0; j < (BLOCK); j++) {                                                                      \
                t += (uint32_t)(x[k + j] * w[k + j]);                                                            \
                tw += (uint32_t)w[k + j];                                                                        \
            }                                                                                                    \
            s += t;                                                                                              \
            sw += tw;                                                                                            \
        }                                                                                                        \
        for (; k < n; k++) {                                                                                     \
            s += (uint32_t)(x[k] * w[k]);                                                                        \
            sw += (uint32_t)w[k];                                                                                \
        }                                                                                                        \
        return s - zp * sw;                                                                                      \
    }
SVDF_DOT(dot_s16, int16_t, 8)
#if EDGE_DSP
/* DSP cores: the int8 dot products by SXTAB16 (x - zp in both int16 halves: int8 zero points) and SMLAD, one row
 * through edge_dot2_s8 (its second row the first again): keyword_scrambled_8bit's SVDFs ran 2.8x TFLM +
 * CMSIS-NN's instructions with the block loop. */
static uint32_t dot_s8(const int8_t *x, const int8_t *w, int32_t n, uint32_t zp) {
    uint32_t s, same;
    edge_dot2_s8(x, w, w, n, -(int32_t)zp, &s, &same);
    return s;
}
#else
SVDF_DOT(dot_s8, int8_t, 16)
#endif

#if EDGE_SIMD
/* sum_k x[k] * w[k] wrapping at 32 bits (the weights' sum times the zero point is subtracted by the caller, from
 * prepare's w_sums): BLOCK lane sums kept across the blocks and added once at the end (the compiler keeps them in
 * vector registers), not a horizontal sum per block. */
#define SVDF_DOT_LANES(name, T, BLOCK)                                                                           \
    static uint32_t name(const T *x, const T *w, int32_t n) {                                                   \
        uint32_t lane[BLOCK] = {0}, s = 0;                                                                       \
        int32_t k = 0, j;                                                                                        \
        for (; k + (BLOCK) <= n; k += (BLOCK))                                                                   \
            for (j = 0; j < (BLOCK); j++) lane[j] += (uint32_t)((int32_t)x[k + j] * (int32_t)w[k + j]);          \
        for (j = 0; j < (BLOCK); j++) s += lane[j];                                                              \
        for (; k < n; k++) s += (uint32_t)((int32_t)x[k] * (int32_t)w[k]);                                       \
        return s;                                                                                                \
    }
SVDF_DOT_LANES(dot_lanes_s8, int8_t, 16)
SVDF_DOT_LANES(dot_lanes_s16, int16_t, 8)
#endif

#if EDGE_DSP
#if defined(__GNUC__)
#define SVDF_INLINE static inline __attribute__((always_inline)) /* -Os made calls of these per filter */
#define SVDF_NOINLINE __attribute__((noinline)) /* a loop with registers of its own, not spilled in the caller's */
#else
#define SVDF_INLINE static inline
#define SVDF_NOINLINE
#endif

/* The state's shift (shift_state) as word moves: dst = src - 1 or 2 bytes, so a forward copy never overwrites a byte
 * it has still to read; the C library's memmove moves such a misaligned pair byte by byte (~4 instructions a byte:
 * 4 K per SVDF of keyword_scrambled_8bit's 1024-byte states). 16 bytes a pass. */
static void shift_state_words(uint8_t *p, int32_t bytes, int32_t size) {
    const uint8_t *src = p + size;
    int32_t i = 0, n = bytes - size;
    for (; i + 16 <= n; i += 16) {
        const uint32_t a = edge_get32(src + i), b = edge_get32(src + i + 4), c = edge_get32(src + i + 8),
                       e = edge_get32(src + i + 12);
        edge_put32(p + i, a);
        edge_put32(p + i + 4, b);
        edge_put32(p + i + 8, c);
        edge_put32(p + i + 12, e);
    }
    for (; i < n; i++) p[i] = src[i];
}

SVDF_NOINLINE static void svdf_dot2(const int8_t *x, const int8_t *w0, const int8_t *w1, int32_t n, int32_t off,
                                    uint32_t *s) {
    edge_dot2_s8(x, w0, w1, n, off, &s[0], &s[1]);
}

SVDF_NOINLINE static void svdf_dot4(const int8_t *x, int32_t n4, int32_t off, const int8_t *w, int32_t n, uint32_t *s) {
    edge_dot4_s8(x, n4, off, w, w + 2 * n, n, s); /* its 13-register asm in a function of its own */
}

/* One projection into its filter's last state slot: requantized (multiplier 1), clamped to the state type, plus the
 * state zero point, narrowed with a wrap (as the portable path). */
SVDF_INLINE void svdf_store(const svdf_data_t *d, uint32_t proj, uint8_t *slot, int state16) {
    const int32_t p = svdf_rq_apply(&d->rq[0], (int32_t)proj);
    const uint32_t v = (uint32_t)edge_clamp32(p, state16 ? -32768 : -128, state16 ? 32767 : 127) + (uint32_t)d->state_zp;
    if (state16) *(int16_t *)(void *)slot = (int16_t)((int32_t)((v & 0xffffu) ^ 0x8000u) - 0x8000);
    else *(int8_t *)slot = (int8_t)((int32_t)((v & 0xffu) ^ 0x80u) - 0x80);
}

/* One batch row's projections [n_filter] into the filters' last slots (filter f's at slot + f * step bytes): four
 * filters sharing each input word (edge_dot4_s8, the input zero point added by SXTAB16; the n_input % 4 tail in C),
 * the last 1-3 filters two at a time (edge_dot2_s8). */
SVDF_NOINLINE static void svdf_project(const svdf_data_t *d, const int8_t *x, const int8_t *w, uint8_t *slot,
                                       int32_t step, int state16) {
    const int32_t n = d->n_input, n4 = n & ~3, off = -d->x_zp, n_filter = d->n_filter;
    int32_t f = 0, j, k;
    for (; f + 4 <= n_filter; f += 4, w += 4 * n, slot += 4 * step) {
        uint32_t p[4];
        p[0] = p[1] = p[2] = p[3] = 0;
        svdf_dot4(x, n4, off, w, n, p);
        for (k = n4; k < n; k++)
            for (j = 0; j < 4; j++) p[j] += (uint32_t)((x[k] + off) * w[j * n + k]);
        svdf_store(d, p[0], slot, state16);
        svdf_store(d, p[1], slot + step, state16);
        svdf_store(d, p[2], slot + 2 * step, state16);
        svdf_store(d, p[3], slot + 3 * step, state16);
    }
    for (; f < n_filter; f += 2, w += 2 * n, slot += 2 * step) {
        const int32_t two = f + 1 < n_filter;
        uint32_t p[2];
        svdf_dot2(x, w, two ? w + n : w, n, off, p);
        svdf_store(d, p[0], slot, state16);
        if (two) svdf_store(d, p[1], slot + step, state16);
    }
}

/* One batch row's outputs [n_unit]: per unit its bias plus sum (s - zp) * w over its rank filters' memories -- one
 * run of rank x M contiguous values of the state and of weights_time (a unit's filters are consecutive rows) --
 * requantized (multiplier 2), clamped to int8. int8 state: SXTAB16 (s - zp in both int16 halves: |s - zp| <= 255),
 * SXTB16, SMLAD, 4 values per 12 instructions with the loop; int16 state with zero point 0 (TFLM's): SMLAD on words,
 * 4 values per 10; an int16 state with another zero point: the portable loop. */
SVDF_NOINLINE static void svdf_outputs(const svdf_data_t *d, const uint8_t *mem, const uint8_t *tw, const int32_t *bias,
                                       int8_t *y, int state16) {
    const int32_t L = d->rank * d->n_memory, L4 = L & ~3, zp = d->state_zp, n_unit = d->n_unit, out_zp = d->out_zp;
    const uint32_t off2 = (uint32_t)(uint16_t)-zp * 0x10001u;
    int32_t u, i;
    for (u = 0; u < n_unit; u++) {
        uint32_t acc = bias ? (uint32_t)bias[u] : 0u;
        if (state16) {
            const int16_t *s = (const int16_t *)(const void *)mem, *w = (const int16_t *)(const void *)tw;
            if (zp) {
                acc += dot_s16(s, w, L, (uint32_t)zp);
            } else {
                for (i = 0; i < L4; i += 4, s += 4, w += 4) {
                    acc = edge_smlad(edge_get32(s), edge_get32(w), acc);
                    acc = edge_smlad(edge_get32(s + 2), edge_get32(w + 2), acc);
                }
                for (; i < L; i++) acc += (uint32_t)(*s++ * *w++);
            }
            mem += 2 * L;
            tw += 2 * L;
        } else {
            const int8_t *s = (const int8_t *)mem, *w = (const int8_t *)tw;
            for (i = 0; i < L4; i += 4, s += 4, w += 4) {
                const uint32_t a = edge_get32(s), c = edge_get32(w);
                acc = edge_smlad(edge_sxtab16(off2, a), edge_sxtb16(c), acc);
                acc = edge_smlad(edge_sxtab16_ror8(off2, a), edge_sxtb16_ror8(c), acc);
            }
            for (; i < L; i++) acc += (uint32_t)((*s++ - zp) * *w++);
            mem += L;
            tw += L;
        }
        y[u] = (int8_t)(edge_clamp32(svdf_rq_apply(&d->rq[1], (int32_t)acc), -128 - out_zp, 127 - out_zp) + out_zp);
    }
}

/* Integer SVDF on DSP cores: the state shifted by words; per batch row every filter's projection into the state's
 * last slots (svdf_project), then the units' outputs (svdf_outputs). keyword_scrambled_8bit's SVDFs: 9.5
 * instructions per MAC with a filter at a time and memmove. */
static void svdf_int8_dsp(const svdf_data_t *d, const int8_t *x, const int8_t *wf, const uint8_t *wt,
                          const int32_t *bias, uint8_t *state, int8_t *y, int state16) {
    const int32_t size = state16 ? 2 : 1, step = d->n_memory * size; /* bytes of one filter's memory */
    int32_t b;
    shift_state_words(state, d->batch * d->n_filter * step, size);
    for (b = 0; b < d->batch; b++, x += d->n_input, y += d->n_unit, state += d->n_filter * step) {
        svdf_project(d, x, wf, state + step - size, step, state16);
        svdf_outputs(d, state, wt, bias, y, state16);
    }
}
#endif

void edge_eval_svdf(const edge_node_t *node, edge_ctx_t *ctx) {
    const svdf_data_t *d = (const svdf_data_t *)node->user_data;
    const edge_tensor_t *tx = edge_in(ctx, node, 0), *twf = edge_in(ctx, node, 1), *twt = edge_in(ctx, node, 2);
    const edge_tensor_t *tb = edge_in(ctx, node, 3);
    edge_tensor_t *tst = edge_in(ctx, node, 4), *ty = edge_out(ctx, node, 0);
    const int32_t M = d->n_memory, n_input = d->n_input, rank = d->rank;
    const int8_t *x, *wf;
    const int32_t *bias;
    int8_t *y;
    int32_t b, u, r;
    const int state16 = EDGE_WITH_INT16 && d->state16;
    const int32_t smin = state16 ? -32768 : -128, smax = state16 ? 32767 : 127;
    const uint32_t x_zp = (uint32_t)d->x_zp, state_zp = (uint32_t)d->state_zp;

    if (EDGE_WITH_FLOAT32 && d->hybrid) {
        svdf_float(d, (const float *)tx->data, 0, d->wt_float, tb ? (const float *)tb->data : 0,
                   svdf_hybrid_projections(node, ctx, d, (const float *)tx->data, (const int8_t *)twf->data,
                                           twf->scale),
                   (float *)tst->data, (float *)ty->data);
        return;
    }
    if (EDGE_WITH_FLOAT32 && d->is_float) {
        svdf_float(d, (const float *)tx->data, (const float *)twf->data, (const float *)twt->data,
                   tb ? (const float *)tb->data : 0, 0, (float *)tst->data, (float *)ty->data);
        return;
    }
    x = (const int8_t *)tx->data;
    wf = (const int8_t *)twf->data;
    bias = tb ? (const int32_t *)tb->data : 0;
    y = (int8_t *)ty->data;
#if EDGE_DSP
    svdf_int8_dsp(d, x, wf, (const uint8_t *)twt->data, bias, (uint8_t *)tst->data, y, state16);
    return;
#endif
    shift_state(tst->data, (int64_t)d->batch * d->n_filter * M, state16 ? sizeof(int16_t) : sizeof(int8_t));
    for (b = 0; b < d->batch; b++) {
        const int8_t *xb = x + (int64_t)b * n_input;
        for (u = 0; u < d->n_unit; u++) {
            uint32_t acc = 0;
            int64_t out;
            for (r = 0; r < rank; r++) {
                const int32_t f = u * rank + r;
                const int64_t mem_at = ((int64_t)b * d->n_filter + f) * M;
                /* clamped projection plus the zero point, narrowed to the state type with a wrap (as the C
                 * reference's implicit conversion does) */
                uint32_t proj, v;
#if EDGE_SIMD
                if (d->w_sums)
                    proj = dot_lanes_s8(xb, wf + (int64_t)f * n_input, n_input) - x_zp * d->w_sums[f];
                else
#endif
                    proj = dot_s8(xb, wf + (int64_t)f * n_input, n_input, x_zp);
                v = (uint32_t)edge_clamp32(edge_mbqm(edge_wrap32(proj), d->m1, d->s1), smin, smax) + state_zp;
                if (state16) {
                    int16_t *mem = (int16_t *)tst->data + mem_at;
                    const int16_t *tw = (const int16_t *)twt->data + (int64_t)f * M;
                    mem[M - 1] = (int16_t)((int32_t)((v & 0xffffu) ^ 0x8000u) - 0x8000);
#if EDGE_SIMD
                    /* the new value apart: a vector load over the element just stored waited for it (a failed
                     * store-to-load forward per filter) */
                    if (d->w_sums)
                        acc += dot_lanes_s16(mem, tw, M - 1) + (uint32_t)((int32_t)mem[M - 1] * tw[M - 1]) -
                               state_zp * d->w_sums[d->n_filter + f];
                    else
#endif
                        acc += dot_s16(mem, tw, M, state_zp);
                } else {
                    int8_t *mem = (int8_t *)tst->data + mem_at;
                    const int8_t *tw = (const int8_t *)twt->data + (int64_t)f * M;
                    mem[M - 1] = (int8_t)((int32_t)((v & 0xffu) ^ 0x80u) - 0x80);
#if EDGE_SIMD
                    if (d->w_sums)
                        acc += dot_lanes_s8(mem, tw, M - 1) + (uint32_t)((int32_t)mem[M - 1] * tw[M - 1]) -
                               state_zp * d->w_sums[d->n_filter + f];
                    else
#endif
                        acc += dot_s8(mem, tw, M, state_zp);
                }
            }
            if (bias) acc += (uint32_t)bias[u];
            out = (int64_t)edge_mbqm(edge_wrap32(acc), d->m2, d->s2) + d->out_zp;
            y[(int64_t)b * d->n_unit + u] = (int8_t)(out < -128 ? -128 : (out > 127 ? 127 : out));
        }
    }
}
