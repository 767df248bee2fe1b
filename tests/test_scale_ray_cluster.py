"""`--ray ADDRESS` against a Ray cluster started apart, as a user starts one: `ray start --head` and a second node
`ray start --address HEAD` (one CPU each, so two workers land on two nodes), each in its own process group, with
token authentication on (Ray's default for a new head; the CLI gets the token as a user's shell would, in
RAY_AUTH_TOKEN). The CLI runs in subprocesses (`edge evaluate ... --ray HOST:PORT`, `edge convert --calib ...
--ray HOST:PORT`) and gives exactly the single-process outputs / bytes. The nodes import edge-sdk from this
checkout (PYTHONPATH of each `ray start`: "the same edge-sdk on every node"). Teardown kills only the cluster's
own processes (never `ray stop`: it stops every Ray of this user) and checks none is left."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import signal
import socket
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from tests.sshd import free_port
from tests.test_evaluate import _data, _fc_model
from tests.test_quantize_streaming import SIZE, small_cnn

pytest.importorskip("ray", reason="Ray is not installed (pip install 'edge-sdk[ray]')")

ROOT = Path(__file__).resolve().parent.parent
RAY = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.argv[0] = 'ray'; sys.exit(main())"]
# `ray start --ray-client-server-port` (ray://) needs ray[client] (grpcio); the minimal `ray` refuses the flag
HAS_RAY_CLIENT = importlib.util.find_spec("grpc") is not None
START_TIMEOUT_S = 90


def _descendants(pids: list[int]) -> set[int]:
    """Every live process under ``pids`` (by parent id; Ray's workers are in sessions of their own)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), list(pids)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, []))
    return {p for p in found if Path(f"/proc/{p}").exists()}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Cluster:
    """A head and a second node on this machine, from `ray start --block`; ``env`` is what a user's shell has to
    reach it (the token)."""

    def __init__(self, tmp: Path, nodes: int = 2, pythonpath: Path = ROOT):
        self.port = free_port()
        self.client_port = free_port() if HAS_RAY_CLIENT else None
        self.address = f"127.0.0.1:{self.port}"
        path = os.pathsep.join([str(pythonpath)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        self.env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32), PYTHONPATH=path)
        self.tmp, self.procs = tmp, []
        # Ray's sockets live under its temp dir, and a socket's path is at most 107 bytes: a short one under /tmp
        self.ray_tmp = Path(tempfile.mkdtemp(prefix="edge-ray-", dir="/tmp"))
        head = ["--head", "--port", str(self.port), "--temp-dir", str(self.ray_tmp), "--include-dashboard", "false",
                "--dashboard-port", str(free_port())]
        if self.client_port:
            head += ["--ray-client-server-port", str(self.client_port)]
        self._start("head", head)
        if nodes == 2:
            self._start("node", ["--address", self.address])

    def _start(self, name: str, args: list[str]) -> None:
        # fixed default ports (dashboard agent 52365, metrics, runtime env agent) would collide with other clusters
        ports = ["--dashboard-agent-listen-port", "--runtime-env-agent-port", "--metrics-export-port"]
        args = args + ["--block", "--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"]
        args += [x for flag in ports for x in (flag, str(free_port()))]
        log = open(self.tmp / f"{name}.log", "w")
        self.procs.append(subprocess.Popen(RAY + ["start"] + args, stdout=log, stderr=subprocess.STDOUT,
                                           env=self.env, start_new_session=True))
        log.close()

    def wait_for_nodes(self, count: int) -> None:
        script = ("import ray, sys, time\n"
                  f"ray.init(address={self.address!r}, log_to_driver=False, configure_logging=False)\n"
                  f"deadline = time.time() + {START_TIMEOUT_S}\n"
                  f"while sum(n['Alive'] for n in ray.nodes()) < {count} and time.time() < deadline:\n"
                  "    time.sleep(0.5)\n"
                  f"sys.exit(sum(n['Alive'] for n in ray.nodes()) < {count})\n")
        deadline = time.time() + START_TIMEOUT_S
        while True:  # the head's GCS port first: ray.init on a port nothing listens at retries for minutes
            assert all(p.poll() is None for p in self.procs), self.logs()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert time.time() < deadline, "the Ray head did not listen\n" + self.logs()
                time.sleep(0.5)
        r = subprocess.run([sys.executable, "-c", script], env=self.env, capture_output=True, text=True,
                           timeout=START_TIMEOUT_S + 30)
        assert r.returncode == 0, f"{count} Ray nodes not alive\n{r.stderr[-2000:]}\n{self.logs()}"

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-1500:]}" for p in sorted(self.tmp.glob("*.log")))

    def stop(self) -> None:
        """SIGKILL of the two `ray start` process groups and of every process under them (workers run in sessions
        of their own); then nothing of it may be left."""
        mine = _descendants([p.pid for p in self.procs])
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in mine:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.procs:
            p.wait(timeout=30)
        deadline = time.time() + 30
        while any(_alive(pid) for pid in mine) and time.time() < deadline:
            time.sleep(0.2)
        left = [pid for pid in mine if _alive(pid)]
        shutil.rmtree(self.ray_tmp, ignore_errors=True)
        assert not left, f"Ray processes left: {left}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.wait_for_nodes(2)
        yield c
    finally:
        c.stop()


def _edge(args: list[str], env: dict, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edge_sdk.cli"] + args, env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
def test_evaluate_and_convert_on_a_cluster_joined_by_address(cluster, tmp_path):
    """Two workers on two nodes: `edge evaluate --json` and `edge convert --calib` equal the one-process run."""
    fpath = _fc_model(tmp_path)
    data, _, _ = _data(tmp_path)
    src = tmp_path / "cnn.tflite"
    src.write_bytes(small_cnn())
    calib = tmp_path / "calib.npy"  # 40 samples: shards of 16, 16, 8 over the two nodes
    np.save(calib, np.random.default_rng(5).standard_normal((40, 1, SIZE, SIZE, 3)).astype(np.float32))
    ray_flag = ["--ray", cluster.address]

    evaluate = ["evaluate", str(fpath), "--data", str(data), "--json"]
    here, on_ray = _edge(evaluate, cluster.env, tmp_path), _edge(["-v"] + evaluate + ray_flag, cluster.env, tmp_path)
    assert here.returncode == 0 and on_ray.returncode == 0, on_ray.stderr[-2000:]
    assert json.loads(on_ray.stdout) == json.loads(here.stdout)
    assert f"Ray at {cluster.address}: 2 workers on 2 node(s)" in on_ray.stderr

    convert = ["convert", str(src), "--calib", str(calib), "--calib-method", "percentile", "-o"]
    here = _edge(convert + [str(tmp_path / "here.tflite")], cluster.env, tmp_path)
    on_ray = _edge(["-v"] + convert + [str(tmp_path / "ray.tflite")] + ray_flag, cluster.env, tmp_path)
    assert here.returncode == 0 and on_ray.returncode == 0, on_ray.stderr[-2000:]
    assert "2 workers on 2 node(s)" in on_ray.stderr
    assert (tmp_path / "ray.tflite").read_bytes() == (tmp_path / "here.tflite").read_bytes()


@pytest.mark.slow
def test_ray_client_address(cluster, tmp_path):
    """ray://HEAD:PORT: with ray[client] installed the head serves it and the run equals the one-process one;
    with the minimal `ray` (no grpcio) the CLI says in one line to install ray[client], exit 2."""
    fpath = _fc_model(tmp_path)
    data, _, _ = _data(tmp_path)
    evaluate = ["evaluate", str(fpath), "--data", str(data), "--json"]
    if HAS_RAY_CLIENT:
        here = _edge(evaluate, cluster.env, tmp_path)
        on_ray = _edge(evaluate + ["--ray", f"ray://127.0.0.1:{cluster.client_port}"], cluster.env, tmp_path)
        assert on_ray.returncode == 0, on_ray.stderr[-2000:]
        assert json.loads(on_ray.stdout) == json.loads(here.stdout)
        return
    r = _edge(evaluate + ["--ray", f"ray://{cluster.address}"], cluster.env, tmp_path, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "ray[client]" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("address", ["127.0.0.1:{port}", "ray://127.0.0.1:{port}", "nowhere"])
def test_an_address_nothing_answers_at_is_one_line_exit_2_in_seconds(tmp_path, address):
    fpath = _fc_model(tmp_path)
    data, _, _ = _data(tmp_path)
    address = address.format(port=free_port())  # bound and released: nothing listens there
    # the timeout is the hang check: ray.init alone retries such an address for over 2 minutes
    r = _edge(["evaluate", str(fpath), "--data", str(data), "--ray", address], dict(os.environ), tmp_path,
              timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and address in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_a_node_with_other_edge_sdk_code_is_refused_in_one_line(tmp_path):
    """The cluster's workers import a copy of edge-sdk that differs by one comment: `--ray` refuses to compute
    with it (its numbers could differ), naming the node and the folder, exit 2; the cluster is left running."""
    other = tmp_path / "other"
    for package in ("edge_sdk", "converters"):
        shutil.copytree(ROOT / package, other / package, ignore=shutil.ignore_patterns("__pycache__", "_bundled"))
    with open(other / "converters" / "__init__.py", "a") as f:
        f.write("# another edit\n")
    c = Cluster(tmp_path, nodes=1, pythonpath=other)
    try:
        c.wait_for_nodes(1)
        fpath = _fc_model(tmp_path)
        data, _, _ = _data(tmp_path)
        env = dict(c.env, PYTHONPATH=str(ROOT))  # this process: the checkout
        r = _edge(["evaluate", str(fpath), "--data", str(data), "--ray", c.address], env, tmp_path)
        assert r.returncode == 2, r.stderr[-2000:]
        assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr
        assert "other edge-sdk code" in r.stderr and str(other) in r.stderr
    finally:
        c.stop()


@pytest.mark.slow
def test_bench_matrix_on_a_cluster_joined_by_address(cluster, tmp_path):
    """`edge bench --matrix --ray HOST:PORT` (1 model x 2 precisions x 2 targets): the conversions and cells run on
    the cluster's workers; every cell equals the one-process one but for timings and the process's own figures."""
    from edge_sdk.tools import bench_matrix as bm

    src = tmp_path / "cnn.tflite"
    src.write_bytes(small_cnn(seed=2))
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(6).standard_normal((12, 1, SIZE, SIZE, 3)).astype(np.float32))
    args = ["bench", str(src), "--matrix", "--target", "host-linux", "--target", "raspberry-pi-4", "--precision",
            "int8", "--precision", "float", "--calib", str(calib), "--runs", "3", "--warmup", "0", "--profile-runs",
            "1", "--json"]
    on_ray = _edge(["-v"] + args + ["--ray", cluster.address], cluster.env, tmp_path)
    here = _edge(args, cluster.env, tmp_path)
    assert on_ray.returncode == 0 and here.returncode == 0, on_ray.stderr[-2000:] + here.stderr[-2000:]
    assert "2 workers on 2 node(s)" in on_ray.stderr
    cells_ray, cells_here = json.loads(on_ray.stdout)["cells"], json.loads(here.stdout)["cells"]
    assert [(c["precision"], c["target"]) for c in cells_here] == [
        (p, t) for p in ("int8", "float") for t in ("host-linux", "raspberry-pi-4")]
    for r, h in zip(cells_ray, cells_here, strict=True):
        assert "error" not in r and r["check"]["verdict"] == "runs"
        assert bm.comparable(r) == bm.comparable(h)


@pytest.mark.slow
def test_a_process_without_the_cluster_token_is_told_so(cluster, tmp_path):
    """Token authentication on (the cluster's), no token here: exit 2, the last line names RAY_AUTH_TOKEN (Ray's
    own C++ client logs each refused retry on stderr before it, ~20 s of them: not ours to silence)."""
    fpath = _fc_model(tmp_path)
    data, _, _ = _data(tmp_path)
    env = dict(cluster.env, RAY_AUTH_MODE="disabled", HOME=str(tmp_path))  # no ~/.ray/auth_token either
    env.pop("RAY_AUTH_TOKEN")
    r = _edge(["evaluate", str(fpath), "--data", str(data), "--ray", cluster.address], env, tmp_path, timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    last = r.stderr.strip().splitlines()[-1]
    assert "token" in last and "RAY_AUTH_TOKEN" in last and cluster.address in last and "Traceback" not in r.stderr
