"""CONV_3D_TRANSPOSE as LiteRT's reference kernel computes it (TFLite Micro has no 3-D ops).

Inputs (LiteRT's order): output_shape (a constant INT32 [5]: N, D, H, W, O), filter [kd, kh, kw, O, C] (the output
channels before the input channels: CONV_3D's DHWIO read backwards), input [N, D_in, H_in, W_in, C], optional bias
[O]; output [N, D, H, W, O]. Conv3DOptions as CONV_3D's (conv_3d.py). The geometry is CONV_3D's run from the output
to the input: conv.window_geometry over each output dimension must give the input's size, and its padding-before is
where input cell 0 lands (-pad). Each input cell scatters input x filter into the output cells its taps reach;
then the bias and the fused activation. Float32 only, as LiteRT.

The scatter runs one filter tap at a time over the whole input as a float32 matrix product, so its sums round
differently from the reference loop's in the last bits (tests compare within 1e-5 of the output's range).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels import quant
from edge_sdk.runtime.kernels.conv import window_geometry
from edge_sdk.runtime.kernels.node import Eval, Node


def prepare_conv_3d_transpose(node: Node) -> Eval:
    node.expect_counts((3, 4), 1)
    flt, inp, out = node.input(1), node.input(2), node.outputs[0]
    bias = node.inputs[3] if node.has_input(3) else None
    for t, what in ((inp, "input"), (flt, "filter"), (out, "output")):
        node.expect_types(t, ("FLOAT32",), what)
    if bias is not None:
        node.expect_types(bias, ("FLOAT32",), "bias")
    if len(node.input(0).shape) != 1 or node.input(0).size != 5:
        raise node.error(f"output_shape must be a 1-D tensor of 5 values, has shape {node.input(0).shape}")
    shape = [int(v) for v in node.constant_values(0, "output_shape", ("INT32",))]
    if len(inp.shape) != 5 or len(flt.shape) != 5:
        raise node.error(f"input {inp.shape} and filter {flt.shape} must both be 5-D (NDHWC, DHWOI)")
    n, d_in, h_in, w_in, c = inp.shape
    kd, kh, kw, o, fc = flt.shape
    if fc != c:
        raise node.error(f"filter input depth {fc} differs from the input depth {c}")
    if any(v < 0 for v in shape) or shape[0] != n or shape[4] != o:
        raise node.error(f"output_shape {shape} must be [{n}, D, H, W, {o}] (the input's batch, the filter's "
                         "output channels)")
    if bias is not None and bias.size != o:
        raise node.error(f"bias '{bias.name}' has {bias.size} values for {o} output channels")
    opts = node.options
    act = quant.check_activation(node)
    padding = opts.get("padding", "SAME")
    sd, sh, sw = (int(opts.get(k, 1)) for k in ("stride_d", "stride_h", "stride_w"))
    dd, dh, dw = (int(opts.get(k, 1)) for k in ("dilation_d_factor", "dilation_h_factor", "dilation_w_factor"))
    _, od, oh, ow, _ = shape
    pads = []
    for size, s, dil, k, want, axis in ((od, sd, dd, kd, d_in, "depth"), (oh, sh, dh, kh, h_in, "height"),
                                        (ow, sw, dw, kw, w_in, "width")):
        got, pad = window_geometry(node, padding, s, dil, size, k)
        if got != want:
            raise node.error(f"output {axis} {size} gives an input {axis} of {got} by the strides and padding, "
                             f"the input has {want}")
        pads.append(pad)
    node.set_output_shape(0, shape)
    pd, pt, pl = pads
    # the output with a margin on every side so each tap's scatter is one strided slice (cells outside are dropped)
    lo = [pd, pt, pl]
    full = [(d_in - 1) * sd + (kd - 1) * dd + 1, (h_in - 1) * sh + (kh - 1) * dh + 1,
            (w_in - 1) * sw + (kw - 1) * dw + 1]
    sizes = (od, oh, ow)
    hi = [max(0, full[i] - lo[i] - sizes[i]) for i in range(3)]
    buf_shape = (n, lo[0] + od + hi[0], lo[1] + oh + hi[1], lo[2] + ow + hi[2], o)
    w_const = np.asarray(flt.data, np.float32) if flt.is_const else None
    b_const = bias.data.astype(np.float32).ravel() if bias is not None and bias.is_const else None
    clamp = quant.float_clamp(act)
    cells = n * d_in * h_in * w_in

    def run(inputs, outputs):
        wt = w_const if w_const is not None else inputs[1].astype(np.float32)
        x = inputs[2].reshape(cells, c)
        buf = np.zeros(buf_shape, np.float32)
        for fd in range(kd):
            for fy in range(kh):
                for fx in range(kw):
                    part = (x @ wt[fd, fy, fx].T).reshape(n, d_in, h_in, w_in, o)  # [cells, C] x [C, O]
                    buf[:, fd * dd:fd * dd + (d_in - 1) * sd + 1:sd, fy * dh:fy * dh + (h_in - 1) * sh + 1:sh,
                        fx * dw:fx * dw + (w_in - 1) * sw + 1:sw, :] += part
        y = buf[:, lo[0]:lo[0] + od, lo[1]:lo[1] + oh, lo[2]:lo[2] + ow, :]
        if bias is not None:
            y = y + (b_const if b_const is not None else inputs[3].ravel())
        if clamp is not None:
            y = np.clip(y, clamp[0], clamp[1])
        outputs[0][...] = y

    return run


def macs_conv_3d_transpose(node: Node) -> int:
    kd, kh, kw, o, c = node.inputs[1].shape
    n, d, h, w, _ = node.inputs[2].shape
    return int(n * d * h * w * c * kd * kh * kw * o)
