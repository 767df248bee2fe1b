"""EXP, LOG, SQRT, ABS, NEG, POW, TILE, BROADCAST_TO (edge_sdk/runtime/kernels/math.py) against LiteRT and TFLM."""

import numpy as np
import pytest

from tests.oprunner import T, check_op, op_model

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("op", ["EXP", "LOG", "SQRT", "ABS", "NEG"])
def test_unary_float(op):
    x = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    if op in ("LOG", "SQRT"):
        x = np.abs(x) + 0.1
    model = op_model(op, [T(x.shape, "FLOAT32")], [T(x.shape, "FLOAT32")])
    peers = ["litert"] if op in ("LOG", "SQRT", "POW") else ["litert", "tflm"]
    ours = check_op(model, [x], peer=peers, rtol=1e-5, atol=1e-6)
    want = {"EXP": np.exp, "LOG": np.log, "SQRT": np.sqrt, "ABS": np.abs, "NEG": np.negative}[op](x)
    np.testing.assert_allclose(ours[0], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["ABS", "NEG"])
def test_unary_int32(op):
    x = RNG.integers(-100, 100, (4, 3)).astype(np.int32)
    model = op_model(op, [T(x.shape, "INT32")], [T(x.shape, "INT32")])
    check_op(model, [x], peer="litert")


def test_pow_broadcast():
    a = (np.abs(RNG.standard_normal((2, 3, 4))) + 0.5).astype(np.float32)
    b = RNG.standard_normal((3, 1)).astype(np.float32)
    model = op_model("POW", [T(a.shape, "FLOAT32"), T(b.shape, "FLOAT32")], [T((2, 3, 4), "FLOAT32")])
    ours = check_op(model, [a, b], peer="litert", rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[0], a**b, rtol=1e-5)


@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT8"])
def test_tile(type_):
    x = RNG.integers(-50, 50, (2, 1, 3)).astype({"FLOAT32": np.float32, "INT32": np.int32, "INT8": np.int8}[type_])
    reps = np.array([1, 4, 2], np.int32)
    q = {"scale": 0.1, "zero_point": 0} if type_ == "INT8" else {}
    model = op_model("TILE", [T(x.shape, type_, **q), T((3,), "INT32", data=reps)], [T((2, 4, 6), type_, **q)])
    ours = check_op(model, [x], peer="litert")  # TFLM has no TILE kernel
    np.testing.assert_array_equal(ours[0], np.tile(x, (1, 4, 2)))


@pytest.mark.parametrize("shape,target", [((3, 1), (2, 3, 4)), ((1,), (5,)), ((2, 1, 4), (2, 3, 4))])
def test_broadcast_to(shape, target):
    x = RNG.standard_normal(shape).astype(np.float32)
    model = op_model("BROADCAST_TO", [T(shape, "FLOAT32"), T((len(target),), "INT32", data=np.array(target, np.int32))],
                     [T(target, "FLOAT32")], version=2)  # TFLite registers BROADCAST_TO from version 2
    ours = check_op(model, [x], peer=["litert", "tflm"])
    np.testing.assert_array_equal(ours[0], np.broadcast_to(x, target))


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("type_", ["FLOAT32", "INT8"])
def test_mirror_pad(mode, type_):
    x = RNG.integers(-50, 50, (1, 3, 4, 2)).astype(np.float32 if type_ == "FLOAT32" else np.int8)
    pads = np.array([[0, 0], [2, 1], [0, 3], [0, 0]], np.int32)
    q = {"scale": 0.1, "zero_point": 0} if type_ == "INT8" else {}
    model = op_model("MIRROR_PAD", [T(x.shape, type_, **q), T((4, 2), "INT32", data=pads)],
                     [T((1, 6, 7, 2), type_, **q)], options={"mode": mode})
    ours = check_op(model, [x], peer=["litert", "tflm"])
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
