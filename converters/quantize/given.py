"""Activation ranges the source gives: a quantized ONNX (QDQ) graph imports as its float graph, and each QDQ pair's
range stays on the float tensor it stood on as ``Tensor.quantization`` with an EMPTY scale / zero point and
``min`` / ``max`` (``converters.import_onnx``'s docstring: the quantizer's side). Such a range replaces the observed
one: int8's ``scale = (max - min) / 255``, ``zero_point = -128 - round(min / scale)`` are then the source's own
parameters again (a uint8 source's zero point minus 128). Weights a source gave as int8 PER TENSOR
(``given_weight_scales``) keep its integers and scale (``rules.weighted``); per-channel ones are what per-channel
max-abs gives again. Only the tensors without one are calibrated, and a source
whose every activation has one (directly, or through an op whose output keeps its input's or a fixed
quantization) needs no calibration data. The quantized model's float tensors do not keep these ranges.

These ranges live only in the in-memory ``Model`` (``edge_sdk.model.reader`` drops a scale-less quantization):
``converters.convert`` hands the quantizer the optimized Model itself."""

from __future__ import annotations

import numpy as np

from converters.quantize.builder import is_const, is_float
from converters.quantize.scales import round_away
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table


def has_given_range(q) -> bool:
    """A float tensor's quantization that only records a range (no scale): the source's fake-quant range."""
    return (q is not None and np.asarray(q.scale).size == 0 and q.min is not None and q.max is not None
            and np.asarray(q.min).size == 1 and np.asarray(q.max).size == 1)


class GivenRange(tuple):
    """(min, max) the source gave, and ``int8``: the int8 (scale, zero point) whose range it is exactly, or None.
    (max - min) / 255 in float64 rounds to float32 one ulp away from the source's scale about half the time, and
    neighbouring float32 scales can give the same float32 min and max: the importer's record of the pair
    (``model.given_quantization``, matched by min and max) says which; without one, the float32 neighbour that
    gives min and max back as the importer computed them (``float32(scale * (qmin - zero_point))``)."""

    int8: tuple[float, int] | None

    def __new__(cls, lo: float, hi: float, params: tuple[float, int] | None = None):
        self = super().__new__(cls, (lo, hi))
        self.int8 = params if params is not None else _exact_int8(lo, hi)
        return self


def _recorded_params(model: Model) -> dict:
    """(float32 min, float32 max) -> the int8 (scale, zero point) of the source's activation pairs with that range
    (a uint8 pair's zero point minus 128); a range two pairs give with different parameters is left out."""
    found: dict = {}
    for e in (getattr(model, "given_quantization", None) or {}).values():
        if e.get("kind") != "activation" or np.asarray(e["scale"]).size != 1:
            continue
        qmin = -128 if str(e.get("dtype")) == "int8" else 0
        key = (np.float32(np.asarray(e["min"]).reshape(-1)[0]), np.float32(np.asarray(e["max"]).reshape(-1)[0]))
        params = (float(np.asarray(e["scale"], np.float32).reshape(-1)[0]),
                  int(np.asarray(e["zero_point"]).reshape(-1)[0]) - (qmin + 128))
        found[key] = params if found.get(key, params) == params else None
    return found


def _exact_int8(lo: float, hi: float) -> tuple[float, int] | None:
    if not hi > lo or not lo <= 0.0 <= hi:
        return None
    s0 = np.float32((hi - lo) / 255.0)
    below, above = [s0], [s0]
    for _ in range(3):
        below.append(np.nextafter(below[-1], np.float32(0)))
        above.append(np.nextafter(above[-1], np.float32(np.inf)))
    for s in [s0] + [c for pair in zip(below[1:], above[1:]) for c in pair]:
        zp = int(round_away(-128.0 - lo / float(s)))
        if -128 <= zp <= 127 and np.float32(float(s) * (-128 - zp)) == np.float32(lo) \
                and np.float32(float(s) * (127 - zp)) == np.float32(hi):
            return float(s), zp
    return None


def given_ranges(model: Model) -> dict[int, GivenRange]:
    """Tensor index -> (min, max) for each FLOAT32 activation (not a constant) whose range the source gave."""
    sg = model.subgraphs[0]
    recorded = _recorded_params(model)
    ranges = {}
    for t, tensor in enumerate(sg.tensors):
        if tensor.type == "FLOAT32" and has_given_range(tensor.quantization) and not is_const(model, t):
            lo = np.float32(np.asarray(tensor.quantization.min).reshape(-1)[0])
            hi = np.float32(np.asarray(tensor.quantization.max).reshape(-1)[0])
            ranges[t] = GivenRange(float(lo), float(hi), recorded.get((lo, hi)))
    return ranges


def given_weight_scales(model: Model) -> list[float]:
    """The per-tensor int8 weight scales a quantized source gave (onnxruntime's quantize_static default,
    per_channel=False: symmetric, zero point 0), from the importer's records (``model.given_quantization``)."""
    found = set()
    for e in (getattr(model, "given_quantization", None) or {}).values():
        if e.get("kind") != "weight" or str(e.get("dtype")) != "int8" or np.asarray(e["scale"]).size != 1:
            continue
        s = float(np.asarray(e["scale"], np.float32).reshape(-1)[0])
        if s > 0 and not np.asarray(e["zero_point"]).any():
            found.add(s)
    return sorted(found)


def source_weight_scale(w: np.ndarray, scales: list[float]) -> float | None:
    """The given per-tensor scale whose integers ``w`` is (the importer's float weights are float32(q * s), their
    layout rearranged for TFLite): each w / s within 1e-3 of an integer in [-127, 127]. None when none fits (a
    weight the source gave per channel, or not at all): per-channel max-abs scales then."""
    w = np.asarray(w, np.float64).reshape(-1)
    if not w.size or not np.any(w):
        return None
    for s in scales:
        q = w / s
        r = np.round(q)
        if np.abs(r).max() <= 127 and np.abs(q - r).max() <= 1e-3:
            return s
    return None


def _fixed_range(row, act: str) -> tuple[float, float] | None:
    for a, scale, zp in row.quant_fixed:
        if a == act:
            qmin, qmax = (-128, 127) if act == "INT8" else (-32768, 32767)
            return scale * (qmin - zp), scale * (qmax - zp)
    return None


def covered_ranges(model: Model, given: dict, act: str) -> dict[int, tuple[float, float]]:
    """The given ranges and the ones they imply without data: an op whose output keeps input N's quantization
    ("same:N": transposes, reshapes, pools) passes its input's range on; a "fixed" op's output has the row's
    fixed range; a "shared" op (CONCATENATION, ...) the span of its inputs' ranges when every one is known."""
    sg = model.subgraphs[0]
    ranges = dict(given)
    for op in sg.operators:
        row = op_table.row(model.op_name(op))
        outs = [t for t in op.outputs if t >= 0 and is_float(model, t) and t not in ranges]
        if not outs:
            continue
        implied = None
        if row.quant.startswith("same:"):
            n = int(row.quant.split(":")[1])
            src = op.inputs[n] if n < len(op.inputs) else -1
            implied = ranges.get(src)
        elif row.quant == "fixed":
            implied = _fixed_range(row, act)
        elif row.quant == "shared":
            spans = []
            for t in op.inputs:
                if t < 0 or not is_float(model, t):
                    continue
                if is_const(model, t):
                    d = np.asarray(model.tensor_data(0, t))
                    spans.append((float(d.min()), float(d.max())) if d.size else (0.0, 0.0))
                else:
                    spans.append(ranges.get(t))
            if spans and None not in spans:
                implied = (min(s[0] for s in spans), max(s[1] for s in spans))
        if implied is not None:
            for t in outs:
                ranges[t] = implied
    return ranges


def uncovered(model: Model, ranges: dict, excluded: set[int]) -> list[int]:
    """The float activations a quantized op (or the model's I/O) reads or writes that have no range: what
    calibration data must give. Tensors only excluded ops touch need none."""
    sg = model.subgraphs[0]
    needed = {t for t in list(sg.inputs) + list(sg.outputs) if is_float(model, t)}
    for i, op in enumerate(sg.operators):
        if i in excluded:
            continue
        needed |= {t for t in list(op.inputs) + list(op.outputs)
                   if t >= 0 and is_float(model, t) and not is_const(model, t) and not sg.tensors[t].is_variable}
    return sorted(t for t in needed if t not in ranges)


def clear_given_ranges(qmodel: Model) -> Model:
    """The quantized model's float tensors (kept float, or copied) without the source's range-only
    quantization: a float tensor of the result is plain float."""
    for sg in qmodel.subgraphs:
        for tensor in sg.tensors:
            if tensor.type in ("FLOAT32", "FLOAT16") and has_given_range(tensor.quantization):
                tensor.quantization = None
    return qmodel


def synthetic_samples(model: Model, ranges: dict, count: int, seed: int = 0) -> list[list[np.ndarray]]:
    """Samples for the accuracy guard when no data is given: each float input uniform over its given range
    (standard normal without one), integer inputs zero, BOOL inputs false."""
    from edge_sdk.model.types import numpy_dtype

    sg = model.subgraphs[0]
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        sample = []
        for t in sg.inputs:
            tensor = sg.tensors[t]
            shape = tuple(int(d) for d in tensor.shape)
            if tensor.type == "FLOAT32":
                lo, hi = ranges.get(t, (None, None))
                x = rng.uniform(lo, hi, shape) if lo is not None and hi > lo else rng.standard_normal(shape)
                sample.append(x.astype(np.float32))
            else:
                sample.append(np.zeros(shape, numpy_dtype(tensor.type)))
        samples.append(sample)
    return samples
