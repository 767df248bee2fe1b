"""Layout: move TRANSPOSEs through layout-agnostic ops so that inverse pairs meet and cancel.

The ONNX importer keeps NCHW semantics by wrapping every layout-sensitive op in a sandwich
TRANSPOSE([0,2,3,1]) -> NHWC op -> TRANSPOSE([0,3,1,2]). This pass:

1. merges TRANSPOSE -> TRANSPOSE into one (perm composition), dropping it when the composition is the
   identity;
2. sinks a TRANSPOSE below an op that does not care about layout (its op table row's ``family`` says which),
   so  op(T(a)) -> T(op'(a)):
   element-wise unary ops and activations, QUANTIZE/DEQUANTIZE (per-tensor), element-wise binary ops whose
   other inputs are the same TRANSPOSE or constants (re-laid out, broadcast shapes expanded first), PAD/PADV2
   (paddings permuted), CONCATENATION (axis permuted; every input transposed the same way or constant),
   SPLIT / SPLIT_V (axis permuted; each part transposed after),
   the reductions, MEAN/SUM/REDUCE_* (axes permuted; without keep_dims the transpose left over acts
   on the kept axes, or vanishes), SOFTMAX/LOG_SOFTMAX only when the last axis stays last;
3. turns a TRANSPOSE that moves only size-1 dimensions into a RESHAPE (then RESHAPE chains merge).

The transposes then sit only at the model boundary. ``to_nhwc_io(model)`` (used by ``optimize`` with
``nhwc_io=True``) moves the boundary itself: an NCHW model input read through TRANSPOSE([0,2,..,1]) becomes
a channels-last input, and an output written by TRANSPOSE([0,r-1,1,..]) becomes channels-last; it returns
what changed so the converter can record it in the metadata.
"""

from __future__ import annotations

import numpy as np

from converters import graph as G
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table


def _family(name: str) -> str:
    """How the op's output elements relate to its input elements (the op table row's ``family``): "unary",
    "binary" (broadcast), "reduce", "last_axis", "reshape", "pad", ... ("" for anything else)."""
    return op_table.row(name).family


def transpose_perm(model: Model, index: int, sg: int = 0) -> list[int] | None:
    """The constant permutation of TRANSPOSE operator ``index`` (None: not a TRANSPOSE / not constant)."""
    op = model.subgraphs[sg].operators[index]
    if G.op_name(model, op) != "TRANSPOSE" or len(op.inputs) < 2 or len(op.outputs) != 1:
        return None
    perm = G.constant_value(model, op.inputs[1], sg)
    return None if perm is None else [int(p) for p in perm.reshape(-1)]


def inverse(perm: list[int]) -> list[int]:
    return [int(i) for i in np.argsort(perm)]


def channels_last(rank: int) -> list[int]:
    """NC... -> N...C: [0, 2, 3, ..., 1]."""
    return [0] + list(range(2, rank)) + [1]


def channels_first(rank: int) -> list[int]:
    """N...C -> NC...: [0, r-1, 1, ..., r-2]."""
    return [0, rank - 1] + list(range(1, rank - 1))


def _permuted(shape, perm) -> tuple[int, ...]:
    return tuple(int(shape[p]) for p in perm)


def insert_transpose(model: Model, src: int, perm: list[int], position: int, sg: int = 0,
                     out: int | None = None) -> int:
    """Add TRANSPOSE(src, perm) at ``position`` writing ``out`` (a new tensor when None); returns the output."""
    sub = model.subgraphs[sg]
    if out is None:
        out = G.add_tensor(model, sub.tensors[src].name + "_t", _permuted(sub.tensors[src].shape, perm), sg=sg,
                           like=src)
    p = G.add_constant(model, "perm", np.array(perm, np.int32), sg=sg)
    G.add_op(model, "TRANSPOSE", [src, p], [out], position=position, sg=sg)
    return out


# --------------------------------------------------------------------------------------------- merging
def dedupe_transposes(model: Model, sg: int = 0) -> int:
    """Two TRANSPOSEs of the same tensor by the same permutation become one (readers share its output)."""
    sub = model.subgraphs[sg]
    seen: dict[tuple, int] = {}
    changed = 0
    i = 0
    while i < len(sub.operators):
        perm = transpose_perm(model, i, sg)
        if perm is None:
            i += 1
            continue
        op = sub.operators[i]
        key = (op.inputs[0], tuple(perm))
        first = seen.get(key)
        if first is None or G.is_graph_output(model, op.outputs[0], sg):
            seen.setdefault(key, op.outputs[0])
            i += 1
            continue
        G.replace_uses(model, op.outputs[0], first, sg, outputs=False)
        G.remove_ops(model, [i], sg)
        changed += 1
    return changed


def merge_transposes(model: Model, sg: int = 0) -> int:
    """TRANSPOSE(TRANSPOSE(x, p), q) -> TRANSPOSE(x, p[q]) or x itself."""
    sub = model.subgraphs[sg]
    changed = dedupe_transposes(model, sg)
    i = 0
    while i < len(sub.operators):
        q = transpose_perm(model, i, sg)
        if q is None:
            i += 1
            continue
        op = sub.operators[i]
        prod = G.producers(model, sg)
        j = prod.get(op.inputs[0])
        p = None if j is None else transpose_perm(model, j, sg)
        if p is None or len(p) != len(q):
            i += 1
            continue
        src = sub.operators[j].inputs[0]
        composed = [p[k] for k in q]
        if composed == list(range(len(q))):
            y = op.outputs[0]
            if not G.is_graph_output(model, y, sg):
                G.replace_uses(model, y, src, sg)
                G.remove_ops(model, [i], sg)
                changed += 1
                continue
        perm_t = G.add_constant(model, "perm", np.array(composed, np.int32), sg=sg)
        op.inputs = [src, perm_t]
        changed += 1
        i += 1
    return changed


# --------------------------------------------------------------------------------------------- sinking
def _const_relaid(model: Model, t: int, perm: list[int], rank: int, sg: int) -> int | None:
    """A new constant equal to constant ``t`` broadcast-expanded to ``rank`` and laid out for the
    un-transposed side (value' with transpose(value', perm) == value)."""
    value = G.constant_value(model, t, sg)
    q = model.subgraphs[sg].tensors[t].quantization
    if value is None or value.ndim > rank or (q is not None and q.scale.size > 1):
        return None
    if value.size == 1 and value.ndim <= 1:
        return t  # a scalar broadcasts the same either way
    full = value.reshape((1,) * (rank - value.ndim) + value.shape)
    sub = model.subgraphs[sg]
    return G.add_constant(model, sub.tensors[t].name + "_nhwc", np.transpose(full, inverse(perm)).copy(),
                          type=sub.tensors[t].type, sg=sg, quantization=sub.tensors[t].quantization)


def _transposed_source(model: Model, t: int, prod: dict, sg: int) -> tuple[int, list[int]] | None:
    j = prod.get(t)
    if j is None:
        return None
    perm = transpose_perm(model, j, sg)
    return None if perm is None else (model.subgraphs[sg].operators[j].inputs[0], perm)


def _sink_split(model: Model, index: int, sg: int) -> bool:
    """SPLIT / SPLIT_V of a transposed tensor: split the untransposed one along the permuted axis, then
    transpose each part (the parts' transposes then sink on, C2f blocks' round trips cancel)."""
    sub = model.subgraphs[sg]
    op = sub.operators[index]
    name = G.op_name(model, op)
    data_k, axis_k = (1, 0) if name == "SPLIT" else (0, 2)
    if len(op.inputs) <= max(data_k, axis_k):
        return False
    src = _transposed_source(model, op.inputs[data_k], G.producers(model, sg), sg)
    axis = G.constant_value(model, op.inputs[axis_k], sg)
    if src is None or axis is None or axis.size != 1:
        return False
    a, perm = src
    rank = len(perm)
    new_axis = perm[int(axis.reshape(-1)[0]) % rank]
    inputs = list(op.inputs)
    inputs[data_k] = a
    inputs[axis_k] = G.add_constant(model, "axis", np.array(new_axis, np.int32).reshape(axis.shape), sg=sg)
    outs = []
    for k, y in enumerate(op.outputs):
        inner = G.add_tensor(model, sub.tensors[y].name + "_nhwc", _permuted(sub.tensors[y].shape, inverse(perm)),
                             sg=sg, like=y)
        insert_transpose(model, inner, perm, index + 1 + k, sg, out=y)
        outs.append(inner)
    op.inputs, op.outputs = inputs, outs
    return True


def _sink_one(model: Model, index: int, sg: int) -> bool:
    """Try to move the TRANSPOSEs feeding operator ``index`` below it."""
    sub = model.subgraphs[sg]
    op = sub.operators[index]
    name = G.op_name(model, op)
    rule = op_table.row(name).transpose_sink
    if rule == "split" and op.outputs:
        return _sink_split(model, index, sg)
    if len(op.outputs) != 1 or not op.inputs:
        return False
    prod = G.producers(model, sg)
    y = op.outputs[0]
    out_t = sub.tensors[y]
    rank = len(out_t.shape)
    opts = G.options(model, op)

    family = _family(name)
    if family in ("unary", "last_axis", "reduce") or rule == "pad":
        src = _transposed_source(model, op.inputs[0], prod, sg)
        if src is None:
            return False
        a, perm = src
        if rule == "per_tensor":
            for t in (op.inputs[0], y):
                q = sub.tensors[t].quantization
                if q is not None and q.scale.size > 1:
                    return False
        if family == "last_axis" and perm[-1] != len(perm) - 1:
            return False
        if family in ("unary", "last_axis"):
            new_inputs = [a] + list(op.inputs[1:])
            out_perm = perm
            new_shape = _permuted(out_t.shape, inverse(perm))
        elif rule == "pad":
            pads = G.constant_value(model, op.inputs[1], sg)
            if pads is None or pads.shape[0] != len(perm):
                return False
            new_pads = np.zeros_like(pads)
            for i, p in enumerate(perm):
                new_pads[p] = pads[i]
            pt = G.add_constant(model, "paddings", new_pads, type=sub.tensors[op.inputs[1]].type, sg=sg)
            new_inputs = [a, pt] + list(op.inputs[2:])
            out_perm = perm
            new_shape = _permuted(out_t.shape, inverse(perm))
        else:  # reductions
            axes = G.constant_value(model, op.inputs[1], sg)
            if axes is None:
                return False
            r = len(perm)
            axes_y = sorted({int(x) % r for x in axes.reshape(-1)})
            new_axes = np.array(sorted(perm[k] for k in axes_y), np.int32)
            at = G.add_constant(model, "axes", new_axes.reshape(axes.shape) if axes.size == new_axes.size
                                else new_axes, type=sub.tensors[op.inputs[1]].type, sg=sg)
            new_inputs = [a, at]
            a_shape = sub.tensors[a].shape
            if opts.get("keep_dims"):
                out_perm = perm
                new_shape = tuple(1 if k in new_axes else d for k, d in enumerate(a_shape))
            else:
                kept_y = [k for k in range(r) if k not in axes_y]
                kept_a = sorted(perm[k] for k in kept_y)
                out_perm = [kept_a.index(perm[k]) for k in kept_y]
                new_shape = tuple(a_shape[k] for k in kept_a)
        return _rewrite(model, index, new_inputs, out_perm, new_shape, sg)

    if family == "binary" or rule == "axis":
        perm = None
        for t in op.inputs:
            if t < 0:
                continue
            src = _transposed_source(model, t, prod, sg)
            if src is not None:
                perm = src[1]
                break
        if perm is None or len(perm) != rank:
            return False
        new_inputs = []
        for t in op.inputs:
            src = _transposed_source(model, t, prod, sg)
            if src is not None and src[1] == perm:
                new_inputs.append(src[0])
                continue
            if t >= 0 and G.is_constant(model, t, sg):
                c = _const_relaid(model, t, perm, rank, sg)
                if c is None:
                    return False
                new_inputs.append(c)
                continue
            return False
        if rule == "axis":
            axis = int(opts.get("axis", 0)) % rank
            opts["axis"] = perm[axis]
            op.options = opts
        return _rewrite(model, index, new_inputs, perm, _permuted(out_t.shape, inverse(perm)), sg)
    return False


def _rewrite(model: Model, index: int, new_inputs: list[int], out_perm: list[int], new_shape, sg: int) -> bool:
    """Operator ``index`` reads ``new_inputs`` and writes a new tensor of ``new_shape``; a TRANSPOSE by
    ``out_perm`` after it (skipped when the identity) restores its old output tensor."""
    sub = model.subgraphs[sg]
    op = sub.operators[index]
    y = op.outputs[0]
    op.inputs = list(new_inputs)
    if out_perm == list(range(len(out_perm))):
        sub.tensors[y].shape = tuple(new_shape)
        return True
    inner = G.add_tensor(model, sub.tensors[y].name + "_nhwc", new_shape, sg=sg, like=y)
    op.outputs = [inner]
    insert_transpose(model, inner, out_perm, index + 1, sg, out=y)
    return True


def sink_transposes(model: Model, sg: int = 0) -> int:
    changed = 0
    i = 0
    while i < len(model.subgraphs[sg].operators):
        if _sink_one(model, i, sg):
            changed += 1
        i += 1
    return changed


# --------------------------------------------------------------------------------------------- reshapes
def flatten_into_fc(model: Model, sg: int = 0) -> int:
    """TRANSPOSE(x, p) -> RESHAPE [N, K] -> FULLY_CONNECTED(W): the flatten reads x directly and W's input
    columns are permuted to match (ONNX Flatten of an NCHW feature map before a Gemm)."""
    sub = model.subgraphs[sg]
    changed = 0
    prod = G.producers(model, sg)
    cons = G.consumers(model, sg)
    for i, op in enumerate(sub.operators):
        if G.op_name(model, op) != "RESHAPE" or not op.inputs:
            continue
        src = _transposed_source(model, op.inputs[0], prod, sg)
        flat = op.outputs[0]
        if src is None or G.is_graph_output(model, flat, sg):
            continue
        x, perm = src
        xs = sub.tensors[x].shape
        k = int(np.prod(xs[1:], dtype=np.int64)) if len(xs) > 1 else 0
        if perm[0] != 0 or len(xs) < 2 or sub.tensors[flat].shape != (xs[0], k):
            continue
        users = [sub.operators[u] for u in cons.get(flat, [])]
        if not users or any(G.op_name(model, u) != "FULLY_CONNECTED" or u.inputs[0] != flat
                            or u.inputs[1] == flat for u in users):
            continue
        weights = [G.constant_value(model, u.inputs[1], sg) for u in users]
        if any(w is None or w.ndim != 2 or w.shape[1] != k or w.dtype != np.float32 for w in weights):
            continue
        order = np.transpose(np.arange(k).reshape(xs[1:]), [q - 1 for q in perm[1:]]).reshape(-1)
        for u, w in zip(users, weights):
            permuted = np.empty_like(w)
            permuted[:, order] = w
            u.inputs = [u.inputs[0], G.add_constant(model, sub.tensors[u.inputs[1]].name + "_nhwc", permuted,
                                                    sg=sg)] + list(u.inputs[2:])
        op.inputs = [x] + list(op.inputs[1:])
        changed += 1
    return changed


def sink_reshapes(model: Model, sg: int = 0) -> int:
    """op(RESHAPE(a)) -> RESHAPE(op(a)) for element-wise unary ops (and binary ops with a one-value constant),
    so reshapes meet each other and merge, and activations reach their producers."""
    sub = model.subgraphs[sg]
    changed = 0
    for i in range(len(sub.operators)):
        op = sub.operators[i]
        name = G.op_name(model, op)
        if len(op.outputs) != 1 or not op.inputs or op.inputs[0] < 0:
            continue
        if name in ("QUANTIZE", "DEQUANTIZE") or _family(name) not in ("unary", "binary"):
            continue
        others = [t for t in op.inputs[1:] if t >= 0]
        if any(G.constant_value(model, t, sg) is None or G.constant_value(model, t, sg).size != 1
               or len(sub.tensors[t].shape) > 1 for t in others):
            continue
        prod = G.producers(model, sg)
        j = prod.get(op.inputs[0])
        if j is None or _family(G.op_name(model, sub.operators[j])) != "reshape":
            continue
        a = sub.operators[j].inputs[0]
        y = op.outputs[0]
        if sub.tensors[y].shape != sub.tensors[op.inputs[0]].shape:
            continue
        inner = G.add_tensor(model, sub.tensors[y].name + "_r", sub.tensors[a].shape, sg=sg, like=y)
        op.inputs = [a] + list(op.inputs[1:])
        op.outputs = [inner]
        st = G.add_constant(model, "shape", np.array(sub.tensors[y].shape, np.int32), sg=sg)
        G.add_op(model, "RESHAPE", [inner, st], [y], {"new_shape": list(sub.tensors[y].shape)}, position=i + 1,
                 sg=sg)
        changed += 1
        break  # indices moved: the caller loops
    return changed


def trivial_transposes_to_reshapes(model: Model, sg: int = 0) -> int:
    """A TRANSPOSE that keeps the order of the dimensions bigger than 1 is a RESHAPE.

    Not right after a model input: there the transpose is the layout change itself, which ``to_nhwc_io``
    removes (a single-channel NCHW input's transpose would otherwise become a RESHAPE it does not recognise)."""
    sub = model.subgraphs[sg]
    changed = 0
    for i in range(len(sub.operators)):
        perm = transpose_perm(model, i, sg)
        if perm is None:
            continue
        op = sub.operators[i]
        if op.inputs[0] in sub.inputs:
            continue
        shape = sub.tensors[op.inputs[0]].shape
        moved = [p for p in perm if shape[p] != 1]
        if moved != sorted(moved):
            continue
        out = op.outputs[0]
        st = G.add_constant(model, "shape", np.array(sub.tensors[out].shape, np.int32), sg=sg)
        G.set_op(model, i, "RESHAPE", [op.inputs[0], st], [out], {"new_shape": list(sub.tensors[out].shape)}, sg=sg)
        changed += 1
    return changed


def apply(model: Model, sg: int = 0) -> int:
    """Merge, sink and cancel transposes until nothing moves (bounded); returns the number of rewrites."""
    from converters.passes import identity

    total = 0
    for _ in range(4 * len(model.subgraphs[sg].operators) + 8):
        n = merge_transposes(model, sg)
        n += sink_transposes(model, sg)
        n += flatten_into_fc(model, sg)
        n += sink_reshapes(model, sg)
        if n:
            G.eliminate_dead_code(model)
        total += n
        if not n:
            break
    n = trivial_transposes_to_reshapes(model, sg)
    if n:
        n += identity.apply(model, sg)
        G.eliminate_dead_code(model)
    return total + n


def run(model: Model) -> Model:
    G.apply_everywhere(model, apply)
    return model


# --------------------------------------------------------------------------------------------- boundary
def _hoist_input_transposes_above_pads(model: Model, sg: int) -> int:
    """input -> PAD -> TRANSPOSE(channels last)  becomes  input -> TRANSPOSE -> PAD (paddings permuted), so
    the boundary transpose sits right at the input where ``to_nhwc_io`` removes it (the sinking pass moves
    transposes below PADs, which puts a padded NCHW input's PAD before its transpose)."""
    sub = model.subgraphs[sg]
    changed = 0
    for x in list(sub.inputs):
        rank = len(sub.tensors[x].shape)
        if rank < 3:
            continue
        cl = channels_last(rank)
        for c in list(G.consumers(model, sg).get(x, [])):
            op = sub.operators[c]
            if op_table.row(G.op_name(model, op)).transpose_sink != "pad" or op.inputs[0] != x or len(op.outputs) != 1:
                continue
            padded = op.outputs[0]
            cons = G.consumers(model, sg)
            users = cons.get(padded, [])
            if len(users) != 1 or G.is_graph_output(model, padded, sg) or transpose_perm(model, users[0], sg) != cl:
                continue
            pads = G.constant_value(model, op.inputs[1], sg)
            if pads is None or pads.shape[0] != rank:
                continue
            t_index = users[0]
            y = sub.operators[t_index].outputs[0]
            new_pads = np.stack([pads[k] for k in cl])
            pt = G.add_constant(model, "paddings", new_pads, type=sub.tensors[op.inputs[1]].type, sg=sg)
            G.remove_ops(model, [t_index], sg)
            xt = insert_transpose(model, x, cl, c, sg)
            op.inputs = [xt, pt] + list(op.inputs[2:])
            op.outputs = [y]
            changed += 1
    if changed:
        G.topological_sort(model, sg)
        G.eliminate_dead_code(model)
    return changed


def to_nhwc_io(model: Model) -> dict:
    """Make subgraph 0's channels-first inputs/outputs (those crossing a boundary TRANSPOSE) channels-last.

    Returns {"inputs": [...], "outputs": [...]}, one entry per changed tensor:
    {"name", "index", "old_shape", "new_shape", "perm"} (``perm`` maps the old layout to the new one).
    Inputs keep their position and name; run the layout pass afterwards to cancel what this exposes.
    """
    sg = 0
    sub = model.subgraphs[sg]
    notes = {"inputs": [], "outputs": []}
    _hoist_input_transposes_above_pads(model, sg)
    for x in list(sub.inputs):
        t = sub.tensors[x]
        rank = len(t.shape)
        if rank < 3:
            continue
        cl = channels_last(rank)
        cons = G.consumers(model, sg).get(x, [])
        if not any(transpose_perm(model, c, sg) == cl for c in cons) or G.is_graph_output(model, x, sg):
            continue
        old_shape = t.shape
        t.shape = _permuted(old_shape, cl)
        if t.shape_signature is not None and len(t.shape_signature) == rank:
            t.shape_signature = _permuted(t.shape_signature, cl)
        # readers other than the boundary transposes still want the old layout
        others = [c for c in cons if transpose_perm(model, c, sg) is None]
        for c in cons:
            q = transpose_perm(model, c, sg)
            if q is not None:  # T(x_old, q) == T(x_new, inverse(cl)[q])
                inv = inverse(cl)
                perm_t = G.add_constant(model, "perm", np.array([inv[k] for k in q], np.int32), sg=sg)
                sub.operators[c].inputs = [x, perm_t]
        if others:
            old = G.add_tensor(model, t.name + "_nchw", old_shape, sg=sg, like=x)
            for c in others:
                sub.operators[c].inputs = [old if k == x else k for k in sub.operators[c].inputs]
            insert_transpose(model, x, channels_first(rank), 0, sg, out=old)
        notes["inputs"].append({"name": t.name, "index": x, "old_shape": list(old_shape),
                                "new_shape": list(t.shape), "perm": cl})
    for pos, y in enumerate(list(sub.outputs)):
        t = sub.tensors[y]
        rank = len(t.shape)
        prod = G.producers(model, sg)
        j = prod.get(y)
        if rank < 3 or j is None or transpose_perm(model, j, sg) != channels_first(rank):
            continue
        if G.consumers(model, sg).get(y) or sub.outputs.count(y) > 1:
            continue
        a = sub.operators[j].inputs[0]
        if a not in prod or G.is_graph_input(model, a, sg) or G.is_graph_output(model, a, sg):
            continue
        old_shape = t.shape
        p = sub.operators[prod[a]]
        p.outputs = [y if k == a else k for k in p.outputs]
        t.shape = sub.tensors[a].shape
        if t.shape_signature is not None and len(t.shape_signature) == rank:
            t.shape_signature = _permuted(t.shape_signature, channels_last(rank))
        G.replace_uses(model, a, y, sg, outputs=False, skip=[j])
        G.remove_ops(model, [j], sg)
        notes["outputs"].append({"name": t.name, "index": y, "old_shape": list(old_shape),
                                 "new_shape": list(t.shape), "perm": channels_last(rank)})
    G.topological_sort(model, sg)
    G.eliminate_dead_code(model)
    # indices may have moved: refresh them by name
    names = {sub.tensors[k].name: k for k in range(len(sub.tensors))}
    for entry in notes["inputs"] + notes["outputs"]:
        entry["index"] = names.get(entry["name"], entry["index"])
    return notes
