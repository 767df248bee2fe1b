/* main.c - edge-sdk's device firmware: the C runtime serving docs/serial-protocol.md over the board UART.
 *
 * Start-up: board_init, hash the model (SHA-256, reported in HELLO), edge_init into a static arena sized from
 * the model's plan, then wait: nothing is sent until the host's first byte arrives (QEMU's TCP serial drops
 * what is sent before a client connects). Then the timer is restarted (deterministic ticks under QEMU
 * -icount), a LOG line describes the device, and the loop serves one command at a time:
 *
 *     bytes -> frames at 0x00 -> COBS decode (in place) -> length + CRC-32 check (else NAK)
 *           -> duplicate of the last command? resend the remembered reply : execute, reply, remember
 *
 * No malloc: every buffer is static (sizes in app.h / the generated app_config.h). The model is a const
 * array in flash (model_data.c), read in place by the runtime.
 */
#include <string.h>

#include "app.h"
#include "board.h"
#include "edge.h"

#define PROTO_VERSION 1u
#define OVERHEAD 12u

enum { T_HELLO = 1, T_INFO, T_SET_INPUT, T_INVOKE, T_GET_OUTPUT, T_GET_TRACE, T_RESET_STATE, T_LOAD_MODEL, T_GENERATE };
enum { T_REPLY = 0x80, T_NAK = 0x7C, T_LOG = 0x7D, T_ACK = 0x7E, T_STATUS = 0x7F };
enum {
    S_UNKNOWN_COMMAND = 1, S_BAD_VERSION, S_BAD_PAYLOAD, S_BAD_INDEX, S_BAD_RANGE, S_NO_MODEL, S_MODEL_ERROR,
    S_INVOKE_FAILED, S_TOO_LARGE, S_OUT_OF_ORDER, S_UNSUPPORTED, S_INTERNAL
};
enum {
    CAP_TRACE = 1u << 0, CAP_MULTI_RUN = 1u << 1, CAP_RESET_STATE = 1u << 2, CAP_LOAD_MODEL = 1u << 3,
    CAP_LOG = 1u << 4, CAP_EMULATED = 1u << 5, CAP_ACK = 1u << 6, CAP_GENERATE = 1u << 7, CAP_RESTART = 1u << 8
};
enum { RESET_RESTART = 1 }; /* RESET_STATE's one-byte payload: the runtime as after boot (init again) */
enum { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARNING = 2, LOG_ERROR = 3 };

#if APP_MAX_FRAME < 256 || APP_MAX_FRAME > 65535
#error "APP_MAX_FRAME must be in [256, 65535]"
#endif
#define MAX_PAYLOAD (APP_MAX_FRAME - OVERHEAD)
#define RX_LIMIT (APP_MAX_FRAME + APP_MAX_FRAME / 254 + 2)
#define MAX_RUNS 65535u

/* ------------------------------------------------------------------------------------------ state */

static edge_interp_t interp;
static uint8_t arena[APP_ARENA_BYTES] BOARD_LARGE_BSS;
static edge_trace_entry_t trace[APP_TRACE_CAP];
static edge_timer_t timer;
static uint8_t inputs[APP_INPUT_BYTES > 0 ? APP_INPUT_BYTES : 1]; /* persistent input bytes (zeroed bss) */
static uint32_t run_ticks[APP_RUN_TICKS];                          /* ring: run r at r % APP_RUN_TICKS */
static uint32_t last_runs;                                         /* runs of the last INVOKE (0: none) */
static uint8_t model_ok;
static uint8_t model_sha[32];
static char init_error[120];

static uint8_t rx[RX_LIMIT];
static uint8_t reply[APP_MAX_FRAME]; /* the last reply frame (decoded), resent for duplicates */
static uint32_t reply_len;
static uint8_t have_last, last_type;
static uint16_t last_seq, log_seq;

static int status_code;
static int32_t status_detail;
static const char *status_msg;

/* ------------------------------------------------------------------------------------------ helpers */

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static uint32_t get16(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8); }
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint32_t crc32(const uint8_t *p, uint32_t n)
{
    uint32_t crc = 0xFFFFFFFFu, i;
    int k;
    for (i = 0; i < n; ++i) {
        crc ^= p[i];
        for (k = 0; k < 8; ++k) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
    }
    return crc ^ 0xFFFFFFFFu;
}

/* COBS-encode frame[0..n) straight to the UART, then the 0x00 delimiter. */
static void send_cobs(const uint8_t *p, uint32_t n)
{
    uint32_t i = 0, j;
    for (;;) {
        j = i;
        while (j < n && p[j] != 0 && j - i < 254u) {
            ++j;
        }
        if (j - i == 254u) { /* a full block: code 0xFF, no implied zero */
            board_uart_putc(0xFFu);
            board_uart_write(p + i, 254u);
            i = j;
            if (i == n) {
                break;
            }
            continue;
        }
        board_uart_putc((uint8_t)(j - i + 1u));
        board_uart_write(p + i, j - i);
        if (j >= n) {
            break;
        }
        i = j + 1u; /* the zero this block's code implies */
    }
    board_uart_putc(0);
}

/* Decode COBS in place; -1 when a code points past the end. */
static int cobs_decode(uint8_t *buf, uint32_t n, uint32_t *out_len)
{
    uint32_t i = 0, o = 0, k, end, code;
    while (i < n) {
        code = buf[i];
        if (code == 0u) {
            return -1;
        }
        end = i + code;
        if (end > n) {
            return -1;
        }
        for (k = i + 1u; k < end; ++k) {
            buf[o++] = buf[k];
        }
        i = end;
        if (code != 0xFFu && i < n) {
            buf[o++] = 0;
        }
    }
    *out_len = o;
    return 0;
}

/* Fill the header and CRC of frame (payload already at frame + 8) and send it; returns the frame's size. */
static uint32_t finish_frame(uint8_t *frame, uint32_t type, uint32_t seq, uint32_t payload_len)
{
    frame[0] = (uint8_t)PROTO_VERSION;
    frame[1] = (uint8_t)type;
    frame[2] = 0;
    frame[3] = 0;
    put16(frame + 4, seq);
    put16(frame + 6, payload_len);
    put32(frame + 8 + payload_len, crc32(frame, 8u + payload_len));
    send_cobs(frame, OVERHEAD + payload_len);
    return OVERHEAD + payload_len;
}

static void send_empty(uint32_t type, uint32_t seq)
{
    uint8_t f[OVERHEAD];
    (void)finish_frame(f, type, seq, 0);
}

static void send_log(int level, const char *a, const char *b)
{
    uint8_t f[OVERHEAD + 1 + 200];
    uint32_t n = 1, k;
    f[8] = (uint8_t)level;
    for (k = 0; a && a[k] && n < 200u; ++k) f[8 + n++] = (uint8_t)a[k];
    for (k = 0; b && b[k] && n < 200u; ++k) f[8 + n++] = (uint8_t)b[k];
    log_seq = (uint16_t)(log_seq + 1u);
    (void)finish_frame(f, T_LOG, log_seq, n);
}

/* Decimal of v into s (returns the end). */
static char *fmt_u32(char *s, uint32_t v)
{
    char tmp[10];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v);
    while (n) *s++ = tmp[--n];
    *s = 0;
    return s;
}

static char *cat(char *s, const char *t)
{
    while (*t) *s++ = *t++;
    *s = 0;
    return s;
}

static int32_t fail(int code, int32_t detail, const char *msg)
{
    status_code = code;
    status_detail = detail;
    status_msg = msg;
    return -1;
}

static uint32_t input_base(int32_t index)
{
    uint32_t base = 0;
    int32_t i;
    for (i = 0; i < index; ++i) base += edge_input(&interp, i)->bytes;
    return base;
}

/* ------------------------------------------------------------------------------------------ commands */

static uint32_t put_text(uint8_t *p, const char *s, uint32_t limit)
{
    uint32_t n = 0;
    while (s[n] && n < limit) {
        p[1 + n] = (uint8_t)s[n];
        ++n;
    }
    p[0] = (uint8_t)n;
    return 1u + n;
}

static int32_t do_hello(uint8_t *out)
{
    uint32_t caps = CAP_TRACE | CAP_MULTI_RUN | CAP_RESET_STATE | CAP_LOG | CAP_ACK | CAP_RESTART;
    uint32_t n = 52;
    int src = board_timer_source();
    if (APP_EMULATED) caps |= CAP_EMULATED;
    if (APP_GEN_STATE_BYTES > 0) caps |= CAP_GENERATE;
    out[0] = (uint8_t)PROTO_VERSION;
    out[1] = (uint8_t)(src == BOARD_TIMER_DWT ? 1 : src == BOARD_TIMER_SYSTICK ? 2 : 0);
    put16(out + 2, APP_MAX_FRAME);
    put32(out + 4, caps);
    put32(out + 8, (uint32_t)sizeof arena);
    put32(out + 12, board_cpu_hz());
    put32(out + 16, model_ok ? app_model_len : 0u);
    memset(out + 20, 0, 32);
    if (model_ok) memcpy(out + 20, model_sha, 32);
    n += put_text(out + n, APP_VERSION, 32);
    n += put_text(out + n, src == BOARD_TIMER_DWT ? "cycles" : src == BOARD_TIMER_SYSTICK ? "systick" : "", 16);
    n += put_text(out + n, board_name(), 32);
    return (int32_t)n;
}

static uint32_t tensor_record(uint8_t *p, const edge_tensor_t *t)
{
    uint32_t n = 8, d;
    p[0] = t->type;
    p[1] = (uint8_t)t->rank;
    p[2] = t->quantized ? 1u : 0u;
    p[3] = 0;
    put32(p + 4, t->bytes);
    for (d = 0; d < (uint32_t)t->rank; ++d, n += 4) put32(p + n, (uint32_t)t->dims[d]);
    if (t->quantized) {
        uint32_t bits;
        memcpy(&bits, &t->scale, 4);
        put32(p + n, bits);
        put32(p + n + 4, (uint32_t)t->zero_point);
        n += 8;
    }
    return n;
}

static int32_t do_info(uint8_t *out, uint32_t len)
{
    int32_t i, n_in, n_out;
    uint32_t n = 8;
    if (len != 0) return fail(S_BAD_PAYLOAD, (int32_t)len, "INFO takes no payload");
    if (!model_ok) return fail(S_NO_MODEL, 0, init_error);
    n_in = edge_num_inputs(&interp);
    n_out = edge_num_outputs(&interp);
    out[0] = (uint8_t)n_in;
    out[1] = (uint8_t)n_out;
    put16(out + 2, APP_SG0_OPS);
    put32(out + 4, (uint32_t)edge_arena_used(&interp));
    for (i = 0; i < n_in + n_out; ++i) {
        const edge_tensor_t *t = i < n_in ? edge_input(&interp, i) : edge_output(&interp, i - n_in);
        if (t->rank > 8) return fail(S_TOO_LARGE, 8, "a tensor of rank above 8");
        if (n + 8u + 4u * (uint32_t)t->rank + 8u > MAX_PAYLOAD) {
            return fail(S_TOO_LARGE, APP_MAX_FRAME, "INFO reply exceeds max_frame");
        }
        n += tensor_record(out + n, t);
    }
    return (int32_t)n;
}

static int32_t do_set_input(const uint8_t *in, uint32_t len)
{
    uint32_t index, offset, n;
    const edge_tensor_t *t;
    if (len < 8) return fail(S_BAD_PAYLOAD, (int32_t)len, "SET_INPUT needs at least 8 bytes");
    if (!model_ok) return fail(S_NO_MODEL, 0, init_error);
    index = in[0];
    offset = get32(in + 4);
    n = len - 8u;
    if ((int32_t)index >= edge_num_inputs(&interp)) return fail(S_BAD_INDEX, (int32_t)index, "no such input");
    t = edge_input(&interp, (int32_t)index);
    if (offset > t->bytes || n > t->bytes - offset) return fail(S_BAD_RANGE, (int32_t)offset, "past the input's end");
    memcpy(inputs + input_base((int32_t)index) + offset, in + 8, n);
    return 0;
}

static int32_t do_invoke(uint8_t *out, const uint8_t *in, uint32_t len)
{
    uint32_t runs, r, t0, dt, lo = 0xFFFFFFFFu, hi = 0, base;
    int32_t i, n_in;
    edge_status_t s;
    if (len != 4) return fail(S_BAD_PAYLOAD, (int32_t)len, "INVOKE takes a u32");
    if (!model_ok) return fail(S_NO_MODEL, 0, init_error);
    runs = get32(in);
    if (runs == 0) return fail(S_BAD_PAYLOAD, 0, "runs must be at least 1");
    if (runs > MAX_RUNS) return fail(S_TOO_LARGE, (int32_t)MAX_RUNS, "at most 65535 runs per INVOKE");
    n_in = edge_num_inputs(&interp);
    last_runs = 0;
    dt = 0;
    for (r = 0; r < runs; ++r) {
        for (i = 0, base = 0; i < n_in; ++i) { /* the runtime may reuse input bytes: write them every run */
            edge_tensor_t *t = edge_input(&interp, i);
            memcpy(t->data, inputs + base, t->bytes);
            base += t->bytes;
        }
        t0 = board_timer_now();
        s = edge_invoke(&interp);
        dt = board_timer_now() - t0;
        if (s != EDGE_OK) return fail(S_INVOKE_FAILED, (int32_t)s, edge_status_str(s));
        run_ticks[r % APP_RUN_TICKS] = dt;
        if (dt < lo) lo = dt;
        if (dt > hi) hi = dt;
    }
    last_runs = runs;
    put32(out, runs);
    put32(out + 4, dt);
    put32(out + 8, lo);
    put32(out + 12, hi);
    return 16;
}

static int32_t do_get_output(uint8_t *out, const uint8_t *in, uint32_t len)
{
    uint32_t index, offset, max_len, n;
    const edge_tensor_t *t;
    if (len != 12) return fail(S_BAD_PAYLOAD, (int32_t)len, "GET_OUTPUT takes 12 bytes");
    if (!model_ok) return fail(S_NO_MODEL, 0, init_error);
    index = in[0];
    offset = get32(in + 4);
    max_len = get16(in + 8);
    if ((int32_t)index >= edge_num_outputs(&interp)) return fail(S_BAD_INDEX, (int32_t)index, "no such output");
    t = edge_output(&interp, (int32_t)index);
    if (offset > t->bytes) return fail(S_BAD_RANGE, (int32_t)offset, "past the output's end");
    n = t->bytes - offset;
    if (n > max_len) n = max_len;
    if (n > APP_MAX_FRAME - 24u) n = APP_MAX_FRAME - 24u;
    out[0] = (uint8_t)index;
    out[1] = out[2] = out[3] = 0;
    put32(out + 4, offset);
    put32(out + 8, t->bytes);
    memcpy(out + 12, (const uint8_t *)t->data + offset, n);
    return (int32_t)(12u + n);
}

/* The trace blob (docs/serial-protocol.md, GET_TRACE), one byte at a time: header, run ticks, records. */
static uint32_t trace_records(void) { return last_runs ? (interp.trace_count < APP_TRACE_CAP ? interp.trace_count : APP_TRACE_CAP) : 0; }
static uint32_t trace_run_ticks(void) { return last_runs < APP_RUN_TICKS ? last_runs : APP_RUN_TICKS; }
static uint32_t trace_total(void) { return 24u + 4u * trace_run_ticks() + 12u * trace_records(); }

static uint8_t trace_byte(uint32_t off)
{
    uint32_t word, n_ticks = trace_run_ticks();
    if (off < 24u) {
        switch (off / 4u) {
        case 0: word = last_runs; break;
        case 1: word = trace_records(); break;
        case 2: word = last_runs ? interp.trace_count : 0u; break;
        case 3: word = model_ok ? (uint32_t)edge_arena_used(&interp) : 0u; break;
        case 4: word = model_ok ? (uint32_t)edge_arena_high_water(&interp) : 0u; break;
        default: word = n_ticks; break;
        }
        return (uint8_t)(word >> (8u * (off % 4u)));
    }
    off -= 24u;
    if (off < 4u * n_ticks) {
        uint32_t start = last_runs > APP_RUN_TICKS ? last_runs % APP_RUN_TICKS : 0u;
        word = run_ticks[(start + off / 4u) % APP_RUN_TICKS];
        return (uint8_t)(word >> (8u * (off % 4u)));
    }
    off -= 4u * n_ticks;
    return ((const uint8_t *)&trace[off / 12u])[off % 12u]; /* edge_trace_entry_t is the record layout */
}

static int32_t do_get_trace(uint8_t *out, const uint8_t *in, uint32_t len)
{
    uint32_t offset, max_len, total, n, k;
    if (len != 8) return fail(S_BAD_PAYLOAD, (int32_t)len, "GET_TRACE takes 8 bytes");
    offset = get32(in);
    max_len = get16(in + 4);
    total = trace_total();
    if (offset > total) return fail(S_BAD_RANGE, (int32_t)offset, "past the trace's end");
    n = total - offset;
    if (n > max_len) n = max_len;
    if (n > APP_MAX_FRAME - 20u) n = APP_MAX_FRAME - 20u;
    put32(out, offset);
    put32(out + 4, total);
    for (k = 0; k < n; ++k) out[8 + k] = trace_byte(offset + k);
    return (int32_t)(8u + n);
}

static edge_status_t start_runtime(void);

/* No payload: edge_reset_state (variables and stateful kernels back to their initial values; TFLM's reset, so a
 * CALL_ONCE that ran stays done and resource variables hold nothing). Payload RESET_RESTART: the runtime
 * initialised again on the model, the state right after boot (CALL_ONCE runs again at the next invoke): what a
 * host that starts a fresh interpreter compares with. Inputs keep their values either way. */
static int32_t do_reset_state(const uint8_t *in, uint32_t len)
{
    edge_status_t s;
    if (len > 1 || (len == 1 && in[0] != RESET_RESTART))
        return fail(S_BAD_PAYLOAD, (int32_t)len, "RESET_STATE takes no payload or the byte 1 (restart)");
    if (!model_ok) return fail(S_NO_MODEL, 0, init_error);
    if (len == 1) {
        s = start_runtime();
        if (s != EDGE_OK) {
            model_ok = 0;
            return fail(S_MODEL_ERROR, (int32_t)s, init_error);
        }
    } else {
        s = edge_reset_state(&interp);
        if (s != EDGE_OK) return fail(S_INTERNAL, (int32_t)s, edge_status_str(s));
    }
    last_runs = 0;
    return 0;
}

/* ------------------------------------------------------------------------------------------ frames */

static void handle_frame(const uint8_t *f, uint32_t n)
{
    uint32_t version = f[0], type = f[1], seq = get16(f + 4), len = get16(f + 6);
    const uint8_t *in = f + 8;
    uint8_t *out = reply + 8;
    int32_t got;
    (void)n;
    if (type >= T_NAK && type <= T_STATUS) return; /* device-to-host types: not for us */
    if (type & T_REPLY) return;
    if (type == T_HELLO) {
        have_last = 0; /* a new session: forget the last command */
        got = do_hello(out);
        reply_len = finish_frame(reply, T_HELLO | T_REPLY, seq, (uint32_t)got);
        return;
    }
    if (have_last && seq == last_seq && type == last_type) { /* a retransmission: answer, do not execute */
        send_cobs(reply, reply_len);
        return;
    }
    status_code = 0;
    if (version != PROTO_VERSION) {
        got = fail(S_BAD_VERSION, PROTO_VERSION, "the device speaks protocol version 1");
    } else {
        switch (type) {
        case T_INFO: got = do_info(out, len); break;
        case T_SET_INPUT: got = do_set_input(in, len); break;
        case T_INVOKE:
            send_empty(T_ACK, seq); /* it may take long: stop the host's retransmissions */
            got = do_invoke(out, in, len);
            break;
        case T_GET_OUTPUT: got = do_get_output(out, in, len); break;
        case T_GET_TRACE: got = do_get_trace(out, in, len); break;
        case T_RESET_STATE: got = do_reset_state(in, len); break;
        case T_LOAD_MODEL: got = fail(S_UNSUPPORTED, 3, "no LOAD_MODEL: the model is flashed with the firmware"); break;
        case T_GENERATE: { /* generate.c: prefill + decode steps on the device, the cache kept between them */
            app_status_t gs = {0, 0, 0};
            send_empty(T_ACK, seq);
            if (APP_GEN_STATE_BYTES == 0) got = fail(S_UNSUPPORTED, 7, "no GENERATE: the model has no KV cache");
            else if (!model_ok) got = fail(S_NO_MODEL, 0, init_error);
            else if ((got = app_generate(&interp, in, len, out, MAX_PAYLOAD, &gs)) < 0) got = fail(gs.code, gs.detail, gs.msg);
            break;
        }
        default: got = fail(S_UNKNOWN_COMMAND, (int32_t)type, "unknown command"); break;
        }
    }
    if (got < 0) {
        uint32_t k = 0;
        put16(out, (uint32_t)status_code);
        put16(out + 2, 0);
        put32(out + 4, (uint32_t)status_detail);
        while (status_msg && status_msg[k] && k < 120u) {
            out[8 + k] = (uint8_t)status_msg[k];
            ++k;
        }
        reply_len = finish_frame(reply, T_STATUS, seq, 8u + k);
    } else {
        reply_len = finish_frame(reply, type | T_REPLY, seq, (uint32_t)got);
    }
    have_last = 1;
    last_seq = (uint16_t)seq;
    last_type = (uint8_t)type;
}

/* One complete encoded frame in rx[0..n): decode, check, dispatch; NAK when it is damaged. */
static void receive_frame(uint32_t n)
{
    uint32_t len;
    if (cobs_decode(rx, n, &len) != 0 || len < OVERHEAD || OVERHEAD + get16(rx + 6) != len ||
        get32(rx + len - 4u) != crc32(rx, len - 4u)) {
        send_empty(T_NAK, 0);
        return;
    }
    handle_frame(rx, len);
}

static void boot_log(void)
{
    char line[160], *s = line;
    if (!model_ok) {
        s = cat(s, "edge_init failed: ");
        send_log(LOG_ERROR, line, init_error);
        return;
    }
    s = cat(s, "edge-c on ");
    s = cat(s, board_name());
    s = cat(s, ": model ");
    s = fmt_u32(s, app_model_len);
    s = cat(s, " bytes, arena ");
    s = fmt_u32(s, (uint32_t)edge_arena_used(&interp));
    s = cat(s, " of ");
    s = fmt_u32(s, (uint32_t)sizeof arena);
    s = cat(s, " bytes used, high water ");
    s = fmt_u32(s, (uint32_t)edge_arena_high_water(&interp));
    send_log(LOG_INFO, line, "");
}

/* edge_init on the flashed model into the static arena, then the op timer (at boot, and for RESET_STATE's
 * restart); EDGE_OK, else init_error says why. */
static edge_status_t start_runtime(void)
{
    edge_status_t s;
#ifdef APP_PATCH_PLAN
    { /* patch-based execution of a stage (edge_init_patch), chosen on the host by edge flash --memory min */
        static const edge_patch_plan_t patch = APP_PATCH_PLAN;
        s = edge_init_patch(&interp, app_model, app_model_len, arena, sizeof arena, APP_INIT_FLAGS, &patch);
    }
#else
    s = edge_init_ex(&interp, app_model, app_model_len, arena, sizeof arena, APP_INIT_FLAGS);
#endif
    if (s != EDGE_OK) {
        (void)edge_error_message(&interp, init_error, sizeof init_error);
        return s;
    }
    timer.now = board_timer_now_cb;
    timer.units = board_timer_units();
    timer.user = 0;
    edge_set_timer(&interp, &timer, trace, APP_TRACE_CAP);
    return EDGE_OK;
}

int main(void)
{
    edge_status_t s;
    uint32_t n = 0, k, need = 0;
    int overflow = 0, c;

    board_init();
    app_sha256(app_model, app_model_len, model_sha);
    s = start_runtime();
    if (s == EDGE_OK) {
        for (k = 0; k < (uint32_t)edge_num_inputs(&interp); ++k) need += edge_input(&interp, (int32_t)k)->bytes;
        if (need > sizeof inputs) {
            char *e = cat(init_error, "the inputs need ");
            e = fmt_u32(e, need);
            e = cat(e, " bytes, the firmware holds ");
            (void)fmt_u32(e, (uint32_t)sizeof inputs);
        } else {
            model_ok = 1;
        }
    }

    c = board_uart_getc(); /* the host spoke: from here on the link is up */
    board_timer_restart();
    boot_log();
    for (;;) {
        if (c == 0) {
            if (overflow) {
                send_empty(T_NAK, 0);
            } else if (n) {
                receive_frame(n);
            }
            n = 0;
            overflow = 0;
        } else if (!overflow) {
            if (n < RX_LIMIT) {
                rx[n++] = (uint8_t)c;
            } else {
                overflow = 1;
            }
        }
        c = board_uart_getc();
    }
}
