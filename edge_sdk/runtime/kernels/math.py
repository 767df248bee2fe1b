"""Float math and data-movement ops the ONNX importer emits: EXP, LOG, SQRT, ABS, NEG, POW, TILE, BROADCAST_TO,
MIRROR_PAD.

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
