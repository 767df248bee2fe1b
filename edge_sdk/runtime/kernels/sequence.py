"""Sequence-model kernels with state kept across invokes: SVDF and UNIDIRECTIONAL_SEQUENCE_LSTM (and the float LSTM
cells every LSTM op shares: the plain one, lstm_float_cell, and the one with CIFG, peephole, projection, layer
normalization and auxiliary-input options, lstm_variant_cell; a float UNIDIRECTIONAL_SEQUENCE_LSTM with any option
or with INT8 weights, LiteRT's hybrid kernel, runs the latter).

Both follow TFLite Micro's reference kernels (svdf_common.cc; unidirectional_sequence_lstm.cc with
lstm_eval*.cc) bit for bit on integer data. Their state lives in variable tensors that the interpreter keeps
between invokes: eval updates those input arrays in place.

SVDF (int8 input, int8 or int16 state/time weights, int32 bias; or float32): each invoke shifts every
filter's memory one step left, writes the new feature projection into the last slot, reduces memory x time
weights per filter, sums ``rank`` filters per unit, adds bias and requantizes. TFLM's integer path does not
apply the fused activation (only the int8 clamp); its float path does.

LSTM (int8 or int16 activations with int8 weights and int16 cell state; or float32): TFLM ignores the
operator's ``intermediates`` and fixes the gate pre-activation scale at 2**-12 and the gate output scale at
2**-15. An INT8 LSTM with layer normalization, which TFLM refuses, runs LiteRT's integer LSTM instead (the LSTM
op's, lstm_integer.py: its intermediates give the gate and hidden scales). Each step computes the four gates
(input FC with bias, recurrent FC without), each saturated to int16, their saturating sum, sigmoid (tanh for
the cell gate), then the cell update, optional cell clip, and the hidden state tanh(cell) * output gate. Every
step is independent per batch row, so time-major and batch-major layouts run the same batched step loop over time.

Speed: both integer kernels normally run from tables (``_lstm_int_tables``, ``_svdf_int_tables``): each
MultiplyByQuantizedMultiplier becomes one floor with its multiplier folded into float64 GEMM weights (exact
below 2**53, checked in prepare), and every function of a single int16 value is a table over all its inputs.
When a bound does not hold they fall back to the step-by-step int64 code, which the tests hold them equal to.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.fixedpoint_lstm import (
    SAT_DOMAIN,
    checked_log2,
    gate_tables,
    logistic_int16,
    saturated_domain,
    tanh_int16,
    tanh_params_for_power,
)
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.runtime.kernels.quant import (
    TYPE_RANGES,
    batch_quantize_floats,
    float_activation,
    clip_into,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    quantize_multiplier,
)

_F32 = np.float32


def _int_matmul(x: np.ndarray, w_t: np.ndarray) -> np.ndarray:
    """Exact integer matrix product via float64 BLAS (every partial sum stays far below 2**53)."""
    return np.matmul(x.astype(np.float64), w_t).astype(np.int64)


def _sat16(v: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(v, -32768), 32767)


def _check_matmul_exact(node: Node, depth: int, x_bits: int, w_bits: int) -> None:
    if depth * (1 << (x_bits + w_bits)) >= (1 << 53):
        raise node.unsupported(f"accumulation depth {depth} is too large for the exact matmul path")


def _per_tensor(node: Node, t, what: str) -> None:
    if not t.quantized:
        raise node.error(f"{what} '{t.name}' must be quantized")
    if t.scale.size != 1:
        raise node.unsupported(f"{what} '{t.name}' has per-channel quantization ({t.scale.size} scales)")


# --------------------------------------------------------------------------------------------------- SVDF


def prepare_svdf(node: Node):
    node.expect_counts(5, 1)
    x = node.input(0)
    wf = node.input(1)
    wt = node.input(2)
    bias = node.inputs[3] if node.has_input(3) else None
    state = node.input(4)
    out = node.outputs[0]
    rank = int(node.options.get("rank", 0))

    node.expect(len(x.shape) == 2, f"input must be 2-D (batch, input_size), has shape {x.shape}")
    node.expect(len(wf.shape) == 2, f"weights_feature must be 2-D, has shape {wf.shape}")
    node.expect(len(wt.shape) == 2, f"weights_time must be 2-D, has shape {wt.shape}")
    node.expect(rank > 0, f"rank must be positive, is {rank}")
    batch, n_input = x.shape
    n_filter = wf.shape[0]
    node.expect(n_filter % rank == 0, f"num_filters {n_filter} is not a multiple of rank {rank}")
    n_unit = n_filter // rank
    n_memory = wt.shape[1]
    node.expect(wf.shape[1] == n_input, f"weights_feature {wf.shape} does not match input size {n_input}")
    node.expect(wt.shape[0] == n_filter, f"weights_time {wt.shape} does not have {n_filter} filters")
    if bias is not None:
        node.expect(bias.shape[:1] == (n_unit,), f"bias {bias.shape} does not have {n_unit} units")
    node.expect(
        len(state.shape) == 2 and state.shape == (batch, n_memory * n_filter),
        f"activation state {state.shape} must be ({batch}, {n_memory * n_filter})",
    )
    node.expect(state.is_variable, f"activation state '{state.name}' must be a variable tensor")
    if not (wf.is_const and wt.is_const and (bias is None or bias.is_const)):
        raise node.unsupported("weights_feature, weights_time and bias must be constant tensors")
    node.set_output_shape(0, (batch, n_unit))

    if x.type == "FLOAT32" and wf.type in ("INT8", "UINT8"):
        # LiteRT's hybrid SVDF (kernels/hybrid.py): the int8 feature product, weights_time dequantized once
        from edge_sdk.runtime.kernels import hybrid

        node.expect_types(wt, ("INT8", "UINT8"), "weights_time")
        for t, what in ((state, "activation state"), (out, "output")):
            node.expect_types(t, ("FLOAT32",), what)
        if bias is not None:
            node.expect_types(bias, ("FLOAT32",), "bias")
        feature = hybrid.svdf_feature(node, wf, batch, n_input, n_filter)
        return _svdf_float(node, batch, n_filter, n_unit, rank, n_memory, wf, wt, bias,
                           feature=feature, wt32=hybrid.dequantized_weights_time(node, wt))
    if x.type == "FLOAT32":
        for t, what in ((wf, "weights_feature"), (wt, "weights_time"), (state, "activation state"), (out, "output")):
            node.expect_types(t, ("FLOAT32",), what)
        if bias is not None:
            node.expect_types(bias, ("FLOAT32",), "bias")
        return _svdf_float(node, batch, n_filter, n_unit, rank, n_memory, wf, wt, bias)
    if x.type != "INT8":
        raise node.unsupported("SVDF runs on FLOAT32 or INT8 input")
    node.expect_types(wf, ("INT8",), "weights_feature")
    node.expect_types(wt, ("INT8", "INT16"), "weights_time")
    node.expect_types(state, ("INT8", "INT16"), "activation state")
    node.expect_types(out, ("INT8",), "output")
    if state.type != wt.type:
        raise node.unsupported(f"activation state {state.type} must match weights_time {wt.type}")
    if bias is not None:
        node.expect_types(bias, ("INT32",), "bias")
    for t, what in ((x, "input"), (wf, "weights_feature"), (wt, "weights_time"), (state, "activation state"),
                    (out, "output")):
        _per_tensor(node, t, what)
    # TFLM computes both effective scales in float32 before widening to double.
    scale_1 = float(_F32(_F32(x.s) * _F32(wf.s)) / _F32(state.s))
    scale_2 = float(_F32(_F32(state.s) * _F32(wt.s)) / _F32(out.s))
    if bias is not None and bias.quantized:
        expected = float(_F32(state.s) * _F32(wt.s))
        node.expect(abs(float(bias.s) - expected) < 1e-5,
                    f"bias scale {bias.s} differs from state scale x weights_time scale {expected}")
    m1, s1 = quantize_multiplier(scale_1)
    m2, s2 = quantize_multiplier(scale_2)
    _check_matmul_exact(node, n_input, 8, 8)

    fast = _svdf_int_tables(batch, n_filter, n_unit, rank, n_memory, x, wf, wt, bias, state, out, m1, s1, m2, s2)
    if fast is not None:
        return fast
    state_dtype = state.dtype
    smin, smax = TYPE_RANGES[state.type]
    x_zp, state_zp, out_zp = x.zp, state.zp, out.zp
    wf_t = wf.data.astype(np.float64).T.copy()  # (n_input, n_filter)
    wf_fold = -x_zp * wf.data.astype(np.int64).sum(axis=1)  # folds the input zero point: W.(x - zp)
    wt64 = wt.data.astype(np.int64)  # (n_filter, n_memory)
    bias64 = np.zeros(n_unit, np.int64) if bias is None else bias.data.astype(np.int64).reshape(n_unit)

    def run(inputs, outputs):
        st = inputs[4].reshape(batch, n_filter, n_memory)
        st[:, :, :-1] = st[:, :, 1:]
        feat = _int_matmul(inputs[0], wf_t) + wf_fold
        feat = np.clip(multiply_by_quantized_multiplier(feat, m1, s1), smin, smax) + state_zp
        st[:, :, -1] = feat.astype(state_dtype)  # C narrows the zero-point sum with a wrap
        scratch = np.einsum("bfm,fm->bf", st.astype(np.int64) - state_zp, wt64)
        acc = scratch.reshape(batch, n_unit, rank).sum(axis=2) + bias64
        y = multiply_by_quantized_multiplier(acc, m2, s2) + out_zp
        clip_into(outputs[0], y, -128, 127)

    return run


def _wrap_to(values: np.ndarray, type_name: str) -> np.ndarray:
    lo, hi = TYPE_RANGES[type_name]
    return (values - lo) % (hi - lo + 1) + lo


def _svdf_int_tables(batch, n_filter, n_unit, rank, n_memory, x, wf, wt, bias, state, out, m1, s1, m2, s2):
    """The integer SVDF in about 20 numpy calls; None when a bound does not hold (the general path runs then).

    Feature projection: one float64 GEMM with the multiplier folded into the weights, the rounding of
    MultiplyByQuantizedMultiplier as a floor (see the LSTM tables below), and one table from the rounded value
    to the stored state (clamp, zero point, the C narrowing). Memory x time weights and the sum over rank: one
    GEMM with a block-diagonal matrix, then the output multiplier on int64.
    """
    terms1 = _floor_terms(m1, min(s1, 0))
    terms2 = _floor_terms(m2, min(s2, 0))
    if terms1 is None or terms2 is None or s2 > 0:
        return None
    left1 = max(s1, 0)
    wf64 = wf.data.astype(np.int64)
    x_dev = max(127 - x.zp, x.zp + 128)
    acc1 = int(np.abs(wf64).sum(axis=1).max()) * x_dev
    _, e1, k1, fix1 = terms1
    d1 = 2.0 ** (31 + e1)
    if acc1 << left1 >= 1 << 31 or (acc1 * m1) << left1 >= 1 << 53:
        return None
    off = (((acc1 << left1) * m1 + k1) >> (31 + e1)) + 2
    if off > 1 << 20 or 2 * off * d1 >= 2.0**53:
        return None
    smin, smax = TYPE_RANGES[state.type]
    j = np.arange(2 * off + 1, dtype=np.int64) - off
    state_table = _wrap_to(np.clip(j, smin, smax) + state.zp, state.type).astype(state.dtype)
    w1 = wf64.T * ((m1 << left1) / d1)  # (I, F), exact multiples of 1/d1
    thr1, fixd1, kd1 = -(2.0**30) / d1, fix1 / d1, k1 / d1 + off

    # stage 2: (memory - zp) x time weights, summed per unit; bias and zero point in one constant
    wt64 = wt.data.astype(np.int64)
    unit_of = np.arange(n_filter) // rank
    block = np.zeros((n_filter, n_memory, n_unit))
    block[np.arange(n_filter), :, unit_of] = wt64
    block = block.reshape(n_filter * n_memory, n_unit)
    s_lo, s_hi = TYPE_RANGES[state.type]
    acc2 = int(np.abs(block).sum(axis=0).max()) * max(s_hi, -s_lo)  # raw state values, zero point folded below
    bias64 = np.zeros(n_unit, np.int64) if bias is None else bias.data.astype(np.int64).reshape(n_unit)
    const = bias64 - state.zp * np.bincount(unit_of, wt64.sum(axis=1), n_unit).astype(np.int64)
    if acc2 >= 1 << 53:
        return None
    may_wrap = acc2 + int(np.abs(const).max()) >= 1 << 31  # TFLM's int32 sum wraps
    _, e2, k2, fix2 = terms2
    sh2 = 31 + e2
    # y = v*m2 + 2**30 (v the int32 sum); the result is (y + k2 - 2**30 - [y < 0] fix2) >> sh2, plus the output zp
    c2 = k2 + (out.zp << sh2)
    thr2 = c2 - (1 << 30)

    xf = np.zeros((batch, x.shape[1]))
    z1 = np.zeros((batch, n_filter))
    mask1 = np.zeros((batch, n_filter), bool)
    i1 = np.zeros((batch, n_filter), np.int64)
    sf = np.zeros((batch, n_filter * n_memory))
    a2f = np.zeros((batch, n_unit))
    a2 = np.zeros((batch, n_unit), np.int64)
    mask2 = np.zeros((batch, n_unit), bool)
    x_zp = float(x.zp)
    take_state = state_table.take

    def run(inputs, outputs):
        flat = inputs[4]
        st = flat.reshape(batch, n_filter, n_memory)
        st[:, :, :-1] = st[:, :, 1:]
        np.subtract(inputs[0], x_zp, out=xf)
        np.dot(xf, w1, out=z1)
        np.less(z1, thr1, out=mask1)
        np.subtract(z1, fixd1, out=z1, where=mask1)
        np.add(z1, kd1, out=i1, casting="unsafe")
        take_state(i1, out=st[:, :, -1], mode="clip")
        np.copyto(sf, flat.reshape(batch, -1))
        np.dot(sf, block, out=a2f)
        np.copyto(a2, a2f, casting="unsafe")
        np.add(a2, const, out=a2)
        if may_wrap:
            np.add(a2, 1 << 31, out=a2)
            np.bitwise_and(a2, 0xFFFFFFFF, out=a2)
            np.subtract(a2, 1 << 31, out=a2)
        np.multiply(a2, m2, out=a2)
        np.add(a2, c2, out=a2)
        np.less(a2, thr2, out=mask2)
        np.subtract(a2, fix2, out=a2, where=mask2)
        np.right_shift(a2, sh2, out=a2)
        np.minimum(a2, 127, out=a2)
        np.maximum(a2, -128, out=outputs[0], casting="unsafe")

    run.table_path = "int32 wrap" if may_wrap else "plain"
    return run


def _svdf_float(node, batch, n_filter, n_unit, rank, n_memory, wf, wt, bias, feature=None, wt32=None):
    """The float SVDF; ``feature`` (x -> (batch, n_filter)) and ``wt32`` replace the float feature product and
    weights_time for the hybrid kernel (kernels/hybrid.py)."""
    act = float_activation(node, node.options.get("fused_activation_function", "NONE"))
    if feature is None:
        wf_t = np.ascontiguousarray(wf.data.astype(np.float32).T)
        feature = lambda x: x @ wf_t  # noqa: E731
    if wt32 is None:
        wt32 = wt.data.astype(np.float32)
    bias32 = np.zeros(n_unit, np.float32) if bias is None else bias.data.astype(np.float32).reshape(n_unit)

    def run(inputs, outputs):
        st = inputs[4].reshape(batch, n_filter, n_memory)
        st[:, :, :-1] = st[:, :, 1:]
        st[:, :, -1] = feature(inputs[0])
        scratch = np.einsum("bfm,fm->bf", st, wt32)
        y = scratch.reshape(batch, n_unit, rank).sum(axis=2, dtype=np.float32) + bias32
        outputs[0][...] = y if act is None else act(y)

    return run


def macs_svdf(node: Node) -> int:
    batch, n_input = node.inputs[0].shape
    n_filter = node.inputs[1].shape[0]
    n_memory = node.inputs[2].shape[1]
    return int(batch * n_filter * (n_input + n_memory))


# --------------------------------------------------------------------------------------------------- LSTM

LSTM_IN_W = (1, 2, 3, 4)  # input-to-{input, forget, cell, output} weights: the packed gate column order
LSTM_REC_W = (5, 6, 7, 8)
LSTM_BIAS = (12, 13, 14, 15)
LSTM_UNSUPPORTED_VARIANTS = {  # the integer sequence LSTM (TFLM's) has none of these
    9: "peephole", 10: "peephole", 11: "peephole", 16: "projection", 17: "projection",
    20: "layer normalization", 21: "layer normalization", 22: "layer normalization", 23: "layer normalization",
}


def lstm_gate_shapes(node: Node, batch: int, n_input: int) -> int:
    """The units of an LSTM node (LSTM / UNIDIRECTIONAL_SEQUENCE_LSTM, one input layout): its gate weights
    (n_state, n_input), recurrent weights (n_state, n_state) and biases (n_state,) as constants, its output and cell
    states (inputs 18, 19) as variable tensors of batch x n_state elements."""
    w = node.input(LSTM_IN_W[1])
    node.expect(len(w.shape) == 2, f"input {LSTM_IN_W[1]} weights must be 2-D, have shape {w.shape}")
    n_state = w.shape[0]
    for i in LSTM_IN_W + LSTM_REC_W + LSTM_BIAS:
        if not node.has_input(i):
            continue
        t = node.inputs[i]
        want = (n_state,) if i in LSTM_BIAS else (n_state, n_input) if i in LSTM_IN_W else (n_state, n_state)
        node.expect(tuple(t.shape) == want, f"input {i} {t.shape} must be {want}")
        if not t.is_const:
            raise node.unsupported(f"input {i} (gate weights / bias) must be a constant tensor")
    for i, what in ((18, "output state"), (19, "cell state")):
        t = node.input(i)
        node.expect(t.is_variable, f"{what} '{t.name}' must be a variable tensor")
        node.expect(t.size == batch * n_state, f"{what} has {t.size} elements, needs {batch * n_state}")
    return n_state

_GATE_PREACT_SCALE = 2.0**-12  # Q3.12, fixed in TFLM
_GATE_OUT_SCALE = 2.0**-15  # Q0.15, fixed in TFLM


def _lstm_layout(node: Node):
    node.expect_counts(24, 1)
    x = node.input(0)
    hidden = node.input(18)
    cell = node.input(19)
    out = node.outputs[0]
    for i, variant in LSTM_UNSUPPORTED_VARIANTS.items():
        if node.has_input(i):
            raise node.unsupported(f"{variant} LSTM (input {i}) is not supported, as in TFLM")
    if not (node.has_input(1) and node.has_input(5) and node.has_input(12)):
        raise node.unsupported("CIFG LSTM (no input gate: inputs 1, 5, 12 omitted) is not supported, as in TFLM")
    for i in LSTM_IN_W + LSTM_REC_W + LSTM_BIAS:
        node.input(i)
    node.expect(hidden.is_variable, f"hidden state '{hidden.name}' must be a variable tensor")
    node.expect(cell.is_variable, f"cell state '{cell.name}' must be a variable tensor")
    node.expect(len(x.shape) == 3, f"input must be 3-D, has shape {x.shape}")
    node.expect(len(hidden.shape) == 2, f"hidden state must be 2-D (batch, units), has shape {hidden.shape}")
    time_major = bool(node.options.get("time_major", False))
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    n_input = x.shape[2]
    n_state = hidden.shape[1]
    for i in LSTM_IN_W:
        w = node.inputs[i]
        node.expect(tuple(w.shape) == (n_state, n_input), f"input {i} weights {w.shape} must be ({n_state}, {n_input})")
    for i in LSTM_REC_W:
        w = node.inputs[i]
        node.expect(tuple(w.shape) == (n_state, n_state), f"input {i} weights {w.shape} must be ({n_state}, {n_state})")
    for i in LSTM_BIAS:
        b = node.inputs[i]
        node.expect(tuple(b.shape) == (n_state,), f"input {i} bias {b.shape} must be ({n_state},)")
    node.expect(hidden.size == batch * n_state, f"hidden state has {hidden.size} elements, needs {batch * n_state}")
    node.expect(cell.size == batch * n_state, f"cell state has {cell.size} elements, needs {batch * n_state}")
    for i in LSTM_IN_W + LSTM_REC_W + LSTM_BIAS:
        if not node.inputs[i].is_const:
            raise node.unsupported(f"input {i} (weights/bias) must be a constant tensor")
    node.set_output_shape(0, (x.shape[0], x.shape[1], n_state))
    if hidden.type != x.type or out.type != x.type:
        raise node.error(f"input {x.type}, hidden state {hidden.type} and output {out.type} must share a type")
    w_types = {node.inputs[i].type for i in LSTM_IN_W + LSTM_REC_W}
    b_types = {node.inputs[i].type for i in LSTM_BIAS}
    if len(w_types) != 1 or len(b_types) != 1:
        raise node.error(f"gate weights ({sorted(w_types)}) / biases ({sorted(b_types)}) must each share one type")
    act = node.options.get("fused_activation_function", "TANH")
    if act not in ("TANH", "SIGMOID"):
        raise node.unsupported(f"cell gate activation {act} (TFLM runs TANH or SIGMOID)")
    return x, hidden, cell, out, time_major, steps, batch, n_input, n_state, w_types.pop(), b_types.pop(), act


def prepare_unidirectional_sequence_lstm(node: Node):
    if node.has_input(0) and node.inputs[0].type == "INT8" and len(node.inputs) == 24 and node.has_input(21):
        return _lstm_int8_layer_norm(node)
    if node.has_input(0) and node.inputs[0].type == "FLOAT32" and (
            lstm_has_variant(node, LSTM_PARTS) or (node.has_input(2) and node.inputs[2].type == "INT8")):
        return _lstm_float_variant(node)
    x, hidden, cell, _out, time_major, steps, batch, n_input, n_state, w_type, b_type, act = _lstm_layout(node)
    cell_clip = float(node.options.get("cell_clip", 0.0) or 0.0)
    if x.type == "FLOAT32":
        if w_type != "FLOAT32" or b_type != "FLOAT32" or cell.type != "FLOAT32":
            raise node.unsupported(f"hybrid LSTM (float input, {w_type} weights, {cell.type} cell state)")
        return _lstm_float(node, time_major, steps, batch, n_state, act, cell_clip)
    if x.type not in ("INT8", "INT16"):
        raise node.unsupported("LSTM runs on FLOAT32, INT8 or INT16 input")
    if w_type != "INT8":
        raise node.unsupported(f"quantized LSTM needs INT8 weights, has {w_type}")
    want_bias = "INT32" if x.type == "INT8" else "INT64"
    if b_type != want_bias:
        raise node.unsupported(f"{x.type} LSTM needs {want_bias} biases, has {b_type}")
    if cell.type != "INT16":
        raise node.unsupported(f"quantized LSTM needs an INT16 cell state, has {cell.type}")
    return _lstm_int(node, x, hidden, cell, time_major, steps, batch, n_input, n_state, act, cell_clip)


def _lstm_int8_layer_norm(node: Node):
    """INT8 with layer normalization (inputs 20-23): TFLM refuses it; LiteRT runs its integer LSTM, the LSTM op's
    (lstm_integer.IntegerLstm), one step per time step over every batch row."""
    from edge_sdk.runtime.kernels.lstm_integer import IntegerLstm

    node.expect_counts(24, 1)
    x = node.input(0)
    node.expect(len(x.shape) == 3, f"input must be 3-D, has shape {x.shape}")
    time_major = bool(node.options.get("time_major", False))
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    n_input = x.shape[2]
    n_state = lstm_gate_shapes(node, batch, n_input)
    cell = IntegerLstm(node, n_input, n_state)
    node.set_output_shape(0, (x.shape[0], x.shape[1], n_state))

    def run(inputs, outputs):
        seq = inputs[0] if time_major else inputs[0].transpose(1, 0, 2)  # (T, B, I)
        out = outputs[0] if time_major else outputs[0].transpose(1, 0, 2)
        h_arr, c_arr = inputs[18].reshape(batch, n_state), inputs[19].reshape(batch, n_state)
        h, c = h_arr.astype(np.int64), c_arr.astype(np.int64)
        for t in range(steps):
            h, c = cell.step(seq[t].astype(np.int64), h, c)
            out[t] = h
        h_arr[...] = h
        c_arr[...] = c

    return run


def _gate_multiplier(act_scale: float, w_scale: float) -> tuple[int, int]:
    # GetQuantizedConvolutionMultipler: float32 product, then double division by the fixed Q3.12 scale.
    return quantize_multiplier(float(_F32(_F32(act_scale) * _F32(w_scale))) / _GATE_PREACT_SCALE)


def _mul_multiplier(s1: float, s2: float, s_out: float) -> tuple[int, int]:
    return quantize_multiplier(float(s1) * float(s2) / float(np.float64(_F32(s_out))))


class _LstmQ:
    """The integer LSTM's arithmetic as data: weights, gate multipliers, element-wise multipliers, ranges."""

    def __init__(self, node, x, hidden, cell, time_major, steps, batch, n_input, n_state, act, cell_clip):
        for i in (0, 18, 19) + LSTM_IN_W + LSTM_REC_W:
            _per_tensor(node, node.inputs[i], f"input {i}")
        self.wide = x.type == "INT16"
        _check_matmul_exact(node, max(n_input, n_state), 16 if self.wide else 8, 8)
        self.time_major, self.steps, self.batch, self.n_input, self.n_state = time_major, steps, batch, n_input, n_state
        self.w_in = [node.inputs[i].data.astype(np.int64) for i in LSTM_IN_W]  # gate order: input, forget, cell, output
        self.w_rec = [node.inputs[i].data.astype(np.int64) for i in LSTM_REC_W]
        self.bias = [node.inputs[i].data.astype(np.int64) for i in LSTM_BIAS]
        self.in_pairs = [_gate_multiplier(x.s, node.inputs[i].s) for i in LSTM_IN_W]
        self.rec_pairs = [_gate_multiplier(hidden.s, node.inputs[i].s) for i in LSTM_REC_W]
        self.x_zp, self.h_zp = x.zp, hidden.zp
        self.x_range, self.h_range = TYPE_RANGES[x.type], TYPE_RANGES[hidden.type]
        cell_scale = cell.s
        if not (np.isfinite(cell_scale) and cell_scale > 0):  # a malformed model (found by the fuzzer)
            raise node.unsupported(f"cell state scale {cell_scale!r} is not a power of two")
        self.tanh_mult, self.tanh_shift = tanh_params_for_power(checked_log2(cell_scale))
        self.clip_q = None
        if cell_clip > 0:
            self.clip_q = int(min(max(float(cell_clip) / float(cell_scale), -32768.0), 32767.0))  # static_cast truncates
        self.fc = _mul_multiplier(_GATE_OUT_SCALE, cell_scale, cell_scale)
        self.ig = _mul_multiplier(_GATE_OUT_SCALE, _GATE_OUT_SCALE, cell_scale)
        self.hm = _mul_multiplier(_GATE_OUT_SCALE, _GATE_OUT_SCALE, hidden.s)
        self.act = act


def _lstm_int(node, x, hidden, cell, time_major, steps, batch, n_input, n_state, act, cell_clip):
    q = _LstmQ(node, x, hidden, cell, time_major, steps, batch, n_input, n_state, act, cell_clip)
    fast = _lstm_int_tables(q)
    return fast if fast is not None else _lstm_int_generic(q)


def _lstm_int_generic(q: _LstmQ):
    """The step-by-step integer LSTM on int64 arrays (any parameters); the table path below is checked against it."""
    S, steps, batch, time_major = q.n_state, q.steps, q.batch, q.time_major
    in_mult = np.repeat([p[0] for p in q.in_pairs], S).astype(np.int64)
    in_shift = np.repeat([p[1] for p in q.in_pairs], S).astype(np.int64)
    rec_mult = np.repeat([p[0] for p in q.rec_pairs], S).astype(np.int64)
    rec_shift = np.repeat([p[1] for p in q.rec_pairs], S).astype(np.int64)
    w_in_t = np.concatenate(q.w_in, axis=0).astype(np.float64).T.copy()  # (I, 4S), packed gate columns
    w_rec_t = np.concatenate(q.w_rec, axis=0).astype(np.float64).T.copy()  # (S, 4S)
    # Zero points of the activations fold into per-column constants: W.(v - zp) = W.v - zp * rowsum(W).
    in_fold = -q.x_zp * np.concatenate([w.sum(axis=1) for w in q.w_in]) + np.concatenate(q.bias)
    rec_fold = -q.h_zp * np.concatenate([w.sum(axis=1) for w in q.w_rec])
    requant = multiply_by_quantized_multiplier_int64 if q.wide else multiply_by_quantized_multiplier
    (fc_m, fc_s), (ig_m, ig_s), (h_m, h_s) = q.fc, q.ig, q.hm
    tanh_mult, tanh_shift, clip_q, h_zp = q.tanh_mult, q.tanh_shift, q.clip_q, q.h_zp
    hmin, hmax = q.h_range
    cell_gate = tanh_int16 if q.act == "TANH" else logistic_int16

    def run(inputs, outputs):
        xs = inputs[0]
        seq = xs if time_major else xs.transpose(1, 0, 2)  # (T, B, I) view
        out = outputs[0] if time_major else outputs[0].transpose(1, 0, 2)
        h_arr = inputs[18].reshape(batch, S)
        c_arr = inputs[19].reshape(batch, S)
        pre_in = _int_matmul(seq.reshape(steps * batch, -1), w_in_t) + in_fold
        pre_in = _sat16(requant(pre_in, in_mult, in_shift)).reshape(steps, batch, 4 * S)
        h = h_arr.astype(np.int64)
        c = c_arr.astype(np.int64)
        for t in range(steps):
            rec = _sat16(requant(_int_matmul(h, w_rec_t) + rec_fold, rec_mult, rec_shift))
            g = _sat16(pre_in[t] + rec)
            sig = logistic_int16(g)  # one call for all gates; the cell gate's columns are replaced below
            i_g, f_g, o_g = sig[:, :S], sig[:, S:2 * S], sig[:, 3 * S:]
            c_g = cell_gate(g[:, 2 * S:3 * S])
            c = _sat16(multiply_by_quantized_multiplier(f_g * c, fc_m, fc_s))
            c = _sat16(c + _sat16(multiply_by_quantized_multiplier(i_g * c_g, ig_m, ig_s)))
            if clip_q is not None:
                c = np.minimum(np.maximum(c, -clip_q), clip_q)
            tc = tanh_int16(c, tanh_mult, tanh_shift)
            h = multiply_by_quantized_multiplier(tc * o_g, h_m, h_s) + h_zp
            h = np.minimum(np.maximum(h, hmin), hmax)
            out[t] = h
        h_arr[...] = h
        c_arr[...] = c

    return run


# The table path. MultiplyByQuantizedMultiplier(x, m, shift) with no left-shift overflow is one floor:
# SaturatingRoundingDoublingHighMul rounds half up, floor((x*m + 2**30) / 2**31), so with x' = x * 2**left
# and e = the right shift, the result is floor((x'*m + 2**30 + [e > 0] (2**(30+e) - [y < 0] 2**31)) / 2**(31+e))
# where y = x'*m + 2**30 (RoundingDivideByPOT rounds halves away from zero: the sign of y picks the nudge).
# The 16x8 form is floor((x*m16 + 2**(t-1)) / 2**t) with no sign term. Within 2**53 these are exact in float64
# too, where a GEMM can do the multiply. Every function of one int16 value (gate sigmoid/tanh, cell
# clip, tanh of the cell, the sign-dependent rounding terms) becomes a table over all its inputs; the tables
# take the unsaturated sum of two int16 values, so the saturation is in the table as well.

_TAB = 2 * SAT_DOMAIN  # entries per table region: u in [-65536, 65535] at index u + SAT_DOMAIN
_EXACT = float(1 << 53)


def _floor_terms(m: int, shift: int):
    """(M, e, K, fix) with MBQM(x, m, shift) = (x*M + K - [x*M < -2**30] fix) >> (31 + e), or None."""
    if shift > 0 or m < (1 << 30):
        return None
    e = -shift
    return m, e, (1 << 30) + ((1 << (30 + e)) if e else 0), (1 << 31) if e else 0


class _FixedGemm:
    """x @ w for a fixed w, x converted into a preallocated buffer of w's dtype, the product into another.

    One BLAS call: the interpreter runs every invoke with BLAS limited to its num_threads (one by default,
    edge_sdk.runtime.kernels.blas), so the product no longer needs slicing below OpenBLAS's threading threshold.
    """

    def __init__(self, w: np.ndarray, dtype, rows: int):
        k, n = w.shape
        self.x = np.zeros((rows, k), dtype)
        self.w = np.ascontiguousarray(w, dtype)
        self.out = np.zeros((rows, n), dtype)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        np.copyto(self.x.reshape(x.shape), x)
        np.matmul(self.x, self.w, out=self.out)
        return self.out


def _lstm_int_tables(q: _LstmQ):
    """Table-driven integer LSTM: about 14 numpy calls per time step. None when a bound does not hold."""
    S, B, T, wide = q.n_state, q.batch, q.steps, q.wide
    if S * B * T == 0:
        return None
    cg_tab, sig_tab, sig_min = gate_tables(q.act)
    sig_max = int(sig_tab.max())
    if sig_min < 2:  # the sign terms below read the sign of a product off its non-gate factor
        return None
    fc, ig, hm = (_floor_terms(*p) for p in (q.fc, q.ig, q.hm))
    if fc is None or ig is None or hm is None:
        return None
    cg_abs = int(np.abs(cg_tab).max())

    def bound(x_abs: int, terms) -> int:  # |MBQM(x)| for |x| <= x_abs
        m, e, k, _ = terms
        return (x_abs * m + k) // (1 << (31 + e)) + 1

    if bound(sig_max * 32768, fc) > 32767 or bound(sig_max * cg_abs, ig) > 32767:
        return None  # the int16 saturation of either product would matter
    if 32768 * sig_max * fc[0] + fc[2] + (SAT_DOMAIN << (31 + fc[1])) >= 1 << 63:
        return None  # int64 room for the products, rounding terms and table offsets below
    if cg_abs * sig_max * ig[0] + ig[2] >= 1 << 63:
        return None

    # ---- recurrent and input gate products: per gate (M as float multiplier, K, sign threshold, fix) ----
    hmin, hmax = q.h_range
    h_dev = max(hmax - q.h_zp, q.h_zp - hmin)
    xmin, xmax = q.x_range
    x_dev = max(xmax - q.x_zp, q.x_zp - xmin)
    rec = []
    for g, (m, shift) in enumerate(q.rec_pairs):
        acc_abs = int(np.abs(q.w_rec[g]).sum(axis=1).max()) * h_dev
        if wide:
            r16 = 0x7FFF if m >= 0x7FFF0000 else (m + (1 << 15)) >> 16
            t = 15 - shift
            if t < 1 or t > 62 or acc_abs * r16 >= 1 << 53:
                return None
            rec.append((r16 / 2.0**t, 0.5, 0.0, 0.0, ((acc_abs * r16 + (1 << (t - 1))) >> t) + 1, t))
        else:
            left = max(shift, 0)
            terms = _floor_terms(m, min(shift, 0))
            if terms is None or acc_abs << left >= 1 << 31 or (acc_abs * m) << left >= 1 << 53:
                return None
            _, e, k, fix = terms
            d = 2.0 ** (31 + e)
            rec.append(((m << left) / d, k / d, -(2.0**30) / d, fix / d, bound(acc_abs << left, terms), 31 + e))
    clamp_rec = max(r[4] for r in rec) > 32767
    if clamp_rec and max(r[4] for r in rec) >= 1 << 31:
        return None
    # In the fused form the floor of the recurrent term happens in the float -> index cast of its sum with the
    # (integer) input term, table offset and region base; that sum must stay exact.
    biggest = min(max(r[4] for r in rec), 32768) + 32768 + 3 * _TAB + 2
    fused = biggest * 2.0 ** max(r[5] for r in rec) < _EXACT

    in_terms = []
    for g, (m, shift) in enumerate(q.in_pairs):
        w = q.w_in[g]
        fold = -q.x_zp * w.sum(axis=1) + q.bias[g]
        acc_abs = int(np.abs(w).sum(axis=1).max()) * x_dev + int(np.abs(q.bias[g]).max())
        if wide:
            r16 = 0x7FFF if m >= 0x7FFF0000 else (m + (1 << 15)) >> 16
            t = 15 - shift
            if t < 1 or t > 62 or acc_abs * r16 >= 1 << 62 or (acc_abs * r16) >> t >= 1 << 31:
                return None
            in_terms.append((fold, r16, 1 << (t - 1), 0, 0, t))
        else:
            left = max(shift, 0)
            terms = _floor_terms(m, min(shift, 0))
            if terms is None or acc_abs << left >= 1 << 31:
                return None
            _, e, k, fix = terms
            ml = m << left
            in_terms.append((fold * ml + (1 << 30), ml, k - (1 << 30), fix, 0, 31 + e))

    # ---- layout: work rows 0-3 come from the cell table, rows 4-8 from the gate table ----
    # rows: 0 tanh(c) * M_h, 1 hidden rounding term, 2 c * M_fc, 3 forget-product rounding term,
    #       4 cell gate * M_ig, 5 input-product rounding term, 6 forget gate, 7 input gate, 8 output gate
    gate_of_row = (2, 2, 1, 0, 3)  # rows 4..8 take the pre-activations of the cell, cell, forget, input, output gate
    region_of_row = (0, 1, 2, 2, 2)
    m_fc, e_fc, k_fc, fix_fc = fc
    m_ig, e_ig, k_ig, fix_ig = ig
    m_h, e_h, k_h, fix_h = hm
    gate_table = np.concatenate([cg_tab * m_ig, k_ig - (cg_tab < 0) * fix_ig, sig_tab])

    r_h = bound(32768 * sig_max, hm)
    off_h = r_h + 1
    if r_h > 1 << 21 or 32768 * sig_max * hm[0] + hm[2] + (off_h << (31 + hm[1])) >= 1 << 63:
        return None
    u = saturated_domain()
    cc = u if q.clip_q is None else np.clip(u, -q.clip_q, q.clip_q)
    tc = tanh_int16(cc, q.tanh_mult, q.tanh_shift)
    cell_table = np.stack([
        tc * m_h,
        k_h - (tc < 0) * fix_h + (off_h << (31 + e_h)),
        cc * m_fc,
        k_fc - (cc < 0) * fix_fc + (SAT_DOMAIN << (31 + e_fc)),
    ])
    j = np.arange(2 * off_h + 1, dtype=np.int64) - off_h
    hidden_table = (np.clip(j + q.h_zp, hmin, hmax) - q.h_zp).astype(np.float64)  # centred: h - zero point

    w_rec5 = np.concatenate([q.w_rec[g] * rec[g][0] for g in gate_of_row], axis=0)  # (5S, S) float64, exact
    col = lambda values: np.repeat(np.asarray(values, np.float64), S).reshape(5 * S, 1)
    thr = col([rec[g][2] for g in gate_of_row])
    fix_d = col([rec[g][3] for g in gate_of_row])
    k_d = col([rec[g][1] for g in gate_of_row])
    base = col([r * _TAB + SAT_DOMAIN for r in region_of_row])
    pre_const = base + k_d if fused else base
    # saturating floor(z + k) to int16 is floor(clip(z, -32768 - k, 32767 - k) + k)
    rec_lo, rec_hi = (-32768.0 - k_d, 32767.0 - k_d) if fused else (-32768.0, 32767.0)
    pre2 = np.zeros((T, 5 * S, B))
    # the input products of all steps in one GEMM, gate columns in the order cell, forget, input, output (work
    # rows 5-8; row 4 repeats the cell gate's)
    in_gates = gate_of_row[1:]
    in_col = lambda k: np.concatenate([np.broadcast_to(in_terms[g][k], (S,)) for g in in_gates]).astype(np.int64)
    if wide:
        in_add, in_mul, in_k = in_col(0), in_col(1), in_col(2)
    else:  # fold + rounding terms in one constant; y < 0 becomes a < (the positive-side term)
        in_mul, in_k, in_fix = in_col(1), in_col(2), in_col(3)
        in_add = in_col(0) + in_k
    in_shift = in_col(5)
    w_in = np.concatenate([q.w_in[g] for g in in_gates], axis=0)  # (4S, I)
    # float32 sums of int8 x int8 products are exact below 2**24
    narrow = max(-xmin, xmax) * int(np.abs(w_in).sum(axis=1).max()) < 1 << 24
    gemm_in = _FixedGemm(w_in.T, np.float32 if narrow else np.float64, T * B)
    a = np.zeros((T * B, 4 * S), np.int64)
    neg = np.zeros((T * B, 4 * S), bool)
    a_cols = a.reshape(T, B, 4 * S).transpose(0, 2, 1)  # (T, 4S, B)
    pre_cell, pre_rest = pre2[:, :S], pre2[:, S:]
    const_cell, const_rest = pre_const[:S], pre_const[S:]
    sh_fc, sh_ig = 31 + e_fc, 31 + e_ig
    sh_h = 31 + e_h
    c_zero = SAT_DOMAIN

    # buffers (the state between steps lives here during one invoke)
    hc = np.zeros((T + 1, S, B))  # centred hidden state before each step
    z = np.zeros((5 * S, B))
    mask = np.zeros((5 * S, B), bool)
    idx1 = np.zeros((5 * S, B), np.int64)
    idx1_rows = idx1.reshape(5, S * B)
    work = np.zeros((9, S * B), np.int64)  # every row contiguous: numpy is quickest on flat operands
    gates = work[4:9]
    cell_rows = work[0:4]
    tcm, kh, cm, cfix, cgm, cgfix, f_g, i_g, o_g = work
    pf = np.zeros(S * B, np.int64)
    pi = np.zeros(S * B, np.int64)
    idx2 = np.zeros(S * B, np.int64)
    xh = np.zeros(S * B, np.int64)
    steps_views = [(hc[t], pre2[t], hc[t + 1].reshape(S * B)) for t in range(T)]
    time_major, h_zp = q.time_major, q.h_zp
    cfix_row = cell_table[3]
    signed = not wide  # the int32 rounding needs the sign of the recurrent product; the 16x8 one does not
    take_gate, take_cell, take_hidden = gate_table.take, cell_table.take, hidden_table.take
    dot, add, subtract, multiply, right_shift = np.dot, np.add, np.subtract, np.multiply, np.right_shift
    less, floor, minimum, maximum = np.less, np.floor, np.minimum, np.maximum

    def run(inputs, outputs):
        xs = inputs[0]
        seq = xs if time_major else xs.transpose(1, 0, 2)  # (T, B, I)
        np.copyto(a, gemm_in(seq), casting="unsafe")  # exact integer sums
        if wide:
            add(a, in_add, out=a)
            multiply(a, in_mul, out=a)
            add(a, in_k, out=a)
        else:
            multiply(a, in_mul, out=a)
            add(a, in_add, out=a)
            less(a, in_k, out=neg)
            subtract(a, in_fix, out=a, where=neg)
        right_shift(a, in_shift, out=a)
        clip_into(a, a, -32768, 32767)
        add(a_cols[:, :S], const_cell, out=pre_cell)
        add(a_cols, const_rest, out=pre_rest)

        h_arr = inputs[18].reshape(B, S)
        c_arr = inputs[19].reshape(B, S)
        np.subtract(h_arr.T, h_zp, out=hc[0], dtype=np.float64)  # not in int8: h - zp can leave its range
        c0 = c_arr.T.reshape(S * B).astype(np.int64)
        np.multiply(c0, m_fc, out=cm)
        c0 += c_zero
        np.take(cfix_row, c0, out=cfix, mode="clip")
        for h_prev, pre_t, h_next in steps_views:
            dot(w_rec5, h_prev, out=z)
            if signed:
                less(z, thr, out=mask)
                if not fused:
                    add(z, k_d, out=z)
                subtract(z, fix_d, out=z, where=mask)
            elif not fused:
                add(z, k_d, out=z)
            if not fused:
                floor(z, out=z)
            if clamp_rec:
                minimum(z, rec_hi, out=z)
                maximum(z, rec_lo, out=z)
            add(z, pre_t, out=idx1, casting="unsafe")
            take_gate(idx1_rows, out=gates, mode="clip")
            multiply(f_g, cm, out=pf)
            add(pf, cfix, out=pf)
            right_shift(pf, sh_fc, out=pf)
            multiply(i_g, cgm, out=pi)
            add(pi, cgfix, out=pi)
            right_shift(pi, sh_ig, out=pi)
            add(pf, pi, out=idx2)
            take_cell(idx2, axis=1, out=cell_rows, mode="clip")
            multiply(tcm, o_g, out=xh)
            add(xh, kh, out=xh)
            right_shift(xh, sh_h, out=xh)
            take_hidden(xh, out=h_next, mode="clip")
        out = outputs[0] if time_major else outputs[0].transpose(1, 0, 2)
        np.add(hc[1:].transpose(0, 2, 1), h_zp, out=out, casting="unsafe")
        np.add(hc[T].T, h_zp, out=h_arr, casting="unsafe")
        np.floor_divide(cm.reshape(S, B).T, m_fc, out=c_arr, casting="unsafe")

    run.table_variant = ("fused" if fused else "floor") + (" clamp" if clamp_rec else "")
    return run


def _sigmoid_f32(v: np.ndarray) -> np.ndarray:
    # reference_ops::Logistic: 1 above 16.619047..., exp(v) below -9, else 1 / (1 + exp(-v)).
    with np.errstate(over="ignore"):
        mid = _F32(1) / (_F32(1) + np.exp(-v))
    return np.where(v > _F32(16.619047164916992), _F32(1), np.where(v < _F32(-9), np.exp(v), mid)).astype(np.float32)


def _lstm_float(node, time_major, steps, batch, n_state, act, cell_clip):
    cell = lstm_float_cell([node.inputs[i].data for i in LSTM_IN_W], [node.inputs[i].data for i in LSTM_REC_W],
                           [node.inputs[i].data for i in LSTM_BIAS], steps, batch, n_state, act, cell_clip)

    def run(inputs, outputs):
        xs = inputs[0]
        seq = xs if time_major else xs.transpose(1, 0, 2)
        out = outputs[0] if time_major else outputs[0].transpose(1, 0, 2)
        cell(seq, inputs[18].reshape(batch, n_state), inputs[19].reshape(batch, n_state), out)

    return run


def lstm_float_cell(w_in, w_rec, bias, steps, batch, n_state, act, cell_clip, hybrid=None):
    """The float32 LSTM over ``steps`` time steps, shared by every float LSTM op (UNIDIRECTIONAL_SEQUENCE_LSTM here;
    LSTM and BIDIRECTIONAL_SEQUENCE_LSTM in rnn.py): gate weights and biases in the order input, forget, cell,
    output (w_in 4 x (S, I), w_rec 4 x (S, S), bias 4 x (S,)); ``act`` the cell gate's ("TANH" or "SIGMOID").

    Returns ``cell(seq, h, c, out)``: seq (T, B, I) and out (T, B, S) views in the order the steps run (a reversed
    view runs backwards), h and c (B, S) the state, read before the first step and written after the last.

    ``hybrid`` = (input weight scales (4,), recurrent weight scales (4,), asymmetric): INT8 weights, LiteRT's hybrid
    LSTM: x and h are quantized per batch row (``batch_quantize_floats``) and each gate adds
    float(q . W - zp * rowsum(W)) * (row scale x the gate's weight scale) to its bias; the cell is the float one.
    """
    S, T, B = n_state, steps, batch
    # gate columns input, forget, output, cell: the three sigmoid gates side by side
    order = (0, 1, 3, 2)
    w_type = np.float64 if hybrid else np.float32  # int8 products summed exactly in float64
    w_in_t = np.ascontiguousarray(np.concatenate([w_in[g] for g in order], axis=0).astype(w_type).T)
    w_rec_t = np.ascontiguousarray(np.concatenate([w_rec[g] for g in order], axis=0).astype(w_type).T)
    bias = np.concatenate([bias[g] for g in order]).astype(np.float32)
    if hybrid:
        in_scales, rec_scales, asymmetric = hybrid
        in_col = np.repeat(np.asarray(in_scales, np.float32)[list(order)], S)  # (4S,) the gate columns' scales
        rec_col = np.repeat(np.asarray(rec_scales, np.float32)[list(order)], S)
        in_sums, rec_sums = w_in_t.sum(axis=0).astype(np.int64), w_rec_t.sum(axis=0).astype(np.int64)

        def product(v, w_t, sums, col):
            q, scale, zp = batch_quantize_floats(v, asymmetric)
            acc = (q.astype(np.float64) @ w_t).astype(np.int64) - zp[:, None] * sums
            return acc.astype(np.float32) * (scale[:, None] * col)
    n_sig = 3 * S if act == "TANH" else 4 * S
    clip = _F32(cell_clip) if cell_clip > 0 else None
    hs = np.zeros((T + 1, B, S), np.float32)  # hidden state before each step, then the outputs
    c = np.zeros((B, S), np.float32)
    g = np.zeros((B, 4 * S), np.float32)
    e = np.zeros((B, n_sig), np.float32)
    low = np.zeros((B, n_sig), bool)
    tmp = np.zeros((B, S), np.float32)
    sig_in, sig_out = g[:, :n_sig], g[:, :n_sig]
    i_g, f_g, o_g, c_g = g[:, :S], g[:, S:2 * S], g[:, 2 * S:3 * S], g[:, 3 * S:]
    views = [(hs[t], hs[t + 1]) for t in range(T)]
    one, lower = _F32(1), _F32(-9)
    dot, add, multiply, negative, exp, reciprocal = np.dot, np.add, np.multiply, np.negative, np.exp, np.reciprocal

    def cell(seq, h_state, c_state, out):
        rows = seq.reshape(T * B, -1)
        pre = (bias + product(rows, w_in_t, in_sums, in_col) if hybrid else rows @ w_in_t + bias).reshape(T, B, 4 * S)
        hs[0] = h_state
        c[...] = c_state
        for (h_prev, h_next), pre_t in zip(views, pre):
            if hybrid:
                g[...] = product(h_prev, w_rec_t, rec_sums, rec_col)
            else:
                dot(h_prev, w_rec_t, out=g)
            add(g, pre_t, out=g)
            # reference Logistic: exp(v) below -9, else 1 / (1 + exp(-v)) (above 16.6 that is 1 in float32)
            np.less(sig_in, lower, out=low)
            negative(sig_in, out=e)
            exp(e, out=e)
            add(e, one, out=e)
            exp(sig_in, out=sig_out, where=low)
            reciprocal(e, out=sig_out, where=~low)
            if n_sig == 3 * S:
                np.tanh(c_g, out=c_g)
            multiply(f_g, c, out=c)
            multiply(i_g, c_g, out=tmp)
            add(c, tmp, out=c)
            if clip is not None:
                np.minimum(c, clip, out=c)
                np.maximum(c, -clip, out=c)
            np.tanh(c, out=tmp)
            multiply(tmp, o_g, out=h_next)
        out[...] = hs[1:]
        h_state[...] = hs[T]
        c_state[...] = c

    return cell


def macs_unidirectional_sequence_lstm(node: Node) -> int:
    x = node.inputs[0]
    time_major = bool(node.options.get("time_major", False))
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    return lstm_direction_macs(node, LSTM_PARTS, steps, batch, x.shape[2])


def lstm_direction_macs(node: Node, parts: dict, steps: int, batch: int, n_input: int, n_aux: int = 0) -> int:
    """One LSTM direction's MACs: per step and batch row, each present gate's input (and auxiliary) and recurrent
    products (3 gates with CIFG; recurrent width n_output), the three element-wise products per unit, and the
    projection's products."""
    n_state = node.inputs[parts["in_w"][1]].shape[0]
    projection = node.has_input(parts["proj_w"])
    n_output = node.inputs[parts["proj_w"]].shape[0] if projection else n_state
    gates = 4 if node.has_input(parts["in_w"][0]) else 3
    aux = n_aux if parts["aux_w"] is not None and node.has_input(parts["aux_w"][1]) else 0
    per_row = gates * n_state * (n_input + aux + n_output) + 3 * n_state + (n_output * n_state if projection else 0)
    return int(steps * batch * per_row)


# --------------------------------------------------------------------------------------------------- LSTM variants
# LiteRT's float and hybrid LSTM step (lstm_eval.cc LstmStepFloat / LstmStepHybrid) with every option: CIFG (no input
# gate: i = 1 - f), peephole (cell-to-gate diagonal weights: input and forget gates read the previous cell, the
# output gate the new one), layer normalization (each gate's products normalized over its units, times its
# coefficients, plus its bias, before the activation), projection (h = clip(P (o * act(c)) + bias), n_output units)
# and an auxiliary input (its own gate weights, BIDIRECTIONAL_SEQUENCE_LSTM). The plain form keeps its faster cell
# (lstm_float_cell).

# the input index of each part of a unidirectional LSTM (LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM)
LSTM_PARTS = {"in_w": LSTM_IN_W, "rec_w": LSTM_REC_W, "peephole": (9, 10, 11), "bias": LSTM_BIAS,
              "proj_w": 16, "proj_b": 17, "layer_norm": (20, 21, 22, 23), "aux_w": None}


def lstm_has_variant(node: Node, parts: dict) -> bool:
    """Whether a float LSTM direction uses any option beyond the plain cell (CIFG, peephole, projection, layer
    normalization, auxiliary input weights)."""
    optional = list(parts["peephole"]) + [parts["proj_w"], parts["proj_b"]]
    optional += list(parts["layer_norm"] or ()) + list(parts["aux_w"] or ())
    return not node.has_input(parts["in_w"][0]) or any(node.has_input(i) for i in optional)


class LstmParts:
    """One LSTM direction's constants, checked as LiteRT's CheckInputTensorDimensions does: gate weights (S, I) and
    recurrent weights (S, n_output), FLOAT32 or all INT8 per tensor (LiteRT's hybrid LSTM, with its peephole and
    projection weights INT8 too), float biases (S,); the input gate's weights and bias all present or all absent
    (CIFG); peephole weights (S,) for forget and output (and input without CIFG) or none; projection weights
    (n_output, S) with an optional bias (n_output,); layer-norm coefficients (S,) for forget, cell, output (and input
    without CIFG) or none; auxiliary input weights (S, A) for every present gate or none. Lists are in gate order
    input, forget, cell, output; an absent part is None."""

    def __init__(self, node: Node, parts: dict, n_input: int, n_aux: int = 0, what: str = ""):
        has = node.has_input
        self.what = what
        f_w = node.input(parts["in_w"][1])
        node.expect(len(f_w.shape) == 2, f"{what}input {parts['in_w'][1]} weights must be 2-D, have {f_w.shape}")
        S = self.n_state = f_w.shape[0]
        self.cifg = not has(parts["in_w"][0])
        gates = (1, 2, 3) if self.cifg else (0, 1, 2, 3)
        self.gates = gates
        if self.cifg and (has(parts["rec_w"][0]) or has(parts["bias"][0])):
            raise node.error(f"{what}CIFG LSTM (input {parts['in_w'][0]} omitted) with input-gate recurrent weights or "
                             f"bias (inputs {parts['rec_w'][0]}, {parts['bias'][0]})")
        self.w_type = f_w.type
        node.expect_types(f_w, ("FLOAT32", "INT8"), f"{what}input {parts['in_w'][1]} (gate weights)")
        hybrid = self.w_type == "INT8"
        self.n_output = S
        if has(parts["proj_w"]):
            p = node.inputs[parts["proj_w"]]
            node.expect(len(p.shape) == 2 and p.shape[1] == S,
                        f"{what}projection weights (input {parts['proj_w']}) {p.shape} must be (n_output, {S})")
            self.n_output = p.shape[0]
        elif has(parts["proj_b"]):
            raise node.error(f"{what}projection bias (input {parts['proj_b']}) without projection weights")
        n_out = self.n_output

        def weight(i, shape, name):
            t = node.input(i)
            node.expect_types(t, (self.w_type,), f"{what}input {i} ({name})")
            node.expect(tuple(t.shape) == shape, f"{what}input {i} ({name}) {t.shape} must be {shape}")
            if not t.is_const:
                raise node.unsupported(f"{what}input {i} ({name}) must be a constant tensor")
            if hybrid and (not t.quantized or t.scale.size != 1):
                raise node.unsupported(f"{what}input {i}: hybrid LSTM weights must be quantized per tensor")
            return t

        def vector(i, shape, name, types=("FLOAT32",)):
            t = node.input(i)
            node.expect_types(t, types, f"{what}input {i} ({name})")
            node.expect(tuple(t.shape) == shape, f"{what}input {i} ({name}) {t.shape} must be {shape}")
            if not t.is_const:
                raise node.unsupported(f"{what}input {i} ({name}) must be a constant tensor")
            return t

        def present(indices, name, weights):
            """The gates' tensors of one part: all present gates or none (None)."""
            if indices is None:
                return None
            there = [has(indices[g]) for g in gates]
            if not any(there) and not (self.cifg and has(indices[0])):
                return None
            if not all(there) or (self.cifg and has(indices[0])):
                raise node.error(f"{what}{name} (inputs {[indices[g] for g in range(4)]}) must be given for "
                                 f"{'forget, cell and output' if self.cifg else 'every'} gate")
            return [None if g not in gates else weights(indices[g], name) for g in range(4)]

        self.w_in = present(parts["in_w"], "gate weights", lambda i, n: weight(i, (S, n_input), n))
        self.w_rec = present(parts["rec_w"], "recurrent weights", lambda i, n: weight(i, (S, n_out), n))
        self.bias = present(parts["bias"], "gate biases", lambda i, n: vector(i, (S,), n))
        if self.w_in is None or self.w_rec is None or self.bias is None:
            raise node.error(f"{what}the forget, cell and output gates need recurrent weights and biases")
        peep = parts["peephole"]
        self.peephole = None
        if any(has(i) for i in peep):  # (input, forget, output)
            if not (has(peep[1]) and has(peep[2])) or has(peep[0]) == self.cifg:
                raise node.error(f"{what}peephole weights (inputs {list(peep)}): forget and output, and input exactly "
                                 f"when the input gate exists")
            self.peephole = [None if not has(i) else weight(i, (S,), "peephole weights") for i in peep]
        ln = parts["layer_norm"]
        self.layer_norm = None
        if ln is not None and has(ln[1]):
            self.layer_norm = present(ln, "layer-norm coefficients", lambda i, n: vector(i, (S,), n))
        elif ln is not None and any(has(i) for i in ln):
            raise node.error(f"{what}layer-norm coefficients (inputs {list(ln)}) without the forget gate's")
        self.w_aux = None
        if parts["aux_w"] is not None and any(has(i) for i in parts["aux_w"]):
            self.w_aux = present(parts["aux_w"], "auxiliary input weights", lambda i, n: weight(i, (S, n_aux), n))
        self.proj_w = weight(parts["proj_w"], (n_out, S), "projection weights") if has(parts["proj_w"]) else None
        self.proj_b = vector(parts["proj_b"], (n_out,), "projection bias") if has(parts["proj_b"]) else None
        self.asymmetric = bool(node.options.get("asymmetric_quantize_inputs", False))


def _lstm_logistic(v: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # exp(-v) of a large negative v is inf: 1 / inf = 0
        return (_F32(1) / (_F32(1) + np.exp(-v))).astype(np.float32)


def _lstm_activation(act: str):
    return np.tanh if act == "TANH" else _lstm_logistic


def _mean_stddev_normalization(v: np.ndarray) -> np.ndarray:
    """LiteRT's MeanStddevNormalization of rows (B, S): (v - mean) / sqrt(variance + 1e-8), float32."""
    n = _F32(v.shape[1])
    mean = (v.sum(axis=1, dtype=np.float32) / n)[:, None]
    diff = v - mean
    variance = (diff * diff).sum(axis=1, dtype=np.float32) / n
    return diff * (_F32(1) / np.sqrt(variance + _F32(1e-8)))[:, None]


def lstm_variant_cell(parts: LstmParts, steps: int, batch: int, act: str, cell_clip: float, proj_clip: float):
    """The LSTM over ``steps`` with every option of ``parts`` (float or hybrid weights), in LiteRT's order of
    operations. Returns ``cell(seq, h, c, out, aux=None)``: seq (T, B, I), aux (T, B, A) and out (T, B, n_output)
    views in the order the steps run, h (B, n_output) and c (B, S) read before the first step and written after
    the last."""
    S, n_out, T, B = parts.n_state, parts.n_output, steps, batch
    gates = parts.gates
    hybrid = parts.w_type == "INT8"
    asymmetric = parts.asymmetric
    activation = _lstm_activation(act)
    clip = _F32(cell_clip) if cell_clip > 0 else None
    p_clip = _F32(proj_clip) if proj_clip > 0 else None

    def stack(tensors):
        """The present gates' matrices side by side: (K, n gates x S) transposed weights, per-column scales."""
        if hybrid:
            w_t = np.concatenate([tensors[g].data.astype(np.float64) for g in gates], axis=0).T
            scales = np.repeat(np.asarray([_F32(tensors[g].s) for g in gates], np.float32), S)
            return np.ascontiguousarray(w_t), scales, w_t.sum(axis=0).astype(np.int64)
        w_t = np.concatenate([tensors[g].data.astype(np.float32) for g in gates], axis=0).T
        return np.ascontiguousarray(w_t), None, None

    def product(v, stacked):
        """v (rows, K) times the stacked weights: float32 products, or LiteRT's hybrid int8 product of v quantized
        per row (float(q . W - zp * rowsum(W)) * row scale * weight scale)."""
        w_t, scales, sums = stacked
        if not hybrid:
            return v @ w_t
        q, scale, zp = batch_quantize_floats(v, asymmetric)
        acc = (q.astype(np.float64) @ w_t).astype(np.int64) - zp[:, None] * sums
        return acc.astype(np.float32) * (scale[:, None] * scales)

    w_in, w_rec = stack(parts.w_in), stack(parts.w_rec)
    w_aux = stack(parts.w_aux) if parts.w_aux is not None else None
    bias = {g: parts.bias[g].data.astype(np.float32) for g in gates}
    ln = {g: parts.layer_norm[g].data.astype(np.float32) for g in gates} if parts.layer_norm else None

    def recovered(t):  # hybrid peephole weights: scale x int8 (VectorScalarMultiply), float32
        if t is None:
            return None
        return (_F32(t.s) * t.data.astype(np.float32)).astype(np.float32) if hybrid else t.data.astype(np.float32)

    peep = [recovered(t) for t in parts.peephole] if parts.peephole else None  # input, forget, output
    proj = None
    if parts.proj_w is not None:
        pw = parts.proj_w
        proj_t = np.ascontiguousarray(pw.data.astype(np.float64 if hybrid else np.float32).T)  # (S, n_out)
        proj = (proj_t, np.full(n_out, _F32(pw.s), np.float32) if hybrid else None,
                proj_t.sum(axis=0).astype(np.int64) if hybrid else None)
    proj_b = parts.proj_b.data.astype(np.float32) if parts.proj_b is not None else np.zeros(n_out, np.float32)
    k = len(gates)

    def cell(seq, h_state, c_state, out, aux=None):
        rows = seq.reshape(T * B, -1)
        pre = product(rows, w_in)  # (T B, k S): the input products of every step, gates side by side
        if w_aux is not None:
            pre = pre + product(aux.reshape(T * B, -1), w_aux)
        pre = pre.reshape(T, B, k, S)
        h = np.array(h_state, np.float32).reshape(B, n_out)
        c = np.array(c_state, np.float32).reshape(B, S)
        for t in range(T):
            acc = pre[t] + product(h, w_rec).reshape(B, k, S)  # (B, gates, S)
            gate = {g: acc[:, j] for j, g in enumerate(gates)}

            def finish(g, v, fn, c_peep=None, peep_w=None):
                if peep_w is not None:
                    v = v + peep_w * c_peep
                if ln is not None:
                    v = _mean_stddev_normalization(v) * ln[g] + bias[g]
                else:
                    v = v + bias[g]
                return fn(v).astype(np.float32)

            f = finish(1, gate[1], _lstm_logistic, c, peep[1] if peep else None)
            i = None if parts.cifg else finish(0, gate[0], _lstm_logistic, c, peep[0] if peep else None)
            g_c = finish(2, gate[2], activation)
            c = f * c + ((_F32(1) - f) if parts.cifg else i) * g_c
            if clip is not None:
                c = np.clip(c, -clip, clip)
            o = finish(3, gate[3], _lstm_logistic, c, peep[2] if peep else None)
            y = o * activation(c).astype(np.float32)
            if proj is not None:
                y = proj_b + product(y, proj)
                if p_clip is not None:
                    y = np.clip(y, -p_clip, p_clip)
            h = y.astype(np.float32)
            out[t] = h
        h_state[...] = h.reshape(h_state.shape)
        c_state[...] = c.reshape(c_state.shape)

    return cell


def lstm_variant_states(node: Node, parts: LstmParts, batch: int, h_i: int = 18, c_i: int = 19) -> None:
    """The output state (batch x n_output) and cell state (batch x n_state) of a float LSTM direction: FLOAT32
    variable tensors."""
    for i, n, what in ((h_i, parts.n_output, "output state"), (c_i, parts.n_state, "cell state")):
        t = node.input(i)
        node.expect_types(t, ("FLOAT32",), f"{parts.what}{what}")
        node.expect(t.is_variable, f"{parts.what}{what} '{t.name}' must be a variable tensor")
        node.expect(t.size == batch * n, f"{parts.what}{what} {t.shape} must hold ({batch}, {n})")


def _lstm_float_variant(node: Node):
    """A float UNIDIRECTIONAL_SEQUENCE_LSTM with CIFG, peephole, projection or layer normalization, or with INT8
    weights (LiteRT's hybrid kernel): lstm_variant_cell over the sequence."""
    node.expect_counts((20, 24), 1)
    x = node.input(0)
    node.expect(len(x.shape) == 3, f"input must be 3-D, has shape {x.shape}")
    time_major = bool(node.options.get("time_major", False))
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    act = node.options.get("fused_activation_function", "TANH")
    if act not in ("TANH", "SIGMOID"):
        raise node.unsupported(f"cell gate activation {act} (TANH or SIGMOID)")
    parts = LstmParts(node, LSTM_PARTS, x.shape[2])
    lstm_variant_states(node, parts, batch)
    node.expect_types(node.outputs[0], ("FLOAT32",), "output")
    node.set_output_shape(0, (x.shape[0], x.shape[1], parts.n_output))
    cell = lstm_variant_cell(parts, steps, batch, act, float(node.options.get("cell_clip", 0.0) or 0.0),
                             float(node.options.get("proj_clip", 0.0) or 0.0))

    def run(inputs, outputs):
        seq = inputs[0] if time_major else inputs[0].transpose(1, 0, 2)
        out = outputs[0] if time_major else outputs[0].transpose(1, 0, 2)
        cell(seq, inputs[18], inputs[19], out)

    return run
