"""The modes that keep float activations: "fp16" (every float32 constant stored as float16, feeding a DEQUANTIZE;
LiteRT runs it, TFLM cannot) and "dynamic" (int8 weights for the ops whose row has ``dynamic``: (weights' channel
axis or None for one scale, op version), with float activations, which LiteRT's hybrid kernels quantize on the fly;
edge-sdk's interpreter and C runtime run those kernels too (edge_sdk/runtime/kernels/hybrid.py,
firmware_c/src/kernels/hybrid.c: LiteRT's arithmetic, on hosts and Cortex-M); TFLM has no hybrid kernels).

Run-time control flow: the subgraphs of IF / WHILE go through the same rules as the main graph, each on its own
(activations stay float32, so nothing crosses a call but float32 values: no scale to share): every float32 constant
of every subgraph as float16 unless float16 cannot hold it, every weights tensor of an op with a ``dynamic`` row in
int8. Each kept float32 constant and each int8 weights tensor of a subgraph names it (``"subgraph"``; none: the
main one).
``exclude`` names ops of the main graph only: a subgraph's weights are always quantized in dynamic mode."""

from __future__ import annotations

import numpy as np

from converters.quantize.builder import QuantGraph, is_const, is_float
from converters.quantize.scales import quantize_array, weight_scales
from converters.quantize.subgraphs import merge_subgraphs, subgraph_view
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table
from edge_sdk.runtime.kernels.quant import INT32_MAX


FP16_MAX = 65504.0  # the largest finite float16
# A constant stays float32 when float16 moves an element by more than this share of the tensor's largest magnitude:
# normal float16 rounding moves it by at most 2**-11 of itself; flushing to zero or a subnormal's coarse steps more
# (a log epsilon 1e-10 becomes 0.0: all of it).
FP16_TOLERANCE = 2.0 ** -10


def fp16_loss(data: np.ndarray) -> str | None:
    """Why float16 cannot hold this float32 constant (an element overflows to inf, or under-flows beyond
    ``FP16_TOLERANCE``), or None."""
    x = np.asarray(data, np.float64).reshape(-1)
    finite = x[np.isfinite(x)]
    if not finite.size:
        return None
    big = np.abs(finite) > FP16_MAX
    if big.any():
        return f"{finite[big][0]:g} overflows float16 (largest finite {FP16_MAX:g})"
    with np.errstate(under="ignore"):
        err = np.abs(finite.astype(np.float16).astype(np.float64) - finite)
    top = float(np.abs(finite).max())
    k = int(err.argmax())
    if top > 0 and err[k] > FP16_TOLERANCE * top:
        return (f"{finite[k]:g} becomes {float(np.float16(finite[k])):g} in float16 (under-flow: "
                f"{100 * err[k] / top:.3g}% of the tensor's largest magnitude)")
    return None


def fp16_graph(model: Model) -> tuple[Model, list[dict]]:
    """Every float32 constant (not sparse) as float16 behind a DEQUANTIZE, except those float16 cannot hold
    (``fp16_loss``), which stay float32; the ops as they are; each IF / WHILE subgraph alike. Second: the constants
    kept float32 and why."""
    kept: list[dict] = []
    built = []
    for s in range(len(model.subgraphs)):
        one, kept_here = _fp16_subgraph(model if s == 0 else subgraph_view(model, s))
        built.append(one)
        kept += [{**k, "subgraph": s} if s else k for k in kept_here]
    return merge_subgraphs(built[0], built[1:]), kept


def _fp16_subgraph(model: Model) -> tuple[Model, list[dict]]:
    """``fp16_graph`` of the one-subgraph ``model``."""
    g = QuantGraph(model, "FLOAT16")
    sg = g.sg
    kept = []
    for t in range(len(sg.tensors)):
        if is_const(model, t) and is_float(model, t) and sg.tensors[t].sparsity is None:
            data = np.asarray(model.tensor_data(0, t), np.float32)
            why = fp16_loss(data)
            if why is not None:
                kept.append({"name": sg.tensors[t].name, "reason": why})
                continue
            h = g.add_tensor(sg.tensors[t], "FLOAT16", None, data.astype(np.float16), suffix="_fp16")
            n = g.add_tensor(sg.tensors[t], "FLOAT32", None)
            g.add_op("DEQUANTIZE", [h], [n], version=3)
            g.ft[t] = n
    for t in range(len(sg.tensors)):
        if t not in g.ft:
            g.ft[t] = g.copy_tensor(t)
    for i, op in enumerate(sg.operators):
        g.add_like(i, op, [g.ft[t] if t >= 0 else t for t in op.inputs], [g.ft[t] for t in op.outputs],
                   model.op_version(op), op.custom_options)
    g.io_map = dict(g.ft)
    return g.build([g.ft[t] for t in sg.inputs], [g.ft[t] for t in sg.outputs]), kept


def dynamic_graph(model: Model, excluded: set[int]) -> tuple[Model, list[dict]]:
    """The dynamic-range model and, per quantized weights tensor, its subgraph, op, channels and scale range
    (``excluded``: op indices of the main graph kept float)."""
    weights: list[dict] = []
    built = []
    for s in range(len(model.subgraphs)):
        one, weights_here = _dynamic_subgraph(model if s == 0 else subgraph_view(model, s),
                                               excluded if s == 0 else set())
        built.append(one)
        weights += [{**w, "subgraph": s} if s else w for w in weights_here]
    return merge_subgraphs(built[0], built[1:]), weights


def _dynamic_subgraph(model: Model, excluded: set[int]) -> tuple[Model, list[dict]]:
    """``dynamic_graph`` of the one-subgraph ``model``."""
    g = QuantGraph(model, "INT8")
    sg = g.sg
    weights = []
    for t in range(len(sg.tensors)):
        g.ft[t] = g.copy_tensor(t)
    for i, op in enumerate(sg.operators):
        row = op_table.row(model.op_name(op))
        ins = [g.ft[t] if t >= 0 else t for t in op.inputs]
        version = model.op_version(op)
        wi = row.weights[0] if row.dynamic is not None else None
        if wi is not None and i not in excluded and is_const(model, op.inputs[wi]) and is_float(model, op.inputs[wi]):
            axis, version = row.dynamic
            w = np.asarray(model.tensor_data(0, op.inputs[wi]), np.float64)
            if axis is None:
                m = float(np.abs(w).max()) if w.size else 0.0
                scales = np.array([m / 127.0 if m > 0 else 1.0], np.float32)
                qw = quantize_array(w, scales[0], 0, -127, 127, np.int8)
                q = g.quant(scales, 0, 0)
            else:
                scales = weight_scales(w, axis, None, 1.0, INT32_MAX)
                qw = quantize_array(w, scales, 0, -127, 127, np.int8, axis=axis)
                q = g.quant(scales, 0, axis)
            ins[wi] = g.add_tensor(sg.tensors[op.inputs[wi]], "INT8", q, qw)
            weights.append({"op": i, "name": sg.tensors[op.inputs[wi]].name, "channels": int(scales.size),
                            "scale_min": float(scales.min()), "scale_max": float(scales.max())})
        g.add_like(i, op, ins, [g.ft[t] for t in op.outputs], version, op.custom_options)
    g.io_map = dict(g.ft)
    return g.build([g.ft[t] for t in sg.inputs], [g.ft[t] for t in sg.outputs]), weights


def dequantized_weights(model: Model, qmodel: Model) -> Model:
    """The float ``model`` with each weights tensor the dynamic-range ``qmodel`` stores in int8 replaced by its
    dequantized values (in every subgraph): the weights' share of the dynamic-range error (the accuracy guard's
    fallback where neither edge-sdk's interpreter nor LiteRT runs the hybrid model)."""
    import copy

    from edge_sdk.model.types import Buffer

    out = copy.copy(model)
    out.buffers = list(model.buffers)
    out.subgraphs = [copy.copy(sg) for sg in model.subgraphs]
    for s, sg in enumerate(out.subgraphs):
        q_by_name = {t.name: (k, t) for k, t in enumerate(qmodel.subgraphs[s].tensors)
                     if t.type == "INT8" and t.quantization is not None and t.buffer}
        view = subgraph_view(model, s)
        sg.tensors = list(sg.tensors)
        for t, tensor in enumerate(sg.tensors):
            if not (is_const(view, t) and is_float(view, t)) or tensor.name not in q_by_name:
                continue
            k, qt = q_by_name[tensor.name]
            w = np.asarray(qmodel.tensor_data(s, k), np.float64)
            scale = np.asarray(qt.quantization.scale, np.float64)
            if scale.size > 1:
                shape = [1] * w.ndim
                shape[qt.quantization.quantized_dimension] = scale.size
                scale = scale.reshape(shape)
            values = (w * scale).astype(np.float32)
            out.buffers.append(Buffer(values.astype("<f4").tobytes()))
            sg.tensors[t] = copy.copy(tensor)
            sg.tensors[t].buffer = len(out.buffers) - 1
    return out
