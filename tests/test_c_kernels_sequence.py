"""The C runtime's stateful and sequence kernels (firmware_c/src/kernels/: svdf, unidirectional_sequence_lstm,
stateful (VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE / CALL_ONCE)) and FULLY_CONNECTED's int16x8 path:
bit-exact with our Python interpreter and TFLM over 1 and 3 invokes (state kept between invokes), with
edge_reset_state restoring the first invoke's result; then the real models that the C runtime runs whole."""

from __future__ import annotations

import shutil
import zlib

import numpy as np
import pytest

from edge_sdk import Interpreter
from tests.oprunner import T, op_model
from tests.peers import run_tflm
from tests.test_kernels_sequence import LSTM_CASES, _feed, _lstm_specs, _real_ops, _svdf_specs, run_interpreter
from tests.test_kernels_stateful import accumulator_model, tflm_stream
from tests.test_kernels_stateful import run_ours as stateful_run_ours

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None,
                                reason="the C runtime needs gcc and make")


@pytest.fixture(scope="module")
def backend():
    from edge_sdk.runtime import c_build, c_interpreter

    c_build.build()
    return c_interpreter


def run_c(backend, model: bytes, feeds, invocations=1, check_reset=True):
    """The C backend's outputs after ``invocations`` invokes; with check_reset, edge_reset_state followed by
    one invoke must give the first invoke's outputs again."""
    c = backend.CInterpreter(model_content=model)
    c.allocate_tensors()

    def invoke():
        for d, x in zip(c.get_input_details(), feeds):
            c.set_tensor(d["index"], np.ascontiguousarray(x))
        c.invoke()
        return [np.array(c.get_tensor(d["index"])) for d in c.get_output_details()]

    first = outs = invoke()
    for _ in range(invocations - 1):
        outs = invoke()
    if check_reset:
        c.reset_all_variables()
        for a, b in zip(first, invoke()):
            np.testing.assert_array_equal(a, b, err_msg="edge_reset_state did not restore the first invoke")
    return outs


def same(ours, theirs, float_tol=False, what=""):
    assert len(ours) == len(theirs), what
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.shape == b.shape and a.dtype == b.dtype, (what, i, a.shape, a.dtype, b.shape, b.dtype)
        if float_tol:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{what} output {i}")
        else:
            diff = a.astype(np.int64) - b.astype(np.int64)
            assert not diff.any(), f"{what} output {i}: {int((diff != 0).sum())} of {a.size} differ, max {int(np.abs(diff).max())}"


# ------------------------------------------------------------------------------------------------ SVDF

@pytest.mark.parametrize("state_type", ["INT16", "INT8", "FLOAT32"])
@pytest.mark.parametrize("rank", [1, 2])
def test_svdf_over_invokes(backend, state_type, rank):
    rng = np.random.default_rng(7 + rank)
    ins, outs = _svdf_specs(rng, state_type, rank=rank)
    model = op_model("SVDF", ins, outs, options={"rank": rank, "fused_activation_function": "RELU"})
    if state_type == "FLOAT32":
        feed = rng.standard_normal(ins[0].shape).astype(np.float32)
    else:
        feed = rng.integers(-128, 128, ins[0].shape, dtype=np.int8)
    for k in (1, 3):
        got = run_c(backend, model, [feed], k)
        same(got, run_tflm(model, [feed], invocations=k), state_type == "FLOAT32", f"tflm k={k}")
        same(got, run_interpreter(model, [feed], k), state_type == "FLOAT32", f"python k={k}")
    assert len(np.unique(got[0])) > 1  # not a constant output


@pytest.mark.parametrize("state_type", ["INT16", "INT8", "FLOAT32"])
@pytest.mark.parametrize("n_input,n_memory,rank", [(37, 19, 1), (33, 1, 3), (16, 8, 2)])
def test_svdf_dot_blocks_and_tails(backend, state_type, n_input, n_memory, rank):
    # the integer dot products run in blocks of 16 (int8) / 8 (int16) elements plus a tail, and the state
    # moves one step in a single shift of the whole buffer (n_memory 1: every slot is replaced)
    rng = np.random.default_rng(n_input + n_memory)
    ins, outs = _svdf_specs(rng, state_type, batch=2, n_input=n_input, n_filter=6, n_memory=n_memory, rank=rank)
    if state_type == "INT16":  # a wider output scale: these sums saturate _svdf_specs' int8 output
        outs = [T(outs[0].shape, "INT8", 20.0, -3)]
    model = op_model("SVDF", ins, outs, options={"rank": rank, "fused_activation_function": "NONE"})
    if state_type == "FLOAT32":
        feed = rng.standard_normal(ins[0].shape).astype(np.float32)
    else:
        feed = rng.integers(-128, 128, ins[0].shape, dtype=np.int8)
    got = run_c(backend, model, [feed], 4)
    same(got, run_tflm(model, [feed], invocations=4), state_type == "FLOAT32", "tflm")
    same(got, run_interpreter(model, [feed], 4), state_type == "FLOAT32", "python")
    assert len(np.unique(got[0])) > 2


# ------------------------------------------------------------------------------------------------ LSTM

@pytest.mark.parametrize("act_type,time_major,cell_clip,cell_scale", LSTM_CASES)
def test_lstm_over_invokes(backend, act_type, time_major, cell_clip, cell_scale):
    rng = np.random.default_rng(11)
    ins, outs = _lstm_specs(rng, act_type, time_major=time_major, cell_scale=cell_scale)
    model = op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs,
                     options={"fused_activation_function": "TANH", "cell_clip": cell_clip, "time_major": time_major})
    if act_type == "FLOAT32":
        feed = rng.standard_normal(ins[0].shape).astype(np.float32)
    else:
        lim = 20000 if act_type == "INT16" else 127
        feed = rng.integers(-lim, lim + 1, ins[0].shape).astype(np.int16 if act_type == "INT16" else np.int8)
    for k in (1, 3):
        got = run_c(backend, model, [feed], k)
        same(got, run_tflm(model, [feed], invocations=k), act_type == "FLOAT32", f"tflm k={k}")
        same(got, run_interpreter(model, [feed], k), act_type == "FLOAT32", f"python k={k}")
    assert len(np.unique(got[0])) > 5


def test_lstm_refuses_a_peephole_variant(backend):
    from edge_sdk.errors import UnsupportedOpError

    rng = np.random.default_rng(13)
    ins, outs = _lstm_specs(rng, "FLOAT32")
    ins[9] = T((5,), "FLOAT32", data=np.zeros(5, np.float32))
    model = op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, options={"fused_activation_function": "TANH"})
    with pytest.raises(UnsupportedOpError, match="peephole"):
        backend.CInterpreter(model_content=model).allocate_tensors()


# ------------------------------------------------------------------------------------------------ real layers alone

@pytest.mark.parametrize("name,op", [
    ("keyword_scrambled.tflite", "SVDF"),
    ("keyword_scrambled_8bit.tflite", "SVDF"),
    ("micro_speech_lstm.tflite", "UNIDIRECTIONAL_SEQUENCE_LSTM"),
    ("trained_lstm_int8.tflite", "UNIDIRECTIONAL_SEQUENCE_LSTM"),
    ("dtln_noise_suppression.tflite", "UNIDIRECTIONAL_SEQUENCE_LSTM"),
    ("trained_lstm.tflite", "UNIDIRECTIONAL_SEQUENCE_LSTM"),
])
def test_real_layers_alone(backend, name, op):
    from tests.conftest import shared_model

    path = shared_model(f"tflite-micro/{name}")
    rng = np.random.default_rng(3)
    ops = _real_ops(path, op)
    if op == "SVDF":  # also with the scrambled ~1e9 biases shrunk, so outputs are not all saturated
        for ins, outs, opts in list(ops):
            quiet = list(ins)
            quiet[3] = T(ins[3].shape, "INT32", ins[3].scale, 0, data=ins[3].data.astype(np.int64) >> 22)
            ops.append((quiet, outs, opts))
    seen = []
    n = len(ops) // 2 if op == "SVDF" else len(ops)
    for ins, outs, opts in ops[:2] + ops[n:n + 2]:
        feed = _feed(ins[0], rng)
        model = op_model(op, ins, outs, options=opts)
        for k in (1, 3):
            got = run_c(backend, model, [feed], k, check_reset=k == 3)
            same(got, run_tflm(model, [feed], invocations=k), ins[0].type == "FLOAT32", f"{name} tflm k={k}")
        seen.append(got[0].ravel())
    assert len(np.unique(np.concatenate(seen))) > 8


# ------------------------------------------------------------------------------------------------ whole models

WHOLE = ["keyword_scrambled.tflite", "keyword_scrambled_8bit.tflite", "micro_speech_lstm.tflite",
         "trained_lstm_int8.tflite", "trained_lstm.tflite", "dtln_noise_suppression.tflite"]


@pytest.mark.parametrize("name", WHOLE)
def test_whole_models_through_c(backend, name):
    """Every SVDF / LSTM output is made a model output too (the classifiers' softmax saturates)."""
    from edge_sdk.model import read_model, write_model
    from tests.conftest import shared_model

    model = read_model(shared_model(f"tflite-micro/{name}"))
    assert backend.missing_ops(model) == []
    sg = model.subgraphs[0]
    for op in sg.operators:
        if model.op_name(op) in ("SVDF", "UNIDIRECTIONAL_SEQUENCE_LSTM") and op.outputs[0] not in sg.outputs:
            sg.outputs.append(op.outputs[0])
    data = write_model(model)
    probe = Interpreter(model_content=data)
    probe.allocate_tensors()
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    feeds = []
    for d in probe.get_input_details():
        if d["dtype"] == np.float32:
            feeds.append(rng.uniform(0, 1, tuple(d["shape"])).astype(np.float32))
        else:
            feeds.append(rng.integers(-40, 41, tuple(d["shape"])).astype(d["dtype"]))
    is_float = probe.get_output_details()[0]["dtype"] == np.float32
    c = backend.CInterpreter(model_content=data)
    c.allocate_tensors()
    plan = lambda p: ([(b.key, b.offset, b.size, b.first_use, b.last_use) for b in p.buffers], p.total)  # noqa: E731
    assert plan(c.arena_plan()) == plan(probe.arena_plan())  # the same tensor plan as the Python interpreter
    for k in (1, 3):
        got = run_c(backend, data, feeds, k, check_reset=k == 3)
        same(got, run_interpreter(data, feeds, k), is_float, f"{name} python k={k}")
        same(got, run_tflm(data, feeds, isolate=True, invocations=k), is_float, f"{name} tflm k={k}")


# ------------------------------------------------------------------------------------------------ resource variables

def _c_stream(backend, model, xs, reset_after=None):
    c = backend.CInterpreter(model_content=model)
    c.allocate_tensors()
    outs = []
    for k, x in enumerate(xs):
        if reset_after is not None and k == reset_after:
            c.reset_all_variables()
        c.set_tensor(c.get_input_details()[0]["index"], x)
        c.invoke()
        outs.append(np.array(c.get_tensor(c.get_output_details()[0]["index"])))
    return outs


@pytest.mark.parametrize("kw", [dict(), dict(type="INT8", q=(0.5, 3)), dict(type="INT16", q=(0.5, 0)),
                                dict(call_once=False)], ids=["float", "int8", "int16", "no-call-once"])
def test_resource_variables_accumulate_across_invokes(backend, kw):
    model = accumulator_model(**kw)
    assert backend.missing_ops(__import__("edge_sdk.model", fromlist=["read_model"]).read_model(model)) == []
    dt = {"FLOAT32": np.float32, "INT8": np.int8, "INT16": np.int16}[kw.get("type", "FLOAT32")]
    xs = [np.array(v, dt) for v in ([1, -2], [3, 4], [1, 1], [5, 6])]
    for reset_after in (None, 2):
        got = _c_stream(backend, model, xs, reset_after)
        want = stateful_run_ours(model, xs, reset_after)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    got = _c_stream(backend, model, xs)
    for g, t in zip(got, tflm_stream(model, xs)):
        np.testing.assert_array_equal(g, t)
    assert not np.array_equal(got[0], got[1])  # the state moved


# ------------------------------------------------------------------------------------------------ FC int16x8

FC16_CASES = [  # shape, units, per_channel, bias type, act
    ((2, 12), 5, False, "INT64", "NONE"),
    ((3, 20), 7, True, "INT64", "RELU"),
    ((1, 9), 4, False, None, "NONE"),
    ((2, 16), 6, True, "INT32", "NONE"),
]


@pytest.mark.parametrize("case", FC16_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-pc{int(c[2])}-{c[3]}-{c[4]}")
def test_fully_connected_int16x8(backend, case):
    shape, units, pc, btype, act = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    depth = shape[-1]
    wscale = rng.uniform(0.002, 0.02, units) if pc else 0.01
    x = T(shape, "INT16", scale=0.001, zero_point=0)
    w = T((units, depth), "INT8", scale=wscale, zero_point=0,
          data=rng.integers(-127, 128, (units, depth)).astype(np.int8))
    b = None
    if btype:
        bdt = np.int64 if btype == "INT64" else np.int32
        b = T((units,), btype, scale=0.001 * 0.01, zero_point=0, data=rng.integers(-20000, 20000, units).astype(bdt))
    y = T((shape[0], units), "INT16", scale=0.004, zero_point=0)
    opts = {"fused_activation_function": act}
    if btype is None:
        opts["quantized_bias_type"] = "INT64"
    model = op_model("FULLY_CONNECTED", [x, w, b], [y], options=opts, version=7)
    feed = rng.integers(-30000, 30000, shape).astype(np.int16)
    got = run_c(backend, model, [feed], 1, check_reset=False)
    same(got, run_interpreter(model, [feed], 1), what="python")
    same(got, run_tflm(model, [feed]), what="tflm")
    assert len(np.unique(got[0])) > 3
