"""`--ray` throughput: samples per second of a float CNN run on a local Ray with 1 and 2 workers (one Interpreter
each, edge_sdk.tasks.scale_ray), the ratio, and the resident memory of each worker after its runs.

    PYTHONPATH=. python benchmarks/scale_ray.py [--samples 256] [--size 64]

Each worker count gets its own Ray (started with that many CPUs, shut down after); the first pass warms the
actors (worker start, imports, model build) and is not timed. The outputs of both runs are checked equal to the
single-process ones.
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


def measure(model: bytes, x: np.ndarray, workers: int) -> tuple[float, dict, np.ndarray]:
    import ray

    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        pool = scale_ray.start(workers=workers)
        try:
            make = functools.partial(ev.runner, model)
            list(pool.map(make, _outputs_and_memory, list(x[: 4 * workers]), "warm-up", shard=2))
            t0 = time.perf_counter()
            parts = [out for _, out in pool.map(make, _outputs_and_memory, list(x), f"{workers} worker(s)",
                                                total=len(x))]
            seconds = time.perf_counter() - t0
        finally:
            pool.close()
    finally:
        ray.shutdown()
    memory = {}
    for _, pid, rss in parts:
        memory[pid] = max(memory.get(pid, 0), rss)
    return len(x) / seconds, memory, np.concatenate([p[0] for p in parts])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--size", type=int, default=64)
    args = ap.parse_args()
    model = cnn(args.size)
    x = np.random.default_rng(1).uniform(-1, 1, (args.samples, 1, args.size, args.size, 3)).astype(np.float32)
    expected = ev.predict(model, x)
    rates = {}
    for workers in (1, 2):
        rate, memory, outputs = measure(model, x, workers)
        assert np.array_equal(outputs, expected), "Ray outputs differ from the single-process ones"
        rates[workers] = rate
        mib = ", ".join(f"{kib / 1024:.0f} MiB" for kib in memory.values())
        print(f"{workers} worker(s): {rate:8.1f} samples/s   resident memory per worker: {mib}")
    print(f"2 workers / 1 worker: {rates[2] / rates[1]:.2f}x  ({args.samples} samples of {args.size}x{args.size}x3)")


if __name__ == "__main__":
    main()
