"""`edge bench`: local statistics, per-op profile and memory; the same run on a loopback "device" over SSH
(tests/sshd.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.bench import bench, format_bench, latency_stats, run_benchmark
from edge_sdk.deploy import deploy
from edge_sdk.errors import DeviceError
from tests.oprunner import T, op_model
from tests.sshd import lab, ssh_cache  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parent.parent
KEYS = {"latency_us", "ops", "arena_bytes", "peak_rss_bytes", "backend", "host", "init_us", "first_inference_us",
        "warmup_us", "model"}


def two_op_model(path: Path) -> Path:
    """ADD then MUL on int8 (two nodes, so the profile has two rows)."""
    q = {"scale": 0.5, "zero_point": 1}
    mid = T((1, 8), "INT8", name="mid", **q)
    from edge_sdk.model import read_model, write_model

    a = read_model(op_model("ADD", [T((1, 8), "INT8", **q), T((1, 8), "INT8", **q)], [mid]))
    m = read_model(op_model("MUL", [T((1, 8), "INT8", **q), T((1, 8), "INT8", **q)], [T((1, 8), "INT8", **q)]))
    # chain them: one model with ADD(x, y) -> MUL(mid, mid)
    sg = a.subgraphs[0]
    mul = m.subgraphs[0].operators[0]
    a.operator_codes.append(m.operator_codes[mul.opcode_index])
    out = len(sg.tensors)
    sg.tensors.append(m.subgraphs[0].tensors[m.subgraphs[0].outputs[0]])
    mul.opcode_index = len(a.operator_codes) - 1
    mul.inputs, mul.outputs = [sg.outputs[0], sg.outputs[0]], [out]
    sg.operators.append(mul)
    sg.outputs = [out]
    write_model(a, path)
    return path


def test_latency_stats_match_numpy():
    rng = np.random.default_rng(7)
    x = list(rng.gamma(2.0, 100.0, size=101))
    s = latency_stats(x)
    for q in (50, 90, 99):
        assert s[f"p{q}"] == pytest.approx(np.percentile(x, q))
    assert s["mean"] == pytest.approx(np.mean(x)) and s["std"] == pytest.approx(np.std(x))
    assert (s["min"], s["max"]) == (min(x), max(x))


def test_local_benchmark_report(tmp_path):
    from edge_sdk import Interpreter

    model = two_op_model(tmp_path / "m.tflite")
    r = run_benchmark(model, runs=20, warmup=3)
    assert KEYS <= set(r) and r["host"] == "local" and r["backend"] == "python"
    lat = r["latency_us"]
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    assert lat["min"] <= lat["mean"] <= lat["max"] and len(r["warmup_us"]) == 3 and r["runs"] == 20
    assert [(o["index"], o["op"]) for o in r["ops"]] == [(0, "ADD"), (1, "MUL")]
    assert all(o["mean_us"] > 0 for o in r["ops"]) and sum(o["percent"] for o in r["ops"]) == pytest.approx(100)
    it = Interpreter(model_path=str(model))
    it.allocate_tensors()
    assert r["arena_bytes"] == it.arena_size
    assert r["peak_rss_bytes"] > 10 * 2**20  # a Python process with numpy is tens of MiB
    text = format_bench(r)
    assert "p99" in text and "MUL" in text and "peak RSS" in text


def test_invoke_profiled_gives_the_same_result(tmp_path):
    from edge_sdk import Interpreter

    model = two_op_model(tmp_path / "m.tflite")
    rng = np.random.default_rng(3)
    xs = [rng.integers(-128, 128, (1, 8), dtype=np.int8) for _ in range(2)]
    plain, it = Interpreter(model_path=str(model)), Interpreter(model_path=str(model))
    for interp in (plain, it):
        interp.allocate_tensors()
        for d, x in zip(interp.get_input_details(), xs, strict=True):
            interp.set_tensor(d["index"], x)
    plain.invoke()
    want = plain.get_tensor(plain.get_output_details()[0]["index"])
    assert want.any()
    steps = it.invoke_profiled()
    assert [s[:2] for s in steps] == [(0, "ADD"), (1, "MUL")] and all(s[2] >= 0 for s in steps)
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), want)


def test_backends_litert_and_c(tmp_path):
    model = two_op_model(tmp_path / "m.tflite")
    pytest.importorskip("ai_edge_litert")
    r = run_benchmark(model, runs=5, warmup=1, backend="litert", threads=1)
    assert r["backend"] == "litert" and r["latency_us"]["p50"] > 0 and r["ops"] == []
    try:
        r = run_benchmark(model, runs=5, warmup=1, backend="c")
    except DeviceError as exc:  # no edge_sdk.backend_c, or no compiler: a clear error naming the backend
        assert "backend 'c'" in str(exc)
    else:
        assert r["backend"] == "c" and r["latency_us"]["p50"] > 0
    with pytest.raises(ValueError, match="unknown backend"):
        run_benchmark(model, backend="tpu")


def test_cli_bench_local_json(tmp_path):
    model = two_op_model(tmp_path / "m.tflite")
    r = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "bench", str(model), "--runs", "5", "--json"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert KEYS <= set(report) and set(report["latency_us"]) >= {"p50", "p90", "p99", "mean", "min", "max"}


@pytest.mark.slow
def test_bench_on_a_loopback_device(lab, tmp_path):
    lab.start("pi1")
    model = two_op_model(tmp_path / "m.tflite")
    with pytest.raises(DeviceError, match="edge deploy"):
        bench(model, "pi1", runs=3)  # no runtime there yet
    assert deploy(model, "pi1", build_c=False).ok
    r = bench(model, "pi1", runs=10, warmup=2)
    assert KEYS <= set(r) and r["host"] == "pi1" and r["runs"] == 10
    assert r["device_model_path"].endswith("/.edge-sdk/models/m.tflite")  # the deployed copy, not a new one
    assert [o["op"] for o in r["ops"]] == ["ADD", "MUL"] and r["arena_bytes"] > 0 and r["peak_rss_bytes"] > 0
    # another model than the deployed one is copied for the benchmark; the CLI prints the same report as JSON
    other = tmp_path / "other.tflite"
    other.write_bytes(op_model("ADD", [T((1, 4), "FLOAT32"), T((1, 4), "FLOAT32")], [T((1, 4), "FLOAT32")]))
    p = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "bench", str(other), "--host", "pi1", "--runs", "4",
                        "--json"], capture_output=True, text=True, timeout=120, cwd=ROOT, env=lab.env, check=False)
    assert p.returncode == 0, p.stderr
    rr = json.loads(p.stdout)
    assert rr["host"] == "pi1" and "/.edge-sdk/bench/" in rr["device_model_path"] and rr["ops"][0]["op"] == "ADD"
