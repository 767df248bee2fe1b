"""TFLM's audio front-end custom ops ("signal" library): ours vs TFLM, bit for bit, on the runtime grid (the
Python interpreter and the C runtime).

Single-op models built with our writer run in our runtimes and in TFLM's interpreter (whose Python wrapper
registers the signal ops by default); the real audio_preprocessor models run on micro_speech clips frame by frame,
so the spectral-subtraction state is exercised across invokes (TFLM's stream run once for both runtimes).
"""

from __future__ import annotations

import wave

import numpy as np
import pytest
from flatbuffers import flexbuffers  # test-only: encode custom options independently of our reader

from edge_sdk.errors import ModelError, UnsupportedOpError
from edge_sdk.runtime.kernels import flexbuffers as ours_fb
from tests.conftest import shared_model
from tests.oprunner import T, assert_same, op_model, peer_outputs, run_invokes, run_on


def opts(**kw) -> bytes:
    return bytes(flexbuffers.Dumps(kw))


def log_uniform_u32(rng, n, max_bits=32):
    bits = rng.integers(0, max_bits + 1, n)
    return np.array([int(rng.integers(0, 1 << b)) if b else 0 for b in bits], np.uint32)


def check(runtime, model, inputs, invocations=1):
    """``runtime``'s outputs after ``invocations`` invokes == TFLM's, bit for bit."""
    ours = run_invokes(runtime, model, inputs, invocations, check_reset=False)
    assert_same(ours, peer_outputs(model, inputs, "tflm", invocations=invocations), what=f"{runtime} vs tflm")
    return ours


# --------------------------------------------------------------------------------------------- flexbuffers
def test_flexbuffers_reader_matches_reference_encoder():
    objs = [
        {"a": 1, "b": -5, "c": True, "d": 1.5, "e": "hi", "f": [1, 2, 3], "g": [1, "x", 2.5, None],
         "h": {"x": {"y": [1.0, 2.0]}}, "big": 1 << 40, "neg": -(1 << 35)},
        {"k" * 300: list(range(300))},
        [True, False],
        {"T": 7, "fft_length": 512},
    ]
    for o in objs:
        assert ours_fb.loads(flexbuffers.Dumps(o)) == o


def test_flexbuffers_reader_rejects_malformed(rng):
    good = bytes(flexbuffers.Dumps({"a": 1, "b": [1, 2, 3], "s": "text", "m": {"x": 2}}))
    for n in range(len(good)):  # every truncation either decodes or raises ModelError, never IndexError
        try:
            ours_fb.loads(good[:n])
        except ModelError:
            pass
    failures = 0
    for _ in range(400):
        bad = bytearray(good)
        for _ in range(3):
            bad[int(rng.integers(len(bad)))] = int(rng.integers(256))
        try:
            ours_fb.loads(bytes(bad))
        except ModelError:
            failures += 1
    assert failures > 0
    with pytest.raises(ModelError):
        ours_fb.read_map(bytes(flexbuffers.Dumps([1, 2])))
    with pytest.raises(ModelError):
        ours_fb.loads(b"\x00\x24")  # too short
    # a map whose offset points forward (at itself): refused, not followed
    with pytest.raises(ModelError):
        ours_fb.loads(bytes([0x00, 0x24, 0x01]))


# --------------------------------------------------------------------------------------------- per-op vs TFLM
def test_window(rng, runtime):
    x = rng.integers(-32768, 32768, (3, 16)).astype(np.int16)
    w = rng.integers(-32768, 32768, 16).astype(np.int16)
    for shift in (0, 12, 15):
        m = op_model("SignalWindow", [T((3, 16), "INT16"), T((16,), "INT16", data=w)], [T((3, 16), "INT16")],
                     custom_options=opts(shift=shift))
        check(runtime, m, [x])


@pytest.mark.parametrize("case", ["random", "quiet", "zeros", "min"])
def test_fft_auto_scale(rng, case, runtime):
    x = {"random": rng.integers(-3000, 3000, 32), "quiet": rng.integers(-7, 8, 32), "zeros": np.zeros(32),
         "min": np.r_[rng.integers(-5, 5, 10), -32768, rng.integers(-100, 100, 21)]}[case].astype(np.int16)
    m = op_model("SignalFftAutoScale", [T((32,), "INT16")], [T((32,), "INT16"), T((), "INT32")],
                 custom_options=b"")
    check(runtime, m, [x])


@pytest.mark.parametrize("n,length", [(512, 480), (64, 64), (8, 5), (12, 12), (20, 17), (60, 60), (120, 100),
                                      (4, 4), (32, 32)])
def test_rfft_int16(rng, n, length, runtime):
    x = rng.integers(-32768, 32768, (2, length)).astype(np.int16)
    x[1] = x[1] // 64  # a quiet frame too
    m = op_model("SignalRfft", [T((2, length), "INT16")], [T((2, n + 2), "INT16")],
                 custom_options=opts(T=7, fft_length=n))
    check(runtime, m, [x])


def test_rfft_refuses_what_tflm_cannot_run(runtime):
    m = op_model("SignalRfft", [T((14,), "INT16")], [T((16,), "INT16")], custom_options=opts(T=7, fft_length=14))
    with pytest.raises(UnsupportedOpError, match="prime factor"):
        run_on(runtime, m, [np.zeros(14, np.int16)])
    m = op_model("SignalRfft", [T((16,), "INT16")], [T((18,), "INT16")], custom_options=opts(T=7, fft_length=8))
    with pytest.raises(ModelError, match="input length" if runtime == "python" else "frame length"):
        run_on(runtime, m, [np.zeros(16, np.int16)])


def test_energy(rng, runtime):
    x = rng.integers(-32768, 32768, 66).astype(np.int16)
    x[:4] = -32768  # the int32 overflow of (-32768)^2 * 2 wraps in uint32
    m = op_model("SignalEnergy", [T((66,), "INT16")], [T((33,), "UINT32")],
                 custom_options=opts(end_index=33, start_index=0))
    check(runtime, m, [x])
    m = op_model("SignalEnergy", [T((66,), "INT16")], [T((33,), "UINT32")],
                 custom_options=opts(end_index=30, start_index=2))
    ours = run_on(runtime, m, [x])[0]
    theirs = peer_outputs(m, [x], "tflm")[0]
    np.testing.assert_array_equal(ours[2:30], theirs[2:30])  # TFLM leaves the rest unwritten; we write zeros
    assert not ours[:2].any() and not ours[30:].any()


def _filter_bank_params(rng, n_in, channels):
    widths = rng.integers(1, 6, channels + 1).astype(np.int16)
    freq = np.cumsum(np.r_[0, widths[:-1]]).astype(np.int16) % (n_in - 6)
    wstart = np.cumsum(np.r_[0, widths[:-1]]).astype(np.int16)
    nw = int(wstart[-1] + widths[-1])
    weights = rng.integers(0, 4096, nw).astype(np.int16)
    unweights = (4096 - weights).astype(np.int16)
    return weights, unweights, freq, wstart, widths


def test_filter_bank(rng, runtime):
    n_in, channels = 40, 8
    params = _filter_bank_params(rng, n_in, channels)
    x = log_uniform_u32(rng, n_in)
    x[:4] = 0xFFFFFFFF
    ins = [T((n_in,), "UINT32")] + [T((p.size,), "INT16", data=p) for p in params]
    m = op_model("SignalFilterBank", ins, [T((channels,), "UINT64")], custom_options=opts(num_channels=channels))
    check(runtime, m, [x])


def test_filter_bank_square_root(rng, runtime):
    x = np.array([int(v) << int(s) for v, s in zip(log_uniform_u32(rng, 40), rng.integers(0, 33, 40))], np.uint64)
    x[:6] = [0, 1, 2, (1 << 32) - 1, (1 << 64) - 1, 4294836225]
    for bits in (0, 3):
        m = op_model("SignalFilterBankSquareRoot", [T((40,), "UINT64"), T((), "INT32")], [T((40,), "UINT32")],
                     custom_options=b"")
        check(runtime, m, [x, np.array(bits, np.int32)])


def test_spectral_subtraction_state_across_invokes(rng, runtime):
    x = log_uniform_u32(rng, 12, 24)
    for clamping in (False, True):
        o = dict(alternate_one_minus_smoothing=15401, alternate_smoothing=983, clamping=clamping,
                 min_signal_remaining=819, num_channels=12, one_minus_smoothing=15975, smoothing=409,
                 smoothing_bits=10, spectral_subtraction_bits=14)
        m = op_model("SignalFilterBankSpectralSubtraction", [T((12,), "UINT32")],
                     [T((12,), "UINT32"), T((12,), "UINT32")], custom_options=opts(**o))
        for n in (1, 3):
            check(runtime, m, [x], invocations=n)


def test_pcan(rng, runtime):
    lut = rng.integers(-2000, 20000, 125).astype(np.int16)
    x = log_uniform_u32(rng, 64, 20)
    noise = log_uniform_u32(rng, 64)
    noise[:3] = [0, 1, 2]
    m = op_model("SignalPCAN", [T((64,), "UINT32"), T((64,), "UINT32"), T((125,), "INT16", data=lut)],
                 [T((64,), "UINT32")], custom_options=opts(snr_shift=6))
    check(runtime, m, [x, noise])


def test_filter_bank_log(rng, runtime):
    x = log_uniform_u32(rng, 64)
    x[:4] = [0, 1, 2, 0xFFFFFFFF]
    for bits, scale in ((3, 64), (0, 1600), (0, 1 << 20)):
        m = op_model("SignalFilterBankLog", [T((64,), "UINT32")], [T((64,), "INT16")],
                     custom_options=opts(input_correction_bits=bits, output_scale=scale))
        check(runtime, m, [x])


def test_malformed_options_are_model_errors(runtime):
    m = op_model("SignalWindow", [T((4,), "INT16"), T((4,), "INT16", data=np.ones(4))], [T((4,), "INT16")],
                 custom_options=b"\x01\x02\x03\x04")
    with pytest.raises(ModelError, match="custom options"):
        run_on(runtime, m, [np.zeros(4, np.int16)])
    m = op_model("SignalWindow", [T((4,), "INT16"), T((4,), "INT16", data=np.ones(4))], [T((4,), "INT16")],
                 custom_options=opts(shfit=3))
    with pytest.raises(ModelError, match="'shift' is missing"):
        run_on(runtime, m, [np.zeros(4, np.int16)])
    m = op_model("SignalWindow", [T((4,), "INT16"), T((4,), "INT16", data=np.ones(4))], [T((4,), "INT16")],
                 custom_options=opts(shift="x"))
    with pytest.raises(ModelError, match="integer"):
        run_on(runtime, m, [np.zeros(4, np.int16)])


# --------------------------------------------------------------------------------------------- real models
def _frames(clip: str, count: int) -> list[np.ndarray]:
    path = shared_model(f"tflite-micro/testdata/micro_speech/{clip}.wav")
    with wave.open(str(path)) as w:
        audio = np.frombuffer(w.readframes(w.getnframes()), np.int16)
    return [audio[i * 320 : i * 320 + 480].reshape(1, 480).copy() for i in range(count)]


# TFLM's streams by (model, frames, outputs): a stream test runs on both runtimes, TFLM once (the module's three
# streams kept)
_TFLM_STREAMS: dict = {}


def _tflm_stream(model: bytes, frames, all_outputs: bool = False):
    key = (model, tuple(f.tobytes() for f in frames), all_outputs)
    if key not in _TFLM_STREAMS:
        if len(_TFLM_STREAMS) >= 3:
            _TFLM_STREAMS.pop(next(iter(_TFLM_STREAMS)))
        _TFLM_STREAMS[key] = _run_tflm_stream(model, frames, all_outputs)
    return _TFLM_STREAMS[key]


def _run_tflm_stream(model: bytes, frames, all_outputs: bool = False):
    # One TFLM interpreter fed frame by frame, in a child process (the models hold state across invokes).
    import pickle
    import subprocess
    import sys

    code = (
        "import pickle,sys,numpy as np\n"
        "from tflite_micro.python.tflite_micro import runtime\n"
        "model, frames, n = pickle.loads(sys.stdin.buffer.read())\n"
        "it = runtime.Interpreter.from_bytes(model)\n"
        "outs = []\n"
        "for f in frames:\n"
        "    it.set_input(f, 0); it.invoke()\n"
        "    outs.append([np.array(it.get_output(i)) for i in range(n)])\n"
        "sys.stdout = sys.__stdout__\n"
        "open(sys.argv[1], 'wb').write(pickle.dumps(outs))\n"
    )
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".pkl") as out:
        proc = subprocess.run([sys.executable, "-c", code, out.name], input=pickle.dumps((model, frames, 2 if all_outputs else 1)),
                              capture_output=True, timeout=300)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
        outs = pickle.load(open(out.name, "rb"))
    return outs if all_outputs else [o[0] for o in outs]


@pytest.mark.parametrize("variant", ["int8", "float"])
def test_audio_preprocessor_matches_tflm_frame_by_frame(variant, runtime):
    from edge_sdk import Interpreter

    model = shared_model(f"tflite-micro/audio_preprocessor_{variant}.tflite").read_bytes()
    frames = _frames("yes_1000ms", 12) + _frames("noise_1000ms", 4)
    it = Interpreter(model_content=model, backend=runtime)
    it.allocate_tensors()
    theirs = _tflm_stream(model, frames)
    inp, out = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    for k, f in enumerate(frames):
        it.set_tensor(inp, f)
        it.invoke()
        ours = it.get_tensor(out)
        if variant == "int8":
            assert_same([ours], [theirs[k]], what=f"frame {k}")
        else:
            np.testing.assert_allclose(ours, theirs[k], rtol=1e-5, atol=1e-6, err_msg=f"frame {k}")
    assert len({bytes(np.asarray(t).tobytes()) for t in theirs}) > 4  # the frames really differ


def _signal_chain(model_bytes: bytes) -> bytes:
    """The preprocessor's signal ops alone: energy feeds the filter bank directly (the model's cast/slice/concat
    between them zeroes the bins outside [start_index, end_index), which our energy op already leaves zero),
    and the chain ends at the log (int16), with the noise estimate as a second output."""
    from edge_sdk.model import read_model
    from edge_sdk.model.writer import write_model

    m = read_model(model_bytes)
    sg = m.subgraphs[0]
    names = [m.operator_codes[op.opcode_index].name for op in sg.operators]
    keep = [op for op, n in zip(sg.operators, names) if n.startswith("Signal") or n == "RESHAPE"]
    energy = keep[[m.operator_codes[op.opcode_index].name for op in keep].index("SignalEnergy")]
    fb = keep[[m.operator_codes[op.opcode_index].name for op in keep].index("SignalFilterBank")]
    fb.inputs = [energy.outputs[0]] + list(fb.inputs[1:])
    ss = keep[[m.operator_codes[op.opcode_index].name for op in keep].index("SignalFilterBankSpectralSubtraction")]
    sg.operators = keep
    sg.outputs = [keep[-1].outputs[0], ss.outputs[1]]
    return write_model(m)


def test_audio_signal_chain_matches_tflm_frame_by_frame(runtime):
    model = _signal_chain(shared_model("tflite-micro/audio_preprocessor_int8.tflite").read_bytes())
    frames = _frames("yes_1000ms", 12) + _frames("silence_1000ms", 3)
    from edge_sdk import Interpreter

    it = Interpreter(model_content=model, backend=runtime)
    it.allocate_tensors()
    inp = it.get_input_details()[0]["index"]
    outs = [d["index"] for d in it.get_output_details()]
    ours = []
    for f in frames:
        it.set_tensor(inp, f)
        it.invoke()
        ours.append([np.array(it.get_tensor(t)) for t in outs])
    theirs = _tflm_stream(model, frames, all_outputs=True)
    for k in range(len(frames)):
        assert_same(ours[k], theirs[k], what=f"frame {k}")
    assert ours[-1][1].any() and len({o[0].tobytes() for o in ours}) == len(frames)


def test_spectral_subtraction_reset_matches_tflm_reset(rng, runtime):
    """TFLM's reset() zeroes the noise estimate; our reset_all_variables() does the same (kernel reset hook)."""
    from edge_sdk import Interpreter
    from tests.test_ops_stateful import tflm_stream

    o = dict(alternate_one_minus_smoothing=15401, alternate_smoothing=983, clamping=False,
             min_signal_remaining=819, num_channels=12, one_minus_smoothing=15975, smoothing=409,
             smoothing_bits=10, spectral_subtraction_bits=14)
    m = op_model("SignalFilterBankSpectralSubtraction", [T((12,), "UINT32")],
                 [T((12,), "UINT32"), T((12,), "UINT32")], custom_options=opts(**o))
    xs = [log_uniform_u32(rng, 12, 24) for _ in range(4)]
    theirs = tflm_stream(m, xs, reset_after=2)

    it = Interpreter(model_content=m, backend=runtime)
    it.allocate_tensors()
    inp, out = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    for k, x in enumerate(xs):
        if k == 2:
            it.reset_all_variables()
        it.set_tensor(inp, x)
        it.invoke()
        np.testing.assert_array_equal(it.get_tensor(out), theirs[k], err_msg=f"invoke {k}")
    assert not np.array_equal(theirs[1], theirs[3]) or not np.array_equal(xs[1], xs[3])
