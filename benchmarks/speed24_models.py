"""Issue 24 (speed): the estimate against LiteRT on the models tests/speed24_models.py builds.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/speed24_models.py [--size 128] [--rounds 5] [--invokes 10]

Each model (BlazeFace-like PReLU net, depthwise-heavy net, plain conv net) is converted for raspberry-pi-4 three
ways: ``--quantize none`` (the float source), int8 with ``keep_int8`` (the int8 model the speed rule shapes: its
slower-in-int8 ops float32 where that pays, written even when estimated slower) and ``precision="int8"`` (every op
int8, no widening). All run in LiteRT (one thread, XNNPACK on), in turns, ``--rounds`` rounds of ``--invokes``
invokes; the figure is the best invoke. Printed: ms per invoke, measured int8 / float ratios, and the converter's
estimate (``report["speed"]["estimate"]["ratio"]``) beside them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _interpreter(data: bytes):
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=data, num_threads=1)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
    it.invoke()
    return it


def _best_ms(it, invokes: int) -> float:
    best = float("inf")
    for _ in range(invokes):
        start = time.perf_counter()
        it.invoke()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def _convert(model, size: int, how: str):
    from converters import convert
    from tests.speed24_models import samples

    xs = samples(size, n=10)
    if how == "float":
        return convert(model, quantize="none"), None
    res = convert(model, calibration=xs, target="raspberry-pi-4", min_snr=20.0, keep_int8=True,
                  precision="int8" if how == "all int8" else "auto", allow_lossy=True)
    q = res.report["quantization"]["report"]
    return res, (q.get("speed") or {}).get("estimate", {}).get("ratio")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--invokes", type=int, default=10)
    a = ap.parse_args(argv)
    sys.path[:0] = [str(ROOT)]
    from tests import speed24_models as M

    nets = {"blazeface_like": M.blazeface_like(a.size, 32, 3), "depthwise_heavy": M.depthwise_heavy(a.size, 64, 4),
            "plain_conv": M.plain_conv(a.size, 32, 3)}
    print(f"LiteRT 1 thread (XNNPACK); input {a.size}x{a.size}; best invoke of {a.rounds} x {a.invokes}; ms")
    print(f"{'model':16} {'float':>8} {'int8 rule':>10} {'all int8':>9} | {'rule/f':>7} {'est':>6} | "
          f"{'all/f':>6} {'est':>6}")
    for name, model in nets.items():
        built = {how: _convert(model, a.size, how) for how in ("float", "int8 rule", "all int8")}
        its = {how: _interpreter(res.tflite) for how, (res, _) in built.items()}
        best = dict.fromkeys(its, float("inf"))
        for r in range(a.rounds):
            order = list(its)[r % 3:] + list(its)[:r % 3]
            for how in order:
                best[how] = min(best[how], _best_ms(its[how], a.invokes))
        f = best["float"]
        print(f"{name:16} {f:8.3f} {best['int8 rule']:10.3f} {best['all int8']:9.3f} | "
              f"{best['int8 rule'] / f:7.2f} {built['int8 rule'][1]:6.2f} | {best['all int8'] / f:6.2f} "
              f"{built['all int8'][1]:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
