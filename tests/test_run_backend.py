"""The Linux default of `edge run/bench/serve` (issue 16 point 5): --backend auto runs the C runtime when it
runs the model, the Python interpreter otherwise, and says which and why (text and JSON); --backend c on a model
the C runtime refuses is a one-line error; the results are the same either way (int8 bit-exact)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.cli import main
from edge_sdk.errors import DeviceError, ModelError
from edge_sdk.tools.run_backend import choose_runtime
from tests.conftest import shared_model
from tests.oprunner import T, op_model
from tests.test_pipeline import MANIFEST, classifier_model, solid

ROOT = Path(__file__).resolve().parent.parent
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the C runtime default is Linux's")


def _refused_model() -> bytes:
    """A float ADD broadcasting at rank 9: the Python interpreter runs it, the C runtime's ADD refuses it at
    prepare (its broadcast goes to rank 6)."""
    shape = (1,) * 8 + (2,)
    return op_model("ADD", [T(shape, "FLOAT32"), T(shape, "FLOAT32", data=np.array([1.0, 2.0], np.float32))],
                    [T(shape, "FLOAT32")])


def _edge(*argv, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edge_sdk.cli", *map(str, argv)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, check=False)


@linux
def test_choose_runtime():
    ok = classifier_model(False, MANIFEST)
    c = choose_runtime(ok)
    assert (c.name, c.reason) == ("c", "C runtime runs all 2 nodes")
    assert c.line() == "runtime: c (C runtime runs all 2 nodes)"
    assert c.to_dict() == {"runtime": "c", "runtime_reason": "C runtime runs all 2 nodes"}
    assert choose_runtime(ok, "c").name == "c"
    p = choose_runtime(ok, "python")
    assert (p.name, p.reason) == ("python", "--backend python")

    refused = choose_runtime(_refused_model())
    assert refused.name == "python"
    assert refused.reason.startswith("C runtime refuses node 0 ADD: ") and "rank 6" in refused.reason
    with pytest.raises(ModelError, match=r"^--backend c: C runtime refuses node 0 ADD: .*rank 6"):
        choose_runtime(_refused_model(), "c")
    with pytest.raises(ValueError, match="backend must be one of auto, python, c"):
        choose_runtime(ok, "tpu")


@linux
def test_choose_runtime_without_the_c_library(monkeypatch):
    """No library and nothing to build it with: auto says so and runs Python; forcing c is a device error."""
    from edge_sdk.runtime import c_interpreter

    monkeypatch.setattr(c_interpreter, "available", lambda: (False, "not built and gcc not found on PATH to build it"))
    choice = choose_runtime(classifier_model())
    assert choice.name == "python"
    assert choice.reason == "C runtime not available here: not built and gcc not found on PATH to build it"
    with pytest.raises(DeviceError, match="--backend c: C runtime not available here: not built and gcc"):
        choose_runtime(classifier_model(), "c")


@linux
def test_edge_run_says_which_runtime_and_gives_the_same_results(tmp_path, capsys):
    model = tmp_path / "colours.tflite"
    model.write_bytes(classifier_model(False, MANIFEST))
    img = tmp_path / "red.png"
    solid((250, 5, 5), (12, 9)).save(img)
    assert main(["run", str(model), str(img), "--top-k", "4"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "runtime: c (C runtime runs all 2 nodes)" and out[1] == f"{img}:"
    docs = {}
    for backend in ("auto", "c", "python"):
        assert main(["run", str(model), str(img), "--top-k", "4", "--json", "--backend", backend]) == 0
        docs[backend] = json.loads(capsys.readouterr().out)
    assert [(d[0]["runtime"], d[0]["runtime_reason"]) for d in docs.values()] == [
        ("c", "C runtime runs all 2 nodes"), ("c", "--backend c: C runtime runs all 2 nodes"),
        ("python", "--backend python")]
    # int8: the C runtime's scores are the Python interpreter's, bit for bit
    assert docs["auto"][0]["predictions"] == docs["python"][0]["predictions"] == docs["c"][0]["predictions"]
    assert docs["auto"][0]["predictions"][0]["label"] == "red"


@linux
def test_edge_run_falls_back_and_forced_c_is_one_line(tmp_path):
    model = tmp_path / "rank9.tflite"
    model.write_bytes(_refused_model())
    x = tmp_path / "x.npy"
    np.save(x, np.ones((1,) * 8 + (2,), np.float32))
    p = _edge("run", model, x, "--json")
    assert p.returncode == 0, p.stderr
    (r,) = json.loads(p.stdout)
    assert r["runtime"] == "python" and r["runtime_reason"].startswith("C runtime refuses node 0 ADD: ")
    p = _edge("run", model, x)
    assert p.returncode == 0 and p.stdout.startswith("runtime: python (C runtime refuses node 0 ADD: "), p.stdout
    p = _edge("run", model, x, "--backend", "c")
    assert p.returncode == 3 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"edge run: error: MODEL {model}: --backend c: C runtime "
                                                             "refuses node 0 ADD: "), p.stderr
    p = _edge("run", model, x, "--backend", "tpu")
    assert p.returncode == 2 and "invalid choice: 'tpu'" in p.stderr


@linux
def test_edge_bench_and_serve_runtime(tmp_path):
    from edge_sdk.tools.bench import format_bench, run_benchmark
    from edge_sdk.tools.serve import Server
    from tests.test_serve import fc_model, predict, request

    ok = classifier_model(False, MANIFEST)
    r = run_benchmark(ok, runs=3, warmup=0)
    assert (r["backend"], r["runtime"], r["runtime_reason"]) == ("c", "c", "C runtime runs all 2 nodes")
    assert "runtime:   c (C runtime runs all 2 nodes)" in format_bench(r)
    r = run_benchmark(_refused_model(), runs=3, warmup=0)
    assert r["backend"] == r["runtime"] == "python" and r["runtime_reason"].startswith("C runtime refuses node 0")
    with pytest.raises(ModelError, match="--backend c: C runtime refuses node 0 ADD"):
        run_benchmark(_refused_model(), runs=3, warmup=0, backend="c")
    p = _edge("bench", tmp_path / "nope.tflite", "--backend", "c")
    assert p.returncode == 6 and "nope.tflite" in p.stderr

    x = np.array([[1, 2, 3, 4]], np.float32)
    answers = {}
    for backend in ("auto", "python"):
        with Server(fc_model(), port=0, backend=backend) as srv:
            status, health, _ = request(srv, "GET", "/health")
            assert status == 200 and health["runtime"] == ("c" if backend == "auto" else "python")
            status, doc, _ = predict(srv, x)
            assert status == 200
            answers[backend] = np.array(doc["outputs"][0], np.float32)
    np.testing.assert_allclose(answers["auto"], answers["python"], rtol=1e-6, atol=1e-6)
    # batching resizes the batch axis: only the Python interpreter can, and auto says that is why
    with Server(fc_model(), port=0, max_batch=4) as srv:
        assert srv.runtime.name == "python" and "--max-batch 4 resizes the batch axis" in srv.runtime.reason
        assert srv.max_batch == 4
    with Server(fc_model(), port=0, max_batch=4, backend="c") as srv:
        assert srv.runtime.name == "c" and srv.max_batch == 1 and "C runtime cannot" in srv.batch_note


@linux
def test_person_detect_same_scores_on_both_runtimes(tmp_path):
    """A real int8 model: `edge run` picks the C runtime and its scores equal the Python interpreter's."""
    model = shared_model("tflite-micro/person_detect.tflite")
    rng = np.random.default_rng(5)
    x = tmp_path / "x.npy"
    np.save(x, rng.integers(-128, 128, (1, 96, 96, 1), dtype=np.int8))
    out = {}
    for backend in ("auto", "python"):
        p = _edge("run", model, x, "--json", "--backend", backend)
        assert p.returncode == 0, p.stderr
        out[backend] = json.loads(p.stdout)[0]
    assert out["auto"]["runtime"] == "c" and out["auto"]["runtime_reason"].startswith("C runtime runs all ")
    assert out["auto"]["predictions"] == out["python"]["predictions"]
