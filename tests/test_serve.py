"""edge_sdk.tools.serve: JSON and raw requests, dynamic batching, 4xx/503, /health, /metrics, shutdown."""

from __future__ import annotations

import base64
import http.client
import io
import json
import threading
import time

import numpy as np
import pytest
from PIL import Image

from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.writer import write_model
from edge_sdk.tools.serve import Server
from tests.test_pipeline import MANIFEST, classifier_model

W = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 10
TIMEOUT = 10


def fc_model(batch: int = 1) -> bytes:
    g = GraphBuilder()
    x = g.input("x", (batch, 4), "FLOAT32")
    w = g.constant("w", W)
    y = g.tensor("y", (batch, 3), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    g.output(y)
    return write_model(g.build())


def request(server, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body, headers or {})
        r = conn.getresponse()
        data = r.read()
        ctype = r.getheader("Content-Type")
        return r.status, (json.loads(data) if ctype == "application/json" else data), dict(r.getheaders())
    finally:
        conn.close()


def predict(server, x):
    return request(server, "POST", "/predict", {"inputs": np.asarray(x).tolist()})


def in_threads(fn, args_list):
    results = [None] * len(args_list)

    def run(i, args):
        results[i] = fn(*args)

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(args_list)]
    for t in threads:
        t.start()
    return threads, results


def wait_for(cond, timeout=TIMEOUT):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.005)
    raise AssertionError("condition not reached in time")


def test_json_and_raw_requests():
    with Server(fc_model(), port=0) as srv:
        x = np.array([[1, 2, 3, 4]], np.float32)
        status, doc, _ = predict(srv, x)
        assert status == 200
        np.testing.assert_allclose(doc["outputs"][0], x @ W.T, rtol=1e-6)
        status, doc, _ = predict(srv, x[0])  # without the batch axis
        assert status == 200 and np.asarray(doc["outputs"][0]).shape == (1, 3)
        status, doc, _ = request(srv, "POST", "/predict", {"inputs": {"x": x.tolist()}})
        assert status == 200
        status, data, headers = request(srv, "POST", "/predict", x.tobytes(), {
            "Content-Type": "application/octet-stream", "X-Shape": "1,4", "X-Dtype": "float32",
            "Accept": "application/octet-stream"})
        assert status == 200 and headers["X-Shape"] == "1,3" and headers["X-Dtype"] == "float32"
        np.testing.assert_allclose(np.frombuffer(data, np.float32).reshape(1, 3), x @ W.T, rtol=1e-6)
        status, doc, _ = request(srv, "POST", "/predict", x.tobytes(), {
            "Content-Type": "application/octet-stream", "X-Shape": "4", "X-Dtype": "float32"})
        assert status == 200
        np.testing.assert_allclose(doc["outputs"][0], x @ W.T, rtol=1e-6)


def test_int8_model_quantizes_json_and_takes_raw_int8_and_images():
    model = classifier_model(False, MANIFEST)
    with Server(model, port=0) as srv:
        red = np.zeros((1, 4, 4, 3), np.float32)
        red[..., 0] = 1.0  # real values: quantized by the server
        status, doc, _ = predict(srv, red)
        assert status == 200 and doc["predictions"][0]["label"] == "red"
        q = np.full((1, 4, 4, 3), -128, np.int8)
        q[..., 1] = 127
        status, doc, _ = request(srv, "POST", "/predict", q.tobytes(), {
            "Content-Type": "application/octet-stream", "X-Shape": "1,4,4,3", "X-Dtype": "int8"})
        assert status == 200 and doc["predictions"][0]["label"] == "green"
        status, doc, _ = request(srv, "POST", "/predict", {"inputs": q.tolist(), "raw": True, "top_k": 2})
        assert status == 200 and doc["predictions"][0]["label"] == "green" and len(doc["predictions"]) == 2
        buf = io.BytesIO()
        Image.new("RGB", (9, 7), (3, 3, 240)).save(buf, "PNG")
        status, doc, _ = request(srv, "POST", "/predict", {"image": base64.b64encode(buf.getvalue()).decode()})
        assert status == 200 and doc["predictions"][0]["label"] == "blue"
        status, doc, _ = request(srv, "POST", "/predict", {"image": base64.b64encode(b"not an image").decode()})
        assert status == 400 and "cannot read the image" in doc["error"]


def test_batching_actually_batches():
    with Server(fc_model(), port=0, max_batch=4, max_wait_ms=200) as srv:
        assert request(srv, "GET", "/health")[1]["batching"] is True
        srv.pause()
        xs = [np.array([[i, 1, 0, -i]], np.float32) for i in range(4)]
        threads, results = in_threads(lambda x: predict(srv, x), [(x,) for x in xs])
        wait_for(lambda: srv.metrics()["queue_depth"] == 4)
        srv.resume()
        for t in threads:
            t.join(TIMEOUT)
        for x, (status, doc, _) in zip(xs, results):
            assert status == 200
            np.testing.assert_allclose(doc["outputs"][0], x @ W.T, rtol=1e-6)  # each gets its own row
        m = request(srv, "GET", "/metrics")[1]
        assert m["batches"] == 1 and m["batch_sizes"] == {"4": 1} and m["requests"] == 4
        # three requests: one batch of 3, padded to an interpreter of batch 4
        srv.pause()
        threads, results = in_threads(lambda x: predict(srv, x), [(x,) for x in xs[:3]])
        wait_for(lambda: srv.metrics()["queue_depth"] == 3)
        srv.resume()
        for t in threads:
            t.join(TIMEOUT)
        assert [r[0] for r in results] == [200] * 3
        wait_for(lambda: srv.metrics()["batches"] == 2)
        assert srv.metrics()["batch_sizes"] == {"3": 1, "4": 1}


def test_without_batching_requests_run_one_by_one():
    with Server(fc_model(), port=0, max_batch=1, instances=2) as srv:
        srv.pause()
        threads, results = in_threads(lambda x: predict(srv, x), [(np.ones((1, 4)),)] * 3)
        wait_for(lambda: srv.metrics()["queue_depth"] == 3)
        srv.resume()
        for t in threads:
            t.join(TIMEOUT)
        assert [r[0] for r in results] == [200] * 3
        assert srv.metrics()["batch_sizes"] == {"1": 3}


def test_fixed_batch_model_is_padded():
    with Server(fc_model(batch=2), port=0, max_batch=8, max_wait_ms=1) as srv:
        h = request(srv, "GET", "/health")[1]
        assert h["batching"] is True and h["max_batch"] == 2
        x = np.array([[1, 0, 0, 0]], np.float32)
        status, doc, _ = predict(srv, x)
        assert status == 200
        np.testing.assert_allclose(doc["outputs"][0], x @ W.T, rtol=1e-6)


def test_bad_requests_get_4xx_with_a_reason():
    with Server(fc_model(), port=0, max_request_bytes=1000) as srv:
        cases = [
            ("POST", "/predict", b"{not json", {"Content-Type": "application/json"}, 400, "not JSON"),
            ("POST", "/predict", {"inputs": [[1, 2, 3]]}, None, 400, "does not match input"),
            ("POST", "/predict", {"inputs": [[1, 2], [3]]}, None, 400, "rectangular"),
            ("POST", "/predict", {"inputs": {"y": [[1, 2, 3, 4]]}}, None, 400, "model inputs"),
            ("POST", "/predict", {"nothing": 1}, None, 400, "'inputs'"),
            ("POST", "/predict", {"image": "aGk="}, None, 400, "no image pipeline"),
            ("POST", "/predict", {"inputs": [[1, 2, 3, 4]], "top_k": "x"}, None, 400, "top_k"),
            ("POST", "/predict", b"x" * 2000, {"Content-Type": "application/json"}, 413, "limit"),
            ("POST", "/predict", b"abc", {"Content-Type": "text/plain"}, 415, "Content-Type"),
            ("POST", "/predict", b"\0" * 16, {"Content-Type": "application/octet-stream"}, 400, "X-Shape"),
            ("POST", "/predict", b"\0" * 8, {"Content-Type": "application/octet-stream", "X-Shape": "1,4",
                                             "X-Dtype": "float32"}, 400, "needs 16"),
            ("POST", "/predict", b"\0" * 16, {"Content-Type": "application/octet-stream", "X-Shape": "1,4",
                                              "X-Dtype": "int32"}, 400, "X-Dtype"),
            ("GET", "/predict", None, None, 405, "POST"),
            ("GET", "/nowhere", None, None, 404, "no such endpoint"),
            ("POST", "/nowhere", b"{}", None, 404, "no such endpoint"),
        ]
        for method, path, body, headers, want, reason in cases:
            status, doc, _ = request(srv, method, path, body, headers)
            assert status == want and reason in doc["error"], (path, body, status, doc)
        # the server is still fine, and counted them
        assert predict(srv, np.ones((1, 4)))[0] == 200
        m = request(srv, "GET", "/metrics")[1]
        assert m["responses_by_status"]["400"] == 10 and m["responses_by_status"]["200"] == 1


def test_overload_gets_503_and_queued_requests_still_finish():
    with Server(fc_model(), port=0, max_queue=2) as srv:
        srv.pause()
        threads, results = in_threads(lambda x: predict(srv, x), [(np.ones((1, 4)),)] * 2)
        wait_for(lambda: srv.metrics()["queue_depth"] == 2)
        status, doc, headers = predict(srv, np.ones((1, 4)))
        assert status == 503 and "overloaded" in doc["error"] and headers["Retry-After"] == "1"
        srv.resume()
        for t in threads:
            t.join(TIMEOUT)
        assert [r[0] for r in results] == [200, 200]
        assert srv.metrics()["rejected_overload"] == 1


def test_health_metrics_and_latency():
    with Server(fc_model(), port=0) as srv:
        status, h, _ = request(srv, "GET", "/health")
        assert status == 200 and h["status"] == "ok" and h["inputs"][0]["shape"] == [1, 4]
        for _ in range(5):
            assert predict(srv, np.ones((1, 4)))[0] == 200
        m = request(srv, "GET", "/metrics")[1]
        assert m["requests"] == 5 and m["queue_depth"] == 0 and m["latency_ms"]["count"] == 5
        lat = m["latency_ms"]
        assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"]


def test_graceful_shutdown_finishes_queued_work_and_closes():
    srv = Server(fc_model(), port=0).start()
    port = srv.port
    srv.pause()
    threads, results = in_threads(lambda x: predict(srv, x), [(np.ones((1, 4)),)])
    wait_for(lambda: srv.metrics()["queue_depth"] == 1)
    srv.stop(timeout=TIMEOUT)  # resumes the workers, which drain the queue before exiting
    threads[0].join(TIMEOUT)
    assert results[0][0] == 200
    assert srv.wait(0)
    with pytest.raises(OSError):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/health")
        conn.getresponse()
    srv.stop()  # twice is fine


def test_too_many_connections_get_503():
    with Server(fc_model(), port=0, max_connections=1, socket_timeout_s=5) as srv:
        import socket

        idle = socket.create_connection(("127.0.0.1", srv.port), timeout=TIMEOUT)  # holds the only slot
        try:
            wait_for(lambda: srv._httpd._slots._value == 0)
            status, doc, _ = request(srv, "GET", "/health")
            assert status == 503 and "too many connections" in doc["error"]
        finally:
            idle.close()
        wait_for(lambda: srv._httpd._slots._value == 1)
        assert request(srv, "GET", "/health")[0] == 200


@pytest.mark.slow
def test_benchmark_script_runs(tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT

    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "serve.py"), "--requests", "20", "--seconds", "5",
                          "--concurrency", "1", "4"], check=False, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    assert "batching / no batching:" in out.stdout and "4 clients: throughput x" in out.stdout
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith(("no batching", "batch<="))]
    assert len(rows) == 4 and all(r[-1] == "0" for r in rows)  # no errors
