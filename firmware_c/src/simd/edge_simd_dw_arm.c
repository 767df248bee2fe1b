/* edge_simd_dw_arm.c - the aarch64 side of edge_simd_dw_x86.c's functions (SOFTMAX float32, RESIZE_BILINEAR rows,
 * the float32 / int8 sums of MEAN / SUM over H, W, 16-lane int8 ADD / SUB, float32 and int8 DEPTHWISE_CONV_2D 3x3 / 5x5): not written for NEON yet, so every level answers 0 (no such path) and
 * the kernels keep their portable loops on aarch64 (the same results as the x86-64 fast paths: those are the
 * portable kernels' bits, SOFTMAX within 1e-6).
 */
#include "edge_simd.h"

#if EDGE_SIMD && defined(__aarch64__)
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
int32_t edge_simd_lut8(int32_t level, const uint8_t *lut, const uint8_t *x, uint8_t *y, int64_t n) {
    (void)level, (void)lut, (void)x, (void)y, (void)n;
    return 0;
}
#endif
