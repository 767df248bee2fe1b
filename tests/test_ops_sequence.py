"""SVDF and UNIDIRECTIONAL_SEQUENCE_LSTM (and FULLY_CONNECTED's int16x8 path) on both runtimes (the ``runtime``
grid: our Python kernels and firmware_c's svdf.c / unidirectional_sequence_lstm.c) against TFLite Micro, bit for bit
(float within 1e-5; the C runtime also within 1e-5 of Python, bit for bit for integers).

Single-op models are built with tests.oprunner and run for 1 and 3 invokes: the state variables carry over between
invokes, so the third invoke's output proves the state handling, and reset_all_variables (edge_reset_state in C)
must give the first invoke's result again. TFLM runs once per case (tests.oprunner.peer_outputs), whichever runtime
asks first. Python alone: the kernels run directly (a Node built from the same specs, state arrays kept across
evals), the table paths against the step paths, prepare's refusals. C alone: every op and the tensor plan of
the whole models. (Resource variables: tests/test_ops_stateful.py.)
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from edge_sdk.runtime.kernels import sequence
from edge_sdk.runtime.kernels.fixedpoint_lstm import SIGMOID_TABLE_UINT16, logistic_int16, tanh_int16
from edge_sdk.model.types import numpy_dtype
from tests.conftest import needs_c_runtime
from tests.nodes import make_node
from tests.oprunner import T, keep_python_outputs, op_model, peer_outputs, run_invokes
from tests.peers import run_tflm

# ----------------------------------------------------------------------------------------- helpers


def _initial(spec) -> np.ndarray:
    """A variable tensor as TFLM resets it: the zero point for int8, zeros otherwise."""
    value = spec.zero_point if spec.type == "INT8" and spec.zero_point is not None else 0
    return np.full(spec.shape, value, numpy_dtype(spec.type))


def run_kernel(op, inputs, outputs, options, feeds, invocations=1):
    """Our kernel on its own: prepare once, eval ``invocations`` times with the same feeds."""
    prepare = {"SVDF": sequence.prepare_svdf,
               "UNIDIRECTIONAL_SEQUENCE_LSTM": sequence.prepare_unidirectional_sequence_lstm}[op]
    node = make_node(op, inputs, outputs, options)
    run = prepare(node)
    arrays, k = [], 0
    for spec in inputs:
        if spec is None:
            arrays.append(None)
        elif spec.data is not None:
            arrays.append(np.asarray(spec.data, numpy_dtype(spec.type)).reshape(spec.shape))
        elif spec.is_variable:
            arrays.append(_initial(spec))
        else:
            arrays.append(np.asarray(feeds[k]).reshape(spec.shape))
            k += 1
    outs = [np.zeros(node.output_shapes[i], numpy_dtype(s.type)) for i, s in enumerate(outputs)]
    for _ in range(invocations):
        run(arrays, outs)
    return outs, node


def _same(ours, theirs, float_tol=False, what=""):
    assert len(ours) == len(theirs), what
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.shape == b.shape and a.dtype == b.dtype, (what, i, a.shape, a.dtype, b.shape, b.dtype)
        if float_tol:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{what} output {i}")
        else:
            diff = a.astype(np.int64) - b.astype(np.int64)
            assert not diff.any(), \
                f"{what} output {i}: {int((diff != 0).sum())} of {a.size} differ, max {int(np.abs(diff).max())}"


def check_invokes(runtime, model: bytes, feeds, invocations: int, float_tol: bool, peers=("tflm",),
                  isolate: bool = False, check_reset: bool = True) -> list[np.ndarray]:
    """``runtime``'s outputs after ``invocations`` invokes (the reset checked) against each peer's after as many,
    and the C case against the Python case's outputs (bit for bit for integers, 1e-5 for float)."""
    ours = run_invokes(runtime, model, feeds, invocations, check_reset=check_reset)
    for peer in peers:
        _same(ours, peer_outputs(model, feeds, peer, isolate=isolate, invocations=invocations), float_tol, peer)
    if runtime == "python":
        keep_python_outputs(model, feeds, ours, invocations)
    else:
        _same(ours, peer_outputs(model, feeds, "python", invocations=invocations), float_tol, "python")
    return ours


# --------------------------------------------------------------------- int16 sigmoid / tanh (all inputs)


def _logistic_scalar(v: int) -> int:
    x = v * 3
    a = abs(x)
    hi = a >> 9
    if hi >= 255:
        r = 0x7FFF << 10
    else:
        ua, ub = int(SIGMOID_TABLE_UINT16[hi]), int(SIGMOID_TABLE_UINT16[hi + 1])
        r = (ua << 9) + (a & 0x1FF) * (ub - ua)
    r = r + (1 << 9) if x >= 0 else (1 << 25) - r + (1 << 9) - 1
    r = (r >> 10) & 0xFFFF
    return r - 65536 if r >= 32768 else r


def _tanh_scalar(v: int, mult: int, shift: int) -> int:
    if mult == 0:
        mult, shift = 3 << shift, 0
    x = (v * mult + ((1 << (shift - 1)) if shift > 0 else 0)) >> shift
    a = abs(x)
    hi = a >> 8
    if hi >= 255:
        r = 0xFFFF << 8
    else:
        ua, ub = int(SIGMOID_TABLE_UINT16[hi]), int(SIGMOID_TABLE_UINT16[hi + 1])
        r = (ua << 8) + (a & 0xFF) * (ub - ua)
    r = r - (1 << 23) + (1 << 7) if x >= 0 else -r + (1 << 23) + (1 << 7) - 1
    return r >> 8


def test_int16_gate_functions_match_the_c_steps_on_every_input():
    xs = np.arange(-32768, 32768, dtype=np.int64)
    sample = xs[::7]
    assert np.array_equal(logistic_int16(sample), [_logistic_scalar(int(v)) for v in sample])
    for mult, shift in ((0, 0), (0, 1), (3, 8), (3, 1)):
        assert np.array_equal(tanh_int16(sample, mult, shift), [_tanh_scalar(int(v), mult, shift) for v in sample])
    sig = logistic_int16(xs)
    # Q3.12 in, Q0.15 out: sigmoid(+-8) = 0.99966 / 0.00034; sigmoid(0) = 0.5
    assert (sig.min(), sig.max(), sig[32768]) == (11, 32757, 16384)
    th = tanh_int16(xs)
    assert th[32768] == 0 and 32700 < th.max() <= 32767 and th.min() == -th.max()
    assert np.all(np.diff(sig) >= 0) and np.all(np.diff(th) >= 0)


def test_multiply_by_quantized_multiplier_as_one_floor():
    """The identity the table paths rest on, over every rounding tie the int32 path can produce."""
    from edge_sdk.runtime.kernels.quant import multiply_by_quantized_multiplier

    rng = np.random.default_rng(4)
    x = np.concatenate([np.arange(-5000, 5000), rng.integers(-(1 << 30), 1 << 30, 20000)]).astype(np.int64)
    for m, shift in [(1 << 30, -1), (1 << 30, -14), (1 << 30, 0), (1518500250, -1), (1518500250, -3),
                     (2147483647, -2), (1073741825, -5), (1789569707, 0), (1500000000, -20)]:
        m_, e, k, fix = sequence._floor_terms(m, shift)
        y = x * m_ + (1 << 30)
        ours = (x * m_ + k - np.where(y < 0, fix, 0)) >> (31 + e)
        assert np.array_equal(ours, multiply_by_quantized_multiplier(x, m, shift)), (m, shift)
    assert sequence._floor_terms(1 << 30, 1) is None and sequence._floor_terms(5, -3) is None


# ------------------------------------------------------------------------------------ SVDF, single op


def _svdf_specs(rng, state_type, batch=2, n_input=12, n_filter=8, n_memory=5, rank=2, bias=True):
    n_unit = n_filter // rank
    if state_type == "FLOAT32":
        f = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.5  # noqa: E731
        x = T((batch, n_input), "FLOAT32")
        ins = [x, T((n_filter, n_input), "FLOAT32", data=f(n_filter, n_input)),
               T((n_filter, n_memory), "FLOAT32", data=f(n_filter, n_memory)),
               T((n_unit,), "FLOAT32", data=f(n_unit)) if bias else None,
               T((batch, n_filter * n_memory), "FLOAT32", is_variable=True)]
        return ins, [T((batch, n_unit), "FLOAT32")]
    wide = state_type == "INT16"
    s_scale, s_zp = (0.004, 0) if wide else (0.3, 7)
    wt_scale = 0.002 if wide else 0.01
    wt_lim = 30000 if wide else 127
    ins = [T((batch, n_input), "INT8", 0.06, -5),
           T((n_filter, n_input), "INT8", 0.009, 0, data=rng.integers(-127, 128, (n_filter, n_input), dtype=np.int8)),
           T((n_filter, n_memory), state_type, wt_scale, 0,
             data=rng.integers(-wt_lim, wt_lim + 1, (n_filter, n_memory)).astype(numpy_dtype(state_type))),
           T((n_unit,), "INT32", np.float32(s_scale) * np.float32(wt_scale), 0,
             data=rng.integers(-3000, 3000, n_unit, dtype=np.int32)) if bias else None,
           T((batch, n_filter * n_memory), state_type, s_scale, s_zp, is_variable=True)]
    return ins, [T((batch, n_unit), "INT8", 0.2 if wide else 0.5, -3)]


def _svdf_case(state_type, rank):
    """(input specs, output specs, options, model, feed) of the SVDF grid case."""
    rng = np.random.default_rng(7 + rank)
    ins, outs = _svdf_specs(rng, state_type, rank=rank)
    opts = {"rank": rank, "fused_activation_function": "RELU"}
    model = op_model("SVDF", ins, outs, options=opts)
    if state_type == "FLOAT32":
        feed = rng.standard_normal(ins[0].shape).astype(np.float32)
    else:
        feed = rng.integers(-128, 128, ins[0].shape, dtype=np.int8)
    return ins, outs, opts, model, feed


@pytest.mark.parametrize("state_type", ["INT16", "INT8", "FLOAT32"])
@pytest.mark.parametrize("rank", [1, 2])
def test_svdf_single_op_matches_tflm_over_invokes(runtime, state_type, rank):
    _, _, _, model, feed = _svdf_case(state_type, rank)
    is_float = state_type == "FLOAT32"
    for k in (1, 3):
        ours = check_invokes(runtime, model, [feed], k, is_float)
    if is_float:
        _same(ours, peer_outputs(model, [feed], "litert", invocations=3), True, "litert")
    assert np.any(ours[0] != ours[0].flat[0])  # not a constant output


@pytest.mark.parametrize("state_type", ["INT16", "INT8", "FLOAT32"])
@pytest.mark.parametrize("rank", [1, 2])
def test_svdf_kernel_alone_matches_tflm_over_invokes(state_type, rank):
    ins, outs, opts, model, feed = _svdf_case(state_type, rank)
    for k in (1, 3):
        ours, _ = run_kernel("SVDF", ins, outs, opts, [feed], invocations=k)
        _same(ours, peer_outputs(model, [feed], "tflm", invocations=k), state_type == "FLOAT32", "tflm")
    if state_type == "FLOAT32":
        _same(ours, peer_outputs(model, [feed], "litert", invocations=3), True, "litert")
    assert np.any(ours[0] != ours[0].flat[0])


@pytest.mark.parametrize("state_type", ["INT16", "INT8", "FLOAT32"])
@pytest.mark.parametrize("n_input,n_memory,rank", [(37, 19, 1), (33, 1, 3), (16, 8, 2)])
def test_svdf_dot_blocks_and_tails(runtime, state_type, n_input, n_memory, rank):
    # the C integer dot products run in blocks of 16 (int8) / 8 (int16) elements plus a tail, and the state
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
    got = check_invokes(runtime, model, [feed], 4, state_type == "FLOAT32")
    assert len(np.unique(got[0])) > 2


SVDF_TABLE_CASES = [  # state type, rank, batch, input zp, state zp, output zp, bias shift (big biases wrap the int32 sum)
    ("INT16", 1, 1, -5, 0, -3, 0),
    ("INT16", 2, 3, 20, 300, 10, 0),
    ("INT8", 1, 2, -128, 7, 0, 0),
    ("INT8", 3, 1, 5, -20, 100, 0),
    ("INT16", 1, 2, 0, 0, 0, 19),
]


@pytest.mark.parametrize("k", range(len(SVDF_TABLE_CASES)))
def test_svdf_table_path_equals_the_general_path(k, monkeypatch):
    state_type, rank, batch, x_zp, s_zp, out_zp, bias_shift = SVDF_TABLE_CASES[k]
    rng = np.random.default_rng(50 + k)
    ins, outs = _svdf_specs(rng, state_type, batch=batch, n_filter=6 * rank, rank=rank)
    ins[0] = T(ins[0].shape, "INT8", 0.06, x_zp)
    ins[3] = T(ins[3].shape, "INT32", ins[3].scale, 0, data=ins[3].data.astype(np.int64) << bias_shift)
    ins[4] = T(ins[4].shape, state_type, ins[4].scale, s_zp, is_variable=True)
    outs = [T(outs[0].shape, "INT8", outs[0].scale * (100 if state_type == "INT16" else 4), out_zp)]
    opts = {"rank": rank}
    lo, hi, span = (-32768, 32767, 3000) if state_type == "INT16" else (-128, 127, 15)
    state0 = np.clip(s_zp + rng.integers(-span, span + 1, ins[4].shape), lo, hi).astype(numpy_dtype(state_type))
    feeds = [np.clip(x_zp + rng.integers(-40, 41, ins[0].shape), -128, 127).astype(np.int8) for _ in range(3)]

    def run(prepared):
        arrays = [None if sp is None or sp.data is None else np.asarray(sp.data, numpy_dtype(sp.type)).reshape(sp.shape)
                  for sp in ins]
        arrays[4] = state0.copy()
        results = []
        for feed in feeds:
            arrays[0] = feed
            out = np.zeros(outs[0].shape, np.int8)
            prepared(arrays, [out])
            results += [out, arrays[4].copy()]
        return results

    fast = sequence.prepare_svdf(make_node("SVDF", ins, outs, opts))
    assert getattr(fast, "table_path", None) in (("int32 wrap",) if bias_shift else ("plain", "int32 wrap"))
    monkeypatch.setattr(sequence, "_svdf_int_tables", lambda *a: None)
    slow = sequence.prepare_svdf(make_node("SVDF", ins, outs, opts))
    assert not hasattr(slow, "table_path")
    ours, ref = run(fast), run(slow)
    _same(ours, ref)
    if not bias_shift:  # (the wrapped sums saturate every output)
        assert len(np.unique(np.concatenate([r.ravel() for r in ref[::2]]))) > 5


# ------------------------------------------------------------------------------------ LSTM, single op


def _lstm_specs(rng, act_type, batch=2, steps=4, n_input=6, n_state=5, time_major=False, hidden_zp=3,
                cell_scale=2.0**-11):
    shape_x = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    shape_y = shape_x[:2] + (n_state,)
    if act_type == "FLOAT32":
        f = lambda *s: (rng.standard_normal(s) * 0.4).astype(np.float32)  # noqa: E731
        w = [T((n_state, n_input), "FLOAT32", data=f(n_state, n_input)) for _ in range(4)]
        r = [T((n_state, n_state), "FLOAT32", data=f(n_state, n_state)) for _ in range(4)]
        b = [T((n_state,), "FLOAT32", data=f(n_state)) for _ in range(4)]
        ins = [T(shape_x, "FLOAT32"), *w, *r, None, None, None, *b, None, None,
               T((batch, n_state), "FLOAT32", is_variable=True), T((batch, n_state), "FLOAT32", is_variable=True),
               None, None, None, None]
        return ins, [T(shape_y, "FLOAT32")]
    wide = act_type == "INT16"
    x_scale, x_zp = (0.0004, 0) if wide else (0.03, -7)
    h_scale, h_zp = (0.00004, 0) if wide else (0.008, hidden_zp)
    bias_type = "INT64" if wide else "INT32"
    w_scales = rng.uniform(0.004, 0.02, 8)

    def weight(k, cols):
        return T((n_state, cols), "INT8", float(w_scales[k]), 0,
                 data=rng.integers(-127, 128, (n_state, cols), dtype=np.int8))

    w = [weight(k, n_input) for k in range(4)]
    r = [weight(4 + k, n_state) for k in range(4)]
    b = [T((n_state,), bias_type, float(np.float32(x_scale) * np.float32(w_scales[k])), 0,
           data=rng.integers(-400, 400, n_state).astype(numpy_dtype(bias_type))) for k in range(4)]
    ins = [T(shape_x, act_type, x_scale, x_zp), *w, *r, None, None, None, *b, None, None,
           T((batch, n_state), act_type, h_scale, h_zp, is_variable=True),
           T((batch, n_state), "INT16", cell_scale, 0, is_variable=True), None, None, None, None]
    return ins, [T(shape_y, act_type, h_scale, h_zp)]


LSTM_CASES = [  # activations, time major, cell clip, cell state scale (its log2 sets the tanh input shift)
    ("INT8", False, 10.0, 2.0**-11),
    ("INT8", True, 0.0, 2.0**-11),
    ("INT8", False, 0.0, 2.0**-15),
    ("INT8", True, 3.0, 2.0**-8),
    ("INT16", False, 1.5, 2.0**-11),
    ("FLOAT32", False, 0.0, None),
    ("FLOAT32", True, 0.7, None),
]


def _lstm_case(act_type, time_major, cell_clip, cell_scale):
    """(input specs, output specs, options, model, feed) of the LSTM grid case."""
    rng = np.random.default_rng(11)
    ins, outs = _lstm_specs(rng, act_type, time_major=time_major, cell_scale=cell_scale)
    opts = {"fused_activation_function": "TANH", "cell_clip": cell_clip, "time_major": time_major}
    model = op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, options=opts)
    if act_type == "FLOAT32":
        feed = rng.standard_normal(ins[0].shape).astype(np.float32)
    else:
        lim = 20000 if act_type == "INT16" else 127
        feed = rng.integers(-lim, lim + 1, ins[0].shape).astype(numpy_dtype(act_type))
    return ins, outs, opts, model, feed


@pytest.mark.parametrize("act_type,time_major,cell_clip,cell_scale", LSTM_CASES)
def test_lstm_single_op_matches_tflm_over_invokes(runtime, act_type, time_major, cell_clip, cell_scale):
    _, _, _, model, feed = _lstm_case(act_type, time_major, cell_clip, cell_scale)
    is_float = act_type == "FLOAT32"
    for k in (1, 3):
        ours = check_invokes(runtime, model, [feed], k, is_float)
    if is_float:  # LiteRT's reference float LSTM agrees too
        _same(ours, peer_outputs(model, [feed], "litert", invocations=3), True, "litert")
    assert len(np.unique(ours[0])) > 5


@pytest.mark.parametrize("act_type,time_major,cell_clip,cell_scale", LSTM_CASES)
def test_lstm_kernel_alone_matches_tflm_over_invokes(act_type, time_major, cell_clip, cell_scale):
    ins, outs, opts, model, feed = _lstm_case(act_type, time_major, cell_clip, cell_scale)
    for k in (1, 3):
        ours, _ = run_kernel("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, opts, [feed], invocations=k)
        _same(ours, peer_outputs(model, [feed], "tflm", invocations=k), act_type == "FLOAT32", "tflm")
    if act_type == "FLOAT32":
        _same(ours, peer_outputs(model, [feed], "litert", invocations=3), True, "litert")
    assert len(np.unique(ours[0])) > 5


def test_lstm_refuses_a_malformed_peephole_variant(runtime):
    """Peephole LSTMs run (tests/test_ops_lstm_forms.py); an input-gate peephole without the forget and output
    gates' is malformed (LiteRT's peephole_weights_all_or_none)."""
    from tests.oprunner import refused_on

    rng = np.random.default_rng(13)
    ins, outs = _lstm_specs(rng, "FLOAT32")
    ins[9] = T((5,), "FLOAT32", data=np.zeros(5, np.float32))
    model = op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, options={"fused_activation_function": "TANH"})
    refused_on(runtime, model, [np.zeros(ins[0].shape, np.float32)], ModelError, "peephole")


# The integer LSTM runs from whole-domain tables and float64 GEMMs with folded multipliers when its bounds allow
# (sequence._lstm_int_tables); otherwise, and as the reference for that path, step by step on int64 arrays.

TABLE_CASES = [  # act, x (scale, zp), hidden (scale, zp), weight scales, cell scale, clip, cell gate, batch, steps,
    # time major, state units, the table variant the case must reach
    ("INT8", (0.03, -7), (0.008, 3), (0.004, 0.02), 2.0**-11, 10.0, "TANH", 1, 6, False, 6, "fused clamp"),
    ("INT8", (0.05, 100), (0.02, -128), (0.02, 0.05), 2.0**-9, 0.0, "TANH", 3, 5, True, 6, "fused clamp"),
    ("INT8", (0.03, 0), (0.004, 5), (0.007, 0.008), 2.0**-11, 0.0, "TANH", 2, 5, False, 6, "fused"),
    ("INT8", (0.03, 0), (0.002, 5), (0.002, 0.003), 2.0**-12, 0.0, "TANH", 2, 4, False, 6, "floor"),
    ("INT8", (0.03, 0), (0.0035, -5), (0.003, 0.004), 2.0**-12, 0.0, "TANH", 1, 5, True, 96, "floor clamp"),
    ("INT8", (0.2, -3), (0.15, 0), (0.05, 0.08), 2.0**-8, 2.0, "TANH", 2, 5, True, 6, "fused clamp"),  # left shifts
    ("INT8", (0.03, 1), (0.05, 2), (0.001, 0.003), 2.0**-15, 0.0, "TANH", 1, 4, False, 6, "fused clamp"),
    ("INT8", (0.03, 1), (0.01, 0), (0.01, 0.02), 0.001, 3.0, "TANH", 2, 3, False, 6, "fused clamp"),  # cell not 2**k
    ("INT16", (0.0004, 0), (0.00004, 0), (0.004, 0.02), 2.0**-11, 1.5, "TANH", 2, 4, False, 6, "fused clamp"),
    ("INT16", (0.001, 0), (2.0**-15, 0), (0.0002, 0.0005), 2.0**-12, 0.0, "TANH", 1, 5, True, 6, "fused"),
]


def _lstm_case_specs(rng, act_type, x_q, h_q, w_range, cell_scale, batch, steps, time_major, n_input=7, n_state=6):
    shape_x = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    bias_type = "INT64" if act_type == "INT16" else "INT32"
    w_scales = rng.uniform(*w_range, 8)
    ws = [T((n_state, n_input if k < 4 else n_state), "INT8", float(w_scales[k]), 0,
            data=rng.integers(-127, 128, (n_state, n_input if k < 4 else n_state), dtype=np.int8)) for k in range(8)]
    b = [T((n_state,), bias_type, float(np.float32(x_q[0]) * np.float32(w_scales[k])), 0,
           data=rng.integers(-3000, 3000, n_state).astype(numpy_dtype(bias_type))) for k in range(4)]
    ins = [T(shape_x, act_type, *x_q), *ws, None, None, None, *b, None, None,
           T((batch, n_state), act_type, *h_q, is_variable=True),
           T((batch, n_state), "INT16", cell_scale, 0, is_variable=True), None, None, None, None]
    return ins, [T(shape_x[:2] + (n_state,), act_type, *h_q)]


@pytest.mark.parametrize("k", range(len(TABLE_CASES)), ids=[f"{c[0]}-{c[-1]}-{i}" for i, c in enumerate(TABLE_CASES)])
def test_lstm_table_path_equals_the_step_path(k, monkeypatch):
    act_type, x_q, h_q, w_range, cell_scale, clip, cell_act, batch, steps, time_major, n_state, variant = TABLE_CASES[k]
    rng = np.random.default_rng(100 + k)
    ins, outs = _lstm_case_specs(rng, act_type, x_q, h_q, w_range, cell_scale, batch, steps, time_major,
                                 n_state=n_state)
    opts = {"fused_activation_function": cell_act, "cell_clip": clip, "time_major": time_major}
    lo, hi = (-32768, 32767) if act_type == "INT16" else (-128, 127)
    feeds = [rng.integers(lo, hi + 1, ins[0].shape).astype(numpy_dtype(act_type)) for _ in range(3)]
    h0 = rng.integers(lo, hi + 1, ins[18].shape).astype(numpy_dtype(act_type))
    c0 = rng.integers(-32768, 32768, ins[19].shape).astype(np.int16)

    def run(prepared):
        arrays = [None if s is None else (np.asarray(s.data, numpy_dtype(s.type)).reshape(s.shape)
                                         if s.data is not None else None) for s in ins]
        arrays[18], arrays[19] = h0.copy(), c0.copy()
        results = []
        for feed in feeds:  # three invokes carrying the state
            arrays[0] = feed
            out = np.zeros(outs[0].shape, numpy_dtype(act_type))
            prepared(arrays, [out])
            results += [out, arrays[18].copy(), arrays[19].copy()]
        return results

    node = make_node("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, opts)
    fast = sequence.prepare_unidirectional_sequence_lstm(node)
    assert getattr(fast, "table_variant", None) == variant
    monkeypatch.setattr(sequence, "_lstm_int_tables", lambda q: None)
    slow = sequence.prepare_unidirectional_sequence_lstm(make_node("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, opts))
    assert not hasattr(slow, "table_variant")
    ours, ref = run(fast), run(slow)
    _same(ours, ref)
    assert len(np.unique(ref[0])) > 5 and len(np.unique(ref[-1])) > 5  # neither outputs nor cells saturated flat
    # the step path is TFLM's arithmetic (the tests above); spot-check this case against TFLM itself
    monkeypatch.undo()
    model = op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, options=opts)
    theirs = run_tflm(model, [feeds[0]], invocations=1)
    mine, _ = run_kernel("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, opts, [feeds[0]], invocations=1)
    _same(mine, theirs)


def test_lstm_prepare_refuses_variants():
    rng = np.random.default_rng(0)
    ins, outs = _lstm_specs(rng, "INT8")
    peephole = list(ins)
    peephole[10] = T((5,), "INT16", 0.01, 0, data=np.ones(5, np.int16))
    with pytest.raises(UnsupportedOpError, match="peephole"):
        sequence.prepare_unidirectional_sequence_lstm(make_node("UNIDIRECTIONAL_SEQUENCE_LSTM", peephole, outs, {}))
    cifg = list(ins)
    cifg[1] = cifg[5] = cifg[12] = None
    with pytest.raises(UnsupportedOpError, match="CIFG"):
        sequence.prepare_unidirectional_sequence_lstm(make_node("UNIDIRECTIONAL_SEQUENCE_LSTM", cifg, outs, {}))
    bad_cell = list(ins)
    bad_cell[19] = T((2, 5), "INT8", 0.01, 0, is_variable=True)
    with pytest.raises(UnsupportedOpError, match="INT16 cell state"):
        sequence.prepare_unidirectional_sequence_lstm(
            make_node("UNIDIRECTIONAL_SEQUENCE_LSTM", bad_cell, outs, {"fused_activation_function": "TANH"}))


def test_svdf_prepare_validates():
    rng = np.random.default_rng(0)
    ins, outs = _svdf_specs(rng, "INT16", n_filter=8, rank=3)
    with pytest.raises(ModelError, match="multiple of rank"):
        sequence.prepare_svdf(make_node("SVDF", ins, outs, {"rank": 3}))
    ins, outs = _svdf_specs(rng, "INT16")
    not_var = list(ins)
    not_var[4] = T(ins[4].shape, "INT16", 0.004, 0)
    with pytest.raises(ModelError, match="variable"):
        sequence.prepare_svdf(make_node("SVDF", not_var, outs, {"rank": 2}))
    mixed = list(ins)
    mixed[4] = T(ins[4].shape, "INT8", 0.3, 0, is_variable=True)
    with pytest.raises(UnsupportedOpError, match="must match weights_time"):
        sequence.prepare_svdf(make_node("SVDF", mixed, outs, {"rank": 2}))
    hybrid = list(ins)
    hybrid[0] = T(ins[0].shape, "FLOAT32")
    with pytest.raises(UnsupportedOpError, match="weights_time"):  # hybrid SVDF: INT8 time weights (LiteRT)
        sequence.prepare_svdf(make_node("SVDF", hybrid, [T(outs[0].shape, "FLOAT32")], {"rank": 2}))


def test_macs():
    rng = np.random.default_rng(0)
    ins, outs = _lstm_specs(rng, "INT8", batch=2, steps=4, n_input=6, n_state=5)
    _, node = run_kernel("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, {"fused_activation_function": "TANH"},
                         [np.zeros((2, 4, 6), np.int8)])
    assert sequence.macs_unidirectional_sequence_lstm(node) == 2 * 4 * (4 * 5 * (6 + 5) + 3 * 5)
    ins, outs = _svdf_specs(rng, "INT16", batch=2, n_input=12, n_filter=8, n_memory=5, rank=2)
    _, node = run_kernel("SVDF", ins, outs, {"rank": 2}, [np.zeros((2, 12), np.int8)])
    assert sequence.macs_svdf(node) == 2 * 8 * (12 + 5)


# ------------------------------------------------- the real models' sequence ops, each run on its own


def _real_ops(path, op_name):
    """Each ``op_name`` operator of a real model as (input specs, output specs, options) with its weights."""
    from edge_sdk.model import read_model
    from edge_sdk.model.types import tensor_value

    model = read_model(path)
    sg = model.subgraphs[0]

    def spec(i):
        if i < 0:
            return None
        t = sg.tensors[i]
        q = t.quantization
        return T(t.shape, t.type, None if q is None else q.scale, None if q is None else q.zero_point,
                 data=tensor_value(model, 0, i), name=t.name or f"t{i}", is_variable=t.is_variable)

    found = []
    for op in sg.operators:
        if model.op_name(op) == op_name:
            found.append(([spec(i) for i in op.inputs], [spec(i) for i in op.outputs], dict(op.options)))
    return found


def _feed(spec, rng):
    if spec.type == "FLOAT32":
        return rng.uniform(0, 1, spec.shape).astype(np.float32)
    # near the zero point: full-range noise saturates these layers and would hide most of the arithmetic
    zp = int(np.asarray(spec.zero_point).ravel()[0])
    return np.clip(zp + rng.integers(-12, 13, spec.shape), -128, 127).astype(np.int8)


REAL_SEQUENCE_OPS = [
    ("keyword_scrambled.tflite", "SVDF"),
    ("keyword_scrambled_8bit.tflite", "SVDF"),
    ("micro_speech_lstm.tflite", "UNIDIRECTIONAL_SEQUENCE_LSTM"),
    ("trained_lstm_int8.tflite", "UNIDIRECTIONAL_SEQUENCE_LSTM"),
    ("dtln_noise_suppression.tflite", "UNIDIRECTIONAL_SEQUENCE_LSTM"),
    ("trained_lstm.tflite", "UNIDIRECTIONAL_SEQUENCE_LSTM"),
]


def _real_op_cases(name, op):
    """Each ``op`` layer of a real model alone: (input specs, output specs, options, model, feed)."""
    from tests.conftest import shared_model

    path = shared_model(f"tflite-micro/{name}")
    rng = np.random.default_rng(3)
    ops = _real_ops(path, op)
    assert ops
    if op == "SVDF":
        # keyword_scrambled's biases are scrambled to ~1e9 (the int32 sums wrap, as in C) and saturate every
        # output; the same layers with the bias shrunk show the rest of the arithmetic.
        for ins, outs, opts in list(ops):
            quiet = list(ins)
            quiet[3] = T(ins[3].shape, "INT32", ins[3].scale, 0, data=ins[3].data.astype(np.int64) >> 22)
            ops.append((quiet, outs, opts))
    return [(ins, outs, opts, op_model(op, ins, outs, options=opts), _feed(ins[0], rng)) for ins, outs, opts in ops]


@pytest.mark.parametrize("name,op", REAL_SEQUENCE_OPS)
def test_real_model_sequence_ops_alone_match_tflm(runtime, name, op):
    """Through the runtime: state kept across invokes, reset_all_variables starts over."""
    seen = []
    for ins, _, _, model, feed in _real_op_cases(name, op):
        is_float = ins[0].type == "FLOAT32"
        for k in (1, 3):
            ours = check_invokes(runtime, model, [feed], k, is_float, check_reset=k == 3)
        if is_float:
            _same(ours, peer_outputs(model, [feed], "litert", invocations=3), True, "litert")
        seen.append(ours[0].ravel())
    assert len(np.unique(np.concatenate(seen))) > 8  # the comparison saw more than saturated outputs


@pytest.mark.parametrize("name,op", REAL_SEQUENCE_OPS)
def test_real_model_sequence_ops_kernel_alone_match_tflm(name, op):
    seen = []
    for ins, outs, opts, model, feed in _real_op_cases(name, op):
        is_float = ins[0].type == "FLOAT32"
        for k in (1, 3):
            ours, _ = run_kernel(op, ins, outs, opts, [feed], invocations=k)
            _same(ours, peer_outputs(model, [feed], "tflm", invocations=k), is_float, f"tflm k={k}")
        if is_float:
            _same(ours, peer_outputs(model, [feed], "litert", invocations=3), True, "litert")
        seen.append(ours[0].ravel())
    assert len(np.unique(np.concatenate(seen))) > 8


# ------------------------------------------------------------------------ the whole real models


def _whole_model_feed(name, detail, rng):
    shape, dtype = tuple(detail["shape"]), np.dtype(detail["dtype"])
    if dtype == np.float32:
        return rng.uniform(0, 1, shape).astype(np.float32)
    info = np.iinfo(dtype)
    span = 3000 if dtype == np.int16 else 40
    return rng.integers(max(info.min, -span), min(info.max, span) + 1, shape).astype(dtype)


def _whole_model(name):
    """A real model with every SVDF / LSTM output made a model output too (the classifiers' softmax saturates):
    (its bytes, the feeds, whether it is a float model)."""
    from edge_sdk import Interpreter
    from edge_sdk.model import read_model, write_model
    from tests.conftest import shared_model

    model = read_model(shared_model(f"tflite-micro/{name}"))
    sg = model.subgraphs[0]
    for op in sg.operators:
        if model.op_name(op) in ("SVDF", "UNIDIRECTIONAL_SEQUENCE_LSTM") and op.outputs[0] not in sg.outputs:
            sg.outputs.append(op.outputs[0])
    data = write_model(model)
    probe = Interpreter(model_content=data)
    probe.allocate_tensors()
    rng = np.random.default_rng(5)
    feeds = [_whole_model_feed(name, d, rng) for d in probe.get_input_details()]
    return data, feeds, probe.get_output_details()[0]["dtype"] == np.float32


WHOLE = sorted({n for n, _ in REAL_SEQUENCE_OPS})


@pytest.mark.parametrize("name", WHOLE)
def test_real_models_match_tflm_after_one_and_three_invokes(runtime, name):
    data, feeds, is_float = _whole_model(name)
    for k in (1, 3):
        ours = check_invokes(runtime, data, feeds, k, is_float, isolate=True)
        assert len(ours) > 1


@needs_c_runtime
@pytest.mark.parametrize("name", WHOLE)
def test_whole_models_have_every_op_and_the_python_plan_in_c(name):
    from edge_sdk import Interpreter
    from edge_sdk.model import read_model
    from edge_sdk.runtime import c_interpreter

    data, _, _ = _whole_model(name)
    assert c_interpreter.missing_ops(read_model(data)) == []
    c = Interpreter(model_content=data, backend="c")
    c.allocate_tensors()
    py = Interpreter(model_content=data)
    py.allocate_tensors()
    plan = lambda p: ([(b.key, b.offset, b.size, b.first_use, b.last_use) for b in p.buffers], p.total)  # noqa: E731
    assert plan(c.arena_plan()) == plan(py.arena_plan())  # the same tensor plan as the Python interpreter


@pytest.mark.parametrize("name", ["micro_speech_lstm.tflite", "trained_lstm_int8.tflite", "trained_lstm.tflite",
                                  "dtln_noise_suppression.tflite"])
def test_real_lstm_models_cut_after_their_lstm_layers_match_tflm(runtime, name):
    """The real graphs (intermediates, variable tensors, tensor layout as converted) up to the last LSTM."""
    from edge_sdk.model import read_model, write_model
    from tests.conftest import shared_model

    model = read_model(shared_model(f"tflite-micro/{name}"))
    sg = model.subgraphs[0]
    keep = 0
    while keep < len(sg.operators) and model.op_name(sg.operators[keep]) == "UNIDIRECTIONAL_SEQUENCE_LSTM":
        keep += 1
    assert keep
    sg.operators = sg.operators[:keep]
    sg.outputs = list(sg.operators[-1].outputs)
    data = write_model(model)
    rng = np.random.default_rng(9)
    x = sg.tensors[sg.inputs[0]]
    feed = _feed(T(x.shape, x.type, None if x.quantization is None else x.quantization.scale,
                   None if x.quantization is None else x.quantization.zero_point), rng)
    for k in (1, 3):
        check_invokes(runtime, data, [feed], k, x.type == "FLOAT32", isolate=True)


# ------------------------------------------------------------------------------------------------ FC int16x8

FC16_CASES = [  # shape, units, per_channel, bias type, act
    ((2, 12), 5, False, "INT64", "NONE"),
    ((3, 20), 7, True, "INT64", "RELU"),
    ((1, 9), 4, False, None, "NONE"),
    ((2, 16), 6, True, "INT32", "NONE"),
]


@pytest.mark.parametrize("case", FC16_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-pc{int(c[2])}-{c[3]}-{c[4]}")
def test_fully_connected_int16x8(runtime, case):
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
    got = check_invokes(runtime, model, [feed], 1, False, check_reset=False)
    assert len(np.unique(got[0])) > 3
