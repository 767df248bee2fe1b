"""Issue 26: the C runtime's int8 CONV_2D with a window (not a 1x1 stride-1 filter) before and after a change, beside
XNNPACK, in one run.

    .venv/bin/python benchmarks/conv_igemm.py --before DIR [--models a.tflite ...] [--zoo-sizes 96]
                                              [--rounds 5] [--seconds 0.2] [--no-zoo] [--no-cuts] [--pointwise]
                                              [--built]

DIR is another checkout (or an exported copy, `git archive REV | tar -x -C DIR`) whose firmware_c is built there
(`make -C DIR/firmware_c host`): the "before". Three long-lived workers, one thread each: the C runtime of this
checkout ("after"), the C runtime of DIR ("before"), LiteRT's default kernels (XNNPACK; one thread runs on the
caller's). Every item is timed in short bursts, the three in turns (the order rotating every round), --rounds times
(a shared machine's drift falls on all three), each invoke by the calling thread's CPU time (time.thread_time: the
time the scheduler gave other jobs is not counted; on a machine loaded several times over wall-clock bursts swung
0.7-1.4x run to run); per item
the median of the bursts' medians. Items: every distinct int8 CONV_2D node with a window (its kernel is not 1x1, or it strides
or pads; --pointwise: the 1x1 stride-1 nodes instead, the direct GEMM's) cut from the models (benchmarks/c_runtime.py's one_op_model: same shapes, options, constants,
quantization), then the whole models: ../shared's int8 models (mobilenet_v2 quantized, person_detect: LiteRT
refuses it, its XNNPACK cell is n/a) and benchmarks/zoo.py's int8 models at --zoo-sizes. Prints us per invoke,
after / before and after / XNNPACK per item and their geomeans, and whether before and after gave the same output
bytes (they must: both are TFLM's). --built: BUILT_POINTWISE's int8 1x1 one-op models instead (our writer: few output
channels, small-K expansions; issue 26's remaining int8 gaps), nothing else.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EDGE_SHARED_MODELS", ROOT.parent / "shared" / "models"))
SHARED_INT8 = ["tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite", "tflite-micro/person_detect.tflite"]


def _inputs(details, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(np.iinfo(np.dtype(t)).min, np.iinfo(np.dtype(t)).max, s, endpoint=True).astype(t)
            if not np.issubdtype(np.dtype(t), np.floating) else rng.uniform(-1, 1, s).astype(t) for s, t in details]


def worker(kind: str) -> None:
    """Reads {"path", "seconds"} lines; answers {"us": median per invoke, "digest": the outputs' sha1} or
    {"error": why}. kind "c": this process's edge_sdk CInterpreter; "xnn": LiteRT's default kernels."""
    runners = {}
    for line in sys.stdin:
        req = json.loads(line)
        path = req["path"]
        try:
            if path not in runners:
                if kind == "c":
                    from edge_sdk.runtime.c_interpreter import CInterpreter
                    it = CInterpreter(model_content=Path(path).read_bytes(), num_threads=1)
                else:
                    from ai_edge_litert.interpreter import Interpreter as Lite
                    it = Lite(model_content=Path(path).read_bytes(), num_threads=1)
                it.allocate_tensors()
                feeds = _inputs([(tuple(d["shape"]), d["dtype"]) for d in it.get_input_details()])
                for d, x in zip(it.get_input_details(), feeds):
                    it.set_tensor(d["index"], x)
                it.invoke()
                digest = hashlib.sha1(b"".join(it.get_tensor(d["index"]).tobytes()
                                               for d in it.get_output_details())).hexdigest()
                runners[path] = (it, digest)
            it, digest = runners[path]
            times = []
            end = time.perf_counter() + req["seconds"]
            while time.perf_counter() < end or len(times) < 3:
                t0 = time.thread_time()  # this thread's CPU time: a burst preempted by other jobs is not charged
                it.invoke()
                times.append(time.thread_time() - t0)
            out = {"us": float(np.median(times)) * 1e6, "digest": digest}
        except Exception as exc:  # noqa: BLE001 - a runtime that cannot run an item: its cell says why
            out = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:60] if str(exc) else ''}"}
        print(json.dumps(out), flush=True)


class Worker:
    def __init__(self, kind: str, tree: Path):
        env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", kind], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                                     cwd=str(tree))

    def ask(self, path: Path, seconds: float) -> dict:
        self.proc.stdin.write(json.dumps({"path": str(path), "seconds": seconds}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"error": "worker died"}

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def window_conv_cuts(paths: list[Path], out_dir: Path, pointwise: bool = False) -> list[tuple[str, Path]]:
    """Every distinct int8 CONV_2D with a window in the models, cut alone (pointwise: the 1x1 stride-1 ones instead,
    the direct GEMM's)."""
    from c_runtime import _signature, one_op_model
    from edge_sdk.model import read_model

    cuts, seen = [], set()
    for path in paths:
        model = read_model(path.read_bytes())
        sg = model.subgraphs[0]
        for op in sg.operators:
            if model.op_name(op) != "CONV_2D" or sg.tensors[op.inputs[0]].type != "INT8":
                continue
            w, x = sg.tensors[op.inputs[1]].shape, sg.tensors[op.inputs[0]].shape
            s = int(op.options.get("stride_h", 1) or 1), int(op.options.get("stride_w", 1) or 1)
            same = op.options.get("padding", "SAME") in ("SAME", 0)
            if (w[1] == 1 and w[2] == 1 and s == (1, 1)) != pointwise:
                continue  # the direct 1x1 GEMM (SAME pads nothing for a 1x1 filter): --pointwise's alone
            sig = _signature(model, sg, op)
            if sig in seen:
                continue
            seen.add(sig)
            name = (f"{path.stem[:22]}: {x[1]}x{x[2]}x{x[3]} {w[1]}x{w[2]}->{w[0]} s{s[0]}"
                    f"{' same' if same else ''}")
            cut = out_dir / f"cut{len(cuts)}.tflite"
            cut.write_bytes(one_op_model(model, sg, op))
            cuts.append((name, cut))
    return cuts


# --built: int8 1x1 CONV_2D one-op models of our own (tests/oprunner.op_model, seeded weights, per-channel scales,
# RELU6): few output channels (a U-Net's 16 -> 1 head, detector score heads: edge_simd_qgemm_few), small-K
# expansions and a narrow projection, (h, w, input channels, output channels)
BUILT_POINTWISE = [(96, 96, 16, 1), (56, 56, 16, 4), (48, 48, 16, 8), (64, 64, 24, 3), (48, 48, 64, 2), (12, 12, 88, 2),
                   (6, 6, 96, 6), (112, 112, 32, 16), (48, 48, 8, 48), (112, 112, 16, 96), (56, 56, 24, 144)]


def built_pointwise(out_dir: Path) -> list[tuple[str, Path]]:
    """BUILT_POINTWISE's models, written to out_dir."""
    from tests.oprunner import T, op_model

    items = []
    for h, w, c, o in BUILT_POINTWISE:
        rng = np.random.default_rng(h + c + o)
        ws = list(rng.uniform(0.3, 3, o) / (20 * np.sqrt(c)))
        wt = T((o, 1, 1, c), "INT8", ws, 0, quantized_dimension=0,
               data=rng.integers(-127, 128, (o, 1, 1, c), dtype=np.int8))
        b = T((o,), "INT32", [0.05 * v for v in ws], 0, quantized_dimension=0,  # XNNPACK: input x weight scale
              data=rng.integers(-3000, 3000, o).astype(np.int32))
        model = op_model("CONV_2D", [T((1, h, w, c), "INT8", 0.05, 3), wt, b], [T((1, h, w, o), "INT8", 0.05, -7)],
                         options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                                  "dilation_w_factor": 1, "fused_activation_function": "RELU6"}, version=3)
        path = out_dir / f"built_{h}x{w}x{c}_{o}.tflite"
        path.write_bytes(model)
        items.append((f"built {h}x{w}x{c} 1x1->{o}", path))
    return items


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--before", type=Path, help="the checkout (its firmware_c built) to compare against")
    ap.add_argument("--models", nargs="*", type=Path, help="default: ../shared's int8 models")
    ap.add_argument("--zoo-sizes", nargs="*", type=int, default=[96])
    ap.add_argument("--no-zoo", action="store_true")
    ap.add_argument("--no-cuts", action="store_true", help="whole models only")
    ap.add_argument("--no-models", action="store_true", help="cuts only")
    ap.add_argument("--pointwise", action="store_true",
                    help="cut the 1x1 stride-1 CONV_2D nodes (the direct GEMM) instead of the windowed ones")
    ap.add_argument("--built", action="store_true",
                    help="time BUILT_POINTWISE's int8 1x1 one-op models (ours) alone, no cuts, no whole models")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.2, help="per burst")
    a = ap.parse_args(argv)
    if a.worker:  # edge_sdk from the worker's PYTHONPATH (this checkout's or --before's), never from here
        worker(a.worker)
        return 0
    sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]
    if not a.before or not (a.before / "firmware_c" / "build" / "host" / "libedge.so").is_file():
        print("--before DIR: a checkout whose firmware_c is built (make -C DIR/firmware_c host)", file=sys.stderr)
        return 2
    paths = a.models or [SHARED / m for m in SHARED_INT8 if (SHARED / m).is_file()]
    if not a.no_zoo:
        import zoo
        paths += [zoo.cached_path(arch, size, "int8") for size in a.zoo_sizes for arch in zoo.ARCHS]
    with tempfile.TemporaryDirectory(prefix="conv_igemm-") as tmp:  # the cuts, removed at the end
        if a.built:
            return compare_items(a, built_pointwise(Path(tmp)), "int8 CONV_2D 1x1 one-op models (ours)")
        return _compare(a, paths, Path(tmp))


def _compare(a, paths: list[Path], tmp: Path) -> int:
    items = [] if a.no_cuts else window_conv_cuts(paths, tmp, a.pointwise)
    if not a.no_models:
        items += [(f"{p.stem[:34]} (whole)", p) for p in paths]
    return compare_items(a, items, f"int8 CONV_2D {'1x1 stride 1 (direct GEMM)' if a.pointwise else 'with a window'}")


def compare_items(a, items: list[tuple[str, Path]], what: str) -> int:
    """Times (name, model path) items on the three workers (a.before, a.rounds, a.seconds) and prints the table."""
    load = os.getloadavg()
    print(f"{what}: C after (this checkout) vs C before ({a.before}) vs XNNPACK (LiteRT 1 thread);"
          f" us of thread CPU time per invoke, median of {a.rounds} rounds of {a.seconds}s bursts, the three in turns; machine: "
          f"{os.cpu_count()} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")
    workers = {"after": Worker("c", ROOT), "before": Worker("c", a.before), "xnn": Worker("xnn", ROOT)}
    times = {name: {k: [] for k in workers} for name, _ in items}
    notes = {name: {} for name, _ in items}
    order = list(workers.items())
    for rnd in range(a.rounds):
        for name, path in items:
            # the order rotates every round: a fixed one charged the worker first in every turn (after XNNPACK's burst:
            # cold caches) 4-50% on float models (palm_detection_lite after / before 1.13, and 1.04 with the two
            # checkouts' roles swapped; mobilenet_v3s 224 1.18 / 1.56; whole-process pairs: 0.91)
            for k, w in order[rnd % 3:] + order[:rnd % 3]:
                r = w.ask(path, a.seconds)
                if "error" in r:
                    notes[name][k] = r["error"]
                else:
                    times[name][k].append(r["us"])
                    notes[name].setdefault(k + "_digest", r["digest"])
    for w in workers.values():
        w.close()
    print(f"\n{'item':58} {'after':>9} {'before':>9} {'XNNPACK':>9} {'aft/bef':>8} {'aft/XNN':>8} {'bef/XNN':>8}  same")
    ratios = {"ab": [], "ax": [], "bx": []}
    for name, _ in items:
        med = {k: float(np.median(v)) if v else None for k, v in times[name].items()}
        a_, b_, x_ = med["after"], med["before"], med["xnn"]

        def fmt(v, w=9, p=1):
            return f"{v:{w}.{p}f}" if v is not None else f"{'n/a':>{w}}"

        ab = a_ / b_ if a_ and b_ else None
        ax = a_ / x_ if a_ and x_ else None
        bx = b_ / x_ if b_ and x_ else None
        for key, v in (("ab", ab), ("ax", ax), ("bx", bx)):
            if v:
                ratios[key].append(v)
        same = notes[name].get("after_digest") == notes[name].get("before_digest")
        print(f"{name[:58]:58} {fmt(a_)} {fmt(b_)} {fmt(x_)} {fmt(ab, 8, 2)} {fmt(ax, 8, 2)} {fmt(bx, 8, 2)}  "
              f"{'yes' if same else 'NO'}" + (f"  ({notes[name]['xnn']})" if "xnn" in notes[name] else ""))
    geo = {k: float(np.exp(np.mean(np.log(v)))) if v else float("nan") for k, v in ratios.items()}
    print(f"{'geomean':58} {'':9} {'':9} {'':9} {geo['ab']:8.2f} {geo['ax']:8.2f} {geo['bx']:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
