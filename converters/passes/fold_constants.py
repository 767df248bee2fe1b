"""Constant folding: an operator whose inputs are all constants is run once, now, and replaced by a constant.

The value comes from edge-sdk's own kernels: the operator is copied into a one-operator model (its constant
inputs as constants) and run by ``edge_sdk.Interpreter``, so folding computes exactly what the interpreter
would at run time.

Not folded: ops with no inputs or with side effects (resource variables, control flow), DEQUANTIZE (a
float16/int8 weight behind a DEQUANTIZE is deliberate compression), ops touching variable tensors, ops we
have no kernel for, and results larger than ``MAX_FOLDED_BYTES`` that would also grow the model (a TILE or
BROADCAST_TO of a small constant stays an op).
"""

from __future__ import annotations

import numpy as np

from converters import graph as G
from edge_sdk.errors import ModelError
from edge_sdk.model.types import Buffer, Model, Operator, OperatorCode, SubGraph, Tensor
from edge_sdk.runtime import op_table

MAX_FOLDED_BYTES = 1 << 20
# Besides ops with effects or random draws (their op table rows say so): DEQUANTIZE (a float16 / int8 weight
# behind it is deliberate compression) and CUSTOM ops.
KEEP_OPS = ("DEQUANTIZE", "CUSTOM")


def never_folded(name: str) -> bool:
    r = op_table.row(name)
    return bool(r.effects) or r.random or name in KEEP_OPS


def evaluate(model: Model, index: int, sg: int = 0) -> list[np.ndarray] | None:
    """Run operator ``index`` (all inputs constant) alone; its outputs, or None when our kernels cannot."""
    from edge_sdk import Interpreter

    sub = model.subgraphs[sg]
    op = sub.operators[index]
    tensors: list[Tensor] = []
    buffers = [Buffer()]
    remap = {-1: -1}
    for t in list(op.inputs) + list(op.outputs):
        if t in remap:
            continue
        src = sub.tensors[t]
        buf = 0
        if G.is_constant(model, t, sg):
            buffers.append(model.buffers[src.buffer])
            buf = len(buffers) - 1
        tensors.append(Tensor(name=f"t{len(tensors)}", shape=src.shape, type=src.type, buffer=buf,
                              quantization=src.quantization, sparsity=src.sparsity))
        remap[t] = len(tensors) - 1
    code = model.operator_codes[op.opcode_index]
    one = Operator(opcode_index=0, inputs=[remap[t] for t in op.inputs], outputs=[remap[t] for t in op.outputs],
                   options_type=op.options_type, options=op.options, custom_options=op.custom_options)
    mini = Model(operator_codes=[OperatorCode(code.builtin_code, code.custom_code, code.version)],
                 subgraphs=[SubGraph(tensors=tensors, inputs=[], outputs=one.outputs, operators=[one])],
                 buffers=buffers)
    try:
        it = Interpreter(model=mini)
        it.allocate_tensors()
        it.invoke()
        return [np.array(it.get_tensor(t)) for t in one.outputs]
    except (ModelError, RuntimeError, ValueError):
        return None


def foldable(model: Model, index: int, sg: int = 0) -> bool:
    sub = model.subgraphs[sg]
    op = sub.operators[index]
    name = G.op_name(model, op)
    real = [t for t in op.inputs if t >= 0]
    if never_folded(name) or not real or not op.outputs or op.intermediates:
        return False
    if any(sub.tensors[t].is_variable for t in real + list(op.outputs)):
        return False
    if any(G.is_graph_output(model, t, sg) for t in op.outputs):
        return False  # a subgraph output stays computed by an operator
    return all(G.is_constant(model, t, sg) for t in real)


def apply(model: Model, sg: int = 0) -> int:
    """Fold every foldable operator (repeatedly, so chains fold); returns how many were folded."""
    folded = 0
    sub = model.subgraphs[sg]
    i = 0
    while i < len(sub.operators):
        if not foldable(model, i, sg):
            i += 1
            continue
        op = sub.operators[i]
        values = evaluate(model, i, sg)
        in_bytes = sum(len(model.buffers[sub.tensors[t].buffer].data) for t in op.inputs if t >= 0)
        if values is None or any(
                v.nbytes > MAX_FOLDED_BYTES and v.nbytes > in_bytes for v in values):
            i += 1
            continue
        for t, v in zip(op.outputs, values):
            G.set_constant(model, t, v, sg)
        G.remove_ops(model, [i], sg)
        folded += 1
    return folded


def run(model: Model) -> Model:
    G.apply_everywhere(model, apply, dce=False)
    return model
