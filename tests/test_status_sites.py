"""EDGE_STATUS_SITES on the host: a Cortex-M firmware keeps a refusal's reason as its source line ("@137"); the host
(edge_sdk/device/status_sites.py, used by the serial link) puts the sentence back before the user sees it. The
firmware `edge flash` builds is the measured one (firmware_c/app/Makefile: the same STATUS_DEFS / ARM_LTO defaults
as firmware_c/Makefile's Cortex-M builds)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.device import status_sites
from edge_sdk.errors import DeviceError
from tests.conftest import needs_c_runtime

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"
NEEDS = "apt-get install qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi"
needs_qemu = pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                                reason=f"needs QEMU and Arm GCC: {NEEDS}")


def _line_of(path: Path, text: str) -> int:
    """The line of path holding the reason site whose literal is text (the test reads the source, not a table)."""
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if f'"{text}"' in line and re.search(r"\b(EDGE_FAIL|EDGE_EVAL_FAIL|EDGE_EVAL_BAD_INPUT|WHAT)\s*\(", line):
            return n
    raise AssertionError(f"no reason site {text!r} on one line of {path}")


def _refused_conv():
    """CONV_2D whose filter carries 2 scales for 3 output channels: every runtime refuses it at prepare."""
    from tests.oprunner import T, op_model

    return op_model("CONV_2D", [T((1, 4, 4, 2), "INT8", 0.5, 0),
                                T((3, 1, 1, 2), "INT8", [0.1, 0.2], [0, 0], data=np.ones((3, 1, 1, 2), np.int8)),
                                T((3,), "INT32", [0.05, 0.1, 0.1], [0, 0, 0], data=np.zeros(3, np.int32))],
                    [T((1, 4, 4, 3), "INT8", 0.5, 0)], options={"padding": "VALID"})


def test_decode_names_the_op_and_the_sentence_and_leaves_other_text_alone():
    conv = FW / "src" / "kernels" / "conv_2d.c"
    text = "CONV_2D: padding, strides, dilations or window do not fit the input"
    line = _line_of(conv, text)
    got = status_sites.decode(f"node 0 (code 3 v1): the node's tensors or options are inconsistent: @{line}")
    assert got == f"node 0 (CONV_2D code 3 v1): the node's tensors or options are inconsistent: {text}", got
    # a line with no site in the op's files is said so, not guessed
    assert "no reason site there in conv_2d.c" in status_sites.decode("node 0 (code 3 v1): @1")
    plain = "node 0 (CONV_2D code 3 v1): a text build's message, mail@example.com"
    assert status_sites.decode(plain) == plain
    # the command-line tool of firmware_c/tools is this decoder run on its own sources
    out = subprocess.run([sys.executable, str(FW / "tools" / "status_sites.py"), f"node 0 (code 3 v1): @{line}"],
                         capture_output=True, text=True, check=True, cwd="/").stdout
    assert out.strip() == status_sites.decode(f"node 0 (code 3 v1): @{line}")


@needs_c_runtime
def test_app_makefile_builds_the_runtime_as_the_measured_libraries():
    """edge flash's firmware: status sites and LTO by default, both opted out with the Makefile's own names."""

    def flags(*extra):
        out = subprocess.run(["make", "-s", "-n", "-C", str(FW / "app"), "BOARD=qemu-mps2-an386", "BUILD=/tmp/x-none",
                              "OBJ=/tmp/x-none/obj", "KERNELS=add.c", *extra, "/tmp/x-none/obj/src/edge.o"],
                             capture_output=True, text=True, check=True).stdout
        return out
    default = flags()
    assert "-DEDGE_STATUS_SITES" in default and "-flto" in default, default
    bare = flags("STATUS_DEFS=", "ARM_LTO=")
    assert "-DEDGE_STATUS_SITES" not in bare and "-flto" not in bare, bare


@needs_qemu
@pytest.mark.slow
def test_a_board_refusal_reaches_the_host_as_its_sentence(state, tmp_path, monkeypatch):
    """A model the host's arena measurement does not refuse (measure_arena replaced by a fixed size: what a host
    without its C runtime gets) is refused by the board's edge_init; the board's log says "@<line>" (its image holds
    no reason texts), `edge flash` says the sentence, with the op's name. One board boot, stopped by flash."""
    from edge_sdk.device import qemu_board as qb
    from edge_sdk.tools import flash as fl

    model = tmp_path / "refused.tflite"
    model.write_bytes(_refused_conv())
    monkeypatch.setattr(fl, "measure_arena", lambda data, budget=None, memory=None, dsp=False: 16384)
    with pytest.raises(DeviceError) as err:
        fl.flash(model, "qemu-mps2-an386", build_dir=tmp_path / "b")
    assert qb.list_boards() == []  # the failed check stopped the board
    want = "CONV_2D: padding, strides, dilations or window do not fit the input"
    message = str(err.value)
    assert "did not start the model" in message and "node 0 (CONV_2D code 3 v1)" in message, message
    assert want in message and not re.search(r"@\d", message), message
    # the sentence came from the host: the flashed image (status sites, LTO) does not hold it
    elf = (tmp_path / "b" / "fw.elf").read_bytes()
    assert want.encode() not in elf and b"CONV_2D" not in elf
