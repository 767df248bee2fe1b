"""float32 ADD followed by PRELU in one pass on the C runtime's host build (issue 26: palm_detection spends 19% of its
C time in such pairs): edge.c's edge_add_prelu_next decides (the ADD's output read by the next node alone, no
broadcast, a constant slope per channel), add.c writes the PRELU's output, prelu.c's eval then has nothing to do.
The same bits as the two ops apart (numpy's float32 sum, clamp and multiply), LiteRT within 1e-4 of the range; when
fused the planner puts the PRELU's output at the ADD output's bytes (edge.c add_prelu_groups: the test that fails
without the fusion); an ADD output with a second reader, or returned by the model, keeps both ops apart."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.model import schema
from edge_sdk.model.types import Buffer, OperatorCode, Quantization, Tensor
from edge_sdk.model.writer import option_defaults, options_for, write_model
from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model_object
from tests.peers import run_litert

pytestmark = needs_c_runtime


def _operator(m, op: str, inputs, outputs):
    m.operator_codes.append(OperatorCode(schema.BUILTIN_OPERATOR_CODES[op], None, 1))
    kind = options_for(op)
    return type(m.subgraphs[0].operators[0])(opcode_index=len(m.operator_codes) - 1, inputs=inputs, outputs=outputs,
                                             options_type=kind, options=option_defaults(kind) if kind else {},
                                             custom_options=None)


def _add_prelu(shape, act: str, alpha: np.ndarray, sum_out: bool, dequantized: bool) -> bytes:
    """x1 + x2 (fused activation act) -> PRELU(alpha over the last axis); sum_out: the sum a model output too;
    dequantized: the slopes an int8 constant's DEQUANTIZE between the two (palm_detection's form; folded at
    prepare)."""
    m = op_model_object("ADD", [T(shape, "FLOAT32"), T(shape, "FLOAT32")], [T(shape, "FLOAT32", name="sum")],
                        options={"fused_activation_function": act})
    sg = m.subgraphs[0]
    ashape = (1, 1, shape[-1]) if len(shape) >= 3 else (shape[-1],)
    if dequantized:  # alpha = q / 64, exact in float32: the slopes the expected values use
        q = np.clip(np.round(alpha / 0.015625), -127, 127).astype(np.int8)
        alpha[:] = q.astype(np.float32) * np.float32(0.015625)
        m.buffers.append(Buffer(q.tobytes()))
        sg.tensors.append(Tensor(name="alpha_q", shape=ashape, type="INT8", buffer=len(m.buffers) - 1,
                                 quantization=Quantization(scale=np.array([0.015625], np.float32), zero_point=np.array([0], np.int64))))
        sg.tensors.append(Tensor(name="alpha", shape=ashape, type="FLOAT32", buffer=0))
        sg.operators.append(_operator(m, "DEQUANTIZE", [len(sg.tensors) - 2], [len(sg.tensors) - 1]))
    else:
        m.buffers.append(Buffer(alpha.astype(np.float32).tobytes()))
        sg.tensors.append(Tensor(name="alpha", shape=ashape, type="FLOAT32", buffer=len(m.buffers) - 1))
    sg.tensors.append(Tensor(name="y", shape=shape, type="FLOAT32", buffer=0))
    sg.operators.append(_operator(m, "PRELU", [2, len(sg.tensors) - 2], [len(sg.tensors) - 1]))
    sg.outputs = [len(sg.tensors) - 1] + ([2] if sum_out else [])
    return write_model(m)


def _expected(x1, x2, alpha, act):
    s = x1 + x2  # float32
    if act == "RELU6":
        s = np.minimum(np.maximum(s, np.float32(0)), np.float32(6))
    return np.where(s >= 0, s, s * alpha.astype(np.float32)).astype(np.float32)


@pytest.mark.parametrize("shape,act", [((1, 8, 8, 32), "NONE"), ((1, 5, 7, 3), "NONE"), ((2, 9, 4, 129), "RELU6"),
                                       ((1, 24, 24, 48), "NONE"), ((1, 3, 4000), "NONE")])
@pytest.mark.parametrize("sum_out,dequantized", [(False, False), (True, False), (False, True)])
def test_add_prelu_is_the_two_ops_bits(backend, shape, act, sum_out, dequantized):
    rng = np.random.default_rng(sum(shape))
    alpha = rng.uniform(-0.5, 1.5, shape[-1]).astype(np.float32)
    model = _add_prelu(shape, act, alpha, sum_out, dequantized)
    x1 = rng.uniform(-4, 4, shape).astype(np.float32)
    x2 = rng.uniform(-4, 4, shape).astype(np.float32) + np.float32(1e-3)
    it = backend.CInterpreter(model_content=model, num_threads=1)
    it.allocate_tensors()
    ins = it.get_input_details()
    it.set_tensor(ins[0]["index"], x1)
    it.set_tensor(ins[1]["index"], x2)
    it.invoke()
    outs = it.get_output_details()
    y = it.get_tensor(outs[0]["index"])
    want = _expected(x1, x2, alpha, act)
    assert y.tobytes() == want.tobytes(), f"{shape} {act}: not the two ops' bits"
    lite = run_litert(model, [x1, x2])[0]
    assert np.max(np.abs(lite - y)) <= 1e-4 * max(1.0, float(np.ptp(want)))
    s = it.get_tensor(2)
    if sum_out:  # returned by the model: ADD writes it, PRELU runs apart
        np.testing.assert_array_equal(s, _expected(x1, x2, np.ones_like(alpha), act))
    elif backend.library().edge_simd_level() > 0:  # fused: the planner gave the PRELU's output the sum's bytes
        plan = it.arena_plan()
        assert plan[(0, 2)].offset == plan[(0, outs[0]["index"])].offset, "ADD and PRELU planned apart"
        np.testing.assert_array_equal(s, y)
