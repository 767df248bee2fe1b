/* RFFT2D, as edge_sdk/runtime/kernels/fft.py (LiteRT's rfft2d.cc): input FLOAT32 [..., H, W], fft_length a
 * constant INT32 [2] (fft_h, fft_w: powers of two), output COMPLEX64 [..., fft_h, fft_w / 2 + 1]. Each innermost
 * H x W slice, cropped or zero-padded to fft_h x fft_w, is transformed in double as LiteRT does: a complex FFT of
 * each row (its fft_w / 2 + 1 first bins kept), then of each kept column; rounded to float once at the end.
 * The FFT is the iterative radix-2 one (bit-reversed order, then butterflies) with a twiddle table
 * cos/sin(2 pi k / N), N = max(fft_h, fft_w), computed at prepare. Scratch: the slice's kept bins (fft_h rows of
 * fft_w / 2 + 1 complex doubles) and one line of max(fft_h, fft_w) complex doubles. */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(RFFT2D, rfft2d, 1, "FLOAT32", "constant power-of-two fft_length; COMPLEX64 output")

#define RFFT_TWO_PI (2.0 * 3.14159265358979323846)

typedef struct {
    int64_t slices;
    int32_t in_h, in_w, fft_h, fft_w, bins, longest;
    double *twiddles;      /* [longest / 2] pairs (cos, -sin) of 2 pi k / longest: the forward transform's */
    int32_t bins_scratch;  /* [fft_h][bins] complex doubles */
    int32_t line_scratch;  /* [longest] complex doubles */
} rfft2d_data_t;

static int power_of_two(int32_t v) { return v > 0 && (v & (v - 1)) == 0; }

edge_status_t edge_prepare_rfft2d(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *len, *y;
    rfft2d_data_t *d;
    int32_t dims[EDGE_INDEX_MAX_RANK], k;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    len = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !len) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input and fft_length are required");
    if (x->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (y->type != EDGE_COMPLEX64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be COMPLEX64");
    if (x->rank < 2 || x->rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input rank must be 2..8");
    if (len->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "fft_length must be INT32");
    if (!len->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "fft_length computed at run time");
    if (len->rank != 1 || len->dims[0] != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "fft_length must be 1-D of 2 values");
    d = (rfft2d_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->fft_h = ((const int32_t *)len->data)[0];
    d->fft_w = ((const int32_t *)len->data)[1];
    if (!power_of_two(d->fft_h) || !power_of_two(d->fft_w))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "fft_length must hold powers of two");
    d->in_h = x->dims[x->rank - 2];
    d->in_w = x->dims[x->rank - 1];
    d->bins = d->fft_w / 2 + 1;
    d->longest = d->fft_h > d->fft_w ? d->fft_h : d->fft_w;
    d->slices = 1;
    for (k = 0; k < x->rank - 2; k++) {
        dims[k] = x->dims[k];
        d->slices *= x->dims[k];
    }
    dims[x->rank - 2] = d->fft_h;
    dims[x->rank - 1] = d->bins;
    d->twiddles = (double *)edge_alloc_persistent(ctx, (size_t)d->longest * sizeof(double));
    if (!d->twiddles) return EDGE_ARENA_TOO_SMALL;
    for (k = 0; k < d->longest / 2; k++) {
        d->twiddles[2 * k] = cos(RFFT_TWO_PI * k / d->longest);
        d->twiddles[2 * k + 1] = -sin(RFFT_TWO_PI * k / d->longest);
    }
    if ((s = edge_request_scratch(ctx, node, (size_t)d->fft_h * d->bins * 2 * sizeof(double), &d->bins_scratch)) != EDGE_OK ||
        (s = edge_request_scratch(ctx, node, (size_t)d->longest * 2 * sizeof(double), &d->line_scratch)) != EDGE_OK)
        return s;
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, dims, x->rank);
}

/* In-place forward FFT of n complex doubles (re, im pairs), n a power of two dividing the table's length. */
static void fft_line(const rfft2d_data_t *d, double *v, int32_t n) {
    const int32_t step = d->longest / n;
    int32_t i, j, len, half, k;
    for (i = 1, j = 0; i < n; i++) {  /* bit-reversed order */
        int32_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j |= bit;
        if (i < j) {
            double t = v[2 * i];
            v[2 * i] = v[2 * j];
            v[2 * j] = t;
            t = v[2 * i + 1];
            v[2 * i + 1] = v[2 * j + 1];
            v[2 * j + 1] = t;
        }
    }
    for (len = 2; len <= n; len <<= 1) {
        half = len >> 1;
        for (i = 0; i < n; i += len)
            for (k = 0; k < half; k++) {
                const double *w = d->twiddles + 2 * (int64_t)k * step * (n / len);
                double *a = v + 2 * (i + k), *b = v + 2 * (i + k + half);
                const double br = b[0] * w[0] - b[1] * w[1], bi = b[0] * w[1] + b[1] * w[0];
                b[0] = a[0] - br;
                b[1] = a[1] - bi;
                a[0] += br;
                a[1] += bi;
            }
    }
}

void edge_eval_rfft2d(const edge_node_t *node, edge_ctx_t *ctx) {
    const rfft2d_data_t *d = (const rfft2d_data_t *)node->user_data;
    const float *x = (const float *)edge_in(ctx, node, 0)->data;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    double *bins = (double *)edge_scratch(ctx, node, d->bins_scratch);
    double *line = (double *)edge_scratch(ctx, node, d->line_scratch);
    const int32_t rows = d->in_h < d->fft_h ? d->in_h : d->fft_h, cols = d->in_w < d->fft_w ? d->in_w : d->fft_w;
    int64_t sl;
    int32_t r, c;
    for (sl = 0; sl < d->slices; sl++) {
        const float *in = x + sl * d->in_h * d->in_w;
        float *out = y + sl * (int64_t)d->fft_h * d->bins * 2;
        for (r = 0; r < d->fft_h; r++) {
            for (c = 0; c < d->fft_w; c++) {
                line[2 * c] = (r < rows && c < cols) ? (double)in[(int64_t)r * d->in_w + c] : 0.0;
                line[2 * c + 1] = 0.0;
            }
            fft_line(d, line, d->fft_w);
            for (c = 0; c < 2 * d->bins; c++) bins[(int64_t)r * d->bins * 2 + c] = line[c];
        }
        for (c = 0; c < d->bins; c++) {
            for (r = 0; r < d->fft_h; r++) {
                line[2 * r] = bins[((int64_t)r * d->bins + c) * 2];
                line[2 * r + 1] = bins[((int64_t)r * d->bins + c) * 2 + 1];
            }
            fft_line(d, line, d->fft_h);
            for (r = 0; r < d->fft_h; r++) {
                out[((int64_t)r * d->bins + c) * 2] = (float)line[2 * r];
                out[((int64_t)r * d->bins + c) * 2 + 1] = (float)line[2 * r + 1];
            }
        }
    }
}
