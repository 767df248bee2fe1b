"""GELU fusion: an element-wise subgraph that computes GELU becomes one GELU op (builtin 150, ``approximate``
set for the tanh form).

Exporters write GELU out: PyTorch before opset 20 as ``x * 0.5 * (1 + erf(x / sqrt(2)))`` (our ONNX importer
turns Erf into a clamped rational function, ``/ sqrt(2)`` becomes ``* 1/sqrt(2)`` in ``passes.arith``), ONNX's
Gelu op as the same, the tanh form ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` with the cube as
``x * x * x`` or ``POW(x, 3)``, in any order of the multiplications. The pass does not match one spelling:
for each MUL it takes the candidate input x (an input of the MUL or of the MULs feeding it), collects the
ops between x and the MUL (element-wise ops, the op table rows of family "unary" / "binary" our kernels run,
with scalar constants only, every intermediate value read only inside, all of x's shape), evaluates that
subgraph on a grid of x in [-10, 10] with edge-sdk's own kernels (the ops copied into a small model run by
``edge_sdk.Interpreter``, as ``passes.fold_constants`` does) and fuses it when it equals GELU (the erf form or
the tanh form) within ``TOLERANCE`` (times max(1, |x|)).

``optimize(model, fuse_gelu=False)`` keeps the decomposition (for a target whose runtime has no GELU).
"""

from __future__ import annotations

import numpy as np

from converters import graph as G
from edge_sdk.errors import ModelError
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table
from edge_sdk.runtime.kernels.gelu import gelu_float

TOLERANCE = 2e-5  # the importer's Erf is within 5e-7; the erf and tanh forms differ by up to 4.7e-4
MAX_OPS = 80  # ops in one GELU decomposition (the importer's Erf alone is about 30)
_GRID = np.concatenate([np.linspace(-10, 10, 2001), [-1e-3, 1e-3, 0.0]]).astype(np.float32)
_ARITY = {"unary": 1, "binary": 2}  # the op table families a decomposition is made of: inputs per op


def _arity(name: str) -> int | None:
    """Inputs of an element-wise op our kernels run (its op table row), None for any other op."""
    r = op_table.row(name)
    return _ARITY.get(r.family) if r.runs else None


def _region(model: Model, sg: int, end: int, x: int, prod: dict) -> list[int] | None:
    """The ops computing op ``end``'s output from x and scalar constants only (sorted), or None."""
    sub = model.subgraphs[sg]
    seen: set[int] = set()
    stack = [end]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        if len(seen) > MAX_OPS:
            return None
        op = sub.operators[i]
        name = G.op_name(model, op)
        arity = _arity(name)
        if arity is None or len(op.outputs) != 1:
            return None
        if G.options(model, op).get("fused_activation_function", "NONE") != "NONE":
            return None
        if len(op.inputs) != arity:
            return None
        for t in op.inputs:
            if t == x:
                continue
            if t < 0:
                return None
            if G.is_constant(model, t, sg):
                v = G.constant_value(model, t, sg)
                if v is None or v.size != 1 or v.dtype.kind != "f":
                    return None
                continue
            j = prod.get(t)
            if j is None:
                return None
            stack.append(j)
    return sorted(seen)


def _evaluate(model: Model, sg: int, ops: list[int], x: int) -> np.ndarray | None:
    """The ops' last output for x = the grid, computed by our kernels: the ops copied into a one-subgraph model
    (x its input of the grid's shape, each scalar constant a float32 [1], every value float32 of x's new shape),
    run by the interpreter. None when the kernels refuse it or a value is not finite."""
    from edge_sdk import Interpreter

    sub = model.subgraphs[sg]
    g = GraphBuilder()
    n = (_GRID.size,)
    tensors = {x: g.input("x", n)}
    for i in ops:
        op = sub.operators[i]
        ins = []
        for t in op.inputs:
            if t not in tensors:  # a scalar constant (_region checked)
                value = np.float32(G.constant_value(model, t, sg).reshape(-1)[0])
                tensors[t] = g.constant(f"c{t}", np.array([value], np.float32))
            ins.append(tensors[t])
        y = op.outputs[0]
        tensors[y] = g.tensor(f"t{y}", n)
        code = model.operator_codes[op.opcode_index]
        g.op(G.op_name(model, op), ins, [tensors[y]], version=code.version, options_type=op.options_type,
             **op.options)
    g.output(tensors[sub.operators[ops[-1]].outputs[0]])
    try:
        it = Interpreter(model=g.build())
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], _GRID)
        with np.errstate(all="ignore"):
            it.invoke()
        y = np.array(it.get_tensor(it.get_output_details()[0]["index"]))
    except (ModelError, RuntimeError, ValueError):
        return None
    return y if y.dtype == np.float32 and np.all(np.isfinite(y)) else None


def _which_gelu(y: np.ndarray) -> bool | None:
    """approximate (True: tanh form, False: erf form) when y is GELU on the grid, else None."""
    bound = TOLERANCE * np.maximum(1.0, np.abs(_GRID.astype(np.float64)))
    for approximate in (False, True):
        if np.all(np.abs(y.astype(np.float64) - gelu_float(_GRID, approximate)) <= bound):
            return approximate
    return None


def _candidates(model: Model, sg: int, op, prod: dict) -> list[int]:
    found = []
    for t in op.inputs:
        found.append(t)
        j = prod.get(t)
        if j is not None:
            found.extend(model.subgraphs[sg].operators[j].inputs)
    return [t for t in dict.fromkeys(found) if t >= 0 and not G.is_constant(model, t, sg)]


def fuse_gelu(model: Model, sg: int = 0) -> int:
    sub = model.subgraphs[sg]
    changed = 0
    i = 0
    while i < len(sub.operators):
        op = sub.operators[i]
        if G.op_name(model, op) != "MUL" or len(op.outputs) != 1 or sub.tensors[op.outputs[0]].type != "FLOAT32":
            i += 1
            continue
        prod, cons = G.producers(model, sg), G.consumers(model, sg)
        y = op.outputs[0]
        shape = tuple(sub.tensors[y].shape)
        for x in _candidates(model, sg, op, prod):
            if tuple(sub.tensors[x].shape) != shape or sub.tensors[x].type != "FLOAT32":
                continue
            ops = _region(model, sg, i, x, prod)
            if ops is None or len(ops) < 3:
                continue
            inner = [sub.operators[k].outputs[0] for k in ops if k != i]
            if any(tuple(sub.tensors[t].shape) != shape or G.is_graph_output(model, t, sg)
                   or any(c not in ops for c in cons.get(t, [])) for t in inner):
                continue
            values = _evaluate(model, sg, ops, x)
            approximate = None if values is None else _which_gelu(values)
            if approximate is None:
                continue
            G.set_op(model, i, "GELU", [x], [y], {"approximate": approximate}, sg=sg)
            G.remove_ops(model, [k for k in ops if k != i], sg)
            changed += 1
            i -= sum(k < i for k in ops if k != i)
            break
        i += 1
    return changed


def apply(model: Model, sg: int = 0) -> int:
    return fuse_gelu(model, sg)


def run(model: Model) -> Model:
    G.apply_everywhere(model, apply)
    return model
