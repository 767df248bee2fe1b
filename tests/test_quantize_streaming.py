"""Streaming calibration: per-tensor statistics are accumulated sample by sample and each sample's
activations dropped; held-back samples of a re-readable source are read again rather than kept, and
uint8 pictures are pre-processed one at a time. So the quantizer's memory does not grow with the number of
samples (tracemalloc peak with 16 vs 64 samples), and a one-shot iterator gives the same result as the
re-readable array holding the same samples."""

from __future__ import annotations

import tracemalloc

import numpy as np

from converters import convert
from converters.quantize import quantize
from edge_sdk.model import read_model, write_model
from edge_sdk.model.builder import GraphBuilder

SIZE = 64


def small_cnn(seed=0):
    r = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", (1, SIZE, SIZE, 3))
    y = g.tensor("conv", (1, SIZE // 2, SIZE // 2, 8))
    g.op("CONV_2D", [x, g.constant("w", (r.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)),
                     g.constant("b", np.zeros(8, np.float32))], [y], padding="SAME", stride_w=2, stride_h=2,
         fused_activation_function="RELU")
    z = g.tensor("pool", (1, 1, 1, 8))
    g.op("MEAN", [y, g.constant("axes", np.array([1, 2], np.int32))], [z], keep_dims=True)
    g.output(z)
    return write_model(g.build())


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_samples(monkeypatch):
    # The guard keeps the float activations of the measured samples across its steps (CachedRunner), by design
    # growing with the held-back count up to MEASURE_CACHE_BYTES (256 MB); with that budget at 0 nothing else may
    # grow. The cache's own bound is test_measure_cache_keeps_to_its_budget.
    import converters.quantize as q
    import converters.quantize.widen as widen

    monkeypatch.setattr(q, "MEASURE_CACHE_BYTES", 0)
    monkeypatch.setattr(widen, "MEASURE_CACHE_BYTES", 0)
    src = small_cnn()
    pictures = {n: np.random.default_rng(n).integers(0, 256, (n, SIZE, SIZE, 3), dtype=np.uint8) for n in (16, 64)}
    arrays = {n: np.random.default_rng(n).standard_normal((n, 1, SIZE, SIZE, 3)).astype(np.float32)
              for n in (16, 64)}
    one = SIZE * SIZE * 3 * 4  # one pre-processed sample: 48 KB
    convert(src, calibration=pictures[16][:6])  # warm up (first-use caches would count as growth)
    quantize(read_model(src), arrays[16][:6], holdout=2)
    peaks = {}
    for n in (16, 64):
        peaks["uint8", n] = _peak(lambda: convert(src, calibration=pictures[n]))  # pictures, 1/5 held back
        peaks["array", n] = _peak(lambda: quantize(read_model(src), arrays[n], holdout=8))
    for kind in ("uint8", "array"):
        growth = peaks[kind, 64] - peaks[kind, 16]
        # holding the 48 more samples (or their pre-processed pictures) would add 48 * 48 KB = 2.3 MB
        assert growth < 8 * one, (kind, peaks[kind, 16], peaks[kind, 64])


def test_measure_cache_keeps_to_its_budget():
    import sys

    calib = sys.modules["converters.quantize.calibrate"]
    model = read_model(small_cnn())
    xs = [[np.random.default_rng(k).standard_normal((1, SIZE, SIZE, 3)).astype(np.float32)] for k in range(6)]
    runner = calib.Runner(model)
    per_sample = sum(v.nbytes for v in runner(xs[0]).values())
    cached = calib.CachedRunner(runner, budget=2 * per_sample + per_sample // 2)  # room for two samples
    first = [{t: v.copy() for t, v in cached(x).items()} for x in xs]
    assert len(cached.kept) == 2 and cached.used == 2 * per_sample
    for x, want in zip(xs, first):  # the kept ones and the run-again ones give the same values
        got = cached(x)
        assert all(np.array_equal(got[t], want[t]) for t in want)
    assert len(cached.kept) == 2


def test_one_shot_iterator_gives_the_same_result():
    src = small_cnn()
    xs = np.random.default_rng(3).standard_normal((30, 1, SIZE, SIZE, 3)).astype(np.float32)
    a = quantize(read_model(src), xs, holdout=4)
    b = quantize(read_model(src), (x for x in xs), holdout=4)  # not re-readable: held-back samples kept
    assert a.report["calibration"] == b.report["calibration"] and a.report["calibration"]["held_back"] == 4
    assert a.report["guard"] == b.report["guard"]
    assert a.report["layers"] == b.report["layers"] and write_model(a.model) == write_model(b.model)
    c = quantize(read_model(src), xs)  # no holdout: measured on (at most 32) calibration samples
    d = quantize(read_model(src), (x for x in xs))
    assert c.report["layers"] == d.report["layers"]


def test_memory_benchmark_runs(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "convert_memory.py"
    spec = importlib.util.spec_from_file_location("bench_convert_memory", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    model = bench.detector(64, 0.5)
    outputs = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output}
    assert list(outputs.values()) == [[1, 84, 8 * 8 + 4 * 4 + 2 * 2]]  # boxes and scores of every anchor
    assert bench.main(["--samples", "6", "--size", "64", "--width", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "peak RSS: " in out and "ratio to the 1.5 GB goal" in out
