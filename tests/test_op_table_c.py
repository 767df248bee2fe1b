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
    # every row the interpreter runs has a C kernel today; an op outside both is refused by the C side by name
    assert all(r.c_max_version == op_table.C_KERNELS[n][0] for n, r in op_table.OPS.items())
    assert "CONV_3D_TRANSPOSE" not in op_table.C_KERNELS
    assert op_table.c_refusal("CONV_3D_TRANSPOSE", 1) == "the C runtime has no kernel for CONV_3D_TRANSPOSE"
    v = op_table.C_KERNELS["ADD"][0]
    assert op_table.c_refusal("ADD", v) is None and f"up to {v}" in op_table.c_refusal("ADD", v + 1)
    assert op_table.runtime_refusal("python", "DEPTH_TO_SPACE", 1) is None
    assert op_table.runtime_refusal("c", "DEPTH_TO_SPACE", 1) is None
    assert op_table.runtime_refusal("c", "CONV_3D_TRANSPOSE", 1) is not None
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
