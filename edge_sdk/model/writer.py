"""Serialize a ``Model`` to TFLite flatbuffer bytes ("TFL3"), the format LiteRT and TFLM load.

    data = write_model(model)                 # bytes
    write_model(model, "out.tflite")          # also written atomically (temp file, fsync, rename)

Table layouts (field slots, scalar types, defaults) come from ``edge_sdk.model.schema.TABLES``, so builtin
options are encoded generically: ``Operator.options`` is a dict of the options table's fields by schema name,
enum values given by their schema names; a missing key takes the schema default.

Limits: one flatbuffer holds at most 2 GB; bigger models (which need buffers outside the flatbuffer) raise
ModelError for now. Quantization "details" unions and variant sub-types are not part of the Model type and
are not written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

import flatbuffers
import numpy as np
from flatbuffers import number_types as N

from edge_sdk.errors import ModelError
from edge_sdk.model import schema
from edge_sdk.model.types import TENSOR_TYPES, Model

FILE_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3
BUFFER_ALIGNMENT = 16  # constant data starts on a 16-byte boundary (SIMD loads, int64/double data)
_MAX_FLATBUFFER = 2**31 - 1

# schema scalar type -> (flatbuffers flags, numpy dtype, (min, max) for integers or None)
_SCALARS: dict[str, tuple] = {
    "bool": (N.BoolFlags, np.bool_, None),
    "byte": (N.Int8Flags, np.int8, (-(2**7), 2**7 - 1)),
    "int8": (N.Int8Flags, np.int8, (-(2**7), 2**7 - 1)),
    "ubyte": (N.Uint8Flags, np.uint8, (0, 2**8 - 1)),
    "uint8": (N.Uint8Flags, np.uint8, (0, 2**8 - 1)),
    "short": (N.Int16Flags, np.int16, (-(2**15), 2**15 - 1)),
    "int16": (N.Int16Flags, np.int16, (-(2**15), 2**15 - 1)),
    "ushort": (N.Uint16Flags, np.uint16, (0, 2**16 - 1)),
    "uint16": (N.Uint16Flags, np.uint16, (0, 2**16 - 1)),
    "int": (N.Int32Flags, np.int32, (-(2**31), 2**31 - 1)),
    "int32": (N.Int32Flags, np.int32, (-(2**31), 2**31 - 1)),
    "uint": (N.Uint32Flags, np.uint32, (0, 2**32 - 1)),
    "uint32": (N.Uint32Flags, np.uint32, (0, 2**32 - 1)),
    "long": (N.Int64Flags, np.int64, (-(2**63), 2**63 - 1)),
    "int64": (N.Int64Flags, np.int64, (-(2**63), 2**63 - 1)),
    "ulong": (N.Uint64Flags, np.uint64, (0, 2**64 - 1)),
    "uint64": (N.Uint64Flags, np.uint64, (0, 2**64 - 1)),
    "float": (N.Float32Flags, np.float32, None),
    "float32": (N.Float32Flags, np.float32, None),
    "double": (N.Float64Flags, np.float64, None),
    "float64": (N.Float64Flags, np.float64, None),
}

def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def _options_index() -> dict[str, str]:
    index = {}
    for union in ("BuiltinOptions", "BuiltinOptions2"):
        for member in schema.UNIONS[union].values():
            if member in schema.TABLES and member.endswith("Options"):
                index[_norm(member[: -len("Options")])] = member
    return index


_OPTIONS_BY_NORM = _options_index()
_UNION_OF: dict[str, tuple[str, int]] = {
    member.split(" (", 1)[0]: (union, code)  # "ReduceWindowOptions (deprecated)": its table's name
    for union in ("BuiltinOptions", "BuiltinOptions2")
    for code, member in schema.UNIONS[union].items()
}


def options_for(op_name: str) -> str | None:
    """The builtin options table an op carries ("CONV_2D" -> "Conv2DOptions"), or None when it has none: the op
    table row's ``options`` where the table is not named after the op (flatbuffer_conversions.cc's parsers)."""
    from edge_sdk.runtime.op_table import row  # the op's facts (a data module: errors and op_table_c only)

    if op_name not in schema.BUILTIN_OPERATOR_CODES or op_name == "CUSTOM":
        return None
    irregular = row(op_name).options
    if irregular:
        return irregular
    return _OPTIONS_BY_NORM.get(_norm(op_name))


def option_defaults(options_type: str) -> dict:
    """Every field of an options table at its schema default (enum values by name, absent vectors as None)."""
    fields = schema.TABLES.get(options_type)
    if fields is None:
        raise ModelError(f"unknown builtin options table {options_type!r}")
    out = {}
    for name, ftype, default, _slot in fields:
        if ftype.startswith("@"):
            continue
        if ftype in schema.ENUMS:
            values = schema.ENUMS[ftype][1]
            out[name] = default if default is not None else values.get(0, f"{ftype}_0")
        elif ftype in _SCALARS:
            out[name] = _default_scalar(ftype, default)
        else:
            out[name] = None
    return out


# ----------------------------------------------------------------------------------------------------------
# scalar / enum encoding


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _default_scalar(ftype: str, default: str | None):
    if ftype == "bool":
        return default == "true"
    if ftype in ("float", "double", "float32", "float64"):
        return float(default) if default is not None else 0.0
    return int(default) if default is not None else 0


def _enum_code(enum: str, value, where: str) -> int:
    if isinstance(value, str):
        for code, name in schema.ENUMS[enum][1].items():
            if name == value:
                return code
        prefix = f"{enum}_"  # the reader's spelling of a value this schema does not name
        if value.startswith(prefix) and value[len(prefix) :].lstrip("-").isdigit():
            return int(value[len(prefix) :])
        known = ", ".join(schema.ENUMS[enum][1].values())
        raise ModelError(f"{where}: {value!r} is not a {enum} value (known: {known})")
    raise ModelError(f"{where}: expected a {enum} name (str), got {type(value).__name__} {value!r}")


def _scalar(ftype: str, value, where: str):
    """Check and convert a Python value for a schema scalar type."""
    _flags, _dtype, bounds = _SCALARS[ftype]
    if ftype == "bool":
        if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
            return bool(value)
        raise ModelError(f"{where}: expected a bool, got {type(value).__name__} {value!r}")
    if bounds is None:  # float
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ModelError(f"{where}: expected a number, got {type(value).__name__} {value!r}")
        return float(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ModelError(f"{where}: expected an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if not bounds[0] <= value <= bounds[1]:
        raise ModelError(f"{where}: {value} does not fit the schema type {ftype}")
    return value


def _int_array(values, ftype: str, where: str) -> np.ndarray:
    """A 1-D vector of schema integers (or bools / floats) as a little-endian numpy array."""
    _flags, dtype, bounds = _SCALARS[ftype]
    if isinstance(values, (str, bytes)) or values is None:
        raise ModelError(f"{where}: expected a sequence of {ftype}, got {type(values).__name__}")
    try:
        arr = np.asarray(values)
    except Exception as e:  # ragged or odd objects
        raise ModelError(f"{where}: not a sequence of {ftype}: {e}") from None
    if arr.ndim != 1:
        arr = arr.reshape(-1) if arr.ndim == 0 or arr.size == 0 else arr
        if arr.ndim != 1:
            raise ModelError(f"{where}: expected a flat sequence of {ftype}, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype)
    kind = arr.dtype.kind
    if ftype == "bool":
        if kind == "b" or (kind in "iu" and np.isin(arr, (0, 1)).all()):
            return arr.astype(np.bool_)
    elif bounds is None:
        if kind in "iuf":
            return arr.astype(dtype)
    elif kind in "iu":
        if arr.min() < bounds[0] or arr.max() > bounds[1]:
            raise ModelError(f"{where}: values outside the range of {ftype}")
        return arr.astype(dtype)
    raise ModelError(f"{where}: expected {ftype} values, got {arr.dtype} {values!r}")


# ----------------------------------------------------------------------------------------------------------
# the writer


class _Writer:
    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise ModelError(f"write_model needs an edge_sdk Model, got {type(model).__name__}")
        self.model = model
        total = sum(_buffer_len(buf, i) for i, buf in enumerate(model.buffers))
        if total > _MAX_FLATBUFFER - (1 << 20):
            raise ModelError(f"model constants take {total} bytes: more than one flatbuffer holds (2 GB); "
                             "buffers outside the flatbuffer are not supported yet")
        size = total + 16 * len(model.buffers) + (1 << 16)
        self.b = flatbuffers.Builder(min(size + size // 8, _MAX_FLATBUFFER))
        self._strings: dict[str, int] = {}

    # -- flatbuffer primitives ------------------------------------------------------------------------
    def string(self, s: str, where: str) -> int:
        if not isinstance(s, str):
            raise ModelError(f"{where}: expected a str, got {type(s).__name__} {s!r}")
        off = self._strings.get(s)
        if off is None:
            off = self._strings[s] = self.b.CreateString(s)
        return off

    def vector(self, arr: np.ndarray) -> int:
        return self.b.CreateNumpyVector(np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False))

    def bytes_vector(self, data, alignment: int) -> int:
        n = len(data)
        b = self.b
        b.StartVector(1, n, alignment)
        b.head = b.head - n
        b.Bytes[b.head : b.head + n] = data
        return b.EndVector()

    def offsets(self, offs: Sequence[int]) -> int:
        b = self.b
        b.StartVector(4, len(offs), 4)
        for off in reversed(offs):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    def start(self, table: str) -> dict[str, tuple[str, str | None, int]]:
        fields = {name: (ftype, default, slot) for name, ftype, default, slot in schema.TABLES[table]}
        self.b.StartObject(max((f[2] for f in fields.values()), default=-1) + 1)
        return fields

    def put(self, fields, name: str, value, where: str) -> None:
        """Add a scalar or enum field (written only when it differs from the schema default)."""
        ftype, default, slot = fields[name]
        if ftype.startswith("@"):  # a union's type field
            stype, dflt = "ubyte", 0
            value = _scalar(stype, value, where)
        elif ftype in schema.ENUMS:
            stype = schema.ENUMS[ftype][0]
            value = int(value) if _is_int(value) else _enum_code(ftype, value, where)
            dflt = schema.enum_value(ftype, default) if default is not None else 0
            value = _scalar(stype, value, where)
        else:
            stype = ftype
            value = _scalar(ftype, value, where)
            dflt = _default_scalar(ftype, default)
        flags = _SCALARS[stype][0]
        if value != dflt:
            self.b.Prepend(flags, value)
            self.b.Slot(slot)

    def put_offset(self, fields, name: str, off: int | None) -> None:
        if off is not None:
            self.b.PrependUOffsetTRelativeSlot(fields[name][2], off, 0)

    # -- generic options tables -----------------------------------------------------------------------
    def options(self, table: str, values: dict, where: str) -> int:
        if table not in schema.TABLES:
            raise ModelError(f"{where}: unknown builtin options table {table!r}")
        if not isinstance(values, dict):
            raise ModelError(f"{where}: options must be a dict of {table} fields, got {type(values).__name__}")
        known = {f[0]: f for f in schema.TABLES[table]}
        unknown = sorted(set(values) - set(known))
        if unknown:
            names = ", ".join(map(repr, unknown))
            raise ModelError(f"{where}: {table} has no field {names} (fields: {', '.join(known) or 'none'})")
        offs: dict[str, int] = {}
        for name, value in values.items():
            ftype = known[name][1]
            fwhere = f"{where}, {table}.{name}"
            if value is None:
                continue
            if ftype == "string":
                offs[name] = self.string(value, fwhere)
            elif ftype.startswith("["):
                elem = ftype[1:-1]
                if elem in schema.ENUMS:
                    codes = [int(v) if _is_int(v) else _enum_code(elem, v, fwhere) for v in value]
                    arr = _int_array(codes, schema.ENUMS[elem][0], fwhere)
                elif elem in _SCALARS:
                    if elem == "ubyte" and isinstance(value, (bytes, bytearray, memoryview)):
                        value = np.frombuffer(bytes(value), np.uint8)
                    arr = _int_array(value, elem, fwhere)
                else:
                    raise ModelError(f"{fwhere}: vectors of {elem} are not supported in options")
                offs[name] = self.vector(arr)
            elif ftype not in _SCALARS and ftype not in schema.ENUMS:
                raise ModelError(f"{fwhere}: fields of type {ftype} are not supported in options")
        fields = self.start(table)
        for name, value in values.items():
            ftype = known[name][1]
            if name in offs:
                self.put_offset(fields, name, offs[name])
            elif value is not None and (ftype in _SCALARS or ftype in schema.ENUMS):
                self.put(fields, name, value, f"{where}, {table}.{name}")
        return self.b.EndObject()

    # -- model tables ---------------------------------------------------------------------------------
    def quantization(self, q, where: str) -> int:
        scale = _float_vec(q.scale, f"{where}, quantization.scale")
        zp = _long_vec(q.zero_point, f"{where}, quantization.zero_point")
        qmin = None if q.min is None else _float_vec(q.min, f"{where}, quantization.min")
        qmax = None if q.max is None else _float_vec(q.max, f"{where}, quantization.max")
        offs = {
            "min": None if qmin is None else self.vector(qmin),
            "max": None if qmax is None else self.vector(qmax),
            "scale": self.vector(scale) if scale is not None else None,
            "zero_point": self.vector(zp) if zp is not None else None,
        }
        fields = self.start("QuantizationParameters")
        for name, off in offs.items():
            self.put_offset(fields, name, off)
        self.put(fields, "quantized_dimension", q.quantized_dimension, f"{where}, quantization.quantized_dimension")
        return self.b.EndObject()

    def index_vector(self, arr, where: str) -> tuple[int, int]:
        a = np.asarray(arr) if arr is not None else np.zeros(0, np.int32)
        members = {np.dtype(np.int32): 1, np.dtype(np.uint16): 2, np.dtype(np.uint8): 3}
        code = members.get(a.dtype, 1)
        elem = {1: "int", 2: "ushort", 3: "ubyte"}[code]
        arr = _int_array(a.reshape(-1), elem, where)
        off = self.vector(arr)
        fields = self.start(schema.UNIONS["SparseIndexVector"][code])
        self.put_offset(fields, "values", off)
        return code, self.b.EndObject()

    def sparsity(self, sp, where: str) -> int:
        dims = []
        for d, dm in enumerate(sp.dim_metadata):
            dwhere = f"{where}, sparsity.dim_metadata[{d}]"
            seg = idx = None
            if dm.array_segments is not None:
                seg = self.index_vector(dm.array_segments, f"{dwhere}.array_segments")
            if dm.array_indices is not None:
                idx = self.index_vector(dm.array_indices, f"{dwhere}.array_indices")
            fields = self.start("DimensionMetadata")
            self.put(fields, "format", dm.format, f"{dwhere}.format")
            self.put(fields, "dense_size", dm.dense_size, f"{dwhere}.dense_size")
            if seg is not None:
                self.put(fields, "array_segments_type", seg[0], dwhere)
                self.put_offset(fields, "array_segments", seg[1])
            if idx is not None:
                self.put(fields, "array_indices_type", idx[0], dwhere)
                self.put_offset(fields, "array_indices", idx[1])
            dims.append(self.b.EndObject())
        trav = self.vector(_int_array(sp.traversal_order, "int", f"{where}, sparsity.traversal_order"))
        bmap = self.vector(_int_array(sp.block_map, "int", f"{where}, sparsity.block_map"))
        dvec = self.offsets(dims)
        fields = self.start("SparsityParameters")
        self.put_offset(fields, "traversal_order", trav)
        self.put_offset(fields, "block_map", bmap)
        self.put_offset(fields, "dim_metadata", dvec)
        return self.b.EndObject()

    def tensor(self, t, si: int, ti: int) -> int:
        where = f"subgraph {si}, tensor {ti}"
        if t.type not in TENSOR_TYPES:
            raise ModelError(f"{where} ({t.name!r}): unknown tensor type {t.type!r}")
        nbuf = len(self.model.buffers)
        if not _is_int(t.buffer) or not 0 <= t.buffer < max(nbuf, 1):
            raise ModelError(f"{where} ({t.name!r}): buffer {t.buffer!r} out of range (the model has {nbuf} buffers)")
        shape_arr = _int_array(list(t.shape), "int", f"{where}, shape")
        if (shape_arr < 0).any():
            raise ModelError(f"{where} ({t.name!r}): shape {list(t.shape)} has a negative dimension "
                             "(unknown sizes belong in shape_signature)")
        if t.quantization is not None:
            _check_quantization(t.quantization, len(shape_arr), f"{where} ({t.name!r})")
        shape = self.vector(shape_arr)
        name = self.string(t.name if t.name is not None else "", f"{where}, name")
        quant = self.quantization(t.quantization, where) if t.quantization is not None else None
        sparsity = self.sparsity(t.sparsity, where) if t.sparsity is not None else None
        sig = None
        if t.shape_signature is not None:
            sig = self.vector(_int_array(list(t.shape_signature), "int", f"{where}, shape_signature"))
        fields = self.start("Tensor")
        self.put_offset(fields, "shape", shape)
        self.put(fields, "type", t.type, f"{where}, type")
        self.put(fields, "buffer", int(t.buffer), f"{where}, buffer")
        self.put_offset(fields, "name", name)
        self.put_offset(fields, "quantization", quant)
        self.put(fields, "is_variable", t.is_variable, f"{where}, is_variable")
        self.put_offset(fields, "sparsity", sparsity)
        self.put_offset(fields, "shape_signature", sig)
        self.put(fields, "has_rank", t.has_rank, f"{where}, has_rank")
        return self.b.EndObject()

    def operator(self, op, si: int, oi: int, ntensors: int) -> int:
        where = f"subgraph {si}, operator {oi}"
        ncodes = len(self.model.operator_codes)
        if not _is_int(op.opcode_index) or not 0 <= op.opcode_index < ncodes:
            raise ModelError(
                f"{where}: opcode_index {op.opcode_index!r} out of range (the model has {ncodes} operator codes)"
            )
        where = f"{where} ({self.model.operator_codes[op.opcode_index].name})"
        ins = self.vector(_tensor_indices(op.inputs, ntensors, f"{where}, inputs", optional=True))
        outs = self.vector(_tensor_indices(op.outputs, ntensors, f"{where}, outputs", optional=True))
        inter = None
        if op.intermediates:
            inter = self.vector(_tensor_indices(op.intermediates, ntensors, f"{where}, intermediates"))
        opts = union = None
        if op.options_type is not None:
            if op.options_type not in _UNION_OF:
                raise ModelError(f"{where}: {op.options_type!r} is not a BuiltinOptions / BuiltinOptions2 member")
            union = _UNION_OF[op.options_type]
            opts = self.options(op.options_type, op.options or {}, where)
        elif op.options:
            raise ModelError(f"{where}: options given without options_type")
        custom = None
        if op.custom_options is not None:
            if not isinstance(op.custom_options, (bytes, bytearray, memoryview)):
                raise ModelError(f"{where}: custom_options must be bytes, got {type(op.custom_options).__name__}")
            custom = self.bytes_vector(bytes(op.custom_options), BUFFER_ALIGNMENT)
        fields = self.start("Operator")
        self.put(fields, "opcode_index", int(op.opcode_index), f"{where}, opcode_index")
        self.put_offset(fields, "inputs", ins)
        self.put_offset(fields, "outputs", outs)
        if union is not None:
            if union[0] == "BuiltinOptions":
                self.put(fields, "builtin_options_type", union[1], where)
                self.put_offset(fields, "builtin_options", opts)
            else:
                self.put(fields, "builtin_options_2_type", union[1], where)
                self.put_offset(fields, "builtin_options_2", opts)
        self.put_offset(fields, "custom_options", custom)
        self.put_offset(fields, "intermediates", inter)
        return self.b.EndObject()

    def subgraph(self, sg, si: int) -> int:
        n = len(sg.tensors)
        tensors = self.offsets([self.tensor(t, si, ti) for ti, t in enumerate(sg.tensors)])
        ins = self.vector(_tensor_indices(sg.inputs, n, f"subgraph {si}, inputs"))
        outs = self.vector(_tensor_indices(sg.outputs, n, f"subgraph {si}, outputs"))
        ops = self.offsets([self.operator(op, si, oi, n) for oi, op in enumerate(sg.operators)])
        name = self.string(sg.name, f"subgraph {si}, name") if sg.name else None
        fields = self.start("SubGraph")
        self.put_offset(fields, "tensors", tensors)
        self.put_offset(fields, "inputs", ins)
        self.put_offset(fields, "outputs", outs)
        self.put_offset(fields, "operators", ops)
        self.put_offset(fields, "name", name)
        return self.b.EndObject()

    def operator_code(self, oc, i: int) -> int:
        where = f"operator_codes[{i}]"
        code = oc.builtin_code
        if not _is_int(code) or code < 0:
            raise ModelError(f"{where}: builtin_code {code!r} is not a BuiltinOperator value")
        code = int(code)  # codes newer than this schema pass through: the runtime decides
        custom = self.string(oc.custom_code, f"{where}, custom_code") if oc.custom_code is not None else None
        if code == schema.CUSTOM_CODE and custom is None:
            raise ModelError(f"{where}: a CUSTOM operator code needs a custom_code")
        fields = self.start("OperatorCode")
        self.put(fields, "deprecated_builtin_code", min(code, 127), where)
        self.put_offset(fields, "custom_code", custom)
        self.put(fields, "version", oc.version, f"{where}, version")
        self.put(fields, "builtin_code", code, where)
        return self.b.EndObject()

    def buffer(self, buf, i: int) -> int:
        data = _buffer_bytes(buf, i)
        off = self.bytes_vector(data, BUFFER_ALIGNMENT) if len(data) else None
        fields = self.start("Buffer")
        self.put_offset(fields, "data", off)
        return self.b.EndObject()

    def signature(self, sd, i: int) -> int:
        where = f"signature_defs[{i}] ({sd.signature_key!r})"
        nsg = len(self.model.subgraphs)
        if not _is_int(sd.subgraph_index) or not 0 <= sd.subgraph_index < nsg:
            raise ModelError(f"{where}: subgraph_index {sd.subgraph_index!r} out of range ({nsg} subgraphs)")
        ntensors = len(self.model.subgraphs[sd.subgraph_index].tensors)
        maps = []
        for side, mapping in (("inputs", sd.inputs), ("outputs", sd.outputs)):
            entries = []
            for key, index in mapping.items():
                _tensor_indices([index], ntensors, f"{where}, {side}[{key!r}]")
                name = self.string(key, f"{where}, {side} name")
                fields = self.start("TensorMap")
                self.put_offset(fields, "name", name)
                self.put(fields, "tensor_index", int(index), where)
                entries.append(self.b.EndObject())
            maps.append(self.offsets(entries))
        key = self.string(sd.signature_key, f"{where}, signature_key")
        fields = self.start("SignatureDef")
        self.put_offset(fields, "inputs", maps[0])
        self.put_offset(fields, "outputs", maps[1])
        self.put_offset(fields, "signature_key", key)
        self.put(fields, "subgraph_index", int(sd.subgraph_index), where)
        return self.b.EndObject()

    def metadata(self, md, i: int) -> int:
        where = f"metadata[{i}] ({md.name!r})"
        nbuf = len(self.model.buffers)
        if not _is_int(md.buffer) or not 0 <= md.buffer < nbuf:
            raise ModelError(f"{where}: buffer {md.buffer!r} out of range (the model has {nbuf} buffers)")
        name = self.string(md.name, f"{where}, name")
        fields = self.start("Metadata")
        self.put_offset(fields, "name", name)
        self.put(fields, "buffer", int(md.buffer), where)
        return self.b.EndObject()

    def model_bytes(self) -> bytes:
        m = self.model
        if not m.buffers:
            raise ModelError("model has no buffers: buffer 0 must exist (the empty buffer)")
        if len(_buffer_bytes(m.buffers[0], 0)):
            raise ModelError("buffer 0 must be the empty buffer (tensors computed at run time point at it)")
        # The builder fills the file from its end backwards: writing the buffers first puts the constant
        # data after the graph tables, where the TFLite converter puts it too.
        buffers = self.offsets([self.buffer(buf, i) for i, buf in enumerate(m.buffers)])
        codes = self.offsets([self.operator_code(oc, i) for i, oc in enumerate(m.operator_codes)])
        subgraphs = self.offsets([self.subgraph(sg, i) for i, sg in enumerate(m.subgraphs)])
        metadata = self.offsets([self.metadata(md, i) for i, md in enumerate(m.metadata)]) if m.metadata else None
        sigs = None
        if m.signature_defs:
            sigs = self.offsets([self.signature(sd, i) for i, sd in enumerate(m.signature_defs)])
        desc = self.string(m.description, "model description") if m.description else None
        fields = self.start("Model")
        self.put(fields, "version", m.version if m.version is not None else SCHEMA_VERSION, "model version")
        self.put_offset(fields, "operator_codes", codes)
        self.put_offset(fields, "subgraphs", subgraphs)
        self.put_offset(fields, "description", desc)
        self.put_offset(fields, "buffers", buffers)
        self.put_offset(fields, "metadata", metadata)
        self.put_offset(fields, "signature_defs", sigs)
        root = self.b.EndObject()
        self.b.Finish(root, FILE_IDENTIFIER)
        return bytes(self.b.Output())


def _buffer_bytes(buf, i: int):
    data = getattr(buf, "data", None)
    if data is None:
        return b""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).view(np.uint8).reshape(-1).tobytes()
    if isinstance(data, (bytes, bytearray)):
        return data
    if isinstance(data, memoryview):
        return data.cast("B") if data.c_contiguous else data.tobytes()
    raise ModelError(f"buffers[{i}]: data must be bytes, got {type(data).__name__}")


def _buffer_len(buf, i: int) -> int:
    data = getattr(buf, "data", None)
    return data.nbytes if isinstance(data, (np.ndarray, memoryview)) else len(data or b"")


def _check_quantization(q, rank: int, where: str) -> None:
    nscale = np.size(q.scale) if q.scale is not None else 0
    nzp = np.size(q.zero_point) if q.zero_point is not None else 0
    if nzp not in (nscale, 1) and nscale:
        raise ModelError(f"{where}: quantization has {nscale} scales but {nzp} zero points")
    qd = q.quantized_dimension
    if not _is_int(qd):
        raise ModelError(f"{where}: quantized_dimension must be an int, got {type(qd).__name__}")
    if nscale > 1 and not 0 <= qd < rank:
        raise ModelError(f"{where}: quantized_dimension {qd} is not an axis of a rank-{rank} tensor "
                         f"({nscale} per-channel scales)")


def _float_vec(values, where: str) -> np.ndarray | None:
    if values is None:
        return None
    arr = np.asarray(values).reshape(-1)
    if arr.dtype.kind not in "iuf" and arr.size:
        raise ModelError(f"{where}: expected numbers, got {arr.dtype}")
    return arr.astype(np.float32)


def _long_vec(values, where: str) -> np.ndarray | None:
    if values is None:
        return None
    return _int_array(np.asarray(values).reshape(-1), "long", where)


def _tensor_indices(indices, ntensors: int, where: str, optional: bool = False) -> np.ndarray:
    arr = _int_array(list(indices), "int", where)
    low = -1 if optional else 0
    bad = [int(i) for i in arr if not low <= i < ntensors]
    if bad:
        raise ModelError(f"{where}: tensor index {bad[0]} out of range (the subgraph has {ntensors} tensors)")
    return arr


def write_model(model: Model, path=None) -> bytes:
    """Serialize ``model`` to .tflite bytes; with ``path``, also write them there atomically."""
    try:
        data = _Writer(model).model_bytes()
    except ModelError:
        raise
    except (AttributeError, TypeError) as e:
        raise ModelError(f"malformed model object: {e}") from e
    except flatbuffers.builder.BuilderSizeError as e:
        raise ModelError(f"model does not fit one flatbuffer (2 GB): {e}") from e
    if path is not None:
        _atomic_write(os.fspath(path), data)
    return data


def write_bytes(path, data: bytes) -> None:
    """Write .tflite bytes already serialized (``write_model``'s) to ``path`` atomically, as write_model does."""
    _atomic_write(os.fspath(path), bytes(data))


def _file_mode(path: str) -> int:
    """The mode the written file gets: the replaced file's, else what open() would give a new file."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _atomic_write(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, _file_mode(path))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
