"""Issue 26, session 19: the elementwise / softmax / SVDF fast paths of the C runtime's host build and the ADD -> PRELU
pair made a plan decision. Every fast path here is held to the portable kernel (SIMD level 0, what a board runs) and
to the peer at every SIMD level this CPU runs: integer outputs the same bytes (TFLM the reference), float within the
existing tests' tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model
from tests.peers import PeerCrashed, run_tflm
from tests.simd_common import assert_close_of_range, levels, run_at_level  # noqa: F401 (fixture)

pytestmark = needs_c_runtime


# ------------------------------------------------------------------------------------------ int8 SOFTMAX
def _softmax_int8(shape, scale: float, zp: int, beta: float, out16: bool) -> bytes:
    out = T(shape, "INT16", 1.0 / 65536, -32768) if out16 else T(shape, "INT8", 1.0 / 256, -128)
    return op_model("SOFTMAX", [T(shape, "INT8", scale, zp)], [out], options={"beta": beta})


@pytest.mark.parametrize("shape,scale,zp,beta,out16,spread", [
    ((1, 1000), 0.1, 3, 1.0, False, 128),      # a 1000-class head, every difference 0..255 possible
    ((1, 1000), 0.1, 3, 1.0, False, 6),        # a narrow row: few differences
    ((4, 10), 0.25, -7, 1.0, False, 128),      # keyword_scrambled-like short rows, several of them
    ((2, 3, 257), 0.02, 0, 2.5, False, 128),   # rank 3, beta != 1, a row length past 256
    ((1, 1), 0.1, 0, 1.0, False, 128),         # one element: max == min
    ((3, 100), 0.05, 5, 1.0, True, 128),       # int16 output
    ((1, 1000), 0.9, 0, 1.0, False, 128),      # a large scale: differences beyond the input radius give 0
])
def test_softmax_int8_is_tflm_bytes_at_every_level(backend, levels, shape, scale, zp, beta, out16, spread):  # noqa: F811
    lib, lv = levels
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1] + spread)
    model = _softmax_int8(shape, scale, zp, beta, out16)
    lo = max(-128, zp - spread)
    x = rng.integers(lo, min(128, lo + 2 * spread), shape).astype(np.int8)
    portable = run_at_level(backend, lib, 0, model, [x])[0]
    try:  # TFLM's wrapper aborts on some rows (a narrow 1000-element one): then the portable kernel, TFLM's bytes
        want = run_tflm(model, [x], isolate=True)[0]
    except PeerCrashed:
        want = portable
    np.testing.assert_array_equal(portable, want, err_msg=f"SOFTMAX int8 {shape}: portable vs TFLM")
    for level in lv:
        got = run_at_level(backend, lib, level, model, [x])[0]
        np.testing.assert_array_equal(got, want, err_msg=f"SOFTMAX int8 {shape} level {level}")


# ------------------------------------------------------------------------------ ADD -> PRELU, a plan decision
def _zoo():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import zoo

    return zoo


def _pairs(data: bytes):
    """(ADD node, PRELU node, the ADD's inputs, its output, the PRELU's output) of every PRELU reading an ADD's output."""
    from edge_sdk.model import read_model

    m = read_model(data)
    sg = m.subgraphs[0]
    writer = {t: i for i, op in enumerate(sg.operators) for t in op.outputs}
    out = []
    for i, op in enumerate(sg.operators):
        w = writer.get(op.inputs[0])
        if m.op_name(op) == "PRELU" and w is not None and m.op_name(sg.operators[w]) == "ADD":
            out.append((w, i, tuple(sg.operators[w].inputs), op.inputs[0], op.outputs[0]))
    return out


def _prepared(backend, lib, level, data, **kw):
    lib.edge_simd_set(level)
    try:
        it = backend.CInterpreter(model_content=data, num_threads=1, **kw)
        it.allocate_tensors()
    finally:
        lib.edge_simd_set(-1)
    return it


@pytest.mark.parametrize("dtype", ["int8", "float32"])
@pytest.mark.parametrize("memory", [None, "inplace"])
def test_blazeface_fuses_every_add_prelu_pair_by_plan(backend, levels, dtype, memory):  # noqa: F811
    """The zoo's BlazeFace (16 ADD -> PRELU pairs): at every fast-path level the planner fuses all 16 (the PRELU's
    output at the ADD output's bytes, off both ADD inputs or exactly at one; invoke skips the PRELU: 0 ticks in the
    trace), none at level 0; the outputs are level 0's (int8: the same bytes; float32: within 1e-4 of the range, the
    conv fast paths' FMAs; tests/test_add_prelu_fusion.py holds the fused pass to the two ops' bits); the plan is no
    larger than level 0's."""
    lib, lv = levels
    data = _zoo().build("blazeface", 96, dtype)
    pairs = _pairs(data)
    assert len(pairs) == 16
    kw = {"memory": memory} if memory else {}
    rng = np.random.default_rng(5)
    results, feeds = {}, None
    for level in [0] + lv:
        it = _prepared(backend, lib, level, data, **kw)
        if feeds is None:  # the same feeds at every level
            feeds = [rng.integers(-128, 128, d["shape"]).astype(d["dtype"]) if d["dtype"] == np.int8 else
                     rng.uniform(-1, 1, d["shape"]).astype(d["dtype"]) for d in it.get_input_details()]
        for d, x in zip(it.get_input_details(), feeds):
            it.set_tensor(d["index"], x)
        trace = it.invoke_traced()
        outs = [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]
        plan = it.arena_plan()
        fused = 0
        for add, prelu, ins, y, out in pairs:
            o = plan[(0, out)]
            ticks = next(e["ns"] for e in trace if e["subgraph"] == 0 and e["node"] == prelu)
            if plan[(0, y)].offset == o.offset:  # fused: written at the ADD's step, beside its inputs
                fused += 1
                assert ticks == 0, f"level {level}: the fused PRELU {prelu} ran"
                for t in ins:
                    b = plan[(0, t)]
                    assert b.offset == o.offset or b.end <= o.offset or o.end <= b.offset, (level, add, t)
            else:
                assert ticks > 0, f"level {level}: PRELU {prelu} apart, yet skipped"
        results[level] = (outs, it.plan_info()["tensor_total"])
        assert fused == (16 if level > 0 else 0), f"{dtype} {memory} level {level}: {fused} of 16 pairs fused"
    for level in lv:
        for got, want in zip(results[level][0], results[0][0]):
            if dtype == "int8":
                assert got.tobytes() == want.tobytes(), f"{memory} level {level}: not level 0's bytes"
            else:  # the conv fast paths' FMAs: the float tests' tolerance
                assert_close_of_range(got, want, f"{memory} level {level}", tol=1e-4)
        assert results[level][1] <= results[0][1]


def test_add_output_read_after_the_prelu_keeps_the_pair_apart(backend, levels):  # noqa: F811
    """A second reader of the ADD's output after the PRELU (here a MUL of the sum and the PRELU's output): the ADD's
    output outlives the PRELU, so the planner keeps the two apart (its lifetimes know the readers: no scan at
    prepare) and both kernels run; the outputs are numpy's at every level."""
    from edge_sdk.model import schema
    from edge_sdk.model.types import Buffer, OperatorCode, Tensor
    from edge_sdk.model.writer import option_defaults, options_for, write_model
    from tests.oprunner import op_model_object

    shape = (1, 6, 6, 16)
    m = op_model_object("ADD", [T(shape, "FLOAT32"), T(shape, "FLOAT32")], [T(shape, "FLOAT32", name="sum")],
                        options={"fused_activation_function": "NONE"})
    sg = m.subgraphs[0]
    alpha = np.linspace(-0.5, 1.5, shape[-1]).astype(np.float32)
    m.buffers.append(Buffer(alpha.tobytes()))
    sg.tensors.append(Tensor(name="alpha", shape=(1, 1, shape[-1]), type="FLOAT32", buffer=len(m.buffers) - 1))
    sg.tensors.append(Tensor(name="p", shape=shape, type="FLOAT32", buffer=0))
    sg.tensors.append(Tensor(name="y", shape=shape, type="FLOAT32", buffer=0))

    def operator(op, inputs, outputs):
        m.operator_codes.append(OperatorCode(schema.BUILTIN_OPERATOR_CODES[op], None, 1))
        kind = options_for(op)
        return type(sg.operators[0])(opcode_index=len(m.operator_codes) - 1, inputs=inputs, outputs=outputs,
                                     options_type=kind, options=option_defaults(kind) if kind else {},
                                     custom_options=None)

    n = len(sg.tensors)
    sg.operators.append(operator("PRELU", [2, n - 3], [n - 2]))
    sg.operators.append(operator("MUL", [2, n - 2], [n - 1]))
    sg.outputs = [n - 1]
    data = write_model(m)
    lib, lv = levels
    rng = np.random.default_rng(3)
    x1, x2 = (rng.uniform(-2, 2, shape).astype(np.float32) for _ in range(2))
    s = x1 + x2
    want = s * np.where(s >= 0, s, s * alpha)
    for level in [0] + lv:
        it = _prepared(backend, lib, level, data)
        for d, x in zip(it.get_input_details(), (x1, x2)):
            it.set_tensor(d["index"], x)
        it.invoke()
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), want)
        plan = it.arena_plan()
        assert plan[(0, 2)].offset != plan[(0, n - 2)].offset, f"level {level}: fused with a later reader"


def test_python_plan_is_the_portable_plan_and_the_fused_plan_no_larger(backend, levels):  # noqa: F811
    """The Python interpreter (and the C plan-only run) never fuse: their plan is the C runtime's at level 0 (a board's);
    at a fast-path level the fused pairs' plan is no larger."""
    from edge_sdk.runtime.interpreter import Interpreter

    lib, lv = levels
    data = _zoo().build("blazeface", 96, "int8")
    py = Interpreter(model_content=data)
    py.allocate_tensors()
    c0 = _prepared(backend, lib, 0, data)
    assert c0.plan_info()["tensor_total"] == py.arena_size
    for level in lv:
        assert _prepared(backend, lib, level, data).plan_info()["tensor_total"] <= py.arena_size


# ------------------------------------------------------------------------------------------ int8 SVDF
@pytest.mark.parametrize("state_type", ["INT16", "INT8"])
@pytest.mark.parametrize("n_input,n_filter,n_memory,rank", [(96, 64, 8, 1), (16, 32, 32, 1), (37, 6, 19, 2),
                                                            (33, 6, 1, 3), (16, 8, 2, 2)])
def test_svdf_int8_is_tflm_bytes_at_every_level_over_invokes(backend, levels, state_type, n_input, n_filter, n_memory,
                                                              rank):  # noqa: F811
    """The host build's integer SVDF (prepare's weight sums for the zero points' terms, the new state value apart
    from the time dot product) against TFLM over 4 invokes (the state moving), at every level: the same bytes.
    keyword_scrambled's shapes (96 -> 64 filters x 8, 16 -> 32 x 32) and tails (a memory of 1, 2, 19)."""
    from tests.test_ops_sequence import _svdf_specs

    lib, lv = levels
    rng = np.random.default_rng(n_input * 7 + n_memory)
    ins, outs = _svdf_specs(rng, state_type, batch=2, n_input=n_input, n_filter=n_filter, n_memory=n_memory,
                            rank=rank)
    outs = [T(outs[0].shape, "INT8", 20.0 if state_type == "INT16" else 2.0, -3)]  # sums of these sizes unsaturated
    model = op_model("SVDF", ins, outs, options={"rank": rank, "fused_activation_function": "NONE"})
    feed = rng.integers(-128, 128, ins[0].shape, dtype=np.int8)
    want = run_tflm(model, [feed], isolate=True, invocations=4)[0]
    assert len(np.unique(want)) > 2
    for level in [0] + lv:
        it = _prepared(backend, lib, level, model)
        for _ in range(4):
            it.set_tensor(it.get_input_details()[0]["index"], feed)
            it.invoke()
        np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), want,
                                      err_msg=f"SVDF {state_type} level {level}")
