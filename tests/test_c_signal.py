"""Signal-library custom ops on the runtime grid (tests/conftest.py ``runtime``: the Python interpreter and the C
runtime), bit-exact with TFLM and, on the C runtime, with our Python interpreter.

SignalWindow, SignalEnergy, SignalFftAutoScale and SignalFilterBankSquareRoot as one-op models (custom options
encoded by flatbuffers' own FlexBuffers encoder, independently of both our readers), compared exactly with TFLM on
seeded inputs including the wrap-around corners (-32768, uint32/uint64 extremes). Malformed custom options
(truncated, garbage, missing keys, wrong value types) must be refused at load with a reason naming the problem on
both runtimes; the C runtime and the Python interpreter agree on which corrupted options load, and the C runtime
refuses them under the ASan/UBSan runner too (edge-run-c --fuzz): those two are C-only by nature.
"""

from __future__ import annotations

import struct
import subprocess

import numpy as np
import pytest
from flatbuffers import flexbuffers  # test-only: an encoder independent of our readers

from edge_sdk.errors import ModelError, UnsupportedOpError
from tests.conftest import needs_c_runtime
from tests.oprunner import T, assert_same, check_on, op_model, peer_outputs, refusal_on, run_on


def opts(**kw) -> bytes:
    return bytes(flexbuffers.Dumps(kw))


def run_py(model: bytes, inputs) -> list[np.ndarray]:
    return run_on("python", model, inputs)


def check(runtime: str, model: bytes, inputs, tflm: bool = True) -> list[np.ndarray]:
    """``runtime``'s outputs, equal to TFLM's (unless ``tflm`` is False) and on the C runtime to the Python
    interpreter's, exactly."""
    return check_on(runtime, model, inputs, peer=["tflm"] if tflm else [], c_equals_python=True)


def log_uniform_u32(rng, n, max_bits=32):
    bits = rng.integers(0, max_bits + 1, n)
    return np.array([int(rng.integers(0, 1 << b)) if b else 0 for b in bits], np.uint32)


# --------------------------------------------------------------------------------------------- per op
def test_window(rng, runtime):
    x = rng.integers(-32768, 32768, (3, 16)).astype(np.int16)
    x[0, :4] = [-32768, 32767, -32768, 32767]
    w = rng.integers(-32768, 32768, 16).astype(np.int16)
    w[:4] = [-32768, -32768, 32767, 32767]
    for shift in (0, 12, 15, 31):
        m = op_model("SignalWindow", [T((3, 16), "INT16"), T((16,), "INT16", data=w)], [T((3, 16), "INT16")],
                     custom_options=opts(shift=shift))
        y = check(runtime, m, [x])[0]
        if shift == 0:
            assert (y == 32767).any() and (y == -32768).any()  # the saturation is exercised


def test_window_non_constant_weights(rng, runtime):
    x = rng.integers(-32768, 32768, 24).astype(np.int16)
    w = rng.integers(-32768, 32768, 8).astype(np.int16)
    m = op_model("SignalWindow", [T((24,), "INT16"), T((8,), "INT16")], [T((24,), "INT16")],
                 custom_options=opts(shift=14))
    check(runtime, m, [x, w], tflm=False)  # TFLM's window kernel reads the weights at prepare (a constant there)


def test_energy(rng, runtime):
    x = rng.integers(-32768, 32768, 66).astype(np.int16)
    x[:4] = -32768  # (-32768)^2 * 2 = 2^31: TFLM's int32 sum wraps, read as uint32
    m = op_model("SignalEnergy", [T((66,), "INT16")], [T((33,), "UINT32")],
                 custom_options=opts(end_index=33, start_index=0))
    y = check(runtime, m, [x])[0]
    assert y[0] == 1 << 31
    m = op_model("SignalEnergy", [T((66,), "INT16")], [T((33,), "UINT32")],
                 custom_options=opts(end_index=30, start_index=2))
    c = run_on(runtime, m, [x])[0]
    if runtime == "c":
        assert_same([c], run_py(m, [x]), what="C vs Python")  # zeros outside [2, 30), as our Python kernel
    np.testing.assert_array_equal(c[2:30], peer_outputs(m, [x], "tflm")[0][2:30])  # TFLM leaves the rest unwritten
    assert not c[:2].any() and not c[30:].any() and c[2:30].all()


@pytest.mark.parametrize("case", ["random", "quiet", "zeros", "min", "full"])
def test_fft_auto_scale(rng, runtime, case):
    x = {"random": rng.integers(-3000, 3000, 32), "quiet": rng.integers(-7, 8, 32), "zeros": np.zeros(32),
         "min": np.r_[rng.integers(-5, 5, 10), -32768, rng.integers(-100, 100, 21)],
         "full": rng.integers(-32768, 32768, 32)}[case].astype(np.int16)
    m = op_model("SignalFftAutoScale", [T((32,), "INT16")], [T((32,), "INT16"), T((), "INT32")],
                 custom_options=b"")
    y, bits = check(runtime, m, [x])
    expected_bits = {"quiet": 12, "zeros": 0}
    if case in expected_bits:
        assert int(bits) == expected_bits[case]


def test_filter_bank_square_root(rng, runtime):
    x = np.array([int(v) << int(s) for v, s in zip(log_uniform_u32(rng, 40), rng.integers(0, 33, 40))], np.uint64)
    x[:8] = [0, 1, 2, (1 << 32) - 1, (1 << 64) - 1, 4294836225, 4294836226, (1 << 32)]
    for bits in (0, 3, 31, 35, -1):
        m = op_model("SignalFilterBankSquareRoot", [T((40,), "UINT64"), T((), "INT32")], [T((40,), "UINT32")],
                     custom_options=b"")
        check(runtime, m, [x, np.array(bits, np.int32)], tflm=0 <= bits < 32)  # a shift past 31 is undefined in C
    y = run_on(runtime, m, [x, np.array(0, np.int32)])[0]
    assert list(y[:5]) == [0, 1, 1, 0xFFFF, 0xFFFFFFFF]


# --------------------------------------------------------------------------------------------- refusals
WINDOW_IO = ([T((4,), "INT16"), T((4,), "INT16", data=np.ones(4))], [T((4,), "INT16")])


def window_model(custom_options: bytes) -> bytes:
    return op_model("SignalWindow", *WINDOW_IO, custom_options=custom_options)


def refusal(runtime: str, model: bytes) -> str:
    return str(refusal_on(runtime, model, ModelError))


def test_malformed_options_are_refused_with_a_reason(runtime):
    good = opts(shift=3)
    assert "missing" in refusal(runtime, window_model(b""))
    assert "malformed FlexBuffer" in refusal(runtime, window_model(b"\x01\x02\x03\x04"))
    assert "'shift' is missing" in refusal(runtime, window_model(opts(shfit=3)))
    assert "'shift'" in refusal(runtime, window_model(opts(shift="x")))
    assert "'shift'" in refusal(runtime, window_model(opts(shift=1.5)))
    assert "'shift'" in refusal(runtime, window_model(opts(shift=1 << 40)))
    # the two runtimes word these two differently (the Python reader names the value, and the root's kind)
    shift_range = {"c": "shift must be in 0..31", "python": "shift 32 must be in 0..31"}[runtime]
    assert shift_range in refusal(runtime, window_model(opts(shift=32)))
    not_a_map = {"c": "malformed FlexBuffer", "python": "root is a list, expected a map"}[runtime]
    assert not_a_map in refusal(runtime, window_model(bytes(flexbuffers.Dumps([1, 2]))))  # the root not a map
    assert "'end_index'" in refusal(runtime, op_model("SignalEnergy", [T((8,), "INT16")], [T((4,), "UINT32")],
                                                      custom_options=opts(start_index=0)))
    refusal_on(runtime, op_model("SignalWindow", [T((4,), "INT8", 0.1, 0), T((4,), "INT16", data=np.ones(4))],
                                 [T((4,), "INT16")], custom_options=good), UnsupportedOpError)  # a type it takes not


@needs_c_runtime
def test_c_and_python_agree_on_which_corrupted_options_load():
    """C-only by nature (the two runtimes compared): every truncation and many corruptions of a good map are
    loaded or refused, never a crash; Python agrees on which ones load, and the loaded ones give its outputs."""
    good = opts(shift=3)
    rng = np.random.default_rng(5)
    cases = [good[:n] for n in range(len(good))]
    for _ in range(150):
        bad = bytearray(good)
        for _ in range(2):
            bad[int(rng.integers(len(bad)))] = int(rng.integers(256))
        cases.append(bytes(bad))
    refused = disagree = 0
    for co in cases:
        m = window_model(co)
        c_ok = _loads(m, "c")
        refused += not c_ok
        py_ok = _loads(m, "python")
        disagree += c_ok != py_ok
        if c_ok and py_ok:
            x = np.arange(-2, 2, dtype=np.int16)
            assert_same(run_on("c", m, [x]), run_py(m, [x]), what="C vs Python")
    assert refused >= len(good)  # every truncation at least
    assert disagree == 0


def _loads(model: bytes, backend: str) -> bool:
    from edge_sdk import Interpreter

    try:
        if backend == "c":
            Interpreter(model_content=model, backend="c").allocate_tensors()
        else:
            Interpreter(model_content=model).allocate_tensors()
        return True
    except ModelError:
        return False


@needs_c_runtime
def test_malformed_options_under_asan(tmp_path, asan_runner):
    runner = asan_runner
    good = opts(shift=3)
    rng = np.random.default_rng(11)
    models = [window_model(good[:n]) for n in range(len(good) + 1)]
    for _ in range(60):
        bad = bytearray(good)
        for _ in range(3):
            bad[int(rng.integers(len(bad)))] = int(rng.integers(256))
        models.append(window_model(bytes(bad)))
    x16 = [T((16,), "INT16")]
    models += [op_model("SignalEnergy", x16, [T((8,), "UINT32")], custom_options=opts(end_index=8, start_index=0)),
               op_model("SignalFftAutoScale", x16, [T((16,), "INT16"), T((), "INT32")], custom_options=b""),
               op_model("SignalFilterBankSquareRoot", [T((8,), "UINT64"), T((), "INT32")], [T((8,), "UINT32")],
                        custom_options=b"")]
    blob = b"".join(struct.pack("<I", len(b)) + b for b in models)
    (tmp_path / "cases.bin").write_bytes(blob)
    proc = subprocess.run([str(runner), "--fuzz", str(tmp_path / "cases.bin")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    statuses = [int(line.split()[3]) for line in lines if " status " in line]
    assert lines[-1] == f"done {len(models)}" and len(statuses) == len(models)
    assert all(s != 0 for s in statuses[: len(good)])  # truncated options: refused
    assert statuses[len(good)] == 0  # the whole map loads and runs
    assert statuses[-3:] == [0, 0, 0]  # the other three ops load and run on the harness's inputs
