/* PAD and PADV2: the input placed inside a block of a constant value (edge_sdk/runtime/kernels/shape.py prepare_pad,
 * TFLM pad.cc). Paddings must be a constant [rank, 2] (non-negative); the value is PADV2's third input
 * (constant or computed), else the output zero point for int8, else 0. Eval copies the input in its longest
 * runs that stay contiguous in the output (the trailing dimensions without padding and the first padded one:
 * an NHWC PAD of H and W copies rows of W * C, not C elements) and fills only the gaps between them.
 */
#include <stdint.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"
#include "../edge_dsp.h"

EDGE_KERNEL(PAD, pad, 6, "FLOAT32 INT8 INT16 INT32 INT64 BOOL", "")
EDGE_KERNEL(PADV2, padv2, 6, "FLOAT32 INT8 INT16 INT32 INT64 BOOL", "")

typedef struct {
    int32_t rank;                  /* of the input (>= 1; a scalar is copied as rank 1) */
    int32_t elem;                  /* bytes per element */
    int32_t value_input;           /* 1: the value is read from input 2 at eval */
    uint8_t value[8];              /* the fill element's bytes (constant value) */
    int32_t in_dims[EDGE_INDEX_MAX_RANK];
    int64_t out_stride[EDGE_INDEX_MAX_RANK]; /* in elements */
    int64_t base;                  /* output element where the input's first element goes */
    int64_t rows;                  /* input rows (product of all but the last dimension) */
    int32_t run_dim;               /* dimensions [run_dim, rank) are copied as one run: none after run_dim
                                    * is padded (so they are contiguous in the output too) */
    int64_t runs;                  /* input runs (product of dimensions [0, run_dim)); 0: empty input */
    size_t run_bytes;              /* bytes per run */
    int32_t folded;                /* 1: folded into the conv that reads the output (edge_pad_folds): eval skips */
} pad_data_t;

static int pad_type_ok(int type) {
    return type == EDGE_FLOAT32 || type == EDGE_INT8 || type == EDGE_INT16 || type == EDGE_INT32 ||
           type == EDGE_INT64 || type == EDGE_BOOL; /* ai-edge-torch pads int64 indices and bool masks */
}

static edge_status_t pad_prepare(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *p, *c, *y;
    pad_data_t *d;
    int32_t k, rank, shape[EDGE_INDEX_MAX_RANK];
    int64_t before[EDGE_INDEX_MAX_RANK], after[EDGE_INDEX_MAX_RANK];

    if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "PAD expects 2..3 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    p = edge_in(ctx, node, 1);
    c = edge_in(ctx, node, 2);
    y = edge_out(ctx, node, 0);
    if (!x || !p) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "PAD: input and paddings are required");
    if (!pad_type_ok(x->type)) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "PAD: input type");
    if (edge_type_built(ctx, x->type) != EDGE_OK) return EDGE_UNSUPPORTED_TYPE; /* compiled out */
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "PAD: output type differs from input");
    if (p->type != EDGE_INT32 && p->type != EDGE_INT64 && p->type != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "PAD: paddings type (INT32, INT64)");
    if (!p->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "PAD: paddings computed at run time");
    rank = x->rank;
    if (rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "PAD: rank above 8");
    if (edge_tensor_elements(p) != 2 * (int64_t)rank)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "PAD: paddings must hold 2 values per input dimension");
    for (k = 0; k < rank; k++) {
        int64_t a = edge_const_int(p, 2 * k), b = edge_const_int(p, 2 * k + 1);
        if (a < 0 || b < 0) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "PAD: negative paddings");
        if ((int64_t)x->dims[k] + a + b > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_LIMIT, "PAD: output too large");
        shape[k] = (int32_t)(x->dims[k] + a + b);
        before[k] = a;
        after[k] = b;
    }
    if (c) {
        if (c->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "PAD: value type differs from input");
        if (edge_tensor_elements(c) != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "PAD: value must hold one element");
        if (x->type == EDGE_INT8) {
            int same = (!c->quantized && !y->quantized) ||
                       (c->quantized && y->quantized && c->scale == y->scale && c->zero_point == y->zero_point);
            if (!same) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "PAD: value quantized differently from the output");
        }
    }
    if (x->type == EDGE_INT8 && y->quantized && (y->zero_point < -128 || y->zero_point > 127))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "PAD: output zero point outside int8");
    {
        edge_status_t s = edge_set_output_shape(ctx, node, 0, shape, rank);
        if (s != EDGE_OK) return s;
    }
    d = (pad_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    if (edge_pad_folds(ctx, node) >= 0) { /* the conv reads x with this padding: no output, no copy */
        d->folded = 1;
        edge_fold_pad(node, ctx);
        return EDGE_OK;
    }
    d->elem = (int32_t)edge_type_bytes(x->type);
    if (!c) {
        if (x->type == EDGE_INT8 && y->quantized) d->value[0] = (uint8_t)(int8_t)y->zero_point;
    } else if (c->is_const) {
        memcpy(d->value, c->data, (size_t)d->elem);
    } else {
        d->value_input = 1;
    }
    if (rank == 0) { /* a scalar: one element, no padding */
        d->rank = 1;
        d->in_dims[0] = 1;
        d->out_stride[0] = 1;
        d->rows = 1;
        d->runs = 1;
        d->run_bytes = (size_t)d->elem;
        return EDGE_OK;
    }
    d->rank = rank;
    d->out_stride[rank - 1] = 1;
    for (k = rank - 2; k >= 0; k--) d->out_stride[k] = d->out_stride[k + 1] * shape[k + 1];
    d->rows = 1;
    d->base = 0;
    for (k = 0; k < rank; k++) {
        d->in_dims[k] = x->dims[k];
        d->base += before[k] * d->out_stride[k];
        if (k < rank - 1) d->rows *= x->dims[k];
    }
    if (x->dims[rank - 1] == 0) d->rows = 0;
    for (d->run_dim = rank - 1; d->run_dim > 0 && before[d->run_dim] == 0 && after[d->run_dim] == 0;) d->run_dim--;
    d->runs = 1;
    d->run_bytes = (size_t)d->elem;
    for (k = 0; k < rank; k++) {
        if (k < d->run_dim) d->runs *= x->dims[k];
        else d->run_bytes *= (size_t)x->dims[k];
    }
    if (d->run_bytes == 0) d->runs = 0;
    return EDGE_OK;
}

edge_status_t edge_prepare_pad(edge_node_t *node, edge_ctx_t *ctx) { return pad_prepare(node, ctx); }
edge_status_t edge_prepare_padv2(edge_node_t *node, edge_ctx_t *ctx) { return pad_prepare(node, ctx); }

/* The fill value's bytes all equal (int8 anything, 0.0f, 0): a memset; else element by element (a word store a
 * float / int32 element). The value is read once per eval (pad_value_uniform): a float PAD of channels fills a
 * few elements per pixel, where a memcpy call per element cost 8x XNNPACK's PAD (palm_detection_lite). */
static int pad_value_uniform(const uint8_t *value, int32_t elem) {
    int32_t k;
    for (k = 1; k < elem; k++)
        if (value[k] != value[0]) return 0;
    return 1;
}

static void pad_fill(uint8_t *out, size_t bytes, const uint8_t *value, int32_t elem, int uniform) {
    size_t b;
    if (uniform) {
        memset(out, value[0], bytes);
    } else if (elem == 4) {
        uint32_t v;
        memcpy(&v, value, 4);
        for (b = 0; b < bytes; b += 4) memcpy(out + b, &v, 4);
    } else {
        for (b = 0; b < bytes; b += (size_t)elem) memcpy(out + b, value, (size_t)elem);
    }
}

#if EDGE_DSP
/* int8 with only the last dimension padded (NHWC channels: BlazeFace's stride-2 shortcuts), on a DSP core
 * (unaligned word loads and stores): y [rows, out_c] from x [rows, in_c]; each row's bytes copied a word at a
 * time and the gap to the next row's (after + before bytes) filled with words of the value, in one loop with no
 * call per row (pad_eval's memset + block copy + odometer step cost ~2x CMSIS-NN's arm_pad_s8 per pixel). */
static void pad_last_int8_dsp(const pad_data_t *d, const uint8_t *in, uint8_t *out, size_t out_bytes, uint8_t value) {
    const uint32_t v4 = (uint32_t)value * 0x01010101u;
    const int32_t in_c = (int32_t)d->run_bytes, out_c = (int32_t)d->out_stride[d->rank - 2];
    const int32_t gap = out_c - in_c;
    const int32_t words = in_c >> 2, bytes = in_c & 3, gap_words = gap >> 2, gap_bytes = gap & 3;
    uint8_t *const end = out + out_bytes;
    int32_t r, k;
    memset(out, value, (size_t)d->base);
    out += d->base;
    for (r = (int32_t)d->runs; r > 0; r--) { /* runs < 2^31: pad_eval's condition */
        if (in_c >= 32) { /* LDM / STM blocks when aligned (edge_copy_bytes) */
            edge_copy_bytes(out, in, (size_t)in_c);
            out += in_c;
            in += in_c;
        } else {
            for (k = words; k > 0; k--, out += 4, in += 4) edge_put32(out, edge_get32(in));
            for (k = bytes; k > 0; k--) *out++ = *in++;
        }
        if (r > 1) { /* the gap to the next row: its after and the next one's before */
            for (k = gap_words; k > 0; k--, out += 4) edge_put32(out, v4);
            for (k = gap_bytes; k > 0; k--) *out++ = value;
        }
    }
    memset(out, value, (size_t)(end - out));
}
#endif

/* The output over the input, both starting at buf (the least-RAM plan, EDGE_INIT_MEMORY_MIN): rows from the
 * last to the first. Row r goes to pos(r) >= r * row_bytes (padding only adds), so moving it (memmove) and
 * filling the padding above it never touches a row not yet moved. */
static void pad_in_place(const pad_data_t *d, uint8_t *buf, size_t out_bytes, const uint8_t *value,
                         size_t row_bytes, int uniform) {
    size_t end = out_bytes;
    int64_t r;
    for (r = d->rows - 1; r >= 0; r--) {
        int64_t pos = d->base, rem = r;
        int32_t k;
        size_t at;
        for (k = d->rank - 2; k >= 0; k--) {
            pos += (rem % d->in_dims[k]) * d->out_stride[k];
            rem /= d->in_dims[k];
        }
        at = (size_t)pos * (size_t)d->elem;
        memmove(buf + at, buf + (size_t)r * row_bytes, row_bytes);
        pad_fill(buf + at + row_bytes, end - (at + row_bytes), value, d->elem, uniform);
        end = at;
    }
    pad_fill(buf, end, value, d->elem, uniform);
}

/* A patch window (edge_init_patch; a 4-D PAD of H and W only): output (oy, ox) of the oh x ow window is input
 * (oy - pt, ox - pl) of the h x w input window when that lies inside it, else the value. */
static void pad_window(const pad_data_t *d, const edge_window_t *win, const uint8_t *in, uint8_t *out,
                       const uint8_t *value, int uniform) {
    const size_t px = (size_t)d->in_dims[3] * (size_t)d->elem;
    const int32_t x0 = win->pl > 0 ? win->pl : 0, x1 = win->w + win->pl < win->ow ? win->w + win->pl : win->ow;
    int32_t b, oy;
    for (b = 0; b < d->in_dims[0]; b++) {
        for (oy = 0; oy < win->oh; oy++) {
            uint8_t *row = out + ((size_t)b * (size_t)win->oh + (size_t)oy) * (size_t)win->ow * px;
            const int32_t iy = oy - win->pt;
            if (iy < 0 || iy >= win->h || x0 >= x1) {
                pad_fill(row, (size_t)win->ow * px, value, d->elem, uniform);
                continue;
            }
            pad_fill(row, (size_t)x0 * px, value, d->elem, uniform);
            memcpy(row + (size_t)x0 * px,
                   in + (((size_t)b * (size_t)win->h + (size_t)iy) * (size_t)win->w + (size_t)(x0 - win->pl)) * px,
                   (size_t)(x1 - x0) * px);
            pad_fill(row + (size_t)x1 * px, (size_t)(win->ow - x1) * px, value, d->elem, uniform);
        }
    }
}

static void pad_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const pad_data_t *d = (const pad_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const uint8_t *value = d->value_input ? (const uint8_t *)edge_in(ctx, node, 2)->data : d->value;
    uint8_t *out = (uint8_t *)y->data;
    const uint8_t *in = (const uint8_t *)x->data;
    const size_t row_bytes = (size_t)d->in_dims[d->rank - 1] * (size_t)d->elem;
    int32_t idx[EDGE_INDEX_MAX_RANK] = {0};
    const int uniform = pad_value_uniform(value, d->elem);
    int64_t r, pos;
    size_t end = 0; /* output bytes written so far */

    if (EDGE_WITH_PATCH && ctx->window) {
        pad_window(d, ctx->window, in, out, value, uniform);
        return;
    }

    if (EDGE_WITH_MEMORY_MIN && out == in) { /* only the least-RAM plan puts y over x */
        pad_in_place(d, out, y->bytes, value, row_bytes, uniform);
        return;
    }
#if EDGE_DSP
    if (d->elem == 1 && d->rank >= 2 && d->run_dim == d->rank - 1 && d->runs > 0 && d->runs <= INT32_MAX &&
        (int64_t)y->bytes == d->runs * d->out_stride[d->rank - 2]) { /* only the last dimension padded */
        pad_last_int8_dsp(d, in, out, y->bytes, value[0]);
        return;
    }
#endif
    /* the input's runs in output order (an odometer over the dimensions before run_dim), the value in the
     * gaps before, between and after them */
    pos = d->base;
    for (r = 0; r < d->runs; r++) {
        const size_t at = (size_t)pos * (size_t)d->elem;
        pad_fill(out + end, at - end, value, d->elem, uniform);
        edge_copy_bytes(out + at, in, d->run_bytes); /* block copies on the M4 / M7 (edge_dsp.h) */
        in += d->run_bytes;
        end = at + d->run_bytes;
        edge_odometer_next(idx, d->in_dims, d->out_stride, d->run_dim, &pos);
    }
    pad_fill(out + end, y->bytes - end, value, d->elem, uniform);
}

void edge_eval_pad(const edge_node_t *node, edge_ctx_t *ctx) {
    if (!((const pad_data_t *)node->user_data)->folded) pad_eval(node, ctx);
}

void edge_eval_padv2(const edge_node_t *node, edge_ctx_t *ctx) { edge_eval_pad(node, ctx); }
