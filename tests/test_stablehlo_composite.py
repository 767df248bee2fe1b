"""STABLEHLO_COMPOSITE (issue 23, LiteRT op matrix): ai-edge-torch writes odml.* composites whose
decomposition_subgraph_index subgraph (field 1 of StableHLOCompositeOptions, in builtin_options_2) says what they
compute; LiteRT runs that subgraph, and so do both our runtimes (the ``runtime`` grid). The subgraph index is read
at the options field the op table's row names (gen_ops.py --facts: edge.c's callees; the Python loader by name):
call cycles through a composite are refused at load, both runtimes plan the callee's tensors alike, and
``edge check`` / ``edge inspect`` see the decomposition's ops."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.errors import ModelError
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.conftest import needs_c_runtime
from tests.oprunner import check_on, flex_options, refused_on

pytest.importorskip("ai_edge_litert")

X = np.linspace(-2.0, 2.0, 8, dtype=np.float32).reshape(1, 8)
S = np.array([[0.5, -1.0, 2.0, 0.25, 1.5, -0.75, 3.0, 1.0]], np.float32)


def composite_model(decomposition: int | None = None) -> bytes:
    """main: (y, z) = odml.scaled_square(x, s) [composite]; y = tanh(z), the decomposition: y = x * x * s,
    z = x + s (two inputs, two outputs, a constant inside)."""
    g = GraphBuilder()
    x, s = g.input("x", (1, 8), "FLOAT32"), g.input("s", (1, 8), "FLOAT32")
    y, z, out = g.tensor("y", (1, 8), "FLOAT32"), g.tensor("z", (1, 8), "FLOAT32"), g.tensor("t", (1, 8), "FLOAT32")
    dec = g.subgraph("odml.scaled_square")
    dx, ds = dec.input("x", (1, 8), "FLOAT32"), dec.input("s", (1, 8), "FLOAT32")
    sq, dy, dz = dec.tensor("sq", (1, 8), "FLOAT32"), dec.tensor("y", (1, 8), "FLOAT32"), dec.tensor("z", (1, 8), "FLOAT32")
    half = dec.constant("half", np.full((1, 8), 0.5, np.float32))
    dec.op("MUL", [dx, dx], [sq], fused_activation_function="NONE")
    dec.op("MUL", [sq, ds], [dy], fused_activation_function="NONE")
    dec.op("ADD", [dx, half], [dz], fused_activation_function="NONE")
    dec.output(dy, dz)
    g.op("STABLEHLO_COMPOSITE", [x, s], [y, z], name="odml.scaled_square",
         decomposition_subgraph_index=dec.index if decomposition is None else decomposition,
         composite_attributes=flex_options({"scale": 2.0}), composite_attributes_format="FLEXBUFFERS", version=1)
    g.op("TANH", [z], [out])
    g.output(y, out)
    return write_model(g.build())


def test_composite_runs_its_decomposition_as_litert(runtime):
    model = composite_model()
    check_on(runtime, model, [X, S], peer="litert", rtol=1e-6, atol=1e-6)


def test_composite_calling_its_caller_is_a_cycle_refused_at_load(runtime):
    model = composite_model(decomposition=0)  # the main subgraph calls itself
    if runtime == "python":
        with pytest.raises(ModelError, match=r"subgraph 0 calls itself through a cycle"):
            Interpreter(model_content=model)
    else:
        refused_on(runtime, model, [X, S], ModelError, r"node 0 \(STABLEHLO_COMPOSITE( code \d+)? v1\).*cycle")


@needs_c_runtime
def test_arena_plans_agree_across_the_decomposition():
    model = composite_model()
    plans = []
    for backend in ("python", "c"):
        interp = Interpreter(model_content=model, backend=backend)
        interp.allocate_tensors()
        plan = interp.arena_plan()
        plans.append(({b.key: (b.offset, b.size, b.first_use, b.last_use) for b in plan.buffers if b.size}, plan.total))
    assert plans[0] == plans[1]
    assert any(key[0] == 1 for key in plans[0][0])  # the decomposition's tensors are in the plan


@pytest.mark.parametrize("target", ["host-linux", pytest.param("nrf52840-dk", marks=needs_c_runtime)])
def test_check_runs_a_composite_model(tmp_path, target):
    from edge_sdk.targets.check import check_model

    path = tmp_path / "composite.tflite"
    path.write_bytes(composite_model())
    r = check_model(path, target)
    assert r.verdict == "runs", r.problems


def test_inspect_lists_the_decomposition_ops(tmp_path):
    from edge_sdk.tools.inspection import format_inspection, inspect_model

    path = tmp_path / "composite.tflite"
    path.write_bytes(composite_model())
    report = inspect_model(path)
    assert [(sub["name"], [o["op"] for o in sub["ops"]]) for sub in report["subgraphs"]] == [
        ("main", ["STABLEHLO_COMPOSITE", "TANH"]), ("odml.scaled_square", ["MUL", "MUL", "ADD"])]
    assert "subgraph 1 'odml.scaled_square'" in format_inspection(report) and not report["problems"]


@needs_c_runtime
def test_edge_check_and_inspect_commands_on_a_composite_model(tmp_path, capsys):
    from edge_sdk.cli import main

    path = tmp_path / "composite.tflite"
    path.write_bytes(composite_model())
    assert main(["inspect", str(path)]) == 0
    assert "odml.scaled_square" in capsys.readouterr().out
    assert main(["check", str(path), "--target", "nrf52840-dk"]) == 0  # the C runtime runs it
