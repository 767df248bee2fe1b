"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR on NHWC tensors, bit-exact with TFLite Micro.

Both are separable: prepare computes, per output row and per output column, the source indices (and for
bilinear the interpolation weights) with TFLM's float32 / fixed-point arithmetic; eval gathers with those
index arrays. Integer bilinear uses TFLM's ResizeBilinearInteger: Q10 positions, products of Q10 weights
summed into a Q20 value in int64, then rounded half away from zero back to the integer type.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime import uint8
from edge_sdk.runtime.kernels.node import Eval, Node
from edge_sdk.runtime.kernels.quant import TYPE_RANGES, clip_into, tflite_round

_F = np.float32


def _size(node: Node) -> tuple[int, int]:
    node.expect_counts(2, 1)
    x = node.input(0)
    if len(x.shape) != 4:
        raise node.error(f"input must be 4-D (NHWC), is {x.shape}")
    v = node.constant_values(1, "size", ("INT32",))
    if v.size != 2:
        raise node.error(f"size must hold 2 values (height, width), holds {v.size}")
    h, w = int(v[0]), int(v[1])
    if h <= 0 or w <= 0:
        raise node.error(f"output size {h}x{w} must be positive")
    if x.type != node.outputs[0].type:
        raise node.error(f"output type {node.outputs[0].type} differs from input type {x.type}")
    node.set_output_shape(0, (x.shape[0], h, w, x.shape[3]))
    return h, w


def _nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    if align_corners and out_size > 1:
        scale = _F(in_size - 1) / _F(out_size - 1)
    else:
        scale = _F(in_size) / _F(out_size)
    offset = _F(0.5) if half_pixel else _F(0.0)
    pos = (np.arange(out_size, dtype=_F) + offset) * scale
    if align_corners:
        idx = tflite_round(pos)  # std::round of the float32 position
    else:
        idx = np.floor(pos)
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    if half_pixel:
        idx = np.maximum(idx, 0)
    return idx


def prepare_resize_nearest_neighbor(node: Node) -> Eval:
    x = node.input(0)
    node.expect_types(x, ("FLOAT32", "INT8", "UINT8", "INT16", "INT32"))
    h, w = _size(node)
    ac = bool(node.options.get("align_corners", False))
    hp = bool(node.options.get("half_pixel_centers", False))
    iy = _nearest_indices(x.shape[1], h, ac, hp).reshape(h, 1)
    ix = _nearest_indices(x.shape[2], w, ac, hp).reshape(1, w)

    def run(inputs, outputs):
        outputs[0][...] = inputs[0][:, iy, ix, :]

    return run


def _float_axis(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    scale = _F(in_size) / _F(out_size)
    if align_corners and out_size > 1:
        scale = _F(in_size - 1) / _F(out_size - 1)
    v = np.arange(out_size, dtype=_F)
    pos = (v + _F(0.5)) * scale - _F(0.5) if half_pixel else v * scale
    lo = np.maximum(np.floor(pos).astype(np.int64), 0)
    hi = np.minimum(np.ceil(pos).astype(np.int64), in_size - 1)
    frac = (pos - lo.astype(_F)).astype(_F)
    return lo, hi, frac


def _int_axis(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    scale = ((1 << 10) * in_size + out_size // 2) // out_size
    if align_corners and out_size > 1:
        scale = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    v = np.arange(out_size, dtype=np.int64)
    pos = v * scale + scale // 2 - (1 << 9) if half_pixel else v * scale
    lo = np.maximum(np.trunc(pos / 1024).astype(np.int64), 0)  # C division truncates toward zero
    hi = np.minimum((pos + 1023) // 1024, in_size - 1)  # numerator is never negative here
    frac = pos - 1024 * lo
    return lo, hi, frac


def prepare_resize_bilinear(node: Node) -> Eval:
    x = node.input(0)
    node.expect_types(x, ("FLOAT32", "INT8", "INT16"))
    h, w = _size(node)
    ac = bool(node.options.get("align_corners", False))
    hp = bool(node.options.get("half_pixel_centers", False))
    if ac and hp:
        raise node.error("half_pixel_centers and align_corners cannot both be set")
    in_h, in_w = x.shape[1], x.shape[2]

    from_uint8 = x.type == "INT8" and node.options.get("new_height") == uint8.FROM_UINT8
    if x.type == "FLOAT32" or from_uint8:
        y0, y1, fy = _float_axis(in_h, h, ac, hp)
        x0, x1, fx = _float_axis(in_w, w, ac, hp)
        wy1 = fy.reshape(1, h, 1, 1)
        wy0 = (_F(1) - fy).reshape(1, h, 1, 1)
        wx1 = fx.reshape(1, 1, w, 1)
        wx0 = (_F(1) - fx).reshape(1, 1, w, 1)
        r0, r1 = y0.reshape(h, 1), y1.reshape(h, 1)
        c0, c1 = x0.reshape(1, w), x1.reshape(1, w)

        def run_float(inputs, outputs):
            a = inputs[0]
            outputs[0][...] = (
                a[:, r0, c0, :] * wy0 * wx0
                + a[:, r1, c0, :] * wy1 * wx0
                + a[:, r0, c1, :] * wy0 * wx1
                + a[:, r1, c1, :] * wy1 * wx1
            )

        if not from_uint8:
            return run_float

        def run_from_uint8(inputs, outputs):
            # LiteRT's uint8 kernel: the float interpolation of the uint8 values (int8 + 128), + 0.5, truncated
            u = inputs[0].astype(_F) + _F(uint8.SHIFT)
            v = np.empty(outputs[0].shape, _F)
            run_float([u], [v])
            v += _F(0.5)
            clip_into(outputs[0], np.trunc(v).astype(np.int64) - uint8.SHIFT, -128, 127)

        return run_from_uint8

    y0, y1, fy = _int_axis(in_h, h, ac, hp)
    x0, x1, fx = _int_axis(in_w, w, ac, hp)
    wy1 = fy.reshape(1, h, 1, 1)
    wy0 = (1024 - fy).reshape(1, h, 1, 1)
    wx1 = fx.reshape(1, 1, w, 1)
    wx0 = (1024 - fx).reshape(1, 1, w, 1)
    # Combined Q20 weights of the four corners.
    w00, w10, w01, w11 = wy0 * wx0, wy1 * wx0, wy0 * wx1, wy1 * wx1
    r0, r1 = y0.reshape(h, 1), y1.reshape(h, 1)
    c0, c1 = x0.reshape(1, w), x1.reshape(1, w)
    lo, hi = TYPE_RANGES[x.type]

    def run_int(inputs, outputs):
        a = inputs[0].astype(np.int64)
        acc = a[:, r0, c0, :] * w00 + a[:, r1, c0, :] * w10 + a[:, r0, c1, :] * w01 + a[:, r1, c1, :] * w11
        q = (np.abs(acc) + (1 << 19)) >> 20
        v = np.where(acc > 0, q, -q)
        clip_into(outputs[0], v, lo, hi)

    return run_int
