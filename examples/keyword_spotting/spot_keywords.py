"""Keyword spotting from WAV files with TFLM's streaming micro_speech model and its audio preprocessor.

    .venv/bin/python examples/keyword_spotting/spot_keywords.py [WAV ...] [--hop-ms 200] [--threshold 0.6]
        [--out out/examples/keyword_spotting]

The models (from ../shared/models/tflite-micro; the example skips with a message when that folder is absent):
``audio_preprocessor_int8.tflite`` turns each 30 ms frame of 16 kHz int16 audio into 40 int8 log-mel features
(TFLM's signal-library custom ops: window, FFT, filter bank, noise reduction, PCAN, log — run by our
interpreter, with state carried from frame to frame); ``micro_speech_quantized.tflite`` takes 49 frames, a
20 ms step apart (one second), and scores silence / unknown / yes / no.

Steps: (1) each 1-second clip classified with ``edge_sdk.tasks.pipeline.AudioClassifier``; (2) streaming: the
clips joined into one recording, a one-second window slid over it every --hop-ms, and a keyword reported when
"yes" or "no" tops the scores averaged over the last --average windows with at least --threshold
(repeats within a second suppressed, after TFLM's RecognizeCommands); (3) package a copy of the model with a manifest (labels, sample rate, frame step)
and run the clips through the command line, ``edge run --frontend``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import wave
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from examples._cli import edge, show

SHARED = Path(os.environ.get("EDGE_SHARED_MODELS", ROOT.parent / "shared" / "models")) / "tflite-micro"
MODEL = SHARED / "micro_speech_quantized.tflite"
FRONTEND = SHARED / "audio_preprocessor_int8.tflite"
TESTDATA = SHARED / "testdata" / "micro_speech"
CLIPS = ("yes_1000ms.wav", "no_1000ms.wav", "noise_1000ms.wav", "silence_1000ms.wav")
LABELS = ["silence", "unknown", "yes", "no"]
KEYWORDS = ("yes", "no")
SAMPLE_RATE = 16000
FRAME_STEP = 320  # 20 ms at 16 kHz; the preprocessor's frame is 480 samples (30 ms)
WINDOW_S = (48 * FRAME_STEP + 480) / SAMPLE_RATE  # one model window: 49 frames


def write_wav(path: Path, samples: np.ndarray, rate: int = SAMPLE_RATE) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())


def spot(windows, threshold: float, average: int = 3, suppress_s: float = 1.0) -> list[tuple[float, str, float]]:
    """Keywords heard, as (time the window ended, label, averaged score): each label's score averaged over the
    last ``average`` windows (one window alone is noisy), a keyword reported when its average is the top one
    and at least ``threshold``, the same keyword not again within ``suppress_s`` (after TFLM's
    RecognizeCommands). ``windows``: (start, predictions with every label) as predict_windows returns them."""
    heard: list[tuple[float, str, float]] = []
    history: list[dict[str, float]] = []
    for t, preds in windows:
        history = (history + [dict(preds)])[-average:]
        if len(history) < average:
            continue
        mean = {label: float(np.mean([h[label] for h in history])) for label in history[0]}
        label = max(mean, key=mean.get)
        end = t + WINDOW_S
        if label in KEYWORDS and mean[label] >= threshold:
            if heard and heard[-1][1] == label and end - heard[-1][0] < suppress_s:
                continue
            heard.append((end, label, mean[label]))
    return heard


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wavs", nargs="*", help="16 kHz 16-bit mono WAV files (default: TFLM's four 1 s clips)")
    parser.add_argument("--hop-ms", type=int, default=200, help="streaming window step in ms (default 200)")
    parser.add_argument("--threshold", type=float, default=0.8,
                        help="averaged keyword score to report (default 0.8)")
    parser.add_argument("--average", type=int, default=3, help="windows averaged before deciding (default 3)")
    parser.add_argument("--out", default=str(ROOT / "out" / "examples" / "keyword_spotting"))
    args = parser.parse_args(argv)
    wavs = [Path(p) for p in args.wavs] or [TESTDATA / c for c in CLIPS]
    missing = [p for p in [MODEL, FRONTEND, *wavs] if not p.exists()]
    if missing:
        print(f"skipped: {', '.join(show(p) for p in missing)} not found (the reference models live in "
              f"../shared/models/tflite-micro/, outside this repository)")
        return 0
    from edge_sdk.model import read_model, write_model
    from edge_sdk.model.manifest import write_manifest
    from edge_sdk.tasks.pipeline import AudioClassifier, read_wav

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    hop_frames = max(1, round(args.hop_ms * SAMPLE_RATE / 1000 / FRAME_STEP))

    print(f"== 1. one-second clips with edge_sdk.tasks.pipeline.AudioClassifier ({MODEL.name} + {FRONTEND.name})",
          flush=True)
    kws = AudioClassifier(str(MODEL), labels=LABELS, frontend=str(FRONTEND), frame_step=FRAME_STEP, hop=hop_frames)
    print(f"frontend: {kws.frame_length} samples per frame -> {kws.feature_size} features; model: {kws.frames} "
          f"frames, {kws.frame_step} samples apart ({kws.window_samples / SAMPLE_RATE:.2f} s per window)")
    for path in wavs:
        samples, rate = read_wav(path)
        top = kws.predict((samples[: kws.window_samples], rate), top_k=4)
        scores = "  ".join(f"{p.label} {p.score:.2f}" for p in top)
        print(f"{path.name:20s} -> {top[0].label:8s} ({scores})")
    print()

    print(f"== 2. streaming: the clips joined into one recording, a 1 s window every {hop_frames * 20} ms", flush=True)
    stream = np.concatenate([read_wav(p)[0] for p in wavs])
    stream_path = out / "stream.wav"
    write_wav(stream_path, stream)
    windows = kws.predict_windows((stream, SAMPLE_RATE), top_k=len(LABELS))
    print(f"{show(stream_path)}: {stream.size / SAMPLE_RATE:.1f} s, {len(windows)} windows")
    line = []
    for t, preds in windows:
        line.append(f"{t:4.1f}s {preds[0].label[:7]:7s} {preds[0].score:.2f}")
    for i in range(0, len(line), 4):
        print("   " + "   ".join(line[i:i + 4]))
    heard = spot(windows, args.threshold, args.average)
    print(f"heard (scores averaged over {args.average} windows, threshold {args.threshold}): "
          + (", ".join(f"'{label}' at {t:.2f} s ({score:.2f})" for t, label, score in heard) or "nothing"))
    print()

    print("== 3. the command line: package a copy with a manifest, then edge run --frontend", flush=True)
    packaged = out / "micro_speech_labelled.tflite"
    m = read_model(MODEL.read_bytes())
    write_manifest(m, {"labels": LABELS, "task": "audio",
                       "audio": {"sample_rate": SAMPLE_RATE, "frame_step": FRAME_STEP},
                       "source": {"path": MODEL.name, "sha256": hashlib.sha256(MODEL.read_bytes()).hexdigest()}})
    write_model(m, packaged)
    print(f"wrote {show(packaged)} (labels, 16 kHz, 20 ms frame step in its manifest)")
    edge("run", packaged, *wavs, "--frontend", FRONTEND, "--top-k", "2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
