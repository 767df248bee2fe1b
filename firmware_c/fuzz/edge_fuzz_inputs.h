/* edge_fuzz_inputs.h - what the fuzzing code does with a model once edge_init has accepted it, written once:
 * included by the libFuzzer harness (fuzz_edge.c) and by the corpus replay of the host runner
 * (edge-run-c --fuzz, host/edge_run.c), so a crasher the fuzzer finds gets the same input bytes, and the same
 * invoke / reset sequence, when it is replayed as a tests/fuzz_corpus regression case.
 *
 *   seed = edge_fuzz_seed(model, size);     FNV-1a-style hash over every 97th byte of the model file
 *   s = edge_fuzz_invoke(&interp, seed);    three rounds: fill the inputs (LCG seeded seed + round), invoke;
 *                                           edge_reset_state before the third (WHILE bounded to
 *                                           EDGE_FUZZ_WHILE_ITERATIONS); stops at the first status
 *                                           that is not EDGE_OK, which it returns; then reads the last byte
 *                                           of every output (an out-of-bounds output is an ASan report)
 *
 * Header-only (static inline), no globals; the caller owns the interpreter and the arena. */
#ifndef EDGE_FUZZ_INPUTS_H
#define EDGE_FUZZ_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "edge.h"

#define EDGE_FUZZ_ROUNDS 3

/* the harness's arena (and the replay's default): larger models stop at EDGE_ARENA_TOO_SMALL */
#ifndef EDGE_FUZZ_ARENA
#define EDGE_FUZZ_ARENA (512u * 1024u)
#endif

/* WHILE's bound (edge_set_max_while_iterations): a mutated loop limit stops at EDGE_LIMIT instead of hanging; small,
 * as nested loops multiply (tests/test_fuzz.py FUZZ_WHILE_ITERATIONS) */
#define EDGE_FUZZ_WHILE_ITERATIONS 100

static inline uint32_t edge_fuzz_seed(const uint8_t *model, size_t size) {
    uint32_t h = 2166136261u;
    size_t k;
    for (k = 0; k < size; k += 97) h = (h ^ model[k]) * 16777619u;
    return h;
}

/* every non-constant input's bytes from one LCG stream (Numerical Recipes constants), top byte of each step */
static inline void edge_fuzz_fill_inputs(edge_interp_t *it, uint32_t seed) {
    int32_t i;
    uint32_t k;
    for (i = 0; i < edge_num_inputs(it); i++) {
        edge_tensor_t *t = edge_input(it, i);
        uint8_t *p;
        if (!t || t->is_const || !t->data) continue;
        p = (uint8_t *)t->data;
        for (k = 0; k < t->bytes; k++) {
            seed = seed * 1664525u + 1013904223u;
            p[k] = (uint8_t)(seed >> 24);
        }
    }
}

static inline edge_status_t edge_fuzz_invoke(edge_interp_t *it, uint32_t seed) {
    edge_status_t s = EDGE_OK;
    int32_t round, k;
    volatile uint8_t sink = 0;
    edge_set_max_while_iterations(it, EDGE_FUZZ_WHILE_ITERATIONS);
    for (round = 0; round < EDGE_FUZZ_ROUNDS && s == EDGE_OK; round++) {
        if (round == 2) (void)edge_reset_state(it);
        edge_fuzz_fill_inputs(it, seed + (uint32_t)round);
        s = edge_invoke(it);
    }
    for (k = 0; k < edge_num_outputs(it); k++) {
        const edge_tensor_t *t = edge_output(it, k);
        if (t && t->bytes) sink ^= ((const uint8_t *)t->data)[t->bytes - 1];
    }
    (void)sink;
    return s;
}

#endif
