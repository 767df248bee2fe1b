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
    m = _model(["RELU", "MyCustomOp", "HASHTABLE_FIND", "TANH", "ethos-u"])
    with pytest.raises(ConversionError) as err:
        import_tflite(write_model(m))
    problems = err.value.problems
    assert len(problems) == 3, problems
    assert "operator 1 (MyCustomOp" in problems[0] and "HASHTABLE_FIND" in problems[1] and "Ethos-U" in problems[2]


# ------------------------------------------------------------------------------- compressed float sources
def _cnn():
    from tests.test_quantize import cnn_model

    return cnn_model()


def test_fp16_weights_folded_to_float32_on_import():
    """A float model with float16 weights behind DEQUANTIZE (how most published float TFLite models store
    them) imports as a plain float32 model computing the same as the float16 one."""
    from converters.quantize import quantize

    fp16 = quantize(_cnn(), mode="fp16").model
    assert precision(fp16) == "fp16"
    data = write_model(fp16)
    m = import_tflite(data)
    assert precision(m) == "float32"
    assert m.import_notes == {"dequantized_constants": {"FLOAT16": 6}}
    assert "DEQUANTIZE" not in {m.op_name(op) for op in m.subgraphs[0].operators}
    from tests.peers import run_litert
    from tests.test_quantize import run_ours

    x = np.random.default_rng(3).standard_normal((1, 12, 12, 3)).astype(np.float32)
    np.testing.assert_allclose(run_ours(write_model(m), [x])[0], run_litert(data, [x])[0], atol=1e-6)


def test_dynamic_range_int8_weights_dequantized_on_import():
    """Hybrid (dynamic-range) int8 weights read directly by float ops become their float32 values."""
    from converters.quantize import quantize

    float_model = _cnn()
    dyn = quantize(float_model, mode="dynamic").model
    assert precision(dyn) == "dynamic"
    m = import_tflite(write_model(dyn))
    assert precision(m) == "float32"
    assert m.import_notes == {"dequantized_constants": {"INT8": 3}}
    sg, fsg = m.subgraphs[0], float_model.subgraphs[0]
    w = {t.name: np.asarray(m.tensor_data(0, k)) for k, t in enumerate(sg.tensors) if t.buffer and t.type == "FLOAT32"}
    w1 = np.asarray(float_model.tensor_data(0, [t.name for t in fsg.tensors].index("w1")))
    got = w["w1_f32"]
    step = np.abs(w1).reshape(8, -1).max(axis=1) / 127  # per output channel
    assert np.all(np.abs(got - w1).reshape(8, -1).max(axis=1) <= step / 2 + 1e-7)
    assert not np.array_equal(got, w1)  # really the dequantized int8 values, not the original
    from tests.test_quantize import run_ours

    x = np.random.default_rng(4).standard_normal((1, 12, 12, 3)).astype(np.float32)
    y, ref = run_ours(write_model(m), [x])[0], run_ours(write_model(float_model), [x])[0]
    assert np.abs(y - ref).max() < 0.05


def test_quantized_activation_models_left_alone():
    q = import_tflite(str(shared_model("tflite-micro/hello_world_int8.tflite")))
    assert precision(q) == "int8" and not q.import_notes
