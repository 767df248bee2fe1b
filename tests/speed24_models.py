"""Issue 24 (speed): the float ONNX models tests/test_speed24_*.py and benchmarks/speed24_models.py convert for a
float-first target: a PReLU-heavy BlazeFace-like net, a depthwise-heavy net, a plain conv net (int8 faster), each
at a size and width given (onnx.helper, random weights: seeded)."""

from __future__ import annotations

import numpy as np


def _build(nodes, inits, size: int, outputs: dict, name: str):
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in outputs.items()],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


class _Net:
    """Nodes and initializers of a net being built, with seeded weights."""

    def __init__(self, seed: int):
        self.r, self.nodes, self.inits, self.n = np.random.default_rng(seed), [], {}, 0

    def w(self, *shape, s=None):
        fan = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        scale = s if s is not None else 1.0 / np.sqrt(fan)
        return (self.r.standard_normal(shape) * scale).astype(np.float32)

    def conv(self, x, cin, cout, k=3, stride=1, group=1, act=None):
        self.n += 1
        w, b, y = f"w{self.n}", f"b{self.n}", f"c{self.n}"
        self.inits[w] = self.w(cout, cin // group, k, k)
        self.inits[b] = self.w(cout, s=0.05)
        pads = [k // 2] * 4
        self.nodes.append(_node("Conv", [x, w, b], [y], kernel_shape=[k, k], pads=pads, strides=[stride, stride],
                                group=group))
        return self.act(y, cout, act) if act else y

    def act(self, x, c, kind):
        self.n += 1
        y = f"a{self.n}"
        if kind == "prelu":
            self.inits[f"al{self.n}"] = self.r.uniform(0.05, 0.3, (c, 1, 1)).astype(np.float32)
            self.nodes.append(_node("PRelu", [x, f"al{self.n}"], [y]))
        else:
            self.nodes.append(_node("Relu", [x], [y]))
        return y

    def add(self, a, b):
        self.n += 1
        self.nodes.append(_node("Add", [a, b], [f"s{self.n}"]))
        return f"s{self.n}"


def _node(op, ins, outs, **attrs):
    from onnx import helper

    return helper.make_node(op, ins, outs, **attrs)


def blazeface_like(size: int = 32, width: int = 16, blocks: int = 2, seed: int = 0):
    """[1, 3, S, S] -> conv 3x3 s2 -> PReLU -> blocks x [depthwise 3x3 -> conv 1x1 -> Add (residual) -> PReLU]
    -> conv 1x1 heads 'boxes' [1, 4, S/2, S/2] and 'scores' [1, 2, S/2, S/2]: BlazeFace's block, PReLU after every
    residual join."""
    net = _Net(seed)
    x = net.conv("x", 3, width, stride=2, act="prelu")
    for _ in range(blocks):
        d = net.conv(x, width, width, group=width)
        x = net.act(net.add(net.conv(d, width, width, k=1), x), width, "prelu")
    net.nodes.append(_node("Conv", [x, "wb", "bb"], ["boxes"]))
    net.nodes.append(_node("Conv", [x, "ws", "bs"], ["scores"]))
    net.inits |= {"wb": net.w(4, width, 1, 1), "bb": net.w(4, s=0.05), "ws": net.w(2, width, 1, 1),
                  "bs": net.w(2, s=0.05)}
    half = size // 2
    return _build(net.nodes, net.inits, size, {"boxes": [1, 4, half, half], "scores": [1, 2, half, half]},
                  "blazeface_like")


def depthwise_heavy(size: int = 32, width: int = 32, depth: int = 4, seed: int = 1):
    """[1, 3, S, S] -> conv 1x1 (3 -> C) -> depth x depthwise 3x3 (ReLU) -> conv 1x1 (C -> 8) 'y': most of its
    MACs in depthwise, whose int8 kernel is slower than float32 under XNNPACK."""
    net = _Net(seed)
    x = net.conv("x", 3, width, k=1, act="relu")
    for _ in range(depth):
        x = net.conv(x, width, width, group=width, act="relu")
    net.inits |= {"wy": net.w(8, width, 1, 1), "by": net.w(8, s=0.05)}
    net.nodes.append(_node("Conv", [x, "wy", "by"], ["y"]))
    return _build(net.nodes, net.inits, size, {"y": [1, 8, size, size]}, "depthwise_heavy")


def plain_conv(size: int = 32, width: int = 32, depth: int = 3, seed: int = 2):
    """[1, 3, S, S] -> conv 3x3 (3 -> C, ReLU) -> depth x conv 3x3 (C -> C, ReLU) -> conv 1x1 (C -> 8) 'y': every
    op faster in int8."""
    net = _Net(seed)
    x = net.conv("x", 3, width, act="relu")
    for _ in range(depth):
        x = net.conv(x, width, width, act="relu")
    net.inits |= {"wy": net.w(8, width, 1, 1), "by": net.w(8, s=0.05)}
    net.nodes.append(_node("Conv", [x, "wy", "by"], ["y"]))
    return _build(net.nodes, net.inits, size, {"y": [1, 8, size, size]}, "plain_conv")


def samples(size: int, n: int = 12, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (n, 1, 3, size, size)).astype(np.float32)
