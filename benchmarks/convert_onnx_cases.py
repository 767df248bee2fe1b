"""ONNX backend cases beyond the PyTorch-export ones tests/test_onnx_backend_data.py holds to >= 97%: the 'light'
real networks (weights as ConstantOfShape, the expected output stored for the backend runner's input arange / n),
the 'simple' models, and the node cases onnx generates in memory (``collect_testcases``: one op, every attribute
form, many types TFLite has no tensor type for). Each converts float (``quantize="none"``) and runs in our
interpreter against the case's expected outputs; a case either passes, is refused (the first line says why), or is
wrong (converted, different values -- the figure that must stay 0) or crashes (at run time, or a traceback).

    python benchmarks/convert_onnx_cases.py                 # all three suites (node: ~1,900 cases, minutes)
    python benchmarks/convert_onnx_cases.py --only light,simple

Tolerance: float32 within 1e-4 of the expected range (the test's); float16 / bfloat16 outputs within 1e-3 (onnx's
backend runner's rtol). A graph input a case feeds as a sequence or optional is "refused (sequence input)": TFLite
models take tensors.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import glob
import io
import signal
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CASE_SECONDS = 180  # a case that converts or runs longer is counted as "timeout" (light alexnet: 55 s loaded)
FLOAT32_TOLERANCE = 1e-4
HALF_TOLERANCE = 1e-3


class _Timeout(Exception):
    pass


def _compare(got: list, expected: list) -> str | None:
    """Why ``got`` is not ``expected`` (one line), or None."""
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected)):
        e = np.asarray(e)
        half = e.dtype == np.float16 or e.dtype.name == "bfloat16"
        if e.dtype == np.float64:
            with np.errstate(over="ignore", under="ignore"):
                e = e.astype(np.float32)
        if g.size != e.size:
            return f"output {k}: shape {g.shape}, expected {e.shape}"
        if e.dtype.kind in "biu":
            if not np.array_equal(g.reshape(e.shape).astype(np.int64), e.astype(np.int64)):
                return f"output {k}: integers differ"
            continue
        g, e = g.astype(np.float64).reshape(e.shape), e.astype(np.float64)
        nan, fin = np.isnan(e), np.isfinite(e)
        if not np.array_equal(nan, np.isnan(g)) or not np.array_equal(e[~fin & ~nan], g[~fin & ~nan]):
            return f"output {k}: NaN / inf where the expected output has none (or the reverse)"
        scale = max(float(np.abs(e[fin]).max()) if fin.any() else 0.0, 1e-6)
        err = float(np.abs(g[fin] - e[fin]).max() / scale) if fin.any() else 0.0
        if not err <= (HALF_TOLERANCE if half else FLOAT32_TOLERANCE):
            return f"output {k}: max error {err:.1e} of its range"
    return None


def run_case(proto, inputs: list, expected: list) -> tuple[str, str]:
    """(outcome, why): outcome pass / refused / wrong / crash."""
    from converters import convert
    from edge_sdk import ConversionError, Interpreter

    from onnx import numpy_helper

    def array(x):  # a case's values may be TensorProto (float16 / bfloat16 data), as onnx's own runner reads them
        if x is None or isinstance(x, (list, tuple)):
            return None
        return numpy_helper.to_array(x) if hasattr(x, "data_type") else np.asarray(x)

    inputs, expected = [array(x) for x in inputs], [array(x) for x in expected]
    if any(x is None for x in inputs + expected):
        return "refused", "a sequence or optional value (TFLite models take and give tensors)"
    try:
        result = convert(proto, quantize="none")
    except ConversionError as exc:
        return "refused", (list(exc.problems) or [str(exc)])[0][:200]
    it = Interpreter(model_content=result.tflite)
    it.allocate_tensors()
    details = it.get_input_details()
    if len(details) != len(inputs):
        return "refused", f"{len(details)} inputs for {len(inputs)} arrays (an input folded or pinned)"
    try:
        resized = False
        for d, x in zip(details, inputs):  # every resize first: allocate_tensors() drops the values set before it
            if tuple(d["shape"]) != x.shape:
                signature = list(d.get("shape_signature", d["shape"]))
                if -1 not in signature:  # a static input (a 0-size dim is stored as 1): the case's shape is not it
                    return "refused", f"input '{d['name']}' is static at {list(d['shape'])}; the case feeds {x.shape}"
                it.resize_tensor_input(d["index"], list(x.shape))
                resized = True
        if resized:
            it.allocate_tensors()
        for d, x in zip(details, inputs):
            it.set_tensor(d["index"], np.asarray(x).astype(d["dtype"]))
        it.invoke()
    except Exception as exc:  # noqa: BLE001 -- a run-time refusal (negative indices, a resize it cannot take)
        return "crash", f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    why = _compare([np.array(it.get_tensor(d["index"])) for d in it.get_output_details()], expected)
    return ("wrong", why) if why else ("pass", "")


def _pb(path: str) -> np.ndarray:
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def light_cases():
    import onnx
    from onnx.backend.test.runner import Runner

    data = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    for path in sorted(data.glob("*.onnx")):
        proto = onnx.load(path)
        inits = {i.name for i in proto.graph.initializer}
        x_info = [i for i in proto.graph.input if i.name not in inits][0]
        x = Runner.generate_dummy_data(x_info, seed=0, name=path.stem, random=False)
        yield path.stem, proto, [x], [_pb(str(path)[:-5] + "_output_0.pb")]


def simple_cases():
    import onnx

    data = Path(onnx.__file__).parent / "backend" / "test" / "data" / "simple"
    for case in sorted(data.glob("test_*")):
        sets = case / "test_data_set_0"
        ins = [_pb(p) for p in sorted(glob.glob(str(sets / "input_*.pb")), key=lambda p: int(p[:-3].rsplit("_", 1)[1]))]
        outs = [_pb(p) for p in sorted(glob.glob(str(sets / "output_*.pb")), key=lambda p: int(p[:-3].rsplit("_", 1)[1]))]
        yield case.name, onnx.load(case / "model.onnx"), ins, outs


def node_cases():
    from onnx.backend.test.case.node import collect_testcases

    for case in collect_testcases():
        if case.kind == "node" and case.data_sets:
            ins, outs = case.data_sets[0]
            yield case.name, case.model, list(ins), list(outs)


SUITES = {"light": light_cases, "simple": simple_cases, "node": node_cases}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="", help="comma-separated suites (" + ", ".join(SUITES) + ")")
    args = p.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(SUITES)
    warnings.filterwarnings("ignore")

    def timeout(*_):
        raise _Timeout

    signal.signal(signal.SIGALRM, timeout)
    for suite in names:
        outcomes, notable = collections.Counter(), []
        with contextlib.redirect_stderr(io.StringIO()):  # onnx's case generators warn; our progress lines
            cases = list(SUITES[suite]())
        for name, proto, ins, outs in cases:
            signal.alarm(CASE_SECONDS)
            try:
                with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                    outcome, why = run_case(proto, ins, outs)
            except _Timeout:
                outcome, why = "timeout", f"over {CASE_SECONDS} s"
            except Exception as exc:  # noqa: BLE001 -- a converter traceback: counted and shown, the run goes on
                outcome, why = "crash", f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            finally:
                signal.alarm(0)
            outcomes[outcome] += 1
            if outcome in ("wrong", "crash", "timeout"):
                notable.append(f"  {outcome:8s} {name}: {why}")
        total = sum(outcomes.values())
        print(f"{suite}: {outcomes['pass']} of {total} pass ({100 * outcomes['pass'] / max(total, 1):.1f}%); "
              + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()) if k != "pass"))
        print("\n".join(notable) if notable else "  no wrong outputs, no run-time crashes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
