/* DENSIFY: a sparse constant (TFLite's SparsityParameters) expanded to its dense form once, at prepare, into
 * persistent memory. Its output then points at those bytes, a constant out of the tensor plan (edge_folds_at_prepare,
 * planner.folded_constants: consumers read, and on host builds pack, dense weights as from any constant filter; a
 * sparse MediaPipe detector's convolutions ran unpacked on a copy made every invoke, 4.5-6.9x XNNPACK); eval
 * copies only when the output is a subgraph's (not folded). The walk and its checks: edge_sparse.h. FLOAT32,
 * FLOAT16 and INT8 values (the types TFLite stores sparse); the output has the input's type. The dense shape is the
 * input's declared shape, or the output's when the input is declared as its flat stored values.
 */
#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_sparse.h"
#include "../simd/edge_simd.h"

EDGE_KERNEL(DENSIFY, densify, 1, "FLOAT32 FLOAT16 INT8", "sparse constant input")

edge_status_t edge_prepare_densify(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *y;
    edge_sparsity_t sp;
    walk_t w;
    int32_t fold;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_FLOAT16 && x->type != EDGE_INT8)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32, FLOAT16, INT8");
    if (y->type != x->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "output type differs from input type");
    if (!x->is_const || !x->is_sparse) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be a sparse constant");
    /* folded on a host build: a weights copy as DEQUANTIZE's folded output (edge_alloc_packed: reported apart from
     * the arena, as the Python interpreter keeps its folded arrays); a microcontroller holds it in its arena */
    fold = edge_folds_at_prepare(ctx, node);
    if ((s = expand(ctx, x, y, fold && EDGE_SIMD, &sp, &w)) != EDGE_OK) return s;
    node->user_data = w.dense;
    if ((s = edge_set_output_shape(ctx, node, 0, w.shape, w.rank)) != EDGE_OK) return s;
    if (fold) {
        y->data = w.dense;
        edge_fold_outputs(node, ctx);
    }
    return EDGE_OK;
}

void edge_eval_densify(const edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *y = edge_out(ctx, node, 0);
    if (y->bytes && y->data != node->user_data) memcpy(y->data, node->user_data, y->bytes);
}
