"""GELU (builtin 150, GeluOptions.approximate): y = x * Phi(x), as LiteRT's gelu.cc and its reference header.

- exact (approximate = false): 0.5 * x * erfc(-x / sqrt(2));
- approximate: 0.5 * x * (1 + tanh(sqrt(2 / pi) * x * (1 + 0.044715 * x^2))).

float32: the formula in float32 arithmetic, erfc / tanh evaluated in double and rounded to float (erfc by the
Chebyshev-fitted form of Numerical Recipes' erfcc, fractional error below 1.2e-7, so no libm difference
decides a result). int8: a 256-entry table built in prepare as LiteRT's LUTPopulate does: each input value
dequantized (input_scale * (q - zp_in), float), transformed, times 1 / output_scale, rounded half away from
zero, plus zp_out, clamped to [-128, 127]. int16: LiteRT's 513-entry interpolated table (LUTPopulateInt16 of
the float formula, LUTLookup). The C kernel (firmware_c/src/kernels/gelu.c) computes the same
table bit for bit. TFLM has no GELU kernel.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels import fixedpoint as fp
from edge_sdk.runtime.kernels.lut import INT8_VALUES, table_run
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.runtime.kernels.quant import tflite_round

SQRT1_2 = np.float32(0.70710678118654752440)
SQRT_2_PI = np.float32(0.79788456080286535588)  # sqrt(2 / pi)
_ERFC = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
         -0.82215223, 0.17087277)


def erfc(x) -> np.ndarray:
    """erfc in double precision (Numerical Recipes erfcc: fractional error < 1.2e-7 everywhere)."""
    x = np.asarray(x, np.float64)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.full_like(t, _ERFC[-1])
    for c in _ERFC[-2::-1]:
        poly = c + t * poly
    ans = t * np.exp(-z * z + poly)
    return np.where(x >= 0, ans, 2.0 - ans)


def gelu_float(v: np.ndarray, approximate: bool) -> np.ndarray:
    v = np.asarray(v, np.float32)
    half = np.float32(0.5)
    if approximate:
        inner = (SQRT_2_PI * v * (np.float32(1) + np.float32(0.044715) * v * v)).astype(np.float32)
        t = np.tanh(inner.astype(np.float64)).astype(np.float32)
        return (half * v * (np.float32(1) + t)).astype(np.float32)
    e = erfc((v * -SQRT1_2).astype(np.float32)).astype(np.float32)
    return (half * v * e).astype(np.float32)


def gelu_table(in_scale: float, in_zp: int, out_scale: float, out_zp: int, approximate: bool) -> np.ndarray:
    """The int8 table: entry (q & 0xff) is the output for input q."""
    q = INT8_VALUES
    deq = (np.float32(in_scale) * (q - in_zp).astype(np.float32)).astype(np.float32)
    inv = np.float32(np.float32(1) / np.float32(out_scale))
    rescaled = tflite_round((gelu_float(deq, approximate) * inv).astype(np.float32))
    return np.clip(rescaled.astype(np.int64) + out_zp, -128, 127).astype(np.int8)


def prepare_gelu(node: Node):
    node.expect_counts(1, 1)
    x, out = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32", "INT8", "INT16"))
    node.set_output_shape(0, x.shape)
    if out.type != x.type:
        raise node.unsupported(f"output type {out.type} with input type {x.type}")
    approximate = bool(node.options.get("approximate", False))
    if x.type == "FLOAT32":
        def run(inputs, outputs):
            outputs[0][...] = gelu_float(inputs[0], approximate)
        return run
    node.expect_quantized(x, out)
    if x.type == "INT16":  # LiteRT: the 513-entry interpolated table of the float formula (LUTPopulateInt16)
        lut = fp.lut_populate_int16(lambda v: gelu_float(v, approximate), x.s, x.zp, out.s, out.zp)
        return table_run("INT16", lambda domain: fp.lut_lookup_int16(domain, lut))
    table = gelu_table(x.s, x.zp, out.s, out.zp, approximate)

    def run_int8(inputs, outputs):
        outputs[0][...] = table[inputs[0].view(np.uint8)]
    return run_int8
