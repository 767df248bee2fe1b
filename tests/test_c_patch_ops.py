"""C patch stages with standalone activations, SUB and MUL (issue 17 points 1-2): edge_init_patch runs RELU, RELU6,
RELU_N1_TO_1, LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU (1:1 on the window) and ADD / SUB / MUL (each computed input
from its own window, a constant broadcast along no spatial axis) inside a stage, as the Python interpreter does.

Small models in the shapes real exports have in their first layers (MobileNet v3's conv -> hard-swish, swish /
squeeze-excite as LOGISTIC -> MUL, a normalisation's SUB of a per-channel mean, LEAKY_RELU of YOLO-style
backbones), in int8, int16 and float32: the planner picks a stage holding them for the C runtime, the C patch plan
equals the Python planner's entry by entry, and the C outputs under the patch plan equal the C layer plan's and
TFLM's (int8 and int16 bit for bit; float32 within a few ulp: the window calls take the portable loops, the
whole-tensor calls may take SIMD). That test runs on the runtime grid: its python case runs the same stage in the
Python interpreter against its layer plan and TFLM. The others check the C patch stage itself (edge_init_patch),
C-only by nature (needs_c_runtime): every stage and grid it accepts is bit-exact too (sub-windows of an
activation's input, stages starting inside the graph), a constant broadcast along W is refused; one case runs on
the QEMU board.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.model.types import Quantization
from edge_sdk.runtime import patching
from tests.conftest import needs_c_runtime
from tests.oprunner import peer_outputs
from tests.test_patching import _board_figure, _Builder, _plan_tuples, _run


class _Net(_Builder):
    """test_patching's builder with int16 (16x8: int8 weights, int64 bias, zero points 0) and the layers below."""

    def __init__(self, dtype, seed, shape):
        super().__init__(dtype, seed)
        self.x = self.tensor("input", shape)
        self.input = self.x

    def q(self):
        if self.dtype == "INT16":
            return Quantization(np.array([self.rng.uniform(2e-4, 6e-4)], np.float32), np.array([0], np.int64))
        return super().q()

    def fixed_q(self, scale, zp):
        return None if self.dtype == "FLOAT32" else Quantization(np.array([scale], np.float32), np.array([zp], np.int64))

    def weights(self, shape, channels, qdim):
        if self.dtype == "INT16":
            w = self.rng.integers(-127, 128, shape).astype(np.int8)
            q = Quantization(self.rng.uniform(0.002, 0.01, channels).astype(np.float32), np.zeros(channels, np.int64),
                             qdim)
            return w, q, "INT8"
        return super().weights(shape, channels, qdim)

    def bias(self, x, wq, channels):
        if self.dtype == "INT16":
            b = self.rng.integers(-20000, 20000, channels).astype(np.int64)
            q = Quantization((float(self.quant[x].scale[0]) * wq.scale).astype(np.float32), np.zeros(channels, np.int64))
            return self.tensor("b", (channels,), q, b, "INT64")
        return super().bias(x, wq, channels)

    def _conv(self, kind, k, s, channels=None, act="NONE", src=None):
        x = self.x if src is None else src
        n, h, w, c = self.shapes[x]
        o = channels if kind == "conv" else c
        oh, ow = (h + s - 1) // s, (w + s - 1) // s
        wshape = (o, k, k, c) if kind == "conv" else (1, k, k, c)
        wv, wq, wt = self.weights(wshape, o, 0 if kind == "conv" else 3)
        wi = self.tensor(f"w{len(self.ops)}", wshape, wq, wv, wt)
        bi = self.bias(x, wq, o)
        y = self.tensor(f"t{len(self.ops)}", (n, oh, ow, o))
        opts = dict(padding="SAME", stride_h=s, stride_w=s, fused_activation_function=act)
        if kind == "dw":
            opts["depth_multiplier"] = 1
        self.op("CONV_2D" if kind == "conv" else "DEPTHWISE_CONV_2D", [x, wi, bi], [y], **opts)
        self.x = y
        return y

    def conv(self, k, s, channels, act="NONE", src=None):
        return self._conv("conv", k, s, channels, act, src)

    def dw(self, k, s, act="NONE", src=None):
        return self._conv("dw", k, s, None, act, src)

    def act(self, name, src=None, **options):
        """A standalone activation, its output quantized as the kernels need (LOGISTIC / TANH fixed scales)."""
        x = self.x if src is None else src
        int16 = self.dtype == "INT16"
        if name == "LOGISTIC":
            q = self.fixed_q(2 ** -15 if int16 else 1 / 256, 0 if int16 else -128)
        elif name == "TANH":
            q = self.fixed_q(2 ** -15 if int16 else 1 / 128, 0)
        elif name == "RELU6":
            q = self.quant[x]
        else:
            q = "new"
        y = self.tensor(f"t{len(self.ops)}", self.shapes[x], q)
        self.op(name, [x], [y], **options)
        self.x = y
        return y

    def binary(self, name, a, b, **options):
        y = self.tensor(f"t{len(self.ops)}", np.broadcast_shapes(self.shapes[a], self.shapes[b]))
        self.op(name, [a, b], [y], **options)
        self.x = y
        return y

    def const(self, shape):
        """A constant operand (a per-channel scale / mean, a scalar) with its own quantization."""
        if self.dtype == "FLOAT32":
            return self.tensor(f"k{len(self.ops)}", shape, None, self.rng.uniform(-1.5, 1.5, shape).astype(np.float32))
        if self.dtype == "INT16":
            q = Quantization(np.array([self.rng.uniform(1e-4, 4e-4)], np.float32), np.array([0], np.int64))
            return self.tensor(f"k{len(self.ops)}", shape, q, self.rng.integers(-4000, 4000, shape).astype(np.int16))
        q = Quantization(np.array([self.rng.uniform(0.01, 0.03)], np.float32),
                         np.array([int(self.rng.integers(-10, 10))], np.int64))
        return self.tensor(f"k{len(self.ops)}", shape, q, self.rng.integers(-128, 128, shape).astype(np.int8))

    def build(self) -> bytes:
        return self.model([self.input], [self.x])


def hardswish_net(dtype, seed=0, shape=(1, 26, 22, 3), tail="RELU"):
    """MobileNet v3's stem: CONV_2D -> RELU6 -> DEPTHWISE -> HARD_SWISH (int16: TANH, the C runtime has no int16
    HARD_SWISH) -> a 1x1 CONV_2D, then a stride-2 tail with ``tail`` (TFLM has no RELU_N1_TO_1: only the tests
    that do not ask TFLM take it)."""
    b = _Net(dtype, seed, shape)
    b.conv(3, 1, 16)
    b.act("RELU6")
    b.dw(3, 1)
    b.act("TANH" if dtype == "INT16" else "HARD_SWISH")
    b.conv(1, 1, 8)
    b.dw(3, 2)
    b.act(tail)
    b.conv(1, 1, 4)
    return b.build()


def swish_se_net(dtype, seed=0, shape=(1, 24, 24, 3)):
    """EfficientNet-lite style: CONV -> LOGISTIC -> MUL with the conv's output (swish), a squeeze-excite-like MUL by
    a per-channel constant, a DEPTHWISE whose input also feeds a RELU read by an ADD (the RELU reads a sub-window
    of its input: the depthwise needs a halo, the ADD does not), TANH, a stride-2 CONV."""
    b = _Net(dtype, seed, shape)
    t = b.conv(3, 1, 12)
    s = b.act("LOGISTIC")
    b.binary("MUL", t, s)
    k = b.const((1, 1, 1, 12))
    m = b.binary("MUL", k, b.x)  # the constant first
    d = b.dw(3, 1)
    r = b.act("RELU", src=m)
    b.binary("ADD", d, r)
    b.act("TANH")
    b.conv(3, 2, 6)
    b.conv(1, 1, 4)
    return b.build()


def sub_leaky_net(dtype, seed=0, shape=(1, 25, 23, 3)):
    """A YOLO-style stem: CONV -> SUB(per-channel constant) -> LEAKY_RELU -> DEPTHWISE stride 2, SUB(scalar constant
    - x: the constant as input 0), MUL(x, scalar constant), RELU, a 1x1 CONV."""
    b = _Net(dtype, seed, shape)
    b.conv(3, 1, 12)
    b.binary("SUB", b.x, b.const((12,)))
    b.act("LEAKY_RELU", alpha=0.1)
    b.dw(3, 2)
    b.binary("SUB", b.const((1,)), b.x)
    b.binary("MUL", b.x, b.const((1, 1, 1)))
    b.act("RELU")
    b.conv(1, 1, 4)
    return b.build()


NETS = {"hardswish": hardswish_net, "swish_se": swish_se_net, "sub_leaky": sub_leaky_net}
# the ops each net's C patch stage must hold (the point of the test: the planner picks them)
WANT = {
    "hardswish": {"RELU6", "HARD_SWISH"},
    "swish_se": {"LOGISTIC", "MUL", "RELU", "ADD"},
    "sub_leaky": {"SUB", "LEAKY_RELU"},
}
WANT16 = {"hardswish": {"RELU6", "TANH"}}


def _feed(data, seed):
    rng = np.random.default_rng(seed)
    d = Interpreter(model_content=data).get_input_details()[0]
    if d["dtype"] == np.float32:
        return rng.standard_normal(d["shape"]).astype(np.float32)
    if d["dtype"] == np.int16:
        return rng.integers(-6000, 6000, d["shape"]).astype(np.int16)
    return rng.integers(-128, 128, d["shape"]).astype(np.int8)


def _c_run(data, memory, x, patch_plan=None):
    from edge_sdk.runtime.c_interpreter import CInterpreter

    if patch_plan is None:
        c = Interpreter(model_content=data, memory=memory, backend="c")
    else:
        c = CInterpreter(model_content=data, memory=memory, patch_plan=patch_plan)
    c.allocate_tensors()
    c.set_tensor(c.get_input_details()[0]["index"], x)
    c.invoke()
    return c, c.get_tensor(c.get_output_details()[0]["index"]).copy()


def test_c_patch_ops_are_the_python_ones():
    """Both runtimes choose stages over the same ops now."""
    assert set(patching.C_PATCH_OPS) == set(patching.PATCH_OPS)
    assert {"SUB", "MUL", "RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "HARD_SWISH",
            "LEAKY_RELU"} <= set(patching.C_PATCH_OPS)


def test_planner_takes_a_binary_op_with_a_constant_only_without_spatial_broadcast():
    """A constant of [C], [1, 1, C], [1, 1, 1, C] or a scalar joins a stage; one varying along W or H does not
    (rank 2 [W, C] included)."""
    for shape, ok in [((12,), True), ((1,), True), ((1, 1, 12), True), ((1, 1, 1, 12), True), ((23, 1), False),
                      ((23, 12), False), ((25, 1, 1), False), ((1, 25, 23, 12), False)]:
        b = _Net("FLOAT32", 0, (1, 25, 23, 3))
        t = b.conv(3, 1, 12)
        y = b.binary("SUB", t, b.const(shape))
        data = b.build()
        it = Interpreter(model_content=data)
        it.allocate_tensors()
        infos = it._p.infos[0]  # the prepared shapes, as choose() sees them
        sn = patching._stage_node(it.model, 0, 1, infos, patching.C_PATCH_OPS)
        assert (sn is not None) == ok, shape
        if ok:
            assert sn.inputs == (t,) and sn.output == y


# per (net, dtype), what the python case computed and its C case compares with (planned and run once): the
# Python planner's least-RAM interpreter over the C runtime's patch ops, the Python interpreter's layer-plan and
# patch-plan outputs, the nodes of the stage the Python interpreter ran
_PYTHON_RUNS: dict = {}


def _python_runs(data, x, key):
    if key not in _PYTHON_RUNS:
        py = Interpreter(model_content=data, memory="min", patch_ops=patching.C_PATCH_OPS)
        py.allocate_tensors()
        _, want_py = _run(data, "layer", x)
        py_patched, got_py = _run(data, "min", x)  # the Python interpreter runs the same stage
        _PYTHON_RUNS[key] = (py, want_py, got_py, py_patched.patch_plan().nodes)
    return _PYTHON_RUNS[key]


@pytest.mark.parametrize("dtype", ["INT8", "INT16", "FLOAT32"])
@pytest.mark.parametrize("net", list(NETS))
def test_c_patch_stage_with_activations_sub_mul(net, dtype, runtime):
    """The planner picks a stage holding the net's activations / SUB / MUL for the C runtime; the Python
    interpreter runs that stage with its layer plan's outputs and (int8, int16) TFLM's; the C plan equals the
    Python planner's entry by entry and beats the plans without patches; the C outputs under it equal the C layer
    plan's, the Python interpreter's (layer and patch plans) and (int8, int16) TFLM's."""
    data = NETS[net](dtype, seed=len(net))
    x = _feed(data, 3)
    py, want_py, got_py, py_nodes = _python_runs(data, x, (net, dtype))
    plan = py.patch_plan()
    assert plan is not None
    ops = {sn.op for sn in plan.stage}
    want = WANT16.get(net, WANT[net]) if dtype == "INT16" else WANT[net]
    assert want <= ops, (want, ops, plan.nodes)
    if runtime == "python":
        assert py_nodes == plan.nodes
        assert len(np.unique(want_py)) > 3  # a real result
        if dtype == "FLOAT32":
            np.testing.assert_allclose(got_py, want_py, rtol=1e-5, atol=1e-5)
            return
        np.testing.assert_array_equal(got_py, want_py)
        np.testing.assert_array_equal(got_py, peer_outputs(data, [x], "tflm", isolate=True)[0])
        return
    c, got = _c_run(data, "min", x)
    cplan = c.patch_plan()
    assert cplan.nodes == plan.nodes and cplan.grid == plan.grid
    assert _plan_tuples(c.arena_plan()) == _plan_tuples(py.arena_plan())
    assert (0, patching.CUT_KEY) in c.arena_plan()
    layer_c, want_c = _c_run(data, "layer", x)
    min_c, want_min = _c_run(data, "inplace", x)
    assert c.plan_info()["tensor_total"] == py.arena_size < min(layer_c.plan_info()["tensor_total"],
                                                              min_c.plan_info()["tensor_total"])
    if dtype == "FLOAT32":
        for y in (got, got_py, want_min):
            np.testing.assert_allclose(y, want_c, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, want_py, rtol=1e-5, atol=1e-5)
        return
    np.testing.assert_array_equal(got, want_c)
    np.testing.assert_array_equal(want_min, want_c)
    np.testing.assert_array_equal(got, want_py)
    np.testing.assert_array_equal(got, peer_outputs(data, [x], "tflm", isolate=True)[0])


@needs_c_runtime
@pytest.mark.parametrize("net,dtype", [("swish_se", "INT8"), ("sub_leaky", "INT8"), ("hardswish_n1", "INT16"),
                                       ("hardswish_n1", "INT8"), ("sub_leaky", "FLOAT32")])
def test_c_runs_any_valid_stage_and_grid_of_elementwise_nets(net, dtype):
    """Every stage (first..last) and grid edge_init_patch accepts gives the layer plan's outputs (stages starting
    at an activation, a SUB with its constant first, a RELU reading a sub-window, one patch row or column); the
    ones it refuses (a branch leaving the stage) are refused with a patch reason."""
    from edge_sdk.errors import ModelError

    if net == "hardswish_n1":
        data = hardswish_net(dtype, seed=5, shape=(1, 17, 15, 3), tail="RELU_N1_TO_1")
    else:
        data = NETS[net](dtype, seed=5, shape=(1, 17, 15, 3))
    x = _feed(data, 4)
    _, want = _c_run(data, "layer", x)
    n_ops = len(Interpreter(model_content=data).model.subgraphs[0].operators)
    ran = refused = 0
    for first in range(n_ops):
        for last in range(first, n_ops):
            for grid in ((1, 2), (3, 1), (3, 3), (8, 7)):
                plan = patching.PatchPlan(0, tuple(range(first, last + 1)), 0, 0, grid, [], {}, {}, {}, 0, 0)
                try:
                    _, got = _c_run(data, "min", x, patch_plan=plan)
                except ModelError as exc:
                    assert "patch" in str(exc), exc
                    refused += 1
                    continue
                if dtype == "FLOAT32":
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
                else:
                    np.testing.assert_array_equal(got, want, err_msg=f"stage {first}..{last} grid {grid}")
                ran += 1
    # a chain: every node range is a closed stage; swish_se's branches (the LOGISTIC and the RELU beside the
    # tensors they multiply / add) leave tensors outside some ranges
    assert ran >= 40 and (refused >= 5 if net == "swish_se" else refused == 0), (ran, refused)


@needs_c_runtime
def test_c_refuses_a_constant_broadcast_along_w():
    """A stage SUB whose constant varies along W (the window would need a slice of it) is refused by name."""
    from edge_sdk.errors import ModelError

    b = _Net("INT8", 1, (1, 12, 10, 3))
    b.conv(3, 1, 8)
    b.binary("SUB", b.x, b.const((10, 1)))
    b.conv(1, 1, 4)
    data = b.build()
    x = _feed(data, 1)
    plan = patching.PatchPlan(0, (0, 1, 2), 0, 0, (2, 2), [], {}, {}, {}, 0, 0)
    with pytest.raises(ModelError, match="a constant that broadcasts along H or W"):
        _c_run(data, "min", x, patch_plan=plan)
    plan = patching.PatchPlan(0, (0,), 0, 0, (2, 2), [], {}, {}, {}, 0, 0)  # the conv alone is fine
    np.testing.assert_array_equal(_c_run(data, "min", x, patch_plan=plan)[1], _c_run(data, "layer", x)[1])


@pytest.mark.slow
@needs_c_runtime
@pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                    reason="needs qemu-system-arm and arm-none-eabi-gcc (make system-deps)")
@pytest.mark.skipif(not (shutil.which("arm-linux-gnueabihf-gcc") and shutil.which("qemu-arm")),
                    reason="needs arm-linux-gnueabihf-gcc and qemu-user (Debian gcc-arm-linux-gnueabihf qemu-user) "
                           "for the board's struct layout")
def test_swish_se_patch_plan_on_the_qemu_board(state, tmp_path):
    """edge flash --memory min of the swish / squeeze-excite net: the Cortex-M4 firmware (the new window code
    compiled for the board) runs the stage with LOGISTIC, MUL and RELU; edge profile's outputs equal the host
    interpreter's bit for bit, in less arena than the least-RAM plan without patches."""
    from edge_sdk.runtime.planner import c_patch_stage
    from edge_sdk.tools.flash import flash
    from edge_sdk.tools.profile import profile_model

    data = swish_se_net("INT8", seed=2, shape=(1, 40, 40, 3))
    model = tmp_path / "swish_se.tflite"
    model.write_bytes(data)
    plan = c_patch_stage(data)
    assert plan is not None and {"LOGISTIC", "MUL", "RELU"} <= {sn.op for sn in plan.stage}
    r = flash(model, "qemu-mps2-an386", build_dir=tmp_path / "fw", memory="min")
    config = (tmp_path / "fw" / "gen" / "app_config.h").read_text()
    assert r.memory == "patch"
    assert f"APP_PATCH_PLAN {{{plan.nodes[0]}, {plan.nodes[-1]}, {plan.grid[0]}, {plan.grid[1]}}}" in config
    p = profile_model(model, "qemu-mps2-an386", port=r.port, runs=1)
    assert p["validated"] is True and p["mismatches"] == []
    # the board's high water is the 32-bit check runner's figure (edge check's), below the least-RAM plan's
    assert 0 < p["arena_high_water"] == _board_figure(data, "min", plan) < _board_figure(data, "inplace")
