"""Layout: transposes sink through layout-agnostic ops and cancel; a sandwiched CNN keeps only boundary ones."""

import copy

import numpy as np
import pytest

from converters import graph as G
from converters.passes import layout, notes, optimize
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.peers import run_litert
from tests.test_passes_support import (
    assert_close,
    check_pass,
    op_counts,
    random_inputs,
    run_ours,
)

TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]
RNG = np.random.default_rng(11)


def _t(g, x, perm):
    shape = g.tensors[x].shape
    y = g.tensor(g.tensors[x].name + "_t", tuple(shape[p] for p in perm))
    g.op("TRANSPOSE", [x, g.constant("perm", np.array(perm, np.int32))], [y])
    return y


def _conv_nchw(g, x, c_out, name, kernel=3):
    """What the importer writes for an ONNX Conv: TRANSPOSE -> CONV_2D -> TRANSPOSE."""
    xh = _t(g, x, TO_NHWC)
    n, h, w, c_in = g.tensors[xh].shape
    wt = g.constant(name + "_w", RNG.standard_normal((c_out, kernel, kernel, c_in)).astype(np.float32) * 0.5)
    b = g.constant(name + "_b", RNG.standard_normal(c_out).astype(np.float32))
    y = g.tensor(name, (n, h, w, c_out))
    g.op("CONV_2D", [xh, wt, b], [y], padding="SAME", stride_w=1, stride_h=1)
    return _t(g, y, TO_NCHW)


def _op(g, name, inputs, shape, **opts):
    y = g.tensor(f"{name.lower()}{len(g.tensors)}", shape)
    g.op(name, inputs, [y], **opts)
    return y


def test_inverse_pair_cancels_and_chain_merges():
    g = GraphBuilder()
    x = g.input("x", (1, 3, 4, 5))
    a = _t(g, _t(g, x, TO_NHWC), TO_NCHW)  # cancels
    b = _t(g, _t(g, a, [0, 2, 1, 3]), [0, 1, 3, 2])  # merges into one transpose
    y = _op(g, "RELU", [b], g.tensors[b].shape)
    g.output(y)
    after = check_pass(g.build(), layout.run)
    assert op_counts(after) == {"TRANSPOSE": 1, "RELU": 1}


def test_sinks_through_elementwise_pad_concat_and_reductions():
    g = GraphBuilder()
    x = g.input("x", (1, 4, 5, 3))  # NHWC data, transposed to NCHW (as after a conv)
    z = g.input("z", (1, 4, 5, 3))
    xc = _t(g, x, TO_NCHW)  # (1, 3, 4, 5)
    zc = _t(g, z, TO_NCHW)
    m = _op(g, "MUL", [xc, g.constant("s", RNG.standard_normal((3, 1, 1)).astype(np.float32))], (1, 3, 4, 5))
    a = _op(g, "ADD", [m, zc], (1, 3, 4, 5))
    r = _op(g, "TANH", [a], (1, 3, 4, 5))
    p = _op(g, "PAD", [r, g.constant("pads", np.array([[0, 0], [1, 0], [0, 2], [1, 1]], np.int32))], (1, 4, 6, 7))
    c = _op(g, "CONCATENATION", [p, g.constant("k", np.ones((1, 2, 6, 7), np.float32))], (1, 6, 6, 7), axis=1)
    s = _op(g, "SUM", [c, g.constant("ax", np.array([1], np.int32))], (1, 6, 7), keep_dims=False)
    mx = _op(g, "REDUCE_MAX", [c, g.constant("ax2", np.array([2, 3], np.int32))], (1, 6), keep_dims=False)
    sm = _op(g, "SOFTMAX", [c], (1, 6, 6, 7), beta=1.0)  # the softmax axis would move: stays
    back = _t(g, c, TO_NHWC)  # cancels against the sunk transpose
    g.output(s, mx, sm, back)
    after = check_pass(g.build(), layout.run)
    counts = op_counts(after)
    # left: the one before SOFTMAX (summing the channel axis leaves H, W in order: no transpose after SUM)
    assert counts["TRANSPOSE"] == 1, counts
    sub = after.subgraphs[0]
    (t,) = [op for op in sub.operators if after.op_name(op) == "TRANSPOSE"]
    softmax = next(op for op in sub.operators if after.op_name(op) == "SOFTMAX")
    assert softmax.inputs[0] == t.outputs[0]
    assert counts["CONCATENATION"] == 1 and counts["REDUCE_MAX"] == 1


def test_binary_with_untransposed_runtime_operand_is_left_alone():
    g = GraphBuilder()
    x = g.input("x", (1, 4, 5, 3))
    z = g.input("z", (1, 3, 4, 5))
    a = _op(g, "ADD", [_t(g, x, TO_NCHW), z], (1, 3, 4, 5))
    g.output(a)
    after = check_pass(g.build(), layout.run)
    assert op_counts(after) == {"TRANSPOSE": 1, "ADD": 1}


def _cnn():
    """conv -> BN (MUL, ADD) -> relu -> maxpool -> conv -> add residual -> relu -> global mean -> flatten -> FC,
    every layout-sensitive op in an NCHW sandwich; outputs: logits and the last feature map (NCHW)."""
    g = GraphBuilder()
    x = g.input("x", (1, 3, 8, 8))
    y = _conv_nchw(g, x, 8, "conv1")
    y = _op(g, "MUL", [y, g.constant("bn_s", RNG.uniform(0.5, 1.5, (8, 1, 1)).astype(np.float32))], (1, 8, 8, 8))
    y = _op(g, "ADD", [y, g.constant("bn_b", RNG.standard_normal((1, 8, 1, 1)).astype(np.float32))], (1, 8, 8, 8))
    y = _op(g, "RELU", [y], (1, 8, 8, 8))
    ph = _op(g, "MAX_POOL_2D", [_t(g, y, TO_NHWC)], (1, 4, 4, 8), padding="VALID", stride_w=2, stride_h=2,
             filter_width=2, filter_height=2)
    p = _t(g, ph, TO_NCHW)
    y = _conv_nchw(g, p, 8, "conv2")
    y = _op(g, "ADD", [y, p], (1, 8, 4, 4))
    feat = _op(g, "RELU", [y], (1, 8, 4, 4))
    mean = _op(g, "MEAN", [feat, g.constant("axes", np.array([2, 3], np.int32))], (1, 8, 1, 1), keep_dims=True)
    flat = _op(g, "RESHAPE", [mean, g.constant("shape", np.array([1, 8], np.int32))], (1, 8), new_shape=[1, 8])
    w = g.constant("fc_w", RNG.standard_normal((10, 8)).astype(np.float32))
    logits = _op(g, "FULLY_CONNECTED", [flat, w, g.constant("fc_b", np.zeros(10, np.float32))], (1, 10))
    g.output(logits, feat)
    return g.build()


def test_sandwiched_cnn_keeps_boundary_transposes_only():
    model = _cnn()
    assert op_counts(model)["TRANSPOSE"] == 6
    after = check_pass(model, optimize)
    counts = op_counts(after)
    assert counts["TRANSPOSE"] == 2, counts  # model input and the NCHW feature-map output
    assert counts == {"TRANSPOSE": 2, "CONV_2D": 2, "MAX_POOL_2D": 1, "ADD": 1, "MEAN": 1, "RESHAPE": 1,
                      "FULLY_CONNECTED": 1}, counts
    ops = after.subgraphs[0].operators
    acts = {after.op_name(op): G.options(after, op).get("fused_activation_function") for op in ops}
    assert acts["ADD"] == "RELU"  # residual relu fused
    assert G.options(after, ops[1])["fused_activation_function"] == "RELU"  # BN folded, relu fused into conv1
    assert notes(after)["passes"]["layout"] > 0 and notes(after)["nhwc_io"] == {"inputs": [], "outputs": []}


def test_sandwiched_cnn_with_nhwc_io_has_no_transposes():
    model = _cnn()
    before = copy.deepcopy(model)
    after = optimize(model, nhwc_io=True)
    assert "TRANSPOSE" not in op_counts(after)
    io = notes(after)["nhwc_io"]
    assert [(e["name"], e["old_shape"], e["new_shape"]) for e in io["inputs"]] == [("x", [1, 3, 8, 8], [1, 8, 8, 3])]
    assert [(e["old_shape"], e["new_shape"]) for e in io["outputs"]] == [([1, 8, 4, 4], [1, 4, 4, 8])]
    sub = after.subgraphs[0]
    assert sub.inputs == [io["inputs"][0]["index"]] and sub.outputs[1] == io["outputs"][0]["index"]
    x = random_inputs(before)
    want = run_ours(before, x)
    want[1] = np.transpose(want[1], TO_NHWC)
    xh = [np.transpose(x[0], TO_NHWC)]
    assert_close(run_ours(after, xh), want)
    assert_close(run_litert(write_model(after), xh), want)


@pytest.mark.parametrize("rank", [3])
def test_nhwc_io_1d(rank):
    """A 1-D conv the importer way: [N,C,L] -> TRANSPOSE [0,2,1] -> RESHAPE [N,1,L,C] -> CONV_2D -> back."""
    g = GraphBuilder()
    x = g.input("x", (1, 4, 10))
    xt = _t(g, x, [0, 2, 1])
    x4 = _op(g, "RESHAPE", [xt, g.constant("s4", np.array([1, 1, 10, 4], np.int32))], (1, 1, 10, 4),
             new_shape=[1, 1, 10, 4])
    y4 = _op(g, "CONV_2D", [x4, g.constant("w", RNG.standard_normal((6, 1, 3, 4)).astype(np.float32)),
                            g.constant("b", np.zeros(6, np.float32))], (1, 1, 10, 6),
             padding="SAME", stride_w=1, stride_h=1)
    y3 = _op(g, "RESHAPE", [y4, g.constant("s3", np.array([1, 10, 6], np.int32))], (1, 10, 6), new_shape=[1, 10, 6])
    y = _t(g, y3, [0, 2, 1])
    r = _op(g, "RELU", [y], (1, 6, 10))
    g.output(r)
    model = g.build()
    before = copy.deepcopy(model)
    after = optimize(model, nhwc_io=True)
    assert "TRANSPOSE" not in op_counts(after)
    assert op_counts(after)["CONV_2D"] == 1
    x = random_inputs(before)
    want = [np.transpose(run_ours(before, x)[0], [0, 2, 1])]
    assert_close(run_ours(after, [np.transpose(x[0], [0, 2, 1])]), want)


def test_flatten_of_nchw_feature_map_folds_into_fc_weights():
    g = GraphBuilder()
    x = g.input("x", (2, 3, 4, 4))
    y = _conv_nchw(g, x, 5, "conv")  # (2, 5, 4, 4) NCHW
    flat = _op(g, "RESHAPE", [y, g.constant("shape", np.array([2, 80], np.int32))], (2, 80), new_shape=[2, 80])
    w = g.constant("fc_w", RNG.standard_normal((7, 80)).astype(np.float32))
    out = _op(g, "FULLY_CONNECTED", [flat, w, -1], (2, 7))
    g.output(out)
    after = check_pass(g.build(), optimize)
    assert op_counts(after) == {"TRANSPOSE": 1, "CONV_2D": 1, "RESHAPE": 1, "FULLY_CONNECTED": 1}


def test_shared_input_transposes_dedupe_and_1d_reshapes_meet():
    g = GraphBuilder()
    x = g.input("x", (1, 3, 6, 6))
    a = _conv_nchw(g, x, 4, "a")
    b = _conv_nchw(g, x, 2, "b")  # the same TRANSPOSE of x again
    cat = _op(g, "CONCATENATION", [a, b], (1, 6, 6, 6), axis=1)
    y = _conv_nchw(g, cat, 3, "c")
    g.output(y)
    after = check_pass(g.build(), optimize)
    assert op_counts(after) == {"TRANSPOSE": 2, "CONV_2D": 3, "CONCATENATION": 1}
    # 1-D: conv -> reshape -> transpose -> relu -> transpose -> reshape -> conv: relu fuses, reshapes cancel
    g = GraphBuilder()
    x = g.input("x", (1, 5, 3))  # already N, L, C
    x4 = _op(g, "RESHAPE", [x, g.constant("s4", np.array([1, 1, 5, 3], np.int32))], (1, 1, 5, 3), new_shape=[1, 1, 5, 3])
    w = g.constant("w", RNG.standard_normal((4, 1, 3, 3)).astype(np.float32))
    c = _op(g, "CONV_2D", [x4, w, g.constant("b", np.zeros(4, np.float32))], (1, 1, 5, 4), padding="SAME", stride_w=1, stride_h=1)
    c3 = _op(g, "RESHAPE", [c, g.constant("s3", np.array([1, 5, 4], np.int32))], (1, 5, 4), new_shape=[1, 5, 4])
    r = _op(g, "RELU", [_t(g, c3, [0, 2, 1])], (1, 4, 5))
    r4 = _op(g, "RESHAPE", [_t(g, r, [0, 2, 1]), g.constant("s4b", np.array([1, 1, 5, 4], np.int32))], (1, 1, 5, 4),
             new_shape=[1, 1, 5, 4])
    w2 = g.constant("w2", RNG.standard_normal((2, 1, 3, 4)).astype(np.float32))
    y = _op(g, "CONV_2D", [r4, w2, g.constant("b2", np.zeros(2, np.float32))], (1, 1, 5, 2), padding="SAME", stride_w=1, stride_h=1)
    g.output(y)
    after = check_pass(g.build(), optimize)
    assert op_counts(after) == {"RESHAPE": 1, "CONV_2D": 2}


def test_nhwc_io_input_with_a_layout_free_reader_too():
    g = GraphBuilder()
    x = g.input("x", (1, 3, 5, 5))
    y = _conv_nchw(g, x, 4, "conv")
    s = _op(g, "MEAN", [x, g.constant("axes", np.array([2, 3], np.int32))], (1, 3), keep_dims=False)
    g.output(y, s)
    model = g.build()
    before = copy.deepcopy(model)
    after = optimize(model, nhwc_io=True)
    assert "TRANSPOSE" not in op_counts(after)  # the MEAN's axes moved instead
    x0 = random_inputs(before)
    want = run_ours(before, x0)
    want[0] = np.transpose(want[0], TO_NHWC)
    xh = [np.transpose(x0[0], TO_NHWC)]
    assert_close(run_ours(after, xh), want)
    assert_close(run_litert(write_model(after), xh), want)


def test_imported_mobilenet_v2_keeps_only_the_input_transpose():
    """End to end with the ONNX importer: every Conv/BN/Clip sandwich cancels; matches onnxruntime."""
    import onnxruntime  # a test dependency (pyproject [test])

    from benchmarks.convert import mobilenet_v2
    from converters.import_onnx import import_onnx

    proto, _ = mobilenet_v2(size=32, width=0.35, classes=10)
    model = import_onnx(proto)
    assert op_counts(model)["TRANSPOSE"] > 50
    optimize(model)
    counts = op_counts(model)
    assert counts["TRANSPOSE"] == 1 and "MUL" not in counts and "RELU6" not in counts, counts
    x = random_inputs(model)
    session = onnxruntime.InferenceSession(proto.SerializeToString())
    want = session.run(None, {session.get_inputs()[0].name: x[0]})
    assert_close(run_ours(model, x), want, rtol=1e-4, atol=1e-4)
    assert_close(run_litert(write_model(model), x), want, rtol=1e-4, atol=1e-4)
