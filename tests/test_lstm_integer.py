"""The integer LSTM forms LiteRT runs that the float tests (tests/test_ops_recurrent.py) leave out, on both runtimes
(the ``runtime`` grid: edge_sdk/runtime/kernels/lstm_integer.py and firmware_c/src/kernels/lstm.c):

- the LSTM op, full kernel, INT8 (LiteRT's "8x8_16" integer LSTM: int8 activations and weights, int32 biases,
  int16 cell state, 5 intermediates), without and with layer normalization, against LiteRT's reference kernels
  (TFLM has no LSTM op). Held to +-1 quantum: LiteRT's pip build requantizes with one rounding, ours with two
  (TFLM's). The two runtimes agree bit for bit.
- UNIDIRECTIONAL_SEQUENCE_LSTM, INT8 with layer normalization (TFLM refuses it; LiteRT runs the same integer
  LSTM over the sequence), time-major and batch-major.
- the basic kernel type, UINT8 (LiteRT's quantized LstmCell<4>), bit for bit with LiteRT on these cases.
- the refusals, one line naming the node and what is not taken: the 12-intermediate (8x8_8) form, peephole,
  projection and CIFG integer LSTMs, an INT16 LSTM op (LiteRT's lstm.cc takes INT8 input only: its integer
  kernel is ``input->type == kTfLiteInt8``), a quantized basic cell whose state is not Q4.11.

The LSTM op keeps its output and cell state in variable tensors: 1 and 3 invokes in a row with the same input
(the third differs through the carried state; reset_all_variables gives the first again).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from edge_sdk.model.writer import write_model
from tests.conftest import needs_c_runtime
from tests.oprunner import T, _quantization, op_model_object, peer_outputs, run_invokes, run_on, run_peer

B, I, S = 2, 5, 8  # batch, input width, units (LiteRT's integer layer norm is exact for a power-of-two width)


def int8_lstm_model(seed: int, layer_norm: bool, cell_clip: float = 0.0, n_intermediates: int = 5,
                    hidden=(0.007, 3), peephole=False, projection=False, cifg=False, x_type="INT8",
                    sequence=None, cell_scale=2.0**-11, projection_bias=False) -> bytes:
    """A one-node INT8 LSTM as LiteRT's converter writes it: 24 inputs, gate weights int8 (a scale each), int32
    biases at input scale x weight scale, int16 cell state of scale 2**-11, 5 intermediates (the gates' scales,
    used with layer normalization, and the hidden state's scale and zero point ``hidden``). ``sequence`` =
    (steps, time_major): the UNIDIRECTIONAL_SEQUENCE_LSTM of the same cell over a (steps, batch) sequence."""
    rng = np.random.default_rng(seed)
    act_t = x_type
    x_scale, x_zp = 0.02, -3
    h_scale, h_zp = hidden
    wide = x_type == "INT16"

    def weight(rows, cols):
        return T((rows, cols), "INT8", float(rng.uniform(0.004, 0.02)), 0,
                 data=rng.integers(-127, 128, (rows, cols), dtype=np.int8))

    in_w = [weight(S, I) for _ in range(4)]
    rec_w = [weight(S, S) for _ in range(4)]
    bias_t = "INT64" if wide else "INT32"
    bias = [T((S,), bias_t, x_scale * w.scale, 0, data=rng.integers(-3000, 3000, S)) for w in in_w]
    peep = [T((S,), "INT16", 0.001, 0, data=rng.integers(-300, 300, S).astype(np.int16)) if peephole else None
            for _ in range(3)]
    proj = [T((S, S), "INT8", 0.01, 0, data=rng.integers(-127, 128, (S, S), dtype=np.int8)) if projection else None,
            T((S,), "INT32", 0.01 * 2.0**-15, 0, data=rng.integers(-300, 300, S)) if projection_bias else None]
    ln = [T((S,), "INT16", float(rng.uniform(2e-4, 6e-4)), 0,
            data=rng.integers(1500, 5000, S).astype(np.int16)) if layer_norm else None for _ in range(4)]
    if cifg:
        in_w[0], rec_w[0], bias[0] = None, None, None
        if layer_norm:
            ln[0] = None
    lead = (B,) if sequence is None else ((sequence[0], B) if sequence[1] else (B, sequence[0]))
    ins = ([T(lead + (I,), act_t, x_scale, x_zp)] + in_w + rec_w + peep + bias + proj
           + [T((B, S), act_t, h_scale, h_zp, is_variable=True), T((B, S), "INT16", cell_scale, 0, is_variable=True)]
           + ln)
    if sequence is None:
        model = op_model_object("LSTM", ins, [T((B, S), act_t, h_scale, h_zp)],
                                {"fused_activation_function": "TANH", "cell_clip": cell_clip, "kernel_type": "FULL"},
                                version=4)
    else:
        model = op_model_object("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [T(lead + (S,), act_t, h_scale, h_zp)],
                                {"fused_activation_function": "TANH", "cell_clip": cell_clip,
                                 "time_major": sequence[1]}, version=1)
    sg = model.subgraphs[0]
    gate_scales = [float(rng.uniform(0.0004, 0.0012)) for _ in range(4)]
    specs = [T((1,), "INT16", s, 0) for s in gate_scales] + [T((1,), "INT8", h_scale, h_zp)]
    specs += [T((1,), "INT16", 0.001, 0) for _ in range(n_intermediates - 5)]
    from edge_sdk.model.types import Tensor
    op = sg.operators[0]
    for k, spec in enumerate(specs[:n_intermediates]):
        sg.tensors.append(Tensor(name=f"intermediate_{k}", shape=(0,), type=spec.type, buffer=0,
                                 quantization=_quantization(spec)))
        op.intermediates.append(len(sg.tensors) - 1)
    return write_model(model)


def feeds(seed: int, x_type: str = "INT8", lead=(B,)):
    info = np.iinfo(np.int8 if x_type == "INT8" else np.int16)
    return [np.random.default_rng(seed).integers(info.min, info.max + 1, tuple(lead) + (I,)).astype(info.dtype)]


def within_one(ours, ref, what):
    assert len(ours) == len(ref), what
    for a, b in zip(ours, ref):
        assert a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, a.dtype, b.shape, b.dtype)
        diff = np.abs(a.astype(np.int64) - b.astype(np.int64))
        assert diff.max() <= 1, f"{what}: {int((diff > 1).sum())} of {diff.size} values differ by more than one " \
                                f"quantum (max {int(diff.max())})"


CASES = [  # (seed, layer norm, cell clip, hidden (scale, zero point))
    (1, False, 0.0, (0.007, 3)),
    (2, False, 1.5, (0.0078125, 0)),
    (3, True, 0.0, (0.007, 3)),
    (4, True, 2.0, (0.006, -5)),
]


@pytest.mark.parametrize("seed,layer_norm,cell_clip,hidden", CASES)
def test_lstm_int8(runtime, seed, layer_norm, cell_clip, hidden):
    model = int8_lstm_model(seed, layer_norm, cell_clip, hidden=hidden)
    x = feeds(seed)
    outs = {}
    for k in (1, 3):
        outs[k] = run_invokes(runtime, model, x, k, check_reset=k > 1)
        within_one(outs[k], peer_outputs(model, x, "litert", invocations=k), f"{runtime} x{k} vs litert")
        if runtime == "c":  # the two runtimes bit for bit
            assert np.array_equal(outs[k][0], run_invokes("python", model, x, k, check_reset=False)[0])
    assert not np.array_equal(outs[1][0], outs[3][0]), "the state did not carry across invokes"
    assert np.unique(outs[3][0]).size > 4, "a degenerate case: the outputs hardly vary"


@pytest.mark.parametrize("time_major,cell_clip", [(False, 0.0), (True, 1.5)])
def test_sequence_lstm_int8_layer_norm(runtime, time_major, cell_clip):
    """UNIDIRECTIONAL_SEQUENCE_LSTM, INT8 with layer normalization: TFLM refuses it (its lstm_eval.cc asserts the
    layer-norm tensors are absent), LiteRT runs its integer LSTM over the sequence: ours runs the LSTM op's cell
    step by step and is held to LiteRT's reference kernels (the non-layer-norm INT8 form stays TFLM's arithmetic,
    tests/test_ops_sequence.py)."""
    steps = 4
    model = int8_lstm_model(21 + time_major, True, cell_clip, sequence=(steps, time_major))
    x = feeds(21, lead=(steps, B) if time_major else (B, steps))
    outs = {}
    for k in (1, 3):
        outs[k] = run_invokes(runtime, model, x, k, check_reset=k > 1)
        within_one(outs[k], peer_outputs(model, x, "litert", invocations=k), f"{runtime} x{k} vs litert")
        if runtime == "c":
            assert np.array_equal(outs[k][0], run_invokes("python", model, x, k, check_reset=False)[0])
    assert not np.array_equal(outs[1][0], outs[3][0]), "the state did not carry across invokes"
    assert np.unique(outs[3][0]).size > 4, "a degenerate case: the outputs hardly vary"


@pytest.mark.parametrize("form,match", [
    (dict(n_intermediates=12), "12-intermediate"),
    (dict(peephole=True), "peephole"),
    (dict(projection=True), "projection"),
    (dict(cifg=True), "CIFG"),
])
def test_lstm_int8_refusals(runtime, form, match):
    model = int8_lstm_model(7, False, **form)
    with pytest.raises(UnsupportedOpError, match=rf"node 0 \(LSTM (code 16 )?v\d\).*{match}"):
        run_on(runtime, model, feeds(7))


def test_lstm_int16_refused(runtime):
    """LiteRT's LSTM op has no int16-activation form (its integer kernel takes INT8 input only): ours refuse it."""
    model = int8_lstm_model(8, False, x_type="INT16")
    with pytest.raises((UnsupportedOpError, ModelError), match=r"node 0 \(LSTM (code 16 )?v\d\)"):
        run_on(runtime, model, feeds(8, "INT16"))
    if runtime == "python":  # LiteRT fails to prepare it (lstm.cc reads the INT64 biases as a float LSTM's)
        with pytest.raises(Exception, match="LSTM"):
            run_peer(model, feeds(8, "INT16"), "litert", isolate=True)



# ----------------------------------------------------------------------------------- basic kernel, UINT8

def basic_uint8_model(seed: int, state_scale: float = 2.0**-11) -> bytes:
    """LiteRT's quantized basic LSTM cell: x and the previous activation uint8 (scale 1/128, zero point 128: the
    kernel assumes them), weights uint8 (4S, I + S), int32 bias (scale 1/128 x the weights'), int16 state Q4.11;
    outputs the new activation, the new state, the concatenation and the int16 gate pre-activations."""
    rng = np.random.default_rng(seed)
    w_scale = 0.02
    ins = [T((B, I), "UINT8", 1 / 128, 128), T((B, S), "UINT8", 1 / 128, 128),
           T((4 * S, I + S), "UINT8", w_scale, 131, data=rng.integers(0, 256, (4 * S, I + S)).astype(np.uint8)),
           T((4 * S,), "INT32", w_scale / 128, 0, data=rng.integers(-4000, 4000, 4 * S)),
           T((B, S), "INT16", state_scale, 0)]
    outs = [T((B, S), "UINT8", 1 / 128, 128), T((B, S), "INT16", state_scale, 0),
            T((B, I + S), "UINT8", 1 / 128, 128), T((B, 4 * S), "INT16", 2.0**-12, 0)]
    return write_model(op_model_object("LSTM", ins, outs, {"fused_activation_function": "TANH",
                                                           "kernel_type": "BASIC"}, version=2))


@pytest.mark.parametrize("seed", [11, 12])
def test_lstm_basic_uint8(runtime, seed):
    model = basic_uint8_model(seed)
    rng = np.random.default_rng(seed + 100)
    x = [rng.integers(0, 256, (B, I)).astype(np.uint8), rng.integers(0, 256, (B, S)).astype(np.uint8),
         rng.integers(-20000, 20000, (B, S)).astype(np.int16)]
    ours = run_on(runtime, model, x)
    ref = peer_outputs(model, x, "litert")
    within_one(ours, ref, f"{runtime} vs litert")
    assert np.array_equal(ours[2], ref[2]), "the concatenation is a copy"
    if runtime == "c":
        for a, b in zip(ours, run_on("python", model, x)):
            assert np.array_equal(a, b), "c vs python"
    assert np.unique(ours[0]).size > 4, "a degenerate case: the activations hardly vary"


def test_lstm_basic_uint8_state_scale_refused(runtime):
    """LiteRT's quantized cell takes a Q4.11 state only (StateIntegerBits 4): another scale is refused by name."""
    model = basic_uint8_model(13, state_scale=2.0**-12)
    x = [np.zeros((B, I), np.uint8), np.zeros((B, S), np.uint8), np.zeros((B, S), np.int16)]
    with pytest.raises(UnsupportedOpError, match=r"node 0 \(LSTM (code 16 )?v\d\).*2\*\*-11"):
        run_on(runtime, model, x)


# ------------------------------------------------------------------------- one op's kernel files link alone

def _float_lstm_model() -> bytes:
    rng = np.random.default_rng(31)
    w = [T((S, I), "FLOAT32", data=rng.standard_normal((S, I)).astype(np.float32)) for _ in range(4)]
    r = [T((S, S), "FLOAT32", data=rng.standard_normal((S, S)).astype(np.float32)) for _ in range(4)]
    b = [T((S,), "FLOAT32", data=np.zeros(S, np.float32)) for _ in range(4)]
    ins = ([T((B, I), "FLOAT32")] + w + r + [None] * 3 + b + [None] * 2
           + [T((B, S), "FLOAT32", is_variable=True), T((B, S), "FLOAT32", is_variable=True)] + [None] * 4)
    return write_model(op_model_object("LSTM", ins, [T((B, S), "FLOAT32")], {"fused_activation_function": "TANH"}))


@needs_c_runtime
@pytest.mark.parametrize("which", ["lstm_float", "lstm_int8", "sequence_int8_layer_norm"])
def test_an_lstm_models_kernel_files_link_without_the_others(tmp_path, which):
    """`edge flash` / `edge export` compile only the kernel files of a model's ops (tools.flash.kernel_files): the
    LSTM op's lstm.c and the sequence LSTM's file share their cells through edge_lstm.h, so neither may call into
    the other (a float LSTM alone once failed to link: edge_lstm_f32_run lived in the sequence LSTM's file)."""
    import subprocess

    from edge_sdk.model import read_model
    from edge_sdk.tools.flash import kernel_files

    model = {"lstm_float": _float_lstm_model, "lstm_int8": lambda: int8_lstm_model(1, False),
             "sequence_int8_layer_norm": lambda: int8_lstm_model(21, True, sequence=(4, False))}[which]()
    fw = Path(__file__).resolve().parent.parent / "firmware_c"
    sources = [fw / "src" / "edge.c"] + [fw / "src" / "kernels" / f for f in kernel_files(read_model(model))]
    defined, undefined = set(), set()
    for k, src in enumerate(sources):
        obj = tmp_path / f"{k}.o"
        subprocess.run(["gcc", "-std=c99", "-O0", f"-I{fw / 'include'}", f"-I{fw / 'src'}", "-c", str(src), "-o",
                        str(obj)], check=True, capture_output=True)
        nm = subprocess.run(["nm", str(obj)], check=True, capture_output=True, text=True).stdout.split("\n")
        defined |= {line.split()[-1] for line in nm if line[17:18] in ("T", "D", "B", "R")}
        undefined |= {line.split()[-1] for line in nm if line.strip().startswith("U ")}
    generated = {"edge_kernels", "edge_kernel_count"}  # the op table flash generates for the model
    missing = sorted(s for s in undefined - defined - generated if s.startswith(("edge_", "ea_", "eh_", "ef_")))
    assert not missing, f"{which}: {[s.name for s in sources[1:]]} leave {missing} undefined"
