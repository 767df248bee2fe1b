/* AVERAGE_POOL_2D and MAX_POOL_2D over NHWC windows, as TFLM's reference pooling kernels (and
 * edge_sdk/runtime/kernels/pooling.py):
 *  - only the window cells inside the input count (padding is ignored, never read as a value);
 *  - quantized (int8, int16) pools work on the stored integers (input and output must share scale and
 *    zero point): the average is the int32 window sum divided by the cell count, halves rounded away from
 *    zero ((sum +- count/2) / count with C's truncating division); the max starts from the type's lowest;
 *  - float32: the sum in the reference's order (fy, fx) divided by the count; the max from -inf;
 *  - then the fused activation's clamp.
 * Prepare refuses windows that lie entirely in the padding (the reference reports an error for them).
 * The float32 and int16 paths are compiled in only with EDGE_WITH_FLOAT32 / EDGE_WITH_INT16.
 * Refusal reasons leave the op's name to the error message's node prefix
 * ("node 3 (AVERAGE_POOL_2D code 1 v1): ...").
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_conv.h"
#include "../edge_fixedpoint.h"
#include "../simd/edge_simd.h"
#include "../edge_dsp.h"

EDGE_KERNEL(AVERAGE_POOL_2D, average_pool_2d, 3, "FLOAT32 INT8 INT16", "NHWC 4-D")
EDGE_KERNEL(MAX_POOL_2D, max_pool_2d, 3, "FLOAT32 INT8 INT16", "NHWC 4-D")

typedef struct {
    int32_t type;               /* EDGE_FLOAT32 / EDGE_INT8 / EDGE_INT16 */
    edge_conv_geom_t geo;       /* input h x w, output oh x ow, padding before (top, left); geo.fast: int8 /
                                 * float32 on a 64-bit Linux CPU with a fast path: its level (0: none) */
    int32_t n, c, fh, fw, sh, sw;
    int32_t lo, hi;
    float flo, fhi;
    int32_t scratch;            /* c int32 (or float) accumulators */
} pool_data_t;

/* Window cells [*lo, *hi) inside the input for an origin along one axis. */
static inline void pool_range(int32_t origin, int32_t size, int32_t k, int32_t *lo, int32_t *hi) {
    int32_t a = origin < 0 ? -origin : 0;
    int32_t b = size - origin < k ? size - origin : k;
    *lo = a;
    *hi = b > a ? b : a;
}

/* Pool2DOptions: 0 padding, 1 stride_w, 2 stride_h, 3 filter_width, 4 filter_height, 5 fused_activation. */
static edge_status_t pool_prepare(edge_node_t *node, edge_ctx_t *ctx, int average) {
    const int has_opts = node->options_type == EDGE_OPTS_Pool2DOptions;
    const int32_t padding = has_opts ? edge_opt_int(node, 0, 1, 0) : EDGE_PAD_SAME;
    const int32_t sw = has_opts ? edge_opt_int(node, 1, 4, 0) : 1;
    const int32_t sh = has_opts ? edge_opt_int(node, 2, 4, 0) : 1;
    const int32_t fw = has_opts ? edge_opt_int(node, 3, 4, 0) : 1;
    const int32_t fh = has_opts ? edge_opt_int(node, 4, 4, 0) : 1;
    const int32_t act = has_opts ? edge_opt_int(node, 5, 1, 0) : 0;
    const edge_conv_opts_t window = {padding, sw, sh, act, 1, 1};
    edge_tensor_t *in, *out;
    pool_data_t *d;
    int32_t shape[4], k, lo, hi;
    edge_status_t s;

    if (node->n_inputs != 1 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    in = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!in) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (in->type != EDGE_FLOAT32 && in->type != EDGE_INT8 && in->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8 and INT16");
    if ((s = edge_type_built(ctx, in->type)) != EDGE_OK) return s;
    if (out->type != in->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input");
    if (in->rank != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be 4-D");
    if (act < 0 || act > EDGE_ACT_RELU6) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "fused activation");

    d = (pool_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->type = in->type;
    d->n = in->dims[0];
    d->geo.h = in->dims[1];
    d->geo.w = in->dims[2];
    d->c = in->dims[3];
    d->fh = fh;
    d->fw = fw;
    d->sh = sh;
    d->sw = sw;
    if (d->n < 0 || d->c <= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input shape");
    if (edge_conv_geom_fold_pad(ctx, node, &window, fh, fw, &d->geo))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "padding, strides or filter size do not fit the input");
    if (average) {
        for (k = 0; k < d->geo.oh; k++) {
            pool_range(k * sh - d->geo.pt, d->geo.h, fh, &lo, &hi);
            if (hi <= lo) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "a window lies entirely in the padding");
        }
        for (k = 0; k < d->geo.ow; k++) {
            pool_range(k * sw - d->geo.pl, d->geo.w, fw, &lo, &hi);
            if (hi <= lo) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "a window lies entirely in the padding");
        }
    }
    shape[0] = d->n;
    shape[1] = d->geo.oh;
    shape[2] = d->geo.ow;
    shape[3] = d->c;
    s = edge_set_output_shape(ctx, node, 0, shape, 4);
    if (s != EDGE_OK) return s;

    if (EDGE_WITH_FLOAT32 && in->type == EDGE_FLOAT32) {
        edge_activation_range_float(act, &d->flo, &d->fhi);
    } else {
        float ds;
        if (!in->quantized || !out->quantized)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "quantized pooling needs scale and zero point");
        ds = in->scale - out->scale;
        if ((ds < 0 ? -ds : ds) > 1e-6f || in->zero_point != out->zero_point)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and output quantization must match");
        if (edge_activation_range(act, in->type == EDGE_INT8 ? -128 : -32768, in->type == EDGE_INT8 ? 127 : 32767,
                                  out->scale, out->zero_point, &d->lo, &d->hi) != 0)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "fused activation");
    }
#if EDGE_SIMD
    d->geo.fast = in->type == EDGE_INT8 || in->type == EDGE_FLOAT32 ? edge_simd_level() : 0;
    if (d->geo.fast && (in->type == EDGE_INT8 ? !edge_simd_pool_q8(d->geo.fast, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                                          : !edge_simd_pool_f32(d->geo.fast, 0, NULL, 0, 0, 0, 0, 0.0f, 0.0f, NULL)))
        d->geo.fast = 0; /* has the level it? */
#endif
    return edge_request_scratch(ctx, node, sizeof(int32_t) * (size_t)d->c, &d->scratch);
}

edge_status_t edge_prepare_average_pool_2d(edge_node_t *node, edge_ctx_t *ctx) { return pool_prepare(node, ctx, 1); }
edge_status_t edge_prepare_max_pool_2d(edge_node_t *node, edge_ctx_t *ctx) { return pool_prepare(node, ctx, 0); }

/* One quantized pool; T the element type. Channels run innermost (contiguous). */
#define POOL_INT_BODY(T)                                                                                     \
    do {                                                                                                     \
        const T *x = (const T *)xv;                                                                          \
        T *y = (T *)yv;                                                                                      \
        for (b = 0; b < d->n; b++) {                                                                         \
            for (oy = 0; oy < d->geo.oh; oy++) {                                                                 \
                const int32_t iy0 = oy * d->sh - d->geo.pt;                                                      \
                pool_range(iy0, d->geo.h, d->fh, &fy0, &fy1);                                                    \
                for (ox = 0; ox < d->geo.ow; ox++) {                                                             \
                    const int32_t ix0 = ox * d->sw - d->geo.pl;                                                  \
                    T *yp = y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * c;                                \
                    int32_t count, half;                                                                     \
                    pool_range(ix0, d->geo.w, d->fw, &fx0, &fx1);                                                \
                    count = (fy1 - fy0) * (fx1 - fx0);                                                       \
                    half = count / 2;                                                                        \
                    for (i = 0; i < c; i++) acc[i] = average ? 0 : lowest;                                   \
                    for (fy = fy0; fy < fy1; fy++) {                                                         \
                        for (fx = fx0; fx < fx1; fx++) {                                                     \
                            const T *xp = x + (((int64_t)b * d->geo.h + iy0 + fy) * d->geo.w + ix0 + fx) * c;        \
                            if (average) {                                                                   \
                                for (i = 0; i < c; i++) acc[i] += xp[i];                                     \
                            } else {                                                                         \
                                for (i = 0; i < c; i++) acc[i] = xp[i] > acc[i] ? xp[i] : acc[i];            \
                            }                                                                                \
                        }                                                                                    \
                    }                                                                                        \
                    for (i = 0; i < c; i++) {                                                                \
                        int32_t v = acc[i];                                                                  \
                        if (average) v = v > 0 ? (v + half) / count : (v - half) / count;                    \
                        yp[i] = (T)edge_clamp32(v, d->lo, d->hi);                                            \
                    }                                                                                        \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
    } while (0)

static void pool_int(const pool_data_t *d, const void *xv, void *yv, int32_t *acc, int average) {
    const int32_t c = d->c;
    const int32_t lowest = d->type == EDGE_INT8 ? -128 : -32768;
    int32_t b, oy, ox, fy, fx, i, fy0, fy1, fx0, fx1;
    if (!EDGE_WITH_INT16 || d->type == EDGE_INT8) POOL_INT_BODY(int8_t);
    else POOL_INT_BODY(int16_t);
}

static void pool_float(const pool_data_t *d, const float *x, float *y, float *acc, int average) {
    const int32_t c = d->c;
    int32_t b, oy, ox, fy, fx, i, fy0, fy1, fx0, fx1;
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->geo.oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            pool_range(iy0, d->geo.h, d->fh, &fy0, &fy1);
            for (ox = 0; ox < d->geo.ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl;
                float *yp = y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * c;
                float count;
                pool_range(ix0, d->geo.w, d->fw, &fx0, &fx1);
                count = (float)((fy1 - fy0) * (fx1 - fx0));
                for (i = 0; i < c; i++) acc[i] = average ? 0.0f : -3.40282347e+38f; /* float lowest, as the reference */
                for (fy = fy0; fy < fy1; fy++) {
                    for (fx = fx0; fx < fx1; fx++) {
                        const float *xp = x + (((int64_t)b * d->geo.h + iy0 + fy) * d->geo.w + ix0 + fx) * c;
                        if (average) {
                            for (i = 0; i < c; i++) acc[i] += xp[i];
                        } else {
                            for (i = 0; i < c; i++) acc[i] = xp[i] > acc[i] ? xp[i] : acc[i];
                        }
                    }
                }
                for (i = 0; i < c; i++) {
                    float v = average ? acc[i] / count : acc[i];
                    yp[i] = v < d->flo ? d->flo : (v > d->fhi ? d->fhi : v);
                }
            }
        }
    }
}

#if EDGE_SIMD
/* int8 on a fast path: each output pixel's window (its cells inside the input) to edge_simd_pool_q8. */
static void pool_int8_simd(const pool_data_t *d, const int8_t *x, int8_t *y, int32_t *acc, int average) {
    const int32_t c = d->c;
    int32_t b, oy, ox, fy0, fy1, fx0, fx1;
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->geo.oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            pool_range(iy0, d->geo.h, d->fh, &fy0, &fy1);
            for (ox = 0; ox < d->geo.ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl;
                pool_range(ix0, d->geo.w, d->fw, &fx0, &fx1);
                (void)edge_simd_pool_q8(d->geo.fast, average,
                                        x + (((int64_t)b * d->geo.h + iy0 + fy0) * d->geo.w + ix0 + fx0) * c,
                                        (int64_t)d->geo.w * c, fy1 - fy0, fx1 - fx0, c, d->lo, d->hi, acc,
                                        y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * c);
            }
        }
    }
}

/* float32 on a fast path: each output pixel's window to edge_simd_pool_f32 (pool_float's sum order: the same bits). */
static void pool_float_simd(const pool_data_t *d, const float *x, float *y, int average) {
    const int32_t c = d->c;
    int32_t b, oy, ox, fy0, fy1, fx0, fx1;
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->geo.oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            pool_range(iy0, d->geo.h, d->fh, &fy0, &fy1);
            for (ox = 0; ox < d->geo.ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl;
                pool_range(ix0, d->geo.w, d->fw, &fx0, &fx1);
                (void)edge_simd_pool_f32(d->geo.fast, average,
                                         x + (((int64_t)b * d->geo.h + iy0 + fy0) * d->geo.w + ix0 + fx0) * c,
                                         (int64_t)d->geo.w * c, fy1 - fy0, fx1 - fx0, c, d->flo, d->fhi,
                                         y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * c);
            }
        }
    }
}
#endif

/* EDGE_WITH_POOL_DSP=0 (gen_ops.py path_defines: a firmware whose int8 pools are all small) compiles the DSP pools
 * (pool_int8_dsp: ~560 B on the M4) out; those pools run pool_int. */
#ifndef EDGE_WITH_POOL_DSP
#define EDGE_WITH_POOL_DSP 1
#endif
#define POOL_DSP (EDGE_DSP && EDGE_WITH_POOL_DSP)

#if POOL_DSP
/* The largest window the int8 DSP average takes: its sums kept as int16 halves, |sum| <= 255 * 128 < 2^15. */
#define POOL_DSP_MAX_CELLS 255

/* int8 on a DSP core (Cortex-M4/M7), four channels a word, each word's window read before its output is written
 * (as pool_int: the same in-place safety). MAX: the lanes' maxima through SSUB8 + SEL (edge_smax8), the fused
 * activation's clamp the same way, one word stored; AVERAGE: the even and odd lanes summed as int16 halves
 * (SXTAB16, two a word), then each channel's rounded division (halves away from zero, as pool_int). The c % 4
 * last channels one at a time. y [n, oh, ow, c] from x [n, h, w, c]. */
static void pool_int8_dsp(const pool_data_t *d, const int8_t *x, int8_t *y, int average) {
    const int32_t c = d->c, c4 = c & ~3;
    const int32_t lo = d->lo, hi = d->hi;
    const uint32_t lo4 = (uint32_t)(uint8_t)lo * 0x01010101u, hi4 = (uint32_t)(uint8_t)hi * 0x01010101u;
    const int clamp = lo > -128 || hi < 127;
    int32_t b, oy, ox, i, fy, fx, fy0, fy1, fx0, fx1;
    for (b = 0; b < d->n; b++) {
        for (oy = 0; oy < d->geo.oh; oy++) {
            const int32_t iy0 = oy * d->sh - d->geo.pt;
            pool_range(iy0, d->geo.h, d->fh, &fy0, &fy1);
            for (ox = 0; ox < d->geo.ow; ox++) {
                const int32_t ix0 = ox * d->sw - d->geo.pl;
                int8_t *yp = y + (((int64_t)b * d->geo.oh + oy) * d->geo.ow + ox) * c;
                const int8_t *x0;
                int32_t rows, cols, skip, count, half;
                pool_range(ix0, d->geo.w, d->fw, &fx0, &fx1);
                rows = fy1 - fy0;
                cols = fx1 - fx0;
                skip = (d->geo.w - cols) * c; /* from a window row's end to the next row's start */
                count = rows * cols;
                half = count / 2;
                x0 = x + (((int64_t)b * d->geo.h + iy0 + fy0) * d->geo.w + ix0 + fx0) * c;
                for (i = 0; i < c4; i += 4) {
                    const int8_t *p = x0 + i;
                    if (!average) {
                        uint32_t m = 0x80808080u;
                        for (fy = 0; fy < rows; fy++, p += skip)
                            for (fx = 0; fx < cols; fx++, p += c) m = edge_smax8(m, edge_get32(p));
                        if (clamp) m = edge_smin8(edge_smax8(m, lo4), hi4);
                        edge_put32(yp + i, m);
                    } else {
                        uint32_t even = 0, odd = 0; /* lanes 0, 2 / 1, 3 as int16 halves */
                        int32_t k, sum[4];
                        for (fy = 0; fy < rows; fy++, p += skip)
                            for (fx = 0; fx < cols; fx++, p += c) {
                                const uint32_t v = edge_get32(p);
                                even = edge_sxtab16(even, v);
                                odd = edge_sxtab16_ror8(odd, v);
                            }
                        sum[0] = (int16_t)even;
                        sum[1] = (int16_t)odd;
                        sum[2] = (int32_t)even >> 16;
                        sum[3] = (int32_t)odd >> 16;
                        for (k = 0; k < 4; k++) {
                            const int32_t v = sum[k] > 0 ? (sum[k] + half) / count : (sum[k] - half) / count;
                            yp[i + k] = (int8_t)(v < lo ? lo : (v > hi ? hi : v));
                        }
                    }
                }
                for (; i < c; i++) {
                    const int8_t *p = x0 + i;
                    int32_t v = average ? 0 : -128;
                    for (fy = 0; fy < rows; fy++, p += skip)
                        for (fx = 0; fx < cols; fx++, p += c) v = average ? v + *p : (*p > v ? *p : v);
                    if (average) v = v > 0 ? (v + half) / count : (v - half) / count;
                    yp[i] = (int8_t)(v < lo ? lo : (v > hi ? hi : v));
                }
            }
        }
    }
}
#endif

static void pool_eval(const edge_node_t *node, edge_ctx_t *ctx, int average) {
    const pool_data_t *d = (const pool_data_t *)node->user_data;
    pool_data_t patch; /* a patch window (edge_window_t) */
    if (EDGE_WITH_PATCH && ctx->window) {
        patch = *d;
        edge_window_apply(&patch.geo, ctx->window);
        d = &patch;
    }
    const edge_tensor_t *in = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    void *scratch = edge_scratch(ctx, node, d->scratch);
#if EDGE_SIMD
    if (d->geo.fast && d->type == EDGE_INT8) {
        pool_int8_simd(d, (const int8_t *)in->data, (int8_t *)out->data, (int32_t *)scratch, average);
        return;
    }
    if (EDGE_WITH_FLOAT32 && d->geo.fast && d->type == EDGE_FLOAT32) {
        pool_float_simd(d, (const float *)in->data, (float *)out->data, average);
        return;
    }
#endif
#if POOL_DSP
    if (d->type == EDGE_INT8 && (!average || d->fh * d->fw <= POOL_DSP_MAX_CELLS)) {
        pool_int8_dsp(d, (const int8_t *)in->data, (int8_t *)out->data, average);
        return;
    }
#endif
    if (EDGE_WITH_FLOAT32 && d->type == EDGE_FLOAT32) pool_float(d, (const float *)in->data, (float *)out->data, (float *)scratch, average);
    else pool_int(d, in->data, out->data, (int32_t *)scratch, average);
}

void edge_eval_average_pool_2d(const edge_node_t *node, edge_ctx_t *ctx) { pool_eval(node, ctx, 1); }
void edge_eval_max_pool_2d(const edge_node_t *node, edge_ctx_t *ctx) { pool_eval(node, ctx, 0); }
