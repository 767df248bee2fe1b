"""LiteRT's full-integer LSTM (lstm.cc + lstm_eval.cc, "8x8_16"): int8 input, output and output state, int8 gate
weights (a scale per tensor), int32 biases, int16 cell state, and the operator's 5 intermediates.

Which runs it: the LSTM op with an INT8 input (TFLM has no LSTM op; its UNIDIRECTIONAL_SEQUENCE_LSTM is
sequence.py's, on TFLM's arithmetic). Per step and batch row, each gate (input, forget, cell, output) is

    g = sat16(sat16(MBQM(x . W + bias - x_zp rowsum(W))) + MBQM(h . R - h_zp rowsum(R)))

(MBQM: MultiplyByQuantizedMultiplier by input scale x weight scale / the gate scale), then, with layer
normalization (inputs 20-23 present; the gates' scales are intermediates 0-3, else Q3.12), LiteRT's integer
ApplyLayerNorm with the bias added there (not to the product), then gemmlowp's int16 sigmoid (tanh for the cell
gate) on Q3.12: gate outputs Q0.15. The cell (scale 2**cell_scale, cell_scale <= -9) becomes
sat16(f c >> 15 + i g >> (30 + cell_scale)) (rounding shifts), clipped by cell_clip; the output
MBQM(o tanh(c), 2**-30 / hidden scale) + hidden zero point, clamped to int8, where "hidden" is intermediate 4
(without projection LiteRT writes it as the output; the output state's own zero point only folds into the
recurrent products). The output state takes it for the next step.

Not taken (refused by name): CIFG (no input gate), peephole, projection, and the 12-intermediate "8x8_8" form: LiteRT
runs that one (lstm_eval.cc LstmStepInteger8x8_8) only with layer norm, a projection and its bias (it dereferences
them: a null one segfaults), always as CIFG (the input gate's weights are ignored), and it rescales the output
gate's recurrent product by intermediate_scale_a[11] of an 8-entry array (an out-of-bounds read: in practice
intermediate_scale_b[3]), so it is no reference to be held to (tests/test_ops_lstm_forms.py shows both).
Rounding: MultiplyByQuantizedMultiplier as TFLM (two roundings); LiteRT's pip build rounds once, so its outputs
may differ by one quantum (tests/test_lstm_integer.py holds ours to +-1).
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.fixedpoint import get_inv_sqrt_quantized_multiplier_exp
from edge_sdk.runtime.kernels.fixedpoint_lstm import checked_log2, gemmlowp16_table
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.runtime.kernels.quant import multiply_by_quantized_multiplier, quantize_multiplier

_F32 = np.float32
IN_W, REC_W, BIAS, LAYER_NORM = (1, 2, 3, 4), (5, 6, 7, 8), (12, 13, 14, 15), (20, 21, 22, 23)
OUTPUT_STATE, CELL_STATE = 18, 19


def _wrap32(v: np.ndarray) -> np.ndarray:
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _trunc_div(v: np.ndarray, d) -> np.ndarray:
    """C integer division (toward zero)."""
    q = np.abs(v) // np.abs(d)
    return np.where((v < 0) != (np.asarray(d) < 0), -q, q)


def _per_tensor(node: Node, t, what: str) -> None:
    if not t.quantized or np.size(t.scale) != 1:
        raise node.unsupported(f"{what} '{t.name}' must be quantized per tensor")


def checked_log2_exact(node: Node, scale: float, what: str) -> int:
    """TFLite CheckedLog2: the rounded log2 of a scale that must be a power of two (to 1e-3 in the exponent)."""
    if not (np.isfinite(scale) and scale > 0):  # a malformed model (found by the fuzzer): no log of it
        raise node.unsupported(f"{what} scale {scale!r} is not a power of two")
    v = _F32(np.log(_F32(scale))) * (_F32(1.0) / _F32(np.log(_F32(2.0))))
    power = checked_log2(scale)
    if abs(float(_F32(v) - _F32(power))) >= 1e-3:
        raise node.unsupported(f"{what} scale {scale!r} is not a power of two")
    return power


class IntegerLstm:
    """The prepared arithmetic of one integer LSTM node (LiteRT's IntegerLstmParameter) and its step."""

    def __init__(self, node: Node, n_input: int, n_state: int):
        x, h, c = node.input(0), node.input(OUTPUT_STATE), node.input(CELL_STATE)
        if len(node.intermediates) == 12:
            raise node.unsupported("the 12-intermediate (8x8_8) integer LSTM is not supported: LiteRT's experimental "
                                   "kernel for it ignores the input gate, crashes without layer norm and a projection "
                                   "bias, and scales the output gate by intermediate_scale_a[11] of an 8-entry array")
        if len(node.intermediates) != 5:
            raise node.error(f"an integer LSTM has 5 intermediates (gate and hidden scales), has "
                             f"{len(node.intermediates)}")
        self.layer_norm = len(node.inputs) == 24 and node.has_input(21)
        node.expect(not self.layer_norm or n_state >= 1, "a layer-norm LSTM needs at least one unit")
        for i in (9, 10, 11):
            if node.has_input(i):
                raise node.unsupported(f"peephole LSTM (input {i}) is not supported")
        for i in (16, 17):
            if node.has_input(i):
                raise node.unsupported(f"projection LSTM (input {i}) is not supported")
        if not (node.has_input(1) and node.has_input(5) and node.has_input(12)):
            raise node.unsupported("CIFG LSTM (no input gate: inputs 1, 5, 12 omitted) is not supported")
        node.expect_types(h, ("INT8",), "output state")
        node.expect_types(c, ("INT16",), "cell state")
        node.expect_types(node.outputs[0], ("INT8",), "output")
        for t, what in ((x, "input"), (h, "output state"), (c, "cell state")):
            _per_tensor(node, t, what)
        for i in IN_W + REC_W:
            node.expect_types(node.inputs[i], ("INT8",), f"input {i} (gate weights)")
            _per_tensor(node, node.inputs[i], f"input {i} (gate weights)")
        for i in BIAS:
            node.expect_types(node.inputs[i], ("INT32",), f"input {i} (gate bias)")
        if self.layer_norm:
            for i in LAYER_NORM:
                t = node.input(i)
                node.expect_types(t, ("INT16",), f"input {i} (layer-norm coefficients)")
                _per_tensor(node, t, f"input {i} (layer-norm coefficients)")
                node.expect(tuple(t.shape) == (n_state,), f"input {i} {t.shape} must be ({n_state},)")
                if not t.is_const:
                    raise node.unsupported(f"input {i} (layer-norm coefficients) must be a constant tensor")
        for k, t in enumerate(node.intermediates[:4] if self.layer_norm else node.intermediates[4:]):
            _per_tensor(node, t, f"intermediate {k if self.layer_norm else 4}")
        self.cell_scale = checked_log2_exact(node, c.s, "cell state")
        if not -15 <= self.cell_scale <= -9:
            raise node.unsupported(f"cell state scale 2**{self.cell_scale}: LiteRT takes 2**-15 .. 2**-9")
        hidden = node.intermediates[4]
        gate_scales = [_F32(t.s) for t in node.intermediates[:4]] if self.layer_norm else [_F32(2.0**-12)] * 4
        x_s, h_s = _F32(x.s), _F32(h.s)
        # effective scales in float32 as lstm.cc computes them (weight scale x activation scale / gate scale)
        self.in_q = [quantize_multiplier(float(_F32(_F32(node.inputs[i].s) * x_s) / gate_scales[g]))
                     for g, i in enumerate(IN_W)]
        self.rec_q = [quantize_multiplier(float(_F32(_F32(node.inputs[i].s) * h_s) / gate_scales[g]))
                      for g, i in enumerate(REC_W)]
        self.hidden_q = quantize_multiplier(float(_F32(2.0**-15 / float(_F32(hidden.s)) * 2.0**-15)))
        self.hidden_zp = int(hidden.zp)
        w_in = [node.inputs[i].data.astype(np.int64) for i in IN_W]
        w_rec = [node.inputs[i].data.astype(np.int64) for i in REC_W]
        bias = [node.inputs[i].data.astype(np.int64) for i in BIAS]
        self.w_in_t = [np.ascontiguousarray(w.T) for w in w_in]  # (I, S)
        self.w_rec_t = [np.ascontiguousarray(w.T) for w in w_rec]  # (S, S)
        # zero points folded into per-row constants; with layer norm the bias is added after the normalization
        self.in_bias = [(0 if self.layer_norm else bias[g]) - int(x.zp) * w_in[g].sum(axis=1) for g in range(4)]
        self.rec_bias = [-int(h.zp) * w_rec[g].sum(axis=1) for g in range(4)]
        self.ln_bias = bias
        if self.layer_norm:
            self.ln_w = [node.inputs[i].data.astype(np.int64) for i in LAYER_NORM]
            ln_scales = [_F32(node.inputs[i].s) for i in LAYER_NORM]
            self.ln_q = [quantize_multiplier(float(s)) for s in ln_scales]
            self.ln_guard = [min(max(1, int(_F32(10000) * s)), 0x7FFFFFFF) for s in ln_scales]  # C's int32 clamp
        cell_clip = float(node.options.get("cell_clip", 0.0) or 0.0)
        self.clip_q = 0
        if cell_clip > 0:
            self.clip_q = int(min(max(float(_F32(_F32(cell_clip) / _F32(c.s))), -32768.0), 32767.0))
        self.sigmoid = gemmlowp16_table("logistic", 3)
        self.tanh_gate = gemmlowp16_table("tanh", 3)
        self.tanh_cell = gemmlowp16_table("tanh", 15 + self.cell_scale)
        self.n_state = n_state

    def _layer_norm(self, g: int, v: np.ndarray) -> np.ndarray:
        """LiteRT's integer ApplyLayerNorm of gate ``g`` over each row of v (B, S) int16 values."""
        n = self.n_state
        total = v.sum(axis=1, keepdims=True)
        sum_sq = (v * v).sum(axis=1, keepdims=True)
        mean = _trunc_div(total * 1024, n)
        variance = sum_sq * ((1 << 20) // n) - mean * mean
        variance2 = _wrap32(_trunc_div(variance, 1 << 20))
        variance2 = np.where(variance2 < 1, self.ln_guard[g], variance2)
        inv_a, inv_b = get_inv_sqrt_quantized_multiplier_exp(variance2, -1)
        rescaled = multiply_by_quantized_multiplier(_wrap32(1024 * v - mean), inv_a, inv_b)
        val3 = _wrap32(_wrap32(rescaled * self.ln_w[g]) + self.ln_bias[g])  # int32 arithmetic in LiteRT
        val4 = _wrap32(_trunc_div(np.where(val3 > 0, val3 + 512, val3 - 512), 1024))
        m, shift = self.ln_q[g]
        return np.clip(multiply_by_quantized_multiplier(val4, m, shift + 12), -32768, 32767)

    def step(self, x: np.ndarray, h: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One step on every batch row: x (B, I) int8 values, h (B, S) int8, c (B, S) int16 (as int64 arrays);
        returns the new (h, c)."""
        gates = []
        for g in range(4):
            acc = _wrap32(x @ self.w_in_t[g] + self.in_bias[g])
            v = np.clip(multiply_by_quantized_multiplier(acc, *self.in_q[g]), -32768, 32767)
            acc = _wrap32(h @ self.w_rec_t[g] + self.rec_bias[g])
            v = np.clip(multiply_by_quantized_multiplier(acc, *self.rec_q[g]) + v, -32768, 32767)
            if self.layer_norm:
                v = self._layer_norm(g, v)
            gates.append((self.tanh_gate if g == 2 else self.sigmoid)[v + 32768])
        i_g, f_g, c_g, o_g = gates
        # CwiseMul's int16 casts wrap; |f c| >> 15 and |i g| >> (30 + cell_scale) stay in range
        c = np.clip(_rdivpot(f_g * c, 15) + _rdivpot(i_g * c_g, 30 + self.cell_scale), -32768, 32767)
        if self.clip_q > 0:
            c = np.clip(c, -self.clip_q, self.clip_q)
        t = self.tanh_cell[c + 32768]
        h = np.clip(multiply_by_quantized_multiplier(o_g * t, *self.hidden_q) + self.hidden_zp, -128, 127)
        return h, c


def _rdivpot(x: np.ndarray, exponent: int) -> np.ndarray:
    mask = (1 << exponent) - 1
    return (x >> exponent) + ((x & mask) > ((mask >> 1) + (x < 0)))


def prepare_lstm_int8(node: Node, batch: int, n_input: int, n_state: int):
    """The LSTM op's INT8 eval: one step on x (batch, input), states in inputs 18 (int8) and 19 (int16)."""
    cell = IntegerLstm(node, n_input, n_state)
    node.set_output_shape(0, (batch, n_state))

    def run(inputs, outputs):
        h_arr = inputs[OUTPUT_STATE].reshape(batch, n_state)
        c_arr = inputs[CELL_STATE].reshape(batch, n_state)
        h, c = cell.step(inputs[0].astype(np.int64), h_arr.astype(np.int64), c_arr.astype(np.int64))
        h_arr[...] = h
        c_arr[...] = c
        outputs[0][...] = h

    return run


# ------------------------------------------------------------------------------------- basic LSTM, UINT8
# LiteRT's quantized LstmCell<4> (lstm.cc's basic kernel type, reference_ops/lstm_cell.h): x and the previous
# activation are uint8 read as (v - 128) / 128 (their scales are not consulted), weights uint8 with a zero point,
# int32 bias; the fully connected gate pre-activations MBQM(bias + sum (v - 128)(w - w_zp), 4096 x bias scale)
# clamped to int16 are Q3.12 (output 3), blocks input, cell, forget, output; the state is int16 Q4.11 (scale
# 2**-11: LiteRT takes no other); the new activation 128 + clamp(rdivpot(o tanh(c), 8)) as uint8.


def _srdhm16(a: np.ndarray, b) -> np.ndarray:
    ab = a * b
    q = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    high = np.where(q < 0, -((-q) >> 15), q >> 15)
    return np.where((a == -32768) & (np.asarray(b) == -32768), 32767, ((high + 32768) & 0xFFFF) - 32768)


def prepare_basic_lstm_uint8(node: Node, batch: int, n_input: int, S: int):
    x, h, w, b, c = (node.input(i) for i in range(5))
    node.expect_types(h, ("UINT8",), "previous activation")
    node.expect_types(w, ("UINT8",), "weights")
    node.expect_types(b, ("INT32",), "bias")
    node.expect_types(c, ("INT16",), "previous state")
    for i, t in enumerate(("UINT8", "INT16", "UINT8", "INT16")):
        node.expect_types(node.outputs[i], (t,), f"output {i}")
    _per_tensor(node, w, "weights")
    _per_tensor(node, b, "bias")
    state = node.outputs[1]
    _per_tensor(node, state, "output state")
    power = checked_log2_exact(node, state.s, "output state")
    if 15 + power != 4:
        raise node.unsupported(f"the quantized basic LSTM takes a state of scale 2**-11 (4 integer bits), has "
                               f"2**{power} (LiteRT's only case)")
    m, shift = quantize_multiplier(4096.0 * float(_F32(b.s)))
    w_c = (w.data.astype(np.int64) - int(w.zp)).T.copy()  # (I + S, 4S)
    bias = b.data.astype(np.int64)
    sigmoid, tanh = gemmlowp16_table("logistic", 3), gemmlowp16_table("tanh", 3)

    def run(inputs, outputs):
        act, new_state, concat, gates = outputs
        concat[:, :n_input] = inputs[0]
        concat[:, n_input:] = inputs[1]
        acc = _wrap32((concat.astype(np.int64) - 128) @ w_c + bias)
        pre = np.clip(multiply_by_quantized_multiplier(acc, m, shift), -32768, 32767)
        gates[...] = pre
        i_g, mod = sigmoid[pre[:, :S] + 32768], tanh[pre[:, S:2 * S] + 32768]
        f_g, o_g = sigmoid[pre[:, 2 * S:3 * S] + 32768], sigmoid[pre[:, 3 * S:] + 32768]
        kept = _srdhm16(f_g, inputs[4].astype(np.int64))  # F0 x Q4.11: Q4.11
        c = np.clip(_rdivpot(_srdhm16(i_g, mod), 4) + kept, -32768, 32767)  # Rescale<4>, SaturatingAdd
        c3 = np.where(c > 16383, 32767, np.where(c < -16383, -32768, c * 2))  # Rescale<3>: saturating x2
        out = _srdhm16(o_g, tanh[c3 + 32768])
        new_state[...] = c
        act[...] = 128 + np.clip(_rdivpot(out, 8), -128, 127)

    return run
