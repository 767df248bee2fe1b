/* RNN, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN, float32, as edge_sdk/runtime/kernels/rnn.py
 * (LiteRT's basic_rnn.cc, unidirectional_sequence_rnn.cc, bidirectional_sequence_rnn.cc).
 *
 * Per step and batch row: h = act(bias + x . W[u] + h . R[u]) for each unit u (W (units, input), R (units,
 * units)); the row's output is the new hidden state, copied into the state (a variable tensor, kept across
 * invokes) once the row is done. RNN: one step on x (batch, input). The sequence ops: x (batch, steps, input), or
 * (steps, batch, input) with time_major. The bidirectional op runs one direction forward with inputs 1-4 and one
 * backward with inputs 5-8 (negative step strides); merge_outputs writes both into one output, forward units first.
 * Fused activation: NONE, RELU, RELU_N1_TO_1, RELU6, TANH or SIGMOID. No auxiliary input.
 *
 * Hybrid (INT8 weights, per tensor; float input, state and output: LiteRT's RnnBatchStep): at every step each
 * batch row of x, then of h, is quantized to int8 (quantize_row: symmetric, or asymmetric with a zero point), and
 * out = bias + float(q . W[u] - zp * rowsum(W[u])) * (row scale * W scale), likewise for h and R, then the
 * activation (edge_hybrid.h). The quantized row lives in a scratch of max(input, units) bytes.
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_hybrid.h"

EDGE_KERNEL(RNN, rnn, 3, "FLOAT32", "float32 or INT8 weights (hybrid); state a variable tensor")
EDGE_KERNEL(UNIDIRECTIONAL_SEQUENCE_RNN, unidirectional_sequence_rnn, 3, "FLOAT32", "float32 or INT8 weights (hybrid); state a variable tensor")
EDGE_KERNEL(BIDIRECTIONAL_SEQUENCE_RNN, bidirectional_sequence_rnn, 3, "FLOAT32", "float32 or INT8 weights (hybrid); no auxiliary input")

typedef struct {
    int32_t steps, batch, n_input, n_fw, n_bw;
    int32_t time_major, merge, act;
    int32_t asymmetric, scratch; /* hybrid: asymmetric_quantize_inputs; the quantized row's scratch (-1: float) */
    float lo, hi; /* the clamp of NONE / RELU / RELU_N1_TO_1 / RELU6 */
} rnn_data_t;

static edge_status_t check_activation(edge_ctx_t *ctx, rnn_data_t *d, int32_t act) {
    d->act = act;
    if (act == EDGE_ACT_TANH || act == 6 /* SIGMOID */) return EDGE_OK;
    if (edge_activation_range_float(act, &d->lo, &d->hi) != 0)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "fused activation (NONE, RELU, RELU_N1_TO_1, RELU6, TANH, SIGMOID)");
    return EDGE_OK;
}

/* Inputs first .. first+3 (weights, recurrent weights, bias, hidden state): float32, constant weights, a
 * variable state (batch, units); *units from the weights. */
static edge_status_t check_weights(edge_ctx_t *ctx, const edge_node_t *node, int32_t first, int32_t n_input,
                                   int32_t batch, int32_t *units) {
    const edge_tensor_t *w = edge_in(ctx, node, first), *r = edge_in(ctx, node, first + 1);
    const edge_tensor_t *b = edge_in(ctx, node, first + 2), *h = edge_in(ctx, node, first + 3);
    int32_t U;
    if (!w || !r || !b || !h) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "weights, recurrent weights, bias and state are required");
    if ((w->type != EDGE_FLOAT32 && w->type != EDGE_INT8) || r->type != w->type)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "weights must be FLOAT32, or INT8 (hybrid) for both");
    if (w->type == EDGE_INT8 && (!w->quantized || w->n_scales != 1 || !r->quantized || r->n_scales != 1))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "hybrid weights must be quantized per tensor");
    if (b->type != EDGE_FLOAT32 || h->type != EDGE_FLOAT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "bias and state must be FLOAT32");
    if (w->rank != 2 || w->dims[1] != n_input) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "weights must be (units, input)");
    U = w->dims[0];
    if (r->rank != 2 || r->dims[0] != U || r->dims[1] != U) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "recurrent weights must be (units, units)");
    if (b->rank != 1 || b->dims[0] != U) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "bias must be (units)");
    if (h->rank != 2 || h->dims[0] != batch || h->dims[1] != U) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "hidden state must be (batch, units)");
    if (!h->is_variable) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "hidden state must be a variable tensor");
    if (!w->is_const || !r->is_const || !b->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "weights and bias must be constant");
    *units = U;
    return EDGE_OK;
}

/* Common prepare: the input (rank 2 for RNN, else 3), activation, forward weights (and backward ones with
 * bidirectional), output shapes. */
static edge_status_t rnn_prepare(edge_node_t *node, edge_ctx_t *ctx, int32_t rank, int32_t bidirectional,
                                 int32_t opts_code) {
    const int has_opts = node->options_type == opts_code;
    const int32_t act_slot = rank == 2 ? 0 : 1;
    const edge_tensor_t *x;
    rnn_data_t *d;
    int32_t k, shape[3];
    edge_status_t s;

    if (bidirectional) {
        if (node->n_inputs < 9 || node->n_inputs > 12 || node->n_outputs < 1 || node->n_outputs > 2)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 9..12 inputs and 1 or 2 outputs");
        for (k = 9; k < 12; k++)
            if (edge_in(ctx, node, k)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "the auxiliary input is not supported");
    } else if (node->n_inputs != 5 || node->n_outputs != 1) {
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 5 inputs and 1 output");
    }
    x = edge_in(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (x->rank != rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, rank == 2 ? "input must be 2-D" : "input must be 3-D");
    for (k = 0; k < node->n_outputs; k++)
        if (edge_out(ctx, node, k)->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "outputs must be FLOAT32");
    d = (rnn_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    memset(d, 0, sizeof *d);
    node->user_data = d;
    if ((s = check_activation(ctx, d, has_opts ? edge_opt_int(node, act_slot, 1, 0) : 0)) != EDGE_OK) return s;
    d->time_major = rank == 3 && has_opts && edge_opt_int(node, 0, 1, 0) != 0;
    d->merge = bidirectional && has_opts && edge_opt_int(node, 2, 1, 0) != 0;
    d->steps = rank == 2 ? 1 : (d->time_major ? x->dims[0] : x->dims[1]);
    d->batch = rank == 2 ? x->dims[0] : (d->time_major ? x->dims[1] : x->dims[0]);
    d->n_input = x->dims[rank - 1];
    if ((s = check_weights(ctx, node, 1, d->n_input, d->batch, &d->n_fw)) != EDGE_OK) return s;
    if (bidirectional && (s = check_weights(ctx, node, 5, d->n_input, d->batch, &d->n_bw)) != EDGE_OK) return s;
    if (bidirectional && node->n_outputs != (d->merge ? 1 : 2))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "merge_outputs takes 1 output, else 2");
    d->scratch = -1;
    d->asymmetric = has_opts && edge_opt_int(node, rank == 2 ? 1 : (bidirectional ? 3 : 2), 1, 0) != 0;
    if (edge_in(ctx, node, 1)->type == EDGE_INT8 || (bidirectional && edge_in(ctx, node, 5)->type == EDGE_INT8)) {
        int32_t n = d->n_input > d->n_fw ? d->n_input : d->n_fw;
        n = n > d->n_bw ? n : d->n_bw;
        if ((s = edge_request_scratch(ctx, node, (size_t)n, &d->scratch)) != EDGE_OK) return s;
    }
    for (k = 0; k < rank - 1; k++) shape[k] = x->dims[k];
    shape[rank - 1] = d->merge ? d->n_fw + d->n_bw : d->n_fw;
    if ((s = edge_set_output_shape(ctx, node, 0, shape, rank)) != EDGE_OK) return s;
    if (!bidirectional || d->merge) return EDGE_OK;
    shape[rank - 1] = d->n_bw;
    return edge_set_output_shape(ctx, node, 1, shape, rank);
}

edge_status_t edge_prepare_rnn(edge_node_t *node, edge_ctx_t *ctx) {
    return rnn_prepare(node, ctx, 2, 0, EDGE_OPTS_RNNOptions);
}
edge_status_t edge_prepare_unidirectional_sequence_rnn(edge_node_t *node, edge_ctx_t *ctx) {
    return rnn_prepare(node, ctx, 3, 0, EDGE_OPTS_SequenceRNNOptions);
}
edge_status_t edge_prepare_bidirectional_sequence_rnn(edge_node_t *node, edge_ctx_t *ctx) {
    return rnn_prepare(node, ctx, 3, 1, EDGE_OPTS_BidirectionalSequenceRNNOptions);
}

/* y[u] += float(q . m[u] - zp * rowsum(m[u])) * scale for the quantized row of v (n values), u < U. */
static void hybrid_accumulate(const float *v, int32_t n, const edge_tensor_t *m, int32_t U, int32_t asymmetric,
                              int8_t *q, float *y) {
    const int8_t *w = (const int8_t *)m->data;
    float scale;
    int32_t zp, u;
    eh_quantize_row(v, n, asymmetric, q, &scale, &zp);
    scale *= m->scale;
    for (u = 0; u < U; u++) y[u] += eh_product(q, w + (int64_t)u * n, n, zp, scale);
}

static float activate(const rnn_data_t *d, float v) {
    if (d->act == EDGE_ACT_TANH) return tanhf(v);
    if (d->act == 6) return 1.0f / (1.0f + expf(-v));
    return v < d->lo ? d->lo : (v > d->hi ? d->hi : v);
}

/* One direction over the steps: rows of x and y at t * step + b * batch stride (t in the order the steps run). */
static void rnn_run(const rnn_data_t *d, edge_ctx_t *ctx, const edge_node_t *node, int32_t first, int32_t U,
                    const float *x, float *y, int64_t x_step, int64_t x_batch, int64_t y_step, int64_t y_batch) {
    const edge_tensor_t *tw = edge_in(ctx, node, first), *tr = edge_in(ctx, node, first + 1);
    const float *bias = (const float *)edge_in(ctx, node, first + 2)->data;
    float *h = (float *)edge_in(ctx, node, first + 3)->data;
    const int32_t I = d->n_input, hybrid = tw->type == EDGE_INT8;
    int8_t *q = hybrid ? (int8_t *)edge_scratch(ctx, node, d->scratch) : (int8_t *)0;
    int32_t t, b, u, k;
    for (t = 0; t < d->steps; t++)
        for (b = 0; b < d->batch; b++) {
            const float *xr = x + t * x_step + b * x_batch;
            float *hr = h + (int64_t)b * U, *yr = y + t * y_step + b * y_batch;
            if (hybrid) {
                memcpy(yr, bias, sizeof(float) * (size_t)U);
                hybrid_accumulate(xr, I, tw, U, d->asymmetric, q, yr);
                hybrid_accumulate(hr, U, tr, U, d->asymmetric, q, yr);
                for (u = 0; u < U; u++) yr[u] = activate(d, yr[u]);
            } else {
                const float *w = (const float *)tw->data, *r = (const float *)tr->data;
                for (u = 0; u < U; u++) {
                    const float *wu = w + (int64_t)u * I, *ru = r + (int64_t)u * U;
                    float sx = 0.0f, sh = 0.0f;
                    for (k = 0; k < I; k++) sx += xr[k] * wu[k];
                    for (k = 0; k < U; k++) sh += hr[k] * ru[k];
                    yr[u] = activate(d, sx + bias[u] + sh);
                }
            }
            memcpy(hr, yr, sizeof(float) * (size_t)U);
        }
}

void edge_eval_rnn(const edge_node_t *node, edge_ctx_t *ctx) {
    const rnn_data_t *d = (const rnn_data_t *)node->user_data;
    rnn_run(d, ctx, node, 1, d->n_fw, (const float *)edge_in(ctx, node, 0)->data,
              (float *)edge_out(ctx, node, 0)->data, 0, d->n_input, 0, d->n_fw);
}

void edge_eval_unidirectional_sequence_rnn(const edge_node_t *node, edge_ctx_t *ctx) {
    const rnn_data_t *d = (const rnn_data_t *)node->user_data;
    const int32_t T = d->steps, B = d->batch, I = d->n_input, U = d->n_fw;
    rnn_run(d, ctx, node, 1, U, (const float *)edge_in(ctx, node, 0)->data, (float *)edge_out(ctx, node, 0)->data,
              d->time_major ? (int64_t)B * I : I, d->time_major ? I : (int64_t)T * I,
              d->time_major ? (int64_t)B * U : U, d->time_major ? U : (int64_t)T * U);
}

void edge_eval_bidirectional_sequence_rnn(const edge_node_t *node, edge_ctx_t *ctx) {
    const rnn_data_t *d = (const rnn_data_t *)node->user_data;
    const int32_t T = d->steps, B = d->batch, I = d->n_input;
    const int32_t w_fw = d->merge ? d->n_fw + d->n_bw : d->n_fw, w_bw = d->merge ? w_fw : d->n_bw;
    const float *x = (const float *)edge_in(ctx, node, 0)->data;
    float *y_fw = (float *)edge_out(ctx, node, 0)->data;
    float *y_bw = d->merge ? y_fw + d->n_fw : (float *)edge_out(ctx, node, 1)->data;
    const int64_t xs = d->time_major ? (int64_t)B * I : I, xb = d->time_major ? I : (int64_t)T * I;
    const int64_t fs = d->time_major ? (int64_t)B * w_fw : w_fw, fb = d->time_major ? w_fw : (int64_t)T * w_fw;
    const int64_t bs = d->time_major ? (int64_t)B * w_bw : w_bw, bb = d->time_major ? w_bw : (int64_t)T * w_bw;
    if (T == 0) return;
    rnn_run(d, ctx, node, 1, d->n_fw, x, y_fw, xs, xb, fs, fb);
    /* backward: from the last step, step strides negated */
    rnn_run(d, ctx, node, 5, d->n_bw, x + (int64_t)(T - 1) * xs, y_bw + (int64_t)(T - 1) * bs, -xs, xb, -bs, bb);
}
