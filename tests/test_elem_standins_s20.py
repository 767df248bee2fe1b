"""Issue 25: the element-wise-heavy int8 stand-ins (benchmarks/mcu_standins.py, "element-wise heavy stand-ins":
ResNet ADD skips, squeeze-excite MULs, PReLU + MAX_POOL, AVERAGE_POOL KWS, a concatenating U-Net decoder, two sizes
each) give TFLM's bytes (the integer reference, NOTES.md) in our Python interpreter and our C runtime, on inputs that
cover the whole int8 range; and two of them, built into a Cortex-M4 image (the kernels' EDGE_DSP paths) and run on
the QEMU mps2-an386 board, give the host's bytes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.peers import run_tflm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import mcu_standins  # noqa: E402

pytest.importorskip("tflite_micro")


@pytest.fixture(scope="module")
def standins() -> dict[str, bytes]:
    return {p.name.rsplit("_", 1)[0]: p.read_bytes() for p in mcu_standins.elem_standins()}


def test_the_family_covers_every_net_at_two_sizes(standins):
    assert sorted(standins) == sorted(f"elem_{arch}_{side}_c{c}_int8" for arch in mcu_standins.ELEM_NETS
                                      for side, c in mcu_standins.ELEM_SIZES)


@needs_c_runtime
@pytest.mark.parametrize("arch", sorted(mcu_standins.ELEM_NETS))
def test_standin_runs_bit_exact_with_tflm_in_python_and_c(standins, arch):
    from edge_sdk import Interpreter

    for side, c in mcu_standins.ELEM_SIZES:
        model = standins[f"elem_{arch}_{side}_c{c}_int8"]
        interp = Interpreter(model_content=model, backend="python")
        interp.allocate_tensors()
        detail = interp.get_input_details()[0]
        x = np.random.default_rng(side).integers(-128, 128, detail["shape"]).astype(np.int8)
        want = run_tflm(model, [x], isolate=True)
        assert len(want) == len(interp.get_output_details())
        for backend in ("python", "c"):
            it = Interpreter(model_content=model, backend=backend)
            it.allocate_tensors()
            it.set_tensor(detail["index"], x)
            it.invoke()
            for k, d in enumerate(it.get_output_details()):
                got = it.get_tensor(d["index"])
                assert got.dtype == np.int8 and got.shape == want[k].shape
                diff = int(np.abs(got.astype(np.int32) - want[k].astype(np.int32)).max())
                assert diff == 0, f"{arch} {side}: {backend} output {k} differs from TFLM by up to {diff}"
                # an output stuck at one value would pass any comparison of two broken runtimes
                assert len(np.unique(want[k])) > 1, f"{arch} {side}: TFLM output {k} is constant"


@needs_c_runtime
@pytest.mark.parametrize("arch", sorted(mcu_standins.ELEM_NETS))
def test_standin_dsp_paths_run_bit_exact_with_tflm(standins, arch, dsp_runner, tmp_path):
    """The Cortex-M4 kernels' EDGE_DSP paths (SSUB8 / SEL maxima, SXTAB16 sums ...) emulated in C on the host."""
    for side, c in mcu_standins.ELEM_SIZES:
        model = standins[f"elem_{arch}_{side}_c{c}_int8"]
        from edge_sdk import Interpreter

        interp = Interpreter(model_content=model, backend="python")
        interp.allocate_tensors()
        x = np.random.default_rng(side + 1).integers(-128, 128, interp.get_input_details()[0]["shape"]).astype(np.int8)
        want = run_tflm(model, [x], isolate=True)[0]
        (tmp_path / "m.tflite").write_bytes(model)
        (tmp_path / "in.bin").write_bytes(x.tobytes())
        proc = subprocess.run([str(dsp_runner), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"),
                               str(tmp_path / "out.bin")], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        got = np.frombuffer((tmp_path / "out.bin").read_bytes(), np.int8)[:want.size].reshape(want.shape)
        diff = int(np.abs(got.astype(np.int32) - want.astype(np.int32)).max())
        assert diff == 0, f"{arch} {side}: the DSP path differs from TFLM by up to {diff}"


def _op_cases() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    """One-op int8 models for the DSP paths' corners: ADD / SUB / MUL contiguous and broadcast (a per-channel gate),
    scales far apart (a right shift of 0, 1 and many), fused RELU / RELU6 clamps; PRELU with an output scale below
    the input's (a left shift) and a slope zero point; MAX / AVERAGE pools with SAME padding (edge windows of fewer
    cells), 11 channels (a word and a tail), a fused RELU6, and an average over more than 255 cells (the int32
    fallback); PAD of the channels only (the DSP row loop: 11 channels, gaps of 13, 7 and 1; rows of 40 and 33 bytes)
    and of H too."""
    from tests.oprunner import T, op_model

    rng = np.random.default_rng(25)
    cases = {}
    shape = (1, 5, 7, 11)

    def feed(s):
        return rng.integers(-128, 128, s).astype(np.int8)

    for op in ("ADD", "SUB", "MUL"):
        for k, (sa, sb, so, act, bshape) in enumerate([(0.05, 0.05, 0.1, "NONE", shape),
                                                       (0.02, 0.7, 0.3, "RELU", shape),
                                                       (0.6, 0.011, 0.013, "RELU6", (1, 1, 1, 11)),
                                                       (0.1, 0.003, 0.9, "NONE", (1, 1, 7, 1))]):
            a = T(shape, scale=sa, zero_point=int(rng.integers(-20, 20)))
            b = T(bshape, scale=sb, zero_point=int(rng.integers(-128, 20)))
            # MUL: the product's scale times 30 .. 1,000 (an output of a few hundred quanta, partly clamped)
            y = T(shape, scale=sa * sb * (30, 150, 400, 1000)[k] if op == "MUL" else so,
                  zero_point=int(rng.integers(-30, 30)))
            cases[f"{op.lower()}_{k}"] = (op_model(op, [a, b], [y], {"fused_activation_function": act}),
                                          [feed(shape), feed(bshape)])
    for k, (s_in, s_a, s_out, a_zp) in enumerate([(0.05, 0.01, 0.04, 0), (0.2, 0.004, 0.01, 17), (0.01, 0.02, 0.3, -5)]):
        alpha = T((1, 1, 11), scale=s_a, zero_point=a_zp, data=rng.integers(-128, 128, (1, 1, 11)).astype(np.int8))
        cases[f"prelu_{k}"] = (op_model("PRELU", [T(shape, scale=s_in, zero_point=3), alpha],
                                        [T(shape, scale=s_out, zero_point=-9)]), [feed(shape)])
    for k, pads in enumerate([[[0, 0], [0, 0], [0, 0], [0, 13]], [[0, 0], [0, 0], [0, 0], [2, 5]],
                              [[0, 0], [1, 2], [0, 0], [3, 1]], [[0, 0], [0, 0], [0, 0], [1, 0]]]):
        out = tuple(n + a + b for n, (a, b) in zip(shape, pads))
        q = {"scale": 0.02, "zero_point": -11 + 9 * k}
        cases[f"pad_{k}"] = (op_model("PAD", [T(shape, **q), T((4, 2), "INT32", data=np.array(pads, np.int32))],
                                      [T(out, **q)]), [feed(shape)])
    for k, (c, pads) in enumerate([(40, [0, 4]), (33, [2, 3])]):  # rows of 32+ bytes: the block copy
        xshape, out = (1, 3, 5, c), (1, 3, 5, c + sum(pads))
        q = {"scale": 0.02, "zero_point": 5}
        cases[f"pad_wide_{k}"] = (op_model("PAD", [T(xshape, **q), T((4, 2), "INT32", data=np.array(
            [[0, 0], [0, 0], [0, 0], pads], np.int32))], [T(out, **q)]), [feed(xshape)])
    for op in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
        for k, (xshape, f, st, pad, act) in enumerate([((1, 9, 7, 11), 3, 2, "SAME", "NONE"),
                                                       ((1, 8, 8, 16), 2, 2, "VALID", "RELU6"),
                                                       ((1, 6, 5, 12), 3, 1, "SAME", "RELU"),
                                                       ((1, 17, 17, 5), 17, 1, "VALID", "NONE")]):
            oh = (xshape[1] - f) // st + 1 if pad == "VALID" else -(-xshape[1] // st)
            ow = (xshape[2] - f) // st + 1 if pad == "VALID" else -(-xshape[2] // st)
            q = {"scale": 0.03, "zero_point": -7}
            cases[f"{op.lower()}_{k}"] = (
                op_model(op, [T(xshape, **q)], [T((1, oh, ow, xshape[3]), **q)],
                         {"padding": pad, "stride_w": st, "stride_h": st, "filter_width": f, "filter_height": f,
                          "fused_activation_function": act}), [feed(xshape)])
    return cases


OP_CASES = _op_cases()


@needs_c_runtime
@pytest.mark.parametrize("name", sorted(OP_CASES))
def test_op_dsp_path_bit_exact_with_tflm(name, dsp_runner, tmp_path):
    """Each one-op model through the emulated DSP paths (and the host C runtime) against TFLM."""
    from edge_sdk import Interpreter

    model, feeds = OP_CASES[name]
    want = run_tflm(model, feeds, isolate=True)[0]
    (tmp_path / "m.tflite").write_bytes(model)
    (tmp_path / "in.bin").write_bytes(b"".join(x.tobytes() for x in feeds))
    proc = subprocess.run([str(dsp_runner), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"),
                           str(tmp_path / "out.bin")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = np.frombuffer((tmp_path / "out.bin").read_bytes(), np.int8)[:want.size].reshape(want.shape)
    np.testing.assert_array_equal(got, want, err_msg=f"{name}: the DSP path differs from TFLM")
    it = Interpreter(model_content=model, backend="c")
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], x)
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), want,
                                  err_msg=f"{name}: the host C runtime differs from TFLM")
    assert len(np.unique(want)) > 1, f"{name}: TFLM's output is constant"


@pytest.mark.slow
@needs_c_runtime
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_standins_give_the_host_bytes_on_the_qemu_board(standins, tmp_path):
    from tests.oprunner import m4_image_mismatches

    picked = {name: standins[name] for name in ("elem_prelu_pool_32_c16_int8", "elem_se_16_c8_int8",
                                                 "elem_kws_pool_32_c16_int8", "elem_resnet_16_c8_int8")}
    failures = m4_image_mismatches(picked, tmp_path / "b")
    assert not failures, f"the M4 board's output differs from the host's on {failures}"
