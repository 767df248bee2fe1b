/* REDUCE_WINDOW (the builtin; ReduceWindowOptions, BuiltinOptions2 member 20, slot 0 reduce_function), as
 * edge_sdk/runtime/kernels/reduce_window.py (LiteRT's reduce_window kernel, its TFLite semantic): inputs input
 * (rank 1..6), init_value (a scalar of its type), window_shape, window_strides, window_dilations (constant INT64
 * [rank]); output of the input's type, dimension i = (in_i - ((window_i - 1) * dilation_i + 1)) / stride_i + 1, or
 * 0 when the dilated window does not fit. Each output cell starts at init_value and folds in its window's
 * elements in row-major window order, one at a time: ADD, MUL (integers wrap), MINIMUM (a <= b ? a : b),
 * MAXIMUM (a >= b ? a : b), ALL / ANY (logical, 1 / 0 in the type). BOOL takes every function but ADD (a sum of
 * booleans is no boolean). */
#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(REDUCE_WINDOW, reduce_window, 1, "FLOAT32 FLOAT64 INT8 UINT8 INT16 INT32 INT64 BOOL", "constant INT64 window vectors; rank <= 6")

#define RW_MAX_RANK 6

typedef struct {
    int32_t rank, function;
    int64_t out_cells, window_cells;
    int64_t out_dims[RW_MAX_RANK], window[RW_MAX_RANK];
    int64_t step[RW_MAX_RANK];  /* input elements between two output cells along each dim (stride x extent) */
    int64_t tap[RW_MAX_RANK];   /* input elements between two window taps along each dim (dilation x extent) */
} rw_data_t;

edge_status_t edge_prepare_reduce_window(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *init, *y, *vec[3];
    rw_data_t *d;
    int32_t dims[RW_MAX_RANK], k, v;
    int64_t extent = 1;
    edge_status_t s;
    if (node->n_inputs != 5 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 5 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    init = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    for (v = 0; v < 3; v++) vec[v] = edge_in(ctx, node, 2 + v);
    if (!x || !init || !vec[0] || !vec[1] || !vec[2]) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "every input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_FLOAT64 && x->type != EDGE_INT8 && x->type != EDGE_UINT8 &&
        x->type != EDGE_INT16 && x->type != EDGE_INT32 && x->type != EDGE_INT64 && x->type != EDGE_BOOL)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, FLOAT64, INT8, UINT8, INT16, INT32, INT64, BOOL");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (init->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "init_value type differs from input");
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output type differs from input");
    if (edge_tensor_elements(init) != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "init_value must hold one value");
    if (x->rank < 1 || x->rank > RW_MAX_RANK) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input rank must be 1..6");
    for (v = 0; v < 3; v++) {
        if (vec[v]->type != EDGE_INT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "window vectors must be INT64");
        /* a window vector from data would size the output at eval: a constant or a value known at prepare only */
        if (!vec[v]->is_const && v == 0)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input 2 window_shape is computed at run time from data (the output shape follows its values); only a constant or a value known at prepare");
        if (!vec[v]->is_const && v == 1)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input 3 window_strides is computed at run time from data (the output shape follows its values); only a constant or a value known at prepare");
        if (!vec[v]->is_const)
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "input 4 window_dilations is computed at run time from data (the output shape follows its values); only a constant or a value known at prepare");
        if (edge_tensor_elements(vec[v]) != x->rank)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "window vectors need one value per input dimension");
        for (k = 0; k < x->rank; k++)
            if (((const int64_t *)vec[v]->data)[k] <= 0 || ((const int64_t *)vec[v]->data)[k] > 0x7FFFFFFF)
                return EDGE_FAIL(ctx, EDGE_BAD_NODE, "window shape, strides and dilations must be positive");
    }
    if (node->options2_type != EDGE_OPTS2_ReduceWindowOptions)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "reduce_function missing (ReduceWindowOptions)");
    d = (rw_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->function = edge_opt_int(node, 0, 4, 0);
    if (d->function < EDGE_RW_ADD || d->function > EDGE_RW_ANY)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "reduce_function not supported");
    if (x->type == EDGE_BOOL && d->function == EDGE_RW_ADD)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "ADD of BOOL values (a sum is no boolean)");
    d->rank = x->rank;
    d->out_cells = 1;
    d->window_cells = 1;
    for (k = x->rank - 1; k >= 0; k--) {
        const int64_t win = ((const int64_t *)vec[0]->data)[k], stride = ((const int64_t *)vec[1]->data)[k];
        const int64_t dil = ((const int64_t *)vec[2]->data)[k], span = (win - 1) * dil + 1;
        d->window[k] = win;
        d->out_dims[k] = x->dims[k] >= span ? (x->dims[k] - span) / stride + 1 : 0;
        d->step[k] = stride * extent;
        d->tap[k] = dil * extent;
        extent *= x->dims[k];
        dims[k] = (int32_t)d->out_dims[k];
        d->out_cells *= d->out_dims[k];
        d->window_cells *= win;
    }
    node->user_data = d;
    return edge_set_output_shape(ctx, node, 0, dims, x->rank);
}

/* The input offset of flat index `i` of a grid of `dims` whose unit steps are `steps` (row-major). */
static int64_t grid_offset(int64_t i, const int64_t *dims, const int64_t *steps, int32_t rank) {
    int64_t at = 0;
    int32_t k;
    for (k = rank - 1; k >= 0; k--) {
        at += (i % dims[k]) * steps[k];
        i /= dims[k];
    }
    return at;
}

/* One fold over every output cell; FOLD(acc, v) is the function's step in type T (UT: the unsigned type integer
 * sums and products wrap in). */
#define RW_LOOP(T, FOLD)                                                                 \
    do {                                                                                 \
        const T *v = (const T *)x;                                                       \
        T *o = (T *)y;                                                                   \
        for (cell = 0; cell < d->out_cells; cell++) {                                    \
            const int64_t base = grid_offset(cell, d->out_dims, d->step, d->rank);       \
            T acc = *(const T *)init;                                                    \
            for (w = 0; w < d->window_cells; w++) {                                      \
                const T e = v[base + grid_offset(w, d->window, d->tap, d->rank)];        \
                acc = FOLD;                                                              \
            }                                                                            \
            o[cell] = acc;                                                               \
        }                                                                                \
    } while (0)

#define RW_FUNCTIONS(T, UT)                                                              \
    switch (d->function) {                                                               \
    case EDGE_RW_ADD: RW_LOOP(T, (T)((UT)acc + (UT)e)); break;                           \
    case EDGE_RW_MUL: RW_LOOP(T, (T)((UT)acc * (UT)e)); break;                           \
    case EDGE_RW_MINIMUM: RW_LOOP(T, acc <= e ? acc : e); break;                         \
    case EDGE_RW_MAXIMUM: RW_LOOP(T, acc >= e ? acc : e); break;                         \
    case EDGE_RW_ALL: RW_LOOP(T, (T)(acc && e)); break;                                  \
    default: RW_LOOP(T, (T)(acc || e)); break;                                           \
    }

void edge_eval_reduce_window(const edge_node_t *node, edge_ctx_t *ctx) {
    const rw_data_t *d = (const rw_data_t *)node->user_data;
    const edge_tensor_t *xt = edge_in(ctx, node, 0);
    const void *x = xt->data, *init = edge_in(ctx, node, 1)->data;
    void *y = edge_out(ctx, node, 0)->data;
    int64_t cell, w;
    switch (xt->type) {
    case EDGE_FLOAT64: RW_FUNCTIONS(double, double) break;
    case EDGE_INT8: RW_FUNCTIONS(int8_t, uint32_t) break;
    case EDGE_UINT8: case EDGE_BOOL: RW_FUNCTIONS(uint8_t, uint32_t) break;
    case EDGE_INT16: RW_FUNCTIONS(int16_t, uint32_t) break;
    case EDGE_INT32: RW_FUNCTIONS(int32_t, uint32_t) break;
    case EDGE_INT64: RW_FUNCTIONS(int64_t, uint64_t) break;
    default:
        if (EDGE_WITH_FLOAT32) RW_FUNCTIONS(float, float)
        break;
    }
}
