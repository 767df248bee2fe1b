"""Legacy UINT8 models (TFLite v1 "quantized_uint8") on every path that hands a model to the C runtime: edge check
(host and MCU targets), edge flash + edge profile on the QEMU board, edge export, the device's runtime choice
(edge deploy ships the model to a device whose edge_sdk runs it), and edge convert's one line. Each path hands the
C runtime the model as edge_sdk/runtime/uint8.py presents it (INT8, zero points - 128) and flips the presented
inputs / outputs at its boundary; the C runtime itself refuses a raw UINT8 model naming the node.

The model: tests/test_ops_uint8.py's SSD-like detector (conv / depthwise / concat with requantized parts / reshape /
logistic -> TFLite_Detection_PostProcess) with its UINT8 class probabilities an output too: a UINT8 input and a
UINT8 output, and presented nodes (inserted QUANTIZEs) the model file does not have. One QEMU board boot.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.cli import main
from edge_sdk.model import read_model
from edge_sdk.runtime import c_loaded, uint8
from tests.conftest import needs_c_runtime
from tests.oprunner import peer_outputs
from tests.test_ops_uint8 import CASES, _ssd_model

DETECTOR = _ssd_model(np.random.default_rng(1212), probs_output=True)
IMAGE = np.random.default_rng(23).integers(0, 256, (1, 8, 8, 3)).astype(np.uint8)
PRESENTED_NODES = 18  # 15 in the file + a QUANTIZE before each concatenated part at another scale

needs_board = pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                                 reason="needs qemu-system-arm and arm-none-eabi-gcc (make system-deps)")
needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed (make system-deps)")


@pytest.fixture(scope="module")
def detector(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("uint8") / "ssd_uint8.tflite"
    path.write_bytes(DETECTOR)
    return path


def _same_as_litert(got: list[np.ndarray], want: list[np.ndarray], board: bool = False) -> None:
    """The detector's outputs equal LiteRT's reference kernels': the detections (LiteRT leaves the slots past
    num_detections unwritten) and the UINT8 probabilities, bit for bit; on a ``board`` the float boxes within the
    float tolerance `edge profile` validates with (a Cortex-M4 decodes boxes in single precision: its FPU has no
    double), classes and scores still bit for bit."""
    from edge_sdk.tools.profile import float_tolerance

    count = int(want[3][0])
    assert int(got[3][0]) == count and count > 0
    boxes_got, boxes_want = got[0][:, :count], want[0][:, :count]
    if board:
        np.testing.assert_allclose(boxes_got, boxes_want, rtol=0, atol=float_tolerance(boxes_want))
    else:
        np.testing.assert_array_equal(boxes_got, boxes_want)
    for g, w in zip(got[1:3], want[1:3]):
        np.testing.assert_array_equal(g[:, :count], w[:, :count])
    assert got[4].dtype == want[4].dtype == np.uint8
    np.testing.assert_array_equal(got[4], want[4])


def test_presented_model_is_no_bigger_and_says_what_flips():
    """The bytes the C runtime loads: no UINT8 quantized tensor left, the constants flipped in place (the model's
    own weights bytes, not a second copy beside them), and the I/O a user's code flips."""
    data, pairs = c_loaded.c_bytes(DETECTOR)
    presented = read_model(data)
    assert pairs and not uint8.presented_tensors(presented)
    assert not any(t.type == "UINT8" for t in presented.subgraphs[0].tensors)
    assert len(presented.subgraphs[0].operators) == PRESENTED_NODES
    weights = sum(len(b.data) for b in read_model(DETECTOR).buffers)
    assert sum(len(b.data) for b in presented.buffers) == weights
    model = read_model(DETECTOR)
    assert uint8.c_io(model, pairs) == ((0,), (4,))
    note = uint8.c_io_note(model, pairs)
    assert "input 0 'image'" in note and "output 4 'probs'" in note and "uint8 ^ 0x80" in note
    assert c_loaded.c_bytes(CASES["QUANTIZE float->uint8"][0])[1]  # a float input, a UINT8 output
    assert c_loaded.c_bytes(c_loaded.c_bytes(CASES["ADD"][0])[0])[1] == frozenset()  # presenting twice changes nothing


@needs_c_runtime
def test_the_c_runtime_refuses_a_raw_uint8_model_naming_the_node(monkeypatch):
    """Handed the model's own bytes (no presentation), the C runtime refuses in one line naming the node and its
    status, without crashing; presented, it runs it (the device's runtime choice: edge deploy's `_CHOOSE`)."""
    from edge_sdk.errors import UnsupportedOpError
    from edge_sdk.runtime.c_interpreter import CInterpreter
    from edge_sdk.tools.run_backend import choose_runtime

    assert choose_runtime(DETECTOR, "c").name == "c"
    monkeypatch.setattr(c_loaded, "c_model", lambda model, data: (model, data, frozenset()))
    interp = CInterpreter(model_content=DETECTOR)
    with pytest.raises(UnsupportedOpError) as err:
        interp.allocate_tensors()
    text = str(err.value)
    assert "\n" not in text and "node 0 (CONV_2D" in text and "[EDGE_UNSUPPORTED_TYPE]" in text, text


def test_edge_check_on_host_and_mcu_targets(detector, capsys):
    """`edge check` judges the presented model: on host-linux the interpreter's nodes and the partitions agree
    (the inserted QUANTIZE nodes made it an IndexError), on stm32f746-disco the C runtime's 32-bit runner
    measures it and a note says which I/O is int8 = uint8 ^ 0x80."""
    assert main(["check", str(detector), "--target", "host-linux", "--json"]) == 0
    host = json.loads(capsys.readouterr().out)
    assert host["verdict"] == "runs" and sum(len(p["nodes"]) for p in host["partitions"]) == PRESENTED_NODES
    assert not any("uint8 ^ 0x80" in n for n in host["notes"])  # the interpreter takes the model's own uint8
    assert main(["check", str(detector), "--target", "stm32f746-disco", "--json"]) == 0
    mcu = json.loads(capsys.readouterr().out)
    assert mcu["verdict"] == "runs" and mcu["checked_by"] == "c-runtime", mcu["problems"]
    assert mcu["model_bytes"] == len(c_loaded.c_bytes(DETECTOR)[0]) and mcu["arena_size"] > 0
    assert any("input 0 'image'" in n and "output 4 'probs'" in n and "uint8 ^ 0x80" in n for n in mcu["notes"])


def test_edge_convert_says_in_one_line_that_the_model_is_already_quantized(detector, tmp_path, capsys):
    out = tmp_path / "again.tflite"
    assert main(["convert", str(detector), "-o", str(out), "--quantize", "int8"]) == 3
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "already quantized" in lines[0] and "legacy UINT8" in lines[0], lines
    assert "calibration" not in lines[0] and not out.exists()


@pytest.mark.slow
@needs_board
def test_flashed_and_profiled_on_the_qemu_board_as_litert(state, detector, tmp_path, capsys):
    """edge flash embeds the presented model (its arena the presented model's: edge check's figure for the board),
    edge profile flips the UINT8 input and output at the link and validates the board's outputs against the host
    interpreter, and the board's outputs read back over the link are LiteRT's reference kernels' (classes, scores and
    probabilities bit for bit, boxes within the float tolerance); then
    `edge check --link` links the same firmware."""
    from edge_sdk.device.serial_link import SerialLink
    from edge_sdk.targets.check import target_arena
    from edge_sdk.tools.flash import flash, format_flash
    from edge_sdk.tools.profile import format_profile, profile_model

    fw = flash(detector, "qemu-mps2-an386", build_dir=tmp_path / "fw")
    assert "output 4 'probs'" in fw.uint8_io and fw.uint8_io in format_flash(fw) and fw.to_dict()["uint8_io"]
    embedded = read_model(Path(fw.embedded_model).read_bytes())
    assert len(embedded.subgraphs[0].operators) == PRESENTED_NODES and not uint8.presented_tensors(embedded)
    np.save(tmp_path / "image.npy", IMAGE)
    r = profile_model(detector, "qemu-mps2-an386", port=fw.port, runs=1, inputs=tmp_path / "image.npy")
    assert r["validated"] and r["mismatches"] == [], r["mismatches"]
    assert r["outputs"][4]["type"] == "UINT8" and len(r["ops"]) == PRESENTED_NODES
    assert r["uint8_io"] == fw.uint8_io and "flips them at the link" in format_profile(r)
    assert r["arena_size"] == target_arena(detector, "qemu-mps2-an386").arena_size
    link = SerialLink(fw.port)
    try:
        link.hello()
        info = link.info()
        assert info.inputs[0].type == "INT8" and info.outputs[4].type == "INT8"  # the board holds int8
        link.set_input(0, uint8.to_int8(IMAGE))
        link.invoke(1)
        board = [link.get_output(k) for k in range(5)]
    finally:
        link.close()
    board[4] = uint8.to_uint8(board[4])
    _same_as_litert(board, peer_outputs(DETECTOR, [IMAGE], "litert", isolate=True), board=True)
    # `edge check --link` links that firmware (the runtime's objects flash built): the presented model linked
    capsys.readouterr()
    assert main(["check", str(detector), "--target", "qemu-mps2-an386", "--link", "--json"]) == 0
    linked = json.loads(capsys.readouterr().out)
    assert linked["link"]["linked"] and linked["flash_source"] == "linked", linked["link"]
    embedded_bytes = len(Path(fw.embedded_model).read_bytes())
    assert linked["link"]["runtime_flash_bytes"] == linked["link"]["flash_bytes"] - embedded_bytes


@pytest.mark.slow
@needs_cmake
def test_export_says_the_flip_and_its_example_runs_litert_bit_for_bit(tmp_path):
    """edge export of a UINT8 model: edge_model.h names each flipped I/O (*_FROM_UINT8, the model's zero point)
    and defines edge_model_flip_uint8; export.json says the model's type beside the runtime's; the cmake folder
    builds warning-free and its example, fed the flipped inputs, gives LiteRT's outputs once flipped back."""
    from edge_sdk.tools.export import export
    from tests.test_export import _cmake_build

    model, inputs = CASES["ADD"]
    path = tmp_path / "add_uint8.tflite"
    path.write_bytes(model)
    out = tmp_path / "export"
    r = export(path, "host-linux", "cmake", out)
    assert "uint8 ^ 0x80" in r.uint8_io
    header = (out / "model" / "edge_model.h").read_text()
    for k in ("INPUT0", "INPUT1", "OUTPUT0"):
        assert f"#define EDGE_MODEL_{k}_TYPE EDGE_INT8" in header and f"#define EDGE_MODEL_{k}_FROM_UINT8 1" in header
    assert "the model's UINT8 (zero point 120)" in header and "edge_model_flip_uint8(void *data" in header
    saved = json.loads((out / "export.json").read_text())
    assert saved["inputs"][0]["type"] == "INT8" and saved["inputs"][0]["model_type"] == "UINT8"
    assert saved["inputs"][0]["model_zero_point"] == [120] and saved["inputs"][0]["zero_point"] == [-8]
    assert "edge_model_flip_uint8" in (out / "README.md").read_text()
    build = tmp_path / "build"
    _cmake_build(out, build)  # warning-free, through the compile cache
    (tmp_path / "in.bin").write_bytes(b"".join(uint8.to_int8(x).tobytes() for x in inputs))
    proc = subprocess.run([str(build / "edge_example"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = uint8.to_uint8(np.frombuffer((tmp_path / "out.bin").read_bytes(), np.int8)).reshape(2, 3, 4)
    np.testing.assert_array_equal(got, peer_outputs(model, inputs, "litert")[0])
    # the header's helper flips in C as the example's input above was flipped in Python
    probe = tmp_path / "flip.c"
    probe.write_text('#include <stdio.h>\n#include "edge_model.h"\nint main(void) {\n'
                     '    uint8_t b[3] = {0, 128, 255};\n    edge_model_flip_uint8(b, 3);\n'
                     '    printf("%d %d %d\\n", (int8_t)b[0], (int8_t)b[1], (int8_t)b[2]);\n    return 0;\n}\n')
    exe = tmp_path / "flip"
    proc = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", f"-I{out / 'model'}", str(probe),
                           "-o", str(exe)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run([str(exe)], capture_output=True, text=True).stdout.split() == ["-128", "0", "127"]
