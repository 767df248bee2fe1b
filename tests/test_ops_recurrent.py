"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN, LSTM (full and basic kernel types),
BIDIRECTIONAL_SEQUENCE_LSTM, EMBEDDING_LOOKUP_SPARSE, BUCKETIZE and DYNAMIC_UPDATE_SLICE on both runtimes (the
``runtime`` grid: rnn.py / lookup.py / dynamic_update_slice.py and firmware_c's rnn.c / lstm.c /
embedding_lookup_sparse.c / bucketize.c / dynamic_update_slice.c) against LiteRT's reference kernels (TFLM has none
of these ops). Float32 within 1e-4 of the reference's range, LiteRT's hybrid kernels (INT8 weights) too; the
integer outputs (BUCKETIZE) and the copies (DYNAMIC_UPDATE_SLICE) exactly. ONES_LIKE stays a facts-only row: LiteRT
has no kernel for it (an unresolved op), so no peer could check one.

The ops with state (variable tensors: the hidden state, the LSTM's cell state) run 1 and 3 invokes in a row with the
same input, as LiteRT keeps the state across invokes: the third invoke's output differs from the first only through
the carried state, and reset_all_variables must give the first invoke's result again (tests.oprunner.run_invokes).
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from tests.oprunner import T, assert_same, op_model, peer_outputs, refused_on, run_invokes

RNG = np.random.default_rng(23)
B, I, U, STEPS = 2, 3, 4, 5


def f32(*shape, scale=0.6):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def near(ours, ref, what):
    """Same shapes and dtypes, values within 1e-4 of the reference's range."""
    assert len(ours) == len(ref), what
    for k, (a, b) in enumerate(zip(ours, ref)):
        assert a.shape == b.shape and a.dtype == b.dtype, (what, k, a.shape, a.dtype, b.shape, b.dtype)
        span = float(np.max(np.abs(b))) if b.size else 0.0
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-4 * max(span, 1e-3), err_msg=f"{what}: output {k}")


def check_invokes(runtime, model, feeds, counts=(1, 3), isolate=False):
    """``runtime`` after each count of invokes against LiteRT's reference kernels after as many (``isolate``: LiteRT
    in a fresh process); the outputs by count (the first and third must differ where state carries)."""
    outs = {}
    for k in counts:
        outs[k] = run_invokes(runtime, model, feeds, k, check_reset=k > 1)
        near(outs[k], peer_outputs(model, feeds, "litert", isolate=isolate, invocations=k), f"{runtime} x{k} vs litert")
    return outs


def carried(outs) -> None:
    """The state changed the output between the first and the third invoke (same input)."""
    assert any(not np.allclose(a, b) for a, b in zip(outs[1], outs[3])), "the state did not carry across invokes"


# ------------------------------------------------------------------------------------------------ RNN family


def rnn_weights(n_input=I, units=U, batch=B, hybrid=False):
    """Weights, recurrent weights, bias, hidden state; ``hybrid``: int8 weights (per-tensor scales), LiteRT's hybrid
    kernel (float input and state, each quantized per batch row at every step)."""
    if hybrid:
        weights = [T((units, n_input), "INT8", 0.011, 0, data=RNG.integers(-127, 128, (units, n_input), dtype=np.int8)),
                   T((units, units), "INT8", 0.006, 0, data=RNG.integers(-127, 128, (units, units), dtype=np.int8))]
    else:
        weights = [T((units, n_input), "FLOAT32", data=f32(units, n_input)),
                   T((units, units), "FLOAT32", data=f32(units, units, scale=0.4))]
    return weights + [T((units,), "FLOAT32", data=f32(units, scale=0.2)),
                      T((batch, units), "FLOAT32", is_variable=True)]


# (fused activation, weights: "FLOAT32", "INT8" (hybrid, symmetric row quantization) or "INT8 asymmetric")
RNN_CASES = [("TANH", "FLOAT32"), ("RELU", "FLOAT32"), ("TANH", "INT8"), ("RELU6", "INT8 asymmetric")]


def hybrid_options(weights: str) -> tuple[dict, int]:
    """(options, op version) of a case's weights: LiteRT's versions 1 float, 2 hybrid, 3 asymmetric hybrid."""
    asym = weights.endswith("asymmetric")
    return {"asymmetric_quantize_inputs": asym}, 3 if asym else 2 if weights.startswith("INT8") else 1


@pytest.mark.parametrize("act,weights", RNN_CASES)
def test_rnn(runtime, act, weights):
    opts, version = hybrid_options(weights)
    model = op_model("RNN", [T((B, I), "FLOAT32")] + rnn_weights(hybrid=version > 1), [T((B, U), "FLOAT32")],
                     {"fused_activation_function": act, **opts}, version=version)
    carried(check_invokes(runtime, model, [f32(B, I)]))


@pytest.mark.parametrize("time_major,weights", [(False, "FLOAT32"), (True, "FLOAT32"), (False, "INT8"),
                                                (True, "INT8 asymmetric")])
def test_unidirectional_sequence_rnn(runtime, time_major, weights):
    opts, version = hybrid_options(weights)
    shape = (STEPS, B, I) if time_major else (B, STEPS, I)
    out = (STEPS, B, U) if time_major else (B, STEPS, U)
    model = op_model("UNIDIRECTIONAL_SEQUENCE_RNN", [T(shape, "FLOAT32")] + rnn_weights(hybrid=version > 1),
                     [T(out, "FLOAT32")], {"fused_activation_function": "TANH", "time_major": time_major, **opts},
                     version=version)
    carried(check_invokes(runtime, model, [f32(*shape)]))


def bidirectional_rnn_model(time_major, merge, weights, ins_seed):
    opts, version = hybrid_options(weights)
    rng_state = RNG.bit_generator.state
    RNG.bit_generator.state = ins_seed  # the same weights for a case's time-major and batch-major twins
    shape = (STEPS, B, I) if time_major else (B, STEPS, I)
    bw_units = U + 1  # the two directions may differ in width
    lead = shape[:2]
    ins = ([T(shape, "FLOAT32")] + rnn_weights(hybrid=version > 1) + rnn_weights(units=bw_units, hybrid=version > 1)
           + [None, None, None])
    RNG.bit_generator.state = rng_state
    outs = [T(lead + (U + bw_units,), "FLOAT32")] if merge else [T(lead + (U,), "FLOAT32"),
                                                                 T(lead + (bw_units,), "FLOAT32")]
    return op_model("BIDIRECTIONAL_SEQUENCE_RNN", ins, outs,
                    {"fused_activation_function": "TANH", "time_major": time_major, "merge_outputs": merge, **opts},
                    version=version), shape


@pytest.mark.parametrize("time_major,merge,weights", [(False, False, "FLOAT32"), (True, True, "FLOAT32"),
                                                      (False, True, "INT8"), (True, False, "INT8 asymmetric")])
def test_bidirectional_sequence_rnn(runtime, time_major, merge, weights):
    """LiteRT's hybrid kernel runs a time-major sequence max_time times per invoke (an extra loop around both
    directions in bidirectional_sequence_rnn.cc's EvalHybrid: one invoke there is max_time invokes here); its
    batch-major path is right, so a time-major hybrid case is held to LiteRT on the batch-major twin (the same
    weights, the input and outputs transposed)."""
    seed = np.random.default_rng(5).bit_generator.state
    model, shape = bidirectional_rnn_model(time_major, merge, weights, seed)
    x = f32(*shape)
    if not (time_major and weights != "FLOAT32"):
        carried(check_invokes(runtime, model, [x]))
        return
    twin, _ = bidirectional_rnn_model(False, merge, weights, seed)
    outs = {}
    for k in (1, 3):
        outs[k] = run_invokes(runtime, model, [x], k, check_reset=k > 1)
        ref = peer_outputs(twin, [x.transpose(1, 0, 2).copy()], "litert", invocations=k)
        near(outs[k], [r.transpose(1, 0, 2) for r in ref], f"{runtime} x{k} vs litert (batch-major twin)")
    carried(outs)


def test_rnn_refusals(runtime):
    # an integer input (LiteRT runs float and hybrid RNNs only)
    ins = [T((B, I), "INT8", 0.1, 0)] + rnn_weights()
    refused_on(runtime, op_model("RNN", ins, [T((B, U), "INT8", 0.1, 0)]), [np.zeros((B, I), np.int8)],
               (UnsupportedOpError, ModelError), "RNN")
    # a hidden state of the wrong width
    ins = [T((B, STEPS, I), "FLOAT32")] + rnn_weights()[:3] + [T((B, U + 1), "FLOAT32", is_variable=True)]
    refused_on(runtime, op_model("UNIDIRECTIONAL_SEQUENCE_RNN", ins, [T((B, STEPS, U), "FLOAT32")]),
               [f32(B, STEPS, I)], ModelError, "UNIDIRECTIONAL_SEQUENCE_RNN")
    # the bidirectional RNN's auxiliary input
    aux = T((B, STEPS, I), "FLOAT32")
    ins = ([T((B, STEPS, I), "FLOAT32")] + rnn_weights() + rnn_weights()
           + [aux, T((U, I), "FLOAT32", data=f32(U, I)), T((U, I), "FLOAT32", data=f32(U, I))])
    refused_on(runtime, op_model("BIDIRECTIONAL_SEQUENCE_RNN", ins,
                                 [T((B, STEPS, U), "FLOAT32"), T((B, STEPS, U), "FLOAT32")]),
               [f32(B, STEPS, I), f32(B, STEPS, I)], UnsupportedOpError, "BIDIRECTIONAL_SEQUENCE_RNN")


# ----------------------------------------------------------------------------------------------- LSTM family


def lstm_gates(n_input=I, units=U, hybrid=False):
    """Inputs 1..17 of an LSTM without peephole and projection: 4 input weights, 4 recurrent, 3 omitted, 4 biases,
    2 omitted. ``hybrid``: INT8 weights, a scale per tensor (LiteRT's hybrid LSTM)."""
    def weight(rows, cols, scale):
        if hybrid:
            return T((rows, cols), "INT8", float(RNG.uniform(0.004, 0.012)), 0,
                     data=RNG.integers(-127, 128, (rows, cols), dtype=np.int8))
        return T((rows, cols), "FLOAT32", data=f32(rows, cols, scale=scale))
    return ([weight(units, n_input, 0.6) for _ in range(4)] + [weight(units, units, 0.4) for _ in range(4)]
            + [None] * 3 + [T((units,), "FLOAT32", data=f32(units, scale=0.3)) for _ in range(4)] + [None] * 2)


def lstm_states(batch=B, units=U):
    return [T((batch, units), "FLOAT32", is_variable=True), T((batch, units), "FLOAT32", is_variable=True)]


# LSTM versions: 1 float, 3 hybrid, 4 hybrid with asymmetric_quantize_inputs (2 is the basic kernel)
@pytest.mark.parametrize("cell_clip,weights", [(0.0, "FLOAT32"), (0.4, "FLOAT32"), (0.0, "INT8"),
                                               (0.4, "INT8 asymmetric")])
def test_lstm_full(runtime, cell_clip, weights):
    asym = weights.endswith("asymmetric")
    version = 4 if asym else 3 if weights.startswith("INT8") else 1
    ins = [T((B, I), "FLOAT32")] + lstm_gates(hybrid=version > 1) + lstm_states() + [None] * 4
    model = op_model("LSTM", ins, [T((B, U), "FLOAT32")],
                     {"fused_activation_function": "TANH", "cell_clip": cell_clip, "asymmetric_quantize_inputs": asym},
                     version=version)
    carried(check_invokes(runtime, model, [f32(B, I, scale=1.5)]))


def test_lstm_basic(runtime):
    """The basic kernel type: previous activation and state are inputs, the new ones outputs (no variables), beside
    the concatenated input and the gate pre-activations."""
    ins = [T((B, I), "FLOAT32"), T((B, U), "FLOAT32"), T((4 * U, I + U), "FLOAT32", data=f32(4 * U, I + U)),
           T((4 * U,), "FLOAT32", data=f32(4 * U, scale=0.3)), T((B, U), "FLOAT32")]
    outs = [T((B, U), "FLOAT32"), T((B, U), "FLOAT32"), T((B, I + U), "FLOAT32"), T((B, 4 * U), "FLOAT32")]
    model = op_model("LSTM", ins, outs, {"fused_activation_function": "TANH", "kernel_type": "BASIC"}, version=2)
    check_invokes(runtime, model, [f32(B, I), f32(B, U), f32(B, U)], counts=(1,))


@pytest.mark.parametrize("time_major,merge,weights", [(True, False, "FLOAT32"), (False, True, "FLOAT32"),
                                                      (True, True, "INT8"), (False, False, "INT8 asymmetric")])
def test_bidirectional_sequence_lstm(runtime, time_major, merge, weights):
    """LiteRT's float kernel, batch-major with merge_outputs, depends on its heap (NaN after a few invokes in a
    long-lived process, different values in two fresh ones): that case is held to LiteRT's time-major kernel."""
    asym = weights.endswith("asymmetric")
    version = 3 if asym else 2 if weights.startswith("INT8") else 1
    shape = (STEPS, B, I) if time_major else (B, STEPS, I)
    lead = shape[:2]
    bw_units = U  # LiteRT takes one cell width for both directions
    ins = ([T(shape, "FLOAT32")] + lstm_gates(hybrid=version > 1) + lstm_gates(units=bw_units, hybrid=version > 1)
           + lstm_states() + lstm_states(units=bw_units) + [None] * 9)
    outs = [T(lead + (U + bw_units,), "FLOAT32")] if merge else [T(lead + (U,), "FLOAT32"),
                                                                 T(lead + (bw_units,), "FLOAT32")]
    model = op_model("BIDIRECTIONAL_SEQUENCE_LSTM", ins, outs,
                     {"fused_activation_function": "TANH", "time_major": time_major, "merge_outputs": merge,
                      "cell_clip": 0.0, "asymmetric_quantize_inputs": asym}, version=version)
    x = f32(*shape, scale=1.2)
    if time_major or not merge:
        carried(check_invokes(runtime, model, [x]))
        return
    # batch-major with merged outputs: LiteRT's own outputs there depend on its heap (they changed between two
    # fresh processes on this machine), so its time-major kernel on the same weights is the reference
    time_major_model = op_model("BIDIRECTIONAL_SEQUENCE_LSTM", [T((STEPS, B, I), "FLOAT32")] + ins[1:],
                                [T((STEPS, B, U + bw_units), "FLOAT32")],
                                {"fused_activation_function": "TANH", "time_major": True, "merge_outputs": True,
                                 "cell_clip": 0.0, "asymmetric_quantize_inputs": asym}, version=version)
    outs = {}
    for k in (1, 3):
        outs[k] = run_invokes(runtime, model, [x], k, check_reset=k > 1)
        peer = peer_outputs(time_major_model, [np.ascontiguousarray(x.transpose(1, 0, 2))], "litert", invocations=k)
        near(outs[k], [np.ascontiguousarray(peer[0].transpose(1, 0, 2))], f"{runtime} x{k} vs litert time-major")
    carried(outs)


def test_lstm_refusals(runtime):
    # an input-gate peephole (input 9) without the forget and output gates' (peephole LSTMs run:
    # tests/test_ops_lstm_forms.py; this one is malformed, as LiteRT's peephole_weights_all_or_none says)
    gates = lstm_gates()
    gates[8] = T((U,), "FLOAT32", data=f32(U))
    ins = [T((B, I), "FLOAT32")] + gates + lstm_states() + [None] * 4
    refused_on(runtime, op_model("LSTM", ins, [T((B, U), "FLOAT32")], {"fused_activation_function": "TANH"}),
               [f32(B, I)], ModelError, "LSTM")
    # a hidden state that is no variable
    ins = [T((B, I), "FLOAT32")] + lstm_gates() + [T((B, U), "FLOAT32", data=np.zeros((B, U), np.float32)),
                                                   lstm_states()[1]] + [None] * 4
    refused_on(runtime, op_model("LSTM", ins, [T((B, U), "FLOAT32")], {"fused_activation_function": "TANH"}),
               [f32(B, I)], ModelError, "LSTM")
    # bidirectional: recurrent weights of the wrong shape
    bad = lstm_gates()
    bad[4] = T((U, U + 1), "FLOAT32", data=f32(U, U + 1))
    ins = [T((STEPS, B, I), "FLOAT32")] + bad + lstm_gates() + lstm_states() + lstm_states() + [None] * 9
    refused_on(runtime, op_model("BIDIRECTIONAL_SEQUENCE_LSTM", ins,
                                 [T((STEPS, B, U), "FLOAT32"), T((STEPS, B, U), "FLOAT32")],
                                 {"fused_activation_function": "TANH"}),
               [f32(STEPS, B, I)], ModelError, "BIDIRECTIONAL_SEQUENCE_LSTM")


# ----------------------------------------------------------------------------------- EMBEDDING_LOOKUP_SPARSE


@pytest.mark.parametrize("combiner", ["SUM", "MEAN", "SQRTN"])
def test_embedding_lookup_sparse(runtime, combiner):
    """Three sparse rows over a (3, 4) dense shape (rank-3 indices: buckets over the first two coordinates), one
    bucket left empty; params (6, 2, 3)."""
    ids = np.array([0, 5, 2, 2, 4, 1], np.int32)
    indices = np.array([[0, 0, 0], [0, 0, 2], [0, 2, 1], [1, 1, 0], [1, 1, 3], [2, 1, 1]], np.int32)
    dense = np.array([3, 2, 4], np.int32)
    weights = np.array([0.5, 2.0, -1.5, 1.0, 0.25, 3.0], np.float32)
    ins = [T((6,), "INT32"), T((6, 3), "INT32"), T((3,), "INT32", data=dense), T((6,), "FLOAT32"),
           T((6, 2, 3), "FLOAT32", data=f32(6, 2, 3))]
    model = op_model("EMBEDDING_LOOKUP_SPARSE", ins, [T((3, 2, 2, 3), "FLOAT32")], {"combiner": combiner})
    out = check_invokes(runtime, model, [ids, indices, weights], counts=(1,))[1][0]
    assert not out[0, 1].any() and out[0, 0].any()  # the empty bucket stays zero


def test_embedding_lookup_sparse_refusals(runtime):
    ins = [T((2,), "INT32"), T((2, 2), "INT32"), T((2,), "INT32", data=np.array([2, 2], np.int32)),
           T((2,), "FLOAT32"), T((3, 2), "INT8", 0.1, 0, data=np.zeros((3, 2), np.int8))]
    refused_on(runtime, op_model("EMBEDDING_LOOKUP_SPARSE", ins, [T((2, 2), "FLOAT32")]),
               [np.zeros(2, np.int32), np.zeros((2, 2), np.int32), np.ones(2, np.float32)],
               UnsupportedOpError, "EMBEDDING_LOOKUP_SPARSE")
    ins = [T((2,), "INT32"), T((2, 3), "INT32"), T((2,), "INT32", data=np.array([2, 2], np.int32)),
           T((2,), "FLOAT32"), T((3, 2), "FLOAT32", data=np.zeros((3, 2), np.float32))]
    refused_on(runtime, op_model("EMBEDDING_LOOKUP_SPARSE", ins, [T((2, 2), "FLOAT32")]),
               [np.zeros(2, np.int32), np.zeros((2, 3), np.int32), np.ones(2, np.float32)],
               ModelError, "EMBEDDING_LOOKUP_SPARSE")


# ------------------------------------------------------------------------------ BUCKETIZE, DYNAMIC_UPDATE_SLICE


@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT64"])
def test_bucketize(runtime, type_):
    """Values on, between and outside the boundaries (a value equal to a boundary goes above it)."""
    boundaries = [-2.0, 0.0, 1.5, 3.0, 10.0]
    x = np.array([[-5, -2, -1, 0], [1, 2, 3, 4], [9, 10, 11, 40]])
    x = (x * np.float32(1.25)).astype(np.float32) if type_ == "FLOAT32" else x.astype(np.dtype(type_.lower()))
    model = op_model("BUCKETIZE", [T(x.shape, type_)], [T(x.shape, "INT32")], {"boundaries": boundaries})
    out = check_invokes(runtime, model, [x], counts=(1,))[1][0]
    assert len(set(out.ravel().tolist())) >= 4


def test_bucketize_refusals(runtime):
    x = np.zeros((2, 3), np.int8)
    refused_on(runtime, op_model("BUCKETIZE", [T(x.shape, "INT8", 0.1, 0)], [T(x.shape, "INT32")],
                                 {"boundaries": [0.0, 1.0]}), [x], UnsupportedOpError, "BUCKETIZE")
    refused_on(runtime, op_model("BUCKETIZE", [T(x.shape, "FLOAT32")], [T(x.shape, "INT32")],
                                 {"boundaries": [1.0, 0.0]}), [x.astype(np.float32)], ModelError, "BUCKETIZE")


DUS_CASES = [  # operand type, operand shape, update shape, start indices (clamped where out of range)
    ("FLOAT32", (3, 4), (2, 2), np.array([1, 1], np.int32)),
    ("FLOAT32", (2, 3, 4), (1, 2, 3), np.array([5, -1, 2], np.int64)),  # clamped to (1, 0, 1)
    ("INT8", (4, 5), (2, 3), np.array([2, 2], np.int32)),
    ("INT32", (6,), (6,), np.array([3], np.int32)),  # the whole operand: start clamped to 0
    ("BOOL", (3, 3), (1, 2), np.array([2, 1], np.int64)),
]


@pytest.mark.parametrize("case", range(len(DUS_CASES)))
def test_dynamic_update_slice(runtime, case):
    type_, shape, ushape, start = DUS_CASES[case]
    q = (0.05, -3) if type_ == "INT8" else (None, None)
    if type_ == "BOOL":
        operand, update = RNG.random(shape) < 0.5, RNG.random(ushape) < 0.5
    elif type_ == "FLOAT32":
        operand, update = f32(*shape), f32(*ushape)
    else:
        dt = np.dtype(type_.lower())
        operand, update = RNG.integers(-100, 100, shape).astype(dt), RNG.integers(-100, 100, ushape).astype(dt)
    ins = [T(shape, type_, *q), T(ushape, type_, *q), T(start.shape, "INT32" if start.dtype == np.int32 else "INT64")]
    model = op_model("DYNAMIC_UPDATE_SLICE", ins, [T(shape, type_, *q)])
    out = run_invokes(runtime, model, [operand, update, start], 1, check_reset=False)
    ref = peer_outputs(model, [operand, update, start], "litert")
    assert_same(out, ref, what=f"{runtime} vs litert")


def test_dynamic_update_slice_refusals(runtime):
    ins = [T((2, 2), "FLOAT32"), T((3, 1), "FLOAT32"), T((2,), "INT32")]
    refused_on(runtime, op_model("DYNAMIC_UPDATE_SLICE", ins, [T((2, 2), "FLOAT32")]),
               [f32(2, 2), f32(3, 1), np.zeros(2, np.int32)], ModelError, "DYNAMIC_UPDATE_SLICE")
    ins = [T((2, 2), "FLOAT32"), T((1, 1), "INT32"), T((2,), "INT32")]
    refused_on(runtime, op_model("DYNAMIC_UPDATE_SLICE", ins, [T((2, 2), "FLOAT32")]),
               [f32(2, 2), np.zeros((1, 1), np.int32), np.zeros(2, np.int32)], UnsupportedOpError,
               "DYNAMIC_UPDATE_SLICE")


def test_macs():
    """The input and recurrent products per step, batch row and direction (plus the LSTM's 3 products per unit)."""
    from edge_sdk.runtime.kernels import rnn
    from tests.nodes import make_node

    def macs(op, ins, outs, options, prepare, count):
        node = make_node(op, ins, outs, options)
        prepare(node)
        return count(node)

    seq = [T((B, STEPS, I), "FLOAT32")]
    assert macs("RNN", [T((B, I), "FLOAT32")] + rnn_weights(), [T((B, U), "FLOAT32")], {}, rnn.prepare_rnn,
                rnn.macs_rnn) == B * U * (I + U)
    assert macs("UNIDIRECTIONAL_SEQUENCE_RNN", seq + rnn_weights(), [T((B, STEPS, U), "FLOAT32")], {},
                rnn.prepare_unidirectional_sequence_rnn,
                rnn.macs_unidirectional_sequence_rnn) == STEPS * B * U * (I + U)
    assert macs("BIDIRECTIONAL_SEQUENCE_RNN", seq + rnn_weights() + rnn_weights(units=U + 1) + [None] * 3,
                [T((B, STEPS, U), "FLOAT32"), T((B, STEPS, U + 1), "FLOAT32")], {},
                rnn.prepare_bidirectional_sequence_rnn, rnn.macs_bidirectional_sequence_rnn) == \
        STEPS * B * (U * (I + U) + (U + 1) * (I + U + 1))
    lstm_step = 4 * U * (I + U) + 3 * U
    assert macs("LSTM", [T((B, I), "FLOAT32")] + lstm_gates() + lstm_states() + [None] * 4, [T((B, U), "FLOAT32")],
                {"fused_activation_function": "TANH"}, rnn.prepare_lstm, rnn.macs_lstm) == B * lstm_step
    time_major = [T((STEPS, B, I), "FLOAT32")]
    bi_ins = time_major + lstm_gates() + lstm_gates() + lstm_states() + lstm_states() + [None] * 9
    assert macs("BIDIRECTIONAL_SEQUENCE_LSTM", bi_ins, [T((STEPS, B, U), "FLOAT32"), T((STEPS, B, U), "FLOAT32")],
                {"fused_activation_function": "TANH"}, rnn.prepare_bidirectional_sequence_lstm,
                rnn.macs_bidirectional_sequence_lstm) == 2 * STEPS * B * lstm_step
