"""Fixed-point arithmetic exactly as TFLite Micro's reference kernels do it (vectorized over numpy int64).

TFLM's integer kernels scale accumulators by a real multiplier M expressed as an int32 Q0.31 mantissa and a
power-of-two shift (``quantize_multiplier``), and apply it with gemmlowp's saturating rounding doubling high
multiply followed by a rounding right shift (``multiply_by_quantized_multiplier``). Bit-exactness with TFLM
comes from doing these steps in the same order with the same rounding; int64 numpy arrays hold the int32
intermediates without overflow. ``Requantizer`` is the same multiply prepared once for a layer's per-channel
multipliers, in fewer whole-array passes (the hot path of the convolution kernels).
"""

from __future__ import annotations

import math

import numpy as np

from edge_sdk.runtime import op_table

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

TYPE_RANGES = {
    "INT8": (-128, 127),
    "UINT8": (0, 255),
    "INT16": (-32768, 32767),
    "INT32": (INT32_MIN, INT32_MAX),
}


def tflite_round(x):
    """std::round, exactly: halves away from zero (numpy's np.round rounds halves to even).

    Not floor(|x| + 0.5): that sum rounds in floating point (0.49999997f + 0.5f == 1.0f), while std::round
    of 0.49999997f is 0. x - trunc(x) is exact, so comparing it with 0.5 is too. Keeps x's float dtype.
    """
    x = np.asarray(x)
    whole = np.trunc(x)
    with np.errstate(invalid="ignore"):  # inf - inf: infinities come back as they went in
        return whole + np.sign(x) * (np.abs(x - whole) >= 0.5)


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """Real multiplier -> (Q0.31 mantissa, shift) with real ~= mantissa * 2**(shift - 31)."""
    if real_multiplier == 0.0:
        return 0, 0
    q, shift = math.frexp(real_multiplier)
    q_fixed = int(tflite_round(q * (1 << 31)))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    return q_fixed, shift


def quantize_multipliers(real_multipliers) -> tuple[np.ndarray, np.ndarray]:
    """Vector form of ``quantize_multiplier``: (mantissas, shifts) as int64 arrays."""
    pairs = [quantize_multiplier(float(m)) for m in np.ravel(real_multipliers)]
    return (np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64))


def _wrap_int32(x: np.ndarray) -> np.ndarray:
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _truncating_div_pow2(x: np.ndarray, bits: int) -> np.ndarray:
    """C integer division of int64 by 2**bits (rounds toward zero)."""
    q = x >> bits
    return q + ((x < 0) & ((x & ((1 << bits) - 1)) != 0))


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul on int32 values held in int64 arrays."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    result = _truncating_div_pow2(ab + nudge, 31)
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, result)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT: x / 2**exponent, rounding halves away from zero."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x, multiplier, shift) -> np.ndarray:
    """TFLM MultiplyByQuantizedMultiplier(int32 x, int32 multiplier, int shift).

    ``multiplier`` and ``shift`` may be scalars or arrays broadcasting against ``x`` (per-channel: the
    channel axis last).
    """
    x = np.asarray(x, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(_wrap_int32(x << left), multiplier), right)


def multiply_by_quantized_multiplier_int64(x, multiplier, shift) -> np.ndarray:
    """TFLM MultiplyByQuantizedMultiplier(int64 x, int32 multiplier, int shift), used by 16x8 kernels.

    The multiplier is reduced to 16 bits (rounded), then applied with one rounding shift.
    """
    x = np.asarray(x, dtype=np.int64)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    reduced = np.where(multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, 0x7FFF)
    total_shift = 15 - shift
    x = x * reduced + (np.int64(1) << (total_shift - 1))
    return _wrap_int32(x >> total_shift)


class Requantizer:
    """MultiplyByQuantizedMultiplier for int64 arrays whose last axis is the channel axis.

    ``wide=False``: TFLM's int32 overload (gemmlowp doubling high multiply, then a rounding right shift).
    Its doubling high multiply equals ``(a * b + 2**30) >> 31`` for every pair but INT32_MIN * INT32_MIN,
    which cannot occur since multipliers are non-negative. ``wide=True``: the int64 overload of the 16x8
    kernels (multiplier reduced to 16 bits, one rounding shift, result truncated to int32).
    ``wrap``: the accumulator may leave int32 and must wrap as the C int32 accumulator does.
    """

    def __init__(self, multipliers, shifts, wide: bool = False, wrap: bool = False):
        m = np.asarray(multipliers, dtype=np.int64).ravel()
        s = np.asarray(shifts, dtype=np.int64).ravel()
        self.wide = wide
        self.wrap = wrap
        if wide:
            reduced = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
            total = 15 - s
            self.mult = self._compact(reduced)
            self.total = self._compact(total)
            self.round = self._compact(np.int64(1) << (total - 1))
            return
        left = np.maximum(s, 0)
        right = np.maximum(-s, 0)
        self.shift_left = bool(left.any())
        self.left = self._compact(left)
        self.mult = self._compact(m)
        self.right = self._compact(right)
        self.half = self._compact((np.int64(1) << right) >> 1)
        self.all_right = bool((right > 0).all())
        self.neg_adjust = (right > 0).astype(np.int64)

    @staticmethod
    def _compact(a: np.ndarray):
        """A scalar when all channels agree (faster broadcasting), else the per-channel vector."""
        return int(a[0]) if a.size == 1 or (a == a[0]).all() else a

    def folded(self, bias: np.ndarray):
        """A per-channel term merging the bias with the rounding constant: (x + b) * m + r = x * m + (b * m + r).

        None when the accumulator must first be wrapped or shifted as int32 (then add the bias to x).
        """
        bias = np.asarray(bias, dtype=np.int64)
        if self.wide:
            return bias * self.mult + self.round
        if self.shift_left or self.wrap:
            return None
        return bias * self.mult + (1 << 30)

    def __call__(self, x: np.ndarray, term=None) -> np.ndarray:
        """x: int64 accumulators (a fresh array this may modify); ``term``: from ``folded`` when a bias is
        folded in. Returns int64 (int32 when wide)."""
        if self.wide:
            x *= self.mult
            x += self.round if term is None else term
            x >>= self.total
            return x.astype(np.int32)
        if term is not None:
            x *= self.mult
            x += term
        else:
            if self.shift_left:
                x <<= self.left
                x = x.astype(np.int32).astype(np.int64)
            elif self.wrap:
                x = x.astype(np.int32).astype(np.int64)
            x *= self.mult
            x += 1 << 30
        x >>= 31
        neg = x < 0
        if self.all_right:
            x -= neg
        else:
            x -= neg * self.neg_adjust
        x += self.half
        x >>= self.right
        return x


# The clip ufunc itself: np.clip's Python wrapper (bounds checks through np.iinfo) costs several times the
# clip of a small layer's output; the ufunc runs the same loop, so the values are the same.
try:
    from numpy._core.umath import clip as _clip_ufunc
except ImportError:  # pragma: no cover - other numpy layouts
    _clip_ufunc = np.clip


def clip_into(out: np.ndarray, x, lo, hi) -> None:
    """``out[...] = np.clip(x, lo, hi)`` without np.clip's wrapper; ``out`` may be ``x`` (in place).

    x must already have out's shape (or broadcast to it as a ufunc operand). The clipped values are cast to
    out's dtype as the assignment would (they lie in its range); lo and hi must fit x's dtype.
    """
    _clip_ufunc(x, lo, hi, out=out, casting="unsafe")


def quantize_value(f: float, scale: float, zero_point: int) -> int:
    """zero_point + round(f / scale) with the division in float32, as TFLM's activation-range helper does."""
    return int(zero_point) + int(tflite_round(np.float32(f) / np.float32(scale)))


def activation_range(activation: str | None) -> tuple[float, float] | None:
    """The float [lo, hi] a fused activation clamps to: everything for NONE (or absent), the op table row's
    ``activation_range`` of the op named like it (RELU, RELU6, RELU_N1_TO_1); None for one our kernels do not
    apply (TANH, SIGN_BIT)."""
    if activation in (None, "NONE"):
        return -math.inf, math.inf
    return op_table.row(activation).activation_range


def activation_range_quantized(activation: str, type_name: str, scale: float, zero_point: int) -> tuple[int, int]:
    """TFLM CalculateActivationRangeQuantized: the clamp [min, max] of a fused activation on quantized output
    (each finite bound quantized, then held to the type's range)."""
    qmin, qmax = TYPE_RANGES[type_name]
    bounds = activation_range(activation)
    if bounds is None:
        raise ValueError(f"fused activation {activation} has no quantized range")
    lo, hi = bounds
    return (qmin if lo == -math.inf else max(qmin, quantize_value(lo, scale, zero_point)),
            qmax if hi == math.inf else min(qmax, quantize_value(hi, scale, zero_point)))


def activation_range_float(activation: str) -> tuple[float, float]:
    """The clamp of a fused activation on float output."""
    bounds = activation_range(activation)
    if bounds is None:
        raise ValueError(f"fused activation {activation} has no float range")
    return bounds


def check_activation(node) -> str:
    """The node's fused_activation_function ("NONE" when absent), or its UnsupportedOpError for any other."""
    act = node.options.get("fused_activation_function", "NONE") or "NONE"
    if activation_range(act) is None:
        raise node.unsupported(f"fused activation {act} is not supported")
    return act


def float_clamp(activation: str) -> tuple[np.float32, np.float32] | None:
    """The float32 (lo, hi) clamp of a fused activation on float output; None for NONE (no clamp)."""
    if activation in (None, "NONE"):
        return None
    lo, hi = activation_range_float(activation)
    return np.float32(lo), np.float32(hi)


def float_activation(node, name: str):
    """A float fused activation by its options name, as a function of float32 arrays (None for NONE); ``node``
    names an unknown one."""
    if name in (None, "NONE"):
        return None
    if name == "RELU":
        return lambda v: np.maximum(v, np.float32(0))
    if name == "RELU_N1_TO_1":
        return lambda v: np.clip(v, np.float32(-1), np.float32(1))
    if name == "RELU6":
        return lambda v: np.clip(v, np.float32(0), np.float32(6))
    if name == "TANH":
        return np.tanh
    if name == "SIGN_BIT":
        return lambda v: np.signbit(v).astype(np.float32)
    if name == "SIGMOID":
        return lambda v: np.float32(1) / (np.float32(1) + np.exp(-v))
    raise node.unsupported(f"fused activation {name}")


def batch_quantize_floats(v: np.ndarray, asymmetric: bool):
    """LiteRT's BatchQuantizeFloats of float32 rows (B, n): (int8 values as int64, float32 scale per row, int64 zero
    point per row). Symmetric: scale max|v| / 127, values round(v * 127 / max|v|) in [-127, 127]. Asymmetric: the
    range [min(0, min v), max(0, max v)] (its span in float32) over [-128, 127] in double, the nudged zero point, values
    round(zp + v / scale) in [-128, 127]. An all-zero row: values 0, scale 1, zero point 0. Non-finite values give
    what the casts give (LiteRT's are undefined there), without numpy warnings."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        return _batch_quantize_floats(v, asymmetric)


def _batch_quantize_floats(v: np.ndarray, asymmetric: bool):
    lo, hi = v.min(axis=1), v.max(axis=1)
    if not asymmetric:
        span = np.maximum(np.abs(lo), np.abs(hi))
        empty = span == 0
        safe = np.where(empty, np.float32(1), span)
        scale = np.where(empty, np.float32(1), safe / np.float32(127)).astype(np.float32)
        q = tflite_round(v * (np.float32(127) / safe)[:, None])
        q = np.clip(np.where(empty[:, None], 0, q), -127, 127).astype(np.int64)
        return q, scale, np.zeros(v.shape[0], np.int64)
    rmin32, rmax32 = np.minimum(lo, np.float32(0)), np.maximum(hi, np.float32(0))
    rmin, rmax = rmin32.astype(np.float64), rmax32.astype(np.float64)
    empty = rmin == rmax
    # the span in float32, then divided in double: what LiteRT's build computes (ai-edge-litert 2.3.0, measured
    # on 2,000 rows; the span in double differs by an ulp of the scale on about one row in five)
    dscale = np.where(empty, 1.0, (rmax32 - rmin32).astype(np.float64) / 255.0)
    from_min, from_max = -128.0 - rmin / dscale, 127.0 - rmax / dscale
    zp_d = np.where(128.0 + np.abs(rmin / dscale) < 127.0 + np.abs(rmax / dscale), from_min, from_max)
    zp = np.where(zp_d <= -128.0, -128, np.where(zp_d >= 127.0, 127, tflite_round(zp_d))).astype(np.int64)
    zp = np.where(empty, 0, zp)
    scale = np.where(empty, np.float32(1), dscale.astype(np.float32)).astype(np.float32)
    inv = (np.float32(1) / scale).astype(np.float32)
    q = tflite_round(zp.astype(np.float32)[:, None] + v * inv[:, None])
    q = np.clip(np.where(empty[:, None], 0, q), -128, 127).astype(np.int64)
    return q, scale, zp
