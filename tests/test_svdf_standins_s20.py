"""Issue 25, session 20: the "recurrent: SVDF and small dense" stand-ins of benchmarks/mcu_standins.py (stacked int8
SVDFs in TFLM's integer form with int16 or int8 state, small FULLY_CONNECTED / QUANTIZE / SOFTMAX layers, small
dense MLPs) run bit-exact in TFLM's Python interpreter, our Python interpreter and our C runtime over a sequence of
different frames (the SVDF state carried invoke to invoke); the Cortex-M kernels (svdf.c's DSP path: the state
shifted by words, two filters' projections per input word, SMLAD time dot products; fully_connected.c's depth < 8
path; quantize.c's int16 -> int8 edge_rq path) in C emulated on the host equal the portable build and TFLM, and
(slow) in a Cortex-M4 image under QEMU give the Python interpreter's bytes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import image_main_hash, image_main_inputs, m4_image, m4_image_reports
from tests.peers import TFLM_ARENA

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import mcu_standins  # noqa: E402

NAMES = list(mcu_standins.RECURRENT_DENSE)
FRAMES = 5  # invokes: more than nothing in the state, fewer than the shortest memory (8) would hide the shift

pytestmark = needs_c_runtime


def _model(name: str) -> bytes:
    return mcu_standins.recurrent_dense_model(name)


def _frames(model: bytes, seed: int) -> list[list[np.ndarray]]:
    """FRAMES different input sets, over the whole range of each input's type."""
    from edge_sdk import Interpreter

    py = Interpreter(model_content=model)
    py.allocate_tensors()
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(FRAMES):
        feeds = []
        for d in py.get_input_details():
            info = np.iinfo(d["dtype"])
            feeds.append(rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]))
        out.append(feeds)
    return out


def _ours(model: bytes, frames, backend: str) -> list[np.ndarray]:
    """Our runtime's output 0 after each frame (one interpreter: the state carried)."""
    from edge_sdk import Interpreter

    interp = Interpreter(model_content=model, backend=backend)
    interp.allocate_tensors()
    outs = []
    for feeds in frames:
        for d, x in zip(interp.get_input_details(), feeds):
            interp.set_tensor(d["index"], x)
        interp.invoke()
        outs.append(np.array(interp.get_tensor(interp.get_output_details()[0]["index"])))
    return outs


def _tflm(model: bytes, frames) -> list[np.ndarray]:
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(bytes(model), arena_size=TFLM_ARENA)
    outs = []
    for feeds in frames:
        for i, x in enumerate(feeds):
            interp.set_input(np.asarray(x, order="C"), i)
        interp.invoke()
        outs.append(np.array(interp.get_output(0)))
    return outs


def test_the_family_has_the_shapes_it_names():
    """>= 3 SVDF stacks (rank 1 and 2, int16 and int8 state, 2-4 deep) and >= 2 MLPs, as the family's table says."""
    from edge_sdk.model import read_model

    svdf_models = mlp_models = 0
    ranks, depths, states = set(), set(), set()
    for name in NAMES:
        g = read_model(_model(name)).subgraphs[0]
        ops = [read_model(_model(name)).operator_codes[op.opcode_index].builtin_code for op in g.operators]
        svdfs = [op for op in g.operators if op.options_type == "SVDFOptions"]
        if svdfs:
            svdf_models += 1
            depths.add(len(svdfs))
            ranks.update(op.options["rank"] for op in svdfs)
            states.update(g.tensors[op.inputs[4]].type for op in svdfs)
        else:
            mlp_models += 1
        assert ops, name
    assert svdf_models >= 3 and mlp_models >= 2
    assert ranks == {1, 2} and states == {"INT16", "INT8"} and min(depths) == 2 and max(depths) >= 4


@pytest.mark.parametrize("name", NAMES)
def test_standin_is_tflm_bytes_in_python_and_c_over_frames(name):
    model = _model(name)
    frames = _frames(model, 5)
    want = _tflm(model, frames)
    assert len({w.tobytes() for w in want}) > 1, f"{name}: the same output for every frame (a dead stand-in)"
    for backend in ("python", "c"):
        got = _ours(model, frames, backend)
        for k, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_array_equal(g, w, err_msg=f"{name} {backend} frame {k}")


@pytest.mark.parametrize("name", NAMES)
def test_m4_paths_emulated_equal_portable_and_tflm(backend, dsp_runner, name, tmp_path):  # noqa: F811
    """The DSP build (emulated on the host) over three invokes of the same input == TFLM's three invokes."""
    model = _model(name)
    feeds = _frames(model, 9)[0]
    (tmp_path / "m.tflite").write_bytes(model)
    (tmp_path / "in.bin").write_bytes(b"".join(np.ascontiguousarray(x).tobytes() for x in feeds))
    want = _tflm(model, [feeds] * 3)[-1]
    proc = subprocess.run([str(dsp_runner), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"),
                           str(tmp_path / "out.bin"), "--invocations", "3"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = np.frombuffer((tmp_path / "out.bin").read_bytes(), want.dtype)[:want.size].reshape(want.shape)
    np.testing.assert_array_equal(got, want, err_msg=name)


# (state type, batch, n_input, n_filter, n_memory, rank, state scale, state zero point, output scale): the DSP path's
# other branches -- n_input % 4 (the projections' tail), n_filter % 4 (the two-filter pass), rank x M % 4 (the time
# run's tail), batches, an int16 state zero point (the portable time loop), a first ratio above 1 (svdf_rq's left
# shift) and of 1/2 .. 1 (its right shift 1), a second ratio above 1/4
ODD_SVDF = [("INT16", 2, 13, 6, 5, 2, 0.004, 0, 0.2), ("INT8", 2, 13, 6, 5, 2, 0.3, 7, 0.5),
            ("INT8", 1, 7, 9, 3, 1, 0.3, -20, 0.5), ("INT16", 3, 5, 2, 1, 1, 0.004, 0, 0.2),
            ("INT16", 2, 16, 12, 8, 3, 0.004, 5, 0.2), ("INT16", 1, 16, 8, 4, 1, 0.0001, 0, 0.2),
            ("INT16", 1, 12, 8, 8, 2, 0.0015, 0, 50.0), ("INT8", 1, 12, 8, 4, 1, 0.3, 3, 0.0004)]


@pytest.mark.parametrize("case", ODD_SVDF, ids=[f"{c[0]}-b{c[1]}-i{c[2]}-f{c[3]}-m{c[4]}-r{c[5]}" for c in ODD_SVDF])
def test_svdf_m4_path_on_odd_shapes_and_ratios_equals_tflm(dsp_runner, case, tmp_path):  # noqa: F811
    """The SVDF DSP path (emulated) over three invokes == TFLM's, on shapes and scale ratios the stand-ins do not
    have (tests/test_ops_sequence.py's single-op SVDF, its state and output quantization varied)."""
    import dataclasses

    from tests.oprunner import op_model
    from tests.test_ops_sequence import _svdf_specs

    state_type, batch, n_input, n_filter, n_memory, rank, s_scale, s_zp, y_scale = case
    rng = np.random.default_rng(n_input * 100 + n_filter)
    ins, outs = _svdf_specs(rng, state_type, batch=batch, n_input=n_input, n_filter=n_filter, n_memory=n_memory,
                            rank=rank)
    ins[4] = dataclasses.replace(ins[4], scale=s_scale, zero_point=s_zp)
    ins[3] = dataclasses.replace(ins[3], scale=float(np.float32(s_scale) * np.float32(ins[2].scale)))
    outs[0] = dataclasses.replace(outs[0], scale=y_scale)
    model = op_model("SVDF", ins, outs, options={"rank": rank, "fused_activation_function": "NONE"})
    feed = rng.integers(-128, 128, ins[0].shape, dtype=np.int8)
    (tmp_path / "m.tflite").write_bytes(model)
    (tmp_path / "in.bin").write_bytes(feed.tobytes())
    want = _tflm(model, [[feed]] * 3)[-1]
    assert len(np.unique(want)) > 1, f"{case}: a constant output tests little"
    proc = subprocess.run([str(dsp_runner), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"),
                           str(tmp_path / "out.bin"), "--invocations", "3"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = np.frombuffer((tmp_path / "out.bin").read_bytes(), np.int8)[:want.size].reshape(want.shape)
    np.testing.assert_array_equal(got, want, err_msg=str(case))


# (batch, depth, units, per-channel weights, bias, activation): fully_connected.c's M4 paths the stand-ins and
# tests/test_c_kernels_fc_dsp.py leave out -- fc_groups without a bias, with a last group of 1-3 units after it and
# several batch rows; the depth < 8 loop per tensor and per channel, with and without a bias
ODD_FC = [(2, 16, 9, False, False, "RELU"), (3, 8, 6, False, True, "NONE"), (2, 5, 7, False, True, "RELU6"),
          (1, 1, 16, True, True, "NONE"), (2, 7, 3, True, False, "NONE")]


@pytest.mark.parametrize("case", ODD_FC, ids=[f"b{c[0]}-d{c[1]}-u{c[2]}-pc{int(c[3])}-bias{int(c[4])}" for c in ODD_FC])
def test_fc_m4_paths_on_small_layers_equal_tflm(dsp_runner, case, tmp_path):  # noqa: F811
    """FULLY_CONNECTED's DSP build (emulated) == TFLM on small layers."""
    from tests.oprunner import T, op_model
    from tests.test_c_kernels_fc_dsp import _b, _w

    batch, depth, units, per_channel, bias, act = case
    rng = np.random.default_rng(depth * 100 + units)
    ins = [T((batch, depth), "INT8", 0.05, -7), _w(rng, (units, depth), units, per_channel, 0),
           _b(rng, units, bias, 3000, 0.05 * 0.011)]
    model = op_model("FULLY_CONNECTED", ins, [T((batch, units), "INT8", 0.02 * max(1, depth // 4), 3)],
                     options={"fused_activation_function": act})
    feed = rng.integers(-128, 128, (batch, depth), dtype=np.int8)
    (tmp_path / "m.tflite").write_bytes(model)
    (tmp_path / "in.bin").write_bytes(feed.tobytes())
    want = _tflm(model, [[feed]])[-1]
    assert len(np.unique(want)) > 1, f"{case}: a constant output tests little"
    proc = subprocess.run([str(dsp_runner), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"),
                           str(tmp_path / "out.bin")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = np.frombuffer((tmp_path / "out.bin").read_bytes(), np.int8)[:want.size].reshape(want.shape)
    np.testing.assert_array_equal(got, want, err_msg=str(case))


def _image_rounds(model: bytes) -> list[list[np.ndarray]]:
    """Both input rounds tools/image_main.c writes (it invokes once per round)."""
    from edge_sdk import Interpreter

    py = Interpreter(model_content=model)
    py.allocate_tensors()
    return image_main_inputs(py, every_round=True)


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_standins_on_the_qemu_m4_give_the_host_bytes(tmp_path):
    """Three stand-ins (int16-state rank-1 SVDF with an int16 input QUANTIZE, int8-state SVDF, the 1-16-16-1 MLP) in
    one Cortex-M4 image: the output after the image's two invokes hashes as our Python interpreter's and TFLM's."""
    import re

    chosen = ["svdf_r1_m8", "svdf_s8_m24", "mlp_1_16_16_1"]
    paths = []
    for name in chosen:
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(_model(name))
        paths.append(path)
    reports = m4_image_reports(m4_image(paths, tmp_path / "b") / "edge-image.elf", chosen)
    for name in chosen:
        model = _model(name)
        rounds = _image_rounds(model)
        want = image_main_hash(_ours(model, rounds, "python")[-1].tobytes())
        assert want == image_main_hash(_tflm(model, rounds)[-1].tobytes()), name
        got = re.search(r"^out 0 (\d+)$", reports[name], re.M)
        assert got and int(got.group(1)) == want, f"{name}: {reports[name][-300:]}"
