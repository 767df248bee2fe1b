"""The TFLite reader: real models read the same as the peer's generated schema code reads them, and broken
files fail with a ModelError that names the table, the field and the byte offset."""

from __future__ import annotations

import re
import struct
import time

import flatbuffers
import numpy as np
import pytest

from edge_sdk import ModelError
from edge_sdk.model import schema
from edge_sdk.model.flatbuf import ROOT, Reader, plan
from edge_sdk.model.reader import read_model
from edge_sdk.model.types import tensor_value
from tests.conftest import shared_model, shared_models
from tests.oprunner import T, op_model, op_model_object
from tests.test_fuzz import everything_model

MODELS = shared_models()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _peer_model(data: bytes):
    from ai_edge_litert import schema_py_generated as fb

    return fb.ModelT.InitFromPackedBuf(data, 0)


def _seq(v) -> list:
    return [] if v is None else [int(x) for x in v]


def _str(v) -> str:
    return "" if v is None else v.decode() if isinstance(v, bytes) else v


def _compare_options(ours: dict, options_type: str, peer_obj) -> int:
    """Compare every options field we read with the peer's object; return how many were compared."""
    compared = 0
    for f in plan(options_type):
        attr = _camel(f.name)
        if not hasattr(peer_obj, attr):
            continue  # a field the peer's (older/newer) schema lacks
        theirs = getattr(peer_obj, attr)
        mine = ours[f.name]
        where = f"{options_type}.{f.name}"
        if f.kind == "enum":
            assert mine == schema.enum_name(f.ref, theirs), where
        elif f.kind == "vec_enum":
            assert mine == [schema.enum_name(f.ref, int(x)) for x in (theirs if theirs is not None else [])], where
        elif f.kind.startswith("vec"):
            assert mine == _seq(theirs), where
        elif f.kind == "string":
            assert mine == _str(theirs), where
        elif f.kind == "scalar" and f.scalar in ("float", "double"):
            assert mine == pytest.approx(theirs, rel=1e-7), where
        elif f.kind in ("scalar",):
            assert mine == theirs, where
        else:
            continue
        compared += 1
    return compared


@pytest.mark.skipif(not MODELS, reason="../shared/models is absent in this checkout")
@pytest.mark.parametrize("path", MODELS, ids=[str(p.relative_to(p.parents[1])) for p in MODELS])
def test_shared_model_matches_peer_schema_reader(path):
    _compare_with_peer(path.read_bytes(), path.name)


def test_every_reader_path_matches_peer_schema_reader():
    # two subgraphs, CALL_ONCE, a sparse constant, a custom op, metadata, a signature, a variable
    data = everything_model()
    model = _compare_with_peer(data, "everything")
    sp = model.subgraphs[0].tensors[1].sparsity
    assert [d.format for d in sp.dim_metadata] == ["DENSE", "SPARSE_CSR"]
    assert sp.dim_metadata[1].array_segments.dtype == np.int32 and sp.dim_metadata[1].array_indices.dtype == np.uint8
    np.testing.assert_array_equal(sp.dim_metadata[1].array_indices, [0, 3, 1])
    np.testing.assert_array_equal(model.tensor_data(0, 1), [1.5, -2.0, 3.25])  # stored values, no shape check
    assert model.subgraphs[0].operators[2].custom_options == b"\x01\x02\x03"
    assert model.subgraphs[0].operators[2].inputs == [0, -1]
    assert model.metadata_bytes("min_runtime_version") == b"1.14.0\0"
    assert model.signature_defs[0].outputs == {"y": 3}
    assert model.subgraphs[1].tensors[1].is_variable
    assert model.subgraphs[1].operators[0].options == {"fused_activation_function": "RELU6", "pot_scale_int16": False}


def _compare_with_peer(data: bytes, label: str):
    path = type("P", (), {"name": label})
    model = read_model(data)
    peer = _peer_model(data)

    assert model.version == peer.version
    assert model.description == _str(peer.description)

    assert len(model.buffers) == len(peer.buffers or [])
    for i, (b, pb) in enumerate(zip(model.buffers, peer.buffers or [])):
        if pb.offset > 1:
            expected = data[pb.offset : pb.offset + pb.size]
        else:
            expected = b"" if pb.data is None else bytes(np.asarray(pb.data, dtype=np.uint8))
        assert bytes(b.data) == expected, f"Buffer[{i}]"

    assert len(model.operator_codes) == len(peer.operatorCodes)
    for c, pc in zip(model.operator_codes, peer.operatorCodes):
        assert c.builtin_code == max(pc.builtinCode, pc.deprecatedBuiltinCode)
        assert c.custom_code == (None if pc.customCode is None else _str(pc.customCode))
        assert c.version == pc.version

    options_compared = 0
    assert len(model.subgraphs) == len(peer.subgraphs)
    for j, (sg, psg) in enumerate(zip(model.subgraphs, peer.subgraphs)):
        assert sg.name == _str(psg.name)
        assert sg.inputs == _seq(psg.inputs) and sg.outputs == _seq(psg.outputs)
        assert len(sg.tensors) == len(psg.tensors or [])
        for i, (t, pt) in enumerate(zip(sg.tensors, psg.tensors or [])):
            where = f"{path.name} SubGraph[{j}] Tensor[{i}]"
            assert t.name == _str(pt.name), where
            assert list(t.shape) == _seq(pt.shape), where
            assert (t.shape_signature is None) == (pt.shapeSignature is None), where
            if t.shape_signature is not None:
                assert list(t.shape_signature) == _seq(pt.shapeSignature), where
            assert t.type == schema.enum_name("TensorType", pt.type), where
            assert t.buffer == pt.buffer and t.is_variable == pt.isVariable and t.has_rank == pt.hasRank, where
            pq = pt.quantization
            quantized = pq is not None and pq.scale is not None and len(pq.scale) > 0
            quantized = quantized and pq.zeroPoint is not None and len(pq.zeroPoint) > 0
            assert (t.quantization is not None) == quantized, where
            if quantized:
                q = t.quantization
                assert q.scale.dtype == np.float32 and q.zero_point.dtype == np.int64
                np.testing.assert_array_equal(q.scale, np.asarray(pq.scale, np.float32), err_msg=where)
                zp = np.asarray(pq.zeroPoint, np.int64)
                if zp.size != q.scale.size:
                    zp = np.full(q.scale.size, zp[0])
                np.testing.assert_array_equal(q.zero_point, zp, err_msg=where)
                if len(t.shape) == 1 and q.scale.size > 1 and pq.quantizedDimension >= 1:
                    assert q.quantized_dimension == 0, where  # person_detect's biases: axis 3 read as 0
                else:
                    assert q.quantized_dimension == pq.quantizedDimension, where
            assert (t.sparsity is None) == (pt.sparsity is None), where
            if t.sparsity is not None:
                ps = pt.sparsity
                assert t.sparsity.traversal_order == _seq(ps.traversalOrder), where
                assert t.sparsity.block_map == _seq(ps.blockMap), where
                for d, pd in zip(t.sparsity.dim_metadata, ps.dimMetadata, strict=True):
                    assert d.format == schema.enum_name("DimensionType", pd.format) and d.dense_size == pd.denseSize
                    for mine, their in ((d.array_segments, pd.arraySegments), (d.array_indices, pd.arrayIndices)):
                        assert (mine is None) == (their is None), where
                        if mine is not None:
                            assert mine.tolist() == _seq(their.values), where
            value = tensor_value(model, j, i)
            if value is not None:
                assert not value.flags.writeable
                if t.sparsity is None:
                    assert value.shape == t.shape, where

        assert len(sg.operators) == len(psg.operators or [])
        for k, (op, pop) in enumerate(zip(sg.operators, psg.operators or [])):
            where = f"{path.name} SubGraph[{j}] Operator[{k}]"
            assert op.opcode_index == pop.opcodeIndex, where
            assert op.inputs == _seq(pop.inputs) and op.outputs == _seq(pop.outputs), where
            assert op.intermediates == _seq(pop.intermediates), where
            expected_custom = None if pop.customOptions is None else bytes(np.asarray(pop.customOptions, np.uint8))
            if pop.largeCustomOptionsOffset > 1:
                off, size = pop.largeCustomOptionsOffset, pop.largeCustomOptionsSize
                expected_custom = data[off : off + size]
            assert op.custom_options == expected_custom, where
            if pop.builtinOptionsType:
                assert op.options_type == schema.UNIONS["BuiltinOptions"][pop.builtinOptionsType], where
                options_compared += _compare_options(op.options, op.options_type, pop.builtinOptions)
            elif pop.builtinOptions2Type:
                assert op.options_type == schema.UNIONS["BuiltinOptions2"][pop.builtinOptions2Type], where
                options_compared += _compare_options(op.options, op.options_type, pop.builtinOptions2)
            else:
                assert op.options_type is None and op.options == {}, where
            if op.options_type:
                assert set(op.options) == {f.name for f in plan(op.options_type)}, where

    assert len(model.metadata) == len(peer.metadata or [])
    for md, pmd in zip(model.metadata, peer.metadata or []):
        assert md.name == _str(pmd.name) and md.buffer == pmd.buffer
    assert len(model.signature_defs) == len(peer.signatureDefs or [])
    for sd, psd in zip(model.signature_defs, peer.signatureDefs or []):
        assert sd.signature_key == _str(psd.signatureKey) and sd.subgraph_index == psd.subgraphIndex
        assert sd.inputs == {_str(m.name): m.tensorIndex for m in psd.inputs or []}
        assert sd.outputs == {_str(m.name): m.tensorIndex for m in psd.outputs or []}

    ops_with_options = sum(1 for sg in model.subgraphs for op in sg.operators if op.options)
    assert options_compared > 0 or ops_with_options == 0
    return model


def test_options_are_plain_values_with_defaults():
    model = read_model(shared_model("tflite-micro/person_detect.tflite"))
    convs = [op for op in model.subgraphs[0].operators if op.options_type == "Conv2DOptions"]
    assert convs
    opts = convs[0].options
    assert opts["padding"] in ("SAME", "VALID")
    assert opts["fused_activation_function"] in ("NONE", "RELU", "RELU6")
    assert isinstance(opts["stride_w"], int) and opts["dilation_w_factor"] >= 1
    reshape = [op for op in model.subgraphs[0].operators if op.options_type == "ReshapeOptions"]
    for op in reshape:
        assert isinstance(op.options["new_shape"], list)


def test_person_detect_per_channel_bias_axis():
    # 1-D per-channel biases that declare quantized_dimension 3 (TFLM accepts them) read as axis 0.
    model = read_model(shared_model("tflite-micro/person_detect.tflite"))
    biases = [t for t in model.subgraphs[0].tensors if len(t.shape) == 1 and t.quantization and t.quantization.per_channel]
    assert biases and all(t.quantization.quantized_dimension == 0 for t in biases)


def test_vela_model_reads():
    # The Ethos-U custom op is refused when allocating, not when reading.
    model = read_model(shared_model("tflite-micro/person_detect_vela.tflite"))
    names = {model.op_name(op) for op in model.subgraphs[0].operators}
    assert "ethos-u" in names
    op = model.subgraphs[0].operators[0]
    assert op.custom_options is None or isinstance(op.custom_options, bytes)


def test_mobilenet_reads_fast_without_copying():
    path = shared_model("tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite")
    data = path.read_bytes()
    read_model(data)
    start = time.perf_counter()
    model = read_model(data)
    elapsed = time.perf_counter() - start
    assert elapsed < 0.5, f"reading mobilenet_v2 took {elapsed:.3f} s"
    big = max(model.buffers, key=lambda b: len(b.data))
    assert isinstance(big.data, memoryview) and big.data.obj is data  # a view of the file, not a copy


# ---------------------------------------------------------------------------------------------------------------
# Small self-made models (no ../shared needed)


def _add_model() -> bytes:
    x = T((1, 4), "INT8", scale=0.5, zero_point=-1)
    w = T((1, 4), "INT8", scale=0.25, zero_point=0, data=np.arange(4, dtype=np.int8))
    y = T((1, 4), "INT8", scale=0.5, zero_point=1)
    return op_model("ADD", [x, w], [y])


def _tables(data: bytes) -> dict:
    """The decoded model dicts (with table positions in '__pos__') for locating fields to corrupt."""
    return Reader(data).read("Model", struct.unpack_from("<I", data, 0)[0], ROOT)


def _field_pos(data: bytes, table_pos: int, table: str, field: str) -> int:
    slot = next(f.slot for f in plan(table) if f.name == field)
    vt = table_pos - struct.unpack_from("<i", data, table_pos)[0]
    vt_size = struct.unpack_from("<H", data, vt)[0]
    assert 4 + 2 * slot < vt_size, f"{table}.{field} is not stored"
    off = struct.unpack_from("<H", data, vt + 4 + 2 * slot)[0]
    assert off, f"{table}.{field} is not stored"
    return table_pos + off


def _target(data: bytes, field_pos: int) -> int:
    return field_pos + struct.unpack_from("<I", data, field_pos)[0]


def _patch(data: bytes, pos: int, fmt: str, value) -> bytes:
    b = bytearray(data)
    struct.pack_into(fmt, b, pos, value)
    return bytes(b)


def _error(data) -> str:
    with pytest.raises(ModelError) as e:
        read_model(data)
    return str(e.value)


def test_self_made_model_reads():
    data = _add_model()
    model = read_model(data)
    sg = model.subgraphs[0]
    assert model.op_name(sg.operators[0]) == "ADD"
    assert sg.operators[0].options_type == "AddOptions"
    assert sg.operators[0].options == {"fused_activation_function": "NONE", "pot_scale_int16": True}
    np.testing.assert_array_equal(model.tensor_data(0, 1), np.arange(4).reshape(1, 4))
    assert model.tensor_data(0, 0) is None
    for source in (bytearray(data), memoryview(data)):
        m2 = read_model(source)
        assert m2.subgraphs[0].tensors[1].shape == (1, 4)


def test_empty_truncated_and_foreign_files():
    assert "empty" in _error(b"")
    assert "truncated" in _error(b"\x10\x00\x00")
    data = _add_model()
    msg = _error(data[:4] + b"XXXX" + data[8:])
    assert "not a TFLite file" in msg and "TFL3" in msg
    assert "size-prefixed" in _error(struct.pack("<I", len(data)) + data)
    msg = _error(data[: len(data) // 2])
    assert "past the end of the file" in msg and "byte" in msg


def test_onnx_file_is_named():
    import onnx  # a test dependency (pyproject [test])
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    data = onnx.helper.make_model(graph).SerializeToString()
    assert "ONNX" in _error(data)


def test_missing_file_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="cannot read model file"):
        read_model(tmp_path / "nope.tflite")


def _op_table_pos(data) -> int:
    return _tables(data)["subgraphs"][0]["operators"][0]["__pos__"]


def test_out_of_range_opcode_index():
    data = _add_model()
    op = _op_table_pos(data)
    # opcode_index 0 is the default and so may be absent: rebuild with a stored value via the inputs vector
    m = _tables(data)
    pos = _field_pos(data, m["subgraphs"][0]["operators"][0]["__pos__"], "Operator", "inputs")
    vec = _target(data, pos)
    msg = _error(_patch(data, vec + 4, "<i", 99))
    assert re.search(r"Operator\[0\] of SubGraph\[0\] \(table at byte \d+\): field 'inputs'\[0\] is tensor 99", msg)
    assert "3 tensors" in msg
    # -1 is an omitted optional input, fine in inputs ...
    read_model(_patch(data, vec + 4, "<i", -1))
    # ... but not in outputs
    out = _target(data, _field_pos(data, op, "Operator", "outputs"))
    assert "field 'outputs'[0] is tensor -1" in _error(_patch(data, out + 4, "<i", -1))
    # opcode_index: write a model whose operator uses code 1 of 2, then drop the second code
    obj = op_model_object("ADD", [T((1, 4)), T((1, 4))], [T((1, 4))])
    from edge_sdk.model import write_model
    from edge_sdk.model.types import OperatorCode

    obj.operator_codes.append(OperatorCode(schema.BUILTIN_OPERATOR_CODES["ADD"], None, 2))
    obj.subgraphs[0].operators[0].opcode_index = 1
    data = write_model(obj)
    op = _op_table_pos(data)
    msg = _error(_patch(data, _field_pos(data, op, "Operator", "opcode_index"), "<I", 7))
    assert "Operator[0] of SubGraph[0]" in msg and "field 'opcode_index' is 7" in msg and "2 operator codes" in msg


def test_out_of_range_buffer_index():
    data = _add_model()
    t = _tables(data)["subgraphs"][0]["tensors"][1]
    msg = _error(_patch(data, _field_pos(data, t["__pos__"], "Tensor", "buffer"), "<I", 1000))
    assert re.search(r"Tensor\[1\] of SubGraph\[0\] \(table at byte \d+\): field 'buffer' refers to buffer 1000", msg)


def test_bad_vtables():
    data = _add_model()
    t = _tables(data)["subgraphs"][0]["tensors"][0]["__pos__"]
    vt = t - struct.unpack_from("<i", data, t)[0]
    msg = _error(_patch(data, vt, "<H", 3))  # odd vtable size
    assert f"vtable at byte {vt}" in msg and "Tensor[0] of SubGraph[0]" in msg
    msg = _error(_patch(data, t, "<i", -(len(data) + 100)))  # vtable outside the file
    assert "outside the file" in msg and f"table at byte {t}" in msg
    msg = _error(_patch(data, vt + 2, "<H", 6))  # inline size too small for the fields the vtable lists
    assert "outside the table's 6 inline bytes" in msg and "field '" in msg
    msg = _error(_patch(data, vt + 2, "<H", 0xFFFF))  # inline size past the end
    assert "runs past the end of the file" in msg


def test_absurd_vector_length():
    data = _add_model()
    t = _tables(data)["subgraphs"][0]["tensors"][2]["__pos__"]
    vec = _target(data, _field_pos(data, t, "Tensor", "shape"))
    msg = _error(_patch(data, vec, "<I", 0x7FFFFFFF))
    assert msg.startswith("Tensor[2] of SubGraph[0]: field 'shape' vector at byte")
    assert f"byte {vec} (2147483647 elements of 4 bytes) runs past the end of the file ({len(data)} bytes)" in msg


def test_offset_loops_and_self_references():
    data = _add_model()
    m = _tables(data)
    # the subgraphs vector's first element points at itself: a "table" whose vtable is the table itself
    sgs = _target(data, _field_pos(data, m["__pos__"], "Model", "subgraphs"))
    msg = _error(_patch(data, sgs + 4, "<I", 0))
    assert "SubGraph[0]" in msg and "vtable" in msg
    # a table whose vtable overlaps the table and claims fields inside the vtable itself
    t = m["subgraphs"][0]["tensors"][0]["__pos__"]
    with pytest.raises(ModelError):
        read_model(_patch(data, t, "<i", 0))
    # a vector of tables all pointing at one table: bounded by the decode budget, not a hang
    r = Reader(data)
    r.budget = 50
    with pytest.raises(ModelError, match="overlapping or repeated offsets"):
        r.read("Model", struct.unpack_from("<I", data, 0)[0], ROOT)


def test_bad_strings():
    data = _add_model()
    t = _tables(data)["subgraphs"][0]["tensors"][0]
    spos = _target(data, _field_pos(data, t["__pos__"], "Tensor", "name"))
    n = struct.unpack_from("<I", data, spos)[0]
    msg = _error(_patch(data, spos + 4 + n, "<B", ord("x")))
    assert "field 'name' string at byte" in msg and "NUL" in msg
    msg = _error(_patch(data, spos + 4, "<B", 0xFF))
    assert "not valid UTF-8" in msg and "Tensor[0] of SubGraph[0]" in msg
    msg = _error(_patch(data, spos, "<I", 0xFFFFFFF0))
    assert "field 'name' string at byte" in msg and "past the end" in msg


def test_per_channel_axis_is_checked():
    w = T((3, 4), "INT8", scale=[0.1, 0.2, 0.3], zero_point=0, quantized_dimension=0, data=np.ones((3, 4), np.int8))
    data = op_model("ADD", [w, T((3, 4))], [T((3, 4))])
    q = _tables(data)["subgraphs"][0]["tensors"][0]["quantization"]
    pos = _field_pos(data, q["__pos__"], "QuantizationParameters", "quantized_dimension") if q["quantized_dimension"] else None
    if pos is None:  # axis 0 is the default: written as absent; use the tensor built with axis 1 instead
        w = T((3, 4), "INT8", scale=[0.1] * 4, zero_point=0, quantized_dimension=1, data=np.ones((3, 4), np.int8))
        data = op_model("ADD", [w, T((3, 4))], [T((3, 4))])
        q = _tables(data)["subgraphs"][0]["tensors"][0]["quantization"]
        pos = _field_pos(data, q["__pos__"], "QuantizationParameters", "quantized_dimension")
    assert read_model(data).subgraphs[0].tensors[0].quantization.per_channel
    msg = _error(_patch(data, pos, "<i", 2))
    assert "QuantizationParameters of Tensor[0] of SubGraph[0]" in msg and "'quantized_dimension' is 2" in msg


def test_subgraph_index_in_call_once_options():
    obj = op_model_object("CALL_ONCE", [], [], options={"init_subgraph_index": 0})
    from edge_sdk.model import write_model

    obj.subgraphs.append(obj.subgraphs[0].__class__(tensors=[], inputs=[], outputs=[], operators=[], name="init"))
    obj.subgraphs[0].operators[0].options["init_subgraph_index"] = 1
    data = write_model(obj)
    assert read_model(data).subgraphs[0].operators[0].options == {"init_subgraph_index": 1}
    opts = _tables(data)["subgraphs"][0]["operators"][0]["builtin_options"][1]
    pos = _field_pos(data, opts["__pos__"], "CallOnceOptions", "init_subgraph_index")
    msg = _error(_patch(data, pos, "<i", 5))
    assert "CallOnceOptions of Operator[0] of SubGraph[0]" in msg and "is subgraph 5" in msg and "2 subgraphs" in msg


def test_unknown_enum_values_keep_their_number():
    data = _add_model()
    opts = _tables(data)["subgraphs"][0]["operators"][0]["builtin_options"][1]
    obj = op_model_object("ADD", [T((1, 4)), T((1, 4))], [T((1, 4))], options={"fused_activation_function": "RELU"})
    from edge_sdk.model import write_model

    data = write_model(obj)
    opts = _tables(data)["subgraphs"][0]["operators"][0]["builtin_options"][1]
    pos = _field_pos(data, opts["__pos__"], "AddOptions", "fused_activation_function")
    model = read_model(_patch(data, pos, "<b", 42))
    assert model.subgraphs[0].operators[0].options["fused_activation_function"] == "ActivationFunctionType_42"


# ---------------------------------------------------------------------------------------------------------------
# tensor_value


def test_tensor_value_checks_size_and_is_read_only():
    data = _add_model()
    model = read_model(data)
    v = model.tensor_data(0, 1)
    assert v.dtype == np.int8 and v.shape == (1, 4) and not v.flags.writeable
    model.subgraphs[0].tensors[1].shape = (1, 5)
    with pytest.raises(ModelError, match=r"Tensor\[1\] of SubGraph\[0\].*holds 4 bytes, but shape \[1, 5\] of INT8 needs 5"):
        model.tensor_data(0, 1)


@pytest.mark.parametrize(
    "type_name,values",
    [("INT4", np.array([-8, -1, 0, 7, 3], np.int8)), ("UINT4", np.array([0, 15, 9], np.uint8)), ("INT2", np.array([-2, -1, 0, 1, 1], np.int8))],
)
def test_packed_constants_unpack(type_name, values):
    w = T((len(values),), type_name, data=values)
    data = op_model("ADD", [w, T((len(values),), type_name)], [T((len(values),), type_name)])
    v = read_model(data).tensor_data(0, 0)
    np.testing.assert_array_equal(v, values)
    assert not v.flags.writeable


def test_float_types_and_int16():
    for type_name, dtype in (("FLOAT16", np.float16), ("INT16", np.int16), ("FLOAT32", np.float32), ("INT64", np.int64)):
        values = np.array([[1, -2], [3, 4]], dtype)
        data = op_model("ADD", [T((2, 2), type_name, data=values), T((2, 2), type_name)], [T((2, 2), type_name)])
        v = read_model(data).tensor_data(0, 0)
        assert v.dtype == dtype
        np.testing.assert_array_equal(v, values)


# ---------------------------------------------------------------------------------------------------------------
# Hand-built flatbuffers for the parts our writer does not produce: data past the flatbuffer, sparsity


_MARK = 0x5A5A5A5A5A5A5A5A


def _external_model(extra_custom: bool = False) -> tuple[bytes, bytes]:
    """A model whose buffer 1 (and custom options) live after the flatbuffer, via offset/size fields."""
    b = flatbuffers.Builder(256)
    payload = np.arange(4, dtype=np.float32).tobytes()

    def int_vec(values):
        b.StartVector(4, len(values), 4)
        for v in reversed(values):
            b.PrependInt32(v)
        return b.EndVector()

    name = b.CreateString("w")
    shape = int_vec([2, 2])
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(0, shape, 0)
    b.PrependInt8Slot(1, 0, 0)  # FLOAT32
    b.PrependUint32Slot(2, 1, 0)
    b.PrependUOffsetTRelativeSlot(3, name, 0)
    tensor = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(tensor)
    tensors = b.EndVector()
    inputs = int_vec([0])
    outputs = int_vec([0])
    b.StartObject(11)
    b.PrependUint32Slot(0, 0, 0)
    b.PrependUOffsetTRelativeSlot(1, inputs, 0)
    b.PrependUOffsetTRelativeSlot(2, outputs, 0)
    b.PrependUint64Slot(9, _MARK, 0)
    b.PrependUint64Slot(10, 7, 0)
    op = b.EndObject()
    ops = [op] if extra_custom else []
    b.StartVector(4, len(ops), 4)
    for o in ops:
        b.PrependUOffsetTRelative(o)
    operators = b.EndVector()
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(0, tensors, 0)
    b.PrependUOffsetTRelativeSlot(1, inputs, 0)
    b.PrependUOffsetTRelativeSlot(2, outputs, 0)
    b.PrependUOffsetTRelativeSlot(3, operators, 0)
    sg = b.EndObject()
    b.StartObject(3)
    empty = b.EndObject()
    b.StartObject(3)
    b.PrependUint64Slot(1, _MARK + 1, 0)
    b.PrependUint64Slot(2, len(payload), 0)
    ext = b.EndObject()
    custom = b.CreateString("MY_OP")
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(1, custom, 0)
    b.PrependInt32Slot(2, 1, 1)
    b.PrependInt32Slot(3, 32, 0)
    code = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(code)
    codes = b.EndVector()
    b.StartVector(4, 2, 4)
    b.PrependUOffsetTRelative(ext)
    b.PrependUOffsetTRelative(empty)
    bufs = b.EndVector()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(sg)
    sgs = b.EndVector()
    b.StartObject(8)
    b.PrependUint32Slot(0, 3, 0)
    b.PrependUOffsetTRelativeSlot(1, codes, 0)
    b.PrependUOffsetTRelativeSlot(2, sgs, 0)
    b.PrependUOffsetTRelativeSlot(4, bufs, 0)
    root = b.EndObject()
    b.Finish(root, file_identifier=b"TFL3")
    fb = bytearray(b.Output())
    fb += b"\0" * (-len(fb) % 16)
    data_at = len(fb)
    fb += payload
    custom_at = len(fb)
    fb += b"custom!"
    i = fb.find(struct.pack("<Q", _MARK + 1))
    struct.pack_into("<Q", fb, i, data_at)
    j = fb.find(struct.pack("<Q", _MARK))
    if j >= 0:
        struct.pack_into("<Q", fb, j, custom_at)
    return bytes(fb), payload


def test_buffers_and_custom_options_past_the_flatbuffer():
    data, payload = _external_model(extra_custom=True)
    model = read_model(data)
    assert bytes(model.buffers[1].data) == payload
    np.testing.assert_array_equal(model.tensor_data(0, 0), np.arange(4, dtype=np.float32).reshape(2, 2))
    assert model.subgraphs[0].operators[0].custom_options == b"custom!"
    assert model.op_name(model.subgraphs[0].operators[0]) == "MY_OP"
    # the peer's reader agrees on where the data is
    peer = _peer_model(data)
    assert data[peer.buffers[1].offset : peer.buffers[1].offset + peer.buffers[1].size] == payload
    # point past the end
    cut = data[: len(data) - 9]
    msg = _error(cut)
    assert "Buffer[1]" in msg or "large_custom_options_offset" in msg
    assert "past the end of the file" in msg


def test_zero_point_must_fit_int32():
    data = _add_model()
    q = _tables(data)["subgraphs"][0]["tensors"][1]["quantization"]
    vec = _target(data, _field_pos(data, q["__pos__"], "QuantizationParameters", "zero_point"))
    msg = _error(_patch(data, vec + 4, "<q", 1 << 40))
    assert "QuantizationParameters of Tensor[1] of SubGraph[0]" in msg and "'zero_point'[0] is 1099511627776" in msg
