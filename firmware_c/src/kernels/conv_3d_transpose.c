/* CONV_3D_TRANSPOSE, float32, as LiteRT's reference kernel (edge_sdk/runtime/kernels/conv_3d_transpose.py):
 * inputs output_shape (constant INT32 [5]: N, D, H, W, O), filter [kd, kh, kw, O, C], input [N, D', H', W', C],
 * optional bias [O]; output [N, D, H, W, O]. Conv3DOptions as CONV_3D's (conv_3d.c: slots 0 padding, 1 stride_d,
 * 2 stride_w, 3 stride_h, 4 fused activation, 5 dilation_d, 6 dilation_w, 7 dilation_h). The geometry is
 * CONV_3D's from the output to the input (edge_conv_window over each output dimension must give the input's
 * size; its padding-before places input cell 0 at -pad). The output is zeroed, each input cell scatters
 * input x filter into the output cells its taps reach, in the reference's loop order (batch, input d, h, w,
 * input channel, tap d, h, w, output channel), then the bias and the activation clamp. */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_conv.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(CONV_3D_TRANSPOSE, conv_3d_transpose, 1, "input 2: FLOAT32", "constant output_shape; NDHWC; float32 only")

typedef edge_conv3d_t c3t_data_t; /* edge_conv.h: input dims, output channels, taps */

edge_status_t edge_prepare_conv_3d_transpose(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *shape, *w, *in, *bias, *out;
    c3t_data_t *d;
    int32_t padding = EDGE_PAD_SAME, dims[5], k, got_d, got_h, got_w;
    edge_status_t s;
    if (node->n_inputs < 3 || node->n_inputs > 4 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONV_3D_TRANSPOSE expects 3..4 inputs and 1 output");
    shape = edge_in(ctx, node, 0);
    w = edge_in(ctx, node, 1);
    in = edge_in(ctx, node, 2);
    bias = edge_in(ctx, node, 3);
    out = edge_out(ctx, node, 0);
    if (!shape || !w || !in) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_shape, filter and input are required");
    if (shape->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output_shape must be INT32");
    if (!shape->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "output_shape computed at run time");
    if (shape->rank != 1 || shape->dims[0] != 5) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_shape must hold 5 values");
    d = (c3t_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    if ((s = edge_conv3d_prepare(ctx, node, in, w, bias, out, d, &padding)) != EDGE_OK) return s;
    if (w->dims[4] != in->dims[4]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "filter input depth differs from the input depth");
    for (k = 0; k < 5; k++) {
        dims[k] = ((const int32_t *)shape->data)[k];
        if (dims[k] < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_shape has a negative dimension");
    }
    if (dims[0] != in->dims[0] || dims[4] != w->dims[3])
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_shape must hold the input's batch and the filter's output channels");
    if (bias && edge_tensor_elements(bias) != w->dims[3])
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "bias needs one value per output channel");
    d->o = w->dims[3];
    d->od = dims[1];
    d->oh = dims[2];
    d->ow = dims[3];
    if (edge_conv_window(padding, d->sd, d->dd, d->od, d->kd, &got_d, &d->pd) ||
        edge_conv_window(padding, d->sh, d->dh, d->oh, d->kh, &got_h, &d->pt) ||
        edge_conv_window(padding, d->sw, d->dw, d->ow, d->kw, &got_w, &d->pl))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "padding, strides or window do not fit the output shape");
    if (got_d != d->d || got_h != d->h || got_w != d->w)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output_shape does not give the input's shape by the strides and padding");
    return edge_set_output_shape(ctx, node, 0, dims, 5);
}

void edge_eval_conv_3d_transpose(const edge_node_t *node, edge_ctx_t *ctx) {
    const c3t_data_t *d = (const c3t_data_t *)node->user_data;
    const edge_tensor_t *bt = edge_in(ctx, node, 3);
    const float *wt = (const float *)edge_in(ctx, node, 1)->data, *x = (const float *)edge_in(ctx, node, 2)->data;
    const float *bias = bt ? (const float *)bt->data : 0;
    edge_tensor_t *yt = edge_out(ctx, node, 0);
    float *y = (float *)yt->data;
    const int64_t cells = edge_tensor_elements(yt);
    const int32_t c = d->c, o = d->o;
    int32_t b, z, r, q, ic, fd, fy, fx, oc;
    int64_t i;
    if (!EDGE_WITH_FLOAT32) return;
    memset(y, 0, (size_t)cells * sizeof(float));
    for (b = 0; b < d->n; b++)
        for (z = 0; z < d->d; z++)
            for (r = 0; r < d->h; r++)
                for (q = 0; q < d->w; q++)
                    for (ic = 0; ic < c; ic++) {
                        const float v = x[((((int64_t)b * d->d + z) * d->h + r) * d->w + q) * c + ic];
                        for (fd = 0; fd < d->kd; fd++) {
                            const int64_t oz = (int64_t)z * d->sd - d->pd + (int64_t)fd * d->dd;
                            if (oz < 0 || oz >= d->od) continue;
                            for (fy = 0; fy < d->kh; fy++) {
                                const int64_t oy = (int64_t)r * d->sh - d->pt + (int64_t)fy * d->dh;
                                if (oy < 0 || oy >= d->oh) continue;
                                for (fx = 0; fx < d->kw; fx++) {
                                    const int64_t ox = (int64_t)q * d->sw - d->pl + (int64_t)fx * d->dw;
                                    float *yp;
                                    const float *wp;
                                    if (ox < 0 || ox >= d->ow) continue;
                                    yp = y + ((((int64_t)b * d->od + oz) * d->oh + oy) * d->ow + ox) * o;
                                    wp = wt + (((int64_t)fd * d->kh + fy) * d->kw + fx) * o * c + ic;
                                    for (oc = 0; oc < o; oc++) yp[oc] += v * wp[(int64_t)oc * c];
                                }
                            }
                        }
                    }
    for (i = 0; i < cells; i++) {
        const float v = y[i] + (bias ? bias[i % o] : 0.0f);
        y[i] = v < d->lo ? d->lo : (v > d->hi ? d->hi : v);
    }
}
