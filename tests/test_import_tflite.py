"""import_tflite: float and quantized .tflite files in; every op we cannot run reported at once."""

import numpy as np
import pytest

from converters.import_tflite import import_tflite, precision
from edge_sdk import ConversionError, Interpreter
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.conftest import shared_model


def test_shared_float_and_int8_models():
    f = import_tflite(shared_model("tflite-micro/hello_world_float.tflite"))
    q = import_tflite(str(shared_model("tflite-micro/hello_world_int8.tflite")))
    assert precision(f) == "float32"
    assert precision(q) == "int8"
    it = Interpreter(model=f)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], np.array([[1.0]], np.float32))
    it.invoke()
    assert abs(float(it.get_tensor(it.get_output_details()[0]["index"]).reshape(-1)[0]) - np.sin(1.0)) < 0.2


def _model(ops):
    g = GraphBuilder()
    x = g.input("x", (1, 4))
    cur = x
    for k, op in enumerate(ops):
        y = g.tensor(f"y{k}", (1, 4))
        g.op(op, [cur], [y])
        cur = y
    g.output(cur)
    return g.build()


def test_bytes_and_model_sources():
    m = _model(["RELU", "TANH"])
    assert [m.op_name(o) for o in import_tflite(write_model(m)).subgraphs[0].operators] == ["RELU", "TANH"]
    assert import_tflite(m) is m


def test_every_unknown_op_reported():
    m = _model(["RELU", "MyCustomOp", "CUMSUM", "TANH", "ethos-u"])
    with pytest.raises(ConversionError) as err:
        import_tflite(write_model(m))
    problems = err.value.problems
    assert len(problems) == 3, problems
    assert "operator 1 (MyCustomOp" in problems[0] and "CUMSUM" in problems[1] and "Ethos-U" in problems[2]
