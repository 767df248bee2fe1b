"""What an op's int8 weights alone cost the outputs: the float model with only that op's int8-stored constants rounded
to int8 (weights per output channel, symmetric over [-127, 127]; PRELU's alpha with one scale, as the quantizer
stores them), every activation float, run on the guard's samples. int16x8 keeps those constants int8, so an op whose
weights lose the outputs is not helped by int16 activations: only float32 keeps it (issue 24, palm_detection_lite on
16 smooth images: its conv weights in int8 alone bring the regressor output to 10 dB -- one 1x1 conv's alone to 14
dB --, its PRELU alphas alone to 15 dB, while every int8 op measured alone reaches 26-35 dB and an all-int16x8 model
stays at 10 dB). The widening search ranks the ops by this noise to choose
which go float32 (``widen._weights_first``)."""

from __future__ import annotations

import copy

import numpy as np

from converters.quantize.builder import is_const, is_float
from converters.quantize.calibrate import Runner
from converters.quantize.rules import is_weighted
from converters.quantize.scales import affine, quantize_array, weight_scales
from edge_sdk.model.types import Buffer, Model
from edge_sdk.runtime import op_table


RANKING_SAMPLES = 2  # the guard's first samples the ranking runs on: one float model run per op and sample (palm:
# ~0.45 s to prepare and ~0.23 s a run in edge-sdk's interpreter, 79 ops); the search judges each build on them all


def int8_constants(model: Model, i: int) -> list[tuple[int, int | None]]:
    """(input position, channel axis or None for one scale) of op i's float constants that stay int8 when the op
    runs int16x8: a weighted row's weights (per output channel) and the row's ``int16_int8_inputs`` (PRELU's alpha,
    one scale)."""
    op = model.subgraphs[0].operators[i]
    row = op_table.row(model.op_name(op))
    found = [(row.weights[0], row.weights[2])] if is_weighted(row) else []
    found += [(k, None) for k in row.int16_int8_inputs]
    return [(k, axis) for k, axis in found if k < len(op.inputs) and op.inputs[k] >= 0
            and is_float(model, op.inputs[k]) and is_const(model, op.inputs[k])]


def int8_rounded(w: np.ndarray, axis: int | None) -> np.ndarray:
    """``w`` rounded to int8 steps and back to float32 by the quantizer's own scales: per channel along ``axis``
    symmetric over [-127, 127] (``weight_scales``), as weights are stored; ``axis`` None: one asymmetric scale and
    zero point over [min(w, 0), max(w, 0)] (``affine``), as other constants are."""
    if axis is None:
        scale, zp = affine(float(w.min()), float(w.max()), -128, 127, symmetric=False)
        q = quantize_array(w, scale, zp, -128, 127, np.int32)
        return ((q - zp) * np.float64(scale)).astype(np.float32)
    scales = weight_scales(w, axis, None, 1.0, 0).astype(np.float64)
    q = quantize_array(w, scales, 0, -127, 127, np.int32, axis)
    shape = [1] * w.ndim
    shape[axis] = scales.size
    return (q * scales.reshape(shape)).astype(np.float32)


def _with_int8_constants(model: Model, i: int) -> Model:
    """A shallow copy of ``model`` whose op i reads its int8-stored constants rounded to int8 (other buffers
    shared)."""
    sg = model.subgraphs[0]
    op = sg.operators[i]
    out = copy.copy(model)
    out.buffers = list(model.buffers)
    for k, axis in int8_constants(model, i):
        tensor = sg.tensors[op.inputs[k]]
        w = np.frombuffer(model.buffers[tensor.buffer].data, np.float32).reshape(tensor.shape)
        out.buffers[tensor.buffer] = Buffer(int8_rounded(w, axis).tobytes())
    return out


def downstream(model: Model, i: int) -> tuple[Model, list[int]]:
    """A shallow copy of ``model`` holding only op i and the ops that read what it changes (in their order), its
    inputs the activations they read from outside that set (fed from the float model's run), its outputs the
    model outputs it reaches; and those inputs. Op i's weights change only these: the run is shorter (palm's
    late ops: a few ops of 119)."""
    sg = model.subgraphs[0]
    changed = set(sg.operators[i].outputs)
    ops, made = [], set()
    for j in range(i, len(sg.operators)):
        op = sg.operators[j]
        if j == i or any(t in changed for t in op.inputs):
            ops.append(op)
            changed |= {t for t in op.outputs if t >= 0}
            made |= {t for t in op.outputs if t >= 0}
    feeds = list(dict.fromkeys(t for op in ops for t in op.inputs
                               if t >= 0 and t not in made and not is_const(model, t)))
    out = copy.copy(model)
    out.subgraphs = [copy.copy(s) for s in model.subgraphs]
    part = out.subgraphs[0]
    part.operators, part.inputs = ops, feeds
    part.outputs = [t for t in sg.outputs if t in changed and is_float(model, t)]
    return out, feeds


def weight_noise(model: Model, ops, samples, float_run) -> dict[int, float]:
    """op index -> the worst output's relative noise power (error power over signal power, finite elements) when
    only that op's int8-stored constants (``int8_constants``) are int8, for the ops of ``ops`` that have such;
    ``float_run(sample)`` gives the float model's values (``CachedRunner``).
    One float run per op and sample of the ops downstream of it (``downstream``): the caller asks it only when int16
    activations fall short."""
    samples = [s for _, s in zip(range(RANKING_SAMPLES), samples)]
    sg = model.subgraphs[0]
    # copies: past its cache budget float_run gives views of the interpreter's memory, valid until its next run
    values = [{**dict(zip(sg.inputs, s)), **{t: np.array(v) for t, v in float_run(s).items()}} for s in samples]
    noise = {}
    for i in (i for i in ops if int8_constants(model, i)):
        part, _ = downstream(_with_int8_constants(model, i), i)
        outs = part.subgraphs[0].outputs
        run = Runner(part) if outs else None  # its values: views, read before the next run
        acc = {t: [0.0, 0.0] for t in outs}
        for v in values:
            got = run([v[t] for t in part.subgraphs[0].inputs]) if run is not None else {}
            for t in outs:
                f, q = np.asarray(v[t], np.float64).reshape(-1), got[t].astype(np.float64).reshape(-1)
                ok = np.isfinite(f) & np.isfinite(q)
                d = f[ok] - q[ok]
                acc[t][0] += float(f[ok] @ f[ok])
                acc[t][1] += float(d @ d)
        noise[i] = max((dd / ff if ff > 0 else 0.0) for ff, dd in acc.values()) if acc else 0.0
    return noise
