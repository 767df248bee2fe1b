"""The custom ops AudioSpectrogram and Mfcc (TensorFlow's speech front end), as LiteRT's audio_spectrogram.cc and
mfcc.cc (with internal/spectrogram.cc, mfcc.cc, mfcc_mel_filterbank.cc, mfcc_dct.cc). FLOAT32 only, as LiteRT.

AudioSpectrogram: input [samples, channels]; options window_size (>= 2), stride (>= 1), magnitude_squared
(default false). Output [channels, frames, fft_length / 2 + 1], frames = 1 + (samples - window_size) // stride
(0 when samples < window_size), fft_length the power of two >= window_size. Each frame: the window's samples times
a periodic Hann window (0.5 - 0.5 cos(2 pi i / window_size)), zero-padded to fft_length, real FFT in double, the
squared magnitudes rounded to float32; without magnitude_squared their float32 square root.

Mfcc: inputs spectrogram [audio_channels, frames, bins] (squared magnitudes) and the sample rate (INT32, one
value; a constant here, since the filterbank is built from it at prepare); options upper_frequency_limit,
lower_frequency_limit (integers, as LiteRT reads them), filterbank_channel_count, dct_coefficient_count. Output
[audio_channels, frames, dct_coefficient_count]. Per frame, in double: the square roots of bins start..end weighted
into a triangular mel filterbank (HTK's mel scale 1127 ln(1 + f / 700), DC excluded), each band's log (floored at
1e-12), then a DCT-II (sqrt(2 / channels) cos(pi i (j + 0.5) / channels)); the coefficients rounded to float32.
A spectrogram whose bins end below the upper frequency limit's bin is refused (LiteRT outputs zeros for it).
"""

from __future__ import annotations

import math

import numpy as np

from edge_sdk.errors import DataError
from edge_sdk.runtime.kernels.detection import flex_number, flex_options
from edge_sdk.runtime.kernels.node import Eval, Node

_F = np.float32
FILTERBANK_FLOOR = 1e-12  # LiteRT's kFilterbankFloor


def fft_length(window: int) -> int:
    """The power of two at or above ``window`` (LiteRT's NextPowerOfTwo)."""
    return 1 << (window - 1).bit_length()


def periodic_hann(window: int) -> np.ndarray:
    pi = math.atan(1.0) * 4.0
    return np.array([0.5 - 0.5 * math.cos((2.0 * pi * i) / window) for i in range(window)])


def prepare_audio_spectrogram(node: Node) -> Eval:
    node.expect_counts(1, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32",))
    node.expect_types(y, ("FLOAT32",), "output")
    opts = flex_options(node)
    window = flex_number(node, opts, "window_size", int)
    stride = flex_number(node, opts, "stride", int)
    squared = bool(opts.get("magnitude_squared") or False)
    if window < 2:
        raise node.error(f"window_size {window} must be at least 2")
    if stride < 1:
        raise node.error(f"stride {stride} must be at least 1")
    if len(x.shape) != 2:
        raise node.error(f"input {x.shape} must be [samples, channels]")
    samples, channels = x.shape
    frames = 0 if samples < window else 1 + (samples - window) // stride
    n_fft = fft_length(window)
    bins = n_fft // 2 + 1
    node.set_output_shape(0, (channels, frames, bins))
    hann = periodic_hann(window)
    starts = np.arange(frames) * stride

    def run(inputs, outputs):
        if frames == 0:
            return
        wave = inputs[0].astype(np.float64)  # [samples, channels]
        framed = wave[starts[:, None] + np.arange(window)[None, :]]  # [frames, window, channels]
        spectrum = np.fft.rfft(framed * hann[None, :, None], n=n_fft, axis=1)  # [frames, bins, channels]
        power = (spectrum.real * spectrum.real + spectrum.imag * spectrum.imag).astype(_F)
        if not squared:
            power = np.sqrt(power)
        outputs[0][...] = np.transpose(power, (2, 0, 1))

    return run


def mel(freq: float) -> float:
    return 1127.0 * math.log1p(freq / 700.0)


def mel_filterbank(bins: int, rate: float, channels: int, lower: float, upper: float):
    """LiteRT's MfccMelFilterbank: (start, end, band [bins] (-2 unused, -1 before the first band), weights [bins])."""
    centers = [0.0] * (channels + 1)
    mel_low, mel_high = mel(lower), mel(upper)
    spacing = (mel_high - mel_low) / float(channels + 1)
    for i in range(channels + 1):
        centers[i] = mel_low + spacing * (i + 1)
    hz_per_bin = 0.5 * rate / float(bins - 1)
    start = int(1.5 + lower / hz_per_bin)
    end = int(upper / hz_per_bin)
    band = [-2] * bins
    weights = [0.0] * bins
    channel = 0
    for i in range(bins):
        if start <= i <= end:
            melf = mel(i * hz_per_bin)
            while channel < channels and centers[channel] < melf:
                channel += 1
            band[i] = channel - 1
    for i in range(bins):
        if start <= i <= end:
            c = band[i]
            if c >= 0:
                weights[i] = (centers[c + 1] - mel(i * hz_per_bin)) / (centers[c + 1] - centers[c])
            else:
                weights[i] = (centers[0] - mel(i * hz_per_bin)) / (centers[0] - mel_low)
    return start, end, band, weights


def dct_matrix(inputs: int, coefficients: int) -> np.ndarray:
    """[coefficients, inputs] as LiteRT's MfccDct."""
    norm = math.sqrt(2.0 / inputs)
    arg = (math.atan(1.0) * 4.0) / inputs
    return np.array([[norm * math.cos(i * arg * (j + 0.5)) for j in range(inputs)] for i in range(coefficients)])


def _filterbank(banks: dict, bins: int, rate: int, channels: int, lower: float, upper: float) -> tuple | None:
    """(used bins, the band each one's right-side weight goes to (-1: none), the weights, the next bands) of LiteRT's
    mel filterbank at ``rate``, kept in ``banks``; None where LiteRT cannot build it (a rate <= 0, the upper limit
    past the bins)."""
    if rate not in banks:
        if len(banks) >= 8:  # a rate fed per invoke: the last few kept
            banks.clear()
        banks[rate] = None
        if rate > 0:
            start, end, band, weights = mel_filterbank(bins, float(rate), channels, lower, upper)
            if end < bins:
                used = np.arange(start, end + 1)
                right = np.array([band[i] for i in used], dtype=np.int64)
                banks[rate] = (used, right, np.array([weights[i] for i in used]), right + 1)
    return banks[rate]


def prepare_mfcc(node: Node) -> Eval:
    node.expect_counts(2, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32",), "spectrogram")
    node.expect_types(y, ("FLOAT32",), "output")
    rate_info = node.input(1)
    node.expect_types(rate_info, ("INT32",), "sample rate")
    if rate_info.size != 1:
        raise node.error(f"sample rate must hold one value, holds {rate_info.size}")
    # known at prepare: the filterbank is built (and checked) now; computed from data: at eval, as LiteRT reads it
    rate = None if rate_info.known is None else int(np.asarray(rate_info.known).reshape(-1)[0])
    opts = flex_options(node)
    # LiteRT reads every option with AsInt64: a missing key is 0, a float truncates
    upper = float(flex_number(node, opts, "upper_frequency_limit", int, 0))
    lower = float(flex_number(node, opts, "lower_frequency_limit", int, 0))
    channels = flex_number(node, opts, "filterbank_channel_count", int, 0)
    coefficients = flex_number(node, opts, "dct_coefficient_count", int, 0)
    if len(x.shape) != 3 or min(x.shape) <= 0:
        raise node.error(f"spectrogram {x.shape} must be [audio_channels, frames, bins], none empty")
    bins = x.shape[2]
    if channels <= 0 or coefficients <= 0 or coefficients > channels:
        raise node.error(f"filterbank_channel_count {channels} and dct_coefficient_count {coefficients}: both must be "
                         "positive, the coefficients at most the channels")
    if rate is not None and rate <= 0:
        raise node.error(f"sample rate {rate} must be positive")
    if bins < 2:
        raise node.error(f"the spectrogram has {bins} bins; at least 2 needed")
    if not 0 <= lower < upper:
        raise node.error(f"frequency limits [{lower:g}, {upper:g}] must satisfy 0 <= lower < upper")
    banks: dict[int, tuple | None] = {}  # rate -> its filterbank (_filterbank)
    if rate is not None and _filterbank(banks, bins, rate, channels, lower, upper) is None:
        end = mel_filterbank(bins, float(rate), channels, lower, upper)[1]
        raise node.error(f"upper_frequency_limit {upper:g} Hz falls in bin {end}, past the spectrogram's {bins} bins "
                         f"at {rate} Hz (LiteRT outputs zeros then)")
    node.set_output_shape(0, (x.shape[0], x.shape[1], coefficients))
    dct = dct_matrix(channels, coefficients)
    where = node.where()

    def run(inputs, outputs):
        at = rate if rate is not None else int(inputs[1].reshape(-1)[0])
        if at <= 0:  # LiteRT fails the invoke there (its filterbank's Initialize)
            raise DataError(f"{where}: input 1 '{rate_info.name}' (the sample rate) is {at}; it must be positive")
        fb = _filterbank(banks, bins, at, channels, lower, upper)
        if fb is None:  # a rate read at eval where LiteRT builds no filterbank: its output, zeros
            outputs[0][...] = 0
            return
        used, right, w, left = fb
        frames = inputs[0].reshape(-1, bins).astype(np.float64)
        mags = np.sqrt(frames[:, used])  # [F, used]
        weighted = mags * w
        bank = np.zeros((frames.shape[0], channels + 2))  # columns 0 and channels + 1 collect the unused sides
        for k in range(used.size):  # bin by bin, as LiteRT sums them
            bank[:, right[k] + 1] += weighted[:, k]
            bank[:, left[k] + 1] += mags[:, k] - weighted[:, k]
        logs = np.log(np.maximum(bank[:, 1:channels + 1], FILTERBANK_FLOOR))
        outputs[0][...] = (logs @ dct.T).astype(_F).reshape(outputs[0].shape)

    return run
