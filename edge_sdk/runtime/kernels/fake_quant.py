"""FAKE_QUANT: float32 values quantized to num_bits and back, as LiteRT's fake_quant.cc with the reference's
NudgeQuantizationRange and FakeQuantizeArray (TensorFlow's FakeQuantWithMinMaxArgs), every step in float32.

The range [min, max] is nudged so that 0 is a grid point: scale = (max - min) / (2^num_bits - 1), zero point =
round(-min / scale) within [0, 2^num_bits - 1]; each value is clamped to the nudged range and rounded (half away
from zero) to the grid. narrow_range is refused, as LiteRT refuses it at run time.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Node
from edge_sdk.runtime.kernels.quant import tflite_round

F32 = np.float32


def nudged_range(rmin: float, rmax: float, num_bits: int) -> tuple[np.float32, np.float32, np.float32]:
    """(nudged_min, nudged_max, scale), float32 as NudgeQuantizationRange with quant_min 0."""
    quant_min, quant_max = F32(0), F32((1 << num_bits) - 1)
    scale = (F32(rmax) - F32(rmin)) / (quant_max - quant_min)
    zero_point_from_min = quant_min - F32(rmin) / scale
    if zero_point_from_min < quant_min:
        zero_point = 0
    elif zero_point_from_min > quant_max:
        zero_point = (1 << num_bits) - 1
    else:
        zero_point = int(tflite_round(zero_point_from_min))
    return (quant_min - F32(zero_point)) * scale, (quant_max - F32(zero_point)) * scale, scale


def prepare_fake_quant(node: Node):
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32",))
    node.expect_types(out, ("FLOAT32",), "output")
    if node.options.get("narrow_range", False):
        raise node.unsupported("narrow_range is not supported at run time (LiteRT refuses it too)")
    num_bits = int(node.options.get("num_bits", 0))
    rmin, rmax = F32(node.options.get("min", 0.0)), F32(node.options.get("max", 0.0))
    node.expect(1 <= num_bits <= 16, f"num_bits {num_bits} outside 1..16")
    node.expect(bool(rmin < rmax), f"min {rmin} is not below max {rmax}")
    node.set_output_shape(0, x.shape)
    nudged_min, nudged_max, scale = nudged_range(rmin, rmax, num_bits)
    inverse_scale = F32(1) / scale

    def run(inputs, outputs):
        v = inputs[0]
        clamped = np.where(nudged_min < v, v, nudged_min)  # std::max(nudged_min, v): NaN gives nudged_min
        clamped = np.where(clamped < nudged_max, clamped, nudged_max)  # std::min(nudged_max, clamped)
        outputs[0][...] = tflite_round((clamped - nudged_min) * inverse_scale) * scale + nudged_min
    return run
