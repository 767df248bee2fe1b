/* STABLEHLO_COMPOSITE (builtin 206; ai-edge-torch's odml.* composites): the node runs its decomposition subgraph
 * (StableHLOCompositeOptions.decomposition_subgraph_index, field 1 of builtin_options_2), as LiteRT's
 * stablehlo_composite.cc and edge_sdk/runtime/kernels/control_flow.py prepare_stablehlo_composite: the node's
 * inputs are copied into the subgraph's inputs, the subgraph runs, its outputs are copied into the node's. The
 * composite's name and attributes only tell a delegate what the decomposition computes: not read. Static
 * shapes, as IF / WHILE (edge_call.h's edge_call_prepare, shared with control_flow.c).
 */
#include "edge_kernel.h"
#include "../edge_call.h"

EDGE_KERNEL(STABLEHLO_COMPOSITE, stablehlo_composite, 1, "FLOAT32 FLOAT16 INT32 UINT8 INT64 BOOL INT16 COMPLEX64 INT8 FLOAT64 COMPLEX128 UINT64 UINT32 UINT16", "decomposition subgraph with the node's static shapes")

typedef struct {
    int32_t decomposition; /* the subgraph index */
} composite_data_t;

edge_status_t edge_prepare_stablehlo_composite(edge_node_t *node, edge_ctx_t *ctx) {
    composite_data_t *d;
    int32_t s;
    edge_status_t st;
    if (node->options_type != 0 || node->options2_type != EDGE_OPTS2_StableHLOCompositeOptions)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "STABLEHLO_COMPOSITE: options missing");
    s = edge_opt_int(node, 1, 4, 0); /* decomposition_subgraph_index */
    if ((st = edge_call_prepare(node, ctx, s)) != EDGE_OK) return st;
    d = (composite_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->decomposition = s;
    node->user_data = d;
    return EDGE_OK;
}

void edge_eval_stablehlo_composite(const edge_node_t *node, edge_ctx_t *ctx) {
    edge_call_eval(node, ctx, ((const composite_data_t *)node->user_data)->decomposition);
}
