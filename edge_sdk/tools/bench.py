"""`edge bench`: how fast a model runs, here or on a device over SSH.

    report = run_benchmark("model.tflite", runs=50, warmup=5)              # in this process
    report = bench("model.tflite", host="pi@raspberrypi.local")           # on the device, over SSH
    print(format_bench(report))

Measured, in order: init (read the model, build the interpreter, allocate), the first inference, ``warmup``
inferences, then ``runs`` timed inferences (``time.perf_counter_ns`` around each invoke) giving mean, std, min,
max and the 50th/90th/99th percentiles (linear interpolation). Memory: the planned arena and the process's
peak RSS after those runs (``resource.getrusage``; on the device: of the benchmark process, interpreter
included). Then a per-op profile: ``profile_runs`` more inferences with every op timed, kept apart from the
latency runs so the timing hooks do not touch them: backend python through ``Interpreter.invoke_profiled``
(subgraph 0's steps), backend c through the C runtime's own op timer (``CInterpreter.enable_trace``/``trace``,
every subgraph). LiteRT's Python API has no per-op timings: for backend litert ``ops`` is empty and
``ops_note`` says why. The per-op table, Chrome/Perfetto trace, CSV and plot are edge_sdk.tools.op_report's, the
same as `edge profile`'s (times in us): ``write_op_files`` (or ``bench(..., trace=, csv=, plot=)``) writes them
on the host, also for a device run, whose JSON carries every run's per-op times (``op_profile``).
Inputs are seeded random values of each input's dtype and shape (int32 / int64 ones in [0, 99], as LiteRT's
benchmark_model draws them: token ids and indices), or (``inputs``, `--inputs`) the arrays of a .npy /
.npz as `edge run` takes them, whose shapes then fix the dynamic inputs' sizes (as ``--input-shape`` would).

On a device: ``edge deploy`` put the runtime at ``~/.edge-sdk/venv``; the model is the deployed one when its
sha256 matches the local file, else it is copied to ``~/.edge-sdk/bench/`` first. The device runs
``~/.edge-sdk/venv/bin/python -m edge_sdk.tools.bench MODEL --json ...`` (this module's ``main``), which prints the
report as JSON on stdout.

JSON keys: ``latency_us`` {mean, std, p50, p90, p99, min, max}, ``init_us``, ``first_inference_us``,
``warmup_us`` (each warm-up run), ``runs``, ``warmup``, ``threads``, ``ops`` (the per-op table rows of
edge_sdk.tools.op_report: index, subgraph, op, output_shape, macs, time, time_min, time_max, unit "us", pct,
cum_pct, macs_per_unit), ``profile_runs``, ``op_profile`` (report_ops.OpProfile.to_dict(): every profiled
run's time per op, or None), ``ops_note`` (why there are no per-op times, or None), ``arena_bytes``,
``peak_rss_bytes``, ``eval_sized`` (the tensors sized at eval, outside the arena: interpreter.eval_sized_rows at
the runs' data; [] on the C runtime, None on LiteRT) and ``eval_sized_bytes`` (their sum), ``inputs`` (the file, or "random (seed N)"), ``input_shapes`` ([{name, shape}] as run),
``backend`` (the one that ran: "auto" resolves to c or python), ``runtime`` and
``runtime_reason`` (which, and why: edge_sdk.tools.run_backend), ``host``, ``model`` {name, sha256, size}, ``python``, ``machine``,
``edge_sdk_version``.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import time
from pathlib import Path

from edge_sdk.tools import op_report as report_ops
from edge_sdk.errors import DataError, DeviceError, EdgeError, ModelError, UsageError
from edge_sdk import timeouts as T
from edge_sdk.tools.op_report import OpProfile, OpTiming, format_op_table

BACKENDS = ("auto", "python", "c", "litert")
LITERT_NOTE = ("no per-op times with backend litert: LiteRT's Python API (ai_edge_litert.interpreter) does not "
               "expose per-op timings; use --backend python or c for a per-op profile (or LiteRT's benchmark_model "
               "tool with --enable_op_profiling=true)")


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    k = (len(sorted_values) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def latency_stats(samples_us: list[float]) -> dict:
    """mean, std (population), p50, p90, p99, min, max of a list of microsecond samples."""
    s = sorted(samples_us)
    n = len(s)
    mean = sum(s) / n
    std = (sum((x - mean) ** 2 for x in s) / n) ** 0.5
    return {"mean": mean, "std": std, "p50": _percentile(s, 50), "p90": _percentile(s, 90),
            "p99": _percentile(s, 99), "min": s[0], "max": s[-1]}


def _peak_rss_bytes() -> int | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)  # Linux reports KiB, macOS bytes


def _random_inputs(details: list[dict], seed: int, required=None) -> list:
    """Seeded random inputs (``random_input``); an input with a ``required`` value (an output shape an op
    reads: Interpreter.required_input_values) takes it."""
    import numpy as np

    from edge_sdk.model.input_shapes import random_input

    rng = np.random.default_rng(seed)
    out = []
    for k, d in enumerate(details):
        dtype = np.dtype(d["dtype"])
        shape = tuple(int(x) for x in d["shape"])
        if required is not None and required[k] is not None:
            out.append(np.asarray(required[k], dtype).reshape(shape))
        else:
            out.append(random_input(rng, dtype, shape))
    return out


def read_input_file(path, model, name: str, sample_rate: int | None = None) -> list[tuple[str | None, "object"]]:
    """(key, array) per subgraph-0 input of ``model`` (parsed, not yet shaped) from ``path``, the files `edge run`
    takes: a .npy for a one-input model (key None), an .npz of every input (pipeline.npz_arrays' keys), a WAV for
    a model of raw samples (wav_arrays). Arrays are as the file holds them: they shape the model
    (input_shapes_from) before they are fitted (fed_inputs). A file that does not fit is a UsageError (exit 2)
    naming the file and the input."""
    import numpy as np

    from edge_sdk.tasks.pipeline import AUDIO_SUFFIXES

    if str(path).lower().endswith(AUDIO_SUFFIXES):
        return wav_arrays(path, model, name, sample_rate)

    from edge_sdk.model.types import numpy_dtype
    from edge_sdk.tasks.pipeline import NPZ_KEYS, npz_arrays

    sg = model.subgraphs[0]
    # the messages show each input's signature: a dynamic input takes the file's size there
    details = [{"name": sg.tensors[t].name, "index": t, "dtype": numpy_dtype(sg.tensors[t].type) or np.float32,
                "shape": list(sg.tensors[t].shape_signature if sg.tensors[t].shape_signature is not None
                              else sg.tensors[t].shape)} for t in sg.inputs]
    try:
        if str(path).lower().endswith(".npz"):
            return npz_arrays(str(path), model, details, name)
        try:
            x = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise UsageError(f"{path}: cannot read the .npy ({' '.join(str(exc).split())[:200]})") from None
        if not isinstance(x, np.ndarray):
            raise UsageError(f"{path}: an .npz archive named .npy: rename it .npz")
        if len(details) != 1:
            said = ", ".join(f"'{d['name']}' [{','.join(str(int(v)) for v in d['shape'])}] "
                             f"{np.dtype(d['dtype']).name}" for d in details)
            raise UsageError(f"{path}: {name} takes {len(details)} inputs ({said}): give them in one .npz "
                             f"(keys: {NPZ_KEYS})")
        return [(None, x)]
    except ModelError as exc:  # a missing / extra key: misuse of the file, exit 2 (the line is the reader's)
        raise UsageError(str(exc)) from None


def wav_arrays(path, model, name: str, sample_rate: int | None = None) -> list[tuple[None, "object"]]:
    """[(None, samples)] of a WAV for a model whose one input is raw samples ([-1], [-1, -1], [1, -1], [-1, 1] read
    by AudioSpectrogram, or such a shape fixed: [N], [1, N], [N, 1]): of any length, the file's length at the
    model's rate (pipeline.raw_audio_shapes, `edge run`'s rule: the rate from ``sample_rate`` or the manifest, else
    a UsageError asking for it; a file at another rate refused); of a fixed length N (a model copy already
    shaped), the file's first N samples, zeros after its end. float32 in [-1, 1) (int16 / 32768; quantized when
    fed), int16 for an int16 input. Another model: a UsageError naming the file and the input."""
    import numpy as np

    from edge_sdk.model.types import numpy_dtype
    from edge_sdk.tasks.pipeline import raw_audio_shapes, read_wav, samples_by_channel

    sg = model.subgraphs[0]
    tensor = sg.tensors[sg.inputs[0]] if len(sg.inputs) == 1 else None
    sig = tuple(int(d) for d in (tensor.shape_signature if tensor is not None and tensor.shape_signature is not None
                                 else tensor.shape if tensor is not None else ()))
    # the samples' axis: the last, or axis 0 of AudioSpectrogram's [samples, 1 channel] ([-1, 1], [N, 1])
    axis = 0 if len(sig) == 2 and sig[1] == 1 and sig[0] != 1 and samples_by_channel(model) else -1
    if tensor is None or not (len(sig) == 1 or axis == 0
                              or (len(sig) == 2 and (sig[0] == 1 or sig[0] == sig[1] == -1))):
        said = (f"input '{tensor.name}' [{','.join(map(str, sig))}]" if tensor is not None
                else f"{len(sg.inputs)} inputs")
        raise UsageError(f"{path}: a WAV, but {name} takes no raw audio samples ({said}; a WAV feeds [N], [1, N], "
                         "an AudioSpectrogram's [N, 1] or a -1 length): give its input as a .npy / .npz")
    try:  # read first: raw_audio_shapes reads it again, known readable
        samples, _ = read_wav(path)
    except (RuntimeError, ValueError, EOFError) as exc:  # the wave module's own, on a broken header
        why = f"{type(exc).__name__} {exc}".strip()
        raise DataError(f"{path}: cannot read the WAV file (a broken header: {why}); only 16-bit PCM WAV is "
                        "supported") from None
    shapes = raw_audio_shapes(model, [str(path)], sample_rate, name) if sig[axis] < 0 else None
    shape = next(iter(shapes[0].values())) if shapes else sig
    n = int(shape[axis])
    clip = np.zeros(n, np.int16)
    clip[:min(n, samples.size)] = samples[:n]
    x = clip if numpy_dtype(tensor.type) == np.int16 and tensor.quantization is None else clip / np.float32(32768.0)
    return [(None, x.reshape(shape))]


def input_shapes_from(path, model, arrays, given=None):
    """``given`` (--input-shape: {name: shape}, a bare shape for a one-input model, or None) with the shape of
    each dynamic input (a -1 in its signature) it leaves open taken from its array in ``arrays``
    (read_input_file's), as --input-shape would set it. Every array is checked here, before a runtime is chosen:
    one that cannot be its input (rank, a fixed size, a size --input-shape gives) is a UsageError naming the
    file, the array and the input."""
    import numpy as np

    from edge_sdk.model.input_shapes import with_batch_axis

    sg = model.subgraphs[0]
    sig_names = {}
    for sd in getattr(model, "signature_defs", None) or []:
        if sd.subgraph_index == 0:
            sig_names = {t: n for n, t in sd.inputs.items()}
            break
    bare = given is not None and not isinstance(given, dict)
    out = {} if bare else dict(given or {})
    for (key, x), t in zip(arrays, sg.inputs):
        tensor = sg.tensors[t]
        shown = sig_names.get(t, tensor.name)
        sig = tuple(int(d) for d in (tensor.shape_signature if tensor.shape_signature is not None else tensor.shape))
        named = [n for n in (tensor.name, shown) if n in out]
        want = tuple(int(d) for d in (given if bare else out[named[0]] if named else sig))
        dims = with_batch_axis(np.shape(x), want)  # a [C] row of a [-1, C] input: one row, as `edge serve` takes it
        if len(dims) != len(want) or any(w >= 0 and w != d for w, d in zip(want, dims)) or 0 in dims:
            what = f"array '{key}'" if key is not None else "array"
            at = f" (--input-shape {','.join(str(d) for d in want)})" if bare or named else ""
            raise UsageError(f"{path}: {what} shaped {list(np.shape(x))} {np.asarray(x).dtype.name} for input "
                             f"'{shown}' [{','.join(str(d) for d in sig)}] {tensor.type.lower()}{at}")
        if not (bare or named) and any(d < 0 for d in sig):
            out[shown] = dims
    return given if bare else out or None


def fed_inputs(path, arrays, details) -> list:
    """The arrays of read_input_file fitted to the (shaped) model's input ``details`` (pipeline.fit_input: a
    missing batch axis of one added, float quantized for a quantized input); a UsageError naming the file, the
    array and the input when one does not fit."""
    from edge_sdk.tasks.pipeline import fit_input

    out = []
    for (key, x), d in zip(arrays, details):
        try:
            out.append(fit_input(x, d, str(path), key))
        except ModelError as exc:
            raise UsageError(str(exc)) from None
    return out


class _Runner:
    """One backend's interpreter, behind the few calls the benchmark needs."""

    def __init__(self, backend: str, content: bytes, threads: int | None, name: str = "the model"):
        self.backend = backend
        self.interp = None
        if backend == "python":
            from edge_sdk.runtime.interpreter import Interpreter

            self.interp = Interpreter(model_content=content, num_threads=threads)
        elif backend == "litert":
            try:
                from ai_edge_litert.interpreter import Interpreter as LiteRT
            except ImportError as exc:
                raise DeviceError("backend 'litert' needs the ai-edge-litert package, which is not installed here "
                                  f"({exc}); install it with: pip install ai-edge-litert") from exc
            try:  # LiteRT's refusal (a ValueError/RuntimeError with its reason) becomes ours
                self.interp = LiteRT(model_content=content, num_threads=threads or 1)
                self.interp.allocate_tensors()
            except (ValueError, RuntimeError) as exc:
                reason = " ".join(str(exc).split()) or type(exc).__name__
                raise ModelError(f"LiteRT (backend litert) refuses {name}: {reason[:300]}; "
                                 f"try --backend python or c") from None
            return
        elif backend == "c":
            try:
                from edge_sdk.runtime import c_interpreter
            except ImportError as exc:
                raise DeviceError("backend 'c' needs edge_sdk.runtime.c_interpreter (the C runtime's Python binding), which "
                                  f"this edge-sdk does not have ({exc}); use --backend python or litert") from exc
            make = getattr(c_interpreter, "CInterpreter", None) or getattr(c_interpreter, "Interpreter", None)
            if make is None:
                raise DeviceError("edge_sdk.runtime.c_interpreter has no interpreter class; use --backend python or litert")
            try:
                self.interp = make(model_content=content, num_threads=threads)
            except (RuntimeError, OSError) as exc:  # BuildError: no compiler, or the build failed
                raise DeviceError(f"backend 'c' is not usable here: {exc}") from exc
        else:
            raise ValueError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
        self.interp.allocate_tensors()

    def set_inputs(self, arrays) -> None:
        for d, x in zip(self.interp.get_input_details(), arrays, strict=False):
            self.interp.set_tensor(d["index"], x)

    def arena_bytes(self) -> int | None:
        size = getattr(self.interp, "arena_size", None)
        return int(size) if isinstance(size, int) else None

    def eval_sized(self) -> list[dict] | None:
        """The tensors sized at eval, outside the arena (Interpreter.eval_sized_tensors: at the last invoke's
        data); [] for the C runtime (it plans every byte: it refuses ops sized by the data), None for LiteRT (not
        known)."""
        if self.backend == "litert":
            return None
        return self.interp.eval_sized_tensors()

    def packed_weights_bytes(self) -> int | None:
        """The C runtime's packed weight copies (not in arena_bytes, issue 23 point 5); 0 for the Python
        interpreter (none), None for LiteRT (not known)."""
        return self.interp.packed_weights_bytes if self.backend in ("python", "c") else None  # ours: its own


def _op_facts(interp, subgraph: int = 0) -> tuple[list, list]:
    """(MACs per node, shape per tensor) of ``subgraph`` from an edge_sdk Interpreter ([] when it cannot say)."""
    out = []
    for fn in ("op_macs", "tensor_shapes"):
        try:
            out.append(list(getattr(interp, fn)(subgraph)))
        except (AttributeError, EdgeError, RuntimeError, ValueError):
            out.append([])
    return out[0], out[1]


def _call_site_copies(interp) -> list[dict]:
    """profile.call_site_copies of the model the interpreter loaded ([] for LiteRT's)."""
    from edge_sdk.tools.profile import call_site_copies

    model = getattr(interp, "loaded_model", None) or getattr(interp, "model", None)
    return call_site_copies(model) if model is not None and hasattr(model, "subgraphs") else []


def _profile_ops(runner: _Runner, content: bytes, n: int, clock) -> tuple[OpProfile | None, str | None]:
    """``n`` inferences with every op timed (us): (the profile, None), or (None, why there is none)."""
    interp = runner.interp
    if runner.backend == "litert":
        return None, LITERT_NOTE
    per_run: list[dict] = []  # per run: {(subgraph, node): us}
    names: dict[tuple[int, int], str] = {}
    calls: dict[tuple[int, int], int] = {}  # times a node ran in all the profiled runs (a WHILE body's: per iteration)
    totals: list[float] = []
    facts = None  # the interpreter whose prepare gives MACs and shapes per subgraph
    if runner.backend == "python":
        facts = interp
    elif not hasattr(interp, "invoke_traced"):
        return None, "no per-op times with backend c: this edge_sdk.runtime.c_interpreter has no op trace"
    else:  # c: one trace buffer for all the profiled runs (invoke_traced then allocates none per run)
        interp.enable_trace(max(4096, 4 * sum(len(sg.operators) for sg in interp.model.subgraphs)))
    for _ in range(n):  # both backends' trace entries (python: its timer per step; c: the runtime's op timer, ns)
        t = clock()
        entries = interp.invoke_traced()
        totals.append((clock() - t) / 1e3)
        run: dict[tuple[int, int], float] = {}
        for e in entries:
            key = (int(e["subgraph"]), int(e["node"]))
            run[key] = run.get(key, 0.0) + e["ns"] / 1e3  # a node run more than once (loops): its sum
            names[key] = e["op"]
            calls[key] = calls.get(key, 0) + 1
        per_run.append(run)
    if facts is None:
        try:  # MACs and output shapes: the python interpreter's prepare knows them
            from edge_sdk.runtime.interpreter import Interpreter

            facts = Interpreter(model_content=content)
            facts.allocate_tensors()
        except (EdgeError, RuntimeError, ValueError):
            facts = None
    # the model whose indices the trace names: the C runtime's bytes (a copy of a subgraph per call site at other
    # shapes: kernels.control_flow.with_call_site_copy); the Python interpreter's prepared model holds the same
    model = getattr(interp, "loaded_model", None) or getattr(interp, "model", None)
    # a called subgraph's rows (IF branches, WHILE bodies) go under the node that runs them (edge profile's way)
    from edge_sdk.tools.profile import subgraph_callers

    caller_of = subgraph_callers(model) if model is not None else {}
    per_subgraph = {s: _op_facts(facts, s) if facts is not None else ([], []) for s, _ in names}
    ops = []
    for s, k in sorted(names):
        macs, shapes = per_subgraph[s]
        shape = None
        if model is not None and s < len(model.subgraphs) and k < len(model.subgraphs[s].operators):
            outs = model.subgraphs[s].operators[k].outputs
            if outs and 0 <= outs[0] < len(shapes):
                shape = list(shapes[outs[0]])
        m = macs[k] if k < len(macs) else None
        if m and s:  # a node of a called subgraph: its MACs each time it ran, per profiled run
            m = m * calls.get((s, k), n) / n
        ops.append(OpTiming(index=k, op=names[(s, k)], samples=[r.get((s, k), 0.0) for r in per_run], subgraph=s,
                            output_shape=shape, macs=int(m) if m else 0, caller=caller_of.get(s) if s else None))
    if not ops:
        return None, f"no per-op times: backend {runner.backend} timed no ops"
    return OpProfile(ops=ops, unit="us", run_totals=totals, us_per_unit=1.0), None


def run_benchmark(model, *, runs: int = 50, warmup: int = 5, threads: int | None = None, backend: str = "auto",
                  profile_runs: int | None = None, seed: int = 0, input_shapes=None, inputs=None,
                  sample_rate: int | None = None) -> dict:
    """Benchmark ``model`` (a path or bytes) in this process; returns the report dict (module docstring).
    ``input_shapes`` (`--input-shape`): benchmarked with its inputs at these shapes (edge_sdk.model.input_shapes;
    a -1 beyond the batch axis without one is a UsageError). ``inputs`` (`--inputs`): a .npy (one input) or an
    .npz of every input (`edge run`'s keys) fed instead of random values; its arrays' shapes fix the dynamic
    inputs' sizes not given by ``input_shapes``; a file that does not fit is a UsageError naming the input. A WAV
    feeds a model of raw samples (wav_arrays; ``sample_rate``: `--sample-rate`, the rate of one with no manifest
    entry)."""
    from edge_sdk import __version__
    from edge_sdk.model.input_shapes import shaped_model

    if runs < 1:
        raise UsageError(f"--runs must be >= 1, not {runs}")
    if warmup < 0:
        raise UsageError(f"--warmup must be >= 0, not {warmup}")
    if profile_runs is not None and profile_runs < 1:
        raise UsageError(f"--profile-runs must be >= 1, not {profile_runs}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    clock = time.perf_counter_ns
    t0 = clock()
    if isinstance(model, (bytes, bytearray, memoryview)):
        content, name = bytes(model), "<bytes>"
    else:
        content, name = Path(model).read_bytes(), Path(model).name
    read_ns = clock() - t0
    arrays = None
    if inputs is not None:
        from edge_sdk.model import read_model

        parsed = read_model(content)
        arrays = read_input_file(inputs, parsed, name, sample_rate)
        input_shapes = input_shapes_from(inputs, parsed, arrays, input_shapes)
    content = shaped_model(content, input_shapes)
    if backend == "litert":
        choice = {"runtime": "litert", "runtime_reason": "--backend litert"}
    else:  # auto: the C runtime when it runs the model (edge_sdk.tools.run_backend); not part of init_us
        from edge_sdk.tools.run_backend import choose_runtime

        picked = choose_runtime(content, backend, num_threads=threads)
        backend, choice = picked.name, picked.to_dict()
    t0 = clock()
    runner = _Runner(backend, content, threads, name)
    init_us = (read_ns + clock() - t0) / 1e3
    details = runner.interp.get_input_details()
    required = getattr(runner.interp, "required_input_values", None)  # ours; LiteRT's interpreter has none
    runner.set_inputs(fed_inputs(inputs, arrays, details) if arrays is not None
                      else _random_inputs(details, seed, required() if required else None))

    def timed() -> float:
        t = clock()
        runner.interp.invoke()
        return (clock() - t) / 1e3

    try:
        first_us = timed()
    except (ValueError, RuntimeError) as exc:
        if backend != "litert":
            raise
        raise ModelError(f"LiteRT (backend litert) failed to run {name}: {' '.join(str(exc).split())[:300]}") from None
    warm = [timed() for _ in range(warmup)]
    samples = [timed() for _ in range(runs)]

    peak_rss = _peak_rss_bytes()
    eval_sized = runner.eval_sized()  # after the timed runs: their sizes (the profiled runs feed the same data)
    n = profile_runs if profile_runs is not None else max(1, min(runs, 20))
    prof, note = _profile_ops(runner, content, n, clock)
    if prof is not None:
        prof.model, prof.where, prof.meta = name, "local", {"host": "local", "backend": backend}
    return {
        "host": "local",
        "backend": backend,
        **choice,
        "model": {"name": name, "sha256": hashlib.sha256(content).hexdigest(), "size": len(content)},
        "inputs": str(inputs) if inputs is not None else f"random (seed {seed})",
        "input_shapes": [{"name": d["name"], "shape": [int(v) for v in d["shape"]]} for d in details],
        "runs": runs,
        "warmup": warmup,
        "threads": threads,
        "init_us": init_us,
        "first_inference_us": first_us,
        "warmup_us": warm,
        "latency_us": latency_stats(samples),
        "ops": prof.rows() if prof is not None else [],
        "profile_runs": n if prof is not None else 0,
        "op_profile": prof.to_dict() if prof is not None else None,
        "ops_note": note,
        "call_site_copies": _call_site_copies(runner.interp),
        # arena_size: the runtime's arena on this machine (planner.runtime_arena's meaning, edge check's words);
        # arena_bytes: the same figure under its older name
        "arena_bytes": runner.arena_bytes(), "arena_size": runner.arena_bytes(),
        "packed_weights_bytes": runner.packed_weights_bytes(),
        # tensors sized at eval (WHERE, UNIQUE, a growing WHILE's, their readers'): outside the arena, measured
        "eval_sized": eval_sized,
        "eval_sized_bytes": None if eval_sized is None else sum(r["bytes"] or 0 for r in eval_sized),
        # arena_size in parts (both runtimes: the C one names the host SIMD scratch; LiteRT has none: None)
        "arena_parts": runner.interp.arena_parts() if hasattr(runner.interp, "arena_parts") else None,
        "peak_rss_bytes": peak_rss,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "edge_sdk_version": __version__,
    }


# Runs on the device: argv base, local sha256 -> JSON {venv: ok, manifest model path if the sha matches,
# bench copy path if one with that sha is there}.
_LOCATE = r"""
import hashlib, json, os, sys
base, want, name = os.path.abspath(os.path.expanduser(sys.argv[1])), sys.argv[2], sys.argv[3]
def sha(p):
    h = hashlib.sha256()
    try:
        with open(p, "rb") as f:
            for c in iter(lambda: f.read(1 << 20), b""): h.update(c)
    except OSError: return None
    return h.hexdigest()
try:
    with open(os.path.join(base, "manifest.json")) as f: m = json.load(f)
except Exception: m = {}
path = (m.get("model") or {}).get("path")
found = path if path and (m.get("model") or {}).get("sha256") == want and sha(path) == want else None
copy = os.path.join(base, "bench", name)
if not found and sha(copy) == want: found = copy
print(json.dumps({"base": base, "venv": os.path.exists(os.path.join(base, "venv", "bin", "python")), "found": found}))
"""


def bench(model, host=None, *, runs: int = 50, warmup: int = 5, threads: int | None = None,
          backend: str = "auto", identity: str | None = None, accept_new_host_key: bool = False,
          remote_dir: str | None = None, python: str = "python3", timeout: float = T.BENCH_TIMEOUT,
          connect_timeout: float = T.SSH_CONNECT_TIMEOUT, profile_runs: int | None = None, trace=None, csv=None, plot=None,
          input_shapes=None, inputs=None, sample_rate: int | None = None) -> dict:
    """Benchmark ``model`` on ``host`` over SSH (see the module docstring), or here when ``host`` is None;
    ``trace``/``csv``/``plot``: paths on this machine for the per-op Chrome trace, CSV and PNG (write_op_files).
    ``input_shapes`` (`--input-shape`): the model is shaped here (edge_sdk.model.input_shapes) and that copy
    benchmarked (copied to the device when it runs there). ``inputs`` (`--inputs`): run_benchmark's; with ``host`` the file is checked here, shapes the model copy
    here (its dynamic sizes) and is copied to the device, whose benchmark is fed it."""
    from edge_sdk.model.input_shapes import shaped_model, shaped_model_path

    if runs < 1:
        raise UsageError(f"--runs must be >= 1, not {runs}")
    if warmup < 0:
        raise UsageError(f"--warmup must be >= 0, not {warmup}")
    if profile_runs is not None and profile_runs < 1:
        raise UsageError(f"--profile-runs must be >= 1, not {profile_runs}")
    if (trace or csv or plot) and backend == "litert":
        raise UsageError(f"--trace/--csv/--plot: {LITERT_NOTE}")  # refused before anything runs
    from edge_sdk.tools.run_backend import warn_nan_weights

    if inputs is not None and host is not None:  # checked and shaped here; the device gets the file and the shaped copy
        model, input_shapes = _shaped_by_file(model, inputs, input_shapes, sample_rate)
        warn_nan_weights(Path(model).read_bytes(), model)
    elif inputs is not None and host is None:  # the file's shapes fix the dynamic sizes: run_benchmark shapes it
        warn_nan_weights(bytes(model) if isinstance(model, (bytes, bytearray, memoryview)) else
                         Path(model).read_bytes(), "<bytes>" if isinstance(model, (bytes, bytearray, memoryview))
                         else model)
    elif isinstance(model, (bytes, bytearray, memoryview)):
        model = shaped_model(bytes(model), input_shapes)
        warn_nan_weights(model, "<bytes>")
    elif host is None or Path(model).is_file():  # a missing file: _bench names it as before
        given = model
        model = shaped_model_path(model, input_shapes)
        warn_nan_weights(Path(model).read_bytes(), given)  # timed all the same; its outputs mean nothing
    report = _bench(model, host, runs=runs, warmup=warmup, threads=threads, backend=backend, identity=identity,
                    accept_new_host_key=accept_new_host_key, remote_dir=remote_dir, python=python, timeout=timeout,
                    connect_timeout=connect_timeout, profile_runs=profile_runs, input_shapes=input_shapes if
                    inputs is not None else None, inputs=inputs, sample_rate=sample_rate)
    write_op_files(report, trace=trace, csv=csv, plot=plot)
    return report


def _shaped_by_file(model, inputs, input_shapes, sample_rate=None) -> tuple[Path, object]:
    """`edge bench MODEL --host H --inputs FILE`: the model file shaped by --input-shape and, for the dynamic sizes
    it leaves open, by the file's arrays (as run_benchmark does here), and those shapes. A file that does not fit
    the model is a UsageError naming it, before anything is copied."""
    from edge_sdk.model import read_model
    from edge_sdk.model.input_shapes import shaped_model_path

    if isinstance(model, (bytes, bytearray, memoryview)):
        raise UsageError("--inputs with --host needs the model as a file")
    path = Path(model)
    if not path.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    if not Path(inputs).is_file():
        raise FileNotFoundError(2, "No such file or directory", str(inputs))
    parsed = read_model(path.read_bytes())
    shapes = input_shapes_from(inputs, parsed, read_input_file(inputs, parsed, str(path), sample_rate),
                               input_shapes)
    return shaped_model_path(path, shapes), shapes


def write_op_files(report: dict, trace=None, csv=None, plot=None) -> None:
    """Write the benchmark's per-op Chrome/Perfetto trace, CSV and bar chart (edge_sdk.tools.op_report, as
    `edge profile`); a DeviceError naming the reason when the report has no per-op times."""
    if not (trace or csv or plot):
        return
    data = report.get("op_profile")
    if not data:
        why = report.get("ops_note") or ("the benchmark sent no per-op times (an older edge-sdk on the device? "
                                         "run `edge deploy` again)")
        raise DeviceError(f"{report.get('host', 'local')}: cannot write --trace/--csv/--plot: {why}")
    prof = OpProfile.from_dict(data)
    if trace:
        report_ops.write_trace(prof, trace)
    if csv:
        report_ops.write_csv(prof.rows(), csv)
    if plot:
        report_ops.write_plot(prof, plot, footer=f"backend {report.get('backend')}, host {report.get('host')}, "
                                                 f"{prof.runs} profiled run(s); times in us")


def _bench(model, host, *, runs, warmup, threads, backend, identity, accept_new_host_key, remote_dir, python,
           timeout, connect_timeout, profile_runs, input_shapes=None, inputs=None, sample_rate=None) -> dict:
    if host is None:
        return run_benchmark(model, runs=runs, warmup=warmup, threads=threads, backend=backend,
                             profile_runs=profile_runs, input_shapes=input_shapes, inputs=inputs,
                             sample_rate=sample_rate)
    from edge_sdk import log
    from edge_sdk.tools.deploy import REMOTE_DIR, parse_json, connection_for, sha256_file
    from edge_sdk.device.ssh import remote_command, require_openssh

    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    model = Path(model)
    if not model.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(model))
    require_openssh()
    conn = connection_for(host, identity=identity, accept_new_host_key=accept_new_host_key,
                          connect_timeout=connect_timeout)
    with conn.session():
        label = conn.target.label
        digest = sha256_file(model)
        where = parse_json(conn.run_python(_LOCATE, remote_dir or REMOTE_DIR, digest, model.name, python=python,
                                            what="locating the model").stdout, "locate", label)
        if not where["venv"]:
            raise DeviceError(f"{label}: no edge-sdk runtime at {where['base']}/venv: run `edge deploy MODEL --host "
                              f"{label}` first")
        remote_model = where["found"]
        if remote_model is None:
            from edge_sdk.tools.deploy import PREPARE_SCRIPT, RENAME_SCRIPT

            log.stage(f"{label}: copying {model.name} for the benchmark")
            conn.run_python(PREPARE_SCRIPT, where["base"], "bench", python=python, what="preparing folders")
            remote_model = f"{where['base']}/bench/{model.name}"
            tmp = f"{where['base']}/bench/.{model.name}.part"
            conn.upload(model, tmp, python=python, sha256=digest)
            conn.run_python(RENAME_SCRIPT, tmp, remote_model, python=python, what="installing the model copy")
        argv = [f"{where['base']}/venv/bin/python", "-m", "edge_sdk.tools.bench", remote_model, "--json",
                "--runs", str(runs), "--warmup", str(warmup), "--backend", backend]
        if inputs is not None:  # the real input data, copied beside the benchmark's models (named by its digest)
            from edge_sdk.tools.deploy import PREPARE_SCRIPT, RENAME_SCRIPT

            inputs = Path(inputs)
            data_digest = sha256_file(inputs)
            remote_inputs = f"{where['base']}/bench/inputs-{data_digest[:16]}{inputs.suffix.lower()}"
            log.stage(f"{label}: copying {inputs.name} for the benchmark")
            conn.run_python(PREPARE_SCRIPT, where["base"], "bench", python=python, what="preparing folders")
            conn.upload(inputs, remote_inputs + ".part", python=python, sha256=data_digest)
            conn.run_python(RENAME_SCRIPT, remote_inputs + ".part", remote_inputs, python=python,
                            what="installing the input data")
            argv += ["--inputs", remote_inputs]
        if threads:
            argv += ["--threads", str(threads)]
        if profile_runs is not None:
            argv += ["--profile-runs", str(profile_runs)]
        proc = conn.run(remote_command(*argv), timeout=timeout, what="the benchmark")
        report = parse_json(proc.stdout, "benchmark", label)
        report["host"] = label
        if report.get("op_profile"):
            report["op_profile"]["where"] = label
            report["op_profile"].setdefault("meta", {})["host"] = label
        report["device_model_path"] = remote_model
        return report


BACKEND_WORDS = {"python": "Python interpreter", "c": "C runtime", "litert": "LiteRT interpreter"}


def format_bench(report: dict) -> str:
    """The report as text: timings, memory, then the per-op table of edge_sdk.tools.op_report (as `edge profile`)."""
    from edge_sdk.runtime.interpreter import eval_sized_words
    from edge_sdk.runtime.planner import arena_words

    lat = report["latency_us"]

    def ms(us) -> str:
        return "-" if us is None else f"{us / 1000:.3f} ms"

    def size(n) -> str:
        return "-" if n is None else f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB"

    warm = report.get("warmup_us") or []
    lines = [
        f"model:     {report['model']['name']} ({report['model']['size']} bytes)",
        f"host:      {report['host']} ({report.get('machine', '?')}, Python {report.get('python', '?')}), "
        f"backend {report['backend']}" + (f", {report['threads']} threads" if report.get("threads") else ""),
        *([f"runtime:   {report['runtime']} ({report['runtime_reason']})"] if report.get("runtime_reason") else []),
        *([f"inputs:    {report['inputs']} ("
           + ", ".join(f"{d['name']} {'x'.join(str(v) for v in d['shape'])}" for d in report["input_shapes"]) + ")"]
          if report.get("input_shapes") else []),
        f"init:      {ms(report['init_us'])}",
        f"first:     {ms(report['first_inference_us'])}",
        f"warm-up:   {len(warm)} runs" + (f", mean {ms(sum(warm) / len(warm))}" if warm else ""),
        (f"latency:   {report['runs']} runs: mean {ms(lat['mean'])} ± {ms(lat['std'])}, p50 {ms(lat['p50'])}, "
         f"p90 {ms(lat['p90'])}, p99 {ms(lat['p99'])}, min {ms(lat['min'])}, max {ms(lat['max'])}"),
        "memory:    " + arena_words(report.get("arena_size", report.get("arena_bytes")),
                                 f"the {BACKEND_WORDS.get(report['backend'], report['backend'])} on "
                                 + ("this machine" if report["host"] == "local" else report["host"])),
        "           "
        + (f"packed weight copies {report['packed_weights_bytes']} B, " if report.get("packed_weights_bytes") else "")
        + f"peak RSS {size(report.get('peak_rss_bytes'))} (the whole process)",
    ]
    eval_sized = eval_sized_words(report.get("eval_sized") or [])
    if eval_sized:
        lines.append(f"           {eval_sized}")
    parts = report.get("arena_parts") or {}
    if parts.get("fast_path_scratch"):  # why a host figure is far above the board's (issue 23 walk, point 4)
        lines.append(f"           of the arena: fast-path scratch {parts['fast_path_scratch']} B (this host build's "
                     f"SIMD kernels, e.g. im2col blocks; a board's portable kernels do without), tensors "
                     f"{parts['tensors']} B, other scratch {parts['scratch'] - parts['fast_path_scratch']} B, "
                     f"persistent {parts['persistent']} B")
    ops = report.get("ops") or []
    if ops:
        lines.append("")
        lines.append(f"per-op profile (us, mean of {report.get('profile_runs', '?')} profiled runs, backend "
                     f"{report['backend']}):")
        lines += format_op_table(ops)
        from edge_sdk.tools.profile import copies_line

        copies = copies_line(report.get("call_site_copies") or [])
        if copies:
            lines.append(copies)
    elif report.get("ops_note"):
        lines.append(f"per-op:    {report['ops_note']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m edge_sdk.tools.bench MODEL [--runs N] [--warmup N] [--threads N] [--backend B] [--profile-runs N]
    [--json]``: the benchmark in this process (what ``edge bench --host`` runs on the device)."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m edge_sdk.tools.bench")
    p.add_argument("model")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int)
    p.add_argument("--backend", default="auto", choices=BACKENDS)
    p.add_argument("--profile-runs", type=int)
    p.add_argument("--inputs", help=".npy (one input) or .npz of every input (default: seeded random)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        report = run_benchmark(args.model, runs=args.runs, warmup=args.warmup, threads=args.threads,
                               backend=args.backend, profile_runs=args.profile_runs, inputs=args.inputs)
    except UsageError as exc:
        sys.stderr.write(f"edge_sdk.tools.bench: error: {exc}\n")
        return 2
    except (EdgeError, ModelError, OSError, ValueError) as exc:
        sys.stderr.write(f"edge_sdk.tools.bench: error: {exc}\n")
        return 3
    sys.stdout.write(json.dumps(report) + "\n" if args.json else format_bench(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
