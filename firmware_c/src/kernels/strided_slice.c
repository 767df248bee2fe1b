/* STRIDED_SLICE with constant begin/end/strides and all five masks plus the offset flag, read as LiteRT's
 * reference kernel reads them (edge_sdk/runtime/kernels/shape.py _strided_slice_plan; TFLM strided_slice.cc is the
 * same without ellipsis/new-axis). Prepare resolves every (effective) dimension to start, step and count,
 * drops the dimensions that take one element, folds the rest into input strides and merges each dimension into
 * the one outside it where they step through the input as one (a ring buffer's [1, T + 1, 1, C] -> [1, T, 1, C]:
 * one run of T * C elements). Eval copies a run of contiguous elements (innermost step 1) as one block per outer
 * index (edge_copy_bytes: hey_jarvis's 1,200-byte slice 8,200 -> ~600 instructions on the M4), other slices by the
 * odometer gather over the output in order.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_dsp.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(STRIDED_SLICE, strided_slice, 8, "FLOAT32 INT8 UINT8 INT16 INT32 INT64 BOOL", "")

#define SS_OPTS 32 /* StridedSliceOptions: 0 begin_mask, 1 end_mask, 2 ellipsis_mask, 3 new_axis_mask,
                      4 shrink_axis_mask, 5 offset */

typedef struct {
    int16_t rank;                 /* odometer dimensions (>= 1, <= EDGE_INDEX_MAX_RANK) */
    int16_t elem;                 /* bytes of an element (<= 8); halves, so that run_bytes packs before base */
    uint32_t run_bytes;           /* innermost step 1: bytes of one contiguous run (dims[rank - 1] elements),
                                   * copied as a block per outer index; 0: the odometer gather */
    int64_t base;                 /* input element of the first output element */
    int64_t count;                /* output elements */
    int32_t dims[EDGE_INDEX_MAX_RANK]; /* output counts per odometer dimension */
    int64_t step[EDGE_INDEX_MAX_RANK]; /* input elements per step along it (signed) */
} ss_data_t;

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

edge_status_t edge_prepare_strided_slice(edge_node_t *node, edge_ctx_t *ctx) {
    const int has_opts = node->options_type == SS_OPTS;
    const uint32_t begin_mask = has_opts ? (uint32_t)edge_opt_int(node, 0, 4, 0) : 0;
    const uint32_t end_mask = has_opts ? (uint32_t)edge_opt_int(node, 1, 4, 0) : 0;
    const uint32_t ellipsis_mask = has_opts ? (uint32_t)edge_opt_int(node, 2, 4, 0) : 0;
    const uint32_t new_axis_mask = has_opts ? (uint32_t)edge_opt_int(node, 3, 4, 0) : 0;
    const uint32_t shrink_mask = has_opts ? (uint32_t)edge_opt_int(node, 4, 4, 0) : 0;
    const int offset = has_opts ? edge_opt_int(node, 5, 1, 0) != 0 : 0;
    edge_tensor_t *x, *tb, *te, *ts, *y;
    ss_data_t *d;
    int32_t n, rank, num_add = 0, eff_dims, i, ellipsis_start, expanded = 0, added_ellipsis = 0, added_axes = 0;
    uint32_t eff_ellipsis = 0, eff_new_axis = 0;
    int64_t eff_shape[EDGE_INDEX_MAX_RANK], starts[EDGE_INDEX_MAX_RANK], steps[EDGE_INDEX_MAX_RANK], counts[EDGE_INDEX_MAX_RANK];
    int64_t eff_stride[EDGE_INDEX_MAX_RANK];
    int32_t out_shape[EDGE_INDEX_MAX_RANK], out_rank = 0;

    if (node->n_inputs < 3 || node->n_inputs > 4 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "STRIDED_SLICE expects 3..4 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    tb = edge_in(ctx, node, 1);
    te = edge_in(ctx, node, 2);
    ts = edge_in(ctx, node, 3);
    y = edge_out(ctx, node, 0);
    if (!x || !tb || !te) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "STRIDED_SLICE: input, begin and end are required");
    if (!edge_index_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "STRIDED_SLICE: input type");
    if (edge_type_built(ctx, x->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "STRIDED_SLICE: output type differs from input");
    if (!edge_const_ints_ok(tb) || !edge_const_ints_ok(te) || (ts && !edge_const_ints_ok(ts)))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "STRIDED_SLICE: begin/end/strides must be constant INT32/INT64");
    n = (int32_t)edge_tensor_elements(tb);
    if (edge_tensor_elements(te) != n || (ts && edge_tensor_elements(ts) != n))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "STRIDED_SLICE: begin, end and strides differ in length");
    rank = x->rank;
    for (i = 0; i < n && i < 32; i++)
        if (!((ellipsis_mask >> i) & 1) && ((new_axis_mask >> i) & 1)) num_add++;
    eff_dims = rank + num_add;
    if (eff_dims > EDGE_INDEX_MAX_RANK || n > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "STRIDED_SLICE: rank above 8");

    /* expand the ellipsis over the dimensions begin/end do not name */
    ellipsis_start = eff_dims;
    for (i = 0; i < eff_dims;) {
        if ((ellipsis_mask >> i) & 1) {
            int32_t stop = i + 1 + num_add + rank - n;
            if (stop > eff_dims) stop = eff_dims;
            if (stop < i + 1) stop = i + 1;
            ellipsis_start = i;
            expanded = stop - ellipsis_start - 1;
            for (; i < stop; i++) eff_ellipsis |= 1u << i;
            continue;
        }
        if (i - expanded >= 0 && ((new_axis_mask >> (i - expanded)) & 1)) eff_new_axis |= 1u << i;
        i++;
    }

    for (i = 0; i < eff_dims; i++) {
        int64_t b, e, s, size, start, stop;
        int b_m = 0, e_m = 0, shrink = 0;
        int32_t src_dim = i - added_axes;
        if ((eff_ellipsis >> i) & 1) {
            added_ellipsis = i - ellipsis_start > 0 ? i - ellipsis_start : 0;
            b = e = 0;
            s = 1;
            b_m = e_m = 1;
        } else if ((eff_new_axis >> i) & 1) {
            b = 0;
            e = 1;
            s = 1;
            src_dim = -1;
            added_axes++;
        } else if (i >= n + expanded) {
            b = e = 0;
            s = 1;
            b_m = e_m = 1;
        } else {
            int32_t k = i - added_ellipsis;
            if (k < 0 || k >= n) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "STRIDED_SLICE: masks do not fit the input");
            b = edge_const_int(tb, k);
            e = edge_const_int(te, k);
            s = ts ? edge_const_int(ts, k) : 1;
            b_m = (begin_mask >> k) & 1;
            e_m = (end_mask >> k) & 1;
            shrink = (shrink_mask >> k) & 1;
        }
        if (src_dim >= rank) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "STRIDED_SLICE: masks do not fit the input");
        size = src_dim >= 0 ? x->dims[src_dim] : 1;
        if (s == 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "STRIDED_SLICE: stride 0");
        if (s < -((int64_t)1 << 40) || s > ((int64_t)1 << 40) || b < -((int64_t)1 << 40) || b > ((int64_t)1 << 40) ||
            e < -((int64_t)1 << 40) || e > ((int64_t)1 << 40))
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "STRIDED_SLICE: begin/end/stride magnitude");
        start = b < 0 ? b + size : b;
        start = s > 0 ? clamp64(start, 0, size) : clamp64(start, -1, size - 1);
        if (b_m) start = s > 0 ? 0 : size - 1;
        if (shrink) {
            if (start < 0 || start >= size)
                return EDGE_FAIL(ctx, EDGE_BAD_NODE, "STRIDED_SLICE: shrink-axis begin out of range");
            if (s < 0) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "STRIDED_SLICE: shrink axis with a negative stride");
            stop = start + 1;
        } else {
            stop = offset ? e + start : e;
            if (stop < 0) stop += size;
            stop = s > 0 ? clamp64(stop, 0, size) : clamp64(stop, -1, size - 1);
            if (e_m) stop = s > 0 ? size : -1;
        }
        eff_shape[i] = size;
        starts[i] = start;
        steps[i] = s;
        if (s > 0) counts[i] = stop > start ? (stop - start + s - 1) / s : 0;
        else counts[i] = start > stop ? (start - stop - s - 1) / (-s) : 0;
        if (counts[i] == 0) starts[i] = 0; /* nothing is read along an empty dimension */
        if (!shrink) out_shape[out_rank++] = (int32_t)counts[i];
    }
    {
        edge_status_t st = edge_set_output_shape(ctx, node, 0, out_shape, out_rank);
        if (st != EDGE_OK) return st;
    }
    d = (ss_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->elem = (int16_t)edge_type_bytes(x->type);
    d->count = 1;
    for (i = 0; i < eff_dims; i++) d->count *= counts[i];
    if (eff_dims) eff_stride[eff_dims - 1] = 1;
    for (i = eff_dims - 2; i >= 0; i--) eff_stride[i] = eff_stride[i + 1] * eff_shape[i + 1];
    d->base = 0;
    d->rank = 0;
    for (i = 0; i < eff_dims; i++) {
        d->base += starts[i] * eff_stride[i];
        if (counts[i] != 1) {
            d->dims[d->rank] = (int32_t)counts[i];
            d->step[d->rank] = steps[i] * eff_stride[i];
            d->rank++;
        }
    }
    if (d->rank == 0) {
        d->rank = 1;
        d->dims[0] = 1;
        d->step[0] = 0;
    }
    /* merge dimension i into i - 1 where a step along i - 1 is dims[i] steps along i (the input walks on as one) */
    for (i = d->rank - 1; i >= 1; i--) {
        if (d->step[i - 1] == d->step[i] * d->dims[i] && (int64_t)d->dims[i - 1] * d->dims[i] <= 0x7fffffff) {
            int32_t k;
            d->dims[i - 1] *= d->dims[i];
            d->step[i - 1] = d->step[i];
            for (k = i; k + 1 < d->rank; k++) {
                d->dims[k] = d->dims[k + 1];
                d->step[k] = d->step[k + 1];
            }
            d->rank--;
        }
    }
    d->run_bytes = 0;
    if ((d->step[d->rank - 1] == 1 || d->dims[d->rank - 1] == 1) && (int64_t)d->dims[d->rank - 1] * d->elem <= 0x7fffffff)
        d->run_bytes = (uint32_t)((int64_t)d->dims[d->rank - 1] * d->elem);
    return EDGE_OK;
}

void edge_eval_strided_slice(const edge_node_t *node, edge_ctx_t *ctx) {
    const ss_data_t *d = (const ss_data_t *)node->user_data;
    if (d->run_bytes && d->count) { /* contiguous runs: one block each, the outer dimensions by an odometer */
        const uint8_t *x = (const uint8_t *)edge_in(ctx, node, 0)->data;
        uint8_t *y = (uint8_t *)edge_out(ctx, node, 0)->data;
        const int32_t outer = d->rank - 1;
        int32_t idx[EDGE_INDEX_MAX_RANK] = {0};
        int64_t pos = d->base, done;
        for (done = 0; done < d->count; done += d->dims[outer]) {
            edge_copy_bytes(y, x + pos * d->elem, d->run_bytes);
            y += d->run_bytes;
            edge_odometer_next(idx, d->dims, d->step, outer, &pos); /* over dimensions 0 .. outer - 1 */
        }
        return;
    }
    edge_strided_gather(edge_in(ctx, node, 0)->data, edge_out(ctx, node, 0)->data, d->elem, d->base, d->rank, d->dims,
                        d->step, d->count);
}
