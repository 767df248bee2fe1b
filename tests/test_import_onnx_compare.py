"""import_onnx: comparisons (Less, LessOrEqual, Greater, GreaterOrEqual, Equal), logical ops (And, Or, Xor, Not)
and a run-time Where (SELECT_V2), on onnx.helper models checked against onnxruntime in our interpreter and LiteRT;
then the int8 rules for them: a comparison's inputs keep their own quantization (BOOL result), SELECT_V2's value
inputs and output share one scale, and the quantized model runs bit-exact in TFLM."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("onnx")
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters import convert
from converters.import_onnx import import_onnx
from edge_sdk import ConversionError
from edge_sdk.model import read_model, write_model
from tests.oprunner import run_c
from tests.peers import run_litert, run_tflm
from tests.test_import_onnx import op_names, run_ours

_TYPES = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.int64): TP.INT64, np.dtype(np.int32): TP.INT32,
          np.dtype(np.bool_): TP.BOOL}
COMPARISONS = {"Less": ("LESS", np.less), "LessOrEqual": ("LESS_EQUAL", np.less_equal),
               "Greater": ("GREATER", np.greater), "GreaterOrEqual": ("GREATER_EQUAL", np.greater_equal),
               "Equal": ("EQUAL", np.equal)}


def make(nodes, inputs: dict, outputs: dict, inits=None, opset=17):
    """``inputs`` name -> example array, ``outputs`` name -> numpy dtype of that output."""
    ins = [helper.make_tensor_value_info(k, _TYPES[v.dtype], list(v.shape)) for k, v in inputs.items()]
    outs = [helper.make_tensor_value_info(k, _TYPES[np.dtype(t)], None) for k, t in outputs.items()]
    graph = helper.make_graph(nodes, "test", ins, outs,
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    return model


def check(proto, inputs: dict):
    """ours and LiteRT == onnxruntime exactly for BOOL / integer outputs, to 1e-6 for float ones."""
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)
    model = import_onnx(proto)
    feeds = list(inputs.values())
    for who, got in (("ours", run_ours(model, feeds)), ("litert", run_litert(write_model(model), feeds))):
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            assert g.shape == w.shape and g.dtype == w.dtype, (who, k, g.shape, w.shape, g.dtype, w.dtype)
            if w.dtype.kind == "f":
                np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7, err_msg=f"{who} output {k}")
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"{who} output {k}")
    return model


def ints(shape, seed=0, dtype=np.int64):
    return np.random.default_rng(seed).integers(-3, 4, shape).astype(dtype)


def floats(shape, seed=0):
    return (np.random.default_rng(seed).integers(-4, 5, shape) / 2).astype(np.float32)  # ties happen


@pytest.mark.parametrize("op", sorted(COMPARISONS))
@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((1, 2, 1, 3), (2, 1, 1))])
def test_comparison_float_two_runtime_inputs(op, shapes):
    a, b = floats(shapes[0], 1), floats(shapes[1], 2)
    model = check(make([helper.make_node(op, ["a", "b"], ["y"])], {"a": a, "b": b}, {"y": np.bool_}), {"a": a, "b": b})
    assert op_names(model) == [COMPARISONS[op][0]]


@pytest.mark.parametrize("op", sorted(COMPARISONS))
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_comparison_integer_with_a_constant(op, dtype):
    x = ints((4, 5), 3, dtype)
    proto = make([helper.make_node(op, ["x", "k"], ["y"])], {"x": x}, {"y": np.bool_}, {"k": np.array([0], dtype)})
    check(proto, {"x": x})


def test_equal_on_bools_and_less_opset9():
    a, b = ints((3, 4), 4) > 0, ints((4,), 5) > 0
    check(make([helper.make_node("Equal", ["a", "b"], ["y"])], {"a": a, "b": b}, {"y": np.bool_}), {"a": a, "b": b})
    x, y = floats((2, 3), 6), floats((2, 3), 7)
    check(make([helper.make_node("Less", ["x", "y"], ["z"])], {"x": x, "y": y}, {"z": np.bool_}, opset=9),
          {"x": x, "y": y})


@pytest.mark.parametrize("op,tflite", [("And", "LOGICAL_AND"), ("Or", "LOGICAL_OR"), ("Xor", "NOT_EQUAL")])
def test_logical_binary(op, tflite):
    a, b = ints((2, 3, 4), 8) > 0, ints((3, 1), 9) > 0
    model = check(make([helper.make_node(op, ["a", "b"], ["y"])], {"a": a, "b": b}, {"y": np.bool_}), {"a": a, "b": b})
    assert op_names(model) == [tflite]


def test_not_of_a_comparison():
    x = floats((3, 4), 10)
    nodes = [helper.make_node("Greater", ["x", "t"], ["g"]), helper.make_node("Not", ["g"], ["y"])]
    model = check(make(nodes, {"x": x}, {"y": np.bool_}, {"t": np.array(0.25, np.float32)}), {"x": x})
    assert op_names(model) == ["GREATER", "LOGICAL_NOT"]


@pytest.mark.parametrize("shapes", [((2, 3), (2, 3), (2, 3)), ((2, 1), (1, 3), (2, 3)), ((3,), (2, 3), (1,)),
                                    ((1, 2, 1, 4), (3, 1, 5, 1), (2, 1, 4))])
def test_where_runtime_condition_is_select_v2(shapes):
    c, x, y = ints(shapes[0], 11) > 0, floats(shapes[1], 12), floats(shapes[2], 13)
    proto = make([helper.make_node("Where", ["c", "x", "y"], ["z"])], {"c": c, "x": x, "y": y}, {"z": np.float32})
    model = check(proto, {"c": c, "x": x, "y": y})
    assert op_names(model) == ["SELECT_V2"]


def test_where_integer_branches_and_masked_fill():
    """PyTorch's masked_fill export: Where(Equal(mask, 0), -1e9, scores), then Softmax; and int64 branches."""
    scores, mask = floats((2, 4, 4), 14), (ints((2, 1, 4), 15) > 0).astype(np.int64)
    nodes = [helper.make_node("Equal", ["mask", "zero"], ["pad"]),
             helper.make_node("Where", ["pad", "neg", "scores"], ["filled"]),
             helper.make_node("Softmax", ["filled"], ["p"], axis=-1)]
    proto = make(nodes, {"scores": scores, "mask": mask}, {"p": np.float32},
                 {"zero": np.array(0, np.int64), "neg": np.array(-1e9, np.float32)})
    model = check(proto, {"scores": scores, "mask": mask})
    assert op_names(model) == ["EQUAL", "SELECT_V2", "SOFTMAX"]
    c, a, b = ints((3, 4), 16) > 0, ints((3, 4), 17), ints((4,), 18)
    check(make([helper.make_node("Where", ["c", "a", "b"], ["z"])], {"c": c, "a": a, "b": b}, {"z": np.int64}),
          {"c": c, "a": a, "b": b})


def test_refusals_name_the_node():
    a = floats((2, 3), 19)
    nodes = [helper.make_node("Less", ["a", "k"], ["y"], name="mixed_types"),
             helper.make_node("And", ["a", "a"], ["z"], name="float_and")]
    proto = make(nodes, {"a": a}, {"y": np.bool_, "z": np.bool_}, {"k": np.array([1], np.int64)})
    with pytest.raises(ConversionError) as err:
        import_onnx(proto)
    joined = "\n".join(err.value.problems)
    assert "'mixed_types' (Less" in joined and "operand types differ" in joined
    assert "'float_and' (And" in joined and "takes BOOL" in joined


def test_float_conversion_moves_layout_through_comparisons_and_select():
    """convert (quantize none): the layout pass sinks the Conv's NHWC transposes through GREATER / SELECT_V2;
    the result still equals onnxruntime."""
    x = np.random.default_rng(24).standard_normal((1, 2, 8, 8)).astype(np.float32)
    result = convert(leaky_where_model(), quantize="none")
    want = ort.InferenceSession(leaky_where_model().SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    from tests.oprunner import run_ours as run_bytes

    np.testing.assert_allclose(run_bytes(result.tflite, [x])[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run_c(result.tflite, [x])[0], want, rtol=1e-5, atol=1e-6)
    model = read_model(result.tflite)
    assert [model.op_name(op) for op in model.subgraphs[0].operators].count("TRANSPOSE") == 2


# ---------------------------------------------------------------- int8

def leaky_where_model():
    """y = Where(x > 0, x, 0.1 * x) + Where(x < -1, 1, 0) * 0.5: a comparison against a constant, SELECT_V2 with
    two run-time branches and one with two constant branches."""
    r = np.random.default_rng(20)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1] * 4),
        helper.make_node("Greater", ["c", "zero"], ["pos"]),
        helper.make_node("Mul", ["c", "tenth"], ["small"]),
        helper.make_node("Where", ["pos", "c", "small"], ["leaky"]),
        helper.make_node("Less", ["c", "minus1"], ["low"]),
        helper.make_node("Where", ["low", "one", "zerof"], ["flag"]),
        helper.make_node("Mul", ["flag", "half"], ["bonus"]),
        helper.make_node("Add", ["leaky", "bonus"], ["y"]),
    ]
    inits = {"w": (r.standard_normal((4, 2, 3, 3)) * 0.5).astype(np.float32), "b": np.zeros(4, np.float32),
             "zero": np.array(0, np.float32), "tenth": np.array(0.1, np.float32), "minus1": np.array(-1, np.float32),
             "one": np.array(1, np.float32), "zerof": np.array(0, np.float32), "half": np.array(0.5, np.float32)}
    graph = helper.make_graph(nodes, "leaky_where", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 2, 8, 8])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, [1, 4, 8, 8])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_int8_comparisons_keep_their_inputs_quantization_and_select_shares_one():
    calib = np.random.default_rng(21).standard_normal((40, 1, 2, 8, 8)).astype(np.float32)
    result = convert(leaky_where_model(), quantize="int8", calibration=calib, io="int8", precision="int8",
                     allow_lossy=True)
    model = read_model(result.tflite)
    sg = model.subgraphs[0]
    names = [model.op_name(op) for op in sg.operators]
    assert "GREATER" in names and "LESS" in names and names.count("SELECT_V2") == 2, names
    for op in sg.operators:
        name = model.op_name(op)
        ts = [sg.tensors[i] for i in op.inputs]
        if name in ("GREATER", "LESS"):
            assert [t.type for t in ts] == ["INT8", "INT8"], name
            assert sg.tensors[op.outputs[0]].type == "BOOL"
            assert all(0 < t.quantization.scale[0] < 1 for t in ts)
        if name == "SELECT_V2":
            q = {(float(t.quantization.scale[0]), int(t.quantization.zero_point[0]))
                 for t in ts[1:] + [sg.tensors[op.outputs[0]]]}
            assert ts[0].type == "BOOL" and len(q) == 1, q
    # bit-exact with TFLM, and close to the float model
    x = calib[0]
    s, z = sg.tensors[sg.inputs[0]].quantization.scale[0], sg.tensors[sg.inputs[0]].quantization.zero_point[0]
    xq = np.clip(np.round(x / s) + z, -128, 127).astype(np.int8)
    from tests.oprunner import run_ours as run_bytes

    ours = run_bytes(result.tflite, [xq])
    np.testing.assert_array_equal(ours[0], run_tflm(result.tflite, [xq])[0])
    np.testing.assert_array_equal(ours[0], run_c(result.tflite, [xq])[0])
    out_t = sg.tensors[sg.outputs[0]]
    deq = (ours[0].astype(np.float32) - out_t.quantization.zero_point[0]) * out_t.quantization.scale[0]
    want = ort.InferenceSession(leaky_where_model().SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(deq - want).max() < 0.1 * np.abs(want).max()


def test_int8_comparison_of_a_wide_range_runs_in_float():
    """A comparison input whose int8 scale would reach 1 (values beyond +-127): TFLM's int8 rule cannot take it,
    so that comparison reads the dequantized values in float32 (the result is right, not refused)."""
    nodes = [helper.make_node("Mul", ["x", "big"], ["wide"]), helper.make_node("Greater", ["wide", "t"], ["g"]),
             helper.make_node("Where", ["g", "x", "zero"], ["y"])]
    proto = make(nodes, {"x": floats((1, 16), 22)}, {"y": np.float32},
                 {"big": np.array(400, np.float32), "t": np.array(100, np.float32), "zero": np.array(0, np.float32)})
    calib = np.random.default_rng(23).standard_normal((20, 1, 16)).astype(np.float32)
    result = convert(proto, quantize="int8", calibration=calib, io="float32", precision="int8", allow_lossy=True)
    model = read_model(result.tflite)
    sg = model.subgraphs[0]
    greater = next(op for op in sg.operators if model.op_name(op) == "GREATER")
    assert [sg.tensors[i].type for i in greater.inputs] == ["FLOAT32", "FLOAT32"]
    notes = result.report["quantization"]["report"]["notes"]
    assert any("comparison 'g' reads float32" in n for n in notes), notes
    x = calib[0]
    from tests.oprunner import run_ours as run_bytes

    got = run_bytes(result.tflite, [x])[0]
    np.testing.assert_array_equal(got != 0, x * 400 > 100)


def test_int16x8_comparisons_share_one_scale():
    """int16x8: the int16 comparison kernels compare raw values, so both inputs of a comparison get one scale;
    the model equals LiteRT's reference kernels (TFLM's int16 comparisons are no reference) and the C runtime."""
    calib = np.random.default_rng(21).standard_normal((40, 1, 2, 8, 8)).astype(np.float32)
    result = convert(leaky_where_model(), quantize="int16x8", calibration=calib, io="int8", precision="int8",
                     allow_lossy=True)
    model = read_model(result.tflite)
    sg = model.subgraphs[0]
    compared = [op for op in sg.operators if model.op_name(op) in ("GREATER", "LESS")]
    assert len(compared) == 2
    for op in compared:
        a, b = (sg.tensors[i] for i in op.inputs)
        assert a.type == b.type == "INT16" and a.quantization.scale[0] == b.quantization.scale[0]
    x = np.random.default_rng(25).integers(-3000, 3000, sg.tensors[sg.inputs[0]].shape).astype(np.int16)
    from tests.oprunner import run_ours as run_bytes

    ours = run_bytes(result.tflite, [x])[0]
    np.testing.assert_array_equal(ours, run_litert(result.tflite, [x])[0])
    np.testing.assert_array_equal(ours, run_c(result.tflite, [x])[0])


@pytest.mark.parametrize("axis,xshape,ishape", [(0, (4, 3), (2, 3)), (1, (4, 3), (4, 5)), (-1, (2, 3, 4), (2, 3, 6)),
                                                (1, (2, 5, 3), (1, 4, 2)), (0, (3, 2, 2), (5, 2, 1))])
def test_gather_elements_runtime_indices(axis, xshape, ishape):
    """take-along-axis with indices computed at run time: GATHER over the (swapped-to-last) axis with batch_dims."""
    x = np.random.default_rng(26).standard_normal(xshape).astype(np.float32)
    idx = np.random.default_rng(27).integers(0, xshape[axis], ishape).astype(np.int64)
    proto = make([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)], {"x": x, "i": idx},
                 {"y": np.float32})
    model = check(proto, {"x": x, "i": idx})
    assert "GATHER" in op_names(model)
    assert any("negative indices are not wrapped" in n for n in model.import_warnings)
    from tests.oprunner import run_ours as run_bytes

    tfl = write_model(model)
    np.testing.assert_array_equal(run_c(tfl, [x, idx])[0], run_bytes(tfl, [x, idx])[0])


def test_gather_elements_of_argmax_positions():
    """The usual source of run-time indices: positions an ArgMax (or TopK) found, picking values elsewhere."""
    scores = np.random.default_rng(28).standard_normal((2, 6, 4)).astype(np.float32)
    nodes = [helper.make_node("ArgMax", ["s"], ["best"], axis=1, keepdims=1),
             helper.make_node("GatherElements", ["s", "best"], ["y"], axis=1)]
    check(make(nodes, {"s": scores}, {"y": np.float32}), {"s": scores})


@pytest.mark.parametrize("fill", ["mixed", "all_true", "all_false"])
def test_where_constant_condition_is_select_v2_or_one_branch(fill):
    x, y = floats((2, 3, 4), 29), floats((3, 1), 30)
    cond = {"mixed": ints((3, 4), 31) > 0, "all_true": np.ones((3, 4), bool), "all_false": np.zeros((1, 4), bool)}[fill]
    proto = make([helper.make_node("Where", ["c", "x", "y"], ["z"])], {"x": x, "y": y}, {"z": np.float32}, {"c": cond})
    model = check(proto, {"x": x, "y": y})
    assert op_names(model) == {"mixed": ["SELECT_V2"], "all_true": ["RESHAPE"], "all_false": ["BROADCAST_TO"]}[fill]


def test_bool_outputs_are_measured_by_the_accuracy_guard():
    """A mask output (Relu(x) > 0.5): int8 flips the elements that sit within a quantization step of the
    threshold; the guard measures the mask as 0/1 values (trues over flips) with its agreement, and a mask below
    the threshold stops the conversion like any other output (allow_lossy keeps it and says so)."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Greater", ["r", "t"], ["g"])]
    proto = make(nodes, {"x": np.zeros((1, 16), np.float32)}, {"g": np.bool_, "r": np.float32},
                 {"t": np.array(0.5, np.float32)})
    calib = np.random.default_rng(1).standard_normal((20, 1, 16)).astype(np.float32)
    result = convert(proto, quantize="int8", calibration=calib, io="float32", precision="int8", allow_lossy=True)
    mask = next(o for o in result.report["guard"]["outputs"] if o["name"] == "g")
    assert 0.9 < mask["agreement"] < 1.0 and mask["snr_db"] < 30
    from converters.report import format_guard

    assert any(line.strip().startswith("g: SNR") and "of elements agree" in line
               for line in format_guard(result.report["guard"]))
    with pytest.raises(ConversionError, match="output 'g'"):
        convert(proto, quantize="int8", calibration=calib, io="float32", precision="int8")
    lenient = convert(proto, quantize="int8", calibration=calib, io="float32", precision="int8", min_snr=5)
    assert next(o for o in lenient.report["guard"]["outputs"] if o["name"] == "g")["snr_db"] >= 5


@pytest.mark.parametrize("fill", [-1e9, -np.inf])
def test_int8_attention_mask_fill_saturates_instead_of_crushing_the_scores(fill):
    """masked_fill before SOFTMAX (PyTorch's attention-mask export): Where(mask, fill, scores). Under one int8
    scale covering -1e9 every score would be 0; the fill instead saturates to the scores' range (said in the
    notes) and the attention weights keep their accuracy at default settings."""
    r = np.random.default_rng(32)
    mask = np.zeros((1, 6, 6), bool)
    mask[..., 4:] = True  # the last two keys are padding
    nodes = [helper.make_node("MatMul", ["x", "w"], ["scores"]),
             helper.make_node("Where", ["mask", "fill", "scores"], ["masked"]),
             helper.make_node("Softmax", ["masked"], ["p"], axis=-1)]
    proto = make(nodes, {"x": np.zeros((1, 6, 8), np.float32)}, {"p": np.float32},
                 {"w": (r.standard_normal((8, 6)) * 0.5).astype(np.float32), "mask": mask,
                  "fill": np.array(fill, np.float32)})
    calib = r.standard_normal((40, 1, 6, 8)).astype(np.float32)
    result = convert(proto, quantize="int8", calibration=calib, io="float32")
    notes = result.report["quantization"]["report"]["notes"]
    assert any("(SELECT): the constant branch" in n and "saturates" in n for n in notes), notes
    out = next(o for o in result.report["guard"]["outputs"] if o["name"] == "p")
    assert out["snr_db"] >= 30 and not result.report["guard"]["widened"], result.report["guard"]
    x = calib[0]
    from tests.oprunner import run_ours as run_bytes

    got = run_bytes(result.tflite, [x])[0]
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(got - want).max() < 0.02 and got[..., 4:].max() < 0.01


@pytest.mark.parametrize("op,attrs", [("IsNaN", {}), ("IsInf", {}), ("IsInf", {"detect_negative": 0}),
                                      ("IsInf", {"detect_positive": 0}),
                                      ("IsInf", {"detect_positive": 0, "detect_negative": 0})])
def test_isnan_isinf(op, attrs):
    x = np.array([[0.0, np.nan, np.inf, -np.inf, 1e38, -3.5]], np.float32)
    model = check(make([helper.make_node(op, ["x"], ["y"], **attrs)], {"x": x}, {"y": np.bool_}, opset=20), {"x": x})
    assert set(op_names(model)) <= {"NOT_EQUAL", "EQUAL", "ABS", "LESS"}


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_int8_runtime_padding_mask_with_inf_fill_matches_tflm():
    """The mask as a run-time int64 input (Equal(mask, 0) -> Where(pad, -inf, scores) -> Softmax): EQUAL on INT64
    stays integer in the int8 model, the -inf fill saturates, the per-layer error skips the -inf elements (no
    NaN, no warning), and the model is bit-exact with TFLM and the C runtime."""
    r = np.random.default_rng(33)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["scores"]),
             helper.make_node("Equal", ["mask", "zero"], ["pad"]),
             helper.make_node("Where", ["pad", "fill", "scores"], ["masked"]),
             helper.make_node("Softmax", ["masked"], ["p"], axis=-1)]
    proto = make(nodes, {"x": np.zeros((1, 6, 8), np.float32), "mask": np.zeros((1, 1, 6), np.int64)},
                 {"p": np.float32}, {"w": (r.standard_normal((8, 6)) * 0.5).astype(np.float32),
                                     "zero": np.array(0, np.int64), "fill": np.array(-np.inf, np.float32)})
    samples = []
    for k in range(30):
        m = np.ones((1, 1, 6), np.int64)
        m[..., 5 - k % 3:] = 0
        samples.append([r.standard_normal((1, 6, 8)).astype(np.float32), m])
    result = convert(proto, quantize="int8", calibration=samples, io="int8")
    model = read_model(result.tflite)
    assert [model.op_name(op) for op in model.subgraphs[0].operators] == ["FULLY_CONNECTED", "EQUAL", "SELECT_V2",
                                                                          "SOFTMAX"]
    assert all(math.isfinite(layer["snr_db"]) or layer["snr_db"] == math.inf
               for layer in result.report["layers"] if "snr_db" in layer)
    x = r.integers(-128, 128, (1, 6, 8)).astype(np.int8)
    mask = np.array([[[1, 1, 1, 1, 0, 0]]], np.int64)
    from tests.oprunner import run_ours as run_bytes

    ours = run_bytes(result.tflite, [x, mask])[0]
    np.testing.assert_array_equal(ours, run_tflm(result.tflite, [x, mask])[0])
    np.testing.assert_array_equal(ours, run_c(result.tflite, [x, mask])[0])
