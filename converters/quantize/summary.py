"""The quantization report's tables and notes that read the finished integer graph: what each float activation
became (observed and clipped range, type, scale, zero point), the per-channel weights, and what the graph had to do
that the user should know (an INT16 model output, a saturated SELECT constant, a comparison left in float32)."""

from __future__ import annotations

from converters.quantize.builder import QuantGraph
from converters.quantize.calibrate import Calibration
from edge_sdk.model.types import Model


def int16_output_notes(model: Model, g: QuantGraph, io: str, w16: set[int]) -> list[str]:
    """A model output left INT16 by an op widened to int16x8 (integer I/O in an int8 model)."""
    sg = model.subgraphs[0]
    notes = []
    if io != "float32" and g.act == "INT8" and w16:
        produced = {t: i for i, op in enumerate(sg.operators) for t in op.outputs if t >= 0}
        for t in sg.outputs:
            if produced.get(t) in w16 and g.tensors[g.io_map[t]].type == "INT16":
                notes.append(f"output '{sg.tensors[t].name}' is INT16: its op was widened to int16x8 "
                             "(dequantize it with its own scale)")
    return notes


def float_output_notes(model: Model, g: QuantGraph, io: str) -> list[str]:
    """A model output left FLOAT32 with integer I/O: the guard widened its op to float32."""
    sg = model.subgraphs[0]
    if io == "float32":
        return []
    return [f"output '{sg.tensors[t].name}' is FLOAT32: its op was widened to float32" for t in sg.outputs
            if sg.tensors[t].type == "FLOAT32" and g.tensors[g.io_map[t]].type == "FLOAT32"]


def rule_notes(model: Model, g: QuantGraph) -> list[str]:
    """What the rules did that changes values: a SELECT's constant branch saturated, a comparison in float32."""
    sg = model.subgraphs[0]
    notes = []
    for out_t, const_t, cmin, cmax in g.select_saturated:
        scale, zp = g.params_of(g.qt[out_t])
        notes.append(
            f"'{sg.tensors[out_t].name}' (SELECT): the constant branch '{sg.tensors[const_t].name}' ({cmin:g}..{cmax:g}) "
            "lies far outside the "
            f"run-time values and saturates to {scale * (g.qmin - zp):g}..{scale * (g.qmax - zp):g} in {g.act.lower()} "
            "(a mask fill: a following SOFTMAX still gives those elements almost no weight)")
    for name in g.float_comparisons:
        notes.append(f"comparison '{name}' reads float32 (dequantized) inputs: an int8 input scale would "
                     "reach 1, and TFLM's int8 comparison needs scales below 1")
    return notes


def tensor_table(model: Model, g: QuantGraph, cal: Calibration) -> list[dict]:
    sg = model.subgraphs[0]
    tensors = []
    for t in cal.float_tensors:
        n = g.qt.get(t)
        entry = {"name": sg.tensors[t].name, "observed": [cal.stats[t].min, cal.stats[t].max],
                 "range": list(cal.ranges[t]), "given": t in cal.given}  # given: the source's range (QDQ)
        if n is not None and g.tensors[n].quantization is not None:
            q = g.tensors[n].quantization
            entry.update(type=g.tensors[n].type, scale=float(q.scale[0]), zero_point=int(q.zero_point[0]))
        else:
            entry.update(type="FLOAT32")
        tensors.append(entry)
    return tensors


def weight_table(qmodel: Model) -> list[dict]:
    return [
        {"name": t.name, "type": t.type, "channels": int(t.quantization.scale.size),
         "quantized_dimension": int(t.quantization.quantized_dimension),
         "scale_min": float(t.quantization.scale.min()), "scale_max": float(t.quantization.scale.max())}
        for t in qmodel.subgraphs[0].tensors
        if t.buffer and t.quantization is not None and t.type in ("INT8",) and t.quantization.per_channel
    ]
