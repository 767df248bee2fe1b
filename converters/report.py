"""Reports for people: the reliability diagram (a PNG drawn with Pillow), the per-layer quantization error
table, and the text summaries ``edge convert`` and ``edge evaluate`` print.

All functions take the plain dicts that ``converters.evaluate`` and ``converters.convert`` return.
"""

from __future__ import annotations

import math

# ------------------------------------------------------------------------------------- reliability diagram


RELIABILITY_X_LABEL = "confidence (top-1 probability, 0..1)"
RELIABILITY_Y_LABEL = "accuracy (fraction correct, 0..1)"


def reliability_diagram(bins: list[dict], path, reference_bins: list[dict] | None = None,
                        size: tuple[int, int] = (480, 480), title: str = "", model: str = "") -> tuple[int, int]:
    """Draw accuracy per confidence bin (bars) against the diagonal of perfect calibration; the gap to the
    diagonal is shaded; each bar carries its sample count (n=...). With ``reference_bins`` the reference's
    accuracies are drawn as outlined bars. The heading names ``model`` and the samples in all; both axes are
    labelled with what they measure. Writes a PNG of ``size`` (width, height) pixels to ``path`` (its text
    chunks hold the title, axis labels and bin counts) and returns the size."""
    from PIL import Image, ImageDraw
    from PIL.PngImagePlugin import PngInfo

    width, height = int(size[0]), int(size[1])
    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    # rows above the plot: heading (y 4), legend (y 18), y-axis label (y 34); the x label below the ticks
    left, right, top, bottom = 40, width - 16, 62, height - 44
    pw, ph = right - left, bottom - top

    def xy(conf: float, acc: float) -> tuple[float, float]:
        return left + conf * pw, bottom - acc * ph

    for k in range(6):  # grid and tick labels
        v = k / 5
        gx, gy = xy(v, v)
        draw.line([(gx, top), (gx, bottom)], fill=(230, 230, 230))
        draw.line([(left, gy), (right, gy)], fill=(230, 230, 230))
        draw.text((gx - 8, bottom + 6), f"{v:.1f}", fill="black")
        draw.text((left - 30, gy - 6), f"{v:.1f}", fill="black")
    for b in bins:
        if not b["count"]:
            continue
        x0, _ = xy(b["lower"], 0)
        x1, _ = xy(b["upper"], 0)
        _, ya = xy(0, b["accuracy"])
        _, yc = xy(0, b["confidence"])
        draw.rectangle([x0 + 1, ya, x1 - 1, bottom], fill=(66, 114, 196), outline=(30, 60, 120))
        lo, hi = sorted((ya, yc))
        if hi - lo >= 1:
            draw.rectangle([x0 + 1, lo, x1 - 1, hi], fill=(230, 120, 120), outline=(180, 50, 50))
    for b in reference_bins or []:
        if b["count"]:
            x0, _ = xy(b["lower"], 0)
            x1, _ = xy(b["upper"], 0)
            _, ya = xy(0, b["accuracy"])
            draw.line([(x0 + 2, ya), (x1 - 2, ya)], fill=(20, 150, 60), width=3)
    for b in bins:  # sample counts, above each bar (inside the plot, clear of the heading)
        if b["count"]:
            x0, _ = xy(b["lower"], 0)
            x1, _ = xy(b["upper"], 0)
            _, ya = xy(0, min(b["accuracy"], b["confidence"]))
            _, yt = xy(0, max(b["accuracy"], b["confidence"]))
            label = f"n={b['count']}" if x1 - x0 >= 6 * (len(str(b["count"])) + 2) else str(b["count"])
            draw.text((x0 + 2, max(top + 2, yt - 13)), label, fill=(40, 40, 40))
    draw.line([xy(0, 0), xy(1, 1)], fill=(90, 90, 90), width=1)
    draw.rectangle([left, top, right, bottom], outline="black")
    total = sum(int(b["count"]) for b in bins)
    heading = f"{model + ': ' if model else ''}reliability, {total} samples" + (f"  ({title})" if title else "")
    draw.text((4, 4), heading, fill="black")
    legend = "blue: accuracy  red: gap to confidence  n: samples per bin" + ("  green: reference" if reference_bins else "")
    draw.text((4, 18), legend, fill=(80, 80, 80))
    draw.text((4, 34), RELIABILITY_Y_LABEL, fill="black")
    draw.text((left + pw // 2 - 3 * len(RELIABILITY_X_LABEL), height - 20), RELIABILITY_X_LABEL, fill="black")
    info = PngInfo()
    for key, value in (("Title", heading), ("x_label", RELIABILITY_X_LABEL), ("y_label", RELIABILITY_Y_LABEL),
                       ("bin_counts", ",".join(str(int(b["count"])) for b in bins))):
        info.add_text(key, value)
    img.save(path, format="PNG", pnginfo=info)
    return width, height


# ------------------------------------------------------------------------------ per-layer quantization error


def _first(d: dict, *keys):
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    return None


def per_layer_table(quant_report) -> list[dict]:
    """Rows {name, op, snr_db, cosine} from the quantizer's report, worst (lowest SNR) first.

    Accepts the quantizer's report dict (its per-layer list under "layers", "per_layer" or "tensors") or the
    list itself; rows lacking an SNR sort last."""
    if quant_report is None:
        return []
    rows = quant_report
    if isinstance(quant_report, dict):
        rows = _first(quant_report, "layers", "per_layer", "tensors", "layer_errors") or []
        if isinstance(rows, dict):
            rows = [{"name": k, **(v if isinstance(v, dict) else {"snr_db": v})} for k, v in rows.items()]
    table = []
    for r in rows:
        if not isinstance(r, dict):
            continue
        snr = _first(r, "snr_db", "snr", "sqnr_db", "sqnr")
        cos = _first(r, "cosine", "cosine_similarity", "cos")
        table.append({
            "name": str(_first(r, "name", "tensor", "node") or "?"),
            "op": _first(r, "op", "op_type"),
            "snr_db": None if snr is None else float(snr),
            "cosine": None if cos is None else float(cos),
        })
    table.sort(key=lambda r: (r["snr_db"] is None, r["snr_db"] if r["snr_db"] is not None else 0.0))
    return table


def format_layer_table(table: list[dict], limit: int = 10) -> str:
    if not table:
        return ""
    lines = [f"  {'layer (worst first)':44s} {'op':18s} {'SNR dB':>8s} {'cosine':>8s}"]
    for r in table[:limit]:
        name = r["name"] if len(r["name"]) <= 44 else "…" + r["name"][-43:]
        snr = "-" if r["snr_db"] is None else ("inf" if math.isinf(r["snr_db"]) else f"{r['snr_db']:.1f}")
        cos = "-" if r["cosine"] is None else f"{r['cosine']:.5f}"
        lines.append(f"  {name:44s} {str(r['op'] or ''):18s} {snr:>8s} {cos:>8s}")
    if len(table) > limit:
        lines.append(f"  ... {len(table) - limit} more (--json for all)")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------- text reports


def _pct(v) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.2f}%"


def _num(v, fmt=".4f") -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def format_metrics(m: dict, label: str) -> str:
    return (f"{label:10s} top-1 {_pct(m['top1']):>8s}  top-5 {_pct(m['top5']):>8s}  ECE {_num(m['ece'])}  "
            f"NLL {_num(m['nll'])}  ({m['samples']} samples)")


def format_evaluation(report: dict) -> str:
    lines = [format_metrics(report["model"], "model")]
    if report.get("reference"):
        lines.append(format_metrics(report["reference"], "reference"))
        lines.append(f"accuracy drop {100 * report['accuracy_drop']:+.2f} points, ECE change "
                     f"{report['ece_change']:+.4f}, argmax agreement {_pct(report['agreement'])}, "
                     f"mean |logit error| {_num(report['mean_abs_logit_error'])}")
    if report.get("plot"):
        lines.append(f"reliability diagram: {report['plot']}")
    return "\n".join(lines) + "\n"


def strip_bins(accuracy: dict | None) -> dict | None:
    """The accuracy report without its per-bin rows (what the manifest keeps)."""
    if not accuracy:
        return accuracy
    out = {}
    for k, v in accuracy.items():
        out[k] = {kk: vv for kk, vv in v.items() if kk != "bins"} if isinstance(v, dict) else v
    return out


def _db(v) -> str:
    return "inf" if isinstance(v, float) and math.isinf(v) and v > 0 else f"{v:.1f}"


def sample_kind(guard: dict) -> str:
    """What the guard measured on: "held-back" / "calibration" samples, the evaluation data, or "synthetic"
    ones (no data given)."""
    return guard.get("data") or ("synthetic" if guard.get("synthetic") else
                                 "held-back" if guard.get("held_back") else "calibration")


def format_task(guard: dict) -> list[str]:
    """The task's lines beside the SNR ones: what the task is and where it came from, its metric against its
    goal, and the verdict (which of the two decided, and the other one said too)."""

    record = guard.get("task")
    if not record:
        return []
    what = record["task"] + (f" ({record['source']})" if record.get("source") else "")
    snr = "SNR met" if guard.get("snr_met") else f"SNR NOT met ({len(guard.get('short') or [])} output(s) below " \
        f"{guard['min_snr_db']:g} dB)"
    if not record.get("judged"):
        return [f"task       {what}: not judged: {record.get('why')}",
                f"verdict    {'kept' if guard['met'] else 'refused'} on the SNR: {snr}"]
    where = f"{record['samples']} {record['data']} sample(s)" + (f", {record['runtime']}" if record.get("runtime") else "")
    lines = [f"task       {what} on {where}: {'met' if record['met'] else 'NOT met'}",
             f"  {task_text(record)}"]
    if record["task"] == "classification" and len(record["metrics"].get("outputs") or []) > 1:
        lines += [f"  {o['output']}: top-1 agreement {100 * o['top1']:.1f}%, top-5 {100 * o['top5']:.1f}%"
                  for o in record["metrics"]["outputs"]]
    if record["met"]:
        lines.append(f"verdict    kept on the task: task met, {snr}")
    else:
        lines.append(f"verdict    the task decides: task NOT met, {snr}")
    return lines


def format_guard(guard: dict | None) -> list[str]:
    """The accuracy guard's lines: each output's SNR (its joined parts, argmax agreement), the task's metric
    beside it when the task is known (``format_task``), what was widened and what it costs, and what falls
    short."""
    if not guard:
        return []
    if guard.get("measured") is False:  # fp16 / dynamic that no runtime here runs
        return [f"accuracy   NOT measured: {guard['not_measured']}"]
    where = f"{guard['samples']} {sample_kind(guard)} sample(s)"
    snr_met = guard.get("snr_met", guard["met"])
    lines = [f"accuracy   per output vs float on {where} (threshold {guard['min_snr_db']:g} dB, precision "
             f"{guard['precision']}): {'met' if snr_met else 'NOT met'}"
             + (" -- the widening search's model, not written (the float model is)" if guard.get("written") else "")]
    if guard.get("runtime"):  # fp16 / dynamic: which runtime ran the converted model
        lines.append(f"  measured in {guard['runtime']}")
    for o in guard.get("outputs", []):
        extra = ""
        if o.get("parts"):
            extra += " parts " + ", ".join(f"{p['input']} {_db(p['snr_db'])}" for p in o["parts"])
        if o.get("argmax_agreement") is not None:
            extra += f" argmax agreement {100 * o['argmax_agreement']:.1f}%"
        if o.get("agreement") is not None:  # a BOOL output (mask)
            extra += f" (mask) {100 * o['agreement']:.2f}% of elements agree"
        lines.append(f"  {o['name']}: SNR {_db(o['snr_db'])} dB" + extra)
    lines.extend(format_task(guard))
    wide = guard.get("widened") or []
    if wide:
        cost = guard.get("cost") or {}
        macs, total = cost.get("macs_not_int8", 0), cost.get("macs_total", 0)
        share = f" ({100 * macs / total:.1f}% of {total})" if total else ""
        from converters.quantize.widen import count_widened, widened_text

        count = guard.get("widened_count") or count_widened(w.get("to", "float32") for w in wide)
        lines.append(f"widened    {widened_text(count)}: "
                     + ", ".join(f"{w['op']} {w['output']} -> {w.get('to', 'float32')}" for w in wide[:8])
                     + (f" ... {len(wide) - 8} more" if len(wide) > 8 else ""))
        lines.append(f"  cost {cost.get('bytes', 0):+d} bytes, {macs} MACs not in int8{share} "
                     f"({cost.get('macs_int16', 0)} in int16, {cost.get('macs_float32', macs)} in float32)")
    for c in guard.get("cannot_widen") or []:
        lines.append(f"  cannot widen {c['op']} {c['output']}: {c['reason']}")
    for s in guard.get("lossy") or []:
        lines.append(f"  LOSSY (written with allow-lossy): {s}")
    return lines


def format_import(notes: dict | None) -> list[str]:
    """What the import resolved that changes the model's signature: the inputs pinned to constants (they are no
    longer model inputs), the dynamic input dims (-1 where the model resizes, else static: converters.dynamic_dims)
    and the control flow that folded because of them."""
    if not notes:
        return []
    lines = []
    pinned = notes.get("pinned_inputs") or {}
    if pinned:
        plural = "s" if len(pinned) > 1 else ""
        lines.append("pinned     " + ", ".join(f"{k} = {v}" for k, v in pinned.items())
                     + f": constant{plural}, no longer model input{plural}")
    for note in notes.get("dynamic_dims") or []:  # -1 in the signature where the model resizes, else static
        lines.append(f"dims       {note}")
    kept = set(notes.get("control_flow_kept") or [])
    for note in notes.get("control_flow") or []:
        lines.append(f"{'control' if note in kept else 'folded':10s} {note}")
    return lines


def _tensor_text(entry: dict) -> str:
    """``'state' [2, 1, 128] INT8 (scale 0.0123, zero point 3)``: a state tensor as ``converters.stateful``
    describes it."""
    text = f"{entry.get('shape', '?')} {entry.get('type', '?')}"
    if entry.get("scale") is not None:
        text += f" (scale {entry['scale']:.6g}, zero point {entry.get('zero_point', 0)})"
    return text


def format_state(state: dict | None) -> list[str]:
    """The streaming state's lines: each state input / output pair the caller carries from invoke to invoke, or
    (``--stateful``) each resource variable the model keeps, and how it is reset."""
    if not state:
        return []
    lines = []
    if state.get("stateful"):
        for v in state.get("variables") or []:
            lines.append(f"state      variable '{v['variable']}' {_tensor_text(v)}: was input '{v['input']}' / output "
                         f"'{v['output']}' ({', '.join(v.get('states') or []) or 'recurrent state'}), kept on the "
                         f"device between invokes")
        if state.get("reset"):
            lines.append(f"  reset: {state['reset']}")
        return lines
    for t in state.get("tensors") or []:
        lines.append(f"state      input '{t['input']}' {_tensor_text(t)} -> output '{t['output']}' "
                     f"({', '.join(t.get('states') or []) or 'recurrent state'}): feed each invoke's "
                     f"'{t['output']}' back as the next '{t['input']}' (--stateful keeps it on the device)")
    return lines


def format_conversion(report: dict) -> str:
    src = report.get("source", {})
    out = report.get("output", {})
    lines = [f"source     {src.get('path', '?')} ({src.get('format', '?')}, sha256 {str(src.get('sha256', ''))[:12]}…)"]
    ops = out.get("ops") or {}
    if ops:
        lines.append(f"ops        {sum(ops.values())}: " + ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())))
    lines.append(f"params     {out.get('parameters', '?')} ({out.get('parameter_bytes', '?')} bytes)")
    lines.append(f"model      {out.get('bytes', '?')} bytes")
    if out.get("arena_bytes") is not None and out.get("arena_where"):
        # the target's runtime arena (the check's arena_size) in the words every command prints, then how it was found
        from edge_sdk.runtime.planner import arena_words

        lines.append(arena_words(out["arena_bytes"], out["arena_where"]))
        if out.get("arena_source"):
            lines.append(f"           {out['arena_source']}")
    elif out.get("arena_bytes") is not None:  # no target: the interpreter's tensor plan, another figure
        from edge_sdk.runtime.planner import python_plan_words

        lines.append(f"plan       {python_plan_words(out['arena_bytes'], 'edge convert --target')}")
    lines.extend(format_import(report.get("import")))
    lines.extend(format_state(report.get("state")))
    q = report.get("quantization") or {}
    how = ", ".join(x for x in (q.get("method"), f"io {q.get('io')}" if q.get("io") else None) if x)
    shown = how and q.get("mode") not in (None, "none", "fp16")
    written_float = ((q.get("report") or {}).get("float_source") or {}).get("why")
    lines.append(f"quantize   {q.get('mode', 'none')}" + (f" ({how})" if shown else "")
                 + {"accuracy": "; written as float32: int8 does not keep this model",
                    "speed": "; written as float32: int8 is not estimated clearly faster than the float source"}.get(
                     written_float, ""))
    if q.get("excluded"):
        lines.append(f"kept float {', '.join(q['excluded'])}")
    if ops:
        lines.append(f"transposes {ops.get('TRANSPOSE', 0)}")
    for note in ((q.get("report") or {}).get("notes") or []):
        if not note.startswith(("lossy:", "kept on its task")):  # the guard's lines say that
            lines.append(f"note       {note}")
    lines.extend(format_guard(report.get("guard")))
    table = report.get("layers") or []
    if table:
        lines.append("per-layer quantization error:")
        lines.append(format_layer_table(table).rstrip("\n"))
    check = report.get("check")
    if check:
        lines.append(f"target     {check.get('target')}: {check.get('verdict')}")
        for p in check.get("problems") or []:
            lines.append(f"  - {p.get('message', p) if isinstance(p, dict) else p}")
    acc = report.get("accuracy")
    if acc:
        lines.append(format_evaluation(acc).rstrip("\n"))
    return "\n".join(lines) + "\n"


def task_text(record: dict) -> str:
    """One line of the task metric: ``top-1 agreement 96.9% (goal >= 99%), top-5 100.0%``."""
    m, goal = record.get("metrics") or {}, record.get("goal") or {}

    def pct(v):
        return "n/a" if v is None else f"{100 * v:.1f}%"

    if record["task"] == "classification":
        return f"top-1 agreement {pct(m.get('top1'))} (goal >= {pct(goal.get('top1'))}), top-5 {pct(m.get('top5'))}"
    if record["task"] == "segmentation":
        return f"map IoU {pct(m.get('map_iou'))} (goal >= {pct(goal.get('map_iou'))})"
    if record["task"] == "recognition":
        return (f"identical strings {pct(m.get('strings'))} (greedy CTC, blank {m.get('blank', 0)}; goal >= "
                f"{pct(goal.get('strings'))}), time steps agreeing {pct(m.get('steps'))}")
    if not m:
        return "detections not matched"
    return (f"detections kept {pct(m.get('kept_fraction'))} ({m['kept']} of {m['float_detections']} float "
            f"detections; IoU >= {m['match_iou']:g}, same class, score within {m['score_tolerance']:g}; goal >= "
            f"{pct(goal.get('detections'))}), {m['extra']} extra ({pct(m.get('extra_fraction'))})")
