"""Reductions: MEAN, SUM, REDUCE_MAX and ARG_MAX, bit-exact with TFLite Micro.

Quantized MEAN / SUM follow TFLM's QuantizedMeanOrSum: the int32 (wrapping) sum of the raw values, minus
``zero_point * n``, scaled by ``input_scale / output_scale`` as a Q0.31 multiplier and shift. For MEAN the
division by the element count n is folded into that multiplier: the multiplier is shifted left by
``floor(log2 n)`` (at most 32, and never so far that the final shift drops below -31), integer-divided by n,
and the shift lowered by the same amount.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Eval, Node
from edge_sdk.runtime.kernels.quant import (
    TYPE_RANGES,
    clip_into,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)


def _wrap32(x):
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _reduce_axes(node: Node) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(resolved axes, output shape, output shape with kept dims) from the constant axis input."""
    node.expect_counts(2, 1)
    x = node.input(0)
    values = node.constant_values(1, "axis", ("INT32", "INT64"))
    rank = len(x.shape)
    axes: list[int] = []
    for v in values:
        d = int(v) + rank if int(v) < 0 else int(v)
        if not 0 <= d < max(rank, 1):
            raise node.error(f"axis {int(v)} is out of range for rank {rank}")
        if d not in axes and rank:
            axes.append(d)
    kept = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    dropped = tuple(n for d, n in enumerate(x.shape) if d not in axes)
    out_shape = kept if node.options.get("keep_dims", False) else dropped
    node.set_output_shape(0, out_shape)
    return tuple(sorted(axes)), out_shape, kept


def _check_same_type(node: Node) -> None:
    x, y = node.input(0), node.outputs[0]
    if x.type != y.type:
        raise node.unsupported(f"output type {y.type} differs from input type {x.type}")


def _prepare_mean_or_sum(node: Node, mean: bool) -> Eval:
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT8", "INT16"))
    _check_same_type(node)
    axes, out_shape, kept = _reduce_axes(node)
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64)) if axes else 1
    empty = x.size == 0

    if x.type == "FLOAT32":
        if empty:
            return lambda inputs, outputs: outputs[0].fill(0)

        def run_float(inputs, outputs):
            s = inputs[0].sum(axis=axes, dtype=np.float64)
            if mean:
                s = s / n
            outputs[0][...] = s.astype(np.float32).reshape(out_shape)

        return run_float

    if not (x.quantized and y.quantized):
        raise node.error(f"{x.type} {node.op} needs quantized input and output")
    if x.scale.size != 1 or y.scale.size != 1:
        raise node.unsupported("per-channel quantization on a reduction")
    multiplier, shift = quantize_multiplier(float(x.s) / float(y.s))
    if mean and n > 0:
        fold = min(n.bit_length() - 1, 32, 31 + shift)
        multiplier = (multiplier << fold) // n
        shift -= fold
    in_zp, out_zp = x.zp, y.zp
    lo, hi = TYPE_RANGES[x.type]
    offset = in_zp * n

    if empty:
        return lambda inputs, outputs: outputs[0].fill(0)

    def run_quant(inputs, outputs):
        s = inputs[0].sum(axis=axes, dtype=np.int64)
        s = _wrap32(_wrap32(s) - offset)
        v = multiply_by_quantized_multiplier(s, multiplier, shift) + out_zp
        clip_into(outputs[0], v.reshape(out_shape), lo, hi)

    return run_quant


def prepare_mean(node: Node) -> Eval:
    return _prepare_mean_or_sum(node, mean=True)


def prepare_sum(node: Node) -> Eval:
    return _prepare_mean_or_sum(node, mean=False)


def prepare_reduce_max(node: Node) -> Eval:
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT8", "INT16", "INT32"))
    _check_same_type(node)
    axes, out_shape, kept = _reduce_axes(node)
    if x.type in ("INT8", "INT16") and x.quantized:
        if not y.quantized or np.float32(x.s) != np.float32(y.s) or x.zp != y.zp:
            raise node.unsupported("input and output quantization differ (TFLM requires them equal)")
    if x.size == 0:
        lowest = -np.inf if x.type == "FLOAT32" else np.iinfo(x.dtype).min
        return lambda inputs, outputs: outputs[0].fill(lowest)
    if not axes:
        return lambda inputs, outputs: np.copyto(outputs[0], inputs[0].reshape(out_shape))

    def run(inputs, outputs):
        outputs[0][...] = inputs[0].max(axis=axes).reshape(out_shape)

    return run


def prepare_arg_max(node: Node) -> Eval:
    node.expect_counts(2, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "BOOL"))
    node.expect_types(y, ("INT32", "INT64"), "output")
    given = int(node.constant_scalar(1, "axis", ("INT32", "INT64")))
    rank = len(x.shape)
    axis = given + rank if given < 0 else given
    if not 0 <= axis < rank:
        raise node.error(f"axis {given} is out of range for rank {rank}")
    if x.shape[axis] == 0:
        raise node.error(f"cannot take ARG_MAX over an empty dimension {axis}")
    out_shape = x.shape[:axis] + x.shape[axis + 1 :]
    node.set_output_shape(0, out_shape)
    dtype = y.dtype

    if x.type != "FLOAT32":

        def run(inputs, outputs):
            outputs[0][...] = np.argmax(inputs[0], axis=axis).astype(dtype)

        return run

    def run_float(inputs, outputs):
        v = inputs[0]
        nan = np.isnan(v)
        if not nan.any():
            outputs[0][...] = np.argmax(v, axis=axis).astype(dtype)
            return
        # TFLM compares with a plain '>': a NaN never replaces the running maximum, and a leading NaN is
        # never replaced, so its index 0 stands.
        idx = np.argmax(np.where(nan, -np.inf, v), axis=axis)
        lead_nan = np.take(nan, 0, axis=axis)
        outputs[0][...] = np.where(lead_nan, 0, idx).astype(dtype)

    return run_float
