"""Issue 24 (speed): on a float-first target (raspberry-pi-4: LiteRT with XNNPACK) the op table's speed facts
(a row's ``speed``, measured by benchmarks/widen_cost.py) widen the ops whose int8 kernel is slower than float32 where
that saves more than the QUANTIZE / DEQUANTIZE it adds, and estimate the written model's time against its float
source; an int8 model estimated slower is not written unless int8 was asked for. The tests hold the decisions to the
facts (no timing here: benchmarks/speed24_models.py compares the estimate with LiteRT)."""

from __future__ import annotations

import numpy as np
import pytest

from converters.quantize import CLEARLY_FASTER, speed
from edge_sdk.runtime import op_table
from tests import speed24_models as M

SIZE = 32


def test_every_speed_fact_names_a_runtime_and_type_and_a_positive_cost():
    measured = 0
    for name, r in op_table.ROWS.items():
        keys = [(rt, dt) for rt, dt, _ in r.speed]
        assert len(keys) == len(set(keys)), name
        for rt, dt, c in r.speed:
            assert rt in op_table.SPEED_RUNTIMES and dt in op_table.SPEED_DTYPES and c > 0, name
        measured += bool(r.speed)
    assert measured >= 6
    # what the widening reads of them: PReLU and depthwise slower in int8 under LiteRT, conv faster
    assert speed.ratio("PRELU", "litert") > 10 and speed.ratio("DEPTHWISE_CONV_2D", "litert") > 1
    assert speed.ratio("CONV_2D", "litert") < 1 and speed.ratio("NO_SUCH_OP", "litert") == 1.0


def _float_model(onnx_model):
    from converters import convert
    from edge_sdk.model import read_model

    return read_model(convert(onnx_model, quantize="none").tflite)


@pytest.mark.parametrize("stride, widened", [(1, True), (2, False)])
def test_a_lone_depthwise_goes_float_only_when_it_saves_more_than_its_conversions(stride, widened):
    """conv -> depthwise -> conv: float32 depthwise saves units x (int8 - float32 cost) and adds a DEQUANTIZE of its
    input and a QUANTIZE of its output; at stride 2 its input is 4x its output and the conversions cost more."""
    from converters.quantize.widen import widening_rule

    net = M._Net(7)
    x = net.conv("x", 3, 16, k=1)
    y = net.conv(net.conv(x, 16, 16, stride=stride, group=16), 16, 8, k=1)
    half = SIZE // stride
    model = _float_model(M._build(net.nodes, net.inits, SIZE, {y: [1, 8, half, half]}, "lone_dw"))
    sg = model.subgraphs[0]
    names = [model.op_name(op) for op in sg.operators]
    dw = names.index("DEPTHWISE_CONV_2D")
    rule, _ = widening_rule("raspberry-pi-4")
    kinds = {i: "float32" for i, n in enumerate(names) if n == "TRANSPOSE"}  # as the I/O transposes end up
    taken, record = speed.faster_in_float(model, kinds, "int8", "litert", rule, str)
    elements = lambda t: int(np.prod(sg.tensors[t].shape))  # noqa: E731
    op = sg.operators[dw]
    saving = speed.op_units(model, dw) * (speed.cost("DEPTHWISE_CONV_2D", "litert", "int8")
                                          - speed.cost("DEPTHWISE_CONV_2D", "litert", "float32"))
    conversions = (elements(op.inputs[0]) * speed.cost("DEQUANTIZE", "litert", "int8")
                   + elements(op.outputs[0]) * speed.cost("QUANTIZE", "litert", "int8"))
    assert (saving > conversions) is widened
    assert [i for i, _ in taken] == ([dw] if widened else [])
    assert len(record["widened" if widened else "left_int8"]) == 1
    if not widened:
        assert record["left_int8"][0]["total"] >= 0 and record["time_after"] == 1.0


@pytest.fixture(scope="module")
def blaze():
    from converters import convert

    return convert(M.blazeface_like(SIZE), calibration=M.samples(SIZE), target="raspberry-pi-4", min_snr=25.0,
                   keep_int8=True)


def _q(result) -> dict:
    return result.report["quantization"]["report"]


def _conversions(tflite: bytes) -> int:
    from edge_sdk.model import read_model

    m = read_model(tflite)
    return sum(m.op_name(op) in ("QUANTIZE", "DEQUANTIZE") for op in m.subgraphs[0].operators)


def test_every_prelu_goes_float32_for_speed_with_its_reason_and_the_estimate(blaze):
    from edge_sdk.model import read_model

    q = _q(blaze)
    m = read_model(blaze.tflite)
    sg = m.subgraphs[0]
    prelus = [op for op in sg.operators if m.op_name(op) == "PRELU"]
    assert len(prelus) == 3 and all(sg.tensors[op.inputs[0]].type == "FLOAT32" for op in prelus)
    record = q["speed"]["widening"]
    for_speed = record["float32"]
    assert sum(w["op"] == "PRELU" for w in for_speed) == 3
    assert all("op-table speed fact" in w["reason"] and "saves an estimated" in w["reason"] for w in for_speed)
    # the guard's record is what accuracy cost: the ops float32 for speed are not in it
    assert not {w["op_index"] for w in for_speed} & {w["op_index"] for w in q["guard"]["widened"]}
    assert all(g["total"] < 0 for g in record["widened"]) and all(g["total"] >= 0 for g in record["left_int8"])
    # the plan's conversions are the ones the quantizer wrote (integer I/O: none without a float op)
    assert _conversions(blaze.tflite) == sum(g["conversions_added"] for g in record["widened"])
    assert any(n.startswith("speed on raspberry-pi-4 (litert):") for n in q["notes"])


def test_an_int8_model_estimated_slower_is_written_when_asked_for_and_said(blaze):
    q = _q(blaze)
    est = q["speed"]["estimate"]
    assert est["runtime"] == "litert" and "estimate" in est["estimate"] and "float_source" not in q
    slower = [n for n in q["notes"] if "estimated SLOWER" in n]
    assert bool(slower) == est["slower"]
    note = next(n for n in q["notes"] if n.startswith("estimated time on raspberry-pi-4"))
    assert f"{est['ratio']:.2f}x its float source's" in note


@pytest.mark.parametrize("width", [16, 32])
def test_the_depthwise_heavy_net_follows_its_estimate(width):
    """Not asked for int8 (the default): written as the float source exactly when the int8 model is not estimated
    clearly faster (over CLEARLY_FASTER of its time), the int8 attempt kept in the report labelled not written, its
    I/O tensors named."""
    from converters import convert
    from edge_sdk.model import read_model

    res = convert(M.depthwise_heavy(SIZE, width), calibration=M.samples(SIZE), target="raspberry-pi-4",
                  min_snr=25.0)
    q = _q(res)
    assert q["speed"]["widening"]["widened"]  # the depthwise chain, one group
    est = q["speed"]["estimate"]
    fs = q.get("float_source")
    assert (fs is not None and fs["why"] == "speed") == (est["ratio"] > CLEARLY_FASTER)
    types = {t.type for t in read_model(res.tflite).subgraphs[0].tensors}
    if fs is None:
        assert "INT8" in types
        return
    assert not types & {"INT8", "INT16"} and 0 < fs["bytes"] <= len(res.tflite)  # convert adds its manifest
    assert fs["candidate"]["written"] is False and "not written" in fs["candidate"]["label"]
    assert fs["candidate"]["tensors"] and q["tensors"] == [] and fs["changed"]["io"]["tensors"] == ["x", "y"]
    assert any(n.startswith("int8 is not estimated clearly faster than its float source: written as float32")
               for n in q["notes"])


def test_a_plain_conv_net_stays_int8_and_is_estimated_faster():
    from converters import convert

    res = convert(M.plain_conv(SIZE, 16, 2), calibration=M.samples(SIZE), target="raspberry-pi-4", min_snr=25.0)
    q = _q(res)
    assert q["speed"]["widening"]["candidates"] == 0 and "float_source" not in q
    assert q["speed"]["estimate"]["ratio"] < 1 and not q["speed"]["estimate"]["slower"]
    assert _conversions(res.tflite) == 0


def test_no_speed_estimate_on_an_integer_only_target():
    from converters.quantize import quantize

    model = _float_model(M.depthwise_heavy(16, 8, 2))
    xs = [np.transpose(x, (0, 2, 3, 1)) if model.subgraphs[0].tensors[model.subgraphs[0].inputs[0]].shape[-1] == 3
          else x for x in M.samples(16, 6)]
    q = quantize(model, xs, precision="auto", min_snr=25.0, target="stm32f746-disco").report
    assert "speed" not in q and not any("DEPTHWISE" in w["op"] for w in q["guard"]["widened"])


def test_edge_convert_writes_the_float_model_by_default_and_int8_when_asked(tmp_path, capsys):
    """`edge convert --target raspberry-pi-4` on a net whose int8 model is estimated slower: the float source by
    default (the summary's quantize line says why); with --quantize int8 given the int8 model, a note saying it is
    estimated slower; --json carries the estimate either way."""
    import json

    from edge_sdk.cli import main

    src, calib = tmp_path / "dw.onnx", tmp_path / "calib.npy"
    src.write_bytes(M.depthwise_heavy(SIZE, 32).SerializeToString())
    np.save(calib, M.samples(SIZE)[:, 0])
    base = ["convert", str(src), "--calib", str(calib), "--target", "raspberry-pi-4", "--min-snr", "25"]
    reports = {}
    for extra in ([], ["--quantize", "int8"]):
        assert main(base + ["-o", str(tmp_path / f"o{len(extra)}.tflite"), "--json"] + extra) == 0
        reports[bool(extra)] = json.loads(capsys.readouterr().out)
    default, asked = (reports[k]["quantization"]["report"] for k in (False, True))
    assert default["speed"]["estimate"]["slower"]  # the premise: this net at this size
    assert default["float_source"]["why"] == "speed" and "float_source" not in asked
    assert any("estimated SLOWER than its float source" in n for n in asked["notes"])
    from converters.report import format_conversion  # the summary `edge convert` prints without --json

    summary = format_conversion(reports[False])
    assert "written as float32: int8 is not estimated clearly faster than the float source" in summary


def test_a_float16_weight_source_written_as_float_keeps_its_float16_weights():
    from converters import convert
    from edge_sdk.model import read_model

    onnx_model = M.depthwise_heavy(SIZE, 32)
    fp16_source = convert(onnx_model, quantize="fp16", min_snr=0.0).tflite
    res = convert(fp16_source, calibration=M.samples(SIZE), target="raspberry-pi-4", min_snr=25.0)
    fs = _q(res)["float_source"]
    assert fs["why"] == "speed" and fs["weights"] == "float16"
    m = read_model(res.tflite)
    assert "FLOAT16" in {t.type for t in m.subgraphs[0].tensors}
    as_float32 = convert(onnx_model, calibration=M.samples(SIZE), target="raspberry-pi-4", min_snr=25.0)
    assert fs["bytes"] < _q(as_float32)["float_source"]["bytes"]
    assert any("float16 weights as the source stored them" in n for n in _q(res)["notes"])


def test_int16x8_asked_for_on_the_pi_is_written_and_said_to_be_slower():
    """int16x8 runs LiteRT's reference kernels (the facts: tens of times float32): never a float fallback for
    speed (the mode was asked for), no op float32 for speed (the rule is int8's), the estimate said."""
    from converters.quantize import quantize

    model = _float_model(M.plain_conv(16, 8, 1))
    shape = model.subgraphs[0].tensors[model.subgraphs[0].inputs[0]].shape
    xs = [x.reshape(shape) for x in M.samples(16, 6)]
    q = quantize(model, xs, mode="int16x8", precision="auto", min_snr=25.0, target="raspberry-pi-4").report
    est = q["speed"]["estimate"]
    assert est["slower"] and est["ratio"] > 10 and "float_source" not in q and "widening" not in q["speed"]
    assert any("written as int16x8 because int16x8 was asked for" in n for n in q["notes"])


def test_with_float_io_the_plan_counts_the_conversions_the_quantizer_writes():
    """Float I/O: the written model's QUANTIZE / DEQUANTIZE are the ones at its inputs and outputs plus the ones
    the speed plan added (nothing widened for accuracy at a 0 dB goal)."""
    from converters import convert

    res = convert(M.blazeface_like(SIZE, 16, 3, seed=4), calibration=M.samples(SIZE), target="raspberry-pi-4",
                  min_snr=0.0, keep_int8=True, io="float32")
    q = _q(res)
    assert q["guard"]["widened_count"]["ops"] == 0
    added = sum(g["conversions_added"] for g in q["speed"]["widening"]["widened"])
    assert added > 0 and _conversions(res.tflite) == added + 1 + 2  # input x; outputs boxes, scores
