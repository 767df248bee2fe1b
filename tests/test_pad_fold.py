"""A PAD folded into the CONV_2D / DEPTHWISE_CONV_2D that reads it (edge_sdk.runtime.planner.folded_pads; issue 26):
both runtimes skip the PAD and run the conv on the PAD's input with explicit per-side padding. Held here: the outputs
are the bits of the same model with the PAD kept (its twin: the PAD's output also returned, which the rule never
folds), int8 equals TFLM, float is within LiteRT's reference kernels' rounding; the arena is smaller; the C
runtime's SIMD levels agree with the portable kernels; a PAD of another value, with two readers, or padding more
than the conv's own padding could does not fold.
"""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.model import read_model, write_model
from edge_sdk.model.types import Buffer, Operator, OperatorCode, Tensor
from edge_sdk.model import schema
from edge_sdk.runtime import planner
from tests.conftest import needs_c_runtime
from tests.peers import run_litert, run_tflm
from tests.simd_common import levels, run_at_level  # noqa: F401 (levels: a fixture; backend: tests/conftest.py)
from tests.test_patching import chain_model

# ONNX-style PAD + VALID conv pairs: asymmetric pads, stride 2, depthwise and conv, one after another
CHAINS = {
    "dw_s2_asym": [("pad", 1, 2, 0, 1), ("dw", 3, 2, 1, "VALID")],
    "conv_s2_after_conv": [("conv", 1, 1, 1, "SAME", 8), ("pad", 0, 1, 1, 0), ("conv", 3, 2, 1, "VALID", 8)],
    "two_pairs": [("pad", 1, 1, 1, 1), ("conv", 3, 2, 1, "VALID", 16), ("pad", 0, 1, 0, 1),
                  ("dw", 3, 2, 1, "VALID", "RELU6")],
    "pad_then_same_dilated": [("pad", 1, 0, 0, 1), ("dw", 3, 1, 2, "SAME"), ("conv", 1, 1, 1, "SAME", 4)],
    # a 5x5 window wider than the PAD's 5x4 input (fits only padded: palm-like 5x5 stride-2 depthwise, ONNX pads 2)
    "window_wider_than_its_input": [("conv", 5, 4, 1, "VALID", 32), ("pad", 2, 2, 2, 2), ("dw", 5, 2, 1, "VALID")],
}


def _twin(data: bytes) -> bytes:
    """The model with every PAD's output returned too: the rule folds none of them (the unfolded reference)."""
    m = read_model(data)
    sg = m.subgraphs[0]
    pads = [op.outputs[0] for op in sg.operators if m.op_name(op) in ("PAD", "PADV2")]
    m.subgraphs[0] = dataclasses.replace(sg, outputs=list(sg.outputs) + pads)
    return write_model(m)


def _feed(data: bytes, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = read_model(data)
    t = m.subgraphs[0].tensors[m.subgraphs[0].inputs[0]]
    if t.type == "FLOAT32":
        return rng.standard_normal(t.shape).astype(np.float32)
    return rng.integers(-128, 128, t.shape).astype(np.int8)


def _run(data: bytes, x: np.ndarray, backend_name: str):
    it = Interpreter(model_content=data, backend=backend_name)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    out = it.get_tensor(it.get_output_details()[0]["index"]).copy()
    arena = it.arena_size if backend_name == "c" else it.arena_plan().total
    return out, arena, it


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint8)


@pytest.mark.parametrize("runtime", ["python", pytest.param("c", marks=needs_c_runtime)])
@pytest.mark.parametrize("dtype", ["INT8", "FLOAT32"])
@pytest.mark.parametrize("chain", list(CHAINS))
def test_folded_pad_same_bits_smaller_arena(chain, dtype, runtime):
    data = chain_model(CHAINS[chain], dtype=dtype)
    m = read_model(data)
    folds = planner.folded_pads(m, planner.declared_infos(m))
    n_pads = sum(layer[0] == "pad" for layer in CHAINS[chain])
    assert len(folds) == n_pads
    twin = _twin(data)
    assert planner.folded_pads(read_model(twin), planner.declared_infos(read_model(twin))) == []
    x = _feed(data)
    got, arena, it = _run(data, x, runtime)
    want, twin_arena, _ = _run(twin, x, runtime)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    assert arena < twin_arena, (arena, twin_arena)
    assert it.folded_pads() == [(0, f.pad) for f in folds]  # both interpreter types answer it
    if runtime == "python":
        # the plan: no buffer for a folded PAD's output
        assert not any(b.key == (0, f.output) for f in folds for b in it.arena_plan().buffers)
    if dtype == "INT8":
        np.testing.assert_array_equal(got, run_tflm(data, [x])[0])
    else:
        ref = run_litert(data, [x])[0]
        span = float(ref.max() - ref.min())
        assert float(np.abs(got - ref).max()) <= 1e-4 * span


@needs_c_runtime
@pytest.mark.parametrize("dtype", ["INT8", "FLOAT32"])
def test_folded_pad_every_simd_level(backend, levels, dtype):  # noqa: F811 (fixtures)
    """The C runtime's fast paths take the explicit padding: at every SIMD level the folded model gives the bits of
    its unfolded twin at that level (the portable kernels at level 0)."""
    lib, lv = levels
    for chain in ("dw_s2_asym", "two_pairs", "pad_then_same_dilated"):
        data = chain_model(CHAINS[chain], shape=(1, 21, 18, 16), dtype=dtype, seed=5)
        x = _feed(data)
        for level in [0] + lv:
            got = run_at_level(backend, lib, level, data, [x])[0]
            want = run_at_level(backend, lib, level, _twin(data), [x])[0]
            np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{chain} SIMD level {level}")


def _with_pad_value(data: bytes, value) -> bytes:
    """The first PAD as a PADV2 with a constant ``value``."""
    m = read_model(data)
    sg = m.subgraphs[0]
    i = next(k for k, op in enumerate(sg.operators) if m.op_name(op) == "PAD")
    x = sg.tensors[sg.operators[i].inputs[0]]
    m.buffers.append(Buffer(np.asarray([value], x.dtype).tobytes()))
    sg.tensors.append(Tensor("pad_value", (), x.type, len(m.buffers) - 1, x.quantization))
    m.operator_codes.append(OperatorCode(schema.BUILTIN_OPERATOR_CODES["PADV2"], None, 1))
    op = sg.operators[i]
    sg.operators[i] = Operator(opcode_index=len(m.operator_codes) - 1, inputs=list(op.inputs) + [len(sg.tensors) - 1],
                               outputs=op.outputs, options_type="PadV2Options", options={})
    return write_model(m)


def _with_second_reader(data: bytes) -> bytes:
    """The first PAD's output read again by a RELU whose output is returned."""
    m = read_model(data)
    sg = m.subgraphs[0]
    i = next(k for k, op in enumerate(sg.operators) if m.op_name(op) == "PAD")
    y = sg.operators[i].outputs[0]
    t = sg.tensors[y]
    sg.tensors.append(Tensor("relu", t.shape, t.type, 0, t.quantization))
    m.operator_codes.append(OperatorCode(schema.BUILTIN_OPERATOR_CODES["RELU"], None, 1))
    sg.operators.append(Operator(opcode_index=len(m.operator_codes) - 1, inputs=[y], outputs=[len(sg.tensors) - 1]))
    m.subgraphs[0] = dataclasses.replace(sg, outputs=list(sg.outputs) + [len(sg.tensors) - 1])
    return write_model(m)


@pytest.mark.parametrize("dtype", ["INT8", "FLOAT32"])
def test_pads_the_rule_keeps(dtype):
    """Not folded: a PADV2 whose value is not the conv's padding value (1.0; the zero point + 1), a PAD output with
    a second reader, padding beyond the conv's effective filter - 1 (a 3x3 conv after 2 rows above). A PADV2 of the
    conv's own value folds."""
    data = chain_model(CHAINS["dw_s2_asym"], dtype=dtype)
    zp = int(read_model(data).subgraphs[0].tensors[0].quantization.zero_point[0]) if dtype == "INT8" else 0
    cases = {
        "other value": _with_pad_value(data, 1.0 if dtype == "FLOAT32" else zp + 1),
        "negative zero": _with_pad_value(data, -0.0) if dtype == "FLOAT32" else None,
        "two readers": _with_second_reader(data),
        "too much padding": chain_model([("pad", 3, 0, 0, 0), ("conv", 3, 2, 1, "VALID", 4)], dtype=dtype),
    }
    for what, model in cases.items():
        if model is None:
            continue
        m = read_model(model)
        assert planner.folded_pads(m, planner.declared_infos(m)) == [], what
    same = _with_pad_value(data, 0.0 if dtype == "FLOAT32" else zp)
    m = read_model(same)
    assert len(planner.folded_pads(m, planner.declared_infos(m))) == 1
    x = _feed(data)
    for model in [cases["other value"], same]:  # both runtimes agree with the peers, folded or not
        for runtime in ("python", "c"):
            got = _run(model, x, runtime)[0]
            if dtype == "INT8":
                np.testing.assert_array_equal(got, run_tflm(model, [x])[0])
            else:
                ref = run_litert(model, [x])[0]
                assert float(np.abs(got - ref).max()) <= 1e-4 * float(ref.max() - ref.min())


@pytest.mark.parametrize("runtime", ["python", pytest.param("c", marks=needs_c_runtime)])
def test_folded_pad_depthwise_runs_in_place(runtime):
    """Under the in-place plan an int8 depthwise reading a folded PAD runs in place over the PAD's input (as it ran
    over the PAD's output before the fold; mobilenet_v2 on the QEMU board: 1,553,960 B in place before the fold):
    the same bits as the layer plan, a smaller arena."""
    data = chain_model([("conv", 1, 1, 1, "SAME", 16), ("pad", 1, 1, 1, 1), ("dw", 3, 1, 1, "VALID", "RELU6"),
                        ("conv", 1, 1, 1, "SAME", 8)], shape=(1, 24, 20, 8), dtype="INT8", seed=4)
    x = _feed(data)
    figures, outs = {}, {}
    for memory in ("layer", "inplace"):
        it = Interpreter(model_content=data, backend=runtime, memory=memory)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        outs[memory] = it.get_tensor(it.get_output_details()[0]["index"]).copy()
        figures[memory] = (it.arena_size, it.memory_plan)
    np.testing.assert_array_equal(outs["inplace"], outs["layer"])
    np.testing.assert_array_equal(outs["layer"], run_tflm(data, [x])[0])
    assert figures["inplace"][1] == "inplace" and figures["inplace"][0] < figures["layer"][0], figures
    m = read_model(data)
    infos = planner.declared_infos(m)
    spans: dict = {}
    requests = planner.buffer_requests(m, infos, spans=spans)
    fold = planner.folded_pads(m, infos)[0]
    conv_out = m.subgraphs[0].operators[fold.conv].outputs[0]
    assert planner.inplace_aliases(m, infos, requests, spans)[(0, conv_out)] == (0, fold.source)


@pytest.mark.slow
@needs_c_runtime
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_folded_pads_on_cortex_m4_under_qemu(tmp_path):
    """The Cortex-M4 image (its DSP conv / depthwise loops on the explicit padding) == Python on folded int8 chains,
    with the layer plan's kernels and the least-RAM request's (EDGE_INIT_MEMORY_MIN: the depthwise in place over the
    PAD's input)."""
    from tests.oprunner import m4_image_mismatches

    models = {f"padfold_{c}": chain_model(CHAINS[c], dtype="INT8") for c in ("dw_s2_asym", "two_pairs")}
    models["padfold_inplace"] = chain_model([("conv", 1, 1, 1, "SAME", 16), ("pad", 1, 1, 1, 1),
                                             ("dw", 3, 1, 1, "VALID", "RELU6"), ("conv", 1, 1, 1, "SAME", 8)],
                                            shape=(1, 24, 20, 8), dtype="INT8", seed=4)
    for flags in (0, 2):
        failures = m4_image_mismatches(models, tmp_path / f"b{flags}", init_flags=flags)
        assert not failures, f"M4 (init flags {flags}) output differs from Python on {failures}"
