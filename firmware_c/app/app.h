/* app.h - the device firmware of edge-sdk's serial protocol (docs/serial-protocol.md): shared declarations.
 *
 * The build (edge_sdk/tools/flash.py, or firmware_c/app/Makefile by hand) generates two files per model:
 *   app_config.h   APP_ARENA_BYTES (sized from the model's arena plan), APP_INPUT_BYTES (all inputs' bytes),
 *                  APP_TRACE_CAP (per-op trace records), APP_SG0_OPS (operators of subgraph 0)
 *   model_data.c   const uint8_t app_model[] (16-byte aligned, in flash) and const uint32_t app_model_len
 */
#ifndef EDGE_APP_H
#define EDGE_APP_H

#include <stddef.h>
#include <stdint.h>

#include "app_config.h"

#ifndef APP_MAX_FRAME
#define APP_MAX_FRAME 2048 /* largest decoded frame (header + payload + CRC) sent or accepted */
#endif
#ifndef APP_RUN_TICKS
#define APP_RUN_TICKS 256 /* per-run tick totals kept for the trace (the last ones of an INVOKE) */
#endif
#ifndef APP_EMULATED
#define APP_EMULATED 0 /* 1 when the board is an emulator (QEMU): capability EMULATED */
#endif
#ifndef APP_VERSION
#define APP_VERSION "edge-c 0.1.0"
#endif

#ifndef APP_INIT_FLAGS
#define APP_INIT_FLAGS 0u /* edge_init_ex flags: EDGE_INIT_MEMORY_MIN for the least-RAM plan */
#endif
#ifndef APP_GEN_STATE_BYTES
#define APP_GEN_STATE_BYTES 0 /* KV-cache store of the GENERATE command (0: no GENERATE) */
#endif

extern const uint8_t app_model[];
extern const uint32_t app_model_len;

void app_sha256(const uint8_t *data, uint32_t len, uint8_t out[32]);

/* GENERATE (generate.c): the reply payload's length, or -1 with the STATUS in *st. */
typedef struct { int code; int32_t detail; const char *msg; } app_status_t;
struct edge_interp;
int32_t app_generate(struct edge_interp *interp, const uint8_t *in, uint32_t len, uint8_t *out, uint32_t out_max,
                     app_status_t *st);

#endif
