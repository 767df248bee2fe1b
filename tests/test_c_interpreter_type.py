"""One Interpreter type whatever the backend (issue 22 point 3): Interpreter(..., backend="c") is an Interpreter
(the C runtime's subclass, edge_sdk.runtime.c_interpreter.CInterpreter, whose constructor is its own), it has every
public method of the Python Interpreter as its own, and resize_tensor_input re-prepares and re-plans the C runtime
at the new shape with the same results as the Python interpreter."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from edge_sdk.model import read_model, write_model
from edge_sdk.runtime.c_interpreter import CInterpreter
from edge_sdk.runtime.interpreter import Interpreter
from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model



def _dynamic_batch_fc() -> bytes:
    """An int8 FULLY_CONNECTED whose input is [1, 12] with shape signature [-1, 12] (a free batch)."""
    rng = np.random.default_rng(22)
    x = T((1, 12), "INT8", scale=0.05, zero_point=-3)
    w = T((5, 12), "INT8", scale=[0.01, 0.02, 0.015, 0.03, 0.005], zero_point=0,
          data=rng.integers(-127, 128, (5, 12)).astype(np.int8))
    b = T((5,), "INT32", scale=5e-4, zero_point=0, data=rng.integers(-900, 900, 5).astype(np.int32))
    y = T((1, 5), "INT8", scale=0.07, zero_point=4)
    model = read_model(op_model("FULLY_CONNECTED", [x, w, b], [y], options=dict(fused_activation_function="RELU"),
                                version=5))
    sg = model.subgraphs[0]
    sg.tensors[sg.inputs[0]].shape_signature = (-1, 12)
    sg.tensors[sg.outputs[0]].shape_signature = (-1, 5)
    return write_model(model)


def _public(cls) -> set[str]:
    return {name for name, value in vars(cls).items()
            if not name.startswith("_") and (callable(value) or isinstance(value, property))}


def test_every_public_method_of_the_python_interpreter_is_the_c_runtimes_own():
    """Defined by CInterpreter itself, not inherited: an inherited Python method would run on state the C
    interpreter does not have."""
    python = _public(Interpreter)
    assert {"allocate_tensors", "invoke", "set_tensor", "get_tensor", "resize_tensor_input", "get_signature_runner",
            "arena_plan", "op_macs", "invoke_profiled", "partitions"} <= python
    missing = sorted(python - _public(CInterpreter))
    assert not missing, f"CInterpreter inherits these from the Python Interpreter: {missing}"
    for name in sorted(python):  # the same parameters (the C runtime's may add keyword-only ones)
        py, c = getattr(Interpreter, name), getattr(CInterpreter, name)
        if isinstance(py, property):
            assert isinstance(c, property), name
            continue
        py_params = [p for p in inspect.signature(py).parameters.values() if p.kind != p.KEYWORD_ONLY]
        c_params = [p for p in inspect.signature(c).parameters.values() if p.kind != p.KEYWORD_ONLY]
        assert [p.name for p in c_params] == [p.name for p in py_params], name


# The C runtime's own public methods, with what the Python interpreter offers instead: the one type's public surface
# is the Python Interpreter's plus these (a caller that needs them asks for backend="c").
C_RUNTIME_ONLY = {
    "error": "the C runtime's error record (status, node, offset...); the Python interpreter raises its errors",
    "plan_info": "the C plan's figures (tensor_total, high_water, persistent...); Python: arena_plan()",
    "plan_entries": "the C plan's buffers as the C runtime placed them; Python: arena_plan()",
    "enable_trace": "the C runtime's own op timer; Python: invoke_profiled()",
    "trace": "the C runtime's own op timer's records; Python: invoke_profiled()",
}


def test_both_backends_have_the_same_public_surface():
    """dir() of both types: the C runtime adds only C_RUNTIME_ONLY (each with what Python offers instead); every
    figure both runtimes have is on both (packed_weights_bytes, num_threads: bench.py asked hasattr / getattr)."""
    def public(cls):
        return {name for name in dir(cls) if not name.startswith("_")}

    assert public(Interpreter) <= public(CInterpreter)
    assert public(CInterpreter) - public(Interpreter) == set(C_RUNTIME_ONLY)
    it = Interpreter(model_content=_dynamic_batch_fc(), num_threads=2)
    assert it.packed_weights_bytes is None and it.num_threads == 2
    it.allocate_tensors()
    assert it.packed_weights_bytes == 0
    assert it.arena_parts() == {"tensors": it.arena_size, "scratch": 0, "fast_path_scratch": 0, "persistent": 0,
                                "alignment": 0, "init_extra": 0, "packed_weights": 0}


@needs_c_runtime
def test_backend_c_is_an_interpreter_built_by_its_own_constructor():
    data = _dynamic_batch_fc()
    for it in (Interpreter(model_content=data, backend="c"), CInterpreter(model_content=data)):
        assert isinstance(it, Interpreter) and type(it) is CInterpreter
        assert "_p" not in vars(it)  # the Python Interpreter's __init__ did not run
        it.allocate_tensors()
        assert it.get_input_details()[0]["shape"].tolist() == [1, 12]
    assert type(Interpreter(model_content=data)) is Interpreter
    with pytest.raises(ValueError, match="backend must be 'python' or 'c', not 'tpu'"):
        Interpreter(model_content=data, backend="tpu")


@needs_c_runtime
@pytest.mark.parametrize("batch", [3, 1, 7])
def test_resize_on_both_backends_gives_identical_outputs(batch):
    data = _dynamic_batch_fc()
    x = np.random.default_rng(batch).integers(-128, 128, (batch, 12)).astype(np.int8)
    outputs, details, arenas = {}, {}, {}
    for backend in ("python", "c"):
        it = Interpreter(model_content=data, backend=backend)
        it.allocate_tensors()  # planned at [1, 12] first: the resize must re-prepare and re-plan
        index = it.get_input_details()[0]["index"]
        it.resize_tensor_input(index, [batch, 12], strict=True)
        assert it.get_input_details()[0]["shape"].tolist() == [batch, 12]
        it.allocate_tensors()
        it.set_tensor(index, x)
        it.invoke()
        out = it.get_output_details()[0]
        outputs[backend] = it.get_tensor(out["index"])
        details[backend] = (it.get_input_details()[0]["shape_signature"].tolist(), out["shape"].tolist(),
                            it.tensor_shapes())
        arenas[backend] = it.arena_plan()[(0, index)].size
    assert outputs["c"].shape == (batch, 5)
    np.testing.assert_array_equal(outputs["c"], outputs["python"])
    assert details["c"] == details["python"] and details["c"][0] == [-1, 12]
    assert arenas["c"] == arenas["python"] == batch * 12  # the input's planned bytes follow the new shape


@needs_c_runtime
def test_resize_checks_are_the_python_interpreters():
    data = _dynamic_batch_fc()
    for backend in ("python", "c"):
        it = Interpreter(model_content=data, backend=backend)
        index = it.get_input_details()[0]["index"]
        with pytest.raises(ValueError, match=r"ResizeInputTensorStrict only allows mutating unknown dimensions"):
            it.resize_tensor_input(index, [2, 13], strict=True)
        with pytest.raises(ValueError, match="only subgraph inputs can be resized"):
            it.resize_tensor_input(it.get_output_details()[0]["index"], [2, 5])
        it.resize_tensor_input(index, [2, 12])
        with pytest.raises(ValueError, match="Tensor is unallocated"):
            it.set_tensor(index, np.zeros((2, 12), np.int8))
        it.allocate_tensors()
        it.set_tensor(index, np.zeros((2, 12), np.int8))
        it.invoke()
        assert it.get_tensor(it.get_output_details()[0]["index"]).shape == (2, 5)
