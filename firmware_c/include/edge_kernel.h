/* edge_kernel.h - THE KERNEL INTERFACE of the C runtime: what one op's code sees and may call.
 *
 * Every op is two functions in its own file firmware_c/src/kernels/<op>.c:
 *
 *     edge_status_t edge_prepare_<op>(edge_node_t *node, edge_ctx_t *ctx);    // at edge_init, once
 *     void          edge_eval_<op>(const edge_node_t *node, edge_ctx_t *ctx);  // at every edge_invoke
 *
 * plus one registration line the op-table generator (firmware_c/tools/gen_ops.py) reads from the file:
 *
 *     EDGE_KERNEL(FULLY_CONNECTED, fully_connected, 13, "FLOAT32/FLOAT32 INT8/INT8", "no hybrid")
 *         // builtin op, C name, highest version, the tensor types prepare takes, key constraints (may be "")
 *     EDGE_CUSTOM_KERNEL("SignalWindow", signal_window, 1, "INT16", "")   // a custom op by its custom_code
 *     EDGE_KERNEL_RESET(signal_window)                        // optional: edge_reset_<name>() is called
 *                                                             //   by edge_reset_state (kernels with state)
 *
 * The types: schema TensorType names (edge_types.def) separated by spaces, of the tensor the op computes on:
 * the node's first input that is not a resource handle (else its first output), as edge_sdk's
 * targets.profiles.node_dtype; "input N: TYPES" names another input (TRANSPOSE_CONV: input 2), "NONE" a node
 * with no data tensor (VAR_HANDLE, CALL_ONCE), "INT16/INT8" a data type with the type of its weights (input
 * 1: the filter of CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, FULLY_CONNECTED). List exactly the types prepare
 * accepts there (the build's EDGE_WITH_<TYPE> switches aside): `edge check` without a C compiler and
 * `edge flash`'s kernel selection refuse any other type from this list, the README's ops table shows it
 * (tests/test_op_table_c.py probes many ops with one-node models of each type against prepare). The
 * constraints are one short line for people (the README's ops table, op_table.OpRow.c_constraints), e.g.
 * "NHWC 4-D; per-channel INT8 filter"; they are not checked. All five arguments on one line; the old
 * three-argument form is an error of both the compiler (the macro takes five) and gen_ops.py (naming the
 * file and line). Then `make tables` regenerates edge_sdk/runtime/op_table_c.py and the README's ops table
 * (and `make -C firmware_c size-table` the flash size table, firmware_c/size_table.json).
 *
 * In C the macros only declare those functions; the generator writes edge_ops_generated.c (the op table), listing
 * every kernel file's ops, or with --model only the ops a model uses, so nothing else is linked.
 *
 * Prepare validates, eval runs blind (as in TFLM and in edge_sdk/runtime/kernels/node.py):
 *  - prepare checks types, ranks, shapes, quantization and options, returning EDGE_UNSUPPORTED_TYPE /
 *    EDGE_UNSUPPORTED for what the kernel cannot run and EDGE_BAD_NODE for inconsistent models, through
 *    EDGE_FAIL(ctx, status, "short reason") so the error names the reason; it sets output shapes it computes
 *    (edge_set_output_shape), reads options through the checked getters below, precomputes multipliers into
 *    persistent op data (edge_alloc_persistent, stored in node->user_data) and asks for scratch
 *    (edge_request_scratch). Prepare must not read or write non-constant tensor data (no arena yet).
 *  - eval reads inputs and writes outputs through the inline accessors, with no checks and no failure path.
 *    It must not keep pointers to tensor data between invokes (the plan may share those bytes).
 *
 * Tensors of a node: edge_in(ctx, node, i) is NULL for an omitted optional input (index -1) or i beyond
 * node->n_inputs; edge_out(ctx, node, i) likewise. Constant data points into the model (read-only).
 */
#ifndef EDGE_KERNEL_H
#define EDGE_KERNEL_H

#include "edge.h"

/* Tensor types a build carries kernel code for. 1 (the default) keeps every kernel's float32 and int16 paths;
 * a build for known models (make image / make size, from the models' tensor types) sets the unused ones to 0:
 * prepare then refuses such a node with EDGE_UNSUPPORTED_TYPE and the compiler drops the unused paths.
 * Kernels test them as plain C conditions (`if (EDGE_WITH_INT16 && in->type == EDGE_INT16)`), not #if. */
#ifndef EDGE_WITH_FLOAT32
#define EDGE_WITH_FLOAT32 1
#endif
#ifndef EDGE_WITH_INT16
#define EDGE_WITH_INT16 1
#endif
/* Patch-based execution (edge_init_patch): 0 compiles it out (edge flash builds a firmware without a patch plan
 * so: edge_init_patch then refuses a plan with EDGE_BAD_ARGUMENT). */
#ifndef EDGE_WITH_PATCH
#define EDGE_WITH_PATCH 1
#endif
/* The edge_init_ex flags a build serves. A firmware is built for one arena plan (edge flash, make size): without
 * EDGE_INIT_PLAN_ONLY (edge check's loader-and-planner run on the host), and for the layer plan without
 * EDGE_INIT_MEMORY_MIN either, whose planner tiers, in-place depthwise and kernels' least-RAM forms then compile out
 * (person_detect on the M4: 3,820 B of .text). edge_init_ex refuses a flag compiled out (EDGE_BAD_ARGUMENT). */
#ifndef EDGE_WITH_PLAN_ONLY
#define EDGE_WITH_PLAN_ONLY 1
#endif
#ifndef EDGE_WITH_MEMORY_MIN
#define EDGE_WITH_MEMORY_MIN 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct edge_node;
struct edge_ctx;
/* Registration lines for tools/gen_ops.py; in C they declare the kernel's functions (so a kernel file
 * and the generated table agree on the signatures). */
#define EDGE_KERNEL(OP, name, max_version, types, constraints)                                    \
    edge_status_t edge_prepare_##name(struct edge_node *node, struct edge_ctx *ctx);             \
    void edge_eval_##name(const struct edge_node *node, struct edge_ctx *ctx);
#define EDGE_CUSTOM_KERNEL(custom_code, name, max_version, types, constraints)                    \
    EDGE_KERNEL(CUSTOM, name, max_version, types, constraints)
#define EDGE_KERNEL_RESET(name) void edge_reset_##name(const struct edge_node *node, struct edge_ctx *ctx);


/* A verified flatbuffer table (the node's builtin options): scalar getters check every read against it. */
typedef struct edge_table {
    const uint8_t *table;       /* NULL: absent (every getter returns its default) */
    const uint8_t *vtable;
    uint16_t n_slots;
    uint16_t inline_size;
} edge_table_t;

struct edge_ctx;
typedef struct edge_ctx edge_ctx_t;
struct edge_node;

/* One op-table row (edge_ops_generated.c holds the array). */
typedef struct edge_kernel {
    uint16_t op;                /* builtin code; EDGE_OP_CUSTOM for custom ops */
    uint16_t max_version;
    const char *custom_code;    /* custom ops: the name matched against OperatorCode.custom_code */
    edge_status_t (*prepare)(struct edge_node *node, edge_ctx_t *ctx);
    void (*eval)(const struct edge_node *node, edge_ctx_t *ctx);
    void (*reset)(const struct edge_node *node, edge_ctx_t *ctx); /* NULL: no state of its own */
} edge_kernel_t;

extern const edge_kernel_t edge_kernels[];
extern const int32_t edge_kernel_count;

/* One operator of a subgraph. Index vectors point into the verified model (every index is in range or -1
 * for an omitted optional input). One of these lives in the arena's persistent part per operator, so it
 * holds what eval needs and what prepare reads often (48 bytes on a 64-bit host, 36 on Cortex-M); the rest
 * (custom options, intermediates, the plan's time steps) is read from the model, or kept only while planning. */
typedef struct edge_node {
    const int32_t *inputs;      /* never NULL (n_inputs 0: any address in the model) */
    const int32_t *outputs;
    void *user_data;            /* the kernel's persistent op data (set in prepare) */
    uint32_t scratch_bytes;     /* the node's scratch block: its requests one after another, 16-aligned each */
    uint32_t scratch_offset;    /* where the planner put the block (from the arena base). Private until then:
                                 * the builtin options table's place (edge_opt_* read it; prepare only) */
    uint16_t kernel_;           /* private: the row of edge_kernels (EDGE_NO_KERNEL_ when none) */
    uint16_t op;                /* builtin code (edge_op_t) */
    int16_t index;              /* within its subgraph */
    int16_t subgraph;
    int16_t n_inputs, n_outputs;
    uint8_t version;            /* OperatorCode.version (builtins go to 12; above 255 kept as 255: refused) */
    uint8_t options_type;       /* BuiltinOptions union code (0: none); check it before reading options */
    uint8_t options2_type;      /* BuiltinOptions2 union code (StableHLO ops) */
    uint8_t skip_;              /* private: invoke skips the node (EDGE_SKIP_METADATA names it) */
} edge_node_t;

/* The Model.metadata entry naming nodes invoke skips: int32 (subgraph, node) pairs, little-endian, of nodes whose
 * outputs no node reads (edge_sdk/runtime/shape_arithmetic.py c_loaded writes it: values known when the bytes were
 * built, handed to their readers as constants). */
#define EDGE_SKIP_METADATA "edge_skip_nodes"

enum { EDGE_NO_KERNEL_ = 0xffff };

/* Prepare-time: a custom op's custom_options bytes (NULL, *len 0 when it has none) and its custom_code (NULL
 * for builtin ops), read from the model. */
const uint8_t *edge_custom_options(edge_ctx_t *ctx, const edge_node_t *node, uint32_t *len);
const char *edge_custom_code(edge_ctx_t *ctx, const edge_node_t *node);
/* Prepare-time: a node's intermediate tensors (Operator.intermediates: the integer LSTM's gate and hidden scales),
 * their count and *indices into the model (tensor indices of the node's subgraph; NULL when none). */
int32_t edge_intermediates(edge_ctx_t *ctx, const edge_node_t *node, const int32_t **indices);

/* Patch-based execution (edge_init_patch): a window kernel (CONV_2D, DEPTHWISE_CONV_2D, the 2-D pools, PAD, the
 * elementwise ADD, SUB, MUL and standalone activations) runs on a window. Its input is h x w (a per-patch buffer,
 * or the whole stage input), its output oh x ow, and pt / pl (possibly negative) place the output window's first
 * receptive field in the input: output (oy, ox) reads input rows oy * stride + fy * dilation - pt, as the
 * kernel's own padding would (an elementwise op: stride 1, its input row oy - pt). The kernel uses these instead
 * of its prepared geometry and its portable loops (no SIMD fast path); batch and channels are whole. A constant
 * input of an elementwise op has no window (h = w = 0 for input 0): it broadcasts along no spatial axis. */
typedef struct edge_window {
    int32_t h, w, oh, ow, pt, pl;
    int32_t h1, w1, pt1, pl1;   /* a binary elementwise op (ADD, SUB, MUL): input 1's window, as input 0's */
} edge_window_t;

/* Prepare-time: whether the node runs in edge_init_patch's stage (its eval then also gets window calls, which
 * take the portable loops: a kernel that picked a fast path asks for the portable path's scratch too). */
static inline int edge_in_patch_stage(const edge_interp_t *it, const struct edge_node *node);

/* Prepare-time: the least-RAM plan was asked for (EDGE_INIT_MEMORY_MIN, or edge_init_patch): a kernel keeps its
 * persistent tables in their compact form there, a few instructions per use for bytes of RAM. */
static inline int edge_least_ram(const edge_interp_t *it);

/* Eval of a one-input elementwise kernel (RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, HARD_SWISH, LOGISTIC, TANH):
 * span(node, ctx, x, y, n) computes n contiguous elements of input 0 into output 0 (its int8 table, its int16 /
 * float32 loop). edge_unary_run calls it once for the whole tensors, or on a patch window (ctx->window: batch
 * and channels whole) once per output row of ow * c elements, from the input window's row oy - pt at column
 * -pl (the input's window is larger when another stage node reads it too), or once when the windows coincide;
 * span keeps its fast paths off while ctx->window is set. One copy in edge.c for all of them. */
typedef void (*edge_span_fn)(const struct edge_node *node, edge_ctx_t *ctx, const void *x, void *y, int64_t n);
void edge_unary_run(const struct edge_node *node, edge_ctx_t *ctx, edge_span_fn span);

/* Prepare-time: the bytes of a DEPTHWISE_CONV_2D's in-place plane buffer under the least-RAM plan (int8, as many
 * output as input channels, not in a patch stage; 0: none). The kernel asks for them as its LAST scratch request;
 * the planner drops them again when the node does not run in place. */
size_t edge_inplace_plane_bytes(const edge_interp_t *it, const struct edge_node *node);

/* The per-call context (lives in the interpreter; the subgraph being run selects the tensor array). */
struct edge_ctx {
    edge_interp_t *interp;
    edge_tensor_t *tensors;     /* the current subgraph's tensors */
    int32_t n_tensors;
    int32_t subgraph;
    const edge_window_t *window; /* eval of a patch window (see edge_window_t); NULL: the whole tensors */
};

static inline int edge_in_patch_stage(const edge_interp_t *it, const struct edge_node *node) {
    return EDGE_WITH_PATCH && it->patch_plan.rows > 0 && node->subgraph == 0 && node->index >= it->patch_plan.first &&
           node->index <= it->patch_plan.last;
}

static inline int edge_least_ram(const edge_interp_t *it) { return EDGE_WITH_MEMORY_MIN && it->memory_min; }

/* ---- tensors of a node (inline: the hot path) ---- */
static inline edge_tensor_t *edge_in(const edge_ctx_t *ctx, const edge_node_t *node, int32_t i) {
    return (i < node->n_inputs && node->inputs[i] >= 0) ? &ctx->tensors[node->inputs[i]] : (edge_tensor_t *)0;
}
static inline edge_tensor_t *edge_out(const edge_ctx_t *ctx, const edge_node_t *node, int32_t i) {
    return i < node->n_outputs ? &ctx->tensors[node->outputs[i]] : (edge_tensor_t *)0;
}

/* ---- prepare-time services ---- */

/* Persistent bytes from the arena's end, 8-aligned, zeroed; NULL when the arena is exhausted (return
 * EDGE_ARENA_TOO_SMALL then: the interpreter has recorded the shortfall). */
void *edge_alloc_persistent(edge_ctx_t *ctx, size_t bytes);
/* The same, for a copy of constant weights repacked for a fast path (counted apart: edge_interp_t.packed_used,
 * reported as its own figure, not as the model's arena) */
void *edge_alloc_packed(edge_ctx_t *ctx, size_t bytes);

/* Prepare-time: this node's outputs were computed here, once, into persistent bytes each output's data now points
 * at (edge_alloc_packed: counted with the packed copies); from now on they are constants (is_const: out of the
 * tensor plan, consumers pack them as weights) and the node's eval has nothing to do. The plan decision is
 * edge_sdk/runtime/planner.py's folded_constants (a DEQUANTIZE of a constant; the Python planner leaves the same
 * tensors out of its plan). */
void edge_fold_outputs(edge_node_t *node, edge_ctx_t *ctx);
/* 1 when `node` is computed once at prepare (planner.folded_constants' rule: on every build a DENSIFY of a sparse
 * constant; on host builds (EDGE_SIMD, src/simd/edge_simd.h) a DEQUANTIZE of a dense constant, a folded DENSIFY's
 * output included; never an output a subgraph returns): the kernel's prepare folds it, the plan-only step (no
 * prepare) leaves its output out of the plan as the prepared plans do. */
int32_t edge_folds_at_prepare(edge_ctx_t *ctx, const edge_node_t *node);
/* Every build: the index (in its subgraph) of the window op (pad_fold role EDGE_PAD_FOLD_CONV: CONV_2D,
 * DEPTHWISE_CONV_2D) a PAD (EDGE_PAD_FOLD_PAD: PAD, PADV2) `node` is folded into, else -1
 * (edge_sdk/runtime/planner.py's folded_pads rule: H / W padding with the conv's padding value, one reader,
 * each side's total padding within the conv's effective filter - 1; none under a patch plan). PAD's prepare then
 * folds its output (edge_fold_pad; its eval does nothing), the plan-only step as well. */
int32_t edge_pad_folds(edge_ctx_t *ctx, const edge_node_t *node);
/* A PAD edge_pad_folds folds: its output out of the tensor plan (is_const, EDGE_TENSOR_PAD_FOLDED_); the planner
 * points its data at the PAD's input, which the conv reads with the PAD's padding as its own (edge_conv_source). */
void edge_fold_pad(edge_node_t *node, edge_ctx_t *ctx);
/* Prepare-time, for a CONV_2D / DEPTHWISE_CONV_2D: the tensor (subgraph-local index) it reads: the folded PAD's input
 * (*top / *left its padding before H / W, added to the conv's own; bottom / right follow from the output size), else
 * its input 0 (*top = *left = 0). The conv keeps input 0's dims for its geometry and its quantization. */
int32_t edge_conv_source(edge_ctx_t *ctx, const edge_node_t *node, int32_t *top, int32_t *left);
/* Host builds (EDGE_SIMD): the PRELU node float32 or int8 ADD node `add` may run in its own pass (y = prelu(act(a + b)),
 * one pass over the bytes instead of two: palm_detection's ADD -> PRELU pairs), else NULL: no broadcast, the first node
 * after ADD with work at eval (only nodes folded at prepare between the two) is a PRELU reading ADD's output as its
 * input 0 (a constant slope per channel of the last axis), no subgraph returns that output, no patch plan.
 * edge_add_prelu_prev (PRELU's prepare, once it can run so): the ADD that runs `prelu` so, else NULL; it offers the pair
 * to the planner, which fuses it when the PRELU is that output's last reader (edge.c add_prelu_groups: the PRELU's
 * output then takes the ADD output's bytes, off the ADD's inputs or exactly at one). edge_add_prelu_runs (eval): 1
 * when the planner fused the pair (ADD writes the PRELU's output; invoke skips the PRELU), else 0 (both run apart). */
const edge_node_t *edge_add_prelu_next(edge_ctx_t *ctx, const edge_node_t *add);
const edge_node_t *edge_add_prelu_prev(edge_ctx_t *ctx, const edge_node_t *prelu);
int32_t edge_add_prelu_runs(const edge_node_t *prelu);
/* Host builds: an int8 PRELU node's per-channel step (its prepared table, prelu.c) over `rows` whole rows of its
 * channels, x to y (x may be y); returns its channel count, 0 (nothing written) when it has no table. */
int32_t edge_prelu_int8_rows(const edge_node_t *prelu, const int8_t *x, int8_t *y, int64_t rows);

/* Ask for `bytes` of scratch valid during this node's eval; *index receives the handle (>= 0: keep it in op data).
 * A node's requests form one block, planned after the tensors into gaps of the plan (bytes not live during
 * the node). */
edge_status_t edge_request_scratch(edge_ctx_t *ctx, edge_node_t *node, size_t bytes, int32_t *index);

/* Eval-time: the scratch buffer of handle `index` of this node (16-aligned). */
static inline void *edge_scratch(const edge_ctx_t *ctx, const edge_node_t *node, int32_t index) {
    return ctx->interp->base + node->scratch_offset + (uint32_t)index;
}

/* Give output i a shape computed in prepare (copied to persistent memory; the output's bytes follow). */
edge_status_t edge_set_output_shape(edge_ctx_t *ctx, const edge_node_t *node, int32_t i, const int32_t *dims,
                                    int32_t rank);

/* What a refusal's reason costs in flash. EDGE_REASON(text) is the reason a build keeps (an edge_reason_t):
 *   default (host builds)   the text itself (error.what);
 *   EDGE_STATUS_SITES       the source line of the EDGE_FAIL / WHAT call, an int (error.what_line; error.what stays
 *                           NULL): the Cortex-M builds of the Makefile, where a text costs its bytes plus a literal
 *                           pointer. edge_error_message prints it as "@<line>"; the host reads the sentence at that
 *                           line (tools/status_sites.py: edge.c for a loader error, else the node's kernel file or a
 *                           header it includes), as TFLM compiles MicroPrintf out of release builds;
 *   EDGE_NO_STATUS_STRINGS  nothing (NULL); it wins over EDGE_STATUS_SITES.
 * __LINE__ inside a macro is the line of the macro's name, so a call spread over lines is found by its first. */
#if defined(EDGE_STATUS_SITES) && !defined(EDGE_NO_STATUS_STRINGS)
typedef int32_t edge_reason_t;
#define EDGE_REASON(text) ((edge_reason_t)__LINE__)
#define EDGE_NO_REASON ((edge_reason_t)0)
#else
typedef const char *edge_reason_t;
#ifdef EDGE_NO_STATUS_STRINGS
#define EDGE_REASON(text) ((edge_reason_t)0)
#else
#define EDGE_REASON(text) (text)
#endif
#define EDGE_NO_REASON ((edge_reason_t)0)
#endif

/* Record why prepare refused the node; returns status. Use the macro (EDGE_REASON above decides what is kept). */
edge_status_t edge_fail(edge_ctx_t *ctx, edge_status_t status, edge_reason_t reason);
#define EDGE_FAIL(ctx, status, reason) edge_fail((ctx), (status), EDGE_REASON(reason))

/* Run another subgraph (CALL_ONCE / IF / WHILE kernels): its inputs must already hold the values. */
edge_status_t edge_invoke_subgraph(edge_ctx_t *ctx, int32_t subgraph);
/* Eval-time: stop the invoke (the one failure path eval has: WHILE's iteration bound). Records status and reason
 * naming the node in interp->error; the running subgraphs return at once and edge_invoke returns status. */
void edge_eval_fail(edge_ctx_t *ctx, const edge_node_t *node, edge_status_t status, edge_reason_t reason);
#define EDGE_EVAL_FAIL(ctx, node, status, reason) edge_eval_fail((ctx), (node), (status), EDGE_REASON(reason))
/* Eval-time: stop the invoke with EDGE_BAD_INPUT because element `element` of the node's input `input` holds
 * `value`, a position outside the dimension it indexes (GATHER, GATHER_ND, EMBEDDING_LOOKUP, SCATTER_ND: LiteRT
 * and TFLM fail the invoke there too). The error record names the node, that tensor, the element and the value. */
void edge_eval_bad_input(edge_ctx_t *ctx, const edge_node_t *node, int32_t input, int64_t element, int64_t value,
                         edge_reason_t reason);
#define EDGE_EVAL_BAD_INPUT(ctx, node, input, element, value, reason) \
    edge_eval_bad_input((ctx), (node), (input), (element), (value), EDGE_REASON(reason))
/* The tensors of another subgraph (for control-flow kernels to copy inputs/outputs). */
edge_tensor_t *edge_subgraph_tensor(edge_ctx_t *ctx, int32_t subgraph, int32_t tensor);
int32_t edge_subgraph_io(edge_ctx_t *ctx, int32_t subgraph, int32_t output, const int32_t **indices);

/* ---- builtin options: checked getters (prepare only; copy what eval needs into op data) ----
 * slot = the field's index in its schema table (schema.fbs order, e.g. FullyConnectedOptions:
 * 0 fused_activation_function, 1 weights_format, 2 keep_num_dims, 3 asymmetric_quantize_inputs).
 * A missing field (or a missing table) gives dflt. */
int32_t edge_opt_int(const edge_node_t *node, int32_t slot, int32_t size, int32_t dflt); /* size 1,2,4 signed */
uint32_t edge_opt_uint(const edge_node_t *node, int32_t slot, int32_t size, uint32_t dflt);
float edge_opt_float(const edge_node_t *node, int32_t slot, float dflt);
int64_t edge_opt_int64(const edge_node_t *node, int32_t slot, int64_t dflt); /* a long field (RandomOptions seeds) */
/* An int32 vector field ([int]): *values points into the model; returns EDGE_MODEL_MALFORMED when the
 * vector does not lie within the file. Absent: *values NULL, *count 0, EDGE_OK. */
edge_status_t edge_opt_int_vector(edge_ctx_t *ctx, const edge_node_t *node, int32_t slot, const int32_t **values,
                                  int32_t *count);

/* A string field: *str points at the NUL-terminated bytes in the model (verified). Absent: NULL, EDGE_OK. */
edge_status_t edge_opt_string(edge_ctx_t *ctx, const edge_node_t *node, int32_t slot, const char **str);

/* ---- resource variables (VAR_HANDLE / ASSIGN_VARIABLE / READ_VARIABLE) ----
 * The interpreter holds a table with one slot per VAR_HANDLE op of the model (persistent memory, sized at
 * init). A slot's index is the resource id, given in first-registration order (edge_sdk's numbering).
 * The variable's bytes are the kernels' business (persistent memory, sized by the first ASSIGN_VARIABLE's
 * prepare); edge_reset_state clears `held` (a reset variable reads as its reader's default). */
typedef struct edge_resource {
    const char *container, *shared_name; /* VAR_HANDLE names, in the model ("" when absent) */
    void *data;                 /* NULL until sized */
    uint32_t bytes;
    uint8_t type;               /* edge_type_t of the value */
    uint8_t held;               /* holds a value (fresh fill or an assignment); 0 after edge_reset_state */
    uint8_t reserved_[2];
} edge_resource_t;

/* Prepare: the id of (container, shared_name), registered on first sight; -1 when the table is full. */
int32_t edge_resource_id(edge_ctx_t *ctx, const char *container, const char *shared_name);
/* The slot of an id (NULL when out of range). */
static inline edge_resource_t *edge_resource(const edge_ctx_t *ctx, int32_t id) {
    return (id >= 0 && id < ctx->interp->n_resources) ? &ctx->interp->resources[id] : (edge_resource_t *)0;
}

/* ---- sparse constants (DENSIFY): a tensor's SparsityParameters, verified (prepare only) ----
 * Every vector points into the model and lies within it; values are read as the stored type (segments_type /
 * indices_type: 1 int32, 2 uint16, 3 uint8; 0 with NULL when absent). Semantic checks (orders in range,
 * indices within the dense shape) are the kernel's. EDGE_BAD_NODE when the tensor has no sparsity, EDGE_LIMIT
 * above EDGE_SPARSE_MAX_DIMS levels, EDGE_MODEL_MALFORMED / _INVALID for a bad table. */
#define EDGE_SPARSE_MAX_DIMS 8
typedef struct edge_sparse_dim {
    uint8_t format;             /* 0 DENSE, 1 SPARSE_CSR */
    uint8_t segments_type, indices_type;
    int32_t dense_size;
    const void *segments, *indices;
    int32_t n_segments, n_indices;
} edge_sparse_dim_t;
typedef struct edge_sparsity {
    const int32_t *traversal_order, *block_map;
    int32_t n_order, n_block_map, n_dims;
    edge_sparse_dim_t dims[EDGE_SPARSE_MAX_DIMS];
} edge_sparsity_t;
edge_status_t edge_tensor_sparsity(edge_ctx_t *ctx, const edge_tensor_t *t, edge_sparsity_t *sp);


/* The schema's option enums, for every kernel (one place: a kernel never defines its own copy;
 * tests/test_one_fact.py checks the values against edge_sdk/model/schema.py and greps the kernels). */

/* BuiltinOptions union codes the kernels check (schema.fbs union order). */
enum {
    EDGE_OPTS_NONE = 0,
    EDGE_OPTS_Conv2DOptions = 1,
    EDGE_OPTS_DepthwiseConv2DOptions = 2,
    EDGE_OPTS_Pool2DOptions = 5,
    EDGE_OPTS_FullyConnectedOptions = 8,
    EDGE_OPTS_SoftmaxOptions = 9,
    EDGE_OPTS_ConcatenationOptions = 10,
    EDGE_OPTS_AddOptions = 11,
    EDGE_OPTS_ResizeBilinearOptions = 15,
    EDGE_OPTS_ReshapeOptions = 17,
    EDGE_OPTS_SpaceToDepthOptions = 19,
    EDGE_OPTS_MulOptions = 21,
    EDGE_OPTS_PadOptions = 22,
    EDGE_OPTS_GatherOptions = 23,
    EDGE_OPTS_ReducerOptions = 27,
    EDGE_OPTS_SubOptions = 28,
    EDGE_OPTS_DivOptions = 29,
    EDGE_OPTS_SqueezeOptions = 30,
    EDGE_OPTS_TransposeConvOptions = 49,
    EDGE_OPTS_PackOptions = 59,
    EDGE_OPTS_UnpackOptions = 64,
    EDGE_OPTS_ResizeNearestNeighborOptions = 74,
    EDGE_OPTS_LeakyReluOptions = 75,
    EDGE_OPTS_MirrorPadOptions = 77,
    EDGE_OPTS_IfOptions = 92,
    EDGE_OPTS_WhileOptions = 93,
    EDGE_OPTS_DepthToSpaceOptions = 94,
    EDGE_OPTS_BatchMatMulOptions = 101,
    EDGE_OPTS_CallOnceOptions = 103,
};

/* BuiltinOptions union code of FAKE_QUANT (fake_quant.c). */
enum { EDGE_OPTS_FakeQuantOptions = 58 };

/* BuiltinOptions union codes of L2_NORMALIZATION (l2_normalization.c) and LOCAL_RESPONSE_NORMALIZATION
 * (local_response_normalization.c). */
enum { EDGE_OPTS_L2NormOptions = 12, EDGE_OPTS_LocalResponseNormalizationOptions = 13 };

/* BuiltinOptions union code of CUMSUM (cumsum.c). */
enum { EDGE_OPTS_CumsumOptions = 102 };

/* BuiltinOptions union code of ONE_HOT (one_hot.c). */
enum { EDGE_OPTS_OneHotOptions = 61 };

/* BuiltinOptions union code of REVERSE_SEQUENCE (reverse_sequence.c). */
enum { EDGE_OPTS_ReverseSequenceOptions = 87 };

/* BuiltinOptions union code of GELU (gelu.c). */
enum { EDGE_OPTS_GeluOptions = 116 };

/* BuiltinOptions union code of CONV_3D (schema.fbs union order; TOPK_V2 and NMS V4/V5 read no options). */
enum {
    EDGE_OPTS_Conv3DOptions = 106,
};

/* BuiltinOptions union codes of the recurrent ops, EMBEDDING_LOOKUP_SPARSE and BUCKETIZE (rnn.c, lstm.c,
 * embedding_lookup_sparse.c, bucketize.c). */
enum {
    EDGE_OPTS_RNNOptions = 7,
    EDGE_OPTS_LSTMOptions = 14,
    EDGE_OPTS_EmbeddingLookupSparseOptions = 20,
    EDGE_OPTS_SequenceRNNOptions = 31,
    EDGE_OPTS_BidirectionalSequenceLSTMOptions = 69,
    EDGE_OPTS_BidirectionalSequenceRNNOptions = 70,
};
/* BuiltinOptions union codes of RANDOM_UNIFORM / RANDOM_STANDARD_NORMAL / MULTINOMIAL (random.c) and BUCKETIZE
 * (bucketize.c); CONV_3D_TRANSPOSE reads EDGE_OPTS_Conv3DOptions. */
enum { EDGE_OPTS_RandomOptions = 114, EDGE_OPTS_BucketizeOptions = 115 };
/* BuiltinOptions2 union codes of REDUCE_WINDOW (reduce_window.c; node->options2_type) and STABLEHLO_COMPOSITE
 * (stablehlo_composite.c), and REDUCE_WINDOW's ReduceWindowFunction values (schema.fbs). */
enum { EDGE_OPTS2_ReduceWindowOptions = 20, EDGE_OPTS2_StableHLOCompositeOptions = 21 };
enum { EDGE_RW_ADD = 1, EDGE_RW_MUL = 2, EDGE_RW_MINIMUM = 3, EDGE_RW_MAXIMUM = 4, EDGE_RW_ALL = 5, EDGE_RW_ANY = 6 };

/* Fused activations (schema ActivationFunctionType). */
enum {
    EDGE_ACT_NONE = 0,
    EDGE_ACT_RELU = 1,
    EDGE_ACT_RELU_N1_TO_1 = 2,
    EDGE_ACT_RELU6 = 3,
    EDGE_ACT_TANH = 4,
    EDGE_ACT_SIGN_BIT = 5
};

/* Padding (schema Padding). */
enum { EDGE_PAD_SAME = 0, EDGE_PAD_VALID = 1 };

#ifdef __cplusplus
}
#endif
#endif /* EDGE_KERNEL_H */
