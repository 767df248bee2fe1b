"""Issue 25, the attention stand-ins (benchmarks/mcu_standins.py's "attention" family: int8 transformer blocks and
KWT-like keyword spotters written by our writer and converted by our converter): each runs in TFLM's Python
interpreter (tflite_micro, the integer reference) and gives its bytes in our Python interpreter, our host C runtime,
and the C runtime with the Cortex-M4's DSP paths emulated on the host (-DEDGE_EMULATE_DSP: BATCH_MATMUL's packed
2 x 2 SMLAD blocks, SOFTMAX's exps computed once with SMMLAR, TRANSPOSE's word rows); slow: two of them flashed
into a Cortex-M4 image on the QEMU mps2-an386 board (firmware_c/tools/image_main.c) and one profiled on the M7 board
(qemu-mps2-an500) give the host's bytes. The stand-ins' ops: FULLY_CONNECTED, BATCH_MATMUL (adj_y on rank 2 and
rank 3, a plain rhs), SOFTMAX (rows of 16-64 and a 12-class head), TRANSPOSE, RESHAPE, MEAN, SUB, MUL, ADD, RSQRT,
LOGISTIC. Then the M4 paths op by op (odd sizes, adj_x, broadcast, zero points, a requantization edge_rq does not
take, int16 softmax output, every softmax difference 0..255 at scales from flat to beyond the input radius)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.model import read_model
from tests.conftest import needs_c_runtime
from tests.oprunner import T, m4_image_mismatches, op_model, run_on
from tests.peers import run_tflm
from tests.test_ops_conv import _run_exe  # dsp_runner: tests/conftest.py
from tests.test_profile import needs_qemu, state  # noqa: F401 (a fixture: the board state, boards stopped after)

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
        assert np.array_equal(got, want), f"{name}, DSP build: {np.abs(got.astype(int) - want).max()} off"


@pytest.mark.slow
@needs_qemu
def test_two_standins_give_the_host_bytes_on_the_qemu_board(standins, tmp_path):
    """A single-head block (rank-2 BATCH_MATMUL, adj_y) and the small KWT (rank-3 products, TRANSPOSE, a 12-class
    SOFTMAX head) on the Cortex-M4: the real SXTB16 / SMLAD / SMMLAR / SSAT instructions."""
    models = {name: standins[name] for name in ("attn_block_t16_d32_h1", "kwt_f16_d32_h2")}
    failures = m4_image_mismatches(models, tmp_path / "b")
    assert not failures, f"the M4 board's output differs from the host's on {failures}"


@pytest.mark.slow
@needs_qemu
def test_a_standin_on_the_m7_board(standins, state, tmp_path):  # noqa: F811
    """The same asm and DSP paths in a Cortex-M7 build (qemu-mps2-an500), flashed and profiled as a user would:
    the board's outputs equal the host's."""
    from edge_sdk.tools.profile import profile_model

    model = standins["attn_block_t24_d48_h3"]
    (tmp_path / "m.tflite").write_bytes(model)
    np.save(tmp_path / "in.npy", _input(model, 5))
    r = profile_model(tmp_path / "m.tflite", "qemu-mps2-an500", runs=1, inputs=str(tmp_path / "in.npy"),
                      build_dir=tmp_path / "fw")
    assert r["validated"] is True and r["mismatches"] == [], r


# ------------------------------------------------------------------ the M4 paths op by op (EDGE_DSP, emulated on host)
# Each case: TFLM == our Python interpreter == the portable C build == the C build with the M4's DSP paths emulated
# (-DEDGE_EMULATE_DSP), bit for bit.

# name: (lhs shape, rhs shape, adj_x, adj_y, lhs zp, rhs zp, output scale over the one that spreads a sum of
# random products over about +-40)
BMM_CASES = {
    "bmm-scores-adj-y": ((2, 16, 8), (2, 16, 8), False, True, -3, 5, 1.0),  # Q.K^T per head
    "bmm-context-plain-rhs": ((2, 16, 16), (2, 16, 8), False, False, -128, 0, 1.0),  # P.V: rhs copied to rows
    "bmm-odd-sizes-adj-x": ((3, 7, 5), (3, 7, 9), True, False, 17, -9, 0.7),  # both operands copied, odd R / C / K
    "bmm-broadcast-rhs": ((2, 3, 5, 6), (6, 7), False, False, 0, 127, 2.0),  # one rhs matrix for six products
    "bmm-rank2-adj-both": ((13, 3), (11, 13), True, True, -1, -128, 1.0),  # K = 13: a tail of one
    "bmm-wide-multiplier": ((1, 4, 8), (1, 8, 4), False, False, 2, -2, 0.002),  # a ratio edge_rq does not take
}


def _bmm_case(name):
    ls, rs, adj_x, adj_y, lzp, rzp, gain = BMM_CASES[name]
    rng = np.random.default_rng(len(name) * 7919 + sum(map(ord, name)))
    rows, cols = (ls[-1] if adj_x else ls[-2]), (rs[-2] if adj_y else rs[-1])
    depth = ls[-2] if adj_x else ls[-1]
    out_shape = tuple(np.broadcast_shapes(ls[:-2], rs[:-2])) + (rows, cols)
    out_scale = gain * 0.05 * 0.04 * 74 * 74 * np.sqrt(depth) / 40  # random bytes: 74 = their standard deviation
    model = op_model("BATCH_MATMUL", [T(ls, "INT8", 0.05, lzp), T(rs, "INT8", 0.04, rzp)],
                     [T(out_shape, "INT8", float(out_scale), 3)], options={"adj_x": adj_x, "adj_y": adj_y})
    return model, [rng.integers(-128, 128, ls).astype(np.int8), rng.integers(-128, 128, rs).astype(np.int8)]


# name: (shape, input scale, beta, output type)
SOFTMAX_CASES = {
    "softmax-scores-16x16": ((2, 16, 16), 0.03, 1.0, "INT8"),  # the table: range + 1 <= elements
    "softmax-head-12": ((1, 12), 0.03, 1.0, "INT8"),  # each element's exp kept: fewer elements than the range
    "softmax-tiny-3": ((1, 3), 0.01, 1.0, "INT8"),
    "softmax-1000-classes": ((1, 1000), 0.05, 1.0, "INT8"),
    "softmax-rows-odd-beta": ((5, 7), 0.02, 0.7, "INT8"),
    "softmax-radius": ((3, 40), 1.5, 2.0, "INT8"),  # a coarse scale: differences beyond the input radius give 0
    "softmax-int16-out": ((4, 33), 0.06, 1.0, "INT16"),
}


def _softmax_case(name):
    shape, scale, beta, out_type = SOFTMAX_CASES[name]
    rng = np.random.default_rng(len(name) * 104729 + sum(map(ord, name)))
    out = T(shape, "INT8", 1 / 256, -128) if out_type == "INT8" else T(shape, "INT16", 1 / 65536, -32768)
    model = op_model("SOFTMAX", [T(shape, "INT8", scale, 4)], [out], options={"beta": beta})
    return model, [rng.integers(-128, 128, shape).astype(np.int8)]


# name: (shape, perm): rows kept whole (block copies: the M4's word loop)
TRANSPOSE_ROW_CASES = {
    "transpose-heads-split": ((16, 4, 8), (1, 0, 2)),  # [T, H, dh] -> [H, T, dh]
    "transpose-heads-odd-row": ((9, 3, 6), (1, 0, 2)),  # rows of 6 bytes: a word and a tail
    "transpose-rank4-rows": ((2, 5, 3, 7), (2, 0, 1, 3)),  # merged to three dims
    "transpose-rank5-odometer": ((2, 3, 2, 2, 5), (3, 1, 2, 0, 4)),  # four outer dims: the odometer
}


def _transpose_case(name):
    shape, perm = TRANSPOSE_ROW_CASES[name]
    out = tuple(shape[p] for p in perm)
    model = op_model("TRANSPOSE", [T(shape, "INT8", 0.1, 0), T((len(perm),), "INT32", data=np.array(perm, np.int32))],
                     [T(out, "INT8", 0.1, 0)])
    return model, [np.random.default_rng(len(name)).integers(-128, 128, shape).astype(np.int8)]


CASES = {**{k: _bmm_case for k in BMM_CASES}, **{k: _softmax_case for k in SOFTMAX_CASES},
         **{k: _transpose_case for k in TRANSPOSE_ROW_CASES}}


@pytest.mark.parametrize("name", list(CASES))
def test_m4_paths_equal_tflm_and_the_portable_build(dsp_runner, tmp_path, name):
    model, feeds = CASES[name](name)
    want = run_tflm(model, feeds, isolate=True)[0]
    least = {"bmm-wide-multiplier": 1, "softmax-radius": 1, "softmax-tiny-3": 2}.get(name, 16 if "bmm" in name else 3)
    assert np.unique(want).size > least, f"{name}: a flat output tests little"
    for runtime in ("python", "c"):
        got = run_on(runtime, model, feeds)[0]
        assert np.array_equal(got, want), f"{name}, {runtime}: {np.abs(got.astype(int) - want).max()} off"
    got = _run_exe(dsp_runner, model, feeds, want, tmp_path)
    assert np.array_equal(got, want), f"{name}, DSP build: {np.abs(got.astype(int) - want).max()} off"


@pytest.mark.parametrize("scale", [0.0005, 0.004, 0.02, 0.0625, 0.2, 0.9, 4.0])
def test_m4_softmax_exps_equal_tflm_for_every_difference(dsp_runner, tmp_path, scale):
    """Every difference 0..255 (a ramp row, and the reversed ramp in a row of its own) at scales from a flat softmax
    to one beyond the input radius: the M4's exp (one SMMLAR per doubling high multiply) gives gemmlowp's, in a
    table (512 elements) and per element (a 12-element input)."""
    ramp = np.arange(-128, 128, dtype=np.int16).astype(np.int8)
    for shape, x in (((2, 256), np.stack([ramp, ramp[::-1]])), ((2, 6), ramp[::23][:12].reshape(2, 6))):
        model = op_model("SOFTMAX", [T(shape, "INT8", scale, -5)], [T(shape, "INT8", 1 / 256, -128)],
                         options={"beta": 1.0})
        want = run_tflm(model, [x], isolate=True)[0]
        assert np.array_equal(run_on("python", model, [x])[0], want)
        got = _run_exe(dsp_runner, model, [x], want, tmp_path)
        assert np.array_equal(got, want), f"scale {scale}, {shape}: {np.abs(got.astype(int) - want).max()} off"
