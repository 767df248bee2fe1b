"""Data-parallel work on Ray (``edge evaluate --ray``, ``edge convert --calib ... --ray``): samples are cut into
shards, each shard runs on an actor that holds one model runner (one Interpreter per worker, built once), and the
results come back keyed by shard id and are handed out in shard order, so whatever folds them (the evaluation's
metrics, the calibrator's statistics) sees exactly the sequence a single process sees.

Ray does the scheduling and the retries: an actor that dies is restarted (``max_restarts``) and the shard it held
is run again (``max_task_retries``); a shard's result is a pure function of its samples, so a retried shard gives
the same result, and it is stored under its id once (never appended twice, never lost).

    with scale_ray.cluster(address=None, workers=2):   # joins ADDRESS, or starts Ray here with `workers` CPUs
        ...  # converters.evaluate / converters.quantize.calibrate find the pool with scale_ray.active()

    pool = scale_ray.start(workers=2)                  # the same, kept across several blocks
    with pool.activate(): ...
    pool.close()

Why an actor pool and not Ray Data's ``map_batches``: (1) Ray Data is not in ``ray``'s own install: it needs
``ray[data]`` (pandas, pyarrow and fsspec besides), a far larger extra than ``edge-sdk[ray]`` asks for; (2) the
samples are read, resized and normalized by our own readers (converters.calibration: image folders, .npy/.npz,
.wav frontends), not by Ray Data's ``read_images`` / ``read_numpy``, so a Ray Data pipeline would only wrap the
same iterator; (3) the fold must see the samples in their order (the percentile / MSE calibrators keep a seeded
subsample, float sums depend on order), which here is the shard id, not the order batches finish; (4) a dead
worker is Ray's own actor restart and task retry (``max_restarts`` / ``max_task_retries``), the same mechanism
Ray Data's actor pool uses, with the shard's result stored under its id once.

Joining a cluster (``address``): a HOST:PORT nothing answers at fails in seconds (a TCP probe; ray.init retries
it for minutes), and every worker must import the same edge-sdk sources as this process (``code_fingerprint``):
a node with another install is refused, never computed with.

Ray is an optional extra (``pip install 'edge-sdk[ray]'``): without it ``cluster`` raises a UsageError naming
the install line (exit 2).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import importlib.util
import os
import socket
from collections.abc import Callable, Iterable, Iterator

from edge_sdk import log
from edge_sdk.errors import EdgeError, UsageError

INSTALL = "pip install 'edge-sdk[ray]'"
SHARD_SAMPLES = 16  # samples per shard: large enough to amortize a Ray call (~1 ms), small enough to balance
IN_FLIGHT_PER_WORKER = 2  # shards queued per actor: keeps the actors busy while bounding the results held in memory
RETRIES = 3  # restarts of a dead actor / re-runs of its shard
WORKER_START_S = 180.0  # the workers answer within this or the run stops: a cluster whose CPUs are all taken

_ACTIVE: contextvars.ContextVar[Pool | None] = contextvars.ContextVar("edge_ray_pool", default=None)


def _ray():
    try:
        import ray
    except ImportError:
        raise UsageError(f"--ray needs Ray, which is not installed: {INSTALL}") from None
    return ray


def active() -> Pool | None:
    """The pool the caller opened with ``cluster`` (None: run in this process)."""
    return _ACTIVE.get()


def start(address: str | None = None, workers: int | None = None) -> Pool:
    """A pool of Ray actors: ``address`` joins a running cluster ("auto", "ray://host:10001", "host:6379");
    without one Ray starts here with ``workers`` CPUs (default: this machine's count). A Ray that was already
    initialized (a test's cluster) is used as it is and left running by ``Pool.close``. Every worker must run the
    same edge-sdk code as this process (checked: a node with another install would give other numbers)."""
    ray = _ray()
    started = not ray.is_initialized()
    if started:
        _init(ray, address, workers)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    pool = Pool(ray, max(1, min(workers or cpus, cpus)), started)
    try:
        pool.check_workers(address)
    except BaseException:
        pool.close()
        raise
    return pool


def _init(ray, address: str | None, workers: int | None) -> None:
    kwargs = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
    if address:
        _answers(address)
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=workers or os.cpu_count() or 1, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        if _refused_token(exc):
            raise UsageError(f"--ray {address}: the cluster refused this process's token (Ray's token "
                             "authentication): give the cluster's token as RAY_AUTH_TOKEN or in ~/.ray/auth_token") \
                from None
        raise UsageError(f"--ray {address or ''}: Ray did not start: {str(exc).splitlines()[0]}") from None


def _refused_token(exc: BaseException | None) -> bool:
    """Whether ray.init failed on token authentication (Ray 2.60 says it only in a cause's text: a ConnectionError
    caused by a RuntimeError that quotes the GCS client's InvalidAuthToken)."""
    while exc is not None:
        if "InvalidAuthToken" in str(exc) or type(exc).__name__ == "AuthenticationError":
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _answers(address: str, timeout_s: float = 3.0) -> None:
    """A HOST:PORT (or ray://HOST:PORT) where nothing listens fails here in at most ``timeout_s``: ray.init
    would retry the GCS for minutes. ("auto" is Ray's to resolve: it reads the address `ray start` recorded.)"""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        if address != "auto":
            raise UsageError(f"--ray {address}: give auto, HOST:PORT (the head's --port, 6379 by default) or "
                             "ray://HOST:PORT (the head's Ray client server, 10001 by default)")
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(f"--ray {address}: no Ray head answers at {host}:{port} ({reason}): start one with "
                         f"`ray start --head --port {port}` or give the head's address") from None


@contextlib.contextmanager
def cluster(address: str | None = None, workers: int | None = None):
    """The pool of ``start`` made active for the block (``active()``), closed at its end; inside an active pool's
    block, that pool (a caller's cluster is not started twice)."""
    if active() is not None:
        yield active()
        return
    pool = start(address, workers)
    try:
        with pool.activate():
            yield pool
    finally:
        pool.close()


class _Worker:
    """One Ray actor: builds its state (a model runner) once per map call, then runs that call's shards on it."""

    def __init__(self):
        self.key, self.state = None, None

    def pid(self) -> int:
        return os.getpid()

    def about(self) -> tuple[str, str, str]:
        """(this worker's node: IP and id, the edge-sdk code it imports: fingerprint, folder); several nodes can
        share an IP (`ray start` twice on one machine), hence the id."""
        import ray

        node = f"{ray.util.get_node_ip_address()}/{ray.get_runtime_context().get_node_id()[:8]}"
        return node, code_fingerprint(), _code_folder()

    def run(self, key: int, make_state: Callable, work: Callable, shard_id: int, items: list):
        if key != self.key:
            self.state = make_state()
            self.key = key
        return shard_id, work(self.state, items)


def _last_line(exc: BaseException) -> str:
    """The line of a Ray error that names the cause (its first lines are Ray's own framing)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def _code_folder() -> str:
    import edge_sdk

    return os.path.dirname(os.path.dirname(os.path.abspath(edge_sdk.__file__)))


_FINGERPRINT: str | None = None


def code_fingerprint() -> str:
    """sha256 of edge-sdk's Python sources (edge_sdk/ and converters/, by relative path): what a worker computes
    with. A version number is not enough: two checkouts of one version can differ."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        digest = hashlib.sha256()
        for name in ("edge_sdk", "converters"):  # found, not imported (tasks/ does not import converters)
            spec = importlib.util.find_spec(name)
            locations = list(spec.submodule_search_locations or []) if spec else []
            if not locations:
                continue
            top = locations[0]
            files = sorted(os.path.relpath(os.path.join(d, f), top) for d, _, names in os.walk(top)
                           for f in names if f.endswith(".py"))
            for rel in files:
                with open(os.path.join(top, rel), "rb") as f:
                    digest.update(f"{name}/{rel}\0".encode() + f.read() + b"\0")
        _FINGERPRINT = digest.hexdigest()
    return _FINGERPRINT


class Pool:
    """``workers`` Ray actors, kept for the pool's life (their processes start once); each shard retried by Ray if
    its actor dies (the restarted actor builds its state again)."""

    def __init__(self, ray, workers: int, owns_ray: bool):
        self.ray, self.workers, self.owns_ray = ray, workers, owns_ray
        actor = ray.remote(num_cpus=1, max_restarts=RETRIES, max_task_retries=RETRIES)(_Worker)
        self.actors = [actor.remote() for _ in range(workers)]
        self.calls = 0
        self.nodes: list[str] = []  # the workers' nodes (IP/id), once check_workers asked them
        # a test hook: called as on_result(shard id, {shard id in flight: its actor's index}) each time a shard's
        # result arrives (tests kill a worker process there, mid-run)
        self.on_result: Callable[[int, dict], None] | None = None

    def check_workers(self, address: str | None, timeout_s: float = WORKER_START_S) -> None:
        """Each worker's node and edge-sdk code: all must run this process's code (a UsageError naming the node
        and the folder it imports edge-sdk from otherwise); logs how many nodes the workers are on. Workers that
        do not answer within ``timeout_s`` (no free CPU in the cluster: Ray keeps such an actor pending) stop the
        run with one line instead of a wait without end."""
        try:
            about = self.ray.get([a.about.remote() for a in self.actors], timeout=timeout_s)
        except self.ray.exceptions.GetTimeoutError:
            raise UsageError(f"--ray {address or ''}: {self.workers} Ray worker(s) of 1 CPU each did not start within "
                             f"{timeout_s:g} s: the cluster has no free CPU for them (see `ray status`; give fewer "
                             "with --ray-workers)") from None
        except self.ray.exceptions.RayError as exc:  # no edge-sdk on a node, or one without this method
            raise UsageError(f"--ray {address or ''}: a Ray worker could not start edge-sdk's worker: "
                             f"{_last_line(exc)}: install the same edge-sdk on every node") from None
        mine = code_fingerprint()
        for node, fingerprint, folder in about:
            if fingerprint != mine:
                raise UsageError(f"--ray {address or ''}: the workers on node {node} run other edge-sdk code "
                                 f"({folder}) than this process ({_code_folder()}): install the same edge-sdk "
                                 "on every node (or the same checkout on PYTHONPATH of each `ray start`)")
        self.nodes = sorted({node for node, _, _ in about})
        log.info(f"Ray{' at ' + address if address else ''}: {len(about)} workers on {len(self.nodes)} node(s) "
                 f"({', '.join(self.nodes)})")

    def worker_pids(self) -> list[int]:
        """Each actor's worker process id (asked of the actor: call it while the pool is idle)."""
        return self.ray.get([a.pid.remote() for a in self.actors])

    @contextlib.contextmanager
    def activate(self):
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    def close(self) -> None:
        for a in self.actors:
            self.ray.kill(a)
        self.actors = []
        if self.owns_ray:
            self.ray.shutdown()

    def map(self, make_state: Callable, work: Callable, items: Iterable, label: str, total: int | None = None,
            shard: int = SHARD_SAMPLES) -> Iterator[tuple[list, object]]:
        """(shard's items, work(state, shard's items)) for consecutive shards of ``items``, in order; ``state`` is
        ``make_state()``, built once per actor. ``make_state`` and ``work`` are picklable (module-level functions,
        functools.partial of them); ``make_state`` goes to the object store once (a model is not sent per shard)."""
        ray, actors = self.ray, self.actors
        self.calls += 1
        key, factory = self.calls, ray.put(make_state)
        shards: dict[int, list] = {}  # shard id -> its items, until its result was handed out
        done: dict[int, object] = {}  # shard id -> result, until handed out (a retried shard lands here once)
        pending: dict = {}  # object ref -> shard id
        next_out = 0
        source = iter(items)
        exhausted = False
        with log.progress(total or 0, label) as bar:
            while True:
                while not exhausted and len(pending) < len(actors) * IN_FLIGHT_PER_WORKER:
                    chunk = [x for _, x in zip(range(shard), source)]
                    if not chunk:
                        exhausted = True
                        break
                    sid = len(shards) + next_out
                    shards[sid] = chunk
                    pending[actors[sid % len(actors)].run.remote(key, factory, work, sid, chunk)] = sid
                while next_out in done:
                    chunk = shards.pop(next_out)
                    bar.advance(len(chunk))
                    yield chunk, done.pop(next_out)
                    next_out += 1
                if not pending:
                    if exhausted:
                        return
                    continue
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    sid = pending.pop(ref)
                    try:
                        got_id, result = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        raise EdgeError(f"Ray: shard {sid} failed after {RETRIES} retries: "
                                        f"{str(exc).splitlines()[0]}") from None
                    done.setdefault(got_id, result)
                    if self.on_result is not None:
                        self.on_result(got_id, {i: i % len(actors) for i in sorted(pending.values())})
