"""Shape arithmetic: values a model computes from its input shapes and constants alone.

PyTorch and onnx2tf exports compute the parameters of RESHAPE, TRANSPOSE_CONV, FILL, PAD, SLICE, ... from the
input shape (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE). Once the input shapes are known, so are those values:
``know_at_prepare`` evaluates such a node right after its prepare (the Python interpreter calls it for every node,
so the nodes after it read the values as their parameters: ``TensorInfo.known``). The C runtime has no dynamic
tensors and reads parameters from constants: ``c_loaded`` gives the model it loads (every path to it -
CInterpreter, edge check / flash / export / profile through edge_sdk.runtime.c_loaded.c_model - goes through it):
each tensor declared at the shape the Python prepare gives it, each known value a constant its readers read.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from edge_sdk.runtime import op_table
from edge_sdk.model.types import Buffer, Metadata, Model
from edge_sdk.runtime.kernels.node import Node

# The metadata entry of the bytes the C runtime loads naming the nodes it skips (c_loaded: _skippable); the C
# loader's EDGE_SKIP_METADATA (firmware_c/include/edge_kernel.h) is this name.
SKIP_METADATA = "edge_skip_nodes"

# The most elements an output known at prepare may hold (know_at_prepare): shape vectors and scalars, never activations.
KNOWN_AT_PREPARE_ELEMENTS = 64


def know_at_prepare(node: Node) -> None:
    """Evaluate a prepared node now when its outputs follow from shapes and constants alone (a ``shape_only`` op
    such as SHAPE, or every input known: ``TensorInfo.known``), setting each output's ``value``: the shape
    arithmetic of PyTorch / onnx2tf exports (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE) is then known to the nodes
    after it, which size their outputs from it (what LiteRT does at invoke, when the values exist). Only small
    outputs (KNOWN_AT_PREPARE_ELEMENTS) of pure ops; the node still runs at every invoke."""
    row = op_table.row(node.op)
    if row.effects or row.random or row.data_sized or row.subgraphs or hasattr(node._eval, "reset"):
        return
    if any(o.dtype is None or o.size > KNOWN_AT_PREPARE_ELEMENTS for o in node.outputs):
        return
    if row.shape_only:
        inputs = [None] * len(node.inputs)  # its eval writes what prepare read off the input's shape
    elif any(t is not None and t.known is None for t in node.inputs) or not any(t is not None for t in node.inputs):
        return
    else:
        inputs = [None if t is None else t.known for t in node.inputs]  # as invoke's views hold them
    outs = [np.zeros(o.shape, o.dtype) for o in node.outputs]
    try:
        node._eval(inputs, outs)
    except Exception:  # noqa: BLE001 - a value that fails now fails at invoke, where it is reported with its node
        return
    for info, value in zip(node.outputs, outs):
        value.setflags(write=False)
        info.value = value


def c_loaded(model: Model, report) -> Model:
    """The model the C runtime loads for ``model`` (the C runtime has no dynamic tensors and reads a parameter -
    FILL's dims, TILE's multiples, PAD's paddings, SLICE / STRIDED_SLICE's begin / end, BROADCAST_TO's shape,
    RESIZE's size, ... - from a constant): ``model`` with every tensor declared at the shape the Python prepare
    gives it (resized inputs, shape arithmetic, IF / WHILE callees included), and every value the prepare knows
    (``TensorInfo.value``: SHAPE -> STRIDED_SLICE -> PACK ...) handed as a constant to the nodes that read it (a
    new tensor ``<name>/known``, appended: the model's own tensor indices stay). The nodes that compute such a
    value still run (on constants but SHAPE / RANK), so node indices stay too. ``report`` is
    ``Interpreter.prepare_report()`` of ``model`` at the wanted input shapes (None: ``model`` as it is).
    ``model`` itself when nothing changes. Subgraph by subgraph, only what nodes before the first one the Python
    prepare refuses give (the runtime that loads the model names that node)."""
    if report is None:
        return model
    _, failures, infos = report
    shapes, known = {}, {}
    for s, sg in enumerate(model.subgraphs):
        first_refused = min((i for (f, i) in failures if f == s), default=len(sg.operators))
        shapes.update(_declared(sg, infos[s], s, first_refused))
        known.update(_known_parameters(model, sg, infos[s], s, first_refused))
    if not shapes and not known:
        return model
    loaded = _with_known(with_shapes(model, shapes), known, infos)
    return _with_skips(loaded, _skippable(loaded, infos))


def _skippable(model: Model, infos) -> list[tuple[int, int]]:
    """(subgraph, node) of the nodes the C runtime need not run in ``model`` (the bytes it loads, readers rewired
    to the ``<name>/known`` constants): a pure node whose every output is a value known at prepare, read by no
    node that runs and no subgraph output (SHAPE -> STRIDED_SLICE -> PACK once RESHAPE reads its shape as a
    constant). Found back to front, so a chain whose end is unread goes whole."""
    out = []
    for s, sg in enumerate(model.subgraphs):
        read = set(sg.outputs)
        dead = []
        for i in range(len(sg.operators) - 1, -1, -1):
            op = sg.operators[i]
            row = op_table.row(model.op_name(op))
            known = all(0 <= t < len(infos[s]) and infos[s][t].value is not None for t in op.outputs)
            pure = not (row.effects or row.random or row.data_sized or row.subgraphs)
            if pure and op.outputs and known and not read.intersection(op.outputs):
                dead.append((s, i))
            else:
                read.update(t for t in op.inputs if t >= 0)
        out.extend(reversed(dead))
    return out


def _with_skips(model: Model, pairs: list[tuple[int, int]]) -> Model:
    """``model`` with the metadata entry SKIP_METADATA (int32 (subgraph, node) pairs: firmware_c's
    EDGE_SKIP_METADATA, read at load; invoke skips those nodes, their profile rows stay) naming ``pairs``."""
    if not pairs:
        return model
    out = copy.copy(model)
    out.buffers = [*model.buffers, Buffer(np.asarray(pairs, "<i4").tobytes())]
    out.metadata = [m for m in model.metadata if m.name != SKIP_METADATA]
    out.metadata.append(Metadata(SKIP_METADATA, len(out.buffers) - 1))
    return out


def _trusted_outputs(sg, first_refused: int) -> set[int]:
    """The tensors the nodes before the first refused one write (their shapes and values follow from the inputs)."""
    return {t for op in sg.operators[:first_refused] for t in op.outputs if t >= 0}


def _declared(sg, infos, s: int, first_refused: int) -> dict[tuple[int, int], tuple[int, ...]]:
    """(s, tensor) -> shape for the subgraph's run-time tensors whose prepared shape is not the declared one (not an
    output sized at eval: its prepared shape is a placeholder)."""
    trusted = _trusted_outputs(sg, first_refused) | set(sg.inputs)
    return {(s, info.index): tuple(info.shape) for info in infos
            if info.index in trusted and not info.is_const and not info.sized_at_eval
            and tuple(info.shape) != tuple(sg.tensors[info.index].shape)}


def _known_parameters(model, sg, infos, s: int, first_refused: int) -> dict[tuple[int, int, int], int]:
    """(s, node, input position) -> tensor for each known value a node reads, but a control-flow node's (IF /
    WHILE pass their inputs to their subgraphs as they are)."""
    trusted = _trusted_outputs(sg, first_refused)
    out = {}
    for i, op in enumerate(sg.operators[:first_refused]):
        if op_table.row(model.op_name(op)).subgraphs:
            continue
        for k, t in enumerate(op.inputs):
            if t >= 0 and t in trusted and infos[t].value is not None and not infos[t].is_const:
                out[(s, i, k)] = t
    return out


def with_shapes(model: Model, shapes: dict[tuple[int, int], tuple[int, ...]]) -> Model:
    """A copy of ``model`` whose tensors (subgraph, tensor) have these shapes (the rest shared, not copied)."""
    out = copy.copy(model)
    out.subgraphs = list(model.subgraphs)
    for (s, t), shape in shapes.items():
        sg = out.subgraphs[s] = copy.copy(out.subgraphs[s])
        sg.tensors = list(sg.tensors)
        sg.tensors[t] = dataclasses.replace(sg.tensors[t], shape=shape)
    return out


def _with_known(model: Model, known: dict[tuple[int, int, int], int], infos) -> Model:
    """A copy of ``model`` whose nodes read the known values ``known`` names from constants: one appended tensor
    ``<name>/known`` (its own buffer) per known tensor, each reading node's input rewired to it."""
    if not known:
        return model
    out = copy.copy(model)
    out.buffers = list(model.buffers)
    out.subgraphs = list(model.subgraphs)
    constant_of: dict[tuple[int, int], int] = {}  # (s, tensor) -> its constant twin
    for (s, i, k), t in sorted(known.items()):
        sg = out.subgraphs[s]
        if sg is model.subgraphs[s]:
            sg = out.subgraphs[s] = copy.copy(sg)
            sg.tensors, sg.operators = list(sg.tensors), list(sg.operators)
        if (s, t) not in constant_of:
            info, tensor = infos[s][t], sg.tensors[t]
            out.buffers.append(Buffer(np.ascontiguousarray(info.value, info.dtype).tobytes()))
            sg.tensors.append(dataclasses.replace(tensor, name=f"{tensor.name}/known", shape=tuple(info.shape),
                                                  buffer=len(out.buffers) - 1, shape_signature=None,
                                                  is_variable=False))
            constant_of[(s, t)] = len(sg.tensors) - 1
        op = sg.operators[i] = copy.copy(sg.operators[i])
        op.inputs = [*op.inputs[:k], constant_of[(s, t)], *op.inputs[k + 1:]]
    return out
