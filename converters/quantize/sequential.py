"""Sequential bias correction: each int8 weighted layer's bias loses the mean per-channel offset of its output
against the float model, measured with the layer's inputs AS THE INT8 MODEL COMPUTES THEM -- every layer before it
already corrected -- layer by layer in the graph's order.

``bias.py``'s correction removes only a layer's own weight rounding, E[dW x] with the float input's mean. A deep
int8 model's offset is mostly inherited: the rounding of every activation before it, through PReLUs and residual
ADDs, leaves a per-channel constant that grows over the cascade (palm_detection_lite: 20-50% of the mid-network
error). Measured on the int8 model itself, the offset at layer k is all of that; removing it at k leaves the layers
after k their own offsets only, which they remove in turn.

Done in one pass over the integer model, cut into segments at its weighted layers: segment j runs ops
[k_(j-1), k_j] (the previous layer again, now with its corrected bias, up to this layer) from the int8 activations
live at the cut, each calibration sample's kept between segments; layer k_j's output is compared with the float
model's, its bias changed, and the next segment starts by running it again. About two runs of the int8 model over
the samples in all, whatever the depth.

Only the integer bias moves: the weights, scales and every other constant stay. A layer whose output the int8
clamp or its fused activation cuts is measured where neither cuts (there a bias moves the output one for one)."""

from __future__ import annotations

import copy

import numpy as np

from converters.quantize.builder import QuantGraph
from converters.quantize.scales import dequantize, quantize_array, round_away
from edge_sdk import log
from edge_sdk.model.types import Buffer, Model, SubGraph
from edge_sdk.runtime import op_table

MIN_SHIFT = 0.05  # a layer's bias moves where some channel's offset reaches this share of its output's quantum
MIN_COUNT = 16  # positions a channel needs (unclamped, over every sample) for its mean offset to count


def _layers(model: Model, qmodel: Model, g: QuantGraph, ops) -> list[tuple[int, int, int, int]]:
    """(op index in qmodel, source op index, source output tensor, int32 bias tensor in qmodel) per int8 weighted
    layer of ``ops`` (source op indices) with an integer bias, in qmodel's op order."""
    sg, qs = model.subgraphs[0], qmodel.subgraphs[0]
    found = []
    for k, qop in enumerate(qs.operators):
        i = g.origin.get(k)
        if i is None or i not in ops:
            continue
        row = op_table.row(model.op_name(sg.operators[i]))
        if row.weights is None:
            continue
        wi, bi, _ = row.weights
        if bi is None or len(qop.inputs) <= bi or qop.inputs[bi] < 0 or not qop.outputs:
            continue
        if (qop.options or {}).get("fused_activation_function", "NONE") not in ("NONE", None):
            continue  # its activation cuts where the int8 and float pre-activations differ: not one for one
        t = sg.operators[i].outputs[0]
        if g.qt.get(t) != qop.outputs[0] or qs.tensors[qop.outputs[0]].type != "INT8" \
                or qs.tensors[qop.inputs[bi]].type != "INT32" or qs.tensors[qop.inputs[wi]].type != "INT8":
            continue
        found.append((k, i, t, qop.inputs[bi]))
    return found


def _feed(model: Model, qmodel: Model, g: QuantGraph, sample) -> dict:
    """The int8 model's inputs for a float sample (integer inputs quantized at their scale, as the guard feeds)."""
    qs = qmodel.subgraphs[0]
    state = {}
    for x, t in zip(sample, model.subgraphs[0].inputs):
        n = g.io_map[t]
        tensor = qs.tensors[n]
        x = np.asarray(x)
        if tensor.type in ("INT8", "INT16") and x.dtype.kind == "f":
            q = tensor.quantization
            lim = np.iinfo(tensor.dtype)
            x = quantize_array(x, q.scale[0], q.zero_point[0], lim.min, lim.max, tensor.dtype)
        state[n] = np.asarray(x).reshape(tensor.shape)
    return state


def _segment(qmodel: Model, ops: list[int], keep: set[int], consts: set[int]):
    """An interpreter of qmodel's ops ``ops`` alone: inputs the non-constant tensors they read and do not write,
    outputs ``keep`` (tensors they write). Returns (interpreter, inputs)."""
    from edge_sdk.runtime.interpreter import Interpreter

    qs = qmodel.subgraphs[0]
    written = {t for k in ops for t in qs.operators[k].outputs if t >= 0}
    ins = list(dict.fromkeys(t for k in ops for t in qs.operators[k].inputs
                             if t >= 0 and t not in consts and t not in written))
    part = copy.copy(qmodel)
    part.subgraphs = [SubGraph(tensors=qs.tensors, inputs=ins, outputs=sorted(keep),
                               operators=[qs.operators[k] for k in ops])]
    part.signature_defs = []
    interp = Interpreter(model=part)
    interp.allocate_tensors()
    return interp, ins


class _FloatSide:
    """Per layer and sample, what the comparison needs of the float model, kept small (a palm-sized model's layer
    outputs are ~19 MB per sample in float32): where the int8 output can follow a bias change (the float value
    inside the output's int8 range and its fused activation's, a quantum clear of either end: a bit mask, None when
    every position is), and per output channel the float values' sum and count there, per sample."""

    def __init__(self, float_run, samples, layers, qs):
        self.masks, self.sums, self.counts = {}, {}, {}
        for s, sample in enumerate(samples):
            values = float_run(sample)
            for k, _, t, _ in layers:
                tensor = qs.tensors[qs.operators[k].outputs[0]]
                fused = (qs.operators[k].options or {}).get("fused_activation_function", "NONE")
                f = np.asarray(values[t], np.float64).reshape(-1, tensor.shape[-1])
                ok = _inside(f, tensor, fused)
                self.masks[(k, s)] = None if ok.all() else np.packbits(ok)
                self.sums[(k, s)] = np.where(ok, f, 0.0).sum(axis=0)
                self.counts[(k, s)] = ok.sum(axis=0)

    def mask(self, k: int, s: int, shape) -> np.ndarray:
        bits = self.masks[(k, s)]
        if bits is None:
            return np.ones(shape, bool)
        return np.unpackbits(bits, count=int(np.prod(shape))).reshape(shape).astype(bool)


def _inside(f: np.ndarray, tensor, fused: str) -> np.ndarray:
    """Where a bias change moves the int8 output one for one: the float value a quantum inside the int8 range and,
    with a fused activation, inside its clamp."""
    q = tensor.quantization
    step = float(q.scale[0])
    lo, hi = (-128 - int(q.zero_point[0])) * step, (127 - int(q.zero_point[0])) * step
    # the clamp of the fused activation: its op-table row's activation_range (RELU (0, inf), RELU6 (0, 6), ...)
    clamp = op_table.row(fused).activation_range if fused not in (None, "NONE") else None
    if clamp is not None:
        lo, hi = max(lo, clamp[0]), min(hi, clamp[1])
    return (f > lo + step) & (f < hi - step)


def _offset(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per channel, the mean offset over every sample's positions ([samples, channels] sums and counts), shrunk by
    how well the samples agree on it: times 1 - (its standard error / it)^2, 0 where that is below 0 or fewer than
    ``MIN_COUNT`` positions were seen. A layer of few positions (a 1 x 16 FC output) would otherwise move by its
    samples' noise: an error the unseen samples do not share."""
    n = counts.sum(axis=0)
    mean = sums.sum(axis=0) / np.maximum(n, 1)
    seen = counts > 0
    per = np.where(seen, sums / np.maximum(counts, 1), 0.0)
    m = seen.sum(axis=0)
    var = np.where(m > 1, (np.where(seen, (per - mean) ** 2, 0.0)).sum(axis=0) / np.maximum(m - 1, 1), np.inf)
    se2 = var / np.maximum(m, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = np.clip(1.0 - se2 / np.maximum(mean ** 2, 1e-300), 0.0, 1.0)
    return np.where(n >= MIN_COUNT, mean * keep, 0.0)


def sequential_shifts(model: Model, qmodel: Model, g: QuantGraph, samples, float_run, ops) -> dict[int, tuple]:
    """Per corrected layer (source op index): (the float offset per output channel its bias loses -- the int8
    model's output minus the float model's, float units --, the largest in output quanta). ``ops``: the source op
    indices that may be corrected; ``samples``: a list (each segment runs them all); ``float_run(sample) ->
    {tensor: value}``: the float model's activations. The int8 model ``qmodel`` is left as it is."""
    qs = qmodel.subgraphs[0]
    layers = _layers(model, qmodel, g, set(ops))
    if not layers or len(model.subgraphs) > 1 or not samples or any(t.is_variable for t in qs.tensors):
        return {}  # control flow or state across invokes (an LSTM's variables): the per-layer correction only
    log.stage(f"sequential bias correction of {len(layers)} int8 layer(s) on {len(samples)} sample(s)")
    floats = _FloatSide(float_run, samples, layers, qs)
    consts = {t for t, tensor in enumerate(qs.tensors) if tensor.buffer and len(qmodel.buffers[tensor.buffer].data)}
    last_read = {}
    for k, op in enumerate(qs.operators):
        for t in op.inputs:
            if t >= 0:
                last_read[t] = k
    buffers = list(qmodel.buffers)  # the biases change in this copy of the list; qmodel keeps its own
    qmodel = copy.copy(qmodel)
    qmodel.buffers = buffers
    states = [_feed(model, qmodel, g, s) for s in samples]
    done, start = {}, 0
    for k, i, t, bt in layers:
        out = qs.operators[k].outputs[0]
        tensor = qs.tensors[out]
        channels = tensor.shape[-1]
        # the int8 activations live at the next cut (written from the previous layer on, read at k or after)
        live = {u for j in range(start, k) for u in qs.operators[j].outputs if u >= 0 and last_read.get(u, -1) >= k}
        interp, ins = _segment(qmodel, list(range(start, k + 1)), live | {out}, consts)
        if any(u not in states[0] for u in ins):  # a value no op here writes: the segments end here
            break
        per_sample = np.zeros((len(states), channels))  # per sample and channel: sum of (int8 - float) there
        for s, state in enumerate(states):
            for u in ins:
                interp.set_tensor(u, state[u])
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                interp.invoke()
            for u in [u for u in state if last_read.get(u, -1) < k]:  # read by no op from k on
                del state[u]
            state.update({u: np.array(interp.get_tensor(u)) for u in live})
            q = dequantize(interp.get_tensor(out), tensor.quantization).reshape(-1, channels)
            per_sample[s] = np.where(floats.mask(k, s, q.shape), q, 0.0).sum(axis=0) - floats.sums[(k, s)]
        shift = _offset(per_sample, np.stack([floats.counts[(k, s)] for s in range(len(states))]))
        step = float(tensor.quantization.scale[0])
        start = k  # the next segment runs k again (with its corrected bias, when it changed)
        if not shift.size or np.abs(shift).max() < MIN_SHIFT * step:
            continue
        bq = qs.tensors[bt]
        bscale = np.broadcast_to(np.asarray(bq.quantization.scale, np.float64), shift.shape)
        old = np.frombuffer(buffers[bq.buffer].data, np.int32).astype(np.int64)
        moved = np.clip(old - round_away(shift / bscale).astype(np.int64), -2**31, 2**31 - 1)
        buffers[bq.buffer] = Buffer(moved.astype(np.int32).tobytes())
        done[i] = ((old - moved) * bscale, float(np.abs(shift).max()) / step)
    return done


def sequential_corrected(model: Model, qmodel: Model, g: QuantGraph, samples, float_run,
                         excluded) -> tuple[Model, list[dict]]:
    """``model`` (the quantizer's source, its biases as ``qmodel`` was built from them) with every int8 layer's
    bias corrected sequentially (``sequential_shifts``), and per corrected layer what changed; the model itself when
    nothing moved."""
    from converters.quantize.bias import shifted

    ops = set(range(len(model.subgraphs[0].operators))) - set(excluded)
    return shifted(model, sequential_shifts(model, qmodel, g, list(samples), float_run, ops))


def downstream(model: Model, ops) -> set[int]:
    """``ops`` and every op that reads, directly or not, what they write: the layers whose sequential correction
    was fitted to the int8 values of ``ops`` (stale once the guard widens them)."""
    sg = model.subgraphs[0]
    reached = set(ops)
    tainted = {t for i in reached for t in sg.operators[i].outputs if t >= 0}
    for i, op in enumerate(sg.operators):  # graph order: a reader comes after its producers
        if i not in reached and any(t in tainted for t in op.inputs):
            reached.add(i)
            tainted.update(t for t in op.outputs if t >= 0)
    return reached


def has_candidates(model: Model) -> bool:
    """Whether some op could be corrected (a weighted layer with a bias input and no fused activation): the
    calibration keeps its fitting samples only then."""
    for op in model.subgraphs[0].operators:
        row = op_table.row(model.op_name(op))
        if row.weights is not None and row.weights[1] is not None and len(op.inputs) > row.weights[1] \
                and op.inputs[row.weights[1]] >= 0 \
                and (op.options or {}).get("fused_activation_function", "NONE") in ("NONE", None):
            return True
    return False
