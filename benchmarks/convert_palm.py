"""palm_detection_lite (../shared/models/mediapipe) converted at default settings for a float target (issue 24
point 4): the widening search's outcome -- ops per precision, each output's SNR, the MACs left in int8, the
search's steps -- and the convert time, on 16 smooth synthetic 192x192 images (every 5th held back by the guard).

    python benchmarks/convert_palm.py --json out.json     # one conversion (minutes: run it with nice)
    python benchmarks/convert_palm.py --json out.json --litert --time --tflite palm.tflite

--time: the written model against the float source, one thread, in LiteRT and in our C runtime, in turns (5 rounds
of 8 invokes each, the best invoke), and the ratio written / source per runtime.

The model is read from ../shared/models (EDGE_SHARED_MODELS overrides it: a worktree's ../shared is elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("EDGE_SHARED_MODELS", ROOT.parent / "shared" / "models"))
PALM = SHARED / "mediapipe" / "palm_detection_lite.tflite"


def smooth_images(n: int, size: int = 192, seed: int = 0) -> np.ndarray:
    """``n`` smooth images [n, size, size, 3] in [-1, 1] (palm's input range): a coarse random field upsampled
    bilinearly plus a few soft blobs, so that neighbouring pixels agree as in photos (uniform noise is no image)."""
    r = np.random.default_rng(seed)
    out = np.empty((n, size, size, 3), np.float32)
    grid = np.linspace(0.0, 1.0, size, dtype=np.float32)
    for k in range(n):
        coarse = r.uniform(-1, 1, (6, 6, 3)).astype(np.float32)
        pos = grid * 5
        i0 = np.minimum(pos.astype(int), 4)
        f = (pos - i0)[:, None]
        rows = coarse[i0] * (1 - f[..., None]) + coarse[i0 + 1] * f[..., None]   # [size, 6, 3]
        img = rows[:, i0] * (1 - f[None, :, :]) + rows[:, i0 + 1] * f[None, :, :]  # [size, size, 3]
        yy, xx = np.meshgrid(grid, grid, indexing="ij")
        for _ in range(3):
            cy, cx, s = r.uniform(0.2, 0.8), r.uniform(0.2, 0.8), r.uniform(0.05, 0.2)
            img += r.uniform(-1, 1, 3).astype(np.float32) * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2)
                                                                    / (2 * s * s))[..., None]
        out[k] = np.clip(img, -1, 1)
    return out


def summary(report: dict, seconds: float) -> dict:
    """The figures the results file gives: ops per precision in the written model, the guard's outputs, widened
    count, int8 MAC share, the search's steps."""
    guard = report.get("guard") or ((report.get("quantization") or {}).get("report") or {}).get("guard") or {}
    widened = guard.get("widened") or []
    return {"convert_s": round(seconds, 1),
            "widened_count": guard.get("widened_count"),
            "widened_to": dict(Counter(w["to"] for w in widened)),
            "outputs": [{"name": o["name"], "snr_db": o.get("snr_db"), "worst_snr_db": o.get("worst_snr_db")}
                        for o in guard.get("outputs") or []],
            "met": guard.get("met"), "cost": guard.get("cost"), "search": guard.get("search"),
            "written": guard.get("written"), "float_source": _quant_report(report).get("float_source"),
            "int8_note": [n for n in _quant_report(report).get("notes", []) if n.startswith("int8 does not keep")],
            "steps": guard.get("steps"), "limiting": guard.get("limiting"),
            "widened": [{k: w[k] for k in ("op_index", "op", "to", "reason")} for w in widened]}


def _quant_report(report: dict) -> dict:
    return ((report.get("quantization") or {}).get("report")) or report


def best_ms(it, invokes: int) -> float:
    """The best of ``invokes`` invokes of a ready interpreter, in ms."""
    best = float("inf")
    for _ in range(invokes):
        start = time.perf_counter()
        it.invoke()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def timing(tflite: bytes, rounds: int = 5, invokes: int = 8) -> dict:
    """ms per invoke (best) of the written model and the float source, one thread, LiteRT and our C runtime,
    the four taking turns each round; and written / source per runtime."""
    from ai_edge_litert.interpreter import Interpreter
    from edge_sdk import Interpreter as Ours

    its = {}
    for name, content in (("source", PALM.read_bytes()), ("written", tflite)):
        for rt in ("litert", "c"):
            it = (Interpreter(model_content=content, num_threads=1) if rt == "litert"
                  else Ours(model_content=content, backend="c", num_threads=1))
            it.allocate_tensors()
            d = it.get_input_details()[0]
            it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
            it.invoke()
            its[name, rt] = it
    best = dict.fromkeys(its, float("inf"))
    for _ in range(rounds):
        for key, it in its.items():
            best[key] = min(best[key], best_ms(it, invokes))
    return {**{f"{n} {rt} ms": round(v, 2) for (n, rt), v in best.items()},
            **{f"written/source {rt}": round(best["written", rt] / best["source", rt], 3) for rt in ("litert", "c")}}


def litert_snr(tflite: bytes, images: np.ndarray) -> list[float]:
    """Each output's SNR (dB, over ``images``) of the converted model against the float one, both run in LiteRT
    (its default kernels: XNNPACK for the float ops, LiteRT's int16x8 kernels)."""
    from ai_edge_litert.interpreter import Interpreter

    def run(content: bytes) -> list[list[np.ndarray]]:
        it = Interpreter(model_content=content, num_threads=1)
        it.allocate_tensors()
        d_in = it.get_input_details()[0]
        outs = []
        for x in images:  # integer I/O: quantized in, dequantized out with the tensors' own parameters
            scale, zp = d_in["quantization"]
            feed = x[None] if d_in["dtype"] == np.float32 else np.clip(
                np.round(x[None] / scale) + zp, np.iinfo(d_in["dtype"]).min, np.iinfo(d_in["dtype"]).max)
            it.set_tensor(d_in["index"], feed.astype(d_in["dtype"]))
            it.invoke()
            row = []
            for d in it.get_output_details():
                v = it.get_tensor(d["index"]).astype(np.float64)
                scale, zp = d["quantization"]
                row.append(v if d["dtype"] == np.float32 else (v - zp) * scale)
            outs.append(row)
        return outs

    ref, got = run(PALM.read_bytes()), run(tflite)
    snrs = []
    for k in range(len(ref[0])):
        f = np.concatenate([r[k].ravel() for r in ref])
        q = np.concatenate([g[k].ravel() for g in got])
        snrs.append(round(float(10 * np.log10((f @ f) / ((f - q) @ (f - q)))), 2))
    return snrs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True, help="where the summary goes")
    p.add_argument("--target", default="raspberry-pi-4")
    p.add_argument("--images", type=int, default=16)
    p.add_argument("--full", help="where the whole convert report goes (JSON)")
    p.add_argument("--litert", action="store_true",
                   help="also run the written model in LiteRT on 4 other images against the float model there")
    p.add_argument("--time", action="store_true", help="time the written model and the source (LiteRT, C runtime)")
    p.add_argument("--tflite", help="where the written model goes")
    a = p.parse_args(argv)
    if not PALM.exists():
        print(f"convert_palm: {PALM} not found (set EDGE_SHARED_MODELS to the shared models folder)", file=sys.stderr)
        return 2
    from converters import convert

    calib = smooth_images(a.images)
    start = time.perf_counter()
    result = convert(str(PALM), target=a.target, calibration=calib)
    seconds = time.perf_counter() - start
    out = summary(result.report, seconds)
    if a.litert:
        out["litert_snr_db"] = litert_snr(result.tflite, smooth_images(4, seed=1))
    if a.time:
        out["time"] = timing(result.tflite)
    if a.tflite:
        Path(a.tflite).write_bytes(result.tflite)
    Path(a.json).write_text(json.dumps(out, indent=1, default=str))
    if a.full:
        Path(a.full).write_text(json.dumps(result.report, default=str))
    print(json.dumps({k: out[k] for k in ("convert_s", "widened_count", "outputs", "met", "cost", "litert_snr_db",
                                                      "written", "int8_note", "time")
                      if k in out}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
