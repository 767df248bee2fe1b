"""Post-training quantization of a float ``Model``: int8, int16x8, fp16 and dynamic-range.

    result = quantize(model, calibration, mode="int8", method="minmax", io="int8", exclude=())
    result.model        # the quantized Model (write it with edge_sdk.model.write_model)
    result.report       # ranges/scales per tensor, calibration summary, per-layer error worst first

Modes:

- "int8": full-integer. Weights of the weighted layers (CONV_2D / FULLY_CONNECTED / TRANSPOSE_CONV per output
  channel, quantized_dimension 0; DEPTHWISE_CONV_2D's along its channel axis 3) are symmetric int8 over [-127, 127],
  zero point 0. Activations are per-tensor asymmetric int8 from the calibration ranges (always containing zero).
  Biases are int32 with scale input_scale * weight_scale (a weight scale is raised where a bias would overflow).
  Every other op follows its quantization rule (``converters.quantize.rules``): fixed output quantization where
  TFLM's kernels need it (SOFTMAX / LOGISTIC 1/256 zp -128, TANH 1/128 zp 0, LOG_SOFTMAX 16/256 zp 127), the
  input's quantization for pools, reshapes, transposes, pads, slices, gathers, resizes, REDUCE_MAX, one shared
  quantization for CONCATENATION / PACK / MAXIMUM / MINIMUM (an input quantized differently is requantized).
  ``io="int8"`` gives integer model inputs/outputs (int16 ones in int16x8 mode); ``io="float32"`` keeps
  float I/O with QUANTIZE after each input and DEQUANTIZE before each output.
  The result is verified by preparing it in edge-sdk's interpreter (whose kernels check what TFLM checks).
  Its integer outputs equal TFLM's bit for bit; LiteRT's pip build requantizes with a single rounding and
  may differ by one step on near-ties (tests/test_quantize.py shows it).
- "int16x8": the same with int16 activations (symmetric, zero point 0) and int64 biases; fixed outputs
  SOFTMAX / LOGISTIC / TANH at 1/32768 zp 0.
- "fp16" and "dynamic" (int8 weights, float activations: LiteRT's hybrid kernels, which edge-sdk's interpreter and
  C runtime run too; TFLM has none): ``converters.quantize.weights_only``. A
  constant float16 cannot hold (an element past 65504, or one that under-flows, like a 1e-10 log epsilon) stays
  float32 (``report["kept_float32"]``). Both are measured by the accuracy guard like int8 (``report["guard"]``,
  nothing to widen): both in edge-sdk's interpreter (LiteRT's reference kernels where it refuses the model).

Given ranges (``converters.quantize.given``): a quantized ONNX (QDQ) source's activation ranges, recorded by the
importer on the float tensors, replace the observed ones, so the int8 model keeps the source's scales and zero
points; only the other activations are calibrated, and with every range given no calibration data is needed (the
guard then measures on synthetic samples, uniform over each input's range: ``report["guard"]["synthetic"]``).

A quantized op whose divisor (the row's ``divisor`` input) may equal its zero point at run time -- LiteRT's int8
DIV refuses that at invoke -- stays float32 (``rules.zero_divisors``; in the notes and the guard's ``widened``).

Run-time control flow (``converters.quantize.subgraphs``): int8 / int16x8 quantize the subgraphs of IF / WHILE with
the main graph's rules. Calibration observes every subgraph call (a branch sees the values that reach it, a WHILE's
body every iteration); a value crossing a call has one scale in caller and callee; a subgraph calibration never
reached stays float32 inside, between a DEQUANTIZE of its inputs and a QUANTIZE of its outputs at the caller's
scales. The guard measures the whole model; widening an IF / WHILE to float32 keeps its subgraphs float32.
fp16 and dynamic convert every subgraph's constants by the main graph's rules (``weights_only``); their guard
runs the whole model and names the subgraphs its samples never ran (``report["guard"]["unreached"]``).

Every per-op fact the quantizer uses is a field of the op's row in ``edge_sdk.runtime.op_table``: its rule
(``weights``, ``quant``, ``quant_fixed``), its quantized op versions (``q_versions``), its int16 kernels (``int16``,
``int16_missing``), whether it joins parts (``join``) or only moves values (``moves_values``), its dynamic-range
weights (``dynamic``).

The steps, a module each: cross-layer equalization of conv / depthwise -> conv pairs
(``converters.passes.equalize``), calibration (``calibrate``: streaming over the samples, ranges by "minmax" /
"percentile" / "mse", or "auto": each set measured at the outputs, the best kept), joins of very different ranges
(``joins``), the integer graph (``rules``, built in a ``builder.QuantGraph``), bias correction (``bias``, then
``sequential``), the accuracy guard and precision="auto" widening (``measure``, ``widen``), the report's tables
(``summary``).

``exclude`` names operators (op index, or the name of one of their output tensors) that stay float, with
DEQUANTIZE before and QUANTIZE after them. Ops the quantizer has no rule for are reported all at once as a
``ConversionError``; pass them in ``exclude`` to keep them float.

The report's ``layers`` list has, for every quantized activation, the SNR (dB) and cosine similarity of its
dequantized value against the float model's, worst SNR first; a join's output also part by part
(``part_of``, ``input``). It is measured on the held-back samples (``holdout``) or, without any, on the
calibration samples. ``report["guard"]`` has each model output's SNR, whether all meet ``min_snr``, what
``precision="auto"`` widened (ops without an integer rule to float32 first, then round by round the ops that add
the most error themselves, their worst channel's included; when the rounds stall, every op at the widest type the
target takes -- all float32 at worst on a float target -- and the smallest prefix of that order that meets
``min_snr``, by bisection; each then tried back in int8) and to which type, chosen by the target
(``widening_rule``), the cost, each measured step with its time (``steps``), and when still short the ops that
keep it so (``limiting``). One count of widened ops (``widened_count``) in every line that gives one.
A widened op's model output stays int16 with integer I/O.

Speed on a float-first target (``widen_to = "float32"``: the Linux boards, LiteRT with XNNPACK): the rows' ``speed``
facts (``converters.quantize.speed``) send to float32, before calibration, the ops whose int8 kernel is slower than
float32 there (PRELU, depthwise) where that saves more than the QUANTIZE / DEQUANTIZE it adds (``report["speed"]
["widening"]``: each group's estimate; these ops are not the guard's widening), and estimate the written model's
time against its float source (``report["speed"]["estimate"]``, a note). An int8 model not estimated clearly
faster (at most ``CLEARLY_FASTER`` of the source's time) is not written unless ``keep_int8``: the float source is
(``report["float_source"]``, as when int8 does not keep the model), with the source's float16 weights when it stored
them so (``float16_weights``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from converters.passes.equalize import equalize as equalize_pairs
from converters.passes.equalize import find_pairs as find_equalizable
from converters.quantize.bias import PatchMeans, corrected, restore_biases
from converters.quantize.builder import drop_unused_buffers, verify
from converters.quantize.calibrate import MAX_VALUES, MEASURE_CACHE_BYTES, MEASURE_SAMPLES, CachedRunner, calibrate
from converters.quantize.given import (
    clear_given_ranges,
    covered_ranges,
    given_ranges,
    synthetic_samples,
    uncovered,
)
from converters.quantize.joins import JOIN_LEVELS, keep_wide_joins
from converters.quantize.measure import layer_errors, worst
from converters.quantize.migrate import channel_maxima
from converters.quantize.migrate import prepare as prepare_int8
from converters.quantize.sequential import downstream, has_candidates, sequential_corrected
from converters.quantize.rules import check_ops, integer_graph, op_label, resolve_exclude, zero_divisors
from converters.quantize.rounding import rounded, rounded_note
from converters.quantize.subgraphs import Plan as SubgraphPlan
from converters.quantize.subgraphs import attach as attach_subgraphs
from converters.quantize.subgraphs import calibrate_subgraphs, check_calls, check_subgraph_ops, has_control_flow, unify
from converters.quantize.subgraphs import subgraph_runs, unreached_notes
from converters.quantize.summary import float_output_notes, int16_output_notes, rule_notes, tensor_table, weight_table
from converters.quantize.weights_only import dynamic_graph, fp16_graph
from converters.quantize.widen import (
    MAX_PRUNE,
    Prepared,
    MAX_WIDEN_ROUNDS,
    STALE_ROUNDS,
    distribution_tails,
    float32_fallbacks,
    guard,
    guard_report,
    widened_text,
    widening_rule,
)
from edge_sdk import log
from edge_sdk.errors import ConversionError, ModelError
from edge_sdk.model.types import Model

MODES = ("int8", "int16x8", "fp16", "dynamic")
PRECISIONS = ("int8", "auto")
MIN_SNR_DB = 30.0  # the accuracy guard's default: every output's SNR against the float model
METHODS = ("minmax", "percentile", "mse", "auto", "least-error")
SYNTHETIC_SAMPLES = 16  # without data (every range given by the source): the guard measures on this many
SEQUENTIAL_SAMPLES = 16  # calibration samples the sequential bias correction fits on (never the held-back ones)
AUTO_MARGIN_DB = 0.5  # method "auto" keeps min / max unless a clipped set's worst output SNR is this much higher


@dataclass
class QuantizationResult:
    model: Model
    report: dict = field(default_factory=dict)

    def tflite(self) -> bytes:
        from edge_sdk.model import write_model

        return write_model(self.model)


def quantize(model: Model, calibration=None, mode: str = "int8", method: str = "minmax", io: str = "int8",
             exclude=(), percentile: float = 99.99, limit: int | None = None, seed: int = 0,
             measure_error: bool = True, holdout: int = 0, precision: str = "int8",
             min_snr: float = MIN_SNR_DB, max_rounds: int = MAX_WIDEN_ROUNDS, target=None, equalize: bool = True,
             bias_correction: bool = True, task_judge=None, keep_int8: bool = False,
             float16_weights: bool = False) -> QuantizationResult:
    """Quantize a float model (see the module docstring). ``calibration`` is anything
    ``converters.calibration.calibration_data`` reads (needed for int8 / int16x8 unless the model's given ranges
    cover every activation; fp16 / dynamic: what the guard measures on, synthetic samples without it).

    holdout: at most this many calibration samples (every 5th) are held back from calibration and used to
    measure the result (the per-layer table and ``report["guard"]``); 0 measures on the calibration samples.
    precision: "int8" (every op in the mode's type) or "auto" (the most sensitive ops widened, round by
    round, until every output's SNR reaches ``min_snr`` dB or ``max_rounds`` rounds are spent): to int16x8
    where the target's runtime has the op in int16, else to float32 where the target runs float32, else not
    at all (``report["guard"]["cannot_widen"]``); see ``widening_rule``. ``target``: a device profile name,
    .toml path or Profile (None: the Python interpreter and the C runtime both).
    method "auto": the activation ranges by min / max, by the least quantization error (MSE) and by percentiles
    (``percentile`` and 99.9), each set measured at the outputs; the model keeps min / max unless another set's
    worst output SNR is ``AUTO_MARGIN_DB`` higher, then the best (``report["calibration"]["chosen"]``; the notes
    list every set's SNR).
    equalize: cross-layer equalization of conv / depthwise -> conv pairs first (``converters.passes.equalize``;
    ``report["equalized"]``). bias_correction: each int8 layer's bias loses the mean output shift its weights'
    rounding causes on the calibration data (``converters.quantize.bias``; ``report["bias_corrected"]``), then,
    layer by layer in graph order, the mean offset the int8 model itself has at its output, with the layers
    before it corrected (``converters.quantize.sequential``, on the first ``SEQUENTIAL_SAMPLES`` calibration
    samples; ``report["bias_sequential"]``; precision "int8" only for now: under precision "auto" the widening
    search ranked and gave back ops worse on the corrected cascade). Neither
    for a source that gives its own ranges (QDQ): its scales are kept as they are.
    task_judge: ``judge(qmodel) -> record`` (``converters.evaluate.judge_task``'s): with precision="auto" the search
    stops widening once the task is kept where the task could be judged (``widen.Goal``), not only at ``min_snr``.
    On a float-first target (``widen_to = "float32"``) the op table's speed facts (``converters.quantize.speed``)
    widen with precision "auto" the ops whose int8 kernel is slower than float32 there where that saves more than
    the conversions it adds, and estimate the written model's time against the float source's
    (``report["speed"]``, a note); an int8 model not estimated clearly faster (``CLEARLY_FASTER``) is not written
    -- the float source is (``report["float_source"]``) -- unless ``keep_int8`` (the user asked for int8 itself).
    float16_weights: the source stored its float weights as float16 (a float .tflite behind DEQUANTIZE): a float
    source written in place of the int8 model keeps them float16.
    """
    _check_settings(model, mode, method, io, percentile)
    source = model  # written as it is when int8 keeps too little of it on a float-first target
    excluded = resolve_exclude(model, exclude)
    report = _new_report(model, mode, io, excluded)
    if mode in ("fp16", "dynamic"):
        return _float_weights(model, mode, excluded, calibration, measure_error, min_snr, limit, seed, report)
    if precision not in PRECISIONS:
        raise ModelError(f"quantize: precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    act = "INT8" if mode == "int8" else "INT16"
    io = "int8" if io == "int16" else io  # "integer I/O": the activation type
    if target is not None:  # loaded once: the widening rule, the flash budget and the float fallback read it
        from edge_sdk.targets.profiles import load_profile

        target = load_profile(target)
    # which ops the target cannot take in the mode's type (float32 by rule) and which stay float32 at the end
    rule, rule_target, no_rule, tails = _float_by_rule(model, act, excluded, precision, target, mode)
    # float32 for speed (int8 slower there): kept float like an excluded op, recorded in report["speed"], not the
    # guard's widening (what accuracy cost)
    excluded = excluded | _faster_in_float(model, mode, io, excluded | {i for i, _ in no_rule}, precision, target,
                                           rule, report)
    excluded = excluded | {i for i, _ in no_rule}
    check_ops(model, act, excluded)
    sub_no_rule = check_subgraph_ops(model, act, precision == "auto") if has_control_flow(model) else {}
    report["equalized"], report["bias_corrected"], report["bias_sequential"], report["rounded"] = [], [], [], []
    if given_ranges(model):  # a QDQ source's own scales and zero points are kept as they are
        equalize = bias_correction = False
    if equalize:
        model, calibration = _equalized(model, report, calibration, limit, holdout)
        model, calibration = prepare_int8(model, calibration, limit, holdout, report)  # quantize/migrate.py

    cal, patches, plan = _calibrated(model, calibration, mode, act, method, percentile, limit, seed, holdout,
                                     excluded, bias_correction, precision, sub_no_rule, report)
    report["joins"], excluded, wide16 = keep_wide_joins(model, cal.ranges, act, io, excluded, report["notes"])
    for i, why in tails:
        report["notes"].append(f"{op_label(model, i)} stays float32 (a float output): {why}")
    log.stage(f"quantizing to {mode}")
    build = _Build(model, cal, act, io, excluded, wide16, tails, plan)
    first = _corrected(model, build, build(excluded), cal, patches, excluded, report)
    if cal.error_ranges is not None:  # method "auto": min / max or a clipped set of ranges, as measured
        first, chosen = _choose_ranges(model, build, first, cal, excluded, io)
        report["calibration_choice"] = chosen
        report["notes"].append(f"activation ranges: {chosen['chosen']} (worst output SNR: "
                               + "; ".join(f"{k} {v:.1f} dB" for k, v in chosen["worst_snr_db"].items()) + ")")
    zero_div = _zero_divisors_float(model, first[1], cal, rule, target, mode, report)
    if zero_div:  # never written: a quantized DIV whose divisor may be its zero point stays float32
        no_rule = no_rule + zero_div
        excluded = build.excluded = excluded | {i for i, _ in zero_div}
        build.tails |= {i for i, _ in zero_div}  # float32 as a widened op is: a model output it gives stays float32
        first = build(excluded)
    kept = None
    if measure_error or precision == "auto":
        kept = _search(model, build, first, cal, excluded, rule, precision, min_snr, max_rounds, io, no_rule,
                       task_judge, build.inputs, report, build.prepared, _flash_budget(target, precision))
        first = kept.qmodel, kept.graph
        report["notes"] += int16_output_notes(model, kept.graph, io, kept.w16) + float_output_notes(
            model, kept.graph, io)
        report["guard"] = guard_report(model, kept, cal.float_run.op_macs(), min_snr, precision, cal.held_back,
                                       len(cal.measure), no_rule, rule_target)
        report["guard"]["synthetic"] = cal.synthetic
        report["notes"] += _search_notes(report["guard"])
    result = _result(model, *first, cal, method, percentile, kept.layers if kept and measure_error else None, report)
    why_float = None
    if kept and precision == "auto" and _float_first(target) and \
            report["guard"]["search"]["int8_mac_share"] < KEEP_INT8_MAC_SHARE:
        why_float = "accuracy"
    estimate = _speed_estimate(result.model, source, target, report)
    if why_float is None and estimate and estimate["ratio"] > CLEARLY_FASTER:
        if precision == "auto" and mode == "int8" and not keep_int8:
            why_float = "speed"
        elif estimate["slower"]:
            report["notes"].append(_slower_note(estimate, mode, precision))
    return _float_source(source, result, why_float, float16_weights) if why_float else result


def _float_weights(model: Model, mode: str, excluded: set, calibration, measure_error: bool, min_snr: float, limit,
                   seed: int, report: dict) -> QuantizationResult:
    """fp16 / dynamic-range: the weights change type, the activations stay float32; the guard measures it."""
    result = _fp16(model, report) if mode == "fp16" else _dynamic(model, excluded, report)
    if measure_error:
        report["guard"] = _float_mode_guard(model, result.model, mode, calibration, min_snr, limit, seed)
        if report["guard"].get("measured") is False:
            report["notes"].append(report["guard"]["not_measured"])
        report["notes"] += report["guard"].get("unreached", [])
    return result


def _calibrated(model: Model, calibration, mode: str, act: str, method: str, percentile: float, limit, seed: int,
                holdout: int, excluded: set, bias_correction: bool, precision: str, sub_no_rule: dict, report: dict):
    """The float activations' ranges: observed on ``calibration`` (synthetic samples in the given ranges without
    it), the source's given ranges kept, one range per value crossing a subgraph call. -> (Calibration, the
    bias correction's patch means or None, the subgraphs' plan or None). With ``bias_correction`` the first
    calibration samples are kept for the sequential correction where it applies (precision "int8", no subgraphs,
    a layer to fit: see ``quantize``'s docstring)."""
    # The source's own activation ranges (a QDQ graph's pairs) replace the observed ones; without calibration
    # data every activation needs one, and the guard measures on synthetic samples in the inputs' ranges.
    given = given_ranges(model)
    covered = covered_ranges(model, given, act)
    synthetic = calibration is None
    if synthetic:
        calibration, holdout = _synthetic_calibration(model, mode, given, covered, excluded, seed), 0
    seen = None
    if has_control_flow(model):  # IF / WHILE subgraphs: every call observed (a one-shot source comes back as a list)
        seen, calibration = calibrate_subgraphs(model, calibration, limit, holdout)
    patches = PatchMeans(model, grams=act == "INT16") if bias_correction else None
    sequential = bias_correction and precision == "int8" and seen is None and has_candidates(model)
    fit = SEQUENTIAL_SAMPLES if sequential else 0
    cal = calibrate(model, calibration, act, method, percentile, limit, seed, holdout, patches, fit=fit)
    cal.float_run = CachedRunner(cal.float_run, MEASURE_CACHE_BYTES)  # every measurement compares with it
    if given:
        _keep_given_ranges(cal, covered, synthetic, report)
    cal.synthetic = synthetic
    plan = None
    if seen is not None:  # one range per value crossing a call, in the main graph's range sets and the subgraphs'
        sub_ranges = seen.ranges()
        unify(model, [cal.ranges] + list((cal.error_ranges or {}).values()), sub_ranges)
        plan = SubgraphPlan(model, sub_ranges, seen.runs, act, sub_no_rule)
        report["notes"] += plan.notes()
    return cal, patches, plan


class _Build:
    """build(excluded, w16) -> (integer model, its QuantGraph): the ops in ``excluded`` float32, those in ``w16``
    int16x8, the rest in the mode's type, verified and prepared (``prepared``: the task judge runs it there).
    What the builds share: the graph's ``source`` (bias-corrected once measured; float ops keep their own bias),
    ``per_layer`` (the per-layer corrected source, before the sequential corrections) and ``inputs["float"]``
    (model inputs read by float32 ops alone stay float32: the widening search's second try sets it)."""

    def __init__(self, model: Model, cal, act: str, io: str, excluded: set, wide16, tails: list, plan):
        self.model, self.cal, self.act, self.io, self.wide16, self.plan = model, cal, act, io, wide16, plan
        self.excluded = excluded  # the ops float32 by rule or by the user: not "widened by the guard"
        self.tails = {i for i, _ in tails}  # float32 by the guard: they keep float outputs
        self.source, self.per_layer = model, None
        self.inputs = {"float": False}
        self.prepared = Prepared()

    def __call__(self, excl, w16=frozenset()):
        widened = (set(excl) - self.excluded) | self.tails
        biases, moved = self.source, (set(excl) - self.excluded) | set(w16)
        if self.per_layer is not None and moved:
            # the sequential corrections from a widened op on were fitted to its int8 values: those layers keep the
            # per-layer ones (their own int8 weights' shift, still true at int16 or after a float op)
            biases = restore_biases(biases, self.per_layer, downstream(self.model, moved))
        qm, g = integer_graph(restore_biases(biases, self.model, excl), self.cal.ranges, self.act, self.io, excl,
                              self.wide16, w16, widened, self.inputs["float"])
        if self.plan is not None:
            qm = attach_subgraphs(qm, self.model, self.plan)
        qm = drop_unused_buffers(clear_given_ranges(qm))
        self.prepared.hold(qm, verify(qm))
        return qm, g


def _corrected(model: Model, build: _Build, first, cal, patches, excluded: set, report: dict):
    """The bias corrections (each int8 layer's mean output shift from its weights' rounding, then the sequential
    one against the int8 model's own inputs), each rebuilding the model when it corrected a layer -> (model, g)."""
    qmodel, g = first
    if patches is not None and build.act == "INT16" and patches.grams.sums:  # int8 weights under int16 activations
        # rounded by their output error (quantize/rounding.py; why int16x8 only: its docstring)
        build.source, report["rounded"] = rounded(model, g, patches.grams)
        if report["rounded"]:
            qmodel, g = first = build(excluded)
            report["notes"].append(rounded_note(report["rounded"]))
    if patches is not None and patches.layers:
        build.source, report["bias_corrected"] = corrected(model, g, patches, build.source)
        if report["bias_corrected"]:
            qmodel, g = first = build(excluded)
            worst_shift = max(c["max_shift_quanta"] for c in report["bias_corrected"])
            report["notes"].append(f"bias correction: {len(report['bias_corrected'])} layer(s)' biases lose the "
                                   "mean output shift of their int8 weights on the calibration data (up to "
                                   f"{worst_shift:.2g} output quanta)")
    if cal.fitting:  # then each layer against the int8 model's own inputs, the ones before it corrected
        build.per_layer = build.source
        build.source, report["bias_sequential"] = sequential_corrected(build.source, qmodel, g, cal.fitting,
                                                                       cal.float_run.runner, excluded)
        if report["bias_sequential"]:
            first = build(excluded)
            worst_shift = max(c["max_shift_quanta"] for c in report["bias_sequential"])
            report["notes"].append(f"sequential bias correction: {len(report['bias_sequential'])} layer(s)' biases "
                                   "lose the mean output offset the int8 model itself has there (its own inputs, "
                                   f"the layers before corrected) on {len(cal.fitting)} calibration sample(s) (up to "
                                   f"{worst_shift:.2g} output quanta)")
    return first


def _result(model: Model, qmodel: Model, g, cal, method: str, percentile: float, layers, report: dict):
    """The report's tables (calibration, tensors, weights, the per-layer error when measured) and the result."""
    report["notes"] += rule_notes(model, g)
    chosen = report.pop("calibration_choice", None)
    synthetic = cal.synthetic
    report["calibration"] = {"samples": 0 if synthetic else cal.samples, "held_back": cal.held_back,
                             "method": "given" if synthetic else method, "given_ranges": len(cal.given),
                             **({"synthetic_samples": cal.samples} if synthetic else {}),
                             **({"chosen": chosen["chosen"]} if chosen else {}),
                             **({"least_error": cal.least_error} if cal.least_error is not None else {}),
                             **({"percentile": float(percentile)} if method == "percentile" else {})}
    report["tensors"] = tensor_table(model, g, cal)
    report["weights"] = weight_table(qmodel)
    if layers is not None:
        report["layers"] = layers
    return QuantizationResult(qmodel, report)


def _search(model: Model, build, first, cal, excluded: set, rule, precision: str, min_snr: float, max_rounds: int,
            io: str, no_rule: list, task_judge, inputs: dict, report: dict, prepared=None, flash=(None, "", 0)):
    """The accuracy guard (``widen.guard``: measured, and with precision "auto" the widening search). When every
    op is widened and the goal is still missed at integer I/O, the integer inputs lose it (raw audio at int8): a
    second search with the inputs only float32 ops read kept float32 (``inputs["float"]``, which ``build`` reads),
    kept when it reaches the goal."""
    kept = guard(model, build, first, cal, excluded, rule, precision, min_snr, max_rounds, io, no_rule, task_judge,
                 prepared, *flash)
    if precision == "auto" and io != "float32" and kept.all_widened and _still_short(kept, min_snr, task_judge):
        inputs["float"] = True
        again = guard(model, build, build(excluded), cal, excluded, rule, precision, min_snr, max_rounds, io,
                      no_rule, task_judge, prepared, *flash)
        if not _still_short(again, min_snr, task_judge):
            report["notes"].append("int8 model inputs lose the goal even with every op widened: the inputs only "
                                   "float32 ops read are float32")
            return again
        inputs["float"] = False
    return kept


FLASH_RESERVE = 4096  # of the target's flash for the model, kept for what convert adds to it (its manifest)


def _flash_budget(target, precision: str) -> tuple:
    """precision "auto" for a target: (its flash budget for the model in bytes, its name, the part of it kept for
    what convert adds); else (None, "", 0)."""
    if precision != "auto" or target is None:
        return None, "", 0
    from edge_sdk.targets.profiles import load_profile

    prof = load_profile(target)  # a loaded Profile is taken as it is
    return int(prof.flash_model_bytes), prof.name, FLASH_RESERVE


def _float_by_rule(model: Model, act: str, excluded: set, precision: str, target, mode: str):
    """precision "auto": (the widening rule, its target's name, the ops that stay float32 with the reason - ops
    without an integer rule and wide distributions ending the model (``tails``, also returned alone: they keep
    float outputs) -, tails); precision "int8": no rule, no such ops."""
    if precision != "auto":
        return None, "", [], []
    rule, rule_target = widening_rule(target, mode)
    no_rule = float32_fallbacks(model, act, excluded, rule)
    tails = distribution_tails(model, act, excluded | {i for i, _ in no_rule}, rule)
    # the guard counts both among the float32 ops (widened, with the reason)
    return rule, rule_target, no_rule + tails, tails


def _equalized(model: Model, report: dict, calibration, limit, holdout: int):
    """Cross-layer equalization (same function, channels of like range: the per-tensor activation scales crush
    none); with calibration data a pair stays as it was where its scales would spread the activation between its
    ops further (its channel maxima on ``migrate.STAT_SAMPLES`` samples). ``report["equalized"]`` gets every
    equalized pair, the notes one line. Returns (model, the calibration to hand on)."""
    maxima = None
    if calibration is not None:
        firsts = sorted({model.subgraphs[0].operators[i].outputs[0] for i, _, _ in find_equalizable(model)})
        if firsts:
            maxima, calibration = channel_maxima(model, firsts, calibration, limit, holdout)
    model, pairs = equalize_pairs(model, activation_maxima=maxima)
    left = [p for p in pairs if p.get("kept") is False]
    pairs = [p for p in pairs if p.get("kept", True)]
    report["equalized"] = pairs
    if pairs:
        named = [f"{p['first_op']} '{p['first']}' -> {p['second_op']} '{p['second']}' (through {p['through']}: "
                 f"{p['spread_before']:.3g}x -> {p['spread_after']:.3g}x)" for p in pairs[:3]]
        report["notes"].append(
            f"cross-layer equalization of {len(pairs)} pair(s), their channels' weight ranges at most "
            f"{max(p['spread_before'] for p in pairs):.3g}x apart before, "
            f"{max(p['spread_after'] for p in pairs):.3g}x after: " + "; ".join(named)
            + (f"; {len(pairs) - 3} more" if len(pairs) > 3 else ""))
    if left:
        report["notes"].append(
            f"cross-layer equalization left {len(left)} pair(s) as they were: their scales would spread the "
            "activation between the two ops' channels further on the calibration data (e.g. "
            f"'{left[0]['first']}': {left[0]['activation_loss_db'][0]:.1f} -> "
            f"{left[0]['activation_loss_db'][1]:.1f} dB mean channel loss under one scale)")
    return model, calibration


def _synthetic_calibration(model: Model, mode: str, given: dict, covered: dict, excluded: set, seed: int):
    """No calibration data: samples uniform over the inputs' given ranges, when the source gives every
    activation's range (a QDQ graph); otherwise the ModelError naming the activations without one."""
    if not given:
        raise ModelError(f"quantize: mode {mode!r} needs calibration data")
    missing = uncovered(model, covered, excluded)
    if missing:
        names = [model.subgraphs[0].tensors[t].name for t in missing]
        raise ModelError(f"quantize: mode {mode!r} needs calibration data: the source gives the range of "
                         f"{len(given)} activation(s) but not of {len(missing)} ("
                         + ", ".join(f"'{n}'" for n in names[:6]) + (" ..." if len(names) > 6 else "") + ")")
    return synthetic_samples(model, covered, SYNTHETIC_SAMPLES, seed)


def _keep_given_ranges(cal, covered: dict, synthetic: bool, report: dict) -> None:
    """The source's own activation ranges (a QDQ graph's pairs) replace the observed ones, in every range set."""
    cal.ranges.update({t: covered[t] for t in cal.ranges if t in covered})
    for candidate in (cal.error_ranges or {}).values():
        candidate.update({t: covered[t] for t in candidate if t in covered})
    cal.given = {t for t in cal.ranges if t in covered}
    report["notes"].append(
        f"{len(cal.given)} activation range(s) are the source's own (QDQ scales and zero points)"
        + (f", {len(cal.ranges) - len(cal.given)} calibrated" if not synthetic else
           "; no calibration data needed (none given): the accuracy guard measured on "
           f"{SYNTHETIC_SAMPLES} synthetic samples, each input uniform over its given range"))


def _zero_divisors_float(model: Model, g, cal, rule, target, mode: str, report: dict) -> list:
    """The quantized DIVs whose divisor's range holds its zero point ((op, why); LiteRT refuses them at invoke):
    each stays float32 (a note), or, where the target runs no float32 DIV, a ConversionError naming them."""
    zero_div = zero_divisors(model, g, cal.ranges, {t: (st.min, st.max) for t, st in cal.stats.items()})
    if not zero_div:
        return []
    float_rule = rule or widening_rule(target, mode)[0]
    ops = model.subgraphs[0].operators
    no_float = [f"{op_label(model, i)}: {why}, and {float_rule(model.op_name(ops[i]), True)[1]}"
                for i, why in zero_div if float_rule(model.op_name(ops[i]), True)[0] != "float32"]
    if no_float:
        raise ConversionError(f"quantize: {len(no_float)} op(s) would divide by a zero quantum and cannot stay "
                              "float32", no_float)
    for i, why in zero_div:
        report["notes"].append(f"{op_label(model, i)} stays float32: {why}")
    return zero_div


def uncovered_activations(model: Model, mode: str = "int8", exclude=()) -> tuple[int, list[str]]:
    """(how many activation ranges the source gives, the names of the activations it leaves without one):
    int8 / int16x8 need calibration data unless that list is empty (``converters.quantize.given``)."""
    act = "INT8" if mode == "int8" else "INT16"
    given = given_ranges(model)
    missing = uncovered(model, covered_ranges(model, given, act), resolve_exclude(model, exclude))
    return len(given), [model.subgraphs[0].tensors[t].name for t in missing]


def _choose_ranges(model: Model, build, first, cal, excluded: set[int], io: str):
    """Method "auto": the graph on the min / max ranges (``first``) and on each candidate set of
    ``cal.error_ranges`` (least-error MSE, percentiles), each measured at the outputs on the guard's samples (a set
    equal to one measured already is not built again); the set whose worst output SNR is highest is kept -- min /
    max unless another beats it by ``AUTO_MARGIN_DB`` -- and becomes ``cal.ranges``. Returns (its (qmodel, graph),
    the choice for the report)."""
    log.stage(f"measuring {1 + len(cal.error_ranges)} sets of activation ranges (min / max, "
              + ", ".join(cal.error_ranges) + ")")
    snr = {"minmax": worst(layer_errors(model, *first, cal.measure, cal.float_run, io, outputs_only=True)[1])}
    best = ("minmax", first, cal.ranges)
    measured_sets = [(cal.ranges, "minmax")]
    for name, ranges in cal.error_ranges.items():
        same = next((k for r, k in measured_sets if r == ranges), None)
        if same is not None:  # nothing clipped differently: the same graph, measured already
            snr[name] = snr[same]
            continue
        measured_sets.append((ranges, name))
        cal.ranges = ranges
        built = build(excluded)
        snr[name] = worst(layer_errors(model, *built, cal.measure, cal.float_run, io, outputs_only=True)[1])
        if snr[name] > max(snr[best[0]], snr["minmax"] + AUTO_MARGIN_DB):  # min / max unless it clearly helps
            best = (name, built, ranges)
    cal.ranges = best[2]
    return best[1], {"chosen": best[0], "worst_snr_db": snr}


def _still_short(kept, min_snr: float, task_judge) -> bool:
    """Whether the model the guard kept misses the goal (``widen.Goal``: the task where judged, else the SNR)."""
    from converters.quantize.widen import Goal

    return Goal(min_snr, task_judge).short(kept.qmodel, kept.outputs)


KEEP_INT8_MAC_SHARE = 0.5  # on a float-first target the widened model is kept only with this share of its MACs int8
# or more: int8 runs a conv ~0.5x float32's time in LiteRT / our C runtime but depthwise 1.4x, PRELU 24x (LiteRT's
# reference kernel), and every int8 island adds QUANTIZE / DEQUANTIZE and splits XNNPACK's float partitions --
# palm_detection_lite with 2 of 119 ops int8 and int8 I/O ran 26.2 ms in LiteRT against its float source's 14.2
# (benchmarks/results/widen_cost_2026-12-04_rule24.txt)


def _float_first(target) -> bool:
    """The target's profile widens to float32 first (``widen_to``: a fast float path)."""
    if target is None:
        return False
    from edge_sdk.targets.profiles import load_profile

    return load_profile(target).widen_to == "float32"


CLEARLY_FASTER = 0.9  # on a float-first target the int8 model is written (unless asked for) only when estimated at
# most this share of its float source's time: the estimate (one-op facts) missed by up to 0.24 on the nets measured
# from outside, pairwise (farm-bench CPU medians, startup taken off): BlazeFace-like 0.94 estimated / 1.18 measured,
# depthwise-heavy 1.03 / 1.04, palm_detection_lite 0.80 / 0.82 (benchmarks/results/speed24_models_2026-12-04.txt)


def _speed_runtime(target) -> str | None:
    """The runtime family whose speed facts stand for a float-first ``target`` (``speed.runtime_family``), or None."""
    from converters.quantize.speed import runtime_family

    return runtime_family(target) if _float_first(target) else None


def _faster_in_float(model: Model, mode: str, io: str, excluded: set, precision: str, target, rule,
                     report: dict) -> set:
    """precision "auto" on a float-first target: the ops whose int8 kernel is slower than float32 there and that run
    float32 for it (``speed.faster_in_float``: where that saves more than the conversions it adds, by the estimate
    recorded in ``report["speed"]["widening"]`` -- each op with its reason in its ``float32`` -- and said in a
    note); an empty set elsewhere. The guard's record (what accuracy widened and cost) does not count them."""
    runtime = _speed_runtime(target)
    if precision != "auto" or runtime is None or mode != "int8":
        return set()
    from converters.quantize.speed import faster_in_float

    kinds = {i: "float32" for i in excluded}
    taken, record = faster_in_float(model, kinds, io, runtime, rule, lambda i: op_label(model, i))
    sg = model.subgraphs[0]
    record["float32"] = [{"op_index": i, "op": model.op_name(sg.operators[i]),
                          "output": sg.tensors[sg.operators[i].outputs[0]].name, "reason": why} for i, why in taken]
    report["speed"] = {"runtime": runtime, "target": target.name, "widening": record}
    if record["candidates"]:
        report["notes"].append(_speed_note(target.name, record))
    return {i for i, _ in taken}


def _speed_note(target: str, record: dict) -> str:
    """``speed on raspberry-pi-4 (litert): 5 op(s) run slower in int8 ...``: the speed widening in one line."""
    wide = record["float32"]
    named = ", ".join(f"{w['op']} '{w['output']}'" for w in wide[:4]) + (f", {len(wide) - 4} more" if wide[4:] else "")
    return (f"speed on {target} ({record['runtime']}): {record['candidates']} op(s) run slower in int8 than in float32 "
            f"there (op-table speed facts); {len(wide)} go float32" + (f" ({named})" if wide else "")
            + f", estimated time {record['time_after']:.0%} of the all-int8 plan's; {len(record['left_int8'])} "
            "group(s) stay int8 (their conversions would cost more than they save) -- an estimate, not timed on the "
            "target")


def _speed_estimate(written: Model, source: Model, target, report: dict) -> dict | None:
    """On a float-first target: the written model's estimated time against its float source's
    (``speed.compare``), in ``report["speed"]["estimate"]`` and a note; None elsewhere."""
    runtime = _speed_runtime(target)
    if runtime is None:
        return None
    from converters.quantize.speed import compare

    estimate = compare(written, source, runtime)
    report.setdefault("speed", {"runtime": runtime, "target": target.name})["estimate"] = estimate
    report["notes"].append(
        f"estimated time on {target.name} ({runtime}): the {report['mode']} model {estimate['ratio']:.2f}x its float "
        f"source's ({estimate['conversions']} QUANTIZE / DEQUANTIZE, {estimate['conversion_share']:.0%} of it) -- "
        f"{estimate['estimate']}")
    return estimate


def _slower_note(estimate: dict, mode: str, precision: str) -> str:
    """The model is estimated slower than its float source and written anyway: why, and how to get the float one."""
    asked = f"precision {precision}" if precision != "auto" else f"{mode} was asked for"
    return (f"{mode} model estimated SLOWER than its float source ({estimate['ratio']:.2f}x on {estimate['runtime']}; "
            f"an estimate): written as {mode} because {asked}; `edge convert` without --quantize (or --quantize none) "
            "writes the float model")


def _float_source(source: Model, candidate: QuantizationResult, why: str, float16_weights: bool) -> QuantizationResult:
    """The float model quantize was given written in place of ``candidate`` (the quantized attempt): float I/O, no
    int8 island, its weights float16 when the source stored them so (``float16_weights``), else float32. ``why``:
    "accuracy" (the widening search's model kept under ``KEEP_INT8_MAC_SHARE`` of its MACs int8) or "speed" (the
    int8 model not estimated at most ``CLEARLY_FASTER`` of its float source's time). The report keeps the attempt's
    record, labelled not written: its guard, and its tensor / weight / layer tables moved to
    ``float_source["candidate"]``; ``float_source`` names what changed (the I/O tensors' type, the weights) and the
    bytes written."""
    from edge_sdk.model import write_model

    report = candidate.report
    guard = report.get("guard") or {}
    written, weights = _source_weights(source, float16_weights)
    n_ops = len(written.subgraphs[0].operators)
    share = (guard.get("search") or {}).get("int8_mac_share")
    moved = {k: report.pop(k) for k in ("tensors", "weights", "layers") if k in report}
    io_changed = _io_changed(candidate.model, written)
    report["float_source"] = {
        "why": why, "ops": n_ops, "bytes": len(write_model(written)), "weights": weights,
        "candidate_int8_mac_share": share, "threshold": KEEP_INT8_MAC_SHARE, "candidate_met": guard.get("met"),
        "candidate_widened_count": guard.get("widened_count"),
        "changed": {"io": {"from": report["io"], "to": "float32", "tensors": io_changed},
                    "emptied": sorted(moved)},
        "candidate": {"written": False, "label": f"the {report['mode']} attempt: not written (the float model is)",
                      "bytes": len(write_model(candidate.model)), **moved}}
    report["io"], report["tensors"], report["weights"] = "float32", [], []
    if guard:
        guard.update(met=True, short=[], written="float32 source")
    report["notes"] = [n for n in report["notes"] if not n.startswith("int8 does not keep this model")] + [
        _float_source_note(report, why, n_ops, share, guard, weights)]
    return QuantizationResult(written, report)


def _float_source_note(report: dict, why: str, n_ops: int, share, guard: dict, weights: str) -> str:
    fs = report["float_source"]
    size = (f"{fs['bytes']} bytes, {weights} weights"
            + (" as the source stored them" if weights == "float16" else "")
            + f"; the {report['mode']} attempt was {fs['candidate']['bytes']} bytes")
    emptied = (f"; the report's {', '.join(fs['changed']['emptied'])} table(s) describe the attempt "
               "(float_source.candidate, not written)" if fs["changed"]["emptied"] else "")
    io = (f"; I/O {fs['changed']['io']['from']} -> float32 ({', '.join(fs['changed']['io']['tensors'])})"
          if fs["changed"]["io"]["tensors"] else "")
    if why == "speed":
        est = report["speed"]["estimate"]
        return (f"int8 is not estimated clearly faster than its float source: written as float32 ({n_ops} ops), the "
                f"float model as imported ({size}); the int8 model {est['ratio']:.2f}x the float source's time on "
                f"{est['runtime']}, over {CLEARLY_FASTER:.2f}x ({est['estimate']}); --quantize int8 writes the int8 "
                f"model{io}{emptied}")
    return (f"int8 does not keep this model: written as float32 ({n_ops} ops), the float model as imported ({size}); "
            f"cost: the widening search's model kept {share:.1%} of the MACs int8 (under {KEEP_INT8_MAC_SHARE:.0%}: "
            f"on {guard['widening_for']} its int8 islands cost more time than they save) with "
            f"{widened_text(guard['widened_count'])}{io}{emptied}")


def _source_weights(source: Model, float16_weights: bool) -> tuple[Model, str]:
    """The float source to write and its weights' type: float16 behind DEQUANTIZE when the source stored them so
    (a constant float16 cannot hold stays float32: ``weights_only.fp16_graph``), else float32 as imported."""
    if not float16_weights:
        return source, "float32"
    q, _ = fp16_graph(source)
    return drop_unused_buffers(clear_given_ranges(q)), "float16"


def _io_changed(candidate: Model, written: Model) -> list[str]:
    """The model inputs / outputs whose type the float source changes (int8 -> float32): their names."""
    c, w = candidate.subgraphs[0], written.subgraphs[0]
    pairs = list(zip(c.inputs, w.inputs)) + list(zip(c.outputs, w.outputs))
    return [w.tensors[b].name for a, b in pairs if c.tensors[a].type != w.tensors[b].type]


def _search_notes(guard_record: dict) -> list[str]:
    """What the widening search ended with, when it had to go far: every op at its widest type (all-float32 on a
    float target) and its cost, or the ops that keep the model short."""
    notes = []
    cost = guard_record.get("cost") or {}
    if guard_record.get("all_widened") and guard_record.get("widened"):
        notes.append(f"int8 does not keep this model: every op the target can widen is widened "
                     f"({widened_text(guard_record['widened_count'])}); cost: {cost.get('macs_float32', 0)} MACs "
                     f"in float32, {cost.get('macs_int16', 0)} in int16x8, {cost.get('bytes', 0)} more bytes")
    search = guard_record.get("search") or {}
    if search.get("order") == "weights first":  # int16x8 activations, float32 for the ops whose weights lose it
        first = search.get("weights_first") or {}
        notes.append(f"int8 does not keep this model and int16x8 alone does not either (its weights stay int8: "
                     f"{first.get('int16_floor_worst_snr_db', float('nan')):.1f} dB): widened "
                     f"{widened_text(guard_record['widened_count'])}, float32 for the {first.get('prefix')} op(s) "
                     f"whose int8 weights cost the outputs most per MAC; cost: {cost.get('macs_float32', 0)} MACs in "
                     f"float32, {cost.get('macs_int16', 0)} in int16x8, {cost.get('bytes', 0)} more bytes")
    if (guard_record.get("flash") or {}).get("note"):  # the target's flash held the search back
        notes.append(guard_record["flash"]["note"])
    if guard_record.get("limiting"):
        notes.append("still short of the threshold; the ops that keep it short: " + "; ".join(
            f"{r['op']} '{r['output']}' ({r['reason']})" for r in guard_record["limiting"]))
    return notes


def _check_settings(model, mode: str, method: str, io: str, percentile: float) -> None:
    if mode not in MODES:
        raise ModelError(f"quantize: mode must be one of {', '.join(MODES)}, not {mode!r}")
    if method not in METHODS:
        raise ModelError(f"quantize: method must be one of {', '.join(METHODS)}, not {method!r}")
    if io not in ("int8", "float32", "int16"):
        raise ModelError(f"quantize: io must be 'int8' or 'float32', not {io!r}")
    if not 50.0 < float(percentile) <= 100.0:
        raise ModelError(f"quantize: percentile must be in (50, 100], not {percentile}")
    if not isinstance(model, Model) or not model.subgraphs:
        raise ModelError("quantize: expected an edge_sdk Model with a subgraph")
    if len(model.subgraphs) > 1 and mode in ("int8", "int16x8"):
        check_calls(model)  # IF / WHILE subgraphs, each run by one op: converters.quantize.subgraphs
    sg = model.subgraphs[0]
    already = sorted({model.op_name(op) for op in sg.operators} & {"QUANTIZE", "DEQUANTIZE"})
    if already or any(t.type in ("INT8", "INT16", "UINT8") and t.quantization is not None for t in sg.tensors):
        raise ModelError("quantize: the model is already quantized (it has quantized tensors or "
                         f"{'/'.join(already) or 'quantization parameters'}); give the float model")


def _new_report(model: Model, mode: str, io: str, excluded: set[int]) -> dict:
    sg = model.subgraphs[0]
    return {"mode": mode, "io": io if mode in ("int8", "int16x8") else "float32", "notes": [],
            "excluded": [{"op_index": i, "op": model.op_name(sg.operators[i]),
                          "output": sg.tensors[sg.operators[i].outputs[0]].name} for i in sorted(excluded)]}


def _fp16(model: Model, report: dict) -> QuantizationResult:
    log.stage("quantizing weights to float16")
    q, kept = fp16_graph(model)
    q = drop_unused_buffers(clear_given_ranges(q))
    report["notes"].append("float16 weights feed DEQUANTIZE ops: LiteRT runs this model, TFLM cannot "
                           "(no float16 DEQUANTIZE)")
    report["kept_float32"] = kept
    for k in kept:
        where = f" (subgraph {k['subgraph']})" if k.get("subgraph") else ""
        report["notes"].append(f"constant '{k['name']}'{where} stays float32: {k['reason']}")
    return QuantizationResult(q, report)


def _float_mode_guard(model: Model, qmodel: Model, mode: str, calibration, min_snr: float, limit, seed: int) -> dict:
    """The accuracy guard of the modes that keep float activations (fp16, dynamic): each output's SNR against the
    float model on the given samples (at most ``MEASURE_SAMPLES``), or without any on ``SYNTHETIC_SAMPLES``
    synthetic ones -- the int8 guard's record, with nothing to widen. Both run in edge-sdk's interpreter (the
    dynamic-range model in its hybrid kernels, LiteRT's arithmetic: kernels/hybrid.py); where the interpreter refuses
    the model, in LiteRT's reference kernels, and for a dynamic-range model without ai-edge-litert as the float model
    over its dequantized int8 weights (the weights' share of the error only, and it says so)."""
    import itertools

    from converters.calibration import calibration_data
    from converters.quantize.calibrate import Runner
    from converters.quantize.measure import interpreter_runner, litert_runner, output_errors, short
    from converters.quantize.weights_only import dequantized_weights

    synthetic = calibration is None
    if synthetic:
        samples = synthetic_samples(model, given_ranges(model), SYNTHETIC_SAMPLES, seed)
    else:
        data = calibration_data(calibration, inputs=model, limit=limit, label="measuring")
        samples = list(itertools.islice(iter(data), MEASURE_SAMPLES))
        if not samples:
            raise ModelError("quantize: the calibration data gave no samples")
    log.stage(f"measuring the {mode} model against the float one on {len(samples)} "
              f"{'synthetic' if synthetic else 'given'} sample(s)")
    record = {"min_snr_db": float(min_snr), "precision": mode, "samples": len(samples), "held_back": False,
              "synthetic": synthetic, "widened": [], "cannot_widen": [], "widening_for": "", "tried_widening": 0,
              "cost": {"bytes": 0, "macs_total": 0, "macs_not_int8": 0, "macs_int16": 0, "macs_float32": 0}}
    sg = model.subgraphs[0]
    try:  # the float reference and the converted model, each in a runtime that runs it
        try:
            float_run = Runner(model)
        except ModelError:
            float_litert = litert_runner(model)
            if float_litert is None:
                raise
            float_run = lambda sample: dict(zip(sg.outputs, float_litert(sample)))  # noqa: E731
        run = None
        runtime = "edge-sdk's interpreter" + (" (hybrid kernels)" if mode == "dynamic" else "")
        try:
            run = interpreter_runner(qmodel)
        except ModelError as exc:
            run = litert_runner(qmodel)
            runtime = "LiteRT's reference kernels" + (" (hybrid)" if mode == "dynamic" else "")
            if run is None and mode == "dynamic":
                run = interpreter_runner(dequantized_weights(model, qmodel))
                runtime = ("weights only: the float model over the dequantized int8 weights (edge-sdk's interpreter "
                           f"refuses the model: {str(exc).splitlines()[0]}; ai-edge-litert is not installed: the "
                           "hybrid kernels' on-the-fly activation rounding is not measured)")
            if run is None:
                raise ModelError(f"{str(exc).splitlines()[0]}; ai-edge-litert is not installed") from None
    except (ModelError, RuntimeError, ValueError) as exc:  # no runtime here runs it: said, not guessed
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        report_line = f"the {mode} model's accuracy was not measured: no runtime here runs it ({why})"
        return {**record, "measured": False, "not_measured": report_line, "outputs": [], "met": True, "short": []}
    outputs = output_errors(model, samples, float_run, run)
    missing = short(outputs, min_snr)
    if has_control_flow(model):  # which IF branches / WHILE bodies the samples ran (the others are not measured)
        runs = subgraph_runs(model, samples)
        record["subgraph_runs"] = {s: runs.get(s, 0) for s in range(1, len(model.subgraphs))}
        record["unreached"] = unreached_notes(model, runs, "its float16 constants' error" if mode == "fp16"
                                              else "its int8 weights' error")
    return {**record, "measured": True, "runtime": runtime, "outputs": outputs, "met": not missing,
            "short": [{"name": o["name"], "snr_db": o["worst_snr_db"], "short_db": min_snr - o["worst_snr_db"]}
                      for o in missing]}


def _dynamic(model: Model, excluded: set[int], report: dict) -> QuantizationResult:
    log.stage("quantizing weights to int8 (dynamic range)")
    qm, weights = dynamic_graph(model, excluded)
    report["weights"] = weights
    report["notes"].append("dynamic-range model (int8 weights, float activations): LiteRT's hybrid kernels, "
                           "edge-sdk's interpreter and its C runtime (hosts and Cortex-M) run it; TFLM has no hybrid "
                           "kernels")
    return QuantizationResult(drop_unused_buffers(clear_given_ranges(qm)), report)


__all__ = ["AUTO_MARGIN_DB", "CLEARLY_FASTER", "JOIN_LEVELS", "MAX_PRUNE", "MAX_VALUES", "MEASURE_SAMPLES", "METHODS",
           "MIN_SNR_DB",
           "MODES", "PRECISIONS", "STALE_ROUNDS", "SYNTHETIC_SAMPLES", "QuantizationResult", "quantize",
           "uncovered_activations", "widening_rule"]
