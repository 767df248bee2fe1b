"""Constants once (issue 16 point 4): the Python interpreter computes constant-only nodes (DEQUANTIZE of float16 /
int8 weights, chains of ops on constants) once at allocate_tensors and leaves them out of invoke, with the same
results; nodes reading a model input, stateful ops and delegate nodes are left alone; the arena plan is kept."""

from __future__ import annotations

import numpy as np

from edge_sdk import Interpreter
from edge_sdk.model import schema
from edge_sdk.model.types import Buffer, Operator, OperatorCode, Tensor
from edge_sdk.model.writer import write_model
from tests.conftest import shared_model
from tests.oprunner import T, op_model_object

RNG = np.random.default_rng(1604)


def _weights_model(w16: np.ndarray):
    """DEQUANTIZE(float16 w) -> RESHAPE(const shape) -> ADD(x, w'): two constant-only nodes, then one real one."""
    shape = w16.shape
    model = op_model_object("DEQUANTIZE", [T(shape, "FLOAT16", data=w16)], [T(shape, "FLOAT32")], version=3)
    sub = model.subgraphs[0]
    model.buffers.append(Buffer(np.array([1, w16.size], np.int32).tobytes()))
    sub.tensors += [Tensor("new_shape", (2,), "INT32", buffer=len(model.buffers) - 1),
                    Tensor("w_flat", (1, w16.size), "FLOAT32"), Tensor("x", (1, w16.size), "FLOAT32"),
                    Tensor("y", (1, w16.size), "FLOAT32")]
    model.operator_codes += [OperatorCode(schema.BUILTIN_OPERATOR_CODES["RESHAPE"], None, 1),
                             OperatorCode(schema.BUILTIN_OPERATOR_CODES["ADD"], None, 1)]
    sub.operators += [Operator(1, [1, 2], [3], options_type="ReshapeOptions", options={"new_shape": [1, w16.size]}),
                      Operator(2, [4, 3], [5], options_type="AddOptions", options={"fused_activation_function": "NONE"})]
    sub.inputs, sub.outputs = [4], [5]
    return write_model(model)


def test_dequantize_and_reshape_of_constants_run_once():
    w16 = RNG.standard_normal((3, 8)).astype(np.float16)
    interp = Interpreter(model_content=_weights_model(w16))
    interp.allocate_tensors()
    assert interp.folded_nodes == [(0, 0), (0, 1)]
    assert interp.folded_bytes == 2 * w16.size * 4
    x_index = interp.get_input_details()[0]["index"]
    for _ in range(3):  # every invoke: the folded value is still there (not overwritten by the arena plan)
        x = RNG.standard_normal((1, 24)).astype(np.float32)
        interp.set_tensor(x_index, x)
        interp.invoke()
        np.testing.assert_array_equal(interp.get_tensor(interp.get_output_details()[0]["index"]),
                                      x + w16.astype(np.float32).reshape(1, 24))
    assert [op for _, op, _ in interp.invoke_profiled()] == ["ADD"]


def test_nodes_reading_inputs_are_not_folded():
    x = T((1, 4), "FLOAT32")
    model = write_model(op_model_object("ABS", [x], [T((1, 4), "FLOAT32")]))
    interp = Interpreter(model_content=model)
    interp.allocate_tensors()
    assert interp.folded_nodes == [] and interp.folded_bytes == 0


def test_the_plan_is_kept_and_c_agrees(runtime):
    # the arena plan is the C runtime's (which runs these nodes every invoke): folding does not change it; the C
    # case holds the C runtime's plan and outputs to the folded Python interpreter's
    w16 = RNG.standard_normal((5, 4)).astype(np.float16)
    blob = _weights_model(w16)
    py = Interpreter(model_content=blob)
    py.allocate_tensors()
    assert py.folded_nodes
    if runtime == "c":
        c = Interpreter(model_content=blob, backend="c")
        c.allocate_tensors()
        assert [(b.key, b.offset, b.size) for b in c.arena_plan().buffers] == \
            [(b.key, b.offset, b.size) for b in py.arena_plan().buffers]
        x = RNG.standard_normal((1, 20)).astype(np.float32)
        for i in (py, c):
            i.set_tensor(i.get_input_details()[0]["index"], x)
            i.invoke()
        np.testing.assert_array_equal(py.get_tensor(py.get_output_details()[0]["index"]),
                                      c.get_tensor(c.get_output_details()[0]["index"]))


def test_palm_detection_float16_weights_fold():
    path = shared_model("mediapipe/palm_detection_lite.tflite")
    interp = Interpreter(model_path=str(path))
    interp.allocate_tensors()
    model = interp.model
    dequantize = [i for i, op in enumerate(model.subgraphs[0].operators)
                  if model.operator_codes[op.opcode_index].name == "DEQUANTIZE"]
    assert dequantize and [i for _, i in interp.folded_nodes] == dequantize
    assert len(interp.invoke_profiled()) == len(model.subgraphs[0].operators) - len(dequantize)
