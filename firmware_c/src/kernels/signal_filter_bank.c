/* SignalFilterBank (TFLM signal library): triangular mel-style filter bank, uint32 power spectrum -> uint64
 * channel energies.
 *
 * As edge_sdk/runtime/kernels/signal.py prepare_filter_bank (TFLM signal/src/filter_bank.cc): inputs are the 1-D
 * UINT32 spectrum x and five 1-D INT16 tables: weights, unweights, per-channel frequency starts, weight
 * starts and widths (num_channels + 1 entries each; custom option num_channels). Entry c of the tables
 * describes a band of `width` bins starting at x[freq_start]; its weighted sum goes to channel c and its
 * unweighted sum to channel c + 1 (band 0 only feeds channel 0 through its unweights; the weighted sum of band
 * 0 is discarded, as TFLM discards its scratch element 0). Products are int16 (sign-extended to 64 bits) times
 * uint32 in uint64 arithmetic, summed modulo 2^64. Output: UINT64, num_channels entries.
 *
 * The five tables must be constants: prepare checks every band's bins and weights lie within their tensors
 * (a band of width <= 0 is empty), so eval indexes them without checks.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_flexbuffers.h"

EDGE_CUSTOM_KERNEL("SignalFilterBank", signal_filter_bank, 1, "UINT32", "UINT64 output")

edge_status_t edge_prepare_signal_filter_bank(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *y, *t[5];
    efb_map_t opts;
    edge_status_t s;
    const int16_t *fstart, *wstart, *width;
    int32_t channels = 0, n_w, c, i;
    if (node->n_inputs != 6 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBank expects 6 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    for (i = 0; i < 5; i++) t[i] = edge_in(ctx, node, i + 1);
    if (!x || !t[0] || !t[1] || !t[2] || !t[3] || !t[4])
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBank: all six inputs are required");
    if ((s = efb_node_options(ctx, node, &opts)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "num_channels", &channels)) != EDGE_OK) return s;
    if (x->type != EDGE_UINT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalFilterBank: input must be UINT32");
    if (y->type != EDGE_UINT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalFilterBank: output must be UINT64");
    for (i = 0; i < 5; i++)
        if (t[i]->type != EDGE_INT16)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE,
                             "SignalFilterBank: weights, unweights, starts and widths must be INT16");
    if ((s = edge_type_built(ctx, EDGE_INT16)) != EDGE_OK) return s;
    if (x->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBank: input must be 1-D");
    for (i = 0; i < 5; i++) {
        if (t[i]->rank != 1)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBank: weights, starts and widths must be 1-D");
        if (!t[i]->is_const || !t[i]->data)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED,
                             "SignalFilterBank: weights, unweights, starts and widths must be constant");
    }
    if (channels < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBank: num_channels must be positive");
    for (i = 2; i < 5; i++)
        if ((int64_t)t[i]->dims[0] < (int64_t)channels + 1)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE,
                             "SignalFilterBank: starts and widths need num_channels + 1 entries");
    n_w = t[0]->dims[0] < t[1]->dims[0] ? t[0]->dims[0] : t[1]->dims[0];
    fstart = (const int16_t *)t[2]->data;
    wstart = (const int16_t *)t[3]->data;
    width = (const int16_t *)t[4]->data;
    for (c = 0; c <= channels; c++) {
        int32_t fs = fstart[c], ws = wstart[c], w = width[c];
        if (w <= 0) continue;
        if (fs < 0 || ws < 0 || fs + w > x->dims[0] || ws + w > n_w)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE,
                             "SignalFilterBank: a channel's frequency or weight range reads past its input");
    }
    return edge_set_output_shape(ctx, node, 0, &channels, 1);
}

void edge_eval_signal_filter_bank(const edge_node_t *node, edge_ctx_t *ctx) {
    const uint32_t *x = (const uint32_t *)edge_in(ctx, node, 0)->data;
    const int16_t *w = (const int16_t *)edge_in(ctx, node, 1)->data;
    const int16_t *uw = (const int16_t *)edge_in(ctx, node, 2)->data;
    const int16_t *fstart = (const int16_t *)edge_in(ctx, node, 3)->data;
    const int16_t *wstart = (const int16_t *)edge_in(ctx, node, 4)->data;
    const int16_t *width = (const int16_t *)edge_in(ctx, node, 5)->data;
    const edge_tensor_t *yt = edge_out(ctx, node, 0);
    uint64_t *y = (uint64_t *)yt->data;
    const int32_t channels = yt->dims[0];
    uint64_t carry = 0; /* band c's unweighted sum, the start of channel c's total */
    int32_t c, j;
    for (c = 0; c <= channels; c++) {
        const int32_t n = width[c];
        uint64_t acc = carry, next = 0;
        if (n > 0) { /* an empty band's starts are unchecked: no pointer is formed from them */
            const uint32_t *xb = x + fstart[c];
            const int16_t *wb = w + wstart[c], *ub = uw + wstart[c];
            for (j = 0; j < n; j++) {
                acc += (uint64_t)(int64_t)wb[j] * xb[j];
                next += (uint64_t)(int64_t)ub[j] * xb[j];
            }
        }
        if (c > 0) y[c - 1] = acc;
        carry = next;
    }
}
