/* MediaPipe's Landmarks2TransformMatrix (mediapipe/util/tflite/operations/landmarks_to_transform_matrix.cc),
 * float32 in and out, computed in double and rounded once (MediaPipe computes in float: the results agree to a
 * few float ulps), as edge_sdk/runtime/kernels/mediapipe.py landmarks_matrix_v1 / _v2. Output [1, 4, 4].
 *  v1: input [1, 1, 1, 3 N]; FlexBuffer options input_hw, output_hw, dimensions (3), landmarks_range,
 *      bbox_size_multiplier, left_rotation_idx, right_rotation_idx, subset (pairs; an odd last one doubled).
 *      alpha = -atan(dy / dx) of the rotation landmarks; the subset rotated by alpha bounds a box; the matrix
 *      is to_absolute * rotation * scale * to_relative (3x3, laid out in the 4x4 output as MediaPipe does).
 *  v2: input [1, N, 3]; options subset_idxs, left/right_rotation_idx, target_rotation_radians,
 *      output_height, output_width, scale_x, scale_y: shift(center) * rot(-r) * scale * shift(-out / 2).
 * Every landmark index is checked against the input at prepare (MediaPipe reads out of bounds otherwise).
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_flexbuffers.h"

EDGE_CUSTOM_KERNEL("Landmarks2TransformMatrix", landmarks_to_transform_matrix, 2, "FLOAT32", "")

#define L2T_MAX_SUBSET 64 /* landmark pairs (face models use a handful) */

typedef struct {
    int32_t v2, left, right, n_pairs;
    int32_t in_h, in_w, out_h, out_w, range;
    double mult, target, scale_x, scale_y;
    int32_t pairs[2 * L2T_MAX_SUBSET];
} l2t_data_t;

static edge_status_t l2t_float(edge_ctx_t *ctx, const efb_map_t *m, const char *key, double *out) {
    efb_ref_t r;
    int64_t v;
    if (efb_map_find(m, key, &r) != EFB_OK) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "a float custom option is missing");
    if (efb_get_float(m, &r, out) == EFB_OK) {
        *out = (double)(float)*out; /* MediaPipe reads AsFloat */
        return EDGE_OK;
    }
    if (efb_get_int(m, &r, &v) == EFB_OK) {
        *out = (double)(float)v;
        return EDGE_OK;
    }
    return EDGE_FAIL(ctx, EDGE_BAD_NODE, "a float custom option is not a number");
}

static edge_status_t l2t_vector(edge_ctx_t *ctx, const efb_map_t *m, const char *key, efb_ivec_t *v) {
    efb_ref_t r;
    if (efb_map_find(m, key, &r) != EFB_OK || efb_get_int_vector(m, &r, v) != EFB_OK)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "a vector custom option is missing or not a typed integer vector");
    return EDGE_OK;
}

edge_status_t edge_prepare_landmarks_to_transform_matrix(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *y;
    l2t_data_t *d;
    efb_map_t m;
    efb_ivec_t sub;
    edge_status_t s;
    int32_t shape[3] = {1, 4, 4}, k, count, n;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 || y->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32 only (as MediaPipe's)");
    if ((s = edge_type_built(ctx, EDGE_FLOAT32)) != EDGE_OK) return s;
    d = (l2t_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->v2 = node->version >= 2;
    if ((s = efb_node_options(ctx, node, &m)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &m, "left_rotation_idx", &d->left)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &m, "right_rotation_idx", &d->right)) != EDGE_OK) return s;
    if (!d->v2) {
        efb_ivec_t hw;
        int32_t dims;
        if (x->rank != 4 || x->dims[0] != 1 || x->dims[1] != 1 || x->dims[2] != 1)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be [1, 1, 1, 3 * landmarks]");
        if ((s = l2t_vector(ctx, &m, "subset", &sub)) != EDGE_OK) return s;
        if ((s = l2t_vector(ctx, &m, "input_hw", &hw)) != EDGE_OK) return s;
        if (hw.count < 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input_hw needs 2 values");
        d->in_h = (int32_t)efb_ivec_at(&hw, 0);
        d->in_w = (int32_t)efb_ivec_at(&hw, 1);
        if (efb_ivec_at(&hw, 0) != d->in_h || efb_ivec_at(&hw, 1) != d->in_w) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input_hw outside int32");
        if ((s = l2t_vector(ctx, &m, "output_hw", &hw)) != EDGE_OK) return s;
        if (hw.count < 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_hw needs 2 values");
        d->out_h = (int32_t)efb_ivec_at(&hw, 0);
        d->out_w = (int32_t)efb_ivec_at(&hw, 1);
        if (efb_ivec_at(&hw, 0) != d->out_h || efb_ivec_at(&hw, 1) != d->out_w) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_hw outside int32");
        if ((s = EFB_OPT_INT32(ctx, &m, "dimensions", &dims)) != EDGE_OK) return s;
        if (dims != 3) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "dimensions must be 3");
        if ((s = EFB_OPT_INT32(ctx, &m, "landmarks_range", &d->range)) != EDGE_OK) return s;
        if ((s = l2t_float(ctx, &m, "bbox_size_multiplier", &d->mult)) != EDGE_OK) return s;
        if (d->mult == 0.0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "bbox_size_multiplier must be non-zero");
        if (d->in_h <= 0 || d->in_w <= 0 || d->out_h <= 0 || d->out_w <= 0)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input_hw and output_hw must be positive");
        if (d->range <= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "landmarks_range must be positive");
    } else {
        if (x->rank != 3 || x->dims[0] != 1 || x->dims[2] != 3) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be [1, landmarks, 3]");
        if ((s = l2t_vector(ctx, &m, "subset_idxs", &sub)) != EDGE_OK) return s;
        if ((s = l2t_float(ctx, &m, "target_rotation_radians", &d->target)) != EDGE_OK) return s;
        if ((s = EFB_OPT_INT32(ctx, &m, "output_height", &d->out_h)) != EDGE_OK) return s;
        if ((s = EFB_OPT_INT32(ctx, &m, "output_width", &d->out_w)) != EDGE_OK) return s;
        if ((s = l2t_float(ctx, &m, "scale_x", &d->scale_x)) != EDGE_OK) return s;
        if ((s = l2t_float(ctx, &m, "scale_y", &d->scale_y)) != EDGE_OK) return s;
        if (d->out_h <= 0 || d->out_w <= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_height and output_width must be positive");
        if (!(d->scale_x > 0.0) || !(d->scale_y > 0.0)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "scale_x and scale_y must be positive");
    }
    n = (int32_t)sub.count;
    if (n == 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "the landmark subset is empty");
    if ((n + 1) / 2 > L2T_MAX_SUBSET) return EDGE_FAIL(ctx, EDGE_LIMIT, "over 64 landmark pairs");
    d->n_pairs = (n + 1) / 2;
    count = (int32_t)((uint32_t)edge_tensor_elements(x) / 3u); /* 32-bit divide */
    for (k = 0; k < 2 * d->n_pairs; k++) {
        int64_t v = efb_ivec_at(&sub, (uint32_t)(k < n ? k : n - 1)); /* odd count: the last one doubled */
        if (v < 0 || v >= count) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "landmark index outside the input");
        d->pairs[k] = (int32_t)v;
    }
    if (d->left < 0 || d->left >= count || d->right < 0 || d->right >= count)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "rotation landmark index outside the input");
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, 3);
}

/* out = a * b (n x n, k summed in order). */
static void l2t_mm(const double *a, const double *b, double *out, int32_t n) {
    double t[16];
    int32_t r, c, k;
    for (r = 0; r < n; r++)
        for (c = 0; c < n; c++) {
            double s = 0.0;
            for (k = 0; k < n; k++) s += a[r * n + k] * b[k * n + c];
            t[r * n + c] = s;
        }
    memcpy(out, t, sizeof(double) * (size_t)(n * n));
}

void edge_eval_landmarks_to_transform_matrix(const edge_node_t *node, edge_ctx_t *ctx) {
    const l2t_data_t *d = (const l2t_data_t *)node->user_data;
    const float *p = (const float *)edge_in(ctx, node, 0)->data;
    float *out = (float *)edge_out(ctx, node, 0)->data;
    const double lx = p[3 * d->left], ly = p[3 * d->left + 1], rx = p[3 * d->right], ry = p[3 * d->right + 1];
    double mx = 0, my = 0, nx = 0, ny = 0, res[16];
    int32_t k;
    if (!EDGE_WITH_FLOAT32) return;
    if (!d->v2) {
        const double alpha = -atan((ry - ly) / (rx - lx));
        const double ca = cos(alpha), sa = sin(alpha), cm = cos(-alpha), sm = sin(-alpha);
        const double rng = (double)d->range;
        double a[9], r[9], sc[9], rel[9], cx, cy;
        mx = my = -100000.0;
        nx = ny = 100000.0;
        for (k = 0; k < 2 * d->n_pairs; k++) {
            const double x = p[3 * d->pairs[k]], y = p[3 * d->pairs[k] + 1];
            const double u = x * ca - y * sa, v = x * sa + y * ca;
            if (u > mx) mx = u;
            if (v > my) my = v;
            if (u < nx) nx = u;
            if (v < ny) ny = v;
        }
        cx = (mx + nx) / 2.0;
        cy = (my + ny) / 2.0;
        memset(sc, 0, sizeof sc);
        sc[0] = (mx - nx) * d->mult / rng;
        sc[4] = (my - ny) * d->mult / rng;
        sc[8] = 1.0;
        r[0] = cm; r[1] = -sm; r[2] = (cx * cm - cy * sm) / rng * 2.0 - 1.0;
        r[3] = sm; r[4] = cm;  r[5] = (cx * sm + cy * cm) / rng * 2.0 - 1.0;
        r[6] = 0;  r[7] = 0;   r[8] = 1;
        memset(rel, 0, sizeof rel);
        rel[0] = 2.0 / (d->out_w - 1.0); rel[2] = -1.0;
        rel[4] = 2.0 / (d->out_h - 1.0); rel[5] = -1.0;
        rel[8] = 1.0;
        memset(a, 0, sizeof a);
        a[0] = (d->in_w - 1.0) / 2.0; a[2] = (d->in_w - 1.0) / 2.0;
        a[4] = (d->in_h - 1.0) / 2.0; a[5] = (d->in_h - 1.0) / 2.0;
        a[8] = 1.0;
        l2t_mm(a, r, a, 3);
        l2t_mm(a, sc, a, 3);
        l2t_mm(a, rel, a, 3);
        res[0] = a[0]; res[1] = a[1]; res[2] = 0; res[3] = a[2];
        res[4] = a[3]; res[5] = a[4]; res[6] = 0; res[7] = a[5];
        res[8] = a[6]; res[9] = a[7]; res[10] = a[8]; res[11] = 0;
        res[12] = 0; res[13] = 0; res[14] = 0; res[15] = 1;
    } else {
        const double rot = d->target - atan2(ry - ly, rx - lx);
        const double cr = cos(rot), sr = sin(rot), ci = cos(-rot), si = sin(-rot);
        const double ow = (double)d->out_w, oh = (double)d->out_h;
        double ux, uy, cx, cy, t[16];
        for (k = 0; k < 2 * d->n_pairs; k++) {
            const double x = p[3 * d->pairs[k]], y = p[3 * d->pairs[k] + 1];
            const double u = cr * x - sr * y, v = sr * x + cr * y;
            if (k == 0 || u > mx) mx = u;
            if (k == 0 || v > my) my = v;
            if (k == 0 || u < nx) nx = u;
            if (k == 0 || v < ny) ny = v;
        }
        ux = (nx + mx) / 2.0;
        uy = (ny + my) / 2.0;
        cx = ci * ux - si * uy;
        cy = si * ux + ci * uy;
        memset(res, 0, sizeof res);
        res[0] = res[5] = res[10] = res[15] = 1.0;
        res[3] = cx;
        res[7] = cy;
        memset(t, 0, sizeof t);
        t[0] = ci; t[1] = -si; t[4] = si; t[5] = ci; t[10] = 1.0; t[15] = 1.0;
        l2t_mm(res, t, res, 4);
        memset(t, 0, sizeof t);
        t[0] = d->scale_x * (mx - nx) / ow; t[5] = d->scale_y * (my - ny) / oh; t[10] = 1.0; t[15] = 1.0;
        l2t_mm(res, t, res, 4);
        memset(t, 0, sizeof t);
        t[0] = t[5] = t[10] = t[15] = 1.0;
        t[3] = -(ow / 2.0);
        t[7] = -(oh / 2.0);
        l2t_mm(res, t, res, 4);
    }
    for (k = 0; k < 16; k++) out[k] = (float)res[k];
}
