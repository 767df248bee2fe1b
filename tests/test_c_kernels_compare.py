"""C runtime (firmware_c) comparisons (comparisons.c), logical ops (logical.c) and SELECT / SELECT_V2 (select.c):
BOOL outputs equal to our Python kernels' and TFLM's (where TFLM runs the op and type) on one-op models, int8
comparisons over all 65536 input pairs, broadcasts up to rank 6, and the same refusals as the Python side."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from tests.oprunner import T, assert_same, op_model, run_c, run_ours
from tests.peers import run_tflm
from tests.test_kernels_compare import (
    COMPARISONS,
    INT8_ALL,
    INT8_QUANT,
    SELECT_QUANT,
    SELECT_SHAPES,
    SHAPES,
    compare_model,
    values,
)

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None,
                                reason="the C runtime needs gcc and make")


@pytest.fixture(scope="module")
def backend():
    from edge_sdk.runtime import c_build, c_interpreter

    c_build.build()
    return c_interpreter


def check(model: bytes, inputs, tflm: bool = True) -> list[np.ndarray]:
    c = run_c(model, inputs)
    assert_same(c, run_ours(model, inputs), what="C vs Python")
    if tflm:
        assert_same(c, run_tflm(model, inputs), what="C vs TFLM")
    return c


def refused(model: bytes, inputs, error, match: str) -> None:
    """Both runtimes refuse the model with the same kind of error."""
    from edge_sdk.runtime.c_interpreter import CInterpreter

    with pytest.raises(error, match=match):
        CInterpreter(model_content=model).allocate_tensors()
    with pytest.raises(error):
        run_ours(model, inputs)


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT64", "BOOL", "INT16"])
def test_comparisons_over_types_and_shapes(backend, op, type_, rng):
    if type_ == "BOOL" and op not in ("EQUAL", "NOT_EQUAL"):
        return refused(compare_model(op, "BOOL", (2,), (2,)), [np.zeros(2, bool)] * 2, UnsupportedOpError, "BOOL")
    q = (1 / 4096, 3) if type_ == "INT16" else (None, None)
    for sa, sb in SHAPES:
        model = compare_model(op, type_, sa, sb, q, q)
        check(model, [values(rng, sa, type_), values(rng, sb, type_)], tflm=type_ != "INT16")


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("q", INT8_QUANT, ids=lambda q: "_".join(map(str, q)))
def test_int8_every_input_pair(backend, op, q):
    model = compare_model(op, "INT8", (256, 1), (1, 256), q[:2], q[2:])
    check(model, [INT8_ALL.reshape(256, 1), INT8_ALL.reshape(1, 256)])


def test_int8_unquantized_and_rank_6(backend, rng):
    sa, sb = (2, 1, 3, 1, 2, 2), (1, 2, 1, 4, 1, 2)
    for op in COMPARISONS:
        check(compare_model(op, "INT8", sa, sb), [values(rng, sa, "INT8"), values(rng, sb, "INT8")], tflm=False)
        check(compare_model(op, "INT32", sa, sb), [values(rng, sa, "INT32"), values(rng, sb, "INT32")], tflm=False)


def test_comparison_refusals(backend):
    two = [np.zeros(3, np.int8)] * 2
    refused(compare_model("LESS", "INT8", (3,), (3,), (2.0, 0), (0.5, 0)), two, UnsupportedOpError, "below 1")
    refused(compare_model("LESS", "INT16", (3,), (3,), (0.002, 0), (0.001, 0)), [np.zeros(3, np.int16)] * 2,
            UnsupportedOpError, "one scale and zero point")
    refused(op_model("EQUAL", [T((3,), "INT32"), T((3,), "INT32")], [T((3,), "INT32")]), [np.zeros(3, np.int32)] * 2,
            UnsupportedOpError, "BOOL")
    refused(op_model("EQUAL", [T((3,), "INT32"), T((3,), "FLOAT32")], [T((3,), "BOOL")]),
            [np.zeros(3, np.int32), np.zeros(3, np.float32)], UnsupportedOpError, "different types")
    refused(op_model("EQUAL", [T((2, 3), "INT32"), T((4, 3), "INT32")], [T((2, 3), "BOOL")]),
            [np.zeros((2, 3), np.int32), np.zeros((4, 3), np.int32)], ModelError, "broadcast")
    refused(compare_model("EQUAL", "INT32", (2,) * 7, (1,)), [np.zeros((2,) * 7, np.int32), np.zeros(1, np.int32)],
            UnsupportedOpError, "rank 6")


@pytest.mark.parametrize("op", ["LOGICAL_AND", "LOGICAL_OR"])
def test_logical_binary(backend, op, rng):
    for sa, sb in SHAPES + [((2, 1, 3, 1, 2, 2), (1, 2, 1, 4, 1, 2))]:
        model = op_model(op, [T(sa, "BOOL"), T(sb, "BOOL")], [T(np.broadcast_shapes(sa, sb), "BOOL")])
        check(model, [values(rng, sa, "BOOL"), values(rng, sb, "BOOL")], tflm=len(sa) <= 4)
    refused(op_model(op, [T((2,), "INT8"), T((2,), "INT8")], [T((2,), "BOOL")]), [np.zeros(2, np.int8)] * 2,
            UnsupportedOpError, "BOOL")


def test_logical_not(backend, rng):
    for shape in [(3, 5), (1,), (2, 1, 2, 1, 2, 1, 2)]:
        model = op_model("LOGICAL_NOT", [T(shape, "BOOL")], [T(shape, "BOOL")])
        check(model, [values(rng, shape, "BOOL")], tflm=len(shape) <= 4)


@pytest.mark.parametrize("type_", ["FLOAT32", "INT8", "INT16", "INT32", "INT64", "BOOL"])
def test_select_v2(backend, type_, rng):
    q = SELECT_QUANT.get(type_, (None, None))
    tflm = type_ in ("FLOAT32", "INT8", "INT16")
    for sc, sx, sy in SELECT_SHAPES + [((2, 1, 3, 1, 2, 1), (1, 2, 1, 2, 1, 1), (1, 1, 1, 1, 1, 3))]:
        out = np.broadcast_shapes(sc, sx, sy)
        model = op_model("SELECT_V2", [T(sc, "BOOL"), T(sx, type_, *q), T(sy, type_, *q)], [T(out, type_, *q)])
        xs = [values(rng, sc, "BOOL"), values(rng, sx, type_), values(rng, sy, type_)]
        check(model, xs, tflm=tflm and len(out) <= 4)


def test_select_v2_constant_value_same_rank_7_and_empty(backend, rng):
    y = np.arange(4, dtype=np.float32).reshape(1, 4)
    model = op_model("SELECT_V2", [T((3, 1), "BOOL"), T((3, 4), "FLOAT32"), T((1, 4), "FLOAT32", data=y)],
                     [T((3, 4), "FLOAT32")])
    check(model, [values(rng, (3, 1), "BOOL"), values(rng, (3, 4), "FLOAT32")])
    shape = (1, 2, 1, 2, 1, 2, 3)
    model = op_model("SELECT_V2", [T(shape, "BOOL"), T(shape, "INT16"), T(shape, "INT16")], [T(shape, "INT16")])
    check(model, [values(rng, shape, "BOOL"), values(rng, shape, "INT16"), values(rng, shape, "INT16")], tflm=False)
    model = op_model("SELECT_V2", [T((0, 3), "BOOL"), T((1, 3), "INT32"), T((3,), "INT32")], [T((0, 3), "INT32")])
    c = check(model, [np.zeros((0, 3), bool), values(rng, (1, 3), "INT32"), values(rng, (3,), "INT32")], tflm=False)
    assert c[0].shape == (0, 3)


@pytest.mark.parametrize("type_", ["FLOAT32", "INT8", "INT64", "BOOL"])
def test_select_v1(backend, type_, rng):
    q = SELECT_QUANT.get(type_, (None, None))
    for sc, sx in [((2, 3), (2, 3)), ((2,), (2, 3)), ((4,), (4, 2, 3)), ((5,), (5,)), ((3,), (3, 1, 2, 1, 2, 2))]:
        model = op_model("SELECT", [T(sc, "BOOL"), T(sx, type_, *q), T(sx, type_, *q)], [T(sx, type_, *q)])
        xs = [values(rng, sc, "BOOL"), values(rng, sx, type_), values(rng, sx, type_)]
        check(model, xs, tflm=False)  # TFLM has no SELECT (v1); tests/test_kernels_compare.py holds ours to LiteRT


def test_select_refusals(backend):
    z = np.zeros(3, np.int8)
    refused(op_model("SELECT_V2", [T((3,), "BOOL"), T((3,), "INT8", 0.1, 0), T((3,), "INT8", 0.2, 0)],
                     [T((3,), "INT8", 0.1, 0)]), [np.ones(3, bool), z, z], UnsupportedOpError, "one scale and zero point")
    refused(op_model("SELECT_V2", [T((3,), "INT8"), T((3,), "INT8"), T((3,), "INT8")], [T((3,), "INT8")]), [z, z, z],
            UnsupportedOpError, "condition")
    refused(op_model("SELECT_V2", [T((3,), "BOOL"), T((3,), "INT8"), T((3,), "INT16")], [T((3,), "INT8")]),
            [np.ones(3, bool), z, np.zeros(3, np.int16)], UnsupportedOpError, "different types")
    refused(op_model("SELECT_V2", [T((2,), "BOOL"), T((3,), "INT8"), T((3,), "INT8")], [T((3,), "INT8")]),
            [np.ones(2, bool), z, z], ModelError, "broadcast")
    refused(op_model("SELECT", [T((3,), "BOOL"), T((2, 3), "INT8"), T((2, 3), "INT8")], [T((2, 3), "INT8")]),
            [np.ones(3, bool), np.zeros((2, 3), np.int8), np.zeros((2, 3), np.int8)], ModelError, "condition")
    refused(op_model("SELECT_V2", [T((2,) * 7, "BOOL"), T((1,), "INT8"), T((1,), "INT8")], [T((2,) * 7, "INT8")]),
            [np.ones((2,) * 7, bool), np.zeros(1, np.int8), np.zeros(1, np.int8)], UnsupportedOpError, "rank 6")


@pytest.mark.slow
def test_int8_comparisons_and_select_run_on_the_m4_image_under_qemu(tmp_path):
    """An int8 conversion with GREATER, LESS and two SELECT_V2 (tests/test_import_onnx_compare.py's model), linked
    into the Cortex-M4 image for QEMU's mps2-an386: its output hash equals our Python interpreter's."""
    import re
    import subprocess

    pytest.importorskip("onnx")
    from converters import convert
    from tests.oprunner import image_main_hash, image_main_inputs
    from tests.test_c_builds import _make, _need
    from tests.test_import_onnx_compare import leaky_where_model

    _need("make", "arm-none-eabi-gcc", "qemu-system-arm")
    calib = np.random.default_rng(21).standard_normal((20, 1, 2, 8, 8)).astype(np.float32)
    result = convert(leaky_where_model(), quantize="int8", calibration=calib, io="int8", precision="int8",
                     allow_lossy=True)
    model = tmp_path / "leaky_where.tflite"
    model.write_bytes(result.tflite)
    _make("cortex-m4", "BOARD=qemu-mps2-an386", f"MODEL={model}", f"ARM_BUILD={tmp_path / 'b'}", "MODELS=")
    board = tmp_path / "b" / "cortex-m4" / "qemu-mps2-an386"
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
