"""Audio front ends as whole models (issue 23), float, with a waveform input of unknown length:

- log-mel: waveform [-1, -1] (stored [1, 1]) -> RESHAPE into frames -> Hann window (MUL) -> RFFT2D ->
  COMPLEX_ABS -> RESHAPE -> BATCH_MATMUL by a mel matrix -> ADD eps -> LOG -> MEAN over frames -> FULLY_CONNECTED;
- MFCC: audio [-1, 1] -> AudioSpectrogram -> Mfcc -> RESHAPE -> CONV_2D -> MEAN -> FULLY_CONNECTED.

Both runtimes resized (resize_tensor_input) to several lengths, against LiteRT's reference kernels resized the
same (within 1e-4 of the output's range); then `edge check --target raspberry-pi-4 --input-shape` (a COMPLEX64
op was "cpu does not take COMPLEX64 ops": the profiles now take complex64 as float math), the same check without
the flag (one line naming the input, exit 2), and `edge run` on a .npy (its shape sets the input's) and a .wav.
"""

from __future__ import annotations

import json
import wave

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.cli import main
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.writer import write_model
from tests.oprunner import flex_options


def mel_matrix(bins: int, mels: int) -> np.ndarray:
    """(bins, mels) triangular filters over evenly spaced bins (the shape of a mel bank; the spacing does not
    matter here)."""
    m = np.zeros((bins, mels), np.float32)
    edges = np.linspace(1, bins - 1, mels + 2).astype(int)
    for j in range(mels):
        lo, mid, hi = edges[j], edges[j + 1], edges[j + 2]
        m[lo:mid + 1, j] = np.linspace(0, 1, mid - lo + 1)
        m[mid:hi + 1, j] = np.linspace(1, 0, hi - mid + 1)
    return m


class _Dynamic:
    """GraphBuilder tensors with a shape signature (-1 where the waveform's length flows), stored at 1 there."""

    def __init__(self):
        self.g = GraphBuilder()

    def tensor(self, name, signature, type="FLOAT32") -> int:
        t = self.g.tensor(name, [max(d, 1) for d in signature], type)
        self.g.tensors[t].shape_signature = tuple(signature)
        return t

    def reshape(self, x, signature, name) -> int:
        """RESHAPE by a shape tensor holding the -1 (no new_shape option: the shape comes from the tensor)."""
        y = self.tensor(name, signature)
        self.g.op("RESHAPE", [x, self.g.constant(f"{name}/shape", np.array(signature, np.int32))], [y])
        self.g.operators[-1].options_type, self.g.operators[-1].options = None, {}
        return y


def logmel_model(frame: int = 64, mels: int = 8, classes: int = 4, seed: int = 0) -> bytes:
    """Frames of ``frame`` samples (hop = frame), |rfft|, mel, log, mean over frames, a linear classifier."""
    d = _Dynamic()
    g, bins = d.g, frame // 2 + 1
    x = d.tensor("waveform", (-1, -1))
    g.inputs.append(x)
    frames = d.reshape(x, (-1, 1, frame), "frames")  # (F, 1, L): RFFT2D over the last two axes, fft_length [1, L]
    windowed = d.tensor("windowed", (-1, 1, frame))
    hann = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(frame) / frame)).astype(np.float32)
    g.op("MUL", [frames, g.constant("hann", hann)], [windowed], fused_activation_function="NONE")
    spectrum = d.tensor("spectrum", (-1, 1, bins), "COMPLEX64")
    g.op("RFFT2D", [windowed, g.constant("fft_length", np.array([1, frame], np.int32))], [spectrum])
    magnitude = d.tensor("magnitude", (-1, 1, bins))
    g.op("COMPLEX_ABS", [spectrum], [magnitude])
    rows = d.reshape(magnitude, (1, -1, bins), "magnitude_rows")
    mel = d.tensor("mel", (1, -1, mels))
    g.op("BATCH_MATMUL", [rows, g.constant("mel_matrix", mel_matrix(bins, mels))], [mel])
    floor = d.tensor("mel_floor", (1, -1, mels))
    g.op("ADD", [mel, g.constant("eps", np.float32(1e-6))], [floor], fused_activation_function="NONE")
    log_mel = d.tensor("log_mel", (1, -1, mels))
    g.op("LOG", [floor], [log_mel])
    return _classifier_head(d, log_mel, [1], mels, classes, seed)


def mfcc_model(window: int = 128, stride: int = 64, coefficients: int = 10, classes: int = 3, seed: int = 0) -> bytes:
    d = _Dynamic()
    g, bins = d.g, window // 2 + 1
    audio = d.tensor("audio", (-1, 1))
    g.inputs.append(audio)
    spectrogram = d.tensor("spectrogram", (1, -1, bins))
    g.op("AudioSpectrogram", [audio], [spectrogram],
         custom_options=flex_options(dict(window_size=window, stride=stride, magnitude_squared=True)))
    mfcc = d.tensor("mfcc", (1, -1, coefficients))
    g.op("Mfcc", [spectrogram, g.constant("sample_rate", np.array([16000], np.int32))], [mfcc],
         custom_options=flex_options(dict(upper_frequency_limit=4000.0, lower_frequency_limit=20.0,
                                          filterbank_channel_count=20, dct_coefficient_count=coefficients)))
    image = d.reshape(mfcc, (1, -1, coefficients, 1), "mfcc_image")
    conv = d.tensor("conv", (1, -1, coefficients, 4))
    kernel = (np.random.default_rng(seed).standard_normal((4, 3, 3, 1)) * 0.05).astype(np.float32)
    g.op("CONV_2D", [image, g.constant("kernel", kernel), g.constant("bias", np.zeros(4, np.float32))], [conv],
         padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU")
    return _classifier_head(d, conv, [1, 2], 4, classes, seed)


def _classifier_head(d: _Dynamic, features: int, axes: list[int], width: int, classes: int, seed: int) -> bytes:
    g = d.g
    pooled = g.tensor("pooled", (1, width))
    g.op("MEAN", [features, g.constant("pool_axes", np.array(axes, np.int32))], [pooled], keep_dims=False)
    logits = g.tensor("logits", (1, classes))
    w = (np.random.default_rng(seed + 1).standard_normal((classes, width)) * 0.3).astype(np.float32)
    g.op("FULLY_CONNECTED", [pooled, g.constant("classifier", w), -1], [logits])
    g.output(logits)
    return write_model(g.build())


def resized_outputs(model: bytes, x: np.ndarray, backend: str) -> np.ndarray:
    """The one output after resizing input 0 to x's shape: ours (backend python / c) or LiteRT reference."""
    if backend == "litert":
        from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

        interp = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF, num_threads=1)
    else:
        interp = Interpreter(model_content=model, backend=backend)
    interp.resize_tensor_input(0, list(x.shape))
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    return np.array(interp.get_tensor(interp.get_output_details()[0]["index"]))


def near(ours, theirs, what):
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, what
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-4 * max(float(np.ptp(theirs)), 1e-30), err_msg=what)


@pytest.mark.parametrize("frame,samples", [(64, 1600), (64, 960), (128, 2048)])
def test_logmel_front_end_resized(runtime, frame, samples):
    model = logmel_model(frame)
    x = (np.random.default_rng(samples).standard_normal((1, samples)) * 0.3).astype(np.float32)
    near(resized_outputs(model, x, runtime), resized_outputs(model, x, "litert"), f"{runtime} vs litert")


@pytest.mark.parametrize("samples,window,stride", [(1000, 128, 64), (2000, 160, 80)])
def test_mfcc_front_end_resized(runtime, samples, window, stride):
    model = mfcc_model(window, stride)
    x = (np.random.default_rng(samples).standard_normal((samples, 1)) * 0.3).astype(np.float32)
    near(resized_outputs(model, x, runtime), resized_outputs(model, x, "litert"), f"{runtime} vs litert")


def test_check_takes_the_input_shape_and_complex_ops(tmp_path, capsys):
    from edge_sdk.targets.profiles import load_profile

    model = tmp_path / "logmel.tflite"
    model.write_bytes(logmel_model())
    assert main(["check", str(model), "--target", "raspberry-pi-4", "--input-shape", "waveform:1,1600"]) == 0
    out = capsys.readouterr().out
    assert "RUNS" in out and "COMPLEX64" not in out, out
    assert main(["check", str(model), "--target", "raspberry-pi-4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "waveform" in err[0] and "--input-shape" in err[0], err
    for target in ("raspberry-pi-4", "stm32f746-disco"):  # both runtimes run the COMPLEX64 ops
        for op in ("COMPLEX_ABS", "REAL", "IMAG"):
            assert load_profile(target).cpu_backend.op_constraints(op, "complex64") is not None, (target, op)


def test_run_scores_equal_litert(tmp_path, capsys):
    model = tmp_path / "logmel.tflite"
    model.write_bytes(logmel_model())
    pcm = (np.random.default_rng(5).standard_normal(1600) * 3000).astype(np.int16)
    x = (pcm / 32768).astype(np.float32).reshape(1, -1)
    np.save(tmp_path / "clip.npy", x)
    with wave.open(str(tmp_path / "clip.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(pcm.tobytes())
    logits = resized_outputs(model.read_bytes(), x, "litert")[0].astype(np.float64)
    want = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    for argv in (["clip.npy"], ["clip.wav", "--input-shape", "1,1600"]):  # a .npy's shape is the input's
        assert main(["run", str(model), str(tmp_path / argv[0]), *argv[1:], "--json"]) == 0, argv
        predictions = json.loads(capsys.readouterr().out)[0]["predictions"]
        got = {int(p["label"]): p["score"] for p in predictions}
        assert sorted(got) == list(range(4)), predictions
        np.testing.assert_allclose([got[k] for k in range(4)], want, rtol=0, atol=1e-5, err_msg=str(argv))


def test_a_leading_minus_one_that_is_no_batch_takes_the_arrays_rows(tmp_path, capsys):
    # AudioSpectrogram's input [-1, 1] is (samples, channels): a .npy [1000, 1] runs at [1000, 1] (its rows, as
    # LiteRT resized to it), no --input-shape needed (it ran at the stored [1, 1] before, and Mfcc refused 0 frames)
    model = tmp_path / "mfcc.tflite"
    model.write_bytes(mfcc_model())
    x = (np.random.default_rng(3).standard_normal((1000, 1)) * 0.3).astype(np.float32)
    np.save(tmp_path / "audio.npy", x)
    assert main(["run", str(model), str(tmp_path / "audio.npy"), "--json"]) == 0
    scores = [p["score"] for p in json.loads(capsys.readouterr().out)[0]["predictions"]]
    logits = resized_outputs(model.read_bytes(), x, "litert")[0].astype(np.float64)
    want = np.sort(np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum())[::-1]
    np.testing.assert_allclose(scores, want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("build,shapes", [(logmel_model, {"waveform": (1, 1600)}), (mfcc_model, {"audio": (1000, 1)})])
def test_check_both_front_ends_on_a_pi_and_a_microcontroller(build, shapes):
    from edge_sdk.targets.check import RUNS, check_model

    for target in ("raspberry-pi-4", "stm32f746-disco"):
        r = check_model(build(), target, stack=False, input_shapes=shapes)
        assert r.verdict == RUNS, (target, r.problems)
