"""Issue 24's int8 goals on stand-ins for the real models kept from us: at default settings for raspberry-pi-4
(``convert(onnx, target="raspberry-pi-4", calibration=...)``, nothing else: the Python API ``edge convert`` uses),
each converted stand-in's task figure against onnxruntime on a separate evaluation set.

    python benchmarks/convert_goals.py                 # full size: the table, the aims (met / NOT met)
    python benchmarks/convert_goals.py --small         # the sizes tests/test_convert_goals.py runs
    python benchmarks/convert_goals.py --only yolo,pitch

A full-size run records each stand-in's aim in benchmarks/results/convert_goals.json, one section per stand-in (a
run with --only keeps the others' last records), with its task figure, raw SNR and what was written (int8, mixed,
or the float32 source): the README's benchmarks section is made from it (python -m edge_sdk.tools.docs --write).

The stand-ins (``onnx.helper`` + numpy, seeded) carry what makes real models hard for int8, not their size: every
conv is He-scaled with a folded BatchNorm whose per-channel gains span ``CHANNEL_SPREAD`` (100x) as trained nets'
do (per-tensor activation scales crush the small channels); heads are set on the calibration images so they say
something (a few confident detections, a text map of ~15% foreground, peaked CTC steps), as a trained head does.

- ``yolo``: YOLOv8n-like -- C2f blocks with SiLU (x * Sigmoid), SPPF (MaxPool chain), FPN / PAN with nearest Resize
  and Concat, a decoupled head with DFL (Reshape to 4 x 16 bins, Softmax, 1x1 conv with arange weights), boxes in
  pixels (x stride) concatenated with sigmoid class scores (0..1) into one [1, 84, N] output, as Ultralytics exports.
  Task: float detections kept (IoU >= 0.5, score within 0.05), goal 0.9.
- ``ocr_det``: PP-OCR det-like -- LCNet-ish backbone (HardSwish, depthwise, SE with HardSigmoid), FPN with nearest
  Resize + Add, DB head (ConvTranspose x2, Sigmoid) -> probability map. Task: map IoU, goal 0.9.
- ``ocr_rec``: PP-OCR rec-like -- conv backbone to one row, 2 transformer blocks (LayerNormalization with outlier
  channels, MatMul attention, Softmax, GELU), CTC FC over 6625 classes + Softmax -> [1, T, 6625]. Task: greedy CTC
  strings identical, goal 0.8.
- ``landmark``: hand-landmark-like -- PReLU, depthwise residual blocks, 21 x 3 landmarks in pixels (0..224) beside a
  sigmoid score. Aim: landmarks SNR >= 30 dB (the guard's), the mean pixel error shown.
- ``pitch``: a pitch CNN over raw audio -- a strided filterbank conv, power, log(x + 1e-10), per-frame mean / std,
  Div, conv stack, sigmoid contour / note / onset posteriorgrams. Aim: worst posteriorgram SNR >= 30 dB.

Calibration and evaluation inputs are synthetic but structured (images: gradients, shapes, text-like strokes; audio:
harmonic tones with noise and dithered silences), from different seeds.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGET = "raspberry-pi-4"
CHANNEL_SPREAD = 100.0  # the folded BatchNorm gains of one conv's output channels span this ratio
SNR_GOAL_DB = 30.0
SAMPLE_RATE = 16000
# Silences carry dither, not exact zeros: on a frame of exact digital silence the per-frame normalization divides
# summation-order rounding (~1e-7) by std + 1e-5, so the float32 conversion itself stays at ~16 dB against
# onnxruntime there (measured): no runtime that sums differently could meet a 30 dB aim on such frames.
SILENCE_DITHER = 1e-4


# ------------------------------------------------------------------------------------------------ the graph

class Net:
    """An ONNX graph under construction: nodes, initializers, seeded weights."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.inits: dict[str, np.ndarray] = {}
        self.nodes = []
        self.count = 0

    def name(self, what: str) -> str:
        self.count += 1
        return f"{what}_{self.count}"

    def const(self, value, what: str = "c", dtype=np.float32) -> str:
        n = self.name(what)
        self.inits[n] = np.asarray(value, dtype)
        return n

    def op(self, kind: str, inputs, outputs: int = 1, **attrs):
        from onnx import helper

        names = [self.name(kind.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(kind, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names

    def gains(self, channels: int, spread: float = CHANNEL_SPREAD) -> np.ndarray:
        """Folded BatchNorm gains (gamma / sqrt(var)): log-uniform over ``spread``, mean square 1 (so the net's
        scale neither grows nor shrinks layer to layer)."""
        g = np.exp(self.rng.uniform(-0.5, 0.5, channels) * math.log(spread))
        return g / np.sqrt(np.mean(g * g))

    def conv(self, x: str, cin: int, cout: int, k=1, stride=1, groups: int = 1, act: str | None = "silu",
             spread: float = CHANNEL_SPREAD, bias_std: float = 0.3, one_d: bool = False) -> str:
        """Conv (He-scaled, BatchNorm folded into weight and bias) + activation. ``k`` / ``stride``: an int or
        (h, w). Weights [cout, cin / groups, kh, kw]."""
        kh, kw = (k, k) if isinstance(k, int) else k
        sh, sw = (stride, stride) if isinstance(stride, int) else stride
        fan_in = cin // groups * kh * kw
        g = self.gains(cout, spread)
        shape = (cout, cin // groups, kw) if one_d else (cout, cin // groups, kh, kw)
        w = self.rng.standard_normal(shape) * math.sqrt(2.0 / fan_in) * g.reshape(-1, *[1] * (len(shape) - 1))
        b = g * self.rng.normal(0.0, bias_std, cout)
        if one_d:
            attrs = dict(kernel_shape=[kw], strides=[sw], pads=[(kw - 1) // 2, kw // 2], group=groups)
        else:
            attrs = dict(kernel_shape=[kh, kw], strides=[sh, sw], pads=[kh // 2, kw // 2, kh // 2, kw // 2],
                         group=groups)
        y = self.op("Conv", [x, self.const(w, "w"), self.const(b, "b")], **attrs)
        return self.act(y, act, cout)

    def act(self, y: str, act: str | None, channels: int = 0) -> str:
        if act is None:
            return y
        if act == "silu":
            return self.op("Mul", [y, self.op("Sigmoid", [y])])
        if act == "relu":
            return self.op("Relu", [y])
        if act == "hswish":
            return self.op("HardSwish", [y])
        if act == "prelu":
            slope = self.rng.uniform(0.05, 0.3, (channels, 1, 1))
            return self.op("PRelu", [y, self.const(slope, "slope")])
        raise ValueError(act)

    def model(self, inputs, outputs, opset: int = 17):
        from onnx import TensorProto, helper, numpy_helper

        graph = helper.make_graph(
            self.nodes, "standin", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            [numpy_helper.from_array(v, k) for k, v in self.inits.items()])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m


def ort_run(model, samples, outputs=None) -> list[list[np.ndarray]]:
    """onnxruntime's outputs (float64) of ``model`` (a ModelProto) per sample (a list of arrays, one per input)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return [[np.asarray(v, np.float64) for v in sess.run(outputs, dict(zip(names, s)))] for s in samples]


def _probe(net: Net, inputs, tensors, samples) -> list[np.ndarray]:
    """Values of intermediate ``tensors`` of the net built so far on ``samples`` (stacked along a new axis 0)."""
    from onnx import TensorProto, helper

    m = net.model(inputs, [])
    m.graph.output.extend([helper.make_tensor_value_info(t, TensorProto.FLOAT, None) for t in tensors])
    runs = ort_run(m, samples)
    return [np.stack([r[k] for r in runs]) for k in range(len(tensors))]


# ------------------------------------------------------------------------------------------------ the data

def images(n: int, size, seed: int, text: bool = False) -> np.ndarray:
    """[n, 3, h, w] float32 0..1 pictures: a colour gradient, filled rectangles and discs, and (``text``) rows of
    dark text-like strokes on a light band."""
    h, w = (size, size) if isinstance(size, int) else size
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
    out = np.empty((n, 3, h, w), np.float32)
    for i in range(n):
        a, b, c0 = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), rng.uniform(0.2, 0.8, 3)
        img = np.clip(c0[:, None, None] + 0.4 * (a[:, None, None] * xx + b[:, None, None] * yy), 0, 1)
        for _ in range(rng.integers(2, 6)):
            colour = rng.uniform(0, 1, 3)[:, None, None]
            cy, cx = rng.uniform(0, h), rng.uniform(0, w)
            ry, rx = rng.uniform(0.08, 0.35) * h, rng.uniform(0.08, 0.35) * w
            mask = (((yy * max(h, w) - cy) / ry) ** 2 + ((xx * max(h, w) - cx) / rx) ** 2 < 1) if rng.random() < 0.5 \
                else (np.abs(yy * max(h, w) - cy) < ry) & (np.abs(xx * max(h, w) - cx) < rx)
            img = np.where(mask, colour, img)
        if text:
            for _ in range(rng.integers(1, 4)):
                th = int(rng.integers(max(4, h // 8), max(5, h // 3)))
                top, left = int(rng.integers(0, max(1, h - th))), int(rng.integers(0, max(1, w // 3)))
                right = int(rng.integers(left + w // 4, w + 1))
                img[:, top:top + th, left:right] = rng.uniform(0.8, 1.0)
                x = left + 1
                while x < right - 2:  # strokes: vertical bars, bars with a crossing, gaps between words
                    sw = int(rng.integers(1, 3))
                    y0, y1 = top + int(rng.integers(0, th // 4 + 1)), top + th - int(rng.integers(0, th // 4 + 1))
                    img[:, y0:y1, x:x + sw] = rng.uniform(0.0, 0.25)
                    if rng.random() < 0.4:
                        ym = int(rng.integers(y0, max(y0 + 1, y1)))
                        img[:, ym:ym + sw, x:x + int(rng.integers(2, 5))] = rng.uniform(0.0, 0.25)
                    x += sw + int(rng.integers(1, 4)) + (int(rng.integers(3, 7)) if rng.random() < 0.15 else 0)
        out[i] = img + rng.normal(0, 0.01, img.shape)
    return np.clip(out, 0, 1).astype(np.float32)


def text_lines(n: int, h: int, w: int, seed: int) -> np.ndarray:
    """[n, 3, h, w] crops of one text line (the recognizer's input): strokes filling the height, normalized to
    -1..1 as PP-OCR's recognizer takes them."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, 3, h, w), np.float32)
    for i in range(n):
        bg = rng.uniform(0.6, 1.0)
        img = np.full((h, w), bg) + 0.1 * np.linspace(-1, 1, w)[None, :] * rng.uniform(-1, 1)
        x = int(rng.integers(1, 6))
        end = int(rng.integers(w // 2, w))
        while x < end:
            sw = int(rng.integers(1, 4))
            y0, y1 = int(rng.integers(2, h // 3)), h - int(rng.integers(2, h // 3))
            ink = rng.uniform(0.0, 0.3)
            img[y0:y1, x:x + sw] = ink
            if rng.random() < 0.5:
                ym = int(rng.integers(y0, y1))
                img[ym:ym + 2, x:x + int(rng.integers(2, 7))] = ink
            if rng.random() < 0.3:
                img[y0:y0 + 2, x:x + int(rng.integers(2, 7))] = ink
            x += sw + int(rng.integers(2, 5)) + (int(rng.integers(4, 9)) if rng.random() < 0.12 else 0)
        img = img + rng.normal(0, 0.02, img.shape)
        out[i] = (np.clip(img, 0, 1) * 2 - 1)[None]
    return out.astype(np.float32)


def audio(n: int, length: int, seed: int) -> np.ndarray:
    """[n, length] float32 -1..1 at ``SAMPLE_RATE``: harmonic tones (f0 70..900 Hz, 2-6 decaying harmonics, gliding
    a little, onsets and offsets) over low noise, some stretches near silence (dither only: what log(x + 1e-10) is for)."""
    rng = np.random.default_rng(seed)
    t = np.arange(length) / SAMPLE_RATE
    out = np.zeros((n, length))
    for i in range(n):
        x = np.zeros(length)
        for _ in range(rng.integers(1, 4)):
            start = int(rng.integers(0, length * 3 // 4))
            stop = int(min(length, start + rng.integers(length // 6, length)))
            f0 = math.exp(rng.uniform(math.log(70), math.log(900))) * (1 + rng.uniform(-0.05, 0.05) * t / t[-1])
            phase = 2 * np.pi * np.cumsum(f0) / SAMPLE_RATE
            tone = sum(rng.uniform(0.3, 1.0) / k * np.sin(k * phase + rng.uniform(0, 6.28))
                       for k in range(1, int(rng.integers(3, 7))))
            env = np.zeros(length)
            env[start:stop] = np.minimum(1, np.arange(stop - start) / 160) * np.exp(-np.arange(stop - start)
                                                                                   / (SAMPLE_RATE * rng.uniform(0.2, 2)))
            x += rng.uniform(0.1, 0.5) * tone * env
        x += rng.normal(0, rng.uniform(0.001, 0.02), length)
        if rng.random() < 0.4:  # near silence: dither at -80 dBFS (exact zeros: see SILENCE_DITHER)
            a = int(rng.integers(0, length // 2))
            stop = a + int(rng.integers(length // 8, length // 2))
            x[a:stop] = rng.normal(0, SILENCE_DITHER, len(x[a:stop]))
        out[i] = np.clip(x, -1, 1)
    return out.astype(np.float32)


# ------------------------------------------------------------------------------------------------ stand-ins

def _c2f(net: Net, x: str, cin: int, cout: int, n: int, shortcut: bool = True) -> str:
    """Ultralytics C2f: 1x1 conv, Split in two halves, n bottlenecks (two 3x3 convs, residual Add) on the last
    half, Concat of every part, 1x1 conv."""
    c = cout // 2
    y = net.conv(x, cin, 2 * c)
    a, b = net.op("Split", [y, net.const([c, c], "split", np.int64)], outputs=2, axis=1)
    parts, cur = [a, b], b
    for _ in range(n):
        h = net.conv(net.conv(cur, c, c, 3), c, c, 3)
        cur = net.op("Add", [cur, h]) if shortcut else h
        parts.append(cur)
    return net.conv(net.op("Concat", parts, axis=1), c * len(parts), cout)


def _sppf(net: Net, x: str, c: int) -> str:
    y = net.conv(x, c, c // 2)
    pools = [y]
    for _ in range(3):
        pools.append(net.op("MaxPool", [pools[-1]], kernel_shape=[5, 5], pads=[2, 2, 2, 2], strides=[1, 1]))
    return net.conv(net.op("Concat", pools, axis=1), c * 2, c)


def _up(net: Net, x: str) -> str:
    return net.op("Resize", [x, "", net.const([1, 1, 2, 2], "scales")], mode="nearest")


def yolo_like(size: int = 160, widths=(16, 32, 64, 128, 256), classes: int = 80, calib=None, seed: int = 1):
    """YOLOv8n-like detector [1, 3, size, size] -> "output0" [1, 4 + classes, N] (cx, cy, w, h in pixels, then
    sigmoid class scores), N = sum over strides 8 / 16 / 32 of (size / stride)^2 (N != 4 + classes: the decoder
    tells the axes apart by length). ``calib`` (images) sets the class logits as a trained head's, confident: spread
    ~3, about 1 in 2000 (anchor, class) pairs over 0.5."""
    net = Net(seed)
    w0, w1, w2, w3, w4 = widths
    reg = 16
    x = net.conv("images", 3, w0, 3, 2)                 # /2
    x = net.conv(x, w0, w1, 3, 2)                       # /4
    x = _c2f(net, x, w1, w1, 1)
    x = net.conv(x, w1, w2, 3, 2)                       # /8
    p3 = _c2f(net, x, w2, w2, 2)
    x = net.conv(p3, w2, w3, 3, 2)                      # /16
    p4 = _c2f(net, x, w3, w3, 2)
    x = net.conv(p4, w3, w4, 3, 2)                      # /32
    p5 = _sppf(net, _c2f(net, x, w4, w4, 1), w4)
    n4 = _c2f(net, net.op("Concat", [_up(net, p5), p4], axis=1), w4 + w3, w3, 1, False)
    n3 = _c2f(net, net.op("Concat", [_up(net, n4), p3], axis=1), w3 + w2, w2, 1, False)
    d4 = _c2f(net, net.op("Concat", [net.conv(n3, w2, w2, 3, 2), n4], axis=1), w2 + w3, w3, 1, False)
    d5 = _c2f(net, net.op("Concat", [net.conv(d4, w3, w3, 3, 2), p5], axis=1), w3 + w4, w4, 1, False)
    c2, c3 = max(16, w2 // 4, 4 * reg // 4), max(w2, min(classes, 100))
    levels, logits, anchors, strides = [], [], [], []
    class_bias, class_weight = [], {}
    for feat, c, stride in ((n3, w2, 8), (d4, w3, 16), (d5, w4, 32)):
        box = net.conv(net.conv(net.conv(feat, c, c2, 3), c2, c2, 3), c2, 4 * reg, act=None, spread=10.0)
        cls_b = net.name("cls_bias")
        cls = net.conv(net.conv(feat, c, c3, 3), c3, c3, 3)
        wc = net.rng.standard_normal((classes, c3, 1, 1)) * math.sqrt(1.0 / c3)
        wc_name = net.const(wc, "wcls")
        class_weight[cls_b] = wc_name
        cls = net.op("Conv", [cls, wc_name, cls_b], kernel_shape=[1, 1])
        net.inits[cls_b] = np.zeros(classes, np.float32)
        class_bias.append(cls_b)
        logits.append(cls)
        g = size // stride
        both = net.op("Concat", [box, cls], axis=1)
        levels.append(net.op("Reshape", [both, net.const([1, 4 * reg + classes, -1], "shape", np.int64)]))
        ys, xs = np.mgrid[0:g, 0:g] + 0.5
        anchors.append(np.stack([xs.reshape(-1), ys.reshape(-1)]))
        strides.append(np.full(g * g, stride))
    if calib is not None:  # a trained head's confidence: ~1 in 2000 (anchor, class) pairs over 0.5
        values = _probe(net, [("images", [1, 3, size, size])], logits, [[s[None]] for s in calib[:8]])
        for cls_b, v in zip(class_bias, values):
            per_class = np.moveaxis(v[:, 0], 1, 0).reshape(classes, -1)
            # confident: logits spread ~3 (most far below 0), the top 1 in 2000 over 0, up to scores ~0.9
            gain = 3.0 / np.maximum(per_class.std(axis=1), 1e-6)
            wc = net.inits[class_weight[cls_b]]
            net.inits[class_weight[cls_b]] = (wc * gain[:, None, None, None]).astype(np.float32)
            net.inits[cls_b] = (-gain * np.quantile(per_class, 1 - 1 / 2000, axis=1)).astype(np.float32)
    cat = net.op("Concat", levels, axis=2)                                  # [1, 64 + C, N]
    dist, cls = net.op("Split", [cat, net.const([4 * reg, classes], "split", np.int64)], outputs=2, axis=1)
    n = sum(a.shape[1] for a in anchors)
    bins = net.op("Reshape", [dist, net.const([1, 4, reg, n], "shape", np.int64)])
    bins = net.op("Softmax", [net.op("Transpose", [bins], perm=[0, 2, 1, 3])], axis=1)   # [1, 16, 4, N]
    dfl = net.op("Conv", [bins, net.const(np.arange(reg).reshape(1, reg, 1, 1), "dfl")], kernel_shape=[1, 1])
    ltrb = net.op("Reshape", [dfl, net.const([1, 4, n], "shape", np.int64)])
    lt, rb = net.op("Split", [ltrb, net.const([2, 2], "split", np.int64)], outputs=2, axis=1)
    anchor = net.const(np.concatenate(anchors, axis=1)[None], "anchors")
    x1y1, x2y2 = net.op("Sub", [anchor, lt]), net.op("Add", [anchor, rb])
    cxy = net.op("Div", [net.op("Add", [x1y1, x2y2]), net.const(2.0, "two")])
    wh = net.op("Sub", [x2y2, x1y1])
    box = net.op("Mul", [net.op("Concat", [cxy, wh], axis=1), net.const(np.concatenate(strides)[None], "strides")])
    out = net.op("Concat", [box, net.op("Sigmoid", [cls])], axis=1)
    net.nodes[-1].output[0] = "output0"
    return net.model([("images", [1, 3, size, size])], [("output0", [1, 4 + classes, n])])


def _se(net: Net, x: str, c: int) -> str:
    """Squeeze-excite as LCNet has it: global average pool, 1x1 reduce ReLU, 1x1 expand, HardSigmoid, Mul."""
    s = net.op("GlobalAveragePool", [x])
    s = net.conv(s, c, max(4, c // 4), act="relu", spread=4.0)
    s = net.op("HardSigmoid", [net.conv(s, max(4, c // 4), c, act=None, spread=4.0)], alpha=1 / 6, beta=0.5)
    return net.op("Mul", [x, s])


def _dw_block(net: Net, x: str, cin: int, cout: int, stride: int, k: int = 3, se: bool = False) -> str:
    y = net.conv(x, cin, cin, k, stride, groups=cin, act="hswish")
    if se:
        y = _se(net, y, cin)
    return net.conv(y, cin, cout, act="hswish")


def ocr_det_like(size: int = 160, scale: float = 0.5, calib=None, seed: int = 2):
    """PP-OCR det-like text detector [1, 3, size, size] -> "maps" [1, 1, size, size] probabilities (DB). ``calib``
    (text images) sets the last bias so ~15% of pixels are text and the logits' spread so the map is confident."""
    net = Net(seed)
    c = [max(8, int(v * scale)) for v in (16, 32, 64, 128, 256, 512)]
    x = net.conv("x", 3, c[0], 3, 2, act="hswish")                 # /2
    x = _dw_block(net, x, c[0], c[1], 1)
    x = _dw_block(net, x, c[1], c[2], 2)                            # /4
    f4 = _dw_block(net, x, c[2], c[2], 1)
    x = _dw_block(net, f4, c[2], c[3], 2)                           # /8
    f8 = _dw_block(net, x, c[3], c[3], 1)
    x = _dw_block(net, f8, c[3], c[4], 2, 5)                        # /16
    for _ in range(2):
        x = _dw_block(net, x, c[4], c[4], 1, 5)
    f16 = x
    x = _dw_block(net, f16, c[4], c[5], 2, 5, se=True)              # /32
    f32 = _dw_block(net, x, c[5], c[5], 1, 5, se=True)
    inner = 32
    ins = [net.conv(f, cf, inner, act=None) for f, cf in ((f4, c[2]), (f8, c[3]), (f16, c[4]), (f32, c[5]))]
    o32 = ins[3]
    o16 = net.op("Add", [ins[2], _up(net, o32)])
    o8 = net.op("Add", [ins[1], _up(net, o16)])
    o4 = net.op("Add", [ins[0], _up(net, o8)])
    ps = []
    for o, times in ((o32, 3), (o16, 2), (o8, 1), (o4, 0)):
        p = net.conv(o, inner, inner // 4, 3, act=None)
        for _ in range(times):
            p = _up(net, p)
        ps.append(p)
    fuse = net.op("Concat", ps, axis=1)                              # [1, 32, size / 4, size / 4]
    h = net.conv(fuse, inner, inner // 4, 3, act="relu")
    w1 = net.rng.standard_normal((inner // 4, inner // 4, 2, 2)) * math.sqrt(2.0 / (inner // 4))
    h = net.op("Relu", [net.op("ConvTranspose", [h, net.const(w1, "wt"), net.const(np.zeros(inner // 4), "bt")],
                               kernel_shape=[2, 2], strides=[2, 2])])
    w2 = net.rng.standard_normal((inner // 4, 1, 2, 2)) * math.sqrt(1.0 / (inner // 4))
    wname, bname = net.const(w2, "wt"), net.const([0.0], "bt")
    logit = net.op("ConvTranspose", [h, wname, bname], kernel_shape=[2, 2], strides=[2, 2])
    if calib is not None:  # a trained DB head is confident: logits spread ~4, ~15% of pixels text
        (v,) = _probe(net, [("x", [1, 3, size, size])], [logit], [[s[None]] for s in calib[:8]])
        gain = 4.0 / max(float(v.std()), 1e-6)
        net.inits[wname] = (w2 * gain).astype(np.float32)
        net.inits[bname] = np.array([-np.quantile(v * gain, 0.85)], np.float32)
    net.op("Sigmoid", [logit])
    net.nodes[-1].output[0] = "maps"
    return net.model([("x", [1, 3, size, size])], [("maps", [1, 1, size, size])])


def _layer_norm(net: Net, x: str, dim: int) -> str:
    """LayerNormalization over the last axis with a few outlier channels in its gain (as trained transformers'
    norms have): min / max of what follows is set by them."""
    gamma = net.rng.uniform(0.7, 1.3, dim)
    gamma[net.rng.choice(dim, 2, replace=False)] *= 25.0
    return net.op("LayerNormalization", [x, net.const(gamma, "gamma"), net.const(net.rng.normal(0, 0.1, dim),
                                                                                 "beta")], axis=-1)


def _linear(net: Net, x: str, cin: int, cout: int, gain: float = 1.0) -> str:
    w = net.rng.standard_normal((cin, cout)) * math.sqrt(gain / cin)
    return net.op("Add", [net.op("MatMul", [x, net.const(w, "wfc")]), net.const(net.rng.normal(0, 0.05, cout), "bfc")])


def _transformer(net: Net, x: str, t: int, dim: int, heads: int = 4) -> str:
    """Pre-norm block: LN, Q/K/V MatMuls, per-head attention (Softmax over keys), projection, residual; LN, MLP
    with GELU (the Erf form PyTorch exports), residual. [1, t, dim] -> [1, t, dim]."""
    hd = dim // heads
    y = _layer_norm(net, x, dim)
    def split_heads(v):
        v = net.op("Reshape", [v, net.const([1, t, heads, hd], "shape", np.int64)])
        return net.op("Transpose", [v], perm=[0, 2, 1, 3])            # [1, heads, t, hd]
    q, k, v = (split_heads(_linear(net, y, dim, dim)) for _ in range(3))
    att = net.op("MatMul", [q, net.op("Transpose", [k], perm=[0, 1, 3, 2])])
    att = net.op("Softmax", [net.op("Mul", [att, net.const(2.0 / math.sqrt(hd), "scale")])], axis=-1)
    o = net.op("Transpose", [net.op("MatMul", [att, v])], perm=[0, 2, 1, 3])
    o = _linear(net, net.op("Reshape", [o, net.const([1, t, dim], "shape", np.int64)]), dim, dim, 0.5)
    x = net.op("Add", [x, o])
    y = _linear(net, _layer_norm(net, x, dim), dim, 2 * dim, 2.0)
    erf = net.op("Erf", [net.op("Div", [y, net.const(math.sqrt(2.0), "sqrt2")])])
    y = net.op("Mul", [net.op("Mul", [y, net.op("Add", [erf, net.const(1.0, "one")])]), net.const(0.5, "half")])
    return net.op("Add", [x, _linear(net, y, 2 * dim, dim, 0.5)])


def ocr_rec_like(width: int = 160, dim: int = 64, classes: int = 6625, calib=None, seed: int = 3):
    """PP-OCR rec-like recognizer [1, 3, 32, width] -> "probs" [1, width / 4, classes] CTC probabilities (class 0
    the blank). ``calib`` (text lines) sets the CTC FC: logits scaled so a step's top class is confident (median top
    probability ~0.8) and the blank wins about half the steps, as a trained recognizer's."""
    net = Net(seed)
    x = net.conv("x", 3, 16, 3, 1, act="hswish")                            # 32 x W
    x = net.conv(x, 16, 32, 3, (2, 2), act="hswish")                        # 16 x W/2
    x = _dw_block(net, x, 32, 48, (2, 2))                                   # 8 x W/4
    x = _dw_block(net, x, 48, 64, (2, 1))                                   # 4 x W/4
    x = _dw_block(net, x, 64, dim, (2, 1), se=True)                         # 2 x W/4
    x = net.op("MaxPool", [x], kernel_shape=[2, 1], strides=[2, 1])         # 1 x W/4
    t = width // 4
    x = net.op("Transpose", [net.op("Reshape", [x, net.const([1, dim, t], "shape", np.int64)])], perm=[0, 2, 1])
    for _ in range(2):
        x = _transformer(net, x, t, dim)
    x = _layer_norm(net, x, dim)
    wname, bname = net.const(np.zeros((dim, classes)), "wctc"), net.const(np.zeros(classes), "bctc")
    logits = net.op("Add", [net.op("MatMul", [x, wname]), bname])
    if calib is not None:
        (feat,) = _probe(net, [("x", [1, 3, 32, width])], [x], [[s[None]] for s in calib[:8]])
        feat = feat.reshape(-1, dim)
        # a trained FC reads every channel, not the LayerNorm's outliers alone, and does not amplify the
        # channels that barely vary: each channel's weights over its spread, at most the median channel's gain
        mu, sd = feat.mean(axis=0), feat.std(axis=0)
        sd = np.maximum(sd, np.median(sd))
        w = net.rng.standard_normal((dim, classes)) / math.sqrt(dim)
        w[:, 1:] *= np.exp(net.rng.normal(0, 0.3, classes - 1))         # some characters likelier than others
        z = ((feat - mu) / sd) @ w
        gain, b0 = 1.0, 0.0
        for _ in range(60):  # the gain that makes the median step's top probability ~0.8, the blank ~half
            zz = z * gain
            zz[:, 0] += b0
            zz = zz - zz.max(axis=1, keepdims=True)
            pmax = 1.0 / np.exp(zz).sum(axis=1)
            gain *= 1.1 if np.median(pmax) < 0.8 else 0.93
            blank = np.mean(zz.argmax(axis=1) == 0)
            b0 += 0.3 * gain if blank < 0.45 else -0.3 * gain if blank > 0.6 else 0.0
        w = w * gain / sd[:, None]  # logits = x @ w + bias = ((x - mu) / sd) @ (w * gain) + blank bias
        bias = -(mu @ w)
        bias[0] += b0
        net.inits[wname], net.inits[bname] = w.astype(np.float32), bias.astype(np.float32)
    net.op("Softmax", [logits], axis=-1)
    net.nodes[-1].output[0] = "probs"
    return net.model([("x", [1, 3, 32, width])], [("probs", [1, t, classes])])


def landmark_like(size: int = 224, scale: float = 1.0, seed: int = 4):
    """Hand-landmark-like [1, 3, size, size] -> "landmarks" [1, 63] (x, y, z of 21 points; x, y in pixels
    0..size) and "score" [1, 1] (sigmoid hand presence): PReLU convs, depthwise residual blocks."""
    net = Net(seed)
    c = [max(8, int(v * scale)) for v in (24, 32, 48, 64, 96)]
    x = net.conv("input", 3, c[0], 3, 2, act="prelu")
    cur = c[0]
    for cout, blocks in zip(c[1:] + [c[-1]], (1, 2, 2, 2, 1)):
        x = net.conv(x, cur, cout, 3, 2, act="prelu")              # downsample
        cur = cout
        for _ in range(blocks):
            h = net.conv(x, cur, cur, 5, 1, groups=cur, act=None)
            h = net.conv(h, cur, cur, act=None)
            x = net.act(net.op("Add", [x, h]), "prelu", cur)
    feat = net.op("Flatten", [net.op("GlobalAveragePool", [x])])
    hidden = net.act(_linear(net, feat, cur, 64, 2.0), "relu")
    w = net.rng.standard_normal((64, 63)) * math.sqrt(1.0 / 64)
    spread = np.tile([size * 0.2, size * 0.2, 10.0], 21)                    # x, y in pixels; z small
    centre = np.tile([size / 2, size / 2, 0.0], 21) + net.rng.normal(0, size * 0.08, 63) * np.tile([1, 1, 0], 21)
    lm = net.op("Add", [net.op("MatMul", [hidden, net.const(w * spread / 2.0, "wlm")]), net.const(centre, "blm")])
    net.nodes[-1].output[0] = "landmarks"
    score = net.op("Sigmoid", [_linear(net, hidden, 64, 1, 0.5)])
    net.nodes[-1].output[0] = "score"
    del lm, score
    return net.model([("input", [1, 3, size, size])], [("landmarks", [1, 63]), ("score", [1, 1])])


def pitch_like(length: int = 16000, bins: int = 128, seed: int = 5):
    """A pitch CNN over raw audio [1, length] -> "contour" [1, frames, 264], "note" / "onset" [1, frames, 88]
    sigmoid posteriorgrams: a strided conv filterbank (windowed sinusoids at log-spaced frequencies, 512 taps, hop
    256) squared -> log(x + 1e-10) -> per frame (x - mean) / (std + 1e-5) over the bins -> 1-D conv stack."""
    net = Net(seed)
    taps, hop = 512, 256
    freqs = 55.0 * 2 ** (np.arange(bins // 2) / 12 * (96 / (bins // 2)))  # cos and sin filters, 8 octaves
    n = np.arange(taps) - taps / 2
    win = np.hanning(taps)
    fb = np.concatenate([win * np.cos(2 * np.pi * freqs[:, None] * n / SAMPLE_RATE),
                         win * np.sin(2 * np.pi * freqs[:, None] * n / SAMPLE_RATE)]) / taps * 4
    x = net.op("Reshape", ["audio", net.const([1, 1, length], "shape", np.int64)])
    frames = (length - taps) // hop + 1
    spec = net.op("Conv", [x, net.const(fb[:, None, :], "fb")], kernel_shape=[taps], strides=[hop])   # [1, 128, F]
    power = net.op("Mul", [spec, spec])
    half = bins // 2
    re2, im2 = net.op("Split", [power, net.const([half, half], "split", np.int64)], outputs=2, axis=1)
    mag = net.op("Log", [net.op("Add", [net.op("Add", [re2, im2]), net.const(1e-10, "eps")])])        # [1, 64, F]
    mean = net.op("ReduceMean", [mag], axes=[1], keepdims=1)
    centred = net.op("Sub", [mag, mean])
    var = net.op("ReduceMean", [net.op("Mul", [centred, centred])], axes=[1], keepdims=1)
    normed = net.op("Div", [centred, net.op("Add", [net.op("Sqrt", [var]), net.const(1e-5, "eps")])])
    h = net.op("Unsqueeze", [normed, net.const([1], "axes", np.int64)])                                # [1, 1, 64, F]
    h = net.conv(h, 1, 16, (5, 5), act="relu")
    h = net.conv(h, 16, 16, (3, 3), act="relu")
    h = net.op("Reshape", [h, net.const([1, 16 * half, frames], "shape", np.int64)])
    h = net.conv(h, 16 * half, 128, (1, 3), act="relu", one_d=True)
    h = net.conv(h, 128, 128, (1, 3), act="relu", one_d=True)
    outs = []
    for name, k, bias in (("contour", 264, -2.5), ("note", 88, -3.0), ("onset", 88, -3.5)):
        w = net.rng.standard_normal((k, 128, 1)) * math.sqrt(2.0 / 128)
        y = net.op("Conv", [h, net.const(w, "wout"), net.const(np.full(k, bias), "bout")], kernel_shape=[1])
        y = net.op("Transpose", [net.op("Sigmoid", [y])], perm=[0, 2, 1])
        net.nodes[-1].output[0] = name
        outs.append((name, [1, frames, k]))
    return net.model([("audio", [1, length])], outs)


# ------------------------------------------------------------------------------------------------ the figures

def ctc_strings(probs: np.ndarray, blank: int = 0) -> list[tuple]:
    from converters.evaluate import ctc_greedy

    return [ctc_greedy(p, blank) for p in probs]


def snr_db(ref: np.ndarray, got: np.ndarray) -> float:
    from converters.quantize.measure import snr_db as _snr

    ref, got = np.asarray(ref, np.float64), np.asarray(got, np.float64)
    return _snr(float(np.sum(ref * ref)), float(np.sum((ref - got) ** 2)))


@dataclass
class Standin:
    name: str
    build: object            # (size, calib) -> ModelProto
    data: object             # (n, seed, size) -> [n, ...] float32 inputs
    task: str                # the figure's kind
    aim: str
    goal: float
    small: dict
    full: dict
    int8_small: float = 0.0  # the share of MACs left in int8 at small size the search reaches (tests hold it); the
    # rec-like's 4 held-back strings decide no give-back (widen._holds_with_margin: 4 of 4 is the figure's last step)


def _yolo_spec():
    return {"task": "detection", "format": "yolo", "boxes": "output0", "scores": "output0",
            "config": {"score_activation": "none", "box_order": "cxcywh"}}


STANDINS = {
    "yolo": Standin("yolo", lambda s, cal: yolo_like(s["size"], s["widths"], calib=cal),
                    lambda n, seed, s: images(n, s["size"], seed), "detections",
                    "YOLOv8n-like keeps >= 90% of float detections", 0.9,
                    small={"size": 96, "widths": (8, 16, 24, 32, 48), "calib": 20, "eval": 12},
                    full={"size": 160, "widths": (16, 32, 64, 128, 256), "calib": 40, "eval": 20}, int8_small=0.10),
    "ocr_det": Standin("ocr_det", lambda s, cal: ocr_det_like(s["size"], s["scale"], calib=cal),
                       lambda n, seed, s: images(n, s["size"], seed, text=True), "map_iou",
                       "PP-OCR det-like text map IoU >= 0.9", 0.9,
                       small={"size": 64, "scale": 0.25, "calib": 20, "eval": 10},
                       full={"size": 160, "scale": 0.5, "calib": 40, "eval": 20}, int8_small=0.99),
    "ocr_rec": Standin("ocr_rec", lambda s, cal: ocr_rec_like(s["width"], s["dim"], calib=cal),
                       lambda n, seed, s: text_lines(n, 32, s["width"], seed), "strings",
                       "PP-OCR rec-like >= 80% identical CTC strings", 0.8,
                       small={"width": 64, "dim": 32, "calib": 20, "eval": 20},
                       full={"width": 160, "dim": 64, "calib": 40, "eval": 40}, int8_small=0.0),
    "landmark": Standin("landmark", lambda s, cal: landmark_like(s["size"], s["scale"]),
                        lambda n, seed, s: images(n, s["size"], seed), "snr",
                        "hand-landmark-like landmarks SNR >= 30 dB", SNR_GOAL_DB,
                        small={"size": 64, "scale": 0.5, "calib": 20, "eval": 10},
                        full={"size": 224, "scale": 1.0, "calib": 40, "eval": 20}, int8_small=0.99),
    "pitch": Standin("pitch", lambda s, cal: pitch_like(s["length"]),
                     lambda n, seed, s: audio(n, s["length"], seed), "snr",
                     "pitch posteriorgrams SNR >= 30 dB", SNR_GOAL_DB,
                     small={"length": 4096, "calib": 20, "eval": 10},
                     full={"length": 16000, "calib": 40, "eval": 20}, int8_small=0.85),
}
CALIB_SEED, EVAL_SEED = 100, 200


def build(name: str, small: bool = False):
    """(onnx model, calibration inputs, evaluation inputs) of stand-in ``name``."""
    s = STANDINS[name]
    size = s.small if small else s.full
    calib = s.data(size["calib"], CALIB_SEED, size)
    evaluation = s.data(size["eval"], EVAL_SEED, size)
    return s.build(size, calib), calib, evaluation


def task_figure(name: str, onnx_model, ref_runs, got_runs) -> dict:
    """The stand-in's task figure of the converted model's outputs (``got_runs``) against onnxruntime's
    (``ref_runs``): per sample, the outputs in the ONNX model's order."""
    from converters import evaluate

    names = [o.name for o in onnx_model.graph.output]
    ref = [dict(zip(names, r)) for r in ref_runs]
    got = [dict(zip(names, g)) for g in got_runs]
    snr = min(snr_db(np.stack([r[n] for r in ref]), np.stack([g[n] for g in got])) for n in names)
    kind = STANDINS[name].task
    if kind == "detections":
        m = evaluate.task_metrics(_yolo_spec(), ref, got)
        return {"figure": m["metrics"]["kept_fraction"], "extra": m["metrics"]["extra_fraction"],
                "detail": f"{m['metrics']['float_detections']} float detections", "snr": snr}
    if kind == "map_iou":
        m = evaluate.task_metrics({"task": "segmentation", "output": "maps", "threshold": None}, ref, got)
        return {"figure": m["metrics"]["map_iou"], "detail": "", "snr": snr}
    if kind == "strings":
        m = evaluate.task_metrics({"task": "recognition", "output": "probs", "blank": 0}, ref, got)
        return {"figure": m["metrics"]["strings"], "detail": f"{m['metrics']['mean_length']:.1f} chars/string",
                "snr": snr}
    detail = ""
    if name == "landmark":
        lm = np.stack([r["landmarks"] for r in ref]).reshape(-1, 21, 3)[..., :2]
        lq = np.stack([g["landmarks"] for g in got]).reshape(-1, 21, 3)[..., :2]
        detail = f"mean landmark error {np.mean(np.linalg.norm(lm - lq, axis=-1)):.2f} px"
    return {"figure": snr, "detail": detail, "snr": snr}


def measure(name: str, small: bool = False, **settings) -> dict:
    """Convert stand-in ``name`` at default settings for ``TARGET`` (``settings`` add to them) and measure its task
    figure on the evaluation inputs against onnxruntime: the record with the conversion's seconds and report."""
    from converters import convert
    from edge_sdk.runtime.interpreter import Interpreter
    from edge_sdk.tasks.pipeline import dequantize, to_input

    model, calib, evaluation = build(name, small)
    start = time.perf_counter()
    result = convert(model, target=TARGET, calibration=calib, allow_lossy=True, **settings)
    seconds = time.perf_counter() - start
    samples = [[x[None]] for x in evaluation]
    ref = ort_run(model, samples)
    interp = Interpreter(model_content=result.tflite)
    interp.allocate_tensors()
    ins, outs = interp.get_input_details(), interp.get_output_details()
    got = []
    for s in samples:
        for d, x in zip(ins, s):
            interp.set_tensor(d["index"], to_input(x, d, "sample"))
        interp.invoke()
        got.append([np.asarray(dequantize(interp.get_tensor(d["index"]), d), np.float64).reshape(r.shape)
                    for d, r in zip(outs, ref[0])])
    fig = task_figure(name, model, ref, got)
    qreport = result.report["quantization"].get("report") or {}
    guard = qreport.get("guard") or {}
    cost = guard.get("cost") or {}
    steps = guard.get("steps") or []
    widened = (guard.get("widened_count") or {}).get("ops", 0)
    int8_macs = 1.0 - cost.get("macs_not_int8", 0) / max(1, cost.get("macs_total", 0)) if cost else 1.0
    # what was written: the search's model (int8, or int8 with widened ops), or -- on a float-first target when that
    # model kept too little int8 (quantize.KEEP_INT8_MAC_SHARE) -- the float source, none of its MACs int8
    float_source = "float_source" in qreport
    written = "float32 source" if float_source else "mixed" if widened else "int8"
    return {"name": name, **fig, "goal": STANDINS[name].goal, "met": fig["figure"] is not None
            and fig["figure"] >= STANDINS[name].goal, "seconds": seconds,
            "search_seconds": sum(s.get("seconds", 0.0) for s in steps), "widened": widened,
            "int8_macs": int8_macs, "written": written, "written_int8_macs": 0.0 if float_source else int8_macs,
            "judged_by": result.report["guard"].get("judged_by", "snr"),
            "refused": not guard.get("met", True), "report": result.report,
            # what made int8 itself better before the search: conv pairs equalized, per-channel maps migrated
            "equalized": len(qreport.get("equalized") or []), "migrated": len(qreport.get("migrated") or [])}


def aim_detail(r: dict) -> str:
    """One stand-in's figures for its aim line: the task figure and the raw SNR both, what was written and how
    much of it is int8."""
    task = "" if STANDINS[r["name"]].task == "snr" else f", output SNR {r['snr']:.1f} dB"
    written = (f"written as the float32 source (the search's model kept {r['int8_macs']:.0%} of MACs int8 with "
               f"{r['widened']} op(s) widened)" if r["written"] == "float32 source" else
               f"written {r['written']}: {r['widened']} op(s) widened, {r['int8_macs']:.0%} of MACs int8")
    return f"{r['figure']:.3f} (goal {r['goal']:g}{task}; {written}; {r['seconds']:.0f} s)"


def main(argv=None) -> int:
    from aims import Aims

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="the sizes tests/test_convert_goals.py runs")
    p.add_argument("--only", default="", help="comma-separated stand-ins (" + ", ".join(STANDINS) + ")")
    args = p.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(STANDINS)
    aims = Aims("convert_goals", "python benchmarks/convert_goals.py" + (" --small" if args.small else ""))
    print(f"Default settings for {TARGET} (convert(onnx, target=..., calibration=...)); figures vs onnxruntime on "
          f"a separate evaluation set; {'small' if args.small else 'full'} sizes")
    print(f"{'stand-in':<10} {'figure':>8} {'goal':>6} {'SNR dB':>7} {'widened':>8} {'int8 MACs':>9} "
          f"{'written':>15} {'convert s':>9} {'search s':>8}  detail")
    rows = {}
    for name in names:
        r = measure(name, args.small)
        rows[name] = r
        print(f"{name:<10} {r['figure']:>8.3f} {r['goal']:>6.2f} {r['snr']:>7.1f} {r['widened']:>8} "
              f"{r['int8_macs']:>9.1%} {r['written']:>15} {r['seconds']:>9.1f} {r['search_seconds']:>8.1f}  "
              f"{r['detail']}; {r['equalized']} pair(s) equalized, {r['migrated']} map(s) migrated"
              + ("  (the guard refused it)" if r["refused"] else ""), flush=True)
    print("int8 MACs: the share the widening search's model keeps in int8; written: what convert wrote (a float32 "
          "source when that share is under quantize.KEEP_INT8_MAC_SHARE on a float-first target: none of it int8)")
    for name, r in rows.items():
        # one section per stand-in: a run of some (--only) keeps the others' last recorded aims
        aims.single(STANDINS[name].aim, r["met"], aim_detail(r), section=f"{name} (small)" if args.small else name)
        aims.rows[-1]["figures"] = {k: r[k] for k in ("figure", "snr", "widened", "int8_macs", "written",
                                                      "written_int8_macs", "judged_by", "seconds")}
    if not args.small or os.environ.get("EDGE_BENCH_RESULTS"):
        aims.save(machine=f"{os.uname().machine}, {os.cpu_count()} CPUs", target=TARGET)
    return aims.exit_status()


if __name__ == "__main__":
    sys.exit(main())
