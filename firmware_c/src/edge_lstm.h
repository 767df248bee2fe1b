/* edge_lstm.h - the float32 LSTM cell every float LSTM kernel runs: UNIDIRECTIONAL_SEQUENCE_LSTM (its home,
 * unidirectional_sequence_lstm.c), LSTM and BIDIRECTIONAL_SEQUENCE_LSTM (lstm.c); and LiteRT's integer LSTM step
 * (its home lstm.c; below).
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
#ifndef EDGE_LSTM_H
#define EDGE_LSTM_H

#include <stdint.h>
#include <string.h>

#include "edge.h" /* edge_status_t */

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

void edge_lstm_f32_run(const edge_lstm_f32_t *p, const float *x, float *h, float *c, float *y, int32_t steps,
                       int32_t batch, int64_t x_step, int64_t x_batch, int64_t y_step, int64_t y_batch);

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

struct edge_ctx;
edge_status_t edge_lstm_int8_prepare(struct edge_node *node, struct edge_ctx *ctx, int32_t batch, int32_t n_input,
                                     float cell_clip, edge_lstm_int8_t **out);
void edge_lstm_int8_step(const edge_lstm_int8_t *q, const struct edge_node *node, struct edge_ctx *ctx,
                         const int8_t *x, int64_t x_batch, int8_t *h, int16_t *c, int8_t *y, int64_t y_batch,
                         int32_t batch);

#endif /* EDGE_LSTM_H */
