"""A benchmark zoo of our own (issue 26 point 3): models the C runtime was not tuned on, written by our own writer.

    python benchmarks/zoo.py --out DIR [--sizes 96 128 224] [--arch mobilenet_v1 ...] [--dtype float32 int8]

Six architectures, each a classifier / detector / segmenter of the kind issue 26 lists, with random seeded weights
(edge_sdk.model.builder.GraphBuilder, edge_sdk.model.writer.write_model):

  mobilenet_v1      3x3 s2 stem, 13 depthwise 3x3 + pointwise 1x1 pairs (RELU6), AVERAGE_POOL_2D, 1x1 conv head,
                    SOFTMAX (width 0.5)
  mobilenet_v2      inverted residuals (expand 1x1, depthwise 3x3, project 1x1, residual ADD; RELU6), MEAN, FC,
                    SOFTMAX (width 0.5)
  mobilenet_v3s     v3-small: HARD_SWISH, squeeze-excite (MEAN, 1x1 convs, hard sigmoid = ADD 3 + RELU6, MUL 1/6,
                    MUL), depthwise 3x3 / 5x5, MEAN, FC, SOFTMAX
  efficientnet_l0   EfficientNet-lite0: MBConv blocks (RELU6, depthwise 3x3 / 5x5, no SE), 1x1 1280 head, MEAN, FC
  blazeface         BlazeFace-style detector: 5x5 s2 stem, blaze blocks (depthwise 5x5, 1x1, residual ADD, PRELU;
                    stride 2 blocks: MAX_POOL_2D shortcut padded with PAD), two-scale heads (RESHAPE, CONCATENATION):
                    regressors [1, anchors, 16] and scores [1, anchors, 1]
  unet              U-Net-style segmenter: 3x3 conv pairs, MAX_POOL_2D down, TRANSPOSE_CONV 2x2 s2 up (deep level)
                    and RESIZE_BILINEAR + 3x3 conv up (shallow levels), CONCATENATION skips, 1x1 conv, LOGISTIC

and, outside the speed zoo (ACCURACY_ARCHS: built by name, never in the geomeans), pose_landmark: a BlazePose-
landmark-like net of un-normalized residual blocks with four heads, for float accuracy against LiteRT's reference.

float32 models are built directly; int8 ones are our converter's (converters.convert, precision "int8", int8 I/O)
from the float model with random calibration data (uniform [-1, 1], seeded); fp16w ones are the float model with
its weights stored as LiteRT's converter writes float16 weights (every MediaPipe float model: palm_detection_lite):
each float32 constant a FLOAT16 constant -> DEQUANTIZE -> its consumers, the DEQUANTIZE just before the first one;
sparse16w ones prune the large filters to 30% and store them sparse as MediaPipe's *_sparse detectors (sparse
float16 constant -> DENSIFY -> DEQUANTIZE -> CONV_2D / FULLY_CONNECTED). The writer and the converter are
deterministic, so a model is cached by content: the file name carries a hash of this file's source, the
converter's version and the spec (architecture, size, dtype, seed), under ``$EDGE_CACHE_DIR/zoo`` (resources.cache_dir),
and ``--out`` gets a copy named ``{arch}_{size}_{dtype}.tflite``.

``build(arch, size, dtype)`` returns the model's bytes, ``cached_path(...)`` its cached file; ``zoo(sizes, dtypes)``
yields (name, bytes).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ARCHS = ("mobilenet_v1", "mobilenet_v2", "mobilenet_v3s", "efficientnet_l0", "blazeface", "unet")
SIZES = (96, 128, 224)
DTYPES = ("float32", "int8")
# float32 compute with float16 weights (LiteRT's float16 quantization): built and benchmarked (c_runtime.py --zoo),
# not among DTYPES, the dtypes tests/test_bench_zoo.py holds to every peer (TFLM has no float16 DEQUANTIZE)
FP16_WEIGHTS = "fp16w"
# pruned float16 weights stored sparse, as MediaPipe's *_sparse detectors: each CONV_2D / FULLY_CONNECTED filter of
# 1,024+ weights keeps its largest 30% (by magnitude), stored CSR over its last axis -> DENSIFY -> DEQUANTIZE -> op
# (sparse_weights_model); benchmarked like fp16w, not held to TFLM (no DENSIFY there)
SPARSE_WEIGHTS = "sparse16w"
ALL_DTYPES = (*DTYPES, FP16_WEIGHTS, SPARSE_WEIGHTS)
CLASSES = 1000
CALIBRATION_SAMPLES = 8


def _same(n: int, stride: int) -> int:
    return -(-n // stride)  # SAME padding: ceil(n / stride)


class _Net:
    """A float32 NHWC graph under construction: each method appends one op and returns the output tensor id;
    ``self.shape[t]`` is tensor t's shape. Weights are He-scaled (std sqrt(2 / fan_in)) so activations stay O(1)
    through deep stacks, biases small."""

    def __init__(self, seed: int):
        from edge_sdk.model.builder import GraphBuilder

        self.g = GraphBuilder()
        self.rng = np.random.default_rng(seed)
        self.shape: dict[int, tuple[int, ...]] = {}
        self.n = 0

    def _name(self, kind: str) -> str:
        self.n += 1
        return f"{kind}_{self.n}"

    def _t(self, kind: str, shape) -> int:
        t = self.g.tensor(self._name(kind), shape, "FLOAT32")
        self.shape[t] = tuple(shape)
        return t

    def _const(self, kind: str, data) -> int:
        t = self.g.constant(self._name(kind), np.asarray(data, np.float32))
        self.shape[t] = tuple(np.shape(data))
        return t

    def _weights(self, shape, fan_in: int, gain: float = 1.0):
        return (self.rng.standard_normal(shape) * gain * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def _bias(self, n: int):
        return self.rng.uniform(-0.1, 0.1, n).astype(np.float32)

    def input(self, shape) -> int:
        t = self.g.input("input", shape, "FLOAT32")
        self.shape[t] = tuple(shape)
        return t

    def conv(self, x: int, cout: int, k: int, stride: int = 1, act: str = "NONE", gain: float = 1.0) -> int:
        b, h, w, cin = self.shape[x]
        wt = self._const("conv_w", self._weights((cout, k, k, cin), k * k * cin, gain))
        bias = self._const("conv_b", self._bias(cout))
        y = self._t("conv", (b, _same(h, stride), _same(w, stride), cout))
        self.g.op("CONV_2D", [x, wt, bias], [y], padding="SAME", stride_w=stride, stride_h=stride,
                  fused_activation_function=act)
        return y

    def dw(self, x: int, k: int, stride: int = 1, act: str = "NONE") -> int:
        b, h, w, c = self.shape[x]
        wt = self._const("dw_w", self._weights((1, k, k, c), k * k))
        bias = self._const("dw_b", self._bias(c))
        y = self._t("dw", (b, _same(h, stride), _same(w, stride), c))
        self.g.op("DEPTHWISE_CONV_2D", [x, wt, bias], [y], padding="SAME", stride_w=stride, stride_h=stride,
                  depth_multiplier=1, fused_activation_function=act)
        return y

    def tconv(self, x: int, cout: int, k: int = 2, stride: int = 2) -> int:
        b, h, w, cin = self.shape[x]
        out_shape = (b, h * stride, w * stride, cout)
        shape_t = self.g.constant(self._name("tconv_shape"), np.array(out_shape, np.int32))
        wt = self._const("tconv_w", self._weights((cout, k, k, cin), k * k * cin // (stride * stride)))
        bias = self._const("tconv_b", self._bias(cout))
        y = self._t("tconv", out_shape)
        self.g.op("TRANSPOSE_CONV", [shape_t, wt, x, bias], [y], version=3, padding="SAME", stride_w=stride,
                  stride_h=stride)
        return y

    def fc(self, x: int, units: int, gain: float = 1.0) -> int:
        b, cin = self.shape[x]
        wt = self._const("fc_w", self._weights((units, cin), cin, gain))
        bias = self._const("fc_b", self._bias(units))
        y = self._t("fc", (b, units))
        self.g.op("FULLY_CONNECTED", [x, wt, bias], [y])
        return y

    def unary(self, op: str, x: int, **options) -> int:
        y = self._t(op.lower(), self.shape[x])
        self.g.op(op, [x], [y], **options)
        return y

    def binary(self, op: str, a: int, b: int, act: str = "NONE") -> int:
        shape = np.broadcast_shapes(self.shape[a], self.shape[b])
        y = self._t(op.lower(), shape)
        self.g.op(op, [a, b], [y], fused_activation_function=act)
        return y

    def scalar(self, op: str, x: int, value: float, act: str = "NONE") -> int:
        return self.binary(op, x, self._const(op.lower() + "_c", np.full((1,), value, np.float32)), act)

    def prelu(self, x: int) -> int:
        c = self.shape[x][-1]
        alpha = self._const("prelu_a", self.rng.uniform(0.05, 0.3, (1, 1, c)))
        y = self._t("prelu", self.shape[x])
        self.g.op("PRELU", [x, alpha], [y])
        return y

    def pool(self, op: str, x: int, k: int, stride: int, padding: str = "VALID") -> int:
        b, h, w, c = self.shape[x]
        oh, ow = ((_same(h, stride), _same(w, stride)) if padding == "SAME"
                  else ((h - k) // stride + 1, (w - k) // stride + 1))
        y = self._t(op.lower(), (b, oh, ow, c))
        self.g.op(op, [x], [y], padding=padding, stride_w=stride, stride_h=stride, filter_width=k, filter_height=k,
                  fused_activation_function="NONE")
        return y

    def mean(self, x: int, keep_dims: bool) -> int:
        b, _, _, c = self.shape[x]
        axes = self.g.constant(self._name("axes"), np.array([1, 2], np.int32))
        y = self._t("mean", (b, 1, 1, c) if keep_dims else (b, c))
        self.g.op("MEAN", [x, axes], [y], keep_dims=keep_dims)
        return y

    def pad_channels(self, x: int, extra: int) -> int:
        b, h, w, c = self.shape[x]
        pads = self.g.constant(self._name("pads"), np.array([[0, 0], [0, 0], [0, 0], [0, extra]], np.int32))
        y = self._t("pad", (b, h, w, c + extra))
        self.g.op("PAD", [x, pads], [y])
        return y

    def reshape(self, x: int, shape) -> int:
        new = self.g.constant(self._name("new_shape"), np.array(shape, np.int32))
        y = self._t("reshape", tuple(shape))
        self.g.op("RESHAPE", [x, new], [y], new_shape=list(shape))
        return y

    def concat(self, xs: list[int], axis: int) -> int:
        shapes = [self.shape[x] for x in xs]
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        y = self._t("concat", out)
        self.g.op("CONCATENATION", xs, [y], axis=axis, fused_activation_function="NONE")
        return y

    def resize(self, x: int, factor: int) -> int:
        b, h, w, c = self.shape[x]
        size = self.g.constant(self._name("size"), np.array([h * factor, w * factor], np.int32))
        y = self._t("resize", (b, h * factor, w * factor, c))
        self.g.op("RESIZE_BILINEAR", [x, size], [y], align_corners=False, half_pixel_centers=True)
        return y

    def classifier_head(self, x: int, gain: float) -> int:
        logits = self.fc(self.mean(x, keep_dims=False), CLASSES, gain)
        return self.unary("SOFTMAX", logits, beta=1.0)

    def build(self, *outputs: int, description: str) -> bytes:
        from edge_sdk.model.writer import write_model

        self.g.output(*outputs)
        return write_model(self.g.build(description=description))


# The classifier heads' weight gain: logits with a standard deviation of about 2 at 96x96 (measured with gain 0.5:
# 0.19 / 0.83 / 0.072 / 0.78), so the softmax is not flat -- a flat one has a tiny logit scale in int8, on which
# LiteRT's reference int8 SOFTMAX aborts (seen: mobilenet_v3s before this gain)
HEAD_GAIN = {"mobilenet_v1": 5.0, "mobilenet_v2": 1.2, "mobilenet_v3s": 14.0, "efficientnet_l0": 1.3}


def _ch(c: float, width: float) -> int:
    return max(8, int(c * width + 4) // 8 * 8)


def mobilenet_v1(net: _Net, x: int, width: float = 0.5) -> list[int]:
    x = net.conv(x, _ch(32, width), 3, 2, "RELU6")
    for cout, stride in ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), *[(512, 1)] * 5, (1024, 2),
                         (1024, 1)):
        x = net.dw(x, 3, stride, "RELU6")
        x = net.conv(x, _ch(cout, width), 1, 1, "RELU6")
    _, h, w, _ = net.shape[x]
    x = net.pool("AVERAGE_POOL_2D", x, h, 1)  # global: [1, 1, 1, C]
    x = net.conv(x, CLASSES, 1, gain=HEAD_GAIN["mobilenet_v1"])
    return [net.unary("SOFTMAX", net.reshape(x, (1, CLASSES)), beta=1.0)]


def _inverted_residual(net: _Net, x: int, expanded: int, cout: int, k: int, stride: int, act: str = "RELU6",
                       se: bool = False, hswish: bool = False) -> int:
    cin = net.shape[x][-1]
    y = x
    if expanded != cin:  # [1, H, W, cin] -> [1, H, W, expanded]
        y = net.conv(y, expanded, 1, 1, "NONE" if hswish else act)
        if hswish:
            y = net.unary("HARD_SWISH", y)
    y = net.dw(y, k, stride, "NONE" if hswish else act)
    if hswish:
        y = net.unary("HARD_SWISH", y)
    if se:  # squeeze-excite with a hard sigmoid gate, as TFLite's MobileNetV3: x * relu6(s + 3) / 6
        c = net.shape[y][-1]
        s = net.conv(net.mean(y, keep_dims=True), _ch(c / 4, 1.0), 1, 1, "RELU")
        s = net.conv(s, c, 1, 1, gain=0.5)
        s = net.scalar("MUL", net.scalar("ADD", s, 3.0, "RELU6"), 1.0 / 6.0)
        y = net.binary("MUL", y, s)
    y = net.conv(y, cout, 1, 1, gain=0.7)
    if stride == 1 and cin == cout:
        y = net.binary("ADD", x, y)
    return y


def mobilenet_v2(net: _Net, x: int, width: float = 0.5) -> list[int]:
    x = net.conv(x, _ch(32, width), 3, 2, "RELU6")
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        for i in range(n):
            x = _inverted_residual(net, x, net.shape[x][-1] * t, _ch(c, width), 3, s if i == 0 else 1)
    x = net.conv(x, 1280, 1, 1, "RELU6")
    return [net.classifier_head(x, HEAD_GAIN["mobilenet_v2"])]


def mobilenet_v3s(net: _Net, x: int) -> list[int]:
    x = net.unary("HARD_SWISH", net.conv(x, 16, 3, 2))
    # (kernel, expanded channels, out channels, SE, hard-swish, stride): MobileNetV3-Small's table
    for k, e, c, se, hs, s in ((3, 16, 16, True, False, 2), (3, 72, 24, False, False, 2), (3, 88, 24, False, False, 1),
                               (5, 96, 40, True, True, 2), (5, 240, 40, True, True, 1), (5, 240, 40, True, True, 1),
                               (5, 120, 48, True, True, 1), (5, 144, 48, True, True, 1), (5, 288, 96, True, True, 2),
                               (5, 576, 96, True, True, 1), (5, 576, 96, True, True, 1)):
        x = _inverted_residual(net, x, e, c, k, s, "RELU", se, hs)
    x = net.unary("HARD_SWISH", net.conv(x, 576, 1))
    x = net.unary("HARD_SWISH", net.conv(net.mean(x, keep_dims=True), 1024, 1))
    x = net.conv(x, CLASSES, 1, gain=HEAD_GAIN["mobilenet_v3s"])
    return [net.unary("SOFTMAX", net.reshape(x, (1, CLASSES)), beta=1.0)]


def efficientnet_l0(net: _Net, x: int) -> list[int]:
    x = net.conv(x, 32, 3, 2, "RELU6")
    for t, k, c, n, s in ((1, 3, 16, 1, 1), (6, 3, 24, 2, 2), (6, 5, 40, 2, 2), (6, 3, 80, 3, 2), (6, 5, 112, 3, 1),
                          (6, 5, 192, 4, 2), (6, 3, 320, 1, 1)):
        for i in range(n):
            x = _inverted_residual(net, x, net.shape[x][-1] * t, c, k, s if i == 0 else 1)
    x = net.conv(x, 1280, 1, 1, "RELU6")
    return [net.classifier_head(x, HEAD_GAIN["efficientnet_l0"])]


def _blaze_block(net: _Net, x: int, cout: int, stride: int = 1) -> int:
    cin = net.shape[x][-1]
    y = net.conv(net.dw(x, 5, stride), cout, 1, gain=0.7)
    shortcut = net.pool("MAX_POOL_2D", x, 2, 2) if stride == 2 else x
    if cout > cin:
        shortcut = net.pad_channels(shortcut, cout - cin)
    return net.prelu(net.binary("ADD", shortcut, y))


def blazeface(net: _Net, x: int) -> list[int]:
    x = net.prelu(net.conv(x, 24, 5, 2))
    for cout, stride in ((24, 1), (28, 1), (32, 2), (36, 1), (42, 1), (48, 2), (56, 1), (64, 1), (72, 1), (80, 1),
                         (88, 1)):
        x = _blaze_block(net, x, cout, stride)
    mid = x
    for cout, stride in ((96, 2), (96, 1), (96, 1), (96, 1), (96, 1)):
        x = _blaze_block(net, x, cout, stride)
    regs, scores = [], []
    for feat, anchors in ((mid, 2), (x, 6)):
        _, h, w, _ = net.shape[feat]
        regs.append(net.reshape(net.conv(feat, anchors * 16, 1, gain=0.5), (1, h * w * anchors, 16)))
        scores.append(net.reshape(net.conv(feat, anchors, 1, gain=0.5), (1, h * w * anchors, 1)))
    return [net.concat(regs, 1), net.concat(scores, 1)]


def unet(net: _Net, x: int) -> list[int]:
    skips = []
    for c in (16, 32, 64):
        x = net.conv(net.conv(x, c, 3, 1, "RELU"), c, 3, 1, "RELU")
        skips.append(x)
        x = net.pool("MAX_POOL_2D", x, 2, 2)
    x = net.conv(net.conv(x, 128, 3, 1, "RELU"), 128, 3, 1, "RELU")
    for level, c in zip((2, 1, 0), (64, 32, 16)):
        up = net.tconv(x, c) if level == 2 else net.conv(net.resize(x, 2), c, 3, 1, "RELU")
        x = net.concat([up, skips[level]], 3)
        x = net.conv(net.conv(x, c, 3, 1, "RELU"), c, 3, 1, "RELU")
    return [net.unary("LOGISTIC", net.conv(x, 1, 1, gain=0.5))]


def _pose_residual(net: _Net, x: int) -> int:
    """x + 1x1(dw 3x3(x)), no activation: the residual stream grows through the stack (gain 0.7 per branch)."""
    return net.binary("ADD", x, net.conv(net.dw(x, 3, 1), net.shape[x][-1], 1, 1, gain=0.7))


def _pose_down(net: _Net, x: int, cout: int) -> int:
    y = net.conv(net.dw(x, 3, 2), cout, 1, 1, "RELU")
    shortcut = net.pool("MAX_POOL_2D", x, 2, 2)
    return net.binary("ADD", net.pad_channels(shortcut, cout - net.shape[x][-1]), y)


def pose_landmark(net: _Net, x: int) -> list[int]:
    """A BlazePose-landmark-like net for float accuracy (issue 26: pose_landmark_full's segmentation output drifted
    6.6e-4 of its range from LiteRT's reference kernels): an encoder of 20 un-normalized residual blocks (activations
    in the 1e5 .. 1e7 at gain 0.7), a decoder of RESIZE_BILINEAR x2 + 1x1 + ADD skips, and four heads: landmarks (MEAN,
    FULLY_CONNECTED 195), a LOGISTIC flag, a 39-channel 3x3 heatmap and a segmentation map at the input's size
    (TRANSPOSE_CONV, RESIZE_BILINEAR + 3x3, 5x5, PRELU). Sizes: multiples of 64."""
    size = net.shape[x][1]
    x = net.conv(x, 24, 3, 2, "RELU")
    skips = []
    for cout, blocks in ((32, 2), (64, 3), (128, 4), (192, 5), (288, 6)):
        x = _pose_down(net, x, cout)
        for _ in range(blocks):
            x = _pose_residual(net, x)
        skips.append(x)
    y = x
    for skip in reversed(skips[:-1]):
        y = _pose_residual(net, net.binary("ADD", net.conv(net.resize(y, 2), net.shape[skip][-1], 1, 1), skip))
    heatmap = net.conv(_pose_residual(net, y), 39, 3, 1)
    z = x
    for _ in range(2):
        z = _pose_residual(net, net.conv(net.dw(z, 3, 2), 288, 1, 1, "RELU"))
    pooled = net.mean(z, keep_dims=False)
    landmarks, flag = net.fc(pooled, 195), net.unary("LOGISTIC", net.fc(pooled, 1))
    seg = net.tconv(y, 16)
    while net.shape[seg][1] < size:
        seg = net.conv(net.resize(seg, 2), 8, 3, 1, "RELU")
    seg = net.conv(net.prelu(net.conv(seg, 8, 5, 1)), 1, 3, 1)
    return [landmarks, flag, heatmap, seg]


BUILDERS = {"mobilenet_v1": mobilenet_v1, "mobilenet_v2": mobilenet_v2, "mobilenet_v3s": mobilenet_v3s,
            "efficientnet_l0": efficientnet_l0, "blazeface": blazeface, "unet": unet, "pose_landmark": pose_landmark}
# Built for float accuracy checks (tests/test_speed26_pose_accuracy.py), not among ARCHS: the speed zoo's geomeans
# and tests/test_bench_zoo.py's peers keep their six architectures
ACCURACY_ARCHS = ("pose_landmark",)


def float_model(arch: str, size: int, seed: int = 0) -> bytes:
    if arch not in BUILDERS:
        raise ValueError(f"unknown architecture {arch!r} (one of {', '.join(BUILDERS)})")
    if size % 16:
        raise ValueError(f"{arch}: input size {size} must be a multiple of 16 (the U-Net's three 2x2 pools)")
    net = _Net(seed)
    x = net.input((1, size, size, 3))
    outputs = BUILDERS[arch](net, x)
    return net.build(*outputs, description=f"edge-sdk zoo {arch} {size}x{size} seed {seed}")


def calibration(size: int, seed: int = 0) -> np.ndarray:
    """Random calibration samples [N, size, size, 3] in [-1, 1] (the float models' input range)."""
    return np.random.default_rng(seed + 1).uniform(-1, 1, (CALIBRATION_SAMPLES, size, size, 3)).astype(np.float32)


def int8_model(float_bytes: bytes, size: int, seed: int = 0) -> bytes:
    """Our converter's full-integer model (int8 I/O, every op int8) from the float one, calibrated on random data;
    random weights make no task to keep, so the accuracy guard's verdict is recorded, not enforced (allow_lossy)."""
    from converters import convert

    result = convert(float_bytes, quantize="int8", calibration=calibration(size, seed), precision="int8",
                     allow_lossy=True, io="int8", task="raw")
    return result.tflite


def fp16_weights_model(float_bytes: bytes) -> bytes:
    """The float model with every float32 constant stored as float16 behind a DEQUANTIZE (version 3, LiteRT's
    float16 input), as LiteRT's converter writes a model quantized to float16: the DEQUANTIZE placed just before
    the first op that reads the constant, its float32 output read in its place by every op."""
    from edge_sdk.model import read_model, write_model
    from edge_sdk.model import schema
    from edge_sdk.model.types import Buffer, Operator, OperatorCode, Tensor

    model = read_model(float_bytes)
    model.buffers = [Buffer(bytes(b.data)) for b in model.buffers]
    code = len(model.operator_codes)
    model.operator_codes.append(OperatorCode(schema.BUILTIN_OPERATOR_CODES["DEQUANTIZE"], None, 3))
    for sg in model.subgraphs:
        widened: dict[int, int] = {}  # float32 constant -> the DEQUANTIZE output that replaces it
        ops = []
        for op in sg.operators:
            for k, t in enumerate(op.inputs):
                tensor = sg.tensors[t] if t >= 0 else None
                if tensor is None or tensor.type != "FLOAT32" or not model.buffers[tensor.buffer].data:
                    continue
                if t not in widened:
                    value = np.frombuffer(model.buffers[tensor.buffer].data, np.float32)
                    model.buffers.append(Buffer(value.astype(np.float16).tobytes()))
                    sg.tensors.append(Tensor(tensor.name + "_fp16", tensor.shape, "FLOAT16",
                                             buffer=len(model.buffers) - 1))
                    sg.tensors.append(Tensor(tensor.name + "_dequantized", tensor.shape, "FLOAT32"))
                    widened[t] = len(sg.tensors) - 1
                    ops.append(Operator(code, [len(sg.tensors) - 2], [widened[t]]))
                op.inputs[k] = widened[t]
            ops.append(op)
        sg.operators = ops
    return write_model(model)


def sparse_weights_model(float_bytes: bytes, keep: float = 0.3, value_type: str = "FLOAT16") -> bytes:
    """The float model with every CONV_2D / FULLY_CONNECTED filter of 1,024+ weights pruned to its largest ``keep``
    share (by magnitude; ties kept) and stored sparse (TFLite SparsityParameters: every axis DENSE but the last,
    SPARSE_CSR over it), read through DENSIFY (and a DEQUANTIZE when ``value_type`` is FLOAT16), as LiteRT's
    converter writes a pruned model. The dense filter's buffer is dropped."""
    from edge_sdk.model import read_model, write_model
    from edge_sdk.model import schema
    from edge_sdk.model.types import Buffer, DimensionMetadata, Operator, OperatorCode, Sparsity, Tensor

    model = read_model(float_bytes)
    model.buffers = [Buffer(bytes(b.data)) for b in model.buffers]
    densify = len(model.operator_codes)
    model.operator_codes.append(OperatorCode(schema.BUILTIN_OPERATOR_CODES["DENSIFY"], None, 1))
    dequantize = len(model.operator_codes)
    model.operator_codes.append(OperatorCode(schema.BUILTIN_OPERATOR_CODES["DEQUANTIZE"], None, 3))
    values_dtype = np.float16 if value_type == "FLOAT16" else np.float32
    for sg in model.subgraphs:
        ops = []
        for op in sg.operators:
            w = sg.tensors[op.inputs[1]] if model.op_name(op) in ("CONV_2D", "FULLY_CONNECTED") else None
            if w is None or not model.buffers[w.buffer].data or math.prod(w.shape) < 1024:
                ops.append(op)
                continue
            rows = np.frombuffer(model.buffers[w.buffer].data, np.float32).reshape(-1, w.shape[-1])  # [prod(lead), last]
            cut = np.quantile(np.abs(rows), 1.0 - keep)
            segments, indices, values = [0], [], []
            for row in rows:
                nz = np.nonzero(np.abs(row) >= cut)[0]
                indices.extend(nz.tolist())
                values.append(row[nz])
                segments.append(len(indices))
            model.buffers[w.buffer] = Buffer(b"")
            model.buffers.append(Buffer(np.concatenate(values).astype(values_dtype).tobytes()))
            dims = [DimensionMetadata("DENSE", d) for d in w.shape[:-1]]
            dims.append(DimensionMetadata("SPARSE_CSR", 0, np.array(segments, np.int32), np.array(indices, np.int32)))
            stored = Tensor(w.name + "_sparse", tuple(w.shape), value_type, buffer=len(model.buffers) - 1)
            stored.sparsity = Sparsity(list(range(len(w.shape))), [], dims)
            sg.tensors.append(stored)
            sg.tensors.append(Tensor(w.name + "_dense", tuple(w.shape), value_type))
            ops.append(Operator(densify, [len(sg.tensors) - 2], [len(sg.tensors) - 1]))
            if value_type == "FLOAT16":
                sg.tensors.append(Tensor(w.name + "_dequantized", tuple(w.shape), "FLOAT32"))
                ops.append(Operator(dequantize, [len(sg.tensors) - 2], [len(sg.tensors) - 1]))
            op.inputs[1] = len(sg.tensors) - 1
            ops.append(op)
        sg.operators = ops
    return write_model(model)


def _cache_key(arch: str, size: int, dtype: str, seed: int) -> str:
    from edge_sdk import __version__

    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(f"{arch} {size} {dtype} {seed} {__version__}".encode())
    if dtype == "int8":  # the converter's own source decides the int8 model's bytes
        for p in sorted((ROOT / "converters").rglob("*.py")):
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def cache_folder() -> Path:
    from edge_sdk.resources import cache_dir

    return cache_dir() / "zoo"


def cached_path(arch: str, size: int, dtype: str = "float32", seed: int = 0) -> Path:
    """The zoo model's file in the cache, built first when this source, the spec (and for int8 the converter)
    changed since it was written."""
    if dtype not in ALL_DTYPES:
        raise ValueError(f"unknown dtype {dtype!r} (one of {', '.join(ALL_DTYPES)})")
    path = cache_folder() / f"{arch}_{size}_{dtype}_{_cache_key(arch, size, dtype, seed)}.tflite"
    if path.is_file():
        return path
    data = float_model(arch, size, seed)
    if dtype == "int8":
        data = int8_model(data, size, seed)
    elif dtype == FP16_WEIGHTS:
        data = fp16_weights_model(data)
    elif dtype == SPARSE_WEIGHTS:
        data = sparse_weights_model(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # atomic: a parallel build never reads half a file
    return path


def build(arch: str, size: int, dtype: str = "float32", seed: int = 0) -> bytes:
    """The zoo model's bytes (cached_path)."""
    return cached_path(arch, size, dtype, seed).read_bytes()


def zoo(sizes=SIZES, dtypes=DTYPES, archs=ARCHS, seed: int = 0):
    """(name, model bytes) for every architecture x size x dtype: name ``{arch}_{size}_{dtype}``."""
    for size in sizes:
        for arch in archs:
            for dtype in dtypes:
                yield f"{arch}_{size}_{dtype}", build(arch, size, dtype, seed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for {arch}_{size}_{dtype}.tflite")
    ap.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    ap.add_argument("--arch", nargs="*", default=list(ARCHS), choices=list(BUILDERS))
    ap.add_argument("--dtype", nargs="*", default=list(DTYPES), choices=ALL_DTYPES)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in zoo(a.sizes, a.dtype, a.arch, a.seed):
        (out / f"{name}.tflite").write_bytes(data)
        print(f"{out / (name + '.tflite')}  {len(data)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
