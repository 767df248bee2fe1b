"""`--ray` throughput: samples per second of a float CNN run on a local Ray with 1 and 2 workers (one Interpreter
each, edge_sdk.tasks.scale_ray), the ratio, and the resident memory of each worker after its runs.

    PYTHONPATH=. python benchmarks/scale_ray.py [--samples 512] [--size 96] [--rounds 3]

One Ray (3 logical CPUs) holds a pool of 1 worker and a pool of 2; each round runs the dataset in this process
(no Ray), then on each pool (this machine is shared with other jobs: interleaving puts all three under the same
load, and the best round of each is kept). The first pass warms the actors (worker start, imports, model
build) and is not timed. Printed beside the rates: the model's size and MACs per sample, the dataset's size, one
shard's compute in this process against Ray's cost per call (an empty shard's round trip: the figure must be the
model's work, not Ray's), and the load average. The outputs of every run are checked equal to the single-process ones.
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np

from converters import evaluate as ev
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model import write_model
from edge_sdk.tasks import scale_ray


def cnn(size: int) -> bytes:
    """Two stride-2 3x3 convolutions, a mean and a 10-way dense layer: ~8 MMACs at 64x64."""
    r = np.random.default_rng(0)
    g = GraphBuilder()
    x = g.input("x", (1, size, size, 3))
    a = g.tensor("c1", (1, size // 2, size // 2, 16))
    g.op("CONV_2D", [x, g.constant("w1", (r.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32)),
                     g.constant("b1", np.zeros(16, np.float32))], [a], padding="SAME", stride_w=2, stride_h=2,
         fused_activation_function="RELU")
    b = g.tensor("c2", (1, size // 4, size // 4, 32))
    g.op("CONV_2D", [a, g.constant("w2", (r.standard_normal((32, 3, 3, 16)) * 0.1).astype(np.float32)),
                     g.constant("b2", np.zeros(32, np.float32))], [b], padding="SAME", stride_w=2, stride_h=2,
         fused_activation_function="RELU")
    m = g.tensor("mean", (1, 32))
    g.op("MEAN", [b, g.constant("axes", np.array([1, 2], np.int32))], [m], keep_dims=False)
    y = g.tensor("logits", (1, 10))
    g.op("FULLY_CONNECTED", [m, g.constant("w3", (r.standard_normal((10, 32)) * 0.1).astype(np.float32)),
                             g.constant("b3", np.zeros(10, np.float32))], [y])
    g.output(y)
    return write_model(g.build())


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _outputs_and_memory(r, rows: list):
    """A shard's outputs and the worker's pid and resident memory (KiB) after running it."""
    import os

    return r.run(np.stack(rows)), os.getpid(), _rss_kib()


def _nothing():
    return None


def _echo(_state, rows: list):
    return len(rows)


def timed_pass(pool, model: bytes, x: np.ndarray, label: str) -> tuple[float, dict, np.ndarray]:
    """(samples/s, {worker pid: resident KiB}, outputs) of one pass over ``x`` on ``pool``."""
    make = functools.partial(ev.runner, model)
    t0 = time.perf_counter()
    parts = [out for _, out in pool.map(make, _outputs_and_memory, list(x), label, total=len(x))]
    seconds = time.perf_counter() - t0
    memory = {}
    for _, pid, rss in parts:
        memory[pid] = max(memory.get(pid, 0), rss)
    return len(x) / seconds, memory, np.concatenate([p[0] for p in parts])


def main() -> None:
    import os

    import ray

    from edge_sdk import Interpreter

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=512)
    ap.add_argument("--size", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    model = cnn(args.size)
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    macs = sum(m or 0 for m in it.op_macs())
    x = np.random.default_rng(1).uniform(-1, 1, (args.samples, 1, args.size, args.size, 3)).astype(np.float32)
    expected = ev.predict(model, x)
    shard = scale_ray.SHARD_SAMPLES
    r = ev.runner(model)
    shard_s = float("inf")
    for _ in range(3):  # the best of 3: the first builds the interpreter's plans
        t0 = time.perf_counter()
        r.run(np.stack(list(x[:shard])))
        shard_s = min(shard_s, time.perf_counter() - t0)
    print(f"model: CNN {args.size}x{args.size}x3, {len(model)} bytes, {macs / 1e6:.1f} MMACs per sample; dataset "
          f"{args.samples} samples ({x.nbytes / 2**20:.0f} MiB float32), shards of {shard}")
    print(f"machine: {os.cpu_count()} CPUs shared with other jobs, load average {os.getloadavg()[0]:.2f} at start")

    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        pools = {1: scale_ray.Pool(ray, 1, False), 2: scale_ray.Pool(ray, 2, False)}
        try:
            for n, pool in pools.items():  # warm-up: worker processes, imports, the model built on each
                list(pool.map(functools.partial(ev.runner, model), _outputs_and_memory, list(x[: 4 * n]),
                              "warm-up", shard=2))
            t0 = time.perf_counter()
            calls = 64
            list(pools[1].map(_nothing, _echo, list(range(calls)), "per-call cost", shard=1))
            call_s = (time.perf_counter() - t0) / calls
            print(f"one shard here: {shard_s * 1e3:.1f} ms; Ray's cost per call: {call_s * 1e3:.2f} ms "
                  f"({100 * call_s / shard_s:.1f}% of a shard)")
            best = {0: 0.0, 1: 0.0, 2: 0.0}  # 0: one process, no Ray
            memory = {}
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                assert np.array_equal(ev.predict(model, x), expected)
                best[0] = max(best[0], len(x) / (time.perf_counter() - t0))
                for n, pool in pools.items():
                    rate, mem, outputs = timed_pass(pool, model, x, f"{n} worker(s)")
                    assert np.array_equal(outputs, expected), "Ray outputs differ from the single-process ones"
                    best[n] = max(best[n], rate)
                    if n == 2:
                        memory.update(mem)
        finally:
            for pool in pools.values():
                pool.close()
    finally:
        ray.shutdown()
    print(f"one process, no Ray: {best[0]:8.1f} samples/s (best of {args.rounds} interleaved rounds)")
    for n in (1, 2):
        print(f"{n} worker(s):         {best[n]:8.1f} samples/s (best of {args.rounds} interleaved rounds)")
    mib = ", ".join(f"{kib / 1024:.0f} MiB" for kib in memory.values())
    print(f"2 workers / 1 worker: {best[2] / best[1]:.2f}x; resident memory per worker: {mib}; load average "
          f"{os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
