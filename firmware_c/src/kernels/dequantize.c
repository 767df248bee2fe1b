/* DEQUANTIZE: int8 / uint8 / int16 -> float32 (per tensor or per channel), and float16 -> float32.
 *
 * As edge_sdk/runtime/kernels/quantize.py prepare_dequantize: per tensor, scale * (q - zero_point) rounded once to
 * float32 (the Python kernel forms it in double; when |zero_point| < 2^23 the float32 product of the exact
 * operands rounds to the same value, which keeps Cortex-M off software double); per channel along
 * quantized_dimension, float32 scale times the difference converted to float32 (LiteRT's
 * PerChannelDequantize); float16 widens exactly.
 *
 * A DEQUANTIZE of a constant (MediaPipe's float16 weights, weights stored int8) runs once, at prepare, into
 * persistent bytes counted with the packed weight copies; its output is a constant from then on (edge_fold_outputs:
 * out of the tensor plan, CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED pack it once as they pack any weights) and
 * eval does nothing. The plan decision and its rule are edge_sdk/runtime/planner.py's folded_constants: the input a
 * dense constant, the output no subgraph output, a host build (EDGE_SIMD: its fast paths pack weights; a
 * microcontroller keeps widening per invoke into the arena, whose bytes later layers reuse, instead of holding
 * every float32 weight at once: palm_detection_lite would outgrow the QEMU board's RAM).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(DEQUANTIZE, dequantize, 9, "INT8 INT16 UINT8 FLOAT16", "FLOAT32 output")

typedef struct {
    int32_t type, per_channel, exact_float;
    float scale;
    int32_t zero_point;
    int32_t folded;                 /* computed at prepare (a constant input): eval has nothing to do */
    int32_t outer, channels, inner; /* per channel: the shape around quantized_dimension */
    float *scales;                  /* per channel (persistent copies) */
    int32_t *zero_points;
#if EDGE_SIMD
    int32_t simd;                   /* a 64-bit Linux CPU's SIMD level (0: the portable loops): float16, and per tensor
                                     * on x86-64 the AVX2 loop */
#endif
} dequantize_data_t;

static float half_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu, bits;
    float f;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13); /* inf / NaN */
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else { /* subnormal half: normalize */
        exponent = 113;
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            exponent--;
        }
        bits = sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

static void dequantize_run(const dequantize_data_t *d, const edge_tensor_t *x, float *y, int64_t n);

static edge_status_t prepare_params(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *out;
    dequantize_data_t *d;
    edge_status_t s;
    int32_t k;

    if (node->n_inputs != 1 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEQUANTIZE expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEQUANTIZE: input is required");
    s = edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
    if (s != EDGE_OK) return s;
    if (out->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "DEQUANTIZE: output must be FLOAT32");
    if ((s = edge_type_built(ctx, out->type)) != EDGE_OK || (s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    d = (dequantize_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->type = x->type;
    if (x->type == EDGE_FLOAT16) {
#if EDGE_SIMD
        d->simd = edge_simd_level();
#endif
        return EDGE_OK;
    }
    if (x->type != EDGE_INT8 && x->type != EDGE_INT16 && x->type != EDGE_UINT8)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "DEQUANTIZE: input must be INT8, INT16, UINT8 or FLOAT16");
    if (!x->quantized) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEQUANTIZE: input needs quantization parameters");
    if (x->n_scales == 1) {
        d->scale = x->scale;
        d->zero_point = x->zero_point;
        d->exact_float = d->zero_point > -(1 << 23) && d->zero_point < (1 << 23);
#if EDGE_SIMD
        d->simd = edge_simd_level();
#endif
        return EDGE_OK;
    }
    {
        const int32_t axis = x->quantized_dimension;
        if (axis < 0 || axis >= x->rank || x->dims[axis] != x->n_scales)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "DEQUANTIZE: per-channel quantization does not match the shape");
        d->per_channel = 1;
        d->outer = 1;
        d->inner = 1;
        for (k = 0; k < axis; k++) d->outer *= x->dims[k];
        for (k = axis + 1; k < x->rank; k++) d->inner *= x->dims[k];
        d->channels = x->n_scales;
        d->scales = (float *)edge_alloc_persistent(ctx, sizeof(float) * (size_t)d->channels);
        d->zero_points = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)d->channels);
        if (!d->scales || !d->zero_points) return EDGE_ARENA_TOO_SMALL;
        for (k = 0; k < d->channels; k++) {
            memcpy(&d->scales[k], &x->scales[k], 4);
            d->zero_points[k] = edge_tensor_zero_point(x, k);
        }
    }
    return EDGE_OK;
}

edge_status_t edge_prepare_dequantize(edge_node_t *node, edge_ctx_t *ctx) {
    edge_status_t s = prepare_params(node, ctx);
    dequantize_data_t *d = (dequantize_data_t *)node->user_data;
    edge_tensor_t *x, *out;
    float *y;
    int64_t n;
    if (s != EDGE_OK || !EDGE_WITH_FLOAT32) return s;
    x = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
#if EDGE_SIMD
    if (!edge_folds_at_prepare(ctx, node)) return EDGE_OK;
#else
    return EDGE_OK; /* a microcontroller widens per invoke into its arena */
#endif
    n = edge_tensor_elements(out);
    y = (float *)edge_alloc_packed(ctx, sizeof(float) * (size_t)(n ? n : 1));
    if (!y) return EDGE_ARENA_TOO_SMALL;
    dequantize_run(d, x, y, n);
    out->data = y;
    d->folded = 1;
    edge_fold_outputs(node, ctx);
    return EDGE_OK;
}

static int32_t load(int type, const void *x, int64_t i) {
    return type == EDGE_INT8 ? ((const int8_t *)x)[i] : type == EDGE_UINT8 ? ((const uint8_t *)x)[i] : ((const int16_t *)x)[i];
}

void edge_eval_dequantize(const edge_node_t *node, edge_ctx_t *ctx) {
    const dequantize_data_t *d = (const dequantize_data_t *)node->user_data;
    edge_tensor_t *out = edge_out(ctx, node, 0);
    if (!EDGE_WITH_FLOAT32 || d->folded) return; /* refused at prepare / computed there */
    dequantize_run(d, edge_in(ctx, node, 0), (float *)out->data, edge_tensor_elements(out));
}

/* Elements per block of the per-tensor loop: a whole number of vectors of the narrowest type (32 int8: one AVX2
 * register), a fixed count gcc -O2 vectorizes (it leaves a loop with a scalar remainder scalar). */
#define DQ_BLOCK 32

/* dequantize_block_<T>: y[0..DQ_BLOCK) = sc * (x - zp), each product of exact float32 operands rounded once. */
#define DEQUANTIZE_BLOCK(T)                                                                                   \
    static inline __attribute__((always_inline)) void dequantize_block_##T(const T *restrict x, float sc,     \
                                                                           int32_t zp, float *restrict y) {   \
        int32_t j;                                                                                            \
        for (j = 0; j < DQ_BLOCK; j++) y[j] = sc * (float)(x[j] - zp);                                        \
    }
DEQUANTIZE_BLOCK(int8_t)
DEQUANTIZE_BLOCK(uint8_t)
DEQUANTIZE_BLOCK(int16_t)

#define DEQUANTIZE_BLOCKS(T)                                                                                  \
    do {                                                                                                      \
        const T *xt = (const T *)x;                                                                           \
        for (i = 0; i + DQ_BLOCK <= n; i += DQ_BLOCK) dequantize_block_##T(xt + i, sc, zp, y + i);           \
        for (; i < n; i++) y[i] = sc * (float)(xt[i] - zp);                                                   \
    } while (0)

/* y[0..n) = x dequantized per tensor, |zero_point| < 2^23 (d->exact_float). Always inlined: the AVX2 copy below
 * is this code compiled for AVX2. */
static inline __attribute__((always_inline)) void dequantize_tensor_run(const dequantize_data_t *d, const void *x,
                                                                        float *y, int64_t n) {
    const float sc = d->scale;
    const int32_t zp = d->zero_point;
    int64_t i;
#ifdef __OPTIMIZE_SIZE__
    /* -Os (microcontrollers): the int8 loop and one for the others */
    if (d->type == EDGE_INT8)
        for (i = 0; i < n; i++) y[i] = sc * (float)(((const int8_t *)x)[i] - zp);
    else
        for (i = 0; i < n; i++) y[i] = sc * (float)(load(d->type, x, i) - zp);
#else
    switch (d->type) {
    case EDGE_INT8: DEQUANTIZE_BLOCKS(int8_t); break;
    case EDGE_UINT8: DEQUANTIZE_BLOCKS(uint8_t); break;
    default: DEQUANTIZE_BLOCKS(int16_t); break;
    }
#endif
}

static void dequantize_tensor(const dequantize_data_t *d, const void *x, float *y, int64_t n) {
    dequantize_tensor_run(d, x, y, n);
}

#if EDGE_SIMD && defined(__x86_64__)
/* The same loop on 8 lanes (AVX2: every x86-64 SIMD level has it). */
__attribute__((target("avx2"))) static void dequantize_tensor_avx2(const dequantize_data_t *d, const void *x,
                                                                   float *y, int64_t n) {
    dequantize_tensor_run(d, x, y, n);
}
#endif

/* y[0..n) = x dequantized, as prepare decided (d) */
static void dequantize_run(const dequantize_data_t *d, const edge_tensor_t *x, float *y, int64_t n) {
    int64_t i;
    if (d->type == EDGE_FLOAT16) {
        const uint16_t *h = (const uint16_t *)x->data;
#if EDGE_SIMD
        if (d->simd && edge_simd_f16_f32(d->simd, h, y, n)) return;
#endif
        for (i = 0; i < n; i++) y[i] = half_to_float(h[i]);
    } else if (d->per_channel) {
        int32_t o, c, k;
        i = 0;
        for (o = 0; o < d->outer; o++)
            for (c = 0; c < d->channels; c++) {
                const float sc = d->scales[c];
                const int64_t zp = d->zero_points[c];
                for (k = 0; k < d->inner; k++, i++) y[i] = sc * (float)((int64_t)load(d->type, x->data, i) - zp);
            }
    } else if (d->exact_float) {
#if EDGE_SIMD && defined(__x86_64__)
        if (d->simd) {
            dequantize_tensor_avx2(d, x->data, y, n);
            return;
        }
#endif
        dequantize_tensor(d, x->data, y, n);
    } else {
        const double sc = (double)d->scale;
        for (i = 0; i < n; i++) y[i] = (float)(sc * (double)((int64_t)load(d->type, x->data, i) - d->zero_point));
    }
}
