"""Parameters computed from constants alone (issue 23): FILL's dims from a PACK of constants, PAD's paddings from a
CONCATENATION of constants, TILE's multiples from an ADD of constants, as PyTorch's LiteRT converter and onnx2tf
write them, in a model with no SHAPE / RANK / IF / WHILE.

The Python prepare knows such a value (shape_arithmetic.know_at_prepare); the C kernels read a parameter (an op
row's ``params``) only from a constant, so c_loaded.needs_prepare sends exactly these models through the Python
prepare and the bytes the C runtime loads hand the value to its reader as a constant (``<name>/known``). Models
whose parameters are constants in the file, or that compute only weights from constants (float16 DEQUANTIZE),
load as they are: no Python prepare.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.model import read_model, write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.runtime import op_table
from edge_sdk.runtime.c_loaded import c_bytes, needs_prepare
from tests.oprunner import run_on, run_peer

Q = dict(scale=0.05, zero_point=-3)


def _quant(dtype: str) -> dict:
    return Q if dtype == "INT8" else {}


def _parameter(g: GraphBuilder, name: str, value: np.ndarray, folded: bool, compute) -> int:
    """The parameter tensor ``name``: computed from constants by ``compute(g, tensor)`` (the model under test),
    or with ``folded`` the constant ``value`` itself (the same model as TFLM takes it: its FILL / PAD / TILE read
    a constant only)."""
    if folded:
        return g.constant(name, value)
    t = g.tensor(name, value.shape, "INT32")
    compute(g, t)
    return t


def fill_from_pack(n: int, c: int, dtype: str, folded: bool = False) -> bytes:
    """x [n, C] + FILL(dims PACK(n, C) of two scalar constants, 0.5) -> y [n, C] (int8: the fill value 7, the ADD
    at one scale)."""
    g = GraphBuilder()
    x = g.input("x", (n, c), dtype, **_quant(dtype))
    dims = _parameter(g, "dims", np.array([n, c], np.int32), folded, lambda g, t: g.op(
        "PACK", [g.constant("n", np.array(n, np.int32)), g.constant("c", np.array(c, np.int32))], [t],
        values_count=2, axis=0))
    value = np.array(0.5, np.float32) if dtype == "FLOAT32" else np.array(7, np.int8)
    f = g.tensor("f", (n, c), dtype, **_quant(dtype))
    g.op("FILL", [dims, g.constant("value", value, **_quant(dtype))], [f])
    y = g.tensor("y", (n, c), dtype, **_quant(dtype))
    g.op("ADD", [x, f], [y], fused_activation_function="NONE")
    g.output(y)
    return write_model(g.build())


def pad_from_concatenation(n: int, c: int, dtype: str, folded: bool = False) -> bytes:
    """x [1, n, C] -> PAD by paddings CONCATENATION([[0, 0]], [[1, 2], [0, 1]]) (axis 0, constants) ->
    y [1, n + 3, C + 1]."""
    g = GraphBuilder()
    x = g.input("x", (1, n, c), dtype, **_quant(dtype))
    paddings = _parameter(g, "paddings", np.array([[0, 0], [1, 2], [0, 1]], np.int32), folded, lambda g, t: g.op(
        "CONCATENATION", [g.constant("pads_batch", np.array([[0, 0]], np.int32)),
                          g.constant("pads_rest", np.array([[1, 2], [0, 1]], np.int32))], [t], axis=0))
    y = g.tensor("y", (1, n + 3, c + 1), dtype, **_quant(dtype))
    g.op("PAD", [x, paddings], [y])
    g.output(y)
    return write_model(g.build())


def tile_from_add(n: int, c: int, dtype: str, folded: bool = False) -> bytes:
    """x [1, n, C] -> TILE by multiples [1, 1, 1] + [0, 2, 1] (an ADD of constants) -> y [1, 3n, 2C]."""
    g = GraphBuilder()
    x = g.input("x", (1, n, c), dtype, **_quant(dtype))
    multiples = _parameter(g, "multiples", np.array([1, 3, 2], np.int32), folded, lambda g, t: g.op(
        "ADD", [g.constant("ones", np.ones(3, np.int32)), g.constant("more", np.array([0, 2, 1], np.int32))], [t],
        fused_activation_function="NONE"))
    y = g.tensor("y", (1, 3 * n, 2 * c), dtype, **_quant(dtype))
    g.op("TILE", [x, multiples], [y])
    g.output(y)
    return write_model(g.build())


# op: (model builder, the parameter's name, the int8 peer: TFLM, or LiteRT's reference kernels where TFLM has no
# kernel of the op (TILE): the values move unchanged, so exact there too)
BUILDS = {"FILL": (fill_from_pack, "dims", "tflm"), "PAD": (pad_from_concatenation, "paddings", "tflm"),
          "TILE": (tile_from_add, "multiples", "litert")}


def _input(model: bytes, seed: int) -> np.ndarray:
    sg = read_model(model).subgraphs[0]
    tensor = sg.tensors[sg.inputs[0]]
    rng = np.random.default_rng(seed)
    if tensor.type == "INT8":
        return rng.integers(-128, 128, tensor.shape, dtype=np.int8)
    return rng.standard_normal(tensor.shape).astype(np.float32)


@pytest.mark.parametrize("dtype", ["FLOAT32", "INT8"])
@pytest.mark.parametrize("n, c", [(2, 3), (5, 1)])
@pytest.mark.parametrize("op", list(BUILDS))
def test_a_parameter_computed_from_constants_runs_on_both_runtimes(runtime, op, n, c, dtype):
    """Float as LiteRT's reference kernels (within 1e-4 of the output's range), int8 bit-exact with TFLM (whose
    kernels read these parameters from constants only: it runs the model with the value stored as a constant;
    TILE, which TFLM lacks: LiteRT's reference kernels, exact)
    (was, C: 'dims / paddings / the second input must be a constant')."""
    build, _, int8_peer = BUILDS[op]
    model = build(n, c, dtype)
    x = _input(model, n * 10 + c)
    (got,) = run_on(runtime, model, [x])
    if dtype == "INT8":
        (want,) = run_peer(build(n, c, dtype, folded=True), [x], int8_peer, isolate=True)
        np.testing.assert_array_equal(got, want)
    else:
        (want,) = run_peer(model, [x], "litert")
        assert got.shape == want.shape
        span = float(want.max() - want.min()) or 1.0
        assert np.abs(got - want).max() <= 1e-4 * span


@pytest.mark.parametrize("op", list(BUILDS))
def test_the_c_runtimes_bytes_hand_the_computed_parameter_as_a_constant(op):
    """c_bytes (what CInterpreter, edge check / flash / export / profile load): the reader's parameter input is the
    appended constant ``<name>/known`` holding the value; the node computing it keeps its index."""
    build, name, _ = BUILDS[op]
    model = build(4, 2, "FLOAT32")
    assert needs_prepare(read_model(model))
    loaded = read_model(c_bytes(model)[0])
    sg = loaded.subgraphs[0]
    reader = next(op_ for op_ in sg.operators if loaded.op_name(op_) == op)
    k = op_table.row(op).params[0]
    assert sg.tensors[reader.inputs[k]].name == f"{name}/known"
    assert len(sg.operators) == len(read_model(model).subgraphs[0].operators)
    expected = {"FILL": [4, 2], "PAD": [[0, 0], [1, 2], [0, 1]], "TILE": [1, 3, 2]}[op]
    assert loaded.tensor_data(0, reader.inputs[k]).tolist() == expected


def _dequantize_fp16_model() -> bytes:
    """x [8] + DEQUANTIZE(float16 constant [8]) -> y: a weight computed from a constant, no parameter."""
    g = GraphBuilder()
    x = g.input("x", (8,), "FLOAT32")
    w = g.tensor("w", (8,), "FLOAT32")
    g.op("DEQUANTIZE", [g.constant("w16", np.linspace(-1, 1, 8).astype(np.float16))], [w])
    y = g.tensor("y", (8,), "FLOAT32")
    g.op("ADD", [x, w], [y], fused_activation_function="NONE")
    g.output(y)
    return write_model(g.build())


def _fill_with_constant_dims() -> bytes:
    g = GraphBuilder()
    x = g.input("x", (2, 3), "FLOAT32")
    f = g.tensor("f", (2, 3), "FLOAT32")
    g.op("FILL", [g.constant("dims", np.array([2, 3], np.int32)), g.constant("v", np.array(1.5, np.float32))], [f])
    y = g.tensor("y", (2, 3), "FLOAT32")
    g.op("ADD", [x, f], [y], fused_activation_function="NONE")
    g.output(y)
    return write_model(g.build())


def _pad_by_input() -> bytes:
    g = GraphBuilder()
    x = g.input("x", (2, 3), "FLOAT32")
    p = g.input("p", (2, 2), "INT32")
    q = g.tensor("q", (2, 2), "INT32")
    g.op("ADD", [p, g.constant("zero", np.zeros((2, 2), np.int32))], [q], fused_activation_function="NONE")
    y = g.tensor("y", (3, 4), "FLOAT32")
    g.op("PAD", [x, q], [y])
    g.output(y)
    return write_model(g.build())


@pytest.mark.parametrize("build", [_dequantize_fp16_model, _fill_with_constant_dims, _pad_by_input])
def test_models_without_a_computed_constant_parameter_load_in_c_as_they_are(build):
    """The gate stays narrow: a float16 DEQUANTIZE of weights, a parameter that is a constant in the file, or one
    computed from data (refused by both runtimes, as before) pays no Python prepare: the C runtime loads the
    model's own bytes."""
    model = build()
    assert not needs_prepare(read_model(model))
    assert c_bytes(model)[0] is model


def test_every_parameter_refused_from_data_is_a_params_fact():
    """The ops whose parameter fed from data both runtimes refuse (tests/test_shape_arithmetic.py CASES) name that
    input in their row's ``params``: the gate sees the same inputs the kernels read at prepare."""
    from tests.test_shape_arithmetic import CASES

    for op, (inputs, _, _) in CASES.items():
        positions = [k for k, t in enumerate(inputs) if t.name == "param"]
        assert positions and set(positions) <= set(op_table.row(op).params), (op, positions)
