"""edge bench --inputs a WAV for a model of raw samples: the input takes the file's length (as `edge run` does:
tests/test_rest27_first_hour.py), the samples are what the model is fed; refusals in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from edge_sdk.model import read_model
from edge_sdk.tools.bench import run_benchmark, wav_arrays
from tests.test_first_hour import edge, one_line_error
from tests.test_pipeline import write_wav
from tests.test_rest27_first_hour import energy_model, litert_scores


@pytest.mark.parametrize("length", [37, 400, 1601])
def test_bench_feeds_a_wav_at_its_length(tmp_path, length):
    model = energy_model(tmp_path / "any_length.tflite", rate=8000)
    samples = (np.random.default_rng(length).integers(-9000, 9000, length)).astype(np.int16)
    write_wav(tmp_path / "clip.wav", samples, 8000)
    report = run_benchmark(model, runs=2, warmup=0, profile_runs=1, inputs=tmp_path / "clip.wav")
    assert report["input_shapes"] == [{"name": "audio", "shape": [1, length]}]
    # the samples fed: the model's scores on them are LiteRT's on the clip
    (_, x), = wav_arrays(tmp_path / "clip.wav", read_model(model.read_bytes()), "m")
    from edge_sdk import Interpreter
    it = Interpreter(model_path=str(model))
    it.resize_tensor_input(0, [1, length])
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    y = it.get_tensor(it.get_output_details()[0]["index"]).reshape(-1).astype(np.float64)
    np.testing.assert_allclose(np.exp(y - y.max()) / np.exp(y - y.max()).sum(), litert_scores(model, samples),
                               atol=1e-5)


def test_bench_wav_refusals_and_the_rate_flag(tmp_path):
    write_wav(tmp_path / "clip.wav", np.full(300, 4000, np.int16), 8000)
    bare = energy_model(tmp_path / "bare.tflite")
    one_line_error(edge("bench", bare, "--inputs", tmp_path / "clip.wav"), 2, "clip.wav", "--sample-rate HZ")
    one_line_error(edge("bench", bare, "--inputs", tmp_path / "clip.wav", "--sample-rate", "16000"), 3,
                   "8000 Hz audio but bare.tflite takes 16000 Hz")
    p = edge("bench", bare, "--inputs", tmp_path / "clip.wav", "--sample-rate", "8000", "--runs", "2", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["input_shapes"] == [{"name": "audio", "shape": [1, 300]}]
    # no data for a dynamic input: --input-shape named with the input
    one_line_error(edge("bench", bare), 2, "input 'audio'", "[-1, -1]", "--input-shape audio:D0,D1")
