/* edge_host.h - host-only helpers for bindings and the runner (see edge_host.c). */
#ifndef EDGE_HOST_H
#define EDGE_HOST_H
#include "edge.h"

size_t edge_host_interp_size(void);
const edge_timer_t *edge_host_timer(void);
/* kind 0: input i, 1: output i, 2 + s: tensor i of subgraph s. Returns -1 when there is no such tensor. */
int32_t edge_host_tensor(edge_interp_t *it, int32_t kind, int32_t i, void **data, uint32_t *bytes, int32_t *type,
                         int32_t *rank, int32_t *dims, int32_t max_rank, float *scale, int32_t *zero_point);
/* fields: status, subgraph, node, tensor, op_code, op_version, offset, required, given, required_exact */
void edge_host_error(const edge_interp_t *it, int64_t *fields, char *msg, size_t len);
/* fields: n_tensors, n_scratch, tensor_total, lower_bound, head_total, ordering, steps, used, high_water, tail,
 * packed (of tail: the fast paths' packed weight copies) */
void edge_host_plan_info(const edge_interp_t *it, int64_t *fields);
int32_t edge_host_trace(const edge_interp_t *it, uint32_t k, int32_t *subgraph, int32_t *node, int32_t *op,
                        uint32_t *ticks);
/* The kernels this library has: row k (op code, highest version, custom code or NULL); -1 past the end. */
int32_t edge_host_kernels(int32_t k, int32_t *op, int32_t *max_version, const char **custom_code);

/* One copy done before an invoke: the bindings keep an input's value outside the arena when the plan reuses its
 * bytes during invoke, and copy it back in first. */
typedef struct edge_host_copy {
    void *dst;
    const void *src;
    size_t bytes;
} edge_host_copy_t;

/* The n copies, then edge_invoke: one foreign call per invoke from Python. */
int edge_host_invoke_copies(edge_interp_t *it, const edge_host_copy_t *copies, int32_t n);
#endif
