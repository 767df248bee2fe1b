"""The default int8 search's time on a YOLOv8n-size graph (issue 24: the whole search <= 120 s on this machine), and
the accuracy guard's per-activation measurement (``layer_errors``) with its sums on this thread (``measure.dot``,
einsum) against the same sums through OpenBLAS (``a @ b``), interleaved A B A B, the minimum of each.

    python benchmarks/convert_search.py              # the YOLO-like stand-in at full size (160 px, 244 ops)
    python benchmarks/convert_search.py --small      # the size tests/test_convert_goals.py runs
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

    from converters.quantize import measure

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true")
    p.add_argument("--pairs", type=int, default=1, help="A / B pairs (einsum sums, then OpenBLAS ones)")
    args = p.parse_args(argv)
    model, calib, _ = cg.build("yolo", small=args.small)
    runs = {"einsum": [], "OpenBLAS": []}
    original = measure.dot
    for _ in range(args.pairs):
        for name, fn in (("einsum", original), ("OpenBLAS", _blas_dot)):
            measure.dot = fn
            try:
                seconds, in_layer_errors, guard = _timed_convert(cg, model, calib)
            finally:
                measure.dot = original
            runs[name].append(seconds)
            print(f"{name:>8}: convert {seconds:6.1f} s, layer_errors {in_layer_errors:6.1f} s; widened "
                  f"{(guard.get('widened_count') or {}).get('ops', 0)} op(s), goal met {guard.get('met')}",
                  flush=True)
    a, b = min(runs["einsum"]), min(runs["OpenBLAS"])
    print(f"yolo-like {'small' if args.small else 'full'} default int8 conversion: {a:.1f} s with einsum sums "
          f"(goal <= {SEARCH_GOAL_S:.0f} s: {'met' if a <= SEARCH_GOAL_S else 'NOT met'}), {b:.1f} s through "
          f"OpenBLAS: ratio {a / b:.2f} (min of {args.pairs}, interleaved)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
