"""LiteRT's hybrid (dynamic-range) kernels: float activations, constant INT8 (or legacy UINT8) weights.

A dynamic-range model (TFLiteConverter with Optimize.DEFAULT and no representative dataset; ``edge convert
--quantize dynamic``) keeps float activations and stores the weights of FULLY_CONNECTED, CONV_2D,
DEPTHWISE_CONV_2D, BATCH_MATMUL and SVDF as int8 with float scales. LiteRT's hybrid kernels quantize the float
input on the fly, one scale (and, asymmetric, one zero point) per batch row (``quant.batch_quantize_floats``,
LiteRT's BatchQuantizeFloats), take the exact int32 product with the int8 weights, and scale it back to float:

* FULLY_CONNECTED (fully_connected.cc EvalHybridDense): rows of the input (B, depth) quantized symmetric, or
  asymmetric with ``asymmetric_quantize_inputs``; y = bias + float(q.w - zp * rowsum(w)) * scale, where scale is
  float32 (row scale * weights scale) per tensor or (row scale * unit scale) per channel, then the fused activation
  (any of them, as ApplyActivationToVector). An all-zero input skips the product: y = act(bias).
* CONV_2D (conv.cc): per batch image (h*w*c values). Per-tensor weights (or per-channel ones that all share one
  scale): EvalHybrid, symmetric, y = float(acc) * (image scale * weights scale) + bias. Per-channel weights with
  differing scales, or groups: EvalHybridPerChannel, always asymmetric, acc over the taps inside the image of
  w * (q - zp), y = float(acc) * channel scale * image scale + bias (in that order). Then the clamp.
* DEPTHWISE_CONV_2D (depthwise_conv.cc EvalHybridPerChannel): per batch image, always asymmetric, one scale per
  output channel required; y = float(acc) * (channel scale * image scale) + bias, then the clamp.
* BATCH_MATMUL (batch_matmul.cc EvalHybrid): float LHS, constant INT8 RHS; every LHS row (after adj_x) quantized
  (asymmetric_quantize_inputs picks the form); total = q.r - int(float(rowsum) * zp) (LiteRT subtracts in float
  and truncates back to int32), y = scale * float(total), scale per tensor or per RHS column. For an LHS of two
  batch dims or more LiteRT's reference (batch_matmul.h) steps its row scales by one matrix per batch index of
  every dim, so it reads other rows' scales: ours stays the product (equal to LiteRT's for ranks 2 and 3).
* SVDF (svdf.cc / reference svdf.h EvalHybridSVDF): the feature product as FULLY_CONNECTED's (no per-channel
  scale), weights_time dequantized to float once, the rest the float SVDF.

UINT8 weights are read as int8 bytes, as LiteRT reads them (``GetTensorData<int8_t>``); weight zero points are not
used (LiteRT's converter writes symmetric weights). The integer products run as float64 GEMMs of int8 values:
exact while a row's sum stays below 2**53.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from edge_sdk.runtime.kernels.node import Node, TensorInfo
from edge_sdk.runtime.kernels.quant import clip_into, float_clamp
from edge_sdk.runtime.kernels.quant import batch_quantize_floats, float_activation

_F32 = np.float32
WEIGHT_TYPES = ("INT8", "UINT8")  # LiteRT's hybrid weight types (INT4 too for FULLY_CONNECTED / CONV_2D: conv._conv_types)


def is_hybrid(inp: TensorInfo, weights: TensorInfo) -> bool:
    """Whether a weighted op with this input and these weights is LiteRT's hybrid kernel."""
    return inp.type == "FLOAT32" and weights.type in WEIGHT_TYPES


def _int8_weights(node: Node, w: TensorInfo, what: str = "weights") -> np.ndarray:
    """The constant, quantized weights as int8 values (UINT8 bytes reinterpreted, as LiteRT does)."""
    if not w.is_const:
        raise node.unsupported(f"hybrid {node.op}: {what} '{w.name}' must be a constant tensor")
    if not w.quantized:
        raise node.error(f"hybrid {node.op}: {what} '{w.name}' ({w.type}) has no quantization scale")
    data = np.ascontiguousarray(w.data)
    return data.view(np.int8) if data.dtype == np.uint8 else data.astype(np.int8, copy=False)


def _channel_scales(node: Node, w: TensorInfo, channels: int, axis: int, what: str = "weights") -> np.ndarray | None:
    """Per-channel float32 scales along ``axis`` (None for one scale): LiteRT needs one scale per channel there."""
    scales = np.asarray(w.scale, dtype=np.float32).ravel()
    if scales.size == 1:
        return None
    if scales.size != channels or w.quantized_dimension != axis:
        raise node.error(f"hybrid {node.op}: {what} '{w.name}' have {scales.size} scales along dimension "
                         f"{w.quantized_dimension} of {w.shape}; LiteRT needs one per output channel "
                         f"(dimension {axis}, {channels} channels)")
    return scales


def _float_bias(node: Node, bias: TensorInfo | None, channels: int) -> np.ndarray:
    """The constant float32 bias (zeros without one)."""
    if bias is None:
        return np.zeros(channels, np.float32)
    node.expect_types(bias, ("FLOAT32",), "bias")
    if bias.size != channels:
        raise node.error(f"bias '{bias.name}' has {bias.size} values for {channels} output channels")
    if not bias.is_const:
        raise node.unsupported(f"hybrid {node.op}: bias '{bias.name}' must be a constant tensor")
    return bias.data.astype(np.float32).ravel()


def _float_output(node: Node, out: TensorInfo) -> None:
    node.expect_types(out, ("FLOAT32",), "output")


def _quiet(run):
    """An eval without numpy warnings: a non-finite input gives what the casts give (undefined in LiteRT too).
    An empty output (a batch of 0) is left as it is, as LiteRT does: nothing to compute."""

    def quiet_run(inputs, outputs):
        if outputs[0].size == 0:
            return
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            run(inputs, outputs)

    return quiet_run


def _row_products(q: np.ndarray, w_t: np.ndarray) -> np.ndarray:
    """Exact int64 q (B, K) . w_t (K, U) through a float64 GEMM (int8 values: sums far below 2**53)."""
    return (q.astype(np.float64) @ w_t).astype(np.int64)


# ---------------------------------------------------------------------------------------------------------
# FULLY_CONNECTED


def fully_connected(node: Node, inp: TensorInfo, flt: TensorInfo, bias: TensorInfo | None, out: TensorInfo,
                    batches: int, depth: int, units: int):
    """LiteRT's EvalHybridDense; the caller (conv.prepare_fully_connected) set the output shape."""
    _float_output(node, out)
    w = _int8_weights(node, flt)  # (units, depth)
    per_channel = _channel_scales(node, flt, units, 0)
    b = _float_bias(node, bias, units)
    act = float_activation(node, node.options.get("fused_activation_function", "NONE") or "NONE")
    asymmetric = bool(node.options.get("asymmetric_quantize_inputs", False))
    w_t = np.ascontiguousarray(w.T.astype(np.float64))  # (depth, units)
    row_sums = w.astype(np.int64).sum(axis=1)  # (units,)
    w_scale = _F32(flt.s)

    def run(inputs, outputs):
        x = inputs[0].reshape(batches, depth)
        y = np.empty((batches, units), np.float32)
        y[...] = b
        if x.any():
            q, scale, zp = batch_quantize_floats(x, asymmetric)
            dot = _row_products(q, w_t) - zp[:, None] * row_sums
            if per_channel is None:
                factor = (scale * w_scale)[:, None]  # float32 per row
            else:
                factor = scale[:, None] * per_channel[None, :]
            y += dot.astype(np.float32) * factor
        outputs[0][...] = (y if act is None else act(y).astype(np.float32)).reshape(outputs[0].shape)

    return _quiet(run)


# ---------------------------------------------------------------------------------------------------------
# CONV_2D and DEPTHWISE_CONV_2D


def _window_view(buf: np.ndarray, oh: int, ow: int, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int):
    """The (n, oh, ow, kh, kw, c) windows of a padded (n, H, W, c) buffer."""
    st = buf.strides
    n, c = buf.shape[0], buf.shape[3]
    return as_strided(buf, shape=(n, oh, ow, kh, kw, c),
                      strides=(st[0], st[1] * sh, st[2] * sw, st[1] * dh, st[2] * dw, st[3]), writeable=False)


class _CenteredImage:
    """A prepare-time float64 buffer (n, need_h, need_w, c) holding q - zp per image inside a border of zeros:
    LiteRT's hybrid convolutions skip taps outside the image (they add nothing)."""

    def __init__(self, n, h, w, c, pad_top, pad_left, need_h, need_w):
        self.buf = np.zeros((n, max(need_h, 1), max(need_w, 1), c), np.float64)
        self.hc = max(0, min(h, need_h - pad_top))
        self.wc = max(0, min(w, need_w - pad_left))
        self.dst = self.buf[:, pad_top:pad_top + self.hc, pad_left:pad_left + self.wc, :]

    def fill(self, q: np.ndarray, zp: np.ndarray) -> np.ndarray:
        np.subtract(q[:, :self.hc, :self.wc, :], zp[:, None, None, None], out=self.dst, dtype=np.float64)
        return self.buf


def _image_rows(x: np.ndarray, asymmetric: bool):
    """BatchQuantizeFloats of each image (n, h, w, c) as one row: q (n, h, w, c), scale (n,), zp (n,)."""
    n = x.shape[0]
    q, scale, zp = batch_quantize_floats(x.reshape(n, -1), asymmetric)
    return q.reshape(x.shape), scale, zp


def conv_2d(node: Node, inp: TensorInfo, flt: TensorInfo, bias: TensorInfo | None, out: TensorInfo, act: str,
            geometry: tuple):
    """LiteRT's hybrid CONV_2D: EvalHybrid (per-tensor scale: symmetric) or EvalHybridPerChannel (per-channel
    scales that differ, or groups: asymmetric). ``geometry``: (oh, pad_top, ow, pad_left, sh, sw, dh, dw, groups),
    the output shape already set by conv.prepare_conv_2d."""
    oh, pt, ow, pl, sh, sw, dh, dw, groups = geometry
    _float_output(node, out)
    n, h, w, c = inp.shape
    o, kh, kw, cg = flt.shape
    wv = _int8_weights(node, flt)
    scales = np.asarray(flt.scale, dtype=np.float32).ravel()
    per_channel = flt.type in ("INT8", "INT4") and scales.size > 1 and bool((scales != scales[0]).any())
    if per_channel or groups != 1:
        if flt.type not in ("INT8", "INT4"):
            raise node.unsupported("hybrid grouped CONV_2D needs INT8 weights (LiteRT's per-channel kernel)")
        pcs = _channel_scales(node, flt, o, 0)
        if pcs is None:
            raise node.unsupported(f"hybrid grouped CONV_2D: weights '{flt.name}' have one scale for {o} filters; "
                                   "LiteRT's per-channel hybrid kernel needs one scale per filter")
    b = _float_bias(node, bias, o)
    clamp = float_clamp(act)
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    image = _CenteredImage(n, h, w, c, pt, pl, need_h, need_w)
    windows = _window_view(image.buf, oh, ow, kh, kw, sh, sw, dh, dw)
    per_group = o // groups
    k = kh * kw * cg
    w_mats = [np.ascontiguousarray(wv[g * per_group:(g + 1) * per_group].reshape(per_group, k).T.astype(np.float64))
              for g in range(groups)]

    def accumulate(q, zp):
        """Exact int64 (n, oh, ow, o) sums of w * (q - zp) over the taps inside the image."""
        image.fill(q, zp)
        if groups == 1:
            acc = windows.reshape(n * oh * ow, k) @ w_mats[0]
        else:
            acc = np.concatenate([windows[..., g * cg:(g + 1) * cg].reshape(n * oh * ow, k) @ w_mats[g]
                                  for g in range(groups)], axis=1)
        return acc.astype(np.int64).reshape(n, oh, ow, o)

    if per_channel or groups != 1:
        def run_per_channel(inputs, outputs):
            q, scale, zp = _image_rows(inputs[0], True)
            y = (accumulate(q, zp).astype(np.float32) * pcs) * scale[:, None, None, None]
            y += b
            if clamp is not None:
                clip_into(y, y, clamp[0], clamp[1])
            outputs[0][...] = y

        return _quiet(run_per_channel)

    w_scale = _F32(scales[0])

    def run(inputs, outputs):
        q, scale, zp = _image_rows(inputs[0], False)
        factor = (scale * w_scale).astype(np.float32)[:, None, None, None]
        y = accumulate(q, zp).astype(np.float32) * factor
        y += b
        if clamp is not None:
            clip_into(y, y, clamp[0], clamp[1])
        outputs[0][...] = y

    return _quiet(run)


def depthwise_conv_2d(node: Node, inp: TensorInfo, flt: TensorInfo, bias: TensorInfo | None, out: TensorInfo,
                      act: str, geometry: tuple):
    """LiteRT's DepthwiseConvHybridPerChannel. ``geometry``: (oh, pad_top, ow, pad_left, sh, sw, dh, dw,
    multiplier), the output shape already set by conv.prepare_depthwise_conv_2d."""
    oh, pt, ow, pl, sh, sw, dh, dw, mult = geometry
    _float_output(node, out)
    if flt.type != "INT8":
        raise node.unsupported(f"hybrid DEPTHWISE_CONV_2D takes INT8 weights (LiteRT), not {flt.type}")
    n, h, w, c = inp.shape
    _, kh, kw, oc = flt.shape
    wv = _int8_weights(node, flt).reshape(kh * kw, oc).astype(np.float64)
    pcs = _channel_scales(node, flt, oc, 3)
    if pcs is None and oc != 1:
        raise node.unsupported(f"hybrid DEPTHWISE_CONV_2D: weights '{flt.name}' have one scale for {oc} channels; "
                               "LiteRT's hybrid depthwise kernel needs one scale per output channel")
    if pcs is None:
        pcs = np.asarray(flt.scale, dtype=np.float32).ravel()
    b = _float_bias(node, bias, oc)
    clamp = float_clamp(act)
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    image = _CenteredImage(n, h, w, c, pt, pl, need_h, need_w)
    taps = [image.buf[:, fy * dh:fy * dh + (oh - 1) * sh + 1:sh, fx * dw:fx * dw + (ow - 1) * sw + 1:sw, :]
            for fy in range(kh) for fx in range(kw)]
    # output channel ic * mult + m reads input channel ic: repeat each input channel mult times
    spread = np.repeat(np.arange(c), mult)

    def run(inputs, outputs):
        q, scale, zp = _image_rows(inputs[0], True)
        image.fill(q, zp)
        acc = np.zeros((n, oh, ow, oc), np.float64)
        for t, view in enumerate(taps):
            acc += view[..., spread] * wv[t]
        factor = (pcs[None, :] * scale[:, None]).astype(np.float32)[:, None, None, :]  # (channel scale * image scale)
        y = acc.astype(np.int64).astype(np.float32) * factor
        y += b
        if clamp is not None:
            clip_into(y, y, clamp[0], clamp[1])
        outputs[0][...] = y

    return _quiet(run)


# ---------------------------------------------------------------------------------------------------------
# BATCH_MATMUL


def batch_matmul(node: Node, lhs: TensorInfo, rhs: TensorInfo, out: TensorInfo, adj_x: bool, adj_y: bool,
                 rows: int, depth: int, cols: int):
    """LiteRT's hybrid BatchMatMul (float LHS, constant INT8 RHS); the caller set the output shape."""
    _float_output(node, out)
    if rhs.type != "INT8":
        raise node.unsupported(f"hybrid BATCH_MATMUL takes an INT8 rhs (LiteRT), not {rhs.type}")
    r = _int8_weights(node, rhs, "rhs").astype(np.int64)
    if adj_y:
        r = np.swapaxes(r, -1, -2)  # (..., depth, cols)
    # per-channel scales: one per output column (the rhs's column axis)
    col_axis = len(rhs.shape) - (2 if adj_y else 1)
    pcs = _channel_scales(node, rhs, cols, col_axis, "rhs")
    r_f = np.ascontiguousarray(r.astype(np.float64))
    col_sums = r.sum(axis=-2).astype(np.float32)  # (..., cols): ReductionSumVector of the transposed rhs
    r_scale = _F32(rhs.s)
    asymmetric = bool(node.options.get("asymmetric_quantize_inputs", False))

    def run(inputs, outputs):
        x = inputs[0]
        if adj_x:
            x = np.swapaxes(x, -1, -2)  # (..., rows, depth)
        lead = x.shape[:-2]
        q, scale, zp = batch_quantize_floats(np.ascontiguousarray(x).reshape(-1, depth), asymmetric)
        q = q.reshape(*lead, rows, depth)
        scale = scale.reshape(*lead, rows, 1)
        zp = zp.reshape(*lead, rows, 1)
        total = np.matmul(q.astype(np.float64), r_f).astype(np.int64)  # (..., rows, cols) broadcast
        # LiteRT: total -= row_sum * (float)offset, in float, truncated back to int32
        total = (total.astype(np.float32) - col_sums[..., None, :] * zp.astype(np.float32)).astype(np.int32)
        factor = scale * r_scale if pcs is None else scale * pcs
        outputs[0][...] = (factor.astype(np.float32) * total.astype(np.float32)).reshape(outputs[0].shape)

    return _quiet(run)


# ---------------------------------------------------------------------------------------------------------
# SVDF


def svdf_feature(node: Node, wf: TensorInfo, batch: int, n_input: int, n_filter: int):
    """The hybrid SVDF's feature product: ``feature(x (batch, n_input)) -> (batch, n_filter)`` float32 as
    EvalHybridSVDF (zeros for an all-zero input; weights_feature per tensor)."""
    w = _int8_weights(node, wf, "weights_feature")
    if np.asarray(wf.scale).size != 1:
        raise node.unsupported(f"hybrid SVDF: weights_feature '{wf.name}' must have one scale (LiteRT)")
    asymmetric = bool(node.options.get("asymmetric_quantize_inputs", False))
    w_t = np.ascontiguousarray(w.T.astype(np.float64))
    row_sums = w.astype(np.int64).sum(axis=1)
    w_scale = _F32(wf.s)

    def feature(x):
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            return _feature(x)

    def _feature(x):
        y = np.zeros((batch, n_filter), np.float32)
        if x.any():
            q, scale, zp = batch_quantize_floats(x.reshape(batch, n_input), asymmetric)
            dot = _row_products(q, w_t) - zp[:, None] * row_sums
            y += dot.astype(np.float32) * (scale * w_scale)[:, None]
        return y

    return feature


def dequantized_weights_time(node: Node, wt: TensorInfo) -> np.ndarray:
    """weights_time as LiteRT's hybrid SVDF dequantizes it once: float32(int8 value * scale)."""
    w = _int8_weights(node, wt, "weights_time")
    return (w.astype(np.float32) * _F32(wt.s)).astype(np.float32)


def transpose_conv(node: Node, inp: TensorInfo, flt: TensorInfo, bias: TensorInfo | None, out: TensorInfo,
                   act: str, geometry: tuple):
    """LiteRT's hybrid TRANSPOSE_CONV (transpose_conv.cc EvalHybrid, reference HybridTransposeConv): FLOAT32 input,
    constant INT8 filter [o, kh, kw, cin] with one scale per output channel (one per tensor is repeated). Each batch
    image is quantized asymmetric (AsymmetricQuantizeFloats); every input element, in the input's order (y, x, c),
    scatters float32((q - zp) * w) * channel scale * image scale into the float32 output at each tap inside it;
    then the bias and the clamp. ``geometry``: (oh, pad_top, ow, pad_left, sh, sw). The float32 sums follow that
    order (taps of one element hit different outputs, so they go at once)."""
    oh, pt, ow, pl, sh, sw = geometry
    _float_output(node, out)
    if flt.type != "INT8":
        raise node.unsupported(f"hybrid TRANSPOSE_CONV takes INT8 weights (LiteRT), not {flt.type}")
    n, h, w, cin = inp.shape
    o, kh, kw, _ = flt.shape
    wv = _int8_weights(node, flt).astype(np.int32)  # (o, kh, kw, cin)
    scales = np.asarray(flt.scale, dtype=np.float32).ravel()
    if scales.size not in (1, o):
        raise node.error(f"hybrid TRANSPOSE_CONV: weights '{flt.name}' have {scales.size} scales for {o} filters")
    channel_scale = np.broadcast_to(scales, (o,)).astype(np.float32)
    b = _float_bias(node, bias, o) if bias is not None else None
    clamp = float_clamp(act)
    taps = np.ascontiguousarray(wv.transpose(3, 1, 2, 0))  # (cin, kh, kw, o)
    # each input position's window in a padded output: [y*sh, y*sh+kh) x [x*sw, x*sw+kw), cropped at pt / pl after
    full_h, full_w = max((h - 1) * sh + kh, pt + oh), max((w - 1) * sw + kw, pl + ow)

    def run(inputs, outputs):
        q, image_scale, zp = _image_rows(np.asarray(inputs[2], np.float32), True)
        centered = q.astype(np.int32) - zp.astype(np.int32)[:, None, None, None]  # (n, h, w, cin)
        sf = image_scale.astype(np.float32)[:, None, None, None]
        acc = np.zeros((n, full_h, full_w, o), np.float32)
        inside = np.zeros((full_h, full_w), bool)
        inside[pt:pt + oh, pl:pl + ow] = True
        for y in range(h):
            for x in range(w):
                window = (slice(None), slice(y * sh, y * sh + kh), slice(x * sw, x * sw + kw))
                keep = inside[window[1], window[2]][None, :, :, None]
                for c in range(cin):
                    prod = centered[:, y, x, c][:, None, None, None] * taps[c][None]  # (n, kh, kw, o) int32
                    term = (prod.astype(np.float32) * channel_scale) * sf
                    acc[window] += np.where(keep, term, np.float32(0))
        y_out = acc[:, pt:pt + oh, pl:pl + ow, :]
        if b is not None:
            y_out = y_out + b
        if clamp is not None:
            y_out = np.clip(y_out, clamp[0], clamp[1])
        outputs[0][...] = y_out

    return _quiet(run)
