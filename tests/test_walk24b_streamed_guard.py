"""Issue 24 walk (part b): fp16 and dynamic read calibration data as int8 does.

A streaming model (a GRU whose state is an input / output pair) converted with ``--quantize fp16`` or ``dynamic``
and calibration samples holding the audio alone was refused ("1 arrays for a model with 2 inputs") although int8
took the same file; and with samples holding states, the fp16 / dynamic guard judged on those (zero) states instead
of the states the model meets when it streams. Every guarded mode now takes converters.stateful's streamed path.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

from converters import convert  # noqa: E402

FEAT, HIDDEN = 6, 8


@pytest.fixture(scope="module")
def gru():
    """x [1, 1, FEAT], h [1, 1, HIDDEN] -> GRU -> y, yh (the state pair h / yh)."""
    r = np.random.default_rng(3)
    inits = {"w": r.standard_normal((1, 3 * HIDDEN, FEAT)).astype(np.float32) * 0.5,
             "r": r.standard_normal((1, 3 * HIDDEN, HIDDEN)).astype(np.float32) * 0.5,
             "b": r.standard_normal((1, 6 * HIDDEN)).astype(np.float32) * 0.3}
    node = helper.make_node("GRU", ["x", "w", "r", "b", "", "h"], ["y", "yh"], hidden_size=HIDDEN, name="rec")
    graph = helper.make_graph(
        [node], "stream",
        [helper.make_tensor_value_info("x", TP.FLOAT, [1, 1, FEAT]), helper.make_tensor_value_info("h", TP.FLOAT, [1, 1, HIDDEN])],
        [helper.make_tensor_value_info("y", TP.FLOAT, [1, 1, 1, HIDDEN]),
         helper.make_tensor_value_info("yh", TP.FLOAT, [1, 1, HIDDEN])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    proto.ir_version = 8
    return proto


def _quant_notes(result) -> str:
    return " ".join(str(n) for n in result.report["quantization"]["report"]["notes"])


def _audio(n=12):
    return [np.random.default_rng(50 + k).standard_normal((1, 1, FEAT)).astype(np.float32) for k in range(n)]


@pytest.mark.parametrize("mode", ["fp16", "dynamic"])
def test_audio_only_calibration_streams_in_every_guarded_mode(gru, mode):
    audio = np.stack(_audio())  # [12, 1, 1, FEAT]: one array, the state input left to the stream
    result = convert(gru, quantize=mode, calibration=audio)
    text = _quant_notes(result)
    assert "calibration streamed: 12 sample(s)" in text and "the samples gave no state" in text, text
    assert result.report["quantization"]["mode"] == mode


def test_fp16_guard_replaces_the_samples_zero_states(gru):
    samples = [[x, np.zeros((1, 1, HIDDEN), np.float32)] for x in _audio()]
    result = convert(gru, quantize="fp16", calibration=samples)
    text = _quant_notes(result)
    assert "the samples' own state values replaced" in text, text
