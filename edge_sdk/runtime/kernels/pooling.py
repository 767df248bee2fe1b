"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D as TFLite Micro's reference kernels compute them.

Quantized pools work on the stored integers directly (TFLM requires input and output to share scale and zero
point). The average divides the window sum by the number of window cells inside the input (padding does
not count), rounding half away from zero; the max ignores padding. Both clamp to the fused activation.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.model.types import numpy_dtype
from edge_sdk.runtime.kernels import quant
from edge_sdk.runtime.kernels.conv import patch_window, window_geometry
from edge_sdk.runtime.kernels.node import Node

_LOWEST = {"FLOAT32": -np.inf, "INT8": -128, "INT16": -32768}


def _pool_setup(node: Node):
    node.expect_counts(1, 1)
    inp, out = node.input(0), node.outputs[0]
    node.expect_types(inp, ("FLOAT32", "INT8", "INT16"))
    if out.type != inp.type:
        raise node.error(f"output type {out.type} differs from input type {inp.type}")
    if len(inp.shape) != 4:
        raise node.error(f"input {inp.shape} must be 4-D")
    opts = node.options
    act = quant.check_activation(node)
    n, h, w, c = inp.shape
    fh, fw = int(opts.get("filter_height", 1)), int(opts.get("filter_width", 1))
    sh, sw = int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))
    padding = opts.get("padding", "SAME")
    oh, pt = window_geometry(node, padding, sh, 1, h, fh)
    ow, pl = window_geometry(node, padding, sw, 1, w, fw)
    oh, pt, ow, pl = patch_window(node, oh, pt, ow, pl)
    node.set_output_shape(0, (n, oh, ow, c))
    if inp.type == "FLOAT32":
        clamp = quant.float_clamp(act)
    else:
        if not (inp.quantized and out.quantized):
            raise node.error("quantized pooling needs scale and zero point on input and output")
        if abs(float(inp.s) - float(out.s)) > 1e-6 or inp.zp != out.zp:
            raise node.error(f"input (scale {inp.s}, zero point {inp.zp}) and output (scale {out.s}, zero point "
                             f"{out.zp}) quantization must match")
        clamp = quant.activation_range_quantized(act, out.type, out.s, out.zp)
    return inp, (n, h, w, c), (oh, ow), (fh, fw), (sh, sw), (pt, pl), clamp


class _Windows:
    """A padded copy of the input (border = ``fill``) and the strided views of each filter tap."""

    def __init__(self, shape, out_hw, filt, strides, pads, dtype, fill):
        n, h, w, c = shape
        oh, ow = out_hw
        fh, fw = filt
        sh, sw = strides
        pt, pl = pads
        need_h, need_w = (oh - 1) * sh + fh, (ow - 1) * sw + fw
        self.buf = np.full((n, max(need_h, pt + 1), max(need_w, pl + 1), c), fill, dtype=dtype)
        self.hc = max(0, min(h, need_h - pt))
        self.wc = max(0, min(w, need_w - pl))
        self.dst = self.buf[:, pt:pt + self.hc, pl:pl + self.wc, :]
        self.whole = self.hc == h and self.wc == w
        self.taps = [self.buf[:, fy:fy + (oh - 1) * sh + 1:sh, fx:fx + (ow - 1) * sw + 1:sw, :]
                     for fy in range(fh) for fx in range(fw)]

    def fill(self, x):
        self.dst[...] = x if self.whole else x[:, :self.hc, :self.wc, :]


def _counts(size, out, filt, stride, pad):
    """Number of window cells inside the input along one axis, per output position."""
    origin = np.arange(out) * stride - pad
    start = np.maximum(0, -origin)
    end = np.minimum(filt, size - origin)
    return np.maximum(end - start, 0)


def prepare_average_pool_2d(node: Node):
    inp, shape, out_hw, filt, strides, pads, clamp = _pool_setup(node)
    n, h, w, c = shape
    oh, ow = out_hw
    ch = _counts(h, oh, filt[0], strides[0], pads[0])
    cw = _counts(w, ow, filt[1], strides[1], pads[1])
    counts = (ch[:, None] * cw[None, :])[None, :, :, None]
    if (counts == 0).any():
        raise node.error("a pooling window lies entirely in the padding")
    if inp.type == "FLOAT32":
        win = _Windows(shape, out_hw, filt, strides, pads, np.float32, 0.0)
        acc = np.empty((n, oh, ow, c), dtype=np.float32)
        countf = counts.astype(np.float32)

        def run_float(inputs, outputs):
            win.fill(inputs[0])
            acc[...] = win.taps[0]
            for t in win.taps[1:]:
                np.add(acc, t, out=acc)
            y = acc / countf
            if clamp is not None:
                quant.clip_into(y, y, clamp[0], clamp[1])
            outputs[0][...] = y

        return run_float

    win = _Windows(shape, out_hw, filt, strides, pads, np.int32, 0)
    acc = np.empty((n, oh, ow, c), dtype=np.int32)
    counts32 = counts.astype(np.int32)
    halves = counts32 // 2
    lo, hi = clamp

    def run_int(inputs, outputs):
        win.fill(inputs[0])
        acc[...] = win.taps[0]
        for t in win.taps[1:]:
            np.add(acc, t, out=acc)
        # C: acc > 0 ? (acc + n/2) / n : (acc - n/2) / n, truncating division
        mag = np.abs(acc)
        mag += halves
        mag //= counts32
        y = np.where(acc < 0, -mag, mag)
        quant.clip_into(outputs[0], y, lo, hi)

    return run_int


def prepare_max_pool_2d(node: Node):
    inp, shape, out_hw, filt, strides, pads, clamp = _pool_setup(node)
    n, h, w, c = shape
    oh, ow = out_hw
    dtype = numpy_dtype(inp.type)
    win = _Windows(shape, out_hw, filt, strides, pads, dtype, _LOWEST[inp.type])
    acc = np.empty((n, oh, ow, c), dtype=dtype)
    lo, hi = clamp if clamp is not None else (None, None)

    def run(inputs, outputs):
        win.fill(inputs[0])
        acc[...] = win.taps[0]
        for t in win.taps[1:]:
            np.maximum(acc, t, out=acc)
        if lo is not None:
            quant.clip_into(acc, acc, lo, hi)
        outputs[0][...] = acc

    return run


def prepare_l2_pool_2d(node: Node):
    """L2_POOL_2D (LiteRT's and TFLM's reference L2Pool, float32 only): per window, the float32 sum of the squares
    of the cells inside the input in (fy, fx) order, divided by their count, its square root, then the fused
    activation's clamp. A window entirely in the padding gives 0 / 0 (NaN), as the reference."""
    node.expect_counts(1, 1)
    inp, out = node.input(0), node.outputs[0]
    node.expect_types(inp, ("FLOAT32",))
    node.expect_types(out, ("FLOAT32",), "output")
    if len(inp.shape) != 4:
        raise node.error(f"input {inp.shape} must be 4-D")
    opts = node.options
    clamp = quant.float_clamp(quant.check_activation(node))
    n, h, w, c = inp.shape
    fh, fw = int(opts.get("filter_height", 1)), int(opts.get("filter_width", 1))
    sh, sw = int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))
    padding = opts.get("padding", "SAME")
    oh, pt = window_geometry(node, padding, sh, 1, h, fh)
    ow, pl = window_geometry(node, padding, sw, 1, w, fw)
    node.set_output_shape(0, (n, oh, ow, c))
    ch = _counts(h, oh, fh, sh, pt)
    cw = _counts(w, ow, fw, sw, pl)
    countf = (ch[:, None] * cw[None, :])[None, :, :, None].astype(np.float32)
    # padding cells hold 0: adding 0 * 0 leaves a float32 sum as it was, so every tap can be added in order
    win = _Windows((n, h, w, c), (oh, ow), (fh, fw), (sh, sw), (pt, pl), np.float32, 0.0)
    acc = np.empty((n, oh, ow, c), dtype=np.float32)

    def run(inputs, outputs):
        win.fill(inputs[0])
        acc.fill(0.0)
        for t in win.taps:
            acc[...] = acc + t * t
        with np.errstate(invalid="ignore", divide="ignore"):
            y = np.sqrt(acc / countf)
        if clamp is not None:
            y = np.minimum(np.maximum(y, clamp[0]), clamp[1])
        outputs[0][...] = y

    return run
