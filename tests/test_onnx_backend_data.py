"""The PyTorch-export cases of the ONNX backend test data that ships inside the ``onnx`` package
(``onnx/backend/test/data/pytorch-converted`` and ``pytorch-operator``: model.onnx, inputs and expected
outputs): each converts (float) and matches its expected outputs, or is refused for a reason listed in
``REFUSED`` below. A case that starts passing or fails differently fails this test, so the list stays true.
(This onnx release ships no ``node`` cases; when one does, they run too.)

float64 cases run in float32, as onnx2tf and TFLite's converter write them (the conversion says so in a note): their
expected outputs are compared as float32 holds them (PyTorch's uninitialised test data reaches 1e228: inf in float32,
1e-310: zero), within the same tolerance; an inf must be the same inf. ``F64_IN_F32`` lists the cases whose data
float32 cannot hold: they pass only so."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper

from converters import convert
from edge_sdk import ConversionError, Interpreter
from tests.conftest import needs_c_runtime

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
SUITES = ("pytorch-converted", "pytorch-operator", "node")
TOLERANCE = 1e-4  # max |ours - expected| relative to the largest expected magnitude

GOAL = 0.97  # issue 24: ONNX backend cases >= 97%
REFUSED: dict[str, str] = {}
# (add_size1_broadcast passed before: its float64 values below float32's smallest normal made no difference)
F64_IN_F32 = {"test_operator_add_broadcast", "test_operator_add_size1_right_broadcast",
              "test_operator_add_size1_singleton_broadcast", "test_operator_addconstant",
              "test_operator_add_size1_broadcast"}
F64_NOTE = "float64 values computed in float32"


def _cases():
    out = []
    for suite in SUITES:
        out += sorted(glob.glob(os.path.join(DATA, suite, "test_*")))
    return out


def _load(case, prefix):
    files = glob.glob(os.path.join(case, "test_data_set_0", f"{prefix}_*.pb"))
    arrays = []
    for f in sorted(files, key=lambda p: int(p.rsplit("_", 1)[1][:-3])):
        t = onnx.TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        arrays.append(numpy_helper.to_array(t))
    return arrays


def _in_float32(x: np.ndarray) -> tuple[np.ndarray, bool]:
    """``x`` as the float32 model holds it (float64: rounded to float32, beyond its range inf / 0), and whether
    that changed more than float32 rounding would (a value above float32's largest or below its smallest normal)."""
    x = np.asarray(x)
    if x.dtype != np.float64:
        return x, False
    with np.errstate(over="ignore", under="ignore"):
        y = x.astype(np.float32)
    finite = np.isfinite(x)
    lost = bool(np.any(np.isinf(y) & finite) or np.any((x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)))
    return y, lost


def _run_case(case):
    """None when the case passes, "f64" when it passes with float64 data float32 cannot hold, else (kind, message)."""
    ins, expected = _load(case, "input"), _load(case, "output")
    try:
        result = convert(os.path.join(case, "model.onnx"), quantize="none")
    except ConversionError as exc:
        return "refused", "; ".join([str(exc).splitlines()[0]] + list(exc.problems))
    it = Interpreter(model_content=result.tflite)
    it.allocate_tensors()
    lost = False
    for d, x in zip(it.get_input_details(), ins):
        x, changed = _in_float32(x)
        lost |= changed
        it.set_tensor(d["index"], np.asarray(x).astype(d["dtype"]))
    it.invoke()
    got = [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]
    if len(got) != len(expected):
        return "wrong", f"{len(got)} outputs, expected {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected)):
        if g.size != e.size:
            return "wrong", f"output {k}: shape {g.shape}, expected {e.shape}"
        e, changed = _in_float32(e)
        lost |= changed
        g, e = g.astype(np.float64).reshape(e.shape), e.astype(np.float64)
        nan, inf = np.isnan(e), np.isinf(e)
        if not np.array_equal(nan, np.isnan(g)):
            return "wrong", f"output {k}: NaN where the expected output has none (or the reverse)"
        if not np.array_equal(e[inf], g[inf]) or np.isinf(g[~inf]).any():
            return "wrong", f"output {k}: inf where the expected output has none (or the reverse)"
        close = ~nan & ~inf
        scale = max(float(np.abs(e[close]).max()) if close.any() else 0.0, 1e-6)
        err = float(np.abs(g[close] - e[close]).max() / scale) if close.any() else 0.0
        if not err <= TOLERANCE:
            return "wrong", f"output {k}: max error {err:.2e} of its range"
    if any(x.dtype == np.float64 for x in ins + expected) and F64_NOTE not in " ".join(result.report["notes"]):
        return "wrong", "float64 data computed in float32 without the report saying so"
    return "f64" if lost else None


def test_pytorch_export_cases():
    cases = _cases()
    assert len(cases) >= 117
    passed, in_float32, refused, wrong = [], [], {}, {}
    for case in cases:
        name = os.path.basename(case)
        r = _run_case(case)
        if r is None or r == "f64":
            passed.append(name)
            if r == "f64":
                in_float32.append(name)
        elif r[0] == "refused":
            refused[name] = r[1]
        else:
            wrong[name] = r[1]
    print(f"ONNX backend cases: {len(passed)} of {len(cases)} pass ({100 * len(passed) / len(cases):.1f}%; "
          f"{len(in_float32)} with float64 data float32 cannot hold, compared as float32 holds it)")
    assert not wrong, wrong
    assert set(refused) == set(REFUSED), {"newly refused": sorted(set(refused) - set(REFUSED)),
                                          "now passing": sorted(set(REFUSED) - set(refused))}
    for name, why in REFUSED.items():
        assert why in refused[name], (name, refused[name])
    assert set(in_float32) == F64_IN_F32, sorted(set(in_float32) ^ F64_IN_F32)
    assert len(passed) >= 112, len(passed)
    assert len(passed) >= GOAL * len(cases), (len(passed), len(cases))


@needs_c_runtime
def test_int64_graph_runs_in_both_runtimes():
    """test_operator_non_float_params (int64 Add and Mul) converts (float conversion of an int64 graph) and runs
    in the interpreter, the C runtime and LiteRT's reference kernels with the expected outputs, exactly."""
    from edge_sdk.runtime import c_build, c_interpreter
    from tests.peers import run_litert

    case = os.path.join(DATA, "pytorch-operator", "test_operator_non_float_params")
    ins, expected = _load(case, "input"), _load(case, "output")
    assert ins and all(x.dtype == np.int64 for x in ins)
    tflite = convert(os.path.join(case, "model.onnx"), quantize="none").tflite
    c_build.build()
    runs = {}
    for name, it in (("python", Interpreter(model_content=tflite)), ("c", c_interpreter.CInterpreter(model_content=tflite))):
        it.allocate_tensors()
        for d, x in zip(it.get_input_details(), ins):
            it.set_tensor(d["index"], x)
        it.invoke()
        runs[name] = [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]
    runs["litert"] = run_litert(tflite, ins)
    for name, got in runs.items():
        assert len(got) == len(expected), name
        for g, e in zip(got, expected):
            assert g.dtype == np.int64, name
            np.testing.assert_array_equal(g.reshape(e.shape), e, err_msg=name)
