/* TRANSPOSE: y = x.transpose(perm) with a constant perm (edge_sdk/kernels/shape.py prepare_transpose, TFLM
 * transpose.cc). Prepare works out, for every output dimension, the input stride it walks; eval runs an
 * odometer over the output in order, the innermost dimension in a tight strided loop.
 */
#include <string.h>

#include "edge_kernel.h"

EDGE_KERNEL(TRANSPOSE, transpose, 6)

#define TRANSPOSE_MAX_RANK 8

typedef struct {
    int32_t rank;                          /* >= 1 (a scalar is one element) */
    int32_t elem;
    int32_t dims[TRANSPOSE_MAX_RANK];      /* output dims */
    int64_t stride[TRANSPOSE_MAX_RANK];    /* input elements per step along output dim k */
    int64_t count;                         /* output elements */
} transpose_data_t;

static int transpose_type_ok(int type) {
    switch (type) {
    case EDGE_FLOAT32: case EDGE_FLOAT16: case EDGE_INT8: case EDGE_UINT8: case EDGE_INT16: case EDGE_INT32:
    case EDGE_INT64: case EDGE_BOOL: case EDGE_UINT32: case EDGE_UINT16: return 1;
    default: return 0;
    }
}

static int64_t const_int(const edge_tensor_t *t, int64_t k) {
    if (t->type == EDGE_INT64) {
        int64_t v;
        memcpy(&v, (const uint8_t *)t->data + 8 * k, 8);
        return v;
    }
    if (t->type == EDGE_INT16) return ((const int16_t *)t->data)[k];
    return ((const int32_t *)t->data)[k];
}

edge_status_t edge_prepare_transpose(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *p, *y;
    transpose_data_t *d;
    int32_t k, rank, shape[TRANSPOSE_MAX_RANK], perm[TRANSPOSE_MAX_RANK], seen = 0;
    int64_t in_stride[TRANSPOSE_MAX_RANK];

    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    p = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !p) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE: input and perm are required");
    if (!transpose_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "TRANSPOSE: input type");
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE: output type differs from input");
    if (p->type != EDGE_INT32 && p->type != EDGE_INT64 && p->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE: perm type (INT32, INT64)");
    if (!p->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE: perm computed at run time");
    rank = x->rank;
    if (rank > TRANSPOSE_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE: rank above 8");
    if (edge_tensor_elements(p) != rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE: perm is not a permutation");
    for (k = 0; k < rank; k++) {
        int64_t v = const_int(p, k);
        if (v < 0 || v >= rank || (seen >> v) & 1)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE: perm is not a permutation");
        seen |= 1 << v;
        perm[k] = (int32_t)v;
        shape[k] = x->dims[v];
    }
    {
        edge_status_t s = edge_set_output_shape(ctx, node, 0, shape, rank);
        if (s != EDGE_OK) return s;
    }
    d = (transpose_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->elem = (int32_t)edge_type_bytes(x->type);
    d->count = edge_tensor_elements(x);
    if (rank == 0) {
        d->rank = 1;
        d->dims[0] = 1;
        d->stride[0] = 1;
        return EDGE_OK;
    }
    in_stride[rank - 1] = 1;
    for (k = rank - 2; k >= 0; k--) in_stride[k] = in_stride[k + 1] * x->dims[k + 1];
    d->rank = rank;
    for (k = 0; k < rank; k++) {
        d->dims[k] = shape[k];
        d->stride[k] = in_stride[perm[k]];
    }
    return EDGE_OK;
}

/* One element-size variant of the odometer: T is the element type (or a same-size carrier). */
#define TRANSPOSE_LOOP(T)                                                                        \
    do {                                                                                        \
        const T *src = (const T *)x->data;                                                      \
        T *dst = (T *)y->data;                                                                  \
        const int32_t last = d->rank - 1, n_in = d->dims[last];                                 \
        const int64_t s_in = d->stride[last];                                                   \
        int64_t pos = 0, done = 0;                                                              \
        while (done < d->count) {                                                               \
            int32_t i;                                                                          \
            for (i = 0; i < n_in; i++) dst[i] = src[pos + i * s_in];                            \
            dst += n_in;                                                                        \
            done += n_in;                                                                       \
            for (k = last - 1; k >= 0; k--) {                                                   \
                pos += d->stride[k];                                                            \
                if (++idx[k] < d->dims[k]) break;                                               \
                pos -= d->stride[k] * d->dims[k];                                               \
                idx[k] = 0;                                                                     \
            }                                                                                   \
        }                                                                                       \
    } while (0)

void edge_eval_transpose(const edge_node_t *node, edge_ctx_t *ctx) {
    const transpose_data_t *d = (const transpose_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    int32_t idx[TRANSPOSE_MAX_RANK] = {0};
    int32_t k;
    if (d->count == 0) return;
    switch (d->elem) {
    case 1: TRANSPOSE_LOOP(uint8_t); break;
    case 2: TRANSPOSE_LOOP(uint16_t); break;
    case 4: TRANSPOSE_LOOP(uint32_t); break;
    default: { /* 8-byte elements: a constant input is only 4-aligned in the model, so copy bytes */
        const uint8_t *src = (const uint8_t *)x->data;
        uint8_t *dst = (uint8_t *)y->data;
        int64_t pos = 0, done;
        for (done = 0; done < d->count; done++) {
            memcpy(dst, src + 8 * pos, 8);
            dst += 8;
            for (k = d->rank - 1; k >= 0; k--) {
                pos += d->stride[k];
                if (++idx[k] < d->dims[k]) break;
                pos -= d->stride[k] * d->dims[k];
                idx[k] = 0;
            }
        }
        break;
    }
    }
}
