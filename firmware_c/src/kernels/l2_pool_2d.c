/* L2_POOL_2D over NHWC windows, as edge_sdk/runtime/kernels/pooling.py prepare_l2_pool_2d (LiteRT's and TFLM's
 * reference L2Pool; float32 only in both): per output cell and channel, the float32 sum of the squares of the
 * window cells inside the input in (fy, fx) order, divided by their count, sqrtf, then the fused activation's
 * clamp. A window entirely in the padding gives 0 / 0 (NaN), as the reference. No patch-stage windows (the op
 * ends a patch stage).
 */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_conv.h"

EDGE_KERNEL(L2_POOL_2D, l2_pool_2d, 1, "FLOAT32", "NHWC 4-D")

typedef struct {
    int32_t n, h, w, c, oh, ow, pt, pl, fh, fw, sh, sw;
    float lo, hi;
} l2pool_data_t;

edge_status_t edge_prepare_l2_pool_2d(edge_node_t *node, edge_ctx_t *ctx) {
    /* Pool2DOptions: 0 padding, 1 stride_w, 2 stride_h, 3 filter_width, 4 filter_height, 5 fused_activation */
    const int has_opts = node->options_type == EDGE_OPTS_Pool2DOptions;
    const int32_t padding = has_opts ? edge_opt_int(node, 0, 1, 0) : EDGE_PAD_SAME;
    const int32_t act = has_opts ? edge_opt_int(node, 5, 1, 0) : 0;
    const edge_tensor_t *in, *out;
    l2pool_data_t *d;
    int32_t shape[4];
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    in = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!in) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (in->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32");
    if ((s = edge_type_built(ctx, in->type)) != EDGE_OK) return s;
    if (out->type != in->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if (in->rank != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be 4-D");
    d = (l2pool_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    if (edge_activation_range_float(act, &d->lo, &d->hi) != 0) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "fused activation");
    d->n = in->dims[0];
    d->h = in->dims[1];
    d->w = in->dims[2];
    d->c = in->dims[3];
    d->sw = has_opts ? edge_opt_int(node, 1, 4, 0) : 1;
    d->sh = has_opts ? edge_opt_int(node, 2, 4, 0) : 1;
    d->fw = has_opts ? edge_opt_int(node, 3, 4, 0) : 1;
    d->fh = has_opts ? edge_opt_int(node, 4, 4, 0) : 1;
    if (edge_conv_window(padding, d->sh, 1, d->h, d->fh, &d->oh, &d->pt) ||
        edge_conv_window(padding, d->sw, 1, d->w, d->fw, &d->ow, &d->pl))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "padding, strides or filter size do not fit the input");
    shape[0] = d->n;
    shape[1] = d->oh;
    shape[2] = d->ow;
    shape[3] = d->c;
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, 4);
}

void edge_eval_l2_pool_2d(const edge_node_t *node, edge_ctx_t *ctx) {
    const l2pool_data_t *d = (const l2pool_data_t *)node->user_data;
    const float *x = (const float *)edge_in(ctx, node, 0)->data;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    int32_t b, oy, ox, ch, fy, fx;
    if (!EDGE_WITH_FLOAT32) return;
    for (b = 0; b < d->n; b++)
        for (oy = 0; oy < d->oh; oy++) {
            const int32_t iy = oy * d->sh - d->pt;
            const int32_t fy0 = iy < 0 ? -iy : 0, fy1 = d->h - iy < d->fh ? d->h - iy : d->fh;
            for (ox = 0; ox < d->ow; ox++) {
                const int32_t ix = ox * d->sw - d->pl;
                const int32_t fx0 = ix < 0 ? -ix : 0, fx1 = d->w - ix < d->fw ? d->w - ix : d->fw;
                float *yp = y + (((int64_t)b * d->oh + oy) * d->ow + ox) * d->c;
                for (ch = 0; ch < d->c; ch++) {
                    float sum = 0.0f, v;
                    int32_t count = 0;
                    for (fy = fy0; fy < fy1; fy++)
                        for (fx = fx0; fx < fx1; fx++) {
                            const float e = x[(((int64_t)b * d->h + iy + fy) * d->w + ix + fx) * d->c + ch];
                            sum += e * e;
                            count++;
                        }
                    v = sqrtf(sum / (float)count);
                    yp[ch] = v < d->lo ? d->lo : (v > d->hi ? d->hi : v);
                }
            }
        }
}
