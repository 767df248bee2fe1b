"""Comparisons, logical ops and SELECT / SELECT_V2 on one-op models, on both runtimes (the ``runtime`` grid: our
Python kernels, and firmware_c's comparisons.c / logical.c / select.c): bit-exact with TFLM where TFLM runs the op
and type, with LiteRT's reference kernels otherwise (int16 comparisons, int32 / int64 / BOOL selection, SELECT v1),
and with numpy beyond rank 4 (both peers stop there). A peer runs once per case, whichever runtime asks first
(tests.oprunner.check_on). The same refusals on both runtimes; int8 comparisons over all 65536 input pairs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from tests.conftest import needs_c_runtime
from tests.oprunner import T, assert_same, check_on, op_model, refused_on, run_c, run_on, run_ours

COMPARISONS = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]
NUMPY = {"EQUAL": np.equal, "NOT_EQUAL": np.not_equal, "LESS": np.less, "LESS_EQUAL": np.less_equal,
         "GREATER": np.greater, "GREATER_EQUAL": np.greater_equal}
DTYPES = {"FLOAT32": np.float32, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
          "BOOL": np.bool_}
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 5)), ((5,), (1,)), ((1,), (2, 2, 2, 3))]
RANK_6 = ((2, 1, 3, 1, 2, 2), (1, 2, 1, 4, 1, 2))  # beyond both peers: numpy is the reference
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


def same_as_numpy(ours, want) -> None:
    assert_same(ours, [np.asarray(want)], what="ours vs numpy")


# ---------------------------------------------------------------- comparisons

@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT64"])
def test_raw_comparisons_vs_tflm_and_litert(runtime, op, type_, rng):
    for sa, sb in SHAPES:
        model = compare_model(op, type_, sa, sb)
        xs = [values(rng, sa, type_), values(rng, sb, type_)]
        ours = check_on(runtime, model, xs, peer=["tflm", "litert"])
        np.testing.assert_array_equal(ours[0], NUMPY[op](*xs))


@pytest.mark.parametrize("op", ["EQUAL", "NOT_EQUAL"])
def test_bool_equality(runtime, op, rng):
    for sa, sb in SHAPES:
        model = compare_model(op, "BOOL", sa, sb)
        check_on(runtime, model, [values(rng, sa, "BOOL"), values(rng, sb, "BOOL")], peer=["tflm", "litert"])


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("q", INT8_QUANT, ids=lambda q: "_".join(map(str, q)))
def test_int8_every_input_pair_vs_tflm(runtime, op, q):
    """All 65536 (a, b) pairs: the rescaling rule (left shift 8, per-input multipliers) decides every tie."""
    model = compare_model(op, "INT8", (256, 1), (1, 256), q[:2], q[2:])
    ours = check_on(runtime, model, [INT8_ALL.reshape(256, 1), INT8_ALL.reshape(1, 256)])[0]
    if q[0] == q[2] and q[1] == q[3]:  # one quantization: the rescaled order is the raw order
        np.testing.assert_array_equal(ours, NUMPY[op](INT8_ALL.reshape(256, 1), INT8_ALL.reshape(1, 256)))


@pytest.mark.parametrize("op", COMPARISONS)
def test_int8_broadcast_shapes_vs_tflm(runtime, op, rng):
    for sa, sb in SHAPES:
        model = compare_model(op, "INT8", sa, sb, (0.03, -5), (0.07, 9))
        check_on(runtime, model, [values(rng, sa, "INT8"), values(rng, sb, "INT8")])


@pytest.mark.parametrize("op", COMPARISONS)
def test_int16_one_quantization_vs_litert(runtime, op, rng):
    for sa, sb in SHAPES[:4]:
        model = compare_model(op, "INT16", sa, sb, (1 / 4096, 0), (1 / 4096, 0))
        check_on(runtime, model, [values(rng, sa, "INT16"), values(rng, sb, "INT16")], peer="litert")


@needs_c_runtime
@pytest.mark.parametrize("op", COMPARISONS)
def test_c_int16_with_a_zero_point_equals_python(op, rng):
    """int16 with one quantization whose zero point is not 0 (TFLM's int16 GREATER is wrong, NOTES): C == ours."""
    q = (1 / 4096, 3)
    for sa, sb in SHAPES:
        model = compare_model(op, "INT16", sa, sb, q, q)
        xs = [values(rng, sa, "INT16"), values(rng, sb, "INT16")]
        assert_same(run_c(model, xs), run_ours(model, xs), what="C vs Python")


def test_rank_6_broadcast_against_numpy(runtime, rng):
    """INT32, and INT8 without quantization (raw values compared), broadcast at rank 6."""
    sa, sb = RANK_6
    a, b = values(rng, sa, "INT32"), values(rng, sb, "INT32")
    for op in COMPARISONS:
        same_as_numpy(run_on(runtime, compare_model(op, "INT32", sa, sb), [a, b]), NUMPY[op](a, b))
    a8, b8 = values(rng, sa, "INT8"), values(rng, sb, "INT8")
    for op in COMPARISONS:
        same_as_numpy(run_on(runtime, compare_model(op, "INT8", sa, sb), [a8, b8]), NUMPY[op](a8, b8))


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
def test_logical_binary_vs_tflm(runtime, op, rng):
    fn = np.logical_and if op == "LOGICAL_AND" else np.logical_or
    for sa, sb in SHAPES + [RANK_6]:
        xs = [values(rng, sa, "BOOL"), values(rng, sb, "BOOL")]
        model = op_model(op, [T(sa, "BOOL"), T(sb, "BOOL")], [T(np.broadcast_shapes(sa, sb), "BOOL")])
        if len(sa) <= 4:
            ours = check_on(runtime, model, xs, peer=["tflm", "litert"])
        else:
            ours = run_on(runtime, model, xs)
        same_as_numpy(ours, fn(*xs))


def test_logical_not_vs_tflm(runtime, rng):
    for shape in [(3, 5), (1,), (2, 1, 2, 1, 2, 1, 2)]:
        x = values(rng, shape, "BOOL")
        model = op_model("LOGICAL_NOT", [T(shape, "BOOL")], [T(shape, "BOOL")])
        ours = check_on(runtime, model, [x], peer=["tflm", "litert"]) if len(shape) <= 4 else run_on(runtime, model, [x])
        same_as_numpy(ours, ~x)


# ---------------------------------------------------------------- SELECT_V2 / SELECT

SELECT_SHAPES = [((2, 3), (2, 3), (2, 3)), ((2, 1), (1, 3), (2, 3)), ((1,), (2, 3), (3,)), ((2, 1, 4), (3, 1), (1,)),
                 ((1, 2, 1, 3), (2, 1, 1, 1), (1, 1, 5, 1))]
SELECT_RANK_6 = ((2, 1, 3, 1, 2, 1), (1, 2, 1, 2, 1, 1), (1, 1, 1, 1, 1, 3))
SELECT_QUANT = {"INT8": (0.05, -3), "INT16": (1 / 2048, 0)}


@pytest.mark.parametrize("type_", ["FLOAT32", "INT8", "INT16", "INT32", "INT64", "BOOL"])
def test_select_v2_broadcasts_all_three(runtime, type_, rng):
    # TFLM's SELECT_V2 runs float32 / int8 / int16; LiteRT's reference kernel the rest; numpy beyond rank 4
    peers = ["tflm", "litert"] if type_ in ("FLOAT32", "INT8", "INT16") else ["litert"]
    q = SELECT_QUANT.get(type_, (None, None))
    for sc, sx, sy in SELECT_SHAPES + [SELECT_RANK_6]:
        out = np.broadcast_shapes(sc, sx, sy)
        model = op_model("SELECT_V2", [T(sc, "BOOL"), T(sx, type_, *q), T(sy, type_, *q)], [T(out, type_, *q)])
        xs = [values(rng, sc, "BOOL"), values(rng, sx, type_), values(rng, sy, type_)]
        ours = check_on(runtime, model, xs, peer=peers) if len(out) <= 4 else run_on(runtime, model, xs)
        same_as_numpy(ours, np.where(*xs))


def test_select_v2_constant_operand_and_rank_6(runtime, rng):
    y = np.arange(6, dtype=np.float32).reshape(1, 1, 1, 1, 1, 6)
    sc, sx = (2, 1, 3, 1, 2, 1), (1, 2, 1, 2, 1, 1)
    model = op_model("SELECT_V2", [T(sc, "BOOL"), T(sx, "FLOAT32"), T(y.shape, "FLOAT32", data=y)],
                     [T(np.broadcast_shapes(sc, sx, y.shape), "FLOAT32")])
    c, x = values(rng, sc, "BOOL"), values(rng, sx, "FLOAT32")
    same_as_numpy(run_on(runtime, model, [c, x]), np.where(c, x, y))


def test_select_v2_constant_value_same_rank_7_and_empty(runtime, rng):
    y = np.arange(4, dtype=np.float32).reshape(1, 4)
    model = op_model("SELECT_V2", [T((3, 1), "BOOL"), T((3, 4), "FLOAT32"), T((1, 4), "FLOAT32", data=y)],
                     [T((3, 4), "FLOAT32")])
    check_on(runtime, model, [values(rng, (3, 1), "BOOL"), values(rng, (3, 4), "FLOAT32")])
    shape = (1, 2, 1, 2, 1, 2, 3)
    model = op_model("SELECT_V2", [T(shape, "BOOL"), T(shape, "INT16"), T(shape, "INT16")], [T(shape, "INT16")])
    xs = [values(rng, shape, "BOOL"), values(rng, shape, "INT16"), values(rng, shape, "INT16")]
    same_as_numpy(run_on(runtime, model, xs), np.where(*xs))
    model = op_model("SELECT_V2", [T((0, 3), "BOOL"), T((1, 3), "INT32"), T((3,), "INT32")], [T((0, 3), "INT32")])
    xs = [np.zeros((0, 3), bool), values(rng, (1, 3), "INT32"), values(rng, (3,), "INT32")]
    ours = run_on(runtime, model, xs)
    assert ours[0].shape == (0, 3)
    same_as_numpy(ours, np.where(*xs))


@pytest.mark.parametrize("type_", ["FLOAT32", "INT8", "INT32", "INT64", "BOOL"])
def test_select_v1_vs_litert(runtime, type_, rng):
    """SELECT (v1): a rank-1 condition picks whole rows of x / y. TFLM has no SELECT; numpy beyond rank 4."""
    q = SELECT_QUANT.get(type_, (None, None))
    for sc, sx in [((2, 3), (2, 3)), ((2,), (2, 3)), ((4,), (4, 2, 3)), ((5,), (5,)), ((3,), (3, 1, 2, 1, 2, 2))]:
        model = op_model("SELECT", [T(sc, "BOOL"), T(sx, type_, *q), T(sx, type_, *q)], [T(sx, type_, *q)])
        xs = [values(rng, sc, "BOOL"), values(rng, sx, type_), values(rng, sx, type_)]
        if len(sx) <= 4:
            check_on(runtime, model, xs, peer="litert")
        else:
            c = xs[0].reshape(sc + (1,) * (len(sx) - len(sc)))
            same_as_numpy(run_on(runtime, model, xs), np.where(c, xs[1], xs[2]))


# ---------------------------------------------------------------- refusals

@dataclass(frozen=True)
class Refusal:
    """A model both runtimes refuse (at allocate_tensors) with ``error``, its message matching ``match[runtime]``."""

    name: str
    model: bytes
    inputs: list
    error: type[Exception]
    match: dict


def _refusals() -> list[Refusal]:
    z8, z16, z32, zf = np.zeros(3, np.int8), np.zeros(3, np.int16), np.zeros(3, np.int32), np.zeros(3, np.float32)
    one = np.ones(3, bool)
    both = lambda pattern: {"python": pattern, "c": pattern}  # noqa: E731
    int16_two_q = {"python": "int16 comparisons need one scale and zero point", "c": "one scale and zero point"}
    rank_7 = [np.zeros((2,) * 7, np.int32), np.zeros(1, np.int32)]
    cases = [
        Refusal("LESS int8 scale 2", compare_model("LESS", "INT8", (3,), (3,), (2.0, 0), (0.5, 0)), [z8, z8],
                UnsupportedOpError, {"python": r"scale 2 is not below 1", "c": "below 1"}),
        Refusal("GREATER int16 two quantizations",
                compare_model("GREATER", "INT16", (3,), (3,), (0.002, 0), (0.001, 0)), [z16, z16],
                UnsupportedOpError, int16_two_q),
        Refusal("LESS int16 two quantizations", compare_model("LESS", "INT16", (3,), (3,), (0.002, 0), (0.001, 0)),
                [z16, z16], UnsupportedOpError, int16_two_q),
        Refusal("LESS INT32 and FLOAT32", op_model("LESS", [T((2,), "INT32"), T((2,), "FLOAT32")], [T((2,), "BOOL")]),
                [np.zeros(2, np.int32), np.zeros(2, np.float32)], UnsupportedOpError, both("different types")),
        Refusal("EQUAL INT32 and FLOAT32", op_model("EQUAL", [T((3,), "INT32"), T((3,), "FLOAT32")], [T((3,), "BOOL")]),
                [z32, zf], UnsupportedOpError, both("different types")),
        Refusal("EQUAL output INT32 (2,)", op_model("EQUAL", [T((2,), "INT32"), T((2,), "INT32")], [T((2,), "INT32")]),
                [np.zeros(2, np.int32)] * 2, UnsupportedOpError, {"python": "output", "c": "BOOL"}),
        Refusal("EQUAL output INT32 (3,)", op_model("EQUAL", [T((3,), "INT32"), T((3,), "INT32")], [T((3,), "INT32")]),
                [z32, z32], UnsupportedOpError, {"python": "output", "c": "BOOL"}),
        Refusal("EQUAL (2,) and (3,)", op_model("EQUAL", [T((2,), "INT32"), T((3,), "INT32")], [T((3,), "BOOL")]),
                [np.zeros(2, np.int32), z32], ModelError, {"python": "do not broadcast", "c": "broadcast"}),
        Refusal("EQUAL (2, 3) and (4, 3)",
                op_model("EQUAL", [T((2, 3), "INT32"), T((4, 3), "INT32")], [T((2, 3), "BOOL")]),
                [np.zeros((2, 3), np.int32), np.zeros((4, 3), np.int32)], ModelError,
                {"python": "do not broadcast", "c": "broadcast"}),
        Refusal("LESS rank 7", compare_model("LESS", "INT32", (2,) * 7, (1,)), rank_7, UnsupportedOpError,
                {"python": "beyond rank 6", "c": "rank 6"}),
        Refusal("EQUAL rank 7", compare_model("EQUAL", "INT32", (2,) * 7, (1,)), rank_7, UnsupportedOpError,
                {"python": "beyond rank 6", "c": "rank 6"}),
        Refusal("LOGICAL_AND of INT8", op_model("LOGICAL_AND", [T((2,), "INT8"), T((2,), "INT8")], [T((2,), "BOOL")]),
                [np.zeros(2, np.int8)] * 2, UnsupportedOpError, both("BOOL")),
        Refusal("LOGICAL_OR of INT8", op_model("LOGICAL_OR", [T((2,), "INT8"), T((2,), "INT8")], [T((2,), "BOOL")]),
                [np.zeros(2, np.int8)] * 2, UnsupportedOpError, both("BOOL")),
        Refusal("SELECT_V2 values of two quantizations",
                op_model("SELECT_V2", [T((3,), "BOOL"), T((3,), "INT8", 0.1, 0), T((3,), "INT8", 0.2, 0)],
                         [T((3,), "INT8", 0.1, 0)]), [one, z8, z8], UnsupportedOpError, both("one scale and zero point")),
        Refusal("SELECT_V2 INT8 condition (quantized values)",
                op_model("SELECT_V2", [T((3,), "INT8"), T((3,), "INT8", 0.1, 0), T((3,), "INT8", 0.1, 0)],
                         [T((3,), "INT8", 0.1, 0)]), [z8, z8, z8], UnsupportedOpError, both("condition")),
        Refusal("SELECT_V2 INT8 condition",
                op_model("SELECT_V2", [T((3,), "INT8"), T((3,), "INT8"), T((3,), "INT8")], [T((3,), "INT8")]),
                [z8, z8, z8], UnsupportedOpError, both("condition")),
        Refusal("SELECT_V2 INT8 and INT16 values",
                op_model("SELECT_V2", [T((3,), "BOOL"), T((3,), "INT8"), T((3,), "INT16")], [T((3,), "INT8")]),
                [one, z8, z16], UnsupportedOpError, both("different types")),
        Refusal("SELECT_V2 (2,) and (3,)",
                op_model("SELECT_V2", [T((2,), "BOOL"), T((3,), "INT8"), T((3,), "INT8")], [T((3,), "INT8")]),
                [np.ones(2, bool), z8, z8], ModelError, {"python": "do not broadcast", "c": "broadcast"}),
        Refusal("SELECT_V2 rank 7",
                op_model("SELECT_V2", [T((2,) * 7, "BOOL"), T((1,), "INT8"), T((1,), "INT8")], [T((2,) * 7, "INT8")]),
                [np.ones((2,) * 7, bool), np.zeros(1, np.int8), np.zeros(1, np.int8)], UnsupportedOpError,
                {"python": "beyond rank 6", "c": "rank 6"}),
        Refusal("SELECT FLOAT32 condition (3,) for (2, 3)",
                op_model("SELECT", [T((3,), "BOOL"), T((2, 3), "FLOAT32"), T((2, 3), "FLOAT32")],
                         [T((2, 3), "FLOAT32")]),
                [one, np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32)], ModelError,
                {"python": "condition shape", "c": "condition"}),
        Refusal("SELECT INT8 condition (3,) for (2, 3)",
                op_model("SELECT", [T((3,), "BOOL"), T((2, 3), "INT8"), T((2, 3), "INT8")], [T((2, 3), "INT8")]),
                [one, np.zeros((2, 3), np.int8), np.zeros((2, 3), np.int8)], ModelError,
                {"python": "condition shape", "c": "condition"}),
    ]
    bool_order = [Refusal(f"{op} of BOOL", compare_model(op, "BOOL", (2,), (2,)), [np.zeros(2, bool)] * 2,
                          UnsupportedOpError, both("BOOL"))
                  for op in COMPARISONS if op not in ("EQUAL", "NOT_EQUAL")]
    return cases + bool_order


REFUSALS = _refusals()


@pytest.mark.parametrize("case", REFUSALS, ids=[c.name for c in REFUSALS])
def test_refusals(runtime, case):
    refused_on(runtime, case.model, case.inputs, case.error, case.match[runtime])


# ---------------------------------------------------------------- the C runtime on the Cortex-M4 image

@needs_c_runtime
@pytest.mark.slow
def test_int8_comparisons_and_select_run_on_the_m4_image_under_qemu(tmp_path):
    """An int8 conversion with GREATER, LESS and two SELECT_V2 (tests/test_import_onnx_compare.py's model), linked
    into the Cortex-M4 image for QEMU's mps2-an386: its output hash equals our Python interpreter's."""
    import re
    import subprocess

    pytest.importorskip("onnx")
    from converters import convert
    from tests.oprunner import image_main_hash, image_main_inputs, m4_image
    from tests.test_c_builds import _need
    from tests.test_import_onnx_compare import leaky_where_model

    _need("make", "arm-none-eabi-gcc", "qemu-system-arm")
    calib = np.random.default_rng(21).standard_normal((20, 1, 2, 8, 8)).astype(np.float32)
    result = convert(leaky_where_model(), quantize="int8", calibration=calib, io="int8", precision="int8",
                     allow_lossy=True)
    model = tmp_path / "leaky_where.tflite"
    model.write_bytes(result.tflite)
    board = m4_image(model, tmp_path / "b")  # tmp_path/b/cortex-m4/qemu-mps2-an386, the session's library objects
    table = (board / "edge_ops_generated.c").read_text()
    assert {"GREATER", "LESS", "SELECT_V2"} <= set(re.findall(r"/\* (\w+) \*/", table))
    proc = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none", "-kernel",
                           str(board / "edge-image.elf"), "-icount", "shift=0", "-serial", "stdio",
                           "-semihosting-config", "enable=on,target=native"], capture_output=True, text=True,
                          timeout=60)
    out = proc.stdout.replace("\r", "")
    assert proc.returncode == 0 and "status 0" in out, out + proc.stderr
    from edge_sdk import Interpreter

    py = Interpreter(model_content=result.tflite)
    py.allocate_tensors()
    for d, x in zip(py.get_input_details(), image_main_inputs(py)):
        py.set_tensor(d["index"], x)
    py.invoke()
    want = image_main_hash(py.get_tensor(py.get_output_details()[0]["index"]).tobytes())
    assert re.search(r"^out 0 (\d+)$", out, re.M).group(1) == str(want)
