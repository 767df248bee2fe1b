"""Shape arithmetic: values a model computes from its input shapes and constants alone.

PyTorch and onnx2tf exports compute the parameters of RESHAPE, TRANSPOSE_CONV, FILL, ... from the input shape
(SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE). Once the input shapes are known, so are those values:
``know_at_prepare`` evaluates such a node right after its prepare (the Python interpreter calls it for every node,
so the nodes after it read the values as their parameters: ``TensorInfo.known``), and ``declared_shapes`` gives
the shapes that follow for subgraph 0's tensors, which the bytes the C runtime loads declare
(edge_sdk.runtime.uint8.c_model): its RESHAPE / TRANSPOSE_CONV size their outputs from the declared shape when
their shape input is not a constant (and check it at every invoke).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime import op_table
from edge_sdk.runtime.kernels.node import Node

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


def declared_shapes(model) -> dict[tuple[int, int], tuple[int, ...]]:
    """(0, tensor) -> shape for subgraph 0's tensors whose shape, with shape arithmetic evaluated (each node
    prepared by its kernel in order, ``know_at_prepare`` after it), differs from the one the model declares. Empty
    for a model without a ``shape_only`` op (SHAPE, RANK: nothing to evaluate) or whose subgraph 0 calls others
    (IF / WHILE: the interpreter's own prepare answers those, CInterpreter). Stops at the first node its kernel
    refuses: the shapes after it are not known here (the runtime that loads the model names that node)."""
    from edge_sdk.runtime.planner import tensor_infos

    codes = model.operator_codes
    if not model.subgraphs or not any(op_table.row(c.name).shape_only for c in codes):
        return {}
    sg = model.subgraphs[0]
    if any(op_table.row(codes[op.opcode_index].name).subgraphs for op in sg.operators):
        return {}
    infos = []
    try:
        infos = tensor_infos(model, 0)
        for i, op in enumerate(sg.operators):
            code = codes[op.opcode_index]
            node = Node(index=i, subgraph=0, op=code.name, version=code.version, options=dict(op.options or {}),
                        custom_options=op.custom_options, inputs=[None if t == -1 else infos[t] for t in op.inputs],
                        outputs=[infos[t] for t in op.outputs], intermediates=[infos[t] for t in op.intermediates])
            node._eval = op_table.lookup(code.name, code.version).prepare_function()(node)
            know_at_prepare(node)
    except Exception:  # noqa: BLE001 - a node (or tensor) the runtime that loads the model names itself
        pass
    return {(0, info.index): tuple(info.shape) for info in infos
            if not info.is_const and tuple(info.shape) != tuple(sg.tensors[info.index].shape)}
