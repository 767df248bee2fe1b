"""The accuracy guard and precision="auto": measure the quantized model against the float one (``measure``) and, while
an output is short of ``min_snr`` dB, widen the ops that add the most error themselves (``sensitive_ops``: from one
measurement of every activation, no model run per candidate), round by round (1, 2, 4, ... ops), each to the type
the target takes (``widening_rule``): int16x8 (int16 activations, int8 weights, int64 biases; QUANTIZE
int8 -> int16 before the op and int16 -> int8 after it) where the target's runtime has the op in int16 (the row's
``int16`` "op" and ``int16_missing``, probed against TFLM and both edge-sdk runtimes by
tests/test_quantize_widen.py), else float32 where the target runs float32, else not at all (``cannot_widen``). When the
rounds stall short of it, every op goes to its widest type (all float32 at worst on a float target: a model is always
kept there) and bisection over the ranking finds the smallest prefix that meets the goal (``_escalate``). When that
prefix is most of the ranking (the ranking missed where the loss is: an op whose int8 input loses it looks harmless
when ranked by the error it adds itself), the ops nearest the outputs are bisected too (a detector's decode / score
tail, a CTC head), the one leaving more MACs in int8 kept; its heaviest widened ops are then tried back in int8 and its
float32 ops in int16x8 where the target takes it. On a target that runs both int16x8 and float32, with an SNR goal,
the search also tries every op at int16x8 and, short there, float32 only for the ops whose int8 weights (int16x8 keeps them int8)
cost the outputs the most (``_weights_first``, ranked by ``weight_noise``), and keeps the cheaper model that meets
the goal (``_weighted_cost``: an int16x8 MAC counts half a float32 one). Still short, the ops that keep it so are
named (``limiting_ops``).
Then each widened op is tried back in int8 (at most ``MAX_PRUNE``). Steps the task judges skip the per-output
measurement; the report gives each widened op's reason, the goal's figure before and after, and the int8 MAC share
(``search``). For a target the search spends its flash budget for the model (``FlashBudget``: the profile's
``flash_model_bytes``): a widening whose constants would not fit is not tried -- float32 gives way to int16x8 where
the target takes it, else the op stays int8 -- and when no widening that fits keeps the goal the report and the JSON
say so in one line (``flash_note``) rather than the search writing a model the device check then refuses. The cost:
per widened op its constant bytes, extra activation bytes and MACs; in total the model's growth in bytes and the MACs
no longer in int8."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from converters.quantize.builder import QuantGraph, is_const, is_float
from converters.quantize.calibrate import MEASURE_CACHE_BYTES, CachedRunner, Calibration
from converters.quantize.measure import layer_errors, short, worst
from converters.quantize.rules import is_weighted, op_label, unquantizable
from edge_sdk import log
from edge_sdk.errors import ConversionError
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table

MAX_WIDEN_ROUNDS = 8  # precision="auto": rounds of widening (1, 2, 4, ... ops per round)
MAX_PRUNE = 16  # then each widened op is tried back in integer (when at most this many were widened)
STALE_ROUNDS = 3  # auto stops after this many rounds without a gain of 0.1 dB on the worst output
FIGURE_GAIN = 0.1  # or, a judged task, without closing this share of its figure's gap to the goal


def count_widened(kinds) -> dict:
    """The one count of widened ops, from the types they were widened to ("int16" / "float32"): the progress
    lines and the report's summary both print it (``widened_text``)."""
    kinds = list(kinds)
    n16 = sum(k == "int16" for k in kinds)
    return {"ops": len(kinds), "int16": n16, "float32": len(kinds) - n16}


def widened_text(count: dict) -> str:
    """``3 op(s) (1 to int16x8, 2 to float32)``"""
    return f"{count['ops']} op(s) ({count['int16']} to int16x8, {count['float32']} to float32)"


def widening_rule(target=None, mode: str = "int8"):
    """(rule, where): ``rule(op name) -> (type, why)`` says what precision="auto" widens an op to: "int16"
    (int16x8) when the op has an int16 kernel in TFLM and in edge-sdk's interpreter and in the target's
    runtime (the row's ``int16`` "op", no runtime in its ``int16_missing``) and the target's profile takes int16
    for it; else "float32" when the profile takes float32 for it; else (None, why). On a target whose profile says
    ``widen_to = "float32"`` (a fast float path: XNNPACK on the Linux boards, where int16x8 runs reference kernels:
    one-op models 24x float32's time in LiteRT, 28x in our C runtime, benchmarks/results/widen_cost_*) float32
    comes first, int16x8 only for an op the target runs in no float32 (and, before the search, the ops whose int8
    kernel is slower than float32 there go float32 where that pays: converters.quantize.speed). Without a target:
    int16 when both edge-sdk runtimes (the Python interpreter and the C runtime) have the kernel, else float32.
    ``target``: a profile name, a .toml path or a loaded ``Profile``. In int16x8 mode only float32 is wider."""
    backend = None
    runtimes = ("python", "c")
    float_first = False
    where = "the default runtimes (edge-sdk's interpreter and C runtime, TFLM)"
    if target is not None:
        from edge_sdk.targets.profiles import load_profile

        prof = load_profile(target)  # a Profile is taken as it is
        backend = prof.cpu_backend
        runtimes = tuple(dict.fromkeys(("python", prof.runtime or "python")))
        float_first = prof.widen_to == "float32"
        where = f"target {prof.name} (runtime {prof.runtime or 'python'})"

    def rule(name: str, float_only: bool = False) -> tuple[str | None, str | None]:
        int16_why = None
        if float_first and backend.op_constraints(name, "float32") is not None:
            return "float32", None
        if mode == "int8" and not float_only:
            row = op_table.row(name)
            missing = [rt for rt in runtimes if rt in row.int16_missing]
            if row.int16 != "op":
                int16_why = f"no int16x8 kernel for {name} (TFLM)"
            elif missing:
                int16_why = f"the {'/'.join(missing)} runtime has no int16 {name}"
            elif backend is not None and backend.op_constraints(name, "int16") is None:
                int16_why = f"the profile takes no int16 {name}"
            else:
                return "int16", None
        if backend is None or backend.op_constraints(name, "float32") is not None:
            return "float32", None
        return None, f"{where}: {int16_why + '; ' if int16_why else ''}the profile takes no float32 {name}"

    return rule, where


def float32_fallbacks(model: Model, act: str, excluded: set[int], rule) -> list[tuple[int, str]]:
    """precision="auto": (op index, why) of the ops without an integer rule, which stay float32; ConversionError
    naming every one the target cannot run in float32."""
    no_rule = unquantizable(model, act, excluded)
    ops = model.subgraphs[0].operators
    no_float = [f"{op_label(model, i)}: {why}, and {rule(model.op_name(ops[i]), True)[1]}"
                for i, why in no_rule if rule(model.op_name(ops[i]), True)[0] != "float32"]
    if no_float:
        raise ConversionError(f"quantize: {len(no_float)} op(s) have no {act.lower()} rule and cannot stay float32",
                              no_float)
    return no_rule


TIE_CLASSES = 256  # a distribution model output over more classes than int8 has steps: argmax ties at 1/256


def distribution_tails(model: Model, act: str, excluded: set[int], rule) -> list[tuple[int, str]]:
    """(op index, why) of the ops whose value is a model output holding a class distribution (the row's
    ``distribution``: SOFTMAX, LOG_SOFTMAX) over more than ``TIE_CLASSES`` classes, in int8 mode, where ``rule``
    (``widening_rule``'s) lets them run float32: int8's fixed 1/256 output step ties the top classes of a wide
    distribution (a CTC recognizer's thousands of characters: its argmax, its strings, change). These ops are the
    float tail of the model (a few ops, few MACs) and give float32 outputs."""
    if act != "INT8":
        return []
    sg = model.subgraphs[0]
    out = []
    for i, op in enumerate(sg.operators):
        t = op.outputs[0] if op.outputs else -1
        if i in excluded or t not in sg.outputs or not op_table.row(model.op_name(op)).distribution:
            continue
        classes = int(sg.tensors[t].shape[-1]) if len(sg.tensors[t].shape) else 1
        if classes > TIE_CLASSES and rule(model.op_name(op), True)[0] == "float32":
            out.append((i, f"a distribution over {classes} classes: int8's 1/256 output step ties its top classes"))
    return out


@dataclass
class Guarded:
    """The model the guard keeps and what it measured: per layer and per output, what was widened (op index ->
    "int16" / "float32", in order), what could not be, and the integer graph's bookkeeping."""

    qmodel: Model
    graph: QuantGraph
    layers: list
    outputs: list
    widened: dict = field(default_factory=dict)
    cannot: dict = field(default_factory=dict)  # op index -> why it cannot be widened on this target
    w16: set = field(default_factory=set)  # ops widened to int16x8
    base_bytes: int | None = None  # the unwidened model's size, when widening was needed
    tried: int = 0  # the most ops widened at once
    steps: list = field(default_factory=list)  # each build measured: ops widened, worst output SNR, seconds
    all_widened: bool = False  # every op the target can widen is widened (all-float on a float target)
    limiting: list = field(default_factory=list)  # still short: (op index, why) of the ops that keep it short
    search: dict = field(default_factory=dict)  # the escalation's order, the prefix that met, the goal before / after
    why: dict = field(default_factory=dict)  # op index -> why the search widened it (the report's reason)
    missed_back: set = field(default_factory=set)  # widened ops tried back in int8 where the goal was then missed
    budget: "FlashBudget | None" = None  # the target's flash for the model, when widening was needed
    flash: dict = field(default_factory=dict)  # the report's record of it (``flash_record``)


class FlashBudget:
    """The target's flash for the model (its profile's ``flash_model_bytes``) as the search spends it: the unwidened
    model's serialized bytes plus the constant bytes each widened op adds (``const_bytes``: float32 weights are 4x
    int8's, int16x8 keeps them int8) stay within ``limit``. A widening that would not fit is not tried: float32 gives
    way to int16x8 where the target takes it, else the op stays int8 (``narrowed``: op index -> why)."""

    def __init__(self, model: Model, base_bytes: int, limit: int, where: str, reserve: int = 0,
                 base_name: str = "int8"):
        self.model, self.base_bytes, self.limit, self.where = model, int(base_bytes), int(limit) - reserve, where
        self.base_name = base_name  # the unwidened model's mode: "int8", or "int16x8" when that was asked
        self.flash, self.reserve = int(limit), int(reserve)  # the profile's figure; what convert adds to the model
        self.narrowed: dict[int, str] = {}
        self._bytes: dict[tuple[int, str], int] = {}  # (op, type) -> const_bytes: asked for every candidate

    def cost(self, i: int, kind: str) -> int:
        key = (i, kind)
        if key not in self._bytes:
            self._bytes[key] = const_bytes(self.model, i, kind)
        return self._bytes[key]

    def text(self) -> str:
        """``stm32f746-disco's flash budget for the model (786432 bytes, 4096 of them kept for its manifest)``"""
        return (f"{self.where}'s flash budget for the model ({self.flash} bytes"
                + (f", {self.reserve} of them kept for its manifest" if self.reserve else "") + ")")

    def grown(self, widened: dict) -> int:
        return sum(self.cost(i, k) for i, k in widened.items() if k is not None)

    def fits(self, widened: dict) -> bool:
        return self.base_bytes + self.grown(widened) <= self.limit

    def why(self, i: int, kind: str) -> str:
        to = "float32" if kind == "float32" else "int16x8"
        return (f"{to} constants (+{const_bytes(self.model, i, kind)} bytes) would not fit {self.text()}; the "
                f"{self.base_name} model is {self.base_bytes} bytes")

    def choose(self, kinds: dict, rule, fixed: dict | None = None) -> dict:
        """``kinds`` (op index -> the widest type wanted) within the budget beside ``fixed`` (widened already, kept
        as they are): the ops whose float32 constants cost the most go to int16x8 where ``rule`` allows it, then,
        still over, stay int8 (None), until the rest fits."""
        fixed = {i: k for i, k in (fixed or {}).items() if i not in kinds}
        kinds = dict(kinds)
        by_cost = sorted((i for i, k in kinds.items() if k == "float32"),
                         key=lambda i: -self.cost(i, "float32"))
        for i in by_cost:
            if self.fits({**fixed, **kinds}):
                break
            if rule(self.model.op_name(self.model.subgraphs[0].operators[i]))[0] == "int16":
                self.narrowed.setdefault(i, self.why(i, "float32") + ": int16x8 instead")
                kinds[i] = "int16"
        for i in sorted((i for i, k in kinds.items() if k is not None), key=lambda i: -self.cost(i, kinds[i])):
            if self.fits({**fixed, **kinds}):
                break
            if self.cost(i, kinds[i]) > 0:
                self.narrowed.setdefault(i, self.why(i, kinds[i]))
                kinds[i] = None
        return kinds


class Prepared:
    """The interpreter the quantizer's verification prepared for the model it built last (``build`` holds it): the
    task judge runs that model in it instead of preparing the same model a second time (preparing and planning is
    most of a step's time on a small model: YOLO-like small, 79 prepares for 33 builds before)."""

    def __init__(self):
        self._held = None

    def hold(self, qmodel: Model, interpreter) -> None:
        self._held = (qmodel, interpreter)

    def take(self, qmodel: Model):
        """The prepared interpreter of ``qmodel`` (once: it is let go), or None when the last build was another."""
        held, self._held = self._held, None
        return held[1] if held is not None and held[0] is qmodel else None


class Goal:
    """What "met" means to the search: every output (and joined part) at ``min_snr`` dB, or, with a ``judge``
    (convert's task guard: ``judge(qmodel) -> record`` of ``converters.evaluate.judge_task``), the task's verdict
    wherever the task could be judged -- a detector kept on its detections is not widened further for its raw SNR.
    One record per model (the search asks about the same model more than once)."""

    def __init__(self, min_snr: float, judge=None, prepared: Prepared | None = None):
        self.min_snr, self.judge, self.prepared = min_snr, judge, prepared
        self._records: dict[int, tuple[Model, dict]] = {}

    def record(self, qmodel: Model) -> dict | None:
        """The task's record of ``qmodel`` (judged once), or None without a judge. A judge that takes an
        ``interpreter`` (``converters.evaluate.TaskJudge``) gets the one ``build`` prepared for it."""
        if self.judge is None:
            return None
        held = self._records.get(id(qmodel))
        if held is None or held[0] is not qmodel:
            interp = self.prepared.take(qmodel) if self.prepared is not None else None
            record = (self.judge(qmodel, interpreter=interp) if interp is not None
                      and getattr(self.judge, "takes_interpreter", False) else self.judge(qmodel))
            held = self._records[id(qmodel)] = (qmodel, record)
        return held[1]

    def judged(self, qmodel: Model) -> bool:
        """Whether the task decides for ``qmodel`` (its outputs' SNRs are then not needed)."""
        record = self.record(qmodel)
        return bool(record and record.get("judged"))

    def short(self, qmodel: Model, outputs) -> bool:
        record = self.record(qmodel)
        if record is not None and record.get("judged"):
            return not record["met"]
        return bool(short(outputs, self.min_snr))


def guard(model: Model, build, first: tuple[Model, QuantGraph], cal: Calibration, excluded: set[int], rule,
          precision: str, min_snr: float, max_rounds: int, io: str, no_rule=(), task_judge=None,
          prepared: Prepared | None = None, flash_budget: int | None = None, budget_for: str = "",
          flash_reserve: int = 0) -> Guarded:
    """Measure ``first`` (the integer graph ``build(excluded)`` gave) and, with precision="auto", widen while an
    output is short of ``min_snr`` (or, with ``task_judge``, while the task is not kept: ``Goal``);
    ``build(excluded, w16) -> (qmodel, graph)``. ``no_rule``: the ops already kept float32 (no integer rule, a zero
    divisor), counted with the widened ones in every progress line. ``prepared``: where ``build`` holds the
    interpreter it prepared for the model it built (``Prepared``). ``flash_budget``: the target's flash for the
    model in bytes (``budget_for`` names the target, ``flash_reserve`` of it is kept for what convert adds to the
    model): no widening is tried that would not fit it (``FlashBudget``);
    the model kept is the widest that fits, and the report says what the budget held back (``kept.flash``)."""
    goal = Goal(min_snr, task_judge, prepared)
    measure = cal.measure
    if not isinstance(cal.float_run, CachedRunner):  # each widening step compares with the same float values
        cal.float_run = CachedRunner(cal.float_run, MEASURE_CACHE_BYTES)
    log.stage(f"measuring the quantization error on {len(measure)} "
              f"{'held-back' if cal.held_back else 'calibration'} sample(s)")
    qmodel, g = first
    started = time.monotonic()
    layers, outputs = layer_errors(model, qmodel, g, measure, cal.float_run, io)
    kept = Guarded(qmodel, g, layers, outputs)
    if precision != "auto" or not goal.short(qmodel, outputs):
        return kept
    kept.search["before"] = {"worst_snr_db": worst(outputs), **_figure(goal, qmodel)}
    from edge_sdk.model import write_model

    kept.base_bytes = len(write_model(qmodel))  # the guard's cost is the serialized model's growth
    if flash_budget is not None:
        wide = any(t.type == "INT16" and not t.buffer for t in qmodel.subgraphs[0].tensors)  # int16x8 asked
        kept.budget = FlashBudget(model, kept.base_bytes, flash_budget, budget_for or "the target", flash_reserve,
                                  "int16x8" if wide else "int8")
    unwidened = (qmodel, g, layers, outputs)
    kept.steps.append(_step(len(no_rule), kept, time.monotonic() - started, "int8" if g.act == "INT8" else "int16x8"))
    base_excluded = set(excluded)
    kept, excluded = _widen_rounds(model, build, cal, kept, excluded, rule, goal, max_rounds, io, len(no_rule))
    if goal.short(kept.qmodel, kept.outputs):
        excluded = _escalate(model, build, cal, kept, base_excluded, rule, goal, io, len(no_rule))
    if kept.widened and not goal.short(kept.qmodel, kept.outputs) and len(kept.widened) <= MAX_PRUNE:
        _give_back(model, build, cal, kept, excluded, goal, io)
    if kept.budget is not None:
        _within_flash(kept, unwidened, write_model)
    if goal.short(kept.qmodel, kept.outputs):
        kept.limiting = limiting_ops(model, kept, rule)
    if kept.flash:
        kept.flash["note"] = flash_note(kept.flash, kept.budget, not goal.short(kept.qmodel, kept.outputs))
    kept.search["after"] = {"worst_snr_db": worst(kept.outputs), **_figure(goal, kept.qmodel)}
    return kept


def _widen_rounds(model: Model, build, cal: Calibration, kept: Guarded, excluded: set[int], rule, goal: Goal,
                  max_rounds: int, io: str, n_no_rule: int = 0) -> tuple[Guarded, set[int]]:
    """Round k widens up to 2**k more of the ops that add the most error (``sensitive_ops``, ranked again after
    each round's measurement); after ``STALE_ROUNDS`` rounds without a gain of 0.1 dB the smallest widening that
    gave the best result is kept; with a judged task (``Goal``) the gain is in the task's figure (each round's step
    records it), not the outputs' SNR. Returns it and the ops then kept float32."""
    sg = model.subgraphs[0]
    base_excluded = set(excluded)
    widened, cannot, w16 = kept.widened, kept.cannot, kept.w16
    best = (worst(kept.outputs), kept.qmodel, kept.graph, kept.layers, kept.outputs, dict(widened))
    best_figure = _figure(goal, kept.qmodel).get("task_figure")  # a judged task: its figure says the progress
    stale = 0
    for rnd in range(max_rounds):
        if not goal.short(kept.qmodel, kept.outputs) or stale >= STALE_ROUNDS:
            break
        take = {}
        for i in sensitive_ops(model, kept.layers, excluded | w16 | set(cannot)):
            kind, why = rule(model.op_name(sg.operators[i]))
            if kind is not None and kept.budget is not None and not kept.budget.fits({**widened, **take, i: kind}):
                kind, why = None, kept.budget.why(i, kind)
                kept.budget.narrowed.setdefault(i, why)
            if kind is None:
                cannot[i] = why
                continue
            take[i] = kind
            if len(take) >= 1 << rnd:
                break
        if not take:
            break
        widened.update(take)
        kept.why.update({i: f"adds the most error itself (round {rnd + 1} of the ranking by the SNR each op loses)"
                         for i in take})
        excluded = excluded | {i for i, k in take.items() if k == "float32"}
        w16 |= {i for i, k in take.items() if k == "int16"}
        kept.tried = max(kept.tried, len(widened))
        count = count_widened(["float32"] * n_no_rule + list(widened.values()))
        log.stage(f"widening {widened_text(count)}; round {rnd + 1}")
        started = time.monotonic()
        kept.qmodel, kept.graph = build(excluded, w16)
        kept.layers, kept.outputs = layer_errors(model, kept.qmodel, kept.graph, cal.measure, cal.float_run, io)
        figure = _figure(goal, kept.qmodel)
        kept.steps.append({**_step(count["ops"], kept, time.monotonic() - started, f"round {rnd + 1}"), **figure,
                           "added": [sg.tensors[sg.operators[i].outputs[0]].name for i in take]})
        gained = worst(kept.outputs) > best[0] + 0.1
        if figure.get("task_figure") is not None and best_figure is not None:
            # a judged task: a round gains when its figure closes FIGURE_GAIN of the gap between the best round's
            # and the goal (the SNR of a detector's raw rows may rise for rounds while the detections stay lost, and
            # a figure creeping up 0.02 a round toward a goal 0.6 away is not kept by more rounds of int16: at 128 px
            # the YOLO-like rounds 4-8 widened 211 ops to int16x8, none of which the escalation gave back)
            aim = (goal.record(kept.qmodel).get("goal") or {}).get(figure.get("task_metric"))
            step = FIGURE_GAIN * max(0.0, float(aim) - best_figure) if aim is not None else 0.0
            gained = figure["task_figure"] > best_figure + step
            best_figure = figure["task_figure"] if gained else best_figure
        if gained:
            best = (worst(kept.outputs), kept.qmodel, kept.graph, kept.layers, kept.outputs, dict(widened))
        stale = 0 if gained else stale + 1
    if stale and goal.short(kept.qmodel, kept.outputs):  # the last rounds gained nothing: keep the best
        _, kept.qmodel, kept.graph, kept.layers, kept.outputs, kept.widened = best
        kept.w16 = {i for i, k in kept.widened.items() if k == "int16"}
        excluded = base_excluded | {i for i, k in kept.widened.items() if k == "float32"}
    return kept, excluded


def _within_flash(kept: Guarded, unwidened: tuple, write_model) -> None:
    """The model kept, serialized, against the flash budget (the search spent it by estimate): over it, the
    unwidened model is kept instead and the record says why. ``kept.flash``: the budget, the bytes, whether it fits,
    the ops the budget held narrower than the search wanted, and the one line the report prints."""
    budget = kept.budget
    size = len(write_model(kept.qmodel)) if kept.widened else budget.base_bytes
    if size > budget.limit and kept.widened:
        over = size
        kept.qmodel, kept.graph, kept.layers, kept.outputs = unwidened
        kept.widened, kept.w16 = {}, set()
        size = budget.base_bytes
        budget.narrowed.setdefault(-1, f"the widened model ({over} bytes) would not fit")
    narrowed = {i: why for i, why in budget.narrowed.items() if i >= 0 and kept.widened.get(i) != "float32"}
    kept.flash = {"budget_bytes": budget.flash, "reserve_bytes": budget.reserve, "model_bytes": size,
                  "fits": size <= budget.limit,
                  "int8_bytes": budget.base_bytes, "narrowed": sorted(narrowed), "whole_model_back": -1 in
                  budget.narrowed}
    if narrowed or -1 in budget.narrowed:
        kept.flash["why"] = {i: narrowed[i] for i in sorted(narrowed)}


def flash_note(flash: dict, budget: FlashBudget, met: bool) -> str | None:
    """The one line the report and the JSON give when the flash budget held the search back (None when it did not):
    the goal missed for it, or kept with narrower types."""
    narrowed = flash.get("narrowed") or []
    if not narrowed and not flash.get("whole_model_back"):
        return None
    need = sum(const_bytes(budget.model, i, "float32") for i in narrowed)
    held = (f"{len(narrowed)} op(s) held narrower than the search wanted (their float32 constants: +{need} bytes)"
            if narrowed else "the widened model held back")
    int8 = f"the {budget.base_name} model is {budget.base_bytes} bytes"
    if met:
        return (f"flash: the goal is kept within {budget.text()} ({int8}): {held}; the model is "
                f"{flash['model_bytes']} bytes")
    return (f"flash: no widening that fits {budget.text()} keeps the goal ({int8}): {held}; the model kept is "
            f"{flash['model_bytes']} bytes")


def _give_back(model: Model, build, cal: Calibration, kept: Guarded, excluded: set[int], goal: Goal,
               io: str) -> None:
    """Rounds widen in batches: each widened op the outputs do not need is given back to int8 (last first)."""
    for i in list(reversed(kept.widened)):
        trial, trial16 = excluded - {i}, kept.w16 - {i}
        qm, g = build(trial, trial16)
        layers, outputs = layer_errors(model, qm, g, cal.measure, cal.float_run, io)
        if not goal.short(qm, outputs):
            excluded, kept.w16 = trial, trial16
            kept.qmodel, kept.graph, kept.layers, kept.outputs = qm, g, layers, outputs
            del kept.widened[i]


def _noise(snr: float) -> float:
    """The error's share of the signal's power at ``snr`` dB (0 for an exact tensor)."""
    return 0.0 if snr == math.inf else 10.0 ** (-min(max(snr, -60.0), 120.0) / 10.0)


def sensitive_ops(model: Model, layers: list[dict], excluded: set[int]) -> list[int]:
    """Quantized ops ranked by the error each adds itself, from one measurement of every activation (the per-op
    sensitivity pass; no model run per candidate): the relative noise power of its output (its worst channel's,
    where that is worse: a small channel crushed under a per-tensor scale) less that of its noisiest float input
    (ops downstream of a lossy one inherit its error: widening them does not remove it), the most first; ties:
    lowest output SNR first. Ops whose output keeps their input's quantization ("same:N") are never widened here."""
    sg = model.subgraphs[0]
    cap = 120.0
    snr = {r["tensor"]: min(r["snr_db"], r.get("worst_channel_snr_db", cap), cap) for r in layers
           if "part_of" not in r}
    ranked = []
    for i, op in enumerate(sg.operators):
        if i in excluded or not op.outputs or op.outputs[0] < 0 \
                or op_table.row(model.op_name(op)).quant.startswith("same:"):
            continue
        out = snr.get(sg.tensors[op.outputs[0]].name)
        if out is None:
            continue
        ins = [snr.get(sg.tensors[t].name, cap) for t in op.inputs
               if is_float(model, t) and not is_const(model, t)]
        added = _noise(out) - (_noise(min(ins)) if ins else 0.0)
        ranked.append((-added, out, i))
    ranked.sort()
    return [i for _, _, i in ranked]


def _step(n_widened: int, kept: "Guarded", seconds: float, what: str) -> dict:
    """One measured build, for the report's ``steps``: the ops then widened (counted as ``count_widened`` counts
    them, the float32 fallbacks included), the worst output SNR, and how long the build and its measurement took."""
    return {"step": what, "widened": n_widened, "worst_snr_db": worst(kept.outputs), "seconds": round(seconds, 3)}


def _widest(model: Model, i: int, rule) -> str | None:
    """The widest type the target takes for op i: float32 where it runs float32, else int16x8, else None."""
    name = model.op_name(model.subgraphs[0].operators[i])
    if rule(name, True)[0] == "float32":
        return "float32"
    return rule(name)[0]


def _escalate(model: Model, build, cal: Calibration, kept: Guarded, base_excluded: set[int], rule, goal: Goal,
              io: str, n_no_rule: int = 0) -> set[int]:
    """The rounds ended short: from the rounds' best model, every op not yet at the widest type the target takes
    (float32 where it runs float32, else int16x8) goes there -- all-float32 at worst on a float target. If that
    meets the goal, the smallest prefix of the sensitivity order (from the rounds' last measurement) that meets it
    is found by bisection (log2(ops) builds). When that prefix holds most of the order, the ranking did not find
    where the loss is (an op whose int8 *input* loses it, a tail whose parts need their own scales: ranked by the
    error each op adds, such ops look harmless), so the ops nearest the outputs are tried first too: the shortest
    suffix of the topological order that meets the goal, by bisection (``_SUFFIX``), and the one of the two that
    leaves the most MACs in int8 is kept. Then the heaviest widened ops (by MACs) go back to int8 while the goal
    holds (``_give_back_heavy``), and the float32 ops the target also runs in int16x8 go there when the goal
    still holds (both only after a bisection that kept most of the order: a short prefix is kept as it is). Short even at the widest: the better of that and the rounds' model is kept. Each step builds and
    judges one model; the per-activation table is measured once, for the model kept. Returns the ops then kept
    float32 (beside ``base_excluded``)."""
    sg = model.subgraphs[0]
    state = dict(kept.widened)
    done = base_excluded | {i for i, k in state.items() if k == "float32"}
    ranked = sensitive_ops(model, kept.layers, done)
    rest = [i for i, op in enumerate(sg.operators) if i not in done and i not in ranked
            and any(t >= 0 and is_float(model, t) for t in list(op.inputs) + list(op.outputs))]
    wanted = {i: _widest(model, i, rule) for i in ranked + rest}
    if kept.budget is not None:  # every op at its widest, within the target's flash: float32 gives way first
        wanted = kept.budget.choose(wanted, rule, state)
    order = []
    for i in ranked + rest:
        widest = wanted[i]
        if widest is None:
            if i in ranked:  # an op that quantizes (not one that only carries its input's quantization)
                kept.cannot.setdefault(i, (kept.budget.narrowed.get(i) if kept.budget is not None else None)
                                       or rule(model.op_name(sg.operators[i]))[1])
        elif state.get(i) != widest:
            order.append(i)
    if not order:  # every op already at its widest (float32 by rule: a DIV whose divisor nears zero), still short
        kept.all_widened = not kept.cannot
        return done
    macs = _op_macs(cal)
    before = _Trial(kept.qmodel, kept.graph, kept.outputs, state, goal.short(kept.qmodel, kept.outputs))
    produced = {t: i for i, op in enumerate(sg.operators) for t in op.outputs if t >= 0}
    built: dict[frozenset, _Trial] = {}  # each widening measured once: (op, type) pairs -> its trial

    def trial(widened: dict, what: str, k: int | None = None) -> _Trial:
        widened = dict(widened)
        # an op that only carries its input's quantization ("same:N": reshapes, pools, pads) follows a float32
        # producer: left int8 between two float32 ops it would requantize what they keep
        for i in sorted(order):
            quant = op_table.row(model.op_name(sg.operators[i])).quant
            if i in widened or not quant.startswith("same:") or _widest(model, i, rule) != "float32":
                continue
            src = produced.get(sg.operators[i].inputs[int(quant.split(":")[1])])
            if src is not None and (widened.get(src) == "float32" or src in base_excluded):
                widened[i] = "float32"
        key = frozenset(widened.items())
        count = count_widened(["float32"] * n_no_rule + list(widened.values()))
        if key in built:  # the same widening as a step before (a prefix whose followers make it another's): its
            kept.search["reused"] = kept.search.get("reused", 0) + 1  # answer, not another build and run
            log.stage(f"widening {widened_text(count)}; {what} (the same model as a step before)")
            return built[key]
        excl = base_excluded | {i for i, w in widened.items() if w == "float32"}
        w16 = {i for i, w in widened.items() if w == "int16"}
        log.stage(f"widening {widened_text(count)}; {what}")
        started = time.monotonic()
        qm, g = build(excl, w16)
        result = built[key] = _judge(model, qm, g, widened, goal, cal, io)
        kept.tried = max(kept.tried, len(widened))
        kept.steps.append({"step": what, **({"prefix": k} if k is not None else {}), "widened": count["ops"],
                           "worst_snr_db": worst(result.outputs) if result.outputs is not None else None,
                           **_figure(goal, qm), "macs_not_int8": _not_int8(widened, macs, base_excluded),
                           "seconds": round(time.monotonic() - started, 3)})
        return result

    def widest(ops) -> dict:
        return {**state, **{i: wanted[i] for i in ops}}

    def bisect(seq: list[int], top: _Trial, label: str) -> tuple[int, _Trial]:
        """The shortest prefix of ``seq`` whose widening meets the goal (prefix 0, the rounds' model, is short;
        the whole of it meets)."""
        lo, hi, best = 0, len(seq), top
        while hi - lo > 1:
            mid = (lo + hi) // 2
            result = trial(widest(seq[:mid]), f"{label} {lo}..{hi} of {len(seq)}", mid)
            if result.short:
                lo = mid
            else:
                hi, best = mid, result
        return hi, best

    top = trial(widest(order), "every op at its widest", len(order))
    if top.short:  # even the widest model is short (its integer inputs / outputs, or the target)
        kept.all_widened = worst(_outputs(model, top, cal, io)) >= worst(_outputs(model, before, cal, io))
        best = top if kept.all_widened else before
    else:  # prefix 0 (the rounds' model) is short, the whole order meets
        hi, best = bisect(order, top, "bisection")
        kept.all_widened = hi == len(order)
        kept.search.update(order="sensitivity", prefix=hi, of=len(order))
        if hi > len(order) * _SUFFIX:  # the ranking did not localize the loss: the ops nearest the outputs first
            tail = sorted(order, reverse=True)
            hi_tail, by_tail = bisect(tail, top, "suffix bisection")
            if _not_int8(by_tail.widened, macs, base_excluded) < _not_int8(best.widened, macs, base_excluded):
                best, kept.all_widened = by_tail, hi_tail == len(tail)
                kept.search.update(order="nearest the outputs", prefix=hi_tail, of=len(tail))
            ceiling = _figure(goal, top.qmodel).get("task_figure")  # the all-widened model's own (judged once)

            def holds(r):
                return _holds_with_margin(goal, r, ceiling)

            best = _give_back_heavy(best, macs, base_excluded, trial, kept, holds)
            best = _narrow_to_int16(model, best, rule, trial, kept, holds)
            kept.all_widened = kept.all_widened and len(best.widened) >= len(top.widened)
        # int16 activations first where the widening kept costs more than every op at int16x8 would, on an SNR goal
        # only: a task's figure on the few held-back samples is coarse (4 strings: steps of 0.25) and this search
        # judges ~15 more candidates on them -- on the rec-like stand-in it kept one at 1.0 on the held-back strings
        # and 0.75 on the evaluation ones (goal 0.8)
        def with_room(r):
            return _holds_with_margin(goal, r)

        lighter = (_weights_first(model, order, wanted, state, rule, trial, cal, kept, io, macs, with_room)
                   if not goal.judged(top.qmodel)
                   and _weighted_cost(best.widened, macs, base_excluded) > INT16_COST * sum(macs) else None)
        if lighter is not None:
            held = (kept.search.get("given_back"), set(kept.missed_back))
            lighter = _give_back_heavy(lighter, macs, base_excluded, trial, kept, with_room)
            if (_weighted_cost(lighter.widened, macs, base_excluded)
                    < _weighted_cost(best.widened, macs, base_excluded)):
                best, kept.all_widened = lighter, False
                kept.search["order"] = "weights first"
            else:  # the record of the give-back that is kept
                kept.search["given_back"], kept.missed_back = held
                if held[0] is None:
                    kept.search.pop("given_back")
    kept.qmodel, kept.graph, kept.widened = best.qmodel, best.graph, best.widened
    kept.w16 = {i for i, w in kept.widened.items() if w == "int16"}
    _escalation_reasons(model, kept, state, order, rule)
    kept.layers, kept.outputs = layer_errors(model, kept.qmodel, kept.graph, cal.measure, cal.float_run, io)
    return base_excluded | {i for i, k in kept.widened.items() if k == "float32"}


_SUFFIX = 0.5  # the ranking's bisection kept more than this share of its order: the suffix bisection is tried too
GIVE_BACK_SHARE = 0.01  # widened ops with at least this share of the model's MACs are tried back in int8
GIVE_BACK_MARGIN = 0.5  # a give-back keeps the task's figure this far from its goal to perfect (_holds_with_margin)
GIVE_BACK_MARGIN_DB = 1.0  # or, judged by SNR, every output this many dB above the threshold
GIVE_BACK_SINGLES = 6  # after the bisection over them, this many of the next heaviest are tried back one by one


@dataclass
class _Trial:
    """One build the escalation measured: the model, its graph, its outputs' SNRs (None until measured: a judged
    task decides alone), what it widened, whether it misses the goal."""

    qmodel: Model
    graph: QuantGraph
    outputs: list | None
    widened: dict
    short: bool


def _judge(model: Model, qm: Model, g: QuantGraph, widened: dict, goal: Goal, cal: Calibration, io: str) -> _Trial:
    """Whether ``qm`` misses the goal, from the task's verdict alone where it is judged (no per-output measurement
    then: one run of the model less per step), else from its outputs' SNRs (measured at the outputs only)."""
    if goal.judged(qm):
        return _Trial(qm, g, None, widened, goal.short(qm, None))
    outputs = layer_errors(model, qm, g, cal.measure, cal.float_run, io, outputs_only=True)[1]
    return _Trial(qm, g, outputs, widened, goal.short(qm, outputs))


def _outputs(model: Model, t: _Trial, cal: Calibration, io: str) -> list:
    if t.outputs is None:
        t.outputs = layer_errors(model, t.qmodel, t.graph, cal.measure, cal.float_run, io, outputs_only=True)[1]
    return t.outputs


def _figure(goal: Goal, qm: Model) -> dict:
    """The task's figure of a judged model, for the step's record: {"task_metric": name, "task_figure": value}."""
    record = goal.record(qm)
    if not record or not record.get("judged"):
        return {}
    name = next(iter(record.get("goal") or {}), None)
    value = (record.get("metrics") or {}).get({"detections": "kept_fraction"}.get(name, name))
    return {"task_metric": name, "task_figure": value} if name is not None else {}


def _op_macs(cal: Calibration) -> list[int]:
    run = cal.float_run
    return list(run.op_macs()) if hasattr(run, "op_macs") else []


def _not_int8(widened: dict, macs: list[int], base_excluded: set[int]) -> int:
    """MACs no longer in int8: the widened ops' and the ops kept float32 before the search."""
    return sum(macs[i] for i in set(widened) | set(base_excluded) if i < len(macs))


def _give_back_heavy(best: _Trial, macs: list[int], base_excluded: set[int], trial, kept: Guarded,
                     holds=lambda result: not result.short) -> _Trial:
    """The widened ops that carry at least ``GIVE_BACK_SHARE`` of the MACs go back to int8, the heaviest first, as
    many as keep the goal: all of them in one build when that holds, else the longest run of the heaviest that
    holds, by bisection, then the next ``GIVE_BACK_SINGLES`` heaviest one by one (what users of TFLite's converter get: the convolutions integer, the small ops that lose
    the task float)."""
    total = sum(macs) or 1
    heavy = sorted((i for i in best.widened if i < len(macs) and macs[i] >= GIVE_BACK_SHARE * total),
                   key=lambda i: -macs[i])
    if not heavy:
        return best

    def without(ops) -> dict:
        return {i: k for i, k in best.widened.items() if i not in set(ops)}

    every = trial(without(heavy), f"heaviest {len(heavy)} widened op(s) back in int8", len(heavy))
    if holds(every):
        kept.search["given_back"] = len(heavy)
        return every
    lo, hi = 0, len(heavy)  # giving back heavy[:lo] holds, heavy[:hi] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        result = trial(without(heavy[:mid]), f"heaviest {mid} widened op(s) back in int8", mid)
        if not holds(result):
            hi = mid
        else:
            lo, best = mid, result
    # heavy[lo] loses the goal with the ones before it back in int8; the next heaviest are tried one by one
    back = list(heavy[:lo])
    for i in heavy[lo + 1:lo + 1 + GIVE_BACK_SINGLES]:
        result = trial(without(back + [i]), f"widened op {i} back in int8", len(back) + 1)
        if holds(result):
            back, best = back + [i], result
    kept.search["given_back"] = len(back)
    kept.missed_back = set(heavy[lo:lo + 1 + GIVE_BACK_SINGLES]) - set(back)
    return best


def _holds_with_margin(goal: Goal, result: _Trial, ceiling: float | None = None) -> bool:
    """A give-back holds when the goal is met with room: the task's figure at least ``GIVE_BACK_MARGIN`` of the way
    from its goal to the best the search can reach -- ``ceiling``, the every-op-widest model's own figure (perfect,
    1.0, when not known or above it) -- (detections kept >= 0.95 for a goal of 0.9 when widening every op keeps them
    all; >= 0.8375 for a goal of 0.8 when it keeps 0.875: a margin toward perfect there asked more than widening
    reaches), or every output ``GIVE_BACK_MARGIN_DB`` above the SNR threshold. Giving back trades accuracy for MACs
    on the few samples the task is judged on; at the goal's very edge the model kept is no longer kept on other
    images (measured: YOLO-like, 0.92 on the 4 held-back images, 0.86 on the 12 evaluation ones). A figure that
    counts judged items (strings, detections, top-1 rows: ``_judged_items``) must also meet the goal with one item
    fewer kept: on 4 held-back text lines 4 of 4 is the figure's last step, and the rec-like stand-in's give-back
    that kept 4 of 4 there kept 15 of 20 evaluation lines (goal 0.8)."""
    if result.short:
        return False
    record = goal.record(result.qmodel)
    if record is not None and record.get("judged"):
        figure = _figure(goal, result.qmodel)
        aim = (record.get("goal") or {}).get(figure.get("task_metric"))
        if aim is None or figure.get("task_figure") is None:
            return True
        best = 1.0 if ceiling is None else min(1.0, max(float(ceiling), aim))
        items = _judged_items(record, figure["task_metric"])
        if items and figure["task_figure"] - 1.0 / items < aim:
            return False
        return figure["task_figure"] >= aim + GIVE_BACK_MARGIN * (best - aim)
    return result.outputs is None or worst(result.outputs) >= goal.min_snr + GIVE_BACK_MARGIN_DB


def _judged_items(record: dict, metric: str) -> int | None:
    """How many items a judged task's figure counts (the float model's detections; the samples' strings or top-1
    rows), or None for a figure that counts none (a map's IoU)."""
    if metric == "detections":
        return (record.get("metrics") or {}).get("float_detections")
    return record.get("samples") if metric in ("strings", "top1") else None


def _narrow_to_int16(model: Model, best: _Trial, rule, trial, kept: Guarded,
                     holds=lambda result: not result.short) -> _Trial:
    """The ops widened to float32 that the target also runs in int16x8 (``rule``'s first choice) go to int16x8 in one
    build, kept when the goal still holds: int16 activations before float."""
    sg = model.subgraphs[0]
    narrower = {i: "int16" for i, k in best.widened.items()
                if k == "float32" and rule(model.op_name(sg.operators[i]))[0] == "int16"}
    if not narrower:
        return best
    result = trial({**best.widened, **narrower}, f"{len(narrower)} float32 op(s) to int16x8")
    kept.search["int16_instead_of_float32"] = holds(result)
    return result if kept.search["int16_instead_of_float32"] else best


INT16_COST = 0.5  # a MAC in int16x8 against one in float32 when two widenings are compared (``_weighted_cost``):
# int16x8 keeps the weights int8 (a quarter of float32's bytes) and its activations take half of float32's


def _weighted_cost(widened: dict, macs: list[int], base_excluded: set[int]) -> float:
    """The MACs a widening takes out of int8, a float32 MAC counted whole and an int16x8 one ``INT16_COST``: the
    search keeps the cheaper of two widenings that both meet the goal (int16 activations before float32)."""
    kinds = {**{i: "float32" for i in base_excluded}, **widened}
    return sum(macs[i] * (INT16_COST if k == "int16" else 1.0) for i, k in kinds.items() if i < len(macs) and k)


def _weights_first(model: Model, order: list[int], wanted: dict, state: dict, rule, trial, cal: Calibration,
                   kept: Guarded, io: str, macs: list[int], holds):
    """On a target that runs both int16x8 and float32: every op of ``order`` at int16x8 where the target takes it
    (float32 where it does not), and, short of the goal there, the weighted ops whose int8 weights alone cost the
    outputs the most per MAC that float32 adds (``weight_noise``: int16x8 keeps weights and PRELU alphas int8) go
    float32, the shortest such prefix that meets the goal with room (``holds``: 1 dB over it; at the goal's edge on
    the 4 held-back images palm fell 0.4 dB short on others) found by bisection. None when no op of ``order`` has an int16x8 type or even every weighted op
    in float32 misses the goal. The ranking and the prefix go to ``kept.search["weights_first"]``."""
    from converters.quantize.weight_noise import weight_noise

    sg = model.subgraphs[0]
    floor = {i: "int16" if wanted[i] == "float32" and rule(model.op_name(sg.operators[i]))[0] == "int16"
             else wanted[i] for i in order}
    if all(floor[i] == wanted[i] for i in order):
        return None
    base = {**state, **floor}
    at_int16 = trial(base, "every op at int16x8 where the target takes it")
    record = kept.search["weights_first"] = {
        "int16_floor_worst_snr_db": worst(_outputs(model, at_int16, cal, io)), "int16_floor_met": not at_int16.short}
    if holds(at_int16):
        return at_int16
    started = time.monotonic()
    noise = weight_noise(model, [i for i in order if floor[i] == "int16"], cal.measure, cal.float_run)
    record["ranking_seconds"] = round(time.monotonic() - started, 3)
    # the most noise removed per MAC that float32 adds over int16x8 first (a PRELU's alpha costs no MAC): the
    # bisection's prefix then holds the cheapest set that removes enough; a floor of 1% of the mean op's MACs
    # keeps an op of no MACs and no noise from ranking first
    extra = {i: (1.0 - INT16_COST) * (macs[i] if i < len(macs) else 0) for i in noise}
    floor_macs = 0.01 * (sum(extra.values()) / len(extra) if extra else 0.0) + 1.0
    ranked = sorted(noise, key=lambda i: -noise[i] / (extra[i] + floor_macs))
    record["ranked"] = [{"op_index": i, "output": sg.tensors[sg.operators[i].outputs[0]].name,
                         "snr_db_int8_weights_alone": _snr(noise[i])} for i in ranked[:8]]
    lo, hi = 0, len(ranked)  # ranked[:lo] in float32 is short, ranked[:hi] meets

    def with_float(k: int) -> dict:
        return {**base, **{i: wanted[i] for i in ranked[:k]}}

    best = trial(with_float(hi), f"weights first: every weighted op float32 ({hi})", hi)
    if not holds(best):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        result = trial(with_float(mid), f"weights first {lo}..{hi} of {len(ranked)}", mid)
        if not holds(result):
            lo = mid
        else:
            hi, best = mid, result
    record.update(prefix=hi, of=len(ranked), float32=sorted(ranked[:hi]))
    return best


def _snr(noise: float) -> float:
    return math.inf if noise <= 0 else -10.0 * math.log10(noise)


def _escalation_reasons(model: Model, kept: Guarded, state: dict, order: list[int], rule) -> None:
    """Why each op the escalation widened is widened (``kept.why``, the report's reasons)."""
    sg = model.subgraphs[0]
    how = kept.search.get("order")
    in_order = set(order)
    for i, kind in kept.widened.items():
        if i in kept.why and state.get(i) == kind:
            continue
        if op_table.row(model.op_name(sg.operators[i])).quant.startswith("same:") and i in in_order:
            why = "carries a float32 producer's value (kept float between float ops, not requantized)"
        elif how == "weights first" and kind == "float32" and i in set(kept.search["weights_first"]["float32"]):
            first = kept.search["weights_first"]
            why = (f"its int8 weights cost the outputs the most per MAC (int16x8 keeps them int8): in the shortest prefix "
                   f"of that ranking that meets the goal ({first['prefix']} of {first['of']}, by bisection)")
        elif how == "weights first":
            why = ("int16x8 where the target takes it (float32 where not): int8 activations miss the goal"
                   if kind == "int16" else "every op at int16x8 where the target takes it, float32 where not")
        elif i in kept.missed_back:
            why = "tried back in int8 (one of the heaviest): the goal was missed"
        elif how == "nearest the outputs":
            why = (f"in the shortest run of ops before the outputs that meets the goal ({kept.search['prefix']} "
                   f"of {kept.search['of']}, by bisection)")
        elif how == "sensitivity":
            why = (f"in the shortest prefix of the error ranking that meets the goal ({kept.search['prefix']} of "
                   f"{kept.search['of']}, by bisection)")
        else:
            why = "every op at its widest type: the goal is missed with less"
        if kind == "int16" and kept.search.get("int16_instead_of_float32"):
            why += "; int16x8 keeps the goal (int16 activations before float32)"
        kept.why[i] = why


def limiting_ops(model: Model, kept: Guarded, rule) -> list[tuple[int, str]]:
    """The model stays short: (op index, why) of the ops that keep it so, by the error each adds (at most 8): ops
    the target cannot widen, ops already at their widest type (int16x8 on an integer-only target), and ops left
    in int8."""
    sg = model.subgraphs[0]
    found = []
    for i in sensitive_ops(model, kept.layers, set()):
        kind = kept.widened.get(i)
        if kind == "float32":
            continue
        if i in kept.cannot:
            found.append((i, kept.cannot[i]))
        elif kind == "int16" and _widest(model, i, rule) == "int16":
            found.append((i, "int16x8 is the widest type the target takes for it"))
        elif kind is None:
            why = rule(model.op_name(sg.operators[i]))[1]
            found.append((i, why or "left in int8"))
        if len(found) >= 8:
            break
    return found


def _share(part: int, total: int) -> str:
    return f"{100.0 * part / total:.1f}%" if total else "100%"


def _before_after(search: dict) -> str:
    """``; detections 0.24 -> 0.92 (goal), worst output SNR 13.0 -> 24.6 dB``: the goal's figure before the search
    and for the model kept."""
    before, after = search.get("before") or {}, search.get("after") or {}
    parts = []
    if before.get("task_figure") is not None and after.get("task_figure") is not None:
        parts.append(f"{before['task_metric']} {before['task_figure']:.3g} -> {after['task_figure']:.3g}")
    if before.get("worst_snr_db") is not None and after.get("worst_snr_db") is not None:
        parts.append(f"worst output SNR {before['worst_snr_db']:.1f} -> {after['worst_snr_db']:.1f} dB")
    return ("; " + ", ".join(parts)) if parts else ""


def widen_cost(model: Model, i: int, kind: str, macs: list[int]) -> dict:
    """What widening op i to ``kind`` costs: constant bytes (weights stay int8 in int16x8, biases int32 ->
    int64, other constants int8 -> int16; float32: everything 4 bytes), the extra bytes of its outputs
    (activation memory), and its MACs (no longer int8)."""
    sg = model.subgraphs[0]
    op = sg.operators[i]
    act = sum(int(np.prod(sg.tensors[t].shape, dtype=np.int64)) for t in op.outputs if is_float(model, t))
    return {"bytes": const_bytes(model, i, kind), "activation_bytes": act * (1 if kind == "int16" else 3),
            "macs": macs[i]}


def const_bytes(model: Model, i: int, kind: str) -> int:
    """The bytes widening op i to ``kind`` adds to the model's constants: int16x8 keeps the weights int8, biases
    int32 -> int64, other constants int8 -> int16; float32 makes every constant 4 bytes (an int32 bias stays 4)."""
    sg = model.subgraphs[0]
    op = sg.operators[i]
    row = op_table.row(model.op_name(op))
    wi, bi, _ = row.weights if is_weighted(row) else (-1, -1, 0)
    const = 0
    for k, t in enumerate(op.inputs):
        if t < 0 or not is_float(model, t) or not is_const(model, t):
            continue
        n = int(np.prod(sg.tensors[t].shape, dtype=np.int64))
        if kind == "int16":
            const += 4 * n if k == bi else 0 if k == wi else n
        else:
            const += 0 if k == bi else 3 * n
    return const


def guard_report(model: Model, kept: Guarded, macs: list[int], min_snr: float, precision: str, held: int,
                 measured: int, no_rule=(), where: str = "") -> dict:
    """``report["guard"]``: each output's SNR, whether all meet ``min_snr``, what was widened and at what cost,
    what could not be widened and why."""
    sg = model.subgraphs[0]
    widened = kept.widened
    total = sum(macs)
    wide_macs = sum(macs[i] for i in list(widened) + [i for i, _ in no_rule])
    macs16 = sum(macs[i] for i, k in widened.items() if k == "int16")
    outputs = kept.outputs
    missing = short(outputs, min_snr)

    def named(i: int) -> dict:
        op = sg.operators[i]
        return {"op_index": i, "op": model.op_name(op), "output": sg.tensors[op.outputs[0]].name}

    if widened and kept.base_bytes:
        from edge_sdk.model import write_model

        grown = len(write_model(kept.qmodel)) - kept.base_bytes  # the widened model's growth, serialized
    else:
        grown = 0
    count = count_widened(["float32"] * len(no_rule) + list(widened.values()))
    if count["ops"]:  # the final count: the report's summary prints the same record
        log.stage(f"widened {widened_text(count)}; {_share(total - wide_macs, total)} of MACs stay int8"
                  + _before_after(kept.search))
    return {
        "min_snr_db": float(min_snr), "precision": precision, "samples": measured, "held_back": held > 0,
        "widened_count": count,
        "outputs": outputs, "met": not missing,
        "short": [{"name": o["name"], "snr_db": o["worst_snr_db"], "short_db": min_snr - o["worst_snr_db"],
                   **({"part": min(o["parts"], key=lambda p: p["snr_db"])["input"]}
                      if o.get("parts") and min(p["snr_db"] for p in o["parts"]) < o["snr_db"] else {})}
                  for o in missing],
        "widened": [{**named(i), "to": "float32", "reason": why, "cost": widen_cost(model, i, "float32", macs)}
                    for i, why in no_rule]
                   + [{**named(i), "to": kind, "reason": kept.why.get(i, "loses SNR"),
                       "cost": widen_cost(model, i, kind, macs)} for i, kind in widened.items()],
        "cannot_widen": [{**named(i), "reason": why} for i, why in kept.cannot.items()],
        "all_widened": kept.all_widened,  # every op at the widest type the target takes (all-float32 on a float one)
        "limiting": [{**named(i), "reason": why} for i, why in kept.limiting],
        "steps": kept.steps,  # each build the guard measured, with its time
        "widening_for": where,
        "cost": {"bytes": grown, "macs_total": total, "macs_not_int8": wide_macs, "macs_int16": macs16,
                 "macs_float32": wide_macs - macs16},
        "tried_widening": kept.tried,
        "search": {**kept.search, "int8_mac_share": 1.0 - wide_macs / total if total else 1.0},
        **({"flash": {k: v for k, v in kept.flash.items() if k != "why"}
                     | {"held": [{**named(i), "reason": why} for i, why in (kept.flash.get("why") or {}).items()]}}
           if kept.flash else {}),
    }
