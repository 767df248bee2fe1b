"""Model I/O: read and write TFLite flatbuffers as ``Model`` objects.

    model = read_model("net.tflite")      # or bytes; raises ModelError naming table, field, byte offset
    data = write_model(model)             # bytes LiteRT and TFLM load

The one graph type (``types``), the verified reader, the writer, schema facts (``schema``: builtin codes,
option tables, enums), the builder used by importers and tests, and the metadata manifest.

May import: the standard library, numpy, flatbuffers, edge_sdk.errors / log / resources. Nothing else of
edge_sdk: every other package builds on this one.
"""

from edge_sdk.model.types import (
    TENSOR_TYPE_NAMES,
    TENSOR_TYPES,
    Buffer,
    DimensionMetadata,
    Metadata,
    Model,
    Operator,
    OperatorCode,
    Quantization,
    SignatureDef,
    Sparsity,
    SubGraph,
    Tensor,
    numpy_dtype,
)


def read_model(source):
    """Read a .tflite file (a path, bytes, bytearray or memoryview) into a verified ``Model``."""
    from edge_sdk.model.reader import read_model as _read

    return _read(source)


def write_model(model, path=None) -> bytes:
    """Serialize a ``Model`` to TFLite flatbuffer bytes (and write them atomically to ``path`` if given)."""
    from edge_sdk.model.writer import write_model as _write

    return _write(model, path)


def write_bytes(path, data: bytes) -> None:
    """Write serialized .tflite bytes (``write_model``'s) to ``path`` atomically: no second serialisation."""
    from edge_sdk.model.writer import write_bytes as _write_bytes

    _write_bytes(path, data)


__all__ = [
    "TENSOR_TYPES",
    "TENSOR_TYPE_NAMES",
    "Buffer",
    "DimensionMetadata",
    "Metadata",
    "Model",
    "Operator",
    "OperatorCode",
    "Quantization",
    "SignatureDef",
    "Sparsity",
    "SubGraph",
    "Tensor",
    "numpy_dtype",
    "read_model",
    "write_bytes",
    "write_model",
]
