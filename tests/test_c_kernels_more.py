"""The C runtime's kernels for the rest of the interpreter's op table (issue 16 point 3): SQUEEZE, EXPAND_DIMS,
SHAPE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, PACK, UNPACK, SLICE, TILE, BROADCAST_TO, MIRROR_PAD, EXP, LOG, SQRT, NEG,
SQUARED_DIFFERENCE, POW, ARG_MAX, REDUCE_MAX, LOG_SOFTMAX. Single-op models through Interpreter(backend="c"):
bit-exact with our Python interpreter (float ops with libm calls: 1e-6 of the value or of the output's range),
and with TFLM (LiteRT's reference kernels for ops TFLM lacks), float within 1e-5."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from tests.conftest import needs_c_runtime
from tests.nodes import random_full_range
from tests.oprunner import T, assert_same, op_model, run_c, run_ours, run_peer

pytestmark = needs_c_runtime

RNG = np.random.default_rng(1605)
Q = {"INT8": dict(scale=0.05, zero_point=3), "INT16": dict(scale=0.001, zero_point=0)}


def feed(shape, type_):
    if type_ == "BOOL":
        return RNG.integers(0, 2, shape).astype(np.bool_).reshape(shape)
    return np.asarray(random_full_range(RNG, shape, type_)).reshape(shape)


def check(model, feeds, peer="tflm", float_libm=False):
    c = run_c(model, feeds)
    ours = run_ours(model, feeds)
    if float_libm:  # libm calls and float sums in another order: 1e-6 relative, or of the output's range
        scale = max([1.0] + [float(np.nanmax(np.abs(np.where(np.isinf(o), 0, o)))) for o in ours if o.size])
        assert_same(c, ours, rtol=1e-6, atol=1e-6 * scale, what="C vs Python")
    else:
        assert_same(c, ours, what="C vs Python")
    if peer:
        floats = any(np.asarray(v).dtype.kind == "f" for v in c)
        tol = {"rtol": 1e-5, "atol": 1e-6} if floats else {}
        assert_same(c, run_peer(model, feeds, peer, isolate=peer != "tflm"), what=f"C vs {peer}", **tol)
    return c


def ints(values, type_="INT32"):
    v = np.asarray(values, np.int64 if type_ == "INT64" else np.int32)
    return T(v.shape, type_, data=v)


# ------------------------------------------------------------------------------------------- data movement


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT32", "BOOL"])
@pytest.mark.parametrize("dims", [[], [0, 2], [-1]])
def test_squeeze(type_, dims):
    x = T((1, 3, 1, 4, 1), type_, **Q.get(type_, {}))
    want = np.squeeze(np.zeros(x.shape), axis=tuple(dims) if dims else None).shape
    model = op_model("SQUEEZE", [x], [T(want, type_, **Q.get(type_, {}))], {"squeeze_dims": dims})
    check(model, [feed(x.shape, type_)], peer="tflm" if type_ != "BOOL" else None)


@pytest.mark.parametrize("axis", [0, 2, -1, -4])
def test_expand_dims(axis):
    x = T((2, 3, 4), "INT8", **Q["INT8"])
    want = np.expand_dims(np.zeros(x.shape), axis).shape
    model = op_model("EXPAND_DIMS", [x, ints([axis])], [T(want, "INT8", **Q["INT8"])])
    check(model, [feed(x.shape, "INT8")])


@pytest.mark.parametrize("out_type", ["INT32", "INT64"])
def test_shape(out_type):
    x = T((2, 5, 7), "FLOAT32")
    model = op_model("SHAPE", [x], [T((3,), out_type)], {"out_type": out_type})
    out = check(model, [feed(x.shape, "FLOAT32")], peer="litert")
    np.testing.assert_array_equal(out[0], [2, 5, 7])


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT64"])
@pytest.mark.parametrize("b", [1, 2, 3])
def test_depth_to_space_and_back(type_, b):
    x = T((2, 3, 2, 4 * b * b), type_, **Q.get(type_, {}))
    d2s = op_model("DEPTH_TO_SPACE", [x], [T((2, 3 * b, 2 * b, 4), type_, **Q.get(type_, {}))], {"block_size": b})
    v = feed(x.shape, type_)
    peer = "tflm" if type_ in ("INT8", "FLOAT32") else None
    out = check(d2s, [v], peer=peer)[0]
    y = T(out.shape, type_, **Q.get(type_, {}))
    s2d = op_model("SPACE_TO_DEPTH", [y], [T(x.shape, type_, **Q.get(type_, {}))], {"block_size": b})
    np.testing.assert_array_equal(check(s2d, [out], peer=peer)[0], v)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT32"])
def test_pack_unpack(axis, type_):
    q = Q.get(type_, {})
    xs = [T((3, 4), type_, **q) for _ in range(3)]
    want = np.stack([np.zeros((3, 4))] * 3, axis=axis).shape
    pack = op_model("PACK", xs, [T(want, type_, **q)], {"values_count": 3, "axis": axis})
    vs = [feed((3, 4), type_) for _ in range(3)]
    packed = check(pack, vs)[0]
    np.testing.assert_array_equal(packed, np.stack(vs, axis=axis))
    n = packed.shape[axis]
    unpack = op_model("UNPACK", [T(packed.shape, type_, **q)], [T((3, 4), type_, **q) for _ in range(n)],
                      {"num": n, "axis": axis})
    outs = check(unpack, [packed])
    for k, o in enumerate(outs):
        np.testing.assert_array_equal(o, np.take(packed, k, axis=axis))


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT64"])
@pytest.mark.parametrize("begin,size", [([0, 1, 2], [2, 2, -1]), ([1, 0, 0], [1, 3, 5]), ([0, 2, 4], [2, 0, 1])])
def test_slice(type_, begin, size):
    q = Q.get(type_, {})
    x = T((2, 3, 5), type_, **q)
    want = tuple(x.shape[d] - begin[d] if size[d] == -1 else size[d] for d in range(3))
    model = op_model("SLICE", [x, ints(begin), ints(size)], [T(want, type_, **q)])
    peer = None if 0 in want else "tflm" if type_ != "INT64" else "litert"
    check(model, [feed(x.shape, type_)], peer=peer)


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "BOOL"])
@pytest.mark.parametrize("shape,mult", [((2, 3), [2, 3]), ((1, 2, 3), [3, 1, 2]), ((4,), [0]), ((2, 1, 2, 1), [1, 2, 1, 3])])
def test_tile(type_, shape, mult):
    q = Q.get(type_, {})
    model = op_model("TILE", [T(shape, type_, **q), ints(mult)], [T(np.tile(np.zeros(shape), mult).shape, type_, **q)])
    v = feed(shape, type_)
    np.testing.assert_array_equal(check(model, [v], peer="litert")[0], np.tile(v, mult))


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT32"])
@pytest.mark.parametrize("shape,target", [((3,), [2, 3]), ((2, 1), [2, 4]), ((1, 1, 3), [2, 4, 3]), ((1,), [2, 2])])
def test_broadcast_to(type_, shape, target):
    q = Q.get(type_, {})
    model = op_model("BROADCAST_TO", [T(shape, type_, **q), ints(target)], [T(tuple(target), type_, **q)])
    v = feed(shape, type_)
    np.testing.assert_array_equal(check(model, [v], peer="tflm")[0], np.broadcast_to(v, target))


# ------------------------------------------------------------------------------------------- math


@pytest.mark.parametrize("op", ["EXP", "LOG", "SQRT"])
def test_float_unary(op):
    x = T((3, 17), "FLOAT32")
    model = op_model(op, [x], [T((3, 17), "FLOAT32")])
    v = RNG.uniform(-8, 8, x.shape).astype(np.float32)
    if op != "EXP":
        v = np.abs(v) + np.float32(1e-3)
        v[0, :3] = [0.0, np.inf, 1.0]
    check(model, [v], float_libm=True)


@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT64"])
def test_neg(type_):
    x = T((4, 5), type_)
    model = op_model("NEG", [x], [T((4, 5), type_)])
    v = feed(x.shape, type_)
    check(model, [v], peer="tflm" if type_ == "FLOAT32" else "litert")


@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT8", "INT16"])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 1, 4), (3, 1)), ((5,), (1,))])
def test_squared_difference(type_, shapes):
    a_shape, b_shape = shapes
    qa = {"INT8": dict(scale=0.05, zero_point=3), "INT16": dict(scale=0.001, zero_point=0)}.get(type_, {})
    qb = {"INT8": dict(scale=0.03, zero_point=-7), "INT16": dict(scale=0.0015, zero_point=0)}.get(type_, {})
    qo = {"INT8": dict(scale=0.4, zero_point=-100), "INT16": dict(scale=0.01, zero_point=0)}.get(type_, {})
    want = np.broadcast_shapes(a_shape, b_shape)
    model = op_model("SQUARED_DIFFERENCE", [T(a_shape, type_, **qa), T(b_shape, type_, **qb)], [T(want, type_, **qo)])
    va, vb = feed(a_shape, type_), feed(b_shape, type_)
    if type_ == "INT32":
        va, vb = va // 70000, vb // 70000
    check(model, [va, vb], peer="tflm" if type_ != "INT16" else None)  # no peer runs int16 (Python: TFLM's rules)


@pytest.mark.parametrize("type_", ["FLOAT32", "INT32"])
def test_pow(type_):
    a, b = T((3, 4), type_), T((4,), type_)
    model = op_model("POW", [a, b], [T((3, 4), type_)])
    if type_ == "FLOAT32":
        va = RNG.uniform(0.1, 3, (3, 4)).astype(np.float32)
        vb = RNG.uniform(-2, 2, (4,)).astype(np.float32)
        check(model, [va, vb], peer="litert", float_libm=True)
    else:
        va = RNG.integers(-9, 10, (3, 4)).astype(np.int32)
        vb = np.array([0, 1, 3, 11], np.int32)
        check(model, [va, vb], peer="litert")


def test_refusals_are_named():
    x = T((1, 3, 1), "INT8", **Q["INT8"])
    bad = op_model("SQUEEZE", [x], [T((1,), "INT8", **Q["INT8"])], {"squeeze_dims": [1]})
    with pytest.raises(ModelError, match="squeeze"):
        run_c(bad, [np.zeros((1, 3, 1), np.int8)])
    s = op_model("SLICE", [T((2, 3), "INT8", **Q["INT8"]), ints([1, 0]), ints([2, 1])], [T((1,), "INT8", **Q["INT8"])])
    with pytest.raises(ModelError, match="slice out of range"):
        run_c(s, [np.zeros((2, 3), np.int8)])


# ------------------------------------------------------------------------------------------- pad, reductions


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT64"])
@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("pads", [[[1, 2], [0, 3]], [[0, 0], [2, 2]], [[2, 1], [1, 0]]])
def test_mirror_pad(type_, mode, pads):
    q = Q.get(type_, {})
    x = T((3, 4), type_, **q)
    want = tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, pads))
    model = op_model("MIRROR_PAD", [x, ints(pads)], [T(want, type_, **q)], {"mode": mode})
    v = feed(x.shape, type_)
    out = check(model, [v], peer="tflm" if type_ != "INT64" else "litert")[0]
    np.testing.assert_array_equal(out, np.pad(v, pads, mode=mode.lower()))


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32", "UINT8"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("out_type", ["INT32", "INT64"])
def test_arg_max(type_, axis, out_type):
    q = Q.get(type_, {})
    x = T((3, 5, 4), type_, **q)
    want = np.argmax(np.zeros(x.shape), axis=axis).shape
    model = op_model("ARG_MAX", [x, ints([axis])], [T(want, out_type)], {"output_type": out_type})
    v = feed(x.shape, type_)
    if type_ != "FLOAT32":
        v[0, 0, :] = v[0, 1, :]  # ties: the first index wins
    peer = "tflm" if type_ in ("INT8", "FLOAT32") and out_type == "INT32" else None if type_ == "INT16" else "litert"
    check(model, [v], peer=peer)


def test_arg_max_nan_rules():
    x = T((2, 4), "FLOAT32")
    model = op_model("ARG_MAX", [x, ints([1])], [T((2,), "INT32")], {"output_type": "INT32"})
    v = np.array([[np.nan, 1, 5, 2], [1, np.nan, 3, 7]], np.float32)
    out = check(model, [v], peer="tflm")[0]
    np.testing.assert_array_equal(out, [0, 3])


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
@pytest.mark.parametrize("axes,keep", [([1], False), ([0, 2], True), ([-1, 0], False), ([0, 1, 2], False)])
def test_reduce_max(type_, axes, keep):
    q = Q.get(type_, {})
    x = T((3, 4, 5), type_, **q)
    want = np.max(np.zeros(x.shape), axis=tuple(axes), keepdims=keep).shape
    model = op_model("REDUCE_MAX", [x, ints(axes)], [T(want, type_, **q)], {"keep_dims": keep})
    v = feed(x.shape, type_)
    out = check(model, [v], peer="tflm" if type_ in ("INT8", "FLOAT32") else "litert")[0]
    np.testing.assert_array_equal(out, np.max(v, axis=tuple(axes), keepdims=keep))


@pytest.mark.parametrize("shape", [(2, 7), (3, 1, 10), (5,)])
def test_log_softmax_float(shape):
    x = T(shape, "FLOAT32")
    model = op_model("LOG_SOFTMAX", [x], [T(shape, "FLOAT32")])
    v = (RNG.standard_normal(shape) * 4).astype(np.float32)
    check(model, [v], peer="litert", float_libm=True)


@pytest.mark.parametrize("scale", [0.1, 0.02, 0.5])
@pytest.mark.parametrize("shape", [(2, 10), (1, 3, 37)])
def test_log_softmax_int8(scale, shape):
    q_in, q_out = dict(scale=scale, zero_point=-5), dict(scale=16 / 256, zero_point=127)
    model = op_model("LOG_SOFTMAX", [T(shape, "INT8", **q_in)], [T(shape, "INT8", **q_out)])
    check(model, [feed(shape, "INT8")], peer="tflm")
