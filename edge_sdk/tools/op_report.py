"""Per-op timing reports, one implementation for `edge profile` (a microcontroller over serial) and `edge bench`
(this machine, or a Linux board over SSH): the record type, the table, the Chrome/Perfetto trace, the CSV and
the bar-chart PNG.

    prof = OpProfile(ops=[OpTiming(0, "CONV_2D", [120.0, 118.0], macs=294912, output_shape=[1, 48, 48, 8])],
                     unit="us", run_totals=[130.0, 127.0], us_per_unit=1.0, model="m.tflite", where="pi1")
    rows = prof.rows()                                  # the table as JSON-able dicts (what reports keep in "ops")
    text = "\\n".join(format_op_table(rows))
    write_trace(prof, "trace.json"); write_csv(rows, "ops.csv"); write_plot(prof, "ops.png")

Times are in ``unit``: device ticks or cycles (`edge profile`), microseconds (`edge bench`). ``us_per_unit``
turns a unit into microseconds when it is real time; None says it is not (emulated ticks), and then one
microsecond on the trace's timeline stands for one unit.

A table row: ``index``, ``subgraph``, ``op``, ``output_shape`` (list or None), ``macs`` (0 when unknown),
``time`` (mean over the runs), ``time_min``, ``time_max``, ``unit``, ``pct`` (share of the top-level ops' summed
mean), ``cum_pct``, ``macs_per_unit`` (None without MACs), ``caller`` and ``time_us`` when the unit is real time
but not us.

Top level and breakdown: the rows of subgraph 0 are the run; a row of a called subgraph (the body of a WHILE, a
branch of an IF, a CALL_ONCE's init) is time already inside its caller's row. So ``pct`` divides by the top-level
rows' sum (they add up to 100), ``cum_pct`` accumulates over them only (None on a breakdown row), and each
breakdown row comes right after its caller (``caller``: [subgraph, index] of the node that ran its subgraph; None
at the top level) with its share of the whole run: a part of its caller's, never added to the total.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

# the table's columns and the CSV's, in order
TABLE_HEAD = ("#", "op", "output shape", "MACs", "time", "%", "cum %", "MACs/unit")
CSV_COLUMNS = ("index", "subgraph", "op", "output_shape", "macs", "time", "time_min", "time_max", "unit", "pct",
               "cum_pct", "macs_per_unit")


@dataclass
class OpTiming:
    """One op's time in each profiled run (in the profile's unit; runs in order)."""

    index: int
    op: str
    samples: list = field(default_factory=list)
    subgraph: int = 0
    output_shape: list | None = None
    macs: int = 0
    caller: tuple | None = None  # (subgraph, index) of the node that runs this op's subgraph; None: subgraph 0

    @property
    def mean(self) -> float:
        return sum(self.samples) / len(self.samples) if self.samples else 0.0


@dataclass
class OpProfile:
    """Every op's times over ``runs`` runs, plus each run's whole time (``run_totals``, same unit)."""

    ops: list[OpTiming]
    unit: str
    run_totals: list = field(default_factory=list)
    us_per_unit: float | None = None
    model: str = ""
    where: str = ""
    meta: dict = field(default_factory=dict)  # extra facts for the trace's otherData

    @property
    def runs(self) -> int:
        return max([len(self.run_totals)] + [len(o.samples) for o in self.ops])

    @property
    def real_time(self) -> bool:
        return self.us_per_unit is not None

    def rows(self) -> list[dict]:
        """The table rows (module docstring): the top-level ops in the order of ``ops``, each followed by the
        ops of the subgraphs it runs (their own order, nested calls after their caller in turn)."""
        top = [o for o in self.ops if o.subgraph == 0]
        total = sum(o.mean for o in top) or 1.0
        below: dict[tuple, list[OpTiming]] = {}
        for o in self.ops:
            if o.subgraph and o.caller is not None:
                below.setdefault(tuple(o.caller), []).append(o)
        ordered: list[tuple[OpTiming, bool]] = []
        placed: set[int] = set()

        def place(o: OpTiming, at_top: bool) -> None:
            if id(o) in placed:  # a subgraph two nodes call: its rows under the first
                return
            placed.add(id(o))
            ordered.append((o, at_top))
            for inner in below.get((o.subgraph, o.index), []):
                place(inner, False)

        for o in top:
            place(o, True)
        for o in self.ops:  # a breakdown whose caller has no row (not traced): at the end, still not in the sum
            if id(o) not in placed:
                place(o, False)
        rows, cum = [], 0.0
        for o, at_top in ordered:
            mean = o.mean
            if at_top:
                cum += mean
            macs = int(o.macs) if o.macs else 0
            row = {"index": o.index, "subgraph": o.subgraph, "op": o.op,
                   "output_shape": list(o.output_shape) if o.output_shape is not None else None, "macs": macs,
                   "time": mean, "time_min": min(o.samples) if o.samples else 0,
                   "time_max": max(o.samples) if o.samples else 0, "unit": self.unit,
                   "pct": 100.0 * mean / total, "cum_pct": 100.0 * cum / total if at_top else None,
                   "caller": None if at_top else list(o.caller) if o.caller is not None else [None, None],
                   "macs_per_unit": (macs / mean) if macs and mean else None}
            if self.us_per_unit is not None and self.unit != "us":
                row["time_us"] = mean * self.us_per_unit
            rows.append(row)
        return rows

    def to_dict(self) -> dict:
        """JSON-able form (what `edge bench` on a device sends back, so the host can write the files)."""
        return {"unit": self.unit, "us_per_unit": self.us_per_unit, "run_totals": list(self.run_totals),
                "model": self.model, "where": self.where, "meta": dict(self.meta),
                "ops": [{"index": o.index, "subgraph": o.subgraph, "op": o.op, "output_shape": o.output_shape,
                         "macs": o.macs, "samples": list(o.samples),
                         "caller": None if o.caller is None else list(o.caller)} for o in self.ops]}

    @classmethod
    def from_dict(cls, d: dict) -> OpProfile:
        ops = [OpTiming(index=int(o["index"]), op=str(o["op"]), samples=list(o["samples"]),
                        subgraph=int(o.get("subgraph", 0)), output_shape=o.get("output_shape"),
                        macs=int(o.get("macs") or 0),
                        caller=tuple(o["caller"]) if o.get("caller") is not None else None) for o in d["ops"]]
        return cls(ops=ops, unit=d["unit"], run_totals=list(d.get("run_totals") or []),
                   us_per_unit=d.get("us_per_unit"), model=d.get("model", ""), where=d.get("where", ""),
                   meta=dict(d.get("meta") or {}))


# ------------------------------------------------------------------------------------------------ table
def format_op_table(rows: list[dict]) -> list[str]:
    """The per-op table (header, rule, one line per op) as lines without newlines."""
    cells = [TABLE_HEAD]
    for o in rows:
        idx = f"{o['index']}" if not o["subgraph"] else f"{o['subgraph']}:{o['index']}"
        # a breakdown row (inside its caller's time, module docstring): indented under it, no cumulative share
        op = o["op"]
        if o.get("caller") is not None:
            s, k = o["caller"]
            op = f"  {op} (in {'?' if k is None else k if not s else f'{s}:{k}'})"
        cum = "-" if o.get("cum_pct") is None else f"{o['cum_pct']:.1f}"
        cells.append((idx, op, "x".join(map(str, o["output_shape"])) if o["output_shape"] else "-",
                      f"{o['macs']:,}" if o["macs"] else "-", f"{o['time']:,.1f}", f"{o['pct']:.1f}",
                      cum, f"{o['macs_per_unit']:.2f}" if o["macs_per_unit"] else "-"))
    widths = [max(len(row[i]) for row in cells) for i in range(len(TABLE_HEAD))]
    lines = []
    for k, row in enumerate(cells):
        lines.append("  ".join(c.rjust(w) if i not in (1, 2) else c.ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


# ------------------------------------------------------------------------------------------------ files
def trace_document(p: OpProfile) -> dict:
    """A Chrome / Perfetto trace (JSON trace events): one complete event per op per run on an "ops" track,
    one per run on a "runs" track, runs back to back. Timestamps are microseconds when the unit is real time;
    otherwise 1 us on the timeline is one unit."""
    scale = p.us_per_unit if p.us_per_unit is not None else 1.0
    events = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": f"{p.where} ({p.unit})"}},
              {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "ops"}},
              {"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "runs"}}]
    t = 0.0
    for run in range(p.runs):
        start = t
        for o in p.ops:
            if run >= len(o.samples):
                continue
            d = o.samples[run] * scale
            events.append({"name": o.op, "cat": "op", "ph": "X", "pid": 1, "tid": 1, "ts": t, "dur": d,
                           "args": {"index": o.index, "subgraph": o.subgraph, "run": run, "ticks": o.samples[run],
                                    "unit": p.unit, "macs": o.macs, "output_shape": o.output_shape}})
            t += d
        whole = p.run_totals[run] if run < len(p.run_totals) else None
        run_d = max(whole * scale, t - start) if whole is not None else t - start
        events.append({"name": f"run {run}", "cat": "run", "ph": "X", "pid": 1, "tid": 2, "ts": start, "dur": run_d,
                       "args": {"ticks": whole, "unit": p.unit}})
        t = start + run_d
    other = {"model": p.model, **p.meta, "unit": p.unit, "real_time": p.real_time,
             "timestamp_scale": "microseconds" if p.real_time else f"1 us on the timeline = 1 {p.unit}"}
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}


def write_trace(p: OpProfile, path) -> None:
    Path(path).write_text(json.dumps(trace_document(p)))


def write_csv(rows: list[dict], path) -> None:
    """The table rows as CSV (CSV_COLUMNS; shapes as 1x8x8x3, floats with 6 significant digits)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for o in rows:
            w.writerow([("x".join(map(str, o[c])) if o[c] else "") if c == "output_shape"
                        else ("" if o[c] is None else (f"{o[c]:.6g}" if isinstance(o[c], float) else o[c]))
                        for c in CSV_COLUMNS])


def write_plot(p: OpProfile, path, footer: str | None = None) -> None:
    """A horizontal bar per op (mean time), labelled with the time and share, as a PNG (Pillow). The heading
    names the model, where it ran and the runs; the time axis below the bars is labelled with its unit (the PNG's
    text chunks hold the title and axis labels)."""
    from PIL import Image, ImageDraw, ImageFont
    from PIL.PngImagePlugin import PngInfo

    rows = p.rows()
    # "emulated" once: the profile's unit may say it already ("systick ticks (emulated)" under QEMU)
    unit = p.unit if p.real_time or "emulated" in p.unit else f"{p.unit}, emulated"
    row, left, top = 18, 230, 44
    width, bar_w = 1000, 1000 - 230 - 150
    height = top + row * max(len(rows), 1) + 64
    img = Image.new("RGB", (width, height), "white")
    d = ImageDraw.Draw(img)
    font = ImageFont.load_default()
    # each phrase once: the title says what ran where, the axis what is measured in which unit
    title = f"{Path(p.model).name} on {p.where}, {p.runs} run(s)"
    x_label = f"mean time per op ({unit}); beside each bar: that time and its share of the total"
    y_label = "op (index, type)"
    d.text((10, 8), title, fill="black", font=font)
    d.text((10, top - 16), y_label, fill=(80, 80, 80), font=font)
    peak = max((o["time"] for o in rows), default=1.0) or 1.0
    for i, o in enumerate(rows):
        y = top + i * row
        d.text((10, y + 3), f"{o['index']:>3} {o['op']}"[:36], fill="black", font=font)
        w = max(1, int(bar_w * o["time"] / peak))
        d.rectangle([left, y + 2, left + w, y + row - 3], fill=(70, 120, 190))
        t = f"{o['time']:,.0f}" if o["time"] >= 100 else f"{o['time']:.3g}"
        d.text((left + w + 6, y + 3), f"{t} ({o['pct']:.1f}%)", fill="black", font=font)
    axis_y = top + row * max(len(rows), 1) + 4
    d.line([(left, axis_y), (left + bar_w, axis_y)], fill="black")
    for frac in (0.0, 0.5, 1.0):  # ticks at 0, half and the peak, in the unit
        x = left + int(bar_w * frac)
        d.line([(x, axis_y), (x, axis_y + 4)], fill="black")
        v = peak * frac
        d.text((x - 10, axis_y + 6), f"{v:,.0f}" if v >= 100 else f"{v:.3g}", fill="black", font=font)
    d.text((left, axis_y + 20), x_label, fill="black", font=font)
    if footer:
        d.text((10, height - 16), footer, fill="black", font=font)
    info = PngInfo()
    for key, value in (("Title", title), ("x_label", x_label), ("y_label", y_label)):
        info.add_text(key, value)
    img.save(path, format="PNG", pnginfo=info)
