/* edge_host.c - small flat accessors for bindings (Python ctypes) and the host timer.
 * Part of the host library only (not of the firmware build): it lets a binding drive the runtime without
 * mirroring edge_interp_t / edge_tensor_t field by field. */
#define _POSIX_C_SOURCE 199309L
#include <string.h>
#include <time.h>

#include "edge.h"
#include "edge_host.h"
#include "edge_kernel.h"

size_t edge_host_interp_size(void) { return sizeof(edge_interp_t); }

static uint32_t host_now(void *user) {
    struct timespec ts;
    (void)user;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

static const edge_timer_t host_timer = {host_now, "ns", 0};

const edge_timer_t *edge_host_timer(void) { return &host_timer; }

int32_t edge_host_tensor(edge_interp_t *it, int32_t kind, int32_t i, void **data, uint32_t *bytes, int32_t *type,
                         int32_t *rank, int32_t *dims, int32_t max_rank, float *scale, int32_t *zero_point) {
    edge_tensor_t *t = kind == 0 ? edge_input(it, i) : kind == 1 ? edge_output(it, i) : kind >= 2 ? edge_tensor(it, kind - 2, i) : 0;
    int32_t k;
    if (!t) return -1;
    *data = (t->flags_ & EDGE_TENSOR_PAD_FOLDED_) ? 0 : t->data; /* folded into its conv: no bytes of its own */
    *bytes = t->bytes;
    *type = t->type;
    *rank = t->rank;
    for (k = 0; k < t->rank && k < max_rank; k++) dims[k] = t->dims[k];
    *scale = t->quantized ? t->scale : 0.0f;
    *zero_point = t->quantized ? t->zero_point : 0;
    return 0;
}

void edge_host_error(const edge_interp_t *it, int64_t *fields, char *msg, size_t len) {
    const edge_error_t *e = &it->error;
    fields[0] = e->status;
    fields[1] = e->subgraph;
    fields[2] = e->node;
    fields[3] = e->tensor;
    fields[4] = e->op_code;
    fields[5] = e->op_version;
    fields[6] = e->offset;
    fields[7] = e->required;
    fields[8] = e->given;
    fields[9] = e->required_exact;
    edge_error_message(it, msg, len);
}

void edge_host_plan_info(const edge_interp_t *it, int64_t *fields) {
    fields[0] = it->plan.n_tensors;
    fields[1] = it->plan.n_scratch;
    fields[2] = it->plan.tensor_total;
    fields[3] = it->plan.lower_bound;
    fields[4] = it->plan.head_total;
    fields[5] = it->plan.ordering;
    fields[6] = it->plan.steps;
    fields[7] = (int64_t)edge_arena_used(it);
    fields[8] = (int64_t)edge_arena_high_water(it);
    fields[9] = (int64_t)it->tail_used;
    fields[10] = (int64_t)it->packed_used;
}

int32_t edge_host_trace(const edge_interp_t *it, uint32_t k, int32_t *subgraph, int32_t *node, int32_t *op,
                        uint32_t *ticks) {
    if (!it->trace || k >= it->trace_count || k >= it->trace_capacity) return -1;
    *subgraph = it->trace[k].subgraph;
    *node = it->trace[k].node;
    *op = it->trace[k].op;
    *ticks = it->trace[k].ticks;
    return 0;
}

int32_t edge_host_kernels(int32_t k, int32_t *op, int32_t *max_version, const char **custom_code) {
    if (k < 0 || k >= edge_kernel_count) return -1;
    *op = edge_kernels[k].op;
    *max_version = edge_kernels[k].max_version;
    *custom_code = edge_kernels[k].custom_code;
    return 0;
}

int edge_host_invoke_copies(edge_interp_t *it, const edge_host_copy_t *copies, int32_t n) {
    for (int32_t k = 0; k < n; ++k) memcpy(copies[k].dst, copies[k].src, copies[k].bytes);
    return edge_invoke(it);
}
