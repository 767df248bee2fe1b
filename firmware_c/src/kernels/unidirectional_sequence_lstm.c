/* UNIDIRECTIONAL_SEQUENCE_LSTM: integer (int8 or int16 activations, int8 weights, int16 cell state, int32 /
 * int64 biases) and float32, with the hidden and cell state in variable tensors kept across invokes
 * (edge_sdk/kernels/sequence.py, TFLM unidirectional_sequence_lstm.cc + lstm_eval*.cc).
 *
 * Integer arithmetic of TFLM's kernel: gate pre-activations are fixed at Q3.12 and gate outputs at Q0.15
 * (the operator's intermediates are ignored). Per time step and batch row, each of the four gates (input,
 * forget, cell, output) is its input product (with bias) and its recurrent product, each requantized and
 * saturated to int16, then added with saturation; sigmoid (the cell gate: tanh, or sigmoid when the fused
 * activation says so) through TFLM's int16 table with linear interpolation; then
 *     c = sat16(f * c) + sat16(i * g)  (each product requantized), optionally clipped,
 *     h = clamp(tanh(c) * o requantized + h_zp).
 * The 16x8 variant requantizes the gate products from int64 sums (MultiplyByQuantizedMultiplier int64).
 * No peephole, projection, layer normalization or CIFG, as in TFLM.
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(UNIDIRECTIONAL_SEQUENCE_LSTM, unidirectional_sequence_lstm, 4)

#define LSTM_OPTS 71 /* UnidirectionalSequenceLSTMOptions: 0 fused_activation_function, 1 cell_clip,
                        2 proj_clip, 3 time_major, 4 asymmetric_quantize_inputs */

static const int32_t in_w[4] = {1, 2, 3, 4}, rec_w[4] = {5, 6, 7, 8}, bias_in[4] = {12, 13, 14, 15};

typedef struct {
    int32_t steps, batch, n_input, n_state;
    int32_t time_major, is_float, wide, cell_sigmoid;
    int32_t scratch;
    /* integer */
    int32_t in_m[4], in_s[4], rec_m[4], rec_s[4];
    int64_t *in_fold;   /* 4S: bias - x_zp * row sum of the input weights */
    int64_t *rec_fold;  /* 4S: -h_zp * row sum of the recurrent weights */
    int32_t fc_m, fc_s, ig_m, ig_s, h_m, h_s;
    int32_t tanh_mult, tanh_shift;
    int32_t clip_q;     /* 0: no cell clip */
    int32_t h_zp, hmin, hmax;
    /* float */
    float cell_clip;
} lstm_data_t;

/* x >> s rounding toward minus infinity, for any sign. */
static int64_t floor_shift(int64_t x, int32_t s) { return x >= 0 ? x >> s : ~((~x) >> s); }

static int64_t scale_input(int64_t x, int32_t mult, int32_t lshift) {
    int64_t m = mult, rounding;
    if (m == 0) { /* power-of-two input scale: the 3/4 scaling of the table's reach */
        m = (int64_t)3 << lshift;
        lshift = 0;
    }
    rounding = lshift > 0 ? (int64_t)1 << (lshift - 1) : 0;
    return floor_shift(x * m + rounding, lshift);
}

/* The int16 logistic and tanh (Q0.15 out) of reference_integer_ops, with their input scaling. */
static int32_t logistic16(int64_t x, int32_t mult, int32_t lshift) { return ea_sigmoid16_lookup(scale_input(x, mult, lshift)); }
static int32_t tanh16(int64_t x, int32_t mult, int32_t lshift) { return ea_tanh16_lookup(scale_input(x, mult, lshift)); }

/* round(log2(x)) in float32, halves away from zero (TFLite CheckedLog2's value). */
static int32_t checked_log2(float x) {
    float v = logf(x) * (1.0f / logf(2.0f));
    return (int32_t)(v < 0 ? -floorf(-v + 0.5f) : floorf(v + 0.5f));
}

edge_status_t edge_prepare_unidirectional_sequence_lstm(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == LSTM_OPTS;
    const int32_t act = has_opts ? edge_opt_int(node, 0, 1, 0) : EDGE_ACT_TANH;
    const float cell_clip = has_opts ? edge_opt_float(node, 1, 0.0f) : 0.0f;
    const int32_t time_major = has_opts ? edge_opt_int(node, 3, 1, 0) != 0 : 0;
    static const int32_t unsupported[9] = {9, 10, 11, 16, 17, 20, 21, 22, 23};
    edge_tensor_t *x, *h, *c, *y, *w0, *b0;
    lstm_data_t *d;
    int32_t k, g, u, steps, batch, n_input, S, shape[3];
    edge_status_t s;

    if (node->n_inputs != 24 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM expects 24 inputs and 1 output");
    for (k = 0; k < 9; k++)
        if (edge_in(ctx, node, unsupported[k]))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: peephole, projection and layer-norm variants are not supported");
    if (!edge_in(ctx, node, 1) || !edge_in(ctx, node, 5) || !edge_in(ctx, node, 12))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: CIFG (no input gate) is not supported");
    for (g = 0; g < 4; g++)
        if (!edge_in(ctx, node, in_w[g]) || !edge_in(ctx, node, rec_w[g]) || !edge_in(ctx, node, bias_in[g]))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: gate weights and biases are required");
    x = edge_in(ctx, node, 0);
    h = edge_in(ctx, node, 18);
    c = edge_in(ctx, node, 19);
    y = edge_out(ctx, node, 0);
    if (!x || !h || !c) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: input and states are required");
    if (!h->is_variable || !c->is_variable) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: states must be variable tensors");
    if (x->rank != 3) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: input must be 3-D");
    if (h->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: hidden state must be 2-D");
    steps = time_major ? x->dims[0] : x->dims[1];
    batch = time_major ? x->dims[1] : x->dims[0];
    n_input = x->dims[2];
    S = h->dims[1];
    for (g = 0; g < 4; g++) {
        const edge_tensor_t *wi = edge_in(ctx, node, in_w[g]), *wr = edge_in(ctx, node, rec_w[g]);
        const edge_tensor_t *bi = edge_in(ctx, node, bias_in[g]);
        if (wi->rank != 2 || wi->dims[0] != S || wi->dims[1] != n_input) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: input weights shape");
        if (wr->rank != 2 || wr->dims[0] != S || wr->dims[1] != S) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: recurrent weights shape");
        if (bi->rank != 1 || bi->dims[0] != S) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: bias shape");
    }
    if (edge_tensor_elements(h) != (int64_t)batch * S || edge_tensor_elements(c) != (int64_t)batch * S)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: state sizes do not match batch x units");
    for (g = 0; g < 4; g++)
        if (!edge_in(ctx, node, in_w[g])->is_const || !edge_in(ctx, node, rec_w[g])->is_const ||
            !edge_in(ctx, node, bias_in[g])->is_const)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: weights and biases must be constant");
    shape[0] = x->dims[0];
    shape[1] = x->dims[1];
    shape[2] = S;
    if ((s = edge_set_output_shape(ctx, node, 0, shape, 3)) != EDGE_OK) return s;
    if (h->type != x->type || y->type != x->type)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: input, hidden state and output must share a type");
    w0 = edge_in(ctx, node, 1);
    b0 = edge_in(ctx, node, 12);
    for (g = 0; g < 4; g++)
        if (edge_in(ctx, node, in_w[g])->type != w0->type || edge_in(ctx, node, rec_w[g])->type != w0->type ||
            edge_in(ctx, node, bias_in[g])->type != b0->type)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: gate weights / biases must each share one type");
    if (act != EDGE_ACT_TANH && act != 6 /* SIGMOID */)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: cell gate activation (TANH or SIGMOID)");

    d = (lstm_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->steps = steps;
    d->batch = batch;
    d->n_input = n_input;
    d->n_state = S;
    d->time_major = time_major;
    d->cell_sigmoid = act == 6;
    if ((s = edge_request_scratch(ctx, node, sizeof(int32_t) * 4 * (size_t)(S ? S : 1), &d->scratch)) != EDGE_OK) return s;

    if (x->type == EDGE_FLOAT32) {
        if (w0->type != EDGE_FLOAT32 || b0->type != EDGE_FLOAT32 || c->type != EDGE_FLOAT32)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: hybrid LSTM (float input, quantized weights)");
        d->is_float = 1;
        d->cell_clip = cell_clip > 0.0f ? cell_clip : 0.0f;
        return EDGE_OK;
    }
    if (x->type != EDGE_INT8 && x->type != EDGE_INT16) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "LSTM runs FLOAT32, INT8 or INT16 input");
    if (w0->type != EDGE_INT8) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: quantized LSTM needs INT8 weights");
    d->wide = x->type == EDGE_INT16;
    if (b0->type != (d->wide ? EDGE_INT64 : EDGE_INT32))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: biases must be INT32 (int8) / INT64 (int16)");
    if (c->type != EDGE_INT16) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: cell state must be INT16");
    if (!ea_per_tensor(x) || !ea_per_tensor(h) || !ea_per_tensor(c))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: input and states must be quantized per tensor");
    for (g = 0; g < 4; g++)
        if (!ea_per_tensor(edge_in(ctx, node, in_w[g])) || !ea_per_tensor(edge_in(ctx, node, rec_w[g])))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: weights must be quantized per tensor");
    d->in_fold = (int64_t *)edge_alloc_persistent(ctx, sizeof(int64_t) * 4 * (size_t)(S ? S : 1));
    d->rec_fold = (int64_t *)edge_alloc_persistent(ctx, sizeof(int64_t) * 4 * (size_t)(S ? S : 1));
    if (!d->in_fold || !d->rec_fold) return EDGE_ARENA_TOO_SMALL;
    for (g = 0; g < 4; g++) {
        const edge_tensor_t *wi = edge_in(ctx, node, in_w[g]), *wr = edge_in(ctx, node, rec_w[g]);
        const edge_tensor_t *bi = edge_in(ctx, node, bias_in[g]);
        /* gate multipliers: float32 product of the scales, then in double over the fixed Q3.12 scale */
        float pi = x->scale * wi->scale, pr = h->scale * wr->scale;
        if (edge_quantize_multiplier((double)pi * 4096.0, &d->in_m[g], &d->in_s[g]) != 0 ||
            edge_quantize_multiplier((double)pr * 4096.0, &d->rec_m[g], &d->rec_s[g]) != 0)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: scales are not finite");
        for (u = 0; u < S; u++) {
            const int8_t *ri = (const int8_t *)wi->data + (int64_t)u * n_input;
            const int8_t *rr = (const int8_t *)wr->data + (int64_t)u * S;
            int64_t si = 0, sr = 0, bv;
            for (k = 0; k < n_input; k++) si += ri[k];
            for (k = 0; k < S; k++) sr += rr[k];
            if (d->wide) memcpy(&bv, (const uint8_t *)bi->data + 8 * (int64_t)u, 8);
            else bv = ((const int32_t *)bi->data)[u];
            d->in_fold[g * S + u] = bv - (int64_t)x->zero_point * si;
            d->rec_fold[g * S + u] = -(int64_t)h->zero_point * sr;
        }
    }
    {
        const double gate_out = 1.0 / 32768.0; /* Q0.15 */
        int32_t power = checked_log2(c->scale);
        int32_t shift = 15 + power - 3;
        if (shift < 0) { d->tanh_mult = 3; d->tanh_shift = -shift; }
        else { d->tanh_mult = 0; d->tanh_shift = shift; }
        if (shift > 40 || shift < -40) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: cell state scale");
        if (edge_quantize_multiplier(gate_out * (double)c->scale / (double)c->scale, &d->fc_m, &d->fc_s) != 0 ||
            edge_quantize_multiplier(gate_out * gate_out / (double)c->scale, &d->ig_m, &d->ig_s) != 0 ||
            edge_quantize_multiplier(gate_out * gate_out / (double)h->scale, &d->h_m, &d->h_s) != 0)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: state scales are not finite");
        if (cell_clip > 0.0f) {
            double q = (double)cell_clip / (double)c->scale;
            q = q < -32768.0 ? -32768.0 : (q > 32767.0 ? 32767.0 : q);
            d->clip_q = (int32_t)q; /* truncates, as static_cast */
        }
    }
    d->h_zp = h->zero_point;
    d->hmin = d->wide ? -32768 : -128;
    d->hmax = d->wide ? 32767 : 127;
    return EDGE_OK;
}

static float sigmoid_f32(float v) {
    if (v > 16.619047164916992f) return 1.0f;
    if (v < -9.0f) return expf(v);
    return 1.0f / (1.0f + expf(-v));
}

static void lstm_float(const lstm_data_t *d, const edge_node_t *node, edge_ctx_t *ctx) {
    const int32_t S = d->n_state, I = d->n_input;
    const float *x = (const float *)edge_in(ctx, node, 0)->data;
    float *hs = (float *)edge_in(ctx, node, 18)->data, *cs = (float *)edge_in(ctx, node, 19)->data;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    float *gate = (float *)edge_scratch(ctx, node, d->scratch);
    int32_t t, b, g, u, k;
    for (t = 0; t < d->steps; t++)
        for (b = 0; b < d->batch; b++) {
            const int64_t row = d->time_major ? (int64_t)t * d->batch + b : (int64_t)b * d->steps + t;
            const float *xr = x + row * I;
            float *h = hs + (int64_t)b * S, *c = cs + (int64_t)b * S;
            for (g = 0; g < 4; g++) {
                const float *wi = (const float *)edge_in(ctx, node, in_w[g])->data;
                const float *wr = (const float *)edge_in(ctx, node, rec_w[g])->data;
                const float *bi = (const float *)edge_in(ctx, node, bias_in[g])->data;
                for (u = 0; u < S; u++) {
                    float a = 0.0f, r = 0.0f;
                    for (k = 0; k < I; k++) a += xr[k] * wi[(int64_t)u * I + k];
                    for (k = 0; k < S; k++) r += h[k] * wr[(int64_t)u * S + k];
                    gate[g * S + u] = (a + bi[u]) + r;
                }
            }
            for (u = 0; u < S; u++) {
                float ig = sigmoid_f32(gate[u]), fg = sigmoid_f32(gate[S + u]);
                float cg = d->cell_sigmoid ? sigmoid_f32(gate[2 * S + u]) : tanhf(gate[2 * S + u]);
                float og = sigmoid_f32(gate[3 * S + u]);
                float cv = fg * c[u] + ig * cg;
                if (d->cell_clip > 0.0f) cv = cv < -d->cell_clip ? -d->cell_clip : (cv > d->cell_clip ? d->cell_clip : cv);
                c[u] = cv;
                h[u] = tanhf(cv) * og;
                y[row * S + u] = h[u];
            }
        }
}

/* One gate product row: sum_k v[k] * w[k] over int8 weights, v int8 or int16. */
static int64_t dot_wide(const int16_t *v, const int8_t *w, int32_t n) {
    int64_t s = 0;
    int32_t k;
    for (k = 0; k < n; k++) s += (int32_t)v[k] * (int32_t)w[k];
    return s;
}
static uint32_t dot_narrow(const int8_t *v, const int8_t *w, int32_t n) {
    uint32_t s = 0; /* TFLM's int32 accumulator, wrapping */
    int32_t k;
    for (k = 0; k < n; k++) s += (uint32_t)((int32_t)v[k] * (int32_t)w[k]);
    return s;
}

void edge_eval_unidirectional_sequence_lstm(const edge_node_t *node, edge_ctx_t *ctx) {
    const lstm_data_t *d = (const lstm_data_t *)node->user_data;
    const int32_t S = d->n_state, I = d->n_input;
    const edge_tensor_t *tx = edge_in(ctx, node, 0);
    edge_tensor_t *th = edge_in(ctx, node, 18), *tc = edge_in(ctx, node, 19), *ty = edge_out(ctx, node, 0);
    int32_t *gate;
    int16_t *cs;
    int32_t t, b, g, u;

    if (d->is_float) {
        lstm_float(d, node, ctx);
        return;
    }
    gate = (int32_t *)edge_scratch(ctx, node, d->scratch);
    cs = (int16_t *)tc->data;
    for (t = 0; t < d->steps; t++)
        for (b = 0; b < d->batch; b++) {
            const int64_t row = d->time_major ? (int64_t)t * d->batch + b : (int64_t)b * d->steps + t;
            int16_t *c = cs + (int64_t)b * S;
            /* the four gates from the previous hidden state */
            for (g = 0; g < 4; g++) {
                const int8_t *wi = (const int8_t *)edge_in(ctx, node, in_w[g])->data;
                const int8_t *wr = (const int8_t *)edge_in(ctx, node, rec_w[g])->data;
                for (u = 0; u < S; u++) {
                    int32_t a, r;
                    if (d->wide) {
                        const int16_t *xr = (const int16_t *)tx->data + row * I;
                        const int16_t *h = (const int16_t *)th->data + (int64_t)b * S;
                        a = edge_mbqm64(dot_wide(xr, wi + (int64_t)u * I, I) + d->in_fold[g * S + u], d->in_m[g], d->in_s[g]);
                        r = edge_mbqm64(dot_wide(h, wr + (int64_t)u * S, S) + d->rec_fold[g * S + u], d->rec_m[g], d->rec_s[g]);
                    } else {
                        const int8_t *xr = (const int8_t *)tx->data + row * I;
                        const int8_t *h = (const int8_t *)th->data + (int64_t)b * S;
                        uint32_t sa = dot_narrow(xr, wi + (int64_t)u * I, I) + (uint32_t)(uint64_t)d->in_fold[g * S + u];
                        uint32_t sr = dot_narrow(h, wr + (int64_t)u * S, S) + (uint32_t)(uint64_t)d->rec_fold[g * S + u];
                        a = edge_mbqm(edge_wrap32(sa), d->in_m[g], d->in_s[g]);
                        r = edge_mbqm(edge_wrap32(sr), d->rec_m[g], d->rec_s[g]);
                    }
                    gate[g * S + u] = ea_sat16((int64_t)ea_sat16(a) + ea_sat16(r));
                }
            }
            /* cell and hidden state */
            for (u = 0; u < S; u++) {
                const int32_t ig = logistic16(gate[u], 0, 0), fg = logistic16(gate[S + u], 0, 0);
                const int32_t cg = d->cell_sigmoid ? logistic16(gate[2 * S + u], 0, 0) : tanh16(gate[2 * S + u], 0, 0);
                const int32_t og = logistic16(gate[3 * S + u], 0, 0);
                int32_t cv = ea_sat16(edge_mbqm(fg * (int32_t)c[u], d->fc_m, d->fc_s));
                int64_t hv;
                cv = ea_sat16((int64_t)cv + ea_sat16(edge_mbqm(ig * cg, d->ig_m, d->ig_s)));
                if (d->clip_q > 0) cv = cv < -d->clip_q ? -d->clip_q : (cv > d->clip_q ? d->clip_q : cv);
                c[u] = (int16_t)cv;
                hv = (int64_t)edge_mbqm(tanh16(cv, d->tanh_mult, d->tanh_shift) * og, d->h_m, d->h_s) + d->h_zp;
                hv = hv < d->hmin ? d->hmin : (hv > d->hmax ? d->hmax : hv);
                if (d->wide) {
                    ((int16_t *)th->data)[(int64_t)b * S + u] = (int16_t)hv;
                    ((int16_t *)ty->data)[row * S + u] = (int16_t)hv;
                } else {
                    ((int8_t *)th->data)[(int64_t)b * S + u] = (int8_t)hv;
                    ((int8_t *)ty->data)[row * S + u] = (int8_t)hv;
                }
            }
        }
}
