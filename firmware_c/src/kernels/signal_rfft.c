/* SignalRfft (TFLM signal library): the real forward FFT of every last-dimension frame of an int16 tensor,
 * zero-padded to fft_length, giving fft_length / 2 + 1 complex int16 bins (real, imag interleaved).
 *
 * As edge_sdk/runtime/kernels/signal.py prepare_rfft (TFLM signal/src/rfft_int16.cc over kissfft in its 16-bit fixed
 * point build): the packed half-length complex FFT is a mixed-radix decimation in time (radix 4 first, then
 * 2, 3, 5), every butterfly input divided by its radix (times 32767 / p, rounded), complex products rounded
 * by (x + 2^14) >> 15, sums stored into int16 (wrapping); then the real-input untangling with the super
 * twiddles. Twiddles are floor(0.5 + 32767 * cos/sin(phase)) computed in prepare in double, phases formed in
 * the same order as kissfft (and our Python kernel). Custom options: T (the TensorType; only INT16 is
 * implemented, as in the Python kernel) and fft_length (even, >= 4, half length's prime factors <= 5).
 *
 * Eval runs each frame in its output row: the input is copied there in the FFT's digit-reversed leaf order
 * (a table made in prepare), the stages run in place, and the untangling pairs bins k and N - k in place.
 */
#include <math.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_flexbuffers.h"

EDGE_CUSTOM_KERNEL("SignalRfft", signal_rfft, 1, "INT16", "int16 fixed-point FFT only")

#define SIGNAL_RFFT_MAX_STAGES 32
#define SIGNAL_RFFT_MAX_LENGTH (1 << 28)

typedef struct {
    int16_t r, i;
} signal_rfft_c16_t;

typedef struct {
    int32_t n_half;   /* N: the complex FFT's length (fft_length / 2) */
    int32_t length;   /* input frame length (<= fft_length) */
    int32_t frames;
    int32_t n_stages;
    int32_t radix[SIGNAL_RFFT_MAX_STAGES]; /* kf_factor order (outermost first) */
    int32_t m[SIGNAL_RFFT_MAX_STAGES];     /* remaining length after each radix */
    int32_t fs[SIGNAL_RFFT_MAX_STAGES];    /* product of the radices before it */
    const signal_rfft_c16_t *tw;  /* N twiddles */
    const signal_rfft_c16_t *sup; /* N / 2 super twiddles */
    const int32_t *perm;          /* N leaf indices */
} signal_rfft_data_t;

static signal_rfft_c16_t signal_rfft_cexp16_(double phase) {
    signal_rfft_c16_t c;
    c.r = (int16_t)floor(0.5 + 32767.0 * cos(phase));
    c.i = (int16_t)floor(0.5 + 32767.0 * sin(phase));
    return c;
}

/* kissfft's sround for 16-bit values: add 2^14, shift right by 15, store into int16. */
static inline int16_t signal_rfft_sround_(int32_t x) { return (int16_t)((x + 16384) >> 15); }

/* kissfft's C_FIXDIV(a, p): each component times 32767 / p, rounded; k is that quotient, computed once per
 * stage (an integer division per value was most of the FFT's time). */
static inline signal_rfft_c16_t signal_rfft_fixdiv_(signal_rfft_c16_t a, int32_t k) {
    signal_rfft_c16_t c;
    c.r = signal_rfft_sround_(a.r * k);
    c.i = signal_rfft_sround_(a.i * k);
    return c;
}

static inline signal_rfft_c16_t signal_rfft_cmul_(signal_rfft_c16_t a, signal_rfft_c16_t b) {
    signal_rfft_c16_t c;
    c.r = signal_rfft_sround_((int32_t)a.r * b.r - (int32_t)a.i * b.i);
    c.i = signal_rfft_sround_((int32_t)a.r * b.i + (int32_t)a.i * b.r);
    return c;
}

static inline signal_rfft_c16_t signal_rfft_add_(signal_rfft_c16_t a, signal_rfft_c16_t b) {
    signal_rfft_c16_t c;
    c.r = (int16_t)(a.r + b.r);
    c.i = (int16_t)(a.i + b.i);
    return c;
}

static inline signal_rfft_c16_t signal_rfft_sub_(signal_rfft_c16_t a, signal_rfft_c16_t b) {
    signal_rfft_c16_t c;
    c.r = (int16_t)(a.r - b.r);
    c.i = (int16_t)(a.i - b.i);
    return c;
}

/* sround(v * c) for one int16 component and a twiddle component. */
static inline int16_t signal_rfft_sm_(int16_t v, int16_t c) { return signal_rfft_sround_((int32_t)v * c); }

/* kissfft's kf_factor: radices 4 first, then 2, then odd numbers; fails (returns -1) past the table. */
static int32_t signal_rfft_factor_(int32_t n, int32_t *radix, int32_t *m) {
    int32_t p = 4, floor_sqrt = 0, count = 0;
    while ((int64_t)(floor_sqrt + 1) * (floor_sqrt + 1) <= n) floor_sqrt++;
    do {
        while (n % p) {
            p = p == 4 ? 2 : (p == 2 ? 3 : p + 2);
            if (p > floor_sqrt) p = n;
        }
        if (count == SIGNAL_RFFT_MAX_STAGES) return -1;
        n /= p;
        radix[count] = p;
        m[count] = n;
        count++;
    } while (n > 1);
    return count;
}

edge_status_t edge_prepare_signal_rfft(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *y;
    signal_rfft_data_t *d;
    signal_rfft_c16_t *tw, *sup;
    int32_t *perm;
    efb_map_t opts;
    edge_status_t s;
    int32_t t = 0, n = 0, half, i, k, stride, *dims;
    int64_t elements;
    if (node->n_inputs != 1 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalRfft expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalRfft: the input is required");
    if ((s = efb_node_options(ctx, node, &opts)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "T", &t)) != EDGE_OK) return s;
    if ((s = EFB_OPT_INT32(ctx, &opts, "fft_length", &n)) != EDGE_OK) return s;
    if (t != EDGE_INT16 && t != EDGE_INT32 && t != EDGE_FLOAT32)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalRfft: custom option T is not a type the FFT takes");
    if (x->type != t) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalRfft: input type differs from option T");
    if (t != EDGE_INT16)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalRfft: only the int16 fixed-point FFT is implemented");
    if (y->type != EDGE_INT16) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalRfft: output must be INT16");
    if ((s = edge_type_built(ctx, EDGE_INT16)) != EDGE_OK) return s;
    if (x->rank < 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalRfft: input must have at least one dimension");
    if (n < 4 || n % 2 != 0)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalRfft: fft_length must be even and at least 4");
    if (n > SIGNAL_RFFT_MAX_LENGTH)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalRfft: fft_length is larger than 2^28");
    half = n / 2;
    d = (signal_rfft_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    d->n_stages = signal_rfft_factor_(half, d->radix, d->m);
    for (i = 0; i < d->n_stages; i++)
        if (d->radix[i] > 5) break;
    if (d->n_stages < 0 || i < d->n_stages)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE,
                         "SignalRfft: fft_length / 2 has a prime factor above 5 (kissfft's generic butterfly)");
    d->length = x->dims[x->rank - 1];
    if (d->length <= 0 || d->length > n)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalRfft: input frame length must be in 1..fft_length");
    elements = edge_tensor_elements(x);
    d->frames = (int32_t)(elements / d->length);
    if ((int64_t)d->frames * (n + 2) > EDGE_INT32_MAX)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalRfft: output too large");
    dims = (int32_t *)edge_alloc_persistent(ctx, sizeof *dims * (size_t)x->rank); /* the shape being set */
    if (!dims) return EDGE_ARENA_TOO_SMALL;
    for (i = 0; i < x->rank - 1; i++) dims[i] = x->dims[i];
    dims[x->rank - 1] = n + 2;
    if ((s = edge_set_output_shape(ctx, node, 0, dims, x->rank)) != EDGE_OK) return s;

    tw = (signal_rfft_c16_t *)edge_alloc_persistent(ctx, sizeof *tw * (size_t)half);
    sup = (signal_rfft_c16_t *)edge_alloc_persistent(ctx, sizeof *sup * (size_t)(half / 2 + 1));
    perm = (int32_t *)edge_alloc_persistent(ctx, sizeof *perm * (size_t)half);
    if (!tw || !sup || !perm) return EDGE_ARENA_TOO_SMALL;
    for (i = 0; i < half; i++) tw[i] = signal_rfft_cexp16_(-2.0 * 3.14159265358979323846 * i / half);
    for (i = 0; i < half / 2; i++)
        sup[i] = signal_rfft_cexp16_(-3.14159265358979323846 * ((double)(i + 1) / half + 0.5));
    /* leaf order of kissfft's recursion: slot j takes input element perm[j] */
    for (i = 0; i < half; i++) perm[i] = 0;
    stride = 1;
    for (k = 0; k < d->n_stages; k++) {
        for (i = 0; i < half; i++) perm[i] += ((i / d->m[k]) % d->radix[k]) * stride;
        d->fs[k] = stride;
        stride *= d->radix[k];
    }
    d->n_half = half;
    d->tw = tw;
    d->sup = sup;
    d->perm = perm;
    node->user_data = d;
    return EDGE_OK;
}

/* A radix-4 stage (the common one: powers of two are factored into fours first), as the general stage's p == 4
 * branch with the twiddles stepped instead of indexed: the same arithmetic, in the same order. */
static void signal_rfft_stage4_(signal_rfft_c16_t *a, const signal_rfft_c16_t *tw, int32_t m, int32_t fs) {
    const int32_t kp = 32767 / 4;
    int32_t g, u;
    for (g = 0; g < fs; g++) {
        signal_rfft_c16_t *b = a + g * 4 * m;
        const signal_rfft_c16_t *t1 = tw, *t2 = tw, *t3 = tw;
        for (u = 0; u < m; u++, t1 += fs, t2 += 2 * fs, t3 += 3 * fs) {
            const signal_rfft_c16_t f0 = signal_rfft_fixdiv_(b[u], kp);
            const signal_rfft_c16_t s1 = signal_rfft_cmul_(signal_rfft_fixdiv_(b[m + u], kp), *t1);
            const signal_rfft_c16_t s2 = signal_rfft_cmul_(signal_rfft_fixdiv_(b[2 * m + u], kp), *t2);
            const signal_rfft_c16_t s3v = signal_rfft_cmul_(signal_rfft_fixdiv_(b[3 * m + u], kp), *t3);
            const signal_rfft_c16_t s5 = signal_rfft_sub_(f0, s2), f0s = signal_rfft_add_(f0, s2);
            const signal_rfft_c16_t s3 = signal_rfft_add_(s1, s3v), s4 = signal_rfft_sub_(s1, s3v);
            b[u] = signal_rfft_add_(f0s, s3);
            b[2 * m + u] = signal_rfft_sub_(f0s, s3);
            b[m + u].r = (int16_t)(s5.r + s4.i);
            b[m + u].i = (int16_t)(s5.i - s4.r);
            b[3 * m + u].r = (int16_t)(s5.r - s4.i);
            b[3 * m + u].i = (int16_t)(s5.i + s4.r);
        }
    }
}

/* One stage over the whole buffer: fs groups of p * m values, m butterflies in each. */
static void signal_rfft_stage_(signal_rfft_c16_t *a, const signal_rfft_c16_t *tw, int32_t p, int32_t m, int32_t fs) {
    int32_t g, u, q;
    const int32_t kp = 32767 / p;
    signal_rfft_c16_t f[5], sv[5];
    if (p == 4) {
        signal_rfft_stage4_(a, tw, m, fs);
        return;
    }
    for (g = 0; g < fs; g++) {
        signal_rfft_c16_t *b = a + g * p * m;
        for (u = 0; u < m; u++) {
            f[0] = signal_rfft_fixdiv_(b[u], kp);
            for (q = 1; q < p; q++) sv[q] = signal_rfft_cmul_(signal_rfft_fixdiv_(b[q * m + u], kp), tw[q * u * fs]);
            if (p == 2) {
                b[u] = signal_rfft_add_(f[0], sv[1]);
                b[m + u] = signal_rfft_sub_(f[0], sv[1]);
            } else if (p == 3) {
                int16_t e = tw[fs * m].i;
                signal_rfft_c16_t s3 = signal_rfft_add_(sv[1], sv[2]);
                signal_rfft_c16_t d12 = signal_rfft_sub_(sv[1], sv[2]);
                signal_rfft_c16_t s0, o1;
                s0.r = signal_rfft_sm_(d12.r, e);
                s0.i = signal_rfft_sm_(d12.i, e);
                o1.r = (int16_t)(f[0].r - (s3.r >> 1));
                o1.i = (int16_t)(f[0].i - (s3.i >> 1));
                b[u] = signal_rfft_add_(f[0], s3);
                b[2 * m + u].r = (int16_t)(o1.r + s0.i);
                b[2 * m + u].i = (int16_t)(o1.i - s0.r);
                b[m + u].r = (int16_t)(o1.r - s0.i);
                b[m + u].i = (int16_t)(o1.i + s0.r);
            } else { /* p == 5 */
                signal_rfft_c16_t ya = tw[fs * m], yb = tw[2 * fs * m];
                signal_rfft_c16_t s7 = signal_rfft_add_(sv[1], sv[4]), s10 = signal_rfft_sub_(sv[1], sv[4]);
                signal_rfft_c16_t s8 = signal_rfft_add_(sv[2], sv[3]), s9 = signal_rfft_sub_(sv[2], sv[3]);
                int32_t s5r, s5i, s6r, s6i, s11r, s11i, s12r, s12i;
                b[u].r = (int16_t)(f[0].r + s7.r + s8.r);
                b[u].i = (int16_t)(f[0].i + s7.i + s8.i);
                s5r = f[0].r + signal_rfft_sm_(s7.r, ya.r) + signal_rfft_sm_(s8.r, yb.r);
                s5i = f[0].i + signal_rfft_sm_(s7.i, ya.r) + signal_rfft_sm_(s8.i, yb.r);
                s6r = signal_rfft_sm_(s10.i, ya.i) + signal_rfft_sm_(s9.i, yb.i);
                s6i = -signal_rfft_sm_(s10.r, ya.i) - signal_rfft_sm_(s9.r, yb.i);
                s11r = f[0].r + signal_rfft_sm_(s7.r, yb.r) + signal_rfft_sm_(s8.r, ya.r);
                s11i = f[0].i + signal_rfft_sm_(s7.i, yb.r) + signal_rfft_sm_(s8.i, ya.r);
                s12r = -signal_rfft_sm_(s10.i, yb.i) + signal_rfft_sm_(s9.i, ya.i);
                s12i = signal_rfft_sm_(s10.r, yb.i) - signal_rfft_sm_(s9.r, ya.i);
                /* every intermediate above only adds: the int16 wrap of the sum is the sum of the wraps */
                b[m + u].r = (int16_t)(s5r - s6r);
                b[m + u].i = (int16_t)(s5i - s6i);
                b[4 * m + u].r = (int16_t)(s5r + s6r);
                b[4 * m + u].i = (int16_t)(s5i + s6i);
                b[2 * m + u].r = (int16_t)(s11r + s12r);
                b[2 * m + u].i = (int16_t)(s11i + s12i);
                b[3 * m + u].r = (int16_t)(s11r - s12r);
                b[3 * m + u].i = (int16_t)(s11i - s12i);
            }
        }
    }
}

void edge_eval_signal_rfft(const edge_node_t *node, edge_ctx_t *ctx) {
    const signal_rfft_data_t *d = (const signal_rfft_data_t *)node->user_data;
    const int16_t *x = (const int16_t *)edge_in(ctx, node, 0)->data;
    int16_t *y = (int16_t *)edge_out(ctx, node, 0)->data;
    const int32_t n = d->n_half, h = d->n_half / 2, len = d->length;
    int32_t f, j, k;
    for (f = 0; f < d->frames; f++, x += len, y += 2 * (n + 1)) {
        signal_rfft_c16_t *a = (signal_rfft_c16_t *)(void *)y;
        signal_rfft_c16_t d0;
        int16_t dr;
        for (j = 0; j < n; j++) {
            int32_t e = 2 * d->perm[j];
            a[j].r = e < len ? x[e] : 0;
            a[j].i = e + 1 < len ? x[e + 1] : 0;
        }
        for (k = d->n_stages - 1; k >= 0; k--) signal_rfft_stage_(a, d->tw, d->radix[k], d->m[k], d->fs[k]);
        /* untangle: bin 0 and bin N from a[0], then bins k and N - k from a[k] and a[N - k] */
        d0 = signal_rfft_fixdiv_(a[0], 32767 / 2);
        dr = d0.r;
        a[0].r = (int16_t)(dr + d0.i);
        a[0].i = 0;
        a[n].r = (int16_t)(dr - d0.i);
        a[n].i = 0;
        for (k = 1; k <= h; k++) {
            signal_rfft_c16_t fpk = signal_rfft_fixdiv_(a[k], 32767 / 2), nk = a[n - k], fpnk, f1, t;
            nk.i = (int16_t)-nk.i;
            fpnk = signal_rfft_fixdiv_(nk, 32767 / 2);
            f1 = signal_rfft_add_(fpk, fpnk);
            t = signal_rfft_cmul_(signal_rfft_sub_(fpk, fpnk), d->sup[k - 1]);
            a[k].r = (int16_t)(((int32_t)f1.r + t.r) >> 1);
            a[k].i = (int16_t)(((int32_t)f1.i + t.i) >> 1);
            a[n - k].r = (int16_t)(((int32_t)f1.r - t.r) >> 1);
            a[n - k].i = (int16_t)(((int32_t)t.i - f1.i) >> 1);
        }
    }
}
