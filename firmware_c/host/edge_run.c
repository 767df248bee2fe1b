/* edge-run-c: run a .tflite model with the C runtime on the host.
 *
 *   edge-run-c MODEL IN.bin OUT.bin [--trace] [--arena BYTES] [--invocations N]
 *       IN.bin: the input tensors' raw bytes, concatenated in input order; OUT.bin gets the outputs likewise.
 *   edge-run-c MODEL --plan [--plan-only] [--memory-min] [--all-refusals] [--patch FIRST,LAST,ROWS,COLS]
 *              [--arena BYTES]
 *       print the arena plan: "entry SUBGRAPH TENSOR NODE FIRST LAST OFFSET SIZE" lines and a summary.
 *       --all-refusals (a runner built with `gen_ops.py --check`, as edge check builds it): a node whose
 *       prepare refuses it is recorded and the next one prepared, so one run names every refused node:
 *       "refused STATUS SUBGRAPH NODE OP VERSION MESSAGE" per node on stdout, then the first one's error
 *       record, exit 3. The loader's refusals (a malformed model, a custom op without a kernel) stay fatal.
 *   edge-run-c --fuzz CASES.bin [--arena BYTES]      (default arena: the harness's, EDGE_FUZZ_ARENA)
 *       CASES.bin holds models as [uint32 length][bytes]...: the corpus replay. Each is loaded first in
 *       plan-only mode, then fully, and when it loads it is invoked exactly as the libFuzzer harness does it
 *       (fuzz/edge_fuzz_inputs.h, shared with fuzz/fuzz_edge.c: inputs filled from a hash of the model's
 *       bytes, three invokes, edge_reset_state before the third), so a crasher the fuzzer found replays
 *       with the same input bytes. "case I plan S" and "case I status S" are printed (and flushed) before
 *       the next case, so a crash names the case that caused it.
 *
 * Exit status: 0 ok; 1 usage or I/O error; 3 edge_init refused the model (the message names why, on stderr;
 * stdout gets the error record as "error status S subgraph G node N tensor T op C version V offset O
 * required R given B exact E").
 */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edge.h"
#include "edge_host.h"
#include "edge_kernel.h"
#include "../fuzz/edge_fuzz_inputs.h"

static void *alloc16(size_t n) {
    void *p = NULL;
    return posix_memalign(&p, 16, n ? n : 16) == 0 ? p : NULL;
}

/* The arena at a cache line (as edge_sdk's CInterpreter gives it): the plan's 16-byte offsets from there put a conv
 * net's tensors at 64-byte boundaries, where the AVX-512 kernels' 64-byte loads and stores stay within one line. */
static void *alloc64(size_t n) {
    void *p = NULL;
    return posix_memalign(&p, 64, n ? n : 64) == 0 ? p : NULL;
}

static void *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    long n;
    void *buf;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return NULL; }
    buf = alloc16(((size_t)n + 16) / 16 * 16);
    if (buf && n && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int print_init_error(const edge_interp_t *it) {
    char msg[256];
    const edge_error_t *e = &it->error;
    fprintf(stderr, "edge-run-c: status %d: %s\n", (int)e->status, edge_error_message(it, msg, sizeof msg));
    /* the error record for tools (edge check): one line on stdout */
    printf("error status %d subgraph %d node %d tensor %d op %d version %d offset %lld required %lld given %lld "
           "exact %d\n", (int)e->status, (int)e->subgraph, (int)e->node, (int)e->tensor, (int)e->op_code,
           (int)e->op_version, (long long)e->offset, (long long)e->required, (long long)e->given,
           (int)e->required_exact);
    return 3;
}

/* ---- edge check: every refused node in one run (the op table of `gen_ops.py --check` calls these) ---- */
static int all_refusals;           /* --all-refusals */
static int32_t n_refused;
static edge_error_t first_refusal;

static void clear_error(edge_interp_t *it) {
    it->error.status = EDGE_OK;
    it->error.subgraph = it->error.node = it->error.tensor = -1;
    it->error.op_code = it->error.op_version = -1;
    it->error.offset = -1;
    it->error.what = 0;
    it->error.custom_code = 0;
}

edge_status_t edge_check_prepared(edge_node_t *node, edge_ctx_t *ctx, edge_status_t s);
edge_status_t edge_check_prepared(edge_node_t *node, edge_ctx_t *ctx, edge_status_t s) {
    edge_interp_t *it = ctx->interp;
    char msg[256];
    /* an exhausted arena is no verdict on the node: init stops and edge check retries with more */
    if (s == EDGE_OK || s == EDGE_ARENA_TOO_SMALL || !all_refusals) return s;
    it->error.status = s;
    it->error.subgraph = ctx->subgraph;
    it->error.node = node->index;
    it->error.op_code = node->op;
    it->error.op_version = node->version;
    if (node->op == EDGE_OP_CUSTOM) it->error.custom_code = edge_custom_code(ctx, node);
    edge_error_message(it, msg, sizeof msg);
    printf("refused %d %d %d %d %d %s\n", (int)s, (int)ctx->subgraph, (int)node->index, (int)node->op,
           (int)node->version, msg);
    if (n_refused++ == 0) first_refusal = it->error;
    clear_error(it);
    return EDGE_OK;
}

edge_status_t edge_check_no_kernel(edge_node_t *node, edge_ctx_t *ctx);
edge_status_t edge_check_no_kernel(edge_node_t *node, edge_ctx_t *ctx) {
    /* a builtin op without a kernel: recorded as the loader words it (no kernel for this op and version) */
    if (!all_refusals) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_OP, "no kernel for this op and version");
    ctx->interp->error.what = "no kernel for this op and version";
    return edge_check_prepared(node, ctx, EDGE_UNSUPPORTED_OP);
}

void edge_check_no_eval(const edge_node_t *node, edge_ctx_t *ctx);
void edge_check_no_eval(const edge_node_t *node, edge_ctx_t *ctx) { (void)node; (void)ctx; }

static void print_plan(const edge_interp_t *it) {
    int32_t k, n = edge_plan_count(it);
    edge_plan_entry_t e;
    for (k = 0; k < n; k++) {
        edge_plan_entry(it, k, &e);
        printf("entry %d %d %d %d %d %lld %lld\n", e.subgraph, e.tensor, e.node, e.first_use, e.last_use,
               (long long)e.offset, (long long)e.size);
    }
    printf("plan tensor_total %lld lower_bound %lld head_total %lld ordering %d steps %d\n",
           (long long)it->plan.tensor_total, (long long)it->plan.lower_bound, (long long)it->plan.head_total,
           it->plan.ordering, it->plan.steps);
    printf("arena used %zu high_water %zu persistent %zu packed %zu\n", edge_arena_used(it),
           edge_arena_high_water(it), it->tail_used, it->packed_used);
}

static int fuzz(const char *path, size_t arena_len) {
    size_t len, pos = 0;
    uint8_t *cases = read_file(path, &len), *arena = alloc16(arena_len), *model;
    static edge_interp_t it;
    int i = 0;
    if (!cases || !arena) { fprintf(stderr, "edge-run-c: cannot read %s\n", path); return 1; }
    while (pos + 4 <= len) {
        uint32_t n = (uint32_t)cases[pos] | ((uint32_t)cases[pos + 1] << 8) | ((uint32_t)cases[pos + 2] << 16) |
                     ((uint32_t)cases[pos + 3] << 24);
        uint32_t seed;
        edge_status_t s;
        pos += 4;
        if (n > len - pos) break;
        /* a private, exactly sized, 16-aligned copy (as the harness makes), so reads past the end are caught
         * by the sanitizer */
        model = alloc16(n);
        if (!model) { fprintf(stderr, "edge-run-c: cannot allocate %u bytes\n", (unsigned)n); return 1; }
        memcpy(model, cases + pos, n);
        seed = edge_fuzz_seed(model, n);
        pos += n;
        printf("case %d start\n", i);
        fflush(stdout);
        s = edge_init_ex(&it, model, n, arena, arena_len, EDGE_INIT_PLAN_ONLY); /* loader + planner alone */
        printf("case %d plan %d\n", i, (int)s);
        fflush(stdout);
        s = edge_init(&it, model, n, arena, arena_len);
        if (s == EDGE_OK) s = edge_fuzz_invoke(&it, seed);
        printf("case %d status %d\n", i, (int)s);
        fflush(stdout);
        free(model);
        i++;
    }
    printf("done %d\n", i);
    free(cases);
    free(arena);
    return 0;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *in_path = NULL, *out_path = NULL, *fuzz_path = NULL;
    int trace = 0, plan = 0, plan_only = 0, memory_min = 0, invocations = 1, a, pos = 0, k, arena_set = 0;
    size_t arena_len = 64u << 20, model_len, in_len = 0, used = 0;
    uint8_t *model, *arena, *in = NULL;
    static edge_interp_t it;
    static edge_trace_entry_t entries[4096];
    edge_patch_plan_t patch = {0, 0, 0, 0};
    edge_status_t s;
    FILE *out;

    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--trace")) trace = 1;
        else if (!strcmp(argv[a], "--plan")) plan = 1;
        else if (!strcmp(argv[a], "--plan-only")) plan = plan_only = 1;
        else if (!strcmp(argv[a], "--memory-min")) memory_min = 1;
        else if (!strcmp(argv[a], "--all-refusals")) all_refusals = 1;
        else if (!strcmp(argv[a], "--patch") && a + 1 < argc) { /* edge_init_patch's stage and grid */
            if (sscanf(argv[++a], "%d,%d,%d,%d", &patch.first, &patch.last, &patch.rows, &patch.cols) != 4) {
                fprintf(stderr, "edge-run-c: --patch needs FIRST,LAST,ROWS,COLS\n");
                return 1;
            }
        }
        else if (!strcmp(argv[a], "--arena") && a + 1 < argc) { arena_len = (size_t)strtoull(argv[++a], NULL, 0); arena_set = 1; }
        else if (!strcmp(argv[a], "--invocations") && a + 1 < argc) invocations = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--fuzz") && a + 1 < argc) fuzz_path = argv[++a];
        else if (argv[a][0] == '-' && argv[a][1] == '-') { fprintf(stderr, "edge-run-c: unknown option %s\n", argv[a]); return 1; }
        else if (pos == 0) { model_path = argv[a]; pos++; }
        else if (pos == 1) { in_path = argv[a]; pos++; }
        else if (pos == 2) { out_path = argv[a]; pos++; }
        else { fprintf(stderr, "edge-run-c: too many arguments\n"); return 1; }
    }
    if (fuzz_path) return fuzz(fuzz_path, arena_set ? arena_len : (size_t)EDGE_FUZZ_ARENA);
    if (!model_path || (!plan && (!in_path || !out_path))) {
        fprintf(stderr, "usage: edge-run-c MODEL IN.bin OUT.bin [--trace] [--arena BYTES] [--invocations N]\n"
                        "       edge-run-c MODEL --plan [--plan-only] [--memory-min] [--all-refusals] [--patch F,L,R,C] [--arena BYTES]\n"
                        "       edge-run-c --fuzz CASES.bin [--arena BYTES]\n");
        return 1;
    }
    model = read_file(model_path, &model_len);
    if (!model) { fprintf(stderr, "edge-run-c: cannot read %s\n", model_path); return 1; }
    arena = alloc64((arena_len + 15) / 16 * 16 + 16);
    if (!arena) { fprintf(stderr, "edge-run-c: cannot allocate a %zu byte arena\n", arena_len); return 1; }
    s = edge_init_patch(&it, model, model_len, arena, arena_len,
                        (plan_only ? EDGE_INIT_PLAN_ONLY : 0) | (memory_min ? EDGE_INIT_MEMORY_MIN : 0), &patch);
    if (n_refused && s != EDGE_ARENA_TOO_SMALL) {
        /* the refused nodes decide (an arena shortfall is reported as such: the caller retries with more, and
         * the nodes after the shortfall get prepared too) */
        it.error = first_refusal;
        return print_init_error(&it);
    }
    if (s != EDGE_OK) return print_init_error(&it);
    if (plan) { print_plan(&it); return 0; }

    in = read_file(in_path, &in_len);
    if (!in && in_len) { fprintf(stderr, "edge-run-c: cannot read %s\n", in_path); return 1; }
    for (k = 0; k < edge_num_inputs(&it); k++) used += edge_input(&it, k)->bytes;
    if (used != in_len) {
        fprintf(stderr, "edge-run-c: %s holds %zu bytes, the model's inputs take %zu\n", in_path, in_len, used);
        return 1;
    }
    if (trace) edge_set_timer(&it, edge_host_timer(), entries, 4096);
    for (a = 0; a < invocations; a++) {
        size_t off = 0;
        for (k = 0; k < edge_num_inputs(&it); k++) {
            edge_tensor_t *t = edge_input(&it, k);
            memcpy(t->data, in + off, t->bytes); /* inputs again every time: the plan may reuse their bytes */
            off += t->bytes;
        }
        s = edge_invoke(&it);
        if (s != EDGE_OK) { fprintf(stderr, "edge-run-c: invoke: %s\n", edge_status_str(s)); return 3; }
    }
    out = fopen(out_path, "wb");
    if (!out) { fprintf(stderr, "edge-run-c: cannot write %s\n", out_path); return 1; }
    for (k = 0; k < edge_num_outputs(&it); k++) {
        edge_tensor_t *t = edge_output(&it, k);
        if (t->bytes && fwrite(t->data, 1, t->bytes, out) != t->bytes) { fclose(out); return 1; }
    }
    fclose(out);
    if (trace) {
        uint32_t i, total = 0;
        printf("%-5s %-4s %-28s %12s\n", "sg", "node", "op", edge_host_timer()->units);
        for (i = 0; i < it.trace_count && i < it.trace_capacity; i++) {
            printf("%-5u %-4u %-28s %12u\n", entries[i].subgraph, entries[i].node, edge_op_name(entries[i].op),
                   entries[i].ticks);
            total += entries[i].ticks;
        }
        printf("total %u %s; arena used %zu bytes (high water %zu)\n", total, edge_host_timer()->units,
               edge_arena_used(&it), edge_arena_high_water(&it));
    }
    free(in);
    free(arena);
    free(model);
    return 0;
}
