"""REDUCE_WINDOW (the builtin, ReduceWindowOptions; not STABLEHLO_REDUCE_WINDOW) as LiteRT's reduce_window kernel.

Inputs: input (rank 1..6), init_value (a scalar of the input's type), window_shape, window_strides and
window_dilations (constant INT64 [rank] each); output of the input's type. No padding and no base dilation (that
is the StableHLO op). Output dimension i: (in_i - ((window_i - 1) * dilation_i + 1)) / stride_i + 1, 0 when the
dilated window does not fit. Each output cell starts at init_value and folds in its window's elements in row-major
window order, one at a time: ADD, MUL (integers wrap), MINIMUM (a <= b ? a : b), MAXIMUM (a >= b ? a : b), ALL and
ANY (logical: 1 / 0 in the type). Types: FLOAT32, FLOAT64, INT8, UINT8, INT16, INT32, INT64, BOOL (LiteRT's list;
integer values are folded as stored, quantized or not).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from edge_sdk.model.schema import ENUMS
from edge_sdk.runtime.kernels.node import Eval, Node

WINDOW_TYPES = ("FLOAT32", "FLOAT64", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL")
MAX_RANK = 6


def _fold_add(acc, v):
    return acc + v


def _fold_mul(acc, v):
    return acc * v


def _fold_min(acc, v):
    return np.where(acc <= v, acc, v)


def _fold_max(acc, v):
    return np.where(acc >= v, acc, v)


def _fold_all(acc, v):
    return np.logical_and(acc, v).astype(acc.dtype)


def _fold_any(acc, v):
    return np.logical_or(acc, v).astype(acc.dtype)


# ReduceWindowFunction code (schema.fbs: 1 ADD, 2 MUL, 3 MINIMUM, 4 MAXIMUM, 5 ALL, 6 ANY) -> one fold step
FOLDS = {1: _fold_add, 2: _fold_mul, 3: _fold_min, 4: _fold_max, 5: _fold_all, 6: _fold_any}
FUNCTION_CODES = {name: code for code, name in ENUMS["ReduceWindowFunction"][1].items()}


def prepare_reduce_window(node: Node) -> Eval:
    node.expect_counts(5, 1)
    x, init, y = node.input(0), node.input(1), node.outputs[0]
    node.expect_types(x, WINDOW_TYPES)
    node.expect_types(init, (x.type,), "init_value")
    node.expect_types(y, (x.type,), "output")
    rank = len(x.shape)
    node.expect(1 <= rank <= MAX_RANK, f"input rank {rank} is outside 1..{MAX_RANK}")
    node.expect(init.size == 1, f"init_value must hold one value, has shape {init.shape}")
    window, strides, dilations = (
        [int(v) for v in node.constant_values(i, what, ("INT64",))]
        for i, what in ((2, "window_shape"), (3, "window_strides"), (4, "window_dilations")))
    for what, values in (("window_shape", window), ("window_strides", strides), ("window_dilations", dilations)):
        node.expect(len(values) == rank and all(v > 0 for v in values),
                    f"{what} {values} must hold {rank} positive values")
    function = node.options.get("reduce_function", "UNSUPPORTED")
    fold = FOLDS.get(FUNCTION_CODES.get(function, 0))
    if fold is None:
        raise node.unsupported(f"reduce_function {function} is not supported")
    spans = [(k - 1) * dl + 1 for k, dl in zip(window, dilations)]
    out_shape = [(n - sp) // st + 1 if n >= sp else 0 for n, sp, st in zip(x.shape, spans, strides)]
    node.set_output_shape(0, out_shape)
    offsets = list(np.ndindex(*window))  # row-major window order: the reference's fold order

    def run(inputs, outputs):
        v = np.ascontiguousarray(inputs[0])
        if v.size == 0 or outputs[0].size == 0:
            return
        el = v.strides
        cells = as_strided(v, shape=(*out_shape, *window),
                           strides=(*(e * s for e, s in zip(el, strides)), *(e * d for e, d in zip(el, dilations))),
                           writeable=False)
        acc = np.full(out_shape, np.asarray(inputs[1]).reshape(-1)[0], v.dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            for at in offsets:
                acc = fold(acc, cells[(Ellipsis, *at)]).astype(v.dtype)
        outputs[0][...] = acc

    return run
