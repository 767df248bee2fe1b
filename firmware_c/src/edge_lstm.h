/* edge_lstm.h - the float32 LSTM cell every float LSTM kernel runs: UNIDIRECTIONAL_SEQUENCE_LSTM (its home,
 * unidirectional_sequence_lstm.c), LSTM and BIDIRECTIONAL_SEQUENCE_LSTM (lstm.c).
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

#endif /* EDGE_LSTM_H */
