/* edge_simd_x86.c - x86-64 fast paths: AVX2 (+FMA) and AVX-512 VNNI, chosen at run time by cpuid.
 *
 * Every function that uses wider instructions than the x86-64 baseline carries its own target attribute, so
 * the whole library is compiled for plain x86-64 and runs on any x86-64 CPU; edge_simd_level() says which of
 * these the CPU can run (__builtin_cpu_supports reads cpuid once).
 *
 * Requantization, lane by lane, the plain-C edge_rq_apply (edge_dsp.h) on every lane:
 *     h = low 32 bits of ((int64) acc * mul + 2^30) >> 31;  h += h >> 31;
 *     y = zp + floor((h + 2^(rs - 1)) / 2^rs) = zp + (h >> rs) + ((h >> (rs - 1)) & 1)
 * (the second form never overflows int32). The 64-bit products come from VPMULDQ on the even and the odd
 * lanes; bits 31..62 of (product + 2^30) are the low dword after a logical right shift by 31 (even lanes)
 * and the high dword after a left shift by 1 (odd lanes).
 */
#define _DEFAULT_SOURCE /* syscall() under -std=c99: the AMX permission (amx_usable) */
#include "edge_simd.h"

#if EDGE_SIMD && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include "edge_simd_q8_scalar.h"
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define T_AVX2 __attribute__((target("avx2,fma")))
#define T_VNNI __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define T_AMX __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,amx-tile,amx-int8")))
#define INLINE __attribute__((always_inline)) inline

/* AMX-TILE and AMX-INT8 (CPUID leaf 7, EDX bits 24 and 25) and the kernel's leave to use the tile data (Linux
 * 5.16+: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), granted to the whole process, its threads too). */
static int amx_usable(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(edx >> 24 & 1u) || !(edx >> 25 & 1u)) return 0;
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
}

int32_t edge_simd_cpu_level(void) {
    int32_t level = EDGE_SIMD_NONE;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) level = EDGE_SIMD_X86_AVX2;
    if (level && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vnni"))
        level = EDGE_SIMD_X86_AVX512VNNI;
    if (level == EDGE_SIMD_X86_AVX512VNNI && amx_usable()) level = EDGE_SIMD_X86_AMX;
    return level;
}

/* ------------------------------------------------------------------------------------- scalar helpers */

static inline int32_t rq_scalar(int32_t acc, int32_t mul, int32_t rs, int32_t zp, int32_t lo, int32_t hi) {
    int32_t h = (int32_t)(((int64_t)acc * mul + ((int64_t)1 << 30)) >> 31);
    int32_t r;
    h += h >> 31;
    r = zp + (int32_t)(((int64_t)h + ((int64_t)1 << (rs - 1))) >> rs);
    return r < lo ? lo : (r > hi ? hi : r);
}

/* ------------------------------------------------------------------------------------- int8 GEMM: packing */

#define VNNI_NB 16 /* channels per block */
#define AVX2_NB 8
#define GEMM_MR 12 /* rows per pass of the VNNI GEMM (the work area's rows; AVX2: 4) */
#define AVX2_MR 4  /* AVX2: rows per tile */
#define AMX_MR 32  /* AMX: rows per pass (two A tiles of 16 rows) */
#define AMX_KC 64  /* AMX: k per tile (64 bytes a row) */

static int32_t round_up(int32_t v, int32_t m) { return (v + m - 1) / m * m; }

/* The packed blocks (edge_simd_qgemm_pack, edge_simd_qconv_pack) start at a cache line: their bytes ask for
 * QG_PACK_ALIGN more and the pack rounds dst up. The head (bias, mul, rs: 12 npad bytes, npad a multiple of 16 at
 * the VNNI levels) keeps the weights on lines too, so that every 64-byte weight load (16 channels x 4 values) and
 * every AMX tile row sits within one line. The arena's persistent part steps by 8 bytes: a block at +8 ran qgemm
 * M 49 K 160 N 960 1.30x, M 196 K 96 N 576 1.20x slower (C microbenchmark, min of 60 interleaved rounds); an AMX
 * TILELOADD 12.5 ns aligned, 22-26 ns off by 1..32 bytes. */
#define QG_PACK_ALIGN 64
static void *line_align(void *p) {
    return (void *)(((uintptr_t)p + QG_PACK_ALIGN - 1) & ~(uintptr_t)(QG_PACK_ALIGN - 1));
}

/* k padded: VPDPBUSD takes 4 values a step; an AMX tile 64 (one tile of kpad when k <= 64). */
static int32_t vnni_kpad(int32_t level, int32_t k) {
    return level == EDGE_SIMD_X86_AMX && k > AMX_KC ? round_up(k, AMX_KC) : round_up(k, 4);
}

/* Few output channels (edge_simd_qgemm_few): n <= FEW_N, k a multiple of 4 up to FEW_K (k / 4 <= 16 steps). */
#define FEW_N 8
#define FEW_K 64

int32_t edge_simd_qgemm_few(int32_t level, int32_t n, int32_t k) {
    return level >= EDGE_SIMD_X86_AVX512VNNI && n >= 1 && n <= FEW_N && k >= 4 && k <= FEW_K && k % 4 == 0;
}

/* The few-channel block's bytes (after the VNNI block): bias, mul, rs lanes, then k / 4 permutation and weight
 * vectors (few_gemm), 16 int32 each. */
static size_t few_bytes(int32_t k) { return (size_t)(3 + 2 * (k / 4)) * 64; }

size_t edge_simd_qgemm_bytes(int32_t level, int32_t n, int32_t k) {
    if (level >= EDGE_SIMD_X86_AVX512VNNI) { /* + QG_PACK_ALIGN: the block starts at a cache line (line_align) */
        const size_t npad = (size_t)round_up(n, VNNI_NB), kpad = (size_t)vnni_kpad(level, k);
        return 3 * 4 * npad + npad * kpad + QG_PACK_ALIGN + (edge_simd_qgemm_few(level, n, k) ? few_bytes(k) : 0);
    }
    if (level == EDGE_SIMD_X86_AVX2) { /* the head 96 bytes a block of 8: the 32-byte weight rows on half lines */
        const size_t npad = (size_t)round_up(n, AVX2_NB), kpad = (size_t)round_up(k, 2);
        return 3 * 4 * npad + 2 * npad * kpad + QG_PACK_ALIGN;
    }
    return 0;
}

size_t edge_simd_qgemm_work(int32_t level, int32_t k, int32_t rows) {
    if (rows == 1) { /* vnni_gemm's one row as it is (k padded; AMX takes AMX_MIN_ROWS or more); avx2_gemm's row */
        if (level >= EDGE_SIMD_X86_AVX512VNNI) return (size_t)vnni_kpad(level, k) + 64;
        if (level == EDGE_SIMD_X86_AVX2) return 2 * (size_t)round_up(k, 2) + 64;
        return 0;
    }
    if (level == EDGE_SIMD_X86_AMX) /* AMX_MR rows of a (cache-line rows), the 32 x 32 int32 sums, alignment */
        return (size_t)AMX_MR * (size_t)round_up(vnni_kpad(level, k), AMX_KC) + 4u * AMX_MR * 2 * VNNI_NB + 64;
    if (level == EDGE_SIMD_X86_AVX512VNNI) return (size_t)GEMM_MR * (size_t)round_up(k, 4) + 64;
    if (level == EDGE_SIMD_X86_AVX2) return (size_t)AVX2_MR * 2 * (size_t)round_up(k, 2) + 64;
    return 0;
}

/* The few-channel layout (few_gemm): a vector's 16 lanes are p = 16 / n2 pixels x n2 channels (n2: n rounded up to a
 * power of two; lane l is pixel l / n2, channel l % n2), so that its requantized bytes are the output's bytes in
 * order. Lanes: bias (the head's, input offset folded), mul and rs of channel l % n2 (channels past n: multiplier 0);
 * step s (4 input values): perm[s] picks lane l's dword of its pixel from two 64-byte loads at its group's first
 * pixel (FEW_GROUP pixels: ((l / n2) % group) * k / 4 + s), weights[s] holds channel l % n2's 4 values of step s
 * (zeros past n). */
static int32_t few_n2(int32_t n) { return n <= 1 ? 1 : n <= 2 ? 2 : n <= 4 ? 4 : 8; }
static int32_t few_group(int32_t n, int32_t k) { /* pixels whose k bytes two 64-byte loads hold (a power of two) */
    int32_t gp = 16 / few_n2(n);
    while (gp * k > 128) gp /= 2;
    return gp;
}

static void few_pack(const edge_simd_qgemm_t *g, const int8_t *w, int32_t ldw, int32_t kstride, void *dst) {
    const int32_t n = g->n, k = g->k, steps = k / 4, n2 = few_n2(n), gp = few_group(n, k);
    const int32_t *bias = (const int32_t *)g->packed, *mul = bias + g->npad, *rs = mul + g->npad;
    int32_t *lane = (int32_t *)dst, *perm = lane + 48, *wv = perm + 16 * steps;
    int32_t l, s, i;
    for (l = 0; l < 16; l++) {
        const int32_t c = l % n2;
        lane[l] = c < n ? bias[c] : 0;
        lane[16 + l] = c < n ? mul[c] : 0;
        lane[32 + l] = c < n ? rs[c] : 2;
        for (s = 0; s < steps; s++) {
            int8_t b4[4] = {0, 0, 0, 0};
            perm[16 * s + l] = ((l / n2) % gp) * steps + s;
            if (c < n)
                for (i = 0; i < 4; i++) b4[i] = w[(int64_t)c * ldw + (int64_t)(4 * s + i) * kstride];
            memcpy(&wv[16 * s + l], b4, 4);
        }
    }
}

void edge_simd_qgemm_pack(edge_simd_qgemm_t *g, int32_t level, const int8_t *w, int32_t n, int32_t k, int32_t ldw,
                          int32_t kstride, const int32_t *bias, int32_t input_offset, const int32_t *mul, int32_t mul_stride,
                          const int32_t *rs, int32_t rs_stride, int32_t zp, int32_t lo, int32_t hi, void *dst) {
    const int vnni = level >= EDGE_SIMD_X86_AVX512VNNI; /* AMX: the same layout, k padded further */
    const int32_t nb = vnni ? VNNI_NB : AVX2_NB;
    const int32_t npad = round_up(n, nb), kpad = vnni ? vnni_kpad(level, k) : round_up(k, 2);
    /* VNNI multiplies unsigned activations: a + 128 (a ^ 0x80), so the bias takes (input_offset - 128) */
    const int32_t off = vnni ? input_offset - 128 : input_offset;
    int32_t c, i;
    dst = line_align(dst); /* the weights on cache lines (the head: 12 npad bytes) */
    void *const pack = edge_simd_qgemm_head(g, level, w, n, k, ldw, kstride, bias, off, mul, mul_stride, rs, rs_stride, 1, zp, lo, hi,
                         npad, kpad, dst);
    if (vnni) {
        int8_t *pw = (int8_t *)pack;
        memset(pw, 0, (size_t)npad * (size_t)kpad);
        for (c = 0; c < n; c++) {
            const int8_t *wr = w + (int64_t)c * ldw;
            int8_t *blk = pw + (int64_t)(c / VNNI_NB) * kpad * VNNI_NB + (c % VNNI_NB) * 4;
            for (i = 0; i < k; i++) blk[(int64_t)(i / 4) * 64 + (i % 4)] = wr[(int64_t)i * kstride];
        }
        if (edge_simd_qgemm_few(level, n, k)) few_pack(g, w, ldw, kstride, pw + (size_t)npad * (size_t)kpad);
    } else {
        int16_t *pw = (int16_t *)pack;
        memset(pw, 0, 2 * (size_t)npad * (size_t)kpad);
        for (c = 0; c < n; c++) {
            const int8_t *wr = w + (int64_t)c * ldw;
            int16_t *blk = pw + (int64_t)(c / AVX2_NB) * kpad * AVX2_NB + (c % AVX2_NB) * 2;
            for (i = 0; i < k; i++) blk[(int64_t)(i / 2) * 16 + (i % 2)] = wr[(int64_t)i * kstride];
        }
    }
}

/* ------------------------------------------------------------------------------------- AVX-512 VNNI */

T_VNNI static INLINE __m512i rq512(__m512i acc, __m512i mul, __m512i rs, __m512i zp, __m512i lo, __m512i hi) {
    const __m512i r30 = _mm512_set1_epi64((int64_t)1 << 30), one = _mm512_set1_epi32(1);
    __m512i pe = _mm512_add_epi64(_mm512_mul_epi32(acc, mul), r30);
    __m512i po = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(acc, 32), _mm512_srli_epi64(mul, 32)), r30);
    __m512i h = _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(pe, 31), _mm512_slli_epi64(po, 1));
    __m512i q;
    h = _mm512_add_epi32(h, _mm512_srai_epi32(h, 31));
    q = _mm512_add_epi32(_mm512_srav_epi32(h, rs),
                         _mm512_and_si512(_mm512_srav_epi32(h, _mm512_sub_epi32(rs, one)), one));
    q = _mm512_add_epi32(q, zp);
    return _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
}

/* rq512's arithmetic in one 64-bit shift per lane, for the GEMMs' requantization of 16 channels with the
 * channels' constants prepared once per block (rq512_prep) and reused by every row. With p = acc * mul (exact,
 * |p| < 2^62) rq512 computes h = floor((p + 2^30) / 2^31) (it fits int32), h -= 1 when h < 0 (p < -2^30), then
 * floor((h + 2^(rs-1)) / 2^rs). Since floor(floor(X / a) / b) = floor(X / ab) and adding an integer commutes with
 * the inner floor, that is
 *     q = floor((p + 2^30 + 2^(30 + rs) - [p < -2^30] 2^31) / 2^(31 + rs))
 * one VPSRAVQ (31 + rs <= 62; |numerator| < 2^63) on the even and on the odd lanes: two VPMULDQ and two VPSRAVQ
 * where rq512 spends eleven shifts and multiplies on the same port. The same value for every input.
 * Tried (issue 26, session 18) and not kept: the same q as floor(fl(fl(acc) S + 1/2 +- 2^-(rs + 1))) in float32
 * (S = fl(mul) 2^-(31 + rs); exact wherever the value lies more than 2^-12 from an integer, the rest redone here):
 * seven operations for 16 outputs where this spends twelve, 6% faster alone (4.48 vs 4.75 ns per 32 outputs, C
 * microbenchmark, min of 5), no faster in the tiles (mobilenet_v2 112x112 16 -> 96: 374 vs 365 us, min of 1000
 * invokes); likely because its 512-bit conversions, FMA and VREDUCEPS all take port 0 with VPDPBUSD, where this puts
 * four of twelve there (not confirmed: no cycle counters in the VM that measured it). */
typedef struct {
    __m512i mul, mul_odd, add_even, add_odd, shift_even, shift_odd, zp, lo, hi;
} rq512_t;

T_VNNI static INLINE rq512_t rq512_prep(__m512i mul, __m512i rs, int32_t zp, int32_t lo, int32_t hi) {
    const __m512i low = _mm512_set1_epi64(0xFFFFFFFFll), r30 = _mm512_set1_epi64((int64_t)1 << 30);
    const __m512i se = _mm512_and_si512(rs, low), so = _mm512_srli_epi64(rs, 32);
    rq512_t c;
    c.mul = mul;
    c.mul_odd = _mm512_srli_epi64(mul, 32);
    c.add_even = _mm512_add_epi64(r30, _mm512_sllv_epi64(r30, se));
    c.add_odd = _mm512_add_epi64(r30, _mm512_sllv_epi64(r30, so));
    c.shift_even = _mm512_add_epi64(se, _mm512_set1_epi64(31));
    c.shift_odd = _mm512_add_epi64(so, _mm512_set1_epi64(31));
    c.zp = _mm512_set1_epi32(zp);
    c.lo = _mm512_set1_epi32(lo);
    c.hi = _mm512_set1_epi32(hi);
    return c;
}

/* rq512_apply before its zero point and clamp: the 16 requantized values as int32. */
T_VNNI static INLINE __m512i rq512_scaled(__m512i acc, const rq512_t *c) {
    const __m512i neg = _mm512_set1_epi64(-((int64_t)1 << 30)), r31 = _mm512_set1_epi64((int64_t)1 << 31);
    const __m512i pe = _mm512_mul_epi32(acc, c->mul);
    const __m512i po = _mm512_mul_epi32(_mm512_shuffle_epi32(acc, (_MM_PERM_ENUM)0xF5), c->mul_odd);
    __m512i te = _mm512_add_epi64(pe, c->add_even), to = _mm512_add_epi64(po, c->add_odd);
    te = _mm512_mask_sub_epi64(te, _mm512_cmplt_epi64_mask(pe, neg), te, r31);
    to = _mm512_mask_sub_epi64(to, _mm512_cmplt_epi64_mask(po, neg), to, r31);
    te = _mm512_srav_epi64(te, c->shift_even);
    to = _mm512_srav_epi64(to, c->shift_odd);
    /* the odd lanes' values (each in its qword's low dword) moved up into te's odd lanes: one masked VPSHUFD */
    return _mm512_mask_shuffle_epi32(te, (__mmask16)0xAAAA, to, (_MM_PERM_ENUM)0xB1);
}

/* Two blocks' requantized int32 (q0: channels c0 .. c0 + 15, q1: the next 16) as 32 int8 in channel order:
 * + zp and the clamp on the packed values (VPACKSSDW, VPADDSW, VPACKSSWB, one VPERMD, then max / min on 32 bytes:
 * six operations for 32 outputs where rq512_apply's tail spends ten). Exact: q fits int32; saturating to int16 and
 * adding a zero point in [-128, 127] with saturation keeps every q + zp outside [-128, 127] outside it on the same
 * side, and lo / hi lie in [-128, 127]. */
T_VNNI static INLINE __m256i rq512_pack2(__m512i q0, __m512i q1, __m512i zp16, __m256i lo8, __m256i hi8) {
    /* after the two packs each 128-bit lane L holds q0[4L..4L+3], q1[4L..4L+3] as bytes (dwords 4L, 4L + 1) */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i w16 = _mm512_adds_epi16(_mm512_packs_epi32(q0, q1), zp16);
    const __m256i b = _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, _mm512_packs_epi16(w16, w16)));
    return _mm256_min_epi8(_mm256_max_epi8(b, lo8), hi8);
}

T_VNNI static INLINE __m512i rq512_apply(__m512i acc, const rq512_t *c) {
    const __m512i neg = _mm512_set1_epi64(-((int64_t)1 << 30)), r31 = _mm512_set1_epi64((int64_t)1 << 31);
    const __m512i pe = _mm512_mul_epi32(acc, c->mul);
    const __m512i po = _mm512_mul_epi32(_mm512_shuffle_epi32(acc, (_MM_PERM_ENUM)0xF5), c->mul_odd);
    __m512i te = _mm512_add_epi64(pe, c->add_even), to = _mm512_add_epi64(po, c->add_odd), q;
    te = _mm512_mask_sub_epi64(te, _mm512_cmplt_epi64_mask(pe, neg), te, r31);
    to = _mm512_mask_sub_epi64(to, _mm512_cmplt_epi64_mask(po, neg), to, r31);
    te = _mm512_srav_epi64(te, c->shift_even);
    to = _mm512_srav_epi64(to, c->shift_odd);
    q = _mm512_mask_shuffle_epi32(te, (__mmask16)0xAAAA, to, (_MM_PERM_ENUM)0xB1);
    q = _mm512_add_epi32(q, c->zp);
    return _mm512_min_epi32(_mm512_max_epi32(q, c->lo), c->hi);
}

/* The output step of the VNNI tiles (vnni_tile, qconv_tile): acc[r][b] (its sums from the bias) requantized into y's row r at
 * columns (j + b) * 16 .., for the rows RCOND keeps, blocks [0, NB), nvalid columns valid from j * 16. Pairs of
 * whole blocks go through rq512_pack2 (32 bytes a store) when the output's zero point and clamp are int8's, the
 * others (a last odd or partial block) through rq512_apply and a masked 16-byte store. b, r, acc, g, bias, mul, rs,
 * j, NB, nvalid, y, ldy: the tile's. */
#define VNNI_REQUANT_STORE(UNROLL_R, UNROLL_B, RMAX, RCOND)                                                    \
    do {                                                                                                     \
        const int pairs = g->zp >= -128 && g->zp <= 127 && g->lo >= -128 && g->hi <= 127;                     \
        uint32_t done = 0;                                                                                   \
        UNROLL_B                                                                                             \
        for (b = 0; b < 4; b += 2) {                                                                         \
            if (pairs && b + 1 < NB && nvalid - b * VNNI_NB >= 2 * VNNI_NB) {                                \
                const int32_t c0 = (j + b) * VNNI_NB;                                                        \
                const rq512_t rq0 = rq512_prep(_mm512_loadu_si512((const void *)(mul + c0)),                 \
                                               _mm512_loadu_si512((const void *)(rs + c0)), g->zp, g->lo, g->hi); \
                const rq512_t rq1 = rq512_prep(_mm512_loadu_si512((const void *)(mul + c0 + VNNI_NB)),       \
                                               _mm512_loadu_si512((const void *)(rs + c0 + VNNI_NB)), g->zp, g->lo, \
                                               g->hi);                                                       \
                const __m512i zp16 = _mm512_set1_epi16((int16_t)g->zp);                                      \
                const __m256i lo8 = _mm256_set1_epi8((char)g->lo), hi8 = _mm256_set1_epi8((char)g->hi);     \
                UNROLL_R                                                                                     \
                for (r = 0; r < RMAX; r++)                                                                   \
                    if (RCOND)                                                                               \
                        _mm256_storeu_si256((__m256i *)(y + (int64_t)r * ldy + c0),                          \
                                            rq512_pack2(rq512_scaled(acc[r][b], &rq0),                       \
                                                        rq512_scaled(acc[r][b + 1], &rq1),                   \
                                                        zp16, lo8, hi8));                                    \
                done |= 3u << b;                                                                             \
            }                                                                                                \
        }                                                                                                    \
        UNROLL_B                                                                                             \
        for (b = 0; b < 4; b++) {                                                                            \
            if (b < NB && !(done >> b & 1u)) {                                                               \
                const int32_t c0 = (j + b) * VNNI_NB, left = nvalid - b * VNNI_NB;                           \
                const rq512_t rq = rq512_prep(_mm512_loadu_si512((const void *)(mul + c0)),                  \
                                              _mm512_loadu_si512((const void *)(rs + c0)), g->zp, g->lo, g->hi); \
                const __mmask16 mask = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);      \
                UNROLL_R                                                                                     \
                for (r = 0; r < RMAX; r++)                                                                   \
                    if (RCOND)                                                                               \
                        _mm_mask_storeu_epi8((void *)(y + (int64_t)r * ldy + c0), mask,                      \
                                             _mm512_cvtepi32_epi8(rq512_apply(acc[r][b], &rq)));              \
            }                                                                                                \
        }                                                                                                    \
    } while (0)

/* MR rows of the work area (u8, a ^ 0x80, interleaved: step s of row r at a[s * GEMM_MR * 4 + r * 4], so that every
 * broadcast is at a constant offset from one pointer: 12 rows' addresses in registers spilled the GPRs) x NB blocks
 * of 16 channels from block j: MR x NB sums in registers (MR * NB <= 24, + NB weight vectors + the broadcast: at
 * most 29 of the 32 zmm), each 4-byte k step of a row broadcast once (a load) and multiplied into the NB blocks,
 * each weight vector loaded once per step for the MR rows. Then rows [0, mr) requantized into y (stride ldy),
 * columns j * 16 .. nvalid past it; rows mr .. MR - 1 are the work area's stale rows (their sums never stored).
 * MR and NB constants: the loops unrolled (GCC does not at -O2 by itself; the sums went to memory, a load and a
 * store around each VPDPBUSD: 2.0-3.0x XNNPACK's time on mobilenet_v2's 1x1 layers). */
#define GEMM_PRAGMA(x) _Pragma(#x)
#define GEMM_UNROLL_MR GEMM_PRAGMA(GCC unroll 12)
#define GEMM_UNROLL_NB GEMM_PRAGMA(GCC unroll 4)
T_VNNI static INLINE void vnni_tile(const edge_simd_qgemm_t *g, const uint8_t *a, int32_t MR, int32_t mr, int32_t j,
                                    int32_t NB, int32_t nvalid, int8_t *y, int32_t ldy) {
    const int32_t kpad = g->kpad, npad = g->npad, steps = kpad / 4;
    const int32_t *bias = (const int32_t *)g->packed, *mul = bias + npad, *rs = mul + npad;
    const int8_t *w = (const int8_t *)(rs + npad) + (int64_t)j * kpad * VNNI_NB;
    const int64_t pstride = (int64_t)kpad * VNNI_NB;
    __m512i acc[GEMM_MR][4], wv[4];
    int32_t r, s, b;
    GEMM_UNROLL_MR
    for (r = 0; r < GEMM_MR; r++)
        GEMM_UNROLL_NB
        for (b = 0; b < 4; b++) /* the sums start at the bias (int32 adds in any order: the same sums) */
            if (r < MR && b < NB) acc[r][b] = _mm512_loadu_si512((const void *)(bias + (j + b) * VNNI_NB));
    for (s = 0; s < steps; s++, w += 64, a += 4 * GEMM_MR) {
        GEMM_UNROLL_NB
        for (b = 0; b < 4; b++)
            if (b < NB) wv[b] = _mm512_loadu_si512((const void *)(w + b * pstride));
        GEMM_UNROLL_MR
        for (r = 0; r < GEMM_MR; r++) {
            if (r < MR) {
                int32_t v;
                __m512i x;
                memcpy(&v, a + 4 * r, 4);
                x = _mm512_set1_epi32(v);
                GEMM_UNROLL_NB
                for (b = 0; b < 4; b++)
                    if (b < NB) acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], x, wv[b]);
            }
        }
    }
    VNNI_REQUANT_STORE(GEMM_UNROLL_MR, GEMM_UNROLL_NB, GEMM_MR, r < MR && r < mr);
}

/* One row (FULLY_CONNECTED with one batch) against up to ROW_NB blocks j.. at once, one broadcast of a per k step
 * for them, each block's even and odd k steps in two sums (four chains: VPDPBUSD's latency hidden). Two blocks, not
 * eight: eight weight streams kpad * 16 bytes apart (16 KB at k 1024: one L1 set) ran at half the speed of two
 * (C microbenchmark, min of 40 rounds: 1000 x 1024 17.4 -> 9.2 us, 1024 x 576 9.7 -> 4.6 us). */
#define ROW_NB 2
T_VNNI static void vnni_row(const edge_simd_qgemm_t *g, const uint8_t *a, int32_t j, int32_t nb, int32_t nvalid,
                            int8_t *y) {
    const int32_t kpad = g->kpad, npad = g->npad, steps = kpad / 4;
    const int32_t *bias = (const int32_t *)g->packed, *mul = bias + npad, *rs = mul + npad;
    const int8_t *w = (const int8_t *)(rs + npad) + (int64_t)j * kpad * VNNI_NB;
    const int64_t pstride = (int64_t)kpad * VNNI_NB;
    __m512i acc[ROW_NB], odd[ROW_NB];
    int32_t s, bb;
    for (bb = 0; bb < ROW_NB; bb++) acc[bb] = odd[bb] = _mm512_setzero_si512();
    if (nb == ROW_NB) { /* even and odd k steps in separate sums, added at the end (int32: the same sums) */
        for (s = 0; s + 2 <= steps; s += 2) {
            int32_t v0, v1;
            __m512i x0, x1;
            memcpy(&v0, a + 4 * s, 4);
            memcpy(&v1, a + 4 * s + 4, 4);
            x0 = _mm512_set1_epi32(v0);
            x1 = _mm512_set1_epi32(v1);
            for (bb = 0; bb < ROW_NB; bb++) { /* unrolled: the sums stay in registers */
                const int8_t *wb = w + bb * pstride + 64 * (int64_t)s;
                acc[bb] = _mm512_dpbusd_epi32(acc[bb], x0, _mm512_loadu_si512((const void *)wb));
                odd[bb] = _mm512_dpbusd_epi32(odd[bb], x1, _mm512_loadu_si512((const void *)(wb + 64)));
            }
        }
        for (; s < steps; s++) {
            int32_t v;
            __m512i x;
            memcpy(&v, a + 4 * s, 4);
            x = _mm512_set1_epi32(v);
            for (bb = 0; bb < ROW_NB; bb++)
                acc[bb] = _mm512_dpbusd_epi32(acc[bb], x, _mm512_loadu_si512((const void *)(w + bb * pstride + 64 * (int64_t)s)));
        }
        for (bb = 0; bb < ROW_NB; bb++) acc[bb] = _mm512_add_epi32(acc[bb], odd[bb]);
    } else {
        for (s = 0; s < steps; s++) {
            int32_t v;
            __m512i x;
            memcpy(&v, a + 4 * s, 4);
            x = _mm512_set1_epi32(v);
            for (bb = 0; bb < ROW_NB; bb++)
                if (bb < nb)
                    acc[bb] = _mm512_dpbusd_epi32(acc[bb], x,
                                                  _mm512_loadu_si512((const void *)(w + bb * pstride + 64 * (int64_t)s)));
        }
    }
    {
        for (bb = 0; bb < nb; bb++) {
            const int32_t c0 = (j + bb) * VNNI_NB, left = nvalid - bb * VNNI_NB;
            const __mmask16 mask = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
            const rq512_t rq = rq512_prep(_mm512_loadu_si512((const void *)(mul + c0)),
                                          _mm512_loadu_si512((const void *)(rs + c0)), g->zp, g->lo, g->hi);
            const __m512i q = rq512_apply(_mm512_add_epi32(acc[bb], _mm512_loadu_si512((const void *)(bias + c0))), &rq);
            _mm_mask_storeu_epi8((void *)(y + c0), mask, _mm512_cvtepi32_epi8(q));
        }
    }
}

T_VNNI static void vnni_rows(const edge_simd_qgemm_t *g, const uint8_t *a, int32_t mr, int32_t n0, int32_t n1,
                             int8_t *y, int32_t ldy) {
    int32_t j = n0 / VNNI_NB;
    const int32_t jend = (n1 + VNNI_NB - 1) / VNNI_NB;
    if (mr == 1) {
        for (; j < jend; j += ROW_NB)
            vnni_row(g, a, j, jend - j < ROW_NB ? jend - j : ROW_NB, n1 - j * VNNI_NB, y);
        return;
    }
    /* 6 rows x 4 blocks (64 channels) while 4 blocks are left, the two halves of the work area's 12 rows; the last
     * 1..3 blocks as 6 x 3 or 12 x 2 / 12 x 1 (no more than 24 sums). At most 6 rows: 6-row tiles only. */
    for (; j < jend; j += 4) {
        const int32_t nb = jend - j < 4 ? jend - j : 4, nvalid = n1 - j * VNNI_NB;
        if (nb >= 3 || mr <= 6) {
#define GEMM_HALVES(NB)                                                                                            \
    do {                                                                                                           \
        vnni_tile(g, a, 6, mr, j, NB, nvalid, y, ldy);                                                             \
        if (mr > 6) vnni_tile(g, a + 6 * 4, 6, mr - 6, j, NB, nvalid, y + 6 * (int64_t)ldy, ldy);                \
    } while (0)
            if (nb == 4) GEMM_HALVES(4);
            else if (nb == 3) GEMM_HALVES(3);
            else if (nb == 2) GEMM_HALVES(2);
            else GEMM_HALVES(1);
#undef GEMM_HALVES
        } else if (nb == 2) {
            vnni_tile(g, a, GEMM_MR, mr, j, 2, nvalid, y, ldy);
        } else {
            vnni_tile(g, a, GEMM_MR, mr, j, 1, nvalid, y, ldy);
        }
    }
}

/* One row of k values as vnni_tile reads it (step s at dst[s * GEMM_MR * 4]), flipped to unsigned (a ^ 0x80), the
 * steps past k 0x80 (0 ^ 0x80, times the packing's zero weights): one dword at a time on the scalar ports, where
 * VPSCATTERDD cost more than the tiles' share of a row at k 8..24 (112x112x16 -> 96: 13% of the layer). */
static inline void vnni_interleave_row(const int8_t *src, int32_t k, int32_t kpad, uint8_t *dst) {
    int32_t s;
    for (s = 0; s < k / 4; s++) {
        uint32_t v;
        memcpy(&v, src + 4 * s, 4);
        v ^= 0x80808080u;
        memcpy(dst + (int64_t)s * GEMM_MR * 4, &v, 4);
    }
    for (; 4 * s < kpad; s++) {
        uint32_t v = 0;
        if (4 * s < k) memcpy(&v, src + 4 * s, (size_t)(k - 4 * s));
        v ^= 0x80808080u;
        memcpy(dst + (int64_t)s * GEMM_MR * 4, &v, 4);
    }
}

T_VNNI static void vnni_gemm(const edge_simd_qgemm_t *g, const int8_t *a, int32_t m, int32_t lda, int32_t n0,
                             int32_t n1, int8_t *y, int32_t ldy, void *work) {
    const int32_t k = g->k, kpad = g->kpad;
    uint8_t *buf = (uint8_t *)work;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const __m512i sidx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(GEMM_MR)); /* dword s of a row: s * GEMM_MR */
    int32_t m0, r;
    for (m0 = 0; m0 < m; m0 += GEMM_MR) {
        const int32_t mr = m - m0 < GEMM_MR ? m - m0 : GEMM_MR;
        if (mr == 1) { /* vnni_row: the row as it is, k padded */
            const int8_t *src = a + (int64_t)m0 * lda;
            int32_t i = 0;
            for (; i + 64 <= k; i += 64)
                _mm512_storeu_si512((void *)(buf + i), _mm512_xor_si512(_mm512_loadu_si512((const void *)(src + i)), flip));
            if (i < kpad) {
                const __mmask64 mk = k - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (k - i)) - 1);
                const __mmask64 mp = kpad - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (kpad - i)) - 1);
                /* past k: 0 ^ 0x80 (times the zero weights of the padding) */
                _mm512_mask_storeu_epi8((void *)(buf + i), mp,
                                        _mm512_xor_si512(_mm512_maskz_loadu_epi8(mk, (const void *)(src + i)), flip));
            }
        } else if (kpad <= 64) { /* 16 steps or fewer: dword copies, not a 16-lane scatter per row */
            for (r = 0; r < mr; r++)
                vnni_interleave_row(a + (int64_t)(m0 + r) * lda, k, kpad, buf + 4 * r);
        } else {
            for (r = 0; r < mr; r++) { /* rows as unsigned (a ^ 0x80), interleaved (vnni_tile), k padded with 0x80 */
                const int8_t *src = a + (int64_t)(m0 + r) * lda;
                int32_t i;
                for (i = 0; i < kpad; i += 64) { /* 16 steps: one dword every GEMM_MR dwords */
                    const __mmask64 mk = k - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (k - i)) - 1);
                    const __mmask16 ms = kpad - i >= 64 ? (__mmask16)0xFFFF : (__mmask16)((1u << ((kpad - i) / 4)) - 1u);
                    _mm512_mask_i32scatter_epi32((void *)(buf + 4 * r + (int64_t)i * GEMM_MR), ms, sidx,
                                                 _mm512_xor_si512(_mm512_maskz_loadu_epi8(mk, (const void *)(src + i)), flip), 4);
                }
            }
        }
        vnni_rows(g, buf, mr, n0, n1, y + (int64_t)m0 * ldy, ldy);
    }
}

/* ------------------------------------------------------------------------------------- int8 GEMM, few channels */

/* edge_simd_qgemm_few's kernel (few_pack's layout): one vector of 16 lanes is px = 16 / n2 pixels x n2 channels, so a
 * 16-channel block's 15 idle lanes (a U-Net's 16 -> 1 head) and its requantization per pixel are gone. The vector's
 * pixels come in GROUPS groups of gp (gp * k <= 128 bytes: two 64-byte loads at the group's first pixel); step s's
 * dwords of each pixel are moved to its n2 lanes by one VPERMT2D per group (the groups' results blended), flipped to
 * unsigned (x ^ 0x80, the -128 in the bias as in vnni_gemm) and multiplied by VPDPBUSD into the lanes' sums from the
 * bias; requantized as the VNNI tiles (rq512_apply on 16 lanes with the lanes' constants); channels past n dropped
 * by VPCOMPRESSD. blk: the vector's first pixel's bytes, at least (GROUPS - 1) * gp * k + 128 readable. */
#define FEW_PRAGMA(x) _Pragma(#x)
#define FEW_UNROLL_G FEW_PRAGMA(GCC unroll 8)
T_VNNI static INLINE __m512i few_vector(const int8_t *blk, int32_t k, int32_t steps, int32_t gp, int32_t n2,
                                        int32_t GROUPS, const int32_t *perm, const int32_t *wv, __m512i acc) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const int64_t gstep = (int64_t)gp * k;
    const __mmask16 glanes = (__mmask16)((1u << (gp * n2)) - 1u);
    int32_t s, gi;
    for (s = 0; s < steps; s++) {
        const __m512i idx = _mm512_loadu_si512((const void *)(perm + 16 * s));
        __m512i v = _mm512_permutex2var_epi32(_mm512_loadu_si512((const void *)blk), idx,
                                              _mm512_loadu_si512((const void *)(blk + 64)));
        FEW_UNROLL_G
        for (gi = 1; gi < 8; gi++)
            if (gi < GROUPS)
                v = _mm512_mask_blend_epi32((__mmask16)(glanes << (gi * gp * n2)), v,
                                            _mm512_permutex2var_epi32(
                                                _mm512_loadu_si512((const void *)(blk + gi * gstep)), idx,
                                                _mm512_loadu_si512((const void *)(blk + gi * gstep + 64))));
        acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(v, flip), _mm512_loadu_si512((const void *)(wv + 16 * s)));
    }
    return acc;
}

T_VNNI static INLINE void few_rows(const edge_simd_qgemm_t *g, const int8_t *a, int32_t m, int8_t *y, int32_t GROUPS) {
    const int32_t n = g->n, k = g->k, steps = k / 4, n2 = few_n2(n), px = 16 / n2, gp = few_group(n, k);
    const int32_t *lane = (const int32_t *)((const int8_t *)g->packed + 12 * (size_t)g->npad +
                                            (size_t)g->npad * (size_t)g->kpad);
    const int32_t *perm = lane + 48, *wv = perm + 16 * steps;
    const __m512i bias = _mm512_loadu_si512((const void *)lane);
    const rq512_t rq = rq512_prep(_mm512_loadu_si512((const void *)(lane + 16)),
                                  _mm512_loadu_si512((const void *)(lane + 32)), g->zp, g->lo, g->hi);
    __mmask16 keep = 0;
    const int64_t total = (int64_t)m * k, reach = (int64_t)(GROUPS - 1) * gp * k + 128;
    int8_t tail[16 * FEW_K + 128]; /* the last vectors' pixels, zero-padded: no read past a's end */
    int32_t p, l;
    for (l = 0; l < 16; l++)
        if (l % n2 < n) keep |= (__mmask16)(1u << l);
    for (p = 0; p < m; p += px) {
        const int32_t left = m - p < px ? m - p : px, bytes = left * n;
        const int8_t *blk = a + (int64_t)p * k;
        __m512i q;
        if ((int64_t)p * k + reach > total) { /* the bytes the loads reach: the pixels left, then zeros */
            memcpy(tail, blk, (size_t)left * (size_t)k);
            memset(tail + (int64_t)left * k, 0, (size_t)(reach - (int64_t)left * k));
            blk = tail;
        }
        q = rq512_apply(few_vector(blk, k, steps, gp, n2, GROUPS, perm, wv, bias), &rq);
        if (n2 != n) q = _mm512_maskz_compress_epi32(keep, q);
        _mm_mask_storeu_epi8((void *)(y + (int64_t)p * n),
                             bytes >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << bytes) - 1u), _mm512_cvtepi32_epi8(q));
    }
}

/* Rows [0, m) of a (k bytes each, contiguous) into y (n bytes a row, contiguous) for edge_simd_qgemm_few's shapes. */
T_VNNI static void few_gemm(const edge_simd_qgemm_t *g, const int8_t *a, int32_t m, int8_t *y) {
    const int32_t groups = 16 / few_n2(g->n) / few_group(g->n, g->k);
    if (groups == 1) few_rows(g, a, m, y, 1);
    else if (groups == 2) few_rows(g, a, m, y, 2);
    else if (groups == 4) few_rows(g, a, m, y, 4);
    else few_rows(g, a, m, y, 8);
}

/* ------------------------------------------------------------------------------------- int8 conv, indirection */

/* edge_simd_qconv (edge_simd.h): QCONV_MR output pixels x nb (1..4) blocks of 16 channels a tile, every tap's row
 * found through the tables (no window copied), each 4-byte step of it broadcast, flipped to unsigned (x ^ 0x80:
 * x + 128, the -128 folded into the bias as in vnni_gemm) and multiplied into the nb blocks by VPDPBUSD. A tap's
 * last step when c % 4 != 0 loads its c % 4 bytes masked (never a byte past the row: the input may end there);
 * the packed filter holds zeros at the padded positions. Up to 6 x 4 = 24 sums in registers (+ 4 weight vectors,
 * the broadcast and the flip: 30 of the 32 zmm). */
#define QCONV_MR 6
#define QCONV_NB 4
enum { QCONV_MASKED = 0, QCONV_ANY = 1, QCONV_ROW = 2 }; /* qconv_tile's modes */
/* every loop over the tile's rows and blocks unrolled (GCC does not at -O2: the sums went to memory, a load and a
 * store around each VPDPBUSD) */
#define QCONV_PRAGMA(x) _Pragma(#x)
#define QCONV_UNROLL_MR QCONV_PRAGMA(GCC unroll 6)
#define QCONV_UNROLL_NB QCONV_PRAGMA(GCC unroll 4)

static int32_t qconv_cpad(int32_t c) { return round_up(c, 4); }

/* ------------------------------------------------------------------------------------- int8 conv, pixel lanes */

/* Few input channels (c <= 4: a network's first layer, c 3): qconv_tile's taps are one VPDPBUSD step each, a
 * quarter to three quarters of its bytes padding (c 3: 9 steps for k 27), and every step broadcasts and flips one
 * dword per pixel for a single 16-channel block (o 16: three operations a VPDPBUSD). Here the vector's 16 lanes are
 * 16 output pixels of one output row and each channel has its own sum: k = kh * kw * c is packed as it lies (c 3,
 * 3x3: 7 steps of 4, not 9), and a step's 16 dwords come from the pixels' input row by one VPERMT2B over that row's
 * 128-byte window (16 pixels' windows at sxb bytes apart: 15 sxb + kw c <= 128), flipped once per window; a step
 * whose 4 bytes straddle two filter rows blends the two rows' permutes. Then 16 VPDPBUSD with the channels' weight
 * dwords broadcast from memory: one activation vector serves 16 channels where qconv_tile built one per pixel.
 * The window is loaded masked to its input row (bytes outside it, and rows outside the input, are the input's zero
 * point: x + input_offset = 0, as qconv_tile's zero row), so border pixels need no other path and nothing is read
 * outside the input. Sums per channel (lanes = pixels) are requantized with the channel's constants (rq512_scaled's
 * arithmetic: the same bytes), packed to bytes and transposed to pixel-major (two packs, a 4 x 4 exchange of 128-bit
 * lanes, one VPERMB). One-op cuts, thread CPU time, qconv_tile -> here (benchmarks/conv_igemm.py, loaded machine):
 * 96x96x3 3x3 -> 16 s2 25.9 -> 15.7 us (XNNPACK 18.3), s1 100.9 -> 60.2 (69.9), 5x5 -> 24 s2 64.4 -> 49.8,
 * 3x3 -> 32 s2 35.8 -> 29.7, 226x226x3 -> 32 s2 189.3 -> 158.1 (185.3). */
#define LANES_PX 16
#define LANES_KH 8     /* filter rows held as windows */
#define LANES_STEPS 64 /* a group's activation vectors, one per 4 bytes of k (on the stack: 4 KB) */
/* VPERMT2B / VPERMB: AVX-512 VBMI, which not every AVX-512 VNNI CPU has (lanes_cpu asks cpuid) */
#define T_LANES __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))
static int lanes_cpu(void) {
    static int vbmi = -1; /* racing threads store the same answer */
    if (vbmi < 0) {
        __builtin_cpu_init();
        vbmi = __builtin_cpu_supports("avx512vbmi") ? 1 : 0;
    }
    return vbmi;
}

typedef struct {
    int32_t steps, kwc, sxb, col0, rowbytes, kh, nblk, o, zp8, zp, lo, hi;
    int32_t meta, idx, wq, mulc, addc, shc; /* byte offsets from the block's start */
    int32_t mode;                           /* LANES_WINDOW or LANES_POINT */
} lanes_head_t;

typedef struct {
    uint64_t mask; /* bytes of the blend taken from row fb (4 lane + byte) */
    int32_t fa, fb;
} lanes_meta_t;

/* The two forms: LANES_WINDOW (the windows above), LANES_POINT (a 1x1 stride-1 filter without padding on 8..64
 * channels, a multiple of 4, into at most two blocks: the projections into 16 - 32 channels, where qconv_tile's one or
 * two blocks spend a broadcast and a flip per pixel and step: 16 pixels' c bytes are c / 4 contiguous 64-byte loads,
 * step s's vector takes pixel p's dword p c / 4 + s from its pair of loads by VPERMT2D, the pairs blended). Cuts as
 * above: 48x48x32 -> 16 24.0 -> 17.0 us, 112x112x32 -> 16 121.9 -> 89.1, 24x24x16 -> 16 5.7 -> 3.7, 48x48x24 -> 28
 * 30.1 -> 27.5, 24x24x48 -> 16 7.2 -> 6.9 (the gain falls as c grows: a step blends c / 8 pairs). Kept to those
 * shapes: not measured past 64 channels or two blocks (where qconv_tile's blocks share each broadcast). */
enum { LANES_WINDOW = 1, LANES_POINT = 2 };
static int32_t lanes_fit(const edge_simd_dwf_t *p, int32_t o) {
    const int32_t kwc = p->kw * p->c;
    if (p->kh == 1 && p->kw == 1 && p->sh == 1 && p->sw == 1 && p->pt == 0 && p->pl == 0 && p->c % 4 == 0 &&
        p->c >= 8 && p->c <= 64 && o <= 2 * VNNI_NB)
        return LANES_POINT;
    return p->c <= 4 && kwc >= 3 && p->dw == 1 && p->kh <= LANES_KH && 15 * p->sw * p->c + kwc <= 128 &&
                   p->kh * kwc <= 4 * LANES_STEPS
               ? LANES_WINDOW
               : 0;
}

static size_t lanes_layout(const edge_simd_dwf_t *p, int32_t o, lanes_head_t *h) {
    const int32_t k = p->kh * p->kw * p->c, steps = (k + 3) / 4, npad = round_up(o, VNNI_NB);
    size_t at = (size_t)round_up((int32_t)sizeof(lanes_head_t), 64);
    if (h) {
        h->steps = steps;
        h->kwc = p->kw * p->c;
        h->sxb = p->sw * p->c;
        h->col0 = -p->pl * p->c;
        h->rowbytes = p->w * p->c;
        h->kh = p->kh;
        h->nblk = npad / VNNI_NB;
        h->o = o;
        h->meta = (int32_t)at;
    }
    at += (size_t)round_up(steps * (int32_t)sizeof(lanes_meta_t), 64);
    if (h) h->idx = (int32_t)at;
    at += (size_t)steps * 128;
    if (h) h->wq = (int32_t)at;
    at += (size_t)npad * (size_t)steps * 4;
    if (h) h->mulc = (int32_t)at;
    at += (size_t)npad * 4;
    at = (size_t)round_up((int32_t)at, 8);
    if (h) h->addc = (int32_t)at;
    at += (size_t)npad * 8;
    if (h) h->shc = (int32_t)at;
    at += (size_t)npad * 8;
    return at;
}

/* Fills the block at dst (lanes_layout's bytes): the steps' filter rows, permutes and blend masks, the weights as
 * [block][step][16 channels] dwords (bytes past k zero), the channels' requantization constants (g's head). */
static void lanes_pack(const edge_simd_qgemm_t *g, const edge_simd_dwf_t *p, int32_t o, const int8_t *w,
                       int32_t input_offset, uint8_t *dst) {
    lanes_head_t h;
    const int32_t k = p->kh * p->kw * p->c;
    const int32_t *mul = (const int32_t *)g->packed + g->npad, *rs = mul + g->npad;
    int32_t s, l, b, ch;
    lanes_layout(p, o, &h);
    h.mode = lanes_fit(p, o);
    h.zp8 = -input_offset;
    h.zp = g->zp;
    h.lo = g->lo;
    h.hi = g->hi;
    memcpy(dst, &h, sizeof h);
    for (s = 0; s < h.steps; s++) {
        lanes_meta_t m;
        uint8_t *ia = dst + h.idx + (size_t)s * 128, *ib = ia + 64;
        const int32_t last = 4 * s + 3 < k ? 4 * s + 3 : k - 1;
        m.fa = 4 * s / h.kwc;
        m.fb = last / h.kwc; /* kwc >= 3: 4 bytes touch at most two filter rows */
        m.mask = 0;
        for (l = 0; l < LANES_PX; l++)
            for (b = 0; b < 4; b++) {
                const int32_t t = 4 * s + b, row = t < k ? t / h.kwc : -1, at = t - row * h.kwc;
                ia[4 * l + b] = (uint8_t)(l * h.sxb + (row == m.fa ? at : 0));
                ib[4 * l + b] = (uint8_t)(l * h.sxb + (row == m.fb ? at : 0));
                if (row == m.fb && m.fb != m.fa) m.mask |= (uint64_t)1 << (4 * l + b);
            }
        memcpy(dst + h.meta + (size_t)s * sizeof m, &m, sizeof m);
    }
    for (ch = 0; ch < g->npad; ch++) {
        int32_t *wq = (int32_t *)(dst + h.wq) + (int64_t)(ch / VNNI_NB) * h.steps * VNNI_NB + ch % VNNI_NB;
        const int64_t add = ((int64_t)1 << 30) + ((int64_t)1 << (30 + rs[ch])), sh = 31 + rs[ch];
        for (s = 0; s < h.steps; s++) {
            int8_t b4[4] = {0, 0, 0, 0};
            for (b = 0; b < 4; b++)
                if (ch < o && 4 * s + b < k) b4[b] = w[(int64_t)ch * k + 4 * s + b]; /* [o][kh][kw][c]: k in order */
            memcpy(&wq[(int64_t)s * VNNI_NB], b4, 4);
        }
        memcpy(dst + h.mulc + (size_t)ch * 4, &mul[ch], 4);
        memcpy(dst + h.addc + (size_t)ch * 8, &add, 8);
        memcpy(dst + h.shc + (size_t)ch * 8, &sh, 8);
    }
}

/* The bytes [lo, hi) of a 64-byte load as its mask (lo, hi clamped to [0, 64]). */
static inline __mmask64 lanes_range(int64_t lo, int64_t hi) {
    lo = lo < 0 ? 0 : lo > 64 ? 64 : lo;
    hi = hi < 0 ? 0 : hi > 64 ? 64 : hi;
    if (hi <= lo) return 0;
    return (hi - lo == 64 ? ~(__mmask64)0 : (((__mmask64)1 << (hi - lo)) - 1)) << lo;
}

/* Block j's sums (acc[ch]: channel c0 + ch, lanes = the group's pixels) requantized, packed and stored as the n
 * pixels' bytes at y (the group's first pixel; o bytes a pixel, channels c0 .. c0 + nc). */
T_LANES static INLINE void lanes_store(const lanes_head_t *h, const uint8_t *blk, const __m512i *acc, int32_t c0,
                                       int32_t nc, int32_t n, int8_t *y) {
    /* the order of a group's bytes after the packs and the lane exchange: output byte 16 i + 4 v + j (pixel i of
     * the 128-bit lane, channel 4 v + j) from byte 16 v + 4 j + i */
    const __m512i order = _mm512_set_epi8(
        63, 59, 55, 51, 47, 43, 39, 35, 31, 27, 23, 19, 15, 11, 7, 3, 62, 58, 54, 50, 46, 42, 38, 34, 30, 26, 22, 18,
        14, 10, 6, 2, 61, 57, 53, 49, 45, 41, 37, 33, 29, 25, 21, 17, 13, 9, 5, 1, 60, 56, 52, 48, 44, 40, 36, 32, 28,
        24, 20, 16, 12, 8, 4, 0);
    const __m512i zp16 = _mm512_set1_epi16((int16_t)h->zp);
    const __m512i lo8 = _mm512_set1_epi8((char)h->lo), hi8 = _mm512_set1_epi8((char)h->hi);
    const __m512i neg = _mm512_set1_epi64(-((int64_t)1 << 30)), r31 = _mm512_set1_epi64((int64_t)1 << 31);
    __m512i v[4];
    int32_t ch;
    /* requantized (rq512_scaled with the channel's constants in every lane), + zp and the clamp on the
     * packed bytes (rq512_pack2's steps): v[g] lane L byte 4 j + i = channel 4 g + j, pixel 4 L + i */
    QCONV_PRAGMA(GCC unroll 4)
    for (ch = 0; ch < VNNI_NB; ch += 4) {
        __m512i qv[4];
        int32_t u;
        QCONV_PRAGMA(GCC unroll 4)
        for (u = 0; u < 4; u++) {
            const int32_t cc = c0 + ch + u;
            int32_t mc;
            int64_t ac, sc;
            memcpy(&mc, blk + h->mulc + (size_t)cc * 4, 4);
            memcpy(&ac, blk + h->addc + (size_t)cc * 8, 8);
            memcpy(&sc, blk + h->shc + (size_t)cc * 8, 8);
            {
                const __m512i mm = _mm512_set1_epi32(mc), add = _mm512_set1_epi64(ac), sh = _mm512_set1_epi64(sc);
                const __m512i pe = _mm512_mul_epi32(acc[ch + u], mm);
                const __m512i po = _mm512_mul_epi32(_mm512_shuffle_epi32(acc[ch + u], (_MM_PERM_ENUM)0xF5), mm);
                __m512i te = _mm512_add_epi64(pe, add), to = _mm512_add_epi64(po, add);
                te = _mm512_mask_sub_epi64(te, _mm512_cmplt_epi64_mask(pe, neg), te, r31);
                to = _mm512_mask_sub_epi64(to, _mm512_cmplt_epi64_mask(po, neg), to, r31);
                te = _mm512_srav_epi64(te, sh);
                to = _mm512_srav_epi64(to, sh);
                qv[u] = _mm512_mask_shuffle_epi32(te, (__mmask16)0xAAAA, to, (_MM_PERM_ENUM)0xB1);
            }
        }
        {
            const __m512i w01 = _mm512_adds_epi16(_mm512_packs_epi32(qv[0], qv[1]), zp16);
            const __m512i w23 = _mm512_adds_epi16(_mm512_packs_epi32(qv[2], qv[3]), zp16);
            v[ch / 4] = _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(w01, w23), lo8), hi8);
        }
    }
    {
        /* out[m]: 128-bit lane m of v[0..3] (pixels 4 m .. 4 m + 3), then pixel-major by VPERMB */
        const __m512i t0 = _mm512_shuffle_i64x2(v[0], v[1], 0x44), t1 = _mm512_shuffle_i64x2(v[0], v[1], 0xEE);
        const __m512i t2 = _mm512_shuffle_i64x2(v[2], v[3], 0x44), t3 = _mm512_shuffle_i64x2(v[2], v[3], 0xEE);
        __m512i out[4];
        int32_t mq, i;
        out[0] = _mm512_permutexvar_epi8(order, _mm512_shuffle_i64x2(t0, t2, 0x88));
        out[1] = _mm512_permutexvar_epi8(order, _mm512_shuffle_i64x2(t0, t2, 0xDD));
        out[2] = _mm512_permutexvar_epi8(order, _mm512_shuffle_i64x2(t1, t3, 0x88));
        out[3] = _mm512_permutexvar_epi8(order, _mm512_shuffle_i64x2(t1, t3, 0xDD));
        if (h->o == VNNI_NB) { /* the pixels' bytes are contiguous */
            for (mq = 0; mq < 4 && 4 * mq < n; mq++) {
                const int32_t px = n - 4 * mq >= 4 ? 4 : n - 4 * mq;
                _mm512_mask_storeu_epi8((void *)(y + (int64_t)4 * mq * VNNI_NB),
                                        px == 4 ? ~(__mmask64)0 : (((__mmask64)1 << (16 * px)) - 1), out[mq]);
            }
        } else {
            const __mmask16 cm = nc >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nc) - 1u);
            int8_t *yc = y + c0;
            for (mq = 0; mq < 4; mq++) {
                __m128i px4[4];
                px4[0] = _mm512_extracti32x4_epi32(out[mq], 0);
                px4[1] = _mm512_extracti32x4_epi32(out[mq], 1);
                px4[2] = _mm512_extracti32x4_epi32(out[mq], 2);
                px4[3] = _mm512_extracti32x4_epi32(out[mq], 3);
                for (i = 0; i < 4 && 4 * mq + i < n; i++)
                    _mm_mask_storeu_epi8((void *)(yc + (int64_t)(4 * mq + i) * h->o), cm, px4[i]);
            }
        }
    }
}

/* Every block's sums from the steps' activation vectors sv (lanes = the group's n pixels): bias, then per step 16
 * VPDPBUSD against the channels' weight dwords broadcast; stored by lanes_store. */
T_LANES static INLINE void lanes_blocks(const edge_simd_qconv_t *q, const uint8_t *blk, const __m512i *sv, int32_t n,
                                        int8_t *y) {
    const lanes_head_t *h = (const lanes_head_t *)blk;
    const int32_t *bias = (const int32_t *)q->g.packed;
    int32_t j, s, ch;
    for (j = 0; j < h->nblk; j++) {
        const int32_t *wq = (const int32_t *)(blk + h->wq) + (int64_t)j * h->steps * VNNI_NB;
        const int32_t c0 = j * VNNI_NB, nc = h->o - c0 < VNNI_NB ? h->o - c0 : VNNI_NB;
        __m512i acc[VNNI_NB];
        QCONV_PRAGMA(GCC unroll 16)
        for (ch = 0; ch < VNNI_NB; ch++) acc[ch] = _mm512_set1_epi32(bias[c0 + ch]);
        for (s = 0; s < h->steps; s++, wq += VNNI_NB) {
            QCONV_PRAGMA(GCC unroll 16)
            for (ch = 0; ch < VNNI_NB; ch++) acc[ch] = _mm512_dpbusd_epi32(acc[ch], sv[s], _mm512_set1_epi32(wq[ch]));
        }
        lanes_store(h, blk, acc, c0, nc, n, y);
    }
}

/* Pixels [ox, ox + n) (n <= 16) of output row oy, channel block j .. all blocks: y at the group's first pixel. */
T_LANES static void lanes_group(const edge_simd_qconv_t *q, const uint8_t *blk, const int8_t *x, int32_t oy,
                               int32_t ox, int32_t n, int8_t *y) {
    const lanes_head_t *h = (const lanes_head_t *)blk;
    const lanes_meta_t *meta = (const lanes_meta_t *)(blk + h->meta);
    const uint8_t *idx = blk + h->idx;
    const __m512i flip = _mm512_set1_epi8((char)0x80), zpb = _mm512_set1_epi8((char)h->zp8);
    const int64_t col = (int64_t)ox * h->sxb + h->col0; /* the group's window: bytes from here in each input row */
    __m512i win[LANES_KH][2], sv[LANES_STEPS];
    int32_t fy, s;
    for (fy = 0; fy < h->kh; fy++) {
        const int32_t r = q->rows[(int64_t)oy * h->kh + fy];
        if (r < 0) { /* a row outside the input: the zero point */
            win[fy][0] = win[fy][1] = _mm512_xor_si512(zpb, flip);
            continue;
        }
        const int8_t *row = x + r; /* bytes [col, col + 128) of it, the ones inside [0, rowbytes) read */
        win[fy][0] = _mm512_xor_si512(
            _mm512_mask_loadu_epi8(zpb, lanes_range(-col, h->rowbytes - col), (const void *)(row + col)), flip);
        win[fy][1] = _mm512_xor_si512(
            _mm512_mask_loadu_epi8(zpb, lanes_range(-col - 64, h->rowbytes - col - 64), (const void *)(row + col + 64)),
            flip);
    }
    for (s = 0; s < h->steps; s++) {
        const lanes_meta_t m = meta[s];
        __m512i a = _mm512_permutex2var_epi8(win[m.fa][0], _mm512_loadu_si512((const void *)(idx + 128 * s)),
                                             win[m.fa][1]);
        if (m.fb != m.fa)
            a = _mm512_mask_blend_epi8(m.mask, a,
                                       _mm512_permutex2var_epi8(win[m.fb][0],
                                                                _mm512_loadu_si512((const void *)(idx + 128 * s + 64)),
                                                                win[m.fb][1]));
        sv[s] = a;
    }
    lanes_blocks(q, blk, sv, n, y);
}

/* LANES_POINT: pixels [p, p + n) (n <= 16, contiguous: a 1x1 stride-1 filter's input pixel is its output pixel),
 * y at the first one. The group's 16 c bytes as c / 4 loads (masked to the n pixels': nothing read past the input),
 * flipped once; each step's vector built once for every block. */
T_LANES static void lanes_point(const edge_simd_qconv_t *q, const uint8_t *blk, const int8_t *x, int32_t p, int32_t n,
                                int8_t *y) {
    const lanes_head_t *h = (const lanes_head_t *)blk;
    const int32_t c = q->c, nz = c / 4, pairs = (nz + 1) / 2, bytes = n * c;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    /* lane l's dword index l c / 4 + s: its low 5 bits pick within a pair of loads, the rest the pair */
    const __m512i base = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(nz));
    const int8_t *src = x + (int64_t)p * c;
    __m512i z[LANES_PX + 1], sv[LANES_PX]; /* c <= 64: at most 16 loads, 16 steps */
    int32_t i, s, u;
    for (i = 0; i < nz; i++) /* bytes past the n pixels: any (their lanes are not stored) */
        z[i] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(lanes_range(0, bytes - 64 * i), (const void *)(src + 64 * i)),
                                flip);
    z[nz] = flip;
    for (s = 0; s < h->steps; s++) {
        const __m512i idx = _mm512_add_epi32(base, _mm512_set1_epi32(s)), pair = _mm512_srli_epi32(idx, 5);
        __m512i v = _mm512_permutex2var_epi32(z[0], idx, z[1]);
        for (u = 1; u < pairs; u++)
            v = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(pair, _mm512_set1_epi32(u)), v,
                                        _mm512_permutex2var_epi32(z[2 * u], idx, z[2 * u + 1]));
        sv[s] = v;
    }
    lanes_blocks(q, blk, sv, n, y);
}

T_LANES static void qconv_lanes(const edge_simd_qconv_t *q, const int8_t *x, int32_t p0, int32_t p1, int8_t *y) {
    const uint8_t *blk = (const uint8_t *)q->lanes;
    const int32_t o = q->g.n;
    int32_t p = p0;
    if (((const lanes_head_t *)blk)->mode == LANES_POINT) {
        for (; p < p1; p += LANES_PX)
            lanes_point(q, blk, x, p, p1 - p < LANES_PX ? p1 - p : LANES_PX, y + (int64_t)p * o);
        return;
    }
    while (p < p1) { /* groups of up to 16 pixels within one output row */
        const int32_t oy = p / q->ow, ox = p % q->ow;
        int32_t n = q->ow - ox;
        if (n > p1 - p) n = p1 - p;
        if (n > LANES_PX) n = LANES_PX;
        lanes_group(q, blk, x, oy, ox, n, y + (int64_t)p * o);
        p += n;
    }
}


size_t edge_simd_qconv_bytes(int32_t level, const edge_simd_dwf_t *p, int32_t o) {
    const int32_t taps = p->kh * p->kw, cpad = qconv_cpad(p->c);
    if (level != EDGE_SIMD_X86_AVX512VNNI || (int64_t)p->h * p->w * p->c >= ((int64_t)1 << 30) ||
        (int64_t)p->sw * p->c >= ((int64_t)1 << 30) || (int64_t)taps * cpad > 0x3fffffff)
        return 0;
    return 3 * 4 * (size_t)round_up(o, VNNI_NB) + (size_t)round_up(o, VNNI_NB) * (size_t)taps * (size_t)cpad +
           4 * ((size_t)p->oh * (size_t)p->kh + (size_t)p->ow * (size_t)p->kw) + (size_t)cpad + QG_PACK_ALIGN +
           (lanes_fit(p, o) ? lanes_layout(p, o, NULL) + QG_PACK_ALIGN : 0); /* the pixel-lane block on a line too */
}

/* The axis table of one dimension: out[o * k + f] = (o * stride - pad + f * dil) * step when inside [0, size),
 * else EDGE_SIMD_QCONV_OUT. */
static void qconv_axis(int32_t *out, int32_t n, int32_t k, int32_t stride, int32_t pad, int32_t dil, int32_t size,
                       int32_t step) {
    int32_t o, f;
    for (o = 0; o < n; o++)
        for (f = 0; f < k; f++) {
            const int64_t i = (int64_t)o * stride - pad + (int64_t)f * dil;
            out[(int64_t)o * k + f] = i >= 0 && i < size ? (int32_t)(i * step) : EDGE_SIMD_QCONV_OUT;
        }
}

void edge_simd_qconv_pack(edge_simd_qconv_t *q, int32_t level, const edge_simd_dwf_t *p, int32_t o, const int8_t *w,
                          const int32_t *bias, int32_t input_offset, const int32_t *mul, int32_t mul_stride,
                          const int32_t *rs, int32_t rs_stride, int32_t zp, int32_t lo, int32_t hi, void *dst) {
    const int32_t c = p->c, cpad = qconv_cpad(c), taps = p->kh * p->kw, k = taps * c, kpad = taps * cpad;
    const int32_t npad = round_up(o, VNNI_NB);
    int8_t *pw = (int8_t *)edge_simd_qgemm_head(&q->g, level, w, o, k, k, 1, bias, input_offset - 128, mul, mul_stride,
                                                rs, rs_stride, 1, zp, lo, hi, npad, kpad, line_align(dst));
    int32_t *rows = (int32_t *)(pw + (size_t)npad * (size_t)kpad), *cols = rows + (int64_t)p->oh * p->kh;
    int8_t *zero = (int8_t *)(cols + (int64_t)p->ow * p->kw);
    int32_t ch, t, i;
    memset(pw, 0, (size_t)npad * (size_t)kpad);
    for (ch = 0; ch < o; ch++) { /* value i of tap t at k index t * cpad + i: step (t * cpad + i) / 4, byte i % 4 */
        int8_t *blk = pw + (int64_t)(ch / VNNI_NB) * kpad * VNNI_NB + (ch % VNNI_NB) * 4;
        for (t = 0; t < taps; t++)
            for (i = 0; i < c; i++) {
                const int64_t kk = (int64_t)t * cpad + i;
                blk[kk / 4 * 64 + kk % 4] = w[(int64_t)ch * k + (int64_t)t * c + i];
            }
    }
    qconv_axis(rows, p->oh, p->kh, p->sh, p->pt, p->dh, p->h, p->w * c);
    qconv_axis(cols, p->ow, p->kw, p->sw, p->pl, p->dw, p->w, c);
    memset(zero, -input_offset, (size_t)cpad); /* the input's zero point: x + input_offset = 0 */
    /* safe: the first pixel with a tap whose cpad bytes run past the input's end (at c % 4 != 0 the pixels before
     * it load each tap's last step whole, its padding bytes times the filter's zeros) */
    q->safe = p->oh * p->ow;
    for (i = 0; i < p->oh * p->ow && q->safe == p->oh * p->ow; i++) {
        const int32_t *ry = rows + (int64_t)(i / p->ow) * p->kh, *cx = cols + (int64_t)(i % p->ow) * p->kw;
        int32_t fy, fx;
        for (fy = 0; fy < p->kh; fy++)
            for (fx = 0; fx < p->kw; fx++)
                if (ry[fy] + cx[fx] >= 0 && (int64_t)ry[fy] + cx[fx] + cpad > (int64_t)p->h * p->w * c) q->safe = i;
    }
    q->c = c;
    q->cpad = cpad;
    q->kh = p->kh;
    q->kw = p->kw;
    q->ow = p->ow;
    q->sxb = p->sw * c;
    q->rows = rows;
    q->cols = cols;
    q->zero = zero;
    /* the pixel-lane kernel where the shape fits it and its byte packing holds the output's zero point and clamp */
    q->lanes = NULL;
    if (lanes_fit(p, o) && lanes_cpu() && zp >= -128 && zp <= 127 && lo >= -128 && hi <= 127) {
        uint8_t *lb = (uint8_t *)line_align(zero + cpad);
        lanes_pack(&q->g, p, o, w, input_offset, lb);
        q->lanes = lb;
    }
}

/* The sums of rows [0, QCONV_MR) (ry / cx: each row's tables at its oy / ox; rows past mr repeat row 0, their sums
 * never stored) x blocks j .. j + NB - 1, requantized into y's rows [0, mr) (stride ldy) at columns j * 16 .. nvalid
 * past it. MR / NB constants: the sums stay in registers. MODE QCONV_MASKED: a tap's last c % 4 bytes loaded masked
 * (a pixel at or past q->safe), else its cpad bytes whole; QCONV_ROW: the tile's pixels on one output row, every
 * tap of every pixel inside the input (row r's tap r * sxb bytes past row 0's: one tap's address a tile, where
 * QCONV_ANY looks up both tables and tests them for each pixel). */
T_VNNI static INLINE void qconv_tile(const edge_simd_qconv_t *q, const int8_t *x, const int32_t *const *ry,
                                     const int32_t *const *cx, int32_t mr, int32_t j, int32_t NB, int32_t MODE,
                                     int32_t nvalid, int8_t *y, int32_t ldy) {
    const edge_simd_qgemm_t *g = &q->g;
    const int32_t MASKED = MODE == QCONV_MASKED, full = MASKED ? q->c / 4 : q->cpad / 4, tail = MASKED ? q->c % 4 : 0;
    const int32_t kpad = g->kpad, npad = g->npad;
    const int32_t *bias = (const int32_t *)g->packed, *mul = bias + npad, *rs = mul + npad;
    const int8_t *w = (const int8_t *)(rs + npad) + (int64_t)j * kpad * VNNI_NB;
    const int64_t pstride = (int64_t)kpad * VNNI_NB;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const __mmask16 tmask = (__mmask16)((1u << tail) - 1u);
    __m512i acc[QCONV_MR][QCONV_NB], wv[QCONV_NB];
    const int8_t *pr[QCONV_MR];
    int32_t r, b, fy, fx, s;
    QCONV_UNROLL_MR
    for (r = 0; r < QCONV_MR; r++)
        QCONV_UNROLL_NB
        for (b = 0; b < QCONV_NB; b++) /* the sums start at the bias (int32 adds in any order: the same sums) */
            acc[r][b] = b < NB ? _mm512_loadu_si512((const void *)(bias + (j + b) * VNNI_NB)) : _mm512_setzero_si512();
    for (fy = 0; fy < q->kh; fy++) {
        for (fx = 0; fx < q->kw; fx++) {
            if (MODE == QCONV_ROW) { /* every tap inside, the pixels sxb bytes apart */
                const int8_t *p0 = x + ry[0][fy] + cx[0][fx];
                QCONV_UNROLL_MR
                for (r = 0; r < QCONV_MR; r++) pr[r] = p0 + (int64_t)r * q->sxb;
            } else {
                QCONV_UNROLL_MR
                for (r = 0; r < QCONV_MR; r++) { /* this tap's row of each pixel: inside, or the zero row */
                    const int32_t off = ry[r][fy] + cx[r][fx];
                    pr[r] = off >= 0 ? x + off : q->zero;
                }
            }
            for (s = 0; s < full; s++, w += 64) {
                QCONV_UNROLL_NB
                for (b = 0; b < QCONV_NB; b++)
                    if (b < NB) wv[b] = _mm512_loadu_si512((const void *)(w + b * pstride));
                QCONV_UNROLL_MR
                for (r = 0; r < QCONV_MR; r++) {
                    int32_t v;
                    __m512i xv;
                    memcpy(&v, pr[r] + 4 * s, 4);
                    xv = _mm512_xor_si512(_mm512_set1_epi32(v), flip);
                    QCONV_UNROLL_NB
                    for (b = 0; b < QCONV_NB; b++)
                        if (b < NB) acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], xv, wv[b]);
                }
            }
            if (tail) { /* c % 4 bytes, the rest 0 (times the filter's zero padding) */
                QCONV_UNROLL_NB
                for (b = 0; b < QCONV_NB; b++)
                    if (b < NB) wv[b] = _mm512_loadu_si512((const void *)(w + b * pstride));
                QCONV_UNROLL_MR
                for (r = 0; r < QCONV_MR; r++) {
                    const __m128i v = _mm_maskz_loadu_epi8(tmask, (const void *)(pr[r] + 4 * full));
                    const __m512i xv = _mm512_xor_si512(_mm512_broadcastd_epi32(v), flip);
                    QCONV_UNROLL_NB
                    for (b = 0; b < QCONV_NB; b++)
                        if (b < NB) acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], xv, wv[b]);
                }
                w += 64;
            }
        }
    }
    VNNI_REQUANT_STORE(QCONV_UNROLL_MR, QCONV_UNROLL_NB, QCONV_MR, r < mr);
}

/* A 1x1 filter's one output pixel (a 1x1 input: squeeze-excite and classifier convs, 576 -> 1024 and the like):
 * its packed filter is the GEMM's layout (one tap, cpad = kpad), so the pixel's c bytes flipped to u8 run through
 * vnni_row, two blocks and four sums at a time. qconv_tile's one row was a chain of c / 4 VPDPBUSD per block
 * beside four weight streams kpad * 16 bytes apart. Returns 0 when it does not apply. */
#define QCONV_ONE_MAX 4096
T_VNNI static int qconv_one_pixel(const edge_simd_qconv_t *q, const int8_t *x, int32_t p, int8_t *y) {
    const int32_t row = q->rows[(int64_t)(p / q->ow) * q->kh], col = q->cols[(int64_t)(p % q->ow) * q->kw];
    const int32_t jend = q->g.npad / VNNI_NB;
    uint8_t a[QCONV_ONE_MAX];
    int32_t i, j;
    if (q->kh != 1 || q->kw != 1 || q->cpad > QCONV_ONE_MAX || row < 0 || col < 0) return 0;
    for (i = 0; i < q->c; i++) a[i] = (uint8_t)(x[(int64_t)row + col + i] ^ 0x80);
    for (; i < q->cpad; i++) a[i] = 0x80; /* times the filter's zero padding */
    for (j = 0; j < jend; j += ROW_NB)
        vnni_row(&q->g, a, j, jend - j < ROW_NB ? jend - j : ROW_NB, q->g.n - j * VNNI_NB, y + (int64_t)p * q->g.n);
    return 1;
}

T_VNNI static void qconv_vnni(const edge_simd_qconv_t *q, const int8_t *x, int32_t p0, int32_t p1, int8_t *y) {
    const int32_t o = q->g.n, jend = q->g.npad / VNNI_NB;
    const int32_t *ry[QCONV_MR], *cx[QCONV_MR];
    int32_t p, r, j;
    int32_t oy = p0 / q->ow, ox = p0 % q->ow;
    if (p1 - p0 == 1 && qconv_one_pixel(q, x, p0, y)) return;
    for (p = p0; p < p1; p += QCONV_MR) {
        const int32_t mr = p1 - p < QCONV_MR ? p1 - p : QCONV_MR;
        const int32_t *rw = q->rows + (int64_t)oy * q->kh, *cl = q->cols + (int64_t)ox * q->kw;
        /* the tables are monotone along each axis: the first and the last tap tell whether all are inside */
        const int32_t mode = q->c % 4 && p + QCONV_MR > q->safe ? QCONV_MASKED
                             : mr == QCONV_MR && ox + QCONV_MR <= q->ow && rw[0] >= 0 && rw[q->kh - 1] >= 0 &&
                                       cl[0] >= 0 && cl[(QCONV_MR - 1) * q->kw + q->kw - 1] >= 0
                                   ? QCONV_ROW
                                   : QCONV_ANY;
        int8_t *yp = y + (int64_t)p * o;
        for (r = 0; r < QCONV_MR; r++) {
            if (r < mr) { /* pixel p + r at (oy, ox), stepped */
                ry[r] = q->rows + (int64_t)oy * q->kh;
                cx[r] = q->cols + (int64_t)ox * q->kw;
                if (++ox == q->ow) ox = 0, oy++;
            } else {
                ry[r] = ry[0];
                cx[r] = cx[0];
            }
        }
        for (j = 0; j < jend; j += QCONV_NB) {
            const int32_t nb = jend - j < QCONV_NB ? jend - j : QCONV_NB, nvalid = o - j * VNNI_NB;
#define QCONV_TILES(MODE)                                                                                      \
    do {                                                                                                       \
        if (nb == 4) qconv_tile(q, x, ry, cx, mr, j, 4, MODE, nvalid, yp, o);                                   \
        else if (nb == 3) qconv_tile(q, x, ry, cx, mr, j, 3, MODE, nvalid, yp, o);                              \
        else if (nb == 2) qconv_tile(q, x, ry, cx, mr, j, 2, MODE, nvalid, yp, o);                              \
        else qconv_tile(q, x, ry, cx, mr, j, 1, MODE, nvalid, yp, o);                                           \
    } while (0)
            if (mode == QCONV_ROW) QCONV_TILES(QCONV_ROW);
            else if (mode == QCONV_ANY) QCONV_TILES(QCONV_ANY);
            else QCONV_TILES(QCONV_MASKED);
#undef QCONV_TILES
        }
    }
}

int32_t edge_simd_qconv_lanes(int32_t level, const edge_simd_dwf_t *p, int32_t o) {
    return edge_simd_qconv_bytes(level, p, o) != 0 && lanes_fit(p, o) && lanes_cpu();
}

void edge_simd_qconv(const edge_simd_qconv_t *q, const int8_t *x, int32_t p0, int32_t p1, int8_t *y) {
    /* one pixel of a 1x1 filter (a squeeze-excite's 1x1 input): qconv_one_pixel's row, not a group of 16 lanes */
    if (q->lanes && (p1 - p0 > 1 || q->kh != 1 || q->kw != 1)) qconv_lanes(q, x, p0, p1, y);
    else qconv_vnni(q, x, p0, p1, y);
}


/* ------------------------------------------------------------------------------------- AMX */

/* Level EDGE_SIMD_X86_AMX: the VNNI packing (16-channel blocks, 64 bytes a k step of 4: exactly the rows of an
 * AMX B tile) with k padded to 64, and a 2 x 2 arrangement of tiles: two A tiles (16 rows x 64 u8 each: rows
 * a ^ 0x80, as vnni_gemm) against two B tiles (16 k steps x 16 channels), four C tiles of 16 x 16 int32 summed
 * over k by TDPBUSD (exact int32 sums, wrapping as VPDPBUSD's), stored to the work area and requantized there as
 * the VNNI tile does (rq512_apply): the same bytes. A pass covers 32 rows (the second A tile only when more than 16 are
 * left; rows past m in a tile: stale bytes of the work area, their sums never requantized); fewer than
 * AMX_MIN_ROWS rows run the VNNI path. The tile configuration is loaded at
 * every call (a thread's own state) and released before it returns. */
#define AMX_MIN_ROWS 8

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config_t;

/* C tiles 0..3 (16 x 16 int32), A tiles 4, 5 (16 rows x kc bytes), B tiles 6, 7 (kc / 4 rows x 64 bytes). */
static void amx_configure(amx_config_t *cfg, int32_t kc) {
    int32_t t;
    memset(cfg, 0, sizeof *cfg);
    cfg->palette = 1;
    for (t = 0; t < 4; t++) {
        cfg->rows[t] = 16;
        cfg->colsb[t] = 64;
    }
    for (t = 4; t < 6; t++) {
        cfg->rows[t] = 16;
        cfg->colsb[t] = (uint16_t)kc;
    }
    for (t = 6; t < 8; t++) {
        cfg->rows[t] = (uint8_t)(kc / 4);
        cfg->colsb[t] = 64;
    }
}

/* The sums of rows [0, mr) x blocks j, j + 1 (nb of them) in c (AMX_MR rows of 2 x 16 int32) + bias, requantized
 * into y's columns from (j * 16) to nvalid past it. */
T_AMX static INLINE void amx_store(const edge_simd_qgemm_t *g, const int32_t *c, int32_t mr, int32_t j, int32_t nb,
                                   int32_t nvalid, int8_t *y, int32_t ldy) {
    const int32_t npad = g->npad;
    const int32_t *bias = (const int32_t *)g->packed, *mul = bias + npad, *rs = mul + npad;
    int32_t r, bb;
    for (bb = 0; bb < nb; bb++) {
        const int32_t c0 = (j + bb) * VNNI_NB, left = nvalid - bb * VNNI_NB;
        const __m512i b = _mm512_loadu_si512((const void *)(bias + c0));
        const rq512_t rq = rq512_prep(_mm512_loadu_si512((const void *)(mul + c0)),
                                      _mm512_loadu_si512((const void *)(rs + c0)), g->zp, g->lo, g->hi);
        const __mmask16 mask = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
        for (r = 0; r < mr; r++) {
            const __m512i acc = _mm512_loadu_si512((const void *)(c + (int64_t)r * 2 * VNNI_NB + bb * VNNI_NB));
            _mm_mask_storeu_epi8((void *)(y + (int64_t)r * ldy + c0), mask,
                                 _mm512_cvtepi32_epi8(rq512_apply(_mm512_add_epi32(acc, b), &rq)));
        }
    }
}

T_AMX static void amx_gemm(const edge_simd_qgemm_t *g, const int8_t *a, int32_t m, int32_t lda, int32_t n0,
                           int32_t n1, int8_t *y, int32_t ldy, void *work) {
    const int32_t k = g->k, kpad = g->kpad, kc = kpad < AMX_KC ? kpad : AMX_KC, chunks = kpad / kc;
    const int8_t *panels = (const int8_t *)((const int32_t *)g->packed + 3 * g->npad);
    const int64_t pstride = (int64_t)kpad * VNNI_NB; /* bytes of one 16-channel block */
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const int32_t astride = round_up(kpad, AMX_KC); /* a's rows on cache lines */
    uint8_t *buf = (uint8_t *)line_align(work);
    int32_t *sums = (int32_t *)(buf + (size_t)AMX_MR * (size_t)astride);
    const int32_t jend = (n1 + VNNI_NB - 1) / VNNI_NB;
    amx_config_t cfg;
    int32_t m0, r, j, ch;
    amx_configure(&cfg, kc);
    _tile_loadconfig(&cfg);
    for (m0 = 0; m0 < m; m0 += AMX_MR) {
        const int32_t mr = m - m0 < AMX_MR ? m - m0 : AMX_MR;
        for (r = 0; r < mr; r++) { /* rows as unsigned (a ^ 0x80), k padded with 0x80 (times zero weights) */
            const int8_t *src = a + (int64_t)(m0 + r) * lda;
            uint8_t *d = buf + (int64_t)r * astride;
            int32_t i = 0;
            for (; i + 64 <= k; i += 64)
                _mm512_storeu_si512((void *)(d + i), _mm512_xor_si512(_mm512_loadu_si512((const void *)(src + i)), flip));
            for (; i < kpad; i += 64) {
                const __mmask64 mk = k - i >= 64 ? ~(__mmask64)0 : (k > i ? (((__mmask64)1 << (k - i)) - 1) : 0);
                const __mmask64 mp = kpad - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (kpad - i)) - 1);
                _mm512_mask_storeu_epi8((void *)(d + i), mp,
                                        _mm512_xor_si512(_mm512_maskz_loadu_epi8(mk, (const void *)(src + i)), flip));
            }
        }
        for (j = n0 / VNNI_NB; j < jend; j += 2) {
            const int32_t nb = j + 1 < jend ? 2 : 1;
            const int8_t *w0 = panels + (int64_t)j * pstride, *w1 = w0 + pstride;
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (ch = 0; ch < chunks; ch++) {
                const int64_t ka = (int64_t)ch * kc, kb = (int64_t)ch * kc * VNNI_NB; /* kc / 4 steps of 64 bytes */
                _tile_loadd(4, buf + ka, astride);
                _tile_loadd(6, w0 + kb, 64);
                _tile_dpbusd(0, 4, 6);
                if (nb > 1) {
                    _tile_loadd(7, w1 + kb, 64);
                    _tile_dpbusd(1, 4, 7);
                }
                if (mr > 16) { /* the second 16 rows */
                    _tile_loadd(5, buf + 16 * (int64_t)astride + ka, astride);
                    _tile_dpbusd(2, 5, 6);
                    if (nb > 1) _tile_dpbusd(3, 5, 7);
                }
            }
            /* sums[r][0..31]: row r of C0 | C1 (rows 0..15), of C2 | C3 (rows 16..31) */
            _tile_stored(0, sums, 2 * VNNI_NB * 4);
            _tile_stored(1, sums + VNNI_NB, 2 * VNNI_NB * 4);
            if (mr > 16) {
                _tile_stored(2, sums + 16 * 2 * VNNI_NB, 2 * VNNI_NB * 4);
                _tile_stored(3, sums + 16 * 2 * VNNI_NB + VNNI_NB, 2 * VNNI_NB * 4);
            }
            amx_store(g, sums, mr, j, nb, n1 - j * VNNI_NB, y + (int64_t)m0 * ldy, ldy);
        }
    }
    _tile_release();
}

/* ------------------------------------------------------------------------------------- AVX2 */

T_AVX2 static INLINE __m256i rq256(__m256i acc, __m256i mul, __m256i rs, __m256i zp, __m256i lo, __m256i hi) {
    const __m256i r30 = _mm256_set1_epi64x((int64_t)1 << 30), one = _mm256_set1_epi32(1);
    __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(acc, mul), r30);
    __m256i po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(acc, 32), _mm256_srli_epi64(mul, 32)), r30);
    __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(pe, 31), _mm256_slli_epi64(po, 1), 0xAA);
    __m256i q;
    h = _mm256_add_epi32(h, _mm256_srai_epi32(h, 31));
    q = _mm256_add_epi32(_mm256_srav_epi32(h, rs),
                         _mm256_and_si256(_mm256_srav_epi32(h, _mm256_sub_epi32(rs, one)), one));
    q = _mm256_add_epi32(q, zp);
    return _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
}

/* 8 int32 in [-128, 127] -> 8 bytes at y (the first n of them). */
T_AVX2 static INLINE void store8(__m256i q, int8_t *y, int32_t n) {
    const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                          0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i b = _mm256_shuffle_epi8(q, pick);
    const uint64_t v = (uint64_t)(uint32_t)_mm256_extract_epi32(b, 0) | ((uint64_t)(uint32_t)_mm256_extract_epi32(b, 4) << 32);
    if (n >= 8) memcpy(y, &v, 8);
    else memcpy(y, &v, (size_t)n);
}

T_AVX2 static INLINE void avx2_tile(const edge_simd_qgemm_t *g, const int16_t *a, int32_t mr, int32_t j, int32_t nb,
                                    int32_t nvalid, int8_t *y, int32_t ldy) {
    const int32_t kpad = g->kpad, npad = g->npad, steps = kpad / 2;
    const int32_t *bias = (const int32_t *)g->packed, *mul = bias + npad, *rs = mul + npad;
    const int16_t *w0 = (const int16_t *)(rs + npad) + (int64_t)j * kpad * AVX2_NB;
    const int16_t *w1 = w0 + (int64_t)kpad * AVX2_NB;
    __m256i acc[AVX2_MR][2];
    int32_t r, s, bb;
    for (r = 0; r < AVX2_MR; r++)
        for (bb = 0; bb < 2; bb++) acc[r][bb] = _mm256_setzero_si256();
    for (s = 0; s < steps; s++) {
        const __m256i wa = _mm256_loadu_si256((const __m256i *)(w0 + 16 * (int64_t)s));
        const __m256i wb = nb > 1 ? _mm256_loadu_si256((const __m256i *)(w1 + 16 * (int64_t)s)) : wa;
        for (r = 0; r < AVX2_MR; r++) {
            if (r < mr) {
                int32_t v;
                __m256i x;
                memcpy(&v, a + (int64_t)r * kpad + 2 * s, 4);
                x = _mm256_set1_epi32(v);
                acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(x, wa));
                if (nb > 1) acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(x, wb));
            }
        }
    }
    {
        const __m256i zp = _mm256_set1_epi32(g->zp), lo = _mm256_set1_epi32(g->lo), hi = _mm256_set1_epi32(g->hi);
        for (bb = 0; bb < nb; bb++) {
            const int32_t c0 = (j + bb) * AVX2_NB;
            const __m256i b = _mm256_loadu_si256((const __m256i *)(bias + c0));
            const __m256i m = _mm256_loadu_si256((const __m256i *)(mul + c0));
            const __m256i sh = _mm256_loadu_si256((const __m256i *)(rs + c0));
            const int32_t left = nvalid - bb * AVX2_NB;
            for (r = 0; r < AVX2_MR; r++)
                if (r < mr) store8(rq256(_mm256_add_epi32(acc[r][bb], b), m, sh, zp, lo, hi), y + (int64_t)r * ldy + c0, left);
        }
    }
}

T_AVX2 static void avx2_rows(const edge_simd_qgemm_t *g, const int16_t *a, int32_t mr, int32_t n0, int32_t n1,
                             int8_t *y, int32_t ldy) {
    int32_t j = n0 / AVX2_NB;
    const int32_t jend = (n1 + AVX2_NB - 1) / AVX2_NB;
    for (; j < jend; j += 2) {
        const int32_t nb = j + 1 < jend ? 2 : 1, nvalid = n1 - j * AVX2_NB;
        if (mr == AVX2_MR) { /* every row count a constant: the tile's sums stay in registers */
            if (nb == 2) avx2_tile(g, a, AVX2_MR, j, 2, nvalid, y, ldy);
            else avx2_tile(g, a, AVX2_MR, j, 1, nvalid, y, ldy);
        } else if (mr == 3) {
            avx2_tile(g, a, 3, j, nb, nvalid, y, ldy);
        } else if (mr == 2) {
            avx2_tile(g, a, 2, j, nb, nvalid, y, ldy);
        } else {
            avx2_tile(g, a, 1, j, nb, nvalid, y, ldy);
        }
    }
}

T_AVX2 static void avx2_gemm(const edge_simd_qgemm_t *g, const int8_t *a, int32_t m, int32_t lda, int32_t n0,
                             int32_t n1, int8_t *y, int32_t ldy, void *work) {
    const int32_t k = g->k, kpad = g->kpad;
    int16_t *buf = (int16_t *)work;
    int32_t m0, r;
    for (m0 = 0; m0 < m; m0 += AVX2_MR) {
        const int32_t mr = m - m0 < AVX2_MR ? m - m0 : AVX2_MR;
        for (r = 0; r < mr; r++) {
            const int8_t *src = a + (int64_t)(m0 + r) * lda;
            int16_t *d = buf + (int64_t)r * kpad;
            int32_t i = 0;
            for (; i + 16 <= k; i += 16)
                _mm256_storeu_si256((__m256i *)(d + i), _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + i))));
            for (; i < k; i++) d[i] = src[i];
            for (; i < kpad; i++) d[i] = 0;
        }
        avx2_rows(g, buf, mr, n0, n1, y + (int64_t)m0 * ldy, ldy);
    }
}

void edge_simd_qgemm(const edge_simd_qgemm_t *g, const int8_t *a, int32_t m, int32_t lda, int32_t n0, int32_t n1,
                     int8_t *y, int32_t ldy, void *work) {
    /* y columns: the tiles store at column c of row r from y (y points at column 0) */
    if (edge_simd_qgemm_few(g->level, g->n, g->k) && m == 1) { /* the row kernel, its k <= 64 bytes here */
        uint8_t row[FEW_K];
        vnni_gemm(g, a, m, lda, n0, n1, y, ldy, row);
    } else if (edge_simd_qgemm_few(g->level, g->n, g->k) && lda == g->k && ldy == g->n && n0 == 0 && n1 >= g->n)
        few_gemm(g, a, m, y);
    else if (g->level == EDGE_SIMD_X86_AMX && m >= AMX_MIN_ROWS) amx_gemm(g, a, m, lda, n0, n1, y, ldy, work);
    else if (g->level >= EDGE_SIMD_X86_AVX512VNNI) vnni_gemm(g, a, m, lda, n0, n1, y, ldy, work);
    else avx2_gemm(g, a, m, lda, n0, n1, y, ldy, work);
}

/* ------------------------------------------------------------------------------------- ADD / SUB int8 */

/* round(x * m / 2^31) halves away from zero for m >= 0 (eb_srdhm): bits 31..62 of x * m + 2^30, lane by lane */
T_AVX2 static INLINE __m256i srdhm256(__m256i x, __m256i m) {
    const __m256i r30 = _mm256_set1_epi64x((int64_t)1 << 30);
    const __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(x, m), r30);
    const __m256i po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32)), r30);
    return _mm256_blend_epi32(_mm256_srli_epi64(pe, 31), _mm256_slli_epi64(po, 1), 0xAA);
}

/* edge_rdbpot by a constant exponent e (0..31): x >> e, plus one when the remainder is above half (halves away) */
T_AVX2 static INLINE __m256i rdbpot256(__m256i x, int32_t e) {
    const __m256i mask = _mm256_set1_epi32((int32_t)(((int64_t)1 << e) - 1));
    const __m256i thr = _mm256_sub_epi32(_mm256_srai_epi32(mask, 1), _mm256_srai_epi32(x, 31));
    const __m256i rem = _mm256_and_si256(x, mask);
    return _mm256_sub_epi32(_mm256_sra_epi32(x, _mm_cvtsi32_si128(e)), _mm256_cmpgt_epi32(rem, thr));
}

/* 8 int8 of a row (step 1) or its one value (step 0) as int32 lanes. */
T_AVX2 static INLINE __m256i load8(const int8_t *x, int32_t step, int32_t i) {
    int64_t v;
    if (!step) return _mm256_set1_epi32(x[0]);
    memcpy(&v, x + i, 8);
    return _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(v));
}

/* An input of ADD / SUB on the common scale: ((x - zp) << 20) scaled by m (a right shift r only). */
T_AVX2 static INLINE __m256i addsub_in256(__m256i x, __m256i zp, __m256i m, int32_t r) {
    return rdbpot256(srdhm256(_mm256_slli_epi32(_mm256_sub_epi32(x, zp), 20), m), r);
}

/* addsub_in256 in 32-bit lanes (edge_simd_q8_scalar.h's q8_in_step: its constants broadcast): two VPMULLD instead
 * of four VPMULDQ, their shifts and blend and rdbpot256's remainder test. */
typedef struct {
    __m256i zp, mh, ml, c0, c1, h;
    __m128i r;
} in256_t;

T_AVX2 static INLINE in256_t in256_prep(const q8_in_step_t *s) {
    in256_t c;
    c.zp = _mm256_set1_epi32(s->zp);
    c.mh = _mm256_set1_epi32(s->mh);
    c.ml = _mm256_set1_epi32(s->ml);
    c.c0 = _mm256_set1_epi32(s->c0);
    c.c1 = _mm256_set1_epi32(s->c1);
    c.h = _mm256_set1_epi32(s->h);
    c.r = _mm_cvtsi32_si128(s->r);
    return c;
}

T_AVX2 static INLINE __m256i in256(__m256i x, const in256_t *c) {
    const __m256i d = _mm256_sub_epi32(x, c->zp);
    /* c1 where d < 0: the sign mask (all ones) and c1 */
    const __m256i neg = _mm256_and_si256(_mm256_srai_epi32(d, 31), c->c1);
    const __m256i lo = _mm256_sub_epi32(_mm256_add_epi32(_mm256_mullo_epi32(d, c->ml), c->c0), neg);
    const __m256i u = _mm256_add_epi32(_mm256_mullo_epi32(d, c->mh), _mm256_srai_epi32(lo, 11));
    return _mm256_sra_epi32(_mm256_add_epi32(u, c->h), c->r);
}

T_AVX2 static INLINE __m256i addsub_8(__m256i x1, __m256i x2, const int32_t *p, int32_t sub) {
    const __m256i s = sub ? _mm256_sub_epi32(x1, x2) : _mm256_add_epi32(x1, x2);
    const __m256i q = rdbpot256(srdhm256(_mm256_sll_epi32(s, _mm_cvtsi32_si128(p[8])), _mm256_set1_epi32(p[7])), p[9]);
    return _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(q, _mm256_set1_epi32(p[10])), _mm256_set1_epi32(p[11])),
                            _mm256_set1_epi32(p[12]));
}

T_AVX2 static void addsub_q8_avx2(const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y, int32_t n,
                                  const int32_t *p) {
    const __m256i zp1 = _mm256_set1_epi32(p[0]), zp2 = _mm256_set1_epi32(p[1]);
    const __m256i m1 = _mm256_set1_epi32(p[2]), m2 = _mm256_set1_epi32(p[4]);
    const int32_t r1 = p[3], r2 = p[5], sub = p[6] < 0;
    /* a broadcast operand's scaled value once */
    const __m256i c1 = addsub_in256(load8(a, 0, 0), zp1, m1, r1), c2 = addsub_in256(load8(b, 0, 0), zp2, m2, r2);
    q8_in_step_t s1, s2;
    int32_t i;
    if (sa && sb && q8_in_step(p[0], p[2], r1, &s1) && q8_in_step(p[1], p[4], r2, &s2)) {
        /* two rows (every int8 ADD / SUB of the zoo): the 32-bit input steps */
        const in256_t i1 = in256_prep(&s1), i2 = in256_prep(&s2);
        for (i = 0; i + 8 <= n; i += 8)
            store8(addsub_8(in256(load8(a, 1, i), &i1), in256(load8(b, 1, i), &i2), p, sub), y + i, 8);
        if (i < n) { /* the n % 8 last elements: the same lanes on a zero-padded copy */
            int8_t ta[8] = {0}, tb[8] = {0};
            memcpy(ta, a + i, (size_t)(n - i));
            memcpy(tb, b + i, (size_t)(n - i));
            store8(addsub_8(in256(load8(ta, 1, 0), &i1), in256(load8(tb, 1, 0), &i2), p, sub), y + i, n - i);
        }
        return;
    }
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256i x1 = sa ? addsub_in256(load8(a, 1, i), zp1, m1, r1) : c1;
        const __m256i x2 = sb ? addsub_in256(load8(b, 1, i), zp2, m2, r2) : c2;
        store8(addsub_8(x1, x2, p, sub), y + i, 8);
    }
    if (i < n) { /* the n % 8 last elements: the same lanes on a zero-padded copy */
        int8_t ta[8] = {0}, tb[8] = {0};
        if (sa) memcpy(ta, a + i, (size_t)(n - i));
        if (sb) memcpy(tb, b + i, (size_t)(n - i));
        store8(addsub_8(sa ? addsub_in256(load8(ta, 1, 0), zp1, m1, r1) : c1,
                        sb ? addsub_in256(load8(tb, 1, 0), zp2, m2, r2) : c2, p, sub), y + i, n - i);
    }
}

int32_t edge_simd_addsub_q8(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                            int32_t n, const int32_t *p) {
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    if (n > 0) addsub_q8_avx2(a, sa, b, sb, y, n, p); /* n = 0: the caller asks whether the level has the path */
    return 1;
}

/* ------------------------------------------------------------------------------------- MUL int8 */

T_AVX2 static INLINE __m256i mul_8(__m256i x1, __m256i x2, const int32_t *p) {
    const __m256i prod = _mm256_mullo_epi32(x1, x2); /* |x - zp| <= 255: exact */
    const __m256i q = rdbpot256(srdhm256(_mm256_sll_epi32(prod, _mm_cvtsi32_si128(p[3])), _mm256_set1_epi32(p[2])), p[4]);
    return _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(q, _mm256_set1_epi32(p[5])), _mm256_set1_epi32(p[6])),
                            _mm256_set1_epi32(p[7]));
}

T_AVX2 static void mul_q8_avx2(const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y, int32_t n,
                               const int32_t *p) {
    const __m256i zp1 = _mm256_set1_epi32(p[0]), zp2 = _mm256_set1_epi32(p[1]);
    int32_t i;
    for (i = 0; i + 8 <= n; i += 8)
        store8(mul_8(_mm256_sub_epi32(load8(a, sa, i), zp1), _mm256_sub_epi32(load8(b, sb, i), zp2), p), y + i, 8);
    if (i < n) {
        int8_t ta[8] = {0}, tb[8] = {0};
        memcpy(ta, sa ? a + i : a, (size_t)(sa ? n - i : 1));
        memcpy(tb, sb ? b + i : b, (size_t)(sb ? n - i : 1));
        store8(mul_8(_mm256_sub_epi32(load8(ta, sa, 0), zp1), _mm256_sub_epi32(load8(tb, sb, 0), zp2), p), y + i, n - i);
    }
}

int32_t edge_simd_mul_q8(int32_t level, const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *y,
                         int32_t n, const int32_t *p) {
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    if (n > 0) mul_q8_avx2(a, sa, b, sb, y, n, p); /* n = 0: the caller asks whether the level has the path */
    return 1;
}

/* ------------------------------------------------------------------------------------- pooling int8 */

T_AVX2 static void pool_q8_avx2(int32_t average, const int8_t *x, int64_t row, int32_t rows, int32_t cols,
                                int32_t c, int32_t lo, int32_t hi, int32_t *acc, int8_t *y) {
    int32_t r, j, i = 0;
    if (!average) {
        const __m256i vlo = _mm256_set1_epi8((char)lo), vhi = _mm256_set1_epi8((char)hi);
        for (; i + 32 <= c; i += 32) {
            __m256i m = _mm256_set1_epi8((char)-128);
            for (r = 0; r < rows; r++)
                for (j = 0; j < cols; j++)
                    m = _mm256_max_epi8(m, _mm256_loadu_si256((const __m256i *)(x + r * row + (int64_t)j * c + i)));
            _mm256_storeu_si256((__m256i *)(y + i), _mm256_min_epi8(_mm256_max_epi8(m, vlo), vhi));
        }
        /* 16 and 8 channels on 128-bit vectors: U-Net / BlazeFace pool 16 or 24 channels, which the 32-lane loop
         * left to the scalar tail (a 96x96x16 2x2 pool 10x XNNPACK's time) */
        for (; i + 16 <= c; i += 16) {
            __m128i m = _mm_set1_epi8((char)-128);
            for (r = 0; r < rows; r++)
                for (j = 0; j < cols; j++)
                    m = _mm_max_epi8(m, _mm_loadu_si128((const __m128i *)(x + r * row + (int64_t)j * c + i)));
            _mm_storeu_si128((__m128i *)(y + i),
                             _mm_min_epi8(_mm_max_epi8(m, _mm256_castsi256_si128(vlo)), _mm256_castsi256_si128(vhi)));
        }
        for (; i + 8 <= c; i += 8) {
            __m128i m = _mm_set1_epi8((char)-128);
            for (r = 0; r < rows; r++)
                for (j = 0; j < cols; j++)
                    m = _mm_max_epi8(m, _mm_loadl_epi64((const __m128i *)(x + r * row + (int64_t)j * c + i)));
            _mm_storel_epi64((__m128i *)(y + i),
                             _mm_min_epi8(_mm_max_epi8(m, _mm256_castsi256_si128(vlo)), _mm256_castsi256_si128(vhi)));
        }
        q8_pool_max_tail(x, row, rows, cols, c, i, lo, hi, y);
        return;
    }
    {
        const int32_t count = rows * cols, half = count / 2;
        const __m256i vhalf = _mm256_set1_epi32(half), vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi);
        const __m256d dcount = _mm256_set1_pd((double)count);
        for (; i + 16 <= c; i += 16) {
            __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
            for (r = 0; r < rows; r++)
                for (j = 0; j < cols; j++) {
                    const __m128i v = _mm_loadu_si128((const __m128i *)(x + r * row + (int64_t)j * c + i));
                    s0 = _mm256_add_epi32(s0, _mm256_cvtepi8_epi32(v));
                    s1 = _mm256_add_epi32(s1, _mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)));
                }
            _mm256_storeu_si256((__m256i *)(acc + i), s0);
            _mm256_storeu_si256((__m256i *)(acc + i + 8), s1);
        }
        q8_pool_sum_tail(x, row, rows, cols, c, i, acc);
        /* (s +- half) / count truncated: in double the quotient of two integers below 2^31 truncates as the
         * integer division does (the gap to the next integer, 1/count, is far above the double's rounding) */
        for (i = 0; i + 8 <= c; i += 8) {
            const __m256i s = _mm256_loadu_si256((const __m256i *)(acc + i));
            const __m256i neg = _mm256_cmpgt_epi32(_mm256_setzero_si256(), s);
            const __m256i t = _mm256_sub_epi32(_mm256_add_epi32(s, vhalf),
                                               _mm256_and_si256(neg, _mm256_add_epi32(vhalf, vhalf)));
            const __m128i q0 = _mm256_cvttpd_epi32(_mm256_div_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(t)), dcount));
            const __m128i q1 = _mm256_cvttpd_epi32(_mm256_div_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(t, 1)), dcount));
            const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1);
            store8(_mm256_min_epi32(_mm256_max_epi32(q, vlo), vhi), y + i, 8);
        }
        q8_pool_avg_tail(acc, c, i, count, half, lo, hi, y);
    }
}

int32_t edge_simd_pool_q8(int32_t level, int32_t average, const int8_t *x, int64_t row, int32_t rows, int32_t cols,
                          int32_t c, int32_t lo, int32_t hi, int32_t *acc, int8_t *y) {
    if (level < EDGE_SIMD_X86_AVX2) return 0;
    pool_q8_avx2(average, x, row, rows, cols, c, lo, hi, acc, y);
    return 1;
}

/* ------------------------------------------------------------------------------------- depthwise */

T_VNNI static void dw_pixel_512(const int8_t *x, const int32_t *xoff, const int16_t *const *wtap, int32_t ntaps,
                                int32_t c, int32_t input_offset, const int32_t *bias, const int32_t *mul,
                                const int32_t *rs, int32_t zp, int32_t lo, int32_t hi, int8_t *y) {
    const __m512i off = _mm512_set1_epi16((int16_t)input_offset);
    const __m512i vzp = _mm512_set1_epi32(zp), vlo = _mm512_set1_epi32(lo), vhi = _mm512_set1_epi32(hi);
    int32_t c0, t;
    for (c0 = 0; c0 < c; c0 += 32) {
        const int32_t left = c - c0;
        const __mmask32 m32 = left >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << left) - 1);
        __m512i a0 = _mm512_maskz_loadu_epi32((__mmask16)m32, (const void *)(bias + c0));
        __m512i a1 = _mm512_maskz_loadu_epi32((__mmask16)(m32 >> 16), (const void *)(bias + c0 + 16));
        for (t = 0; t < ntaps; t++) {
            const __m512i xv = _mm512_add_epi16(
                _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m32, (const void *)(x + xoff[t] + c0))), off);
            const __m512i wv = _mm512_maskz_loadu_epi16(m32, (const void *)(wtap[t] + c0));
            const __m512i p = _mm512_mullo_epi16(xv, wv); /* |x + off| <= 255, |w| <= 128: fits int16 */
            a0 = _mm512_add_epi32(a0, _mm512_cvtepi16_epi32(_mm512_castsi512_si256(p)));
            a1 = _mm512_add_epi32(a1, _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(p, 1)));
        }
        {
            const __m512i q0 = rq512(a0, _mm512_maskz_loadu_epi32((__mmask16)m32, (const void *)(mul + c0)),
                                     _mm512_mask_loadu_epi32(_mm512_set1_epi32(2), (__mmask16)m32, (const void *)(rs + c0)),
                                     vzp, vlo, vhi);
            _mm_mask_storeu_epi8((void *)(y + c0), (__mmask16)m32, _mm512_cvtepi32_epi8(q0));
            if (left > 16) {
                const __m512i q1 = rq512(a1, _mm512_maskz_loadu_epi32((__mmask16)(m32 >> 16), (const void *)(mul + c0 + 16)),
                                         _mm512_mask_loadu_epi32(_mm512_set1_epi32(2), (__mmask16)(m32 >> 16), (const void *)(rs + c0 + 16)),
                                         vzp, vlo, vhi);
                _mm_mask_storeu_epi8((void *)(y + c0 + 16), (__mmask16)(m32 >> 16), _mm512_cvtepi32_epi8(q1));
            }
        }
    }
}

T_AVX2 static void dw_pixel_256(const int8_t *x, const int32_t *xoff, const int16_t *const *wtap, int32_t ntaps,
                                int32_t c, int32_t input_offset, const int32_t *bias, const int32_t *mul,
                                const int32_t *rs, int32_t zp, int32_t lo, int32_t hi, int8_t *y) {
    const __m256i off = _mm256_set1_epi16((int16_t)input_offset);
    const __m256i vzp = _mm256_set1_epi32(zp), vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi);
    int32_t c0, t;
    for (c0 = 0; c0 + 16 <= c; c0 += 16) {
        __m256i a0 = _mm256_loadu_si256((const __m256i *)(bias + c0));
        __m256i a1 = _mm256_loadu_si256((const __m256i *)(bias + c0 + 8));
        for (t = 0; t < ntaps; t++) {
            const __m256i xv = _mm256_add_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(x + xoff[t] + c0))), off);
            const __m256i wv = _mm256_loadu_si256((const __m256i *)(wtap[t] + c0));
            const __m256i p = _mm256_mullo_epi16(xv, wv);
            a0 = _mm256_add_epi32(a0, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(p)));
            a1 = _mm256_add_epi32(a1, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(p, 1)));
        }
        store8(rq256(a0, _mm256_loadu_si256((const __m256i *)(mul + c0)), _mm256_loadu_si256((const __m256i *)(rs + c0)),
                     vzp, vlo, vhi), y + c0, 8);
        store8(rq256(a1, _mm256_loadu_si256((const __m256i *)(mul + c0 + 8)),
                     _mm256_loadu_si256((const __m256i *)(rs + c0 + 8)), vzp, vlo, vhi), y + c0 + 8, 8);
    }
    for (; c0 < c; c0++) { /* the c % 16 last channels */
        uint32_t acc = (uint32_t)bias[c0];
        for (t = 0; t < ntaps; t++) acc += (uint32_t)((x[xoff[t] + c0] + input_offset) * wtap[t][c0]);
        y[c0] = (int8_t)rq_scalar((int32_t)acc, mul[c0], rs[c0], zp, lo, hi);
    }
}

void edge_simd_dw_pixel(int32_t level, const int8_t *x, const int32_t *xoff, const int16_t *const *wtap,
                        int32_t ntaps, int32_t c, int32_t input_offset, const int32_t *bias, const int32_t *mul,
                        const int32_t *rs, int32_t zp, int32_t lo, int32_t hi, int8_t *y) {
    if (level >= EDGE_SIMD_X86_AVX512VNNI)
        dw_pixel_512(x, xoff, wtap, ntaps, c, input_offset, bias, mul, rs, zp, lo, hi, y);
    else
        dw_pixel_256(x, xoff, wtap, ntaps, c, input_offset, bias, mul, rs, zp, lo, hi, y);
}

#endif
