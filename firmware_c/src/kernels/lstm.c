/* LSTM (full and basic kernel types) and BIDIRECTIONAL_SEQUENCE_LSTM, float32, as edge_sdk/runtime/kernels/rnn.py
 * (LiteRT's lstm.cc and bidirectional_sequence_lstm.cc), on the float cell of the sequence LSTM (edge_lstm.h).
 *
 *  - LSTM full (20 or 24 inputs): one step of the cell on x (batch, input), the output state (input 18) and the
 *    cell state (input 19) variable tensors kept across invokes; output (batch, units).
 *  - LSTM basic (kernel_type BASIC, 5 inputs, 4 outputs): x, previous activation (batch, S), weights (4S, I + S)
 *    with row blocks input, cell, forget, output, bias (4S), previous state; outputs the new activation and state,
 *    the concatenation [x, h] and the gates' pre-activations (batch, 4S). The cell reads its weights in place
 *    (rows I + S apart); the previous activation goes through a scratch of batch x S floats (the cell's h must not
 *    be its output).
 *  - BIDIRECTIONAL_SEQUENCE_LSTM (39..48 inputs): the cell forward over the sequence with the forward weights
 *    (1-8, 12-15) and state (35, 36), backward with the backward ones (18-25, 29-32; state 37, 38); time_major
 *    (default true); merge_outputs: one output, forward units first.
 * Fused activation TANH. INT8 gate weights (per tensor) run LiteRT's hybrid LSTM (full and bidirectional;
 * edge_lstm.h), with a scratch of input + units bytes for the quantized rows. A float or hybrid node with CIFG,
 * peephole, projection (with proj_clip), layer normalization (LSTM full) or the auxiliary input (bidirectional:
 * input 39, with its weights 40-47 added in both directions, without them the backward pass's input) runs the
 * LSTM with options of edge_lstm.h (edge_lstm_var_prepare / edge_lstm_var_run), one per direction.
 *  - LSTM full, INT8 input (LiteRT's "8x8_16" integer LSTM, edge_sdk/runtime/kernels/lstm_integer.py): int8 weights
 *    and output state, int32 biases, int16 cell state of scale 2**-15 .. 2**-9, 5 intermediates (the gates'
 *    scales with layer normalization, else Q3.12; intermediate 4: the hidden scale and zero point the output takes).
 *    Per batch row the four gates go into a scratch of 4 x units int16 (the output state is read until all are
 *    done), then layer normalization (inputs 20-23), gemmlowp's int16 sigmoid / tanh, the cell and the output.
 *    No CIFG, peephole, projection or 12-intermediate form.
 *  - LSTM basic, UINT8 (LiteRT's quantized LstmCell<4>): x and the previous activation read as (v - 128) / 128,
 *    uint8 weights with a zero point, int32 bias; the gate pre-activations (output 3) MBQM(accumulator,
 *    4096 x bias scale) clamped to int16 (Q3.12), the state int16 Q4.11, the activation 128 + o tanh(c) / 256.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_fixedpoint_act.h"
#include "../edge_lstm.h"

EDGE_KERNEL(LSTM, lstm, 4, "FLOAT32 INT8 UINT8", "full: float or INT8 weights (hybrid), CIFG/peephole/projection/layer norm, TANH; INT8 input: LiteRT 8x8_16, 5 intermediates, layer norm or none, no CIFG/peephole/projection; basic: float, or UINT8 with an INT16 state of scale 2**-11 (LiteRT's LstmCell<4>), TANH, no clip")
EDGE_KERNEL(BIDIRECTIONAL_SEQUENCE_LSTM, bidirectional_sequence_lstm, 3, "FLOAT32", "float or INT8 weights (hybrid); CIFG/peephole/projection, aux input with or without its weights; TANH")

typedef struct {
    edge_lstm_int8_t *q;                        /* INT8 input: the integer LSTM; NULL: float / hybrid */
    edge_lstm_var_t *var[2];                    /* a node with options (edge_lstm.h): forward, backward; NULL: plain */
    int32_t aux;                                /* bidirectional: 0 no auxiliary input, 1 with its weights, 2 without
                                                   (the backward pass's input) */
    int32_t steps, batch, n_input, n_fw, n_bw;
    int32_t basic, time_major, merge, scratch; /* scratch: the basic kernel's h */
    int32_t asymmetric, qscratch;               /* hybrid: asymmetric_quantize_inputs, the quantized rows (-1: float) */
    float cell_clip;
    /* basic, UINT8 (LiteRT's LstmCell<4>): the gate accumulators' multiplier (4096 x bias scale), weights' zero point */
    int32_t basic_m, basic_w_zp;
    int8_t basic_s;
    uint8_t basic_uint8;
} lstm_op_t;

static const int32_t full_gates[3][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}, {12, 13, 14, 15}};
static const int32_t bw_gates[3][4] = {{18, 19, 20, 21}, {22, 23, 24, 25}, {29, 30, 31, 32}};
/* every part of a direction (edge_lstm.h): in, recurrent, peephole, bias, projection w / b, layer norm, aux, h, c */
static const el_parts_t full_parts = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11}, {12, 13, 14, 15}, 16, 17,
                                      {20, 21, 22, 23}, {-1, -1, -1, -1}, 18, 19};
static const el_parts_t bi_parts[2] = {
    {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11}, {12, 13, 14, 15}, 16, 17, {-1, -1, -1, -1}, {40, 41, 42, 43}, 35, 36},
    {{18, 19, 20, 21}, {22, 23, 24, 25}, {26, 27, 28}, {29, 30, 31, 32}, 33, 34, {-1, -1, -1, -1}, {44, 45, 46, 47}, 37, 38}};
#define BI_AUX_INPUT 39

/* A direction with options: its edge_lstm_var_t, persistent. */
static edge_status_t prepare_variant(edge_node_t *node, edge_ctx_t *ctx, lstm_op_t *d, int32_t k, const el_parts_t *parts,
                                     int32_t n_aux, float proj_clip) {
    edge_lstm_var_t *v = (edge_lstm_var_t *)edge_alloc_persistent(ctx, sizeof *v);
    if (!v) return EDGE_ARENA_TOO_SMALL;
    memset(v, 0, sizeof *v);
    d->var[k] = v;
    v->cell_clip = d->cell_clip;
    v->proj_clip = proj_clip > 0.0f ? proj_clip : 0.0f;
    v->asymmetric = d->asymmetric;
    return edge_lstm_var_prepare(node, ctx, parts, d->n_input, n_aux, d->batch, v);
}

/* Gate weights (rows g[0]), recurrent weights (g[1]), biases (g[2]) of one direction: constants of (S, I), (S, S),
 * (S); weights all FLOAT32 or all INT8 per tensor (hybrid), biases FLOAT32; *n_state from the first. */
static edge_status_t check_gates(edge_ctx_t *ctx, const edge_node_t *node, const int32_t g[3][4], int32_t n_input,
                                 int32_t *n_state) {
    const edge_tensor_t *w0;
    int32_t k, S;
    if (!edge_in(ctx, node, g[0][0]) || !edge_in(ctx, node, g[1][0]) || !edge_in(ctx, node, g[2][0]))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "CIFG LSTM (no input gate) is not supported");
    w0 = edge_in(ctx, node, g[0][0]);
    if (w0->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "gate weights must be 2-D");
    S = w0->dims[0];
    for (k = 0; k < 4; k++) {
        const edge_tensor_t *wi = edge_in(ctx, node, g[0][k]), *wr = edge_in(ctx, node, g[1][k]);
        const edge_tensor_t *b = edge_in(ctx, node, g[2][k]);
        if (!wi || !wr || !b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "gate weights and biases are required");
        if ((w0->type != EDGE_FLOAT32 && w0->type != EDGE_INT8) || wi->type != w0->type || wr->type != w0->type)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "gate weights must all be FLOAT32, or all INT8 (hybrid)");
        if (w0->type == EDGE_INT8 && (!wi->quantized || wi->n_scales != 1 || !wr->quantized || wr->n_scales != 1))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "hybrid gate weights must be quantized per tensor");
        if (b->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "gate biases must be FLOAT32");
        if (wi->rank != 2 || wi->dims[0] != S || wi->dims[1] != n_input) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input weights shape");
        if (wr->rank != 2 || wr->dims[0] != S || wr->dims[1] != S) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "recurrent weights shape");
        if (b->rank != 1 || b->dims[0] != S) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "bias shape");
        if (!wi->is_const || !wr->is_const || !b->is_const)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "gate weights and biases must be constant");
    }
    *n_state = S;
    return EDGE_OK;
}

static edge_status_t check_state(edge_ctx_t *ctx, const edge_node_t *node, int32_t i, int32_t batch, int32_t S) {
    const edge_tensor_t *t = edge_in(ctx, node, i);
    if (!t) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "state tensors are required");
    if (t->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "state must be FLOAT32");
    if (!t->is_variable) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "states must be variable tensors");
    if (edge_tensor_elements(t) != (int64_t)batch * S) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "state size is not batch x units");
    return EDGE_OK;
}

/* The quantized rows' scratch of a hybrid node (input + the wider state), when its weights are INT8. */
static edge_status_t hybrid_scratch(edge_ctx_t *ctx, edge_node_t *node, lstm_op_t *d) {
    const int32_t S = d->n_fw > d->n_bw ? d->n_fw : d->n_bw;
    d->qscratch = -1;
    if (edge_in(ctx, node, 1)->type != EDGE_INT8) return EDGE_OK;
    return edge_request_scratch(ctx, node, (size_t)d->n_input + (size_t)S, &d->qscratch);
}

static void direction(const lstm_op_t *d, edge_lstm_f32_t *p, const edge_node_t *node, edge_ctx_t *ctx,
                      const int32_t g[3][4], int32_t S) {
    int32_t k;
    memset(p, 0, sizeof *p);
    for (k = 0; k < 4; k++) {
        const edge_tensor_t *wi = edge_in(ctx, node, g[0][k]), *wr = edge_in(ctx, node, g[1][k]);
        if (d->qscratch >= 0) {
            p->qwi[k] = (const int8_t *)wi->data;
            p->qwr[k] = (const int8_t *)wr->data;
            p->wi_scale[k] = wi->scale;
            p->wr_scale[k] = wr->scale;
        } else {
            p->wi[k] = (const float *)wi->data;
            p->wr[k] = (const float *)wr->data;
        }
        p->bias[k] = (const float *)edge_in(ctx, node, g[2][k])->data;
    }
    if (d->qscratch >= 0) p->scratch = (int8_t *)edge_scratch(ctx, node, d->qscratch);
    p->asymmetric = d->asymmetric;
    p->w_stride = p->n_input = d->n_input;
    p->r_stride = p->n_state = S;
    p->cell_clip = d->cell_clip;
}

static edge_status_t prepare_basic(edge_node_t *node, edge_ctx_t *ctx, lstm_op_t *d) {
    const edge_tensor_t *x, *h, *w, *b, *c;
    int32_t k, B, I, S, shape[2];
    edge_status_t s;
    if (node->n_inputs != 5 || node->n_outputs != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "basic LSTM expects 5 inputs and 4 outputs");
    x = edge_in(ctx, node, 0);
    h = edge_in(ctx, node, 1);
    w = edge_in(ctx, node, 2);
    b = edge_in(ctx, node, 3);
    c = edge_in(ctx, node, 4);
    if (!x || !h || !w || !b || !c) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "basic LSTM: every input is required");
    if (x->type == EDGE_UINT8) {
        /* LiteRT's quantized cell: uint8 activations and weights, int32 bias, int16 state of scale 2**-11 */
        static const uint8_t out_types[4] = {EDGE_UINT8, EDGE_INT16, EDGE_UINT8, EDGE_INT16};
        const edge_tensor_t *state = edge_out(ctx, node, 1);
        int32_t power, shift;
        edge_status_t st;
        if ((st = edge_type_built(ctx, x->type)) != EDGE_OK) return st;
        if (h->type != EDGE_UINT8 || w->type != EDGE_UINT8 || b->type != EDGE_INT32 || c->type != EDGE_INT16)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "quantized basic LSTM: UINT8 activations and weights, INT32 bias, INT16 state");
        for (k = 0; k < 4; k++)
            if (edge_out(ctx, node, k)->type != out_types[k])
                return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "quantized basic LSTM outputs: UINT8, INT16, UINT8, INT16");
        if (!ea_per_tensor(w) || !ea_per_tensor(b) || !ea_per_tensor(state))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "quantized basic LSTM: weights, bias and state quantized per tensor");
        if (!ea_checked_log2(state->scale, &power) || 15 + power != 4)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "the quantized basic LSTM takes a state of scale 2**-11 (4 integer bits) only");
        if (edge_quantize_multiplier(4096.0 * (double)b->scale, &d->basic_m, &shift) != 0 || shift < -100 || shift > 100)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "quantized basic LSTM: bias scale out of range");
        d->basic_s = (int8_t)shift;
        d->basic_w_zp = w->zero_point;
        d->basic_uint8 = 1;
    } else {
        if (x->type != EDGE_FLOAT32 || h->type != EDGE_FLOAT32 || w->type != EDGE_FLOAT32 || b->type != EDGE_FLOAT32 ||
            c->type != EDGE_FLOAT32)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "basic LSTM runs FLOAT32 or UINT8");
        for (k = 0; k < 4; k++)
            if (edge_out(ctx, node, k)->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "outputs must be FLOAT32");
    }
    if (d->cell_clip != 0.0f || edge_opt_float(node, 2, 0.0f) != 0.0f)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "the basic LSTM kernel takes no cell or projection clip");
    if (x->rank != 2 || h->rank != 2 || h->dims[0] != x->dims[0]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and activation must be (batch, n)");
    B = x->dims[0];
    I = x->dims[1];
    S = h->dims[1];
    /* in int64: 4 * S and I + S of a malformed model's dims overflow int32 (UBSan, session 18's fuzz finding) */
    if (w->rank != 2 || w->dims[0] != 4 * (int64_t)S || w->dims[1] != (int64_t)I + S)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "weights must be (4 units, input + units)");
    if (b->rank != 1 || b->dims[0] != 4 * (int64_t)S) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "bias must be (4 units)");
    if (c->rank != 2 || c->dims[0] != B || c->dims[1] != S) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "previous state must be (batch, units)");
    if (!w->is_const || !b->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "weights and bias must be constant");
    d->basic = 1;
    d->batch = B;
    d->n_input = I;
    d->n_fw = S;
    d->steps = 1;
    shape[0] = B;
    shape[1] = S;
    if ((s = edge_set_output_shape(ctx, node, 0, shape, 2)) != EDGE_OK) return s;
    if ((s = edge_set_output_shape(ctx, node, 1, shape, 2)) != EDGE_OK) return s;
    shape[1] = I + S;
    if ((s = edge_set_output_shape(ctx, node, 2, shape, 2)) != EDGE_OK) return s;
    shape[1] = 4 * S;
    if ((s = edge_set_output_shape(ctx, node, 3, shape, 2)) != EDGE_OK) return s;
    if (d->basic_uint8) return EDGE_OK;
    return edge_request_scratch(ctx, node, sizeof(float) * (size_t)B * (size_t)S, &d->scratch);
}

/* ---------------------------------------------------------------------------- LSTM, INT8 (LiteRT 8x8_16) */

static edge_status_t prepare_int8(edge_node_t *node, edge_ctx_t *ctx, lstm_op_t *d) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    int32_t shape[2];
    edge_status_t s;
    if (x->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: input must be 2-D (batch, input)");
    if ((s = edge_lstm_int8_prepare(node, ctx, x->dims[0], x->dims[1], d->cell_clip, &d->q)) != EDGE_OK) return s;
    d->steps = 1;
    d->batch = x->dims[0];
    d->n_input = x->dims[1];
    d->n_fw = d->q->n_state;
    shape[0] = d->batch;
    shape[1] = d->n_fw;
    return edge_set_output_shape(ctx, node, 0, shape, 2);
}

static void eval_int8(const lstm_op_t *d, const edge_node_t *node, edge_ctx_t *ctx) {
    edge_lstm_int8_step(d->q, node, ctx, (const int8_t *)edge_in(ctx, node, 0)->data, d->n_input,
                        (int8_t *)edge_in(ctx, node, 18)->data, (int16_t *)edge_in(ctx, node, 19)->data,
                        (int8_t *)edge_out(ctx, node, 0)->data, d->n_fw, d->batch);
}

edge_status_t edge_prepare_lstm(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == EDGE_OPTS_LSTMOptions;
    const edge_tensor_t *x;
    lstm_op_t *d;
    int32_t S, shape[2];
    edge_status_t s;

    x = edge_in(ctx, node, 0);
    /* the integer LSTM always runs tanh (LiteRT ignores the option there) */
    if (!has_opts || (edge_opt_int(node, 0, 1, 0) != EDGE_ACT_TANH && !(x && x->type == EDGE_INT8)))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "LSTM fused activation must be TANH");
    d = (lstm_op_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    memset(d, 0, sizeof *d);
    node->user_data = d;
    d->scratch = d->qscratch = -1;
    d->cell_clip = edge_opt_float(node, 1, 0.0f);
    if (d->cell_clip < 0.0f) d->cell_clip = 0.0f;
    if (edge_opt_int(node, 3, 1, 0) == 1 /* LSTMKernelType BASIC */) return prepare_basic(node, ctx, d);

    if ((node->n_inputs != 20 && node->n_inputs != 24) || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM expects 20 or 24 inputs and 1 output");
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: input is required");
    if (x->type == EDGE_INT8) return prepare_int8(node, ctx, d);
    if (x->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "LSTM runs FLOAT32 or INT8");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (x->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "LSTM: input must be 2-D (batch, input)");
    if (edge_lstm_has_variant(node, ctx, &full_parts)) { /* CIFG, peephole, projection or layer norm */
        d->steps = 1;
        d->batch = x->dims[0];
        d->n_input = x->dims[1];
        d->asymmetric = edge_opt_int(node, 4, 1, 0) != 0;
        if ((s = prepare_variant(node, ctx, d, 0, &full_parts, 0, edge_opt_float(node, 2, 0.0f))) != EDGE_OK) return s;
        if (edge_out(ctx, node, 0)->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be FLOAT32");
        shape[0] = d->batch;
        shape[1] = d->var[0]->n_output;
        return edge_set_output_shape(ctx, node, 0, shape, 2);
    }
    if ((s = check_gates(ctx, node, full_gates, x->dims[1], &S)) != EDGE_OK) return s;
    if ((s = check_state(ctx, node, 18, x->dims[0], S)) != EDGE_OK) return s;
    if ((s = check_state(ctx, node, 19, x->dims[0], S)) != EDGE_OK) return s;
    if (edge_out(ctx, node, 0)->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be FLOAT32");
    d->steps = 1;
    d->batch = x->dims[0];
    d->n_input = x->dims[1];
    d->n_fw = S;
    d->asymmetric = edge_opt_int(node, 4, 1, 0) != 0;
    if ((s = hybrid_scratch(ctx, node, d)) != EDGE_OK) return s;
    shape[0] = d->batch;
    shape[1] = S;
    return edge_set_output_shape(ctx, node, 0, shape, 2);
}

/* LiteRT's quantized LstmCell<4> (reference_ops/lstm_cell.h): gate pre-activations Q3.12, state Q4.11. */
static void eval_basic_uint8(const lstm_op_t *d, const edge_node_t *node, edge_ctx_t *ctx) {
    const int32_t B = d->batch, I = d->n_input, S = d->n_fw, W = I + S;
    const uint8_t *x = (const uint8_t *)edge_in(ctx, node, 0)->data, *h0 = (const uint8_t *)edge_in(ctx, node, 1)->data;
    const uint8_t *w = (const uint8_t *)edge_in(ctx, node, 2)->data;
    const int32_t *bias = (const int32_t *)edge_in(ctx, node, 3)->data;
    const int16_t *c0 = (const int16_t *)edge_in(ctx, node, 4)->data;
    uint8_t *act = (uint8_t *)edge_out(ctx, node, 0)->data, *concat = (uint8_t *)edge_out(ctx, node, 2)->data;
    int16_t *state = (int16_t *)edge_out(ctx, node, 1)->data, *gates = (int16_t *)edge_out(ctx, node, 3)->data;
    int32_t b, k, j, u;
    for (b = 0; b < B; b++) {
        uint8_t *cr = concat + (int64_t)b * W;
        int16_t *g = gates + (int64_t)b * 4 * S;
        memcpy(cr, x + (int64_t)b * I, (size_t)I);
        memcpy(cr + I, h0 + (int64_t)b * S, (size_t)S);
        for (k = 0; k < 4 * S; k++) {
            const uint8_t *wr = w + (int64_t)k * W;
            uint32_t acc = (uint32_t)bias[k]; /* int32, wrapping as LiteRT's */
            for (j = 0; j < W; j++) acc += (uint32_t)(((int32_t)cr[j] - 128) * ((int32_t)wr[j] - d->basic_w_zp));
            g[k] = (int16_t)ea_sat16(edge_mbqm(edge_wrap32((int64_t)(int32_t)acc), d->basic_m, d->basic_s));
        }
        for (u = 0; u < S; u++) {
            const int32_t ig = g16_logistic(g[u], 3), mod = g16_tanh(g[S + u], 3);
            const int32_t fg = g16_logistic(g[2 * S + u], 3), og = g16_logistic(g[3 * S + u], 3);
            const int32_t cv = ea_sat16((int64_t)g16_rdivpot(ea_srdhm16(ig, mod), 4) + ea_srdhm16(fg, c0[(int64_t)b * S + u]));
            const int32_t c3 = g16_shl(cv, 1); /* Rescale<3> of the Q4.11 state */
            int32_t out = g16_rdivpot(ea_srdhm16(og, g16_tanh(c3, 3)), 8);
            out = out < -128 ? -128 : (out > 127 ? 127 : out);
            state[(int64_t)b * S + u] = (int16_t)cv;
            act[(int64_t)b * S + u] = (uint8_t)(128 + out);
        }
    }
}

static void eval_basic(const lstm_op_t *d, const edge_node_t *node, edge_ctx_t *ctx) {
    static const int32_t block[4] = {0, 2, 1, 3}; /* cell gate order input, forget, cell, output -> weight blocks */
    const int32_t B = d->batch, I = d->n_input, S = d->n_fw, W = I + S;
    const float *x = (const float *)edge_in(ctx, node, 0)->data, *h0 = (const float *)edge_in(ctx, node, 1)->data;
    const float *w = (const float *)edge_in(ctx, node, 2)->data, *bias = (const float *)edge_in(ctx, node, 3)->data;
    float *act = (float *)edge_out(ctx, node, 0)->data, *state = (float *)edge_out(ctx, node, 1)->data;
    float *concat = (float *)edge_out(ctx, node, 2)->data, *gates = (float *)edge_out(ctx, node, 3)->data;
    float *h = (float *)edge_scratch(ctx, node, d->scratch);
    edge_lstm_f32_t p;
    int32_t b, k, j;
    memset(&p, 0, sizeof p);
    for (b = 0; b < B; b++) {
        float *cr = concat + (int64_t)b * W;
        memcpy(cr, x + (int64_t)b * I, sizeof(float) * (size_t)I);
        memcpy(cr + I, h0 + (int64_t)b * S, sizeof(float) * (size_t)S);
        for (k = 0; k < 4 * S; k++) {
            const float *wr = w + (int64_t)k * W;
            float v = bias[k];
            for (j = 0; j < W; j++) v += cr[j] * wr[j];
            gates[(int64_t)b * 4 * S + k] = v;
        }
    }
    memcpy(h, h0, sizeof(float) * (size_t)B * (size_t)S);
    memcpy(state, edge_in(ctx, node, 4)->data, sizeof(float) * (size_t)B * (size_t)S);
    for (k = 0; k < 4; k++) {
        p.wi[k] = w + (int64_t)block[k] * S * W;
        p.wr[k] = p.wi[k] + I;
        p.bias[k] = bias + (int64_t)block[k] * S;
    }
    p.w_stride = p.r_stride = W;
    p.n_input = I;
    p.n_state = S;
    edge_lstm_f32_run(&p, x, h, state, act, 1, B, 0, I, 0, S);
}

void edge_eval_lstm(const edge_node_t *node, edge_ctx_t *ctx) {
    const lstm_op_t *d = (const lstm_op_t *)node->user_data;
    edge_lstm_f32_t p;
    if (d->basic) {
        if (d->basic_uint8) eval_basic_uint8(d, node, ctx);
        else eval_basic(d, node, ctx);
        return;
    }
    if (d->q) {
        eval_int8(d, node, ctx);
        return;
    }
    if (d->var[0]) {
        edge_lstm_var_run(d->var[0], node, ctx, (const float *)edge_in(ctx, node, 0)->data, NULL, 0, 0,
                          (float *)edge_in(ctx, node, 18)->data, (float *)edge_in(ctx, node, 19)->data,
                          (float *)edge_out(ctx, node, 0)->data, 1, d->batch, 0, d->n_input, 0, d->var[0]->n_output);
        return;
    }
    direction(d, &p, node, ctx, full_gates, d->n_fw);
    edge_lstm_f32_run(&p, (const float *)edge_in(ctx, node, 0)->data, (float *)edge_in(ctx, node, 18)->data,
                      (float *)edge_in(ctx, node, 19)->data, (float *)edge_out(ctx, node, 0)->data, 1, d->batch, 0,
                      d->n_input, 0, d->n_fw);
}

/* ---------------------------------------------------------------------------- BIDIRECTIONAL_SEQUENCE_LSTM */

/* Outputs of a bidirectional node: one of n_fw + n_bw units with merge_outputs (forward first), else two. */
static edge_status_t bidirectional_outputs(edge_node_t *node, edge_ctx_t *ctx, const lstm_op_t *d, const edge_tensor_t *x) {
    int32_t k, shape[3];
    edge_status_t s;
    if (node->n_outputs != (d->merge ? 1 : 2)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "merge_outputs takes 1 output, else 2");
    for (k = 0; k < node->n_outputs; k++)
        if (edge_out(ctx, node, k)->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "outputs must be FLOAT32");
    shape[0] = x->dims[0];
    shape[1] = x->dims[1];
    shape[2] = d->merge ? d->n_fw + d->n_bw : d->n_fw;
    if ((s = edge_set_output_shape(ctx, node, 0, shape, 3)) != EDGE_OK) return s;
    if (d->merge) return EDGE_OK;
    shape[2] = d->n_bw;
    return edge_set_output_shape(ctx, node, 1, shape, 3);
}

/* CIFG, peephole or projection in a direction, or the auxiliary input (input 39, (T, B, A) in the input's layout):
 * with its weights (40-47) both directions add its products; without them it is the backward pass's input. */
static edge_status_t prepare_bidirectional_variant(edge_node_t *node, edge_ctx_t *ctx, lstm_op_t *d, const edge_tensor_t *x) {
    const edge_tensor_t *aux = edge_in(ctx, node, BI_AUX_INPUT);
    const int32_t cross = edge_in(ctx, node, 41) != 0 || edge_in(ctx, node, 45) != 0;
    const float proj_clip = edge_opt_float(node, 2, 0.0f);
    int32_t n_aux = 0, k;
    edge_status_t s;
    if (aux) {
        if (aux->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "the auxiliary input must be FLOAT32");
        if (aux->rank != 3 || aux->dims[0] != x->dims[0] || aux->dims[1] != x->dims[1])
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "the auxiliary input must be 3-D with the input's first two dimensions");
        n_aux = aux->dims[2];
        if (!cross && n_aux != d->n_input)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "an auxiliary input without weights (the backward pass's input) needs the input's shape");
    } else if (cross) {
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "auxiliary input weights without the auxiliary input");
    }
    d->aux = aux ? (cross ? 1 : 2) : 0;
    for (k = 0; k < 2; k++)
        if ((s = prepare_variant(node, ctx, d, k, &bi_parts[k], cross ? n_aux : 0, proj_clip)) != EDGE_OK) return s;
    if (cross && (d->var[0]->n_aux == 0 || d->var[1]->n_aux == 0))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "auxiliary input weights for both directions or neither");
    if (d->var[0]->hybrid != d->var[1]->hybrid)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "forward and backward weights must share a type");
    d->n_fw = d->var[0]->n_output;
    d->n_bw = d->var[1]->n_output;
    return bidirectional_outputs(node, ctx, d, x);
}

edge_status_t edge_prepare_bidirectional_sequence_lstm(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == EDGE_OPTS_BidirectionalSequenceLSTMOptions;
    const edge_tensor_t *x;
    lstm_op_t *d;
    edge_status_t s;

    if (node->n_inputs < 39 || node->n_inputs > 48 || node->n_outputs < 1 || node->n_outputs > 2)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "BIDIRECTIONAL_SEQUENCE_LSTM expects 39..48 inputs and 1 or 2 outputs");
    if (!has_opts || edge_opt_int(node, 0, 1, 0) != EDGE_ACT_TANH)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "fused activation must be TANH");
    x = edge_in(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "BIDIRECTIONAL_SEQUENCE_LSTM runs FLOAT32");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (x->rank != 3) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be 3-D");
    d = (lstm_op_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    memset(d, 0, sizeof *d);
    node->user_data = d;
    d->scratch = d->qscratch = -1;
    d->cell_clip = edge_opt_float(node, 1, 0.0f);
    if (d->cell_clip < 0.0f) d->cell_clip = 0.0f;
    d->merge = edge_opt_int(node, 3, 1, 0) != 0;
    d->time_major = edge_opt_int(node, 4, 1, 1) != 0;
    d->steps = d->time_major ? x->dims[0] : x->dims[1];
    d->batch = d->time_major ? x->dims[1] : x->dims[0];
    d->n_input = x->dims[2];
    d->asymmetric = edge_opt_int(node, 5, 1, 0) != 0;
    if (edge_in(ctx, node, BI_AUX_INPUT) || edge_lstm_has_variant(node, ctx, &bi_parts[0]) ||
        edge_lstm_has_variant(node, ctx, &bi_parts[1]))
        return prepare_bidirectional_variant(node, ctx, d, x);
    if ((s = check_gates(ctx, node, full_gates, d->n_input, &d->n_fw)) != EDGE_OK) return s;
    if ((s = check_gates(ctx, node, bw_gates, d->n_input, &d->n_bw)) != EDGE_OK) return s;
    if ((s = check_state(ctx, node, 35, d->batch, d->n_fw)) != EDGE_OK) return s;
    if ((s = check_state(ctx, node, 36, d->batch, d->n_fw)) != EDGE_OK) return s;
    if ((s = check_state(ctx, node, 37, d->batch, d->n_bw)) != EDGE_OK) return s;
    if ((s = check_state(ctx, node, 38, d->batch, d->n_bw)) != EDGE_OK) return s;
    if (node->n_outputs != (d->merge ? 1 : 2)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "merge_outputs takes 1 output, else 2");
    if (edge_in(ctx, node, 1)->type != edge_in(ctx, node, 18)->type)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "forward and backward weights must share a type");
    if ((s = hybrid_scratch(ctx, node, d)) != EDGE_OK) return s;
    return bidirectional_outputs(node, ctx, d, x);
}

void edge_eval_bidirectional_sequence_lstm(const edge_node_t *node, edge_ctx_t *ctx) {
    const lstm_op_t *d = (const lstm_op_t *)node->user_data;
    const int32_t T = d->steps, B = d->batch, I = d->n_input;
    const int32_t w_fw = d->merge ? d->n_fw + d->n_bw : d->n_fw, w_bw = d->merge ? w_fw : d->n_bw;
    const float *x = (const float *)edge_in(ctx, node, 0)->data;
    float *y_fw = (float *)edge_out(ctx, node, 0)->data;
    float *y_bw = d->merge ? y_fw + d->n_fw : (float *)edge_out(ctx, node, 1)->data;
    const int64_t xs = d->time_major ? (int64_t)B * I : I, xb = d->time_major ? I : (int64_t)T * I;
    const int64_t fs = d->time_major ? (int64_t)B * w_fw : w_fw, fb = d->time_major ? w_fw : (int64_t)T * w_fw;
    const int64_t bs = d->time_major ? (int64_t)B * w_bw : w_bw, bb = d->time_major ? w_bw : (int64_t)T * w_bw;
    edge_lstm_f32_t p;
    if (T == 0) return;
    if (d->var[0]) {
        /* the auxiliary input in the input's layout (its own width); without weights the backward pass's input */
        const int32_t A = d->aux ? edge_in(ctx, node, BI_AUX_INPUT)->dims[2] : 0;
        const float *aux = d->aux ? (const float *)edge_in(ctx, node, BI_AUX_INPUT)->data : NULL;
        const int64_t as = d->time_major ? (int64_t)B * A : A, ab = d->time_major ? A : (int64_t)T * A;
        const float *bw_x = d->aux == 2 ? aux : x;
        edge_lstm_var_run(d->var[0], node, ctx, x, d->aux == 1 ? aux : NULL, as, ab, (float *)edge_in(ctx, node, 35)->data,
                          (float *)edge_in(ctx, node, 36)->data, y_fw, T, B, xs, xb, fs, fb);
        edge_lstm_var_run(d->var[1], node, ctx, bw_x + (int64_t)(T - 1) * xs, d->aux == 1 ? aux + (int64_t)(T - 1) * as : NULL,
                          -as, ab, (float *)edge_in(ctx, node, 37)->data, (float *)edge_in(ctx, node, 38)->data,
                          y_bw + (int64_t)(T - 1) * bs, T, B, -xs, xb, -bs, bb);
        return;
    }
    direction(d, &p, node, ctx, full_gates, d->n_fw);
    edge_lstm_f32_run(&p, x, (float *)edge_in(ctx, node, 35)->data, (float *)edge_in(ctx, node, 36)->data, y_fw, T, B,
                      xs, xb, fs, fb);
    /* backward: from the last step, strides negated */
    direction(d, &p, node, ctx, bw_gates, d->n_bw);
    edge_lstm_f32_run(&p, x + (int64_t)(T - 1) * xs, (float *)edge_in(ctx, node, 37)->data,
                      (float *)edge_in(ctx, node, 38)->data, y_bw + (int64_t)(T - 1) * bs, T, B, -xs, xb, -bs, bb);
}
