"""Math and the rest of the op table's small kernels on both runtimes (the ``runtime`` grid: our Python kernels,
edge_sdk/runtime/kernels/math.py and friends, and firmware_c's): EXP, LOG, SQRT, ABS, NEG, POW, TILE, BROADCAST_TO,
MIRROR_PAD, SQUEEZE, EXPAND_DIMS, SHAPE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, PACK, UNPACK, SLICE, SQUARED_DIFFERENCE,
ARG_MAX, REDUCE_MAX, LOG_SOFTMAX on one-op models, against LiteRT's reference kernels and TFLM (integers bit for
bit, float within 1e-5), the peer run once per case; the C runtime's cases also against the Python case (bit for
bit; float ops with libm calls: 1e-6 of the value or of the output's range), its only reference where no peer
runs the case."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from tests.nodes import random_full_range
from tests.oprunner import T, assert_same, check_on, keep_python_outputs, op_model, peer_outputs, refused_on, run_on

@pytest.mark.parametrize("op", ["EXP", "LOG", "SQRT", "ABS", "NEG"])
def test_unary_float(runtime, op, rng):
    x = rng.standard_normal((2, 3, 5)).astype(np.float32)
    if op in ("LOG", "SQRT"):
        x = np.abs(x) + 0.1
    model = op_model(op, [T(x.shape, "FLOAT32")], [T(x.shape, "FLOAT32")])
    peers = ["litert"] if op in ("LOG", "SQRT", "POW") else ["litert", "tflm"]
    ours = check_on(runtime, model, [x], peer=peers, rtol=1e-5, atol=1e-6)
    want = {"EXP": np.exp, "LOG": np.log, "SQRT": np.sqrt, "ABS": np.abs, "NEG": np.negative}[op](x)
    np.testing.assert_allclose(ours[0], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["ABS", "NEG"])
def test_unary_int32(runtime, op, rng):
    x = rng.integers(-100, 100, (4, 3)).astype(np.int32)
    model = op_model(op, [T(x.shape, "INT32")], [T(x.shape, "INT32")])
    check_on(runtime, model, [x], peer="litert")


def test_pow_broadcast(runtime, rng):
    a = (np.abs(rng.standard_normal((2, 3, 4))) + 0.5).astype(np.float32)
    b = rng.standard_normal((3, 1)).astype(np.float32)
    model = op_model("POW", [T(a.shape, "FLOAT32"), T(b.shape, "FLOAT32")], [T((2, 3, 4), "FLOAT32")])
    ours = check_on(runtime, model, [a, b], peer="litert", rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[0], a**b, rtol=1e-5)


@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT8"])
def test_tile(runtime, type_, rng):
    x = rng.integers(-50, 50, (2, 1, 3)).astype({"FLOAT32": np.float32, "INT32": np.int32, "INT8": np.int8}[type_])
    reps = np.array([1, 4, 2], np.int32)
    q = {"scale": 0.1, "zero_point": 0} if type_ == "INT8" else {}
    model = op_model("TILE", [T(x.shape, type_, **q), T((3,), "INT32", data=reps)], [T((2, 4, 6), type_, **q)])
    ours = check_on(runtime, model, [x], peer="litert")  # TFLM has no TILE kernel
    np.testing.assert_array_equal(ours[0], np.tile(x, (1, 4, 2)))


@pytest.mark.parametrize("shape,target", [((3, 1), (2, 3, 4)), ((1,), (5,)), ((2, 1, 4), (2, 3, 4))])
def test_broadcast_to(runtime, shape, target, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    model = op_model("BROADCAST_TO", [T(shape, "FLOAT32"), T((len(target),), "INT32", data=np.array(target, np.int32))],
                     [T(target, "FLOAT32")], version=2)  # TFLite registers BROADCAST_TO from version 2
    ours = check_on(runtime, model, [x], peer=["litert", "tflm"])
    np.testing.assert_array_equal(ours[0], np.broadcast_to(x, target))


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("type_", ["FLOAT32", "INT8"])
def test_mirror_pad(runtime, mode, type_, rng):
    x = rng.integers(-50, 50, (1, 3, 4, 2)).astype(np.float32 if type_ == "FLOAT32" else np.int8)
    pads = np.array([[0, 0], [2, 1], [0, 3], [0, 0]], np.int32)
    q = {"scale": 0.1, "zero_point": 0} if type_ == "INT8" else {}
    model = op_model("MIRROR_PAD", [T(x.shape, type_, **q), T((4, 2), "INT32", data=pads)],
                     [T((1, 6, 7, 2), type_, **q)], options={"mode": mode})
    ours = check_on(runtime, model, [x], peer=["litert", "tflm"])
    np.testing.assert_array_equal(ours[0], np.pad(x, pads.tolist(), mode=mode.lower()))


def test_each_unary_op_has_its_own_prepare():
    """Each op_table row naming a math kernel names a prepare function of its own op (no dispatch on the op name
    inside a shared prepare), and every prepare function of the module is some row's kernel."""
    from edge_sdk.runtime import op_table
    from edge_sdk.runtime.kernels import math as kmath

    rows = {name: row for name, row in op_table.OPS.items() if row.kernel.startswith("math:")}
    assert {"EXP", "LOG", "SQRT", "NEG", "ABS"} <= set(rows)
    for name, row in rows.items():
        assert row.kernel == f"math:prepare_{name.lower()}", name
        assert callable(row.prepare_function()), name
    assert {f"math:{f}" for f in dir(kmath) if f.startswith("prepare_")} == {r.kernel for r in rows.values()}


# ------------------------------------------------------------ the C runtime file's cases, on both runtimes

Q = {"INT8": dict(scale=0.05, zero_point=3), "INT16": dict(scale=0.001, zero_point=0)}


def feed(rng, shape, type_):
    if type_ == "BOOL":
        return rng.integers(0, 2, shape).astype(np.bool_).reshape(shape)
    return np.asarray(random_full_range(rng, shape, type_)).reshape(shape)


def check(runtime, model, feeds, peer="tflm", float_libm=False):
    """``runtime`` against ``peer`` (None: no peer runs the case), and the C case against the Python case."""
    ours = run_on(runtime, model, feeds)
    if runtime == "python":
        keep_python_outputs(model, feeds, ours)
    else:
        py = peer_outputs(model, feeds, "python")
        if float_libm:  # libm calls and float sums in another order: 1e-6 relative, or of the output's range
            scale = max([1.0] + [float(np.nanmax(np.abs(np.where(np.isinf(o), 0, o)))) for o in py if o.size])
            assert_same(ours, py, rtol=1e-6, atol=1e-6 * scale, what="C vs Python")
        else:
            assert_same(ours, py, what="C vs Python")
    if peer:
        floats = any(np.asarray(v).dtype.kind == "f" for v in ours)
        tol = {"rtol": 1e-5, "atol": 1e-6} if floats else {}
        assert_same(ours, peer_outputs(model, feeds, peer, isolate=peer != "tflm"), what=f"{runtime} vs {peer}", **tol)
    return ours


def ints(values, type_="INT32"):
    v = np.asarray(values, np.int64 if type_ == "INT64" else np.int32)
    return T(v.shape, type_, data=v)


# ------------------------------------------------------------------------------------------- data movement


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT32", "BOOL"])
@pytest.mark.parametrize("dims", [[], [0, 2], [-1]])
def test_squeeze(runtime, type_, dims, rng):
    x = T((1, 3, 1, 4, 1), type_, **Q.get(type_, {}))
    want = np.squeeze(np.zeros(x.shape), axis=tuple(dims) if dims else None).shape
    model = op_model("SQUEEZE", [x], [T(want, type_, **Q.get(type_, {}))], {"squeeze_dims": dims})
    check(runtime, model, [feed(rng, x.shape, type_)], peer="tflm" if type_ != "BOOL" else None)


@pytest.mark.parametrize("axis", [0, 2, -1, -4])
def test_expand_dims(runtime, axis, rng):
    x = T((2, 3, 4), "INT8", **Q["INT8"])
    want = np.expand_dims(np.zeros(x.shape), axis).shape
    model = op_model("EXPAND_DIMS", [x, ints([axis])], [T(want, "INT8", **Q["INT8"])])
    check(runtime, model, [feed(rng, x.shape, "INT8")])


@pytest.mark.parametrize("out_type", ["INT32", "INT64"])
def test_shape(runtime, out_type, rng):
    x = T((2, 5, 7), "FLOAT32")
    model = op_model("SHAPE", [x], [T((3,), out_type)], {"out_type": out_type})
    out = check(runtime, model, [feed(rng, x.shape, "FLOAT32")], peer="litert")
    np.testing.assert_array_equal(out[0], [2, 5, 7])


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT64"])
@pytest.mark.parametrize("b", [1, 2, 3])
def test_depth_to_space_and_back(runtime, type_, b, rng):
    x = T((2, 3, 2, 4 * b * b), type_, **Q.get(type_, {}))
    d2s = op_model("DEPTH_TO_SPACE", [x], [T((2, 3 * b, 2 * b, 4), type_, **Q.get(type_, {}))], {"block_size": b})
    v = feed(rng, x.shape, type_)
    peer = "tflm" if type_ in ("INT8", "FLOAT32") else None
    out = check(runtime, d2s, [v], peer=peer)[0]
    y = T(out.shape, type_, **Q.get(type_, {}))
    s2d = op_model("SPACE_TO_DEPTH", [y], [T(x.shape, type_, **Q.get(type_, {}))], {"block_size": b})
    np.testing.assert_array_equal(check(runtime, s2d, [out], peer=peer)[0], v)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT32"])
def test_pack_unpack(runtime, axis, type_, rng):
    q = Q.get(type_, {})
    xs = [T((3, 4), type_, **q) for _ in range(3)]
    want = np.stack([np.zeros((3, 4))] * 3, axis=axis).shape
    pack = op_model("PACK", xs, [T(want, type_, **q)], {"values_count": 3, "axis": axis})
    vs = [feed(rng, (3, 4), type_) for _ in range(3)]
    packed = check(runtime, pack, vs)[0]
    np.testing.assert_array_equal(packed, np.stack(vs, axis=axis))
    n = packed.shape[axis]
    unpack = op_model("UNPACK", [T(packed.shape, type_, **q)], [T((3, 4), type_, **q) for _ in range(n)],
                      {"num": n, "axis": axis})
    outs = check(runtime, unpack, [packed])
    for k, o in enumerate(outs):
        np.testing.assert_array_equal(o, np.take(packed, k, axis=axis))


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT64"])
@pytest.mark.parametrize("begin,size", [([0, 1, 2], [2, 2, -1]), ([1, 0, 0], [1, 3, 5]), ([0, 2, 4], [2, 0, 1])])
def test_slice(runtime, type_, begin, size, rng):
    q = Q.get(type_, {})
    x = T((2, 3, 5), type_, **q)
    want = tuple(x.shape[d] - begin[d] if size[d] == -1 else size[d] for d in range(3))
    model = op_model("SLICE", [x, ints(begin), ints(size)], [T(want, type_, **q)])
    peer = None if 0 in want else "tflm" if type_ != "INT64" else "litert"
    check(runtime, model, [feed(rng, x.shape, type_)], peer=peer)


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "BOOL"])
@pytest.mark.parametrize("shape,mult", [((2, 3), [2, 3]), ((1, 2, 3), [3, 1, 2]), ((4,), [0]), ((2, 1, 2, 1), [1, 2, 1, 3])])
def test_tile_more_shapes(runtime, type_, shape, mult, rng):
    q = Q.get(type_, {})
    model = op_model("TILE", [T(shape, type_, **q), ints(mult)], [T(np.tile(np.zeros(shape), mult).shape, type_, **q)])
    v = feed(rng, shape, type_)
    np.testing.assert_array_equal(check(runtime, model, [v], peer="litert")[0], np.tile(v, mult))


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT32"])
@pytest.mark.parametrize("shape,target", [((3,), [2, 3]), ((2, 1), [2, 4]), ((1, 1, 3), [2, 4, 3]), ((1,), [2, 2])])
def test_broadcast_to_more_types(runtime, type_, shape, target, rng):
    q = Q.get(type_, {})
    model = op_model("BROADCAST_TO", [T(shape, type_, **q), ints(target)], [T(tuple(target), type_, **q)])
    v = feed(rng, shape, type_)
    np.testing.assert_array_equal(check(runtime, model, [v], peer="tflm")[0], np.broadcast_to(v, target))


# ------------------------------------------------------------------------------------------- math


@pytest.mark.parametrize("op", ["EXP", "LOG", "SQRT"])
def test_float_unary(runtime, op, rng):
    x = T((3, 17), "FLOAT32")
    model = op_model(op, [x], [T((3, 17), "FLOAT32")])
    v = rng.uniform(-8, 8, x.shape).astype(np.float32)
    if op != "EXP":
        v = np.abs(v) + np.float32(1e-3)
        v[0, :3] = [0.0, np.inf, 1.0]
    check(runtime, model, [v], float_libm=True)


@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT64"])
def test_neg(runtime, type_, rng):
    x = T((4, 5), type_)
    model = op_model("NEG", [x], [T((4, 5), type_)])
    v = feed(rng, x.shape, type_)
    check(runtime, model, [v], peer="tflm" if type_ == "FLOAT32" else "litert")


@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT8", "INT16"])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 1, 4), (3, 1)), ((5,), (1,))])
def test_squared_difference(runtime, type_, shapes, rng):
    a_shape, b_shape = shapes
    qa = {"INT8": dict(scale=0.05, zero_point=3), "INT16": dict(scale=0.001, zero_point=0)}.get(type_, {})
    qb = {"INT8": dict(scale=0.03, zero_point=-7), "INT16": dict(scale=0.0015, zero_point=0)}.get(type_, {})
    qo = {"INT8": dict(scale=0.4, zero_point=-100), "INT16": dict(scale=0.01, zero_point=0)}.get(type_, {})
    want = np.broadcast_shapes(a_shape, b_shape)
    model = op_model("SQUARED_DIFFERENCE", [T(a_shape, type_, **qa), T(b_shape, type_, **qb)], [T(want, type_, **qo)])
    va, vb = feed(rng, a_shape, type_), feed(rng, b_shape, type_)
    if type_ == "INT32":
        va, vb = va // 70000, vb // 70000
    check(runtime, model, [va, vb], peer="tflm" if type_ != "INT16" else None)  # no peer runs int16 (Python: TFLM's rules)


@pytest.mark.parametrize("type_", ["FLOAT32", "INT32"])
def test_pow(runtime, type_, rng):
    a, b = T((3, 4), type_), T((4,), type_)
    model = op_model("POW", [a, b], [T((3, 4), type_)])
    if type_ == "FLOAT32":
        va = rng.uniform(0.1, 3, (3, 4)).astype(np.float32)
        vb = rng.uniform(-2, 2, (4,)).astype(np.float32)
        check(runtime, model, [va, vb], peer="litert", float_libm=True)
    else:
        va = rng.integers(-9, 10, (3, 4)).astype(np.int32)
        vb = np.array([0, 1, 3, 11], np.int32)
        check(runtime, model, [va, vb], peer="litert")


def test_refusals_are_named(runtime):
    x = T((1, 3, 1), "INT8", **Q["INT8"])
    bad = op_model("SQUEEZE", [x], [T((1,), "INT8", **Q["INT8"])], {"squeeze_dims": [1]})
    refused_on(runtime, bad, [np.zeros((1, 3, 1), np.int8)], ModelError, {"python": None, "c": "squeeze"}[runtime])
    s = op_model("SLICE", [T((2, 3), "INT8", **Q["INT8"]), ints([1, 0]), ints([2, 1])], [T((1,), "INT8", **Q["INT8"])])
    refused_on(runtime, s, [np.zeros((2, 3), np.int8)], ModelError,
               {"python": None, "c": "slice out of range"}[runtime])


# ------------------------------------------------------------------------------------------- pad, reductions


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT64"])
@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("pads", [[[1, 2], [0, 3]], [[0, 0], [2, 2]], [[2, 1], [1, 0]]])
def test_mirror_pad_more_pads(runtime, type_, mode, pads, rng):
    q = Q.get(type_, {})
    x = T((3, 4), type_, **q)
    want = tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, pads))
    model = op_model("MIRROR_PAD", [x, ints(pads)], [T(want, type_, **q)], {"mode": mode})
    v = feed(rng, x.shape, type_)
    out = check(runtime, model, [v], peer="tflm" if type_ != "INT64" else "litert")[0]
    np.testing.assert_array_equal(out, np.pad(v, pads, mode=mode.lower()))


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32", "UINT8"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("out_type", ["INT32", "INT64"])
def test_arg_max(runtime, type_, axis, out_type, rng):
    q = Q.get(type_, {})
    x = T((3, 5, 4), type_, **q)
    want = np.argmax(np.zeros(x.shape), axis=axis).shape
    model = op_model("ARG_MAX", [x, ints([axis])], [T(want, out_type)], {"output_type": out_type})
    v = feed(rng, x.shape, type_)
    if type_ != "FLOAT32":
        v[0, 0, :] = v[0, 1, :]  # ties: the first index wins
    peer = "tflm" if type_ in ("INT8", "FLOAT32") and out_type == "INT32" else None if type_ == "INT16" else "litert"
    check(runtime, model, [v], peer=peer)


def test_arg_max_nan_rules(runtime):
    x = T((2, 4), "FLOAT32")
    model = op_model("ARG_MAX", [x, ints([1])], [T((2,), "INT32")], {"output_type": "INT32"})
    v = np.array([[np.nan, 1, 5, 2], [1, np.nan, 3, 7]], np.float32)
    out = check(runtime, model, [v], peer="tflm")[0]
    np.testing.assert_array_equal(out, [0, 3])


@pytest.mark.parametrize("type_", ["INT8", "FLOAT32", "INT16", "INT32"])
@pytest.mark.parametrize("axes,keep", [([1], False), ([0, 2], True), ([-1, 0], False), ([0, 1, 2], False)])
def test_reduce_max(runtime, type_, axes, keep, rng):
    q = Q.get(type_, {})
    x = T((3, 4, 5), type_, **q)
    want = np.max(np.zeros(x.shape), axis=tuple(axes), keepdims=keep).shape
    model = op_model("REDUCE_MAX", [x, ints(axes)], [T(want, type_, **q)], {"keep_dims": keep})
    v = feed(rng, x.shape, type_)
    out = check(runtime, model, [v], peer="tflm" if type_ in ("INT8", "FLOAT32") else "litert")[0]
    np.testing.assert_array_equal(out, np.max(v, axis=tuple(axes), keepdims=keep))


@pytest.mark.parametrize("shape", [(2, 7), (3, 1, 10), (5,)])
def test_log_softmax_float(runtime, shape, rng):
    x = T(shape, "FLOAT32")
    model = op_model("LOG_SOFTMAX", [x], [T(shape, "FLOAT32")])
    v = (rng.standard_normal(shape) * 4).astype(np.float32)
    check(runtime, model, [v], peer="litert", float_libm=True)


@pytest.mark.parametrize("scale", [0.1, 0.02, 0.5])
@pytest.mark.parametrize("shape", [(2, 10), (1, 3, 37)])
def test_log_softmax_int8(runtime, scale, shape, rng):
    q_in, q_out = dict(scale=scale, zero_point=-5), dict(scale=16 / 256, zero_point=127)
    model = op_model("LOG_SOFTMAX", [T(shape, "INT8", **q_in)], [T(shape, "INT8", **q_out)])
    check(runtime, model, [feed(rng, shape, "INT8")], peer="tflm")
