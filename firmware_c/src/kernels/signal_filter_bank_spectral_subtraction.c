/* SignalFilterBankSpectralSubtraction (TFLM signal library): subtracts a running per-channel noise estimate
 * from uint32 filter-bank energies; outputs the cleaned energies and the estimate.
 *
 * As edge_sdk/runtime/kernels/signal.py prepare_filter_bank_spectral_subtraction (TFLM
 * signal/src/filter_bank_spectral_subtraction.cc). Per channel i < num_channels, with (smoothing,
 * one_minus_smoothing) on even channels and the alternate pair on odd ones, all options taken as uint32:
 *     scaled = x << smoothing_bits                                   (uint32)
 *     est    = (scaled * smoothing + noise * one_minus) >> spectral_subtraction_bits   (uint64 sums, kept as uint32)
 *     capped = min(est, scaled);  noise = clamping ? capped : est
 *     floor  = (x * min_signal_remaining) >> spectral_subtraction_bits                 (uint64, kept as uint32)
 *     y      = max((scaled - capped) >> smoothing_bits, floor)
 * The noise estimate is the op's state: num_channels uint32 in persistent memory, zero after prepare and after
 * edge_reset_state (EDGE_KERNEL_RESET), copied to output 1 at every invoke. Input: 1-D UINT32 with at least
 * num_channels entries; both outputs UINT32 of num_channels entries.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_flexbuffers.h"

EDGE_CUSTOM_KERNEL("SignalFilterBankSpectralSubtraction", signal_filter_bank_spectral_subtraction, 1, "UINT32", "")
EDGE_KERNEL_RESET(signal_filter_bank_spectral_subtraction)

typedef struct {
    uint32_t smoothing[2];     /* [even channels, odd channels] */
    uint32_t one_minus[2];
    uint32_t min_remaining;
    int32_t clamping;
    int32_t channels;
    int32_t smoothing_bits;    /* 0..31 */
    int32_t subtraction_bits;  /* 0..63 */
    uint32_t *noise;           /* channels entries, persistent */
} sfbss_data_t;

edge_status_t edge_prepare_signal_filter_bank_spectral_subtraction(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *y, *ny;
    sfbss_data_t *d;
    efb_map_t opts;
    edge_status_t s;
    int32_t alt_one_minus = 0, alt_smoothing = 0, clamping = 0, min_remaining = 0, channels = 0, one_minus = 0,
            smoothing = 0, sbits = 0, ssbits = 0;
    if (node->n_inputs != 1 || node->n_outputs != 2)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankSpectralSubtraction expects 1 input and 2 outputs");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    ny = edge_out(ctx, node, 1);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankSpectralSubtraction: input is required");
    if ((s = efb_node_options(ctx, node, &opts)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "alternate_one_minus_smoothing", &alt_one_minus)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "alternate_smoothing", &alt_smoothing)) != EDGE_OK) return s;
    if ((s = EFB_OPT_BOOL(ctx, &opts, "clamping", &clamping)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "min_signal_remaining", &min_remaining)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "num_channels", &channels)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "one_minus_smoothing", &one_minus)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "smoothing", &smoothing)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "smoothing_bits", &sbits)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "spectral_subtraction_bits", &ssbits)) != EDGE_OK) return s;
    if (x->type != EDGE_UINT32 || y->type != EDGE_UINT32 || ny->type != EDGE_UINT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE,
                         "SignalFilterBankSpectralSubtraction: input and both outputs must be UINT32");
    if (x->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankSpectralSubtraction: input must be 1-D");
    if (channels < 1 || channels > x->dims[0])
        return EDGE_FAIL(ctx, EDGE_BAD_NODE,
                         "SignalFilterBankSpectralSubtraction: num_channels must be in 1..input length");
    if (sbits < 0 || sbits > 31)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankSpectralSubtraction: smoothing_bits must be in 0..31");
    if (ssbits < 0 || ssbits > 63)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE,
                         "SignalFilterBankSpectralSubtraction: spectral_subtraction_bits must be in 0..63");
    if ((s = edge_set_output_shape(ctx, node, 0, &channels, 1)) != EDGE_OK) return s;
    if ((s = edge_set_output_shape(ctx, node, 1, &channels, 1)) != EDGE_OK) return s;
    d = (sfbss_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->noise = (uint32_t *)edge_alloc_persistent(ctx, sizeof(uint32_t) * (size_t)channels); /* zeroed */
    if (!d->noise) return EDGE_ARENA_TOO_SMALL;
    d->smoothing[0] = (uint32_t)smoothing;
    d->smoothing[1] = (uint32_t)alt_smoothing;
    d->one_minus[0] = (uint32_t)one_minus;
    d->one_minus[1] = (uint32_t)alt_one_minus;
    d->min_remaining = (uint32_t)min_remaining;
    d->clamping = clamping;
    d->channels = channels;
    d->smoothing_bits = sbits;
    d->subtraction_bits = ssbits;
    node->user_data = d;
    return EDGE_OK;
}

void edge_reset_signal_filter_bank_spectral_subtraction(const edge_node_t *node, edge_ctx_t *ctx) {
    const sfbss_data_t *d = (const sfbss_data_t *)node->user_data;
    (void)ctx;
    if (d) memset(d->noise, 0, sizeof(uint32_t) * (size_t)d->channels);
}

void edge_eval_signal_filter_bank_spectral_subtraction(const edge_node_t *node, edge_ctx_t *ctx) {
    const sfbss_data_t *d = (const sfbss_data_t *)node->user_data;
    const uint32_t *x = (const uint32_t *)edge_in(ctx, node, 0)->data;
    uint32_t *y = (uint32_t *)edge_out(ctx, node, 0)->data;
    uint32_t *noise_out = (uint32_t *)edge_out(ctx, node, 1)->data;
    uint32_t *noise = d->noise;
    const int32_t sb = d->smoothing_bits, ssb = d->subtraction_bits;
    int32_t i;
    for (i = 0; i < d->channels; i++) {
        const uint32_t scaled = x[i] << sb;
        const uint32_t est = (uint32_t)(((uint64_t)scaled * d->smoothing[i & 1] +
                                         (uint64_t)noise[i] * d->one_minus[i & 1]) >> ssb);
        const uint32_t capped = est < scaled ? est : scaled;
        const uint32_t floor_ = (uint32_t)(((uint64_t)x[i] * d->min_remaining) >> ssb);
        const uint32_t sub = (scaled - capped) >> sb;
        noise[i] = d->clamping ? capped : est;
        y[i] = sub > floor_ ? sub : floor_;
    }
    memcpy(noise_out, noise, sizeof(uint32_t) * (size_t)d->channels);
}
