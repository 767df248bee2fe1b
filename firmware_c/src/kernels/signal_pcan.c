/* SignalPCAN (TFLM signal library): per-channel energy normalization, y = compress((x * gain(noise)) >> shift).
 *
 * As edge_sdk/runtime/kernels/signal.py prepare_pcan (TFLM signal/src/pcan_argc_fixed.cc): input 0 (UINT32 1-D, n
 * channels), input 1 the noise estimate (UINT32 1-D, at least n entries), input 2 the gain LUT (INT16 1-D),
 * output UINT32 of the input's shape; custom option snr_shift (0..63). The gain of a noise estimate e is the
 * LUT's piecewise quadratic over e's octave (WideDynamicFunction: entries 4 * octave - 6 .. +2, the fraction
 * from the ten bits below e's leading one, its int32 sum wrapping, the result wrapped to int16); estimates 0..2
 * read the LUT directly. snr = (x * (uint32)gain) >> snr_shift in 64 bits, kept to 32; below 2^13 the output
 * is the low 32 bits of snr^2 >> 20, above it (snr >> 6) - 64. LUT entries past the tensor's end read 0 (TFLM
 * would read past the LUT; only entries 0..124 are ever read).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_fixedpoint_act.h"
#include "../edge_flexbuffers.h"

EDGE_CUSTOM_KERNEL("SignalPCAN", signal_pcan, 1, "UINT32", "INT16 gain LUT")

enum { PCAN_LUT_LEN = 4 * 32 - 6 + 3 };

typedef struct {
    int32_t shift;
    int32_t channels;
    int32_t lut_len; /* entries of the LUT tensor that are read (at most PCAN_LUT_LEN) */
} signal_pcan_data_t;

edge_status_t edge_prepare_signal_pcan(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *noise, *lut, *y;
    signal_pcan_data_t *d;
    efb_map_t opts;
    edge_status_t s;
    int32_t shift = 0;
    if (node->n_inputs != 3 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalPCAN expects 3 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    noise = edge_in(ctx, node, 1);
    lut = edge_in(ctx, node, 2);
    y = edge_out(ctx, node, 0);
    if (!x || !noise || !lut) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalPCAN: all three inputs are required");
    if ((s = efb_node_options(ctx, node, &opts)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "snr_shift", &shift)) != EDGE_OK) return s;
    if (x->type != EDGE_UINT32 || noise->type != EDGE_UINT32 || y->type != EDGE_UINT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalPCAN: input, noise estimate and output must be UINT32");
    if (lut->type != EDGE_INT16) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalPCAN: gain LUT must be INT16");
    if (x->rank != 1 || noise->rank != 1 || lut->rank != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalPCAN: input, noise estimate and gain LUT must be 1-D");
    if (noise->dims[0] < x->dims[0])
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalPCAN: noise estimate is shorter than the input");
    if (shift < 0 || shift > 63) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalPCAN: snr_shift must be in 0..63");
    if ((s = edge_set_output_shape(ctx, node, 0, x->dims, 1)) != EDGE_OK) return s;
    d = (signal_pcan_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->shift = shift;
    d->channels = x->dims[0];
    d->lut_len = lut->dims[0] < PCAN_LUT_LEN ? lut->dims[0] : PCAN_LUT_LEN;
    node->user_data = d;
    return EDGE_OK;
}

static int16_t pcan_gain(uint32_t e, const int16_t *lut) {
    uint32_t interval, frac;
    int32_t base;
    int64_t res;
    if (e <= 2) return lut[e];
    interval = 32u - (uint32_t)ea_clz32(e); /* the bit length of e: its octave */
    base = 4 * (int32_t)interval - 6;
    frac = (interval < 11 ? e << (11 - interval) : e >> (interval - 11)) & 0x3ffu;
    res = ((int64_t)lut[base + 2] * frac) >> 5;
    res = (res + (int64_t)lut[base + 1] * 32) * frac;
    res = (int64_t)(edge_wrap32(res + (1 << 14)) >> 15) + lut[base];
    return (int16_t)(((int32_t)(res & 0xffff) ^ 0x8000) - 0x8000); /* wrapped to int16 */
}

void edge_eval_signal_pcan(const edge_node_t *node, edge_ctx_t *ctx) {
    const signal_pcan_data_t *d = (const signal_pcan_data_t *)node->user_data;
    const uint32_t *x = (const uint32_t *)edge_in(ctx, node, 0)->data;
    const uint32_t *noise = (const uint32_t *)edge_in(ctx, node, 1)->data;
    uint32_t *y = (uint32_t *)edge_out(ctx, node, 0)->data;
    int16_t lut[PCAN_LUT_LEN];
    int32_t i;
    memset(lut, 0, sizeof lut);
    memcpy(lut, edge_in(ctx, node, 2)->data, (size_t)d->lut_len * 2);
    for (i = 0; i < d->channels; i++) {
        const uint32_t gain = (uint32_t)(int32_t)pcan_gain(noise[i], lut);
        const uint32_t snr = (uint32_t)(((uint64_t)x[i] * gain) >> d->shift);
        y[i] = snr < (2u << 12) ? (snr * snr) >> 20 : (snr >> 6) - 64u;
    }
}
