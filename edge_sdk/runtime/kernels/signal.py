"""TFLM's audio front-end ("signal" library) custom ops, bit-exact with TFLM's integer DSP.

These ops carry their parameters as a FlexBuffers map in ``custom_options`` (decoded by our own
``edge_sdk.runtime.kernels.flexbuffers``). The arithmetic follows signal/src in tflite-micro: unsigned 32/64-bit
wrap-around where the C code uses uint32_t/uint64_t, int16 truncation on every store into an int16, the same
rounding shifts. numpy int64/uint64 arrays hold the C intermediates; in the FFT, int16 arrays (whose numpy
arithmetic wraps) stand for the C code's int16 values, and ``fixedpoint.wrap16`` elsewhere reproduces a store into
int16.

The complex FFT is kissfft v130 in FIXED_POINT=16 mode (the version TFLM builds): a mixed-radix decimation in
time, radix 4 first, then 2, 3, 5. Every butterfly input is divided by the radix (multiply by 32767/p and
round), twiddles are round(32767 * cos/sin). We run the same stages, each vectorized over all its
butterflies, on a digit-reversed copy of the input.

SignalFilterBankSpectralSubtraction keeps a per-channel noise estimate between invokes (TFLM zeroes it at
prepare and in its kernel reset). The eval function we return exposes ``run.reset()`` for an interpreter
that wants to clear it together with its variables.
"""

from __future__ import annotations

import math

import numpy as np

from edge_sdk.runtime.kernels.fixedpoint import wrap16
from edge_sdk.runtime.kernels.flexbuffers import FlexBufferError, read_map
from edge_sdk.runtime.kernels.node import Node, TensorInfo
from edge_sdk.model import schema

_U32 = np.uint64(0xFFFFFFFF)


# --------------------------------------------------------------------------------------------- helpers
def _options(node: Node, spec: dict[str, str]) -> dict:
    """The custom options map, with ``spec`` {key: "int" | "bool"} keys required and type-checked."""
    if not spec:
        return {}
    if not node.custom_options:
        raise node.error(f"custom options (a FlexBuffers map with {', '.join(sorted(spec))}) are missing")
    try:
        opts = read_map(node.custom_options)
    except FlexBufferError as exc:
        raise node.error(f"custom options: {exc}") from None
    out = {}
    for key, kind in spec.items():
        if key not in opts:
            raise node.error(f"custom option '{key}' is missing")
        value = opts[key]
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, int):
            raise node.error(f"custom option '{key}' must be an integer, found {type(value).__name__}")
        if kind == "bool":
            value = value != 0
        elif not -(1 << 31) <= value < (1 << 31):
            raise node.error(f"custom option '{key}' = {value} does not fit in int32")
        out[key] = value
    return out


def _expect_type(node: Node, t: TensorInfo, type_name: str, what: str) -> None:
    if t.type != type_name:
        raise node.unsupported(f"{what} '{t.name}' has type {t.type}; this op takes {type_name}")


def _expect_rank(node: Node, t: TensorInfo, rank: int, what: str) -> None:
    if len(t.shape) != rank:
        raise node.error(f"{what} '{t.name}' must be {rank}-D, has shape {t.shape}")


def _vector_op(node: Node, spec: dict[str, str], in_type: str, out_type: str):
    """The checks of a one-input, one-output op on a 1-D vector: (options, input, output)."""
    node.expect_counts(1, 1)
    opts = _options(node, spec)
    x, y = node.input(0), node.outputs[0]
    _expect_type(node, x, in_type, "input")
    _expect_type(node, y, out_type, "output")
    _expect_rank(node, x, 1, "input")
    return opts, x, y


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Index of the most significant set bit plus one (0 for 0), exact for values below 2**53."""
    return np.frexp(x.astype(np.float64))[1].astype(np.int64)


def _isqrt_u64(x: np.ndarray) -> np.ndarray:
    """floor(sqrt(x)) for uint64 values, exact."""
    r = np.floor(np.sqrt(x.astype(np.float64))).astype(np.uint64)
    r = np.minimum(r, np.uint64(0xFFFFFFFF))
    for _ in range(2):
        too_big = r * r > x
        r = np.where(too_big, r - np.uint64(1), r)
    for _ in range(2):
        nxt = r + np.uint64(1)
        small = (r < np.uint64(0xFFFFFFFF)) & (nxt * nxt <= x)
        r = np.where(small, nxt, r)
    return r


def _sqrt_rounded(x: np.ndarray) -> np.ndarray:
    """TFLM's Sqrt64: the square root rounded to nearest, capped (Sqrt32's uint16 result below 2**32)."""
    x = x.astype(np.uint64)
    r = _isqrt_u64(x)
    cap = np.where(x >> np.uint64(32) == 0, np.uint64(0xFFFF), np.uint64(0xFFFFFFFF))
    up = (x - r * r > r) & (r != cap)
    return r + up.astype(np.uint64)


# --------------------------------------------------------------------------------------------- window
def prepare_window(node: Node):
    node.expect_counts(2, 1)
    opts = _options(node, {"shift": "int"})
    x, w, y = node.input(0), node.input(1), node.outputs[0]
    for t, what in ((x, "input"), (w, "weights"), (y, "output")):
        _expect_type(node, t, "INT16", what)
    node.expect(len(x.shape) >= 1, "input must have at least one dimension")
    _expect_rank(node, w, 1, "weights")
    size = w.shape[0]
    node.expect(size > 0 and x.size % size == 0,
                f"input size {x.size} is not a multiple of the window length {size}")
    shift = opts["shift"]
    node.expect(0 <= shift < 32, f"shift {shift} must be in 0..31")
    node.set_output_shape(0, x.shape)
    const_w = None if w.data is None else w.data.astype(np.int32).reshape(-1)

    def run(inputs, outputs):
        weights = const_w if const_w is not None else inputs[1].astype(np.int32).reshape(-1)
        v = (inputs[0].astype(np.int32).reshape(-1, size) * weights) >> shift
        np.clip(v, -32768, 32767, out=v)
        outputs[0].reshape(-1, size)[...] = v

    return run


# --------------------------------------------------------------------------------------------- fft auto scale
def _max_abs16(x: np.ndarray) -> int:
    """TFLM's MaxAbs16, including its int16 wrap when it meets -32768 (the running max becomes -32768)."""
    if not (x == -32768).any():
        return int(np.abs(x.astype(np.int32)).max(initial=0))
    best = 0
    for v in x.tolist():
        if v > best:
            best = v
        elif -v > best:
            best = ((-v + 32768) & 0xFFFF) - 32768
    return best


def prepare_fft_auto_scale(node: Node):
    node.expect_counts(1, 2)
    x, y, bits = node.input(0), node.outputs[0], node.outputs[1]
    _expect_type(node, x, "INT16", "input")
    _expect_type(node, y, "INT16", "output")
    _expect_type(node, bits, "INT32", "scale bits output")
    _expect_rank(node, x, 1, "input")
    node.set_output_shape(0, x.shape)
    node.set_output_shape(1, ())

    def run(inputs, outputs):
        v = inputs[0]
        m = _max_abs16(v)
        # MostSignificantBit32 of the max as uint32: 32 for 0 (GCC build) and for a negative (wrapped) max
        msb = 32 if m <= 0 else m.bit_length()
        scale = max(16 - msb - 1, 0)
        outputs[0][...] = wrap16(v.astype(np.int32) << scale)
        outputs[1][...] = scale

    return run


# --------------------------------------------------------------------------------------------- rfft (kissfft)
def _kiss_factors(n: int) -> list[tuple[int, int]]:
    """kissfft's kf_factor: (radix, remaining length) pairs, powers of 4 first, then 2, then odd primes."""
    out = []
    p = 4
    floor_sqrt = math.floor(math.sqrt(n))
    while True:
        while n % p:
            p = 2 if p == 4 else 3 if p == 2 else p + 2
            if p > floor_sqrt:
                p = n
        n //= p
        out.append((p, n))
        if n <= 1:
            return out


def _cexp16(phase: float) -> tuple[int, int]:
    return math.floor(0.5 + 32767 * math.cos(phase)), math.floor(0.5 + 32767 * math.sin(phase))


def _sround(x: np.ndarray) -> np.ndarray:
    """kissfft's sround for 16-bit: add half of 2**15, shift right by 15, store into int16."""
    return ((x + 16384) >> 15).astype(np.int16)


def _cmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C_MUL on stacked [real, imag] int16 values ``a`` and int32 twiddles ``b`` (axis 0 = real/imag).

    The int32 sums cannot overflow: |ar*br - ai*bi| + 2**14 < 2**31 for int16 inputs and |b| <= 32767."""
    a32 = a.astype(np.int32)
    p = a32 * b[0]
    q = a32 * b[1]
    return _sround(np.stack([p[0] - q[1], q[0] + p[1]]))


def _fixdiv(a: np.ndarray, p: int) -> np.ndarray:
    """C_FIXDIV: every component times 32767 // p, rounded (int16 in, int16 out)."""
    return _sround(a.astype(np.int32) * (32767 // p))


class _KissFftr:
    """kissfft's real forward FFT of length ``nfft`` (even), FIXED_POINT=16, as a sequence of numpy stages.

    Complex arrays are int16 with a leading [real, imag] axis, so that numpy's int16 wrap-around reproduces
    the C code's stores into int16; products and the kiss_fftr halving are done in int32 as C does."""

    def __init__(self, nfft: int):
        n = nfft // 2
        self.n = n
        factors = _kiss_factors(n)
        self.factors = factors
        tw = np.array([_cexp16(-2 * math.pi * i / n) for i in range(n)], np.int32).T  # (2, n)
        self.tw = tw
        sup = np.array([_cexp16(-math.pi * ((i + 1) / n + 0.5)) for i in range(n // 2)], np.int32).reshape(-1, 2)
        self.sup = sup.T
        # Leaf order of kf_work's recursion: output slot j takes input element perm[j].
        j = np.arange(n)
        perm = np.zeros(n, np.int64)
        stride = 1
        strides = []
        for p, m in factors:
            perm += ((j // m) % p) * stride
            strides.append(stride)
            stride *= p
        self.perm = perm
        # Stages, innermost first: (radix, m, fstride, twiddles (2, p, 1, m) -> for inputs q = 1..p-1). A level's
        # fstride is the product of the radices before it; butterfly u of input q uses twiddle q * u * fstride.
        self.stages = []
        for (p, m), fs in reversed(list(zip(factors, strides))):
            idx = (np.arange(1, p)[:, None] * np.arange(m)[None, :] * fs) % n
            t = tw[:, idx][:, None, :, :]  # (2, 1, p - 1, m): broadcasts over the fs groups
            self.stages.append((p, m, fs, t))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """x: int16 values (length 2n) -> (n + 1, 2) int16 [real, imag] bins."""
        n = self.n
        a = np.stack([x[0::2], x[1::2]])[:, self.perm]
        for p, m, fs, tw in self.stages:
            a = self._stage(a.reshape(2, fs, p, m), p, m, fs, tw).reshape(2, n)
        return self._split(a)

    def _stage(self, a, p, m, fs, tw):
        f = _fixdiv(a, p)
        s = _cmul(f[:, :, 1:], tw)  # (2, fs, p - 1, m)
        f0 = f[:, :, 0]
        out = np.empty_like(f)
        if p == 2:
            np.add(f0, s[:, :, 0], out=out[:, :, 0])
            np.subtract(f0, s[:, :, 0], out=out[:, :, 1])
            return out
        if p == 4:
            s0, s1, s2 = s[:, :, 0], s[:, :, 1], s[:, :, 2]
            s5 = f0 - s1
            f0 = f0 + s1
            s3 = s0 + s2
            s4 = s0 - s2
            np.add(f0, s3, out=out[:, :, 0])
            np.subtract(f0, s3, out=out[:, :, 2])
            np.add(s5[0], s4[1], out=out[0, :, 1])
            np.subtract(s5[1], s4[0], out=out[1, :, 1])
            np.subtract(s5[0], s4[1], out=out[0, :, 3])
            np.add(s5[1], s4[0], out=out[1, :, 3])
            return out
        if p == 3:
            e = int(self.tw[1, fs * m])
            s1, s2 = s[:, :, 0], s[:, :, 1]
            s3 = s1 + s2
            s0 = _sround((s1 - s2).astype(np.int32) * e)
            o1 = f0 - (s3 >> 1)
            np.add(f0, s3, out=out[:, :, 0])
            np.add(o1[0], s0[1], out=out[0, :, 2])
            np.subtract(o1[1], s0[0], out=out[1, :, 2])
            np.subtract(o1[0], s0[1], out=out[0, :, 1])
            np.add(o1[1], s0[0], out=out[1, :, 1])
            return out
        # p == 5
        ya = self.tw[:, fs * m].tolist()
        yb = self.tw[:, 2 * fs * m].tolist()
        s1, s2, s3, s4 = s[:, :, 0], s[:, :, 1], s[:, :, 2], s[:, :, 3]
        s7, s10 = s1 + s4, s1 - s4
        s8, s9 = s2 + s3, s2 - s3
        out[:, :, 0] = f0 + s7 + s8

        def sm(v, c):
            return _sround(v.astype(np.int32) * c)

        s5 = f0 + sm(s7, ya[0]) + sm(s8, yb[0])
        s6r = sm(s10[1], ya[1]) + sm(s9[1], yb[1])
        s6i = -sm(s10[0], ya[1]) - sm(s9[0], yb[1])
        s11 = f0 + sm(s7, yb[0]) + sm(s8, ya[0])
        s12r = -sm(s10[1], yb[1]) + sm(s9[1], ya[1])
        s12i = sm(s10[0], yb[1]) - sm(s9[0], ya[1])
        np.subtract(s5[0], s6r, out=out[0, :, 1])
        np.subtract(s5[1], s6i, out=out[1, :, 1])
        np.add(s5[0], s6r, out=out[0, :, 4])
        np.add(s5[1], s6i, out=out[1, :, 4])
        np.add(s11[0], s12r, out=out[0, :, 2])
        np.add(s11[1], s12i, out=out[1, :, 2])
        np.subtract(s11[0], s12r, out=out[0, :, 3])
        np.subtract(s11[1], s12i, out=out[1, :, 3])
        return out

    def _split(self, a):
        """kiss_fftr's untangling of the packed half-length complex FFT into n + 1 real-input bins."""
        n, h = self.n, self.n // 2
        out = np.zeros((n + 1, 2), np.int16)
        d = _fixdiv(a[:, 0], 2)
        out[0, 0] = d[0] + d[1]
        out[n, 0] = d[0] - d[1]
        if h:
            # bins k = 1..h pair with n - k = n - 1 down to n - h (the same bin when k = h: written last)
            mirror = a[:, n - h :][:, ::-1]
            fpk = _fixdiv(a[:, 1 : h + 1], 2)
            fpnk = _fixdiv(np.stack([mirror[0], -mirror[1]]), 2)
            f1 = (fpk + fpnk).astype(np.int32)
            tw = _cmul(fpk - fpnk, self.sup).astype(np.int32)
            out[1 : h + 1] = ((f1 + tw) >> 1).T
            hi = out[n - h : n][::-1]
            hi[:, 0] = (f1[0] - tw[0]) >> 1
            hi[:, 1] = (tw[1] - f1[1]) >> 1
        return out


def prepare_rfft(node: Node):
    node.expect_counts(1, 1)
    opts = _options(node, {"T": "int", "fft_length": "int"})
    x, y = node.input(0), node.outputs[0]
    t_name = schema.ENUMS["TensorType"][1].get(opts["T"], str(opts["T"]))
    if t_name not in ("INT16", "INT32", "FLOAT32"):
        raise node.error(f"custom option T = {t_name} is not a type the FFT takes")
    _expect_type(node, x, t_name, "input")
    if t_name != "INT16":
        raise node.unsupported(f"only the int16 fixed-point FFT is implemented (T={t_name})")
    _expect_type(node, y, "INT16", "output")
    node.expect(len(x.shape) >= 1, "input must have at least one dimension")
    n = opts["fft_length"]
    node.expect(n >= 4 and n % 2 == 0, f"fft_length {n} must be even and at least 4")
    factors = _kiss_factors(n // 2)
    if any(p not in (2, 3, 4, 5) for p, _ in factors):
        raise node.unsupported(f"fft_length {n}: half length has a prime factor above 5 (TFLM's kissfft build "
                               "cannot allocate its generic butterfly)")
    length = x.shape[-1]
    node.expect(0 < length <= n, f"input length {length} must be in 1..fft_length ({n})")
    bins = n // 2 + 1
    node.set_output_shape(0, tuple(x.shape[:-1]) + (2 * bins,))
    fft = _KissFftr(n)

    work = np.zeros(n, np.int16)

    def run(inputs, outputs):
        frames = inputs[0].reshape(-1, length)
        out = outputs[0].reshape(-1, bins, 2)
        for f in range(frames.shape[0]):
            work[:length] = frames[f]
            out[f] = fft(work)

    run.fft = fft
    return run


# --------------------------------------------------------------------------------------------- energy
def prepare_energy(node: Node):
    opts, x, _ = _vector_op(node, {"end_index": "int", "start_index": "int"}, "INT16", "UINT32")
    bins = x.shape[0] // 2
    start, end = opts["start_index"], opts["end_index"]
    node.expect(0 <= start and end <= bins, f"start_index {start} / end_index {end} outside the {bins} input bins")
    node.set_output_shape(0, (bins,))

    def run(inputs, outputs):
        c = inputs[0][: 2 * bins].astype(np.int64).reshape(bins, 2)[start:end]
        out = outputs[0]
        out[:start] = 0
        out[end:] = 0
        if end > start:
            out[start:end] = (c[:, 0] * c[:, 0] + c[:, 1] * c[:, 1]) & 0xFFFFFFFF

    return run


# --------------------------------------------------------------------------------------------- filter bank
def _filter_bank_matrix(node: Node, channels: int, n_in: int, weights, unweights, freq_starts, weight_starts,
                        widths) -> np.ndarray:
    """The accumulation of FilterbankAccumulateChannels as a (channels, n_in) uint64 matrix (mod 2**64)."""
    rows = channels + 1
    for arr, name in ((freq_starts, "channel frequency starts"), (weight_starts, "channel weight starts"),
                      (widths, "channel widths")):
        if arr.size < rows:
            raise node.error(f"{name} has {arr.size} entries, num_channels + 1 = {rows} needed")
    mat = np.zeros((rows, n_in), np.uint64)
    w = weights.astype(np.int64).view(np.uint64)
    uw = unweights.astype(np.int64).view(np.uint64)
    for c in range(rows):
        fs, ws, width = int(freq_starts[c]), int(weight_starts[c]), int(widths[c])
        if width <= 0:
            continue
        if fs < 0 or ws < 0 or fs + width > n_in or ws + width > min(w.size, uw.size):
            raise node.error(f"filter bank channel {c} reads past its inputs (frequency start {fs}, weight start "
                             f"{ws}, width {width}; {n_in} bins, {w.size} weights)")
        cols = np.arange(fs, fs + width)
        mat[c, cols] += w[ws : ws + width]
        if c + 1 < rows:
            mat[c + 1, cols] += uw[ws : ws + width]
    return mat[1:]


def prepare_filter_bank(node: Node):
    node.expect_counts(6, 1)
    opts = _options(node, {"num_channels": "int"})
    x, y = node.input(0), node.outputs[0]
    _expect_type(node, x, "UINT32", "input")
    _expect_rank(node, x, 1, "input")
    names = ("weights", "unweights", "channel frequency starts", "channel weight starts", "channel widths")
    for k, name in enumerate(names, start=1):
        t = node.input(k)
        _expect_type(node, t, "INT16", name)
        _expect_rank(node, t, 1, name)
    _expect_type(node, y, "UINT64", "output")
    channels = opts["num_channels"]
    node.expect(channels >= 1, f"num_channels {channels} must be positive")
    node.set_output_shape(0, (channels,))
    n_in = x.shape[0]
    params = [node.inputs[k].data for k in range(1, 6)]
    const_mat = None
    if all(p is not None for p in params):
        const_mat = _filter_bank_matrix(node, channels, n_in, *[p.reshape(-1) for p in params])

    def run(inputs, outputs):
        mat = const_mat
        if mat is None:
            mat = _filter_bank_matrix(node, channels, n_in, *[inputs[k].reshape(-1) for k in range(1, 6)])
        outputs[0][...] = mat @ inputs[0].astype(np.uint64)

    return run


def prepare_filter_bank_square_root(node: Node):
    node.expect_counts(2, 1)
    x, bits, y = node.input(0), node.input(1), node.outputs[0]
    _expect_type(node, x, "UINT64", "input")
    _expect_type(node, bits, "INT32", "scale bits")
    _expect_type(node, y, "UINT32", "output")
    _expect_rank(node, x, 1, "input")
    _expect_rank(node, bits, 0, "scale bits")
    node.set_output_shape(0, x.shape)

    def run(inputs, outputs):
        shift = int(inputs[1].reshape(-1)[0]) & 31  # a uint32 shift: the C code's shift count is 0..31
        outputs[0][...] = (_sqrt_rounded(inputs[0]) >> np.uint64(shift)) & _U32

    return run


# --------------------------------------------------------------------------------------------- spectral subtraction
def prepare_filter_bank_spectral_subtraction(node: Node):
    node.expect_counts(1, 2)
    keys = ["alternate_one_minus_smoothing", "alternate_smoothing", "clamping", "min_signal_remaining",
            "num_channels", "one_minus_smoothing", "smoothing", "smoothing_bits", "spectral_subtraction_bits"]
    opts = _options(node, {k: ("bool" if k == "clamping" else "int") for k in keys})
    x, y, noise_out = node.input(0), node.outputs[0], node.outputs[1]
    _expect_type(node, x, "UINT32", "input")
    _expect_type(node, y, "UINT32", "output")
    _expect_type(node, noise_out, "UINT32", "noise estimate output")
    _expect_rank(node, x, 1, "input")
    channels = opts["num_channels"]
    node.expect(1 <= channels <= x.shape[0], f"num_channels {channels} must be in 1..{x.shape[0]} (input length)")
    sbits, ssbits = opts["smoothing_bits"], opts["spectral_subtraction_bits"]
    node.expect(0 <= sbits < 32, f"smoothing_bits {sbits} must be in 0..31")
    node.expect(0 <= ssbits < 64, f"spectral_subtraction_bits {ssbits} must be in 0..63")
    node.set_output_shape(0, (channels,))
    node.set_output_shape(1, (channels,))

    def u32(v):
        return np.uint64(v & 0xFFFFFFFF)

    even = np.arange(channels) % 2 == 0
    smoothing = np.where(even, u32(opts["smoothing"]), u32(opts["alternate_smoothing"])).astype(np.uint64)
    one_minus = np.where(even, u32(opts["one_minus_smoothing"]),
                         u32(opts["alternate_one_minus_smoothing"])).astype(np.uint64)
    min_remaining = u32(opts["min_signal_remaining"])
    clamping = opts["clamping"]
    sb, ssb = np.uint64(sbits), np.uint64(ssbits)
    noise = np.zeros(channels, np.uint64)  # TFLM zeroes the estimate at prepare

    def run(inputs, outputs):
        signal = inputs[0][:channels].astype(np.uint64)
        scaled = (signal << sb) & _U32
        est = ((scaled * smoothing + noise * one_minus) >> ssb) & _U32
        capped = np.minimum(est, scaled)
        noise[...] = capped if clamping else est
        floor = ((signal * min_remaining) >> ssb) & _U32
        subtracted = (scaled - capped) >> sb
        outputs[0][...] = np.maximum(subtracted, floor)
        outputs[1][...] = noise

    def reset():
        noise[...] = 0

    run.reset = reset
    return run


# --------------------------------------------------------------------------------------------- PCAN
_PCAN_SNR_BITS = 12
_PCAN_OUTPUT_BITS = 6
_PCAN_LUT_LEN = 4 * 32 - 6 + 3  # the largest interval (32) reads lut[4 * 32 - 6 + 2]


def _pcan_gain(x: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """TFLM's WideDynamicFunction: int16 gain per uint32 noise estimate (int64 arrays in and out)."""
    small = x <= 2
    interval = _bit_length(np.maximum(x, 3))
    base = 4 * interval - 6
    frac = np.where(interval < 11, x << np.maximum(11 - interval, 0), x >> np.maximum(interval - 11, 0))
    frac = (frac & 0xFFFFFFFF) & 0x3FF
    res = (lut[base + 2] * frac) >> 5
    res = res + lut[base + 1] * 32
    res = res * frac
    res = (((res + (1 << 14)) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)  # int32 wrap of the sum
    res = (res >> 15) + lut[base]
    return np.where(small, lut[np.minimum(x, 2)], wrap16(res))


def prepare_pcan(node: Node):
    node.expect_counts(3, 1)
    opts = _options(node, {"snr_shift": "int"})
    x, noise, lut, y = node.input(0), node.input(1), node.input(2), node.outputs[0]
    _expect_type(node, x, "UINT32", "input")
    _expect_type(node, noise, "UINT32", "noise estimate")
    _expect_type(node, lut, "INT16", "gain LUT")
    _expect_type(node, y, "UINT32", "output")
    for t, what in ((x, "input"), (noise, "noise estimate"), (lut, "gain LUT")):
        _expect_rank(node, t, 1, what)
    channels = x.shape[0]
    node.expect(noise.shape[0] >= channels, f"noise estimate has {noise.shape[0]} entries, input {channels}")
    shift = opts["snr_shift"]
    node.expect(0 <= shift < 64, f"snr_shift {shift} must be in 0..63")
    node.set_output_shape(0, x.shape)

    def padded(values):
        # A short LUT would be read out of bounds by TFLM for large estimates; we read zeros there.
        out = np.zeros(max(_PCAN_LUT_LEN, values.size), np.int64)
        out[: values.size] = values.reshape(-1)
        return out

    const_lut = None if lut.data is None else padded(lut.data)
    sh = np.uint64(shift)

    def run(inputs, outputs):
        table = const_lut if const_lut is not None else padded(inputs[2])
        gain = _pcan_gain(inputs[1][:channels].astype(np.int64), table)
        gain_u = (gain & 0xFFFFFFFF).astype(np.uint64)  # int16 -> uint32 conversion
        snr = ((inputs[0].astype(np.uint64) * gain_u) >> sh) & _U32
        low = snr < np.uint64(2 << _PCAN_SNR_BITS)
        sq = ((snr * snr) & _U32) >> np.uint64(2 + 2 * _PCAN_SNR_BITS - _PCAN_OUTPUT_BITS)
        lin = (snr >> np.uint64(_PCAN_SNR_BITS - _PCAN_OUTPUT_BITS)) - np.uint64(1 << _PCAN_OUTPUT_BITS)
        outputs[0][...] = np.where(low, sq, lin & _U32)

    return run


# --------------------------------------------------------------------------------------------- log
_LOG_LUT = np.array([
    0, 224, 442, 654, 861, 1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797, 2944, 3087, 3224,
    3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633, 4714, 4791, 4864, 4934, 5001,
    5063, 5123, 5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507, 5533, 5557, 5578, 5595, 5610, 5622, 5631,
    5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568, 5547, 5524, 5498, 5470, 5439, 5406, 5370, 5332,
    5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944, 4885, 4825, 4762, 4697, 4630, 4561, 4490, 4416, 4341, 4264,
    4184, 4103, 4020, 3935, 3848, 3759, 3668, 3575, 3481, 3384, 3286, 3186, 3084, 2981, 2875, 2768, 2659, 2549,
    2437, 2323, 2207, 2090, 1971, 1851, 1729, 1605, 1480, 1353, 1224, 1094, 963, 830, 695, 559, 421, 282, 142,
    0, 0,
], np.int64)  # log2(1 + x) - x correction table of signal/src/log.cc, 128 segments, scale 2**16
_LOG_COEFF = 45426  # ln(2) * 2**16


def _log32(x: np.ndarray, out_scale: int) -> np.ndarray:
    """TFLM's Log32 for uint32 values >= 2 (int64 arrays): out_scale * ln(x), in uint32 arithmetic."""
    integer = _bit_length(x) - 1
    frac = x - (np.int64(1) << integer)
    frac = np.where(integer < 16, frac << np.maximum(16 - integer, 0), frac >> np.maximum(integer - 16, 0))
    seg = frac >> 9
    c0 = _LOG_LUT[seg]
    c1 = _LOG_LUT[seg + 1]
    rel = ((c1 - c0) * (frac - 512 * seg)) >> 16
    fraction = (frac + c0 + rel) & 0xFFFFFFFF
    log2 = ((integer << 16) + fraction) & 0xFFFFFFFF
    loge = ((_LOG_COEFF * log2 + 32768) >> 16) & 0xFFFFFFFF
    return ((((out_scale * loge) & 0xFFFFFFFF) + 32768) & 0xFFFFFFFF) >> 16


def prepare_filter_bank_log(node: Node):
    opts, x, _ = _vector_op(node, {"input_correction_bits": "int", "output_scale": "int"}, "UINT32", "INT16")
    bits = opts["input_correction_bits"]
    node.expect(0 <= bits < 32, f"input_correction_bits {bits} must be in 0..31")
    scale = opts["output_scale"] & 0xFFFFFFFF
    node.set_output_shape(0, x.shape)

    def run(inputs, outputs):
        scaled = (inputs[0].astype(np.int64) << bits) & 0xFFFFFFFF
        big = scaled > 1
        logs = _log32(np.where(big, scaled, 2), scale)
        outputs[0][...] = np.where(big, np.minimum(logs, 32767), 0)

    return run
