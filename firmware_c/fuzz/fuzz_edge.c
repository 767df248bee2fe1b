/* fuzz_edge.c - libFuzzer harness for the C runtime: the model loader (verify), the planner, every kernel's
 * prepare and edge_invoke, on untrusted bytes, with a fixed-size arena.
 *
 *     make -C firmware_c fuzz          (clang -fsanitize=fuzzer,address,undefined)
 *     build/fuzz/edge-fuzz CORPUS_DIR SEED_DIR -seed=1 -runs=100000
 *
 * Each input is one .tflite. It is copied into an exactly sized, 16-aligned heap block (so a read one byte
 * past the model is an ASan report), loaded plan-only (loader + planner alone), then fully (kernels'
 * prepare); when that succeeds the inputs are filled from a hash of the model and edge_invoke runs twice
 * (state carried between invokes), then edge_reset_state and a third invoke: edge_fuzz_invoke of
 * edge_fuzz_inputs.h, which the corpus replay (edge-run-c --fuzz) runs too, so a finding replays as found.
 * EDGE_FUZZ_ARENA (default 512 KB) bounds the work per input: larger models stop at EDGE_ARENA_TOO_SMALL.
 */
#define _POSIX_C_SOURCE 200112L
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edge.h"
#include "edge_fuzz_inputs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t arena[EDGE_FUZZ_ARENA] __attribute__((aligned(16)));
static edge_interp_t interp;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *model;
    void *block = NULL;
    char msg[256];
    uint32_t seed;
    edge_status_t s;

    /* exactly size bytes (ASan tracks the requested size, so a read one byte past the model is reported),
     * 16-aligned as the runtime expects of a model */
    if (posix_memalign(&block, 16, size ? size : 1) != 0) return 0;
    model = (uint8_t *)block;
    memcpy(model, data, size);
    seed = edge_fuzz_seed(model, size); /* of the file's bytes, before anything reads them */

    s = edge_init_ex(&interp, model, size, arena, sizeof arena, EDGE_INIT_PLAN_ONLY);
    (void)edge_error_message(&interp, msg, sizeof msg);
    s = edge_init(&interp, model, size, arena, sizeof arena);
    (void)edge_error_message(&interp, msg, sizeof msg);
    if (s == EDGE_OK) (void)edge_fuzz_invoke(&interp, seed);
    free(model);
    return 0;
}
