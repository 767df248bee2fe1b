"""The post-training methods int8 uses to keep real models (issue 24 point 4), each on a network built here where it
visibly matters, measured against onnxruntime on samples the converter never saw:

- cross-layer equalization: a depthwise -> 1x1 pair whose channels' weights differ 1000x (through none, ReLU or a
  per-channel PReLU; not through ReLU6, which a scale does not commute with);
- bias correction: a depthwise layer whose small taps round to zero under an input of non-zero mean;
- error-chosen activation ranges: a heavy-tailed activation, where the least-error range beats min / max."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters import convert
from edge_sdk.runtime.interpreter import Interpreter

ort = pytest.importorskip("onnxruntime")

C = 8  # channels of the depthwise nets
HW = 8


def _model(nodes, x_shape, y_shape, inits):
    graph = helper.make_graph(nodes, "methods", [helper.make_tensor_value_info("x", TP.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TP.FLOAT, y_shape)],
                              [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _ort(proto, xs):
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return [sess.run(None, {"x": x})[0] for x in xs]


def _ours(tflite: bytes, xs):
    it = Interpreter(model_content=tflite)
    it.allocate_tensors()
    i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    got = []
    for x in xs:
        it.set_tensor(i, x)
        it.invoke()
        got.append(np.array(it.get_tensor(o)))
    return got


def _snr(ref, got) -> float:
    r = np.concatenate([np.ravel(a) for a in ref]).astype(np.float64)
    d = r - np.concatenate([np.ravel(a) for a in got]).astype(np.float64)
    return float(10 * np.log10((r @ r) / (d @ d)))


def _int8(proto, cal, **kw):
    """int8 with float I/O, every op int8 (nothing widened), min / max ranges unless told otherwise."""
    kw.setdefault("calib_method", "minmax")
    return convert(proto, calibration=cal, io="float32", precision="int8", allow_lossy=True, **kw)


# ---------------------------------------------------------------------------------------- cross-layer equalization
def _depthwise_pair(between: str):
    """Depthwise 3x3 (channel c's weights scaled 10^(-2 .. 1)) -> ``between`` -> 1x1 conv whose input channel c is
    scaled by the inverse: every channel counts alike in y, but one per-tensor int8 scale of the depthwise output
    crushes the small ones."""
    r = np.random.default_rng(0)
    gain = 10.0 ** np.linspace(-2, 1, C)
    w1 = r.standard_normal((C, 1, 3, 3)) * gain[:, None, None, None]
    b1 = r.standard_normal(C) * 0.1 * gain
    w2 = r.standard_normal((4, C, 1, 1)) / gain[None, :, None, None]
    inits = {"w1": w1, "b1": b1, "w2": w2, "b2": np.zeros(4)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["d"], group=C, pads=[1, 1, 1, 1])]
    if between == "relu":
        nodes.append(helper.make_node("Relu", ["d"], ["a"]))
    elif between == "prelu":
        inits["slope"] = np.linspace(0.05, 0.3, C).reshape(C, 1, 1)
        nodes.append(helper.make_node("PRelu", ["d", "slope"], ["a"]))
    elif between == "relu6":
        inits.update(lo=np.array(0.0), hi=np.array(6.0))
        nodes.append(helper.make_node("Clip", ["d", "lo", "hi"], ["a"]))
    else:
        nodes.append(helper.make_node("Identity", ["d"], ["a"]))
    nodes.append(helper.make_node("Conv", ["a", "w2", "b2"], ["y"]))
    return _model(nodes, [1, C, HW, HW], [1, 4, HW, HW], inits)


def _images(n, seed, mean=0.0, scale=1.0):
    r = np.random.default_rng(seed)
    return (mean + scale * r.standard_normal((n, 1, C, HW, HW))).astype(np.float32)


@pytest.mark.parametrize("between", ["none", "relu", "prelu"])
def test_equalization_keeps_the_small_depthwise_channels(between):
    proto = _depthwise_pair(between)
    cal, test = _images(40, 1), list(_images(10, 2))
    ref = _ort(proto, test)
    on = _int8(proto, cal, bias_correction=False)
    off = _int8(proto, cal, bias_correction=False, equalize=False)
    report = on.report["quantization"]["report"]
    (pair,) = report["equalized"]
    assert pair["first_op"] == "DEPTHWISE_CONV_2D" and pair["second_op"] == "CONV_2D" and pair["channels"] == C
    assert pair["spread_before"] > 100 and pair["spread_after"] < 4
    (note,) = [n for n in report["notes"] if n.startswith("cross-layer equalization of 1 pair(s)")]
    assert f"DEPTHWISE_CONV_2D '{pair['first']}' -> CONV_2D '{pair['second']}'" in note
    assert not off.report["quantization"]["report"]["equalized"]
    snr_on, snr_off = _snr(ref, _ours(on.tflite, test)), _snr(ref, _ours(off.tflite, test))
    assert snr_on > 30 and snr_on > snr_off + 10, (snr_on, snr_off)


def test_equalization_leaves_the_float_function_unchanged():
    from converters.passes.equalize import equalize

    proto = _depthwise_pair("prelu")
    flt = convert(proto, quantize="none").model
    eq, pairs = equalize(flt)
    assert pairs and eq is not flt
    test = list(_images(4, 3))
    from edge_sdk.model import write_model

    before, after = _ours(write_model(flt), test), _ours(write_model(eq), test)
    for a, b in zip(before, after):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4 * np.abs(a).max())
    np.testing.assert_allclose(before[0], _ort(proto, test[:1])[0], rtol=1e-4, atol=1e-4)


def test_no_equalization_through_relu6():
    """A positive scale does not commute with a clamp at 6: the pair is left alone."""
    res = _int8(_depthwise_pair("relu6"), _images(20, 1))
    assert res.report["quantization"]["report"]["equalized"] == []


# ---------------------------------------------------------------------------------------- bias correction
def _depthwise_small_taps():
    """Depthwise 3x3 with a centre tap of 1 and eight taps of 0.0035 (0.44 of the int8 step of its channel: they
    round to 0), then a 1x1 conv; the input has mean 4: int8 drops 8 * 0.0035 * 4 from every output."""
    r = np.random.default_rng(5)
    w1 = np.full((C, 1, 3, 3), 0.0035)
    w1[:, :, 1, 1] = 1.0
    w2 = r.standard_normal((4, C, 1, 1)) * 0.3 + 0.5
    return _model([helper.make_node("Conv", ["x", "w1", "b1"], ["d"], group=C, pads=[1, 1, 1, 1]),
                   helper.make_node("Conv", ["d", "w2", "b2"], ["y"])],
                  [1, C, HW, HW], [1, 4, HW, HW], {"w1": w1, "b1": np.zeros(C), "w2": w2, "b2": np.zeros(4)})


def test_bias_correction_removes_the_shift_of_rounded_weights():
    proto = _depthwise_small_taps()
    cal, test = _images(40, 1, mean=4.0, scale=0.5), list(_images(10, 2, mean=4.0, scale=0.5))
    ref = _ort(proto, test)
    on = _int8(proto, cal, equalize=False)
    off = _int8(proto, cal, equalize=False, bias_correction=False)
    corrected = on.report["quantization"]["report"]["bias_corrected"]
    assert [c["op"] for c in corrected][:1] == ["DEPTHWISE_CONV_2D"] and corrected[0]["max_shift_quanta"] > 1
    assert any(n.startswith("bias correction:") for n in on.report["quantization"]["report"]["notes"])
    got_on, got_off = _ours(on.tflite, test), _ours(off.tflite, test)
    snr_on, snr_off = _snr(ref, got_on), _snr(ref, got_off)
    assert snr_on > snr_off + 6, (snr_on, snr_off)
    # the mean error itself is what went: without correction every output sits low by about 0.1 * sum(w2)
    mean_off = np.mean([(a - b).mean() for a, b in zip(ref, got_off)])
    mean_on = np.mean([(a - b).mean() for a, b in zip(ref, got_on)])
    assert abs(mean_on) < abs(mean_off) / 4, (mean_on, mean_off)


# ---------------------------------------------------------------------------------------- error-chosen ranges
def _mlp(between: str):
    """64 -> 32 -> ``between`` -> 8; the input heavy-tailed (Student's t, 2 degrees of freedom)."""
    r = np.random.default_rng(8)
    return _model([helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node(between, ["h"], ["a"]),
                   helper.make_node("MatMul", ["a", "w2"], ["y"])], [1, 64], [1, 8],
                  {"w1": r.standard_normal((64, 32)) * 0.3, "w2": r.standard_normal((32, 8)) * 0.2})


def _heavy_tailed(n, seed):
    return np.random.default_rng(seed).standard_t(2.0, size=(n, 1, 64)).astype(np.float32)


def _choice(report) -> tuple[str, dict]:
    """The chosen set and every measured set's worst output SNR, as the report's note prints them."""
    note = next(n for n in report["notes"] if n.startswith("activation ranges: "))
    snrs = {}
    for part in note.split("(worst output SNR: ")[1].rstrip(")").split("; "):
        name, value, unit = part.rsplit(" ", 2)
        assert unit == "dB"
        snrs[name] = float(value)
    assert note.startswith(f"activation ranges: {report['calibration']['chosen']} (")
    return report["calibration"]["chosen"], snrs


def test_auto_ranges_clip_a_heavy_tail_where_the_outputs_gain():
    """Through TANH the tail's extremes cost nothing once clipped, and the clipped range resolves the bulk: the
    measured error picks a percentile set, several dB above min / max on new samples."""
    proto = _mlp("Tanh")
    cal, test = _heavy_tailed(200, 1), list(_heavy_tailed(40, 2))
    ref = _ort(proto, test)
    auto = _int8(proto, cal, calib_method="auto")
    minmax = _int8(proto, cal, calib_method="minmax")
    report = auto.report["quantization"]["report"]
    chosen, snrs = _choice(report)
    assert report["calibration"]["method"] == "auto" and chosen.startswith("percentile")
    assert set(snrs) == {"minmax", "mse", "percentile 99.99", "percentile 99.9"}
    assert snrs[chosen] == max(snrs.values()) > snrs["minmax"] + 3
    assert auto.report["manifest"]["quantization"]["method"] == "percentile"
    snr_auto, snr_minmax = _snr(ref, _ours(auto.tflite, test)), _snr(ref, _ours(minmax.tflite, test))
    assert snr_auto > snr_minmax + 3, (snr_auto, snr_minmax)
    x = next(t for t in report["tensors"] if t["name"] == "x")  # clipped well inside what calibration saw
    assert x["range"][1] - x["range"][0] < 0.8 * (x["observed"][1] - x["observed"][0])


def test_auto_keeps_min_max_unless_a_clipped_set_clearly_helps():
    """Normal data through ReLU: nothing to clip; the choice follows the printed measurement: min / max unless
    another set is more than ``AUTO_MARGIN_DB`` better, then the best one."""
    from converters.quantize import AUTO_MARGIN_DB

    proto = _mlp("Relu")
    data = np.random.default_rng(4).standard_normal((60, 1, 64)).astype(np.float32)
    res = _int8(proto, data, calib_method="auto")
    report = res.report["quantization"]["report"]
    chosen, snrs = _choice(report)
    best = max(snrs.values())
    if best > snrs["minmax"] + AUTO_MARGIN_DB + 0.05:  # the note rounds to 0.1 dB
        assert snrs[chosen] == best
    elif best < snrs["minmax"] + AUTO_MARGIN_DB - 0.05:
        assert chosen == "minmax"
    assert res.report["manifest"]["quantization"]["method"] == chosen.split()[0]  # the ranges the model holds


@pytest.mark.filterwarnings("error")
def test_every_method_and_the_widening_search_raise_no_numpy_warning():
    """Equalization, bias correction, the range sets of method "auto" and the widening search on a net with a dead
    channel (all-zero weights: zero ranges, zero scales' neighbours) and a log of zero: every warning is an error."""
    r = np.random.default_rng(2)
    w1 = r.standard_normal((C, 1, 3, 3)) * (10.0 ** np.linspace(-2, 1, C))[:, None, None, None]
    w1[3] = 0.0  # a dead channel
    proto = _model([helper.make_node("Conv", ["x", "w1", "b1"], ["d"], group=C, pads=[1, 1, 1, 1]),
                    helper.make_node("Relu", ["d"], ["a"]),
                    helper.make_node("Conv", ["a", "w2", "b2"], ["c"]),
                    helper.make_node("Mul", ["c", "c"], ["sq"]),
                    helper.make_node("Log", ["sq"], ["y"])],
                   [1, C, HW, HW], [1, 4, HW, HW],
                   {"w1": w1, "b1": np.zeros(C), "w2": r.standard_normal((4, C, 1, 1)), "b2": np.zeros(4)})
    cal = _images(30, 1)
    cal[::3] = 0.0  # silent frames: LOG(0) = -inf in the float model
    res = convert(proto, calibration=cal, io="float32", min_snr=60, allow_lossy=True, calib_method="auto")
    report = res.report["quantization"]["report"]
    assert report["equalized"] and report["calibration"]["method"] == "auto"
    assert res.report["guard"]["steps"]


@pytest.mark.filterwarnings("error")
def test_a_float_division_by_zero_in_calibration_raises_no_warning():
    """x / (x - x0) meets 0 on the calibration data (an IEEE inf in the float model): calibration and the guard
    run it without a RuntimeWarning; the int8 DIV whose divisor's range holds 0 stays float32 (never written as
    a quantized DIV by a zero quantum)."""
    from edge_sdk.model import read_model

    proto = _model([helper.make_node("Sub", ["x", "x0"], ["den"]), helper.make_node("Div", ["x", "den"], ["q"]),
                    helper.make_node("Tanh", ["q"], ["y"])], [1, 8], [1, 8], {"x0": np.full((1, 8), 0.5)})
    cal = np.random.default_rng(0).uniform(0, 1, (30, 1, 8)).astype(np.float32)
    cal[::4, 0, 0] = 0.5  # exactly the divisor's zero
    res = convert(proto, calibration=cal, allow_lossy=True)
    ops = read_model(res.tflite)
    sg = ops.subgraphs[0]
    divs = [op for op in sg.operators if ops.op_name(op) == "DIV"]
    assert divs and all(sg.tensors[t].type == "FLOAT32" for op in divs for t in op.inputs)


def test_a_bias_shared_by_several_layers_keeps_its_value_for_the_others():
    """Two depthwise -> 1x1 pairs whose depthwise layers read one bias tensor (converters dedupe equal constants):
    equalizing and bias-correcting one layer gives it a bias of its own; the float function is unchanged."""
    from converters.passes.equalize import equalize
    from converters.quantize import quantize
    from edge_sdk.model import write_model

    r = np.random.default_rng(4)
    gain = 10.0 ** np.linspace(-2, 1, C)
    inits = {"w1": r.standard_normal((C, 1, 3, 3)) * gain[:, None, None, None], "zb": np.full(C, 0.2),
             "c1": r.standard_normal((C, C, 1, 1)) / gain[None, :, None, None], "cb": np.zeros(C),
             "w2": r.standard_normal((C, 1, 3, 3)) * gain[::-1, None, None, None],
             "c2": r.standard_normal((4, C, 1, 1)) / gain[None, ::-1, None, None], "cb2": np.zeros(4)}
    proto = _model([helper.make_node("Conv", ["x", "w1", "zb"], ["d1"], group=C, pads=[1, 1, 1, 1]),
                    helper.make_node("Conv", ["d1", "c1", "cb"], ["p1"]),
                    helper.make_node("Conv", ["p1", "w2", "zb"], ["d2"], group=C, pads=[1, 1, 1, 1]),
                    helper.make_node("Conv", ["d2", "c2", "cb2"], ["y"])], [1, C, HW, HW], [1, 4, HW, HW], inits)
    flt = convert(proto, quantize="none").model
    sg = flt.subgraphs[0]
    dws = [op for op in sg.operators if flt.op_name(op) == "DEPTHWISE_CONV_2D"]
    assert len(dws) == 2
    dws[1].inputs[2] = dws[0].inputs[2]  # one bias tensor for both (equal values), as a deduping writer leaves it
    eq, pairs = equalize(flt)
    assert len(pairs) >= 2
    test = list(_images(4, 6))
    for a, b in zip(_ours(write_model(flt), test), _ours(write_model(eq), test)):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4 * np.abs(a).max())
    res = quantize(flt, list(_images(30, 7)), io="float32", holdout=6, method="minmax")
    assert res.report["equalized"] and res.report["bias_corrected"]
    ref = _ort(proto, test)
    assert _snr(ref, _ours(write_model(res.model), test)) > 30
    assert dws[1].inputs[2] == dws[0].inputs[2] and np.allclose(flt.tensor_data(0, dws[0].inputs[2]), 0.2)
