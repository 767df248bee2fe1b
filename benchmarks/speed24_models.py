"""Issue 24 (speed): the estimate against LiteRT on the models tests/speed24_models.py builds.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/speed24_models.py [--size 128] [--rounds 5] [--invokes 10]

Each model (BlazeFace-like PReLU net, depthwise-heavy net, plain conv net) is converted for raspberry-pi-4 three
ways: ``--quantize none`` (the float source), int8 with ``keep_int8`` (the int8 model the speed rule shapes: its
slower-in-int8 ops float32 where that pays, written even when estimated slower) and ``precision="int8"`` (every op
int8, no widening). All run in LiteRT (one thread, XNNPACK on), in turns, ``--rounds`` rounds of ``--invokes``
invokes; the figure is the best invoke. Printed: ms per invoke, measured int8 / float ratios, and the converter's
estimate (``report["speed"]["estimate"]["ratio"]``) beside them.

    ... benchmarks/speed24_models.py --palm      # palm_detection_lite (../shared/models, EDGE_SHARED_MODELS)

In-process timings on a loaded host are noisy (the same model 2x apart between runs): for a claim, write the
models and time them pairwise from outside with farm-bench, CPU seconds (median of pairs):

    ... benchmarks/speed24_models.py --write /tmp/s24            # the .tflite files and their estimates
    farm-bench -n 5 --vs ".venv/bin/python benchmarks/speed24_models.py --invoke /tmp/s24/blazeface_float.tflite 2000" \
        -- .venv/bin/python benchmarks/speed24_models.py --invoke /tmp/s24/blazeface_rule.tflite 2000

--palm: the real MediaPipe model instead (float16 weights, 192x192, calibrated on convert_palm.py's 16 smooth
images): what the default conversion writes with its bytes, and int8 asked for (keep_int8) with the speed rule alone
(a 0 dB goal: at 30 dB, and at 10, the accuracy fallback writes the float source) and with every op int8, timed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from convert_palm import best_ms  # noqa: E402  (one timing loop for both scripts)

ROOT = Path(__file__).resolve().parent.parent


def _interpreter(data: bytes):
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=data, num_threads=1)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
    it.invoke()
    return it


def _convert(model, size: int, how: str, xs=None):
    from converters import convert
    from tests.speed24_models import samples

    xs = samples(size, n=10) if xs is None else xs
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
    ap.add_argument("--palm", action="store_true", help="palm_detection_lite instead of the built models")
    ap.add_argument("--write", metavar="DIR", help="write each model's three .tflite files (and print the estimates)")
    ap.add_argument("--invoke", nargs=2, metavar=("MODEL", "N"), help="load MODEL in LiteRT, invoke it N times")
    a = ap.parse_args(argv)
    sys.path[:0] = [str(ROOT)]
    if a.invoke:
        it = _interpreter(Path(a.invoke[0]).read_bytes())
        for _ in range(int(a.invoke[1])):
            it.invoke()
        return 0
    if a.palm:
        return _palm(a)
    from tests import speed24_models as M

    nets = {"blazeface_like": M.blazeface_like(a.size, 32, 3), "depthwise_heavy": M.depthwise_heavy(a.size, 64, 4),
            "plain_conv": M.plain_conv(a.size, 32, 3)}
    if a.write:
        return _write(nets, a.size, Path(a.write))
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
                best[how] = min(best[how], best_ms(its[how], a.invokes))
        f = best["float"]
        print(f"{name:16} {f:8.3f} {best['int8 rule']:10.3f} {best['all int8']:9.3f} | "
              f"{best['int8 rule'] / f:7.2f} {built['int8 rule'][1]:6.2f} | {best['all int8'] / f:6.2f} "
              f"{built['all int8'][1]:6.2f}", flush=True)
    return 0


def _write(nets: dict, size: int, folder: Path) -> int:
    """Each net's float source, int8 with the speed rule and every op int8 as ``<short>_{float,rule,all}.tflite``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, model in nets.items():
        short = name.split("_")[0]
        for how, label in (("float", "float"), ("int8 rule", "rule"), ("all int8", "all")):
            res, est = _convert(model, size, how)
            (folder / f"{short}_{label}.tflite").write_bytes(res.tflite)
            print(f"{short}_{label}.tflite" + (f": estimated {est:.2f}x the float source" if est else ""))
    return 0


def _palm(a) -> int:
    """palm_detection_lite: the default conversion for raspberry-pi-4, then int8 asked for two ways -- the speed rule
    alone (precision auto at a 0 dB goal: nothing widened for accuracy) and every op int8 -- timed with the source."""
    from converters import convert

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from convert_palm import PALM, smooth_images

    src = PALM.read_bytes()
    xs = smooth_images(16)[:, None]
    default = convert(src, calibration=xs, target="raspberry-pi-4")
    q = default.report["quantization"]["report"]
    print(f"default: {(q.get('float_source') or {}).get('why') or 'int8'} -> float source written, "
          f"{len(default.tflite)} bytes (source {len(src)}); {len(q['speed']['widening']['float32'])} op(s) float32 "
          f"for speed; the attempt estimated {q['speed']['estimate']['ratio']}x the source")
    models, est = {"source": src, "default": default.tflite}, {}
    for how, settings in (("speed rule", dict(precision="auto", min_snr=0.0)), ("all int8", dict(precision="int8"))):
        res = convert(src, calibration=xs, target="raspberry-pi-4", keep_int8=True, allow_lossy=True, **settings)
        models[how] = res.tflite
        est[how] = res.report["quantization"]["report"]["speed"]["estimate"]["ratio"]
    its = {k: _interpreter(v) for k, v in models.items()}
    best = dict.fromkeys(its, float("inf"))
    for r in range(a.rounds):
        for how in list(its)[r % len(its):] + list(its)[:r % len(its)]:
            best[how] = min(best[how], best_ms(its[how], a.invokes))
    print("ms: " + ", ".join(f"{k} {v:.2f}" for k, v in best.items()))
    for how in est:
        print(f"{how}: / source measured {best[how] / best['source']:.2f}, estimated {est[how]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
