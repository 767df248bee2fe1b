/* UNIDIRECTIONAL_SEQUENCE_LSTM: integer (int8 or int16 activations, int8 weights, int16 cell state, int32 /
 * int64 biases) and float32, with the hidden and cell state in variable tensors kept across invokes
 * (edge_sdk/runtime/kernels/sequence.py, TFLM unidirectional_sequence_lstm.cc + lstm_eval*.cc).
 *
 * Integer arithmetic of TFLM's kernel: gate pre-activations are fixed at Q3.12 and gate outputs at Q0.15
 * (the operator's intermediates are ignored). Per time step and batch row, each of the four gates (input,
 * forget, cell, output) is its input product (with bias) and its recurrent product, each requantized and
 * saturated to int16, then added with saturation; sigmoid (the cell gate: tanh, or sigmoid when the fused
 * activation says so) through TFLM's int16 table with linear interpolation; then
 *     c = sat16(f * c) + sat16(i * g)  (each product requantized), optionally clipped,
 *     h = clamp(tanh(c) * o requantized + h_zp).
 * The 16x8 variant requantizes the gate products from int64 sums (MultiplyByQuantizedMultiplier int64).
 * No peephole, projection, layer normalization or CIFG in the integer forms, as in TFLM; but an INT8 LSTM with
 * layer normalization (inputs 20-23, which TFLM refuses) runs LiteRT's integer LSTM, the LSTM op's (edge_lstm.h
 * edge_lstm_int8_step). A FLOAT32 one with CIFG, peephole, projection or layer normalization, or with INT8 weights
 * (LiteRT's hybrid kernel), runs the LSTM with options of edge_lstm.h (edge_lstm_var_run) over the sequence.
 *
 * Memory, the general loops (hosts, Cortex-M0+): no per-unit tables. Each unit's four gates are computed together
 * from the previous hidden state, the unit's new hidden value goes straight to the output row, and the row is
 * copied into the hidden state once every unit is done; the zero points are subtracted from the vectors (as TFLM's
 * reference FullyConnected does) instead of being folded into per-unit bias tables. int8: once per row, into a
 * small scratch of (input + units) int16 that the dot products then read (int16 x int8 products vectorize).
 * DSP cores (Cortex-M4/M7, int8): CMSIS-NN's way instead, and more (eval_int8_dsp): effective biases with the zero
 * points folded in (4 or 8 x units int32, persistent), the input products of two steps at once, the recurrent
 * products skipped while the hidden state is all its zero point.
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_conv.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint_act.h"
#include "../edge_float.h"
#include "../edge_hybrid.h"
#include "../edge_lstm.h"

EDGE_KERNEL(UNIDIRECTIONAL_SEQUENCE_LSTM, unidirectional_sequence_lstm, 4, "FLOAT32 INT8 INT16", "float: CIFG/peephole/projection/layer norm, INT8 weights (hybrid); quantized: INT8 weights, no CIFG/peephole/projection; layer norm: INT8 only (LiteRT's integer LSTM, 5 intermediates)")

#define LSTM_OPTS 71 /* UnidirectionalSequenceLSTMOptions: 0 fused_activation_function, 1 cell_clip,
                        2 proj_clip, 3 time_major, 4 asymmetric_quantize_inputs */

static const int32_t in_w[4] = {1, 2, 3, 4}, rec_w[4] = {5, 6, 7, 8}, bias_in[4] = {12, 13, 14, 15};

typedef struct {
    int32_t steps, batch, n_input, n_state;
    /* integer */
    int32_t in_m[4], rec_m[4];
    int32_t fc_m, ig_m, h_m;
    int32_t x_zp, h_zp;
    int32_t scratch;    /* int8 with zero points in int8 range: (n_input + n_state) int16 centred vectors; -1 */
    edge_lstm_int8_t *layer_norm; /* INT8 with layer normalization: LiteRT's integer LSTM (TFLM has none); NULL */
    edge_lstm_var_t *var; /* FLOAT32 with CIFG, peephole, projection, layer norm or INT8 weights (edge_lstm.h); NULL */
    int16_t clip_q;     /* 0: no cell clip */
    int8_t in_s[4], rec_s[4];
    int8_t fc_s, ig_s, h_s;
    int8_t tanh_mult, tanh_shift;
    uint8_t time_major, is_float, wide, cell_sigmoid;
    /* float */
    float cell_clip;
#if EDGE_DSP
    /* int8 on DSP cores (eval_int8_dsp): the zero points folded into effective biases at prepare, as CMSIS-NN's
     * kernel sums: fold[4u + g] = bias_g[u] - x_zp * sum_k wi_g[u][k] and fold[4S + 4u + g] = -h_zp * sum_k
     * wr_g[u][k] (wrapping int32, as the accumulators; only with h_zp != 0), 4 or 8 * S int32 persistent; the
     * scratch holds the row's widened vectors. NULL: the general loops below */
    int32_t *fold;
    edge_conv_rqw_t in_q[4], rec_q[4], fc_q, ig_q, h_q; /* the gate, cell and hidden requantizations */
    uint8_t rq_right; /* every one of them a right shift (no left shift, none of 0): lstm_rq's short form */
    int32_t tanh_in_mul, tanh_in_rnd, tanh_in_shift; /* tanh(c)'s input in int32: (c * mul + rnd) >> shift;
                                                       * mul 0: tanh16's int64 */
#endif
} lstm_data_t;

#if EDGE_DSP
static edge_status_t prepare_int8_dsp(lstm_data_t *d, edge_node_t *node, edge_ctx_t *ctx);
#endif

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

/* INT8 with layer normalization (inputs 20-23): TFLM refuses it, LiteRT runs its integer LSTM (edge_lstm.h). */
static edge_status_t prepare_layer_norm_int8(edge_node_t *node, edge_ctx_t *ctx, int32_t time_major, float cell_clip) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    lstm_data_t *d;
    int32_t shape[3];
    edge_status_t s;
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (x->rank != 3) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: input must be 3-D");
    d = (lstm_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->time_major = (uint8_t)time_major;
    d->steps = time_major ? x->dims[0] : x->dims[1];
    d->batch = time_major ? x->dims[1] : x->dims[0];
    d->n_input = x->dims[2];
    d->scratch = -1;
    if ((s = edge_lstm_int8_prepare(node, ctx, d->batch, d->n_input, cell_clip > 0.0f ? cell_clip : 0.0f,
                                    &d->layer_norm)) != EDGE_OK)
        return s;
    d->n_state = d->layer_norm->n_state;
    shape[0] = x->dims[0];
    shape[1] = x->dims[1];
    shape[2] = d->n_state;
    return edge_set_output_shape(ctx, node, 0, shape, 3);
}

/* The layer-norm INT8 LSTM over the sequence: one integer step per time step, every batch row. */
static void eval_layer_norm_int8(const lstm_data_t *d, const edge_node_t *node, edge_ctx_t *ctx) {
    const int32_t T = d->steps, B = d->batch, I = d->n_input, S = d->n_state;
    const int8_t *x = (const int8_t *)edge_in(ctx, node, 0)->data;
    int8_t *y = (int8_t *)edge_out(ctx, node, 0)->data;
    int32_t t;
    for (t = 0; t < T; t++) /* row (t, b): t * B + b (time major) or b * T + t */
        edge_lstm_int8_step(d->layer_norm, node, ctx, x + (d->time_major ? (int64_t)t * B * I : (int64_t)t * I),
                            d->time_major ? I : (int64_t)T * I, (int8_t *)edge_in(ctx, node, 18)->data,
                            (int16_t *)edge_in(ctx, node, 19)->data,
                            y + (d->time_major ? (int64_t)t * B * S : (int64_t)t * S), d->time_major ? S : (int64_t)T * S, B);
}

static const el_parts_t uni_parts = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11}, {12, 13, 14, 15}, 16, 17,
                                     {20, 21, 22, 23}, {-1, -1, -1, -1}, 18, 19};

/* FLOAT32 with CIFG, peephole, projection or layer normalization, or with INT8 weights (LiteRT's hybrid kernel):
 * the LSTM with options of edge_lstm.h over the sequence. */
static edge_status_t prepare_float_variant(edge_node_t *node, edge_ctx_t *ctx, int32_t time_major, int32_t act,
                                           float cell_clip, float proj_clip, int32_t asymmetric) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    lstm_data_t *d;
    int32_t shape[3];
    edge_status_t s;
    if ((node->n_inputs != 20 && node->n_inputs != 24) || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM expects 20 or 24 inputs and 1 output");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (x->rank != 3) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: input must be 3-D");
    if (act != EDGE_ACT_TANH && act != 6 /* SIGMOID */)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: cell gate activation (TANH or SIGMOID)");
    if (edge_out(ctx, node, 0)->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "LSTM: output must be FLOAT32");
    d = (lstm_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    memset(d, 0, sizeof *d);
    node->user_data = d;
    d->var = (edge_lstm_var_t *)edge_alloc_persistent(ctx, sizeof *d->var);
    if (!d->var) return EDGE_ARENA_TOO_SMALL;
    memset(d->var, 0, sizeof *d->var);
    d->time_major = (uint8_t)time_major;
    d->steps = time_major ? x->dims[0] : x->dims[1];
    d->batch = time_major ? x->dims[1] : x->dims[0];
    d->n_input = x->dims[2];
    d->scratch = -1;
    d->var->cell_clip = cell_clip > 0.0f ? cell_clip : 0.0f;
    d->var->proj_clip = proj_clip > 0.0f ? proj_clip : 0.0f;
    d->var->cell_sigmoid = act == 6;
    d->var->asymmetric = asymmetric;
    if ((s = edge_lstm_var_prepare(node, ctx, &uni_parts, d->n_input, 0, d->batch, d->var)) != EDGE_OK) return s;
    d->n_state = d->var->n_output; /* the output's width */
    shape[0] = x->dims[0];
    shape[1] = x->dims[1];
    shape[2] = d->var->n_output;
    return edge_set_output_shape(ctx, node, 0, shape, 3);
}

static void eval_float_variant(const lstm_data_t *d, const edge_node_t *node, edge_ctx_t *ctx) {
    const int32_t T = d->steps, B = d->batch, I = d->n_input, N = d->var->n_output;
    edge_lstm_var_run(d->var, node, ctx, (const float *)edge_in(ctx, node, 0)->data, NULL, 0, 0,
                      (float *)edge_in(ctx, node, 18)->data, (float *)edge_in(ctx, node, 19)->data,
                      (float *)edge_out(ctx, node, 0)->data, T, B, d->time_major ? (int64_t)B * I : I,
                      d->time_major ? I : (int64_t)T * I, d->time_major ? (int64_t)B * N : N, d->time_major ? N : (int64_t)T * N);
}

edge_status_t edge_prepare_unidirectional_sequence_lstm(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == LSTM_OPTS;
    const int32_t act = has_opts ? edge_opt_int(node, 0, 1, 0) : EDGE_ACT_TANH;
    const float cell_clip = has_opts ? edge_opt_float(node, 1, 0.0f) : 0.0f;
    const int32_t time_major = has_opts ? edge_opt_int(node, 3, 1, 0) != 0 : 0;
    static const int32_t unsupported[9] = {9, 10, 11, 16, 17, 20, 21, 22, 23};
    edge_tensor_t *x, *h, *c, *y, *w0, *b0;
    lstm_data_t *d;
    int32_t k, g, steps, batch, n_input, S, shape[3];
    edge_status_t s;

    x = edge_in(ctx, node, 0);
    if (x && x->type == EDGE_FLOAT32 &&
        (edge_lstm_has_variant(node, ctx, &uni_parts) || (edge_in(ctx, node, 2) && edge_in(ctx, node, 2)->type == EDGE_INT8)))
        return prepare_float_variant(node, ctx, time_major, act, cell_clip, has_opts ? edge_opt_float(node, 2, 0.0f) : 0.0f,
                                     has_opts && edge_opt_int(node, 4, 1, 0) != 0);
    if (node->n_inputs != 24 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM expects 24 inputs and 1 output");
    if (x && x->type == EDGE_INT8 && edge_in(ctx, node, 21)) return prepare_layer_norm_int8(node, ctx, time_major, cell_clip);
    for (k = 0; k < 9; k++)
        if (edge_in(ctx, node, unsupported[k]))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: peephole, projection and layer-norm variants are not supported");
    if (!edge_in(ctx, node, 1) || !edge_in(ctx, node, 5) || !edge_in(ctx, node, 12))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: CIFG (no input gate) is not supported");
    for (g = 0; g < 4; g++)
        if (!edge_in(ctx, node, in_w[g]) || !edge_in(ctx, node, rec_w[g]) || !edge_in(ctx, node, bias_in[g]))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: gate weights and biases are required");
    h = edge_in(ctx, node, 18);
    c = edge_in(ctx, node, 19);
    y = edge_out(ctx, node, 0);
    if (!x || !h || !c) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: input and states are required");
    if (!h->is_variable || !c->is_variable) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: states must be variable tensors");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
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
    for (g = 0; g < 4; g++) {
        const edge_tensor_t *wi = edge_in(ctx, node, in_w[g]), *wr = edge_in(ctx, node, rec_w[g]);
        /* gate multipliers: float32 product of the scales, then in double over the fixed Q3.12 scale */
        float pi = x->scale * wi->scale, pr = h->scale * wr->scale;
        int32_t si, sr;
        if (edge_quantize_multiplier((double)pi * 4096.0, &d->in_m[g], &si) != 0 ||
            edge_quantize_multiplier((double)pr * 4096.0, &d->rec_m[g], &sr) != 0)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: scales are not finite");
        if (si < -127 || si > 127 || sr < -127 || sr > 127) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: gate scales out of range");
        d->in_s[g] = (int8_t)si;
        d->rec_s[g] = (int8_t)sr;
    }
    {
        const double gate_out = 1.0 / 32768.0; /* Q0.15 */
        int32_t power, shift, fs, is, hs;
        if (!(c->scale > 0.0f && c->scale <= 3.0e38f)) /* NaN, 0, negative or inf: no log2 to take */
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: cell state scale is not a positive finite number");
        power = checked_log2(c->scale);
        shift = 15 + power - 3;
        if (shift > 40 || shift < -40) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: cell state scale");
        if (shift < 0) { d->tanh_mult = 3; d->tanh_shift = (int8_t)-shift; }
        else { d->tanh_mult = 0; d->tanh_shift = (int8_t)shift; }
        if (edge_quantize_multiplier(gate_out * (double)c->scale / (double)c->scale, &d->fc_m, &fs) != 0 ||
            edge_quantize_multiplier(gate_out * gate_out / (double)c->scale, &d->ig_m, &is) != 0 ||
            edge_quantize_multiplier(gate_out * gate_out / (double)h->scale, &d->h_m, &hs) != 0)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: state scales are not finite");
        if (fs < -127 || fs > 127 || is < -127 || is > 127 || hs < -127 || hs > 127)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM: state scales out of range");
        d->fc_s = (int8_t)fs;
        d->ig_s = (int8_t)is;
        d->h_s = (int8_t)hs;
        if (cell_clip > 0.0f) {
            double q = (double)cell_clip / (double)c->scale;
            q = q < -32768.0 ? -32768.0 : (q > 32767.0 ? 32767.0 : q);
            d->clip_q = (int16_t)q; /* truncates, as static_cast */
        }
    }
    d->x_zp = x->zero_point;
    d->h_zp = h->zero_point;
    d->scratch = -1;
#if EDGE_DSP
    if (!d->wide && (s = prepare_int8_dsp(d, node, ctx)) != EDGE_OK) return s;
    if (d->fold) return EDGE_OK; /* eval_int8_dsp: no centred vectors */
#endif
    if (!d->wide && d->x_zp >= -128 && d->x_zp <= 127 && d->h_zp >= -128 && d->h_zp <= 127 &&
        (s = edge_request_scratch(ctx, node, sizeof(int16_t) * ((size_t)n_input + (size_t)S), &d->scratch)) != EDGE_OK)
        return s;
    return EDGE_OK;
}

#if EDGE_DSP
/* The DSP path's prepare-time work: effective biases (the zero points folded in, CMSIS-NN's kernel sums) and the
 * requantizations in edge_conv_rqw_t's form. Leaves d->fold NULL (the general loops run) when a multiplier is
 * outside edge_conv_rqw's range. */
static edge_status_t prepare_int8_dsp(lstm_data_t *d, edge_node_t *node, edge_ctx_t *ctx) {
    const int32_t S = d->n_state, I = d->n_input;
    int32_t g, u, k, *fold;
    int ok = 1;
    d->fold = NULL;
    for (g = 0; g < 4; g++)
        ok &= edge_conv_rqw_make(&d->in_q[g], d->in_m[g], d->in_s[g]) == 0 &&
              edge_conv_rqw_make(&d->rec_q[g], d->rec_m[g], d->rec_s[g]) == 0;
    ok &= edge_conv_rqw_make(&d->fc_q, d->fc_m, d->fc_s) == 0 && edge_conv_rqw_make(&d->ig_q, d->ig_m, d->ig_s) == 0 &&
          edge_conv_rqw_make(&d->h_q, d->h_m, d->h_s) == 0;
    if (!ok) return EDGE_OK;
    d->rq_right = 1;
    for (g = 0; g < 11; g++) {
        const edge_conv_rqw_t *q = g < 4 ? &d->in_q[g] : g < 8 ? &d->rec_q[g - 4]
                                 : g == 8 ? &d->fc_q : g == 9 ? &d->ig_q : &d->h_q;
        if (q->left || q->rs0) d->rq_right = 0;
    }
    /* tanh(c) input: scale_input(c, tanh_mult, tanh_shift) in int32 while |c| * 3 * 2^shift < 2^31 (c int16) */
    d->tanh_in_mul = 0;
    if (d->tanh_mult == 0 && d->tanh_shift <= 14) {
        d->tanh_in_mul = 3 << d->tanh_shift;
        d->tanh_in_rnd = d->tanh_in_shift = 0;
    } else if (d->tanh_mult == 3 && d->tanh_shift <= 30) {
        d->tanh_in_mul = 3;
        d->tanh_in_shift = d->tanh_shift;
        d->tanh_in_rnd = d->tanh_shift > 0 ? 1 << (d->tanh_shift - 1) : 0;
    }
    fold = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (d->h_zp ? 8 : 4) * (size_t)S);
    if (!fold) return EDGE_ARENA_TOO_SMALL;
    for (g = 0; g < 4; g++) {
        const int8_t *wi = (const int8_t *)edge_in(ctx, node, in_w[g])->data;
        const int8_t *wr = (const int8_t *)edge_in(ctx, node, rec_w[g])->data;
        const uint8_t *bi = (const uint8_t *)edge_in(ctx, node, bias_in[g])->data;
        for (u = 0; u < S; u++) {
            uint32_t si = 0, sr = 0;
            int32_t bv;
            for (k = 0; k < I; k++) si += (uint32_t)(int32_t)wi[(int64_t)u * I + k];
            for (k = 0; k < S; k++) sr += (uint32_t)(int32_t)wr[(int64_t)u * S + k];
            memcpy(&bv, bi + 4 * (int64_t)u, 4);
            fold[4 * u + g] = edge_wrap32((uint32_t)bv - (uint32_t)d->x_zp * si);
            if (d->h_zp) fold[4 * S + 4 * u + g] = edge_wrap32(0u - (uint32_t)d->h_zp * sr);
        }
    }
    d->fold = fold;
    /* two steps' inputs widened together, the hidden state widened (their multiple-of-4 parts: 2 * I4 + S4 int16),
     * two steps' input parts of the gates (8 * S int16): eval_int8_dsp */
    return edge_request_scratch(ctx, node, sizeof(int16_t) * (2 * (size_t)(I & ~3) + (size_t)(S & ~3) + 8 * (size_t)S),
                                &d->scratch);
}
#endif

static void lstm_float(const lstm_data_t *d, const edge_node_t *node, edge_ctx_t *ctx) {
    const int32_t S = d->n_state, I = d->n_input;
    edge_lstm_f32_t p;
    int32_t g;
    memset(&p, 0, sizeof p);
    for (g = 0; g < 4; g++) {
        p.wi[g] = (const float *)edge_in(ctx, node, in_w[g])->data;
        p.wr[g] = (const float *)edge_in(ctx, node, rec_w[g])->data;
        p.bias[g] = (const float *)edge_in(ctx, node, bias_in[g])->data;
    }
    p.w_stride = I;
    p.r_stride = S;
    p.n_input = I;
    p.n_state = S;
    p.cell_sigmoid = d->cell_sigmoid;
    p.cell_clip = d->cell_clip;
    /* rows of x and y: (t, b) at t * batch + b (time major) or b * steps + t */
    edge_lstm_f32_run(&p, (const float *)edge_in(ctx, node, 0)->data, (float *)edge_in(ctx, node, 18)->data,
                      (float *)edge_in(ctx, node, 19)->data, (float *)edge_out(ctx, node, 0)->data, d->steps, d->batch,
                      d->time_major ? (int64_t)d->batch * I : I, d->time_major ? I : (int64_t)d->steps * I,
                      d->time_major ? (int64_t)d->batch * S : S, d->time_major ? S : (int64_t)d->steps * S);
}

/* One gate product row with the zero point taken off the vector: sum_k (v[k] - zp) * w[k], int16 vector in
 * int64 (16x8), int8 vector in TFLM's wrapping int32 accumulator (the general path; see dot_centred). */
static int64_t dot_wide(const int16_t *v, int32_t zp, const int8_t *w, int32_t n) {
    int64_t s = 0;
    int32_t k;
    for (k = 0; k < n; k++) s += ((int64_t)v[k] - zp) * (int32_t)w[k];
    return s;
}

/* sum_k c[k] * w[k] of a centred int16 vector (|c| <= 255), wrapping at 32 bits; blocks of 16 (each block's sum
 * fits int32) let the compiler use vector multiply-adds. */
static uint32_t dot_centred(const int16_t *c, const int8_t *w, int32_t n) {
    uint32_t s = 0;
    int32_t k = 0, j;
    for (; k + 16 <= n; k += 16) {
        int32_t t = 0;
        for (j = 0; j < 16; j++) t += (int32_t)c[k + j] * (int32_t)w[k + j];
        s += (uint32_t)t;
    }
    for (; k < n; k++) s += (uint32_t)((int32_t)c[k] * (int32_t)w[k]);
    return s;
}

static uint32_t dot_narrow(const int8_t *v, int32_t zp, const int8_t *w, int32_t n) {
    uint32_t s = 0;
    int32_t k;
    for (k = 0; k < n; k++) s += ((uint32_t)(int32_t)v[k] - (uint32_t)zp) * (uint32_t)(int32_t)w[k];
    return s;
}

#if EDGE_DSP
static inline int32_t sat16(int32_t v) {
#if EDGE_DSP_ASM
    __asm__("ssat %0, #16, %1" : "=r"(v) : "r"(v));
    return v;
#else
    return v < -32768 ? -32768 : (v > 32767 ? 32767 : v);
#endif
}

/* The last (n mod 4) columns of edge_dot4_xw_s8's four rows: s[r] += x * wr. */
static inline void dot4_tail(int32_t x, int32_t w0, int32_t w1, int32_t w2, int32_t w3, uint32_t s[4]) {
    s[0] += (uint32_t)(x * w0);
    s[1] += (uint32_t)(x * w1);
    s[2] += (uint32_t)(x * w2);
    s[3] += (uint32_t)(x * w3);
}

/* logistic16(gate, 0, 0) in int32 for an int16 gate: the input scaled by 3 (|x| <= 98304, so x >> 9 <= 192 stays
 * inside the table), TFLM's interpolation; every intermediate fits int32 (res < 2^26). */
static inline int32_t sigmoid_gate(int32_t gate) {
    const int32_t x = 3 * gate, a = x < 0 ? -x : x, uh = a >> 9;
    const int32_t ua = ea_sigmoid_table(uh), ub = ea_sigmoid_table(uh + 1);
    int32_t res = (ua << 9) + (a & 0x1FF) * (ub - ua);
    res = x >= 0 ? res + (1 << 9) : (1 << 25) - res + (1 << 9) - 1;
    return (int32_t)(int16_t)(res >> 10); /* ea_wrap16 */
}

/* ea_tanh16_lookup of an int32 scaled input x (|x| < 2^31 - 2^24: res stays in int32). */
static inline int32_t tanh_scaled(int32_t x) {
    const int32_t a = x < 0 ? -x : x, uh = a >> 8;
    int32_t res;
    if (uh < 255) {
        const int32_t ua = ea_sigmoid_table(uh), ub = ea_sigmoid_table(uh + 1);
        res = (ua << 8) + (a & 0xFF) * (ub - ua);
    } else {
        res = 0xFFFF << 8;
    }
    res = x >= 0 ? res - (1 << 23) + (1 << 7) : -res + (1 << 23) + (1 << 7) - 1;
    return (int32_t)(int16_t)(res >> 8);
}

/* edge_conv_rqw_apply, or with ``right`` (lstm_data_t.rq_right, a constant at each call site) its short form: no left
 * shift, no test for a zero right shift (three instructions: SMMLAR, ADD, SMMLSR). */
static inline int32_t lstm_rq(const edge_conv_rqw_t *q, int32_t acc, int32_t zp, const int right) {
    edge_conv_rqw_t r;
    if (!right) return edge_conv_rqw_apply(q, acc, zp);
    r.mul = q->mul;
    r.nrnd = q->nrnd;
    r.left = 0;
    r.rs0 = 0;
    return edge_conv_rqw_apply(&r, acc, zp);
}

static inline void lstm_dsp_run(const lstm_data_t *d, const edge_node_t *node, edge_ctx_t *ctx, const int right) {
    const int32_t S = d->n_state, I = d->n_input, T = d->steps, B = d->batch, h_zp = d->h_zp, clip = d->clip_q;
    const int32_t I4 = I & ~3, S4 = S & ~3;
    const int8_t *wi[4], *wr[4];
    const int8_t *xs = (const int8_t *)edge_in(ctx, node, 0)->data;
    int8_t *hs = (int8_t *)edge_in(ctx, node, 18)->data, *ys = (int8_t *)edge_out(ctx, node, 0)->data;
    int16_t *cs = (int16_t *)edge_in(ctx, node, 19)->data;
    /* scratch: two steps' inputs widened (2 * I4 int16), the hidden state widened (S4), two steps' input parts of
     * the gates, gin[step][4u + g] (8 * S int16) */
    int16_t *xw = (int16_t *)edge_scratch(ctx, node, d->scratch), *hw = xw + 2 * I4, *gin = hw + S4;
    int32_t t0, b, g, u, k, j;
    for (g = 0; g < 4; g++) {
        wi[g] = (const int8_t *)edge_in(ctx, node, in_w[g])->data;
        wr[g] = (const int8_t *)edge_in(ctx, node, rec_w[g])->data;
    }
    for (b = 0; b < B; b++)
        for (t0 = 0; t0 < T; t0 += 2) {
            const int32_t nt = T - t0 < 2 ? 1 : 2;
            const int8_t *xr[2];
            for (j = 0; j < nt; j++)
                xr[j] = xs + (d->time_major ? (int64_t)(t0 + j) * B + b : (int64_t)b * T + t0 + j) * I;
            if (nt == 1) { /* a lone (last) step: the four gate rows of a unit in one pass over its input */
                edge_widen4_s8(xr[0], xw, I4);
                for (u = 0; u < S; u++) {
                    uint32_t sx[4];
                    memcpy(sx, d->fold + 4 * u, sizeof sx);
                    edge_dot4_xw_s8(xw, wi[0] + (int64_t)u * I, wi[1] + (int64_t)u * I, wi[2] + (int64_t)u * I,
                                 wi[3] + (int64_t)u * I, I4, sx);
                    for (k = I4; k < I; k++)
                        dot4_tail(xr[0][k], wi[0][(int64_t)u * I + k], wi[1][(int64_t)u * I + k],
                                  wi[2][(int64_t)u * I + k], wi[3][(int64_t)u * I + k], sx);
                    for (g = 0; g < 4; g++)
                        gin[4 * u + g] = (int16_t)sat16(lstm_rq(&d->in_q[g], (int32_t)sx[g], 0, right));
                }
            } else {
                edge_widen2_s8(xr[0], xr[1], xw, I4);
            }
            for (u = 0; u < S && nt == 2; u++)
                for (g = 0; g < 4; g += 2) { /* gates g and g + 1 of unit u, both steps */
                    const int8_t *w0 = wi[g] + (int64_t)u * I, *w1 = wi[g + 1] + (int64_t)u * I;
                    uint32_t sx[4];
                    sx[0] = sx[2] = (uint32_t)d->fold[4 * u + g];
                    sx[1] = sx[3] = (uint32_t)d->fold[4 * u + g + 1];
                    edge_dot2x2_s8(xw, w0, w1, I4, sx);
                    for (k = I4; k < I; k++) {
                        sx[0] += (uint32_t)(xr[0][k] * w0[k]);
                        sx[1] += (uint32_t)(xr[0][k] * w1[k]);
                        sx[2] += (uint32_t)(xr[1][k] * w0[k]);
                        sx[3] += (uint32_t)(xr[1][k] * w1[k]);
                    }
                    for (j = 0; j < 4; j++) /* (step j / 2, gate g + j % 2) */
                        gin[4 * S * (j >> 1) + 4 * u + g + (j & 1)] =
                            (int16_t)sat16(lstm_rq(&d->in_q[g + (j & 1)], (int32_t)sx[j], 0, right));
                }
            for (j = 0; j < nt; j++) {
                const int32_t t = t0 + j;
                const int64_t row = d->time_major ? (int64_t)t * B + b : (int64_t)b * T + t;
                const int8_t *h = hs + (int64_t)b * S;
                const int32_t *fh = h_zp ? d->fold + 4 * S : NULL;
                const int16_t *ga = gin + 4 * S * j;
                const int8_t *pr0 = wr[0], *pr1 = wr[1], *pr2 = wr[2], *pr3 = wr[3];
                int16_t *c = cs + (int64_t)b * S;
                int8_t *y = ys + row * S;
                int idle = 1; /* the hidden state is all h_zp */
                for (k = 0; k < S && idle; k++) idle = h[k] == h_zp;
                if (!idle) edge_widen4_s8(h, hw, S4);
                for (u = 0; u < S; u++) {
                    int32_t gate[4], ig, fg, cg, og, cv, hv, tx;
                    if (!idle) {
                        uint32_t sh[4];
                        if (fh) memcpy(sh, fh + 4 * u, sizeof sh);
                        else sh[0] = sh[1] = sh[2] = sh[3] = 0;
                        edge_dot4_xw_s8(hw, pr0, pr1, pr2, pr3, S4, sh);
                        for (k = S4; k < S; k++) dot4_tail(h[k], pr0[k], pr1[k], pr2[k], pr3[k], sh);
                        for (g = 0; g < 4; g++)
                            gate[g] = sat16(ga[4 * u + g] + sat16(lstm_rq(&d->rec_q[g], (int32_t)sh[g], 0, right)));
                    } else {
                        for (g = 0; g < 4; g++) gate[g] = ga[4 * u + g];
                    }
                    pr0 += S;
                    pr1 += S;
                    pr2 += S;
                    pr3 += S;
                    ig = sigmoid_gate(gate[0]);
                    fg = sigmoid_gate(gate[1]);
                    cg = d->cell_sigmoid ? sigmoid_gate(gate[2]) : tanh_scaled(3 * gate[2]);
                    og = sigmoid_gate(gate[3]);
                    cv = sat16(lstm_rq(&d->fc_q, fg * (int32_t)c[u], 0, right));
                    cv = sat16(cv + sat16(lstm_rq(&d->ig_q, ig * cg, 0, right)));
                    if (clip > 0) cv = cv < -clip ? -clip : (cv > clip ? clip : cv);
                    c[u] = (int16_t)cv;
                    if (d->tanh_in_mul) {
                        tx = tanh_scaled((cv * d->tanh_in_mul + d->tanh_in_rnd) >> d->tanh_in_shift);
                    } else {
                        tx = tanh16(cv, d->tanh_mult, d->tanh_shift);
                    }
                    hv = lstm_rq(&d->h_q, tx * og, h_zp, right);
                    y[u] = (int8_t)(hv < -128 ? -128 : (hv > 127 ? 127 : hv));
                }
                /* the row's new hidden values become the hidden state */
                memcpy(hs + (int64_t)b * S, y, (size_t)S);
            }
        }
}

/* The int8 LSTM on DSP cores (d->fold set). Batch rows are independent: per batch row, the steps in pairs. First
 * the input part of the four gates of both steps, every unit (edge_dot2x2_s8: each weight word widened once for the
 * two steps; no zero point per element: it is in the effective biases), requantized and saturated to int16 in
 * scratch; then the recurrence step by step: each unit's four recurrent rows in one pass over the widened hidden
 * state (edge_dot4_xw_s8) -- skipped while the hidden state holds its zero point everywhere (an invoke's first step
 * from a reset state: every recurrent sum is then exactly 0) -- and the arithmetic of the general loops in int32
 * (requantizations through edge_conv_rqw, sigmoid and tanh inputs int16). Bit-exact with the general loops. */
#if defined(__GNUC__) && !defined(__clang__)
/* every helper inlined into the loops, the function optimized for speed: the firmware is built -Os, which kept the
 * dot products, requantizations and table lookups as calls (~500 instructions per unit around the products), and
 * whose register allocation finds no 13 free registers for edge_dot4_xw_s8's loop here */
__attribute__((flatten, noinline, optimize("O2")))
#endif
static void eval_int8_dsp(const lstm_data_t *d, const edge_node_t *node, edge_ctx_t *ctx) {
    /* two copies of the loops: the requantizations' short form is a constant in each */
    if (d->rq_right) lstm_dsp_run(d, node, ctx, 1);
    else lstm_dsp_run(d, node, ctx, 0);
}
#endif

void edge_eval_unidirectional_sequence_lstm(const edge_node_t *node, edge_ctx_t *ctx) {
    const lstm_data_t *d = (const lstm_data_t *)node->user_data;
    const int32_t S = d->n_state, I = d->n_input;
    const edge_tensor_t *tx = edge_in(ctx, node, 0);
    edge_tensor_t *th = edge_in(ctx, node, 18), *tc = edge_in(ctx, node, 19), *ty = edge_out(ctx, node, 0);
    const int8_t *wi[4], *wr[4];
    const uint8_t *bi[4];
    const int wide = EDGE_WITH_INT16 && d->wide;
    const int32_t hmin = wide ? -32768 : -128, hmax = wide ? 32767 : 127;
    int16_t *cs, *xc = 0, *hc = 0;
    int32_t t, b, g, u, k;

    if (EDGE_WITH_FLOAT32 && d->var) {
        eval_float_variant(d, node, ctx);
        return;
    }
    if (EDGE_WITH_FLOAT32 && d->is_float) {
        lstm_float(d, node, ctx);
        return;
    }
    if (d->layer_norm) {
        eval_layer_norm_int8(d, node, ctx);
        return;
    }
#if EDGE_DSP
    if (d->fold) {
        eval_int8_dsp(d, node, ctx);
        return;
    }
#endif
    for (g = 0; g < 4; g++) {
        wi[g] = (const int8_t *)edge_in(ctx, node, in_w[g])->data;
        wr[g] = (const int8_t *)edge_in(ctx, node, rec_w[g])->data;
        bi[g] = (const uint8_t *)edge_in(ctx, node, bias_in[g])->data;
    }
    cs = (int16_t *)tc->data;
    if (d->scratch >= 0) {
        xc = (int16_t *)edge_scratch(ctx, node, d->scratch);
        hc = xc + I;
    }
    for (t = 0; t < d->steps; t++)
        for (b = 0; b < d->batch; b++) {
            const int64_t row = d->time_major ? (int64_t)t * d->batch + b : (int64_t)b * d->steps + t;
            int16_t *c = cs + (int64_t)b * S;
            if (xc) { /* the row's input and the previous hidden state minus their zero points */
                const int8_t *xr = (const int8_t *)tx->data + row * I, *h = (const int8_t *)th->data + (int64_t)b * S;
                for (k = 0; k < I; k++) xc[k] = (int16_t)(xr[k] - d->x_zp);
                for (k = 0; k < S; k++) hc[k] = (int16_t)(h[k] - d->h_zp);
            }
            for (u = 0; u < S; u++) {
                int32_t gate[4], ig, fg, cg, og, cv;
                int64_t hv;
                /* the unit's four gates from the previous hidden state (h is rewritten after the row) */
#if EDGE_DSP
                if (!wide) { /* DSP cores: two gates' rows per pass over each int8 vector (edge_dot2_s8; the byte
                              * loops ran the int8 LSTMs at 2.3-2.9x TFLM + CMSIS-NN's instructions) */
                    const int8_t *xr = (const int8_t *)tx->data + row * I;
                    const int8_t *h = (const int8_t *)th->data + (int64_t)b * S;
                    uint32_t sx[4], sh[4];
                    for (g = 0; g < 4; g += 2) {
                        edge_dot2_s8(xr, wi[g] + (int64_t)u * I, wi[g + 1] + (int64_t)u * I, I, -d->x_zp, &sx[g],
                                     &sx[g + 1]);
                        edge_dot2_s8(h, wr[g] + (int64_t)u * S, wr[g + 1] + (int64_t)u * S, S, -d->h_zp, &sh[g],
                                     &sh[g + 1]);
                    }
                    for (g = 0; g < 4; g++) {
                        int32_t a, r, bv;
                        memcpy(&bv, bi[g] + 4 * (int64_t)u, 4);
                        a = edge_mbqm(edge_wrap32(sx[g] + (uint32_t)bv), d->in_m[g], d->in_s[g]);
                        r = edge_mbqm(edge_wrap32(sh[g]), d->rec_m[g], d->rec_s[g]);
                        gate[g] = ea_sat16((int64_t)ea_sat16(a) + ea_sat16(r));
                    }
                } else
#endif
                for (g = 0; g < 4; g++) {
                    int32_t a, r;
                    if (wide) {
                        const int16_t *xr = (const int16_t *)tx->data + row * I;
                        const int16_t *h = (const int16_t *)th->data + (int64_t)b * S;
                        int64_t bv;
                        memcpy(&bv, bi[g] + 8 * (int64_t)u, 8);
                        a = edge_mbqm64(dot_wide(xr, d->x_zp, wi[g] + (int64_t)u * I, I) + bv, d->in_m[g], d->in_s[g]);
                        r = edge_mbqm64(dot_wide(h, d->h_zp, wr[g] + (int64_t)u * S, S), d->rec_m[g], d->rec_s[g]);
                    } else if (xc) {
                        int32_t bv;
                        memcpy(&bv, bi[g] + 4 * (int64_t)u, 4);
                        a = edge_mbqm(edge_wrap32(dot_centred(xc, wi[g] + (int64_t)u * I, I) + (uint32_t)bv), d->in_m[g], d->in_s[g]);
                        r = edge_mbqm(edge_wrap32(dot_centred(hc, wr[g] + (int64_t)u * S, S)), d->rec_m[g], d->rec_s[g]);
                    } else {
                        const int8_t *xr = (const int8_t *)tx->data + row * I;
                        const int8_t *h = (const int8_t *)th->data + (int64_t)b * S;
                        int32_t bv;
                        memcpy(&bv, bi[g] + 4 * (int64_t)u, 4);
                        a = edge_mbqm(edge_wrap32(dot_narrow(xr, d->x_zp, wi[g] + (int64_t)u * I, I) + (uint32_t)bv),
                                      d->in_m[g], d->in_s[g]);
                        r = edge_mbqm(edge_wrap32(dot_narrow(h, d->h_zp, wr[g] + (int64_t)u * S, S)), d->rec_m[g], d->rec_s[g]);
                    }
                    gate[g] = ea_sat16((int64_t)ea_sat16(a) + ea_sat16(r));
                }
                /* cell and hidden state */
                ig = logistic16(gate[0], 0, 0);
                fg = logistic16(gate[1], 0, 0);
                cg = d->cell_sigmoid ? logistic16(gate[2], 0, 0) : tanh16(gate[2], 0, 0);
                og = logistic16(gate[3], 0, 0);
                cv = ea_sat16(edge_mbqm(fg * (int32_t)c[u], d->fc_m, d->fc_s));
                cv = ea_sat16((int64_t)cv + ea_sat16(edge_mbqm(ig * cg, d->ig_m, d->ig_s)));
                if (d->clip_q > 0) cv = cv < -d->clip_q ? -d->clip_q : (cv > d->clip_q ? d->clip_q : cv);
                c[u] = (int16_t)cv;
                hv = (int64_t)edge_mbqm(tanh16(cv, d->tanh_mult, d->tanh_shift) * og, d->h_m, d->h_s) + d->h_zp;
                hv = hv < hmin ? hmin : (hv > hmax ? hmax : hv);
                if (wide) ((int16_t *)ty->data)[row * S + u] = (int16_t)hv;
                else ((int8_t *)ty->data)[row * S + u] = (int8_t)hv;
            }
            /* the row's new hidden values become the hidden state */
            if (wide) memcpy((int16_t *)th->data + (int64_t)b * S, (const int16_t *)ty->data + row * S, 2 * (size_t)S);
            else memcpy((int8_t *)th->data + (int64_t)b * S, (const int8_t *)ty->data + row * S, (size_t)S);
        }
}
