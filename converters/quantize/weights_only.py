"""The modes that keep float activations: "fp16" (every float32 constant stored as float16, feeding a DEQUANTIZE;
LiteRT runs it, TFLM cannot) and "dynamic" (int8 weights for the ops whose row has ``dynamic``: (weights' channel
axis or None for one scale, op version), with float activations, which LiteRT's hybrid kernels quantize on the fly;
hosts only: edge-sdk's interpreter and TFLM refuse it)."""

from __future__ import annotations

import numpy as np

from converters.quantize.builder import QuantGraph, is_const, is_float
from converters.quantize.scales import quantize_array, weight_scales
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table
from edge_sdk.runtime.kernels.quant import INT32_MAX


def fp16_graph(model: Model) -> Model:
    """Every float32 constant (not sparse) as float16 behind a DEQUANTIZE; the ops as they are."""
    g = QuantGraph(model, "FLOAT16")
    sg = g.sg
    for t in range(len(sg.tensors)):
        if is_const(model, t) and is_float(model, t) and sg.tensors[t].sparsity is None:
            data = np.asarray(model.tensor_data(0, t), np.float32)
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
    return g.build([g.ft[t] for t in sg.inputs], [g.ft[t] for t in sg.outputs])


def dynamic_graph(model: Model, excluded: set[int]) -> tuple[Model, list[dict]]:
    """The dynamic-range model and, per quantized weights tensor, its channels and scale range."""
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
