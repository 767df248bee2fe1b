"""Comparisons, logical ops and SELECT / SELECT_V2 on one-op models: bit-exact with TFLM where TFLM runs the op
and type, with LiteRT's reference kernels otherwise (int16 comparisons, int32 / int64 / BOOL selection, SELECT v1),
and with numpy beyond rank 4 (both peers stop there)."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from tests.oprunner import T, check_op, op_model, run_ours

COMPARISONS = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]
NUMPY = {"EQUAL": np.equal, "NOT_EQUAL": np.not_equal, "LESS": np.less, "LESS_EQUAL": np.less_equal,
         "GREATER": np.greater, "GREATER_EQUAL": np.greater_equal}
DTYPES = {"FLOAT32": np.float32, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
          "BOOL": np.bool_}
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 5)), ((5,), (1,)), ((1,), (2, 2, 2, 3))]
INT8_ALL = np.arange(-128, 128, dtype=np.int8)
# (scale_a, zp_a, scale_b, zp_b): one quantization, different scales, extreme zero points, near-equal scales
INT8_QUANT = [(0.05, 3, 0.05, 3), (0.05, 3, 0.02, -7), (0.5, -128, 0.0039, 127), (0.1, 0, 0.1000001, 1),
              (0.9, 10, 0.007, -20)]


def values(rng, shape, type_):
    if type_ == "BOOL":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if type_ == "FLOAT32":
        x = rng.integers(-4, 5, shape).astype(np.float32) / 2  # small set: equal pairs happen
        flat = x.reshape(-1)
        if flat.size >= 3:
            flat[:3] = [np.nan, np.inf, -0.0]
        return x
    if type_ == "INT64":
        return (rng.integers(-3, 4, shape) * (1 << 40)).astype(np.int64)
    info = np.iinfo(DTYPES[type_])
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(DTYPES[type_])


def compare_model(op, type_, sa, sb, qa=(None, None), qb=(None, None)):
    out = np.broadcast_shapes(sa, sb)
    return op_model(op, [T(sa, type_, *qa), T(sb, type_, *qb)], [T(out, "BOOL")])


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT64"])
def test_raw_comparisons_vs_tflm_and_litert(op, type_, rng):
    for sa, sb in SHAPES:
        model = compare_model(op, type_, sa, sb)
        xs = [values(rng, sa, type_), values(rng, sb, type_)]
        ours = check_op(model, xs, peer=["tflm", "litert"])
        np.testing.assert_array_equal(ours[0], NUMPY[op](*xs))


@pytest.mark.parametrize("op", ["EQUAL", "NOT_EQUAL"])
def test_bool_equality(op, rng):
    for sa, sb in SHAPES:
        model = compare_model(op, "BOOL", sa, sb)
        check_op(model, [values(rng, sa, "BOOL"), values(rng, sb, "BOOL")], peer=["tflm", "litert"])


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("q", INT8_QUANT, ids=lambda q: "_".join(map(str, q)))
def test_int8_every_input_pair_vs_tflm(op, q):
    """All 65536 (a, b) pairs: the rescaling rule (left shift 8, per-input multipliers) decides every tie."""
    model = compare_model(op, "INT8", (256, 1), (1, 256), q[:2], q[2:])
    ours = check_op(model, [INT8_ALL.reshape(256, 1), INT8_ALL.reshape(1, 256)])[0]
    if q[0] == q[2] and q[1] == q[3]:  # one quantization: the rescaled order is the raw order
        np.testing.assert_array_equal(ours, NUMPY[op](INT8_ALL.reshape(256, 1), INT8_ALL.reshape(1, 256)))


@pytest.mark.parametrize("op", COMPARISONS)
def test_int8_broadcast_shapes_vs_tflm(op, rng):
    for sa, sb in SHAPES:
        model = compare_model(op, "INT8", sa, sb, (0.03, -5), (0.07, 9))
        check_op(model, [values(rng, sa, "INT8"), values(rng, sb, "INT8")])


def test_int8_scale_not_below_one_is_refused():
    model = compare_model("LESS", "INT8", (3,), (3,), (2.0, 0), (0.5, 0))
    with pytest.raises(UnsupportedOpError, match=r"scale 2 is not below 1"):
        run_ours(model, [np.zeros(3, np.int8)] * 2)


@pytest.mark.parametrize("op", COMPARISONS)
def test_int16_one_quantization_vs_litert(op, rng):
    for sa, sb in SHAPES[:4]:
        model = compare_model(op, "INT16", sa, sb, (1 / 4096, 0), (1 / 4096, 0))
        check_op(model, [values(rng, sa, "INT16"), values(rng, sb, "INT16")], peer="litert")


def test_int16_different_quantization_is_refused():
    model = compare_model("GREATER", "INT16", (3,), (3,), (0.002, 0), (0.001, 0))
    with pytest.raises(UnsupportedOpError, match="int16 comparisons need one scale and zero point"):
        run_ours(model, [np.zeros(3, np.int16)] * 2)


def test_rank_6_broadcast_against_numpy(rng):
    sa, sb = (2, 1, 3, 1, 2, 2), (1, 2, 1, 4, 1, 2)
    a, b = values(rng, sa, "INT32"), values(rng, sb, "INT32")
    for op in COMPARISONS:
        out = run_ours(compare_model(op, "INT32", sa, sb), [a, b])[0]
        np.testing.assert_array_equal(out, NUMPY[op](a, b))
    with pytest.raises(UnsupportedOpError, match="beyond rank 6"):
        run_ours(compare_model("LESS", "INT32", (2,) * 7, (1,)), [np.zeros((2,) * 7, np.int32), np.zeros(1, np.int32)])


def test_comparison_refusals():
    with pytest.raises(UnsupportedOpError, match="different types"):
        run_ours(op_model("LESS", [T((2,), "INT32"), T((2,), "FLOAT32")], [T((2,), "BOOL")]),
                 [np.zeros(2, np.int32), np.zeros(2, np.float32)])
    with pytest.raises(UnsupportedOpError, match="BOOL"):
        run_ours(op_model("LESS", [T((2,), "BOOL"), T((2,), "BOOL")], [T((2,), "BOOL")]),
                 [np.zeros(2, bool)] * 2)
    with pytest.raises(UnsupportedOpError, match="output"):
        run_ours(op_model("EQUAL", [T((2,), "INT32"), T((2,), "INT32")], [T((2,), "INT32")]),
                 [np.zeros(2, np.int32)] * 2)
    with pytest.raises(ModelError, match="do not broadcast"):
        run_ours(op_model("EQUAL", [T((2,), "INT32"), T((3,), "INT32")], [T((3,), "BOOL")]),
                 [np.zeros(2, np.int32), np.zeros(3, np.int32)])


def test_each_comparison_and_logical_op_has_its_own_prepare():
    """Each op_table row naming a compare kernel names a prepare function of its own op (no dispatch on the op
    name inside a shared prepare), and every prepare function of the module is some row's kernel."""
    from edge_sdk.runtime import op_table
    from edge_sdk.runtime.kernels import compare

    rows = {name: row for name, row in op_table.OPS.items() if row.kernel.startswith("compare:")}
    assert set(COMPARISONS) | {"LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT", "SELECT", "SELECT_V2"} == set(rows)
    for name, row in rows.items():
        assert row.kernel == f"compare:prepare_{name.lower()}", name
        assert callable(row.prepare_function()), name
    assert {f"compare:{f}" for f in dir(compare) if f.startswith("prepare_")} == {r.kernel for r in rows.values()}


# ---------------------------------------------------------------- logical

@pytest.mark.parametrize("op", ["LOGICAL_AND", "LOGICAL_OR"])
def test_logical_binary_vs_tflm(op, rng):
    fn = np.logical_and if op == "LOGICAL_AND" else np.logical_or
    for sa, sb in SHAPES:
        xs = [values(rng, sa, "BOOL"), values(rng, sb, "BOOL")]
        model = op_model(op, [T(sa, "BOOL"), T(sb, "BOOL")], [T(np.broadcast_shapes(sa, sb), "BOOL")])
        ours = check_op(model, xs, peer=["tflm", "litert"])
        np.testing.assert_array_equal(ours[0], fn(*xs))


def test_logical_not_vs_tflm(rng):
    x = values(rng, (3, 5), "BOOL")
    ours = check_op(op_model("LOGICAL_NOT", [T((3, 5), "BOOL")], [T((3, 5), "BOOL")]), [x], peer=["tflm", "litert"])
    np.testing.assert_array_equal(ours[0], ~x)


def test_logical_refuses_non_bool():
    with pytest.raises(UnsupportedOpError, match="BOOL"):
        run_ours(op_model("LOGICAL_AND", [T((2,), "INT8"), T((2,), "INT8")], [T((2,), "BOOL")]),
                 [np.zeros(2, np.int8)] * 2)


# ---------------------------------------------------------------- SELECT_V2 / SELECT

SELECT_SHAPES = [((2, 3), (2, 3), (2, 3)), ((2, 1), (1, 3), (2, 3)), ((1,), (2, 3), (3,)), ((2, 1, 4), (3, 1), (1,)),
                 ((1, 2, 1, 3), (2, 1, 1, 1), (1, 1, 5, 1))]
SELECT_QUANT = {"INT8": (0.05, -3), "INT16": (1 / 2048, 0)}


@pytest.mark.parametrize("type_", ["FLOAT32", "INT8", "INT16", "INT32", "INT64", "BOOL"])
def test_select_v2_broadcasts_all_three(type_, rng):
    # TFLM's SELECT_V2 runs float32 / int8 / int16; LiteRT's reference kernel the rest
    peers = ["tflm", "litert"] if type_ in ("FLOAT32", "INT8", "INT16") else ["litert"]
    q = SELECT_QUANT.get(type_, (None, None))
    for sc, sx, sy in SELECT_SHAPES:
        out = np.broadcast_shapes(sc, sx, sy)
        model = op_model("SELECT_V2", [T(sc, "BOOL"), T(sx, type_, *q), T(sy, type_, *q)], [T(out, type_, *q)])
        xs = [values(rng, sc, "BOOL"), values(rng, sx, type_), values(rng, sy, type_)]
        ours = check_op(model, xs, peer=peers)
        np.testing.assert_array_equal(ours[0], np.where(*xs))


def test_select_v2_constant_operand_and_rank_6(rng):
    y = np.arange(6, dtype=np.float32).reshape(1, 1, 1, 1, 1, 6)
    sc, sx = (2, 1, 3, 1, 2, 1), (1, 2, 1, 2, 1, 1)
    model = op_model("SELECT_V2", [T(sc, "BOOL"), T(sx, "FLOAT32"), T(y.shape, "FLOAT32", data=y)],
                     [T(np.broadcast_shapes(sc, sx, y.shape), "FLOAT32")])
    c, x = values(rng, sc, "BOOL"), values(rng, sx, "FLOAT32")
    np.testing.assert_array_equal(run_ours(model, [c, x])[0], np.where(c, x, y))


def test_select_v2_refuses_mixed_quantization():
    model = op_model("SELECT_V2", [T((3,), "BOOL"), T((3,), "INT8", 0.1, 0), T((3,), "INT8", 0.2, 0)],
                     [T((3,), "INT8", 0.1, 0)])
    with pytest.raises(UnsupportedOpError, match="one scale and zero point"):
        run_ours(model, [np.ones(3, bool), np.zeros(3, np.int8), np.zeros(3, np.int8)])
    model = op_model("SELECT_V2", [T((3,), "INT8"), T((3,), "INT8", 0.1, 0), T((3,), "INT8", 0.1, 0)],
                     [T((3,), "INT8", 0.1, 0)])
    with pytest.raises(UnsupportedOpError, match="condition"):
        run_ours(model, [np.zeros(3, np.int8)] * 3)


@pytest.mark.parametrize("type_", ["FLOAT32", "INT8", "INT32", "BOOL"])
def test_select_v1_vs_litert(type_, rng):
    q = SELECT_QUANT.get(type_, (None, None))
    for sc, sx in [((2, 3), (2, 3)), ((2,), (2, 3)), ((4,), (4, 2, 3)), ((5,), (5,))]:
        model = op_model("SELECT", [T(sc, "BOOL"), T(sx, type_, *q), T(sx, type_, *q)], [T(sx, type_, *q)])
        xs = [values(rng, sc, "BOOL"), values(rng, sx, type_), values(rng, sx, type_)]
        check_op(model, xs, peer="litert")
    model = op_model("SELECT", [T((3,), "BOOL"), T((2, 3), "FLOAT32"), T((2, 3), "FLOAT32")], [T((2, 3), "FLOAT32")])
    with pytest.raises(ModelError, match="condition shape"):
        run_ours(model, [np.ones(3, bool), np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32)])
