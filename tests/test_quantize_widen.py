"""precision="auto" widens by the target profile: an op that loses SNR goes to int16x8 (int16 activations,
int8 weights, int64 bias) where the target's runtime has the op in int16, else to float32 where the profile
runs float32, else it cannot be widened (said so, and a model that stays short is not written). The int16
facts of the op table's rows (``int16`` "op": TFLM and edge-sdk's interpreter have an int16-activation
kernel; ``int16_missing``: the edge-sdk runtimes without it) are checked here against the runtimes
themselves: edge-sdk's interpreter, the C runtime and TFLM."""

from __future__ import annotations

import numpy as np
import pytest

from converters import convert
from converters.quantize import quantize, widening_rule
from edge_sdk import ConversionError
from edge_sdk.model import read_model, write_model
from edge_sdk.runtime import op_table
from edge_sdk.runtime.interpreter import Interpreter
from tests import peers
from tests.int16_probe import PROBED, single_op
from tests.test_quantize import quantize_inputs
from tests.test_quantize_guard import _calib, outlier_mlp

PROFILES = __import__("pathlib").Path(__file__).resolve().parent.parent / "device_profiles"


def _run(data: bytes, xs, backend="python"):
    it = Interpreter(model_content=data, backend=backend)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]


def _int16x8(op):
    data, shape = single_op(op)
    cal = [np.random.default_rng(k).standard_normal(shape).astype(np.float32) for k in range(6)]
    q = quantize(read_model(data), cal, mode="int16x8", io="float32", measure_error=False)
    return write_model(q.model), cal[0]


@pytest.mark.parametrize("op", PROBED + ("REDUCE_MAX",))
def test_int16_table_matches_the_runtimes(op):
    model, x = _int16x8(op)
    ours = _run(model, [x])[0]  # edge-sdk's interpreter runs every probed op in int16
    row = op_table.row(op)
    if row.int16 == "op":
        np.testing.assert_array_equal(peers._tflm(model, [x])[0], ours)  # bit-exact with TFLM
    else:  # left out because TFLM has no int16 kernel for it
        with pytest.raises(Exception):
            peers._tflm(model, [x])
    if "c" in row.int16_missing:
        with pytest.raises(Exception, match="unsupported tensor type"):
            _run(model, [x], backend="c")
    else:
        np.testing.assert_array_equal(_run(model, [x], backend="c")[0], ours)


def test_every_int16_row_is_probed():
    """Each row that says it has int16 kernels is among the probed ops (the probe above checks the fact)."""
    claimed = {name for name, row in op_table.ROWS.items() if row.int16 == "op"}
    assert claimed and claimed <= set(PROBED), sorted(claimed - set(PROBED))


def test_prelu_int16x8_reads_int8_alpha_and_litert_agrees():
    """PRELU in int16x8: int16 values, alpha int8 (TFLM's kernel reads int8 alpha; an int16 one fails its
    allocation) -- TFLM and both edge-sdk runtimes bit for bit (test_int16_table_matches_the_runtimes), LiteRT's
    reference kernels within one quantum. The int8 widening search may now pick int16 for a PReLU net's PRELUs."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    model, x = _int16x8("PRELU")
    sg = read_model(model).subgraphs[0]
    prelu = next(op for op in sg.operators if read_model(model).op_name(op) == "PRELU")
    assert [sg.tensors[t].type for t in prelu.inputs] == ["INT16", "INT8"]
    ours = _run(model, [x])[0]
    it = LiteRT(model_content=model, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    theirs = it.get_tensor(it.get_output_details()[0]["index"])
    quantum = float(sg.tensors[prelu.outputs[0]].quantization.scale[0])  # the int16 output's, dequantized after
    assert np.abs(theirs - ours).max() <= quantum * 1.001
    assert widening_rule()[0]("PRELU") == ("int16", None)


def test_rule_by_profile(tmp_path):
    rule, _ = widening_rule()
    assert rule("FULLY_CONNECTED") == ("int16", None)
    assert rule("BATCH_MATMUL") == ("int16", None)  # both runtimes run int16 BATCH_MATMUL (session 18)
    assert rule("HARD_SWISH")[0] == "float32"  # TFLM has no int16 HARD_SWISH
    host, _ = widening_rule("host-linux")
    assert host("BATCH_MATMUL") == ("float32", None) and host("CONV_2D") == ("float32", None)  # float32 first
    host, _ = widening_rule(int16_first(tmp_path, "host-linux"))
    assert host("BATCH_MATMUL") == ("int16", None)  # the Python interpreter has it
    pico, where = widening_rule("rp2040-pico")  # Cortex-M0+: no float32 compute ops
    assert pico("FULLY_CONNECTED") == ("int16", None)
    kind, why = pico("HARD_SWISH")
    assert kind is None and "rp2040-pico" in why and "no float32 HARD_SWISH" in why
    assert widening_rule(None, "int16x8")[0]("FULLY_CONNECTED")[0] == "float32"


def _profile(tmp_path, parent: str, body: str) -> str:
    path = tmp_path / "custom.toml"
    path.write_text(f'extends = "{PROFILES / parent}.toml"\ndescription = "test profile"\n{body}')
    return str(path)


def int16_first(tmp_path, parent: str = "raspberry-pi-4", body: str = "") -> str:
    """``parent`` widening to int16x8 first (as the MCUs do; the Linux boards widen to float32 first): the search's
    int16-before-float32 paths on a target that runs both."""
    return _profile(tmp_path, parent, 'widen_to = "int16x8"\n' + body)


def test_widens_to_int16_and_is_bit_exact_with_tflm():
    src = outlier_mlp()
    res = convert(src, calibration=_calib(), io="float32")
    g = res.report["guard"]
    assert g["met"] and {w["output"]: w["to"] for w in g["widened"]} == {"hidden": "int16", "y": "int16"}
    for w in g["widened"]:  # per op: constant bytes (int64 bias), activation bytes, MACs
        assert w["cost"]["bytes"] == 4 * (16 if w["output"] == "hidden" else 8) and w["cost"]["macs"] > 0
    q = read_model(res.tflite)
    sg = q.subgraphs[0]
    types = {sg.tensors[op.outputs[0]].name: sg.tensors[op.outputs[0]].type for op in sg.operators}
    assert types["first"] == "INT8" and types["hidden"] == "INT16" and types["y"] == "INT16"
    ops = [q.op_name(op) for op in sg.operators]
    assert ops.count("QUANTIZE") == 2  # the float input -> int8, the first FC's int8 -> int16; hidden stays int16
    for k in range(5):
        x = np.random.default_rng(20 + k).standard_normal((1, 16)).astype(np.float32)
        ours = _run(res.tflite, [x])[0]
        np.testing.assert_array_equal(peers._tflm(res.tflite, [x])[0], ours)
        np.testing.assert_array_equal(_run(res.tflite, [x], backend="c")[0], ours)


def test_int8_io_keeps_the_widened_output_int16():
    res = convert(outlier_mlp(), calibration=_calib())
    q = read_model(res.tflite)
    sg = q.subgraphs[0]
    assert sg.tensors[sg.outputs[0]].type == "INT16" and sg.tensors[sg.inputs[0]].type == "INT8"
    assert any("output 'y' is INT16" in n for n in res.report["quantization"]["report"]["notes"])
    x = _calib(1, seed=9)[0]
    xq = quantize_inputs(q, [x])
    np.testing.assert_array_equal(peers._tflm(res.tflite, xq)[0], _run(res.tflite, xq)[0])


def test_float_only_extra_target_widens_to_float32(tmp_path):
    target = int16_first(tmp_path, "host-linux", "[ops.int16]\n\"*\" = {}\nFULLY_CONNECTED = false\n")
    res = convert(outlier_mlp(), calibration=_calib(), io="float32", target=target)
    g = res.report["guard"]
    assert g["met"] and g["widened"] and all(w["to"] == "float32" for w in g["widened"])
    assert g["cost"]["macs_float32"] == g["cost"]["macs_not_int8"] > 0 and g["cost"]["macs_int16"] == 0
    assert "custom" in g["widening_for"]


def test_mcu_without_float_never_gets_float_ops(tmp_path):
    res = convert(outlier_mlp(), calibration=_calib(), target="rp2040-pico")
    g = res.report["guard"]
    assert g["met"] and all(w["to"] == "int16" for w in g["widened"])
    q = read_model(res.tflite)
    sg = q.subgraphs[0]
    float_ops = [q.op_name(op) for op in sg.operators
                 if any(t >= 0 and sg.tensors[t].type == "FLOAT32" for t in list(op.inputs) + list(op.outputs))]
    assert float_ops == []
    # the same board without int16 FULLY_CONNECTED: nothing to widen to, said so, nothing written
    target = _profile(tmp_path, "rp2040-pico", "[ops.int16]\nFULLY_CONNECTED = false\n")
    with pytest.raises(ConversionError) as err:
        convert(outlier_mlp(), calibration=_calib(), target=target)
    assert "cannot be widened" in str(err.value) and "nothing was written" in str(err.value)
    res = convert(outlier_mlp(), calibration=_calib(), target=target, allow_lossy=True)
    cannot = res.report["guard"]["cannot_widen"]
    assert cannot and all("no float32 FULLY_CONNECTED" in c["reason"] for c in cannot)
    assert not res.report["guard"]["widened"]


def _outlier_with_reshapes(seed=0):
    """outlier_mlp with RESHAPE [1, 16] -> [1, 4, 4] -> [1, 16] between the outlier FC and the last FC."""
    from edge_sdk.model.builder import GraphBuilder

    r = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", (1, 16))
    f = g.tensor("first", (1, 16))
    g.op("FULLY_CONNECTED", [x, g.constant("w0", (r.standard_normal((16, 16)) * 0.3).astype(np.float32)),
                             g.constant("b0", np.full(16, 0.1, np.float32))], [f], fused_activation_function="RELU")
    w1 = (r.standard_normal((16, 16)) * 0.3).astype(np.float32)
    w1[0] *= 400
    h = g.tensor("hidden", (1, 16))
    g.op("FULLY_CONNECTED", [f, g.constant("w1", w1), g.constant("b1", np.zeros(16, np.float32))], [h])
    sq = g.tensor("square", (1, 4, 4))
    g.op("RESHAPE", [h, g.constant("s1", np.array([1, 4, 4], np.int32))], [sq], new_shape=[1, 4, 4])
    flat = g.tensor("flat", (1, 16))
    g.op("RESHAPE", [sq, g.constant("s2", np.array([1, 16], np.int32))], [flat], new_shape=[1, 16])
    w2 = (r.standard_normal((8, 16)) * 0.3).astype(np.float32)
    w2[:, 0] = 0.0
    y = g.tensor("y", (1, 8))
    g.op("FULLY_CONNECTED", [flat, g.constant("w2", w2), g.constant("b2", np.zeros(8, np.float32))], [y])
    g.output(y)
    return g.build()


def test_widened_chain_keeps_int16_through_shape_ops():
    cal = list(_calib(40))
    res = quantize(_outlier_with_reshapes(), cal, io="float32", precision="auto", holdout=8)
    g = res.report["guard"]
    assert g["met"] and {w["output"]: w["to"] for w in g["widened"]} == {"hidden": "int16", "y": "int16"}
    sg = res.model.subgraphs[0]
    types = {sg.tensors[op.outputs[0]].name: sg.tensors[op.outputs[0]].type for op in sg.operators}
    assert types["square"] == types["flat"] == "INT16"  # no int8 round trip between the widened FCs
    data = write_model(res.model)
    for k in range(4):
        x = _calib(1, seed=30 + k)[0]
        ours = _run(data, [x])[0]
        np.testing.assert_array_equal(peers._tflm(data, [x])[0], ours)
        np.testing.assert_array_equal(_run(data, [x], backend="c")[0], ours)
