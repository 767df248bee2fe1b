"""Resource variables (VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE) and CALL_ONCE: ours vs TFLM (and LiteRT).

The models are built by hand with two subgraphs: the main one reads a variable, adds its input and writes
the sum back; the init subgraph (run by CALL_ONCE) assigns the variable its starting value. Both runtimes from one
grid (``runtime``: our Python interpreter and the C runtime's stateful kernels); TFLM's invoke-by-invoke stream (a
child process) and LiteRT run once per case, and the C case also equals the Python case bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from edge_sdk.model.types import Buffer, Model, Operator, OperatorCode, Quantization, SubGraph, Tensor
from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES
from edge_sdk.model.writer import option_defaults, write_model
from tests.oprunner import assert_same, case_key, peer_outputs

OPS = ["CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "ADD"]
OPTION_TABLES = {"CALL_ONCE": "CallOnceOptions", "VAR_HANDLE": "VarHandleOptions",
                 "READ_VARIABLE": "ReadVariableOptions", "ASSIGN_VARIABLE": "AssignVariableOptions",
                 "ADD": "AddOptions"}


class _Graph:
    def __init__(self, buffers):
        self.tensors, self.ops, self.inputs, self.outputs, self.buffers = [], [], [], [], buffers

    def t(self, name, shape, type, data=None, q=None):
        buf = 0
        if data is not None:
            self.buffers.append(Buffer(np.ascontiguousarray(data).tobytes()))
            buf = len(self.buffers) - 1
        quant = None if q is None else Quantization(scale=np.array([q[0]], np.float32),
                                                     zero_point=np.array([q[1]], np.int64))
        self.tensors.append(Tensor(name=name, shape=tuple(shape), type=type, buffer=buf, quantization=quant))
        return len(self.tensors) - 1

    def op(self, name, inputs, outputs, **options):
        table = OPTION_TABLES[name]
        opts = option_defaults(table)
        opts.update(options)
        self.ops.append(Operator(opcode_index=OPS.index(name), inputs=inputs, outputs=outputs,
                                 options_type=table, options=opts))


def accumulator_model(type="FLOAT32", init=(10, 20), q=None, read_shape=(2,), init_shape=(2,),
                      call_once=True) -> bytes:
    dtype = {"FLOAT32": np.float32, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32}[type]
    buffers = [Buffer(b"")]
    main, init_g = _Graph(buffers), _Graph(buffers)
    x = main.t("x", (2,), type, q=q)
    h = main.t("h", (), "RESOURCE")
    v = main.t("v", read_shape, type, q=q)
    y = main.t("y", (2,), type, q=q)
    main.inputs, main.outputs = [x], [y]
    if call_once:
        main.op("CALL_ONCE", [], [], init_subgraph_index=1)
    main.op("VAR_HANDLE", [], [h], container="", shared_name="acc")
    main.op("READ_VARIABLE", [h], [v])
    main.op("ADD", [v, x], [y])
    main.op("ASSIGN_VARIABLE", [h, y], [])
    h1 = init_g.t("h1", (), "RESOURCE")
    c = init_g.t("init", init_shape, type, data=np.array(init, dtype).reshape(init_shape), q=q)
    init_g.op("VAR_HANDLE", [], [h1], container="", shared_name="acc")
    init_g.op("ASSIGN_VARIABLE", [h1, c], [])
    codes = [OperatorCode(BUILTIN_OPERATOR_CODES[n], None, 1) for n in OPS]
    subgraphs = [SubGraph(main.tensors, main.inputs, main.outputs, main.ops, "main"),
                 SubGraph(init_g.tensors, [], [], init_g.ops, "init")]
    return write_model(Model(operator_codes=codes, subgraphs=subgraphs, buffers=buffers))


def run_stream(runtime: str, model: bytes, inputs_per_invoke, reset_after=None):
    """``runtime``'s output after each invoke, fed invoke by invoke (reset_all_variables before invoke
    ``reset_after``)."""
    from edge_sdk import Interpreter

    it = Interpreter(model_content=model, backend=runtime)
    it.allocate_tensors()
    outs = []
    for k, x in enumerate(inputs_per_invoke):
        if reset_after is not None and k == reset_after:
            it.reset_all_variables()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        outs.append(np.array(it.get_tensor(it.get_output_details()[0]["index"])))
    return outs


def run_ours(model: bytes, inputs_per_invoke, reset_after=None):
    """Our Python interpreter's stream (run_stream on "python")."""
    return run_stream("python", model, inputs_per_invoke, reset_after)


_STREAMS: dict[str, list] = {}  # TFLM's streams per case: the child process runs once for both runtimes


def tflm_stream(model: bytes, inputs_per_invoke, reset_after=None):
    """TFLM fed invoke by invoke (optionally reset() before invoke ``reset_after``), in a child process; once per
    case (copies)."""
    key = case_key(model, list(inputs_per_invoke), f"tflm-stream-{reset_after}")
    if key not in _STREAMS:
        _STREAMS[key] = _tflm_stream(model, inputs_per_invoke, reset_after)
    return [np.array(o) for o in _STREAMS[key]]


def check_stream(runtime, model, xs, reset_after=None):
    """``runtime``'s stream against TFLM's, invoke by invoke; the C case also against the Python case."""
    ours = run_stream(runtime, model, xs, reset_after)
    theirs = tflm_stream(model, xs, reset_after)
    for k in range(len(xs)):
        assert_same([ours[k]], [theirs[k]], what=f"{runtime} vs TFLM, invoke {k}")
    _python_and_c_agree(runtime, model, xs, reset_after, ours)
    return ours


_PYTHON_STREAMS: dict[str, list] = {}  # the Python case's streams, the C case's reference


def _python_and_c_agree(runtime, model, xs, reset_after, ours):
    """The Python case leaves its stream; the C case equals it (computed here when the Python case did not run)."""
    key = case_key(model, list(xs), f"python-stream-{reset_after}")
    if runtime == "python":
        _PYTHON_STREAMS.setdefault(key, [np.array(o) for o in ours])
        return
    if key not in _PYTHON_STREAMS:
        _PYTHON_STREAMS[key] = run_stream("python", model, xs, reset_after)
    for k, (c, py) in enumerate(zip(ours, _PYTHON_STREAMS[key])):
        assert_same([c], [py], what=f"c vs python, invoke {k}")


def _tflm_stream(model: bytes, inputs_per_invoke, reset_after=None):
    import pickle
    import subprocess
    import sys
    import tempfile

    code = (
        "import pickle,sys,numpy as np\n"
        "from tflite_micro.python.tflite_micro import runtime\n"
        "model, xs, reset_after = pickle.loads(sys.stdin.buffer.read())\n"
        "it = runtime.Interpreter.from_bytes(model)\n"
        "outs = []\n"
        "for k, x in enumerate(xs):\n"
        "    if reset_after is not None and k == reset_after: it.reset()\n"
        "    it.set_input(x, 0); it.invoke(); outs.append(np.array(it.get_output(0)))\n"
        "open(sys.argv[1], 'wb').write(pickle.dumps(outs))\n"
    )
    with tempfile.NamedTemporaryFile(suffix=".pkl") as out:
        proc = subprocess.run([sys.executable, "-c", code, out.name],
                              input=pickle.dumps((model, list(inputs_per_invoke), reset_after)),
                              capture_output=True, timeout=300)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
        with open(out.name, "rb") as f:
            return pickle.load(f)


def test_accumulator_float_matches_tflm_and_litert(runtime):
    model = accumulator_model()
    xs = [np.array([1.5, -2.0], np.float32), np.array([0.25, 4.0], np.float32), np.array([1, 1], np.float32)]
    ours = check_stream(runtime, model, xs)
    np.testing.assert_array_equal(ours[-1], [12.75, 23.0])  # 10 + 1.5 + 0.25 + 1, 20 - 2 + 4 + 1
    # the single-invoke peers agree too, LiteRT included
    assert_same([ours[0]], peer_outputs(model, [xs[0]], "litert", isolate=True))
    assert_same(run_stream(runtime, model, [xs[0]] * 3)[-1:],
                peer_outputs(model, [xs[0]], "litert", isolate=True, invocations=3))


def test_accumulator_int8_matches_tflm(runtime):
    q = (0.5, -3)
    model = accumulator_model("INT8", init=(7, -100), q=q)
    xs = [np.array([5, -20], np.int8), np.array([100, 3], np.int8), np.array([-128, 127], np.int8)]
    check_stream(runtime, model, xs)


@pytest.mark.parametrize("q", [None, (0.5, -3)])
def test_reset_like_tflm(runtime, q):
    """TFLM's reset refills variables with their zero point and does not run CALL_ONCE's init again."""
    type_ = "FLOAT32" if q is None else "INT8"
    dtype = np.float32 if q is None else np.int8
    model = accumulator_model(type_, init=(7, 9), q=q)
    xs = [np.array([1, 2], dtype)] * 4
    check_stream(runtime, model, xs, reset_after=2)


def test_read_before_any_assign_reads_the_default(runtime):
    # no CALL_ONCE: the first read sees what TFLM's ASSIGN_VARIABLE prepare put there (zero point bytes)
    model = accumulator_model("INT8", q=(0.25, 5), call_once=False)
    xs = [np.array([1, 2], np.int8), np.array([3, 4], np.int8)]
    check_stream(runtime, model, xs)


def test_call_once_runs_init_once():
    from edge_sdk import Interpreter

    model = accumulator_model(init=(0, 0))
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    calls = []
    original = it.invoke_subgraph
    it.invoke_subgraph = lambda i, xs: calls.append(i) or original(i, xs)
    for _ in range(3):
        it.set_tensor(it.get_input_details()[0]["index"], np.ones(2, np.float32))
        it.invoke()
    assert calls == [1]
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), [3, 3])


def test_mismatched_assignments_are_model_errors():
    # the init subgraph assigns a (3,) value to the variable the main graph assigns (2,) values to
    model = accumulator_model(init=(1, 2, 3), init_shape=(3,))
    with pytest.raises(ModelError, match="resource variable"):
        run_ours(model, [np.zeros(2, np.float32)])
    # the read's declared shape does not match the variable's size (ADD broadcasts the (1,) read)
    model = accumulator_model(read_shape=(1,))
    with pytest.raises(ModelError, match="resource variable 0 holds"):
        run_ours(model, [np.zeros(2, np.float32)])


@pytest.mark.parametrize("kw", [dict(), dict(type="INT8", q=(0.5, 3)), dict(type="INT16", q=(0.5, 0)),
                                dict(call_once=False)], ids=["float", "int8", "int16", "no-call-once"])
def test_resource_variables_accumulate_across_invokes(runtime, kw):
    """(From the C runtime's sequence file.) VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE / CALL_ONCE over four
    invokes, with and without a reset before the third: TFLM's stream without the reset, the C case equal to the
    Python case in both."""
    from edge_sdk.model import read_model
    from edge_sdk.runtime import c_interpreter

    model = accumulator_model(**kw)
    if runtime == "c":
        assert c_interpreter.missing_ops(read_model(model)) == []
    dt = {"FLOAT32": np.float32, "INT8": np.int8, "INT16": np.int16}[kw.get("type", "FLOAT32")]
    xs = [np.array(v, dt) for v in ([1, -2], [3, 4], [1, 1], [5, 6])]
    _python_and_c_agree(runtime, model, xs, 2, run_stream(runtime, model, xs, reset_after=2))
    got = check_stream(runtime, model, xs)
    assert not np.array_equal(got[0], got[1])  # the state moved
