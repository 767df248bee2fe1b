/* MIRROR_PAD, as edge_sdk/runtime/kernels/math.py prepare_mirror_pad (numpy's pad 'reflect' / 'symmetric'):
 * constant INT32 / INT64 paddings [rank, 2]; REFLECT (mode 0: the edge is not repeated, pads below the
 * dimension) or SYMMETRIC (mode 1: the edge repeated, pads up to the dimension). Prepare builds, per output
 * dimension, the input index of every output index (persistent); eval walks the output with an odometer.
 * Types: FLOAT32, FLOAT16, INT8, UINT8, INT16, INT32, INT64, BOOL, UINT32, UINT16.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(MIRROR_PAD, mirror_pad, 3, "FLOAT32 FLOAT16 INT8 UINT8 INT16 INT32 INT64 BOOL UINT32 UINT16", "")


typedef struct {
    int32_t rank;
    int32_t dims[EDGE_INDEX_MAX_RANK];
    int64_t stride[EDGE_INDEX_MAX_RANK];
    int32_t *map[EDGE_INDEX_MAX_RANK]; /* output index -> input index, per dimension */
} mpad_data_t;

static int mpad_type(int t) {
    return t == EDGE_FLOAT32 || t == EDGE_FLOAT16 || t == EDGE_INT8 || t == EDGE_UINT8 || t == EDGE_INT16 ||
           t == EDGE_INT32 || t == EDGE_INT64 || t == EDGE_BOOL || t == EDGE_UINT32 || t == EDGE_UINT16;
}

edge_status_t edge_prepare_mirror_pad(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *p, *y;
    mpad_data_t *d;
    int32_t k, mode, shape[EDGE_INDEX_MAX_RANK];
    int64_t stride = 1, total = 1;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    p = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !p) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and paddings are required");
    if (!mpad_type(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "input type");
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (p->type != EDGE_INT32 && p->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "paddings must be INT32 or INT64");
    if (!p->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "paddings computed at run time");
    if (x->rank < 1 || x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_LIMIT, "input rank must be 1..8");
    if (edge_tensor_elements(p) != 2 * (int64_t)x->rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "paddings do not match the input rank");
    mode = node->options_type == EDGE_OPTS_MirrorPadOptions ? edge_opt_int(node, 0, 1, 0) : 0;
    if (mode != 0 && mode != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "unknown mirror pad mode");
    d = (mpad_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->rank = x->rank;
    for (k = x->rank - 1; k >= 0; k--) {
        const int64_t lo = edge_const_int(p, 2 * k), hi = edge_const_int(p, 2 * k + 1), n = x->dims[k];
        int64_t o;
        if (lo < 0 || hi < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "negative paddings");
        if (lo > n - (mode == 0) || hi > n - (mode == 0)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "paddings exceed what the mode allows");
        total *= n + lo + hi;
        if (total > ((int64_t)1 << 31)) return EDGE_FAIL(ctx, EDGE_LIMIT, "output too large");
        shape[k] = (int32_t)(n + lo + hi);
        d->dims[k] = shape[k];
        d->stride[k] = stride;
        stride *= n;
        d->map[k] = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)(shape[k] ? shape[k] : 1));
        if (!d->map[k]) return EDGE_ARENA_TOO_SMALL;
        for (o = 0; o < shape[k]; o++) {
            int64_t i = o - lo;
            if (i < 0) i = mode == 0 ? -i : -i - 1;
            else if (i >= n) i = mode == 0 ? 2 * n - 2 - i : 2 * n - 1 - i;
            d->map[k][o] = (int32_t)i;
        }
    }
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, shape, x->rank);
}

void edge_eval_mirror_pad(const edge_node_t *node, edge_ctx_t *ctx) {
    const mpad_data_t *d = (const mpad_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const uint32_t item = edge_type_bytes(x->type);
    const int32_t last = d->rank - 1, n = d->dims[last];
    const int32_t *lmap = d->map[last];
    const int64_t lstride = d->stride[last];
    const uint8_t *src = (const uint8_t *)x->data;
    uint8_t *out = (uint8_t *)y->data;
    int32_t idx[EDGE_INDEX_MAX_RANK] = {0}, k, i;
    int64_t done, count = y->bytes / item, base;
    if (count == 0) return;
    for (done = 0; done < count; done += n) {
        base = 0;
        for (k = 0; k < last; k++) base += d->map[k][idx[k]] * d->stride[k];
        for (i = 0; i < n; i++) memcpy(out + (size_t)i * item, src + (size_t)(base + lmap[i] * lstride) * item, item);
        out += (size_t)n * item;
        for (k = last - 1; k >= 0; k--) {
            if (++idx[k] < d->dims[k]) break;
            idx[k] = 0;
        }
    }
}
