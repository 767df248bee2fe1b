/* RESHAPE: the same bytes under a new shape. The new shape comes from a constant 1-D shape input, else
 * ReshapeOptions.new_shape, else the model's declared output shape (edge_sdk/runtime/kernels/shape.py
 * prepare_reshape, TFLM reshape_common.cc); one -1 entry is inferred. Eval copies the bytes (the plan may
 * give input and output different places). A shape input computed at run time (from data: the host resolves shape
 * arithmetic before the C runtime loads the model) must hold the declared shape: eval checks it, and a different
 * one stops the invoke with EDGE_BAD_INPUT (LiteRT would resize the output; this runtime plans before invoke). Refusal reasons leave the op's name to the error message's node
 * prefix ("node 3 (RESHAPE code 22 v1): ...").
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_dsp.h"

EDGE_KERNEL(RESHAPE, reshape, 2, "FLOAT32 FLOAT16 INT32 UINT8 INT64 BOOL INT16 COMPLEX64 INT8 FLOAT64 COMPLEX128 UINT64 UINT32 UINT16 INT4 INT2 UINT4", "")

#define RESHAPE_MAX_RANK 8

edge_status_t edge_prepare_reshape(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *y, *shape_t;
    const int32_t *src = 0;
    int32_t n = -1, k, infer = -1, shape[RESHAPE_MAX_RANK];
    int64_t known = 1, elems;
    edge_status_t s;

    if (node->n_inputs < 1 || node->n_inputs > 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1..2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    shape_t = edge_in(ctx, node, 1);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input 0 is required");
    if (!edge_type_bytes(x->type) || x->type == EDGE_RESOURCE)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "input type");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s; /* a build without the type refuses it everywhere */
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input");
    elems = edge_tensor_elements(x);

    if (shape_t && shape_t->is_const && shape_t->rank == 1) {
        if (shape_t->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "shape must be INT32");
        src = (const int32_t *)shape_t->data;
        n = shape_t->dims[0];
    }
    if (n < 0) {
        const int32_t *opt = 0;
        int32_t count = 0;
        if (node->options_type == EDGE_OPTS_ReshapeOptions) {
            s = edge_opt_int_vector(ctx, node, 0, &opt, &count);
            if (s != EDGE_OK) return s;
        }
        if (count > 0) {
            src = opt;
            n = count;
            if (count == 1 && opt[0] == 0 && !shape_t) n = 0; /* legacy: new_shape [0] marks a scalar */
        } else if (shape_t && shape_t->rank == 1 && shape_t->dims[0] == 0) {
            n = 0;
        } else if (!shape_t) {
            src = y->dims;
            n = y->rank;
        }
    }
    if (n < 0) {
        /* shape computed at run time: trust a fully known declared output shape with the same size (eval checks
         * the shape tensor against it: reshape_shape_differs) */
        if (y->rank > 0 && edge_tensor_elements(y) == elems) {
            src = y->dims;
            n = y->rank;
        } else {
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "new shape computed at run time, no usable declared shape");
        }
    }
    if (shape_t && !shape_t->is_const && shape_t->rank == 1 && shape_t->dims[0] > 0) {
        if (shape_t->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "a run-time shape must be INT32");
        if (shape_t->dims[0] != n)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "the run-time shape's length differs from the declared output rank");
    }
    if (n > RESHAPE_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "rank above 8");
    for (k = 0; k < n; k++) {
        shape[k] = src[k];
        if (shape[k] == -1) {
            if (infer >= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "more than one -1");
            infer = k;
        } else if (shape[k] < 0) {
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "negative dimension");
        } else {
            known *= shape[k];
            if (known > ((int64_t)1 << 40)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "shape too large");
        }
    }
    if (infer >= 0) {
        if (known == 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "cannot infer the -1 dimension");
        if ((elems | known) >> 32) return EDGE_FAIL(ctx, EDGE_LIMIT, "2^32 elements or more");
        shape[infer] = (int32_t)((uint32_t)elems / (uint32_t)known); /* 32-bit: no 64-bit divide linked */
        known *= shape[infer];
    }
    if (known != elems) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "element counts differ");
    return edge_set_output_shape(ctx, node, 0, shape, n);
}

/* A shape input computed at run time (prepare checked: INT32, one value per output dim) against the output shape
 * prepared (one -1 resolved from the element count): the first differing element, else -1. */
static int32_t reshape_shape_differs(const edge_tensor_t *shape_t, const edge_tensor_t *y) {
    const int32_t *v = (const int32_t *)shape_t->data;
    int64_t rest = 1, elems = edge_tensor_elements(y), got;
    int32_t k, infer = -1;
    for (k = 0; k < y->rank; k++) {
        if (v[k] == -1 && infer < 0) infer = k;
        else if (v[k] < 0) return k;
        else if ((rest *= v[k]) > ((int64_t)1 << 32)) return k;
    }
    for (k = 0; k < y->rank; k++) {
        got = v[k];
        if (k == infer) /* 32-bit divide (no 64-bit divide linked on the boards); prepare kept elems below 2^32 */
            got = rest > 0 && rest < ((int64_t)1 << 32) ? (int64_t)((uint32_t)elems / (uint32_t)rest) : -1;
        if (got != y->dims[k]) return k;
    }
    return -1;
}

void edge_eval_reshape(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x = edge_in(ctx, node, 0), *shape_t = edge_in(ctx, node, 1);
    edge_tensor_t *y = edge_out(ctx, node, 0);
    if (shape_t && !shape_t->is_const && shape_t->rank == 1 && shape_t->dims[0] > 0) {
        int32_t k = reshape_shape_differs(shape_t, y);
        if (k >= 0) {
            EDGE_EVAL_BAD_INPUT(ctx, node, 1, k, ((const int32_t *)shape_t->data)[k],
                                "RESHAPE: the run-time shape differs from the output shape prepared");
            return;
        }
    }
    if (y->data == x->data) return; /* the planner's alias: nothing to move */
#if EDGE_DSP
    {
        /* apart (every plan but a partial overlap) on a Cortex-M4/M7: LDM / STM blocks (edge_copy_bytes); newlib's
         * memmove took ~1.3 instructions a byte (2x TFLM's RESHAPE) */
        const uintptr_t a = (uintptr_t)x->data, b = (uintptr_t)y->data;
        if (a + y->bytes <= b || b + y->bytes <= a) {
            edge_copy_bytes(y->data, x->data, y->bytes);
            return;
        }
    }
#endif
    memmove(y->data, x->data, y->bytes);
}
