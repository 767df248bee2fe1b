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

Ray is an optional extra (``pip install 'edge-sdk[ray]'``): without it ``cluster`` raises a UsageError naming
the install line (exit 2).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Callable, Iterable, Iterator

from edge_sdk import log
from edge_sdk.errors import EdgeError, UsageError

INSTALL = "pip install 'edge-sdk[ray]'"
SHARD_SAMPLES = 16  # samples per shard: large enough to amortize a Ray call (~1 ms), small enough to balance
IN_FLIGHT_PER_WORKER = 2  # shards queued per actor: keeps the actors busy while bounding the results held in memory
RETRIES = 3  # restarts of a dead actor / re-runs of its shard

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
    initialized (a test's cluster) is used as it is and left running by ``Pool.close``."""
    ray = _ray()
    started = not ray.is_initialized()
    if started:
        kwargs = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        try:
            if address:
                ray.init(address=address, **kwargs)
            else:
                ray.init(num_cpus=workers or os.cpu_count() or 1, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(f"--ray {address or ''}: Ray did not start: {str(exc).splitlines()[0]}") from None
    cpus = int(ray.cluster_resources().get("CPU", 1))
    return Pool(ray, max(1, min(workers or cpus, cpus)), started)


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

    def run(self, key: int, make_state: Callable, work: Callable, shard_id: int, items: list):
        if key != self.key:
            self.state = make_state()
            self.key = key
        return shard_id, work(self.state, items)


class Pool:
    """``workers`` Ray actors, kept for the pool's life (their processes start once); each shard retried by Ray if
    its actor dies (the restarted actor builds its state again)."""

    def __init__(self, ray, workers: int, owns_ray: bool):
        self.ray, self.workers, self.owns_ray = ray, workers, owns_ray
        actor = ray.remote(num_cpus=1, max_restarts=RETRIES, max_task_retries=RETRIES)(_Worker)
        self.actors = [actor.remote() for _ in range(workers)]
        self.calls = 0
        # a test hook: called as on_result(shard id, {shard id in flight: its actor's index}) each time a shard's
        # result arrives (tests kill a worker process there, mid-run)
        self.on_result: Callable[[int, dict], None] | None = None

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
