"""Element-wise arithmetic: ADD, SUB, MUL, DIV, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, RSQRT.

Arithmetic, parameters and rounding follow TFLite Micro's kernels (add.cc, sub.cc, mul.cc, div.cc,
squared_difference.cc, maximum_minimum.cc, elementwise.cc) and the reference headers they call. Broadcasting
is numpy's (trailing dimensions aligned, size-1 dimensions stretched), which is what TFLite's broadcast loops
do. int8 binary ops run through a 256x256 table that prepare fills by evaluating the exact integer formula
over every input pair; int16 ops evaluate the formula vectorized at run time.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels import fixedpoint as fp
from edge_sdk.runtime.kernels.lut import DOMAINS, INT8_VALUES, int8_pair_table_run
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.runtime.kernels.quant import (
    INT32_MAX,
    TYPE_RANGES,
    activation_range_float,
    activation_range_quantized,
    check_activation,
    clip_into,
    float_clamp,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)

MAX_BROADCAST_RANK = 6


# ---------------------------------------------------------------- shared prepare helpers

def broadcast_shape(node: Node, *shapes) -> tuple[int, ...]:
    """numpy broadcast of the shapes (up to rank MAX_BROADCAST_RANK, as the C kernels), or a ModelError /
    UnsupportedOpError naming them."""
    shapes = [tuple(s) for s in shapes]
    if all(s == shapes[0] for s in shapes):
        return shapes[0]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise node.error(f"input shapes {', '.join(map(str, shapes))} do not broadcast") from None
    if len(shape) > MAX_BROADCAST_RANK:
        raise node.unsupported(f"broadcasting beyond rank {MAX_BROADCAST_RANK} (shapes {', '.join(map(str, shapes))})")
    return tuple(int(d) for d in shape)


def binary_inputs(node: Node, allowed: tuple[str, ...], output_types: tuple[str, ...] | None = None):
    """A two-input op with numpy broadcasting (arithmetic, comparisons): two inputs of one type in ``allowed``,
    one output (of a type in ``output_types`` when given), the output shape set to the broadcast shape.
    Returns (a, b, out)."""
    node.expect_counts(2, 1)
    a, b, out = node.input(0), node.input(1), node.outputs[0]
    node.expect_types(a, allowed)
    if b.type != a.type:
        raise node.unsupported(f"inputs have different types {a.type} and {b.type}")
    if output_types is not None:
        node.expect_types(out, output_types, "output")
    node.set_output_shape(0, broadcast_shape(node, a.shape, b.shape))
    return a, b, out


def _int_clamp(act: str, top: int):
    """CalculateActivationRange<int>: the float bounds of the activation as integers, an unbounded top as ``top``;
    None for NONE (no clamp)."""
    if act == "NONE":
        return None
    lo, hi = activation_range_float(act)
    return int(lo), top if hi == np.inf else int(hi)


def _int32_clamp(act: str):
    return _int_clamp(act, INT32_MAX)


def _int64_clamp(act: str):
    # LiteRT's int64 ADD / SUB / MUL (TFLM has none): CalculateActivationRange<int64_t>
    return _int_clamp(act, int(np.iinfo(np.int64).max))


def _run_direct(op, clamp, store_clamped):
    """Eval of an op numpy computes directly on the inputs; ``clamp``: None or (lo, hi), applied as the result is
    stored by ``store_clamped(out, y, lo, hi)``."""
    if clamp is None:
        def run(inputs, outputs):
            outputs[0][...] = op(inputs[0], inputs[1])
    else:
        lo, hi = clamp

        def run(inputs, outputs):
            store_clamped(outputs[0], op(inputs[0], inputs[1]), lo, hi)
    return run


def _max_min_into(out, x, lo, hi) -> None:
    # Float clamps stay maximum-then-minimum: on a zero of either sign they keep other bits than the clip ufunc.
    np.minimum(np.maximum(x, lo), hi, out=out)


def _run_float(op, clamp):
    return _run_direct(op, clamp, _max_min_into)


def _run_int(op, clamp):
    """int32/int64 ops in the tensor's own width: numpy wraps on overflow as the C code does in practice."""
    return _run_direct(op, clamp, clip_into)


def _run_quantized(out_type: str, f, lo: int, hi: int):
    """f: the int64 formula of a quantized op before its output clamp [lo, hi]. int8: a table of the clamped
    values; int16: the formula at run time, clamped as it is stored."""
    if out_type == "INT8":
        return int8_pair_table_run(lambda x1, x2: np.clip(f(x1, x2), lo, hi))

    def run(inputs, outputs):
        clip_into(outputs[0], f(inputs[0].astype(np.int64), inputs[1].astype(np.int64)), lo, hi)
    return run


# ---------------------------------------------------------------- ADD / SUB

def _rescaled_inputs(a, b, left_shift: int):
    """The input side of quantized ADD / SUB / SQUARED_DIFFERENCE (TFLM's CalculateOpDataAdd / Sub and
    squared_difference.cc): each input less its zero point, shifted left by ``left_shift`` and rescaled to twice
    the larger input scale. Returns (twice_max, rescale) with rescale(x1, x2) -> (s1, s2), int64.

    The ratios are formed in double: the checkout's sub_common.cc forms them in float32, but the seanet SUB
    goldens (TFLM's own) and the tflite-micro wheel agree only with the double arithmetic ADD uses.
    """
    twice_max = 2.0 * float(max(np.float32(a.s), np.float32(b.s)))
    q1 = quantize_multiplier(float(a.s) / twice_max)
    q2 = quantize_multiplier(float(b.s) / twice_max)
    off1, off2 = -a.zp, -b.zp

    def rescale(x1, x2):
        s1 = multiply_by_quantized_multiplier(fp.wrap32((x1 + off1) << left_shift), *q1)
        s2 = multiply_by_quantized_multiplier(fp.wrap32((x2 + off2) << left_shift), *q2)
        return s1, s2
    return twice_max, rescale


def _add_sub_quantized(node: Node, sign: int, a, b, out):
    left_shift = 15 if out.type == "INT16" else 20
    twice_max, rescale = _rescaled_inputs(a, b, left_shift)
    qo = quantize_multiplier(twice_max / ((1 << left_shift) * float(out.s)))
    lo, hi = activation_range_quantized(check_activation(node), out.type, out.s, out.zp)
    off_out = out.zp

    def f(x1, x2):
        s1, s2 = rescale(x1, x2)
        return multiply_by_quantized_multiplier(fp.wrap32(s1 + sign * s2), *qo) + off_out
    return _run_quantized(out.type, f, lo, hi)


def _prepare_add_sub(node: Node, sign: int):
    a, b, out = binary_inputs(node, ("FLOAT32", "INT8", "INT16", "INT32", "INT64"))
    if out.type != a.type:
        raise node.unsupported(f"output type {out.type} differs from input type {a.type}")
    act = check_activation(node)
    if a.type == "FLOAT32":
        return _run_float(np.add if sign > 0 else np.subtract, float_clamp(act))
    if a.type == "INT32":
        # TFLM's int32 ADD ignores the fused activation; SUB applies it.
        return _run_int(np.add if sign > 0 else np.subtract, None if sign > 0 else _int32_clamp(act))
    if a.type == "INT64":
        # TFLM has no int64 ADD/SUB; LiteRT's (add.cc / sub.cc) wraps and clamps to the activation's int64 range
        return _run_int(np.add if sign > 0 else np.subtract, _int64_clamp(act))
    node.expect_quantized(a, b, out)
    return _add_sub_quantized(node, sign, a, b, out)


def prepare_add(node: Node):
    return _prepare_add_sub(node, +1)


def prepare_sub(node: Node):
    return _prepare_add_sub(node, -1)


# ---------------------------------------------------------------- MUL

def prepare_mul(node: Node):
    a, b, out = binary_inputs(node, ("FLOAT32", "INT8", "INT16", "INT32", "INT64"))
    act = check_activation(node)
    if a.type == "FLOAT32":
        node.expect_types(out, ("FLOAT32",), "output")
        return _run_float(np.multiply, float_clamp(act))
    if a.type == "INT64":  # TFLM has none; LiteRT's mul.cc: the wrapping product, clamped to the activation
        node.expect_types(out, ("INT64",), "output")
        return _run_int(np.multiply, _int64_clamp(act))
    if a.type == "INT32":
        node.expect_types(out, ("INT32",), "output")
        return _run_int(np.multiply, _int32_clamp(act))
    if out.type != a.type:
        raise node.unsupported(f"output type {out.type} with {a.type} inputs")
    node.expect_quantized(a, b, out)
    if a.type == "INT16" and (a.zp or b.zp or out.zp):
        raise node.error("int16 MUL needs zero points of 0")
    lo, hi = activation_range_quantized(act, out.type, out.s, out.zp)
    mult = quantize_multiplier(float(a.s) * float(b.s) / float(out.s))
    off1, off2, off_out = -a.zp, -b.zp, out.zp

    def f(x1, x2):
        return multiply_by_quantized_multiplier(fp.wrap32((x1 + off1) * (x2 + off2)), *mult) + off_out
    return _run_quantized(out.type, f, lo, hi)


# ---------------------------------------------------------------- DIV

def _int_div_trunc(x, y):
    """C integer division (toward zero); a zero divisor (undefined in C) yields 0."""
    x64 = x.astype(np.int64)
    y64 = y.astype(np.int64)
    safe = np.where(y64 == 0, 1, y64)
    q = np.abs(x64) // np.abs(safe)
    q = np.where((x64 < 0) != (safe < 0), -q, q)
    return fp.wrap32(np.where(y64 == 0, 0, q)).astype(x.dtype)


def _rounding_divide_by_pot_c(x, exponent):
    """gemmlowp RoundingDivideByPOT on int32 as compiled for x86 when the exponent reaches 32 or more.

    Quotients of values outside the int8 range (an input minus its zero point beyond +-127) give DIV shifts
    past 31: the mask then truncates to all ones and the arithmetic shift count wraps modulo 32.
    """
    exponent = np.asarray(exponent, dtype=np.int64)
    big = exponent >= 32
    normal = fp.rdivpot(x, np.where(big, 0, exponent))
    odd = (x >> np.where(big, exponent - 32, 0)) + (x > np.where(x < 0, 0, -1))
    return np.where(big, odd, normal)


def _float_div(x, y):
    # LiteRT's float DIV divides in IEEE arithmetic: 0/0 is NaN, x/0 is +-inf, and nothing is printed
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(x, y)


def prepare_div(node: Node):
    a, b, out = binary_inputs(node, ("FLOAT32", "INT8", "INT16", "INT32"))
    if out.type != a.type:
        raise node.unsupported(f"output type {out.type} differs from input type {a.type}")
    act = check_activation(node)
    if a.type == "FLOAT32":
        return _run_float(_float_div, float_clamp(act))
    if a.type == "INT32":
        return _run_int(_int_div_trunc, _int32_clamp(act))
    node.expect_quantized(a, b, out)
    lo, hi = activation_range_quantized(act, out.type, out.s, out.zp)
    # The checkout's div.cc forms this ratio in float32; the TFLM build we compare with (the tflite-micro wheel)
    # forms it in double, and exhaustive tests agree only with double.
    multiplier, shift = quantize_multiplier(float(a.s) / (float(b.s) * float(out.s)))
    off1, off2, off_out = -a.zp, -b.zp, out.zp
    # int16 (LiteRT's reference Div<int16_t>, the same template as int8; TFLM has no int16 DIV): any zero points

    def f(x1, x2):
        v1 = x1 + off1
        v2 = x2 + off2
        neg = v2 < 0
        v1 = np.where(neg, -v1, v1)
        v2 = np.where(neg, -v2, v2)
        inv, recip_shift = fp.get_reciprocal(v2, 31)
        headroom = fp.count_leading_sign_bits32(v1)
        unscaled = fp.srdhm(fp.wrap32(v1 << headroom), inv)
        total_shift = shift - recip_shift - headroom
        return _rounding_divide_by_pot_c(fp.srdhm(unscaled, multiplier), -total_shift) + off_out
    return _run_quantized(out.type, f, lo, hi)


# ---------------------------------------------------------------- SQUARED_DIFFERENCE

def prepare_squared_difference(node: Node):
    a, b, out = binary_inputs(node, ("FLOAT32", "INT8", "INT16", "INT32"))
    if out.type != a.type:
        raise node.unsupported(f"output type {out.type} differs from input type {a.type}")
    if a.type == "FLOAT32":
        return _run_float(lambda x, y: np.square(x - y), None)
    if a.type == "INT32":
        return _run_int(lambda x, y: (x - y) * (x - y), None)
    node.expect_quantized(a, b, out)
    qmin, qmax = TYPE_RANGES[a.type]
    if a.type == "INT8":
        for t in (a, b, out):
            node.expect(qmin <= t.zp <= qmax, f"zero point {t.zp} of '{t.name}' is outside the int8 range")
        left_shift = 7
    else:
        node.expect(a.zp == 0 and b.zp == 0 and out.zp == 0, "int16 SQUARED_DIFFERENCE needs zero points of 0")
        left_shift = 0
    twice_max, rescale = _rescaled_inputs(a, b, left_shift)
    qo = quantize_multiplier(twice_max * twice_max / float(np.float32(1 << (2 * left_shift)) * np.float32(out.s)))
    off_out = out.zp

    def f(x1, x2):
        s1, s2 = rescale(x1, x2)
        d = fp.wrap32(s1 - s2)
        return multiply_by_quantized_multiplier(fp.wrap32(d * d), *qo) + off_out
    return _run_quantized(a.type, f, qmin, qmax)


# ---------------------------------------------------------------- MAXIMUM / MINIMUM

_MAXMIN_TYPES = ("FLOAT32", "INT8", "INT16", "INT32", "INT64")


def _prepare_max_min(node: Node, picks_first):
    """maximum_minimum.cc: ``picks_first(x, y) ? x : y`` element by element (NaN: y, as the C ternary)."""
    a, b, out = binary_inputs(node, _MAXMIN_TYPES)
    node.expect_types(out, (a.type,), "output")

    def run(inputs, outputs):
        x, y = inputs[0], inputs[1]
        outputs[0][...] = np.where(picks_first(x, y), x, y)
    return run


def prepare_maximum(node: Node):
    return _prepare_max_min(node, np.greater)


def prepare_minimum(node: Node):
    return _prepare_max_min(node, np.less)


# ---------------------------------------------------------------- RSQRT

def rsqrt_table(type_: str, input_zp: int, output_zp: int, multiplier: int, shift: int) -> np.ndarray:
    """TFLM's RsqrtEvalQuantized for every INT8 / INT16 input (index = the unsigned view): 1 << 20 times the inverse
    square root of (x - input zero point), requantized with a 20-bit right shift, plus the output zero point,
    clamped; x at the zero point gives the type's max; invalid inputs (< zero point) map as 0 would."""
    x, (lo, hi) = DOMAINS[type_][0], TYPE_RANGES[type_]
    value = x - input_zp
    k_shift = 20
    inv, inv_shift = fp.get_inv_sqrt_quantized_multiplier_exp(np.maximum(value, 0), -1)
    data = multiply_by_quantized_multiplier(np.ones_like(value), inv, inv_shift + k_shift)
    raw = multiply_by_quantized_multiplier(data, multiplier, shift - k_shift) + output_zp
    out = np.clip(raw, lo, hi)
    return np.where(value == 0, hi, out).astype(DOMAINS[type_][2])


def prepare_rsqrt(node: Node):
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT8", "INT16"))
    node.expect_types(out, (x.type,), "output")
    node.set_output_shape(0, x.shape)
    if x.type == "FLOAT32":
        one = np.float32(1)

        def run(inputs, outputs):
            with np.errstate(invalid="ignore", divide="ignore"):  # NaN below 0, inf at 0, as LiteRT: no warning
                outputs[0][...] = one / np.sqrt(inputs[0])
        return run
    node.expect_quantized(x, out)
    scale = 1.0 / float(np.float32(np.sqrt(np.float32(x.s))) * np.float32(out.s))
    if x.type == "INT16":  # TFLM (and LiteRT) refuse other zero points at prepare
        if x.zp or out.zp:
            raise node.error(f"INT16 RSQRT needs zero points of 0 (input {x.zp}, output {out.zp})")
        # the TFLM wheel's int16 multiplier: sqrt and product in double (float32 ones: 2-8 of 32768 outputs off
        # by 1 at ties, measured over 3 scale pairs)
        scale = 1.0 / (np.sqrt(float(np.float32(x.s))) * float(np.float32(out.s)))
    multiplier, shift = quantize_multiplier(scale)
    table = rsqrt_table(x.type, x.zp, out.zp, multiplier, shift)
    unsigned = DOMAINS[x.type][1]  # the table's index: the input's unsigned view
    zp, lowest = x.zp, TYPE_RANGES[x.type][0]
    where = node.where()

    def run(inputs, outputs):
        v = inputs[0]
        if zp > lowest and (v < zp).any():
            from edge_sdk.errors import ModelError

            raise ModelError(f"{where}: RSQRT of a negative value (input below its zero point {zp})")
        outputs[0][...] = table[v.view(unsigned)]
    return run
