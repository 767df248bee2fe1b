/* edge_flexbuffers.h - a small, bounds-checked FlexBuffers map reader for custom ops' options (prepare only).
 *
 * TFLM's signal-library ops keep their parameters in Operator.custom_options as a FlexBuffer whose root is a
 * map (edge_sdk/runtime/kernels/flexbuffers.py is the Python twin). The bytes come from the model, so they are
 * untrusted: every read is checked against the buffer, every offset must point backwards (children are
 * written before their parents) and stay inside it, counts may not exceed the buffer, widths must be 1, 2, 4
 * or 8. Nothing is allocated; a map handle just remembers where its values, types and keys are.
 *
 * Layout (as the Python module's docstring): the last byte is the root's width, the one before it the root's
 * packed type (type << 2 | log2 of the width of what it points to). A map stores its values like an untyped
 * vector (count before the data, one packed type byte per value after it) and, before the count, the byte
 * width of its key vector and an offset to that vector (a typed vector of offsets to NUL-terminated keys).
 *
 * Kernels use the EFB_OPT_* macros: a missing key, a value of the wrong type or out of range makes prepare
 * fail through EDGE_FAIL (EDGE_BAD_NODE) with a reason naming the key (the key must be a string literal).
 * Only the keys a kernel reads are decoded beyond the key vector itself; every key is checked (in bounds,
 * NUL-terminated, no duplicates) when the map is opened.
 */
#ifndef EDGE_FLEXBUFFERS_H
#define EDGE_FLEXBUFFERS_H

#include <stdint.h>
#include <string.h>

#include "edge_kernel.h"

/* FlexBuffers value types (the format's Type enum) this reader interprets. */
enum {
    EFB_T_NULL = 0, EFB_T_INT = 1, EFB_T_UINT = 2, EFB_T_FLOAT = 3, EFB_T_KEY = 4,
    EFB_T_INDIRECT_INT = 6, EFB_T_INDIRECT_UINT = 7, EFB_T_INDIRECT_FLOAT = 8,
    EFB_T_MAP = 9, EFB_T_VECTOR_INT = 11, EFB_T_VECTOR_UINT = 12,
    EFB_T_VECTOR_INT2 = 16, EFB_T_VECTOR_UINT2 = 17, EFB_T_VECTOR_INT3 = 19, EFB_T_VECTOR_UINT3 = 20,
    EFB_T_VECTOR_INT4 = 22, EFB_T_VECTOR_UINT4 = 23, EFB_T_BOOL = 26
};

/* Results of the low-level readers. */
enum { EFB_OK = 0, EFB_MALFORMED = 1, EFB_MISSING = 2, EFB_WRONG_TYPE = 3, EFB_RANGE = 4 };

typedef struct {
    const uint8_t *buf;
    uint32_t len;
    uint32_t data;          /* first value slot */
    uint32_t count;         /* entries */
    uint32_t keys;          /* first key-offset slot */
    uint8_t width;          /* byte width of a value slot */
    uint8_t keys_width;     /* byte width of a key-offset slot */
} efb_map_t;

/* One value of a map: its slot and its packed type byte. */
typedef struct {
    uint32_t pos;
    uint8_t width;          /* the slot's width (the parent's) */
    uint8_t packed;
} efb_ref_t;

/* A typed vector of integers (elements `width` bytes each, signed or not), checked to lie in the buffer. */
typedef struct {
    const uint8_t *data;
    uint32_t count;
    uint8_t width;
    uint8_t is_signed;
} efb_ivec_t;

static inline int efb_width_ok_(uint64_t w) { return w == 1 || w == 2 || w == 4 || w == 8; }

/* [pos, pos + n) lies within the buffer. */
static inline int efb_span_(uint32_t len, uint64_t pos, uint64_t n) { return pos <= len && n <= len - pos; }

/* Little-endian unsigned of `width` bytes at pos (the caller checked the span). */
static inline uint64_t efb_load_(const uint8_t *p, uint32_t width) {
    uint64_t v = 0;
    uint32_t i;
    for (i = width; i > 0; i--) v = (v << 8) | p[i - 1];
    return v;
}

static inline int64_t efb_sign_(uint64_t v, uint32_t width) {
    if (width < 8 && (v >> (8 * width - 1)) & 1u) v |= ~(uint64_t)0 << (8 * width);
    return (int64_t)v; /* two's complement on every target this runtime builds for */
}

static inline int efb_uint_at_(const uint8_t *buf, uint32_t len, uint64_t pos, uint32_t width, uint64_t *v) {
    if (!efb_span_(len, pos, width)) return EFB_MALFORMED;
    *v = efb_load_(buf + pos, width);
    return EFB_OK;
}

/* Follows the offset stored at pos (width bytes) back to its target; it must point strictly backwards. */
static inline int efb_target_(const uint8_t *buf, uint32_t len, uint32_t pos, uint32_t width, uint32_t *target) {
    uint64_t off;
    if (efb_uint_at_(buf, len, pos, width, &off) != EFB_OK || off == 0 || off > pos) return EFB_MALFORMED;
    *target = pos - (uint32_t)off;
    return EFB_OK;
}

/* The element count stored just before data (width bytes); never more than the buffer's length. */
static inline int efb_count_(const uint8_t *buf, uint32_t len, uint32_t data, uint32_t width, uint32_t *count) {
    uint64_t n;
    if (data < width || efb_uint_at_(buf, len, data - width, width, &n) != EFB_OK || n > len) return EFB_MALFORMED;
    *count = (uint32_t)n;
    return EFB_OK;
}

/* Length of the NUL-terminated key at pos, or -1 when it runs off the buffer. */
static inline int64_t efb_key_len_(const uint8_t *buf, uint32_t len, uint32_t pos) {
    const uint8_t *end;
    if (pos >= len) return -1;
    end = (const uint8_t *)memchr(buf + pos, 0, len - pos);
    return end ? (int64_t)(end - (buf + pos)) : -1;
}

/* Where key i of the map starts (checked at open). */
static inline uint32_t efb_key_pos_(const efb_map_t *m, uint32_t i) {
    uint32_t slot = m->keys + i * m->keys_width;
    return slot - (uint32_t)efb_load_(m->buf + slot, m->keys_width);
}

/* Opens the root map of buf[0..len): EFB_OK, or EFB_MALFORMED (not a map, or any check failed). */
static inline int efb_map_open(efb_map_t *m, const uint8_t *buf, uint32_t len) {
    uint32_t root_width, pos, data, width, count, keys_at, keys, keys_count, i, j;
    uint64_t keys_width;
    uint8_t packed;
    memset(m, 0, sizeof *m);
    if (!buf || len < 3) return EFB_MALFORMED;
    root_width = buf[len - 1];
    packed = buf[len - 2];
    if (!efb_width_ok_(root_width) || len - 2 < root_width) return EFB_MALFORMED;
    pos = len - 2 - root_width;
    if ((packed >> 2) != EFB_T_MAP) return EFB_MALFORMED;
    width = 1u << (packed & 3);
    if (efb_target_(buf, len, pos, root_width, &data) != EFB_OK) return EFB_MALFORMED;
    if (efb_count_(buf, len, data, width, &count) != EFB_OK || data < 3 * width) return EFB_MALFORMED;
    keys_at = data - 3 * width;
    if (efb_target_(buf, len, keys_at, width, &keys) != EFB_OK) return EFB_MALFORMED;
    if (efb_uint_at_(buf, len, data - 2 * width, width, &keys_width) != EFB_OK || !efb_width_ok_(keys_width))
        return EFB_MALFORMED;
    if (efb_count_(buf, len, keys, (uint32_t)keys_width, &keys_count) != EFB_OK || keys_count != count)
        return EFB_MALFORMED;
    /* values, then one type byte per value; the key offsets */
    if (!efb_span_(len, data, (uint64_t)count * width + count)) return EFB_MALFORMED;
    if (!efb_span_(len, keys, (uint64_t)count * keys_width)) return EFB_MALFORMED;
    m->buf = buf;
    m->len = len;
    m->data = data;
    m->count = count;
    m->keys = keys;
    m->width = (uint8_t)width;
    m->keys_width = (uint8_t)keys_width;
    for (i = 0; i < count; i++) { /* every key: a backwards offset to a NUL-terminated string */
        uint32_t at;
        if (efb_target_(buf, len, keys + i * (uint32_t)keys_width, (uint32_t)keys_width, &at) != EFB_OK ||
            efb_key_len_(buf, len, at) < 0)
            return EFB_MALFORMED;
    }
    for (i = 0; i < count; i++) /* no key twice (small maps: pairwise) */
        for (j = i + 1; j < count; j++)
            if (strcmp((const char *)buf + efb_key_pos_(m, i), (const char *)buf + efb_key_pos_(m, j)) == 0)
                return EFB_MALFORMED;
    return EFB_OK;
}

/* The value of `key`: EFB_OK or EFB_MISSING. */
static inline int efb_map_find(const efb_map_t *m, const char *key, efb_ref_t *r) {
    uint32_t i;
    for (i = 0; i < m->count; i++) {
        if (strcmp((const char *)m->buf + efb_key_pos_(m, i), key) == 0) {
            r->pos = m->data + i * m->width;
            r->width = m->width;
            r->packed = m->buf[m->data + m->count * m->width + i];
            return EFB_OK;
        }
    }
    return EFB_MISSING;
}

/* An integer value (INT, UINT, BOOL, or their indirect forms) as int64 (a UINT above INT64_MAX: EFB_RANGE). */
static inline int efb_get_int(const efb_map_t *m, const efb_ref_t *r, int64_t *v) {
    uint32_t type = r->packed >> 2, width = r->width, pos = r->pos;
    uint64_t u;
    if (type == EFB_T_INDIRECT_INT || type == EFB_T_INDIRECT_UINT) {
        if (efb_target_(m->buf, m->len, pos, width, &pos) != EFB_OK) return EFB_MALFORMED;
        width = 1u << (r->packed & 3);
        type = type == EFB_T_INDIRECT_INT ? EFB_T_INT : EFB_T_UINT;
    }
    if (type != EFB_T_INT && type != EFB_T_UINT && type != EFB_T_BOOL) return EFB_WRONG_TYPE;
    if (efb_uint_at_(m->buf, m->len, pos, width, &u) != EFB_OK) return EFB_MALFORMED;
    if (type == EFB_T_INT) {
        *v = efb_sign_(u, width);
    } else if (type == EFB_T_BOOL) {
        *v = u != 0;
    } else {
        if (u > (uint64_t)INT64_MAX) return EFB_RANGE;
        *v = (int64_t)u;
    }
    return EFB_OK;
}

/* A FLOAT value (inline or indirect, 4 or 8 bytes) as double. */
static inline int efb_get_float(const efb_map_t *m, const efb_ref_t *r, double *v) {
    uint32_t type = r->packed >> 2, width = r->width, pos = r->pos;
    uint64_t u;
    if (type == EFB_T_INDIRECT_FLOAT) {
        if (efb_target_(m->buf, m->len, pos, width, &pos) != EFB_OK) return EFB_MALFORMED;
        width = 1u << (r->packed & 3);
        type = EFB_T_FLOAT;
    }
    if (type != EFB_T_FLOAT) return EFB_WRONG_TYPE;
    if ((width != 4 && width != 8) || efb_uint_at_(m->buf, m->len, pos, width, &u) != EFB_OK) return EFB_MALFORMED;
    if (width == 4) {
        uint32_t u32 = (uint32_t)u;
        float f;
        memcpy(&f, &u32, 4);
        *v = (double)f;
    } else {
        memcpy(v, &u, 8);
    }
    return EFB_OK;
}

/* A typed integer vector (VECTOR_INT / VECTOR_UINT, or their fixed 2/3/4-element forms). */
static inline int efb_get_int_vector(const efb_map_t *m, const efb_ref_t *r, efb_ivec_t *v) {
    uint32_t type = r->packed >> 2, width = 1u << (r->packed & 3), data, count;
    int is_signed;
    switch (type) {
    case EFB_T_VECTOR_INT: case EFB_T_VECTOR_INT2: case EFB_T_VECTOR_INT3: case EFB_T_VECTOR_INT4:
        is_signed = 1; break;
    case EFB_T_VECTOR_UINT: case EFB_T_VECTOR_UINT2: case EFB_T_VECTOR_UINT3: case EFB_T_VECTOR_UINT4:
        is_signed = 0; break;
    default:
        return EFB_WRONG_TYPE;
    }
    if (efb_target_(m->buf, m->len, r->pos, r->width, &data) != EFB_OK) return EFB_MALFORMED;
    if (type == EFB_T_VECTOR_INT || type == EFB_T_VECTOR_UINT) {
        if (efb_count_(m->buf, m->len, data, width, &count) != EFB_OK) return EFB_MALFORMED;
    } else {
        count = type <= EFB_T_VECTOR_UINT2 ? 2u : (type <= EFB_T_VECTOR_UINT3 ? 3u : 4u);
    }
    if (!efb_span_(m->len, data, (uint64_t)count * width)) return EFB_MALFORMED;
    v->data = m->buf + data;
    v->count = count;
    v->width = (uint8_t)width;
    v->is_signed = (uint8_t)is_signed;
    return EFB_OK;
}

/* Element i of a vector from efb_get_int_vector (i < count; unsigned elements above INT64_MAX wrap). */
static inline int64_t efb_ivec_at(const efb_ivec_t *v, uint32_t i) {
    uint64_t u = efb_load_(v->data + (size_t)i * v->width, v->width);
    return v->is_signed ? efb_sign_(u, v->width) : (int64_t)u;
}

/* ---- prepare-time helpers for kernels: failures go through EDGE_FAIL (EDGE_BAD_NODE) ---- */

/* The node's custom options as a root map. */
static inline edge_status_t efb_node_options(edge_ctx_t *ctx, const edge_node_t *node, efb_map_t *m) {
    uint32_t len = 0;
    const uint8_t *buf = edge_custom_options(ctx, node, &len);
    if (!buf || len == 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "custom options (a FlexBuffer map) are missing");
    if (efb_map_open(m, buf, len) != EFB_OK)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "custom options: malformed FlexBuffer or its root is not a map");
    return EDGE_OK;
}

static inline edge_status_t efb_opt_int32_(edge_ctx_t *ctx, const efb_map_t *m, const char *key, int32_t *out,
                                           const char *reason) {
    (void)reason; /* unused when EDGE_NO_STATUS_STRINGS drops the texts */
    efb_ref_t r;
    int64_t v;
    if (efb_map_find(m, key, &r) != EFB_OK || efb_get_int(m, &r, &v) != EFB_OK || v < INT32_MIN || v > INT32_MAX)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, reason);
    *out = (int32_t)v;
    return EDGE_OK;
}

static inline edge_status_t efb_opt_bool_(edge_ctx_t *ctx, const efb_map_t *m, const char *key, int32_t *out,
                                          const char *reason) {
    (void)reason; /* unused when EDGE_NO_STATUS_STRINGS drops the texts */
    efb_ref_t r;
    int64_t v;
    if (efb_map_find(m, key, &r) != EFB_OK || efb_get_int(m, &r, &v) != EFB_OK)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, reason);
    *out = v != 0;
    return EDGE_OK;
}

static inline edge_status_t efb_opt_float_(edge_ctx_t *ctx, const efb_map_t *m, const char *key, double *out,
                                           const char *reason) {
    (void)reason; /* unused when EDGE_NO_STATUS_STRINGS drops the texts */
    efb_ref_t r;
    if (efb_map_find(m, key, &r) != EFB_OK || efb_get_float(m, &r, out) != EFB_OK)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, reason);
    return EDGE_OK;
}

static inline edge_status_t efb_opt_int_vector_(edge_ctx_t *ctx, const efb_map_t *m, const char *key, efb_ivec_t *out,
                                                const char *reason) {
    (void)reason; /* unused when EDGE_NO_STATUS_STRINGS drops the texts */
    efb_ref_t r;
    if (efb_map_find(m, key, &r) != EFB_OK || efb_get_int_vector(m, &r, out) != EFB_OK)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, reason);
    return EDGE_OK;
}

/* key: a string literal (the failure reason names it). */
#define EFB_OPT_INT32(ctx, m, key, out) \
    efb_opt_int32_((ctx), (m), key, (out), "custom option '" key "' is missing, not an integer, or outside int32")
#define EFB_OPT_BOOL(ctx, m, key, out) \
    efb_opt_bool_((ctx), (m), key, (out), "custom option '" key "' is missing or not an integer / bool")
#define EFB_OPT_FLOAT(ctx, m, key, out) \
    efb_opt_float_((ctx), (m), key, (out), "custom option '" key "' is missing or not a float")
#define EFB_OPT_INT_VECTOR(ctx, m, key, out) \
    efb_opt_int_vector_((ctx), (m), key, (out), "custom option '" key "' is missing or not a typed integer vector")

#endif /* EDGE_FLEXBUFFERS_H */
