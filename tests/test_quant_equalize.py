"""Cross-layer equalization on graphs as the ONNX importer writes them (converters/passes/equalize.py): an NCHW
conv's output reaches the next conv through the layout's TRANSPOSEs (and a PAD), which only move values, so the pair
is still equalized -- exactly in float -- while a RESHAPE that folds the channels into another axis stops it."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")

C = 8


def _pair(between: str = "prelu"):
    """[1, 3, 12, 12] -> 3x3 conv (C channels, gains 1 .. 300) -> PRelu (or a Reshape folding channels) -> 3x3 conv
    (padded, stride 2) -> [1, 4, 6, 6], NCHW as PyTorch exports it."""
    from onnx import TensorProto, helper, numpy_helper

    r = np.random.default_rng(7)
    gains = np.geomspace(1.0, 300.0, C)
    w1 = (r.standard_normal((C, 3, 3, 3)) * 0.3 * gains[:, None, None, None]).astype(np.float32)
    b1 = (r.standard_normal(C) * 0.1 * gains).astype(np.float32)
    w2 = (r.standard_normal((4, C, 3, 3)) * 0.2).astype(np.float32)
    slope = r.uniform(0.05, 0.3, (C, 1, 1)).astype(np.float32)
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(w2, "w2"),
             numpy_helper.from_array(slope, "slope"),
             numpy_helper.from_array(np.array([1, C, 12, 12], np.int64), "shape")]
    pads = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["y1"], **pads)]
    if between == "prelu":
        nodes.append(helper.make_node("PRelu", ["y1", "slope"], ["a"]))
    else:  # channels folded away and back: the channel order is not followed through a reshape
        nodes += [helper.make_node("Reshape", ["y1", "flat"], ["r1"]), helper.make_node("Reshape", ["r1", "shape"],
                                                                                          ["a"])]
        inits.append(numpy_helper.from_array(np.array([1, C * 12, 12], np.int64), "flat"))
    nodes.append(helper.make_node("Conv", ["a", "w2"], ["y"], strides=[2, 2], **pads))  # stride 2: an explicit PAD
    graph = helper.make_graph(nodes, "pair", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_pair_is_equalized_through_the_layout_transposes_and_pad_exactly():
    from converters.import_onnx import import_onnx
    from converters.passes.equalize import equalize
    from converters.quantize.calibrate import Runner

    model = import_onnx(_pair("prelu"))
    names = [model.op_name(op) for op in model.subgraphs[0].operators]
    assert "TRANSPOSE" in names and "PAD" in names  # the importer's layout: what the pair reaches its reader through
    eq, pairs = equalize(model)
    (pair,) = pairs
    assert pair["first_op"] == pair["second_op"] == "CONV_2D" and pair["channels"] == C
    assert pair["through"].startswith("PRELU") and "TRANSPOSE" in pair["through"] and "PAD" in pair["through"]
    assert pair["spread_before"] > 100 and pair["spread_after"] < pair["spread_before"] / 10
    x = np.random.default_rng(1).uniform(-1, 1, (1, 3, 12, 12)).astype(np.float32)
    out = model.subgraphs[0].outputs[0]
    before, after = Runner(model)([x])[out], Runner(eq)([x])[out]
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5 * np.abs(before).max())


def test_no_pair_through_a_reshape_that_folds_the_channels():
    from converters.import_onnx import import_onnx
    from converters.passes.equalize import equalize

    model = import_onnx(_pair("reshape"))
    assert "RESHAPE" in [model.op_name(op) for op in model.subgraphs[0].operators]
    assert equalize(model)[1] == []


# ------------------------------------------------------------------ activation-to-weight migration (SmoothQuant)
D, T = 16, 12


def _norm_then_fc():
    """[1, T, D] -> LayerNormalization whose gain has two outlier channels (x40, as trained transformers' norms
    have) -> two MatMul + Add readers (query / key-like) -> Add of both: [1, T, 8]."""
    from onnx import TensorProto, helper, numpy_helper

    r = np.random.default_rng(3)
    gamma = r.uniform(0.7, 1.3, D)
    gamma[[2, 9]] *= 40.0
    inits = [numpy_helper.from_array(gamma.astype(np.float32), "gamma"),
             numpy_helper.from_array(r.normal(0, 0.1, D).astype(np.float32), "beta")]
    nodes = [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["n"], axis=-1)]
    for k in range(2):
        inits += [numpy_helper.from_array((r.standard_normal((D, 8)) / np.sqrt(D)).astype(np.float32), f"w{k}"),
                  numpy_helper.from_array(r.normal(0, 0.1, 8).astype(np.float32), f"b{k}")]
        nodes += [helper.make_node("MatMul", ["n", f"w{k}"], [f"m{k}"]),
                  helper.make_node("Add", [f"m{k}", f"b{k}"], [f"y{k}"])]
    nodes.append(helper.make_node("Add", ["y0", "y1"], ["y"]))
    graph = helper.make_graph(nodes, "norm_fc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, T, D])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, T, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _samples(n: int, seed: int) -> list:
    return [[np.random.default_rng(seed + k).normal(0, 1, (1, T, D)).astype(np.float32)] for k in range(n)]


def test_layernorm_outliers_migrate_into_the_fc_readers_exactly():
    """The LayerNorm's gamma / beta -> both FC readers: the map's channel maxima come closer (to the square root of
    their spread: alpha 0.5), only constants change, the float function is unchanged; a calibration source that is
    a one-shot iterator is handed on as the samples it gave."""
    from converters.import_onnx import import_onnx
    from converters.quantize.calibrate import Runner
    from converters.quantize.migrate import prepare

    model = import_onnx(_norm_then_fc())
    report = {"notes": []}
    samples = _samples(10, 0)
    out, handed = prepare(model, iter(samples), None, 0, report)
    assert len(out.subgraphs[0].operators) == len(model.subgraphs[0].operators)  # constants only: op indices kept
    (done,) = report["migrated"]
    assert done["readers"] == 2 and done["channels"] == D and done["ops"] == ["MUL", "ADD"]
    assert done["spread_before"] > 20 and done["spread_after"] < done["spread_before"] / 4
    assert any("SmoothQuant" in n for n in report["notes"])
    assert len(handed) == 10 and all(np.array_equal(a[0], b[0]) for a, b in zip(handed, samples))
    x = _samples(1, 50)[0]
    ref = Runner(model)(x)[model.subgraphs[0].outputs[0]]
    got = Runner(out)(x)[out.subgraphs[0].outputs[0]]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_migration_makes_the_int8_model_better():
    """int8 with the migration (default) against without (equalize=False turns both rewrites off), measured on
    held-back samples by the guard: the LayerNorm output's small channels, crushed under the outliers' scale, gain
    (6.5 -> 20.4 dB worst channel), and the output with them; what is left is the LayerNorm's own int8 variance path
    (~31 dB), which no migration moves."""
    from converters.import_onnx import import_onnx
    from converters.quantize import quantize

    model = import_onnx(_norm_then_fc())
    on = quantize(model, _samples(20, 0), holdout=4)
    off = quantize(model, _samples(20, 0), holdout=4, equalize=False)
    assert on.report["migrated"] and "migrated" not in off.report

    def worst_channel(result, tensor):
        (row,) = [r for r in result.report["layers"] if r["tensor"] == tensor]
        return row["worst_channel_snr_db"]

    assert worst_channel(on, "n") > worst_channel(off, "n") + 10
    snr_on = on.report["guard"]["outputs"][0]["worst_snr_db"]
    snr_off = off.report["guard"]["outputs"][0]["worst_snr_db"]
    assert snr_on > snr_off + 2, (snr_on, snr_off)


# ------------------------------------------------------------------ channel shift (Outlier Suppression+)
def _offset_norm_then_head(readers: int = 1, head_bias: bool = True):
    """[1, T, D] -> LayerNormalization whose beta sets large per-channel offsets (+-4) over a small gain (0.1 ..
    0.3: each channel varies little around its offset) -> ``readers`` MatMul (+ Add bias) heads whose bias cancels
    W times the offsets (a head reading the features' variation, as a CTC head over near-constant features does)
    -> Add of the heads: [1, T, 8]. Through convert's passes (``optimize``) each bias Add folds into its
    FULLY_CONNECTED, as convert gives the quantizer."""
    from onnx import TensorProto, helper, numpy_helper

    r = np.random.default_rng(5)
    gamma = r.uniform(0.1, 0.3, D)
    beta = r.uniform(-4.0, 4.0, D)
    inits = [numpy_helper.from_array(gamma.astype(np.float32), "gamma"),
             numpy_helper.from_array(beta.astype(np.float32), "beta")]
    nodes = [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["n"], axis=-1)]
    heads = []
    for k in range(readers):
        w = r.standard_normal((D, 8)) / np.sqrt(D) / gamma[:, None]
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"w{k}"))
        nodes.append(helper.make_node("MatMul", ["n", f"w{k}"], [f"m{k}"]))
        heads.append(f"m{k}")
        if head_bias:
            inits.append(numpy_helper.from_array((-(beta @ w)).astype(np.float32), f"b{k}"))
            nodes.append(helper.make_node("Add", [f"m{k}", f"b{k}"], [f"y{k}"]))
            heads[-1] = f"y{k}"
    nodes.append(helper.make_node("Add", heads, ["y"]) if readers == 2 else helper.make_node("Identity", heads, ["y"]))
    graph = helper.make_graph(nodes, "offset_norm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, T, D])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, T, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("readers", [1, 2])
def test_channel_offsets_shift_into_the_readers_biases_exactly(readers):
    """The LayerNorm's beta loses each channel's centre, every reader's bias gains W times it: the map's range
    narrows to its channels' spreads (+-4.3 -> under +-1 after the scaling too), the float function is unchanged,
    no op added."""
    from converters.import_onnx import import_onnx
    from converters.passes import optimize
    from converters.quantize.calibrate import Runner
    from converters.quantize.migrate import prepare

    model = optimize(import_onnx(_offset_norm_then_head(readers)))
    report = {"notes": []}
    out, _ = prepare(model, _samples(10, 0), None, 0, report)
    assert len(out.subgraphs[0].operators) == len(model.subgraphs[0].operators)
    (done,) = report["migrated"]
    assert done["shifted"] and done["readers"] == readers
    before, after = done["range_before"], done["range_after"]
    assert after[1] - after[0] < (before[1] - before[0]) / 4, (before, after)
    assert any("centred first" in n for n in report["notes"])
    for seed in (50, 51):
        x = _samples(1, seed)[0]
        ref = Runner(model)(x)[model.subgraphs[0].outputs[0]]
        got = Runner(out)(x)[out.subgraphs[0].outputs[0]]
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_a_reader_without_a_bias_keeps_the_offsets():
    """A reader with no bias of its own cannot take W z: the map is only scaled (or left), never shifted."""
    from converters.import_onnx import import_onnx
    from converters.passes import optimize
    from converters.quantize.migrate import prepare

    model = optimize(import_onnx(_offset_norm_then_head(1, head_bias=False)))
    report = {"notes": []}
    prepare(model, _samples(10, 0), None, 0, report)
    assert not any(d["shifted"] for d in report["migrated"])


def test_the_shift_makes_the_int8_head_keep_the_variation():
    """int8 of the same model with the scaling alone against the shift first (each rewrite exact, then quantized
    without further rewrites), measured at the output on held-back samples: the offsets no longer set the
    LayerNorm output's int8 scale, so the head reads its channels' variation (measured: 25.2 -> 31.9 dB; what is
    left is the LayerNorm's own int8 path)."""
    from converters.import_onnx import import_onnx
    from converters.passes import optimize
    from converters.quantize import quantize
    from converters.quantize.migrate import migrate

    model = optimize(import_onnx(_offset_norm_then_head(1)))

    def output_snr(shift: bool) -> float:
        rewritten, done, _ = migrate(model, _samples(10, 0), shift=shift)
        assert any(d["shifted"] for d in done) == shift
        q = quantize(rewritten, _samples(20, 0), holdout=4, equalize=False)
        return q.report["guard"]["outputs"][0]["worst_snr_db"]

    scaled, shifted = output_snr(False), output_snr(True)
    assert shifted > scaled + 5, (scaled, shifted)
