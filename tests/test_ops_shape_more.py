"""Window and data-movement ops added for issue 23 (L2_POOL_2D, ...) in both runtimes (the conftest ``runtime``
grid), against LiteRT's reference kernels for every type LiteRT takes, and bit for bit against TFLM where TFLM has
the op. Float32 comparisons are exact: the kernels fold in the reference's order and round each step as it does.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, assert_same, op_model, run_on, run_peer

RNG = np.random.default_rng(2301)
NP = {"FLOAT32": np.float32, "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16, "INT32": np.int32,
      "INT64": np.int64, "BOOL": np.bool_}
QUANT = {"INT8": (0.05, -3), "UINT8": (0.05, 120), "INT16": (0.002, 0)}


def values(shape, type_):
    if type_ == "BOOL":
        return RNG.random(shape) < 0.5
    if type_ == "FLOAT32":
        return RNG.standard_normal(shape).astype(np.float32) * 4
    info = np.iinfo(NP[type_])
    return RNG.integers(info.min, info.max, shape, endpoint=True).astype(NP[type_])


def q(type_):
    return QUANT.get(type_, (None, None))


def check(runtime, model, feeds, peers):
    ours = run_on(runtime, model, feeds)
    for p in peers:
        assert_same(ours, run_peer(model, feeds, p), what=f"{runtime} vs {p}")
    return ours


# ---- L2_POOL_2D (float32 only in LiteRT and TFLM)
L2_POOLS = [  # input shape, filter (h, w), strides (h, w), padding, activation
    ((1, 5, 5, 3), (2, 2), (2, 2), "VALID", "NONE"),
    ((1, 5, 5, 3), (3, 3), (2, 2), "SAME", "NONE"),
    ((2, 4, 6, 2), (2, 3), (1, 2), "SAME", "RELU6"),
    ((1, 7, 3, 1), (3, 1), (1, 1), "VALID", "RELU_N1_TO_1"),
]


@pytest.mark.parametrize("shape,filt,strides,padding,act", L2_POOLS)
def test_l2_pool_2d(runtime, shape, filt, strides, padding, act):
    n, h, w, c = shape
    oh = (h + strides[0] - 1) // strides[0] if padding == "SAME" else (h - filt[0]) // strides[0] + 1
    ow = (w + strides[1] - 1) // strides[1] if padding == "SAME" else (w - filt[1]) // strides[1] + 1
    opts = {"padding": padding, "stride_h": strides[0], "stride_w": strides[1], "filter_height": filt[0],
            "filter_width": filt[1], "fused_activation_function": act}
    model = op_model("L2_POOL_2D", [T(shape, "FLOAT32")], [T((n, oh, ow, c), "FLOAT32")], opts)
    x = values(shape, "FLOAT32")
    (ours,) = check(runtime, model, [x], ["litert", "tflm"])
    if padding == "VALID" and act == "NONE":  # an independent reading: sqrt(mean(x^2)) over each window
        want = np.empty_like(ours)
        for oy in range(oh):
            for ox in range(ow):
                win = x[:, oy * strides[0]:oy * strides[0] + filt[0], ox * strides[1]:ox * strides[1] + filt[1]]
                want[:, oy, ox] = np.sqrt((win.astype(np.float64) ** 2).mean(axis=(1, 2)))
        np.testing.assert_allclose(ours, want, rtol=1e-6)


def test_l2_pool_2d_takes_float32_only(runtime):
    model = op_model("L2_POOL_2D", [T((1, 2, 2, 1), "INT8", 0.1, 0)], [T((1, 1, 1, 1), "INT8", 0.1, 0)],
                     {"padding": "VALID", "filter_height": 2, "filter_width": 2, "stride_h": 1, "stride_w": 1})
    with pytest.raises(Exception, match="FLOAT32"):
        run_on(runtime, model, [values((1, 2, 2, 1), "INT8")])


# ---- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND: every type LiteRT takes; TFLM has float32 and int8
MOVE_TYPES = ["FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL"]
S2B_CASES = [  # input shape, block_shape, paddings
    ((1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]]),
    ((2, 3, 5, 2), [2, 3], [[1, 0], [0, 1]]),  # padded with the fill value (the zero point when quantized)
    ((1, 5, 3), [3], [[1, 0]]),  # rank 3: one spatial dimension
]


def i32(values):
    values = np.asarray(values, np.int32)
    return T(values.shape, "INT32", data=values)


def s2b_shape(shape, block, pads):
    padded = [s + p[0] + p[1] for s, p in zip(shape[1:], pads)]
    return (shape[0] * int(np.prod(block)), *[p // b for p, b in zip(padded, block)], *shape[1 + len(block):])


@pytest.mark.parametrize("shape,block,pads", S2B_CASES)
@pytest.mark.parametrize("type_", MOVE_TYPES)
def test_space_to_batch_nd(runtime, shape, block, pads, type_):
    out = s2b_shape(shape, block, pads)
    model = op_model("SPACE_TO_BATCH_ND", [T(shape, type_, *q(type_)), i32(block), i32(pads)], [T(out, type_, *q(type_))],
                     version=2 if type_ == "INT8" else 1)
    # TFLM's padded cells are undefined: its SpaceToBatchParams.output_offset is never set, so it pads with
    # whatever byte its persistent arena held (0 in a fresh interpreter, 0x01 after other models ran in the same
    # process: 2.37e-38 as float32). LiteRT pads with the output zero point (the real value 0.0), as we do; TFLM
    # is compared where nothing is padded.
    tflm = type_ in ("FLOAT32", "INT8") and not np.any(pads)
    (ours,) = check(runtime, model, [values(shape, type_)], ["litert"] + (["tflm"] if tflm else []))
    assert ours.shape == out
    if np.any(pads) and type_ in ("INT8", "FLOAT32"):  # the padded cells hold the zero point (real 0.0)
        zp = q(type_)[1] if type_ == "INT8" else 0
        (ref,) = run_on(runtime, model, [np.full(shape, zp + 1, NP[type_])])
        assert np.count_nonzero(ref == zp) == ref.size - np.prod(shape), "padding is not the zero point"


@pytest.mark.parametrize("shape,block,pads", S2B_CASES)
@pytest.mark.parametrize("type_", MOVE_TYPES)
def test_batch_to_space_nd(runtime, shape, block, pads, type_):
    # the inverse geometry: SPACE_TO_BATCH_ND's output shape in, its paddings as crops, its input shape out
    inner = s2b_shape(shape, block, pads)
    model = op_model("BATCH_TO_SPACE_ND", [T(inner, type_, *q(type_)), i32(block), i32(pads)],
                     [T(shape, type_, *q(type_))], version=2 if type_ == "INT8" else 1)
    (ours,) = check(runtime, model, [values(inner, type_)], ["litert"] + (["tflm"] if type_ in ("FLOAT32", "INT8") else []))
    assert ours.shape == shape


def test_space_to_batch_round_trip(runtime):
    shape, block, pads = (2, 3, 5, 2), [2, 3], [[1, 0], [0, 1]]
    inner = s2b_shape(shape, block, pads)
    x = values(shape, "FLOAT32")
    (packed,) = run_on(runtime, op_model("SPACE_TO_BATCH_ND", [T(shape, "FLOAT32"), i32(block), i32(pads)],
                                         [T(inner, "FLOAT32")]), [x])
    (back,) = run_on(runtime, op_model("BATCH_TO_SPACE_ND", [T(inner, "FLOAT32"), i32(block), i32(pads)],
                                       [T(shape, "FLOAT32")]), [packed])
    np.testing.assert_array_equal(back, x)


# ---- GATHER_ND: every params type and indices type LiteRT takes; TFLM has float32 / int8 params, int32 indices
GATHER_ND_CASES = [  # params shape, indices
    ((2, 3, 2), [[1, 0], [0, 2]]),  # K = 2 of 3: rows of 2
    ((4, 3), [[3], [0], [3]]),  # K = 1: whole rows, repeated
    ((2, 3, 2), [[[1, 2, 1]], [[0, 0, 0]]]),  # K = rank: scalars, indices of rank 3
]


@pytest.mark.parametrize("shape,indices", GATHER_ND_CASES)
@pytest.mark.parametrize("index_type", ["INT32", "INT64", "INT16"])
@pytest.mark.parametrize("type_", MOVE_TYPES)
def test_gather_nd(runtime, shape, indices, index_type, type_):
    ind = np.array(indices, NP[index_type])
    k = ind.shape[-1]
    out = ind.shape[:-1] + shape[k:]
    model = op_model("GATHER_ND", [T(shape, type_, *q(type_)), T(ind.shape, index_type)], [T(out, type_, *q(type_))])
    x = values(shape, type_)
    tflm = type_ in ("FLOAT32", "INT8") and index_type == "INT32"
    (ours,) = check(runtime, model, [x, ind], ["litert"] + (["tflm"] if tflm else []))
    np.testing.assert_array_equal(ours, x[tuple(np.moveaxis(ind.astype(np.int64), -1, 0))])


def test_gather_nd_out_of_range_fails_the_invoke(runtime):
    # LiteRT and TFLM fail the invoke; so do both our runtimes (tests/test_lookup_out_of_range.py: every sibling)
    from edge_sdk.errors import DataError

    model = op_model("GATHER_ND", [T((2, 3), "FLOAT32"), T((3, 2), "INT32")], [T((3,), "FLOAT32")])
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    with pytest.raises(DataError, match=r"node 0 \(GATHER_ND"):
        run_on(runtime, model, [x, np.array([[1, 2], [0, 3], [-1, 0]], np.int32)])
    (ours,) = run_on(runtime, model, [x, np.array([[1, 2], [0, 2], [1, 0]], np.int32)])
    np.testing.assert_array_equal(ours, [6.0, 3.0, 4.0])


# ---- REVERSE_V2: every type LiteRT and TFLM take (both the same seven); they take contiguous axes only
@pytest.mark.parametrize("shape,axes", [((2, 3, 2), [1]), ((2, 3, 2), [-1]), ((2, 3, 4), [0, 1]), ((5,), [0]),
                                        ((1, 2, 3, 4), [1, 2, 3])])
@pytest.mark.parametrize("type_", MOVE_TYPES)
def test_reverse_v2(runtime, shape, axes, type_):
    model = op_model("REVERSE_V2", [T(shape, type_, *q(type_)), i32(axes)], [T(shape, type_, *q(type_))],
                     version=2 if type_ in ("INT8", "UINT8") else 1)
    x = values(shape, type_)
    (ours,) = check(runtime, model, [x], ["litert", "tflm"])
    np.testing.assert_array_equal(ours, np.flip(x, axis=tuple(axes)))


def test_reverse_v2_non_contiguous_axes(runtime):
    # the peers refuse [0, 2] ("Non-contiguous axes not supported"); ours reverse each axis given
    x = values((2, 3, 2), "INT16")
    (ours,) = run_on(runtime, op_model("REVERSE_V2", [T(x.shape, "INT16"), i32([0, 2])], [T(x.shape, "INT16")]), [x])
    np.testing.assert_array_equal(ours, x[::-1, :, ::-1])


# ---- ONE_HOT (LiteRT only): indices INT32 / INT64, output FLOAT32, INT8, UINT8, INT32, INT64, BOOL
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("index_type", ["INT32", "INT64"])
@pytest.mark.parametrize("type_", ["FLOAT32", "INT8", "UINT8", "INT32", "INT64", "BOOL"])
def test_one_hot(runtime, axis, index_type, type_):
    ind = np.array([[0, 3, 7], [-1, 2, 1]], NP[index_type])  # 7 and -1 lie outside the depth: all off
    depth = 4
    rank = ind.ndim
    at = rank if axis == -1 else axis
    out = ind.shape[:at] + (depth,) + ind.shape[at:]
    on, off = np.array([5], NP[type_]), np.array([2], NP[type_])  # one value each
    if type_ == "BOOL":
        on, off = np.array([True]), np.array([False])
    model = op_model("ONE_HOT", [T(ind.shape, index_type), T((), "INT32", data=np.array(depth, np.int32)),
                                 T((1,), type_), T((1,), type_)], [T(out, type_)], {"axis": axis})
    (ours,) = check(runtime, model, [ind, on, off], ["litert"])
    hit = np.expand_dims(ind, at) == np.arange(depth).reshape((depth,) + (1,) * (rank - at))
    np.testing.assert_array_equal(ours, np.where(hit, on[0], off[0]))


# ---- BROADCAST_ARGS (LiteRT and TFLM): INT32 and INT64 shapes
@pytest.mark.parametrize("a,b", [([2, 1, 3], [4, 1]), ([1], [5, 6, 1]), ([3, 4], [3, 4]), ([1, 0], [7, 1])])
@pytest.mark.parametrize("type_", ["INT32", "INT64"])
def test_broadcast_args(runtime, a, b, type_):
    x0, x1 = np.array(a, NP[type_]), np.array(b, NP[type_])
    n = max(len(a), len(b))
    model = op_model("BROADCAST_ARGS", [T(x0.shape, type_), T(x1.shape, type_)], [T((n,), type_)])
    (ours,) = check(runtime, model, [x0, x1], ["litert", "tflm"])
    np.testing.assert_array_equal(ours, np.broadcast_shapes(tuple(a), tuple(b)))


# ---- MATRIX_DIAG / MATRIX_SET_DIAG (LiteRT only): the move types but BOOL (LiteRT takes it and writes wrong values)
DIAG_TYPES = [t for t in MOVE_TYPES if t != "BOOL"]


@pytest.mark.parametrize("shape", [(3,), (2, 4), (2, 1, 3)])
@pytest.mark.parametrize("type_", DIAG_TYPES)
def test_matrix_diag(runtime, shape, type_):
    model = op_model("MATRIX_DIAG", [T(shape, type_, *q(type_))], [T(shape + (shape[-1],), type_, *q(type_))])
    x = values(shape, type_)
    (ours,) = check(runtime, model, [x], ["litert"])
    want = np.zeros(shape + (shape[-1],), x.dtype)
    i = np.arange(shape[-1])
    want[..., i, i] = x
    np.testing.assert_array_equal(ours, want)


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 4), (2, 5, 2)])
@pytest.mark.parametrize("type_", DIAG_TYPES)
def test_matrix_set_diag(runtime, shape, type_):
    k = min(shape[-2:])
    dshape = shape[:-2] + (k,)
    model = op_model("MATRIX_SET_DIAG", [T(shape, type_, *q(type_)), T(dshape, type_, *q(type_))],
                     [T(shape, type_, *q(type_))])
    x, dg = values(shape, type_), values(dshape, type_)
    (ours,) = check(runtime, model, [x, dg], ["litert"])
    want = x.copy()
    want[..., np.arange(k), np.arange(k)] = dg
    np.testing.assert_array_equal(ours, want)


def test_matrix_diag_refuses_bool(runtime):
    with pytest.raises(Exception, match="BOOL|tensor type"):
        run_on(runtime, op_model("MATRIX_DIAG", [T((3,), "BOOL")], [T((3, 3), "BOOL")]), [values((3,), "BOOL")])


# ---- EMBEDDING_LOOKUP: every table type LiteRT copies (TFLM: FLOAT32, INT8), and the hybrid int8 / uint8 -> float32
@pytest.mark.parametrize("type_", MOVE_TYPES)
def test_embedding_lookup(runtime, type_):
    table = values((5, 2, 3), type_)
    ids = np.array([4, 0, 4, 2], np.int32)
    model = op_model("EMBEDDING_LOOKUP", [T((4,), "INT32"), T(table.shape, type_, *q(type_), data=table)],
                     [T((4, 2, 3), type_, *q(type_))])
    (ours,) = check(runtime, model, [ids], ["litert"] + (["tflm"] if type_ in ("FLOAT32", "INT8") else []))
    np.testing.assert_array_equal(ours, table[ids])


@pytest.mark.parametrize("scales", [0.5, [0.5, 0.25, 2.0, 0.125, 1.0]])
@pytest.mark.parametrize("type_", ["INT8", "UINT8"])
def test_embedding_lookup_hybrid(runtime, type_, scales):
    table = values((5, 4), type_)
    ids = np.array([1, 3, 1], np.int32)
    model = op_model("EMBEDDING_LOOKUP", [T((3,), "INT32"), T(table.shape, type_, scales, 0, data=table)],
                     [T((3, 4), "FLOAT32")])
    (ours,) = check(runtime, model, [ids], ["litert"])  # exact: one float32 product per value
    s = np.broadcast_to(np.asarray(scales, np.float32), (5,))
    np.testing.assert_array_equal(ours, table[ids].view(np.int8).astype(np.float32) * s[ids, None])


# ---- REVERSE_SEQUENCE (LiteRT only): FLOAT32, UINT8, INT16, INT32, INT64; INT32 / INT64 lengths
@pytest.mark.parametrize("shape,seq_dim,batch_dim,lengths", [((2, 3, 4), 2, 1, [4, 0, 2]), ((3, 5), 1, 0, [5, 1, 3]),
                                                             ((4, 2, 3), 0, 2, [1, 4, 2])])
@pytest.mark.parametrize("length_type", ["INT32", "INT64"])
@pytest.mark.parametrize("type_", ["FLOAT32", "UINT8", "INT16", "INT32", "INT64"])
def test_reverse_sequence(runtime, shape, seq_dim, batch_dim, lengths, length_type, type_):
    ln = np.array(lengths, NP[length_type])
    model = op_model("REVERSE_SEQUENCE", [T(shape, type_, *q(type_)), T(ln.shape, length_type)],
                     [T(shape, type_, *q(type_))], {"seq_dim": seq_dim, "batch_dim": batch_dim})
    x = values(shape, type_)
    (ours,) = check(runtime, model, [x, ln], ["litert"])
    want = x.copy()
    for b, n in enumerate(lengths):
        sl = [slice(None)] * len(shape)
        sl[batch_dim], sl[seq_dim] = b, slice(0, n)
        want[tuple(sl)] = np.flip(x[tuple(sl)], axis=seq_dim - (seq_dim > batch_dim))
    np.testing.assert_array_equal(ours, want)


# ---- SCATTER_ND (LiteRT only): updates FLOAT32, INT8, UINT8, INT32, INT64, BOOL; INT32 indices and shape (LiteRT
# refuses INT64 indices)
SCATTER_CASES = [  # indices, output shape
    ([[1], [3], [1]], (4, 2)),  # a repeated index: its updates add up
    ([[0, 1], [2, 0]], (3, 2, 2)),
    ([[[1, 2]], [[0, 0]]], (2, 3)),  # scalar slices, indices of rank 3
]


@pytest.mark.parametrize("indices,shape", SCATTER_CASES)
@pytest.mark.parametrize("type_", ["FLOAT32", "INT8", "UINT8", "INT32", "INT64", "BOOL"])
def test_scatter_nd(runtime, indices, shape, type_):
    index_type = "INT32"
    ind = np.array(indices, NP[index_type])
    k = ind.shape[-1]
    ushape = ind.shape[:-1] + shape[k:]
    model = op_model("SCATTER_ND", [T(ind.shape, index_type), T(ushape, type_),
                                    T((len(shape),), index_type, data=np.array(shape, NP[index_type]))],
                     [T(shape, type_)])
    upd = values(ushape, type_)
    (ours,) = check(runtime, model, [ind, upd], ["litert"])  # float32 exact: repeats add in input order
    if type_ in ("INT32", "INT64"):
        want = np.zeros(shape, upd.dtype)
        np.add.at(want, tuple(np.moveaxis(ind.astype(np.int64), -1, 0)), upd)
        np.testing.assert_array_equal(ours, want)


# ---- SPARSE_TO_DENSE (LiteRT only): values FLOAT32, INT8, UINT8, INT32, INT64; INT32 / INT64 indices
@pytest.mark.parametrize("indices,shape,n_values", [([[0, 1], [2, 0], [0, 1]], (3, 2), 3),  # repeated: the last wins
                                                    ([4, 1], (6,), 2),  # 1-D indices of a 1-D output
                                                    ([[1, 1, 0], [0, 2, 1]], (2, 3, 2), 1)])  # one value for all
@pytest.mark.parametrize("index_type", ["INT32", "INT64"])
@pytest.mark.parametrize("type_", ["FLOAT32", "INT8", "UINT8", "INT32", "INT64"])
def test_sparse_to_dense(runtime, indices, shape, n_values, index_type, type_):
    ind = np.array(indices, NP[index_type])
    vals = values((n_values,), type_)
    # one value for all indices is a scalar in LiteRT (a constant here: 0-d model inputs do not round-trip)
    v = T((), type_, data=vals.reshape(())) if n_values == 1 else T(vals.shape, type_)
    model = op_model("SPARSE_TO_DENSE", [T(ind.shape, index_type),
                                         T((len(shape),), index_type, data=np.array(shape, NP[index_type])),
                                         v, T((), type_, data=np.array(3).astype(NP[type_]))],
                     [T(shape, type_)])
    check(runtime, model, [ind] + ([vals] if n_values > 1 else []), ["litert"])
