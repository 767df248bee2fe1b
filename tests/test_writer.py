"""The writer: models it writes load and run in both peers; every field lands where the schema says.

Field checks read our bytes back with LiteRT's own generated schema reader (test-only use of the peer).
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from edge_sdk.model import schema
from edge_sdk.model.types import (
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
from edge_sdk.model.writer import option_defaults, options_for, write_model
from tests import peers
from tests.oprunner import T, assert_same, op_model, op_model_object

import ai_edge_litert.schema_py_generated as fb  # the peer's schema (a test dependency)


def both_peers(model: bytes, inputs, rtol=0.0, atol=0.0):
    tflm = peers.run_tflm(model, inputs)
    litert = peers.run_litert(model, inputs, reference=True)
    assert_same(tflm, litert, rtol, atol, what="TFLM vs LiteRT")
    return tflm


def parsed(data: bytes):
    return fb.ModelT.InitFromObj(fb.Model.GetRootAsModel(data, 0))


# ---------------------------------------------------------------------------------------------------------
# models we write run in both peers


def test_fully_connected_int8_per_channel(rng):
    x = T((2, 8), "INT8", scale=0.05, zero_point=-3)
    w = T((4, 8), "INT8", scale=[0.01, 0.02, 0.005, 0.03], zero_point=0,
          data=rng.integers(-127, 128, (4, 8)).astype(np.int8))
    b = T((4,), "INT32", scale=[0.05 * s for s in (0.01, 0.02, 0.005, 0.03)], zero_point=0,
          data=rng.integers(-500, 500, 4).astype(np.int32))
    y = T((2, 4), "INT8", scale=0.04, zero_point=5)
    model = op_model("FULLY_CONNECTED", [x, w, b], [y], options={"fused_activation_function": "RELU6"})
    xi = rng.integers(-128, 128, (2, 8)).astype(np.int8)
    out = both_peers(model, [xi])[0]
    assert out.shape == (2, 4) and out.dtype == np.int8
    assert len(np.unique(out)) > 1  # not saturated to one value: the weights reached the kernel
    # the fused RELU6 was read: no output above 6.0 in real terms
    assert ((out.astype(np.int32) - 5) * 0.04 <= 6.0 + 1e-6).all()


def test_fully_connected_without_bias(rng):
    x = T((1, 3), "FLOAT32")
    wv = rng.standard_normal((2, 3)).astype(np.float32)
    w = T((2, 3), "FLOAT32", data=wv)
    y = T((1, 2), "FLOAT32")
    model = op_model("FULLY_CONNECTED", [x, w, None], [y])
    assert parsed(model).subgraphs[0].operators[0].inputs.tolist() == [0, 1, -1]
    xi = rng.standard_normal((1, 3)).astype(np.float32)
    out = both_peers(model, [xi], rtol=1e-6, atol=1e-6)[0]
    np.testing.assert_allclose(out, xi @ wv.T, rtol=1e-5, atol=1e-6)


def test_conv_2d_float(rng):
    x = T((1, 6, 5, 2), "FLOAT32")
    wv = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
    bv = rng.standard_normal(3).astype(np.float32)
    w = T((3, 3, 3, 2), "FLOAT32", data=wv)
    b = T((3,), "FLOAT32", data=bv)
    y = T((1, 3, 3, 3), "FLOAT32")
    model = op_model("CONV_2D", [x, w, b], [y], options={"padding": "SAME", "stride_w": 2, "stride_h": 2})
    xi = rng.standard_normal((1, 6, 5, 2)).astype(np.float32)
    out = both_peers(model, [xi], rtol=1e-5, atol=1e-6)[0]
    # a direct NumPy convolution: SAME padding, stride 2 (pad top/left = 0 for 6->3 rows... computed below)
    pad_h = max((3 - 1) * 2 + 3 - 6, 0)
    pad_w = max((3 - 1) * 2 + 3 - 5, 0)
    xp = np.pad(xi, ((0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2), (0, 0)))
    ref = np.zeros((1, 3, 3, 3), np.float64)
    for i in range(3):
        for j in range(3):
            patch = xp[0, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3, :]
            ref[0, i, j] = np.tensordot(wv, patch, axes=([1, 2, 3], [0, 1, 2])) + bv
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_add_int8_broadcast(rng):
    a = T((1, 2, 3, 4), "INT8", scale=0.1, zero_point=3)
    b = T((1, 1, 1, 4), "INT8", scale=0.07, zero_point=-5)
    y = T((1, 2, 3, 4), "INT8", scale=0.12, zero_point=-1)
    model = op_model("ADD", [a, b], [y], options={"fused_activation_function": "RELU"})
    ai = rng.integers(-128, 128, (1, 2, 3, 4)).astype(np.int8)
    bi = rng.integers(-128, 128, (1, 1, 1, 4)).astype(np.int8)
    out = both_peers(model, [ai, bi])[0]
    real = 0.1 * (ai.astype(np.float64) - 3) + 0.07 * (bi.astype(np.float64) + 5)
    expect = np.clip(np.round(np.maximum(real, 0) / 0.12) - 1, -128, 127)
    assert np.abs(out.astype(np.int64) - expect).max() <= 1


def test_same_spec_twice_is_one_tensor(rng):
    a = T((3,), "FLOAT32")
    y = T((3,), "FLOAT32")
    model = op_model("MUL", [a, a], [y])
    m = parsed(model)
    assert m.subgraphs[0].operators[0].inputs.tolist() == [0, 0]
    assert m.subgraphs[0].inputs.tolist() == [0]
    xi = np.array([1.5, -2.0, 3.0], np.float32)
    np.testing.assert_array_equal(both_peers(model, [xi])[0], xi * xi)


@pytest.mark.parametrize("with_shape_input", [False, True])
def test_reshape_with_options(rng, with_shape_input):
    x = T((2, 3, 4), "INT8", scale=0.5, zero_point=0)
    y = T((4, 6), "INT8", scale=0.5, zero_point=0)
    inputs = [x]
    if with_shape_input:
        inputs.append(T((2,), "INT32", data=np.array([4, 6], np.int32)))
    model = op_model("RESHAPE", inputs, [y], options={"new_shape": [4, 6]})
    op = parsed(model).subgraphs[0].operators[0]
    assert op.builtinOptionsType == fb.BuiltinOptions.ReshapeOptions
    assert op.builtinOptions.newShape.tolist() == [4, 6]
    xi = rng.integers(-128, 128, (2, 3, 4)).astype(np.int8)
    out = both_peers(model, [xi])[0]
    np.testing.assert_array_equal(out, xi.reshape(4, 6))


def test_custom_op_written_and_refused_cleanly():
    x = T((4,), "FLOAT32")
    y = T((4,), "FLOAT32")
    model = op_model("EDGE_TEST_NO_SUCH_OP", [x], [y], custom_options=b"\x01\x02\x03", version=2)
    m = parsed(model)
    code = m.operatorCodes[0]
    assert code.builtinCode == schema.CUSTOM_CODE and code.deprecatedBuiltinCode == schema.CUSTOM_CODE
    assert code.customCode == b"EDGE_TEST_NO_SUCH_OP" and code.version == 2
    op = m.subgraphs[0].operators[0]
    assert bytes(op.customOptions.astype(np.uint8)) == b"\x01\x02\x03"
    assert op.builtinOptionsType == 0
    # LiteRT parses the model and then refuses the unknown op with an error, not a crash
    with pytest.raises(Exception, match="EDGE_TEST_NO_SUCH_OP"):
        peers.run_litert(model, [np.zeros(4, np.float32)], isolate=True)


# ---------------------------------------------------------------------------------------------------------
# every field lands where the schema says


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _sample_value(ftype: str, k: int):
    """A non-default value for an options field of type ``ftype`` (k varies it per field)."""
    if ftype in schema.ENUMS:
        values = schema.ENUMS[ftype][1]
        codes = sorted(values)
        return values[codes[(k % (len(codes) - 1)) + 1]] if len(codes) > 1 else values[codes[0]]
    if ftype == "bool":
        return True
    if ftype in ("float", "double"):
        return 0.25 + k
    if ftype == "string":
        return f"s{k}"
    if ftype.startswith("["):
        elem = ftype[1:-1]
        if elem == "bool":
            return [True, False, True]
        if elem in schema.ENUMS:
            return [schema.ENUMS[elem][1][c] for c in sorted(schema.ENUMS[elem][1])][::-1]
        if elem == "float":
            return [0.5, -1.5]
        return [k + 1, 2, -3] if not elem.startswith("u") else [k + 1, 2, 3]
    return 7 + k


def _expected(ftype: str, value):
    if ftype in schema.ENUMS:
        return schema.enum_value(ftype, value)
    if ftype == "string":
        return value.encode()
    if ftype.startswith("["):
        elem = ftype[1:-1]
        if elem in schema.ENUMS:
            return [schema.enum_value(elem, v) for v in value]
        return list(value)
    return value


DEPRECATED_FIELDS = {("ResizeBilinearOptions", "new_height"), ("ResizeBilinearOptions", "new_width")}

OPTION_TABLES = [
    (union, code, member)
    for union in ("BuiltinOptions", "BuiltinOptions2")
    for code, member in schema.UNIONS[union].items()
    if member in schema.TABLES
]


@pytest.mark.parametrize("union,code,member", OPTION_TABLES, ids=[m for _, _, m in OPTION_TABLES])
def test_options_fields_land_in_their_slots(union, code, member):
    fields = [f for f in schema.TABLES[member] if not f[1].startswith("@")]
    values = {name: _sample_value(ftype, k) for k, (name, ftype, _d, _s) in enumerate(fields)}
    x = T((1,), "FLOAT32")
    mobj = op_model_object("ADD", [x], [T((1,), "FLOAT32")])
    op = mobj.subgraphs[0].operators[0]
    op.options_type, op.options = member, values
    op_t = parsed(write_model(mobj)).subgraphs[0].operators[0]
    if union == "BuiltinOptions":
        assert op_t.builtinOptionsType == code and op_t.builtinOptions2Type == 0
        got = op_t.builtinOptions
    else:
        assert op_t.builtinOptions2Type == code and op_t.builtinOptionsType == 0
        got = op_t.builtinOptions2
    assert type(got).__name__ == f"{member}T"
    for name, ftype, _d, _s in fields:
        if (member, name) in DEPRECATED_FIELDS:  # the generated reader leaves these out
            continue
        actual = getattr(got, _camel(name))
        if isinstance(actual, np.ndarray):
            actual = actual.tolist()
        expect = _expected(ftype, values[name])
        if ftype == "float":
            assert actual == pytest.approx(expect), name
        else:
            assert actual == expect, f"{member}.{name}"


@pytest.mark.parametrize("member", ["Conv2DOptions", "FullyConnectedOptions", "AddOptions", "TransposeConvOptions",
                                    "BidirectionalSequenceLSTMOptions", "UniqueOptions", "GatherOptions"])
def test_missing_option_keys_take_schema_defaults(member):
    x = T((1,), "FLOAT32")
    mobj = op_model_object("ADD", [x], [T((1,), "FLOAT32")])
    op = mobj.subgraphs[0].operators[0]
    op.options_type, op.options = member, {}
    got = parsed(write_model(mobj)).subgraphs[0].operators[0].builtinOptions
    defaults = option_defaults(member)
    for name, ftype, _d, _s in schema.TABLES[member]:
        if ftype.startswith("@") or (member, name) in DEPRECATED_FIELDS:
            continue
        actual = getattr(got, _camel(name))
        expect = defaults[name]
        if ftype in schema.ENUMS:
            expect = schema.enum_value(ftype, expect)
        assert actual == expect, f"{member}.{name}"
    # the schema defaults that are not zero
    d = option_defaults("Conv2DOptions")
    assert d["dilation_w_factor"] == 1 and d["padding"] == "SAME" and d["fused_activation_function"] == "NONE"
    assert option_defaults("AddOptions")["pot_scale_int16"] is True
    assert option_defaults("UniqueOptions")["idx_out_type"] == "INT32"


def test_operator_codes_write_both_builtin_fields():
    x = T((2,), "FLOAT32")
    for op in ("ADD", "CONV_2D", "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM", "GELU", "STABLEHLO_ADD"):
        code = parsed(op_model(op, [x], [T((2,), "FLOAT32")], version=3)).operatorCodes[0]
        n = schema.BUILTIN_OPERATOR_CODES[op]
        assert (code.builtinCode, code.deprecatedBuiltinCode, code.version) == (n, min(n, 127), 3), op
        assert code.customCode is None


def _full_model() -> Model:
    tensors = [
        Tensor("in", (1, 4), "INT8", quantization=Quantization(np.array([0.5], np.float32), np.array([-2])),
               shape_signature=(-1, 4), has_rank=True),
        Tensor("w", (3, 4), "INT8", buffer=1,
               quantization=Quantization(np.array([0.1, 0.2, 0.3], np.float32), np.array([0, 1, 2]), 0,
                                         min=np.array([-1.0, -2, -3], np.float32), max=np.array([1.0, 2, 3], np.float32))),
        Tensor("state", (2, 2), "FLOAT32", buffer=2, is_variable=True),
        Tensor("sparse", (4, 4), "FLOAT32", buffer=3,
               sparsity=Sparsity([0, 1], [], [DimensionMetadata("DENSE", dense_size=4),
                                              DimensionMetadata("SPARSE_CSR", array_segments=np.array([0, 1, 1, 2, 3], np.int32),
                                                                array_indices=np.array([1, 0, 3], np.uint8))])),
        Tensor("out", (1, 3), "INT8", quantization=Quantization(np.array([0.25], np.float32), np.array([3]))),
    ]
    op = Operator(0, [0, 1, -1], [4], "FullyConnectedOptions", {"keep_num_dims": True}, intermediates=[2])
    sg = SubGraph(tensors, [0], [4], [op], name="main")
    buffers = [Buffer(b""), Buffer(np.arange(12, dtype=np.int8).tobytes()), Buffer(np.zeros(4, np.float32).tobytes()),
               Buffer(np.array([1, 2, 3], np.float32).tobytes()), Buffer(b"meta-bytes")]
    return Model([OperatorCode(9, None, 4)], [sg], buffers, description="full",
                 metadata=[Metadata("min_runtime_version", 4)],
                 signature_defs=[SignatureDef("serving_default", 0, {"x": 0}, {"y": 4})])


def test_model_fields_round_trip():
    data = write_model(_full_model())
    assert data[4:8] == b"TFL3"
    m = parsed(data)
    assert m.version == 3 and m.description == b"full"
    assert m.buffers[0].data is None or len(m.buffers[0].data) == 0
    assert [bytes(b.data.astype(np.uint8)) if b.data is not None else b"" for b in m.buffers[1:]] == [
        np.arange(12, dtype=np.int8).tobytes(), bytes(16), np.array([1, 2, 3], np.float32).tobytes(), b"meta-bytes"]
    # constant data sits on 16-byte boundaries of the file
    root = fb.Model.GetRootAsModel(data, 0)
    for i in range(1, root.BuffersLength()):
        assert root.Buffers(i).DataAsNumpy().ctypes.data % 16 == np.frombuffer(data, np.uint8).ctypes.data % 16
    assert m.metadata[0].name == b"min_runtime_version" and m.metadata[0].buffer == 4
    sd = m.signatureDefs[0]
    assert sd.signatureKey == b"serving_default" and sd.subgraphIndex == 0
    assert [(t.name, t.tensorIndex) for t in sd.inputs] == [(b"x", 0)]
    assert [(t.name, t.tensorIndex) for t in sd.outputs] == [(b"y", 4)]
    sg = m.subgraphs[0]
    assert sg.name == b"main" and sg.inputs.tolist() == [0] and sg.outputs.tolist() == [4]
    t_in, t_w, t_state, t_sparse, t_out = sg.tensors
    assert t_in.name == b"in" and t_in.shape.tolist() == [1, 4] and t_in.type == fb.TensorType.INT8
    assert t_in.shapeSignature.tolist() == [-1, 4] and t_in.hasRank and t_in.buffer == 0
    assert t_in.quantization.scale.tolist() == [0.5] and t_in.quantization.zeroPoint.tolist() == [-2]
    q = t_w.quantization
    assert q.scale.tolist() == pytest.approx([0.1, 0.2, 0.3]) and q.zeroPoint.tolist() == [0, 1, 2]
    assert q.min.tolist() == [-1, -2, -3] and q.max.tolist() == [1, 2, 3] and q.quantizedDimension == 0
    assert t_w.buffer == 1 and not t_w.isVariable and not t_w.hasRank
    assert t_state.isVariable and t_state.type == fb.TensorType.FLOAT32 and t_state.quantization is None
    sp = t_sparse.sparsity
    assert sp.traversalOrder.tolist() == [0, 1]
    d0, d1 = sp.dimMetadata
    assert d0.format == fb.DimensionType.DENSE and d0.denseSize == 4
    assert d1.format == fb.DimensionType.SPARSE_CSR
    assert d1.arraySegmentsType == fb.SparseIndexVector.Int32Vector and d1.arraySegments.values.tolist() == [0, 1, 1, 2, 3]
    assert d1.arrayIndicesType == fb.SparseIndexVector.Uint8Vector and d1.arrayIndices.values.tolist() == [1, 0, 3]
    op = sg.operators[0]
    assert op.opcodeIndex == 0 and op.inputs.tolist() == [0, 1, -1] and op.outputs.tolist() == [4]
    assert op.intermediates.tolist() == [2]
    assert op.builtinOptionsType == fb.BuiltinOptions.FullyConnectedOptions and op.builtinOptions.keepNumDims
    assert m.operatorCodes[0].builtinCode == 9 and m.operatorCodes[0].version == 4


def test_int4_constants_are_packed():
    mobj = op_model_object("FULLY_CONNECTED", [T((1, 3), "INT8", scale=1.0, zero_point=0),
                                               T((1, 3), "INT4", scale=1.0, zero_point=0,
                                                 data=np.array([[-8, 7, -1]], np.int8))],
                           [T((1, 1), "INT8", scale=1.0, zero_point=0)])
    assert mobj.buffers[1].data == bytes([0x78, 0x0F])


# ---------------------------------------------------------------------------------------------------------
# options_for


@pytest.mark.parametrize("op,member", [
    ("CONV_2D", "Conv2DOptions"), ("ADD", "AddOptions"), ("FULLY_CONNECTED", "FullyConnectedOptions"),
    ("RESHAPE", "ReshapeOptions"), ("STRIDED_SLICE", "StridedSliceOptions"),
    ("UNIDIRECTIONAL_SEQUENCE_LSTM", "UnidirectionalSequenceLSTMOptions"), ("RESIZE_BILINEAR", "ResizeBilinearOptions"),
    ("MEAN", "ReducerOptions"), ("SUM", "ReducerOptions"), ("REDUCE_MAX", "ReducerOptions"), ("SPLIT_V", "SplitVOptions"),
    ("PADV2", "PadV2Options"), ("ARG_MAX", "ArgMaxOptions"), ("VAR_HANDLE", "VarHandleOptions"),
    ("CALL_ONCE", "CallOnceOptions"), ("READ_VARIABLE", "ReadVariableOptions"),
    ("ASSIGN_VARIABLE", "AssignVariableOptions"), ("SVDF", "SVDFOptions"), ("LEAKY_RELU", "LeakyReluOptions"),
    ("BATCH_MATMUL", "BatchMatMulOptions"), ("CONCATENATION", "ConcatenationOptions"),
    ("DEPTH_TO_SPACE", "DepthToSpaceOptions"), ("GATHER", "GatherOptions"),
    ("SQUARED_DIFFERENCE", "SquaredDifferenceOptions"), ("HARD_SWISH", "HardSwishOptions"), ("DENSIFY", "DensifyOptions"),
    ("MAX_POOL_2D", "Pool2DOptions"), ("AVERAGE_POOL_2D", "Pool2DOptions"), ("MAXIMUM", "MaximumMinimumOptions"),
    ("MINIMUM", "MaximumMinimumOptions"), ("L2_NORMALIZATION", "L2NormOptions"),
    ("UNIDIRECTIONAL_SEQUENCE_RNN", "SequenceRNNOptions"), ("DEPTHWISE_CONV_2D", "DepthwiseConv2DOptions"),
    ("TRANSPOSE_CONV", "TransposeConvOptions"), ("SOFTMAX", "SoftmaxOptions"), ("QUANTIZE", "QuantizeOptions"),
    ("DEQUANTIZE", "DequantizeOptions"), ("SELECT_V2", "SelectV2Options"), ("BATCH_TO_SPACE_ND", "BatchToSpaceNDOptions"),
    ("NON_MAX_SUPPRESSION_V4", "NonMaxSuppressionV4Options"), ("ATAN2", "ATan2Options"),
    ("STABLEHLO_COMPOSITE", "StableHLOCompositeOptions"), ("DILATE", "DilateOptions"), ("LSH_PROJECTION", "LSHProjectionOptions"),
    ("RELU", None), ("LOGISTIC", None), ("TANH", None), ("CUSTOM", None), ("REDUCE_WINDOW", None), ("NOT_AN_OP", None),
])
def test_options_for(op, member):
    assert options_for(op) == member


def test_options_for_always_names_a_known_table():
    for op in schema.BUILTIN_OPERATOR_CODES:
        member = options_for(op)
        assert member is None or member in schema.TABLES, op


# ---------------------------------------------------------------------------------------------------------
# atomic writes


def _tiny() -> Model:
    return op_model_object("ADD", [T((2,), "FLOAT32"), T((2,), "FLOAT32")], [T((2,), "FLOAT32")])


def test_write_to_path(tmp_path):
    path = tmp_path / "m.tflite"
    data = write_model(_tiny(), path)
    assert path.read_bytes() == data
    assert os.listdir(tmp_path) == ["m.tflite"]
    np.testing.assert_array_equal(peers.run_tflm(path.read_bytes(), [np.ones(2, np.float32)] * 2)[0], [2, 2])


def test_failed_write_leaves_no_file(tmp_path):
    bad = _tiny()
    bad.subgraphs[0].operators[0].inputs = [0, 7]
    with pytest.raises(ModelError):
        write_model(bad, tmp_path / "m.tflite")
    assert os.listdir(tmp_path) == []


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "m.tflite"
    path.write_bytes(b"old contents")

    def failing_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="No space"):
        write_model(_tiny(), path)
    monkeypatch.undo()
    assert path.read_bytes() == b"old contents"
    assert os.listdir(tmp_path) == ["m.tflite"]


# ---------------------------------------------------------------------------------------------------------
# bad models


def _set(path: str, value):
    def mutate(m: Model):
        obj = m
        *parts, last = path.split(".")
        for p in parts:
            obj = obj[int(p)] if p.isdigit() else getattr(obj, p)
        if last.isdigit():
            obj[int(last)] = value
        elif isinstance(obj, dict):
            obj[last] = value
        else:
            setattr(obj, last, value)
    return mutate


BAD = [
    ("opcode index", _set("subgraphs.0.operators.0.opcode_index", 3), r"subgraph 0, operator 0.*opcode_index 3"),
    ("op input index", _set("subgraphs.0.operators.0.inputs", [0, 9]), r"subgraph 0, operator 0 \(ADD\), inputs.*9"),
    ("op output index", _set("subgraphs.0.operators.0.outputs", [-2]), r"operator 0 \(ADD\), outputs.*-2"),
    ("subgraph input -1", _set("subgraphs.0.inputs", [-1]), r"subgraph 0, inputs"),
    ("enum name", _set("subgraphs.0.operators.0.options.fused_activation_function", "RELU7"),
     r"operator 0 \(ADD\).*AddOptions.fused_activation_function.*'RELU7'"),
    ("unknown field", _set("subgraphs.0.operators.0.options.stride_w", 2), r"AddOptions has no field 'stride_w'"),
    ("wrong scalar type", _set("subgraphs.0.operators.0.options.pot_scale_int16", "yes"), r"pot_scale_int16.*bool"),
    ("options table", _set("subgraphs.0.operators.0.options_type", "NoSuchOptions"), r"NoSuchOptions"),
    ("tensor type", _set("subgraphs.0.tensors.1.type", "INT9"), r"subgraph 0, tensor 1.*INT9"),
    ("tensor buffer", _set("subgraphs.0.tensors.2.buffer", 5), r"subgraph 0, tensor 2.*buffer 5"),
    ("shape", _set("subgraphs.0.tensors.0.shape", (2, "x")), r"subgraph 0, tensor 0, shape"),
    ("negative dim", _set("subgraphs.0.tensors.0.shape", (-1, 2)), r"subgraph 0, tensor 0.*negative dimension"),
    ("per-channel axis", _set("subgraphs.0.tensors.0.quantization",
                              Quantization(np.ones(2, np.float32), np.zeros(2, np.int64), 1)),
     r"subgraph 0, tensor 0.*quantized_dimension 1.*rank-1"),
    ("zero points", _set("subgraphs.0.tensors.0.quantization",
                         Quantization(np.ones(2, np.float32), np.zeros(3, np.int64), 0)),
     r"subgraph 0, tensor 0.*2 scales but 3 zero points"),
    ("buffer 0", _set("buffers.0", Buffer(b"x")), r"buffer 0 must be the empty buffer"),
    ("buffer data", _set("buffers.0", Buffer("text")), r"buffers\[0\].*bytes"),
    ("no buffers", _set("buffers", []), r"buffer 0"),
    ("metadata buffer", lambda m: m.metadata.append(Metadata("x", 4)), r"metadata\[0\].*buffer 4"),
    ("signature subgraph", lambda m: m.signature_defs.append(SignatureDef("s", 2, {}, {})), r"signature_defs\[0\].*subgraph_index 2"),
    ("signature tensor", lambda m: m.signature_defs.append(SignatureDef("s", 0, {"a": 8}, {})), r"signature_defs\[0\].*inputs\['a'\].*8"),
    ("custom without code", _set("operator_codes.0", OperatorCode(32, None)), r"operator_codes\[0\].*custom_code"),
    ("int range", _set("subgraphs.0.operators.0.options_type", "Conv2DOptions"), None),
]


@pytest.mark.parametrize("what,mutate,message", BAD, ids=[b[0] for b in BAD])
def test_bad_models_raise_model_error(what, mutate, message):
    m = _tiny()
    mutate(m)
    if what == "int range":
        m.subgraphs[0].operators[0].options = {"stride_w": 2**31}
        message = r"Conv2DOptions.stride_w.*2147483648.*int"
    with pytest.raises(ModelError, match=message):
        write_model(m)


def test_assert_same_reports_what_differs():
    a = [np.array([1, 2, 3], np.int8)]
    assert_same(a, [np.array([1, 2, 3], np.int8)])
    with pytest.raises(AssertionError, match=r"differs in 1 of 3 values, max \|diff\| 2; first at \(2,\)"):
        assert_same(a, [np.array([1, 2, 5], np.int8)])
    with pytest.raises(AssertionError, match="dtype"):
        assert_same(a, [np.array([1, 2, 3], np.int16)])
    with pytest.raises(AssertionError, match="shape"):
        assert_same(a, [np.array([[1, 2, 3]], np.int8)])
    with pytest.raises(AssertionError, match="outputs"):
        assert_same(a, a + a)
    with pytest.raises(AssertionError):
        assert_same([np.float32([1.0])], [np.float32([1.001])], rtol=1e-5)
    assert_same([np.float32([1.0, np.nan])], [np.float32([1.0000001, np.nan])], rtol=1e-5)


def test_check_op_runs_ours_against_both_peers(rng):
    from tests.oprunner import check_op

    a = T((2, 3), "INT8", scale=0.1, zero_point=3)
    b = T((2, 3), "INT8", scale=0.2, zero_point=-4)
    model = op_model("ADD", [a, b], [T((2, 3), "INT8", scale=0.25, zero_point=0)])
    xs = [rng.integers(-128, 128, (2, 3)).astype(np.int8) for _ in range(2)]
    out = check_op(model, xs, peer=["tflm", "litert"])
    assert out[0].shape == (2, 3) and out[0].dtype == np.int8


def test_over_2gb_is_refused_without_allocating():
    m = _tiny()
    huge = np.broadcast_to(np.zeros(1, np.uint8), (2**31,))  # 2 GB that take no memory
    m.buffers.append(Buffer(huge))
    with pytest.raises(ModelError, match="2 GB"):
        write_model(m)


def test_not_a_model():
    with pytest.raises(ModelError):
        write_model("model.tflite")


# ---------------------------------------------------------------------------------------------------------
# real models: read -> write gives a model that computes the same outputs in both peers

from tests.conftest import SHARED_MODELS, shared_models  # noqa: E402

SHARED = shared_models()
# Peers that refuse an original model (NOTES.md): the written copy must be refused the same way, except where
# noted in WRITER_REPAIRS.
PEER_REFUSES = {
    ("person_detect.tflite", "litert"): r"quantized_dimension must be in range",  # its 1-D biases declare dim 3
    ("keyword_scrambled_8bit.tflite", "litert"): r"^PeerCrashed: litert exited with -\d+: ",  # aborts (heap corruption)
}
# The reader reads a per-channel 1-D tensor's out-of-range axis as 0 (TFLM never reads it), so the written copy
# of person_detect is valid for LiteRT: it must then compute what TFLM computes on the original (+-1 quantum).
WRITER_REPAIRS = {("person_detect.tflite", "litert")}


def _same(a, b, where="model"):
    """Deep equality of two Model objects (numpy arrays and memoryviews by value)."""
    import dataclasses

    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f"{where}: {a!r} vs {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{where}: {a!r} vs {b!r}"
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (memoryview, bytes, bytearray)):
        assert bytes(a) == bytes(b), where
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert np.array_equal(a, b), f"{where}: {a!r} vs {b!r}"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def _model_inputs(path, model: Model) -> list[np.ndarray]:
    """The model's own test inputs (seanet csv files) when it has them, else seeded random values."""
    sg = model.subgraphs[0]
    csvs = sorted(path.parent.glob(f"{path.stem}_input*_*.csv"))
    if len(csvs) == len(sg.inputs):
        out = []
        for i, c in zip(sg.inputs, csvs):
            t = sg.tensors[i]
            values = np.array([int(v) for v in c.read_text().replace("\n", ",").split(",") if v.strip()])
            out.append(values.astype(t.dtype).reshape(t.shape))
        return out
    rng = np.random.default_rng(20261130)
    out = []
    for i in sg.inputs:
        t = sg.tensors[i]
        if t.dtype.kind == "f":
            out.append(rng.standard_normal(t.shape).astype(t.dtype))
        elif t.dtype.kind == "b":
            out.append(rng.integers(0, 2, t.shape).astype(np.bool_))
        else:
            info = np.iinfo(t.dtype)
            out.append(rng.integers(info.min, info.max, t.shape, dtype=t.dtype, endpoint=True))
    return out


def _rel(p) -> str:
    return str(p.relative_to(SHARED_MODELS))


@pytest.mark.parametrize("path", SHARED or [None], ids=[_rel(p) for p in SHARED] or ["no-shared-models"])
def test_read_write_read_is_identity(path):
    from edge_sdk.model import read_model

    if path is None:
        pytest.skip("../shared/models is absent in this checkout")
    original = read_model(path)
    written = write_model(original)
    again = read_model(written)
    _same(original, again)
    assert write_model(again) == written  # deterministic: the same model gives the same bytes


@pytest.mark.parametrize("peer", ["tflm", "litert"])
@pytest.mark.parametrize("path", SHARED or [None], ids=[_rel(p) for p in SHARED] or ["no-shared-models"])
def test_written_model_runs_like_the_original(path, peer):
    from edge_sdk.model import read_model

    if path is None:
        pytest.skip("../shared/models is absent in this checkout")
    original = path.read_bytes()
    model = read_model(original)
    written = write_model(model)
    inputs = _model_inputs(path, model)
    # The seanet single-op models are known to run in both peers; whole models might crash one.
    isolate = "seanet" not in path.parts

    def run(data):
        try:
            if peer == "tflm":
                return peers.run_tflm(data, inputs, isolate=isolate)
            return peers.run_litert(data, inputs, reference=True, isolate=isolate)
        except peers.PeerCrashed as e:  # the same exit status and last line of stderr (the error) for the copy
            head, _, err = str(e).partition(": ")
            return f"PeerCrashed: {head}: {(err.strip().splitlines() or [''])[-1]}"
        except Exception as e:  # a peer that refuses the original must refuse the copy the same way
            return f"{type(e).__name__}: {e}"

    want, got = run(original), run(written)
    refusal = PEER_REFUSES.get((path.name, peer))
    if refusal is not None:  # the known refusal still happens (else this entry goes)
        assert isinstance(want, str) and re.search(refusal, want), want
    if (path.name, peer) in WRITER_REPAIRS:
        assert not isinstance(got, str), got
        wide = lambda outs: [np.asarray(o, np.int64) for o in outs]  # noqa: E731  (no int8 wrap in |a - b|)
        assert_same(wide(got), wide(peers.run_tflm(original, inputs, isolate=True)), atol=1,
                    what=f"written copy in {peer} vs the original in TFLM")
        return
    crashed = re.compile(r"^PeerCrashed: \w+ exited with -\d+: ")  # killed by a signal
    if isinstance(want, str) and crashed.match(want):
        # both crash by a signal; a corrupted heap ends as SIGSEGV (-11) or SIGABRT (-6, "double free") run to run
        # (seen in CI), so the signal and the last line are not compared (an exit status >= 0 with its error line
        # is compared whole below)
        assert isinstance(got, str) and crashed.match(got), (got, want)
        assert got.split(" exited")[0] == want.split(" exited")[0], (got, want)
        return
    if isinstance(want, str):
        assert got == want
        return
    assert not isinstance(got, str), got
    assert_same(got, want, what=f"written vs original in {peer}")
