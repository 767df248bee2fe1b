"""`edge flash` / `edge board`: the firmware build, the fit check, QEMU boards and their state file, and the
commands built for the silicon flash methods."""

import io
import json
import os
import shutil
import struct
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.device import qemu_board as qb
from edge_sdk.tools import flash as fl
from edge_sdk.errors import ArenaTooSmallError, DeviceError, ModelError, UnsupportedOpError
from edge_sdk.targets.profiles import load_profile
from tests.conftest import needs_c_runtime, shared_model

NEEDS = "apt-get install qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi"
HAVE_ARM = bool(shutil.which("arm-none-eabi-gcc"))
HAVE_QEMU = bool(shutil.which("qemu-system-arm"))
needs_arm = pytest.mark.skipif(not HAVE_ARM, reason=f"needs the Arm GCC toolchain: {NEEDS}")
needs_qemu = pytest.mark.skipif(not (HAVE_ARM and HAVE_QEMU), reason=f"needs QEMU and Arm GCC: {NEEDS}")
PROFILES = Path(__file__).resolve().parent.parent / "device_profiles"


def _cli(*argv) -> tuple[int, str]:
    from edge_sdk.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def _tiny_model(tmp_path) -> Path:
    from tests.oprunner import T, op_model

    w = np.arange(-8, 8, dtype=np.int8).reshape(4, 4)
    m = op_model("FULLY_CONNECTED", [T((1, 4), scale=0.1, zero_point=0), T((4, 4), scale=0.05, zero_point=0, data=w),
                                     None], [T((1, 4), scale=0.2, zero_point=1)])
    p = tmp_path / "fc.tflite"
    p.write_bytes(m)
    return p


# ------------------------------------------------------------------------------------------------ QEMU
@needs_qemu
@pytest.mark.slow
def test_flash_qemu_json_list_and_stop(state, tmp_path):
    model = shared_model("tflite-micro/hello_world_int8.tflite")
    code, out = _cli("flash", str(model), "--target", "qemu-mps2-an386", "--json", "--build-dir", str(tmp_path / "b"))
    assert code == 0
    r = json.loads(out)
    for key in ("port", "elf", "text_bytes", "data_bytes", "bss_bytes", "arena_bytes"):
        assert key in r
    assert r["port"].startswith("socket://127.0.0.1:") and Path(r["elf"]).is_file()
    assert r["text_bytes"] > r["model_bytes"] == model.stat().st_size and r["arena_bytes"] > 0
    assert qb._alive(r["pid"])
    # the board answers with our model
    from edge_sdk.device.serial_link import SerialLink

    with SerialLink(r["port"], timeout=1.0) as link:
        link.expect_model(model.read_bytes())
    code, out = _cli("board", "list", "--json")
    assert code == 0 and [b["url"] for b in json.loads(out)] == [r["port"]]
    # a second flash of the same model gets a board of its own (a new port)
    code, out = _cli("flash", str(model), "--target", "qemu-mps2-an386", "--json", "--build-dir", str(tmp_path / "b"))
    r2 = json.loads(out)
    assert r2["port"] != r["port"] and len(qb.list_boards()) == 2
    code, out = _cli("board", "stop", r["port"])
    assert code == 0 and r["port"] in out
    assert not qb._alive(r["pid"]) and [b["url"] for b in qb.list_boards()] == [r2["port"]]
    code, _ = _cli("board", "stop", "--all")
    assert code == 0 and not qb._alive(r2["pid"]) and qb.list_boards() == []
    code, _ = _cli("board", "stop", r["port"])
    assert code == 4  # no such board: DeviceError


@needs_qemu
def test_state_file_drops_dead_boards(state):
    qb._write_state([{"url": "socket://127.0.0.1:1", "pid": 2 ** 22 + 12345, "pgid": None}])
    assert qb.list_boards() == []
    assert json.loads(qb.state_path().read_text()) == {"boards": []}
    with pytest.raises(DeviceError, match="no running board at socket://127.0.0.1:9"):
        qb.stop_board("socket://127.0.0.1:9")


# ------------------------------------------------------------------------------------------------ fit check
@needs_arm
@pytest.mark.slow
def test_fit_check_refuses_with_the_numbers(state, tmp_path):
    model = _tiny_model(tmp_path)
    base = PROFILES / "qemu-mps2-an386.toml"
    small_ram = tmp_path / "small-ram.toml"
    small_ram.write_text(f'extends = "{base}"\nram_arena_bytes = 64\n')  # below the runtime's own structs
    with pytest.raises(ArenaTooSmallError) as e:
        fl.flash(model, str(small_ram), build_dir=tmp_path / "b1")
    msg = str(e.value)
    assert "ram_arena_bytes=64" in msg and "the arena is" in msg and "text" in msg and "bss" in msg
    small_flash = tmp_path / "small-flash.toml"
    small_flash.write_text(f'extends = "{base}"\nflash_model_bytes = 100\n')
    with pytest.raises(ModelError, match=rf"the model is {model.stat().st_size} bytes, .*flash_model_bytes=100"):
        fl.flash(model, str(small_flash), build_dir=tmp_path / "b2")
    assert qb.list_boards() == []  # nothing was started
    code, _ = _cli("flash", str(model), "--target", str(small_flash), "--build-dir", str(tmp_path / "b2"))
    assert code == 3


def test_unsupported_op_named_before_building(tmp_path):
    from edge_sdk.model import read_model
    from tests.oprunner import T, op_model

    m = op_model("SKIP_GRAM", [T((1, 4), "FLOAT32")], [T((1, 4), "FLOAT32")])  # a string op: no C kernel
    with pytest.raises(UnsupportedOpError, match="SKIP_GRAM v1"):
        fl.kernel_files(read_model(m))
    # fully_connected.c dispatches hybrid models to the shared hybrid.c (LiteRT's hybrid kernels)
    assert fl.kernel_files(read_model(_tiny_model(tmp_path).read_bytes())) == ["fully_connected.c", "hybrid.c"]


@needs_c_runtime
@pytest.mark.parametrize("size", [0, 1, 31, 32, 33, 256 * 3 + 1])
def test_model_c_source_round_trips(tmp_path, size):
    """The generated array, compiled (the host's gcc, warnings as errors) and written back out, is the model's
    bytes: every byte value, a line's 32 bytes and one more or less, an empty model (a 1-byte array)."""
    import subprocess

    data = (bytes(range(256)) * 4)[:size]
    src = fl.model_c_source(data)
    assert "__attribute__((section(\".edge_model\"), aligned(16)))" in src and f"app_model_len = {len(data)}u" in src
    (tmp_path / "model_data.c").write_text(fl.model_c_source(data, section=None))
    (tmp_path / "main.c").write_text(
        "#include <stdint.h>\n#include <stdio.h>\n"
        "extern const uint8_t app_model[]; extern const uint32_t app_model_len;\n"
        "int main(void) { fwrite(app_model, 1, app_model_len, stdout); return (uintptr_t)app_model % 16 != 0; }\n")
    exe = tmp_path / "dump"
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(tmp_path / "model_data.c"),
                    str(tmp_path / "main.c")], check=True, capture_output=True)
    assert subprocess.run([str(exe)], check=True, capture_output=True).stdout == data


# ------------------------------------------------------------------------------------------------ silicon
def test_flash_commands_per_method(tmp_path):
    elf = str(tmp_path / "fw.elf")
    stem = elf[:-4]
    cmd = fl.flash_command(load_profile("stm32h743"), elf)
    assert cmd == ["openocd", "-f", "interface/stlink.cfg", "-f", "target/stm32h7x.cfg", "-c", "adapter speed 4000",
                   "-c", f"program {elf} verify reset exit"]
    assert fl.flash_command(load_profile("nrf52840-dk"), elf) == [
        "pyocd", "flash", "--target", "nrf52840", "--frequency", "4000000", elf]
    assert fl.flash_command(load_profile("rp2040-pico"), elf) == ["picotool", "load", "--verify", f"{stem}.uf2",
                                                                  "--execute"]
    assert fl.flash_command(load_profile("stm32f746-disco"), elf) == [
        "st-flash", "--reset", "write", f"{stem}.bin", "0x8000000"]
    esp = fl.flash_command(load_profile("esp32-s3"), elf, port="/dev/ttyUSB0")
    assert esp[0] in ("esptool", "esptool.py") and esp[1:] == [
        "--chip", "esp32s3", "--port", "/dev/ttyUSB0", "--baud", "921600", "--before", "default_reset", "--after",
        "hard_reset", "write_flash", "--flash_mode", "dio", "--flash_freq", "80m", "--flash_size", "8MB", "0x10000",
        f"{stem}.bin"]
    q = qb.qemu_command(load_profile("qemu-mps2-an386"), elf, 4321)
    assert q == ["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none", "-kernel", elf, "-icount",
                 "shift=0", "-serial", "tcp:127.0.0.1:4321,server=on,wait=on"]
    with pytest.raises(DeviceError, match="no board support"):
        fl.board_for(load_profile("esp32-s3"))
    with pytest.raises(DeviceError, match="edge deploy"):
        fl.flash("x.tflite", "raspberry-pi-4")


@needs_arm
def test_silicon_flash_names_the_missing_tool(state, tmp_path, monkeypatch):
    """Build for the STM32H743 (Cortex-M7), then the missing openocd is named with how to install it."""
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda t: None if t == "openocd" else real(t))
    with pytest.raises(DeviceError, match=r"openocd not found on PATH: install it \(apt-get install openocd\)"):
        fl.flash(_tiny_model(tmp_path), "stm32h743", build_dir=tmp_path / "h7")
    assert (tmp_path / "h7" / "fw.elf").is_file()  # the build completed before the flash step


def test_uf2_blocks():
    data = bytes(range(256)) + b"\xAA" * 10
    uf2 = fl.uf2_from_binary(data, 0x10000000)
    assert len(uf2) == 2 * 512
    for k in range(2):
        blk = uf2[512 * k:512 * (k + 1)]
        m0, m1, flags, addr, size, no, total, family = struct.unpack_from("<8I", blk)
        assert (m0, m1, flags, size, no, total, family) == (0x0A324655, 0x9E5D5157, 0x2000, 256, k, 2, 0xE48BFF56)
        assert addr == 0x10000000 + 256 * k and struct.unpack_from("<I", blk, 508)[0] == 0x0AB16F30
    assert uf2[32:32 + 256] == data[:256] and uf2[512 + 32:512 + 42] == b"\xAA" * 10


def test_no_stray_state_dir_default(monkeypatch):
    for var in ("EDGE_STATE_DIR", "EDGE_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    assert qb.state_path() == Path(os.path.expanduser("~")) / ".cache" / "edge-sdk" / "boards.json"


def test_kernel_files_cover_ops_sharing_a_file():
    """SUB lives in add.c (one implementation for both): a SUB-only model must pull add.c into the build."""
    from edge_sdk.tools.flash import kernel_files
    from edge_sdk.model.builder import GraphBuilder

    g = GraphBuilder()
    a = g.input("a", (1, 4), "INT8", scale=0.1, zero_point=0)
    b = g.input("b", (1, 4), "INT8", scale=0.1, zero_point=0)
    y = g.tensor("y", (1, 4), "INT8", scale=0.2, zero_point=0)
    g.op("SUB", [a, b], [y])
    g.output(y)
    assert [f.rsplit("/", 1)[-1] for f in kernel_files(g.build())] == ["add.c"]
