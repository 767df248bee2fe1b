"""Nodes the C runtime skips (issue 23): once shape arithmetic's values are constants its readers read
(shape_arithmetic.c_loaded), the SHAPE -> STRIDED_SLICE -> PACK nodes computing them are read by no node. The bytes
the C runtime loads name them in the metadata entry ``edge_skip_nodes`` (int32 (subgraph, node) pairs); invoke
passes them by, their trace / profile rows stay (0 ticks: node indices are the model's). The loader refuses an
entry naming a node out of range or one whose output is read, in one line.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.errors import ModelError
from edge_sdk.model import read_model, write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.input_shapes import shaped_model
from edge_sdk.model.types import Buffer, Metadata
from edge_sdk.runtime.c_loaded import c_bytes
from edge_sdk.runtime.shape_arithmetic import SKIP_METADATA
from tests.conftest import require_c_runtime
from tests.oprunner import run_peer
from tests.test_shape_arithmetic import pad_to_model, shape_reshape_model


def _skips(data: bytes) -> list[tuple[int, int]]:
    model = read_model(data)
    (entry,) = [m for m in model.metadata if m.name == SKIP_METADATA]
    return [tuple(p) for p in np.frombuffer(bytes(model.buffers[entry.buffer].data), "<i4").reshape(-1, 2).tolist()]


@pytest.mark.parametrize("build, length, skipped", [
    (shape_reshape_model, 9, [(0, 0), (0, 1), (0, 2)]),  # SHAPE, STRIDED_SLICE, PACK; RESHAPE and SUM run
    (lambda: pad_to_model(5, 3), 8, [(0, 0), (0, 1), (0, 2), (0, 3)]),  # SHAPE, STRIDED_SLICE, SUB, MUL; PAD runs
])
def test_the_shape_arithmetic_nodes_are_skipped_in_c_and_the_outputs_stay_litert_s(build, length, skipped):
    require_c_runtime()
    model = build()
    shape = list(read_model(model).subgraphs[0].tensors[0].shape)
    shape[1] = length
    assert _skips(c_bytes(shaped_model(model, {"x": tuple(shape)}))[0]) == skipped
    interp = Interpreter(model_content=model, backend="c")
    interp.resize_tensor_input(0, shape)
    interp.allocate_tensors()
    x = np.random.default_rng(length).standard_normal(shape).astype(np.float32)
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.enable_trace()
    interp.invoke()
    rows = interp.trace()
    assert [(r["subgraph"], r["node"]) for r in rows] == [(0, i) for i in range(len(rows))]  # every row stays
    assert [(0, r["node"]) for r in rows if r["ns"] == 0] == skipped  # skipped: exactly 0; the others ran
    got = interp.get_tensor(interp.get_output_details()[0]["index"])
    (want,) = run_peer(shaped_model(model, {"x": tuple(shape)}), [x], "litert")
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_model_without_known_values_names_no_node_to_skip():
    from tests.test_constant_parameters import _dequantize_fp16_model

    assert not read_model(c_bytes(_dequantize_fp16_model())[0]).metadata


@pytest.mark.parametrize("pairs, reason", [
    ([(0, 0)], "a node whose output is read"),  # ADD: MUL reads its output
    ([(0, 1)], "a node whose output is read"),  # MUL: a subgraph output
    ([(0, 2)], "a node out of range"),
    ([(1, 0)], "a node out of range"),
])
def test_the_c_loader_refuses_a_skip_entry_that_would_lose_values(pairs, reason):
    """x -> ADD 1 -> MUL 2 -> y (no shape arithmetic: the C runtime loads these bytes as they are) with a bad entry."""
    require_c_runtime()
    g = GraphBuilder()
    x = g.input("x", (4,), "FLOAT32")
    a, y = g.tensor("a", (4,), "FLOAT32"), g.tensor("y", (4,), "FLOAT32")
    g.op("ADD", [x, g.constant("one", np.ones(4, np.float32))], [a], fused_activation_function="NONE")
    g.op("MUL", [a, g.constant("two", np.full(4, 2, np.float32))], [y], fused_activation_function="NONE")
    g.output(y)
    model = g.build()
    model.buffers.append(Buffer(np.asarray(pairs, "<i4").tobytes()))
    model.metadata.append(Metadata(SKIP_METADATA, len(model.buffers) - 1))
    with pytest.raises(ModelError) as err:
        Interpreter(model_content=write_model(model), backend="c").allocate_tensors()
    text = str(err.value)
    assert "\n" not in text and f"edge_skip_nodes ({reason})" in text, text
