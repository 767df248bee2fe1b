/* edge.c - the runtime core: verified model reader, arena planner, prepare and the invoke loop.
 *
 * Read top to bottom:
 *   1. small helpers (little-endian reads, the error record, the persistent allocator)
 *   2. the flatbuffer verifier: tables, fields, references, vectors, strings - every read checked
 *   3. loading the model into edge_subgraph/edge_tensor/edge_node structs (weights stay in place)
 *   4. lifetimes: the shared time axis of edge_sdk/runtime/interpreter.py buffer_requests()
 *   5. the planner: edge_sdk/runtime/arena.py's greedy first fit, same orderings, same ties, same alignment
 *   6. edge_init: load, look up kernels, prepare, plan, place tensors, reset state
 *   7. edge_invoke and the rest of the API
 */
#include <string.h>

#include "edge.h"
#include "edge_kernel.h"
#include "edge_op_facts.h"
#include "edge_conv.h"
#include "edge_index.h"
#include "simd/edge_simd.h"

#define ALIGN 16
/* The arena's base (the plan's offset 0). A SIMD host build (x86-64 / aarch64 with the fast paths) puts it on a
 * cache line, so that tensors at 64-multiple offsets take the 64-byte loads and stores within one line: from an
 * arena at 16 mod 64 (numpy's buffers) every AVX-512 access straddled two, float 1x1 conv / depthwise 1.08-1.39x
 * slower. edge_arena_used counts the padding (up to 63 bytes from an arena aligned to less). MCU builds keep 16:
 * their figures do not move. */
#if EDGE_SIMD
#define BASE_ALIGN 64
#else
#define BASE_ALIGN ALIGN
#endif
#define PERSIST_ALIGN 8 /* persistent data: enough for int64 and double; the plan keeps 16 (edge_sdk.runtime.arena) */
#define MAX_TENSOR_BYTES ((int64_t)1 << 31) /* edge_sdk.runtime.interpreter.MAX_ARENA_BYTES */
#ifndef EDGE_MAX_CALL_DEPTH
#define EDGE_MAX_CALL_DEPTH 8
#endif
#define MAX_STEPS ((int32_t)1 << 24)

/* One subgraph: where its tensors and nodes start in the interpreter's flat arrays. */
typedef struct edge_subgraph {
    int32_t tensor_base, n_tensors;
    int32_t node_base, n_nodes;
    const int32_t *inputs, *outputs;
    int16_t n_inputs, n_outputs;
    uint8_t on_stack, marked;
} edge_subgraph_t;

/* ================================================================================= 1. helpers */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }
/* Equal NUL-terminated strings (the only comparison the runtime needs: smaller than libc's strcmp). */
static int str_eq(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}
static int64_t align_up(int64_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }
static int64_t align_persist(int64_t n) { return (n + PERSIST_ALIGN - 1) / PERSIST_ALIGN * PERSIST_ALIGN; }

/* error.what / error.what_line: the reason as the build keeps it (edge_kernel.h EDGE_REASON) */
#if defined(EDGE_STATUS_SITES) && !defined(EDGE_NO_STATUS_STRINGS)
#define EDGE_NO_REASON_TEXT /* reasons are source lines (edge_reason_t is an int) */
#endif
#ifdef EDGE_NO_REASON_TEXT
#define SET_REASON(e, r) ((e)->what = 0, (e)->what_line = (r))
#define GET_REASON(e) ((e)->what_line)
#else
#define SET_REASON(e, r) ((e)->what = (r), (e)->what_line = 0)
#define GET_REASON(e) ((e)->what)
#endif

static edge_status_t fail_at(edge_interp_t *it, edge_status_t s, edge_reason_t what, int64_t offset) {
    it->error.status = s;
    SET_REASON(&it->error, what);
    it->error.offset = offset;
    return s;
}

/* A loader check's name ("Tensor.buffer"), as the build keeps reasons (edge_kernel.h's EDGE_REASON: the text, its
 * source line under EDGE_STATUS_SITES, or nothing). */
#define WHAT(text) EDGE_REASON(text)

/* Op and type names are a host's to print when reasons are sites (the message keeps the op's code; the host has
 * the names): their tables cost ~1 KB of a Cortex-M image. */
#if defined(EDGE_NO_STATUS_STRINGS) || defined(EDGE_STATUS_SITES)
#define EDGE_NO_NAME_TABLES
#endif

const char *edge_status_str(edge_status_t status) {
#ifdef EDGE_NO_STATUS_STRINGS
    (void)status;
    return "";
#else
    static const char *const texts[] = {
#define EDGE_STATUS(name, text) text,
#include "edge_status.def"
#undef EDGE_STATUS
    };
    return (unsigned)status < (unsigned)EDGE_STATUS_COUNT ? texts[status] : "unknown status";
#endif
}

uint32_t edge_type_bytes(int type) {
    switch (type) {
#define EDGE_TYPE(name, code, bytes) case code: return bytes;
#include "edge_types.def"
#undef EDGE_TYPE
    default: return 0;
    }
}

const char *edge_type_name(int type) {
#ifdef EDGE_NO_NAME_TABLES
    (void)type;
    return "";
#else
    switch (type) {
#define EDGE_TYPE(name, code, bytes) case code: return #name;
#include "edge_types.def"
#undef EDGE_TYPE
    default: return "?";
    }
#endif
}

const char *edge_op_name(int op_code) {
#ifdef EDGE_NO_NAME_TABLES
    (void)op_code;
    return "";
#else
    switch (op_code) {
#define EDGE_OP(name, code) case code: return #name;
#include "edge_ops.def"
#undef EDGE_OP
    default: return "?";
    }
#endif
}

/* EDGE_INIT_PLAN_ONLY's loader-and-planner run (never in a build without it: EDGE_WITH_PLAN_ONLY=0) */
static int plan_only(const edge_interp_t *it) { return EDGE_WITH_PLAN_ONLY && it->plan_only; }

/* The op table row's graph facts of an op (include/edge_op_facts.h, generated from edge_sdk/runtime/op_table.py):
 * its family, effects, in-place and patch rules, pad_fold role; all zero for an op without any. */
static const edge_op_facts_t *edge_op_facts(int32_t op) {
    static const edge_op_facts_t none = {0, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0}, 0, {0, 0}};
    size_t k;
    for (k = 0; k < sizeof edge_op_facts_rows / sizeof edge_op_facts_rows[0]; k++)
        if (edge_op_facts_rows[k].op == op) return &edge_op_facts_rows[k];
    return &none;
}

/* A conv-family node's window options (padding, strides, activation, dilations) at the fields its op-table row's
 * facts name (conv_options, conv_slot: generated from the schema); SAME, strides 1 for any other op. */
static edge_conv_opts_t edge_window_opts(const edge_node_t *nd) {
    const edge_op_facts_t *facts = edge_op_facts(nd->op);
    return edge_conv_opts(nd, facts->family == EDGE_FAMILY_CONV ? facts->conv_options : -1, facts->conv_slot[0],
                          facts->conv_slot[1]);
}

/* Record an arena shortfall: `required` bytes from the arena's start (exact, or a lower bound). */
static edge_status_t too_small(edge_interp_t *it, int64_t required, uint8_t exact, edge_reason_t what) {
    it->error.required = required;
    it->error.given = (int64_t)it->arena_len;
    it->error.required_exact = exact;
    return fail_at(it, EDGE_ARENA_TOO_SMALL, what, -1);
}

/* Every index of v[0..n) in [lo, hi); otherwise the model is invalid (what names the vector). */
static edge_status_t check_indices(edge_interp_t *it, const int32_t *v, int32_t n, int32_t lo, int32_t hi,
                                   edge_reason_t what, int64_t where) {
    int32_t i;
    for (i = 0; i < n; i++)
        if (v[i] < lo || v[i] >= hi) return fail_at(it, EDGE_MODEL_INVALID, what, where);
    return EDGE_OK;
}

/* Persistent memory from the arena's end; NULL (with the shortfall recorded) when it does not fit. */
static void *tail_alloc(edge_interp_t *it, size_t bytes) {
    int64_t need = align_persist((int64_t)bytes);
    uint8_t *p;
    if ((int64_t)it->tail_used + need > (int64_t)it->base_len) {
        too_small(it, (int64_t)(it->base - it->arena) + (int64_t)it->tail_used + need, 0, WHAT("persistent data"));
        return 0;
    }
    it->tail_used += (size_t)need;
    p = it->base + it->base_len - it->tail_used;
    memset(p, 0, (size_t)need);
    if (it->tail_used > it->high_water) it->high_water = it->tail_used;
    return p;
}

/* ================================================================================= 2. flatbuffer verifier */

/* Verify the table at byte pos: alignment, its vtable, and its inline bytes, all within the file. */
static edge_status_t fb_table(edge_interp_t *it, int64_t pos, edge_reason_t what, edge_table_t *t) {
    const uint8_t *b = it->model;
    int64_t n = (int64_t)it->model_len, vt;
    uint16_t vt_size, inline_size;
    if (pos < 0 || pos % 4 || pos + 4 > n) return fail_at(it, EDGE_MODEL_MALFORMED, what, pos);
    vt = pos - (int64_t)(int32_t)rd32(b + pos);
    if (vt < 0 || vt % 2 || vt + 4 > n) return fail_at(it, EDGE_MODEL_MALFORMED, what, pos);
    vt_size = rd16(b + vt);
    inline_size = rd16(b + vt + 2);
    if (vt_size < 4 || vt_size % 2 || vt + vt_size > n || inline_size < 4 || pos + inline_size > n)
        return fail_at(it, EDGE_MODEL_MALFORMED, what, pos);
    t->table = b + pos;
    t->vtable = b + vt;
    t->n_slots = (uint16_t)((vt_size - 4) / 2);
    t->inline_size = inline_size;
    return EDGE_OK;
}

/* Offset of a field inside a verified table (0: absent), after checking it lies within the inline bytes. */
static int field_off(const edge_table_t *t, int32_t slot, int32_t size) {
    uint16_t off;
    if (!t->table || slot < 0 || slot >= t->n_slots) return 0;
    off = rd16(t->vtable + 4 + 2 * slot);
    if (!off) return 0;
    if (off < 4 || off + size > t->inline_size) return -1;
    return off;
}

static edge_status_t fb_u32(edge_interp_t *it, const edge_table_t *t, int slot, uint32_t dflt, uint32_t *v,
                            edge_reason_t what) {
    int off = field_off(t, slot, 4);
    if (off < 0) return fail_at(it, EDGE_MODEL_MALFORMED, what, t->table - it->model);
    *v = off ? rd32(t->table + off) : dflt;
    return EDGE_OK;
}
static edge_status_t fb_u8(edge_interp_t *it, const edge_table_t *t, int slot, uint8_t dflt, uint8_t *v,
                           edge_reason_t what) {
    int off = field_off(t, slot, 1);
    if (off < 0) return fail_at(it, EDGE_MODEL_MALFORMED, what, t->table - it->model);
    *v = off ? t->table[off] : dflt;
    return EDGE_OK;
}
static edge_status_t fb_u64(edge_interp_t *it, const edge_table_t *t, int slot, uint64_t *v, edge_reason_t what) {
    int off = field_off(t, slot, 8);
    if (off < 0) return fail_at(it, EDGE_MODEL_MALFORMED, what, t->table - it->model);
    *v = off ? rd64(t->table + off) : 0;
    return EDGE_OK;
}

/* Follow a reference field (uoffset) to the position it names: in the file, aligned to `align`.
 * *pos = 0 when the field is absent. */
static edge_status_t fb_ref(edge_interp_t *it, const edge_table_t *t, int slot, int64_t *pos, edge_reason_t what) {
    int off = field_off(t, slot, 4);
    int64_t field, target;
    *pos = 0;
    if (off < 0) return fail_at(it, EDGE_MODEL_MALFORMED, what, t->table - it->model);
    if (!off) return EDGE_OK;
    field = (t->table - it->model) + off;
    target = field + (int64_t)rd32(it->model + field);
    if (target + 4 > (int64_t)it->model_len || target % 4) return fail_at(it, EDGE_MODEL_MALFORMED, what, field);
    *pos = target;
    return EDGE_OK;
}

/* A vector field: *start = first element's position, *count elements of elem bytes, all in the file. */
static edge_status_t fb_vector(edge_interp_t *it, const edge_table_t *t, int slot, int64_t elem, int64_t *start,
                               int32_t *count, edge_reason_t what) {
    int64_t vpos, c;
    edge_status_t s = fb_ref(it, t, slot, &vpos, what);
    *start = 0;
    *count = 0;
    if (s != EDGE_OK || !vpos) return s;
    c = (int64_t)rd32(it->model + vpos);
    if (c * elem > (int64_t)it->model_len - vpos - 4 || c > 0x7fffffff)
        return fail_at(it, EDGE_MODEL_MALFORMED, what, vpos);
    *start = vpos + 4;
    *count = (int32_t)c;
    return EDGE_OK;
}

/* The table that element i of a vector of tables points to. */
static edge_status_t fb_vector_table(edge_interp_t *it, int64_t start, int32_t i, edge_reason_t what,
                                     edge_table_t *t) {
    int64_t epos = start + 4 * (int64_t)i;
    return fb_table(it, epos + (int64_t)rd32(it->model + epos), what, t);
}

/* A string at the position `spos` (already dereferenced): length, NUL terminator, in the file. */
static edge_status_t fb_string_at(edge_interp_t *it, int64_t spos, const char **str, edge_reason_t what) {
    int64_t n = (int64_t)it->model_len, len;
    if (spos + 4 > n || spos % 4) return fail_at(it, EDGE_MODEL_MALFORMED, what, spos);
    len = (int64_t)rd32(it->model + spos);
    if (len >= n - spos - 4 || it->model[spos + 4 + len] != 0) return fail_at(it, EDGE_MODEL_MALFORMED, what, spos);
    *str = (const char *)(it->model + spos + 4);
    return EDGE_OK;
}

static edge_status_t fb_string(edge_interp_t *it, const edge_table_t *t, int slot, const char **str,
                               edge_reason_t what) {
    int off = field_off(t, slot, 4);
    int64_t field;
    *str = 0;
    if (off < 0) return fail_at(it, EDGE_MODEL_MALFORMED, what, t->table - it->model);
    if (!off) return EDGE_OK;
    field = (t->table - it->model) + off;
    return fb_string_at(it, field + (int64_t)rd32(it->model + field), str, what);
}

/* An [int] vector as a pointer into the model (4-aligned: the model starts 4-aligned, vectors are). */
static edge_status_t fb_ints(edge_interp_t *it, const edge_table_t *t, int slot, const int32_t **v, int32_t *n,
                             edge_reason_t what) {
    int64_t start;
    edge_status_t s = fb_vector(it, t, slot, 4, &start, n, what);
    *v = (s == EDGE_OK && start) ? (const int32_t *)(const void *)(it->model + start) : 0;
    return s;
}

/* ---- options getters for kernels (the table was verified at load; each read is checked again) ---- */

/* Until the planner runs, a node's scratch_offset holds where its options table is: the byte distance from
 * node->inputs (an address in the model), or NO_OPTIONS. */
#define NO_OPTIONS 0x80000000u

/* The node's options table with its vtable (load verified both; the node keeps only the table's place). */
static edge_table_t node_options(const edge_node_t *node) {
    edge_table_t t;
    if (node->scratch_offset == NO_OPTIONS) {
        t.table = t.vtable = 0;
        t.n_slots = t.inline_size = 0;
        return t;
    }
    t.table = (const uint8_t *)(const void *)node->inputs + (int32_t)node->scratch_offset;
    t.vtable = t.table - (int32_t)rd32(t.table);
    t.n_slots = (uint16_t)((rd16(t.vtable) - 4) / 2);
    t.inline_size = rd16(t.vtable + 2);
    return t;
}

int32_t edge_opt_int(const edge_node_t *node, int32_t slot, int32_t size, int32_t dflt) {
    const edge_table_t opts = node_options(node);
    int off = field_off(&opts, slot, size);
    const uint8_t *p;
    if (off <= 0) return dflt;
    p = opts.table + off;
    if (size == 1) return (int8_t)p[0];
    if (size == 2) return (int16_t)rd16(p);
    return (int32_t)rd32(p);
}

uint32_t edge_opt_uint(const edge_node_t *node, int32_t slot, int32_t size, uint32_t dflt) {
    const edge_table_t opts = node_options(node);
    int off = field_off(&opts, slot, size);
    const uint8_t *p;
    if (off <= 0) return dflt;
    p = opts.table + off;
    return size == 1 ? p[0] : size == 2 ? rd16(p) : rd32(p);
}

float edge_opt_float(const edge_node_t *node, int32_t slot, float dflt) {
    const edge_table_t opts = node_options(node);
    int off = field_off(&opts, slot, 4);
    uint32_t u;
    float f;
    if (off <= 0) return dflt;
    u = rd32(opts.table + off);
    memcpy(&f, &u, 4);
    return f;
}

int64_t edge_opt_int64(const edge_node_t *node, int32_t slot, int64_t dflt) {
    const edge_table_t opts = node_options(node);
    int off = field_off(&opts, slot, 8);
    if (off <= 0) return dflt;
    return (int64_t)rd64(opts.table + off);
}

edge_status_t edge_opt_int_vector(edge_ctx_t *ctx, const edge_node_t *node, int32_t slot, const int32_t **values,
                                  int32_t *count) {
    const edge_table_t opts = node_options(node);
    *values = 0;
    *count = 0;
    if (!opts.table) return EDGE_OK;
    return fb_ints(ctx->interp, &opts, slot, values, count, WHAT("options vector"));
}

edge_status_t edge_opt_string(edge_ctx_t *ctx, const edge_node_t *node, int32_t slot, const char **str) {
    const edge_table_t opts = node_options(node);
    *str = 0;
    if (!opts.table) return EDGE_OK;
    return fb_string(ctx->interp, &opts, slot, str, WHAT("options string"));
}

/* ================================================================================= 3. loading */

/* Product of the dims, capped at 2^40 (far above any limit). Multiplies only while the product is below 2^32,
 * so it cannot overflow (dims < 2^31), and divides nothing (no 64-bit division helper on Cortex-M). */
static int64_t tensor_elements_capped(const int32_t *dims, int32_t rank) {
    const int64_t cap = (int64_t)1 << 40;
    int64_t n = 1;
    int32_t i;
    for (i = 0; i < rank; i++)
        if (dims[i] == 0) return 0;
    for (i = 0; i < rank; i++) {
        if (dims[i] > 1) n = n >> 32 ? cap : n * dims[i];
        if (n > cap) n = cap;
    }
    return n;
}

int64_t edge_tensor_elements(const edge_tensor_t *t) { return tensor_elements_capped(t->dims, t->rank); }

int32_t edge_tensor_zero_point(const edge_tensor_t *t, int32_t c) {
    if (!t->quantized) return 0;
    if (!(t->flags_ & EDGE_TENSOR_ZP_PER_CHANNEL_) || c <= 0 || c >= t->n_scales) return t->zero_point;
    return ((const int32_t *)(const void *)(t->scales + t->n_scales))[c];
}

/* The bytes of buffer `buf` (Buffer: 0 data [ubyte], 1 offset ulong, 2 size ulong; offset > 1: the bytes lie
 * elsewhere in the file), checked to lie within the file; *data NULL and *len 0 when it has none. */
static edge_status_t buffer_bytes(edge_interp_t *it, int64_t buffers, uint32_t buf, edge_table_t *bt,
                                  const uint8_t **data, int64_t *len) {
    edge_status_t s;
    uint64_t off, size;
    int64_t start;
    int32_t count;
    *data = 0;
    *len = 0;
    if ((s = fb_vector_table(it, buffers, (int32_t)buf, WHAT("Buffer"), bt)) != EDGE_OK) return s;
    if ((s = fb_u64(it, bt, 1, &off, WHAT("Buffer.offset"))) != EDGE_OK) return s;
    if ((s = fb_u64(it, bt, 2, &size, WHAT("Buffer.size"))) != EDGE_OK) return s;
    if (off > 1) {
        if (off > (uint64_t)it->model_len || size > (uint64_t)it->model_len - off)
            return fail_at(it, EDGE_MODEL_MALFORMED, WHAT("Buffer.offset"), bt->table - it->model);
        *data = it->model + off;
        *len = (int64_t)size;
        return EDGE_OK;
    }
    if ((s = fb_vector(it, bt, 0, 1, &start, &count, WHAT("Buffer.data"))) != EDGE_OK) return s;
    if (start) *data = it->model + start;
    *len = count;
    return EDGE_OK;
}

/* Fill one tensor from its table (Tensor: 0 shape, 1 type, 2 buffer, 3 name, 4 quantization, 5 is_variable,
 * 6 sparsity). buffers/n_buffers: the model's buffer vector. */
static edge_status_t load_tensor(edge_interp_t *it, const edge_table_t *tt, edge_tensor_t *t, int64_t buffers,
                                 int32_t n_buffers) {
    edge_status_t s;
    uint8_t type, var;
    uint32_t buf;
    int32_t i, n_scale = 0, n_zp = 0;
    int64_t qpos, scale_start, zp_start, elements, sparsity;
    const char *name;
    edge_table_t q, bt;
    int32_t qdim = 0, rank;

    if ((s = fb_ints(it, tt, 0, &t->dims, &rank, WHAT("Tensor.shape"))) != EDGE_OK) return s;
    if (rank > 127) return fail_at(it, EDGE_LIMIT, WHAT("Tensor.shape (over 127 dimensions)"), tt->table - it->model);
    t->rank = (int8_t)rank;
    for (i = 0; i < t->rank; i++)
        if (t->dims[i] < 0) return fail_at(it, EDGE_MODEL_INVALID, WHAT("Tensor.shape (negative)"), tt->table - it->model);
    if ((s = fb_u8(it, tt, 1, 0, &type, WHAT("Tensor.type"))) != EDGE_OK) return s;
    if (type >= EDGE_TYPE_COUNT) return fail_at(it, EDGE_MODEL_INVALID, WHAT("Tensor.type (unknown)"), tt->table - it->model);
    t->type = type;
    if ((s = fb_u32(it, tt, 2, 0, &buf, WHAT("Tensor.buffer"))) != EDGE_OK) return s;
    if ((int64_t)buf >= (int64_t)n_buffers)
        return fail_at(it, EDGE_MODEL_INVALID, WHAT("Tensor.buffer (out of range)"), tt->table - it->model);
    if ((s = fb_string(it, tt, 3, &name, WHAT("Tensor.name"))) != EDGE_OK) return s;
    if ((s = fb_u8(it, tt, 5, 0, &var, WHAT("Tensor.is_variable"))) != EDGE_OK) return s;
    t->is_variable = var ? 1 : 0;
    if ((s = fb_ref(it, tt, 6, &sparsity, WHAT("Tensor.sparsity"))) != EDGE_OK) return s;
    if (sparsity) {
        edge_table_t st;
        if ((s = fb_table(it, sparsity, WHAT("SparsityParameters"), &st)) != EDGE_OK) return s;
        t->is_sparse = 1;
    }

    /* quantization: QuantizationParameters 2 scale [float], 3 zero_point [long], 6 quantized_dimension */
    if ((s = fb_ref(it, tt, 4, &qpos, WHAT("Tensor.quantization"))) != EDGE_OK) return s;
    if (qpos) {
        uint32_t qd;
        if ((s = fb_table(it, qpos, WHAT("QuantizationParameters"), &q)) != EDGE_OK) return s;
        if ((s = fb_vector(it, &q, 2, 4, &scale_start, &n_scale, WHAT("QuantizationParameters.scale"))) != EDGE_OK)
            return s;
        if ((s = fb_vector(it, &q, 3, 8, &zp_start, &n_zp, WHAT("QuantizationParameters.zero_point"))) != EDGE_OK)
            return s;
        if ((s = fb_u32(it, &q, 6, 0, &qd, WHAT("QuantizationParameters.quantized_dimension"))) != EDGE_OK) return s;
        qdim = (int32_t)qd;
        if (n_scale > 0 && n_zp > 0) {
            for (i = 0; i < n_zp; i++) {
                int64_t z = (int64_t)rd64(it->model + zp_start + 8 * (int64_t)i);
                if (z < -2147483647 - 1 || z > 2147483647)
                    return fail_at(it, EDGE_MODEL_INVALID, WHAT("zero point outside int32"), zp_start + 8 * i);
                if (z < -32768 || z > 32767)
                    return fail_at(it, EDGE_LIMIT, WHAT("zero point outside int16"), zp_start + 8 * i);
            }
            if (n_scale > 0xffff) return fail_at(it, EDGE_LIMIT, WHAT("over 65535 scales"), qpos);
            if (n_scale > 1 && t->rank == 1 && (qdim < 0 || qdim >= t->rank)) qdim = 0;
            if (n_scale > 1 && (qdim < 0 || qdim >= t->rank))
                return fail_at(it, EDGE_MODEL_INVALID, WHAT("quantized_dimension out of range"), qpos);
            if (n_scale > 1 && qdim > 127) return fail_at(it, EDGE_LIMIT, WHAT("quantized_dimension above 127"), qpos);
            t->quantized = 1;
            t->scales = (const float *)(const void *)(it->model + scale_start);
            t->n_scales = (uint16_t)n_scale;
            if (n_zp == n_scale && n_scale > 1) {
                /* zero points that differ per channel (rare: per-channel weights have zero points of 0) get a
                 * persistent copy of the scales followed by the zero points as int32 */
                int64_t z0 = (int64_t)rd64(it->model + zp_start);
                for (i = 1; i < n_zp; i++)
                    if ((int64_t)rd64(it->model + zp_start + 8 * (int64_t)i) != z0) break;
                if (i < n_zp) {
                    uint8_t *copy = (uint8_t *)tail_alloc(it, 8 * (size_t)n_scale);
                    int32_t *zps = (int32_t *)(void *)(copy + 4 * (size_t)n_scale);
                    if (!copy) return EDGE_ARENA_TOO_SMALL;
                    memcpy(copy, it->model + scale_start, 4 * (size_t)n_scale);
                    for (i = 0; i < n_zp; i++) zps[i] = (int32_t)(int64_t)rd64(it->model + zp_start + 8 * (int64_t)i);
                    t->scales = (const float *)(const void *)copy;
                    t->flags_ |= EDGE_TENSOR_ZP_PER_CHANNEL_;
                }
            }
            t->quantized_dimension = (int8_t)(qdim < 0 ? -1 : qdim > 127 ? 127 : qdim);
            memcpy(&t->scale, it->model + scale_start, 4);
            t->zero_point = (int16_t)(int64_t)rd64(it->model + zp_start);
        }
    }

    elements = tensor_elements_capped(t->dims, t->rank);
    {
        const uint8_t *data;
        int64_t len;
        if ((s = buffer_bytes(it, buffers, buf, &bt, &data, &len)) != EDGE_OK) return s;
        if (len > 0 && !t->is_variable) {
            uint32_t item = edge_type_bytes(t->type);
            int64_t expect;
            uint32_t align = item > 4 ? 4 : (item ? item : 1);
            /* a STRING / RESOURCE / VARIANT constant (a TF export's label list, a table's keys: LiteRT loads them):
             * left data-less; the planner refuses one an op reads ("a used tensor's type has no arena form") */
            if (!item) return EDGE_OK;
            if (t->type == EDGE_INT4 || t->type == EDGE_UINT4) expect = (elements + 1) / 2;
            else if (t->type == EDGE_INT2) expect = (elements + 3) / 4;
            else expect = elements * item;
            if (t->is_sparse ? (len & (item - 1)) /* item: a power of two */ : (len != expect))
                return fail_at(it, EDGE_MODEL_INVALID, WHAT("constant size does not match its shape"), bt.table - it->model);
            if ((uintptr_t)data % align)
                return fail_at(it, EDGE_MODEL_MALFORMED, WHAT("constant data misaligned"), data - it->model);
            if (item == 8 && (uintptr_t)data % 8) {
                /* 8-byte constants (int64 biases) may sit 4-aligned in real models; kernels read them as
                 * int64_t, so they get an aligned copy in persistent memory (found by the fuzzer) */
                void *copy = tail_alloc(it, (size_t)len);
                if (!copy) return EDGE_ARENA_TOO_SMALL;
                memcpy(copy, data, (size_t)len);
                data = (const uint8_t *)copy;
            }
            t->is_const = 1;
            t->data = (void *)(uintptr_t)data;
            t->bytes = (uint32_t)len;
        }
    }
    if (!t->is_const) {
        uint32_t item = edge_type_bytes(t->type);
        int64_t bytes = elements * (int64_t)item;
        if (item && bytes > MAX_TENSOR_BYTES) return fail_at(it, EDGE_LIMIT, WHAT("tensor above 2 GiB"), tt->table - it->model);
        t->bytes = (uint32_t)bytes;
    }
    return EDGE_OK;
}

/* The model's tables again after load verified them (so these reads cannot fail): subgraph s's table, its
 * tensor k's table, its operator k's table, and a variable tensor's initial value in its buffer (*data NULL
 * when it has none). Reading them back keeps them out of the persistent structs. */
static edge_table_t model_subgraph(edge_interp_t *it, int32_t s) {
    edge_table_t mt, st;
    int64_t subgraphs;
    int32_t n;
    fb_table(it, (int64_t)rd32(it->model), WHAT("Model"), &mt);
    fb_vector(it, &mt, 2, 4, &subgraphs, &n, WHAT("Model.subgraphs"));
    fb_vector_table(it, subgraphs, s, WHAT("SubGraph"), &st);
    return st;
}

static edge_table_t model_element(edge_interp_t *it, int32_t s, int32_t slot, int32_t k) {
    edge_table_t st = model_subgraph(it, s), t;
    int64_t start;
    int32_t n;
    fb_vector(it, &st, slot, 4, &start, &n, WHAT("SubGraph vector"));
    fb_vector_table(it, start, k, WHAT("SubGraph element"), &t);
    return t;
}

static void variable_init(edge_interp_t *it, int32_t s, int32_t k, const uint8_t **data, int64_t *len) {
    edge_table_t mt, tt = model_element(it, s, 0, k), bt;
    int64_t buffers;
    int32_t n;
    uint32_t buf = 0;
    fb_table(it, (int64_t)rd32(it->model), WHAT("Model"), &mt);
    fb_vector(it, &mt, 4, 4, &buffers, &n, WHAT("Model.buffers"));
    fb_u32(it, &tt, 2, 0, &buf, WHAT("Tensor.buffer"));
    buffer_bytes(it, buffers, buf, &bt, data, len);
    if (*len <= 0) *data = 0;
}

/* Operator: 0 opcode_index, 1 inputs, 2 outputs, 3 builtin_options_type, 4 builtin_options, 5 custom_options,
 * 8 intermediates, 9/10 large custom options offset/size, 11/12 builtin_options_2 type/table.
 * OperatorCode: 0 deprecated_builtin_code (byte), 1 custom_code, 2 version (default 1), 3 builtin_code. */
static edge_status_t load_node(edge_interp_t *it, const edge_table_t *ot, edge_node_t *nd, const edge_subgraph_t *sg,
                               int64_t opcodes, int32_t n_opcodes) {
    edge_status_t s;
    uint32_t oi, version, builtin;
    uint8_t deprecated, otype, otype2;
    int64_t opos, cstart;
    int32_t ccount, code;
    uint64_t loff, lsize;
    edge_table_t ct, options;
    const int32_t *intermediates;
    int32_t n_intermediates, n_in, n_out;
    const char *custom_code;
    const int64_t where = ot->table - it->model;

    if ((s = fb_u32(it, ot, 0, 0, &oi, WHAT("Operator.opcode_index"))) != EDGE_OK) return s;
    if ((int64_t)oi >= n_opcodes) return fail_at(it, EDGE_MODEL_INVALID, WHAT("Operator.opcode_index (out of range)"), where);
    if ((s = fb_vector_table(it, opcodes, (int32_t)oi, WHAT("OperatorCode"), &ct)) != EDGE_OK) return s;
    if ((s = fb_u8(it, &ct, 0, 0, &deprecated, WHAT("OperatorCode.deprecated_builtin_code"))) != EDGE_OK) return s;
    if ((s = fb_u32(it, &ct, 2, 1, &version, WHAT("OperatorCode.version"))) != EDGE_OK) return s;
    if ((s = fb_u32(it, &ct, 3, 0, &builtin, WHAT("OperatorCode.builtin_code"))) != EDGE_OK) return s;
    if ((s = fb_string(it, &ct, 1, &custom_code, WHAT("OperatorCode.custom_code"))) != EDGE_OK) return s;
    code = (int32_t)builtin > (int8_t)deprecated ? (int32_t)builtin : (int8_t)deprecated;
    nd->op = (uint16_t)(code < 0 ? 0xffff : code > 0xfffe ? 0xfffe : code);
    nd->version = (uint8_t)((int32_t)version < 0 ? 0 : version > 0xff ? 0xff : version);
    it->error.op_code = code;
    it->error.op_version = (int32_t)version;
    it->error.custom_code = code == EDGE_OP_CUSTOM ? custom_code : 0;

    nd->scratch_offset = NO_OPTIONS;
    nd->kernel_ = EDGE_NO_KERNEL_;
    if ((s = fb_ints(it, ot, 1, &nd->inputs, &n_in, WHAT("Operator.inputs"))) != EDGE_OK) return s;
    if (!nd->inputs) nd->inputs = (const int32_t *)(const void *)it->model; /* the anchor of the options' place */
    if ((s = fb_ints(it, ot, 2, &nd->outputs, &n_out, WHAT("Operator.outputs"))) != EDGE_OK) return s;
    if ((s = fb_ints(it, ot, 8, &intermediates, &n_intermediates, WHAT("Operator.intermediates"))) != EDGE_OK)
        return s;
    if (n_in > 0x7fff || n_out > 0x7fff) return fail_at(it, EDGE_LIMIT, WHAT("an operator with over 32767 inputs or outputs"), where);
    nd->n_inputs = (int16_t)n_in;
    nd->n_outputs = (int16_t)n_out;
    if ((s = check_indices(it, nd->inputs, n_in, -1, sg->n_tensors, WHAT("Operator.inputs (tensor out of range)"),
                           where)) != EDGE_OK ||
        (s = check_indices(it, nd->outputs, n_out, 0, sg->n_tensors, WHAT("Operator.outputs (tensor out of range)"),
                           where)) != EDGE_OK ||
        (s = check_indices(it, intermediates, n_intermediates, 0, sg->n_tensors,
                           WHAT("Operator.intermediates (tensor out of range)"), where)) != EDGE_OK)
        return s;

    if ((s = fb_u8(it, ot, 3, 0, &otype, WHAT("Operator.builtin_options_type"))) != EDGE_OK) return s;
    if ((s = fb_u8(it, ot, 11, 0, &otype2, WHAT("Operator.builtin_options_2_type"))) != EDGE_OK) return s;
    nd->options_type = otype;
    nd->options2_type = otype2;
    if ((s = fb_ref(it, ot, otype ? 4 : 12, &opos, WHAT("Operator.builtin_options"))) != EDGE_OK) return s;
    if (opos && (otype || otype2)) {
        if ((s = fb_table(it, opos, WHAT("Operator.builtin_options"), &options)) != EDGE_OK) return s;
        const int64_t rel = options.table - (const uint8_t *)(const void *)nd->inputs;
        if (rel <= -0x7fffffff || rel > 0x7fffffff)
            return fail_at(it, EDGE_LIMIT, WHAT("Operator.builtin_options (over 2 GiB away)"), where);
        nd->scratch_offset = (uint32_t)(int32_t)rel;
    }

    if ((s = fb_u64(it, ot, 9, &loff, WHAT("Operator.large_custom_options_offset"))) != EDGE_OK) return s;
    if ((s = fb_u64(it, ot, 10, &lsize, WHAT("Operator.large_custom_options_size"))) != EDGE_OK) return s;
    if (loff > 1) {
        if (loff > (uint64_t)it->model_len || lsize > (uint64_t)it->model_len - loff || lsize > 0xffffffffu)
            return fail_at(it, EDGE_MODEL_MALFORMED, WHAT("Operator.large_custom_options_offset"), where);
    } else {
        if ((s = fb_vector(it, ot, 5, 1, &cstart, &ccount, WHAT("Operator.custom_options"))) != EDGE_OK) return s;
    }
    return EDGE_OK;
}

/* A node's Operator table and its OperatorCode's custom_code (NULL for builtin ops), read back from the model. */
static edge_table_t node_table(edge_interp_t *it, const edge_node_t *nd) {
    return model_element(it, nd->subgraph, 3, nd->index);
}

static const char *node_custom_code(edge_interp_t *it, const edge_node_t *nd) {
    edge_table_t ot, mt, ct;
    int64_t opcodes;
    int32_t n;
    uint32_t oi = 0;
    const char *code = 0;
    if (nd->op != EDGE_OP_CUSTOM) return 0;
    ot = node_table(it, nd);
    fb_table(it, (int64_t)rd32(it->model), WHAT("Model"), &mt);
    fb_vector(it, &mt, 1, 4, &opcodes, &n, WHAT("Model.operator_codes"));
    fb_u32(it, &ot, 0, 0, &oi, WHAT("Operator.opcode_index"));
    fb_vector_table(it, opcodes, (int32_t)oi, WHAT("OperatorCode"), &ct);
    fb_string(it, &ct, 1, &code, WHAT("OperatorCode.custom_code"));
    return code;
}

const char *edge_custom_code(edge_ctx_t *ctx, const edge_node_t *node) { return node_custom_code(ctx->interp, node); }

/* SparsityParameters: 0 traversal_order [int], 1 block_map [int], 2 dim_metadata [DimensionMetadata];
 * DimensionMetadata: 0 format (0 DENSE, 1 SPARSE_CSR), 1 dense_size, 2/3 array_segments (union type, table),
 * 4/5 array_indices; the union's tables (Int32Vector / Uint16Vector / Uint8Vector) hold field 0 values. */
static edge_status_t sparse_index_vector(edge_interp_t *it, const edge_table_t *dt, int slot, uint8_t *type,
                                         const void **values, int32_t *count) {
    static const int64_t elem[4] = {0, 4, 2, 1};
    edge_status_t s;
    int64_t pos, start;
    edge_table_t vt;
    *values = 0;
    *count = 0;
    if ((s = fb_u8(it, dt, slot, 0, type, WHAT("DimensionMetadata index vector type"))) != EDGE_OK) return s;
    if ((s = fb_ref(it, dt, slot + 1, &pos, WHAT("DimensionMetadata index vector"))) != EDGE_OK) return s;
    if (!pos) return EDGE_OK;
    if (*type < 1 || *type > 3)
        return fail_at(it, EDGE_MODEL_INVALID, WHAT("DimensionMetadata index vector type (unknown)"), dt->table - it->model);
    if ((s = fb_table(it, pos, WHAT("SparseIndexVector"), &vt)) != EDGE_OK) return s;
    if ((s = fb_vector(it, &vt, 0, elem[*type], &start, count, WHAT("SparseIndexVector.values"))) != EDGE_OK) return s;
    *values = start ? (const void *)(it->model + start) : 0;
    return EDGE_OK;
}

edge_status_t edge_tensor_sparsity(edge_ctx_t *ctx, const edge_tensor_t *t, edge_sparsity_t *sp) {
    edge_interp_t *it = ctx->interp;
    edge_table_t tt, st, dt;
    edge_status_t s;
    int64_t pos, dims;
    int32_t n, i;
    memset(sp, 0, sizeof *sp);
    if (t < ctx->tensors || t >= ctx->tensors + ctx->n_tensors) return EDGE_BAD_ARGUMENT;
    tt = model_element(it, ctx->subgraph, 0, (int32_t)(t - ctx->tensors));
    if ((s = fb_ref(it, &tt, 6, &pos, WHAT("Tensor.sparsity"))) != EDGE_OK) return s;
    if (!pos) return fail_at(it, EDGE_BAD_NODE, WHAT("tensor has no sparsity parameters"), tt.table - it->model);
    if ((s = fb_table(it, pos, WHAT("SparsityParameters"), &st)) != EDGE_OK) return s;
    if ((s = fb_ints(it, &st, 0, &sp->traversal_order, &sp->n_order, WHAT("SparsityParameters.traversal_order"))) != EDGE_OK)
        return s;
    if ((s = fb_ints(it, &st, 1, &sp->block_map, &sp->n_block_map, WHAT("SparsityParameters.block_map"))) != EDGE_OK)
        return s;
    if ((s = fb_vector(it, &st, 2, 4, &dims, &n, WHAT("SparsityParameters.dim_metadata"))) != EDGE_OK) return s;
    if (n > EDGE_SPARSE_MAX_DIMS || sp->n_order > EDGE_SPARSE_MAX_DIMS)
        return fail_at(it, EDGE_LIMIT, WHAT("SparsityParameters (over 8 levels)"), pos);
    sp->n_dims = n;
    for (i = 0; i < n; i++) {
        edge_sparse_dim_t *d = &sp->dims[i];
        uint32_t size = 0;
        if ((s = fb_vector_table(it, dims, i, WHAT("DimensionMetadata"), &dt)) != EDGE_OK) return s;
        if ((s = fb_u8(it, &dt, 0, 0, &d->format, WHAT("DimensionMetadata.format"))) != EDGE_OK) return s;
        if ((s = fb_u32(it, &dt, 1, 0, &size, WHAT("DimensionMetadata.dense_size"))) != EDGE_OK) return s;
        d->dense_size = (int32_t)size;
        if ((s = sparse_index_vector(it, &dt, 2, &d->segments_type, &d->segments, &d->n_segments)) != EDGE_OK) return s;
        if ((s = sparse_index_vector(it, &dt, 4, &d->indices_type, &d->indices, &d->n_indices)) != EDGE_OK) return s;
    }
    return EDGE_OK;
}

const uint8_t *edge_custom_options(edge_ctx_t *ctx, const edge_node_t *node, uint32_t *len) {
    edge_interp_t *it = ctx->interp;
    edge_table_t ot = node_table(it, node);
    uint64_t loff = 0, lsize = 0;
    int64_t start = 0;
    int32_t count = 0;
    fb_u64(it, &ot, 9, &loff, WHAT("Operator.large_custom_options_offset"));
    fb_u64(it, &ot, 10, &lsize, WHAT("Operator.large_custom_options_size"));
    if (loff > 1) {
        *len = (uint32_t)lsize;
        return it->model + loff;
    }
    fb_vector(it, &ot, 5, 1, &start, &count, WHAT("Operator.custom_options"));
    *len = (uint32_t)count;
    return start ? it->model + start : 0;
}

/* Operator 8 intermediates (verified in range at load): the LSTM's gate and hidden scales. */
int32_t edge_intermediates(edge_ctx_t *ctx, const edge_node_t *node, const int32_t **indices) {
    edge_table_t ot = node_table(ctx->interp, node);
    int32_t n = 0;
    if (fb_ints(ctx->interp, &ot, 8, indices, &n, WHAT("Operator.intermediates")) != EDGE_OK || !*indices) n = 0;
    return n;
}

/* Model 7 signature_defs: SignatureDef 0 inputs [TensorMap], 1 outputs [TensorMap], 2 signature_key,
 * 4 subgraph_index; TensorMap 0 name, 1 tensor_index. Verified here (keys, names, indices in range) so the
 * edge_signature_* readers below read without checks. */
static edge_status_t load_signatures(edge_interp_t *it, const edge_table_t *mt) {
    edge_status_t s;
    edge_table_t st, tm;
    int64_t start, maps;
    int32_t n, i, j, io, n_maps;
    uint32_t sub, index;
    const char *str;
    if ((s = fb_vector(it, mt, 7, 4, &start, &n, WHAT("Model.signature_defs"))) != EDGE_OK) return s;
    for (i = 0; i < n; i++) {
        if ((s = fb_vector_table(it, start, i, WHAT("SignatureDef"), &st)) != EDGE_OK) return s;
        if ((s = fb_string(it, &st, 2, &str, WHAT("SignatureDef.signature_key"))) != EDGE_OK) return s;
        if ((s = fb_u32(it, &st, 4, 0, &sub, WHAT("SignatureDef.subgraph_index"))) != EDGE_OK) return s;
        if ((int64_t)sub >= (int64_t)it->n_subgraphs)
            return fail_at(it, EDGE_MODEL_INVALID, WHAT("SignatureDef.subgraph_index (out of range)"), st.table - it->model);
        for (io = 0; io < 2; io++) {
            if ((s = fb_vector(it, &st, io, 4, &maps, &n_maps, WHAT("SignatureDef.inputs/outputs"))) != EDGE_OK) return s;
            for (j = 0; j < n_maps; j++) {
                if ((s = fb_vector_table(it, maps, j, WHAT("TensorMap"), &tm)) != EDGE_OK) return s;
                if ((s = fb_string(it, &tm, 0, &str, WHAT("TensorMap.name"))) != EDGE_OK) return s;
                if ((s = fb_u32(it, &tm, 1, 0, &index, WHAT("TensorMap.tensor_index"))) != EDGE_OK) return s;
                if ((int64_t)index >= (int64_t)it->subgraphs[sub].n_tensors)
                    return fail_at(it, EDGE_MODEL_INVALID, WHAT("TensorMap.tensor_index (out of range)"), tm.table - it->model);
            }
        }
    }
    it->signature_defs_ = start;
    it->n_signatures = n;
    return EDGE_OK;
}

/* Whether an output of node j of subgraph g is a subgraph output or an input of a node that runs: a node to skip
 * must have neither (its values would go missing). */
static int skipped_output_read(const edge_interp_t *it, int32_t g, int32_t j) {
    const edge_subgraph_t *sg = &it->subgraphs[g];
    const edge_node_t *nd = &it->nodes[sg->node_base + j];
    int32_t k, m, r, i;
    for (k = 0; k < nd->n_outputs; k++) {
        for (m = 0; m < sg->n_outputs; m++)
            if (sg->outputs[m] == nd->outputs[k]) return 1;
        for (r = 0; r < sg->n_nodes; r++) {
            const edge_node_t *reader = &it->nodes[sg->node_base + r];
            for (i = 0; !reader->skip_ && i < reader->n_inputs; i++)
                if (reader->inputs[i] == nd->outputs[k]) return 1;
        }
    }
    return 0;
}

/* Model 6 metadata [Metadata: 0 name, 1 buffer]: the EDGE_SKIP_METADATA entry's (subgraph, node) pairs get
 * skip_ (invoke passes them by; a trace keeps their entries, 0 ticks: node indices stay the model's). */
static edge_status_t load_skips(edge_interp_t *it, const edge_table_t *mt, int64_t buffers, int32_t n_buffers) {
    edge_status_t s;
    edge_table_t md, bt;
    int64_t start, len, k;
    int32_t n, i, g, j;
    uint32_t buf;
    const char *name;
    const uint8_t *data;
    if ((s = fb_vector(it, mt, 6, 4, &start, &n, WHAT("Model.metadata"))) != EDGE_OK) return s;
    for (i = 0; i < n; i++) {
        if ((s = fb_vector_table(it, start, i, WHAT("Metadata"), &md)) != EDGE_OK) return s;
        if ((s = fb_string(it, &md, 0, &name, WHAT("Metadata.name"))) != EDGE_OK) return s;
        if (!name || !str_eq(name, EDGE_SKIP_METADATA)) continue;
        if ((s = fb_u32(it, &md, 1, 0, &buf, WHAT("Metadata.buffer"))) != EDGE_OK) return s;
        if ((int64_t)buf >= (int64_t)n_buffers)
            return fail_at(it, EDGE_MODEL_INVALID, WHAT("Metadata.buffer (out of range)"), md.table - it->model);
        if ((s = buffer_bytes(it, buffers, buf, &bt, &data, &len)) != EDGE_OK) return s;
        if (len % 8) return fail_at(it, EDGE_MODEL_INVALID, WHAT("edge_skip_nodes (not int32 pairs)"), bt.table - it->model);
        for (k = 0; k < len; k += 8) {
            g = (int32_t)rd32(data + k);
            j = (int32_t)rd32(data + k + 4);
            if (g < 0 || g >= it->n_subgraphs || j < 0 || j >= it->subgraphs[g].n_nodes)
                return fail_at(it, EDGE_MODEL_INVALID, WHAT("edge_skip_nodes (a node out of range)"), bt.table - it->model);
            it->nodes[it->subgraphs[g].node_base + j].skip_ = 1;
        }
    }
    for (g = 0; g < it->n_subgraphs; g++)
        for (j = 0; j < it->subgraphs[g].n_nodes; j++)
            if (it->nodes[it->subgraphs[g].node_base + j].skip_ && skipped_output_read(it, g, j))
                return fail_at(it, EDGE_MODEL_INVALID, WHAT("edge_skip_nodes (a node whose output is read)"), 0);
    return EDGE_OK;
}

/* Model: 1 operator_codes, 2 subgraphs, 4 buffers. SubGraph: 0 tensors, 1 inputs, 2 outputs, 3 operators. */
static edge_status_t load_model(edge_interp_t *it) {
    edge_status_t s;
    edge_table_t mt, st, t;
    int64_t opcodes, subgraphs, buffers, tstart, ostart, root;
    int32_t n_opcodes, n_sub, n_buffers, i, j, k, nt, no, total_t = 0, total_n = 0, n_io[2];

    if (it->model_len < 8) return fail_at(it, EDGE_MODEL_NOT_TFLITE, WHAT("file shorter than 8 bytes"), 0);
    if (memcmp(it->model + 4, "TFL3", 4) != 0) return fail_at(it, EDGE_MODEL_NOT_TFLITE, WHAT("identifier"), 4);
    root = (int64_t)rd32(it->model);
    if ((s = fb_table(it, root, WHAT("Model"), &mt)) != EDGE_OK) return s;
    if ((s = fb_vector(it, &mt, 1, 4, &opcodes, &n_opcodes, WHAT("Model.operator_codes"))) != EDGE_OK) return s;
    if ((s = fb_vector(it, &mt, 2, 4, &subgraphs, &n_sub, WHAT("Model.subgraphs"))) != EDGE_OK) return s;
    if ((s = fb_vector(it, &mt, 4, 4, &buffers, &n_buffers, WHAT("Model.buffers"))) != EDGE_OK) return s;
    if (n_sub <= 0) return fail_at(it, EDGE_MODEL_INVALID, WHAT("Model.subgraphs (none)"), mt.table - it->model);

    /* pass 1: count, to size the arrays */
    for (i = 0; i < n_sub; i++) {
        if ((s = fb_vector_table(it, subgraphs, i, WHAT("SubGraph"), &st)) != EDGE_OK) return s;
        if ((s = fb_vector(it, &st, 0, 4, &tstart, &nt, WHAT("SubGraph.tensors"))) != EDGE_OK) return s;
        if ((s = fb_vector(it, &st, 3, 4, &ostart, &no, WHAT("SubGraph.operators"))) != EDGE_OK) return s;
        total_t += nt; /* each count < file size / 4, so the sums stay far below 2^31 */
        total_n += no;
        if (total_t > 0x3fffffff || total_n > 0x3fffffff) return fail_at(it, EDGE_LIMIT, WHAT("too many tensors"), 0);
        if (no > 0x7fff || n_sub > 0x7fff) return fail_at(it, EDGE_LIMIT, WHAT("over 32767 operators or subgraphs"), 0);
    }
    it->n_subgraphs = n_sub;
    it->n_tensors_total = total_t;
    it->n_nodes_total = total_n;
    it->subgraphs = (edge_subgraph_t *)tail_alloc(it, sizeof(edge_subgraph_t) * (size_t)n_sub);
    if (!it->subgraphs) return EDGE_ARENA_TOO_SMALL;
    it->tensors = (edge_tensor_t *)tail_alloc(it, sizeof(edge_tensor_t) * (size_t)(total_t ? total_t : 1));
    if (!it->tensors) return EDGE_ARENA_TOO_SMALL;
    it->nodes = (edge_node_t *)tail_alloc(it, sizeof(edge_node_t) * (size_t)(total_n ? total_n : 1));
    if (!it->nodes) return EDGE_ARENA_TOO_SMALL;

    /* pass 2: fill */
    total_t = total_n = 0;
    for (i = 0; i < n_sub; i++) {
        edge_subgraph_t *sg = &it->subgraphs[i];
        it->error.subgraph = i;
        fb_vector_table(it, subgraphs, i, WHAT("SubGraph"), &st);
        fb_vector(it, &st, 0, 4, &tstart, &nt, WHAT("SubGraph.tensors"));
        fb_vector(it, &st, 3, 4, &ostart, &no, WHAT("SubGraph.operators"));
        sg->tensor_base = total_t;
        sg->n_tensors = nt;
        sg->node_base = total_n;
        sg->n_nodes = no;
        if ((s = fb_ints(it, &st, 1, &sg->inputs, &n_io[0], WHAT("SubGraph.inputs"))) != EDGE_OK) return s;
        if ((s = fb_ints(it, &st, 2, &sg->outputs, &n_io[1], WHAT("SubGraph.outputs"))) != EDGE_OK) return s;
        if (n_io[0] > 0x7fff || n_io[1] > 0x7fff)
            return fail_at(it, EDGE_LIMIT, WHAT("a subgraph with over 32767 inputs or outputs"), st.table - it->model);
        sg->n_inputs = (int16_t)n_io[0];
        sg->n_outputs = (int16_t)n_io[1];
        if ((s = check_indices(it, sg->inputs, n_io[0], 0, nt, WHAT("SubGraph.inputs (tensor out of range)"),
                               st.table - it->model)) != EDGE_OK ||
            (s = check_indices(it, sg->outputs, n_io[1], 0, nt, WHAT("SubGraph.outputs (tensor out of range)"),
                               st.table - it->model)) != EDGE_OK)
            return s;
        for (j = 0; j < nt; j++) {
            it->error.tensor = j;
            if ((s = fb_vector_table(it, tstart, j, WHAT("Tensor"), &t)) != EDGE_OK) return s;
            if ((s = load_tensor(it, &t, &it->tensors[total_t + j], buffers, n_buffers)) != EDGE_OK) return s;
        }
        it->error.tensor = -1;
        for (j = 0; j < no; j++) {
            edge_node_t *nd = &it->nodes[total_n + j];
            it->error.node = j;
            nd->index = (int16_t)j;
            nd->subgraph = (int16_t)i;
            nd->skip_ = 0;
            if ((s = fb_vector_table(it, ostart, j, WHAT("Operator"), &t)) != EDGE_OK) return s;
            if ((s = load_node(it, &t, nd, sg, opcodes, n_opcodes)) != EDGE_OK) return s;
            /* outputs must be writable arena tensors: never a constant, never a subgraph input */
            for (k = 0; k < nd->n_outputs; k++) {
                int32_t o = nd->outputs[k], m;
                if (it->tensors[total_t + o].is_const)
                    return fail_at(it, EDGE_MODEL_INVALID, WHAT("an op output is a constant"), t.table - it->model);
                for (m = 0; m < sg->n_inputs; m++)
                    if (sg->inputs[m] == o)
                        return fail_at(it, EDGE_MODEL_INVALID, WHAT("an op output is a subgraph input"), t.table - it->model);
            }
        }
        it->error.node = -1;
        it->error.op_code = it->error.op_version = -1;
        it->error.custom_code = 0;
        total_t += nt;
        total_n += no;
    }
    it->error.subgraph = -1;
    if ((s = load_skips(it, &mt, buffers, n_buffers)) != EDGE_OK) return s;
    return load_signatures(it, &mt);
}

/* ================================================================================= 4. lifetimes */

/* A node's options table read back from its Operator (load verified it): the planner also runs after init
 * (edge_plan_entry), when scratch_offset no longer says where the options are. */
static edge_table_t model_node_options(edge_interp_t *it, const edge_node_t *nd) {
    edge_table_t ot = node_table(it, nd), t;
    int64_t pos = 0;
    t.table = 0;
    t.n_slots = 0;
    if (nd->options_type || nd->options2_type) fb_ref(it, &ot, nd->options_type ? 4 : 12, &pos, WHAT("Operator.builtin_options"));
    if (!pos || fb_table(it, pos, WHAT("Operator.builtin_options"), &t) != EDGE_OK) t.table = 0, t.n_slots = 0;
    return t;
}

/* The subgraphs a control-flow node runs (its row's effects "calls": the subgraph indices in the options fields
 * its row's subgraphs name, at the field ids of the facts table: CALL_ONCE / IF / WHILE fields 0.., a
 * STABLEHLO_COMPOSITE's decomposition field 1 of its builtin_options_2), at most 2 (gen_ops.py --facts refuses a
 * row with more). */
static edge_status_t callees(edge_interp_t *it, const edge_node_t *nd, int32_t out[2], int32_t *n) {
    const edge_op_facts_t *facts = edge_op_facts(nd->op);
    const int32_t count = facts->callees;
    int32_t k;
    edge_table_t opts;
    *n = 0;
    if (facts->effects != EDGE_EFFECTS_CALLS || !count) return EDGE_OK;
    if (facts->callee_options2 ? (nd->options_type != 0 || nd->options2_type != facts->callee_options)
                               : nd->options_type != facts->callee_options)
        return fail_at(it, EDGE_MODEL_INVALID, WHAT("control-flow op without its options"), -1);
    opts = model_node_options(it, nd);
    for (k = 0; k < count; k++) {
        const int off = field_off(&opts, facts->callee_slot[k], 4);
        if (off < 0) return fail_at(it, EDGE_MODEL_MALFORMED, WHAT("subgraph index field"), -1);
        out[k] = off ? (int32_t)rd32(opts.table + off) : 0;
        if (out[k] < 0 || out[k] >= it->n_subgraphs)
            return fail_at(it, EDGE_MODEL_INVALID, WHAT("subgraph index out of range"), -1);
    }
    *n = count;
    return EDGE_OK;
}

/* Where a walk of the time axis writes lifetimes: per-tensor / per-node arrays (indexed by the flat, all
 * subgraphs index; first entries start at -1) while planning, or the one tensor / node asked about when
 * edge_plan_entry reports an entry after init (the structs keep no lifetimes). */
typedef struct life {
    int32_t *t_first, *t_last; /* n_tensors_total entries, or NULL */
    int32_t *n_first, *n_last; /* n_nodes_total entries, or NULL */
    int32_t tensor, node;      /* without arrays: the flat tensor or node index to follow (-1: none) */
    int32_t first, last;       /* without arrays: its steps (-1: unused) */
} life_t;

static void use(life_t *L, int32_t g, int32_t step) {
    int32_t *f, *l;
    if (L->t_first) { f = &L->t_first[g]; l = &L->t_last[g]; }
    else if (g == L->tensor) { f = &L->first; l = &L->last; }
    else return;
    if (*f < 0) *f = step;
    *l = step;
}

static void first_use_at(life_t *L, int32_t g, int32_t step) {
    if (L->t_first) { if (L->t_first[g] < 0) L->t_first[g] = step; }
    else if (g == L->tensor && L->first < 0) L->first = step;
}

static void node_steps(life_t *L, int32_t g, int32_t start, int32_t end) {
    int32_t *f, *l;
    if (L->n_first) { f = &L->n_first[g]; l = &L->n_last[g]; }
    else if (g == L->node) { f = &L->first; l = &L->last; }
    else return;
    if (*f < 0 || start < *f) *f = start;
    if (end > *l) *l = end;
}

static const edge_node_t *folded_pad_writer(const edge_interp_t *it, int32_t s, int32_t t);

/* Walk subgraph s on the shared time axis (edge_sdk.runtime.interpreter.buffer_requests, mark()). */
static edge_status_t mark(edge_interp_t *it, life_t *L, int32_t s, int32_t depth, int32_t *clock) {
    edge_subgraph_t *sg = &it->subgraphs[s];
    const int32_t tb = sg->tensor_base;
    edge_status_t st;
    int32_t i, k, c, callee[2], n_callees;
    if (sg->on_stack) return fail_at(it, EDGE_MODEL_INVALID, WHAT("a subgraph calls itself"), -1);
    if (depth > EDGE_MAX_CALL_DEPTH) return fail_at(it, EDGE_LIMIT, WHAT("subgraph calls nest too deep"), -1);
    sg->on_stack = sg->marked = 1;
    for (k = 0; k < sg->n_inputs; k++) use(L, tb + sg->inputs[k], *clock);
    for (i = 0; i < sg->n_nodes; i++) {
        edge_node_t *nd = &it->nodes[sg->node_base + i];
        edge_table_t ot;
        const int32_t *inter;
        int32_t start, n_inter;
        if (++*clock > MAX_STEPS) return fail_at(it, EDGE_LIMIT, WHAT("too many steps"), -1);
        start = *clock;
        for (k = 0; k < nd->n_outputs; k++) first_use_at(L, tb + nd->outputs[k], start);
        it->error.subgraph = s;
        it->error.node = i;
        if ((st = callees(it, nd, callee, &n_callees)) != EDGE_OK) return st;
        for (c = 0; c < n_callees; c++) {
            if (++*clock > MAX_STEPS) return fail_at(it, EDGE_LIMIT, WHAT("too many steps"), -1);
            if ((st = mark(it, L, callee[c], depth + 1, clock)) != EDGE_OK) return st;
        }
        for (k = 0; k < nd->n_inputs; k++)
            if (nd->inputs[k] >= 0) {
                const edge_node_t *pad = folded_pad_writer(it, s, nd->inputs[k]);
                use(L, tb + nd->inputs[k], *clock);
                if (pad) use(L, tb + pad->inputs[0], *clock); /* the conv reads the folded PAD's input */
            }
        for (k = 0; k < nd->n_outputs; k++) use(L, tb + nd->outputs[k], *clock);
        ot = node_table(it, nd); /* intermediates: load checked them; read back from the model */
        fb_ints(it, &ot, 8, &inter, &n_inter, WHAT("Operator.intermediates"));
        for (k = 0; k < n_inter; k++) {
            use(L, tb + inter[k], start);
            use(L, tb + inter[k], *clock);
        }
        node_steps(L, sg->node_base + i, start, *clock);
    }
    for (k = 0; k < sg->n_outputs; k++) use(L, tb + sg->outputs[k], *clock);
    sg->on_stack = 0;
    it->error.subgraph = it->error.node = -1;
    return EDGE_OK;
}

/* Lifetimes of every tensor and node into L's arrays (or of L's one target); *end = the last step. */
static edge_status_t lifetimes(edge_interp_t *it, life_t *L, int32_t *end) {
    int32_t clock = 0, s, k;
    edge_status_t st;
    edge_subgraph_t *sg0 = &it->subgraphs[0];
    for (s = 0; s < it->n_subgraphs; s++) it->subgraphs[s].marked = it->subgraphs[s].on_stack = 0;
    if ((st = mark(it, L, 0, 0, &clock)) != EDGE_OK) return st;
    for (s = 0; s < it->n_subgraphs; s++) {
        if (it->subgraphs[s].marked) continue;
        clock++;
        if ((st = mark(it, L, s, 0, &clock)) != EDGE_OK) return st;
    }
    for (k = 0; k < sg0->n_outputs; k++) {
        const int32_t g = sg0->tensor_base + sg0->outputs[k];
        if (L->t_first) L->t_last[g] = clock;
        else if (g == L->tensor) L->last = clock;
    }
    for (k = 0; k < it->n_tensors_total; k++)
        if (it->tensors[k].is_variable) {
            if (L->t_first) { L->t_first[k] = 0; L->t_last[k] = clock; }
            else if (k == L->tensor) { L->first = 0; L->last = clock; }
        }
    *end = clock;
    return EDGE_OK;
}

/* ================================================================================= 5. planner */

/* Requests: planned tensors (in (subgraph, tensor) order) then scratch buffers; parallel arrays in the
 * arena's free head region while planning. */
typedef struct plan_work {
    int64_t *off;       /* placed offset */
    int64_t *size;      /* aligned size */
    int32_t *first, *last;
    int32_t *order, *tmp, *next;
    int32_t n;          /* requests (tensors + scratch) */
    int32_t n_tensors;
} plan_work_t;

/* Sort keys of edge_sdk/runtime/arena.py's _ORDERINGS, as (primary, secondary) pairs; smaller sorts first. */
static void order_key(const plan_work_t *w, int ordering, int32_t i, int64_t *k1, int64_t *k2) {
    int64_t life = (int64_t)w->last[i] - w->first[i];
    *k2 = 0;
    switch (ordering) {
    case 0: *k1 = -w->size[i]; break;
    case 1: *k1 = w->first[i]; *k2 = -w->size[i]; break;
    case 2: *k1 = -life; *k2 = -w->size[i]; break;
    default: *k1 = -w->size[i] * (life + 1); break;
    }
}

static int key_less(const plan_work_t *w, int ordering, int32_t a, int32_t b) {
    int64_t a1, a2, b1, b2;
    order_key(w, ordering, a, &a1, &a2);
    order_key(w, ordering, b, &b1, &b2);
    return a1 < b1 || (a1 == b1 && a2 < b2);
}

/* Stable bottom-up merge sort of w->order[0..n) by the ordering's key. */
static void sort_order(plan_work_t *w, int ordering, int32_t n) {
    int32_t width, i;
    int32_t *src = w->order, *dst = w->tmp, *swap;
    for (i = 0; i < n; i++) src[i] = i;
    for (width = 1; width < n; width *= 2) {
        for (i = 0; i < n; i += 2 * width) {
            int32_t lo = i, mid = i + width < n ? i + width : n, hi = i + 2 * width < n ? i + 2 * width : n;
            int32_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi) dst[k++] = key_less(w, ordering, src[b], src[a]) ? src[b++] : src[a++];
            while (a < mid) dst[k++] = src[a++];
            while (b < hi) dst[k++] = src[b++];
        }
        swap = src; src = dst; dst = swap;
    }
    if (src != w->order) memcpy(w->order, src, sizeof(int32_t) * (size_t)n);
}

/* Place request i at the lowest gap among placed, time-overlapping requests; keep the placed list
 * sorted by (offset, index). Returns the end of the slot. */
static int64_t place(plan_work_t *w, int32_t *head, int32_t i) {
    int64_t candidate = 0;
    int32_t p, prev = -1;
    for (p = *head; p >= 0; p = w->next[p]) {
        if (w->first[p] > w->last[i] || w->first[i] > w->last[p]) continue;
        if (w->off[p] - candidate >= w->size[i]) break;
        if (w->off[p] + w->size[p] > candidate) candidate = w->off[p] + w->size[p];
    }
    w->off[i] = candidate;
    for (p = *head; p >= 0 && (w->off[p] < candidate || (w->off[p] == candidate && p < i)); p = w->next[p]) prev = p;
    w->next[i] = p;
    if (prev < 0) *head = i;
    else w->next[prev] = i;
    return candidate + w->size[i];
}

static int64_t first_fit(plan_work_t *w, int ordering, int32_t *head) {
    int32_t k;
    int64_t total = 0, end;
    *head = -1;
    sort_order(w, ordering, w->n_tensors);
    for (k = 0; k < w->n_tensors; k++) {
        end = place(w, head, w->order[k]);
        if (end > total) total = end;
    }
    return total;
}

/* ============================================================ 5b. patch-based execution (edge_init_patch) */

/* edge_sdk/runtime/patching.py, for the window kernels: a stage of nodes first..last of subgraph 0 reads one
 * whole tensor (the stage input) and writes the cut (the last node's output); the cut's H x W is split into
 * rows x cols near-equal ranges, and going backwards every stage node's output gets, per patch row and column,
 * the window its stage readers need (clipped to the tensor). Its per-patch buffer holds its largest window. */
typedef struct patch_axis {
    int32_t stride, eff, pad, size; /* output range [lo, hi) reads input [lo * stride - pad, (hi - 1) * stride + eff - pad) */
} patch_axis_t;

typedef struct patch_node {
    int32_t node;       /* flat node index */
    int32_t src, src1;  /* the stage node whose output is input 0 (a binary op: and input 1); -1: the stage input;
                         * -2: a constant (an elementwise op's) or no input 1 */
    int32_t out;        /* flat index of the output */
    patch_axis_t ax[2]; /* H, W */
    int64_t bytes;      /* the output's per-patch buffer: N x largest rows x largest columns x C */
    int32_t kept;       /* its buffer keeps rows from patch row to patch row: it lives through the stage */
} patch_node_t;

struct edge_patch {
    int32_t n, rows, cols;
    int32_t input, output; /* flat tensor indices: the stage input and the cut */
    patch_node_t *nodes;
    int32_t *win;          /* node k: rows (lo, hi) pairs, then cols (lo, hi) pairs, 2 * (rows + cols) int32 */
    int64_t cut_offset;    /* the cut window buffer (the last node's patches, copied into the cut) */
    int32_t carry;         /* batch 1: a patch row keeps the rows it shares with the row above (run_patch_stage) */
    /* run_patch_stage, reached only through here: set by edge_init_patch (patch_setup_linked), so firmware that
     * never calls edge_init_patch links no patch execution (--gc-sections drops it) */
    void (*run_stage)(edge_interp_t *it, edge_ctx_t *ctx);
};

static void patch_needs(const patch_axis_t *a, int32_t lo, int32_t hi, int32_t *nlo, int32_t *nhi) {
    int64_t x = (int64_t)lo * a->stride - a->pad, y = (int64_t)(hi - 1) * a->stride + a->eff - a->pad;
    *nlo = (int32_t)(x < 0 ? 0 : x);
    *nhi = (int32_t)(y > a->size ? a->size : y);
}

static edge_status_t patch_fail(edge_interp_t *it, int32_t node, edge_reason_t what) {
    it->error.subgraph = 0;
    it->error.node = node;
    return fail_at(it, EDGE_BAD_ARGUMENT, what, -1);
}

/* Input tensor t (flat) of stage node k: the earlier stage node writing it, or -1 for the stage input (the one
 * tensor coming in: P->input); -3: a second tensor coming in. */
static int32_t patch_source(struct edge_patch *P, int32_t k, int32_t t) {
    int32_t j, src = -1;
    for (j = 0; j < k; j++)
        if (P->nodes[j].out == t) src = j;
    if (src >= 0) return src;
    if (P->input >= 0 && P->input != t) return -3;
    P->input = t;
    return -1;
}

/* Whether stage node j computes new rows in patch row r (carry: rows below its window above). */
static int32_t patch_new_rows(const struct edge_patch *P, int32_t j, int32_t r) {
    const int32_t *o = P->win + (int64_t)j * 2 * (P->rows + P->cols);
    return r == 0 || o[2 * r + 1] > (o[2 * r] > o[2 * r - 1] ? o[2 * r] : o[2 * r - 1]);
}

/* Whether stage node k's output keeps rows from one patch row to the next (patching.PatchPlan.kept): batch 1,
 * and in some patch row a reader computes new rows while the output's window overlaps the one above it. */
static int32_t patch_kept(const struct edge_patch *P, int32_t k) {
    const int32_t *o = P->win + (int64_t)k * 2 * (P->rows + P->cols);
    int32_t r, j;
    for (r = 1; P->carry && k + 1 < P->n && r < P->rows; r++)
        if (o[2 * r] < o[2 * r - 1])
            for (j = k + 1; j < P->n; j++)
                if ((P->nodes[j].src == k || P->nodes[j].src1 == k) && patch_new_rows(P, j, r)) return 1;
    return 0;
}

/* Check it->patch_plan's stage and compute its windows into persistent memory (it->patch). */
static edge_status_t patch_setup(edge_interp_t *it) {
    const edge_patch_plan_t *pp = &it->patch_plan;
    const edge_subgraph_t *sg = &it->subgraphs[0];
    const int32_t tb = sg->tensor_base;
    struct edge_patch *P;
    int32_t n, k, j, i, r, per;
    if (pp->first < 0 || pp->last < pp->first || pp->last >= sg->n_nodes || pp->rows < 1 || pp->cols < 1 ||
        pp->rows > 64 || pp->cols > 64)
        return patch_fail(it, -1, WHAT("patch plan: node range or grid out of range"));
    n = pp->last - pp->first + 1;
    per = 2 * (pp->rows + pp->cols);
    P = (struct edge_patch *)tail_alloc(it, sizeof *P);
    if (!P) return EDGE_ARENA_TOO_SMALL;
    P->nodes = (patch_node_t *)tail_alloc(it, sizeof(patch_node_t) * (size_t)n);
    P->win = (int32_t *)tail_alloc(it, sizeof(int32_t) * (size_t)n * (size_t)per);
    if (!P->nodes || !P->win) return EDGE_ARENA_TOO_SMALL;
    P->n = n;
    P->rows = pp->rows;
    P->cols = pp->cols;
    P->input = -1;
    for (k = 0; k < n; k++) {
        const int32_t idx = pp->first + k;
        const edge_node_t *nd = &it->nodes[sg->node_base + idx];
        /* the row's patch rule: "window" (conv / pool), "pad" (a shift) or "elementwise" (binary ones take input 1
         * from its own window, edge_window_t's h1..pl1; the standalone activations are 1:1 on the window) */
        const edge_op_facts_t *facts = edge_op_facts(nd->op);
        patch_node_t *pn = &P->nodes[k];
        const edge_tensor_t *x, *y;
        int32_t kh = 1, kw = 1, oh = 0, ow = 0, pt = 0, pl = 0, in;
        edge_conv_opts_t o = {EDGE_PAD_VALID, 1, 1, 0, 1, 1};
        if (facts->patch == EDGE_PATCH_NONE)
            return patch_fail(it, idx, WHAT("patch stage: not a CONV_2D, DEPTHWISE_CONV_2D, 2-D pool, PAD, ADD, SUB, MUL "
                                            "or standalone activation"));
        if (nd->n_outputs != 1 || nd->n_inputs < 1 || nd->inputs[0] < 0)
            return patch_fail(it, idx, WHAT("patch stage: a node needs one input and one output"));
        pn->node = sg->node_base + idx;
        pn->out = tb + nd->outputs[0];
        pn->src1 = -2;
        if (facts->patch == EDGE_PATCH_ELEMENTWISE) {
            /* patching._stage_node: every run-time input has the output's shape (4-D), every constant broadcasts
             * along no spatial axis (its H and W, aligned right, are 1); a binary op has two inputs, at least one
             * run-time. The window is the output's (stride 1, no padding). */
            int32_t run = 0;
            y = &it->tensors[pn->out];
            if (y->is_variable || y->rank != 4 || !edge_type_bytes(y->type))
                return patch_fail(it, idx, WHAT("patch stage: input and output must be 4-D run-time tensors"));
            if (facts->family == EDGE_FAMILY_BINARY && nd->n_inputs != 2)
                return patch_fail(it, idx, WHAT("patch stage: a binary op needs two inputs"));
            for (j = 0; j < nd->n_inputs && j < 2; j++) {
                const edge_tensor_t *t = nd->inputs[j] >= 0 ? &it->tensors[tb + nd->inputs[j]] : 0;
                int32_t src;
                if (!t) return patch_fail(it, idx, WHAT("patch stage: an elementwise op's input is missing"));
                if (t->is_const) {
                    if (t->rank > 4 || (t->rank >= 2 && t->dims[t->rank - 2] != 1) ||
                        (t->rank >= 3 && t->dims[t->rank - 3] != 1))
                        return patch_fail(it, idx, WHAT("patch stage: a constant that broadcasts along H or W"));
                    if (j == 0) pn->src = -2;
                    continue;
                }
                if (t->is_variable || t->rank != 4 || memcmp(t->dims, y->dims, 16))
                    return patch_fail(it, idx, WHAT("patch stage: an elementwise op's run-time inputs need its output's shape"));
                if ((src = patch_source(P, k, tb + nd->inputs[j])) == -3)
                    return patch_fail(it, idx, WHAT("patch stage: more than one tensor comes in"));
                if (j == 0) pn->src = src;
                else pn->src1 = src;
                run++;
            }
            if (nd->n_inputs > 2 || !run)
                return patch_fail(it, idx, WHAT("patch stage: an elementwise op needs one or two inputs, one run-time"));
            for (j = 0; j < 2; j++) {
                pn->ax[j].stride = pn->ax[j].eff = 1;
                pn->ax[j].pad = 0;
                pn->ax[j].size = y->dims[1 + j];
            }
            continue;
        }
        for (j = 1; j < nd->n_inputs; j++)
            if (nd->inputs[j] >= 0 && !it->tensors[tb + nd->inputs[j]].is_const)
                return patch_fail(it, idx, WHAT("patch stage: weights computed at run time"));
        in = tb + nd->inputs[0];
        x = &it->tensors[in];
        y = &it->tensors[tb + nd->outputs[0]];
        if (x->is_const || x->is_variable || y->is_variable || x->rank != 4 || y->rank != 4 ||
            x->dims[0] != y->dims[0] || !edge_type_bytes(y->type))
            return patch_fail(it, idx, WHAT("patch stage: input and output must be 4-D run-time tensors"));
        if (facts->patch == EDGE_PATCH_PAD) { /* H and W only: a shift, stride 1 */
            const edge_tensor_t *p = nd->n_inputs >= 2 && nd->inputs[1] >= 0 ? &it->tensors[tb + nd->inputs[1]] : 0;
            if (!p || !p->is_const || edge_tensor_elements(p) != 8 ||
                edge_const_int(p, 0) || edge_const_int(p, 1) || edge_const_int(p, 6) || edge_const_int(p, 7) ||
                y->dims[1] != x->dims[1] + edge_const_int(p, 2) + edge_const_int(p, 3) ||
                y->dims[2] != x->dims[2] + edge_const_int(p, 4) + edge_const_int(p, 5) || y->dims[3] != x->dims[3])
                return patch_fail(it, idx, WHAT("patch stage: a PAD of more than H and W"));
            o.sh = o.sw = o.dh = o.dw = 1;
            kh = kw = 1;
            oh = y->dims[1];
            ow = y->dims[2];
            pt = (int32_t)edge_const_int(p, 2);
            pl = (int32_t)edge_const_int(p, 4);
        } else if (facts->family == EDGE_FAMILY_POOL) {
            const int has = nd->options_type == EDGE_OPTS_Pool2DOptions;
            o.padding = has ? edge_opt_int(nd, 0, 1, 0) : EDGE_PAD_SAME;
            o.sw = has ? edge_opt_int(nd, 1, 4, 0) : 1;
            o.sh = has ? edge_opt_int(nd, 2, 4, 0) : 1;
            kw = has ? edge_opt_int(nd, 3, 4, 0) : 1;
            kh = has ? edge_opt_int(nd, 4, 4, 0) : 1;
            o.dw = o.dh = 1;
        } else {
            const edge_tensor_t *f = nd->n_inputs > 1 && nd->inputs[1] >= 0 ? &it->tensors[tb + nd->inputs[1]] : 0;
            if (!f || f->rank != 4) return patch_fail(it, idx, WHAT("patch stage: the filter must be 4-D"));
            o = edge_window_opts(nd);
            kh = f->dims[1];
            kw = f->dims[2];
        }
        if (facts->patch != EDGE_PATCH_PAD &&
            (edge_conv_window(o.padding, o.sh, o.dh, x->dims[1], kh, &oh, &pt) ||
             edge_conv_window(o.padding, o.sw, o.dw, x->dims[2], kw, &ow, &pl) || oh != y->dims[1] || ow != y->dims[2]))
            return patch_fail(it, idx, WHAT("patch stage: window geometry"));
        pn->ax[0].stride = o.sh;
        pn->ax[0].eff = (kh - 1) * o.dh + 1;
        pn->ax[0].pad = pt;
        pn->ax[0].size = x->dims[1];
        pn->ax[1].stride = o.sw;
        pn->ax[1].eff = (kw - 1) * o.dw + 1;
        pn->ax[1].pad = pl;
        pn->ax[1].size = x->dims[2];
        if ((pn->src = patch_source(P, k, in)) == -3)
            return patch_fail(it, idx, WHAT("patch stage: more than one tensor comes in"));
    }
    P->output = P->nodes[n - 1].out;
    /* closed: what the stage makes before the cut is read only inside it and is no subgraph output */
    for (k = 0; k + 1 < n; k++) {
        const int32_t t = P->nodes[k].out - tb;
        for (j = 0; j < sg->n_outputs; j++)
            if (sg->outputs[j] == t) return patch_fail(it, pp->first + k, WHAT("patch stage: an output leaves it"));
        for (i = 0; i < sg->n_nodes; i++) {
            const edge_node_t *nd = &it->nodes[sg->node_base + i];
            if (i >= pp->first && i <= pp->last) continue;
            for (j = 0; j < nd->n_inputs; j++)
                if (nd->inputs[j] == t) return patch_fail(it, pp->first + k, WHAT("patch stage: an output leaves it"));
        }
    }
    /* the windows, backwards from the cut's grid; -1: not read yet */
    for (k = 0; k < n * per; k++) P->win[k] = -1;
    {
        const edge_tensor_t *c = &it->tensors[P->output];
        int32_t *w = P->win + (int64_t)(n - 1) * per;
        if (pp->rows > c->dims[1] || pp->cols > c->dims[2])
            return patch_fail(it, pp->last, WHAT("patch plan: more patches than the cut has rows or columns"));
        for (r = 0; r < pp->rows; r++) {
            w[2 * r] = c->dims[1] / pp->rows * r + (r < c->dims[1] % pp->rows ? r : c->dims[1] % pp->rows);
            w[2 * r + 1] = w[2 * r] + c->dims[1] / pp->rows + (r < c->dims[1] % pp->rows);
        }
        for (r = 0; r < pp->cols; r++) {
            int32_t *q = w + 2 * pp->rows;
            q[2 * r] = c->dims[2] / pp->cols * r + (r < c->dims[2] % pp->cols ? r : c->dims[2] % pp->cols);
            q[2 * r + 1] = q[2 * r] + c->dims[2] / pp->cols + (r < c->dims[2] % pp->cols);
        }
    }
    /* with carry (batch 1) a node reads only what the rows it computes need (the rows below the window above:
     * patching.computed_rows); a patch row where no reader computes anything keeps the window above */
    P->carry = it->tensors[P->output].dims[0] == 1;
    for (k = n - 1; k >= 0; k--) {
        const patch_node_t *pn = &P->nodes[k];
        int32_t *w = P->win + (int64_t)k * per;
        if (w[0] < 0) return patch_fail(it, pp->first + k, WHAT("patch stage: an output no stage node reads"));
        for (r = 1; r < pp->rows; r++)
            if (w[2 * r] < 0) {
                w[2 * r] = w[2 * r - 2];
                w[2 * r + 1] = w[2 * r - 1];
            }
        for (r = 0; r < pp->rows + pp->cols; r++) {
            const int32_t axis = r < pp->rows ? 0 : 1;
            int32_t lo, hi, from = w[2 * r];
            if (P->carry && axis == 0 && r > 0 && w[2 * r - 1] > from) from = w[2 * r - 1];
            if (from >= w[2 * r + 1]) continue; /* nothing new in this patch row */
            patch_needs(&pn->ax[axis], from, w[2 * r + 1], &lo, &hi);
            if (lo >= hi) return patch_fail(it, pp->first + k, WHAT("patch stage: an empty window"));
            if (pn->src >= 0) {
                int32_t *s = P->win + (int64_t)pn->src * per + 2 * r;
                if (s[0] < 0 || lo < s[0]) s[0] = lo;
                if (s[1] < 0 || hi > s[1]) s[1] = hi;
            }
            if (pn->src1 >= 0) {
                int32_t *s = P->win + (int64_t)pn->src1 * per + 2 * r;
                if (s[0] < 0 || lo < s[0]) s[0] = lo;
                if (s[1] < 0 || hi > s[1]) s[1] = hi;
            }
        }
    }
    for (k = 0; k < n; k++) {
        const int32_t *w = P->win + (int64_t)k * per;
        const edge_tensor_t *t = &it->tensors[P->nodes[k].out];
        int64_t mr = 0, mc = 0;
        for (r = 0; r < pp->rows; r++) if (w[2 * r + 1] - w[2 * r] > mr) mr = w[2 * r + 1] - w[2 * r];
        for (r = 0; r < pp->cols; r++)
            if (w[2 * pp->rows + 2 * r + 1] - w[2 * pp->rows + 2 * r] > mc)
                mc = w[2 * pp->rows + 2 * r + 1] - w[2 * pp->rows + 2 * r];
        P->nodes[k].bytes = (int64_t)t->dims[0] * mr * mc * t->dims[3] * edge_type_bytes(t->type);
    }
    for (k = 0; k < n; k++) P->nodes[k].kept = patch_kept(P, k);
    it->patch = P;
    return EDGE_OK;
}

/* A planned tensor's request size: its bytes, or a patch stage intermediate's per-patch buffer. */
static int64_t plan_bytes(const edge_interp_t *it, int32_t k) {
    const struct edge_patch *P = it->patch;
    int32_t j;
    if (EDGE_WITH_PATCH && P)
        for (j = 0; j + 1 < P->n; j++)
            if (P->nodes[j].out == k) return P->nodes[j].bytes;
    return it->tensors[k].bytes;
}

static int32_t in_patch_stage(const edge_interp_t *it, int32_t s, int32_t i) {
    return EDGE_WITH_PATCH && it->patch && s == 0 && i >= it->patch_plan.first && i <= it->patch_plan.last;
}

/* Run the stage patch by patch (edge_sdk.runtime.interpreter._patch_runner): every stage node's kernel on its
 * windows; the last node writes into the cut window buffer, copied into the cut after each patch. Patch columns
 * outside, rows inside: with batch 1 (P->carry) a stage tensor's window of patch row r overlaps row r - 1's in
 * the same column (the halo rows), which are moved to the top of its buffer (N=1 x overlap x cols x C bytes) and
 * kept, and its node computes only the rows below them (MCUNetV2's recomputation left along W alone). */
static void run_patch_stage(edge_interp_t *it, edge_ctx_t *ctx) {
    const struct edge_patch *P = it->patch;
    const int32_t R = P->rows, C = P->cols, per = 2 * (R + C);
    edge_tensor_t *cut = &it->tensors[P->output];
    const edge_tensor_t *x = &it->tensors[P->input];
    void *keep = cut->data;
    uint8_t *buf = it->base + P->cut_offset;
    const int64_t px = (int64_t)cut->dims[3] * edge_type_bytes(cut->type);
    edge_window_t win;
    int32_t r, c, k, b, y;
    for (c = 0; c < C; c++) {
        for (r = 0; r < R; r++) {
            const int32_t *o = 0;
            int32_t lo = 0;
            for (k = 0; k < P->n; k++) {
                const patch_node_t *pn = &P->nodes[k];
                edge_tensor_t *out = &it->tensors[pn->out];
                edge_tensor_t *src = pn->src >= 0 ? &it->tensors[P->nodes[pn->src].out] : 0;
                void *out_data = out->data, *src_data = src ? src->data : 0;
                int32_t iy = 0, ix = 0;
                o = P->win + (int64_t)k * per;
                lo = o[2 * r]; /* the first output row this call computes */
                if (P->carry && r > 0 && o[2 * r - 1] > lo && k < P->n - 1) { /* patch_kept(P, k) */
                    /* rows [lo, o[2r-1]) were computed in patch row r - 1, at row lo - o[2r-2] of the buffer */
                    const int64_t row = (int64_t)(o[2 * R + 2 * c + 1] - o[2 * R + 2 * c]) * out->dims[3] *
                                        edge_type_bytes(out->type);
                    const int32_t kept = o[2 * r - 1] - lo;
                    memmove(out_data, (uint8_t *)out_data + (lo - o[2 * r - 2]) * row, (size_t)(kept * row));
                    if (o[2 * r - 1] >= o[2 * r + 1]) continue; /* nothing new in this window */
                    lo = o[2 * r - 1];
                    out->data = (uint8_t *)out_data + kept * row;
                }
                if (pn->src == -2) { /* a constant input 0 (the kernel broadcasts it): no window */
                    win.h = win.w = 0;
                } else if (pn->src < 0) {
                    win.h = x->dims[1];
                    win.w = x->dims[2];
                } else {
                    const int32_t *s = P->win + (int64_t)pn->src * per;
                    iy = s[2 * r];
                    ix = s[2 * R + 2 * c];
                    win.h = s[2 * r + 1] - iy;
                    win.w = s[2 * R + 2 * c + 1] - ix;
                    if (lo > o[2 * r] && pn->src1 != pn->src) { /* below kept rows: input 0 from the first row
                                                                 * they need (x + x keeps the whole window) */
                        int32_t nlo, nhi;
                        patch_needs(&pn->ax[0], lo, o[2 * r + 1], &nlo, &nhi);
                        src->data = (uint8_t *)src_data + (int64_t)(nlo - iy) * win.w * src->dims[3] *
                                    edge_type_bytes(src->type);
                        win.h = nhi - nlo;
                        iy = nlo;
                    }
                }
                if (pn->src1 == -1) {
                    win.h1 = x->dims[1];
                    win.w1 = x->dims[2];
                    win.pt1 = -lo;
                    win.pl1 = -o[2 * R + 2 * c];
                } else if (pn->src1 >= 0) {
                    const int32_t *s = P->win + (int64_t)pn->src1 * per;
                    win.h1 = s[2 * r + 1] - s[2 * r];
                    win.w1 = s[2 * R + 2 * c + 1] - s[2 * R + 2 * c];
                    win.pt1 = s[2 * r] - lo;
                    win.pl1 = s[2 * R + 2 * c] - o[2 * R + 2 * c];
                }
                win.oh = o[2 * r + 1] - lo;
                win.ow = o[2 * R + 2 * c + 1] - o[2 * R + 2 * c];
                win.pt = pn->ax[0].pad + iy - lo * pn->ax[0].stride;
                win.pl = pn->ax[1].pad + ix - o[2 * R + 2 * c] * pn->ax[1].stride;
                if (k == P->n - 1) cut->data = buf;
                ctx->window = &win;
                edge_kernels[it->nodes[pn->node].kernel_].eval(&it->nodes[pn->node], ctx);
                ctx->window = 0;
                out->data = out_data;
                if (src) src->data = src_data;
            }
            cut->data = keep;
            for (b = 0; b < cut->dims[0]; b++)
                for (y = 0; y < win.oh; y++)
                    memcpy((uint8_t *)keep + (((int64_t)b * cut->dims[1] + o[2 * r] + y) * cut->dims[2] + o[2 * R + 2 * c]) * px,
                           buf + (((int64_t)b * win.oh + y) * win.ow) * px, (size_t)(win.ow * px));
        }
    }
}

void edge_unary_run(const edge_node_t *node, edge_ctx_t *ctx, edge_span_fn span) {
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    edge_tensor_t *out = edge_out(ctx, node, 0);
    const edge_window_t *w = EDGE_WITH_PATCH ? ctx->window : 0;
    if (w && (w->h != w->oh || w->w != w->ow || w->pt || w->pl)) { /* a sub-window of the input, row by row */
        const ptrdiff_t px = (ptrdiff_t)out->dims[3] * (ptrdiff_t)edge_type_bytes(out->type), step = w->w * px;
        const uint8_t *in = (const uint8_t *)x->data + (-(ptrdiff_t)w->pt * w->w - w->pl) * px;
        uint8_t *o = (uint8_t *)out->data;
        int32_t bi, j;
        for (bi = 0; bi < out->dims[0]; bi++, in += w->h * step)
            for (j = 0; j < w->oh; j++, o += w->ow * px)
                span(node, ctx, in + j * step, o, (int64_t)w->ow * out->dims[3]);
        return;
    }
    span(node, ctx, x->data, out->data,
         w ? (int64_t)out->dims[0] * w->oh * w->ow * out->dims[3] : edge_tensor_elements(out));
}

/* The least-RAM plan's in-place nodes (edge_sdk.runtime.interpreter.inplace_aliases, the same rule, the same
 * order): for RESHAPE, PAD, PADV2 and int8 DEPTHWISE_CONV_2D with as many output channels as input channels
 * (its kernel then runs channel by channel with a plane buffer) whose input 0 is planned, not variable, no input or output of its subgraph,
 * and last used at the node, the output joins the input's group (root[out] = root[in]). A group is planned as
 * one request: its root's first use, its members' largest aligned size and last use (kept in the lifetimes, below). */
static int32_t is_io(const edge_subgraph_t *sg, int32_t t) {
    int32_t k;
    for (k = 0; k < sg->n_inputs; k++) if (sg->inputs[k] == t) return 1;
    for (k = 0; k < sg->n_outputs; k++) if (sg->outputs[k] == t) return 1;
    return 0;
}

size_t edge_inplace_plane_bytes(const edge_interp_t *it, const edge_node_t *node) {
    const edge_tensor_t *x, *y;
    int32_t tb;
    if (!edge_least_ram(it) || edge_op_facts(node->op)->inplace != EDGE_INPLACE_DEPTHWISE ||
        edge_in_patch_stage(it, node) || node->n_inputs < 1 || node->n_outputs < 1 || node->inputs[0] < 0 ||
        node->outputs[0] < 0)
        return 0;
    tb = it->subgraphs[node->subgraph].tensor_base;
    x = &it->tensors[tb + node->inputs[0]];
    y = &it->tensors[tb + node->outputs[0]];
    if (x->flags_ & EDGE_TENSOR_PAD_FOLDED_) { /* a folded PAD: the plane is one channel of the PAD's input */
        const edge_node_t *pad = folded_pad_writer(it, node->subgraph, node->inputs[0]);
        if (pad) x = &it->tensors[tb + pad->inputs[0]];
    }
    if (x->type != EDGE_INT8 || y->type != EDGE_INT8 || x->rank != 4 || y->rank != 4 || x->dims[3] != y->dims[3])
        return 0;
    return (size_t)x->dims[1] * (size_t)x->dims[2];
}

/* The groups need no memory of their own: a member's t_first becomes ROOT_OF(its root) (<= -2; -1 still means
 * "not planned"), a root's t_last its group's last use; a group's size, its members' largest, is taken when the
 * requests are filled (fill_requests). Returns the number of members. */
#define ROOT_OF(r) (-2 - (r))
#define IS_MEMBER(L, k) ((L)->t_first[k] <= -2)
#define ROOT(L, k) (IS_MEMBER(L, k) ? -2 - (L)->t_first[k] : (k))

/* A PRELU's skip_ while its pair waits for the planner (set by edge_add_prelu_prev at PRELU's prepare, the kernels'
 * last word), and once the planner fused it (inplace_groups, pair_marks: invoke skips the PRELU, the ADD writes its
 * output). plan_arena turns every SKIP_PAIRED_ into SKIP_FUSED_ or 0 before any invoke (1: EDGE_SKIP_METADATA's). */
enum { SKIP_PAIRED_ = 2, SKIP_FUSED_ = 3 };
/* Pairs form only where edge_add_prelu_next finds them, a SIMD host build: an MCU build's planner compiles no pair
 * code (person_detect's M4 runtime: its tier-0 groups and pair_marks were ~900 B of edge_init_ex, for no pair). */
#define ADD_PRELU_PAIRS EDGE_SIMD

/* Whether node g's output b (global tensor indices) may take over its input a's bytes (inplace_groups' rule). */
static int inplace_joins(const edge_interp_t *it, const life_t *L, const edge_subgraph_t *sg, int32_t g, int32_t ia,
                         int elementwise) {
    const edge_node_t *nd = &it->nodes[g];
    const int32_t ib = nd->outputs[0];
    const edge_tensor_t *x, *y;
    int32_t a, b;
    if (ia < 0 || ib < 0 || ia == ib || is_io(sg, ia)) return 0;
    a = sg->tensor_base + ia;
    b = sg->tensor_base + ib;
    x = &it->tensors[a];
    y = &it->tensors[b];
    if (elementwise && (x->bytes != y->bytes || edge_type_bytes(x->type) != edge_type_bytes(y->type)))
        return 0;
    if (edge_op_facts(nd->op)->inplace == EDGE_INPLACE_DEPTHWISE) { /* int8, channels in == channels out */
        if (x->type != EDGE_INT8 || y->type != EDGE_INT8 || x->rank != 4 || y->rank != 4 || x->dims[3] != y->dims[3] ||
            y->bytes > x->bytes)
            return 0;
    }
    if (x->is_const || y->is_const || x->is_variable || y->is_variable || !x->bytes || !y->bytes) return 0;
    if (L->t_first[a] == -1 || L->t_first[b] < 0) return 0; /* b <= -2: a member already */
    /* a's own last use (a root's t_last only grows after its one in-place reader was checked here) */
    return L->t_last[a] == L->n_last[g];
}

/* The groups of one plan: tier 0 the fused pairs alone (every plan), 1 those and the rows' rules without the
 * elementwise ones, 2 all of them. A fused pair (the host build's ADD -> PRELU, edge_add_prelu_next; a PRELU marked
 * SKIP_PAIRED_ at its prepare) is the plan's decision: the PRELU's output takes over the ADD output y's bytes as an
 * elementwise node's would (inplace_joins: y its last use at the PRELU, no subgraph's input or output, as many bytes),
 * in node order with the rest (a later node's group finds its root through it). The ADD then writes the PRELU's
 * output in its pass, lying off its inputs (live at its step beside y) or exactly at one (the in-place ADD: written
 * behind the reads); never more bytes live at a step than the pair apart. The portable kernels and the Python
 * interpreter never fuse: their plans, and this runtime's plan-only run (which prepares no kernel), keep the pair
 * apart, as a board's. */
static int32_t inplace_groups(edge_interp_t *it, life_t *L, int tier) {
    int32_t s, i, j, n_alias = 0;
    for (s = 0; s < it->n_subgraphs; s++) {
        const edge_subgraph_t *sg = &it->subgraphs[s];
        for (i = 0; i < sg->n_nodes; i++) {
            const int32_t g = sg->node_base + i;
            const edge_node_t *nd = &it->nodes[g];
            /* the row's in-place rule; an elementwise one ("unary", "binary": output element i depends on input
             * element i alone, and on the other input's element i or its broadcast, read before output element i
             * is written, in every kernel and fast path) only at tier 2; "binary": either input may be taken
             * over. A fused pair's PRELU: over its input 0 at every tier. */
            const int paired = ADD_PRELU_PAIRS && (nd->skip_ == SKIP_PAIRED_ || nd->skip_ == SKIP_FUSED_);
            const int32_t rule = paired ? EDGE_INPLACE_UNARY : edge_op_facts(nd->op)->inplace;
            const int binary = rule == EDGE_INPLACE_BINARY;
            const int elementwise = binary || rule == EDGE_INPLACE_UNARY;
            if (rule == EDGE_INPLACE_NONE || (!paired && (tier < 1 || (elementwise && tier < 2)))) continue;
            if (in_patch_stage(it, s, i)) continue; /* a patch stage's nodes never run in place */
            if (nd->n_inputs < 1 || nd->n_outputs < 1) continue;
            for (j = 0; j < (binary && nd->n_inputs > 1 ? 2 : 1); j++) {
                int32_t a, b, r, in = nd->inputs[j];
                const edge_node_t *pad = rule == EDGE_INPLACE_DEPTHWISE && in >= 0 ? folded_pad_writer(it, s, in) : 0;
                if (pad) in = pad->inputs[0]; /* a folded PAD: the depthwise runs over its input */
                if (!inplace_joins(it, L, sg, g, in, elementwise)) continue;
                a = sg->tensor_base + in;
                b = sg->tensor_base + nd->outputs[0];
                r = ROOT(L, a);
                if (L->t_last[b] > L->t_last[r]) L->t_last[r] = L->t_last[b];
                L->t_first[b] = ROOT_OF(r);
                n_alias++;
                break;
            }
        }
    }
    return n_alias;
}

/* The fused pairs of the plan in L (a PRELU's output in its input's group): SKIP_FUSED_, the others 0. */
static void pair_marks(edge_interp_t *it, const life_t *L) {
    int32_t k;
    for (k = 0; k < it->n_nodes_total; k++) {
        edge_node_t *nd = &it->nodes[k];
        const int32_t tb = it->subgraphs[nd->subgraph].tensor_base;
        int32_t y, out;
        if (nd->skip_ != SKIP_PAIRED_ && nd->skip_ != SKIP_FUSED_) continue;
        y = tb + nd->inputs[0];
        out = tb + nd->outputs[0];
        nd->skip_ = IS_MEMBER(L, out) && ROOT(L, out) == ROOT(L, y) ? SKIP_FUSED_ : 0;
    }
}

/* The tensor requests in (subgraph, tensor) order (grouped: a group as its root's one request, its members'
 * largest size), then the patch stage's cut window buffer. Returns their count. */
static int32_t fill_requests(edge_interp_t *it, const life_t *L, plan_work_t *w, int grouped) {
    int32_t k, r = 0;
    for (k = 0; k < it->n_tensors_total; k++) {
        edge_tensor_t *t = &it->tensors[k];
        if (t->is_const || L->t_first[k] == -1 || t->bytes == 0) continue;
        if (grouped && IS_MEMBER(L, k)) continue; /* a group member: planned with its root */
        w->size[r] = align_up(plan_bytes(it, k));
        w->first[r] = L->t_first[k];
        w->last[r] = L->t_last[k];
        w->off[r] = k; /* the tensor, until placed: members find their root's request (ascending) */
        r++;
    }
    for (k = 0; grouped && k < it->n_tensors_total; k++) {
        int32_t lo = 0, hi = r - 1, root, mid;
        int64_t sz;
        if (it->tensors[k].is_const || it->tensors[k].bytes == 0 || !IS_MEMBER(L, k)) continue;
        root = ROOT(L, k);
        while (lo < hi) {
            mid = (lo + hi) / 2;
            if (w->off[mid] < root) lo = mid + 1;
            else hi = mid;
        }
        sz = align_up(plan_bytes(it, k));
        if (sz > w->size[lo]) w->size[lo] = sz;
    }
    if (EDGE_WITH_PATCH && it->patch) {
        const int32_t gb = it->subgraphs[0].node_base + it->patch_plan.last;
        w->size[r] = align_up(it->patch->nodes[it->patch->n - 1].bytes);
        w->first[r] = L->n_first[gb];
        w->last[r] = L->n_last[gb];
        r++;
    }
    return r;
}

/* The tensor plan of w's n_tensors requests, as edge_sdk/runtime/arena.py's plan: the smallest total of the
 * four orderings, stopping at the lower bound (the most aligned bytes live at one step, reached at some first
 * use). */
static int64_t best_plan(plan_work_t *w, int32_t *best_ordering, int64_t *bound_out) {
    int32_t k, j, ordering, head = -1;
    int64_t best = -1, bound = 0, total;
    for (k = 0; k < w->n_tensors; k++) {
        int64_t live = 0;
        for (j = 0; j < w->n_tensors; j++)
            if (w->first[j] <= w->first[k] && w->first[k] <= w->last[j]) live += w->size[j];
        if (live > bound) bound = live;
    }
    *best_ordering = 0;
    for (ordering = 0; ordering < 4; ordering++) {
        total = first_fit(w, ordering, &head);
        if (best < 0 || total < best) {
            best = total;
            *best_ordering = ordering;
        }
        if (best == bound) break;
    }
    *bound_out = bound;
    return best < 0 ? 0 : best;
}

/* The interpreter's dataflow rules (edge_sdk.runtime.interpreter._prepare_node), checked once before planning
 * with L->t_first as scratch (the writing node per tensor): a node's output is no constant, no subgraph input
 * and written by no other node; a node reads no tensor that it or a later node writes (variables and subgraph
 * inputs aside). Else a tensor would be planned over itself (a CONCATENATION reading its own output: found
 * by the fuzzer as an overlapping memcpy). */
static edge_status_t check_writers(edge_interp_t *it, life_t *L) {
    enum { SUBGRAPH_INPUT = -2 };
    int32_t s, i, k;
    for (k = 0; k < it->n_tensors_total; k++) L->t_first[k] = -1;
    for (s = 0; s < it->n_subgraphs; s++) {
        const edge_subgraph_t *sg = &it->subgraphs[s];
        const int32_t tb = sg->tensor_base;
        for (k = 0; k < sg->n_inputs; k++) L->t_first[tb + sg->inputs[k]] = SUBGRAPH_INPUT;
        for (i = 0; i < sg->n_nodes; i++) {
            const edge_node_t *nd = &it->nodes[sg->node_base + i];
            it->error.subgraph = s;
            it->error.node = i;
            for (k = 0; k < nd->n_outputs; k++) {
                const int32_t g = tb + nd->outputs[k];
                if (it->tensors[g].is_const && !it->tensors[g].folded_) /* load refused the model's constants */
                    return fail_at(it, EDGE_MODEL_INVALID, WHAT("a node's output is a constant"), -1);
                if (L->t_first[g] == SUBGRAPH_INPUT)
                    return fail_at(it, EDGE_MODEL_INVALID, WHAT("a node's output is a subgraph input"), -1);
                if (L->t_first[g] >= 0)
                    return fail_at(it, EDGE_MODEL_INVALID, WHAT("a tensor is written by two nodes"), -1);
                L->t_first[g] = i;
            }
        }
        for (i = 0; i < sg->n_nodes; i++) {
            const edge_node_t *nd = &it->nodes[sg->node_base + i];
            it->error.subgraph = s;
            it->error.node = i;
            for (k = 0; k < nd->n_inputs; k++) {
                const int32_t g = nd->inputs[k] >= 0 ? tb + nd->inputs[k] : -1;
                if (g >= 0 && L->t_first[g] >= i && !it->tensors[g].is_variable)
                    return fail_at(it, EDGE_MODEL_INVALID,
                                   WHAT("a node reads a tensor before a node writes it (its own output or a later one's)"),
                                   -1);
            }
        }
    }
    it->error.subgraph = it->error.node = -1;
    return EDGE_OK;
}

/* Every tensor's and node's lifetime into L (reset first), the patch stage's stretched. */
static edge_status_t plan_lifetimes(edge_interp_t *it, life_t *L, int32_t *end) {
    edge_status_t st;
    int32_t k;
    if ((st = check_writers(it, L)) != EDGE_OK) return st;
    L->tensor = L->node = -1;
    for (k = 0; k < it->n_tensors_total; k++) L->t_first[k] = L->t_last[k] = -1;
    for (k = 0; k < it->n_nodes_total; k++) L->n_first[k] = L->n_last[k] = -1;
    if ((st = lifetimes(it, L, end)) != EDGE_OK) return st;
    if (EDGE_WITH_PATCH && it->patch) { /* the stage input lives through the stage, the cut from its start */
        const int32_t ga = it->subgraphs[0].node_base + it->patch_plan.first;
        const int32_t gb = it->subgraphs[0].node_base + it->patch_plan.last;
        if (L->t_last[it->patch->input] < L->n_last[gb]) L->t_last[it->patch->input] = L->n_last[gb];
        if (L->t_first[it->patch->output] > L->n_first[ga]) L->t_first[it->patch->output] = L->n_first[ga];
        for (k = 0; k + 1 < it->patch->n; k++) /* rows kept from patch row to patch row: the whole stage */
            if (it->patch->nodes[k].kept) {
                const int32_t t = it->patch->nodes[k].out;
                if (L->t_first[t] > L->n_first[ga]) L->t_first[t] = L->n_first[ga];
                if (L->t_last[t] < L->n_last[gb]) L->t_last[t] = L->n_last[gb];
            }
    }
    return EDGE_OK;
}

static edge_status_t plan_arena(edge_interp_t *it) {
    plan_work_t w;
    life_t L;
    edge_status_t st;
    int32_t end, k, g, n_t = 0, n_s = 0, r, best_ordering = 0, head = -1, n_alias = 0;
    int64_t temp_bytes, life_bytes, best, bound = 0, total, head_total, pad = it->base - it->arena, required;
    uint8_t *p;
    size_t free_bytes = it->base_len - it->tail_used;

    /* the lifetimes (the least-RAM plan's groups live in them), then the planner's arrays: temporary, from the
     * free head region */
    life_bytes = 8 * ((int64_t)it->n_tensors_total + it->n_nodes_total);
    if (life_bytes + 64 > (int64_t)free_bytes)
        return too_small(it, pad + (int64_t)it->tail_used + life_bytes + 64, 0, WHAT("planner memory"));
    p = it->base;
    L.t_first = (int32_t *)(void *)p; p += 4 * (size_t)it->n_tensors_total;
    L.t_last = (int32_t *)(void *)p; p += 4 * (size_t)it->n_tensors_total;
    L.n_first = (int32_t *)(void *)p; p += 4 * (size_t)it->n_nodes_total;
    L.n_last = (int32_t *)(void *)p; p += 4 * (size_t)it->n_nodes_total;
    if ((st = plan_lifetimes(it, &L, &end)) != EDGE_OK) return st;
    for (k = 0; k < it->n_tensors_total; k++) {
        edge_tensor_t *t = &it->tensors[k];
        if (t->is_const || L.t_first[k] < 0) continue;
        if (!edge_type_bytes(t->type)) {
            it->error.tensor = k;
            return fail_at(it, EDGE_UNSUPPORTED_TYPE, WHAT("a used tensor's type has no arena form"), -1);
        }
        if (t->bytes == 0) continue;
        n_t++;
    }
    if (EDGE_WITH_PATCH && it->patch) n_t++; /* the cut window buffer, after the tensors */
    for (k = 0; k < it->n_nodes_total; k++) n_s += it->nodes[k].scratch_bytes > 0;

    w.n = n_t + n_s; /* the layer plan's count (a grouped plan has fewer requests) */
    temp_bytes = align_persist(life_bytes + (int64_t)w.n * (8 + 8 + 4 * 5) + 64);
    if (temp_bytes > (int64_t)free_bytes)
        return too_small(it, pad + (int64_t)it->tail_used + temp_bytes, 0, WHAT("planner memory"));
    p = it->base + ((life_bytes + 7) / 8) * 8;
    w.off = (int64_t *)(void *)p; p += 8 * (size_t)w.n;
    w.size = (int64_t *)(void *)p; p += 8 * (size_t)w.n;
    w.first = (int32_t *)(void *)p; p += 4 * (size_t)w.n;
    w.last = (int32_t *)(void *)p; p += 4 * (size_t)w.n;
    w.order = (int32_t *)(void *)p; p += 4 * (size_t)w.n;
    w.tmp = (int32_t *)(void *)p; p += 4 * (size_t)w.n;
    w.next = (int32_t *)(void *)p;
    if (edge_least_ram(it)) {
        /* the least-RAM plan (edge_sdk.runtime.interpreter.least_ram_plan, the same rule): of the layer plan, the
         * in-place groups without the elementwise ops and all of them, the smallest tensor plan, ties to the fewer
         * groups (a group's longer lifetime can make the greedy placement worse than its bytes save; an in-place
         * depthwise adds its plane buffer). L ends holding the winner's lifetimes. */
        int64_t plan_total, least = -1;
        int32_t tier, n_tier, n_prev = 0, least_tier = 0;
        for (tier = 0; tier < 3; tier++) {
            if (tier && (st = plan_lifetimes(it, &L, &end)) != EDGE_OK) return st;
            n_tier = inplace_groups(it, &L, tier);
            if (tier && n_tier == n_prev) continue; /* the same groups as the tier before */
            n_prev = n_tier;
            w.n_tensors = fill_requests(it, &L, &w, n_tier > 0);
            plan_total = best_plan(&w, &best_ordering, &bound);
            if (least < 0 || plan_total < least) {
                least = plan_total;
                least_tier = tier;
            }
        }
        if ((st = plan_lifetimes(it, &L, &end)) != EDGE_OK) return st;
        n_alias = inplace_groups(it, &L, least_tier);
    } else if (ADD_PRELU_PAIRS) {
        n_alias = inplace_groups(it, &L, 0); /* the fused pairs */
    }
    if (ADD_PRELU_PAIRS) pair_marks(it, &L);
    /* a depthwise convolution that does not run in place drops its plane buffer (its last scratch request) */
    for (k = 0; edge_least_ram(it) && !plan_only(it) && k < it->n_nodes_total; k++) {
        edge_node_t *nd = &it->nodes[k];
        const int64_t plane = align_up((int64_t)edge_inplace_plane_bytes(it, nd));
        if (!plane || nd->scratch_bytes < plane) continue;
        if (n_alias && IS_MEMBER(&L, it->subgraphs[nd->subgraph].tensor_base + nd->outputs[0])) continue;
        nd->scratch_bytes -= (uint32_t)plane;
    }
    for (n_s = 0, k = 0; k < it->n_nodes_total; k++) n_s += it->nodes[k].scratch_bytes > 0;
    w.n_tensors = fill_requests(it, &L, &w, n_alias > 0);
    n_t = w.n_tensors;
    w.n = n_t + n_s;
    r = n_t;
    for (k = 0; k < it->n_nodes_total; k++) {
        edge_node_t *nd = &it->nodes[k];
        if (!nd->scratch_bytes) continue;
        w.size[r] = nd->scratch_bytes; /* a sum of 16-aligned sizes */
        w.first[r] = L.n_first[k];
        w.last[r] = L.n_last[k];
        r++;
    }
    best = best_plan(&w, &best_ordering, &bound);
    /* redo the winner to rebuild its placed list, then fit scratch into its gaps */
    total = first_fit(&w, best_ordering, &head);
    head_total = total;
    for (k = n_t; k < w.n; k++) {
        int64_t e = place(&w, &head, k);
        if (e > head_total) head_total = e;
    }
    if (head_total > MAX_TENSOR_BYTES) return fail_at(it, EDGE_LIMIT, WHAT("the plan needs more than 2 GiB"), -1);

    it->plan.n_tensors = n_t + n_alias; /* the entries: every planned tensor, group members too */
    it->plan.n_scratch = n_s;
    it->plan.tensor_total = best;
    it->plan.lower_bound = bound;
    it->plan.head_total = head_total;
    it->plan.ordering = best_ordering;
    it->plan.steps = end + 1;
    required = pad + (int64_t)it->tail_used + (head_total > temp_bytes ? head_total : temp_bytes);
    it->high_water = (size_t)(required - pad);
    if (required > (int64_t)it->arena_len) return too_small(it, required, 1, WHAT("tensor arena"));
    /* give tensors and scratch their bytes (the temporary arrays die when the head is zeroed) */
    r = 0;
    for (k = 0; k < it->n_tensors_total; k++) {
        edge_tensor_t *t = &it->tensors[k];
        t->flags_ &= ~(unsigned)EDGE_TENSOR_PLANNED_;
        if (t->is_const) continue;
        if (L.t_first[k] == -1 || t->bytes == 0) {
            t->data = it->base;
            continue;
        }
        t->flags_ |= EDGE_TENSOR_PLANNED_;
        if (n_alias && IS_MEMBER(&L, k)) continue; /* below, once every root has its bytes */
        t->data = it->base + w.off[r++];
    }
    if (EDGE_WITH_PATCH && it->patch) it->patch->cut_offset = w.off[r++];
    for (k = 0; n_alias && k < it->n_tensors_total; k++)
        if (IS_MEMBER(&L, k) && (it->tensors[k].flags_ & EDGE_TENSOR_PLANNED_))
            it->tensors[k].data = it->tensors[ROOT(&L, k)].data;
    for (g = 0; g < it->n_subgraphs; g++) { /* a folded PAD's output: its input's bytes, read by the conv */
        const edge_subgraph_t *sg = &it->subgraphs[g];
        for (k = 0; k < sg->n_tensors; k++) {
            const edge_node_t *writer = folded_pad_writer(it, g, k);
            if (writer) it->tensors[sg->tensor_base + k].data = it->tensors[sg->tensor_base + writer->inputs[0]].data;
        }
    }
    for (k = 0; k < it->n_nodes_total; k++) {
        edge_node_t *nd = &it->nodes[k];
        if (nd->scratch_bytes) nd->scratch_offset = (uint32_t)w.off[r++];
    }
    it->head_used = (size_t)head_total;
    return EDGE_OK;
}

/* ================================================================================= 6. init */

void *edge_alloc_persistent(edge_ctx_t *ctx, size_t bytes) { return tail_alloc(ctx->interp, bytes); }

void *edge_alloc_packed(edge_ctx_t *ctx, size_t bytes) {
    void *p = tail_alloc(ctx->interp, bytes);
    if (p) ctx->interp->packed_used += (size_t)align_persist((int64_t)bytes);
    return p;
}

void edge_fold_outputs(edge_node_t *node, edge_ctx_t *ctx) {
    int32_t k;
    for (k = 0; k < node->n_outputs; k++) ctx->tensors[node->outputs[k]].is_const = ctx->tensors[node->outputs[k]].folded_ = 1;
}

/* planner.folded_constants' rule, both parts: a DENSIFY of a sparse constant on every build (its dense bytes are
 * persistent anyway: reading them in place saves the arena tensor and a copy per invoke, and its consumer sees
 * constant weights, which a host build packs once); a DEQUANTIZE of a dense constant (a folded DENSIFY's output
 * included: sparse float16 weights) on host builds only. Never an output a subgraph returns (the caller reads it
 * where the plan puts it). */
int32_t edge_folds_at_prepare(edge_ctx_t *ctx, const edge_node_t *node) {
    const edge_tensor_t *x;
    const int32_t *outputs;
    int32_t n, k;
    if ((node->op != EDGE_OP_DENSIFY && node->op != EDGE_OP_DEQUANTIZE) || node->n_inputs != 1 ||
        node->n_outputs != 1 || node->inputs[0] < 0 || node->outputs[0] < 0)
        return 0;
    x = &ctx->tensors[node->inputs[0]];
    if (!x->is_const) return 0;
    if (node->op == EDGE_OP_DENSIFY) {
        if (!x->is_sparse) return 0;
    } else if (!EDGE_SIMD || !EDGE_WITH_FLOAT32 || x->is_sparse || ctx->tensors[node->outputs[0]].type != EDGE_FLOAT32) {
        return 0;
    }
    n = edge_subgraph_io(ctx, ctx->subgraph, 1, &outputs); /* a returned output stays where the plan puts it */
    for (k = 0; k < n; k++)
        if (outputs[k] == node->outputs[0]) return 0;
    return 1;
}

/* The PAD (pad_fold role EDGE_PAD_FOLD_PAD: PAD / PADV2) of subgraph s whose output is tensor t (subgraph-local) when its output is folded into its
 * conv (edge_pad_folds at its prepare, or the plan-only step: is_const and folded_ on a PAD's output): the PAD's
 * node, else NULL. A few folds a model: the walk over the subgraph's nodes runs at prepare and planning only. */
static const edge_node_t *folded_pad_writer(const edge_interp_t *it, int32_t s, int32_t t) {
    const edge_subgraph_t *sg = &it->subgraphs[s];
    const edge_tensor_t *y = &it->tensors[sg->tensor_base + t];
    int32_t j;
    if (!(y->flags_ & EDGE_TENSOR_PAD_FOLDED_)) return 0;
    for (j = 0; j < sg->n_nodes; j++) {
        const edge_node_t *nd = &it->nodes[sg->node_base + j];
        if (edge_op_facts(nd->op)->pad_fold == EDGE_PAD_FOLD_PAD && nd->n_outputs == 1 && nd->outputs[0] == t &&
            nd->n_inputs >= 1)
            return nd;
    }
    return 0;
}

int32_t edge_pad_folds(edge_ctx_t *ctx, const edge_node_t *node) {
    const edge_interp_t *it = ctx->interp;
    const edge_subgraph_t *sg = &it->subgraphs[ctx->subgraph];
    const edge_tensor_t *x, *p, *y, *w;
    const edge_node_t *c = 0;
    const int32_t *outputs;
    edge_conv_opts_t op;
    int64_t pad[8];
    int32_t n, k, j, reads = 0, fill, kh, kw, oh, ow, pt, pl, top, left, bottom, right;
    if (edge_op_facts(node->op)->pad_fold != EDGE_PAD_FOLD_PAD || it->patch_plan.rows) return -1; /* patch: none */
    if (node->n_inputs < 2 || node->n_inputs > 3 || node->n_outputs != 1 || node->outputs[0] < 0) return -1;
    for (k = 0; k < node->n_inputs; k++)
        if (node->inputs[k] < 0) return -1;
    x = &ctx->tensors[node->inputs[0]];
    p = &ctx->tensors[node->inputs[1]];
    y = &ctx->tensors[node->outputs[0]];
    if (x->is_const || x->is_variable || y->is_variable || x->type != y->type || x->rank != 4 || y->rank != 4) return -1;
    if (x->type != EDGE_FLOAT32 && x->type != EDGE_INT8 && x->type != EDGE_INT16) return -1;
    if (!p->is_const || !edge_const_ints_ok(p) || edge_tensor_elements(p) != 8) return -1;
    for (k = 0; k < 8; k++) {
        pad[k] = edge_const_int(p, k);
        if (pad[k] < 0 || ((k < 2 || k >= 6) && pad[k] != 0)) return -1; /* H and W only */
    }
    fill = x->type == EDGE_INT8 && y->quantized ? y->zero_point : 0; /* PAD's own fill; the conv's padding value */
    if (x->type == EDGE_INT16 && y->quantized && y->zero_point != 0) return -1;
    if (node->n_inputs == 3) {
        const edge_tensor_t *v = &ctx->tensors[node->inputs[2]];
        if (!v->is_const || v->type != x->type || edge_tensor_elements(v) != 1) return -1;
        if (x->type == EDGE_FLOAT32) {
            uint32_t bits;
            memcpy(&bits, v->data, 4);
            if (bits != 0) return -1; /* +0.0 only: -0.0 would change a sum's sign of zero */
        } else if (x->type == EDGE_INT8 ? ((const int8_t *)v->data)[0] != fill : ((const int16_t *)v->data)[0] != 0) {
            return -1;
        }
    }
    n = edge_subgraph_io(ctx, ctx->subgraph, 1, &outputs);
    for (k = 0; k < n; k++)
        if (outputs[k] == node->outputs[0]) return -1;
    for (j = 0; j < sg->n_nodes; j++) { /* one reader, reading it once, as its input 0 */
        const edge_node_t *nd = &it->nodes[sg->node_base + j];
        for (k = 0; k < nd->n_inputs; k++)
            if (nd->inputs[k] == node->outputs[0]) {
                reads++;
                c = k == 0 ? nd : 0;
            }
    }
    if (reads != 1 || !c || edge_op_facts(c->op)->pad_fold != EDGE_PAD_FOLD_CONV) return -1;
    if (c->n_inputs < 2 || c->inputs[1] < 0) return -1;
    w = &ctx->tensors[c->inputs[1]];
    if (w->rank != 4 || (x->type == EDGE_FLOAT32 ? w->type != EDGE_FLOAT32 : (w->type != EDGE_INT8 && w->type != EDGE_INT4)))
        return -1; /* the hybrid kernels (float input, int8 filter) keep the PAD */
    op = edge_window_opts(c);
    kh = w->dims[1];
    kw = w->dims[2];
    if ((int64_t)x->dims[1] + pad[2] + pad[3] != y->dims[1] || (int64_t)x->dims[2] + pad[4] + pad[5] != y->dims[2])
        return -1;
    if (edge_conv_window(op.padding, op.sh, op.dh, y->dims[1], kh, &oh, &pt) ||
        edge_conv_window(op.padding, op.sw, op.dw, y->dims[2], kw, &ow, &pl))
        return -1;
    top = pt + (int32_t)pad[2];
    left = pl + (int32_t)pad[4];
    bottom = (int32_t)((int64_t)(oh - 1) * op.sh + (int64_t)(kh - 1) * op.dh + 1 - x->dims[1] - top);
    right = (int32_t)((int64_t)(ow - 1) * op.sw + (int64_t)(kw - 1) * op.dw + 1 - x->dims[2] - left);
    if ((top > bottom ? top : bottom) > (kh - 1) * op.dh || (left > right ? left : right) > (kw - 1) * op.dw) return -1;
    return c->index;
}

void edge_fold_pad(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *y = &ctx->tensors[node->outputs[0]];
    y->is_const = y->folded_ = 1;
    y->flags_ |= EDGE_TENSOR_PAD_FOLDED_;
}

int32_t edge_conv_source(edge_ctx_t *ctx, const edge_node_t *node, int32_t *top, int32_t *left) {
    const edge_node_t *pad = node->n_inputs >= 1 && node->inputs[0] >= 0
                                 ? folded_pad_writer(ctx->interp, ctx->subgraph, node->inputs[0]) : 0;
    const edge_tensor_t *p;
    *top = *left = 0;
    if (!pad || pad->n_inputs < 2) return node->n_inputs >= 1 ? node->inputs[0] : -1;
    p = &ctx->tensors[pad->inputs[1]];
    *top = (int32_t)edge_const_int(p, 2);
    *left = (int32_t)edge_const_int(p, 4);
    return pad->inputs[0];
}

/* The fusion's candidates (edge_kernel.h: edge_add_prelu_next). The first node after ADD with work at eval (the nodes
 * between fold at prepare: DEQUANTIZEs of constants, e.g. palm_detection's slopes) is a PRELU reading ADD's output as
 * its input 0, and no subgraph returns that output. Whether the PRELU is its only reader is the planner's to say (its
 * lifetimes know every reader: add_prelu_groups), not a scan of every node per ADD at prepare. The same answer at
 * ADD's prepare and at PRELU's (a slope folded in between is recognised by its node, not by its is_const, which the
 * fold sets). */
const edge_node_t *edge_add_prelu_next(edge_ctx_t *ctx, const edge_node_t *add) {
#if EDGE_SIMD
    const edge_interp_t *it = ctx->interp;
    const edge_subgraph_t *sg = &it->subgraphs[ctx->subgraph];
    const edge_node_t *c = 0;
    const edge_tensor_t *a, *b, *y, *alpha, *out;
    const int32_t *outputs;
    const int32_t level = edge_simd_level();
    int32_t n, k, j, folded, t;
    if (add->op != EDGE_OP_ADD || it->patch_plan.rows || add->n_inputs != 2 || add->n_outputs != 1 ||
        add->inputs[0] < 0 || add->inputs[1] < 0 || add->outputs[0] < 0 || add->index + 1 >= sg->n_nodes || !level)
        return 0;
    a = &ctx->tensors[add->inputs[0]];
    b = &ctx->tensors[add->inputs[1]];
    y = &ctx->tensors[add->outputs[0]];
    t = y->type; /* float32 (the SIMD channel rows), or int8 (PRELU's per-channel table: prelu.c) throughout */
    if ((t == EDGE_FLOAT32 ? !edge_simd_prelu_f32_rows(level, NULL, NULL, 0, 0, NULL) : t != EDGE_INT8) ||
        a->type != t || b->type != t || y->is_variable ||
        y->rank < 1 || edge_tensor_elements(a) != edge_tensor_elements(y) ||
        edge_tensor_elements(b) != edge_tensor_elements(y)) /* no broadcast: one row of the three */
        return 0;
    n = edge_subgraph_io(ctx, ctx->subgraph, 1, &outputs);
    for (k = 0; k < n; k++)
        if (outputs[k] == add->outputs[0]) return 0;
    for (j = add->index + 1; j < sg->n_nodes && !c; j++) { /* only nodes with nothing to do at eval in between */
        const edge_node_t *nd = &it->nodes[sg->node_base + j];
        if (!edge_folds_at_prepare(ctx, nd)) c = nd;
    }
    if (!c || c->op != EDGE_OP_PRELU || c->n_inputs != 2 || c->n_outputs != 1 || c->inputs[0] != add->outputs[0] ||
        c->inputs[1] < 0 || c->inputs[1] == add->outputs[0] || c->outputs[0] < 0 || c->skip_ == 1)
        return 0;
    alpha = &ctx->tensors[c->inputs[1]];
    folded = alpha->is_const; /* a model constant, or folded before ADD: constant at both prepares */
    for (j = add->index + 1; j < c->index; j++) /* or written by a node folded in between */
        if (it->nodes[sg->node_base + j].outputs[0] == c->inputs[1]) folded = 1;
    out = &ctx->tensors[c->outputs[0]];
    if (alpha->type != (t == EDGE_INT8 ? EDGE_INT8 : EDGE_FLOAT32) || !folded || alpha->rank < 1 ||
        out->type != t || out->is_variable || edge_tensor_elements(out) != edge_tensor_elements(y) ||
        edge_tensor_elements(alpha) != y->dims[y->rank - 1] || alpha->dims[alpha->rank - 1] != y->dims[y->rank - 1])
        return 0; /* one slope per channel of the last axis (PRELU's channel rows) */
    return c;
#else
    (void)ctx, (void)add;
    return 0;
#endif
}

const edge_node_t *edge_add_prelu_prev(edge_ctx_t *ctx, const edge_node_t *prelu) {
    const edge_interp_t *it = ctx->interp;
    const edge_subgraph_t *sg = &it->subgraphs[ctx->subgraph];
    int32_t j;
    if (prelu->n_inputs < 1) return 0;
    for (j = prelu->index - 1; j >= 0; j--) { /* the writer of its input 0 */
        const edge_node_t *add = &it->nodes[sg->node_base + j];
        if (add->n_outputs == 1 && add->outputs[0] == prelu->inputs[0]) {
            if (edge_add_prelu_next(ctx, add) != prelu) return 0;
            ((edge_node_t *)&it->nodes[sg->node_base + prelu->index])->skip_ = SKIP_PAIRED_; /* for the planner */
            return add;
        }
    }
    return 0;
}

int32_t edge_add_prelu_runs(const edge_node_t *prelu) { return prelu && prelu->skip_ == SKIP_FUSED_; }

int32_t edge_resource_id(edge_ctx_t *ctx, const char *container, const char *shared_name) {
    edge_interp_t *it = ctx->interp;
    int32_t k;
    if (!container) container = "";
    if (!shared_name) shared_name = "";
    for (k = 0; k < it->n_resources; k++)
        if (str_eq(it->resources[k].container, container) && str_eq(it->resources[k].shared_name, shared_name))
            return k;
    if (it->n_resources >= it->max_resources) return -1;
    it->resources[k].container = container;
    it->resources[k].shared_name = shared_name;
    it->n_resources++;
    return k;
}

edge_status_t edge_request_scratch(edge_ctx_t *ctx, edge_node_t *node, size_t bytes, int32_t *index) {
    if (!ctx->interp->in_prepare || (int64_t)bytes > MAX_TENSOR_BYTES ||
        (int64_t)node->scratch_bytes + align_up((int64_t)bytes) > MAX_TENSOR_BYTES)
        return edge_fail(ctx, EDGE_LIMIT, WHAT("scratch request"));
    *index = (int32_t)node->scratch_bytes;
    node->scratch_bytes += (uint32_t)align_up((int64_t)bytes);
    return EDGE_OK;
}

edge_status_t edge_set_output_shape(edge_ctx_t *ctx, const edge_node_t *node, int32_t i, const int32_t *dims,
                                    int32_t rank) {
    edge_tensor_t *t = edge_out(ctx, node, i);
    int32_t *copy, k;
    int64_t bytes;
    if (!t || rank < 0) return edge_fail(ctx, EDGE_BAD_NODE, WHAT("output shape"));
    if (rank > 127) return edge_fail(ctx, EDGE_LIMIT, WHAT("output shape over 127 dimensions"));
    for (k = 0; k < rank; k++)
        if (dims[k] < 0) return edge_fail(ctx, EDGE_BAD_NODE, WHAT("negative output dimension"));
    bytes = tensor_elements_capped(dims, rank) * (int64_t)edge_type_bytes(t->type);
    if (bytes > MAX_TENSOR_BYTES) return edge_fail(ctx, EDGE_LIMIT, WHAT("output above 2 GiB"));
    if (rank == t->rank && (rank == 0 || memcmp(dims, t->dims, sizeof(int32_t) * (size_t)rank) == 0)) return EDGE_OK;
    copy = (int32_t *)tail_alloc(ctx->interp, sizeof(int32_t) * (size_t)(rank ? rank : 1));
    if (!copy) return EDGE_ARENA_TOO_SMALL;
    for (k = 0; k < rank; k++) copy[k] = dims[k];
    t->dims = copy;
    t->rank = (int8_t)rank;
    t->bytes = (uint32_t)bytes;
    return EDGE_OK;
}

edge_status_t edge_fail(edge_ctx_t *ctx, edge_status_t status, edge_reason_t reason) {
    ctx->interp->error.status = status;
    SET_REASON(&ctx->interp->error, reason);
    return status;
}

static const edge_kernel_t *find_kernel(edge_interp_t *it, const edge_node_t *nd) {
    const char *custom_code = node_custom_code(it, nd);
    int32_t k;
    for (k = 0; k < edge_kernel_count && k < EDGE_NO_KERNEL_; k++) {
        const edge_kernel_t *kr = &edge_kernels[k];
        if (kr->op != nd->op || nd->version > kr->max_version) continue;
        if (nd->op == EDGE_OP_CUSTOM) {
            if (!kr->custom_code || !custom_code || !str_eq(kr->custom_code, custom_code)) continue;
        }
        return kr;
    }
    return 0;
}

/* Variables back to their initial values; with check set, EDGE_MODEL_INVALID when a model's initial value
 * does not match its tensor's size (edge_init), before anything is written. */
static edge_status_t reset_variables(edge_interp_t *it, int check) {
    int32_t s, k;
    for (s = 0; s < it->n_subgraphs; s++) {
        const edge_subgraph_t *sg = &it->subgraphs[s];
        for (k = 0; k < sg->n_tensors; k++) {
            edge_tensor_t *t = &it->tensors[sg->tensor_base + k];
            const uint8_t *init_data;
            int64_t len;
            if (!t->is_variable || t->is_const || !(t->flags_ & EDGE_TENSOR_PLANNED_)) continue;
            variable_init(it, s, k, &init_data, &len);
            if (check) {
                if (init_data && len != (int64_t)t->bytes) {
                    it->error.subgraph = s;
                    it->error.tensor = k;
                    return fail_at(it, EDGE_MODEL_INVALID, WHAT("variable's initial value does not match its shape"), -1);
                }
                continue;
            }
            if (init_data) memcpy(t->data, init_data, t->bytes);
            else if (t->type == EDGE_INT8 && t->quantized) memset(t->data, (int)(int8_t)t->zero_point, t->bytes);
            else memset(t->data, 0, t->bytes);
        }
    }
    return EDGE_OK;
}

/* Prepare subgraph g's nodes in execution order, after the subgraphs they call (edge_sdk.runtime.planner.call_order:
 * an IF / WHILE kernel sees its callees prepared; the walk from subgraph 0, then the unreached ones, callees in
 * node order). A call into a subgraph still on the walk is a cycle: EDGE_MODEL_INVALID naming the calling node.
 * PLAN_ONLY walks the calls without preparing. */
/* The first quantized UINT8 tensor a node reads or writes (subgraph-local index), -1 when it has none. */
static int32_t raw_uint8_tensor(const edge_ctx_t *ctx, const edge_node_t *nd) {
    int32_t i;
    for (i = 0; i < nd->n_inputs + nd->n_outputs; i++) {
        const int32_t t = i < nd->n_inputs ? nd->inputs[i] : nd->outputs[i - nd->n_inputs];
        if (t >= 0 && ctx->tensors[t].type == EDGE_UINT8 && ctx->tensors[t].quantized) return t;
    }
    return -1;
}

static edge_status_t prepare_subgraph(edge_interp_t *it, int32_t g, int32_t depth) {
    edge_subgraph_t *sg = &it->subgraphs[g];
    edge_ctx_t ctx;
    edge_status_t s;
    int32_t k, c, callee[2], n_callees;
    if (depth > EDGE_MAX_CALL_DEPTH) return fail_at(it, EDGE_LIMIT, WHAT("subgraph calls nest too deep"), -1);
    sg->on_stack = 1;
    for (k = 0; k < sg->n_nodes; k++) {
        edge_node_t *nd = &it->nodes[sg->node_base + k];
        it->error.subgraph = g;
        it->error.node = k;
        if ((s = callees(it, nd, callee, &n_callees)) != EDGE_OK) return s;
        for (c = 0; c < n_callees; c++) {
            if (it->subgraphs[callee[c]].on_stack) {
                it->error.subgraph = g;
                it->error.node = k;
                it->error.op_code = nd->op;
                it->error.op_version = nd->version;
                it->error.custom_code = node_custom_code(it, nd);
                return fail_at(it, EDGE_MODEL_INVALID,
                               WHAT("calls a subgraph that is still running: the subgraph calls form a cycle"), -1);
            }
            if (!it->subgraphs[callee[c]].marked && (s = prepare_subgraph(it, callee[c], depth + 1)) != EDGE_OK)
                return s;
        }
    }
    ctx.interp = it;
    ctx.window = 0;
    ctx.tensors = it->tensors + sg->tensor_base;
    ctx.n_tensors = sg->n_tensors;
    ctx.subgraph = g;
    for (k = 0; k < sg->n_nodes && plan_only(it); k++) { /* no prepare: what it would fold, out of the plan */
        edge_node_t *nd = &it->nodes[sg->node_base + k];
        if (edge_folds_at_prepare(&ctx, nd)) edge_fold_outputs(nd, &ctx);
    }
    for (k = 0; k < sg->n_nodes && plan_only(it); k++) { /* the PADs pad.c's prepare folds into their conv */
        edge_node_t *nd = &it->nodes[sg->node_base + k];
        if (edge_pad_folds(&ctx, nd) >= 0) edge_fold_pad(nd, &ctx);
    }
    for (k = 0; k < sg->n_nodes && !plan_only(it); k++) {
        edge_node_t *nd = &it->nodes[sg->node_base + k];
        SET_REASON(&it->error, EDGE_NO_REASON);
        s = edge_kernels[nd->kernel_].prepare(nd, &ctx);
        if (s != EDGE_OK) {
            edge_reason_t what = GET_REASON(&it->error);
            it->error.custom_code = node_custom_code(it, nd); /* the message names a custom op by its name */
            SET_REASON(&it->error, what);
            it->error.status = s;
            it->error.subgraph = g;
            it->error.node = k;
            it->error.op_code = nd->op;
            it->error.op_version = nd->version;
            /* a legacy quantized UINT8 tensor where the kernel runs INT8 (a model not presented as INT8 by the
             * host's edge_sdk.runtime.uint8): the message names that tensor, not only the node */
            if (s == EDGE_UNSUPPORTED_TYPE) it->error.tensor = raw_uint8_tensor(&ctx, nd);
            return s;
        }
    }
    sg->on_stack = 0;
    sg->marked = 1;
    return EDGE_OK;
}

/* patch_setup as init calls it: passed by edge_init_patch only (NULL from edge_init_ex, whose interp has no
 * patch plan: init never calls it then) */
typedef edge_status_t (*patch_setup_fn)(edge_interp_t *it);

static edge_status_t init(edge_interp_t *it, uint32_t flags, patch_setup_fn setup) {
    edge_status_t s;
    int32_t k, g;

    if ((uintptr_t)it->model % 4) return fail_at(it, EDGE_MODEL_UNALIGNED, WHAT("model address"), -1);
    if ((s = load_model(it)) != EDGE_OK) return s;

    if (!plan_only(it)) {
        /* every op must have a kernel: refuse the first that has none, naming its code and version */
        for (k = 0; k < it->n_nodes_total; k++) {
            edge_node_t *nd = &it->nodes[k];
            const edge_kernel_t *kr = find_kernel(it, nd);
            if (!kr) {
                it->error.subgraph = nd->subgraph;
                it->error.node = nd->index;
                it->error.op_code = nd->op;
                it->error.op_version = nd->version;
                it->error.custom_code = node_custom_code(it, nd);
                return fail_at(it, EDGE_UNSUPPORTED_OP, WHAT("no kernel for this op and version"), -1);
            }
            nd->kernel_ = (uint16_t)(kr - edge_kernels);
        }
        /* the resource-variable table: one slot per VAR_HANDLE op */
        for (k = 0; k < it->n_nodes_total; k++) it->max_resources += it->nodes[k].op == EDGE_OP_VAR_HANDLE;
        if (it->max_resources) {
            it->resources = (edge_resource_t *)tail_alloc(it, sizeof(edge_resource_t) * (size_t)it->max_resources);
            if (!it->resources) return EDGE_ARENA_TOO_SMALL;
        }
    }
    /* prepare, subgraph by subgraph, each after the subgraphs it calls (a call cycle is refused here, at load) */
    for (g = 0; g < it->n_subgraphs; g++) it->subgraphs[g].marked = it->subgraphs[g].on_stack = 0;
    it->in_prepare = 1;
    for (g = 0; g < it->n_subgraphs; g++) {
        if (it->subgraphs[g].marked) continue;
        if ((s = prepare_subgraph(it, g, 0)) != EDGE_OK) {
            it->in_prepare = 0;
            return s;
        }
    }
    it->in_prepare = 0;
    it->error.subgraph = it->error.node = -1;
    (void)flags;
    if (it->patch_plan.rows) {
        if (!EDGE_WITH_PATCH) return fail_at(it, EDGE_BAD_ARGUMENT, WHAT("patch plans are compiled out (EDGE_WITH_PATCH=0)"), -1);
        if (plan_only(it)) return fail_at(it, EDGE_BAD_ARGUMENT, WHAT("a patch plan needs the kernels (not PLAN_ONLY)"), -1);
        if (EDGE_WITH_PATCH && (s = setup(it)) != EDGE_OK) return s;
    }
    if ((s = plan_arena(it)) != EDGE_OK) return s;

    /* tensors get their arena bytes; the head region starts zeroed (a tensor nobody writes reads zeros) */
    memset(it->base, 0, it->head_used);
    if ((s = reset_variables(it, 1)) != EDGE_OK) return s;
    reset_variables(it, 0);
    return EDGE_OK;
}

static edge_status_t start(edge_interp_t *it, const void *model, size_t model_len, void *arena, size_t arena_len,
                           uint32_t flags, const edge_patch_plan_t *patch, patch_setup_fn setup) {
    uintptr_t a;
    edge_status_t s;
    if (!it) return EDGE_BAD_ARGUMENT;
    memset(it, 0, sizeof *it);
    if (patch && patch->rows) {
        it->patch_plan = *patch;
        flags |= EDGE_INIT_MEMORY_MIN; /* patches come on top of the least-RAM plan */
    }
    it->error.subgraph = it->error.node = it->error.tensor = -1;
    it->error.op_code = it->error.op_version = -1;
    it->error.offset = it->error.element = -1;
    it->max_while_iterations = -1;
    if (!model || (!arena && arena_len)) return fail_at(it, EDGE_BAD_ARGUMENT, WHAT("NULL model or arena"), -1);
    it->model = (const uint8_t *)model;
    it->model_len = model_len;
    it->arena = (uint8_t *)arena;
    it->arena_len = arena_len;
    a = (uintptr_t)arena;
    a = (a + BASE_ALIGN - 1) & ~(uintptr_t)(BASE_ALIGN - 1);
    if (arena && (size_t)(a - (uintptr_t)arena) <= arena_len) {
        it->base = (uint8_t *)a;
        /* the persistent part grows down from the end in PERSIST_ALIGN steps */
        it->base_len = (arena_len - (size_t)(a - (uintptr_t)arena)) / PERSIST_ALIGN * PERSIST_ALIGN;
    } else {
        it->base = (uint8_t *)arena;
        it->base_len = 0;
    }
    if ((!EDGE_WITH_PLAN_ONLY && (flags & EDGE_INIT_PLAN_ONLY)) ||
        (!EDGE_WITH_MEMORY_MIN && (flags & EDGE_INIT_MEMORY_MIN))) /* a build for one plan (gen_ops.plan_defines) */
        return fail_at(it, EDGE_BAD_ARGUMENT,
                       WHAT("init flag compiled out (EDGE_WITH_PLAN_ONLY / EDGE_WITH_MEMORY_MIN=0)"), -1);
    it->plan_only = (flags & EDGE_INIT_PLAN_ONLY) ? 1 : 0;
    it->memory_min = (flags & EDGE_INIT_MEMORY_MIN) ? 1 : 0;
    s = init(it, flags, setup);
    it->error.status = s;
    if (s == EDGE_ARENA_TOO_SMALL && it->error.given == 0) {
        it->error.given = (int64_t)arena_len;
        if (it->error.required <= it->error.given) it->error.required = it->error.given + 1;
    }
    if (s == EDGE_OK) {
        it->error.subgraph = it->error.node = it->error.tensor = -1;
        it->error.op_code = it->error.op_version = -1;
        SET_REASON(&it->error, EDGE_NO_REASON);
        it->ready = plan_only(it) ? 0 : 1;
    }
    return s;
}

edge_status_t edge_init_ex(edge_interp_t *it, const void *model, size_t model_len, void *arena, size_t arena_len,
                           uint32_t flags) {
    return start(it, model, model_len, arena, arena_len, flags, 0, 0);
}

/* The patch stage's windows, and its runner: the only references to patch_setup and run_patch_stage. */
static edge_status_t patch_setup_linked(edge_interp_t *it) {
    edge_status_t s = patch_setup(it);
    if (s == EDGE_OK) it->patch->run_stage = run_patch_stage;
    return s;
}

edge_status_t edge_init_patch(edge_interp_t *it, const void *model, size_t model_len, void *arena, size_t arena_len,
                              uint32_t flags, const edge_patch_plan_t *plan) {
    return start(it, model, model_len, arena, arena_len, flags, plan, patch_setup_linked);
}

edge_status_t edge_init(edge_interp_t *it, const void *model, size_t model_len, void *arena, size_t arena_len) {
    return edge_init_ex(it, model, model_len, arena, arena_len, 0);
}

/* ================================================================================= 7. invoke and API */

static edge_status_t run_subgraph(edge_interp_t *it, int32_t s) {
    edge_subgraph_t *sg = &it->subgraphs[s];
    edge_ctx_t ctx;
    int32_t k;
    const edge_timer_t *timer = it->timer;
    ctx.interp = it;
    ctx.tensors = it->tensors + sg->tensor_base;
    ctx.n_tensors = sg->n_tensors;
    ctx.subgraph = s;
    ctx.window = 0;
    if (!timer) {
        for (k = 0; k < sg->n_nodes; k++) {
            const edge_node_t *nd = &it->nodes[sg->node_base + k];
            if (in_patch_stage(it, s, k)) { /* the stage runs at its first node, patch by patch */
                if (k == it->patch_plan.first) it->patch->run_stage(it, &ctx);
                continue;
            }
            if (nd->skip_) continue;
            edge_kernels[nd->kernel_].eval(nd, &ctx);
            if (it->halt) return it->halt; /* a kernel stopped the invoke (edge_eval_fail) */
        }
        return EDGE_OK;
    }
    for (k = 0; k < sg->n_nodes; k++) {
        const edge_node_t *nd = &it->nodes[sg->node_base + k];
        uint32_t t0 = 0, t1 = 0; /* a skipped node: 0 ticks, exactly */
        if (!nd->skip_) {
            t0 = timer->now(timer->user);
            if (in_patch_stage(it, s, k)) { /* the whole stage's time at its first node, 0 at the others */
                if (k == it->patch_plan.first) it->patch->run_stage(it, &ctx);
            } else {
                edge_kernels[nd->kernel_].eval(nd, &ctx);
            }
            t1 = timer->now(timer->user);
        }
        if (it->trace && it->trace_count < it->trace_capacity) {
            edge_trace_entry_t *e = &it->trace[it->trace_count];
            e->subgraph = (uint16_t)s;
            e->node = (uint16_t)k;
            e->op = nd->op;
            e->reserved_ = 0;
            e->ticks = t1 - t0;
        }
        it->trace_count++;
        if (it->halt) return it->halt;
    }
    return EDGE_OK;
}

/* A new invoke after one a kernel stopped: the error record back to "ok" (it described that invoke). */
static void clear_halt(edge_interp_t *it) {
    if (!it->halt) return;
    it->halt = EDGE_OK;
    it->error.status = EDGE_OK;
    it->error.subgraph = it->error.node = it->error.tensor = -1;
    it->error.op_code = it->error.op_version = -1;
    it->error.custom_code = 0;
    it->error.element = -1;
    SET_REASON(&it->error, EDGE_NO_REASON);
}

void edge_eval_fail(edge_ctx_t *ctx, const edge_node_t *node, edge_status_t status, edge_reason_t reason) {
    edge_interp_t *it = ctx->interp;
    const char *custom_code = node_custom_code(it, node); /* read first: a model read may touch the record */
    it->error.status = status;
    it->error.subgraph = node->subgraph;
    it->error.node = node->index;
    it->error.op_code = node->op;
    it->error.op_version = node->version;
    it->error.custom_code = custom_code;
    it->error.tensor = -1;
    it->error.offset = -1;
    it->error.element = -1;
    SET_REASON(&it->error, reason);
    it->halt = status;
}

void edge_eval_bad_input(edge_ctx_t *ctx, const edge_node_t *node, int32_t input, int64_t element, int64_t value,
                         edge_reason_t reason) {
    edge_eval_fail(ctx, node, EDGE_BAD_INPUT, reason);
    ctx->interp->error.tensor = node->inputs[input];
    ctx->interp->error.element = element;
    ctx->interp->error.value = value;
}

void edge_set_max_while_iterations(edge_interp_t *it, int32_t n) {
    if (it) it->max_while_iterations = n < 0 ? -1 : n;
}

edge_status_t edge_invoke(edge_interp_t *it) {
    if (!it || !it->ready) return EDGE_NOT_READY;
    clear_halt(it);
    it->trace_count = 0;
    return run_subgraph(it, 0);
}

edge_status_t edge_invoke_at(edge_interp_t *it, int32_t subgraph) {
    if (!it || !it->ready) return EDGE_NOT_READY;
    if (subgraph < 0 || subgraph >= it->n_subgraphs) return EDGE_BAD_ARGUMENT;
    clear_halt(it);
    it->trace_count = 0;
    return run_subgraph(it, subgraph);
}

/* ---- signatures: reads of the tables load_signatures verified ---- */

static edge_table_t sig_element(const uint8_t *b, int64_t start, int32_t i) {
    edge_table_t t;
    int64_t e = start + 4 * (int64_t)i, pos = e + (int64_t)rd32(b + e), vt = pos - (int64_t)(int32_t)rd32(b + pos);
    t.table = b + pos;
    t.vtable = b + vt;
    t.n_slots = (uint16_t)((rd16(b + vt) - 4) / 2);
    t.inline_size = rd16(b + vt + 2);
    return t;
}

static const char *sig_string(const uint8_t *b, const edge_table_t *t, int32_t slot) {
    int off = field_off(t, slot, 4);
    int64_t f;
    if (off <= 0) return "";
    f = (t->table - b) + off;
    return (const char *)(b + f + (int64_t)rd32(b + f) + 4);
}

/* Where the elements of a vector field of a verified table start. */
static int64_t vector_start(const uint8_t *b, const edge_table_t *t, int32_t slot) {
    int64_t f = (t->table - b) + field_off(t, slot, 4);
    return f + (int64_t)rd32(b + f) + 4;
}

/* Tensor k of subgraph g's name ("" when it has none), read back from the tables load verified (no error path:
 * edge_error_message reads it for a node's refused tensor). Model 2 subgraphs, SubGraph 0 tensors, Tensor 3 name. */
static const char *tensor_name(const uint8_t *b, int32_t g, int32_t k) {
    const edge_table_t mt = sig_element(b, 0, 0); /* the root table: element 0 of a "vector" at offset 0 */
    const edge_table_t st = sig_element(b, vector_start(b, &mt, 2), g);
    const edge_table_t tt = sig_element(b, vector_start(b, &st, 0), k);
    return sig_string(b, &tt, 3);
}

static uint32_t sig_u32(const edge_table_t *t, int32_t slot) {
    int off = field_off(t, slot, 4);
    return off > 0 ? rd32(t->table + off) : 0;
}

int32_t edge_signature_count(const edge_interp_t *it) {
    return it && it->subgraphs && it->error.status == EDGE_OK ? it->n_signatures : 0;
}

int32_t edge_signature_find(const edge_interp_t *it, const char *key) {
    int32_t k, n = edge_signature_count(it);
    for (k = 0; key && k < n; k++)
        if (str_eq(edge_signature_key(it, k), key)) return k;
    return -1;
}

const char *edge_signature_key(const edge_interp_t *it, int32_t k) {
    edge_table_t t;
    if (k < 0 || k >= edge_signature_count(it)) return 0;
    t = sig_element(it->model, it->signature_defs_, k);
    return sig_string(it->model, &t, 2);
}

int32_t edge_signature_subgraph(const edge_interp_t *it, int32_t k) {
    edge_table_t t;
    if (k < 0 || k >= edge_signature_count(it)) return -1;
    t = sig_element(it->model, it->signature_defs_, k);
    return (int32_t)sig_u32(&t, 4);
}

int32_t edge_signature_tensor(const edge_interp_t *it, int32_t k, int32_t output, const char *name) {
    edge_table_t t, m;
    int32_t off, j, n;
    int64_t v;
    if (k < 0 || k >= edge_signature_count(it) || !name) return -1;
    t = sig_element(it->model, it->signature_defs_, k);
    off = field_off(&t, output ? 1 : 0, 4);
    if (off <= 0) return -1;
    v = (t.table - it->model) + off;
    v += (int64_t)rd32(it->model + v);
    n = (int32_t)rd32(it->model + v);
    for (j = 0; j < n; j++) {
        m = sig_element(it->model, v + 4, j);
        if (str_eq(sig_string(it->model, &m, 0), name)) return (int32_t)sig_u32(&m, 1);
    }
    return -1;
}

edge_status_t edge_invoke_subgraph(edge_ctx_t *ctx, int32_t subgraph) {
    if (subgraph < 0 || subgraph >= ctx->interp->n_subgraphs) return EDGE_BAD_ARGUMENT;
    return run_subgraph(ctx->interp, subgraph);
}

edge_tensor_t *edge_subgraph_tensor(edge_ctx_t *ctx, int32_t subgraph, int32_t tensor) {
    return edge_tensor(ctx->interp, subgraph, tensor);
}

int32_t edge_subgraph_io(edge_ctx_t *ctx, int32_t subgraph, int32_t output, const int32_t **indices) {
    const edge_subgraph_t *sg;
    if (subgraph < 0 || subgraph >= ctx->interp->n_subgraphs) { *indices = 0; return 0; }
    sg = &ctx->interp->subgraphs[subgraph];
    *indices = output ? sg->outputs : sg->inputs;
    return output ? sg->n_outputs : sg->n_inputs;
}

edge_status_t edge_reset_state(edge_interp_t *it) {
    edge_ctx_t ctx;
    int32_t k;
    if (!it || !it->ready) return EDGE_NOT_READY;
    reset_variables(it, 0);
    for (k = 0; k < it->n_resources; k++) it->resources[k].held = 0;
    ctx.interp = it;
    ctx.window = 0;
    for (k = 0; k < it->n_nodes_total; k++) {
        const edge_node_t *nd = &it->nodes[k];
        const edge_subgraph_t *sg = &it->subgraphs[nd->subgraph];
        if (nd->kernel_ == EDGE_NO_KERNEL_ || !edge_kernels[nd->kernel_].reset) continue;
        ctx.tensors = it->tensors + sg->tensor_base;
        ctx.n_tensors = sg->n_tensors;
        ctx.subgraph = nd->subgraph;
        edge_kernels[nd->kernel_].reset(nd, &ctx);
    }
    return EDGE_OK;
}

int32_t edge_num_inputs(const edge_interp_t *it) { return it && it->subgraphs ? it->subgraphs[0].n_inputs : 0; }
int32_t edge_num_outputs(const edge_interp_t *it) { return it && it->subgraphs ? it->subgraphs[0].n_outputs : 0; }

edge_tensor_t *edge_tensor(edge_interp_t *it, int32_t subgraph, int32_t tensor) {
    if (!it || !it->subgraphs || it->error.status != EDGE_OK || subgraph < 0 || subgraph >= it->n_subgraphs)
        return 0;
    if (tensor < 0 || tensor >= it->subgraphs[subgraph].n_tensors) return 0;
    return &it->tensors[it->subgraphs[subgraph].tensor_base + tensor];
}

edge_tensor_t *edge_input(edge_interp_t *it, int32_t i) {
    if (i < 0 || i >= edge_num_inputs(it)) return 0;
    return edge_tensor(it, 0, it->subgraphs[0].inputs[i]);
}

edge_tensor_t *edge_output(edge_interp_t *it, int32_t i) {
    if (i < 0 || i >= edge_num_outputs(it)) return 0;
    return edge_tensor(it, 0, it->subgraphs[0].outputs[i]);
}

size_t edge_arena_used(const edge_interp_t *it) {
    return it ? (size_t)(it->base - it->arena) + it->head_used + it->tail_used : 0;
}

size_t edge_arena_high_water(const edge_interp_t *it) {
    return it ? (size_t)(it->base - it->arena) + it->high_water : 0;
}

int32_t edge_plan_count(const edge_interp_t *it) {
    return it && it->error.status == EDGE_OK ? it->plan.n_tensors + it->plan.n_scratch : 0;
}

/* Lifetime of one flat tensor or node index, walked again (the structs keep no lifetimes). The walk writes
 * only the subgraphs' walk marks, so a const interpreter stays as it was. */
static void lifetime_of(const edge_interp_t *cit, int32_t tensor, int32_t node, int32_t *first, int32_t *last) {
    edge_interp_t *it = (edge_interp_t *)(uintptr_t)cit;
    life_t L;
    int32_t end;
    L.t_first = L.t_last = L.n_first = L.n_last = 0;
    L.tensor = tensor;
    L.node = node;
    L.first = L.last = -1;
    (void)lifetimes(it, &L, &end);
    *first = L.first;
    *last = L.last;
}

edge_status_t edge_plan_entry(const edge_interp_t *it, int32_t k, edge_plan_entry_t *e) {
    int32_t i, s, seen = 0;
    if (!it || !e || k < 0 || k >= edge_plan_count(it)) return EDGE_BAD_ARGUMENT;
    for (s = 0; s < it->n_subgraphs; s++) {
        const edge_subgraph_t *sg = &it->subgraphs[s];
        for (i = 0; i < sg->n_tensors; i++) {
            const edge_tensor_t *t = &it->tensors[sg->tensor_base + i];
            if (!(t->flags_ & EDGE_TENSOR_PLANNED_)) continue;
            if (seen++ == k) {
                e->subgraph = s;
                e->tensor = i;
                e->node = -1;
                lifetime_of(it, sg->tensor_base + i, -1, &e->first_use, &e->last_use);
                e->offset = (const uint8_t *)t->data - it->base;
                e->size = plan_bytes(it, sg->tensor_base + i);
                if (EDGE_WITH_PATCH && it->patch && s == 0) { /* as plan_lifetimes: the stage input and the cut
                                                                * span the stage, and the buffers keeping rows */
                    int32_t f, l;
                    if (sg->tensor_base + i == it->patch->input) {
                        lifetime_of(it, -1, sg->node_base + it->patch_plan.last, &f, &l);
                        if (e->last_use < l) e->last_use = l;
                    }
                    if (sg->tensor_base + i == it->patch->output) {
                        lifetime_of(it, -1, sg->node_base + it->patch_plan.first, &f, &l);
                        if (e->first_use > f) e->first_use = f;
                    }
                    for (f = 0; f + 1 < it->patch->n; f++) /* kept rows: the whole stage */
                        if (it->patch->nodes[f].out == sg->tensor_base + i && it->patch->nodes[f].kept) {
                            int32_t a, b;
                            lifetime_of(it, -1, sg->node_base + it->patch_plan.first, &a, &b);
                            if (e->first_use > a) e->first_use = a;
                            lifetime_of(it, -1, sg->node_base + it->patch_plan.last, &a, &b);
                            if (e->last_use < b) e->last_use = b;
                        }
                }
                return EDGE_OK;
            }
        }
    }
    if (EDGE_WITH_PATCH && it->patch && seen++ == k) {
        e->subgraph = 0;
        e->tensor = EDGE_PLAN_PATCH_CUT;
        e->node = -1;
        lifetime_of(it, -1, it->subgraphs[0].node_base + it->patch_plan.last, &e->first_use, &e->last_use);
        e->offset = it->patch->cut_offset;
        e->size = it->patch->nodes[it->patch->n - 1].bytes;
        return EDGE_OK;
    }
    for (i = 0; i < it->n_nodes_total; i++) {
        const edge_node_t *nd = &it->nodes[i];
        if (nd->scratch_bytes && seen++ == k) {
            e->subgraph = nd->subgraph;
            e->tensor = -1;
            e->node = nd->index;
            lifetime_of(it, -1, i, &e->first_use, &e->last_use);
            e->offset = nd->scratch_offset;
            e->size = nd->scratch_bytes;
            return EDGE_OK;
        }
    }
    return EDGE_BAD_ARGUMENT;
}

void edge_set_timer(edge_interp_t *it, const edge_timer_t *timer, edge_trace_entry_t *trace, uint32_t capacity) {
    if (!it) return;
    it->timer = (timer && timer->now) ? timer : 0;
    it->trace = trace;
    it->trace_capacity = trace ? capacity : 0;
    it->trace_count = 0;
}

/* ---- the error line, without printf ---- */

typedef struct { char *p; size_t left; } out_t;

static void put_s(out_t *o, const char *s) {
    while (s && *s && o->left > 1) { *o->p++ = *s++; o->left--; }
}
static void put_i(out_t *o, int64_t v) {
    /* digits by subtracting powers of ten: no 64-bit division helper on 32-bit cores */
    uint64_t pw[20], u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    int n = 1;
    char digit[2] = {0, 0};
    if (v < 0) put_s(o, "-");
    pw[0] = 1;
    while (n < 20 && pw[n - 1] <= UINT64_MAX / 10 && pw[n - 1] * 10 <= u) {
        pw[n] = pw[n - 1] * 10;
        n++;
    }
    while (n-- > 0) {
        digit[0] = '0';
        while (u >= pw[n]) u -= pw[n], digit[0]++;
        put_s(o, digit);
    }
}

char *edge_error_message(const edge_interp_t *it, char *buf, size_t len) {
    out_t o;
    const edge_error_t *e;
    if (!buf || !len) return buf;
    o.p = buf;
    o.left = len;
    if (!it) { buf[0] = 0; return buf; }
    e = &it->error;
    if (e->subgraph > 0) { put_s(&o, "subgraph "); put_i(&o, e->subgraph); put_s(&o, " "); }
    if (e->node >= 0) {
        put_s(&o, "node ");
        put_i(&o, e->node);
        if (e->op_code >= 0) {
            put_s(&o, " (");
            if (e->op_code == EDGE_OP_CUSTOM && e->custom_code) put_s(&o, e->custom_code);
            else {
                const char *name = edge_op_name(e->op_code); /* "" when the build left the names to the host */
                if (*name) { put_s(&o, name); put_s(&o, " "); }
                put_s(&o, "code ");
                put_i(&o, e->op_code);
            }
            put_s(&o, " v");
            put_i(&o, e->op_version);
            put_s(&o, ")");
        }
        put_s(&o, ": ");
    }
    if (e->tensor >= 0) {
        put_s(&o, "tensor ");
        put_i(&o, e->tensor);
        if (e->status == EDGE_UNSUPPORTED_TYPE && e->node >= 0 && e->subgraph >= 0 && e->subgraph < it->n_subgraphs &&
            e->tensor < it->subgraphs[e->subgraph].n_tensors &&
            it->tensors[it->subgraphs[e->subgraph].tensor_base + e->tensor].type == EDGE_UINT8) { /* raw_uint8_tensor's */
            put_s(&o, " '");
            put_s(&o, tensor_name(it->model, e->subgraph, e->tensor));
            put_s(&o, "' UINT8");
        } else if ((e->status == EDGE_BAD_INPUT || (e->status == EDGE_UNSUPPORTED && e->node >= 0)) &&
                   e->subgraph >= 0 && e->subgraph < it->n_subgraphs &&
                   e->tensor < it->subgraphs[e->subgraph].n_tensors) { /* the run-time input / refused tensor, by name */
            put_s(&o, " '");
            put_s(&o, tensor_name(it->model, e->subgraph, e->tensor));
            put_s(&o, "'");
        }
        put_s(&o, ": ");
    }
    put_s(&o, edge_status_str(e->status));
    if (e->what) { put_s(&o, ": "); put_s(&o, e->what); }
    if (e->what_line > 0) { put_s(&o, ": @"); put_i(&o, e->what_line); } /* the reason's source line (host decodes) */
    if (e->status == EDGE_BAD_INPUT && e->element >= 0) {
        put_s(&o, ": element ");
        put_i(&o, e->element);
        put_s(&o, " is ");
        put_i(&o, e->value);
    }
    if (e->offset >= 0) { put_s(&o, " at byte "); put_i(&o, e->offset); }
    if (e->status == EDGE_ARENA_TOO_SMALL) {
        put_s(&o, e->required_exact ? ": needs " : ": needs at least ");
        put_i(&o, e->required);
        put_s(&o, " bytes, given ");
        put_i(&o, e->given);
    }
    *o.p = 0;
    return buf;
}
