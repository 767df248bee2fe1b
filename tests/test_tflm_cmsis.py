"""benchmarks/tflm_cmsis.py without building TFLM: its argument handling (misuse: one line, exit 2), the source list
it derives from a TFLM tree (cmsis_nn specialization), the resolver calls it writes for a model's ops, and the
parsing of the harness's UART output. Building and running TFLM + CMSIS-NN needs fetched sources and minutes; that
is the benchmark's job (benchmarks/results/*s19_cmsis*), not this test's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import tflm_cmsis  # noqa: E402


def test_input_bytes_are_the_issues_pattern():
    data = tflm_cmsis.input_bytes(300)
    assert data[:4] == bytes([11, 48, 85, 122])
    assert data[7] == (7 * 37 + 11) % 256 and data[299] == (299 * 37 + 11) % 256


def test_make_var_list_reads_a_continued_assignment():
    inc = ("OTHER := a.cc\n"
           "MICROLITE_CC_KERNEL_SRCS := \\\n"
           "$(TENSORFLOW_ROOT)tensorflow/lite/micro/kernels/add.cc \\\n"
           "$(TENSORFLOW_ROOT)tensorflow/lite/micro/kernels/conv.cc\n"
           "\n"
           "NEXT := b.cc\n")
    assert tflm_cmsis.make_var_list(inc, "MICROLITE_CC_KERNEL_SRCS") == [
        "tensorflow/lite/micro/kernels/add.cc", "tensorflow/lite/micro/kernels/conv.cc"]
    assert tflm_cmsis.make_var_list(inc, "MISSING") == []


def test_resolver_calls_map_builtin_names_to_tflm_methods():
    header = ("  TfLiteStatus AddConv2D(const TFLMRegistration& r = Register_CONV_2D()) {\n"
              "  TfLiteStatus AddDepthwiseConv2D(\n  TfLiteStatus AddFullyConnected(\n  TfLiteStatus AddRelu6() {\n")
    methods = tflm_cmsis.resolver_methods(header)
    calls = tflm_cmsis.resolver_calls(["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "RELU6", "FULLY_CONNECTED"],
                                      methods)
    assert calls == ["AddConv2D", "AddDepthwiseConv2D", "AddRelu6", "AddFullyConnected"]
    with pytest.raises(tflm_cmsis.Misuse, match="op CUMSUM"):
        tflm_cmsis.resolver_calls(["CUMSUM"], methods)


def test_parse_uart_reads_ticks_arena_outputs_and_nodes():
    text = ("noise before\r\nticks 1000\r\narena 6836\r\nout 0 4 00ff7f80\r\nout 1 0 \r\n"
            "node 0 4 120\r\nnode 1 9 30\r\ndone\r\n")
    r = tflm_cmsis.parse_uart(text)
    assert r["ticks"] == 1000 and r["instructions"] == 40000 and r["arena"] == 6836
    assert r["outputs"] == [bytes([0, 255, 127, 128]), b""]
    assert r["nodes"] == [(4, 120), (9, 30)]


@pytest.mark.parametrize("text, match", [
    ("ticks 5\r\narena 1\r\nout 0 3 0011\r\n", "2 bytes where the board announced 3"),
    ("arena 1\r\n", "no 'ticks'"),
    ("ticks 4278227464\r\narena 1\r\n", "stepped back"),
    ("\r\nFAULT HardFault pc=0x00001234\r\n", "HardFault"),
    ("ERROR AllocateTensors\r\n", "AllocateTensors"),
])
def test_parse_uart_names_what_went_wrong(text, match):
    with pytest.raises(ValueError, match=match):
        tflm_cmsis.parse_uart(text)


def _fake_tflm(root: Path) -> Path:
    """A TFLM tree with just what tflm_sources reads: sources.inc, two kernels (one with a cmsis_nn variant), core
    files (one of them a test) and a tensorflow/lite file outside micro."""
    make = root / "tensorflow/lite/micro/tools/make"
    make.mkdir(parents=True)
    (make / "sources.inc").write_text(
        "MICROLITE_TEST_SRCS := \\\n$(TENSORFLOW_ROOT)tensorflow/lite/micro/listed_check.cc\n\n"
        "MICROLITE_CC_KERNEL_SRCS := \\\n$(TENSORFLOW_ROOT)tensorflow/lite/micro/kernels/conv.cc \\\n"
        "$(TENSORFLOW_ROOT)tensorflow/lite/micro/kernels/pad.cc\n\n")
    kernels = root / "tensorflow/lite/micro/kernels"
    (kernels / "cmsis_nn").mkdir(parents=True)
    for p in (kernels / "conv.cc", kernels / "pad.cc", kernels / "cmsis_nn/conv.cc",
              root / "tensorflow/lite/micro/micro_interpreter.cc", root / "tensorflow/lite/micro/listed_check.cc",
              root / "tensorflow/lite/micro/micro_utils_test.cc", root / "tensorflow/lite/kernels/kernel_util.cc",
              root / "tensorflow/lite/array.cc", root / "tensorflow/lite/experimental/x.cc"):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    return root


def test_tflm_sources_specialize_kernels_with_cmsis_nn(tmp_path):
    tflm = _fake_tflm(tmp_path / "tflm")
    cmsis = tmp_path / "cmsis"
    (cmsis / "Source/ConvolutionFunctions").mkdir(parents=True)
    for n in ("arm_convolve_s8.c", "arm_convolve_f32.c", "arm_nntables_flt.c"):
        (cmsis / "Source/ConvolutionFunctions" / n).write_text("")
    dirs = {"tflm": tflm, "cmsis_nn": cmsis}
    rel = lambda ps, base: [p.relative_to(base).as_posix() for p in ps]  # noqa: E731
    opt = tflm_cmsis.tflm_sources(dirs, "cmsis_nn")
    assert rel(opt["kernels"], tflm) == ["tensorflow/lite/micro/kernels/cmsis_nn/conv.cc",
                                         "tensorflow/lite/micro/kernels/pad.cc"]
    assert rel(opt["third_party"], cmsis) == ["Source/ConvolutionFunctions/arm_convolve_s8.c"]
    assert sorted(rel(opt["core"], tflm)) == ["tensorflow/lite/kernels/kernel_util.cc",
                                              "tensorflow/lite/micro/micro_interpreter.cc"]
    ref = tflm_cmsis.tflm_sources(dirs, "reference")
    assert rel(ref["kernels"], tflm) == ["tensorflow/lite/micro/kernels/conv.cc",
                                         "tensorflow/lite/micro/kernels/pad.cc"]
    assert ref["third_party"] == []


def _main(capsys, *argv):
    code = tflm_cmsis.main(list(argv))
    return code, capsys.readouterr().err.strip()


def test_misuse_is_one_line_and_exit_2(tmp_path, capsys):
    code, err = _main(capsys)
    assert code == 2 and err == "tflm_cmsis: --tflm DIR is required (the fetched tflm source tree)"
    code, err = _main(capsys, "--tflm", str(tmp_path))
    assert code == 2 and "--tflm" in err and "micro_interpreter.cc" in err and len(err.splitlines()) == 1
    code, err = _main(capsys, str(tmp_path / "none.tflite"))
    assert code == 2 and "none.tflite: no such model file" in err
    code, err = _main(capsys, "--tflm", str(ROOT))
    assert code == 2 and "no tensorflow/lite/micro/micro_interpreter.cc" in err


def test_sources_inside_the_repository_are_refused(tmp_path, monkeypatch):
    """Fetched code never lands in the repository: a source tree under it is misuse (the repository stood in for by
    tmp_path)."""
    monkeypatch.setattr(tflm_cmsis, "REPO", tmp_path)
    fake = _fake_tflm(tmp_path / "third_party" / "tflm")
    with pytest.raises(tflm_cmsis.Misuse, match="--tflm .*inside this repository"):
        tflm_cmsis._source_dirs(tflm_cmsis.parse_args(["--tflm", str(fake)]))


def test_node_instructions_only_for_subgraph_0_one_for_one():
    assert tflm_cmsis.node_instructions([(4, 10), (9, 2)], [4, 9]) == [400, 80]
    assert tflm_cmsis.node_instructions([(4, 10), (3, 1), (9, 2)], [4, 9]) is None  # a called subgraph's node
    assert tflm_cmsis.node_instructions([], [4]) is None


def test_select_kernels_keeps_helpers_and_the_ops_registrations(tmp_path):
    files = {"conv.cc": "TFLMRegistration Register_CONV_2D() {\n  return {};\n}\n",
             "conv_common.cc": "TfLiteStatus ConvPrepare() { return kTfLiteOk; }\n",
             "pad.cc": "TFLMRegistration Register_PAD() {\n}\nTFLMRegistration Register_PADV2() {\n}\n",
             "svdf.cc": "TFLMRegistration Register_SVDF() { return {}; }\n"}
    paths = []
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    names = lambda ps: [p.name for p in ps]  # noqa: E731
    assert names(tflm_cmsis.select_kernels(paths, ["CONV_2D"])) == ["conv.cc", "conv_common.cc"]
    assert names(tflm_cmsis.select_kernels(paths, ["PADV2", "SVDF"])) == ["conv_common.cc", "pad.cc", "svdf.cc"]
    assert tflm_cmsis.select_kernels(paths, None) == paths
    assert tflm_cmsis.object_name("kernels", tmp_path / "a" / "b.cc", tmp_path) == "kernels__a__b.cc.o"


def test_arena_fills_the_psram_the_model_leaves():
    for model_bytes in (2704, 300568, 5246304):
        arena = tflm_cmsis.arena_bytes(model_bytes)
        assert arena % 16 == 0 and model_bytes + arena <= tflm_cmsis.PSRAM_BYTES - 64 * 1024
        assert arena > tflm_cmsis.PSRAM_BYTES - model_bytes - 65 * 1024


def test_section_7_finds_a_measured_model_by_name_or_by_its_bytes(tmp_path, monkeypatch):
    """A zoo model rebuilt under another builder hash has another file name and the same bytes: section 7 still
    puts TFLM + CMSIS-NN's measured figure beside it."""
    import hashlib

    import c_runtime

    model = tmp_path / "kws_dw_m8_int8_0123.tflite"
    model.write_bytes(b"model bytes")
    digest = hashlib.sha256(b"model bytes").hexdigest()[:16]
    monkeypatch.setattr(c_runtime, "MCU_MEASURED", {"kws_dw_m8_int8_abcd.tflite": {"sha256": digest, "cmsis": 7},
                                                    "other.tflite": {"sha256": "0" * 16, "cmsis": 9}})
    assert c_runtime.mcu_measured(model)["cmsis"] == 7
    assert c_runtime.mcu_measured(tmp_path / "other.tflite")["cmsis"] == 9  # by name: the file need not exist
    model.write_bytes(b"other bytes")
    assert c_runtime.mcu_measured(model) == {}
