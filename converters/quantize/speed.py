"""The op table's speed facts (a row's ``speed``) read as an estimate of a model's time on a runtime family.

A row's ``speed`` gives the op's time per unit in MAC-equivalents of the runtime's float32 CONV_2D, per type it
computes in (benchmarks/widen_cost.py measures them on one-op models, one thread). An op's estimated time is
``units x cost``: its MACs for a weighted row with a MACs function (out elements x weights per output channel), its
output elements otherwise. An op the table has not measured costs ``DEFAULT_ELEMENT_COST`` per element (the median
of the measured element-wise float32 ops) in every type but int16x8 (``DEFAULT_INT16_RATIO`` times that): it weighs
the same in the int8 model and in its float source.

Two uses on a float-first target (``widen_to = "float32"``: the Linux boards):

- ``faster_in_float``: the ops whose int8 kernel is slower than float32 there (PRELU in LiteRT, depthwise) go float32
  when what they save is more than the QUANTIZE / DEQUANTIZE they add around them; decided on the float model with
  each op's planned type (``assigned_time``), group by group (connected slow ops together), best first.
- ``compare``: the written model's estimated time (its own ops, conversions included: ``model_time``) against its
  float source's, labelled as an estimate in the report, the summary and the JSON.

Every figure here is an estimate from one-op timings on the host that measured them (x86-64, AVX-512 VNNI), not a
measurement of the model on the target; the report says so.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table

DEFAULT_ELEMENT_COST = 12.9  # per element, no float32 fact: the median (PRELU 8.4, PAD 9.5, ADD 12.9, RESIZE 20, ...)
DEFAULT_INT16_RATIO = 27.0  # int16x8 / float32 time without an int16 fact: the one-op geomean in LiteRT (27.0)
SPEED_NOTE = ("an estimate from the op table's one-op speed facts (benchmarks/widen_cost.py on an x86-64 host), not "
              "timed on the target")


def runtime_family(profile) -> str | None:
    """The runtime family (op_table.SPEED_RUNTIMES) whose speed facts stand for ``profile``: "litert" when it has a
    LiteRT delegate (the Linux boards: their users run LiteRT), "c" for the C runtime, else None (no facts)."""
    if profile is None:
        return None
    if any(getattr(d, "kind", None) == "litert" for d in profile.delegates.values()):
        return "litert"
    return "c" if profile.runtime == "c" else None


def _elements(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


def per_mac(name: str) -> bool:
    """Whether the op's unit is a MAC (a weighted row with a MACs function and an output-channel axis)."""
    row = op_table.row(name)
    return bool(row.macs) and row.weights is not None and row.weights[2] is not None


def op_units(model: Model, i: int) -> int:
    """Op i's units: MACs (output elements x weights per output channel) for a ``per_mac`` row, else the elements of
    its first output."""
    sg = model.subgraphs[0]
    op = sg.operators[i]
    if not op.outputs or op.outputs[0] < 0:
        return 0
    out = _elements(sg.tensors[op.outputs[0]].shape)
    name = model.op_name(op)
    if per_mac(name):
        wi, _, axis = op_table.row(name).weights
        w = sg.tensors[op.inputs[wi]].shape
        return out * _elements(w) // max(1, int(w[axis]))
    return out


def cost(name: str, runtime: str, dtype: str) -> float:
    """MAC-equivalents per unit of op ``name`` computing in ``dtype`` on ``runtime``: its row's fact, else the
    defaults of the module docstring."""
    facts = {(rt, dt): c for rt, dt, c in op_table.row(name).speed}
    if (runtime, dtype) in facts:
        return facts[runtime, dtype]
    base = facts.get((runtime, "float32"), 1.0 if per_mac(name) else DEFAULT_ELEMENT_COST)
    return base * DEFAULT_INT16_RATIO if dtype == "int16" else base


def ratio(name: str, runtime: str, dtype: str = "int8") -> float:
    """``dtype`` time / float32 time of op ``name`` on ``runtime`` (1.0 where not measured)."""
    return cost(name, runtime, dtype) / cost(name, runtime, "float32")


def _dtype(types) -> str:
    """The type an op computes in, from its data tensors' types: int16 (int16x8) over int8 over float32."""
    types = set(types)
    return "int16" if "INT16" in types else "int8" if types & {"INT8", "UINT8"} else "float32"


def model_time(model: Model, runtime: str) -> tuple[float, list[tuple[int, float]]]:
    """(estimated time of the model's main graph in MAC-equivalents, (op index, its share) per op): each op at the
    type its input 0 and output 0 hold, QUANTIZE / DEQUANTIZE included."""
    sg = model.subgraphs[0]
    per_op = []
    for i, op in enumerate(sg.operators):
        ends = [t for t in (op.inputs[:1] + op.outputs[:1]) if t >= 0]
        dtype = _dtype(sg.tensors[t].type for t in ends)
        per_op.append((i, op_units(model, i) * cost(model.op_name(op), runtime, dtype)))
    return sum(c for _, c in per_op), per_op


class Assignment:
    """The float model with a planned type per op (op index -> "int8" / "int16" / "float32"), its estimated time:
    each op at its type, and one conversion per activation whose readers want another type than its producer gives
    (a model input is produced, a model output read, at the I/O type). ``delta(ops, kind)`` is the change in time
    when ``ops`` take ``kind``, from their own time and the conversions on the activations they touch."""

    def __init__(self, model: Model, kinds: dict, io: str, runtime: str):
        self.model, self.kinds, self.runtime = model, dict(kinds), runtime
        self.io = "float32" if io == "float32" else "int8"
        sg = model.subgraphs[0]
        self.readers: dict[int, list[int]] = {}
        self.producer: dict[int, int] = {}
        for i, op in enumerate(sg.operators):
            for t in op.inputs:  # float activations: what QUANTIZE / DEQUANTIZE convert (not indices, shapes)
                if t >= 0 and sg.tensors[t].type == "FLOAT32" and not _is_const(model, t):
                    self.readers.setdefault(t, []).append(i)
            for t in op.outputs:
                self.producer[t] = i
        self.units = [op_units(model, i) for i in range(len(sg.operators))]

    def kind(self, i: int) -> str:
        return self.kinds.get(i, "int8")

    def op_time(self, i: int, kind: str | None = None) -> float:
        name = self.model.op_name(self.model.subgraphs[0].operators[i])
        return self.units[i] * cost(name, self.runtime, kind or self.kind(i))

    def conversions(self, t: int, kinds: dict) -> tuple[float, int]:
        """(time, count) of the conversions activation t needs under ``kinds``."""
        sg = self.model.subgraphs[0]
        given = lambda i: kinds.get(i, self.kind(i))  # noqa: E731
        made = given(self.producer[t]) if t in self.producer else self.io
        wanted = {given(i) for i in self.readers.get(t, [])} | ({self.io} if t in sg.outputs else set())
        n = _elements(sg.tensors[t].shape)
        spent = 0.0
        for to in wanted - {made}:
            op, dtype = ("DEQUANTIZE", made) if to == "float32" else ("QUANTIZE", to)
            spent += n * cost(op, self.runtime, dtype)
        return spent, len(wanted - {made})

    def delta(self, ops, kind: str) -> dict:
        """The estimated change when ``ops`` take ``kind``: {"op_time": their own time's change,
        "conversion_time": the conversions' change, "added": conversions added (count), "total"}."""
        sg = self.model.subgraphs[0]
        changed = {i: kind for i in ops}
        touched = {t for i in ops for t in sg.operators[i].inputs + sg.operators[i].outputs
                   if t >= 0 and sg.tensors[t].type == "FLOAT32" and not _is_const(self.model, t)}
        before = [self.conversions(t, {}) for t in touched]
        after = [self.conversions(t, changed) for t in touched]
        own = sum(self.op_time(i, kind) - self.op_time(i) for i in ops)
        conv = sum(a[0] for a in after) - sum(b[0] for b in before)
        return {"op_time": own, "conversion_time": conv,
                "added": sum(a[1] for a in after) - sum(b[1] for b in before), "total": own + conv}

    def total(self) -> float:
        ops = sum(self.op_time(i) for i in range(len(self.units)))
        sg = self.model.subgraphs[0]
        activations = {t for t in set(self.readers) | set(self.producer) if sg.tensors[t].type == "FLOAT32"}
        return ops + sum(self.conversions(t, {})[0] for t in activations)


def _is_const(model: Model, t: int) -> bool:
    from converters.quantize.builder import is_const

    return is_const(model, t)


def _groups(model: Model, ops: list[int]) -> list[list[int]]:
    """``ops`` in connected groups: two ops are connected when one reads an activation the other writes."""
    sg = model.subgraphs[0]
    made = {t: i for i in ops for t in sg.operators[i].outputs}
    parent = {i: i for i in ops}

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in ops:
        for t in sg.operators[i].inputs:
            if t in made:
                parent[root(i)] = root(made[t])
    groups: dict[int, list[int]] = {}
    for i in ops:
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values())


def faster_in_float(model: Model, kinds: dict, io: str, runtime: str, rule, label) -> tuple[list, dict]:
    """On a float-first target: the ops whose int8 kernel is slower than float32 on ``runtime`` (their rows' speed
    facts) that ``rule`` lets run float32, widened to float32 where that saves more than the conversions it adds.
    ``kinds``: op index -> the type already planned ("float32" for the ops float by rule; the rest "int8").
    Candidates are tried as connected groups and one by one, the largest estimated saving first, until none saves.
    Returns ([(op index, why)], the record: the model's estimated time before / after, each group taken or left with
    its figures, as shares of the all-int8 plan's time)."""
    sg = model.subgraphs[0]
    plan = Assignment(model, kinds, io, runtime)
    slow = [i for i in range(len(sg.operators)) if plan.kind(i) == "int8"
            and ratio(model.op_name(sg.operators[i]), runtime) > 1.0
            and rule(model.op_name(sg.operators[i]), True)[0] == "float32"]
    before = plan.total()
    groups = _groups(model, slow)
    tries = [g for g in groups] + [[i] for g in groups if len(g) > 1 for i in g]
    taken, why = [], {}
    while tries:
        scored = sorted(((plan.delta(g, "float32"), g) for g in tries), key=lambda x: x[0]["total"])
        best, group = scored[0]
        if best["total"] >= 0:
            break
        for i in group:
            plan.kinds[i] = "float32"
            name = model.op_name(sg.operators[i])
            why[i] = (f"int8 {name} runs {ratio(name, runtime):.3g}x float32's time on {runtime} (op-table speed "
                      f"fact): float32 with {len(group)} op(s) saves an estimated {_pct(-best['op_time'], before)} of "
                      f"the model's time, its conversions cost {_pct(best['conversion_time'], before)}")
        taken.append({"ops": [label(i) for i in group], **{k: _share(v, before) for k, v in best.items()
                                                             if k != "added"}, "conversions_added": best["added"]})
        tries = [g for g in tries if not set(g) & set(group)]
    left = [{"ops": [label(i) for i in g], **{k: _share(v, before) for k, v in d.items() if k != "added"},
             "conversions_added": d["added"]}
            for g in groups if not set(g) & set(why) for d in [plan.delta(g, "float32")]]
    record = {"runtime": runtime, "estimate": SPEED_NOTE, "candidates": len(slow), "widened": taken,
              "left_int8": left, "time_after": _share(plan.total(), before)}
    return [(i, why[i]) for i in sorted(why)], record


def _share(value: float, whole: float) -> float:
    return round(value / whole, 4) if whole else 0.0


def _pct(value: float, whole: float) -> str:
    return f"{100.0 * value / whole:.1f}%" if whole else "0%"


def compare(written: Model, source: Model, runtime: str) -> dict:
    """The written model's estimated time against its float source's on ``runtime`` (both from the op table's
    speed facts): {"runtime", "ratio" (written / source), "slower", "conversions" (QUANTIZE / DEQUANTIZE ops),
    "conversion_share" (of the written model's time), "estimate": how it was found}."""
    w_time, per_op = model_time(written, runtime)
    s_time, _ = model_time(source, runtime)
    sg = written.subgraphs[0]
    conv = [(i, c) for i, c in per_op if written.op_name(sg.operators[i]) in ("QUANTIZE", "DEQUANTIZE")]
    r = w_time / s_time if s_time else 1.0
    return {"runtime": runtime, "ratio": round(r, 3), "slower": r > 1.0, "conversions": len(conv),
            "conversion_share": _share(sum(c for _, c in conv), w_time), "estimate": SPEED_NOTE}
