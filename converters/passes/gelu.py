"""GELU fusion: an element-wise subgraph that computes GELU becomes one GELU op (builtin 150, ``approximate``
set for the tanh form).

Exporters write GELU out: PyTorch before opset 20 as ``x * 0.5 * (1 + erf(x / sqrt(2)))`` (our ONNX importer
turns Erf into a clamped rational function, ``/ sqrt(2)`` becomes ``* 1/sqrt(2)`` in ``passes.arith``), ONNX's
Gelu op as the same, the tanh form ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` with the cube as
``x * x * x`` or ``POW(x, 3)``, in any order of the multiplications. The pass does not match one spelling:
for each MUL it takes the candidate input x (an input of the MUL or of the MULs feeding it), collects the
ops between x and the MUL (element-wise ops with scalar constants only, every intermediate value read only
inside, all of x's shape), evaluates that subgraph numerically on a grid of x in [-10, 10] and fuses it when
it equals GELU (the erf form or the tanh form) within ``TOLERANCE`` (times max(1, |x|)).

``optimize(model, fuse_gelu=False)`` keeps the decomposition (for a target whose runtime has no GELU).
"""

from __future__ import annotations

import numpy as np

from converters import graph as G
from edge_sdk.model.types import Model
from edge_sdk.runtime.kernels.gelu import gelu_float

TOLERANCE = 2e-5  # the importer's Erf is within 5e-7; the erf and tanh forms differ by up to 4.7e-4
MAX_OPS = 80  # ops in one GELU decomposition (the importer's Erf alone is about 30)
_GRID = np.concatenate([np.linspace(-10, 10, 2001), [-1e-3, 1e-3, 0.0]]).astype(np.float32)

_BINARY = {
    "ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "DIV": np.divide, "MINIMUM": np.minimum,
    "MAXIMUM": np.maximum, "POW": np.power, "SQUARED_DIFFERENCE": lambda a, b: (a - b) * (a - b),
}
_UNARY = {
    "TANH": lambda v: np.tanh(v.astype(np.float64)), "LOGISTIC": lambda v: 1.0 / (1.0 + np.exp(-v.astype(np.float64))),
    "EXP": lambda v: np.exp(v.astype(np.float64)), "SQRT": lambda v: np.sqrt(np.abs(v.astype(np.float64))),
    "RSQRT": lambda v: 1.0 / np.sqrt(np.abs(v.astype(np.float64)) + 1e-30), "NEG": np.negative, "ABS": np.abs,
}


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
        if name not in _BINARY and name not in _UNARY or len(op.outputs) != 1:
            return None
        if G.options(model, op).get("fused_activation_function", "NONE") != "NONE":
            return None
        if len(op.inputs) != (1 if name in _UNARY else 2):
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
    sub = model.subgraphs[sg]
    values = {x: _GRID}
    with np.errstate(all="ignore"):
        for i in ops:
            op = sub.operators[i]
            name = G.op_name(model, op)
            args = []
            for t in op.inputs:
                if t in values:
                    args.append(values[t])
                else:
                    args.append(np.float32(G.constant_value(model, t, sg).reshape(-1)[0]))
            f = _BINARY.get(name) or _UNARY[name]
            values[op.outputs[0]] = np.asarray(f(*args)).astype(np.float32)
    y = values.get(sub.operators[ops[-1]].outputs[0])
    return y if y is not None and np.all(np.isfinite(y)) else None


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
