/* SignalFilterBankLog (TFLM signal library): y = min(output_scale * ln(x << input_correction_bits), 32767).
 *
 * As edge_sdk/runtime/kernels/signal.py prepare_filter_bank_log (TFLM signal/src/filter_bank_log.cc, log.cc): input
 * UINT32 1-D, output INT16 of its shape; custom options input_correction_bits (0..31) and output_scale (int32,
 * used as uint32). The shifted value (kept to 32 bits) gives 0 when it is 0 or 1; otherwise its log2 in 16.16
 * fixed point (the integer part from the leading one, the 16 bits below it as fraction, corrected by a
 * 128-segment table interpolated linearly), times ln(2) (45426 / 2^16, rounded), times output_scale (32-bit
 * wrapping product, rounded by 2^16), capped at 32767.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_flexbuffers.h"

EDGE_CUSTOM_KERNEL("SignalFilterBankLog", signal_filter_bank_log, 1, "UINT32", "INT16 output")

typedef struct {
    int32_t bits;
    uint32_t scale;
    int32_t n;
} signal_filter_bank_log_data_t;

/* log2(1 + f) - f over 128 segments of [0, 1), scale 2^16 (and two closing zeros). */
static const uint16_t fbl_lut[130] = {
    0,    224,  442,  654,  861,  1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797, 2944,
    3087, 3224, 3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633, 4714, 4791,
    4864, 4934, 5001, 5063, 5123, 5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507, 5533, 5557, 5578,
    5595, 5610, 5622, 5631, 5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568, 5547, 5524, 5498,
    5470, 5439, 5406, 5370, 5332, 5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944, 4885, 4825, 4762, 4697,
    4630, 4561, 4490, 4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848, 3759, 3668, 3575, 3481, 3384, 3286,
    3186, 3084, 2981, 2875, 2768, 2659, 2549, 2437, 2323, 2207, 2090, 1971, 1851, 1729, 1605, 1480, 1353,
    1224, 1094, 963,  830,  695,  559,  421,  282,  142,  0,    0};

edge_status_t edge_prepare_signal_filter_bank_log(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *y;
    signal_filter_bank_log_data_t *d;
    efb_map_t opts;
    edge_status_t s;
    int32_t bits = 0, scale = 0;
    if (node->n_inputs != 1 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankLog expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankLog: the input is required");
    if ((s = efb_node_options(ctx, node, &opts)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "input_correction_bits", &bits)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "output_scale", &scale)) != EDGE_OK) return s;
    if (x->type != EDGE_UINT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalFilterBankLog: input must be UINT32");
    if (y->type != EDGE_INT16) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalFilterBankLog: output must be INT16");
    if ((s = edge_type_built(ctx, EDGE_INT16)) != EDGE_OK) return s;
    if (x->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankLog: input must be 1-D");
    if (bits < 0 || bits > 31)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankLog: input_correction_bits must be in 0..31");
    if ((s = edge_set_output_shape(ctx, node, 0, x->dims, 1)) != EDGE_OK) return s;
    d = (signal_filter_bank_log_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->bits = bits;
    d->scale = (uint32_t)scale;
    d->n = x->dims[0];
    node->user_data = d;
    return EDGE_OK;
}

/* out_scale * ln(x) for x >= 2, rounded and truncated to 16 bits as TFLM's Log32. */
static uint32_t fbl_log32(uint32_t x, uint32_t out_scale) {
    uint32_t integer = 0, frac, seg, fraction, log2, loge, v;
    int32_t c0, c1, rel;
    for (v = x >> 1; v; v >>= 1) integer++;
    frac = x - (1u << integer);
    frac = integer < 16 ? frac << (16 - integer) : frac >> (integer - 16);
    seg = frac >> 9;
    c0 = fbl_lut[seg];
    c1 = fbl_lut[seg + 1];
    rel = (int32_t)(((int64_t)(c1 - c0) * (int32_t)(frac - 512 * seg)) >> 16);
    fraction = (uint32_t)((int64_t)frac + c0 + rel);
    log2 = (integer << 16) + fraction;
    loge = (uint32_t)(((uint64_t)45426 * log2 + 32768) >> 16);
    return (out_scale * loge + 32768u) >> 16;
}

void edge_eval_signal_filter_bank_log(const edge_node_t *node, edge_ctx_t *ctx) {
    const signal_filter_bank_log_data_t *d = (const signal_filter_bank_log_data_t *)node->user_data;
    const uint32_t *x = (const uint32_t *)edge_in(ctx, node, 0)->data;
    int16_t *y = (int16_t *)edge_out(ctx, node, 0)->data;
    int32_t i;
    for (i = 0; i < d->n; i++) {
        const uint32_t scaled = x[i] << d->bits;
        uint32_t v;
        if (scaled <= 1) {
            y[i] = 0;
            continue;
        }
        v = fbl_log32(scaled, d->scale);
        y[i] = (int16_t)(v > 32767u ? 32767u : v);
    }
}
