/* edge_dsp.h - the Armv7E-M DSP-extension instructions the int8 convolution kernels use.
 *
 * On cores with the DSP extension (Cortex-M4/M7/M33: __ARM_FEATURE_DSP) these are one instruction each;
 * with EDGE_EMULATE_DSP defined (host builds) they are C versions of the same instructions, so the host
 * tests run the very code path the firmware runs. EDGE_DSP says whether either is available (0: the kernels
 * use their plain C loops); EDGE_DSP_ASM that they are the real instructions (GCC-style inline assembly
 * available: a kernel's innermost loop may be written as one asm block, with the same arithmetic as its C
 * version, which the emulated host build runs).
 *   edge_sxtb16(x)       bytes 0 and 2 of x, sign-extended into two int16 halves
 *   edge_sxtb16_ror8(x)  bytes 1 and 3 likewise (x rotated right by 8 first)
 *   edge_sadd16(a, b)    two int16 sums (halves wrap independently)
 *   edge_sxtab16(a, x) / edge_sxtab16_ror8(a, x)  a + edge_sxtb16(x) / a + edge_sxtb16_ror8(x) in one instruction
 *                        (SXTAB16: the halves wrap; with a = an offset in both halves, widening plus offset)
 *   edge_smlad(a, b, c)  c + a.lo * b.lo + a.hi * b.hi (int16 halves, wrapping int32)
 *   edge_smlabb / edge_smlatt(a, b, c)  c + a.lo * b.lo / c + a.hi * b.hi
 *   edge_smmlar(a, b, c)  the high word of (c << 32) + a * b + 2^31 (signed 64-bit, rounded high multiply)
 *
 * And edge_rq_t / edge_rq_make / edge_rq_apply: TFLM's MultiplyByQuantizedMultiplier (edge_mbqm) with its
 * parameters prepared once per channel, so that the hot loops do it in a handful of instructions (one
 * SMMLAR on DSP cores) and never call a 64-bit helper. Bit-exact with edge_mbqm for every int32 input.
 */
#ifndef EDGE_DSP_H
#define EDGE_DSP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* M-profile only: an A-profile 32-bit build (a Raspberry Pi's armhf) also defines __ARM_FEATURE_DSP, but the
 * asm loops are scheduled and constrained for Thumb-2 on Cortex-M; there the plain C loops run. */
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
#define EDGE_DSP 1
#define EDGE_DSP_ASM 1 /* the real instructions: kernels may use hand-scheduled inline assembly loops */
static inline uint32_t edge_sxtb16(uint32_t x) {
    uint32_t r;
    __asm__("sxtb16 %0, %1" : "=r"(r) : "r"(x));
    return r;
}
static inline uint32_t edge_sxtb16_ror8(uint32_t x) {
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
static inline uint32_t edge_sadd16(uint32_t a, uint32_t b) {
    uint32_t r;
    __asm__("sadd16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
static inline uint32_t edge_sxtab16(uint32_t a, uint32_t x) {
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(x));
    return r;
}
static inline uint32_t edge_sxtab16_ror8(uint32_t a, uint32_t x) {
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
    return r;
}
static inline uint32_t edge_smlad(uint32_t a, uint32_t b, uint32_t acc) {
    uint32_t r;
    __asm__("smlad %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}
static inline uint32_t edge_smlabb(uint32_t a, uint32_t b, uint32_t acc) {
    uint32_t r;
    __asm__("smlabb %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}
static inline uint32_t edge_smlatt(uint32_t a, uint32_t b, uint32_t acc) {
    uint32_t r;
    __asm__("smlatt %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}
static inline uint32_t edge_smlabt(uint32_t a, uint32_t b, uint32_t acc) {
    uint32_t r;
    __asm__("smlabt %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}
static inline uint32_t edge_smlatb(uint32_t a, uint32_t b, uint32_t acc) {
    uint32_t r;
    __asm__("smlatb %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}
static inline int32_t edge_smmlar(int32_t a, int32_t b, int32_t acc) {
    int32_t r;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}
#elif defined(EDGE_EMULATE_DSP)
#define EDGE_DSP 1
static inline uint32_t edge_sxtb16(uint32_t x) {
    return ((uint32_t)(uint16_t)(int16_t)(int8_t)(x & 0xff)) | ((uint32_t)(uint16_t)(int16_t)(int8_t)((x >> 16) & 0xff) << 16);
}
static inline uint32_t edge_sxtb16_ror8(uint32_t x) { return edge_sxtb16((x >> 8) | (x << 24)); }
static inline uint32_t edge_sadd16(uint32_t a, uint32_t b) {
    uint32_t lo = (uint32_t)(uint16_t)((int16_t)(a & 0xffff) + (int16_t)(b & 0xffff));
    uint32_t hi = (uint32_t)(uint16_t)((int16_t)(a >> 16) + (int16_t)(b >> 16));
    return lo | (hi << 16);
}
static inline uint32_t edge_sxtab16(uint32_t a, uint32_t x) { return edge_sadd16(a, edge_sxtb16(x)); }
static inline uint32_t edge_sxtab16_ror8(uint32_t a, uint32_t x) { return edge_sadd16(a, edge_sxtb16_ror8(x)); }
static inline uint32_t edge_smlad(uint32_t a, uint32_t b, uint32_t acc) {
    int32_t p0 = (int32_t)(int16_t)(a & 0xffff) * (int32_t)(int16_t)(b & 0xffff);
    int32_t p1 = (int32_t)(int16_t)(a >> 16) * (int32_t)(int16_t)(b >> 16);
    return acc + (uint32_t)p0 + (uint32_t)p1;
}
static inline uint32_t edge_smlabb(uint32_t a, uint32_t b, uint32_t acc) {
    return acc + (uint32_t)((int32_t)(int16_t)(a & 0xffff) * (int32_t)(int16_t)(b & 0xffff));
}
static inline uint32_t edge_smlatt(uint32_t a, uint32_t b, uint32_t acc) {
    return acc + (uint32_t)((int32_t)(int16_t)(a >> 16) * (int32_t)(int16_t)(b >> 16));
}
static inline uint32_t edge_smlabt(uint32_t a, uint32_t b, uint32_t acc) {
    return acc + (uint32_t)((int32_t)(int16_t)(a & 0xffff) * (int32_t)(int16_t)(b >> 16));
}
static inline uint32_t edge_smlatb(uint32_t a, uint32_t b, uint32_t acc) {
    return acc + (uint32_t)((int32_t)(int16_t)(a >> 16) * (int32_t)(int16_t)(b & 0xffff));
}
static inline int32_t edge_smmlar(int32_t a, int32_t b, int32_t acc) {
    /* the instruction's 64-bit sum, modulo 2^64 as the hardware does it */
    uint64_t v = ((uint64_t)(uint32_t)acc << 32) + (uint64_t)((int64_t)a * (int64_t)b) + 0x80000000u;
    return (int32_t)(uint32_t)(v >> 32);
}
#else
#define EDGE_DSP 0
#endif

#if EDGE_DSP
/* A word at any address: LDR / STR take unaligned addresses on v7E-M (not LDRD / LDM: the compiler keeps these
 * single); the emulated build copies with memcpy. */
#if EDGE_DSP_ASM
typedef uint32_t __attribute__((aligned(1), may_alias)) edge_word_t;
static inline uint32_t edge_get32(const void *p) { return *(const edge_word_t *)p; }
static inline void edge_put32(void *p, uint32_t v) { *(edge_word_t *)p = v; }
#else
#include <string.h>
static inline uint32_t edge_get32(const void *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline void edge_put32(void *p, uint32_t v) { memcpy(p, &v, 4); }
#endif
#endif

#if EDGE_DSP
/* Two int8 dot products sharing one int8 vector: s0 = sum_i (x[i] + off) * w0[i], s1 likewise with w1, i < n,
 * wrapping int32 sums (the portable loops' uint32 sums); off (a negated zero point) in [-127, 128] or 0, so
 * x + off fits an int16 half. Per four values: one LDR and two SXTAB16 (the offset added in both halves) of x,
 * per row one LDR, two SXTB16 and two SMLAD: 13 instructions per 8 MACs. Rows of TRANSPOSE_CONV's scatter and
 * of the int8 LSTM's gate matrices (w1 = w0 for a lone last row). */
static inline void edge_dot2_s8(const int8_t *x, const int8_t *w0, const int8_t *w1, int32_t n, int32_t off,
                                uint32_t *s0, uint32_t *s1) {
    const uint32_t off2 = (uint32_t)(uint16_t)off * 0x10001u;
    uint32_t a = 0, b = 0;
    int32_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        const uint32_t xv = edge_get32(x + i), v0 = edge_get32(w0 + i), v1 = edge_get32(w1 + i);
        const uint32_t xa = edge_sxtab16(off2, xv), xb = edge_sxtab16_ror8(off2, xv);
        a = edge_smlad(xa, edge_sxtb16(v0), a);
        a = edge_smlad(xb, edge_sxtb16_ror8(v0), a);
        b = edge_smlad(xa, edge_sxtb16(v1), b);
        b = edge_smlad(xb, edge_sxtb16_ror8(v1), b);
    }
    for (; i < n; i++) {
        a += (uint32_t)((x[i] + off) * w0[i]);
        b += (uint32_t)((x[i] + off) * w1[i]);
    }
    *s0 = a;
    *s1 = b;
}

/* The int8 vector x[0..n) (n a multiple of 4) widened for edge_dot4_xw_s8: per four values the two halfword pairs
 * SMLAD takes, (x0, x2) then (x1, x3) (SXTB16 and SXTB16 ROR 8 of the word), 2n int16 in all. */
static inline void edge_widen4_s8(const int8_t *x, int16_t *out, int32_t n) {
    int32_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        const uint32_t v = edge_get32(x + i);
        edge_put32(out + i, edge_sxtb16(v));
        edge_put32(out + i + 2, edge_sxtb16_ror8(v));
    }
}

/* The asm loops below take 12-13 registers: inlined into a large function, gcc may find too few free ("impossible
 * constraints", seen with -Os and flatten); out of line they always have them (a call per row group: ~10
 * instructions). */
#if EDGE_DSP_ASM
#define EDGE_DOT_FN static __attribute__((noinline, unused))
#else
#define EDGE_DOT_FN static inline
#endif

/* Two int8 vectors x0[0..n), x1[0..n) (n a multiple of 4) widened together for edge_dot2x2_s8: per four values
 * x0's two halfword pairs (edge_widen4_s8's), then x1's; 4n int16 in all. */
static inline void edge_widen2_s8(const int8_t *x0, const int8_t *x1, int16_t *out, int32_t n) {
    int32_t i;
    for (i = 0; i + 4 <= n; i += 4, out += 8) {
        const uint32_t v0 = edge_get32(x0 + i), v1 = edge_get32(x1 + i);
        edge_put32(out, edge_sxtb16(v0));
        edge_put32(out + 2, edge_sxtb16_ror8(v0));
        edge_put32(out + 4, edge_sxtb16(v1));
        edge_put32(out + 6, edge_sxtb16_ror8(v1));
    }
}

/* Two int8 rows against two vectors (edge_widen2_s8's xw, n a multiple of 4), added onto s[0..3] (wrapping int32):
 * s[0] += w0 . x0, s[1] += w1 . x0, s[2] += w0 . x1, s[3] += w1 . x1; no offset (folded into s by the caller).
 * Each weight word is widened once for both vectors: per four values two LDRD of x, per row one LDR, two SXTB16
 * and four SMLAD: 17.5 instructions per 16 MACs with the loop's (unrolled twice). The int8 LSTM's input products of
 * two time steps. */
EDGE_DOT_FN void edge_dot2x2_s8(const int16_t *xw, const int8_t *w0, const int8_t *w1, int32_t n, uint32_t s[4]) {
    uint32_t a0 = s[0], b0 = s[1], a1 = s[2], b1 = s[3];
    const int16_t *const end = xw + 2 * n;
#if EDGE_DSP_ASM
    /* one block: 13 registers (x, two rows, four sums, six temporaries; the end on the stack, as edge_dot4_xw_s8): out
     * of line (EDGE_DOT_FN) every optimizing build finds them, -O0's frame pointer leaves one short */
    if (xw != end) {
        uint32_t xa, xb, ya, yb, v, t = (uint32_t)(uintptr_t)end;
#define EDGE_DOT2X2_CHUNK                                                                                   \
    "ldrd %[xa], %[xb], [%[x]], #16\n\t"                                                                    \
    "ldrd %[ya], %[yb], [%[x], #-8]\n\t"                                                                    \
    "ldr %[v], [%[w0]], #4\n\t"                                                                             \
    "sxtb16 %[t], %[v]\n\t"                                                                                 \
    "sxtb16 %[v], %[v], ror #8\n\t"                                                                         \
    "smlad %[a0], %[xa], %[t], %[a0]\n\t"                                                                   \
    "smlad %[a0], %[xb], %[v], %[a0]\n\t"                                                                   \
    "smlad %[a1], %[ya], %[t], %[a1]\n\t"                                                                   \
    "smlad %[a1], %[yb], %[v], %[a1]\n\t"                                                                   \
    "ldr %[v], [%[w1]], #4\n\t"                                                                             \
    "sxtb16 %[t], %[v]\n\t"                                                                                 \
    "sxtb16 %[v], %[v], ror #8\n\t"                                                                         \
    "smlad %[b0], %[xa], %[t], %[b0]\n\t"                                                                   \
    "smlad %[b0], %[xb], %[v], %[b0]\n\t"                                                                   \
    "smlad %[b1], %[ya], %[t], %[b1]\n\t"                                                                   \
    "smlad %[b1], %[yb], %[v], %[b1]\n\t"
        __asm__ volatile("strd %[t], %[t], [sp, #-8]!\n\t" /* the end, in the stack slot the loop reads */
                         "sub %[v], %[t], %[x]\n\t"
                         "tst %[v], #16\n\t" /* an odd number of 4-column chunks: enter at the second */
                         "bne 2f\n\t"
                         "1:\n\t" EDGE_DOT2X2_CHUNK "2:\n\t" EDGE_DOT2X2_CHUNK
                         "ldr %[t], [sp]\n\t"
                         "cmp %[x], %[t]\n\t"
                         "bne 1b\n\t"
                         "add sp, sp, #8\n\t"
                         : [x] "+r"(xw), [w0] "+r"(w0), [w1] "+r"(w1), [a0] "+r"(a0), [b0] "+r"(b0), [a1] "+r"(a1),
                           [b1] "+r"(b1), [xa] "=&r"(xa), [xb] "=&r"(xb), [ya] "=&r"(ya), [yb] "=&r"(yb), [v] "=&r"(v),
                           [t] "+&r"(t)
                         :
                         : "cc", "memory");
#undef EDGE_DOT2X2_CHUNK
    }
#else
    for (; xw != end; xw += 8) {
        const uint32_t xa = edge_get32(xw), xb = edge_get32(xw + 2), ya = edge_get32(xw + 4), yb = edge_get32(xw + 6);
        uint32_t v = edge_get32(w0);
        a0 = edge_smlad(xb, edge_sxtb16_ror8(v), edge_smlad(xa, edge_sxtb16(v), a0));
        a1 = edge_smlad(yb, edge_sxtb16_ror8(v), edge_smlad(ya, edge_sxtb16(v), a1));
        v = edge_get32(w1);
        b0 = edge_smlad(xb, edge_sxtb16_ror8(v), edge_smlad(xa, edge_sxtb16(v), b0));
        b1 = edge_smlad(yb, edge_sxtb16_ror8(v), edge_smlad(ya, edge_sxtb16(v), b1));
        w0 += 4;
        w1 += 4;
    }
#endif
    s[0] = a0;
    s[1] = b0;
    s[2] = a1;
    s[3] = b1;
}

/* Four int8 dot products sharing one vector, added onto s[0..3]: s[r] += sum_i x[i] * wr[i], i < n (n a multiple
 * of 4), wrapping int32 sums, with x given widened (edge_widen4_s8: xw); no offset (the caller folds the zero point
 * into s: sum (x - zp) w = sum x w - zp sum w). Per four values: one LDRD of x, per row one LDR, two SXTB16 and two
 * SMLAD, one LDR of the fourth row's offset: 23.5 instructions per 16 MACs with the loop's (unrolled twice). The
 * int8 LSTM's four gate rows of one unit. */
EDGE_DOT_FN void edge_dot4_xw_s8(const int16_t *xw, const int8_t *w0, const int8_t *w1, const int8_t *w2, const int8_t *w3,
                                 int32_t n, uint32_t s[4]) {
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3];
    const int16_t *const end = xw + n;
#if EDGE_DSP_ASM
    /* one block in 12 registers (x, three row pointers, four sums, four temporaries; the end and the fourth
     * row's distance from the third pushed on the stack on entry, read back per 32 / 16 MACs), so that the
     * compiler spills nothing inside it (its C form kept three row pointers on the stack: 31 instructions per 16
     * MACs); 12, not 13: they fit with a frame pointer too (-O0) */
    if (xw != end) {
        uint32_t xa, xb, v = (uint32_t)((uintptr_t)w3 - (uintptr_t)w2), t = (uint32_t)(uintptr_t)end;
#define EDGE_DOT4_CHUNK                                                                                     \
    "ldrd %[xa], %[xb], [%[x]], #8\n\t"                                                                     \
    "ldr %[v], [%[w0]], #4\n\t"                                                                             \
    "sxtb16 %[t], %[v]\n\t"                                                                                 \
    "sxtb16 %[v], %[v], ror #8\n\t"                                                                         \
    "smlad %[a], %[xa], %[t], %[a]\n\t"                                                                     \
    "smlad %[a], %[xb], %[v], %[a]\n\t"                                                                     \
    "ldr %[v], [%[w1]], #4\n\t"                                                                             \
    "sxtb16 %[t], %[v]\n\t"                                                                                 \
    "sxtb16 %[v], %[v], ror #8\n\t"                                                                         \
    "smlad %[b], %[xa], %[t], %[b]\n\t"                                                                     \
    "smlad %[b], %[xb], %[v], %[b]\n\t"                                                                     \
    "ldr %[t], [sp, #4]\n\t" /* row 3 at row 2's address + (w3 - w2) */                                    \
    "ldr %[v], [%[w2], %[t]]\n\t"                                                                           \
    "sxtb16 %[t], %[v]\n\t"                                                                                 \
    "sxtb16 %[v], %[v], ror #8\n\t"                                                                         \
    "smlad %[d], %[xa], %[t], %[d]\n\t"                                                                     \
    "smlad %[d], %[xb], %[v], %[d]\n\t"                                                                     \
    "ldr %[v], [%[w2]], #4\n\t"                                                                             \
    "sxtb16 %[t], %[v]\n\t"                                                                                 \
    "sxtb16 %[v], %[v], ror #8\n\t"                                                                         \
    "smlad %[c], %[xa], %[t], %[c]\n\t"                                                                     \
    "smlad %[c], %[xb], %[v], %[c]\n\t"
        __asm__ volatile("strd %[t], %[v], [sp, #-8]!\n\t" /* the end and w3 - w2, in the slots the loop reads */
                         "sub %[v], %[t], %[x]\n\t"
                         "tst %[v], #8\n\t" /* an odd number of 4-column chunks: enter at the second */
                         "bne 2f\n\t"
                         "1:\n\t" EDGE_DOT4_CHUNK "2:\n\t" EDGE_DOT4_CHUNK
                         "ldr %[t], [sp]\n\t"
                         "cmp %[x], %[t]\n\t"
                         "bne 1b\n\t"
                         "add sp, sp, #8\n\t"
                         : [x] "+r"(xw), [w0] "+r"(w0), [w1] "+r"(w1), [w2] "+r"(w2), [a] "+r"(a), [b] "+r"(b),
                           [c] "+r"(c), [d] "+r"(d), [xa] "=&r"(xa), [xb] "=&r"(xb), [v] "+&r"(v), [t] "+&r"(t)
                         :
                         : "cc", "memory");
#undef EDGE_DOT4_CHUNK
    }
#else
    for (; xw != end; xw += 4) {
        const uint32_t xa = edge_get32(xw), xb = edge_get32(xw + 2);
        uint32_t v = edge_get32(w0);
        a = edge_smlad(xa, edge_sxtb16(v), a);
        a = edge_smlad(xb, edge_sxtb16_ror8(v), a);
        v = edge_get32(w1);
        b = edge_smlad(xa, edge_sxtb16(v), b);
        b = edge_smlad(xb, edge_sxtb16_ror8(v), b);
        v = edge_get32(w2);
        c = edge_smlad(xa, edge_sxtb16(v), c);
        c = edge_smlad(xb, edge_sxtb16_ror8(v), c);
        v = edge_get32(w3);
        d = edge_smlad(xa, edge_sxtb16(v), d);
        d = edge_smlad(xb, edge_sxtb16_ror8(v), d);
        w0 += 4;
        w1 += 4;
        w2 += 4;
        w3 += 4;
    }
#endif
    s[0] = a;
    s[1] = b;
    s[2] = c;
    s[3] = d;
}
#endif

#if EDGE_DSP
/* EDGE_DOT4_WORD: one input word (4 int8, x0..x3) against the same word of the four slot rows (slot 0 at [wa], 1 at
 * [wa + st], 2 at [w2], 3 at [w2 + st]): SXTAB16 widens (x0, x2) and (x1, x3) and adds the input offset to both
 * halves in the same instruction, SXTB16 widens each weight word the same way, SMLAD does two MACs: 23
 * instructions per 16 MACs. */
#define EDGE_DOT4_WORD                                                                                              \
    "ldr %[xv], [%[xp]], #4\n\t"                                                                             \
    "sxtab16 %[xo], %[off2], %[xv], ror #8\n\t"                                                              \
    "sxtab16 %[xv], %[off2], %[xv]\n\t"                                                                      \
    "ldr %[wv], [%[wa], %[st]]\n\t"                                                                          \
    "sxtb16 %[t], %[wv]\n\t"                                                                                 \
    "smlad %[s1], %[t], %[xv], %[s1]\n\t"                                                                    \
    "sxtb16 %[t], %[wv], ror #8\n\t"                                                                         \
    "smlad %[s1], %[t], %[xo], %[s1]\n\t"                                                                    \
    "ldr %[wv], [%[w2], %[st]]\n\t"                                                                          \
    "sxtb16 %[t], %[wv]\n\t"                                                                                 \
    "smlad %[s3], %[t], %[xv], %[s3]\n\t"                                                                    \
    "sxtb16 %[t], %[wv], ror #8\n\t"                                                                         \
    "smlad %[s3], %[t], %[xo], %[s3]\n\t"                                                                    \
    "ldr %[wv], [%[w2]], #4\n\t"                                                                             \
    "sxtb16 %[t], %[wv]\n\t"                                                                                 \
    "smlad %[s2], %[t], %[xv], %[s2]\n\t"                                                                    \
    "sxtb16 %[t], %[wv], ror #8\n\t"                                                                         \
    "smlad %[s2], %[t], %[xo], %[s2]\n\t"                                                                    \
    "ldr %[wv], [%[wa]], #4\n\t"                                                                             \
    "sxtb16 %[t], %[wv]\n\t"                                                                                 \
    "smlad %[s0], %[t], %[xv], %[s0]\n\t"                                                                    \
    "sxtb16 %[t], %[wv], ror #8\n\t"                                                                         \
    "smlad %[s0], %[t], %[xo], %[s0]\n\t"

/* Four int8 dot products sharing one int8 vector (FULLY_CONNECTED's four units, SVDF's four filters): s[j] += sum
 * over k < d4 of (x[k] + off) * slot j's row[k], d4 % 4 == 0 (the caller does the tail); slots 0..3 at w0, w0 + st,
 * w2, w2 + st (st 0: all four the same row). |off| <= 32640: x + off fits an int16 half. Wrapping int32 sums.
 * Callers inline it into a noinline function of its own: inlined into a larger loop, the 13-register asm leaves the
 * compiler no registers. */
static inline void edge_dot4_s8(const int8_t *x, int32_t d4, int32_t off, const int8_t *w0, const int8_t *w2, int32_t st,
                     uint32_t *s) {
    uint32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
    const uint32_t off2 = (uint32_t)(uint16_t)off * 0x10001u;
#if EDGE_DSP_ASM
    if (d4 > 0) {
        /* two words a pass (d4 / 4 odd: entered at the second); 13 registers, the loop's end in memory:
         * 2 x 23 + 3 instructions per 32 MACs */
        const int8_t *xp = x, *const xend = x + d4;
        uint32_t xv, xo, wv, t = (uint32_t)(d4 >> 2) & 1u;
        __asm__ volatile("cbnz %[t], 2f\n\t"
                         "1:\n\t" EDGE_DOT4_WORD "2:\n\t" EDGE_DOT4_WORD
                         "ldr %[t], %[xend]\n\t"
                         "cmp %[xp], %[t]\n\t"
                         "bne 1b"
                         : [xp] "+&r"(xp), [wa] "+&r"(w0), [w2] "+&r"(w2), [s0] "+&r"(s0), [s1] "+&r"(s1),
                           [s2] "+&r"(s2), [s3] "+&r"(s3), [xv] "=&r"(xv), [xo] "=&r"(xo), [wv] "=&r"(wv),
                           [t] "+&l"(t)
                         : [st] "r"(st), [off2] "r"(off2), [xend] "m"(xend)
                         : "cc", "memory");
    }
#else
    int32_t k;
    for (k = 0; k < d4; k += 4) { /* EDGE_DOT4_WORD's instructions */
        uint32_t xv, xo, wv;
        memcpy(&xv, x + k, 4);
        xo = edge_sxtab16_ror8(off2, xv);
        xv = edge_sxtab16(off2, xv);
        memcpy(&wv, w0 + st + k, 4);
        s1 = edge_smlad(edge_sxtb16_ror8(wv), xo, edge_smlad(edge_sxtb16(wv), xv, s1));
        memcpy(&wv, w2 + st + k, 4);
        s3 = edge_smlad(edge_sxtb16_ror8(wv), xo, edge_smlad(edge_sxtb16(wv), xv, s3));
        memcpy(&wv, w2 + k, 4);
        s2 = edge_smlad(edge_sxtb16_ror8(wv), xo, edge_smlad(edge_sxtb16(wv), xv, s2));
        memcpy(&wv, w0 + k, 4);
        s0 = edge_smlad(edge_sxtb16_ror8(wv), xo, edge_smlad(edge_sxtb16(wv), xv, s0));
    }
#endif
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}
#undef EDGE_DOT4_WORD
#endif

/* One channel's requantization plus the output zero point: y = edge_mbqm(x, multiplier, shift) + zp for
 * the common case of a multiplier in [2^30, 2^31) with a right shift of 2..31 (every real multiplier in
 * [2^-32, 0.25), and a zero multiplier). Three steps, two of them SMMLAR on DSP cores:
 *   h  = floor((x * multiplier + 2^30) / 2^31)   gemmlowp's doubling high multiply (its nudged truncating
 *        division equals this floor for both signs; its one saturating case needs multiplier == INT32_MIN).
 *        SMMLAR(x, m2, x) with m2 = 2 * multiplier - 2^32 (the int32 wrap): (x << 32) + x * m2 + 2^31 =
 *        2 * x * multiplier + 2^31, whose high word is h.
 *   h' = h - (h < 0)                              (h > INT32_MIN always, so this cannot wrap)
 *   y  = zp + floor((h' + 2^(rs-1)) / 2^rs)       gemmlowp's rounding divide (halves away from zero: the
 *        -1 for negatives turns the round-half-up into it). SMMLAR(h', 2^(32-rs), zp): the scaled
 *        numerator h' * 2^(32-rs) + 2^31 over 2^32, plus zp in the high word. A zero multiplier gets
 *        2^(32-rs) := 0, so y = zp, as edge_mbqm's 0 + zp.
 * edge_rq_make returns -1 for other multipliers (a right shift of 0 or 1, a left shift, a negative
 * multiplier): the kernels keep edge_mbqm for such a layer. */
typedef struct {
    int32_t mul; /* DSP: 2 * multiplier (wrapped); plain C: multiplier */
    int32_t rnd; /* DSP: 2^(32 - rs), 0 for a zero multiplier; plain C: rs */
} edge_rq_t;

static inline int edge_rq_make(edge_rq_t *q, int32_t multiplier, int32_t shift) {
    if (multiplier < 0 || (multiplier > 0 && (multiplier < (1 << 30) || shift > -2 || shift < -31))) return -1;
#if EDGE_DSP
    q->mul = (int32_t)((uint32_t)multiplier << 1);
    q->rnd = multiplier == 0 ? 0 : (int32_t)((uint32_t)1 << (32 + shift));
#else
    q->mul = multiplier;
    q->rnd = multiplier == 0 ? 2 : -shift;
#endif
    return 0;
}

static inline int32_t edge_rq_apply(const edge_rq_t *q, int32_t acc, int32_t zp) {
#if EDGE_DSP
    int32_t h = edge_smmlar(acc, q->mul, acc);
    h += h >> 31; /* arithmetic shift, as on every compiler we use */
    return edge_smmlar(h, q->rnd, zp);
#else
    int32_t h = (int32_t)(((int64_t)acc * q->mul + ((int64_t)1 << 30)) >> 31);
    h += h >> 31;
    return zp + (int32_t)(((int64_t)h + ((int64_t)1 << (q->rnd - 1))) >> q->rnd);
#endif
}

/* A layer's edge_rq_t values kept compact, 5 bytes a channel: rq[0..n) the mul fields, then n bytes e[i]
 * (DSP: rnd = 2^30 >> e, e = 31 for rnd 0 (one shift to rebuild, no branch); plain C: e = rnd, the right
 * shift). edge_rq_pack stores channel i, edge_rq_at rebuilds it. */
static inline void edge_rq_pack(int32_t *rq, int32_t n, int32_t i, const edge_rq_t *q) {
    int8_t *e = (int8_t *)(rq + n);
    int32_t k = 0;
    rq[i] = q->mul;
#if EDGE_DSP
    if (q->rnd == 0) k = 31;
    while (k < 31 && ((uint32_t)1 << (30 - k)) != (uint32_t)q->rnd) k++; /* rnd = 2^(32 - rs), rs in 2..31 */
#else
    k = q->rnd;
#endif
    e[i] = (int8_t)k;
}

static inline edge_rq_t edge_rq_at(const int32_t *rq, int32_t n, int32_t i) {
    edge_rq_t q;
    const int32_t k = ((const int8_t *)(rq + n))[i];
    q.mul = rq[i];
#if EDGE_DSP
    q.rnd = (int32_t)((uint32_t)0x40000000u >> k);
#else
    q.rnd = k;
#endif
    return q;
}

#if EDGE_DSP
/* Four int8 lanes' maxima / minima of two words: SSUB8 sets each lane's GE flag (a >= b), SEL picks the lane from
 * a where it is set, else from b (two instructions; the flags never leave the asm block). MAX_POOL_2D's window
 * maxima and the fused-activation clamps of the int8 element-wise rows. */
#if EDGE_DSP_ASM
static inline uint32_t edge_smax8(uint32_t a, uint32_t b) {
    uint32_t r, t;
    __asm__("ssub8 %1, %2, %3\n\tsel %0, %2, %3" : "=r"(r), "=&r"(t) : "r"(a), "r"(b) : "cc");
    return r;
}
static inline uint32_t edge_smin8(uint32_t a, uint32_t b) {
    uint32_t r, t;
    __asm__("ssub8 %1, %2, %3\n\tsel %0, %3, %2" : "=r"(r), "=&r"(t) : "r"(a), "r"(b) : "cc");
    return r;
}
#else
static inline uint32_t edge_smax8(uint32_t a, uint32_t b) {
    uint32_t r = 0;
    int k;
    for (k = 0; k < 32; k += 8) {
        const int8_t x = (int8_t)(a >> k), y = (int8_t)(b >> k);
        r |= (uint32_t)(uint8_t)(x >= y ? x : y) << k;
    }
    return r;
}
static inline uint32_t edge_smin8(uint32_t a, uint32_t b) {
    uint32_t r = 0;
    int k;
    for (k = 0; k < 32; k += 8) {
        const int8_t x = (int8_t)(a >> k), y = (int8_t)(b >> k);
        r |= (uint32_t)(uint8_t)(x >= y ? y : x) << k;
    }
    return r;
}
#endif
#endif

/* dst[0..n) = src[0..n), the two apart: the block copies of activations (READ_VARIABLE / ASSIGN_VARIABLE,
 * STRIDED_SLICE's contiguous runs, CONCATENATION's blocks, RESHAPE's copy, PAD's rows). newlib-nano's memcpy takes
 * ~1.3 instructions a byte on the M4 (hey_jarvis's 1,200-byte ring buffer: 1,600). On the M4 / M7: eight words
 * per LDM / STM pair while both are word aligned (four instructions per 32 bytes), then four unaligned words a
 * step (a ring buffer's slice starts one row of C bytes in: C = 30), then words, then bytes. Other builds:
 * memcpy. */
static inline void edge_copy_bytes(void *dst, const void *src, size_t n) {
#if EDGE_DSP_ASM
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    if (n >= 32 && (((uintptr_t)d | (uintptr_t)s) & 3u) == 0) {
        size_t blocks = n >> 5;
        n &= 31u;
        __asm__ volatile("1:\n\t"
                         "ldmia %[s]!, {r4, r5, r6, r8, r9, r10, r11, r12}\n\t"
                         "stmia %[d]!, {r4, r5, r6, r8, r9, r10, r11, r12}\n\t"
                         "subs %[k], %[k], #1\n\t"
                         "bne 1b"
                         : [s] "+&r"(s), [d] "+&r"(d), [k] "+&r"(blocks)
                         :
                         : "r4", "r5", "r6", "r8", "r9", "r10", "r11", "r12", "cc", "memory");
    }
    for (; n >= 16; n -= 16, s += 16, d += 16) {
        const uint32_t a = edge_get32(s), b = edge_get32(s + 4), c = edge_get32(s + 8), e = edge_get32(s + 12);
        edge_put32(d, a);
        edge_put32(d + 4, b);
        edge_put32(d + 8, c);
        edge_put32(d + 12, e);
    }
    for (; n >= 4; n -= 4, s += 4, d += 4) edge_put32(d, edge_get32(s));
    while (n--) *d++ = *s++;
#else
    memcpy(dst, src, n);
#endif
}

#endif /* EDGE_DSP_H */
