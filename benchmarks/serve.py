"""Throughput and latency of `edge serve` on loopback, with and without dynamic batching.

    .venv/bin/python benchmarks/serve.py [--model M.tflite] [--requests N] [--seconds S] [--concurrency 1 4 16]

For each server configuration (no batching: --max-batch 1; batching: --max-batch B --max-wait-ms W), the
server runs in a child process (`python -m edge_sdk.cli serve ... --port 0 --host 127.0.0.1`) and this
process sends JSON requests from C threads, each on its own keep-alive http.client connection, until N
requests are answered or S seconds pass (whichever is first; every socket has a timeout). Prints, per
configuration and concurrency: requests/s, p50 and p99 latency, and the server's mean batch size; then the
ratios batching / no batching. Without --model, a small float MLP (64 -> 256 -> 256 -> 10, batch axis
resizable) is built in a temporary folder. Machines are noisy: read the ratios, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOCKET_TIMEOUT = 10.0
START_TIMEOUT = 60.0


def build_mlp(path: Path) -> None:
    from edge_sdk.model.builder import GraphBuilder
    from edge_sdk.model.writer import write_model

    rng = np.random.default_rng(0)
    g = GraphBuilder()
    x = g.input("x", (1, 64), "FLOAT32")
    sizes = [64, 256, 256, 10]
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        w = g.constant(f"w{i}", (rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32))
        bias = g.constant(f"b{i}", np.zeros(b, np.float32))
        y = g.tensor(f"h{i}", (1, b), "FLOAT32")
        g.op("FULLY_CONNECTED", [x, w, bias], [y], fused_activation_function="RELU" if b != 10 else "NONE")
        x = y
    g.output(x)
    path.write_bytes(write_model(g.build()))


class ChildServer:
    """`edge serve` in a child process on 127.0.0.1, port chosen by the OS (read from its first line)."""

    def __init__(self, model: str, max_batch: int, max_wait_ms: float, instances: int):
        cmd = [sys.executable, "-m", "edge_sdk.cli", "serve", model, "--host", "127.0.0.1", "--port", "0",
               "--max-batch", str(max_batch), "--max-wait-ms", str(max_wait_ms), "--instances", str(instances),
               "--max-queue", "1024"]
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: lines.put(self.proc.stdout.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=START_TIMEOUT)
        except queue.Empty:
            self.close()
            raise RuntimeError("the server did not start in time") from None
        if " on http://127.0.0.1:" not in line:
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self.close()
            raise RuntimeError(f"the server did not start: {line!r} {err}")
        self.port = int(line.split(" on http://127.0.0.1:")[1].split()[0])

    def metrics(self) -> dict:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=SOCKET_TIMEOUT)
        try:
            conn.request("GET", "/metrics")
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        for f in (self.proc.stdout, self.proc.stderr):
            if f:
                f.close()


def load(port: int, body: bytes, concurrency: int, requests: int, seconds: float) -> dict:
    """C threads send requests until `requests` are answered or `seconds` pass."""
    lock = threading.Lock()
    state = {"left": requests, "ok": 0, "errors": 0}
    latencies: list[float] = []
    deadline = time.monotonic() + seconds

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=SOCKET_TIMEOUT)
        try:
            while time.monotonic() < deadline:
                with lock:
                    if state["left"] <= 0:
                        return
                    state["left"] -= 1
                t0 = time.perf_counter()
                try:
                    conn.request("POST", "/predict", body, {"Content-Type": "application/json"})
                    r = conn.getresponse()
                    r.read()
                    ok = r.status == 200
                except (OSError, http.client.HTTPException):
                    ok = False
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=SOCKET_TIMEOUT)
                dt = time.perf_counter() - t0
                with lock:
                    if ok:
                        state["ok"] += 1
                        latencies.append(dt * 1000)
                    else:
                        state["errors"] += 1
        finally:
            conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 2 * SOCKET_TIMEOUT)
    wall = time.perf_counter() - t0
    lat = np.asarray(latencies)
    return {"ok": state["ok"], "errors": state["errors"], "rps": state["ok"] / wall if wall else 0.0,
            "p50": float(np.percentile(lat, 50)) if lat.size else float("nan"),
            "p99": float(np.percentile(lat, 99)) if lat.size else float("nan")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="a .tflite with one input (default: a built MLP)")
    ap.add_argument("--requests", type=int, default=300, help="requests per concurrency level (default 300)")
    ap.add_argument("--seconds", type=float, default=10.0, help="time limit per concurrency level (default 10)")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--max-wait-ms", type=float, default=2.0)
    ap.add_argument("--instances", type=int, default=1)
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            model = str(Path(tmp) / "mlp.tflite")
            build_mlp(Path(model))
        from edge_sdk.runtime.interpreter import Interpreter

        it = Interpreter(model_path=model)
        it.allocate_tensors()
        (d,) = it.get_input_details()
        x = np.random.default_rng(1).uniform(-1, 1, tuple(int(v) for v in d["shape"]))
        body = json.dumps({"inputs": x.tolist()}).encode()

        configs = [("no batching", 1, 0.0), (f"batch<={args.max_batch}", args.max_batch, args.max_wait_ms)]
        results: dict[tuple[str, int], dict] = {}
        print(f"model {model}, {args.instances} instance(s), up to {args.requests} requests or {args.seconds:g} s "
              "per level")
        print(f"{'server':<14} {'clients':>7} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'batch':>6} {'errors':>6}")
        for name, max_batch, wait in configs:
            server = ChildServer(model, max_batch, wait, args.instances)
            try:
                for c in args.concurrency:
                    before = server.metrics()
                    r = load(server.port, body, c, args.requests, args.seconds)
                    after = server.metrics()
                    batches = after["batches"] - before["batches"]
                    r["batch"] = (r["ok"] + r["errors"]) / batches if batches else float("nan")
                    results[(name, c)] = r
                    print(f"{name:<14} {c:>7} {r['rps']:>9.1f} {r['p50']:>8.2f} {r['p99']:>8.2f} {r['batch']:>6.2f} "
                          f"{r['errors']:>6}")
            finally:
                server.close()
        print("\nbatching / no batching:")
        for c in args.concurrency:
            a, b = results[(configs[1][0], c)], results[(configs[0][0], c)]
            rps = a["rps"] / b["rps"] if b["rps"] else float("nan")
            print(f"  {c:>3} clients: throughput x{rps:.2f}, p50 x{a['p50'] / b['p50']:.2f}, "
                  f"p99 x{a['p99'] / b['p99']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
