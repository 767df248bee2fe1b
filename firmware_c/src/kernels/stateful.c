/* Resource variables and CALL_ONCE (edge_sdk/runtime/kernels/stateful.py, TFLM var_handle.cc, read_variable.cc,
 * assign_variable.cc, call_once.cc), over the interpreter's resource table (edge_kernel.h).
 *
 * - VAR_HANDLE: registers (container, shared_name) and writes its id (int32) into its RESOURCE output.
 * - ASSIGN_VARIABLE: the first one prepared for a variable sizes it from its value input (persistent bytes,
 *   filled with the value's zero point byte, as TFLM's memset; 0 when unquantized); later ones must match.
 *   Eval copies the value in.
 * - READ_VARIABLE: copies the variable into its output (the model's declared shape); a variable that holds
 *   nothing (never assigned, or after edge_reset_state) reads as the output's zero point byte.
 * - CALL_ONCE: runs its init subgraph at the first invoke only (edge_reset_state does not re-arm it).
 *
 * The id a handle input carries is resolved at prepare: from the VAR_HANDLE of the same subgraph that
 * writes the handle tensor (prepared earlier, in execution order), or from a constant handle.
 */
#include <string.h>

#include "edge_kernel.h"
#include "../edge_dsp.h"

EDGE_KERNEL(VAR_HANDLE, var_handle, 1, "NONE", "")
EDGE_KERNEL(READ_VARIABLE, read_variable, 1, "FLOAT32 FLOAT16 INT32 UINT8 INT64 BOOL INT16 COMPLEX64 INT8 FLOAT64 COMPLEX128 UINT64 UINT32 UINT16", "")
EDGE_KERNEL(ASSIGN_VARIABLE, assign_variable, 1, "FLOAT32 FLOAT16 INT32 UINT8 INT64 BOOL INT16 COMPLEX64 INT8 FLOAT64 COMPLEX128 UINT64 UINT32 UINT16", "")
EDGE_KERNEL(CALL_ONCE, call_once, 1, "NONE", "")

#define VAR_HANDLE_OPTS 111 /* VarHandleOptions: 0 container, 1 shared_name */
#define CALL_ONCE_OPTS 103  /* CallOnceOptions: 0 init_subgraph_index */

typedef struct {
    int32_t id;
    uint8_t fill;       /* READ_VARIABLE: the byte a variable that holds nothing reads as */
    uint8_t reserved_[3];
} var_data_t;

typedef struct {
    int32_t subgraph;
    int32_t done;
} call_once_data_t;

static int handle_ok(const edge_tensor_t *t) {
    return t && (t->type == EDGE_RESOURCE || t->type == EDGE_INT32) && edge_tensor_elements(t) == 1;
}

/* The resource id of node input 0 (a handle), or -1 when it cannot be known at prepare. */
static int32_t handle_id(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *h = edge_in(ctx, node, 0);
    const edge_interp_t *it = ctx->interp;
    int32_t k;
    if (h->is_const) {
        int32_t v;
        memcpy(&v, h->data, 4);
        return v;
    }
    for (k = 0; k < it->n_nodes_total; k++) {
        const edge_node_t *nd = &it->nodes[k];
        if (nd->subgraph == node->subgraph && nd->op == EDGE_OP_VAR_HANDLE && nd->n_outputs >= 1 &&
            nd->outputs[0] == node->inputs[0] && nd->user_data)
            return ((const var_data_t *)nd->user_data)[0].id;
    }
    return -1;
}

static uint8_t zero_point_byte(const edge_tensor_t *t) {
    return t->quantized ? (uint8_t)((uint32_t)t->zero_point & 0xffu) : 0;
}

edge_status_t edge_prepare_var_handle(edge_node_t *node, edge_ctx_t *ctx) {
    const char *container = 0, *shared_name = 0;
    edge_tensor_t *out;
    var_data_t *d;
    edge_status_t s;
    if (node->n_inputs != 0 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "VAR_HANDLE expects no inputs and 1 output");
    out = edge_out(ctx, node, 0);
    if (out->type != EDGE_RESOURCE && out->type != EDGE_INT32)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "VAR_HANDLE: output must be a RESOURCE tensor");
    if (node->options_type == VAR_HANDLE_OPTS) {
        if ((s = edge_opt_string(ctx, node, 0, &container)) != EDGE_OK) return s;
        if ((s = edge_opt_string(ctx, node, 1, &shared_name)) != EDGE_OK) return s;
    }
    if (edge_tensor_elements(out) != 1 && (s = edge_set_output_shape(ctx, node, 0, 0, 0)) != EDGE_OK) return s;
    d = (var_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->id = edge_resource_id(ctx, container, shared_name);
    if (d->id < 0) return EDGE_FAIL(ctx, EDGE_LIMIT, "VAR_HANDLE: resource table full");
    node->user_data = d;
    return EDGE_OK;
}

void edge_eval_var_handle(const edge_node_t *node, edge_ctx_t *ctx) {
    int32_t id = ((const var_data_t *)node->user_data)->id;
    memcpy(edge_out(ctx, node, 0)->data, &id, 4);
}

edge_status_t edge_prepare_assign_variable(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *h, *v;
    edge_resource_t *r;
    var_data_t *d;
    if (node->n_inputs != 2 || node->n_outputs != 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ASSIGN_VARIABLE expects 2 inputs and no outputs");
    h = edge_in(ctx, node, 0);
    v = edge_in(ctx, node, 1);
    if (!handle_ok(h)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ASSIGN_VARIABLE: input 0 must be one RESOURCE handle");
    if (!v) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ASSIGN_VARIABLE: value is required");
    if (!edge_type_bytes(v->type) || v->type == EDGE_INT4 || v->type == EDGE_UINT4 || v->type == EDGE_INT2)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "ASSIGN_VARIABLE: a variable cannot hold the value's type");
    d = (var_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->id = handle_id(node, ctx);
    if (d->id < 0 && !h->is_const)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "ASSIGN_VARIABLE: handle not from a VAR_HANDLE of this subgraph");
    r = edge_resource(ctx, d->id);
    if (!r) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ASSIGN_VARIABLE: resource id out of range");
    if (!r->data) {
        r->data = edge_alloc_persistent(ctx, v->bytes ? v->bytes : 1);
        if (!r->data) return EDGE_ARENA_TOO_SMALL;
        r->bytes = v->bytes;
        r->type = v->type;
        memset(r->data, zero_point_byte(v), v->bytes);
        r->held = 1;
    } else if (r->type != v->type || r->bytes != v->bytes) {
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "ASSIGN_VARIABLE: value differs in type or size from the variable");
    }
    return EDGE_OK;
}

void edge_eval_assign_variable(const edge_node_t *node, edge_ctx_t *ctx) {
    edge_resource_t *r = edge_resource(ctx, ((const var_data_t *)node->user_data)->id);
    edge_copy_bytes(r->data, edge_in(ctx, node, 1)->data, r->bytes); /* a block copy (edge_dsp.h) */
    r->held = 1;
}

edge_status_t edge_prepare_read_variable(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *h, *out;
    edge_resource_t *r;
    var_data_t *d;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "READ_VARIABLE expects 1 input and 1 output");
    h = edge_in(ctx, node, 0);
    out = edge_out(ctx, node, 0);
    if (!handle_ok(h)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "READ_VARIABLE: input must be one RESOURCE handle");
    if (!edge_type_bytes(out->type) || out->type == EDGE_INT4 || out->type == EDGE_UINT4 || out->type == EDGE_INT2)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "READ_VARIABLE: output type");
    d = (var_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->id = handle_id(node, ctx);
    d->fill = zero_point_byte(out);
    if (d->id < 0 && !h->is_const)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "READ_VARIABLE: handle not from a VAR_HANDLE of this subgraph");
    r = edge_resource(ctx, d->id);
    if (!r) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "READ_VARIABLE: resource id out of range");
    if (r->data && r->bytes != out->bytes)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "READ_VARIABLE: the variable's size differs from the output's");
    return EDGE_OK;
}

void edge_eval_read_variable(const edge_node_t *node, edge_ctx_t *ctx) {
    const var_data_t *d = (const var_data_t *)node->user_data;
    const edge_resource_t *r = edge_resource(ctx, d->id);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    /* a size mismatch with an ASSIGN_VARIABLE prepared after this node reads as the default too */
    if (r->held && r->bytes == out->bytes) edge_copy_bytes(out->data, r->data, out->bytes);
    else memset(out->data, d->fill, out->bytes);
}

edge_status_t edge_prepare_call_once(edge_node_t *node, edge_ctx_t *ctx) {
    call_once_data_t *d;
    int32_t index;
    if (node->n_inputs != 0 || node->n_outputs != 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CALL_ONCE expects no inputs or outputs");
    if (node->options_type != CALL_ONCE_OPTS) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CALL_ONCE: options missing");
    index = edge_opt_int(node, 0, 4, 0);
    if (index < 0 || index >= ctx->interp->n_subgraphs) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CALL_ONCE: subgraph index out of range");
    if (index == node->subgraph) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "CALL_ONCE: calls its own subgraph");
    d = (call_once_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->subgraph = index;
    node->user_data = d;
    return EDGE_OK;
}

void edge_eval_call_once(const edge_node_t *node, edge_ctx_t *ctx) {
    call_once_data_t *d = (call_once_data_t *)node->user_data;
    if (d->done) return;
    d->done = 1;
    (void)edge_invoke_subgraph(ctx, d->subgraph);
}
