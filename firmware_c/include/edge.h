/* edge.h - the public API of edge-sdk's C micro-runtime.
 *
 * One interpreter runs one .tflite model out of one caller-provided arena; nothing is malloc'ed and the
 * runtime keeps no mutable globals: every byte of state is in the edge_interp_t you pass in or in the arena.
 *
 *     static edge_interp_t interp;
 *     static uint8_t arena[32 * 1024] __attribute__((aligned(16)));
 *     edge_status_t s = edge_init(&interp, model, model_len, arena, sizeof arena);
 *     if (s == EDGE_ARENA_TOO_SMALL)  ... interp.error.required bytes needed, interp.error.given available
 *     memcpy(edge_input(&interp, 0)->data, x, edge_input(&interp, 0)->bytes);
 *     edge_invoke(&interp);
 *     y = edge_output(&interp, 0)->data;
 *
 * edge_init verifies the whole flatbuffer (every offset, vtable, vector, string and index is checked
 * against the buffer length), looks every op up in the generated op table, runs every kernel's prepare
 * (which validates types, shapes and quantization and allocates its persistent data) and plans the arena
 * with the same algorithm, orderings and tie rules as edge_sdk/runtime/arena.py. After that edge_invoke trusts the
 * model: it only calls the kernels' eval functions.
 *
 * The model bytes must stay valid (and unchanged) for the interpreter's lifetime: weights are read in
 * place (zero copy, e.g. straight from flash). The model must start at a 4-byte aligned address (16 is
 * better: the converter aligns weight buffers to 16 within the file).
 *
 * Arena layout: [ planned tensors + scratch (from the start) | free | persistent data (from the end) ].
 * Input tensors live in the plan like TFLM's: their bytes may be reused by later ops, so write the inputs
 * again before every edge_invoke.
 *
 * Host byte order must be little-endian (the file's); every supported target is.
 */
#ifndef EDGE_H
#define EDGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ status */

typedef enum {
#define EDGE_STATUS(name, text) name,
#include "edge_status.def"
#undef EDGE_STATUS
    EDGE_STATUS_COUNT
} edge_status_t;

/* A fixed description of a status ("arena too small (...)"). Built with EDGE_NO_STATUS_STRINGS the table
 * is left out of the binary and this returns "" (keep the numbers; look them up in edge_status.def). */
const char *edge_status_str(edge_status_t status);

/* ------------------------------------------------------------------------------------------ types */

typedef enum {
#define EDGE_TYPE(name, code, bytes) EDGE_##name = code,
#include "edge_types.def"
#undef EDGE_TYPE
    EDGE_TYPE_COUNT
} edge_type_t;

/* Arena bytes of one element of a TensorType (0: the runtime cannot hold it). */
uint32_t edge_type_bytes(int type);
/* "INT8"; "?" when unknown; "" with EDGE_NO_STATUS_STRINGS or EDGE_STATUS_SITES (the host has the names) */
const char *edge_type_name(int type);

/* Builtin operator codes: EDGE_OP_FULLY_CONNECTED == 9, ... (edge_ops.def, generated from the schema). */
typedef enum {
#define EDGE_OP(name, code) EDGE_OP_##name = code,
#include "edge_ops.def"
#undef EDGE_OP
    EDGE_OP_COUNT_PLUS_ONE
} edge_op_t;

const char *edge_op_name(int op_code); /* "FULLY_CONNECTED"; "" with EDGE_NO_STATUS_STRINGS or EDGE_STATUS_SITES */

/* ------------------------------------------------------------------------------------------ tensors */

/* A tensor as the runtime and the kernels see it. Pointers into the model (dims, scales, zero points,
 * constant data) point at the verified flatbuffer; data of every other tensor points into the arena.
 * One of these lives in the arena's persistent part per tensor of the model, so it is kept small (40 bytes
 * on a 64-bit host, 28 on Cortex-M): the planner's lifetimes are temporary, a variable's initial value is
 * read from the model again when it is reset, the flags are bits. Limits that keep it small (edge_init
 * refuses a model beyond them with EDGE_LIMIT): zero points within int16 (TFLite's quantized types all
 * are), at most 65535 scales (channels) per tensor, at most 127 dimensions. */
typedef struct edge_tensor {
    void *data;                 /* arena bytes, or the constant's bytes in the model (never write those) */
    const int32_t *dims;        /* rank entries: the model's shape, or a shape a kernel's prepare set */
    const float *scales;        /* n_scales entries in the model (4-byte aligned, verified) */
    uint32_t bytes;             /* element count * edge_type_bytes(type) (packed size for INT4 constants) */
    /* Affine quantization: real = scale * (q - zero_point). quantized is 0 when the tensor has no scales
     * or no zero points (as TFLM decides). scale/zero_point are the first channel's (per-tensor values);
     * per-channel tensors have n_scales > 1 along quantized_dimension. */
    float scale;
    int16_t zero_point;
    uint16_t n_scales;
    int8_t rank;                /* 0..127 */
    uint8_t type;               /* edge_type_t */
    int8_t quantized_dimension;
    unsigned is_const : 1;      /* has data in the model (weights, biases, shape operands) */
    unsigned is_variable : 1;   /* schema is_variable: lives in the arena for the whole run, keeps state */
    unsigned is_sparse : 1;     /* has sparsity parameters (data holds the compressed values) */
    unsigned quantized : 1;
    unsigned folded_ : 1;       /* private: a node's output its prepare computed once (edge_fold_outputs): is_const */
    unsigned flags_ : 3;        /* private: EDGE_TENSOR_PLANNED_, EDGE_TENSOR_ZP_PER_CHANNEL_ (the zero points differ
                                 * per channel: scales then points at a persistent copy, n_scales int32 zero points
                                 * after the scales), EDGE_TENSOR_PAD_FOLDED_ (a PAD's output folded into its conv,
                                 * edge_fold_pad: no bytes of its own, data = the PAD's input's for the conv) */
} edge_tensor_t;

enum { EDGE_TENSOR_PLANNED_ = 1, EDGE_TENSOR_ZP_PER_CHANNEL_ = 2, EDGE_TENSOR_PAD_FOLDED_ = 4 };

/* Zero point of channel c (per-tensor tensors: every c gives the one zero point). */
int32_t edge_tensor_zero_point(const edge_tensor_t *t, int32_t c);
/* Product of the dims (elements). */
int64_t edge_tensor_elements(const edge_tensor_t *t);

/* ------------------------------------------------------------------------------------------ timing */

/* The per-op timing hook: now() is read before and after every op; the difference (mod 2^32) goes to the
 * trace. Host: clock_gettime in ns (edge_host_timer() in the runner); Cortex-M: DWT CYCCNT on silicon,
 * SysTick under QEMU (see boards/). units names the tick ("ns", "cycles", "systick"). */
typedef struct edge_timer {
    uint32_t (*now)(void *user);
    const char *units;
    void *user;
} edge_timer_t;

typedef struct edge_trace_entry {
    uint16_t subgraph;
    uint16_t node;
    uint16_t op;                /* builtin code (EDGE_OP_CUSTOM for custom ops) */
    uint16_t reserved_;
    uint32_t ticks;
} edge_trace_entry_t;

/* ------------------------------------------------------------------------------------------ plan */

/* One planned arena buffer (a tensor, or a kernel's scratch buffer when tensor == -1). */
enum { EDGE_PLAN_PATCH_CUT = -2 };

typedef struct edge_plan_entry {
    int32_t subgraph;
    int32_t tensor;             /* -1: scratch of (subgraph, node); EDGE_PLAN_PATCH_CUT: the patch stage's cut window
                                 * buffer (edge_init_patch; edge_sdk.runtime.patching.CUT_KEY) */
    int32_t node;               /* scratch only */
    int32_t first_use, last_use; /* steps: 0 = before subgraph 0's first op, op i of subgraph 0 = i + 1, ... */
    int64_t offset;             /* from the (16-aligned) start of the arena */
    int64_t size;               /* bytes asked for; the slot is size rounded up to 16 */
} edge_plan_entry_t;

typedef struct edge_plan_info {
    int32_t n_tensors;          /* planned tensors (the entries 0 .. n_tensors-1, in (subgraph, tensor) order) */
    int32_t n_scratch;          /* scratch entries after them */
    int64_t tensor_total;       /* bytes the tensor plan spans: equals edge_sdk.runtime.arena.plan(...).total */
    int64_t lower_bound;        /* the most aligned bytes live at one step */
    int64_t head_total;         /* tensors + scratch (scratch fills gaps, so often == tensor_total) */
    int32_t ordering;           /* which ordering won: 0 size, 1 first_use, 2 lifetime, 3 area */
    int32_t steps;
} edge_plan_info_t;

/* ------------------------------------------------------------------------------------------ interpreter */

/* Where edge_init stopped, so a caller (or a log line) can say what was wrong and where. */
typedef struct edge_error {
    edge_status_t status;
    int32_t subgraph;           /* -1 when not about a subgraph */
    int32_t node;               /* -1 when not about a node */
    int32_t tensor;             /* -1 when not about a tensor */
    int32_t op_code;            /* for node errors: builtin code (EDGE_UNSUPPORTED_OP: the refused op) */
    int32_t op_version;
    int64_t offset;             /* byte offset in the model of the bad table/field, -1 if none */
    int64_t required;           /* EDGE_ARENA_TOO_SMALL: bytes needed (exact when required_exact) */
    int64_t given;              /* EDGE_ARENA_TOO_SMALL: bytes given */
    uint8_t required_exact;     /* 0: the arena ran out before planning finished; required is a lower bound */
    const char *what;           /* a fixed short text naming the check ("Tensor.buffer"); NULL if none */
    int32_t what_line;          /* built with EDGE_STATUS_SITES (the Cortex-M default): the source line of that check
                                 * instead of its text (what is NULL; edge_kernel.h EDGE_REASON); 0 otherwise */
    const char *custom_code;    /* a custom op's node errors: its name (points into the model); NULL otherwise */
    int64_t element;            /* EDGE_BAD_INPUT: the flat element of error.tensor that is out of range, else -1 */
    int64_t value;              /* EDGE_BAD_INPUT: its value */
} edge_error_t;

struct edge_subgraph;
struct edge_node;

/* A patch stage (edge_init_patch): nodes first..last of subgraph 0 over a rows x cols grid of the cut. */
typedef struct edge_patch_plan {
    int32_t first, last;
    int32_t rows, cols;         /* 0: no patch stage */
} edge_patch_plan_t;
struct edge_patch;

/* The interpreter. Allocate it anywhere (static is typical); edge_init fills it. Fields are readable;
 * change nothing directly. */
typedef struct edge_interp {
    /* the model */
    const uint8_t *model;
    size_t model_len;
    int32_t n_subgraphs;
    int32_t n_tensors_total;    /* tensors of all subgraphs */
    int32_t n_nodes_total;
    struct edge_subgraph *subgraphs; /* in the arena's persistent part */
    edge_tensor_t *tensors;          /* all subgraphs' tensors, subgraph by subgraph */
    struct edge_node *nodes;         /* all subgraphs' nodes, subgraph by subgraph */
    /* the arena */
    uint8_t *arena;             /* as given */
    size_t arena_len;
    uint8_t *base;              /* arena rounded up to 16 */
    size_t base_len;
    size_t tail_used;           /* persistent bytes at the end of the arena */
    size_t packed_used;         /* of tail_used: the SIMD paths' packed weight copies (edge_alloc_packed) */
    size_t head_used;           /* planned bytes at the start (tensors + scratch) */
    size_t high_water;          /* most bytes in use at once, init's temporary planner memory included */
    edge_plan_info_t plan;
    /* running */
    uint8_t ready;
    uint8_t plan_only;
    uint8_t in_prepare;
    uint8_t memory_min;         /* EDGE_INIT_MEMORY_MIN: the least-RAM plan (in-place RESHAPE, PAD, depthwise) */
    const edge_timer_t *timer;
    edge_trace_entry_t *trace;
    uint32_t trace_capacity;
    uint32_t trace_count;       /* entries written by the last edge_invoke (may exceed capacity: dropped) */
    int32_t max_while_iterations; /* body runs one WHILE node may make per invoke; -1 (edge_init's): no bound */
    edge_status_t halt;         /* private: a kernel stopped the invoke (edge_eval_fail); error says where */
    edge_error_t error;
    /* resource variables (VAR_HANDLE ids): one slot per VAR_HANDLE op, persistent (edge_kernel.h) */
    struct edge_resource *resources;
    int32_t n_resources, max_resources;
    /* signatures: the model's SignatureDef vector (verified at load; read with edge_signature_*) */
    int64_t signature_defs_;
    int32_t n_signatures;
    /* patch-based execution (edge_init_patch): the stage as asked, and its windows (persistent; NULL: none) */
    edge_patch_plan_t patch_plan;
    struct edge_patch *patch;
} edge_interp_t;

/* Flags for edge_init_ex. */
enum {
    /* Verify and plan from the model's declared shapes only, without kernels (like edge_sdk.runtime.interpreter.
     * static_plan): works for models with ops this build lacks; edge_invoke then refuses to run. */
    EDGE_INIT_PLAN_ONLY = 1u << 0,
    /* The in-place plan (edge_sdk.runtime.interpreter.least_ram_plan, Interpreter(memory="inplace")): a RESHAPE's
     * output shares its input's bytes, a PAD writes its output over its input (back to front), an int8 depthwise
     * convolution with as many output as input channels writes its output over its input channel by channel
     * (an h x w plane of scratch), an elementwise op over an input of its size, when the input dies at that node
     * and is no subgraph's input or output (of no groups, the groups without the elementwise ops and all of them,
     * the smallest plan); kernels keep compact tables (edge_least_ram). The default is the layer-by-layer plan. */
    EDGE_INIT_MEMORY_MIN = 1u << 1
};

edge_status_t edge_init(edge_interp_t *interp, const void *model, size_t model_len, void *arena, size_t arena_len);
edge_status_t edge_init_ex(edge_interp_t *interp, const void *model, size_t model_len, void *arena,
                           size_t arena_len, uint32_t flags);
/* edge_init_ex with the least-RAM plan (EDGE_INIT_MEMORY_MIN, implied) plus patch-based execution of a stage
 * (edge_sdk.runtime.patching, Interpreter(memory="min"); the host chooses the stage and the grid, e.g.
 * Interpreter(...).patch_plan()): nodes plan->first..plan->last of subgraph 0, CONV_2D / DEPTHWISE_CONV_2D /
 * AVERAGE_POOL_2D / MAX_POOL_2D / PAD (of H and W) reading one whole tensor and writing the cut, run patch by patch over a
 * rows x cols grid of the cut, each patch from its receptive field (halos recomputed). Inside the stage only
 * per-patch windows exist; the plan is byte-identical to the Python interpreter's. A stage that is not such a
 * chain is refused (EDGE_BAD_ARGUMENT, naming the node); plan NULL or rows 0: edge_init_ex's plan. */
edge_status_t edge_init_patch(edge_interp_t *interp, const void *model, size_t model_len, void *arena,
                              size_t arena_len, uint32_t flags, const edge_patch_plan_t *plan);

/* Run subgraph 0 once. Returns EDGE_NOT_READY unless edge_init succeeded (without PLAN_ONLY); EDGE_LIMIT when a
 * WHILE node ran past edge_set_max_while_iterations (interp->error names it; the next invoke starts afresh). */
edge_status_t edge_invoke(edge_interp_t *interp);
/* Run subgraph s once (a signature's; edge_invoke is edge_invoke_at(interp, 0)); EDGE_BAD_ARGUMENT when out of
 * range. Its inputs are its tensors edge_tensor(interp, s, i): write them first (the plan may reuse their bytes). */
edge_status_t edge_invoke_at(edge_interp_t *interp, int32_t subgraph);

/* Bound the body runs of each WHILE node per invoke (n < 0: no bound, edge_init's default, as LiteRT). One more
 * stops the invoke: edge_invoke returns EDGE_LIMIT, interp->error names the WHILE node (never a hang). Call after
 * edge_init. */
void edge_set_max_while_iterations(edge_interp_t *interp, int32_t n);

/* Signatures (Model.signature_defs, verified by edge_init): the count; the index of a signature key (-1: none);
 * signature k's key and subgraph (-1 when k is out of range); the tensor index, within that subgraph, of its
 * input (output = 0) or output (output = 1) called name (-1: none). */
int32_t edge_signature_count(const edge_interp_t *interp);
int32_t edge_signature_find(const edge_interp_t *interp, const char *key);
const char *edge_signature_key(const edge_interp_t *interp, int32_t k);
int32_t edge_signature_subgraph(const edge_interp_t *interp, int32_t k);
int32_t edge_signature_tensor(const edge_interp_t *interp, int32_t k, int32_t output, const char *name);

/* Variable tensors back to their initial values (model data, else the INT8 zero point, else 0), and every
 * kernel that keeps state across invokes back to its state after edge_init (TFLM's ResetVariableTensors). */
edge_status_t edge_reset_state(edge_interp_t *interp);

/* Subgraph 0's inputs and outputs, in model order (NULL when i is out of range or not ready). */
int32_t edge_num_inputs(const edge_interp_t *interp);
int32_t edge_num_outputs(const edge_interp_t *interp);
edge_tensor_t *edge_input(edge_interp_t *interp, int32_t i);
edge_tensor_t *edge_output(edge_interp_t *interp, int32_t i);
/* Any tensor of any subgraph (NULL when out of range). */
edge_tensor_t *edge_tensor(edge_interp_t *interp, int32_t subgraph, int32_t tensor);

/* Arena accounting: bytes the model needs from the arena start (alignment padding + plan + persistent),
 * and the most bytes in use at any time (includes the planner's temporary memory during edge_init). */
size_t edge_arena_used(const edge_interp_t *interp);
size_t edge_arena_high_water(const edge_interp_t *interp);

/* The plan: entry k of edge_plan_count() (tensors first, in (subgraph, tensor) order, then scratch). */
int32_t edge_plan_count(const edge_interp_t *interp);
edge_status_t edge_plan_entry(const edge_interp_t *interp, int32_t k, edge_plan_entry_t *entry);

/* Per-op timing: before each op timer->now() is read, after it again; entry k of trace gets the op and the
 * difference. Pass timer NULL to switch it off. trace may be NULL (then only trace_count counts). */
void edge_set_timer(edge_interp_t *interp, const edge_timer_t *timer, edge_trace_entry_t *trace,
                    uint32_t capacity);

/* A one-line description of interp->error into buf ("node 3 (CONV_2D v9): unsupported op ..."); returns
 * buf. Uses only the runtime's own formatting (no printf). */
char *edge_error_message(const edge_interp_t *interp, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* EDGE_H */
