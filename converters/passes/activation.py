"""Activation fusion: a RELU / RELU6 / RELU_N1_TO_1 after an op with a fused activation becomes that op's
``fused_activation_function`` when the op's output has no other reader.

First, clamps written as MAXIMUM / MINIMUM with a uniform constant (ONNX Clip, Relu as Max(x, 0)) and chains
of clamps are turned into the one activation op they equal: MAXIMUM(x, 0) -> RELU,
MINIMUM(MAXIMUM(x, 0), 6) -> RELU6, MINIMUM(MAXIMUM(x, -1), 1) -> RELU_N1_TO_1 (either order, and clamps
after an already fused activation compose: RELU then RELU6 is RELU6).

Producers that take a fused activation (as TFLM's kernels allow) are the op table rows with
``fused_activation``: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, FULLY_CONNECTED, ADD, SUB, MUL, DIV and the
2-D pools. CONCATENATION is not one: TFLM refuses a fused activation on it. The clamp of each activation is its
row's ``activation_range``.

Then hard-swish written out (Paddle's and Keras' exports: x * relu6(x + 3) / 6, the division by 6 already
a multiplication by 1/6 from ``passes.arith``, in either order) becomes one HARD_SWISH op, which has int8
kernels everywhere: y = MUL(MUL(x, ADD(x, 3, RELU6)), 1/6) or MUL(MUL(x, 1/6), ADD(x, 3, RELU6)).
"""

from __future__ import annotations

import math

from converters import graph as G
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table
from edge_sdk.runtime.kernels.quant import activation_range  # fused activation (or op of that name) -> [lo, hi]

INF = math.inf
NO_ACTIVATION = "NONE"

# clamp range -> the activation (op) that is that clamp
_BY_RANGE = {(-INF, INF): NO_ACTIVATION} | {r.activation_range: name for name, r in op_table.ROWS.items()
                                            if r.activation_range is not None}


def clamp_range(model: Model, index: int, sg: int = 0) -> tuple[float, float] | None:
    """The [lo, hi] a float clamp-like op applies to its input 0, or None when it is not one."""
    sub = model.subgraphs[sg]
    op = sub.operators[index]
    name = G.op_name(model, op)
    if not op.outputs or sub.tensors[op.outputs[0]].type != "FLOAT32":
        return None
    if activation_range(name) is not None:
        return activation_range(name)
    if name in ("MAXIMUM", "MINIMUM") and len(op.inputs) == 2:
        x, c = op.inputs
        value = G.constant_value(model, c, sg)
        if value is None:
            x, c = c, x
            value = G.constant_value(model, c, sg)
        if value is None or value.size == 0 or x < 0:
            return None
        flat = value.reshape(-1)
        if not (flat == flat[0]).all():
            return None
        # The constant must not broadcast the other input to a bigger shape.
        if sub.tensors[x].shape != sub.tensors[op.outputs[0]].shape:
            return None
        v = float(flat[0])
        return (v, INF) if name == "MAXIMUM" else (-INF, v)
    return None


def _data_input(model: Model, index: int, sg: int) -> int:
    op = model.subgraphs[sg].operators[index]
    if G.op_name(model, op) in ("MAXIMUM", "MINIMUM") and G.is_constant(model, op.inputs[0], sg):
        return op.inputs[1]
    return op.inputs[0]


def canonicalize_clamps(model: Model, sg: int = 0) -> int:
    """Merge chains of clamps and rewrite each as the activation op it equals; returns rewrites made."""
    changes = 0
    sub = model.subgraphs[sg]
    i = 0
    while i < len(sub.operators):
        rng = clamp_range(model, i, sg)
        if rng is None:
            i += 1
            continue
        op = sub.operators[i]
        x = _data_input(model, i, sg)
        prod = G.producers(model, sg)
        cons = G.consumers(model, sg)
        j = prod.get(x)
        if j is not None and G.sole_consumer(model, x, sg, cons) == i:
            inner = clamp_range(model, j, sg)
            if inner is not None:
                merged = (max(rng[0], inner[0]), min(rng[1], inner[1]))
                if merged in _BY_RANGE and merged[0] <= merged[1]:
                    G.set_op(model, i, _BY_RANGE[merged], [_data_input(model, j, sg)], list(op.outputs), sg=sg)
                    G.remove_ops(model, [j], sg)
                    changes += 1
                    i = j
                    continue
        name = G.op_name(model, op)
        if name in ("MAXIMUM", "MINIMUM") and rng in _BY_RANGE:
            G.set_op(model, i, _BY_RANGE[rng], [x], list(op.outputs), sg=sg)
            changes += 1
        i += 1
    return changes


def fuse(model: Model, sg: int = 0) -> int:
    """Fold activation ops into their producer's fused activation; returns the number fused."""
    fused = 0
    sub = model.subgraphs[sg]
    i = 0
    while i < len(sub.operators):
        op = sub.operators[i]
        name = G.op_name(model, op)
        if op_table.row(name).activation_range is None or not op.inputs:
            i += 1
            continue
        x = op.inputs[0]
        prod = G.producers(model, sg)
        j = prod.get(x)
        if j is None or G.sole_consumer(model, x, sg) != i:
            i += 1
            continue
        p = sub.operators[j]
        pname = G.op_name(model, p)
        if not op_table.row(pname).fused_activation or len(p.outputs) != 1 or sub.tensors[x].type != "FLOAT32":
            i += 1
            continue
        opts = G.options(model, p)
        current = opts.get("fused_activation_function", NO_ACTIVATION)
        a, b = activation_range(current), op_table.row(name).activation_range
        if a is None:
            i += 1
            continue
        merged = (max(a[0], b[0]), min(a[1], b[1]))
        if merged not in _BY_RANGE:
            i += 1
            continue
        opts["fused_activation_function"] = _BY_RANGE[merged]
        p.options = opts
        y = op.outputs[0]
        p.outputs = [y]
        G.remove_ops(model, [i], sg)
        fused += 1
        i = j + 1
    return fused


def _scalar(model: Model, t: int, sg: int) -> float | None:
    v = G.constant_value(model, t, sg)
    if v is None or v.size != 1 or v.dtype.kind != "f":
        return None
    return float(v.reshape(-1)[0])


def _mul_by(model: Model, op, value: float, sg: int) -> int | None:
    """The data input of MUL(x, c) with c the scalar ``value`` (either side), no fused activation."""
    if G.op_name(model, op) != "MUL" or len(op.inputs) != 2 or \
            G.options(model, op).get("fused_activation_function", "NONE") != "NONE":
        return None
    for a, c in (op.inputs, op.inputs[::-1]):
        v = _scalar(model, c, sg)
        if v is not None and abs(v - value) <= 1e-6 * abs(value) and not G.is_constant(model, a, sg):
            return a
    return None


def _relu6_of_plus3(model: Model, t: int, prod: dict, sg: int) -> int | None:
    """x when tensor t is ADD(x, 3) with a fused RELU6."""
    j = prod.get(t)
    if j is None:
        return None
    op = model.subgraphs[sg].operators[j]
    if G.op_name(model, op) != "ADD" or G.options(model, op).get("fused_activation_function") != "RELU6":
        return None
    for a, c in (op.inputs, op.inputs[::-1]):
        if _scalar(model, c, sg) == 3.0 and not G.is_constant(model, a, sg):
            return a
    return None


def fuse_hard_swish(model: Model, sg: int = 0) -> int:
    sub = model.subgraphs[sg]
    changed = 0
    i = 0
    while i < len(sub.operators):
        op = sub.operators[i]
        if G.op_name(model, op) != "MUL" or len(op.inputs) != 2 or len(op.outputs) != 1 or \
                sub.tensors[op.outputs[0]].type != "FLOAT32" or \
                G.options(model, op).get("fused_activation_function", "NONE") != "NONE":
            i += 1
            continue
        prod, cons = G.producers(model, sg), G.consumers(model, sg)
        y = op.outputs[0]
        found = None  # (x, ops to drop)
        m = _mul_by(model, op, 1.0 / 6.0, sg)
        if m is not None and m in prod and G.sole_consumer(model, m, sg, cons) == i:  # MUL(MUL(x, t), 1/6)
            inner = sub.operators[prod[m]]
            if G.op_name(model, inner) == "MUL" and len(inner.inputs) == 2 and \
                    G.options(model, inner).get("fused_activation_function", "NONE") == "NONE":
                for x, t in (inner.inputs, inner.inputs[::-1]):
                    if _relu6_of_plus3(model, t, prod, sg) == x and G.sole_consumer(model, t, sg, cons) == prod[m]:
                        found = (x, [prod[m], prod[t]])
                        break
        if found is None:  # MUL(MUL(x, 1/6), t)
            for a, t in (op.inputs, op.inputs[::-1]):
                if a not in prod or t not in prod:
                    continue
                x = _mul_by(model, sub.operators[prod[a]], 1.0 / 6.0, sg)
                if x is not None and _relu6_of_plus3(model, t, prod, sg) == x and \
                        G.sole_consumer(model, a, sg, cons) == i and G.sole_consumer(model, t, sg, cons) == i:
                    found = (x, [prod[a], prod[t]])
                    break
        if found is None or sub.tensors[found[0]].shape != sub.tensors[y].shape:
            i += 1
            continue
        x, drop = found
        G.set_op(model, i, "HARD_SWISH", [x], [y], sg=sg)
        G.remove_ops(model, drop, sg)
        changed += 1
        i = i - sum(d < i for d in drop) + 1  # the dropped producers came before it
    return changed


def apply(model: Model, sg: int = 0) -> int:
    return canonicalize_clamps(model, sg) + fuse(model, sg) + fuse_hard_swish(model, sg)


def run(model: Model) -> Model:
    G.apply_everywhere(model, apply)
    return model
