"""Type conversion: QUANTIZE, DEQUANTIZE, CAST, as TFLite Micro's quantize.cc, dequantize.cc and cast.cc do them.

QUANTIZE from float is TFLite's AffineQuantize (float32 division, round half away from zero, clamp); between
integer types it is Requantize (MultiplyByQuantizedMultiplier of the input minus its zero point). Float
inputs too large for int32 convert as x86 does (to INT32_MIN) before the clamp, as the TFLM build we compare
with does. DEQUANTIZE computes scale * (q - zero_point) in double and rounds to float32; float16 constants
widen to float32 (LiteRT does this; TFLM has no float16 DEQUANTIZE). CAST between integers is C's
static_cast (wraps modulo 2^bits); float to integer truncates toward zero and saturates, NaN (either sign) to the
type's maximum, as LiteRT 2.3 does (measured; TFLM gives 0 for NaN).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.model.types import numpy_dtype
from edge_sdk.runtime.kernels.lut import DOMAINS
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.runtime.kernels.quant import (
    TYPE_RANGES,
    clip_into,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    tflite_round,
)

_QUANT_OUT = ("INT8", "INT16", "INT32", "UINT8")
_REQUANT_PAIRS = {
    ("INT16", "INT8"), ("INT8", "INT8"), ("INT8", "UINT8"), ("UINT8", "INT8"), ("INT8", "INT16"),
    ("INT8", "INT32"), ("INT16", "INT16"), ("INT16", "INT32"), ("INT32", "INT8"), ("INT32", "INT16"),
}
_INT32_MIN = -(1 << 31)


def _float_to_int32_x86(v: np.ndarray) -> np.ndarray:
    """static_cast<int32_t>(float) as x86 cvttss2si does it: truncate; NaN and out-of-range give INT32_MIN."""
    v64 = v.astype(np.float64)
    ok = np.isfinite(v64) & (v64 > -2147483649.0) & (v64 < 2147483648.0)
    return np.where(ok, np.trunc(np.where(ok, v64, 0.0)), _INT32_MIN).astype(np.int64)




def prepare_quantize(node: Node):
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.set_output_shape(0, x.shape)
    node.expect_types(out, _QUANT_OUT, "output")
    if not out.quantized:
        raise node.error("QUANTIZE output needs quantization parameters")
    if out.scale.size != 1:
        raise node.unsupported("per-channel QUANTIZE output (TFLM quantizes per tensor)")
    qmin, qmax = TYPE_RANGES[out.type]
    out_zp = out.zp
    if x.type == "FLOAT32":
        if out.type not in ("INT8", "INT16", "UINT8"):
            raise node.unsupported(f"float32 -> {out.type}")
        scale = np.float32(out.s)

        def run(inputs, outputs):
            with np.errstate(over="ignore", invalid="ignore"):  # x / a tiny scale past float32: inf, as in C
                v = tflite_round(inputs[0] / scale).astype(inputs[0].dtype)
            q = _float_to_int32_x86(v) + out_zp
            q = ((q + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)  # int32 wrap of the zero-point add
            clip_into(outputs[0], q, qmin, qmax)
        return run
    if (x.type, out.type) not in _REQUANT_PAIRS:
        raise node.unsupported(f"{x.type} -> {out.type}")
    if not x.quantized:
        raise node.error("QUANTIZE input needs quantization parameters")
    mult = quantize_multiplier(float(x.s) / float(out.s))
    in_zp = x.zp
    if x.type in ("INT8", "UINT8"):
        values = DOMAINS[x.type][0]
        table = np.clip(multiply_by_quantized_multiplier(values - in_zp, *mult) + out_zp, qmin, qmax)
        table = table.astype(out.dtype)

        def run8(inputs, outputs):
            outputs[0][...] = table[inputs[0].view(np.uint8)]
        return run8

    def run(inputs, outputs):
        v = inputs[0].astype(np.int64) - in_zp
        v = ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
        clip_into(outputs[0], multiply_by_quantized_multiplier(v, *mult) + out_zp, qmin, qmax)
    return run


def prepare_dequantize(node: Node):
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.set_output_shape(0, x.shape)
    node.expect_types(out, ("FLOAT32",), "output")
    if x.type == "FLOAT16":
        def run16(inputs, outputs):
            outputs[0][...] = inputs[0].astype(np.float32)
        return run16
    node.expect_types(x, ("INT8", "INT16", "UINT8"))
    if not x.quantized:
        raise node.error("DEQUANTIZE input needs quantization parameters")
    if x.scale.size == 1:
        scale = float(x.s)
        zp = x.zp

        def run(inputs, outputs):
            outputs[0][...] = (scale * (inputs[0].astype(np.float64) - zp)).astype(np.float32)
        return run
    # per-channel (LiteRT's PerChannelDequantize: float32 scale times the int32 difference, in float32)
    axis = x.quantized_dimension
    node.expect(0 <= axis < len(x.shape) and x.shape[axis] == x.scale.size,
                f"per-channel quantization on dimension {axis} does not match shape {x.shape}")
    shape = [1] * len(x.shape)
    shape[axis] = x.scale.size
    scales = x.scale.astype(np.float32).reshape(shape)
    zps = x.zero_point.astype(np.int64).reshape(shape)

    def runpc(inputs, outputs):
        outputs[0][...] = scales * (inputs[0].astype(np.int64) - zps).astype(np.float32)
    return runpc


_CAST_TYPES = ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "UINT64", "FLOAT32", "FLOAT64",
               "FLOAT16", "BOOL")


def prepare_cast(node: Node):
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, _CAST_TYPES)
    node.expect_types(out, _CAST_TYPES, "output")
    node.set_output_shape(0, x.shape)
    src_float = x.type in ("FLOAT32", "FLOAT64", "FLOAT16")
    dst = out.type
    if dst == "BOOL":
        def run_bool(inputs, outputs):
            outputs[0][...] = inputs[0] != 0
        return run_bool
    if src_float and dst not in ("FLOAT32", "FLOAT64", "FLOAT16"):
        return _float_to_integer(numpy_dtype(dst))

    def run(inputs, outputs):
        outputs[0][...] = inputs[0].astype(outputs[0].dtype)
    return run


def _float_to_integer(out_dtype):
    """CAST float -> integer as LiteRT: truncate toward zero, saturate to the type's range, NaN to its maximum.

    The bounds are exact in float64 below 64 bits; INT64 / UINT64's maximum rounds up to 2^63 / 2^64, so values
    at or past it are set apart instead of clipped (a clip to 2^63 would wrap to the minimum)."""
    info = np.iinfo(out_dtype)
    lo, hi = float(info.min), float(info.max)
    wide = info.bits == 64

    def run_f2i(inputs, outputs):
        v = inputs[0].astype(np.float64)
        top = np.isnan(v) | (v >= hi) if wide else np.isnan(v)
        v[top] = 0.0 if wide else hi
        clip_into(outputs[0], np.trunc(v), lo, hi)
        if wide:
            outputs[0][top] = info.max
    return run_f2i
