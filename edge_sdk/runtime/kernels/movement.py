"""Data-movement ops from LiteRT's builtin set (issue 23): values copied to other places, never computed on.

- SPACE_TO_BATCH_ND: input [batch, spatial_1..spatial_M, rest...], constant INT32 block_shape [M] and paddings
  [M, 2]; each spatial dimension padded (with 0, or the output zero point for quantized types), cut into blocks,
  the block offsets moved into the batch: output [batch * prod(block), padded_i / block_i..., rest...], output
  batch index = block offset (row-major over the M block dimensions) * batch + input batch.
- BATCH_TO_SPACE_ND: its inverse with constant INT32 crops [M, 2] in place of paddings.
- GATHER_ND: slices of params picked by index vectors (prepare_gather_nd).
- REVERSE_V2: the order along given axes reversed (prepare_reverse_v2).
- ONE_HOT and BROADCAST_ARGS: tensors built from indices and shapes.
- MATRIX_DIAG and MATRIX_SET_DIAG: the main diagonal of the innermost matrices.
- EMBEDDING_LOOKUP: rows of a table picked by ids (and the hybrid int8 table to float32 case).
- REVERSE_SEQUENCE: per batch entry, a prefix of the sequence axis reversed.
- SCATTER_ND: update slices added into zeros at index vectors.
- SPARSE_TO_DENSE: values at indices over a default value.
Quantized inputs and outputs share their quantization (the values are copied).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.errors import DataError
from edge_sdk.runtime.kernels.node import Eval, Node

MOVE_TYPES = ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL")


def position_out_of_range(where: str, what: str, index: np.ndarray, bounds) -> DataError | None:
    """The error a lookup op's eval raises when a run-time position lies outside the dimension it indexes (LiteRT
    and TFLM fail the invoke there; so do both our runtimes), else None. ``index``: the positions as [entries, K]
    (K coordinates per entry; any shape when K is 1), ``bounds``: the K dimensions. Names the node, the first bad
    element of the positions tensor (flat, as the C runtime's record does), its value and its dimension."""
    bounds = np.asarray(bounds, np.int64).reshape(-1)
    flat = np.asarray(index, np.int64).reshape(-1, bounds.size)
    bad = (flat < 0) | (flat >= bounds)
    if not bad.any():
        return None
    element = int(np.flatnonzero(bad.reshape(-1))[0])
    return DataError(f"{where}: {what} element {element} is {int(flat.reshape(-1)[element])}, outside "
                     f"[0, {int(bounds[element % bounds.size])}) (a run-time input)")


def _same_quantization(node: Node) -> None:
    x, y = node.input(0), node.outputs[0]
    node.expect_types(y, (x.type,), "output")
    if x.quantized or y.quantized:
        if not (x.quantized and y.quantized) or np.float32(x.s) != np.float32(y.s) or x.zp != y.zp:
            raise node.unsupported("input and output quantization differ (the op copies values)")


def _block_operands(node: Node, what: str) -> tuple[list[int], np.ndarray]:
    """block_shape [M] (each >= 1) and paddings / crops [M, 2] (each >= 0), constant INT32."""
    node.expect_counts(3, 1)
    x = node.input(0)
    node.expect_types(x, MOVE_TYPES)
    _same_quantization(node)
    block = [int(v) for v in node.constant_values(1, "block_shape", ("INT32",))]
    edges = node.constant_values(2, what, ("INT32",)).astype(np.int64)
    m = len(block)
    if edges.size != 2 * m:
        raise node.error(f"{what} holds {edges.size} values, block_shape {m} needs {2 * m}")
    if m < 1 or len(x.shape) < m + 1:
        raise node.error(f"input rank {len(x.shape)} needs a batch and {m} spatial dimensions")
    if any(b < 1 for b in block) or (edges < 0).any():
        raise node.error(f"block_shape {block} must be >= 1 and {what} >= 0")
    return block, edges.reshape(m, 2)


def prepare_space_to_batch_nd(node: Node) -> Eval:
    block, pads = _block_operands(node, "paddings")
    x, m = node.input(0), len(block)
    batch, spatial, rest = x.shape[0], x.shape[1 : m + 1], x.shape[m + 1 :]
    padded = [s + int(p[0]) + int(p[1]) for s, p in zip(spatial, pads)]
    if any(p % b for p, b in zip(padded, block)):
        raise node.error(f"padded spatial shape {padded} is not a multiple of block_shape {block}")
    out_shape = (batch * int(np.prod(block)), *[p // b for p, b in zip(padded, block)], *rest)
    node.set_output_shape(0, out_shape)
    fill = node.outputs[0].zp if node.outputs[0].quantized else 0
    # [batch, o_1, b_1, ..., o_M, b_M, rest] -> [b_1..b_M, batch, o_1..o_M, rest]
    split = [batch] + [d for p, b in zip(padded, block) for d in (p // b, b)] + list(rest)
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(2 * m + 1, len(split)))
    pad_width = [(0, 0)] + [(int(p[0]), int(p[1])) for p in pads] + [(0, 0)] * len(rest)

    def run(inputs, outputs):
        v = np.pad(inputs[0], pad_width, constant_values=fill)
        outputs[0][...] = v.reshape(split).transpose(order).reshape(out_shape)

    return run


def prepare_batch_to_space_nd(node: Node) -> Eval:
    block, crops = _block_operands(node, "crops")
    x, m = node.input(0), len(block)
    nb = int(np.prod(block))
    if x.shape[0] % nb:
        raise node.error(f"batch {x.shape[0]} is not a multiple of the block count {nb}")
    batch, spatial, rest = x.shape[0] // nb, x.shape[1 : m + 1], x.shape[m + 1 :]
    full = [s * b for s, b in zip(spatial, block)]
    out_spatial = [f - int(c[0]) - int(c[1]) for f, c in zip(full, crops)]
    if any(o < 0 for o in out_spatial):
        raise node.error(f"crops {crops.tolist()} exceed the spatial shape {full}")
    node.set_output_shape(0, (batch, *out_spatial, *rest))
    # [b_1..b_M, batch, s_1..s_M, rest] -> [batch, s_1, b_1, ..., s_M, b_M, rest]
    split = [*block, batch, *spatial, *rest]
    order = [m] + [d for i in range(m) for d in (m + 1 + i, i)] + list(range(2 * m + 1, len(split)))
    cut = (slice(None),) + tuple(slice(int(c[0]), int(c[0]) + o) for c, o in zip(crops, out_spatial))

    def run(inputs, outputs):
        v = inputs[0].reshape(split).transpose(order).reshape(batch, *full, *rest)
        outputs[0][...] = v[cut]

    return run


# ---- GATHER_ND: output[i..., :] = params[indices[i..., 0], ..., indices[i..., K-1], :]

def prepare_gather_nd(node: Node) -> Eval:
    """params of any MOVE_TYPES type, indices INT16 / INT32 / INT64 [..., K] with 1 <= K <= rank(params): output
    indices.shape[:-1] + params.shape[K:]. An index vector with a coordinate outside its dimension fails the invoke
    with a DataError naming the node and the coordinate (as LiteRT and TFLM do, and the C kernel); constant indices
    are checked in prepare."""
    node.expect_counts(2, 1)
    x, idx, y = node.input(0), node.input(1), node.outputs[0]
    node.expect_types(x, MOVE_TYPES)
    node.expect_types(idx, ("INT16", "INT32", "INT64"), "indices")
    _same_quantization(node)
    if not idx.shape or not 1 <= idx.shape[-1] <= len(x.shape):
        raise node.error(f"indices {idx.shape} must end in K with 1 <= K <= params rank {len(x.shape)}")
    k = idx.shape[-1]
    outer, inner = x.shape[:k], x.shape[k:]
    out_shape = idx.shape[:-1] + inner
    node.set_output_shape(0, out_shape)
    bounds = np.array(outer, np.int64)
    if idx.is_const:
        v = np.asarray(idx.data).reshape(-1, k)
        if ((v < 0) | (v >= bounds)).any():
            raise node.error(f"GATHER_ND indices out of range for params dimensions {outer}")
    n_rows = int(np.prod(outer, dtype=np.int64))
    row = int(np.prod(inner, dtype=np.int64))
    where = node.where()

    def run(inputs, outputs):
        ind = inputs[1].reshape(-1, k).astype(np.int64)
        error = position_out_of_range(where, "indices", ind, bounds)
        if error:
            raise error
        flat = np.ravel_multi_index(tuple(ind.T), outer) if ind.size else ind[:, 0]
        outputs[0][...] = inputs[0].reshape(n_rows, row)[flat].reshape(out_shape)

    return run


# ---- REVERSE_V2: the input with the order of the given axes reversed

def prepare_reverse_v2(node: Node) -> Eval:
    """Any MOVE_TYPES input, constant INT32 axes (negatives count from the end, duplicates once; LiteRT and TFLM
    take contiguous axes only, any set runs here)."""
    node.expect_counts(2, 1)
    x = node.input(0)
    node.expect_types(x, MOVE_TYPES)
    _same_quantization(node)
    rank = len(x.shape)
    axes = set()
    for v in node.constant_values(1, "axis", ("INT32",)):
        d = int(v) + rank if int(v) < 0 else int(v)
        if not 0 <= d < rank:
            raise node.error(f"axis {int(v)} is out of range for rank {rank}")
        axes.add(d)
    node.set_output_shape(0, x.shape)
    axes = tuple(sorted(axes))

    def run(inputs, outputs):
        outputs[0][...] = np.flip(inputs[0], axis=axes)

    return run


# ---- ONE_HOT and BROADCAST_ARGS: tensors built from indices and shapes

ONE_HOT_TYPES = ("FLOAT32", "INT8", "UINT8", "INT32", "INT64", "BOOL")  # LiteRT's one_hot.cc (no INT16)


def prepare_one_hot(node: Node) -> Eval:
    """indices INT32 / INT64, a constant INT32 depth, scalar on_value and off_value of the output's type
    (ONE_HOT_TYPES); OneHotOptions axis (-1: last) places the depth dimension. output[..., d, ...] is on_value
    where the index equals d, else off_value (an index outside [0, depth) gives a row of off_value)."""
    node.expect_counts(4, 1)
    idx, y = node.input(0), node.outputs[0]
    node.expect_types(idx, ("INT32", "INT64"), "indices")
    node.expect_types(y, ONE_HOT_TYPES, "output")
    for i, what in ((2, "on_value"), (3, "off_value")):
        node.expect_types(node.input(i), (y.type,), what)
        if node.input(i).size != 1:
            raise node.error(f"{what} must hold one value")
    depth = int(node.constant_scalar(1, "depth", ("INT32",)))
    if depth < 0:
        raise node.error(f"depth {depth} is negative")
    rank = len(idx.shape)
    given = int(node.options.get("axis", 0))  # the schema default
    axis = rank if given == -1 else given
    if not 0 <= axis <= rank:
        raise node.error(f"axis {given} is out of range for indices of rank {rank}")
    out_shape = idx.shape[:axis] + (depth,) + idx.shape[axis:]
    node.set_output_shape(0, out_shape)
    positions = np.arange(depth).reshape((depth,) + (1,) * (rank - axis))

    def run(inputs, outputs):
        hit = np.expand_dims(inputs[0], axis) == positions
        outputs[0][...] = np.where(hit, inputs[2].reshape(()), inputs[3].reshape(()))

    return run


def prepare_broadcast_args(node: Node) -> Eval:
    """Two 1-D shapes (INT32 / INT64, the same type) to the shape they broadcast to (right-aligned; a 1 takes the
    other's size). Constant shapes are checked in prepare; an incompatible pair at run time gives input 0's size
    (LiteRT and TFLM fail the invoke; our evals cannot)."""
    node.expect_counts(2, 1)
    a, b, y = node.input(0), node.input(1), node.outputs[0]
    node.expect_types(a, ("INT32", "INT64"), "shape")
    node.expect_types(b, (a.type,), "shape")
    node.expect_types(y, (a.type,), "output")
    if len(a.shape) != 1 or len(b.shape) != 1:
        raise node.error(f"shapes must be 1-D, are {a.shape} and {b.shape}")
    n = max(a.shape[0], b.shape[0])
    node.set_output_shape(0, (n,))
    if a.is_const and b.is_const:
        try:
            np.broadcast_shapes(tuple(int(v) for v in a.data), tuple(int(v) for v in b.data))
        except ValueError:
            raise node.error(f"shapes {list(a.data)} and {list(b.data)} do not broadcast") from None

    def run(inputs, outputs):
        x0 = np.concatenate([np.ones(n - inputs[0].size, y.dtype), inputs[0]])
        x1 = np.concatenate([np.ones(n - inputs[1].size, y.dtype), inputs[1]])
        outputs[0][...] = np.where(x0 == 1, x1, x0)

    return run


# ---- MATRIX_DIAG and MATRIX_SET_DIAG: the main diagonal of the innermost matrices

# LiteRT's kernels accept BOOL tensors but write wrong values (cells off the diagonal come out true): not taken here
DIAG_TYPES = ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64")

def prepare_matrix_diag(node: Node) -> Eval:
    """diagonal [..., N] to matrices [..., N, N] with the values on the main diagonal, zeros elsewhere."""
    node.expect_counts(1, 1)
    x = node.input(0)
    node.expect_types(x, DIAG_TYPES)
    _same_quantization(node)
    if not x.shape:
        raise node.error("the diagonal must have rank 1 or more")
    n = x.shape[-1]
    node.set_output_shape(0, x.shape + (n,))
    rows = np.arange(n)

    def run(inputs, outputs):
        outputs[0].fill(0)
        outputs[0][..., rows, rows] = inputs[0]

    return run


def prepare_matrix_set_diag(node: Node) -> Eval:
    """input [..., M, N] with its main diagonal replaced by diagonal [..., min(M, N)]."""
    node.expect_counts(2, 1)
    x, dg = node.input(0), node.input(1)
    node.expect_types(x, DIAG_TYPES)
    node.expect_types(dg, (x.type,), "diagonal")
    _same_quantization(node)
    if len(x.shape) < 2:
        raise node.error(f"input {x.shape} must have rank 2 or more")
    k = min(x.shape[-2], x.shape[-1])
    if dg.shape != x.shape[:-2] + (k,):
        raise node.error(f"diagonal {dg.shape} must be {x.shape[:-2] + (k,)}")
    node.set_output_shape(0, x.shape)
    rows = np.arange(k)

    def run(inputs, outputs):
        outputs[0][...] = inputs[0]
        outputs[0][..., rows, rows] = inputs[1]

    return run


# ---- EMBEDDING_LOOKUP: rows of a table picked by INT32 ids

def prepare_embedding_lookup(node: Node) -> Eval:
    """ids INT32 [K], table [rows, ...]: output [K, ...] (LiteRT's embedding_lookup.cc; TFLM has FLOAT32 / INT8).
    The output of the table's type: the rows copied (any MOVE_TYPES type, quantization shared). A FLOAT32 output of
    an INT8 / UINT8 table with zero point 0 (the hybrid kernel): each stored byte read as int8 (UINT8 bytes too, as
    LiteRT does) times the row's scale (one per tensor, or one per row), in float32. An id outside [0, rows) fails
    the invoke with a DataError naming the node and the id (as LiteRT and TFLM do); constant ids are checked in
    prepare."""
    node.expect_counts(2, 1)
    ids, table, y = node.input(0), node.input(1), node.outputs[0]
    node.expect_types(ids, ("INT32",), "ids")
    # INT4 tables (ai-edge-quantizer's 4-bit embeddings, held unpacked, one int8 per value): hybrid only, as LiteRT
    node.expect_types(table, MOVE_TYPES + ("INT4",) if y.type == "FLOAT32" else MOVE_TYPES, "table")
    if len(ids.shape) != 1 or len(table.shape) < 1:
        raise node.error(f"ids {ids.shape} must be 1-D and the table {table.shape} at least 1-D")
    rows = table.shape[0]
    row = int(np.prod(table.shape[1:], dtype=np.int64))
    node.set_output_shape(0, ids.shape + table.shape[1:])
    if ids.is_const and ((np.asarray(ids.data) < 0) | (np.asarray(ids.data) >= rows)).any():
        raise node.error(f"EMBEDDING_LOOKUP ids out of range [0, {rows})")
    hybrid = y.type == "FLOAT32" and table.type in ("INT8", "UINT8", "INT4")
    if hybrid:
        if not table.quantized or (table.zero_point != 0).any():
            raise node.unsupported("a hybrid lookup needs the table quantized with zero point 0 (LiteRT)")
        if table.scale.size not in (1, rows):
            raise node.error(f"table has {table.scale.size} scales for {rows} rows")
        scales = np.broadcast_to(table.scale.astype(np.float32), (rows,)).reshape(rows, 1)
    else:
        node.expect_types(y, (table.type,), "output")
        if table.quantized or y.quantized:
            if not (table.quantized and y.quantized) or np.float32(table.s) != np.float32(y.s) or table.zp != y.zp:
                raise node.unsupported("table and output quantization differ (the op copies values)")

    where = node.where()

    def run(inputs, outputs):
        at = inputs[0].astype(np.int64)
        error = position_out_of_range(where, "ids", at, rows)
        if error:
            raise error
        t = inputs[1].reshape(rows, row)
        if hybrid:
            out = t[at].view(np.int8).astype(np.float32) * scales[at]
        else:
            out = t[at]
        outputs[0][...] = out.reshape(outputs[0].shape)

    return run


# ---- REVERSE_SEQUENCE: per batch entry, the first seq_lengths[b] elements along seq_dim reversed

REVERSE_SEQUENCE_TYPES = ("FLOAT32", "UINT8", "INT16", "INT32", "INT64")  # LiteRT's reverse_sequence.cc


def prepare_reverse_sequence(node: Node) -> Eval:
    """input of REVERSE_SEQUENCE_TYPES, seq_lengths INT32 / INT64 [input.shape[batch_dim]]; ReverseSequenceOptions
    seq_dim, batch_dim. A length above the sequence dimension fails the invoke with a DataError naming the node, the
    length's element and its value (LiteRT's reference kernel fails there too); a negative one reverses nothing, as
    LiteRT's runs it (its loop over the first length positions does not start)."""
    node.expect_counts(2, 1)
    x, lengths = node.input(0), node.input(1)
    node.expect_types(x, REVERSE_SEQUENCE_TYPES)
    node.expect_types(lengths, ("INT32", "INT64"), "seq_lengths")
    _same_quantization(node)
    rank = len(x.shape)
    seq_dim, batch_dim = int(node.options.get("seq_dim", 0)), int(node.options.get("batch_dim", 0))
    if not (0 <= seq_dim < rank and 0 <= batch_dim < rank) or seq_dim == batch_dim:
        raise node.error(f"seq_dim {seq_dim} and batch_dim {batch_dim} must be two axes of rank {rank}")
    if lengths.shape != (x.shape[batch_dim],):
        raise node.error(f"seq_lengths {lengths.shape} must be [{x.shape[batch_dim]}]")
    node.set_output_shape(0, x.shape)
    n = x.shape[seq_dim]
    pos = np.arange(n).reshape([n if d == seq_dim else 1 for d in range(rank)])
    bshape = [x.shape[batch_dim] if d == batch_dim else 1 for d in range(rank)]

    where = node.where()

    def run(inputs, outputs):
        lengths = inputs[1].astype(np.int64)
        too_long = np.flatnonzero(lengths > n)
        if too_long.size:
            k = int(too_long[0])
            raise DataError(f"{where}: seq_lengths element {k} is {int(lengths[k])}, above the sequence dimension "
                            f"{seq_dim} of size {n} (a run-time input)")
        ln = np.maximum(lengths, 0).reshape(bshape)
        src = np.where(pos < ln, ln - 1 - pos, pos)  # the source position along seq_dim, per batch entry
        outputs[0][...] = np.take_along_axis(inputs[0], np.broadcast_to(src, x.shape), axis=seq_dim)

    return run


# ---- SCATTER_ND: zeros of a constant shape with update slices added at index vectors

SCATTER_ND_TYPES = ("FLOAT32", "INT8", "UINT8", "INT32", "INT64", "BOOL")  # LiteRT's scatter_nd.cc updates


def prepare_scatter_nd(node: Node) -> Eval:
    """indices INT32 [..., K] (LiteRT takes no other), updates [..., slice] of SCATTER_ND_TYPES, an INT32 shape
    (constant: it sets the output's size): output zeros of that shape, each update slice added (BOOL: or-ed) at its index
    vector in input order, repeats accumulating. A coordinate outside the shape fails the invoke with a DataError
    naming the node and the coordinate (as LiteRT does)."""
    node.expect_counts(3, 1)
    idx, upd, y = node.input(0), node.input(1), node.outputs[0]
    node.expect_types(idx, ("INT32",), "indices")
    node.expect_types(upd, SCATTER_ND_TYPES, "updates")
    node.expect_types(y, (upd.type,), "output")
    shape = tuple(int(v) for v in node.constant_values(2, "shape", ("INT32",)))
    if not idx.shape or not 1 <= idx.shape[-1] <= len(shape) or any(d < 0 for d in shape):
        raise node.error(f"indices {idx.shape} must end in K with 1 <= K <= rank of shape {shape}")
    k = idx.shape[-1]
    if upd.shape != idx.shape[:-1] + shape[k:]:
        raise node.error(f"updates {upd.shape} must be {idx.shape[:-1] + shape[k:]}")
    node.set_output_shape(0, shape)
    outer = np.array(shape[:k], np.int64)
    n_rows = int(np.prod(shape[:k], dtype=np.int64))
    row = int(np.prod(shape[k:], dtype=np.int64))
    fold = np.logical_or if upd.type == "BOOL" else np.add

    where = node.where()

    def run(inputs, outputs):
        ind = inputs[0].reshape(-1, k).astype(np.int64)
        error = position_out_of_range(where, "indices", ind, outer)
        if error:
            raise error
        flat = np.ravel_multi_index(tuple(ind.T), shape[:k]) if ind.size else np.zeros(0, np.int64)
        acc = np.zeros((n_rows, row), upd.dtype)
        with np.errstate(over="ignore"):
            fold.at(acc, flat, inputs[1].reshape(-1, row))  # in input order
        outputs[0][...] = acc.reshape(shape)

    return run


# ---- SPARSE_TO_DENSE: default_value everywhere, values at the given indices

SPARSE_TO_DENSE_TYPES = ("FLOAT32", "INT8", "UINT8", "INT32", "INT64")  # LiteRT's sparse_to_dense.cc values


def prepare_sparse_to_dense(node: Node) -> Eval:
    """indices INT32 / INT64 ([N, K], [N] for a 1-D output, or one scalar index), a constant output_shape of the
    indices' type (it sets the output's size), values [N] or one value, a one-value default_value (values' type,
    SPARSE_TO_DENSE_TYPES). The output holds default_value, then each value at its index in input order (a repeated
    index keeps the last). An index outside the shape fails the invoke with a DataError naming the node, the index's
    first bad element (flat) and its value, as LiteRT's kernel fails it (with validate_indices false too)."""
    node.expect_counts(4, 1)
    idx, vals, dflt, y = node.input(0), node.input(2), node.input(3), node.outputs[0]
    node.expect_types(idx, ("INT32", "INT64"), "indices")
    node.expect_types(vals, SPARSE_TO_DENSE_TYPES, "values")
    node.expect_types(dflt, (vals.type,), "default_value")
    node.expect_types(y, (vals.type,), "output")
    shape = tuple(int(v) for v in node.constant_values(1, "output_shape", (idx.type,)))
    if len(idx.shape) > 2 or any(d < 0 for d in shape) or dflt.size != 1:
        raise node.error(f"indices {idx.shape} must be 0-D to 2-D, output_shape {shape} non-negative, one default")
    k = idx.shape[1] if len(idx.shape) == 2 else 1
    n = idx.shape[0] if idx.shape else 1
    if k != len(shape) or vals.size not in (1, n):
        raise node.error(f"indices {idx.shape} and values {vals.shape} do not fit output_shape {shape}")
    node.set_output_shape(0, shape)
    bounds = np.array(shape, np.int64)

    where = node.where()

    def run(inputs, outputs):
        ind = inputs[0].reshape(n, k).astype(np.int64)
        error = position_out_of_range(where, "indices", ind, bounds)
        if error:
            raise error
        v = np.broadcast_to(inputs[2].reshape(-1), (n,))
        flat = np.ravel_multi_index(tuple(ind.T), shape) if n else np.zeros(0, np.int64)
        # the last of repeated indices wins: keep each index's last occurrence
        last = len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1]
        out = outputs[0].reshape(-1)
        out.fill(inputs[3].reshape(-1)[0])
        out[flat[last]] = v[last]

    return run
