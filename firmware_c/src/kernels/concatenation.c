/* CONCATENATION: inputs joined along one axis (edge_sdk/runtime/kernels/shape.py prepare_concatenation, TFLM
 * concatenation.cc). A pure byte copy: for each index of the dimensions before the axis, every input's
 * contiguous block in turn. int8/uint8 inputs must carry the output's quantization (TFLM does not
 * requantize), int16 tensors zero point 0; no fused activation.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(CONCATENATION, concatenation, 7, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "")

#define CONCAT_OPTS 10 /* ConcatenationOptions: 0 axis, 1 fused_activation_function */

typedef struct {
    int32_t n_inputs;
    int64_t outer;          /* product of the dimensions before the axis */
    uint32_t *block;        /* bytes of input i per outer index */
} concat_data_t;

static int same_quantization(const edge_tensor_t *a, const edge_tensor_t *b) {
    if (!a->quantized && !b->quantized) return 1;
    if (a->quantized != b->quantized) return 0;
    return a->scale == b->scale && a->zero_point == b->zero_point;
}

edge_status_t edge_prepare_concatenation(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == CONCAT_OPTS;
    const int32_t axis_opt = has_opts ? edge_opt_int(node, 0, 4, 0) : 0;
    const int32_t act = has_opts ? edge_opt_int(node, 1, 1, 0) : 0;
    edge_tensor_t *x0, *y;
    concat_data_t *d;
    int32_t i, k, rank, axis, shape[8];
    int64_t inner = 1;

    if (node->n_inputs < 1 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONCATENATION expects inputs and 1 output");
    x0 = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    for (i = 0; i < node->n_inputs; i++)
        if (!edge_in(ctx, node, i)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONCATENATION: an input is omitted");
    if (!edge_index_type_ok(x0->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "CONCATENATION: input type");
    if (edge_type_built(ctx, x0->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    for (i = 0; i < node->n_inputs; i++)
        if (edge_in(ctx, node, i)->type != x0->type)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONCATENATION: inputs differ in type");
    if (y->type != x0->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONCATENATION: output type differs from input");
    if (act != EDGE_ACT_NONE) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "CONCATENATION: fused activation (TFLM: NONE only)");
    if (x0->type == EDGE_INT8 || x0->type == EDGE_UINT8) {
        for (i = 0; i < node->n_inputs; i++)
            if (!same_quantization(edge_in(ctx, node, i), y))
                return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "CONCATENATION: an input is quantized differently from the output");
    }
    if (x0->type == EDGE_INT16) {
        for (i = 0; i <= node->n_inputs; i++) {
            const edge_tensor_t *t = i < node->n_inputs ? edge_in(ctx, node, i) : y;
            if (t->quantized && t->zero_point != 0)
                return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "CONCATENATION: int16 zero point must be 0");
        }
    }
    rank = x0->rank;
    if (rank > 8) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "CONCATENATION: rank above 8");
    axis = axis_opt < 0 ? axis_opt + rank : axis_opt;
    if (axis < 0 || axis >= rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONCATENATION: axis out of range");
    for (k = 0; k < rank; k++) shape[k] = x0->dims[k];
    for (i = 1; i < node->n_inputs; i++) {
        const edge_tensor_t *x = edge_in(ctx, node, i);
        if (x->rank != rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONCATENATION: inputs differ in rank");
        for (k = 0; k < rank; k++)
            if (k != axis && x->dims[k] != shape[k])
                return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CONCATENATION: input shapes differ off the axis");
        if ((int64_t)shape[axis] + x->dims[axis] > 0x7fffffff)
            return EDGE_FAIL(ctx, EDGE_LIMIT, "CONCATENATION: output dimension too large");
        shape[axis] += x->dims[axis];
    }
    {
        edge_status_t s = edge_set_output_shape(ctx, node, 0, shape, rank);
        if (s != EDGE_OK) return s;
    }
    d = (concat_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->block = (uint32_t *)edge_alloc_persistent(ctx, sizeof(uint32_t) * (size_t)node->n_inputs);
    if (!d->block) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->n_inputs = node->n_inputs;
    d->outer = 1;
    for (k = 0; k < axis; k++) d->outer *= shape[k];
    for (k = axis + 1; k < rank; k++) inner *= shape[k];
    inner *= edge_type_bytes(x0->type);
    for (i = 0; i < node->n_inputs; i++)
        d->block[i] = (uint32_t)(inner * edge_in(ctx, node, i)->dims[axis]); /* <= the output's bytes */
    return EDGE_OK;
}

/* Blocks under this many bytes whose size is a multiple of 4, between word-aligned tensors, go word by word in
 * line: a channel concatenation of few channels copies a block of 4-16 bytes per pixel and input, where a call
 * per block cost more than the copy (a U-Net decoder stand-in, 8 + 8 channels: 2.12x -> 0.95x TFLM + CMSIS-NN
 * per node on the M4). */
#define CONCAT_SMALL_BLOCK 64
#define CONCAT_LOCAL_INPUTS 8 /* inputs whose source pointers eval keeps in registers / on the stack */

/* One input's block: dst and *src advance past it. */
static inline uint8_t *concat_block(uint8_t *dst, const uint8_t **src, uint32_t bytes, int words) {
    if (words && bytes < CONCAT_SMALL_BLOCK) {
        const uint8_t *s = *src;
        uint32_t k;
        for (k = 0; k < bytes; k += 4) {
            uint32_t v;
            memcpy(&v, s + k, 4); /* one word load / store: the pointers are word aligned, the sizes multiples */
            memcpy(dst + k, &v, 4);
        }
    } else {
        edge_copy_bytes(dst, *src, bytes); /* a block copy (edge_dsp.h) */
    }
    *src += bytes;
    return dst + bytes;
}

void edge_eval_concatenation(const edge_node_t *node, edge_ctx_t *ctx) {
    const concat_data_t *d = (const concat_data_t *)node->user_data;
    uint8_t *dst = (uint8_t *)edge_out(ctx, node, 0)->data;
    int64_t o;
    int32_t i;
    if (d->n_inputs <= CONCAT_LOCAL_INPUTS) { /* each input's source walks its blocks: no index arithmetic */
        const uint8_t *src[CONCAT_LOCAL_INPUTS];
        uintptr_t align = (uintptr_t)dst; /* word copies: every pointer and block size a multiple of 4 */
        int words;
        for (i = 0; i < d->n_inputs; i++) {
            src[i] = (const uint8_t *)edge_in(ctx, node, i)->data;
            align |= (uintptr_t)src[i] | d->block[i];
        }
        words = (align & 3u) == 0;
        for (o = 0; o < d->outer; o++)
            for (i = 0; i < d->n_inputs; i++) dst = concat_block(dst, &src[i], d->block[i], words);
        return;
    }
    for (o = 0; o < d->outer; o++)
        for (i = 0; i < d->n_inputs; i++) {
            const uint8_t *src = (const uint8_t *)edge_in(ctx, node, i)->data + o * d->block[i];
            edge_copy_bytes(dst, src, d->block[i]); /* a block copy (edge_dsp.h) */
            dst += d->block[i];
        }
}
