"""edge convert's honesty (issue 24): pinned inputs named in the report (--input-value), every lossy mode through
the one accuracy guard (fp16 constants that under- / overflow float16 stay float32; fp16 and dynamic-range measured
like int8), one count of widened ops, no numpy warning on the terminal, no quantized DIV by a zero quantum."""

from __future__ import annotations

import json

import numpy as np
import pytest

from converters import convert
from edge_sdk.cli import main
from edge_sdk.errors import ConversionError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from tests.test_import_onnx_streaming import _sr_model, f32, ort_run  # noqa: E402


# ------------------------------------------------------------------------------------- --input-value (point 1)
@pytest.mark.parametrize("sr", [16000, 8000])
def test_cli_input_value_pins_the_if_input_and_the_report_says_so(tmp_path, capsys, sr):
    src, out = tmp_path / "sr.onnx", tmp_path / "sr.tflite"
    onnx.save(_sr_model(), src)
    assert main(["convert", str(src), "-o", str(out), "--quantize", "none", "--input-value", f"sr={sr}"]) == 0
    text = capsys.readouterr().out
    assert f"pinned     sr = {sr}: constant, no longer model input" in text
    assert "folded     " in text and "If 'If_0'" in text
    from edge_sdk import Interpreter

    it = Interpreter(model_path=str(out))
    it.allocate_tensors()
    assert [d["name"] for d in it.get_input_details()] == ["x"]  # sr left the signature
    x = f32(1, 4)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    (want,) = ort_run(_sr_model(), {"x": x, "sr": np.array(sr, np.int64)})
    np.testing.assert_allclose(it.get_tensor(it.get_output_details()[0]["index"]), want, atol=1e-5)

    assert main(["convert", str(src), "-o", str(out), "--quantize", "none", "--input-value", f"sr={sr}",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["import"]["pinned_inputs"] == {"sr": sr}


@pytest.mark.parametrize("flags, words", [
    (["--input-value", "sr"], "expected NAME=VALUE"),
    (["--input-value", "sr=fast"], "sr: expected a number or comma-separated numbers, not 'fast'"),
    (["--input-value", "sr=1,,2"], "sr: expected a number"),
    (["--input-value", "sr=16000", "--input-value", "sr=8000"], "--input-value: input 'sr' given twice"),
])
def test_cli_input_value_bad_syntax_exits_2_naming_the_flag(tmp_path, capsys, flags, words):
    src = tmp_path / "sr.onnx"
    onnx.save(_sr_model(), src)
    assert _exit_status(["convert", str(src), "-o", str(tmp_path / "o.tflite"), "--quantize", "none"] + flags) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "o.tflite").exists()


def _exit_status(argv) -> int:
    """The CLI's exit status: argparse exits (SystemExit), the commands return it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_input_values_on_a_tflite_source_is_refused_naming_the_flag(tmp_path):
    m = convert(_sr_model(), quantize="none", input_values={"sr": 16000})
    with pytest.raises(ConversionError, match=r"input_values \(--input-value\) pins inputs of an ONNX source"):
        convert(m.tflite, quantize="none", input_values={"sr": 16000})
