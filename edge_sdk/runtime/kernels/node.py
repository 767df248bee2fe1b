"""What a kernel sees: one node of a subgraph, its tensors, and the runtime around it.

Every kernel is a ``prepare`` function (named in ``edge_sdk.runtime.op_table``)::

    def prepare_conv_2d(node: Node) -> Eval:
        # validate types, shapes, quantization and options; raise node.unsupported(...) / node.error(...)
        # compute output shapes: node.set_output_shape(0, (n, h, w, c))
        # precompute everything the hot loop needs (multipliers, shifts, LUTs, transposed weights)
        def run(inputs: list[np.ndarray | None], outputs: list[np.ndarray]) -> None:
            ...                      # no checks here: write results in place, outputs[0][...] = y
        return run

*Prepare validates, eval runs blind.* ``inputs`` holds, per node input, the constant's value (read-only numpy
array) or the tensor's view into the arena (None for an omitted optional input, index -1). ``outputs`` are
arena views shaped as the shapes prepare set. Eval must write its outputs in place and must not keep
references to arrays between calls except the ones prepare made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from edge_sdk.errors import ModelError, UnsupportedOpError

Eval = Callable[[list, list], None]


@dataclass
class TensorInfo:
    """A tensor as kernels see it at prepare time."""

    index: int  # index in its subgraph
    name: str
    type: str  # TensorType name ("INT8", "FLOAT32", ...)
    dtype: np.dtype  # numpy dtype of the arena view / constant
    shape: tuple[int, ...]
    scale: np.ndarray | None = None  # float32, one per tensor or per channel; None when not quantized
    zero_point: np.ndarray | None = None  # int64, same length as scale
    quantized_dimension: int = 0
    data: np.ndarray | None = None  # the constant value, or None for tensors computed at run time
    is_variable: bool = False
    sparsity: Any = None  # edge_sdk.model.Sparsity for sparse constants
    # an output whose size depends on the data (its op row's ``data_sized``): no arena bytes; eval sizes it through
    # the interpreter's DataSizedOutput (``resize(shape)``); the nodes reading it are prepared at eval (PreparedAtEval)
    sized_at_eval: bool = False
    # such an output's most elements, when its kernel knows them at prepare (WHERE: the condition's elements x rank;
    # UNIQUE: the input's elements); None: no bound known (a growing WHILE's loop variable, a node prepared at eval)
    max_elements: int | None = None
    # a tensor computed at run time whose value prepare already knows: shape arithmetic on SHAPE / RANK outputs and
    # constants (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE, as PyTorch and onnx2tf exports write it), evaluated by
    # the interpreter right after its node's prepare (shape_arithmetic.know_at_prepare); it still lives in the arena and
    # its node still writes it at every invoke (the same value). None: unknown until run time.
    value: np.ndarray | None = None
    # a run-time tensor an op reads as the shape prepare sized its output with (RESHAPE's shape, TRANSPOSE_CONV's
    # output_shape: shape.run_time_shape_check): the one value it may hold at invoke. A model input of this kind
    # (TFLM's seanet TRANSPOSE_CONV models feed output_shape) is given it where inputs are made up (random feeds).
    expected: np.ndarray | None = None

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def known(self) -> np.ndarray | None:
        """The value prepare may rely on: the constant's, else the one known at prepare (``value``), else None."""
        return self.data if self.data is not None else self.value

    @property
    def quantized(self) -> bool:
        return self.scale is not None and self.scale.size > 0

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    # Per-tensor quantization parameters as the C kernels read them (float32 scale, int32 zero point).
    @property
    def s(self) -> float:
        return float(self.scale[0])

    @property
    def zp(self) -> int:
        return int(self.zero_point[0])


class Runtime(Protocol):
    """The interpreter services that stateful and control-flow kernels use."""

    # Resource variables (VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE), by resource id. Each value is a
    # numpy array that lives as long as the interpreter; reset_all_variables() clears the dict.
    resource_variables: dict[int, np.ndarray]

    def resource_id(self, container: str, shared_name: str) -> int:
        """A stable id for a (container, shared_name) pair, the same for every VAR_HANDLE naming it."""

    def invoke_subgraph(self, subgraph_index: int, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """Run another subgraph (CALL_ONCE, WHILE, IF) with these inputs; returns its outputs (copies)."""

    # Control flow (IF / WHILE): the model, the most body runs a WHILE node may make per invoke (None: no bound),
    # and, during prepare, a callee subgraph's tensor infos (callees are prepared before their callers).
    model: Any
    max_while_iterations: int | None

    def subgraph_infos(self, subgraph_index: int) -> list[TensorInfo]:
        """Subgraph ``subgraph_index``'s tensor infos, as prepared (prepare time only)."""

    def prepare_subgraph_at(self, subgraph_index: int, shapes, caller: "Node") -> None:
        """Prepare time only: the callee prepared again at the caller's input shapes where they differ."""

    def standalone(self, model: Any) -> Any:
        """An interpreter of ``model`` (a callee as its own model) under this runtime's bounds: a WHILE whose body
        changes shapes runs cond and body there, prepared again at each iteration's shapes (eval time)."""

    def trace_sink(self) -> list | None:
        """Eval time: the rows list of this runtime's invoke_traced() running now (where the standalone interpreters
        of a growing WHILE add their steps' rows), else None."""


@dataclass
class Node:
    """One operator, ready for its kernel's prepare."""

    index: int  # node index within its subgraph (execution order)
    subgraph: int
    op: str  # builtin name ("CONV_2D") or custom code ("SignalWindow")
    version: int
    options: dict  # builtin options by schema field name; {} when absent
    custom_options: bytes | None
    inputs: list[TensorInfo | None]
    outputs: list[TensorInfo]
    intermediates: list[TensorInfo] = field(default_factory=list)
    runtime: Runtime | None = None
    # Output shapes prepare computed (index -> shape); the interpreter applies them before planning.
    output_shapes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # Patch-based execution (edge_sdk.runtime.patching): a window kernel (CONV_2D, DEPTHWISE_CONV_2D, the 2-D
    # pools) runs on a window of its input; (pad_top, pad_left, out_h, out_w) replace the geometry its padding
    # option gives (see edge_sdk.runtime.kernels.conv.patch_window). None: the whole tensor.
    window: tuple[int, int, int, int] | None = None

    def set_output_shape(self, i: int, shape) -> None:
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise self.error(f"output {i} would have a negative dimension {shape}")
        self.output_shapes[i] = shape
        self.outputs[i].shape = shape

    def input(self, i: int) -> TensorInfo:
        """Input ``i``; a missing required input is a model error."""
        if i >= len(self.inputs) or self.inputs[i] is None:
            raise self.error(f"input {i} is required but missing")
        return self.inputs[i]

    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def where(self) -> str:
        sg = f"subgraph {self.subgraph} " if self.subgraph else ""
        return f"{sg}node {self.index} ({self.op} v{self.version})"

    def error(self, message: str) -> ModelError:
        """A ModelError naming this node: ``raise node.error("filter must be 4-D")``."""
        return ModelError(f"{self.where()}: {message}")

    def unsupported(self, message: str) -> UnsupportedOpError:
        """An UnsupportedOpError naming this node and its input dtype."""
        t = self.inputs[0].type if self.inputs and self.inputs[0] is not None else "-"
        return UnsupportedOpError(f"{self.where()}, input dtype {t}: {message}")

    def expect(self, condition: bool, message: str) -> None:
        if not condition:
            raise self.error(message)

    def expect_counts(self, n_inputs: int | tuple[int, int], n_outputs: int) -> None:
        lo, hi = (n_inputs, n_inputs) if isinstance(n_inputs, int) else n_inputs
        if not lo <= len(self.inputs) <= hi:
            raise self.error(f"expects {lo}..{hi} inputs, has {len(self.inputs)}")
        if len(self.outputs) != n_outputs:
            raise self.error(f"expects {n_outputs} outputs, has {len(self.outputs)}")

    def expect_types(self, tensor: TensorInfo, allowed: tuple[str, ...], what: str = "input") -> None:
        if tensor.type not in allowed:
            raise self.unsupported(f"{what} '{tensor.name}' has type {tensor.type}; supported: {', '.join(allowed)}")

    def expect_quantized(self, *tensors: TensorInfo | None) -> None:
        """Each tensor given (None: an omitted optional input, skipped) carries a scale and zero point."""
        for t in tensors:
            if t is not None and not t.quantized:
                raise self.error(f"tensor '{t.name}' of type {t.type} needs quantization parameters")

    def constant_values(self, i: int, what: str, allowed: tuple[str, ...]) -> np.ndarray:
        """The values of input ``i`` (flattened) when prepare needs them (axes, sizes, paddings, thresholds): a
        constant of a type in ``allowed``, or a tensor whose value is known at prepare (``TensorInfo.known``: shape
        arithmetic); any other tensor computed at run time is an UnsupportedOpError."""
        t = self.input(i)
        self.expect_types(t, allowed, what)
        if t.known is None:
            raise self.unsupported(f"{what} tensor '{t.name}' is computed at run time from data; only a constant "
                                   "tensor or one computed from shapes and constants is supported")
        return np.asarray(t.known).reshape(-1)

    def constant_scalar(self, i: int, what: str, allowed: tuple[str, ...]):
        """The one value of constant input ``i`` (``constant_values``; holding another count is a model error)."""
        values = self.constant_values(i, what, allowed)
        if values.size != 1:
            raise self.error(f"{what} must hold one value, holds {values.size}")
        return values[0]
