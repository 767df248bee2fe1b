"""Joins of very different ranges. A join (the row's ``join``: CONCATENATION, PACK) puts its parts under one scale;
a part spanning a small fraction of the whole gets fewer than ``JOIN_LEVELS`` steps (YOLO-style heads join boxes in
pixels with scores in 0..1). When the join's value is a model output (through ops that only move values, the row's
``moves_values``), each part keeps its own quantization up to the join: with float I/O the join runs in float32,
with integer I/O in int16 (each part requantized into it). A wide join other ops read is a warning."""

from __future__ import annotations

from converters.quantize.builder import is_const, is_float
from edge_sdk.model.types import Model, Operator
from edge_sdk.runtime import op_table

JOIN_LEVELS = 16  # a part with fewer steps than this under the join's shared scale is crushed


def _span(lo: float, hi: float) -> float:
    return max(hi, 0.0) - min(lo, 0.0)


def wide_joins(model: Model, ranges: dict, act: str, excluded: set[int]) -> list[dict]:
    """The joins whose parts are of very different ranges. Each entry names the parts, their ranges and steps, and
    ``chain``: the value-moving ops from the join to a model output (``to_output``), or None when the join's value
    is read by other ops."""
    sg = model.subgraphs[0]
    levels = 255 if act == "INT8" else 65535
    cons: dict[int, list[int]] = {}
    for i, op in enumerate(sg.operators):
        for t in dict.fromkeys(op.inputs):
            if t >= 0:
                cons.setdefault(t, []).append(i)
    found = []
    for i, op in enumerate(sg.operators):
        name = model.op_name(op)
        if not op_table.row(name).join or i in excluded:
            continue
        parts = [t for t in op.inputs if is_float(model, t) and not is_const(model, t) and t in ranges]
        if len(parts) < 2:
            continue
        whole = _span(min(ranges[t][0] for t in parts), max(ranges[t][1] for t in parts))
        if not whole > 0:
            continue
        steps = {t: _span(*ranges[t]) / whole * levels for t in parts}
        if min(steps.values()) >= JOIN_LEVELS:
            continue
        chain: list[int] | None = []
        cur = op.outputs[0]
        while not (cur in sg.outputs and not cons.get(cur)):
            users = cons.get(cur, [])
            if cur in sg.outputs or len(users) != 1 or users[0] in excluded \
                    or not op_table.row(model.op_name(sg.operators[users[0]])).moves_values:
                chain = None
                break
            chain.append(users[0])
            cur = sg.operators[users[0]].outputs[0]
        found.append({"op_index": i, "op": name, "output": sg.tensors[op.outputs[0]].name,
                      "parts": [{"tensor": sg.tensors[t].name, "range": [float(ranges[t][0]), float(ranges[t][1])],
                                 "steps": round(float(steps[t]), 1)} for t in parts],
                      "chain": chain, "to_output": chain is not None})
    return found


def keep_wide_joins(model: Model, ranges: dict, act: str, io: str, excluded: set[int],
                    notes: list[str]) -> tuple[list[dict], set[int], set[int]]:
    """(the wide joins, ``excluded`` with the float32 ones, the ops kept in int16): a wide join whose value is a
    model output keeps each part's quantization (float32 with float I/O, int16 in an int8 model); a note per join."""
    joins = wide_joins(model, ranges, act, excluded)
    wide16: set[int] = set()
    for j in joins:
        crushed = ", ".join(f"'{p['tensor']}' ({p['range'][0]:.3g}..{p['range'][1]:.3g}: {p['steps']:.1f} steps)"
                            for p in j["parts"] if p["steps"] < JOIN_LEVELS)
        where = f"op {j['op_index']} {j['op']} '{j['output']}'"
        if j["to_output"] and io == "float32":
            j["kept"] = "float32"
            excluded = excluded | {j["op_index"], *j["chain"]}
            notes.append(f"{where} joins parts of very different ranges ({crushed} under one scale): "
                         "each part is quantized alone and the join runs in float32")
        elif j["to_output"] and act == "INT8":
            j["kept"] = "int16"
            wide16 |= {j["op_index"], *j["chain"]}
            notes.append(f"{where} joins parts of very different ranges ({crushed} under one int8 "
                         "scale): each part is quantized alone and the join (and the model output "
                         "it gives) is int16")
        else:
            j["kept"] = act.lower()
            notes.append(f"warning: {where} joins parts of very different ranges ({crushed} under "
                         "one scale) and other ops read it; the small-range parts lose precision "
                         "(exclude the join to keep it float)")
    return joins, excluded, wide16


def join_parts(model: Model, op: Operator) -> list[tuple[int, tuple]]:
    """(input tensor, index into the join's output selecting that input's part) for a join: a part of the output's
    rank is a slice along the axis (CONCATENATION), a part of one rank less is entry k of it (PACK)."""
    sg = model.subgraphs[0]
    out_rank = len(sg.tensors[op.outputs[0]].shape)
    axis = int((op.options or {}).get("axis", 0))
    axis = axis + out_rank if axis < 0 else axis
    parts, start = [], 0
    for k, t in enumerate(op.inputs):
        if t < 0:
            continue
        index = [slice(None)] * out_rank
        if len(sg.tensors[t].shape) < out_rank:
            index[axis] = k
        else:
            size = int(sg.tensors[t].shape[axis])
            index[axis] = slice(start, start + size)
            start += size
        parts.append((t, tuple(index)))
    return parts


def output_join(model: Model, t: int, produced: dict) -> int | None:
    """The join whose value model output ``t`` is (through value-moving ops), or None."""
    sg = model.subgraphs[0]
    while t in produced:
        op = sg.operators[produced[t]]
        row = op_table.row(model.op_name(op))
        if row.join:
            return op.outputs[0]
        if not row.moves_values:
            return None
        t = op.inputs[0]
    return None
