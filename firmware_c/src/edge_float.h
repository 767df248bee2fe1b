/* edge_float.h - what the float32 kernels share: eight dot products against one vector at once.
 *
 * ef_dot8 adds to acc[j] the dot product of v with row w[j] (n elements), j < 8, each summed in order from 0
 * (k = 0, 1, ...: the plain loop's rounding, so the results keep their bytes, on every target whose libm
 * agrees; a reordered sum would move the transcendental functions' inputs to where glibc's tanhf differs
 * between x86-64 and aarch64), with v read once for the eight rows: eight independent sums in flight instead
 * of one dependent chain. Callers with fewer rows repeat one (and ignore its extra sums).
 */
#ifndef EDGE_FLOAT_H
#define EDGE_FLOAT_H

#include <stdint.h>

static inline void ef_dot8(const float *v, const float *const w[8], int32_t n, float acc[8]) {
    const float *w0 = w[0], *w1 = w[1], *w2 = w[2], *w3 = w[3], *w4 = w[4], *w5 = w[5], *w6 = w[6], *w7 = w[7];
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f, s5 = 0.0f, s6 = 0.0f, s7 = 0.0f;
    int32_t k;
    for (k = 0; k < n; k++) {
        const float x = v[k];
        s0 += x * w0[k];
        s1 += x * w1[k];
        s2 += x * w2[k];
        s3 += x * w3[k];
        s4 += x * w4[k];
        s5 += x * w5[k];
        s6 += x * w6[k];
        s7 += x * w7[k];
    }
    acc[0] += s0;
    acc[1] += s1;
    acc[2] += s2;
    acc[3] += s3;
    acc[4] += s4;
    acc[5] += s5;
    acc[6] += s6;
    acc[7] += s7;
}

#endif /* EDGE_FLOAT_H */
