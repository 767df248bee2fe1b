"""Dynamic ONNX input dims in the converted model (issue 24): a -1 in the shape signature only where it resizes.

An ONNX input dim named ("batch", "N", "seq"), left without a value, or of 0 is dynamic. The importer stores it at
the given size (``--input-shape``) or 1 and folds the graph there; whether the converted model still computes the
ONNX model at another size depends on what folded: a RESHAPE holding the sequence length, a PAD chosen for one
input parity, a resize's output size. So convert() converts the model again with each dynamic dim doubled
(``settle``) and compares the two programs: the same operators, options and constants -- only tensor shapes
differ -- means the first one, resized, is the second one. Then each input's dynamic axes (and every other tensor's
axes that changed with them) get -1 in their shape signature, and the model runs after ``resize_tensor_input`` /
``--input-shape``. Otherwise the inputs stay static at their stored shape and a note names the first difference
(an operator and what it holds); a dim that was only a placeholder 1 (no shape given, beyond the batch axis) is then
the old error asking for ``--input-shape``. Each dim name is probed on its own (a YOLO export's H and W may resize
where its batch does not): one more conversion per name.

    notes = settle(float_model, import_notes["open_dims"], convert_at)   # convert_at(shapes) -> float Model
"""

from __future__ import annotations

import numpy as np

from edge_sdk.errors import ConversionError, ModelError


def dim_groups(open_dims: dict) -> dict[str, list[tuple[str, int]]]:
    """{dim: [(input, axis), ...]}: the axes one name spans (a "seq" shared by two inputs moves together); an
    unnamed dim (or one of 0) is a group of its own."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for name, info in open_dims.items():
        for axis, dim in info["dims"].items():
            key = dim if dim != "?" else f"{name}[{axis}]"
            groups.setdefault(key, []).append((name, int(axis)))
    return groups


def probe_shapes(open_dims: dict, axes) -> dict[str, tuple[int, ...]]:
    """{input: its stored shape with the given (input, axis) pairs doubled} (a probe conversion's input_shapes)."""
    out = {name: list(info["shape"]) for name, info in open_dims.items()}
    for name, axis in axes:
        out[name][axis] *= 2
    return {name: tuple(shape) for name, shape in out.items()}


def _op_text(model, sg, i: int) -> str:
    op = model.subgraphs[sg].operators[i]
    name = model.subgraphs[sg].tensors[op.outputs[0]].name if op.outputs else "?"
    where = f" (subgraph {sg})" if sg else ""
    return f"op {i} {model.op_name(op)} '{name}'{where}"


def _constant(model, tensor) -> bytes:
    return bytes(model.buffers[tensor.buffer].data) if tensor.buffer else b""


def _same_options(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    return all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def _first_difference(a, b) -> str | None:
    """What first tells program ``a`` from ``b`` apart (tensor shapes aside), or None when they are the same."""
    if len(a.subgraphs) != len(b.subgraphs):
        return f"{len(a.subgraphs)} subgraphs at one size, {len(b.subgraphs)} at the other"
    for k, (sa, sb) in enumerate(zip(a.subgraphs, b.subgraphs)):
        if len(sa.operators) != len(sb.operators) or len(sa.tensors) != len(sb.tensors):
            return f"{len(sa.operators)} ops at one size, {len(sb.operators)} at the other" + (f" (subgraph {k})"
                                                                                             if k else "")
        if list(sa.inputs) != list(sb.inputs) or list(sa.outputs) != list(sb.outputs):
            return "the inputs / outputs differ"
        for i, (oa, ob) in enumerate(zip(sa.operators, sb.operators)):
            if (a.op_name(oa) != b.op_name(ob) or list(oa.inputs) != list(ob.inputs)
                    or list(oa.outputs) != list(ob.outputs)):
                return f"{_op_text(a, k, i)} is another op at the other size"
            if not _same_options(oa.options or {}, ob.options or {}) or oa.custom_options != ob.custom_options:
                return f"{_op_text(a, k, i)} has options set from the size ({oa.options})"
            for t in oa.inputs:
                if t < 0:
                    continue
                ta, tb = sa.tensors[t], sb.tensors[t]
                if ta.type != tb.type or len(ta.shape) != len(tb.shape) or _constant(a, ta) != _constant(b, tb):
                    return f"{_op_text(a, k, i)} holds '{ta.name}' {list(ta.shape)}, computed from the size"
    return None


def _reshape_target(model, sg, op) -> list[int] | None:
    t = op.inputs[1] if len(op.inputs) > 1 and op.inputs[1] >= 0 else -1
    if t >= 0 and sg.tensors[t].buffer:
        return [int(v) for v in np.frombuffer(_constant(model, sg.tensors[t]), np.int32)]
    shape = (op.options or {}).get("new_shape")
    return [int(v) for v in shape] if shape is not None else None


def _set_reshape_target(model, sg, op, target: list[int]) -> None:
    from edge_sdk.model.types import Buffer

    t = op.inputs[1] if len(op.inputs) > 1 and op.inputs[1] >= 0 else -1
    if t >= 0 and sg.tensors[t].buffer:  # a buffer of its own: constants may share one
        model.buffers.append(Buffer(np.asarray(target, np.int32).tobytes()))
        sg.tensors[t].buffer = len(model.buffers) - 1
    if (op.options or {}).get("new_shape") is not None:
        op.options = dict(op.options, new_shape=list(target))


def free_reshapes(a, b) -> int:
    """A RESHAPE whose target differs between the two programs in one axis alone (the batch of an NHWC -> NCHW
    output, a flattened sequence) gets -1 there in both: that axis takes what the others leave, at any size. A -1
    an earlier probe put in ``a`` stands for any value of ``b``'s. Returns how many were changed."""
    changed = 0
    for sa, sb in zip(a.subgraphs, b.subgraphs):
        if len(sa.operators) != len(sb.operators):
            continue
        for oa, ob in zip(sa.operators, sb.operators):
            if a.op_name(oa) != "RESHAPE" or b.op_name(ob) != "RESHAPE":
                continue
            ta, tb = _reshape_target(a, sa, oa), _reshape_target(b, sb, ob)
            if ta is None or tb is None or len(ta) != len(tb) or -1 in tb or ta.count(-1) > 1:
                continue
            axes = [i for i, (x, y) in enumerate(zip(ta, tb)) if x != y and x != -1]
            if not axes and ta != tb:  # differs only where a holds -1 already
                _set_reshape_target(b, sb, ob, ta)
                changed += 1
            elif len(axes) == 1 and -1 not in ta:
                target = [-1 if i == axes[0] else d for i, d in enumerate(ta)]
                _set_reshape_target(a, sa, oa, target)
                _set_reshape_target(b, sb, ob, target)
                changed += 1
    return changed


def _mark_resizable(a, b) -> None:
    """-1 in the shape signature of every tensor of ``a`` on the axes where ``b`` (the same program at other
    sizes) has another size."""
    for sa, sb in zip(a.subgraphs, b.subgraphs):
        for ta, tb in zip(sa.tensors, sb.tensors):
            if len(ta.shape) == len(tb.shape) and tuple(ta.shape) != tuple(tb.shape):
                base = ta.shape_signature if ta.shape_signature is not None else ta.shape
                ta.shape_signature = tuple(-1 if x != y else int(s) for x, y, s in zip(ta.shape, tb.shape, base))


def _make_static(model) -> None:
    for sg in model.subgraphs:
        for t in sg.tensors:
            t.shape_signature = None


def _shown(info: dict) -> str:
    dims = info["dims"]
    return "[" + ", ".join(str(dims.get(i, d)) for i, d in enumerate(info["shape"])) + "]"


def _probe(model, open_dims: dict, axes, convert_at):
    """(the other program, None) when converting with ``axes`` doubled gives ``model``'s program, else (None, why)."""
    try:
        other = convert_at(probe_shapes(open_dims, axes))
        why = _first_difference(model, other)
        if why is not None and free_reshapes(model, other):
            why = _first_difference(model, other)
    except (ConversionError, ModelError) as exc:
        return None, f"it does not convert at twice the size ({str(exc).splitlines()[0]})"
    return (other, None) if why is None else (None, why)


def settle(model, open_dims: dict, convert_at, given=None) -> list[str]:
    """Set ``model``'s shape signatures (in place) for the dynamic input dims ``open_dims`` (import_notes), dim by
    dim (``dim_groups``): -1 where ``convert_at(shapes)`` -- the same conversion with that dim doubled -- gives the
    same program, else static. ``given``: the input names whose shape the user gave. Returns the notes for the
    report; raises the ``--input-shape`` request when a placeholder dim (beyond the batch axis, no shape given)
    does not resize."""
    given = set(given or ())
    results = {dim: _probe(model, open_dims, axes, convert_at) for dim, axes in dim_groups(open_dims).items()}
    _make_static(model)
    notes = []
    for dim, axes in dim_groups(open_dims).items():
        other, why = results[dim]
        where = ", ".join(f"input '{n}' {_shown(open_dims[n])} axis {a}" for n, a in axes)
        if other is not None:
            _mark_resizable(model, other)
            notes.append(f"dim '{dim}' ({where}) stored as {open_dims[axes[0][0]]['shape'][axes[0][1]]}: -1 in the "
                         "shape signature (the converted model resizes; --input-shape / resize_tensor_input set it)")
            continue
        placeholder = next(((n, a) for n, a in axes if n not in given and a > 0), None)
        if placeholder is not None:
            n = placeholder[0]
            info = open_dims[n]
            example = ",".join("D" if i in info["dims"] else str(d) for i, d in enumerate(info["shape"]))
            raise ConversionError(f"input '{n}' has dynamic dims {_shown(info)}: give its shape with --input-shape "
                                  f"{n}:{example} (input_shapes={{'{n}': (...)}} in convert()); the converted model "
                                  f"does not resize along '{dim}': {why}")
        notes.append(f"dim '{dim}' ({where}) is static at {open_dims[axes[0][0]]['shape'][axes[0][1]]} in the "
                     f"converted model (it does not resize: {why}); convert again with --input-shape for another "
                     "size")
    return notes
