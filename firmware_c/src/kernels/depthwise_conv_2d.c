/* DEPTHWISE_CONV_2D: y[b, oy, ox, c*M + m] = act(sum_{fy, fx} x[b, oy*sh - pt + fy*dh, ox*sw - pl + fx*dw, c]
 *                                                  * w[0, fy, fx, c*M + m] + bias[c*M + m]),  M = OC / C.
 *
 * Arithmetic as TFLM's reference depthwise kernels (and edge_sdk/runtime/kernels/conv.py prepare_depthwise_conv_2d):
 *  - int8 (per-tensor or per-channel int8 weights, scales along dimension 3, optional int32 bias): int32
 *    accumulator of w * (x + input_offset), padding contributes nothing, + bias, the channel's
 *    MultiplyByQuantizedMultiplier, + output zero point, activation clamp.
 *    Per-tensor weights with a zero point (legacy UINT8 models, presented as INT8: edge_sdk/runtime/uint8.py)
 *    add LiteRT's filter offset, (w + filter_offset): such layers run the portable loop dw_int8_offset (chosen
 *    at prepare; no SIMD / DSP path), or under the least-RAM plan in place.
 *  - int16x8: int64 accumulator of w * x, + int64 bias, the 16-bit-multiplier requantization, no offsets.
 *  - float32: the reference's tap order (fy, fx), + bias, activation clamp.
 * The int32 accumulator wraps like the reference's (sums mod 2^32 do not depend on their order, so the
 * bias may start the sum). The multiplier M is OC / C; a depth_multiplier option that says otherwise
 * (other than 0, which some converters write) is refused.
 *
 * Eval runs per output pixel with the valid tap range precomputed per row/column (no per-tap bounds
 * checks). On cores with the DSP extension and M == 1 (the MobileNet case), four channels at a time are
 * accumulated in registers: SXTB16 widens four int8 weights, SXTAB16 four inputs (adding the input offset to
 * two at once, or with a 3x3 window inside the input raw, the offset folded into the starting sums),
 * SMLABB / SMLATT multiply-accumulate; the four results are requantized with SMMLAR, saturated with SSAT and
 * clamped together (SSUB8 / SEL) into one 32-bit store. With M % 4 == 0 (one or few input channels and a depth
 * multiplier: micro_speech, person_detect's first layer) prepare pre-pairs the filter for SMLAD and eval stages
 * each pixel's window rows once per input channel, four outputs per pass (dw_int8_mult). A layer whose scale
 * ratios edge_rq does not cover keeps these sums and requantizes with edge_conv_rqw. Cores without the DSP
 * extension (Cortex-M0+) run the portable loops, the reference the DSP paths are tested against.
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

/* INT4 filters (edge_int4.h): unpacked to INT8 for the integer kernels; a FLOAT32 input with an INT4 filter is
 * refused, as LiteRT's depthwise_conv.cc refuses it (it has no hybrid 4-bit kernel). */
static edge_status_t dw_int4_filter(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *in = node->n_inputs >= 2 ? edge_in(ctx, node, 0) : 0;
    edge_tensor_t *w = node->n_inputs >= 2 ? edge_in(ctx, node, 1) : 0;
    if (!in || !w || w->type != EDGE_INT4) return EDGE_OK;
    if (in->type == EDGE_FLOAT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "DEPTHWISE_CONV_2D: FLOAT32 input with INT4 filter (LiteRT has none)");
    return edge_int4_to_int8(ctx, w);
}

EDGE_KERNEL(DEPTHWISE_CONV_2D, depthwise_conv_2d, 7, "FLOAT32/FLOAT32 INT8/INT8 INT16/INT8 FLOAT32/INT8 INT8/INT4 INT16/INT4", "NHWC 4-D; INT4 filters of integer inputs unpacked to INT8 at prepare; quantized filter per-tensor or per-channel (one scale per output channel); FLOAT32 input with INT8 filter: LiteRT's hybrid kernel, one scale per channel (hybrid.c)")

enum { DW_FLOAT = 0, DW_INT8 = 1, DW_INT16 = 2 };

typedef struct {
    int16_t kind;
    int16_t filter_offset;      /* int8: -(the weights' zero point, -127..128), nonzero only for per-tensor legacy
                                 * (uint8) weights; 16 bits beside kind: no persistent byte more per node */
    edge_conv_geom_t geo;       /* input h x w, output oh x ow, padding before (top, left); geo.fast: int8 on
                                 * a 64-bit Linux CPU with a fast path: its level (0: none); float32, multiplier
                                 * 1: the level of edge_simd_dw_f32 (which reads the filter as the model stores
                                 * it, [kh, kw, c]) */
    int32_t n, c, m, oc;        /* input batch, channels, depth multiplier, output channels */
    int32_t kh, kw;
    int32_t sh, sw, dh, dw;
    int32_t input_offset, output_offset, lo, hi;
    int32_t *rq;                /* per output channel, 5 bytes each (edge_conv_rq): edge_rq's form, or with
                                 * rq_generic (always for int16) edge_mbqm's multiplier and shift */
    int32_t rq_generic;
    int32_t scratch;            /* int8 plain path: oc int32 accumulators */
    int32_t plane;              /* the least-RAM plan (EDGE_INIT_MEMORY_MIN), int8, M == 1: one input channel's
                                 * h * w bytes, for running with the output over the input (-1: none) */
#if EDGE_SIMD
    int16_t *simd_w;            /* persistent, int8: the filter widened to int16 [m, kh * kw, c] (output channel
                                 * ic * m + j of tap t at [j, t, ic]; several input channels) */
    edge_simd_qgemm_t *simd_g;  /* persistent: the packed filter of a one-input-channel layer (NULL: none) */
    int32_t *simd_q;            /* persistent: bias[oc] (0 without one), mul[oc], rs[oc]; several input channels:
                                 * per j < m, bias, mul, rs of the output channels ic * m + j (3 * c each) */
    int32_t simd_scratch;       /* per thread: the taps inside one pixel's window (kh * kw offsets and weight
                                 * rows), or (one input channel) DW_SIMD_MB im2col rows + the GEMM's work */
    int32_t simd_threads;       /* threads at prepare: parts of the output rows / pixels */
    uint32_t simd_part_bytes;
#endif
#if EDGE_DSP
    uint32_t *mult_w;           /* packed (dw_prepare_mult), int8 with a depth multiplier m % 4 == 0 (NULL: not
                                 * that path): per input channel ic, group g of four outputs (ic * m + 4g..+3),
                                 * filter row fy and four taps q (columns 4q..4q+3, zero past kw): 8 words, per
                                 * output j (A_j, B_j) = (w[4q] | w[4q+2] << 16, w[4q+1] | w[4q+3] << 16) as
                                 * int16 halves, the pairs SMLAD multiplies with SXTAB16's (x0, x2), (x1, x3) */
    edge_rq_t *mult_q;          /* persistent, oc channels' edge_rq_t unpacked (NULL for a generic layer) */
    int32_t kwp;                /* kw rounded up to four (0: not a multiplier path); with mult_w NULL the same
                                 * layer under the least-RAM request: the model's 8-bit filter, each word of four
                                 * outputs' weights widened at use (SXTB16) for SMLABB / SMLATT */
    int32_t win;                /* scratch: one input channel's window rows, kh x kwp bytes */
    edge_conv_rqw_t *rqw;       /* persistent, int8 with rq_generic: the channels' edge_conv_rqw_t (NULL: a
                                 * multiplier or shift it does not cover, edge_mbqm then) */
#endif
} dw_data_t;

#if EDGE_SIMD
#define DW_SIMD_MB 16 /* output pixels per im2col block (one input channel) */

/* int8, constant filter, multipliers edge_rq covers, and either several input channels (the filter as int16
 * rows per tap, all channels of a pixel at once; a depth multiplier m > 1 as m such passes, pass j the output
 * channels ic * m + j) or one input channel (a convolution with one input channel: the packed GEMM of the taps
 * against the oc filters). */
static edge_status_t dw_prepare_simd(edge_node_t *node, edge_ctx_t *ctx, dw_data_t *d, const edge_tensor_t *w,
                                     const edge_tensor_t *bias) {
    const int32_t level = edge_simd_level(), taps = d->kh * d->kw, oc = d->oc;
    int32_t i;
    d->geo.fast = 0;
    if (!level || d->kind != DW_INT8 || d->rq_generic || d->filter_offset || !w->is_const ||
        (bias && !bias->is_const) || (int64_t)taps * oc > 0x3fffffff)
        return EDGE_OK;
    d->simd_q = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * 3u * (size_t)oc);
    if (!d->simd_q) return EDGE_ARENA_TOO_SMALL;
    for (i = 0; i < oc; i++) {
        const edge_rq_t q = edge_rq_at(d->rq, oc, i);
        /* one input channel: [bias oc][mul oc][rs oc]; else pass j = i % m holds channel ic = i / m */
        int32_t *at = d->c == 1 ? d->simd_q + i : d->simd_q + (int64_t)(i % d->m) * 3 * d->c + i / d->m;
        const int32_t step = d->c == 1 ? oc : d->c;
        at[0] = bias ? ((const int32_t *)bias->data)[i] : 0;
        at[step] = q.mul;
        at[2 * step] = q.rnd;
    }
    if (d->c == 1) {
        const size_t bytes = edge_simd_qgemm_bytes(level, oc, taps);
        void *packed;
        if (!bytes) return EDGE_OK;
        d->simd_g = (edge_simd_qgemm_t *)edge_alloc_persistent(ctx, sizeof *d->simd_g);
        packed = edge_alloc_packed(ctx, bytes);
        if (!d->simd_g || !packed) return EDGE_ARENA_TOO_SMALL;
        edge_simd_qgemm_pack(d->simd_g, level, (const int8_t *)w->data, oc, taps, 1, oc, d->simd_q, d->input_offset,
                             d->simd_q + oc, 1, d->simd_q + 2 * oc, 1, d->output_offset, d->lo, d->hi, packed);
        d->geo.fast = level;
        d->simd_threads = edge_simd_threads();
        d->simd_part_bytes =
            (uint32_t)(((size_t)DW_SIMD_MB * (size_t)taps + edge_simd_qgemm_work(level, taps, 0) + 63) & ~(size_t)63);
        return edge_request_scratch(ctx, node, (size_t)d->simd_part_bytes * (size_t)d->simd_threads,
                                    &d->simd_scratch);
    }
    d->simd_w = (int16_t *)edge_alloc_packed(ctx, sizeof(int16_t) * (size_t)taps * (size_t)oc);
    if (!d->simd_w) return EDGE_ARENA_TOO_SMALL;
    for (i = 0; i < taps * oc; i++) { /* tap t, output channel o = ic * m + j -> [j, t, ic] */
        const int32_t t = i / oc, o = i % oc;
        d->simd_w[((int64_t)(o % d->m) * taps + t) * d->c + o / d->m] = ((const int8_t *)w->data)[i];
    }
    d->geo.fast = level;
    d->simd_threads = edge_simd_threads();
    /* the taps' weight rows and offsets, and (m > 1) one pass's c outputs before they are spread */
    d->simd_part_bytes = (uint32_t)(((sizeof(int32_t) + sizeof(void *)) * (size_t)taps +
                                     (d->m > 1 ? (size_t)d->c : 0) + 63) & ~(size_t)63);
    return edge_request_scratch(ctx, node, (size_t)d->simd_part_bytes * (size_t)d->simd_threads, &d->simd_scratch);
}

/* One input channel: DW_SIMD_MB pixels' windows (the input zero point in the padding) through the GEMM. */
static void dw_int8_simd_c1(const dw_data_t *d, const int8_t *x, int8_t *y, int8_t *scr, int32_t p0, int32_t p1) {
    const int32_t taps = d->kh * d->kw, npix = d->geo.oh * d->geo.ow, zp = -d->input_offset;
    int8_t *work = scr + (size_t)DW_SIMD_MB * (size_t)taps;
    int32_t b, p, q, fy, fx;
    for (b = 0; b < d->n; b++) {
        const int8_t *xb = x + (int64_t)b * d->geo.h * d->geo.w;
        int8_t *yb = y + (int64_t)b * npix * d->oc;
        for (p = p0; p < p1; p += DW_SIMD_MB) {
            const int32_t mb = p1 - p < DW_SIMD_MB ? p1 - p : DW_SIMD_MB;
            for (q = 0; q < mb; q++) {
                const int32_t oy = (p + q) / d->geo.ow, ox = (p + q) % d->geo.ow;
                const int32_t iy0 = oy * d->sh - d->geo.pt, ix0 = ox * d->sw - d->geo.pl;
                int8_t *row = scr + (int64_t)q * taps;
                int32_t fx0, fx1;
                edge_conv_taps(ix0, d->dw, d->geo.w, d->kw, &fx0, &fx1);
                for (fy = 0; fy < d->kh; fy++, row += d->kw) {
                    const int32_t iy = iy0 + fy * d->dh;
                    const int8_t *src;
                    if (iy < 0 || iy >= d->geo.h || fx0 >= fx1) {
                        memset(row, zp, (size_t)d->kw);
                        continue;
                    }
                    src = xb + (int64_t)iy * d->geo.w + ix0; /* + fx * dw: inside the row for fx in [fx0, fx1) */
                    if (fx0 > 0) memset(row, zp, (size_t)fx0);
                    if (d->dw == 1) memcpy(row + fx0, src + fx0, (size_t)(fx1 - fx0));
                    else
                        for (fx = fx0; fx < fx1; fx++) row[fx] = src[fx * d->dw];
                    if (fx1 < d->kw) memset(row + fx1, zp, (size_t)(d->kw - fx1));
                }
            }
            edge_simd_qgemm(d->simd_g, scr, mb, taps, 0, d->oc, yb + (int64_t)p * d->oc, d->oc, work);
        }
    }
}

static void dw_int8_simd(const dw_data_t *d, const int8_t *x, int8_t *y, void *scr, int32_t oy0, int32_t oy1);

typedef struct {
    const dw_data_t *d;
    edge_simd_dwf_t p;
    const float *x, *w, *bias;
    float *y;
} dwf_job_t;

/* float32, part t of n: its share of the output rows of every batch. */
static void dwf_job(void *arg, int32_t t, int32_t n, int32_t slot) {
    const dwf_job_t *j = (const dwf_job_t *)arg;
    const dw_data_t *d = j->d;
    int32_t a, b, bt;
    (void)slot;
    edge_simd_split(d->geo.oh, 1, t, n, &a, &b);
    for (bt = 0; bt < d->n && a < b; bt++) {
        const float *xb = j->x + (int64_t)bt * d->geo.h * d->geo.w * d->c;
        float *yb = j->y + (int64_t)bt * d->geo.oh * d->geo.ow * d->c;
        /* 3x3 / 5x5 with the taps loaded once per channel tile where the level has it (src/simd/edge_simd_dw_x86.c:
         * the same bits) */
        if (!edge_simd_dw_3x3_5x5_f32(d->geo.fast, &j->p, xb, j->w, j->bias, a, b, yb))
            edge_simd_dw_f32(d->geo.fast, &j->p, xb, j->w, j->bias, a, b, yb);
    }
}

static void dw_float_simd(const dw_data_t *d, const float *x, const float *wt, const float *bias, float *y) {
    const int32_t parts =
        edge_simd_parts((int64_t)d->n * d->geo.oh * d->geo.ow * d->oc * d->kh * d->kw, d->simd_threads);
    dwf_job_t j;
    j.d = d;
    j.p.h = d->geo.h;
    j.p.w = d->geo.w;
    j.p.c = d->c;
    j.p.oh = d->geo.oh;
    j.p.ow = d->geo.ow;
    j.p.kh = d->kh;
    j.p.kw = d->kw;
    j.p.sh = d->sh;
    j.p.sw = d->sw;
    j.p.dh = d->dh;
    j.p.dw = d->dw;
    j.p.pt = d->geo.pt;
    j.p.pl = d->geo.pl;
    memcpy(&j.p.lo, &d->lo, 4);
    memcpy(&j.p.hi, &d->hi, 4);
    j.x = x;
    j.w = wt;
    j.bias = bias;
    j.y = y;
    edge_simd_parallel(parts > 1 ? 2 * parts : 1, parts, dwf_job, &j);
}

typedef struct {
    const dw_data_t *d;
    const int8_t *x;
    int8_t *y, *scr;
} dw_job_t;

/* Part t of n: its share of the output rows (one input channel: of the pixels), in its thread slot's scratch. */
static void dw_job(void *arg, int32_t t, int32_t n, int32_t slot) {
    const dw_job_t *j = (const dw_job_t *)arg;
    int8_t *scr = j->scr + (size_t)slot * j->d->simd_part_bytes;
    int32_t a, b;
    if (j->d->simd_g) {
        edge_simd_split(j->d->geo.oh * j->d->geo.ow, DW_SIMD_MB, t, n, &a, &b);
        if (a < b) dw_int8_simd_c1(j->d, j->x, j->y, scr, a, b);
    } else {
        edge_simd_split(j->d->geo.oh, 1, t, n, &a, &b);
        if (a < b) dw_int8_simd(j->d, j->x, j->y, scr, a, b);
    }
}

/* Every output pixel: the taps inside the input, then all channels at once (src/simd); a depth multiplier
 * m > 1 in m passes over the same taps, pass j's c outputs spread to channels ic * m + j. */
static void dw_int8_simd(const dw_data_t *d, const int8_t *x, int8_t *y, void *scr, int32_t oy0, int32_t oy1) {
    const int32_t taps = d->kh * d->kw;
    const int16_t **wtap = (const int16_t **)scr;
    int32_t *xoff = (int32_t *)(wtap + taps);
    int8_t *pass = (int8_t *)(xoff + taps);
    const int32_t c = d->c, m = d->m, oc = d->oc, *q = d->simd_q;
    int32_t b, oy, ox, fy, fx, fy0, fy1, fx0, fx1, j, t, ic;
    if (m == 1) { /* 3x3 / 5x5 whole rows, the taps loaded once per channel tile (src/simd/edge_simd_dw_x86.c) */
        edge_simd_dwf_t g;
        g.h = d->geo.h, g.w = d->geo.w, g.c = c, g.oh = d->geo.oh, g.ow = d->geo.ow, g.kh = d->kh, g.kw = d->kw;
        g.sh = d->sh, g.sw = d->sw, g.dh = d->dh, g.dw = d->dw, g.pt = d->geo.pt, g.pl = d->geo.pl;
        g.lo = g.hi = 0.0f;
        if (edge_simd_dw_q8_3x3_5x5(d->geo.fast, &g, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) {
            for (b = 0; b < d->n; b++)
                (void)edge_simd_dw_q8_3x3_5x5(d->geo.fast, &g, x + (int64_t)b * d->geo.h * d->geo.w * c, d->simd_w, q,
                                              q + c, q + 2 * c, d->input_offset, d->output_offset, d->lo, d->hi, oy0,
                                              oy1, y + (int64_t)b * d->geo.oh * d->geo.ow * oc);
            return;
        }
    }
    for (b = 0; b < d->n; b++) {
        const int8_t *xb = x + (int64_t)b * d->geo.h * d->geo.w * c;
        for (oy = oy0; oy < oy1; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            edge_conv_taps(iy0, d->dh, d->geo.h, d->kh, &fy0, &fy1);
            for (ox = 0; ox < d->geo.ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl;
                int8_t *yp = y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * oc;
                int32_t nt = 0;
                edge_conv_taps(ix0, d->dw, d->geo.w, d->kw, &fx0, &fx1);
                for (fy = fy0; fy < fy1; fy++)
                    for (fx = fx0; fx < fx1; fx++, nt++) {
                        xoff[nt] = ((iy0 + fy * d->dh) * d->geo.w + ix0 + fx * d->dw) * c;
                        wtap[nt] = d->simd_w + (int64_t)(fy * d->kw + fx) * c;
                    }
                if (m == 1) {
                    edge_simd_dw_pixel(d->geo.fast, xb, xoff, wtap, nt, c, d->input_offset, q, q + c, q + 2 * c,
                                       d->output_offset, d->lo, d->hi, yp);
                    continue;
                }
                for (j = 0; j < m; j++) {
                    const int32_t *qj = q + (int64_t)j * 3 * c;
                    if (j)
                        for (t = 0; t < nt; t++) wtap[t] += (int64_t)taps * c; /* pass j's rows of the same taps */
                    edge_simd_dw_pixel(d->geo.fast, xb, xoff, wtap, nt, c, d->input_offset, qj, qj + c, qj + 2 * c,
                                       d->output_offset, d->lo, d->hi, pass);
                    for (ic = 0; ic < c; ic++) yp[ic * m + j] = pass[ic];
                }
            }
        }
    }
}
#endif

#if EDGE_DSP
/* int8, constant filter, depth multiplier m % 4 == 0 (one or few input channels: person_detect's and micro_speech's
 * first layers, m = 8) on DSP cores: the filter pre-paired for SMLAD (mult_w above), the channels' requantization
 * unpacked, and the window scratch. Eval (dw_int8_mult) runs per output pixel and input channel. */
static edge_status_t dw_prepare_mult(edge_node_t *node, edge_ctx_t *ctx, dw_data_t *d, const edge_tensor_t *w) {
    const int8_t *wt = (const int8_t *)w->data;
    const int32_t kwp = (d->kw + 3) & ~3, nq = kwp / 4, groups = d->m / 4;
    const size_t words = (size_t)d->c * (size_t)groups * (size_t)d->kh * (size_t)nq * 8u;
    int32_t ic, g, fy, q, j, k;
    uint32_t *p;
    if ((uint64_t)words > 0x3fffffffu / 4u || (int64_t)d->kh * kwp > 0x7fffffff) return EDGE_OK;
    d->mult_w = p = (uint32_t *)edge_alloc_packed(ctx, 4u * words);
    if (!p) return EDGE_ARENA_TOO_SMALL;
    if (!d->rq_generic) {
        d->mult_q = (edge_rq_t *)edge_alloc_persistent(ctx, sizeof(edge_rq_t) * (size_t)d->oc);
        if (!d->mult_q) return EDGE_ARENA_TOO_SMALL;
        for (j = 0; j < d->oc; j++) d->mult_q[j] = edge_rq_at(d->rq, d->oc, j);
    }
    d->kwp = kwp;
    for (ic = 0; ic < d->c; ic++)
        for (g = 0; g < groups; g++)
            for (fy = 0; fy < d->kh; fy++)
                for (q = 0; q < nq; q++)
                    for (j = 0; j < 4; j++, p += 2) {
                        const int32_t o = ic * d->m + 4 * g + j;
                        uint16_t t[4];
                        for (k = 0; k < 4; k++) {
                            const int32_t fx = 4 * q + k;
                            t[k] = fx < d->kw ? (uint16_t)(int16_t)wt[((int64_t)fy * d->kw + fx) * d->oc + o] : 0;
                        }
                        p[0] = (uint32_t)t[0] | (uint32_t)t[2] << 16;
                        p[1] = (uint32_t)t[1] | (uint32_t)t[3] << 16;
                    }
    return edge_request_scratch(ctx, node, (size_t)d->kh * (size_t)kwp, &d->win);
}

/* The same layer under the least-RAM request (edge_least_ram): no pre-paired copy and no unpacked
 * requantization (the 5-byte rq form, dw_store4_generic), only the window scratch; eval multiplies the model's
 * filter words (four outputs' weights of one tap, contiguous in [1, kh, kw, c * m]). */
static edge_status_t dw_prepare_mult8(edge_node_t *node, edge_ctx_t *ctx, dw_data_t *d) {
    const int32_t kwp = (d->kw + 3) & ~3;
    if ((int64_t)d->kh * kwp > 0x7fffffff) return EDGE_OK;
    d->kwp = kwp;
    return edge_request_scratch(ctx, node, (size_t)d->kh * (size_t)kwp, &d->win);
}
#endif

/* DepthwiseConv2DOptions: 0 padding, 1 stride_w, 2 stride_h, 3 depth_multiplier, 4 fused_activation_function,
 * 5 dilation_w_factor, 6 dilation_h_factor. */
static edge_status_t dw_prepare(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_conv_opts_t op = edge_conv_opts(node, EDGE_OPTS_DepthwiseConv2DOptions, 4, 5);
    const int32_t depth_multiplier =
        node->options_type == EDGE_OPTS_DepthwiseConv2DOptions ? edge_opt_int(node, 3, 4, 0) : 0;
    edge_tensor_t *in, *w, *bias, *out;
    dw_data_t *d;
    int32_t shape[4];
    edge_status_t s;

    if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEPTHWISE_CONV_2D expects 2..3 inputs and 1 output");
    in = edge_in(ctx, node, 0);
    w = edge_in(ctx, node, 1);
    bias = edge_in(ctx, node, 2);
    out = edge_out(ctx, node, 0);
    if (!in || !w) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEPTHWISE_CONV_2D: input and filter are required");
    s = edge_conv_check(ctx, in, w, out, op.act);
    if (s != EDGE_OK) return s;
    if (w->dims[0] != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEPTHWISE_CONV_2D: filter must be [1, kh, kw, oc]");

    d = (dw_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->n = in->dims[0];
    d->geo.h = in->dims[1];
    d->geo.w = in->dims[2];
    d->c = in->dims[3];
    d->kh = w->dims[1];
    d->kw = w->dims[2];
    d->oc = w->dims[3];
    d->sh = op.sh;
    d->sw = op.sw;
    d->dh = op.dh;
    d->dw = op.dw;
    d->scratch = d->plane = -1;
    if (d->n < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEPTHWISE_CONV_2D: negative batch"); /* 0: empty output */
    if (d->c <= 0 || d->oc <= 0 || d->oc % d->c)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEPTHWISE_CONV_2D: filter channels are not a multiple of the input's");
    d->m = d->oc / d->c;
    if (depth_multiplier != 0 && depth_multiplier != d->m)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEPTHWISE_CONV_2D: depth_multiplier differs from filter / input channels");
    if (edge_conv_geom_fold_pad(ctx, node, &op, d->kh, d->kw, &d->geo)) /* a folded PAD: its input, its padding */
        return EDGE_FAIL(ctx, EDGE_BAD_NODE,
                         "DEPTHWISE_CONV_2D: padding, strides, dilations or window do not fit the input");
    shape[0] = d->n;
    shape[1] = d->geo.oh;
    shape[2] = d->geo.ow;
    shape[3] = d->oc;
    s = edge_set_output_shape(ctx, node, 0, shape, 4);
    if (s != EDGE_OK) return s;

    if (in->type == EDGE_FLOAT32) {
        d->kind = DW_FLOAT;
        if (bias && (bias->type != EDGE_FLOAT32 || edge_tensor_elements(bias) != d->oc))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEPTHWISE_CONV_2D: bias must be FLOAT32 with one value per channel");
        float flo = 0.0f, fhi = 0.0f; /* kept in lo / hi (their bits): the float kind has no integer clamp */
        edge_activation_range_float(op.act, &flo, &fhi);
        memcpy(&d->lo, &flo, 4);
        memcpy(&d->hi, &fhi, 4);
#if EDGE_SIMD
        d->geo.fast = d->m == 1 ? edge_simd_level() : 0; /* every level has edge_simd_dw_f32 */
        d->simd_threads = edge_simd_threads();
#endif
        return EDGE_OK;
    }
    d->kind = in->type == EDGE_INT8 ? DW_INT8 : DW_INT16;
    if (bias && bias->type != (d->kind == DW_INT8 ? EDGE_INT32 : EDGE_INT64))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "DEPTHWISE_CONV_2D: bias must be INT32 (int8) or INT64 (int16)");
    if (bias && edge_tensor_elements(bias) != d->oc)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEPTHWISE_CONV_2D: bias needs one value per output channel");
    s = edge_conv_check_quant(ctx, in, w, out, d->oc, op.act, &d->lo, &d->hi);
    if (s != EDGE_OK) return s;
    d->input_offset = d->kind == DW_INT8 ? -in->zero_point : 0;
    d->output_offset = d->kind == DW_INT8 ? out->zero_point : 0;
    d->filter_offset = d->kind == DW_INT8 ? -w->zero_point : 0;
    s = edge_conv_rq(ctx, in, w, out, d->oc, d->kind == DW_INT8, &d->rq, &d->rq_generic);
    if (s != EDGE_OK) return s;
    if (d->filter_offset) return EDGE_OK; /* dw_int8_offset: no scratch, no fast path */
#if EDGE_SIMD
    s = dw_prepare_simd(node, ctx, d, w, bias);
    if (s != EDGE_OK || (d->geo.fast && !edge_in_patch_stage(ctx->interp, node))) return s;
#endif
#if EDGE_DSP
    if (d->kind == DW_INT8 && d->rq_generic) {
        int32_t k;
        d->rqw = (edge_conv_rqw_t *)edge_alloc_persistent(ctx, sizeof(edge_conv_rqw_t) * (size_t)d->oc);
        if (!d->rqw) return EDGE_ARENA_TOO_SMALL;
        for (k = 0; k < d->oc; k++)
            if (edge_conv_rqw_make(&d->rqw[k], edge_conv_mult(d->rq, k), edge_conv_shift(d->rq, d->oc, k))) {
                d->rqw = 0;
                break;
            }
    }
    /* the pre-paired filter is an int16 copy of the filter in the arena (micro_speech: 1,408 B more than the
     * 8-bit filter's 6,736 B arena): the plan decides (edge_sdk.runtime.planner.dsp_filter_form); under the
     * least-RAM request the layer multiplies the model's 8-bit filter (dw_prepare_mult8) */
    if (d->kind == DW_INT8 && d->m % 4 == 0 && w->type == EDGE_INT8 && edge_least_ram(ctx->interp)) {
        s = dw_prepare_mult8(node, ctx, d);
        if (s != EDGE_OK || d->kwp) return s;
    } else if (d->kind == DW_INT8 && d->m % 4 == 0 && w->is_const && w->type == EDGE_INT8) {
        s = dw_prepare_mult(node, ctx, d, w);
        if (s != EDGE_OK || d->mult_w) return s;
    }
#endif
    /* the DSP path keeps its sums in registers; a patch stage's node asks for them anyway, so that edge check's
     * 32-bit runner (no DSP) plans the very bytes the board does */
    if (d->kind == DW_INT8 && (!(EDGE_DSP && d->m == 1) || edge_in_patch_stage(ctx->interp, node))) {
        s = edge_request_scratch(ctx, node, sizeof(int32_t) * (size_t)d->oc, &d->scratch);
        if (s != EDGE_OK) return s;
    }
    return EDGE_OK;
}

/* The least-RAM plan may put y over x: eval's in-place path runs then, SIMD or not. Its plane buffer is the
 * node's last scratch request (edge_inplace_plane_bytes: the planner drops it again when the node does not run
 * in place); never in a patch stage. */
edge_status_t edge_prepare_depthwise_conv_2d(edge_node_t *node, edge_ctx_t *ctx) {
    edge_status_t s;
    dw_data_t *d;
    size_t plane;
    if ((s = dw_int4_filter(node, ctx)) != EDGE_OK) return s;
    if (EDGE_WITH_FLOAT32 && node->n_inputs >= 2 && edge_hybrid_weights(edge_in(ctx, node, 0), edge_in(ctx, node, 1)))
        return edge_hybrid_prepare_depthwise_conv_2d(node, ctx);
    s = dw_prepare(node, ctx);
    d = (dw_data_t *)node->user_data;
    if (s != EDGE_OK) return s;
    plane = edge_inplace_plane_bytes(ctx->interp, node);
    if (plane && d->kind == DW_INT8 && d->m == 1) s = edge_request_scratch(ctx, node, plane, &d->plane);
    return s;
}

static inline int8_t dw_out8(const dw_data_t *d, uint32_t acc, int32_t ch) {
    edge_rq_t q;
    int32_t r;
    if (d->rq_generic) {
        r = edge_mbqm(edge_wrap32((int64_t)acc), edge_conv_mult(d->rq, ch), edge_conv_shift(d->rq, d->oc, ch));
    } else {
        q = edge_rq_at(d->rq, d->oc, ch);
        r = edge_rq_apply(&q, (int32_t)acc, 0);
    }
    return (int8_t)edge_clamp32(r + d->output_offset, d->lo, d->hi);
}

#if EDGE_DSP
#if EDGE_DSP_ASM
/* One tap for four channels: widen xv / wv into (c0, c2) and (c1, c3) halves, accumulate a0..a3. */
#define DW_ASM_MAC4                                                                                         \
    "sxtb16 %[t1], %[xv]\n\t"                                                                               \
    "sxtb16 %[t2], %[wv]\n\t"                                                                               \
    "smlabb %[a0], %[t1], %[t2], %[a0]\n\t"                                                                 \
    "smlatt %[a2], %[t1], %[t2], %[a2]\n\t"                                                                 \
    "sxtb16 %[t1], %[xv], ror #8\n\t"                                                                       \
    "sxtb16 %[t2], %[wv], ror #8\n\t"                                                                       \
    "smlabb %[a1], %[t1], %[t2], %[a1]\n\t"                                                                 \
    "smlatt %[a3], %[t1], %[t2], %[a3]\n\t"
/* The three taps of one filter row at xr / wr, XS / WS bytes apart. */
#define DW_ASM_ROW3                                                                                         \
    "ldr %[xv], [%[xr]]\n\t" "ldr %[wv], [%[wr]]\n\t"                                                       \
    DW_ASM_MAC4                                                                                             \
    "ldr %[xv], [%[xr], %[xs]]\n\t" "ldr %[wv], [%[wr], %[ws]]\n\t"                                         \
    DW_ASM_MAC4                                                                                             \
    "ldr %[xv], [%[xr], %[xs], lsl #1]\n\t" "ldr %[wv], [%[wr], %[ws], lsl #1]\n\t"                         \
    DW_ASM_MAC4
/* Step xr / wr to the next row (the row strides are memory operands: no register left for them). */
#define DW_ASM_NEXT_ROW                                                                                     \
    "ldr %[t1], %[xrow]\n\t"                                                                                \
    "add %[xr], %[xr], %[t1]\n\t"                                                                           \
    "ldr %[t1], %[wrow]\n\t"                                                                                \
    "add %[wr], %[wr], %[t1]\n\t"
/* a0..a3 += the n >= 1 taps of one filter row for four channels: SXTAB16 widens four int8 inputs into
 * (c0, c2) / (c1, c3) halves and adds OFF2 (the input offset in both halves, or 0 where the offset is folded
 * into the starting sums), SXTB16 widens four weights, SMLABB / SMLATT multiply-accumulate; the input pointer
 * steps by XS, the weights' by WS. A macro so that the sums stay in registers. */
#define DW_ROW4(xr0, wr0, n0, XS, WS, OFF2, a0, a1, a2, a3)                                                 \
    do {                                                                                                    \
        const int8_t *xr_ = (xr0), *wr_ = (wr0);                                                            \
        const int8_t *const we_ = wr_ + (n0) * (WS); /* the end (no register left for a count) */         \
        uint32_t xv_, wv_, t1_, t2_;                                                                        \
        __asm__ volatile("1:\n\t"                                                                           \
                         "ldr %[xv], [%[xr]]\n\t"                                                           \
                         "ldr %[wv], [%[wr]]\n\t"                                                           \
                         "add %[xr], %[xr], %[xs]\n\t"                                                      \
                         "add %[wr], %[wr], %[ws]\n\t"                                                      \
                         "sxtab16 %[t1], %[o2], %[xv]\n\t"                                                  \
                         "sxtb16 %[t2], %[wv]\n\t"                                                          \
                         "smlabb %[a0], %[t1], %[t2], %[a0]\n\t"                                            \
                         "smlatt %[a2], %[t1], %[t2], %[a2]\n\t"                                            \
                         "sxtab16 %[t1], %[o2], %[xv], ror #8\n\t"                                          \
                         "sxtb16 %[t2], %[wv], ror #8\n\t"                                                  \
                         "smlabb %[a1], %[t1], %[t2], %[a1]\n\t"                                            \
                         "smlatt %[a3], %[t1], %[t2], %[a3]\n\t"                                            \
                         "ldr %[t1], %[we]\n\t"                                                             \
                         "cmp %[wr], %[t1]\n\t"                                                             \
                         "bne 1b"                                                                           \
                         : [xr] "+&r"(xr_), [wr] "+&r"(wr_), [a0] "+&r"(a0), [a1] "+&r"(a1),                \
                           [a2] "+&r"(a2), [a3] "+&r"(a3), [xv] "=&r"(xv_), [wv] "=&r"(wv_), [t1] "=&r"(t1_), \
                           [t2] "=&r"(t2_)                                                                  \
                         : [xs] "r"(XS), [ws] "r"(WS), [o2] "r"(OFF2), [we] "m"(we_)                        \
                         : "cc", "memory");                                                                 \
    } while (0)
/* A whole 3x3 window, the rows xrow / wrow bytes apart (memory operands: no register left for them). */
#define DW_3X3(xr0, wr0, XS, WS, XROW, WROW, a0, a1, a2, a3)                                                \
    do {                                                                                                    \
        const int8_t *xr_ = (xr0), *wr_ = (wr0);                                                            \
        const int32_t xrow_ = (XROW), wrow_ = (WROW);                                                       \
        uint32_t xv_, wv_, t1_, t2_;                                                                        \
        __asm__ volatile(                                                                                   \
                         DW_ASM_ROW3 DW_ASM_NEXT_ROW DW_ASM_ROW3 DW_ASM_NEXT_ROW DW_ASM_ROW3                \
                         : [a0] "+&r"(a0), [a1] "+&r"(a1), [a2] "+&r"(a2), [a3] "+&r"(a3), [xv] "=&r"(xv_), \
                           [wv] "=&r"(wv_), [t1] "=&r"(t1_), [t2] "=&r"(t2_), [xr] "+&r"(xr_), [wr] "+&r"(wr_) \
                         : [xs] "r"(XS), [ws] "r"(WS), [xrow] "m"(xrow_), [wrow] "m"(wrow_)                 \
                         : "memory");                                                                       \
    } while (0)
/* The five taps of one filter row at xr / wr, XS / WS bytes apart: taps 0..2 by register offsets, then both
 * pointers two taps on for taps 3 and 4 (Thumb-2 has no register post-index). 52 instructions per 20 MACs,
 * where DW_ROW4's loop takes 75. */
#define DW_ASM_ROW5                                                                                         \
    "ldr %[xv], [%[xr]]\n\t" "ldr %[wv], [%[wr]]\n\t"                                                       \
    DW_ASM_MAC4                                                                                             \
    "ldr %[xv], [%[xr], %[xs]]\n\t" "ldr %[wv], [%[wr], %[ws]]\n\t"                                         \
    DW_ASM_MAC4                                                                                             \
    "ldr %[xv], [%[xr], %[xs], lsl #1]\n\t" "ldr %[wv], [%[wr], %[ws], lsl #1]\n\t"                         \
    DW_ASM_MAC4                                                                                             \
    "add %[xr], %[xr], %[xs], lsl #1\n\t" "add %[wr], %[wr], %[ws], lsl #1\n\t"                             \
    "ldr %[xv], [%[xr], %[xs]]\n\t" "ldr %[wv], [%[wr], %[ws]]\n\t"                                         \
    DW_ASM_MAC4                                                                                             \
    "ldr %[xv], [%[xr], %[xs], lsl #1]\n\t" "ldr %[wv], [%[wr], %[ws], lsl #1]\n\t"                         \
    DW_ASM_MAC4
/* NROWS whole rows of a 5x5 window, the rows XROW / WROW bytes apart: one asm block a row (a block for all five
 * would need two more registers than the M4 has left), the sums in registers throughout. */
#define DW_5ROWS(xr0, wr0, NROWS, XS, WS, XROW, WROW, a0, a1, a2, a3)                                       \
    do {                                                                                                    \
        const int8_t *xq_ = (xr0), *wq_ = (wr0);                                                            \
        int32_t r_;                                                                                         \
        for (r_ = 0; r_ < (NROWS); r_++, xq_ += (XROW), wq_ += (WROW)) {                                    \
            const int8_t *xr_ = xq_, *wr_ = wq_;                                                            \
            uint32_t xv_, wv_, t1_, t2_;                                                                    \
            __asm__ volatile(DW_ASM_ROW5                                                                    \
                             : [a0] "+&r"(a0), [a1] "+&r"(a1), [a2] "+&r"(a2), [a3] "+&r"(a3),              \
                               [xv] "=&r"(xv_), [wv] "=&r"(wv_), [t1] "=&r"(t1_), [t2] "=&r"(t2_),          \
                               [xr] "+&r"(xr_), [wr] "+&r"(wr_)                                             \
                             : [xs] "r"(XS), [ws] "r"(WS)                                                   \
                             : "memory");                                                                   \
        }                                                                                                   \
    } while (0)
#define DW_5X5(xr0, wr0, XS, WS, XROW, WROW, a0, a1, a2, a3) \
    DW_5ROWS(xr0, wr0, 5, XS, WS, XROW, WROW, a0, a1, a2, a3)
#else
#define DW_ROW4(xr0, wr0, n0, XS, WS, OFF2, a0, a1, a2, a3)                                                 \
    do {                                                                                                    \
        const int8_t *xr_ = (xr0), *wr_ = (wr0);                                                            \
        int32_t n_;                                                                                         \
        for (n_ = (n0); n_ > 0; n_--, xr_ += (XS), wr_ += (WS)) {                                           \
            uint32_t xv_, wv_, t1_, t2_;                                                                    \
            memcpy(&xv_, xr_, 4);                                                                           \
            memcpy(&wv_, wr_, 4);                                                                           \
            t1_ = edge_sadd16(edge_sxtb16(xv_), (OFF2));                                                    \
            t2_ = edge_sxtb16(wv_);                                                                         \
            a0 = edge_smlabb(t1_, t2_, a0);                                                                 \
            a2 = edge_smlatt(t1_, t2_, a2);                                                                 \
            t1_ = edge_sadd16(edge_sxtb16_ror8(xv_), (OFF2));                                               \
            t2_ = edge_sxtb16_ror8(wv_);                                                                    \
            a1 = edge_smlabb(t1_, t2_, a1);                                                                 \
            a3 = edge_smlatt(t1_, t2_, a3);                                                                 \
        }                                                                                                   \
    } while (0)
#define DW_3X3(xr0, wr0, XS, WS, XROW, WROW, a0, a1, a2, a3)                                                \
    do {                                                                                                    \
        DW_ROW4((xr0), (wr0), 3, XS, WS, 0u, a0, a1, a2, a3);                                               \
        DW_ROW4((xr0) + (XROW), (wr0) + (WROW), 3, XS, WS, 0u, a0, a1, a2, a3);                             \
        DW_ROW4((xr0) + 2 * (XROW), (wr0) + 2 * (WROW), 3, XS, WS, 0u, a0, a1, a2, a3);                     \
    } while (0)
#define DW_5ROWS(xr0, wr0, NROWS, XS, WS, XROW, WROW, a0, a1, a2, a3)                                       \
    do {                                                                                                    \
        int32_t r_;                                                                                         \
        for (r_ = 0; r_ < (NROWS); r_++)                                                                    \
            DW_ROW4((xr0) + r_ * (XROW), (wr0) + r_ * (WROW), 5, XS, WS, 0u, a0, a1, a2, a3);               \
    } while (0)
#define DW_5X5(xr0, wr0, XS, WS, XROW, WROW, a0, a1, a2, a3) \
    DW_5ROWS(xr0, wr0, 5, XS, WS, XROW, WROW, a0, a1, a2, a3)
#endif

/* The output side of the four-channel path: zero point, the clamp as four bytes (lo4 / hi4: lo and hi in
 * every byte, for the byte-wise SIMD clamp). Built once per invoke on the stack. */
typedef struct {
    int32_t zp, lo, hi;
    uint32_t lo4, hi4;
} dw_out_t;

/* Channels ch..ch+3 of one output pixel: requantize, add the zero point, clamp, store. Out of line so
 * that the caller's loop does not keep these parameters in registers. On Cortex-M: SSAT to int8, the four
 * bytes packed with BFI, clamped at once with SSUB8 / SEL, one STR (the same values as the C version). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void dw_store4(uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, const edge_rq_t *q, int8_t *yp,
                      const dw_out_t *o) {
#if EDGE_DSP_ASM
    uint32_t m, r, t;
    __asm__ volatile("ldrd %[m], %[r], [%[q]]\n\t"
            "smmlar %[a0], %[a0], %[m], %[a0]\n\t"
            "add %[a0], %[a0], %[a0], asr #31\n\t"
            "smmlar %[a0], %[a0], %[r], %[zp]\n\t"
            "ssat %[a0], #8, %[a0]\n\t"
            "ldrd %[m], %[r], [%[q], #8]\n\t"
            "smmlar %[a1], %[a1], %[m], %[a1]\n\t"
            "add %[a1], %[a1], %[a1], asr #31\n\t"
            "smmlar %[a1], %[a1], %[r], %[zp]\n\t"
            "ssat %[a1], #8, %[a1]\n\t"
            "bfi %[a0], %[a1], #8, #8\n\t"
            "ldrd %[m], %[r], [%[q], #16]\n\t"
            "smmlar %[a2], %[a2], %[m], %[a2]\n\t"
            "add %[a2], %[a2], %[a2], asr #31\n\t"
            "smmlar %[a2], %[a2], %[r], %[zp]\n\t"
            "ssat %[a2], #8, %[a2]\n\t"
            "bfi %[a0], %[a2], #16, #8\n\t"
            "ldrd %[m], %[r], [%[q], #24]\n\t"
            "smmlar %[a3], %[a3], %[m], %[a3]\n\t"
            "add %[a3], %[a3], %[a3], asr #31\n\t"
            "smmlar %[a3], %[a3], %[r], %[zp]\n\t"
            "ssat %[a3], #8, %[a3]\n\t"
            "bfi %[a0], %[a3], #24, #8\n\t"
            "ssub8 %[t], %[a0], %[lo4]\n\t"
            "sel %[a0], %[a0], %[lo4]\n\t"
            "ssub8 %[t], %[hi4], %[a0]\n\t"
            "sel %[a0], %[a0], %[hi4]\n\t"
            "str %[a0], [%[y]]"
            : [a0] "+&r"(a0), [a1] "+&r"(a1), [a2] "+&r"(a2), [a3] "+&r"(a3), [m] "=&r"(m), [r] "=&r"(r),
              [t] "=&r"(t)
            : [q] "r"(q), [y] "r"(yp), [zp] "r"(o->zp), [lo4] "r"(o->lo4), [hi4] "r"(o->hi4)
            : "cc", "memory");
#else
    const int32_t zp = o->zp, lo = o->lo, hi = o->hi;
    yp[0] = (int8_t)edge_clamp32(edge_rq_apply(&q[0], (int32_t)a0, zp), lo, hi);
    yp[1] = (int8_t)edge_clamp32(edge_rq_apply(&q[1], (int32_t)a1, zp), lo, hi);
    yp[2] = (int8_t)edge_clamp32(edge_rq_apply(&q[2], (int32_t)a2, zp), lo, hi);
    yp[3] = (int8_t)edge_clamp32(edge_rq_apply(&q[3], (int32_t)a3, zp), lo, hi);
#endif
}

/* The same for a layer with a ratio edge_rq does not cover (a channel's right shift of 0 or 1, a left shift):
 * TFLM's MultiplyByQuantizedMultiplier per channel, as edge_conv_rqw (else edge_mbqm). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void dw_store4_generic(const dw_data_t *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, int32_t ch,
                              int8_t *yp) {
    const edge_conv_rqw_t *q = d->rqw;
    if (q) { /* edge_mbqm's value in four instructions a channel */
        const int32_t zp = d->output_offset, lo = d->lo, hi = d->hi;
        q += ch;
        yp[0] = (int8_t)edge_clamp32(edge_conv_rqw_apply(&q[0], (int32_t)a0, zp), lo, hi);
        yp[1] = (int8_t)edge_clamp32(edge_conv_rqw_apply(&q[1], (int32_t)a1, zp), lo, hi);
        yp[2] = (int8_t)edge_clamp32(edge_conv_rqw_apply(&q[2], (int32_t)a2, zp), lo, hi);
        yp[3] = (int8_t)edge_clamp32(edge_conv_rqw_apply(&q[3], (int32_t)a3, zp), lo, hi);
        return;
    }
    yp[0] = dw_out8(d, a0, ch);
    yp[1] = dw_out8(d, a1, ch + 1);
    yp[2] = dw_out8(d, a2, ch + 2);
    yp[3] = dw_out8(d, a3, ch + 3);
}

/* A run of pixels whose 3x3 windows lie inside the input, for one group of four channels: the state the
 * loop reads from memory (the asm version has no register left for it). Fixed layout: the asm addresses the
 * fields by offset (M-profile: 4-byte pointers; the typedef below fails to compile if the layout moves). */
typedef struct {
    const int8_t *x;    /*  0: the current pixel's window, top-left, at the group's channel */
    int8_t *y;          /*  4: its output */
    int32_t n;          /*  8: pixels left */
    int32_t pstep;      /* 12: input bytes between pixels (stride * c) */
    int32_t ystep;      /* 16: output bytes between pixels (c) */
    int32_t xrow, wrow; /* 20, 24: bytes between window rows, filter rows */
    const int8_t *w;    /* 28: the group's weights */
    uint32_t fb[4];     /* 32: the starting sums (bias + input offset x the weights' sum) */
    edge_rq_t q[4];     /* 48: the four channels' requantization */
    dw_out_t o;         /* 80: zp, lo, hi, lo4, hi4 */
    int32_t widened;    /* w16 holds the group's weights widened (dw_run3x3_pairs) */
    uint32_t w16[18];
} dw_run_t;

#if EDGE_DSP_ASM
typedef char dw_run_layout_check[(offsetof(dw_run_t, w) == 28 && offsetof(dw_run_t, q) == 48 &&
                                  offsetof(dw_run_t, o) == 80 && offsetof(dw_out_t, lo4) == 12) ? 1 : -1];

/* The run in one asm block: per pixel the sums from fb, the nine taps (three DW_ASM_ROW3), the four
 * requantizations (SMMLAR, SSAT), the byte-wise clamp (SSUB8 / SEL) and one STR, the pointers stepped. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void dw_run3x3(dw_run_t *st, int32_t XS, int32_t WS) {
    uint32_t a0, a1, a2, a3, xv, wv, t1, t2;
    const int8_t *xr, *wr;
    __asm__ volatile("0:\n\t"
                     "ldr %[xr], [%[st]]\n\t"
                     "ldr %[wr], [%[st], #28]\n\t"
                     "ldrd %[a0], %[a1], [%[st], #32]\n\t"
                     "ldrd %[a2], %[a3], [%[st], #40]\n\t"
                     DW_ASM_ROW3
                     "ldr %[t1], [%[st], #20]\n\t"
                     "add %[xr], %[xr], %[t1]\n\t"
                     "ldr %[t1], [%[st], #24]\n\t"
                     "add %[wr], %[wr], %[t1]\n\t"
                     DW_ASM_ROW3
                     "ldr %[t1], [%[st], #20]\n\t"
                     "add %[xr], %[xr], %[t1]\n\t"
                     "ldr %[t1], [%[st], #24]\n\t"
                     "add %[wr], %[wr], %[t1]\n\t"
                     DW_ASM_ROW3
                     "ldr %[t2], [%[st], #80]\n\t"
                     "ldrd %[xv], %[wv], [%[st], #48]\n\t"
                     "smmlar %[a0], %[a0], %[xv], %[a0]\n\t"
                     "add %[a0], %[a0], %[a0], asr #31\n\t"
                     "smmlar %[a0], %[a0], %[wv], %[t2]\n\t"
                     "ssat %[a0], #8, %[a0]\n\t"
                     "ldrd %[xv], %[wv], [%[st], #56]\n\t"
                     "smmlar %[a1], %[a1], %[xv], %[a1]\n\t"
                     "add %[a1], %[a1], %[a1], asr #31\n\t"
                     "smmlar %[a1], %[a1], %[wv], %[t2]\n\t"
                     "ssat %[a1], #8, %[a1]\n\t"
                     "bfi %[a0], %[a1], #8, #8\n\t"
                     "ldrd %[xv], %[wv], [%[st], #64]\n\t"
                     "smmlar %[a2], %[a2], %[xv], %[a2]\n\t"
                     "add %[a2], %[a2], %[a2], asr #31\n\t"
                     "smmlar %[a2], %[a2], %[wv], %[t2]\n\t"
                     "ssat %[a2], #8, %[a2]\n\t"
                     "bfi %[a0], %[a2], #16, #8\n\t"
                     "ldrd %[xv], %[wv], [%[st], #72]\n\t"
                     "smmlar %[a3], %[a3], %[xv], %[a3]\n\t"
                     "add %[a3], %[a3], %[a3], asr #31\n\t"
                     "smmlar %[a3], %[a3], %[wv], %[t2]\n\t"
                     "ssat %[a3], #8, %[a3]\n\t"
                     "bfi %[a0], %[a3], #24, #8\n\t"
                     "ldrd %[xv], %[wv], [%[st], #92]\n\t"
                     "ssub8 %[t1], %[a0], %[xv]\n\t"
                     "sel %[a0], %[a0], %[xv]\n\t"
                     "ssub8 %[t1], %[wv], %[a0]\n\t"
                     "sel %[a0], %[a0], %[wv]\n\t"
                     "ldrd %[t1], %[t2], [%[st], #4]\n\t"
                     "str %[a0], [%[t1]]\n\t"
                     "ldr %[xv], [%[st], #16]\n\t"
                     "add %[t1], %[t1], %[xv]\n\t"
                     "ldr %[xv], [%[st]]\n\t"
                     "ldr %[wv], [%[st], #12]\n\t"
                     "add %[xv], %[xv], %[wv]\n\t"
                     "str %[xv], [%[st]]\n\t"
                     "str %[t1], [%[st], #4]\n\t"
                     "subs %[t2], %[t2], #1\n\t"
                     "str %[t2], [%[st], #8]\n\t"
                     "bne 0b"
                     : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [xv] "=&r"(xv),
                       [wv] "=&r"(wv), [t1] "=&r"(t1), [t2] "=&r"(t2), [xr] "=&r"(xr), [wr] "=&r"(wr)
                     : [st] "r"(st), [xs] "r"(XS), [ws] "r"(WS)
                     : "cc", "memory");
}
#else
static void dw_run3x3(dw_run_t *st, int32_t XS, int32_t WS) {
    for (; st->n > 0; st->n--, st->x += st->pstep, st->y += st->ystep) {
        uint32_t a0 = st->fb[0], a1 = st->fb[1], a2 = st->fb[2], a3 = st->fb[3];
        DW_3X3(st->x, st->w, XS, WS, st->xrow, st->wrow, a0, a1, a2, a3);
        dw_store4(a0, a1, a2, a3, st->q, st->y, &st->o);
    }
}
#endif

/* EDGE_WITH_DW_PAIRS=0 (gen_ops.py path_defines: a firmware for models without a 3x3 multiplier-1 layer) compiles
 * dw_run3x3_pairs out; dw_run3x3 then runs every inside window */
#ifndef EDGE_WITH_DW_PAIRS
#define EDGE_WITH_DW_PAIRS 1
#endif

/* Two horizontally adjacent pixels of a 3x3, stride-1, width-dilation-1 window inside the input, one group of four
 * channels: a0..a3 (pixel A) and b0..b3 (pixel B, one column right) += the nine taps. Per window row the four input
 * columns are each loaded and widened (SXTB16) once: A's taps 0..2 are columns 0..2, B's columns 1..3. The
 * group's weights come pre-widened (w16: tap t at words 2t, 2t + 1 = SXTB16 / SXTB16-ROR8 of its four weights, built
 * once per group on the stack), one LDRD a tap. 51 instructions per row and pair (24 MACs) where dw_run3x3 takes
 * 30 per row and pixel (12 MACs). XR: A's window top-left at the group's channel; CS: bytes between columns (c);
 * RS: from a row's fourth column to the next row's first (xrow - 3c). */
#if EDGE_DSP_ASM
#define DW2_X(OFF)                                                                                          \
    "ldr %[xl], [%[xr]" OFF "]\n\t"                                                                         \
    "sxtb16 %[xh], %[xl], ror #8\n\t"                                                                       \
    "sxtb16 %[xl], %[xl]\n\t"
#define DW2_TAP(A0, A1, A2, A3, WOFF)                                                                       \
    "ldrd %[wl], %[wh], [%[wr], #" WOFF "]\n\t"                                                             \
    "smlabb %[" A0 "], %[xl], %[wl], %[" A0 "]\n\t"                                                         \
    "smlatt %[" A2 "], %[xl], %[wl], %[" A2 "]\n\t"                                                         \
    "smlabb %[" A1 "], %[xh], %[wh], %[" A1 "]\n\t"                                                         \
    "smlatt %[" A3 "], %[xh], %[wh], %[" A3 "]\n\t"
#define DW2_STEP(M)                                                                                         \
    "ldr %[wl], %[" M "]\n\t"                                                                               \
    "add %[xr], %[xr], %[wl]\n\t"
/* one window row: taps at weight words WB (bytes: row fy's tap 0 at 24 fy) */
#define DW2_ROW(T0, T1, T2)                                                                                 \
    DW2_X("") DW2_TAP("a0", "a1", "a2", "a3", T0) DW2_STEP("cs")                                            \
    DW2_X("") DW2_TAP("a0", "a1", "a2", "a3", T1) DW2_TAP("b0", "b1", "b2", "b3", T0) DW2_STEP("cs")        \
    DW2_X("") DW2_TAP("a0", "a1", "a2", "a3", T2) DW2_TAP("b0", "b1", "b2", "b3", T1) DW2_STEP("cs")        \
    DW2_X("") DW2_TAP("b0", "b1", "b2", "b3", T2)
#define DW_PAIR3X3(XR, W16, CS, RS, a0, a1, a2, a3, b0, b1, b2, b3)                                         \
    do {                                                                                                    \
        const int8_t *xr_ = (XR);                                                                           \
        const uint32_t *wr_ = (W16);                                                                        \
        const int32_t cs_ = (CS), rs_ = (RS);                                                               \
        uint32_t xl_, xh_, wl_, wh_;                                                                        \
        __asm__ volatile(DW2_ROW("0", "8", "16") DW2_STEP("rs") DW2_ROW("24", "32", "40") DW2_STEP("rs")    \
                         DW2_ROW("48", "56", "64")                                                          \
                         : [a0] "+&r"(a0), [a1] "+&r"(a1), [a2] "+&r"(a2), [a3] "+&r"(a3), [b0] "+&r"(b0),  \
                           [b1] "+&r"(b1), [b2] "+&r"(b2), [b3] "+&r"(b3), [xl] "=&r"(xl_), [xh] "=&r"(xh_), \
                           [wl] "=&r"(wl_), [wh] "=&r"(wh_), [xr] "+&r"(xr_), [wr] "+&r"(wr_)              \
                         : [cs] "m"(cs_), [rs] "m"(rs_)                                                     \
                         : "memory");                                                                       \
    } while (0)
/* one channel of both pixels: requantized (dw_store4's SMMLAR, ADD, SMMLAR), saturated to int8 */
#define DW2_RQ(A, B, QOFF)                                                                                  \
    "ldrd %[m], %[r], [%[q], #" QOFF "]\n\t"                                                                \
    "smmlar %[" A "], %[" A "], %[m], %[" A "]\n\t"                                                         \
    "smmlar %[" B "], %[" B "], %[m], %[" B "]\n\t"                                                         \
    "add %[" A "], %[" A "], %[" A "], asr #31\n\t"                                                         \
    "add %[" B "], %[" B "], %[" B "], asr #31\n\t"                                                         \
    "smmlar %[" A "], %[" A "], %[r], %[zp]\n\t"                                                            \
    "smmlar %[" B "], %[" B "], %[r], %[zp]\n\t"                                                            \
    "ssat %[" A "], #8, %[" A "]\n\t"                                                                       \
    "ssat %[" B "], #8, %[" B "]\n\t"
/* both pixels' four channels requantized (the four channels' edge_rq_t at Q), packed, clamped bytewise (SSUB8 /
 * SEL against lo and hi in every byte, as dw_store4), stored at Y and Y + C */
#define DW_PAIR_STORE(a0, a1, a2, a3, b0, b1, b2, b3, Q, ZP, Y, C, LO4, HI4)                                \
    do {                                                                                                    \
        const edge_rq_t *q_ = (Q);                                                                          \
        int8_t *y_ = (Y);                                                                                   \
        const int32_t zp_ = (ZP), c_ = (C);                                                                 \
        const uint32_t lo4_ = (LO4), hi4_ = (HI4);                                                          \
        uint32_t m_, r_;                                                                                    \
        __asm__ volatile(DW2_RQ("a0", "b0", "0") DW2_RQ("a1", "b1", "8")                                    \
                         "bfi %[a0], %[a1], #8, #8\n\t"                                                     \
                         "bfi %[b0], %[b1], #8, #8\n\t"                                                     \
                         DW2_RQ("a2", "b2", "16")                                                           \
                         "bfi %[a0], %[a2], #16, #8\n\t"                                                    \
                         "bfi %[b0], %[b2], #16, #8\n\t"                                                    \
                         DW2_RQ("a3", "b3", "24")                                                           \
                         "bfi %[a0], %[a3], #24, #8\n\t"                                                    \
                         "bfi %[b0], %[b3], #24, #8\n\t"                                                    \
                         "ldr %[m], %[lo4]\n\t"                                                             \
                         "ssub8 %[r], %[a0], %[m]\n\t"                                                      \
                         "sel %[a0], %[a0], %[m]\n\t"                                                       \
                         "ssub8 %[r], %[b0], %[m]\n\t"                                                      \
                         "sel %[b0], %[b0], %[m]\n\t"                                                       \
                         "ldr %[m], %[hi4]\n\t"                                                             \
                         "ssub8 %[r], %[m], %[a0]\n\t"                                                      \
                         "sel %[a0], %[a0], %[m]\n\t"                                                       \
                         "ssub8 %[r], %[m], %[b0]\n\t"                                                      \
                         "sel %[b0], %[b0], %[m]\n\t"                                                       \
                         "ldr %[m], %[y]\n\t"                                                               \
                         "ldr %[r], %[c]\n\t"                                                               \
                         "str %[a0], [%[m]]\n\t"                                                            \
                         "str %[b0], [%[m], %[r]]"                                                          \
                         : [a0] "+&r"(a0), [a1] "+&r"(a1), [a2] "+&r"(a2), [a3] "+&r"(a3), [b0] "+&r"(b0),  \
                           [b1] "+&r"(b1), [b2] "+&r"(b2), [b3] "+&r"(b3), [m] "=&r"(m_), [r] "=&r"(r_)     \
                         : [q] "r"(q_), [zp] "r"(zp_), [y] "m"(y_), [c] "m"(c_), [lo4] "m"(lo4_),            \
                           [hi4] "m"(hi4_)                                                                  \
                         : "cc", "memory");                                                                 \
    } while (0)
#else
static inline void dw_pair3x3(const int8_t *xr, const uint32_t *w16, int32_t cs, int32_t rs, uint32_t *a,
                              uint32_t *bb) {
    int32_t fy, col;
    for (fy = 0; fy < 3; fy++, xr += 3 * cs + rs, w16 += 6) {
        for (col = 0; col < 4; col++) { /* column col: A's tap col (col < 3), B's tap col - 1 (col > 0) */
            const uint32_t v = edge_get32(xr + (ptrdiff_t)col * cs), xl = edge_sxtb16(v), xh = edge_sxtb16_ror8(v);
            int32_t p;
            for (p = 0; p < 2; p++) {
                const int32_t t = col - p;
                uint32_t *s = p ? bb : a;
                if (t < 0 || t > 2) continue;
                s[0] = edge_smlabb(xl, w16[2 * t], s[0]);
                s[2] = edge_smlatt(xl, w16[2 * t], s[2]);
                s[1] = edge_smlabb(xh, w16[2 * t + 1], s[1]);
                s[3] = edge_smlatt(xh, w16[2 * t + 1], s[3]);
            }
        }
    }
}
#define DW_PAIR3X3(XR, W16, CS, RS, a0, a1, a2, a3, b0, b1, b2, b3)                                         \
    do {                                                                                                    \
        uint32_t a_[4] = {a0, a1, a2, a3}, b_[4] = {b0, b1, b2, b3};                                        \
        dw_pair3x3((XR), (W16), (CS), (RS), a_, b_);                                                        \
        a0 = a_[0], a1 = a_[1], a2 = a_[2], a3 = a_[3], b0 = b_[0], b1 = b_[1], b2 = b_[2], b3 = b_[3];     \
    } while (0)
#endif

/* The group's nine weights at w (tap t at row t / 3, column t % 3; wrow bytes between rows, c between columns)
 * widened for DW_PAIR3X3: words 2t, 2t + 1 = SXTB16 / SXTB16-ROR8 of tap t's four weights. */
static void dw_widen3x3(const int8_t *w, int32_t wrow, int32_t c, uint32_t *w16) {
    int32_t t;
    for (t = 0; t < 9; t++) {
        const uint32_t v = edge_get32(w + (ptrdiff_t)(t / 3) * wrow + (ptrdiff_t)(t % 3) * c);
        w16[2 * t] = edge_sxtb16(v);
        w16[2 * t + 1] = edge_sxtb16_ror8(v);
    }
}

/* A run of n inside 3x3 windows at stride 1 (the run dw_run3x3 takes, its state in st): two pixels a pass
 * (DW_PAIR3X3), each pair requantized and stored by DW_PAIR_STORE (the q loads shared by the two pixels); an odd
 * last pixel by dw_run3x3. */
#if defined(__GNUC__)
__attribute__((noinline)) /* its own registers: DW_PAIR3X3 takes 14 */
#endif
static void dw_run3x3_pairs(dw_run_t *st, int32_t c) {
    const int32_t rs = st->xrow - 3 * c;
    const uint32_t *const w16 = st->w16;
    if (!st->widened) dw_widen3x3(st->w, st->wrow, c, st->w16), st->widened = 1;
    for (; st->n >= 2; st->n -= 2, st->x += 2 * c, st->y += 2 * c) {
        uint32_t a0 = st->fb[0], a1 = st->fb[1], a2 = st->fb[2], a3 = st->fb[3], b0 = a0, b1 = a1, b2 = a2, b3 = a3;
        DW_PAIR3X3(st->x, w16, c, rs, a0, a1, a2, a3, b0, b1, b2, b3);
#if EDGE_DSP_ASM
        DW_PAIR_STORE(a0, a1, a2, a3, b0, b1, b2, b3, st->q, st->o.zp, st->y, c, st->o.lo4, st->o.hi4);
#else
        dw_store4(a0, a1, a2, a3, st->q, st->y, &st->o);
        dw_store4(b0, b1, b2, b3, st->q, st->y + c, &st->o);
#endif
    }
    if (st->n) dw_run3x3(st, c, c);
}

/* Multiplier 1 on DSP cores, four channels at a time from registers, one group of four over every pixel
 * (its four channels' requantization unpacked once). A 3x3 or 5x5 window inside the input (per output row,
 * the columns [oxa, oxb) of a row whose window rows are all inside) multiplies raw inputs: the input offset is
 * folded into the starting sums, fb = bias + input_offset * (sum of the channel's kh * kw weights) (sums mod
 * 2^32 equal the reference's); 3x3 runs in dw_run3x3 / dw_run3x3_pairs, 5x5 (its own copy, k5) pixel by pixel
 * (DW_5X5: ~2.6 instructions per MAC, where the row loop below takes ~3.75 plus its per-row set-up), as do its
 * windows clipped only above or below (DW_5ROWS). Every other pixel (and
 * kernel size) starts from the bias and runs its valid taps row by row with the offset added to the inputs
 * (padding skipped, as the reference). A layer edge_rq does not cover (one channel's ratio above 1/4 is enough)
 * runs the same sums, its inside windows pixel by pixel, and requantizes with edge_mbqm. Channels past the last
 * multiple of four run the reference loop. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void dw_int8_m1_body(const dw_data_t *d, const int8_t *x, const int8_t *wt, const int32_t *bias,
                                   int8_t *y, const int generic, const int shape) {
    /* the geometry in locals: the asm blocks clobber memory, so fields of *d would be reloaded after each */
    const int32_t c = d->c, c4 = c & ~3, off = d->input_offset, kh = d->kh, kw = d->kw;
    const int32_t n = d->n, h = d->geo.h, w = d->geo.w, oh = d->geo.oh, ow = d->geo.ow, sh = d->sh, sw = d->sw;
    const int32_t pt = d->geo.pt, pl = d->geo.pl;
    const int32_t dh = d->dh, dwx = d->dw;
    const int32_t xstep = dwx * c, xrow = dh * w * c, wrow = kw * c, pstep = sw * c;
    const uint32_t off2 = (uint32_t)(uint16_t)off * 0x10001u;
    /* shape (a constant in each copy): 5, a 5x5 layer's copy; 1, a column filter's (kw == 1); 0, every other
     * layer's, which carries no trace of them (a test for either in its border loop cost mobilenet_v1 96's
     * depthwise 3x3 +1 .. +4.5%) */
    const int is3x3 = !shape && kh == 3 && kw == 3, is5x5 = shape == 5, iscol = shape == 1;
    int pairs; /* dw_run3x3_pairs on the inside runs (weights widened once per group and call) */
    uint32_t b4[4];
    uint32_t rs5[5][4]; /* 5x5: input_offset * (sum of filter row fy's weights), per channel of the group */
    dw_run_t run;
    int32_t b, oy, ox, fy, fx, ch, j, fy0, fy1, fx0, fx1, oxa, oxb;
    run.o.zp = d->output_offset;
    run.o.lo = d->lo;
    run.o.hi = d->hi;
    run.o.lo4 = (uint32_t)(uint8_t)d->lo * 0x01010101u;
    run.o.hi4 = (uint32_t)(uint8_t)d->hi * 0x01010101u;
    run.pstep = pstep;
    run.ystep = c;
    run.xrow = xrow;
    run.wrow = wrow;
    /* output columns [oxa, oxb) have the whole window inside the input horizontally */
    oxa = pl > 0 ? (pl + sw - 1) / sw : 0; /* a patch window's padding may be negative (edge_window_t) */
    oxb = (w - 1 - (kw - 1) * dwx + pl) >= 0 ? (w - 1 - (kw - 1) * dwx + pl) / sw + 1 : 0;
    if (oxb > ow) oxb = ow;
    if (oxa > oxb) oxa = oxb;
    /* runs of 8 or more: the widening (~110 instructions a group) paid back by the pairs of the first row (~50 each);
     * a patch's narrow windows (kws_dscnn's 13x7 grid: runs of 2..4) stay with dw_run3x3 */
    pairs = is3x3 && sw == 1 && dwx == 1 && !generic && oxb - oxa >= 8;
    for (ch = 0; ch < c4; ch += 4) {
        for (j = 0; j < 4; j++) {
            uint32_t swt = 0;
            int32_t t;
            if (is5x5) { /* the rows' sums in the same pass as the window's (a 3x3 map of 576 channels: a second
                          * pass over the weights cost mobilenet_v3s 96's 5x5 layers +7%) */
                const int8_t *wp = wt + ch + j;
                for (fy = 0; fy < 5; fy++) {
                    uint32_t sr = 0;
                    for (fx = 0; fx < 5; fx++, wp += c) sr += (uint32_t)*wp;
                    rs5[fy][j] = sr * (uint32_t)off;
                    swt += sr;
                }
            } else if (is3x3) { /* fb serves the 3x3 runs only: the other windows add the offset to each input
                                  * (hey_jarvis's 21x1, 60 channels: this sum was ~6,000 of its 20,080 instructions) */
                for (t = 0; t < 9; t++) swt += (uint32_t)wt[(int64_t)t * c + ch + j];
            }
            b4[j] = bias ? (uint32_t)bias[ch + j] : 0;
            run.fb[j] = b4[j] + swt * (uint32_t)off;
            if (!generic) run.q[j] = edge_rq_at(d->rq, d->oc, ch + j);
        }
        run.w = wt + ch;
        run.widened = 0; /* w16: widened at the group's first pair run */
        for (b = 0; b < n; b++) {
            for (oy = 0; oy < oh; oy++) {
                const int32_t iy0 = oy * sh - pt;
                const int64_t xrow0 = ((int64_t)b * h + iy0) * w * c + ch; /* an offset: may lie before x */
                int8_t *yp = y + ((int64_t)b * oh + oy) * ow * c + ch;
                edge_conv_taps(iy0, dh, h, kh, &fy0, &fy1);
                for (ox = 0; ox < ow; ox++, yp += c) {
                    const int32_t ix0 = ox * sw - pl;
                    uint32_t a0, a1, a2, a3;
                    if (ox == oxa && fy1 - fy0 == kh && is3x3 && oxa < oxb) { /* the run of inside windows */
                        if (generic) { /* raw inputs from fb as the run, pixel by pixel */
                            for (; ox < oxb; ox++, yp += c) {
                                a0 = run.fb[0], a1 = run.fb[1], a2 = run.fb[2], a3 = run.fb[3];
                                DW_3X3(x + xrow0 + (int64_t)(ox * sw - pl) * c, run.w, xstep, c, xrow, wrow, a0, a1,
                                       a2, a3);
                                dw_store4_generic(d, a0, a1, a2, a3, ch, yp);
                            }
                            ox--, yp -= c; /* the loop steps to oxb */
                            continue;
                        }
                        run.x = x + xrow0 + (int64_t)ix0 * c;
                        run.y = yp;
                        run.n = oxb - oxa;
                        if (EDGE_WITH_DW_PAIRS && pairs && run.n >= 2) dw_run3x3_pairs(&run, c);
                        else dw_run3x3(&run, xstep, c);
                        ox = oxb - 1, yp += (int64_t)(oxb - oxa - 1) * c; /* the loop steps to oxb */
                        continue;
                    }
                    if (ox == oxa && fy1 - fy0 == kh && is5x5 && oxa < oxb) { /* inside 5x5 windows */
                        for (; ox < oxb; ox++, yp += c) { /* raw inputs from fb, pixel by pixel */
                            a0 = run.fb[0], a1 = run.fb[1], a2 = run.fb[2], a3 = run.fb[3];
                            DW_5X5(x + xrow0 + (int64_t)(ox * sw - pl) * c, run.w, xstep, c, xrow, wrow, a0, a1,
                                   a2, a3);
                            if (generic) dw_store4_generic(d, a0, a1, a2, a3, ch, yp);
                            else dw_store4(a0, a1, a2, a3, run.q, yp, &run.o);
                        }
                        ox--, yp -= c; /* the loop steps to oxb */
                        continue;
                    }
                    /* the taps inside the input, the offset added to each input */
                    a0 = b4[0], a1 = b4[1], a2 = b4[2], a3 = b4[3];
                    edge_conv_taps(ix0, dwx, w, kw, &fx0, &fx1);
                    if (is5x5 && fx1 - fx0 == 5 && fy1 > fy0) { /* whole rows (clipped above or below only) */
                        for (fy = fy0; fy < fy1; fy++) /* their raw inputs from the rows' folded offsets */
                            a0 += rs5[fy][0], a1 += rs5[fy][1], a2 += rs5[fy][2], a3 += rs5[fy][3];
                        DW_5ROWS(x + (xrow0 + (int64_t)fy0 * xrow + (int64_t)ix0 * c), wt + (int64_t)fy0 * wrow + ch,
                                 fy1 - fy0, xstep, c, xrow, wrow, a0, a1, a2, a3);
                    } else if (iscol) { /* a column filter (hey_jarvis's 5x1 .. 21x1): its valid taps in one run
                                           * down the column, where a run a row took ~30 instructions a tap */
                        if (fx1 > fx0 && fy1 > fy0)
                            DW_ROW4(x + (xrow0 + (int64_t)fy0 * xrow + (int64_t)ix0 * c), wt + (int64_t)fy0 * c + ch,
                                    fy1 - fy0, xrow, c, off2, a0, a1, a2, a3);
                    } else if (fx1 > fx0)
                        for (fy = fy0; fy < fy1; fy++)
                            DW_ROW4(x + (xrow0 + (int64_t)fy * xrow + (int64_t)(ix0 + fx0 * dwx) * c),
                                    wt + ((int64_t)fy * kw + fx0) * c + ch, fx1 - fx0, xstep, c, off2, a0, a1, a2, a3);
                    if (generic) dw_store4_generic(d, a0, a1, a2, a3, ch, yp);
                    else dw_store4(a0, a1, a2, a3, run.q, yp, &run.o);
                }
            }
        }
    }
    for (; ch < c; ch++) { /* the c % 4 channels: the reference loop */
        for (b = 0; b < d->n; b++) {
            for (oy = 0; oy < d->geo.oh; oy++) {
                const int32_t iy0 = oy * d->sh - d->geo.pt;
                edge_conv_taps(iy0, d->dh, d->geo.h, kh, &fy0, &fy1);
                for (ox = 0; ox < d->geo.ow; ox++) {
                    const int32_t ix0 = ox * d->sw - d->geo.pl;
                    uint32_t acc = bias ? (uint32_t)bias[ch] : 0;
                    edge_conv_taps(ix0, d->dw, d->geo.w, kw, &fx0, &fx1);
                    for (fy = fy0; fy < fy1; fy++) {
                        const int64_t xo = (((int64_t)b * d->geo.h + iy0 + fy * d->dh) * d->geo.w + ix0) * c + ch;
                        const int8_t *wr = wt + (int64_t)fy * kw * c + ch;
                        for (fx = fx0; fx < fx1; fx++)
                            acc += (uint32_t)((x[xo + (int64_t)fx * xstep] + off) * wr[(int64_t)fx * c]);
                    }
                    y[(((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * c + ch] = dw_out8(d, acc, ch);
                }
            }
        }
    }
}
/* generic (a ratio edge_rq does not cover: the same sums, edge_conv_rqw / edge_mbqm per channel) a constant in
 * each copy of the body, so that the common layer's loop carries no trace of it. */
/* EDGE_WITH_DW_5X5=0 / EDGE_WITH_DW_COLUMN=0 (gen_ops.py path_defines: a firmware for models without a 5x5 / a
 * kh x 1 multiplier-1 layer) leave that copy out (~1.5 KB of .text each: person_detect's M4 runtime is within
 * 32 KB by a few hundred bytes). */
#ifndef EDGE_WITH_DW_5X5
#define EDGE_WITH_DW_5X5 1
#endif
#ifndef EDGE_WITH_DW_COLUMN
#define EDGE_WITH_DW_COLUMN 1
#endif
/* A column filter over a one-column input ([n, h, 1, c] -> [n, oh, 1, c], kh x 1: a streaming keyword net's
 * temporal depthwise, hey_jarvis's 5x1 .. 21x1 at one output position an invoke): per group of four channels the
 * requantization unpacked once, per output row the bias, the valid taps in one DW_ROW4 run down the column (input
 * and weights step by c alike) and one dw_store4; the c % 4 channels by the reference loop. The general body's
 * per-pixel bookkeeping (the inside-run tests, the column taps, the generic / 3x3 / 5x5 branches) cost ~400
 * instructions a group of four channels there, 2-3x the taps of a window of 5..13. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void dw_int8_col(const dw_data_t *d, const int8_t *x, const int8_t *wt, const int32_t *bias, int8_t *y) {
    const int32_t c = d->c, c4 = c & ~3, kh = d->kh, h = d->geo.h, oh = d->geo.oh, sh = d->sh, dh = d->dh;
    const int32_t pt = d->geo.pt, n = d->n, xrow = dh * c, off = d->input_offset;
    const uint32_t off2 = (uint32_t)(uint16_t)off * 0x10001u;
    dw_out_t o;
    edge_rq_t q[4];
    int32_t ch, b, oy, fy, fy0, fy1;
    o.zp = d->output_offset;
    o.lo = d->lo;
    o.hi = d->hi;
    o.lo4 = (uint32_t)(uint8_t)d->lo * 0x01010101u;
    o.hi4 = (uint32_t)(uint8_t)d->hi * 0x01010101u;
    for (ch = 0; ch < c4; ch += 4) {
        const uint32_t b0 = bias ? (uint32_t)bias[ch] : 0, b1 = bias ? (uint32_t)bias[ch + 1] : 0;
        const uint32_t b2 = bias ? (uint32_t)bias[ch + 2] : 0, b3 = bias ? (uint32_t)bias[ch + 3] : 0;
        q[0] = edge_rq_at(d->rq, d->oc, ch);
        q[1] = edge_rq_at(d->rq, d->oc, ch + 1);
        q[2] = edge_rq_at(d->rq, d->oc, ch + 2);
        q[3] = edge_rq_at(d->rq, d->oc, ch + 3);
        for (b = 0; b < n; b++) {
            const int8_t *xb = x + (int32_t)b * h * c + ch; /* [n, h, 1, c] fits 31 bits (an arena tensor) */
            int8_t *yp = y + (int32_t)b * oh * c + ch;
            for (oy = 0; oy < oh; oy++, yp += c) {
                const int32_t iy0 = oy * sh - pt;
                uint32_t a0 = b0, a1 = b1, a2 = b2, a3 = b3;
                edge_conv_taps(iy0, dh, h, kh, &fy0, &fy1);
                if (fy1 > fy0)
                    DW_ROW4(xb + (iy0 + fy0 * dh) * c, wt + fy0 * c + ch, fy1 - fy0, xrow, c, off2, a0, a1, a2, a3);
                dw_store4(a0, a1, a2, a3, q, yp, &o);
            }
        }
    }
    for (; ch < c; ch++) /* the c % 4 channels */
        for (b = 0; b < n; b++)
            for (oy = 0; oy < oh; oy++) {
                const int32_t iy0 = oy * sh - pt;
                uint32_t acc = bias ? (uint32_t)bias[ch] : 0;
                edge_conv_taps(iy0, dh, h, kh, &fy0, &fy1);
                for (fy = fy0; fy < fy1; fy++)
                    acc += (uint32_t)((x[((int32_t)b * h + iy0 + fy * dh) * c + ch] + off) * wt[fy * c + ch]);
                y[((int32_t)b * oh + oy) * c + ch] = dw_out8(d, acc, ch);
            }
}

static void dw_int8_m1(const dw_data_t *d, const int8_t *x, const int8_t *wt, const int32_t *bias, int8_t *y) {
    if (d->rq_generic) dw_int8_m1_body(d, x, wt, bias, y, 1, 0);
    else if (EDGE_WITH_DW_COLUMN && d->kw == 1 && d->geo.w == 1 && d->geo.ow == 1 && d->geo.pl == 0)
        dw_int8_col(d, x, wt, bias, y);
    else if (EDGE_WITH_DW_5X5 && d->kh == 5 && d->kw == 5) dw_int8_m1_body(d, x, wt, bias, y, 0, 5);
    else if (EDGE_WITH_DW_COLUMN && d->kw == 1) dw_int8_m1_body(d, x, wt, bias, y, 0, 1);
    else dw_int8_m1_body(d, x, wt, bias, y, 0, 0);
}

/* a0..a3 (four outputs) += n >= 1 groups of four taps: four staged inputs (one LDR) widened by SXTAB16 into
 * (x0, x2) and (x1, x3) with the input offset added to both halves, each output's pre-paired weights (one LDRD)
 * multiplied by two SMLAD. 17 instructions per 16 multiply-accumulates. */
#if EDGE_DSP_ASM
#define DW_MULT4(xp0, wp0, n0, OFF2, a0, a1, a2, a3)                                                      \
    do {                                                                                                  \
        const int8_t *xp_ = (xp0);                                                                        \
        const uint32_t *wp_ = (wp0);                                                                      \
        int32_t n_ = (n0);                                                                                \
        uint32_t xa_, xb_, w0_, w1_;                                                                      \
        __asm__ volatile("1:\n\t"                                                                         \
                         "ldr %[xb], [%[xp]], #4\n\t"                                                     \
                         "sxtab16 %[xa], %[o2], %[xb]\n\t"                                                \
                         "sxtab16 %[xb], %[o2], %[xb], ror #8\n\t"                                        \
                         "ldrd %[w0], %[w1], [%[wp]], #8\n\t"                                             \
                         "smlad %[a0], %[xa], %[w0], %[a0]\n\t"                                           \
                         "smlad %[a0], %[xb], %[w1], %[a0]\n\t"                                           \
                         "ldrd %[w0], %[w1], [%[wp]], #8\n\t"                                             \
                         "smlad %[a1], %[xa], %[w0], %[a1]\n\t"                                           \
                         "smlad %[a1], %[xb], %[w1], %[a1]\n\t"                                           \
                         "ldrd %[w0], %[w1], [%[wp]], #8\n\t"                                             \
                         "smlad %[a2], %[xa], %[w0], %[a2]\n\t"                                           \
                         "smlad %[a2], %[xb], %[w1], %[a2]\n\t"                                           \
                         "ldrd %[w0], %[w1], [%[wp]], #8\n\t"                                             \
                         "smlad %[a3], %[xa], %[w0], %[a3]\n\t"                                           \
                         "smlad %[a3], %[xb], %[w1], %[a3]\n\t"                                           \
                         "subs %[n], %[n], #1\n\t"                                                        \
                         "bne 1b"                                                                         \
                         : [xp] "+&r"(xp_), [wp] "+&r"(wp_), [n] "+&r"(n_), [a0] "+&r"(a0), [a1] "+&r"(a1), \
                           [a2] "+&r"(a2), [a3] "+&r"(a3), [xa] "=&r"(xa_), [xb] "=&r"(xb_), [w0] "=&r"(w0_), \
                           [w1] "=&r"(w1_)                                                                \
                         : [o2] "r"(OFF2)                                                                 \
                         : "cc", "memory");                                                               \
    } while (0)
#else
#define DW_MULT4(xp0, wp0, n0, OFF2, a0, a1, a2, a3)                                                      \
    do {                                                                                                  \
        const int8_t *xp_ = (xp0);                                                                        \
        const uint32_t *wp_ = (wp0);                                                                      \
        int32_t n_;                                                                                       \
        for (n_ = (n0); n_ > 0; n_--, xp_ += 4, wp_ += 8) {                                               \
            uint32_t xv_, xa_, xb_;                                                                       \
            memcpy(&xv_, xp_, 4);                                                                         \
            xa_ = edge_sadd16(edge_sxtb16(xv_), (OFF2));                                                  \
            xb_ = edge_sadd16(edge_sxtb16_ror8(xv_), (OFF2));                                             \
            a0 = edge_smlad(xb_, wp_[1], edge_smlad(xa_, wp_[0], a0));                                    \
            a1 = edge_smlad(xb_, wp_[3], edge_smlad(xa_, wp_[2], a1));                                    \
            a2 = edge_smlad(xb_, wp_[5], edge_smlad(xa_, wp_[4], a2));                                    \
            a3 = edge_smlad(xb_, wp_[7], edge_smlad(xa_, wp_[6], a3));                                    \
        }                                                                                                 \
    } while (0)
#endif

/* Depth multiplier m % 4 == 0 on DSP cores (mult_w): per output pixel and input channel, the window's rows
 * inside the input are staged as kwp bytes each (the input zero point where a tap falls in the padding or
 * past kw: (x + input_offset) = 0 adds nothing; rows outside the input are skipped, and their weights), then
 * every group of four outputs runs DW_MULT4 over the staged taps from its bias and stores four bytes. Each
 * input value is loaded once per group (CMSIS-NN loads it once per output). The sums are the reference's mod
 * 2^32, the requantization edge_rq (dw_store4) or edge_mbqm: bit-exact. */
#if EDGE_DSP_ASM
/* dw_mult8_group's asm loops (the C loop spilled: 4.5 instructions per MAC on the M4; these: 36 per 16 MACs, every
 * value in a register). DW8_X: the next staged word, SXTAB16 into (x0, x2) / (x1, x3) with the input offset;
 * DW8_MAC4(XH, B): the tap word wv widened (SXTB16: (w0, w2) / (w1, w3) of outputs ch..ch+3) times the bottom ("b")
 * or top ("t") half of XH, into a0..a3; DW8_LOOP: on to the window's end. */
#define DW8_X                                                                                               \
    "ldr %[x13], [%[win]], #4\n\t"                                                                          \
    "sxtab16 %[x02], %[o2], %[x13]\n\t"                                                                     \
    "sxtab16 %[x13], %[o2], %[x13], ror #8\n\t"
#define DW8_MAC4(XH, B)                                                                                     \
    "sxtb16 %[w13], %[wv], ror #8\n\t"                                                                      \
    "sxtb16 %[wv], %[wv]\n\t"                                                                               \
    "smlab" B " %[a0], %[wv], %[" XH "], %[a0]\n\t"                                                         \
    "smlat" B " %[a2], %[wv], %[" XH "], %[a2]\n\t"                                                         \
    "smlab" B " %[a1], %[w13], %[" XH "], %[a1]\n\t"                                                        \
    "smlat" B " %[a3], %[w13], %[" XH "], %[a3]\n\t"
#define DW8_LOOP "ldr %[wv], %[end]\n\tcmp %[win], %[wv]\n\tbne 1b"
#define DW8_OUTPUTS                                                                                         \
    [win] "+&r"(win), [wr] "+&r"(wr), [a0] "+&r"(a0), [a1] "+&r"(a1), [a2] "+&r"(a2), [a3] "+&r"(a3),          \
        [x02] "=&r"(x02), [x13] "=&r"(x13), [wv] "=&r"(wv), [w13] "=&r"(w13)
#define DW8_INPUTS [oc] "r"(oc), [o2] "r"(off2), [end] "m"(end)
#endif

/* The 8-bit filter (the least-RAM request): outputs ch..ch+3 += their taps over the staged window rows (kwp bytes
 * each, the zero point in the padding) from wr, the weight word of those outputs at the first staged row's tap 0
 * (the next tap oc bytes on). Four taps at a time: one word of staged inputs, SXTAB16 adds the offset into
 * (x0, x2) / (x1, x3); each tap's weight word SXTB16 into (w0, w2) / (w1, w3); SMLAxy picks the halves (2 instructions
 * per MAC). The last kw % 4 taps from their staged word as well (a 3x3 filter: all of them), their weights only (a
 * tap past kw would read past the filter); they ran one by one, each input widened alone (person_detect's node 0
 * under the least-RAM request: 15.3 instructions per MAC). */
static void dw_mult8_group(const int8_t *win, const int8_t *wr, int32_t rows, int32_t kw, int32_t kwp, int32_t oc,
                           uint32_t off2, uint32_t *p0, uint32_t *p1, uint32_t *p2, uint32_t *p3) {
    uint32_t a0 = *p0, a1 = *p1, a2 = *p2, a3 = *p3;
    const int32_t k4 = kw & ~3;
    int32_t fy, fx;
#if EDGE_DSP_ASM
    if (rows > 0 && (kw == k4 || (kw == 3 && kwp == 4))) {
        const int8_t *const end = win + rows * kwp;
        uint32_t x02, x13, wv, w13;
        if (kw == k4) /* kw % 4 == 0 (micro_speech's 10x8): rows * kw / 4 words, the filter's taps contiguous */
            __asm__ volatile("1:\n\t" DW8_X "ldr %[wv], [%[wr]]\n\t" DW8_MAC4("x02", "b")
                             "ldr %[wv], [%[wr], %[oc]]\n\t" DW8_MAC4("x13", "b")
                             "ldr %[wv], [%[wr], %[oc], lsl #1]\n\t"
                             "add %[wr], %[wr], %[oc], lsl #1\n\t" DW8_MAC4("x02", "t")
                             "ldr %[wv], [%[wr], %[oc]]\n\t"
                             "add %[wr], %[wr], %[oc], lsl #1\n\t" DW8_MAC4("x13", "t") DW8_LOOP
                             : DW8_OUTPUTS : DW8_INPUTS : "cc", "memory");
        else /* 3 wide (person_detect's node 0): a word per row, its three taps, the next row 3 * oc bytes on */
            __asm__ volatile("1:\n\t" DW8_X "ldr %[wv], [%[wr]]\n\t" DW8_MAC4("x02", "b")
                             "ldr %[wv], [%[wr], %[oc]]\n\t" DW8_MAC4("x13", "b")
                             "ldr %[wv], [%[wr], %[oc], lsl #1]\n\t"
                             "add %[wr], %[wr], %[oc], lsl #1\n\t"
                             "add %[wr], %[wr], %[oc]\n\t" DW8_MAC4("x02", "t") DW8_LOOP
                             : DW8_OUTPUTS : DW8_INPUTS : "cc", "memory");
        *p0 = a0, *p1 = a1, *p2 = a2, *p3 = a3;
        return;
    }
#endif
    for (fy = 0; fy < rows; fy++, win += kwp) {
        for (fx = 0; fx < k4; fx += 4, wr += 4 * oc) {
            const uint32_t xv = edge_get32(win + fx), x02 = edge_sadd16(edge_sxtb16(xv), off2),
                           x13 = edge_sadd16(edge_sxtb16_ror8(xv), off2);
            uint32_t wv = edge_get32(wr), w02 = edge_sxtb16(wv), w13 = edge_sxtb16_ror8(wv);
            a0 = edge_smlabb(w02, x02, a0); /* tap 0: x0 */
            a2 = edge_smlatb(w02, x02, a2);
            a1 = edge_smlabb(w13, x02, a1);
            a3 = edge_smlatb(w13, x02, a3);
            wv = edge_get32(wr + oc), w02 = edge_sxtb16(wv), w13 = edge_sxtb16_ror8(wv);
            a0 = edge_smlabb(w02, x13, a0); /* tap 1: x1 */
            a2 = edge_smlatb(w02, x13, a2);
            a1 = edge_smlabb(w13, x13, a1);
            a3 = edge_smlatb(w13, x13, a3);
            wv = edge_get32(wr + 2 * oc), w02 = edge_sxtb16(wv), w13 = edge_sxtb16_ror8(wv);
            a0 = edge_smlabt(w02, x02, a0); /* tap 2: x2 */
            a2 = edge_smlatt(w02, x02, a2);
            a1 = edge_smlabt(w13, x02, a1);
            a3 = edge_smlatt(w13, x02, a3);
            wv = edge_get32(wr + 3 * oc), w02 = edge_sxtb16(wv), w13 = edge_sxtb16_ror8(wv);
            a0 = edge_smlabt(w02, x13, a0); /* tap 3: x3 */
            a2 = edge_smlatt(w02, x13, a2);
            a1 = edge_smlabt(w13, x13, a1);
            a3 = edge_smlatt(w13, x13, a3);
        }
        if (fx < kw) { /* the last kw % 4 taps: their staged word (kwp bytes a row), taps past kw never read */
            const uint32_t xv = edge_get32(win + fx), x02 = edge_sadd16(edge_sxtb16(xv), off2),
                           x13 = edge_sadd16(edge_sxtb16_ror8(xv), off2);
            uint32_t wv = edge_get32(wr), w02 = edge_sxtb16(wv), w13 = edge_sxtb16_ror8(wv);
            a0 = edge_smlabb(w02, x02, a0); /* tap 0: x0 */
            a2 = edge_smlatb(w02, x02, a2);
            a1 = edge_smlabb(w13, x02, a1);
            a3 = edge_smlatb(w13, x02, a3);
            wr += oc;
            if (fx + 1 < kw) {
                wv = edge_get32(wr), w02 = edge_sxtb16(wv), w13 = edge_sxtb16_ror8(wv);
                a0 = edge_smlabb(w02, x13, a0); /* tap 1: x1 */
                a2 = edge_smlatb(w02, x13, a2);
                a1 = edge_smlabb(w13, x13, a1);
                a3 = edge_smlatb(w13, x13, a3);
                wr += oc;
            }
            if (fx + 2 < kw) {
                wv = edge_get32(wr), w02 = edge_sxtb16(wv), w13 = edge_sxtb16_ror8(wv);
                a0 = edge_smlabt(w02, x02, a0); /* tap 2: x2 */
                a2 = edge_smlatt(w02, x02, a2);
                a1 = edge_smlabt(w13, x02, a1);
                a3 = edge_smlatt(w13, x02, a3);
                wr += oc;
            }
        }
    }
    *p0 = a0, *p1 = a1, *p2 = a2, *p3 = a3;
}

/* Channels ch..ch+3 without an unpacked requantization (the least-RAM request): edge_rq's layer rebuilds the four
 * channels' edge_rq_t from the compact form for dw_store4, a generic one takes dw_store4_generic. Out of line: the
 * default plan's loop (mult_q) keeps its registers. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void dw_store4_compact(const dw_data_t *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, int32_t ch,
                              int8_t *yp, const dw_out_t *o) {
    edge_rq_t q4[4];
    int32_t j;
    if (d->rq_generic) {
        dw_store4_generic(d, a0, a1, a2, a3, ch, yp);
        return;
    }
    for (j = 0; j < 4; j++) q4[j] = edge_rq_at(d->rq, d->oc, ch + j);
    dw_store4(a0, a1, a2, a3, q4, yp, o);
}

static void dw_int8_mult(const dw_data_t *d, const int8_t *x, const int8_t *wt, const int32_t *bias, int8_t *y,
                         int8_t *win) {
    const int32_t c = d->c, m = d->m, oc = d->oc, kh = d->kh, kw = d->kw, kwp = d->kwp, nq = d->kwp / 4;
    const int32_t h = d->geo.h, w = d->geo.w, oh = d->geo.oh, ow = d->geo.ow, dh = d->dh, dwx = d->dw;
    const int32_t groups = m / 4, zp = -d->input_offset, gwords = kh * nq * 8; /* words per (ic, group) */
    const uint32_t off2 = (uint32_t)(uint16_t)d->input_offset * 0x10001u;
    const uint32_t fill4 = (uint32_t)(uint8_t)zp * 0x01010101u;
    const ptrdiff_t xrow = (ptrdiff_t)dh * w * c, xstep = (ptrdiff_t)dwx * c;
    const ptrdiff_t xbytes = (ptrdiff_t)d->n * h * w * c; /* a word copy may read kwp - kw bytes past a row */
    const int contiguous = c == 1 && dwx == 1;           /* a window row is kw consecutive bytes */
    dw_out_t o;
    int32_t b, oy, ox, ic, g, fy, fx, fy0, fy1, fx0, fx1, q;
    o.zp = d->output_offset;
    o.lo = d->lo;
    o.hi = d->hi;
    o.lo4 = (uint32_t)(uint8_t)d->lo * 0x01010101u;
    o.hi4 = (uint32_t)(uint8_t)d->hi * 0x01010101u;
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            edge_conv_taps(iy0, dh, h, kh, &fy0, &fy1);
            for (ox = 0; ox < ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl, rows = fy1 - fy0;
                int8_t *yp = y + (((ptrdiff_t)b * oh + oy) * ow + ox) * oc;
                /* offset of channel 0's tap (fy0, 0): may lie outside x (only taps in [fx0, fx1) are read) */
                const ptrdiff_t at0 = (((ptrdiff_t)b * h + iy0 + fy0 * dh) * w + ix0) * c;
                edge_conv_taps(ix0, dwx, w, kw, &fx0, &fx1);
                for (ic = 0; ic < c; ic++, yp += m) {
                    const uint32_t *wg = d->mult_w ? d->mult_w + (ptrdiff_t)ic * groups * gwords +
                                                         (ptrdiff_t)fy0 * nq * 8 : 0;
                    ptrdiff_t at = at0 + ic;
                    int8_t *row = win;
                    if (contiguous && fx0 == 0 && fx1 == kw && at + (rows - 1) * xrow + kwp <= xbytes) {
                        for (fy = 0; fy < rows; fy++, row += kwp, at += xrow) /* kw..kwp: weight 0 */
                            for (q = 0; q < kwp; q += 4) edge_put32(row + q, edge_get32(x + at + q));
                    } else if (contiguous) {
                        for (fy = 0; fy < rows; fy++, row += kwp, at += xrow) {
                            for (q = 0; q < kwp; q += 4) edge_put32(row + q, fill4);
                            for (fx = fx0; fx < fx1; fx++) row[fx] = x[at + fx];
                        }
                    } else {
                        for (fy = 0; fy < rows; fy++, row += kwp, at += xrow)
                            for (fx = 0; fx < kwp; fx++)
                                row[fx] = (int8_t)(fx >= fx0 && fx < fx1 ? x[at + fx * xstep] : zp);
                    }
                    for (g = 0; g < groups; g++, wg += wg ? gwords : 0) {
                        const int32_t ch = ic * m + 4 * g;
                        uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
                        if (bias) a0 = (uint32_t)bias[ch], a1 = (uint32_t)bias[ch + 1], a2 = (uint32_t)bias[ch + 2],
                                  a3 = (uint32_t)bias[ch + 3];
                        if (rows > 0 && wg) {
                            DW_MULT4(win, wg, rows * nq, off2, a0, a1, a2, a3);
                        } else if (EDGE_WITH_MEMORY_MIN && rows > 0) { /* wg NULL: the least-RAM request's */
                            dw_mult8_group(win, wt + ((ptrdiff_t)fy0 * kw * oc + ch), rows, kw, kwp, oc, off2,
                                           &a0, &a1, &a2, &a3);
                        }
                        if (d->mult_q) dw_store4(a0, a1, a2, a3, d->mult_q + ch, yp + 4 * g, &o);
                        else dw_store4_compact(d, a0, a1, a2, a3, ch, yp + 4 * g, &o);
                    }
                }
            }
        }
    }
}
#endif


/* acc[i] += (x[i] + off) * w[i] for n channels: restrict (the int8 loads may not alias the sums) and blocks of
 * 16, so that GCC -O2's very-cheap vectorizer takes the loop on the host. */
static void dw_tap(uint32_t *restrict acc, const int8_t *restrict x, const int8_t *restrict w, int32_t n, int32_t off) {
    int32_t i = 0, j;
    for (; i + 16 <= n; i += 16) {
        uint32_t *restrict a = acc + i;
        const int8_t *restrict xa = x + i, *restrict wa = w + i;
        for (j = 0; j < 16; j++) a[j] += (uint32_t)((xa[j] + off) * wa[j]);
    }
    for (; i < n; i++) acc[i] += (uint32_t)((x[i] + off) * w[i]);
}

static void dw_int8(const dw_data_t *d, const int8_t *x, const int8_t *wt, const int32_t *bias, int8_t *y,
                    uint32_t *acc) {
    const int32_t off = d->input_offset, c = d->c, m = d->m, oc = d->oc;
    int32_t b, oy, ox, fy, fx, i, j, fy0, fy1, fx0, fx1;
#if EDGE_DSP
    if (m == 1) {
        (void)acc;
        dw_int8_m1(d, x, wt, bias, y);
        return;
    }
#endif
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->geo.oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            edge_conv_taps(iy0, d->dh, d->geo.h, d->kh, &fy0, &fy1);
            for (ox = 0; ox < d->geo.ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl;
                int8_t *yp = y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * oc;
                edge_conv_taps(ix0, d->dw, d->geo.w, d->kw, &fx0, &fx1);
                /* every channel at once, one tap at a time (contiguous, vectorizable loops) */
                if (bias) {
                    for (j = 0; j < oc; j++) acc[j] = (uint32_t)bias[j];
                } else {
                    memset(acc, 0, sizeof(uint32_t) * (size_t)oc);
                }
                for (fy = fy0; fy < fy1; fy++) {
                    const int32_t iy = iy0 + fy * d->dh;
                    for (fx = fx0; fx < fx1; fx++) {
                        const int32_t ix = ix0 + fx * d->dw;
                        const int8_t *xp = x + (((int64_t)b * d->geo.h + iy) * d->geo.w + ix) * c;
                        const int8_t *wp = wt + ((int64_t)fy * d->kw + fx) * oc;
                        if (m == 1) {
                            dw_tap(acc, xp, wp, c, off);
                        } else {
                            for (i = 0; i < c; i++) {
                                const int32_t xv = xp[i] + off;
                                for (j = 0; j < m; j++) acc[i * m + j] += (uint32_t)(xv * wp[i * m + j]);
                            }
                        }
                    }
                }
                for (j = 0; j < oc; j++) yp[j] = dw_out8(d, acc[j], j);
            }
        }
    }
}

/* int8 with a filter offset (legacy per-tensor weights): LiteRT's reference uint8 loop, every output channel
 * ic * m + j of every pixel summed over the window's taps inside the input. */
static void dw_int8_offset(const dw_data_t *d, const int8_t *x, const int8_t *wt, const int32_t *bias, int8_t *y) {
    const int32_t off = d->input_offset, fo = d->filter_offset, c = d->c, m = d->m, oc = d->oc;
    int32_t b, oy, ox, fy, fx, ch, fy0, fy1, fx0, fx1;
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->geo.oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            edge_conv_taps(iy0, d->dh, d->geo.h, d->kh, &fy0, &fy1);
            for (ox = 0; ox < d->geo.ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl;
                int8_t *yp = y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * oc;
                edge_conv_taps(ix0, d->dw, d->geo.w, d->kw, &fx0, &fx1);
                for (ch = 0; ch < oc; ch++) {
                    uint32_t acc = bias ? (uint32_t)bias[ch] : 0u;
                    for (fy = fy0; fy < fy1; fy++) {
                        const int32_t iy = iy0 + fy * d->dh;
                        for (fx = fx0; fx < fx1; fx++) {
                            const int32_t ix = ix0 + fx * d->dw;
                            const int32_t xv = x[(((int64_t)b * d->geo.h + iy) * d->geo.w + ix) * c + ch / m] + off;
                            acc += (uint32_t)(xv * (wt[((int64_t)fy * d->kw + fx) * oc + ch] + fo));
                        }
                    }
                    yp[ch] = dw_out8(d, acc, ch);
                }
            }
        }
    }
}

static void dw_int16(const dw_data_t *d, const int16_t *x, const int8_t *wt, const int64_t *bias, int16_t *y) {
    int32_t b, oy, ox, ic, j, fy, fx, fy0, fy1, fx0, fx1;
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->geo.oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            edge_conv_taps(iy0, d->dh, d->geo.h, d->kh, &fy0, &fy1);
            for (ox = 0; ox < d->geo.ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl;
                int16_t *yp = y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * d->oc;
                edge_conv_taps(ix0, d->dw, d->geo.w, d->kw, &fx0, &fx1);
                for (ic = 0; ic < d->c; ic++) {
                    for (j = 0; j < d->m; j++) {
                        const int32_t ch = ic * d->m + j;
                        int64_t acc = 0;
                        int32_t r;
                        for (fy = fy0; fy < fy1; fy++) {
                            const int32_t iy = iy0 + fy * d->dh;
                            const int16_t *xr = x + ((int64_t)b * d->geo.h + iy) * d->geo.w * d->c + ic;
                            const int8_t *wr = wt + (int64_t)fy * d->kw * d->oc + ch;
                            for (fx = fx0; fx < fx1; fx++)
                                acc += (int32_t)xr[(int64_t)(ix0 + fx * d->dw) * d->c] * wr[(int64_t)fx * d->oc];
                        }
                        if (bias) acc = edge_conv_add64(acc, bias[ch]);
                        r = edge_mbqm64(acc, edge_conv_mult(d->rq, ch), edge_conv_shift(d->rq, d->oc, ch));
                        yp[ch] = (int16_t)edge_clamp32(r, d->lo, d->hi);
                    }
                }
            }
        }
    }
}

static void dw_float(const dw_data_t *d, const float *x, const float *wt, const float *bias, float *y) {
    float flo, fhi;
    int32_t b, oy, ox, ic, j, fy, fx, fy0, fy1, fx0, fx1;
    memcpy(&flo, &d->lo, 4);
    memcpy(&fhi, &d->hi, 4);
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->geo.oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            edge_conv_taps(iy0, d->dh, d->geo.h, d->kh, &fy0, &fy1);
            for (ox = 0; ox < d->geo.ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl;
                float *yp = y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * d->oc;
                edge_conv_taps(ix0, d->dw, d->geo.w, d->kw, &fx0, &fx1);
                for (ic = 0; ic < d->c; ic++) {
                    for (j = 0; j < d->m; j++) {
                        const int32_t ch = ic * d->m + j;
                        float acc = 0.0f;
                        for (fy = fy0; fy < fy1; fy++) {
                            const int32_t iy = iy0 + fy * d->dh;
                            const float *xr = x + ((int64_t)b * d->geo.h + iy) * d->geo.w * d->c + ic;
                            const float *wr = wt + (int64_t)fy * d->kw * d->oc + ch;
                            for (fx = fx0; fx < fx1; fx++)
                                acc += xr[(int64_t)(ix0 + fx * d->dw) * d->c] * wr[(int64_t)fx * d->oc];
                        }
                        if (bias) acc += bias[ch];
                        yp[ch] = acc < flo ? flo : (acc > fhi ? fhi : acc);
                    }
                }
            }
        }
    }
}

/* int8, M == 1, the output over the input (the least-RAM plan; TinyEngine's in-place depthwise): channel by
 * channel, the input channel is copied to the plane buffer first, then that channel's outputs are written.
 * Output channel ch only writes channel-ch slots (the same channel count), whose input values are already in
 * the plane; batch b's outputs end below batch b + 1's inputs (oh * ow <= h * w). The same sums (mod 2^32)
 * and the same requantization (dw_out8) as dw_int8: bit-exact. A channel's taps (weight + filter offset) are read
 * once into DW_PLANE_TAPS int16 on the stack (a filter of more taps reads them in place) and indices stay 32-bit
 * (the plane is h x w bytes of one channel; the arena is below 2^31): mobilenet_v2's 3x3 layers took ~38
 * instructions more per MAC than dw_int8 on a Cortex-M4 with every tap's weight read at a 64-bit index.
 * On DSP cores the windows inside the input (dw_plane_run) take four taps of a row per word instead. */
#define DW_PLANE_TAPS 25 /* up to 5x5: 50 bytes of stack */

#if EDGE_DSP
#define DW_PLANE_WORDS 32 /* paired weight words on the stack: kh * ceil(kw / 4) * 2 (up to 8x8, 16x4) */

/* One channel's taps paired for SMLAD (wp: per filter row fy and word q of four taps, (w[4q], w[4q+2]) and
 * (w[4q+1], w[4q+3]) as int16 halves, weight + filter offset, 0 past kw), the halves SXTAB16 makes of a word of
 * four inputs: (x0, x2) and (x1, x3). Returns the words per row (0: no DSP run, the layer's filter too big). */
static int32_t dw_plane_pair(const dw_data_t *d, const int8_t *wt, int32_t ch, uint32_t *wp) {
    const int32_t kw = d->kw, nq = (kw + 3) / 4, c = d->c, fo = d->filter_offset;
    int32_t fy, fx;
    if (d->dw != 1 || d->kh * nq * 2 > DW_PLANE_WORDS) return 0;
    for (fy = 0; fy < d->kh; fy++)
        for (fx = 0; fx < 4 * nq; fx++) {
            const uint32_t v = fx < kw ? (uint32_t)(uint16_t)(int16_t)(wt[(fy * kw + fx) * c + ch] + fo) : 0u;
            uint32_t *word = wp + (fy * nq + fx / 4) * 2 + (fx & 1);
            *word = (fx & 2) ? (*word | v << 16) : v;
        }
    return nq;
}

/* n >= 1 output pixels of one channel whose windows lie inside the plane (the first at p, the next sw bytes on;
 * the window rows xrow bytes apart), each word of four taps SXTAB16-widened with the input offset (int16: x + off
 * in [-255, 255]) and multiplied by two SMLAD: 5 instructions per row of a 3x3 window, whose 4th tap has weight 0
 * (the word may read one byte past the window: the caller keeps it inside the plane). The sums are the
 * reference's mod 2^32, requantized as dw_out8. */
#if defined(__GNUC__)
__attribute__((noinline)) /* its own registers: the caller's loop keeps the row's state */
#endif
static void dw_plane_run(const dw_data_t *d, const int8_t *p, int32_t n, const uint32_t *wp, int32_t nq,
                         uint32_t acc0, int8_t *y, int32_t ch) {
    const int32_t sw = d->sw, xrow = d->dh * d->geo.w, kh = d->kh, c = d->c;
    const int32_t zp = d->output_offset, lo = d->lo, hi = d->hi;
    const uint32_t off2 = (uint32_t)(uint16_t)d->input_offset * 0x10001u;
    const edge_rq_t q = d->rq_generic ? (edge_rq_t){0, 0} : edge_rq_at(d->rq, d->oc, ch);
    int32_t fy, k;
    if (kh == 3 && nq == 1 && !d->rq_generic) { /* 3x3: the six words in registers, no per-pixel dispatch */
        const uint32_t w0 = wp[0], w1 = wp[1], w2 = wp[2], w3 = wp[3], w4 = wp[4], w5 = wp[5];
        for (; n > 0; n--, p += sw, y += c) {
            uint32_t v = edge_get32(p), acc = edge_smlad(edge_sxtab16(off2, v), w0, acc0);
            acc = edge_smlad(edge_sxtab16_ror8(off2, v), w1, acc);
            v = edge_get32(p + xrow);
            acc = edge_smlad(edge_sxtab16(off2, v), w2, acc);
            acc = edge_smlad(edge_sxtab16_ror8(off2, v), w3, acc);
            v = edge_get32(p + 2 * xrow);
            acc = edge_smlad(edge_sxtab16(off2, v), w4, acc);
            acc = edge_smlad(edge_sxtab16_ror8(off2, v), w5, acc);
            *y = (int8_t)edge_clamp32(edge_rq_apply(&q, (int32_t)acc, zp), lo, hi);
        }
        return;
    }
    for (; n > 0; n--, p += sw, y += c) {
        const uint32_t *w = wp;
        const int8_t *r = p;
        uint32_t acc = acc0;
        for (fy = 0; fy < kh; fy++, r += xrow)
            for (k = 0; k < nq; k++, w += 2) {
                const uint32_t v = edge_get32(r + 4 * k);
                acc = edge_smlad(edge_sxtab16(off2, v), w[0], acc);
                acc = edge_smlad(edge_sxtab16_ror8(off2, v), w[1], acc);
            }
        *y = d->rq_generic ? dw_out8(d, acc, ch) : (int8_t)edge_clamp32(edge_rq_apply(&q, (int32_t)acc, zp), lo, hi);
    }
}

/* The output columns [*a, *b) of row oy whose windows dw_plane_run takes: every tap inside the input, and every
 * word it reads inside the plane (4 * nq bytes from a window row's left column: past the window they run into the
 * next rows, and on a plane narrower than the word past the last row's end unless the rows below leave room). */
static void dw_plane_cols(const dw_data_t *d, int32_t iy0, int32_t nq, int32_t *a, int32_t *b) {
    const int32_t w = d->geo.w, pl = d->geo.pl, sw = d->sw;
    const int32_t room = (d->geo.h - (iy0 + (d->kh - 1) * d->dh)) * w; /* bytes from the last window row's start */
    const int32_t last = w - d->kw < room - 4 * nq ? w - d->kw : room - 4 * nq; /* the largest left column */
    *a = pl > 0 ? (pl + sw - 1) / sw : 0;
    *b = last + pl >= 0 ? (last + pl) / sw + 1 : 0;
    if (*b > d->geo.ow) *b = d->geo.ow;
    if (*a > *b) *a = *b;
}
#endif

static void dw_int8_in_place(const dw_data_t *d, int8_t *buf, const int8_t *wt, const int32_t *bias,
                             int8_t *plane) {
    const int32_t c = d->c, off = d->input_offset, fo = d->filter_offset, kh = d->kh, kw = d->kw;
    const int32_t h = d->geo.h, w = d->geo.w, oh = d->geo.oh, ow = d->geo.ow, dh = d->dh, dwl = d->dw;
    const int32_t staged = kh * kw <= DW_PLANE_TAPS, zo = d->output_offset;
    int16_t taps[DW_PLANE_TAPS];
    int32_t b, ch, oy, ox, fy, fx, fy0, fy1, fx0, fx1, k, nq = 0, oxa = 0, oxb = 0;
#if EDGE_DSP
    uint32_t wp[DW_PLANE_WORDS];
#endif
    for (b = 0; b < d->n; b++) {
        const int8_t *xb = buf + (int64_t)b * h * w * c;
        int8_t *yb = buf + (int64_t)b * oh * ow * c;
        for (ch = 0; ch < c; ch++) {
            const uint32_t acc0 = bias ? (uint32_t)bias[ch] : 0u;
            const edge_rq_t q = d->rq_generic ? (edge_rq_t){0, 0} : edge_rq_at(d->rq, d->oc, ch);
            int8_t *y = yb + ch;
            for (k = 0; k < h * w; k++) plane[k] = xb[k * c + ch];
            if (staged)
                for (k = 0; k < kh * kw; k++) taps[k] = (int16_t)(wt[k * c + ch] + fo);
#if EDGE_DSP
            nq = dw_plane_pair(d, wt, ch, wp);
#endif
            for (oy = 0; oy < oh; oy++) {
                const int32_t iy0 = oy * d->sh - d->geo.pt;
                edge_conv_taps(iy0, dh, h, kh, &fy0, &fy1);
#if EDGE_DSP
                if (nq && fy0 == 0 && fy1 == kh) dw_plane_cols(d, iy0, nq, &oxa, &oxb);
                else oxa = oxb = 0;
#endif
                for (ox = 0; ox < ow; ox++, y += c) {
                    const int32_t ix0 = ox * d->sw - d->geo.pl;
                    uint32_t acc = acc0;
#if EDGE_DSP
                    if (ox == oxa && oxa < oxb) { /* the row's windows inside the plane */
                        dw_plane_run(d, plane + iy0 * w + ix0, oxb - oxa, wp, nq, acc0, y, ch);
                        y += (oxb - oxa - 1) * c, ox = oxb - 1; /* the loop steps to oxb */
                        continue;
                    }
#endif
                    edge_conv_taps(ix0, dwl, w, kw, &fx0, &fx1);
                    for (fy = fy0; fy < fy1; fy++) {
                        const int8_t *row = plane + (iy0 + fy * dh) * w + ix0;
                        if (staged) {
                            const int16_t *t = taps + fy * kw;
                            for (fx = fx0; fx < fx1; fx++) acc += (uint32_t)((row[fx * dwl] + off) * t[fx]);
                        } else {
                            for (fx = fx0; fx < fx1; fx++)
                                acc += (uint32_t)((row[fx * dwl] + off) * (wt[(fy * kw + fx) * c + ch] + fo));
                        }
                    }
                    *y = d->rq_generic ? dw_out8(d, acc, ch)
                                       : (int8_t)edge_clamp32(edge_rq_apply(&q, (int32_t)acc, zo), d->lo, d->hi);
                }
            }
        }
    }
    (void)nq, (void)oxa, (void)oxb;
}

#define DW_STACK_Q 16 /* channels eval unpacks on the stack for dw_int8_mult (8 bytes each) */

void edge_eval_depthwise_conv_2d(const edge_node_t *node, edge_ctx_t *ctx) {
    const dw_data_t *d = (const dw_data_t *)node->user_data;
    const edge_tensor_t *in = edge_in(ctx, node, 0), *w = edge_in(ctx, node, 1), *bt = edge_in(ctx, node, 2);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    dw_data_t patch; /* a patch window (edge_window_t), or the unpacked requantization below */
#if EDGE_DSP
    edge_rq_t stack_q[DW_STACK_Q];
#endif
    if (edge_tensor_elements(out) == 0) return; /* a batch of 0, as LiteRT: an empty output */
    if (EDGE_WITH_FLOAT32 && edge_hybrid_weights(in, w)) { /* never in a patch stage (patching.py) */
        edge_hybrid_eval_depthwise_conv_2d(node, ctx);
        return;
    }
    if (EDGE_WITH_PATCH && ctx->window) {
        patch = *d;
        edge_window_apply(&patch.geo, ctx->window);
        d = &patch;
    }
    switch (d->kind) {
    case DW_INT8:
        if (EDGE_WITH_MEMORY_MIN && d->plane >= 0 && (const void *)out->data == in->data) {
            dw_int8_in_place(d, (int8_t *)out->data, (const int8_t *)w->data, bt ? (const int32_t *)bt->data : 0,
                             (int8_t *)edge_scratch(ctx, node, d->plane));
            break;
        }
        if (d->filter_offset) {
            dw_int8_offset(d, (const int8_t *)in->data, (const int8_t *)w->data, bt ? (const int32_t *)bt->data : 0,
                           (int8_t *)out->data);
            break;
        }
#if EDGE_SIMD
        if (d->geo.fast) {
            dw_job_t j;
            j.d = d;
            j.x = (const int8_t *)in->data;
            j.y = (int8_t *)out->data;
            j.scr = (int8_t *)edge_scratch(ctx, node, d->simd_scratch);
            const int32_t slots =
                edge_simd_parts((int64_t)d->n * d->geo.oh * d->geo.ow * d->oc * d->kh * d->kw, d->simd_threads);
            edge_simd_parallel(slots > 1 ? 2 * slots : 1, slots, dw_job, &j);
            break;
        }
#endif
#if EDGE_DSP
        if (EDGE_WITH_MEMORY_MIN && d->kwp && !d->mult_q && !d->rq_generic && d->oc <= DW_STACK_Q) {
            /* the least-RAM request keeps the compact requantization: a layer of few channels (person_detect's and
             * micro_speech's first, 8) has it unpacked here once an invoke (or patch), not four channels per pixel
             * and group (dw_store4_compact: person_detect's min plan 23.24 M -> 22.26 M instructions) */
            int32_t k;
            if (d != &patch) {
                patch = *d;
                d = &patch;
            }
            for (k = 0; k < d->oc; k++) stack_q[k] = edge_rq_at(d->rq, d->oc, k);
            patch.mult_q = stack_q;
        }
        if (d->kwp) { /* the multiplier path: pre-paired (mult_w) or 8-bit filter */
            dw_int8_mult(d, (const int8_t *)in->data, (const int8_t *)w->data, bt ? (const int32_t *)bt->data : 0,
                         (int8_t *)out->data, (int8_t *)edge_scratch(ctx, node, d->win));
            break;
        }
#endif
        dw_int8(d, (const int8_t *)in->data, (const int8_t *)w->data, bt ? (const int32_t *)bt->data : 0,
                (int8_t *)out->data, d->scratch >= 0 ? (uint32_t *)edge_scratch(ctx, node, d->scratch) : 0);
        break;
    case DW_INT16:
        if (EDGE_WITH_INT16)
            dw_int16(d, (const int16_t *)in->data, (const int8_t *)w->data, bt ? (const int64_t *)bt->data : 0,
                     (int16_t *)out->data);
        break;
    default:
#if EDGE_SIMD
        if (d->geo.fast) {
            dw_float_simd(d, (const float *)in->data, (const float *)w->data, bt ? (const float *)bt->data : 0,
                          (float *)out->data);
            break;
        }
#endif
        if (EDGE_WITH_FLOAT32)
            dw_float(d, (const float *)in->data, (const float *)w->data, bt ? (const float *)bt->data : 0,
                     (float *)out->data);
        break;
    }
}
