/* edge_index.h - what the data-movement kernels (CONCATENATION, PAD, SPLIT, STRIDED_SLICE, TRANSPOSE) share:
 * constant integer operands read at prepare (axes, paddings, begin/end/strides, perm) and the odometer that
 * walks a strided view of a tensor at eval.
 */
#ifndef EDGE_INDEX_H
#define EDGE_INDEX_H

#include <stdint.h>
#include <string.h>

#include "edge_kernel.h"

#define EDGE_INDEX_MAX_RANK 8

/* The element types a kernel that only moves bytes takes (FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL). */
static inline int edge_index_type_ok(int type) {
    return type == EDGE_FLOAT32 || type == EDGE_INT8 || type == EDGE_UINT8 || type == EDGE_INT16 ||
           type == EDGE_INT32 || type == EDGE_INT64 || type == EDGE_BOOL;
}

/* A constant INT16 / INT32 / INT64 operand (present). */
static inline int edge_const_ints_ok(const edge_tensor_t *t) {
    return t && t->is_const && (t->type == EDGE_INT32 || t->type == EDGE_INT64 || t->type == EDGE_INT16);
}

/* Value k of a constant integer operand (INT16 / INT32 / INT64), as int64 (INT64 data is only 4-aligned in
 * the model, so it is copied). */
static inline int64_t edge_const_int(const edge_tensor_t *t, int64_t k) {
    if (t->type == EDGE_INT64) {
        int64_t v;
        memcpy(&v, (const uint8_t *)t->data + 8 * k, 8);
        return v;
    }
    if (t->type == EDGE_INT16) return ((const int16_t *)t->data)[k];
    return ((const int32_t *)t->data)[k];
}

/* A one-value constant axis operand for a tensor of rank `rank` (ARG_MAX, ARG_MIN, CUMSUM, SPLIT, EXPAND_DIMS):
 * INT32 (or INT64 where `int64_ok`), a negative axis counts from the end; 0 <= axis < rank + extra (extra 1: an
 * axis to insert, as EXPAND_DIMS's). */
static inline edge_status_t edge_const_axis(edge_ctx_t *ctx, const edge_tensor_t *a, int32_t rank, int32_t extra,
                                            int int64_ok, int32_t *axis) {
    int64_t v;
    *axis = 0; /* defined on every path */
    if (a->type != EDGE_INT32 && !(int64_ok && a->type == EDGE_INT64))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, int64_ok ? "axis must be INT32 or INT64" : "axis must be INT32");
    if (!a->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "axis computed at run time");
    if (edge_tensor_elements(a) != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "axis must hold one value");
    v = edge_const_int(a, 0);
    if (v < 0) v += rank + extra;
    if (v < 0 || v >= rank + extra) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "axis out of range");
    *axis = (int32_t)v;
    return EDGE_OK;
}

/* One step of an odometer over dims[0..n): the last index moves first; *pos follows, step[k] elements per
 * unit of index k (signed), and returns to its start along a dimension that wraps. */
static inline void edge_odometer_next(int32_t *idx, const int32_t *dims, const int64_t *step, int32_t n,
                                      int64_t *pos) {
    int32_t k;
    for (k = n - 1; k >= 0; k--) {
        *pos += step[k];
        if (++idx[k] < dims[k]) return;
        *pos -= step[k] * dims[k];
        idx[k] = 0;
    }
}

/* dst[0..count) = the elements of src at base + the odometer's positions over dims[0..rank) with steps
 * step[] (elements of elem bytes; rank >= 1). The innermost dimension is a tight strided loop per element
 * size; 8-byte elements are copied with memcpy (a constant input is only 4-aligned in the model). */
#define EDGE_GATHER_ROWS(T)                                                                     \
    do {                                                                                        \
        const T *s = (const T *)src;                                                            \
        T *o = (T *)dst;                                                                        \
        for (done = 0; done < count; done += n) {                                               \
            for (i = 0; i < n; i++) o[i] = s[pos + i * s_in];                                   \
            o += n;                                                                             \
            edge_odometer_next(idx, dims, step, last, &pos);                                    \
        }                                                                                       \
    } while (0)

static inline void edge_strided_gather(const void *src, void *dst, int32_t elem, int64_t base, int32_t rank,
                                       const int32_t *dims, const int64_t *step, int64_t count) {
    const int32_t last = rank - 1, n = dims[last];
    const int64_t s_in = step[last];
    int32_t idx[EDGE_INDEX_MAX_RANK] = {0}, i;
    int64_t pos = base, done;
    if (count == 0) return;
    switch (elem) {
    case 1: EDGE_GATHER_ROWS(uint8_t); break;
    case 2: EDGE_GATHER_ROWS(uint16_t); break;
    case 4: EDGE_GATHER_ROWS(uint32_t); break;
    default: {
        const uint8_t *s = (const uint8_t *)src;
        uint8_t *o = (uint8_t *)dst;
        for (done = 0; done < count; done += n) {
            for (i = 0; i < n; i++) memcpy(o + 8 * i, s + 8 * (pos + i * s_in), 8);
            o += 8 * n;
            edge_odometer_next(idx, dims, step, last, &pos);
        }
        break;
    }
    }
}
#undef EDGE_GATHER_ROWS

#endif /* EDGE_INDEX_H */
