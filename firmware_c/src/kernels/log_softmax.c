/* LOG_SOFTMAX over the last dimension, as edge_sdk/runtime/kernels/activations.py prepare_log_softmax.
 *  - FLOAT32: shifted = x - max, sum of exp(shifted) (exp in double rounded to float, single precision on cores
 *    without a double FPU: ea_exp_f32; summed in float), out =
 *    shifted - (float)log(sum). The Python kernel sums pairwise (numpy): results agree within a few ulps.
 *  - INT8 (output scale 16/256, zero point 127), TFLM's fixed-point LogSoftmax: differences to the row maximum
 *    scaled into Q5.26, exp summed in Q12.19, gemmlowp's log(x) for x >= 1 in Q5.26, the result requantized
 *    by a rounding shift of 22; inputs below the reverse-scaled log sum give -128. Bit-exact with the Python.
 */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(LOG_SOFTMAX, log_softmax, 2, "FLOAT32 INT8", "")

typedef struct {
    int32_t multiplier, shift, rev_m, rev_s, diff_min;
    int32_t q5[256], summand[256]; /* by d = max - x */
} lsm_data_t;

/* SaturatingRoundingMultiplyByPOTParam for an exponent 0..31. */
static int32_t lsm_shl(int64_t x, int32_t e) {
    int64_t threshold;
    if (e <= 0) return (int32_t)x;
    threshold = ((int64_t)1 << (31 - e)) - 1;
    if (x > threshold) return EDGE_INT32_MAX;
    if (x < -threshold) return EDGE_INT32_MIN;
    return edge_wrap32((int64_t)((uint64_t)x << e));
}

static int32_t lsm_sat(int64_t v) { return v > EDGE_INT32_MAX ? EDGE_INT32_MAX : v < EDGE_INT32_MIN ? EDGE_INT32_MIN : (int32_t)v; }

static int32_t lsm_half_sum(int32_t a, int32_t b) {
    int64_t s = (int64_t)a + b;
    return (int32_t)((s + (s >= 0 ? 1 : -1)) / 2);
}

/* gemmlowp log_x_for_x_greater_than_or_equal_to_1: input Q(in_bits), result Q(out_bits). */
static int32_t lsm_log_x(int32_t z_a, int32_t out_bits, int32_t in_bits) {
    const int32_t accum = out_bits + 1, log_2 = 1488522236, ssh = 1805811301, sqrt_half = 1518500250;
    const int32_t alpha_n = 117049297, alpha_d = 127690142, alpha_i = 1057819769, alpha_f = 638450708;
    const int32_t quarter = ea_rescale(536870912, 0, accum);
    const int32_t a_hp1 = ea_clz32((uint32_t)z_a);
    const int32_t r_a = lsm_shl(edge_srdhm(lsm_shl(z_a, a_hp1 - 1), sqrt_half), 1);
    const int32_t a_adj = lsm_sat((int64_t)lsm_shl(in_bits - a_hp1, 31 - accum) + quarter);
    const int32_t z_b = edge_srdhm(z_a, sqrt_half);
    const int32_t b_hr = ea_clz32((uint32_t)z_b) - 1;
    const int32_t r_b = lsm_shl(z_a, b_hr);
    const int32_t b_adj = lsm_sat((int64_t)lsm_shl(in_bits - b_hr, 31 - accum) - quarter);
    const int32_t r = r_a < r_b ? r_a : r_b, adj = a_adj > b_adj ? a_adj : b_adj;
    const int32_t p = lsm_half_sum(r, ssh);
    int32_t q = ea_sub(r, ssh), sq, num, den, recip, total;
    q = ea_add(q, q);
    sq = edge_srdhm(q, q);
    num = ea_add(edge_srdhm(q, r), edge_srdhm(edge_srdhm(q, sq), alpha_n));
    den = ea_add(edge_srdhm(p, ea_add(ea_add(alpha_i, q), edge_srdhm(alpha_d, sq))), edge_srdhm(alpha_f, q));
    recip = ea_one_over_one_plus_x(den);
    total = ea_add(edge_srdhm(adj, log_2), edge_srdhm(ea_rescale(num, 0, accum), recip));
    return ea_rescale(total, accum, out_bits);
}

edge_status_t edge_prepare_log_softmax(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *y;
    lsm_data_t *d;
    double real, reverse;
    int32_t k;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input");
    if (x->rank < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must have at least one dimension");
    if (x->type == EDGE_INT8) {
        if (!x->quantized || !y->quantized) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "int8 LOG_SOFTMAX needs quantization parameters");
        if (y->scale != 16.0f / 256.0f || y->zero_point != 127)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "int8 LOG_SOFTMAX output needs scale 16/256 and zero point 127");
        d = (lsm_data_t *)edge_alloc_persistent(ctx, sizeof *d);
        if (!d) return EDGE_ARENA_TOO_SMALL;
        real = (double)x->scale * (double)(1 << 26);
        if (real > 2147483647.0) real = 2147483647.0;
        if (edge_quantize_multiplier(real, &d->multiplier, &d->shift) != 0 || d->multiplier <= 0 || d->shift < 0 || d->shift > 31)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input scale out of range");
        reverse = (double)((int64_t)1 << (31 - d->shift)) / (double)d->multiplier;
        if (edge_quantize_multiplier(reverse, &d->rev_m, &d->rev_s) != 0) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input scale out of range");
        d->diff_min = -(int32_t)floor(31.0 * (double)(1 << 26) / (double)((int64_t)1 << d->shift));
        for (k = 0; k < 256; k++) {
            const int32_t q5 = ea_mbqm(-k, d->multiplier, d->shift);
            d->q5[k] = q5;
            d->summand[k] = -k >= d->diff_min ? ea_rescale(ea_exp_on_negative_values(q5, 5), 0, 12) : 0;
        }
        node->user_data = d;
    }
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

static void lsm_int8(const lsm_data_t *d, const int8_t *v, int8_t *o, int64_t depth) {
    int32_t mx = v[0], log_sum, adjusted;
    int64_t i, total = 0;
    for (i = 1; i < depth; i++)
        if (v[i] > mx) mx = v[i];
    for (i = 0; i < depth; i++) total += d->summand[mx - v[i]];
    log_sum = lsm_log_x(edge_wrap32(total), 5, 12);
    adjusted = ea_mbqm(edge_wrap32((int64_t)log_sum - ((int64_t)1 << 31)), d->rev_m, d->rev_s);
    if (adjusted < d->diff_min - 1) adjusted = d->diff_min - 1;
    for (i = 0; i < depth; i++) {
        const int32_t k = mx - v[i], diff = -k;
        int32_t r = edge_rdbpot(edge_wrap32((int64_t)d->q5[k] - log_sum), 22) + 127;
        r = r < -128 ? -128 : r > 127 ? 127 : r;
        o[i] = (int8_t)(diff > adjusted ? r : -128);
    }
}

void edge_eval_log_softmax(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int64_t depth = x->dims[x->rank - 1];
    const int64_t rows = depth ? (int64_t)((uint32_t)edge_tensor_elements(x) / (uint32_t)depth) : 0; /* 32-bit divide */
    int64_t r, i;
    if (x->type == EDGE_INT8) {
        for (r = 0; r < rows; r++)
            lsm_int8((const lsm_data_t *)node->user_data, (const int8_t *)x->data + r * depth, (int8_t *)y->data + r * depth, depth);
        return;
    }
    if (!EDGE_WITH_FLOAT32) return;
    for (r = 0; r < rows; r++) {
        const float *v = (const float *)x->data + r * depth;
        float *o = (float *)y->data + r * depth;
        float mx = v[0], sum = 0.0f, ls;
        for (i = 1; i < depth; i++)
            if (v[i] > mx) mx = v[i];
        for (i = 0; i < depth; i++) sum += ea_exp_f32(v[i] - mx); /* double where the FPU has it */
        ls = (float)log((double)sum);
        for (i = 0; i < depth; i++) o[i] = (v[i] - mx) - ls;
    }
}
