"""Activation fusion: a RELU / RELU6 / RELU_N1_TO_1 after an op with a fused activation becomes that op's
``fused_activation_function`` when the op's output has no other reader.

First, clamps written as MAXIMUM / MINIMUM with a uniform constant (ONNX Clip, Relu as Max(x, 0)) and chains
of clamps are turned into the one activation op they equal: MAXIMUM(x, 0) -> RELU,
MINIMUM(MAXIMUM(x, 0), 6) -> RELU6, MINIMUM(MAXIMUM(x, -1), 1) -> RELU_N1_TO_1 (either order, and clamps
after an already fused activation compose: RELU then RELU6 is RELU6).

Producers that take a fused activation (as TFLM's kernels allow): CONV_2D, DEPTHWISE_CONV_2D,
TRANSPOSE_CONV, FULLY_CONNECTED, ADD, SUB, MUL, DIV, AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D.
CONCATENATION is not one: TFLM refuses a fused activation on it.
"""

from __future__ import annotations

import math

from converters import graph as G
from edge_sdk.model.types import Model

INF = math.inf
RANGES = {"NONE": (-INF, INF), "RELU": (0.0, INF), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}
_BY_RANGE = {v: k for k, v in RANGES.items()}
FUSABLE_PRODUCERS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED", "ADD", "SUB",
                               "MUL", "DIV", "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"})


def clamp_range(model: Model, index: int, sg: int = 0) -> tuple[float, float] | None:
    """The [lo, hi] a float clamp-like op applies to its input 0, or None when it is not one."""
    sub = model.subgraphs[sg]
    op = sub.operators[index]
    name = G.op_name(model, op)
    if not op.outputs or sub.tensors[op.outputs[0]].type != "FLOAT32":
        return None
    if name in RANGES:
        return RANGES[name]
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
        if name not in RANGES or name == "NONE" or not op.inputs:
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
        if pname not in FUSABLE_PRODUCERS or len(p.outputs) != 1 or sub.tensors[x].type != "FLOAT32":
            i += 1
            continue
        opts = G.options(model, p)
        current = opts.get("fused_activation_function", "NONE")
        if current not in RANGES:
            i += 1
            continue
        a, b = RANGES[current], RANGES[name]
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


def apply(model: Model, sg: int = 0) -> int:
    return canonicalize_clamps(model, sg) + fuse(model, sg)


def run(model: Model) -> Model:
    for sg in range(len(model.subgraphs)):
        apply(model, sg)
    G.eliminate_dead_code(model)
    return model
