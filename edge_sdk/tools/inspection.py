"""`edge inspect`: what a model is made of, and what it will cost to run.

``inspect_model(path)`` returns plain data (the CLI prints it as JSON with --json); ``format_inspection``
renders it for people. The model's structure comes from the reader; shapes after prepare, MACs (the op
table's count per op) and the layer-by-layer arena plan come from allocating it in one interpreter; the in-place
and least-RAM plans are the planner's (edge_sdk.runtime.planner.plan_tensors) over that interpreter's prepared
tensor infos, without another interpreter. A model we cannot run is still inspected: the reason is listed under
``problems`` and the run-time figures are null.

An input whose shape signature holds a -1 beyond the batch axis (a time or length axis: edge_sdk.model.input_shapes)
has only a placeholder stored shape: the run-time figures need ``input_shapes`` (`--input-shape`, as the commands
that run the model take it). Without it they are null and ``problems`` holds the one line naming the input, its
signature and the flag (not a kernel error at the placeholder shape); the tensor rows carry ``shape_signature``
where it differs from the stored shape.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_sdk.errors import ModelError
from edge_sdk.model import Model, numpy_dtype, read_model
from edge_sdk.model.manifest import read_manifest, summarize_manifest
from edge_sdk.runtime.planner import python_plan_words


def _quantization(t) -> dict | None:
    q = t.quantization
    if q is None or q.scale is None or q.scale.size == 0:
        return None
    return {
        "scale": [float(s) for s in q.scale],
        "zero_point": [int(z) for z in q.zero_point],
        "quantized_dimension": int(q.quantized_dimension),
    }


def _tensor_bytes(model: Model, t) -> int:
    return len(model.buffers[t.buffer].data) if 0 < t.buffer < len(model.buffers) else 0


def inspect_model(source, input_shapes=None) -> dict:
    """A report of the model at ``source`` (a path or bytes): structure, MACs, arena plan, problems.
    ``input_shapes`` (`--input-shape`): the run-time figures at these input shapes (module docstring)."""
    from edge_sdk.errors import UsageError
    from edge_sdk.model.input_shapes import shaped_model

    data = Path(source).read_bytes() if isinstance(source, (str, Path)) else bytes(source)
    model = read_model(data)
    shaped = None
    if input_shapes:  # misuse (an unknown input, a wrong rank) is the caller's UsageError, as on every command
        shaped = shaped_model(data, input_shapes, model=model)
    report: dict = {
        "model": str(source) if isinstance(source, (str, Path)) else "<bytes>",
        "bytes": len(data),
        "version": model.version,
        "description": model.description,
        "subgraphs": [],
        "signatures": [
            {"key": s.signature_key, "subgraph": s.subgraph_index, "inputs": s.inputs, "outputs": s.outputs}
            for s in model.signature_defs
        ],
        "metadata": [m.name for m in model.metadata],
        "manifest": None,
        "parameter_bytes": 0,
        "macs": None,
        "arena": None,
        "problems": [],
    }
    try:
        report["manifest"] = read_manifest(model)
    except ModelError as exc:
        report["problems"].append(str(exc))
    for si, sg in enumerate(model.subgraphs):
        tensors = []
        for ti, t in enumerate(sg.tensors):
            nbytes = _tensor_bytes(model, t)
            report["parameter_bytes"] += nbytes
            tensors.append({
                "index": ti, "name": t.name, "type": t.type, "shape": list(t.shape), "constant": nbytes > 0,
                "bytes": nbytes, "variable": t.is_variable, "quantization": _quantization(t),
            })
            if t.shape_signature is not None and tuple(t.shape_signature) != tuple(t.shape):
                tensors[-1]["shape_signature"] = [int(d) for d in t.shape_signature]
        ops = [
            {"index": oi, "op": model.op_name(op), "version": model.op_version(op), "inputs": list(op.inputs),
             "outputs": list(op.outputs), "macs": None}
            for oi, op in enumerate(sg.operators)
        ]
        report["subgraphs"].append({"index": si, "name": sg.name, "inputs": list(sg.inputs),
                                    "outputs": list(sg.outputs), "tensors": tensors, "ops": ops})
    if shaped is None:
        try:  # a -1 beyond the batch axis and no shape given: that one line, not a kernel error at the placeholder
            shaped = shaped_model(data, None, model=model)
        except UsageError as exc:
            report["problems"].append(f"{exc} (the run-time figures need it)")
            return report
    if input_shapes:  # the shapes the figures are for, as given
        main = read_model(shaped).subgraphs[0]
        report["input_shapes"] = {main.tensors[t].name: [int(d) for d in main.tensors[t].shape] for t in main.inputs}
    _add_runtime_figures(shaped, report)
    return report


def _add_runtime_figures(data: bytes, report: dict) -> None:
    """Shapes after prepare, MACs per op and the arena plans, from allocating the model in our interpreter (the
    layer-by-layer plan) and the planner (the in-place and least-RAM plans over the same prepared infos)."""
    from edge_sdk.runtime import planner
    from edge_sdk.runtime.interpreter import Interpreter

    interp = Interpreter(model_content=data)
    try:
        interp.allocate_tensors()
    except ModelError as exc:
        report["problems"].append(str(exc))
        return
    total = 0
    for si, sub in enumerate(report["subgraphs"]):
        for op, macs in zip(sub["ops"], interp.op_macs(si)):
            op["macs"] = macs
            total += macs or 0
        for t, shape in zip(sub["tensors"], interp.tensor_shapes(si)):
            t["shape"] = list(shape)
    report["macs"] = total
    plan = interp.arena_plan()
    # The other two plans over the tensor infos the interpreter planned with (prepare_report: the same prepare,
    # per subgraph), the buffer lifetimes computed once for both.
    infos = interp.prepare_report()[2]
    spans: dict = {}
    requests = planner.buffer_requests(interp.model, infos, spans=spans)
    small = planner.plan_tensors(interp.model, infos, "inplace", requests=requests, spans=spans)  # for comparison
    least = planner.plan_tensors(interp.model, infos, "min", requests=requests, spans=spans)  # in place + a stage
    patch = least.stage
    report["arena"] = {
        "bytes": interp.arena_size,  # the layer-by-layer plan's ("layer")
        # what "bytes" is: the Python interpreter's tensor plan, not a target runtime's arena (edge check --target)
        "figure": "python_tensor_plan",
        "inplace_bytes": small.total,  # --memory inplace (+0 MACs)
        "min_bytes": least.total,  # --memory min, the least-RAM plan; which plan it is: min_plan
        "min_plan": least.memory_plan,  # planner.REALISED_PLANS: "patch", or "inplace" (no stage beats it)
        # its patch stage (the interpreter's, over every op it patches): None when no stage beats the in-place plan
        "patch": None if patch is None else {**patch.to_dict(), "model_macs": total,
                                             "summary": patch.describe(total)},
        "lower_bound": plan.lower_bound,
        "buffers": [
            {"tensor": b.name, "offset": b.offset, "size": b.size, "first_use": b.first_use, "last_use": b.last_use}
            for b in plan.buffers
        ],
    }


def _fmt_quant(q: dict | None) -> str:
    if not q:
        return ""
    s, z = q["scale"], q["zero_point"]
    if len(s) == 1:
        return f"scale {s[0]:.6g} zp {z[0]}"
    return f"per-channel({len(s)}) dim {q['quantized_dimension']} scale {min(s):.3g}..{max(s):.3g}"


def _fmt_count(n) -> str:
    if n is None:
        return "?"
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return str(n)


def format_inspection(report: dict) -> str:
    lines = [
        f"model      {report['model']} ({report['bytes']} bytes, schema v{report['version']})",
        f"           {report['description']}" if report["description"] else None,
        f"params     {report['parameter_bytes']} bytes in constant tensors",
        f"MACs       {_fmt_count(report['macs'])}",
    ]
    arena = report["arena"]
    if arena:
        lb = arena["lower_bound"]
        ratio = f" ({arena['bytes'] / lb:.2f}x)" if lb else ""
        lines.append(f"plan       {python_plan_words(arena['bytes'])}; liveness lower bound {lb} bytes{ratio}")
        if arena.get("inplace_bytes") is not None:
            lines.append(f"           in-place plan (--memory inplace: in-place ops, +0 MACs) {arena['inplace_bytes']} "
                         f"bytes ({arena['inplace_bytes'] / arena['bytes']:.2f}x)" if arena["bytes"] else "")
        patch = arena.get("patch")
        if patch is not None:
            ratio = f" ({patch['ram'] / arena['bytes']:.2f}x)" if arena["bytes"] else ""
            lines.append(f"           least-RAM plan (--memory min): {patch['summary']}{ratio}")
        elif "patch" in arena:
            lines.append("           least-RAM plan (--memory min): the in-place plan (no patch stage needs less)")
    if report.get("input_shapes"):
        lines.append("inputs     at " + ", ".join(f"{n} [{', '.join(map(str, s))}]"
                                            for n, s in report["input_shapes"].items()) + " (--input-shape)")
    if report["signatures"]:
        lines.append("signatures " + ", ".join(f"{s['key']} (subgraph {s['subgraph']})" for s in report["signatures"]))
    if report["metadata"]:
        lines.append("metadata   " + ", ".join(report["metadata"]))
    if report.get("manifest"):
        lines.extend("manifest   " + line for line in summarize_manifest(report["manifest"]))
    for sub in report["subgraphs"]:
        tensors = sub["tensors"]

        def desc(i: int) -> str:
            if i < 0:
                return "-"
            t = tensors[i]
            return f"{t['name'] or '#' + str(i)}"

        lines.append(f"\nsubgraph {sub['index']} {sub['name']!r}: inputs {[desc(i) for i in sub['inputs']]} "
                     f"-> outputs {[desc(i) for i in sub['outputs']]}")
        lines.append(f"  {'#':>3s}  {'op':28s} {'v':>2s} {'MACs':>8s}  inputs -> outputs")
        for op in sub["ops"]:
            lines.append(f"  {op['index']:3d}  {op['op']:28s} {op['version']:2d} {_fmt_count(op['macs']):>8s}  "
                         f"{', '.join(map(str, op['inputs']))} -> {', '.join(map(str, op['outputs']))}")
        lines.append(f"  {'#':>3s}  {'tensor':40s} {'type':8s} {'shape':18s} {'bytes':>8s}  quantization")
        for t in tensors:
            kind = "const" if t["constant"] else ("var" if t["variable"] else "")
            shape = "x".join(map(str, t["shape"])) or "scalar"
            if "shape_signature" in t:  # a placeholder stored shape: its signature beside it
                shape += " (" + "x".join(map(str, t["shape_signature"])) + ")"
            name = t["name"] if len(t["name"]) <= 40 else "…" + t["name"][-39:]
            itemsize = numpy_dtype(t["type"]).itemsize if numpy_dtype(t["type"]) is not None else 0
            size = t["bytes"] if t["constant"] else int(np.prod(t["shape"], dtype=np.int64)) * itemsize
            lines.append(f"  {t['index']:3d}  {name:40s} {t['type']:8s} {shape:18s} {size:8d}  "
                         f"{_fmt_quant(t['quantization'])} {kind}".rstrip())
    for p in report["problems"]:
        lines.append(f"\nproblem: {p}")
    return "\n".join(line for line in lines if line is not None) + "\n"
