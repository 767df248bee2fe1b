/* edge_lstm.h - the float32 LSTM cell every float LSTM kernel runs: UNIDIRECTIONAL_SEQUENCE_LSTM (its home,
 * unidirectional_sequence_lstm.c), LSTM and BIDIRECTIONAL_SEQUENCE_LSTM (lstm.c); LiteRT's integer LSTM step
 * (its home lstm.c; below); and the LSTM with options (CIFG, peephole, projection, layer norm, auxiliary input;
 * float or hybrid; at the end).
 *
 * Per step and batch row: the four gates (input, forget, cell, output) are x . wi[g][u] + h . wr[g][u] + bias[g][u]
 * for each unit u (weight rows w_stride / r_stride floats apart, so one packed matrix can serve: the basic LSTM's
 * (4S, I + S) weights); i, f, o = sigmoid, the cell gate tanh (sigmoid with cell_sigmoid); c = f c + i g, clipped
 * to +-cell_clip when > 0; h = tanh(c) o, written to the output row and then to the state.
 *
 * Layout by strides: the row of step t (in the order the steps run) and batch row b is x + t * x_step + b * x_batch
 * (y likewise): time-major, batch-major, a backward pass (x and y at the last step, negative step strides) and
 * merged bidirectional outputs (y_step / y_batch over the merged width) all run the one loop. h and c: (batch,
 * n_state), read before the first step, updated at every step.
 *
 * Hybrid (qwi[0] set: LiteRT's hybrid LSTM, INT8 weights with a scale per gate matrix): each row of x and of h is
 * quantized per row (edge_hybrid.h) into scratch (n_input + n_state bytes) and each gate is
 * bias + float(qx . qwi) * (x scale * wi_scale) + float(qh . qwr) * (h scale * wr_scale); the cell is the float one.
 */
/* Everything here is static inline: `edge flash` / `edge export` compile only the kernel files of the ops a model
 * uses, so a model with LSTM alone (or UNIDIRECTIONAL_SEQUENCE_LSTM alone) must link without the other file. */
#ifndef EDGE_LSTM_H
#define EDGE_LSTM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "edge_kernel.h"
#include "edge_fixedpoint.h"
#include "edge_fixedpoint_act.h"
#include "edge_float.h"
#include "edge_hybrid.h"

typedef struct {
    const float *wi[4], *wr[4], *bias[4]; /* gates input, forget, cell, output */
    int32_t w_stride, r_stride;           /* floats between two units' rows of wi / wr */
    int32_t n_input, n_state;
    int32_t cell_sigmoid;                 /* the cell gate through sigmoid instead of tanh */
    float cell_clip;                      /* 0: none */
    /* hybrid: int8 weights in place of wi / wr (rows n_input / n_state apart), their scales, the quantized rows */
    const int8_t *qwi[4], *qwr[4];
    float wi_scale[4], wr_scale[4];
    int32_t asymmetric;
    int8_t *scratch;
} edge_lstm_f32_t;

static inline float el_sigmoid_f32(float v) {
    if (v > 16.619047164916992f) return 1.0f;
    if (v < -9.0f) return expf(v);
    return 1.0f / (1.0f + expf(-v));
}

static inline void edge_lstm_f32_run(const edge_lstm_f32_t *p, const float *x, float *hs, float *cs, float *y, int32_t steps,
                       int32_t batch, int64_t x_step, int64_t x_batch, int64_t y_step, int64_t y_batch) {
    const int32_t S = p->n_state, I = p->n_input, hybrid = p->qwi[0] != 0;
    /* scratch exists only for the hybrid form: no offset from NULL (UB) */
    int8_t *qx = p->scratch, *qh = hybrid ? p->scratch + I : NULL;
    float sx = 0.0f, sh = 0.0f;
    int32_t t, b, g, u, zx = 0, zh = 0;
    for (t = 0; t < steps; t++)
        for (b = 0; b < batch; b++) {
            const float *xr = x + t * x_step + b * x_batch;
            float *h = hs + (int64_t)b * S, *c = cs + (int64_t)b * S, *yr = y + t * y_step + b * y_batch;
            if (hybrid) {
                eh_quantize_row(xr, I, p->asymmetric, qx, &sx, &zx);
                eh_quantize_row(h, S, p->asymmetric, qh, &sh, &zh);
            }
            for (u = 0; u < S; u += 2) {
                /* two units' four gates at once (ef_dot8); an odd last unit goes with itself */
                const int32_t nu = S - u < 2 ? 1 : 2, u2 = u + nu - 1;
                float gate[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
                const float *rows[8];
                int32_t j;
                if (hybrid) { /* bias, then the input product, then the recurrent one (LiteRT's order) */
                    for (j = 0; j < 8; j++) {
                        const int32_t gj = j & 3, uj = j < 4 ? u : u2;
                        gate[j] = p->bias[gj][uj];
                        gate[j] += eh_product(qx, p->qwi[gj] + (int64_t)uj * I, I, zx, sx * p->wi_scale[gj]);
                        gate[j] += eh_product(qh, p->qwr[gj] + (int64_t)uj * S, S, zh, sh * p->wr_scale[gj]);
                    }
                } else {
                    for (g = 0; g < 4; g++) {
                        rows[g] = p->wi[g] + (int64_t)u * p->w_stride;
                        rows[4 + g] = p->wi[g] + (int64_t)u2 * p->w_stride;
                    }
                    ef_dot8(xr, rows, I, gate);
                    for (g = 0; g < 4; g++) {
                        gate[g] += p->bias[g][u];
                        gate[4 + g] += p->bias[g][u2];
                        rows[g] = p->wr[g] + (int64_t)u * p->r_stride;
                        rows[4 + g] = p->wr[g] + (int64_t)u2 * p->r_stride;
                    }
                    ef_dot8(h, rows, S, gate);
                }
                for (j = 0; j < nu; j++) {
                    const float *gj = gate + 4 * j;
                    const float ig = el_sigmoid_f32(gj[0]), fg = el_sigmoid_f32(gj[1]);
                    const float cg = p->cell_sigmoid ? el_sigmoid_f32(gj[2]) : tanhf(gj[2]);
                    const float og = el_sigmoid_f32(gj[3]);
                    float cv = fg * c[u + j] + ig * cg;
                    if (p->cell_clip > 0.0f)
                        cv = cv < -p->cell_clip ? -p->cell_clip : (cv > p->cell_clip ? p->cell_clip : cv);
                    c[u + j] = cv;
                    yr[u + j] = tanhf(cv) * og; /* the new hidden state, into h once the row is done */
                }
            }
            memcpy(h, yr, sizeof(float) * (size_t)S);
        }
}


/* LiteRT's full-integer ("8x8_16") LSTM step (lstm.c, edge_sdk/runtime/kernels/lstm_integer.py): int8 input and
 * output state, int8 gate weights (inputs 1-8) and int32 biases (12-15), int16 cell state, 5 intermediates, with
 * or without layer normalization (inputs 20-23). The LSTM op (INT8) and the layer-norm
 * UNIDIRECTIONAL_SEQUENCE_LSTM (INT8; TFLM has none) run it. Prepare checks the node (input 0 its input, 18 / 19 the
 * states) and asks for 4 x n_state int16 of scratch; a step runs `batch` rows: x row b at x + b * x_batch, y row b at
 * y + b * y_batch, h and c (batch, n_state), read and then updated. */
typedef struct {
    int32_t in_m[4], rec_m[4], ln_m[4], ln_guard[4], hidden_m;
    int32_t x_zp, h_zp, hidden_zp;
    int32_t n_input, n_state;
    int32_t cell_scale;                 /* log2 of the cell state's scale, -15 .. -9 */
    int32_t gates;                      /* scratch: the row's 4 x n_state int16 gate values */
    int16_t clip_q;                     /* 0: no cell clip */
    int8_t in_s[4], rec_s[4], ln_s[4], hidden_s;
    uint8_t layer_norm;
} edge_lstm_int8_t;

/* gemmlowp FixedPoint<int16_t> arithmetic: raw int16 values in int32, + and - wrapping as the int16 raw type
 * does, constants the int32 ones rounded by 16 bits (RescaleConstantInitializer). */
static inline int32_t g16_rdivpot(int32_t x, int32_t exponent) {
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1), threshold = (mask >> 1) + (x < 0);
    return (x >> exponent) + ((x & mask) > threshold);
}
static inline int32_t g16_const(int32_t int32_value) { return g16_rdivpot(int32_value, 16); }
static inline int32_t g16_shl(int32_t x, int32_t exponent) { /* SaturatingRoundingMultiplyByPOT, exponent > 0 */
    const int32_t threshold = (1 << (15 - exponent)) - 1;
    if (exponent == 0) return x;
    return x > threshold ? 32767 : (x < -threshold ? -32768 : ea_wrap16((int64_t)x * (1 << exponent)));
}

/* exp(a) for a in [-1/4, 0), Q0.15 */
static inline int32_t g16_exp_quarter(int32_t a) {
    const int32_t constant_term = g16_const(1895147668), third = g16_const(715827883);
    const int32_t x = ea_wrap16(a + (1 << 12)), x2 = ea_srdhm16(x, x), x3 = ea_srdhm16(x2, x), x4 = ea_srdhm16(x2, x2);
    const int32_t poly = g16_rdivpot(ea_wrap16(ea_srdhm16(ea_wrap16(g16_rdivpot(x4, 2) + x3), third) + x2), 1);
    return ea_sat16(constant_term + ea_srdhm16(constant_term, ea_wrap16(x + poly)));
}

/* exp(a) for a <= 0 in FixedPoint<int16, integer_bits> (0..7), Q0.15 */
static inline int32_t g16_exp_negative(int32_t a, int32_t integer_bits) {
    static const int32_t barrel[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int32_t frac = 15 - integer_bits, quarter = 1 << (frac - 2);
    const int32_t a_mod = ea_wrap16((a & (quarter - 1)) - quarter), remainder = ea_wrap16(a_mod - a);
    int32_t result = g16_exp_quarter(g16_shl(a_mod, integer_bits)), e;
    for (e = -2; e <= 4; e++)
        if (integer_bits > e && (remainder & (1 << (frac + e)))) result = ea_srdhm16(result, g16_const(barrel[e + 2]));
    if (integer_bits > 5 && a < g16_const(-(1 << (36 - integer_bits)))) result = 0;
    return a == 0 ? 32767 : result;
}

/* Newton-Raphson 1 / (1 + x) of gemmlowp's one_over_one_plus_x and one_minus_x_over_one_plus_x, x in Q0.15: Q2.13 */
static inline int32_t g16_newton(int32_t x0) {
    int32_t s = x0 + 32767, hd, x, i;
    s += s >= 0 ? 1 : -1;
    hd = s / 2; /* RoundingHalfSum, C division */
    x = ea_wrap16(g16_const(1515870810) + ea_srdhm16(hd, g16_const(-1010580540)));
    for (i = 0; i < 3; i++) x = ea_wrap16(x + g16_shl(ea_srdhm16(x, ea_wrap16((1 << 13) - ea_srdhm16(hd, x))), 2));
    return x;
}

/* gemmlowp::logistic / tanh of FixedPoint<int16, integer_bits>: Q0.15 */
static inline int32_t g16_logistic(int32_t a, int32_t integer_bits) {
    const int32_t abs_a = a > 0 ? a : ea_wrap16(-(int64_t)a);
    const int32_t pos = g16_shl(g16_newton(g16_exp_negative(ea_wrap16(-(int64_t)abs_a), integer_bits)), 1);
    if (a == 0) return g16_const(1 << 30);
    return a > 0 ? pos : ea_wrap16(32767 - pos);
}
static inline int32_t g16_tanh(int32_t a, int32_t integer_bits) {
    const int32_t n = a < 0 ? a : ea_wrap16(-(int64_t)a);
    const int32_t t = g16_shl(ea_wrap16(g16_newton(g16_exp_negative(n, integer_bits + 1)) - (1 << 13)), 2);
    if (a == 0) return 0;
    return a < 0 ? ea_wrap16(-(int64_t)t) : t;
}

/* LiteRT's integer ApplyLayerNorm of one row of n gate values, in place (bias added here, not to the products). */
static inline void el_layer_norm_row(int16_t *v, int32_t n, const int16_t *w, const int32_t *bias, int32_t m, int32_t shift,
                           int32_t guard) {
    int64_t sum = 0, sum_sq = 0, variance;
    int32_t j, mean, variance2, inv_m, inv_s;
    for (j = 0; j < n; j++) {
        sum += v[j];
        sum_sq += (int32_t)v[j] * v[j];
    }
    mean = (int32_t)(sum * 1024 / n);
    variance = sum_sq * ((1 << 20) / n) - (int64_t)mean * mean;
    variance2 = (int32_t)(variance / (1 << 20));
    if (variance2 < 1) variance2 = guard;
    ea_inv_sqrt_multiplier(variance2, &inv_m, &inv_s);
    for (j = 0; j < n; j++) {
        const int32_t rescaled = edge_mbqm(edge_wrap32(1024 * (int64_t)v[j] - mean), inv_m, inv_s);
        const int32_t val3 = edge_wrap32((int64_t)edge_wrap32((int64_t)rescaled * w[j]) + bias[j]);
        const int32_t val4 = (int32_t)((val3 > 0 ? (int64_t)val3 + 512 : (int64_t)val3 - 512) / 1024);
        v[j] = (int16_t)ea_sat16(edge_mbqm(val4, m, shift + 12));
    }
}

/* (multiplier, shift) of a float32 scale; 0 when it does not quantize */
static inline int el_quantize_scale(float scale, int32_t *m, int8_t *s) {
    int32_t shift;
    if (!(scale > 0.0f) || edge_quantize_multiplier((double)scale, m, &shift) != 0 || shift < -100 || shift > 100)
        return 0;
    *s = (int8_t)shift;
    return 1;
}

static inline edge_status_t edge_lstm_int8_prepare(edge_node_t *node, edge_ctx_t *ctx, int32_t batch, int32_t n_input,
                                     float cell_clip, edge_lstm_int8_t **out) {
    static const int32_t refused[5] = {9, 10, 11, 16, 17};
    static const int32_t el_in_w[4] = {1, 2, 3, 4}, el_rec_w[4] = {5, 6, 7, 8}, el_bias[4] = {12, 13, 14, 15};
    const edge_tensor_t *x = edge_in(ctx, node, 0), *h, *c, *y = edge_out(ctx, node, 0), *hidden;
    const int32_t *inter = 0;
    const int32_t n_inter = edge_intermediates(ctx, node, &inter);
    edge_lstm_int8_t *q;
    float gate_scale[4];
    int32_t k, S, cell_log2;
    edge_status_t s;

    if (n_inter == 12) /* LiteRT's experimental form (edge_sdk/runtime/kernels/lstm_integer.py says why not) */
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "the 12-intermediate (8x8_8) integer LSTM is not supported: LiteRT's experimental "
                                                "kernel ignores the input gate, needs layer norm and a projection bias, and reads "
                                                "an out-of-bounds output-gate scale");
    if (n_inter != 5) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "an integer LSTM has 5 intermediates (gate and hidden scales)");
    for (k = 0; k < 5; k++)
        if (edge_in(ctx, node, refused[k]))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, k < 3 ? "peephole integer LSTM is not supported"
                                                            : "projection integer LSTM is not supported");
    if (!edge_in(ctx, node, 1) || !edge_in(ctx, node, 5) || !edge_in(ctx, node, 12))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "CIFG LSTM (no input gate) is not supported");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    h = edge_in(ctx, node, 18);
    c = edge_in(ctx, node, 19);
    if (!h || !c || !h->is_variable || !c->is_variable)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: output and cell states must be variable tensors");
    if (h->type != EDGE_INT8 || c->type != EDGE_INT16 || y->type != EDGE_INT8)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "integer LSTM: INT8 output state and output, INT16 cell state");
    if (!ea_per_tensor(x) || !ea_per_tensor(h) || !ea_per_tensor(c))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "integer LSTM: input and states must be quantized per tensor");
    if (!edge_in(ctx, node, 2) || edge_in(ctx, node, 2)->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input weights shape");
    S = edge_in(ctx, node, 2)->dims[0];
    for (k = 0; k < 4; k++) {
        const edge_tensor_t *wi = edge_in(ctx, node, el_in_w[k]), *wr = edge_in(ctx, node, el_rec_w[k]);
        const edge_tensor_t *b = edge_in(ctx, node, el_bias[k]);
        if (!wi || !wr || !b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "gate weights and biases are required");
        if (wi->type != EDGE_INT8 || wr->type != EDGE_INT8 || b->type != EDGE_INT32)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "integer LSTM: INT8 gate weights, INT32 biases");
        if (!ea_per_tensor(wi) || !ea_per_tensor(wr))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "integer LSTM: gate weights must be quantized per tensor");
        if (wi->rank != 2 || wi->dims[0] != S || wi->dims[1] != n_input) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input weights shape");
        if (wr->rank != 2 || wr->dims[0] != S || wr->dims[1] != S) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "recurrent weights shape");
        if (b->rank != 1 || b->dims[0] != S) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "bias shape");
        if (!wi->is_const || !wr->is_const || !b->is_const)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "gate weights and biases must be constant");
    }
    if (edge_tensor_elements(h) != (int64_t)batch * S || edge_tensor_elements(c) != (int64_t)batch * S)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "state size is not batch x units");
    q = (edge_lstm_int8_t *)edge_alloc_persistent(ctx, sizeof *q);
    if (!q) return EDGE_ARENA_TOO_SMALL;
    *out = q;
    q->n_input = n_input;
    q->n_state = S;
    q->layer_norm = node->n_inputs == 24 && edge_in(ctx, node, 21) != 0;
    if (q->layer_norm && S < 1) /* the normalization divides by the unit count */
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "a layer-norm LSTM needs at least one unit");
    for (k = 0; k < 5; k++) {
        const edge_tensor_t *t = &ctx->tensors[inter[k]];
        if ((k == 4 || q->layer_norm) && !ea_per_tensor(t))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "integer LSTM: intermediates must be quantized per tensor");
        if (k < 4) gate_scale[k] = q->layer_norm ? t->scale : 1.0f / 4096.0f;
    }
    if (q->layer_norm)
        for (k = 0; k < 4; k++) {
            const edge_tensor_t *t = edge_in(ctx, node, 20 + k);
            if (!t || t->type != EDGE_INT16 || !ea_per_tensor(t) || t->rank != 1 || t->dims[0] != S || !t->is_const)
                return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "integer layer-norm LSTM: constant INT16 coefficients (units), per tensor");
            if (!el_quantize_scale(t->scale, &q->ln_m[k], &q->ln_s[k]))
                return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "layer-norm coefficient scale out of range");
            { /* clamped in float before the cast: an absurd scale (fuzz) made it undefined */
                const float guard = 10000.0f * t->scale;
                q->ln_guard[k] = !(guard >= 1.0f) ? 1 : guard >= 2147483520.0f ? 0x7fffffff : (int32_t)guard;
            }
        }
    else if (node->n_inputs == 24 && (edge_in(ctx, node, 20) || edge_in(ctx, node, 22) || edge_in(ctx, node, 23)))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "layer-norm coefficients without the forget gate's");
    if (!ea_checked_log2(c->scale, &cell_log2) || cell_log2 < -15 || cell_log2 > -9)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "integer LSTM: the cell state scale must be 2**-15 .. 2**-9");
    q->cell_scale = cell_log2;
    for (k = 0; k < 4; k++) {
        /* float32 as lstm.cc: weight scale x activation scale / gate scale */
        const float ei = (edge_in(ctx, node, el_in_w[k])->scale * x->scale) / gate_scale[k];
        const float er = (edge_in(ctx, node, el_rec_w[k])->scale * h->scale) / gate_scale[k];
        if (!el_quantize_scale(ei, &q->in_m[k], &q->in_s[k]) || !el_quantize_scale(er, &q->rec_m[k], &q->rec_s[k]))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "integer LSTM: gate scales out of range");
    }
    hidden = &ctx->tensors[inter[4]];
    if (!el_quantize_scale((float)((1.0 / 32768.0) / (double)hidden->scale * (1.0 / 32768.0)), &q->hidden_m, &q->hidden_s))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "integer LSTM: hidden scale out of range");
    q->hidden_zp = hidden->zero_point;
    q->x_zp = x->zero_point;
    q->h_zp = h->zero_point;
    if (cell_clip > 0.0f) {
        float v = cell_clip / c->scale;
        v = v < -32768.0f ? -32768.0f : (v > 32767.0f ? 32767.0f : v);
        q->clip_q = (int16_t)v;
    }
    return edge_request_scratch(ctx, node, 4 * sizeof(int16_t) * (size_t)S, &q->gates);
}

static inline void edge_lstm_int8_step(const edge_lstm_int8_t *q, const edge_node_t *node, edge_ctx_t *ctx, const int8_t *x,
                         int64_t x_batch, int8_t *hs, int16_t *cs, int8_t *y, int64_t y_batch, int32_t batch) {
    const int32_t I = q->n_input, S = q->n_state;
    int16_t *gates = (int16_t *)edge_scratch(ctx, node, q->gates);
    static const int32_t el_in_w[4] = {1, 2, 3, 4}, el_rec_w[4] = {5, 6, 7, 8}, el_bias[4] = {12, 13, 14, 15};
    int32_t b, g, u, k;
    for (b = 0; b < batch; b++) {
        const int8_t *xr = x + (int64_t)b * x_batch;
        int8_t *h = hs + (int64_t)b * S, *yr = y + (int64_t)b * y_batch;
        int16_t *c = cs + (int64_t)b * S;
        for (g = 0; g < 4; g++) {
            const int8_t *wi = (const int8_t *)edge_in(ctx, node, el_in_w[g])->data;
            const int8_t *wr = (const int8_t *)edge_in(ctx, node, el_rec_w[g])->data;
            const int32_t *bias = (const int32_t *)edge_in(ctx, node, el_bias[g])->data;
            int16_t *v = gates + (int64_t)g * S;
            for (u = 0; u < S; u++) {
                /* int32 accumulators, wrapping as LiteRT's; the zero points taken off the vectors */
                uint32_t acc = q->layer_norm ? 0u : (uint32_t)bias[u];
                int32_t a;
                for (k = 0; k < I; k++) acc += (uint32_t)(((int32_t)xr[k] - q->x_zp) * wi[(int64_t)u * I + k]);
                a = ea_sat16(edge_mbqm(edge_wrap32((int64_t)(int32_t)acc), q->in_m[g], q->in_s[g]));
                acc = 0u;
                for (k = 0; k < S; k++) acc += (uint32_t)(((int32_t)h[k] - q->h_zp) * wr[(int64_t)u * S + k]);
                v[u] = (int16_t)ea_sat16((int64_t)edge_mbqm(edge_wrap32((int64_t)(int32_t)acc), q->rec_m[g], q->rec_s[g]) + a);
            }
            if (q->layer_norm)
                el_layer_norm_row(v, S, (const int16_t *)edge_in(ctx, node, 20 + g)->data, bias, q->ln_m[g], q->ln_s[g],
                               q->ln_guard[g]);
        }
        for (u = 0; u < S; u++) {
            const int32_t ig = g16_logistic(gates[u], 3), fg = g16_logistic(gates[S + u], 3);
            const int32_t cg = g16_tanh(gates[2 * S + u], 3), og = g16_logistic(gates[3 * S + u], 3);
            int32_t cv = ea_sat16((int64_t)g16_rdivpot(fg * c[u], 15) + g16_rdivpot(ig * cg, 30 + q->cell_scale));
            int64_t hv;
            if (q->clip_q > 0) cv = cv < -q->clip_q ? -q->clip_q : (cv > q->clip_q ? q->clip_q : cv);
            c[u] = (int16_t)cv;
            hv = (int64_t)edge_mbqm(og * g16_tanh(cv, 15 + q->cell_scale), q->hidden_m, q->hidden_s) + q->hidden_zp;
            hv = hv < -128 ? -128 : (hv > 127 ? 127 : hv);
            h[u] = (int8_t)hv;
            yr[u] = (int8_t)hv;
        }
    }
}


/* ---------------------------------------------------------------------------- the LSTM's options (float, hybrid)
 * LiteRT's LstmStepFloat / LstmStepHybrid (lstm_eval.cc) with every option, as edge_sdk/runtime/kernels/sequence.py
 * lstm_variant_cell: CIFG (no input gate: i = 1 - f), peephole (diagonal cell-to-gate weights: input and forget
 * gates read the previous cell, the output gate the new one), layer normalization (each gate's products normalized
 * over its units, times its coefficients, plus its bias), projection (h = clip(P (o act(c)) + bias), n_output
 * units) and an auxiliary input (its own gate weights). Per step and batch row: every gate's products into a
 * scratch of 4 x n_state floats (the output state is read until all are done), then the cell, the output and the
 * projection; the new output row goes to y and then to h. Hybrid (INT8 weights, peephole and projection weights
 * too, a scale each): x, aux and h are quantized per row (edge_hybrid.h) into a scratch of n_input + n_aux +
 * max(n_output, n_state) bytes, the projection's input into its last part. The LSTM (lstm.c), BIDIRECTIONAL_ and
 * UNIDIRECTIONAL_SEQUENCE_LSTM take it when a node has any option (or, the sequence LSTM, INT8 weights). */

typedef struct { /* one direction's inputs by index, -1: absent (gate order input, forget, cell, output) */
    int8_t in_w[4], rec_w[4], peep[3], bias[4], proj_w, proj_b, ln[4], aux_w[4], h, c;
} el_parts_t;

typedef struct {
    el_parts_t at;                         /* as given, absent parts -1 */
    int32_t n_input, n_aux, n_state, n_output;
    int32_t hybrid, asymmetric, cell_sigmoid, cifg;
    float cell_clip, proj_clip;
    int32_t gates, qrows;                  /* scratch: 4 x n_state floats; hybrid: the quantized rows (-1: none) */
} edge_lstm_var_t;

static inline int el_has(const edge_node_t *node, edge_ctx_t *ctx, int32_t i) { return i >= 0 && edge_in(ctx, node, i) != 0; }

/* Whether a direction uses any option beyond the plain cell. */
static inline int edge_lstm_has_variant(const edge_node_t *node, edge_ctx_t *ctx, const el_parts_t *a) {
    int32_t k;
    if (!el_has(node, ctx, a->in_w[0]) || el_has(node, ctx, a->proj_w) || el_has(node, ctx, a->proj_b)) return 1;
    for (k = 0; k < 4; k++)
        if ((k < 3 && el_has(node, ctx, a->peep[k])) || el_has(node, ctx, a->ln[k]) || el_has(node, ctx, a->aux_w[k]))
            return 1;
    return 0;
}

/* One tensor of a direction: constant, of type `type` (FLOAT32, or INT8 per tensor for hybrid weights), dims
 * (d0) or (d0, d1) (d1 < 0: 1-D). */
static inline edge_status_t el_check(edge_ctx_t *ctx, const edge_tensor_t *t, int32_t type, int32_t d0, int32_t d1) {
    if (t->type != type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "LSTM: weights all FLOAT32 or all INT8 (hybrid), biases and coefficients FLOAT32");
    if (type == EDGE_INT8 && (!t->quantized || t->n_scales != 1))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "hybrid LSTM weights must be quantized per tensor");
    if (d1 < 0 ? (t->rank != 1 || t->dims[0] != d0) : (t->rank != 2 || t->dims[0] != d0 || t->dims[1] != d1))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: a gate, peephole, projection or layer-norm tensor has the wrong shape");
    if (!t->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM weights, biases and coefficients must be constant");
    return EDGE_OK;
}

/* Prepare: check a direction as LiteRT's CheckInputTensorDimensions does, fill v (persistent), ask for its
 * scratch. The output state must hold batch x n_output floats, the cell state batch x n_state. */
static inline edge_status_t edge_lstm_var_prepare(edge_node_t *node, edge_ctx_t *ctx, const el_parts_t *a, int32_t n_input,
                                                  int32_t n_aux, int32_t batch, edge_lstm_var_t *v) {
    const edge_tensor_t *f_w = edge_in(ctx, node, a->in_w[1]), *h, *c;
    int32_t k, S, wt, first, n_peep = 0, n_ln = 0, n_aux_w = 0;
    edge_status_t s;
    v->at = *a;
    if (!f_w || f_w->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: forget gate weights (2-D) are required");
    S = f_w->dims[0];
    wt = f_w->type;
    if (wt != EDGE_FLOAT32 && wt != EDGE_INT8) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "LSTM weights must be FLOAT32 or INT8 (hybrid)");
    v->hybrid = wt == EDGE_INT8;
    v->cifg = !el_has(node, ctx, a->in_w[0]);
    first = v->cifg ? 1 : 0;
    if (v->cifg && (el_has(node, ctx, a->rec_w[0]) || el_has(node, ctx, a->bias[0])))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CIFG LSTM with input-gate recurrent weights or bias");
    v->n_input = n_input;
    v->n_aux = n_aux;
    v->n_state = S;
    v->n_output = S;
    if (el_has(node, ctx, a->proj_w)) {
        const edge_tensor_t *p = edge_in(ctx, node, a->proj_w);
        if (p->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM projection weights must be 2-D");
        v->n_output = p->dims[0];
        if ((s = el_check(ctx, p, wt, v->n_output, S)) != EDGE_OK) return s;
        if (el_has(node, ctx, a->proj_b) && (s = el_check(ctx, edge_in(ctx, node, a->proj_b), EDGE_FLOAT32, v->n_output, -1)) != EDGE_OK)
            return s;
    } else if (el_has(node, ctx, a->proj_b)) {
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM projection bias without projection weights");
    }
    for (k = 0; k < 4; k++) {
        const int want = k >= first;
        if (el_has(node, ctx, a->in_w[k]) != want || el_has(node, ctx, a->rec_w[k]) != want || el_has(node, ctx, a->bias[k]) != want)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: gate weights, recurrent weights and biases for every gate (CIFG: but the input gate)");
        if (!want) continue;
        if ((s = el_check(ctx, edge_in(ctx, node, a->in_w[k]), wt, S, n_input)) != EDGE_OK) return s;
        if ((s = el_check(ctx, edge_in(ctx, node, a->rec_w[k]), wt, S, v->n_output)) != EDGE_OK) return s;
        if ((s = el_check(ctx, edge_in(ctx, node, a->bias[k]), EDGE_FLOAT32, S, -1)) != EDGE_OK) return s;
        if (el_has(node, ctx, a->ln[k])) {
            n_ln++;
            if ((s = el_check(ctx, edge_in(ctx, node, a->ln[k]), EDGE_FLOAT32, S, -1)) != EDGE_OK) return s;
        }
        if (el_has(node, ctx, a->aux_w[k])) {
            n_aux_w++;
            if ((s = el_check(ctx, edge_in(ctx, node, a->aux_w[k]), wt, S, n_aux)) != EDGE_OK) return s;
        }
    }
    for (k = 0; k < 3; k++)
        if (el_has(node, ctx, a->peep[k])) {
            n_peep++;
            if ((s = el_check(ctx, edge_in(ctx, node, a->peep[k]), wt, S, -1)) != EDGE_OK) return s;
        }
    if (el_has(node, ctx, a->ln[0]) && v->cifg) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CIFG LSTM with input-gate layer-norm coefficients");
    if (el_has(node, ctx, a->aux_w[0]) && v->cifg) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CIFG LSTM with input-gate auxiliary weights");
    if (n_ln != 0 && n_ln != 4 - first) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM layer-norm coefficients for every gate or none");
    if (n_aux_w != 0 && n_aux_w != 4 - first) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM auxiliary weights for every gate or none");
    if (n_peep != 0 && (!el_has(node, ctx, a->peep[1]) || !el_has(node, ctx, a->peep[2]) || el_has(node, ctx, a->peep[0]) == v->cifg))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM peephole weights: forget and output, and input exactly when the input gate exists");
    if (n_aux_w == 0) v->n_aux = 0;
    h = edge_in(ctx, node, a->h);
    c = edge_in(ctx, node, a->c);
    if (!h || !c) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: output and cell states are required");
    if (h->type != EDGE_FLOAT32 || c->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "LSTM states must be FLOAT32");
    if (!h->is_variable || !c->is_variable) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM states must be variable tensors");
    if (edge_tensor_elements(h) != (int64_t)batch * v->n_output || edge_tensor_elements(c) != (int64_t)batch * S)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM states: batch x n_output and batch x n_state");
    v->qrows = -1;
    if ((s = edge_request_scratch(ctx, node, sizeof(float) * 4 * (size_t)S, &v->gates)) != EDGE_OK) return s;
    if (v->hybrid)
        return edge_request_scratch(ctx, node, (size_t)n_input + (size_t)v->n_aux + (size_t)(v->n_output > S ? v->n_output : S),
                                    &v->qrows);
    return EDGE_OK;
}

static inline float el_dot_f32(const float *a, const float *b, int32_t n) {
    float acc = 0.0f;
    int32_t k;
    for (k = 0; k < n; k++) acc += a[k] * b[k];
    return acc;
}

/* LiteRT's MeanStddevNormalization of n values, times coefficients, plus bias, in place. */
static inline void el_layer_norm_f32(float *v, int32_t n, const float *coef, const float *bias) {
    float sum = 0.0f, sq = 0.0f, mean, inv;
    int32_t k;
    for (k = 0; k < n; k++) sum += v[k];
    mean = sum / (float)n;
    for (k = 0; k < n; k++) sq += (v[k] - mean) * (v[k] - mean);
    inv = 1.0f / sqrtf(sq / (float)n + 1e-8f);
    for (k = 0; k < n; k++) v[k] = (v[k] - mean) * inv * coef[k] + bias[k];
}

static inline float el_act_f32(float x, int32_t sigmoid) { return sigmoid ? el_sigmoid_f32(x) : tanhf(x); }

/* Eval: `steps` steps of `batch` rows, laid out by strides as edge_lstm_f32_run's (x, aux at the same strides;
 * aux NULL without auxiliary weights); h (batch, n_output), c (batch, n_state). */
static inline void edge_lstm_var_run(const edge_lstm_var_t *v, const edge_node_t *node, edge_ctx_t *ctx, const float *x,
                                     const float *aux, int64_t a_step, int64_t a_batch, float *hs, float *cs, float *y,
                                     int32_t steps, int32_t batch, int64_t x_step, int64_t x_batch, int64_t y_step,
                                     int64_t y_batch) {
    const el_parts_t *a = &v->at;
    const int32_t S = v->n_state, N = v->n_output, I = v->n_input, A = v->n_aux, first = v->cifg ? 1 : 0;
    float *gate = (float *)edge_scratch(ctx, node, v->gates);
    int8_t *qx = v->hybrid ? (int8_t *)edge_scratch(ctx, node, v->qrows) : NULL, *qa = qx ? qx + I : NULL, *qh = qx ? qx + I + A : NULL;
    const void *wi[4] = {0, 0, 0, 0}, *wr[4] = {0, 0, 0, 0}, *wa[4] = {0, 0, 0, 0}, *pe[3] = {0, 0, 0}, *pw = 0;
    const float *bias[4] = {0, 0, 0, 0}, *ln[4] = {0, 0, 0, 0}, *pb = 0;
    float si[4] = {0}, sr[4] = {0}, sa[4] = {0}, sp[3] = {0}, sproj = 0.0f, sx = 0.0f, sxa = 0.0f, sh = 0.0f;
    int32_t t, b, g, u, k, zx = 0, za = 0, zh = 0;
    for (g = first; g < 4; g++) {
        const edge_tensor_t *ti = edge_in(ctx, node, a->in_w[g]), *tr = edge_in(ctx, node, a->rec_w[g]);
        wi[g] = ti->data;
        wr[g] = tr->data;
        si[g] = ti->scale;
        sr[g] = tr->scale;
        bias[g] = (const float *)edge_in(ctx, node, a->bias[g])->data;
        if (el_has(node, ctx, a->ln[g])) ln[g] = (const float *)edge_in(ctx, node, a->ln[g])->data;
        if (A > 0) {
            wa[g] = edge_in(ctx, node, a->aux_w[g])->data;
            sa[g] = edge_in(ctx, node, a->aux_w[g])->scale;
        }
    }
    for (k = 0; k < 3; k++)
        if (el_has(node, ctx, a->peep[k])) {
            pe[k] = edge_in(ctx, node, a->peep[k])->data;
            sp[k] = edge_in(ctx, node, a->peep[k])->scale;
        }
    if (el_has(node, ctx, a->proj_w)) {
        pw = edge_in(ctx, node, a->proj_w)->data;
        sproj = edge_in(ctx, node, a->proj_w)->scale;
        if (el_has(node, ctx, a->proj_b)) pb = (const float *)edge_in(ctx, node, a->proj_b)->data;
    }
    for (t = 0; t < steps; t++)
        for (b = 0; b < batch; b++) {
            const float *xr = x + t * x_step + b * x_batch, *ar = A > 0 ? aux + t * a_step + b * a_batch : NULL;
            float *h = hs + (int64_t)b * N, *c = cs + (int64_t)b * S, *yr = y + t * y_step + b * y_batch;
            if (v->hybrid) {
                eh_quantize_row(xr, I, v->asymmetric, qx, &sx, &zx);
                if (A > 0) eh_quantize_row(ar, A, v->asymmetric, qa, &sxa, &za);
                eh_quantize_row(h, N, v->asymmetric, qh, &sh, &zh);
            }
            /* the gates' products (bias first, unless layer norm adds it after normalizing), as LiteRT's order */
            for (g = first; g < 4; g++)
                for (u = 0; u < S; u++) {
                    float acc = ln[g] ? 0.0f : bias[g][u];
                    if (v->hybrid) {
                        acc += eh_product(qx, (const int8_t *)wi[g] + (int64_t)u * I, I, zx, sx * si[g]);
                        if (A > 0) acc += eh_product(qa, (const int8_t *)wa[g] + (int64_t)u * A, A, za, sxa * sa[g]);
                        acc += eh_product(qh, (const int8_t *)wr[g] + (int64_t)u * N, N, zh, sh * sr[g]);
                    } else {
                        acc += el_dot_f32(xr, (const float *)wi[g] + (int64_t)u * I, I);
                        if (A > 0) acc += el_dot_f32(ar, (const float *)wa[g] + (int64_t)u * A, A);
                        acc += el_dot_f32(h, (const float *)wr[g] + (int64_t)u * N, N);
                    }
                    gate[g * S + u] = acc;
                }
            /* peephole on the previous cell (input: pe[0], forget: pe[1]); hybrid weights are scale x int8 */
            for (g = first; g < 2; g++)
                if (pe[g])
                    for (u = 0; u < S; u++)
                        gate[g * S + u] += (v->hybrid ? sp[g] * (float)((const int8_t *)pe[g])[u] : ((const float *)pe[g])[u]) * c[u];
            for (g = first; g < 3; g++)
                if (ln[g]) el_layer_norm_f32(gate + g * S, S, ln[g], bias[g]);
            for (u = 0; u < S; u++) {
                const float fg = el_sigmoid_f32(gate[S + u]), cg = el_act_f32(gate[2 * S + u], v->cell_sigmoid);
                const float ig = v->cifg ? 1.0f - fg : el_sigmoid_f32(gate[u]);
                float cv = fg * c[u] + ig * cg;
                if (v->cell_clip > 0.0f) cv = cv < -v->cell_clip ? -v->cell_clip : (cv > v->cell_clip ? v->cell_clip : cv);
                c[u] = cv;
                if (pe[2]) gate[3 * S + u] += (v->hybrid ? sp[2] * (float)((const int8_t *)pe[2])[u] : ((const float *)pe[2])[u]) * cv;
            }
            if (ln[3]) el_layer_norm_f32(gate + 3 * S, S, ln[3], bias[3]);
            for (u = 0; u < S; u++) gate[u] = el_sigmoid_f32(gate[3 * S + u]) * el_act_f32(c[u], v->cell_sigmoid); /* o act(c) */
            if (!pw) {
                memcpy(yr, gate, sizeof(float) * (size_t)S);
            } else {
                if (v->hybrid) eh_quantize_row(gate, S, v->asymmetric, qh, &sh, &zh);
                for (k = 0; k < N; k++) {
                    float acc = pb ? pb[k] : 0.0f;
                    acc += v->hybrid ? eh_product(qh, (const int8_t *)pw + (int64_t)k * S, S, zh, sh * sproj)
                                     : el_dot_f32(gate, (const float *)pw + (int64_t)k * S, S);
                    if (v->proj_clip > 0.0f) acc = acc < -v->proj_clip ? -v->proj_clip : (acc > v->proj_clip ? v->proj_clip : acc);
                    yr[k] = acc;
                }
            }
            memcpy(h, yr, sizeof(float) * (size_t)N);
        }
}


#endif /* EDGE_LSTM_H */
