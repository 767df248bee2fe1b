"""Convolutions and matrix products: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV, BATCH_MATMUL.

Integer results follow TFLite Micro's reference kernels bit for bit; the speed comes from doing the same
arithmetic with whole-array numpy operations:

* Integer dot products run as float64 GEMMs. Every product of an 8-bit weight with a 16-bit (offset)
  activation and every sum of them over a layer's depth stays far below 2**53, so float64 BLAS returns the
  exact integer sum; it is converted to int64 before requantization.
* Zero padding: the input is copied into a buffer (made once, in prepare) whose border holds the value that
  contributes nothing once the kernel's input offset is applied (the input zero point for 8-bit kernels, 0
  for 16-bit and float kernels, whose reference loops add no offset).
* Requantization uses ``quant.Requantizer``: TFLM's MultiplyByQuantizedMultiplier prepared once per layer
  and rewritten for int64 arrays with fewer passes; it equals ``quant.multiply_by_quantized_multiplier`` on
  every int32 input.

Layout facts from the TFLM kernels: conv filters are [out, kh, kw, in/groups] (per-channel scales on dim 0),
depthwise filters [1, kh, kw, in*multiplier] (scales on dim 3), fully-connected weights [out, depth],
transpose-conv filters [out, kh, kw, in] with inputs (output_shape, weights, input, [bias]).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from edge_sdk.runtime.kernels import hybrid, quant
from edge_sdk.runtime.kernels.node import Node, TensorInfo
from edge_sdk.runtime.kernels.quant import Requantizer, check_activation, clip_into, float_clamp
from edge_sdk.runtime.kernels.shape import run_time_shape_check

# BLAS threads: the interpreter limits them once per invoke (edge_sdk.runtime.kernels.blas; one thread by default, as
# the small GEMMs here run several times slower on OpenBLAS's thread pool when the machine is busy).

_F32 = np.float32
_INT32_LIMIT = 1 << 31


# ---------------------------------------------------------------------------------------------------------
# shared pieces


def window_geometry(node: Node, padding: str, stride: int, dilation: int, in_size: int, filter_size: int):
    """TFLite's ComputeOutSize + ComputePaddingWithOffset: (output size, padding before)."""
    if padding not in ("SAME", "VALID"):
        raise node.error(f"padding {padding!r} is not SAME or VALID")
    if stride <= 0 or dilation <= 0 or filter_size <= 0:
        raise node.error(f"stride {stride}, dilation {dilation} and filter size {filter_size} must be positive")
    effective = (filter_size - 1) * dilation + 1
    if padding == "SAME":
        out = (in_size + stride - 1) // stride
    else:
        num = in_size + stride - effective
        out = num // stride if num >= 0 else -((-num) // stride)  # C division truncates
    if out <= 0 and node.window is None:  # a window (a patch, a folded PAD's conv) gives its own geometry
        raise node.error(f"window of {filter_size} (dilation {dilation}) does not fit an input of {in_size} "
                         f"with {padding} padding")
    total = max((out - 1) * stride + effective - in_size, 0)
    return out, total // 2


def patch_window(node: Node, oh: int, pt: int, ow: int, pl: int) -> tuple[int, int, int, int]:
    """The geometry a window kernel uses: its own (output height, pad top, output width, pad left), or, for a
    patch of patch-based execution, ``node.window``'s: the input is a window of the whole tensor, ``pad_top`` /
    ``pad_left`` place its first row / column relative to the first output's receptive field (never negative:
    the window starts at or before it), and out_h x out_w is the output window."""
    if node.window is None:
        return oh, pt, ow, pl
    pt, pl, oh, ow = node.window
    if min(pt, pl) < 0 or min(oh, ow) <= 0:
        raise node.error(f"patch window {node.window} is invalid")
    return oh, pt, ow, pl


def quantized_clamp(node: Node, act: str, out: TensorInfo) -> tuple[int, int]:
    if out.type not in ("INT8", "INT16"):
        raise node.unsupported(f"output type {out.type}")
    return quant.activation_range_quantized(act, out.type, out.s, out.zp)


def _f64(x) -> float:
    return float(np.float32(x))


def _conv_multipliers(node: Node, inp: TensorInfo, flt: TensorInfo, out: TensorInfo, channels: int):
    """PopulateConvolutionQuantizationParams: per-channel (input * filter / output) scales in double."""
    scales = np.asarray(flt.scale, dtype=np.float32).ravel()
    if scales.size not in (1, channels):
        raise node.error(f"filter '{flt.name}' has {scales.size} scales for {channels} output channels")
    qdim = flt.quantized_dimension
    if scales.size > 1 and not (0 <= qdim < len(flt.shape) and flt.shape[qdim] == channels):
        raise node.error(f"filter '{flt.name}' is quantized per channel along dimension {qdim} of {flt.shape}, "
                         f"which does not hold its {channels} output channels")
    in_s, out_s = _f64(inp.s), _f64(out.s)
    per = [in_s * float(s) / out_s for s in (scales if scales.size > 1 else np.repeat(scales, channels))]
    return quant.quantize_multipliers(per)


def _accumulator_may_wrap(weights: np.ndarray, max_abs_input: int, bias: np.ndarray | None) -> bool:
    """Whether some output channel's int32 accumulator could leave int32 (weights: [K, O])."""
    bound = np.abs(weights).sum(axis=0) * float(max_abs_input)
    if bias is not None:
        bound = bound + np.abs(bias.astype(np.float64))
    return bool((bound >= _INT32_LIMIT - 1).any())


def _bias_value(node: Node, bias: TensorInfo | None, channels: int, allowed: tuple[str, ...]):
    if bias is None:
        return None
    node.expect_types(bias, allowed, "bias")
    if bias.size != channels:
        raise node.error(f"bias '{bias.name}' has {bias.size} values for {channels} output channels")
    return bias


def _float_run(compute, bias: TensorInfo | None, bias_index: int, act: str):
    """Eval of a float kernel: ``compute(inputs)`` gives a fresh float32 product (channel axis last), then the
    bias (constant, or input ``bias_index``), the activation clamp and the store."""
    clamp = float_clamp(act)
    b_const = bias.data.astype(np.float32) if bias is not None and bias.is_const else None

    def run_float(inputs, outputs):
        y = compute(inputs)
        if bias is not None:
            y += b_const if b_const is not None else inputs[bias_index]
        if clamp is not None:
            clip_into(y, y, clamp[0], clamp[1])
        out = outputs[0]
        out[...] = y.reshape(out.shape)

    return run_float


class _IntOutput:
    """Bias, requantization, output offset and clamp for integer accumulators, stored into the output."""

    def __init__(self, requant: Requantizer, zp: int, lo: int, hi: int, bias: TensorInfo | None):
        self.requant, self.lo, self.hi = requant, int(lo) - int(zp), int(hi) - int(zp)
        self.zp = np.int64(zp)  # a numpy scalar: the unsafe-cast add below skips Python-int promotion
        self.has_bias = bias is not None
        self.bias = self.term = None
        if bias is not None and bias.is_const:
            self.bias = bias.data.astype(np.int64).ravel()
            self.term = requant.folded(self.bias)

    def store(self, acc: np.ndarray, inputs: list, bias_index: int, out: np.ndarray) -> None:
        """acc: exact sums (float64 from a GEMM, or integers), channel axis last."""
        acc = acc.astype(np.int64)
        term = None
        if self.has_bias:
            bias, term = self.bias, self.term
            if bias is None:
                bias = inputs[bias_index].astype(np.int64).ravel()
                term = self.requant.folded(bias)
            if term is None:
                acc += bias
        y = self.requant(acc, term)
        clip_into(y, y, self.lo, self.hi)
        np.add(y.reshape(out.shape), self.zp, out=out, casting="unsafe")


class _PaddedInput:
    """A prepare-time buffer holding the input shifted by its offset, inside a border of zeros."""

    def __init__(self, n, h, w, c, pad_top, pad_left, need_h, need_w, dtype, offset):
        self.buf = np.zeros((n, max(need_h, 1), max(need_w, 1), c), dtype=dtype)
        self.hc = max(0, min(h, need_h - pad_top))
        self.wc = max(0, min(w, need_w - pad_left))
        self.dst = self.buf[:, pad_top:pad_top + self.hc, pad_left:pad_left + self.wc, :]
        self.offset = offset
        self.whole = self.hc == h and self.wc == w
        self.dtype = dtype

    def fill(self, x: np.ndarray) -> np.ndarray:
        src = x if self.whole else x[:, :self.hc, :self.wc, :]
        if self.offset:
            np.subtract(src, self.offset, out=self.dst, dtype=self.dtype)
        else:
            self.dst[...] = src
        return self.buf


# ---------------------------------------------------------------------------------------------------------
# CONV_2D


def _conv_types(node: Node, inp: TensorInfo, flt: TensorInfo, out: TensorInfo, op: str) -> str:
    if out.type != inp.type:
        raise node.error(f"output type {out.type} differs from input type {inp.type}")
    # INT4 weights (ai-edge-quantizer's 4-bit form) arrive unpacked, one int8 value each (model.types): LiteRT's
    # conv.cc / fully_connected.cc / depthwise_conv.cc unpack them too and run their INT8 kernels on them, but
    # for a float input depthwise_conv.cc has no INT4 kernel
    pairs = {("FLOAT32", "FLOAT32"): "float", ("INT8", "INT8"): "int8", ("INT8", "INT4"): "int8",
             ("INT16", "INT8"): "int16", ("INT16", "INT4"): "int16"}
    if hybrid.is_hybrid(inp, flt) or (inp.type == "FLOAT32" and flt.type == "INT4" and op != "DEPTHWISE_CONV_2D"):
        return "hybrid"  # LiteRT's hybrid kernels (kernels/hybrid.py)
    kind = pairs.get((inp.type, flt.type))
    if kind is None:
        raise node.unsupported(f"{op} with {inp.type} input and {flt.type} weights is not supported "
                               "(supported: FLOAT32/FLOAT32, INT8/INT8, INT16/INT8, FLOAT32/INT8 and INT4 weights "
                               "wherever INT8 ones are, but a FLOAT32 DEPTHWISE_CONV_2D, as LiteRT)")
    return kind


def _filter_offset(kind: str, flt: TensorInfo) -> int:
    """The weights' zero point the int8 kernels subtract: LiteRT's uint8 kernels' *filter offset* (legacy UINT8
    models, presented as INT8 by edge_sdk.runtime.uint8, keep per-tensor weights with their own zero point);
    0 for int8 per-channel weights (symmetric) and the other kinds."""
    if kind != "int8" or flt.zero_point is None or np.size(flt.zero_point) != 1:
        return 0
    return flt.zp


def _int16_bias_is_int32(node: Node, bias: TensorInfo | None) -> bool:
    """16x8 kernels accumulate in int32 when the bias (or, without one, quantized_bias_type) is INT32."""
    if bias is not None:
        return bias.type == "INT32"
    return node.options.get("quantized_bias_type", "FLOAT32") == "INT32"


def prepare_conv_2d(node: Node):
    node.expect_counts((2, 3), 1)
    inp, flt, out = node.input(0), node.input(1), node.outputs[0]
    bias = node.inputs[2] if node.has_input(2) else None
    kind = _conv_types(node, inp, flt, out, "CONV_2D")
    if len(inp.shape) != 4 or len(flt.shape) != 4:
        raise node.error(f"input {inp.shape} and filter {flt.shape} must both be 4-D")
    opts = node.options
    act = check_activation(node)
    n, h, w, c = inp.shape
    o, kh, kw, cg = flt.shape
    if cg <= 0 or c % cg:
        raise node.error(f"input depth {c} is not a multiple of the filter depth {cg}")
    groups = c // cg
    if o % groups:
        raise node.error(f"{o} filters cannot be split into {groups} groups")
    sh, sw = int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))
    dh, dw = int(opts.get("dilation_h_factor", 1)), int(opts.get("dilation_w_factor", 1))
    oh, pt = window_geometry(node, opts.get("padding", "SAME"), sh, dh, h, kh)
    ow, pl = window_geometry(node, opts.get("padding", "SAME"), sw, dw, w, kw)
    oh, pt, ow, pl = patch_window(node, oh, pt, ow, pl)
    node.set_output_shape(0, (n, oh, ow, o))
    if kind == "hybrid":
        return hybrid.conv_2d(node, inp, flt, bias, out, act, (oh, pt, ow, pl, sh, sw, dh, dw, groups))

    if kind == "int16":
        bias = _bias_value(node, bias, o, ("INT32", "INT64"))
    elif kind == "int8":
        bias = _bias_value(node, bias, o, ("INT32",))
    else:
        bias = _bias_value(node, bias, o, ("FLOAT32",))

    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    ops_per_group = o // groups
    k = kh * kw * cg
    m = n * oh * ow
    dtype = np.float32 if kind == "float" else np.float64

    if kind == "int8":
        node.expect_quantized(inp, flt, out)
        offset = inp.zp
    else:
        offset = 0
        if kind == "int16":
            node.expect_quantized(inp, flt, out)
    padded = _PaddedInput(n, h, w, c, pt, pl, need_h, need_w, dtype, offset)
    buf = padded.buf
    st = buf.strides
    window = as_strided(buf, shape=(n, oh, ow, kh, kw, c),
                        strides=(st[0], st[1] * sh, st[2] * sw, st[1] * dh, st[2] * dw, st[3]), writeable=False)
    pointwise = kh == kw == 1 and sh == sw == 1 and groups == 1 and padded.whole and need_h == h and need_w == w

    filter_offset = _filter_offset(kind, flt)

    def weights_matrix(wv: np.ndarray) -> list[np.ndarray]:
        # per group: [kh*kw*cg, o/groups]
        wv = np.asarray(wv).astype(dtype) - filter_offset
        return [np.ascontiguousarray(wv[g * ops_per_group:(g + 1) * ops_per_group].reshape(ops_per_group, k).T)
                for g in range(groups)]

    w_const = weights_matrix(flt.data) if flt.is_const else None

    def patches(x):
        padded.fill(x)
        if pointwise:
            return [buf.reshape(m, c)]
        if groups == 1:
            return [window.reshape(m, k)]
        return [window[..., g * cg:(g + 1) * cg].reshape(m, k) for g in range(groups)]

    def gemm(x, wv):
        wm = w_const if w_const is not None else weights_matrix(wv)
        cols = patches(x)
        if groups == 1:
            return cols[0] @ wm[0]
        return np.concatenate([cols[g] @ wm[g] for g in range(groups)], axis=1)

    if kind == "float":
        return _float_run(lambda inputs: gemm(inputs[0], inputs[1]), bias, 2, act)

    lo, hi = quantized_clamp(node, act, out)
    mult, shift = _conv_multipliers(node, inp, flt, out, o)
    wide = kind == "int16" and not _int16_bias_is_int32(node, bias)
    max_in = 255 if kind == "int8" else 32768
    if w_const is not None and (bias is None or bias.is_const):
        group_bias = [None if bias is None else bias.data[g * ops_per_group:(g + 1) * ops_per_group]
                      for g in range(groups)]
        wrap = (not wide) and any(_accumulator_may_wrap(wm, max_in, gb) for wm, gb in zip(w_const, group_bias))
    else:
        wrap = not wide
    requant = Requantizer(mult, shift, wide=wide, wrap=wrap)
    # the 16x8 reference adds no output offset
    store = _IntOutput(requant, out.zp if kind == "int8" else 0, lo, hi, bias).store

    def run_int(inputs, outputs):
        store(gemm(inputs[0], inputs[1]), inputs, 2, outputs[0])

    return run_int


def macs_conv_2d(node: Node) -> int:
    o, kh, kw, cg = node.inputs[1].shape
    n, oh, ow, _ = node.outputs[0].shape
    return int(n * oh * ow * o * kh * kw * cg)


# ---------------------------------------------------------------------------------------------------------
# DEPTHWISE_CONV_2D


def prepare_depthwise_conv_2d(node: Node):
    node.expect_counts((2, 3), 1)
    inp, flt, out = node.input(0), node.input(1), node.outputs[0]
    bias = node.inputs[2] if node.has_input(2) else None
    kind = _conv_types(node, inp, flt, out, "DEPTHWISE_CONV_2D")
    if len(inp.shape) != 4 or len(flt.shape) != 4:
        raise node.error(f"input {inp.shape} and filter {flt.shape} must both be 4-D")
    opts = node.options
    act = check_activation(node)
    n, h, w, c = inp.shape
    one, kh, kw, oc = flt.shape
    if one != 1:
        raise node.error(f"depthwise filter {flt.shape} must have 1 as its first dimension")
    if c <= 0 or oc % c:
        raise node.error(f"filter channels {oc} are not a multiple of the input channels {c}")
    mult_d = oc // c
    sh, sw = int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))
    dh, dw = int(opts.get("dilation_h_factor", 1)), int(opts.get("dilation_w_factor", 1))
    oh, pt = window_geometry(node, opts.get("padding", "SAME"), sh, dh, h, kh)
    ow, pl = window_geometry(node, opts.get("padding", "SAME"), sw, dw, w, kw)
    oh, pt, ow, pl = patch_window(node, oh, pt, ow, pl)
    node.set_output_shape(0, (n, oh, ow, oc))
    if kind == "hybrid":
        return hybrid.depthwise_conv_2d(node, inp, flt, bias, out, act, (oh, pt, ow, pl, sh, sw, dh, dw, mult_d))

    if kind == "int16":
        # TFLM's 16x8 depthwise reads the bias as int64 only.
        bias = _bias_value(node, bias, oc, ("INT64",))
        node.expect_quantized(inp, flt, out)
        offset, dtype = 0, np.int64
    elif kind == "int8":
        bias = _bias_value(node, bias, oc, ("INT32",))
        node.expect_quantized(inp, flt, out)
        offset, dtype = inp.zp, np.int32
    else:
        bias = _bias_value(node, bias, oc, ("FLOAT32",))
        offset, dtype = 0, np.float32

    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    padded = _PaddedInput(n, h, w, c, pt, pl, need_h, need_w, dtype, offset)
    buf = padded.buf
    rows = mult_d == 1 and sw == 1
    if rows:
        # Unit width stride: a tap is a contiguous run of ow*c values per output row, so the per-tap
        # multiply-adds run over long rows even when the layer has few channels.
        flat = buf.reshape(buf.shape[0], buf.shape[1], buf.shape[2] * c)
        taps = [flat[:, fy * dh:fy * dh + (oh - 1) * sh + 1:sh, fx * dw * c:fx * dw * c + ow * c]
                for fy in range(kh) for fx in range(kw)]
        acc = np.zeros((n, oh, ow * c), dtype=dtype)
    else:
        taps = [buf[:, fy * dh:fy * dh + (oh - 1) * sh + 1:sh, fx * dw:fx * dw + (ow - 1) * sw + 1:sw, :]
                for fy in range(kh) for fx in range(kw)]
        if mult_d > 1:
            taps = [t[..., None] for t in taps]
        acc = np.zeros((n, oh, ow, c, mult_d) if mult_d > 1 else (n, oh, ow, c), dtype=dtype)
    tmp = np.empty_like(acc)

    def lay(v, dt):
        """A per-output-channel vector in the accumulator's trailing layout."""
        v = np.asarray(v).astype(dt).ravel()
        if rows:
            return np.tile(v, ow)
        return v.reshape(c, mult_d) if mult_d > 1 else v

    filter_offset = _filter_offset(kind, flt)

    def tap_weights(wv):
        wv = np.asarray(wv).reshape(kh * kw, oc).astype(dtype) - filter_offset  # [taps, oc]
        return [lay(wv[t], dtype) for t in range(kh * kw)]

    w_const = tap_weights(flt.data) if flt.is_const else None
    bias_dtype = dtype if kind != "int8" else np.int32
    b_const = lay(bias.data, bias_dtype) if bias is not None and bias.is_const else None

    def accumulate(inputs):
        padded.fill(inputs[0])
        wt = w_const if w_const is not None else tap_weights(inputs[1])
        if bias is None:
            acc[...] = 0
        else:
            acc[...] = b_const if b_const is not None else lay(inputs[2], bias_dtype)
        for view, wv in zip(taps, wt):
            np.multiply(view, wv, out=tmp)
            np.add(acc, tmp, out=acc)
        return acc

    if kind == "float":
        clamp = float_clamp(act)

        def run_float(inputs, outputs):
            a = accumulate(inputs)
            if clamp is not None:
                clip_into(a, a, clamp[0], clamp[1])
            outputs[0][...] = a.reshape(outputs[0].shape)

        return run_float

    lo, hi = quantized_clamp(node, act, out)
    mult, shift = _conv_multipliers(node, inp, flt, out, oc)
    # The accumulator's (channel, multiplier) axes flatten to the output channel order ic * M + m.
    requant = Requantizer(mult, shift, wide=(kind == "int16"))
    store = _IntOutput(requant, out.zp if kind == "int8" else 0, lo, hi, None).store  # bias: in accumulate

    def run_int(inputs, outputs):
        store(accumulate(inputs).reshape(n, oh, ow, oc), inputs, 2, outputs[0])

    return run_int


def macs_depthwise_conv_2d(node: Node) -> int:
    _, kh, kw, oc = node.inputs[1].shape
    n, oh, ow, _ = node.outputs[0].shape
    return int(n * oh * ow * oc * kh * kw)


# ---------------------------------------------------------------------------------------------------------
# FULLY_CONNECTED


def _dense_weights(node: Node, flt: TensorInfo) -> TensorInfo:
    """A sparse constant filter (TFLite SparsityParameters) as its dense twin, for the dense paths; as
    firmware_c's edge_densify_weights."""
    import dataclasses

    from edge_sdk.runtime.kernels.shape import densify

    if flt.data is None:
        raise node.error(f"weights '{flt.name}' are sparse but not a constant")
    try:
        dense = densify(flt.data, flt.shape, flt.sparsity)
    except ValueError as exc:
        raise node.error(f"sparse weights '{flt.name}': {exc}") from None
    return dataclasses.replace(flt, data=dense.reshape(flt.shape), sparsity=None)


def prepare_fully_connected(node: Node):
    node.expect_counts((2, 3), 1)
    inp, flt, out = node.input(0), node.input(1), node.outputs[0]
    if flt.sparsity is not None:  # LiteRT reads sparse weights here (a pruned model's CSR / 1x4-block FC): dense once
        flt = node.inputs[1] = _dense_weights(node, flt)
    bias = node.inputs[2] if node.has_input(2) else None
    opts = node.options
    if opts.get("weights_format", "DEFAULT") not in ("DEFAULT", None):
        raise node.unsupported(f"weights_format {opts.get('weights_format')} is not supported (only DEFAULT)")
    kind = _conv_types(node, inp, flt, out, "FULLY_CONNECTED")
    if kind == "hybrid":
        act = node.options.get("fused_activation_function", "NONE") or "NONE"  # hybrid: any activation (LiteRT)
    else:
        act = check_activation(node)
    if len(flt.shape) != 2:
        raise node.error(f"weights {flt.shape} must be 2-D [units, depth]")
    units, depth = flt.shape
    if depth == 0:
        return _fully_connected_of_depth_zero(node, inp, units)
    if depth < 0 or inp.size % depth:
        raise node.error(f"input of {inp.size} values cannot be split into rows of the weights' depth {depth}")
    batches = inp.size // depth
    if opts.get("keep_num_dims"):
        if not inp.shape or inp.shape[-1] != depth:
            raise node.error(f"keep_num_dims needs the input's last dimension ({inp.shape}) to equal {depth}")
        shape = tuple(inp.shape[:-1]) + (units,)
    else:
        shape = (batches, units)
        declared = tuple(out.shape or ())
        # TFLM keeps the model's declared output shape; keep it when it holds the same values.
        if declared and declared[-1] == units and int(np.prod(declared)) == batches * units:
            shape = declared
    node.set_output_shape(0, shape)
    if kind == "hybrid":
        return hybrid.fully_connected(node, inp, flt, bias, out, batches, depth, units)

    per_channel = kind != "float" and flt.quantized and flt.scale.size > 1
    if kind == "float":
        bias = _bias_value(node, bias, units, ("FLOAT32",))
        dtype = np.float32
    else:
        node.expect_quantized(inp, flt, out)
        bias = _bias_value(node, bias, units, ("INT32",) if kind == "int8" else ("INT32", "INT64"))
        dtype = np.float64
    f_off = 0 if kind == "float" or per_channel else -flt.zp

    def weights_matrix(wv):
        wv = np.asarray(wv).astype(dtype)
        if f_off:
            wv = wv + f_off
        return np.ascontiguousarray(wv.T)

    w_const = weights_matrix(flt.data) if flt.is_const else None

    if kind == "float":
        def product(inputs):
            wm = w_const if w_const is not None else weights_matrix(inputs[1])
            return inputs[0].reshape(batches, depth) @ wm

        return _float_run(product, bias, 2, act)

    lo, hi = quantized_clamp(node, act, out)
    in_s, out_s = _f64(inp.s), _f64(out.s)
    if per_channel:
        scales = np.asarray(flt.scale, dtype=np.float32).ravel()
        if scales.size != units:
            raise node.error(f"weights '{flt.name}' have {scales.size} scales for {units} units")
        mult, shift = quant.quantize_multipliers([in_s * float(s) / out_s for s in scales])
    else:
        if bias is not None and bias.quantized:
            product = in_s * _f64(flt.s)
            if abs(product - _f64(bias.s)) / out_s > 0.02:
                raise node.error(f"bias scale {bias.s} is too far from input scale x weight scale {product}")
        real = float(_F32(_F32(inp.s) * _F32(flt.s))) / out_s
        mult, shift = quant.quantize_multipliers([real])
    wide = kind == "int16" and not _int16_bias_is_int32(node, bias)
    if w_const is not None and (bias is None or bias.is_const):
        wrap = not wide and _accumulator_may_wrap(w_const, 255 if kind == "int8" else 65535,
                                                  None if bias is None else bias.data)
    else:
        wrap = not wide
    requant = Requantizer(mult, shift, wide=wide, wrap=wrap)
    in_off = inp.zp
    store = _IntOutput(requant, out.zp, lo, hi, bias).store

    def run_int(inputs, outputs):
        wm = w_const if w_const is not None else weights_matrix(inputs[1])
        x = inputs[0].reshape(batches, depth)
        xf = np.subtract(x, in_off, dtype=np.float64) if in_off else x.astype(np.float64)
        store(xf @ wm, inputs, 2, outputs[0])

    return run_int


def _fully_connected_of_depth_zero(node: Node, inp: TensorInfo, units: int):
    """Weights of depth 0 ([units, 0]): LiteRT sizes the output from the input's leading dimensions (input
    (..., 0) -> (prod(...), units), or (..., units) with keep_num_dims) and fills it with zero bytes, whatever the
    bias, activation or output zero point (its fully_connected.cc); so do we."""
    lead = tuple(inp.shape[:-1]) if inp.shape else ()
    keep = bool(node.options.get("keep_num_dims"))
    node.set_output_shape(0, lead + (units,) if keep else (int(np.prod(lead, dtype=np.int64)), units))

    def run_zero_bytes(inputs, outputs):
        outputs[0][...] = 0

    return run_zero_bytes


def macs_fully_connected(node: Node) -> int:
    units, depth = node.inputs[1].shape[-2:]
    out = node.outputs[0].shape
    batches = int(np.prod(out[:-1])) if len(out) > 1 else 1
    return int(batches * units * depth)


# ---------------------------------------------------------------------------------------------------------
# TRANSPOSE_CONV


def prepare_transpose_conv(node: Node):
    """TRANSPOSE_CONV; an output_shape computed from data (not known at prepare) must hold the declared output shape
    prepare sized the output with: checked at every invoke (a DataError naming the node and the tensor)."""
    run = _transpose_conv_eval(node)
    if node.input(0).known is not None:
        return run
    check = run_time_shape_check(node, 0, tuple(node.outputs[0].shape))

    def checked(inputs, outputs):
        check(inputs[0])
        run(inputs, outputs)

    return checked


def _transpose_conv_eval(node: Node):
    node.expect_counts((3, 4), 1)
    shape_t, flt, inp, out = node.input(0), node.input(1), node.input(2), node.outputs[0]
    bias = node.inputs[3] if node.has_input(3) else None
    if flt.type == "INT4":
        raise node.unsupported("INT4 weights are not supported by TRANSPOSE_CONV (LiteRT and TFLite Micro have none)")
    kind = _conv_types(node, inp, flt, out, "TRANSPOSE_CONV")
    if len(inp.shape) != 4 or len(flt.shape) != 4:
        raise node.error(f"input {inp.shape} and filter {flt.shape} must both be 4-D")
    opts = node.options
    act = check_activation(node)
    n, h, w, cin = inp.shape
    o, kh, kw, fc = flt.shape
    if fc != cin:
        raise node.error(f"filter depth {fc} differs from input depth {cin}")
    if shape_t.known is not None:  # a constant, or shape arithmetic known at prepare
        target = tuple(int(v) for v in np.asarray(shape_t.known).ravel())
    elif out.shape and all(d > 0 for d in out.shape):
        target = tuple(out.shape)  # output_shape computed from data: checked at every invoke (prepare_transpose_conv)
    else:
        raise node.unsupported(f"output_shape '{shape_t.name}' is computed at run time from data and the model "
                               "declares no usable output shape")
    if len(target) != 4 or target[0] != n or target[3] != o:
        raise node.error(f"output_shape {target} does not fit batch {n} and {o} filters")
    node.set_output_shape(0, target)
    _, oh, ow, _ = target
    sh, sw = int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))
    _, pt = window_geometry(node, opts.get("padding", "SAME"), sh, 1, oh, kh)
    _, pl = window_geometry(node, opts.get("padding", "SAME"), sw, 1, ow, kw)
    if h * sh + kh > 0x7FFFFFFF or w * sw + kw > 0x7FFFFFFF:  # as the C kernel: no scatter buffer of that size
        raise node.error(f"strides {sh} x {sw} too large for an input of {h} x {w}")

    if kind == "hybrid":
        return hybrid.transpose_conv(node, inp, flt, bias, out, act, (oh, pt, ow, pl, sh, sw))
    if kind == "int16":
        # TFLM widens an int16 bias to int64 and reads any other as int64.
        bias = _bias_value(node, bias, o, ("INT64", "INT16"))
        node.expect_quantized(inp, flt, out)
        dtype, offset = np.float64, 0
    elif kind == "int8":
        bias = _bias_value(node, bias, o, ("INT32",))
        node.expect_quantized(inp, flt, out)
        dtype, offset = np.float64, inp.zp
    else:
        bias = _bias_value(node, bias, o, ("FLOAT32",))
        dtype, offset = np.float32, 0

    full_h = max((h - 1) * sh + kh, pt + oh)
    full_w = max((w - 1) * sw + kw, pl + ow)
    scratch = np.zeros((n, full_h, full_w, o), dtype=dtype)
    tap_slices = [(fy, fx, (slice(None), slice(fy, fy + (h - 1) * sh + 1, sh), slice(fx, fx + (w - 1) * sw + 1, sw)))
                  for fy in range(kh) for fx in range(kw)]
    crop = scratch[:, pt:pt + oh, pl:pl + ow, :]

    def weights_matrix(wv):  # [cin, kh*kw*o]
        wv = np.asarray(wv).astype(dtype)
        return np.ascontiguousarray(wv.transpose(3, 1, 2, 0).reshape(cin, kh * kw * o))

    w_const = weights_matrix(flt.data) if flt.is_const else None

    def accumulate(inputs):
        x = inputs[2].reshape(n * h * w, cin)
        xf = np.subtract(x, offset, dtype=dtype) if offset else x.astype(dtype, copy=False)
        wm = w_const if w_const is not None else weights_matrix(inputs[1])
        cols = (xf @ wm).reshape(n, h, w, kh, kw, o)
        scratch[...] = 0
        for fy, fx, sl in tap_slices:
            scratch[sl] += cols[:, :, :, fy, fx, :]
        return crop

    if kind == "float":
        return _float_run(lambda inputs: accumulate(inputs).copy(), bias, 3, act)

    lo, hi = quantized_clamp(node, act, out)
    mult, shift = _conv_multipliers(node, inp, flt, out, o)
    wide = kind == "int16"
    requant = Requantizer(mult, shift, wide=wide, wrap=not wide)
    store = _IntOutput(requant, out.zp if kind == "int8" else 0, lo, hi, bias).store

    def run_int(inputs, outputs):
        store(accumulate(inputs), inputs, 3, outputs[0])

    return run_int


def macs_transpose_conv(node: Node) -> int:
    o, kh, kw, cin = node.inputs[1].shape
    n, h, w, _ = node.inputs[2].shape
    return int(n * h * w * cin * kh * kw * o)


# ---------------------------------------------------------------------------------------------------------
# BATCH_MATMUL


def prepare_batch_matmul(node: Node):
    node.expect_counts(2, 1)
    lhs, rhs, out = node.input(0), node.input(1), node.outputs[0]
    opts = node.options
    kind = "hybrid" if lhs.type == "FLOAT32" and rhs.type in hybrid.WEIGHT_TYPES else lhs.type
    if lhs.type == "FLOAT32" and rhs.type == "INT4":
        raise node.unsupported("hybrid BATCH_MATMUL with an INT4 rhs is not supported (LiteRT: INT8)")
    for t in (lhs, rhs, out) if kind != "hybrid" else ():
        node.expect_types(t, ("FLOAT32", "INT8", "INT16"), "tensor")
    if kind != "hybrid" and not lhs.type == rhs.type == out.type:
        raise node.error(f"lhs {lhs.type}, rhs {rhs.type} and output {out.type} must have one type")
    lr, rr = len(lhs.shape), len(rhs.shape)
    if not (2 <= lr <= 5 and 2 <= rr <= 5):
        raise node.error(f"operands of rank {lr} and {rr}; BATCH_MATMUL takes ranks 2 to 5")
    adj_x, adj_y = bool(opts.get("adj_x")), bool(opts.get("adj_y"))
    rank = max(lr, rr)
    ls = (1,) * (rank - lr) + tuple(lhs.shape)
    rs = (1,) * (rank - rr) + tuple(rhs.shape)
    batch = []
    for a, b in zip(ls[:-2], rs[:-2]):
        if a != b and a != 1 and b != 1:
            raise node.error(f"batch dimensions of {lhs.shape} and {rhs.shape} do not broadcast")
        batch.append(b if a == 1 else a)
    rows, k_l = (ls[-1], ls[-2]) if adj_x else (ls[-2], ls[-1])
    k_r, cols = (rs[-1], rs[-2]) if adj_y else (rs[-2], rs[-1])
    if k_l != k_r:
        raise node.error(f"inner dimensions differ: {k_l} (lhs {lhs.shape}) and {k_r} (rhs {rhs.shape})")
    shape = tuple(batch) + (rows, cols)
    node.set_output_shape(0, shape)
    if kind == "hybrid":
        return hybrid.batch_matmul(node, lhs, rhs, out, adj_x, adj_y, rows, k_l, cols)
    dtype = np.float32 if kind == "FLOAT32" else np.float64
    l_off = r_off = 0
    if kind != "FLOAT32":
        node.expect_quantized(lhs, rhs, out)
        if lhs.scale.size > 1 or rhs.scale.size > 1:
            raise node.unsupported("per-channel quantized BATCH_MATMUL operands are not supported")
        l_off, r_off = lhs.zp, rhs.zp
        if kind == "INT16" and (lhs.zp or rhs.zp or out.zp):
            raise node.error("INT16 BATCH_MATMUL needs zero points of 0")

    def operand(v, off, adj):
        v = np.asarray(v)
        v = np.subtract(v, off, dtype=dtype) if off else v.astype(dtype, copy=False)
        return np.swapaxes(v, -1, -2) if adj else v

    r_const = np.ascontiguousarray(operand(rhs.data, r_off, adj_y)) if rhs.is_const else None

    def product(inputs):
        a = operand(inputs[0], l_off, adj_x)
        b = r_const if r_const is not None else operand(inputs[1], r_off, adj_y)
        return np.matmul(a, b)

    if kind == "FLOAT32":
        def run_float(inputs, outputs):
            outputs[0][...] = product(inputs).reshape(outputs[0].shape)

        return run_float

    real = float(_F32(_F32(lhs.s) * _F32(rhs.s))) / _f64(out.s)
    mult, shift = quant.quantize_multipliers([real])
    wide = kind == "INT16"
    requant = Requantizer(mult, shift, wide=wide, wrap=not wide)
    lo, hi = quant.TYPE_RANGES[kind]
    store = _IntOutput(requant, out.zp, lo, hi, None).store

    def run_int(inputs, outputs):
        store(product(inputs), inputs, -1, outputs[0])

    return run_int


def macs_batch_matmul(node: Node) -> int:
    out = node.outputs[0].shape
    lhs = node.inputs[0].shape
    k = lhs[-2] if node.options.get("adj_x") else lhs[-1]
    return int(np.prod(out, dtype=np.int64) * k)
