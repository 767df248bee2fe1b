"""CUMSUM along one constant axis (CumsumOptions exclusive, reverse), as LiteRT's and TFLM's reference Cumsum.

- FLOAT32 / INT32 / INT64 (LiteRT): a running sum in the type, element by element along the axis (backwards with
  ``reverse``); ``exclusive`` writes the sum before adding the element. Integers wrap.
- INT8 (TFLM only; LiteRT refuses it): as TFLM's quantized CumSum, ADD's rescaling scheme: each (q - zp_in)
  shifted left by 20 and halved (MultiplyByQuantizedMultiplier by 0.5), summed in int32, the sum requantized by
  2 * s_in / (2^20 * s_out), plus zp_out, clamped. TFLM starts the sum from the rescaled ``-zp_in`` (its
  accumulator takes the input offset), not from 0: every output carries that extra ``-zp_in`` term, bit for bit
  as TFLM computes it (0 when the input zero point is 0).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels import fixedpoint as fp
from edge_sdk.runtime.kernels.node import Eval, Node
from edge_sdk.runtime.kernels.quant import multiply_by_quantized_multiplier, quantize_multiplier

CUMSUM_LEFT_SHIFT = 20  # TFLM's kCumSumIntegerShift


def prepare_cumsum(node: Node) -> Eval:
    node.expect_counts(2, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT32", "INT64", "INT8"))
    node.expect_types(y, (x.type,), "output")
    rank = len(x.shape)
    given = int(node.constant_scalar(1, "axis", ("INT32",)))
    axis = given + rank if given < 0 else given
    if not 0 <= axis < rank:
        raise node.error(f"axis {given} is out of range for rank {rank}")
    exclusive = bool(node.options.get("exclusive", False))
    reverse = bool(node.options.get("reverse", False))
    node.set_output_shape(0, x.shape)
    depth = x.shape[axis]

    def along(a):
        """The axis last, walked in the order the sum takes (a view: writes go through)."""
        v = np.moveaxis(a, axis, -1)
        return v[..., ::-1] if reverse else v

    if x.type != "INT8":

        def run(inputs, outputs):
            src, dst = along(inputs[0]), along(outputs[0])
            acc = np.zeros(src.shape[:-1], x.dtype)
            with np.errstate(over="ignore"):
                for d in range(depth):
                    if exclusive:
                        dst[..., d] = acc
                        acc = acc + src[..., d]
                    else:
                        acc = acc + src[..., d]
                        dst[..., d] = acc

        return run

    node.expect_quantized(x, y)
    in_mult, in_shift = quantize_multiplier(0.5)  # s_in / (2 * s_in)
    real_out = 2.0 * float(x.s) / ((1 << CUMSUM_LEFT_SHIFT) * float(y.s))
    out_mult, out_shift = quantize_multiplier(real_out)
    if out_shift > 0:
        raise node.unsupported(f"input/output scale ratio {float(x.s) / float(y.s):g} is too large (TFLM needs "
                               "the output multiplier below 1)")
    in_zp, out_zp = x.zp, y.zp
    start = int(multiply_by_quantized_multiplier(np.int64(-in_zp) << CUMSUM_LEFT_SHIFT, in_mult, in_shift))

    def run_int8(inputs, outputs):
        src, dst = along(inputs[0]), along(outputs[0])
        scaled = multiply_by_quantized_multiplier((src.astype(np.int64) - in_zp) << CUMSUM_LEFT_SHIFT, in_mult,
                                                  in_shift)
        acc = np.full(src.shape[:-1], start, np.int64)
        for d in range(depth):
            if exclusive:
                out, acc = acc, fp.wrap32(acc + scaled[..., d])
            else:
                acc = fp.wrap32(acc + scaled[..., d])
                out = acc
            dst[..., d] = np.clip(multiply_by_quantized_multiplier(out, out_mult, out_shift) + out_zp, -128, 127)

    return run_int8
