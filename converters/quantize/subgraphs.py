"""int8 / int16x8 of models with run-time control flow: IF (then / else subgraphs) and WHILE (cond / body).

The main subgraph goes through the quantizer as any model does (calibration, rules, guard); this module adds what
the subgraphs need around it:

- **Calibration** (``calibrate_subgraphs``): the float model runs over the calibration samples in edge-sdk's
  interpreter with an observer on every subgraph call: each subgraph's inputs as they enter and each node's outputs
  right after it runs, folded into min / max per (subgraph, tensor). A branch sees exactly the values that reach
  it; a WHILE's cond and body are observed on every iteration, so a loop-carried range covers them all. Subgraph
  ranges are min / max whatever the method (percentile / MSE clipping is the main graph's).
- **One scale per value crossing a call** (``unify``): a value that enters a branch and the branch's input tensor,
  a branch's output and the IF's output (both branches), a WHILE's input, output, its cond's and body's inputs and
  the body's outputs (every iteration) share one range: the union of all of theirs. The runtimes copy bytes across
  a call (TFLM's if.cc / while.cc), so the scales must be equal, not just close.
- **A branch calibration never reached** (its subgraph never ran on the calibration samples, e.g. a WHILE body on
  samples whose loops all run 0 times, or an IF branch no sample took) **stays float inside**: its inputs arrive
  in the caller's integer type and scale, a DEQUANTIZE takes them to float32, its ops run float32 and a QUANTIZE
  gives its outputs the shared scale. Nothing is guessed for values never seen; the report names such subgraphs.
- **Quantizing each subgraph** (``attach``) with the same rules as the main graph (``rules.rule_of``): the
  subgraph is built as a one-subgraph model whose inputs take the shared quantization and whose outputs are
  requantized to it where their op fixes another (a LOGISTIC's 1/256). The callee's activation type is the caller
  op's: an IF / WHILE the guard widened to int16x8 has int16 subgraphs, one widened to float32 float ones.

A quantized op of a subgraph whose divisor may be its zero point (``rules.zero_divisors``, as in the main graph:
LiteRT's int8 DIV refuses that at invoke) stays float32 in its subgraph, said in the notes. The guard measures the
whole model (its outputs run through the quantized IF / WHILE); the per-layer table lists the main subgraph's
activations; widening an IF / WHILE (the guard's search treats it as one op) keeps its whole subgraphs float32.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from converters.quantize.builder import QuantGraph, is_const, is_float
from converters.quantize.rules import rule_of, shared_quant, unquantizable
from converters.quantize.scales import affine, limits
from edge_sdk.errors import ConversionError, ModelError
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table


# ------------------------------------------------------------------------------------------------ structure
def calls(model: Model) -> list[tuple[int, int, str, list[int]]]:
    """Every op that runs subgraphs: (caller subgraph, op index, op name, callee subgraph indices)."""
    out = []
    for s, sg in enumerate(model.subgraphs):
        for i, op in enumerate(sg.operators):
            name = model.op_name(op)
            fields = op_table.row(name).subgraphs
            if fields:
                out.append((s, i, name, [int(op.options[f]) for f in fields]))
    return out


def has_control_flow(model: Model) -> bool:
    return len(model.subgraphs) > 1


def check_calls(model: Model) -> None:
    """Raise ModelError unless every subgraph but the main one is the then / else of one IF or the cond / body of one
    WHILE (the quantizer's subgraph support: a CALL_ONCE init or a subgraph shared by two callers is not)."""
    callers: dict[int, list[str]] = {}
    problems = []
    for s, i, name, callees in calls(model):
        if name not in ("IF", "WHILE"):
            problems.append(f"subgraph {s} op {i} {name} runs subgraph(s) {callees}: only IF / WHILE are quantized")
        for c in callees:
            callers.setdefault(c, []).append(f"subgraph {s} op {i} {name}")
    for c in range(1, len(model.subgraphs)):
        who = callers.get(c, [])
        if len(who) != 1:
            problems.append(f"subgraph {c} is run by {len(who)} op(s) ({', '.join(who) or 'none'}): one IF / WHILE "
                            "each is quantized")
    if problems:
        raise ModelError("quantize: the model's subgraphs cannot be quantized: " + "; ".join(problems))


def subgraph_view(model: Model, s: int) -> Model:
    """Subgraph ``s`` as subgraph 0 of a model sharing the buffers and op codes (the rules read subgraph 0)."""
    view = copy.copy(model)
    view.subgraphs = [model.subgraphs[s]]
    view.signature_defs = []
    return view


def check_subgraph_ops(model: Model, act: str, keep_float: bool) -> dict[int, set[int]]:
    """{subgraph: op indices without an integer rule} of the callees. ``keep_float`` (precision "auto"): such ops
    run float32 in their subgraph (returned); else ConversionError naming every one."""
    found: dict[int, set[int]] = {}
    problems = []
    for s in range(1, len(model.subgraphs)):
        view = subgraph_view(model, s)
        for i, why in unquantizable(view, act, set()):
            op = model.subgraphs[s].operators[i]
            if model.op_name(op) in ("IF", "WHILE"):
                continue
            found.setdefault(s, set()).add(i)
            out = model.subgraphs[s].tensors[op.outputs[0]].name if op.outputs else "?"
            problems.append(f"subgraph {s} op {i} {model.op_name(op)} (output '{out}'): {why}")
    if problems and not keep_float:
        raise ConversionError(f"quantize: {len(problems)} op(s) in subgraphs cannot be quantized to {act.lower()}",
                              problems)
    return found


# ------------------------------------------------------------------------------------------------ calibration
class SubgraphRanges:
    """What the subgraph calibration saw: min / max per (subgraph, tensor), how often each subgraph ran."""

    def __init__(self):
        self.lo: dict[tuple[int, int], float] = {}
        self.hi: dict[tuple[int, int], float] = {}
        self.runs: dict[int, int] = {}

    def add(self, s: int, t: int, x: np.ndarray) -> None:
        if x.dtype.kind != "f" or x.size == 0:
            return
        finite = x[np.isfinite(x)] if not np.isfinite(x).all() else x
        if finite.size == 0:
            return
        key = (s, t)
        lo, hi = float(finite.min()), float(finite.max())
        self.lo[key] = min(self.lo.get(key, math.inf), lo)
        self.hi[key] = max(self.hi.get(key, -math.inf), hi)

    def ranges(self) -> dict[tuple[int, int], tuple[float, float]]:
        return {k: (self.lo[k], self.hi[k]) for k in self.lo}


def _observe(interp, seen: SubgraphRanges) -> None:
    """Hook the interpreter (allocated) so every subgraph call folds its inputs and node outputs into ``seen``."""
    p = interp._p
    # a PAD folded into its conv (the interpreter's PadFold records) never runs: its output's range is the PAD's
    # input's (what the conv now reads as its input 0) and the fill, 0.0 in a float model
    pad_of_conv = {(f.subgraph, f.conv): f.output for f in p.pad_folds.values()}
    for s in range(1, len(p.steps)):
        runs = [(i, n) for i, n in enumerate(p.nodes[s]) if (s, i) not in p.folded and (s, i) not in p.pad_folds]
        if len(runs) != len(p.steps[s]):  # a delegate or patch stage merged nodes: not with control flow
            raise ModelError(f"quantize: subgraph {s} runs {len(p.steps[s])} steps for {len(runs)} nodes")
        for (i, node) in ((i, n) for i, n in enumerate(p.nodes[s]) if (s, i) in p.folded):
            for info in node.outputs:  # constant-only nodes computed once at allocate
                seen.add(s, info.index, np.asarray(p.views[s][info.index]))
        for k, ((fn, ins, outs), (i, node)) in enumerate(zip(p.steps[s], runs)):
            indices = [info.index for info in node.outputs]
            pad_output = pad_of_conv.get((s, i))

            def step(i_, o_, fn=fn, indices=indices, s=s, pad_output=pad_output):
                if pad_output is not None:
                    seen.add(s, pad_output, np.asarray(i_[0]))
                    seen.add(s, pad_output, np.zeros(1, np.float32))
                fn(i_, o_)
                for t, v in zip(indices, o_):
                    seen.add(s, t, np.asarray(v))

            p.steps[s][k] = (step, ins, outs)
    invoke_subgraph = interp.invoke_subgraph

    def observed(index, inputs):
        seen.runs[index] = seen.runs.get(index, 0) + 1
        for t, x in zip(interp.model.subgraphs[index].inputs, inputs):
            seen.add(index, t, np.asarray(x))
        return invoke_subgraph(index, inputs)

    interp.invoke_subgraph = observed  # the IF / WHILE kernels call it through the interpreter they hold


def calibrate_subgraphs(model: Model, calibration, limit, holdout: int):
    """Run the float model over the calibration samples (the held-back ones skipped as ``calibrate`` skips them)
    observing every subgraph call. Returns (SubgraphRanges, the calibration to hand on: the samples as a list when
    the source was a one-shot iterator, else the source)."""
    from converters.calibration import CalibrationData, calibration_data
    from edge_sdk.runtime.interpreter import Interpreter

    data = calibration_data(calibration, inputs=model, limit=limit, label="calibrating subgraphs")
    reiter = isinstance(data, CalibrationData) and data.reiterable
    interp = Interpreter(model=model)
    interp.allocate_tensors()
    seen = SubgraphRanges()
    _observe(interp, seen)
    ins = [d["index"] for d in interp.get_input_details()]
    kept, n_held = [], 0
    for k, sample in enumerate(data):
        if not reiter:
            kept.append(sample)
        if holdout and k % 5 == 4 and n_held < holdout:
            n_held += 1
            continue
        interp.reset_all_variables()
        for i, x in zip(ins, sample):
            interp.set_tensor(i, x)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            interp.invoke()
    return seen, (calibration if reiter else kept)


def subgraph_runs(model: Model, samples) -> dict[int, int]:
    """How often each subgraph ran while the float model ran over ``samples`` in edge-sdk's interpreter (a WHILE's
    cond and body once per iteration): which IF branch / WHILE body the samples reached."""
    from edge_sdk.runtime.interpreter import Interpreter

    interp = Interpreter(model=model)
    interp.allocate_tensors()
    runs: dict[int, int] = {}
    invoke_subgraph = interp.invoke_subgraph

    def counted(index, inputs):
        runs[index] = runs.get(index, 0) + 1
        return invoke_subgraph(index, inputs)

    interp.invoke_subgraph = counted  # the IF / WHILE kernels call it through the interpreter they hold
    ins = [d["index"] for d in interp.get_input_details()]
    for sample in samples:
        interp.reset_all_variables()
        for i, x in zip(ins, sample):
            interp.set_tensor(i, np.asarray(x))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            interp.invoke()
    return runs


def unreached_notes(model: Model, runs: dict[int, int], what: str) -> list[str]:
    """One note per subgraph the samples never ran (``runs``: ``subgraph_runs``): ``what`` it holds is not measured
    by the guard there."""
    notes = []
    for caller, i, name, callees in calls(model):
        for c in callees:
            if not runs.get(c):
                notes.append(f"subgraph {c} ('{model.subgraphs[c].name}', of {name} op {i} in subgraph {caller}) "
                             f"never ran on the guard's samples: {what} there is not measured")
    return notes


# ------------------------------------------------------------------------------------------------ one scale
def _crossings(model: Model) -> list[list[tuple[int, int]]]:
    """Groups of (subgraph, tensor) that must share one quantization: the values crossing each IF / WHILE."""
    groups = []
    for s, i, name, callees in calls(model):
        op = model.subgraphs[s].operators[i]
        subs = [model.subgraphs[c] for c in callees]
        if name == "IF":
            for k, t in enumerate(op.inputs[1:]):
                groups.append([(s, t)] + [(c, sg.inputs[k]) for c, sg in zip(callees, subs)])
            for k, t in enumerate(op.outputs):
                groups.append([(s, t)] + [(c, sg.outputs[k]) for c, sg in zip(callees, subs)])
        else:  # WHILE: cond, body
            (cond_i, body_i), (cond, body) = callees, subs
            for k, t in enumerate(op.inputs):
                groups.append([(s, t), (s, op.outputs[k]), (cond_i, cond.inputs[k]), (body_i, body.inputs[k]),
                               (body_i, body.outputs[k])])
    return groups


def unify(model: Model, main_sets: list[dict], sub: dict) -> list[str]:
    """Give every value crossing a call one range, the union of the ranges its tensors have (and of a constant's
    values), in the main graph's range sets ``main_sets`` (tensor -> (lo, hi); method "auto" has several) and in the
    subgraphs' ``sub`` ((subgraph, tensor) -> (lo, hi)), in place. Returns the names of the crossings widened."""
    parent: dict[tuple[int, int], tuple[int, int]] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for group in _crossings(model):
        members = [m for m in group if m[1] >= 0 and model.subgraphs[m[0]].tensors[m[1]].type == "FLOAT32"]
        for m in members[1:]:
            parent[find(m)] = find(members[0])
        for m in members:
            find(m)
    classes: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for m in parent:
        classes.setdefault(find(m), []).append(m)
    widened = []
    for members in classes.values():
        for ranges in main_sets:
            spans = []
            for s, t in members:
                if is_const(subgraph_view(model, s), t):
                    d = np.asarray(model.tensor_data(s, t), np.float64)
                    spans.append((float(d.min()), float(d.max())) if d.size else (0.0, 0.0))
                elif s == 0 and t in ranges:
                    spans.append(ranges[t])
                elif s and (s, t) in sub:
                    spans.append(sub[(s, t)])
            if not spans:
                continue
            union = (min(r[0] for r in spans), max(r[1] for r in spans))
            for s, t in members:
                if s == 0:
                    if ranges.get(t) is not None and tuple(ranges[t]) != union and ranges is main_sets[0]:
                        widened.append(model.subgraphs[0].tensors[t].name)
                    ranges[t] = union
            if ranges is main_sets[0]:
                for s, t in members:
                    if s:
                        sub[(s, t)] = union
    return widened


# ------------------------------------------------------------------------------------------------ the rule
# ------------------------------------------------------------------------------------------------ the subgraphs
class Plan:
    """What ``attach`` needs to build the subgraphs of every candidate main graph the guard tries."""

    def __init__(self, model: Model, sub_ranges: dict, runs: dict, act: str, no_rule: dict[int, set[int]]):
        self.model, self.sub_ranges, self.runs, self.act = model, sub_ranges, runs, act
        self.no_rule = {s: set(ops) for s, ops in no_rule.items()}
        self.zero_div: dict[int, list[tuple[int, str]]] = {}
        for s in range(1, len(model.subgraphs)):  # a DIV that may divide by its zero quantum stays float32
            if self.runs.get(s):
                found = _zero_divisors(self, s)
                if found:
                    self.zero_div[s] = found
                    self.no_rule.setdefault(s, set()).update(i for i, _ in found)

    def unreached(self) -> list[int]:
        return [s for s in range(1, len(self.model.subgraphs)) if not self.runs.get(s)]

    def notes(self) -> list[str]:
        model = self.model
        n = len(model.subgraphs) - 1
        reached = [s for s in range(1, n + 1) if self.runs.get(s)]
        notes = [f"{n} subgraph(s) of IF / WHILE quantized with the main graph's rules ({len(reached)} reached by "
                 "calibration); each value crossing a call keeps one scale in caller and callee (a WHILE's over every "
                 "iteration)"]
        for s in self.unreached():
            notes.append(f"subgraph {s} ('{model.subgraphs[s].name}') never ran on the calibration samples: its ops "
                         "stay float32 between a DEQUANTIZE of its inputs and a QUANTIZE of its outputs at the "
                         "caller's scales")
        for s, ops in sorted(self.no_rule.items()):
            ops = ops - {i for i, _ in self.zero_div.get(s, [])}
            if ops:
                names = ", ".join(sorted({model.op_name(model.subgraphs[s].operators[i]) for i in ops}))
                notes.append(f"subgraph {s}: {len(ops)} op(s) without an integer rule stay float32 ({names})")
        for s, found in sorted(self.zero_div.items()):
            notes += [f"subgraph {s} op {i} {model.op_name(model.subgraphs[s].operators[i])} stays float32: {why}"
                      for i, why in found]
        return notes


def _zero_divisors(plan: Plan, s: int) -> list[tuple[int, str]]:
    """(op index, why) of subgraph ``s``'s quantized ops whose divisor may be its zero point (``rules.zero_divisors``,
    as the main graph's: LiteRT's int8 DIV refuses it at invoke), built in the plan's activation type."""
    from converters.quantize.rules import zero_divisors

    view = subgraph_view(plan.model, s)
    ranges = {t: r for (ss, t), r in plan.sub_ranges.items() if ss == s}
    g = _graph_of(plan, s, plan.act)
    return zero_divisors(view, g, ranges, ranges)


def _callee_act(built: Model, sg_index: int, op_index: int, src_op, src: Model, src_sg: int, fallback: str) -> str:
    """The activation type the built caller op passes to its callees: its first float source value's built type."""
    op = built.subgraphs[sg_index].operators[op_index]
    pairs = list(zip(src_op.inputs, op.inputs)) + list(zip(src_op.outputs, op.outputs))
    for t_src, t_new in pairs:
        if t_src >= 0 and src.subgraphs[src_sg].tensors[t_src].type == "FLOAT32":
            return built.subgraphs[sg_index].tensors[t_new].type
    return fallback


def _build_subgraph(plan: Plan, s: int, act: str) -> Model:
    """Subgraph ``s`` as a one-subgraph model in ``act`` ("FLOAT32": as it is)."""
    g, inputs, outputs = _graph_of(plan, s, act, with_io=True)
    built = g.build(inputs, outputs)
    built.subgraphs[0].name = plan.model.subgraphs[s].name
    return built


def _graph_of(plan: Plan, s: int, act: str, with_io: bool = False):
    """The QuantGraph of subgraph ``s`` in ``act`` (with its input and output tensors when ``with_io``)."""
    model = plan.model
    view = subgraph_view(model, s)
    sg = model.subgraphs[s]
    ranges = {t: r for (ss, t), r in plan.sub_ranges.items() if ss == s}
    g = QuantGraph(view, act if act != "FLOAT32" else "INT8", ranges)
    if act == "FLOAT32":
        excluded = set(range(len(sg.operators)))
        inputs = [g.model_input(t, "float32") for t in sg.inputs]
    else:
        reached = bool(plan.runs.get(s))
        excluded = set(range(len(sg.operators))) if not reached else set(plan.no_rule.get(s, ()))
        excluded -= {i for i, op in enumerate(sg.operators) if model.op_name(op) in ("IF", "WHILE")}
        for t in range(len(sg.tensors)):  # a tensor no run reached (a zero-size one): a range of zero width
            if is_float(view, t) and not is_const(view, t):
                ranges.setdefault(t, (0.0, 0.0))
        inputs = [g.model_input(t, "int8") for t in sg.inputs]
    for i, op in enumerate(sg.operators):
        rule_of(view, i, op, excluded, frozenset())(g, i, op, g.act)
    outputs = []
    for t in sg.outputs:
        if act == "FLOAT32" or not is_float(view, t):
            outputs.append(g.model_output(t, "float32"))
        else:
            outputs.append(g.get_q(t, shared_quant(g, t, act), act))
    return (g, inputs, outputs) if with_io else g


def attach(qmain: Model, model: Model, plan: Plan) -> Model:
    """The quantized main graph ``qmain`` (built from ``model``'s subgraph 0) with every subgraph built in the type
    its caller passes (see the module docstring), at the source's subgraph indices."""
    out = qmain
    built: dict[int, Model] = {0: qmain}
    origin_of = {0: _origin(model, 0, qmain)}
    todo = [0]
    while todo:
        s = todo.pop(0)
        for caller, i, name, callees in calls(model):
            if caller != s:
                continue
            k = origin_of[s].get(i)
            if k is None:
                raise ConversionError(f"quantize: subgraph {s} op {i} {name} is missing from the integer graph")
            act = _callee_act(built[s] if s else qmain, 0, k, model.subgraphs[s].operators[i], model, s, plan.act)
            for c in callees:
                built[c] = _build_subgraph(plan, c, act)
                origin_of[c] = _origin(model, c, built[c])
                todo.append(c)
    return merge_subgraphs(out, [built[c] for c in range(1, len(model.subgraphs))])


def _origin(model: Model, s: int, built: Model) -> dict[int, int]:
    """Source op index -> built op index for the ops that run subgraphs (the built ops keep the source order, with
    QUANTIZE / DEQUANTIZE in between: the k-th IF / WHILE of the built graph is the k-th of the source)."""
    src = [i for i, op in enumerate(model.subgraphs[s].operators) if op_table.row(model.op_name(op)).subgraphs]
    new = [i for i, op in enumerate(built.subgraphs[0].operators) if op_table.row(built.op_name(op)).subgraphs]
    return dict(zip(src, new))


def merge_subgraphs(main: Model, subs: list[Model]) -> Model:
    """``main`` with each of ``subs``' one subgraph appended (indices 1, 2, ...), buffers and op codes merged."""
    for sub in subs:
        buffer_map = {0: 0}
        for b, buf in enumerate(sub.buffers):
            if b:
                main.buffers.append(buf)
                buffer_map[b] = len(main.buffers) - 1
        code_map = {}
        for c, code in enumerate(sub.operator_codes):
            if code not in main.operator_codes:
                main.operator_codes.append(code)
            code_map[c] = main.operator_codes.index(code)
        sg = sub.subgraphs[0]
        for t in sg.tensors:
            t.buffer = buffer_map[t.buffer]
        for op in sg.operators:
            op.opcode_index = code_map[op.opcode_index]
        main.subgraphs.append(sg)
    return main


__all__ = ["Plan", "attach", "calibrate_subgraphs", "calls", "check_calls", "check_subgraph_ops",
           "has_control_flow", "merge_subgraphs", "subgraph_runs", "subgraph_view", "unify", "unreached_notes"]
