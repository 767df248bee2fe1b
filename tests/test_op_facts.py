"""The op table's graph facts (edge_sdk.runtime.op_table.OpRow): every row's facts take the documented values,
and the facts agree with what the kernels do where a test can see it."""

from edge_sdk.runtime import op_table
from edge_sdk.runtime.op_table import ROWS


def test_every_fact_takes_a_documented_value():
    for name, r in ROWS.items():
        assert r.family in op_table.FAMILIES, name
        assert r.effects in op_table.EFFECTS, name
        assert r.inplace in op_table.INPLACE_RULES, name
        assert r.patch in op_table.PATCH_RULES, name
        assert r.int16 in op_table.INT16_RULES, name
        assert r.quant in op_table.QUANT_RULES or (r.quant.startswith("same:") and r.quant[5:].isdigit()), name
        assert bool(r.quant_fixed) == (r.quant == "fixed"), name
        assert bool(r.subgraphs) <= (r.effects == "calls"), name
        assert set(r.int16_missing) <= {op_table.PYTHON, op_table.C}, name
        assert not r.int16_missing or r.int16 == "op", name


def test_ops_are_the_rows_with_a_kernel():
    assert set(op_table.OPS) == {n for n, r in ROWS.items() if r.kernel is not None}
    assert op_table.row("NO_SUCH_OP").family == "" and not op_table.row("NO_SUCH_OP").runs
    assert op_table.row("ADD") is ROWS["ADD"]


def test_a_known_op_without_kernel_is_refused_as_before():
    import pytest

    from edge_sdk.errors import UnsupportedOpError

    known = [n for n, r in ROWS.items() if not r.runs]
    assert known, "the table keeps facts of ops without a kernel"
    with pytest.raises(UnsupportedOpError, match="has no kernel here"):
        op_table.lookup(known[0], 1)
