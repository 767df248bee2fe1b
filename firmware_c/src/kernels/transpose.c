/* TRANSPOSE: y = x.transpose(perm) with a constant perm (edge_sdk/runtime/kernels/shape.py prepare_transpose, TFLM
 * transpose.cc). Prepare works out, for every output dimension, the input stride it walks, drops dimensions of
 * one and merges neighbours that stay contiguous (NCHW -> NHWC becomes [H * W, C] with input strides
 * [1, H * W]). Eval then takes the cheapest of: the innermost output dimension contiguous in the input too
 * (rows of it block-copied); a 2-D transpose, a batch of them (the input read in order, column by column of
 * the output); else an odometer over the output in order, the innermost dimension in a tight strided loop. A DSP
 * build (the Cortex-M4 / M7) copies the rows of up to three merged dims in words (transpose_rows_dsp).
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(TRANSPOSE, transpose, 9, "FLOAT32 FLOAT16 INT8 UINT8 INT16 INT32 INT64 BOOL UINT32 UINT16", "")

typedef struct {
    int32_t rank;                          /* >= 1 (a scalar is one element) */
    int32_t elem;
    int32_t dims[EDGE_INDEX_MAX_RANK];     /* output dims */
    int64_t stride[EDGE_INDEX_MAX_RANK];   /* input elements per step along output dim k */
    int64_t count;                         /* output elements */
    /* the merged form: dims / stride with size-1 dimensions dropped and contiguous neighbours merged */
    int32_t mrank;
    int32_t mdims[EDGE_INDEX_MAX_RANK];
    int64_t mstride[EDGE_INDEX_MAX_RANK];
} transpose_data_t;

static int transpose_type_ok(int type) {
    switch (type) {
    case EDGE_FLOAT32: case EDGE_FLOAT16: case EDGE_INT8: case EDGE_UINT8: case EDGE_INT16: case EDGE_INT32:
    case EDGE_INT64: case EDGE_BOOL: case EDGE_UINT32: case EDGE_UINT16: return 1;
    default: return 0;
    }
}

edge_status_t edge_prepare_transpose(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *p, *y;
    transpose_data_t *d;
    int32_t k, rank, shape[EDGE_INDEX_MAX_RANK], perm[EDGE_INDEX_MAX_RANK], seen = 0;
    int64_t in_stride[EDGE_INDEX_MAX_RANK];

    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    p = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !p) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE: input and perm are required");
    if (!transpose_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "TRANSPOSE: input type");
    if (edge_type_built(ctx, x->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE: output type differs from input");
    if (p->type != EDGE_INT32 && p->type != EDGE_INT64 && p->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE: perm type (INT32, INT64)");
    if (!p->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE: perm computed at run time");
    rank = x->rank;
    if (rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "TRANSPOSE: rank above 8");
    if (edge_tensor_elements(p) != rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TRANSPOSE: perm is not a permutation");
    for (k = 0; k < rank; k++) {
        int64_t v = edge_const_int(p, k);
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
    d->mrank = 0;
    for (k = 0; k < rank; k++) {
        if (d->dims[k] == 1) continue;
        if (d->mrank > 0 && d->mstride[d->mrank - 1] == d->stride[k] * d->dims[k]) { /* contiguous: merge */
            d->mdims[d->mrank - 1] *= d->dims[k];
            d->mstride[d->mrank - 1] = d->stride[k];
            continue;
        }
        d->mdims[d->mrank] = d->dims[k];
        d->mstride[d->mrank++] = d->stride[k];
    }
    if (d->mrank == 0 || d->count == 0) { /* one element (or none): one row */
        d->mrank = 1;
        d->mdims[0] = (int32_t)d->count;
        d->mstride[0] = 1;
    }
    return EDGE_OK;
}

/* Output [b][r][c] = input [b][c][r] (c < cols, r < rows, batches b): the input read in order, each output
 * column written with a stride of cols elements. */
#define TRANSPOSE_COLUMNS(T)                                                                                     do {                                                                                                             const T *s = (const T *)src;                                                                                 T *o = (T *)dst;                                                                                             for (b = 0; b < batches; b++, o += (int64_t)rows * cols)                                                         for (c = 0; c < cols; c++) {                                                                                     T *oc = o + c;                                                                                               for (r = 0; r < rows; r++, oc += cols) *oc = *s++;                                                       }                                                                                                    } while (0)

static void transpose_columns(const void *src, void *dst, int32_t elem, int32_t batches, int32_t rows,
                              int32_t cols) {
    int32_t b, r, c;
    switch (elem) {
    case 1:
#if defined(__GNUC__) && defined(__ARM_FEATURE_UNALIGNED) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
    {   /* four inputs per word load (v7-M loads words at any address), stored one byte each */
        typedef uint32_t __attribute__((aligned(1), may_alias)) word_t;
        const uint8_t *s = (const uint8_t *)src;
        uint8_t *o = (uint8_t *)dst;
        for (b = 0; b < batches; b++, o += (int64_t)rows * cols)
            for (c = 0; c < cols; c++) {
                uint8_t *oc = o + c;
                for (r = 0; r + 4 <= rows; r += 4, s += 4, oc += 4 * cols) {
                    const uint32_t v = *(const word_t *)(const void *)s;
                    oc[0] = (uint8_t)v;
                    oc[cols] = (uint8_t)(v >> 8);
                    oc[2 * cols] = (uint8_t)(v >> 16);
                    oc[3 * cols] = (uint8_t)(v >> 24);
                }
                for (; r < rows; r++, oc += cols) *oc = *s++;
            }
        break;
    }
#else
        TRANSPOSE_COLUMNS(uint8_t);
        break;
#endif
    case 2: TRANSPOSE_COLUMNS(uint16_t); break;
    case 4: TRANSPOSE_COLUMNS(uint32_t); break;
    default: break; /* (8-byte elements take the odometer) */
    }
}
#undef TRANSPOSE_COLUMNS

#if EDGE_DSP
/* The block copies of up to three merged dims on the M4 ([T, H, dh] -> [H, T, dh], an attention head split: T * H
 * rows of dh bytes): two plain loops over the outer dims in place of the 64-bit odometer, each row copied in
 * words (v7E-M loads and stores words at any address) -- the odometer and a memcpy call were ~140 instructions
 * a 16-byte row. */
static void transpose_rows_dsp(const transpose_data_t *d, const uint8_t *src, uint8_t *o) {
    const int32_t r = d->mrank, bytes = d->mdims[r - 1] * d->elem;
    const int32_t n0 = r == 3 ? d->mdims[0] : 1, n1 = r >= 2 ? d->mdims[r - 2] : 1;
    const int32_t s0 = r == 3 ? (int32_t)d->mstride[0] * d->elem : 0;
    const int32_t s1 = r >= 2 ? (int32_t)d->mstride[r - 2] * d->elem : 0;
    int32_t i, j, k;
    for (i = 0; i < n0; i++)
        for (j = 0; j < n1; j++, o += bytes) {
            const uint8_t *row = src + i * s0 + j * s1;
            for (k = 0; k + 4 <= bytes; k += 4) edge_put32(o + k, edge_get32(row + k));
            for (; k < bytes; k++) o[k] = row[k];
        }
}
#endif

void edge_eval_transpose(const edge_node_t *node, edge_ctx_t *ctx) {
    const transpose_data_t *d = (const transpose_data_t *)node->user_data;
    const void *src = edge_in(ctx, node, 0)->data;
    void *dst = edge_out(ctx, node, 0)->data;
    const int32_t r = d->mrank, last = d->mrank - 1;
    if (d->count == 0) return;
    if (d->mstride[last] == 1) { /* rows of mdims[last] elements contiguous in both: block copies */
        const size_t row = (size_t)d->mdims[last] * (size_t)d->elem;
        int32_t idx[EDGE_INDEX_MAX_RANK] = {0};
        int64_t pos = 0, k;
        uint8_t *o = (uint8_t *)dst;
#if EDGE_DSP
        if (r <= 3 && d->count * d->elem <= 0x7fffffff) { /* int32 offsets */
            transpose_rows_dsp(d, (const uint8_t *)src, o);
            return;
        }
#endif
        for (k = 0; k < d->count / d->mdims[last]; k++, o += row) {
            memcpy(o, (const uint8_t *)src + pos * d->elem, row);
            edge_odometer_next(idx, d->mdims, d->mstride, last, &pos);
        }
        return;
    }
    /* [rows, cols] with input strides [1, rows], or [batches, rows, cols] with [rows * cols, 1, rows] */
    if (d->elem != 8 && r >= 2 && r <= 3 && d->mstride[r - 2] == 1 && d->mstride[last] == d->mdims[r - 2] &&
        (r == 2 || d->mstride[0] == (int64_t)d->mdims[1] * d->mdims[2])) {
        transpose_columns(src, dst, d->elem, r == 3 ? d->mdims[0] : 1, d->mdims[r - 2], d->mdims[last]);
        return;
    }
    edge_strided_gather(src, dst, d->elem, 0, r, d->mdims, d->mstride, d->count);
}
