/* SignalFftAutoScale (TFLM signal library): shift an int16 frame left as far as its largest magnitude allows.
 *
 * As edge_sdk/runtime/kernels/signal.py prepare_fft_auto_scale (TFLM signal/src/fft_auto_scale.cc, max_abs.cc,
 * msb_32.cc): the running maximum magnitude is kept in int16 as TFLM does, so meeting -32768 stores 32768
 * into int16 (-32768), after which any larger value replaces it. The scale is 15 - msb(max) clamped at 0, msb
 * being the index of the highest set bit plus one of the max as uint32, 32 for 0 (the GCC build) and for a
 * wrapped negative max. Output 0 = x << scale stored into int16, output 1 = the scale (INT32 scalar).
 * No options.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_CUSTOM_KERNEL("SignalFftAutoScale", signal_fft_auto_scale, 1, "INT16", "")

edge_status_t edge_prepare_signal_fft_auto_scale(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *y, *bits;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 2)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFftAutoScale expects 1 input and 2 outputs");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    bits = edge_out(ctx, node, 1);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFftAutoScale: input is required");
    if (x->type != EDGE_INT16 || y->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalFftAutoScale: input and output must be INT16");
    if (bits->type != EDGE_INT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalFftAutoScale: scale bits output must be INT32");
    if ((s = edge_type_built(ctx, EDGE_INT16)) != EDGE_OK) return s;
    if (x->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFftAutoScale: input must be 1-D");
    if ((s = edge_set_output_shape(ctx, node, 0, x->dims, 1)) != EDGE_OK) return s;
    return edge_set_output_shape(ctx, node, 1, x->dims, 0);
}

void edge_eval_signal_fft_auto_scale(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *xt = edge_in(ctx, node, 0);
    const int16_t *x = (const int16_t *)xt->data;
    int16_t *y = (int16_t *)edge_out(ctx, node, 0)->data;
    int32_t *bits = (int32_t *)edge_out(ctx, node, 1)->data;
    const int32_t n = xt->dims[0];
    int32_t i, best = 0, msb, scale;
    for (i = 0; i < n; i++) {
        int32_t v = x[i];
        if (v > best) best = v;
        else if (-v > best) best = -v == 32768 ? -32768 : -v; /* the int16 store of 32768 */
    }
    msb = 32;
    if (best > 0) {
        uint32_t m = (uint32_t)best;
        msb = 0;
        while (m) {
            msb++;
            m >>= 1;
        }
    }
    scale = 15 - msb;
    if (scale < 0) scale = 0;
    for (i = 0; i < n; i++) { /* x << scale, stored into int16 (the low 16 bits) */
        int32_t v = (int32_t)(((uint32_t)(int32_t)x[i] << scale) & 0xffffu);
        y[i] = (int16_t)(v > 32767 ? v - 65536 : v);
    }
    *bits = scale;
}
