"""Issue 24 walk (part b): a QDQ graph converted without calibration data. Its guard measured on synthetic
samples (uniform over the input ranges) and, at precision auto, widened every op to float32 on that evidence
although the source carries its own ranges; onnxruntime and onnx2tf trust them, and so does the converter now."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from tests.test_walk24_cli import _qdq_by_onnxruntime  # noqa: E402


def test_qdq_without_calibration_keeps_its_ranges_and_says_the_guard_was_synthetic(tmp_path):
    from converters import convert

    src = tmp_path / "cnn_qdq.onnx"
    _qdq_by_onnxruntime(src)
    result = convert(str(src), quantize="int8")  # precision auto, no allow_lossy
    guard = result.report["guard"]
    assert guard["synthetic"] and not guard.get("widened")
    sg = result.model.subgraphs[0]
    assert all(sg.tensors[op.outputs[0]].type == "INT8" for op in sg.operators
               if result.model.op_name(op) in ("CONV_2D", "FULLY_CONNECTED", "ADD"))
    notes = " ".join(result.report["quantization"]["report"]["notes"])
    # synthetic samples fall short here (~9 dB): the shortfall is said, not acted on (no refusal, no widening)
    assert not guard["met"]
    assert "no op widened on synthetic evidence" in notes and "16 synthetic samples" in notes
