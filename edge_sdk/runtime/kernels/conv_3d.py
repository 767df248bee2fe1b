"""CONV_3D as LiteRT's reference kernel computes it (TFLite Micro has no CONV_3D).

Layout facts from the TFLite schema and LiteRT's conv3d kernel: input [N, D, H, W, C] (NDHWC), filter
[kd, kh, kw, C, O] (DHWIO: the input depth before the output channels, unlike CONV_2D's OHWI), optional bias
[O], output [N, D', H', W', O]. Conv3DOptions: padding, stride_d/w/h, fused activation, dilation_d/w/h. Each
spatial dimension's size and padding are TFLite's ComputeOutSize / ComputePaddingWithOffset (the odd padding
cell goes after). Float32 only, as LiteRT (its kernel registers no quantized path); the filter's input depth
must equal the input's (no groups).

The sum runs as one float32 GEMM over (kd, kh, kw, C) patches, so its rounding differs from the reference
loop's in the last bits only (tests compare within 1e-5 of the output's range).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from edge_sdk.runtime.kernels import quant
from edge_sdk.runtime.kernels.conv import window_geometry
from edge_sdk.runtime.kernels.node import Node


def prepare_conv_3d(node: Node):
    node.expect_counts((2, 3), 1)
    inp, flt, out = node.input(0), node.input(1), node.outputs[0]
    bias = node.inputs[2] if node.has_input(2) else None
    for t, what in ((inp, "input"), (flt, "filter"), (out, "output")):
        node.expect_types(t, ("FLOAT32",), what)
    if bias is not None:
        node.expect_types(bias, ("FLOAT32",), "bias")
    if len(inp.shape) != 5 or len(flt.shape) != 5:
        raise node.error(f"input {inp.shape} and filter {flt.shape} must both be 5-D (NDHWC, DHWIO)")
    n, d, h, w, c = inp.shape
    kd, kh, kw, fc, o = flt.shape
    if fc != c:
        raise node.error(f"filter input depth {fc} differs from the input depth {c} (CONV_3D has no groups)")
    if bias is not None and bias.size != o:
        raise node.error(f"bias '{bias.name}' has {bias.size} values for {o} output channels")
    opts = node.options
    act = quant.check_activation(node)
    padding = opts.get("padding", "SAME")
    sd, sh, sw = (int(opts.get(k, 1)) for k in ("stride_d", "stride_h", "stride_w"))
    dd, dh, dw = (int(opts.get(k, 1)) for k in ("dilation_d_factor", "dilation_h_factor", "dilation_w_factor"))
    od, pd = window_geometry(node, padding, sd, dd, d, kd)
    oh, pt = window_geometry(node, padding, sh, dh, h, kh)
    ow, pl = window_geometry(node, padding, sw, dw, w, kw)
    node.set_output_shape(0, (n, od, oh, ow, o))

    # a zero border around the input holds every tap that falls outside it
    need = [(od - 1) * sd + (kd - 1) * dd + 1, (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1]
    before = (pd, pt, pl)
    sizes = (d, h, w)
    keep = [max(0, min(sizes[i], need[i] - before[i])) for i in range(3)]
    buf = np.zeros((n, max(need[0], 1), max(need[1], 1), max(need[2], 1), c), np.float32)
    dst = buf[:, pd:pd + keep[0], pt:pt + keep[1], pl:pl + keep[2], :]
    st = buf.strides
    window = as_strided(buf, shape=(n, od, oh, ow, kd, kh, kw, c),
                        strides=(st[0], st[1] * sd, st[2] * sh, st[3] * sw, st[1] * dd, st[2] * dh, st[3] * dw, st[4]),
                        writeable=False)
    k = kd * kh * kw * c
    m = n * od * oh * ow

    def weights_matrix(wv):
        return np.ascontiguousarray(np.asarray(wv, np.float32).reshape(k, o))

    w_const = weights_matrix(flt.data) if flt.is_const else None

    b_const = bias.data.astype(np.float32).ravel() if bias is not None and bias.is_const else None
    clamp = quant.float_clamp(act)

    def run(inputs, outputs):
        dst[...] = inputs[0][:, :keep[0], :keep[1], :keep[2], :]
        wm = w_const if w_const is not None else weights_matrix(inputs[1])
        y = window.reshape(m, k) @ wm
        if bias is not None:
            y += b_const if b_const is not None else inputs[2].ravel()
        if clamp is not None:
            np.clip(y, clamp[0], clamp[1], out=y)
        outputs[0][...] = y.reshape(outputs[0].shape)

    return run


def macs_conv_3d(node: Node) -> int:
    kd, kh, kw, c, o = node.inputs[1].shape
    n, od, oh, ow, _ = node.outputs[0].shape
    return int(n * od * oh * ow * o * kd * kh * kw * c)
