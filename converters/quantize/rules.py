"""The integer graph: every op of the float model rewritten by its quantization rule, one function per rule. The
rule is a fact of the op's row in ``edge_sdk.runtime.op_table``: ``weights`` (a weighted layer: per-channel int8
weights along the output-channel axis, an int32 / int64 bias) or ``quant``:

- "same:N": the output keeps data input N's quantization (pools, reshapes, transposes, pads, slices, gathers,
  resizes, REDUCE_MAX, TOPK_V2's values); an int16 tensor from a widened op stays int16 through the row's
  ``int16`` "op" / "pass" ops;
- "shared": inputs and output share one quantization over all their ranges (CONCATENATION, PACK, MAXIMUM,
  MINIMUM; an input quantized differently is requantized by a QUANTIZE);
- "own": the output's own calibrated range; "fixed": the range in the row's ``quant_fixed`` (SOFTMAX, LOGISTIC,
  TANH, LOG_SOFTMAX, as TFLM's kernels need);
- "index" / "logical": outputs that are not activations (indices, shapes, BOOL): inputs quantized, outputs copied;
- "compare": a comparison's float inputs keep their own quantization in int8 (TFLM rescales both sides to a common
  scale; each scale must be below 1, else the comparison runs in float32 on dequantized inputs) and share one in
  int16x8 (the int16 kernels compare raw values); its BOOL output is copied;
- "select": SELECT / SELECT_V2 copy values: both value inputs and the output share one quantization (as a join's
  parts do), the condition stays BOOL;
- "calls": IF / WHILE pass values in and out of their subgraphs at one quantization shared with them
  (``converters.quantize.subgraphs``).

Besides the row's rule: an excluded op stays float (``keep_float``), an op without float tensors is copied
(``keep_integer``), a wide join kept in int16 in an int8 model requantizes each part into its int16 scale
(``wide_join``).
"""

from __future__ import annotations

import copy
import math

import numpy as np

from converters.quantize.builder import QuantGraph, integer_only, is_const, is_float
from converters.quantize import joins
from converters.quantize.given import given_weight_scales, source_weight_scale
from converters.quantize.scales import affine, limits, quantize_array, round_away, weight_scales
from edge_sdk.errors import ConversionError, SettingError
from edge_sdk.model.types import Model, Operator
from edge_sdk.runtime import op_table
from edge_sdk.runtime.kernels.quant import INT32_MAX


def is_weighted(row: op_table.OpRow) -> bool:
    """The weighted-layer rule applies: the row names its weights input and their output-channel axis."""
    return row.weights is not None and row.weights[2] is not None


# ================================================================================================ which rule
def quantizable(model: Model, op: Operator) -> str | None:
    """None when the quantizer has a rule for this op, else why not."""
    if integer_only(model, op):
        return None
    row = op_table.row(model.op_name(op))
    if is_weighted(row):
        return None if is_const(model, op.inputs[row.weights[0]]) else "its weights are not constant"
    if row.quant:
        return None
    return "no int8 rule for this op (keep it float with exclude)"


def unquantizable(model: Model, act: str, excluded: set[int]) -> list[tuple[int, str]]:
    """(op index, why) for every op not in ``excluded`` that has no rule in this activation type."""
    found = []
    for i, op in enumerate(model.subgraphs[0].operators):
        if i in excluded:
            continue
        why = quantizable(model, op)
        if why is None and act == "INT16" and op_table.row(model.op_name(op)).int16 == "none":
            why = "no int16x8 kernel for this op (keep it float with exclude, or use int8)"
        if why is not None:
            found.append((i, why))
    return found


def op_label(model: Model, i: int) -> str:
    """``op 3 CONV_2D (output 'conv1')``"""
    sg = model.subgraphs[0]
    return f"op {i} {model.op_name(sg.operators[i])} (output '{sg.tensors[sg.operators[i].outputs[0]].name}')"


def check_ops(model: Model, act: str, excluded: set[int]) -> None:
    """Every op without a quantization rule, at once (before any calibration runs)."""
    problems = [f"{op_label(model, i)}: {why}" for i, why in unquantizable(model, act, excluded)]
    if problems:
        raise ConversionError(f"quantize: {len(problems)} op(s) cannot be quantized to {act.lower()}", problems)


def resolve_exclude(model: Model, exclude) -> set[int]:
    """The op indices ``exclude`` names (op indices, or names of an op's output tensors)."""
    sg = model.subgraphs[0]
    by_name = {}
    for i, op in enumerate(sg.operators):
        for t in op.outputs:
            if t >= 0:
                by_name[sg.tensors[t].name] = i
    out, unknown = set(), []
    for e in exclude or ():
        if isinstance(e, (int, np.integer)) and not isinstance(e, bool):
            if not 0 <= e < len(sg.operators):
                unknown.append(f"op index {e} (the model has {len(sg.operators)} ops)")
            else:
                out.add(int(e))
        elif isinstance(e, str) and e in by_name:
            out.add(by_name[e])
        elif isinstance(e, str) and e.isdigit() and int(e) < len(sg.operators):
            out.add(int(e))
        else:
            unknown.append(f"{e!r} names no op index or op output tensor")
    if unknown:
        raise SettingError("--exclude (exclude=): " + "; ".join(unknown))
    return out


# ================================================================================================ the graph
def integer_graph(model: Model, ranges: dict, act: str, io: str, excluded: set[int],
                  wide16: set[int] = frozenset(), w16: set[int] = frozenset(),
                  float_out: set[int] = frozenset(), float_in: bool = False) -> tuple[Model, QuantGraph]:
    """The integer graph of ``model`` (every op not in ``excluded`` has a rule: ``check_ops`` said so). Ops in
    ``wide16`` (a wide join and the shape ops after it, int8 mode) run in int16: each part requantized from its own
    int8 scale to the join's int16 one. Ops in ``w16`` (int8 mode) are widened to int16x8: int16 activations
    (symmetric), int8 weights, int64 biases, with QUANTIZE int8 -> int16 before them and int16 -> int8 after them;
    adjacent widened ops (and shape-only ops between them) pass int16 tensors along, and a widened op's model
    output stays int16. Ops in ``float_out`` (widened to float32 by the accuracy guard) and excluded ops with no
    quantization rule keep their model outputs float32 with integer I/O too: quantizing them there would undo the
    widening. With ``float_in`` so do the model inputs only such ops read (``float_inputs``)."""
    g = QuantGraph(model, act, ranges, wide16)
    # an op with no integer rule at all (TFLite_Detection_PostProcess: class ids, counts, box corners) keeps float
    # model outputs as TFLite's converter writes them: an int8 class id 1 reads back as 0.996
    no_rule = {i for i in excluded if not integer_only(model, g.sg.operators[i])
               and not op_table.row(model.op_name(g.sg.operators[i])).quant}
    kept_float, movers = float_inputs(model, set(float_out) | no_rule, set(wide16) | set(w16)) if float_in \
        else (set(), set())
    inputs = [g.model_input(t, "float32" if t in kept_float else io) for t in g.sg.inputs]
    for i, op in enumerate(g.sg.operators):
        rule = rule_of(model, i, op, set(excluded) | movers, wide16)
        rule(g, i, op, "INT16" if i in w16 else act)
    float_tensors = {t for i in set(float_out) | no_rule for t in g.sg.operators[i].outputs if t >= 0}
    outputs = [g.model_output(t, "float32" if t in float_tensors else io) for t in g.sg.outputs]
    return g.build(inputs, outputs), g


def float_inputs(model: Model, float_ops: set[int], integer_ops: set[int] = frozenset()) -> tuple[set[int], set[int]]:
    """(model inputs that stay float32 with integer I/O, the value-moving ops between them and the float ops): an
    input every reader of which runs float32 (``float_ops``: widened to float32 by the guard, no integer rule) --
    directly or through ops that only carry values (``_carries``: RESHAPE, TRANSPOSE, PAD, ...; those then run
    float too) -- would be quantized only to be dequantized: its quantization would undo the widening, as a
    float op's model output keeps float32. Raw audio at int8 loses a quiet signal before any op sees it."""
    sg = model.subgraphs[0]
    readers: dict[int, list[int]] = {}
    for i, op in enumerate(sg.operators):
        for t in dict.fromkeys(op.inputs):
            if t >= 0:
                readers.setdefault(t, []).append(i)
    kept, movers = set(), set()
    for t in sg.inputs:
        if not is_float(model, t):
            continue
        path, todo, ok, reached = set(), [t], True, False
        while todo and ok:
            cur = todo.pop()
            users = readers.get(cur, [])
            if cur in sg.outputs or not users:
                ok = False
            for i in users:
                op = sg.operators[i]
                if i in float_ops:
                    reached = True
                elif i not in integer_ops and _carries(model, op) and i not in path:
                    path.add(i)
                    todo += [o for o in op.outputs if o >= 0]
                elif i not in path:
                    ok = False
        if ok and reached:
            kept.add(t)
            movers |= path
    return kept, movers


def _carries(model: Model, op: Operator) -> bool:
    """The op passes its first input's values on without a quantization of its own (the row's ``moves_values``, or
    its ``quant`` "same:0": pads, pools, splits, resizes)."""
    row = op_table.row(model.op_name(op))
    return row.moves_values or (row.quant or "") == "same:0"


def rule_of(model: Model, i: int, op: Operator, excluded: set[int], wide16: set[int]):
    """The function that writes op i into the integer graph."""
    if i in excluded:
        return keep_float
    if integer_only(model, op):
        return keep_integer
    row = op_table.row(model.op_name(op))
    if is_weighted(row):
        return weighted
    if row.join and i in wide16:
        return wide_join
    rule = RULES.get(row.quant.split(":")[0])
    if rule is None:  # check_ops refused the model before: a caller that skipped it
        raise ConversionError(f"quantize: {op_label(model, i)} has no quantization rule")
    return rule


# ================================================================================================ the rules
# Each rule: (graph, source op index, source op, the op's activation type) -> the op added to the graph.
def keep_float(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """An excluded op: float inputs (DEQUANTIZE from their integer copies), float outputs."""
    ins = []
    for t in op.inputs:
        if t < 0:
            ins.append(t)
        elif is_const(g.src, t) or not is_float(g.src, t) or g.sg.tensors[t].is_variable:
            if t not in g.ft:
                g.ft[t] = g.copy_tensor(t)
            ins.append(g.ft[t])
        else:
            ins.append(g.get_f(t))
    outs = []
    for t in op.outputs:
        n = g.copy_tensor(t)
        g.ft[t] = n
        if not is_float(g.src, t):
            g.qt[t] = n
        outs.append(n)
    g.add_like(i, op, ins, outs, g.src.op_version(op), op.custom_options)


def keep_integer(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """Indices, counts, shapes: quantization leaves the op as it is."""
    outs = []
    for t in op.outputs:
        g.qt[t] = g.ft[t] = g.copy_tensor(t)
        outs.append(g.qt[t])
    g.add_like(i, op, [t if t < 0 else g.non_float(t) for t in op.inputs], outs, g.src.op_version(op),
               op.custom_options)


def weighted(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """A weighted layer (the row's ``weights``: input, bias input, output-channel axis): int8 weights per output
    channel, symmetric over [-127, 127]; the bias int32 (int64 in int16x8) at input scale * weight scale, a
    weight scale raised where the bias would overflow; the output its own calibrated range. Weights a QDQ source
    gave as int8 per tensor keep its integers and its one scale (``given.source_weight_scale``)."""
    src, sg = g.src, g.sg
    wi, bi, axis = op_table.row(src.op_name(op)).weights
    ins = [t if k in (wi, bi) else g.operand(t, oact) for k, t in enumerate(op.inputs)]
    data_in = next(t for k, t in enumerate(op.inputs) if k not in (wi, bi) and is_float(src, t))
    in_scale = g.params_of(g.get_q(data_in, type=oact))[0]
    w = np.asarray(src.tensor_data(0, op.inputs[wi]), np.float64)
    bias_t = op.inputs[bi] if bi is not None and bi < len(op.inputs) else -1
    bias = None
    if bias_t >= 0 and is_const(src, bias_t) and is_float(src, bias_t):
        bias = np.asarray(src.tensor_data(0, bias_t), np.float64).reshape(-1)
    bias_limit = INT32_MAX if oact == "INT8" else 2**63 - 1
    scales = weight_scales(w, axis, bias, in_scale, bias_limit)
    given = source_weight_scale(w, given_weight_scales(src)) if oact == "INT8" else None
    if given is not None and np.all(scales <= np.float32(given)):  # its bias fits at the source's scale too
        # a QDQ source's per-tensor int8 weights (quantize_static's default): its own integers, one scale for every
        # channel -- per-channel max-abs scales would round them again (up to 3 quanta off the source's)
        scales = np.full(w.shape[axis], given, np.float32)
    qw = quantize_array(w, scales, 0, -127, 127, np.int8, axis=axis)
    ins[wi] = g.add_tensor(sg.tensors[op.inputs[wi]], "INT8", g.quant(scales, 0, axis), qw)
    if bias_t >= 0:
        if bias is None:
            raise ConversionError("quantize: unsupported bias",
                                  [f"op {i} {src.op_name(op)}: its bias is not a float constant"])
        bscale = (np.float64(in_scale) * scales.astype(np.float64)).astype(np.float32)
        btype, bdtype = ("INT32", np.int32) if oact == "INT8" else ("INT64", np.int64)
        qb = np.clip(round_away(bias / bscale.astype(np.float64)), -bias_limit - 1, bias_limit).astype(bdtype)
        if bscale.size == 1 and qb.size > 1:
            bscale = np.full(qb.size, bscale[0], np.float32)
        ins[bi] = g.add_tensor(sg.tensors[bias_t], btype, g.quant(bscale, 0, 0), qb)
    outs = []
    for t in op.outputs:
        g.qt[t] = g.add_tensor(sg.tensors[t], oact, g.default_quant(t, oact))
        outs.append(g.qt[t])
    g.add_like(i, op, ins, outs, g.version(src.op_name(op), src.op_version(op), oact))


def wide_join(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """A join of very different ranges kept in int16 in an int8 model: each part requantized from its own int8
    scale to the join's symmetric int16 one."""
    src, sg, ranges = g.src, g.sg, g.ranges
    parts = [t for t in op.inputs if t >= 0 and is_float(src, t)]
    lo = min(min(ranges[t][0] for t in parts if t in ranges), 0.0)
    hi = max(max(ranges[t][1] for t in parts if t in ranges), 0.0)
    for t in op.inputs:
        if not is_const(src, t) or not is_float(src, t):
            continue
        d = np.asarray(src.tensor_data(0, t))
        if d.size:
            lo, hi = min(lo, float(d.min())), max(hi, float(d.max()))
    wide = g.quant(*affine(lo, hi, -32768, 32767, True))
    ins = []
    for t in op.inputs:
        if t < 0 or not is_float(src, t):
            ins.append(t if t < 0 else g.non_float(t))
            continue
        if is_const(src, t):
            d = np.asarray(src.tensor_data(0, t), np.float64)
            ins.append(g.add_tensor(sg.tensors[t], "INT16", copy.deepcopy(wide),
                                    quantize_array(d, wide.scale[0], 0, -32768, 32767, np.int16)))
            continue
        n = g.add_tensor(sg.tensors[t], "INT16", copy.deepcopy(wide), suffix="_int16")
        part = g.qt[t] if t in g.qt else g.ft[t]  # a float part (its producer kept float): no int8 step
        g.add_op("QUANTIZE", [part], [n], version=g.version("QUANTIZE", 1, "INT16"))
        ins.append(n)
    outs = []
    for t in op.outputs:
        g.qt[t] = g.add_tensor(sg.tensors[t], "INT16", copy.deepcopy(wide))
        outs.append(g.qt[t])
    g.add_like(i, op, ins, outs, g.version(src.op_name(op), src.op_version(op), "INT16"))


def same_as_input(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """"same:N": the outputs keep data input N's quantization (and type: int16 from a widened op passes through
    the row's int16 "op" / "pass" ops); other float inputs (PADV2's pad value) take the data's quantization."""
    src, name = g.src, g.src.op_name(op)
    row = op_table.row(name)
    di = int(row.quant.split(":")[1])
    data_q = None
    ins = []
    for k, t in enumerate(op.inputs):
        if t < 0:
            ins.append(t)
        elif k == di:
            if is_const(src, t):
                ins.append(g.const(t, type=oact))
            elif t in g.qt and g.tensors[g.qt[t]].type == "INT16" and row.int16 in ("op", "pass"):
                ins.append(g.qt[t])  # int16 from a widened op: kept int16 through shape-only ops
            else:
                ins.append(g.get_q(t, type=oact))
            data_q = g.tensors[ins[-1]].quantization
            oact = g.tensors[ins[-1]].type
        else:
            ins.append(g.operand(t, oact, data_q))
    out_type = g.tensors[ins[di]].type if di < len(ins) and ins[di] >= 0 else g.act
    version = src.op_version(op)
    if i in g.wide16 or (out_type == "INT16" and g.act == "INT8"):  # int16 in an int8 model: its op version
        version = g.version(name, version, "INT16")
    outs = []
    for t in op.outputs:
        if is_float(src, t):
            g.qt[t] = g.add_tensor(g.sg.tensors[t], out_type, copy.deepcopy(data_q))
        else:
            g.qt[t] = g.ft[t] = g.copy_tensor(t)
        outs.append(g.qt[t])
    g.add_like(i, op, ins, outs, g.version(name, version, oact))


def shared(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """"shared": inputs and output share one quantization over all their ranges (and float constants' values)."""
    src, ranges = g.src, g.ranges
    float_ins = [t for t in op.inputs if t >= 0 and is_float(src, t)]
    lo = min([ranges[t][0] for t in float_ins + list(op.outputs) if t in ranges] or [0.0])
    hi = max([ranges[t][1] for t in float_ins + list(op.outputs) if t in ranges] or [0.0])
    for t in float_ins:
        if is_const(src, t):
            d = np.asarray(src.tensor_data(0, t))
            if d.size:
                lo, hi = min(lo, float(d.min())), max(hi, float(d.max()))
    one = g.quant(*affine(lo, hi, *limits(oact), oact == "INT16"))
    ins = [g.operand(t, oact, one) for t in op.inputs]
    outs = []
    for t in op.outputs:
        g.qt[t] = g.add_tensor(g.sg.tensors[t], oact, copy.deepcopy(one))
        outs.append(g.qt[t])
    g.add_like(i, op, ins, outs, g.version(src.op_name(op), src.op_version(op), oact))


def own(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """"own": float inputs quantized (constants with their own per-tensor params), the output its own calibrated
    range."""
    _own_inputs_then(g, i, op, oact, lambda t: g.default_quant(t, oact))


def fixed(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """"fixed": the output quantization the row's ``quant_fixed`` gives for the activation type."""
    scale, zp = next((s, z) for a, s, z in op_table.row(g.src.op_name(op)).quant_fixed if a == oact)
    _own_inputs_then(g, i, op, oact, lambda t: g.quant(scale, zp))


def index(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """"index" / "logical": outputs that are not activations (indices, shapes, BOOL) are copied."""
    _own_inputs_then(g, i, op, oact, lambda t: g.default_quant(t, oact))


def _own_inputs_then(g: QuantGraph, i: int, op: Operator, oact: str, out_quant) -> None:
    narrow = op_table.row(g.src.op_name(op)).int16_int8_inputs if oact == "INT16" else ()  # PRELU's int8 alpha
    ins = [g.operand(t, "INT8" if k in narrow else oact) for k, t in enumerate(op.inputs)]
    outs = []
    for t in op.outputs:
        if not is_float(g.src, t):
            g.qt[t] = g.ft[t] = g.copy_tensor(t)
        else:
            g.qt[t] = g.add_tensor(g.sg.tensors[t], oact, out_quant(t))
        outs.append(g.qt[t])
    g.add_like(i, op, ins, outs, g.version(g.src.op_name(op), g.src.op_version(op), oact))


def compare(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """"compare": in int8 each float input keeps its own quantization (TFLM's rescaling needs each scale below 1,
    else the comparison reads float32 inputs); in int16x8 the inputs share one. The BOOL output is copied."""
    values = [t for t in op.inputs if t >= 0 and is_float(g.src, t)]
    if g.act == "INT16":
        _values_op(g, i, op, oact, values, _span_quant(g, values))
        return
    if all(0.0 < _int8_scale(g, t) < 1.0 for t in values):
        _values_op(g, i, op, oact, values, None)
        return
    g.float_comparisons.append(g.sg.tensors[op.outputs[0]].name)
    ins = []
    for t in op.inputs:
        if t < 0 or t not in values:
            ins.append(t if t < 0 else g.non_float(t))
        elif is_const(g.src, t):
            ins.append(g.ft.setdefault(t, g.copy_tensor(t)))
        else:
            ins.append(g.get_f(t))
    outs = [g.qt.setdefault(t, g.ft.setdefault(t, g.copy_tensor(t))) for t in op.outputs]
    g.add_like(i, op, ins, outs, g.version(g.src.op_name(op), g.src.op_version(op), oact))


def select(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """"select": the value inputs and the output share one quantization. The run-time values set the range; a
    constant branch widens it only while the run-time part keeps at least 1/JOIN_LEVELS of it, else it saturates
    to the range's end (a mask fill such as -1e9 or -inf before a SOFTMAX), said in the report notes."""
    src = g.src
    values = [t for k, t in enumerate(op.inputs) if k > 0 and t >= 0 and is_float(src, t)]
    if all(is_const(src, t) for t in values):
        _values_op(g, i, op, oact, values, _span_quant(g, values + [t for t in op.outputs if t >= 0]))
        return
    lo, hi = 0.0, 0.0
    for t in values:
        if not is_const(src, t) and t in g.ranges:
            lo, hi = min(lo, g.ranges[t][0]), max(hi, g.ranges[t][1])
    span = hi - lo
    for t in values:
        if not is_const(src, t):
            continue
        d = np.asarray(src.tensor_data(0, t), np.float64)
        if not d.size:
            continue
        clo, chi = min(lo, float(d.min())), max(hi, float(d.max()))
        if math.isfinite(clo) and math.isfinite(chi) and (span <= 0 or chi - clo <= joins.JOIN_LEVELS * span):
            lo, hi = clo, chi
        else:
            g.select_saturated.append((op.outputs[0], t, float(d.min()), float(d.max())))
    _values_op(g, i, op, oact, values, g.quant(*affine(lo, hi, g.qmin, g.qmax, g.act == "INT16")))


def _const_range(g: QuantGraph, t: int) -> tuple[float, float]:
    d = np.asarray(g.src.tensor_data(0, t))
    return (float(d.min()), float(d.max())) if d.size else (0.0, 0.0)


def _span_quant(g: QuantGraph, tensors: list[int]):
    """One quantization over the ranges of ``tensors`` (constants by their values)."""
    lo, hi = 0.0, 0.0
    for t in tensors:
        r = _const_range(g, t) if is_const(g.src, t) else g.ranges.get(t)
        if r is not None:
            lo, hi = min(lo, r[0]), max(hi, r[1])
    return g.quant(*affine(lo, hi, g.qmin, g.qmax, g.act == "INT16"))


def _int8_scale(g: QuantGraph, t: int) -> float:
    if is_const(g.src, t):
        return affine(*_const_range(g, t), g.qmin, g.qmax, False)[0]
    return g.params_of(g.qt[t])[0] if t in g.qt else float(g.default_quant(t).scale[0])


def _values_op(g: QuantGraph, i: int, op: Operator, oact: str, values: list[int], quant) -> None:
    """A comparison or selection on quantized ``values`` (in ``quant``, or each its own when None)."""
    ins = []
    for t in op.inputs:
        if t < 0 or t not in values:
            ins.append(t if t < 0 else g.non_float(t))
        elif is_const(g.src, t):
            ins.append(g.const(t, quant))
        else:
            ins.append(g.get_q(t, quant))
    outs = []
    for t in op.outputs:
        if is_float(g.src, t):  # a SELECT's values
            g.qt[t] = g.add_tensor(g.sg.tensors[t], g.act, copy.deepcopy(quant))
        else:
            g.qt[t] = g.ft[t] = g.copy_tensor(t)
        outs.append(g.qt[t])
    g.add_like(i, op, ins, outs, g.version(g.src.op_name(op), g.src.op_version(op), oact))


def calls(g: QuantGraph, i: int, op: Operator, oact: str) -> None:
    """IF / WHILE in the integer graph: every float value it passes in or out in ``oact`` at the quantization of
    the shared range (``subgraphs.unify`` gave caller and callee tensors one), requantized where the caller's copy has
    another; conditions, counters and indices as they are. Its subgraphs are built by ``subgraphs.attach``."""
    ins = []
    for t in op.inputs:
        if t < 0 or not is_float(g.src, t):
            ins.append(t if t < 0 else g.non_float(t))
        elif is_const(g.src, t):
            ins.append(g.const(t, shared_quant(g, t, oact), oact))
        else:
            ins.append(g.get_q(t, shared_quant(g, t, oact), oact))
    outs = []
    for t in op.outputs:
        if is_float(g.src, t):
            n = g.add_tensor(g.sg.tensors[t], oact, shared_quant(g, t, oact))
            if oact == g.act:
                g.qt[t] = n
            else:
                g.qx[(t, oact)] = n
        else:
            n = g.qt[t] = g.ft[t] = g.copy_tensor(t)
        outs.append(n)
    g.add_like(i, op, ins, outs, g.src.op_version(op))


def shared_quant(g: QuantGraph, t: int, act: str):
    """The quantization of the one range ``t`` shares with the subgraphs it crosses into, in ``act``."""
    lo, hi = g.ranges.get(t, (0.0, 0.0))
    return g.quant(*affine(lo, hi, *limits(act), act == "INT16"))


RULES = {"same": same_as_input, "shared": shared, "own": own, "fixed": fixed, "index": index, "logical": index,
         "compare": compare, "select": select, "calls": calls}


# ================================================================================================ divisors
def zero_divisors(model: Model, g: QuantGraph, ranges: dict, observed: dict) -> list[tuple[int, str]]:
    """(source op index, why) of each quantized op of the built graph ``g`` whose divisor (the row's ``divisor``
    input) may be its zero point at run time, which LiteRT's int8 DIV refuses at invoke (div.cc ``data[i] !=
    zero_point``): a constant divisor with an element that quantizes to it, or a run-time divisor whose range
    (calibrated or given, and the observed extremes ``observed``: tensor -> (min, max)) comes within half a quantum
    of zero. Such an op must stay float."""
    found = []
    for k, op in enumerate(g.ops):
        i = g.origin.get(k)
        if i is None:
            continue
        src_op = g.sg.operators[i]
        d = op_table.row(model.op_name(src_op)).divisor
        if d is None or d >= len(op.inputs) or op.inputs[d] < 0:
            continue
        n, t = op.inputs[d], src_op.inputs[d]
        q = g.tensors[n].quantization
        if g.tensors[n].type not in ("INT8", "INT16") or q is None or not np.asarray(q.scale).size:
            continue
        scale, zp = float(q.scale[0]), int(q.zero_point[0])
        name = g.sg.tensors[t].name
        if is_const(model, t):
            values = np.frombuffer(g.buffers[g.tensors[n].buffer].data, g.tensors[n].type.lower())
            hits = int((values == zp).sum())
            if hits:
                found.append((i, f"its constant divisor '{name}' has {hits} element(s) that quantize to the zero "
                                 f"point ({zp}; LiteRT's int8 {model.op_name(src_op)} refuses them at invoke)"))
            continue
        spans = [r for r in (ranges.get(t), observed.get(t)) if r is not None]
        if not spans:
            continue
        lo, hi = min(r[0] for r in spans), max(r[1] for r in spans)
        if not (lo >= scale / 2 or hi <= -scale / 2):
            found.append((i, f"its divisor '{name}' ranges over [{lo:g}, {hi:g}], within half a quantum "
                             f"({scale:g}) of zero: it may quantize to its zero point, which LiteRT's int8 "
                             f"{model.op_name(src_op)} refuses at invoke"))
    return found
