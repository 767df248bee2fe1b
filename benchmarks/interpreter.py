"""Speed and memory of our interpreter against the peers, measured in one run on the same models and inputs.

    .venv/bin/python benchmarks/interpreter.py [--models GLOB] [--seconds S]

Prints, per model: median invoke() latency of ours, LiteRT with XNNPACK, LiteRT's reference kernels
(BUILTIN_REF) and TFLM; our arena against TFLM's planned arena ("head") and the liveness lower bound.
Then the goals as ratios:
- speed: geomean of LiteRT-reference / ours over the models that take >= 1 ms there (goal > 1);
- memory: our arena / TFLM's arena on every model (goal <= 1).
Peers run in child processes (NOTES.md: some models crash them). Machines are noisy: ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from aims import Aims  # noqa: E402

SHARED = Path(os.environ.get("EDGE_SHARED_MODELS") or ROOT.parent / "shared" / "models") / "tflite-micro"
SKIP = {"person_detect_vela.tflite": "Ethos-U custom op (accelerator only)"}
LITERT_CANNOT = {"person_detect.tflite", "keyword_scrambled_8bit.tflite", "audio_preprocessor_int8.tflite",
                 "audio_preprocessor_float.tflite"}


def median_latency(invoke, seconds: float, max_runs: int = 200) -> float:
    """Median wall time of invoke() in ms, after one warm-up, for about `seconds` (at least 5 runs)."""
    invoke()
    times = []
    deadline = time.perf_counter() + seconds
    while len(times) < 5 or (time.perf_counter() < deadline and len(times) < max_runs):
        t0 = time.perf_counter()
        invoke()
        times.append(time.perf_counter() - t0)
    return 1000.0 * float(np.median(times))


def _peer(kind: str, model: bytes, inputs, seconds: float):
    """Runs in a child: returns (median ms, arena bytes or None)."""
    if kind == "tflm":
        from tflite_micro.python.tflite_micro import runtime

        interp = runtime.Interpreter.from_bytes(model, arena_size=64 << 20)
        for i, x in enumerate(inputs):
            interp.set_input(x, i)
        ms = median_latency(interp.invoke, seconds)
        return ms, None
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kwargs = {"num_threads": 1}
    if kind == "litert_ref":
        kwargs["experimental_op_resolver_type"] = OpResolverType.BUILTIN_REF
    interp = Interpreter(model_content=model, **kwargs)
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], x)
    return median_latency(interp.invoke, seconds), None


def run_peer(kind: str, model: bytes, inputs, seconds: float):
    payload = pickle.dumps((kind, model, inputs, seconds))
    proc = subprocess.run([sys.executable, __file__, "--child"], input=payload, capture_output=True, timeout=900)
    if proc.returncode != 0:
        return None, None
    return pickle.loads(proc.stdout.split(b"\n@@RESULT@@\n")[-1])


def _child() -> None:
    kind, model, inputs, seconds = pickle.loads(sys.stdin.buffer.read())
    result = _peer(kind, model, inputs, seconds)
    sys.stdout.flush()
    sys.stdout.buffer.write(b"\n@@RESULT@@\n" + pickle.dumps(result))


def fmt(ms) -> str:
    return f"{'-':>9s}" if ms is None else f"{ms:9.3f}"


def main() -> int:
    if "--child" in sys.argv:
        _child()
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="*.tflite", help="glob under ../shared/models/tflite-micro")
    parser.add_argument("--seconds", type=float, default=1.0, help="time budget per runtime per model")
    args = parser.parse_args()

    from edge_sdk import Interpreter, ModelError
    from tests.peers import tflm_arenas
    from tests.test_models import random_inputs

    if not SHARED.exists():
        print(f"no reference models: {SHARED} is absent")
        return 0
    paths = [p for p in sorted(SHARED.glob(args.models)) if p.name not in SKIP]
    # TFLM's planned arena: its "head" plus variable-tensor buffers (which it keeps in its persistent tail).
    tflm_arena_bytes = tflm_arenas(paths)
    rows, speedups, arena_ratios = [], {}, {}
    print(f"{'model':40s} {'ours ms':>9s} {'xnnpack':>9s} {'lrt-ref':>9s} {'tflm':>9s} {'ref/ours':>8s} "
          f"{'arena':>9s} {'tflm':>9s} {'lower':>9s}")
    for path in paths:
        data = path.read_bytes()
        try:
            ours = Interpreter(model_content=data)
            ours.allocate_tensors()
        except ModelError as exc:
            print(f"{path.name:40s} ours cannot run it: {exc}")
            continue
        inputs = random_inputs(ours, seed=0)
        for d, x in zip(ours.get_input_details(), inputs):
            ours.set_tensor(d["index"], x)
        ours_ms = median_latency(ours.invoke, args.seconds)
        plan = ours.arena_plan()
        xnn_ms = ref_ms = None
        if path.name not in LITERT_CANNOT:
            xnn_ms, _ = run_peer("litert", data, inputs, args.seconds)
            ref_ms, _ = run_peer("litert_ref", data, inputs, args.seconds)
        tflm_ms, _ = run_peer("tflm", data, inputs, args.seconds)
        tflm_arena = tflm_arena_bytes.get(str(path))
        ratio = ref_ms / ours_ms if ref_ms else None
        if ref_ms is None or ref_ms >= 1.0:  # None: LiteRT's reference kernels not measured on it
            speedups[path.name] = ratio
        arena_ratios[path.name] = ours.arena_size / tflm_arena if tflm_arena else None  # None: TFLM n/a
        print(f"{path.name:40s} {fmt(ours_ms)} {fmt(xnn_ms)} {fmt(ref_ms)} {fmt(tflm_ms)} "
              f"{'-' if ratio is None else f'{ratio:8.2f}':>8s} {ours.arena_size:9d} "
              f"{tflm_arena if tflm_arena else '-':>9} {plan.lower_bound:9d}")
        rows.append(path.name)
    aims = Aims("interpreter", "python benchmarks/interpreter.py")
    measured = [r for r in speedups.values() if r is not None]
    geomean = math.exp(sum(math.log(r) for r in measured) / len(measured)) if measured else None
    print()
    aims.single("geomean LiteRT-reference / ours > 1 (models LiteRT's reference kernels take >= 1 ms on)",
                None if geomean is None else geomean > 1,
                "no model measured" if geomean is None else f"{geomean:.2f}x over {len(measured)} models", section="speed")
    aims.every("our arena (Python interpreter) <= TFLM's planned arena on every model", arena_ratios,
               lambda r: r <= 1, "ours/TFLM {:.3f}", section="memory")
    aims.save(models=rows, seconds_per_runtime=args.seconds)
    return aims.exit_status()


if __name__ == "__main__":
    sys.exit(main())
