"""int8 ADD followed by PRELU in one pass on the C runtime's host build (issue 26: BlazeFace / palm int8 residual
blocks): edge.c's edge_add_prelu_next decides as for float32 (the ADD's output read by the PRELU alone, no broadcast,
a constant int8 slope per channel), add.c writes the ADD's requantized sums into the PRELU's output and runs the
PRELU's per-channel table over them (prelu.c, at most 256 channels), prelu.c's eval then has nothing to do.
Bit-exact with TFLM at every SIMD level this CPU runs (0: the portable kernels, never fused); the ADD's own output
is never written when fused (the check that fails without the fusion); an ADD output returned by the model, or a
PRELU without a table (more than 256 channels), keeps the two apart."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.model import schema
from edge_sdk.model.types import Buffer, OperatorCode, Quantization, Tensor
from edge_sdk.model.writer import option_defaults, options_for, write_model
from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model_object
from tests.peers import run_tflm
from tests.simd_common import levels, run_at_level  # noqa: F401 (fixture)

pytestmark = needs_c_runtime


def _quant(scale: float, zp: int) -> Quantization:
    return Quantization(scale=np.array([scale], np.float32), zero_point=np.array([zp], np.int64))


def _add_prelu_int8(shape, act: str, alpha_q: np.ndarray, sum_out: bool) -> bytes:
    """int8 x1 + x2 (fused activation act) -> PRELU(int8 constant slopes over the last axis); sum_out: the sum a
    model output too. Scales and zero points all differ, so every requantization step is exercised."""
    m = op_model_object("ADD", [T(shape, "INT8", 0.05, -3), T(shape, "INT8", 0.03, 7)],
                        [T(shape, "INT8", 0.06, 2, name="sum")], options={"fused_activation_function": act})
    sg = m.subgraphs[0]
    m.buffers.append(Buffer(alpha_q.astype(np.int8).tobytes()))
    ashape = (1, 1, shape[-1]) if len(shape) >= 3 else (shape[-1],)
    sg.tensors.append(Tensor(name="alpha", shape=ashape, type="INT8", buffer=len(m.buffers) - 1,
                             quantization=_quant(0.01, 4)))
    sg.tensors.append(Tensor(name="y", shape=shape, type="INT8", buffer=0, quantization=_quant(0.05, -5)))
    m.operator_codes.append(OperatorCode(schema.BUILTIN_OPERATOR_CODES["PRELU"], None, 1))
    sg.operators.append(type(sg.operators[0])(opcode_index=len(m.operator_codes) - 1, inputs=[2, len(sg.tensors) - 2],
                                              outputs=[len(sg.tensors) - 1], options_type=options_for("PRELU"),
                                              options=option_defaults(options_for("PRELU")) if options_for("PRELU")
                                              else {}, custom_options=None))
    sg.outputs = [len(sg.tensors) - 1] + ([2] if sum_out else [])
    return write_model(m)


@pytest.mark.parametrize("shape,act", [((1, 8, 8, 32), "NONE"), ((1, 5, 7, 3), "NONE"), ((2, 9, 4, 129), "RELU6"),
                                       ((1, 24, 24, 48), "RELU"), ((1, 3, 256), "NONE"), ((1, 2, 3, 300), "NONE")])
@pytest.mark.parametrize("sum_out", [False, True])
def test_int8_add_prelu_is_tflm_bits_every_level(backend, levels, shape, act, sum_out):  # noqa: F811 (fixture)
    lib, lv = levels
    rng = np.random.default_rng(sum(shape) + sum_out)
    alpha_q = rng.integers(-60, 128, shape[-1]).astype(np.int8)
    model = _add_prelu_int8(shape, act, alpha_q, sum_out)
    feeds = [rng.integers(-128, 128, shape).astype(np.int8) for _ in range(2)]
    want = run_tflm(model, feeds)
    twin = _add_prelu_int8(shape, act, alpha_q, True)  # the ADD's sums, as TFLM computes them
    sums = run_tflm(twin, feeds)[1]
    for level in [0] + lv:
        outs = run_at_level(backend, lib, level, model, feeds, tensors=(2,), num_threads=1)
        y, s = outs[0], outs[-1]  # the model's first output, the ADD's own output tensor
        np.testing.assert_array_equal(y, want[0], err_msg=f"{shape} {act} SIMD level {level}")
        fused = level > 0 and not sum_out and shape[-1] <= 256
        if fused:  # ADD wrote the PRELU's output, never its own
            assert not np.array_equal(s, sums), f"{shape} level {level}: ADD and PRELU ran apart"
        else:
            np.testing.assert_array_equal(s, sums, err_msg=f"{shape} level {level}: the ADD's sums")
