"""An exact rewrite of the float model that makes its int8 version better, before calibration (issue 24 point 4).
It changes constants only (no op is added or removed: the op indices the quantizer resolved before stay valid).
(A bias ADD the ONNX importer leaves after a MatMul is folded into the layer by convert's own passes,
``converters.passes.batchnorm``, before the quantizer sees the model.)

- **Activation-to-weight migration (SmoothQuant, Xiao et al. 2023).** A per-channel affine map (a MUL by a constant
  vector along the last axis, then optionally an ADD of one: a LayerNorm's gamma / beta) whose every reader is a
  fully-connected layer: channel c of its output divided by s_c (gamma and beta divided), each reader's input
  column c multiplied by s_c -- the same function in float. With s_c = max|x_c|^ALPHA / max|w_c|^(1 - ALPHA) (x_c's
  largest magnitude on the calibration samples, w_c's over every reader), a few outlier channels (as trained
  transformers' norms have) no longer set the per-tensor scale every other channel is crushed under; the readers'
  per-output-channel int8 weights take the spread.
- **Channel shift (Outlier Suppression+, Wei et al. 2023)**, first, where the map ends in an ADD and every reader
  has a bias of its own: channel c loses its centre z_c = (min_c + max_c) / 2 on the calibration samples (the
  ADD's constant minus z), each reader's bias gains W z -- the same function in float. A channel that varies
  little around a large offset no longer sets the per-tensor scale with its offset: the scale follows the
  channels' spreads (a head whose bias cancels W times the features' mean reads only their variation: the
  rec-like stand-in's CTC FC in int8 alone 5.4 -> 25.9 dB, its strings 0.40 -> 0.80).

``prepare(model, calibration, limit, holdout, report) -> (model, calibration)``: the rewritten copy (the model itself
when nothing applied) and the calibration to hand on (the samples as a list when the source was a one-shot
iterator). ``report["migrated"]``: per map, what was done.
"""

from __future__ import annotations

import numpy as np

from converters import graph as G
from converters.passes.equalize import editable_copy, set_own_constant
from edge_sdk import log
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table

ALPHA = 0.5  # SmoothQuant's migration strength: half the activation's channel spread goes into the weights
STAT_SAMPLES = 8  # calibration samples whose per-channel maxima set the migration
MIN_SPREAD = 4.0  # a map whose output channels' maxima are closer than this is left alone


def _own_copy(model: Model) -> Model:
    m = editable_copy(model)
    for op in m.subgraphs[0].operators:
        op.options = dict(op.options) if isinstance(op.options, dict) else op.options
    return m


def _vector(model: Model, t: int, channels: int) -> np.ndarray | None:
    """Constant ``t`` as a per-channel [channels] vector along the last axis, else None."""
    v = G.constant_value(model, t) if G.is_constant(model, t) else None
    if v is None or v.dtype != np.float32 or v.size != channels or (v.ndim and v.shape[-1] != channels):
        return None
    return v.reshape(channels).astype(np.float64)


def _affine_step(model: Model, op, kind: str):
    """(data input, constant input) of an op whose row's ``affine`` is ``kind`` (the constant either side of a
    commutative one), else None."""
    if op_table.row(G.op_name(model, op)).affine != kind or len(op.inputs) != 2 or not op.outputs:
        return None
    if G.options(model, op).get("fused_activation_function", "NONE") not in ("NONE", None):
        return None
    a, b = op.inputs
    if G.is_constant(model, a):
        a, b = b, a
    if G.is_constant(model, a) or not G.is_constant(model, b):
        return None
    return a, b


def _fc_reader(model: Model, j: int, t: int, channels: int, cons: dict) -> int | None:
    """The input-channel axis of reader j's weights when it is a weighted layer with 2-D constant float32 weights
    read by it alone, reading ``t`` as its data input; else None."""
    op = model.subgraphs[0].operators[j]
    row = op_table.row(G.op_name(model, op))
    if row.weights is None or row.weights[2] is None or not op.inputs or op.inputs[0] != t or t in op.inputs[1:]:
        return None
    w = op.inputs[row.weights[0]]
    shape = model.subgraphs[0].tensors[w].shape
    if not G.is_constant(model, w) or model.subgraphs[0].tensors[w].type != "FLOAT32" or len(shape) != 2 \
            or len(cons.get(w, [])) != 1:
        return None
    axis = 1 - row.weights[2]  # 2-D weights: the axis that is not the output channels'
    return axis if shape[axis] == channels else None


def find_maps(model: Model) -> list[dict]:
    """Every per-channel affine map (scale, then optionally add) whose readers are all 2-D weighted layers."""
    sg = model.subgraphs[0]
    cons = G.consumers(model)
    found = []
    for i, op in enumerate(sg.operators):
        step = _affine_step(model, op, "scale")
        if step is None:
            continue
        out = op.outputs[0]
        shape = sg.tensors[out].shape
        if not shape or len(shape) < 2 or shape[-1] < 2:
            continue
        channels = shape[-1]
        if _vector(model, step[1], channels) is None or sg.tensors[step[0]].shape != shape:
            continue
        ops = [(i, step[1])]
        users = cons.get(out, [])
        if len(users) == 1 and not G.is_graph_output(model, out):
            shift = _affine_step(model, sg.operators[users[0]], "add")
            if shift is not None and shift[0] == out and _vector(model, shift[1], channels) is not None \
                    and sg.tensors[sg.operators[users[0]].outputs[0]].shape == shape:
                ops.append((users[0], shift[1]))
                out = sg.operators[users[0]].outputs[0]
                users = cons.get(out, [])
        if not users or G.is_graph_output(model, out):
            continue
        axes = [_fc_reader(model, j, out, channels, cons) for j in users]
        if any(a is None for a in axes):
            continue
        found.append({"ops": ops, "output": out, "readers": list(zip(users, axes)), "channels": channels})
    return found


def channel_maxima(model: Model, tensors: list[int], calibration, limit, holdout: int):
    """Per tensor, the largest |value| of each last-axis channel on the first ``STAT_SAMPLES`` calibration samples
    (the held-back ones skipped as ``calibrate`` skips them). Returns (maxima, the calibration to hand on)."""
    extremes, calibration = channel_extremes(model, tensors, calibration, limit, holdout)
    maxima = {t: None if e is None else np.maximum(np.maximum(-e[0], e[1]), 0.0) for t, e in extremes.items()}
    return maxima, calibration


def channel_extremes(model: Model, tensors: list[int], calibration, limit, holdout: int):
    """Per tensor, (smallest, largest) value of each last-axis channel ([channels] each) on the first
    ``STAT_SAMPLES`` calibration samples (the held-back ones skipped as ``calibrate`` skips them; non-finite values
    left out). Returns (extremes, the calibration to hand on)."""
    from converters.calibration import CalibrationData, calibration_data
    from converters.quantize.calibrate import Runner

    data = calibration_data(calibration, inputs=model, limit=limit, label=None)
    reiter = isinstance(data, CalibrationData) and data.reiterable
    run = Runner(model)
    extremes = {t: None for t in tensors}
    kept, used, n_held = [], 0, 0
    for k, sample in enumerate(data):
        if not reiter:
            kept.append(sample)
        elif used >= STAT_SAMPLES:
            break
        if holdout and k % 5 == 4 and n_held < holdout:
            n_held += 1
            continue
        if used >= STAT_SAMPLES:
            continue
        used += 1
        values = run(sample)
        for t in tensors:
            v = np.asarray(values[t], np.float64)
            v = v.reshape(-1, v.shape[-1])
            finite = np.isfinite(v)
            lo = np.where(finite, v, np.inf).min(axis=0)
            hi = np.where(finite, v, -np.inf).max(axis=0)
            e = extremes[t]
            extremes[t] = (lo, hi) if e is None else (np.minimum(e[0], lo), np.maximum(e[1], hi))
    return extremes, (calibration if reiter else kept)


def migrate(model: Model, calibration, limit=None, holdout: int = 0,
            shift: bool = True) -> tuple[Model, list[dict], object]:
    """The shift and the SmoothQuant migration of every map ``find_maps`` finds (see the module docstring): each
    map's channels centred where it ends in an ADD and every reader has a bias of its own (``_shift``), then scaled
    where their maxima spread ``MIN_SPREAD`` or more (``_scale``). Returns (the model -- a copy when changed --, per
    map what was done, the calibration to hand on). ``shift`` False: the scaling alone."""
    maps = find_maps(model)
    if not maps or calibration is None:
        return model, [], calibration
    extremes, calibration = channel_extremes(model, [m["output"] for m in maps], calibration, limit, holdout)
    m = _own_copy(model)
    done = []
    for mp in maps:
        e = extremes.get(mp["output"])
        if e is None or not (np.all(np.isfinite(e[0])) and np.all(np.isfinite(e[1]))):
            continue
        lo, hi = e
        centres = _shift(m, mp, lo, hi) if shift else None
        if centres is not None:  # channel c now spans lo_c - z_c .. hi_c - z_c
            lo, hi = lo - centres, hi - centres
        x = np.maximum(np.maximum(-lo, hi), 0.0)
        s = _scale(m, mp, x)
        if centres is None and s is None:
            continue
        s = np.ones_like(x) if s is None else s
        live = x > 0
        sg = m.subgraphs[0]
        done.append({"output": sg.tensors[mp["output"]].name,
                     "ops": [G.op_name(m, sg.operators[k]) for k, _ in mp["ops"]],
                     "readers": len(mp["readers"]), "channels": int(mp["channels"]),
                     "spread_before": float(x[live].max() / x[live].min()),
                     "spread_after": float((x / s)[live].max() / (x / s)[live].min()),
                     "shifted": centres is not None,
                     "range_before": [float(e[0].min()), float(e[1].max())],
                     "range_after": [float((lo / s).min()), float((hi / s).max())]})
    if not done:
        return model, [], calibration
    return m, done, calibration


def _reader_weights(m: Model, mp: dict) -> list[tuple[int, int, np.ndarray]]:
    """(weights tensor, input-channel axis, value) of each reader of map ``mp``."""
    sg = m.subgraphs[0]
    found = []
    for j, axis in mp["readers"]:
        op = sg.operators[j]
        wt = op.inputs[op_table.row(G.op_name(m, op)).weights[0]]
        found.append((wt, axis, np.asarray(m.tensor_data(0, wt), np.float64)))
    return found


def _reader_biases(m: Model, mp: dict) -> list[int] | None:
    """Each reader's bias tensor (float32 [out], read by that reader alone), or None when one has none."""
    sg = m.subgraphs[0]
    cons = G.consumers(m)
    biases = []
    for j, _ in mp["readers"]:
        op = sg.operators[j]
        k = op_table.row(G.op_name(m, op)).weights[1]
        b = op.inputs[k] if k is not None and k < len(op.inputs) else -1
        if b < 0 or not G.is_constant(m, b) or sg.tensors[b].type != "FLOAT32" or len(cons.get(b, [])) != 1:
            return None
        biases.append(b)
    return biases


def _shift(m: Model, mp: dict, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """Outlier Suppression+'s shift (Wei et al. 2023): channel c of the map's output loses its centre
    z_c = (lo_c + hi_c) / 2 (its ADD's constant minus z), each reader's bias gains W z -- the same function in
    float. A channel whose values sit far from zero (a LayerNorm's beta, or a mean the data gives it) then spans
    only its own variation, and the per-tensor scale is set by the widest channel's spread, not by the channels'
    offsets: a reader whose weights amplify small variations (its bias cancelling W times the mean) no longer reads
    them under a scale set by the offsets (the rec-like stand-in's CTC FC: +-2000 before its bias, +-40 after).
    Only where the map ends in an ADD and every reader has a float32 bias of its own; returns z, or None."""
    if len(mp["ops"]) < 2:
        return None
    biases = _reader_biases(m, mp)
    if biases is None:
        return None
    z = (lo + hi) / 2.0
    if not np.any(z):
        return None
    sg = m.subgraphs[0]
    k, const = mp["ops"][1]
    beta = np.asarray(m.tensor_data(0, const), np.float64)
    set_own_constant(m, k, list(sg.operators[k].inputs).index(const),
                     (beta.reshape(-1) - z).reshape(beta.shape).astype(np.float32))
    for (wt, axis, w), b in zip(_reader_weights(m, mp), biases):
        gain = w @ z if axis == 1 else z @ w  # [out]: what the shift takes from the reader's output
        G.set_constant(m, b, (np.asarray(m.tensor_data(0, b), np.float64) + gain).astype(np.float32))
    return z


def _scale(m: Model, mp: dict, x: np.ndarray) -> np.ndarray | None:
    """SmoothQuant's migration: channel c of the map's output divided by s_c (its constants divided), each reader's
    input column c multiplied by s_c, s_c = x_c^ALPHA / w_c^(1 - ALPHA) (x_c: the channel's largest magnitude,
    w_c: its readers' largest weight in column c). Only where the channel maxima ``x`` spread ``MIN_SPREAD`` or
    more; returns s, or None."""
    live = x > 0
    if live.sum() < 2 or x[live].max() / x[live].min() < MIN_SPREAD:
        return None
    weights = _reader_weights(m, mp)
    w = np.max([np.abs(np.moveaxis(v, a, 0)).max(axis=1) for _, a, v in weights], axis=0)
    s = np.ones_like(x)
    ok = live & (w > 0)
    s[ok] = x[ok] ** ALPHA / w[ok] ** (1.0 - ALPHA)
    sg = m.subgraphs[0]
    for k, const in mp["ops"]:  # gamma and beta divided by s: the map's output channel c is x_c / s_c
        v = np.asarray(m.tensor_data(0, const), np.float64)
        set_own_constant(m, k, list(sg.operators[k].inputs).index(const),
                         (v.reshape(-1) / s).reshape(v.shape).astype(np.float32))
    for wt, axis, v in weights:  # each reader's input column c times s_c
        shape = [1, 1]
        shape[axis] = -1
        G.set_constant(m, wt, (v * s.reshape(shape)).astype(np.float32))
    return s


def prepare(model: Model, calibration, limit, holdout: int, report: dict) -> tuple[Model, object]:
    """The migration (see the module docstring), said in the report: ``report["migrated"]`` (per map) and a
    note."""
    model, done, calibration = migrate(model, calibration, limit, holdout)
    report["migrated"] = done
    if done:
        log.stage(f"migrated the channel spread of {len(done)} per-channel map(s) into their readers' weights")
        shifted = [d for d in done if d["shifted"]]
        report["notes"].append(
            f"activation-to-weight migration (SmoothQuant, alpha {ALPHA}) of {len(done)} per-channel map(s) into "
            f"their {sum(d['readers'] for d in done)} fully-connected reader(s): channel maxima at most "
            f"{max(d['spread_before'] for d in done):.3g}x apart before, {max(d['spread_after'] for d in done):.3g}x "
            "after" + (f"; {len(shifted)} of them centred first (channel offsets into the readers' biases: ranges "
                       + ", ".join(f"{d['range_before'][0]:.3g}..{d['range_before'][1]:.3g} -> "
                                   f"{d['range_after'][0]:.3g}..{d['range_after'][1]:.3g}" for d in shifted[:3])
                       + (" ..." if len(shifted) > 3 else "") + ")" if shifted else ""))
    return model, calibration
