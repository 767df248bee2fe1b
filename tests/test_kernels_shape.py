"""Shape and data-movement kernels against TFLite Micro (and LiteRT's reference kernels where TFLM cannot run
the case: strided-slice ellipsis / new-axis masks, int64 outputs, DENSIFY), bit for bit.

Models are single-operator .tflite files built with tests.oprunner; the output shape each model declares is
the one our prepare computes, which TFLM re-derives and checks in its own prepare for the ops that have one
(strided slice, pad, gather, split via output dims, ...). Where TFLM trusts the declared shape, the tests
also compare with a numpy expectation.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from edge_sdk.runtime.kernels import shape as K
from edge_sdk.runtime.kernels.node import Node, TensorInfo
from edge_sdk.model.types import DimensionMetadata, Sparsity, numpy_dtype
from tests.nodes import make_node
from tests.oprunner import T, assert_same, check_op, op_model, run_ours

RNG = np.random.default_rng(20261130)
PREPARE = {
    "RESHAPE": K.prepare_reshape, "SQUEEZE": K.prepare_squeeze, "EXPAND_DIMS": K.prepare_expand_dims,
    "SHAPE": K.prepare_shape, "CONCATENATION": K.prepare_concatenation, "PACK": K.prepare_pack,
    "UNPACK": K.prepare_unpack, "SPLIT": K.prepare_split, "SPLIT_V": K.prepare_split_v,
    "TRANSPOSE": K.prepare_transpose, "STRIDED_SLICE": K.prepare_strided_slice, "SLICE": K.prepare_slice,
    "PAD": K.prepare_pad, "PADV2": K.prepare_pad, "GATHER": K.prepare_gather,
    "DEPTH_TO_SPACE": K.prepare_depth_to_space, "SPACE_TO_DEPTH": K.prepare_space_to_depth,
    "DENSIFY": K.prepare_densify,
}


def our_shapes(op, inputs, outputs, options=None):
    """Run our prepare on specs; returns the output shapes it set."""
    node = make_node(op, inputs, outputs, options)
    PREPARE[op](node)
    return [node.output_shapes[i] for i in range(len(outputs))]


def like(spec, shape):
    return T(shape, spec.type, spec.scale, spec.zero_point)


def rand(shape, type_):
    dt = numpy_dtype(type_)
    if type_ == "BOOL":
        return RNG.integers(0, 2, shape).astype(bool)
    if dt.kind == "f":
        return RNG.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return RNG.integers(lo, hi, shape, endpoint=True).astype(dt)


def run_case(op, inputs, out_type_specs, options=None, feeds=None, peer="tflm", version=1, expect=None):
    """Declare the outputs with our shapes, run ours and the peer(s); compare; return our outputs."""
    shapes = our_shapes(op, inputs, out_type_specs, options)
    outs = [like(s, sh) for s, sh in zip(out_type_specs, shapes)]
    model = op_model(op, inputs, outs, options, version=version)
    if feeds is None:
        feeds = [rand(s.shape, s.type) for s in inputs if s is not None and s.data is None]
    ours = check_op(model, feeds, peer=peer)
    if expect is not None:
        for a, b in zip(ours, expect(*feeds)):
            np.testing.assert_array_equal(a, b)
    return ours


def q8(shape, scale=0.05, zp=-3):
    return T(shape, "INT8", scale, zp)


# -------------------------------------------------------------------------------------- reshape family


@pytest.mark.parametrize("new_shape", [[6, 4], [-1, 4], [24], [2, -1, 2], [1, 2, 3, 4]])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
def test_reshape_shape_tensor(new_shape, type_):
    x = T((2, 3, 4), type_)
    s = T((len(new_shape),), "INT32", data=np.array(new_shape, np.int32))
    ours = run_case("RESHAPE", [x, s], [T((1,), type_)])
    want = [d for d in new_shape]
    if -1 in want:
        want[want.index(-1)] = 24 // -int(np.prod(want))
    assert ours[0].shape == tuple(want)


def test_reshape_from_options_and_scalar():
    x = T((1, 6), "INT8")
    ours = run_case("RESHAPE", [x], [T((1,), "INT8")], options={"new_shape": [3, -1]})
    assert ours[0].shape == (3, 2)
    one = T((1, 1), "FLOAT32")
    model = op_model("RESHAPE", [one], [T((), "FLOAT32")], options={"new_shape": [0]})  # legacy scalar marker
    feed = np.array([[2.5]], np.float32)
    assert run_ours(model, [feed])[0].shape == ()
    with pytest.raises(ModelError):
        our_shapes("RESHAPE", [x, T((2,), "INT32", data=np.array([4, -1], np.int32))], [T((1,), "INT8")])


def test_reshape_runtime_shape_uses_declared_output():
    # The new shape is a model input: like TFLM, we trust the declared output shape.
    x, s = T((2, 6), "INT8"), T((2,), "INT32")
    model = op_model("RESHAPE", [x, s], [T((3, 4), "INT8")])
    feeds = [rand((2, 6), "INT8"), np.array([3, 4], np.int32)]
    ours = check_op(model, feeds)
    assert ours[0].shape == (3, 4)


@pytest.mark.parametrize("dims,shape", [([], (1, 3, 1, 2)), ([0], (1, 3, 1, 2)), ([-2, 0], (1, 3, 1, 2)), ([2], (4, 1, 1))])
def test_squeeze(dims, shape):
    x = T(shape, "INT8")
    ours = run_case("SQUEEZE", [x], [T((1,), "INT8")], options={"squeeze_dims": dims})
    assert ours[0].shape == np.squeeze(np.zeros(shape), axis=tuple(dims) if dims else None).shape
    with pytest.raises(ModelError):
        our_shapes("SQUEEZE", [T((2, 3), "INT8")], [T((1,), "INT8")], {"squeeze_dims": [0]})


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("type_", ["INT8", "INT16", "FLOAT32"])
def test_expand_dims(axis, type_):
    x = T((3, 4), type_)
    ours = run_case("EXPAND_DIMS", [x, T((1,), "INT32", data=np.array([axis], np.int32))], [T((1,), type_)])
    assert ours[0].shape == np.expand_dims(np.zeros((3, 4)), axis).shape


def test_shape_int32_and_int64():
    x = T((2, 5, 1, 3), "INT8")
    ours = run_case("SHAPE", [x], [T((1,), "INT32")], options={"out_type": "INT32"})
    np.testing.assert_array_equal(ours[0], [2, 5, 1, 3])
    ours = run_case("SHAPE", [x], [T((1,), "INT64")], options={"out_type": "INT64"}, peer="litert")
    assert ours[0].dtype == np.int64


# ----------------------------------------------------------------------------- concatenation, pack, split


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32", "BOOL"])
def test_concatenation(axis, type_):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(n + (k if d == axis % 3 else 0) for d, n in enumerate(s)) for k, s in enumerate(shapes)]
    q = {"scale": 0.1, "zero_point": 2} if type_ == "INT8" else {}
    if type_ == "INT16":
        q = {"scale": 0.01, "zero_point": 0}
    xs = [T(s, type_, **q) for s in shapes]
    run_case("CONCATENATION", xs, [T((1,), type_, **q)], options={"axis": axis},
             expect=lambda *f: [np.concatenate(f, axis=axis)])


def test_concatenation_int32_with_constant():
    # the audio_preprocessor pattern: runtime int32 joined with a constant
    x = T((1, 4), "INT32")
    c = T((1, 2), "INT32", data=np.array([[7, -9]], np.int32))
    run_case("CONCATENATION", [x, c], [T((1,), "INT32")], options={"axis": 1})


def test_concatenation_refuses_mixed_int8_quantization():
    xs = [T((1, 2), "INT8", 0.1, 0), T((1, 2), "INT8", 0.2, 0)]
    with pytest.raises(UnsupportedOpError):
        our_shapes("CONCATENATION", xs, [T((2, 2), "INT8", 0.1, 0)], {"axis": 0})
    with pytest.raises(UnsupportedOpError):
        our_shapes("CONCATENATION", xs[:1], [T((1, 2), "INT8", 0.1, 0)], {"axis": 0, "fused_activation_function": "RELU"})


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
def test_pack_unpack(axis, type_):
    xs = [T((3, 4), type_) for _ in range(3)]
    run_case("PACK", xs, [T((1,), type_)], options={"values_count": 3, "axis": axis},
             expect=lambda *f: [np.stack(f, axis=axis)])
    x = T((2, 3, 4), type_)
    n = (2, 3, 4)[axis]
    run_case("UNPACK", [x], [T((1,), type_)] * n, options={"num": n, "axis": axis},
             expect=lambda f: list(np.moveaxis(f, axis, 0)))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
def test_split(axis, type_):
    x = T((4, 6, 2), type_)
    n = 2
    a = T((), "INT32", data=np.array(axis, np.int32))
    run_case("SPLIT", [a, x], [T((1,), type_)] * n, options={"num_splits": n},
             expect=lambda f: np.split(f, n, axis=axis))


@pytest.mark.parametrize("sizes", [[1, 3, 2], [2, -1, 1], [6]])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT32"])
def test_split_v(sizes, type_):
    x = T((3, 6), type_)
    s = T((len(sizes),), "INT32", data=np.array(sizes, np.int32))
    a = T((1,), "INT32", data=np.array([1], np.int32))
    ours = run_case("SPLIT_V", [x, s, a], [T((1,), type_)] * len(sizes), options={"num_splits": len(sizes)})
    real = [s if s != -1 else 6 - (sum(sizes) + 1) for s in sizes]
    assert [o.shape[1] for o in ours] == real


# ------------------------------------------------------------------------------------------ transpose


@pytest.mark.parametrize("perm", [(1, 0), (0, 2, 1), (2, 0, 1), (0, 3, 1, 2), (3, 2, 1, 0), (0, 1, 4, 2, 3)])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16"])
def test_transpose(perm, type_):
    shape = (2, 3, 4, 5, 2)[: len(perm)]
    x = T(shape, type_)
    p = T((len(perm),), "INT32", data=np.array(perm, np.int32))
    run_case("TRANSPOSE", [x, p], [T((1,), type_)], expect=lambda f: [f.transpose(perm)])


# ----------------------------------------------------------------------------------- strided slice / slice

SS_CASES = [
    # begin, end, strides, options
    ([0, 0, 0], [2, 3, 4], [1, 1, 1], {}),
    ([1, 0, 1], [2, 3, 4], [1, 2, 2], {}),
    ([-1, -2, -1], [-3, 0, 0], [-1, -1, -2], {}),
    ([0, 1, 0], [0, 3, 0], [1, 1, 1], {"begin_mask": 5, "end_mask": 5}),
    ([1, 1, 3], [2, 2, 4], [1, 1, 1], {"shrink_axis_mask": 1}),
    ([1, -1, 0], [2, 0, 4], [1, 1, 1], {"shrink_axis_mask": 2}),
    ([0, 2, -1], [0, 0, 0], [1, 1, 1], {"shrink_axis_mask": 6, "begin_mask": 1, "end_mask": 1}),
    ([-5, -10, 10], [10, 10, -10], [1, 1, -1], {}),
    ([0, 0, 3], [2, 3, 0], [1, 1, -1], {"end_mask": 4}),
    ([1, 2, 3], [0, 0, 0], [-1, -1, -1], {"end_mask": 7}),
    ([0, 0, 0], [2, 3, 4], [2, 3, 3], {}),
    ([2, 3, 4], [0, 0, 0], [1, 1, 1], {}),  # empty
    ([0, 0, 1], [1, 1, 3], [1, 1, 1], {"begin_mask": 3, "end_mask": 3}),
]


@pytest.mark.parametrize("case", range(len(SS_CASES)))
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32", "BOOL"])
def test_strided_slice_vs_tflm(case, type_):
    begin, end, strides, opts = SS_CASES[case]
    x = T((2, 3, 4), type_)
    ins = [x] + [T((3,), "INT32", data=np.array(v, np.int32)) for v in (begin, end, strides)]
    shapes = our_shapes("STRIDED_SLICE", ins, [T((1,), type_)], opts)
    # TFLM cannot allocate an empty output tensor; LiteRT's reference kernel checks those cases
    peer = "litert" if 0 in shapes[0] else "tflm"
    run_case("STRIDED_SLICE", ins, [T((1,), type_)], options=opts, version=4, peer=peer)


def test_strided_slice_python_semantics():
    # where TFLite agrees with python slicing, check against numpy directly
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    node_in = T(x.shape, "FLOAT32")
    for begin, end, strides, want in [
        ([0, 1, 0, 4], [2, 3, 4, 0], [1, 1, 2, -2], x[0:2, 1:3, 0:4:2, 4:0:-2]),
        ([1, 0, -1, 0], [2, 3, -5, 5], [1, 2, -1, 3], x[1:2, 0:3:2, -1:-5:-1, 0:5:3]),
    ]:
        ins = [node_in] + [T((4,), "INT32", data=np.array(v, np.int32)) for v in (begin, end, strides)]
        node = make_node("STRIDED_SLICE", ins, [T((1,), "FLOAT32")])
        run = K.prepare_strided_slice(node)
        out = np.zeros(node.output_shapes[0], np.float32)
        run([x, None, None, None], [out])
        np.testing.assert_array_equal(out, want)


LITERT_SS = [
    # rank-3 input (2, 3, 4); cases only LiteRT's kernel reads: ellipsis, new axis, short begin, offset
    ([0, 1], [0, 3], [1, 1], {"ellipsis_mask": 1}),
    ([1, 0], [2, 0], [1, 1], {"ellipsis_mask": 2, "shrink_axis_mask": 1}),
    ([0, 0, 0], [1, 1, 1], [1, 1, 1], {"ellipsis_mask": 2}),
    ([0, 0, 0, 0], [2, 1, 3, 4], [1, 1, 1, 1], {"new_axis_mask": 2}),
    ([0, 0], [1, 2], [1, 1], {"new_axis_mask": 1}),
    ([0, 0, 1], [0, 0, 3], [1, 1, 1], {"new_axis_mask": 1, "ellipsis_mask": 2}),
    ([1], [2], [1], {}),
    ([0, 1, 1], [2, 1, 2], [1, 1, 1], {"offset": True}),
]


@pytest.mark.parametrize("case", range(len(LITERT_SS)))
def test_strided_slice_masks_vs_litert(case):
    begin, end, strides, opts = LITERT_SS[case]
    x = T((2, 3, 4), "INT8", 0.1, 0)
    n = len(begin)
    ins = [x] + [T((n,), "INT32", data=np.array(v, np.int32)) for v in (begin, end, strides)]
    run_case("STRIDED_SLICE", ins, [T((1,), "INT8", 0.1, 0)], options=opts, peer="litert", version=4)


def test_strided_slice_refuses_runtime_begin():
    ins = [T((4,), "INT8"), T((1,), "INT32"), T((1,), "INT32", data=np.array([2], np.int32)),
           T((1,), "INT32", data=np.array([1], np.int32))]
    with pytest.raises(UnsupportedOpError):
        our_shapes("STRIDED_SLICE", ins, [T((1,), "INT8")])


@pytest.mark.parametrize("begin,size", [([0, 0, 0], [2, 3, 4]), ([1, 1, 1], [1, 2, 3]), ([0, 2, 1], [-1, 1, -1])])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32", "BOOL"])
@pytest.mark.parametrize("index_type", ["INT32", "INT64"])
def test_slice(begin, size, type_, index_type):
    x = T((2, 3, 4), type_)
    dt = numpy_dtype(index_type)
    ins = [x, T((3,), index_type, data=np.array(begin, dt)), T((3,), index_type, data=np.array(size, dt))]
    sl = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))
    run_case("SLICE", ins, [T((1,), type_)], expect=lambda f: [f[sl]])


# ---------------------------------------------------------------------------------------------- pad


@pytest.mark.parametrize("paddings", [[[0, 0], [1, 2], [3, 0], [0, 0]], [[1, 0], [0, 1], [2, 2], [1, 1]], [[0, 0], [0, 0], [0, 0], [0, 0]]])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
def test_pad(paddings, type_):
    q = {"scale": 0.1, "zero_point": -7} if type_ == "INT8" else {}
    x = T((1, 2, 3, 2), type_, **q)
    p = T((4, 2), "INT32", data=np.array(paddings, np.int32))
    fill = -7 if type_ == "INT8" else 0
    run_case("PAD", [x, p], [T((1,), type_, **q)],
             expect=lambda f: [np.pad(f, paddings, constant_values=fill)])


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
def test_padv2_constant(type_):
    q = {"scale": 0.1, "zero_point": 4} if type_ == "INT8" else {}
    x = T((2, 3), type_, **q)
    p = T((2, 2), "INT32", data=np.array([[1, 0], [2, 1]], np.int32))
    c = T((1,), type_, data=np.array([5], numpy_dtype(type_)), **q)
    run_case("PADV2", [x, p, c], [T((1,), type_, **q)],
             expect=lambda f: [np.pad(f, [[1, 0], [2, 1]], constant_values=5)])
    # a pad value fed at run time
    c_rt = T((1,), type_, **q)
    ours = run_case("PADV2", [x, p, c_rt], [T((1,), type_, **q)],
                    feeds=[rand((2, 3), type_), np.array([-3], numpy_dtype(type_))])
    assert ours[0][0, 0] == -3


# -------------------------------------------------------------------------------------------- gather


@pytest.mark.parametrize("axis,idx_shape", [(0, (4,)), (1, (2, 3)), (-1, ()), (2, (5,))])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32"])
def test_gather(axis, idx_shape, type_):
    x = T((4, 3, 5), type_)
    n = (4, 3, 5)[axis]
    idx = RNG.integers(0, n, idx_shape).astype(np.int32)
    ins = [x, T(idx_shape, "INT32", data=idx)]
    run_case("GATHER", ins, [T((1,), type_)], options={"axis": axis, "batch_dims": 0},
             expect=lambda f: [np.take(f, idx, axis=axis)])


@pytest.mark.parametrize("axis,batch_dims", [(1, 1), (2, 1), (2, 2), (2, -1)])
def test_gather_batch_dims(axis, batch_dims):
    x = T((2, 3, 4, 2), "INT8")
    idx_shape = (2, 3, 5) if batch_dims in (2, -1) else (2, 5)
    bd = batch_dims % 3 if batch_dims < 0 else batch_dims
    n = (2, 3, 4, 2)[axis]
    idx = RNG.integers(0, n, idx_shape).astype(np.int32)
    ins = [x, T(idx_shape, "INT32", data=idx)]

    def expect(f):
        out = np.stack([np.take(f[b], idx[b], axis=axis - bd) for b in np.ndindex(f.shape[:bd])])
        return [out.reshape(f.shape[:axis] + idx.shape[bd:] + f.shape[axis + 1:])]

    run_case("GATHER", ins, [T((1,), "INT8")], options={"axis": axis, "batch_dims": batch_dims}, expect=expect)


def test_gather_runtime_positions():
    x, i = T((5, 3), "FLOAT32"), T((4,), "INT32")
    feeds = [rand((5, 3), "FLOAT32"), np.array([4, 0, 0, 2], np.int32)]
    ours = run_case("GATHER", [x, i], [T((1,), "FLOAT32")], options={"axis": 0}, feeds=feeds)
    np.testing.assert_array_equal(ours[0], feeds[0][[4, 0, 0, 2]])


@pytest.mark.parametrize("type_", ["INT16", "INT32"])
def test_gather_more_types_vs_litert(type_):
    x = T((4, 3), type_)
    idx = np.array([[3, 1], [0, 0]], np.int32)
    run_case("GATHER", [x, T((2, 2), "INT32", data=idx)], [T((1,), type_)], options={"axis": 0}, peer="litert")


# ------------------------------------------------------------------------------------ depth <-> space


@pytest.mark.parametrize("block", [2, 3])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32"])
def test_depth_space(block, type_):
    x = T((2, 2, 3, 2 * block * block), type_)
    run_case("DEPTH_TO_SPACE", [x], [T((1,), type_)], options={"block_size": block})
    x = T((1, 2 * block, 3 * block, 3), type_)
    run_case("SPACE_TO_DEPTH", [x], [T((1,), type_)], options={"block_size": block})


def test_depth_space_round_trip():
    x = rand((1, 4, 6, 8), "INT8")
    n1 = make_node("SPACE_TO_DEPTH", [T(x.shape, "INT8")], [T((1,), "INT8")], {"block_size": 2})
    r1 = K.prepare_space_to_depth(n1)
    mid = np.zeros(n1.output_shapes[0], np.int8)
    r1([x], [mid])
    n2 = make_node("DEPTH_TO_SPACE", [T(mid.shape, "INT8")], [T((1,), "INT8")], {"block_size": 2})
    r2 = K.prepare_depth_to_space(n2)
    back = np.zeros(x.shape, np.int8)
    r2([mid], [back])
    np.testing.assert_array_equal(back, x)


# ------------------------------------------------------------------------------------------- densify


def _csr_2d(dense: np.ndarray) -> tuple[np.ndarray, Sparsity]:
    rows, cols = dense.shape
    seg, ind, vals = [0], [], []
    for r in range(rows):
        nz = np.nonzero(dense[r])[0]
        ind += nz.tolist()
        vals += dense[r, nz].tolist()
        seg.append(len(ind))
    sp = Sparsity([0, 1], [], [DimensionMetadata("DENSE", rows),
                               DimensionMetadata("SPARSE_CSR", 0, np.array(seg), np.array(ind))])
    return np.array(vals, dense.dtype), sp


def _block_2d(dense: np.ndarray, bh: int, bw: int) -> tuple[np.ndarray, Sparsity]:
    """Block-sparse (bh x bw blocks, CSR over block columns): traversal [0, 1, 2, 3], block_map [0, 1]."""
    rows, cols = dense.shape
    br, bc = rows // bh, cols // bw
    seg, ind, vals = [0], [], []
    for r in range(br):
        for c in range(bc):
            blk = dense[r * bh:(r + 1) * bh, c * bw:(c + 1) * bw]
            if blk.any():
                ind.append(c)
                vals += blk.reshape(-1).tolist()
        seg.append(len(ind))
    sp = Sparsity([0, 1, 2, 3], [0, 1], [
        DimensionMetadata("DENSE", br), DimensionMetadata("SPARSE_CSR", 0, np.array(seg), np.array(ind)),
        DimensionMetadata("DENSE", bh), DimensionMetadata("DENSE", bw)])
    return np.array(vals, dense.dtype), sp


def test_densify_csr_and_blocks():
    dense = np.zeros((4, 6), np.float32)
    dense[0, 1], dense[2, 5], dense[3, 0], dense[3, 3] = 1.5, -2.0, 3.0, 4.0
    vals, sp = _csr_2d(dense)
    np.testing.assert_array_equal(K.densify(vals, dense.shape, sp), dense)
    blocky = np.zeros((4, 6), np.int8)
    blocky[0:2, 2:4] = [[1, 2], [3, 0]]
    blocky[2:4, 0:2] = [[5, 6], [7, 8]]
    vals, sp = _block_2d(blocky, 2, 2)
    np.testing.assert_array_equal(K.densify(vals, blocky.shape, sp), blocky)
    # the kernel itself: prepare expands the constant once
    node = make_node("DENSIFY", [T((4, 6), "INT8")], [T((1,), "INT8")])
    node.inputs[0].data, node.inputs[0].sparsity = vals, sp
    run = K.prepare_densify(node)
    out = np.zeros(node.output_shapes[0], np.int8)
    run([vals], [out])
    np.testing.assert_array_equal(out, blocky)


@pytest.mark.parametrize("kind", ["csr_float32", "blocks_int8"])
def test_densify_model_vs_litert(kind):
    # A one-op DENSIFY model run by LiteRT's reference kernels (TFLM cannot DENSIFY).
    from tests.oprunner import op_model_object
    from edge_sdk.model.writer import write_model

    if kind == "csr_float32":
        dense = np.zeros((4, 6), np.float32)
        dense[1, 2], dense[3, 5], dense[0, 0] = 0.5, -1.25, 2.0
        vals, sp = _csr_2d(dense)
    else:
        dense = np.zeros((4, 6), np.int8)
        dense[0:2, 4:6] = [[1, -2], [0, 9]]
        dense[2:4, 2:4] = [[-5, 6], [7, 8]]
        vals, sp = _block_2d(dense, 2, 2)
    t = "FLOAT32" if dense.dtype == np.float32 else "INT8"
    model = op_model_object("DENSIFY", [T((vals.size,), t, data=vals)], [T((4, 6), t)])
    sub = model.subgraphs[0]
    sub.tensors[0].shape = (4, 6)
    sub.tensors[0].sparsity = sp
    blob = write_model(model)
    ours = run_ours(blob, [])
    np.testing.assert_array_equal(ours[0], dense)
    from tests.peers import run_litert
    assert_same(ours, run_litert(blob, [], isolate=True))


# --------------------------------------------------- real models: our shapes equal the declared ones

MY_OPS = set(PREPARE) | {"MEAN", "SUM", "REDUCE_MAX", "ARG_MAX", "RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"}


def test_shared_models_declared_shapes():
    """Every node of these ops in the shared models prepares, and computes the output shape the model declares."""
    from edge_sdk.runtime.kernels import reduce as R, resize as Z
    from edge_sdk.model.reader import read_model
    from edge_sdk.model.types import tensor_value
    from tests.conftest import shared_models

    prepare = dict(PREPARE, MEAN=R.prepare_mean, SUM=R.prepare_sum, REDUCE_MAX=R.prepare_reduce_max,
                   ARG_MAX=R.prepare_arg_max, RESIZE_NEAREST_NEIGHBOR=Z.prepare_resize_nearest_neighbor,
                   RESIZE_BILINEAR=Z.prepare_resize_bilinear)
    models = shared_models("tflite-micro/*.tflite")
    if not models:
        pytest.skip("../shared/models is absent")
    seen = set()
    for path in models:
        model = read_model(str(path))
        for s, sg in enumerate(model.subgraphs):
            def info(t):
                if t < 0:
                    return None
                ten = sg.tensors[t]
                q = ten.quantization
                scale = zp = None
                if q is not None and q.scale is not None and np.size(q.scale):
                    scale = np.asarray(q.scale, np.float32).reshape(-1)
                    zp = np.asarray(q.zero_point, np.int64).reshape(-1)
                data = tensor_value(model, s, t)
                if data is not None and ten.sparsity is None:
                    data = data.reshape(ten.shape)
                return TensorInfo(t, ten.name, ten.type, ten.dtype, tuple(ten.shape), scale, zp, 0, data,
                                  sparsity=ten.sparsity)

            for i, op in enumerate(sg.operators):
                name = model.operator_codes[op.opcode_index].name
                if name not in MY_OPS:
                    continue
                node = Node(i, s, name, 1, dict(op.options or {}), None, [info(t) for t in op.inputs],
                            [info(t) for t in op.outputs])
                declared = [tuple(o.shape) for o in node.outputs]
                prepare[name](node)
                got = [node.output_shapes[k] for k in range(len(declared))]
                assert got == declared, f"{path.name} node {i} {name}: {got} vs declared {declared}"
                seen.add(name)
    assert {"STRIDED_SLICE", "CONCATENATION", "RESHAPE", "MEAN"} <= seen, seen


@pytest.mark.parametrize("shape,begin,end,strides,opts", [
    ((10,), [1], [9], [3], {}),
    ((10,), [-1], [0], [-4], {}),
    ((10,), [4], [0], [1], {"shrink_axis_mask": 1}),
    ((2, 3, 4, 5), [0, 1, 0, 1], [2, 3, 4, 5], [1, 1, 2, 2], {}),
    ((2, 3, 4, 5), [1, 0, -1, 0], [0, 0, 0, 5], [1, 1, -1, 1], {"shrink_axis_mask": 1, "begin_mask": 2, "end_mask": 2}),
    ((2, 3, 4, 5), [0, 2, 0, 4], [0, 0, 0, 0], [1, -1, 1, -2], {"begin_mask": 5, "end_mask": 15}),
    ((1, 3, 4, 5), [0, 0, 1, 0], [1, 3, 3, 5], [1, 1, 1, 1], {"shrink_axis_mask": 8, "end_mask": 8}),
])
@pytest.mark.parametrize("type_", ["INT8", "INT16", "INT32"])
def test_strided_slice_ranks_vs_tflm(shape, begin, end, strides, opts, type_):
    n = len(shape)
    ins = [T(shape, type_)] + [T((n,), "INT32", data=np.array(v, np.int32)) for v in (begin, end, strides)]
    run_case("STRIDED_SLICE", ins, [T((1,), type_)], options=opts, version=4)
