/* FULLY_CONNECTED: y[b, u] = act(sum_d x[b, d] * w[u, d] + bias[u]), weights [units, depth].
 *
 * int8 (per-tensor or per-channel weights, optional int32 bias) as TFLM's reference FullyConnected /
 * FullyConnectedPerChannel: acc = sum (x + input_offset) * (w + filter_offset) + bias, requantized with
 * MultiplyByQuantizedMultiplier, plus the output zero point, clamped to the fused activation's range.
 * Per-channel weights take no filter offset (they are symmetric). float32: plain dot products.
 *
 * The int8 fast path (no filter offset, multipliers edge_rq covers; their edge_rq form replaces the raw
 * multipliers in place, so it costs no memory): four units at a time share every input word (fc_slots). On DSP
 * cores SXTAB16 widens four int8 inputs and adds the input offset to two at once, SXTB16 widens the weights,
 * SMLAD does two MACs (one asm block, two words a pass: 49 instructions per 32 MACs; a last group of 1-3 units
 * runs as four slots with rows repeated); elsewhere plain C. The offset stays in the loop, as CMSIS-NN's DSP
 * loop keeps it, rather than folded into the bias at prepare (its MVE form): SXTB16 would replace SXTAB16 one
 * for one, and the register freed would hold the loop's end (1 instruction per 32 MACs, 2%), for a persistent
 * int32 per unit of arena and constant weights.
 * Same checks and the same output shape rules as edge_sdk/runtime/kernels/conv.py prepare_fully_connected.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint.h"
#include "../edge_float.h"
#include "../edge_hybrid.h"
#include "../edge_int4.h"
#include "../edge_sparse.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(FULLY_CONNECTED, fully_connected, 14, "FLOAT32/FLOAT32 INT8/INT8 INT16/INT8 FLOAT32/INT8 FLOAT32/UINT8 INT8/INT4 INT16/INT4 FLOAT32/INT4", "weights per-tensor or per-unit scales; INT4 weights unpacked to INT8 at prepare; FLOAT32 input with INT8/UINT8 weights: LiteRT's hybrid kernel (hybrid.c)")

typedef struct {
    int32_t batches, depth, units;
    int32_t input_offset, filter_offset, output_offset;
    int32_t lo, hi;            /* int8 clamp */
    float flo, fhi;            /* float clamp */
    int32_t per_channel;
    int32_t multiplier, shift; /* per-tensor */
    int32_t *multipliers, *shifts; /* per-channel: units entries (persistent) */
    int32_t wide;              /* int16x8: int64 accumulators (int64 bias) and the 16-bit multiplier */
    int32_t fast;              /* int8: multiplier(s) / shift(s) hold edge_rq's mul / rnd: the fast path */
#if EDGE_SIMD
    edge_simd_qgemm_t *simd;   /* int8 fast path on a 64-bit Linux CPU with SIMD (src/simd): packed weights */
    int32_t simd_scratch;
    int32_t simd_threads;      /* threads at prepare: parts of the rows (>= 8 of them) or of the units */
    uint32_t simd_part_bytes;  /* one thread's GEMM work */
    edge_simd_sgemm_t *fsimd;  /* float32 on a CPU with a float GEMM: the packed weights (persistent when
                                * constant, else repacked per invoke into its pack_scratch); NULL: the portable loop */
#endif
} fc_data_t;

static edge_status_t fc_prepare_int16(edge_node_t *node, edge_ctx_t *ctx, fc_data_t *d, const edge_tensor_t *in,
                                      const edge_tensor_t *w, const edge_tensor_t *bias, const edge_tensor_t *out,
                                      int32_t act);
static void fc_eval_int16(const fc_data_t *d, const edge_tensor_t *in, const edge_tensor_t *w, const edge_tensor_t *bt,
                          edge_tensor_t *out);

/* The requantization of the int8 and int16 kinds: one multiplier per unit (per-channel weights; their zero
 * points are not used) or one for the layer with the weights' zero point as filter offset (the ratio from the
 * float32 product of the input and weight scales, as TFLM; a quantized bias must have about that scale). */
static edge_status_t fc_multipliers(edge_ctx_t *ctx, fc_data_t *d, const edge_tensor_t *in, const edge_tensor_t *w,
                                    const edge_tensor_t *bias, const edge_tensor_t *out) {
    const int32_t units = d->units;
    int32_t k;
    d->per_channel = w->n_scales > 1;
    if (d->per_channel) {
        if (w->n_scales != units) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: one weight scale per unit");
        d->multipliers = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)units);
        d->shifts = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)units);
        if (!d->multipliers || !d->shifts) return EDGE_ARENA_TOO_SMALL;
        for (k = 0; k < units; k++) {
            float ws;
            memcpy(&ws, &w->scales[k], 4);
            if (edge_quantize_multiplier(EDGE_RATIO_D(in->scale, ws, out->scale), &d->multipliers[k],
                                         &d->shifts[k]) != 0)
                return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: weight scale is not finite");
        }
        d->filter_offset = 0;
    } else {
        float product = in->scale * w->scale; /* float32 product, as TFLM */
        if (bias && bias->quantized && edge_far_ratio(in->scale, w->scale, bias->scale, out->scale))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: bias scale far from input x weight scale");
        if (edge_quantize_multiplier(EDGE_RATIO_D(product, 1.0f, out->scale), &d->multiplier, &d->shift) != 0)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: weight scale is not finite");
        d->filter_offset = edge_wrap32(-(int64_t)w->zero_point);
    }
    return EDGE_OK;
}

#if EDGE_SIMD
/* float32: the weights [units, depth] as GEMM panels, packed here when constant, else at every invoke (weights
 * that a DEQUANTIZE computes). */
static edge_status_t fc_prepare_simd_f32(edge_node_t *node, edge_ctx_t *ctx, fc_data_t *d, const edge_tensor_t *w,
                                         const edge_tensor_t *bias) {
    const int32_t level = edge_simd_level();
    const size_t bytes = level ? edge_simd_sgemm_bytes(level, d->units, d->depth) : 0;
    d->fsimd = 0;
    if (!bytes) return EDGE_OK;
    d->fsimd = (edge_simd_sgemm_t *)edge_alloc_persistent(ctx, sizeof *d->fsimd);
    if (!d->fsimd) return EDGE_ARENA_TOO_SMALL;
    d->fsimd->pack_scratch = -1;
    d->simd_threads = edge_simd_threads();
    if (w->is_const && (!bias || bias->is_const)) {
        void *packed = edge_alloc_packed(ctx, bytes);
        if (!packed) return EDGE_ARENA_TOO_SMALL;
        edge_simd_sgemm_pack(d->fsimd, level, (const float *)w->data, d->units, d->depth, d->depth, 1,
                             bias ? (const float *)bias->data : 0, d->flo, d->fhi, packed);
        return EDGE_OK;
    }
    d->fsimd->level = level; /* the rest at every invoke */
    d->fsimd->packed = 0;
    return edge_request_scratch(ctx, node, bytes, &d->fsimd->pack_scratch);
}

/* float32 through the GEMM on the threads prepared (edge_simd_sgemm_threads), the weights repacked first when they
 * are not constant. */
static void fc_float_simd(const edge_node_t *node, edge_ctx_t *ctx, const fc_data_t *d, const float *x,
                          const float *w, const float *bias, float *y) {
    edge_simd_sgemm_t g = *d->fsimd;
    if (g.pack_scratch >= 0)
        edge_simd_sgemm_pack(&g, g.level, w, d->units, d->depth, d->depth, 1, bias, d->flo, d->fhi,
                             edge_scratch(ctx, node, g.pack_scratch));
    edge_simd_sgemm_threads(&g, x, d->batches, d->depth, y, d->units, d->simd_threads);
}
#endif

/* Weights of depth 0 ([units, 0]), as LiteRT's fully_connected.cc: the output is the input's leading dimensions
 * (..., 0) -> (prod(...), units), or (..., units) with keep_num_dims, and eval fills it with zero bytes whatever
 * the bias, activation, zero point or hybrid weights; eval reads the weights' shape. */
static edge_status_t fc_prepare_depth_zero(edge_node_t *node, edge_ctx_t *ctx, const edge_tensor_t *in, int32_t units,
                                           int32_t keep_num_dims) {
    int32_t shape[8], k, rank = keep_num_dims ? in->rank : 2;
    int64_t lead = 1;
    fc_data_t *d;
    edge_status_t s;
    if (in->rank < 1 || in->rank > 8) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: input rank");
    if ((s = edge_type_built(ctx, in->type)) != EDGE_OK) return s;
    for (k = 0; k < in->rank - 1; k++) lead *= in->dims[k];
    if (lead > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_LIMIT, "FULLY_CONNECTED: too many rows");
    for (k = 0; k < in->rank - 1; k++) shape[k] = in->dims[k];
    if (!keep_num_dims) shape[0] = (int32_t)lead;
    shape[rank - 1] = units;
    if ((s = edge_set_output_shape(ctx, node, 0, shape, rank)) != EDGE_OK) return s;
    d = (fc_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    memset(d, 0, sizeof *d);
    d->batches = (int32_t)lead;
    d->units = units;
    node->user_data = d;
    return EDGE_OK;
}

/* FullyConnectedOptions: 0 fused_activation_function, 1 weights_format, 2 keep_num_dims. */
edge_status_t edge_prepare_fully_connected(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == EDGE_OPTS_FullyConnectedOptions;
    const int32_t act = has_opts ? edge_opt_int(node, 0, 1, 0) : 0;
    const int32_t weights_format = has_opts ? edge_opt_int(node, 1, 1, 0) : 0;
    const int32_t keep_num_dims = has_opts ? edge_opt_int(node, 2, 1, 0) : 0;
    edge_tensor_t *in, *w, *bias, *out;
    fc_data_t *d;
    int64_t in_elems;
    int32_t units, depth, k, shape[8], rank;
    edge_status_t s;

    if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED expects 2..3 inputs and 1 output");
    in = edge_in(ctx, node, 0);
    w = edge_in(ctx, node, 1);
    bias = edge_in(ctx, node, 2);
    out = edge_out(ctx, node, 0);
    if (!in || !w) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: input and weights are required");
    if ((s = edge_densify_weights(ctx, w)) != EDGE_OK) return s; /* sparse weights: dense once (edge_sparse.h) */
    if ((s = edge_int4_to_int8(ctx, w)) != EDGE_OK) return s; /* INT4 weights: the INT8 paths below (edge_int4.h) */
    if (w->rank == 2 && w->dims[1] == 0 && in->type == out->type && /* float, hybrid, int8, 16x8: zero bytes */
        (in->type == EDGE_FLOAT32 || ((in->type == EDGE_INT8 || in->type == EDGE_INT16) && w->type == EDGE_INT8)))
        return fc_prepare_depth_zero(node, ctx, in, w->dims[0], keep_num_dims);
    if (EDGE_WITH_FLOAT32 && edge_hybrid_weights(in, w)) return edge_hybrid_prepare_fully_connected(node, ctx);
    if (act < 0 || act > EDGE_ACT_RELU6) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "FULLY_CONNECTED: fused activation");
    if (weights_format != 0) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "FULLY_CONNECTED: only DEFAULT weights_format");
    if (out->type != in->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: output type differs from input");
    if (!((in->type == EDGE_INT8 && w->type == EDGE_INT8) || (in->type == EDGE_FLOAT32 && w->type == EDGE_FLOAT32) ||
          (in->type == EDGE_INT16 && w->type == EDGE_INT8)))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "FULLY_CONNECTED: C kernel runs INT8/INT8, INT16/INT8 and FLOAT32/FLOAT32");
    if ((s = edge_type_built(ctx, in->type)) != EDGE_OK) return s;
    if (w->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: weights must be 2-D [units, depth]");
    units = w->dims[0];
    depth = w->dims[1];
    in_elems = edge_tensor_elements(in);
    if (depth <= 0 || in_elems % depth) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: input size vs weights depth");

    /* output shape */
    if (keep_num_dims) {
        if (in->rank < 1 || in->rank > 8 || in->dims[in->rank - 1] != depth)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: keep_num_dims needs input's last dim == depth");
        for (k = 0; k < in->rank - 1; k++) shape[k] = in->dims[k];
        shape[in->rank - 1] = units;
        rank = in->rank;
    } else {
        int64_t declared = edge_tensor_elements(out);
        shape[0] = (int32_t)(in_elems / depth);
        shape[1] = units;
        rank = 2;
        /* TFLM keeps the model's declared output shape when it holds the same values */
        if (out->rank > 0 && out->rank <= 8 && out->dims[out->rank - 1] == units &&
            declared == (in_elems / depth) * units) {
            for (k = 0; k < out->rank; k++) shape[k] = out->dims[k];
            rank = out->rank;
        }
    }
    s = edge_set_output_shape(ctx, node, 0, shape, rank);
    if (s != EDGE_OK) return s;

    d = (fc_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->batches = (int32_t)(in_elems / depth);
    d->depth = depth;
    d->units = units;

    if (in->type == EDGE_FLOAT32) {
        if (bias && (bias->type != EDGE_FLOAT32 || edge_tensor_elements(bias) != units))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: bias must be FLOAT32 with one value per unit");
        edge_activation_range_float(act, &d->flo, &d->fhi);
#if EDGE_SIMD
        return fc_prepare_simd_f32(node, ctx, d, w, bias);
#else
        return EDGE_OK;
#endif
    }
    if (in->type == EDGE_INT16) return fc_prepare_int16(node, ctx, d, in, w, bias, out, act);

    if (!in->quantized || !w->quantized || !out->quantized)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: int8 tensors need quantization parameters");
    if (!(in->scale > 0.0f) || !(out->scale > 0.0f) || in->scale - in->scale != 0.0f || out->scale - out->scale != 0.0f)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: scales must be positive and finite");
    if (bias && bias->type != EDGE_INT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "FULLY_CONNECTED: int8 bias must be INT32");
    if (bias && edge_tensor_elements(bias) != units)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: bias needs one value per unit");
    if (edge_activation_range(act, -128, 127, out->scale, out->zero_point, &d->lo, &d->hi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "FULLY_CONNECTED: fused activation");
    d->input_offset = edge_wrap32(-(int64_t)in->zero_point);
    d->output_offset = out->zero_point;
    s = fc_multipliers(ctx, d, in, w, bias, out);
    if (s != EDGE_OK) return s;
    /* the fast path; on DSP cores x + input offset is an int16 half (SXTAB16): offsets of |zp| <= 32640 */
    if (d->filter_offset == 0 && (!EDGE_DSP || (d->input_offset >= -32640 && d->input_offset <= 32640))) {
        const int32_t nq = d->per_channel ? units : 1;
        edge_rq_t q;
        for (k = 0; k < nq; k++) /* a ratio edge_rq does not cover: the plain path */
            if (edge_rq_make(&q, d->per_channel ? d->multipliers[k] : d->multiplier,
                             d->per_channel ? d->shifts[k] : d->shift) != 0)
                return EDGE_OK;
        for (k = 0; k < nq; k++) {
            edge_rq_make(&q, d->per_channel ? d->multipliers[k] : d->multiplier,
                         d->per_channel ? d->shifts[k] : d->shift);
            if (d->per_channel) {
                d->multipliers[k] = q.mul;
                d->shifts[k] = q.rnd;
            } else {
                d->multiplier = q.mul;
                d->shift = q.rnd;
            }
        }
        d->fast = 1;
#if EDGE_SIMD
        {
            const int32_t level = edge_simd_level();
            const size_t bytes = edge_simd_qgemm_bytes(level, units, depth);
            void *packed;
            d->simd = 0;
            if (level && bytes && w->is_const && (!bias || bias->is_const)) {
                d->simd = (edge_simd_qgemm_t *)edge_alloc_persistent(ctx, sizeof *d->simd);
                packed = edge_alloc_packed(ctx, bytes);
                if (!d->simd || !packed) return EDGE_ARENA_TOO_SMALL;
                edge_simd_qgemm_pack(d->simd, level, (const int8_t *)w->data, units, depth, depth, 1,
                                     bias ? (const int32_t *)bias->data : 0, d->input_offset,
                                     d->per_channel ? d->multipliers : &d->multiplier, d->per_channel,
                                     d->per_channel ? d->shifts : &d->shift, d->per_channel, d->output_offset, d->lo,
                                     d->hi, packed);
                d->simd_threads = edge_simd_threads();
                d->simd_part_bytes = (uint32_t)((edge_simd_qgemm_work(level, depth, d->batches) + 63) & ~(size_t)63);
                return edge_request_scratch(ctx, node, (size_t)d->simd_part_bytes * (size_t)d->simd_threads,
                                            &d->simd_scratch);
            }
        }
#endif
    }
    return EDGE_OK;
}

#if EDGE_SIMD
typedef struct {
    const fc_data_t *d;
    const int8_t *x;
    int8_t *y, *scr;
} fc_job_t;

static void fc_job(void *arg, int32_t t, int32_t n, int32_t slot) {
    const fc_job_t *j = (const fc_job_t *)arg;
    const fc_data_t *d = j->d;
    int8_t *work = j->scr + (size_t)slot * d->simd_part_bytes;
    int32_t a, b;
    if (d->batches >= 8) {
        edge_simd_split(d->batches, 4, t, n, &a, &b);
        if (a < b)
            edge_simd_qgemm(d->simd, j->x + (int64_t)a * d->depth, b - a, d->depth, 0, d->units,
                            j->y + (int64_t)a * d->units, d->units, work);
    } else {
        edge_simd_split(d->units, 16, t, n, &a, &b);
        if (a < b) edge_simd_qgemm(d->simd, j->x, d->batches, d->depth, a, b, j->y, d->units, work);
    }
}
#endif

#if EDGE_DSP
/* s[j] += sum over k < d4 of (x[k] + off) * slot j's row[k], d4 % 4 == 0; slots 0..3 at w0, w0 + st, w2, w2 + st
 * (st 0: all four the same row). |off| <= 32640. edge_dsp.h's edge_dot4_s8: 49 instructions per 32 MACs. */
#if defined(__GNUC__)
__attribute__((noinline)) /* its own registers: inlined (LTO), the 13-register asm has none left */
#endif
static void fc_slots(const int8_t *x, int32_t d4, int32_t off, const int8_t *w0, const int8_t *w2, int32_t st,
                     uint32_t *s) {
    edge_dot4_s8(x, d4, off, w0, w2, st, s);
}
#else
/* Portable C: four distinct rows (w0, w0 + st, w2, w2 + st). x + off fits int16 (|off| <= 32512): blocks of 16
 * as vector multiply-adds. */
static void fc_slots(const int8_t *x, int32_t d4, int32_t off, const int8_t *w0, const int8_t *w2, int32_t st,
                     uint32_t *s) {
    const int8_t *w1 = w0 + st, *w3 = w2 + st;
    int32_t j, k = 0;
    if (off >= -32512 && off <= 32512) {
        for (; k + 16 <= d4; k += 16) {
            int32_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
            for (j = 0; j < 16; j++) {
                const int16_t xv = (int16_t)(x[k + j] + off);
                t0 += xv * (int16_t)w0[k + j];
                t1 += xv * (int16_t)w1[k + j];
                t2 += xv * (int16_t)w2[k + j];
                t3 += xv * (int16_t)w3[k + j];
            }
            s[0] += (uint32_t)t0;
            s[1] += (uint32_t)t1;
            s[2] += (uint32_t)t2;
            s[3] += (uint32_t)t3;
        }
    }
    for (; k < d4; k++) {
        const int32_t xv = x[k] + off;
        s[0] += (uint32_t)(xv * w0[k]);
        s[1] += (uint32_t)(xv * w1[k]);
        s[2] += (uint32_t)(xv * w2[k]);
        s[3] += (uint32_t)(xv * w3[k]);
    }
}
#endif

/* int8 fast path for a depth below 8 (hello_world_int8's 1 -> 16 layer): a unit at a time, no group of four: for
 * one or two input words fc_slots' call and the group's set-up cost more than the MACs (~60 instructions a unit
 * with groups, ~20 so); the per-tensor multiplier loaded once. */
#if defined(__GNUC__)
__attribute__((noinline)) /* its own registers: inlined into the eval, its loop kept every value on the stack */
#endif
static void fc_int8_short(const fc_data_t *d, const int8_t *x, const int8_t *wt, const int32_t *bias, int8_t *y) {
    const int32_t depth = d->depth, units = d->units, pc = d->per_channel, off = d->input_offset;
    const int32_t zp = d->output_offset, lo = d->lo, hi = d->hi;
    int32_t b, u, k;
    edge_rq_t q;
    q.mul = d->multiplier;
    q.rnd = d->shift;
    for (b = 0; b < d->batches; b++, x += depth) {
        const int8_t *wu = wt;
        for (u = 0; u < units; u++, wu += depth) {
            uint32_t acc = bias ? (uint32_t)bias[u] : 0u;
            for (k = 0; k < depth; k++) acc += (uint32_t)((x[k] + off) * wu[k]);
            if (pc) {
                q.mul = d->multipliers[u];
                q.rnd = d->shifts[u];
            }
            *y++ = (int8_t)edge_clamp32(edge_rq_apply(&q, (int32_t)acc, zp), lo, hi);
        }
    }
}

/* The int8 fast path's common case (per-tensor multiplier, depth % 4 == 0): n_groups groups of four
 * units from yb[0], each group's four sums (fc_slots) from the bias straight to int8 in one loop that keeps the
 * layer's parameters in registers, without fc_int8_fast's row bookkeeping per group (mlp_8_32_32_4's
 * FULLY_CONNECTEDs 4,880 -> 4,400 instructions on the M4). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void fc_groups(const fc_data_t *d, const int8_t *xb, const int8_t *w, const int32_t *bias, int8_t *yb,
                      int32_t n_groups) {
    const int32_t depth = d->depth, off = d->input_offset, zp = d->output_offset, lo = d->lo, hi = d->hi;
    edge_rq_t q;
    int32_t g;
    q.mul = d->multiplier;
    q.rnd = d->shift;
    for (g = 0; g < n_groups; g++, w += 4 * depth, yb += 4) {
        uint32_t s[4];
        if (bias) {
            s[0] = (uint32_t)bias[4 * g];
            s[1] = (uint32_t)bias[4 * g + 1];
            s[2] = (uint32_t)bias[4 * g + 2];
            s[3] = (uint32_t)bias[4 * g + 3];
        } else {
            s[0] = s[1] = s[2] = s[3] = 0;
        }
        fc_slots(xb, depth, off, w, w + 2 * depth, depth, s); /* a call: inlined here, -O2 finds no 13 registers */
        yb[0] = (int8_t)edge_clamp32(edge_rq_apply(&q, (int32_t)s[0], zp), lo, hi);
        yb[1] = (int8_t)edge_clamp32(edge_rq_apply(&q, (int32_t)s[1], zp), lo, hi);
        yb[2] = (int8_t)edge_clamp32(edge_rq_apply(&q, (int32_t)s[2], zp), lo, hi);
        yb[3] = (int8_t)edge_clamp32(edge_rq_apply(&q, (int32_t)s[3], zp), lo, hi);
    }
}

/* int8 fast path: y = clamp(rq(bias + sum (x + input_offset) * w) + zp), four units per pass (fc_slots), the
 * depth % 4 tail one unit at a time. A last group of nu < 4 units on DSP cores runs as four slots too, rows
 * repeated (nu 3: u, u+1, u+1, u+2; 2: u, u+1, u, u+1; 1: u four times; the last unit's sum is slot 3's):
 * 1-3 units cost what four do (~6 instructions per MAC for one unit, as its own loop did); the portable build
 * runs such units one at a time. */
#if defined(__GNUC__)
__attribute__((noinline)) /* as fc_int8_short */
#endif
static void fc_int8_fast(const fc_data_t *d, const int8_t *x, const int8_t *wt, const int32_t *bias, int8_t *y) {
    const int32_t depth = d->depth, units = d->units, d4 = depth & ~3, pc = d->per_channel, off = d->input_offset;
    const int32_t zp = d->output_offset, lo = d->lo, hi = d->hi;
    int32_t b, u, j;
    edge_rq_t q;
    q.mul = d->multiplier; /* per tensor: once (per channel: per unit below) */
    q.rnd = d->shift;
    for (b = 0; b < d->batches; b++) {
        const int8_t *xb = x + (int64_t)b * depth;
        int8_t *yb = y + (int64_t)b * units;
        u = 0;
        if (!pc && d4 == depth) { /* per tensor, no tail: four units straight from the slots to the output */
            u = units & ~3;
            fc_groups(d, xb, wt, bias, yb, u >> 2);
        }
        for (; u < units; u += 4) {
            const int32_t nu = units - u < 4 ? units - u : 4, st = nu > 1 ? depth : 0;
            int32_t row[4], k = 0;
            uint32_t s[4];
            row[0] = u; /* the slots' rows */
            row[1] = u + (nu > 1);
            row[2] = EDGE_DSP || nu == 4 ? u + (nu > 2 ? nu - 2 : 0) : u + 2;
            row[3] = row[2] + (nu > 1);
            for (j = 0; j < 4; j++) s[j] = bias ? (uint32_t)bias[row[j]] : 0;
            if (EDGE_DSP || nu == 4) {
                fc_slots(xb, d4, off, wt + (int64_t)row[0] * depth, wt + (int64_t)row[2] * depth, st, s);
                k = d4;
                s[nu - 1] = s[3]; /* the last unit's slot */
                row[nu - 1] = row[3];
            }
            for (j = 0; j < nu; j++) {
                const int8_t *wu = wt + (int64_t)row[j] * depth;
                uint32_t acc = s[j];
                int32_t i;
                for (i = k; i < depth; i++) acc += (uint32_t)((xb[i] + off) * wu[i]);
                if (pc) {
                    q.mul = d->multipliers[u + j];
                    q.rnd = d->shifts[u + j];
                }
                yb[u + j] = (int8_t)edge_clamp32(edge_rq_apply(&q, (int32_t)acc, zp), lo, hi);
            }
        }
    }
}

/* float32: eight units at a time (ef_dot8); the last group repeats its last unit's row where units run out. */
static void fc_float(const fc_data_t *d, const float *x, const float *w, const float *bias, float *y) {
    const int32_t D = d->depth, U = d->units;
    int32_t b, u, j;
    for (b = 0; b < d->batches; b++) {
        const float *xb = x + (int64_t)b * D;
        float *yb = y + (int64_t)b * U;
        for (u = 0; u < U; u += 8) {
            const float *rows[8];
            float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
            const int32_t m = U - u < 8 ? U - u : 8;
            for (j = 0; j < 8; j++) rows[j] = w + (int64_t)(u + (j < m ? j : m - 1)) * D;
            ef_dot8(xb, rows, D, acc);
            for (j = 0; j < m; j++) {
                float v = acc[j] + (bias ? bias[u + j] : 0.0f);
                yb[u + j] = v < d->flo ? d->flo : (v > d->fhi ? d->fhi : v);
            }
        }
    }
}

void edge_eval_fully_connected(const edge_node_t *node, edge_ctx_t *ctx) {
    const fc_data_t *d = (const fc_data_t *)node->user_data;
    /* input, weights and output are present (prepare): indexed directly, edge_in's checks for the optional bias
     * only (-Os calls edge_in out of line: ~10 instructions each, on every invoke of a tiny layer) */
    const edge_tensor_t *in = &ctx->tensors[node->inputs[0]], *w = &ctx->tensors[node->inputs[1]];
    const edge_tensor_t *bt = edge_in(ctx, node, 2);
    edge_tensor_t *out = &ctx->tensors[node->outputs[0]];
    const int8_t *x, *wt;
    const int32_t *bias;
    int8_t *y;
    int32_t b, u, k;
    int64_t r64;
    uint32_t in_off, f_off;

    if (w->rank == 2 && w->dims[1] == 0) { /* fc_prepare_depth_zero, hybrid or not */
        memset(out->data, 0, out->bytes);
        return;
    }
    if (EDGE_WITH_FLOAT32 && in->type == EDGE_FLOAT32 && edge_hybrid_weights(in, w)) { /* the call for float only */ /* its user_data is hybrid.c's, not an fc_data_t */
        edge_hybrid_eval_fully_connected(node, ctx);
        return;
    }
    in_off = (uint32_t)d->input_offset; /* int32 wrap */
    f_off = (uint32_t)d->filter_offset;
    if (EDGE_WITH_FLOAT32 && in->type == EDGE_FLOAT32) {
#if EDGE_SIMD
        if (d->fsimd) {
            fc_float_simd(node, ctx, d, (const float *)in->data, (const float *)w->data,
                          bt ? (const float *)bt->data : 0, (float *)out->data);
            return;
        }
#endif
        fc_float(d, (const float *)in->data, (const float *)w->data, bt ? (const float *)bt->data : 0,
                 (float *)out->data);
        return;
    }
    if (EDGE_WITH_INT16 && in->type == EDGE_INT16) {
        fc_eval_int16(d, in, w, bt, out);
        return;
    }
    x = (const int8_t *)in->data;
    wt = (const int8_t *)w->data;
    bias = bt ? (const int32_t *)bt->data : 0;
    y = (int8_t *)out->data;
#if EDGE_SIMD
    if (d->simd) {
        fc_job_t j;
        j.d = d;
        j.x = x;
        j.y = y;
        j.scr = (int8_t *)edge_scratch(ctx, node, d->simd_scratch);
        const int32_t slots = edge_simd_parts((int64_t)d->batches * d->units * d->depth, d->simd_threads);
        edge_simd_parallel(slots > 1 ? 2 * slots : 1, slots, fc_job, &j);
        return;
    }
#endif
    if (d->fast) {
        if (d->depth < 8) fc_int8_short(d, x, wt, bias, y);
        else fc_int8_fast(d, x, wt, bias, y);
        return;
    }
    for (b = 0; b < d->batches; b++) {
        const int8_t *xb = x + (int64_t)b * d->depth;
        for (u = 0; u < d->units; u++) {
            const int8_t *wu = wt + (int64_t)u * d->depth;
            uint32_t acc = 0; /* the reference's int32 accumulator, wrapping instead of overflowing */
            int32_t r;
            for (k = 0; k < d->depth; k++)
                acc += ((uint32_t)(int32_t)xb[k] + in_off) * ((uint32_t)(int32_t)wu[k] + f_off);
            if (bias) acc += (uint32_t)bias[u];
            r = d->per_channel ? edge_mbqm(edge_wrap32(acc), d->multipliers[u], d->shifts[u])
                               : edge_mbqm(edge_wrap32(acc), d->multiplier, d->shift);
            r64 = (int64_t)r + d->output_offset;
            y[(int64_t)b * d->units + u] = (int8_t)(r64 < d->lo ? d->lo : r64 > d->hi ? d->hi : r64);
        }
    }
}

/* ---- int16x8: int16 activations, int8 weights (per tensor or per channel), int64 or int32 bias ----
 * As edge_sdk/runtime/kernels/conv.py's "int16" kind and TFLM's 16x8 FullyConnected: with an INT64 bias (or no bias
 * and quantized_bias_type not INT32) the sums are int64 and requantized with the int64
 * MultiplyByQuantizedMultiplier (16-bit multiplier); with an INT32 bias they wrap at 32 bits and take the
 * int32 one. Output plus zero point, clamped to int16 / the fused activation. */
static edge_status_t fc_prepare_int16(edge_node_t *node, edge_ctx_t *ctx, fc_data_t *d, const edge_tensor_t *in,
                                      const edge_tensor_t *w, const edge_tensor_t *bias, const edge_tensor_t *out,
                                      int32_t act) {
    const int32_t units = d->units;
    int32_t k;
    edge_status_t s;
    if (!in->quantized || !w->quantized || !out->quantized)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: int16 tensors need quantization parameters");
    if (!(in->scale > 0.0f) || !(out->scale > 0.0f) || in->scale - in->scale != 0.0f || out->scale - out->scale != 0.0f)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: scales must be positive and finite");
    if (bias && bias->type != EDGE_INT64 && bias->type != EDGE_INT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "FULLY_CONNECTED: int16 bias must be INT64 or INT32");
    if (bias && edge_tensor_elements(bias) != units)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FULLY_CONNECTED: bias needs one value per unit");
    if (edge_activation_range(act, -32768, 32767, out->scale, out->zero_point, &d->lo, &d->hi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "FULLY_CONNECTED: fused activation");
    d->wide = bias ? bias->type == EDGE_INT64
                   : !(node->options_type == EDGE_OPTS_FullyConnectedOptions && edge_opt_int(node, 4, 1, 0) == EDGE_INT32);
    d->input_offset = edge_wrap32(-(int64_t)in->zero_point);
    d->output_offset = out->zero_point;
    s = fc_multipliers(ctx, d, in, w, bias, out);
    if (s != EDGE_OK) return s;
    if (d->wide) {
        for (k = 0; k < (d->per_channel ? units : 1); k++) {
            int32_t sh = d->per_channel ? d->shifts[k] : d->shift;
            if (15 - sh < 1 || 15 - sh > 62) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "FULLY_CONNECTED: int16 scale ratio out of range");
        }
    }
    return EDGE_OK;
}

static void fc_eval_int16(const fc_data_t *d, const edge_tensor_t *in, const edge_tensor_t *w, const edge_tensor_t *bt,
                          edge_tensor_t *out) {
    const int16_t *x = (const int16_t *)in->data;
    const int8_t *wt = (const int8_t *)w->data;
    int16_t *y = (int16_t *)out->data;
    const int64_t in_off = d->input_offset, f_off = d->filter_offset;
    int32_t b, u, k;
    for (b = 0; b < d->batches; b++) {
        const int16_t *xb = x + (int64_t)b * d->depth;
        for (u = 0; u < d->units; u++) {
            const int8_t *wu = wt + (int64_t)u * d->depth;
            const int32_t m = d->per_channel ? d->multipliers[u] : d->multiplier;
            const int32_t sh = d->per_channel ? d->shifts[u] : d->shift;
            int64_t r;
            if (d->wide) {
                int64_t acc = 0, bias = 0;
                for (k = 0; k < d->depth; k++) acc += ((int64_t)xb[k] + in_off) * ((int64_t)wu[k] + f_off);
                if (bt) {
                    if (bt->type == EDGE_INT64) memcpy(&bias, (const uint8_t *)bt->data + 8 * (int64_t)u, 8);
                    else bias = ((const int32_t *)bt->data)[u];
                }
                r = edge_mbqm64(acc + bias, m, sh);
            } else {
                uint32_t acc = 0; /* int32 accumulator, wrapping */
                for (k = 0; k < d->depth; k++)
                    acc += (uint32_t)(((int64_t)xb[k] + in_off) * ((int64_t)wu[k] + f_off));
                if (bt) acc += (uint32_t)((const int32_t *)bt->data)[u];
                r = edge_mbqm(edge_wrap32(acc), m, sh);
            }
            r += d->output_offset;
            y[(int64_t)b * d->units + u] = (int16_t)(r < d->lo ? d->lo : r > d->hi ? d->hi : r);
        }
    }
}
