/* RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR on NHWC tensors, as edge_sdk/runtime/kernels/resize.py (TFLM's
 * resize_bilinear.cc / resize_nearest_neighbor.cc and the reference ResizeBilinear / ResizeBilinearInteger).
 *
 * Both are separable: prepare computes, per output row and per output column, the source indices (bilinear:
 * and the interpolation weights) into persistent op data; eval gathers with them.
 *  - bilinear float32: positions in float32 ((v + 0.5) * scale - 0.5 with half_pixel_centers, v * scale
 *    otherwise; scale (in - 1) / (out - 1) with align_corners), corners floor / ceil clamped into the input,
 *    output ((a00 * wy0) * wx0 + (a10 * wy1) * wx0) + (a01 * wy0) * wx1 + (a11 * wy1) * wx1 in that order.
 *  - bilinear int8 from a uint8 model (edge_sdk/runtime/uint8.py marks it: ResizeBilinearOptions.new_height, a
 *    deprecated field, holds FROM_UINT8 = -128): LiteRT's uint8 kernel, the float32 interpolation above of the
 *    uint8 values (int8 + 128), + 0.5, truncated, clamped, back to int8.
 *  - bilinear int8 / int16: Q10 positions (integer scale rounded), Q20 products of the Q10 weights summed
 *    exactly, rounded half away from zero back to the integer type (TFLM's ResizeBilinearInteger).
 *  - nearest (FLOAT32, INT8, UINT8, INT16, INT32): float32 position (v + 0.5 with half_pixel_centers) * scale,
 *    rounded half away from zero with align_corners, floored otherwise, clamped into the input; a byte copy.
 * The size input must be a constant INT32 [height, width]; the output is [batch, height, width, channels].
 * On a 64-bit Linux CPU with a fast path (EDGE_SIMD), bilinear float32 / int8 rows run in vectors over the
 * channels with the same arithmetic (edge_simd_resize_row_*: the same bits).
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(RESIZE_BILINEAR, resize_bilinear, 4, "FLOAT32 INT8 INT16", "NHWC 4-D")
EDGE_KERNEL(RESIZE_NEAREST_NEIGHBOR, resize_nearest_neighbor, 4, "FLOAT32 INT8 UINT8 INT16 INT32", "NHWC 4-D")

#define RESIZE_MAX_SIDE (1 << 20) /* Q10 positions of in * 1024 stay within int32 */
#define RESIZE_FROM_UINT8 (-128)  /* new_height of a RESIZE_BILINEAR uint8.py presents (its FROM_UINT8) */

typedef struct {
    int32_t batches, in_h, in_w, ch, out_h, out_w;
    int32_t *rows; /* bilinear: lo, hi per output row; nearest: the source row */
    int32_t *cols; /* likewise per output column */
    void *fy, *fx; /* bilinear: float32 fractions, or int32 Q10 fractions, per row / column */
    int32_t from_uint8; /* bilinear INT8 of a uint8 model: float32 fractions, LiteRT's uint8 rounding */
#if EDGE_SIMD
    int32_t simd;  /* bilinear float32 / int8 on a 64-bit Linux CPU with a fast path: its level (0: none) */
#endif
} resize_data_t;

/* Validates the node (two inputs, 4-D input, constant INT32 size of two positive values, output type as the
 * input's), sets the output shape and allocates the op data with its index arrays. */
static edge_status_t resize_common(edge_node_t *node, edge_ctx_t *ctx, int bilinear, resize_data_t **out_data) {
    edge_tensor_t *x, *size, *y;
    const int32_t *hw;
    int32_t shape[4];
    resize_data_t *d;
    edge_status_t s;
    int32_t per = bilinear ? 2 : 1;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    size = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !size) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and size are required");
    if (x->rank != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be 4-D (NHWC)");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input type");
    if (size->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "size must be INT32");
    if (!size->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "size computed at run time");
    if (edge_tensor_elements(size) != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "size must hold 2 values");
    hw = (const int32_t *)size->data;
    if (hw[0] <= 0 || hw[1] <= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output size must be positive");
    if (hw[0] > RESIZE_MAX_SIDE || hw[1] > RESIZE_MAX_SIDE || x->dims[1] > RESIZE_MAX_SIDE || x->dims[2] > RESIZE_MAX_SIDE)
        return EDGE_FAIL(ctx, EDGE_LIMIT, "a side above 2^20");
    if (x->dims[1] == 0 || x->dims[2] == 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "empty input");
    d = (resize_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->batches = x->dims[0];
    d->in_h = x->dims[1];
    d->in_w = x->dims[2];
    d->ch = x->dims[3];
    d->out_h = hw[0];
    d->out_w = hw[1];
    d->rows = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)per * (size_t)d->out_h);
    d->cols = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)per * (size_t)d->out_w);
    if (!d->rows || !d->cols) return EDGE_ARENA_TOO_SMALL;
    if (bilinear) {
        d->fy = edge_alloc_persistent(ctx, 4 * (size_t)d->out_h);
        d->fx = edge_alloc_persistent(ctx, 4 * (size_t)d->out_w);
        if (!d->fy || !d->fx) return EDGE_ARENA_TOO_SMALL;
    }
    shape[0] = d->batches;
    shape[1] = d->out_h;
    shape[2] = d->out_w;
    shape[3] = d->ch;
    node->user_data = d;
    *out_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, 4);
}

/* One axis of float bilinear: lo/hi pairs into idx, fractions into frac. */
static void float_axis(int32_t in, int32_t out, int ac, int hp, int32_t *idx, float *frac) {
    float scale = (float)in / (float)out;
    int32_t v;
    if (ac && out > 1) scale = (float)(in - 1) / (float)(out - 1);
    for (v = 0; v < out; v++) {
        float pos = hp ? ((float)v + 0.5f) * scale - 0.5f : (float)v * scale;
        float f = floorf(pos), c = ceilf(pos);
        int32_t lo = f < 0.0f ? 0 : (int32_t)f;
        int32_t hi = c > (float)(in - 1) ? in - 1 : (int32_t)c;
        idx[2 * v] = lo;
        idx[2 * v + 1] = hi;
        frac[v] = pos - (float)lo;
    }
}

/* One axis of integer bilinear (Q10). */
static void int_axis(int32_t in, int32_t out, int ac, int hp, int32_t *idx, int32_t *frac) {
    int32_t scale = (int32_t)(((uint32_t)in * 1024u + (uint32_t)out / 2u) / (uint32_t)out);
    int32_t v;
    if (ac && out > 1) scale = (int32_t)(((uint32_t)(in - 1) * 1024u + (uint32_t)(out - 1) / 2u) / (uint32_t)(out - 1));
    for (v = 0; v < out; v++) {
        int32_t pos = hp ? v * scale + scale / 2 - 512 : v * scale; /* v * scale < 1024 * in + scale: no overflow */
        int32_t lo = pos / 1024, hi = (pos + 1023) / 1024;  /* C truncation, as TFLM; pos + 1023 >= 0 */
        if (lo < 0) lo = 0;
        if (hi > in - 1) hi = in - 1;
        idx[2 * v] = lo;
        idx[2 * v + 1] = hi;
        frac[v] = pos - 1024 * lo;
    }
}

edge_status_t edge_prepare_resize_bilinear(edge_node_t *node, edge_ctx_t *ctx) {
    resize_data_t *d;
    edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_status_t s;
    int ac = 0, hp = 0, from_uint8 = 0;
    if (x && x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, INT16");
    if (node->options_type == EDGE_OPTS_ResizeBilinearOptions) {
        from_uint8 = x && x->type == EDGE_INT8 && edge_opt_int(node, 0, 4, 0) == RESIZE_FROM_UINT8;
        ac = edge_opt_int(node, 2, 1, 0) != 0;
        hp = edge_opt_int(node, 3, 1, 0) != 0;
    }
    if (ac && hp) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "half_pixel_centers and align_corners cannot both be set");
    if ((s = resize_common(node, ctx, 1, &d)) != EDGE_OK) return s;
    d->from_uint8 = from_uint8;
    if (x->type == EDGE_FLOAT32 || from_uint8) {
        float_axis(d->in_h, d->out_h, ac, hp, d->rows, (float *)d->fy);
        float_axis(d->in_w, d->out_w, ac, hp, d->cols, (float *)d->fx);
    } else {
        int_axis(d->in_h, d->out_h, ac, hp, d->rows, (int32_t *)d->fy);
        int_axis(d->in_w, d->out_w, ac, hp, d->cols, (int32_t *)d->fx);
    }
#if EDGE_SIMD
    /* whole output rows in vectors over the channels (the same bits); a call without an output asks */
    d->simd = from_uint8 ? 0 : edge_simd_level();
    if (d->simd && !(x->type == EDGE_FLOAT32 ? edge_simd_resize_row_f32(d->simd, 0, 0, 0, 0, 0, 0, 0.0f, 0)
                                             : x->type == EDGE_INT8 && edge_simd_resize_row_q8(d->simd, 0, 0, 0, 0, 0, 0, 0, 0)))
        d->simd = 0;
#endif
    return EDGE_OK;
}

static int64_t round_q20(int64_t acc) {
    int64_t q = ((acc < 0 ? -acc : acc) + (1 << 19)) >> 20;
    return acc > 0 ? q : -q;
}

/* One output pixel of a uint8 model's bilinear (d->from_uint8), its ch channels: LiteRT's uint8 kernel on the
 * uint8 values (int8 + 128) in float32, in the float path's order, + 0.5, truncated, clamped to uint8; as int8. */
static void resize_from_uint8(const resize_data_t *d, const int8_t *a, int64_t i00, int64_t i10, int64_t i01,
                              int64_t i11, int32_t oy, int32_t ox, int8_t *out) {
    const float wy1 = ((const float *)d->fy)[oy], wx1 = ((const float *)d->fx)[ox];
    const float wy0 = 1.0f - wy1, wx0 = 1.0f - wx1;
    int32_t c;
    for (c = 0; c < d->ch; c++) {
        const float v = (float)(a[i00 + c] + 128) * wy0 * wx0 + (float)(a[i10 + c] + 128) * wy1 * wx0 +
                        (float)(a[i01 + c] + 128) * wy0 * wx1 + (float)(a[i11 + c] + 128) * wy1 * wx1 + 0.5f;
        const int32_t u = v <= 0.0f ? 0 : v >= 255.0f ? 255 : (int32_t)v;
        out[c] = (int8_t)(u - 128);
    }
}

void edge_eval_resize_bilinear(const edge_node_t *node, edge_ctx_t *ctx) {
    const resize_data_t *d = (const resize_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int32_t ch = d->ch, row = d->in_w * ch;
    const int32_t plane = d->in_h * row;
    int32_t b, oy, ox, c;
    int64_t o = 0;
    for (b = 0; b < d->batches; b++) {
        for (oy = 0; oy < d->out_h; oy++) {
            const int64_t r0 = (int64_t)b * plane + (int64_t)d->rows[2 * oy] * row;
            const int64_t r1 = (int64_t)b * plane + (int64_t)d->rows[2 * oy + 1] * row;
#if EDGE_SIMD
            if (d->simd) { /* the row in vectors: prepare chose the level for this type */
                if (x->type == EDGE_FLOAT32)
                    (void)edge_simd_resize_row_f32(d->simd, (const float *)x->data + r0, (const float *)x->data + r1,
                                                   d->cols, (const float *)d->fx, d->out_w, ch,
                                                   ((const float *)d->fy)[oy], (float *)y->data + o);
                else
                    (void)edge_simd_resize_row_q8(d->simd, (const int8_t *)x->data + r0, (const int8_t *)x->data + r1,
                                                  d->cols, (const int32_t *)d->fx, d->out_w, ch,
                                                  ((const int32_t *)d->fy)[oy], (int8_t *)y->data + o);
                o += (int64_t)d->out_w * ch;
                continue;
            }
#endif
            for (ox = 0; ox < d->out_w; ox++) {
                const int32_t c0 = d->cols[2 * ox] * ch, c1 = d->cols[2 * ox + 1] * ch;
                if (EDGE_WITH_FLOAT32 && x->type == EDGE_FLOAT32) {
                    const float *a = (const float *)x->data;
                    float *out = (float *)y->data + o;
                    const float wy1 = ((const float *)d->fy)[oy], wx1 = ((const float *)d->fx)[ox];
                    const float wy0 = 1.0f - wy1, wx0 = 1.0f - wx1;
                    for (c = 0; c < ch; c++)
                        out[c] = a[r0 + c0 + c] * wy0 * wx0 + a[r1 + c0 + c] * wy1 * wx0 + a[r0 + c1 + c] * wy0 * wx1 +
                                 a[r1 + c1 + c] * wy1 * wx1;
                } else if (d->from_uint8) {
                    resize_from_uint8(d, (const int8_t *)x->data, r0 + c0, r1 + c0, r0 + c1, r1 + c1, oy, ox,
                                      (int8_t *)y->data + o);
                } else {
                    const int32_t fy = ((const int32_t *)d->fy)[oy], fx = ((const int32_t *)d->fx)[ox];
                    const int32_t w00 = (1024 - fy) * (1024 - fx), w10 = fy * (1024 - fx);
                    const int32_t w01 = (1024 - fy) * fx, w11 = fy * fx;
                    if (x->type == EDGE_INT8) {
                        const int8_t *a = (const int8_t *)x->data;
                        int8_t *out = (int8_t *)y->data + o;
                        for (c = 0; c < ch; c++) {
                            /* |int8| * 2^20 summed over weights adding to 2^20: within int32 */
                            int32_t acc = a[r0 + c0 + c] * w00 + a[r1 + c0 + c] * w10 + a[r0 + c1 + c] * w01 +
                                          a[r1 + c1 + c] * w11;
                            int32_t q = ((acc < 0 ? -acc : acc) + (1 << 19)) >> 20;
                            q = acc > 0 ? q : -q;
                            out[c] = (int8_t)(q > 127 ? 127 : q < -128 ? -128 : q);
                        }
                    } else if (EDGE_WITH_INT16) {
                        const int16_t *a = (const int16_t *)x->data;
                        int16_t *out = (int16_t *)y->data + o;
                        for (c = 0; c < ch; c++) {
                            int64_t q = round_q20((int64_t)a[r0 + c0 + c] * w00 + (int64_t)a[r1 + c0 + c] * w10 +
                                                  (int64_t)a[r0 + c1 + c] * w01 + (int64_t)a[r1 + c1 + c] * w11);
                            out[c] = (int16_t)(q > 32767 ? 32767 : q < -32768 ? -32768 : q);
                        }
                    }
                }
                o += ch;
            }
        }
    }
}

static int32_t nearest_index(int32_t v, int32_t in, float scale, int ac, int hp) {
    float pos = ((float)v + (hp ? 0.5f : 0.0f)) * scale;
    int32_t idx = (int32_t)(ac ? roundf(pos) : floorf(pos)); /* pos >= 0 */
    if (idx > in - 1) idx = in - 1;
    if (idx < 0) idx = 0;
    return idx;
}

edge_status_t edge_prepare_resize_nearest_neighbor(edge_node_t *node, edge_ctx_t *ctx) {
    resize_data_t *d;
    edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_status_t s;
    int ac = 0, hp = 0;
    int32_t v;
    float sy, sx;
    if (x && x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_UINT8 && x->type != EDGE_INT16 &&
        x->type != EDGE_INT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32");
    if (node->options_type == EDGE_OPTS_ResizeNearestNeighborOptions) {
        ac = edge_opt_int(node, 0, 1, 0) != 0;
        hp = edge_opt_int(node, 1, 1, 0) != 0;
    }
    if ((s = resize_common(node, ctx, 0, &d)) != EDGE_OK) return s;
    sy = (ac && d->out_h > 1) ? (float)(d->in_h - 1) / (float)(d->out_h - 1) : (float)d->in_h / (float)d->out_h;
    sx = (ac && d->out_w > 1) ? (float)(d->in_w - 1) / (float)(d->out_w - 1) : (float)d->in_w / (float)d->out_w;
    for (v = 0; v < d->out_h; v++) d->rows[v] = nearest_index(v, d->in_h, sy, ac, hp);
    for (v = 0; v < d->out_w; v++) d->cols[v] = nearest_index(v, d->in_w, sx, ac, hp);
    return EDGE_OK;
}

void edge_eval_resize_nearest_neighbor(const edge_node_t *node, edge_ctx_t *ctx) {
    const resize_data_t *d = (const resize_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const uint32_t item = edge_type_bytes(x->type);
    const size_t pixel = (size_t)d->ch * item, row = (size_t)d->in_w * pixel, plane = (size_t)d->in_h * row;
    const uint8_t *a = (const uint8_t *)x->data;
    uint8_t *out = (uint8_t *)y->data;
    int32_t b, oy, ox;
    for (b = 0; b < d->batches; b++)
        for (oy = 0; oy < d->out_h; oy++) {
            const uint8_t *src = a + (size_t)b * plane + (size_t)d->rows[oy] * row;
            for (ox = 0; ox < d->out_w; ox++) {
                memcpy(out, src + (size_t)d->cols[ox] * pixel, pixel);
                out += pixel;
            }
        }
}
