/* MediaPipe's Convolution2DTransposeBias (mediapipe/util/tflite/operations/transpose_conv_bias.cc), float32:
 * TRANSPOSE_CONV with a bias and the output shape computed from the input. Inputs x [N, H, W, Cin], weights
 * [Cout, kh, kw, Cin], bias [Cout]; custom options are TfLiteTransposeConvParams' raw bytes (int32 padding:
 * 1 SAME, 2 VALID; int32 stride_width; int32 stride_height). Output [N, s_h (H - 1) + kh - pad_h,
 * s_w (W - 1) + kw - pad_w, Cout], SAME pad_total = max(0, k - (in - 1) % s - 1), offset pad_total / 2.
 * Eval is MediaPipe's reference loop: the output starts as the bias, every input value scatters its products
 * into the outputs it reaches (in_y, in_x, in_c, filter_y, filter_x, out_c order), so the float sums are
 * MediaPipe's. edge_sdk/runtime/kernels/mediapipe.py is the Python twin (a matmul order: within 1e-5).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_CUSTOM_KERNEL("Convolution2DTransposeBias", transpose_conv_bias, 1, "FLOAT32", "")

typedef struct {
    int32_t stride_w, stride_h, pad_w, pad_h;
} tcb_data_t;

edge_status_t edge_prepare_transpose_conv_bias(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *w, *b, *y;
    const uint8_t *raw;
    uint32_t len = 0;
    int32_t p[3], shape[4], ph = 0, pw = 0, k;
    tcb_data_t *d;
    edge_status_t s;
    if (node->n_inputs != 3 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 3 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    w = edge_in(ctx, node, 1);
    b = edge_in(ctx, node, 2);
    y = edge_out(ctx, node, 0);
    if (!x || !w || !b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input, weights and bias are required");
    if (x->type != EDGE_FLOAT32 || w->type != EDGE_FLOAT32 || b->type != EDGE_FLOAT32 || y->type != EDGE_FLOAT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32 only (as MediaPipe's)");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (x->rank != 4 || w->rank != 4 || b->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input, weights, bias must be 4-D, 4-D, 1-D");
    if (w->is_sparse) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "sparse weights");
    if (w->dims[3] != x->dims[3]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "weights' input channels differ from the input's");
    if (b->dims[0] != w->dims[0]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "bias size differs from the output channels");
    for (k = 1; k < 3; k++)
        if (x->dims[k] <= 0 || w->dims[k] <= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "empty input or filter");
    raw = edge_custom_options(ctx, node, &len);
    if (!raw || len < 12) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "custom options must hold TfLiteTransposeConvParams (12 bytes)");
    memcpy(p, raw, sizeof p);
    if (p[0] != 1 && p[0] != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "padding must be 1 (SAME) or 2 (VALID)");
    if (p[1] <= 0 || p[2] <= 0 || p[1] > (1 << 16) || p[2] > (1 << 16)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "strides must be in 1..65536");
    if (x->dims[1] > (1 << 16) || x->dims[2] > (1 << 16) || w->dims[1] > (1 << 16) || w->dims[2] > (1 << 16))
        return EDGE_FAIL(ctx, EDGE_LIMIT, "a side above 65536");
    if (p[0] == 1) {
        ph = w->dims[1] - (x->dims[1] - 1) % p[2] - 1;
        pw = w->dims[2] - (x->dims[2] - 1) % p[1] - 1;
        if (ph < 0) ph = 0;
        if (pw < 0) pw = 0;
    }
    d = (tcb_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->stride_w = p[1];
    d->stride_h = p[2];
    d->pad_h = ph / 2;
    d->pad_w = pw / 2;
    node->user_data = d;
    shape[0] = x->dims[0];
    shape[1] = (int32_t)((int64_t)p[2] * (x->dims[1] - 1) + w->dims[1] - ph);
    shape[2] = (int32_t)((int64_t)p[1] * (x->dims[2] - 1) + w->dims[2] - pw);
    shape[3] = w->dims[0];
    if ((int64_t)p[2] * (x->dims[1] - 1) > (1 << 30) || (int64_t)p[1] * (x->dims[2] - 1) > (1 << 30))
        return EDGE_FAIL(ctx, EDGE_LIMIT, "output side too large");
    return edge_set_output_shape(ctx, node, 0, shape, 4);
}

void edge_eval_transpose_conv_bias(const edge_node_t *node, edge_ctx_t *ctx) {
    const tcb_data_t *d = (const tcb_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0), *w = edge_in(ctx, node, 1), *b = edge_in(ctx, node, 2);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const float *in = (const float *)x->data, *filt = (const float *)w->data, *bias = (const float *)b->data;
    float *out = (float *)y->data;
    const int32_t n = x->dims[0], ih = x->dims[1], iw = x->dims[2], ic = x->dims[3];
    const int32_t oc = w->dims[0], kh = w->dims[1], kw = w->dims[2];
    const int32_t oh = y->dims[1], ow = y->dims[2];
    int32_t bt, iy, ix, c, fy, fx, o;
    if (!EDGE_WITH_FLOAT32) return;
    for (bt = 0; bt < n; bt++) {
        float *ob = out + (size_t)bt * oh * ow * oc;
        const float *ib = in + (size_t)bt * ih * iw * ic;
        int64_t px;
        for (px = 0; px < (int64_t)oh * ow; px++) memcpy(ob + px * oc, bias, sizeof(float) * (size_t)oc);
        for (iy = 0; iy < ih; iy++)
            for (ix = 0; ix < iw; ix++)
                for (c = 0; c < ic; c++) {
                    const float v = ib[((size_t)iy * iw + ix) * ic + c];
                    const int32_t ox0 = ix * d->stride_w - d->pad_w, oy0 = iy * d->stride_h - d->pad_h;
                    for (fy = 0; fy < kh; fy++) {
                        const int32_t oy = oy0 + fy;
                        if (oy < 0 || oy >= oh) continue;
                        for (fx = 0; fx < kw; fx++) {
                            const int32_t ox = ox0 + fx;
                            float *dst;
                            if (ox < 0 || ox >= ow) continue;
                            dst = ob + ((size_t)oy * ow + ox) * oc;
                            for (o = 0; o < oc; o++) dst[o] += v * filt[(((size_t)o * kh + fy) * kw + fx) * ic + c];
                        }
                    }
                }
    }
}
