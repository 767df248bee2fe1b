/* The subgraph calls of the control-flow kernels (kernels/control_flow.c: IF, WHILE; kernels/stablehlo_composite.c:
 * STABLEHLO_COMPOSITE): tensors of a callee matched to the node's at prepare (static shapes) and copied whole at
 * eval. Header-only (static inline): a model with only one of those ops links only its kernel file. */
#ifndef EDGE_CALL_H
#define EDGE_CALL_H

#include <string.h>

#include "edge_kernel.h"

static inline int ec_same_shape(const edge_tensor_t *a, const edge_tensor_t *b) {
    int32_t k;
    if (a->type != b->type || a->rank != b->rank) return 0;
    for (k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k]) return 0;
    return 1;
}

static inline int ec_bool_scalar(const edge_tensor_t *t) {
    return t && t->type == EDGE_BOOL && edge_tensor_elements(t) == 1;
}

/* Each of the n tensors of subgraph s listed in index (its inputs or outputs) has the type and shape of node tensor
 * first + k (an input when inputs is set, else an output). */
static inline int ec_callee_like_node(edge_ctx_t *ctx, const edge_node_t *node, int32_t s, const int32_t *index,
                                      int32_t n, int32_t first, int inputs) {
    int32_t k;
    for (k = 0; k < n; k++) {
        const edge_tensor_t *t = edge_subgraph_tensor(ctx, s, index[k]);
        const edge_tensor_t *v = inputs ? edge_in(ctx, node, first + k) : edge_out(ctx, node, first + k);
        if (!t || !v || !ec_same_shape(t, v)) return 0;
    }
    return 1;
}

/* Copy n whole tensors: from node tensors (inputs from first, or outputs) into subgraph s's tensors index[k], or
 * back (to_node). Types and shapes were matched at prepare. */
static inline void ec_copy_tensors(edge_ctx_t *ctx, const edge_node_t *node, int32_t s, const int32_t *index,
                                   int32_t n, int32_t first, int node_inputs, int to_node) {
    int32_t k;
    for (k = 0; k < n; k++) {
        edge_tensor_t *t = edge_subgraph_tensor(ctx, s, index[k]);
        edge_tensor_t *v = node_inputs ? edge_in(ctx, node, first + k) : edge_out(ctx, node, first + k);
        if (!t->bytes) continue;
        if (to_node) memcpy(v->data, t->data, t->bytes);
        else memcpy(t->data, v->data, t->bytes);
    }
}

/* Prepare of a call of subgraph s with the node's inputs as its inputs and its outputs as the node's: as many
 * of each, callee inputs of the node inputs' types and shapes (static shapes), the node's output types those of
 * the callee's outputs; sets the node's output shapes. */
static inline edge_status_t edge_call_prepare(edge_node_t *node, edge_ctx_t *ctx, int32_t s) {
    const int32_t *ins, *outs;
    int32_t k, n_in, n_out;
    edge_status_t st;
    if (s < 0 || s >= ctx->interp->n_subgraphs) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "subgraph index out of range");
    n_in = edge_subgraph_io(ctx, s, 0, &ins);
    n_out = edge_subgraph_io(ctx, s, 1, &outs);
    if (n_in != node->n_inputs || n_out != node->n_outputs)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "the called subgraph's input or output count differs from the node's");
    for (k = 0; k < n_in; k++)
        if (!edge_in(ctx, node, k)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "an input is omitted");
    if (!ec_callee_like_node(ctx, node, s, ins, n_in, 0, 1))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "a called subgraph input differs from the node's input in type or shape (static shapes)");
    for (k = 0; k < n_out; k++) {
        const edge_tensor_t *t = edge_subgraph_tensor(ctx, s, outs[k]);
        if (!t || edge_out(ctx, node, k)->type != t->type)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "an output's type differs from the called subgraph's");
        if ((st = edge_set_output_shape(ctx, node, k, t->dims, t->rank)) != EDGE_OK) return st;
    }
    return EDGE_OK;
}

/* Eval of that call: node inputs into s's inputs, s runs, s's outputs into the node's outputs (stops quietly when
 * s stopped the invoke). */
static inline void edge_call_eval(const edge_node_t *node, edge_ctx_t *ctx, int32_t s) {
    const int32_t *ins, *outs;
    const int32_t n_in = edge_subgraph_io(ctx, s, 0, &ins), n_out = edge_subgraph_io(ctx, s, 1, &outs);
    ec_copy_tensors(ctx, node, s, ins, n_in, 0, 1, 0);
    if (edge_invoke_subgraph(ctx, s) != EDGE_OK) return; /* stopped inside (edge_eval_fail): the invoke ends */
    ec_copy_tensors(ctx, node, s, outs, n_out, 0, 0, 1);
}

#endif
