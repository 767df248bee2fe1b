"""Delegates: backends that take partitions of a graph away from edge-sdk's own kernels.

    interp = Interpreter(model_path="net.tflite", delegates=["litert"])     # or Delegate objects
    interp.allocate_tensors()
    for backend, nodes, boundary in interp.partitions():
        print(backend, nodes, boundary.inputs, boundary.outputs)

Names ``resolve`` understands:

* ``"litert"`` — ``LiteRTDelegate()``: ai-edge-litert's builtin kernels (XNNPACK); ``"litert-ref"`` its
  reference kernels (``LiteRTDelegate(reference=True)``).
* ``"external:/path/lib.so"`` — ``ExternalDelegate("/path/lib.so")`` (pass an ``ExternalDelegate`` object for
  options).
* ``"nnapi"``, ``"edgetpu"`` — planned from their device profiles; execute where the device is.

See ``edge_sdk.runtime.delegates.base`` for the interface and the partitioning rule.
"""

from __future__ import annotations

from edge_sdk.runtime.delegates.base import (
    CPU,
    Boundary,
    Delegate,
    Partition,
    assign_backends,
    cpu_only_reason,
    limit_runs,
    partition_nodes,
    plan_partitions,
)
from edge_sdk.runtime.delegates.litert import ExternalDelegate, LiteRTDelegate
from edge_sdk.runtime.delegates.profiled import EdgeTpuDelegate, NnapiDelegate, ProfileDelegate
from edge_sdk.runtime.delegates.slicing import slice_partition
from edge_sdk.errors import ModelError

NAMES = ("litert", "litert-ref", "external:<path>", "nnapi", "edgetpu")


def resolve(spec) -> Delegate:
    """A ``Delegate`` from a name (see the module docstring) or a ``Delegate`` object (returned as is)."""
    if isinstance(spec, Delegate):
        return spec
    if not isinstance(spec, str):
        raise ModelError(f"a delegate is a name ({', '.join(NAMES)}) or a Delegate object, not {type(spec).__name__}")
    if spec == "litert":
        return LiteRTDelegate()
    if spec == "litert-ref":
        return LiteRTDelegate(reference=True, name="litert-ref")
    if spec == "nnapi":
        return NnapiDelegate()
    if spec == "edgetpu":
        return EdgeTpuDelegate()
    if spec.startswith("external:"):
        path = spec[len("external:"):]
        if not path:
            raise ModelError("delegate 'external:' needs a library path: 'external:/path/lib.so'")
        return ExternalDelegate(path)
    raise ModelError(f"unknown delegate {spec!r}; known: {', '.join(NAMES)}")


def resolve_all(specs) -> list[Delegate]:
    delegates = [resolve(s) for s in (specs or [])]
    names = [d.name for d in delegates]
    for n in names:
        if n == CPU:
            raise ModelError("a delegate may not be named 'cpu' (the name of the interpreter's own kernels)")
        if names.count(n) > 1:
            raise ModelError(f"two delegates are named {n!r}: give one a different name= so partitions can tell them apart")
    return delegates


__all__ = [
    "CPU",
    "NAMES",
    "Boundary",
    "Delegate",
    "EdgeTpuDelegate",
    "ExternalDelegate",
    "LiteRTDelegate",
    "NnapiDelegate",
    "Partition",
    "ProfileDelegate",
    "assign_backends",
    "cpu_only_reason",
    "limit_runs",
    "partition_nodes",
    "plan_partitions",
    "resolve",
    "resolve_all",
    "slice_partition",
]
