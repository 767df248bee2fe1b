"""Dead-code and identity removal.

Identities removed (the reader of the output reads the input instead): RESHAPE / SQUEEZE / EXPAND_DIMS to
the same shape, TRANSPOSE with the identity permutation, CAST to the same type, CONCATENATION / PACK-free
single-input CONCATENATION, PAD / PADV2 with all-zero paddings, SLICE / STRIDED_SLICE that keep the whole
tensor (same shape, all begins zero, unit strides), QUANTIZE to the same quantization, and RESHAPE chains
(a RESHAPE of a RESHAPE reads the first one's input). Then dead operators, tensors and buffers go
(``converters.graph.eliminate_dead_code``).
"""

from __future__ import annotations

import numpy as np

from converters import graph as G
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table


def _family(name: str) -> str:
    """The op table row's ``family``: "reshape" (RESHAPE, SQUEEZE, EXPAND_DIMS), "pad" (PAD and kin), ..."""
    return op_table.row(name).family


def _same_quant(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return (np.array_equal(a.scale, b.scale) and np.array_equal(a.zero_point, b.zero_point)
            and a.quantized_dimension == b.quantized_dimension)


def is_identity(model: Model, index: int, sg: int = 0) -> bool:
    """Whether operator ``index`` copies its first input to its single output unchanged (its op-table row's
    ``identity`` rule, with the same shape and type)."""
    sub = model.subgraphs[sg]
    op = sub.operators[index]
    rule = op_table.row(G.op_name(model, op)).identity
    if not rule or len(op.outputs) != 1 or not op.inputs or op.inputs[0] < 0:
        return False
    src, dst = sub.tensors[op.inputs[0]], sub.tensors[op.outputs[0]]
    if src.shape != dst.shape or src.type != dst.type:
        return False
    const = lambda k: G.constant_value(model, op.inputs[k], sg) if len(op.inputs) > k else None  # noqa: E731
    if rule == "always":
        return True
    if rule == "perm":
        perm = const(1)
        return perm is not None and list(perm.reshape(-1)) == list(range(perm.size))
    if rule == "one_input":
        return len(op.inputs) == 1
    if rule == "zero_pads":
        pads = const(1)
        return pads is not None and not pads.any()
    if rule in ("slice", "strided_slice"):
        begin = const(1)
        return begin is not None and not begin.any() and (rule == "slice" or _unit_strides(model, op, sg))
    if rule == "same_quant":
        return _same_quant(src.quantization, dst.quantization)
    return False


def _unit_strides(model: Model, op, sg: int) -> bool:
    """A STRIDED_SLICE with unit strides and no mask or offset option (its begins checked already)."""
    strides = G.constant_value(model, op.inputs[3], sg) if len(op.inputs) > 3 else None
    opts = G.options(model, op)
    return strides is not None and bool((strides == 1).all()) and not (
        opts.get("shrink_axis_mask") or opts.get("new_axis_mask") or opts.get("ellipsis_mask") or opts.get("offset"))


def merge_reshapes(model: Model, sg: int = 0) -> int:
    """RESHAPE(RESHAPE(x)) -> RESHAPE(x); also SQUEEZE/EXPAND_DIMS chains become one RESHAPE."""
    merged = 0
    sub = model.subgraphs[sg]
    prod = G.producers(model, sg)
    for i, op in enumerate(sub.operators):
        if _family(G.op_name(model, op)) != "reshape" or not op.inputs:
            continue
        src = op.inputs[0]
        if src not in prod:
            continue
        first = sub.operators[prod[src]]
        if _family(G.op_name(model, first)) != "reshape":
            continue
        out = op.outputs[0]
        shape = G.add_constant(model, sub.tensors[out].name + "_shape",
                               np.array(sub.tensors[out].shape, np.int32), sg=sg)
        G.set_op(model, i, "RESHAPE", [first.inputs[0], shape], [out],
                 {"new_shape": list(sub.tensors[out].shape)}, sg=sg)
        merged += 1
    return merged


def apply(model: Model, sg: int = 0) -> int:
    """Remove identities and merge reshape chains in subgraph ``sg``; returns the number of rewrites."""
    changes = merge_reshapes(model, sg)
    i = 0
    while i < len(model.subgraphs[sg].operators):
        if is_identity(model, i, sg) and G.bypass(model, i, sg):
            changes += 1
            continue
        i += 1
    return changes


def run(model: Model) -> Model:
    G.apply_everywhere(model, apply)
    return model
