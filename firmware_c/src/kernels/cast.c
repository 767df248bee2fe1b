/* CAST: element-wise type conversion.
 *
 * As edge_sdk/runtime/kernels/quantize.py prepare_cast, for INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64,
 * FLOAT16, FLOAT32, FLOAT64 and BOOL: to BOOL, x != 0; integer to integer wraps to the output's
 * width (numpy astype); integer to float is one C conversion from the source type (correctly rounded, as
 * numpy); float to integer truncates toward zero and saturates, NaN (either sign) gives the type's maximum, as
 * LiteRT 2.3's cast.cc measured (TFLM's gives 0; UINT64, which LiteRT refuses, follows the same rule); float to
 * float converts. BOOL reads as 0 / 1. FLOAT16 widens exactly; to FLOAT16 is one rounding
 * (to nearest, ties to even, past 65504 to infinity, NaN keeping its top payload bits) from the double of the
 * source value, as numpy's double-to-half (an integer's double is exact below 2^53, far beyond half's range;
 * a float32's is exact, so this is also numpy's float-to-half).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_half.h"

EDGE_KERNEL(CAST, cast, 9, "INT8 UINT8 INT16 UINT16 INT32 UINT32 INT64 UINT64 FLOAT16 FLOAT32 FLOAT64 BOOL", "output: one of the same types")

typedef struct {
    int32_t src, dst;
} cast_data_t;

static int cast_type_ok(int t) {
    return t == EDGE_INT8 || t == EDGE_UINT8 || t == EDGE_INT16 || t == EDGE_UINT16 || t == EDGE_INT32 ||
           t == EDGE_UINT32 || t == EDGE_INT64 || t == EDGE_UINT64 || t == EDGE_FLOAT16 || t == EDGE_FLOAT32 ||
           t == EDGE_FLOAT64 || t == EDGE_BOOL;
}

static int cast_is_float(int t) { return t == EDGE_FLOAT16 || t == EDGE_FLOAT32 || t == EDGE_FLOAT64; }

/* float32 bits widened to float64's by hand (exact; a NaN's payload kept, where the FPU would quiet it) */
static uint64_t float_bits_to_double_bits(uint32_t f) {
    const uint64_t sign = (uint64_t)(f >> 31) << 63;
    uint32_t exponent = (f >> 23) & 0xFFu, mantissa = f & 0x7FFFFFu;
    if (exponent == 0xFF) return sign | ((uint64_t)0x7FF << 52) | ((uint64_t)mantissa << 29);
    if (exponent != 0) return sign | ((uint64_t)(exponent + 896u) << 52) | ((uint64_t)mantissa << 29);
    if (mantissa == 0) return sign;
    exponent = 897; /* subnormal float: normalize */
    while (!(mantissa & 0x800000u)) {
        mantissa <<= 1;
        exponent--;
    }
    return sign | ((uint64_t)exponent << 52) | ((uint64_t)(mantissa & 0x7FFFFFu) << 29);
}

static double bits_to_double(uint64_t b) {
    double v;
    memcpy(&v, &b, 8);
    return v;
}

/* element k of a float tensor as float64 bits, exact (payloads kept) */
static uint64_t load_float_bits(const uint8_t *p, int type, int64_t k) {
    if (type == EDGE_FLOAT16) {
        uint16_t h;
        memcpy(&h, p + 2 * k, 2);
        return float_bits_to_double_bits(half_to_float_bits(h));
    } else if (type == EDGE_FLOAT32) {
        uint32_t f;
        memcpy(&f, p + 4 * k, 4);
        return float_bits_to_double_bits(f);
    } else {
        uint64_t v;
        memcpy(&v, p + 8 * k, 8);
        return v;
    }
}

edge_status_t edge_prepare_cast(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    cast_data_t *d;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CAST expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CAST: input is required");
    if (!cast_type_ok(x->type) || !cast_type_ok(out->type))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "CAST: C kernel converts between integer, FLOAT16, FLOAT32, FLOAT64, BOOL");
    if (edge_type_built(ctx, x->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (edge_type_built(ctx, out->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    d = (cast_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->src = x->type;
    d->dst = out->type;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

/* element k of an integer / bool tensor as its two's complement bits, sign-extended from signed types */
static uint64_t load_bits(const uint8_t *p, int type, int64_t k) {
    switch (type) {
    case EDGE_INT8: return (uint64_t)(int64_t)((const int8_t *)p)[k];
    case EDGE_UINT8: case EDGE_BOOL: return p[k];
    case EDGE_INT16: { int16_t v; memcpy(&v, p + 2 * k, 2); return (uint64_t)(int64_t)v; }
    case EDGE_UINT16: { uint16_t v; memcpy(&v, p + 2 * k, 2); return v; }
    case EDGE_INT32: { int32_t v; memcpy(&v, p + 4 * k, 4); return (uint64_t)(int64_t)v; }
    case EDGE_UINT32: { uint32_t v; memcpy(&v, p + 4 * k, 4); return v; }
    default: { uint64_t v; memcpy(&v, p + 8 * k, 8); return v; }
    }
}

static double load_float(const uint8_t *p, int type, int64_t k) {
    if (type == EDGE_FLOAT16) {
        return bits_to_double(load_float_bits(p, type, k));
    } else if (type == EDGE_FLOAT32) {
        float v;
        memcpy(&v, p + 4 * k, 4);
        return v;
    } else {
        double v;
        memcpy(&v, p + 8 * k, 8);
        return v;
    }
}

static void store_bits(uint8_t *p, int type, int64_t k, uint64_t v) {
    uint8_t b = (uint8_t)v;
    uint16_t h = (uint16_t)v;
    uint32_t w = (uint32_t)v;
    switch (edge_type_bytes(type)) {
    case 1: p[k] = b; break;
    case 2: memcpy(p + 2 * k, &h, 2); break;
    case 4: memcpy(p + 4 * k, &w, 4); break;
    default: memcpy(p + 8 * k, &v, 8); break;
    }
}

/* float -> integer: truncate, saturate to the type's range, NaN -> the type's maximum; the result as bits */
static uint64_t float_to_bits(double v, int type) {
    double lo, hi;
    if (v != v) v = 18446744073709551616.0; /* NaN saturates high, as LiteRT */
    switch (type) {
    case EDGE_INT8: lo = -128.0; hi = 127.0; break;
    case EDGE_UINT8: lo = 0.0; hi = 255.0; break;
    case EDGE_INT16: lo = -32768.0; hi = 32767.0; break;
    case EDGE_UINT16: lo = 0.0; hi = 65535.0; break;
    case EDGE_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
    case EDGE_UINT32: lo = 0.0; hi = 4294967295.0; break;
    case EDGE_UINT64:
        if (v <= 0.0) return 0;
        if (v >= 18446744073709551616.0) return ~(uint64_t)0;
        return (uint64_t)v;
    default: /* INT64 */
        if (v <= -9223372036854775808.0) return (uint64_t)1 << 63;
        if (v >= 9223372036854775808.0) return ((uint64_t)1 << 63) - 1;
        return (uint64_t)(int64_t)v;
    }
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return (uint64_t)(int64_t)v; /* conversion truncates toward zero */
}

/* Integer (or BOOL) to integer: the same bits when the widths agree, else sign/zero-extended or wrapped to the
 * output's width, as store_bits(load_bits(...)) but with the type switches outside the element loops (blocks
 * of 64 through a uint64 buffer), so a cast costs about a copy. */
#define CAST_LOAD(T, WIDE)                                                                                    \
    for (k = 0; k < m; k++) {                                                                                  \
        T v;                                                                                                   \
        memcpy(&v, x + sizeof(T) * (size_t)(base + k), sizeof(T));                                             \
        buf[k] = (uint64_t)(WIDE)v;                                                                            \
    }
#define CAST_STORE(T)                                                                                         \
    for (k = 0; k < m; k++) {                                                                                  \
        const T v = (T)buf[k];                                                                                 \
        memcpy(y + sizeof(T) * (size_t)(base + k), &v, sizeof(T));                                             \
    }

static void cast_integers(const uint8_t *x, int src, uint8_t *y, int dst, int64_t n) {
    uint64_t buf[64];
    int64_t base, k, m;
    if (edge_type_bytes(src) == edge_type_bytes(dst)) {
        memmove(y, x, (size_t)n * edge_type_bytes(src));
        return;
    }
    for (base = 0; base < n; base += m) {
        m = n - base < 64 ? n - base : 64;
        switch (src) {
        case EDGE_INT8: CAST_LOAD(int8_t, int64_t) break;
        case EDGE_UINT8: case EDGE_BOOL: CAST_LOAD(uint8_t, uint64_t) break;
        case EDGE_INT16: CAST_LOAD(int16_t, int64_t) break;
        case EDGE_UINT16: CAST_LOAD(uint16_t, uint64_t) break;
        case EDGE_INT32: CAST_LOAD(int32_t, int64_t) break;
        case EDGE_UINT32: CAST_LOAD(uint32_t, uint64_t) break;
        default: CAST_LOAD(uint64_t, uint64_t) break;
        }
        switch (edge_type_bytes(dst)) {
        case 1: CAST_STORE(uint8_t) break;
        case 2: CAST_STORE(uint16_t) break;
        case 4: CAST_STORE(uint32_t) break;
        default: CAST_STORE(uint64_t) break;
        }
    }
}

void edge_eval_cast(const edge_node_t *node, edge_ctx_t *ctx) {
    const cast_data_t *d = (const cast_data_t *)node->user_data;
    const uint8_t *x = (const uint8_t *)edge_in(ctx, node, 0)->data;
    edge_tensor_t *out = edge_out(ctx, node, 0);
    uint8_t *y = (uint8_t *)out->data;
    const int64_t n = edge_tensor_elements(out);
    const int src_float = cast_is_float(d->src), src_unsigned = d->src == EDGE_UINT64;
    int64_t k;
    if (!src_float && !cast_is_float(d->dst) && d->dst != EDGE_BOOL) {
        cast_integers(x, d->src, y, d->dst, n);
        return;
    }
    if (d->src == d->dst) { /* a float type to itself: the same bits */
        memmove(y, x, (size_t)n * edge_type_bytes(d->src));
        return;
    }
    if (d->src == EDGE_FLOAT16 && d->dst == EDGE_FLOAT32) { /* half widens by its bits (payloads kept) */
        for (k = 0; k < n; k++) {
            uint16_t h;
            uint32_t f;
            memcpy(&h, x + 2 * k, 2);
            f = half_to_float_bits(h);
            memcpy(y + 4 * k, &f, 4);
        }
        return;
    }
    for (k = 0; k < n; k++) {
        if (d->dst == EDGE_BOOL) {
            y[k] = src_float ? load_float(x, d->src, k) != 0.0 : load_bits(x, d->src, k) != 0;
        } else if (d->dst == EDGE_FLOAT32) {
            float f;
            if (src_float) f = (float)load_float(x, d->src, k);
            else if (src_unsigned) f = (float)load_bits(x, d->src, k);
            else f = (float)(int64_t)load_bits(x, d->src, k);
            memcpy(y + 4 * k, &f, 4);
        } else if (d->dst == EDGE_FLOAT16) {
            uint16_t h;
            if (src_float) h = double_bits_to_half(load_float_bits(x, d->src, k));
            else if (src_unsigned) h = double_to_half((double)load_bits(x, d->src, k));
            else h = double_to_half((double)(int64_t)load_bits(x, d->src, k));
            memcpy(y + 2 * k, &h, 2);
        } else if (d->dst == EDGE_FLOAT64) {
            double f;
            if (src_float) f = bits_to_double(load_float_bits(x, d->src, k));
            else if (src_unsigned) f = (double)load_bits(x, d->src, k);
            else f = (double)(int64_t)load_bits(x, d->src, k);
            memcpy(y + 8 * k, &f, 8);
        } else {
            store_bits(y, d->dst, k, src_float ? float_to_bits(load_float(x, d->src, k), d->dst) : load_bits(x, d->src, k));
        }
    }
}
