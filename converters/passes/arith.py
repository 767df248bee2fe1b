"""Division rewritten into what integer kernels run well.

- DIV(x, SQRT(v)) -> MUL(x, RSQRT(v)) when nothing else reads the SQRT (the LayerNorm pattern as PyTorch
  and Paddle export it: ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div). TFLM has int8 RSQRT and
  MUL but no int8 SQRT, and a DIV by a run-time value loses more in int8 than a MUL.
- DIV(x, c) with a float constant c that has no zeros -> MUL(x, 1 / c) (GELU's x / sqrt(2), scaled
  attention scores): MUL has int8 / int16 kernels everywhere, DIV has no int16 one. The result differs from
  the division by at most one float32 rounding.
"""

from __future__ import annotations

import numpy as np

from converters import graph as G
from edge_sdk.model.types import Model


def apply(model: Model, sg: int = 0) -> int:
    sub = model.subgraphs[sg]
    changed = 0
    prod = G.producers(model, sg)
    cons = G.consumers(model, sg)
    for i, op in enumerate(sub.operators):
        if G.op_name(model, op) != "DIV" or len(op.inputs) != 2 or len(op.outputs) != 1:
            continue
        x, d = op.inputs
        if sub.tensors[x].type != "FLOAT32" or sub.tensors[d].type != "FLOAT32":
            continue
        act = G.options(model, op).get("fused_activation_function", "NONE")
        value = G.constant_value(model, d, sg)
        if value is not None:
            if value.size == 0 or not np.all(np.isfinite(value)) or np.any(value == 0):
                continue
            r = G.add_constant(model, sub.tensors[d].name + "_reciprocal",
                               (np.float32(1.0) / value.astype(np.float32)).astype(np.float32), sg=sg)
            G.set_op(model, i, "MUL", [x, r], list(op.outputs), {"fused_activation_function": act}, sg=sg)
            changed += 1
            continue
        p = prod.get(d)
        if p is None or G.op_name(model, sub.operators[p]) != "SQRT" or cons.get(d) != [i] \
                or G.is_graph_output(model, d, sg):
            continue
        sq = sub.operators[p]
        G.set_op(model, p, "RSQRT", list(sq.inputs), [d], sg=sg)
        G.set_op(model, i, "MUL", [x, d], list(op.outputs), {"fused_activation_function": act}, sg=sg)
        sub.tensors[d].name = G.unique_name(model, sub.tensors[d].name + "_rsqrt", sg)
        changed += 1
    return changed


def run(model: Model) -> Model:
    G.apply_everywhere(model, apply)
    return model
