"""The arithmetic of quantization: scales and zero points for a range, values to integers and back, per-channel
weight scales. TFLite's conventions throughout: round half away from zero, real = scale * (q - zero_point)."""

from __future__ import annotations

import math

import numpy as np

from edge_sdk.model.types import Quantization
from edge_sdk.runtime.kernels.quant import tflite_round


def round_away(x):
    """Round half away from zero (TFLite's rounding)."""
    return tflite_round(x)


def limits(type: str) -> tuple[int, int]:
    """(qmin, qmax) of an activation type: INT8 or INT16."""
    return (-128, 127) if type == "INT8" else (-32768, 32767)


def affine(lo: float, hi: float, qmin: int, qmax: int, symmetric: bool) -> tuple[float, int]:
    """(scale, zero point) covering [lo, hi] widened to contain zero."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if symmetric:
        r = max(-lo, hi)
        if not r > 1e-12 or not math.isfinite(r):
            r = 1.0
        return float(np.float32(r / qmax)), 0
    if not hi - lo > 1e-12 or not math.isfinite(hi - lo):
        lo, hi = 0.0, 1.0
    scale = float(np.float32((hi - lo) / (qmax - qmin)))
    zp = int(np.clip(round_away(qmin - lo / scale), qmin, qmax))
    return scale, zp


def quantize_array(x: np.ndarray, scale, zp, qmin: int, qmax: int, dtype, axis: int | None = None) -> np.ndarray:
    """x as integers of ``dtype``; per channel along ``axis`` when ``scale`` has several entries."""
    s = np.asarray(scale, np.float64)
    z = np.asarray(zp, np.int64)
    if axis is not None and s.size > 1:
        shape = [1] * x.ndim
        shape[axis] = s.size
        s, z = s.reshape(shape), np.broadcast_to(z, s.shape).reshape(shape)
    return np.clip(round_away(x.astype(np.float64) / s) + z, qmin, qmax).astype(dtype)


def dequantize(x: np.ndarray, q: Quantization | None) -> np.ndarray:
    """x as float64 values (float tensors as they are)."""
    if q is None or x.dtype.kind == "f":
        return x.astype(np.float64)
    return (x.astype(np.float64) - float(q.zero_point[0])) * float(q.scale[0])


def weight_scales(w: np.ndarray, axis: int, bias: np.ndarray | None, input_scale: float,
                  bias_limit: int) -> np.ndarray:
    """Per-channel symmetric scales over [-127, 127]; all-zero channels borrow the others' mean; a scale
    is raised where the bias would not fit its integer type."""
    moved = np.moveaxis(w.astype(np.float64), axis, 0).reshape(w.shape[axis], -1)
    m = np.abs(moved).max(axis=1) if moved.size else np.zeros(w.shape[axis])
    scales = m / 127.0
    nonzero = scales > 0
    fill = float(scales[nonzero].mean()) if nonzero.any() else 1.0
    scales = np.where(nonzero, scales, fill)
    if bias is not None:
        need = np.abs(bias.astype(np.float64)) / (input_scale * bias_limit) * 1.01
        scales = np.maximum(scales, need)
    return scales.astype(np.float32)


def same_quant(a: Quantization | None, b: Quantization | None) -> bool:
    if a is None or b is None:
        return a is b
    return (np.array_equal(np.asarray(a.scale, np.float32), np.asarray(b.scale, np.float32))
            and np.array_equal(np.asarray(a.zero_point, np.int64), np.asarray(b.zero_point, np.int64)))
