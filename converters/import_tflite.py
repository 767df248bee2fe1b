"""Float .tflite -> ``edge_sdk.model.Model``: the second way into the converter.

    model = import_tflite("net_float.tflite")   # a path, bytes, or an already-read Model

The file is read and verified by ``edge_sdk.model.read_model``. Every operator is looked up in edge-sdk's op
table; all that have no kernel here (or a newer version than ours) are reported at once as
``edge_sdk.ConversionError`` (subgraph, operator index, op name, version, reason).

An already-quantized model is returned as it is: the quantizer decides what to do with it (refuse it for
int8 conversion, or pass it through). ``precision(model)`` names what a model holds so callers can decide.
"""

from __future__ import annotations

from edge_sdk.errors import ConversionError, ModelError, UnsupportedOpError
from edge_sdk.model import Model, read_model
from edge_sdk.runtime.op_table import lookup

_QUANTIZED_TYPES = {"INT8", "UINT8", "INT16", "INT4"}


def import_tflite(source) -> Model:
    """A .tflite model (path, bytes or ``Model``) whose every op edge-sdk can run."""
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
    return model


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
