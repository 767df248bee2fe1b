"""Shape and data-movement kernels: reshape, squeeze, concatenation, slicing, padding, gather, ...

None of these ops computes anything: prepare works out the output shape (from input shapes, options and
constant index inputs) and whatever index arrays or slices the copy needs, and eval is one numpy copy.
Semantics follow TFLite Micro's kernels and, where TFLM is silent or narrower, LiteRT's reference kernels
(strided-slice ellipsis/new-axis masks and the offset flag, DENSIFY).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.errors import DataError
from edge_sdk.runtime.kernels.movement import position_out_of_range
from edge_sdk.runtime.kernels.node import Eval, Node, TensorInfo

# Types each op moves; beyond TFLM's lists, a pure copy works for any fixed-size type.
_COPY_TYPES = ("FLOAT32", "FLOAT16", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL", "UINT32", "UINT16")
_CONCAT_TYPES = ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL")
_PACK_TYPES = ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL")
_SPLIT_TYPES = ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL")
_SLICE_TYPES = ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL")
_PAD_TYPES = ("FLOAT32", "INT8", "INT16", "INT32", "INT64", "BOOL")
_GATHER_TYPES = ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL")
_SPACE_DEPTH_TYPES = ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64")
_INDEX_TYPES = ("INT32", "INT64")


# --------------------------------------------------------------------------------------------- helpers


_INDEX_TYPES = ("INT32", "INT64", "INT16")  # of the constant operands (perm, begin, axis, ...)


def _const_ints(node: Node, i: int, what: str) -> np.ndarray:
    """Input ``i`` as a flat int64 array; it must be a constant (the output shape depends on it)."""
    return node.constant_values(i, what, _INDEX_TYPES).astype(np.int64)


def _const_axis(node: Node, i: int) -> int:
    """The one value of the constant axis tensor at input ``i`` (not yet checked against a rank)."""
    return int(node.constant_scalar(i, "axis", _INDEX_TYPES))


def _axis(node: Node, axis: int, rank: int, what: str = "axis") -> int:
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise node.error(f"{what} {axis} is out of range for rank {rank}")
    return a


def _same_type(node: Node, a: TensorInfo, b: TensorInfo) -> None:
    if a.type != b.type:
        raise node.error(f"'{b.name}' has type {b.type}, expected {a.type} like '{a.name}'")


def _data_input(node: Node, n_inputs, types: tuple[str, ...]) -> TensorInfo:
    """Input 0 of an op with ``n_inputs`` inputs (a count or a (min, max) pair) and one output of input 0's
    type, one of ``types``."""
    node.expect_counts(n_inputs, 1)
    x = node.input(0)
    node.expect_types(x, types)
    _same_type(node, x, node.outputs[0])
    return x


def _copy_eval(shape: tuple[int, ...]) -> Eval:
    def run(inputs, outputs):
        np.copyto(outputs[0], inputs[0].reshape(shape))

    return run


def _same_quantization(a: TensorInfo, b: TensorInfo) -> bool:
    if not a.quantized and not b.quantized:
        return True
    if a.quantized != b.quantized:
        return False
    return np.float32(a.s) == np.float32(b.s) and a.zp == b.zp


# --------------------------------------------------------------------------------------------- reshape


def prepare_reshape(node: Node) -> Eval:
    """The new shape: input 1 when its value is known at prepare (a constant, or shape arithmetic:
    ``TensorInfo.known``), else ReshapeOptions.new_shape, else the model's declared output shape. A shape input
    computed from data is checked at every invoke against the shape prepared (LiteRT sizes the output from it
    there; a different one is a DataError naming the node and the tensor, never a silently mislabelled output)."""
    x, y = _data_input(node, (1, 2), _COPY_TYPES), node.outputs[0]
    new_shape = None
    run_time = None  # the shape input when only the invoke knows its value
    if node.has_input(1):
        s = node.inputs[1]
        if s.known is not None and len(s.shape) == 1:
            new_shape = [int(v) for v in np.asarray(s.known).reshape(-1)]
        elif s.known is None and len(s.shape) == 1 and s.shape[0] > 0:
            run_time = s
    if new_shape is None:
        opt = node.options.get("new_shape") or []
        if opt:
            new_shape = [int(v) for v in opt]
            if len(new_shape) == 1 and new_shape[0] == 0 and not node.has_input(1):
                new_shape = []  # legacy models mark a scalar output as new_shape [0]
        elif node.has_input(1) and len(node.inputs[1].shape) == 1 and node.inputs[1].shape[0] == 0:
            new_shape = []
        elif not node.has_input(1):
            new_shape = list(y.shape)
    if new_shape is None:
        # The shape comes from a tensor computed at run time from data. TFLM trusts the output shape the model
        # declares; do the same when it is fully known and holds the same number of elements (checked at invoke).
        declared = list(y.shape)
        if declared and all(d >= 0 for d in declared) and int(np.prod(declared)) == x.size:
            new_shape = declared
        else:
            raise node.unsupported(f"the new shape '{node.inputs[1].name}' is computed at run time from data and "
                                   "the model declares no usable output shape")
    if new_shape.count(-1) > 1:
        raise node.error(f"new shape {new_shape} has more than one -1")
    if -1 in new_shape:
        known = int(np.prod([d for d in new_shape if d != -1], dtype=np.int64))
        if known == 0:
            raise node.error(f"new shape {new_shape} cannot infer its -1 dimension")
        new_shape[new_shape.index(-1)] = x.size // known
    if any(d < 0 for d in new_shape) or int(np.prod(new_shape, dtype=np.int64)) != x.size:
        raise node.error(f"cannot reshape {x.shape} ({x.size} elements) to {tuple(new_shape)}")
    node.set_output_shape(0, new_shape)
    if run_time is None or len(run_time.shape) != 1 or run_time.shape[0] != len(new_shape):
        if run_time is not None:
            raise node.unsupported(f"the new shape '{run_time.name}' is computed at run time from data and holds "
                                   f"{run_time.shape[0]} dimensions; the output is declared {tuple(new_shape)}")
        return _copy_eval(tuple(new_shape))
    check = run_time_shape_check(node, 1, tuple(new_shape), x.size)
    copy = _copy_eval(tuple(new_shape))

    def run(inputs, outputs):
        check(inputs[1])
        copy(inputs, outputs)

    return run


def run_time_shape_check(node: Node, i: int, shape: tuple[int, ...], elements: int | None = None):
    """A check for eval: input ``i`` (a shape computed at run time from data) holds ``shape``, the one prepare sized
    the output with (one -1 resolved against ``elements`` when given, as RESHAPE does); else a DataError naming the
    node, the tensor and both shapes: the output would be sized wrong, silently."""
    where, name = node.where(), node.inputs[i].name
    node.inputs[i].expected = np.asarray(shape, node.inputs[i].dtype)

    def check(values: np.ndarray) -> None:
        got = [int(v) for v in np.asarray(values).reshape(-1)]
        if elements is not None and got.count(-1) == 1:
            rest = int(np.prod([d for d in got if d != -1], dtype=np.int64))
            got[got.index(-1)] = elements // rest if rest else -1
        if tuple(got) != shape:
            raise DataError(f"{where}: shape tensor '{name}' holds {[int(v) for v in np.asarray(values).reshape(-1)]} "
                            f"at run time, but the output was sized {list(shape)} at prepare (from the model's "
                            "declared shape): this runtime sizes outputs before the first invoke")

    return check


def prepare_squeeze(node: Node) -> Eval:
    x = _data_input(node, 1, _COPY_TYPES)
    rank = len(x.shape)
    dims = node.options.get("squeeze_dims") or []
    if dims:
        squeeze = {_axis(node, int(d), rank, "squeeze dim") for d in dims}
        for d in squeeze:
            if x.shape[d] != 1:
                raise node.error(f"cannot squeeze dimension {d} of size {x.shape[d]}")
    else:
        squeeze = {d for d in range(rank) if x.shape[d] == 1}
    shape = tuple(n for d, n in enumerate(x.shape) if d not in squeeze)
    node.set_output_shape(0, shape)
    return _copy_eval(shape)


def prepare_expand_dims(node: Node) -> Eval:
    x = _data_input(node, 2, _COPY_TYPES)
    rank = len(x.shape)
    given = _const_axis(node, 1)
    axis = given + rank + 1 if given < 0 else given
    if not 0 <= axis <= rank:
        raise node.error(f"axis {given} is out of range for rank {rank}")
    shape = x.shape[:axis] + (1,) + x.shape[axis:]
    node.set_output_shape(0, shape)
    return _copy_eval(shape)


def prepare_shape(node: Node) -> Eval:
    node.expect_counts(1, 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(y, _INDEX_TYPES, "output")
    value = np.array(x.shape, dtype=y.dtype)
    node.set_output_shape(0, (len(x.shape),))

    def run(inputs, outputs):
        outputs[0][...] = value

    return run


# --------------------------------------------------------------------------------- concatenate / split


def prepare_concatenation(node: Node) -> Eval:
    if not node.inputs or len(node.outputs) != 1:
        raise node.error("expects at least one input and one output")
    xs = [node.input(i) for i in range(len(node.inputs))]
    y = node.outputs[0]
    node.expect_types(xs[0], _CONCAT_TYPES)
    for x in xs:
        _same_type(node, xs[0], x)
    _same_type(node, xs[0], y)
    act = node.options.get("fused_activation_function", "NONE")
    if act not in (None, "NONE"):
        raise node.unsupported(f"fused activation {act} on CONCATENATION (TFLM supports NONE only)")
    if xs[0].type in ("INT8", "UINT8"):
        for x in xs:
            if not _same_quantization(x, y):
                raise node.unsupported(
                    f"input '{x.name}' is quantized differently from the output (TFLM requires equal scale and zero point)"
                )
    if xs[0].type == "INT16":
        for t in xs + [y]:
            if t.quantized and t.zp != 0:
                raise node.unsupported(f"int16 tensor '{t.name}' has zero point {t.zp} (must be 0)")
    rank = len(xs[0].shape)
    axis = _axis(node, int(node.options.get("axis", 0)), rank)
    shape = list(xs[0].shape)
    for x in xs[1:]:
        if len(x.shape) != rank or any(x.shape[d] != shape[d] for d in range(rank) if d != axis):
            raise node.error(f"input '{x.name}' shape {x.shape} does not match {xs[0].shape} off axis {axis}")
        shape[axis] += x.shape[axis]
    node.set_output_shape(0, shape)
    if len(xs) == 1:
        return _copy_eval(tuple(shape))

    def run(inputs, outputs):
        np.concatenate(inputs, axis=axis, out=outputs[0])

    return run


def prepare_pack(node: Node) -> Eval:
    n = int(node.options.get("values_count", len(node.inputs)) or len(node.inputs))
    node.expect_counts(n, 1)
    xs = [node.input(i) for i in range(n)]
    node.expect_types(xs[0], _PACK_TYPES)
    _same_type(node, xs[0], node.outputs[0])
    for x in xs[1:]:
        _same_type(node, xs[0], x)
        if x.shape != xs[0].shape:
            raise node.error(f"input '{x.name}' shape {x.shape} differs from {xs[0].shape}")
    rank = len(xs[0].shape) + 1
    axis = _axis(node, int(node.options.get("axis", 0)), rank)
    shape = xs[0].shape[:axis] + (n,) + xs[0].shape[axis:]
    node.set_output_shape(0, shape)

    def run(inputs, outputs):
        np.stack(inputs, axis=axis, out=outputs[0])

    return run


def prepare_unpack(node: Node) -> Eval:
    node.expect_counts(1, len(node.outputs))
    x = node.input(0)
    node.expect_types(x, _PACK_TYPES)
    rank = len(x.shape)
    axis = _axis(node, int(node.options.get("axis", 0)), rank)
    num = int(node.options.get("num", 0) or x.shape[axis])
    if num != x.shape[axis] or len(node.outputs) != num:
        raise node.error(f"unpacks {num} values into {len(node.outputs)} outputs from a dimension of {x.shape[axis]}")
    shape = x.shape[:axis] + x.shape[axis + 1 :]
    for i, y in enumerate(node.outputs):
        _same_type(node, x, y)
        node.set_output_shape(i, shape)

    def run(inputs, outputs):
        moved = np.moveaxis(inputs[0], axis, 0)
        for i, out in enumerate(outputs):
            out[...] = moved[i]

    return run


def _split_eval(axis: int, sizes: list[int]) -> Eval:
    bounds = np.cumsum([0] + sizes)
    index = [tuple([slice(None)] * axis + [slice(int(bounds[i]), int(bounds[i + 1]))]) for i in range(len(sizes))]

    def run(inputs, outputs, data_input=0):
        x = inputs[data_input]
        for out, ix in zip(outputs, index):
            out[...] = x[ix]

    return run


def prepare_split(node: Node) -> Eval:
    node.expect_counts(2, len(node.outputs))
    x = node.input(1)
    node.expect_types(x, _SPLIT_TYPES)
    axis = _axis(node, _const_axis(node, 0), len(x.shape))
    n = len(node.outputs)
    if n == 0 or x.shape[axis] % n:
        raise node.error(f"cannot split dimension {axis} of size {x.shape[axis]} into {n} equal parts")
    size = x.shape[axis] // n
    shape = x.shape[:axis] + (size,) + x.shape[axis + 1 :]
    for i, y in enumerate(node.outputs):
        _same_type(node, x, y)
        node.set_output_shape(i, shape)
    run = _split_eval(axis, [size] * n)
    return lambda inputs, outputs: run(inputs, outputs, 1)


def prepare_split_v(node: Node) -> Eval:
    node.expect_counts(3, len(node.outputs))
    x = node.input(0)
    node.expect_types(x, _SPLIT_TYPES)
    axis = _axis(node, _const_axis(node, 2), len(x.shape))
    sizes = [int(v) for v in _const_ints(node, 1, "size_splits")]
    n = len(node.outputs)
    if len(sizes) != n:
        raise node.error(f"size_splits has {len(sizes)} entries for {n} outputs")
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise node.error(f"size_splits {sizes} is malformed")
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    if sum(sizes) != x.shape[axis] or any(s < 0 for s in sizes):
        raise node.error(f"size_splits {sizes} do not add up to dimension {axis} of size {x.shape[axis]}")
    for i, y in enumerate(node.outputs):
        _same_type(node, x, y)
        node.set_output_shape(i, x.shape[:axis] + (sizes[i],) + x.shape[axis + 1 :])
    return _split_eval(axis, sizes)


# ------------------------------------------------------------------------------------------- transpose


def prepare_transpose(node: Node) -> Eval:
    x = _data_input(node, 2, _COPY_TYPES)
    perm = [int(v) for v in _const_ints(node, 1, "perm")]
    rank = len(x.shape)
    if sorted(perm) != list(range(rank)):
        raise node.error(f"perm {perm} is not a permutation of {rank} dimensions")
    shape = tuple(x.shape[p] for p in perm)
    node.set_output_shape(0, shape)

    def run(inputs, outputs):
        np.copyto(outputs[0], inputs[0].transpose(perm))

    return run


# ------------------------------------------------------------------------------------- slicing


def _strided_slice_plan(node: Node, in_shape, begin, end, strides, opts):
    """LiteRT's reading of begin/end/strides and the five masks.

    Returns (effective input shape with new axes as 1, per-axis python slices, output shape).
    """
    begin_mask = int(opts.get("begin_mask", 0))
    end_mask = int(opts.get("end_mask", 0))
    ellipsis_mask = int(opts.get("ellipsis_mask", 0))
    new_axis_mask = int(opts.get("new_axis_mask", 0))
    shrink_mask = int(opts.get("shrink_axis_mask", 0))
    offset = bool(opts.get("offset", False))
    n = len(begin)
    if not len(end) == len(strides) == n:
        raise node.error(f"begin, end and strides have {len(begin)}, {len(end)} and {len(strides)} entries")
    rank = len(in_shape)
    num_add = sum(1 for i in range(n) if not (ellipsis_mask >> i) & 1 and (new_axis_mask >> i) & 1)
    eff_dims = rank + num_add
    # Expand the ellipsis over the dimensions begin/end do not name.
    eff_ellipsis = eff_new_axis = 0
    ellipsis_start, expanded = eff_dims, 0
    i = 0
    while i < eff_dims:
        if (ellipsis_mask >> i) & 1:
            ellipsis_start = i
            stop = max(i + 1, min(i + 1 + num_add + rank - n, eff_dims))
            expanded = stop - ellipsis_start - 1
            while i < stop:
                eff_ellipsis |= 1 << i
                i += 1
            continue
        if (new_axis_mask >> (i - expanded)) & 1:
            eff_new_axis |= 1 << i
        i += 1
    eff_shape, starts, stops, steps, shrinks = [], [], [], [], []
    added_ellipsis = added_axes = 0
    for i in range(eff_dims):
        b_m = e_m = shrink = False
        if (eff_ellipsis >> i) & 1:
            added_ellipsis = max(0, i - ellipsis_start)
            b, e, s, b_m, e_m = 0, 0, 1, True, True
            size = in_shape[i - added_axes]
        elif (eff_new_axis >> i) & 1:
            b, e, s = 0, 1, 1
            size = 1
            added_axes += 1
        elif i >= n + expanded:
            b, e, s, b_m, e_m = 0, 0, 1, True, True
            size = in_shape[i - added_axes]
        else:
            k = i - added_ellipsis
            b, e, s = int(begin[k]), int(end[k]), int(strides[k])
            b_m, e_m, shrink = bool((begin_mask >> k) & 1), bool((end_mask >> k) & 1), bool((shrink_mask >> k) & 1)
            size = in_shape[i - added_axes]
        if s == 0:
            raise node.error("stride value has to be non-zero")
        # start index
        start = b + size if b < 0 else b
        start = min(max(start, 0), size) if s > 0 else min(max(start, -1), size - 1)
        if b_m:
            start = 0 if s > 0 else size - 1
        # stop index
        if shrink:
            if not 0 <= start < size:
                raise node.error(f"shrink-axis begin {b} is out of range for dimension {i} of size {size}")
            stop = start + 1
        else:
            stop = e + start if offset else e
            stop = stop + size if stop < 0 else stop
            stop = min(max(stop, 0), size) if s > 0 else min(max(stop, -1), size - 1)
            if e_m:
                stop = size if s > 0 else -1
        eff_shape.append(size)
        starts.append(start)
        stops.append(stop)
        steps.append(s)
        shrinks.append(shrink)
    slices, out_shape = [], []
    for start, stop, s, shrink in zip(starts, stops, steps, shrinks):
        r = range(start, stop, s)
        if len(r) == 0:
            slices.append(slice(0, 0, 1))
        else:
            last = r[-1] + s
            slices.append(slice(r[0], last if last >= 0 else None, s))
        if not shrink:
            out_shape.append(len(r))
    return tuple(eff_shape), tuple(slices), tuple(out_shape)


def prepare_strided_slice(node: Node) -> Eval:
    node.expect_counts((3, 4), 1)
    x = node.input(0)
    node.expect_types(x, _SLICE_TYPES)
    _same_type(node, x, node.outputs[0])
    begin = _const_ints(node, 1, "begin")
    end = _const_ints(node, 2, "end")
    strides = _const_ints(node, 3, "strides") if node.has_input(3) else np.ones_like(begin)
    eff_shape, slices, out_shape = _strided_slice_plan(node, x.shape, begin, end, strides, node.options)
    node.set_output_shape(0, out_shape)
    return _slice_eval(eff_shape, slices, out_shape)


def _slice_eval(in_shape, slices, out_shape) -> Eval:
    def run(inputs, outputs):
        np.copyto(outputs[0], inputs[0].reshape(in_shape)[slices].reshape(out_shape))

    return run


def prepare_slice(node: Node) -> Eval:
    node.expect_counts(3, 1)
    x = node.input(0)
    node.expect_types(x, _SLICE_TYPES)
    _same_type(node, x, node.outputs[0])
    begin = _const_ints(node, 1, "begin")
    size = _const_ints(node, 2, "size")
    rank = len(x.shape)
    if begin.size != rank or size.size != rank:
        raise node.error(f"begin ({begin.size}) and size ({size.size}) must have one entry per input dimension ({rank})")
    slices, shape = [], []
    for d in range(rank):
        b, s = int(begin[d]), int(size[d])
        if s == -1:
            s = x.shape[d] - b
        if b < 0 or s < 0 or b + s > x.shape[d]:
            raise node.error(f"slice begin {b} size {s} is out of range for dimension {d} of size {x.shape[d]}")
        slices.append(slice(b, b + s))
        shape.append(s)
    node.set_output_shape(0, shape)
    return _slice_eval(x.shape, tuple(slices), tuple(shape))


# ----------------------------------------------------------------------------------------------- pad


def prepare_pad(node: Node) -> Eval:
    """PAD and PADV2 (input 2, when present, holds the pad value)."""
    node.expect_counts((2, 3), 1)
    x, y = node.input(0), node.outputs[0]
    node.expect_types(x, _PAD_TYPES)
    _same_type(node, x, y)
    rank = len(x.shape)
    paddings = _const_ints(node, 1, "paddings")
    if paddings.size != 2 * rank:
        raise node.error(f"paddings hold {paddings.size} values, expected {2 * rank} for rank {rank}")
    paddings = paddings.reshape(rank, 2)
    if (paddings < 0).any():
        raise node.unsupported(f"negative paddings {paddings.tolist()}")
    shape = tuple(int(x.shape[d] + paddings[d, 0] + paddings[d, 1]) for d in range(rank))
    inner = tuple(slice(int(paddings[d, 0]), int(paddings[d, 0]) + x.shape[d]) for d in range(rank))
    node.set_output_shape(0, shape)
    has_value = node.has_input(2)
    if has_value:
        c = node.inputs[2]
        _same_type(node, x, c)
        if c.size != 1:
            raise node.error(f"constant value '{c.name}' must hold one element, holds {c.size}")
        if x.type == "INT8" and not _same_quantization(c, y):
            raise node.unsupported("the pad value is quantized differently from the output (TFLM requires equal)")
    if x.type == "INT8":
        if not -128 <= (y.zp if y.quantized else 0) <= 127:
            raise node.error(f"output zero point {y.zp} is out of int8 range")
    default = y.zp if (x.type == "INT8" and y.quantized) else 0
    const_value = None
    if not has_value:
        const_value = default
    elif node.inputs[2].is_const:
        const_value = np.asarray(node.inputs[2].data).reshape(-1)[0]

    if const_value is not None:

        def run(inputs, outputs):
            out, x = outputs[0], inputs[0]
            if np.may_share_memory(out, x):  # the in-place plan puts the output over the input
                x = x.copy()
            out.fill(const_value)
            out[inner] = x

    else:

        def run(inputs, outputs):
            out, x = outputs[0], inputs[0]
            if np.may_share_memory(out, x):
                x = x.copy()
            out.fill(inputs[2].reshape(-1)[0])
            out[inner] = x

    return run


# -------------------------------------------------------------------------------------------- gather


def prepare_gather(node: Node) -> Eval:
    node.expect_counts(2, 1)
    x, idx = node.input(0), node.input(1)
    node.expect_types(x, _GATHER_TYPES)
    node.expect_types(idx, ("INT32", "INT64", "INT16"), "positions")
    _same_type(node, x, node.outputs[0])
    rank, irank = len(x.shape), len(idx.shape)
    axis = _axis(node, int(node.options.get("axis", 0)), rank)
    batch_dims = int(node.options.get("batch_dims", 0))
    if batch_dims < 0:
        batch_dims += irank
    if not (0 <= batch_dims <= axis and batch_dims < rank and batch_dims <= irank):
        raise node.error(f"batch_dims {node.options.get('batch_dims')} is invalid for axis {axis}")
    if x.shape[:batch_dims] != idx.shape[:batch_dims]:
        raise node.error(f"the first {batch_dims} dimensions of {x.shape} and {idx.shape} differ")
    shape = x.shape[:axis] + idx.shape[batch_dims:] + x.shape[axis + 1 :]
    node.set_output_shape(0, shape)
    if idx.is_const:
        v = np.asarray(idx.data)
        if (v < 0).any() or (v >= x.shape[axis]).any():
            raise node.error(f"gather positions out of range [0, {x.shape[axis]})")

    where, n = node.where(), x.shape[axis]

    def check(positions: np.ndarray) -> None:
        """A run-time position outside [0, n) fails the invoke (LiteRT: "gather index out of bounds")."""
        error = position_out_of_range(where, "positions", positions, n)
        if error:
            raise error

    if batch_dims == 0:

        def run(inputs, outputs):
            check(inputs[1])
            outputs[0][...] = np.take(inputs[0], inputs[1], axis=axis)

        return run

    batch = int(np.prod(x.shape[:batch_dims]))
    outer = int(np.prod(x.shape[batch_dims:axis]))
    inner = int(np.prod(x.shape[axis + 1 :]))
    coords = int(np.prod(idx.shape[batch_dims:]))
    x3 = (batch, outer, x.shape[axis], inner)
    b_ix = np.arange(batch).reshape(batch, 1, 1)
    o_ix = np.arange(outer).reshape(1, outer, 1)

    def run(inputs, outputs):
        check(inputs[1])
        c = inputs[1].reshape(batch, 1, coords)
        outputs[0][...] = inputs[0].reshape(x3)[b_ix, o_ix, c].reshape(shape)

    return run


# ----------------------------------------------------------------------------- depth <-> space


def _space_depth_setup(node: Node) -> tuple[tuple[int, int, int, int], int]:
    """The checks DEPTH_TO_SPACE and SPACE_TO_DEPTH share: ((n, h, w, c) of the 4-D input, block_size)."""
    x = _data_input(node, 1, _SPACE_DEPTH_TYPES)
    if len(x.shape) != 4:
        raise node.error(f"input must be 4-D, is {x.shape}")
    b = int(node.options.get("block_size", 0))
    if b <= 0:
        raise node.error(f"block_size {b} must be positive")
    return x.shape, b


def prepare_depth_to_space(node: Node) -> Eval:
    (n, h, w, c), b = _space_depth_setup(node)
    if c % (b * b):
        raise node.error(f"depth {c} is not a multiple of block_size^2 = {b * b}")
    co = c // (b * b)
    shape = (n, h * b, w * b, co)
    node.set_output_shape(0, shape)

    def run(inputs, outputs):
        outputs[0][...] = inputs[0].reshape(n, h, w, b, b, co).transpose(0, 1, 3, 2, 4, 5).reshape(shape)

    return run


def prepare_space_to_depth(node: Node) -> Eval:
    (n, h, w, c), b = _space_depth_setup(node)
    if h % b or w % b:
        raise node.error(f"height {h} and width {w} must be multiples of block_size {b}")
    shape = (n, h // b, w // b, c * b * b)
    node.set_output_shape(0, shape)

    def run(inputs, outputs):
        outputs[0][...] = inputs[0].reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5).reshape(shape)

    return run


# ------------------------------------------------------------------------------------------- densify


def densify(values: np.ndarray, dense_shape, sparsity) -> np.ndarray:
    """Expand TFLite's sparse storage (traversal order, block map, per-level DENSE / SPARSE_CSR metadata).

    Levels are walked in traversal order; a DENSE level enumerates its dense_size positions, a SPARSE_CSR
    level the indices its segments name for the parent position. Each leaf takes the next stored value;
    the first ``rank`` traversal entries name original dimensions, the rest block dimensions, and a block
    coordinate refines its original dimension as ``outer * block_size + inner``.
    """
    dense_shape = tuple(int(d) for d in dense_shape)
    rank = len(dense_shape)
    order = [int(v) for v in sparsity.traversal_order]
    block_map = [int(v) for v in (sparsity.block_map or [])]
    meta = list(sparsity.dim_metadata)
    levels = len(order)
    if len(meta) != levels or levels != rank + len(block_map):
        raise ValueError(
            f"sparsity has {len(meta)} dimension metadata and {levels} traversal levels for rank {rank} "
            f"with {len(block_map)} block dimensions"
        )
    block_size = [int(meta[order[rank + k]].dense_size) for k in range(len(block_map))]
    values = np.asarray(values).reshape(-1)

    # Enumerate leaves level by level: coords[n, level] plus the parent position for the next level.
    coords = np.zeros((1, 0), dtype=np.int64)
    parent = np.zeros(1, dtype=np.int64)
    for level in range(levels):
        m = meta[level]
        if m.format == "DENSE":
            size = int(m.dense_size)
            rep = np.repeat(np.arange(coords.shape[0]), size)
            pos = np.tile(np.arange(size, dtype=np.int64), coords.shape[0])
            coords = np.concatenate([coords[rep], pos[:, None]], axis=1)
            parent = parent[rep] * size + pos
        else:
            seg = np.asarray(m.array_segments, dtype=np.int64).reshape(-1)
            ind = np.asarray(m.array_indices, dtype=np.int64).reshape(-1)
            rows, new_coords, new_parent = [], [], []
            for j, p in enumerate(parent):
                if p + 1 >= seg.size:
                    continue
                for k in range(int(seg[p]), int(seg[p + 1])):
                    if k < ind.size:
                        rows.append(j)
                        new_coords.append(ind[k])
                        new_parent.append(k)
            rows = np.array(rows, dtype=np.int64)
            coords = np.concatenate([coords[rows], np.array(new_coords, dtype=np.int64).reshape(-1, 1)], axis=1)
            parent = np.array(new_parent, dtype=np.int64)
    if coords.shape[0] > values.size:
        raise ValueError(f"sparse tensor names {coords.shape[0]} values but stores {values.size}")
    full = np.zeros((coords.shape[0], rank), dtype=np.int64)
    for level in range(rank):
        full[:, order[level]] = coords[:, level]
    for level in range(rank, levels):
        k = order[level] - rank
        d = block_map[k]
        full[:, d] = full[:, d] * block_size[k] + coords[:, level]
    for d in range(rank):
        if coords.shape[0] and ((full[:, d] < 0) | (full[:, d] >= dense_shape[d])).any():
            raise ValueError(f"sparse index out of range in dimension {d} of {dense_shape}")
    dense = np.zeros(dense_shape, dtype=values.dtype)
    if coords.shape[0]:
        dense[tuple(full.T)] = values[: coords.shape[0]]
    return dense


def prepare_densify(node: Node) -> Eval:
    node.expect_counts(1, 1)
    x = node.input(0)
    node.expect_types(x, ("FLOAT32", "FLOAT16", "INT8"))
    _same_type(node, x, node.outputs[0])
    if not x.is_const or x.sparsity is None:
        raise node.error(f"input '{x.name}' must be a sparse constant")
    # The dense shape is the tensor's declared shape; when the constant arrives as its flat stored values,
    # the output's declared shape (DENSIFY keeps the shape) stands in for it.
    rank = len(x.sparsity.traversal_order) - len(x.sparsity.block_map or [])
    dense_shape = tuple(x.shape) if len(x.shape) == rank else tuple(node.outputs[0].shape)
    if len(dense_shape) != rank or any(d < 0 for d in dense_shape):
        raise node.error(f"cannot tell the dense shape of sparse tensor '{x.name}' (rank {rank})")
    try:
        dense = densify(x.data, dense_shape, x.sparsity)
    except (ValueError, IndexError) as exc:
        raise node.error(f"malformed sparse tensor '{x.name}': {exc}") from None
    node.set_output_shape(0, dense_shape)

    def run(inputs, outputs):
        outputs[0][...] = dense

    return run
