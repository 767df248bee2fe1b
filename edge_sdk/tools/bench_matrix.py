"""`edge bench --matrix`: models x targets x precisions, benchmarked on this machine (host-side).

    report = bench_matrix(["a.onnx", "b.tflite"], targets=["host-linux", "qemu-mps2-an386"],
                          precisions=["int8", "fp16"], calibration="calib.npy", runs=20)
    print(format_matrix(report))

Each (model, precision) is converted once (converters.convert, which the CLI passes in; the same call and
defaults as `edge convert --quantize PRECISION --calib DATA`; "float" keeps the source as it is) and the converted
bytes are cached under ``resources.cache_dir()/bench-matrix/`` keyed by the source's sha256, the precision, the calibration data's sha256
and the converter's version: a second matrix over the same models converts nothing. Each (model, precision,
target) cell is then `edge bench`'s own benchmark of the converted model on this machine
(edge_sdk.tools.bench.run_benchmark: the same report, keys and figures) with the runtime the target runs — the C
runtime for a profile whose ``runtime`` is "c" (microcontrollers), else ``auto`` as `edge bench` picks it — and
the target's fit (edge_sdk.targets.check.check_model: verdict, arena vs RAM, model vs flash). Latencies are this
machine's, not the target's: the matrix compares models and precisions, the check says what fits where.

On Ray (``scale_ray.cluster`` active, `--ray [ADDRESS]`): the conversions and then the cells are Ray tasks on the
pool's actors (one cell per task, as many at a time as workers; a task whose worker dies is run again); without
Ray the same calls run one after the other in this process. The reports are the same in both modes except what
measures time or the process that ran the cell (``VARYING``); cells come back in matrix order either way.
A conversion or a benchmark that fails is that cell's ``error`` (one line), not the matrix's.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from edge_sdk import log, resources
from edge_sdk.errors import EdgeError, UsageError

PRECISIONS = ("int8", "int16x8", "fp16", "float")  # "float": the source model as it is (a .tflite source only)
CACHE_FOLDER = "bench-matrix"
# report keys that measure time or the process that ran the cell (a Ray worker or this process): the rest of a
# cell is identical whichever way the matrix ran
VARYING = ("init_us", "first_inference_us", "warmup_us", "latency_us", "op_profile", "peak_rss_bytes",
           "python", "machine")
VARYING_OP_KEYS = ("time", "time_min", "time_max", "pct", "cum_pct", "macs_per_unit")


def backend_for(profile) -> str:
    """The runtime a target runs, as an `edge bench --backend`: "c" for a C-runtime profile, else "auto"."""
    return "c" if getattr(profile, "runtime", None) == "c" else "auto"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _cache_path(source_sha: str, precision: str, calib_sha: str | None) -> Path:
    from edge_sdk import __version__  # the converter's version is the package's

    key = _sha256(f"{source_sha} {precision} {calib_sha} {__version__}".encode())
    return resources.cache_dir() / CACHE_FOLDER / f"{key[:32]}.tflite"


def _calibration_sha(calibration) -> str | None:
    """sha256 of the calibration data (a file, or a folder's files by relative path and content)."""
    if calibration is None:
        return None
    path = Path(calibration)
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for p in files:
        h.update(str(p.relative_to(path) if path.is_dir() else p.name).encode() + b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()


def _no_state():
    return None


def _convert(convert, source: bytes, suffix: str, precision: str,
             calibration: str | None) -> tuple[bytes | None, str | None]:
    """(converted bytes, None) or (None, why it failed: one line), by ``convert`` (converters.convert, which the
    CLI passes in: edge_sdk does not import the converters). Runs in this process or on a Ray worker."""
    if precision == "float":
        if suffix != ".tflite":
            return None, "precision float benchmarks a .tflite source as it is; convert an ONNX model first"
        return source, None
    try:
        return convert(source, quantize=precision, calibration=calibration).tflite, None
    except (EdgeError, OSError, ValueError) as exc:
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if suffix == ".tflite" and "already quantized" in why:  # an int8 .tflite given to the default sweep
            why += "; --precision float benchmarks a .tflite as it is"
        return None, why


def _cell(content: bytes, target: str, runs: int, warmup: int, profile_runs: int | None) -> dict:
    """One cell: `edge bench`'s report of the converted model with the target's runtime, and the target's fit."""
    from edge_sdk.targets.check import check_model
    from edge_sdk.targets.profiles import load_profile
    from edge_sdk.tools.bench import run_benchmark

    profile = load_profile(target)
    try:
        report = run_benchmark(content, runs=runs, warmup=warmup, backend=backend_for(profile),
                               profile_runs=profile_runs)
    except (EdgeError, OSError, RuntimeError, ValueError) as exc:
        report = {"error": f"bench: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
    try:
        fit = check_model(content, profile, stack=False).to_dict()
        report["check"] = {k: fit.get(k) for k in ("verdict", "arena_bytes", "ram_budget", "model_bytes",
                                                   "flash_budget", "runtime")}
    except (EdgeError, OSError, RuntimeError, ValueError) as exc:
        report["check"] = {"verdict": None, "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
    return report


def _work(fn, _state, calls: list) -> list:
    """Pool.map's work over a shard of one call: fn(*call) for each."""
    return [fn(*call) for call in calls]


def _each(fn, calls: list, label: str) -> list:
    """fn(*call) for every call, in order: on the active Ray pool (one call per task), else here."""
    from edge_sdk.tasks import scale_ray

    pool = scale_ray.active()
    if pool is None:
        out = []
        with log.progress(len(calls), label) as bar:
            for call in calls:
                out.append(fn(*call))
                bar.advance(1)
        return out
    return [r for _, results in pool.map(_no_state, functools.partial(_work, fn), calls, label, total=len(calls),
                                          shard=1) for r in results]


def bench_matrix(models, targets, precisions=("int8",), *, convert, calibration=None, runs: int = 20,
                 warmup: int = 2, profile_runs: int | None = None) -> dict:
    """The matrix report: ``cells`` (one per model x precision x target, in that order: model, precision, target,
    converted {sha256, size, cached}, then `edge bench`'s report keys and ``check``, or ``error``). ``convert``
    is converters.convert (the CLI's: the library's layers do not import the converters)."""
    from edge_sdk.targets.profiles import load_profile

    if not models:
        raise UsageError("--matrix: give one or more models")
    if runs < 1:
        raise UsageError(f"--runs must be >= 1, not {runs}")
    if warmup < 0:
        raise UsageError(f"--warmup must be >= 0, not {warmup}")
    precisions = list(dict.fromkeys(precisions or ("int8",)))
    for p in precisions:
        if p not in PRECISIONS:
            raise UsageError(f"--precision {p}: one of {', '.join(PRECISIONS)}")
    targets = list(dict.fromkeys(targets or ("host-linux",)))
    profiles = [load_profile(t) for t in targets]  # an unknown profile: its error before any work
    sources = []
    for m in models:
        path = Path(m)
        if not path.is_file():
            raise FileNotFoundError(2, "No such file or directory", str(path))
        sources.append((path, path.read_bytes()))
    if calibration is not None and not Path(calibration).exists():
        raise FileNotFoundError(2, "No such file or directory", str(calibration))
    calib_sha = _calibration_sha(calibration)
    calib_arg = str(Path(calibration).resolve()) if calibration is not None else None

    # 1. conversions: the cached ones read, the others converted (Ray tasks or here) and cached
    converted: dict[tuple[int, str], tuple[bytes | None, str | None, bool]] = {}
    todo = []
    for i, (path, data) in enumerate(sources):
        for p in precisions:
            cache = _cache_path(_sha256(data), p, calib_sha)  # fp16 too: its accuracy guard measures on the data
            if p != "float" and cache.is_file():
                converted[i, p] = cache.read_bytes(), None, True
            else:
                todo.append((i, p, cache))
    calls = [(convert, sources[i][1], sources[i][0].suffix.lower(), p, calib_arg) for i, p, _ in todo]
    results = _each(_convert, calls, "converting")
    for (i, p, cache), (content, error) in zip(todo, results):
        if content is not None and p != "float":
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(f".{cache.name}.{os.getpid()}.part")
            tmp.write_bytes(content)
            os.replace(tmp, cache)  # atomic: a parallel matrix never reads half a model
        converted[i, p] = content, error, False

    # 2. cells: model x precision x target
    order, calls = [], []
    for i, (path, _) in enumerate(sources):
        for p in precisions:
            content, error, cached = converted[i, p]
            for profile in profiles:
                cell = {"model": path.name, "precision": p, "target": profile.name}
                if content is None:
                    cell["error"] = f"conversion: {error}"
                else:
                    cell["converted"] = {"sha256": _sha256(content), "size": len(content), "cached": cached}
                    calls.append((content, str(profile.path), runs, warmup, profile_runs))
                order.append(cell)
    reports = iter(_each(_cell, calls, "benchmarking"))
    cells = []
    for cell in order:
        if "error" not in cell:
            # `edge bench`'s keys; its "model" {name, sha256, size} is the cell's "converted"
            cell.update({k: v for k, v in next(reports).items() if k != "model"})
        cells.append(cell)
    return {"models": [p.name for p, _ in sources], "targets": [p.name for p in profiles], "precisions": precisions,
            "runs": runs, "warmup": warmup, "host": "local", "cells": cells}


def comparable(cell: dict) -> dict:
    """A cell without what measures time or the process that ran it (``VARYING``, the converted model's
    ``cached`` flag): equal whether the matrix ran on Ray or in one process, cached or not."""
    out = {k: v for k, v in cell.items() if k not in VARYING}
    if "converted" in out:
        out["converted"] = {k: v for k, v in out["converted"].items() if k != "cached"}
    if out.get("ops"):
        out["ops"] = [{k: v for k, v in op.items() if k not in VARYING_OP_KEYS} for op in out["ops"]]
    return out


def format_matrix(report: dict) -> str:
    """One line per cell: model, precision, target, the runtime that ran it, the converted size, latency (this
    machine), arena and the target's verdict."""

    def ms(us) -> str:
        return "-" if us is None else f"{us / 1000:.3f}"

    def kib(n) -> str:
        return "-" if n is None else f"{n / 1024:.1f}"

    head = (f"{'model':<24} {'precision':<9} {'target':<20} {'runtime':<7} {'size KiB':>9} {'p50 ms':>9} "
            f"{'mean ms':>9} {'arena KiB':>10}  fits")
    lines = [head, "-" * len(head)]
    for c in report["cells"]:
        if "latency_us" not in c:
            lines.append(f"{c['model'][:24]:<24} {c['precision']:<9} {c['target'][:20]:<20} {'-':<7} "
                         f"{kib((c.get('converted') or {}).get('size')):>9}  {c.get('error', '')}")
            continue
        lat, check = c["latency_us"], c.get("check") or {}
        lines.append(f"{c['model'][:24]:<24} {c['precision']:<9} {c['target'][:20]:<20} "
                     f"{c.get('backend') or '-':<7} {kib(c['converted']['size']):>9} {ms(lat['p50']):>9} "
                     f"{ms(lat['mean']):>9} {kib(check.get('arena_bytes')):>10}  {check.get('verdict') or '-'}")
    # the arena is the target's (edge check's figure), not this machine's run's (the JSON's arena_size): a
    # microcontroller's 32-bit structs and portable kernels need less than this host's SIMD build
    lines.append(f"(latencies on this machine, {report['runs']} runs per cell; arena and fits: the target's, as "
                 "edge check --target gives them)")
    return "\n".join(lines) + "\n"
