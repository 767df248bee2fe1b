"""Two-input elementwise ops of LiteRT beyond ADD / SUB / MUL / DIV: FLOOR_DIV, FLOOR_MOD, ATAN2, BITWISE_XOR,
RIGHT_SHIFT (numpy broadcasting), and ADD_N (n inputs of one shape).

As LiteRT's kernels (floor_div.cc, floor_mod.cc, atan2.cc, bitwise_xor.cc, right_shift.cc, add_n.cc), on the types
they take; integer tensors are plain integers (a quantized int8 / int16 is computed on its stored values, as
LiteRT does). Where LiteRT stops with "Division by 0" (an integer FLOOR_DIV / FLOOR_MOD by zero, or a float
FLOOR_DIV by zero) these kernels cannot fail at run time: an integer result is 0, a float one follows IEEE
(floor(x / 0) is +-inf or NaN).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels import fixedpoint as fp
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.runtime.kernels.quant import multiply_by_quantized_multiplier, quantize_multiplier

_INTS = ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32")

def _floor_div(a, b):
    if a.dtype.kind == "f":  # floor of the double quotient, rounded to float32 once
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.floor(a.astype(np.float64) / b.astype(np.float64)).astype(a.dtype)
    # integers: the double quotient of two int32s floors to the exact floor quotient (|a| < 2^53)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    q = np.floor_divide(a64, np.where(b64 == 0, 1, b64))
    return np.where(b64 == 0, 0, q).astype(a.dtype)  # wraps: int8 -128 // -1 is -128, as the C conversion


def _floor_mod(a, b):
    if a.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            m = np.fmod(a, b)  # exact, as fmodf
        return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m).astype(a.dtype)  # one float32 addition
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    if a.dtype == np.int64:  # no wider type: C's % with INT64_MIN % -1 taken as 0
        a64, b64 = a, b
    safe = np.where((b64 == 0) | (b64 == -1), 1, b64)  # x % -1 is 0 (INT_MIN % -1 traps in C)
    m = np.fmod(a64, safe)  # C's truncated remainder
    m = np.where((m != 0) & ((safe < 0) != (m < 0)), m + safe, m)
    return np.where(b64 == 0, 0, m).astype(a.dtype)


def _atan2(a, b):
    if a.dtype == np.float64:
        return np.arctan2(a, b)
    # float32 / float16: atan2 in double, rounded to float32 (within an ulp of atan2f), then to half
    return np.arctan2(a.astype(np.float64), b.astype(np.float64)).astype(np.float32).astype(a.dtype)


def _right_shift(a, b):
    bits = a.dtype.itemsize * 8
    shift = np.clip(b.astype(np.int64), 0, bits - 1)  # right_shift.cc clamps the amount to [0, bits - 1]
    return np.right_shift(a, shift.astype(a.dtype))  # arithmetic for signed types


def _binary_math(node: Node, fn, types: tuple[str, ...]):
    """Two inputs of one of LiteRT's kernel's tensor ``types``, broadcast; output of that type: ``fn(a, b)``."""
    node.expect_counts(2, 1)
    a, b, out = node.input(0), node.input(1), node.outputs[0]
    node.expect_types(a, types)
    node.expect_types(b, (a.type,), "input 1")
    node.expect_types(out, (a.type,), "output")
    try:
        shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise node.error(f"shapes {a.shape} and {b.shape} do not broadcast") from None
    node.set_output_shape(0, shape)

    def run(inputs, outputs):
        x1, x2 = np.broadcast_arrays(inputs[0], inputs[1])
        outputs[0][...] = fn(x1, x2)
    return run


def prepare_floor_div(node: Node):
    return _binary_math(node, _floor_div, ("FLOAT32", "INT8", "INT16", "INT32"))


def prepare_floor_mod(node: Node):
    return _binary_math(node, _floor_mod, ("FLOAT32", "INT8", "INT16", "INT32", "INT64"))


def prepare_atan2(node: Node):
    return _binary_math(node, _atan2, ("FLOAT32", "FLOAT16", "FLOAT64"))


def prepare_bitwise_xor(node: Node):
    return _binary_math(node, np.bitwise_xor, _INTS)


def prepare_right_shift(node: Node):
    return _binary_math(node, _right_shift, _INTS)


ADD_N_INTEGER_SHIFT = 20  # TFLM add_n.cc's kAddNIntegerShift: inputs are scaled up by 2^20 before rescaling


def prepare_add_n(node: Node):
    """ADD_N: the sum of n >= 2 inputs of one shape and type, element by element. FLOAT32 and INT32 as LiteRT:
    from 0 in input order (float32: each addition rounded, infinities kept as TFLM and this runtime's ADD keep
    them, where LiteRT clamps to +-FLT_MAX; int32 wraps). INT8 as TFLM (LiteRT has none): inputs of one scale and
    zero point, each (q - zp) * 2^20 halved by a Q31 multiplier and summed from the zero point's own term, then
    rescaled by 2 * scale / (2^20 * output scale) to the output's zero point, clamped."""
    node.expect(len(node.inputs) >= 2 and len(node.outputs) == 1, "expects 2 or more inputs and 1 output")
    first, out = node.input(0), node.outputs[0]
    node.expect_types(first, ("FLOAT32", "INT32", "INT8"))
    for i in range(1, len(node.inputs)):
        t = node.input(i)
        node.expect_types(t, (first.type,), f"input {i}")
        node.expect(tuple(t.shape) == tuple(first.shape), f"input {i} has shape {t.shape}, input 0 {first.shape}")
        if first.type == "INT8":
            node.expect(t.quantized and t.s == first.s and t.zp == first.zp,
                        f"input {i}: int8 inputs need one scale and zero point")
    node.expect_types(out, (first.type,), "output")
    node.set_output_shape(0, first.shape)
    if first.type == "INT8":
        return _add_n_int8(node, first, out)

    def run(inputs, outputs):
        acc = np.zeros(outputs[0].shape, outputs[0].dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            for x in inputs:
                acc += x
        outputs[0][...] = acc
    return run


def _add_n_int8(node: Node, first, out):
    node.expect_quantized(first, out)
    twice_input_scale = 2 * float(first.s)
    input_mult = quantize_multiplier(float(first.s) / twice_input_scale)
    real_output = twice_input_scale / ((1 << ADD_N_INTEGER_SHIFT) * float(out.s))
    node.expect(real_output < 1, f"output scale {out.s} is too small for input scale {first.s}")
    output_mult = quantize_multiplier(real_output)
    input_offset, output_offset = -first.zp, out.zp

    def scaled(q):  # MultiplyByQuantizedMultiplierSmallerThanOneExp((q + offset) << 20, input multiplier)
        return multiply_by_quantized_multiplier(fp.wrap32((q + input_offset) << ADD_N_INTEGER_SHIFT), *input_mult)

    def run(inputs, outputs):
        acc = scaled(np.zeros(outputs[0].shape, np.int64))  # the reference starts from the offset's own term
        for x in inputs:
            acc = fp.wrap32(acc + scaled(x.astype(np.int64)))
        raw = multiply_by_quantized_multiplier(acc, *output_mult) + output_offset
        outputs[0][...] = np.clip(raw, -128, 127)
    return run
