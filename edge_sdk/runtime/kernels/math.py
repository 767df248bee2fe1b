"""Float math and data-movement ops the ONNX importer emits: EXP, LOG, SQRT, ABS, NEG, POW, TILE, BROADCAST_TO,
MIRROR_PAD; and LiteRT's elementwise SQUARE, FLOOR, CEIL, ROUND, SIN, COS, SIGN.

The unary ops run on FLOAT32 (ABS and NEG also on INT32 / INT64 / INT8 without quantization change, as
TFLite's reference kernels do for integer tensors). POW takes two tensors with numpy broadcasting (float32 or
int32). TILE, BROADCAST_TO and MIRROR_PAD copy any element type; their multiples / shape / paddings must be
constants so prepare can fix the output shape.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Node

_ANY = ("FLOAT32", "FLOAT16", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL", "UINT32", "UINT16")


def _unary_float(node: Node, fn, int_types: tuple[str, ...] = ()):
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32",) + int_types)
    node.expect_types(out, (x.type,), "output")
    if x.type != "FLOAT32" and (x.quantized or out.quantized) and \
            not (x.quantized and out.quantized and x.s == out.s and x.zp == 0 and out.zp == 0):
        raise node.unsupported("quantized input/output must share scale with zero point 0")
    node.set_output_shape(0, x.shape)

    def run(inputs, outputs):
        # LOG(0) = -inf, LOG / SQRT of a negative = NaN, EXP past 88.7 = inf: the values TFLite gives, no warning
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            fn(inputs[0], out=outputs[0])
    return run


def prepare_exp(node: Node):
    return _unary_float(node, np.exp)


def prepare_log(node: Node):
    return _unary_float(node, np.log)


def prepare_sqrt(node: Node):
    return _unary_float(node, np.sqrt)


def prepare_neg(node: Node):
    return _unary_float(node, np.negative, ("INT32", "INT64"))


def _round_half_even(v, out):
    """ROUND as TFLite's reference RoundToNearest: floor, then up past .5 and at .5 onto the even neighbour (-0.5
    gives +0.0: floor -1.0 plus 1)."""
    floor = np.floor(v)
    diff = v - floor  # exact: the fractional bits of v (0 from 2^23 on)
    keep = (diff < 0.5) | ((diff == 0.5) & (np.fmod(floor, 2) == 0))
    out[...] = np.where(keep, floor, floor + 1)


def _sign(v, out):
    """SIGN as LiteRT's: (0 < x) - (x < 0), so +0.0 for either zero (numpy's sign keeps -0.0); NaN passes as it
    is (its bits)."""
    sign = (v > 0).astype(out.dtype) - (v < 0).astype(out.dtype)
    out[...] = np.where(v != v, v, sign)


def _float64_rounded(fn):
    """sin / cos of float32 values computed in double and rounded once (glibc's sinf / cosf, which LiteRT and
    TFLM call, are within an ulp of that; numpy's float32 loops are not always)."""
    def run(v, out):
        out[...] = fn(v.astype(np.float64))
    return run


def _float_unary(node: Node, fn, types: tuple[str, ...]):
    """LiteRT's elementwise builtins of one float input: ``fn(x, out=)`` over the tensor ``types`` LiteRT's kernel
    takes; input and output of one type, not quantized (LiteRT has no integer kernel of these but SIGN's INT32, a
    plain integer)."""
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, types)
    node.expect_types(out, (x.type,), "output")
    if x.quantized or out.quantized:
        raise node.unsupported("takes no quantized tensors")
    node.set_output_shape(0, x.shape)
    if x.type == "FLOAT16":
        def run_half(inputs, outputs):  # computed in float32, rounded to half once (LiteRT's Eigen half does so)
            wide = np.empty(inputs[0].shape, np.float32)
            with np.errstate(over="ignore", invalid="ignore"):
                fn(inputs[0].astype(np.float32), out=wide)
            outputs[0][...] = wide.astype(np.float16)
        return run_half

    def run(inputs, outputs):
        with np.errstate(over="ignore", invalid="ignore"):  # SQUARE overflows to inf, SIN(inf) is NaN: as LiteRT
            fn(inputs[0], out=outputs[0])
    return run


def prepare_square(node: Node):
    return _float_unary(node, np.square, ("FLOAT32",))  # one rounding of x * x: bit-exact


def prepare_floor(node: Node):
    return _float_unary(node, np.floor, ("FLOAT32", "FLOAT16"))


def prepare_ceil(node: Node):
    return _float_unary(node, np.ceil, ("FLOAT32",))  # ceil.cc: FLOAT32 only (XNNPACK's CEIL takes FLOAT16 too)


def prepare_round(node: Node):
    return _float_unary(node, _round_half_even, ("FLOAT32", "FLOAT16"))


def prepare_sin(node: Node):
    return _float_unary(node, _float64_rounded(np.sin), ("FLOAT32", "FLOAT16"))


def prepare_cos(node: Node):
    return _float_unary(node, _float64_rounded(np.cos), ("FLOAT32", "FLOAT16"))


def prepare_sign(node: Node):
    return _float_unary(node, _sign, ("FLOAT32", "FLOAT64", "INT32"))


def prepare_abs(node: Node):
    if node.input(0).type == "INT8":
        def saturating_abs(v, out):  # |-128| saturates to 127 as TFLite's int8 ABS with equal scales
            out[...] = np.minimum(np.abs(v.astype(np.int16)), 127)
        return _unary_float(node, saturating_abs, ("INT8",))
    return _unary_float(node, np.abs, ("INT32", "INT64"))


def prepare_pow(node: Node):
    node.expect_counts(2, 1)
    a, b, out = node.input(0), node.input(1), node.outputs[0]
    node.expect_types(a, ("FLOAT32", "INT32"))
    node.expect_types(b, (a.type,), "exponent")
    node.expect_types(out, (a.type,), "output")
    try:
        shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise node.error(f"shapes {a.shape} and {b.shape} do not broadcast") from None
    node.set_output_shape(0, shape)

    if a.type == "INT32":
        def run(inputs, outputs):
            outputs[0][...] = np.power(inputs[0].astype(np.int64), inputs[1].astype(np.int64)).astype(np.int32)
        return run

    def run(inputs, outputs):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # 0 ** -1 = inf, (-8) ** 0.5 = NaN
            np.power(inputs[0], inputs[1], out=outputs[0])
    return run


def _int_constant(node: Node, i: int, what: str) -> np.ndarray:
    values = node.constant_values(i, what, ("INT32", "INT64")).astype(np.int64)
    shape = node.input(i).shape
    node.expect(len(shape) == 1, f"{what} must be 1-D, has shape {shape}")
    return values


def _data_and_operand(node: Node):
    """TILE, BROADCAST_TO, MIRROR_PAD: data input 0 of any type, a constant operand at input 1, an output of the
    data's type. Returns the data input."""
    node.expect_counts(2, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, _ANY)
    node.expect_types(out, (x.type,), "output")
    return x


def prepare_tile(node: Node):
    x = _data_and_operand(node)
    reps = _int_constant(node, 1, "multiples")
    node.expect(reps.size == len(x.shape), f"multiples {reps.tolist()} do not match input rank {len(x.shape)}")
    node.expect(bool((reps >= 0).all()), f"negative multiples {reps.tolist()}")
    node.set_output_shape(0, [d * int(r) for d, r in zip(x.shape, reps)])
    reps_t = tuple(int(r) for r in reps)

    def run(inputs, outputs):
        outputs[0][...] = np.tile(inputs[0], reps_t)
    return run


def prepare_broadcast_to(node: Node):
    x = _data_and_operand(node)
    shape = _int_constant(node, 1, "shape")
    node.expect(shape.size >= len(x.shape), f"shape {shape.tolist()} has lower rank than the input {x.shape}")
    node.expect(shape.size <= 8, f"shape {shape.tolist()} has rank above 8")
    target = tuple(int(d) for d in shape)
    try:
        if np.broadcast_shapes(tuple(x.shape), target) != target:
            raise ValueError
    except ValueError:
        raise node.error(f"input shape {x.shape} does not broadcast to {target}") from None
    node.set_output_shape(0, target)

    def run(inputs, outputs):
        outputs[0][...] = inputs[0]
    return run


def prepare_mirror_pad(node: Node):
    """MIRROR_PAD: REFLECT (edge not repeated, numpy 'reflect') or SYMMETRIC (edge repeated)."""
    x = _data_and_operand(node)
    pads = node.constant_values(1, "paddings", ("INT32", "INT64")).astype(np.int64).reshape(-1, 2)
    node.expect(pads.shape[0] == len(x.shape), f"paddings {pads.tolist()} do not match input rank {len(x.shape)}")
    mode = node.options.get("mode", "REFLECT")
    limit = 0 if mode == "SYMMETRIC" else 1
    for d, (lo, hi) in zip(x.shape, pads):
        node.expect(lo >= 0 and hi >= 0, f"negative paddings {pads.tolist()}")
        node.expect(max(lo, hi) <= d - limit, f"paddings {pads.tolist()} exceed what {mode} allows for shape {x.shape}")
    node.set_output_shape(0, [d + int(lo) + int(hi) for d, (lo, hi) in zip(x.shape, pads)])
    np_mode = "symmetric" if mode == "SYMMETRIC" else "reflect"
    widths = [(int(lo), int(hi)) for lo, hi in pads]

    def run(inputs, outputs):
        outputs[0][...] = np.pad(inputs[0], widths, mode=np_mode)
    return run
