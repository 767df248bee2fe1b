/* PRELU: y = x for x >= 0, alpha * x below; alpha broadcasts against x (numpy rules, up to rank 6).
 *
 * int8 / int16 input with int8 alpha as edge_sdk/runtime/kernels/activations.py prepare_prelu (TFLM prelu.cc,
 * reference BroadcastPrelu4DSlow): with v = x - in_zp, v >= 0 gives v * (in_scale / out_scale), else
 * v * (alpha - alpha_zp) (wrapping int32) * (in_scale * alpha_scale / out_scale); both through
 * MultiplyByQuantizedMultiplier (ratios in double), plus out_zp, clamped. float32 (rank <= 4, as the Python
 * kernel): x >= 0 ? x : x * alpha.
 */
#include "edge_kernel.h"
#include "../edge_binary.h"
#include "../simd/edge_simd.h"
#include "../edge_dsp.h"

EDGE_KERNEL(PRELU, prelu, 2, "FLOAT32 INT8 INT16", "alpha FLOAT32 (float) or INT8 (quantized)")

typedef struct {
    ea_bcast_t bc;
    int32_t type;
    int32_t in_off, a_off, out_off, m1, s1, m2, s2, qmin, qmax;
#if EDGE_SIMD
    int32_t simd;               /* float32 on a 64-bit Linux CPU: the SIMD level for contiguous rows (0: none) */
    int32_t channel_rows;       /* float32, alpha one slope per channel of x's last axis (x the output's shape):
                                 * that channel count, the tensor in one edge_simd_prelu_f32_rows call (0: rows
                                 * through the broadcast walk); int8 with a table: the same count */
    const int8_t *channel_table; /* int8, constant slopes one per channel: channel c's output of every input at
                                  * [c * 256 + (uint8)x] (c * 256 bytes with the packed copies), or NULL. A PRELU the
                                  * ADD before it runs (edge_add_prelu_prev; int8: with a channel_table) is skipped
                                  * by invoke when the planner fuses the pair */
#endif
#if EDGE_DSP
    int32_t dsp_channels;       /* int8, one slope per channel of x's last axis (x the output's shape): that
                                 * channel count, the tensor through prelu_int8_dsp (0: the broadcast walk) */
    eb_dsp_rq_t dsp_pos, dsp_neg; /* x >= its zero point / below: m1, s1 / m2, s2 as eb_dsp_rq steps */
#endif
} prelu_data_t;

static inline int32_t prelu_q(const prelu_data_t *d, int32_t v, int32_t a) {
    int64_t iv = (int64_t)v + d->in_off;
    int32_t r = iv >= 0 ? ea_mbqm(edge_wrap32(iv), d->m1, d->s1)
                        : ea_mbqm(edge_wrap32(iv * ((int64_t)a + d->a_off)), d->m2, d->s2);
    return (int32_t)ea_clamp((int64_t)r + d->out_off, d->qmin, d->qmax);
}

edge_status_t edge_prepare_prelu(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *alpha, *out;
    prelu_data_t *d;
    const edge_status_t s = eb_prepare_io(node, ctx, sizeof *d,
                                          EB_TYPE(EDGE_FLOAT32) | EB_TYPE(EDGE_INT8) | EB_TYPE(EDGE_INT16),
                                          "C kernel runs FLOAT32, INT8, INT16", 0, &x, &alpha, &out);
    if (s != EDGE_OK) return s;
    d = (prelu_data_t *)node->user_data;
    d->type = x->type;
    if (EDGE_WITH_FLOAT32 && x->type == EDGE_FLOAT32) {
        if (alpha->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "PRELU: float alpha must be FLOAT32");
        if (out->rank > 4) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "PRELU: float PRELU beyond rank 4");
#if EDGE_SIMD
        d->simd = edge_simd_level();
        if (d->simd && out->rank >= 1 && edge_simd_prelu_f32_rows(d->simd, NULL, NULL, 0, 0, NULL) &&
            edge_tensor_elements(x) == edge_tensor_elements(out) && alpha->rank >= 1 &&
            edge_tensor_elements(alpha) == out->dims[out->rank - 1] &&
            alpha->dims[alpha->rank - 1] == out->dims[out->rank - 1])
            d->channel_rows = out->dims[out->rank - 1];
        (void)edge_add_prelu_prev(ctx, node); /* the pair, offered to the planner */
#endif
        return EDGE_OK;
    }
    if (alpha->type != EDGE_INT8) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "PRELU: alpha must be INT8");
    if (!x->quantized || !alpha->quantized || !out->quantized)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "PRELU: tensors need quantization parameters");
    if (!ea_good_scale(x) || !ea_good_scale(alpha) || !ea_good_scale(out))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "PRELU: scales must be positive and finite");
    if (edge_quantize_multiplier((double)x->scale / (double)out->scale, &d->m1, &d->s1) ||
        edge_quantize_multiplier((double)x->scale * (double)alpha->scale / (double)out->scale, &d->m2, &d->s2))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "PRELU: scales give no multiplier");
    d->in_off = -x->zero_point;
    d->a_off = -alpha->zero_point;
    d->out_off = out->zero_point;
    d->qmin = ea_type_min(x->type);
    d->qmax = ea_type_max(x->type);
#if EDGE_DSP
    /* a DSP core (Cortex-M4/M7), int8 with one slope per channel: both requantizations in 32 bits (eb_dsp_rq), no
     * 64-bit helper per element. Exact while the shifted operand fits int32: |x - zp| <= 255 and
     * |(x - zp) * (alpha - alpha_zp)| <= 65,025 < 2^16, so a left shift of up to 14 (a scale ratio below 2^14). */
    if (x->type == EDGE_INT8 && out->rank >= 1 && alpha->rank >= 1 &&
        edge_tensor_elements(x) == edge_tensor_elements(out) &&
        edge_tensor_elements(alpha) == out->dims[out->rank - 1] &&
        alpha->dims[alpha->rank - 1] == out->dims[out->rank - 1] && out->dims[out->rank - 1] > 0 &&
        d->s1 <= 14 && d->s2 <= 14) {
        eb_rq_t q;
        eb_rq_init(&q, d->m1, d->s1);
        eb_dsp_rq_init(&d->dsp_pos, q);
        eb_rq_init(&q, d->m2, d->s2);
        eb_dsp_rq_init(&d->dsp_neg, q);
        d->dsp_channels = out->dims[out->rank - 1];
    }
#endif
#if EDGE_SIMD
    /* a host build with a fast-path level (0: the portable rows), int8 with constant per-channel slopes
     * (BlazeFace's int8 PReLUs: the formula's two 64-bit requantizations per element were its costliest op):
     * each channel's 256 outputs once, a lookup per element */
    if (edge_simd_level() && x->type == EDGE_INT8 && alpha->is_const && alpha->data && out->rank >= 1 &&
        alpha->rank >= 1 &&
        edge_tensor_elements(x) == edge_tensor_elements(out) &&
        edge_tensor_elements(alpha) == out->dims[out->rank - 1] &&
        alpha->dims[alpha->rank - 1] == out->dims[out->rank - 1] && out->dims[out->rank - 1] <= 256) {
        const int32_t c = out->dims[out->rank - 1];
        int8_t *table = (int8_t *)edge_alloc_packed(ctx, 256 * (size_t)c);
        int32_t ch, v;
        if (!table) return EDGE_ARENA_TOO_SMALL;
        for (ch = 0; ch < c; ch++)
            for (v = -128; v < 128; v++)
                table[ch * 256 + (uint8_t)v] = (int8_t)prelu_q(d, v, ((const int8_t *)alpha->data)[ch]);
        d->channel_table = table;
        d->channel_rows = c;
    }
    if (d->channel_table) (void)edge_add_prelu_prev(ctx, node); /* the pair, offered to the planner */
#endif
    return EDGE_OK;
}

#if EDGE_SIMD
/* rows whole rows of the table's channels: y[r * c + ch] = table[ch * 256 + (uint8)x[r * c + ch]] (x may be y:
 * each group's four bytes are read before they are written). Four channels a step, the table walked by pointer:
 * about half the instructions of one element a step with its index computed (the lookup is this op's whole cost). */
static void prelu_table_rows(const prelu_data_t *d, const int8_t *x, int8_t *y, int64_t rows) {
    const int8_t *const table = d->channel_table;
    const int32_t c = d->channel_rows;
    int64_t r;
    for (r = 0; r < rows; r++, x += c, y += c) {
        const int8_t *t = table;
        int32_t ch = 0;
        for (; ch + 4 <= c; ch += 4, t += 1024) {
            const int8_t v0 = t[(uint8_t)x[ch]], v1 = t[256 + (uint8_t)x[ch + 1]];
            const int8_t v2 = t[512 + (uint8_t)x[ch + 2]], v3 = t[768 + (uint8_t)x[ch + 3]];
            y[ch] = v0;
            y[ch + 1] = v1;
            y[ch + 2] = v2;
            y[ch + 3] = v3;
        }
        for (; ch < c; ch++, t += 256) y[ch] = t[(uint8_t)x[ch]];
    }
}

int32_t edge_prelu_int8_rows(const edge_node_t *prelu, const int8_t *x, int8_t *y, int64_t rows) {
    const prelu_data_t *d = (const prelu_data_t *)prelu->user_data;
    if (!d || !d->channel_table) return 0;
    if (rows) prelu_table_rows(d, x, y, rows);
    return d->channel_rows;
}
#endif

#if EDGE_DSP
/* y [rows, c] from x [rows, c] and one int8 slope a channel (x may be y: each element is read before it is
 * written). The 32-bit form of prelu_q, about a third of its instructions per element on the M4. */
static void prelu_int8_dsp(const prelu_data_t *d, const int8_t *x, const int8_t *alpha, int8_t *y, int64_t rows) {
    const int32_t c = d->dsp_channels, in_off = d->in_off, a_off = d->a_off, zp = d->out_off;
    const int32_t pl = d->dsp_pos.left, pm = d->dsp_pos.mul2, pr = d->dsp_pos.right, prnd = d->dsp_pos.rnd;
    const int32_t nl = d->dsp_neg.left, nm = d->dsp_neg.mul2, nr = d->dsp_neg.right, nrnd = d->dsp_neg.rnd;
    int64_t r;
    int32_t ch;
    for (r = 0; r < rows; r++, x += c, y += c) {
        for (ch = 0; ch < c; ch++) {
            const int32_t v = x[ch] + in_off;
            const int32_t o = v >= 0 ? eb_dsp_rq_s(v, pl, pm, pr, prnd, zp)
                                     : eb_dsp_rq_s(v * (alpha[ch] + a_off), nl, nm, nr, nrnd, zp);
            y[ch] = (int8_t)(o < -128 ? -128 : (o > 127 ? 127 : o));
        }
    }
}
#endif

static void row_int8(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const prelu_data_t *d = (const prelu_data_t *)op;
    const int8_t *x = (const int8_t *)a, *al = (const int8_t *)b;
    int8_t *o = (int8_t *)y;
    int32_t i;
    for (i = 0; i < n; i++) o[i] = (int8_t)prelu_q(d, x[i * sa], al[i * sb]);
}

static void row_int16(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const prelu_data_t *d = (const prelu_data_t *)op;
    const int16_t *x = (const int16_t *)a;
    const int8_t *al = (const int8_t *)b;
    int16_t *o = (int16_t *)y;
    int32_t i;
    for (i = 0; i < n; i++) o[i] = (int16_t)prelu_q(d, x[i * sa], al[i * sb]);
}

static void row_float(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n) {
    const float *x = (const float *)a, *al = (const float *)b;
    float *o = (float *)y;
    int32_t i;
    (void)op;
#if EDGE_SIMD
    if (sa && ((const prelu_data_t *)op)->simd &&
        edge_simd_prelu_f32(((const prelu_data_t *)op)->simd, x, al, sb ? 1 : 0, o, n))
        return;
#endif
    for (i = 0; i < n; i++) {
        const float v = x[i * sa];
        o[i] = v >= 0.0f ? v : v * al[i * sb];
    }
}

void edge_eval_prelu(const edge_node_t *node, edge_ctx_t *ctx) {
    const prelu_data_t *d = (const prelu_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0), *alpha = edge_in(ctx, node, 1);
    edge_tensor_t *out = edge_out(ctx, node, 0);
#if EDGE_SIMD
    if (d->channel_table && !(EDGE_WITH_PATCH && ctx->window)) {
        prelu_table_rows(d, (const int8_t *)x->data, (int8_t *)out->data, edge_tensor_elements(out) / d->channel_rows);
        return;
    }
#endif
#if EDGE_DSP
    if (d->dsp_channels && !(EDGE_WITH_PATCH && ctx->window)) {
        prelu_int8_dsp(d, (const int8_t *)x->data, (const int8_t *)alpha->data, (int8_t *)out->data,
                       edge_tensor_elements(out) / d->dsp_channels);
        return;
    }
#endif
    if (d->type == EDGE_INT8)
        ea_bcast_run(&d->bc, d, x->data, 1, alpha->data, 1, out->data, 1, row_int8);
    else if (EDGE_WITH_INT16 && d->type == EDGE_INT16)
        ea_bcast_run(&d->bc, d, x->data, 2, alpha->data, 1, out->data, 2, row_int16);
    else if (EDGE_WITH_FLOAT32) {
#if EDGE_SIMD
        if (d->channel_rows > 0 && !(EDGE_WITH_PATCH && ctx->window)) {
            const int64_t n = edge_tensor_elements(out);
            (void)edge_simd_prelu_f32_rows(d->simd, (const float *)x->data, (const float *)alpha->data,
                                           d->channel_rows, n / d->channel_rows, (float *)out->data);
            return;
        }
#endif
        ea_bcast_run(&d->bc, d, x->data, 4, alpha->data, 4, out->data, 4, row_float);
    }
}
