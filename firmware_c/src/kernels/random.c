/* RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL: the seeded stream of edge_sdk/runtime/kernels/random.py,
 * bit for bit (its docstring is the specification):
 *  - Philox4x32-10, key = RandomOptions seed (slot 0, low 32 bits, high 32 bits), counter = (block index low 32
 *    bits, high 32 bits, seed2 (slot 1) low 32 bits, high 32 bits); block b gives stream words 4b .. 4b+3.
 *  - each invoke goes on where the last one stopped (op data `drawn`: blocks used so far); edge_reset_state
 *    starts the stream again.
 *  - uniform: (word & 0x7fffff) | 0x3f800000 as a float, minus 1; normal: Box-Muller in double on each word
 *    pair (u1 raised to 1e-7), r sin t then r cos t; multinomial: per row the running sums of exp(logit - max) in
 *    double, sample s of row b takes word b * samples + s, the first class whose sum exceeds uniform * total.
 * Output shapes come from constants (input 0: INT32 / INT64 dims; MULTINOMIAL input 1: INT32 num_samples). */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_index.h"

EDGE_KERNEL(RANDOM_UNIFORM, random_uniform, 1, "INT32 INT64", "constant shape; FLOAT32 output")
EDGE_KERNEL(RANDOM_STANDARD_NORMAL, random_standard_normal, 1, "INT32 INT64", "constant shape; FLOAT32 output")
EDGE_KERNEL(MULTINOMIAL, multinomial, 1, "FLOAT32", "2-D logits; constant num_samples; INT32/INT64 output")
EDGE_KERNEL_RESET(random_uniform)
EDGE_KERNEL_RESET(random_standard_normal)
EDGE_KERNEL_RESET(multinomial)

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
#define NORMAL_MIN_U 1.0e-7
#define RANDOM_TWO_PI (2.0 * 3.14159265358979323846)

typedef struct {
    uint64_t seed, seed2;
    uint64_t drawn;        /* blocks of 4 words used by earlier invokes */
    int64_t count;         /* values per invoke (MULTINOMIAL: batch * samples) */
    int32_t batch, classes, samples;
    int32_t cdf_scratch;   /* MULTINOMIAL: [classes] doubles */
} random_data_t;

/* The 4 words of block `block` of the (seed, seed2) stream. */
static void philox_block(uint64_t seed, uint64_t seed2, uint64_t block, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32), c2 = (uint32_t)seed2, c3 = (uint32_t)(seed2 >> 32);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    int r;
    for (r = 0; r < 10; r++) {
        const uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        c1 = (uint32_t)p1;
        c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c3 = (uint32_t)p0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

static float uniform_float(uint32_t word) {
    const uint32_t bits = (word & 0x7FFFFFu) | 0x3F800000u;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f - 1.0f;
}

static edge_status_t seeded(edge_node_t *node, edge_ctx_t *ctx, random_data_t **out) {
    random_data_t *d = (random_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    if (node->options_type == EDGE_OPTS_RandomOptions) {
        d->seed = (uint64_t)edge_opt_int64(node, 0, 0);
        d->seed2 = (uint64_t)edge_opt_int64(node, 1, 0);
    }
    node->user_data = d;
    *out = d;
    return EDGE_OK;
}

/* RANDOM_UNIFORM / RANDOM_STANDARD_NORMAL: a FLOAT32 output shaped by the constant 1-D dims of input 0. */
static edge_status_t prepare_draw(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *dims, *y;
    int32_t shape[EDGE_INDEX_MAX_RANK], k, rank;
    random_data_t *d;
    edge_status_t s;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    dims = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!dims) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "shape is required");
    if (dims->type != EDGE_INT32 && dims->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "shape must be INT32 or INT64");
    if (!dims->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "shape computed at run time");
    if (dims->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "shape must be 1-D");
    if (y->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be FLOAT32");
    if ((s = edge_type_built(ctx, y->type)) != EDGE_OK) return s;
    rank = dims->dims[0];
    if (rank > EDGE_INDEX_MAX_RANK) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "shape of rank above 8");
    for (k = 0; k < rank; k++) {
        const int64_t v = dims->type == EDGE_INT32 ? ((const int32_t *)dims->data)[k] : ((const int64_t *)dims->data)[k];
        if (v < 0 || v > 0x7FFFFFFF) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "negative or too large dims");
        shape[k] = (int32_t)v;
    }
    if ((s = seeded(node, ctx, &d)) != EDGE_OK) return s;
    if ((s = edge_set_output_shape(ctx, node, 0, shape, rank)) != EDGE_OK) return s;
    d->count = edge_tensor_elements(y);
    return EDGE_OK;
}

edge_status_t edge_prepare_random_uniform(edge_node_t *node, edge_ctx_t *ctx) { return prepare_draw(node, ctx); }
edge_status_t edge_prepare_random_standard_normal(edge_node_t *node, edge_ctx_t *ctx) { return prepare_draw(node, ctx); }

void edge_eval_random_uniform(const edge_node_t *node, edge_ctx_t *ctx) {
    random_data_t *d = (random_data_t *)node->user_data;
    float *o = (float *)edge_out(ctx, node, 0)->data;
    uint32_t words[4];
    int64_t i, j;
    for (i = 0; i < d->count; i += 4) {
        philox_block(d->seed, d->seed2, d->drawn++, words);
        for (j = 0; j < 4 && i + j < d->count; j++) o[i + j] = uniform_float(words[j]);
    }
}

void edge_eval_random_standard_normal(const edge_node_t *node, edge_ctx_t *ctx) {
    random_data_t *d = (random_data_t *)node->user_data;
    float *o = (float *)edge_out(ctx, node, 0)->data;
    uint32_t words[4];
    float pairs[4];
    int64_t i, j;
    for (i = 0; i < d->count; i += 4) {
        philox_block(d->seed, d->seed2, d->drawn++, words);
        for (j = 0; j < 4; j += 2) {
            double u1 = (double)uniform_float(words[j]);
            const double t = RANDOM_TWO_PI * (double)uniform_float(words[j + 1]);
            double r;
            if (u1 < NORMAL_MIN_U) u1 = NORMAL_MIN_U;
            r = sqrt(-2.0 * log(u1));
            pairs[j] = (float)(r * sin(t));
            pairs[j + 1] = (float)(r * cos(t));
        }
        for (j = 0; j < 4 && i + j < d->count; j++) o[i + j] = pairs[j];
    }
}

edge_status_t edge_prepare_multinomial(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *logits, *num, *y;
    int32_t shape[2];
    random_data_t *d;
    edge_status_t s;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    logits = edge_in(ctx, node, 0);
    num = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!logits || !num) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "logits and num_samples are required");
    if (logits->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "logits must be FLOAT32");
    if ((s = edge_type_built(ctx, logits->type)) != EDGE_OK) return s;
    if (logits->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "logits must be 2-D [batch, classes]");
    if (logits->dims[1] <= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "logits have no classes");
    if (num->type != EDGE_INT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "num_samples must be INT32");
    if (!num->is_const) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "num_samples computed at run time");
    if (edge_tensor_elements(num) != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "num_samples must hold one value");
    if (y->type != EDGE_INT32 && y->type != EDGE_INT64)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "output must be INT32 or INT64");
    if ((s = seeded(node, ctx, &d)) != EDGE_OK) return s;
    d->batch = logits->dims[0];
    d->classes = logits->dims[1];
    d->samples = ((const int32_t *)num->data)[0];
    if (d->samples < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "num_samples is negative");
    d->count = (int64_t)d->batch * d->samples;
    if ((s = edge_request_scratch(ctx, node, (size_t)d->classes * sizeof(double), &d->cdf_scratch)) != EDGE_OK)
        return s;
    shape[0] = d->batch;
    shape[1] = d->samples;
    return edge_set_output_shape(ctx, node, 0, shape, 2);
}

void edge_eval_multinomial(const edge_node_t *node, edge_ctx_t *ctx) {
    random_data_t *d = (random_data_t *)node->user_data;
    const float *x = (const float *)edge_in(ctx, node, 0)->data;
    edge_tensor_t *y = edge_out(ctx, node, 0);
    double *cdf = (double *)edge_scratch(ctx, node, d->cdf_scratch);
    uint32_t words[4];
    int64_t at = 0;  /* the word of this invoke's stream: b * samples + s */
    int32_t b, s, j;
    const uint64_t first = d->drawn;
    for (b = 0; b < d->batch; b++) {
        const float *row = x + (int64_t)b * d->classes;
        double top = row[0], total = 0.0;
        for (j = 1; j < d->classes; j++)
            if (row[j] > top) top = row[j];
        for (j = 0; j < d->classes; j++) {
            total += exp((double)row[j] - top);
            cdf[j] = total;
        }
        for (s = 0; s < d->samples; s++, at++) {
            double target;
            int32_t pick = 0;
            if ((at & 3) == 0) philox_block(d->seed, d->seed2, first + (uint64_t)(at >> 2), words);
            target = (double)uniform_float(words[at & 3]) * total;
            while (pick < d->classes - 1 && !(cdf[pick] > target)) pick++;
            if (y->type == EDGE_INT32) ((int32_t *)y->data)[at] = pick;
            else ((int64_t *)y->data)[at] = pick;
        }
    }
    d->drawn = first + (uint64_t)((d->count + 3) / 4);
}

void edge_reset_random_uniform(const edge_node_t *node, edge_ctx_t *ctx) {
    (void)ctx;
    ((random_data_t *)node->user_data)->drawn = 0;
}

void edge_reset_random_standard_normal(const edge_node_t *node, edge_ctx_t *ctx) {
    (void)ctx;
    ((random_data_t *)node->user_data)->drawn = 0;
}

void edge_reset_multinomial(const edge_node_t *node, edge_ctx_t *ctx) {
    (void)ctx;
    ((random_data_t *)node->user_data)->drawn = 0;
}
