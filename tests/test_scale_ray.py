"""`--ray`: evaluation and calibration on a local Ray cluster of 2 workers give exactly the single-process results
(outputs, metrics, calibration statistics, the converted model's bytes); a worker that dies is restarted by Ray and
its shard run again, no sample lost or counted twice; without Ray installed the flag exits 2 naming the install
line. One Ray cluster for the module (ray.init takes seconds), shut down at its end (no Ray process left)."""

from __future__ import annotations

import json
import os
import sys
from hashlib import sha256
from pathlib import Path

import numpy as np
import pytest

from converters import convert
from converters import evaluate as ev
from converters.quantize.calibrate import calibrate
from edge_sdk.cli import main
from edge_sdk.model import read_model
from edge_sdk.tasks import scale_ray
from tests.test_evaluate import _data, _fc_model
from tests.test_quantize_streaming import SIZE, small_cnn

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'edge-sdk[ray]')")


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray of 2 CPUs and a pool of 2 workers on it (their processes start once for the module)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        pool = scale_ray.start(workers=2)
        yield pool
        pool.close()
    finally:
        ray.shutdown()


def test_evaluation_on_ray_equals_one_process(ray_cluster, tmp_path):
    fpath = _fc_model(tmp_path)
    qpath = _fc_model(tmp_path, quantized=True)
    data, x, _ = _data(tmp_path)  # 40 samples: shards of 16, 16, 8 over 2 workers
    here = ev.evaluate(qpath, data, reference=fpath)
    outputs_here = ev.predict(qpath, x)
    with ray_cluster.activate():
        on_ray = ev.evaluate(qpath, data, reference=fpath)
        r = ev.runner(qpath)
        outputs_ray = ev.run_rows(qpath, r, ev.fit_samples(x, r.input_shape))
    assert np.array_equal(outputs_ray, outputs_here)
    assert on_ray == here


def test_cli_evaluate_ray_json_equals_one_process(ray_cluster, tmp_path, capsys):
    fpath = _fc_model(tmp_path)
    data, _, _ = _data(tmp_path)
    assert main(["evaluate", str(fpath), "--data", str(data), "--json"]) == 0
    here = json.loads(capsys.readouterr().out)
    with ray_cluster.activate():  # --ray inside an active pool's block uses that pool
        calls = ray_cluster.calls
        assert main(["evaluate", str(fpath), "--data", str(data), "--json", "--ray", "--ray-workers", "2"]) == 0
        assert ray_cluster.calls == calls + 1  # the model ran on Ray
    assert json.loads(capsys.readouterr().out) == here
    assert ray.is_initialized()  # the test's cluster was used, not shut down


@pytest.mark.parametrize("method", ["minmax", "percentile", "mse"])
def test_calibration_statistics_on_ray_equal_one_process(ray_cluster, method):
    model = read_model(small_cnn())
    samples = np.random.default_rng(1).standard_normal((37, 1, SIZE, SIZE, 3)).astype(np.float32)

    def stats():
        cal = calibrate(model, samples, "INT8", method, 99.0, None, seed=0, holdout=4)
        return cal, {t: (s.min, s.max, s.values(), s.rate) for t, s in cal.stats.items()}

    cal_here, here = stats()
    with ray_cluster.activate():
        cal_ray, on_ray = stats()
    assert (cal_ray.samples, cal_ray.held_back) == (cal_here.samples, cal_here.held_back) == (33, 4)
    assert cal_ray.ranges == cal_here.ranges
    assert here.keys() == on_ray.keys()
    for t in here:
        lo, hi, values, rate = here[t]
        assert (on_ray[t][0], on_ray[t][1], on_ray[t][3]) == (lo, hi, rate)
        assert np.array_equal(on_ray[t][2], values)  # the seeded subsample: the same values in the same order


def test_cli_convert_ray_writes_the_same_model(ray_cluster, tmp_path):
    src = tmp_path / "cnn.tflite"
    src.write_bytes(small_cnn())
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(2).standard_normal((20, 1, SIZE, SIZE, 3)).astype(np.float32))
    here, on_ray = tmp_path / "here.tflite", tmp_path / "ray.tflite"
    args = ["convert", str(src), "--calib", str(calib), "--calib-method", "percentile", "--json"]
    assert main(args + ["-o", str(here)]) == 0
    with ray_cluster.activate():
        calls = ray_cluster.calls
        assert main(args + ["-o", str(on_ray), "--ray"]) == 0
        assert ray_cluster.calls > calls  # calibration ran on Ray
    assert on_ray.read_bytes() == here.read_bytes()


def _square_or_die(marker: str, rows: list) -> list:
    """A shard's work that kills its worker process the first time it sees shard value 20 (once: the marker file)."""
    if 20 in rows and not os.path.exists(marker):
        Path(marker).write_text("died")
        os._exit(1)
    return [r * r for r in rows]


def _marker(path):
    return path


def test_a_dead_worker_is_retried_without_losing_or_repeating_samples(ray_cluster, tmp_path):
    import functools

    marker = str(tmp_path / "died-once")
    with ray_cluster.activate() as pool:
        out = list(pool.map(functools.partial(_marker, marker), _square_or_die, range(50), "squares", total=50,
                            shard=8))
    assert Path(marker).exists()  # a worker did die
    assert [x for chunk, _ in out for x in chunk] == list(range(50))
    assert [y for _, result in out for y in result] == [x * x for x in range(50)]


def test_a_worker_killed_mid_calibration_changes_no_statistic(ray_cluster):
    """SIGKILL of a worker process while it holds shards (from the pool's test hook, on the first result): Ray
    restarts the actor and runs its shards again; every statistic is byte-identical to the single-process one."""
    import signal

    model = read_model(small_cnn())
    samples = np.random.default_rng(3).standard_normal((72, 1, SIZE, SIZE, 3)).astype(np.float32)  # 5 shards

    def stats():
        cal = calibrate(model, samples, "INT8", "percentile", 99.0, None, seed=0, holdout=4)
        return cal, {t: (np.float64(s.min).tobytes(), np.float64(s.max).tobytes(), np.asarray(s.values()).tobytes(),
                         s.rate) for t, s in cal.stats.items()}

    cal_here, here = stats()
    pids = ray_cluster.worker_pids()
    killed = []

    def kill_a_busy_worker(shard_id, in_flight):
        if not killed and in_flight:  # once: the actor of the next shard still to come
            pid = pids[in_flight[min(in_flight)]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    ray_cluster.on_result = kill_a_busy_worker
    try:
        with ray_cluster.activate():
            cal_ray, on_ray = stats()
    finally:
        ray_cluster.on_result = None
    assert killed and killed[0] not in ray_cluster.worker_pids()  # a worker died and Ray started another
    assert (cal_ray.samples, cal_ray.held_back) == (cal_here.samples, cal_here.held_back) == (68, 4)
    assert on_ray == here  # min, max, the kept values (bytes) and the rate of every tensor
    assert cal_ray.ranges == cal_here.ranges


def test_bench_matrix_on_ray_equals_one_process(ray_cluster, tmp_path, capsys):
    """`edge bench --matrix` (2 models x 2 precisions x 2 targets): on Ray the conversions and the cells run as
    tasks on the workers; every cell equals the one-process one except timings; conversions are cached."""
    from edge_sdk.tools import bench_matrix as bm

    cnn, other = tmp_path / "cnn.tflite", tmp_path / "other.tflite"
    cnn.write_bytes(small_cnn())
    other.write_bytes(small_cnn(seed=1))
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(4).standard_normal((12, 1, SIZE, SIZE, 3)).astype(np.float32))
    for model in (cnn, other):  # an earlier run's cached conversions dropped: the Ray run converts
        bm._cache_path(sha256(model.read_bytes()).hexdigest(), "int8", bm._calibration_sha(calib)).unlink(
            missing_ok=True)
    args = ["bench", str(cnn), str(other), "--matrix", "--target", "host-linux", "--target", "raspberry-pi-4",
            "--precision", "int8", "--precision", "float", "--calib", str(calib), "--runs", "3", "--warmup", "0",
            "--profile-runs", "1", "--json"]
    with ray_cluster.activate():
        calls = ray_cluster.calls
        assert main(args + ["--ray"]) == 0
        assert ray_cluster.calls == calls + 2  # the conversions, then the cells: tasks on the pool
    on_ray = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    here = json.loads(capsys.readouterr().out)
    assert [(c["model"], c["precision"], c["target"]) for c in here["cells"]] == [
        (m, p, t) for m in ("cnn.tflite", "other.tflite") for p in ("int8", "float")
        for t in ("host-linux", "raspberry-pi-4")]
    assert [c["converted"]["cached"] for c in on_ray["cells"]] == [False] * 8
    # the int8 conversions cached by the Ray run; float is the source itself
    assert [c["converted"]["cached"] for c in here["cells"]] == [True, True, False, False] * 2
    for r, h in zip(on_ray["cells"], here["cells"]):
        assert "error" not in h and h["latency_us"]["p50"] > 0 and h["check"]["verdict"] == "runs"
        assert bm.comparable(r) == bm.comparable(h)
    from converters import convert

    int8 = convert(cnn.read_bytes(), quantize="int8", calibration=str(calib)).tflite  # the cache holds `edge convert`'s
    assert here["cells"][0]["converted"]["sha256"] == sha256(int8).hexdigest()
    assert here["cells"][2]["converted"]["sha256"] == sha256(cnn.read_bytes()).hexdigest()

    assert main(["bench", str(cnn), "--precision", "int8"]) == 2  # matrix flags without --matrix: usage
    assert "--matrix" in capsys.readouterr().err


def test_without_ray_the_flag_exits_2_with_the_install_line(tmp_path, capsys, monkeypatch):
    fpath = _fc_model(tmp_path)
    data, _, _ = _data(tmp_path)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    assert main(["evaluate", str(fpath), "--data", str(data), "--ray"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'edge-sdk[ray]'" in err and "Traceback" not in err
    assert main(["convert", str(fpath), "--calib", str(data), "--ray", "-o", str(tmp_path / "o.tflite")]) == 2
    assert "pip install 'edge-sdk[ray]'" in capsys.readouterr().err


def test_workers_without_a_free_cpu_stop_the_run_in_one_line(ray_cluster):
    """The module's 2 workers hold the cluster's 2 CPUs: a third pool's actor stays pending in Ray, and the check
    gives up after its timeout with one line naming the cause (not a wait without end)."""
    from edge_sdk.errors import UsageError

    pool = scale_ray.Pool(ray, 1, owns_ray=False)
    try:
        with pytest.raises(UsageError, match=r"did not start within 2 s: the cluster has no free CPU") as info:
            pool.check_workers("127.0.0.1:6379", timeout_s=2)
        assert "\n" not in str(info.value)
    finally:
        pool.close()
