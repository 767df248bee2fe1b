"""The in-place plan (memory="inplace"; the least-RAM plan memory="min" without a patch stage): in-place RESHAPE,
PAD and int8 depthwise in both runtimes.

A RESHAPE's output shares its input's bytes and a PAD writes its output over its input when the input dies at
that node (edge_sdk.runtime.planner.inplace_aliases; firmware_c/src/edge.c inplace_groups). The outputs are
bit-exact with the layer-by-layer plan in the Python interpreter and the C runtime, and the C plan is identical
to Python's, entry by entry.
"""

from __future__ import annotations

import json

import shutil

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.model import schema
from edge_sdk.model.types import Buffer, Model, Operator, OperatorCode, Quantization, SubGraph, Tensor
from edge_sdk.model.writer import option_defaults, options_for, write_model
from tests.conftest import needs_c_runtime, shared_model



def _chain_model(dtype: str = "INT8", shape=(1, 4, 5, 3), pads=((0, 0), (1, 1), (2, 1), (0, 0)),
                 value: float | None = None) -> bytes:
    """input -> RELU -> PAD (PADV2 with a value) -> RESHAPE -> output: the PAD and the RESHAPE run in place under
    memory="inplace" (their inputs are no subgraph input and die there; an output may join a group)."""
    q = Quantization(np.array([0.05], np.float32), np.array([3], np.int64)) if dtype == "INT8" else None
    padded = tuple(d + a + b for d, (a, b) in zip(shape, pads))
    flat = (1, int(np.prod(padded)))
    np_t = np.int8 if dtype == "INT8" else np.float32
    tensors = [Tensor("x", shape, dtype, 0, q), Tensor("r1", shape, dtype, 0, q),
               Tensor("paddings", (len(shape), 2), "INT32", 1), Tensor("padded", padded, dtype, 0, q),
               Tensor("new_shape", (2,), "INT32", 2), Tensor("flat", flat, dtype, 0, q)]
    buffers = [Buffer(b""), Buffer(np.array(pads, np.int32).tobytes()), Buffer(np.array(flat, np.int32).tobytes())]
    pad_inputs = [1, 2]
    pad_op = "PAD"
    if value is not None:
        pad_op = "PADV2"
        v = np.array([round(value / 0.05) + 3 if dtype == "INT8" else value], np_t)
        tensors.append(Tensor("value", (1,), dtype, 3, q))
        buffers.append(Buffer(v.tobytes()))
        pad_inputs = [1, 2, 6]
    codes = [OperatorCode(schema.BUILTIN_OPERATOR_CODES[n], None, 1) for n in ("RELU", pad_op, "RESHAPE")]

    def op(code, name, inputs, outputs, options=None):
        t = options_for(name)
        opts = option_defaults(t) if t is not None else {}
        opts.update(options or {})
        return Operator(opcode_index=code, inputs=inputs, outputs=outputs, options_type=t, options=opts)

    ops = [op(0, "RELU", [0], [1]), op(1, pad_op, pad_inputs, [3]),
           op(2, "RESHAPE", [3, 4], [5], {"new_shape": list(flat)})]
    sg = SubGraph(tensors=tensors, inputs=[0], outputs=[5], operators=ops, name="main")
    return write_model(Model(operator_codes=codes, subgraphs=[sg], buffers=buffers, description="memory=inplace test"))


def _plan_tuples(plan):
    return [(b.key, b.offset, b.size, b.first_use, b.last_use) for b in plan.buffers], plan.total


def _run(data: bytes, memory: str, backend: str, feeds):
    it = Interpreter(model_content=data, memory=memory, backend=backend)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], x)
    it.invoke()
    return it, [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def _feeds(data: bytes, seed: int = 0):
    rng = np.random.default_rng(seed)
    it = Interpreter(model_content=data)
    out = []
    for d in it.get_input_details():
        if d["dtype"] == np.float32:
            out.append(rng.standard_normal(d["shape"]).astype(np.float32))
        else:
            info = np.iinfo(d["dtype"])
            out.append(rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]))
    return out


CASES = {
    "int8_pad": dict(),
    "float32_padv2_value": dict(dtype="FLOAT32", value=-1.5),
    "int8_rank2": dict(shape=(6, 7), pads=((2, 3), (1, 0))),
    "int8_no_padding": dict(shape=(1, 3, 3, 2), pads=((0, 0), (0, 0), (0, 0), (0, 0))),
    "int8_padv2_channels": dict(shape=(1, 2, 3, 4), pads=((0, 0), (0, 1), (1, 0), (2, 3)), value=0.5),
}


@pytest.mark.parametrize("case", list(CASES))
def test_python_inplace_plan_in_place_and_bit_exact(case):
    data = _chain_model(**CASES[case])
    feeds = _feeds(data)
    layer, want = _run(data, "layer", "python", feeds)
    small, got = _run(data, "inplace", "python", feeds)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    plan = small.arena_plan()
    off = {b.name: b.offset for b in plan.buffers}
    if case == "int8_no_padding":  # the input's RELU step (x and r1) is the peak of both plans: in place would
        # save nothing, so memory="inplace" keeps the layer plan
        assert small.memory_plan == "layer" and _plan_tuples(plan) == _plan_tuples(layer.arena_plan())
        return
    assert small.memory_plan == "inplace" and off["r1"] == off["padded"] == off["flat"]  # PAD over its input, RESHAPE
    assert small.arena_size < layer.arena_size  # an alias
    # in the layer plan the three have bytes of their own
    lay = {b.name: b.offset for b in layer.arena_plan().buffers}
    assert len({lay["r1"], lay["padded"], lay["flat"]}) >= 2
    assert np.any(want[0] != want[0].flat[0])  # a real result (the RELU of random data, padded), not a constant


@needs_c_runtime
@pytest.mark.parametrize("case", list(CASES))
def test_c_inplace_plan_identical_to_python_and_bit_exact(case):
    data = _chain_model(**CASES[case])
    feeds = _feeds(data, 1)
    _, want = _run(data, "layer", "python", feeds)
    py, _ = _run(data, "inplace", "python", feeds)
    c, got = _run(data, "inplace", "c", feeds)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert _plan_tuples(c.arena_plan()) == _plan_tuples(py.arena_plan())
    assert c.memory_plan == py.memory_plan == ("layer" if case == "int8_no_padding" else "inplace")
    c_layer, got_layer = _run(data, "layer", "c", feeds)
    assert c_layer.memory_plan == "layer"
    for a, b in zip(got_layer, want):
        np.testing.assert_array_equal(a, b)
    assert c.plan_info()["tensor_total"] == py.arena_size <= c_layer.plan_info()["tensor_total"]


def test_memory_argument_is_checked():
    data = _chain_model()
    with pytest.raises(ValueError, match="memory must be one of 'layer', 'inplace', 'min', not 'tiny'"):
        Interpreter(model_content=data, memory="tiny")


def test_model_input_and_output_never_in_place():
    """A PAD reading the model's input (or writing into an output read later) keeps its own bytes: the caller's
    input stays readable."""
    data = _chain_model()
    it = Interpreter(model_content=data, memory="inplace")
    it.allocate_tensors()
    model = it.model
    # drop the first RELU: PAD now reads the model input
    sg = model.subgraphs[0]
    sg.operators = sg.operators[1:]
    sg.operators[0].inputs[0] = 0
    it2 = Interpreter(model=model, memory="inplace")
    it2.allocate_tensors()
    names = {b.name: b.offset for b in it2.arena_plan().buffers}
    assert names["x"] != names["padded"] and names["padded"] == names["flat"]
    feeds = _feeds(write_model(model))
    it3 = Interpreter(model=model)
    it3.allocate_tensors()
    for run in (it2, it3):
        run.set_tensor(run.get_input_details()[0]["index"], feeds[0])
        run.invoke()
    np.testing.assert_array_equal(it2.get_tensor(it2.get_output_details()[0]["index"]),
                                  it3.get_tensor(it3.get_output_details()[0]["index"]))
    np.testing.assert_array_equal(it2.get_tensor(it2.get_input_details()[0]["index"]), feeds[0])


@pytest.mark.slow
@needs_c_runtime
def test_mobilenet_v2_inplace_plan():
    """MobileNetV2 224x224 (PyTorch export: explicit PADs): the in-place plan is bit-exact with the layer plan
    in both runtimes, identical between them, and needs about 0.63x the layer plan's tensor bytes."""
    data = shared_model("tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite").read_bytes()
    feeds = _feeds(data, 2)
    layer, want = _run(data, "layer", "python", feeds)
    py, got_py = _run(data, "inplace", "python", feeds)
    c, got_c = _run(data, "inplace", "c", feeds)
    for a, b, w in zip(got_py, got_c, want):
        np.testing.assert_array_equal(a, w)
        np.testing.assert_array_equal(b, w)
    assert _plan_tuples(c.arena_plan()) == _plan_tuples(py.arena_plan())
    from edge_sdk.model import read_model
    from edge_sdk.runtime.planner import folded_pads, tensor_infos

    model = read_model(data)
    infos = tensor_infos(model, 0)
    folds = folded_pads(model, [infos])
    reads = {(f.conv, f.output): f.source for f in folds}  # a conv of a folded PAD reads the PAD's input
    nbytes = lambda t: int(np.prod(infos[t].shape)) * infos[t].dtype.itemsize  # noqa: E731
    # the layer plan's peak is the stride-2 depthwise conv at 112x112x96 (input + output, 1,505,280 B), which the
    # in-place plan runs within its input; what is left is the 1x1 expansion 16 -> 96 at 112x112 before it
    floor = max(sum(nbytes(t) for t in {*(reads.get((i, t), t) for t in op.inputs), *op.outputs}
                    if t >= 0 and not infos[t].is_const)
                for i, op in enumerate(model.subgraphs[0].operators)
                if i not in {f.pad for f in folds} and model.op_name(op) != "DEPTHWISE_CONV_2D")
    assert py.arena_size == floor < layer.arena_size, (py.arena_size, floor, layer.arena_size)


def test_check_picks_the_inplace_plan_when_the_layer_plan_does_not_fit(tmp_path):
    from edge_sdk.targets.check import RUNS, check_model, format_check

    data = _chain_model(shape=(1, 16, 16, 8))
    layer = check_model(data, "qemu-mps2-an386", memory="layer")
    small = check_model(data, "qemu-mps2-an386", memory="inplace")
    assert layer.memory_plan == "layer" and small.memory_plan == "inplace" and small.arena_bytes < layer.arena_bytes
    budget = (small.arena_bytes + layer.arena_bytes) // 2
    profile = tmp_path / "tight.toml"
    profile.write_text(f'extends = "qemu-mps2-an386"\nram_arena_bytes = {budget}\n')
    auto = check_model(data, profile)
    assert auto.verdict == RUNS and auto.memory_plan == "inplace" and auto.arena_bytes == small.arena_bytes
    assert auto.plans == {"layer": layer.arena_bytes, "inplace": small.arena_bytes} and auto.extra_macs == 0
    assert "in-place plan, +0 MACs" in format_check(auto) and auto.to_dict()["memory_plan"] == "inplace"
    forced = check_model(data, profile, memory="layer")
    assert forced.verdict == "fails" and forced.memory_plan == "layer"
    roomy = check_model(data, "qemu-mps2-an386")  # fits: the layer plan, nothing else computed
    assert roomy.memory_plan == "layer" and list(roomy.plans) == ["layer"]


def test_inspect_shows_both_plans():
    from edge_sdk.tools.inspection import format_inspection, inspect_model

    data = _chain_model(shape=(1, 16, 16, 8))
    report = inspect_model(data)
    layer = Interpreter(model_content=data)
    layer.allocate_tensors()
    small = Interpreter(model_content=data, memory="inplace")
    small.allocate_tensors()
    assert report["arena"]["bytes"] == layer.arena_size and report["arena"]["inplace_bytes"] == small.arena_size
    text = format_inspection(report)
    assert f"in-place plan (--memory inplace: in-place ops, +0 MACs) {small.arena_size} bytes" in text


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                    reason="needs qemu-system-arm and arm-none-eabi-gcc (make system-deps)")
def test_flash_and_profile_inplace_plan_on_the_qemu_board(state, tmp_path):
    """edge flash --memory inplace builds the firmware with EDGE_INIT_MEMORY_MIN and a smaller arena; edge profile
    runs it on the QEMU board and its outputs equal the host interpreter's (validated)."""
    from edge_sdk.tools.flash import flash
    from edge_sdk.tools.profile import profile_model

    model = tmp_path / "chain.tflite"
    model.write_bytes(_chain_model(shape=(1, 32, 32, 8)))
    layer = flash(model, "qemu-mps2-an386", build_dir=tmp_path / "fw-layer", memory="layer")
    from edge_sdk.device import qemu_board as qb

    qb.stop_board(all=True)
    small = flash(model, "qemu-mps2-an386", build_dir=tmp_path / "fw-min", memory="inplace")
    assert small.memory == "inplace" and layer.memory == "layer" and small.arena_bytes < layer.arena_bytes
    assert "EDGE_INIT_MEMORY_MIN" in (tmp_path / "fw-min" / "gen" / "app_config.h").read_text()
    r = profile_model(model, "qemu-mps2-an386", port=small.port, runs=2)
    assert r["validated"] is True and r["mismatches"] == []
    assert 0 < r["arena_high_water"] <= small.arena_bytes


def test_memory_plan_property():
    data = _chain_model()
    layer = Interpreter(model_content=data)
    small = Interpreter(model_content=data, memory="inplace")
    assert layer.memory_plan is None and small.memory_plan is None  # before allocate_tensors
    layer.allocate_tensors()
    small.allocate_tensors()
    assert layer.memory_plan == "layer" and small.memory_plan == "inplace"


def dw_chain_graph(shape, oshape, w, bias, qx, qw, qb, qy, stride: int, padding: str, dil_h: int = 1,
                   description: str = "dw in place") -> bytes:
    """input [N, H, W, 1] -> CONCATENATION of C copies (``shape`` [N, H, W, C]) -> DEPTHWISE_CONV_2D (``w``
    [1, KH, KW, C] int8, ``bias`` int32, multiplier 1, dilation_h_factor ``dil_h``) -> ``oshape`` -> MAX_POOL_2D 2x2 / 2
    -> output: the depthwise step is the layer plan's peak and its input dies there, so the in-place plan runs it
    over that input (also tests/test_dw_in_place_dsp.py's models)."""
    n, _, _, c = oshape
    pshape = (n, oshape[1] // 2, oshape[2] // 2, c)
    tensors = [Tensor("x", tuple(shape[:3]) + (1,), "INT8", 0, qx), Tensor("r1", tuple(shape), "INT8", 0, qx),
               Tensor("w", tuple(w.shape), "INT8", 1, qw), Tensor("b", (c,), "INT32", 2, qb),
               Tensor("dw", tuple(oshape), "INT8", 0, qy), Tensor("y", pshape, "INT8", 0, qy)]
    codes = [OperatorCode(schema.BUILTIN_OPERATOR_CODES[k], None, v)
             for k, v in (("CONCATENATION", 1), ("DEPTHWISE_CONV_2D", 3), ("MAX_POOL_2D", 1))]

    def options(name, **kw):
        t = options_for(name)
        opts = option_defaults(t)
        opts.update(kw)
        return dict(options_type=t, options=opts)

    ops = [Operator(opcode_index=0, inputs=[0] * c, outputs=[1], **options("CONCATENATION", axis=3)),
           Operator(opcode_index=1, inputs=[1, 2, 3], outputs=[4],
                    **options("DEPTHWISE_CONV_2D", padding=padding, stride_w=stride, stride_h=stride,
                              dilation_h_factor=dil_h, depth_multiplier=1)),
           Operator(opcode_index=2, inputs=[4], outputs=[5],
                    **options("MAX_POOL_2D", padding="VALID", stride_w=2, stride_h=2, filter_width=2,
                              filter_height=2))]
    sg = SubGraph(tensors=tensors, inputs=[0], outputs=[5], operators=ops, name="main")
    return write_model(Model(operator_codes=codes, subgraphs=[sg],
                             buffers=[Buffer(b""), Buffer(w.tobytes()), Buffer(bias.tobytes())],
                             description=description))


def _dw_chain_model(stride: int, padding: str, shape=(1, 9, 11, 12), batch: int = 1, k: int = 3) -> bytes:
    """dw_chain_graph with a k x k filter of per-channel int8 weights and a bias."""
    rng = np.random.default_rng(stride * 10 + len(padding))
    shape = (batch,) + tuple(shape[1:])
    c = shape[3]
    qx = Quantization(np.array([0.04], np.float32), np.array([-5], np.int64))
    qy = Quantization(np.array([0.09], np.float32), np.array([7], np.int64))
    qw = Quantization(rng.uniform(0.002, 0.02, c).astype(np.float32), np.zeros(c, np.int64), 3)
    qb = Quantization((0.04 * qw.scale).astype(np.float32), np.zeros(c, np.int64))
    def out_dim(n):
        return (n + stride - 1) // stride if padding == "SAME" else (n - k) // stride + 1
    oshape = (batch, out_dim(shape[1]), out_dim(shape[2]), c)
    w = rng.integers(-127, 128, (1, k, k, c)).astype(np.int8)
    b = rng.integers(-2000, 2000, c).astype(np.int32)
    return dw_chain_graph(shape, oshape, w, b, qx, qw, qb, qy, stride, padding)


@needs_c_runtime
@pytest.mark.parametrize("stride,padding,batch,k", [(1, "SAME", 1, 3), (2, "SAME", 1, 3), (1, "VALID", 1, 3),
                                                    (2, "VALID", 2, 3), (3, "SAME", 2, 3), (1, "SAME", 1, 5),
                                                    (2, "SAME", 1, 7)])
def test_depthwise_in_place_bit_exact_in_both_runtimes(stride, padding, batch, k):
    """k 5: the most taps the C in-place loop stages on the stack (DW_PLANE_TAPS); k 7 reads them in place."""
    data = _dw_chain_model(stride, padding, batch=batch, k=k)
    feeds = _feeds(data, 4)
    _, want = _run(data, "layer", "python", feeds)
    py, got_py = _run(data, "inplace", "python", feeds)
    c, got_c = _run(data, "inplace", "c", feeds)
    off = {b.name: b.offset for b in py.arena_plan().buffers}
    assert py.memory_plan == "inplace" and off["r1"] == off["dw"]  # the depthwise output over its input
    for a, b, w in zip(got_py, got_c, want):
        np.testing.assert_array_equal(a, w)
        np.testing.assert_array_equal(b, w)
    assert _plan_tuples(c.arena_plan()) == _plan_tuples(py.arena_plan())
    assert len(np.unique(want[0])) > 5  # a real convolution result


def test_cli_check_memory_flag(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    model = tmp_path / "chain.tflite"
    model.write_bytes(_chain_model(shape=(1, 16, 16, 8)))
    root = Path(__file__).resolve().parent.parent
    env = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}
    out = {}
    for memory in ("layer", "inplace"):
        proc = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "check", str(model), "--target",
                               "qemu-mps2-an386", "--memory", memory, "--json"], capture_output=True, text=True,
                              env=env, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        out[memory] = json.loads(proc.stdout)
    assert out["layer"]["memory_plan"] == "layer" and out["inplace"]["memory_plan"] == "inplace"
    assert out["inplace"]["arena_bytes"] < out["layer"]["arena_bytes"] and out["inplace"]["extra_macs"] == 0
    proc = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "check", str(model), "--target", "qemu-mps2-an386",
                           "--memory", "tiny"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 2 and "invalid choice: 'tiny'" in proc.stderr


def test_depthwise_not_in_place_when_its_kernel_cannot():
    """float32, or a depth multiplier above 1 (more output than input channels): the layer plan's placement."""
    from edge_sdk.runtime.planner import buffer_requests, inplace_aliases

    data = _dw_chain_model(1, "SAME")
    it = Interpreter(model_content=data, memory="inplace")
    it.allocate_tensors()
    model = it.model
    spans: dict = {}
    infos = it._p.infos
    reqs = buffer_requests(model, infos, spans=spans)
    assert (0, 4) in inplace_aliases(model, infos, reqs, spans)  # int8, M == 1: in place
    wide = [list(row) for row in infos]
    from dataclasses import replace

    wide[0][4] = replace(infos[0][4], shape=(1, 9, 11, 24))  # M == 2
    assert (0, 4) not in inplace_aliases(model, wide, buffer_requests(model, wide, spans=spans), spans)
    flt = [list(row) for row in infos]
    flt[0][1] = replace(infos[0][1], type="FLOAT32", dtype=np.dtype(np.float32))
    flt[0][4] = replace(infos[0][4], type="FLOAT32", dtype=np.dtype(np.float32))
    assert (0, 4) not in inplace_aliases(model, flt, buffer_requests(model, flt, spans=spans), spans)


@needs_c_runtime
def test_inplace_plan_never_larger_than_the_layer_plan():
    """When in-place groups make the greedy placement larger than the layer plan's (this conv chain: the
    depthwise convolutions' groups), both runtimes use the layer plan under memory="inplace", say so in
    memory_plan, plan byte-identically and stay bit-exact."""
    from tests.test_patching import _c_chain, chain_model

    from edge_sdk.runtime import arena as _arena
    from edge_sdk.runtime.planner import buffer_requests, inplace_aliases

    data = chain_model(_c_chain("same_s1_s2"), shape=(1, 40, 40, 3), seed=4)
    layer = Interpreter(model_content=data)
    layer.allocate_tensors()
    p = layer._p  # the grouped plan alone is larger here (what the fallback guards against)
    spans: dict = {}
    reqs = buffer_requests(layer._model, p.infos, spans=spans)
    grouped = _arena.plan_aliased(reqs, inplace_aliases(layer._model, p.infos, reqs, spans))
    assert grouped.total > layer.arena_size
    feeds = _feeds(data, 2)
    _, want = _run(data, "layer", "python", feeds)
    py, got = _run(data, "inplace", "python", feeds)
    assert py.memory_plan == "layer" and py.arena_size == layer.arena_size
    c, got_c = _run(data, "inplace", "c", feeds)
    c_layer, _ = _run(data, "layer", "c", feeds)
    assert _plan_tuples(c.arena_plan()) == _plan_tuples(py.arena_plan()) and c.memory_plan == "layer"
    info, layer_info = c.plan_info(), c_layer.plan_info()
    assert max(info["high_water"], info["arena_used"]) <= max(layer_info["high_water"], layer_info["arena_used"])
    for a, b, d in zip(got, got_c, want):
        np.testing.assert_array_equal(a, d)
        np.testing.assert_array_equal(b, d)
    from edge_sdk.targets.check import check_model

    checked = {m: check_model(data, "qemu-mps2-an386", memory=m) for m in ("layer", "inplace")}
    assert checked["inplace"].arena_bytes <= checked["layer"].arena_bytes
    assert any("keep the layer-by-layer placement" in n for n in checked["inplace"].notes)
    assert checked["inplace"].memory_plan == "layer"
    assert not any("keep the layer-by-layer placement" in n for n in checked["layer"].notes)


@needs_c_runtime
@pytest.mark.parametrize("name", ["hello_world_float", "hello_world_int8", "audio_preprocessor_int8", "person_detect"])
def test_c_inplace_need_never_above_the_layer_need(name):
    """The C runtime's in-place plan keeps its in-place groups in the lifetimes (no planner memory of its own):
    its whole need (planner memory included) is never above the layer plan's (it was, on these, by 16 bytes
    per tensor)."""
    from edge_sdk.runtime import c_interpreter

    data = shared_model(f"tflite-micro/{name}.tflite").read_bytes()
    need = {}
    for memory in ("layer", "inplace"):
        c = c_interpreter.CInterpreter(model_content=data, memory=memory)
        c.allocate_tensors()
        f = c.plan_info()
        need[memory] = max(f["high_water"], f["arena_used"])
    assert need["inplace"] <= need["layer"]


# ------------------------------------------------------------------------------------------------ plan names
def test_memory_plan_names_are_one_vocabulary():
    """--memory and memory= take layer / inplace / min everywhere (the CLI's choices, both backends, check, flash,
    export, convert); "patch" is no choice any more (it names the plan built with a patch stage). The names are
    written once, in the planner: the CLI takes that tuple itself and both backends check with planner.check_memory."""
    from edge_sdk import cli
    from edge_sdk.runtime import c_interpreter, interpreter
    from edge_sdk.runtime.planner import MEMORY_PLANS, REALISED_PLANS
    from edge_sdk.runtime.planner import check_memory as planner_check
    from edge_sdk.targets.check import check_model
    from edge_sdk.tools.flash import flash

    assert cli.MEMORY_PLANS is MEMORY_PLANS
    assert c_interpreter.check_memory is interpreter.check_memory is planner_check
    assert MEMORY_PLANS == ("layer", "inplace", "min")
    assert REALISED_PLANS == ("layer", "inplace", "patch")
    data = _chain_model()
    for make in (lambda: Interpreter(model_content=data, memory="patch"),
                 lambda: c_interpreter.CInterpreter(model_content=data, memory="patch"),
                 lambda: check_model(data, "qemu-mps2-an386", memory="patch"),
                 lambda: flash("unused.tflite", "qemu-mps2-an386", memory="patch")):
        with pytest.raises(ValueError, match="memory must be one of 'layer', 'inplace', 'min'.*not 'patch'"):
            make()


def test_inplace_is_the_old_min_plan():
    """memory="inplace" is the in-place plan (memory="min" before the rename, now with elementwise ops in place),
    byte for byte: the layer requests with the in-place groups (least_ram_plan: of no groups, the groups without the
    elementwise ops and all of them, the smallest plan); and memory="min" with no op allowed in a patch stage makes
    exactly that plan too."""
    from edge_sdk.runtime.planner import buffer_requests, inplace_aliases, least_ram_plan

    models = {"chain": _chain_model(shape=(1, 16, 16, 8)), "dw": _dw_chain_model(1, "SAME"),
              "person_detect": shared_model("tflite-micro/person_detect.tflite").read_bytes()}
    for name, data in models.items():
        layer = Interpreter(model_content=data)
        layer.allocate_tensors()
        spans: dict = {}
        infos = layer._p.infos
        reqs = buffer_requests(layer.model, infos, spans=spans)
        assert inplace_aliases(layer.model, infos, reqs, spans), name  # every one of these has in-place nodes
        want, aliases = least_ram_plan(layer.model, infos, reqs, spans)
        small = Interpreter(model_content=data, memory="inplace")
        small.allocate_tensors()
        assert _plan_tuples(small.arena_plan()) == _plan_tuples(want), name
        assert small.memory_plan == ("inplace" if aliases else "layer")
        assert small.patch_plan() is None
        no_stage = Interpreter(model_content=data, memory="min", patch_ops=())
        no_stage.allocate_tensors()
        assert _plan_tuples(no_stage.arena_plan()) == _plan_tuples(want) and no_stage.patch_plan() is None, name
        assert no_stage.memory_plan == small.memory_plan


@pytest.mark.slow
def test_cli_check_memory_min_is_the_least_ram_plan_of_person_detect():
    """Issue 17's own command: `edge check person_detect.tflite --target qemu-mps2-an386 --memory min --json` reports
    the patch plan (its stage, grid and extra MACs) in less than 0.6x TFLM's whole arena, below the in-place
    plan's figure (the board's exact figure: test_patching's QEMU test); `--memory patch` is refused (exit 2)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from tests.test_c_arena import tflm_totals

    model = shared_model("tflite-micro/person_detect.tflite")
    env = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent), "PATH": "/usr/bin:/bin"}
    out = {}
    for memory in ("inplace", "min"):
        proc = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "check", str(model), "--target",
                               "qemu-mps2-an386", "--memory", memory, "--json"], capture_output=True, text=True,
                              env=env, timeout=600, check=False)
        assert proc.returncode == 0, proc.stderr
        out[memory] = json.loads(proc.stdout)
    r = out["min"]
    assert r["memory_plan"] == "patch" and r["extra_macs"] > 0 and r["patch"].startswith("patch plan: stage nodes ")
    assert r["memory_request"] == "min" and r["plans"] == {"patch": r["arena_bytes"]}
    # (person_detect's in-place groups save nothing: both runtimes keep the layer placement, and say so)
    assert out["inplace"]["memory_plan"] in ("inplace", "layer") and out["inplace"]["extra_macs"] == 0
    assert not r["arena_estimate"] and r["arena_bytes"] < out["inplace"]["arena_bytes"]
    tflm = tflm_totals([model])[str(model)]
    assert r["arena_bytes"] < 0.6 * tflm, (r["arena_bytes"], tflm)
    proc = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "check", str(model), "--target", "qemu-mps2-an386",
                           "--memory", "patch", "--json"], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 2 and "invalid choice: 'patch'" in proc.stderr
    assert json.loads(proc.stdout)["kind"] == "usage"  # --json: the error as JSON on stdout too


def _conv_int8_case(rng, generic: bool):
    """One int8 CONV_2D with o output channels (odd counts: conv_gemm's lone last channel), per-channel or
    per-tensor weights; ``generic``: multipliers edge_rq does not cover (above 0.25: the edge_mbqm form)."""
    from tests.oprunner import T, op_model

    kh, kw = (int(v) for v in rng.choice([1, 3], 2))
    c = int(rng.choice([1, 3, 8, 17]))
    o = int(rng.choice([1, 5, 8, 17, 33]))
    h, w = int(rng.integers(kh, 9)), int(rng.integers(kw, 9))
    k = kh * kw * c
    pc = bool(rng.random() < 0.7)
    wscale = list(rng.uniform(0.3, 3, o) / (20 * np.sqrt(k))) if pc else float(1 / (20 * np.sqrt(k)))
    wt = T((o, kh, kw, c), "INT8", wscale, 0, quantized_dimension=0, data=rng.integers(-127, 128, (o, kh, kw, c),
                                                                                       dtype=np.int8))
    b = T((o,), "INT32", 1.0, 0, data=rng.integers(-3000, 3000, o).astype(np.int32))
    x = T((1, h, w, c), "INT8", 0.05, int(rng.integers(-128, 128)))
    y = T((1, h, w, o), "INT8", 0.0004 if generic else 0.02, int(rng.integers(-128, 128)))
    opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1, "dilation_w_factor": 1,
            "fused_activation_function": str(rng.choice(["NONE", "RELU"]))}
    return op_model("CONV_2D", [x, wt, b], [y], options=opts, version=3), o, \
        [rng.integers(-128, 128, (1, h, w, c), dtype=np.int8)]


@needs_c_runtime
@pytest.mark.parametrize("seed", range(10))
def test_c_conv_int8_compact_requantization_under_the_least_ram_plan(seed):
    """Under memory="inplace" (and "min") CONV_2D keeps its int8 requantization in 5 bytes a channel instead of 8
    where no SIMD fast path packs it (the Cortex-M builds; here SIMD level 0): outputs bit-exact with the layer plan and TFLM,
    the persistent part 3 bytes a channel smaller (rounded to the 8-byte steps)."""
    from tests.peers import run_tflm
    from tests.conftest import c_backend
    from tests.simd_common import run_at_level, simd_levels

    rng = np.random.default_rng(7000 + seed)
    data, o, feeds = _conv_int8_case(rng, generic=seed % 3 == 2)
    backend = c_backend()
    for lib, _ in simd_levels(backend):
        layer = run_at_level(backend, lib, 0, data, feeds, memory="layer")
        small = run_at_level(backend, lib, 0, data, feeds, memory="inplace")
        persistent = {}
        for memory in ("layer", "inplace"):
            lib.edge_simd_set(0)
            try:
                c = backend.CInterpreter(model_content=data, memory=memory)
                c.allocate_tensors()
            finally:
                lib.edge_simd_set(-1)
            persistent[memory] = c.plan_info()["persistent"]
    want = run_tflm(data, feeds)
    np.testing.assert_array_equal(small[0], layer[0])
    np.testing.assert_array_equal(small[0], want[0])
    assert len(np.unique(want[0])) > 1  # a real result, not a clamped constant

    def up8(n):
        return (n + 7) // 8 * 8

    assert persistent["layer"] - persistent["inplace"] == up8(8 * o) - up8(5 * o)


# Elementwise ops in place: model input x -> RELU -> r -> OP -> y, output = ADD(y, x). r is no subgraph input and
# dies at OP (x lives on, so the layer plan holds three buffers there), so under memory="inplace" y takes over r's bytes (a binary OP: input 0 is r, or with "swap" input 1 is r and
# input 0 a second model input, which is never taken over). (output scale, zero point) per type where the op's
# kernels need particular ones (LOGISTIC / TANH); None: the common 0.05 / 3 (int16: 1/512, 0).
_EW_OUT_Q = {("LOGISTIC", "INT8"): (1 / 256, -128), ("TANH", "INT8"): (1 / 128, 0),
             ("LOGISTIC", "INT16"): (2 ** -15, 0), ("TANH", "INT16"): (2 ** -15, 0)}
_EW_CASES = [(op, t) for op in ("RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU", "LOGISTIC", "TANH")
             for t in ("INT8", "INT16", "FLOAT32")] + \
            [("HARD_SWISH", "INT8"), ("HARD_SWISH", "FLOAT32"), ("QUANTIZE", "INT8"), ("QUANTIZE", "INT16")] + \
            [(op, t) for op in ("ADD", "SUB", "MUL") for t in ("INT8", "INT16", "FLOAT32")]


def _elementwise_model(op_name: str, dtype: str, shape=(1, 5, 7, 3), swap: bool = False,
                       broadcast: bool = False) -> bytes:
    def quant(scale, zp):
        return Quantization(np.array([scale], np.float32), np.array([zp], np.int64)) if dtype != "FLOAT32" else None

    common = (1 / 512, 0) if dtype == "INT16" else (0.05, 3)
    q = quant(*common)
    out_q = quant(*_EW_OUT_Q.get((op_name, dtype), (0.07, -5) if dtype == "INT8" else common))
    other_shape = (1, 1, 1, shape[3]) if broadcast else shape
    tensors = [Tensor("x", shape, dtype, 0, q), Tensor("r", shape, dtype, 0, q), Tensor("y", shape, dtype, 0, out_q),
               Tensor("out", shape, dtype, 0, out_q), Tensor("x2", other_shape, dtype, 0, q)]
    binary = op_name in ("ADD", "SUB", "MUL")
    codes = [OperatorCode(schema.BUILTIN_OPERATOR_CODES[n], None, 1) for n in ("RELU", op_name, "ADD")]

    def op(code, name, inputs, outputs, options=None):
        t = options_for(name)
        opts = option_defaults(t) if t is not None else {}
        opts.update(options or {})
        return Operator(opcode_index=code, inputs=inputs, outputs=outputs, options_type=t, options=opts)

    mid_inputs = ([4, 1] if swap else [1, 4]) if binary else [1]
    options = {"alpha": 0.2} if op_name == "LEAKY_RELU" else None
    ops = [op(0, "RELU", [0], [1]), op(1, op_name, mid_inputs, [2], options), op(2, "ADD", [2, 0], [3])]
    sg = SubGraph(tensors=tensors, inputs=[0, 4] if binary else [0], outputs=[3], operators=ops, name="main")
    if not binary:
        sg.tensors = tensors[:4]
    return write_model(Model(operator_codes=codes, subgraphs=[sg], buffers=[Buffer(b"")],
                             description="elementwise in place"))


@pytest.mark.parametrize("case", [f"{op}-{t}" for op, t in _EW_CASES] + ["ADD-INT8-swap", "MUL-INT8-swap-broadcast",
                                                                         "SUB-FLOAT32-broadcast"])
@pytest.mark.parametrize("shape", [(1, 5, 7, 3), (1, 9, 13, 35)])  # the second: whole SIMD vectors and a tail
def test_elementwise_ops_in_place_in_both_runtimes(case, shape, runtime):
    """Under memory="inplace" an elementwise op's output takes over its input (binary ops: input 0, else input 1, of
    the output's element count and size): Python and C outputs bit-exact with the layer plan, the C plan identical
    to Python's entry by entry, and the output at its input's offset. The Python interpreter's layer and in-place
    runs are the C case's reference too."""
    op_name, dtype, *flags = case.split("-")
    data = _elementwise_model(op_name, dtype, shape, swap="swap" in flags, broadcast="broadcast" in flags)
    feeds = _feeds(data, 3)
    layer, want = _run(data, "layer", "python", feeds)
    small, got = _run(data, "inplace", "python", feeds)
    if runtime == "python":
        np.testing.assert_array_equal(got[0], want[0])
        off = {b.name: b.offset for b in small.arena_plan().buffers}
        assert small.memory_plan == "inplace" and off["r"] == off["y"], off
        assert np.any(want[0] != want[0].flat[0])  # not a constant
        return
    c, got_c = _run(data, "inplace", "c", feeds)
    _, got_c_layer = _run(data, "layer", "c", feeds)
    np.testing.assert_array_equal(got_c[0], got_c_layer[0])
    if dtype == "FLOAT32":  # the C runtime's float math (vector exp / tanh) is held to LiteRT's tolerance elsewhere
        np.testing.assert_allclose(got_c[0], want[0], rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got_c[0], want[0])
    assert _plan_tuples(c.arena_plan()) == _plan_tuples(small.arena_plan())


def test_elementwise_in_place_only_over_an_input_of_the_output_size():
    """A broadcast input (fewer elements than the output) is never taken over: MUL(x2 broadcast, r) takes r (input
    1); a QUANTIZE from float32 to int8 (other element size) keeps its own bytes."""
    data = _elementwise_model("MUL", "INT8", swap=False, broadcast=True)
    it = Interpreter(model_content=data, memory="inplace")
    it.allocate_tensors()
    off = {b.name: b.offset for b in it.arena_plan().buffers}
    assert off["r"] == off["y"] and off["x2"] != off["y"]


@pytest.mark.parametrize("name", ["tflite-micro/dtln_noise_suppression.tflite", "mediapipe/palm_detection_lite.tflite",
                                  "pymicro-wakeword/hey_jarvis.tflite", "tflite-micro/micro_speech_lstm.tflite"])
def test_real_models_bit_exact_under_every_plan_in_both_runtimes(name, runtime):
    """Real models (LSTM state, MediaPipe float16 weights, a streaming wake word, an audio denoiser with in-place
    nodes): memory="inplace" and "min" give the layer plan's outputs bit for bit in the Python interpreter and in
    the C runtime, and the plan built is one of the plans the request allows."""
    data = shared_model(name).read_bytes()
    feeds = _feeds(data, 11)
    _, want = _run(data, "layer", runtime, feeds)
    for memory, built in (("inplace", ("layer", "inplace")), ("min", ("layer", "inplace", "patch"))):
        it, got = _run(data, memory, runtime, feeds)
        assert it.memory_plan in built, (runtime, memory, it.memory_plan)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b, err_msg=f"{name} {runtime} memory={memory}")
