"""`edge export` (edge_sdk/tools/export.py): the C runtime + one model as a folder for the user's firmware.

The cmake export builds for the host (edge_example's outputs equal the Python interpreter's, bit for bit) and for
the QEMU board (its own toolchain file; the ELF runs under qemu-system-arm and prints the outputs' checksums,
equal to the host build's); the make export builds with arm-none-eabi-gcc (and runs too); the zephyr and
arduino folders hold their required files (their toolchains cannot be installed here). Bad input: one-line
errors and nothing written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import shared_model
from tests.oprunner import T, image_main_hash, op_model

from edge_sdk import Interpreter
from edge_sdk.errors import DeviceError, EdgeError, ModelError, UnsupportedOpError
from edge_sdk.tools.export import export

ROOT = Path(__file__).resolve().parent.parent
needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed (make system-deps)")
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None,
                               reason="arm-none-eabi-gcc / qemu-system-arm not installed (make system-deps)")


def _fc_int8() -> bytes:
    rng = np.random.default_rng(21)
    x = T((2, 12), "INT8", scale=0.05, zero_point=-3)
    w = T((5, 12), "INT8", scale=[0.01, 0.02, 0.015, 0.03, 0.005], zero_point=0,
          data=rng.integers(-127, 128, (5, 12)).astype(np.int8))
    b = T((5,), "INT32", scale=5e-4, zero_point=0, data=rng.integers(-900, 900, 5).astype(np.int32))
    y = T((2, 5), "INT8", scale=0.07, zero_point=4)
    return op_model("FULLY_CONNECTED", [x, w, b], [y], options=dict(fused_activation_function="RELU"), version=5)


def _add_f32() -> bytes:  # two inputs, float32
    return op_model("ADD", [T((3, 4), "FLOAT32"), T((3, 4), "FLOAT32")], [T((3, 4), "FLOAT32")])


def _model_file(tmp_path, data: bytes, name: str) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


# The compile cache (tests/conftest.py's ccache wrappers) keys a compile by its -I and source paths: CMake writes them
# absolute, so the same exported runtime built in every test's own tmp folder missed it every time. CCACHE_BASEDIR:
# the paths under the temp folder given relative to the build folder (../export/src/edge.c), the same in each test;
# CMake names each object and its -MT dependency target relative already, so nothing else changes.
def _cmake_build(src: Path, build: Path) -> None:
    env = {**os.environ, "CCACHE_BASEDIR": tempfile.gettempdir()}
    for cmd in (["cmake", "-S", str(src), "-B", str(build)], ["cmake", "--build", str(build), "-j2"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "warning:" not in proc.stdout + proc.stderr, proc.stdout[-3000:] + proc.stderr[-3000:]


def _lcg_bytes(n: int) -> bytes:
    """The example firmware's inputs: byte k is the top byte of the LCG's k+1-th step from seed 12345."""
    seed, out = 12345, bytearray(n)
    for k in range(n):
        seed = (seed * 1664525 + 1013904223) & 0xFFFFFFFF
        out[k] = seed >> 24
    return bytes(out)


def _interpreter_outputs(model: Path, raw: bytes) -> bytes:
    interp = Interpreter(model_path=str(model))
    interp.allocate_tensors()
    pos = 0
    for d in interp.get_input_details():
        n = int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
        interp.set_tensor(d["index"], np.frombuffer(raw[pos:pos + n], d["dtype"]).reshape(d["shape"]))
        pos += n
    assert pos == len(raw)
    interp.invoke()
    return b"".join(np.ascontiguousarray(interp.get_tensor(d["index"])).tobytes()
                    for d in interp.get_output_details())


def _host_example(model: Path, tmp_path: Path, raw: bytes) -> tuple[bytes, dict]:
    out = tmp_path / "export-host"
    r = export(model, "host-linux", "cmake", out)
    _cmake_build(out, tmp_path / "build-host")
    (tmp_path / "in.bin").write_bytes(raw)
    proc = subprocess.run([str(tmp_path / "build-host" / "edge_example"), str(tmp_path / "in.bin"),
                           str(tmp_path / "out.bin")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _reported_arena(proc.stderr) == (r.arena_bytes, r.arena_bytes)  # it ran in exactly its need
    return (tmp_path / "out.bin").read_bytes(), r.to_dict()


def _reported_arena(stderr: str) -> tuple[int, int]:
    """edge_example's "ok: ..., arena NEED of GIVEN bytes" line: (NEED, GIVEN)."""
    m = re.search(r"^ok: .*arena (\d+) of (\d+) bytes$", stderr, re.M)
    assert m, stderr
    return int(m.group(1)), int(m.group(2))


def _run_qemu(elf: Path, ok: bool = True) -> dict:
    """The example firmware's UART report (status, arena, required, hashes); ``ok``: it must have run."""
    proc = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none",
                           "-semihosting-config", "enable=on,target=native", "-icount", "shift=0",
                           "-serial", "stdio", "-kernel", str(elf)], capture_output=True, text=True, timeout=300)
    text = proc.stdout
    assert "done" in text and (proc.returncode == 0) == ok, (proc.returncode, text, proc.stderr)
    status = int(re.search(r"^status (\d+)", text, re.M).group(1))
    arena = re.search(r"^arena (\d+)", text, re.M)
    required = re.search(r"^required (\d+)", text, re.M)
    hashes = [int(h) for _, h in re.findall(r"^out (\d+) (\d+)", text, re.M)]
    return {"status": status, "arena": int(arena.group(1)) if arena else None,
            "required": int(required.group(1)) if required else None, "hashes": hashes}


def _output_hashes(outputs: bytes, result: dict) -> list[int]:
    out, pos = [], 0
    for o in result["outputs"]:
        out.append(image_main_hash(outputs[pos:pos + o["bytes"]]))
        pos += o["bytes"]
    return out


# ------------------------------------------------------------------------------------------------ host cmake
@pytest.mark.slow
@needs_cmake
@pytest.mark.parametrize("make_model", [_fc_int8, _add_f32], ids=["fc_int8", "add_f32_two_inputs"])
def test_cmake_host_example_equals_interpreter(tmp_path, make_model):
    model = _model_file(tmp_path, make_model(), "m.tflite")
    interp = Interpreter(model_path=str(model))
    n_in = sum(int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize for d in interp.get_input_details())
    rng = np.random.default_rng(5)
    if make_model is _add_f32:
        raw = rng.standard_normal(n_in // 4).astype(np.float32).tobytes()
    else:
        raw = rng.integers(0, 256, n_in, dtype=np.uint8).tobytes()
    got, r = _host_example(model, tmp_path, raw)
    assert got == _interpreter_outputs(model, raw)
    # the header's arena is the C runtime's need: edge_example ran with exactly that many bytes
    header = (tmp_path / "export-host" / "model" / "edge_model.h").read_text()
    assert f"#define EDGE_MODEL_ARENA_BYTES {r['arena_bytes']}u" in header and r["arena_source"] == "target"
    assert r["example"] == "files" and r["board"] is None
    # only this model's kernels, the type switches of its tensor types
    kernels = sorted(p.name for p in (tmp_path / "export-host" / "src" / "kernels").iterdir())
    # fully_connected.c brings the shared hybrid.c it dispatches hybrid models to
    assert kernels == r["kernels"] == (["fully_connected.c", "hybrid.c"] if make_model is _fc_int8 else ["add.c"])
    want_defs = ["-DEDGE_WITH_FLOAT32=0", "-DEDGE_WITH_INT16=0"] if make_model is _fc_int8 else ["-DEDGE_WITH_INT16=0"]
    assert r["type_defs"] == want_defs
    assert "EDGE_MODEL_INPUT0_SHAPE {" in header and ("EDGE_MODEL_INPUT1_BYTES 48u" in header) == (make_model is _add_f32)
    if make_model is _fc_int8:  # input of the wrong size: exit 2, nothing written
        _refuses_wrong_input_size(tmp_path)


def _refuses_wrong_input_size(tmp_path):
    (tmp_path / "short.bin").write_bytes(bytes(5))
    proc = subprocess.run([str(tmp_path / "build-host" / "edge_example"), str(tmp_path / "short.bin"),
                           str(tmp_path / "o.bin")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "5 bytes, the model's inputs take 24" in proc.stderr
    assert not (tmp_path / "o.bin").exists()


@pytest.mark.slow
@needs_cmake
@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None or shutil.which("qemu-aarch64") is None,
                    reason="needs gcc-aarch64-linux-gnu and qemu-user (make system-deps)")
@pytest.mark.parametrize("make_model", [_fc_int8, _add_f32], ids=["fc_int8", "add_f32"])
def test_cmake_raspberry_pi_cross_export(tmp_path, make_model):
    """A Linux cross target: the export's own toolchain file (aarch64-linux-gnu-gcc); the example run under
    qemu-aarch64 gives the interpreter's outputs bit for bit (float too: no FMA contraction)."""
    model = _model_file(tmp_path, make_model(), "m.tflite")
    out = tmp_path / "pi"
    r = export(model, "raspberry-pi-4", "cmake", out)
    assert "CMAKE_C_COMPILER aarch64-linux-gnu-gcc" in (out / "cmake" / "aarch64-linux-gnu.cmake").read_text()
    assert "-ffp-contract=off" in r.cflags
    _cmake_build(out, tmp_path / "build")
    rng = np.random.default_rng(8)
    n = sum(i["bytes"] for i in r.inputs)
    raw = (rng.standard_normal(n // 4).astype(np.float32).tobytes() if make_model is _add_f32
           else rng.integers(0, 256, n, dtype=np.uint8).tobytes())
    (tmp_path / "in.bin").write_bytes(raw)
    proc = subprocess.run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", str(tmp_path / "build" / "edge_example"),
                           str(tmp_path / "in.bin"), str(tmp_path / "out.bin")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.bin").read_bytes() == _interpreter_outputs(model, raw)
    # the arena: measured on these sources built by aarch64-linux-gnu-gcc with the export's flags, under qemu-aarch64
    assert r.arena_source == "target" and "aarch64-linux-gnu-gcc -O2 -mcpu=cortex-a72" in r.arena_build
    assert "qemu-aarch64" in r.arena_build and _reported_arena(proc.stderr) == (r.arena_bytes, r.arena_bytes)


# ------------------------------------------------------------------------------------------------ QEMU board
@pytest.mark.slow
@needs_cmake
@needs_arm
def test_cmake_qemu_board_matches_host(tmp_path):
    model = _model_file(tmp_path, _fc_int8(), "m.tflite")
    out = tmp_path / "export-qemu"
    r = export(model, "qemu-mps2-an386", "cmake", out)
    assert r.board == "qemu-mps2-an386" and r.example == "uart"
    assert (out / "cmake" / "arm-none-eabi.cmake").exists() and (out / "board" / "board.ld").exists()
    _cmake_build(out, tmp_path / "build-qemu")  # no arguments: the export picks its toolchain file
    elf = tmp_path / "build-qemu" / "edge_example.elf"
    head = subprocess.run(["arm-none-eabi-readelf", "-h", str(elf)], capture_output=True, text=True).stdout
    assert "ARM" in head
    board = _run_qemu(elf)
    # the header's arena is the target's exact need (the 32-bit Arm measure)
    assert board["status"] == 0 and r.arena_source == "target" and r.arena_bytes == board["arena"]
    raw = _lcg_bytes(sum(i["bytes"] for i in r.inputs))
    host, hr = _host_example(model, tmp_path, raw)
    assert board["hashes"] == _output_hashes(host, hr)


@pytest.mark.slow
@needs_arm
def test_make_export_builds_with_arm_gcc_and_runs(tmp_path):
    model = _model_file(tmp_path, _fc_int8(), "m.tflite")
    out = tmp_path / "export-make"
    r = export(model, "qemu-mps2-an386", "make", out)
    proc = subprocess.run(["make", "-C", str(out), "-j2"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "arm-none-eabi-gcc" in proc.stdout and "warning:" not in proc.stdout + proc.stderr
    assert (out / "build" / "libedge_model.a").exists()
    board = _run_qemu(out / "build" / "edge_example.elf")
    want = image_main_hash(_interpreter_outputs(model, _lcg_bytes(r.inputs[0]["bytes"])))
    assert board["status"] == 0 and board["hashes"] == [want]


@pytest.mark.slow
@needs_arm
def test_make_export_library_only_for_a_cpu_without_board(tmp_path):
    model = _model_file(tmp_path, _fc_int8(), "m.tflite")
    out = tmp_path / "export-m0"
    profile = tmp_path / "my-m0-board.toml"  # a user's own board: no board support in firmware_c/boards
    profile.write_text('extends = "cortex-m0plus"\nclock_hz = 48_000_000\nram_arena_bytes = 32_768\n'
                       'flash_model_bytes = 262_144\n[flash]\nmethod = "openocd"\n')
    r = export(model, profile, "make", out)
    assert r.board is None and r.example == "none" and (out / "example" / "edge_example.c").exists()
    proc = subprocess.run(["make", "-C", str(out), "-j2"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "-mcpu=cortex-m0plus" in proc.stdout
    syms = subprocess.run(["arm-none-eabi-nm", str(out / "build" / "libedge_model.a")], capture_output=True,
                          text=True).stdout
    assert " T edge_init" in syms and " D edge_model_data" in syms.replace(" R ", " D ")


# ------------------------------------------------------------------------------------------------ zephyr, arduino
def test_zephyr_module_files(tmp_path):
    model = _model_file(tmp_path, _fc_int8(), "m.tflite")
    out = tmp_path / "z"
    r = export(model, "qemu-mps2-an386", "zephyr", out)
    module = (out / "zephyr" / "module.yml").read_text()
    assert "cmake: ." in module and "kconfig: Kconfig" in module
    assert "config EDGE_MODEL" in (out / "Kconfig").read_text()
    cm = (out / "CMakeLists.txt").read_text()
    assert "if(CONFIG_EDGE_MODEL)" in cm and "zephyr_library()" in cm
    for src in re.findall(r"zephyr_library_sources\((\S+)\)", cm):
        assert (out / src).is_file(), src
    assert "zephyr_library_compile_definitions(EDGE_WITH_FLOAT32=0 EDGE_WITH_INT16=0)" in cm
    assert (out / "samples" / "edge_example" / "prj.conf").read_text().startswith("CONFIG_EDGE_MODEL=y")
    assert ".edge_model" not in (out / "model" / "edge_model_data.c").read_text()  # no board linker section
    assert not (out / "board").exists() and r.format == "zephyr"


def test_arduino_library_files(tmp_path):
    model = _model_file(tmp_path, _fc_int8(), "m.tflite")
    out = tmp_path / "a"
    export(model, "qemu-mps2-an386", "arduino", out)
    props = dict(line.split("=", 1) for line in (out / "library.properties").read_text().splitlines() if line)
    for key in ("name", "version", "author", "maintainer", "sentence", "paragraph", "category", "url",
                "architectures"):
        assert props.get(key), key
    src = out / "src"
    for f in ("EdgeModel.h", "edge.h", "edge_kernel.h", "edge_model.h", "edge_model_data.c", "edge.c",
              "edge_ops_generated.c", "kernels/fully_connected.c"):
        assert (src / f).is_file(), f
    assert (out / "examples" / "edge_example" / "edge_example.ino").is_file()
    # Arduino puts only src/ on the include path: every quoted include resolves there
    for c in src.rglob("*.[ch]"):
        for inc in re.findall(r'#include "([^"]+)"', c.read_text()):
            assert (c.parent / inc).exists() or (src / inc).exists(), (c, inc)  # the file's folder, then src/
    # the sources compile for a Cortex-M as they are (the Arduino core's compiler is a gcc like this one)
    if shutil.which("arm-none-eabi-gcc"):
        for c in [src / "edge.c", src / "edge_model_data.c", src / "kernels" / "fully_connected.c"]:
            proc = subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-std=gnu11", "-Os",
                                   f"-I{src}", "-c", str(c), "-o", str(tmp_path / "x.o")],
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr


# ------------------------------------------------------------------------------------------------ bad input
def _no_leftovers(parent: Path, keep: set[str]) -> None:
    assert {p.name for p in parent.iterdir()} == keep


def test_unknown_format_nonempty_dir_and_unsupported_op(tmp_path):
    model = _model_file(tmp_path, _fc_int8(), "m.tflite")
    with pytest.raises(EdgeError, match="unknown export format 'bazel'"):
        export(model, "host-linux", "bazel", tmp_path / "o")
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.c").write_text("int x;\n")
    with pytest.raises(EdgeError, match="exists and is not empty"):
        export(model, "host-linux", "cmake", full)
    assert [p.name for p in full.iterdir()] == ["mine.c"]
    # an op the C runtime has no kernel for: vela's Ethos-U command stream (every interpreter op has a C kernel)
    vela = _model_file(tmp_path, Path(shared_model("tflite-micro/person_detect_vela.tflite")).read_bytes(),
                       "d2s.tflite")
    with pytest.raises(UnsupportedOpError, match="ethos-u"):
        export(vela, "host-linux", "cmake", tmp_path / "o")
    with pytest.raises(DeviceError, match="android"):
        export(model, "android-nnapi", "cmake", tmp_path / "o")
    # a model the exported runtime's prepare refuses (the arena measure runs it): its one-line message, by node
    x, y = T((2, 12), "INT8", scale=0.05, zero_point=-3), T((2, 5), "INT8", scale=0.07, zero_point=4)
    w = T((5, 13), "INT8", scale=0.01, zero_point=0, data=np.ones((5, 13), np.int8))
    bad = _model_file(tmp_path, op_model("FULLY_CONNECTED", [x, w, T((5,), "INT32", scale=5e-4, zero_point=0,
                                                                     data=np.zeros(5, np.int32))], [y], version=5),
                      "bad.tflite")
    with pytest.raises(ModelError, match=r"refuses bad.tflite: node 0 \(FULLY_CONNECTED.*input size vs weights"):
        export(bad, "host-linux", "make", tmp_path / "o")
    _no_leftovers(tmp_path, {"m.tflite", "full", "d2s.tflite", "bad.tflite"})
    empty = tmp_path / "empty"
    empty.mkdir()
    export(model, "host-linux", "make", empty)  # an empty folder is fine
    assert (empty / "Makefile").exists() and json.loads((empty / "export.json").read_text())["format"] == "make"


def test_cli_export(tmp_path):
    model = _model_file(tmp_path, _fc_int8(), "m.tflite")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cli = [sys.executable, "-m", "edge_sdk.cli", "export", str(model), "--target", "host-linux"]
    proc = subprocess.run(cli + ["--format", "cmake", "-o", str(tmp_path / "o"), "--json"], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["format"] == "cmake" and "CMakeLists.txt" in r["files"] and (tmp_path / "o" / "CMakeLists.txt").exists()
    proc = subprocess.run(cli + ["--format", "bazel", "-o", str(tmp_path / "p")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 2 and "invalid choice: 'bazel'" in proc.stderr
    proc = subprocess.run(cli + ["--format", "make", "-o", str(tmp_path / "o")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "exists and is not empty" in proc.stderr
    assert not (tmp_path / "p").exists()


# ------------------------------------------------------------------------------------------------ a real model
@pytest.mark.slow
@needs_cmake
def test_cmake_host_export_least_ram_plan(tmp_path):
    """--memory inplace: the header's arena is the in-place plan's measured need (smaller here: an in-place PAD),
    the example initialises with EDGE_INIT_MEMORY_MIN, and its outputs still equal the interpreter's."""
    from tests.test_memory_min import _chain_model

    model = _model_file(tmp_path, _chain_model(shape=(1, 16, 16, 8)), "chain.tflite")  # the plan, not the
    # planner's temporary memory (16 bytes more per tensor with --memory inplace), dominates the need
    layer = export(model, "host-linux", "make", tmp_path / "layer")
    out = tmp_path / "inplace"
    r = export(model, "host-linux", "cmake", out, memory="inplace")
    assert r.memory == "inplace" and r.arena_bytes < layer.arena_bytes
    assert "#define EDGE_MODEL_INIT_FLAGS EDGE_INIT_MEMORY_MIN" in (out / "model" / "edge_model.h").read_text()
    _cmake_build(out, tmp_path / "build")
    raw = np.random.default_rng(3).integers(0, 256, r.inputs[0]["bytes"], dtype=np.uint8).tobytes()
    (tmp_path / "in.bin").write_bytes(raw)
    proc = subprocess.run([str(tmp_path / "build" / "edge_example"), str(tmp_path / "in.bin"),
                           str(tmp_path / "out.bin")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _reported_arena(proc.stderr) == (r.arena_bytes, r.arena_bytes)
    assert (tmp_path / "out.bin").read_bytes() == _interpreter_outputs(model, raw)


@pytest.mark.slow
@needs_cmake
@needs_arm
def test_mobilenet_v2_inplace_plan_on_the_qemu_board(tmp_path):
    """MobileNetV2 224x224 exported with --memory inplace runs on the QEMU board in its exact in-place arena and its
    output equals the Python interpreter's with the layer-by-layer plan, bit for bit."""
    model = shared_model("tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite")
    out = tmp_path / "export-qemu"
    r = export(model, "qemu-mps2-an386", "cmake", out, memory="inplace")
    layer = export(model, "qemu-mps2-an386", "zephyr", tmp_path / "z")  # the layer plan's exact arena
    # ~0.92x since both plans fold the model's 18 PADs into their convs (3fe6316; 0.62x before: most of what the
    # in-place plan saved was the PAD copies); test_memory_min holds the in-place plan to its floor
    assert r.arena_source == layer.arena_source == "target" and r.arena_bytes < 0.95 * layer.arena_bytes
    _cmake_build(out, tmp_path / "build-qemu")
    board = _run_qemu(tmp_path / "build-qemu" / "edge_example.elf")
    assert board["status"] == 0 and r.arena_bytes == board["arena"]
    want = _interpreter_outputs(model, _lcg_bytes(r.inputs[0]["bytes"]))  # Interpreter: the layer plan
    assert board["hashes"] == [image_main_hash(want)]


# ------------------------------------------------------------------------------------------------ the exact arena
# EDGE_MODEL_ARENA_BYTES is the exported sources' own need: the example built from them reports exactly that high
# water (edge_arena_used / edge_arena_high_water after invoking) and one 16-byte step less is refused, for every
# plan, on the host (the portable kernels the export builds, not the host library's SIMD build) and on the board
# (where it is also `edge check`'s figure).
EXACT_PLANS = ["layer", "inplace", "min"]  # --memory; built: layer, layer or inplace, patch
BUILT = {"layer": ("layer",), "inplace": ("layer", "inplace"), "min": ("patch",)}
EXACT_MODELS = ["person_detect", "dw_chain"]


def _dw_chain() -> bytes:
    """Built with our writer: an int8 depthwise convolution whose 64 int32 sums are scratch at the layer plan's peak
    on a core without the DSP extension and none on the Cortex-M4 (its DSP path keeps them in registers: the board
    needs 256 B less than a plain 32-bit build); it has a patch stage."""
    from tests.test_patching import chain_model

    return chain_model([("conv", 3, 1, 1, "SAME", 64), ("dw", 3, 1, 1, "SAME"), ("conv", 1, 1, 1, "SAME", 8)],
                       shape=(1, 12, 12, 3), seed=2)


def _exact_model(tmp_path, which: str) -> Path:
    if which == "person_detect":
        return Path(shared_model("tflite-micro/person_detect.tflite"))
    return _model_file(tmp_path, _dw_chain(), "dw_chain.tflite")


def _header_plan_checks(r, header: str, plan: str, data: bytes) -> None:
    """The header's flags and patch stage are the plan's (edge_init_patch's stage: the one edge check and edge
    flash run)."""
    from edge_sdk.runtime.planner import c_patch_stage

    assert r.memory in BUILT[plan] and r.memory_request == plan
    assert f"#define EDGE_MODEL_ARENA_BYTES {r.arena_bytes}u" in header
    assert f"#define EDGE_MODEL_INIT_FLAGS {'0u' if plan == 'layer' else 'EDGE_INIT_MEMORY_MIN'}" in header
    assert "UPPER BOUND" not in header and "ESTIMATE" not in header
    # no warning but the plan's own (inplace on person_detect: nothing runs in place, said so)
    assert all(w.startswith(f"--memory {plan}: ") for w in r.warnings) and (r.memory == BUILT[plan][-1]) == (not r.warnings)
    stage = c_patch_stage(data) if plan == "min" else None
    numbers = (stage.nodes[0], stage.nodes[-1], *stage.grid) if stage else (0, 0, 0, 0)
    assert f"#define EDGE_MODEL_PATCH_PLAN {{{', '.join(map(str, numbers))}}}" in header
    assert (r.patch is None) == (stage is None)


@pytest.mark.slow
@needs_cmake
@pytest.mark.parametrize("plan", EXACT_PLANS)
@pytest.mark.parametrize("which", EXACT_MODELS)
def test_host_export_arena_is_the_examples_exact_need(tmp_path, which, plan):
    model = _exact_model(tmp_path, which)
    out = tmp_path / "export"
    r = export(model, "host-linux", "cmake", out, memory=plan)
    # measured on these sources built as the export builds them (gcc, the profile's flags), not the host library
    assert r.arena_source == "target" and r.arena_build.startswith("built by gcc -O2 -ffp-contract=off")
    header = (out / "model" / "edge_model.h").read_text()
    _header_plan_checks(r, header, plan, model.read_bytes())
    assert "EDGE_MODEL_PATCH_PLAN" in (out / "example" / "main.c").read_text()
    if plan == "min":  # patch-based execution needs less than the in-place plan alone
        assert r.arena_bytes < export(model, "host-linux", "zephyr", tmp_path / "inplace",
                                      memory="inplace").arena_bytes
    _cmake_build(out, tmp_path / "build")
    raw = np.random.default_rng(5).integers(0, 256, r.inputs[0]["bytes"], dtype=np.uint8).tobytes()
    (tmp_path / "in.bin").write_bytes(raw)
    exe = [str(tmp_path / "build" / "edge_example"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")]
    proc = subprocess.run(exe, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _reported_arena(proc.stderr) == (r.arena_bytes, r.arena_bytes)  # its high water, its arena: the header's
    assert (tmp_path / "out.bin").read_bytes() == _interpreter_outputs(model, raw)  # every plan: the layer plan's
    (tmp_path / "out.bin").unlink()
    for fewer in (r.arena_bytes - 16, r.arena_bytes - 1):  # one 16-byte step less, one byte less: refused cleanly
        proc = subprocess.run(exe + [str(fewer)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
        assert "arena too small" in proc.stderr and f"needs {r.arena_bytes} bytes, given {fewer}" in proc.stderr
        assert not (tmp_path / "out.bin").exists()
    proc = subprocess.run(exe + [str(r.arena_bytes + 1)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "up to" in proc.stderr  # more than the example's array: argument misuse


@pytest.mark.slow
@needs_cmake
@needs_arm
@pytest.mark.parametrize("plan", EXACT_PLANS)
@pytest.mark.parametrize("which", EXACT_MODELS)
def test_qemu_board_export_arena_is_the_boards_exact_need_and_edge_checks(tmp_path, which, plan):
    """On the QEMU board (Cortex-M4): edge_model.h's arena is `edge check --memory PLAN`'s figure, the ELF runs in
    it (its high water == that figure), its outputs equal the interpreter's, and 16 bytes less are refused."""
    from edge_sdk.runtime.c_status import STATUS
    from edge_sdk.targets.check import check_model

    model = _exact_model(tmp_path, which)
    check = check_model(model.read_bytes(), "qemu-mps2-an386", memory=plan, stack=False)
    out = tmp_path / "export-qemu"
    r = export(model, "qemu-mps2-an386", "cmake", out, memory=plan)
    assert r.arena_source == "target" and "-DEDGE_EMULATE_DSP" in r.arena_build  # the M4's DSP paths
    assert check.memory_plan == r.memory and r.arena_bytes == check.arena_bytes
    _header_plan_checks(r, (out / "model" / "edge_model.h").read_text(), plan, model.read_bytes())
    build = tmp_path / "build-qemu"
    _cmake_build(out, build)
    board = _run_qemu(build / "edge_example.elf")
    assert board["status"] == 0 and board["arena"] == r.arena_bytes
    want = _interpreter_outputs(model, _lcg_bytes(r.inputs[0]["bytes"]))
    assert board["hashes"] == [image_main_hash(want)]
    # the example's arena one 16-byte step smaller (-DEDGE_EXAMPLE_ARENA_BYTES): edge_init refuses it, naming the need
    proc = subprocess.run(["cmake", "-S", str(out), "-B", str(build),
                           f"-DEDGE_EXAMPLE_ARENA_BYTES={r.arena_bytes - 16}"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "warning:" not in proc.stdout + proc.stderr, proc.stdout[-2000:]
    small = _run_qemu(build / "edge_example.elf", ok=False)
    assert small["status"] == STATUS["EDGE_ARENA_TOO_SMALL"] and small["required"] == r.arena_bytes
    assert small["arena"] is None and small["hashes"] == []


# ------------------------------------------------------------------------------------------------ --memory min
def _patch_chain(tmp_path) -> tuple[Path, object]:
    from tests.test_patching import _c_chain, chain_model

    from edge_sdk.runtime.planner import c_patch_stage

    data = chain_model(_c_chain("same_s1_s2"), shape=(1, 40, 40, 3), seed=4)
    plan = c_patch_stage(data)
    assert plan is not None
    return _model_file(tmp_path, data, "patch_chain.tflite"), plan


def test_export_min_without_a_stage_or_inplace_node(tmp_path):
    """A model with nothing spatial has no patch stage (and nothing in place): --memory min exports the in-place
    plan, here the layer placement, and says so."""
    model = _model_file(tmp_path, _fc_int8(), "fc.tflite")
    r = export(model, "host-linux", "zephyr", tmp_path / "z", memory="min")
    assert r.memory == "layer" and r.patch is None
    assert any("no patch stage" in w for w in r.warnings) and any("no node runs in place" in w for w in r.warnings)
    assert "#define EDGE_MODEL_PATCH_PLAN {0, 0, 0, 0}" in (tmp_path / "z" / "model" / "edge_model.h").read_text()


def test_cli_export_memory_min(tmp_path):
    model, plan = _patch_chain(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "export", str(model), "--target", "host-linux",
                           "--format", "zephyr", "-o", str(tmp_path / "z"), "--memory", "min", "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["memory"] == "patch" and r["patch"]["grid"] == list(plan.grid) and r["patch"]["extra_macs"] > 0
    proc = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "export", str(model), "--target", "host-linux",
                           "--format", "zephyr", "-o", str(tmp_path / "z2"), "--memory", "min"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and "least-RAM patch-based plan" in proc.stdout
    assert f"patch stage: nodes {plan.nodes[0]}..{plan.nodes[-1]}, grid {plan.grid[0]}x{plan.grid[1]}" in proc.stdout


def test_arena_source_is_honest_without_the_target_tools(tmp_path, monkeypatch):
    """Without the tools to build and run the target's own build, the header says which figure it carries and why:
    a 32-bit board measured on this 64-bit machine is an UPPER BOUND (bigger pointers), no C compiler at all an
    ESTIMATE; both are warnings in the JSON too. With the tools: the exact figure, no warning."""
    model = _model_file(tmp_path, _fc_int8(), "m.tflite")
    exact = export(model, "qemu-mps2-an386", "zephyr", tmp_path / "exact")
    real_which = shutil.which
    hidden: set[str] = set()
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if Path(name).name in hidden
                        else real_which(name, *a, **k))
    results = {}
    for what, names in (("no-cross", {"arm-linux-gnueabihf-gcc", "qemu-arm"}),
                        ("no-compiler", {"arm-linux-gnueabihf-gcc", "qemu-arm", "gcc", "cc", "clang"})):
        hidden.clear()
        hidden.update(names)
        r = results[what] = export(model, "qemu-mps2-an386", "zephyr", tmp_path / what)
        header = (tmp_path / what / "model" / "edge_model.h").read_text().replace("\n * ", " ")  # one line
        word = {"no-cross": "UPPER BOUND", "no-compiler": "ESTIMATE"}[what]
        assert word in header and any(word in w for w in r.warnings), (header, r.warnings)
        assert word in (tmp_path / what / "README.md").read_text().replace("\n", " ")
    assert exact.arena_source == "target" and not exact.warnings
    assert results["no-cross"].arena_source == "host-upper-bound" and "install gcc-arm-linux-gnueabihf" in \
        (tmp_path / "no-cross" / "model" / "edge_model.h").read_text().replace("\n * ", " ")
    assert results["no-cross"].arena_bytes > exact.arena_bytes  # 8-byte pointers: more persistent bytes
    assert results["no-compiler"].arena_source == "estimate" and results["no-compiler"].arena_bytes > exact.arena_bytes
