"""BatchNorm folding: per-output-channel MUL / ADD / SUB by a constant after a convolution or fully-connected
layer goes into that layer's weights and bias.

The ONNX importer writes BatchNormalization as MUL(scale) then ADD(shift), per channel; once the layout pass
has moved its transposes out of the way the pattern is  W-op -> MUL(c) -> ADD(d)  on the channels-last
tensor, and this pass rewrites  W-op(x; W, b) * c + d  as  W-op(x; W * c, b * c + d)  (each step on its
own, so a lone bias ADD also folds: FULLY_CONNECTED + ADD(bias) -> FULLY_CONNECTED with that bias).

Folded only when: the layer's weights are float32 constants and it has no fused activation; its output has
one reader (the MUL/ADD/SUB) and is not a subgraph output; the constant is float32 and per output channel
(one value, or a vector along the last axis with every other dimension 1) and does not broadcast the
layer's output to a larger shape. New weight/bias tensors are created (a shared weight stays intact).
"""

from __future__ import annotations

import numpy as np

from converters import graph as G
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table


def _per_channel(value: np.ndarray, channels: int, out_rank: int) -> np.ndarray | None:
    """The constant as a [channels] vector when it is per-channel along the last axis, else None."""
    if value.ndim > out_rank:
        return None
    if value.size == 1:
        return np.full(channels, value.reshape(-1)[0], np.float32)
    if value.ndim >= 1 and value.shape[-1] == channels and value.size == channels:
        return value.reshape(channels).astype(np.float32)
    return None


def fold(model: Model, sg: int = 0, layers=None) -> int:
    """Fold every MUL/ADD/SUB-by-constant (the op table rows with an ``affine`` rule) that follows a layer in
    ``layers`` (default: graph.WEIGHTED_LAYERS)."""
    layers = G.WEIGHTED_LAYERS if layers is None else {k: G.WEIGHTED_LAYERS[k] for k in layers}
    sub = model.subgraphs[sg]
    folded = 0
    i = 0
    while i < len(sub.operators):
        op = sub.operators[i]
        name = G.op_name(model, op)
        affine = op_table.row(name).affine  # "scale" (MUL), "add" (ADD), "subtract" (SUB)
        if not affine or len(op.inputs) != 2:
            i += 1
            continue
        if G.options(model, op).get("fused_activation_function", "NONE") != "NONE":
            # the activation applies after the arithmetic; it can move onto the layer along with it
            act = G.options(model, op)["fused_activation_function"]
        else:
            act = "NONE"
        a, b = op.inputs
        if G.is_constant(model, a, sg) and affine != "subtract":
            a, b = b, a
        c = G.constant_value(model, b, sg)
        prod = G.producers(model, sg)
        j = prod.get(a)
        if c is None or c.dtype != np.float32 or j is None or G.sole_consumer(model, a, sg) != i:
            i += 1
            continue
        layer = sub.operators[j]
        lname = G.op_name(model, layer)
        if lname not in layers or len(layer.outputs) != 1:
            i += 1
            continue
        w_in, b_in, axis = layers[lname]
        lopts = G.options(model, layer)
        if lopts.get("fused_activation_function", "NONE") != "NONE":
            i += 1
            continue
        weights = G.constant_value(model, layer.inputs[w_in], sg) if len(layer.inputs) > w_in else None
        out_t = sub.tensors[a]
        if weights is None or weights.dtype != np.float32 or sub.tensors[op.outputs[0]].shape != out_t.shape:
            i += 1
            continue
        channels = weights.shape[axis]
        if not out_t.shape or out_t.shape[-1] != channels:
            i += 1
            continue
        vec = _per_channel(c, channels, len(out_t.shape))
        bias_t = layer.inputs[b_in] if len(layer.inputs) > b_in else -1
        bias = np.zeros(channels, np.float32) if bias_t < 0 else G.constant_value(model, bias_t, sg)
        if vec is None or bias is None or bias.dtype != np.float32 or bias.size != channels:
            i += 1
            continue
        bias = bias.reshape(channels)
        if affine == "scale":
            shape = [1] * weights.ndim
            shape[axis] = channels
            weights = weights * vec.reshape(shape)
            bias = bias * vec
            w_new = G.add_constant(model, sub.tensors[layer.inputs[w_in]].name + "_folded", weights, sg=sg)
            inputs = list(layer.inputs)
            inputs[w_in] = w_new
        else:
            bias = bias + vec if affine == "add" else bias - vec
            inputs = list(layer.inputs)
        b_new = G.add_constant(model, f"{sub.tensors[op.outputs[0]].name}_bias", bias.astype(np.float32), sg=sg)
        while len(inputs) <= b_in:
            inputs.append(-1)
        inputs[b_in] = b_new
        layer.inputs = inputs
        layer.outputs = [op.outputs[0]]
        lopts["fused_activation_function"] = act
        layer.options = lopts
        G.remove_ops(model, [i], sg)
        folded += 1
        i = j
    return folded


def apply(model: Model, sg: int = 0) -> int:
    return fold(model, sg)


def run(model: Model) -> Model:
    G.apply_everywhere(model, apply)
    return model
