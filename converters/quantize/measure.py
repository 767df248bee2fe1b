"""The accuracy guard's measurements: the quantized model beside the float one on the same samples, per activation
(SNR and cosine of its dequantized value, worst first; a join's output also part by part) and per model output (its
SNR, its joined parts', argmax agreement for class distributions; a BOOL output, a comparison's mask, as its 0/1
values: true elements over flipped ones, with the fraction that agrees)."""

from __future__ import annotations

import math

import numpy as np

from converters.quantize.builder import QuantGraph, is_const, is_float
from converters.quantize.calibrate import Runner
from converters.quantize.joins import join_parts, output_join
from converters.quantize.scales import dequantize, quantize_array
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table


def snr_db(ff: float, dd: float) -> float:
    if dd == 0:
        return math.inf
    ratio = ff / dd if ff > 0 else 0.0
    if not ratio > 0:  # no signal, an infinite error, or one the float sums could not hold (NaN)
        return -math.inf
    return 10 * math.log10(ratio) if math.isfinite(ratio) else math.inf


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """The sum of ``a * b`` (two 1-D float64 arrays) on this thread. ``a @ b`` / ``np.dot`` go to OpenBLAS, which
    splits a long vector over its threads: on a loaded machine each call waited milliseconds for them (the
    YOLO-like stand-in at 160 px: 132 s of the 216 s int8 search spent in layer_errors' four dots per activation
    and sample, profiled with cProfile; the kernels and the statistics' other numpy work took under 10 s)."""
    return float(np.einsum("i,i->", a, b))


def is_distribution(model: Model, t: int, produced: dict) -> bool:
    """A class distribution (argmax is meaningful): the output of an op whose row says ``distribution`` (SOFTMAX,
    LOG_SOFTMAX), or (batch, classes)."""
    sg = model.subgraphs[0]
    shape = tuple(sg.tensors[t].shape)
    if t in produced and op_table.row(model.op_name(sg.operators[produced[t]])).distribution:
        return len(shape) >= 1 and shape[-1] >= 2
    return len(shape) == 2 and shape[-1] >= 2


def layer_errors(model: Model, qmodel: Model, b: QuantGraph, samples, float_run, io: str,
                 outputs_only: bool = False) -> tuple[list, list]:
    """SNR and cosine of every quantized activation against the float model, worst SNR first; the output of
    a CONCATENATION / PACK also part by part (``part_of``: the joined tensor, ``input``: the part's source),
    so a small-range part is not hidden by a large-range one. Second: per model output, its SNR (and its
    joined parts' SNRs, and argmax agreement for class distributions). ``outputs_only``: no per-activation
    table (the joined parts stay): the cheaper measurement that compares whole models."""
    qrun = Runner(qmodel)
    sg = model.subgraphs[0]
    produced = {t: i for i, op in enumerate(sg.operators) for t in op.outputs if t >= 0}
    out_acc = {t: np.zeros(4) for t in sg.outputs if is_float(model, t)}
    out_agree = {t: [0, 0] for t in out_acc if is_distribution(model, t, produced)}
    # BOOL outputs (comparison masks): the SNR of the 0/1 values (true count over flipped count) and agreement
    bool_acc = {t: [0, 0, 0] for t in sg.outputs if sg.tensors[t].type == "BOOL"}  # trues, flips, elements
    pairs = {} if outputs_only else {t: n for t, n in b.qt.items() if is_float(model, t) and not is_const(model, t)
                                     and b.tensors[n].type in ("INT8", "INT16")}
    joined = {}  # output tensor of a join -> (its new tensor, parts)
    for op in sg.operators:
        if op_table.row(model.op_name(op)).join and op.outputs and is_float(model, op.outputs[0]):
            t = op.outputs[0]
            n = b.qt.get(t, b.ft.get(t))
            if n is not None:
                joined[t] = (n, join_parts(model, op))
    part_acc = {(t, k): np.zeros(4) for t, (_, parts) in joined.items() for k in range(len(parts))}
    part_max = dict.fromkeys(part_acc, 0.0)
    acc = {t: np.zeros(4) for t in pairs}  # sum f^2, sum (f-q)^2, sum f*q, sum q^2
    # per channel (the last axis): sum f^2, sum (f-q)^2 -- one per-tensor scale may crush a small channel that the
    # tensor's SNR, ruled by its large channels, does not show
    channels = {t: np.zeros((2, sg.tensors[t].shape[-1])) for t in pairs
                if len(sg.tensors[t].shape) >= 2 and sg.tensors[t].shape[-1] >= 2}
    max_err = dict.fromkeys(pairs, 0.0)
    seen = set()
    in_quant = [b.tensors[n].quantization for n in (b.io_map[t] for t in sg.inputs)]
    for sample in samples:
        ref = float_run(sample)
        feed = []
        for x, t, q in zip(sample, sg.inputs, in_quant):
            n = b.io_map[t]
            if b.tensors[n].type in ("INT8", "INT16") and np.asarray(x).dtype.kind == "f":
                lim = (-128, 127) if b.tensors[n].type == "INT8" else (-32768, 32767)
                x = quantize_array(np.asarray(x), q.scale[0], q.zero_point[0], *lim, b.tensors[n].dtype)
            feed.append(x)
        got = qrun(feed)
        for t in out_acc:
            n = b.io_map[t]
            if t not in ref or n not in got:
                continue
            f = ref[t].astype(np.float64)
            q = dequantize(got[n], b.tensors[n].quantization).reshape(f.shape)
            finite = np.isfinite(f).reshape(-1)  # LOG(0) = -inf in the float model: measured on the finite elements
            fv = f.reshape(-1)[finite]
            d = fv - q.reshape(-1)[finite]  # a float32 LOG kept by the guard gives -inf there too: not subtracted
            out_acc[t] += (dot(fv, fv), dot(d, d), 0.0, 0.0)
            if t in out_agree and f.size:
                fa, qa = f.reshape(-1, f.shape[-1]).argmax(-1), q.reshape(-1, f.shape[-1]).argmax(-1)
                out_agree[t][0] += int((fa == qa).sum())
                out_agree[t][1] += int(fa.size)
        for t in bool_acc:
            n = b.io_map[t]
            if t in ref and n in got:
                f, q = ref[t].reshape(-1), got[n].reshape(-1)
                bool_acc[t][0] += int(f.sum())
                bool_acc[t][1] += int((f != q).sum())
                bool_acc[t][2] += int(f.size)
        for t, n in pairs.items():
            if t not in ref or n not in got:
                continue
            f = ref[t].astype(np.float64).reshape(-1)
            q = dequantize(got[n], b.tensors[n].quantization).reshape(-1)
            finite = np.isfinite(f)
            whole = bool(finite.all())
            if not whole:  # a -inf mask fill (SELECT): measured on the finite elements
                f, q = f[finite], q[finite]
            d = f - q
            if t in channels and whole and f.size:  # channel by channel where every element is finite
                fc, dc = f.reshape(-1, channels[t].shape[1]), d.reshape(-1, channels[t].shape[1])
                channels[t] += (np.einsum("ij,ij->j", fc, fc), np.einsum("ij,ij->j", dc, dc))
            acc[t] += (dot(f, f), dot(d, d), dot(f, q), dot(q, q))
            seen.add(t)
            if d.size:
                max_err[t] = max(max_err[t], float(np.abs(d).max()))
        for t, (n, parts) in joined.items():
            if t not in ref or n not in got:
                continue
            fo = ref[t].astype(np.float64)
            qo = dequantize(got[n], b.tensors[n].quantization).reshape(fo.shape)
            seen.add(t)
            for k, (_, index) in enumerate(parts):
                f, q = fo[index].reshape(-1), qo[index].reshape(-1)
                d = f - q
                part_acc[(t, k)] += (dot(f, f), dot(d, d), dot(f, q), dot(q, q))
                if d.size:
                    part_max[(t, k)] = max(part_max[(t, k)], float(np.abs(d).max()))
    layers = []
    for (t, k), (ff, dd, fq, qq) in part_acc.items():
        if t not in seen:
            continue
        src = joined[t][1][k][0]
        i = produced.get(t)
        cos = fq / math.sqrt(ff * qq) if ff > 0 and qq > 0 else (1.0 if ff == qq else 0.0)
        layers.append({"tensor": f"{sg.tensors[t].name} [part {k}: {sg.tensors[src].name}]",
                       "part_of": sg.tensors[t].name, "input": sg.tensors[src].name, "op_index": i,
                       "op": model.op_name(sg.operators[i]), "snr_db": snr_db(ff, dd), "cosine": float(cos),
                       "max_abs_error": part_max[(t, k)]})
    for t, (ff, dd, fq, qq) in acc.items():
        if t not in seen:
            continue
        snr = snr_db(ff, dd)
        cos = fq / math.sqrt(ff * qq) if ff > 0 and qq > 0 else (1.0 if ff == qq else 0.0)
        i = produced.get(t)
        entry = {"tensor": sg.tensors[t].name, "op_index": i,
                 "op": model.op_name(sg.operators[i]) if i is not None else "INPUT",
                 "snr_db": snr, "cosine": float(cos), "max_abs_error": max_err[t]}
        if t in channels:
            live = channels[t][0] > 0
            if live.any():  # the worst channel that carries signal
                entry["worst_channel_snr_db"] = min(snr_db(f2, d2) for f2, d2 in channels[t].T[live])
        layers.append(entry)
    layers.sort(key=lambda r: (r["snr_db"], r["cosine"]))
    outputs = []
    for t, (ff, dd, _, _) in out_acc.items():
        entry = {"name": sg.tensors[t].name, "snr_db": snr_db(ff, dd)}
        j = output_join(model, t, produced)
        if j is not None:
            entry["parts"] = [{"input": r["input"], "snr_db": r["snr_db"]} for r in layers
                              if r.get("part_of") == sg.tensors[j].name]
        if t in out_agree and out_agree[t][1]:
            entry["argmax_agreement"] = out_agree[t][0] / out_agree[t][1]
        entry["worst_snr_db"] = min([entry["snr_db"]] + [p["snr_db"] for p in entry.get("parts", [])])
        outputs.append(entry)
    for t, (trues, flips, size) in bool_acc.items():
        if size:
            snr = snr_db(float(trues), float(flips))
            outputs.append({"name": sg.tensors[t].name, "snr_db": snr, "agreement": 1.0 - flips / size,
                            "worst_snr_db": snr})
    return layers, outputs


def worst(outputs) -> float:
    return min([o["worst_snr_db"] for o in outputs or []] or [math.inf])


def short(outputs, min_snr: float) -> list[dict]:
    """The outputs (or joined parts) whose SNR is below ``min_snr``."""
    return [o for o in outputs or [] if o["worst_snr_db"] < min_snr]


# ------------------------------------------------------------------------ the modes that keep float activations
def litert_runner(qmodel: Model):
    """``run(sample) -> [output values]`` of a model in LiteRT's reference kernels (the runtime of dynamic-range
    models: its hybrid kernels quantize activations on the fly), or None without ai-edge-litert."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        return None
    from edge_sdk.model import write_model

    interp = Interpreter(model_content=write_model(qmodel), num_threads=1,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interp.allocate_tensors()
    ins = [d["index"] for d in interp.get_input_details()]
    outs = [d["index"] for d in interp.get_output_details()]

    def run(sample):
        interp.reset_all_variables()
        for i, x in zip(ins, sample):
            interp.set_tensor(i, np.asarray(x))
        interp.invoke()
        return [interp.get_tensor(o) for o in outs]

    return run


def interpreter_runner(qmodel: Model):
    """``run(sample) -> [output values]`` of a model in edge-sdk's interpreter."""
    from edge_sdk.runtime.interpreter import Interpreter

    interp = Interpreter(model=qmodel)
    interp.allocate_tensors()
    ins = [d["index"] for d in interp.get_input_details()]
    outs = [d["index"] for d in interp.get_output_details()]

    def run(sample):
        interp.reset_all_variables()
        for i, x in zip(ins, sample):
            interp.set_tensor(i, np.asarray(x))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # as Runner: IEEE values, no warning
            interp.invoke()
        return [np.array(interp.tensor(o)()) for o in outs]

    return run


def output_errors(model: Model, samples, float_run, run) -> list[dict]:
    """Per float model output: the SNR of ``run(sample)`` (the converted model's outputs, in order) against the
    float model (``float_run``), and argmax agreement for class distributions -- the int8 guard's output entries.
    Elements where the float model is not finite are left out; a non-finite value where it is finite is an
    infinite error (SNR -inf)."""
    sg = model.subgraphs[0]
    produced = {t: i for i, op in enumerate(sg.operators) for t in op.outputs if t >= 0}
    acc = {k: [0.0, 0.0] for k, t in enumerate(sg.outputs) if is_float(model, t)}
    agree = {k: [0, 0] for k in acc if is_distribution(model, sg.outputs[k], produced)}
    for sample in samples:
        ref = float_run(sample)
        got = run(sample)
        for k in acc:
            f = np.asarray(ref[sg.outputs[k]], np.float64)
            q = np.asarray(got[k], np.float64).reshape(f.shape)
            keep = np.isfinite(f)
            fk, qk = f[keep], q[keep]
            with np.errstate(invalid="ignore", over="ignore"):
                d = np.where(np.isfinite(qk), fk - qk, np.inf)
            acc[k][0] += dot(fk, fk)
            acc[k][1] += dot(d, d) if np.isfinite(d).all() else math.inf
            if k in agree and f.size and keep.all() and np.isfinite(q).all():
                fa, qa = f.reshape(-1, f.shape[-1]).argmax(-1), q.reshape(-1, f.shape[-1]).argmax(-1)
                agree[k][0] += int((fa == qa).sum())
                agree[k][1] += int(fa.size)
    outputs = []
    for k, (ff, dd) in acc.items():
        snr = -math.inf if math.isinf(dd) else snr_db(ff, dd)
        entry = {"name": sg.tensors[sg.outputs[k]].name, "snr_db": snr, "worst_snr_db": snr}
        if k in agree and agree[k][1]:
            entry["argmax_agreement"] = agree[k][0] / agree[k][1]
        outputs.append(entry)
    return outputs


# ------------------------------------------------------------------------ per-op isolation (a diagnosis)
def isolated_errors(model: Model, qmodel: Model, samples) -> list[dict]:
    """Each integer op of ``qmodel`` alone: its inputs the float model's values (quantized with the quantized
    model's input scales), the op run in the integer model's type, its output dequantized and compared with the
    float model's -- the SNR an op's own rule gives, worst first. Beside ``layer_errors``' table (the cascade, where
    every op also inherits the error of the ones before it) this tells a wrong rule (bad alone) from accumulation
    (fine alone, bad in the cascade). ``model`` is the float model ``qmodel`` was quantized from as the quantizer saw
    it (after equalization, which rescales channels); tensors are matched by name (the quantizer keeps them)."""
    import copy

    from edge_sdk.model.types import SubGraph
    from edge_sdk.runtime.interpreter import Interpreter

    sg, qs = model.subgraphs[0], qmodel.subgraphs[0]
    by_name = {t.name: i for i, t in enumerate(sg.tensors)}
    consts = {i for i, t in enumerate(qs.tensors) if t.buffer and len(qmodel.buffers[t.buffer].data)}
    cases = []  # (op index, data inputs, output, interpreter)
    for i, op in enumerate(qs.operators):
        ins = [t for t in op.inputs if t >= 0 and t not in consts]
        outs = [t for t in op.outputs if t >= 0]
        tensors = [qs.tensors[t] for t in ins + outs]
        if (not ins or len(outs) != 1 or any(t.type not in ("INT8", "INT16") for t in tensors)
                or any(t.name not in by_name or not is_float(model, by_name[t.name]) for t in tensors)):
            continue  # a QUANTIZE / DEQUANTIZE at the edges, a float op kept by the guard, an index output
        one = copy.copy(qmodel)
        one.subgraphs = [SubGraph(tensors=qs.tensors, inputs=ins, outputs=outs, operators=[op])]
        one.signature_defs = []
        interp = Interpreter(model=one)
        interp.allocate_tensors()
        cases.append((i, ins, outs[0], interp))
    acc = {i: np.zeros(2) for i, *_ in cases}  # sum f^2, sum (f-q)^2
    float_run = Runner(model)
    for sample in samples:
        ref = dict(float_run(sample))  # views, valid until the next run
        ref.update({t: np.asarray(x) for t, x in zip(sg.inputs, sample)})
        for i, ins, out, interp in cases:
            for t in ins:
                q = qs.tensors[t].quantization
                lim = np.iinfo(qs.tensors[t].dtype)
                x = ref[by_name[qs.tensors[t].name]]
                interp.set_tensor(t, quantize_array(np.asarray(x), q.scale[0], q.zero_point[0], lim.min, lim.max,
                                                    qs.tensors[t].dtype).reshape(qs.tensors[t].shape))
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                interp.invoke()
            got = dequantize(interp.get_tensor(out), qs.tensors[out].quantization).reshape(-1)
            f = np.asarray(ref[by_name[qs.tensors[out].name]], np.float64).reshape(-1)
            keep = np.isfinite(f)
            d = f[keep] - got[keep]
            acc[i] += (dot(f[keep], f[keep]), dot(d, d))
    rows = [{"op_index": i, "op": qmodel.op_name(qs.operators[i]), "tensor": qs.tensors[out].name,
             "snr_db": snr_db(*acc[i])} for i, _, out, _ in cases]
    return sorted(rows, key=lambda r: r["snr_db"])

