"""The default int8 search's time on a YOLOv8n-size graph (issue 24: the whole search <= 120 s on this machine), and
the accuracy guard's per-activation measurement (``layer_errors``) with its sums on this thread (``measure.dot``,
einsum) against the same sums through OpenBLAS (``a @ b``), interleaved A B A B, the minimum of each.

    python benchmarks/convert_search.py              # the YOLO-like stand-in at full size (160 px, 244 ops)
    python benchmarks/convert_search.py --small      # the size tests/test_convert_goals.py runs

Exit status 1 when an aim is NOT met (benchmarks/aims.py): the search within SEARCH_GOAL_S, the guard's goal on
every run. The figures are printed, not saved for the README (a --small or loaded run is no README figure).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SEARCH_GOAL_S = 120.0


def _blas_dot(a, b) -> float:
    return float(a @ b)


def _timed_convert(cg, model, calib) -> tuple[float, float, dict]:
    """(convert seconds, seconds inside layer_errors, the guard's record) of one default conversion."""
    import converters.quantize as q
    from converters import convert
    from converters.quantize import measure, widen

    spent = [0.0]
    original = measure.layer_errors

    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return original(*a, **k)
        finally:
            spent[0] += time.perf_counter() - t

    q.layer_errors = widen.layer_errors = timed
    try:
        start = time.perf_counter()
        result = convert(model, target=cg.TARGET, calibration=calib, allow_lossy=True)
        seconds = time.perf_counter() - start
    finally:
        q.layer_errors = widen.layer_errors = original
    return seconds, spent[0], (result.report["quantization"].get("report") or {}).get("guard") or {}


def main(argv=None) -> int:
    import convert_goals as cg
    from aims import Aims

    from converters.quantize import measure

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true")
    p.add_argument("--pairs", type=int, default=1, help="A / B pairs (einsum sums, then OpenBLAS ones)")
    args = p.parse_args(argv)
    if args.pairs < 1:
        p.error(f"--pairs must be >= 1, not {args.pairs}")
    model, calib, _ = cg.build("yolo", small=args.small)
    runs = {"einsum": [], "OpenBLAS": []}
    guards_met = []
    original = measure.dot
    for _ in range(args.pairs):
        for name, fn in (("einsum", original), ("OpenBLAS", _blas_dot)):
            measure.dot = fn
            try:
                seconds, in_layer_errors, guard = _timed_convert(cg, model, calib)
            finally:
                measure.dot = original
            runs[name].append(seconds)
            guards_met.append(guard.get("met"))
            print(f"{name:>8}: convert {seconds:6.1f} s, layer_errors {in_layer_errors:6.1f} s; widened "
                  f"{(guard.get('widened_count') or {}).get('ops', 0)} op(s), goal met {guard.get('met')}",
                  flush=True)
    a, b = min(runs["einsum"]), min(runs["OpenBLAS"])
    size = "small" if args.small else "full"
    print(f"yolo-like {size} default int8 conversion: {a:.1f} s with einsum sums, {b:.1f} s through OpenBLAS: "
          f"ratio {a / b:.2f} (min of {args.pairs}, interleaved)")
    aims = Aims("convert_search", "python benchmarks/convert_search.py" + (" --small" if args.small else ""))
    aims.single(f"default int8 search <= {SEARCH_GOAL_S:g} s", a <= SEARCH_GOAL_S,
                f"{a:.1f} s, yolo-like {size}, einsum sums, min of {args.pairs}", section=size)
    unknown = sum(m is None for m in guards_met)
    aims.single("the accuracy guard's goal met on every run", None if unknown else all(guards_met),
                f"{sum(m is True for m in guards_met)}/{len(guards_met)} runs" +
                (f"; {unknown} without a guard record" if unknown else ""), section=size)
    return aims.exit_status()


if __name__ == "__main__":
    raise SystemExit(main())
