"""Float math and data-movement ops the ONNX importer emits: EXP, LOG, SQRT, ABS, NEG, POW, TILE, BROADCAST_TO,
MIRROR_PAD; and LiteRT's elementwise SQUARE, FLOOR, CEIL, ROUND, SIN, COS, SIGN.

The unary ops run on FLOAT32 (ABS and NEG also on INT32 / INT64 / INT8 without quantization change, as
TFLite's reference kernels do for integer tensors). POW takes two tensors with numpy broadcasting (float32 or
int32). TILE, BROADCAST_TO and MIRROR_PAD copy any element type; their multiples / shape / paddings must be
constants so prepare can fix the output shape.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels import fixedpoint as fp
from edge_sdk.runtime.kernels.lut import DOMAINS, table_run
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.runtime.kernels.quant import multiply_by_quantized_multiplier, quantize_multiplier, tflite_round

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


def _f32_of(fn):
    """A float32 -> float32 transform through ``fn`` in double, rounded once (glibc's expf / logf, which LiteRT
    and the C kernel call, are within an ulp of that)."""
    def transform(v):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return fn(np.asarray(v, np.float32).astype(np.float64)).astype(np.float32)
    return transform


def lut_int8_populate(transform, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """LiteRT's LUTPopulateInt8 (kernels/internal/common.h): entry (q & 0xff) = clamp(round(transform(in_scale *
    (q - in_zp)) * (1 / out_scale)) + out_zp), all in float32, rounded half away from zero. A rescaled value
    beyond int32 saturates (LiteRT's float -> int32 cast is undefined there: x86 gives INT32_MIN)."""
    f = np.float32
    q = DOMAINS["INT8"][0]
    deq = (f(in_scale) * (q - in_zp).astype(np.float32)).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        rescaled = tflite_round((transform(deq) * f(f(1) / f(out_scale))).astype(np.float32))
    rescaled = np.clip(np.nan_to_num(rescaled, nan=0.0), -2.0**31, 2.0**31 - 1)
    return np.clip(rescaled.astype(np.int64) + out_zp, -128, 127)


def quantized_lut_run(node: Node, transform_for):
    """EXP / LOG / GELU on INT8 or INT16 as LiteRT: a 256-entry table (LUTPopulateInt8) or the 513-entry
    interpolated int16 table (LUTPopulateInt16 + LUTLookup; zero points 0). ``transform_for(type, out)`` is the
    float32 -> float32 transform (LOG's depends on the output range)."""
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(out, (x.type,), "output")
    node.expect_quantized(x, out)
    node.set_output_shape(0, x.shape)
    transform = transform_for(x.type, out)
    if x.type == "INT8":
        table = lut_int8_populate(transform, x.s, x.zp, out.s, out.zp)
        return table_run("INT8", lambda domain: table[domain.astype(np.uint8)])
    node.expect(x.zp == 0 and out.zp == 0, "int16 input and output need zero points of 0")
    lut = fp.lut_populate_int16(transform, x.s, x.zp, out.s, out.zp)
    return table_run("INT16", lambda domain: fp.lut_lookup_int16(domain, lut))


def _exp_transform(type_name: str, out):
    return _f32_of(np.exp)


def _log_transform(type_name: str, out):
    """LiteRT's LogLUTPrepare: log(v), and for v <= 0 the real value of the output's lowest integer."""
    qmin = -128 if type_name == "INT8" else -32768
    output_min = np.float32(np.float32(qmin - out.zp) * np.float32(out.s))
    log = _f32_of(np.log)

    def transform(v):
        v = np.asarray(v, np.float32)
        return np.where(v <= 0, output_min, log(np.where(v <= 0, np.float32(1), v))).astype(np.float32)
    return transform


def prepare_exp(node: Node):
    if node.input(0).type in ("INT8", "INT16"):
        return quantized_lut_run(node, _exp_transform)
    return _unary_float(node, np.exp)


def prepare_log(node: Node):
    if node.input(0).type in ("INT8", "INT16"):
        return quantized_lut_run(node, _log_transform)
    return _unary_float(node, np.log)


def prepare_sqrt(node: Node):
    if node.input(0).type == "INT16":
        return _sqrt_int16(node)
    return _unary_float(node, np.sqrt)


def _sqrt_int16(node: Node):
    """SQRT INT16 as LiteRT's elementwise.cc (zero points 0, which it requires): in float32, sqrt(x * input
    scale) / output scale, truncated toward 0 and clamped (measured: equal to LiteRT on every non-negative int16
    value over 5 scale pairs, rounding instead is 1 off on half the values). A negative input fails the invoke,
    as LiteRT's does. One 32768-entry table of the non-negative values, built at prepare."""
    from edge_sdk.errors import DataError

    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(out, ("INT16",), "output")
    node.expect_quantized(x, out)
    if x.zp or out.zp:
        raise node.error(f"INT16 SQRT needs zero points of 0 (input {x.zp}, output {out.zp}), as LiteRT")
    node.set_output_shape(0, x.shape)
    f32 = np.float32
    root = np.sqrt(np.arange(32768, dtype=f32) * f32(x.s))
    table = np.clip(np.trunc(root / f32(out.s)), -32768, 32767).astype(np.int16)  # shape (32768,)
    where, name = node.where(), x.name

    def run(inputs, outputs):
        v = inputs[0]
        if v.size and v.min() < 0:
            element = int(np.argmax(v.reshape(-1) < 0))
            raise DataError(f"{where}: input 0 '{name}' element {element} is {int(v.reshape(-1)[element])}: "
                            "SQRT of a negative value")
        outputs[0][...] = table[v]
    return run


def prepare_neg(node: Node):
    x = node.input(0)
    if x.type in ("INT8", "INT16"):
        # LiteRT's reference Negate: the stored values negated (wrapping: -(-128) is -128), whatever the scales
        # and zero points say (a nonzero zero point is ignored); copied as is
        node.expect_counts(1, 1)
        node.expect_types(node.outputs[0], (x.type,), "output")
        node.set_output_shape(0, x.shape)
        wrap = fp.wrap8 if x.type == "INT8" else fp.wrap16
        return table_run(x.type, lambda domain: wrap(-domain))
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
    x = node.input(0)
    if x.type == "INT16" and not x.quantized and not node.outputs[0].quantized:
        # LiteRT's AbsInt16EvalImpl: |x| cast back to int16 (|-32768| wraps to -32768)
        node.expect_counts(1, 1)
        node.expect_types(node.outputs[0], ("INT16",), "output")
        node.set_output_shape(0, x.shape)
        return table_run("INT16", lambda domain: fp.wrap16(np.abs(domain)))
    if x.type in ("INT8", "INT16"):
        return _abs_quantized(node)
    return _unary_float(node, np.abs, ("INT32", "INT64"))


def _abs_quantized(node: Node):
    """elementwise.cc AbsEvalQuantized (LiteRT and TFLM): v = |x - zp_in|; with different scales v times the
    multiplier of in_scale / out_scale (TFLM's two roundings; LiteRT's pip build rounds once: +-1 there); plus
    zp_out, clamped. int16: zero points 0. An int8 tensor pair without quantization is one scale, zero points 0
    (|-128| saturates to 127)."""
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(out, (x.type,), "output")
    node.set_output_shape(0, x.shape)
    if x.quantized != out.quantized:
        raise node.unsupported("quantized input with an unquantized output (or the reverse)")
    in_s, in_zp = (np.float32(x.s), x.zp) if x.quantized else (np.float32(1), 0)
    out_s, out_zp = (np.float32(out.s), out.zp) if out.quantized else (np.float32(1), 0)
    if x.type == "INT16":
        node.expect(in_zp == 0 and out_zp == 0, "int16 input and output need zero points of 0")
    lo, hi = (-128, 127) if x.type == "INT8" else (-32768, 32767)
    rescale = quantize_multiplier(float(in_s) / float(out_s)) if in_s != out_s else None

    def f(domain):
        v = np.abs(domain - in_zp)
        if rescale is not None:
            v = multiply_by_quantized_multiplier(v, *rescale)
        return np.clip(v + out_zp, lo, hi)
    return table_run(x.type, f)


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
