"""The widening search of precision="auto" (issue 24 point 4): ops ranked by the error each adds itself (one
measurement of every activation, no model run per candidate), round by round; when the rounds stall, every op at the
widest type the target takes and the smallest prefix of the ranking that meets the threshold, by bisection (when
that prefix is most of the ranking: the ops nearest the outputs bisected too, the heaviest widened ops tried back in
int8, float32 ops narrowed to int16x8 where the goal holds). On a
target that runs float32 it always ends with a model (all-float32 at worst, said with its cost); on an integer-only
MCU with the best int8 / int16x8 model, naming the ops that keep it short. The float model runs once per sample."""

from __future__ import annotations

import math

import numpy as np
import pytest

from converters import convert
from converters.quantize import quantize
from edge_sdk import ConversionError
from edge_sdk.model.builder import GraphBuilder
from tests.test_quantize_guard import _calib
from tests.test_quantize_widen import int16_first


def _fc(g, r, x, name, rows=16, scale=0.3, act="NONE", w=None):
    y = g.tensor(name, (1, rows))
    w = (r.standard_normal((rows, 16)) * scale).astype(np.float32) if w is None else w
    g.op("FULLY_CONNECTED", [x, g.constant(name + "_w", w), g.constant(name + "_b", np.zeros(rows, np.float32))],
         [y], fused_activation_function=act)
    return y


def deep_outlier_mlp(seed=0):
    """x -> FC 'first' (ReLU) -> FC 'hidden' (channel 0 400x the others: int8 crushes the 15 small ones) -> FC
    'mid' (ignores channel 0) -> FC 'late1' -> FC 'late2' -> FC 'y'. The loss enters at 'hidden'; every op after it
    has a lower SNR than it, having inherited it."""
    r = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", (1, 16))
    f = _fc(g, r, x, "first", act="RELU")
    w1 = (r.standard_normal((16, 16)) * 0.3).astype(np.float32)
    w1[0] *= 400
    h = _fc(g, r, f, "hidden", w=w1)
    w2 = (r.standard_normal((16, 16)) * 0.3).astype(np.float32)
    w2[:, 0] = 0.0
    m = _fc(g, r, h, "mid", w=w2, act="RELU")
    a = _fc(g, r, m, "late1", act="RELU")
    b = _fc(g, r, a, "late2", act="RELU")
    g.output(_fc(g, r, b, "y", rows=8))
    return g.build()


def test_the_op_that_adds_the_error_is_widened_first():
    res = quantize(deep_outlier_mlp(), list(_calib(40)), io="float32", precision="auto", holdout=8)
    g = res.report["guard"]
    assert g["met"]
    rounds = [s for s in g["steps"] if s["step"].startswith("round ")]
    assert rounds[0]["added"] == ["hidden"]  # not 'y', whose SNR is the lowest but inherited
    assert {w["output"] for w in g["widened"]} >= {"hidden", "mid"}
    assert all(s["seconds"] >= 0 for s in g["steps"]) and g["steps"][0]["step"] == "int8"


def test_a_float_target_always_ends_with_a_model_all_float_at_worst():
    """A threshold only float32 reaches: every op ends float32, the guard is met, and the report says so with the
    cost; one count everywhere."""
    res = convert(deep_outlier_mlp(), calibration=_calib(), io="float32", target="raspberry-pi-4", min_snr=150)
    g = res.report["guard"]
    assert g["met"] and g["outputs"][0]["snr_db"] >= 150  # float32 first: the rounds widen every op themselves
    assert len(g["widened"]) == 6 and all(w["to"] == "float32" for w in g["widened"])
    assert g["widened_count"] == {"ops": 6, "int16": 0, "float32": 6}
    assert g["cost"]["macs_float32"] == g["cost"]["macs_total"] == g["cost"]["macs_not_int8"]
    notes = res.report["quantization"]["report"]["notes"]
    (note,) = [n for n in notes if n.startswith("int8 does not keep this model")]
    # a float-first target: no MAC left int8, so the float source is written as it was
    assert note.startswith("int8 does not keep this model: written as float32 (") and "0.0% of the MACs" in note
    assert "6 op(s) (0 to int16x8, 6 to float32)" in note and g["written"] == "float32 source"
    assert not g["limiting"]


def test_bisection_keeps_only_the_prefix_that_is_needed(tmp_path):
    """A threshold the all-int16x8 model misses (its int8 input limits it) but float32 reaches: the rounds stall,
    the widest model (all float32) meets, and bisection over the sensitivity order keeps float32 only the ops it
    needs, the rest at int16x8."""
    res = quantize(deep_outlier_mlp(), list(_calib(60)), io="float32", precision="auto", holdout=12,
                   target=int16_first(tmp_path), min_snr=40)
    g = res.report["guard"]
    assert g["met"] and not g["all_widened"], g["steps"]
    steps = [s["step"] for s in g["steps"]]
    assert "every op at its widest" in steps and any(s.startswith("bisection") for s in steps)
    kinds = {w["output"]: w["to"] for w in g["widened"]}
    assert kinds["hidden"] == "float32" and "int16" in kinds.values()
    assert g["widened_count"] == {"ops": len(kinds), "int16": list(kinds.values()).count("int16"),
                                  "float32": list(kinds.values()).count("float32")}
    assert sum(s.startswith("bisection") for s in steps) <= math.ceil(math.log2(6))  # log2(ops) builds
    # the int16-first search (every op int16x8, then float32 by weight noise) is tried too: it costs more here
    assert "every op at int16x8 where the target takes it" in steps and g["search"]["order"] == "sensitivity"


def test_an_integer_only_mcu_gets_its_best_model_and_the_ops_that_keep_it_short():
    with pytest.raises(ConversionError) as err:
        convert(deep_outlier_mlp(), calibration=_calib(), target="rp2040-pico", min_snr=150)
    assert "nothing was written" in str(err.value) and "the ops that keep it short: FULLY_CONNECTED '" in str(err.value)
    res = convert(deep_outlier_mlp(), calibration=_calib(), target="rp2040-pico", min_snr=150, allow_lossy=True)
    g = res.report["guard"]
    assert not g["met"] and g["widened"] and all(w["to"] == "int16" for w in g["widened"])
    assert g["limiting"] and all(r["reason"] for r in g["limiting"])
    assert {r["output"] for r in g["limiting"]} <= {w["output"] for w in g["widened"]} | {"first"}
    assert g["widened_count"]["ops"] == len(g["widened"])
    notes = res.report["quantization"]["report"]["notes"]
    (note,) = [n for n in notes if n.startswith("still short of the threshold")]
    assert all(f"'{r['output']}'" in note for r in g["limiting"])


def test_the_float_model_runs_once_per_sample(monkeypatch, tmp_path):
    """Calibration runs the float model on each calibration sample, the guard on each measured sample once: the
    widening steps compare with kept float values instead of running it again."""
    import importlib

    calibrate = importlib.import_module("converters.quantize.calibrate")
    calls = {}
    real = calibrate.Runner.__call__

    def counting(self, sample):
        calls[id(self)] = calls.get(id(self), 0) + 1
        return real(self, sample)

    monkeypatch.setattr(calibrate.Runner, "__call__", counting)
    res = quantize(deep_outlier_mlp(), list(_calib(40)), io="float32", precision="auto", holdout=8, min_snr=40,
                   target=int16_first(tmp_path))
    g = res.report["guard"]
    assert len(g["steps"]) >= 5  # int8, rounds, the widest model, bisection
    float_calls = max(calls.values())  # the float runner: 32 calibrated + 8 held back, each once
    assert float_calls == 32 + 8, calls
    assert sum(calls.values()) - float_calls >= 8 * len(g["steps"])  # each measured build ran on the 8 samples


def test_an_output_widened_to_float32_stays_float32_with_integer_io(tmp_path):
    """Integer I/O (the default) on a float target without int16 FULLY_CONNECTED: the all-float32 model would still
    lose its output to the output's own int8 quantization (34.7 dB here; the int8 input alone allows 37.9); the
    guard widened the op to float32, so that output stays FLOAT32 (said in the notes) and the threshold is met.
    The input stays int8."""
    from edge_sdk.model import read_model


    target = int16_first(tmp_path, "host-linux", "[ops.int16]\n\"*\" = {}\nFULLY_CONNECTED = false\n")
    res = convert(deep_outlier_mlp(), calibration=_calib(), target=target, min_snr=36)
    g = res.report["guard"]
    assert g["met"] and all(w["to"] == "float32" for w in g["widened"]), g["outputs"]
    sg = read_model(res.tflite).subgraphs[0]
    assert sg.tensors[sg.outputs[0]].type == "FLOAT32" and sg.tensors[sg.inputs[0]].type == "INT8"
    assert "output 'y' is FLOAT32: its op was widened to float32" in res.report["quantization"]["report"]["notes"]


def test_shape_ops_follow_a_float32_producer_in_the_bisection(tmp_path):
    """FULLY_CONNECTED 'hidden' -> RESHAPE 'square' -> RESHAPE 'flat' -> FULLY_CONNECTED 'y' on a float target without
    int16 FULLY_CONNECTED: a bisection step that makes 'hidden' float32 takes the reshapes after it along (more ops
    widened than its prefix of the ranking), and the kept model has no QUANTIZE / DEQUANTIZE between the float ops."""
    from tests.test_quantize_widen import _outlier_with_reshapes, int16_first

    target = int16_first(tmp_path, "host-linux", "[ops.int16]\n\"*\" = {}\nFULLY_CONNECTED = false\n")
    res = quantize(_outlier_with_reshapes(), list(_calib(40)), io="float32", precision="auto", holdout=8,
                   target=target, min_snr=40)
    g = res.report["guard"]
    assert g["met"]
    bisection = [s for s in g["steps"] if s["step"].startswith("bisection")]
    assert bisection and any(s["widened"] > s["prefix"] for s in bisection), g["steps"]
    sg = res.model.subgraphs[0]
    types = {sg.tensors[op.outputs[0]].name: sg.tensors[op.outputs[0]].type for op in sg.operators}
    assert types["hidden"] == types["square"] == types["flat"] == types["y"] == "FLOAT32"
    names = [res.model.op_name(op) for op in sg.operators]
    assert names.count("QUANTIZE") == 1 and names.count("DEQUANTIZE") <= 1  # the input's, and before 'hidden'


def test_the_heaviest_widened_ops_go_back_to_int8_while_the_goal_holds():
    """After a bisection that kept most of the order widened, the ops that carry >= 1% of the MACs go back to int8,
    the heaviest first: all at once when the goal holds, else the longest run of the heaviest that holds, then the
    next ones one by one. Here op 1 loses the goal back in int8: ops 0, 2 and 4 go back, 1 stays widened (said as
    tried), 3 (under 1% of the MACs) is not tried."""
    from converters.quantize import widen

    macs = [1000, 600, 300, 5, 200]
    built = []

    def trial(widened, what, k=None):
        built.append(dict(widened))
        return widen._Trial(None, None, None, widened, short=1 not in widened)

    start = widen._Trial(None, None, None, dict.fromkeys(range(5), "float32"), short=False)
    kept = widen.Guarded(None, None, [], [])
    best = widen._give_back_heavy(start, macs, set(), trial, kept)
    assert set(best.widened) == {1, 3}
    assert kept.missed_back == {1} and kept.search["given_back"] == 3
    assert set(built[0]) == {3}  # first: all four heavy ones back at once
    assert len(built) <= 2 + 3  # the bisection over 4 (2 builds) and the singles after it


def test_int16_before_float32_when_it_keeps_the_goal(tmp_path):
    """The escalation's float32 ops that the target also runs in int16x8 go there in one build when the goal
    holds, and stay float32 when it does not."""
    from converters.quantize import widen

    model = deep_outlier_mlp()
    rule, _ = widen.widening_rule(int16_first(tmp_path))
    start = widen._Trial(None, None, None, {1: "float32", 2: "float32"}, short=False)
    for loses in (False, True):
        kept = widen.Guarded(None, None, [], [])
        best = widen._narrow_to_int16(model, start, rule,
                                      lambda w, what, k=None: widen._Trial(None, None, None, w, short=loses), kept)
        assert best.widened == ({1: "float32", 2: "float32"} if loses else {1: "int16", 2: "int16"})
        assert kept.search["int16_instead_of_float32"] is (not loses)


def _wide_mlp(seed=0):
    """x (1, 64) -> FC 256 (ReLU) -> FC 256 (ReLU) -> FC 16: 86,016 weights, ~86 KB in int8, ~344 KB in float32 (the
    256 x 256 FC alone +196,608 bytes)."""
    r = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", (1, 64))
    for name, cin, rows, act in (("fc1", 64, 256, "RELU"), ("fc2", 256, 256, "RELU"), ("y", 256, 16, "NONE")):
        y = g.tensor(name, (1, rows))
        w = (r.standard_normal((rows, cin)) * math.sqrt(2.0 / cin)).astype(np.float32)
        g.op("FULLY_CONNECTED", [x, g.constant(name + "_w", w), g.constant(name + "_b", np.zeros(rows, np.float32))],
             [y], fused_activation_function=act)
        x = y
    g.output(x)
    return g.build()


@pytest.fixture(scope="module")
def tight_flash():
    """(model, calibration, stm32f746-disco with its flash for the model cut to the int8 model + 40 KB (and what
    convert keeps for the manifest), the int8 model's bytes)."""
    import dataclasses

    from converters.quantize import FLASH_RESERVE
    from edge_sdk.targets.profiles import load_profile

    model, calib = _wide_mlp(), np.random.default_rng(3).standard_normal((40, 1, 64)).astype(np.float32)
    n8 = len(quantize(model, list(calib), io="float32", holdout=8).tflite())
    tight = dataclasses.replace(load_profile("stm32f746-disco"), flash_model_bytes=n8 + FLASH_RESERVE + 40_000)
    return model, calib, tight, n8


def test_the_search_keeps_within_the_targets_flash_or_says_why(tight_flash):
    """A threshold only float32 weights reach (60 dB: int16x8 keeps int8 weights): with the whole flash of
    stm32f746-disco every op goes float32 (~344 KB, past the cut budget); with the budget cut to the int8 model +
    40 KB the search never tries what would not fit -- the 256 x 256 FC's float32 weights (+196 KB) nor the first
    FC's (+49 KB) -- and keeps a model that fits, saying in one line (note and JSON) that no widening that fits
    keeps the goal. Before the budget was known, the search wrote the all-float32 model, which the check refuses."""
    model, calib, tight, n8 = tight_flash
    roomy = quantize(model, list(calib), io="float32", precision="auto", holdout=8, min_snr=60,
                     target="stm32f746-disco")
    assert len(roomy.tflite()) > tight.flash_model_bytes  # what the search writes when the budget allows it
    res = quantize(model, list(calib), io="float32", precision="auto", holdout=8, min_snr=60, target=tight)
    g = res.report["guard"]
    assert len(res.tflite()) <= tight.flash_model_bytes and g["flash"]["fits"]
    assert g["flash"]["budget_bytes"] == tight.flash_model_bytes and g["flash"]["int8_bytes"] >= n8 - 64
    held = {h["output"] for h in g["flash"]["held"]}
    assert {"fc1", "fc2"} <= held and all("flash budget" in h["reason"] for h in g["flash"]["held"])
    assert not g["met"] and g["flash"]["note"].startswith("flash: no widening that fits stm32f746-disco's flash")
    assert g["flash"]["note"] in res.report["notes"]
    assert {w["output"]: w["to"] for w in g["widened"]}.get("fc2") != "float32"


def test_convert_refuses_with_the_flash_reason_instead_of_writing_a_model_the_check_refuses(tight_flash):
    """convert for the cut profile: without allow_lossy the guard's refusal names the flash budget (before: the
    device check refused the written all-float32 model, "cannot run on ..."); with it the model written fits and the
    check passes."""
    model, calib, tight, _ = tight_flash
    with pytest.raises(ConversionError) as err:
        convert(model, calibration=calib, io="float32", target=tight, min_snr=60)
    assert "cannot run on" not in str(err.value) and "flash" in str(err.value)
    res = convert(model, calibration=calib, io="float32", target=tight, min_snr=60, allow_lossy=True)
    assert len(res.tflite) <= tight.flash_model_bytes and res.report["check"]["verdict"] != "fails"
    note = res.report["guard"]["flash"]["note"]
    assert note in res.report["quantization"]["report"]["notes"] and note in str(err.value)


def _fc_chain(n=12, seed=5):
    """x (1, 16) -> n FCs 16 -> 16, each with one output channel 30x the others (undone by the next FC's weights;
    int8 crushes the small channels under the large one's scale, so every op adds error and every round that widens
    more raises the output's SNR)."""
    r = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", (1, 16))
    for k in range(n):
        w = (r.standard_normal((16, 16)) * 0.25).astype(np.float32)
        w[k % 16] *= 30
        undo = 1.0 + 29.0 * (np.arange(16) == (k - 1) % 16)  # the previous FC's large channel, read back down
        x = _fc(g, r, x, f"fc{k}", w=(w / undo[None, :]).astype(np.float32))
    g.output(x)
    return g.build()


class _FlatJudge:
    """A task judge whose figure never moves (0.5 against a goal of 0.9), judged on every model; counts its calls
    and the interpreters it was handed prepared."""

    takes_interpreter = True

    def __init__(self):
        self.calls, self.prepared = 0, 0

    def __call__(self, qmodel, interpreter=None):
        self.calls += 1
        self.prepared += interpreter is not None
        return {"judged": True, "met": False, "goal": {"q": 0.9}, "metrics": {"q": 0.5}}


def test_rounds_stop_when_the_task_figure_does_not_rise(tmp_path):
    """A judged task: the rounds' progress is its figure, not the outputs' SNR -- three rounds without a rise end
    them (STALE_ROUNDS), though each raised the SNR (before: four rounds, the SNR decided), and each round records
    the figure. Every model the search judged ran in the interpreter quantize's verify prepared for it."""
    judge = _FlatJudge()
    res = quantize(_fc_chain(), list(_calib(40)), io="float32", precision="auto", holdout=8, min_snr=200,
                   target=int16_first(tmp_path), task_judge=judge)
    rounds = [s for s in res.report["guard"]["steps"] if s["step"].startswith("round ")]
    assert len(rounds) == 3 and all(s["task_figure"] == 0.5 for s in rounds), rounds
    assert rounds[-1]["worst_snr_db"] > rounds[0]["worst_snr_db"] + 0.1  # the SNR rose: it did not decide
    assert judge.calls >= 5 and judge.prepared == judge.calls


def test_a_widening_measured_before_is_not_built_again():
    """FC -> RESHAPE pairs, a threshold only all-float32 reaches: the escalation's order is the 4 FCs (ranked) then
    the 4 RESHAPEs; its first bisection step (prefix 4: every FC) takes the RESHAPEs along as followers of float32
    producers -- the model of 'every op at its widest', measured already: reused, not built and run again (before:
    one more build). The outcome is the all-float32 model either way."""
    r = np.random.default_rng(2)
    g = GraphBuilder()
    x = g.input("x", (1, 16))
    for k in range(4):
        y = _fc(g, r, x, f"fc{k}", act="RELU" if k < 3 else "NONE")
        x = g.tensor(f"r{k}", (1, 16))
        g.op("RESHAPE", [y, g.constant(f"s{k}", np.array([1, 16], np.int32))], [x])
    g.output(x)
    res = quantize(g.build(), list(_calib(40)), io="float32", precision="auto", holdout=8, min_snr=150,
                   target="raspberry-pi-4")
    guard = res.report["guard"]
    steps = [s["step"] for s in guard["steps"]]
    assert guard["met"] and "every op at its widest" in steps, steps
    assert guard["search"].get("reused", 0) >= 1 and not any(s.startswith("bisection 0..8") for s in steps), steps


class _CreepingJudge(_FlatJudge):
    """A judged task whose figure creeps up 0.01 per model judged (0.5 first) toward a goal of 0.9."""

    def __call__(self, qmodel, interpreter=None):
        record = super().__call__(qmodel, interpreter)
        return {**record, "metrics": {"q": 0.49 + 0.01 * self.calls}}


def test_a_figure_creeping_toward_its_goal_does_not_keep_the_rounds_going():
    """Each round raises the task's figure by 0.01 with 0.4 to go: less than FIGURE_GAIN (a tenth) of the gap, so
    three rounds end them (before: every rise counted, four rounds, each a per-activation measurement)."""
    res = quantize(_fc_chain(), list(_calib(40)), io="float32", precision="auto", holdout=8, min_snr=200,
                   target="raspberry-pi-4", task_judge=_CreepingJudge())
    rounds = [s for s in res.report["guard"]["steps"] if s["step"].startswith("round ")]
    assert [s["task_figure"] for s in rounds] == pytest.approx([0.51, 0.52, 0.53]), rounds


def test_an_int16x8_search_keeps_within_the_targets_flash_or_says_why():
    """int16x8 asked (precision "auto" can only widen to float32 then): an 80 dB threshold only float32 weights
    reach. With stm32f746-disco's whole flash every FC goes float32 (~347 KB); with the budget cut to the int16x8
    model + 40 KB the search tries no widening that would not fit -- fc1's and fc2's float32 weights (+49 KB,
    +197 KB) -- keeps a model that fits, and says in one line that no widening that fits keeps the goal, naming the
    int16x8 model it started from."""
    import dataclasses

    from converters.quantize import FLASH_RESERVE
    from edge_sdk.targets.profiles import load_profile

    model, calib = _wide_mlp(), list(np.random.default_rng(3).standard_normal((40, 1, 64)).astype(np.float32))
    n16 = len(quantize(model, calib, mode="int16x8", io="float32", holdout=8).tflite())
    roomy = quantize(model, calib, mode="int16x8", io="float32", precision="auto", holdout=8, min_snr=80,
                     target="stm32f746-disco")
    tight = dataclasses.replace(load_profile("stm32f746-disco"), flash_model_bytes=n16 + FLASH_RESERVE + 40_000)
    assert len(roomy.tflite()) > tight.flash_model_bytes and roomy.report["guard"]["met"]
    res = quantize(model, calib, mode="int16x8", io="float32", precision="auto", holdout=8, min_snr=80, target=tight)
    g = res.report["guard"]
    assert len(res.tflite()) <= tight.flash_model_bytes and g["flash"]["fits"] and not g["met"]
    assert {h["output"] for h in g["flash"]["held"]} == {"fc1", "fc2"}
    assert all(w["to"] == "float32" for w in g["widened"])  # int16x8 asked: float32 is the only wider type
    note = g["flash"]["note"]
    assert note.startswith("flash: no widening that fits") and f"the int16x8 model is {n16} bytes" in note
    assert note in res.report["notes"]
    types = {t.type for t in res.model.subgraphs[0].tensors if not t.buffer}
    assert "INT16" in types  # the ops the budget held stay int16x8
