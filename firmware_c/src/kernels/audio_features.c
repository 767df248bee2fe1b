/* The custom ops AudioSpectrogram and Mfcc (TensorFlow's speech front end) as LiteRT's audio_spectrogram.cc and
 * mfcc.cc; the Python twin edge_sdk/runtime/kernels/audio_features.py says the arithmetic. FLOAT32, in double.
 *  AudioSpectrogram: [samples, channels] -> [channels, frames, fft_length / 2 + 1]; a periodic Hann window, a
 *    radix-2 FFT of fft_length (the power of two >= window_size) points in double (twiddles from prepare), the
 *    squared magnitudes rounded to float32 (their sqrtf without magnitude_squared).
 *  Mfcc: spectrogram [audio_channels, frames, bins] and an INT32 sample rate -> [audio_channels, frames,
 *    dct_coefficient_count]; the DCT table built in prepare, the mel filterbank (bands and weights per bin) too for
 *    a constant rate; a rate computed at run time builds it at eval, in scratch (zeros out where LiteRT cannot
 *    build it: a rate <= 0, the upper limit past the bins).
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"
#include "../edge_flexbuffers.h"

EDGE_CUSTOM_KERNEL("AudioSpectrogram", audio_spectrogram, 1, "FLOAT32", "[samples, channels]")
EDGE_CUSTOM_KERNEL("Mfcc", mfcc, 1, "FLOAT32", "INT32 sample rate")

typedef struct {
    int32_t window, stride, squared, n_fft, log2_fft, samples, channels, frames, buffer;
    const double *hann;       /* [window] */
    const double *twiddle;    /* [n_fft / 2][2]: cos, -sin of 2 pi k / n_fft */
} spectrogram_data_t;

/* An option read as LiteRT's AsInt64 (an integer, or a float truncated); a missing key keeps *out. */
static edge_status_t af_int_option(edge_ctx_t *ctx, const efb_map_t *m, const char *key, int64_t *out) {
    efb_ref_t r;
    double f;
    if (efb_map_find(m, key, &r) != EFB_OK) return EDGE_OK;
    if (efb_get_int(m, &r, out) == EFB_OK) return EDGE_OK;
    if (efb_get_float(m, &r, &f) == EFB_OK && f > -9.0e18 && f < 9.0e18) {
        *out = (int64_t)f;
        return EDGE_OK;
    }
    return EDGE_FAIL(ctx, EDGE_BAD_NODE, "a custom option is not a number");
}

edge_status_t edge_prepare_audio_spectrogram(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *y;
    spectrogram_data_t *d;
    double *hann, *tw;
    int64_t window = 0, stride = 0, squared = 0;
    int32_t dims[3], i, n;
    efb_map_t m;
    edge_status_t s;
    const double pi = atan(1.0) * 4.0;
    if (node->n_inputs != 1 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 1 input and 1 output");
    x = edge_in(ctx, node, 0);
    y = edge_out(ctx, node, 0);
    if (!x) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input is required");
    if (x->type != EDGE_FLOAT32 || y->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (x->rank != 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "input must be [samples, channels]");
    if ((s = efb_node_options(ctx, node, &m)) != EDGE_OK) return s;
    if ((s = af_int_option(ctx, &m, "window_size", &window)) != EDGE_OK) return s;
    if ((s = af_int_option(ctx, &m, "stride", &stride)) != EDGE_OK) return s;
    if ((s = af_int_option(ctx, &m, "magnitude_squared", &squared)) != EDGE_OK) return s;
    if (window < 2 || window > (1 << 24)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "window_size must be 2 .. 2^24");
    if (stride < 1 || stride > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "stride must be at least 1");
    d = (spectrogram_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->window = (int32_t)window;
    d->stride = (int32_t)stride;
    d->squared = squared != 0;
    for (d->n_fft = 1, d->log2_fft = 0; d->n_fft < d->window; d->n_fft *= 2) d->log2_fft++;
    d->samples = x->dims[0];
    d->channels = x->dims[1];
    d->frames = d->samples < d->window ? 0 : 1 + (d->samples - d->window) / d->stride;
    n = d->n_fft;
    hann = (double *)edge_alloc_persistent(ctx, sizeof(double) * (size_t)d->window);
    tw = (double *)edge_alloc_persistent(ctx, sizeof(double) * (size_t)n);
    if (!hann || !tw) return EDGE_ARENA_TOO_SMALL;
    for (i = 0; i < d->window; i++) hann[i] = 0.5 - 0.5 * cos((2.0 * pi * i) / d->window);
    for (i = 0; i < n / 2; i++) {
        tw[2 * i] = cos(2.0 * pi * i / n);
        tw[2 * i + 1] = -sin(2.0 * pi * i / n);
    }
    d->hann = hann;
    d->twiddle = tw;
    if ((s = edge_request_scratch(ctx, node, sizeof(double) * 2 * (size_t)n, &d->buffer)) != EDGE_OK) return s;
    dims[0] = d->channels;
    dims[1] = d->frames;
    dims[2] = n / 2 + 1;
    return edge_set_output_shape(ctx, node, 0, dims, 3);
}

/* In-place radix-2 FFT of n = 2^log2n complex values (re, im interleaved). */
static void af_fft(double *z, int32_t n, int32_t log2n, const double *tw) {
    int32_t i, j, b, len, k;
    for (i = 0; i < n; i++) { /* bit-reversal permutation */
        for (j = 0, b = 0; b < log2n; b++) j |= ((i >> b) & 1) << (log2n - 1 - b);
        if (j > i) {
            double t = z[2 * i];
            z[2 * i] = z[2 * j];
            z[2 * j] = t;
            t = z[2 * i + 1];
            z[2 * i + 1] = z[2 * j + 1];
            z[2 * j + 1] = t;
        }
    }
    for (len = 2; len <= n; len *= 2) {
        const int32_t step = n / len;
        for (i = 0; i < n; i += len)
            for (k = 0; k < len / 2; k++) {
                const double wr = tw[2 * k * step], wi = tw[2 * k * step + 1];
                double *u = z + 2 * (i + k), *v = z + 2 * (i + k + len / 2);
                const double vr = v[0] * wr - v[1] * wi, vi = v[0] * wi + v[1] * wr;
                v[0] = u[0] - vr;
                v[1] = u[1] - vi;
                u[0] += vr;
                u[1] += vi;
            }
    }
}

void edge_eval_audio_spectrogram(const edge_node_t *node, edge_ctx_t *ctx) {
    const spectrogram_data_t *d = (const spectrogram_data_t *)node->user_data;
    const float *x = (const float *)edge_in(ctx, node, 0)->data;
    float *y = (float *)edge_out(ctx, node, 0)->data;
    double *z = (double *)edge_scratch(ctx, node, d->buffer);
    const int32_t bins = d->n_fft / 2 + 1;
    int32_t c, f, j;
    for (c = 0; c < d->channels; c++)
        for (f = 0; f < d->frames; f++) {
            float *row = y + ((int64_t)c * d->frames + f) * bins;
            const int64_t start = (int64_t)f * d->stride;
            memset(z, 0, sizeof(double) * 2 * (size_t)d->n_fft);
            for (j = 0; j < d->window; j++) z[2 * j] = (double)x[(start + j) * d->channels + c] * d->hann[j];
            af_fft(z, d->n_fft, d->log2_fft, d->twiddle);
            for (j = 0; j < bins; j++) {
                const float p = (float)(z[2 * j] * z[2 * j] + z[2 * j + 1] * z[2 * j + 1]);
                row[j] = d->squared ? p : sqrtf(p);
            }
        }
}

typedef struct {
    int32_t bins, channels, coefficients, start, end, bank;
    int32_t filterbank;       /* -1: built at prepare (a constant rate); else the scratch it is built in at eval */
    double lower, upper;      /* the frequency limits (Hz) */
    const int32_t *band;      /* [bins]: the band a bin's weight goes to (-1 none; -2 unused) */
    const double *weight;     /* [bins] */
    const double *dct;        /* [coefficients][channels] */
} mfcc_data_t;

static double af_mel(double f) { return 1127.0 * log1p(f / 700.0); }

/* LiteRT's mel filterbank at `rate` into band / weight [bins] (centers: [channels + 1] of work space) and its used
 * bins [*start, *end]; 0 where LiteRT cannot build it (a rate <= 0, the upper limit past the bins). */
static int af_filterbank(const mfcc_data_t *d, int32_t rate, int32_t *band, double *weight, double *centers,
                         int32_t *start, int32_t *end) {
    const double mel_low = af_mel(d->lower);
    const double spacing = (af_mel(d->upper) - mel_low) / (double)(d->channels + 1);
    double hz_per_bin;
    int32_t i, channel;
    if (rate <= 0) return 0;
    for (i = 0; i < d->channels + 1; i++) centers[i] = mel_low + spacing * (i + 1);
    hz_per_bin = 0.5 * rate / (double)(d->bins - 1);
    *start = (int32_t)(1.5 + d->lower / hz_per_bin);
    if (d->upper / hz_per_bin >= (double)d->bins) return 0;
    *end = (int32_t)(d->upper / hz_per_bin);
    for (i = 0, channel = 0; i < d->bins; i++) {
        band[i] = -2;
        weight[i] = 0.0;
        if (i < *start || i > *end) continue;
        while (channel < d->channels && centers[channel] < af_mel(i * hz_per_bin)) channel++;
        band[i] = channel - 1;
        weight[i] = band[i] >= 0 ? (centers[band[i] + 1] - af_mel(i * hz_per_bin)) / (centers[band[i] + 1] - centers[band[i]])
                                 : (centers[0] - af_mel(i * hz_per_bin)) / (centers[0] - mel_low);
    }
    return 1;
}

edge_status_t edge_prepare_mfcc(edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *x, *rate_t, *y;
    mfcc_data_t *d;
    int64_t upper = 0, lower = 0, channels = 0, coefficients = 0;
    int32_t dims[3], i, j, rate;
    int32_t *band = 0;
    double *weight = 0, *dct, *centers = 0;
    efb_map_t m;
    edge_status_t s;
    const double pi = atan(1.0) * 4.0;
    if (node->n_inputs != 2 || node->n_outputs != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    rate_t = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !rate_t) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "spectrogram and sample rate are required");
    if (x->type != EDGE_FLOAT32 || y->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "C kernel runs FLOAT32");
    if ((s = edge_type_built(ctx, x->type)) != EDGE_OK) return s;
    if (rate_t->type != EDGE_INT32 || edge_tensor_elements(rate_t) != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "sample rate must be one INT32 value");
    if (x->rank != 3 || x->dims[0] <= 0 || x->dims[1] <= 0 || x->dims[2] <= 0)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "spectrogram must be [audio_channels, frames, bins], none empty");
    if ((s = efb_node_options(ctx, node, &m)) != EDGE_OK) return s;
    if ((s = af_int_option(ctx, &m, "upper_frequency_limit", &upper)) != EDGE_OK ||
        (s = af_int_option(ctx, &m, "lower_frequency_limit", &lower)) != EDGE_OK ||
        (s = af_int_option(ctx, &m, "filterbank_channel_count", &channels)) != EDGE_OK ||
        (s = af_int_option(ctx, &m, "dct_coefficient_count", &coefficients)) != EDGE_OK)
        return s;
    if (channels <= 0 || channels > 4096 || coefficients <= 0 || coefficients > channels)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "filterbank_channel_count, dct_coefficient_count: positive, coefficients <= channels");
    rate = rate_t->is_const ? *(const int32_t *)rate_t->data : 0;
    if (rate_t->is_const && rate <= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "sample rate must be positive");
    if (x->dims[2] < 2) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "the spectrogram needs at least 2 bins");
    if (!(lower >= 0 && lower < upper)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "frequency limits must satisfy 0 <= lower < upper");
    d = (mfcc_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->bins = x->dims[2];
    d->channels = (int32_t)channels;
    d->coefficients = (int32_t)coefficients;
    d->lower = (double)lower;
    d->upper = (double)upper;
    d->filterbank = -1;
    dct = (double *)edge_alloc_persistent(ctx, sizeof(double) * (size_t)(d->channels * d->coefficients));
    if (!dct) return EDGE_ARENA_TOO_SMALL;
    if (rate_t->is_const) {
        band = (int32_t *)edge_alloc_persistent(ctx, sizeof(int32_t) * (size_t)d->bins);
        weight = (double *)edge_alloc_persistent(ctx, sizeof(double) * (size_t)d->bins);
        centers = (double *)edge_alloc_persistent(ctx, sizeof(double) * (size_t)(d->channels + 1)); /* prepare only */
        if (!band || !weight || !centers) return EDGE_ARENA_TOO_SMALL;
        if (!af_filterbank(d, rate, band, weight, centers, &d->start, &d->end))
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "upper_frequency_limit falls past the spectrogram's bins");
    } else if ((s = edge_request_scratch(ctx, node, (sizeof(double) + sizeof(int32_t)) * (size_t)d->bins +
                                         sizeof(double) * (size_t)(d->channels + 1), &d->filterbank)) != EDGE_OK) {
        return s; /* a rate computed at run time: the filterbank is built at eval (LiteRT reads the rate there) */
    }
    for (i = 0; i < d->coefficients; i++)
        for (j = 0; j < d->channels; j++)
            dct[i * d->channels + j] = sqrt(2.0 / d->channels) * cos(i * (pi / d->channels) * (j + 0.5));
    d->band = band;
    d->weight = weight;
    d->dct = dct;
    if ((s = edge_request_scratch(ctx, node, sizeof(double) * (size_t)d->channels, &d->bank)) != EDGE_OK) return s;
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    dims[2] = d->coefficients;
    return edge_set_output_shape(ctx, node, 0, dims, 3);
}

void edge_eval_mfcc(const edge_node_t *node, edge_ctx_t *ctx) {
    const mfcc_data_t *d = (const mfcc_data_t *)node->user_data;
    const edge_tensor_t *x = edge_in(ctx, node, 0);
    const float *in = (const float *)x->data;
    float *out = (float *)edge_out(ctx, node, 0)->data;
    double *bank = (double *)edge_scratch(ctx, node, d->bank);
    const int64_t frames = (int64_t)x->dims[0] * x->dims[1];
    const int32_t *band = d->band;
    const double *weight = d->weight;
    int32_t start = d->start, end = d->end;
    int64_t f;
    int32_t i, j;
    if (d->filterbank >= 0) { /* the rate read now: weights [bins], centers [channels + 1], bands [bins] */
        double *fb = (double *)edge_scratch(ctx, node, d->filterbank);
        int32_t *bands = (int32_t *)(fb + d->bins + d->channels + 1);
        const int32_t rate = *(const int32_t *)edge_in(ctx, node, 1)->data;
        if (rate <= 0) { /* LiteRT fails the invoke there */
            EDGE_EVAL_BAD_INPUT(ctx, node, 1, 0, rate, "the sample rate must be positive");
            return;
        }
        if (!af_filterbank(d, rate, bands, fb, fb + d->bins, &start, &end)) {
            for (f = 0; f < frames * d->coefficients; f++) out[f] = 0.0f; /* LiteRT's output then */
            return;
        }
        band = bands;
        weight = fb;
    }
    for (f = 0; f < frames; f++) {
        const float *spec = in + f * d->bins;
        float *coef = out + f * d->coefficients;
        for (j = 0; j < d->channels; j++) bank[j] = 0.0;
        for (i = start; i <= end; i++) { /* each bin: weight to its band, the rest to the next one */
            const double mag = sqrt((double)spec[i]), weighted = mag * weight[i];
            const int32_t c = band[i];
            if (c >= 0) bank[c] += weighted;
            if (c + 1 < d->channels) bank[c + 1] += mag - weighted;
        }
        for (j = 0; j < d->channels; j++) bank[j] = log(bank[j] < 1e-12 ? 1e-12 : bank[j]);
        for (i = 0; i < d->coefficients; i++) {
            double sum = 0.0;
            for (j = 0; j < d->channels; j++) sum += d->dct[i * d->channels + j] * bank[j];
            coef[i] = (float)sum;
        }
    }
}
