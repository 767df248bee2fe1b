"""Graph-editing helpers on ``edge_sdk.model.Model``, shared by the optimization passes and the quantizer.

Every function takes the model and (keyword ``sg``, default 0) a subgraph index, edits the model in place and
keeps it valid for ``write_model`` and ``edge_sdk.Interpreter``: operators stay in an order where every
tensor is written before it is read, each new constant gets its own buffer, names stay unique.

    from converters import graph as G
    prod, cons = G.producers(model), G.consumers(model)        # tensor -> op index, tensor -> [op indices]
    c = G.add_constant(model, "scale", np.ones(8, np.float32))
    t = G.add_tensor(model, "y", (1, 8), "FLOAT32")
    G.add_op(model, "MUL", [x, c], [t], position=prod[x] + 1)
    G.replace_uses(model, old, t)                              # operators and subgraph outputs now read t
    G.remove_ops(model, [i])
    G.eliminate_dead_code(model)                               # dead ops, then unused tensors/buffers/opcodes

Indices: ``add_op``/``remove_ops`` shift operator indices (recompute producer/consumer maps after them);
tensor indices are stable until ``eliminate_dead_code``/``compact`` renumber them.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from edge_sdk.errors import ModelError
from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES, CUSTOM_CODE
from edge_sdk.model.types import (
    TENSOR_TYPES,
    Buffer,
    Model,
    Operator,
    OperatorCode,
    Quantization,
    Tensor,
)
from edge_sdk.model.writer import option_defaults, options_for
from edge_sdk.runtime import op_table

# Weighted layers with a bias and per-output-channel weights: op -> (weights input, bias input, output-channel
# axis of the weights), as TFLite lays them out. A view of the op table rows' ``weights`` (those with a bias and
# a channel axis), for converters.quantize until it reads the rows itself.
WEIGHTED_LAYERS = {name: r.weights for name, r in op_table.ROWS.items()
                   if r.weights is not None and r.weights[1] is not None and r.weights[2] is not None}


def has_effects(name: str) -> bool:
    """Whether op ``name`` acts on something besides its outputs (resource variables, called subgraphs: the op
    table row's ``effects``): never dead, never computed ahead of time."""
    return bool(op_table.row(name).effects)


# ------------------------------------------------------------------------------------------------ queries
def producers(model: Model, sg: int = 0) -> dict[int, int]:
    """Tensor index -> index of the operator that writes it (only tensors some operator writes)."""
    out: dict[int, int] = {}
    for i, op in enumerate(model.subgraphs[sg].operators):
        for t in op.outputs:
            if t >= 0:
                out[t] = i
    return out


def consumers(model: Model, sg: int = 0) -> dict[int, list[int]]:
    """Tensor index -> indices of the operators that read it (each operator once, in order)."""
    out: dict[int, list[int]] = {}
    for i, op in enumerate(model.subgraphs[sg].operators):
        for t in dict.fromkeys(op.inputs):
            if t >= 0:
                out.setdefault(t, []).append(i)
    return out


def op_name(model: Model, op: Operator) -> str:
    return model.operator_codes[op.opcode_index].name


def options(model: Model, op: Operator) -> dict:
    """The operator's builtin options with every schema field present (defaults filled in)."""
    if not op.options_type:
        return dict(op.options)
    full = option_defaults(op.options_type)
    full.update(op.options)
    return full


def is_constant(model: Model, t: int, sg: int = 0) -> bool:
    """A tensor with data in its buffer (and not a variable)."""
    if t < 0:
        return False
    tensor = model.subgraphs[sg].tensors[t]
    return (not tensor.is_variable and 0 <= tensor.buffer < len(model.buffers)
            and len(model.buffers[tensor.buffer].data) > 0)


def constant_value(model: Model, t: int, sg: int = 0) -> np.ndarray | None:
    """A constant tensor's value (a writable copy), or None when it is computed at run time."""
    if not is_constant(model, t, sg):
        return None
    return np.array(model.tensor_data(sg, t))


def is_graph_output(model: Model, t: int, sg: int = 0) -> bool:
    return t in model.subgraphs[sg].outputs


def is_graph_input(model: Model, t: int, sg: int = 0) -> bool:
    return t in model.subgraphs[sg].inputs


def sole_consumer(model: Model, t: int, sg: int = 0, cons: dict | None = None) -> int | None:
    """The one operator reading ``t`` when exactly one does and ``t`` is not a subgraph output, else None."""
    cons = consumers(model, sg) if cons is None else cons
    users = cons.get(t, [])
    if len(users) != 1 or is_graph_output(model, t, sg):
        return None
    return users[0]


def unique_name(model: Model, base: str, sg: int = 0) -> str:
    """``base`` itself when no tensor of the subgraph has that name, else ``base_1``, ``base_2``, ..."""
    names = {t.name for t in model.subgraphs[sg].tensors}
    if base not in names:
        return base
    k = 1
    while f"{base}_{k}" in names:
        k += 1
    return f"{base}_{k}"


def make_names_unique(model: Model) -> int:
    """Rename tensors whose names repeat within a subgraph (later ones get a suffix); returns how many."""
    renamed = 0
    for sg in model.subgraphs:
        seen: set[str] = set()
        taken = {t.name for t in sg.tensors}
        for t in sg.tensors:
            if t.name in seen:
                k = 1
                while f"{t.name}_{k}" in taken:
                    k += 1
                t.name = f"{t.name}_{k}"
                taken.add(t.name)
                renamed += 1
            seen.add(t.name)
    return renamed


def topological_problems(model: Model, sg: int = 0) -> list[str]:
    """Why the subgraph's operator order is not executable (empty list: it is).

    Every tensor an operator reads must be a constant, a subgraph input, a variable, unwritten scratch, or
    written by an earlier operator; no tensor may be written twice; subgraph outputs must be written or be
    inputs/constants.
    """
    sub = model.subgraphs[sg]
    problems: list[str] = []
    written: dict[int, int] = {}
    prod = producers(model, sg)
    for i, op in enumerate(sub.operators):
        for t in op.inputs:
            if t >= len(sub.tensors):
                problems.append(f"op {i} ({op_name(model, op)}) reads tensor {t}, which does not exist")
            elif t >= 0 and t in prod and t not in written:
                problems.append(f"op {i} ({op_name(model, op)}) reads tensor {t} ('{sub.tensors[t].name}') "
                                f"before op {prod[t]} writes it")
        for t in op.outputs:
            if t >= len(sub.tensors) or t < 0:
                problems.append(f"op {i} ({op_name(model, op)}) writes tensor {t}, which does not exist")
                continue
            if t in written:
                problems.append(f"tensor {t} ('{sub.tensors[t].name}') is written by op {written[t]} and op {i}")
            if is_constant(model, t, sg):
                problems.append(f"op {i} ({op_name(model, op)}) writes constant tensor {t}")
            if t in sub.inputs:
                problems.append(f"op {i} ({op_name(model, op)}) writes subgraph input {t}")
            written[t] = i
    for t in sub.outputs:
        if not (0 <= t < len(sub.tensors)):
            problems.append(f"subgraph output {t} does not exist")
    return problems


def check_topological(model: Model, sg: int = 0) -> None:
    """Raise ModelError listing every ordering problem of the subgraph (see ``topological_problems``)."""
    problems = topological_problems(model, sg)
    if problems:
        raise ModelError(f"subgraph {sg} is not in executable order: " + "; ".join(problems))


def topological_sort(model: Model, sg: int = 0) -> None:
    """Reorder the subgraph's operators so every tensor is written before it is read (stable: keeps the
    current order where it is already valid). Raises ModelError on a cycle."""
    sub = model.subgraphs[sg]
    prod = producers(model, sg)
    n = len(sub.operators)
    deps = [sorted({prod[t] for t in op.inputs if t >= 0 and t in prod and prod[t] != i})
            for i, op in enumerate(sub.operators)]
    users: list[list[int]] = [[] for _ in range(n)]
    pending = [len(d) for d in deps]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    import heapq

    ready = [i for i in range(n) if pending[i] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            pending[u] -= 1
            if pending[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != n:
        raise ModelError(f"subgraph {sg} has a cycle among its operators")
    sub.operators = [sub.operators[i] for i in order]


# ------------------------------------------------------------------------------------------------ edits
def opcode_index(model: Model, op: str, version: int = 1) -> int:
    """The operator_codes index for an op (builtin name or custom code), added when missing."""
    if op in BUILTIN_OPERATOR_CODES:
        code = OperatorCode(builtin_code=BUILTIN_OPERATOR_CODES[op], version=version)
    else:
        code = OperatorCode(builtin_code=CUSTOM_CODE, custom_code=op, version=version)
    for i, existing in enumerate(model.operator_codes):
        if (existing.builtin_code, existing.custom_code, existing.version) == (
                code.builtin_code, code.custom_code, code.version):
            return i
    model.operator_codes.append(code)
    return len(model.operator_codes) - 1


def add_tensor(model: Model, name: str, shape, type: str = "FLOAT32", sg: int = 0,
               quantization: Quantization | None = None, like: int | None = None) -> int:
    """A new run-time tensor (name made unique); ``like=t`` copies type and quantization of tensor t."""
    sub = model.subgraphs[sg]
    if like is not None:
        src = sub.tensors[like]
        type, quantization = src.type, _copy_quant(src.quantization)
    if type not in TENSOR_TYPES:
        raise ModelError(f"tensor '{name}': unknown type {type}")
    sub.tensors.append(Tensor(name=unique_name(model, name, sg), shape=tuple(int(d) for d in shape), type=type,
                              quantization=quantization))
    return len(sub.tensors) - 1


def _copy_quant(q: Quantization | None) -> Quantization | None:
    if q is None:
        return None
    return Quantization(scale=np.array(q.scale), zero_point=np.array(q.zero_point),
                        quantized_dimension=q.quantized_dimension,
                        min=None if q.min is None else np.array(q.min),
                        max=None if q.max is None else np.array(q.max))


def _type_of(array: np.ndarray) -> str:
    for name, (_, dt) in TENSOR_TYPES.items():
        if dt is not None and dt == array.dtype and name not in ("RESOURCE", "INT4", "INT2", "UINT4"):
            return name
    raise ModelError(f"no TFLite tensor type holds numpy dtype {array.dtype}")


def add_constant(model: Model, name: str, value, type: str | None = None, sg: int = 0,
                 quantization: Quantization | None = None) -> int:
    """A new constant tensor holding ``value`` in a new buffer; returns its index."""
    value = np.asarray(value)
    if type is None:
        type = _type_of(value)
    dtype = TENSOR_TYPES[type][1]
    if dtype is None or type in ("INT4", "INT2", "UINT4"):
        raise ModelError(f"constant '{name}': cannot store values of type {type}")
    array = np.asarray(value, dtype=dtype.newbyteorder("<"))  # (ascontiguousarray would make 0-d 1-d)
    model.buffers.append(Buffer(array.tobytes()))
    sub = model.subgraphs[sg]
    sub.tensors.append(Tensor(name=unique_name(model, name, sg), shape=tuple(int(d) for d in array.shape),
                              type=type, buffer=len(model.buffers) - 1, quantization=quantization))
    return len(sub.tensors) - 1


def set_constant(model: Model, t: int, value, sg: int = 0) -> None:
    """Give constant (or run-time) tensor ``t`` a new value in a buffer of its own (shape follows value)."""
    tensor = model.subgraphs[sg].tensors[t]
    dtype = TENSOR_TYPES[tensor.type][1]
    array = np.asarray(value, dtype=dtype.newbyteorder("<"))
    model.buffers.append(Buffer(array.tobytes()))
    tensor.buffer = len(model.buffers) - 1
    tensor.shape = tuple(int(d) for d in array.shape)
    tensor.shape_signature = None


def add_op(model: Model, op: str, inputs: list[int], outputs: list[int], options: dict | None = None,
           position: int | None = None, sg: int = 0, version: int = 1,
           options_type: str | None = None) -> int:
    """Insert an operator at ``position`` (default: the end); returns its index. ``options`` are filled
    with the schema defaults."""
    sub = model.subgraphs[sg]
    if options_type is None:
        options_type = options_for(op) if op in BUILTIN_OPERATOR_CODES else None
    full = option_defaults(options_type) if options_type else {}
    full.update(options or {})
    new = Operator(opcode_index=opcode_index(model, op, version), inputs=list(inputs), outputs=list(outputs),
                   options_type=options_type, options=full)
    if position is None:
        position = len(sub.operators)
    sub.operators.insert(position, new)
    return position


def set_op(model: Model, index: int, op: str, inputs: list[int], outputs: list[int], options: dict | None = None,
           sg: int = 0, version: int = 1) -> None:
    """Replace operator ``index`` in place by another op (same position)."""
    sub = model.subgraphs[sg]
    options_type = options_for(op) if op in BUILTIN_OPERATOR_CODES else None
    full = option_defaults(options_type) if options_type else {}
    full.update(options or {})
    sub.operators[index] = Operator(opcode_index=opcode_index(model, op, version), inputs=list(inputs),
                                    outputs=list(outputs), options_type=options_type, options=full)


def remove_ops(model: Model, indices: Iterable[int], sg: int = 0) -> None:
    """Delete operators by index (their tensors stay until dead-code elimination)."""
    drop = set(indices)
    sub = model.subgraphs[sg]
    sub.operators = [op for i, op in enumerate(sub.operators) if i not in drop]


def replace_uses(model: Model, old: int, new: int, sg: int = 0, outputs: bool = True,
                 skip: Iterable[int] = ()) -> int:
    """Make every operator that reads ``old`` read ``new`` instead (and the subgraph outputs, unless
    ``outputs=False``; operators in ``skip`` are left alone). Returns the number of uses replaced."""
    sub = model.subgraphs[sg]
    skip = set(skip)
    n = 0
    for i, op in enumerate(sub.operators):
        if i in skip:
            continue
        for k, t in enumerate(op.inputs):
            if t == old:
                op.inputs[k] = new
                n += 1
    if outputs:
        for k, t in enumerate(sub.outputs):
            if t == old:
                sub.outputs[k] = new
                n += 1
    return n


def bypass(model: Model, index: int, sg: int = 0) -> bool:
    """Remove operator ``index`` whose output 0 equals its input 0 (an identity: same shape and type),
    rewiring readers. Keeps the subgraph's boundary tensors: when the output is a subgraph output, the
    input's producer writes it directly instead. Returns False (and changes nothing) when that is
    impossible (e.g. the input is a subgraph input or constant and the output is a subgraph output)."""
    sub = model.subgraphs[sg]
    op = sub.operators[index]
    src, dst = op.inputs[0], op.outputs[0]
    if src < 0 or src == dst:
        return False
    if not is_graph_output(model, dst, sg):
        replace_uses(model, dst, src, sg, outputs=False)
        remove_ops(model, [index], sg)
        return True
    prod = producers(model, sg)
    if (src not in prod or is_graph_input(model, src, sg) or is_graph_output(model, src, sg)
            or is_constant(model, src, sg)):
        return False
    p = sub.operators[prod[src]]
    p.outputs = [dst if t == src else t for t in p.outputs]
    replace_uses(model, src, dst, sg, outputs=False, skip=[index])
    tsrc, tdst = sub.tensors[src], sub.tensors[dst]
    tdst.shape, tdst.type = tsrc.shape, tsrc.type
    remove_ops(model, [index], sg)
    if prod[src] > index:  # the producer moved after its readers' position: restore the order
        topological_sort(model, sg)
    return True


# ------------------------------------------------------------------------------------------------ cleanup
def dead_ops(model: Model, sg: int = 0) -> list[int]:
    """Operators whose outputs nothing reads (transitively) and that are not subgraph outputs."""
    sub = model.subgraphs[sg]
    live: set[int] = set(sub.outputs)
    dead: list[int] = []
    for i in range(len(sub.operators) - 1, -1, -1):
        op = sub.operators[i]
        name = op_name(model, op)
        keep = (has_effects(name) or not op.outputs or any(t in live for t in op.outputs)
                or any(t >= 0 and sub.tensors[t].is_variable for t in op.inputs))
        if keep:
            live.update(t for t in op.inputs if t >= 0)
            live.update(t for t in op.intermediates if t >= 0)
        else:
            dead.append(i)
    return sorted(dead)


def compact(model: Model) -> None:
    """Drop tensors nothing refers to, buffers no tensor/metadata uses and unused operator codes, renumbering
    every reference (operator inputs/outputs/intermediates, subgraph inputs/outputs, signature defs)."""
    used_buffers = {0}
    for si, sub in enumerate(model.subgraphs):
        used: set[int] = set(sub.inputs) | set(sub.outputs)
        for op in sub.operators:
            used.update(op.inputs)
            used.update(op.outputs)
            used.update(op.intermediates)
        for sd in model.signature_defs:
            if sd.subgraph_index == si:
                used.update(sd.inputs.values())
                used.update(sd.outputs.values())
        used.discard(-1)
        keep = sorted(t for t in used if 0 <= t < len(sub.tensors))
        remap = {old: new for new, old in enumerate(keep)}
        remap[-1] = -1

        def m(t, _remap=remap, _si=si):
            if t not in _remap:
                raise ModelError(f"subgraph {_si}: a reference to tensor {t}, which does not exist")
            return _remap[t]

        sub.tensors = [sub.tensors[t] for t in keep]
        sub.inputs = [m(t) for t in sub.inputs]
        sub.outputs = [m(t) for t in sub.outputs]
        for op in sub.operators:
            op.inputs = [m(t) for t in op.inputs]
            op.outputs = [m(t) for t in op.outputs]
            op.intermediates = [m(t) for t in op.intermediates]
        for sd in model.signature_defs:
            if sd.subgraph_index == si:
                sd.inputs = {k: m(t) for k, t in sd.inputs.items()}
                sd.outputs = {k: m(t) for k, t in sd.outputs.items()}
        used_buffers.update(t.buffer for t in sub.tensors)
    used_buffers.update(md.buffer for md in model.metadata)
    keepb = sorted(b for b in used_buffers if 0 <= b < len(model.buffers))
    bmap = {old: new for new, old in enumerate(keepb)}
    model.buffers = [model.buffers[b] for b in keepb]
    for sub in model.subgraphs:
        for t in sub.tensors:
            t.buffer = bmap[t.buffer]
    for md in model.metadata:
        md.buffer = bmap[md.buffer]
    used_codes = sorted({op.opcode_index for sub in model.subgraphs for op in sub.operators})
    cmap = {old: new for new, old in enumerate(used_codes)}
    model.operator_codes = [model.operator_codes[c] for c in used_codes]
    for sub in model.subgraphs:
        for op in sub.operators:
            op.opcode_index = cmap[op.opcode_index]


def eliminate_dead_code(model: Model) -> int:
    """Remove dead operators in every subgraph, then unused tensors, buffers and operator codes.
    Returns the number of operators removed."""
    removed = 0
    for si in range(len(model.subgraphs)):
        dead = dead_ops(model, si)
        remove_ops(model, dead, si)
        removed += len(dead)
    compact(model)
    return removed


def apply_everywhere(model: Model, apply, dce: bool = True) -> int:
    """Run a pass's ``apply(model, sg) -> rewrites`` on every subgraph, then (unless ``dce=False``)
    ``eliminate_dead_code``; returns the rewrites made. Each pass's ``run`` and ``passes.optimize``'s rounds
    go through here."""
    rewrites = 0
    for sg in range(len(model.subgraphs)):
        rewrites += apply(model, sg)
    if dce:
        eliminate_dead_code(model)
    return rewrites
