/* REAL, IMAG and COMPLEX_ABS, as edge_sdk/runtime/kernels/fft.py (LiteRT's complex_support.cc): COMPLEX64 ->
 * FLOAT32 or COMPLEX128 -> FLOAT64 of the same shape, element by element. A complex value is two parts of the
 * part type, real then imaginary (std::complex's layout); COMPLEX_ABS is hypot(re, im) in the part type. */
#include <math.h>

#include "edge_kernel.h"

EDGE_KERNEL(REAL, real, 1, "COMPLEX64 COMPLEX128", "")
EDGE_KERNEL(IMAG, imag, 1, "COMPLEX64 COMPLEX128", "")
EDGE_KERNEL(COMPLEX_ABS, complex_abs, 1, "COMPLEX64 COMPLEX128", "")

/* The one prepare of the three: a complex input, an output of its part type, the same shape. */
static edge_status_t prepare_part(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *y;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_COMPLEX64 && x->type != EDGE_COMPLEX128)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs COMPLEX64, COMPLEX128 inputs");
    if (y->type != (x->type == EDGE_COMPLEX64 ? EDGE_FLOAT32 : EDGE_FLOAT64))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be FLOAT32 (COMPLEX64 input) or FLOAT64 (COMPLEX128)");
    return edge_set_output_shape(ctx, node, 0, x->dims, x->rank);
}

edge_status_t edge_prepare_real(edge_node_t *node, edge_ctx_t *ctx) { return prepare_part(node, ctx); }
edge_status_t edge_prepare_imag(edge_node_t *node, edge_ctx_t *ctx) { return prepare_part(node, ctx); }
edge_status_t edge_prepare_complex_abs(edge_node_t *node, edge_ctx_t *ctx) { return prepare_part(node, ctx); }

/* part 0: the real parts, 1: the imaginary parts (each value's two parts lie side by side) */
static void copy_part(const edge_node_t *node, edge_ctx_t *ctx, int part) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(x);
    int64_t i;
    if (x->type == EDGE_COMPLEX64) {
        const float *v = (const float *)x->data + part;
        float *o = (float *)y->data;
        for (i = 0; i < n; i++) o[i] = v[2 * i];
    } else {
        const double *v = (const double *)x->data + part;
        double *o = (double *)y->data;
        for (i = 0; i < n; i++) o[i] = v[2 * i];
    }
}

void edge_eval_real(const edge_node_t *node, edge_ctx_t *ctx) { copy_part(node, ctx, 0); }
void edge_eval_imag(const edge_node_t *node, edge_ctx_t *ctx) { copy_part(node, ctx, 1); }

void edge_eval_complex_abs(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    const int64_t n = edge_tensor_elements(x);
    int64_t i;
    if (x->type == EDGE_COMPLEX64) {
        const float *v = (const float *)x->data;
        float *o = (float *)y->data;
        for (i = 0; i < n; i++) o[i] = hypotf(v[2 * i], v[2 * i + 1]);
    } else {
        const double *v = (const double *)x->data;
        double *o = (double *)y->data;
        for (i = 0; i < n; i++) o[i] = hypot(v[2 * i], v[2 * i + 1]);
    }
}
