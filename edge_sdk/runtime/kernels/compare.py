"""Comparisons, logical ops and selection: EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL,
LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT, SELECT, SELECT_V2.

Comparisons take two tensors of one type with numpy broadcasting and write a BOOL tensor:
  - FLOAT32, INT32, INT64 (and BOOL for EQUAL / NOT_EQUAL): the raw values are compared.
  - INT8 (TFLM's comparisons_common.cc, ComparisonWithScaling): each side is brought to a common real scale,
    ``MultiplyByQuantizedMultiplierSmallerThanOneExp((x - zero_point) << 8, M, shift)`` with (M, shift) from the
    input's own scale (QuantizeMultiplierSmallerThanOneExp: the scale must be below 1, TFLM aborts otherwise),
    and the rescaled values are compared.
  - INT16: both inputs must share one scale and zero point (or carry none); the raw values are then compared,
    which is what LiteRT does. TFLM's wheel leaves the int16 rescaling parameters at zero (its int16 GREATER
    answers false for every pair), so it is no reference here; int16 inputs of different quantization are
    refused rather than compared wrongly.
LOGICAL_AND / LOGICAL_OR broadcast two BOOL tensors; LOGICAL_NOT negates one.
SELECT_V2(condition, x, y) broadcasts all three (numpy rules) and picks x where the condition holds; SELECT (v1)
takes x and y of one shape and a condition of that shape or a 1-D condition over the first dimension. x, y and
the output share one type and, when quantized, one scale and zero point (the values are copied, never
requantized, as in TFLM and LiteRT; different quantization would be silently wrong, so it is refused).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.elementwise import binary_inputs, broadcast_shape
from edge_sdk.runtime.kernels.lut import INT8_VALUES
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.runtime.kernels.quant import multiply_by_quantized_multiplier, quantize_multiplier

INT8_LEFT_SHIFT = 8  # comparisons_common.cc kLeftShift

_ORDERED_TYPES = ("FLOAT32", "INT8", "INT16", "INT32", "INT64")
_EQUALITY_TYPES = _ORDERED_TYPES + ("BOOL",)
_SELECT_TYPES = ("FLOAT32", "INT8", "INT16", "INT32", "INT64", "BOOL")


def int8_rescale_params(scale: float, zero_point: int, where: str = "") -> tuple[int, int, int]:
    """(offset, multiplier, shift) of one int8 comparison input: QuantizeMultiplierSmallerThanOneExp(scale).

    ValueError when the scale is not in (0, 1) (TFLM checks that and aborts)."""
    scale = float(np.float32(scale))
    if not 0.0 < scale < 1.0:
        raise ValueError(f"{where}int8 comparison input scale {scale:g} is not below 1 (TFLM's rule needs a scale in (0, 1))")
    multiplier, shift = quantize_multiplier(scale)
    return -int(zero_point), multiplier, shift


def int8_rescaled_table(scale: float, zero_point: int, where: str = "") -> np.ndarray:
    """The rescaled value of every int8 input (index = the uint8 view of the value), as int64."""
    offset, multiplier, shift = int8_rescale_params(scale, zero_point, where)
    return multiply_by_quantized_multiplier((INT8_VALUES + offset) << INT8_LEFT_SHIFT, multiplier, shift)


def _compare(node: Node, fn, types: tuple[str, ...]):
    """A comparison: ``fn`` (a numpy comparison) on two inputs of one of ``types``, broadcast, into BOOL."""
    a, b, out = binary_inputs(node, types, ("BOOL",))
    if a.type == "INT8" and (a.quantized or b.quantized):
        for t in (a, b):
            if not t.quantized:
                raise node.error(f"int8 input '{t.name}' needs quantization parameters (the other input has them)")
        try:
            ta = int8_rescaled_table(a.s, a.zp, f"input '{a.name}': ")
            tb = int8_rescaled_table(b.s, b.zp, f"input '{b.name}': ")
        except ValueError as exc:
            raise node.unsupported(str(exc)) from None

        def run(inputs, outputs):
            fn(ta[inputs[0].view(np.uint8)], tb[inputs[1].view(np.uint8)], out=outputs[0])
        return run
    if a.type == "INT16" and (a.quantized or b.quantized):
        same = a.quantized and b.quantized and np.float32(a.s) == np.float32(b.s) and a.zp == b.zp
        if not same:
            raise node.unsupported(
                f"int16 inputs '{a.name}' and '{b.name}' have different quantization; int16 comparisons need "
                "one scale and zero point on both inputs")

    def run(inputs, outputs):
        fn(inputs[0], inputs[1], out=outputs[0])
    return run


def prepare_equal(node: Node):
    return _compare(node, np.equal, _EQUALITY_TYPES)


def prepare_not_equal(node: Node):
    return _compare(node, np.not_equal, _EQUALITY_TYPES)


def prepare_less(node: Node):
    return _compare(node, np.less, _ORDERED_TYPES)


def prepare_less_equal(node: Node):
    return _compare(node, np.less_equal, _ORDERED_TYPES)


def prepare_greater(node: Node):
    return _compare(node, np.greater, _ORDERED_TYPES)


def prepare_greater_equal(node: Node):
    return _compare(node, np.greater_equal, _ORDERED_TYPES)


# ---------------------------------------------------------------- logical

def _logical(node: Node, arity: int, fn):
    """``fn`` (a numpy logical function) on ``arity`` BOOL inputs, broadcast."""
    node.expect_counts(arity, 1)
    ins, out = [node.input(i) for i in range(arity)], node.outputs[0]
    for t in ins:
        node.expect_types(t, ("BOOL",))
    node.expect_types(out, ("BOOL",), "output")
    node.set_output_shape(0, broadcast_shape(node, *(t.shape for t in ins)))

    def run(inputs, outputs):
        fn(*inputs, out=outputs[0])
    return run


def prepare_logical_and(node: Node):
    return _logical(node, 2, np.logical_and)


def prepare_logical_or(node: Node):
    return _logical(node, 2, np.logical_or)


def prepare_logical_not(node: Node):
    return _logical(node, 1, np.logical_not)


# ---------------------------------------------------------------- SELECT / SELECT_V2

def _select_values(node: Node):
    node.expect_counts(3, 1)
    cond, x, y, out = node.input(0), node.input(1), node.input(2), node.outputs[0]
    node.expect_types(cond, ("BOOL",), "condition")
    node.expect_types(x, _SELECT_TYPES)
    if y.type != x.type:
        raise node.unsupported(f"value inputs have different types {x.type} and {y.type}")
    node.expect_types(out, (x.type,), "output")
    if x.quantized or y.quantized or out.quantized:
        quants = [(t.name, t.quantized and float(np.float32(t.s)), t.quantized and t.zp) for t in (x, y, out)]
        if len({q[1:] for q in quants}) != 1:
            listed = ", ".join(f"'{n}' ({'scale %g zero point %d' % (s, z) if s is not False else 'none'})"
                               for n, s, z in quants)
            raise node.unsupported(f"the values and the output need one scale and zero point (they are copied, "
                                   f"not requantized): {listed}")
    return cond, x, y


def prepare_select_v2(node: Node):
    cond, x, y = _select_values(node)
    node.set_output_shape(0, broadcast_shape(node, cond.shape, x.shape, y.shape))

    def run(inputs, outputs):
        outputs[0][...] = np.where(inputs[0], inputs[1], inputs[2])
    return run


def prepare_select(node: Node):
    cond, x, y = _select_values(node)
    if x.shape != y.shape:
        raise node.error(f"SELECT needs x and y of one shape, got {x.shape} and {y.shape}")
    if cond.shape == x.shape:
        node.set_output_shape(0, x.shape)

        def run(inputs, outputs):
            outputs[0][...] = np.where(inputs[0], inputs[1], inputs[2])
        return run
    if len(cond.shape) == 1 and len(x.shape) >= 1 and cond.shape[0] == x.shape[0]:
        node.set_output_shape(0, x.shape)
        expand = (slice(None),) + (None,) * (len(x.shape) - 1)

        def run(inputs, outputs):
            outputs[0][...] = np.where(inputs[0][expand], inputs[1], inputs[2])
        return run
    raise node.error(f"SELECT condition shape {cond.shape} is neither the values' shape {x.shape} nor "
                     f"({x.shape[0] if x.shape else 1},)")
