/* image_main.c - the main() of the runtime's minimal firmware image (make image / make size / the benchmarks).
 *
 * Built three ways by firmware_c/Makefile:
 *   - with a model linked in (MODEL=x.tflite: model_data.c defines edge_image_model[]): it runs the model and
 *     reports over the board's UART, line by line:
 *         status S                     edge_init's status (a number: edge_status.def order)
 *         arena USED                   edge_arena_used()
 *         op NODE CODE TICKS           per op of the second invoke (the board timer; SysTick under QEMU)
 *         out K HASH                   FNV-1a of output K's bytes
 *         done
 *     then board_exit(status). Inputs are filled with a fixed pseudo-random byte sequence.
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
extern const unsigned char edge_image_model[];
extern const unsigned int edge_image_model_len;
#define MODEL_PTR ((const void *)edge_image_model)
#define MODEL_LEN ((size_t)edge_image_model_len)
#else
/* No model: a pointer the compiler cannot see through keeps every reachable function in the image. */
static const void *volatile model_ptr;
static volatile size_t model_len;
#define MODEL_PTR (model_ptr)
#define MODEL_LEN (model_len)
#endif

static edge_interp_t interp;
static uint8_t arena[EDGE_IMAGE_ARENA] BOARD_LARGE_BSS;
static edge_trace_entry_t trace[EDGE_IMAGE_TRACE];

int main(void) {
    edge_timer_t timer;
    edge_status_t s;
    uint32_t k, seed = EDGE_REPORT_SEED;
    int32_t round;

    board_init();
#ifdef EDGE_IMAGE_WAIT_START
    (void)board_uart_getc();
#endif
    board_timer_restart();
    /* EDGE_IMAGE_INIT_FLAGS (IMAGE_DEFS=-DEDGE_IMAGE_INIT_FLAGS=2): edge_init_ex's flags, e.g. the least-RAM
     * request's kernels (EDGE_INIT_MEMORY_MIN) on the board */
#ifndef EDGE_IMAGE_INIT_FLAGS
#define EDGE_IMAGE_INIT_FLAGS 0u
#endif
    s = edge_init_ex(&interp, MODEL_PTR, MODEL_LEN, arena, sizeof arena, EDGE_IMAGE_INIT_FLAGS);
    line("status", (uint32_t)s);
    if (s != EDGE_OK) {
        board_print("done\r\n");
        board_exit((int)s);
    }
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
            board_print("done\r\n");
            board_exit((int)s);
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
    board_print("done\r\n");
    board_exit(0);
}

#endif
