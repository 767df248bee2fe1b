"""RFFT2D and the COMPLEX64 parts REAL, IMAG, COMPLEX_ABS, as LiteRT's rfft2d.cc and complex_support.cc.

- RFFT2D: input FLOAT32 [..., H, W], fft_length a constant INT32 [2] (fft_h, fft_w, each a power of two, as
  LiteRT's fft2d library needs), output COMPLEX64 [..., fft_h, fft_w / 2 + 1]: the 2-D real FFT of each innermost
  H x W slice, cropped or zero-padded to fft_h x fft_w first. LiteRT computes in double; so does this kernel
  (numpy's rfft2 on the float64 values), rounding to complex64 once at the end.
- REAL / IMAG / COMPLEX_ABS: COMPLEX64 -> FLOAT32 of the same shape (LiteRT also takes COMPLEX128 -> FLOAT64;
  so does this kernel). COMPLEX_ABS is hypot(re, im) in the part type (std::abs of std::complex).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Eval, Node

PART_TYPE = {"COMPLEX64": "FLOAT32", "COMPLEX128": "FLOAT64"}  # a complex type -> the type of its parts


def prepare_rfft2d(node: Node) -> Eval:
    node.expect_counts(2, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, ("FLOAT32",))
    node.expect_types(y, ("COMPLEX64",), "output")
    if len(x.shape) < 2:
        raise node.error(f"input '{x.name}' must have rank >= 2, has shape {x.shape}")
    if len(node.input(1).shape) != 1 or node.input(1).size != 2:
        raise node.error(f"fft_length must be a 1-D tensor of 2 values, has shape {node.input(1).shape}")
    fft_h, fft_w = (int(v) for v in node.constant_values(1, "fft_length", ("INT32",)))
    for n in (fft_h, fft_w):
        if n <= 0 or n & (n - 1):
            raise node.error(f"fft_length {[fft_h, fft_w]} must hold powers of two")
    node.set_output_shape(0, (*x.shape[:-2], fft_h, fft_w // 2 + 1))

    def run(inputs, outputs):
        # s= crops or zero-pads the last two axes to (fft_h, fft_w), as PrepareInputBuffer does
        outputs[0][...] = np.fft.rfft2(inputs[0].astype(np.float64), s=(fft_h, fft_w), axes=(-2, -1))

    return run


def _prepare_part(node: Node, part) -> Eval:
    """One complex -> real elementwise op: ``part(values)`` maps the complex array to its real parts' array."""
    node.expect_counts(1, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, tuple(PART_TYPE))
    node.expect_types(y, (PART_TYPE[x.type],), "output")
    node.set_output_shape(0, x.shape)

    def run(inputs, outputs):
        outputs[0][...] = part(inputs[0])

    return run


def prepare_real(node: Node) -> Eval:
    return _prepare_part(node, np.real)


def prepare_imag(node: Node) -> Eval:
    return _prepare_part(node, np.imag)


def prepare_complex_abs(node: Node) -> Eval:
    return _prepare_part(node, lambda v: np.hypot(v.real, v.imag))
