"""Recurrent ops beside the sequence LSTM: RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN, LSTM (full
and basic kernel types) and BIDIRECTIONAL_SEQUENCE_LSTM, float32, as LiteRT's reference kernels (basic_rnn.cc,
unidirectional_sequence_rnn.cc, bidirectional_sequence_rnn.cc, lstm.cc, bidirectional_sequence_lstm.cc).

RNN family: per step h = act(x W^T + h R^T + b) (W (units, input), R (units, units)); the hidden state is a
variable tensor kept across invokes (the interpreter's persistent part) and the output of a step is its new hidden
state. The bidirectional op runs a forward cell over the sequence and a backward cell over it reversed, each with
its own weights and state; ``merge_outputs`` writes both into one output, forward units first. INT8 weights (per
tensor) select LiteRT's hybrid kernels (RNN family, full LSTM, bidirectional LSTM): the float input and state are
quantized per batch row at every step (``quant.batch_quantize_floats``; asymmetric_quantize_inputs picks the
asymmetric form), the int32 products scaled back to float; everything else stays float.

LSTM family: the float cell of the sequence LSTM (``sequence.lstm_float_cell``: gates input, forget, cell, output;
the cell gate and the cell output through tanh; optional cell clip). The full LSTM is one step of it on a
(batch, input) input with its state in variable tensors 18 / 19; BIDIRECTIONAL_SEQUENCE_LSTM runs it forward and
backward as the bidirectional RNN does. The basic kernel type (5 inputs, 4 outputs, LiteRT's LstmCell) takes the
previous state as plain inputs and one concatenated weight matrix (4 units, input + units) with gates in the order
input, cell, forget, output; it also writes the concatenated [x, h] and the gates' pre-activations. The fused
activation must be TANH (LiteRT's output is act(cell) then, as the shared cell computes). A full LSTM or a
bidirectional one with CIFG, peephole, projection (proj_clip), layer normalization (LSTM) or the auxiliary input
(bidirectional: with its weights both directions add its products; without them it is the backward pass's input)
runs ``sequence.lstm_variant_cell`` (LiteRT's LstmStepFloat / LstmStepHybrid), float or hybrid.

The LSTM op's integer forms are lstm_integer.py's: an INT8 input runs LiteRT's full-integer LSTM (5 intermediates,
with or without layer normalization), a UINT8 basic cell LiteRT's quantized LstmCell<4>.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.lstm_integer import prepare_basic_lstm_uint8, prepare_lstm_int8
from edge_sdk.runtime.kernels.node import Eval, Node
from edge_sdk.runtime.kernels.quant import batch_quantize_floats, float_activation
from edge_sdk.runtime.kernels.sequence import (
    LSTM_BIAS,
    LSTM_IN_W,
    LSTM_PARTS,
    LSTM_REC_W,
    LstmParts,
    lstm_float_cell,
    lstm_gate_shapes,
    lstm_direction_macs,
    lstm_has_variant,
    lstm_variant_cell,
    lstm_variant_states,
)

_F32 = np.float32


# --------------------------------------------------------------------------------------------------- RNN


def _rnn_cell(node: Node, w, r, b, steps: int, batch: int):
    """The RNN over ``steps``: ``cell(seq (T, B, I), h (B, U), out (T, B, U))`` (views; a reversed view runs
    backwards), h read before the first step and written after the last. Float weights: float products; INT8
    weights (the hybrid kernel): each step quantizes x and h per batch row (``_quantize_rows``) and adds the int32
    products times (row scale x weights scale) to the bias, as LiteRT's RnnBatchStep."""
    name = node.options.get("fused_activation_function", "NONE")
    if name == "SIGN_BIT":  # the C kernel's set: the clamps, TANH and SIGMOID
        raise node.unsupported("fused activation SIGN_BIT")
    act = float_activation(node, name)
    bias = b.data.astype(np.float32).reshape(-1)
    units = bias.size
    if w.type == "INT8":
        return _hybrid_rnn_cell(node, w, r, bias, act, steps, batch)
    w_t = np.ascontiguousarray(w.data.astype(np.float32).T)  # (I, U)
    r_t = np.ascontiguousarray(r.data.astype(np.float32).T)  # (U, U)

    def cell(seq, h_state, out):
        pre = (seq.reshape(steps * batch, -1) @ w_t + bias).reshape(steps, batch, units)
        h = h_state.copy()
        for t in range(steps):
            h = pre[t] + h @ r_t
            if act is not None:
                h = act(h).astype(np.float32)
            out[t] = h
        h_state[...] = h

    return cell


def _hybrid_rnn_cell(node: Node, w, r, bias, act, steps: int, batch: int):
    for t, what in ((w, "weights"), (r, "recurrent weights")):
        node.expect_types(t, ("INT8",), what)
        if not t.quantized or t.scale.size != 1:
            raise node.unsupported(f"hybrid RNN {what} '{t.name}' must be quantized per tensor")
    asymmetric = bool(node.options.get("asymmetric_quantize_inputs", False))
    w64, r64 = w.data.astype(np.int64), r.data.astype(np.int64)
    w_sums, r_sums = w64.sum(axis=1), r64.sum(axis=1)
    w_scale, r_scale = _F32(w.s), _F32(r.s)
    w_t, r_t = w64.T.astype(np.float64), r64.T.astype(np.float64)  # exact: |sums| < 2**31

    def product(v, mat_t, sums, w_s):
        """float32 (q . W - zp * rowsum(W)) * (row scale * weights scale) per row."""
        q, scale, zp = batch_quantize_floats(v, asymmetric)
        dot = (q.astype(np.float64) @ mat_t).astype(np.int64) - zp[:, None] * sums
        return dot.astype(np.float32) * (scale * w_s)[:, None]

    def cell(seq, h_state, out):
        h = h_state.copy()
        for t in range(steps):
            y = bias + product(seq[t], w_t, w_sums, w_scale)
            y = y + product(h, r_t, r_sums, r_scale)
            h = y if act is None else act(y).astype(np.float32)
            out[t] = h
        h_state[...] = h

    return cell


def _rnn_weights(node: Node, first: int, n_input: int, batch: int, what: str = ""):
    """Inputs first .. first+3 of an RNN (weights, recurrent weights, bias, hidden state) checked: constant weights
    (float32, or int8 for the hybrid kernel) and float32 bias, a float32 variable state (batch, units). Returns them
    and the unit count."""
    w, r, b, h = (node.input(first + k) for k in range(4))
    node.expect_types(w, ("FLOAT32", "INT8"), f"{what}weights")
    node.expect_types(r, (w.type,), f"{what}recurrent weights")
    for t, name in ((b, "bias"), (h, "hidden state")):
        node.expect_types(t, ("FLOAT32",), f"{what}{name}")
    node.expect(len(w.shape) == 2 and w.shape[1] == n_input,
                f"{what}weights {w.shape} must be (units, {n_input})")
    units = w.shape[0]
    node.expect(tuple(r.shape) == (units, units), f"{what}recurrent weights {r.shape} must be ({units}, {units})")
    node.expect(tuple(b.shape) == (units,), f"{what}bias {b.shape} must be ({units},)")
    node.expect(tuple(h.shape) == (batch, units), f"{what}hidden state {h.shape} must be ({batch}, {units})")
    node.expect(h.is_variable, f"{what}hidden state '{h.name}' must be a variable tensor")
    if not (w.is_const and r.is_const and b.is_const):
        raise node.unsupported(f"{what}weights and bias must be constant tensors")
    return w, r, b, units


def _sequence_layout(node: Node, x, time_major: bool):
    node.expect(len(x.shape) == 3, f"input must be 3-D, has shape {x.shape}")
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    return steps, batch


def _time_first(a: np.ndarray, time_major: bool) -> np.ndarray:
    return a if time_major else a.transpose(1, 0, 2)


def prepare_rnn(node: Node) -> Eval:
    node.expect_counts(5, 1)
    x = node.input(0)
    node.expect_types(x, ("FLOAT32",))
    node.expect(len(x.shape) == 2, f"input must be 2-D (batch, input), has shape {x.shape}")
    batch, n_input = x.shape
    w, r, b, units = _rnn_weights(node, 1, n_input, batch)
    node.expect_types(node.outputs[0], ("FLOAT32",), "output")
    node.set_output_shape(0, (batch, units))
    cell = _rnn_cell(node, w, r, b, 1, batch)

    def run(inputs, outputs):
        cell(inputs[0][None], inputs[4], outputs[0][None])

    return run


def prepare_unidirectional_sequence_rnn(node: Node) -> Eval:
    node.expect_counts(5, 1)
    x = node.input(0)
    node.expect_types(x, ("FLOAT32",))
    time_major = bool(node.options.get("time_major", False))
    steps, batch = _sequence_layout(node, x, time_major)
    w, r, b, units = _rnn_weights(node, 1, x.shape[2], batch)
    node.expect_types(node.outputs[0], ("FLOAT32",), "output")
    node.set_output_shape(0, (x.shape[0], x.shape[1], units))
    cell = _rnn_cell(node, w, r, b, steps, batch)

    def run(inputs, outputs):
        cell(_time_first(inputs[0], time_major), inputs[4], _time_first(outputs[0], time_major))

    return run


def _bidirectional_outputs(node: Node, x, n_fw: int, n_bw: int) -> tuple[slice, slice, int, int]:
    """Output shapes of a bidirectional op; (forward slice, backward slice, forward output, backward output) of the
    last axis: one output of n_fw + n_bw units with merge_outputs, else two."""
    merge = bool(node.options.get("merge_outputs", False))
    node.expect(len(node.outputs) == (1 if merge else 2),
                f"expects {1 if merge else 2} outputs with merge_outputs={merge}, has {len(node.outputs)}")
    for i, out in enumerate(node.outputs):
        node.expect_types(out, ("FLOAT32",), f"output {i}")
    if merge:
        node.set_output_shape(0, (x.shape[0], x.shape[1], n_fw + n_bw))
        return slice(0, n_fw), slice(n_fw, n_fw + n_bw), 0, 0
    node.set_output_shape(0, (x.shape[0], x.shape[1], n_fw))
    node.set_output_shape(1, (x.shape[0], x.shape[1], n_bw))
    return slice(None), slice(None), 0, 1


def _no_aux_input(node: Node, first: int, last: int) -> None:
    for i in range(first, last + 1):
        if node.has_input(i):
            raise node.unsupported(f"the auxiliary input (input {i}) is not supported")


def prepare_bidirectional_sequence_rnn(node: Node) -> Eval:
    node.expect(9 <= len(node.inputs) <= 12, f"expects 9..12 inputs, has {len(node.inputs)}")
    x = node.input(0)
    node.expect_types(x, ("FLOAT32",))
    _no_aux_input(node, 9, 11)
    time_major = bool(node.options.get("time_major", False))
    steps, batch = _sequence_layout(node, x, time_major)
    fw_w, fw_r, fw_b, n_fw = _rnn_weights(node, 1, x.shape[2], batch, "forward ")
    bw_w, bw_r, bw_b, n_bw = _rnn_weights(node, 5, x.shape[2], batch, "backward ")
    fw_cols, bw_cols, fw_out, bw_out = _bidirectional_outputs(node, x, n_fw, n_bw)
    fw = _rnn_cell(node, fw_w, fw_r, fw_b, steps, batch)
    bw = _rnn_cell(node, bw_w, bw_r, bw_b, steps, batch)

    def run(inputs, outputs):
        seq = _time_first(inputs[0], time_major)
        fw(seq, inputs[4], _time_first(outputs[fw_out], time_major)[..., fw_cols])
        bw(seq[::-1], inputs[8], _time_first(outputs[bw_out], time_major)[::-1, ..., bw_cols])

    return run


# --------------------------------------------------------------------------------------------------- LSTM


def _lstm_gates(node: Node, in_w, rec_w, bias, n_input: int, what: str = ""):
    """The four gates' inputs (index tuples in the order input, forget, cell, output) checked: constant weights of
    shapes (S, I), (S, S), all FLOAT32 or all INT8 per tensor (LiteRT's hybrid LSTM), float32 constant biases (S,).
    Returns (w_in, w_rec, bias) as lists of arrays, S, and the hybrid spec of ``sequence.lstm_float_cell`` (None
    for float weights)."""
    missing = [i for i in (in_w[0], rec_w[0], bias[0]) if not node.has_input(i)]
    if missing:
        raise node.unsupported(f"{what}CIFG LSTM (no input gate: inputs {missing} omitted) is not supported")
    tensors = [node.input(i) for i in in_w + rec_w + bias]
    n_state = tensors[0].shape[0] if tensors[0].shape else 0
    w_type = tensors[0].type
    node.expect_types(tensors[0], ("FLOAT32", "INT8"), f"{what}input {in_w[0]} (gate weights)")
    for i, t in zip(in_w + rec_w + bias, tensors):
        node.expect_types(t, ("FLOAT32",) if i in bias else (w_type,), f"{what}input {i} (gate weights / bias)")
        if not t.is_const:
            raise node.unsupported(f"{what}input {i} (gate weights / bias) must be a constant tensor")
        if i not in bias and w_type == "INT8" and (not t.quantized or t.scale.size != 1):
            raise node.unsupported(f"{what}input {i}: hybrid LSTM weights must be quantized per tensor")
    for i in in_w:
        t = node.inputs[i]
        node.expect(tuple(t.shape) == (n_state, n_input), f"input {i} weights {t.shape} must be ({n_state}, {n_input})")
    for i in rec_w:
        t = node.inputs[i]
        node.expect(tuple(t.shape) == (n_state, n_state), f"input {i} weights {t.shape} must be ({n_state}, {n_state})")
    for i in bias:
        t = node.inputs[i]
        node.expect(tuple(t.shape) == (n_state,), f"input {i} bias {t.shape} must be ({n_state},)")
    data = lambda idx: [node.inputs[i].data for i in idx]  # noqa: E731
    hybrid = None
    if w_type == "INT8":
        scales = lambda idx: [float(node.inputs[i].s) for i in idx]  # noqa: E731
        hybrid = (scales(in_w), scales(rec_w), bool(node.options.get("asymmetric_quantize_inputs", False)))
    return data(in_w), data(rec_w), data(bias), n_state, hybrid


def _lstm_state(node: Node, i: int, batch: int, n_state: int, what: str):
    t = node.input(i)
    node.expect_types(t, ("FLOAT32",), what)
    node.expect(t.is_variable, f"{what} '{t.name}' must be a variable tensor")
    node.expect(t.size == batch * n_state, f"{what} {t.shape} must hold ({batch}, {n_state})")


def _lstm_tanh(node: Node) -> float:
    """The float LSTM options this module runs: TANH activation, no projection clip; returns the cell clip."""
    act = node.options.get("fused_activation_function", "NONE")
    if act != "TANH":
        raise node.unsupported(f"LSTM fused activation {act} (TANH only)")
    return float(node.options.get("cell_clip", 0.0) or 0.0)


def prepare_lstm(node: Node) -> Eval:
    if node.options.get("kernel_type", "FULL") == "BASIC":
        return _prepare_basic_lstm(node)
    node.expect_counts((20, 24), 1)
    x = node.input(0)
    node.expect_types(x, ("FLOAT32", "INT8"))
    node.expect(len(x.shape) == 2, f"input must be 2-D (batch, input), has shape {x.shape}")
    if x.type == "INT8":
        return _prepare_lstm_int8(node, x)
    cell_clip = _lstm_tanh(node)
    batch, n_input = x.shape
    if lstm_has_variant(node, LSTM_PARTS):
        return _prepare_lstm_variant(node, batch, n_input, cell_clip)
    w_in, w_rec, bias, n_state, hybrid = _lstm_gates(node, LSTM_IN_W, LSTM_REC_W, LSTM_BIAS, n_input)
    _lstm_state(node, 18, batch, n_state, "output state")
    _lstm_state(node, 19, batch, n_state, "cell state")
    node.expect_types(node.outputs[0], ("FLOAT32",), "output")
    node.set_output_shape(0, (batch, n_state))
    cell = lstm_float_cell(w_in, w_rec, bias, 1, batch, n_state, "TANH", cell_clip, hybrid)

    def run(inputs, outputs):
        cell(inputs[0][None], inputs[18].reshape(batch, n_state), inputs[19].reshape(batch, n_state), outputs[0][None])

    return run


def _prepare_lstm_variant(node: Node, batch: int, n_input: int, cell_clip: float) -> Eval:
    """One step of the LSTM with CIFG, peephole, projection or layer normalization (float or hybrid weights)."""
    parts = LstmParts(node, LSTM_PARTS, n_input)
    lstm_variant_states(node, parts, batch)
    node.expect_types(node.outputs[0], ("FLOAT32",), "output")
    node.set_output_shape(0, (batch, parts.n_output))
    cell = lstm_variant_cell(parts, 1, batch, "TANH", cell_clip, float(node.options.get("proj_clip", 0.0) or 0.0))

    def run(inputs, outputs):
        cell(inputs[0][None], inputs[18], inputs[19], outputs[0][None])

    return run


def _prepare_lstm_int8(node: Node, x) -> Eval:
    """LiteRT's full-integer LSTM (lstm_integer.py): shapes checked here as for the float one."""
    batch, n_input = x.shape
    return prepare_lstm_int8(node, batch, n_input, lstm_gate_shapes(node, batch, n_input))


# the basic weights' row blocks (input, cell, forget, output) in the cell's gate order (input, forget, cell, output)
_BASIC_GATE = (0, 2, 1, 3)


def _prepare_basic_lstm(node: Node) -> Eval:
    """LiteRT's basic LSTM cell (kernel_type BASIC): inputs x (B, I), previous activation (B, S), weights
    (4S, I + S), bias (4S,), previous state (B, S); outputs activation, state, concat [x, h] (B, I + S) and the gate
    pre-activations (B, 4S), blocks input, cell, forget, output. Float32, or LiteRT's quantized cell (UINT8
    activations and weights, INT16 state: lstm_integer.prepare_basic_lstm_uint8)."""
    node.expect_counts(5, 4)
    x, h, w, b, c = (node.input(i) for i in range(5))
    node.expect_types(x, ("FLOAT32", "UINT8"))
    if _lstm_tanh(node) != 0.0 or float(node.options.get("proj_clip", 0.0) or 0.0) != 0.0:
        raise node.unsupported("the basic LSTM kernel takes no cell or projection clip (LiteRT)")
    if x.type == "FLOAT32":
        for t, what in ((h, "previous activation"), (w, "weights"), (b, "bias"), (c, "previous state")):
            node.expect_types(t, ("FLOAT32",), what)
        for i, out in enumerate(node.outputs):
            node.expect_types(out, ("FLOAT32",), f"output {i}")
    node.expect(len(x.shape) == 2 and len(h.shape) == 2 and h.shape[0] == x.shape[0],
                f"input {x.shape} and previous activation {h.shape} must be (batch, input) and (batch, units)")
    batch, n_input = x.shape
    S = h.shape[1]
    node.expect(tuple(w.shape) == (4 * S, n_input + S), f"weights {w.shape} must be ({4 * S}, {n_input + S})")
    node.expect(tuple(b.shape) == (4 * S,), f"bias {b.shape} must be ({4 * S},)")
    node.expect(tuple(c.shape) == (batch, S), f"previous state {c.shape} must be ({batch}, {S})")
    if not (w.is_const and b.is_const):
        raise node.unsupported("weights and bias must be constant tensors")
    for i, shape in enumerate(((batch, S), (batch, S), (batch, n_input + S), (batch, 4 * S))):
        node.set_output_shape(i, shape)
    if x.type == "UINT8":
        return prepare_basic_lstm_uint8(node, batch, n_input, S)
    blocks = [w.data[k * S:(k + 1) * S] for k in _BASIC_GATE]
    biases = [b.data[k * S:(k + 1) * S] for k in _BASIC_GATE]
    cell = lstm_float_cell([blk[:, :n_input] for blk in blocks], [blk[:, n_input:] for blk in blocks], biases,
                           1, batch, S, "TANH", 0.0)
    w_t = np.ascontiguousarray(w.data.astype(np.float32).T)  # (I + S, 4S)
    bias = b.data.astype(np.float32)

    def run(inputs, outputs):
        act, state, concat, gates = outputs
        concat[:, :n_input] = inputs[0]
        concat[:, n_input:] = inputs[1]
        np.matmul(concat, w_t, out=gates)
        gates += bias
        act[...] = inputs[1]
        state[...] = inputs[4]
        cell(inputs[0][None], act, state, act[None])

    return run


_BI_FW = ((1, 2, 3, 4), (5, 6, 7, 8), (12, 13, 14, 15), 35, 36)  # input, recurrent weights, biases, h, c
_BI_BW = ((18, 19, 20, 21), (22, 23, 24, 25), (29, 30, 31, 32), 37, 38)
# each direction's parts (sequence.LstmParts); no layer normalization (LiteRT's op has none); input 39 the
# auxiliary input
_BI_PARTS = ({"in_w": _BI_FW[0], "rec_w": _BI_FW[1], "peephole": (9, 10, 11), "bias": _BI_FW[2], "proj_w": 16,
              "proj_b": 17, "layer_norm": None, "aux_w": (40, 41, 42, 43)},
             {"in_w": _BI_BW[0], "rec_w": _BI_BW[1], "peephole": (26, 27, 28), "bias": _BI_BW[2], "proj_w": 33,
              "proj_b": 34, "layer_norm": None, "aux_w": (44, 45, 46, 47)})
_BI_AUX = 39


def prepare_bidirectional_sequence_lstm(node: Node) -> Eval:
    node.expect(39 <= len(node.inputs) <= 48, f"expects 39..48 inputs, has {len(node.inputs)}")
    x = node.input(0)
    node.expect_types(x, ("FLOAT32",))
    cell_clip = _lstm_tanh(node)
    time_major = bool(node.options.get("time_major", True))
    steps, batch = _sequence_layout(node, x, time_major)
    if node.has_input(_BI_AUX) or any(lstm_has_variant(node, p) for p in _BI_PARTS):
        return _prepare_bidirectional_variant(node, x, time_major, steps, batch, cell_clip)
    cells, states = [], []
    for (in_w, rec_w, bias, h_i, c_i), what in ((_BI_FW, "forward "), (_BI_BW, "backward ")):
        w_in, w_rec, b, n_state, hybrid = _lstm_gates(node, in_w, rec_w, bias, x.shape[2], what)
        _lstm_state(node, h_i, batch, n_state, f"{what}output state")
        _lstm_state(node, c_i, batch, n_state, f"{what}cell state")
        cells.append(lstm_float_cell(w_in, w_rec, b, steps, batch, n_state, "TANH", cell_clip, hybrid))
        states.append((h_i, c_i, n_state))
    fw_cols, bw_cols, fw_out, bw_out = _bidirectional_outputs(node, x, states[0][2], states[1][2])
    (fw_h, fw_c, n_fw), (bw_h, bw_c, n_bw) = states
    fw, bw = cells

    def run(inputs, outputs):
        seq = _time_first(inputs[0], time_major)
        fw(seq, inputs[fw_h].reshape(batch, n_fw), inputs[fw_c].reshape(batch, n_fw),
           _time_first(outputs[fw_out], time_major)[..., fw_cols])
        bw(seq[::-1], inputs[bw_h].reshape(batch, n_bw), inputs[bw_c].reshape(batch, n_bw),
           _time_first(outputs[bw_out], time_major)[::-1, ..., bw_cols])

    return run


def _prepare_bidirectional_variant(node: Node, x, time_major: bool, steps: int, batch: int, cell_clip: float) -> Eval:
    """BIDIRECTIONAL_SEQUENCE_LSTM with CIFG, peephole or projection in either direction, or an auxiliary input
    (input 39, (T, B, A) in the input's layout). With auxiliary weights (40-47) both directions add its products
    (LiteRT's stacking with cross links); without them the backward direction runs on the auxiliary input instead
    of the input (stacking without cross links: it must have the input's shape)."""
    aux = node.inputs[_BI_AUX] if node.has_input(_BI_AUX) else None
    n_aux = 0
    if aux is not None:
        node.expect_types(aux, ("FLOAT32",), "auxiliary input")
        node.expect(len(aux.shape) == 3 and tuple(aux.shape[:2]) == tuple(x.shape[:2]),
                    f"auxiliary input {aux.shape} must be 3-D with the input's first two dimensions {x.shape[:2]}")
        n_aux = aux.shape[2]
    fw, bw = (LstmParts(node, p, x.shape[2], n_aux, what) for p, what in zip(_BI_PARTS, ("forward ", "backward ")))
    if (fw.w_aux is None) != (bw.w_aux is None):
        raise node.error("auxiliary input weights (inputs 40-47) must be given for both directions or neither")
    cross = fw.w_aux is not None
    if cross and aux is None:
        raise node.error(f"auxiliary input weights without the auxiliary input (input {_BI_AUX})")
    bw_on_aux = aux is not None and not cross
    if bw_on_aux:
        node.expect(tuple(aux.shape) == tuple(x.shape),
                    f"auxiliary input {aux.shape} without auxiliary weights feeds the backward pass: must be {x.shape}")
    if fw.w_type != bw.w_type:
        raise node.error(f"forward ({fw.w_type}) and backward ({bw.w_type}) weights must share a type")
    lstm_variant_states(node, fw, batch, *_BI_FW[3:])
    lstm_variant_states(node, bw, batch, *_BI_BW[3:])
    fw_cols, bw_cols, fw_out, bw_out = _bidirectional_outputs(node, x, fw.n_output, bw.n_output)
    proj_clip = float(node.options.get("proj_clip", 0.0) or 0.0)
    fw_cell = lstm_variant_cell(fw, steps, batch, "TANH", cell_clip, proj_clip)
    bw_cell = lstm_variant_cell(bw, steps, batch, "TANH", cell_clip, proj_clip)

    def run(inputs, outputs):
        seq = _time_first(inputs[0], time_major)
        aux_seq = _time_first(inputs[_BI_AUX], time_major) if aux is not None else None
        fw_cell(seq, inputs[_BI_FW[3]], inputs[_BI_FW[4]], _time_first(outputs[fw_out], time_major)[..., fw_cols],
                aux_seq if cross else None)
        bw_seq = aux_seq if bw_on_aux else seq
        bw_cell(bw_seq[::-1], inputs[_BI_BW[3]], inputs[_BI_BW[4]],
                _time_first(outputs[bw_out], time_major)[::-1, ..., bw_cols], aux_seq[::-1] if cross else None)

    return run


# --------------------------------------------------------------------------------------------------- MACs
# Counted after prepare: each step's input and recurrent products (and the LSTM's three element-wise products per
# unit), per batch row and direction.


def _rnn_macs(steps: int, batch: int, n_input: int, units: int) -> int:
    return int(steps * batch * units * (n_input + units))


def _lstm_macs(steps: int, batch: int, n_input: int, n_state: int) -> int:
    return int(steps * batch * (4 * n_state * (n_input + n_state) + 3 * n_state))


def _steps_batch(node: Node, time_major_default: bool = False) -> tuple[int, int]:
    x = node.inputs[0]
    time_major = bool(node.options.get("time_major", time_major_default))
    return (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])


def macs_rnn(node: Node) -> int:
    batch, n_input = node.inputs[0].shape
    return _rnn_macs(1, batch, n_input, node.inputs[1].shape[0])


def macs_unidirectional_sequence_rnn(node: Node) -> int:
    steps, batch = _steps_batch(node)
    return _rnn_macs(steps, batch, node.inputs[0].shape[2], node.inputs[1].shape[0])


def macs_bidirectional_sequence_rnn(node: Node) -> int:
    steps, batch = _steps_batch(node)
    n_input = node.inputs[0].shape[2]
    return sum(_rnn_macs(steps, batch, n_input, node.inputs[i].shape[0]) for i in (1, 5))


def macs_lstm(node: Node) -> int:
    batch, n_input = node.inputs[0].shape
    if node.options.get("kernel_type", "FULL") == "BASIC":
        return _lstm_macs(1, batch, n_input, node.outputs[0].shape[-1])
    return lstm_direction_macs(node, LSTM_PARTS, 1, batch, n_input)


def macs_bidirectional_sequence_lstm(node: Node) -> int:
    steps, batch = _steps_batch(node, time_major_default=True)
    n_input = node.inputs[0].shape[2]
    n_aux = node.inputs[_BI_AUX].shape[2] if node.has_input(_BI_AUX) else 0
    return sum(lstm_direction_macs(node, parts, steps, batch, n_input, n_aux) for parts in _BI_PARTS)
