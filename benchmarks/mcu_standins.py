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


# ---------------------------------------------------------------------------------- element-wise heavy (elem25)
# Nets whose cost is not in their convolutions: ADD skips, squeeze-excite MULs, PReLU + MAX_POOL, AVERAGE_POOL,
# PAD, RESHAPE and CONCATENATION, kept cheap in convolution (narrow 1x1 / depthwise) so the per-op figures of
# those ops decide the invoke. Two sizes of each (input side / width), so a kernel is not tuned to one shape.
ELEM_SIZES = ((16, 8), (32, 16))  # (input side, base channels)


def _elem_resnet(net, x: int, c: int) -> list[int]:
    """A small ResNet: 1x1 stem, three stages of two residual blocks (depthwise 3x3 -> 1x1, ADD skip, RELU ADD),
    a stride-2 stage entry through MAX_POOL + PAD of the channels (as BlazeFace's), MEAN -> FC head."""
    x = net.conv(x, c, 1, act="RELU")
    for stage, cout in enumerate((c, 2 * c, 3 * c)):
        if stage:
            x = net.pad_channels(net.pool("MAX_POOL_2D", x, 2, 2), cout - net.shape[x][-1])
        for _ in range(2):
            y = net.conv(net.dw(x, 3, act="RELU"), cout, 1, gain=0.7)
            x = net.binary("ADD", x, y, act="RELU")
    return [net.fc(net.mean(x, keep_dims=False), 10)]


def _elem_se(net, x: int, c: int) -> list[int]:
    """Squeeze-excite gated blocks: y = x * LOGISTIC(FC(RELU(FC(MEAN(x))))) broadcast over H, W, then a
    second MUL by a per-channel constant gate and an ADD skip."""
    x = net.conv(x, c, 1, act="RELU")
    for cout in (c, 2 * c, 2 * c):
        x = net.conv(net.dw(x, 3, act="RELU"), cout, 1, gain=0.7)
        squeeze = net.fc(net.unary("RELU", net.fc(net.mean(x, keep_dims=False), max(4, cout // 4))), cout)
        gate = net.reshape(net.unary("LOGISTIC", squeeze), (1, 1, 1, cout))
        gated = net.binary("MUL", x, gate)
        x = net.binary("ADD", x, net.binary("MUL", gated, net._const("gain_c", net.rng.uniform(0.5, 1.5, (cout,)))))
    return [net.fc(net.mean(x, keep_dims=False), 10)]


def _elem_prelu_pool(net, x: int, c: int) -> list[int]:
    """PReLU after every depthwise / 1x1 and ADD, MAX_POOL 2x2 s2 and 3x3 s1 SAME, PAD of channels."""
    x = net.prelu(net.conv(x, c, 1))
    for cout in (c, 2 * c, 3 * c):
        y = net.prelu(net.conv(net.prelu(net.dw(x, 3)), cout, 1, gain=0.7))
        x = net.prelu(net.binary("ADD", net.pad_channels(x, cout - net.shape[x][-1]) if cout > net.shape[x][-1]
                                 else x, y))
        x = net.pool("MAX_POOL_2D", x, 3, 1, "SAME")
        x = net.pool("MAX_POOL_2D", x, 2, 2)
    b, h, w, ch = net.shape[x]
    return [net.reshape(x, (1, h * w, ch))]


def _elem_kws_pool(net, x: int, c: int) -> list[int]:
    """A pooling-heavy KWS-like net on a [1, T, F, 1] spectrogram: conv, AVERAGE_POOL 2x2 s2 and 3x3 s1 SAME
    (a smoothing pool), a final AVERAGE_POOL over the whole map, RESHAPE, FC."""
    x = net.conv(x, c, 3, act="RELU")
    for cout in (c, 2 * c):
        x = net.pool("AVERAGE_POOL_2D", x, 3, 1, "SAME")
        x = net.conv(net.dw(x, 3, act="RELU"), cout, 1, act="RELU", gain=0.7)
        x = net.pool("AVERAGE_POOL_2D", x, 2, 2)
    b, h, w, ch = net.shape[x]
    x = net.pool("AVERAGE_POOL_2D", x, h, 1) if h == w else net.pool("AVERAGE_POOL_2D", x, min(h, w), 1)
    b, h, w, ch = net.shape[x]
    return [net.fc(net.reshape(x, (1, h * w * ch)), 12)]


def _elem_unet(net, x: int, c: int) -> list[int]:
    """A concat-heavy U-Net-ish decoder: MAX_POOL down, RESIZE_BILINEAR up, CONCATENATION of the skip and the
    up path (channels) at every level, two-way concatenations of branches, LOGISTIC."""
    skips = []
    for level in range(2):
        x = net.conv(x, c * (level + 1), 1, act="RELU")
        skips.append(x)
        x = net.pool("MAX_POOL_2D", x, 2, 2)
    x = net.concat([net.dw(x, 3, act="RELU"), x], 3)
    for level in (1, 0):
        x = net.concat([net.resize(x, 2), skips[level]], 3)
        x = net.conv(x, c, 1, act="RELU")
        x = net.concat([x, net.dw(x, 3, act="RELU")], 3)
    return [net.unary("LOGISTIC", net.conv(x, 1, 1, gain=0.5))]


ELEM_NETS = {"resnet": _elem_resnet, "se": _elem_se, "prelu_pool": _elem_prelu_pool, "kws_pool": _elem_kws_pool,
             "unet_cat": _elem_unet}


def elem_float_model(arch: str, side: int, c: int) -> tuple[bytes, tuple[int, ...]]:
    """The float32 model of ``arch`` at one size and its input shape ([1, side, side, 3], KWS: [1, 2 side, side / 2,
    1], a spectrogram's long time axis)."""
    import zoo

    net = zoo._Net(seed=side + c)
    shape = (1, 2 * side, side // 2, 1) if arch == "kws_pool" else (1, side, side, 3)
    outputs = ELEM_NETS[arch](net, net.input(shape), c)
    return net.build(*outputs, description=f"edge-sdk mcu stand-in elem {arch} {side} c{c}"), shape


def elem_int8_model(arch: str, side: int, c: int) -> bytes:
    """Our converter's full-integer model (int8 I/O) of elem_float_model, calibrated on seeded uniform [-1, 1]."""
    import numpy as np
    from converters import convert

    data, shape = elem_float_model(arch, side, c)
    calibration = np.random.default_rng(side).uniform(-1, 1, (8, *shape[1:])).astype(np.float32)
    return convert(data, quantize="int8", calibration=calibration, precision="int8", allow_lossy=True, io="int8",
                   task="raw").tflite


@family("element-wise heavy stand-ins")
def elem_standins() -> list[Path]:
    return [cached(f"elem_{arch}_{side}_c{c}_int8", elem_standins,
                   lambda arch=arch, side=side, c=c: elem_int8_model(arch, side, c))
            for arch in ELEM_NETS for side, c in ELEM_SIZES]


if __name__ == "__main__":
    raise SystemExit(main())
