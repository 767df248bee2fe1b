/* SUB: y = act(a - b), broadcasting up to rank 6; the ADD kernel's code (add.c) with the second operand
 * subtracted (see add.c for the arithmetic of each type). */
#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"

EDGE_KERNEL(SUB, sub, 5)

edge_status_t edge_prepare_sub(edge_node_t *node, edge_ctx_t *ctx) { return edge_addsub_prepare(node, ctx, -1); }

void edge_eval_sub(const edge_node_t *node, edge_ctx_t *ctx) { edge_addsub_eval(node, ctx); }
