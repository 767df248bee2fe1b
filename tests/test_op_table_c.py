"""The op table's C side (edge_sdk/runtime/op_table_c.py) is generated from the C kernels' registrations:
this fails whenever the C sources and the table disagree (regenerate with
`python firmware_c/tools/gen_ops.py --python edge_sdk/runtime/op_table_c.py`)."""

from pathlib import Path

from edge_sdk.runtime import op_table
from edge_sdk.runtime.op_table import gen_ops_module

ROOT = Path(__file__).resolve().parent.parent


def test_generated_c_side_equals_the_c_sources():
    gen = gen_ops_module()
    rows = gen.scan()
    expected = gen.render_python(rows)
    current = (ROOT / "edge_sdk" / "runtime" / "op_table_c.py").read_text()
    assert current == expected, ("edge_sdk/runtime/op_table_c.py is stale: run python firmware_c/tools/gen_ops.py "
                                 "--python edge_sdk/runtime/op_table_c.py")
    assert {name: v for name, (v, _) in op_table.C_KERNELS.items()} == gen.kernel_versions(rows)


def test_rows_carry_both_runtimes():
    assert op_table.OPS["CONV_2D"].c_max_version == op_table.C_KERNELS["CONV_2D"][0]
    assert op_table.OPS["CONV_2D"].c_file == "conv_2d.c"
    # every row the interpreter runs has a C kernel today, but the ops whose output size depends on the data (the C
    # runtime plans every byte before the first invoke: refused with that reason); an op outside both is refused by
    # the C side by name
    assert all(r.c_max_version == op_table.C_KERNELS[n][0] for n, r in op_table.OPS.items() if not r.data_sized)
    sized = [n for n, r in op_table.OPS.items() if r.data_sized]
    assert sized and all(n not in op_table.C_KERNELS and "depends on the data" in op_table.c_refusal(n, 1)
                         for n in sized)
    assert "HASHTABLE_FIND" not in op_table.C_KERNELS  # a hashtable op: no kernel in either runtime
    assert op_table.c_refusal("HASHTABLE_FIND", 1) == "the C runtime has no kernel for HASHTABLE_FIND"
    v = op_table.C_KERNELS["ADD"][0]
    assert op_table.c_refusal("ADD", v) is None and f"up to {v}" in op_table.c_refusal("ADD", v + 1)
    assert op_table.runtime_refusal("python", "DEPTH_TO_SPACE", 1) is None
    assert op_table.runtime_refusal("c", "DEPTH_TO_SPACE", 1) is None
    assert op_table.runtime_refusal("c", "HASHTABLE_FIND", 1) is not None
    assert set(op_table.c_type_switches()) == {"FLOAT32", "INT16"}


def test_flash_kernel_selection_reads_the_same_registrations():
    from edge_sdk.model.builder import GraphBuilder
    from edge_sdk.tools.flash import kernel_files

    g = GraphBuilder()
    x = g.input("x", (1, 4), "INT8", scale=0.1, zero_point=0)
    y = g.tensor("y", (1, 4), "INT8", scale=0.1, zero_point=0)
    g.op("RELU", [x], [y])
    g.output(y)
    assert kernel_files(g.build()) == [op_table.C_KERNELS["RELU"][1]]


# ---- the registered dtypes are the kernels' own: one-node models of every probe type, against both prepares
_UNARY = ("ABS", "EXP", "LOG", "SQRT", "NEG", "RSQRT", "RELU", "RELU6", "RELU_N1_TO_1", "HARD_SWISH", "LEAKY_RELU",
          "LOGISTIC", "TANH", "LOG_SOFTMAX", "SOFTMAX")
_BINARY = ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "POW")
_PROBE_TYPES = ("FLOAT32", "FLOAT16", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL")


# ops with more operands: (input shape, output shape, output type or None for the input's, constant operands
# as (numpy data, type), options)
_I32 = "INT32"
_SHAPED = {
    "SQUEEZE": ((1, 4), (4,), None, [], {}),
    "EXPAND_DIMS": ((1, 4), (1, 1, 4), None, [([0], _I32)], {}),
    "RESHAPE": ((1, 4), (4,), None, [([4], _I32)], {"new_shape": [4]}),
    "TRANSPOSE": ((1, 4), (4, 1), None, [([1, 0], _I32)], {}),
    "TILE": ((1, 4), (1, 8), None, [([1, 2], _I32)], {}),
    "BROADCAST_TO": ((1, 4), (2, 4), None, [([2, 4], _I32)], {}),
    "PAD": ((1, 4), (1, 6), None, [([[0, 0], [1, 1]], _I32)], {}),
    "MIRROR_PAD": ((1, 4), (1, 6), None, [([[0, 0], [1, 1]], _I32)], {"mode": "REFLECT"}),
    "SLICE": ((1, 4), (1, 2), None, [([0, 0], _I32), ([1, 2], _I32)], {}),
    "STRIDED_SLICE": ((1, 4), (1, 2), None, [([0, 0], _I32), ([1, 2], _I32), ([1, 1], _I32)], {}),
    "GATHER": ((4,), (2,), None, [([0, 1], _I32)], {"axis": 0}),
    "CONCATENATION": ((1, 4), (1, 4), None, [], {"axis": 1}),
    "PACK": ((4,), (1, 4), None, [], {"values_count": 1, "axis": 0}),
    "MEAN": ((1, 4), (1,), None, [([1], _I32)], {}),
    "SUM": ((1, 4), (1,), None, [([1], _I32)], {}),
    "REDUCE_MAX": ((1, 4), (1,), None, [([1], _I32)], {}),
    "ARG_MAX": ((1, 4), (1,), "INT32", [([1], _I32)], {"output_type": "INT32"}),
    "REDUCE_MIN": ((1, 4), (1,), None, [([1], _I32)], {}),
    "REDUCE_ANY": ((1, 4), (1,), None, [([1], _I32)], {}),
    "REDUCE_ALL": ((1, 4), (1,), None, [([1], _I32)], {}),
    "ARG_MIN": ((1, 4), (1,), "INT32", [([1], _I32)], {"output_type": "INT32"}),
    "L2_NORMALIZATION": ((1, 4), (1, 4), None, [], {}),
    "L2_POOL_2D": ((1, 2, 2, 1), (1, 2, 2, 1), None, [], {"padding": "VALID", "stride_w": 1, "stride_h": 1,
                                                        "filter_width": 1, "filter_height": 1}),
    "SPACE_TO_BATCH_ND": ((1, 2, 2, 1), (1, 2, 2, 1), None, [([1, 1], _I32), ([[0, 0], [0, 0]], _I32)], {}),
    "BATCH_TO_SPACE_ND": ((1, 2, 2, 1), (1, 2, 2, 1), None, [([1, 1], _I32), ([[0, 0], [0, 0]], _I32)], {}),
    "GATHER_ND": ((4,), (2,), None, [([[0], [1]], _I32)], {}),
    "REVERSE_V2": ((1, 4), (1, 4), None, [([1], _I32)], {}),
    "CUMSUM": ((1, 4), (1, 4), None, [(1, _I32)], {}),
    "LOCAL_RESPONSE_NORMALIZATION": ((1, 1, 1, 4), (1, 1, 1, 4), None, [], {"radius": 1, "bias": 1.0, "alpha": 1.0,
                                                                        "beta": 0.5}),
    "MATRIX_DIAG": ((4,), (4, 4), None, [], {}),
    "SHAPE": ((1, 4), (2,), "INT32", [], {"out_type": "INT32"}),
    "DEQUANTIZE": ((1, 4), (1, 4), "FLOAT32", [], {}),
    "CAST": ((1, 4), (1, 4), "FLOAT32", [], {}),
    "MAX_POOL_2D": ((1, 2, 2, 1), (1, 2, 2, 1), None, [], {"padding": "VALID", "stride_w": 1, "stride_h": 1,
                                                             "filter_width": 1, "filter_height": 1}),
    "AVERAGE_POOL_2D": ((1, 2, 2, 1), (1, 2, 2, 1), None, [], {"padding": "VALID", "stride_w": 1, "stride_h": 1,
                                                                 "filter_width": 1, "filter_height": 1}),
    "RESIZE_NEAREST_NEIGHBOR": ((1, 2, 2, 1), (1, 4, 4, 1), None, [([4, 4], _I32)], {}),
    "RESIZE_BILINEAR": ((1, 2, 2, 1), (1, 4, 4, 1), None, [([4, 4], _I32)], {}),
    "SPACE_TO_DEPTH": ((1, 2, 2, 1), (1, 1, 1, 4), None, [], {"block_size": 2}),
    "DEPTH_TO_SPACE": ((1, 1, 1, 4), (1, 2, 2, 1), None, [], {"block_size": 2}),
}


def _one_node(op: str, dtype: str) -> bytes:
    import numpy as np

    from edge_sdk.model import write_model
    from edge_sdk.model.builder import GraphBuilder

    def quant(t):
        return {"scale": 0.125, "zero_point": 0} if t in ("INT8", "UINT8", "INT16") else {}

    g = GraphBuilder()
    if op in _SHAPED:
        shape, out_shape, out_type, consts, options = _SHAPED[op]
        ins = [g.input("x", shape, dtype, **quant(dtype))]
        ins += [g.constant(f"c{k}", np.asarray(data, np.int32), t) for k, (data, t) in enumerate(consts)]
        out_type = out_type or dtype
        y = g.tensor("y", out_shape, out_type, **quant(out_type))
        g.op(op, ins, [y], **options)
    else:
        ins = [g.input(f"x{k}", (1, 4), dtype, **quant(dtype)) for k in range(2 if op in _BINARY else 1)]
        y = g.tensor("y", (1, 4), dtype, **quant(dtype))
        g.op(op, ins, [y])
    g.output(y)
    return write_model(g.build())


def _python_type_refusal(data: bytes) -> bool:
    from edge_sdk.errors import UnsupportedOpError
    from edge_sdk.runtime.interpreter import Interpreter

    _, failures, _ = Interpreter(model_content=data).prepare_report()
    exc = failures.get((0, 0))
    return isinstance(exc, UnsupportedOpError) and " has type " in str(exc)


def test_registered_dtypes_are_what_the_c_and_python_prepares_take():
    """For each probe op (62) and type (8): the table refuses the type exactly when the C kernel's prepare says
    EDGE_UNSUPPORTED_TYPE (the real C runtime, host build), and the Python row's dtypes exactly when the
    interpreter's prepare refuses the type. A wrong registration fails here, naming the op and the type."""
    from edge_sdk.targets import c_check

    wrong = []
    for op in (*_UNARY, *_BINARY, *_SHAPED):
        for dtype in _PROBE_TYPES:
            data = _one_node(op, dtype)
            plan = c_check.target_plan(data, c_check.HOST)
            c_refuses = plan.status_name == "EDGE_UNSUPPORTED_TYPE" and plan.error.get("node") == 0
            table = op_table.c_refusal(op, 1, dtype) is not None
            if c_refuses != table:
                wrong.append(f"C {op} {dtype}: kernel {'refuses' if c_refuses else 'takes'} it, table says "
                             f"{'refuse' if table else 'take'} ({plan.message})")
            elif not table and not plan.ok and "output" not in plan.message:
                # a taken type prepares (the probe is a real model), or stops at a later output-scale rule
                wrong.append(f"C {op} {dtype}: probe refused after the type check: {plan.message}")
            py_refuses = _python_type_refusal(data)
            py_table = op_table.runtime_refusal("python", op, 1, dtype) is not None
            if py_refuses != py_table:
                wrong.append(f"Python {op} {dtype}: kernel {'refuses' if py_refuses else 'takes'} it, row says "
                             f"{'refuse' if py_table else 'take'}")
    assert not wrong, "\n".join(wrong)


def test_registration_grammar_errors_name_file_and_line(tmp_path):
    """A kernel from before the types field (or with an unknown type) is a generation error naming the file and
    line, never a kernel silently dropped or a guessed type."""
    import pytest

    gen = gen_ops_module()
    (tmp_path / "old.c").write_text('#include "edge_kernel.h"\n\nEDGE_KERNEL(ADD, add, 5)\n')
    with pytest.raises(gen.RegistrationError, match=r"old\.c:3: malformed kernel registration.*TYPES"):
        gen.scan(tmp_path)
    (tmp_path / "old.c").write_text('EDGE_KERNEL(ADD, add, 5, "INT8 INT9", "")\n')
    with pytest.raises(gen.RegistrationError, match=r"old\.c:1: types 'INT8 INT9': unknown type 'INT9'"):
        gen.scan(tmp_path)
    (tmp_path / "old.c").write_text('EDGE_KERNEL(ADD, add, 5, "input 1: INT8 INT16/INT8", "x")\n')
    row = gen.scan(tmp_path)[0]
    assert row["types"] == ("INT8", "INT16/INT8") and row["data_input"] == 1 and row["constraints"] == "x"


def test_every_c_kernel_declares_types():
    gen = gen_ops_module()
    rows = gen.scan()
    assert all(r["types"] for r in rows)
    assert op_table.C_TYPES["TRANSPOSE_CONV"][1] == 2
    assert op_table.OPS["RSQRT"].c_dtypes == ("FLOAT32", "INT8", "INT16")
    assert "per-channel" in op_table.OPS["CONV_2D"].c_constraints
    assert op_table.c_refusal("FULLY_CONNECTED", 1, "FLOAT32/INT16") is not None  # no kernel for that pair
    assert op_table.c_refusal("FULLY_CONNECTED", 1, "FLOAT32/INT8") is None  # hybrid: LiteRT's kernel (hybrid.c)
    assert op_table.c_refusal("FULLY_CONNECTED", 1, "INT16/INT8") is None


def test_flash_kernel_selection_refuses_a_type_the_c_kernel_does_not_register():
    import pytest

    from edge_sdk.errors import UnsupportedOpError
    from edge_sdk.model import read_model
    from edge_sdk.tools.flash import kernel_files

    with pytest.raises(UnsupportedOpError, match=r"DIV kernel does not take INT64 .*\(node 0\)"):
        kernel_files(read_model(_one_node("DIV", "INT64")))
    assert kernel_files(read_model(_one_node("RSQRT", "INT8"))) == ["rsqrt.c"]


# Types the interpreter runs that the C kernel does not, each with its reason (issue 16 point 3: the C runtime
# runs every op and type the Python interpreter runs; anything left here is a known, stated gap).
PY_ONLY_TYPES = {
    # TFLM's signal library has int32 / float32 RFFTs (kiss_fft in those types); the C kernel ports the int16 one
    ("SignalRfft", "INT32"): "C kernel ports TFLM's int16 RFFT only",
    ("SignalRfft", "FLOAT32"): "C kernel ports TFLM's int16 RFFT only",
}


def test_c_kernels_take_every_type_the_interpreter_takes():
    """Every op row's Python dtypes are taken by its C kernel's registration, but for PY_ONLY_TYPES (reasoned);
    an exception that no longer applies fails too, so the list stays the truth."""
    gaps = set()
    for name, row in op_table.OPS.items():
        if row.data_sized:  # no C kernel by design (test_rows_carry_both_runtimes checks its refusal)
            continue
        assert row.c_dtypes is not None, f"{name}: the interpreter runs it, the C runtime has no kernel"
        gaps |= {(name, d) for d in row.dtypes if not op_table.takes_dtype(row.c_dtypes, d)}
    assert gaps - set(PY_ONLY_TYPES) == set(), "the interpreter takes types the C kernel does not"
    assert set(PY_ONLY_TYPES) - gaps == set(), "stale exceptions: the C kernel takes these now"
    for op, dtype in (("ADD", "INT64"), ("SUB", "INT64"), ("MUL", "INT64"), ("RSQRT", "INT8"), ("CAST", "FLOAT16")):
        assert op_table.c_refusal(op, 1, dtype) is None, (op, dtype)
