"""The streaming-VAD goals of issue 24, measured on silero-like stand-ins built with onnx.helper.

    python benchmarks/vad_goal.py                  # full size (the real model's shapes), both variants
    python benchmarks/vad_goal.py --fast           # the test's sizes (tests/test_vad_goal.py)

The stand-ins have the real silero VAD's interface and shapes (random weights; the 16 kHz decoder fitted as a linear
probe on a separate stream's speech labels, so the decision follows the signal as a trained VAD's does):

- **v5-like**: input [1, 512 + 64 context] at 16 kHz, state [2, 1, 128], sr (int64 scalar) -> output [1, 1],
  stateN [2, 1, 128]; an ``If`` on sr == 16000 whose branches are the 16 kHz and the 8 kHz networks, each: STFT as a
  Conv1d of 258 filters (129 bins of cos / -sin x Hann, window 256, hop 128), magnitude, 4 Conv1d + ReLU encoder
  layers (129 -> 128 -> 64 (stride 2) -> 64 (stride 2) -> 128), mean over time, an LSTM of 128 from the state, ReLU,
  a 1x1 Conv1d, sigmoid; the state leaves through the If's outputs (as the real v5 keeps its LSTM in the branches).
- **v4-like**: input [1, 512], sr, h and c [2, 1, 64] -> output, hn, cn: the same front end, two stacked LSTMs of
  64 (layer l from h[l], c[l]), the last one's h to the decoder.

The signal: sine bursts (220 Hz + 660 Hz) with noise, silence (noise only) between, 16 kHz, streamed chunk by chunk
with the state carried. Goals (issue 24): (a) float within 1e-3 of onnxruntime on every chunk (our Python
interpreter and C runtime); (b) int8 for a Cortex-M4 (``--target qemu-mps2-an386``, the M4 board profile, ``--input-value sr=16000``, calibrated on
the stream with its state carried: ``converters.stateful.streamed_calibration``) agrees with onnxruntime's speech /
non-speech decision (output > 0.5) on >= 95% of chunks, on our C runtime. The QEMU M4 board is not run here (no
helper streams a stateful model on it yet).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edge_sdk.tasks.pipeline import dequantize, to_input  # noqa: E402  (after the path lines)

SR = 16000
FLOAT_GOAL = 1e-3  # max |ours - onnxruntime| over every chunk and output
DECISION_GOAL = 0.95  # int8: share of chunks whose decision (output > 0.5) equals onnxruntime's
FIT_CHUNKS = 200  # chunks of a separate stream the stand-in's decoder is fitted on


@dataclass(frozen=True)
class Size:
    chunk: int = 512  # samples per chunk at 16 kHz
    context: int = 64  # v5: the previous chunk's last samples, prepended
    window: int = 256  # STFT window (Conv1d kernel), hop = window / 2
    bins: int = 129  # STFT bins: 2 x bins filters
    widths: tuple = (128, 64, 64, 128)  # encoder channels; layers 2 and 3 stride 2
    hidden: int = 128  # v5 LSTM width
    hidden_v4: int = 64  # v4: two stacked LSTMs of this width


FULL = Size()
FAST = Size(chunk=256, context=32, window=64, bins=33, widths=(32, 16, 16, 32), hidden=32, hidden_v4=16)


def _vi(name, elem, shape):
    from onnx import helper

    return helper.make_tensor_value_info(name, elem, shape)


def _front(p: str, size: Size, rate_div: int, audio: str, r) -> tuple[list, dict, str]:
    """STFT conv -> magnitude -> 4 conv layers -> mean over time: nodes, weights, the [1, C] feature name."""
    from onnx import helper

    win = size.window // rate_div
    bins = size.bins // rate_div + (1 if rate_div > 1 else 0)
    n, k = np.arange(win), np.arange(bins)[:, None]
    hann = np.hanning(win)
    basis = np.concatenate([np.cos(2 * np.pi * k * n / win) * hann, -np.sin(2 * np.pi * k * n / win) * hann])
    w = {p + "stft": basis[:, None, :].astype(np.float32), p + "halves": np.array([bins, bins], np.int64)}
    nodes = [helper.make_node("Unsqueeze", [audio, "ax1"], [p + "a3"]),
             helper.make_node("Conv", [p + "a3", p + "stft"], [p + "spec"], strides=[win // 2]),
             helper.make_node("Split", [p + "spec", p + "halves"], [p + "re", p + "im"], axis=1),
             helper.make_node("Mul", [p + "re", p + "re"], [p + "re2"]),
             helper.make_node("Mul", [p + "im", p + "im"], [p + "im2"]),
             helper.make_node("Add", [p + "re2", p + "im2"], [p + "pow"]),
             helper.make_node("Sqrt", [p + "pow"], [p + "mag"])]
    x, c_in = p + "mag", bins
    for layer, (c_out, stride) in enumerate(zip(size.widths, (1, 2, 2, 1))):
        q = f"{p}enc{layer}_"
        w[q + "w"] = (r.standard_normal((c_out, c_in, 3)) / np.sqrt(3 * c_in)).astype(np.float32)
        w[q + "b"] = (r.standard_normal(c_out) * 0.05).astype(np.float32)
        nodes += [helper.make_node("Conv", [x, q + "w", q + "b"], [q + "c"], pads=[1, 1], strides=[stride]),
                  helper.make_node("Relu", [q + "c"], [q + "r"])]
        x, c_in = q + "r", c_out
    nodes.append(helper.make_node("ReduceMean", [x], [p + "feat"], axes=[2], keepdims=0))  # [1, C]
    return nodes, w, p + "feat"


def _lstm(q: str, x: str, feat: int, hidden: int, h0: str, c0: str, r) -> tuple[list, dict]:
    from onnx import helper

    w = {q + "w": (r.standard_normal((1, 4 * hidden, feat)) / np.sqrt(feat)).astype(np.float32),
         q + "r": (r.standard_normal((1, 4 * hidden, hidden)) / np.sqrt(hidden)).astype(np.float32),
         q + "b": (r.standard_normal((1, 8 * hidden)) * 0.1).astype(np.float32)}
    node = helper.make_node("LSTM", [x, q + "w", q + "r", q + "b", "", h0, c0], [q + "y", q + "hn", q + "cn"],
                            hidden_size=hidden, name=f"/{q.rstrip('_')}/decoder/rnn/LSTM")
    return [node], w


def _decoder(p: str, h: str, hidden: int, bias: float, r) -> tuple[list, dict, str]:
    """ReLU -> 1x1 Conv1d -> sigmoid: [1, 1] probability from h [1, 1, hidden]."""
    from onnx import helper

    w = {p + "dec": (r.standard_normal((1, hidden, 1)) / np.sqrt(hidden)).astype(np.float32),
         p + "decb": np.array([bias], np.float32), p + "chw": np.array([1, hidden, 1], np.int64),
         p + "out_shape": np.array([1, 1], np.int64)}
    nodes = [helper.make_node("Reshape", [h, p + "chw"], [p + "hc"]),
             helper.make_node("Relu", [p + "hc"], [p + "hr"]),
             helper.make_node("Conv", [p + "hr", p + "dec", p + "decb"], [p + "d"]),
             helper.make_node("Sigmoid", [p + "d"], [p + "prob3"]),
             helper.make_node("Reshape", [p + "prob3", p + "out_shape"], [p + "prob"])]
    return nodes, w, p + "prob"


def _branch(version: str, tag: str, size: Size, rate_div: int, bias: float, seed: int):
    from onnx import TensorProto as TP
    from onnx import helper, numpy_helper

    r = np.random.default_rng(seed)
    p = f"{tag}_"
    nodes, w, feat = _front(p, size, rate_div, "input", r)
    nodes.append(helper.make_node("Unsqueeze", [feat, "ax0"], [p + "seq"]))  # [1, 1, C]
    if version == "v5":
        nodes += [helper.make_node("Gather", ["state", "i0"], [p + "h0g"], axis=0),
                  helper.make_node("Gather", ["state", "i1"], [p + "c0g"], axis=0),
                  helper.make_node("Unsqueeze", [p + "h0g", "ax0"], [p + "h0"]),
                  helper.make_node("Unsqueeze", [p + "c0g", "ax0"], [p + "c0"])]
        lstm, lw = _lstm(p + "l0_", p + "seq", size.widths[-1], size.hidden, p + "h0", p + "c0", r)
        nodes += lstm + [helper.make_node("Concat", [p + "l0_hn", p + "l0_cn"], [p + "state_out"], axis=0)]
        w.update(lw)
        dec, dw, prob = _decoder(p, p + "l0_hn", size.hidden, bias, r)
        outs = [_vi(prob, TP.FLOAT, [1, 1]), _vi(p + "state_out", TP.FLOAT, [2, 1, size.hidden])]
    else:
        x, feat_w, hs, cs = p + "seq", size.widths[-1], [], []
        for layer in range(2):
            q = f"{p}l{layer}_"
            nodes += [helper.make_node("Slice", ["h", f"s{layer}", f"e{layer}", "ax0"], [q + "h0"]),
                      helper.make_node("Slice", ["c", f"s{layer}", f"e{layer}", "ax0"], [q + "c0"])]
            lstm, lw = _lstm(q, x, feat_w, size.hidden_v4, q + "h0", q + "c0", r)
            nodes += lstm + [helper.make_node("Squeeze", [q + "y", "ax1"], [q + "ys"])]
            w.update(lw)
            x, feat_w = q + "ys", size.hidden_v4
            hs.append(q + "hn")
            cs.append(q + "cn")
        nodes += [helper.make_node("Concat", hs, [p + "hn"], axis=0), helper.make_node("Concat", cs, [p + "cn"], axis=0)]
        dec, dw, prob = _decoder(p, hs[-1], size.hidden_v4, bias, r)
        shape = [2, 1, size.hidden_v4]
        outs = [_vi(prob, TP.FLOAT, [1, 1]), _vi(p + "hn", TP.FLOAT, shape), _vi(p + "cn", TP.FLOAT, shape)]
    nodes += dec
    w.update(dw)
    return helper.make_graph(nodes, tag, [], outs, [numpy_helper.from_array(v, k) for k, v in w.items()])


def silero_like(version: str = "v5", size: Size = FULL, bias: float = 0.0, seed: int = 0):
    """The stand-in ONNX model (see the module docstring); ``bias``: the 16 kHz decoder's bias."""
    from onnx import TensorProto as TP
    from onnx import helper, numpy_helper

    hidden = size.hidden if version == "v5" else size.hidden_v4
    samples = size.chunk + (size.context if version == "v5" else 0)
    state_outs = ["stateN"] if version == "v5" else ["hn", "cn"]
    sr_if = helper.make_node("If", ["is_16k"], ["output", *state_outs], name="If_0",
                             then_branch=_branch(version, "k16", size, 1, bias, seed + 1),
                             else_branch=_branch(version, "k8", size, 2, 0.0, seed + 2))
    nodes = [helper.make_node("Equal", ["sr", "k16000"], ["is_16k"]), sr_if]
    inits = {"k16000": np.array(16000, np.int64), "ax0": np.array([0], np.int64), "ax1": np.array([1], np.int64),
             "i0": np.array(0, np.int64), "i1": np.array(1, np.int64), "s0": np.array([0], np.int64),
             "e0": np.array([1], np.int64), "s1": np.array([1], np.int64), "e1": np.array([2], np.int64)}
    state_shape = [2, 1, hidden]
    inputs = [_vi("input", TP.FLOAT, [1, samples])]
    inputs += [_vi("state", TP.FLOAT, state_shape)] if version == "v5" else \
        [_vi("h", TP.FLOAT, state_shape), _vi("c", TP.FLOAT, state_shape)]
    inputs.append(_vi("sr", TP.INT64, []))
    outputs = [_vi("output", TP.FLOAT, [1, 1])] + [_vi(o, TP.FLOAT, state_shape) for o in state_outs]
    graph = helper.make_graph(nodes, f"silero_{version}_like", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    model.ir_version = 8
    return model


def speechlike(seconds: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sine bursts (220 + 660 Hz, 0.25-0.6 s) with noise, noise-only silence between, at 16 kHz: (samples, whether
    each sample is in a burst)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SR)
    out = 0.01 * rng.standard_normal(n)
    gate = np.zeros(n, bool)
    t = 0
    while t < n:
        t += int(rng.uniform(0.2, 0.5) * SR)  # silence
        length = int(rng.uniform(0.25, 0.6) * SR)
        k = np.arange(min(length, max(n - t, 0)))
        env = np.sin(np.pi * k / max(length, 1)) ** 0.5
        amp = rng.uniform(0.2, 0.5)
        out[t:t + k.size] += amp * env * (np.sin(2 * np.pi * 220 * k / SR) + 0.5 * np.sin(2 * np.pi * 660 * k / SR))
        gate[t:t + k.size] = True
        t += length
    return out.astype(np.float32), gate


def chunk_labels(gate: np.ndarray, size: Size, count: int) -> np.ndarray:
    """Speech per chunk: more than half its samples in a burst."""
    return np.array([gate[k * size.chunk:(k + 1) * size.chunk].mean() > 0.5 for k in range(count)])


def chunks_of(audio: np.ndarray, size: Size, version: str) -> list[np.ndarray]:
    """The model's input per chunk: v5 prepends the previous chunk's last ``context`` samples (zeros first)."""
    out, context = [], np.zeros(size.context, np.float32)
    for k in range(len(audio) // size.chunk):
        chunk = audio[k * size.chunk:(k + 1) * size.chunk]
        out.append((np.concatenate([context, chunk]) if version == "v5" else chunk)[None].astype(np.float32))
        context = chunk[-size.context:]
    return out


class OnnxStream:
    """onnxruntime with the state carried by hand."""

    def __init__(self, proto, version: str, hidden: int, sr: int = SR):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3  # not its notes on unused initializers of the branch it does not take
        self.sess = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
        self.version, self.sr = version, np.array(sr, np.int64)
        zeros = np.zeros((2, 1, hidden), np.float32)
        self.state = {"state": zeros} if version == "v5" else {"h": zeros, "c": zeros}

    def __call__(self, x) -> list[np.ndarray]:
        outs = self.sess.run(None, {"input": x, "sr": self.sr, **self.state})
        self.state = dict(zip(self.state, outs[1:]))
        return outs


class OursStream:
    """A converted model in edge-sdk's interpreter (``backend``) or LiteRT, the caller carrying the state; float
    values in and out, (de)quantized at integer I/O; the pinned sr is not an input any more."""

    def __init__(self, tflite: bytes, backend: str, version: str, hidden: int):
        if backend == "litert":
            from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

            self.it = LiteRT(model_content=tflite, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                             num_threads=1)
        else:
            from edge_sdk import Interpreter

            self.it = Interpreter(model_content=tflite, backend=backend)
        self.it.allocate_tensors()
        zeros = np.zeros((2, 1, hidden), np.float32)
        self.state = {"state": zeros} if version == "v5" else {"h": zeros, "c": zeros}
        self.outs = {"state": "stateN", "h": "hn", "c": "cn"}

    def __call__(self, x) -> list[np.ndarray]:
        values = {"input": x, "sr": np.array(SR, np.int64), **self.state}  # sr: unless pinned
        for d in self.it.get_input_details():  # quantized at integer inputs
            self.it.set_tensor(d["index"], to_input(values[d["name"]], d))
        self.it.invoke()
        got = {d["name"].removesuffix("_dequant"): dequantize(self.it.get_tensor(d["index"]), d)
               for d in self.it.get_output_details()}
        self.state = {k: got[o] for k, o in self.outs.items() if k in self.state}
        return [got["output"]] + [got[self.outs[k]] for k in self.state]


def fitted(version: str, size: Size, audio_chunks: list, labels: np.ndarray, seed: int = 0):
    """The stand-in with its 16 kHz decoder fitted as a linear probe on the float model's ReLU(h) per chunk (least
    squares to a logit of +-4 by the signal's speech label), so that its decision follows the signal as a trained
    VAD's does, with margins as wide as the features allow. The decoder does not feed the state: one run gives
    every chunk's h."""
    hidden = size.hidden if version == "v5" else size.hidden_v4
    proto = silero_like(version, size, 0.0, seed)
    stream = OnnxStream(proto, version, hidden)
    feats = []
    for x in audio_chunks:
        outs = stream(x)
        h = outs[1][0] if version == "v5" else outs[1][-1]  # [1, hidden]: the decoder's LSTM output
        feats.append(np.maximum(h.reshape(-1), 0))
    a = np.concatenate([np.asarray(feats, np.float64), np.ones((len(feats), 1))], axis=1)
    target = np.where(labels, 4.0, -4.0)
    coef = np.linalg.lstsq(a, target, rcond=None)[0]
    model = silero_like(version, size, float(coef[-1]), seed)
    from onnx import numpy_helper

    then = next(a_ for a_ in model.graph.node[-1].attribute if a_.name == "then_branch").g
    for init in then.initializer:
        if init.name == "k16_dec":
            init.CopyFrom(numpy_helper.from_array(coef[:-1].reshape(1, hidden, 1).astype(np.float32), "k16_dec"))
    return model


def measure(version: str, size: Size, n_chunks: int, calib_chunks: int, backends=("python", "c"), target="qemu-mps2-an386",
            seed: int = 0) -> dict:
    """Goal (a) and (b) for one variant: figures per backend."""
    from converters import convert

    hidden = size.hidden if version == "v5" else size.hidden_v4
    audio, _ = speechlike((n_chunks + 1) * size.chunk / SR, seed=seed + 7)
    test = chunks_of(audio, size, version)[:n_chunks]
    calib_audio, _ = speechlike((calib_chunks + 1) * size.chunk / SR, seed=seed + 11)
    calib = chunks_of(calib_audio, size, version)[:calib_chunks]
    train_audio, gate = speechlike((FIT_CHUNKS + 1) * size.chunk / SR, seed=seed + 13)  # the decoder's own data
    proto = fitted(version, size, chunks_of(train_audio, size, version)[:FIT_CHUNKS],
                   chunk_labels(gate, size, FIT_CHUNKS), seed)
    ref = OnnxStream(proto, version, hidden)
    want = [ref(x) for x in test]
    decisions = np.array([float(w[0].reshape(-1)[0]) > 0.5 for w in want])
    t0 = time.perf_counter()
    float_result = convert(proto, quantize="none")
    record = {"version": version, "chunks": len(test), "speech_share": float(decisions.mean()),
              "margin": float(np.median([abs(float(w[0].reshape(-1)[0]) - 0.5) for w in want])),
              "float": {}, "int8": {}, "state": float_result.report.get("state")}
    for backend in backends:
        ours = OursStream(float_result.tflite, backend, version, hidden)
        diff = max(float(np.abs(g - w).max()) for x, ws in zip(test, want) for g, w in zip(ours(x), ws))
        record["float"][backend] = diff
    record["float_seconds"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    q = convert(proto, quantize="int8", calibration=[[x] for x in calib], input_values={"sr": SR}, target=target,
                allow_lossy=True)
    record["int8_seconds"] = time.perf_counter() - t0
    report = q.report["quantization"]["report"]
    record["int8_notes"] = [n for n in report["notes"] if n.startswith("calibration streamed")]
    guard = report.get("guard") or {}
    record["int8_guard_snr_db"] = {o["name"]: o["worst_snr_db"] for o in guard.get("outputs", [])}
    for backend in backends:
        ours = OursStream(q.tflite, backend, version, hidden)
        got = np.array([float(ours(x)[0].reshape(-1)[0]) > 0.5 for x in test])
        record["int8"][backend] = float((got == decisions).mean())
    return record


def main(argv=None) -> int:
    from aims import Aims

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="the test's sizes (tests/test_vad_goal.py)")
    parser.add_argument("--chunks", type=int, default=120, help="chunks streamed (default 120)")
    parser.add_argument("--calib", type=int, default=64, help="calibration chunks, streamed (default 64)")
    parser.add_argument("--version", choices=("v4", "v5", "both"), default="both")
    args = parser.parse_args(argv)
    size = FAST if args.fast else FULL
    aims = Aims("vad_goal", "python benchmarks/vad_goal.py" + (" --fast" if args.fast else ""))
    versions = ("v4", "v5") if args.version == "both" else (args.version,)
    float_diffs, agreements = {}, {}
    for version in versions:
        rec = measure(version, size, args.chunks, args.calib)
        print(f"{version}-like ({'fast' if args.fast else 'full'} size): {rec['chunks']} chunks, "
              f"{rec['speech_share']:.0%} speech by onnxruntime's decision (median |output - 0.5| "
              f"{rec['margin']:.3f})")
        for backend, d in rec["float"].items():
            print(f"  float, {backend:6s}: max |ours - onnxruntime| = {d:.2e} (goal <= {FLOAT_GOAL:g})")
            float_diffs[f"{version} {backend}"] = d
        for backend, a in rec["int8"].items():
            print(f"  int8 M4 board profile, {backend:6s}: decision agreement {a:.1%} (goal >= {DECISION_GOAL:.0%})")
            agreements[f"{version} {backend}"] = a
        print(f"  int8 guard SNR: {rec['int8_guard_snr_db']}; {'; '.join(rec['int8_notes'])}")
        print(f"  convert: float {rec['float_seconds']:.1f} s, int8 {rec['int8_seconds']:.1f} s")
    aims.every(f"float streamed within {FLOAT_GOAL:g} of onnxruntime", float_diffs, lambda d: d <= FLOAT_GOAL,
               "{:.2e}", section="float")
    aims.every(f"int8 Cortex-M4 decision agreement >= {DECISION_GOAL:.0%}", agreements,
               lambda a: a >= DECISION_GOAL, "{:.1%}", section="int8")
    if not args.fast:
        aims.save(chunks=args.chunks, calibration_chunks=args.calib)
    return aims.exit_status()


if __name__ == "__main__":
    sys.exit(main())
