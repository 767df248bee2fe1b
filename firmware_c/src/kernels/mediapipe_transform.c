/* MediaPipe's TransformTensorBilinear / TransformTensor and TransformLandmarks
 * (mediapipe/util/tflite/operations/transform_tensor_bilinear.cc, transform_landmarks.cc), float32, as
 * edge_sdk/runtime/kernels/mediapipe.py (bit for bit: the same float32 / double steps as MediaPipe's code).
 *  - TransformTensorBilinear v2 (TransformTensor, v1: no corner correction): output (x, y) samples the input
 *    [1, H, W, C] bilinearly at (r0 . (x, y, 0, 1), r1 . (x, y, 0, 1)), r0 / r1 the first two rows of the 4x4
 *    matrix input (v2 first adds r[0] / 2 + r[1] / 2 - 1/2 to r[3], in double); 0 outside [0, W-1] x [0, H-1]
 *    (and for a NaN position). The output shape is the declared one, [1, h, w, C].
 *  - TransformLandmarks: (x, y) of every landmark mapped by those rows (z copied); v1 input [1, H, W, C] with
 *    FlexBuffer options dimensions (2, 3) and scale (multiplies the translation), v2 input [1, N, D], D = 2, 3.
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_flexbuffers.h"

EDGE_CUSTOM_KERNEL("TransformTensorBilinear", transform_tensor_bilinear, 2, "FLOAT32", "")
EDGE_CUSTOM_KERNEL("TransformTensor", transform_tensor, 1, "FLOAT32", "")
EDGE_CUSTOM_KERNEL("TransformLandmarks", transform_landmarks, 2, "FLOAT32", "")

typedef struct {
    int32_t v2;
    int32_t dims;
    float scale;
} mp_transform_t;

static edge_status_t mp_float_io(edge_node_t *node, edge_ctx_t *ctx, int32_t n_inputs) {
    int32_t i;
    edge_status_t s;
    if (node->n_inputs != n_inputs || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "wrong input or output count");
    for (i = 0; i < n_inputs; i++) {
        const edge_tensor_t *t = edge_in(ctx, node, i);
        if (!t) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "an input is missing");
        if (t->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32 only (as MediaPipe's)");
    }
    if (edge_out(ctx, node, 0)->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be FLOAT32");
    if ((s = edge_type_built(ctx, EDGE_FLOAT32)) != EDGE_OK) return s;
    if (n_inputs == 2 && edge_tensor_elements(edge_in(ctx, node, 1)) < 8)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "the matrix input needs 4x4 values");
    return EDGE_OK;
}

/* An optional FlexBuffer integer: 1 found (in *v), 0 absent, -1 not an int32. */
static int mp_opt_int(const efb_map_t *m, const char *key, int64_t *v) {
    efb_ref_t r;
    if (efb_map_find(m, key, &r) != EFB_OK) return 0;
    if (efb_get_int(m, &r, v) != EFB_OK || *v < INT32_MIN || *v > INT32_MAX) return -1;
    return 1;
}

static edge_status_t mp_prepare_transform_tensor(edge_node_t *node, edge_ctx_t *ctx, int32_t v2) {
    edge_tensor_t *x, *y;
    mp_transform_t *d;
    edge_status_t s;
    uint32_t len = 0;
    if ((s = mp_float_io(node, ctx, 2)) != EDGE_OK) return s;
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (x->rank != 4 || x->dims[0] != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be [1, H, W, C]");
    if (y->rank != 4 || y->dims[0] != 1 || y->dims[3] != x->dims[3])
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output must be declared [1, height, width, C of the input]");
    if (x->dims[1] > (1 << 24) || x->dims[2] > (1 << 24)) return EDGE_FAIL(ctx, EDGE_LIMIT, "input side above 2^24");
    if (edge_custom_options(ctx, node, &len) && len) {
        efb_map_t m;
        efb_ref_t r;
        int64_t v;
        int got;
        if (efb_map_open(&m, edge_custom_options(ctx, node, &len), len) != EFB_OK)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "custom options: malformed FlexBuffer or its root is not a map");
        if (!v2) {
            if (efb_map_find(&m, "mode", &r) == EFB_OK) {
                /* only "bilinear" is defined: a string value; anything else is refused */
                uint32_t type = r.packed >> 2, pos;
                if (type != 5 /* STRING */ || efb_target_(m.buf, m.len, r.pos, r.width, &pos) != EFB_OK ||
                    pos + 9 > m.len || memcmp(m.buf + pos, "bilinear", 9) != 0)
                    return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "mode: only bilinear interpolation");
            }
            if (efb_map_find(&m, "output_size", &r) == EFB_OK) {
                efb_ivec_t iv;
                if (efb_get_int_vector(&m, &r, &iv) != EFB_OK || iv.count < 2)
                    return EDGE_FAIL(ctx, EDGE_BAD_NODE, "custom option 'output_size' must be 2 integers");
                if (efb_ivec_at(&iv, 0) != y->dims[1] || efb_ivec_at(&iv, 1) != y->dims[2])
                    return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_size differs from the output shape");
            }
        } else {
            got = mp_opt_int(&m, "output_height", &v);
            if (got < 0 || (got && v != y->dims[1])) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_height differs from the output shape");
            got = mp_opt_int(&m, "output_width", &v);
            if (got < 0 || (got && v != y->dims[2])) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_width differs from the output shape");
        }
    }
    d = (mp_transform_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->v2 = v2;
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, y->dims, 4);
}

edge_status_t edge_prepare_transform_tensor_bilinear(edge_node_t *node, edge_ctx_t *ctx) {
    return mp_prepare_transform_tensor(node, ctx, node->version >= 2);
}

edge_status_t edge_prepare_transform_tensor(edge_node_t *node, edge_ctx_t *ctx) {
    return mp_prepare_transform_tensor(node, ctx, 0);
}

void edge_eval_transform_tensor_bilinear(const edge_node_t *node, edge_ctx_t *ctx) {
    const mp_transform_t *d = (const mp_transform_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0), *mt = edge_in(ctx, node, 1);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const float *a = (const float *)x->data, *t = (const float *)mt->data;
    float *out = (float *)y->data;
    const int32_t ih = x->dims[1], iw = x->dims[2], ch = x->dims[3], oh = y->dims[1], ow = y->dims[2];
    float r0[4], r1[4];
    int32_t oy, ox, c;
    if (!EDGE_WITH_FLOAT32) return;
    memcpy(r0, t, sizeof r0);
    memcpy(r1, t + 4, sizeof r1);
    if (d->v2) {
        r0[3] = (float)((double)r0[3] + ((double)r0[0] * 0.5 + (double)r0[1] * 0.5 - 0.5));
        r1[3] = (float)((double)r1[3] + ((double)r1[0] * 0.5 + (double)r1[1] * 0.5 - 0.5));
    }
    for (oy = 0; oy < oh; oy++)
        for (ox = 0; ox < ow; ox++) {
            const float fxo = (float)ox, fyo = (float)oy;
            const float tx = ((r0[0] * fxo + r0[1] * fyo) + r0[2] * 0.0f) + r0[3] * 1.0f;
            const float ty = ((r1[0] * fxo + r1[1] * fyo) + r1[2] * 0.0f) + r1[3] * 1.0f;
            float *dst = out + ((size_t)oy * ow + ox) * ch;
            const int inside = tx >= 0.0f && tx <= (float)(iw - 1) && ty >= 0.0f && ty <= (float)(ih - 1);
            if (!inside) {
                for (c = 0; c < ch; c++) dst[c] = 0.0f;
                continue;
            }
            {
                const float fx = floorf(tx), fy = floorf(ty);
                const int32_t x0 = (int32_t)fx, y0 = (int32_t)fy, x1 = x0 + 1, y1 = y0 + 1;
                const float rc = tx - fx, lc = ty - fy;
                const int ok01 = x1 < iw, ok10 = y1 < ih;
                const float *p00 = a + ((size_t)y0 * iw + x0) * ch;
                for (c = 0; c < ch; c++) {
                    const float q11 = p00[c];
                    const float q21 = ok01 ? p00[ch + c] : 0.0f;
                    const float q12 = ok10 ? p00[(size_t)iw * ch + c] : 0.0f;
                    const float q22 = (ok01 && ok10) ? p00[((size_t)iw + 1) * ch + c] : 0.0f;
                    const float upper = (float)((1.0 - (double)rc) * (double)q11 + (double)(rc * q21));
                    const float lower = (float)((1.0 - (double)rc) * (double)q12 + (double)(rc * q22));
                    dst[c] = (float)((double)(lc * lower) + (1.0 - (double)lc) * (double)upper);
                }
            }
        }
}

void edge_eval_transform_tensor(const edge_node_t *node, edge_ctx_t *ctx) { edge_eval_transform_tensor_bilinear(node, ctx); }

edge_status_t edge_prepare_transform_landmarks(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x;
    mp_transform_t *d;
    edge_status_t s;
    int32_t dims = 0;
    float scale = 1.0f;
    if ((s = mp_float_io(node, ctx, 2)) != EDGE_OK) return s;
    x = edge_in(ctx, node, 0);
    if (node->version <= 1) {
        efb_map_t m;
        efb_ref_t r;
        double f;
        int64_t v;
        uint32_t len = 0;
        if (x->rank != 4 || x->dims[0] != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be [1, H, W, C]");
        dims = 3; /* MediaPipe's defaults: dimensions 3, scale 1 */
        if (edge_custom_options(ctx, node, &len) && len) {
            if ((s = efb_node_options(ctx, node, &m)) != EDGE_OK) return s;
            if (efb_map_find(&m, "dimensions", &r) == EFB_OK && (s = EFB_OPT_INT32(ctx, &m, "dimensions", &dims)) != EDGE_OK)
                return s;
            if (efb_map_find(&m, "scale", &r) == EFB_OK) {
                if (efb_get_float(&m, &r, &f) == EFB_OK) scale = (float)f;
                else if (efb_get_int(&m, &r, &v) == EFB_OK) scale = (float)v;
                else return EDGE_FAIL(ctx, EDGE_BAD_NODE, "custom option 'scale' must be a number");
            }
        }
        if (scale == 0.0f) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "custom option 'scale' must be non-zero");
    } else {
        if (x->rank != 3 || x->dims[0] != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be [1, N, D]");
        dims = x->dims[2];
    }
    if (dims != 2 && dims != 3) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "dimensions must be 2 or 3");
    if (x->dims[x->rank - 1] % dims) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "last dimension is not a multiple of dimensions");
    d = (mp_transform_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->dims = dims;
    d->scale = scale;
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

void edge_eval_transform_landmarks(const edge_node_t *node, edge_ctx_t *ctx) {
    const mp_transform_t *d = (const mp_transform_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0), *mt = edge_in(ctx, node, 1);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const float *p = (const float *)x->data, *t = (const float *)mt->data;
    float *out = (float *)y->data;
    const int64_t n = (int64_t)((uint32_t)edge_tensor_elements(x) / (uint32_t)d->dims); /* 32-bit divide */
    const float m3 = t[3] * d->scale, m7 = t[7] * d->scale;
    int64_t i;
    if (!EDGE_WITH_FLOAT32) return;
    for (i = 0; i < n; i++) {
        const float px = p[i * d->dims], py = p[i * d->dims + 1];
        const float z = d->dims == 3 ? p[i * d->dims + 2] : 0.0f;
        out[i * d->dims] = ((t[0] * px + t[1] * py) + t[2] * 0.0f) + m3 * 1.0f;
        out[i * d->dims + 1] = ((t[4] * px + t[5] * py) + t[6] * 0.0f) + m7 * 1.0f;
        if (d->dims == 3) out[i * d->dims + 2] = z;
    }
}
