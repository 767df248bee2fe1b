"""Fast paths against the step-by-step arithmetic they replace (bit-exact), and the BLAS threading switch.

* SOFTMAX / LOG_SOFTMAX integer kernels through tables over d = (row max) - x: every output equals the
  element-by-element fixed-point path, on random and adversarial rows (all equal, one hot, the extremes, long
  rows, many rows), several betas and input scales, int8->int8, int8->int16 and int16->int16; plus TFLM on
  the single-row and many-row shapes.
* edge_sdk.runtime.kernels.blas: the one place that limits BLAS threads, entered once per invoke.
* Float16 weights behind DEQUANTIZE (planner.folded_constants): computed once at prepare in both runtimes, out of
  the tensor plan; the C runtime's consumer packs them as it packs float32 weights (the same bytes out).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from edge_sdk.runtime.kernels import activations as act
from edge_sdk.runtime.kernels import blas
from edge_sdk.runtime.kernels import fixedpoint as fp
from tests.conftest import needs_c_runtime
from tests.oprunner import T, check_op, op_model

BETAS = (1.0, 0.5, 3.0, 0.1, 100.0, 1e-3)
SCALES = (0.1, 0.05, 0.5, 1 / 256, 2.0, 0.003, 30.0)


def _int8_rows(rng):
    """Shapes and values that stress the table path: one row and many, long rows, ties and extremes."""
    yield rng.integers(-128, 128, (1, 4))
    yield rng.integers(-128, 128, (6,))
    yield rng.integers(-128, 128, (1, 1, 300))
    yield rng.integers(-128, 128, (7, 3, 10))
    yield rng.integers(-128, 128, (40, 100))  # above the few-rows limit: vectorized reciprocal
    yield rng.integers(-128, 128, (30, 1))
    yield np.full((3, 17), 5)
    yield np.full((2, 1), -128)
    yield np.full((1, 4000), -128)
    yield np.tile(np.arange(-128, 128), (2, 1))
    yield rng.integers(126, 128, (1, 4095))  # the longest row the table path takes (sum just below 2**31)
    yield rng.integers(120, 128, (3, 4095))
    hot = np.full((5, 12), -128)
    hot[np.arange(5), rng.integers(0, 12, 5)] = 127
    yield hot
    spike = np.full((4, 255), -128)
    spike[:, 0] = 127
    yield spike
    yield np.where(rng.random((50, 64)) < 0.5, 127, -128)


def test_softmax_int8_table_equals_general():
    rng = np.random.default_rng(7)
    cases = [x.astype(np.int8) for x in _int8_rows(rng)]
    checked = 0
    for beta in BETAS:
        for scale in SCALES:
            multiplier, shift = act._softmax_scaling(beta, float(np.float32(scale)))
            diff_min = -act._input_radius(5, shift)
            for out_type, dtype in (("INT8", np.int8), ("INT16", np.int16)):
                general = act._softmax_int8_general(multiplier, shift, diff_min, out_type)
                for x in cases:
                    depth = x.shape[-1]
                    table = act._softmax_int8_table(multiplier, shift, diff_min, out_type, depth, x.size // depth)
                    assert table is not None
                    want, got = np.zeros(x.shape, dtype), np.full(x.shape, 99, dtype)
                    general([x], [want])
                    table([x], [got])
                    assert np.array_equal(got, want), (beta, scale, out_type, x.shape)
                    checked += 1
    assert checked == len(BETAS) * len(SCALES) * 2 * len(cases)


def test_softmax_int8_table_declines_rows_that_could_wrap():
    multiplier, shift = act._softmax_scaling(1.0, 0.1)
    diff_min = -act._input_radius(5, shift)
    assert act._softmax_int8_table(multiplier, shift, diff_min, "INT8", 4095, 1) is not None
    assert act._softmax_int8_table(multiplier, shift, diff_min, "INT8", 4096, 1) is None


def test_python_reciprocal_equals_vectorized():
    rng = np.random.default_rng(3)
    pow2 = 2 ** np.arange(19, 31)
    totals = np.concatenate([
        rng.integers(1 << 19, 1 << 31, 40000), np.arange(1 << 19, (1 << 19) + 2000),
        (1 << 31) - np.arange(1, 2000), pow2, pow2 - 1, pow2 + 1, [1, 2, 3, 12345],
    ]).astype(np.int64)
    inv, bits = fp.get_reciprocal(totals, 12)
    got = [act._py_reciprocal(t, 12) for t in totals.tolist()]
    assert [g[0] for g in got] == inv.tolist()
    assert [g[1] for g in got] == bits.tolist()
    rows = totals[:100].reshape(-1, 1)  # both sides of the few-rows limit
    for n in (1, act._FEW_ROWS, act._FEW_ROWS + 1, 100):
        r_inv, r_bits = act._row_reciprocals(rows[:n], 12)
        assert np.array_equal(r_inv, inv[:n].reshape(-1, 1)) and np.array_equal(r_bits, bits[:n].reshape(-1, 1))


def test_softmax_int16_table_equals_general():
    rng = np.random.default_rng(11)
    f32 = np.float32
    exp_lut = fp.lut_populate_int16(act._exp_float32, f32(10.0) / f32(65535), 32767, f32(2.0) / f32(65535), 0)
    recip_lut = fp.lut_populate_int16(lambda v: (f32(1) / (f32(1) + v)).astype(np.float32),
                                      f32(1.0) / f32(65535), -32768, f32(2.0) / f32(65535), 0)
    cases = [rng.integers(-32768, 32768, (5, 16)), rng.integers(-32768, 32768, (1, 300)), np.full((2, 9), 7),
             np.tile([-32768, 32767], (3, 4)), rng.integers(32000, 32768, (4, 50))]
    for scale in (0.001, 1 / 4096, 0.0002, 0.05):
        for beta in (1.0, 0.3, 2.0):
            multiplier, shift = act.quantize_multiplier(float(np.float32(scale)) * beta / (10.0 / 65535.0))
            slow = act._softmax_int16_run(multiplier, shift, exp_lut, recip_lut, table=False)
            fast = act._softmax_int16_run(multiplier, shift, exp_lut, recip_lut, table=True)
            for x in cases:
                x = x.astype(np.int16)
                want, got = np.zeros(x.shape, np.int16), np.full(x.shape, 99, np.int16)
                slow([x], [want])
                fast([x], [got])
                assert np.array_equal(got, want), (scale, beta, x.shape)


def test_log_softmax_int8_table_equals_general():
    rng = np.random.default_rng(5)
    cases = [x.astype(np.int8) for x in _int8_rows(rng)]
    for scale in SCALES:
        multiplier, shift = act._softmax_scaling(1.0, float(np.float32(scale)))
        rev_m, rev_s = act.quantize_multiplier((1 << (31 - shift)) / float(multiplier))
        diff_min = -act._input_radius(5, shift)
        slow = act._log_softmax_int8_run(multiplier, shift, rev_m, rev_s, diff_min, table=False)
        fast = act._log_softmax_int8_run(multiplier, shift, rev_m, rev_s, diff_min, table=True)
        for x in cases:
            want, got = np.zeros(x.shape, np.int8), np.full(x.shape, 99, np.int8)
            slow([x], [want])
            fast([x], [got])
            assert np.array_equal(got, want), (scale, x.shape)


@pytest.mark.parametrize("shape", [(1, 4), (1, 1, 300), (9, 20)])
def test_softmax_int8_against_tflm(shape):
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(-128, 128, shape).astype(np.int8)
    x.reshape(-1, shape[-1])[0, :2] = [127, -128]
    for beta, (si, zi) in [(1.0, (0.1, 0)), (0.5, (0.05, -20)), (3.0, (0.5, 10))]:
        for out in (("INT8", 1 / 256, -128), ("INT16", 1 / 65536, -32768)):
            model = op_model("SOFTMAX", [T(shape, "INT8", si, zi)], [T(shape, *out)], {"beta": beta})
            check_op(model, [x], peer="tflm")


# ---------------------------------------------------------------- BLAS threads


def _fc_model() -> bytes:
    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, (8, 16)).astype(np.int8)
    return op_model("FULLY_CONNECTED", [T((1, 16), "INT8", 0.1, 0), T((8, 16), "INT8", 0.05, 0, data=w)],
                    [T((1, 8), "INT8", 0.2, 3)])


def _limit_seen_by_kernels(interp) -> list[int]:
    """Wrap the first step so that it records the BLAS limit in force while kernels run."""
    seen = []
    steps = interp._p.steps[0]
    fn, ins, outs = steps[0]

    def spy(inputs, outputs):
        seen.append(blas.current_limit())
        fn(inputs, outputs)

    steps[0] = (spy, ins, outs)
    return seen


@pytest.mark.skipif(not blas.available(), reason="numpy's bundled OpenBLAS not found: the switch is a no-op")
@pytest.mark.parametrize("threads, want", [(None, 1), (1, 1), (3, 3)])
def test_invoke_runs_under_the_interpreters_thread_limit(threads, want):
    from edge_sdk import Interpreter

    before = blas.current_limit()
    interp = Interpreter(model_content=_fc_model(), num_threads=threads)
    interp.allocate_tensors()
    seen = _limit_seen_by_kernels(interp)
    interp.invoke()
    interp.invoke_profiled()
    assert seen == [want, want]
    assert blas.current_limit() == before  # numpy outside invoke keeps its own setting


@pytest.mark.skipif(not blas.available(), reason="numpy's bundled OpenBLAS not found: the switch is a no-op")
def test_limit_restored_when_a_kernel_fails():
    from edge_sdk import Interpreter

    before = blas.current_limit()
    interp = Interpreter(model_content=_fc_model())
    interp.allocate_tensors()
    _, ins, outs = interp._p.steps[0][0]

    def broken(inputs, outputs):
        raise ZeroDivisionError("kernel bug")

    interp._p.steps[0][0] = (broken, ins, outs)
    with pytest.raises(RuntimeError, match="node 0 .*ZeroDivisionError"):
        interp.invoke()
    assert blas.current_limit() == before


@pytest.mark.parametrize("bad, message", [(0, "num_threads should >= 1"), (-1, "num_threads should >= 1"),
                                          ("2", "type of num_threads should be int"),
                                          (1.0, "type of num_threads should be int")])
def test_num_threads_checked_as_litert_does(bad, message):
    from edge_sdk import Interpreter

    with pytest.raises(ValueError, match=message):
        Interpreter(model_content=_fc_model(), num_threads=bad)


@pytest.mark.skipif(not blas.available(), reason="numpy's bundled OpenBLAS not found: the switch is a no-op")
def test_concurrent_limits_nest_and_restore():
    before = blas.current_limit()
    outer = blas.enter(4)
    assert blas.current_limit() == 4
    inner = blas.enter(2)  # the smallest active limit wins
    assert blas.current_limit() == 2
    blas.leave(outer)
    assert blas.current_limit() == 2
    blas.leave(inner)
    assert blas.current_limit() == before

    errors = []
    start = threading.Barrier(4)

    def worker(n):
        start.wait()
        try:
            for _ in range(300):
                token = blas.enter(n)
                limit = blas.current_limit()
                if not 1 <= limit <= n:
                    errors.append((n, limit))
                blas.leave(token)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in (1, 2, 3, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert blas.current_limit() == before


def test_no_blas_means_no_op(monkeypatch):
    monkeypatch.setattr(blas, "_setter", None)
    assert not blas.available()
    assert blas.enter(1) is None
    blas.leave(None)
    assert blas.current_limit() == -1
    x = np.arange(-8, 8, dtype=np.int8).reshape(1, 16)
    check_op(_fc_model(), [x], peer="tflm")  # invoke still runs, results unchanged


# ---------------------------------------------------------------- float16 weights folded at prepare


def _fp16_pair():
    """A FULLY_CONNECTED 48 -> 40 with float16 weights and bias behind DEQUANTIZE (LiteRT's float16 form, written by
    benchmarks/zoo.py's fp16_weights_model), and the same op with those values as float32 constants."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import zoo

    rng = np.random.default_rng(26)
    w = rng.standard_normal((40, 48)).astype(np.float16).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float16).astype(np.float32)
    plain = op_model("FULLY_CONNECTED", [T((1, 48), "FLOAT32"), T((40, 48), "FLOAT32", data=w),
                                         T((40,), "FLOAT32", data=b)], [T((1, 40), "FLOAT32")])
    return zoo.fp16_weights_model(plain), plain


@needs_c_runtime
def test_float16_weights_fold_out_of_the_plan_and_pack_once():
    from edge_sdk import Interpreter
    from edge_sdk.model import read_model
    from edge_sdk.runtime import planner
    from tests.conftest import c_backend

    fp16, plain = _fp16_pair()
    model = read_model(fp16)
    sg = model.subgraphs[0]
    assert [model.op_name(op) for op in sg.operators] == ["DEQUANTIZE", "DEQUANTIZE", "FULLY_CONNECTED"]
    folded = {key: n for key, n in planner.folded_constants(model, planner.declared_infos(model))}
    assert folded == {(0, sg.operators[0].outputs[0]): 40 * 48 * 4, (0, sg.operators[1].outputs[0]): 40 * 4}
    x = np.random.default_rng(1).standard_normal((1, 48)).astype(np.float32)
    py = Interpreter(model_content=fp16)
    py.allocate_tensors()
    assert not set(folded) & {b.key for b in py.arena_plan().buffers}  # no arena bytes for folded weights
    assert py.folded_bytes == sum(folded.values())
    backend = c_backend()
    outs, packed = {}, {}
    for name, data in (("fp16", fp16), ("plain", plain)):
        c = backend.CInterpreter(model_content=data)
        c.allocate_tensors()
        if name == "fp16":  # the same tensor plan as the Python interpreter's
            assert [(b.key, b.offset, b.size) for b in c.arena_plan().buffers] == \
                [(b.key, b.offset, b.size) for b in py.arena_plan().buffers]
        c.set_tensor(c.get_input_details()[0]["index"], x)
        for _ in range(2):  # a second invoke reads the folded values again (nothing overwrote them)
            c.invoke()
            outs.setdefault(name, []).append(np.array(c.get_tensor(c.get_output_details()[0]["index"])))
        packed[name] = c.packed_weights_bytes
    # the folded weights are persistent bytes counted with the packed copies; the FC then packs them as it packs
    # float32 constants (what it packs is the same on both models: the difference is the folded bytes, 8-aligned)
    assert packed["fp16"] - packed["plain"] == sum(-(-n // 8) * 8 for n in folded.values())
    for got in outs["fp16"]:
        np.testing.assert_array_equal(got, outs["plain"][0])
    py.set_tensor(py.get_input_details()[0]["index"], x)
    py.invoke()
    np.testing.assert_allclose(outs["fp16"][0], py.get_tensor(py.get_output_details()[0]["index"]), rtol=1e-5,
                               atol=1e-5)


def test_a_returned_dequantize_output_is_not_folded(runtime):
    """An output the subgraph returns keeps its arena bytes (the caller reads it there) in both runtimes."""
    from edge_sdk.model import read_model
    from edge_sdk.runtime import planner
    from tests.oprunner import run_on

    w16 = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float16)
    data = op_model("DEQUANTIZE", [T((3, 5), "FLOAT16", data=w16)], [T((3, 5), "FLOAT32")], version=3)
    model = read_model(data)
    assert planner.folded_constants(model, planner.declared_infos(model)) == []
    np.testing.assert_array_equal(run_on(runtime, data, [])[0], w16.astype(np.float32))
