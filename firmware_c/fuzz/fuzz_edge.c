/* fuzz_edge.c - libFuzzer harness for the C runtime: the model loader (verify), the planner, every kernel's
 * prepare and edge_invoke, on untrusted bytes, with a fixed-size arena.
 *
 *     make -C firmware_c fuzz          (clang -fsanitize=fuzzer,address,undefined)
 *     build/fuzz/edge-fuzz CORPUS_DIR SEED_DIR -seed=1 -runs=100000
 *
 * Each input is one .tflite. It is copied into an exactly sized, 16-aligned heap block (so a read one byte
 * past the model is an ASan report), loaded plan-only (loader + planner alone), then fully (kernels'
 * prepare); when that succeeds the inputs are filled from a hash of the model and edge_invoke runs twice
 * (state carried between invokes), then edge_reset_state and a third invoke.
 * EDGE_FUZZ_ARENA (default 512 KB) bounds the work per input: larger models stop at EDGE_ARENA_TOO_SMALL.
 */
#define _POSIX_C_SOURCE 200112L
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edge.h"

#ifndef EDGE_FUZZ_ARENA
#define EDGE_FUZZ_ARENA (512u * 1024u)
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t arena[EDGE_FUZZ_ARENA] __attribute__((aligned(16)));
static edge_interp_t interp;

static void fill_inputs(edge_interp_t *it, uint32_t seed) {
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *model;
    void *block = NULL;
    uint32_t h = 2166136261u;
    size_t k;
    char msg[256];
    edge_status_t s;

    /* exactly size bytes (ASan tracks the requested size, so a read one byte past the model is reported),
     * 16-aligned as the runtime expects of a model */
    if (posix_memalign(&block, 16, size ? size : 1) != 0) return 0;
    model = (uint8_t *)block;
    memcpy(model, data, size);
    for (k = 0; k < size; k += 97) h = (h ^ data[k]) * 16777619u;

    s = edge_init_ex(&interp, model, size, arena, sizeof arena, EDGE_INIT_PLAN_ONLY);
    (void)edge_error_message(&interp, msg, sizeof msg);
    s = edge_init(&interp, model, size, arena, sizeof arena);
    (void)edge_error_message(&interp, msg, sizeof msg);
    if (s == EDGE_OK) {
        int round;
        for (round = 0; round < 3 && s == EDGE_OK; round++) {
            if (round == 2) edge_reset_state(&interp);
            fill_inputs(&interp, h + (uint32_t)round);
            s = edge_invoke(&interp);
        }
        for (k = 0; k < (size_t)edge_num_outputs(&interp); k++) {
            const edge_tensor_t *t = edge_output(&interp, (int32_t)k);
            if (t && t->bytes) h ^= ((const uint8_t *)t->data)[t->bytes - 1]; /* touch the last byte */
        }
    }
    free(model);
    return (int)(h & 0); /* always 0 */
}
