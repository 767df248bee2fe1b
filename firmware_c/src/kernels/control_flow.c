/* IF and WHILE: nodes that run other subgraphs (edge_sdk/runtime/kernels/control_flow.py; TFLM if.cc, while.cc),
 * on the subgraph-call helpers of edge_call.h (STABLEHLO_COMPOSITE's plain call is there too).
 *
 * - IF: input 0 is a BOOL of one element, the condition; inputs 1.. are copied into the chosen branch's inputs
 *   (then_subgraph_index when true, else_subgraph_index otherwise), the branch runs, its outputs are copied into
 *   the node's outputs.
 * - WHILE: the inputs (the loop variables) are copied into the node's outputs, which hold them during the loop.
 *   While cond_subgraph_index's BOOL output is true, body_subgraph_index maps the variables to their next values.
 *   edge_set_max_while_iterations bounds the body runs per node and invoke: one more stops the invoke
 *   (EDGE_LIMIT naming the node).
 *
 * Shapes are static (as TFLM requires): edge_init prepares every callee before the node that calls it, and
 * prepare holds the callees' tensors to the node's (same types and shapes, both branches' outputs alike), so eval
 * copies whole tensors blind. The plan nests a callee's steps inside the calling node's (edge.c lifetimes), so no
 * callee tensor shares bytes with what the node holds across the call.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_call.h"

EDGE_KERNEL(IF, if, 1, "BOOL", "BOOL condition of one element; branches with the node's static shapes")
EDGE_KERNEL(WHILE, while, 1, "FLOAT32 FLOAT16 INT32 UINT8 INT64 BOOL INT16 COMPLEX64 INT8 FLOAT64 COMPLEX128 UINT64 UINT32 UINT16", "loop variables of static shapes; cond gives one BOOL")

typedef struct {
    int32_t then_subgraph, else_subgraph;
} if_data_t;

typedef struct {
    int32_t cond_subgraph, body_subgraph;
} while_data_t;

edge_status_t edge_prepare_if(edge_node_t *node, edge_ctx_t *ctx) {
    if_data_t *d;
    const int32_t *ins, *outs, *other_outs;
    int32_t b, k, branch[2], n_in, n_out;
    edge_status_t s;
    if (node->n_inputs < 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "IF expects a condition input");
    if (node->options_type != EDGE_OPTS_IfOptions) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "IF: options missing");
    if (!edge_in(ctx, node, 0) || edge_in(ctx, node, 0)->type != EDGE_BOOL)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "IF: the condition must be BOOL");
    if (!ec_bool_scalar(edge_in(ctx, node, 0))) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "IF: the condition must hold one element");
    branch[0] = edge_opt_int(node, 0, 4, 0);
    branch[1] = edge_opt_int(node, 1, 4, 0);
    for (b = 0; b < 2; b++) {
        if (branch[b] < 0 || branch[b] >= ctx->interp->n_subgraphs) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "IF: subgraph index out of range");
        n_in = edge_subgraph_io(ctx, branch[b], 0, &ins);
        n_out = edge_subgraph_io(ctx, branch[b], 1, &outs);
        if (n_in != node->n_inputs - 1 || n_out != node->n_outputs)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "IF: a branch's input or output count differs from the node's");
        if (!ec_callee_like_node(ctx, node, branch[b], ins, n_in, 1, 1))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "IF: a branch input differs from the node's input in type or shape (static shapes)");
    }
    edge_subgraph_io(ctx, branch[0], 1, &outs);
    edge_subgraph_io(ctx, branch[1], 1, &other_outs);
    for (k = 0; k < node->n_outputs; k++) {
        const edge_tensor_t *a = edge_subgraph_tensor(ctx, branch[0], outs[k]);
        const edge_tensor_t *e = edge_subgraph_tensor(ctx, branch[1], other_outs[k]);
        if (!ec_same_shape(a, e))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "IF: the branches' outputs differ in type or shape (dynamic shapes are not supported)");
        if (edge_out(ctx, node, k)->type != a->type) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "IF: an output's type differs from the branches'");
        if ((s = edge_set_output_shape(ctx, node, k, a->dims, a->rank)) != EDGE_OK) return s;
    }
    d = (if_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->then_subgraph = branch[0];
    d->else_subgraph = branch[1];
    node->user_data = d;
    return EDGE_OK;
}

void edge_eval_if(const edge_node_t *node, edge_ctx_t *ctx) {
    const if_data_t *d = (const if_data_t *)node->user_data;
    const int32_t branch = ((const uint8_t *)edge_in(ctx, node, 0)->data)[0] ? d->then_subgraph : d->else_subgraph;
    const int32_t *ins, *outs;
    const int32_t n_in = edge_subgraph_io(ctx, branch, 0, &ins), n_out = edge_subgraph_io(ctx, branch, 1, &outs);
    ec_copy_tensors(ctx, node, branch, ins, n_in, 1, 1, 0);
    if (edge_invoke_subgraph(ctx, branch) != EDGE_OK) return; /* stopped inside (edge_eval_fail): the invoke ends */
    ec_copy_tensors(ctx, node, branch, outs, n_out, 0, 0, 1);
}

edge_status_t edge_prepare_while(edge_node_t *node, edge_ctx_t *ctx) {
    while_data_t *d;
    const int32_t *ins, *outs;
    int32_t k, cond, body, n = node->n_inputs;
    edge_status_t s;
    if (node->n_outputs != n) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "WHILE: as many outputs as inputs (the loop variables)");
    if (node->options_type != EDGE_OPTS_WhileOptions) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "WHILE: options missing");
    cond = edge_opt_int(node, 0, 4, 0);
    body = edge_opt_int(node, 1, 4, 0);
    if (cond < 0 || cond >= ctx->interp->n_subgraphs || body < 0 || body >= ctx->interp->n_subgraphs)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "WHILE: subgraph index out of range");
    for (k = 0; k < n; k++) {
        if (!edge_in(ctx, node, k)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "WHILE: a loop variable is omitted");
        if (edge_in(ctx, node, k)->type != edge_out(ctx, node, k)->type)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "WHILE: an output's type differs from its loop variable's");
    }
    if (edge_subgraph_io(ctx, cond, 0, &ins) != n || edge_subgraph_io(ctx, cond, 1, &outs) != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "WHILE: cond needs one input per loop variable and one output");
    if (!ec_bool_scalar(edge_subgraph_tensor(ctx, cond, outs[0])))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "WHILE: cond's output must be a BOOL of one element");
    if (!ec_callee_like_node(ctx, node, cond, ins, n, 0, 1))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "WHILE: a cond input differs from its loop variable in type or shape (static shapes)");
    if (edge_subgraph_io(ctx, body, 0, &ins) != n || edge_subgraph_io(ctx, body, 1, &outs) != n)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "WHILE: body needs one input and one output per loop variable");
    for (k = 0; k < n; k++) {
        /* a body that changes a loop variable's shape (a sequence grown by CONCATENATION each iteration): LiteRT
         * re-prepares the body at every iteration's shapes; this runtime plans every byte before the first invoke.
         * The message names the loop variable (edge_error_message prints the tensor's name). */
        const edge_tensor_t *v = edge_in(ctx, node, k), *next = edge_subgraph_tensor(ctx, body, outs[k]);
        if (next && next->type == v->type && !ec_same_shape(next, v)) {
            ctx->interp->error.tensor = node->inputs[k];
            return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "WHILE: the body changes this loop variable's shape each iteration (dynamic shapes; the Python interpreter runs it)");
        }
    }
    if (!ec_callee_like_node(ctx, node, body, ins, n, 0, 1) || !ec_callee_like_node(ctx, node, body, outs, n, 0, 1))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "WHILE: a body input or output differs from its loop variable in type or shape (static shapes)");
    for (k = 0; k < n; k++) {
        const edge_tensor_t *v = edge_in(ctx, node, k);
        if ((s = edge_set_output_shape(ctx, node, k, v->dims, v->rank)) != EDGE_OK) return s;
    }
    d = (while_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->cond_subgraph = cond;
    d->body_subgraph = body;
    node->user_data = d;
    return EDGE_OK;
}

/* Runs cond on the loop variables (the node's outputs); 1 when it says go on, 0 when done, -1 when stopped. */
static int32_t while_goes_on(const edge_node_t *node, edge_ctx_t *ctx, int32_t cond) {
    const int32_t *ins, *outs;
    const int32_t n = edge_subgraph_io(ctx, cond, 0, &ins);
    edge_subgraph_io(ctx, cond, 1, &outs);
    ec_copy_tensors(ctx, node, cond, ins, n, 0, 0, 0);
    if (edge_invoke_subgraph(ctx, cond) != EDGE_OK) return -1;
    return ((const uint8_t *)edge_subgraph_tensor(ctx, cond, outs[0])->data)[0] ? 1 : 0;
}

void edge_eval_while(const edge_node_t *node, edge_ctx_t *ctx) {
    const while_data_t *d = (const while_data_t *)node->user_data;
    const int32_t bound = ctx->interp->max_while_iterations;
    const int32_t *ins, *outs;
    const int32_t n = edge_subgraph_io(ctx, d->body_subgraph, 0, &ins);
    int32_t k, go, done = 0;
    edge_subgraph_io(ctx, d->body_subgraph, 1, &outs);
    for (k = 0; k < node->n_inputs; k++) { /* the node's outputs hold the loop variables (TFLM's while.cc) */
        const edge_tensor_t *x = edge_in(ctx, node, k);
        if (x->bytes) memcpy(edge_out(ctx, node, k)->data, x->data, x->bytes);
    }
    while ((go = while_goes_on(node, ctx, d->cond_subgraph)) == 1) {
        if (bound >= 0 && done >= bound) {
            EDGE_EVAL_FAIL(ctx, node, EDGE_LIMIT, "WHILE: the loop did not end within the iteration bound (edge_set_max_while_iterations)");
            return;
        }
        ec_copy_tensors(ctx, node, d->body_subgraph, ins, n, 0, 0, 0);
        if (edge_invoke_subgraph(ctx, d->body_subgraph) != EDGE_OK) return;
        ec_copy_tensors(ctx, node, d->body_subgraph, outs, n, 0, 0, 1);
        done++;
    }
}
