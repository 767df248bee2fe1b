"""`edge bench`: local statistics, per-op profile (edge_sdk.tools.op_report: `edge profile`'s table, trace, CSV and
plot) and memory, for the python, c and litert backends; the same run on a loopback "device" over SSH
(tests/sshd.py), whose per-op files are written on the host."""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.tools.bench import bench, format_bench, latency_stats, run_benchmark, write_op_files
from edge_sdk.tools.deploy import deploy
from edge_sdk.errors import DeviceError, UsageError
from edge_sdk.tools.op_report import CSV_COLUMNS, TABLE_HEAD, OpProfile, OpTiming, trace_document
from tests.conftest import shared_model
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
    r = run_benchmark(model, runs=20, warmup=3, backend="python")
    assert KEYS <= set(r) and r["host"] == "local" and r["backend"] == "python"
    assert (r["runtime"], r["runtime_reason"]) == ("python", "--backend python")
    lat = r["latency_us"]
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    assert lat["min"] <= lat["mean"] <= lat["max"] and len(r["warmup_us"]) == 3 and r["runs"] == 20
    assert [(o["index"], o["op"]) for o in r["ops"]] == [(0, "ADD"), (1, "MUL")]
    assert all(o["time"] > 0 and o["unit"] == "us" for o in r["ops"])
    assert sum(o["pct"] for o in r["ops"]) == pytest.approx(100) and r["ops"][-1]["cum_pct"] == pytest.approx(100)
    assert all(o["time_min"] <= o["time"] <= o["time_max"] for o in r["ops"])
    assert [o["output_shape"] for o in r["ops"]] == [[1, 8], [1, 8]] and set(CSV_COLUMNS) <= set(r["ops"][0])
    assert r["profile_runs"] == 20 and r["ops_note"] is None
    assert [len(o["samples"]) for o in r["op_profile"]["ops"]] == [20, 20]
    it = Interpreter(model_path=str(model))
    it.allocate_tensors()
    assert r["arena_bytes"] == it.arena_size
    assert r["peak_rss_bytes"] > 10 * 2**20  # a Python process with numpy is tens of MiB
    text = format_bench(r)
    assert "p99" in text and "MUL" in text and "peak RSS" in text
    assert _table_head(text) == list(TABLE_HEAD)


def _table_head(text: str) -> list[str]:
    """The column names of the per-op table in a formatted report (the line above the dashed rule)."""
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("-") and set(line) <= {"-", " "})
    return re.split(r"\s{2,}", lines[k - 1].strip())


def test_op_rows_and_trace_arithmetic():
    """report_ops on hand-made times: rows (mean, share, MACs per unit, us), CSV columns, trace timestamps."""
    p = OpProfile(ops=[OpTiming(0, "CONV_2D", [300, 100], macs=800, output_shape=[1, 4, 4, 2]),
                       OpTiming(1, "RELU", [100, 100])], unit="cycles", run_totals=[450, 250],
                  us_per_unit=0.5, model="x/m.tflite", where="board")
    a, b = p.rows()
    assert (a["time"], a["time_min"], a["time_max"], a["pct"], a["macs_per_unit"], a["time_us"]) == \
        (200.0, 100, 300, pytest.approx(200 / 3), 4.0, 100.0)
    assert (b["macs"], b["macs_per_unit"], b["cum_pct"]) == (0, None, pytest.approx(100.0))
    assert OpProfile.from_dict(json.loads(json.dumps(p.to_dict()))).rows() == p.rows()
    doc = trace_document(p)
    ops = [(e["name"], e["ts"], e["dur"], e["args"]["run"]) for e in doc["traceEvents"] if e.get("cat") == "op"]
    assert ops == [("CONV_2D", 0.0, 150.0, 0), ("RELU", 150.0, 50.0, 0), ("CONV_2D", 225.0, 50.0, 1),
                   ("RELU", 275.0, 50.0, 1)]  # run 0 lasts 450 cycles = 225 us: run 1 starts there
    runs = [(e["ts"], e["dur"]) for e in doc["traceEvents"] if e.get("cat") == "run"]
    assert runs == [(0.0, 225.0), (225.0, 125.0)] and doc["otherData"]["timestamp_scale"] == "microseconds"
    ticks = OpProfile(ops=p.ops, unit="emulated ticks", run_totals=[450, 250])  # not real time: 1 us = 1 tick
    assert "time_us" not in ticks.rows()[0] and trace_document(ticks)["traceEvents"][3]["dur"] == 300
    assert trace_document(ticks)["otherData"]["timestamp_scale"] == "1 us on the timeline = 1 emulated ticks"


def _cli(*argv) -> tuple[int, str]:
    from edge_sdk.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def _check_files(trace: Path, table: Path, plot: Path, ops: list[str], runs: int, where: str) -> None:
    """The trace has one op event per op per run, in order; the CSV one row per op; the PNG one bar per op."""
    from PIL import Image

    doc = json.loads(trace.read_text())
    events = [e for e in doc["traceEvents"] if e.get("cat") == "op"]
    assert [e["name"] for e in events] == ops * runs
    assert [e["args"]["run"] for e in events] == [r for r in range(runs) for _ in ops]
    assert all(e["ph"] == "X" and e["dur"] >= 0 and e["args"]["unit"] == "us" for e in events)
    assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-6 for a, b in itertools.pairwise(events))  # back to back
    assert len([e for e in doc["traceEvents"] if e.get("cat") == "run"]) == runs
    assert doc["otherData"]["unit"] == "us" and doc["otherData"]["host"] == where
    with table.open(newline="") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == CSV_COLUMNS and [r[2] for r in rows[1:]] == ops
    assert all(float(r[5]) > 0 and r[8] == "us" for r in rows[1:])
    with Image.open(plot) as img:
        assert img.format == "PNG" and img.size[0] == 1000 and 40 + 18 * len(ops) < img.size[1] < 200 + 18 * len(ops)


def test_bench_writes_trace_csv_plot(tmp_path):
    model = two_op_model(tmp_path / "m.tflite")
    trace, table, plot = tmp_path / "t.json", tmp_path / "ops.csv", tmp_path / "ops.png"
    code, out = _cli("bench", str(model), "--runs", "4", "--warmup", "1", "--profile-runs", "3", "--trace",
                     str(trace), "--csv", str(table), "--plot", str(plot))
    assert code == 0, out
    assert _table_head(out) == list(TABLE_HEAD) and "3 profiled runs" in out
    _check_files(trace, table, plot, ["ADD", "MUL"], 3, "local")


def test_bench_and_profile_tables_have_the_same_columns(tmp_path):
    """One model through `edge profile` (the device emulator) and `edge bench`: same table and CSV columns."""
    from edge_sdk.device.emulator import DeviceEmulator
    from edge_sdk.tools.profile import format_profile, profile_model, write_csv

    model = shared_model("tflite-micro/hello_world_int8.tflite")
    with DeviceEmulator(model.read_bytes()) as emu:
        p = profile_model(model, "qemu-mps2-an386", port=emu.url, runs=2)
    b = run_benchmark(model, runs=3, warmup=0, profile_runs=2)
    assert _table_head(format_profile(p)) == _table_head(format_bench(b)) == list(TABLE_HEAD)
    assert [(o["index"], o["op"], o["macs"], o["output_shape"]) for o in b["ops"]] == \
        [(o["index"], o["op"], o["macs"], o["output_shape"]) for o in p["ops"]]
    write_csv(p, tmp_path / "p.csv")
    write_op_files(b, csv=tmp_path / "b.csv")
    heads = [(tmp_path / f).read_text().splitlines()[0] for f in ("p.csv", "b.csv")]
    assert heads[0] == heads[1] == ",".join(CSV_COLUMNS)


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
    r = run_benchmark(model, runs=5, warmup=1, backend="litert", threads=1)
    assert r["backend"] == "litert" and r["latency_us"]["p50"] > 0 and r["ops"] == []
    assert r["op_profile"] is None and "LiteRT's Python API" in r["ops_note"]
    assert "per-op:    no per-op times with backend litert" in format_bench(r)  # said, not an empty table
    with pytest.raises(DeviceError, match="cannot write --trace/--csv/--plot: no per-op times with backend litert"):
        write_op_files(r, trace=tmp_path / "t.json")
    with pytest.raises(UsageError, match="litert"):  # refused before anything runs (a usage error: exit 2)
        bench(model, backend="litert", csv=tmp_path / "x.csv")
    assert not (tmp_path / "t.json").exists() and not (tmp_path / "x.csv").exists()
    trace, table, plot = tmp_path / "c.json", tmp_path / "c.csv", tmp_path / "c.png"
    try:
        r = bench(model, runs=5, warmup=1, backend="c", profile_runs=2, trace=trace, csv=table, plot=plot)
    except DeviceError as exc:  # no edge_sdk.runtime.c_interpreter, or no compiler: a clear error naming the backend
        assert "backend c" in str(exc)
    else:  # the C runtime's own op timer
        assert r["backend"] == "c" and r["latency_us"]["p50"] > 0 and r["arena_bytes"] > 0
        assert [(o["index"], o["op"], o["output_shape"]) for o in r["ops"]] == [(0, "ADD", [1, 8]), (1, "MUL", [1, 8])]
        assert sum(o["time"] for o in r["ops"]) > 0 and r["ops_note"] is None
        _check_files(trace, table, plot, ["ADD", "MUL"], 2, "local")
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
    # the per-op files are written here from the device's JSON
    trace, table, plot = tmp_path / "t.json", tmp_path / "ops.csv", tmp_path / "ops.png"
    p = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "bench", str(other), "--host", "pi1", "--runs", "4",
                        "--profile-runs", "3", "--json", "--trace", str(trace), "--csv", str(table), "--plot",
                        str(plot)], capture_output=True, text=True, timeout=300, cwd=ROOT, env=lab.env, check=False)
    assert p.returncode == 0, p.stderr
    rr = json.loads(p.stdout)
    assert rr["host"] == "pi1" and "/.edge-sdk/bench/" in rr["device_model_path"] and rr["ops"][0]["op"] == "ADD"
    assert rr["profile_runs"] == 3 and rr["op_profile"]["where"] == "pi1"
    _check_files(trace, table, plot, ["ADD"], 3, "pi1")
    # the text report has `edge profile`'s table
    p = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "bench", str(model), "--host", "pi1", "--runs", "3"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT, env=lab.env, check=False)
    assert p.returncode == 0, p.stderr
    assert _table_head(p.stdout) == list(TABLE_HEAD) and "MUL" in p.stdout
