"""The streaming-VAD goals of issue 24 at the test's sizes (benchmarks/vad_goal.py measures the full ones): silero v4-
and v5-like stand-ins streamed chunk by chunk with their state carried -- float within 1e-3 of onnxruntime; int8 for
the M4 board profile (sr pinned, calibrated on the stream with its state carried) agreeing with onnxruntime's
speech / non-speech decision on >= 95% of chunks -- on each runtime of the grid."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import vad_goal  # noqa: E402

CHUNKS = 100  # streamed per variant (the goal: 100+)
CALIB = 48  # calibration chunks, streamed


@pytest.mark.parametrize("version", ["v4", "v5"])
def test_vad_goals_on_the_stand_in(runtime, version):
    record = vad_goal.measure(version, vad_goal.FAST, CHUNKS, CALIB, backends=(runtime,))
    assert record["chunks"] == CHUNKS
    # a decision that follows the signal, not a constant one: both classes, outputs away from 0.5
    assert 0.2 <= record["speech_share"] <= 0.8 and record["margin"] > 0.2
    assert record["float"][runtime] <= vad_goal.FLOAT_GOAL
    assert record["int8"][runtime] >= vad_goal.DECISION_GOAL
    (note,) = record["int8_notes"]
    assert note.startswith(f"calibration streamed: {CALIB} sample(s)") and "the samples gave no state" in note
    pairs = record["state"]["tensors"]
    assert [(p["input"], p["output"]) for p in pairs] == (
        [("state", "stateN")] if version == "v5" else [("h", "hn"), ("c", "cn")])


def test_streamed_calibration_carries_the_float_models_state():
    """Each sample's state input is the float model's state output of the sample before (zeros first), whether the
    samples give the state (replaced) or only the audio (filled in)."""
    from converters.import_onnx import import_onnx
    from converters.stateful import streamed_calibration
    from edge_sdk.runtime.interpreter import Interpreter

    size = vad_goal.FAST
    proto = vad_goal.silero_like("v5", size)
    model = import_onnx(proto, input_values={"sr": 16000})
    pairs = model.import_notes["state_pairs"]
    audio, _ = vad_goal.speechlike(6 * size.chunk / vad_goal.SR, seed=3)
    chunks = vad_goal.chunks_of(audio, size, "v5")[:5]
    zeros = np.zeros((2, 1, size.hidden), np.float32)
    alone, note_alone = streamed_calibration(model, [[x] for x in chunks], pairs)
    given, note_given = streamed_calibration(model, [[x, zeros] for x in chunks], pairs)
    assert "the samples gave no state" in note_alone and "replaced" in note_given
    interp = Interpreter(model=model)
    interp.allocate_tensors()
    ins = {d["name"]: d["index"] for d in interp.get_input_details()}
    outs = {d["name"]: d["index"] for d in interp.get_output_details()}
    state = zeros
    for k, (a, g) in enumerate(zip(alone, given)):
        np.testing.assert_array_equal(a[0], chunks[k])
        np.testing.assert_array_equal(a[1], state)
        np.testing.assert_array_equal(g[1], state)
        interp.set_tensor(ins["input"], chunks[k])
        interp.set_tensor(ins["state"], state)
        interp.invoke()
        state = np.array(interp.get_tensor(outs["stateN"]))
    assert np.abs(alone[-1][1]).max() > 0  # realistic states, not zeros


def test_int8_vad_with_the_rate_if_at_run_time_keeps_its_state_on_the_device(runtime):
    """Points 1 and 2 together: the v5-like stand-in with sr left open (its LSTM inside the IF's branches), int8 and
    --stateful: the state crosses the IF as an int8 resource variable. Calibrated on 16 kHz chunks only, the 8 kHz
    branch never runs, stays float inside (said). Streamed at 16 kHz on the runtime and LiteRT, each keeping its own
    state, the decision follows onnxruntime's on >= 90% of chunks (the pinned-rate model's goal is 95%: above)."""
    from converters import convert
    from tests.test_convert_stateful import Stream

    size = vad_goal.FAST
    audio, gate = vad_goal.speechlike((vad_goal.FIT_CHUNKS + 1) * size.chunk / vad_goal.SR, seed=1)
    proto = vad_goal.fitted("v5", size, vad_goal.chunks_of(audio, size, "v5")[:vad_goal.FIT_CHUNKS],
                            vad_goal.chunk_labels(gate, size, vad_goal.FIT_CHUNKS))
    rate = np.array(16000, np.int64)
    calib = vad_goal.chunks_of(vad_goal.speechlike((CALIB + 1) * size.chunk / vad_goal.SR, seed=2)[0], size, "v5")
    result = convert(proto, quantize="int8", calibration=[[x, rate] for x in calib[:CALIB]], min_snr=15,
                     stateful=True)
    model = result.model
    names = [model.op_name(op) for op in model.subgraphs[0].operators]
    assert "IF" in names and names.index("READ_VARIABLE") < names.index("IF") < names.index("ASSIGN_VARIABLE")
    (variable,) = result.report["state"]["variables"]
    assert variable["type"] == "INT8" and (variable["input"], variable["output"]) == ("state", "stateN")
    notes = result.report["quantization"]["report"]["notes"]
    assert any("'If_0/else') never ran on the calibration samples" in n for n in notes)
    test = vad_goal.chunks_of(vad_goal.speechlike((CHUNKS + 1) * size.chunk / vad_goal.SR, seed=3)[0], size, "v5")
    ref = vad_goal.OnnxStream(proto, "v5", size.hidden)
    want = np.array([float(ref(x)[0].reshape(-1)[0]) > 0.5 for x in test[:CHUNKS]])
    assert 0.2 <= want.mean() <= 0.8
    for who in (runtime, "litert"):
        stream = Stream(result.tflite, who)
        got = np.array([float(stream.step(x, rate)["output"].reshape(-1)[0]) > 0.5 for x in test[:CHUNKS]])
        assert (got == want).mean() >= 0.9, who


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_int8_vad_on_the_qemu_m4_board_equals_python(tmp_path):
    """The int8 v5-like VAD for the M4 board profile (sr pinned, state as input / output), built into the Cortex-M4
    image and run under QEMU: its output equals our Python interpreter's bit for bit on image_main's inputs (so the
    decisions measured above on Python hold on the board; streaming the state on the board has no helper yet)."""
    from converters import convert
    from tests.oprunner import m4_image_mismatches

    size = vad_goal.FAST
    audio, gate = vad_goal.speechlike((vad_goal.FIT_CHUNKS + 1) * size.chunk / vad_goal.SR, seed=1)
    proto = vad_goal.fitted("v5", size, vad_goal.chunks_of(audio, size, "v5")[:vad_goal.FIT_CHUNKS],
                            vad_goal.chunk_labels(gate, size, vad_goal.FIT_CHUNKS))
    calib = vad_goal.chunks_of(vad_goal.speechlike((CALIB + 1) * size.chunk / vad_goal.SR, seed=2)[0], size, "v5")
    result = convert(proto, quantize="int8", calibration=[[x] for x in calib[:CALIB]],
                     input_values={"sr": vad_goal.SR}, target="qemu-mps2-an386", allow_lossy=True)
    failures = m4_image_mismatches({"vad_v5_int8": result.tflite}, tmp_path / "b")
    assert not failures, f"M4 output differs from Python on {failures}"
