"""Our own int8 stand-in models for the MCU comparison (issue 25; section 7 of benchmarks/c_runtime.py with
--mcu-zoo): model families the zoo (benchmarks/zoo.py, image networks through our converter) does not cover --
recurrent (LSTM, SVDF), 1-D temporal convolution, attention, element-wise-heavy networks -- written by our own
writer at several sizes, so that the kernels are measured against TFLM + CMSIS-NN (benchmarks/tflm_cmsis.py) on
more than ../shared's few models of each kind.

A family is a function returning its models' paths, registered with @family("a title"); c_runtime.py's section 7
shows one table per family. Each model is built once and cached under the zoo's cache folder by a hash of its
family function's source and its name (an edit of that function rebuilds its models, no other), written
atomically.

    python benchmarks/mcu_standins.py            # build every family, print the paths
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

FAMILIES: dict[str, Callable[[], list[Path]]] = {}  # title: function -> model paths


def family(title: str):
    """Register a family function under the title its section-7 table carries."""

    def register(fn: Callable[[], list[Path]]):
        FAMILIES[title] = fn
        return fn

    return register


def cached(name: str, builder: Callable, build: Callable[[], bytes]) -> Path:
    """The model ``name`` of family function ``builder``: built by ``build()`` when its cache file is missing.
    The key is the builder's source and the name, so an edit of one family rebuilds that family only."""
    import zoo

    key = hashlib.sha256(inspect.getsource(builder).encode() + name.encode()).hexdigest()[:16]
    path = zoo.cache_folder() / f"{name}_{key}.tflite"
    if not path.is_file():
        data = build()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


def main() -> int:
    for title, fn in FAMILIES.items():
        print(title)
        for p in fn():
            print(f"   {p}")
    return 0


# ---------------------------------------------------------------------------------------------- families
# (each family below in its own section; keep the sections apart)


# ---------------------------------------------------------------------------------------------- attention
@family("attention (int8 transformer blocks, KWT-like keyword spotters)")
def attention() -> list[Path]:
    """int8 transformer encoder blocks and KWT-like keyword spotters (Keyword Transformer: a patch-embedding FC
    per spectrogram frame, pre-norm encoder blocks, a class head), written as float graphs by the zoo's _Net and
    converted by our converter (int8, int8 I/O, calibrated on uniform [-1, 1] samples).

    A block, on tokens x [T, D] with H heads of width dh = D / H:
      LayerNorm as the converter keeps it: MEAN(-1) / SUB / MUL (the square) / MEAN(-1) / ADD eps / RSQRT / MUL /
        MUL gamma / ADD beta -- TFLM runs int8 RSQRT (elementwise.cc) and MEAN; our converter turns the exporters'
        DIV(x, SQRT(v)) into MUL(x, RSQRT(v)) (converters/passes/arith.py);
      Q, K, V = FC(x) (Q scaled by 1/sqrt(dh): a MUL by a constant); H = 1: Q.K^T as one BATCH_MATMUL with
        adj_y on [T, D]; H > 1: RESHAPE [T, H, dh] + TRANSPOSE [H, T, dh] of each, BATCH_MATMUL(Q, K, adj_y)
        [H, T, T]; SOFTMAX over the last axis; BATCH_MATMUL(P, V) [H, T, dh] (rhs not transposed), TRANSPOSE +
        RESHAPE back to [T, D]; FC out; ADD residual;
      the MLP FC(2D) -> GELU -> FC(D), ADD residual. GELU as x * LOGISTIC(1.702 x) (the sigmoid form, QuickGELU):
        TFLM has no GELU kernel and our converter fuses the erf / tanh forms into one GELU op (passes/gelu.py,
        on every target profile: edge-sdk's runtimes have it), which TFLM then refuses; the sigmoid form is not
        GELU within the fusion's tolerance, so it stays LOGISTIC + MUL, which TFLM runs.
    Sizes: tokens 16-64, width 32-96, 1-4 heads; the KWT nets at 16 and 49 frames of 40 features."""
    import numpy as np

    import zoo
    from converters import convert

    def axes(net, values):
        return net.g.constant(net._name("axes"), np.array(values, np.int32))

    def mean_last(net, x):  # [T, D] -> [T, 1]
        y = net._t("mean", (net.shape[x][0], 1))
        net.g.op("MEAN", [x, axes(net, [-1])], [y], keep_dims=True)
        return y

    def layer_norm(net, x):
        d = net.binary("SUB", x, mean_last(net, x))
        var = mean_last(net, net.binary("MUL", d, d))
        y = net.binary("MUL", d, net.unary("RSQRT", net.scalar("ADD", var, 1e-5)))
        width = net.shape[x][1]
        y = net.binary("MUL", y, net._const("ln_gamma", net.rng.uniform(0.8, 1.2, (width,))))
        return net.binary("ADD", y, net._const("ln_beta", net._bias(width)))

    def transpose(net, x, perm):
        y = net._t("transpose", tuple(net.shape[x][p] for p in perm))
        net.g.op("TRANSPOSE", [x, axes(net, perm)], [y])
        return y

    def bmm(net, a, b, shape, adj_y):
        y = net._t("bmm", shape)
        net.g.op("BATCH_MATMUL", [a, b], [y], adj_x=False, adj_y=adj_y)
        return y

    def block(net, x, heads):
        tokens, width = net.shape[x]
        dh = width // heads
        h = layer_norm(net, x)
        q = net.scalar("MUL", net.fc(h, width), float(1.0 / np.sqrt(dh)))
        k, v = net.fc(h, width), net.fc(h, width)
        if heads == 1:  # [T, D] . [T, D]^T -> [T, T]
            p = net.unary("SOFTMAX", bmm(net, q, k, (tokens, tokens), True), beta=1.0)
            o = bmm(net, p, v, (tokens, width), False)
        else:  # [H, T, dh] . [H, T, dh]^T -> [H, T, T]; [H, T, T] . [H, T, dh] -> [H, T, dh]
            q, k, v = (transpose(net, net.reshape(t, (tokens, heads, dh)), (1, 0, 2)) for t in (q, k, v))
            p = net.unary("SOFTMAX", bmm(net, q, k, (heads, tokens, tokens), True), beta=1.0)
            o = bmm(net, p, v, (heads, tokens, dh), False)
            o = net.reshape(transpose(net, o, (1, 0, 2)), (tokens, width))
        x = net.binary("ADD", x, net.fc(o, width, 0.5))
        u = net.fc(layer_norm(net, x), 2 * width)
        g = net.binary("MUL", u, net.unary("LOGISTIC", net.scalar("MUL", u, 1.702)))
        return net.binary("ADD", x, net.fc(g, width, 0.5))

    def int8(float_bytes: bytes, shape) -> bytes:
        samples = np.random.default_rng(1).uniform(-1, 1, (8, *shape)).astype(np.float32)
        return convert(float_bytes, quantize="int8", calibration=samples, precision="int8", allow_lossy=True,
                       io="int8", task="raw").tflite

    def encoder_block(tokens: int, width: int, heads: int) -> bytes:
        net = zoo._Net(seed=tokens + width + heads)
        x = net.input((1, tokens, width))
        y = block(net, net.reshape(x, (tokens, width)), heads)
        return int8(net.build(net.reshape(y, (1, tokens, width)),
                              description=f"attention block T{tokens} D{width} H{heads}"), (1, tokens, width))

    def kwt(frames: int, features: int, width: int, heads: int, blocks: int = 2, classes: int = 12) -> bytes:
        net = zoo._Net(seed=frames + width)
        x = net.input((1, frames, features))
        t = net.fc(net.reshape(x, (frames, features)), width)  # patch embedding: one patch per frame
        for _ in range(blocks):
            t = block(net, t, heads)
        pooled = net._t("mean", (1, width))  # mean over the tokens (KWT's class token, as a mean)
        net.g.op("MEAN", [layer_norm(net, t), axes(net, [0])], [pooled], keep_dims=True)
        out = net.unary("SOFTMAX", net.fc(pooled, classes, 3.0), beta=1.0)
        return int8(net.build(out, description=f"KWT-like F{frames}x{features} D{width} H{heads} x{blocks}"),
                    (1, frames, features))

    specs = {f"attn_block_t{t}_d{d}_h{h}": (lambda t=t, d=d, h=h: encoder_block(t, d, h))
             for t, d, h in ((16, 32, 1), (32, 64, 2), (64, 96, 4), (24, 48, 3))}
    specs.update({f"kwt_f{f}_d{d}_h{h}": (lambda f=f, d=d, h=h: kwt(f, 40, d, h)) for f, d, h in ((16, 32, 2),
                                                                                                    (49, 64, 4))})
    return [cached(name, attention, build) for name, build in specs.items()]


if __name__ == "__main__":
    raise SystemExit(main())
