/* FAKE_QUANT: float32 values quantized to num_bits and back, as edge_sdk/runtime/kernels/fake_quant.py (LiteRT's
 * fake_quant.cc with the reference's NudgeQuantizationRange and FakeQuantizeArray), every step in float32: the
 * range [min, max] nudged so 0 is a grid point (scale (max - min) / (2^num_bits - 1), zero point round(-min /
 * scale) within the grid), each value clamped to the nudged range (NaN to its minimum, as std::max) and rounded
 * half away from zero to the grid. narrow_range is refused (LiteRT refuses it at run time).
 */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(FAKE_QUANT, fake_quant, 2, "FLOAT32", "no narrow_range; num_bits 1..16")

typedef struct {
    float nudged_min, nudged_max, scale, inverse_scale;
} fake_quant_data_t;

edge_status_t edge_prepare_fake_quant(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x;
    edge_tensor_t *out;
    fake_quant_data_t *d;
    float rmin, rmax, quant_max, zero_point_from_min, zero_point;
    int32_t num_bits;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 || out->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (node->options_type != EDGE_OPTS_FakeQuantOptions) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "FakeQuantOptions missing");
    rmin = edge_opt_float(node, 0, 0.0f);
    rmax = edge_opt_float(node, 1, 0.0f);
    num_bits = edge_opt_int(node, 2, 4, 0);
    if (edge_opt_int(node, 3, 1, 0)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "narrow_range is not supported at run time");
    if (num_bits < 1 || num_bits > 16) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "num_bits outside 1..16");
    if (!(rmin < rmax)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "min is not below max");
    d = (fake_quant_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    quant_max = (float)((1 << num_bits) - 1);
    d->scale = (rmax - rmin) / (quant_max - 0.0f);
    zero_point_from_min = 0.0f - rmin / d->scale;
    if (zero_point_from_min < 0.0f) zero_point = 0.0f;
    else if (zero_point_from_min > quant_max) zero_point = quant_max;
    else zero_point = ea_round_f32(zero_point_from_min);
    d->nudged_min = (0.0f - zero_point) * d->scale;
    d->nudged_max = (quant_max - zero_point) * d->scale;
    d->inverse_scale = 1.0f / d->scale;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_fake_quant(const edge_node_t *node, edge_ctx_t *ctx) {
    const fake_quant_data_t *d = (const fake_quant_data_t *)node->user_data;
    const float *a = (const float *)edge_in(ctx, node, 0)->data;
    edge_tensor_t *out = edge_out(ctx, node, 0);
    float *y = (float *)out->data;
    const int64_t n = edge_tensor_elements(out);
    int64_t i;
    if (!EDGE_WITH_FLOAT32) return;
    for (i = 0; i < n; i++) {
        float v = d->nudged_min < a[i] ? a[i] : d->nudged_min; /* std::max(nudged_min, x) */
        v = v < d->nudged_max ? v : d->nudged_max;             /* std::min(nudged_max, v) */
        {
            const float steps = ea_round_f32((v - d->nudged_min) * d->inverse_scale);
            /* the product rounded before the addition, as the reference (the M4's VMLA rounds it too; a compiler
             * contracting this into a fused multiply-add would differ in the last bit) */
            const float scaled = steps * d->scale;
            y[i] = scaled + d->nudged_min;
        }
    }
}
