"""Cross-layer equalization (Nagel et al., "Data-Free Quantization", 2019) before int8 quantization.

A convolution's output channel c scaled by 1 / s_c (its weights and bias), and the next convolution's input
channel c scaled by s_c (its weights), compute the same function when the activation between them commutes with
a positive per-channel scale: none, a fused RELU (the row's ``activation_range`` (0, inf)), or an op whose row says
``homogeneous`` (RELU, PRELU, LEAKY_RELU: f(s x) = s f(x) for s > 0). With s_c = sqrt(r1_c / r2_c), r1_c the
largest |weight| of the first op's output channel c and r2_c that of the second op's input channel c, both become
sqrt(r1_c r2_c): a depthwise convolution whose channels differ by orders of magnitude no longer crushes its small
channels under one per-tensor activation scale (MobileNet-style nets lose most of their int8 accuracy there).

Pairs: a weighted op (the row's ``weights``: output-channel axis) whose output is read only by the activation or
directly by a second op (through any ops that only move values or zero-pad -- the ONNX importer leaves an NCHW /
NHWC TRANSPOSE pair and a PAD between every two convs -- the channel axis followed through each by running the op
on a probe: ``_carried_axis``) whose row gives ``in_channel_axis`` (CONV_2D; DEPTHWISE_CONV_2D with one output channel
per input channel) and whose weights are float32 constants read by that op only. Equalized only where the first
op's channel ranges differ by ``MIN_SPREAD`` or more (elsewhere there is little to gain); chains are swept until
the scales settle (at most ``MAX_SWEEPS``).

``equalize(model) -> (model, pairs)``: a copy of the model (tensors and buffer list copied, the input untouched)
and what was equalized, for the quantization report.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from converters import graph as G
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table

MIN_SPREAD = 4.0  # largest / smallest channel range of the first op's weights at which a pair is equalized
MAX_SWEEPS = 8
SETTLED = 0.01  # a sweep whose scales all stay within 1% of 1 ends the sweeps


def editable_copy(model: Model) -> Model:
    """A copy of subgraph 0 whose tensors, operators' input lists and buffer list can change (buffers' bytes and
    options are shared with ``model``)."""
    m = copy.copy(model)
    m.buffers = list(model.buffers)
    m.subgraphs = list(model.subgraphs)
    sg = copy.copy(model.subgraphs[0])
    sg.tensors = [copy.copy(t) for t in sg.tensors]
    sg.operators = [copy.copy(op) for op in sg.operators]
    for op in sg.operators:
        op.inputs = list(op.inputs)
    m.subgraphs[0] = sg
    return m


def set_own_constant(model: Model, i: int, k: int, value: np.ndarray) -> None:
    """Input k of op i becomes ``value``: the tensor itself when only op i reads it, else a new tensor (a bias
    shared by several layers, as converters dedupe all-zero ones, keeps its value for the others). ``model``: an
    ``editable_copy``."""
    sg = model.subgraphs[0]
    t = sg.operators[i].inputs[k]
    if sum(t in op.inputs for op in sg.operators) == 1:
        G.set_constant(model, t, value)
    else:
        sg.operators[i].inputs[k] = G.add_constant(model, sg.tensors[t].name, value, sg.tensors[t].type)


def _scales_through(model: Model, op) -> bool:
    """The op between the pair commutes with a positive per-channel scale (its row's ``homogeneous``)."""
    return op_table.row(G.op_name(model, op)).homogeneous


def _fused_ok(model: Model, op) -> bool:
    """The first op's fused activation commutes with a positive scale: none or a clamp at 0 / infinity."""
    act = G.options(model, op).get("fused_activation_function", "NONE") or "NONE"
    if act == "NONE":
        return True
    bounds = op_table.row(act).activation_range
    return bounds is not None and bounds[0] in (0.0, -math.inf) and bounds[1] == math.inf


def _through(model: Model, op1, between: list[int]) -> str:
    """What lies between a pair, for the report: its activation (the fused one, or the op) and the ops that only
    move or pad values (``RELU``, ``PRELU + TRANSPOSE x2``, ``NONE + TRANSPOSE x2 + PAD``)."""
    names = [G.op_name(model, model.subgraphs[0].operators[k]) for k in between]
    acts = [n for n in names if op_table.row(n).homogeneous]
    moved = [n for n in names if n not in acts]
    text = acts[0] if acts else (G.options(model, op1).get("fused_activation_function", "NONE") or "NONE")
    for n in dict.fromkeys(moved):
        text += f" + {n}" + (f" x{moved.count(n)}" if moved.count(n) > 1 else "")
    return text


def _channel_max(w: np.ndarray, axis: int) -> np.ndarray:
    return np.abs(np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)).max(axis=1)


def _zero_padded(model: Model, op) -> bool:
    """A pad op whose fill is zero (none given, or a constant 0): it commutes with a per-channel scale."""
    if len(op.inputs) < 3 or op.inputs[2] < 0:
        return True
    fill = G.constant_value(model, op.inputs[2])
    return fill is not None and not np.any(np.asarray(fill))


def _carried_axis(model: Model, i: int, axis: int) -> int | None:
    """Where an op that only moves values (its row's ``moves_values``: a TRANSPOSE of the ONNX importer's NCHW /
    NHWC layout) or zero-pads (family "pad") puts input 0's channel axis ``axis``: the output axis along which the
    channel index runs, in order, when the op is run on a probe tensor holding (channel index + 1) -- the op's own
    kernel says it, no op name needed. None: channels mixed, merged or reordered (a RESHAPE that folds them)."""
    sg = model.subgraphs[0]
    op = sg.operators[i]
    shape = list(sg.tensors[op.inputs[0]].shape or ())
    if not shape or any(d <= 0 for d in shape) or not op.outputs or any(
            t >= 0 and not G.is_constant(model, t) for t in op.inputs[1:]):
        return None
    probe_shape = [1] * len(shape)
    probe_shape[axis] = shape[axis]
    probe = np.broadcast_to(np.arange(1, shape[axis] + 1, dtype=np.float32).reshape(probe_shape), shape)
    m = editable_copy(model)
    m.subgraphs[0].operators[i].inputs[0] = G.add_constant(m, "equalize/probe", np.ascontiguousarray(probe))
    from converters.passes.fold_constants import evaluate

    out = evaluate(m, i)
    if not out:
        return None
    y = out[0]
    channels = np.arange(1, shape[axis] + 1, dtype=np.float32)
    for k in range(y.ndim):
        if y.shape[k] != shape[axis]:
            continue
        ref = np.broadcast_to(channels.reshape([-1 if d == k else 1 for d in range(y.ndim)]), y.shape)
        if np.all((y == ref) | (y == 0)):  # zeros: a pad's fill
            return k
    return None


def find_pairs(model: Model) -> list[tuple[int, list[int], int]]:
    """(first op, the ops between, second op) of every pair that may be equalized (see the module docstring):
    between them, in a chain of sole readers, at most one activation that commutes with a positive per-channel scale
    (``homogeneous``) and any ops that only move values or zero-pad (the ONNX importer's layout TRANSPOSEs, PAD),
    the channel axis followed through each."""
    sg = model.subgraphs[0]
    cons = G.consumers(model)
    pairs = []

    def const_of_one(t: int) -> bool:
        return t >= 0 and G.is_constant(model, t) and sg.tensors[t].type == "FLOAT32" and len(cons.get(t, [])) == 1

    for i, op in enumerate(sg.operators):
        row = op_table.row(G.op_name(model, op))
        if row.weights is None or row.weights[2] is None or not op.outputs or not _fused_ok(model, op):
            continue
        wi, bi, _ = row.weights
        if len(op.inputs) <= wi or not const_of_one(op.inputs[wi]):
            continue
        bias = op.inputs[bi] if bi is not None and len(op.inputs) > bi else -1
        if bias >= 0 and not (G.is_constant(model, bias) and sg.tensors[bias].type == "FLOAT32"):
            continue
        data_in = op.outputs[0]
        shape = sg.tensors[data_in].shape
        if not shape:
            continue
        axis, channels = len(shape) - 1, shape[-1]  # a weighted op's output channels: its output's last axis
        between, moved, activations = [], [], 0
        j = G.sole_consumer(model, data_in, cons=cons)
        while j is not None:
            nxt = sg.operators[j]
            nrow = op_table.row(G.op_name(model, nxt))
            if not nxt.outputs or nxt.inputs[0] != data_in or any(t == data_in for t in nxt.inputs[1:]):
                j = None
            elif nrow.homogeneous and activations == 0:
                activations += 1
            elif nrow.moves_values or (nrow.family == "pad" and _zero_padded(model, nxt)):
                moved.append(j)  # where it puts the channels: probed once the chain ends at a second op
            else:
                break
            if j is None:
                break
            between.append(j)
            data_in = nxt.outputs[0]
            j = G.sole_consumer(model, data_in, cons=cons)
        if j is None:
            continue
        nxt = sg.operators[j]
        second = op_table.row(G.op_name(model, nxt))
        if second.in_channel_axis is None or second.weights is None or not nxt.inputs:
            continue
        w2 = nxt.inputs[second.weights[0]]
        for k in moved:
            axis = _carried_axis(model, k, axis) if axis is not None else None
        in_shape = sg.tensors[data_in].shape
        if nxt.inputs[0] != data_in or not const_of_one(w2) or not in_shape or axis != len(in_shape) - 1:
            continue
        w2_shape = sg.tensors[w2].shape
        if not channels or w2_shape[second.in_channel_axis] != channels \
                or (second.in_channel_axis == second.weights[2] and w2_shape[second.weights[2]] != channels):
            continue
        pairs.append((i, between, j))
    return pairs


def activation_loss_db(maxima: np.ndarray) -> float:
    """What one per-tensor scale costs a tensor's channels: the mean over its live channels of how far each
    channel's largest |value| sits below the tensor's (dB) -- the SNR each channel loses to the shared quantum."""
    live = maxima[maxima > 0]
    return float(np.mean(20 * np.log10(live.max() / live))) if live.size else 0.0


def _scale_pair(m: Model, i: int, j: int, s: np.ndarray) -> None:
    """The first op's output channels divided by s (weights and bias), the second op's input channels times s."""
    sg = m.subgraphs[0]
    op1, op2 = sg.operators[i], sg.operators[j]
    wi1, bi1, ax1 = op_table.row(G.op_name(m, op1)).weights
    row2 = op_table.row(G.op_name(m, op2))
    w1 = np.asarray(m.tensor_data(0, op1.inputs[wi1]), np.float64)
    w2 = np.asarray(m.tensor_data(0, op2.inputs[row2.weights[0]]), np.float64)
    shape1 = [1] * w1.ndim
    shape1[ax1] = -1
    G.set_constant(m, op1.inputs[wi1], (w1 / s.reshape(shape1)).astype(np.float32))
    if bi1 is not None and len(op1.inputs) > bi1 and op1.inputs[bi1] >= 0:
        b1 = np.asarray(m.tensor_data(0, op1.inputs[bi1]), np.float64)
        set_own_constant(m, i, bi1, (b1 / s).astype(np.float32).reshape(b1.shape))
    shape2 = [1] * w2.ndim
    shape2[row2.in_channel_axis] = -1
    G.set_constant(m, op2.inputs[row2.weights[0]], (w2 * s.reshape(shape2)).astype(np.float32))


def equalize(model: Model, min_spread: float = MIN_SPREAD,
             activation_maxima: dict[int, np.ndarray] | None = None) -> tuple[Model, list[dict]]:
    """Cross-layer equalization of every pair (see the module docstring). Returns the equalized copy (the model
    itself when nothing was equalized) and per pair what was done.

    activation_maxima: per first op's output tensor, its channels' largest |value| on calibration data (last axis).
    The weight ranges only stand in for the activation's: where the pair's scales would leave that activation's
    channels further apart (``activation_loss_db`` higher: palm_detection_lite's depthwise outputs, 19 of 22
    pairs, -1.7 dB at its outputs), the pair is left as it was (its entry says ``kept`` False)."""
    pairs = find_pairs(model)
    if not pairs:
        return model, []
    sg = model.subgraphs[0]
    chosen = []
    for i, between, j in pairs:
        wi, _, axis = op_table.row(G.op_name(model, sg.operators[i])).weights
        r1 = _channel_max(np.asarray(model.tensor_data(0, sg.operators[i].inputs[wi]), np.float64), axis)
        live = r1[r1 > 0]
        if live.size >= 2 and live.max() / live.min() >= min_spread:
            chosen.append((i, between, j, float(live.max() / live.min())))
    if not chosen:
        return model, []
    m = editable_copy(model)
    sg = m.subgraphs[0]
    total = [None] * len(chosen)  # each pair's scales over every sweep (they multiply)
    for _ in range(MAX_SWEEPS):
        moved = 0.0
        for k, (i, _between, j, _) in enumerate(chosen):
            op1, op2 = sg.operators[i], sg.operators[j]
            wi1, _, ax1 = op_table.row(G.op_name(m, op1)).weights
            row2 = op_table.row(G.op_name(m, op2))
            w1 = np.asarray(m.tensor_data(0, op1.inputs[wi1]), np.float64)
            w2 = np.asarray(m.tensor_data(0, op2.inputs[row2.weights[0]]), np.float64)
            r1, r2 = _channel_max(w1, ax1), _channel_max(w2, row2.in_channel_axis)
            s = np.ones_like(r1)
            live = (r1 > 0) & (r2 > 0)
            s[live] = np.sqrt(r1[live] / r2[live])
            moved = max(moved, float(np.abs(np.log(s)).max()))
            total[k] = s if total[k] is None else total[k] * s
            _scale_pair(m, i, j, s)
        if moved < math.log1p(SETTLED):
            break
    losses = [None] * len(chosen)  # (before, after) dB, where the activation was measured
    for k, (i, _, _, _) in enumerate(chosen):
        x = (activation_maxima or {}).get(model.subgraphs[0].operators[i].outputs[0])
        if x is not None and np.size(x) == total[k].size and np.all(np.isfinite(x)):
            x = np.asarray(x, np.float64).reshape(-1)
            losses[k] = (activation_loss_db(x), activation_loss_db(x / total[k]))
    kept = [loss is None or loss[1] <= loss[0] for loss in losses]
    if not any(kept):
        return model, [{"first": model.subgraphs[0].tensors[model.subgraphs[0].operators[i].outputs[0]].name,
                        "kept": False, "activation_loss_db": losses[k]} for k, (i, *_) in enumerate(chosen)]
    if not all(kept):  # the kept pairs' scales, as the sweeps found them, on the model as it was
        m = editable_copy(model)
        sg = m.subgraphs[0]
        for k, (i, _, j, _) in enumerate(chosen):
            if kept[k]:
                _scale_pair(m, i, j, total[k])
    done = []
    for k, (i, between, j, before) in enumerate(chosen):
        op1 = sg.operators[i]
        wi1, _, ax1 = op_table.row(G.op_name(m, op1)).weights
        r1 = _channel_max(np.asarray(m.tensor_data(0, op1.inputs[wi1]), np.float64), ax1)
        live = r1[r1 > 0]
        entry = {"first": sg.tensors[op1.outputs[0]].name, "first_op": G.op_name(m, op1),
                 "through": _through(m, op1, between),
                 "second": sg.tensors[sg.operators[j].outputs[0]].name,
                 "second_op": G.op_name(m, sg.operators[j]), "channels": int(r1.size),
                 "spread_before": before, "spread_after": float(live.max() / live.min()) if live.size else 1.0}
        if losses[k] is not None:
            entry["activation_loss_db"] = losses[k]
        if not kept[k]:
            entry["kept"] = False
        done.append(entry)
    return m, done
