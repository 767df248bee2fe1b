"""Delegates in the interpreter: the partition plan, boundary tensors, the arena, and outputs that equal the
all-CPU run whatever the partitioning (exactly for int8, within 1e-5 for float)."""

from __future__ import annotations

import ctypes
import ctypes.util
import subprocess

import numpy as np
import pytest

from edge_sdk import DeviceError, ModelError
from edge_sdk.runtime.delegates import (
    CPU,
    Delegate,
    EdgeTpuDelegate,
    ExternalDelegate,
    LiteRTDelegate,
    NnapiDelegate,
    Partition,
    plan_partitions,
    resolve,
    slice_partition,
)
from edge_sdk.runtime.interpreter import Interpreter
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.conftest import require_c_runtime, shared_model


# ------------------------------------------------------------------------------------------------ models
def _conv(g, rng, name, x, cin, cout, hw, out_scale=0.1, out_zp=2, k=3, act="RELU", per_channel=True):
    n = cout if per_channel else 1
    w = g.constant(f"{name}_w", rng.integers(-100, 100, (cout, k, k, cin), dtype=np.int8),
                   scale=rng.uniform(0.005, 0.02, n), zero_point=np.zeros(n, np.int64))
    in_scale = float(g.tensors[x].quantization.scale[0])
    wscale = g.tensors[w].quantization.scale
    b = g.constant(f"{name}_b", rng.integers(-500, 500, cout, dtype=np.int32), type="INT32",
                   scale=in_scale * wscale, zero_point=np.zeros(n, np.int64))
    y = g.tensor(name, (1, hw, hw, cout), "INT8", scale=out_scale, zero_point=out_zp)
    g.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_w=1, stride_h=1, fused_activation_function=act)
    return y


def int8_cnn(seed=0):
    """x -> conv0 -> maxpool1 -> add2(conv0, pool) -> conv3 -> avgpool4 -> add5(conv3, avgpool) -> out

    Tensors: 0 x, 1-2 conv0 weights/bias, 3 c0, 4 p1, 5 a2, 6-7 conv3 weights/bias, 8 c3, 9 p4, 10 a5."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", (1, 8, 8, 3), "INT8", scale=0.05, zero_point=-3)
    c0 = _conv(g, rng, "c0", x, 3, 4, 8)
    p1 = g.tensor("p1", (1, 8, 8, 4), "INT8", scale=0.1, zero_point=2)
    g.op("MAX_POOL_2D", [c0], [p1], padding="SAME", stride_w=1, stride_h=1, filter_width=2, filter_height=2)
    a2 = g.tensor("a2", (1, 8, 8, 4), "INT8", scale=0.15, zero_point=-5)
    g.op("ADD", [c0, p1], [a2])
    c3 = _conv(g, rng, "c3", a2, 4, 6, 8, out_scale=0.2, out_zp=-10)
    p4 = g.tensor("p4", (1, 8, 8, 6), "INT8", scale=0.2, zero_point=-10)
    g.op("AVERAGE_POOL_2D", [c3], [p4], padding="SAME", stride_w=1, stride_h=1, filter_width=3, filter_height=3)
    a5 = g.tensor("a5", (1, 8, 8, 6), "INT8", scale=0.3, zero_point=0)
    g.op("ADD", [c3, p4], [a5])
    g.output(a5)
    return g.build()


def int8_cnn_with_float_middle(seed=1, per_channel=True, rank5=False):
    """conv0 (int8) -> DEQUANTIZE -> TANH (float) -> QUANTIZE -> conv4 (int8) -> out; with ``rank5`` the TANH
    runs on a rank-5 view (RESHAPE before and after): conv0, DEQUANTIZE, RESHAPE, TANH, RESHAPE, QUANTIZE, conv6."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", (1, 6, 6, 2), "INT8", scale=0.05, zero_point=0)
    c0 = _conv(g, rng, "c0", x, 2, 4, 6, per_channel=per_channel)
    f = g.tensor("f", (1, 6, 6, 4), "FLOAT32")
    g.op("DEQUANTIZE", [c0], [f])
    if rank5:
        shape5 = g.constant("shape5", np.array([1, 6, 6, 2, 2], np.int32))
        f5 = g.tensor("f5", (1, 6, 6, 2, 2), "FLOAT32")
        g.op("RESHAPE", [f, shape5], [f5], new_shape=[1, 6, 6, 2, 2])
        t5 = g.tensor("t5", (1, 6, 6, 2, 2), "FLOAT32")
        g.op("TANH", [f5], [t5])
        shape4 = g.constant("shape4", np.array([1, 6, 6, 4], np.int32))
        t = g.tensor("t", (1, 6, 6, 4), "FLOAT32")
        g.op("RESHAPE", [t5, shape4], [t], new_shape=[1, 6, 6, 4])
    else:
        t = g.tensor("t", (1, 6, 6, 4), "FLOAT32")
        g.op("TANH", [f], [t])
    q = g.tensor("q", (1, 6, 6, 4), "INT8", scale=1 / 128, zero_point=0)
    g.op("QUANTIZE", [t], [q])
    c4 = _conv(g, rng, "c_out", q, 4, 3, 6, out_scale=0.05, out_zp=0, act="NONE", per_channel=per_channel)
    g.output(c4)
    return g.build()


def float_net(seed=2):
    """x -> FC0 -> TANH1 -> FC2 -> ADD3(FC2, x2) -> SOFTMAX4; a second input x2 (tensors 0 and 1)."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", (2, 8), "FLOAT32")
    x2 = g.input("x2", (2, 5), "FLOAT32")
    w0 = g.constant("w0", rng.normal(size=(16, 8)).astype(np.float32))
    b0 = g.constant("b0", rng.normal(size=16).astype(np.float32))
    h = g.tensor("h", (2, 16))
    g.op("FULLY_CONNECTED", [x, w0, b0], [h], fused_activation_function="RELU")
    t = g.tensor("t", (2, 16))
    g.op("TANH", [h], [t])
    w2 = g.constant("w2", rng.normal(size=(5, 16)).astype(np.float32))
    y = g.tensor("y", (2, 5))
    g.op("FULLY_CONNECTED", [t, w2, -1], [y])
    s = g.tensor("s", (2, 5))
    g.op("ADD", [y, x2], [s])
    o = g.tensor("o", (2, 5))
    g.op("SOFTMAX", [s], [o], beta=1.0)
    g.output(o, t)
    return g.build()


def _inputs(interp, seed=7):
    rng = np.random.default_rng(seed)
    out = []
    for d in interp.get_input_details():
        if np.issubdtype(d["dtype"], np.integer):
            info = np.iinfo(d["dtype"])
            out.append(rng.integers(info.min, info.max, d["shape"], endpoint=True).astype(d["dtype"]))
        else:
            out.append(rng.normal(size=d["shape"]).astype(d["dtype"]))
    return out


def run(model, delegates=None, inputs=None, invokes=1):
    interp = Interpreter(model=model, delegates=delegates)
    interp.allocate_tensors()
    xs = _inputs(interp) if inputs is None else inputs
    for _ in range(invokes):
        for d, x in zip(interp.get_input_details(), xs):
            interp.set_tensor(d["index"], x)
        interp.invoke()
    return interp, [interp.get_tensor(d["index"]) for d in interp.get_output_details()]


# ------------------------------------------------------------------------------------------------ test delegates
class KernelDelegate(Delegate):
    """Takes only ``ops`` and runs each partition through a nested edge-sdk Interpreter on the sliced model
    (our own kernels: results must equal the all-CPU run bit for bit)."""

    def __init__(self, ops, name="test", holds=True):
        self.name = name
        self.ops = set(ops)
        self.holds_internal_tensors = holds
        self.prepared = []

    def supports(self, node):
        if node.op in self.ops:
            return True, "in the test list"
        return False, f"{node.op} is not in the test list"

    def prepare_partition(self, model, subgraph, node_indices, inputs, outputs, nodes):
        part = slice_partition(model, subgraph, node_indices, inputs, outputs, nodes)
        inner = Interpreter(model=part)
        inner.allocate_tensors()
        self.prepared.append(tuple(node_indices))
        in_idx = [d["index"] for d in inner.get_input_details()]
        out_idx = [d["index"] for d in inner.get_output_details()]

        def run_partition(ins, outs):
            for i, x in zip(in_idx, ins):
                inner.set_tensor(i, x)
            inner.invoke()
            for i, o in zip(out_idx, outs):
                o[...] = inner.get_tensor(i)

        return run_partition


class StubProfile:
    """A device profile stand-in: the accelerator takes int8 CONV_2D/ADD/pools, nothing float."""

    def __init__(self):
        self.asked = []

    def supports(self, node, backend="cpu"):
        self.asked.append(backend)
        if node.op not in ("CONV_2D", "ADD", "MAX_POOL_2D", "AVERAGE_POOL_2D", "DEPTHWISE_CONV_2D"):
            return False, f"{node.op} is not in the {backend} op list"
        if node.inputs[0].type != "INT8":
            return False, f"{node.op} with {node.inputs[0].type} input: int8 only"
        return True, "ok"


# ------------------------------------------------------------------------------------------------ partitioning
def test_partition_plan_and_boundaries_conv_add_only():
    model = int8_cnn()
    interp = Interpreter(model=model, delegates=[KernelDelegate({"CONV_2D", "ADD"})])
    parts = interp.partitions()
    assert [(p.backend, p.nodes) for p in parts] == [
        ("test", (0,)), (CPU, (1,)), ("test", (2, 3)), (CPU, (4,)), ("test", (5,))
    ]
    # boundaries: what comes in from outside (no constants), what is read outside or is a graph output
    assert [(p.inputs, p.outputs) for p in parts] == [
        ((0,), (3,)), ((3,), (4,)), ((3, 4), (8,)), ((8,), (9,)), ((8, 9), (10,))
    ]
    backend, nodes, boundary = parts[2]  # unpacks as (backend, nodes, boundary)
    assert (backend, nodes, boundary.inputs, boundary.outputs) == ("test", (2, 3), (3, 4), (8,))
    assert interp.node_backends()[1] == (CPU, "test: MAX_POOL_2D is not in the test list")


def test_all_cpu_and_all_delegated_are_one_partition():
    model = int8_cnn()
    assert [(p.backend, p.nodes, p.inputs, p.outputs) for p in Interpreter(model=model).partitions()] == [
        (CPU, tuple(range(6)), (0,), (10,))
    ]
    every = KernelDelegate({"CONV_2D", "ADD", "MAX_POOL_2D", "AVERAGE_POOL_2D"})
    assert [(p.backend, p.nodes) for p in Interpreter(model=model, delegates=[every]).partitions()] == [
        ("test", tuple(range(6)))
    ]


def test_first_delegate_in_list_order_wins():
    model = int8_cnn()
    a = KernelDelegate({"CONV_2D"}, name="a")
    b = KernelDelegate({"CONV_2D", "ADD", "MAX_POOL_2D"}, name="b")
    assert [(p.backend, p.nodes) for p in Interpreter(model=model, delegates=[a, b]).partitions()] == [
        ("a", (0,)), ("b", (1, 2)), ("a", (3,)), (CPU, (4,)), ("b", (5,))
    ]
    assert [(p.backend, p.nodes) for p in Interpreter(model=model, delegates=[b, a]).partitions()] == [
        ("b", (0, 1, 2, 3)), (CPU, (4,)), ("b", (5,))
    ]


def test_plan_partitions_min_nodes_and_graph_outputs():
    ops = [([0], [1]), ([1], [2]), ([2], [3]), ([1, 3], [4])]
    parts = plan_partitions(ops, [CPU, CPU, "d", "d"], [0], [4, 2])
    assert all(isinstance(p, Partition) for p in parts)
    assert [(p.backend, p.nodes, p.inputs, p.outputs) for p in parts] == [
        (CPU, (0, 1), (0,), (1, 2)), ("d", (2, 3), (2, 1), (4,))
    ]
    # a tensor used only inside its partition is not a boundary output unless the graph outputs it
    parts = plan_partitions(ops, ["d"] * 4, [0], [4, 2])
    assert [(p.nodes, p.inputs, p.outputs) for p in parts] == [((0, 1, 2, 3), (0,), (2, 4))]


def test_min_nodes_and_max_partitions():
    model = int8_cnn()
    d = KernelDelegate({"CONV_2D", "ADD"})
    d.min_nodes = 2
    interp = Interpreter(model=model, delegates=[d])
    assert [(p.backend, p.nodes) for p in interp.partitions()] == [(CPU, (0, 1)), ("test", (2, 3)), (CPU, (4, 5))]
    assert "shorter than its min_nodes 2" in interp.node_backends()[0][1]
    d = KernelDelegate({"CONV_2D", "ADD"})
    d.max_partitions = 2
    interp = Interpreter(model=model, delegates=[d])
    assert [(p.backend, p.nodes) for p in interp.partitions()] == [("test", (0,)), (CPU, (1,)), ("test", (2, 3)),
                                                                  (CPU, (4, 5))]
    assert interp.node_backends()[5] == (CPU, "test takes at most 2 partition(s); later nodes run on the CPU")


def test_partitions_before_allocate_equal_after():
    model = int8_cnn()
    interp = Interpreter(model=model, delegates=[KernelDelegate({"CONV_2D", "ADD"})])
    before = interp.partitions()
    interp.allocate_tensors()
    assert interp.partitions() == before


# ------------------------------------------------------------------------------------------------ outputs
OP_SUBSETS = [
    {"CONV_2D"}, {"ADD"}, {"CONV_2D", "ADD"}, {"MAX_POOL_2D", "ADD"}, {"AVERAGE_POOL_2D", "CONV_2D"},
    {"CONV_2D", "ADD", "MAX_POOL_2D", "AVERAGE_POOL_2D"},
]


@pytest.mark.parametrize("ops", OP_SUBSETS, ids=lambda s: "+".join(sorted(s)))
def test_int8_outputs_equal_all_cpu_with_kernel_delegate(ops):
    model = int8_cnn()
    _, ref = run(model)
    delegate = KernelDelegate(ops)
    interp, out = run(model, [delegate], invokes=2)
    assert any(p.backend == "test" for p in interp.partitions())
    assert delegate.prepared == [p.nodes for p in interp.partitions() if p.backend == "test"]
    np.testing.assert_array_equal(out[0], ref[0])


@pytest.mark.parametrize("ops", OP_SUBSETS, ids=lambda s: "+".join(sorted(s)))
def test_int8_outputs_equal_all_cpu_with_litert_reference(ops):
    model = int8_cnn()
    _, ref = run(model)
    interp, out = run(model, [LiteRTDelegate(reference=True, ops=ops)])
    assert any(p.backend == "litert" for p in interp.partitions())
    np.testing.assert_array_equal(out[0], ref[0])


def test_int8_float_middle_all_backends():
    model = int8_cnn_with_float_middle()
    _, ref = run(model)
    for delegates in ([LiteRTDelegate(reference=True)], [LiteRTDelegate(reference=True, ops={"TANH", "QUANTIZE"})],
                      [KernelDelegate({"DEQUANTIZE", "CONV_2D"})]):
        _, out = run(model, delegates)
        np.testing.assert_array_equal(out[0], ref[0])


@pytest.mark.parametrize("reference", [False, True])
def test_float_outputs_within_1e5(reference):
    model = float_net()
    _, ref = run(model)
    for ops in (None, {"FULLY_CONNECTED"}, {"TANH", "SOFTMAX"}, {"ADD"}):
        _, out = run(model, [LiteRTDelegate(reference=reference, ops=ops)])
        for o, r in zip(out, ref):
            np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)
    # the second graph output (TANH) is read by FC2 too: a boundary output of its partition
    parts = Interpreter(model=model, delegates=[LiteRTDelegate(ops={"TANH", "SOFTMAX"})]).partitions()
    assert [(p.backend, p.nodes, p.inputs, p.outputs) for p in parts] == [
        (CPU, (0,), (0,), (4,)), ("litert", (1,), (4,), (5,)), (CPU, (2, 3), (5, 1), (8,)),
        ("litert", (4,), (8,), (9,)),
    ]


def test_resize_input_replans_delegate_partitions():
    model = float_net()
    interp = Interpreter(model=model, delegates=[LiteRTDelegate(ops={"FULLY_CONNECTED", "TANH"})])
    interp.allocate_tensors()
    for t, n in ((0, 8), (1, 5)):
        interp.resize_tensor_input(t, (3, n))
    interp.allocate_tensors()
    xs = [np.random.default_rng(3).normal(size=(3, n)).astype(np.float32) for n in (8, 5)]
    ref = Interpreter(model=model)
    for t, n in ((0, 8), (1, 5)):
        ref.resize_tensor_input(t, (3, n))
    ref.allocate_tensors()
    for it in (interp, ref):
        for t, x in zip((0, 1), xs):
            it.set_tensor(t, x)
        it.invoke()
    np.testing.assert_allclose(interp.get_tensor(9), ref.get_tensor(9), rtol=1e-5, atol=1e-6)
    assert interp.get_tensor(9).shape == (3, 5)


# ------------------------------------------------------------------------------------------------ the arena
def test_internal_tensors_need_no_arena_and_boundaries_span_the_partition():
    model = int8_cnn()
    every = {"CONV_2D", "ADD", "MAX_POOL_2D", "AVERAGE_POOL_2D"}
    cpu, _ = run(model)
    held, out = run(model, [KernelDelegate(every)])
    kept, out2 = run(model, [KernelDelegate(every, holds=False)])
    np.testing.assert_array_equal(out[0], out2[0])
    # held: only the boundary (x and the output) is in the arena
    assert {b.key for b in held.arena_plan().buffers} == {(0, 0), (0, 10)}
    assert held.arena_size < cpu.arena_size
    with pytest.raises(ValueError, match=r"null for tensor 3: it lives inside the test partition of nodes 0\.\.5"):
        held.get_tensor(3)
    # not held: every tensor keeps its bytes; the partition's input stays live until its last node
    assert {b.key for b in kept.arena_plan().buffers} == {b.key for b in cpu.arena_plan().buffers}
    plan = kept.arena_plan()
    assert plan[(0, 0)].last_use >= plan[(0, 10)].first_use
    # a partition's boundary input never shares bytes with its outputs
    parts = Interpreter(model=model, delegates=[KernelDelegate({"ADD", "CONV_2D"}, holds=False)])
    parts.allocate_tensors()
    plan = parts.arena_plan()
    for p in parts.partitions():
        for i in p.inputs:
            for o in p.outputs:
                a, b = plan[(0, i)], plan[(0, o)]
                assert a.end <= b.offset or b.end <= a.offset, (p, i, o)


def test_variable_tensors_and_control_flow_stay_on_cpu():
    from edge_sdk.runtime.delegates import cpu_only_reason
    from edge_sdk.runtime.kernels.node import Node, TensorInfo

    state = TensorInfo(0, "state", "INT8", np.dtype(np.int8), (1, 4), is_variable=True)
    out = TensorInfo(1, "y", "INT8", np.dtype(np.int8), (1, 4))
    assert "variable" in cpu_only_reason(Node(0, 0, "ADD", 1, {}, None, [state, state], [out]))
    assert "subgraphs" in cpu_only_reason(Node(0, 0, "WHILE", 1, {}, None, [out], [out]))
    assert cpu_only_reason(Node(0, 0, "ADD", 1, {}, None, [out, out], [out])) is None


def test_delegate_failing_at_invoke_names_the_partition():
    class Broken(KernelDelegate):
        def prepare_partition(self, *args):
            def boom(ins, outs):
                raise KeyError("oops")

            return boom

    interp = Interpreter(model=int8_cnn(), delegates=[Broken({"ADD"})])
    interp.allocate_tensors()
    with pytest.raises(RuntimeError, match=r"test partition of nodes 2\.\.2: eval failed: KeyError"):
        interp.invoke()


# ------------------------------------------------------------------------------------------------ names, external
def test_resolve_names():
    assert isinstance(resolve("litert"), LiteRTDelegate) and not resolve("litert").reference
    assert resolve("litert-ref").reference
    assert isinstance(resolve("nnapi"), NnapiDelegate) and isinstance(resolve("edgetpu"), EdgeTpuDelegate)
    ext = resolve("external:/opt/lib/libfoo.so")
    assert isinstance(ext, ExternalDelegate) and ext.library == "/opt/lib/libfoo.so"
    with pytest.raises(ModelError, match="unknown delegate 'gpu'"):
        Interpreter(model=int8_cnn(), delegates=["gpu"])
    with pytest.raises(ModelError, match="two delegates are named 'litert'"):
        Interpreter(model=int8_cnn(), delegates=["litert", LiteRTDelegate()])
    assert Interpreter(model=int8_cnn(), delegates=["litert"]).partitions()[0].backend == "litert"


def test_litert_refuses_custom_ops():
    d = LiteRTDelegate()
    from edge_sdk.runtime.kernels.node import Node, TensorInfo

    x = TensorInfo(0, "x", "INT16", np.dtype(np.int16), (4,))
    ok, why = d.supports(Node(0, 0, "SignalWindow", 1, {}, b"", [x], [x]))
    assert not ok and "custom op SignalWindow" in why


def test_external_delegate_missing_library_is_a_clear_error():
    model = int8_cnn()
    interp = Interpreter(model=model, delegates=["external:/nonexistent/libnope.so"])
    assert interp.partitions()[0].backend == "external"  # the plan works without the library
    with pytest.raises(DeviceError, match="library /nonexistent/libnope.so not found"):
        interp.allocate_tensors()
    interp = Interpreter(model=model, delegates=[ExternalDelegate("libnope_delegate.so.3", {"device": "usb"})])
    with pytest.raises(DeviceError, match="cannot load library libnope_delegate.so.3"):
        interp.allocate_tensors()


def test_external_library_that_is_not_a_delegate():
    libc = ctypes.util.find_library("c")
    if libc is None:
        pytest.skip("no libc to load")
    with pytest.raises(DeviceError, match="not a TFLite external delegate"):
        Interpreter(model=int8_cnn(), delegates=[ExternalDelegate(libc)]).allocate_tensors()


# A minimal TFLite external delegate: claims no nodes (LiteRT's CPU kernels run everything), records its
# options, and fails to start (as a delegate with no device does) when given fail=1.
_STUB_DELEGATE_C = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef struct TfLiteDelegate {
  void* data_;
  int (*Prepare)(void* context, struct TfLiteDelegate* delegate);
  void* CopyFromBufferHandle;
  void* CopyToBufferHandle;
  void* FreeBufferHandle;
  int64_t flags;
  void* opaque_delegate_builder;
} TfLiteDelegate;
static int prepared = 0, created = 0, n_options = 0;
static char last_value[64];
static int prepare(void* context, TfLiteDelegate* d) { (void)context; (void)d; prepared++; return 0; }
TfLiteDelegate* tflite_plugin_create_delegate(char** keys, char** values, size_t n, void (*report)(const char*)) {
  n_options = (int)n;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(keys[i], "fail") == 0 && strcmp(values[i], "1") == 0) { report("no stub device found"); return NULL; }
    strncpy(last_value, values[i], sizeof last_value - 1);
  }
  TfLiteDelegate* d = (TfLiteDelegate*)calloc(1, sizeof *d);
  d->Prepare = prepare;
  created++;
  return d;
}
void tflite_plugin_destroy_delegate(TfLiteDelegate* d) { free(d); }
int stub_prepared(void) { return prepared; }
int stub_created(void) { return created; }
int stub_n_options(void) { return n_options; }
const char* stub_last_value(void) { return last_value; }
"""


@pytest.fixture(scope="module")
def stub_delegate_lib(tmp_path_factory):
    require_c_runtime()  # the stub is built with the C runtime's compiler
    d = tmp_path_factory.mktemp("stubdelegate")
    (d / "stub.c").write_text(_STUB_DELEGATE_C)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(d / "libstub_delegate.so"), str(d / "stub.c")],
                   check=True, capture_output=True)
    return str(d / "libstub_delegate.so")


def test_external_delegate_runs_through_litert(stub_delegate_lib):
    model = int8_cnn()
    _, ref = run(model)
    ext = ExternalDelegate(stub_delegate_lib, {"device": "usb:0"}, ops={"CONV_2D", "ADD"}, reference=True)
    interp, out = run(model, [ext])
    np.testing.assert_array_equal(out[0], ref[0])
    lib = ctypes.CDLL(stub_delegate_lib)
    lib.stub_last_value.restype = ctypes.c_char_p
    n_parts = sum(p.backend == "external" for p in interp.partitions())
    assert n_parts == 3
    assert lib.stub_created() == n_parts and lib.stub_prepared() == n_parts  # attached to every partition
    assert lib.stub_n_options() == 1 and lib.stub_last_value() == b"usb:0"


def test_external_delegate_that_cannot_start_names_it(stub_delegate_lib):
    ext = ExternalDelegate(stub_delegate_lib, {"fail": "1"})
    with pytest.raises(DeviceError, match="failed to create a delegate.*no stub device found"):
        Interpreter(model=int8_cnn(), delegates=[ext]).allocate_tensors()


# ------------------------------------------------------------------------------------------------ nnapi, edgetpu
@pytest.mark.parametrize("cls", [NnapiDelegate, EdgeTpuDelegate])
def test_profile_delegates_plan_anywhere_with_a_stub_profile(cls):
    profile = StubProfile()
    model = int8_cnn_with_float_middle()
    interp = Interpreter(model=model, delegates=[cls(profile=profile)])
    parts = interp.partitions()
    assert [(p.backend, p.nodes) for p in parts] == [
        (cls.name, (0,)), (CPU, (1, 2, 3)), (cls.name, (4,))
    ]
    assert parts[0].outputs == parts[1].inputs and parts[1].outputs == parts[2].inputs
    assert set(profile.asked) == {cls.backend}


def test_nnapi_off_android_is_a_clear_error():
    interp = Interpreter(model=int8_cnn_with_float_middle(), delegates=[NnapiDelegate(profile=StubProfile())])
    with pytest.raises(DeviceError, match="NNAPI exists only on Android"):
        interp.allocate_tensors()
    assert len(interp.partitions()) == 3


def test_edgetpu_without_runtime_is_a_clear_error():
    try:
        ctypes.CDLL("libedgetpu.so.1")
        pytest.skip("libedgetpu is installed here")
    except OSError:
        pass
    interp = Interpreter(model=int8_cnn_with_float_middle(), delegates=[EdgeTpuDelegate(profile=StubProfile())])
    with pytest.raises(DeviceError, match=r"libedgetpu\.so\.1.*Edge TPU runtime"):
        interp.allocate_tensors()


def test_nnapi_and_edgetpu_plans_from_their_device_profiles():
    from edge_sdk.targets.check import partition_nodes as check_partitions

    model = int8_cnn_with_float_middle(per_channel=False, rank5=True)
    nnapi = Interpreter(model=model, delegates=["nnapi"])
    assert [(p.backend, p.nodes) for p in nnapi.partitions()] == [("nnapi", (0, 1)), (CPU, (2, 3, 4)),
                                                                   ("nnapi", (5, 6))]
    assert "rank-5" in nnapi.node_backends()[3][1]
    edgetpu = Interpreter(model=model, delegates=["edgetpu"])
    assert [(p.backend, p.nodes) for p in edgetpu.partitions()] == [("edgetpu", (0,)), (CPU, (1, 2, 3, 4, 5, 6))]
    # the Edge TPU compiler partitions once: the last conv, which it could take, stays on the CPU
    assert "at most 1 partition" in edgetpu.node_backends()[6][1]
    tpu = edgetpu.delegates[0]
    assert (tpu.library, tpu.options, tpu.max_partitions) == ("libedgetpu.so.1", {"device": "usb"}, 1)
    # the same partitions and boundaries as `edge check` computes for that assignment
    for interp in (nnapi, edgetpu):
        ours = [(p.backend, p.nodes, p.inputs, p.outputs) for p in interp.partitions()]
        theirs = check_partitions(model, [b for b, _ in interp.node_backends()])
        assert ours == [(p.backend, p.nodes, p.inputs, p.outputs) for p in theirs]
    # executing needs the device; planning did not
    for interp in (nnapi, edgetpu):
        with pytest.raises(DeviceError):
            interp.allocate_tensors()
        assert len(interp.partitions()) > 1


def test_a_delegate_taking_nothing_needs_no_device():
    class Refuses:
        def supports(self, node, backend="cpu"):
            return False, "nothing"

    _, out = run(int8_cnn(), [NnapiDelegate(profile=Refuses())])
    _, ref = run(int8_cnn())
    np.testing.assert_array_equal(out[0], ref[0])


# ------------------------------------------------------------------------------------------------ real models
MOBILENET = "tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite"


def test_mobilenet_v2_through_litert():
    from tests.peers import run_litert

    path = shared_model(MOBILENET)
    data = path.read_bytes()
    model = Interpreter(model_path=str(path)).model
    x = _inputs(Interpreter(model=model), seed=1)
    _, ref = run(model, inputs=x)
    # LiteRT's reference kernels equal ours (= TFLM) on every op of this model but FULLY_CONNECTED, where
    # LiteRT's reference int8 kernel rounds one quantum differently from TFLM on a few outputs.
    no_fc = LiteRTDelegate(reference=True, ops={"ADD", "CONV_2D", "DEPTHWISE_CONV_2D", "MEAN", "PAD", "RESHAPE",
                                                "TRANSPOSE"})
    interp, out = run(model, [no_fc], inputs=x)
    assert [p.backend for p in interp.partitions()] == ["litert", CPU]  # FULLY_CONNECTED is the last op
    np.testing.assert_array_equal(out[0], ref[0])
    # everything to LiteRT's reference kernels: equal to LiteRT itself, within one quantum of ours
    interp, out = run(model, [LiteRTDelegate(reference=True)], inputs=x)
    assert len(interp.partitions()) == 1
    np.testing.assert_array_equal(out[0], run_litert(data, x, reference=True)[0])
    assert np.abs(out[0].astype(int) - ref[0].astype(int)).max() <= 1
    # optimized kernels (XNNPACK): equal to LiteRT's own optimized run; per-op one-quantum differences
    # accumulate through 60+ layers, so against ours only the top class is compared
    interp, out = run(model, ["litert"], inputs=x)
    np.testing.assert_array_equal(out[0], run_litert(data, x, reference=False)[0])
    assert np.argmax(out[0]) == np.argmax(ref[0])


def test_slice_partition_is_a_loadable_model():
    model = int8_cnn()
    part = slice_partition(model, 0, [2, 3], [3, 4], [8])
    assert [t.name for t in part.subgraphs[0].tensors][:2] == ["c0", "p1"]
    assert len(part.subgraphs[0].operators) == 2 and len(part.operator_codes) == 2
    assert sum(1 for b in part.buffers if b.data) == 2  # conv3's weights and bias only
    inner = Interpreter(model_content=write_model(part))
    inner.allocate_tensors()
    assert [d["index"] for d in inner.get_output_details()] == [len(part.subgraphs[0].tensors) - 1]


# Real models with what must stay on the CPU (variable-tensor state in SVDF/LSTM, stateful and custom signal
# ops) next to LiteRT partitions: after two invokes (state carried on the CPU), outputs equal ours.
REAL_MODELS = [
    "person_detect.tflite", "keyword_scrambled.tflite", "micro_speech_lstm.tflite", "trained_lstm_int8.tflite",
    "trained_lstm.tflite", "audio_preprocessor_int8.tflite", "hello_world_int8.tflite",
]


@pytest.mark.parametrize("name", REAL_MODELS)
def test_real_models_through_litert_reference(name):
    path = shared_model(f"tflite-micro/{name}")
    model = Interpreter(model_path=str(path)).model
    x = _inputs(Interpreter(model=model), seed=4)
    _, ref = run(model, inputs=x, invokes=2)
    interp, out = run(model, ["litert-ref"], inputs=x, invokes=2)
    assert any(p.backend == "litert-ref" for p in interp.partitions())
    for o, r in zip(out, ref):
        if np.issubdtype(r.dtype, np.floating):
            np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(o, r)
