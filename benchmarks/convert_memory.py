"""Peak memory of an int8 conversion of a 640x640 detector with 50 calibration samples (goal: under 1.5 GB).

    .venv/bin/python benchmarks/convert_memory.py [--samples 50] [--size 640] [--width 1.0] [--method minmax]

Builds a YOLOv8n-like detector in code with onnx.helper and seeded random weights (Conv + SiLU, C2f blocks:
Split + bottlenecks with residual Add + Concat, SPPF, an FPN with nearest upsampling + Concat, a decoupled
head per level whose boxes (4 channels) and class scores (80, Sigmoid) are joined into one [1, 84, N]
output), then runs ``converters.convert`` (int8, precision auto, the accuracy guard on held-back samples)
with ``--samples`` random images given as a uint8 array. Prints the peak resident memory of the process
(``resource.getrusage``: before the conversion and at its end), the largest single activation and the sum
of all activations of one sample (what holding every tensor of one sample costs), the wall time, and the
ratio of the peak to the 1.5 GB goal (goal: ratio <= 1).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_BYTES = 1.5e9


def detector(size: int = 640, width: float = 1.0, classes: int = 80, seed: int = 0):
    """A YOLOv8n-like onnx.ModelProto (NCHW input [1, 3, size, size]; output [1, 4 + classes, anchors])."""
    from onnx import TensorProto, helper, numpy_helper

    r = np.random.default_rng(seed)
    nodes, inits = [], []
    k = [0]

    def name(t):
        k[0] += 1
        return f"{t}{k[0]}"

    def const(array):
        n = name("c")
        inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def node(op, ins, **kw):
        out = name(op.lower())
        nodes.append(helper.make_node(op, ins, [out], **kw))
        return out

    def conv(x, cin, cout, ks=1, stride=1, act=True):
        w = const((r.standard_normal((cout, cin, ks, ks)) / np.sqrt(cin * ks * ks)).astype(np.float32))
        b = const((0.1 * r.standard_normal(cout)).astype(np.float32))
        y = node("Conv", [x, w, b], kernel_shape=[ks, ks], strides=[stride, stride], pads=[ks // 2] * 4)
        return node("Mul", [y, node("Sigmoid", [y])]) if act else y

    def c2f(x, cin, c, n=1, shortcut=True):
        y = conv(x, cin, c)
        a, b = f"{name('split')}_a", f"{name('split')}_b"
        nodes.append(helper.make_node("Split", [y, const(np.array([c // 2, c // 2], np.int64))], [a, b], axis=1))
        parts, cur = [a, b], b
        for _ in range(n):
            z = conv(conv(cur, c // 2, c // 2, 3), c // 2, c // 2, 3)
            cur = node("Add", [cur, z]) if shortcut else z
            parts.append(cur)
        return conv(node("Concat", parts, axis=1), c // 2 * len(parts), c)

    def sppf(x, c):
        y = conv(x, c, c // 2)
        p1 = node("MaxPool", [y], kernel_shape=[5, 5], pads=[2] * 4, strides=[1, 1])
        p2 = node("MaxPool", [p1], kernel_shape=[5, 5], pads=[2] * 4, strides=[1, 1])
        p3 = node("MaxPool", [p2], kernel_shape=[5, 5], pads=[2] * 4, strides=[1, 1])
        return conv(node("Concat", [y, p1, p2, p3], axis=1), c * 2, c)

    def up(x):
        return node("Resize", [x, "", const(np.array([1, 1, 2, 2], np.float32))], mode="nearest")

    w = [max(8, int(c * width) // 8 * 8) for c in (16, 32, 64, 128, 256)]
    x = conv("images", 3, w[0], 3, 2)
    x = conv(x, w[0], w[1], 3, 2)
    x = c2f(x, w[1], w[1])
    x = conv(x, w[1], w[2], 3, 2)
    p3 = c2f(x, w[2], w[2], 2)
    x = conv(p3, w[2], w[3], 3, 2)
    p4 = c2f(x, w[3], w[3], 2)
    x = conv(p4, w[3], w[4], 3, 2)
    p5 = sppf(c2f(x, w[4], w[4]), w[4])
    n4 = c2f(node("Concat", [up(p5), p4], axis=1), w[4] + w[3], w[3], shortcut=False)
    n3 = c2f(node("Concat", [up(n4), p3], axis=1), w[3] + w[2], w[2], shortcut=False)
    heads = []
    for f, c, stride in ((n3, w[2], 8), (n4, w[3], 16), (p5, w[4], 32)):
        box = conv(conv(f, c, 64, 3), 64, 4, 1, act=False)
        box = node("Mul", [node("Add", [box, const(np.float32(2.0))]), const(np.float32(stride * 8))])  # pixels
        cls = node("Sigmoid", [conv(conv(f, c, 80, 3), 80, classes, 1, act=False)])
        cells = (size // stride) ** 2
        heads.append(node("Reshape", [node("Concat", [box, cls], axis=1),
                                      const(np.array([1, 4 + classes, cells], np.int64))]))
    out = node("Concat", heads, axis=2)
    anchors = sum((size // s) ** 2 for s in (8, 16, 32))
    graph = helper.make_graph(
        nodes, "detector", [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 4 + classes, anchors])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _activation_bytes(tflite: bytes) -> tuple[int, int]:
    from edge_sdk.model import read_model

    m = read_model(tflite)
    sg = m.subgraphs[0]
    sizes = [int(np.prod(sg.tensors[t].shape, dtype=np.int64)) * 4 for op in sg.operators for t in op.outputs]
    return max(sizes), sum(sizes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--size", type=int, default=640)
    ap.add_argument("--width", type=float, default=1.0)
    ap.add_argument("--method", default="minmax", choices=("minmax", "percentile", "mse"))
    args = ap.parse_args(argv)

    from converters import convert

    model = detector(args.size, args.width)
    images = np.random.default_rng(1).integers(0, 256, (args.samples, args.size, args.size, 3), dtype=np.uint8)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    res = convert(model, calibration=images, calib_method=args.method, allow_lossy=True)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    float_bytes = convert(model, quantize="none").tflite
    largest, total = _activation_bytes(float_bytes)
    g = res.report.get("guard") or {}
    print(f"detector {args.size}x{args.size} width {args.width}: {len(res.tflite)} bytes int8, "
          f"{args.samples} samples ({args.method}), {seconds:.1f} s")
    print(f"activations of one sample: largest {largest / 1e6:.1f} MB, all tensors {total / 1e6:.1f} MB")
    print(f"guard: met={g.get('met')} worst output SNR "
          f"{min([o['worst_snr_db'] for o in g.get('outputs', [])] or [float('nan')]):.1f} dB, "
          f"widened {len(g.get('widened', []))} op(s)")
    print(f"peak RSS: {peak / 1e9:.3f} GB (before converting: {before / 1e9:.3f} GB); "
          f"ratio to the {GOAL_BYTES / 1e9:.1f} GB goal: {peak / GOAL_BYTES:.2f}")
    return 0


if __name__ == "__main__":
    from edge_sdk import log

    log.configure()  # stages and progress bars on stderr
    raise SystemExit(main())
