/* DIV: y = act(a / b) with numpy broadcasting up to rank 6.
 *
 * As edge_sdk/runtime/kernels/elementwise.py prepare_div (TFLM div.cc). float32: quotient, clamped to the fused
 * activation. int32: C division truncating toward zero, a zero divisor giving 0 (TFLM would trap) and
 * INT32_MIN / -1 wrapping to INT32_MIN, clamped to the activation's integer bounds. int8: (a - za) / (b - zb)
 * as TFLM's reference: both signs moved onto the numerator, the divisor's reciprocal (GetReciprocal, Q0.31
 * with its bit count), the numerator shifted left by its headroom and multiplied by it, then by the multiplier
 * of sa / (sb * so) (formed in double, as the tflite-micro build we compare with does) and divided by
 * 2^-(shift - reciprocal bits - headroom) with rounding; that exponent reaches 32..63 for large quotients, where
 * the x86 build's 32-bit shifts wrap (the mask all ones, the count modulo 32), reproduced here. Scales whose
 * exponent could leave 0..63 (a ratio at or above 2^22 or below 2^-26) are refused. The broadcast rows and the
 * eval dispatch are edge_binary.h's. int16: the same arithmetic (LiteRT's reference Div<int16_t>, the int8
 * template; TFLM has no int16 DIV), any zero points in the int16 range.
 */
#include "edge_kernel.h"
#include "../edge_binary.h"

EDGE_KERNEL(DIV, div, 2, "FLOAT32 INT8 INT16 INT32", "")


typedef struct {
    int32_t zp1, zp2, off_out, lo, hi;
    int32_t multiplier, shift;
    float flo, fhi;
} div_p_t;

typedef struct {
    ea_bcast_t bc;
    int32_t type;
    div_p_t p;
} div_data_t;

edge_status_t edge_prepare_div(edge_node_t *node, edge_ctx_t *ctx) {
    const int32_t act = node->options_type == EDGE_OPTS_DivOptions ? edge_opt_int(node, 0, 1, 0) : 0;
    edge_tensor_t *a, *b, *out;
    div_data_t *d;
    const edge_status_t s = eb_prepare(node, ctx, sizeof *d, act, &a, &b, &out);
    if (s != EDGE_OK) return s;
    d = (div_data_t *)node->user_data;
    d->type = a->type;
    if (EDGE_WITH_FLOAT32 && a->type == EDGE_FLOAT32) {
        edge_activation_range_float(act, &d->p.flo, &d->p.fhi);
        return EDGE_OK;
    }
    if (a->type == EDGE_INT32) {
        d->p.lo = act == EDGE_ACT_NONE ? EDGE_INT32_MIN : act == EDGE_ACT_RELU_N1_TO_1 ? -1 : 0;
        d->p.hi = act == EDGE_ACT_NONE || act == EDGE_ACT_RELU ? EDGE_INT32_MAX : act == EDGE_ACT_RELU6 ? 6 : 1;
        return EDGE_OK;
    }
    if (!a->quantized || !b->quantized || !out->quantized)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DIV: quantized tensors need quantization parameters");
    if (!ea_good_scale(a) || !ea_good_scale(b) || !ea_good_scale(out))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DIV: scales must be positive and finite");
    {
        const int32_t qmin = a->type == EDGE_INT8 ? -128 : -32768, qmax = a->type == EDGE_INT8 ? 127 : 32767;
        if (a->zero_point < qmin || a->zero_point > qmax || b->zero_point < qmin || b->zero_point > qmax ||
            out->zero_point < qmin || out->zero_point > qmax)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "DIV: zero points must be in the tensor type's range");
        if (edge_activation_range(act, qmin, qmax, out->scale, out->zero_point, &d->p.lo, &d->p.hi) != 0)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "DIV: fused activation");
    }
    if (edge_quantize_multiplier((double)a->scale / ((double)b->scale * (double)out->scale), &d->p.multiplier,
                                 &d->p.shift))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DIV: scales give no multiplier");
    /* the rounding exponent is -(shift - reciprocal bits - headroom): int8 (-1..7, 23..31), int16 (-1..16,
     * 15..31): keep it in 0..63 */
    if (a->type == EDGE_INT8 ? (d->p.shift > 22 || d->p.shift < -25) : (d->p.shift > 14 || d->p.shift < -16))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "DIV: input/output scale ratio out of the supported range");
    d->p.zp1 = a->zero_point;
    d->p.zp2 = b->zero_point;
    d->p.off_out = out->zero_point;
    return EDGE_OK;
}

/* RoundingDivideByPOT as the x86 build computes it for exponents 0..63 (32 and up: see the header). */
static inline int32_t div_rdbpot(int32_t x, int32_t exponent) {
    if (exponent < 32) return edge_rdbpot(x, exponent);
    return (int32_t)((int64_t)x >> (exponent - 32)) + (x >= 0 ? 1 : 0);
}

static inline int32_t div_q(const div_p_t d, int32_t x1, int32_t x2) {
    int32_t v1 = x1 - d.zp1, v2 = x2 - d.zp2, recip_bits, headroom, inv, unscaled;
    if (v2 < 0) {
        v1 = -v1;
        v2 = -v2;
    }
    inv = ea_get_reciprocal(v2, 31, &recip_bits);
    headroom = ea_clz32((uint32_t)(v1 < 0 ? ~v1 : v1)) - 1;
    unscaled = edge_srdhm(edge_wrap32((int64_t)v1 * ((int64_t)1 << headroom)), inv);
    return (int32_t)ea_clamp((int64_t)div_rdbpot(edge_srdhm(unscaled, d.multiplier), recip_bits + headroom - d.shift) +
                                 d.off_out,
                             d.lo, d.hi);
}

static inline float div_f(const div_p_t d, float x1, float x2) { return eb_clampf(x1 / x2, d.flo, d.fhi); }

static inline int32_t div_i32(const div_p_t d, int32_t x1, int32_t x2) {
    const int32_t q = x2 == 0 ? 0 : (x2 == -1 ? edge_wrap32(-(int64_t)x1) : x1 / x2);
    return (int32_t)ea_clamp(q, d.lo, d.hi);
}

EB_ROW(div_row_int8, int8_t, div_p_t, div_q)
EB_ROW(div_row_int16, int16_t, div_p_t, div_q)
EB_ROW(div_row_int32, int32_t, div_p_t, div_i32)
EB_ROW(div_row_float, float, div_p_t, div_f)
static const eb_rows_t div_rows = {div_row_int8, div_row_int16, div_row_int32, EDGE_WITH_FLOAT32 ? div_row_float : 0, 0};

void edge_eval_div(const edge_node_t *node, edge_ctx_t *ctx) {
    const div_data_t *d = (const div_data_t *)node->user_data;
    eb_eval(&d->bc, &d->p, d->type, &div_rows, edge_in(ctx, node, 0)->data, edge_in(ctx, node, 1)->data,
            edge_out(ctx, node, 0)->data);
}
