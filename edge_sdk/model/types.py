"""The one graph type: a TFLite model as plain Python data.

The reader returns it, the writer takes it, the interpreter plans on it, the checker inspects it and the
converter's passes rewrite it. Field names follow the TFLite schema (schema.fbs) so that a reader of either
can find the other; enums are kept as their schema names ("INT8", "CONV_2D", "Conv2DOptions").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from edge_sdk.errors import ModelError
from edge_sdk.model.schema import ENUMS

# The numpy dtype that holds each TFLite TensorType (absent: numpy has no such type; STRING, VARIANT, BFLOAT16,
# FLOAT8_*). int4/int2/uint4 are stored packed in the file (low nibble first); the reader unpacks them to one
# int8 / uint8 per value. A RESOURCE tensor holds the variable's id (int32). The C runtime's element sizes
# (firmware_c/include/edge_types.def) agree with these (tests/test_one_fact.py).
_DTYPES: dict[str, np.dtype] = {name: np.dtype(t) for name, t in {
    "FLOAT32": np.float32, "FLOAT16": np.float16, "FLOAT64": np.float64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "BOOL": np.bool_, "COMPLEX64": np.complex64, "COMPLEX128": np.complex128,
    "RESOURCE": np.int32, "INT4": np.int8, "INT2": np.int8, "UINT4": np.uint8,
}.items()}
# TensorType: schema name -> (code, numpy dtype or None). The codes are schema.fbs's (model/schema.py).
TENSOR_TYPES: dict[str, tuple[int, np.dtype | None]] = {
    name: (code, _DTYPES.get(name)) for code, name in sorted(ENUMS["TensorType"][1].items())
}
TENSOR_TYPE_NAMES: dict[int, str] = {code: name for name, (code, _) in TENSOR_TYPES.items()}


def element_bytes(type_name: str) -> int:
    """Bytes one value of a TFLite TensorType takes in a run-time tensor (int4/int2 are held unpacked, one byte;
    types numpy has no dtype for count one byte)."""
    dtype = TENSOR_TYPES.get(type_name, (0, None))[1]
    return dtype.itemsize if dtype is not None else 1


def tensor_nbytes(tensor) -> int:
    """Bytes of a run-time tensor: its element count times ``element_bytes`` of its type."""
    count = 1
    for d in tensor.shape:
        count *= int(d)
    return count * element_bytes(tensor.type)


def numpy_dtype(type_name: str) -> np.dtype | None:
    """The numpy dtype that holds values of a TFLite TensorType (None: numpy has none)."""
    return TENSOR_TYPES[type_name][1]


@dataclass
class Quantization:
    """Affine quantization: real = scale * (q - zero_point).

    ``scale`` (float32) and ``zero_point`` (int64) have one entry per tensor, or one per slice along
    ``quantized_dimension`` for per-channel quantization.
    """

    scale: np.ndarray
    zero_point: np.ndarray
    quantized_dimension: int = 0
    min: np.ndarray | None = None
    max: np.ndarray | None = None

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1


@dataclass
class DimensionMetadata:
    """One dimension of a sparse tensor (schema DimensionMetadata)."""

    format: str  # "DENSE" or "SPARSE_CSR"
    dense_size: int = 0
    array_segments: np.ndarray | None = None
    array_indices: np.ndarray | None = None


@dataclass
class Sparsity:
    traversal_order: list[int]
    block_map: list[int]
    dim_metadata: list[DimensionMetadata]


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    type: str  # a TensorType name, e.g. "INT8"
    buffer: int = 0  # index into Model.buffers; 0 is the empty buffer by convention
    quantization: Quantization | None = None
    shape_signature: tuple[int, ...] | None = None
    is_variable: bool = False
    sparsity: Sparsity | None = None
    has_rank: bool = False

    @property
    def dtype(self) -> np.dtype | None:
        return numpy_dtype(self.type)


@dataclass
class Buffer:
    """Raw bytes of a constant tensor, or metadata. ``data`` is empty for tensors computed at run time."""

    data: bytes = b""  # the reader gives a zero-copy memoryview of the file; copies and pickles get bytes

    def __deepcopy__(self, memo) -> "Buffer":
        return Buffer(bytes(self.data))

    def __reduce__(self):
        return (Buffer, (bytes(self.data),))


@dataclass
class OperatorCode:
    builtin_code: int  # max(builtin_code, deprecated_builtin_code) as TFLite reads it
    custom_code: str | None = None
    version: int = 1

    @property
    def name(self) -> str:
        """The op's name: the builtin's schema name ("CONV_2D"), or a custom op's own code."""
        from edge_sdk.model.schema import BUILTIN_OPERATOR_NAMES

        if self.custom_code is not None and self.builtin_code == 32:  # BuiltinOperator.CUSTOM
            return self.custom_code
        return BUILTIN_OPERATOR_NAMES.get(self.builtin_code, f"BUILTIN_{self.builtin_code}")

    @property
    def is_custom(self) -> bool:
        return self.builtin_code == 32


@dataclass
class Operator:
    opcode_index: int
    inputs: list[int]  # tensor indices; -1 marks an omitted optional input
    outputs: list[int]
    options_type: str | None = None  # BuiltinOptions union member, e.g. "Conv2DOptions"
    options: dict = field(default_factory=dict)  # that table's fields by schema name (snake_case)
    custom_options: bytes | None = None
    intermediates: list[int] = field(default_factory=list)


@dataclass
class SubGraph:
    tensors: list[Tensor]
    inputs: list[int]
    outputs: list[int]
    operators: list[Operator]
    name: str = ""


@dataclass
class SignatureDef:
    signature_key: str
    subgraph_index: int
    inputs: dict[str, int]  # signature name -> tensor index in that subgraph
    outputs: dict[str, int]


@dataclass
class Metadata:
    name: str
    buffer: int


@dataclass
class Model:
    operator_codes: list[OperatorCode]
    subgraphs: list[SubGraph]
    buffers: list[Buffer]
    version: int = 3
    description: str = ""
    metadata: list[Metadata] = field(default_factory=list)
    signature_defs: list[SignatureDef] = field(default_factory=list)

    def op_name(self, op: Operator) -> str:
        return self.operator_codes[op.opcode_index].name

    def op_version(self, op: Operator) -> int:
        return self.operator_codes[op.opcode_index].version

    def tensor_data(self, subgraph: int, tensor: int) -> np.ndarray | None:
        """A constant tensor's value as a read-only numpy array of its shape, or None (computed at run time).

        int4 values come back unpacked, one int8 per value. Sparse tensors come back as their stored
        (compressed) values; DENSIFY expands them.
        """
        return tensor_value(self, subgraph, tensor)

    def metadata_bytes(self, name: str) -> bytes | None:
        for m in self.metadata:
            if m.name == name:
                return bytes(self.buffers[m.buffer].data)
        return None


# ------------------------------------------------------------------------------------- constant values
def tensor_value(model: Model, subgraph: int, tensor: int) -> np.ndarray | None:
    """A constant tensor's value as a read-only numpy array (little-endian data), or None when it has none.

    The buffer must hold exactly shape x itemsize bytes (int4/uint4: two values per byte, low nibble first;
    int2: four per byte, low bits first), unpacked to one int8/uint8 per value. Sparse tensors come back as
    their stored values, a 1-D array, with no shape check.
    """
    try:
        t = model.subgraphs[subgraph].tensors[tensor]
    except IndexError:
        raise ModelError(f"no tensor {tensor} in subgraph {subgraph}") from None
    where = f"Tensor[{tensor}] of SubGraph[{subgraph}] ('{t.name}')"
    if t.buffer == 0 and not model.buffers:
        return None
    if not 0 <= t.buffer < len(model.buffers):
        raise ModelError(f"{where}: refers to buffer {t.buffer}, but the model has {len(model.buffers)} buffers")
    data = model.buffers[t.buffer].data
    if len(data) == 0:
        return None
    if t.type not in TENSOR_TYPES or TENSOR_TYPES[t.type][1] is None:
        raise ModelError(f"{where}: constant tensors of type {t.type} are not supported (no numpy type)")
    per_byte = {"INT4": 2, "UINT4": 2, "INT2": 4}.get(t.type)
    dtype = TENSOR_TYPES[t.type][1].newbyteorder("<") if TENSOR_TYPES[t.type][1].itemsize > 1 else TENSOR_TYPES[t.type][1]
    if t.sparsity is not None:
        if per_byte:
            return _unpack(data, t.type, per_byte, len(data) * per_byte)
        if len(data) % dtype.itemsize:
            raise ModelError(
                f"{where}: sparse buffer {t.buffer} holds {len(data)} bytes, not a whole number of "
                f"{dtype.itemsize}-byte {t.type} values"
            )
        return np.frombuffer(data, dtype=dtype)
    count = 1
    for d in t.shape:
        count *= d
    if per_byte:
        expected = -(-count // per_byte)
    else:
        expected = count * dtype.itemsize
    if len(data) != expected:
        raise ModelError(
            f"{where}: buffer {t.buffer} holds {len(data)} bytes, but shape {list(t.shape)} of {t.type} "
            f"needs {expected}"
        )
    if per_byte:
        return _unpack(data, t.type, per_byte, count).reshape(t.shape)
    arr = np.frombuffer(data, dtype=dtype).reshape(t.shape)
    if arr.flags.writeable:  # a view of a writable buffer: hand out a read-only view
        arr = arr.view()
        arr.flags.writeable = False
    return arr


def _unpack(data, type_name: str, per_byte: int, count: int) -> np.ndarray:
    raw = np.frombuffer(data, dtype=np.uint8)
    bits = 8 // per_byte
    mask = (1 << bits) - 1
    parts = np.empty((raw.size, per_byte), dtype=np.uint8)
    for k in range(per_byte):
        parts[:, k] = (raw >> (bits * k)) & mask
    values = parts.reshape(-1)[:count]
    if type_name == "UINT4":
        out = values.astype(np.uint8)
    else:
        signed = values.astype(np.int16)
        signed[signed >= (1 << (bits - 1))] -= 1 << bits
        out = signed.astype(np.int8)
    out.flags.writeable = False
    return out
