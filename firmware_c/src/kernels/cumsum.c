/* CUMSUM along one constant INT32 axis (CumsumOptions: 0 exclusive, 1 reverse), as
 * edge_sdk/runtime/kernels/cumsum.py (LiteRT's and TFLM's reference Cumsum):
 *  - FLOAT32 / INT32 / INT64: a running sum in the type along the axis (backwards with reverse); exclusive writes
 *    the sum before adding the element. Integers wrap (through unsigned arithmetic).
 *  - INT8 (TFLM's quantized CumSum): each (q - zp_in) << 20 halved by MultiplyByQuantizedMultiplier, summed in int32
 *    from TFLM's start value (the rescaled -zp_in, its accumulator's input offset), requantized by
 *    2 * s_in / (2^20 * s_out), plus zp_out, clamped.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_index.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(CUMSUM, cumsum, 1, "FLOAT32 INT8 INT32 INT64", "INT32 axis, constant")

typedef struct {
    int64_t outer, depth, after;          /* dims before the axis, along it, after it */
    int32_t exclusive, reverse;
    int32_t in_mult, in_shift, out_mult, out_shift, in_zp, out_zp, start;
} cumsum_data_t;

edge_status_t edge_prepare_cumsum(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *a, *y;
    cumsum_data_t *d;
    int32_t axis, k;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    a = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !a) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and axis are required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_INT32 && x->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, INT32, INT64");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if ((s = edge_const_axis(ctx, a, x->rank, 0, 0, &axis)) != EDGE_OK) return s;
    d = (cumsum_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->outer = d->after = 1;
    for (k = 0; k < x->rank; k++) {
        if (k < axis) d->outer *= x->dims[k];
        if (k > axis) d->after *= x->dims[k];
    }
    d->depth = x->dims[axis];
    if (node->options_type == EDGE_OPTS_CumsumOptions) {
        d->exclusive = edge_opt_int(node, 0, 1, 0) != 0;
        d->reverse = edge_opt_int(node, 1, 1, 0) != 0;
    }
    if (x->type == EDGE_INT8) {
        const double real_out = 2.0 * (double)x->scale / ((double)(1 << 20) * (double)y->scale);
        if (!x->quantized || !y->quantized) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "INT8 needs quantized input and output");
        if (edge_quantize_multiplier(0.5, &d->in_mult, &d->in_shift) != 0 ||
            edge_quantize_multiplier(real_out, &d->out_mult, &d->out_shift) != 0 || d->out_shift > 0)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input/output scale ratio too large (TFLM needs the output multiplier below 1)");
        d->in_zp = x->zero_point;
        d->out_zp = y->zero_point;
        d->start = ea_mbqm((int32_t)((uint32_t)-d->in_zp << 20), d->in_mult, d->in_shift);
    }
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

/* One running sum per (outer, after) line; UT the unsigned twin of T (integers wrap). */
#define CUMSUM_LOOP(T, UT)                                                                   \
    do {                                                                                     \
        const T *v = (const T *)x->data;                                                     \
        T *o = (T *)y->data;                                                                 \
        for (b = 0; b < d->outer; b++)                                                       \
            for (i = 0; i < d->after; i++) {                                                 \
                T acc = 0;                                                                   \
                for (j = 0; j < d->depth; j++) {                                             \
                    const int64_t at = (b * d->depth + (d->reverse ? d->depth - 1 - j : j)) * d->after + i; \
                    if (d->exclusive) { o[at] = acc; acc = (T)((UT)acc + (UT)v[at]); }      \
                    else { acc = (T)((UT)acc + (UT)v[at]); o[at] = acc; }                    \
                }                                                                            \
            }                                                                                \
    } while (0)

void edge_eval_cumsum(const edge_node_t *node, edge_ctx_t *ctx) {
    const cumsum_data_t *d = (const cumsum_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    int64_t b, i, j;
    switch (x->type) {
    case EDGE_INT32: CUMSUM_LOOP(int32_t, uint32_t); break;
    case EDGE_INT64: CUMSUM_LOOP(int64_t, uint64_t); break;
    case EDGE_INT8: {
        const int8_t *v = (const int8_t *)x->data;
        int8_t *o = (int8_t *)y->data;
        for (b = 0; b < d->outer; b++)
            for (i = 0; i < d->after; i++) {
                int32_t acc = d->start, out;
                for (j = 0; j < d->depth; j++) {
                    const int64_t at = (b * d->depth + (d->reverse ? d->depth - 1 - j : j)) * d->after + i;
                    const int32_t scaled = ea_mbqm((int32_t)((uint32_t)(v[at] - d->in_zp) << 20), d->in_mult, d->in_shift);
                    if (d->exclusive) { out = acc; acc = ea_add(acc, scaled); }
                    else { acc = ea_add(acc, scaled); out = acc; }
                    o[at] = (int8_t)edge_clamp32(ea_mbqm(out, d->out_mult, d->out_shift) + d->out_zp, -128, 127);
                }
            }
        break;
    }
    default:
        if (EDGE_WITH_FLOAT32) {
            const float *v = (const float *)x->data;
            float *o = (float *)y->data;
            for (b = 0; b < d->outer; b++)
                for (i = 0; i < d->after; i++) {
                    float acc = 0.0f;
                    for (j = 0; j < d->depth; j++) {
                        const int64_t at = (b * d->depth + (d->reverse ? d->depth - 1 - j : j)) * d->after + i;
                        if (d->exclusive) { o[at] = acc; acc += v[at]; }
                        else { acc += v[at]; o[at] = acc; }
                    }
                }
        }
        break;
    }
}
