/* edge_image_report.h - the board-side report of a one-model firmware image, shared by tools/image_main.c
 * (make image / the benchmarks) and the example firmware `edge export` writes (example/main.c, which gets a copy
 * of this file): one source for the inputs both fill, the output hash and the UART lines.
 * tests/oprunner.py (image_main_inputs, image_main_hash) is the one host-side twin.
 *
 *   edge_report_line(KEY, V)              prints "KEY V\r\n" on the board's UART (V in decimal)
 *   edge_report_fill_inputs(INTERP, &SEED) fills every input's bytes, input 0 first: byte k is the top byte of
 *                                         the LCG step SEED = SEED * 1664525 + 1013904223 (the first from
 *                                         EDGE_REPORT_SEED); SEED carries on across calls
 *   edge_report_fnv1a(P, N)               FNV-1a (32 bit) of N bytes
 *   edge_report_outputs(INTERP)           prints "out K HASH" per output K (FNV-1a of its bytes)
 *
 * Include it after board.h (and after edge.h for the functions taking an interpreter; without edge.h only
 * edge_report_line is defined). Functions are static inline: each image compiles the ones it calls. */
#ifndef EDGE_IMAGE_REPORT_H
#define EDGE_IMAGE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#define EDGE_REPORT_SEED 12345u

static inline void edge_report_line(const char *key, uint32_t v) {
    board_print(key);
    board_print(" ");
    board_print_u32(v);
    board_print("\r\n");
}

static inline uint32_t edge_report_fnv1a(const void *data, size_t n) {
    const uint8_t *p = (const uint8_t *)data;
    uint32_t h = 2166136261u;
    size_t k;
    for (k = 0; k < n; k++) h = (h ^ p[k]) * 16777619u;
    return h;
}

#ifdef EDGE_H
static inline void edge_report_fill_inputs(edge_interp_t *interp, uint32_t *seed) {
    int32_t i;
    uint32_t k;
    for (i = 0; i < edge_num_inputs(interp); i++) {
        edge_tensor_t *t = edge_input(interp, i);
        uint8_t *p = (uint8_t *)t->data;
        for (k = 0; k < t->bytes; k++) {
            *seed = *seed * 1664525u + 1013904223u;
            p[k] = (uint8_t)(*seed >> 24);
        }
    }
}

static inline void edge_report_outputs(edge_interp_t *interp) {
    int32_t i;
    for (i = 0; i < edge_num_outputs(interp); i++) {
        const edge_tensor_t *t = edge_output(interp, i);
        board_print("out ");
        board_print_u32((uint32_t)i);
        board_print(" ");
        board_print_u32(edge_report_fnv1a(t->data, t->bytes));
        board_print("\r\n");
    }
}
#endif

#endif
