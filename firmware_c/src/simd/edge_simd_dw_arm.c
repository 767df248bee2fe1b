/* edge_simd_dw_arm.c - the aarch64 side of edge_simd_dw_x86.c's functions (SOFTMAX float32, RESIZE_BILINEAR rows,
 * the float32 / int8 sums of MEAN / SUM over H, W, 16-lane int8 ADD / SUB, float32 and int8 DEPTHWISE_CONV_2D 3x3 /
 * 5x5): not written for NEON yet (the 8-bit tables are: edge_simd_lut8), so those levels answer 0 (no such path) and
 * the kernels keep their portable loops on aarch64 (the same results as the x86-64 fast paths: those are the
 * portable kernels' bits, SOFTMAX within 1e-6).
 */
#include "edge_simd.h"

#if EDGE_SIMD && defined(__aarch64__)
#include <arm_neon.h>

int32_t edge_simd_softmax_f32(int32_t level, const float *x, int32_t n, float beta, float *y) {
    (void)level, (void)x, (void)n, (void)beta, (void)y;
    return 0;
}

int32_t edge_simd_resize_row_f32(int32_t level, const float *r0, const float *r1, const int32_t *cols, const float *fx,
                                 int32_t out_w, int32_t ch, float wy1, float *y) {
    (void)level, (void)r0, (void)r1, (void)cols, (void)fx, (void)out_w, (void)ch, (void)wy1, (void)y;
    return 0;
}

int32_t edge_simd_resize_row_q8(int32_t level, const int8_t *r0, const int8_t *r1, const int32_t *cols,
                                const int32_t *fx, int32_t out_w, int32_t ch, int32_t fy, int8_t *y) {
    (void)level, (void)r0, (void)r1, (void)cols, (void)fx, (void)out_w, (void)ch, (void)fy, (void)y;
    return 0;
}

int32_t edge_simd_sum_hw_f32(int32_t level, const float *x, int64_t hw, int64_t stride, int32_t c, int32_t mean,
                             float *sums) {
    (void)level, (void)x, (void)hw, (void)stride, (void)c, (void)mean, (void)sums;
    return 0;
}

int32_t edge_simd_sum_hw_q8(int32_t level, const int8_t *x, int64_t hw, int64_t stride, int32_t c, int32_t *sums) {
    (void)level, (void)x, (void)hw, (void)stride, (void)c, (void)sums;
    return 0;
}

int32_t edge_simd_addsub_q8_wide(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                                 int32_t n, const int32_t *p) {
    (void)level, (void)a, (void)sa, (void)b, (void)sb, (void)y, (void)n, (void)p;
    return 0;
}

int32_t edge_simd_mul_q8_wide(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                              int32_t n, const int32_t *p) {
    (void)level, (void)a, (void)sa, (void)b, (void)sb, (void)y, (void)n, (void)p;
    return 0;
}

int32_t edge_simd_rq_sums_q8(int32_t level, const int32_t *sums, int32_t n, int32_t offset, int32_t m, int32_t shift,
                             int32_t zp, int32_t lo, int32_t hi, int8_t *y) {
    (void)level, (void)sums, (void)n, (void)offset, (void)m, (void)shift, (void)zp, (void)lo, (void)hi, (void)y;
    return 0;
}

int32_t edge_simd_dw_3x3_5x5_f32(int32_t level, const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias,
                            int32_t oy0, int32_t oy1, float *y) {
    (void)level, (void)p, (void)x, (void)wt, (void)bias, (void)oy0, (void)oy1, (void)y;
    return 0;
}

int32_t edge_simd_dw_q8_3x3_5x5(int32_t level, const edge_simd_dwf_t *p, const int8_t *x, const int16_t *wt,
                                const int32_t *bias, const int32_t *mul, const int32_t *rs, int32_t input_offset,
                                int32_t zp, int32_t lo, int32_t hi, int32_t oy0, int32_t oy1, int8_t *y) {
    (void)level, (void)p, (void)x, (void)wt, (void)bias, (void)mul, (void)rs, (void)input_offset, (void)zp, (void)lo;
    (void)hi, (void)oy0, (void)oy1, (void)y;
    return 0;
}
/* y[i] = lut[x[i]], 16 bytes a step: TBL looks the lanes up in the table's first 64 bytes (0 past them), three TBX
 * in the next quarters at x - 64, x - 128, x - 192 (a lane out of a quarter's range keeps its value): every NEON
 * core (the Pi 4's Cortex-A72 too), the same bytes. */
static void lut8_neon(const uint8_t *lut, const uint8_t *x, uint8_t *y, int64_t n) {
    uint8x16x4_t t[4];
    const uint8x16_t step = vdupq_n_u8(64);
    int64_t i;
    int32_t q, k;
    for (q = 0; q < 4; q++)
        for (k = 0; k < 4; k++) t[q].val[k] = vld1q_u8(lut + 64 * q + 16 * k);
    for (i = 0; i + 16 <= n; i += 16) {
        uint8x16_t v = vld1q_u8(x + i), r = vqtbl4q_u8(t[0], v);
        v = vsubq_u8(v, step);
        r = vqtbx4q_u8(r, t[1], v);
        v = vsubq_u8(v, step);
        r = vqtbx4q_u8(r, t[2], v);
        v = vsubq_u8(v, step);
        vst1q_u8(y + i, vqtbx4q_u8(r, t[3], v));
    }
    for (; i < n; i++) y[i] = lut[x[i]];
}

int32_t edge_simd_lut8(int32_t level, const uint8_t *lut, const uint8_t *x, uint8_t *y, int64_t n) {
    if (level < EDGE_SIMD_ARM_NEON) return 0;
    if (n > 0) lut8_neon(lut, x, y, n);
    return 1;
}
#endif
