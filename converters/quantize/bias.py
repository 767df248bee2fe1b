"""Bias correction (Nagel et al. 2019, "empirical" form): int8 weights W_q differ from the float ones by dW, so a
weighted layer's output is off by dW x, whose mean over the data, E[dW x] = dW E[x-patch], is a systematic shift
per output channel -- large where a channel has few weights and an input far from zero mean (depthwise layers
after a ReLU). The mean input patch (per filter tap and input channel, zero padding included, over every output
position) is measured on the calibration samples while they run (``PatchMeans``); each quantized layer's float
bias then loses that shift before it is quantized.

Each layer's own shift only (dW of that layer, the float input's mean): the error a layer inherits from the ones
before it is theirs to correct, so correcting all layers at once does not count it twice. What the cascade itself
adds (the rounding of every activation before, rectified by PReLUs) is corrected after this, layer by layer on the
int8 model (``sequential``)."""

from __future__ import annotations

import numpy as np

from converters import graph as G
from converters.quantize.builder import QuantGraph, is_const, is_float
from converters.quantize.rounding import Grams, padded_for_windows, weight_quantization
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table

MIN_SHIFT = 0.05  # a layer is corrected where some channel's shift reaches this share of its output's quantum


def _kind(row: op_table.OpRow) -> str | None:
    """How a weighted layer's weights meet its input, from its row: "window" (a convolution whose weights' input
    channels are an axis, ``in_channel_axis``: CONV_2D; DEPTHWISE_CONV_2D where that axis is the output-channel
    one), "matrix" (weights [out, in] over the input's last axis: FULLY_CONNECTED); None: not corrected."""
    if row.weights is None or row.weights[1] is None or row.weights[2] is None:
        return None
    if row.family == "conv":
        return "window" if row.in_channel_axis is not None else None
    return "matrix" if row.weights[2] == 0 and not row.family else None


def weighted_layers(model: Model, with_bias: bool = False) -> dict[int, tuple[int, str]]:
    """The weighted layers (``_kind``) with float constant weights (``with_bias``: and a float constant bias) reading
    a float activation: op index -> (that input tensor, "window" / "matrix")."""
    sg = model.subgraphs[0]
    layers = {}
    for i, op in enumerate(sg.operators):
        row = op_table.row(model.op_name(op))
        kind = _kind(row)
        if kind is None:
            continue
        wi, bi, _ = row.weights
        has_bias = bi is not None and len(op.inputs) > bi and op.inputs[bi] >= 0 and is_const(model, op.inputs[bi])
        if with_bias and not has_bias:
            continue
        if not is_const(model, op.inputs[wi]) or not is_float(model, op.inputs[wi]):
            continue
        if kind == "matrix" and len(sg.tensors[op.inputs[wi]].shape) != 2:
            continue
        if is_float(model, op.inputs[0]) and not is_const(model, op.inputs[0]):
            layers[i] = (op.inputs[0], kind)
    return layers


class PatchMeans:
    """Per weighted layer (``_kind``) with float constant weights and bias: the sum of its mean input patch over
    the calibration samples ([KH, KW, C] for a window, [C] for a matrix)."""

    def __init__(self, model: Model, grams: bool = False):
        self.model = model
        self.layers = weighted_layers(model, with_bias=True)  # op index -> (data input tensor, "window" / "matrix")
        self.sums: dict[int, np.ndarray] = {}
        self.count = 0
        # ``grams``: the weighted layers' input Gram matrices too, for their weights' rounding (``rounding``)
        self.grams = Grams(model, weighted_layers(model) if grams else {})

    def add(self, values: dict, sample_inputs: dict) -> None:
        sg = self.model.subgraphs[0]
        self.grams.add(values, sample_inputs)
        for i, (t, kind) in self.layers.items():
            x = values.get(t, sample_inputs.get(t))
            if x is None:
                continue
            mean = self._patch_mean(sg.operators[i], kind, np.asarray(x, np.float32))
            if mean is not None:
                self.sums[i] = self.sums[i] + mean if i in self.sums else mean
        self.count += 1

    def _patch_mean(self, op, kind: str, x: np.ndarray) -> np.ndarray | None:
        wi = op_table.row(self.model.op_name(op)).weights[0]
        w_shape = self.model.subgraphs[0].tensors[op.inputs[wi]].shape
        if kind == "matrix":
            return x.reshape(-1, w_shape[-1]).mean(axis=0, dtype=np.float64)
        if x.ndim != 4:
            return None
        kh, kw = int(w_shape[1]), int(w_shape[2])
        padded, (oh, ow), (sh, sw), (dh, dw) = padded_for_windows(x, op.options or {}, kh, kw)
        out = np.empty((kh, kw, x.shape[3]))
        for a in range(kh):
            for b in range(kw):
                rows = padded[:, a * dh:a * dh + (oh - 1) * sh + 1:sh, b * dw:b * dw + (ow - 1) * sw + 1:sw]
                out[a, b] = rows.mean(axis=(0, 1, 2), dtype=np.float64)
        return out

    def mean(self, i: int) -> np.ndarray | None:
        return self.sums[i] / self.count if i in self.sums and self.count else None


def _dequantized_weights(g: QuantGraph, i: int) -> np.ndarray | None:
    """Op i's int8 weights in the built graph, dequantized (None when the op is not quantized there)."""
    found = weight_quantization(g, i)
    if found is None:
        return None
    q, s, axis = found
    shape = [1] * q.ndim
    shape[axis] = -1
    return q * (s.reshape(shape) if s.size > 1 else s[0])


def bias_shifts(model: Model, g: QuantGraph, means: PatchMeans) -> dict[int, np.ndarray]:
    """Per quantized weighted layer of ``g``: its output's mean shift per channel, E[dW x] (float units)."""
    sg = model.subgraphs[0]
    shifts = {}
    for i, (_, kind) in means.layers.items():
        m = means.mean(i)
        wq = _dequantized_weights(g, i) if m is not None else None
        if wq is None:
            continue
        wi, _, out_axis = op_table.row(model.op_name(sg.operators[i])).weights
        in_axis = op_table.row(model.op_name(sg.operators[i])).in_channel_axis
        dw = wq - np.asarray(model.tensor_data(0, sg.operators[i].inputs[wi]), np.float64)
        if kind == "matrix":  # [O, I] @ [I]
            shift = dw @ m
        elif in_axis != out_axis:  # [O, KH, KW, I] . [KH, KW, I] (a window over every input channel)
            shift = np.einsum("ohwi,hwi->o", np.moveaxis(dw, (out_axis, in_axis), (0, 3)), m)
        else:  # depthwise [1, KH, KW, C * mult]: output channel o reads input channel o // mult
            dw = np.moveaxis(dw, out_axis, 3)[0]
            shift = np.einsum("hwo,hwo->o", dw, np.repeat(m, dw.shape[2] // m.shape[2], axis=2))
        shifts[i] = shift
    return shifts


def corrected(model: Model, g: QuantGraph, means: PatchMeans, base: Model | None = None) -> tuple[Model, list[dict]]:
    """The model whose quantized layers' biases lose their shift (where some channel's shift reaches
    ``MIN_SHIFT`` of the output's quantum), and per corrected layer what changed; the model itself when none.
    The shift is of ``g``'s weights against ``model``'s float ones; ``base`` (``model`` when None) is the model
    the corrected biases go into (its weights rounded by their output error: ``rounding``)."""
    sg = model.subgraphs[0]
    kept = {}
    for i, shift in bias_shifts(model, g, means).items():
        n = g.qt.get(sg.operators[i].outputs[0])
        if n is None or g.tensors[n].quantization is None:
            continue
        step = float(g.tensors[n].quantization.scale[0])
        worst = float(np.abs(shift).max()) if shift.size else 0.0
        if worst >= MIN_SHIFT * step:
            kept[i] = (shift, worst / step)
    return shifted(model if base is None else base, kept)


def shifted(model: Model, shifts: dict[int, tuple[np.ndarray, float]]) -> tuple[Model, list[dict]]:
    """The model whose layers ``shifts`` names (op index -> (per output channel shift, its largest in output quanta))
    have bias - shift, and per layer what changed; the model itself when ``shifts`` is empty."""
    from converters.passes.equalize import editable_copy

    sg = model.subgraphs[0]
    done, m = [], None
    for i, (shift, quanta) in shifts.items():
        m = m or editable_copy(model)
        bi = op_table.row(model.op_name(sg.operators[i])).weights[1]
        bt = m.subgraphs[0].operators[i].inputs[bi]
        b = np.asarray(m.tensor_data(0, bt), np.float64).reshape(-1)
        # a tensor of its own (a bias several layers share keeps its value for the others; restore_biases puts
        # the original back by pointing the op at it)
        new = G.add_constant(m, sg.tensors[bt].name, (b - shift).astype(np.float32).reshape(sg.tensors[bt].shape),
                             "FLOAT32")
        if sum(bt in op.inputs for op in sg.operators) == 1:  # its own bias: the integer graph keeps its name
            m.subgraphs[0].tensors[new].name = sg.tensors[bt].name
        m.subgraphs[0].operators[i].inputs[bi] = new
        done.append({"op_index": i, "op": model.op_name(sg.operators[i]),
                     "output": sg.tensors[sg.operators[i].outputs[0]].name, "max_shift_quanta": quanta})
    return (m, done) if m is not None else (model, [])


def restore_biases(corrected_model: Model, model: Model, ops) -> Model:
    """``corrected_model`` with the original biases -- and weights, where they were rounded by their output error
    (``rounding``) -- back on ``ops`` (kept float: their weights are exact)."""
    from converters.passes.equalize import editable_copy

    if corrected_model is model or not ops:
        return corrected_model
    m = editable_copy(corrected_model)
    sg, src = m.subgraphs[0], model.subgraphs[0]
    for i in ops:
        row = op_table.row(model.op_name(src.operators[i]))
        if row.weights is None:
            continue
        sg.operators[i].inputs[row.weights[0]] = src.operators[i].inputs[row.weights[0]]  # the original weights
        if row.weights[1] is None or len(src.operators[i].inputs) <= row.weights[1]:
            continue
        sg.operators[i].inputs[row.weights[1]] = src.operators[i].inputs[row.weights[1]]  # the original bias
    return m
