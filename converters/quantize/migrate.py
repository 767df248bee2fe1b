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
    from converters.calibration import CalibrationData, calibration_data
    from converters.quantize.calibrate import Runner

    data = calibration_data(calibration, inputs=model, limit=limit, label=None)
    reiter = isinstance(data, CalibrationData) and data.reiterable
    run = Runner(model)
    maxima = {t: None for t in tensors}
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
            v = np.abs(np.asarray(values[t], np.float64))
            v = np.where(np.isfinite(v), v, 0.0).reshape(-1, v.shape[-1]).max(axis=0)
            maxima[t] = v if maxima[t] is None else np.maximum(maxima[t], v)
    return maxima, (calibration if reiter else kept)


def migrate(model: Model, calibration, limit=None, holdout: int = 0) -> tuple[Model, list[dict], object]:
    """SmoothQuant migration of every map ``find_maps`` finds whose channel maxima spread ``MIN_SPREAD`` or more.
    Returns (the model -- a copy when changed --, per map what was done, the calibration to hand on)."""
    maps = find_maps(model)
    if not maps or calibration is None:
        return model, [], calibration
    maxima, calibration = channel_maxima(model, [m["output"] for m in maps], calibration, limit, holdout)
    m = _own_copy(model)
    sg = m.subgraphs[0]
    done = []
    for mp in maps:
        x = maxima.get(mp["output"])
        if x is None or not np.all(np.isfinite(x)):
            continue
        live = x > 0
        if live.sum() < 2 or x[live].max() / x[live].min() < MIN_SPREAD:
            continue
        weights = []
        for j, axis in mp["readers"]:
            op = sg.operators[j]
            wt = op.inputs[op_table.row(G.op_name(m, op)).weights[0]]
            weights.append((wt, axis, np.asarray(m.tensor_data(0, wt), np.float64)))
        w = np.max([np.abs(np.moveaxis(v, a, 0)).max(axis=1) for _, a, v in weights], axis=0)
        s = np.ones_like(x)
        ok = live & (w > 0)
        s[ok] = x[ok] ** ALPHA / w[ok] ** (1.0 - ALPHA)
        for k, const in mp["ops"]:  # gamma and beta divided by s: the map's output channel c is x_c / s_c
            v = np.asarray(m.tensor_data(0, const), np.float64)
            shape = v.shape
            set_own_constant(m, k, list(sg.operators[k].inputs).index(const),
                             (v.reshape(-1) / s).reshape(shape).astype(np.float32))
        for wt, axis, v in weights:  # each reader's input column c times s_c
            shape = [1, 1]
            shape[axis] = -1
            G.set_constant(m, wt, (v * s.reshape(shape)).astype(np.float32))
        after = x / s
        done.append({"output": sg.tensors[mp["output"]].name, "ops": [G.op_name(m, sg.operators[k])
                                                                       for k, _ in mp["ops"]],
                     "readers": len(mp["readers"]), "channels": int(mp["channels"]),
                     "spread_before": float(x[live].max() / x[live].min()),
                     "spread_after": float(after[live].max() / after[live].min())})
    if not done:
        return model, [], calibration
    return m, done, calibration


def prepare(model: Model, calibration, limit, holdout: int, report: dict) -> tuple[Model, object]:
    """The migration (see the module docstring), said in the report: ``report["migrated"]`` (per map) and a
    note."""
    model, done, calibration = migrate(model, calibration, limit, holdout)
    report["migrated"] = done
    if done:
        log.stage(f"migrated the channel spread of {len(done)} per-channel map(s) into their readers' weights")
        report["notes"].append(
            f"activation-to-weight migration (SmoothQuant, alpha {ALPHA}) of {len(done)} per-channel map(s) into "
            f"their {sum(d['readers'] for d in done)} fully-connected reader(s): channel maxima at most "
            f"{max(d['spread_before'] for d in done):.3g}x apart before, {max(d['spread_after'] for d in done):.3g}x "
            "after")
    return model, calibration
