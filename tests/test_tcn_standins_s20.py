"""Issue 25, session 20: the "streaming temporal conv" stand-ins of benchmarks/mcu_standins.py (hey_jarvis's kind:
Kx1 depthwise, 1x1 / strided Kx1 convs, resource-variable ring buffers read, concatenated, sliced and assigned
every invoke, FC + LOGISTIC) run bit-exact in TFLM's Python interpreter (the integer reference), our Python
interpreter and our C runtime over a stream of invokes (the ring buffers carried from invoke to invoke), and on the
QEMU Cortex-M4 board (the DSP paths: depthwise column filters, block copies of the ring buffers from unaligned
slices) as on the host."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.test_ops_stateful import check_stream

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import mcu_standins  # noqa: E402

NAMES = mcu_standins.TCN_STANDINS
INVOKES = 6


def _model(name: str) -> bytes:
    return mcu_standins.cached(name, mcu_standins._tcn_build, lambda: mcu_standins._tcn_build(name)).read_bytes()


def _stream_inputs(model: bytes, seed: int) -> list[np.ndarray]:
    from edge_sdk.model import read_model

    m = read_model(model)
    sg = m.subgraphs[0]
    shape = sg.tensors[sg.inputs[0]].shape
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, shape).astype(np.int8) for _ in range(INVOKES)]


def test_the_family_is_registered_with_several_sizes_of_each_form():
    from edge_sdk.model import read_model

    paths = mcu_standins.FAMILIES["streaming temporal conv"]()
    assert len(paths) == len(NAMES) >= 4
    kinds = []
    for p in paths:
        m = read_model(p.read_bytes())
        ops = {m.op_name(op) for op in m.subgraphs[0].operators}
        assert {"DEPTHWISE_CONV_2D", "CONV_2D", "FULLY_CONNECTED", "LOGISTIC"} <= ops
        kinds.append("READ_VARIABLE" in ops and "ASSIGN_VARIABLE" in ops and "CALL_ONCE" in ops)
    assert kinds.count(True) >= 3 and kinds.count(False) >= 1  # streaming sizes and a windowed one


@pytest.mark.parametrize("name", NAMES)
def test_standin_stream_bit_exact_with_tflm(runtime, name):
    """Several invokes, the state carried: each output equals TFLM's, and the C runtime's the Python one's."""
    model = _model(name)
    xs = _stream_inputs(model, seed=NAMES.index(name))
    outs = check_stream(runtime, model, xs)
    assert len({int(np.asarray(o).ravel()[0]) for o in outs}) > 1, f"{name}: one output for every input"


def test_streaming_standins_carry_their_state():
    """The ring buffers matter: a model fed the same last input after different histories answers differently on at
    least one streaming stand-in (were the state ignored, the answers would be equal)."""
    from tests.test_ops_stateful import run_ours

    differs = []
    for name in NAMES[:3]:
        model = _model(name)
        xs = _stream_inputs(model, seed=7)
        ys = _stream_inputs(model, seed=8)
        a = run_ours(model, xs)[-1]
        b = run_ours(model, ys[:-1] + [xs[-1]])[-1]
        differs.append(not np.array_equal(a, b))
    assert any(differs)


@needs_c_runtime
@pytest.mark.parametrize("name", NAMES)
def test_standin_dsp_paths_emulated_equal_the_portable_ones(backend, dsp_runner, name, tmp_path):
    """One invoke through edge-run-c built with the DSP paths emulated in C (the lone-pixel GEMV, the column
    depthwise, their channel and k % 4 tails) equals the portable C runtime and the Python interpreter."""
    from tests.oprunner import run_ours
    from tests.test_ops_conv import _run_c, _run_exe

    model = _model(name)
    feeds = _stream_inputs(model, seed=11)[:1]
    plain = _run_c(backend, model, feeds)[0]
    np.testing.assert_array_equal(plain, run_ours(model, feeds)[0])
    np.testing.assert_array_equal(_run_exe(dsp_runner, model, feeds, plain, tmp_path), plain)


def _host_hash_after_two_invokes(model: bytes, backend: str) -> int:
    """The host's output hash after the image's two invokes (the second reported; the state of the first carried)."""
    from edge_sdk import Interpreter
    from tests.oprunner import image_main_hash, image_main_rounds

    interp = Interpreter(model_content=model, backend=backend)
    interp.allocate_tensors()
    for feeds in image_main_rounds(interp):
        for d, x in zip(interp.get_input_details(), feeds):
            interp.set_tensor(d["index"], x)
        interp.invoke()
    return image_main_hash(np.ascontiguousarray(interp.get_tensor(interp.get_output_details()[0]["index"])).tobytes())


@pytest.mark.slow
@needs_c_runtime
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
@pytest.mark.parametrize("init_flags", [0, 2])
def test_standins_on_the_m4_board_give_the_host_bytes(tmp_path, init_flags):
    """Every stand-in in one Cortex-M4 image (tools/image_main.c: two invokes, the second's output hashed): the
    board's hash equals the host Python interpreter's and the host C runtime's after the same two invokes; under the
    default plan and the least-RAM request (init flags 2: EDGE_INIT_MEMORY_MIN, the compact requantization)."""
    from tests.oprunner import m4_image, m4_image_reports

    models = {name: _model(name) for name in NAMES}
    paths = []
    for name, model in models.items():
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(model)
        paths.append(path)
    image_dir = m4_image(paths, tmp_path / "b", f"IMAGE_DEFS=-DEDGE_IMAGE_INIT_FLAGS={init_flags}u")
    reports = m4_image_reports(image_dir / "edge-image.elf", list(models))
    failures = []
    for name, model in models.items():
        want = _host_hash_after_two_invokes(model, "python")
        assert _host_hash_after_two_invokes(model, "c") == want, f"{name}: host C differs from Python"
        got = re.search(r"^out 0 (\d+)$", reports[name], re.M)
        if not got or int(got.group(1)) != want:
            failures.append(name)
    assert not failures, f"the M4 board's output differs from the host's on {failures}"
