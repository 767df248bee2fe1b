/* image_main.c - the main() of the runtime's minimal firmware image (make image / make size / the benchmarks).
 *
 * Built three ways by firmware_c/Makefile:
 *   - with models linked in (MODEL=x.tflite and/or MODELS="a.tflite b.tflite": model_data.c defines
 *     edge_image_models[], edge_image_model_lens[] and edge_image_model_count, in that order): it runs each model
 *     in turn and reports over the board's UART, line by line:
 *         model M                      (only in an image of several models) model M's report follows
 *         status S                     edge_init's status (a number: edge_status.def order)
 *         arena USED                   edge_arena_used()
 *         op NODE CODE TICKS           per op of the second invoke (the board timer; SysTick under QEMU)
 *         out K HASH                   FNV-1a of output K's bytes
 *         done                         after the last model
 *     then board_exit(the first failing model's status, else 0). A model that fails (its init or an invoke: a
 *     second "status S" line) reports no more lines; the next model still runs. Each model starts from the same
 *     state as in an image of its own (a zeroed arena, the input sequence from its seed): its lines are the ones
 *     a one-model image prints (one boot serves several models: tests/oprunner.py m4_image_reports).
 *     Inputs are filled with a fixed pseudo-random byte sequence.
 *   - without a model (the size images): the same code, but the model pointer is read from a volatile
 *     variable, so everything edge_init and edge_invoke can reach for the linked op table stays in the image.
 *   - EDGE_IMAGE_BASELINE: the same board start-up and reporting without the runtime; `make size`
 *     subtracts this image to get the runtime's own .text/.data/.bss.
 * EDGE_IMAGE_WAIT_START: wait for one byte from the host before starting (QEMU's TCP serial drops output
 * sent before the host connects; not needed with -serial stdio).
 * The inputs, the output hash and the UART lines are tools/edge_image_report.h's, the same code `edge export`'s
 * example firmware includes (tests/oprunner.py image_main_inputs / image_main_hash: their host-side twin).
 */
#include <stddef.h>
#include <stdint.h>

#include "board.h"

#ifndef EDGE_IMAGE_ARENA
#define EDGE_IMAGE_ARENA (256 * 1024)
#endif
#ifndef EDGE_IMAGE_TRACE
#define EDGE_IMAGE_TRACE 64
#endif

#ifdef EDGE_IMAGE_BASELINE

#include "edge_image_report.h"

#define line edge_report_line

int main(void) {
    board_init();
#ifdef EDGE_IMAGE_WAIT_START
    (void)board_uart_getc();
#endif
    board_timer_restart();
    line("status", board_timer_now());
    board_print("done\r\n");
    board_exit(0);
}

#else

#include "edge.h"
#include "edge_image_report.h"

#define line edge_report_line

#ifdef EDGE_IMAGE_HAS_MODEL
extern const unsigned char *const edge_image_models[];
extern const unsigned int edge_image_model_lens[];
extern const unsigned int edge_image_model_count;
#define MODEL_COUNT ((uint32_t)edge_image_model_count)
#define MODEL_PTR(m) ((const void *)edge_image_models[m])
#define MODEL_LEN(m) ((size_t)edge_image_model_lens[m])
#else
/* No model: a pointer the compiler cannot see through keeps every reachable function in the image. */
static const void *volatile model_ptr;
static volatile size_t model_len;
#define MODEL_COUNT 1u
#define MODEL_PTR(m) ((void)(m), model_ptr)
#define MODEL_LEN(m) ((void)(m), model_len)
#endif

static edge_interp_t interp;
static uint8_t arena[EDGE_IMAGE_ARENA] BOARD_LARGE_BSS;
static edge_trace_entry_t trace[EDGE_IMAGE_TRACE];

/* EDGE_IMAGE_INIT_FLAGS (IMAGE_DEFS=-DEDGE_IMAGE_INIT_FLAGS=2): edge_init_ex's flags, e.g. the least-RAM
 * request's kernels (EDGE_INIT_MEMORY_MIN) on the board */
#ifndef EDGE_IMAGE_INIT_FLAGS
#define EDGE_IMAGE_INIT_FLAGS 0u
#endif

/* One model's report (the lines above, after "model M"): its status, EDGE_OK when it ran. */
static edge_status_t run_model(const void *model, size_t len) {
    edge_timer_t timer;
    edge_status_t s;
    uint32_t k, seed = EDGE_REPORT_SEED;
    int32_t round;

    s = edge_init_ex(&interp, model, len, arena, sizeof arena, EDGE_IMAGE_INIT_FLAGS);
    line("status", (uint32_t)s);
    if (s != EDGE_OK) return s;
    line("arena", (uint32_t)edge_arena_used(&interp));
    timer.now = board_timer_now_cb;
    timer.units = board_timer_units();
    timer.user = 0;
    for (round = 0; round < 2; round++) { /* the second invoke is the one reported (warm) */
        edge_report_fill_inputs(&interp, &seed); /* the second round's inputs continue the sequence */
        if (round == 1) edge_set_timer(&interp, &timer, trace, EDGE_IMAGE_TRACE);
        s = edge_invoke(&interp);
        if (s != EDGE_OK) {
            line("status", (uint32_t)s);
            return s;
        }
    }
    for (k = 0; k < interp.trace_count && k < EDGE_IMAGE_TRACE; k++) {
        board_print("op ");
        board_print_u32(trace[k].node);
        board_print(" ");
        board_print_u32(trace[k].op);
        board_print(" ");
        board_print_u32(trace[k].ticks);
        board_print("\r\n");
    }
    edge_report_outputs(&interp);
    return EDGE_OK;
}

int main(void) {
    edge_status_t s, first = EDGE_OK;
    uint32_t m;
#ifdef EDGE_IMAGE_HAS_MODEL
    uint32_t k;
#endif

    board_init();
#ifdef EDGE_IMAGE_WAIT_START
    (void)board_uart_getc();
#endif
    board_timer_restart();
    for (m = 0; m < MODEL_COUNT; m++) {
#ifdef EDGE_IMAGE_HAS_MODEL
        if (MODEL_COUNT > 1u) line("model", m);
        /* the arena as a one-model image starts (.bss): no model sees what the one before left */
        for (k = 0; k < (uint32_t)sizeof arena; k++) arena[k] = 0;
#endif
        s = run_model(MODEL_PTR(m), MODEL_LEN(m));
        if (s != EDGE_OK && first == EDGE_OK) first = s;
    }
    board_print("done\r\n");
    board_exit((int)first);
}

#endif
