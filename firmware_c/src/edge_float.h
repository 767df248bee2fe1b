/* edge_float.h - what the float32 kernels share: four dot products against one vector at once.
 *
 * ef_dot4 adds to acc[j] the dot product of v with row w[j] (n elements), for j = 0..3: v is read once for the
 * four rows, and each product runs in four interleaved partial sums (k mod 4; a host's SIMD register holds
 * them), added pairwise at the end. That order differs from one running sum by rounding only, within the
 * float32 tolerance the peers agree on (TFLM's own float kernels sum in yet other orders).
 */
#ifndef EDGE_FLOAT_H
#define EDGE_FLOAT_H

#include <stdint.h>

static inline void ef_dot4(const float *v, const float *const w[4], int32_t n, float acc[4]) {
    const float *w0 = w[0], *w1 = w[1], *w2 = w[2], *w3 = w[3];
    float p[4][4] = {{0.0f}};
    int32_t k = 0, j;
    for (; k + 4 <= n; k += 4)
        for (j = 0; j < 4; j++) {
            const float x = v[k + j];
            p[0][j] += x * w0[k + j];
            p[1][j] += x * w1[k + j];
            p[2][j] += x * w2[k + j];
            p[3][j] += x * w3[k + j];
        }
    for (; k < n; k++) {
        p[0][0] += v[k] * w0[k];
        p[1][0] += v[k] * w1[k];
        p[2][0] += v[k] * w2[k];
        p[3][0] += v[k] * w3[k];
    }
    for (j = 0; j < 4; j++) acc[j] += (p[j][0] + p[j][1]) + (p[j][2] + p[j][3]);
}

#endif /* EDGE_FLOAT_H */
