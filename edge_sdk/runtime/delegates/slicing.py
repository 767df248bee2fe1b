"""Cut a partition out of a model: a standalone one-subgraph ``Model`` another runtime can load.

The partition's boundary inputs become the new model's inputs and its boundary outputs its outputs (in the
order given); every constant its nodes read is copied with its buffer; run-time tensors get the shapes the
interpreter's prepare computed (so resized inputs carry through) and no shape signature.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from edge_sdk.errors import ModelError
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.model.types import Buffer, Model, SubGraph


def slice_partition(
    model: Model,
    subgraph: int,
    node_indices: Sequence[int],
    inputs: Sequence[int],
    outputs: Sequence[int],
    nodes: Sequence[Node] | None = None,
) -> Model:
    """The nodes ``node_indices`` of ``model.subgraphs[subgraph]`` as a model of their own.

    ``nodes`` (the subgraph's prepared nodes, by node index) give run-time tensors their prepared shapes;
    without them the declared shapes are kept.
    """
    sg = model.subgraphs[subgraph]
    shapes: dict[int, tuple[int, ...]] = {}
    if nodes is not None:
        for i in node_indices:
            node = nodes[i]
            for info in [*node.inputs, *node.outputs, *node.intermediates]:
                if info is not None and not info.is_const:
                    shapes[info.index] = tuple(info.shape)
    remap: dict[int, int] = {}
    tensors = []
    buffers = [Buffer()]
    buffer_map: dict[int, int] = {}

    def take(t: int) -> int:
        if t < 0:
            return -1
        if t in remap:
            return remap[t]
        if not t < len(sg.tensors):
            raise ModelError(f"partition of subgraph {subgraph}: tensor {t} out of range")
        tensor = sg.tensors[t]
        constant = not tensor.is_variable and tensor.buffer > 0 and bool(model.buffers[tensor.buffer].data)
        if constant:
            if tensor.buffer not in buffer_map:
                buffers.append(Buffer(bytes(model.buffers[tensor.buffer].data)))
                buffer_map[tensor.buffer] = len(buffers) - 1
            new = dataclasses.replace(tensor, buffer=buffer_map[tensor.buffer])
        else:
            new = dataclasses.replace(
                tensor, buffer=0, shape=shapes.get(t, tuple(tensor.shape)), shape_signature=None
            )
        remap[t] = len(tensors)
        tensors.append(new)
        return remap[t]

    for t in inputs:
        take(int(t))
    codes = []
    code_map: dict[int, int] = {}
    operators = []
    for i in node_indices:
        op = sg.operators[i]
        if op.opcode_index not in code_map:
            codes.append(dataclasses.replace(model.operator_codes[op.opcode_index]))
            code_map[op.opcode_index] = len(codes) - 1
        operators.append(
            dataclasses.replace(
                op,
                opcode_index=code_map[op.opcode_index],
                inputs=[take(int(t)) for t in op.inputs],
                outputs=[take(int(t)) for t in op.outputs],
                intermediates=[take(int(t)) for t in op.intermediates],
                options=dict(op.options or {}),
            )
        )
    for t in outputs:
        if int(t) not in remap:
            raise ModelError(f"partition of subgraph {subgraph}: output tensor {t} is not produced by its nodes")
    new_sg = SubGraph(
        tensors=tensors,
        inputs=[remap[int(t)] for t in inputs],
        outputs=[remap[int(t)] for t in outputs],
        operators=operators,
        name=f"{sg.name or 'subgraph'}[{node_indices[0]}..{node_indices[-1]}]" if node_indices else sg.name,
    )
    return Model(
        operator_codes=codes,
        subgraphs=[new_sg],
        buffers=buffers,
        version=model.version,
        description="edge-sdk delegate partition",
    )
