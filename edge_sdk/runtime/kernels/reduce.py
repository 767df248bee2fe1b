"""Reductions: MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL, ARG_MAX and ARG_MIN, bit-exact
with TFLite Micro where it has the op, else with LiteRT's reference kernels.

Quantized MEAN / SUM follow TFLM's QuantizedMeanOrSum: the int32 (wrapping) sum of the raw values, minus
``zero_point * n``, scaled by ``input_scale / output_scale`` as a Q0.31 multiplier and shift. For MEAN the
division by the element count n is folded into that multiplier: the multiplier is shifted left by
``floor(log2 n)`` (at most 32, and never so far that the final shift drops below -31), integer-divided by n,
and the shift lowered by the same amount.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Eval, Node, TensorInfo
from edge_sdk.runtime.kernels.quant import (
    TYPE_RANGES,
    clip_into,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
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
    node.expect_types(x, ("FLOAT32", "INT8", "INT16", "INT32", "INT64") + (() if mean else ("BOOL",)))
    _check_same_type(node)
    axes, out_shape, kept = _reduce_axes(node)
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64)) if axes else 1
    empty = x.size == 0

    if x.type in ("INT32", "INT64", "BOOL"):
        # LiteRT's reference ReduceSumImpl / Mean (TFLM has none): SUM wraps in the type (BOOL: any value true),
        # MEAN sums in int64 and divides by n toward zero (C++'s integer division)
        if empty:
            return lambda inputs, outputs: outputs[0].fill(0)

        def run_integer(inputs, outputs):
            g = _grouped(inputs[0], axes)
            if x.type == "BOOL":
                outputs[0][...] = g.any(axis=1).reshape(out_shape)
                return
            s = g.sum(axis=1, dtype=np.int64)  # int64 wraps as LiteRT's int64 sum does
            if mean:
                q = s // n  # floor, then toward zero where it rounded a negative inexact quotient down
                s = q + ((q * n != s) & (s < 0))
            outputs[0][...] = s.astype(outputs[0].dtype).reshape(out_shape)  # int32: wraps to 32 bits

        return run_integer

    if x.type == "FLOAT32":
        if empty:
            return lambda inputs, outputs: outputs[0].fill(0)

        def run_float(inputs, outputs):
            # LiteRT's reference kernels: each output's sum in float32 from 0, one rounding per element in the
            # input's row-major order (a sequential cumsum, not numpy's pairwise sum), divided by n in float32
            s = np.cumsum(_grouped(inputs[0], axes), axis=1, dtype=np.float32)[:, -1]
            if mean:
                s = s / np.float32(n)
            outputs[0][...] = s.reshape(out_shape)

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
    # UINT8 / INT64 / BOOL (any) as LiteRT's ReduceGeneric takes them
    node.expect_types(x, ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL"))
    _check_same_type(node)
    axes, out_shape, kept = _reduce_axes(node)
    if x.type in ("INT8", "UINT8", "INT16") and x.quantized:
        if not y.quantized or np.float32(x.s) != np.float32(y.s) or x.zp != y.zp:
            raise node.unsupported("input and output quantization differ (TFLM requires them equal)")
    if x.size == 0:
        lowest = -np.inf if x.type == "FLOAT32" else (False if x.type == "BOOL" else np.iinfo(x.dtype).min)
        return lambda inputs, outputs: outputs[0].fill(lowest)
    if not axes:
        return lambda inputs, outputs: np.copyto(outputs[0], inputs[0].reshape(out_shape))

    def run(inputs, outputs):
        outputs[0][...] = inputs[0].max(axis=axes).reshape(out_shape)

    return run


def prepare_arg_max(node: Node) -> Eval:
    return _prepare_arg(node, smallest=False)


def prepare_arg_min(node: Node) -> Eval:
    return _prepare_arg(node, smallest=True)


def _prepare_arg(node: Node, smallest: bool) -> Eval:
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
        raise node.error(f"cannot take {node.op} over an empty dimension {axis}")
    out_shape = x.shape[:axis] + x.shape[axis + 1 :]
    node.set_output_shape(0, out_shape)
    dtype = y.dtype
    arg = np.argmin if smallest else np.argmax
    never = np.inf if smallest else -np.inf

    if x.type != "FLOAT32":

        def run(inputs, outputs):
            outputs[0][...] = arg(inputs[0], axis=axis).astype(dtype)

        return run

    def run_float(inputs, outputs):
        v = inputs[0]
        nan = np.isnan(v)
        if not nan.any():
            outputs[0][...] = arg(v, axis=axis).astype(dtype)
            return
        # TFLM compares with a plain '>' ('<' for ARG_MIN): a NaN never replaces the running extreme, and a
        # leading NaN is never replaced, so its index 0 stands.
        idx = arg(np.where(nan, never, v), axis=axis)
        lead_nan = np.take(nan, 0, axis=axis)
        outputs[0][...] = np.where(lead_nan, 0, idx).astype(dtype)

    return run_float


# ---- REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL and ARG_MIN (LiteRT reduce.cc / arg_min_max.cc; TFLM has
# REDUCE_MIN float32 / int8 and ARG_MIN). Every one folds the elements of an output's reduced block in the input's
# row-major order, from an initial value, as the reference kernels' ReduceGeneric does: the order matters for a
# float32 product, and a NaN or +-inf meets the initial value (REDUCE_MIN's numeric maximum) in the comparison.

# the types LiteRT's EvalGeneric takes for every reduction (UINT8 not quantized for REDUCE_PROD); REDUCE_ANY /
# REDUCE_ALL take BOOL only
_GENERIC_TYPES = ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL")


def _grouped(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """x as (output elements, reduced block): kept dimensions first, reduced ones after, each kind in input order,
    so row k of the result holds output element k's block in the order the reference kernels fold it."""
    kept = [d for d in range(x.ndim) if d not in axes]
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64)) if axes else 1
    return np.transpose(x, kept + list(axes)).reshape(-1, n)


def _prepare_fold(node: Node, types: tuple[str, ...]) -> tuple[TensorInfo, TensorInfo, tuple[int, ...],
                                                                tuple[int, ...]]:
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, types)
    _check_same_type(node)
    axes, out_shape, _kept = _reduce_axes(node)
    node.expect_types(node.input(1), ("INT32",), "axis")  # LiteRT and TFLM take INT32 axes only
    if x.type == "INT16" and any(t.zp != 0 for t in (x, y) if t.quantized):
        raise node.unsupported("INT16 needs zero points 0 (LiteRT's reduce.cc)")
    return x, y, axes, out_shape


def prepare_reduce_min(node: Node) -> Eval:
    x, y, axes, out_shape = _prepare_fold(node, _GENERIC_TYPES)
    if x.type in ("INT8", "UINT8", "INT16") and (x.quantized or y.quantized):
        if not (x.quantized and y.quantized) or np.float32(x.s) != np.float32(y.s) or x.zp != y.zp:
            raise node.unsupported("input and output quantization differ (LiteRT and TFLM require them equal)")
    # the initial value: the type's numeric maximum (float32: FLT_MAX, not +inf); '(in < current) ? in : current'
    # never takes a NaN and keeps FLT_MAX over +inf
    top = np.finfo(np.float32).max if x.type == "FLOAT32" else (True if x.type == "BOOL" else np.iinfo(x.dtype).max)
    if x.size == 0:
        return lambda inputs, outputs: outputs[0].fill(top)

    if x.type == "FLOAT32":

        def run_float(inputs, outputs):
            with np.errstate(invalid="ignore"):
                m = np.fmin.reduce(_grouped(inputs[0], axes), axis=1)  # NaN only where the whole block is NaN
            outputs[0][...] = np.fmin(m, top).reshape(out_shape)

        return run_float

    def run(inputs, outputs):
        outputs[0][...] = _grouped(inputs[0], axes).min(axis=1).reshape(out_shape)

    return run


def prepare_reduce_prod(node: Node) -> Eval:
    """float32 / integer / bool: the wrapping product in the input's order. Quantized int8 / int16 (LiteRT's
    QuantizedReduceProd): the first value minus its zero point, then each step ``acc * (q - zp)`` in int64
    requantized by ``input_scale / output_scale ** (1 / n)`` (MultiplyByQuantizedMultiplier's int64 form), a last
    requantization by the same factor, plus the output zero point, clamped: n factors in all."""
    x, y, axes, out_shape = _prepare_fold(node, _GENERIC_TYPES)
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64)) if axes else 1
    if x.type == "UINT8" and x.quantized:
        raise node.unsupported("a quantized UINT8 product (LiteRT takes quantized INT8 and INT16 only)")
    if x.size == 0:
        return lambda inputs, outputs: outputs[0].fill(1)
    if x.type in ("INT8", "INT16") and x.quantized:
        if not y.quantized:
            raise node.error("a quantized REDUCE_PROD needs a quantized output")
        if x.scale.size != 1 or y.scale.size != 1:
            raise node.unsupported("per-channel quantization on a reduction")
        multiplier, shift = quantize_multiplier(float(x.s) / float(np.float64(y.s) ** (1.0 / n)))
        in_zp, out_zp = x.zp, y.zp
        lo, hi = TYPE_RANGES[x.type]

        def run_quant(inputs, outputs):
            g = _grouped(inputs[0], axes).astype(np.int64) - in_zp
            acc = g[:, 0]
            for j in range(1, n):
                acc = multiply_by_quantized_multiplier_int64(acc * g[:, j], multiplier, shift)
            v = multiply_by_quantized_multiplier_int64(acc, multiplier, shift) + out_zp
            clip_into(outputs[0], v.reshape(out_shape), lo, hi)

        return run_quant

    dtype = x.dtype

    def run(inputs, outputs):
        g = _grouped(inputs[0], axes)
        acc = np.ones(g.shape[0], dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            for j in range(g.shape[1]):  # one factor at a time: numpy's own product may reassociate
                acc = acc * g[:, j] if dtype != np.bool_ else acc & g[:, j]
        outputs[0][...] = acc.reshape(out_shape)

    return run


def prepare_reduce_any(node: Node) -> Eval:
    x, y, axes, out_shape = _prepare_fold(node, ("BOOL",))
    if x.size == 0:
        return lambda inputs, outputs: outputs[0].fill(False)

    def run(inputs, outputs):
        outputs[0][...] = _grouped(inputs[0], axes).any(axis=1).reshape(out_shape)

    return run


def prepare_reduce_all(node: Node) -> Eval:
    x, y, axes, out_shape = _prepare_fold(node, ("BOOL",))
    if x.size == 0:
        return lambda inputs, outputs: outputs[0].fill(True)

    def run(inputs, outputs):
        outputs[0][...] = _grouped(inputs[0], axes).all(axis=1).reshape(out_shape)

    return run
