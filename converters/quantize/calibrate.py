"""Calibration: the float model runs in edge-sdk's interpreter with every intermediate tensor made a model output
(outputs are never reused by the arena plan), one sample at a time, and each tensor's statistics (extremes, a
thinned subsample) are updated from views of that run's memory, which the next sample overwrites: memory holds one
sample's activations, not all samples'. Held-back samples of a re-readable source (files, arrays) are read again for
each measurement instead of being kept; a one-shot iterator's are kept (at most ``holdout``), and without held-back
samples the error is measured on at most ``MEASURE_SAMPLES`` calibration samples. Ranges per tensor: "minmax" (the
observed extremes), "percentile" (clip at ``percentile`` and 100 - ``percentile`` of the values), "mse" (the
clipping range whose fake-quantization has the least mean squared error on the values), "least-error" (each
range by the error it causes in the ops that read the tensor: ``converters.quantize.least_error``); they work on
a seeded subsample of each tensor's values (at most ``MAX_VALUES`` kept)."""

from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass, field

import numpy as np

from converters.calibration import CalibrationData, calibration_data
from converters.quantize.builder import is_const, is_float
from converters.quantize.least_error import FIT_SAMPLES, least_error_ranges
from converters.quantize.scales import affine, limits
from edge_sdk import log
from edge_sdk.errors import ModelError
from edge_sdk.model.types import Model

MEASURE_SAMPLES = 32  # without held-back samples, the error is measured on at most this many calibration samples
MAX_VALUES = 1 << 17  # values kept per tensor for percentile / mse
AUTO_PERCENTILE = 99.9  # method "auto" also measures this percentile (beside the one given)
LEAST_ERROR_PERCENTILES = (99.99, 99.9, 99.0, 98.0, 95.0)  # method "least-error"'s clipped candidates beside MSE
MEASURE_CACHE_BYTES = 256 << 20  # the float activations of the measured samples kept across the guard's steps


class Stats:
    """Running extremes of one tensor plus a seeded, thinned subsample of its values."""

    def __init__(self, seed: int):
        self.min, self.max = math.inf, -math.inf
        self.parts: list[np.ndarray] = []
        self.kept = 0
        self.rate = 1.0
        self.rng = np.random.default_rng(seed)

    def add(self, x: np.ndarray, keep_values: bool) -> None:
        if x.size == 0:
            return
        self.min = min(self.min, float(x.min()))
        self.max = max(self.max, float(x.max()))
        if not keep_values:
            return
        v = x.reshape(-1)
        if self.rate < 1.0:
            v = v[self.rng.random(v.size) < self.rate]
        self.parts.append(v.astype(np.float32, copy=True))
        self.kept += v.size
        if self.kept > MAX_VALUES:
            all_v = np.concatenate(self.parts)
            all_v = all_v[self.rng.random(all_v.size) < 0.5]
            self.parts, self.kept, self.rate = [all_v], all_v.size, self.rate / 2

    def values(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros(0, np.float32)


def _exposed(model: Model) -> tuple[Model, list[int]]:
    """A copy of the model whose outputs are every tensor an operator writes (the original outputs first)."""
    sg = model.subgraphs[0]
    outs = list(sg.outputs)
    seen = set(outs)
    for op in sg.operators:
        for t in op.outputs:
            if t >= 0 and t not in seen:
                seen.add(t)
                outs.append(t)
    m = copy.copy(model)
    m.subgraphs = [copy.copy(s) for s in model.subgraphs]
    m.subgraphs[0].outputs = outs
    return m, outs


class Runner:
    """A model run one sample at a time: run(sample) -> {tensor: value} for every tensor an op writes. The values
    are views of the interpreter's memory, valid until the next run (callers fold them into statistics and drop them)."""

    def __init__(self, model: Model):
        from edge_sdk.runtime.interpreter import Interpreter

        exposed, outs = _exposed(model)
        self.interp = Interpreter(model=exposed)
        self.interp.allocate_tensors()
        self.ins = [d["index"] for d in self.interp.get_input_details()]
        self.views = {t: self.interp.tensor(t) for t in outs}

    def __call__(self, sample) -> dict:
        self.interp.reset_all_variables()  # each sample starts from the model's initial state
        for i, x in zip(self.ins, sample):
            self.interp.set_tensor(i, x)
        # IEEE results (x / 0 = inf, RSQRT(0) = inf, LOG(0) = -inf) are the float model's values: measured, not
        # warned about on the terminal (the guard compares the finite elements)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            self.interp.invoke()
        return {t: view() for t, view in self.views.items()}

    def op_macs(self) -> list[int]:
        """Multiply-accumulates per op (the op table's MACs functions; 0 for ops without one)."""
        return [m or 0 for m in self.interp.op_macs()]


class CachedRunner:
    """The float model's activations per measured sample, kept (copies) while they fit ``budget`` bytes: the accuracy
    guard measures each widening step on the same samples, and the float side of that comparison does not
    change. A sample is known by its inputs' bytes; past the budget the model runs again."""

    def __init__(self, runner: Runner, budget: int):
        self.runner, self.budget, self.used = runner, budget, 0
        self.kept: dict[bytes, dict] = {}

    def __call__(self, sample) -> dict:
        import hashlib

        h = hashlib.blake2b(digest_size=16)
        for x in sample:
            a = np.ascontiguousarray(x)
            h.update(str((a.dtype, a.shape)).encode())
            h.update(a.view(np.uint8).reshape(-1).data if a.size else b"")
        key = h.digest()
        if key in self.kept:
            return self.kept[key]
        values = self.runner(sample)
        size = sum(v.nbytes for v in values.values())
        if self.used + size <= self.budget:
            self.used += size
            values = {t: np.array(v) for t, v in values.items()}
            self.kept[key] = values
        return values

    def op_macs(self) -> list[int]:
        return self.runner.op_macs()


class Samples:
    """The samples the error is measured on, read again on each pass: the held-back ones (every 5th, at
    most ``holdout``) or, without any, the first calibration ones, from a re-readable source; else the
    ones kept in memory. Each pass shows a progress bar."""

    def __init__(self, data, kept: list, holdout: int, n_held: int, count: int):
        self.data, self.kept, self.holdout, self.n_held, self.count = data, kept, holdout, n_held, count

    def __len__(self) -> int:
        return self.count

    def _read(self):
        if self.data is None:
            yield from self.kept
            return
        h = c = 0
        for k, sample in enumerate(self.data.relabeled(None)):
            if self.holdout and k % 5 == 4 and h < self.holdout:
                h += 1
                if self.n_held:
                    yield sample
            elif not self.n_held:
                c += 1
                yield sample
            if (self.n_held and h >= self.n_held) or (not self.n_held and c >= self.count):
                return

    def __iter__(self):
        with log.progress(self.count, "measuring (accuracy guard)") as bar:
            for sample in self._read():
                yield sample
                bar.advance()


@dataclass
class Calibration:
    """What calibration found: each float activation's statistics and clipped range, and how to run the float
    model and on which samples to measure the quantized one."""

    float_run: Runner  # the float model, every activation exposed
    float_tensors: list[int]  # the float activations (model inputs and op outputs), in tensor order
    stats: dict[int, Stats]
    ranges: dict[int, tuple[float, float]]
    samples: int  # calibration samples used
    held_back: int  # samples held back to measure the result
    measure: Samples
    given: set = field(default_factory=set)  # tensors whose range the source gave (``converters.quantize.given``)
    synthetic: bool = False  # no data was given: the samples are synthetic (every range given by the source)
    error_ranges: dict | None = None  # method "auto": candidate range sets by name ("mse", "percentile 99.9", ...)
    least_error: dict | None = None  # method "least-error": how many tensors took each candidate range
    fitting: list = field(default_factory=list)  # the first calibration samples (never held-back ones), kept to fit
    # corrections on (``sequential``): the guard's samples stay unseen by what it judges


def calibrate(model: Model, calibration, act: str, method: str, percentile: float, limit: int | None, seed: int,
              holdout: int, patches=None, fit: int = 0) -> Calibration:
    """Run the float model over the calibration samples (every 5th held back, at most ``holdout``) and clip each
    float activation's observed range by ``method`` ("auto": the min / max ones in ``ranges``, the MSE and
    percentile ones in ``error_ranges``). ``patches``: a ``bias.PatchMeans`` fed each sample's activations.
    ``fit``: this many of the first calibration samples are kept (``Calibration.fitting``)."""
    sg = model.subgraphs[0]
    data = calibration_data(calibration, inputs=model, limit=limit, label="calibrating")
    log.stage(f"calibrating ({method})")
    float_run = Runner(model)
    float_tensors = [t for t in range(len(sg.tensors)) if is_float(model, t) and not is_const(model, t)]
    stats = {t: Stats(seed + t) for t in float_tensors}
    keep = method != "minmax"  # "auto" keeps them too (its MSE ranges)
    # Streaming: each sample's activations are folded into the per-tensor statistics and dropped. A source
    # that can be read again (files, arrays) is read again for the held-back samples; a one-shot iterator's
    # held-back samples (at most ``holdout``) and a few calibration samples are kept.
    reiter = isinstance(data, CalibrationData) and data.reiterable
    samples, held, fitting, first = [], [], [], []  # first: method "least-error" measures its choice on them
    calibrated = n_held = 0

    def picked():  # the calibration samples, in order (the held-back ones set aside)
        nonlocal n_held
        for k, sample in enumerate(data):
            if holdout and k % 5 == 4 and n_held < holdout:
                n_held += 1
                if not reiter:
                    held.append(sample)
                continue
            yield sample

    for sample, values in _runs(model, float_run, picked()):
        calibrated += 1
        if len(fitting) < fit:
            fitting.append(sample)
        if method == "least-error" and len(first) < FIT_SAMPLES:
            first.append(sample)
        if not reiter and len(samples) < (4 if holdout else MEASURE_SAMPLES):
            samples.append(sample)
        for j, t in enumerate(sg.inputs):
            if t in stats:
                stats[t].add(np.asarray(sample[j]), keep)
        for t, v in values.items():
            if t in stats:
                stats[t].add(v, keep)
        if patches is not None:
            patches.add(values, dict(zip(sg.inputs, sample)))
        del values
    if not calibrated:
        raise ModelError("quantize: the calibration data gave no samples")
    qmin, qmax = limits(act)

    def clipped(how: str, pct: float = float(percentile)) -> dict:
        return {t: (0.0, 0.0) if s.min == math.inf else clip_range(s, how, pct, qmin, qmax, act == "INT16")
                for t, s in stats.items()}

    least = None
    if method == "least-error":  # each range by the error it causes where it is read (quantize.least_error)
        log.stage(f"choosing activation ranges by their readers' error on {len(first)} calibration sample(s)")
        symmetric = act == "INT16"
        candidates = {t: range_candidates(st, qmin, qmax, symmetric) for t, st in stats.items()}
        ranges, least = least_error_ranges(model, candidates, first, float_run, qmin, qmax, symmetric)
    else:
        ranges = clipped("minmax" if method == "auto" else method)
    measure = Samples(data if reiter else None, held or samples, holdout, n_held,
                      n_held or min(calibrated, MEASURE_SAMPLES))
    cal = Calibration(float_run, float_tensors, stats, ranges, calibrated, n_held, measure, fitting=fitting,
                      least_error=dict(least) if least is not None else None)
    if method == "auto":  # the candidate sets beside min / max, by name; the guard measures each
        cal.error_ranges = {"mse": clipped("mse")}
        for pct in dict.fromkeys((float(percentile), AUTO_PERCENTILE)):
            cal.error_ranges[f"percentile {pct:g}"] = clipped("percentile", pct)
    return cal


def _shard_activations(run: Runner, samples: list) -> list[dict]:
    """A Ray worker's share: each sample's activations (copies: they leave the worker), in order."""
    return [{t: np.array(v) for t, v in run(sample).items()} for sample in samples]


def _runs(model: Model, float_run: Runner, samples):
    """(sample, its activations) in sample order: run here, or on the Ray pool the CLI opened (``edge convert
    --ray``), whose shards come back in order, so the statistics folded from them are the single-process ones."""
    from edge_sdk.tasks import scale_ray

    pool = scale_ray.active()
    if pool is None:
        for sample in samples:
            yield sample, float_run(sample)
        return
    for chunk, activations in pool.map(functools.partial(Runner, model), _shard_activations, samples,
                                       "calibrating on Ray"):
        yield from zip(chunk, activations)


def range_candidates(stats: Stats, qmin: int, qmax: int, symmetric: bool) -> dict[str, tuple[float, float]]:
    """Method "least-error"'s candidate ranges of one tensor, {name: (lo, hi)}: min / max first (it wins ties), then
    MSE and the ``LEAST_ERROR_PERCENTILES``, each range once."""
    if stats.min == math.inf:
        return {"minmax": (0.0, 0.0)}
    out: dict[str, tuple[float, float]] = {"minmax": (stats.min, stats.max)}
    options = [("mse", "mse", 0.0)] + [(f"percentile {p:g}", "percentile", p) for p in LEAST_ERROR_PERCENTILES]
    for name, how, pct in options:
        r = clip_range(stats, how, pct, qmin, qmax, symmetric)
        if r not in out.values() and r[1] > r[0]:
            out[name] = r
    return out


def clip_range(stats: Stats, method: str, percentile: float, qmin: int, qmax: int,
               symmetric: bool) -> tuple[float, float]:
    """The range a tensor is quantized over, by ``method`` (see the module docstring)."""
    lo, hi = stats.min, stats.max
    if method == "minmax" or not stats.parts:
        return lo, hi
    v = stats.values()
    v = v[np.isfinite(v)]  # LOG(0) = -inf: the finite values are the ones a range can hold
    if not v.size:
        return lo, hi
    if method == "percentile":
        if symmetric:
            r = float(np.percentile(np.abs(v), percentile))
            return max(lo, -r), min(hi, r)
        a, b = np.percentile(v, [100.0 - percentile, percentile])
        return float(a), float(b)
    # mse: a grid over the clipping range, minimizing the fake-quantization error of the kept values (rounded
    # half to even: ties do not move a mean squared error, and np.rint is several times faster than round_away)
    if v.size > 1 << 15:
        v = v[np.random.default_rng(0).choice(v.size, 1 << 15, replace=False)]
    v = v.astype(np.float64)

    def err(a, b):
        s, z = affine(a, b, qmin, qmax, symmetric)
        q = np.clip(np.rint(v / s) + z, qmin, qmax)
        return float(np.mean((v - (q - z) * s) ** 2))

    best = (err(lo, hi), lo, hi)
    for t in np.linspace(0.05, 1.0, 40):
        e = err(lo * t, hi * t)
        if e < best[0]:
            best = (e, lo * t, hi * t)
    if not symmetric:  # refine each end alone
        _, a0, b0 = best
        for t in np.linspace(0.5, 1.5, 21):
            a = max(lo, a0 * t)
            e = err(a, b0)
            if e < best[0]:
                best = (e, a, b0)
        _, a0, b0 = best
        for t in np.linspace(0.5, 1.5, 21):
            b = min(hi, b0 * t)
            e = err(a0, b)
            if e < best[0]:
                best = (e, a0, b)
    return best[1], best[2]
