/* CONV_3D, float32, as LiteRT's reference kernel (TFLM has none; edge_sdk/runtime/kernels/conv_3d.py):
 * inputs (input [N, D, H, W, C], filter [kd, kh, kw, C, O], optional bias [O]), output [N, D', H', W', O].
 * Conv3DOptions slots: 0 padding, 1 stride_d, 2 stride_w, 3 stride_h, 4 fused activation, 5 dilation_d,
 * 6 dilation_w, 7 dilation_h. Each dimension's size and padding as CONV_2D's (edge_conv_window). One output
 * cell at a time: the taps inside the input in (fd, fy, fx, c) order, one float product added at a time as
 * the reference loop adds them, then the bias and the activation clamp. The filter's input depth must equal
 * the input's (no groups, as LiteRT).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_conv.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(CONV_3D, conv_3d, 1, "FLOAT32/FLOAT32", "NDHWC 5-D input, DHWIO filter; float32 only")

typedef edge_conv3d_t c3_data_t; /* edge_conv.h */

edge_status_t edge_prepare_conv_3d(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *in, *w, *bias, *out;
    c3_data_t *d;
    int32_t padding = EDGE_PAD_SAME, dims[5];
    edge_status_t s;
    if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_3D expects 2..3 inputs and 1 output");
    in = edge_in(ctx, node, 0);
    w = edge_in(ctx, node, 1);
    bias = edge_in(ctx, node, 2);
    out = edge_out(ctx, node, 0);
    if (!in || !w) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_3D: input and filter are required");
    d = (c3_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    if ((s = edge_conv3d_prepare(ctx, node, in, w, bias, out, d, &padding)) != EDGE_OK) return s;
    if (w->dims[3] != in->dims[4])
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_3D: filter input depth differs from the input depth");
    if (bias && edge_tensor_elements(bias) != w->dims[4])
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_3D: bias needs one value per filter");
    d->o = w->dims[4];
    if (d->n <= 0 || d->c <= 0 || d->o <= 0)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_3D: empty input or filter");
    if (edge_conv_window(padding, d->sd, d->dd, d->d, d->kd, &d->od, &d->pd) ||
        edge_conv_window(padding, d->sh, d->dh, d->h, d->kh, &d->oh, &d->pt) ||
        edge_conv_window(padding, d->sw, d->dw, d->w, d->kw, &d->ow, &d->pl))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_3D: padding, strides or window do not fit the input");
    dims[0] = d->n;
    dims[1] = d->od;
    dims[2] = d->oh;
    dims[3] = d->ow;
    dims[4] = d->o;
    return edge_set_output_shape(ctx, node, 0, dims, 5);
}

void edge_eval_conv_3d(const edge_node_t *node, edge_ctx_t *ctx) {
    const c3_data_t *d = (const c3_data_t *)node->user_data;
    const edge_tensor_t *bt = edge_in(ctx, node, 2);
    const float *x = (const float *)edge_in(ctx, node, 0)->data, *wt = (const float *)edge_in(ctx, node, 1)->data;
    const float *bias = bt ? (const float *)bt->data : 0;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    const int32_t c = d->c, o = d->o;
    int32_t b, z, r, q, oc, fd, fy, fx, i, fd0, fd1, fy0, fy1, fx0, fx1;
    if (!EDGE_WITH_FLOAT32) return;
    for (b = 0; b < d->n; b++) {
        for (z = 0; z < d->od; z++) {
            const int32_t z0 = z * d->sd - d->pd;
            edge_conv_taps(z0, d->dd, d->d, d->kd, &fd0, &fd1);
            for (r = 0; r < d->oh; r++) {
                const int32_t r0 = r * d->sh - d->pt;
                edge_conv_taps(r0, d->dh, d->h, d->kh, &fy0, &fy1);
                for (q = 0; q < d->ow; q++) {
                    const int32_t q0 = q * d->sw - d->pl;
                    edge_conv_taps(q0, d->dw, d->w, d->kw, &fx0, &fx1);
                    for (oc = 0; oc < o; oc++) {
                        float total = 0.0f, v;
                        for (fd = fd0; fd < fd1; fd++) {
                            const int64_t iz = z0 + (int64_t)fd * d->dd;
                            for (fy = fy0; fy < fy1; fy++) {
                                const int64_t iy = r0 + (int64_t)fy * d->dh;
                                for (fx = fx0; fx < fx1; fx++) {
                                    const int64_t ix = q0 + (int64_t)fx * d->dw;
                                    const float *xp = x + ((((int64_t)b * d->d + iz) * d->h + iy) * d->w + ix) * c;
                                    const float *wp = wt + ((((int64_t)fd * d->kh + fy) * d->kw + fx) * c) * o + oc;
                                    for (i = 0; i < c; i++) total += xp[i] * wp[(int64_t)i * o];
                                }
                            }
                        }
                        v = total + (bias ? bias[oc] : 0.0f);
                        *y++ = v < d->lo ? d->lo : (v > d->hi ? d->hi : v);
                    }
                }
            }
        }
    }
}
