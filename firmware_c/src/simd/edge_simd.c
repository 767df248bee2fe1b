/* edge_simd.c - the level every fast path asks for, the same on every 64-bit CPU: the CPU's own level (the probe
 * of edge_simd_x86.c / edge_simd_arm.c, edge_simd_cpu_level), read once, capped by EDGE_SIMD_LEVEL=n in the
 * environment (tests run edge-run-c at every level, under qemu-user) and by edge_simd_set; and how the float
 * kernels split one SGEMM across threads (edge_simd_sgemm_part / edge_simd_sgemm_threads).
 */
#include "edge_simd.h"

#if EDGE_SIMD
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int32_t simd_cap = -1;

/* edge_simd_count's tallies when EDGE_SIMD_PATHS is set (relaxed atomics: threads of one layer add to the same
 * path), printed at exit (tests/test_c_simd_dw.py reads them from edge-run-c under qemu-user). */
int32_t edge_simd_counting = 0;
static uint32_t path_counts[EDGE_SIMD_PATHS];
static const char *const path_names[EDGE_SIMD_PATHS] = {"dw_q8", "addsub_q8", "mul_q8", "sum_q8", "rq_sums_q8",
                                                        "sum_f32", "softmax_f32", "resize_q8", "resize_f32", "dw_f32"};

void edge_simd_count_path(int32_t path) { __atomic_fetch_add(&path_counts[path], 1u, __ATOMIC_RELAXED); }

static void print_paths(void) {
    int32_t i;
    fprintf(stderr, "edge-simd-paths");
    for (i = 0; i < EDGE_SIMD_PATHS; i++)
        fprintf(stderr, " %s=%u", path_names[i], (unsigned)__atomic_load_n(&path_counts[i], __ATOMIC_RELAXED));
    fprintf(stderr, "\n");
}

static int32_t simd_detect(void) {
    static int32_t level = -1;
    if (level < 0) {
        const char *env = getenv("EDGE_SIMD_LEVEL");
        int32_t l = edge_simd_cpu_level();
        if (env && env[0] >= '0' && env[0] <= '9' && env[1] == 0 && env[0] - '0' < l) l = env[0] - '0';
        if (getenv("EDGE_SIMD_PATHS") && atexit(print_paths) == 0)
            __atomic_store_n(&edge_simd_counting, 1, __ATOMIC_RELAXED);
        level = l;
    }
    return level;
}

int32_t edge_simd_level(void) {
    const int32_t l = simd_detect();
    return simd_cap >= 0 && simd_cap < l ? simd_cap : l;
}

int32_t edge_simd_set(int32_t cap) {
    simd_cap = cap;
    return simd_detect();
}

void edge_simd_sgemm_part(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, float *y, int64_t ldy,
                          int32_t t, int32_t parts) {
    int32_t lo, hi;
    if (m >= 8) {
        edge_simd_split(m, EDGE_SIMD_F32_MR, t, parts, &lo, &hi);
        if (lo < hi) edge_simd_sgemm(g, a + (int64_t)lo * lda, hi - lo, lda, 0, g->n, y + (int64_t)lo * ldy, ldy);
    } else {
        edge_simd_split(g->n, EDGE_SIMD_F32_NR, t, parts, &lo, &hi);
        if (lo < hi) edge_simd_sgemm(g, a, m, lda, lo, hi, y, ldy);
    }
}

typedef struct {
    const edge_simd_sgemm_t *g;
    const float *a;
    float *y;
    int64_t lda, ldy;
    int32_t m;
} sgemm_job_t;

static void sgemm_job(void *arg, int32_t t, int32_t parts, int32_t slot) {
    const sgemm_job_t *j = (const sgemm_job_t *)arg;
    (void)slot;
    edge_simd_sgemm_part(j->g, j->a, j->m, j->lda, j->y, j->ldy, t, parts);
}

void edge_simd_sgemm_threads(const edge_simd_sgemm_t *g, const float *a, int32_t m, int64_t lda, float *y, int64_t ldy,
                             int32_t threads) {
    const int32_t slots = edge_simd_parts((int64_t)m * g->n * g->k, threads);
    sgemm_job_t j;
    j.g = g;
    j.a = a;
    j.y = y;
    j.lda = lda;
    j.ldy = ldy;
    j.m = m;
    edge_simd_parallel(slots > 1 ? 2 * slots : 1, slots, sgemm_job, &j);
}

float edge_simd_act_f32_one(int32_t kind, float v, float p0, float p1) {
    float t;
    switch (kind) {
    case EDGE_SIMD_ACT_RELU: return v < 0.0f ? 0.0f : v;
    case EDGE_SIMD_ACT_CLAMP: return v > p1 ? p1 : (v < p0 ? p0 : v);
    case EDGE_SIMD_ACT_LEAKY: return v > 0.0f ? v : v * p0;
    case EDGE_SIMD_ACT_HARD_SWISH:
        t = v + 3.0f;
        if (t < 0.0f) t = 0.0f;
        if (t > 6.0f) t = 6.0f;
        return v * t / 6.0f;
    case EDGE_SIMD_ACT_LOGISTIC:
        if (v > 16.619047164916992188f) return 1.0f;
        if (v < -9.0f) return (float)exp((double)v);
        return 1.0f / (1.0f + (float)exp(-(double)v));
    default: return (float)tanh((double)v);
    }
}

#if !defined(__x86_64__)
/* The indirection conv (edge_simd.h: edge_simd_qconv) is x86-64's alone so far: no path here (bytes 0, and the
 * conv kernel never packs or calls one). */
size_t edge_simd_qconv_bytes(int32_t level, const edge_simd_dwf_t *p, int32_t o) {
    (void)level, (void)p, (void)o;
    return 0;
}

void edge_simd_qconv_pack(edge_simd_qconv_t *q, int32_t level, const edge_simd_dwf_t *p, int32_t o, const int8_t *w,
                          const int32_t *bias, int32_t input_offset, const int32_t *mul, int32_t mul_stride,
                          const int32_t *rs, int32_t rs_stride, int32_t zp, int32_t lo, int32_t hi, void *dst) {
    (void)q, (void)level, (void)p, (void)o, (void)w, (void)bias, (void)input_offset, (void)mul, (void)mul_stride;
    (void)rs, (void)rs_stride, (void)zp, (void)lo, (void)hi, (void)dst;
}

void edge_simd_qconv(const edge_simd_qconv_t *q, const int8_t *x, int32_t p0, int32_t p1, int8_t *y) {
    (void)q, (void)x, (void)p0, (void)p1, (void)y;
}

int32_t edge_simd_qconv_lanes(int32_t level, const edge_simd_dwf_t *p, int32_t o) {
    (void)level, (void)p, (void)o;
    return 0;
}

/* The few-channel GEMM (edge_simd.h: edge_simd_qgemm_few) is x86-64's alone too. */
int32_t edge_simd_qgemm_few(int32_t level, int32_t n, int32_t k) {
    (void)level, (void)n, (void)k;
    return 0;
}
#endif

void *edge_simd_qgemm_head(edge_simd_qgemm_t *g, int32_t level, const int8_t *w, int32_t n, int32_t k, int32_t ldw,
                           int32_t kstride, const int32_t *bias, int32_t off, const int32_t *mul, int32_t mul_stride,
                           const int32_t *rs, int32_t rs_stride, int32_t rs_sign, int32_t zp, int32_t lo, int32_t hi,
                           int32_t npad, int32_t kpad, void *dst) {
    int32_t *b = (int32_t *)dst, *m = b + npad, *r = m + npad;
    int32_t c, i;
    g->level = level;
    g->n = n;
    g->k = k;
    g->zp = zp;
    g->lo = lo;
    g->hi = hi;
    g->npad = npad;
    g->kpad = kpad;
    g->packed = dst;
    for (c = 0; c < npad; c++) {
        uint32_t s = 0;
        if (c < n) {
            const int8_t *wr = w + (int64_t)c * ldw;
            for (i = 0; i < k; i++) s += (uint32_t)(int32_t)wr[(int64_t)i * kstride];
            b[c] = (int32_t)((bias ? (uint32_t)bias[c] : 0u) + s * (uint32_t)off); /* wraps as int32 sums do */
            m[c] = mul[(int64_t)c * mul_stride];
            r[c] = rs_sign * rs[(int64_t)c * rs_stride];
        } else { /* padding channels: zero multiplier, any valid shift */
            b[c] = 0;
            m[c] = 0;
            r[c] = rs_sign * 2;
        }
    }
    return r + npad;
}
#endif
