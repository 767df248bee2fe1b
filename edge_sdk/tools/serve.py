"""`edge serve`: a small HTTP inference server on the standard library, with dynamic batching.

    with Server("net.tflite", port=0, max_batch=8, max_wait_ms=5, instances=2) as srv:
        ...  # POST http://127.0.0.1:{srv.port}/predict
    serve("net.tflite", port=8000)          # blocks until KeyboardInterrupt (the CLI maps SIGTERM to that)

Endpoints:

- ``POST /predict`` (also ``/v1/predict``)
  - JSON (``Content-Type: application/json``): ``{"inputs": [[...]]}`` (nested lists, a model with one
    input) or ``{"inputs": {"name": [[...]], ...}}`` (by input name). Shapes are the input's, with or without
    its batch axis of one. Values are real numbers, quantized with the input's scale and zero point when the
    input is quantized; ``"raw": true`` takes them as the tensor's own integer values. ``{"image": base64}``
    runs the image pipeline (``edge_sdk.tasks.pipeline``: the manifest's pre-processing) for image models.
    ``"top_k": K`` limits predictions. Answer: ``{"outputs": [nested lists, dequantized], "predictions":
    [{"label", "score"}] | "detections": [...]}`` (predictions/detections when the model is a classifier or
    detector with labels or a manifest; a [-1, C] classifier given a [T, C] request: one predictions list per
    row, as LiteRT's batch).
  - a WAV (``Content-Type: audio/wav``; one-input models of raw samples: [-1], [-1, -1], [1, -1], or [N] /
    [1, N]): the body is a 16-bit PCM WAV at the model's rate (``sample_rate``, `--sample-rate`, else the
    manifest's "audio" entry: another rate is a 400, never resampled); its samples (int16 / 32768, quantized for
    a quantized input) are the input, at the file's length where the signature says -1 (else exactly N samples).
  - raw tensor (``Content-Type: application/octet-stream``, headers ``X-Shape: 1,96,96,1`` and
    ``X-Dtype: int8``; one-input models): the body is the tensor's bytes, little-endian, C order. The dtype
    is the input's own (passed as is) or float32 (quantized). With ``Accept: application/octet-stream``
    the answer is output 0's bytes in its own dtype with ``X-Shape`` / ``X-Dtype``; else JSON as above.
- ``GET /health``: ``{"status": "ok", ...}`` (503 with "stopping" during shutdown).
- ``GET /metrics``: request and response counts, queue depth, batches and their sizes, latency p50/p90/p99 (ms,
  over the last 4096 requests).

Batching: requests go into one bounded queue; ``instances`` worker threads, each with its own interpreters,
take the oldest request and wait up to ``max_wait_ms`` from its arrival for more, up to ``max_batch``, then
run them as one batch; a worker stops waiting early when no request is on its way in (being read or parsed
by the HTTP threads), so a lone client pays no batching delay and batches form from what queues up under load. That needs a batch axis: at start-up the model is checked by resizing its inputs'
first axis to 2 and comparing each row with a batch-one run (a model whose batch axis is fixed above one
is run at that size, padded). A worker keeps one interpreter per batch size it uses (powers of two up to
``max_batch``; a smaller batch is padded up to the next). Models without a usable batch axis run one
request at a time (``/health`` says ``"batching": false``).

Dynamic shapes: a model with a -1 beyond an input's batch axis (or, with ``max_batch`` 1, a [-1, C] input: its rows),
served without ``input_shapes`` (`--input-shape`), takes each request at its own shape (any size where the shape signature says -1): a worker resizes an interpreter
to it (keeping the last SHAPED_INTERPRETERS shapes' interpreters) and runs the request alone (no batching); a shape
the model cannot run at is a 400 naming it.

Runtime: ``backend`` "auto" (default) runs the model on the C runtime when it runs it (on Linux; the Python
interpreter otherwise: edge_sdk.tools.run_backend), "python" or "c"; ``Server.runtime`` says which and why (and
``/health``: runtime, runtime_reason). Batching by resizing the batch axis needs the Python interpreter: with
``max_batch`` > 1 on such a model auto picks it (forced "c" serves one at a time and says so).

Bounds: request body (``max_request_bytes``: 413), queued requests (``max_queue``: 503 with Retry-After),
open connections (``max_connections``: 503), socket reads (``socket_timeout_s``), the wait for a result
(``request_timeout_s``: 504). Bad requests get 4xx with ``{"error": reason}``; an error inside a run is a
500 for that batch's requests, never a dead server. ``stop()`` stops accepting, lets the queued requests
finish (up to its timeout) and joins the workers.
"""

from __future__ import annotations

import base64
import binascii
import collections
import http.server
import json
import math
import socket
import threading
import time
from pathlib import Path

import numpy as np
from typing_extensions import Self

from edge_sdk import log
from edge_sdk import timeouts as T
from edge_sdk.errors import EdgeError, ModelError, UsageError
from edge_sdk.model.input_shapes import signature_names, with_batch_axis

LATENCY_WINDOW = 4096
WAV_TYPES = ("audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave")  # a WAV body (Server.parse_wav)
SHAPED_INTERPRETERS = 8  # a dynamic server's worker keeps interpreters for this many request shapes
MAX_JSON_DEPTH = 64  # a tensor is at most rank 8 or so; anything deeper is not a request


def _depth_above(doc, limit: int) -> bool:
    """True when lists/objects nest deeper than ``limit`` (iterative: no recursion on hostile input)."""
    stack = [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            if d > limit:
                return True
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v)
                         if isinstance(x, (list, dict)))
    return False


class _Reject(Exception):
    """An HTTP error answer: status and reason."""

    def __init__(self, status: int, reason: str, headers: dict | None = None):
        super().__init__(reason)
        self.status, self.reason, self.headers = status, reason, headers or {}


class _Item:
    __slots__ = ("cancelled", "error", "event", "inputs", "result", "t0")

    def __init__(self, inputs):
        self.inputs = inputs
        self.event = threading.Event()
        self.result = None
        self.error = None
        self.t0 = time.monotonic()
        self.cancelled = False


def _sized_per_request(model, max_batch: int) -> dict[str, tuple[int, ...]]:
    """{name: shape signature} of the inputs each request sizes (a dynamic server, no --input-shape): a -1 beyond
    the batch axis, and without batching (max_batch 1) a rank-2 input's leading -1 too ([-1, C]: frames x
    features, or a batch; either way a [T, C] request runs at [T, C], as LiteRT resized to it)."""
    from edge_sdk.model.input_shapes import dynamic_inputs, judged_shapes

    out = {name: tuple(sig) for name, sig, _ in dynamic_inputs(model)}
    if max_batch == 1:
        out.update({i["name"]: tuple(i["signature"]) for i in judged_shapes(model)
                    if len(i["signature"]) == 2 and i["signature"][0] < 0 <= i["signature"][1]})
    return out


def _model_bytes(model) -> tuple[bytes, str]:
    from edge_sdk.model.types import Model

    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), "<bytes>"
    if isinstance(model, Model):
        from edge_sdk.model.writer import write_model

        return write_model(model), "<model>"
    path = Path(model)
    if not path.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    return path.read_bytes(), str(path)


def _new_interpreter(content: bytes, batch: int | None = None, num_threads: int | None = None,
                     backend: str = "python"):
    from edge_sdk.runtime.interpreter import Interpreter

    it = Interpreter(model_content=content, num_threads=num_threads, backend=backend)
    if batch is not None:  # the C runtime has no resize: Server never asks it for one (batch_mode "resize")
        for d in it.get_input_details():
            it.resize_tensor_input(d["index"], [batch] + [int(v) for v in d["shape"][1:]])
    it.allocate_tensors()
    return it


def _run(it, inputs: list[np.ndarray]) -> list[np.ndarray]:
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def _probe_batching(content: bytes, inputs: list[dict], outputs: list[dict]) -> tuple[str, int, str]:
    """("resize", 0, "") when the first axis can be resized and rows stay independent, ("fixed", B, "") when the
    model's batch axis is a fixed B > 1, else ("none", 1, why not)."""
    shapes = [tuple(int(v) for v in d["shape"]) for d in inputs]
    if not shapes or any(len(s) == 0 for s in shapes) or any(len(d["shape"]) == 0 for d in outputs):
        return "none", 1, "an input or output is a scalar (no batch axis)"
    firsts = {s[0] for s in shapes}
    out_firsts = {int(d["shape"][0]) for d in outputs}
    if len(firsts) == 1 and firsts == out_firsts and next(iter(firsts)) > 1:
        return "fixed", next(iter(firsts)), ""
    if firsts != {1} or out_firsts != {1}:
        return "none", 1, (f"the first axes of the inputs {sorted(firsts)} and outputs {sorted(out_firsts)} are not "
                           "one batch axis of 1")
    rng = np.random.default_rng(7)

    def sample(d, n):
        dt = np.dtype(d["dtype"])
        shape = (n,) + tuple(int(v) for v in d["shape"][1:])
        if dt.kind == "f":
            return rng.standard_normal(shape).astype(dt)
        if dt.kind in "iu":
            info = np.iinfo(dt)
            return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dt)
        if dt == np.bool_:
            return rng.integers(0, 2, shape).astype(bool)
        raise ModelError("unsupported input dtype")

    try:
        one = _new_interpreter(content)
        shape_inputs = [d["name"] for d, r in zip(inputs, one.required_input_values()) if r is not None]
        if shape_inputs:  # its one legal value is the output shape, which the batch size changes
            return "none", 1, (f"input {', '.join(repr(n) for n in shape_inputs)} holds an output shape "
                               "(Interpreter.required_input_values), which the batch size changes")
        two = _new_interpreter(content, 2)
        if [int(d["shape"][0]) for d in two.get_output_details()] != [2] * len(outputs):
            return "none", 1, "resizing the batch axis to 2 does not give outputs with a batch axis of 2"
        xs = [sample(d, 2) for d in inputs]
        both = _run(two, xs)
        for row in range(2):
            single = _run(one, [x[row:row + 1] for x in xs])
            for a, b in zip(single, both):
                if a.shape[1:] != b.shape[1:] or not np.allclose(a[0], b[row], rtol=1e-5, atol=1e-6, equal_nan=True):
                    return "none", 1, "rows of a batch of 2 differ from runs of one (the rows are not independent)"
    except Exception as exc:  # noqa: BLE001 - any failure means "no batching", the server still serves batch one
        return "none", 1, f"the model cannot run with a batch axis of 2 ({' '.join(str(exc).split())[:200]})"
    return "resize", 0, ""


class Server:
    """The inference server (see the module docstring). ``start()`` returns once it listens."""

    def __init__(self, model, host: str = "127.0.0.1", port: int = 8000, max_batch: int = 1,
                 max_wait_ms: float = 2.0, instances: int = 1, max_queue: int = 256,
                 max_request_bytes: int = 16 << 20, max_connections: int = 64,
                 request_timeout_s: float = T.SERVE_REQUEST_TIMEOUT,
                 socket_timeout_s: float = T.SERVE_SOCKET_TIMEOUT, labels=None, task: str | None = None,
                 detection: dict | None = None, num_threads: int | None = None, backend: str = "auto",
                 input_shapes=None, sample_rate: int | None = None):
        for name, v, lo in (("max_batch", max_batch, 1), ("instances", instances, 1), ("max_queue", max_queue, 1),
                            ("max_request_bytes", max_request_bytes, 1), ("max_connections", max_connections, 1)):
            if not isinstance(v, (int, np.integer)) or v < lo:
                raise UsageError(f"serve: {name} must be an integer >= {lo}, not {v!r}")
        if max_wait_ms < 0:
            raise UsageError(f"serve: max_wait_ms must be >= 0, not {max_wait_ms}")
        if not isinstance(port, (int, np.integer)) or not 0 <= port <= 65535:
            raise UsageError(f"serve: port must be in 0..65535, not {port!r}")
        from edge_sdk.tasks.pipeline import check_labels_file

        check_labels_file(labels)
        from edge_sdk.model import read_model
        from edge_sdk.model.input_shapes import shaped_model

        self.content, self.name = _model_bytes(model)
        # `--input-shape`: served at these input shapes. Without it, an input with a -1 beyond its batch axis makes
        # a dynamic server: each request runs at its own shape (an interpreter resized to it; _shaped_interpreter)
        self.dynamic = {} if input_shapes is not None else _sized_per_request(read_model(self.content), max_batch)
        # each input's SignatureDef name by tensor name: dynamic_inputs names it so, and ai-edge-torch users know it
        self.signature_names = signature_names(read_model(self.content))
        if not self.dynamic:
            self.content = shaped_model(self.content, input_shapes)
        self.input_shapes = input_shapes  # said when a request's shape is not the one the server was given
        from edge_sdk.model.manifest import read_manifest

        # WAV requests: the rate the model takes (--sample-rate, else the manifest's), None: not known (a 400 says so)
        self.sample_rate = sample_rate or ((read_manifest(read_model(self.content)) or {}).get("audio") or {}).get(
            "sample_rate")
        from edge_sdk.tasks.pipeline import samples_by_channel

        # a WAV's samples go along axis 0 of AudioSpectrogram's [samples, 1 channel] input, else along the last
        self.samples_axis = 0 if samples_by_channel(read_model(self.content)) else -1
        self.host, self.requested_port = host, int(port)
        self.max_wait_s = float(max_wait_ms) / 1000.0
        self.instances = int(instances)
        self.max_queue = int(max_queue)
        self.max_request_bytes = int(max_request_bytes)
        self.max_connections = int(max_connections)
        self.request_timeout_s = float(request_timeout_s)
        self.socket_timeout_s = float(socket_timeout_s)
        self.num_threads = num_threads  # each interpreter's (Interpreter's checks)
        from edge_sdk.tools.run_backend import C, RuntimeChoice, choose_runtime, warn_nan_weights

        self.nan_weights = warn_nan_weights(self.content, self.name)  # served all the same; said once, in /health
        # the runtime (issue 16 point 5): auto = the C runtime when it runs the model; said at start-up, in /health
        self.runtime = choose_runtime(self.content, backend, num_threads=num_threads,
                                      per_request_shapes=bool(self.dynamic))
        if self.dynamic:  # its stored shape is a placeholder: nothing to allocate until a request gives one
            from edge_sdk.runtime.interpreter import Interpreter

            probe = Interpreter(model_content=self.content, num_threads=num_threads)
        else:
            probe = _new_interpreter(self.content, num_threads=num_threads)  # fails here on a model we cannot run
        self.inputs = probe.get_input_details()
        self.outputs = probe.get_output_details()
        self.batch_note = ""  # why max_batch > 1 was not honoured (a warning on stderr, once; in /health)
        if self.dynamic and max_batch > 1:
            self.batch_mode, fixed = "none", 1
            names = ", ".join(f"'{n}' {list(sig)}" for n, sig in self.dynamic.items())
            self.batch_note = (f"max batch 1, not {max_batch}: input {names} takes a size per request (no "
                               "--input-shape): each request runs alone at its own shape")
            log.warning(f"serve: {self.batch_note}")
        elif max_batch > 1:
            self.batch_mode, fixed, why = _probe_batching(self.content, self.inputs, self.outputs)
            if self.batch_mode == "none":
                self.batch_note = f"max batch 1, not {max_batch}: {why}"
                log.warning(f"serve: {self.batch_note}")
            elif self.batch_mode == "fixed" and fixed < max_batch:
                self.batch_note = f"max batch {fixed}, not {max_batch}: the model's batch axis is fixed at {fixed}"
                log.warning(f"serve: {self.batch_note}")
        else:
            self.batch_mode, fixed = "none", 1
        if self.batch_mode == "resize" and self.runtime.name == C:  # batches resize the inputs: Python only
            if backend == C:
                self.batch_mode = "none"
                self.batch_note = (f"max batch 1, not {max_batch}: batching resizes the batch axis, which the C "
                                   "runtime cannot (--backend c); --backend python batches")
                log.warning(f"serve: {self.batch_note}")
            else:
                self.runtime = RuntimeChoice("python", f"--max-batch {max_batch} resizes the batch axis, which the C "
                                             "runtime cannot", backend)
        if self.batch_mode == "fixed":
            self.max_batch = min(int(max_batch), fixed)
            self.fixed_batch = fixed
        elif self.batch_mode == "resize":
            self.max_batch = int(max_batch)
            self.fixed_batch = 0
        else:
            self.max_batch, self.fixed_batch = 1, 0
        # what one request carries: the inputs with a batch axis of one
        self.request_inputs = [dict(d, shape=np.array([1] + [int(v) for v in d["shape"][1:]], np.int32))
                               if self.fixed_batch else d for d in self.inputs]
        self.detection = {k: v for k, v in (detection or {}).items() if v is not None}
        self.pipeline = self._make_pipeline(labels, task or ("detect" if self.detection else None))

        self._cond = threading.Condition()
        self._queue: collections.deque[_Item] = collections.deque()
        self._gate = threading.Event()
        self._gate.set()
        self._stopping = False
        self._incoming = 0  # requests being read/parsed (they may join a batch soon); under _cond
        self._workers: list[threading.Thread] = []
        self._httpd = None
        self._http_thread = None
        self._stopped = threading.Event()
        self._mlock = threading.Lock()
        self._counts = collections.Counter()
        self._status = collections.Counter()
        self._batch_sizes = collections.Counter()
        self._latencies = collections.deque(maxlen=LATENCY_WINDOW)
        self._started = None

    def _make_pipeline(self, labels, task):
        from edge_sdk.tasks import pipeline as pl

        if self.dynamic:  # no shape to build an image pipeline for: JSON / raw tensors only
            return self._rows_pipeline(labels, task)
        runner = pl.ModelRunner(self.content)
        try:
            kind = pl.model_task(runner, task)
        except ModelError:
            if task:
                raise
            return None
        if self.detection and kind != "detect":
            raise ModelError(f"{self.name}: detection options ({', '.join(sorted(self.detection))}) given for a "
                             f"{kind} model")
        if kind == "audio":
            return None
        try:
            if kind == "detect":
                return pl.Detector(runner.interpreter, labels=labels, **self.detection)
            return pl.ImageClassifier(runner.interpreter, labels=labels)
        except ModelError as exc:  # not an image model: JSON/raw tensors only
            if task:
                raise
            log.debug(f"serve: no image pipeline for {self.name}: {exc}")
            return None

    def _rows_pipeline(self, labels, task):
        """A dynamic server's classifier: a top-k per row when every input is [-1, C] (each request's rows, as a
        LiteRT batch) and the class output fixed beyond its leading axis; None with no task said; else one line
        naming the model, the input and why not (a classify task only the manifest says: None, raw outputs)."""
        from edge_sdk.model import read_model
        from edge_sdk.model.manifest import read_manifest
        from edge_sdk.tasks import pipeline as pl

        model = read_model(self.content)
        if not (task or self.detection):
            manifest = read_manifest(model) or {}
            if manifest.get("task") not in ("classify", "classification") and manifest.get("labels") is None:
                return None
            try:
                return self._rows_pipeline(labels, "classify")
            except ModelError as exc:
                log.debug(f"serve: no classifier for {self.name}: {exc}")
                return None
        sg = model.subgraphs[0]
        out_sig = [int(v) for v in sg.tensors[sg.outputs[0]].shape_signature or sg.tensors[sg.outputs[0]].shape]
        rows_only = all(len(sig) == 2 and sig[0] < 0 <= sig[1] for sig in self.dynamic.values())
        if task != "classify" or self.detection or not rows_only or min(out_sig[1:] or [0]) < 0:
            names = ", ".join(f"'{n}' {list(sig)}" for n, sig in self.dynamic.items())
            why = ("its class output is sized per request too" if task == "classify" and rows_only else
                   "a detector's boxes need one image size" if task != "classify" or self.detection else
                   "an image or sequence size differs per request")
            raise ModelError(f"{self.name}: a {task or 'detect'} pipeline needs fixed input shapes (input {names}: "
                             f"{why}): give them with --input-shape")
        # allocated at the stored [1, C]: the labels and score mode; each request's run is its own interpreter's
        return pl.TensorClassifier(pl.ModelRunner(self.content, name=self.name), labels, 5)

    # ------------------------------------------------------------------ life cycle
    @property
    def port(self) -> int:
        return self._httpd.server_address[1] if self._httpd else self.requested_port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Server:
        if self._httpd is not None:
            return self
        handler = _make_handler(self)
        try:
            self._httpd = _HTTPServer((self.host, self.requested_port), handler, self.max_connections,
                                      self._rejected_connection)
        except OverflowError:
            raise UsageError(f"--port must be in 0..65535, not {self.requested_port}") from None
        except OSError as exc:
            raise EdgeError(f"cannot listen on {self.host}:{self.requested_port}: "
                            f"{exc.strerror or exc} (choose another --port, or --port 0 for any free one)") from None
        for i in range(self.instances):
            t = threading.Thread(target=self._worker, name=f"edge-serve-worker-{i}", daemon=True)
            t.start()
            self._workers.append(t)
        self._http_thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                             name="edge-serve-http", daemon=True)
        self._http_thread.start()
        self._started = time.monotonic()
        log.info(f"serving {self.name} on {self.url} (batch {self.max_batch}, {self.instances} instance(s))")
        return self

    def stop(self, timeout: float = T.SERVE_STOP_TIMEOUT) -> None:
        """Stop accepting, finish what is queued (up to ``timeout`` seconds), join the workers."""
        if self._httpd is None or self._stopped.is_set():
            return
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._gate.set()
        self._httpd.shutdown()
        deadline = time.monotonic() + timeout
        for t in self._workers:
            t.join(max(0.0, deadline - time.monotonic()))
        with self._cond:  # anything left after the timeout is answered, not abandoned
            while self._queue:
                item = self._queue.popleft()
                item.error = (503, "server stopped")
                item.event.set()
        self._httpd.server_close()
        self._stopped.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until stopped (True) or the timeout passes (False)."""
        return self._stopped.wait(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def pause(self) -> None:
        """Workers stop taking requests (they queue up); for maintenance and tests."""
        self._gate.clear()

    def resume(self) -> None:
        self._gate.set()
        with self._cond:
            self._cond.notify_all()

    # ------------------------------------------------------------------ queue and workers
    def incoming(self, n: int) -> None:
        with self._cond:
            self._incoming += n
            if n < 0:
                self._cond.notify_all()

    def submit(self, inputs: list[np.ndarray]) -> _Item:
        item = _Item(inputs)
        with self._cond:
            if self._stopping:
                raise _Reject(503, "server is shutting down")
            if len(self._queue) >= self.max_queue:
                self._count("rejected_overload")
                raise _Reject(503, f"overloaded: {len(self._queue)} requests queued (max_queue {self.max_queue})",
                              {"Retry-After": "1"})
            self._queue.append(item)
            self._cond.notify()
        return item

    def _take(self, block_until: float | None) -> _Item | None:
        """The oldest live request; waits (until ``block_until``, or forever when None) while the queue is empty."""
        with self._cond:
            while True:
                while self._queue and self._queue[0].cancelled:
                    self._queue.popleft()
                if self._queue and (self._gate.is_set() or self._stopping):
                    return self._queue.popleft()
                if self._stopping:
                    return None
                if block_until is None:
                    self._cond.wait(0.5 if self._gate.is_set() else 0.05)
                else:
                    if self._incoming <= 0 and self._gate.is_set():
                        return None  # nothing on its way in: run what we have now
                    left = block_until - time.monotonic()
                    if left <= 0:
                        return None
                    self._cond.wait(left)

    def _worker(self) -> None:
        interpreters: dict[int, object] = {}
        while True:
            first = self._take(None)
            if first is None:
                return
            batch = [first]
            deadline = first.t0 + self.max_wait_s
            while len(batch) < self.max_batch:
                nxt = self._take(deadline)
                if nxt is None:
                    break
                batch.append(nxt)
            self._run_batch(batch, interpreters)

    def _batch_size(self, k: int) -> int:
        if self.fixed_batch:
            return self.fixed_batch
        if self.batch_mode != "resize":
            return 1
        return min(self.max_batch, 1 << max(0, math.ceil(math.log2(k))))

    def _run_batch(self, batch: list[_Item], interpreters: dict) -> None:
        k = len(batch)
        size = self._batch_size(k)
        try:
            if self.dynamic:
                it = self._shaped_interpreter([x.shape for x in batch[0].inputs], interpreters)
            else:
                it = interpreters.get(size)
            if it is None:
                it = _new_interpreter(self.content, size if self.batch_mode == "resize" else None, self.num_threads,
                                      self.runtime.name)
                interpreters[size] = it
            xs = []
            for j in range(len(self.inputs)):
                rows = [item.inputs[j] for item in batch]
                if size > k:
                    rows += [np.zeros_like(rows[0])] * (size - k)
                xs.append(np.concatenate(rows, axis=0) if size > 1 else rows[0])
            outs = _run(it, xs)
            for i, item in enumerate(batch):
                item.result = [o[i:i + 1] if size > 1 else o for o in outs]
        except _Reject as exc:  # a dynamic server's request whose shape the model cannot run at
            for item in batch:
                item.error = (exc.status, exc.reason)
        except Exception as exc:  # noqa: BLE001 - a failing run answers 500 and the worker lives on
            log.warning(f"serve: a batch of {k} failed: {exc}")
            for item in batch:
                item.error = (500, f"inference failed: {exc}")
        with self._mlock:
            self._counts["batches"] += 1
            self._counts["batched_requests"] += k
            self._batch_sizes[k] += 1
        for item in batch:
            item.event.set()

    def _shaped_interpreter(self, shapes: list[tuple[int, ...]], interpreters: dict):
        """A dynamic server's interpreter for one request's input shapes: resized to them and allocated, kept per
        shape (the last SHAPED_INTERPRETERS shapes a worker ran). A shape the model cannot run at is the
        request's fault: 400 naming it."""
        from edge_sdk.runtime.interpreter import Interpreter

        key = ("shapes", tuple(tuple(int(d) for d in sh) for sh in shapes))
        it = interpreters.pop(key, None)
        if it is None:
            it = Interpreter(model_content=self.content, num_threads=self.num_threads, backend=self.runtime.name)
            try:
                for d, shape in zip(self.inputs, key[1]):
                    it.resize_tensor_input(d["index"], list(shape))
                it.allocate_tensors()
            except ModelError as exc:  # UnsupportedOpError too: a kernel that cannot take this shape
                raise _Reject(400, f"input shapes {[list(sh) for sh in key[1]]}: the model cannot run at them "
                                   f"({' '.join(str(exc).split())[:300]})") from None
            while sum(1 for k in interpreters if isinstance(k, tuple)) >= SHAPED_INTERPRETERS:
                del interpreters[next(k for k in interpreters if isinstance(k, tuple))]  # the oldest shape
        interpreters[key] = it  # (re)inserted last: the most recently used
        return it

    # ------------------------------------------------------------------ metrics
    def _count(self, key: str, n: int = 1) -> None:
        with self._mlock:
            self._counts[key] += n

    def _rejected_connection(self) -> None:
        """A connection refused with 503 "too many connections" (max_connections): counted like any answer."""
        with self._mlock:
            self._counts["rejected_connections"] += 1
            self._counts["responses"] += 1
            self._status["503"] += 1

    def _record(self, status: int, latency_s: float | None) -> None:
        with self._mlock:
            self._counts["responses"] += 1
            self._status[str(status)] += 1
            if latency_s is not None:
                self._latencies.append(latency_s * 1000.0)

    def metrics(self) -> dict:
        with self._mlock:
            lat = np.asarray(self._latencies, np.float64)
            counts = dict(self._counts)
            status = dict(self._status)
            sizes = {str(k): v for k, v in sorted(self._batch_sizes.items())}
        with self._cond:
            depth = len(self._queue)
        pct = {f"p{p}": (float(np.percentile(lat, p)) if lat.size else None) for p in (50, 90, 99)}
        batches = counts.get("batches", 0)
        return {
            "requests": counts.get("requests", 0),
            "responses": counts.get("responses", 0),
            "responses_by_status": status,
            "rejected_overload": counts.get("rejected_overload", 0),
            "rejected_connections": counts.get("rejected_connections", 0),
            "queue_depth": depth,
            "max_queue": self.max_queue,
            "batches": batches,
            "batch_sizes": sizes,
            "mean_batch_size": (counts.get("batched_requests", 0) / batches) if batches else None,
            "latency_ms": {**pct, "count": int(lat.size),
                           "mean": float(lat.mean()) if lat.size else None},
            "uptime_s": time.monotonic() - self._started if self._started else 0.0,
        }

    def health(self) -> dict:
        return {
            "status": "stopping" if self._stopping else "ok",
            "model": self.name,
            "inputs": [{"name": d["name"], "shape": [int(v) for v in d["shape"]], "dtype": np.dtype(d["dtype"]).name}
                       for d in self.request_inputs],
            "outputs": [{"name": d["name"], "shape": [int(v) for v in d["shape"]], "dtype": np.dtype(d["dtype"]).name}
                        for d in self.outputs],
            "batching": self.batch_mode != "none",
            "batching_note": self.batch_note or None,
            "nan_weights": self.nan_weights,
            "max_batch": self.max_batch,
            "instances": self.instances,
            "pipeline": type(self.pipeline).__name__ if self.pipeline is not None else None,
            **self.runtime.to_dict(),
        }

    # ------------------------------------------------------------------ requests
    def _sample(self, value, d: dict, raw: bool, what: str) -> np.ndarray:
        from edge_sdk.tasks.pipeline import to_input

        try:
            a = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise _Reject(400, f"{what}: not a rectangular nested list of numbers") from None
        want = self._wanted_shape(d, tuple(a.shape), what)
        d = dict(d, shape=np.array(want, np.int32))  # a dynamic input's: this request's own
        # the sample alone (without its batch axis) only where that axis is 1: [8] is not a [4, 8] input
        if tuple(a.shape) != want and not (want and want[0] == 1 and tuple(a.shape) == want[1:]):
            given = " (the shape --input-shape gave this server; another size needs another server)" \
                if self.input_shapes else ""
            raise _Reject(400, f"{what}: shape {list(a.shape)} does not match input '{d['name']}' {list(want)}{given}")
        _refuse_nonfinite(a, d, what)
        a = a.reshape(want)
        dt = np.dtype(d["dtype"])
        from edge_sdk.tasks.pipeline import is_quantized

        # raw, and any bool or unquantized integer input (an IF's condition, a step count): the tensor's own
        # values (JSON true / false are 1 / 0), never quantized or cast from a float32 copy
        if raw or dt.kind == "b" or (dt.kind in "iu" and not is_quantized(d)):
            if dt.kind == "b" and a.size and not np.all((a == 0) | (a == 1)):
                raise _Reject(400, f"{what}: values for the bool input '{d['name']}' must be true / false (or 1 / 0)")
            if dt.kind in "iu" and a.size:
                info = np.iinfo(dt)
                if np.any(a != np.round(a)) or a.min() < info.min or a.max() > info.max:
                    kind = "raw values" if raw else f"values for the {dt.name} input '{d['name']}'"
                    raise _Reject(400, f"{what}: {kind} must be integers in {dt.name} range")
            return a.astype(dt)
        try:
            return to_input(a.astype(np.float32), d, what)
        except ModelError as exc:
            raise _Reject(400, str(exc)) from None

    def _wanted_shape(self, d: dict, given: tuple[int, ...], what: str) -> tuple[int, ...]:
        """The shape a request's array for input ``d`` runs at: the input's, or on a dynamic server the array's
        own where the input's shape signature has -1 (with a leading batch axis of 1 added when it is missing);
        an array that fits no such shape is a 400 naming the signature."""
        if d["name"] not in self.dynamic and self.signature_names.get(d["name"]) not in self.dynamic:
            return tuple(int(v) for v in d["shape"])
        sig = tuple(int(v) for v in d["shape_signature"])
        shape = with_batch_axis(given, sig)
        if len(shape) != len(sig) or 0 in shape or any(g not in (-1, n) for g, n in zip(sig, shape)):
            raise _Reject(400, f"{what}: shape {list(given)} does not fit input '{d['name']}' (shape signature "
                               f"{list(sig)}: any size where it says -1)")
        return shape

    def parse_json(self, body: bytes) -> tuple[list[np.ndarray], dict]:
        try:
            doc = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _Reject(400, f"body is not JSON ({exc})") from None
        except RecursionError:
            raise _Reject(400, "body is nested too deeply") from None
        if _depth_above(doc, MAX_JSON_DEPTH):
            raise _Reject(400, f"body is nested more than {MAX_JSON_DEPTH} levels deep")
        if not isinstance(doc, dict):
            raise _Reject(400, "body must be a JSON object with 'inputs' or 'image'")
        top_k = doc.get("top_k", 5)
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 0 <= top_k <= 1000:
            raise _Reject(400, "top_k must be an integer in 0..1000")
        opts = {"top_k": top_k, "meta": None}
        if "image" in doc:
            if self.pipeline is None:
                raise _Reject(400, f"{self.name} has no image pipeline (no image input or manifest); send 'inputs'")
            if not isinstance(doc["image"], str):
                raise _Reject(400, "image must be a base64 string")
            try:
                data = base64.b64decode(doc["image"], validate=True)
            except (binascii.Error, ValueError):
                raise _Reject(400, "image is not valid base64") from None
            try:
                x, meta = self.pipeline.prepare(data)
            except (ModelError, OSError) as exc:
                raise _Reject(400, str(exc)) from None
            opts["meta"] = meta
            return [x], opts
        if "inputs" not in doc:
            raise _Reject(400, "body must have 'inputs' (nested lists) or 'image' (base64)")
        raw = bool(doc.get("raw", False))
        inputs = doc["inputs"]
        if isinstance(inputs, dict):
            names = [d["name"] for d in self.inputs]
            # each input by its tensor name or its SignatureDef name ('args_0')
            keys = {d["name"]: d["name"] if d["name"] in inputs else self.signature_names.get(d["name"], d["name"])
                    for d in self.inputs}
            if sorted(inputs) != sorted(keys.values()):
                also = [self.signature_names[n] for n in names if n in self.signature_names]
                said = f" (or by signature name {also})" if also else ""
                raise _Reject(400, f"inputs must name exactly the model inputs {names}{said}, got {sorted(inputs)}")
            return [self._sample(inputs[keys[d["name"]]], d, raw, f"input '{d['name']}'")
                    for d in self.request_inputs], opts
        if len(self.inputs) != 1:
            raise _Reject(400, f"the model has {len(self.inputs)} inputs: give 'inputs' as an object by input name")
        return [self._sample(inputs, self.request_inputs[0], raw, "inputs")], opts

    def parse_raw(self, body: bytes, headers) -> list[np.ndarray]:
        if len(self.inputs) != 1:
            raise _Reject(400, f"raw tensors need a one-input model; this one has {len(self.inputs)} (use JSON)")
        d = self.request_inputs[0]
        shape_h, dtype_h = headers.get("X-Shape"), headers.get("X-Dtype")
        if not shape_h or not dtype_h:
            raise _Reject(400, "raw tensor requests need X-Shape (e.g. 1,96,96,1) and X-Dtype (e.g. int8) headers")
        try:
            shape = tuple(int(v) for v in shape_h.replace("x", ",").split(",") if v.strip())
            dt = np.dtype(dtype_h.strip().lower())
        except (ValueError, TypeError):
            raise _Reject(400, f"bad X-Shape {shape_h!r} or X-Dtype {dtype_h!r}") from None
        want = self._wanted_shape(d, shape, "X-Shape") if self.dynamic else tuple(int(v) for v in d["shape"])
        if shape != want and not (want and want[0] == 1 and shape == want[1:]):  # as _sample: a batch axis of 1
            raise _Reject(400, f"X-Shape {list(shape)} does not match input '{d['name']}' {list(want)}")
        in_dt = np.dtype(d["dtype"])
        if dt != in_dt and dt != np.float32:
            raise _Reject(400, f"X-Dtype {dt.name}: the input takes {in_dt.name} (or float32 to be quantized)")
        if len(body) != math.prod(shape) * dt.itemsize:
            raise _Reject(400, f"body has {len(body)} bytes; {list(shape)} {dt.name} needs "
                               f"{math.prod(shape) * dt.itemsize}")
        a = np.frombuffer(body, dt.newbyteorder("<")).astype(dt).reshape(want)
        _refuse_nonfinite(a, d, "raw tensor")  # a float32 input's own bytes too: NaN in, no confident answer out
        if dt == in_dt:
            return [a]
        from edge_sdk.tasks.pipeline import to_input

        return [to_input(a, dict(d, shape=np.array(want, np.int32)), "raw tensor")]

    def parse_wav(self, body: bytes) -> list[np.ndarray]:
        """A WAV request's input: the samples of a one-input model of raw samples (module docstring); a 400 naming
        what does not fit (another kind of model, no rate known, another rate, another length)."""
        import io

        from edge_sdk.tasks.pipeline import is_quantized, read_wav, to_input

        d = self.request_inputs[0]
        sig = tuple(int(v) for v in d.get("shape_signature", d["shape"]))
        by_channel = self.samples_axis == 0 and len(sig) == 2 and sig[1] == 1
        if len(self.inputs) != 1 or not (len(sig) == 1 or by_channel
                                         or (len(sig) == 2 and (sig[0] == 1 or sig == (-1, -1)))):
            raise _Reject(400, f"a WAV body, but {self.name} takes no raw audio samples (input '{d['name']}' "
                               f"{list(sig)}; a WAV feeds [N], [1, N], an AudioSpectrogram's [N, 1] or a -1 length): "
                               "send 'inputs'")
        try:
            samples, rate = read_wav(io.BytesIO(body))
        except ModelError as exc:
            raise _Reject(400, f"the WAV body: {str(exc).split(': ', 1)[-1]}") from None
        except (RuntimeError, ValueError, EOFError) as exc:  # the wave module's own, on a broken header
            why = f"{type(exc).__name__} {exc}".strip()
            raise _Reject(400, f"the WAV body: cannot read it (a broken header: {why}); only 16-bit PCM WAV is "
                               "supported") from None
        if not self.sample_rate:
            raise _Reject(400, f"{self.name} does not say its sample rate (no 'audio' manifest entry): start the "
                               "server with --sample-rate HZ to take WAV bodies")
        if rate != self.sample_rate:
            raise _Reject(400, f"the WAV body is {rate} Hz audio but {self.name} takes {self.sample_rate} Hz; resample "
                               "it first (edge-sdk does not resample)")
        given = (samples.size, 1) if by_channel else (samples.size,)
        want = self._wanted_shape(d, given, "the WAV body") if self.dynamic else tuple(int(v) for v in d["shape"])
        axis = 0 if by_channel else -1
        if want[axis] != samples.size:
            raise _Reject(400, f"the WAV body has {samples.size} samples; input '{d['name']}' {list(want)} takes "
                               f"{want[axis]}")
        x = samples if np.dtype(d["dtype"]) == np.int16 and not is_quantized(d) else \
            samples / np.float32(32768.0)
        try:
            return [to_input(x.reshape(want), dict(d, shape=np.array(want, np.int32)), "the WAV body")]
        except ModelError as exc:
            raise _Reject(400, str(exc)) from None

    def answer(self, outs: list[np.ndarray], opts: dict) -> dict:
        from edge_sdk.tasks import pipeline as pl

        doc = {"outputs": [pl.dequantize(o, d).tolist() for o, d in zip(outs, self.outputs)]}
        p = self.pipeline
        if isinstance(p, pl.ImageClassifier):
            doc["predictions"] = [{"label": x.label, "score": x.score} for x in p.interpret(outs, opts["top_k"])]
        elif isinstance(p, pl.TensorClassifier):  # a [T, C] request: one top-k list per row; [C] / [1, C]: one
            rows = [[{"label": x.label, "score": x.score} for x in r] for r in p.interpret_rows(outs, opts["top_k"])]
            doc["predictions"] = rows[0] if len(rows) == 1 else rows
        elif isinstance(p, pl.Detector):
            doc["detections"] = [x.to_dict() for x in p.interpret(outs, opts.get("meta"))]
        return doc


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address, handler, max_connections: int, on_reject=None):
        self._slots = threading.BoundedSemaphore(max_connections)
        self._on_reject = on_reject
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            if self._on_reject is not None:
                self._on_reject()
            body = b'{"error": "too many connections"}'
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                b"Connection: close\r\nRetry-After: 1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request, client_address):  # a broken client is not our crash: note it quietly
        log.debug(f"serve: connection from {client_address} failed")


def _make_handler(server: Server):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "edge-serve/1"
        timeout = server.socket_timeout_s

        def setup(self):
            super().setup()
            try:  # headers and body are separate writes: without this, Nagle + delayed ACK add ~40 ms
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

        def log_message(self, format, *args):
            log.debug("serve: " + format % args)

        def _send(self, status: int, doc=None, body: bytes | None = None, ctype="application/json", headers=None):
            if body is None:
                body = json.dumps(doc).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                if self.close_connection:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                self.close_connection = True

        def _path(self) -> str:
            return self.path.split("?", 1)[0].rstrip("/") or "/"

        def do_GET(self):
            path = self._path()
            if path == "/health":
                h = server.health()
                self._send(200 if h["status"] == "ok" else 503, h)
            elif path == "/metrics":
                self._send(200, server.metrics())
            elif path in ("/predict", "/v1/predict"):
                self._send(405, {"error": "use POST for /predict"}, headers={"Allow": "POST"})
            else:
                self._send(404, {"error": f"no such endpoint {path}; try POST /predict, GET /health, GET /metrics"})

        def do_POST(self):
            t0 = time.monotonic()
            path = self._path()
            if path not in ("/predict", "/v1/predict"):
                self.close_connection = True
                self._send(404, {"error": f"no such endpoint {path}; POST /predict"})
                return
            server._count("requests")
            status = 500
            server.incoming(1)
            self._incoming = True
            try:
                status, doc, body, ctype, headers = self._predict()
            except _Reject as r:
                status, doc, body, ctype, headers = r.status, {"error": r.reason}, None, "application/json", r.headers
            except Exception as exc:  # noqa: BLE001 - never let one request take the server down
                status, doc, body, ctype, headers = 500, {"error": f"internal error: {exc}"}, None, "application/json", {}
            finally:
                if self._incoming:
                    server.incoming(-1)
            server._record(status, time.monotonic() - t0 if status == 200 else None)
            self._send(status, doc, body, ctype, headers)

        def _predict(self):
            length = self.headers.get("Content-Length")
            if self.headers.get("Transfer-Encoding"):
                self.close_connection = True
                raise _Reject(411, "send a Content-Length (chunked bodies are not accepted)")
            if length is None:
                self.close_connection = True
                raise _Reject(411, "Content-Length required")
            try:
                n = int(length)
            except ValueError:
                self.close_connection = True
                raise _Reject(400, f"bad Content-Length {length!r}") from None
            if n < 0:
                self.close_connection = True
                raise _Reject(400, f"bad Content-Length {length!r}")
            if n > server.max_request_bytes:
                self.close_connection = True
                raise _Reject(413, f"body of {n} bytes is above the {server.max_request_bytes} byte limit")
            try:
                body = self.rfile.read(n)
            except (TimeoutError, OSError):
                self.close_connection = True
                raise _Reject(408, "timed out reading the body") from None
            if len(body) != n:
                self.close_connection = True
                raise _Reject(400, f"body ended after {len(body)} of {n} bytes")
            ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip().lower()
            if ctype == "application/json":
                inputs, opts = server.parse_json(body)
                raw_out = False
            elif ctype in WAV_TYPES:
                inputs, opts, raw_out = server.parse_wav(body), {"top_k": 5, "meta": None}, False
            elif ctype == "application/octet-stream":
                inputs, opts = server.parse_raw(body, self.headers), {"top_k": 5, "meta": None}
                raw_out = "application/octet-stream" in (self.headers.get("Accept") or "")
            else:
                raise _Reject(415, f"Content-Type {ctype} not accepted: application/json, application/octet-stream "
                                   "or audio/wav")
            try:
                item = server.submit(inputs)
            finally:
                self._incoming = False
                server.incoming(-1)
            if not item.event.wait(server.request_timeout_s):
                item.cancelled = True
                raise _Reject(504, f"no result within {server.request_timeout_s} s")
            if item.error is not None:
                raise _Reject(*item.error)
            outs = item.result
            if raw_out:
                o = np.ascontiguousarray(outs[0])
                return 200, None, o.astype(o.dtype.newbyteorder("<")).tobytes(), "application/octet-stream", {
                    "X-Shape": ",".join(str(v) for v in o.shape), "X-Dtype": o.dtype.name}
            return 200, server.answer(outs, opts), None, "application/json", {}

    return Handler


def _refuse_nonfinite(a: np.ndarray, d: dict, what: str) -> None:
    """A request's values with NaN or inf are refused (400), naming the input and how many."""
    from edge_sdk.tasks.pipeline import count_nonfinite

    bad = count_nonfinite(a)
    if bad:
        name = f"input '{d['name']}'"
        where = what if name in what else f"{what} ({name})"
        raise _Reject(400, f"{where}: {bad} non-finite value(s) (NaN or inf); values must be finite numbers")


def serve(model, port: int = 8000, host: str = "127.0.0.1", ready=None, **options) -> None:
    """Run a server until KeyboardInterrupt (or ``Server.stop`` from another thread); ``ready(server)`` is
    called once it listens (the CLI prints the address there)."""
    server = Server(model, host=host, port=port, **options)
    server.start()
    try:
        if ready is not None:
            ready(server)
        while not server.wait(0.5):
            pass
    finally:
        server.stop()
