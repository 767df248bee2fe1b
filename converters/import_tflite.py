"""Float .tflite -> ``edge_sdk.model.Model``: the second way into the converter.

    model = import_tflite("net_float.tflite")   # a path, bytes, or an already-read Model

The file is read and verified by ``edge_sdk.model.read_model``. Every operator is looked up in edge-sdk's op
table; all that have no kernel here (or a newer version than ours) are reported at once as
``edge_sdk.ConversionError`` (subgraph, operator index, op name, version, reason).

Compressed float models (float16 weights behind DEQUANTIZE, as most published float TFLite models store
them; int8 weights behind DEQUANTIZE or read directly by hybrid kernels, as dynamic-range quantization leaves
them) are made plain float32 models on import: ``dequantize_constants`` folds every DEQUANTIZE of a constant
into a float32 constant and dequantizes every quantized constant that a float op reads, so the result
quantizes as any float model. What it did is in ``model.import_notes`` ({"dequantized_constants": {type: n}}).

A model with quantized activations is returned as it is: the quantizer decides what to do with it (refuse
it for int8 conversion, or pass it through). ``precision(model)`` names what a model holds so callers can
decide.
"""

from __future__ import annotations

import numpy as np

from converters import graph as G
from edge_sdk.errors import ConversionError, ModelError, UnsupportedOpError
from edge_sdk.model import Model, read_model
from edge_sdk.runtime.op_table import lookup

_QUANTIZED_TYPES = {"INT8", "UINT8", "INT16", "INT4"}


def import_tflite(source, dequantize: bool = True) -> Model:
    """A .tflite model (path, bytes or ``Model``) whose every op edge-sdk can run; with ``dequantize``
    (the default) its compressed float weights made float32 (``dequantize_constants``)."""
    model = source if isinstance(source, Model) else read_model(source)
    problems = []
    for s, sg in enumerate(model.subgraphs):
        for i, op in enumerate(sg.operators):
            name, version = model.op_name(op), model.op_version(op)
            try:
                lookup(name, version)
            except UnsupportedOpError as exc:
                problems.append(f"subgraph {s} operator {i} ({name} v{version}): {exc}")
    if problems:
        raise ConversionError(f"{len(problems)} TFLite operator(s) cannot be run by edge-sdk", problems)
    if not model.subgraphs:
        raise ModelError("the TFLite model has no subgraphs")
    if dequantize:
        counts = dequantize_constants(model)
        model.import_notes = {"dequantized_constants": counts} if counts else {}
    return model


_WEIGHT_TYPES = ("FLOAT16", "INT8", "UINT8", "INT16", "INT4")


def _dequantized(model: Model, t: int, sg: int) -> np.ndarray | None:
    """The float32 value of a compressed constant (float16, or quantized integers with scale/zero point)."""
    tensor = model.subgraphs[sg].tensors[t]
    if tensor.type not in _WEIGHT_TYPES or tensor.sparsity is not None or not G.is_constant(model, t, sg):
        return None
    raw = np.asarray(model.tensor_data(sg, t))
    if tensor.type == "FLOAT16":
        return raw.astype(np.float32)
    q = tensor.quantization
    if q is None or q.scale is None or np.asarray(q.scale).size == 0:
        return None
    scale = np.asarray(q.scale, np.float64).reshape(-1)
    zp = np.asarray(q.zero_point if q.zero_point is not None else 0, np.float64).reshape(-1)
    if scale.size > 1:
        axis = int(q.quantized_dimension)
        if not 0 <= axis < raw.ndim or raw.shape[axis] != scale.size:
            raise ModelError(f"tensor '{tensor.name}': {scale.size} scales do not match axis {axis} of shape "
                             f"{tuple(raw.shape)}")
        shape = [1] * raw.ndim
        shape[axis] = scale.size
        scale = scale.reshape(shape)
        zp = np.broadcast_to(zp, (scale.size,)).reshape(shape) if zp.size in (1, scale.size) else zp
    return ((raw.astype(np.float64) - zp) * scale).astype(np.float32)


def dequantize_constants(model: Model) -> dict[str, int]:
    """Make a compressed float model plain float32, in place: every DEQUANTIZE whose input is a float16 /
    int8 constant becomes that constant in float32 (the op removed); every quantized constant read by an op
    whose outputs are float32 (a hybrid, dynamic-range op) is replaced, for that op, by its float32 value.
    Returns {stored type: constants dequantized}. Ops with quantized activations are left alone."""
    counts: dict[str, int] = {}
    for s, sub in enumerate(model.subgraphs):
        drop = []
        cache: dict[int, int] = {}  # compressed constant -> its float32 copy (hybrid readers)
        for i, op in enumerate(sub.operators):
            name = model.op_name(op)
            outs_float = bool(op.outputs) and all(t >= 0 and sub.tensors[t].type == "FLOAT32" for t in op.outputs)
            if not outs_float:
                continue
            if name == "DEQUANTIZE":
                src, dst = op.inputs[0], op.outputs[0]
                if G.is_graph_output(model, dst, s):
                    continue
                value = _dequantized(model, src, s)
                if value is None:
                    continue
                G.set_constant(model, dst, value.reshape(sub.tensors[dst].shape), s)
                counts[sub.tensors[src].type] = counts.get(sub.tensors[src].type, 0) + 1
                drop.append(i)
                continue
            for k, t in enumerate(op.inputs):
                if t < 0 or sub.tensors[t].type not in _WEIGHT_TYPES:
                    continue
                if t not in cache:
                    value = _dequantized(model, t, s)
                    if value is None:
                        continue
                    cache[t] = G.add_constant(model, sub.tensors[t].name + "_f32", value, "FLOAT32", s)
                    counts[sub.tensors[t].type] = counts.get(sub.tensors[t].type, 0) + 1
                op.inputs[k] = cache[t]
        if drop:
            G.remove_ops(model, drop, s)
    if counts:
        G.eliminate_dead_code(model)
    return counts


def precision(model: Model) -> str:
    """What the model's activations and weights hold.

    "float32" (everything float), "fp16" (float16 weights behind DEQUANTIZE), "dynamic" (float activations,
    int8 weights), "int8" / "int16x8" (quantized activations) or "mixed".
    """
    sg = model.subgraphs[0]
    runtime_types = set()
    const_types = set()
    for t in sg.tensors:
        if t.type in ("INT32", "INT64", "BOOL", "RESOURCE", "STRING"):
            continue
        (const_types if t.buffer and model.buffers[t.buffer].data else runtime_types).add(t.type)
    if runtime_types <= {"FLOAT32"}:
        if const_types <= {"FLOAT32"}:
            return "float32"
        if const_types <= {"FLOAT32", "FLOAT16"}:
            return "fp16"
        if const_types & _QUANTIZED_TYPES:
            return "dynamic"
        return "mixed"
    quantized = runtime_types - {"FLOAT32"}
    if quantized == {"INT8"} or quantized == {"INT8", "UINT8"}:
        return "int8"
    if "INT16" in quantized and const_types & {"INT8"}:
        return "int16x8"
    return "mixed"
