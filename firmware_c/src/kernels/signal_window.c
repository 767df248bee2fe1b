/* SignalWindow (TFLM signal library): y = saturate_int16((x * w) >> shift), the window w repeated over every
 * frame of x's last-dimension-sized rows.
 *
 * As edge_sdk/runtime/kernels/signal.py prepare_window (TFLM signal/src/window.cc): input, weights and output are
 * INT16; the product is formed in int32 (it cannot overflow: |x * w| <= 2^30), shifted right arithmetically
 * by `shift` (custom option, 0..31) and clamped to int16. The weights are a 1-D tensor (usually constant);
 * x's element count must be a multiple of its length.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_flexbuffers.h"

EDGE_CUSTOM_KERNEL("SignalWindow", signal_window, 1, "INT16", "")

typedef struct {
    int32_t shift;
    int32_t size;   /* window length */
    int32_t frames; /* x elements / size */
} signal_window_data_t;

edge_status_t edge_prepare_signal_window(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *w, *y;
    signal_window_data_t *d;
    efb_map_t opts;
    edge_status_t s;
    int32_t shift = 0;
    int64_t n;
    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalWindow expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    w = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !w) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalWindow: input and weights are required");
    if ((s = efb_node_options(ctx, node, &opts)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "shift", &shift)) != EDGE_OK) return s;
    if (x->type != EDGE_INT16 || w->type != EDGE_INT16 || y->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalWindow: input, weights and output must be INT16");
    if ((s = edge_type_built(ctx, EDGE_INT16)) != EDGE_OK) return s;
    if (x->rank < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalWindow: input must have at least one dimension");
    if (w->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalWindow: weights must be 1-D");
    n = edge_tensor_elements(x);
    if (w->dims[0] <= 0 || n > EDGE_INT32_MAX || (int32_t)n % w->dims[0] != 0)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalWindow: input size is not a multiple of the window length");
    if (shift < 0 || shift > 31) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalWindow: shift must be in 0..31");
    if ((s = edge_set_output_shape(ctx, node, 0, x->dims, x->rank)) != EDGE_OK) return s;
    d = (signal_window_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->shift = shift;
    d->size = w->dims[0];
    d->frames = (int32_t)n / w->dims[0];
    node->user_data = d;
    return EDGE_OK;
}

void edge_eval_signal_window(const edge_node_t *node, edge_ctx_t *ctx) {
    const signal_window_data_t *d = (const signal_window_data_t *)node->user_data;
    const int16_t *x = (const int16_t *)edge_in(ctx, node, 0)->data;
    const int16_t *w = (const int16_t *)edge_in(ctx, node, 1)->data;
    int16_t *y = (int16_t *)edge_out(ctx, node, 0)->data;
    int32_t f, i;
    for (f = 0; f < d->frames; f++, x += d->size, y += d->size) {
        for (i = 0; i < d->size; i++) {
            int32_t v = ((int32_t)x[i] * w[i]) >> d->shift;
            y[i] = (int16_t)(v > 32767 ? 32767 : (v < -32768 ? -32768 : v));
        }
    }
}
