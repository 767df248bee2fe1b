"""Issue 26: what single nodes cost inside a whole model, on the C runtime and on XNNPACK, by prefix difference.

    .venv/bin/python benchmarks/op_in_graph.py MODEL.tflite NODE [NODE ...] [--rounds 15] [--reps 15]
    .venv/bin/python benchmarks/op_in_graph.py --zoo mobilenet_v2 224 NODE ...

LiteRT's Python wheel has no per-op profiler, and a one-op cut timed alone runs with warm caches: a
FULLY_CONNECTED 1280 -> 1000 read 166 us alone on the C runtime and 371 us in mobilenet_v2's profile (its 5 MB of
weights come from L3 / DRAM after the rest of the model ran), which compared with XNNPACK's cut (alone) looked like
a 2x gap. Here node n's cost in the graph is time(operators [0, n]) - time(operators [0, n)), each prefix a model
of its own (the same tensors and buffers, the prefix's last output the model's output), for both runtimes:
thread CPU time per invoke, the four models' bursts in turns, median of the rounds' medians. A node's cost is
that of a prefix holding everything before it, so caches are as the whole model leaves them (the nodes after it
are not run). Nodes with several inputs from earlier nodes (ADD) are fine: the prefix holds them.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def prefix_model(model, end: int) -> bytes:
    """The model's operators [0, end) as a model whose outputs are operator end - 1's outputs."""
    from edge_sdk.model import write_model

    m = copy.deepcopy(model)
    sg = m.subgraphs[0]
    sg.operators = sg.operators[:end]
    sg.outputs = list(sg.operators[-1].outputs)
    return write_model(m)


def _bound(it):
    it.allocate_tensors()
    rng = np.random.default_rng(0)
    for d in it.get_input_details():
        x = (rng.uniform(-1, 1, d["shape"]) if np.issubdtype(d["dtype"], np.floating)
             else rng.integers(-128, 128, d["shape"]))
        it.set_tensor(d["index"], x.astype(d["dtype"]))
    it.invoke()
    return it.invoke


def node_costs(data: bytes, nodes: list[int], rounds: int, reps: int) -> list[dict]:
    from ai_edge_litert.interpreter import Interpreter as Lite
    from edge_sdk.model import read_model
    from edge_sdk.runtime.c_interpreter import CInterpreter

    model = read_model(data)
    ops = model.subgraphs[0].operators
    out = []
    for n in nodes:
        if not 0 < n < len(ops):
            raise SystemExit(f"op_in_graph: node {n} is not in 1..{len(ops) - 1} (node 0 has no prefix before it)")
        models = {"with": prefix_model(model, n + 1), "without": prefix_model(model, n)}
        runs = {(rt, k): _bound(CInterpreter(model_content=b, num_threads=1) if rt == "c"
                                else Lite(model_content=b, num_threads=1))
                for rt in ("c", "xnn") for k, b in models.items()}
        times = {k: [] for k in runs}
        order = list(runs.items())
        for r in range(rounds):
            for k, invoke in order[r % len(order):] + order[:r % len(order)]:
                ts = []
                for _ in range(reps):
                    t0 = time.thread_time()
                    invoke()
                    ts.append(time.thread_time() - t0)
                times[k].append(float(np.median(ts)) * 1e6)
        med = {k: float(np.median(v)) for k, v in times.items()}
        op = ops[n]
        sg = model.subgraphs[0]
        shapes = " ".join("x".join(str(d) for d in sg.tensors[i].shape) for i in list(op.inputs)[:2] if i >= 0)
        out.append({"node": n, "op": model.op_name(op), "shapes": shapes,
                    "c_us": med[("c", "with")] - med[("c", "without")],
                    "xnn_us": med[("xnn", "with")] - med[("xnn", "without")],
                    "c_prefix_us": med[("c", "with")], "xnn_prefix_us": med[("xnn", "with")]})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", help="a .tflite file (or with --zoo: ARCH SIZE as the first two)")
    ap.add_argument("nodes", nargs="*", help="operator indexes")
    ap.add_argument("--zoo", action="store_true", help="MODEL is a zoo arch (benchmarks/zoo.py), the first node its size")
    ap.add_argument("--dtype", default="float32", help="--zoo: the zoo model's dtype")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--reps", type=int, default=15, help="invokes per burst")
    a = ap.parse_args(argv)
    sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]
    if not a.model or (a.zoo and len(a.nodes) < 2) or (not a.zoo and not a.nodes):
        print("op_in_graph: give MODEL.tflite NODE ... (or --zoo ARCH SIZE NODE ...)", file=sys.stderr)
        return 2
    try:
        nodes = [int(n) for n in a.nodes]
    except ValueError:
        print(f"op_in_graph: nodes must be integers, got {' '.join(a.nodes)}", file=sys.stderr)
        return 2
    if a.zoo:
        import zoo

        if a.model not in zoo.ARCHS:
            print(f"op_in_graph: --zoo arch {a.model!r} is not one of {', '.join(zoo.ARCHS)}", file=sys.stderr)
            return 2
        path = zoo.cached_path(a.model, nodes.pop(0), a.dtype)
    else:
        path = Path(a.model)
        if not path.is_file():
            print(f"op_in_graph: {path}: no such file", file=sys.stderr)
            return 2
    rows = node_costs(path.read_bytes(), nodes, a.rounds, a.reps)
    print(f"{path.name}: node cost in the graph = time(ops [0, n]) - time(ops [0, n)), us of thread CPU time per "
          f"invoke, median of {a.rounds} rounds of {a.reps} invokes, one thread each")
    print(f"{'node':>5} {'op':<20} {'inputs':<28} {'C':>8} {'XNNPACK':>8} {'C/XNN':>6}")
    for r in rows:
        ratio = f"{r['c_us'] / r['xnn_us']:6.2f}" if r["xnn_us"] > 0 else f"{'-':>6}"
        print(f"{r['node']:>5} {r['op']:<20} {r['shapes']:<28} {r['c_us']:8.1f} {r['xnn_us']:8.1f} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
