/* edge_int4.h - INT4 weights (ai-edge-quantizer's 4-bit FULLY_CONNECTED / CONV_2D / DEPTHWISE_CONV_2D filters): two
 * values a byte, low nibble first, as TFLite packs them. A weighted kernel's prepare calls edge_int4_to_int8 on its
 * weights first: they are unpacked once into an int8 copy (edge_alloc_packed: reported as packed weights, not as
 * the arena) and the tensor then reads as INT8, so every INT8 path (int8, int16x8, LiteRT's hybrid) runs them with
 * the same arithmetic, as LiteRT's conv.cc / fully_connected.cc / depthwise_conv.cc unpack them before their int8
 * kernels. The tensor struct is reloaded from the model by every edge_init, so a re-prepare unpacks afresh.
 */
#ifndef EDGE_INT4_H
#define EDGE_INT4_H

#include <stdint.h>

#include "edge_kernel.h"

/* w INT4 [n values]: w->data -> n int8 values in [-8, 7], w->type INT8; any other type: untouched. */
static inline edge_status_t edge_int4_to_int8(edge_ctx_t *ctx, edge_tensor_t *w) {
    const uint8_t *packed;
    int8_t *values;
    int64_t n, k;
    if (!w || w->type != EDGE_INT4) return EDGE_OK;
    if (!w->is_const || w->is_sparse)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "INT4 weights must be constant and dense (LiteRT unpacks them)");
    n = edge_tensor_elements(w);
    if (n < 0 || (int64_t)w->bytes < (n + 1) / 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "INT4 weights: too few bytes");
    values = (int8_t *)edge_alloc_packed(ctx, (size_t)(n ? n : 1));
    if (!values) return EDGE_ARENA_TOO_SMALL;
    packed = (const uint8_t *)w->data;
    for (k = 0; k < n; k++) {
        const int32_t nibble = (k & 1) ? packed[k >> 1] >> 4 : packed[k >> 1] & 15;
        values[k] = (int8_t)((nibble ^ 8) - 8); /* sign-extend 4 bits */
    }
    w->data = values;
    w->type = EDGE_INT8;
    w->bytes = (uint32_t)n;
    return EDGE_OK;
}

#endif
