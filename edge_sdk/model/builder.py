"""Build a ``Model`` op by op: the demo, the tests and the converter's writer side use it.

    g = GraphBuilder()
    x = g.input("x", (1, 16, 16, 1), "INT8", scale=1 / 128, zero_point=0)
    w = g.constant("w", weights_int8, scale=w_scales, zero_point=0, quantized_dimension=0)
    y = g.tensor("y", (1, 8, 8, 8), "INT8", scale=0.05, zero_point=-128)
    g.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_w=2, stride_h=2, fused_activation_function="RELU")
    g.output(y)
    model = g.build()

Several subgraphs (IF / WHILE branches, a CALL_ONCE init): ``g.subgraph("then")`` is a builder for one more
subgraph of the same model (sharing its buffers and operator codes); its ``index`` is the subgraph index an
op's options name, and ``g.build()`` writes the main subgraph first, then the others in creation order.

    then = g.subgraph("then")                      # then.index == 1
    a = then.input("a", (1, 4)); ...; then.output(r)
    g.op("IF", [cond, x], [y], then_subgraph_index=then.index, else_subgraph_index=other.index)
"""

from __future__ import annotations

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
    SubGraph,
    Tensor,
)


def _quantization(scale, zero_point, quantized_dimension) -> Quantization | None:
    if scale is None:
        return None
    scale = np.atleast_1d(np.asarray(scale, dtype=np.float32))
    zp = np.zeros(scale.shape, np.int64) if zero_point is None else np.atleast_1d(np.asarray(zero_point, np.int64))
    if zp.size == 1 and scale.size > 1:
        zp = np.full(scale.shape, zp[0], np.int64)
    return Quantization(scale=scale, zero_point=zp, quantized_dimension=int(quantized_dimension))


class GraphBuilder:
    """One subgraph, built in execution order (the main one; ``subgraph()`` adds others to the same model)."""

    def __init__(self, name: str = "main", _root: "GraphBuilder | None" = None):
        self.name = name
        self.tensors: list[Tensor] = []
        self.operators: list[Operator] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        if _root is None:
            self.buffers: list[Buffer] = [Buffer()]  # buffer 0: the empty buffer, by convention
            self.operator_codes: list[OperatorCode] = []
            self.index = 0
            self._subgraphs: list[GraphBuilder] = []  # the root's: every other subgraph, in index order
        else:  # one model: the other subgraphs share the root's buffers and operator codes
            self.buffers = _root.buffers
            self.operator_codes = _root.operator_codes
            self.index = len(_root._subgraphs) + 1
        self._root = _root or self

    def subgraph(self, name: str) -> "GraphBuilder":
        """A builder for a new subgraph of this model (index ``.index``: the next free one)."""
        child = GraphBuilder(name, _root=self._root)
        self._root._subgraphs.append(child)
        return child

    def tensor(self, name, shape, type="FLOAT32", scale=None, zero_point=None, quantized_dimension=0,
               is_variable=False, data=None) -> int:
        """A tensor; with ``data`` a constant (stored in its own buffer). Returns its index."""
        if type not in TENSOR_TYPES:
            raise ModelError(f"tensor '{name}': unknown type {type}")
        buffer = 0
        if data is not None:
            dtype = TENSOR_TYPES[type][1]
            array = np.asarray(data, dtype=dtype, order="C")  # (ascontiguousarray would make 0-d 1-d)
            if tuple(array.shape) != tuple(shape):
                raise ModelError(f"tensor '{name}': data shape {array.shape} != declared {tuple(shape)}")
            self.buffers.append(Buffer(array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()))
            buffer = len(self.buffers) - 1
        self.tensors.append(
            Tensor(name=name, shape=tuple(int(d) for d in shape), type=type, buffer=buffer,
                   quantization=_quantization(scale, zero_point, quantized_dimension), is_variable=is_variable)
        )
        return len(self.tensors) - 1

    def constant(self, name, data: np.ndarray, type: str | None = None, **quant) -> int:
        data = np.asarray(data)
        if type is None:
            type = next(n for n, (_, dt) in TENSOR_TYPES.items() if dt == data.dtype)
        return self.tensor(name, data.shape, type, data=data, **quant)

    def input(self, name, shape, type="FLOAT32", **quant) -> int:
        index = self.tensor(name, shape, type, **quant)
        self.inputs.append(index)
        return index

    def output(self, *indices: int) -> None:
        self.outputs.extend(indices)

    def _opcode(self, op: str, version: int) -> int:
        if op in BUILTIN_OPERATOR_CODES:
            code = OperatorCode(builtin_code=BUILTIN_OPERATOR_CODES[op], version=version)
        else:
            code = OperatorCode(builtin_code=CUSTOM_CODE, custom_code=op, version=version)
        for i, existing in enumerate(self.operator_codes):
            if existing == code:
                return i
        self.operator_codes.append(code)
        return len(self.operator_codes) - 1

    def op(self, op: str, inputs: list[int], outputs: list[int], version: int = 1, custom_options: bytes | None = None,
           options_type: str | None = None, **options) -> None:
        """Append an operator; ``options`` are its builtin options by schema field name (enum values by name)."""
        if options_type is None and op in BUILTIN_OPERATOR_CODES:
            from edge_sdk.model.writer import options_for

            options_type = options_for(op)
        self.operators.append(
            Operator(opcode_index=self._opcode(op, version), inputs=list(inputs), outputs=list(outputs),
                     options_type=options_type, options=dict(options), custom_options=custom_options)
        )

    def build(self, description: str = "edge-sdk") -> Model:
        """The model: this (main) subgraph, then those ``subgraph()`` added."""
        if self._root is not self:
            raise ModelError(f"subgraph '{self.name}' (index {self.index}) is part of a model: build the main one")
        subgraphs = [SubGraph(tensors=b.tensors, inputs=b.inputs, outputs=b.outputs, operators=b.operators,
                              name=b.name) for b in [self, *self._subgraphs]]
        return Model(operator_codes=self.operator_codes, subgraphs=subgraphs, buffers=self.buffers,
                     description=description)
