"""Gemm / MatMul canonicalization.

- BATCH_MATMUL(a, B) with a constant float32 B that is 2-D (or has only leading 1 dimensions, and no more
  dimensions than ``a``) and adj_x false becomes FULLY_CONNECTED(a, W) with W = B transposed to
  [out, in] (B itself when adj_y), keep_num_dims true: the same output shape, and TFLM's faster kernel.
- FULLY_CONNECTED followed by ADD / SUB of a per-output constant takes it as its bias
  (``converters.passes.batchnorm.fold`` restricted to FULLY_CONNECTED).
"""

from __future__ import annotations

from converters import graph as G
from converters.passes import batchnorm
from edge_sdk.model.types import Model


def batch_matmul_to_fc(model: Model, sg: int = 0) -> int:
    sub = model.subgraphs[sg]
    changed = 0
    for i, op in enumerate(sub.operators):
        if G.op_name(model, op) != "BATCH_MATMUL" or len(op.inputs) != 2 or len(op.outputs) != 1:
            continue
        a, b = op.inputs
        value = G.constant_value(model, b, sg)
        opts = G.options(model, op)
        if value is None or value.dtype.name != "float32" or opts.get("adj_x") or value.ndim < 2:
            continue
        if any(d != 1 for d in value.shape[:-2]) or value.ndim > len(sub.tensors[a].shape):
            continue
        if sub.tensors[a].type != "FLOAT32":
            continue
        mat = value.reshape(value.shape[-2:])
        weights = mat if opts.get("adj_y") else mat.T
        out = op.outputs[0]
        if sub.tensors[out].shape != tuple(sub.tensors[a].shape[:-1]) + (weights.shape[0],):
            continue
        w = G.add_constant(model, sub.tensors[b].name + "_fc", weights.copy(), sg=sg)
        G.set_op(model, i, "FULLY_CONNECTED", [a, w, -1], [out], {"keep_num_dims": True}, sg=sg)
        changed += 1
    return changed


def apply(model: Model, sg: int = 0) -> int:
    return batch_matmul_to_fc(model, sg) + batchnorm.fold(model, sg, layers=("FULLY_CONNECTED",))


def run(model: Model) -> Model:
    G.apply_everywhere(model, apply)
    return model
