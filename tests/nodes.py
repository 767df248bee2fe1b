"""Hand-built kernel nodes for tests that call prepare/eval directly (no model, no interpreter).

``tensor_info`` turns a ``tests.oprunner.T`` spec into the ``TensorInfo`` a kernel's prepare sees;
``make_node`` builds the ``Node`` of one op from such specs (inputs numbered from 0, outputs from 100).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Node, TensorInfo
from edge_sdk.model.types import numpy_dtype
from tests.oprunner import TensorSpec


def tensor_info(i: int, spec: TensorSpec | None) -> TensorInfo | None:
    """Tensor ``i`` as prepare sees it: quantization as arrays (a missing zero point is 0), constant data in
    the tensor's dtype and shape. None stays None (an omitted optional input)."""
    if spec is None:
        return None
    scale = zp = None
    if spec.scale is not None:
        scale = np.atleast_1d(np.asarray(spec.scale, np.float32))
        zp = np.atleast_1d(np.asarray(0 if spec.zero_point is None else spec.zero_point, np.int64))
    dtype = numpy_dtype(spec.type)
    data = None if spec.data is None else np.asarray(spec.data, dtype).reshape(spec.shape)
    return TensorInfo(i, spec.name or f"t{i}", spec.type, dtype, tuple(spec.shape), scale, zp,
                      spec.quantized_dimension, data, spec.is_variable)


def make_node(op: str, inputs, outputs, options=None, version: int = 1) -> Node:
    """The node of a one-op graph with these input and output specs."""
    return Node(0, 0, op, version, dict(options or {}), None, [tensor_info(i, s) for i, s in enumerate(inputs)],
                [tensor_info(100 + i, s) for i, s in enumerate(outputs)])


def random_full_range(rng: np.random.Generator, shape, type_: str) -> np.ndarray:
    """Values over the whole range of an integer type (standard normal for a float type)."""
    dt = numpy_dtype(type_)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dt)
