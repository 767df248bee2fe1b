"""The PyTorch-export cases of the ONNX backend test data that ships inside the ``onnx`` package
(``onnx/backend/test/data/pytorch-converted`` and ``pytorch-operator``: model.onnx, inputs and expected
outputs): each converts (float) and matches its expected outputs, or is refused for a reason listed in
``REFUSED`` below. A case that starts passing or fails differently fails this test, so the list stays true.
(This onnx release ships no ``node`` cases; when one does, they run too.)"""

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

_F64 = "its float64 test data lies outside the float32 range (the converter works in float32)"
REFUSED = {
    "test_operator_add_broadcast": _F64, "test_operator_add_size1_right_broadcast": _F64,
    "test_operator_add_size1_singleton_broadcast": _F64, "test_operator_addconstant": _F64,
}


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


def _run_case(case):
    """None when the case passes, else (kind, message)."""
    ins, expected = _load(case, "input"), _load(case, "output")
    for x in ins:
        if x.dtype == np.float64 and x.size and np.abs(x).max() > np.finfo(np.float32).max:
            return "refused", _F64
    try:
        result = convert(os.path.join(case, "model.onnx"), quantize="none")
    except ConversionError as exc:
        return "refused", "; ".join([str(exc).splitlines()[0]] + list(exc.problems))
    it = Interpreter(model_content=result.tflite)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), ins):
        it.set_tensor(d["index"], np.asarray(x).astype(d["dtype"]))
    it.invoke()
    got = [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]
    if len(got) != len(expected):
        return "wrong", f"{len(got)} outputs, expected {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected)):
        if g.size != e.size:
            return "wrong", f"output {k}: shape {g.shape}, expected {e.shape}"
        g, e = g.astype(np.float64).reshape(e.shape), e.astype(np.float64)
        nan = np.isnan(e)
        if not np.array_equal(nan, np.isnan(g)):
            return "wrong", f"output {k}: NaN where the expected output has none (or the reverse)"
        scale = max(float(np.abs(e[~nan]).max()) if (~nan).any() else 0.0, 1e-6)
        err = float(np.abs(g[~nan] - e[~nan]).max() / scale) if (~nan).any() else 0.0
        if not err <= TOLERANCE:
            return "wrong", f"output {k}: max error {err:.2e} of its range"
    return None


def test_pytorch_export_cases():
    cases = _cases()
    assert len(cases) >= 117
    passed, refused, wrong = [], {}, {}
    for case in cases:
        name = os.path.basename(case)
        r = _run_case(case)
        if r is None:
            passed.append(name)
        elif r[0] == "refused":
            refused[name] = r[1]
        else:
            wrong[name] = r[1]
    assert not wrong, wrong
    assert set(refused) == set(REFUSED), {"newly refused": sorted(set(refused) - set(REFUSED)),
                                          "now passing": sorted(set(REFUSED) - set(refused))}
    for name, why in REFUSED.items():
        assert why in refused[name], (name, refused[name])
    assert len(passed) >= 112, len(passed)


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
