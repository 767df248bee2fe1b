"""L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION: normalization along the last axis. L2_NORMALIZATION as
LiteRT's l2norm.cc reference kernels and TFLM's l2norm.cc:

- FLOAT32: per row (all axes but the last), the float32 sum of squares in order, its float32 square root raised to
  at least 1e-6, then each value divided by it.
- INT8 (TFLM / LiteRT reference_integer_ops): the int32 sum of (q - zp)^2, gemmlowp's inverse square root as a
  multiplier and shift (GetInvSqrtQuantizedMultiplierExp), each (q - zp) multiplied by it with the shift raised by
  7 (the output scale 1/128, zero point 0), clamped to int8.
- UINT8 (LiteRT reference_ops): the same inverse square root applied to 128 * (q - zp) (doubling high multiply,
  then a rounding right shift), plus 128 (output scale 1/128, zero point 128), clamped to uint8.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels import fixedpoint as fp
from edge_sdk.runtime.kernels.node import Eval, Node
from edge_sdk.runtime.kernels.quant import multiply_by_quantized_multiplier

L2_EPSILON = np.float32(1e-6)  # l2norm.cc's hard-coded floor of the float norm
L2_OUTPUT_ZERO_POINT = {"INT8": 0, "UINT8": 128}  # with scale 1/128: LiteRT's Prepare requires both


def prepare_l2_normalization(node: Node) -> Eval:
    node.expect_counts(1, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT8", "UINT8"))
    node.expect_types(y, (x.type,), "output")
    if not 1 <= len(x.shape) <= 4:
        raise node.unsupported(f"rank {len(x.shape)} (LiteRT's L2_NORMALIZATION takes ranks 1 to 4)")
    act = node.options.get("fused_activation_function", "NONE") or "NONE"
    if act != "NONE":
        raise node.unsupported(f"fused activation {act} (LiteRT and TFLM take NONE only)")
    node.set_output_shape(0, x.shape)
    depth = x.shape[-1]

    if x.type == "FLOAT32":

        def run_float(inputs, outputs):
            v = inputs[0].reshape(-1, depth)
            acc = np.zeros(v.shape[0], np.float32)
            for c in range(depth):  # the reference's order: float32 sums, one column at a time
                acc = acc + v[:, c] * v[:, c]
            norm = np.maximum(np.sqrt(acc), L2_EPSILON)
            outputs[0][...] = (v / norm[:, None]).reshape(x.shape)

        return run_float

    node.expect_quantized(x, y)
    if np.float32(y.s) != np.float32(1.0 / 128.0) or y.zp != L2_OUTPUT_ZERO_POINT[x.type]:
        raise node.unsupported(f"{x.type} output quantization must be scale 1/128, zero point "
                               f"{L2_OUTPUT_ZERO_POINT[x.type]} (LiteRT's l2norm.cc)")
    in_zp = x.zp

    def run_quant(inputs, outputs):
        d = inputs[0].reshape(-1, depth).astype(np.int64) - in_zp
        acc = fp.wrap32((d * d).sum(axis=1))
        mult, shift = fp.get_inv_sqrt_quantized_multiplier_exp(acc, -1)
        mult, shift = mult[:, None], shift[:, None]
        if x.type == "INT8":
            v = np.clip(multiply_by_quantized_multiplier(d, mult, shift + 7), -128, 127)
        else:  # shift <= 0 here: the doubling high multiply, then a rounding right shift by -shift
            v = np.clip(128 + multiply_by_quantized_multiplier(128 * d, mult, shift), 0, 255)
        outputs[0][...] = v.reshape(x.shape)

    return run_quant


def prepare_local_response_normalization(node: Node) -> Eval:
    """LOCAL_RESPONSE_NORMALIZATION (LiteRT's reference kernel, float32 only; TFLM has none): for channel c of each
    row, the float32 sum of squares over channels [c - radius, c + radius) (the reference's window: its upper end
    is exclusive), in order, then ``x * (bias + alpha * sum) ** -beta`` in float32 (numpy's power: within an ulp
    of LiteRT's and the C kernel's powf, none of them correctly rounded)."""
    node.expect_counts(1, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32",))
    node.expect_types(y, ("FLOAT32",), "output")
    if len(x.shape) != 4:
        raise node.unsupported(f"input {x.shape} must be 4-D (LiteRT's LOCAL_RESPONSE_NORMALIZATION)")
    radius = int(node.options.get("radius", 0))
    bias = np.float32(node.options.get("bias", 0.0))
    alpha = np.float32(node.options.get("alpha", 0.0))
    neg_beta = -np.float32(node.options.get("beta", 0.0))
    node.set_output_shape(0, x.shape)
    depth = x.shape[-1]
    windows = [(max(0, c - radius), min(depth, c + radius)) for c in range(depth)]

    def run(inputs, outputs):
        v = inputs[0].reshape(-1, depth)
        sq = v * v
        out = outputs[0].reshape(-1, depth)
        for c, (lo, hi) in enumerate(windows):
            acc = np.zeros(v.shape[0], np.float32)
            for k in range(lo, hi):  # the reference's order
                acc = acc + sq[:, k]
            out[:, c] = v[:, c] * np.power(bias + alpha * acc, neg_beta)

    return run
