"""Issue 25, the attention stand-ins (benchmarks/mcu_standins.py's "attention" family: int8 transformer blocks and
KWT-like keyword spotters written by our writer and converted by our converter): each runs in TFLM's Python
interpreter (tflite_micro, the integer reference) and gives its bytes in our Python interpreter, our host C runtime,
and the C runtime with the Cortex-M4's DSP paths emulated on the host (-DEDGE_EMULATE_DSP: BATCH_MATMUL's SMLAD
blocks, SOFTMAX's M4 rows); slow: two of them flashed into a Cortex-M4 image on the QEMU mps2-an386 board
(firmware_c/tools/image_main.c) give the host's output hash. The stand-ins' ops: FULLY_CONNECTED, BATCH_MATMUL
(adj_y on rank 2 and rank 3, a plain rhs), SOFTMAX (rows of 16-64 and a 12-class head), TRANSPOSE, RESHAPE, MEAN,
SUB, MUL, ADD, RSQRT, LOGISTIC."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.model import read_model
from tests.conftest import needs_c_runtime
from tests.oprunner import m4_image_mismatches, run_on
from tests.peers import run_tflm
from tests.test_ops_conv import _run_exe  # dsp_runner: tests/conftest.py

ROOT = Path(__file__).resolve().parent.parent

pytestmark = needs_c_runtime

# the ops each stand-in must hold (a converter change that drops one would quietly stop measuring its kernel)
ATTENTION_OPS = {"FULLY_CONNECTED", "BATCH_MATMUL", "SOFTMAX", "MEAN", "SUB", "MUL", "ADD", "RSQRT", "LOGISTIC"}


def _standins() -> dict[str, bytes]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import mcu_standins

    return {p.name.rsplit("_", 1)[0]: p.read_bytes() for p in mcu_standins.attention()}


@pytest.fixture(scope="module")
def standins() -> dict[str, bytes]:
    return _standins()


def _op_names(model: bytes) -> set[str]:
    from edge_sdk.model import schema

    m = read_model(model)
    codes = {m.operator_codes[op.opcode_index].builtin_code for op in m.subgraphs[0].operators}
    return {schema.BUILTIN_OPERATOR_NAMES[code] for code in codes}


def _input(model: bytes, seed: int) -> np.ndarray:
    m = read_model(model)
    t = m.subgraphs[0].tensors[m.subgraphs[0].inputs[0]]
    return np.random.default_rng(seed).integers(-128, 128, tuple(t.shape)).astype(np.int8)


def test_the_family_covers_the_sizes_and_ops(standins):
    assert len(standins) >= 6
    assert sum(name.startswith("kwt_") for name in standins) >= 2
    for name, model in standins.items():
        ops = _op_names(model)
        assert ATTENTION_OPS <= ops, f"{name} lacks {sorted(ATTENTION_OPS - ops)}"
        multi_head = "_h1" not in name
        assert ("TRANSPOSE" in ops) == multi_head, name


@pytest.mark.parametrize("seed", [0, 1])
def test_standins_are_bit_exact_with_tflm_on_every_runtime(standins, dsp_runner, tmp_path, seed):
    for name, model in standins.items():
        x = _input(model, seed)
        want = run_tflm(model, [x], isolate=True)[0]
        assert want.dtype == np.int8 and np.unique(want).size > 2, f"{name}: a flat output tests nothing"
        for runtime in ("python", "c"):
            got = run_on(runtime, model, [x])[0]
            assert np.array_equal(got, want), f"{name}, {runtime}: {np.abs(got.astype(int) - want).max()} off"
        got = _run_exe(dsp_runner, model, [x], want, tmp_path)
        assert np.array_equal(got, want), f"{name}, C with the M4's DSP paths: {np.abs(got.astype(int) - want).max()} off"


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_two_standins_give_the_host_bytes_on_the_qemu_board(standins, tmp_path):
    """A single-head block (rank-2 BATCH_MATMUL, adj_y) and the small KWT (rank-3 products, TRANSPOSE, a 12-class
    SOFTMAX head) on the Cortex-M4: the real SXTAB16 / SMLAD instructions."""
    models = {name: standins[name] for name in ("attn_block_t16_d32_h1", "kwt_f16_d32_h2")}
    failures = m4_image_mismatches(models, tmp_path / "b")
    assert not failures, f"the M4 board's output differs from the host's on {failures}"
