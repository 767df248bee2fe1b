/* generate.c - the GENERATE command of docs/serial-protocol.md: greedy text generation on the device with
 * the key-value cache kept in device memory between model calls and between commands.
 *
 * A START names the model's two signatures (prefill, decode), their token / position / logits tensors and
 * the cache pairs (decode input, output of both signatures), and carries the prompt's token ids. The device
 * runs prefill on the first max_prompt tokens, decode on the rest, then picks the arg-max token, feeds it to
 * decode, and so on, until max_tokens ids are produced, the end-of-text id comes, or the context is full.
 * CONTINUE produces the next max_tokens ids of the same text. The cache lives in a static store
 * (APP_GEN_STATE_BYTES, generated from the model by edge_sdk/tools/flash.py): after every call the cache outputs are
 * copied there, before every decode the store is copied into the decode's cache inputs (the arena plan may
 * reuse a subgraph's input bytes once they are read, so nothing is kept in the arena between calls).
 */
#include <string.h>

#include "app.h"
#include "board.h"
#include "edge.h"

/* STATUS codes (docs/serial-protocol.md section 4) */
enum { G_BAD_PAYLOAD = 3, G_BAD_RANGE = 5, G_INVOKE_FAILED = 8, G_TOO_LARGE = 9, G_UNSUPPORTED = 11, G_BAD_NAME = 4 };
enum { MODE_START = 0, MODE_CONTINUE = 1 };
enum { STOP_MAX_TOKENS = 0, STOP_EOS = 1, STOP_CONTEXT = 2 };
#define GEN_MAX_PAIRS 16
#define GEN_NAME_MAX 64
#define REPLY_HEAD 20u

#if APP_GEN_STATE_BYTES > 0
static uint8_t store[APP_GEN_STATE_BYTES] BOARD_LARGE_BSS;
#else
static uint8_t store[1];
#endif

typedef struct {
    edge_interp_t *interp;
    int32_t prefill_sg, decode_sg, n_pairs;
    edge_tensor_t *p_tokens, *p_length, *p_logits, *d_token, *d_position, *d_logits;
    edge_tensor_t *d_in[GEN_MAX_PAIRS], *d_out[GEN_MAX_PAIRS], *p_out[GEN_MAX_PAIRS];
    uint32_t store_off[GEN_MAX_PAIRS];
    int32_t active, have_next, next, pending, position, context;
    uint32_t prefill_ticks, decode_ticks, decode_steps;
    edge_status_t run_status;
} gen_t;

static gen_t g;

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8); }
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static int32_t gfail(app_status_t *st, int code, int32_t detail, const char *msg)
{
    st->code = code;
    st->detail = detail;
    st->msg = msg;
    return -1;
}

/* The arg-max of a logits tensor (first on ties; a NaN wins, as numpy's argmax). */
static int32_t argmax(const edge_tensor_t *t)
{
    int64_t n = edge_tensor_elements(t), i, best = 0;
    if (t->type == EDGE_FLOAT32) {
        const float *x = (const float *)t->data;
        for (i = 0; i < n; ++i) {
            if (x[i] != x[i]) return (int32_t)i;
            if (x[i] > x[best]) best = i;
        }
    } else if (t->type == EDGE_INT16) {
        const int16_t *x = (const int16_t *)t->data;
        for (i = 1; i < n; ++i)
            if (x[i] > x[best]) best = i;
    } else {
        const int8_t *x = (const int8_t *)t->data;
        for (i = 1; i < n; ++i)
            if (x[i] > x[best]) best = i;
    }
    return (int32_t)best;
}

static void put_i32(edge_tensor_t *t, int32_t v) { memcpy(t->data, &v, 4); }

/* One signature tensor by name; NULL when absent or not of the wanted type (type < 0: any). */
static edge_tensor_t *sig_tensor(int32_t sig, int32_t output, const char *name, int type)
{
    int32_t sg = edge_signature_subgraph(g.interp, sig);
    int32_t t = edge_signature_tensor(g.interp, sig, output, name);
    edge_tensor_t *x = t >= 0 ? edge_tensor(g.interp, sg, t) : 0;
    if (x && type >= 0 && x->type != type) return 0;
    return x;
}

static int logits_ok(const edge_tensor_t *t)
{
    return t && (t->type == EDGE_FLOAT32 || t->type == EDGE_INT16 || t->type == EDGE_INT8) && t->bytes > 0;
}

/* Read name k of the payload's name list into buf (NUL-terminated); 0 when malformed. */
static int read_name(const uint8_t **p, const uint8_t *end, char *buf)
{
    uint32_t n;
    if (*p >= end) return 0;
    n = **p;
    if (n >= GEN_NAME_MAX || *p + 1 + n > end) return 0;
    memcpy(buf, *p + 1, n);
    buf[n] = 0;
    *p += 1 + n;
    return 1;
}

/* Resolve the START's names; returns 0 or a STATUS through st. */
static int32_t setup(const uint8_t *names, const uint8_t *end, uint32_t n_names, app_status_t *st)
{
    char name[GEN_NAME_MAX];
    const uint8_t *p = names;
    int32_t k, pk = -1, dk = -1;
    uint32_t i, off = 0;
    edge_tensor_t **slots[6];
    int32_t slot_sig[6], slot_out[6], slot_type[6];
    if (n_names < 8 || (n_names - 8) % 2 || (n_names - 8) / 2 > GEN_MAX_PAIRS)
        return gfail(st, G_BAD_PAYLOAD, (int32_t)n_names, "GENERATE names: 8 + 2 per cache pair (at most 16 pairs)");
    slots[0] = &g.p_tokens; slots[1] = &g.p_length; slots[2] = &g.p_logits;
    slots[3] = &g.d_token; slots[4] = &g.d_position; slots[5] = &g.d_logits;
    for (i = 0; i < 8; ++i) {
        if (!read_name(&p, end, name)) return gfail(st, G_BAD_PAYLOAD, (int32_t)i, "GENERATE: malformed name list");
        if (i == 0 || i == 4) {
            k = edge_signature_find(g.interp, name);
            if (k < 0) return gfail(st, G_BAD_NAME, (int32_t)i, "GENERATE: the model has no such signature");
            if (i == 0) pk = k; else dk = k;
            continue;
        }
        k = i < 4 ? (int32_t)i - 1 : (int32_t)i - 2; /* slot */
        slot_sig[k] = i < 4 ? pk : dk;
        slot_out[k] = (i == 3 || i == 7);
        slot_type[k] = slot_out[k] ? -1 : EDGE_INT32;
        *slots[k] = sig_tensor(slot_sig[k], slot_out[k], name, slot_type[k]);
        if (!*slots[k]) return gfail(st, G_BAD_NAME, (int32_t)i, "GENERATE: no such signature tensor (or not INT32)");
    }
    if (!logits_ok(g.p_logits) || !logits_ok(g.d_logits))
        return gfail(st, G_UNSUPPORTED, 0, "GENERATE: logits must be FLOAT32, INT16 or INT8");
    if (g.p_length->bytes < 4 || g.d_token->bytes < 4 || g.d_position->bytes < 4 || g.p_tokens->bytes < 4)
        return gfail(st, G_BAD_PAYLOAD, 0, "GENERATE: token / position tensors are empty");
    g.prefill_sg = edge_signature_subgraph(g.interp, pk);
    g.decode_sg = edge_signature_subgraph(g.interp, dk);
    g.n_pairs = (int32_t)(n_names - 8) / 2;
    for (k = 0; k < g.n_pairs; ++k) {
        if (!read_name(&p, end, name)) return gfail(st, G_BAD_PAYLOAD, 8 + 2 * k, "GENERATE: malformed name list");
        g.d_in[k] = sig_tensor(dk, 0, name, -1);
        if (!read_name(&p, end, name)) return gfail(st, G_BAD_PAYLOAD, 9 + 2 * k, "GENERATE: malformed name list");
        g.d_out[k] = sig_tensor(dk, 1, name, -1);
        g.p_out[k] = sig_tensor(pk, 1, name, -1);
        if (!g.d_in[k] || !g.d_out[k] || !g.p_out[k])
            return gfail(st, G_BAD_NAME, 8 + 2 * k, "GENERATE: no such cache tensor in the signatures");
        if (g.d_in[k]->bytes != g.d_out[k]->bytes || g.p_out[k]->bytes != g.d_out[k]->bytes)
            return gfail(st, G_BAD_PAYLOAD, 8 + 2 * k, "GENERATE: cache tensors of one pair differ in size");
        g.store_off[k] = off;
        off += (g.d_in[k]->bytes + 15u) & ~15u;
    }
    if (off > (uint32_t)APP_GEN_STATE_BYTES)
        return gfail(st, G_TOO_LARGE, (int32_t)APP_GEN_STATE_BYTES, "GENERATE: the cache exceeds the firmware's store");
    return 0;
}

static void save_cache(edge_tensor_t *const *from)
{
    int32_t k;
    for (k = 0; k < g.n_pairs; ++k) memcpy(store + g.store_off[k], from[k]->data, from[k]->bytes);
}

/* Prefill the first min(n, max_prompt) ids; sets next, position. */
static edge_status_t run_prefill(const uint8_t *ids, uint32_t n, uint32_t max_prompt)
{
    uint32_t k, m = n < max_prompt ? n : max_prompt, t0;
    edge_status_t s;
    int32_t *tok = (int32_t *)g.p_tokens->data;
    memset(g.p_tokens->data, 0, g.p_tokens->bytes);
    for (k = 0; k < m; ++k) tok[k] = (int32_t)rd32(ids + 4 * k);
    put_i32(g.p_length, (int32_t)m);
    t0 = board_timer_now();
    s = edge_invoke_at(g.interp, g.prefill_sg);
    g.prefill_ticks += board_timer_now() - t0;
    if (s != EDGE_OK) return s;
    save_cache(g.p_out);
    g.next = argmax(g.p_logits);
    g.have_next = 1;
    g.position = (int32_t)m;
    return EDGE_OK;
}

/* Feed one token at the current position; sets next, advances position. ticks: where the time goes. */
static edge_status_t run_decode(int32_t token, uint32_t *ticks)
{
    int32_t k;
    uint32_t t0;
    edge_status_t s;
    for (k = 0; k < g.n_pairs; ++k) memcpy(g.d_in[k]->data, store + g.store_off[k], g.d_in[k]->bytes);
    put_i32(g.d_token, token);
    put_i32(g.d_position, g.position);
    t0 = board_timer_now();
    s = edge_invoke_at(g.interp, g.decode_sg);
    *ticks += board_timer_now() - t0;
    if (s != EDGE_OK) return s;
    save_cache(g.d_out);
    g.next = argmax(g.d_logits);
    g.have_next = 1;
    g.position++;
    return EDGE_OK;
}

int32_t app_generate(edge_interp_t *interp, const uint8_t *in, uint32_t len, uint8_t *out, uint32_t out_max,
                     app_status_t *st)
{
    uint32_t mode, max_tokens, produced = 0, limit, stop = STOP_MAX_TOKENS;
    int32_t eos, r;
    edge_status_t s;
    if (len < 8) return gfail(st, G_BAD_PAYLOAD, (int32_t)len, "GENERATE takes at least 8 bytes");
    mode = in[0];
    max_tokens = rd16(in + 4);
    eos = (int32_t)(int16_t)rd16(in + 6);
    limit = (out_max - REPLY_HEAD) / 4u;
    if (max_tokens > limit) return gfail(st, G_TOO_LARGE, (int32_t)limit, "GENERATE: more tokens than one reply holds");
    g.prefill_ticks = g.decode_ticks = g.decode_steps = 0;
    if (mode == MODE_START) {
        uint32_t n_prompt, n_names, max_prompt;
        if (len < 16) return gfail(st, G_BAD_PAYLOAD, (int32_t)len, "GENERATE START takes at least 16 bytes");
        n_prompt = rd16(in + 8);
        g.interp = interp;
        g.active = 0;
        g.context = (int32_t)rd16(in + 10);
        n_names = in[12];
        if (n_prompt == 0 || 16u + 4u * n_prompt > len)
            return gfail(st, G_BAD_PAYLOAD, (int32_t)len, "GENERATE START: 1 or more prompt ids, all in the payload");
        if ((r = setup(in + 16 + 4 * n_prompt, in + len, n_names, st)) != 0) return r;
        if ((int32_t)n_prompt > g.context)
            return gfail(st, G_BAD_RANGE, g.context, "GENERATE START: the prompt is longer than the context");
        max_prompt = g.p_tokens->bytes / 4u;
        if ((s = run_prefill(in + 16, n_prompt, max_prompt)) != EDGE_OK)
            return gfail(st, G_INVOKE_FAILED, (int32_t)s, edge_status_str(s));
        for (r = (int32_t)max_prompt; r < (int32_t)n_prompt; ++r) /* the prompt past max_prompt: one decode each */
            if ((s = run_decode((int32_t)rd32(in + 16 + 4 * (uint32_t)r), &g.prefill_ticks)) != EDGE_OK)
                return gfail(st, G_INVOKE_FAILED, (int32_t)s, edge_status_str(s));
        g.active = 1;
    } else if (mode == MODE_CONTINUE) {
        if (len != 8) return gfail(st, G_BAD_PAYLOAD, (int32_t)len, "GENERATE CONTINUE takes 8 bytes");
        if (!g.active || g.interp != interp) return gfail(st, G_BAD_RANGE, 0, "GENERATE CONTINUE without a text: START one");
    } else {
        return gfail(st, G_BAD_PAYLOAD, (int32_t)mode, "GENERATE mode must be 0 (START) or 1 (CONTINUE)");
    }
    if (!g.have_next && max_tokens > 0) { /* CONTINUE: the last id handed out has not been fed yet */
        if (g.position >= g.context) {
            stop = STOP_CONTEXT;
            g.active = 0;
            max_tokens = 0;
        } else {
            if ((s = run_decode(g.pending, &g.decode_ticks)) != EDGE_OK)
                return gfail(st, G_INVOKE_FAILED, (int32_t)s, edge_status_str(s));
            g.decode_steps++;
        }
    }
    while (produced < max_tokens) {
        int32_t t = g.next;
        g.have_next = 0;
        if (t == eos) {
            stop = STOP_EOS;
            g.active = 0;
            break;
        }
        wr32(out + REPLY_HEAD + 4u * produced, (uint32_t)t);
        produced++;
        if (produced == max_tokens) {
            g.pending = t;
            break;
        }
        if (g.position >= g.context) {
            stop = STOP_CONTEXT;
            g.active = 0;
            break;
        }
        if ((s = run_decode(t, &g.decode_ticks)) != EDGE_OK)
            return gfail(st, G_INVOKE_FAILED, (int32_t)s, edge_status_str(s));
        g.decode_steps++;
    }
    out[0] = (uint8_t)produced;
    out[1] = (uint8_t)(produced >> 8);
    out[2] = (uint8_t)stop;
    out[3] = 0;
    wr32(out + 4, (uint32_t)g.position);
    wr32(out + 8, g.prefill_ticks);
    wr32(out + 12, g.decode_ticks);
    wr32(out + 16, g.decode_steps);
    return (int32_t)(REPLY_HEAD + 4u * produced);
}
