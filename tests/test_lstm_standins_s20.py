"""Issue 25: the int8 LSTM stand-ins of benchmarks/mcu_standins.py ("recurrent: LSTM": UNIDIRECTIONAL_SEQUENCE_LSTM in
TFLM's quantized form at five shapes, some with an FC + SOFTMAX head) run bit-exact everywhere:

- TFLM's Python interpreter (the integer reference) == our Python interpreter == our host C runtime (its portable
  loops) == the C runtime with the DSP paths emulated on the host (-DEDGE_EMULATE_DSP: the code the Cortex-M4 runs,
  unidirectional_sequence_lstm.c's eval_int8_dsp with its folded biases and edge_dot4_xw_s8), after 1 and 3 invokes
  with the same input (the hidden and cell state carried across invokes; the first step of the first invoke
  skips the recurrent products, later ones do not);
- (slow) on the QEMU Cortex-M4 board: `edge flash` + `edge profile` over 3 runs, the board's outputs equal the
  host's (profile's validated), for a thin long sequence and a wide single step.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.model import read_model
from tests.conftest import needs_c_runtime
from tests.peers import run_tflm

pytestmark = needs_c_runtime

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


def _standins() -> dict[str, Path]:
    import mcu_standins

    return {p.name.rsplit("_", 1)[0]: p for p in mcu_standins.FAMILIES["recurrent: LSTM"]()}


STANDINS = _standins()


def _feed(path: Path) -> np.ndarray:
    sg = read_model(path.read_bytes()).subgraphs[0]
    shape = tuple(sg.tensors[sg.inputs[0]].shape)
    return np.random.default_rng(len(path.name)).integers(-128, 128, shape).astype(np.int8)


def _ours(data: bytes, x: np.ndarray, backend: str, invocations: int) -> np.ndarray:
    it = Interpreter(model_content=data, backend=backend)
    it.allocate_tensors()
    for _ in range(invocations):
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"]).copy()


def _dsp(exe: Path, path: Path, x: np.ndarray, like: np.ndarray, invocations: int, tmp_path: Path) -> np.ndarray:
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    proc = subprocess.run([str(exe), str(path), str(tmp_path / "in.bin"), str(tmp_path / "out.bin"),
                           "--invocations", str(invocations)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return np.frombuffer((tmp_path / "out.bin").read_bytes(), like.dtype)[:like.size].reshape(like.shape)


def test_the_family_has_the_shapes_the_brief_asks_for():
    """>= 4 shapes: units 16..128, inputs 8..64 (some not a multiple of 4), 1..50 steps, time major and not, heads."""
    shapes = []
    for path in STANDINS.values():
        m = read_model(path.read_bytes())
        sg = m.subgraphs[0]
        ops = [m.operator_codes[op.opcode_index].name for op in sg.operators]
        assert ops[0] == "UNIDIRECTIONAL_SEQUENCE_LSTM"
        lstm = sg.operators[0]
        w, h, c = (sg.tensors[lstm.inputs[k]] for k in (1, 18, 19))
        assert (w.type, h.type, c.type, sg.tensors[lstm.inputs[12]].type) == ("INT8", "INT8", "INT16", "INT32")
        shapes.append((w.shape[0], w.shape[1], lstm.options["time_major"], "SOFTMAX" in ops))
    assert len(shapes) >= 4
    assert {s[0] for s in shapes} >= {16, 32, 64, 128} and any(s[1] % 4 for s in shapes)
    assert {s[2] for s in shapes} == {True, False} and {s[3] for s in shapes} == {True, False}


@pytest.mark.parametrize("invocations", [1, 3])
@pytest.mark.parametrize("name", list(STANDINS))
def test_standin_bit_exact_with_tflm(dsp_runner, name, invocations, tmp_path):
    path = STANDINS[name]
    data = path.read_bytes()
    x = _feed(path)
    want = run_tflm(data, [x], isolate=True, invocations=invocations)[0]
    assert np.unique(want).size >= 3, "degenerate case: the output is nearly constant"
    np.testing.assert_array_equal(_ours(data, x, "python", invocations), want)
    np.testing.assert_array_equal(_ours(data, x, "c", invocations), want)
    np.testing.assert_array_equal(_dsp(dsp_runner, path, x, want, invocations, tmp_path), want)


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
@pytest.mark.parametrize("name", ["lstm_u50_i13_t16_clip", "lstm_u128_i64_t1"])
def test_standin_on_the_m4_board_gives_the_hosts_outputs(name, tmp_path):
    """The board's DSP path (real SXTB16 / SMLAD / SMMLAR) over 3 invokes == the host's (profile compares them)."""
    from edge_sdk.device import qemu_board as qb
    from edge_sdk.tools.flash import flash
    from edge_sdk.tools.profile import profile_model

    path = STANDINS[name]
    try:
        r = flash(path, "qemu-mps2-an386", build_dir=tmp_path / "fw")
        prof = profile_model(path, "qemu-mps2-an386", port=r.port, runs=3, timeout=6.0, retries=12)
    finally:
        qb.stop_board(all=True, scope="process")
    assert prof["runs"] == 3 and prof["validated"], prof["mismatches"]


@pytest.mark.parametrize("seed,time_major,steps,hidden", [(1, False, 3, (0.007, 3)), (1, True, 3, (0.007, 3)),
                                                          (2, True, 1, (0.0078125, 0)), (5, False, 4, (0.0078125, 0))])
def test_dsp_path_over_a_batch_of_two(dsp_runner, seed, time_major, steps, hidden, tmp_path):
    """The stand-ins are batch 1: tests/test_lstm_integer.py's int8 sequence LSTM (batch 2, 5 inputs: a tail past
    the 4-column chunks, 8 units; seed 2 with a cell clip) on the DSP path == our Python interpreter, 1 and 2
    invokes (odd and even step counts: the two-step input products with a lone last step)."""
    from tests.test_lstm_integer import B, feeds, int8_lstm_model

    data = int8_lstm_model(seed, False, 1.5 if seed == 2 else 0.0, hidden=hidden, sequence=(steps, time_major))
    x = feeds(seed, lead=(steps, B) if time_major else (B, steps))[0]
    path = tmp_path / "lstm.tflite"
    path.write_bytes(data)
    for invocations in (1, 2):
        want = _ours(data, x, "python", invocations)
        assert np.unique(want).size >= 5, "degenerate case"
        np.testing.assert_array_equal(_dsp(dsp_runner, path, x, want, invocations, tmp_path), want)
