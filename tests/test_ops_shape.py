"""Shape and data-movement kernels on both runtimes (the ``runtime`` grid: our Python kernels and firmware_c's
concatenation, pad, strided_slice, split, transpose, ... kernels) against TFLite Micro (and LiteRT's reference
kernels where TFLM cannot run the case: strided-slice ellipsis / new-axis masks, int64 outputs, int32 transpose,
DENSIFY), bit for bit; the peer runs once per case (tests.oprunner.check_on). MEAN / SUM cases the C file held
(float within 1e-5) and the seanet PAD / STRIDED_SLICE models against TFLM's golden outputs too.

Models are single-operator .tflite files built with tests.oprunner; the output shape each model declares is
the one our prepare computes, which TFLM re-derives and checks in its own prepare for the ops that have one
(strided slice, pad, gather, split via output dims, ...). Where TFLM trusts the declared shape, the tests
also compare with a numpy expectation.
"""

from __future__ import annotations

import csv
import zlib

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from edge_sdk.runtime.kernels import shape as K
from edge_sdk.runtime.kernels.node import Node, TensorInfo
from edge_sdk.model.types import DimensionMetadata, Sparsity, numpy_dtype
from tests.nodes import make_node
from tests.oprunner import T, check_on, op_model, refused_on, run_on
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


def rand(rng, shape, type_):
    dt = numpy_dtype(type_)
    if type_ == "BOOL":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dt)


def run_case(runtime, rng, op, inputs, out_type_specs, options=None, feeds=None, peer="tflm", version=1,
             expect=None):
    """Declare the outputs with our shapes, run ``runtime`` and the peer(s); compare; return the runtime's
    outputs. ``rng`` is the test's (the same inputs on both runtimes: the peer runs once per case)."""
    shapes = our_shapes(op, inputs, out_type_specs, options)
    outs = [like(s, sh) for s, sh in zip(out_type_specs, shapes)]
    model = op_model(op, inputs, outs, options, version=version)
    if feeds is None:
        feeds = [rand(rng, s.shape, s.type) for s in inputs if s is not None and s.data is None]
    ours = check_on(runtime, model, feeds, peer=peer)
    if expect is not None:
        for a, b in zip(ours, expect(*feeds)):
            np.testing.assert_array_equal(a, b)
    return ours


def q8(shape, scale=0.05, zp=-3):
    return T(shape, "INT8", scale, zp)


# -------------------------------------------------------------------------------------- reshape family


@pytest.mark.parametrize("new_shape", [[6, 4], [-1, 4], [24], [2, -1, 2], [1, 2, 3, 4]])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
def test_reshape_shape_tensor(runtime, rng, new_shape, type_):
    x = T((2, 3, 4), type_)
    s = T((len(new_shape),), "INT32", data=np.array(new_shape, np.int32))
    ours = run_case(runtime, rng, "RESHAPE", [x, s], [T((1,), type_)])
    want = [d for d in new_shape]
    if -1 in want:
        want[want.index(-1)] = 24 // -int(np.prod(want))
    assert ours[0].shape == tuple(want)


def test_reshape_from_options_and_scalar(runtime, rng):
    x = T((1, 6), "INT8")
    ours = run_case(runtime, rng, "RESHAPE", [x], [T((1,), "INT8")], options={"new_shape": [3, -1]})
    assert ours[0].shape == (3, 2)
    one = T((1, 1), "FLOAT32")
    model = op_model("RESHAPE", [one], [T((), "FLOAT32")], options={"new_shape": [0]})  # legacy scalar marker
    feed = np.array([[2.5]], np.float32)
    assert run_on(runtime, model, [feed])[0].shape == ()
    with pytest.raises(ModelError):
        our_shapes("RESHAPE", [x, T((2,), "INT32", data=np.array([4, -1], np.int32))], [T((1,), "INT8")])


def test_reshape_runtime_shape_uses_declared_output(runtime, rng):
    # The new shape is a model input: like TFLM, we trust the declared output shape.
    x, s = T((2, 6), "INT8"), T((2,), "INT32")
    model = op_model("RESHAPE", [x, s], [T((3, 4), "INT8")])
    feeds = [rand(rng, (2, 6), "INT8"), np.array([3, 4], np.int32)]
    ours = check_on(runtime, model, feeds)
    assert ours[0].shape == (3, 4)


@pytest.mark.parametrize("dims,shape", [([], (1, 3, 1, 2)), ([0], (1, 3, 1, 2)), ([-2, 0], (1, 3, 1, 2)), ([2], (4, 1, 1))])
def test_squeeze(runtime, rng, dims, shape):
    x = T(shape, "INT8")
    ours = run_case(runtime, rng, "SQUEEZE", [x], [T((1,), "INT8")], options={"squeeze_dims": dims})
    assert ours[0].shape == np.squeeze(np.zeros(shape), axis=tuple(dims) if dims else None).shape
    with pytest.raises(ModelError):
        our_shapes("SQUEEZE", [T((2, 3), "INT8")], [T((1,), "INT8")], {"squeeze_dims": [0]})


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("type_", ["INT8", "INT16", "FLOAT32"])
def test_expand_dims(runtime, rng, axis, type_):
    x = T((3, 4), type_)
    ours = run_case(runtime, rng, "EXPAND_DIMS", [x, T((1,), "INT32", data=np.array([axis], np.int32))], [T((1,), type_)])
    assert ours[0].shape == np.expand_dims(np.zeros((3, 4)), axis).shape


def test_shape_int32_and_int64(runtime, rng):
    x = T((2, 5, 1, 3), "INT8")
    ours = run_case(runtime, rng, "SHAPE", [x], [T((1,), "INT32")], options={"out_type": "INT32"})
    np.testing.assert_array_equal(ours[0], [2, 5, 1, 3])
    ours = run_case(runtime, rng, "SHAPE", [x], [T((1,), "INT64")], options={"out_type": "INT64"}, peer="litert")
    assert ours[0].dtype == np.int64


# ----------------------------------------------------------------------------- concatenation, pack, split


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32", "BOOL"])
def test_concatenation(runtime, rng, axis, type_):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(n + (k if d == axis % 3 else 0) for d, n in enumerate(s)) for k, s in enumerate(shapes)]
    q = {"scale": 0.1, "zero_point": 2} if type_ == "INT8" else {}
    if type_ == "INT16":
        q = {"scale": 0.01, "zero_point": 0}
    xs = [T(s, type_, **q) for s in shapes]
    run_case(runtime, rng, "CONCATENATION", xs, [T((1,), type_, **q)], options={"axis": axis},
             expect=lambda *f: [np.concatenate(f, axis=axis)])


def test_concatenation_int32_with_constant(runtime, rng):
    # the audio_preprocessor pattern: runtime int32 joined with a constant
    x = T((1, 4), "INT32")
    c = T((1, 2), "INT32", data=np.array([[7, -9]], np.int32))
    run_case(runtime, rng, "CONCATENATION", [x, c], [T((1,), "INT32")], options={"axis": 1})


def test_concatenation_refuses_mixed_int8_quantization():
    xs = [T((1, 2), "INT8", 0.1, 0), T((1, 2), "INT8", 0.2, 0)]
    with pytest.raises(UnsupportedOpError):
        our_shapes("CONCATENATION", xs, [T((2, 2), "INT8", 0.1, 0)], {"axis": 0})
    with pytest.raises(UnsupportedOpError):
        our_shapes("CONCATENATION", xs[:1], [T((1, 2), "INT8", 0.1, 0)], {"axis": 0, "fused_activation_function": "RELU"})


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
def test_pack_unpack(runtime, rng, axis, type_):
    xs = [T((3, 4), type_) for _ in range(3)]
    run_case(runtime, rng, "PACK", xs, [T((1,), type_)], options={"values_count": 3, "axis": axis},
             expect=lambda *f: [np.stack(f, axis=axis)])
    x = T((2, 3, 4), type_)
    n = (2, 3, 4)[axis]
    run_case(runtime, rng, "UNPACK", [x], [T((1,), type_)] * n, options={"num": n, "axis": axis},
             expect=lambda f: list(np.moveaxis(f, axis, 0)))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
def test_split(runtime, rng, axis, type_):
    x = T((4, 6, 2), type_)
    n = 2
    a = T((), "INT32", data=np.array(axis, np.int32))
    run_case(runtime, rng, "SPLIT", [a, x], [T((1,), type_)] * n, options={"num_splits": n},
             expect=lambda f: np.split(f, n, axis=axis))


@pytest.mark.parametrize("sizes", [[1, 3, 2], [2, -1, 1], [6]])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT32"])
def test_split_v(runtime, rng, sizes, type_):
    x = T((3, 6), type_)
    s = T((len(sizes),), "INT32", data=np.array(sizes, np.int32))
    a = T((1,), "INT32", data=np.array([1], np.int32))
    ours = run_case(runtime, rng, "SPLIT_V", [x, s, a], [T((1,), type_)] * len(sizes), options={"num_splits": len(sizes)})
    real = [s if s != -1 else 6 - (sum(sizes) + 1) for s in sizes]
    assert [o.shape[1] for o in ours] == real


# ------------------------------------------------------------------------------------------ transpose


@pytest.mark.parametrize("perm", [(1, 0), (0, 2, 1), (2, 0, 1), (0, 3, 1, 2), (3, 2, 1, 0), (0, 1, 4, 2, 3)])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16"])
def test_transpose(runtime, rng, perm, type_):
    shape = (2, 3, 4, 5, 2)[: len(perm)]
    x = T(shape, type_)
    p = T((len(perm),), "INT32", data=np.array(perm, np.int32))
    run_case(runtime, rng, "TRANSPOSE", [x, p], [T((1,), type_)], expect=lambda f: [f.transpose(perm)])


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
def test_strided_slice_vs_tflm(runtime, rng, case, type_):
    begin, end, strides, opts = SS_CASES[case]
    x = T((2, 3, 4), type_)
    ins = [x] + [T((3,), "INT32", data=np.array(v, np.int32)) for v in (begin, end, strides)]
    shapes = our_shapes("STRIDED_SLICE", ins, [T((1,), type_)], opts)
    # TFLM cannot allocate an empty output tensor; LiteRT's reference kernel checks those cases
    peer = "litert" if 0 in shapes[0] else "tflm"
    run_case(runtime, rng, "STRIDED_SLICE", ins, [T((1,), type_)], options=opts, version=4, peer=peer)


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
def test_strided_slice_masks_vs_litert(runtime, rng, case):
    begin, end, strides, opts = LITERT_SS[case]
    x = T((2, 3, 4), "INT8", 0.1, 0)
    n = len(begin)
    ins = [x] + [T((n,), "INT32", data=np.array(v, np.int32)) for v in (begin, end, strides)]
    run_case(runtime, rng, "STRIDED_SLICE", ins, [T((1,), "INT8", 0.1, 0)], options=opts, peer="litert", version=4)


def test_strided_slice_refuses_runtime_begin():
    ins = [T((4,), "INT8"), T((1,), "INT32"), T((1,), "INT32", data=np.array([2], np.int32)),
           T((1,), "INT32", data=np.array([1], np.int32))]
    with pytest.raises(UnsupportedOpError):
        our_shapes("STRIDED_SLICE", ins, [T((1,), "INT8")])


@pytest.mark.parametrize("begin,size", [([0, 0, 0], [2, 3, 4]), ([1, 1, 1], [1, 2, 3]), ([0, 2, 1], [-1, 1, -1])])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32", "BOOL"])
@pytest.mark.parametrize("index_type", ["INT32", "INT64"])
def test_slice(runtime, rng, begin, size, type_, index_type):
    x = T((2, 3, 4), type_)
    dt = numpy_dtype(index_type)
    ins = [x, T((3,), index_type, data=np.array(begin, dt)), T((3,), index_type, data=np.array(size, dt))]
    sl = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))
    run_case(runtime, rng, "SLICE", ins, [T((1,), type_)], expect=lambda f: [f[sl]])


# ---------------------------------------------------------------------------------------------- pad


@pytest.mark.parametrize("paddings", [[[0, 0], [1, 2], [3, 0], [0, 0]], [[1, 0], [0, 1], [2, 2], [1, 1]], [[0, 0], [0, 0], [0, 0], [0, 0]]])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
def test_pad(runtime, rng, paddings, type_):
    q = {"scale": 0.1, "zero_point": -7} if type_ == "INT8" else {}
    x = T((1, 2, 3, 2), type_, **q)
    p = T((4, 2), "INT32", data=np.array(paddings, np.int32))
    fill = -7 if type_ == "INT8" else 0
    run_case(runtime, rng, "PAD", [x, p], [T((1,), type_, **q)],
             expect=lambda f: [np.pad(f, paddings, constant_values=fill)])


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
def test_padv2_constant(runtime, rng, type_):
    q = {"scale": 0.1, "zero_point": 4} if type_ == "INT8" else {}
    x = T((2, 3), type_, **q)
    p = T((2, 2), "INT32", data=np.array([[1, 0], [2, 1]], np.int32))
    c = T((1,), type_, data=np.array([5], numpy_dtype(type_)), **q)
    run_case(runtime, rng, "PADV2", [x, p, c], [T((1,), type_, **q)],
             expect=lambda f: [np.pad(f, [[1, 0], [2, 1]], constant_values=5)])
    # a pad value fed at run time
    c_rt = T((1,), type_, **q)
    ours = run_case(runtime, rng, "PADV2", [x, p, c_rt], [T((1,), type_, **q)],
                    feeds=[rand(rng, (2, 3), type_), np.array([-3], numpy_dtype(type_))])
    assert ours[0][0, 0] == -3


# -------------------------------------------------------------------------------------------- gather


@pytest.mark.parametrize("axis,idx_shape", [(0, (4,)), (1, (2, 3)), (-1, ()), (2, (5,))])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32"])
def test_gather(runtime, rng, axis, idx_shape, type_):
    x = T((4, 3, 5), type_)
    n = (4, 3, 5)[axis]
    idx = rng.integers(0, n, idx_shape).astype(np.int32)
    ins = [x, T(idx_shape, "INT32", data=idx)]
    run_case(runtime, rng, "GATHER", ins, [T((1,), type_)], options={"axis": axis, "batch_dims": 0},
             expect=lambda f: [np.take(f, idx, axis=axis)])


@pytest.mark.parametrize("axis,batch_dims", [(1, 1), (2, 1), (2, 2), (2, -1)])
def test_gather_batch_dims(runtime, rng, axis, batch_dims):
    x = T((2, 3, 4, 2), "INT8")
    idx_shape = (2, 3, 5) if batch_dims in (2, -1) else (2, 5)
    bd = batch_dims % 3 if batch_dims < 0 else batch_dims
    n = (2, 3, 4, 2)[axis]
    idx = rng.integers(0, n, idx_shape).astype(np.int32)
    ins = [x, T(idx_shape, "INT32", data=idx)]

    def expect(f):
        out = np.stack([np.take(f[b], idx[b], axis=axis - bd) for b in np.ndindex(f.shape[:bd])])
        return [out.reshape(f.shape[:axis] + idx.shape[bd:] + f.shape[axis + 1:])]

    run_case(runtime, rng, "GATHER", ins, [T((1,), "INT8")], options={"axis": axis, "batch_dims": batch_dims}, expect=expect)


def test_gather_runtime_positions(runtime, rng):
    x, i = T((5, 3), "FLOAT32"), T((4,), "INT32")
    feeds = [rand(rng, (5, 3), "FLOAT32"), np.array([4, 0, 0, 2], np.int32)]
    ours = run_case(runtime, rng, "GATHER", [x, i], [T((1,), "FLOAT32")], options={"axis": 0}, feeds=feeds)
    np.testing.assert_array_equal(ours[0], feeds[0][[4, 0, 0, 2]])


@pytest.mark.parametrize("type_", ["INT16", "INT32"])
def test_gather_more_types_vs_litert(runtime, rng, type_):
    x = T((4, 3), type_)
    idx = np.array([[3, 1], [0, 0]], np.int32)
    run_case(runtime, rng, "GATHER", [x, T((2, 2), "INT32", data=idx)], [T((1,), type_)], options={"axis": 0}, peer="litert")


# ------------------------------------------------------------------------------------ depth <-> space


@pytest.mark.parametrize("block", [2, 3])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32"])
def test_depth_space(runtime, rng, block, type_):
    x = T((2, 2, 3, 2 * block * block), type_)
    run_case(runtime, rng, "DEPTH_TO_SPACE", [x], [T((1,), type_)], options={"block_size": block})
    x = T((1, 2 * block, 3 * block, 3), type_)
    run_case(runtime, rng, "SPACE_TO_DEPTH", [x], [T((1,), type_)], options={"block_size": block})


def test_depth_space_round_trip():
    x = rand(np.random.default_rng(0), (1, 4, 6, 8), "INT8")
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
def test_densify_model_vs_litert(runtime, kind):
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
    ours = check_on(runtime, blob, [], peer="litert", isolate=True)
    np.testing.assert_array_equal(ours[0], dense)


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
def test_strided_slice_ranks_vs_tflm(runtime, rng, shape, begin, end, strides, opts, type_):
    n = len(shape)
    ins = [T(shape, type_)] + [T((n,), "INT32", data=np.array(v, np.int32)) for v in (begin, end, strides)]
    run_case(runtime, rng, "STRIDED_SLICE", ins, [T((1,), type_)], options=opts, version=4)


# ------------------------------------------------- cases from the C runtime's file: more types, shapes, values
# (each case seeded by its parameters; the peer is TFLM where it runs the case, LiteRT's reference kernels where it
# does not; the C case also equals the Python case: float within 1e-5, like the peer)

_DT = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "FLOAT32": np.float32, "INT64": np.int64,
       "UINT8": np.uint8, "BOOL": np.bool_}
FLOAT_TOL = {"rtol": 1e-5, "atol": 1e-6}


def _q(type_, scale=0.05, zp=0):
    """Quantization kwargs for T: int8 with a zero point, int16 symmetric, none for the rest."""
    if type_ == "INT8":
        return dict(scale=scale, zero_point=zp)
    if type_ == "INT16":
        return dict(scale=scale, zero_point=0)
    return {}


def _rand(rng, shape, type_):
    if type_ == "FLOAT32":
        return rng.uniform(-2, 2, shape).astype(np.float32)
    if type_ == "BOOL":
        return rng.integers(0, 2, shape).astype(np.bool_)
    info = np.iinfo(_DT[type_])
    lo, hi = max(info.min, -30000), min(info.max, 30000)
    return rng.integers(lo, hi, shape, endpoint=True).astype(_DT[type_])


def _seed(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def check(runtime, model: bytes, feeds, peer="tflm", float_tol=False) -> list[np.ndarray]:
    """``runtime`` against the peer, and the C case against the Python case (within 1e-5 for float)."""
    tol = FLOAT_TOL if float_tol else {}
    return check_on(runtime, model, feeds, peer=peer, c_equals_python=True,
                    python_tol=(tol.get("rtol", 0.0), tol.get("atol", 0.0)), **tol)


@pytest.mark.parametrize("type_,shapes,axis", [
    ("INT8", [(1, 2, 3), (1, 4, 3), (1, 1, 3)], 1),
    ("INT16", [(2, 3), (2, 5)], -1),
    ("INT32", [(1, 40), (1, 9)], 1),        # the audio preprocessor's INT32 case
    ("FLOAT32", [(2, 2, 2), (1, 2, 2)], 0),
    ("INT8", [(3, 4)], 1),                   # a single input: a copy
])
def test_concatenation_of_unequal_inputs(runtime, type_, shapes, axis):
    rng = _seed("concat", type_, shapes, axis)
    xs = [T(s, type_, **_q(type_)) for s in shapes]
    out_shape = list(shapes[0])
    a = axis % len(out_shape)
    out_shape[a] = sum(s[a] for s in shapes)
    model = op_model("CONCATENATION", xs, [T(out_shape, type_, **_q(type_))], options={"axis": axis})
    feeds = [_rand(rng, s, type_) for s in shapes]
    got = check(runtime, model, feeds, float_tol=type_ == "FLOAT32")
    np.testing.assert_array_equal(got[0], np.concatenate(feeds, axis=axis))


def test_concatenation_with_a_constant_input(runtime):
    rng = _seed("concat-const")
    c = rng.integers(-100, 100, (1, 3)).astype(np.int32)
    model = op_model("CONCATENATION", [T((1, 5), "INT32"), T((1, 3), "INT32", data=c)], [T((1, 8), "INT32")],
                     options={"axis": 1})
    x = rng.integers(-100, 100, (1, 5)).astype(np.int32)
    np.testing.assert_array_equal(check(runtime, model, [x])[0], np.concatenate([x, c], axis=1))


def test_concatenation_model_refuses_mixed_int8_quantization(runtime):
    model = op_model("CONCATENATION", [T((1, 2), "INT8", scale=0.1, zero_point=0), T((1, 2), "INT8", scale=0.2, zero_point=0)],
                     [T((1, 4), "INT8", scale=0.1, zero_point=0)], options={"axis": 1})
    refused_on(runtime, model, [np.zeros((1, 2), np.int8)] * 2, UnsupportedOpError,
               "quantized differently")


@pytest.mark.parametrize("op,type_,value", [
    ("PAD", "INT8", None), ("PAD", "INT16", None), ("PAD", "FLOAT32", None), ("PAD", "INT32", None),
    ("PADV2", "INT8", "const"), ("PADV2", "FLOAT32", "const"), ("PADV2", "INT8", "input"),
])
def test_pad_rank_4_and_its_value(runtime, op, type_, value):
    rng = _seed("pad", op, type_, value)
    shape, pads = (1, 3, 4, 2), np.array([[0, 1], [2, 0], [1, 3], [0, 2]], np.int32)
    out = tuple(s + int(p.sum()) for s, p in zip(shape, pads))
    q = _q(type_, zp=-5)
    inputs = [T(shape, type_, **q), T((4, 2), "INT32", data=pads)]
    feeds = [_rand(rng, shape, type_)]
    if value == "const":
        v = np.array([7 if type_ != "FLOAT32" else 1.5], _DT[type_])
        inputs.append(T((1,), type_, data=v, **q))
    elif value == "input":
        inputs.append(T((1,), type_, **q))
        feeds.append(np.array([42], _DT[type_]))
    model = op_model(op, inputs, [T(out, type_, **q)])
    # TFLM's PADV2 reads its value from a constant only when it has one: a run-time value against LiteRT
    got = check(runtime, model, feeds, peer="tflm" if value != "input" else "litert", float_tol=type_ == "FLOAT32")
    fill = {None: (-5 if type_ == "INT8" else 0), "const": (7 if type_ != "FLOAT32" else 1.5), "input": 42}[value]
    np.testing.assert_array_equal(got[0], np.pad(feeds[0], pads, constant_values=fill))


def test_pad_refuses_run_time_paddings(runtime):
    model = op_model("PAD", [T((2, 2), "INT8", scale=0.1, zero_point=0), T((2, 2), "INT32")],
                     [T((4, 4), "INT8", scale=0.1, zero_point=0)])
    refused_on(runtime, model, [np.zeros((2, 2), np.int8), np.ones((2, 2), np.int32)], UnsupportedOpError,
               {"python": "paddings tensor .* computed at run time", "c": "paddings computed at run time"}[runtime])


@pytest.mark.parametrize("op,type_,shape,axes,keep", [
    ("MEAN", "INT8", (1, 4, 5, 8), [1, 2], True),
    ("MEAN", "INT8", (2, 6, 7), [-1], False),
    ("MEAN", "INT16", (1, 3, 3, 16), [1, 2], True),
    ("MEAN", "FLOAT32", (2, 5, 3), [0, 2], False),
    ("MEAN", "INT8", (3, 17), [0, 1], False),
    ("SUM", "INT8", (1, 4, 4, 3), [1, 2], True),
    ("SUM", "INT16", (2, 9), [1], False),
    ("SUM", "FLOAT32", (4, 3), [0], True),
])
def test_mean_sum(runtime, op, type_, shape, axes, keep):
    rng = _seed("reduce", op, type_, shape, axes, keep)
    rank = len(shape)
    red = sorted({a % rank for a in axes})
    out = tuple((1 if d in red else n) for d, n in enumerate(shape) if keep or d not in red)
    qin = _q(type_, scale=0.04, zp=-7)
    qout = _q(type_, scale=0.03 if op == "MEAN" else 0.5, zp=3)
    model = op_model(op, [T(shape, type_, **qin), T((len(axes),), "INT32", data=np.array(axes, np.int32))],
                     [T(out, type_, **qout)], options={"keep_dims": keep})
    check(runtime, model, [_rand(rng, shape, type_)], float_tol=type_ == "FLOAT32")


SS_MODEL_CASES = [
    # type, shape, begin, end, strides, options, peer (LiteRT for the masks TFLM does not read)
    ("INT8", (1, 8, 6, 3), [0, 1, 0, 0], [1, 7, 6, 3], [1, 2, 1, 1], {}, "tflm"),
    ("INT32", (1, 49, 40), [0, 0, 0], [1, 1, 40], [1, 1, 1], {"shrink_axis_mask": 2}, "tflm"),
    ("INT16", (4, 10), [-1, 9], [0, 0], [-1, -3], {"end_mask": 1}, "tflm"),
    ("FLOAT32", (3, 4, 5), [1, 0, 1], [3, 4, 4], [1, 1, 2], {"begin_mask": 2, "end_mask": 4}, "tflm"),
    ("INT8", (2, 3, 4), [0, 1], [2, 3], [1, 1], {"ellipsis_mask": 1}, "litert"),
    ("INT8", (3, 4), [0, 0, 1], [1, 3, 3], [1, 1, 1], {"new_axis_mask": 1, "begin_mask": 1, "end_mask": 1}, "litert"),
    ("INT16", (2, 6), [0, 1], [2, 3], [1, 1], {"offset": True}, "litert"),
    ("INT32", (5,), [2], [3], [1], {"shrink_axis_mask": 1}, "tflm"),
]


@pytest.mark.parametrize("case", SS_MODEL_CASES, ids=lambda c: f"{c[0]}-{'x'.join(map(str, c[1]))}-{sorted(c[5])}")
def test_strided_slice_models(runtime, case):
    type_, shape, begin, end, strides, opts, peer = case
    rng = _seed("ss", case[:6] + (peer == "tflm",))  # the C file's seed: its last field was "TFLM runs it"
    x = _rand(rng, shape, type_)
    ints = lambda v: T((len(v),), "INT32", data=np.array(v, np.int32))  # noqa: E731
    ins = [T(shape, type_, **_q(type_)), ints(begin), ints(end), ints(strides)]
    out_shape = our_shapes("STRIDED_SLICE", ins, [T((1,), type_, **_q(type_))], opts)[0]
    model = op_model("STRIDED_SLICE", ins, [T(out_shape, type_, **_q(type_))], options=opts)
    got = check(runtime, model, [x], peer=peer, float_tol=type_ == "FLOAT32")
    assert got[0].size > 0


@pytest.mark.parametrize("type_", ["INT8", "INT16", "FLOAT32"])
def test_split_in_three(runtime, type_):
    rng = _seed("split", type_)
    shape = (2, 6, 3)
    model = op_model("SPLIT", [T((1,), "INT32", data=np.array([1], np.int32)), T(shape, type_, **_q(type_))],
                     [T((2, 2, 3), type_, **_q(type_)) for _ in range(3)], options={"num_splits": 3})
    x = _rand(rng, shape, type_)
    got = check(runtime, model, [x], float_tol=type_ == "FLOAT32")
    for g, w in zip(got, np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(g, w)


def test_split_v_with_an_inferred_size(runtime):
    rng = _seed("split_v")
    shape = (3, 10)
    sizes = np.array([2, -1, 3], np.int32)
    model = op_model("SPLIT_V", [T(shape, "INT8", scale=0.1, zero_point=2), T((3,), "INT32", data=sizes),
                                 T((1,), "INT32", data=np.array([-1], np.int32))],
                     [T((3, n), "INT8", scale=0.1, zero_point=2) for n in (2, 5, 3)], options={"num_splits": 3})
    x = _rand(rng, shape, "INT8")
    got = check(runtime, model, [x])
    assert [g.shape for g in got] == [(3, 2), (3, 5), (3, 3)]
    np.testing.assert_array_equal(np.concatenate(got, axis=1), x)


def test_split_refuses_an_uneven_split(runtime):
    model = op_model("SPLIT", [T((1,), "INT32", data=np.array([1], np.int32)), T((2, 5), "INT8", scale=0.1, zero_point=0)],
                     [T((2, 2), "INT8", scale=0.1, zero_point=0) for _ in range(2)], options={"num_splits": 2})
    refused_on(runtime, model, [np.zeros((2, 5), np.int8)], ModelError,
               {"python": "into 2 equal parts", "c": "not divisible"}[runtime])


@pytest.mark.parametrize("type_,shape,perm", [
    ("INT8", (1, 3, 4, 5), [0, 3, 1, 2]),
    ("INT16", (2, 3, 4), [2, 0, 1]),
    ("FLOAT32", (4, 6), [1, 0]),
    ("INT32", (2, 1, 3, 2, 2), [4, 3, 2, 1, 0]),
])
def test_transpose_more_types(runtime, type_, shape, perm):
    rng = _seed("transpose", type_, shape)
    out = tuple(shape[p] for p in perm)
    model = op_model("TRANSPOSE", [T(shape, type_, **_q(type_)), T((len(perm),), "INT32", data=np.array(perm, np.int32))],
                     [T(out, type_, **_q(type_))])
    x = _rand(rng, shape, type_)
    # TFLM's TRANSPOSE runs float32/int8/int16 only: INT32 against LiteRT's reference kernel
    got = check(runtime, model, [x], peer="tflm" if type_ != "INT32" else "litert", float_tol=type_ == "FLOAT32")
    np.testing.assert_array_equal(got[0], x.transpose(perm))


# ------------------------------------------------------------------------------------------------ seanet goldens

def _read_csv(path, dtype):
    with open(path, newline="") as f:
        return np.array([int(v) for row in csv.reader(f) for v in row if v.strip()], dtype)


@pytest.mark.parametrize("family", ["pad", "strided_slice"])
def test_seanet_goldens(runtime, family):
    from tests.conftest import shared_models

    models = sorted(shared_models(f"tflite-micro/seanet/{family}/*.tflite"))
    if not models:
        pytest.skip("../shared/models is absent")
    checked = 0
    for path in models:
        stem = path.stem
        inputs = sorted(path.parent.glob(f"{stem}_input*_int16.csv"))
        golden = path.parent / f"{stem}_golden_int16.csv"
        if not inputs or not golden.exists():
            continue
        from edge_sdk import Interpreter

        interp = Interpreter(model_path=str(path), backend=runtime)
        interp.allocate_tensors()
        for d, f in zip(interp.get_input_details(), inputs):
            interp.set_tensor(d["index"], _read_csv(f, d["dtype"]).reshape(d["shape"]))
        interp.invoke()
        out = interp.get_tensor(interp.get_output_details()[0]["index"])
        np.testing.assert_array_equal(out.reshape(-1), _read_csv(golden, np.int64).astype(out.dtype),
                                      err_msg=path.name)
        checked += 1
    assert checked >= 10


# ------------------------------------------------------- DENSIFY models (from the C runtime's file), both runtimes
# CSR and block-sparse constants of FLOAT32, FLOAT16 and INT8, expanded once at prepare: equal to the dense original
# (so the two runtimes equal each other), LiteRT's reference kernels for float32 / int8 (TFLM cannot DENSIFY); a
# sparse float16 weight behind DEQUANTIZE (how MediaPipe ships them); malformed structures refused by name.


def _sparse_dense(rng, shape, dtype, density=0.3, blocks=None):
    dense = rng.standard_normal(shape) * 4
    if blocks:
        bh, bw = blocks
        mask = rng.random((shape[0] // bh, shape[1] // bw)) < density
        dense = dense * np.kron(mask, np.ones(blocks))
    else:
        dense = dense * (rng.random(shape) < density)
    return dense.astype(dtype)


def _densify_model(vals, sp, shape, type_, declared_flat=True):
    from tests.oprunner import op_model_object
    from edge_sdk.model.writer import write_model

    model = op_model_object("DENSIFY", [T((vals.size,), type_, data=vals)], [T(shape, type_)])
    t = model.subgraphs[0].tensors[0]
    if not declared_flat:
        t.shape = tuple(shape)
    t.sparsity = sp
    return write_model(model)


@pytest.mark.parametrize("type_,dtype", [("FLOAT32", np.float32), ("FLOAT16", np.float16), ("INT8", np.int8)])
@pytest.mark.parametrize("layout", ["csr", "blocks"])
@pytest.mark.parametrize("declared_flat", [True, False])
def test_densify_equals_the_dense_original(runtime, rng, type_, dtype, layout, declared_flat):
    shape = (12, 40)
    if layout == "csr":
        dense = _sparse_dense(rng, shape, dtype)
        vals, sp = _csr_2d(dense)
    else:
        dense = _sparse_dense(rng, shape, dtype, 0.4, (4, 4))
        vals, sp = _block_2d(dense, 4, 4)
    ours = run_on(runtime, _densify_model(vals, sp, shape, type_, declared_flat), [])
    assert ours[0].dtype == dense.dtype
    np.testing.assert_array_equal(ours[0], dense)


@pytest.mark.parametrize("type_,dtype", [("FLOAT32", np.float32), ("INT8", np.int8)])
def test_densify_vs_litert_reference(runtime, rng, type_, dtype):
    dense = _sparse_dense(rng, (8, 6), dtype, 0.5, (2, 2))
    vals, sp = _block_2d(dense, 2, 2)
    check_on(runtime, _densify_model(vals, sp, dense.shape, type_, declared_flat=False), [], peer="litert",
             isolate=True)


def test_sparse_float16_weights_behind_dequantize_and_add(runtime, rng):
    # DENSIFY(float16) -> DEQUANTIZE -> ADD(x, w): how MediaPipe's float models store pruned weights.
    from edge_sdk.model import schema
    from edge_sdk.model.types import Operator, OperatorCode, Tensor
    from edge_sdk.model.writer import write_model
    from tests.oprunner import op_model_object

    dense = _sparse_dense(rng, (6, 10), np.float16, 0.25)
    vals, sp = _csr_2d(dense)
    model = op_model_object("DENSIFY", [T((vals.size,), "FLOAT16", data=vals)], [T((6, 10), "FLOAT16")])
    sub = model.subgraphs[0]
    sub.tensors[0].sparsity = sp
    sub.tensors += [Tensor("w", (6, 10), "FLOAT32"), Tensor("x", (6, 10), "FLOAT32"), Tensor("y", (6, 10), "FLOAT32")]
    model.operator_codes += [OperatorCode(schema.BUILTIN_OPERATOR_CODES["DEQUANTIZE"], None, 3),
                             OperatorCode(schema.BUILTIN_OPERATOR_CODES["ADD"], None, 1)]
    sub.operators += [Operator(1, [1], [2]),
                      Operator(2, [3, 2], [4], options_type="AddOptions", options={"fused_activation_function": "NONE"})]
    sub.inputs, sub.outputs = [3], [4]
    x = rng.standard_normal((6, 10)).astype(np.float32)
    np.testing.assert_array_equal(run_on(runtime, write_model(model), [x])[0], x + dense.astype(np.float32))


def test_malformed_sparsity_is_refused_by_name(runtime, rng):
    dense = _sparse_dense(rng, (4, 6), np.float32, 0.5)
    vals, sp = _csr_2d(dense)
    bad = Sparsity(sp.traversal_order, sp.block_map,
                   [sp.dim_metadata[0], DimensionMetadata("SPARSE_CSR", 0, sp.dim_metadata[1].array_segments,
                                                          sp.dim_metadata[1].array_indices + 6)])
    refused_on(runtime, _densify_model(vals, bad, (4, 6), "FLOAT32"), [], ModelError,
               {"python": "sparse index out of range", "c": "sparse index outside the dense shape"}[runtime])
    refused_on(runtime, _densify_model(vals[: vals.size - 1], sp, (4, 6), "FLOAT32"), [], ModelError,
               {"python": "names 14 values but stores 13", "c": "more values than it stores"}[runtime])
    if runtime == "c":  # a traversal order that is no permutation: the C runtime refuses it (Python does not check)
        refused_on(runtime, _densify_model(vals, Sparsity([1, 1], [], sp.dim_metadata), (4, 6), "FLOAT32"), [],
                   ModelError, "not a permutation")
