"""The benchmarks' aims, said truthfully and kept for the README.

    aims = Aims("c_runtime", "python benchmarks/c_runtime.py")
    aims.every("faster than TFLM on every model", {"a.tflite": 1.3, "b.tflite": None}, lambda r: r >= 1,
               "{:.2f}x TFLM/C", section="1")
    aims.single("geomean C/XNNPACK <= 1.5", 1.2, 1.2 <= 1.5, "geomean 1.20", section="0")
    aims.save(models=[...])          # benchmarks/results/c_runtime.json (merged: sections not run keep theirs)
    sys.exit(aims.exit_status())      # 1 when an aim is NOT met

A verdict is "met", "NOT met" or "not measured": an aim over models is met only when every model was measured
and passes; a model without a figure (a peer that could not run it: n/a) makes the aim "not measured on N of M"
unless another model already fails it. The README's generated "benchmarks" section (edge_sdk.tools.docs) is made
from the JSON files under benchmarks/results/, so every figure there comes from a run of the command it names.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Callable

RESULTS = Path(__file__).resolve().parent / "results"  # the README's figures; EDGE_BENCH_RESULTS elsewhere (tests)


def verdict(met: bool | None) -> str:
    return "not measured" if met is None else "met" if met else "NOT met"


class Aims:
    def __init__(self, name: str, command: str, results: Path | None = None):
        results = results or Path(os.environ.get("EDGE_BENCH_RESULTS") or RESULTS)
        self.name, self.command, self.path = name, command, results / f"{name}.json"
        self.rows: list[dict] = []
        self.sections_run: set[str] = set()

    def _add(self, section: str, aim: str, met: bool | None, detail: str) -> dict:
        row = {"section": section, "aim": aim, "met": met, "verdict": verdict(met), "detail": detail}
        self.rows.append(row)
        self.sections_run.add(section)
        print(f"aim '{aim}': {row['verdict']}" + (f" ({detail})" if detail else ""))
        return row

    def single(self, aim: str, met: bool | None, detail: str, section: str) -> dict:
        """An aim with one figure (None: not measured)."""
        return self._add(section, aim, met, detail)

    def every(self, aim: str, figures: dict[str, float | None], passes: Callable[[float], bool], fmt: str,
              section: str) -> dict:
        """An aim every model must meet: ``figures`` {model: figure or None (not measured)}."""
        measured = {m: v for m, v in figures.items() if v is not None}
        failing = [m for m, v in measured.items() if not passes(v)]
        missing = [m for m, v in figures.items() if v is None]
        if not figures or not measured:
            met, detail = None, (f"no model measured ({len(figures)} given)" if figures else "no model given")
        elif failing:
            met = False
            detail = (f"{len(measured) - len(failing)}/{len(measured)} measured models pass; fails on "
                      + ", ".join(f"{m} ({fmt.format(measured[m])})" for m in failing))
        elif missing:
            met = None
            detail = f"passes on the {len(measured)} measured; not measured on {len(missing)}: {', '.join(missing)}"
        else:
            met, detail = True, f"{len(measured)}/{len(measured)} models"
        row = self._add(section, aim, met, detail)
        row["figures"] = figures
        return row

    def exit_status(self) -> int:
        """1 when any aim of this run is NOT met, else 0."""
        return 1 if any(r["met"] is False for r in self.rows) else 0

    def save(self, **facts) -> Path:
        """Write the aims of the sections this run measured into the results file; sections it did not run keep
        what an earlier run recorded (each with its own date and facts)."""
        try:
            old = json.loads(self.path.read_text())
        except (OSError, ValueError):
            old = {}
        sections = {k: v for k, v in old.get("sections", {}).items() if k not in self.sections_run}
        today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
        for s in sorted(self.sections_run):
            sections[s] = {"date": today, "aims": [r for r in self.rows if r["section"] == s], **facts}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps({"command": self.command, "sections": dict(sorted(sections.items()))},
                                        indent=1) + "\n")
        print(f"aims written to {self.path} (the README's benchmarks section: python -m edge_sdk.tools.docs "
              "--write README.md)")
        return self.path
