/* edge_simd.h - fast paths for 64-bit Linux CPUs (x86-64 AVX2 / AVX-512 VNNI / AMX, aarch64 NEON / SDOT).
 *
 * Compiled only into the host and cross builds (firmware_c/Makefile SIMD_SRC, -DEDGE_WITH_SIMD=1); on
 * microcontrollers (and in builds that do not ask for it) EDGE_SIMD is 0, the functions below do not exist and the kernels keep their portable code, byte for byte.
 *
 * The kernels ask at prepare which level the CPU runs (edge_simd_level: detected once, by cpuid on x86-64
 * and by the kernel's hwcaps on aarch64, capped by edge_simd_set) and keep it in their op data: a model
 * prepared under one level runs that level at every invoke. Level 0 is the portable C kernel.
 *
 * Integer results are bit-exact with the portable kernels (and so with TFLM): the int32 sums are exact in
 * any order (the products and the order of the additions differ, the value does not, modulo 2^32 as the
 * portable code wraps), and every output is requantized with TFLM's double rounding (edge_rq_apply's
 * arithmetic, vectorized lane by lane).
 *
 * int8 GEMM (CONV_2D as im2col / 1x1 directly, FULLY_CONNECTED):
 *     y[m, n] = clamp(zp + rq_n(bias[n] + sum_k (a[m, k] + input_offset) * w[n, k]), lo, hi)
 * a is M rows of raw int8 values (stride lda, K values each; a padding tap holds -input_offset, the input's
 * zero point, so that it adds nothing); w is packed once at prepare (edge_simd_qgemm_pack) with the bias,
 * input_offset * sum_k w[n, k] folded into it and the channels' multipliers beside it. On x86-64 the levels
 * share one packing from AVX-512 VNNI up (16-channel blocks, 4 k values a 64-byte step; the AMX level pads k to
 * 64, a tile's depth): AVX2 runs 4 x 16 tiles of VPMADDWD on int16, AVX-512 VNNI 6 x 64 / 12 x 32 tiles of VPDPBUSD on
 * a + 128 (the input offset's -128 folded into the bias), one row against 128 channels at once; AMX 32 x 32
 * passes of TDPBUSD tiles where at least 8 rows come (fewer: the VNNI tiles).
 */
#ifndef EDGE_SIMD_H
#define EDGE_SIMD_H

#include <stddef.h>
#include <stdint.h>

/* On when the build asks for it (the host and cross builds of the Makefile: -DEDGE_WITH_SIMD=1, src/simd/
 * linked in) on a 64-bit CPU we have fast paths for; never with the emulated DSP path (its edge_rq_t form). */
#if defined(EDGE_WITH_SIMD) && EDGE_WITH_SIMD && (defined(__x86_64__) || defined(__aarch64__)) && \
    defined(__GNUC__) && !defined(EDGE_EMULATE_DSP)
#define EDGE_SIMD 1
#else
#define EDGE_SIMD 0
#endif

#if EDGE_SIMD
enum {
    EDGE_SIMD_NONE = 0,
    EDGE_SIMD_X86_AVX2 = 1,      /* AVX2 + FMA: int16 multiply-add (VPMADDWD) */
    EDGE_SIMD_X86_AVX512VNNI = 2, /* AVX-512 F/BW/VL + VNNI: VPDPBUSD on 512-bit vectors */
    EDGE_SIMD_X86_AMX = 3,       /* level 2 + AMX-TILE / AMX-INT8 granted by the kernel: the int8 GEMM on tiles */
    EDGE_SIMD_ARM_NEON = 1,      /* aarch64 NEON: SMLAL / SADALP on int16 */
    EDGE_SIMD_ARM_DOTPROD = 2    /* ARMv8.2 dot product: SDOT */
};

/* What this CPU can run (0: none): the per-arch probe (edge_simd_x86.c: cpuid; edge_simd_arm.c: hwcaps). */
int32_t edge_simd_cpu_level(void);
/* The level the kernels use (src/simd/edge_simd.c): the probe's, read once, capped by EDGE_SIMD_LEVEL=n in the
 * environment and by edge_simd_set. */
int32_t edge_simd_level(void);
/* Cap the level (tests run every level the CPU has; -1: no cap). Returns the detected level. Takes effect for
 * models prepared afterwards. Exported from libedge.so. */
int32_t edge_simd_set(int32_t cap);

/* Packed int8 GEMM weights for one level. */
typedef struct {
    int32_t level, n, k;
    int32_t zp, lo, hi;
    int32_t npad, kpad;         /* n rounded up to the block, k to the level's step */
    void *packed;               /* persistent: bias[npad] mul[npad] rs[npad] (int32), then the weights */
} edge_simd_qgemm_t;

/* Bytes edge_simd_qgemm_pack needs at `level` (0 when the level has no int8 GEMM). */
size_t edge_simd_qgemm_bytes(int32_t level, int32_t n, int32_t k);
/* For the per-arch edge_simd_qgemm_pack (src/simd/edge_simd.c): fills g and the packed block's bias (with
 * off * sum_k w folded in: the arch's own input offset), multipliers and shifts (rs_sign * rs: arm's SRSHL
 * shifts right by a negative count) for npad channels; returns where the packed weights start. */
void *edge_simd_qgemm_head(edge_simd_qgemm_t *g, int32_t level, const int8_t *w, int32_t n, int32_t k, int32_t ldw,
                           int32_t kstride, const int32_t *bias, int32_t off, const int32_t *mul, int32_t mul_stride,
                           const int32_t *rs, int32_t rs_stride, int32_t rs_sign, int32_t zp, int32_t lo, int32_t hi,
                           int32_t npad, int32_t kpad, void *dst);
/* Work bytes edge_simd_qgemm needs (per thread) for calls of at most `rows` rows of a (0: any count). One row
 * needs one row's bytes: a one-batch FULLY_CONNECTED of k = 4000 asked for a 12-row block (48 KB) it never used. */
size_t edge_simd_qgemm_work(int32_t level, int32_t k, int32_t rows);
/* Fill g (its packed block of edge_simd_qgemm_bytes at dst): w is n int8 rows of k (value i of row c at
 * w[c * ldw + i * kstride]), bias n
 * int32 or NULL, channel c's multiplier mul[c * mul_stride] and right shift rs[c * rs_stride] (edge_rq_make's
 * plain form: mul in [2^30, 2^31) or 0, rs 2..31; stride 0: one for the layer). */
void edge_simd_qgemm_pack(edge_simd_qgemm_t *g, int32_t level, const int8_t *w, int32_t n, int32_t k, int32_t ldw,
                          int32_t kstride, const int32_t *bias, int32_t input_offset, const int32_t *mul, int32_t mul_stride,
                          const int32_t *rs, int32_t rs_stride, int32_t zp, int32_t lo, int32_t hi, void *dst);
/* Rows [0, m) of a (stride lda) against channels [n0, n1) (n0 a multiple of 16), into y[m, ldy] at columns
 * n0..n1. work: edge_simd_qgemm_work bytes (unused, may be NULL, on edge_simd_qgemm_few's path). */
void edge_simd_qgemm(const edge_simd_qgemm_t *g, const int8_t *a, int32_t m, int32_t lda, int32_t n0, int32_t n1,
                     int8_t *y, int32_t ldy, void *work);

/* Whether edge_simd_qgemm packs n channels of k values at `level` for few output channels too (x86-64 AVX-512 VNNI
 * and AMX: n <= 8, k a multiple of 4 up to 64): a call with every column (n0 0, n1 >= n), contiguous rows (lda k)
 * and contiguous outputs (ldy n) then runs a vector of 16 / n2 pixels x n2 channels (n2: n rounded up to a power of
 * two) instead of a 16-channel block per pixel, and needs no work area. Same bytes. 0 elsewhere. */
int32_t edge_simd_qgemm_few(int32_t level, int32_t n, int32_t k);

/* int8 depthwise multiply-accumulate of one output pixel, depth multiplier 1: acc[c] (c < C, int32) +=
 * sum over the taps t of (x_t[c] + input_offset) * w_t[c]; x_t = x + xoff[t], w_t = wt + t * C (int16 weights,
 * repacked at prepare). Then requantized into y[c]. */
void edge_simd_dw_pixel(int32_t level, const int8_t *x, const int32_t *xoff, const int16_t *const *wtap,
                        int32_t ntaps, int32_t c, int32_t input_offset, const int32_t *bias, const int32_t *mul,
                        const int32_t *rs, int32_t zp, int32_t lo, int32_t hi, int8_t *y);

/* One broadcast row (edge_fixedpoint_act.h's ea_row_fn: n elements, each operand's step 0 or 1) of int8 ADD /
 * SUB (TFLM's arithmetic, as kernels/add.c): p holds zp1, zp2, m1, r1, m2, r2 (the inputs' multipliers and right
 * shifts), sign (+1 ADD, -1 SUB), mo, left_o, right_o (the output's), off_out, lo, hi. Returns 1 when it ran, 0
 * when this level has no such path (the caller runs its own). */
int32_t edge_simd_addsub_q8(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                            int32_t n, const int32_t *p);
/* One broadcast row of int8 MUL (as kernels/mul.c): p holds zp1, zp2, m, left, right, off_out, lo, hi. */
int32_t edge_simd_mul_q8(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                         int32_t n, const int32_t *p);
/* One output pixel of int8 AVERAGE_POOL_2D (average 1) / MAX_POOL_2D (0), as kernels/pooling.c: the window's
 * cells inside the input at x + r * row + j * c (r < rows, j < cols), c channels each; the average is the sum
 * divided by rows * cols, halves away from zero; the max starts from -128; then clamped to [lo, hi]. acc: c
 * int32 of scratch. Returns 1 when it ran, 0 when this level has no such path. */
int32_t edge_simd_pool_q8(int32_t level, int32_t average, const int8_t *x, int64_t row, int32_t rows, int32_t cols,
                          int32_t c, int32_t lo, int32_t hi, int32_t *acc, int8_t *y);

/* Threads (src/simd/edge_threads.c). The count for nodes prepared from now on (1..64; 1 by default): a node keeps
 * it in its op data, so set it before edge_init. Returns the previous count. Exported from libedge.so. */
int32_t edge_simd_set_threads(int32_t n);
int32_t edge_simd_threads(void);
/* fn(ctx, t, parts, slot) for every part t in [0, parts), on up to `slots` threads (the caller's and the pool's);
 * slot (< slots) names the thread's scratch. Returns when all parts are done. */
typedef void (*edge_simd_job_fn)(void *ctx, int32_t t, int32_t parts, int32_t slot);
void edge_simd_parallel(int32_t parts, int32_t slots, edge_simd_job_fn fn, void *ctx);
/* The part t of n of [0, total) in multiples of `align`: [*lo, *hi). */
static inline void edge_simd_split(int32_t total, int32_t align, int32_t t, int32_t n, int32_t *lo, int32_t *hi) {
    const int32_t units = (total + align - 1) / align;
    const int32_t a = (int32_t)((int64_t)units * t / n) * align, b = (int32_t)((int64_t)units * (t + 1) / n) * align;
    *lo = a < total ? a : total;
    *hi = b < total ? b : total;
}
/* Threads worth using for `work` multiply-adds prepared with `prepared` threads (at least 256K MACs each: some
 * microseconds on x86-64, tens on a Cortex-A53, well above what handing a part to a spinning worker costs); the
 * kernels split into twice as many parts (claimed one at a time: a thread the OS runs late holds up nobody). */
static inline int32_t edge_simd_parts(int64_t work, int32_t prepared) {
    const int64_t most = work >> 18;
    return most < 1 ? 1 : (most < prepared ? (int32_t)most : prepared);
}
#endif

/* ============================================================================================== float32
 * src/simd/edge_simd_f32_x86.c (AVX2 + FMA, at both x86-64 levels) and src/simd/edge_simd_f32_arm.c (NEON, at
 * both aarch64 levels). CONV_2D (one group: 1x1 filters on the input rows as they are, else on x86-64 the
 * windows where they lie (edge_simd_sconv), on aarch64 im2col rows), FULLY_CONNECTED and BATCH_MATMUL run one
 * packed-panel SGEMM; DEPTHWISE_CONV_2D (multiplier 1) runs channel vectors per output pixel.
 *
 * Numerics: every output is one sum in k order (a conv's taps in (fy, fx, i) order, as the portable kernels),
 * each step one fused multiply-add, from 0; then + bias, then the clamp to [lo, hi] (a NaN passes, as in the
 * portable kernels). The portable kernels round the product and the sum separately, so the two differ by
 * rounding only (the tests hold them to a relative tolerance); x86-64 and aarch64 run the same sequence of
 * FMAs and give the same bits. Threads split the outputs (rows, pixels or columns), never k: the same bits for
 * any count.
 *
 * SGEMM: y[m, n] = clamp(sum_k a[m, k] * w[n, k] + bias[n], lo, hi); a is M rows of K floats (stride lda), w is
 * packed by edge_simd_sgemm_pack (after the bias, npad floats) into panels of EDGE_SIMD_F32_NR columns, k-major
 * within a panel, zeros past n. */
#if EDGE_SIMD
#define EDGE_SIMD_F32_NR 16 /* columns per packed panel (and per register tile) */
#define EDGE_SIMD_F32_MR 6  /* rows per register tile: a thread's share of the rows is whole tiles */

typedef struct {
    int32_t level, n, k, npad;
    float lo, hi;
    float *packed;              /* bias[npad], then npad / NR panels of k x NR floats */
    int32_t pack_scratch;       /* the caller's: its scratch for packing at every invoke (-1: packed at prepare) */
    int32_t rows;               /* the caller's: e.g. im2col rows per block (edge_simd_sgemm_pack leaves both) */
} edge_simd_sgemm_t;

/* Bytes edge_simd_sgemm_pack needs at `level` (0 when the level has no float GEMM). */
size_t edge_simd_sgemm_bytes(int32_t level, int32_t n, int32_t k);
/* Fill g and its packed block at dst (edge_simd_sgemm_bytes): column c's value i at w[c * ldn + i * ldk], bias
 * n floats or NULL, the clamp [lo, hi]. */
void edge_simd_sgemm_pack(edge_simd_sgemm_t *g, int32_t level, const float *w, int32_t n, int32_t k, int64_t ldn,
                          int64_t ldk, const float *bias, float lo, float hi, void *dst);
/* Rows [0, m) of a (stride lda) against columns [n0, n1) (n0 a multiple of EDGE_SIMD_F32_NR) into y[m, ldy] at
 * columns n0..n1. */
void edge_simd_sgemm(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, int32_t n0, int32_t n1,
                     float *y, int64_t ldy);
/* Part t of `parts` (an edge_simd_job_fn's t, n) of the SGEMM of a's m rows (stride lda) against every column of g
 * into y (stride ldy), as the float kernels split a GEMM across threads: with 8 rows or more a share of the rows
 * in whole tiles (EDGE_SIMD_F32_MR), else a share of the columns in whole panels (EDGE_SIMD_F32_NR). Any split
 * gives the same bits (k is never split). src/simd/edge_simd.c. */
void edge_simd_sgemm_part(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, float *y, int64_t ldy,
                          int32_t t, int32_t parts);
/* The whole SGEMM (as edge_simd_sgemm_part) on up to `threads` threads: edge_simd_parts of its m * n * k
 * multiply-adds, split into twice as many parts. */
void edge_simd_sgemm_threads(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, float *y, int64_t ldy,
                             int32_t threads);

/* Float depthwise geometry (multiplier 1): input [h, w, c], filter [kh, kw, c] (the model's own layout), output
 * [oh, ow, c]. */
typedef struct {
    int32_t h, w, c, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;
    float lo, hi;
} edge_simd_dwf_t;
/* float32 CONV_2D (one group) without an im2col copy: output rows [oy0, oy1) of one batch, g the filter packed by
 * edge_simd_sgemm_pack as [o, kh * kw * c] (its clamp), p the geometry (its lo / hi unused), x the batch's input
 * [h, w, c], y its output [oh, ow, o]. A row's pixels whose windows lie inside the input's columns are GEMM rows
 * read where they lie (their filter rows inside the input, each kw * c contiguous floats), the others im2col rows
 * of k floats, EDGE_SIMD_F32_CONV_ROWS at a time in work. Each output the GEMM's FMAs in the GEMM's order, the
 * taps in the padding skipped (a zero tap's FMA adds nothing: the im2col path's bits). Returns 0 when this level
 * (or a dilated filter column) has no such path (y NULL: only asks): both x86-64 levels, not aarch64 yet. */
#define EDGE_SIMD_F32_CONV_ROWS 8
int32_t edge_simd_sconv(const edge_simd_sgemm_t *g, const edge_simd_dwf_t *p, const float *x, int32_t oy0,
                        int32_t oy1, float *y, float *work);

/* int8 CONV_2D through an indirection table (XNNPACK's igemm, without its im2col copy): the filter packed tap by
 * tap in the VNNI layout (each tap's c values padded to cpad, a multiple of 4: one VPDPBUSD step per 4 channels
 * of a tap), and where every tap of every output pixel reads its input row, factored by axis: an output pixel
 * (oy, ox)'s tap (fy, fx) reads the c bytes at x + rows[oy * kh + fy] + cols[ox * kw + fx] when both are inside the
 * input, else the zero row (cpad bytes of the input's zero point, which add nothing). Outside is
 * EDGE_SIMD_QCONV_OUT in either table, so that a sum holding one is negative (the input of one batch below 2^30
 * bytes). The micro-kernel walks the taps through these tables: no copy of the window at any invoke. The
 * tables are (oh * kh + ow * kw) int32, not one entry per pixel and tap: 2.7 KB instead of 452 KB for a 3x3
 * layer with a 112 x 112 output. Results: the portable kernel's bytes (exact int32 sums, edge_rq_apply lane by
 * lane). At EDGE_SIMD_X86_AVX512VNNI (x86-64); no such path at the other levels and on aarch64 (bytes 0). */
#define EDGE_SIMD_QCONV_OUT (-0x40000000)
typedef struct {
    edge_simd_qgemm_t g;        /* first (a conv keeps &g): n = o, k = taps * c, kpad = taps * cpad; its block holds
                                 * the tables and the zero row below */
    int32_t c, cpad, kh, kw, ow;
    int32_t safe;               /* output pixels [0, safe) read every tap's cpad bytes inside the input */
    int32_t sxb;                /* bytes between the rows of horizontally adjacent output pixels: sw * c */
    const int32_t *rows;        /* [oh][kh]: iy * w * c, or EDGE_SIMD_QCONV_OUT */
    const int32_t *cols;        /* [ow][kw]: ix * c, or EDGE_SIMD_QCONV_OUT */
    const int8_t *zero;         /* cpad bytes of the input zero point: a padding tap's row */
    const void *lanes;          /* x86-64 with AVX-512 VBMI, few input channels (c <= 4: a first layer) or a 1x1
                                 * projection into at most 32 channels: the pixel-lane kernel's block
                                 * (edge_simd_x86.c qconv_lanes: 16 output pixels a vector, a sum per channel);
                                 * NULL: the tiles above */
} edge_simd_qconv_t;
/* Bytes of the packed filter, the tables and the zero row for a conv of geometry p (its c, h, w, kh, kw, strides,
 * dilations, padding, output oh x ow; lo / hi unused) into o channels at `level`; 0 when the level (or the shape:
 * an input of 2^30 bytes or more) has no such path. */
size_t edge_simd_qconv_bytes(int32_t level, const edge_simd_dwf_t *p, int32_t o);
/* Fill q and its block at dst (edge_simd_qconv_bytes): w the model's filter [o, kh, kw, c], bias o int32 or NULL,
 * the rest as edge_simd_qgemm_pack's. */
void edge_simd_qconv_pack(edge_simd_qconv_t *q, int32_t level, const edge_simd_dwf_t *p, int32_t o, const int8_t *w,
                          const int32_t *bias, int32_t input_offset, const int32_t *mul, int32_t mul_stride,
                          const int32_t *rs, int32_t rs_stride, int32_t zp, int32_t lo, int32_t hi, void *dst);
/* Output pixels [p0, p1) (of oh * ow) of one batch: x its input [h, w, c], y its output [oh * ow, o]. */
void edge_simd_qconv(const edge_simd_qconv_t *q, const int8_t *x, int32_t p0, int32_t p1, int8_t *y);
/* Whether edge_simd_qconv_pack keeps the pixel-lane block (q->lanes) for geometry p into o int8 channels at `level`
 * (x86-64 AVX-512 VNNI on a CPU with AVX-512 VBMI, the shapes edge_simd_x86.c's lanes_fit takes); 0 elsewhere. */
int32_t edge_simd_qconv_lanes(int32_t level, const edge_simd_dwf_t *p, int32_t o);

/* Output rows [oy0, oy1) of one batch: x its input, y its output, bias c floats or NULL. Returns 0 when this
 * level has no float depthwise (the caller runs its own). */
int32_t edge_simd_dw_f32(int32_t level, const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias,
                         int32_t oy0, int32_t oy1, float *y);

/* float32 PRELU of one row: y[i] = x[i] >= 0 ? x[i] : x[i] * alpha[i * astep] (astep 0 or 1; the portable
 * kernel's one multiply: the same bits). Returns 0 when this level has no such path. */
int32_t edge_simd_prelu_f32(int32_t level, const float *x, const float *alpha, int32_t astep, float *y, int32_t n);
/* The same over rows x c contiguous floats with one slope per channel (alpha c floats, every row): one call for a
 * tensor whose slopes broadcast along the last axis only. Returns 0 when this level has no such path (x NULL:
 * only asks). */
int32_t edge_simd_prelu_f32_rows(int32_t level, const float *x, const float *alpha, int32_t c, int64_t rows, float *y);

/* float32 ADD / SUB / MUL rows: y[i] = clamp(a[i * sa] op b[i * sb], lo, hi), steps 0 or 1 (edge_fixedpoint_act.h's
 * ea_row_fn, for ea_bcast_run; op points to an edge_simd_binf_t whose level is one this CPU runs). One rounding
 * and the clamp, as the portable rows: the same bits. */
enum { EDGE_SIMD_F32_ADD = 0, EDGE_SIMD_F32_SUB = 1, EDGE_SIMD_F32_MUL = 2 };
typedef struct {
    int32_t level, kind;
    float lo, hi;
} edge_simd_binf_t;
void edge_simd_binary_f32_row(const void *op, const void *a, int32_t sa, const void *b, int32_t sb, void *y, int32_t n);

/* float32 activations over n contiguous elements, the portable loops' formulas lane by lane:
 *   EDGE_SIMD_ACT_RELU        y = x < 0 ? 0 : x                          (RELU: a -0 and a NaN pass)
 *   EDGE_SIMD_ACT_CLAMP       y = x > p1 ? p1 : (x < p0 ? p0 : x)        (RELU6, RELU_N1_TO_1)
 *   EDGE_SIMD_ACT_LEAKY       y = x > 0 ? x : x * p0                     (LEAKY_RELU, alpha p0)
 *   EDGE_SIMD_ACT_HARD_SWISH  t = min(6, max(0, x + 3)) (compares, a NaN passes), y = x * t / 6
 *   EDGE_SIMD_ACT_LOGISTIC    1 / (1 + exp(-x)); x > 16.619047 -> 1, x < -9 -> exp(x)
 *   EDGE_SIMD_ACT_TANH        tanh(x)
 * RELU / CLAMP / LEAKY / HARD_SWISH: the same operations with one rounding each: the same bits. LOGISTIC / TANH
 * (the portable kernels round exp / tanh in double to float): a float exp (Cody-Waite reduction, degree-5
 * polynomial, FMAs) and for |x| < 0.625 an odd tanh polynomial, within 1e-6 relative (tests/test_c_simd_f32.py
 * over a dense grid); a vector holding a NaN or an input whose exp would be subnormal (LOGISTIC x < -87, TANH
 * none) runs the portable formula in double. x86-64 and aarch64 run the same FMAs: the same bits. Returns 0 when
 * this level has no such path. */
enum {
    EDGE_SIMD_ACT_RELU = 0,
    EDGE_SIMD_ACT_CLAMP = 1,
    EDGE_SIMD_ACT_LEAKY = 2,
    EDGE_SIMD_ACT_HARD_SWISH = 3,
    EDGE_SIMD_ACT_LOGISTIC = 4,
    EDGE_SIMD_ACT_TANH = 5
};
int32_t edge_simd_act_f32(int32_t level, int32_t kind, const float *x, float *y, int64_t n, float p0, float p1);
/* One element by the portable formula (src/simd/edge_simd.c): the fast paths' fallback and tail. */
float edge_simd_act_f32_one(int32_t kind, float v, float p0, float p1);

/* One output pixel of float32 AVERAGE_POOL_2D (average 1) / MAX_POOL_2D (0), as kernels/pooling.c's pool_float:
 * the window's cells inside the input at x + r * row + j * c (r < rows, j < cols), c channels each; the average
 * sums in (r, j) order from 0 and divides by rows * cols (the same bits); the max starts from -FLT_MAX and takes
 * a cell when it is greater (a NaN never is); then v < lo ? lo : (v > hi ? hi : v). Returns 0 when this level
 * has no such path (x NULL: only asks). */
int32_t edge_simd_pool_f32(int32_t level, int32_t average, const float *x, int64_t row, int32_t rows, int32_t cols,
                           int32_t c, float lo, float hi, float *y);

/* float16 -> float32 (DEQUANTIZE of float16 weights): exact, the portable widening's bits (a block holding an
 * infinity or a NaN is widened in C: the instructions quiet a signaling NaN). Returns 0 when this level (or this
 * x86-64 CPU: F16C) has no such path. */
int32_t edge_simd_f16_f32(int32_t level, const uint16_t *h, float *y, int64_t n);
#endif

/* ============================================================================================== issue 26
 * src/simd/edge_simd_dw_x86.c (AVX-512 at EDGE_SIMD_X86_AVX512VNNI, AVX2 at EDGE_SIMD_X86_AVX2; the target
 * attributes leave FMA out where the portable bits are kept) and src/simd/edge_simd_dw_arm.c (NEON at both aarch64
 * levels). Each returns 0 when this level has no such path (the caller runs its own); called with a NULL output
 * (x NULL for SOFTMAX / the sums) it only asks. */
#if EDGE_SIMD
/* Which of these paths ran, for the tests under qemu-user (where a timing means nothing and a bit-exact path
 * leaves no other trace): the aarch64 files call edge_simd_count for every call that ran. It counts only when
 * EDGE_SIMD_PATHS is set in the environment (read with EDGE_SIMD_LEVEL, at the first prepare): one load and a
 * branch otherwise, where an atomic add per call would cost as much as a short broadcast row. Then edge_simd.c
 * prints "edge-simd-paths NAME=COUNT ..." (every path, in this order) on stderr at exit. */
enum {
    EDGE_SIMD_PATH_DW_Q8 = 0,   /* edge_simd_dw_q8_3x3_5x5 */
    EDGE_SIMD_PATH_ADDSUB_Q8,   /* edge_simd_addsub_q8_wide */
    EDGE_SIMD_PATH_MUL_Q8,      /* edge_simd_mul_q8_wide */
    EDGE_SIMD_PATH_SUM_Q8,      /* edge_simd_sum_hw_q8 */
    EDGE_SIMD_PATH_RQ_SUMS_Q8,  /* edge_simd_rq_sums_q8 */
    EDGE_SIMD_PATH_SUM_F32,     /* edge_simd_sum_hw_f32 */
    EDGE_SIMD_PATH_SOFTMAX_F32, /* edge_simd_softmax_f32 (a row it ran to the end) */
    EDGE_SIMD_PATH_RESIZE_Q8,   /* edge_simd_resize_row_q8 */
    EDGE_SIMD_PATH_RESIZE_F32,  /* edge_simd_resize_row_f32 */
    EDGE_SIMD_PATH_DW_F32,      /* edge_simd_dw_3x3_5x5_f32 */
    EDGE_SIMD_PATHS
};
extern int32_t edge_simd_counting; /* 1 when EDGE_SIMD_PATHS is set */
void edge_simd_count_path(int32_t path);
static inline void edge_simd_count(int32_t path) {
    if (__atomic_load_n(&edge_simd_counting, __ATOMIC_RELAXED)) edge_simd_count_path(path);
}
/* float32 SOFTMAX of one row of n values: e = exp((x - max) * beta) (the difference and the product rounded as the
 * portable kernel; exp by a polynomial within 2 ulp, 0 below -87), y = e / (the sum of the e in lanes): within
 * 1e-6 of the portable kernel relative to the row's largest output. Returns 0 without a result for a row holding
 * an infinity or a NaN, a beta that is not finite, or an exponent above 88 (then y may hold partial values: the
 * caller computes the row again). */
int32_t edge_simd_softmax_f32(int32_t level, const float *x, int32_t n, float beta, float *y);
/* One output row of RESIZE_BILINEAR (kernels/resize.c's arithmetic, the same bits): source rows r0 (lo) and r1
 * (hi), output column ox from input columns cols[2 ox] and cols[2 ox + 1] (pixels of ch channels) with fraction
 * fx[ox]; float32 with row fraction wy1, int8 with the Q10 row fraction fy and Q10 column fractions. */
int32_t edge_simd_resize_row_f32(int32_t level, const float *r0, const float *r1, const int32_t *cols, const float *fx,
                                 int32_t out_w, int32_t ch, float wy1, float *y);
int32_t edge_simd_resize_row_q8(int32_t level, const int8_t *r0, const int8_t *r1, const int32_t *cols,
                                const int32_t *fx, int32_t out_w, int32_t ch, int32_t fy, int8_t *y);
/* MEAN / SUM over H, W: sums[i] = the sum over the hw pixels p of x[p * stride + i], i < c, in pixel order: float32
 * from 0.0f, one rounding a step, then (mean) / hw in float32 (LiteRT's reference order: kernels/mean.c's bits);
 * int8 in int32 (wrapping). */
int32_t edge_simd_sum_hw_f32(int32_t level, const float *x, int64_t hw, int64_t stride, int32_t c, int32_t mean,
                             float *sums);
int32_t edge_simd_sum_hw_q8(int32_t level, const int8_t *x, int64_t hw, int64_t stride, int32_t c, int32_t *sums);
/* The int8 outputs of n int32 sums (MEAN / SUM int8): y[i] = clamp(edge_mbqm(sums[i] - offset, m, shift) + zp, lo,
 * hi), the subtraction wrapping: 16 lanes at EDGE_SIMD_X86_AVX512VNNI, 8 at the aarch64 levels, for m >= 0, shift
 * -31..31; 0 otherwise (the caller's scalar loop). n = 0 only asks. */
int32_t edge_simd_rq_sums_q8(int32_t level, const int32_t *sums, int32_t n, int32_t offset, int32_t m, int32_t shift,
                             int32_t zp, int32_t lo, int32_t hi, int8_t *y);
/* edge_simd_addsub_q8 (its p, its arithmetic lane by lane: the same bytes) on the widest vectors: 16 lanes at
 * EDGE_SIMD_X86_AVX512VNNI and at the aarch64 levels (there for int8 zero points and shifts 0..31: the rounding
 * shifts in SSRA + SRSHL); 0 at the other levels and parameters (edge_simd_addsub_q8 serves them). n = 0 only
 * asks. */
int32_t edge_simd_addsub_q8_wide(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                                 int32_t n, const int32_t *p);
/* edge_simd_mul_q8 (its p, its arithmetic lane by lane: the same bytes) on 16 lanes at EDGE_SIMD_X86_AVX512VNNI and
 * at the aarch64 levels (there for int8 zero points: the product SMULL of int16) with a right shift of 0..31; 0
 * otherwise (edge_simd_mul_q8 serves those). n = 0 only asks. */
int32_t edge_simd_mul_q8_wide(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                              int32_t n, const int32_t *p);
/* edge_simd_dw_f32 (its geometry, its operations in its order: the same bits) for 3x3 and 5x5 filters, stride 1 or 2
 * (both axes the same), dilation 1, at EDGE_SIMD_X86_AVX512VNNI (16 channels a tile) and the aarch64 levels (4, for
 * 4 channels or more: a last partial tile overlaps the one before): the channel tile's taps loaded once (3x3: held
 * in registers), four interior pixels at a time sharing their input columns. 0 for other shapes and levels (y
 * NULL: only asks). */
int32_t edge_simd_dw_3x3_5x5_f32(int32_t level, const edge_simd_dwf_t *p, const float *x, const float *wt, const float *bias,
                            int32_t oy0, int32_t oy1, float *y);
/* int8 DEPTHWISE_CONV_2D, depth multiplier 1, 3x3 / 5x5, stride 1 or 2 (both axes), dilation 1, at
 * EDGE_SIMD_X86_AVX512VNNI and the aarch64 levels (there 8 channels or more, 8 a tile, a last partial one
 * overlapping), output rows [oy0, oy1) of one batch (p: the geometry; its lo / hi unused): y = clamp(zp +
 * rq_c(bias[c] + sum over the taps inside the input of (x + input_offset) * wt[tap * c + c]), lo, hi), wt the
 * filter widened to int16 [kh * kw, c], rq_c edge_rq_apply with mul[c], rs[c]: the portable kernel's bytes. 0 for
 * other shapes and levels (y NULL: only asks). */
int32_t edge_simd_dw_q8_3x3_5x5(int32_t level, const edge_simd_dwf_t *p, const int8_t *x, const int16_t *wt,
                                const int32_t *bias, const int32_t *mul, const int32_t *rs, int32_t input_offset,
                                int32_t zp, int32_t lo, int32_t hi, int32_t oy0, int32_t oy1, int8_t *y);
/* An int8 / uint8 table over n bytes: y[i] = lut[x[i]] (256 entries, indexed by the byte as unsigned): the table
 * kernels' lookups (LOGISTIC, TANH, RELU*, LEAKY_RELU, HARD_SWISH, ELU, RSQRT, 8-bit QUANTIZE), the same bytes. At
 * EDGE_SIMD_X86_AVX512VNNI on a CPU with AVX-512 VBMI (VPERMI2B), at every aarch64 level (TBL / TBX); 0 elsewhere
 * (n = 0 only asks). */
int32_t edge_simd_lut8(int32_t level, const uint8_t *lut, const uint8_t *x, uint8_t *y, int64_t n);
#endif

#endif /* EDGE_SIMD_H */
