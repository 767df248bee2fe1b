"""Train a small CNN on scikit-learn's bundled 8x8 digits in pure numpy and export it to ONNX.

    .venv/bin/python examples/digits/train.py            # writes digits_cnn.onnx and labels.txt beside this file
    .venv/bin/python examples/digits/train.py --eval-npz digits_test.npz   # also the held-out split as .npz

The network: Conv 3x3 (1 -> 8 channels, same padding) -> ReLU -> MaxPool 2x2 -> Flatten -> Gemm (128 -> 10).
Input is NCHW float32 (1, 1, 8, 8) holding pixel / 16 (the dataset's pixels are 0..16); output is 10 logits.
Training is seeded and takes a few seconds on one core. The data ships inside scikit-learn (no download).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 0
TEST_FRACTION = 0.2
CHANNELS = 8
LABELS = [str(d) for d in range(10)]
# How to feed the model (an edge_sdk.tasks.preprocess.Preprocess as a dict; the converted package's manifest
# records it): 8x8 gray images, NCHW, 0..255 pixels mapped to 0..1 (the dataset's 0..16 pixels, / 16).
PREPROCESS = {"size": [8, 8], "channels": "GRAY", "layout": "NCHW", "value_range": [0.0, 1.0],
              "mean": [0.0], "std": [1.0]}


def load_split():
    """(x_train, y_train, x_test, y_test): x float32 (N, 1, 8, 8) in [0, 1], y int64; a fixed seeded split."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images.astype(np.float32) / 16.0)[:, None, :, :]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(SEED).permutation(len(y))
    n_test = int(round(len(y) * TEST_FRACTION))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def _im2col(x):
    """(N, 1, 8, 8) -> (N, 64, 9): each output position's 3x3 neighbourhood (zero padded)."""
    n = x.shape[0]
    p = np.pad(x[:, 0], ((0, 0), (1, 1), (1, 1)))
    cols = np.stack([p[:, dy:dy + 8, dx:dx + 8] for dy in range(3) for dx in range(3)], axis=-1)
    return cols.reshape(n, 64, 9)


def forward(params, x, keep=False):
    w1, b1, w2, b2 = params
    cols = _im2col(x)                                       # (N, 64, 9)
    conv = cols @ w1.reshape(CHANNELS, 9).T + b1            # (N, 64, C)
    act = np.maximum(conv, 0.0).reshape(-1, 8, 8, CHANNELS)  # NHWC
    blocks = act.reshape(-1, 4, 2, 4, 2, CHANNELS).transpose(0, 1, 3, 5, 2, 4).reshape(-1, 4, 4, CHANNELS, 4)
    pooled = blocks.max(axis=-1)                            # (N, 4, 4, C)
    flat = pooled.transpose(0, 3, 1, 2).reshape(-1, CHANNELS * 16)  # ONNX Flatten of NCHW
    logits = flat @ w2.T + b2
    if keep:
        return logits, (cols, conv, blocks, pooled, flat)
    return logits


def _grads(params, x, y):
    w1, b1, w2, b2 = params
    n = x.shape[0]
    logits, (cols, conv, blocks, pooled, flat) = forward(params, x, keep=True)
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(n), y] + 1e-12).mean()
    d = p
    d[np.arange(n), y] -= 1.0
    d /= n
    gw2, gb2 = d.T @ flat, d.sum(axis=0)
    dflat = d @ w2                                          # (N, C*16)
    dpooled = dflat.reshape(-1, CHANNELS, 4, 4).transpose(0, 2, 3, 1)
    mask = blocks == pooled[..., None]
    mask = mask / np.maximum(mask.sum(axis=-1, keepdims=True), 1)
    dblocks = mask * dpooled[..., None]                     # (N, 4, 4, C, 4)
    dact = dblocks.reshape(-1, 4, 4, CHANNELS, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(-1, 64, CHANNELS)
    dconv = dact * (conv > 0)
    gw1 = np.einsum("npc,npk->ck", dconv, cols).reshape(CHANNELS, 1, 3, 3)
    gb1 = dconv.sum(axis=(0, 1))
    return loss, [gw1, gb1, gw2, gb2]


def train(epochs: int = 40, batch: int = 32, lr: float = 0.01):
    """Adam on cross-entropy; returns (params, test accuracy)."""
    x_train, y_train, x_test, y_test = load_split()
    rng = np.random.default_rng(SEED)
    params = [
        (rng.standard_normal((CHANNELS, 1, 3, 3)) * np.sqrt(2 / 9)).astype(np.float32),
        np.zeros(CHANNELS, np.float32),
        (rng.standard_normal((10, CHANNELS * 16)) * np.sqrt(1 / (CHANNELS * 16))).astype(np.float32),
        np.zeros(10, np.float32),
    ]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    step = 0
    for _ in range(epochs):
        order = rng.permutation(len(y_train))
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            _, grads = _grads(params, x_train[idx], y_train[idx])
            step += 1
            for i, g in enumerate(grads):
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                mhat = m[i] / (1 - 0.9 ** step)
                vhat = v[i] / (1 - 0.999 ** step)
                params[i] = (params[i] - lr * mhat / (np.sqrt(vhat) + 1e-8)).astype(np.float32)
    accuracy = float((forward(params, x_test).argmax(axis=1) == y_test).mean())
    return params, accuracy


def export_onnx(params, path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w1, b1, w2, b2 = params
    nodes = [
        helper.make_node("Conv", ["input", "conv.weight", "conv.bias"], ["conv"], name="conv",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"], name="relu"),
        helper.make_node("MaxPool", ["relu"], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
    ]
    inits = [numpy_helper.from_array(np.asarray(a, np.float32), name)
             for a, name in ((w1, "conv.weight"), (b1, "conv.bias"), (w2, "fc.weight"), (b2, "fc.bias"))]
    graph = helper.make_graph(
        nodes, "digits_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="edge-sdk digits")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", default=str(HERE / "digits_cnn.onnx"))
    parser.add_argument("--labels", default=str(HERE / "labels.txt"))
    parser.add_argument("--eval-npz", help="also write the held-out split (x, y) to this .npz")
    parser.add_argument("--epochs", type=int, default=40)
    args = parser.parse_args(argv)
    params, accuracy = train(epochs=args.epochs)
    export_onnx(params, args.output)
    Path(args.labels).write_text("\n".join(LABELS) + "\n")
    if args.eval_npz:
        _, _, x_test, y_test = load_split()
        np.savez(args.eval_npz, x=x_test, y=y_test)
    print(f"held-out top-1 {100 * accuracy:.2f}% -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
