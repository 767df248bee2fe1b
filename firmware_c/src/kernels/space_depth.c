/* DEPTH_TO_SPACE and SPACE_TO_DEPTH on NHWC tensors, as edge_sdk/runtime/kernels/shape.py (TFLM's kernels):
 * block_size b from the options; DEPTH_TO_SPACE [n, h, w, b*b*c] -> [n, h*b, w*b, c] (output (y*b + by,
 * x*b + bx, k) = input (y, x, (by*b + bx)*c + k)), SPACE_TO_DEPTH the inverse. A byte copy of runs of c (or
 * b*c) elements: FLOAT32, INT8, UINT8, INT16, INT32, INT64.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(DEPTH_TO_SPACE, depth_to_space, 2, "FLOAT32 INT8 UINT8 INT16 INT32 INT64", "NHWC 4-D")
EDGE_KERNEL(SPACE_TO_DEPTH, space_to_depth, 2, "FLOAT32 INT8 UINT8 INT16 INT32 INT64", "NHWC 4-D")


static edge_status_t sd_setup(edge_node_t *node, edge_ctx_t *ctx, int32_t opts_type, int32_t *b) {
    const edge_tensor_t *x, *y;
    int t;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    t = x->type;
    if (t != EDGE_FLOAT32 && t != EDGE_INT8 && t != EDGE_UINT8 && t != EDGE_INT16 && t != EDGE_INT32 && t != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, INT8, UINT8, INT16, INT32, INT64");
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input");
    if (x->rank != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be 4-D");
    *b = node->options_type == opts_type ? edge_opt_int(node, 0, 4, 0) : 0;
    if (*b <= 0 || *b > 4096) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "block_size must be in 1..4096");
    return edge_type_built(ctx, x->type);
}

edge_status_t edge_prepare_depth_to_space(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x;
    int32_t b, shape[4];
    edge_status_t s;
    if ((s = sd_setup(node, ctx, EDGE_OPTS_DepthToSpaceOptions, &b)) != EDGE_OK) return s;
    x = edge_in(ctx, node, 0);
    if (x->dims[3] % (b * b)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "depth is not a multiple of block_size^2");
    if ((int64_t)x->dims[1] * b > 0x7fffffff || (int64_t)x->dims[2] * b > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_LIMIT, "output too large");
    shape[0] = x->dims[0];
    shape[1] = x->dims[1] * b;
    shape[2] = x->dims[2] * b;
    shape[3] = x->dims[3] / (b * b);
    return edge_set_output_shape(ctx, node, 0, shape, 4);
}

edge_status_t edge_prepare_space_to_depth(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x;
    int32_t b, shape[4];
    edge_status_t s;
    if ((s = sd_setup(node, ctx, EDGE_OPTS_SpaceToDepthOptions, &b)) != EDGE_OK) return s;
    x = edge_in(ctx, node, 0);
    if (x->dims[1] % b || x->dims[2] % b) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "height and width must be multiples of block_size");
    if ((int64_t)x->dims[3] * b * b > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_LIMIT, "output too large");
    shape[0] = x->dims[0];
    shape[1] = x->dims[1] / b;
    shape[2] = x->dims[2] / b;
    shape[3] = x->dims[3] * b * b;
    return edge_set_output_shape(ctx, node, 0, shape, 4);
}

/* The shared loop: the "space" tensor [n, H*b, W*b, c] against the "depth" tensor [n, H, W, b*b*c]. */
static void sd_move(uint8_t *space, uint8_t *depth, int32_t n, int32_t h, int32_t w, int32_t b, int32_t c,
                    uint32_t item, int to_space) {
    const size_t run = (size_t)c * item;
    int32_t bn, y, x, by, bx;
    for (bn = 0; bn < n; bn++)
        for (y = 0; y < h; y++)
            for (by = 0; by < b; by++)
                for (x = 0; x < w; x++)
                    for (bx = 0; bx < b; bx++) {
                        const size_t si = ((((size_t)bn * h + y) * b + by) * w * b + (size_t)x * b + bx) * run;
                        const size_t di = ((((size_t)bn * h + y) * w + x) * b * b + (size_t)by * b + bx) * run;
                        if (to_space) memcpy(space + si, depth + di, run);
                        else memcpy(depth + di, space + si, run);
                    }
}

void edge_eval_depth_to_space(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int32_t b = y->dims[1] / (x->dims[1] ? x->dims[1] : 1);
    if (!x->dims[1] || !y->bytes) return;
    sd_move((uint8_t *)y->data, (uint8_t *)x->data, x->dims[0], x->dims[1], x->dims[2], b, y->dims[3],
            edge_type_bytes(x->type), 1);
}

void edge_eval_space_to_depth(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int32_t b = x->dims[1] / (y->dims[1] ? y->dims[1] : 1);
    if (!y->dims[1] || !y->bytes) return;
    sd_move((uint8_t *)x->data, (uint8_t *)y->data, y->dims[0], y->dims[1], y->dims[2], b, x->dims[3],
            edge_type_bytes(x->type), 0);
}
