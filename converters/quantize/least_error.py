"""Calibration method "least-error": each activation's range chosen by the error it causes at the outputs.

min / max keeps a rare outlier and crushes the bulk of a tensor's values into a few quanta; a percentile or the
tensor's own least squared error (``mse``) clips it whether it matters or not. Here each float activation's
candidate ranges -- min / max, MSE, percentiles 99.99 / 99.9 / 99 / 98 / 95 -- are measured at the model's
outputs: the ops downstream of the tensor run in float on the first calibration samples with the tensor
fake-quantized over the candidate (every other value exact), and the candidate whose outputs' relative squared
error (summed over the outputs) is least is kept -- min / max unless the best has 10% less error (``MARGIN``). A
spike a sigmoid or a clamp flattens later is clipped; one the outputs carry is kept. The held-back samples the
accuracy guard judges on are never used. Each tensor is judged alone (the others float): one downstream run per
tensor, candidate and sample -- on palm_detection_lite (120 activations) 754 s under load, and 119 kept min / max.

An output that is a join (CONCATENATION / PACK, through ops that only move values: YOLO's [1, 4 + C, N] of boxes in
pixels beside 0..1 scores) is measured at the join, part by part, each part's error relative to its own energy: over
the joined tensor's energy the boxes' (~1e5 x the scores') would rule, and a range that crushes the scores would
count as no error at all -- the guard, too, judges such an output part by part (``measure.layer_errors``).

    ranges, counts = least_error_ranges(model, candidates, samples, float_run, qmin, qmax, symmetric)
"""

from __future__ import annotations

import copy
import math
from collections import Counter

import numpy as np

from converters.quantize.builder import is_float
from converters.quantize.joins import join_parts, output_join
from converters.quantize.scales import affine
from edge_sdk.model.types import Model, SubGraph

FIT_SAMPLES = 16  # calibration samples the choice is measured on
MARGIN = 0.9  # a clipped range is kept when its error is below this share of min / max's (few samples: no noise wins)


def fake_quantized(x: np.ndarray, lo: float, hi: float, qmin: int, qmax: int, symmetric: bool) -> np.ndarray:
    s, z = affine(lo, hi, qmin, qmax, symmetric)
    q = np.clip(np.rint(np.asarray(x, np.float64) / s) + z, qmin, qmax)
    return ((q - z) * s).astype(np.float32)


def measured_at(model: Model) -> dict:
    """{model output: (the tensor its error is measured at, [index of each part in it] or None)}: a float output
    made (through value-moving ops) by a join is measured at the join, part by part; any other at itself."""
    sg = model.subgraphs[0]
    produced = {u: i for i, op in enumerate(sg.operators) for u in op.outputs if u >= 0}
    at = {}
    for o in sg.outputs:
        if not is_float(model, o):
            continue
        j = output_join(model, o, produced)
        at[o] = (j, [index for _, index in join_parts(model, sg.operators[produced[j]])]) if j is not None \
            else (o, None)
    return at


def _downstream(model: Model, t: int, at: dict):
    """An interpreter running the ops that read ``t``, directly or not (graph order), fed every value they read
    from outside (``t`` among them), giving the tensors the model outputs they write are measured at (``at``:
    ``measured_at``): (interpreter, its inputs, those tensors)."""
    from edge_sdk.runtime.interpreter import Interpreter

    sg = model.subgraphs[0]
    reached, ops = {t}, []
    for op in sg.operators:
        if any(u in reached for u in op.inputs if u >= 0):
            ops.append(op)
            reached.update(u for u in op.outputs if u >= 0)
    written = {u for op in ops for u in op.outputs if u >= 0}
    ins = list(dict.fromkeys(u for op in ops for u in op.inputs
                             if u >= 0 and u not in written and not sg.tensors[u].buffer))
    # an output measured at ``t`` itself (t its join) is measured there by the caller; one after its join (t
    # between the join and the output) is measured whole
    outs = list(dict.fromkeys(at[u][0] if at[u][0] in written else u for u in sg.outputs
                              if u in written and u in at and at[u][0] != t))
    if not ops or not outs:
        return None
    one = copy.copy(model)
    one.subgraphs = [SubGraph(tensors=sg.tensors, inputs=ins, outputs=outs, operators=ops)]
    one.signature_defs = []
    interp = Interpreter(model=one)
    interp.allocate_tensors()
    return interp, ins, outs


def least_error_ranges(model: Model, cands: dict, samples: list, float_run, qmin: int, qmax: int,
                       symmetric: bool) -> tuple[dict, Counter]:
    """({tensor: (lo, hi)} for every tensor of ``cands`` ({tensor: {name: (lo, hi)}}, min / max first:
    ``calibrate.range_candidates``), how many tensors took each candidate)."""
    sg = model.subgraphs[0]
    if len(model.subgraphs) > 1:  # IF / WHILE bodies: not cut into parts here
        return {t: c["minmax"] for t, c in cands.items()}, Counter(minmax=len(cands))
    open_t = [t for t, c in cands.items() if len(c) > 1]
    at = measured_at(model)
    runs = {t: _downstream(model, t, at) for t in open_t}
    outputs = set(sg.outputs)
    parts = {m: index for m, index in at.values()}  # measured tensor -> its parts' indexes (None: whole)
    err = {t: np.zeros(len(cands[t])) for t in open_t}  # per candidate: the model outputs' relative error, summed
    for sample in samples:
        ref = dict(float_run(sample))
        ref.update({t: np.asarray(x) for t, x in zip(sg.inputs, sample)})
        energy: dict = {}
        for t in open_t:
            if t not in ref:
                continue
            x = np.asarray(ref[t])
            run = runs[t]
            for k, (lo, hi) in enumerate(cands[t].values()):
                xq = fake_quantized(x, lo, hi, qmin, qmax, symmetric)
                if t in parts or t in outputs:  # measured itself: its own error (a join's part by part)
                    err[t][k] += _parts_relative(x.astype(np.float64), xq, parts.get(t), energy, t)
                if run is None:
                    continue
                interp, ins, outs = run
                interp.reset_all_variables()
                for u in ins:
                    interp.set_tensor(u, (xq if u == t else np.asarray(ref[u])).reshape(sg.tensors[u].shape))
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    interp.invoke()
                for o in outs:
                    f = np.asarray(ref[o], np.float64)
                    err[t][k] += _parts_relative(f, interp.get_tensor(o), parts.get(o), energy, o)
    ranges, counts = {}, Counter()
    for t, c in cands.items():
        names = list(c)
        best = "minmax"
        if t in err and np.isfinite(err[t]).any():
            k = int(np.argmin(err[t]))
            if err[t][k] < MARGIN * err[t][0] or not np.isfinite(err[t][0]):
                best = names[k]
        ranges[t] = c[best]
        counts[best] += 1
    return ranges, counts


def _parts_relative(f: np.ndarray, q: np.ndarray, index: list | None, energy: dict, key) -> float:
    """``_relative`` of the whole value ``f`` (any shape; ``q`` of its size), or with ``index`` (a join's parts:
    ``measured_at``) the sum of each part's, each over its own energy."""
    if index is None:
        return _relative(f.reshape(-1), np.asarray(q).reshape(-1), energy, key)
    q = np.asarray(q).reshape(f.shape)
    return sum(_relative(f[ix].reshape(-1), q[ix].reshape(-1), energy, (key, k)) for k, ix in enumerate(index))


def _relative(f: np.ndarray, q: np.ndarray, energy: dict, key) -> float:
    """sum (f - q)^2 / sum f^2 on the finite elements of the float value ``f``."""
    keep = np.isfinite(f)
    if not keep.all():
        f, q = f[keep], q[keep]
    if key not in energy:
        energy[key] = float(np.einsum("i,i->", f, f))  # on this thread, as measure.dot (not OpenBLAS)
    d = f - np.asarray(q, np.float64)
    e = float(np.einsum("i,i->", d, d))
    if not math.isfinite(e):
        return math.inf
    return e / energy[key] if energy[key] > 0 else e
