/* CONV_2D: y[b, oy, ox, o] = act(sum_{fy, fx, i} x[b, oy*sh - pt + fy*dh, ox*sw - pl + fx*dw, g*cg + i]
 *                                   * w[o, fy, fx, i] + bias[o]),   g = o / (O / groups), groups = C / cg.
 *
 * Arithmetic as TFLM's reference ConvPerChannel kernels (and edge_sdk/runtime/kernels/conv.py prepare_conv_2d):
 *  - int8 (per-tensor or per-channel int8 weights, optional int32 bias): int32 accumulator of
 *    w * (x + input_offset), taps in the padding contribute nothing, + bias, MultiplyByQuantizedMultiplier
 *    with the channel's multiplier (input_scale * weight_scale / output_scale, in double), + output zero
 *    point, clamp to the fused activation. Per-tensor weights with a zero point (legacy UINT8 models,
 *    presented as INT8: edge_sdk/runtime/uint8.py) add LiteRT's filter offset: w + filter_offset, computed as
 *    sum(w * (x + input_offset)) + filter_offset * sum(x + input_offset) over each pixel's window (the
 *    window's sum from the im2col buffer); such layers take the portable path (no CPU fast path).
 *  - int16x8 (int16 activations, int8 weights): no offsets; with an int64 bias (or no bias and
 *    quantized_bias_type != INT32) an int64 accumulator and the 16-bit-multiplier requantization, with an
 *    int32 bias an int32 accumulator and the int32 requantization; clamp to the activation range.
 *  - float32: the reference's loop order (fy, fx, i), then + bias, then the activation clamp.
 *
 * The int8 path is im2col + a 2x2 register-blocked GEMM (two output pixels x two output channels): the
 * window of each output pixel is expanded once into int16 values with the input offset already added
 * (padding -> 0), then every output channel's weights run against it. On cores with the DSP extension
 * (Cortex-M4/M7/M33: __ARM_FEATURE_DSP) the GEMM uses SXTB16 to widen four int8 weights into two registers
 * and SMLAD to do two 16-bit MACs per instruction; the im2col buffer is then stored in the matching order
 * (x0, x2, x1, x3 for every group of four values). Define EDGE_EMULATE_DSP on the host to run that same
 * path with C versions of the instructions (edge_dsp.h; the tests compare it with the plain build).
 */
#include <stddef.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_conv.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint.h"
#include "../edge_hybrid.h"
#include "../edge_int4.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(CONV_2D, conv_2d, 8, "FLOAT32/FLOAT32 INT8/INT8 INT16/INT8 FLOAT32/INT8 FLOAT32/UINT8 INT8/INT4 INT16/INT4 FLOAT32/INT4", "NHWC 4-D; INT4 filters unpacked to INT8 at prepare; quantized filter per-tensor or per-channel (one scale per output channel); FLOAT32 input with INT8/UINT8 filter: LiteRT's hybrid kernel (hybrid.c)")

enum { CONV_FLOAT = 0, CONV_INT8 = 1, CONV_INT16_32 = 2, CONV_INT16_64 = 3 };

typedef struct {
    int16_t kind;
    int16_t filter_offset;      /* int8: -(the weights' zero point, -127..128), nonzero only for per-tensor legacy
                                 * (uint8) weights; 16 bits beside kind: no persistent byte more per node */
    int32_t n, c;               /* input batch, channels (its height and width: geo) */
    int32_t o;                  /* output channels */
    int32_t kh, kw, cg;         /* filter: [o, kh, kw, cg] */
    int32_t groups, opg;        /* groups and output channels per group */
    int32_t sh, sw, dh, dw;     /* strides, dilations */
    int32_t k;                  /* kh * kw * cg: one output channel's weights */
    int32_t input_offset, output_offset, lo, hi;
    int32_t *rqc;               /* edge_conv_rq's 5 bytes a channel: int16 layers (edge_mbqm's multiplier and
                                 * shift), and int8 layers under the least-RAM plan without a fast path (rq NULL;
                                 * conv_gemm unpacks a chunk of channels at a time) */
    edge_rq_t *rq;              /* int8: per output channel (persistent); with rq_generic the raw multiplier
                                 * and shift (mul, rnd) for edge_mbqm */
    int32_t rq_generic;
    int32_t scratch;            /* int8: im2col buffer of 2 pixels x groups x k int16 */
    edge_conv_geom_t geo;       /* input h x w, output oh x ow, padding before (top, left); geo.fast: simd's
                                 * or fsimd's GEMM (CONV_FAST_*). Here and the pointers last: the int32 fields
                                 * in even runs, no padding on a 64-bit CPU */
#if EDGE_SIMD
    int32_t simd_scratch;       /* CONV_SIMD_MB im2col rows of k int8 + the GEMM's work */
    int32_t simd_threads;       /* threads at prepare (edge_simd_threads): parts of the pixels, scratch each */
    uint32_t simd_part_bytes;   /* one thread's scratch */
    edge_simd_qgemm_t *simd;    /* int8 on a 64-bit Linux CPU with a fast path (src/simd): the packed weights;
                                 * with geo.fast CONV_FAST_QCONV the first member of an edge_simd_qconv_t (conv_qconv:
                                 * one pointer for both, no persistent byte more per node); NULL: the portable kernel */
    edge_simd_sgemm_t *fsimd;   /* float32, one group, on a CPU with a float GEMM: the packed filter (its packed
                                 * block in persistent memory for a constant filter, else repacked per invoke
                                 * into its pack_scratch); its rows: im2col rows per block (0: a 1x1 filter, the
                                 * input rows as they are); NULL: the portable kernel */
#endif
} conv_data_t;

#if EDGE_SIMD
#define CONV_SIMD_MB 32 /* output pixels per im2col block (two AMX A tiles) */

/* geo.fast: the packed GEMM on im2col rows, or (int8, a 1x1 stride-1 filter without padding) on the input rows
 * as they are, or (int8) the indirection conv (edge_simd_qconv: the taps read where they lie) */
enum { CONV_FAST_GEMM = 1, CONV_FAST_DIRECT = 2, CONV_FAST_QCONV = 3 };

/* The indirection conv whose first member d->simd is (geo.fast CONV_FAST_QCONV). */
static inline const edge_simd_qconv_t *conv_qconv(const conv_data_t *d) { return (const edge_simd_qconv_t *)d->simd; }

/* Whether an int8 layer gets the CPU's fast path (one group, constant filter and bias, a level that packs this
 * shape), given multipliers edge_rq covers. */
static int conv_simd_int8(const conv_data_t *d, const edge_tensor_t *w, const edge_tensor_t *bias) {
    const int32_t level = edge_simd_level();
    return level && d->groups == 1 && d->filter_offset == 0 && w->is_const && (!bias || bias->is_const) &&
           edge_simd_qgemm_bytes(level, d->o, d->k) != 0;
}

/* int8, conv_simd_int8, multipliers edge_rq covers: the filter packed for the CPU's level. */
static edge_status_t conv_prepare_simd(edge_node_t *node, edge_ctx_t *ctx, conv_data_t *d, const edge_tensor_t *w,
                                       const edge_tensor_t *bias) {
    const int32_t level = edge_simd_level();
    size_t bytes;
    void *packed;
    d->simd = 0;
    d->simd_scratch = -1;
    if (d->rq_generic || !conv_simd_int8(d, w, bias)) return EDGE_OK;
    /* A window: its taps read in place (a patch's window moves). A 1x1 stride-1 filter too (the indirection conv's
     * one tap: 6 x 64 tiles on the input rows as they lie, flipped in registers), except an expansion (o >= 2c:
     * inverted residuals' first 1x1), where the GEMM's 12-row tiles on a flipped copy run faster, and a 1x1 into few
     * channels (edge_simd_qgemm_few: a U-Net's 16 -> 1 head), whose GEMM runs 16 / n2 pixels a vector where a
     * tile's 16-channel block had 1 valid. C microbenchmark, GEMM vs indirection conv on the same shapes (thread CPU
     * time, min of 40 rounds, after vnni_interleave_row): expansions qconv / GEMM 1.04-1.18 (56x56x24->144 1.17,
     * 14x14x96->576 1.15, 7x7x320->1280 1.15, 24x24x48->96 1.12), o <= c 0.62-1.02 (56x56x96->24 0.62). */
    const int one_by_one = d->kh == 1 && d->kw == 1 && d->sh == 1 && d->sw == 1 && d->geo.pt == 0 && d->geo.pl == 0;
    const int few = one_by_one && edge_simd_qgemm_few(level, d->o, d->k);
    edge_simd_dwf_t p;
    memset(&p, 0, sizeof p);
    p.h = d->geo.h;
    p.w = d->geo.w;
    p.c = d->c;
    p.oh = d->geo.oh;
    p.ow = d->geo.ow;
    p.kh = d->kh;
    p.kw = d->kw;
    p.sh = d->sh;
    p.sw = d->sw;
    p.dh = d->dh;
    p.dw = d->dw;
    p.pt = d->geo.pt;
    p.pl = d->geo.pl;
    /* An expansion into at most 32 channels where the pixel-lane kernel takes it (edge_simd_qconv_lanes: 16 pixels a
     * vector, a sum per channel) runs it too: one-op cuts (benchmarks/conv_igemm.py workers, thread CPU time) GEMM ->
     * lanes 48x48x8->16 13.0 -> 9.6 us, 48x48x16->32 25.1 -> 23.9, 24x24x16->32 7.0 -> 6.6. */
    if ((!one_by_one || d->o < 2 * d->c || edge_simd_qconv_lanes(level, &p, d->o)) && !few &&
        !edge_in_patch_stage(ctx->interp, node)) {
        bytes = edge_simd_qconv_bytes(level, &p, d->o);
        if (bytes) {
            edge_simd_qconv_t *qc = (edge_simd_qconv_t *)edge_alloc_persistent(ctx, sizeof *qc);
            packed = edge_alloc_packed(ctx, bytes);
            if (!qc || !packed) return EDGE_ARENA_TOO_SMALL;
            d->simd = &qc->g;
            edge_simd_qconv_pack(qc, level, &p, d->o, (const int8_t *)w->data,
                                 bias ? (const int32_t *)bias->data : 0, d->input_offset, &d->rq[0].mul, 2,
                                 &d->rq[0].rnd, 2, d->output_offset, d->lo, d->hi, packed);
            d->geo.fast = CONV_FAST_QCONV;
            d->simd_threads = edge_simd_threads();
            d->simd_part_bytes = 0; /* no scratch: nothing is copied */
            return EDGE_OK;
        }
    }
    bytes = edge_simd_qgemm_bytes(level, d->o, d->k);
    d->simd = (edge_simd_qgemm_t *)edge_alloc_persistent(ctx, sizeof *d->simd);
    packed = edge_alloc_packed(ctx, bytes);
    if (!d->simd || !packed) return EDGE_ARENA_TOO_SMALL;
    edge_simd_qgemm_pack(d->simd, level, (const int8_t *)w->data, d->o, d->k, d->k, 1,
                         bias ? (const int32_t *)bias->data : 0, d->input_offset, &d->rq[0].mul, 2, &d->rq[0].rnd, 2,
                         d->output_offset, d->lo, d->hi, packed);
    d->geo.fast = d->kh == 1 && d->kw == 1 && d->sh == 1 && d->sw == 1 && d->geo.pt == 0 && d->geo.pl == 0
                      ? CONV_FAST_DIRECT
                      : CONV_FAST_GEMM;
    d->simd_threads = edge_simd_threads();
    if (few) { /* no work area (scr NULL) */
        d->simd_part_bytes = 0;
        return EDGE_OK;
    }
    d->simd_part_bytes = (uint32_t)(((d->geo.fast == CONV_FAST_DIRECT ? 0 : (size_t)CONV_SIMD_MB * (size_t)d->k) +
                                     edge_simd_qgemm_work(level, d->k, 0) + 63) & ~(size_t)63);
    return edge_request_scratch(ctx, node, (size_t)d->simd_part_bytes * (size_t)d->simd_threads, &d->simd_scratch);
}
#else
static int conv_simd_int8(const conv_data_t *d, const edge_tensor_t *w, const edge_tensor_t *bias) {
    (void)d, (void)w, (void)bias;
    return 0;
}
#endif

#if EDGE_SIMD
/* float32, one group: the filter as GEMM panels [o, kh * kw * cg] (packed here when constant, else at every
 * invoke: a filter that a DEQUANTIZE computes), im2col rows of fsimd->rows pixels per thread unless the filter is 1x1
 * without padding (then every output row is ow input pixels sw * c floats apart). */
static edge_status_t conv_prepare_simd_f32(edge_node_t *node, edge_ctx_t *ctx, conv_data_t *d, const edge_tensor_t *w,
                                           const edge_tensor_t *bias) {
    const int32_t level = edge_simd_level();
    const size_t bytes = level && d->groups == 1 ? edge_simd_sgemm_bytes(level, d->o, d->k) : 0;
    const int constant = w->is_const && (!bias || bias->is_const);
    float flo, fhi;
    edge_status_t s;
    d->fsimd = 0;
    if (!bytes) return EDGE_OK;
    memcpy(&flo, &d->lo, 4);
    memcpy(&fhi, &d->hi, 4);
    d->fsimd = (edge_simd_sgemm_t *)edge_alloc_persistent(ctx, sizeof *d->fsimd);
    if (!d->fsimd) return EDGE_ARENA_TOO_SMALL;
    d->fsimd->pack_scratch = -1;
    d->geo.fast = CONV_FAST_GEMM;
    if (constant) {
        void *packed = edge_alloc_packed(ctx, bytes);
        if (!packed) return EDGE_ARENA_TOO_SMALL;
        edge_simd_sgemm_pack(d->fsimd, level, (const float *)w->data, d->o, d->k, d->k, 1,
                             bias ? (const float *)bias->data : 0, flo, fhi, packed);
    } else {
        d->fsimd->level = level; /* the rest at every invoke (conv_float_simd) */
        d->fsimd->lo = flo;
        d->fsimd->hi = fhi;
        d->fsimd->packed = 0;
        s = edge_request_scratch(ctx, node, bytes, &d->fsimd->pack_scratch);
        if (s != EDGE_OK) return s;
    }
    d->simd_threads = edge_simd_threads();
    if (d->kh == 1 && d->kw == 1 && d->geo.pt == 0 && d->geo.pl == 0) {
        d->fsimd->rows = 0;
        return EDGE_OK;
    }
    /* up to 256 KB of im2col rows (L2), 8 to 48 of them (whole 8-row tiles of the AVX-512 SGEMM): each block
     * streams the packed filter once, so a deep window (k = 9 x 256) wants more than a handful of rows */
    d->fsimd->rows = (int32_t)(65536 / d->k) / 8 * 8;
    d->fsimd->rows = d->fsimd->rows < 8 ? 8 : (d->fsimd->rows > 48 ? 48 : d->fsimd->rows);
    d->simd_part_bytes = (uint32_t)((sizeof(float) * (size_t)d->fsimd->rows * (size_t)d->k + 63) & ~(size_t)63);
    return edge_request_scratch(ctx, node, (size_t)d->simd_part_bytes * (size_t)d->simd_threads, &d->simd_scratch);
}
#endif

/* Conv2DOptions: 0 padding, 1 stride_w, 2 stride_h, 3 fused_activation_function, 4 dilation_w_factor,
 * 5 dilation_h_factor, 6 quantized_bias_type. */
edge_status_t edge_prepare_conv_2d(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_conv_opts_t op = edge_conv_opts(node, EDGE_OPTS_Conv2DOptions, 3, 4);
    const int32_t qbias_type = node->options_type == EDGE_OPTS_Conv2DOptions ? edge_opt_int(node, 6, 1, 0) : 0;
    edge_tensor_t *in, *w, *bias, *out;
    conv_data_t *d;
    int32_t shape[4], k;
    edge_status_t s;

    if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D expects 2..3 inputs and 1 output");
    in = edge_in(ctx, node, 0);
    w = edge_in(ctx, node, 1);
    bias = edge_in(ctx, node, 2);
    out = edge_out(ctx, node, 0);
    if (!in || !w) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: input and filter are required");
    if ((s = edge_int4_to_int8(ctx, w)) != EDGE_OK) return s; /* INT4 filters: the INT8 paths below (edge_int4.h) */
    if (EDGE_WITH_FLOAT32 && edge_hybrid_weights(in, w)) return edge_hybrid_prepare_conv_2d(node, ctx);
    s = edge_conv_check(ctx, in, w, out, op.act);
    if (s != EDGE_OK) return s;

    d = (conv_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->n = in->dims[0];
    d->geo.h = in->dims[1];
    d->geo.w = in->dims[2];
    d->c = in->dims[3];
    d->o = w->dims[0];
    d->kh = w->dims[1];
    d->kw = w->dims[2];
    d->cg = w->dims[3];
    d->sh = op.sh;
    d->sw = op.sw;
    d->dh = op.dh;
    d->dw = op.dw;
    d->scratch = -1;
    if (d->n < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: negative batch"); /* a batch of 0: empty output */
    if (d->c <= 0 || d->o <= 0 || d->cg <= 0 || d->c % d->cg)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: input depth is not a multiple of the filter depth");
    d->groups = d->c / d->cg;
    if (d->o % d->groups) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: filters do not split into the groups");
    d->opg = d->o / d->groups;
    if (edge_conv_geom_fold_pad(ctx, node, &op, d->kh, d->kw, &d->geo)) /* a folded PAD: its input, its padding */
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: padding, strides, dilations or window do not fit the input");
    if ((int64_t)d->kh * d->kw * d->cg > 0x3fffffff) return EDGE_FAIL(ctx, EDGE_LIMIT, "CONV_2D: filter too large");
    d->k = d->kh * d->kw * d->cg;
    shape[0] = d->n;
    shape[1] = d->geo.oh;
    shape[2] = d->geo.ow;
    shape[3] = d->o;
    s = edge_set_output_shape(ctx, node, 0, shape, 4);
    if (s != EDGE_OK) return s;

    if (in->type == EDGE_FLOAT32) {
        d->kind = CONV_FLOAT;
        if (bias && (bias->type != EDGE_FLOAT32 || edge_tensor_elements(bias) != d->o))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: bias must be FLOAT32 with one value per filter");
        float flo = 0.0f, fhi = 0.0f; /* kept in lo / hi (their bits): the float kind has no integer clamp */
        edge_activation_range_float(op.act, &flo, &fhi);
        memcpy(&d->lo, &flo, 4);
        memcpy(&d->hi, &fhi, 4);
#if EDGE_SIMD
        return conv_prepare_simd_f32(node, ctx, d, w, bias);
#else
        return EDGE_OK;
#endif
    }

    if (in->type == EDGE_INT8) {
        d->kind = CONV_INT8;
        if (bias && bias->type != EDGE_INT32)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "CONV_2D: int8 bias must be INT32");
    } else {
        if (bias && bias->type != EDGE_INT32 && bias->type != EDGE_INT64)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "CONV_2D: int16 bias must be INT32 or INT64");
        d->kind = (bias ? bias->type == EDGE_INT32 : qbias_type == EDGE_INT32) ? CONV_INT16_32 : CONV_INT16_64;
    }
    if (bias && edge_tensor_elements(bias) != d->o)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_2D: bias needs one value per filter");
    s = edge_conv_check_quant(ctx, in, w, out, d->o, op.act, &d->lo, &d->hi);
    if (s != EDGE_OK) return s;
    d->input_offset = in->type == EDGE_INT8 ? -in->zero_point : 0;
    d->output_offset = in->type == EDGE_INT8 ? out->zero_point : 0;
    d->filter_offset = in->type == EDGE_INT8 ? -w->zero_point : 0;
    if (d->kind != CONV_INT8) {
        int32_t generic;
        return edge_conv_rq(ctx, in, w, out, d->o, 0, &d->rqc, &generic);
    }
    /* int8: edge_rq_t per channel, 8 bytes (the store reads each with one LDRD; the 5-byte form of
     * edge_conv_rq measured +0.1 instr/MAC on the M4 1x1 conv, over 2), except under the least-RAM plan: there
     * the 5-byte form (3 bytes a channel less) unless a fast path packs its own copy from rq */
    if (edge_least_ram(ctx->interp) && !conv_simd_int8(d, w, bias)) {
        s = edge_conv_rq(ctx, in, w, out, d->o, 1, &d->rqc, &d->rq_generic);
        if (s != EDGE_OK) return s;
        return edge_request_scratch(ctx, node, sizeof(int16_t) * 2u * (size_t)d->groups * (size_t)d->k, &d->scratch);
    }
    d->rq = (edge_rq_t *)edge_alloc_persistent(ctx, sizeof(edge_rq_t) * (size_t)d->o);
    if (!d->rq) return EDGE_ARENA_TOO_SMALL;
    for (k = 0; k < d->o; k++) {
        int32_t m, e;
        edge_quantize_multiplier(edge_conv_real(in, w, out, k), &m, &e);
        if (d->rq_generic) {
            d->rq[k].mul = m;
            d->rq[k].rnd = e;
        } else if (edge_rq_make(&d->rq[k], m, e) != 0) {
            d->rq_generic = 1; /* a ratio edge_rq does not cover: every channel keeps edge_mbqm's, from the start */
            k = -1;
        }
    }
#if EDGE_SIMD
    s = conv_prepare_simd(node, ctx, d, w, bias);
    if (s != EDGE_OK || (d->simd && !edge_in_patch_stage(ctx->interp, node))) return s;
#endif
    return edge_request_scratch(ctx, node, sizeof(int16_t) * 2u * (size_t)d->groups * (size_t)d->k, &d->scratch);
}

/* ---------------------------------------------------------------------------------------------- int8 */

/* The im2col buffer holds two output pixels side by side: for every group, the window's k values of both
 * pixels (x + input_offset as int16, 0 in the padding), interleaved so that one pointer walks both rows.
 * Every full group of four values v0..v3 takes 8 int16 slots:
 *     [p0.v0 p0.v2 | p1.v0 p1.v2 | p0.v1 p0.v3 | p1.v1 p1.v3]
 * (the order in which SXTB16 / SXTB16-ROR8 widen four int8 weights: each 32-bit word is one SMLAD operand),
 * and the k % 4 remaining values take (p0.v, p1.v) pairs. Without the DSP extension (the host) the two
 * rows simply follow each other (p0's k values, then p1's: contiguous loops the compiler vectorizes).
 * CONV_K4 is the part of k the interleaved chunks cover; conv_slot gives value kk's slot for pixel p. */
#if EDGE_DSP
#define CONV_K4(k) ((k) & ~3)
static inline int32_t conv_slot(int32_t k, int32_t kk, int32_t p) {
    if (kk >= (k & ~3)) return 2 * kk + p;
    return (kk & ~3) * 2 + (kk & 1) * 4 + p * 2 + ((kk >> 1) & 1);
}
#else
#define CONV_K4(k) (k)
static inline int32_t conv_slot(int32_t k, int32_t kk, int32_t p) { return p * k + kk; }
#endif

/* Pixel p (0 or 1) of the pair: its window, every group, into the interleaved buffer. */
static void conv_im2col(const conv_data_t *d, const int8_t *xb, int32_t oy, int32_t ox, int32_t p, int16_t *col) {
    const int32_t iy0 = oy * d->sh - d->geo.pt, ix0 = ox * d->sw - d->geo.pl;
    const int32_t off = d->input_offset, k = d->k;
    int32_t g, fy, fx, i;
    for (g = 0; g < d->groups; g++) {
        int16_t *dst = col + (int64_t)g * 2 * k;
        int32_t kk = 0;
        for (fy = 0; fy < d->kh; fy++) {
            const int32_t iy = iy0 + fy * d->dh;
            for (fx = 0; fx < d->kw; fx++) {
                const int32_t ix = ix0 + fx * d->dw;
                const int8_t *src = xb + ((int64_t)iy * d->geo.w + ix) * d->c + (int64_t)g * d->cg;
                const int inside = iy >= 0 && iy < d->geo.h && ix >= 0 && ix < d->geo.w;
#if EDGE_DSP
                if ((d->cg & 3) == 0) { /* whole chunks of four: two 32-bit stores each */
                    int16_t *o = dst + 2 * kk + 2 * p;
                    if (!inside) {
                        for (i = 0; i < d->cg; i += 4, o += 8) {
                            memset(o, 0, 4);
                            memset(o + 4, 0, 4);
                        }
                    } else {
                        const uint32_t off2 = (uint32_t)(uint16_t)off * 0x10001u;
                        for (i = 0; i < d->cg; i += 4, o += 8) {
                            uint32_t v, a, b;
                            memcpy(&v, src + i, 4);
                            a = edge_sxtab16(off2, v);
                            b = edge_sxtab16_ror8(off2, v);
                            memcpy(o, &a, 4);
                            memcpy(o + 4, &b, 4);
                        }
                    }
                    kk += d->cg;
                    continue;
                }
#else
                {
                    int16_t *o = dst + (int64_t)p * k + kk;
                    if (!inside) {
                        memset(o, 0, sizeof(int16_t) * (size_t)d->cg);
                    } else {
                        for (i = 0; i < d->cg; i++) o[i] = (int16_t)(src[i] + off);
                    }
                    kk += d->cg;
                    continue;
                }
#endif
                for (i = 0; i < d->cg; i++, kk++) dst[conv_slot(k, kk, p)] = (int16_t)(inside ? src[i] + off : 0);
            }
        }
    }
}

/* EDGE_WITH_CONV_STAGED=0 (gen_ops.py path_defines: a firmware for models without such a layer) compiles the staged
 * im2col out; conv_im2col then places those windows value by value */
#ifndef EDGE_WITH_CONV_STAGED
#define EDGE_WITH_CONV_STAGED 1
#endif
#define CONV_STAGED (EDGE_DSP && EDGE_WITH_CONV_STAGED)
/* EDGE_WITH_CONV_LONE=0 (gen_ops.py path_defines: a firmware for models without a big enough lone pixel) compiles the
 * lone-pixel GEMV out (~800 B on the M4); such a pixel then runs as a pair with itself */
#ifndef EDGE_WITH_CONV_LONE
#define EDGE_WITH_CONV_LONE 1
#endif
#define CONV_LONE (EDGE_DSP && EDGE_WITH_CONV_LONE)

#if CONV_STAGED
/* Both pixels' windows of a one-group layer whose channels are not whole chunks of four (cg % 4 != 0: one or few
 * input channels, e.g. a keyword spotter's first 10x4 conv on a 1-channel spectrogram), where conv_im2col's value
 * by value placement cost ~70 instructions a value on the M4. Two passes in the im2col buffer itself (4k bytes):
 *  1. stage: each pixel's window as int8 bytes, the input zero point in the padding (widened with the offset it
 *     becomes 0), runs of the input copied a word at a time, into the buffer's upper part at S = 2 * k4 bytes: the
 *     chunks of four values of both pixels side by side (8j: p0's four bytes, 8j + 4: p1's), then the k % 4 tail
 *     values (p0's t bytes, then p1's);
 *  2. widen: chunk j (read before written) SXTAB16 into the 16 bytes at 16j, conv_slot's order; chunk j's writes end
 *     at 16j + 16 <= S + 8(j + 1), where chunk j + 1 is read: no chunk is overwritten before it is read. Then the
 *     tail (read whole, then written at 4 * k4). */
static inline int32_t conv_stage_at(int32_t k4, int32_t t, int32_t kk, int32_t p) {
    return kk < k4 ? 8 * (kk >> 2) + 4 * p + (kk & 3) : 2 * k4 + p * t + (kk - k4);
}

/* n values of pixel p from value kk on: the bytes src[0..n), or (src NULL) the fill byte. */
static void conv_stage_run(int8_t *st, int32_t k4, int32_t t, int32_t kk, int32_t p, const int8_t *src, int32_t n,
                           int8_t fill) {
    const uint32_t fill4 = (uint32_t)(uint8_t)fill * 0x01010101u;
    for (; n > 0 && (kk & 3) && kk < k4; n--, kk++) st[conv_stage_at(k4, t, kk, p)] = src ? *src++ : fill;
    for (; n >= 4 && kk + 4 <= k4; n -= 4, kk += 4) { /* whole chunks: one word each */
        edge_put32(st + 2 * kk + 4 * p, src ? edge_get32(src) : fill4);
        if (src) src += 4;
    }
    for (; n > 0; n--, kk++) st[conv_stage_at(k4, t, kk, p)] = src ? *src++ : fill;
}

/* Pixel p's window (output pixel oy, ox) staged. A window whose rows lie inside the input horizontally, of whole
 * chunks each (kw * c % 4 == 0, dilation 1 along the width: the keyword spotter's 10x4 conv on one channel), copies
 * each row as words (or fills it, a row in the padding); any other window goes run by run (conv_stage_run). */
static void conv_stage_pixel(const conv_data_t *d, const int8_t *xb, int32_t oy, int32_t ox, int32_t p, int8_t *st) {
    const int32_t c = d->c, k = d->k, k4 = CONV_K4(k), t = k - k4, row = d->kw * c, h = d->geo.h;
    const int32_t iy0 = oy * d->sh - d->geo.pt, ix0 = ox * d->sw - d->geo.pl;
    const ptrdiff_t xrow = (ptrdiff_t)d->dh * d->geo.w * c;
    const int8_t zp = (int8_t)-d->input_offset;
    const int8_t *src = xb + ((ptrdiff_t)iy0 * d->geo.w + ix0) * c; /* row fy at + fy * xrow (inside rows only) */
    int32_t fy, fx, fx0, fx1, kk = 0, iy = iy0;
    edge_conv_taps(ix0, d->dw, d->geo.w, d->kw, &fx0, &fx1);
    if (fx0 == 0 && fx1 == d->kw && d->dw == 1 && (row & 3) == 0) {
        const uint32_t fill4 = (uint32_t)(uint8_t)zp * 0x01010101u;
        int8_t *o = st + 4 * p;
        for (fy = 0; fy < d->kh; fy++, iy += d->dh, src += xrow) {
            int32_t i;
            if (iy < 0 || iy >= h) {
                for (i = 0; i < row; i += 4, o += 8) edge_put32(o, fill4);
            } else {
                for (i = 0; i < row; i += 4, o += 8) edge_put32(o, edge_get32(src + i));
            }
        }
        return;
    }
    for (fy = 0; fy < d->kh; fy++, kk += row, iy += d->dh, src += xrow) {
        if (iy < 0 || iy >= h || fx0 >= fx1) {
            conv_stage_run(st, k4, t, kk, p, 0, row, zp);
            continue;
        }
        if (fx0 > 0) conv_stage_run(st, k4, t, kk, p, 0, fx0 * c, zp);
        if (d->dw == 1) {
            conv_stage_run(st, k4, t, kk + fx0 * c, p, src + (ptrdiff_t)fx0 * c, (fx1 - fx0) * c, 0);
        } else {
            for (fx = fx0; fx < fx1; fx++)
                conv_stage_run(st, k4, t, kk + fx * c, p, src + (ptrdiff_t)fx * d->dw * c, c, 0);
        }
        if (fx1 < d->kw) conv_stage_run(st, k4, t, kk + fx1 * c, p, 0, (d->kw - fx1) * c, zp);
    }
}

/* Both pixels (p0 at oy0, ox0; p1 at oy1, ox1) staged, then widened in place into conv_slot's order. */
static void conv_im2col_staged(const conv_data_t *d, const int8_t *xb, int32_t oy0, int32_t ox0, int32_t oy1,
                               int32_t ox1, int16_t *col) {
    const int32_t k = d->k, k4 = CONV_K4(k), t = k - k4;
    const uint32_t off2 = (uint32_t)(uint16_t)d->input_offset * 0x10001u;
    int8_t *const st = (int8_t *)col + 2 * k4;
    uint32_t *o = (uint32_t *)(void *)col;
    int32_t j, i;
    int16_t tail[6];
    conv_stage_pixel(d, xb, oy0, ox0, 0, st);
    conv_stage_pixel(d, xb, oy1, ox1, 1, st);
    for (j = 0; j < k4; j += 4, o += 4) {
        const uint32_t a = edge_get32(st + 2 * j), b = edge_get32(st + 2 * j + 4);
        o[0] = edge_sxtab16(off2, a);
        o[1] = edge_sxtab16(off2, b);
        o[2] = edge_sxtab16_ror8(off2, a);
        o[3] = edge_sxtab16_ror8(off2, b);
    }
    for (i = 0; i < t; i++) { /* (p0, p1) pairs of the tail values, at slots 2 * kk + p */
        tail[2 * i] = (int16_t)(st[2 * k4 + i] + d->input_offset);
        tail[2 * i + 1] = (int16_t)(st[2 * k4 + t + i] + d->input_offset);
    }
    if (t) memcpy(col + 2 * k4, tail, sizeof(int16_t) * 2u * (size_t)t);
}
#endif

/* A layer edge_rq cannot represent: edge_mbqm with the raw multiplier and shift. */
static int8_t conv_out8_generic(const conv_data_t *d, const edge_rq_t *q, uint32_t acc) {
    int32_t r = edge_mbqm((int32_t)acc, q->mul, q->rnd) + d->output_offset;
    return (int8_t)edge_clamp32(r, d->lo, d->hi);
}

/* The sums of `npairs` channel pairs x the two pixels of the pair, channels' weights starting at w0 (one
 * row of k per channel, rows contiguous; koff = k, or 0 to pair a lone last channel with itself), starting
 * from bias2[2i], bias2[2i + 1], into acc[4 * i + {0, 1, 2, 3}] = (row 2i x pixel 0, row 2i x pixel 1,
 * row 2i+1 x pixel 0, row 2i+1 x pixel 1).
 * The k4 = k & ~3 part; the caller adds the k % 4 tail. Per four values of a pair: 2 LDR + 4 SXTB16 of the
 * weights, 4 LDR of the interleaved inputs, 8 SMLAD (16 MACs). */
/* One chunk of four values of both rows x both pixels (the asm loop below runs it twice per pass). */
#define CONV_ASM_CHUNK                                                                                      \
    "ldr %[wa], [%[w0]], #4\n\t"                                                                            \
    "ldr %[wb], [%[w1]], #4\n\t"                                                                            \
    "ldr %[x], [%[c]], #16\n\t"                                                                             \
    "sxtb16 %[a], %[wa]\n\t"                                                                                \
    "sxtb16 %[b], %[wb]\n\t"                                                                                \
    "smlad %[s00], %[a], %[x], %[s00]\n\t"                                                                  \
    "smlad %[s10], %[b], %[x], %[s10]\n\t"                                                                  \
    "ldr %[x], [%[c], #-12]\n\t"                                                                            \
    "smlad %[s01], %[a], %[x], %[s01]\n\t"                                                                  \
    "smlad %[s11], %[b], %[x], %[s11]\n\t"                                                                  \
    "sxtb16 %[a], %[wa], ror #8\n\t"                                                                        \
    "sxtb16 %[b], %[wb], ror #8\n\t"                                                                        \
    "ldr %[x], [%[c], #-8]\n\t"                                                                             \
    "smlad %[s00], %[a], %[x], %[s00]\n\t"                                                                  \
    "smlad %[s10], %[b], %[x], %[s10]\n\t"                                                                  \
    "ldr %[x], [%[c], #-4]\n\t"                                                                             \
    "smlad %[s01], %[a], %[x], %[s01]\n\t"                                                                  \
    "smlad %[s11], %[b], %[x], %[s11]\n\t"
#define CONV_CHUNK 8 /* channel pairs per call: acc is 4 * CONV_CHUNK int32 on the stack */
#if EDGE_DSP && !EDGE_DSP_ASM
/* CONV_ASM_CHUNK's instructions in its order, chunk after chunk over k4 values (k4 % 4 == 0) of the interleaved
 * col: the C mirror of conv_pairs' and conv_pairs_rq's asm passes that the emulated-DSP host build runs. Rows w0,
 * w1 x the pair's pixels p0, p1 added to *s00 (w0 x p0), *s01 (w0 x p1), *s10 (w1 x p0), *s11 (w1 x p1). */
static inline void conv_chunks_2x2(const int8_t *w0, const int8_t *w1, const int16_t *c, int32_t k4, uint32_t *p00,
                                   uint32_t *p01, uint32_t *p10, uint32_t *p11) {
    uint32_t s00 = *p00, s01 = *p01, s10 = *p10, s11 = *p11;
    int32_t i;
    for (i = 0; i < k4; i += 4, c += 8) {
            uint32_t wa, wb, a, b, x;
            memcpy(&wa, w0 + i, 4);
            memcpy(&wb, w1 + i, 4);
            a = edge_sxtb16(wa);
            b = edge_sxtb16(wb);
            memcpy(&x, c, 4);
            s00 = edge_smlad(a, x, s00);
            s10 = edge_smlad(b, x, s10);
            memcpy(&x, c + 2, 4);
            s01 = edge_smlad(a, x, s01);
            s11 = edge_smlad(b, x, s11);
            a = edge_sxtb16_ror8(wa);
            b = edge_sxtb16_ror8(wb);
            memcpy(&x, c + 4, 4);
            s00 = edge_smlad(a, x, s00);
            s10 = edge_smlad(b, x, s10);
            memcpy(&x, c + 6, 4);
            s01 = edge_smlad(a, x, s01);
            s11 = edge_smlad(b, x, s11);
        }
    *p00 = s00;
    *p01 = s01;
    *p10 = s10;
    *p11 = s11;
}
#endif
#if defined(__GNUC__)
__attribute__((noinline)) /* its own registers (inlined, the loop spills on x86-64 too) */
#endif
static void conv_pairs(const int8_t *w0, int32_t koff, int32_t k, const int16_t *col, int32_t k4, int32_t npairs,
                       const int32_t *bias2, uint32_t *acc) {
#if EDGE_DSP_ASM
    /* one asm block for all pairs (GCC -Os spills the C version's 13 live values); the loop counters and
     * constants the inner loop has no register for are memory operands */
    const int32_t n4 = k4 / 4, wskip = 2 * k - k4; /* from the end of row 2i's k4 part to row 2i+2 */
    int32_t np = npairs, km = koff, skip = wskip;
    const int16_t *cb = col;
    const int32_t *bp = bias2;
    uint32_t *out = acc;
    const int8_t *w1;
    const int16_t *c;
    uint32_t s00, s01, s10, s11, wa, wb, a, b, x;
    int32_t cnt;
    /* the chunk loop runs two chunks per pass (n4 odd: it is entered at the second one) */
    int32_t half = (n4 + 1) / 2, odd = n4 & 1;
    __asm__ volatile("ldr %[wa], %[km]\n\t"
                     "add %[w1], %[w0], %[wa]\n\t"
                     "0:\n\t"
                     "ldr %[c], %[cb]\n\t"
                     "ldr %[cnt], %[half]\n\t"
                     "ldr %[wa], %[bp]\n\t"
                     "ldrd %[s00], %[s10], [%[wa]], #8\n\t"
                     "str %[wa], %[bp]\n\t"
                     "mov %[s01], %[s00]\n\t"
                     "mov %[s11], %[s10]\n\t"
                     "ldr %[wa], %[odd]\n\t"
                     "cbnz %[wa], 2f\n\t"
                     "1:\n\t"
                     CONV_ASM_CHUNK
                     "2:\n\t"
                     CONV_ASM_CHUNK
                     "subs %[cnt], %[cnt], #1\n\t"
                     "bne 1b\n\t"
                     "ldr %[wa], %[skip]\n\t"
                     "add %[w0], %[w0], %[wa]\n\t"
                     "add %[w1], %[w1], %[wa]\n\t"
                     "ldr %[wa], %[out]\n\t"
                     "strd %[s00], %[s01], [%[wa]], #8\n\t"
                     "strd %[s10], %[s11], [%[wa]], #8\n\t"
                     "str %[wa], %[out]\n\t"
                     "ldr %[wa], %[np]\n\t"
                     "subs %[wa], %[wa], #1\n\t"
                     "str %[wa], %[np]\n\t"
                     "bne 0b"
                     : [w0] "+&r"(w0), [w1] "=&r"(w1), [c] "=&r"(c), [cnt] "=&r"(cnt), [s00] "=&r"(s00),
                       [s01] "=&r"(s01), [s10] "=&r"(s10), [s11] "=&r"(s11), [wa] "=&l"(wa), [wb] "=&r"(wb),
                       [a] "=&r"(a), [b] "=&r"(b), [x] "=&r"(x), [out] "+m"(out), [np] "+m"(np), [bp] "+m"(bp)
                     : [km] "m"(km), [cb] "m"(cb), [half] "m"(half), [odd] "m"(odd), [skip] "m"(skip)
                     : "cc", "memory");
#else
    int32_t p;
    for (p = 0; p < npairs; p++, w0 += 2 * k, acc += 4) {
        const int8_t *w1 = w0 + koff;
        uint32_t s00 = (uint32_t)bias2[2 * p], s01 = s00, s10 = (uint32_t)bias2[2 * p + 1], s11 = s10;
#if EDGE_DSP
        conv_chunks_2x2(w0, w1, col, k4, &s00, &s01, &s10, &s11);
#else
        const int16_t *c0 = col, *c1 = col + k; /* the two rows one after the other */
        int32_t i0, i;
        for (i0 = 0; i0 < k4; i0 += 256) { /* int32 partial sums of <= 256 products of |v| < 2^22: no overflow */
            const int32_t end = k4 - i0 < 256 ? k4 : i0 + 256;
            int32_t t00 = 0, t01 = 0, t10 = 0, t11 = 0;
            for (i = i0; i + 16 <= end; i += 16) { /* fixed 16: GCC -O2 (very cheap cost model) vectorizes it */
                const int8_t *wa = w0 + i, *wb = w1 + i;
                const int16_t *ca = c0 + i, *cb = c1 + i;
                int32_t j;
                for (j = 0; j < 16; j++) {
                    t00 += wa[j] * ca[j];
                    t01 += wa[j] * cb[j];
                    t10 += wb[j] * ca[j];
                    t11 += wb[j] * cb[j];
                }
            }
            for (; i < end; i++) {
                t00 += w0[i] * c0[i];
                t01 += w0[i] * c1[i];
                t10 += w1[i] * c0[i];
                t11 += w1[i] * c1[i];
            }
            s00 += (uint32_t)t00;
            s01 += (uint32_t)t01;
            s10 += (uint32_t)t10;
            s11 += (uint32_t)t11;
        }
#endif
        acc[0] = s00;
        acc[1] = s01;
        acc[2] = s10;
        acc[3] = s11;
    }
#endif
}

/* y0[2i], y1[2i], y0[2i + step], y1[2i + step] from acc[4i..4i+3] with the channels' rq[2i], rq[2i + step]. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void conv_store(const conv_data_t *d, const uint32_t *acc, int32_t npairs, const edge_rq_t *rq, int32_t step,
                       int8_t *y0, int8_t *y1) {
    const int32_t zp = d->output_offset, lo = d->lo, hi = d->hi;
    const uint32_t *const end = acc + 4 * npairs;
    if (d->rq_generic) {
        for (; acc != end; acc += 4, rq += 2, y0 += 2, y1 += 2) {
            y0[0] = conv_out8_generic(d, &rq[0], acc[0]);
            y1[0] = conv_out8_generic(d, &rq[0], acc[1]);
            y0[step] = conv_out8_generic(d, &rq[step], acc[2]);
            y1[step] = conv_out8_generic(d, &rq[step], acc[3]);
        }
        return;
    }
    for (; acc != end; acc += 4, rq += 2, y0 += 2, y1 += 2) {
        const edge_rq_t q0 = rq[0], q1 = rq[step];
        const int32_t r0 = edge_clamp32(edge_rq_apply(&q0, (int32_t)acc[0], zp), lo, hi);
        const int32_t r1 = edge_clamp32(edge_rq_apply(&q0, (int32_t)acc[1], zp), lo, hi);
        const int32_t r2 = edge_clamp32(edge_rq_apply(&q1, (int32_t)acc[2], zp), lo, hi);
        const int32_t r3 = edge_clamp32(edge_rq_apply(&q1, (int32_t)acc[3], zp), lo, hi);
        y0[0] = (int8_t)r0;
        y1[0] = (int8_t)r1;
        y0[step] = (int8_t)r2;
        y1[step] = (int8_t)r3;
    }
}

#if EDGE_DSP
/* conv_pairs and conv_store in one pass, for the common DSP layer (k % 4 == 0, edge_rq channels, a bias, no filter
 * offset): `npairs` channel pairs x the two pixels of the pair, each pair's four sums kept in registers from the
 * bias to the stored bytes. conv_gemm's chunks of CONV_CHUNK pairs paid, per output, a store and a load of its
 * int32 sum, conv_store's loop and conv_pairs' bookkeeping in memory: ~24 instructions an output beside its MACs
 * on the M4 (1x1 layers with k = 8..64 ran at 4.4-1.6 instructions per MAC); here ~19. The inner loop is
 * conv_pairs' (CONV_ASM_CHUNK: 18 instructions per 16 MACs), rows w0 (channel 2i) and w0 + k (2i + 1).
 * The channels' requantization: rq (edge_rq_t, 8 bytes a channel: one LDRD each), or with rq NULL the least-RAM
 * plan's compact form d->rqc (edge_rq_pack: the multipliers, then a byte e per channel, rnd = 2^30 >> e) read
 * pair by pair (two multipliers by one LDRD, both bytes by one LDRH: 7 instructions a pair more than rq; unpacking
 * CONV_CHUNK pairs into edge_rq_t on the stack cost ~6 an output).
 * On the M4 the clamp is SSAT #8 on each output, then the four bytes of the pair [y0[2i], y0[2i + 1], y1[2i],
 * y1[2i + 1]] in one word against lo and hi in every byte (SSUB8 + SEL: a bytewise max, then min), stored as two
 * halfwords: clamp(ssat8(v), lo, hi) == clamp(v, lo, hi) for -128 <= lo <= hi <= 127. `first`: the pairs' first
 * channel (even). */
static void conv_pairs_rq(const conv_data_t *d, const int8_t *w0, const int16_t *col, const int32_t *bias,
                          const edge_rq_t *rq, int32_t first, int32_t npairs, int8_t *y0, int8_t *y1) {
    const int32_t k = d->k, zp = d->output_offset, lo = d->lo, hi = d->hi;
#if EDGE_DSP_ASM
    /* the loop state the 13 registers of the inner loop leave no room for: memory operands (GCC's limit is 30
     * operands: the loop ends at yend rather than counting) */
    /* two chunks a pass, n4 = k / 4 odd: entered at the second; hb = passes * 2 + (n4 odd) */
    const int32_t hb = ((k / 4 + 1) / 2) * 2 + ((k / 4) & 1);
    const uint32_t lo4 = (uint32_t)(uint8_t)lo * 0x01010101u, hi4 = (uint32_t)(uint8_t)hi * 0x01010101u;
    const int32_t dy = (int32_t)(y1 - y0);
    const int16_t *cb = col;
    const int32_t *bp = bias;
    const void *rqp = rq ? (const void *)(rq + first) : (const void *)(d->rqc + first); /* compact: multipliers */
    const int8_t *rqe = rq ? (const int8_t *)0 : (const int8_t *)(d->rqc + d->o) + first; /* compact: exponents */
    int8_t *yp = y0;
    const int8_t *const yend = y0 + 2 * npairs; /* the loop's end: the pair after the last */
    const int8_t *w1;
    const int16_t *c;
    uint32_t s00, s01, s10, s11, wa, wb, a, b, x;
    int32_t cnt;
/* one pass over the pairs; LOAD puts channel 2i's (mul, rnd) in a, b and 2i + 1's in x, c */
#define CONV_PAIRS_RQ_ASM(LOAD)                                                                             \
    __asm__ volatile("0:\n\t"                                                                               \
                     "ldr %[wa], %[bp]\n\t"                                                                 \
                     "ldrd %[s00], %[s10], [%[wa]], #8\n\t"                                                 \
                     "str %[wa], %[bp]\n\t"                                                                 \
                     "mov %[s01], %[s00]\n\t"                                                               \
                     "mov %[s11], %[s10]\n\t"                                                               \
                     "ldr %[wa], %[k]\n\t"                                                                  \
                     "add %[w1], %[w0], %[wa]\n\t"                                                          \
                     "ldr %[c], %[cb]\n\t"                                                                  \
                     "ldr %[cnt], %[hb]\n\t"                                                                \
                     "lsrs %[cnt], %[cnt], #1\n\t" /* cnt = half, the carry = odd */                        \
                     "bcs 2f\n\t"                                                                           \
                     "1:\n\t" CONV_ASM_CHUNK "2:\n\t" CONV_ASM_CHUNK                                        \
                     "subs %[cnt], %[cnt], #1\n\t"                                                          \
                     "bne 1b\n\t"                                                                           \
                     "mov %[w0], %[w1]\n\t" /* the next pair's first row */                                 \
                     LOAD                                                                                   \
                     "smmlar %[s00], %[s00], %[a], %[s00]\n\t"                                              \
                     "smmlar %[s01], %[s01], %[a], %[s01]\n\t"                                              \
                     "smmlar %[s10], %[s10], %[x], %[s10]\n\t"                                              \
                     "smmlar %[s11], %[s11], %[x], %[s11]\n\t"                                              \
                     "add %[s00], %[s00], %[s00], asr #31\n\t"                                              \
                     "add %[s01], %[s01], %[s01], asr #31\n\t"                                              \
                     "add %[s10], %[s10], %[s10], asr #31\n\t"                                              \
                     "add %[s11], %[s11], %[s11], asr #31\n\t"                                              \
                     "ldr %[wa], %[zp]\n\t"                                                                 \
                     "smmlar %[s00], %[s00], %[b], %[wa]\n\t"                                               \
                     "smmlar %[s01], %[s01], %[b], %[wa]\n\t"                                               \
                     "smmlar %[s10], %[s10], %[c], %[wa]\n\t"                                               \
                     "smmlar %[s11], %[s11], %[c], %[wa]\n\t"                                               \
                     "ssat %[s00], #8, %[s00]\n\t"                                                          \
                     "ssat %[s01], #8, %[s01]\n\t"                                                          \
                     "ssat %[s10], #8, %[s10]\n\t"                                                          \
                     "ssat %[s11], #8, %[s11]\n\t"                                                          \
                     "bfi %[s00], %[s10], #8, #8\n\t" /* y0's two bytes */                                  \
                     "bfi %[s01], %[s11], #8, #8\n\t" /* y1's two bytes */                                  \
                     "pkhbt %[s00], %[s00], %[s01], lsl #16\n\t"                                            \
                     "ldr %[a], %[lo4]\n\t"                                                                 \
                     "ssub8 %[b], %[s00], %[a]\n\t"                                                         \
                     "sel %[s00], %[s00], %[a]\n\t"                                                         \
                     "ldr %[a], %[hi4]\n\t"                                                                 \
                     "ssub8 %[b], %[a], %[s00]\n\t"                                                         \
                     "sel %[s00], %[s00], %[a]\n\t"                                                         \
                     "ldr %[wa], %[yp]\n\t"                                                                 \
                     "ldr %[a], %[dy]\n\t"                                                                  \
                     "lsrs %[b], %[s00], #16\n\t"                                                           \
                     "strh %[b], [%[wa], %[a]]\n\t"                                                         \
                     "strh %[s00], [%[wa]], #2\n\t"                                                         \
                     "str %[wa], %[yp]\n\t"                                                                 \
                     "ldr %[a], %[yend]\n\t"                                                                \
                     "cmp %[wa], %[a]\n\t"                                                                  \
                     "bne 0b"                                                                               \
                     : [w0] "+&r"(w0), [w1] "=&r"(w1), [c] "=&r"(c), [cnt] "=&r"(cnt), [s00] "=&r"(s00),    \
                       [s01] "=&r"(s01), [s10] "=&r"(s10), [s11] "=&r"(s11), [wa] "=&l"(wa), [wb] "=&r"(wb), \
                       [a] "=&r"(a), [b] "=&r"(b), [x] "=&r"(x), [bp] "+m"(bp), [rqp] "+m"(rqp),            \
                       [rqe] "+m"(rqe), [yp] "+m"(yp)                                                       \
                     : [k] "m"(k), [cb] "m"(cb), [hb] "m"(hb), [zp] "m"(zp),                                 \
                       [lo4] "m"(lo4), [hi4] "m"(hi4), [dy] "m"(dy), [yend] "m"(yend)                       \
                     : "cc", "memory")
    /* one copy of the pass (its asm is ~350 B of flash): the form chosen per pair by rqe (NULL: rq's form) */
    CONV_PAIRS_RQ_ASM("ldr %[wa], %[rqe]\n\t"
                      "cbz %[wa], 3f\n\t"
                      /* compact: e0 | e1 << 8 by one LDRH, mul0, mul1 by one LDRD; rnd = 2^30 >> e (e = 31: 0) */
                      "ldrh %[c], [%[wa]], #2\n\t"
                      "str %[wa], %[rqe]\n\t"
                      "ldr %[wa], %[rqp]\n\t"
                      "ldrd %[a], %[x], [%[wa]], #8\n\t"
                      "str %[wa], %[rqp]\n\t"
                      "mov %[wb], #0x40000000\n\t"
                      "uxtb %[b], %[c]\n\t"
                      "lsr %[b], %[wb], %[b]\n\t"
                      "lsr %[c], %[c], #8\n\t"
                      "lsr %[c], %[wb], %[c]\n\t"
                      "b 4f\n\t"
                      "3:\n\t" /* rq: (mul, rnd) of both channels by two LDRD */
                      "ldr %[wa], %[rqp]\n\t"
                      "ldrd %[a], %[b], [%[wa]], #16\n\t"
                      "ldrd %[x], %[c], [%[wa], #-8]\n\t"
                      "str %[wa], %[rqp]\n\t"
                      "4:\n\t");
#undef CONV_PAIRS_RQ_ASM
#else
    for (; npairs > 0; npairs--, w0 += 2 * k, bias += 2, first += 2, y0 += 2, y1 += 2) {
        uint32_t s00 = (uint32_t)bias[0], s10 = (uint32_t)bias[1], s01 = s00, s11 = s10;
        const edge_rq_t q0 = rq ? rq[first] : edge_rq_at(d->rqc, d->o, first);
        const edge_rq_t q1 = rq ? rq[first + 1] : edge_rq_at(d->rqc, d->o, first + 1);
        conv_chunks_2x2(w0, w0 + k, col, k, &s00, &s01, &s10, &s11);
        y0[0] = (int8_t)edge_clamp32(edge_rq_apply(&q0, (int32_t)s00, zp), lo, hi);
        y1[0] = (int8_t)edge_clamp32(edge_rq_apply(&q0, (int32_t)s01, zp), lo, hi);
        y0[1] = (int8_t)edge_clamp32(edge_rq_apply(&q1, (int32_t)s10, zp), lo, hi);
        y1[1] = (int8_t)edge_clamp32(edge_rq_apply(&q1, (int32_t)s11, zp), lo, hi);
    }
#endif
}
#endif

/* Output channels [first, end) of both pixels of the pair from their interleaved im2col rows, CONV_CHUNK
 * channel pairs at a time (an odd last channel runs as a pair with itself): sums from the bias by
 * conv_pairs, the k % 4 tail, then requantization, clamp and store. y1 == y0 for a lone last pixel (its
 * duplicate writes the same bytes). */
static void conv_gemm(const conv_data_t *d, const int8_t *wt, const int16_t *col, const int32_t *bias, int32_t first,
                      int32_t end, int8_t *y0, int8_t *y1, uint32_t fo0, uint32_t fo1) {
    static const int32_t zeros[2 * CONV_CHUNK];
    const int32_t k = d->k, k4 = CONV_K4(k);
    uint32_t acc[4 * CONV_CHUNK];
    int32_t oc, i, t;
#if EDGE_DSP
    if (!d->rq_generic && bias && k4 == k && k4 > 0 && !(fo0 | fo1) && end - first >= 2 && d->lo >= -128 &&
        d->hi <= 127) {
        const int32_t npairs = (end - first) / 2; /* every pair in one pass; a lone last channel below */
        conv_pairs_rq(d, wt + (int64_t)first * k, col, bias + first, d->rq, first, npairs, y0 + first, y1 + first);
        first += 2 * npairs;
    }
#endif
    for (oc = first; oc < end;) {
        const int32_t npairs = (end - oc) / 2 > CONV_CHUNK ? CONV_CHUNK : (end - oc) / 2 ? (end - oc) / 2 : 1;
        const int32_t koff = oc + 1 < end ? k : 0;
        const int8_t *w0 = wt + (int64_t)oc * k;
        int32_t lone[2];
        const int32_t *b2 = bias ? bias + oc : zeros;
        if (!koff && bias) { /* a lone last channel: its bias twice */
            lone[0] = lone[1] = bias[oc];
            b2 = lone;
        }
        if (k4 > 0) {
            conv_pairs(w0, koff, k, col, k4, npairs, b2, acc);
        } else {
            for (i = 0; i < npairs; i++) {
                acc[4 * i] = acc[4 * i + 1] = (uint32_t)b2[2 * i];
                acc[4 * i + 2] = acc[4 * i + 3] = (uint32_t)b2[2 * i + 1];
            }
        }
        if (k4 != k) {
            for (i = 0; i < npairs; i++) { /* the k % 4 tail */
                uint32_t *s = acc + 4 * i;
                const int16_t *c = col + 2 * k4;
                const int8_t *wa = w0 + (int64_t)2 * i * k, *wb = wa + koff;
                for (t = k4; t < k; t++, c += 2) {
                    s[0] += (uint32_t)(wa[t] * c[0]);
                    s[1] += (uint32_t)(wa[t] * c[1]);
                    s[2] += (uint32_t)(wb[t] * c[0]);
                    s[3] += (uint32_t)(wb[t] * c[1]);
                }
            }
        }
        if (fo0 | fo1) { /* the filter offset's term of each pixel (conv_window_sums) */
            for (i = 0; i < npairs; i++) {
                acc[4 * i] += fo0;
                acc[4 * i + 1] += fo1;
                acc[4 * i + 2] += fo0;
                acc[4 * i + 3] += fo1;
            }
        }
        if (d->rq) {
            conv_store(d, acc, npairs, d->rq + oc, koff ? 1 : 0, y0 + oc, y1 + oc);
        } else { /* the chunk's channels from the compact form, as conv_store reads them */
            edge_rq_t rq[2 * CONV_CHUNK];
            const int32_t n = koff ? 2 * npairs : 1;
            for (i = 0; i < n; i++) {
                if (d->rq_generic) {
                    rq[i].mul = edge_conv_mult(d->rqc, oc + i);
                    rq[i].rnd = edge_conv_shift(d->rqc, d->o, oc + i);
                } else {
                    rq[i] = edge_rq_at(d->rqc, d->o, oc + i);
                }
            }
            conv_store(d, acc, npairs, rq, koff ? 1 : 0, y0 + oc, y1 + oc);
        }
        oc += koff ? 2 * npairs : 1;
    }
}

/* A 1x1 filter with whole chunks of four channels per group: the window is the pixel itself (never in the
 * padding), and group g's chunks follow group g-1's, so the pair's buffer is both pixels' c values widened
 * in order: chunk j of four values at slots 8j..8j+7. */
static void conv_im2col_1x1(const conv_data_t *d, const int8_t *s0, const int8_t *s1, int16_t *o) {
    const int32_t c = d->c, off = d->input_offset;
    int32_t i;
#if EDGE_DSP
    const uint32_t off2 = (uint32_t)(uint16_t)off * 0x10001u;
    for (i = 0; i < c; i += 4, o += 8) {
        uint32_t v0, v1, t;
        memcpy(&v0, s0 + i, 4);
        memcpy(&v1, s1 + i, 4);
        t = edge_sxtab16(off2, v0);
        memcpy(o, &t, 4);
        t = edge_sxtab16(off2, v1);
        memcpy(o + 2, &t, 4);
        t = edge_sxtab16_ror8(off2, v0);
        memcpy(o + 4, &t, 4);
        t = edge_sxtab16_ror8(off2, v1);
        memcpy(o + 6, &t, 4);
    }
#else
    const int32_t cg = d->cg; /* per group: p0's cg values, then p1's */
    for (i = 0; i < c; i += cg, s0 += cg, s1 += cg, o += 2 * cg) {
        int32_t j;
        for (j = 0; j < cg; j++) {
            o[j] = (int16_t)(s0[j] + off);
            o[cg + j] = (int16_t)(s1[j] + off);
        }
    }
#endif
}

/* filter_offset * sum(x + input_offset) over one group's window of each pixel of the pair (its k values in the
 * im2col buffer col, in conv_slot order): the filter offset's term, the same for every channel of the group. */
static void conv_window_sums(const conv_data_t *d, const int16_t *col, uint32_t *fo0, uint32_t *fo1) {
    int32_t kk, s0 = 0, s1 = 0;
    for (kk = 0; kk < d->k; kk++) {
        s0 += col[conv_slot(d->k, kk, 0)];
        s1 += col[conv_slot(d->k, kk, 1)];
    }
    *fo0 = (uint32_t)s0 * (uint32_t)d->filter_offset;
    *fo1 = (uint32_t)s1 * (uint32_t)d->filter_offset;
}

#if CONV_LONE
/* A lone output pixel (an odd pixel count's last: a streaming net's one position per invoke, [1, T, 1, C] ->
 * [1, 1, 1, O]) whose window is one contiguous run of the input (inside it, no dilation along a row, and its rows
 * back to back: a 1x1 filter, a kh x 1 filter over a one-column input, a window of whole rows): the window's k
 * bytes, or NULL. The pair path ran such a pixel as a pair with itself (twice the MACs, and its im2col). */
#if defined(__GNUC__)
__attribute__((noinline)) /* out of conv_int8: inlined, it changed how GCC -Os built that loop (kws_dscnn's staged
                             first layer +0.3%) */
#endif
static const int8_t *conv_lone_window(const conv_data_t *d, const int8_t *xb, int32_t p) {
    const int32_t oy = p / d->geo.ow, ox = p % d->geo.ow, iy0 = oy * d->sh - d->geo.pt, ix0 = ox * d->sw - d->geo.pl;
    const int64_t row = (int64_t)d->kw * d->c; /* one window row's bytes when the row is contiguous */
    if (d->groups != 1 || d->filter_offset || d->rq_generic || !(d->rq || d->rqc) || d->lo < -128 || d->hi > 127)
        return 0;
    if (iy0 < 0 || ix0 < 0 || iy0 + (int64_t)(d->kh - 1) * d->dh >= d->geo.h ||
        ix0 + (int64_t)(d->kw - 1) * d->dw >= d->geo.w)
        return 0;
    if (d->kw > 1 && d->dw != 1) return 0;
    if (d->kh > 1 && !(d->dh == 1 && row == (int64_t)d->geo.w * d->c)) return 0;
    return xb + ((int64_t)iy0 * d->geo.w + ix0) * d->c;
}

/* y[oc..oc+3] += four rows' dot products with the window: per four values one LDR of the window, two SXTAB16 (the
 * input offset added in both halves), per row one LDR, two SXTB16, two SMLAD: 26 instructions per 16 MACs (the pair
 * path: 18 per 16 MACs of which a lone pixel keeps 8). Rows oc, oc + 1 at w0, w0 + kr; oc + 2, oc + 3 at w1, w1 + kr;
 * n4 >= 1 groups of four values. */
#if EDGE_DSP_ASM
#define CONV_LONE4(xw, w0p, w1p, kr, n4, OFF2, a0, a1, a2, a3)                                              \
    do {                                                                                                    \
        const int8_t *x_ = (xw), *w0_ = (w0p), *w1_ = (w1p);                                                \
        const int8_t *const xe_ = x_ + 4 * (n4);                                                            \
        uint32_t xa_, xb_, wv_, t_;                                                                         \
        __asm__ volatile("1:\n\t"                                                                           \
                         "ldr %[wv], [%[x]], #4\n\t"                                                        \
                         "sxtab16 %[xa], %[o2], %[wv]\n\t"                                                  \
                         "sxtab16 %[xb], %[o2], %[wv], ror #8\n\t"                                          \
                         "ldr %[wv], [%[w0], %[kr]]\n\t"                                                    \
                         "sxtb16 %[t], %[wv]\n\t"                                                           \
                         "smlad %[a1], %[xa], %[t], %[a1]\n\t"                                              \
                         "sxtb16 %[t], %[wv], ror #8\n\t"                                                   \
                         "smlad %[a1], %[xb], %[t], %[a1]\n\t"                                              \
                         "ldr %[wv], [%[w0]], #4\n\t"                                                       \
                         "sxtb16 %[t], %[wv]\n\t"                                                           \
                         "smlad %[a0], %[xa], %[t], %[a0]\n\t"                                              \
                         "sxtb16 %[t], %[wv], ror #8\n\t"                                                   \
                         "smlad %[a0], %[xb], %[t], %[a0]\n\t"                                              \
                         "ldr %[wv], [%[w1], %[kr]]\n\t"                                                    \
                         "sxtb16 %[t], %[wv]\n\t"                                                           \
                         "smlad %[a3], %[xa], %[t], %[a3]\n\t"                                              \
                         "sxtb16 %[t], %[wv], ror #8\n\t"                                                   \
                         "smlad %[a3], %[xb], %[t], %[a3]\n\t"                                              \
                         "ldr %[wv], [%[w1]], #4\n\t"                                                       \
                         "sxtb16 %[t], %[wv]\n\t"                                                           \
                         "smlad %[a2], %[xa], %[t], %[a2]\n\t"                                              \
                         "sxtb16 %[t], %[wv], ror #8\n\t"                                                   \
                         "smlad %[a2], %[xb], %[t], %[a2]\n\t"                                              \
                         "ldr %[t], %[xe]\n\t"                                                              \
                         "cmp %[x], %[t]\n\t"                                                               \
                         "bne 1b"                                                                           \
                         : [x] "+&r"(x_), [w0] "+&r"(w0_), [w1] "+&r"(w1_), [a0] "+&r"(a0), [a1] "+&r"(a1), \
                           [a2] "+&r"(a2), [a3] "+&r"(a3), [xa] "=&r"(xa_), [xb] "=&r"(xb_), [wv] "=&r"(wv_), \
                           [t] "=&r"(t_)                                                                    \
                         : [kr] "r"(kr), [o2] "r"(OFF2), [xe] "m"(xe_)                                      \
                         : "cc", "memory");                                                                 \
    } while (0)
#else
#define CONV_LONE4(xw, w0p, w1p, kr, n4, OFF2, a0, a1, a2, a3)                                              \
    do {                                                                                                    \
        const int8_t *x_ = (xw), *w0_ = (w0p), *w1_ = (w1p);                                                \
        int32_t i_;                                                                                         \
        for (i_ = 0; i_ < (n4); i_++, x_ += 4, w0_ += 4, w1_ += 4) {                                        \
            const uint32_t xv_ = edge_get32(x_);                                                            \
            const uint32_t xa_ = edge_sxtab16((OFF2), xv_), xb_ = edge_sxtab16_ror8((OFF2), xv_);           \
            uint32_t wv_ = edge_get32(w0_);                                                                 \
            a0 = edge_smlad(xb_, edge_sxtb16_ror8(wv_), edge_smlad(xa_, edge_sxtb16(wv_), a0));             \
            wv_ = edge_get32(w0_ + (kr));                                                                   \
            a1 = edge_smlad(xb_, edge_sxtb16_ror8(wv_), edge_smlad(xa_, edge_sxtb16(wv_), a1));             \
            wv_ = edge_get32(w1_);                                                                          \
            a2 = edge_smlad(xb_, edge_sxtb16_ror8(wv_), edge_smlad(xa_, edge_sxtb16(wv_), a2));             \
            wv_ = edge_get32(w1_ + (kr));                                                                   \
            a3 = edge_smlad(xb_, edge_sxtb16_ror8(wv_), edge_smlad(xa_, edge_sxtb16(wv_), a3));             \
        }                                                                                                   \
    } while (0)
#endif

/* y[ch], y[ch + s], y[ch + 2s], y[ch + 3s] from the four sums: the channel's edge_rq (rq, or under the least-RAM
 * plan the compact rqc), the output zero point, the clamp. Out of line: CONV_LONE4 needs every register. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void conv_lone_store(const conv_data_t *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, int32_t ch,
                            int32_t s, int8_t *y) {
    const int32_t zp = d->output_offset, lo = d->lo, hi = d->hi;
    const uint32_t a[4] = {a0, a1, a2, a3};
    int32_t j;
    for (j = 0; j < 4; j++) {
        const edge_rq_t q = d->rq ? d->rq[ch + j * s] : edge_rq_at(d->rqc, d->o, ch + j * s);
        y[ch + j * s] = (int8_t)edge_clamp32(edge_rq_apply(&q, (int32_t)a[j], zp), lo, hi);
    }
}

/* y for that pixel, four channels per pass (CONV_LONE4 over the k / 4 groups, the k % 4 last values in C), the
 * bias, the channel's edge_rq (rq, or under the least-RAM plan the compact rqc), the clamp. O % 4 channels: the
 * last four channels again (the same values rewritten; O < 4: each channel alone, its row four times). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void conv_lone_pixel(const conv_data_t *d, const int8_t *win, const int8_t *wt, const int32_t *bias,
                            int8_t *y) {
    const int32_t k = d->k, k4 = k & ~3, o = d->o, off = d->input_offset;
    const uint32_t off2 = (uint32_t)(uint16_t)off * 0x10001u;
    int32_t oc, t;
    for (oc = 0; oc < o; oc += o < 4 ? 1 : 4) {
        const int32_t base = o < 4 || oc + 4 <= o ? oc : o - 4;
        const int32_t kr = o < 4 ? 0 : k, c1 = base + (kr ? 1 : 0), c2 = base + (kr ? 2 : 0), c3 = base + (kr ? 3 : 0);
        const int8_t *w0 = wt + (int64_t)base * k, *w1 = wt + (int64_t)c2 * k;
        uint32_t a0 = bias ? (uint32_t)bias[base] : 0, a1 = bias ? (uint32_t)bias[c1] : 0;
        uint32_t a2 = bias ? (uint32_t)bias[c2] : 0, a3 = bias ? (uint32_t)bias[c3] : 0;
        if (k4) CONV_LONE4(win, w0, w1, kr, k4 / 4, off2, a0, a1, a2, a3);
        for (t = k4; t < k; t++) {
            const int32_t v = win[t] + off;
            a0 += (uint32_t)(v * w0[t]);
            a1 += (uint32_t)(v * w0[kr + t]);
            a2 += (uint32_t)(v * w1[t]);
            a3 += (uint32_t)(v * w1[kr + t]);
        }
        conv_lone_store(d, a0, a1, a2, a3, base, kr ? 1 : 0, y);
    }
}
#endif

static void conv_int8(const conv_data_t *d, const int8_t *x, const int8_t *wt, const int32_t *bias, int8_t *y,
                      int16_t *cols) {
    const int32_t npix = d->geo.oh * d->geo.ow;
    const int pointwise = d->kh == 1 && d->kw == 1 && (d->cg & 3) == 0 && d->geo.pt == 0 && d->geo.pl == 0;
    int32_t b, p, g;
    for (b = 0; b < d->n; b++) {
        const int8_t *xb = x + (int64_t)b * d->geo.h * d->geo.w * d->c;
        int8_t *yb = y + (int64_t)b * npix * d->o;
        int32_t pend = npix; /* the pairs' end: a lone last pixel with a contiguous window is left to the GEMV */
#if CONV_LONE
        const int8_t *lone = (npix & 1) ? conv_lone_window(d, xb, npix - 1) : 0;
        if (lone) pend = npix - 1;
#endif
        for (p = 0; p < pend; p += 2) {
            const int two = p + 1 < npix;
            int8_t *y0 = yb + (int64_t)p * d->o;
            /* a lone last pixel runs as a pair with itself (its second copy is not stored) */
            if (pointwise) {
                const int32_t q = p + two;
                conv_im2col_1x1(d,
                                xb + ((int64_t)(p / d->geo.ow) * d->sh * d->geo.w + (p % d->geo.ow) * d->sw) * d->c,
                                xb + ((int64_t)(q / d->geo.ow) * d->sh * d->geo.w + (q % d->geo.ow) * d->sw) * d->c,
                                cols);
            } else if (CONV_STAGED && d->groups == 1 && (d->cg & 3)) {
#if CONV_STAGED
                conv_im2col_staged(d, xb, p / d->geo.ow, p % d->geo.ow, (p + two) / d->geo.ow, (p + two) % d->geo.ow,
                                   cols);
#endif
            } else {
                conv_im2col(d, xb, p / d->geo.ow, p % d->geo.ow, 0, cols);
                conv_im2col(d, xb, (p + two) / d->geo.ow, (p + two) % d->geo.ow, 1, cols);
            }
            for (g = 0; g < d->groups; g++) {
                const int16_t *col = cols + (int64_t)g * 2 * d->k;
                uint32_t fo0 = 0, fo1 = 0;
                if (d->filter_offset) conv_window_sums(d, col, &fo0, &fo1);
                conv_gemm(d, wt, col, bias, g * d->opg, (g + 1) * d->opg, y0, two ? y0 + d->o : y0, fo0, fo1);
            }
        }
#if CONV_LONE
        if (lone) conv_lone_pixel(d, lone, wt, bias, yb + (int64_t)(npix - 1) * d->o);
#endif
    }
}

#if EDGE_SIMD
/* The im2col copies: runs of a few dozen bytes (a 3x3 window's row of 3 channels: 36 bytes), where a call to
 * memcpy / memset costs more than the copy. Fixed-size pieces (inlined moves), the last one overlapping the one
 * before it; long runs through memcpy / memset. */
static inline void conv_copy(void *dst, const void *src, size_t n) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    size_t i;
    if (n > 256) {
        memcpy(d, s, n);
    } else if (n >= 16) {
        for (i = 0; i + 16 <= n; i += 16) memcpy(d + i, s + i, 16);
        if (i < n) memcpy(d + n - 16, s + n - 16, 16);
    } else if (n >= 4) {
        for (i = 0; i + 4 <= n; i += 4) memcpy(d + i, s + i, 4);
        if (i < n) memcpy(d + n - 4, s + n - 4, 4);
    } else {
        for (i = 0; i < n; i++) d[i] = s[i];
    }
}

static inline void conv_fill(void *dst, int value, size_t n) {
    uint8_t *d = (uint8_t *)dst;
    uint8_t v[16];
    size_t i;
    if (n > 256 || n < 16) {
        memset(d, value, n);
        return;
    }
    memset(v, value, 16);
    for (i = 0; i + 16 <= n; i += 16) memcpy(d + i, v, 16);
    if (i < n) memcpy(d + n - 16, v, 16);
}

/* Output pixels [p0, p1) of batch b: through the indirection conv (qconv), or through the packed GEMM: directly on
 * the input rows for a 1x1 stride-1 filter, else CONV_SIMD_MB pixels' windows at a time (int8 as stored; a tap in
 * the padding holds the input zero point, which adds nothing). */
static void conv_int8_simd(const conv_data_t *d, const int8_t *xb, int8_t *yb, int32_t p0, int32_t p1, int8_t *scr) {
    const int32_t k = d->k, c = d->c, zp = -d->input_offset;
    const int direct = d->geo.fast == CONV_FAST_DIRECT;
    int8_t *rows, *work;
    int32_t p, q, fy, fx;
    if (d->geo.fast == CONV_FAST_QCONV) { /* no scratch (scr NULL) */
        edge_simd_qconv(conv_qconv(d), xb, p0, p1, yb);
        return;
    }
    rows = scr;
    work = direct ? scr : scr + (size_t)CONV_SIMD_MB * (size_t)k;
    if (direct) {
        edge_simd_qgemm(d->simd, xb + (int64_t)p0 * c, p1 - p0, c, 0, d->o, yb + (int64_t)p0 * d->o, d->o, work);
        return;
    }
    for (p = p0; p < p1; p += CONV_SIMD_MB) {
        const int32_t mb = p1 - p < CONV_SIMD_MB ? p1 - p : CONV_SIMD_MB;
        int32_t oy = p / d->geo.ow, ox = p % d->geo.ow; /* pixel p + q, stepped (no division per pixel) */
        for (q = 0; q < mb; q++, ox = ox + 1 < d->geo.ow ? ox + 1 : (oy++, 0)) {
            const int32_t iy0 = oy * d->sh - d->geo.pt, ix0 = ox * d->sw - d->geo.pl;
            int8_t *row = rows + (int64_t)q * k;
            int32_t fx0, fx1;
            edge_conv_taps(ix0, d->dw, d->geo.w, d->kw, &fx0, &fx1);
            for (fy = 0; fy < d->kh; fy++, row += (int64_t)d->kw * c) {
                const int32_t iy = iy0 + fy * d->dh;
                if (iy < 0 || iy >= d->geo.h || fx0 >= fx1) {
                    conv_fill(row, zp, (size_t)d->kw * (size_t)c);
                    continue;
                }
                /* taps [fx0, fx1) inside the row, the others in the padding */
                if (fx0 > 0) conv_fill(row, zp, (size_t)fx0 * (size_t)c);
                if (d->dw == 1) { /* one run of (fx1 - fx0) * c bytes */
                    conv_copy(row + (int64_t)fx0 * c, xb + ((int64_t)iy * d->geo.w + ix0 + fx0) * c,
                           (size_t)(fx1 - fx0) * (size_t)c);
                } else {
                    for (fx = fx0; fx < fx1; fx++)
                        conv_copy(row + (int64_t)fx * c, xb + ((int64_t)iy * d->geo.w + ix0 + fx * d->dw) * c, (size_t)c);
                }
                if (fx1 < d->kw) conv_fill(row + (int64_t)fx1 * c, zp, (size_t)(d->kw - fx1) * (size_t)c);
            }
        }
        edge_simd_qgemm(d->simd, rows, mb, k, 0, d->o, yb + (int64_t)p * d->o, d->o, work);
    }
}

typedef struct {
    const conv_data_t *d;
    const int8_t *xb;
    int8_t *yb, *scr;
} conv_job_t;

/* Part t of n: its share of the pixels, in the scratch of the thread's slot. */
static void conv_job(void *arg, int32_t t, int32_t n, int32_t slot) {
    const conv_job_t *j = (const conv_job_t *)arg;
    int32_t p0, p1;
    edge_simd_split(j->d->geo.oh * j->d->geo.ow, j->d->geo.fast == CONV_FAST_DIRECT ? 4 : CONV_SIMD_MB, t, n, &p0, &p1);
    if (p0 < p1)
        conv_int8_simd(j->d, j->xb, j->yb, p0, p1, j->scr ? j->scr + (size_t)slot * j->d->simd_part_bytes : j->scr);
}
#endif

#if EDGE_SIMD
typedef struct {
    const conv_data_t *d;
    const edge_simd_sgemm_t *g;
    const float *xb;
    float *yb, *scr;
    edge_simd_dwf_t p;          /* the geometry, for edge_simd_sconv */
    int32_t direct;             /* edge_simd_sconv runs this layer (no im2col copy) */
} convf_job_t;

/* float32, part t of n: its share of the output pixels (of the output rows for a strided 1x1 filter). */
static void convf_job(void *arg, int32_t t, int32_t n, int32_t slot) {
    const convf_job_t *j = (const convf_job_t *)arg;
    const conv_data_t *d = j->d;
    const int32_t k = d->k, c = d->c, o = d->o, mb = d->fsimd->rows;
    int32_t p0, p1, p, q, fy, fx;
    if (!mb) {
        if (d->sh == 1 && d->sw == 1) { /* the input is the GEMM's rows: split as FULLY_CONNECTED / BATCH_MATMUL */
            edge_simd_sgemm_part(j->g, j->xb, d->geo.oh * d->geo.ow, c, j->yb, o, t, n);
        } else { /* output row oy: ow input pixels sw * c floats apart */
            edge_simd_split(d->geo.oh, 1, t, n, &p0, &p1);
            for (p = p0; p < p1; p++)
                edge_simd_sgemm(j->g, j->xb + (int64_t)p * d->sh * d->geo.w * c, d->geo.ow, (int64_t)d->sw * c, 0, o,
                                j->yb + (int64_t)p * d->geo.ow * o, o);
        }
        return;
    }
    if (j->direct) { /* a share of the output rows, the windows read where they lie */
        edge_simd_split(d->geo.oh, 1, t, n, &p0, &p1);
        if (p0 < p1)
            edge_simd_sconv(j->g, &j->p, j->xb, p0, p1, j->yb,
                            j->scr + (size_t)slot * (d->simd_part_bytes / sizeof(float)));
        return;
    }
    edge_simd_split(d->geo.oh * d->geo.ow, mb, t, n, &p0, &p1);
    for (p = p0; p < p1; p += mb) {
        float *rows = j->scr + (size_t)slot * (d->simd_part_bytes / sizeof(float));
        const int32_t m = p1 - p < mb ? p1 - p : mb;
        int32_t oy = p / d->geo.ow, ox = p % d->geo.ow; /* pixel p + q, stepped (no division per pixel) */
        for (q = 0; q < m; q++, ox = ox + 1 < d->geo.ow ? ox + 1 : (oy++, 0)) { /* its window, 0 in the padding */
            const int32_t iy0 = oy * d->sh - d->geo.pt, ix0 = ox * d->sw - d->geo.pl;
            float *row = rows + (int64_t)q * k;
            int32_t fx0, fx1;
            edge_conv_taps(ix0, d->dw, d->geo.w, d->kw, &fx0, &fx1);
            for (fy = 0; fy < d->kh; fy++, row += (int64_t)d->kw * c) {
                const int32_t iy = iy0 + fy * d->dh;
                if (iy < 0 || iy >= d->geo.h || fx0 >= fx1) {
                    conv_fill(row, 0, sizeof(float) * (size_t)d->kw * (size_t)c);
                    continue;
                }
                if (fx0 > 0) conv_fill(row, 0, sizeof(float) * (size_t)fx0 * (size_t)c);
                if (d->dw == 1) {
                    conv_copy(row + (int64_t)fx0 * c, j->xb + ((int64_t)iy * d->geo.w + ix0 + fx0) * c,
                           sizeof(float) * (size_t)(fx1 - fx0) * (size_t)c);
                } else {
                    for (fx = fx0; fx < fx1; fx++)
                        conv_copy(row + (int64_t)fx * c, j->xb + ((int64_t)iy * d->geo.w + ix0 + fx * d->dw) * c,
                               sizeof(float) * (size_t)c);
                }
                if (fx1 < d->kw) conv_fill(row + (int64_t)fx1 * c, 0, sizeof(float) * (size_t)(d->kw - fx1) * (size_t)c);
            }
        }
        edge_simd_sgemm(j->g, rows, m, k, 0, o, j->yb + (int64_t)p * o, o);
    }
}

/* float32 through the GEMM: the filter repacked first when it is not constant, then every batch's pixels split
 * across the threads. */
static void conv_float_simd(const edge_node_t *node, edge_ctx_t *ctx, const conv_data_t *d, const float *x,
                            const float *wt, const float *bias, float *y) {
    const int32_t npix = d->geo.oh * d->geo.ow;
    const int32_t parts = edge_simd_parts((int64_t)npix * d->o * d->k, d->simd_threads);
    edge_simd_sgemm_t g = *d->fsimd;
    convf_job_t j;
    int32_t b;
    if (g.pack_scratch >= 0)
        edge_simd_sgemm_pack(&g, g.level, wt, d->o, d->k, d->k, 1, bias, g.lo, g.hi,
                             edge_scratch(ctx, node, g.pack_scratch));
    j.d = d;
    j.g = &g;
    j.scr = g.rows ? (float *)edge_scratch(ctx, node, d->simd_scratch) : 0;
    j.p.h = d->geo.h, j.p.w = d->geo.w, j.p.c = d->c, j.p.oh = d->geo.oh, j.p.ow = d->geo.ow;
    j.p.kh = d->kh, j.p.kw = d->kw, j.p.sh = d->sh, j.p.sw = d->sw, j.p.dh = d->dh, j.p.dw = d->dw;
    j.p.pt = d->geo.pt, j.p.pl = d->geo.pl, j.p.lo = g.lo, j.p.hi = g.hi;
    j.direct = g.rows && edge_simd_sconv(&g, &j.p, 0, 0, 0, 0, 0);
    for (b = 0; b < d->n; b++) {
        j.xb = x + (int64_t)b * d->geo.h * d->geo.w * d->c;
        j.yb = y + (int64_t)b * npix * d->o;
        edge_simd_parallel(parts > 1 ? 2 * parts : 1, parts, convf_job, &j);
    }
}
#endif

/* ------------------------------------------------------------------------------------- int16, float */

static void conv_int16(const conv_data_t *d, const int16_t *x, const int8_t *wt, const void *bias, int16_t *y) {
    const int wide = d->kind == CONV_INT16_64;
    const int64_t *b64 = (const int64_t *)bias;
    const int32_t *b32 = (const int32_t *)bias;
    int32_t b, oy, ox, oc, fy, fx, i, fy0, fy1, fx0, fx1;
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->geo.oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            edge_conv_taps(iy0, d->dh, d->geo.h, d->kh, &fy0, &fy1);
            for (ox = 0; ox < d->geo.ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl;
                int16_t *yp = y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * d->o;
                edge_conv_taps(ix0, d->dw, d->geo.w, d->kw, &fx0, &fx1);
                for (oc = 0; oc < d->o; oc++) {
                    const int32_t g = oc / d->opg;
                    int64_t acc64 = 0;
                    uint32_t acc32 = 0;
                    int32_t r;
                    for (fy = fy0; fy < fy1; fy++) {
                        const int32_t iy = iy0 + fy * d->dh;
                        for (fx = fx0; fx < fx1; fx++) {
                            const int32_t ix = ix0 + fx * d->dw;
                            const int16_t *xp =
                                x + (((int64_t)b * d->geo.h + iy) * d->geo.w + ix) * d->c + (int64_t)g * d->cg;
                            const int8_t *wp = wt + (((int64_t)oc * d->kh + fy) * d->kw + fx) * d->cg;
                            int32_t part = 0; /* cg products of |v| <= 2^22: summed in int64 when cg is large */
                            if (d->cg <= 256) {
                                for (i = 0; i < d->cg; i++) part += xp[i] * wp[i];
                                acc64 += part;
                                acc32 += (uint32_t)part;
                            } else {
                                for (i = 0; i < d->cg; i++) {
                                    acc64 += xp[i] * wp[i];
                                    acc32 += (uint32_t)(xp[i] * wp[i]);
                                }
                            }
                        }
                    }
                    if (wide) {
                        if (b64) acc64 = edge_conv_add64(acc64, b64[oc]);
                        r = edge_mbqm64(acc64, edge_conv_mult(d->rqc, oc), edge_conv_shift(d->rqc, d->o, oc));
                    } else {
                        if (b32) acc32 += (uint32_t)b32[oc];
                        r = edge_mbqm(edge_wrap32((int64_t)acc32), edge_conv_mult(d->rqc, oc),
                                      edge_conv_shift(d->rqc, d->o, oc));
                    }
                    yp[oc] = (int16_t)edge_clamp32(r, d->lo, d->hi);
                }
            }
        }
    }
}

static void conv_float(const conv_data_t *d, const float *x, const float *wt, const float *bias, float *y) {
    float flo, fhi;
    int32_t b, oy, ox, oc, fy, fx, i, fy0, fy1, fx0, fx1;
    memcpy(&flo, &d->lo, 4);
    memcpy(&fhi, &d->hi, 4);
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->geo.oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            edge_conv_taps(iy0, d->dh, d->geo.h, d->kh, &fy0, &fy1);
            for (ox = 0; ox < d->geo.ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl;
                float *yp = y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * d->o;
                edge_conv_taps(ix0, d->dw, d->geo.w, d->kw, &fx0, &fx1);
                for (oc = 0; oc < d->o; oc++) {
                    const int32_t g = oc / d->opg;
                    float acc = 0.0f;
                    for (fy = fy0; fy < fy1; fy++) {
                        const int32_t iy = iy0 + fy * d->dh;
                        for (fx = fx0; fx < fx1; fx++) {
                            const int32_t ix = ix0 + fx * d->dw;
                            const float *xp =
                                x + (((int64_t)b * d->geo.h + iy) * d->geo.w + ix) * d->c + (int64_t)g * d->cg;
                            const float *wp = wt + (((int64_t)oc * d->kh + fy) * d->kw + fx) * d->cg;
                            for (i = 0; i < d->cg; i++) acc += xp[i] * wp[i];
                        }
                    }
                    if (bias) acc += bias[oc];
                    yp[oc] = acc < flo ? flo : (acc > fhi ? fhi : acc);
                }
            }
        }
    }
}

void edge_eval_conv_2d(const edge_node_t *node, edge_ctx_t *ctx) {
    const conv_data_t *d = (const conv_data_t *)node->user_data;
    const edge_tensor_t *in = edge_in(ctx, node, 0), *w = edge_in(ctx, node, 1), *bt = edge_in(ctx, node, 2);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    conv_data_t patch; /* a patch window (edge_window_t) */
    if (edge_tensor_elements(out) == 0) return; /* a batch of 0, as LiteRT: an empty output */
    if (EDGE_WITH_FLOAT32 && edge_hybrid_weights(in, w)) { /* never in a patch stage (patching.py) */
        edge_hybrid_eval_conv_2d(node, ctx);
        return;
    }
    if (EDGE_WITH_PATCH && ctx->window) {
        patch = *d;
        edge_window_apply(&patch.geo, ctx->window);
        d = &patch;
    }
    switch (d->kind) {
    case CONV_INT8:
#if EDGE_SIMD
        if (d->geo.fast) { /* d->simd */
            const int32_t npix = d->geo.oh * d->geo.ow;
            const int32_t parts = edge_simd_parts((int64_t)npix * d->o * d->k, d->simd_threads);
            int32_t b;
            conv_job_t j;
            j.d = d;
            j.scr = d->simd_scratch >= 0 ? (int8_t *)edge_scratch(ctx, node, d->simd_scratch) : 0;
            for (b = 0; b < d->n; b++) {
                j.xb = (const int8_t *)in->data + (int64_t)b * d->geo.h * d->geo.w * d->c;
                j.yb = (int8_t *)out->data + (int64_t)b * npix * d->o;
                edge_simd_parallel(parts > 1 ? 2 * parts : 1, parts, conv_job, &j);
            }
            break;
        }
#endif
        conv_int8(d, (const int8_t *)in->data, (const int8_t *)w->data, bt ? (const int32_t *)bt->data : 0,
                  (int8_t *)out->data, (int16_t *)edge_scratch(ctx, node, d->scratch));
        break;
    case CONV_FLOAT:
#if EDGE_SIMD
        if (d->geo.fast) { /* d->fsimd */
            conv_float_simd(node, ctx, d, (const float *)in->data, (const float *)w->data,
                            bt ? (const float *)bt->data : 0, (float *)out->data);
            break;
        }
#endif
        if (EDGE_WITH_FLOAT32)
            conv_float(d, (const float *)in->data, (const float *)w->data, bt ? (const float *)bt->data : 0,
                       (float *)out->data);
        break;
    default:
        if (EDGE_WITH_INT16)
            conv_int16(d, (const int16_t *)in->data, (const int8_t *)w->data, bt ? bt->data : 0,
                       (int16_t *)out->data);
        break;
    }
}
