"""Delegates that run partitions through ai-edge-litert: ``litert`` and ``external``.

Each partition is cut out of the model (``edge_sdk.runtime.delegates.slicing``), written with our writer and loaded
into one ``ai_edge_litert.interpreter.Interpreter`` at allocate time; at invoke the boundary inputs are
copied in, LiteRT invokes, and the boundary outputs are copied back into the interpreter's arena.

Exactness: our int8/int16 kernels equal TFLM's. LiteRT's optimized kernels (the default resolver, with
XNNPACK) may round differently from TFLM by one quantum on int8 (and float results differ in the last
bits); ``LiteRTDelegate(reference=True)`` selects LiteRT's reference kernels (``OpResolverType.BUILTIN_REF``),
which agree with TFLM on most ops — not all: on some ops (e.g. mobilenet_v2's) LiteRT's reference kernels
differ from TFLM by one quantum on a few outputs (see the shared NOTES).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence

import numpy as np

from edge_sdk.runtime.delegates.base import Delegate, Run
from edge_sdk.runtime.delegates.slicing import slice_partition
from edge_sdk.errors import DeviceError, ModelError
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES
from edge_sdk.model.types import Model

# Types LiteRT's Python interpreter can exchange with numpy at a partition's boundary.
_BOUNDARY_TYPES = frozenset(
    ("FLOAT32", "FLOAT16", "FLOAT64", "INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "UINT64", "BOOL",
     "COMPLEX64", "COMPLEX128")
)


class LiteRTDelegate(Delegate):
    """Run partitions with ai-edge-litert's builtin kernels.

    ``reference=True``: LiteRT's reference kernels (``BUILTIN_REF``, for exactness tests), else its default
    optimized kernels with XNNPACK. ``ops``: take only these builtin ops (default: every builtin op).
    """

    def __init__(self, reference: bool = False, num_threads: int = 1, ops: Sequence[str] | None = None,
                 name: str = "litert"):
        self.name = name
        self.reference = bool(reference)
        self.num_threads = int(num_threads)
        self.ops = None if ops is None else frozenset(ops)

    def supports(self, node: Node) -> tuple[bool, str]:
        if node.op not in BUILTIN_OPERATOR_CODES or node.op == "CUSTOM":
            return False, f"custom op {node.op}: LiteRT has no builtin kernel for it"
        if self.ops is not None and node.op not in self.ops:
            return False, f"{node.op} is not in this delegate's op list"
        for info in [*node.inputs, *node.outputs]:
            if info is not None and not info.is_const and info.type not in _BOUNDARY_TYPES:
                return False, f"tensor '{info.name}' has type {info.type}"
        return True, "LiteRT reference kernel" if self.reference else "LiteRT kernel (XNNPACK where it applies)"

    # Subclasses attach external delegates here.
    def _litert_delegates(self) -> list:
        return []

    def prepare_partition(self, model: Model, subgraph: int, node_indices, inputs, outputs, nodes) -> Run:
        from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
        from ai_edge_litert.interpreter import OpResolverType

        from edge_sdk.model import write_model

        where = f"{self.name} partition (subgraph {subgraph} nodes {node_indices[0]}..{node_indices[-1]})"
        part = slice_partition(model, subgraph, node_indices, inputs, outputs, nodes)
        data = write_model(part)
        kwargs = {"num_threads": self.num_threads}
        if self.reference:
            kwargs["experimental_op_resolver_type"] = OpResolverType.BUILTIN_REF
        ext = self._litert_delegates()
        if ext:
            kwargs["experimental_delegates"] = ext
        try:
            interp = LiteRTInterpreter(model_content=data, **kwargs)
            interp.allocate_tensors()
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"{where}: LiteRT refused it: {str(exc).strip()}") from None
        in_idx = [d["index"] for d in interp.get_input_details()]
        out_views = [interp.tensor(d["index"]) for d in interp.get_output_details()]
        set_tensor, invoke = interp.set_tensor, interp.invoke

        def run(ins: list, outs: list) -> None:
            for i, x in zip(in_idx, ins):
                set_tensor(i, x)
            invoke()
            for view, out in zip(out_views, outs):
                np.copyto(out, view())

        run.litert_interpreter = interp  # for tests and debugging
        run.model_bytes = data
        return run


class ExternalDelegate(LiteRTDelegate):
    """A TFLite external delegate library (``tflite_plugin_create_delegate``; Edge TPU's libedgetpu, Arm NN's
    delegate, ...) attached to LiteRT for each partition, with ``options`` (str -> str).

    Planning: it offers to take every node LiteRT can run (``ops`` narrows that); the library decides at
    allocate which of them it really runs, LiteRT's CPU kernels run the rest of the partition. Executing
    needs the library (and its device): ``allocate_tensors`` raises ``DeviceError`` naming what is missing.
    One delegate instance is loaded per partition.
    """

    def __init__(self, library: str, options: dict | None = None, ops: Sequence[str] | None = None,
                 name: str = "external", reference: bool = False, num_threads: int = 1,
                 device_hint: str = ""):
        super().__init__(reference=reference, num_threads=num_threads, ops=ops, name=name)
        self.library = str(library)
        self.options = {str(k): str(v) for k, v in (options or {}).items()}
        self.device_hint = device_hint

    def check_available(self) -> None:
        lib = self.library
        if os.sep in lib and not os.path.exists(lib):
            raise DeviceError(f"{self.name} delegate: library {lib} not found")
        try:
            handle = ctypes.CDLL(lib)
        except OSError as exc:
            raise DeviceError(f"{self.name} delegate: cannot load library {lib}: {exc}") from None
        if not hasattr(handle, "tflite_plugin_create_delegate"):
            raise DeviceError(
                f"{self.name} delegate: {lib} is not a TFLite external delegate (no tflite_plugin_create_delegate)"
            )

    def _litert_delegates(self) -> list:
        from ai_edge_litert.interpreter import load_delegate

        self.check_available()
        try:
            return [load_delegate(self.library, self.options)]
        except (ValueError, OSError, RuntimeError) as exc:
            hint = f" ({self.device_hint})" if self.device_hint else ""
            raise DeviceError(
                f"{self.name} delegate: {self.library} failed to create a delegate with options {self.options}"
                f"{hint}: {'; '.join(str(exc).split(chr(10))).strip() or 'no message'}"
            ) from None

    def __repr__(self) -> str:
        return f"ExternalDelegate({self.library!r}, options={self.options!r}, name={self.name!r})"
