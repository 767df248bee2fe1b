"""DYNAMIC_UPDATE_SLICE, as LiteRT's reference dynamic_update_slice.cc (TFLM has none).

Inputs: operand (any rank), update (same rank and type, each dim <= the operand's), start indices INT32 / INT64
(operand rank,), constant or computed at run time. The output is the operand with the update written at the start
indices, each clamped to [0, operand dim - update dim] (XLA's rule). Values are copied: a quantized update must
carry the operand's quantization.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Eval, Node

_TYPES = ("FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL")


def prepare_dynamic_update_slice(node: Node) -> Eval:
    node.expect_counts(3, 1)
    operand, update, start = (node.input(i) for i in range(3))
    out = node.outputs[0]
    node.expect_types(operand, _TYPES, "operand")
    node.expect_types(update, (operand.type,), "update")
    node.expect_types(out, (operand.type,), "output")
    node.expect_types(start, ("INT32", "INT64"), "start indices")
    rank = len(operand.shape)
    node.expect(len(update.shape) == rank, f"update {update.shape} must have the operand's rank {rank}")
    node.expect(all(u <= o for u, o in zip(update.shape, operand.shape)),
                f"update {update.shape} is larger than the operand {operand.shape}")
    node.expect(tuple(start.shape) == (rank,), f"start indices {start.shape} must be ({rank},)")
    if operand.quantized or update.quantized or out.quantized:
        same = all(t.quantized for t in (operand, update, out)) and len({(float(np.float32(t.s)), t.zp)
                                                                          for t in (operand, update, out)}) == 1
        if not same:
            raise node.unsupported("operand, update and output quantization differ (the op copies values)")
    node.set_output_shape(0, operand.shape)
    high = np.array(operand.shape, np.int64) - np.array(update.shape, np.int64)  # the largest start per dim
    sizes = update.shape

    def run(inputs, outputs):
        at = np.clip(inputs[2].astype(np.int64), 0, high)
        outputs[0][...] = inputs[0]
        outputs[0][tuple(slice(int(a), int(a) + n) for a, n in zip(at, sizes))] = inputs[1]

    return run
