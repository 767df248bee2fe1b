/* edge_dsp.h - the Armv7E-M DSP-extension instructions the int8 convolution kernels use.
 *
 * On cores with the DSP extension (Cortex-M4/M7/M33: __ARM_FEATURE_DSP) these are one instruction each;
 * with EDGE_EMULATE_DSP defined (host builds) they are C versions of the same instructions, so the host
 * tests run the very code path the firmware runs. EDGE_DSP says whether either is available (0: the kernels
 * use their plain C loops).
 *   edge_sxtb16(x)       bytes 0 and 2 of x, sign-extended into two int16 halves
 *   edge_sxtb16_ror8(x)  bytes 1 and 3 likewise (x rotated right by 8 first)
 *   edge_sadd16(a, b)    two int16 sums (halves wrap independently)
 *   edge_smlad(a, b, c)  c + a.lo * b.lo + a.hi * b.hi (int16 halves, wrapping int32)
 *   edge_smlabb / edge_smlatt(a, b, c)  c + a.lo * b.lo / c + a.hi * b.hi
 */
#ifndef EDGE_DSP_H
#define EDGE_DSP_H

#include <stdint.h>

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#define EDGE_DSP 1
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
#else
#define EDGE_DSP 0
#endif

#endif /* EDGE_DSP_H */
