"""import_onnx on streaming-model shapes: pinned inputs (input_values), If folded at convert time, Loop / Scan
unrolled, and recurrent state (LSTM / GRU / RNN) as graph inputs and outputs, streamed chunk by chunk.

Every model is built here with onnx.helper; onnxruntime is the reference. The converted model runs in our
interpreter from the written .tflite bytes (and, where noted, in LiteRT's reference kernels); streamed
models carry their state: chunk k's state outputs are chunk k+1's state inputs, on both sides separately.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from converters.import_onnx import import_onnx
from edge_sdk import ConversionError, Interpreter
from edge_sdk.errors import UsageError
from edge_sdk.model import write_model
from tests.peers import run_litert

ATOL = 1e-5


def f32(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def vi(name, elem=TP.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def model_of(nodes, inputs, outputs, inits=None, opset=16):
    """inputs / outputs: ValueInfoProtos; inits: name -> array."""
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    m = helper.make_model(helper.make_graph(nodes, "test", inputs, outputs, inits),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def ort_run(proto, feeds: dict):
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


class Ours:
    """The converted model, from its .tflite bytes, in edge-sdk's interpreter."""

    def __init__(self, model):
        self.bytes = write_model(model)
        self.it = Interpreter(model_content=self.bytes)
        self.it.allocate_tensors()

    @property
    def input_names(self):
        return [d["name"] for d in self.it.get_input_details()]

    @property
    def output_names(self):
        return [d["name"] for d in self.it.get_output_details()]

    def __call__(self, *inputs):
        details = self.it.get_input_details()
        assert len(details) == len(inputs)
        for d, x in zip(details, inputs):
            self.it.set_tensor(d["index"], x)
        self.it.invoke()
        return [self.it.get_tensor(d["index"]) for d in self.it.get_output_details()]


def close(got, want, what=""):
    assert len(got) == len(want), what
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{what} output {k}: shape {g.shape} vs onnxruntime {w.shape}"
        np.testing.assert_allclose(g, w, rtol=0, atol=ATOL, err_msg=f"{what} output {k}")


def ops(model):
    return [model.op_name(op) for op in model.subgraphs[0].operators]


# ---------------------------------------------------------------------------------------------- pinned inputs, If
def _scale_branch(name, k, extra_op=None):
    """A branch y = x * k (+ an outer-scope bias in the then branch), with a local initializer."""
    nodes = [helper.make_node("Mul", ["x", f"{name}_k"], [f"{name}_m"])]
    if extra_op:
        nodes.append(helper.make_node(extra_op, [f"{name}_m", "bias"], [f"{name}_y"]))
    else:
        nodes.append(helper.make_node("Identity", [f"{name}_m"], [f"{name}_y"]))
    return helper.make_graph(nodes, name, [], [vi(f"{name}_y", TP.FLOAT, [1, 4])],
                             [numpy_helper.from_array(np.float32(k), f"{name}_k")])


def _sr_model():
    """y = sr == 16000 ? x * 2 + bias : x * 3 - bias; sr an int64 scalar input (silero VAD's shape)."""
    nodes = [helper.make_node("Equal", ["sr", "k16000"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["y"], name="If_0",
                              then_branch=_scale_branch("A", 2.0, "Add"), else_branch=_scale_branch("B", 3.0, "Sub"))]
    return model_of(nodes, [vi("x", TP.FLOAT, [1, 4]), vi("sr", TP.INT64, [])], [vi("y", TP.FLOAT, [1, 4])],
                    {"k16000": np.array(16000, np.int64), "bias": f32(1, 4, seed=3)})


@pytest.mark.parametrize("sr", [16000, 8000, "16000", "8000"])
def test_if_on_pinned_sample_rate(sr):
    proto = _sr_model()
    x = f32(1, 4)
    model = import_onnx(proto, input_values={"sr": sr})
    ours = Ours(model)
    assert ours.input_names == ["x"]  # sr left the signature
    want = ort_run(proto, {"x": x, "sr": np.array(int(sr), np.int64)})
    close(ours(x), want)
    assert "IF" not in ops(model)
    assert model.import_notes["pinned_inputs"] == {"sr": int(sr)}
    taken = "then_branch" if int(sr) == 16000 else "else_branch"
    assert any(f"If 'If_0'" in n and taken in n for n in model.import_notes["control_flow"])
    assert any("'sr' pinned to" in n for n in model.import_warnings)


def test_if_on_run_time_input_becomes_if_and_names_the_flag_to_pin_it():
    # issue 24 point 1: a run-time condition is no longer refused, it becomes TFLite IF (tests/
    # test_convert_control_flow.py runs it); the note still names the input to pin to keep one branch
    model = import_onnx(_sr_model())
    assert ops(model) == ["EQUAL", "IF"] and len(model.subgraphs) == 3
    (note,) = [n for n in model.import_warnings if n.startswith("If 'If_0'")]
    assert "depends on input 'sr'" in note and "--input-value sr=VALUE" in note
    assert "\n" not in note


def test_pinned_input_errors_are_one_line():
    proto = _sr_model()
    with pytest.raises(ConversionError) as err:
        import_onnx(proto, input_values={"rate": 16000})
    assert str(err.value) == "--input-value (input_values=): the model has no input 'rate' (inputs: x, sr)"
    assert isinstance(err.value, UsageError)  # a misuse of the flag: the CLI exits 2
    for bad, words in (("fast", "not a number"), (16000.5, "not a whole number"), ([1, 2], "does not fit"),
                       (2 ** 70, "out of its range")):
        with pytest.raises(ConversionError) as err:
            import_onnx(proto, input_values={"sr": bad})
        assert words in str(err.value) and "'sr'" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("value", [[0.5, -1.0, 2.0, 0.25], "0.5,-1,2,0.25", np.array([[0.5, -1.0, 2.0, 0.25]])])
def test_pinned_float_tensor_takes_the_declared_shape(value):
    """A [1, 4] float input pinned by a flat list, text or array: its value reaches every use."""
    nodes = [helper.make_node("Mul", ["x", "gain"], ["m"]), helper.make_node("Relu", ["m"], ["y"])]
    proto = model_of(nodes, [vi("x", TP.FLOAT, [2, 4]), vi("gain", TP.FLOAT, [1, 4])], [vi("y", TP.FLOAT, [2, 4])])
    x = f32(2, 4, seed=1)
    gain = np.array([[0.5, -1.0, 2.0, 0.25]], np.float32)
    ours = Ours(import_onnx(proto, input_values={"gain": value}))
    assert ours.input_names == ["x"]
    close(ours(x), ort_run(proto, {"x": x, "gain": gain}))


def test_if_on_constant_condition_with_outer_scope_and_nested_if():
    """Constant conditions (an initializer, a Constant node, one folded from x's shape); branches read
    outer-scope values, have several outputs and nodes, and one holds another If (on a folded condition)."""
    inner = helper.make_node(
        "If", ["inner_cond"], ["t_z"],
        then_branch=helper.make_graph([helper.make_node("Sigmoid", ["t_a"], ["ti_y"])], "ti", [],
                                      [vi("ti_y", TP.FLOAT, [1, 4])]),
        else_branch=helper.make_graph([helper.make_node("Neg", ["t_a"], ["te_y"])], "te", [],
                                      [vi("te_y", TP.FLOAT, [1, 4])]))
    then_g = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["t_a"]),
         helper.make_node("Greater", ["one", "zero"], ["inner_cond"]),
         inner,
         helper.make_node("Mul", ["t_z", "x"], ["t_b"])], "then", [],
        [vi("t_b", TP.FLOAT, [1, 4]), vi("t_a", TP.FLOAT, [1, 4])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "w"], ["e_a"]),
                                helper.make_node("Tanh", ["e_a"], ["e_b"])], "else", [],
                               [vi("e_b", TP.FLOAT, [1, 4]), vi("e_a", TP.FLOAT, [1, 4])])
    nodes = [helper.make_node("Constant", [], ["c_false"], value=numpy_helper.from_array(np.array(False))),
             helper.make_node("If", ["c_true"], ["p", "q"], then_branch=then_g, else_branch=else_g),
             helper.make_node("If", ["c_false"], ["r", "s"], then_branch=then_g, else_branch=else_g),
             # rank check as exporters write it: Size(Shape(x)) == 2 (true: x is [1, 4])
             helper.make_node("Shape", ["x"], ["xs"]), helper.make_node("Size", ["xs"], ["rank"]),
             helper.make_node("Equal", ["rank", "two"], ["is2d"]),
             helper.make_node("If", ["is2d"], ["u"],
                              then_branch=helper.make_graph([helper.make_node("Relu", ["x"], ["u_t"])], "ut", [],
                                                            [vi("u_t", TP.FLOAT, [1, 4])]),
                              else_branch=helper.make_graph([helper.make_node("Abs", ["x"], ["u_e"])], "ue", [],
                                                            [vi("u_e", TP.FLOAT, [1, 4])]))]
    inits = {"c_true": np.array(True), "w": f32(1, 4, seed=2), "one": np.float32(1), "zero": np.float32(0),
             "two": np.array(2, np.int64)}
    proto = model_of(nodes, [vi("x", TP.FLOAT, [1, 4])], [vi(n, TP.FLOAT, [1, 4]) for n in "pqrsu"], inits)
    x = f32(1, 4, seed=1)
    model = import_onnx(proto)
    close(Ours(model)(x), ort_run(proto, {"x": x}))
    assert len(model.import_notes["control_flow"]) == 4  # three Ifs, and the nested one after inlining
    assert "LOGISTIC" in ops(model) and "TANH" in ops(model) and "ABS" not in ops(model)


# ---------------------------------------------------------------------------------------------- Loop, Scan
def _loop_body(cond_out="identity"):
    """i, cond, acc -> cond, acc + x * (i + 1) (or its sigmoid on iteration 1: a nested If on i), acc * 2."""
    nested = helper.make_node(
        "If", ["is1"], ["stepv"],
        then_branch=helper.make_graph([helper.make_node("Sigmoid", ["prod"], ["sig"])], "b1", [],
                                      [vi("sig", TP.FLOAT, [1, 4])]),
        else_branch=helper.make_graph([helper.make_node("Identity", ["prod"], ["same"])], "b0", [],
                                      [vi("same", TP.FLOAT, [1, 4])]))
    nodes = [helper.make_node("Add", ["i", "one_i"], ["i1"]),
             helper.make_node("Cast", ["i1"], ["fi"], to=TP.FLOAT),
             helper.make_node("Mul", ["x", "fi"], ["prod"]),
             helper.make_node("Equal", ["i", "one_i"], ["is1"]),
             nested,
             helper.make_node("Add", ["acc", "stepv"], ["acc_out"]),
             helper.make_node("Mul", ["acc_out", "two_f"], ["scan_out"])]
    if cond_out == "identity":
        nodes.append(helper.make_node("Identity", ["cond"], ["cond_out"]))
    elif cond_out == "counter":  # stop after i == 2: known at convert time
        nodes.append(helper.make_node("Less", ["i", "two_i"], ["cond_out"]))
    else:  # data-dependent: go on while sum(acc) < 2
        nodes += [helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
                  helper.make_node("Less", ["total", "two_f"], ["cond_out"])]
    return helper.make_graph(
        nodes, "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("acc", TP.FLOAT, [1, 4])],
        [vi("cond_out", TP.BOOL, []), vi("acc_out", TP.FLOAT, [1, 4]), vi("scan_out", TP.FLOAT, [1, 4])],
        [numpy_helper.from_array(np.array(1, np.int64), "one_i"), numpy_helper.from_array(np.float32(2), "two_f"),
         numpy_helper.from_array(np.array(2, np.int64), "two_i")])


def _loop_model(trip_input=False, cond_out="identity", with_m=True, stack_read=False):
    """``stack_read``: the scan output is read by a node (Neg) whose output is the model's, not a model output."""
    node = helper.make_node("Loop", ["M" if with_m else "", "c0", "acc0"], ["acc", "stack"], name="loop",
                            body=_loop_body(cond_out))
    inputs = [vi("x", TP.FLOAT, [1, 4]), vi("acc0", TP.FLOAT, [1, 4])]
    inits = {"c0": np.array(True)}
    if trip_input:
        inputs.append(vi("M", TP.INT64, []))
    else:
        inits["M"] = np.array(3, np.int64)
    nodes = [node] + ([helper.make_node("Neg", ["stack"], ["stack_neg"])] if stack_read else [])
    return model_of(nodes, inputs, [vi("acc", TP.FLOAT, [1, 4]),
                                    vi("stack_neg" if stack_read else "stack", TP.FLOAT, [3, 1, 4])], inits)


def test_loop_with_constant_trip_count_unrolled():
    proto = _loop_model()
    x, acc0 = f32(1, 4, seed=1), f32(1, 4, seed=2)
    model = import_onnx(proto)
    close(Ours(model)(x, acc0), ort_run(proto, {"x": x, "acc0": acc0}))
    notes = model.import_notes["control_flow"]
    assert any("Loop 'loop'" in n and "3" in n for n in notes)
    assert sum("If " in n for n in notes) == 3  # the body's If, folded in each unrolled iteration
    assert ops(model).count("LOGISTIC") == 1  # only iteration 1 takes the sigmoid branch


@pytest.mark.parametrize("kind,words", [
    ("trip_input", "trip count M ('M') is computed at run time"),
    ("while", "no trip count M"),
    ("data_dependent", "data-dependent termination"),
])
def test_loop_that_cannot_be_unrolled_is_refused_in_one_line(kind, words):
    proto = _loop_model(trip_input=kind == "trip_input", cond_out="data" if kind == "data_dependent" else "identity",
                        with_m=kind != "while", stack_read=kind == "data_dependent")
    with pytest.raises(ConversionError) as err:
        import_onnx(proto)
    (problem,) = err.value.problems
    assert problem.startswith("node 'loop' (Loop, opset 16): ") and words in problem and "\n" not in problem
    if kind == "trip_input":
        assert "--input-value" in problem
        # pinned, the same model unrolls
        x, acc0 = f32(1, 4, seed=1), f32(1, 4, seed=2)
        got = Ours(import_onnx(proto, input_values={"M": 3}))(x, acc0)
        close(got, ort_run(proto, {"x": x, "acc0": acc0, "M": np.array(3, np.int64)}))


@pytest.mark.parametrize("with_m", [True, False])
def test_loop_ending_on_a_counter_is_unrolled(with_m):
    """The body's condition is i < 2 (a while loop without M, or with M = 3): 3 iterations, known at convert time."""
    proto = _loop_model(cond_out="counter", with_m=with_m)
    x, acc0 = f32(1, 4, seed=1), f32(1, 4, seed=2)
    model = import_onnx(proto)
    close(Ours(model)(x, acc0), ort_run(proto, {"x": x, "acc0": acc0}))
    assert any("Loop 'loop'" in n and "trip count 3" in n for n in model.import_notes["control_flow"])


def test_loop_with_a_carried_counter_and_huge_m_is_unrolled():
    """As TorchScript writes `while j < 4: j += 1; ...`: M = INT64_MAX, a loop-carried counter j (initial 0)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["j", "one"], ["j_out"]), helper.make_node("Less", ["j_out", "four"], ["cond_out"]),
         helper.make_node("Mul", ["acc", "x"], ["acc_out"])],
        "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("j", TP.INT64, []), vi("acc", TP.FLOAT, [1, 4])],
        [vi("cond_out", TP.BOOL, []), vi("j_out", TP.INT64, []), vi("acc_out", TP.FLOAT, [1, 4])],
        [numpy_helper.from_array(np.array(1, np.int64), "one"), numpy_helper.from_array(np.array(4, np.int64), "four")])
    node = helper.make_node("Loop", ["M", "c0", "j0", "acc0"], ["j_final", "acc"], name="loop", body=body)
    proto = model_of([node], [vi("x", TP.FLOAT, [1, 4]), vi("acc0", TP.FLOAT, [1, 4])],
                     [vi("j_final", TP.INT64, []), vi("acc", TP.FLOAT, [1, 4])],
                     {"M": np.array(np.iinfo(np.int64).max, np.int64), "c0": np.array(True), "j0": np.array(0, np.int64)})
    x, acc0 = f32(1, 4, seed=1), f32(1, 4, seed=2)
    model = import_onnx(proto)
    got, want = Ours(model)(x, acc0), ort_run(proto, {"x": x, "acc0": acc0})
    assert int(got[0]) == int(want[0]) == 4
    close(got[1:], want[1:])
    assert ops(model).count("MUL") == 4


@pytest.mark.parametrize("direction", [0, 1])
def test_scan_unrolled(direction):
    """Scan over 5 steps of xs [5, 3]: state s = tanh(s @ W + x_t), output per step; both directions."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["s", "w"], ["sw"]),
         helper.make_node("Add", ["sw", "xt"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "xt"], ["y_t"])], "body",
        [vi("s", TP.FLOAT, [1, 3]), vi("xt", TP.FLOAT, [3])],
        [vi("s_out", TP.FLOAT, [1, 3]), vi("y_t", TP.FLOAT, [1, 3])])
    node = helper.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], name="scan", body=body, num_scan_inputs=1,
                            scan_input_directions=[direction], scan_output_directions=[direction])
    proto = model_of([node], [vi("s0", TP.FLOAT, [1, 3]), vi("xs", TP.FLOAT, [5, 3])],
                     [vi("s_final", TP.FLOAT, [1, 3]), vi("ys", TP.FLOAT, [5, 1, 3])], {"w": f32(3, 3, seed=4)})
    s0, xs = f32(1, 3, seed=1), f32(5, 3, seed=2)
    model = import_onnx(proto)
    close(Ours(model)(s0, xs), ort_run(proto, {"s0": s0, "xs": xs}))
    assert any("Scan 'scan'" in n for n in model.import_notes["control_flow"])


def test_scan_over_axis_1_with_output_axis_1():
    body = helper.make_graph([helper.make_node("Add", ["s", "xt"], ["s_out"]),
                              helper.make_node("Sigmoid", ["s_out"], ["y_t"])], "body",
                             [vi("s", TP.FLOAT, [2]), vi("xt", TP.FLOAT, [2])],
                             [vi("s_out", TP.FLOAT, [2]), vi("y_t", TP.FLOAT, [2])])
    node = helper.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], body=body, num_scan_inputs=1,
                            scan_input_axes=[1], scan_output_axes=[-1])
    proto = model_of([node], [vi("s0", TP.FLOAT, [2]), vi("xs", TP.FLOAT, [2, 6])],
                     [vi("s_final", TP.FLOAT, [2]), vi("ys", TP.FLOAT, [2, 6])])
    s0, xs = f32(2, seed=1), f32(2, 6, seed=2)
    close(Ours(import_onnx(proto))(s0, xs), ort_run(proto, {"s0": s0, "xs": xs}))


# ---------------------------------------------------------------------------------------------- recurrent state
def _recurrent_model(op, steps=4, batch=1, feat=3, hidden=5, layout=0, outputs=("y", "yh", "yc"), peep=False,
                     clip=None, seed=0):
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    r = np.random.default_rng(seed)
    inits = {"w": (r.standard_normal((1, gates * hidden, feat)) * 0.5).astype(np.float32),
             "r": (r.standard_normal((1, gates * hidden, hidden)) * 0.5).astype(np.float32),
             "b": (r.standard_normal((1, 2 * gates * hidden)) * 0.5).astype(np.float32)}
    state_shape = [1, batch, hidden] if layout == 0 else [batch, 1, hidden]
    names = ["x", "w", "r", "b", "", "h"]
    inputs = [vi("x", TP.FLOAT, [steps, batch, feat] if layout == 0 else [batch, steps, feat]),
              vi("h", TP.FLOAT, state_shape)]
    outs = ["y", "yh"]
    if op == "LSTM":
        names.append("c")
        inputs.append(vi("c", TP.FLOAT, state_shape))
        outs.append("yc")
        if peep:
            names.append("p")
            inits["p"] = (r.standard_normal((1, 3 * hidden)) * 0.5).astype(np.float32)
    attrs = {"hidden_size": hidden, "layout": layout}
    if clip is not None:
        attrs["clip"] = clip
    node = helper.make_node(op, names, [o if o in outputs else "" for o in outs], name=f"rec_{op}", **attrs)
    return model_of([node], inputs, [vi(o) for o in outs if o in outputs], inits, opset=14)


def _stream(proto, ours, chunks, n_state, n_out_state, state_out_index):
    """Run chunk after chunk, each side carrying its own state; compare every output of every chunk."""
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in proto.graph.input]
    state_w = [np.zeros(sess.get_inputs()[1 + k].shape, np.float32) for k in range(n_state)]
    state_g = [s.copy() for s in state_w]
    for k, x in enumerate(chunks):
        want = sess.run(None, dict(zip(names, [x, *state_w])))
        got = ours(x, *state_g)
        close(got, want, f"chunk {k}")
        state_w = [want[i] for i in state_out_index]
        state_g = [got[i] for i in state_out_index]
        assert len(state_w) == n_out_state


@pytest.mark.parametrize("variant", [{}, {"peep": True}, {"clip": 0.6}, {"batch": 2, "steps": 1}])
def test_lstm_state_in_and_out_streamed(variant):
    variant = dict(variant)
    steps, batch = variant.pop("steps", 4), variant.pop("batch", 1)
    proto = _recurrent_model("LSTM", steps=steps, batch=batch, **variant)
    model = import_onnx(proto)
    ours = Ours(model)
    assert ours.input_names == ["x", "h", "c"] and ours.output_names == ["y", "yh", "yc"]
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" not in ops(model)
    assert not any(t.is_variable for t in model.subgraphs[0].tensors)  # the state lives in inputs and outputs
    chunks = [f32(steps, batch, 3, seed=10 + k) for k in range(3)]
    _stream(proto, ours, chunks, 2, 2, [1, 2])
    (state,) = model.import_notes["state"]
    assert state["state_inputs"] == {"initial_h": ["h"], "initial_c": ["c"]}
    assert state["state_outputs"] == {"Y_h": ["yh"], "Y_c": ["yc"]}
    assert any("LSTM 'rec_LSTM': streaming state" in n for n in model.import_warnings)


def test_lstm_state_in_litert_too():
    proto = _recurrent_model("LSTM")
    model = import_onnx(proto)
    x, h, c = f32(4, 1, 3, seed=1), f32(1, 1, 5, seed=2), f32(1, 1, 5, seed=3)
    close(run_litert(write_model(model), [x, h, c]), ort_run(proto, {"x": x, "h": h, "c": c}), "litert")


@pytest.mark.parametrize("op", ["GRU", "RNN"])
def test_gru_rnn_state_in_and_out_streamed(op):
    proto = _recurrent_model(op)
    model = import_onnx(proto)
    ours = Ours(model)
    assert ours.input_names == ["x", "h"] and ours.output_names == ["y", "yh"]
    _stream(proto, ours, [f32(4, 1, 3, seed=20 + k) for k in range(3)], 1, 1, [1])
    (state,) = model.import_notes["state"]
    assert state["op"] == op and state["state_inputs"] == {"initial_h": ["h"]}
    assert state["state_outputs"] == {"Y_h": ["yh"]}


def test_lstm_with_zero_state_keeps_the_sequence_op():
    """No state in or out: the fused UNIDIRECTIONAL_SEQUENCE_LSTM, as before (and no state note)."""
    proto = _recurrent_model("LSTM", outputs=("y",))
    del proto.graph.input[1:]
    node = proto.graph.node[0]
    del node.input[4:]
    model = import_onnx(proto)
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in ops(model)
    assert "state" not in model.import_notes


# ---------------------------------------------------------------------------------------------- a silero-VAD-like model
H = 16  # LSTM width
CHUNK = 576


def _vad_branch(tag, hop, w, local):
    """The per-sample-rate network: conv "STFT" (win, hop) -> magnitude -> conv encoder -> mean over time ->
    LSTM from the outer-scope state -> ReLU, 1x1 conv, sigmoid; and the new state (h, c). ``w`` holds this
    branch's weights: as branch-local initializers (``local``) or read from the outer scope by name."""
    p = f"{tag}_"
    nodes = [
        helper.make_node("Unsqueeze", ["audio", "ax1"], [p + "a3"]),  # [1, 1, N]
        helper.make_node("Conv", [p + "a3", p + "stft"], [p + "spec"], strides=[hop]),  # [1, 2B, L]
        helper.make_node("Split", [p + "spec", "halves"], [p + "re", p + "im"], axis=1),
        helper.make_node("Mul", [p + "re", p + "re"], [p + "re2"]),
        helper.make_node("Mul", [p + "im", p + "im"], [p + "im2"]),
        helper.make_node("Add", [p + "re2", p + "im2"], [p + "pow"]),
        helper.make_node("Sqrt", [p + "pow"], [p + "mag"]),
        helper.make_node("Conv", [p + "mag", p + "enc1", p + "enc1b"], [p + "e1"], pads=[1, 1]),
        helper.make_node("Relu", [p + "e1"], [p + "r1"]),
        helper.make_node("Conv", [p + "r1", p + "enc2", p + "enc2b"], [p + "e2"], pads=[1, 1], strides=[2]),
        helper.make_node("Relu", [p + "e2"], [p + "r2"]),
        helper.make_node("ReduceMean", [p + "r2"], [p + "feat"], axes=[2], keepdims=0),  # [1, H]
        helper.make_node("Unsqueeze", [p + "feat", "ax0"], [p + "seq"]),  # [1, 1, H]
        helper.make_node("Gather", ["state", "i0"], [p + "h0g"], axis=0),
        helper.make_node("Gather", ["state", "i1"], [p + "c0g"], axis=0),
        helper.make_node("Unsqueeze", [p + "h0g", "ax0"], [p + "h0"]),
        helper.make_node("Unsqueeze", [p + "c0g", "ax0"], [p + "c0"]),
        helper.make_node("LSTM", [p + "seq", p + "lw", p + "lr", p + "lb", "", p + "h0", p + "c0"],
                         [p + "y", p + "hn", p + "cn"], hidden_size=H, name=f"/{tag}/decoder/rnn/LSTM"),
        helper.make_node("Concat", [p + "hn", p + "cn"], [p + "state_out"], axis=0),
        helper.make_node("Reshape", [p + "hn", "chw"], [p + "hc"]),  # [1, H, 1]
        helper.make_node("Relu", [p + "hc"], [p + "hr"]),
        helper.make_node("Conv", [p + "hr", p + "dec", p + "decb"], [p + "d"]),  # [1, 1, 1]
        helper.make_node("Sigmoid", [p + "d"], [p + "prob3"]),
        helper.make_node("Reshape", [p + "prob3", "out_shape"], [p + "prob"]),  # [1, 1]
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in w.items()] if local else []
    return helper.make_graph(nodes, tag, [], [vi(p + "prob", TP.FLOAT, [1, 1]), vi(p + "state_out", TP.FLOAT,
                                                                                   [2, 1, H])], inits)


def _vad_weights(tag, win, bins, seed):
    r = np.random.default_rng(seed)
    n = np.arange(win)
    k = np.arange(bins)[:, None]
    window = np.hanning(win)
    stft = np.concatenate([np.cos(2 * np.pi * k * n / win) * window, -np.sin(2 * np.pi * k * n / win) * window])
    p = f"{tag}_"
    return {p + "stft": (stft[:, None, :] * 0.05).astype(np.float32),
            p + "enc1": (r.standard_normal((H, bins, 3)) * 0.3).astype(np.float32),
            p + "enc1b": (r.standard_normal(H) * 0.1).astype(np.float32),
            p + "enc2": (r.standard_normal((H, H, 3)) * 0.3).astype(np.float32),
            p + "enc2b": (r.standard_normal(H) * 0.1).astype(np.float32),
            p + "lw": (r.standard_normal((1, 4 * H, H)) * 0.3).astype(np.float32),
            p + "lr": (r.standard_normal((1, 4 * H, H)) * 0.3).astype(np.float32),
            p + "lb": (r.standard_normal((1, 8 * H)) * 0.1).astype(np.float32),
            p + "dec": (r.standard_normal((1, H, 1)) * 0.5).astype(np.float32),
            p + "decb": np.zeros(1, np.float32)}


def _vad_model():
    """input [1, 576] + state [2, 1, H] + sr (int64 scalar) -> output [1, 1], stateN [2, 1, H]. As silero VAD
    v5: an If on the input's rank (folded from its shape) and an If on sr == 16000 whose branches are the
    16 kHz network (weights in the outer graph) and the 8 kHz one (weights inside the branch)."""
    w16 = _vad_weights("k16", 128, 16, 1)
    w8 = _vad_weights("k8", 64, 8, 2)
    rank_if = helper.make_node(
        "If", ["is_1d"], ["audio"],
        then_branch=helper.make_graph([helper.make_node("Unsqueeze", ["input", "ax0"], ["a_b"])], "add_batch", [],
                                      [vi("a_b", TP.FLOAT, None)]),
        else_branch=helper.make_graph([helper.make_node("Identity", ["input"], ["a_i"])], "keep", [],
                                      [vi("a_i", TP.FLOAT, [1, CHUNK])]))
    sr_if = helper.make_node("If", ["is_16k"], ["output", "stateN"], name="If_0",
                             then_branch=_vad_branch("k16", 64, w16, local=False),
                             else_branch=_vad_branch("k8", 32, w8, local=True))
    nodes = [helper.make_node("Shape", ["input"], ["in_shape"]), helper.make_node("Size", ["in_shape"], ["in_rank"]),
             helper.make_node("Equal", ["in_rank", "one"], ["is_1d"]), rank_if,
             helper.make_node("Equal", ["sr", "k16000"], ["is_16k"]), sr_if]
    inits = dict(w16)
    inits.update({"one": np.array(1, np.int64), "k16000": np.array(16000, np.int64),
                  "ax0": np.array([0], np.int64), "ax1": np.array([1], np.int64), "i0": np.array(0, np.int64),
                  "i1": np.array(1, np.int64), "halves": np.array([16, 16], np.int64),
                  "chw": np.array([1, H, 1], np.int64), "out_shape": np.array([1, 1], np.int64)})
    proto = model_of(nodes, [vi("input", TP.FLOAT, [1, CHUNK]), vi("state", TP.FLOAT, [2, 1, H]),
                             vi("sr", TP.INT64, [])],
                     [vi("output", TP.FLOAT, [1, 1]), vi("stateN", TP.FLOAT, [2, 1, H])], inits)
    # the 8 kHz branch splits 8 + 8 bins: its own split sizes, as a branch-local constant
    else_g = proto.graph.node[-1].attribute[1].g if proto.graph.node[-1].attribute[1].name == "else_branch" \
        else proto.graph.node[-1].attribute[0].g
    for n in else_g.node:
        if n.op_type == "Split":
            n.input[1] = "k8_halves"
    else_g.initializer.append(numpy_helper.from_array(np.array([8, 8], np.int64), "k8_halves"))
    return proto


@pytest.mark.parametrize("sr", [16000, 8000])
def test_silero_like_vad_streams_with_pinned_sample_rate(sr):
    proto = _vad_model()
    model = import_onnx(proto, input_values={"sr": sr})
    ours = Ours(model)
    assert ours.input_names == ["input", "state"] and ours.output_names == ["output", "stateN"]
    assert "IF" not in ops(model) and "UNIDIRECTIONAL_SEQUENCE_LSTM" not in ops(model)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    state_w = np.zeros((2, 1, H), np.float32)
    state_g = state_w.copy()
    t = np.arange(3 * CHUNK) / sr
    audio = (0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * np.random.default_rng(0).standard_normal(t.size))
    for k in range(3):
        chunk = audio[k * CHUNK:(k + 1) * CHUNK].astype(np.float32)[None]
        want = sess.run(None, {"input": chunk, "state": state_w, "sr": np.array(sr, np.int64)})
        got = ours(chunk, state_g)
        close(got, want, f"chunk {k}")
        if k == 0:
            close(run_litert(ours.bytes, [chunk, state_g]), want, "litert chunk 0")
        state_w, state_g = want[1], got[1]
    assert np.any(state_w != 0)
    notes = model.import_notes
    assert notes["pinned_inputs"] == {"sr": sr}
    (state,) = notes["state"]
    assert state["state_inputs"] == {"initial_h": ["state"], "initial_c": ["state"]}
    assert state["state_outputs"] == {"Y_h": ["output", "stateN"], "Y_c": ["stateN"]}
    assert len(notes["control_flow"]) == 2


def test_silero_like_vad_without_pinned_rate_names_the_input():
    # issue 24 point 1: the run-time sr If becomes TFLite IF (both networks kept, LiteRT runs it: tests/
    # test_convert_control_flow.py); the note names the input to pin
    model = import_onnx(_vad_model())
    assert "IF" in ops(model) and len(model.subgraphs) == 3
    assert any("If 'If_0'" in n and "--input-value sr=VALUE" in n for n in model.import_warnings)


def test_lstm_batch_major_state_streamed_against_the_reference_evaluator():
    """layout 1 (batch-major x, state and Y_h / Y_c); onnxruntime runs only layout 0: onnx's evaluator checks."""
    from onnx.reference import ReferenceEvaluator

    proto = _recurrent_model("LSTM", batch=2, layout=1)
    ours = Ours(import_onnx(proto))
    ref = ReferenceEvaluator(proto)
    h = c = np.zeros((2, 1, 5), np.float32)
    hg, cg = h, c
    for k in range(3):
        x = f32(2, 4, 3, seed=30 + k)
        want = ref.run(None, {"x": x, "h": h, "c": c})
        got = ours(x, hg, cg)
        close(got, want, f"chunk {k}")
        (_, h, c), (_, hg, cg) = want, got


def test_pinned_scalar_fills_a_state_input():
    """state pinned to 0 (one scalar fills [1, 1, 5]): the model starts from zeros and has x as its only input."""
    proto = _recurrent_model("LSTM", outputs=("y", "yh"))
    model = import_onnx(proto, input_values={"h": 0, "c": "0"})
    ours = Ours(model)
    assert ours.input_names == ["x"]
    x = f32(4, 1, 3, seed=5)
    zeros = np.zeros((1, 1, 5), np.float32)
    close(ours(x), ort_run(proto, {"x": x, "h": zeros, "c": zeros}))
    assert model.import_notes["pinned_inputs"] == {"h": [[[0.0] * 5]], "c": [[[0.0] * 5]]}


def _v4_branch(tag, seed, samples, hidden):
    """input [1, samples] -> 4 steps of features -> two stacked LSTMs from h[l], c[l] -> probability; hn, cn."""
    r = np.random.default_rng(seed)
    p = f"{tag}_"
    w = {p + "feat": (r.standard_normal((samples, 4 * hidden)) * 0.05).astype(np.float32),
         p + "out": (r.standard_normal((hidden, 1)) * 0.5).astype(np.float32)}
    nodes = [helper.make_node("MatMul", ["input", p + "feat"], [p + "f"]),
             helper.make_node("Reshape", [p + "f", "seq_shape"], [p + "seq0"])]  # [4, 1, H]
    hs, cs, x = [], [], p + "seq0"
    for layer in range(2):
        q = f"{p}l{layer}_"
        w.update({q + "w": (r.standard_normal((1, 4 * hidden, hidden)) * 0.4).astype(np.float32),
                  q + "r": (r.standard_normal((1, 4 * hidden, hidden)) * 0.4).astype(np.float32),
                  q + "b": (r.standard_normal((1, 8 * hidden)) * 0.2).astype(np.float32)})
        nodes += [helper.make_node("Slice", ["h", f"s{layer}", f"e{layer}", "ax0"], [q + "h0"]),
                  helper.make_node("Slice", ["c", f"s{layer}", f"e{layer}", "ax0"], [q + "c0"]),
                  helper.make_node("LSTM", [x, q + "w", q + "r", q + "b", "", q + "h0", q + "c0"],
                                   [q + "y", q + "hn", q + "cn"], hidden_size=hidden, name=f"/{tag}/rnn/LSTM_{layer}"),
                  helper.make_node("Squeeze", [q + "y", "ax1"], [q + "ys"])]
        x = q + "ys"
        hs.append(q + "hn")
        cs.append(q + "cn")
    nodes += [helper.make_node("Concat", hs, [p + "hn"], axis=0), helper.make_node("Concat", cs, [p + "cn"], axis=0),
              helper.make_node("Squeeze", [hs[-1], "ax0"], [p + "last"]),
              helper.make_node("MatMul", [p + "last", p + "out"], [p + "logit"]),
              helper.make_node("Sigmoid", [p + "logit"], [p + "prob"])]
    graph = helper.make_graph(nodes, tag, [], [vi(p + "prob", TP.FLOAT, None), vi(p + "hn", TP.FLOAT, None),
                                               vi(p + "cn", TP.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in w.items()])
    return graph


def test_v4_like_vad_with_h_c_inputs_dynamic_dims_and_pinned_rate():
    """silero v4's interface: input [batch, samples], sr int64 [1], h / c [2, batch, H] (two stacked LSTM layers,
    the state sliced per layer, hn / cn concatenated): shapes given by input_shapes, sr by input_values."""
    hidden, samples = 8, 512
    sr_if = helper.make_node("If", ["is16k"], ["output", "hn", "cn"], name="If_0",
                             then_branch=_v4_branch("k16", 1, samples, hidden),
                             else_branch=_v4_branch("k8", 2, samples, hidden))
    nodes = [helper.make_node("Equal", ["sr", "k16000"], ["is16k_1"]),
             helper.make_node("Squeeze", ["is16k_1", "ax0"], ["is16k"]), sr_if]
    inits = {"k16000": np.array([16000], np.int64), "seq_shape": np.array([4, -1, hidden], np.int64),
             "ax0": np.array([0], np.int64), "ax1": np.array([1], np.int64), "s0": np.array([0], np.int64),
             "e0": np.array([1], np.int64), "s1": np.array([1], np.int64), "e1": np.array([2], np.int64)}
    proto = model_of(nodes, [vi("input", TP.FLOAT, ["batch", "samples"]), vi("sr", TP.INT64, [1]),
                             vi("h", TP.FLOAT, [2, "batch", hidden]), vi("c", TP.FLOAT, [2, "batch", hidden])],
                     [vi("output", TP.FLOAT, None), vi("hn", TP.FLOAT, None), vi("cn", TP.FLOAT, None)], inits)
    with pytest.raises(ConversionError, match="--input-shape"):
        import_onnx(proto, input_values={"sr": 16000})
    model = import_onnx(proto, input_shapes={"input": (1, samples), "h": (2, 1, hidden), "c": (2, 1, hidden)},
                        input_values={"sr": 16000})
    ours = Ours(model)
    assert ours.input_names == ["input", "h", "c"] and ours.output_names == ["output", "hn", "cn"]
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    hw = cw = np.zeros((2, 1, hidden), np.float32)
    hg, cg = hw, cw
    for k in range(3):
        x = f32(1, samples, seed=40 + k)
        want = sess.run(None, {"input": x, "sr": np.array([16000], np.int64), "h": hw, "c": cw})
        got = ours(x, hg, cg)
        close(got, want, f"chunk {k}")
        (_, hw, cw), (_, hg, cg) = want, got
    states = model.import_notes["state"]
    assert [s["node"] for s in states] == ["/k16/rnn/LSTM_0", "/k16/rnn/LSTM_1"]
    assert all(s["state_inputs"] == {"initial_h": ["h"], "initial_c": ["c"]} for s in states)
    assert states[0]["state_outputs"] == {"Y_h": ["hn"], "Y_c": ["cn"]}
    assert states[1]["state_outputs"] == {"Y_h": ["hn", "output"], "Y_c": ["cn"]}


def test_a_node_of_the_inlined_branch_is_reported_by_its_own_name():
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t_r"]),
                                helper.make_node("Mystery", ["t_r"], ["t_y"], domain="com.example",
                                                 name="/branch/mystery")], "then", [], [vi("t_y", TP.FLOAT, [1, 4])])
    else_g = helper.make_graph([helper.make_node("Relu", ["x"], ["e_y"])], "else", [], [vi("e_y", TP.FLOAT, [1, 4])])
    nodes = [helper.make_node("Equal", ["sr", "k16000"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["y"], then_branch=then_g, else_branch=else_g)]
    proto = model_of(nodes, [vi("x", TP.FLOAT, [1, 4]), vi("sr", TP.INT64, [])], [vi("y", TP.FLOAT, [1, 4])],
                     {"k16000": np.array(16000, np.int64)})
    proto.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(ConversionError) as err:
        import_onnx(proto, input_values={"sr": 16000})
    (problem,) = err.value.problems
    assert problem.startswith("node '/branch/mystery' (Mystery, opset 16): custom domain 'com.example'")
    Ours(import_onnx(proto, input_values={"sr": 8000}))  # the other branch converts


@pytest.mark.parametrize("trip,cond", [(0, True), (2, False), (2, True)])
def test_loop_without_scan_outputs_zero_and_false_condition(trip, cond):
    """Only loop-carried values: M = 0 or a false initial condition give the initial values back."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]), helper.make_node("Add", ["acc", "x"], ["acc_out"])],
        "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("acc", TP.FLOAT, [1, 4])],
        [vi("cond_out", TP.BOOL, []), vi("acc_out", TP.FLOAT, [1, 4])])
    node = helper.make_node("Loop", ["M", "c0", "acc0"], ["acc"], name="loop", body=body)
    proto = model_of([node], [vi("x", TP.FLOAT, [1, 4]), vi("acc0", TP.FLOAT, [1, 4])], [vi("acc", TP.FLOAT, [1, 4])],
                     {"M": np.array(trip, np.int64), "c0": np.array(cond)})
    x, acc0 = f32(1, 4, seed=1), f32(1, 4, seed=2)
    close(Ours(import_onnx(proto))(x, acc0), ort_run(proto, {"x": x, "acc0": acc0}))


@pytest.mark.parametrize("flag", ["true", "false", True, 0])
def test_if_on_a_pinned_bool_input(flag):
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t_y"])], "then", [], [vi("t_y", TP.FLOAT, [1, 4])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e_y"])], "else", [], [vi("e_y", TP.FLOAT, [1, 4])])
    proto = model_of([helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g)],
                     [vi("x", TP.FLOAT, [1, 4]), vi("flag", TP.BOOL, [])], [vi("y", TP.FLOAT, [1, 4])])
    x = f32(1, 4, seed=1)
    value = np.array(flag in ("true", True, 1))
    close(Ours(import_onnx(proto, input_values={"flag": flag}))(x), ort_run(proto, {"x": x, "flag": value}))


# ---------------------------------------------------------------------------------------------- state inside an If branch
def _speechlike(n, sr, seed=0):
    """Sine bursts with noise, silence between (n samples at ``sr``)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / sr
    gate = (np.sin(2 * np.pi * 1.5 * t) > 0.2).astype(np.float64)
    tone = 0.4 * np.sin(2 * np.pi * 220 * t) + 0.2 * np.sin(2 * np.pi * 660 * t)
    return (gate * tone + 0.02 * rng.standard_normal(n)).astype(np.float32)


@pytest.fixture(scope="module")
def vad_runtime_if():
    """silero v5's layout with sr left open: the LSTM lives in each sr branch of a run-time IF, the state enters the
    IF from the outer graph and leaves through its outputs. Float, and with --stateful."""
    from converters import convert

    proto = _vad_model()
    return proto, convert(proto, quantize="none"), convert(proto, quantize="none", stateful=True)


def test_state_inside_a_runtime_if_branch_is_found_and_streams(runtime, vad_runtime_if):
    from tests.test_convert_stateful import Stream

    proto, plain, stateful = vad_runtime_if
    assert ops(plain.model).count("IF") == 1
    state = plain.report["state"]
    assert state["stateful"] is False
    (pair,) = state["tensors"]
    assert (pair["input"], pair["output"]) == ("state", "stateN") and pair["shape"] == [2, 1, H]
    assert sorted(pair["states"]) == sorted(f"/{t}/decoder/rnn/LSTM:initial_{k}" for t in ("k16", "k8")
                                            for k in ("h", "c"))
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for sr in (16000, 8000):
        audio = _speechlike(8 * CHUNK, sr, seed=sr)
        ours = Stream(plain.tflite, runtime)
        on_device = Stream(stateful.tflite, runtime)
        litert = Stream(stateful.tflite, "litert")
        s_want = s_got = np.zeros((2, 1, H), np.float32)
        rate = np.array(sr, np.int64)
        for k in range(8):
            chunk = audio[k * CHUNK:(k + 1) * CHUNK][None]
            want = sess.run(None, {"input": chunk, "state": s_want, "sr": rate})
            got = ours.step(chunk, s_got, rate)
            close([got["output"], got["stateN"]], want, f"sr {sr} chunk {k}")
            for who, stream in (("stateful", on_device), ("litert stateful", litert)):
                kept = stream.step(chunk, rate)
                assert list(kept) == ["output"]
                np.testing.assert_allclose(kept["output"], want[0], rtol=0, atol=1e-5, err_msg=f"{who} {sr} {k}")
            s_want, s_got = want[1], got["stateN"]
        assert np.abs(s_want).max() > 0.05  # the state moved


def test_stateful_state_crosses_the_if(vad_runtime_if):
    _, _, stateful = vad_runtime_if
    model = stateful.model
    sg = model.subgraphs[0]
    assert [sg.tensors[t].name for t in sg.inputs] == ["input", "sr"]
    assert [sg.tensors[t].name for t in sg.outputs] == ["output"]
    names = ops(model)
    assert names[0] == "CALL_ONCE" and names.index("READ_VARIABLE") < names.index("IF") < names.index("ASSIGN_VARIABLE")
    (variable,) = stateful.report["state"]["variables"]
    assert variable["input"] == "state" and variable["output"] == "stateN"


@pytest.mark.parametrize("kind", ["trip_input", "data_dependent"])
def test_a_runtime_loop_with_scan_outputs_names_the_pin_and_the_unroll_limit(kind):
    """ONNX stacks one scan slice per iteration run: with a run-time trip count the output's length is a run-time
    one, which TFLite cannot hold (static shapes), so no WHILE: the refusal says how it converts. With a constant
    trip count M and a data-dependent condition the scan output is a buffer of M rows of which only the iterations run
    hold values: refused where another node reads it (the padded rows would reach it)."""
    from converters.onnx_control import MAX_UNROLL

    proto = _loop_model(trip_input=kind == "trip_input", cond_out="data" if kind == "data_dependent" else "identity",
                        stack_read=kind == "data_dependent")
    with pytest.raises(ConversionError) as err:
        import_onnx(proto)
    (problem,) = err.value.problems
    if kind == "trip_input":
        assert "scan output(s) would have a run-time length" in problem and f"at most {MAX_UNROLL} iterations" in problem
        assert "--input-value M=VALUE" in problem
    else:
        assert "data-dependent termination" in problem and "'stack'" in problem and "only a model output" in problem
    assert "\n" not in problem


def test_a_loop_ending_on_the_data_writes_its_scan_output_into_trip_count_rows():
    """M = 3 (a constant), the body stops once sum(acc) >= 2: a WHILE whose scan output is a buffer of 3 rows the body
    writes with DYNAMIC_UPDATE_SLICE; the rows run equal onnxruntime's, the rest stay zero (the note says so). LiteRT
    and our interpreter agree."""
    proto = _loop_model(cond_out="data")
    model = import_onnx(proto)
    assert ops(model) == ["FILL", "WHILE"]  # FILL: the buffer's zeros
    body = model.subgraphs[0].operators[1].options["body_subgraph_index"]
    assert "DYNAMIC_UPDATE_SLICE" in [model.op_name(op) for op in model.subgraphs[body].operators]
    (note,) = [n for n in model.import_notes["control_flow"] if "Loop 'loop'" in n]
    assert "1 scan output(s) written row by row" in note and "stay zero" in note
    stopped = set()
    for seed, scale in ((1, 0.2), (2, 3.0), (3, 0.05)):
        x, acc0 = f32(1, 4, seed=seed, scale=scale), f32(1, 4, seed=seed + 10, scale=scale)
        acc, stack = ort_run(proto, {"x": x, "acc0": acc0})
        n = len(stack)
        stopped.add(n)
        for who, got in (("ours", Ours(model)(x, acc0)), ("litert", run_litert(write_model(model), [x, acc0]))):
            assert got[1].shape == (3, 1, 4), who
            close([got[0], got[1][:n]], [acc, stack], f"{who} seed {seed}")
            assert not got[1][n:].any(), (who, seed)
    assert len(stopped) > 1  # the loop ended after different iteration counts


def test_a_loop_longer_than_the_unroll_limit_writes_its_scan_output_in_a_while():
    """M = MAX_UNROLL + 200 (a constant, the condition passed through): no unrolling, a WHILE writing every one of
    the M rows; with M pinned from an input (--input-value) the same. Our interpreter and LiteRT equal onnxruntime."""
    from converters.onnx_control import MAX_UNROLL

    m = MAX_UNROLL + 200
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc", "decay"], ["kept"]), helper.make_node("Add", ["kept", "x"], ["acc_out"]),
         helper.make_node("Tanh", ["acc_out"], ["row"]), helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body", [vi("i", TP.INT64, []), vi("cond", TP.BOOL, []), vi("acc", TP.FLOAT, [1, 4])],
        [vi("cond_out", TP.BOOL, []), vi("acc_out", TP.FLOAT, [1, 4]), vi("row", TP.FLOAT, [1, 4])],
        [numpy_helper.from_array(np.float32(0.99), "decay")])
    nodes = [helper.make_node("Loop", ["M", "", "acc0"], ["acc", "rows"], name="long", body=body)]
    ins = [vi("x", TP.FLOAT, [1, 4]), vi("acc0", TP.FLOAT, [1, 4]), vi("M", TP.INT64, [])]
    proto = model_of(nodes, ins, [vi("acc", TP.FLOAT, [1, 4]), vi("rows", TP.FLOAT, None)])
    model = import_onnx(proto, input_values={"M": m})
    (note,) = [n for n in model.import_notes["control_flow"] if "Loop 'long'" in n]
    assert f"trip count {m} above the unroll limit" in note and f"buffers of {m} rows" in note
    assert "stay zero" not in note
    x, acc0 = f32(1, 4, seed=4, scale=0.01), f32(1, 4, seed=5)
    want = ort_run(proto, {"x": x, "acc0": acc0, "M": np.array(m, np.int64)})
    assert want[1].shape == (m, 1, 4)
    for who, got in (("ours", Ours(model)(x, acc0)), ("litert", run_litert(write_model(model), [x, acc0]))):
        close(got, want, who)
