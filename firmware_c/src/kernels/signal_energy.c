/* SignalEnergy (TFLM signal library): the energy re^2 + im^2 of complex int16 bins, as uint32.
 *
 * As edge_sdk/runtime/kernels/signal.py prepare_energy (TFLM signal/src/energy.cc): the 1-D INT16 input holds
 * interleaved (real, imag) pairs, len / 2 bins; the UINT32 output has one value per bin. Bins in
 * [start_index, end_index) (custom options) get re * re + im * im modulo 2^32 (two int16 squares can reach
 * 2^31, which TFLM's int32 sum wraps: we add in uint32); the other bins are written as 0 (TFLM leaves them
 * unwritten; our Python kernel writes zeros, and so do we).
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_flexbuffers.h"

EDGE_CUSTOM_KERNEL("SignalEnergy", signal_energy, 1, "INT16", "UINT32 output")

typedef struct {
    int32_t start, end, bins;
} signal_energy_data_t;

edge_status_t edge_prepare_signal_energy(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *y;
    signal_energy_data_t *d;
    efb_map_t opts;
    edge_status_t s;
    int32_t start = 0, end = 0, bins;
    if (node->n_inputs != 1 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalEnergy expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalEnergy: input is required");
    if ((s = efb_node_options(ctx, node, &opts)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "end_index", &end)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "start_index", &start)) != EDGE_OK) return s;
    if (x->type != EDGE_INT16) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalEnergy: input must be INT16");
    if (y->type != EDGE_UINT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalEnergy: output must be UINT32");
    if ((s = edge_type_built(ctx, EDGE_INT16)) != EDGE_OK) return s;
    if (x->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalEnergy: input must be 1-D");
    bins = x->dims[0] / 2;
    if (start < 0 || end > bins)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalEnergy: start_index / end_index outside the input bins");
    if ((s = edge_set_output_shape(ctx, node, 0, &bins, 1)) != EDGE_OK) return s;
    d = (signal_energy_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->start = start;
    d->end = end;
    d->bins = bins;
    node->user_data = d;
    return EDGE_OK;
}

void edge_eval_signal_energy(const edge_node_t *node, edge_ctx_t *ctx) {
    const signal_energy_data_t *d = (const signal_energy_data_t *)node->user_data;
    const int16_t *x = (const int16_t *)edge_in(ctx, node, 0)->data;
    uint32_t *y = (uint32_t *)edge_out(ctx, node, 0)->data;
    int32_t i;
    for (i = 0; i < d->bins; i++) {
        if (i >= d->start && i < d->end) {
            int32_t re = x[2 * i], im = x[2 * i + 1];
            y[i] = (uint32_t)(re * re) + (uint32_t)(im * im);
        } else {
            y[i] = 0;
        }
    }
}
