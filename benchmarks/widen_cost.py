"""Issue 24 point 4: what widening one op costs in time, per op kind, on a float target's runtimes.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/widen_cost.py [--rounds 5] [--invokes 20] [--only conv1x1 add]

Each item is a one-op float32 model built by our writer (tests/oprunner.op_model, random weights, seed 0), then
quantized by our quantize() to int8 and to int16x8 (integer I/O: only the op is timed; calibration: 16 random
samples). The three models run in LiteRT (one thread; float32 goes through XNNPACK, int8 through XNNPACK's
QS8 / QU8 where it has them, int16x8 through LiteRT's reference kernels) and in our C runtime (one thread), in
turns, ``--rounds`` rounds of ``--invokes`` invokes each; the figure is the best invoke over the rounds (least
disturbed by other processes on a loaded host). Prints us per invoke and the ratios int8 / float32 and
int16x8 / float32 per runtime: the widening rule's "which wider type is cheaper" in figures. QUANTIZE / DEQUANTIZE
(what an int8 island costs at its edges) are timed as one-op integer models.

Then the op table's speed facts (a row's ``speed``: converters.quantize.speed reads them) as measured here, one line
per op to paste into its row, beside the value the row holds: each item's time per unit (a MAC of a weighted op,
an output element otherwise: speed.op_units) over the runtime's float32 CONV_2D time per MAC in the same run, the
geomean over the op's items.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from convert_palm import best_ms  # noqa: E402  (the benchmarks' one best-of-N invoke loop)

ROOT = Path(__file__).resolve().parent.parent


def _const(rng, shape, scale=0.5):
    from tests.oprunner import T

    return T(shape, "FLOAT32", data=rng.uniform(-scale, scale, shape).astype(np.float32))


def conv(h: int, c: int, o: int, k: int) -> bytes:
    """CONV_2D k x k stride 1 SAME, 1 x h x h x c -> 1 x h x h x o, bias, RELU."""
    from tests.oprunner import T, op_model

    rng = np.random.default_rng(0)
    return op_model("CONV_2D", [T((1, h, h, c), "FLOAT32"), _const(rng, (o, k, k, c), 0.2), _const(rng, (o,))],
                    [T((1, h, h, o), "FLOAT32")],
                    options=dict(padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU"))


def depthwise(h: int, c: int, s: int) -> bytes:
    """DEPTHWISE_CONV_2D 3x3 stride s SAME (multiplier 1), 1 x h x h x c, bias, no activation."""
    from tests.oprunner import T, op_model

    rng = np.random.default_rng(0)
    oh = -(-h // s)
    return op_model("DEPTHWISE_CONV_2D", [T((1, h, h, c), "FLOAT32"), _const(rng, (1, 3, 3, c)), _const(rng, (c,))],
                    [T((1, oh, oh, c), "FLOAT32")],
                    options=dict(padding="SAME", stride_w=s, stride_h=s, depth_multiplier=1,
                                 fused_activation_function="NONE"))


def add(h: int, c: int) -> bytes:
    """ADD of two 1 x h x h x c inputs (a residual join)."""
    from tests.oprunner import T, op_model

    return op_model("ADD", [T((1, h, h, c), "FLOAT32"), T((1, h, h, c), "FLOAT32")], [T((1, h, h, c), "FLOAT32")],
                    options=dict(fused_activation_function="NONE"))


def prelu(h: int, c: int) -> bytes:
    """PRELU on 1 x h x h x c with a per-channel slope (1 x 1 x c: palm's)."""
    from tests.oprunner import T, op_model

    rng = np.random.default_rng(0)
    return op_model("PRELU", [T((1, h, h, c), "FLOAT32"), _const(rng, (1, 1, c), 0.3)], [T((1, h, h, c), "FLOAT32")])


def fully_connected(k: int, n: int) -> bytes:
    """FULLY_CONNECTED 1 x k -> 1 x n, bias."""
    from tests.oprunner import T, op_model

    rng = np.random.default_rng(0)
    return op_model("FULLY_CONNECTED", [T((1, k), "FLOAT32"), _const(rng, (n, k), 0.05), _const(rng, (n,))],
                    [T((1, n), "FLOAT32")])


def max_pool(h: int, c: int) -> bytes:
    """MAX_POOL_2D 2x2 stride 2 VALID on 1 x h x h x c (BlazeFace's downsampling path)."""
    from tests.oprunner import T, op_model

    return op_model("MAX_POOL_2D", [T((1, h, h, c), "FLOAT32")], [T((1, h // 2, h // 2, c), "FLOAT32")],
                    options=dict(padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2,
                                 fused_activation_function="NONE"))


def pad_channels(h: int, c: int) -> bytes:
    """PAD of 1 x h x h x c to 2c channels (zeros after): BlazeFace's residual channel padding."""
    from tests.oprunner import T, op_model

    pads = T((4, 2), "INT32", data=np.array([[0, 0], [0, 0], [0, 0], [0, c]], np.int32))
    return op_model("PAD", [T((1, h, h, c), "FLOAT32"), pads], [T((1, h, h, 2 * c), "FLOAT32")])


def resize_bilinear(h: int, c: int) -> bytes:
    """RESIZE_BILINEAR x2 of 1 x h x h x c (an FPN's upsampling)."""
    from tests.oprunner import T, op_model

    size = T((2,), "INT32", data=np.array([2 * h, 2 * h], np.int32))
    return op_model("RESIZE_BILINEAR", [T((1, h, h, c), "FLOAT32"), size], [T((1, 2 * h, 2 * h, c), "FLOAT32")],
                    options=dict(align_corners=False, half_pixel_centers=False))


def conversion(h: int, c: int, to_int: bool) -> bytes:
    """QUANTIZE (float32 -> int8) or DEQUANTIZE (int8 -> float32) of 1 x h x h x c: what an int8 island costs at its
    edges. Timed once per runtime (its int8 column)."""
    from tests.oprunner import T, op_model

    f, q = T((1, h, h, c), "FLOAT32"), T((1, h, h, c), "INT8", scale=0.02, zero_point=-3)
    return op_model("QUANTIZE", [f], [q]) if to_int else op_model("DEQUANTIZE", [q], [f])


# palm_detection_lite's shapes (192 x 192 input: 96 / 48 / 24 / 12 maps, 32 .. 256 channels) and one FC
ITEMS = {
    "conv1x1": [("conv 1x1 48x48 32->64", lambda: conv(48, 32, 64, 1)),
                ("conv 1x1 24x24 64->128", lambda: conv(24, 64, 128, 1)),
                ("conv 1x1 12x12 128->256", lambda: conv(12, 128, 256, 1))],
    "conv3x3": [("conv 3x3 96x96 3->32", lambda: conv(96, 3, 32, 3)),
                ("conv 3x3 24x24 64->64", lambda: conv(24, 64, 64, 3))],
    "depthwise": [("dw 3x3 s1 48x48x64", lambda: depthwise(48, 64, 1)),
                  ("dw 3x3 s2 48x48x64", lambda: depthwise(48, 64, 2)),
                  ("dw 3x3 s1 12x12x256", lambda: depthwise(12, 256, 1))],
    "add": [("add 96x96x32", lambda: add(96, 32)), ("add 48x48x64", lambda: add(48, 64)),
            ("add 24x24x128", lambda: add(24, 128)), ("add 12x12x256", lambda: add(12, 256)),
            ("add 6x6x256", lambda: add(6, 256))],
    "pad": [("pad channels 48x48x32", lambda: pad_channels(48, 32)),
            ("pad channels 12x12x128", lambda: pad_channels(12, 128))],
    "resize": [("resize x2 12x12x256", lambda: resize_bilinear(12, 256)),
               ("resize x2 6x6x256", lambda: resize_bilinear(6, 256))],
    "prelu": [("prelu 48x48x64", lambda: prelu(48, 64)), ("prelu 12x12x256", lambda: prelu(12, 256))],
    "fc": [("fc 1024->256", lambda: fully_connected(1024, 256)), ("fc 256->1000", lambda: fully_connected(256, 1000))],
    "maxpool": [("maxpool 2x2 48x48x64", lambda: max_pool(48, 64)),
                ("maxpool 2x2 24x24x128", lambda: max_pool(24, 128))],
    "quantize": [("quantize 48x48x64", lambda: conversion(48, 64, True)),
                 ("quantize 12x12x256", lambda: conversion(12, 256, True))],
    "dequantize": [("dequantize 48x48x64", lambda: conversion(48, 64, False)),
                   ("dequantize 12x12x256", lambda: conversion(12, 256, False))],
}
CONVERSION_GROUPS = ("quantize", "dequantize")  # one-op integer models, timed as they are (no float32 twin)
KINDS = ("float32", "int8", "int16x8")


def _variants(float_bytes: bytes) -> dict[str, bytes]:
    """The float32 one-op model and its int8 / int16x8 quantizations by our quantize() (integer I/O)."""
    from converters.quantize import quantize
    from edge_sdk.model import read_model

    model = read_model(float_bytes)
    sg = model.subgraphs[0]
    rng = np.random.default_rng(1)
    samples = [{sg.tensors[t].name: rng.uniform(-1, 1, sg.tensors[t].shape).astype(np.float32) for t in sg.inputs}
               for _ in range(16)]
    out = {"float32": float_bytes}
    for mode in ("int8", "int16x8"):
        out[mode] = quantize(read_model(float_bytes), samples, mode=mode, io="int8", measure_error=False).tflite()
    return out


def _interpreter(data: bytes, runtime: str):
    if runtime == "litert":
        from ai_edge_litert.interpreter import Interpreter

        it = Interpreter(model_content=data, num_threads=1)
    else:
        from edge_sdk import Interpreter

        it = Interpreter(model_content=data, backend="c", num_threads=1)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
    it.invoke()
    return it


def measure(variants: dict[str, bytes], rounds: int, invokes: int) -> dict[tuple[str, str], float]:
    """(runtime, kind) -> best us per invoke, the kinds taking turns each round."""
    its = {(rt, k): _interpreter(data, rt) for rt in RUNTIMES for k, data in variants.items()}
    best = dict.fromkeys(its, float("inf"))
    for r in range(rounds):
        for key in list(its)[r % len(its):] + list(its)[:r % len(its)]:
            best[key] = min(best[key], 1e3 * best_ms(its[key], invokes))
    return best


RUNTIMES = ("litert", "c")  # op_table.SPEED_RUNTIMES: LiteRT (XNNPACK on), edge-sdk's C runtime
DTYPE = {"float32": "float32", "int8": "int8", "int16x8": "int16"}  # a kind -> its op_table.SPEED_DTYPES name


def _op_and_units(data: bytes) -> tuple[str, int]:
    """The one op's name and its units (converters.quantize.speed.op_units: MACs or output elements)."""
    from converters.quantize.speed import op_units
    from edge_sdk.model import read_model

    model = read_model(data)
    return model.op_name(model.subgraphs[0].operators[0]), op_units(model, 0)


def _geo(values) -> float:
    return float(np.exp(np.mean(np.log(values))))


def speed_facts(timed: list) -> dict:
    """op -> {(runtime, dtype): MAC-equivalents per unit}: each item's us per unit over the runtime's float32
    CONV_2D us per MAC (the geomean of the conv items of this run), the geomean over an op's items."""
    conv = {rt: _geo([t[rt, "float32"] / u for op, u, t in timed if op == "CONV_2D"]) for rt in RUNTIMES}
    per_op: dict = {}
    for op, units, t in timed:
        for (rt, kind), us in t.items():
            per_op.setdefault(op, {}).setdefault((rt, DTYPE[kind]), []).append(us / units / conv[rt])
    return {op: {key: _geo(v) for key, v in facts.items()} for op, facts in per_op.items()}


def facts_text(facts: dict) -> list[str]:
    """One line per op: the row's ``speed=`` value measured here, and the one the op table holds."""
    from edge_sdk.runtime import op_table

    lines = []
    for op, f in facts.items():
        value = ", ".join(f"('{rt}', '{dt}', {c:.3g})" for (rt, dt), c in sorted(f.items()))
        lines.append(f"{op:18} speed=({value}),")
        lines.append(f"{'':18} table: {op_table.row(op).speed or '()'}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=sorted(ITEMS), default=list(ITEMS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--invokes", type=int, default=20)
    a = ap.parse_args(argv)
    sys.path[:0] = [str(ROOT)]
    print(f"one thread; best invoke of {a.rounds} rounds x {a.invokes}; us per invoke; ratio = kind / float32")
    print(f"{'item':26} {'LiteRT f32':>10} {'int8':>8} {'int16x8':>8} {'i8/f':>6} {'i16/f':>6} | "
          f"{'C f32':>8} {'int8':>8} {'int16x8':>8} {'i8/f':>6} {'i16/f':>6}")
    ratios = {(rt, k): [] for rt in RUNTIMES for k in KINDS[1:]}
    timed = []
    for group in a.only:
        for name, build in ITEMS[group]:
            data = build()
            variants = {"int8": data} if group in CONVERSION_GROUPS else _variants(data)
            t = measure(variants, a.rounds, a.invokes)
            timed.append((*_op_and_units(data), t))
            if group in CONVERSION_GROUPS:
                print(f"{name:26} {'':10} {t['litert', 'int8']:8.1f} {'':24} | {'':8} {t['c', 'int8']:8.1f}",
                      flush=True)
                continue
            cells = []
            for rt in RUNTIMES:
                f = t[rt, "float32"]
                cells.append(f"{f:10.1f} {t[rt, 'int8']:8.1f} {t[rt, 'int16x8']:8.1f} "
                             f"{t[rt, 'int8'] / f:6.2f} {t[rt, 'int16x8'] / f:6.2f}")
                for k in KINDS[1:]:
                    ratios[rt, k].append(t[rt, k] / f)
            print(f"{name:26} {cells[0]} | {cells[1]}", flush=True)
    geo = {key: _geo(v) for key, v in ratios.items() if v}
    print("geomean kind / float32: " + ", ".join(f"{rt} {k} {g:.2f}" for (rt, k), g in geo.items()))
    if any(op == "CONV_2D" for op, _, _ in timed):
        print("op-table speed facts (MAC-equivalents of float32 CONV_2D per unit: a MAC of a weighted op, an output "
              "element otherwise), measured here:")
        print("\n".join(facts_text(speed_facts(timed))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
