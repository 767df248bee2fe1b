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

#if EDGE_DSP
/* n bytes from src to dst, the two apart: on the M4/M7 eight words per LDM / STM pair while both are word aligned
 * (four instructions per 32 bytes), then four unaligned words a step, then bytes; newlib's memcpy / memmove on
 * these boards take about 1.3 instructions a byte (RESHAPE's copy, PAD's rows). The emulated build: memcpy. */
static inline void edge_copy_apart(void *dst, const void *src, size_t n) {
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
#endif

#endif /* EDGE_DSP_H */
