"""Read a .tflite flatbuffer into a ``Model``, treating the bytes as untrusted.

    model = read_model("net.tflite")           # or bytes / bytearray / memoryview
    weights = model.tensor_data(0, 3)          # read-only numpy array, or None (edge_sdk.model.types)

Layouts come from ``edge_sdk.model.schema`` through the bounds-checked walker in ``edge_sdk.model.flatbuf``;
this module turns its dicts into the dataclasses of ``edge_sdk.model.types`` and checks every index a
table holds (operator codes, tensors, buffers, subgraphs). Every problem is a ``ModelError`` that names
the table, the field and the byte offset. Constant data is not copied: buffers are memoryviews of the
file's bytes, and ``edge_sdk.model.types.tensor_value`` wraps them in read-only numpy arrays.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

from edge_sdk.errors import ModelError
from edge_sdk.model.flatbuf import ROOT, Reader
from edge_sdk.model.types import (
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
)

IDENTIFIER = b"TFL3"

# Options fields that name a subgraph (IF/WHILE/CALL_ONCE/CALL and the StableHLO control-flow ops).
_SUBGRAPH_FIELDS = ("subgraph", "branch_subgraph_indices")

_SPARSE_INDEX_DTYPES = {
    "Int32Vector": np.dtype("<i4"),
    "Uint16Vector": np.dtype("<u2"),
    "Uint8Vector": np.dtype("u1"),
}


def _at(d: dict, where: str) -> str:
    pos = d.get("__pos__")
    return where if pos is None else f"{where} (table at byte {pos})"


def _load(source) -> bytes:
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            return path.read_bytes()
        except OSError as e:
            raise ModelError(f"cannot read model file {path}: {e.strerror or e}") from e
    if isinstance(source, bytes):
        return source
    if isinstance(source, (bytearray, memoryview)):
        # A private immutable copy: the model must not change when the caller reuses its buffer.
        try:
            return bytes(memoryview(source).cast("B"))
        except TypeError as e:
            raise ModelError(f"cannot read a model from this memoryview: {e}") from e
    raise TypeError(f"read_model takes a path, bytes, bytearray or memoryview, not {type(source).__name__}")


def _looks_like_onnx(data: bytes) -> bool:
    # An ONNX ModelProto starts with field 1 (ir_version, varint: tag 0x08), usually followed by
    # producer_name (0x12) or the graph (0x3a); most files also name "onnx" or a producer early on.
    if data[:1] != b"\x08":
        return False
    head = data[:4096].lower()
    return b"onnx" in head or b"pytorch" in head or (len(data) > 2 and data[2] in (0x12, 0x1A, 0x22, 0x3A))


def _check_header(data: bytes):
    n = len(data)
    if n == 0:
        raise ModelError("not a TFLite model: the file is empty")
    if n < 8:
        raise ModelError(f"not a TFLite model: the file is only {n} bytes (truncated?)")
    ident = data[4:8]
    if ident == IDENTIFIER:
        return
    if data[8:12] == IDENTIFIER:
        raise ModelError(
            "not a plain TFLite file: it looks size-prefixed (identifier 'TFL3' at byte 8, not 4); "
            "strip the 4-byte size prefix"
        )
    if _looks_like_onnx(data):
        raise ModelError(
            "not a TFLite file: it looks like an ONNX protobuf (.onnx); convert it to .tflite first"
        )
    raise ModelError(
        f"not a TFLite file: bytes 4..8 hold {ident!r}, not the TFLite file identifier 'TFL3'"
    )


# ---------------------------------------------------------------------------------------------------------------


def read_model(source) -> Model:
    """Read a .tflite model (a path, bytes, bytearray or memoryview) into a verified ``Model``."""
    data = _load(source)
    _check_header(data)
    r = Reader(data)
    root = struct.unpack_from("<I", data, 0)[0]
    if root + 4 > len(data):
        raise ModelError(
            f"Model: the root offset points to byte {root}, past the end of the file ({len(data)} bytes; truncated?)"
        )
    m = r.read("Model", root, ROOT)
    return _build_model(r, m)


def _build_model(r: Reader, m: dict) -> Model:
    n = r.n
    buffers = []
    for i, b in enumerate(m["buffers"] or ()):
        offset, size = b["offset"], b["size"]
        if offset > 1:
            if offset + size > n:
                raise ModelError(
                    f"{_at(b, f'Buffer[{i}]')}: field 'offset' places {size} bytes of data at byte {offset}, "
                    f"past the end of the file ({n} bytes)"
                )
            data = r.view[offset : offset + size]
        else:
            data = b["data"] if b["data"] is not None else b""
        buffers.append(Buffer(data=data))
    nbuf = len(buffers)

    def check_buffer(index, d, where, field):
        if index != 0 and not 0 <= index < nbuf:
            raise ModelError(
                f"{_at(d, where)}: field '{field}' refers to buffer {index}, but the model has {nbuf} buffers"
            )

    opcodes = []
    for i, c in enumerate(m["operator_codes"] or ()):
        code = max(_builtin_value(c["builtin_code"]), c["deprecated_builtin_code"])
        opcodes.append(OperatorCode(builtin_code=code, custom_code=c["custom_code"], version=c["version"]))

    sub_dicts = m["subgraphs"] or []
    if not sub_dicts:
        raise ModelError(f"{_at(m, 'Model')}: field 'subgraphs' is empty: the model has no graph")
    nsub = len(sub_dicts)
    subgraphs = [_build_subgraph(s, j, opcodes, nsub, check_buffer, r.view) for j, s in enumerate(sub_dicts)]

    metadata = []
    for i, md in enumerate(m["metadata"] or ()):
        where = f"Metadata[{i}]"
        if not 0 <= md["buffer"] < nbuf:
            raise ModelError(
                f"{_at(md, where)}: field 'buffer' refers to buffer {md['buffer']}, but the model has {nbuf} buffers"
            )
        metadata.append(Metadata(name=md["name"] or "", buffer=md["buffer"]))
    for k, index in enumerate(m["metadata_buffer"] or ()):
        if not 0 <= index < nbuf:
            raise ModelError(
                f"{_at(m, 'Model')}: field 'metadata_buffer'[{k}] refers to buffer {index}, "
                f"but the model has {nbuf} buffers"
            )

    signatures = []
    for i, sd in enumerate(m["signature_defs"] or ()):
        where = f"SignatureDef[{i}]"
        sg = sd["subgraph_index"]
        if not 0 <= sg < nsub:
            raise ModelError(
                f"{_at(sd, where)}: field 'subgraph_index' is {sg}, but the model has {nsub} subgraphs"
            )
        ntens = len(subgraphs[sg].tensors)
        maps = {}
        for field in ("inputs", "outputs"):
            maps[field] = {}
            for k, tm in enumerate(sd[field] or ()):
                ti = tm["tensor_index"]
                if not 0 <= ti < ntens:
                    raise ModelError(
                        f"{_at(tm, f'TensorMap[{k}] of {where}')}: field 'tensor_index' is {ti}, "
                        f"but SubGraph[{sg}] has {ntens} tensors"
                    )
                maps[field][tm["name"] or ""] = ti
        signatures.append(
            SignatureDef(
                signature_key=sd["signature_key"] or "",
                subgraph_index=sg,
                inputs=maps["inputs"],
                outputs=maps["outputs"],
            )
        )

    return Model(
        operator_codes=opcodes,
        subgraphs=subgraphs,
        buffers=buffers,
        version=m["version"],
        description=m["description"] or "",
        metadata=metadata,
        signature_defs=signatures,
    )


def _builtin_value(name: str) -> int:
    from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES

    code = BUILTIN_OPERATOR_CODES.get(name)
    if code is None:  # "BuiltinOperator_<n>": a code this schema does not know
        code = int(name.rsplit("_", 1)[1])
    return code


def _build_subgraph(s: dict, j: int, opcodes: list, nsub: int, check_buffer, view) -> SubGraph:
    where_sg = f"SubGraph[{j}]"
    tensors = [_build_tensor(t, f"Tensor[{i}] of {where_sg}", check_buffer) for i, t in enumerate(s["tensors"] or ())]
    ntens = len(tensors)

    def indices(d, field, where, optional=False):
        values = list(d[field] or ())
        for k, v in enumerate(values):
            if not (0 <= v < ntens or (optional and v == -1)):
                raise ModelError(
                    f"{_at(d, where)}: field '{field}'[{k}] is tensor {v}, but {where_sg} has {ntens} tensors"
                    + (" (-1 marks an omitted optional input)" if optional else "")
                )
        return values

    inputs = indices(s, "inputs", where_sg)
    outputs = indices(s, "outputs", where_sg)
    operators = []
    for i, o in enumerate(s["operators"] or ()):
        where = f"Operator[{i}] of {where_sg}"
        oi = o["opcode_index"]
        if not 0 <= oi < len(opcodes):
            raise ModelError(
                f"{_at(o, where)}: field 'opcode_index' is {oi}, but the model has {len(opcodes)} operator codes"
            )
        options_type, options = _options(o, where, nsub)
        operators.append(
            Operator(
                opcode_index=oi,
                inputs=indices(o, "inputs", where, optional=True),
                outputs=indices(o, "outputs", where),
                options_type=options_type,
                options=options,
                custom_options=_custom_options(o, where, view),
                intermediates=indices(o, "intermediates", where),
            )
        )
    return SubGraph(tensors=tensors, inputs=inputs, outputs=outputs, operators=operators, name=s["name"] or "")


def _plain(value):
    """Options values as the Operator.options convention wants them: lists, str, plain numbers."""
    if isinstance(value, memoryview):
        return list(value.tobytes())
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "__pos__"}
    return value


def _options(o: dict, where: str, nsub: int):
    from edge_sdk.model.flatbuf import plan

    union = o["builtin_options"]
    if union is None:
        union = o["builtin_options_2"]
    if union is None:
        return None, {}
    member, table = union
    try:
        fields = plan(member)
    except KeyError:  # a union member this schema has no table for
        return member, {}
    opts = {}
    for f in fields:
        v = table[f.name] if table is not None else f.default if f.kind in ("scalar", "enum", "union_type") else None
        if v is None:
            v = "" if f.kind == "string" else [] if f.kind.startswith("vec") else None
        opts[f.name] = _plain(v)
    owhere = f"{member} of {where}"
    for name, v in opts.items():
        if name.endswith("subgraph_index") or name in _SUBGRAPH_FIELDS:
            for k, sg in enumerate(v if isinstance(v, list) else [v]):
                if not 0 <= sg < nsub:
                    raise ModelError(
                        f"{_at(table or {}, owhere)}: field '{name}'"
                        + (f"[{k}]" if isinstance(v, list) else "")
                        + f" is subgraph {sg}, but the model has {nsub} subgraphs"
                    )
    return member, opts


def _custom_options(o: dict, where: str, view: memoryview):
    offset, size = o["large_custom_options_offset"], o["large_custom_options_size"]
    if offset > 1:
        # Stored after the flatbuffer; the reader's buffer is the whole file.
        return _file_slice(o, where, view, offset, size)
    co = o["custom_options"]
    return None if co is None else co.tobytes()


def _file_slice(o, where, view, offset, size):
    if offset + size > len(view):
        raise ModelError(
            f"{_at(o, where)}: field 'large_custom_options_offset' places {size} bytes at byte {offset}, "
            f"past the end of the file ({len(view)} bytes)"
        )
    return view[offset : offset + size].tobytes()


def _build_tensor(t: dict, where: str, check_buffer) -> Tensor:
    type_name = t["type"]
    if type_name not in TENSOR_TYPES:
        raise ModelError(f"{_at(t, where)}: field 'type' holds unknown tensor type {type_name.rsplit('_', 1)[-1]}")
    shape = tuple(t["shape"] or ())
    for d in shape:
        if d < 0:
            raise ModelError(
                f"{_at(t, where)}: field 'shape' {list(shape)} has a negative dimension "
                "(unknown sizes belong in shape_signature)"
            )
    check_buffer(t["buffer"], t, where, "buffer")
    sig = t["shape_signature"]
    return Tensor(
        name=t["name"] or "",
        shape=shape,
        type=type_name,
        buffer=t["buffer"],
        quantization=_quantization(t["quantization"], f"QuantizationParameters of {where}", len(shape)),
        shape_signature=None if sig is None else tuple(sig),
        is_variable=t["is_variable"],
        sparsity=_sparsity(t["sparsity"], f"SparsityParameters of {where}"),
        has_rank=t["has_rank"],
    )


def _quantization(q: dict | None, where: str, rank: int) -> Quantization | None:
    # Like TFLM: a tensor is quantized when it has both scales and zero points.
    if q is None or not q["scale"] or not q["zero_point"]:
        return None
    scale = np.array(q["scale"], dtype=np.float32)
    zp = np.array(q["zero_point"], dtype=np.int64)
    out_of_range = np.flatnonzero((zp < -(1 << 31)) | (zp >= (1 << 31)))
    if out_of_range.size:  # every runtime holds zero points as int32
        k = int(out_of_range[0])
        raise ModelError(f"{_at(q, where)}: field 'zero_point'[{k}] is {int(zp[k])}, outside the int32 range")
    if zp.size != scale.size:
        zp = np.full(scale.size, zp[0], dtype=np.int64)  # TFLM: one zero point stands for all channels
    qd = q["quantized_dimension"]
    # Only per-channel tensors need a real axis. TFLM never reads the axis of a 1-D tensor, and real
    # models (person_detect.tflite) give their per-channel 1-D biases axis 3: read that as axis 0.
    if scale.size > 1 and rank == 1 and not 0 <= qd < rank:
        qd = 0
    if scale.size > 1 and not 0 <= qd < rank:
        raise ModelError(
            f"{_at(q, where)}: field 'quantized_dimension' is {qd}, but the tensor has rank {rank} "
            f"and {scale.size} per-channel scales"
        )
    return Quantization(
        scale=scale,
        zero_point=zp,
        quantized_dimension=qd,
        min=None if q["min"] is None else np.array(q["min"], dtype=np.float32),
        max=None if q["max"] is None else np.array(q["max"], dtype=np.float32),
    )


def _index_vector(union, where: str, field: str):
    if union is None:
        return None
    member, table = union
    dtype = _SPARSE_INDEX_DTYPES.get(member)
    if dtype is None:
        raise ModelError(f"{where}: field '{field}' has unknown index vector type {member}")
    if table is None or table["values"] is None:
        return np.zeros(0, dtype=dtype)
    values = table["values"]
    if isinstance(values, memoryview):
        arr = np.frombuffer(values, dtype=dtype)
    else:
        arr = np.array(values, dtype=dtype)
        arr.flags.writeable = False
    return arr


def _sparsity(s: dict | None, where: str) -> Sparsity | None:
    if s is None:
        return None
    dims = []
    for i, d in enumerate(s["dim_metadata"] or ()):
        dw = _at(d, f"DimensionMetadata[{i}] of {where}")
        if d["format"] not in ("DENSE", "SPARSE_CSR"):
            raise ModelError(f"{dw}: field 'format' holds unknown dimension type {d['format']}")
        dims.append(
            DimensionMetadata(
                format=d["format"],
                dense_size=d["dense_size"],
                array_segments=_index_vector(d["array_segments"], dw, "array_segments"),
                array_indices=_index_vector(d["array_indices"], dw, "array_indices"),
            )
        )
    return Sparsity(traversal_order=list(s["traversal_order"] or ()), block_map=list(s["block_map"] or ()), dim_metadata=dims)


# ---------------------------------------------------------------------------------------------------------------
