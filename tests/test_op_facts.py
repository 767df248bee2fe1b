"""The op table's graph facts (edge_sdk.runtime.op_table.OpRow): every row's facts take the documented values,
and the facts agree with what the kernels do where a test can see it."""

from edge_sdk.model import schema
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
        assert r.axis in op_table.AXIS_RULES, name
        assert r.affine in op_table.AFFINE_RULES, name
        assert not r.affine or r.family == "binary", name
        assert r.pad_fold in op_table.PAD_FOLD_RULES, name
        assert r.identity in op_table.IDENTITY_RULES, name
        assert r.transpose_sink in op_table.TRANSPOSE_SINK_RULES, name
        assert not r.pad_fold or r.family in ("pad", "conv") and r.pad_fold == r.family, name


def test_options_tables_are_the_schemas():
    """A row's ``options`` names a builtin options table of the schema that is not the op's regular one (the
    writer derives that), and the writer takes it."""
    from edge_sdk.model import schema
    from edge_sdk.model.writer import options_for

    members = {m for u in ("BuiltinOptions", "BuiltinOptions2") for m in schema.UNIONS[u].values()}
    for name, r in ROWS.items():
        if r.options:
            assert r.options in members and r.options in schema.TABLES, name
            assert r.options.replace("Options", "").lower() != name.replace("_", "").lower(), name
            assert options_for(name) == r.options, name
    assert options_for("MAX_POOL_2D") == "Pool2DOptions" and options_for("REDUCE_PROD") == "ReducerOptions"
    assert options_for("CONV_2D") == "Conv2DOptions" and options_for("CUSTOM") is None


def test_activation_ranges_are_the_fused_activations_and_the_kernels_clamps():
    """A row with an ``activation_range`` is named like an ActivationFunctionType value, its kernel clamps float
    values to that range, and a producer with ``fused_activation`` applies it as its fused activation."""
    import numpy as np

    from edge_sdk.model.schema import ENUMS
    from tests.oprunner import T, op_model, run_ours

    acts = set(ENUMS["ActivationFunctionType"][1].values())
    ranged = {n: r.activation_range for n, r in ROWS.items() if r.activation_range is not None}
    assert set(ranged) == {"RELU", "RELU6", "RELU_N1_TO_1"} and set(ranged) <= acts
    x = np.linspace(-9, 9, 37, dtype=np.float32).reshape(1, 37)
    for name, (lo, hi) in ranged.items():
        y = run_ours(op_model(name, [T(x.shape, "FLOAT32")], [T(x.shape, "FLOAT32")]), [x])[0]
        np.testing.assert_array_equal(y, np.clip(x, lo, hi), err_msg=name)
        fused = run_ours(op_model("ADD", [T(x.shape, "FLOAT32"), T(x.shape, "FLOAT32")], [T(x.shape, "FLOAT32")],
                                  options={"fused_activation_function": name}), [x, np.zeros_like(x)])[0]
        np.testing.assert_array_equal(fused, y, err_msg=name)
    assert all(ROWS[n].fused_activation for n in ("CONV_2D", "FULLY_CONNECTED", "ADD", "MAX_POOL_2D"))
    assert not ROWS["CONCATENATION"].fused_activation  # TFLM refuses a fused activation on it


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


def test_the_c_runtime_reads_the_rows_facts_from_a_fresh_header():
    """firmware_c/include/edge_op_facts.h is generated from the rows (gen_ops.py --facts): this fails when the rows
    changed and the header was not regenerated, and the header lists exactly the builtin ops with an in-place rule,
    a patch rule, effects or a pad_fold role, with those values; a conv row's options at its schema fields."""
    import re
    from pathlib import Path

    gen = op_table.gen_ops_module()
    header = Path(__file__).resolve().parent.parent / "firmware_c" / "include" / "edge_op_facts.h"
    assert header.read_text() == gen.render_facts(), (
        "firmware_c/include/edge_op_facts.h is stale: run python firmware_c/tools/gen_ops.py --facts "
        "firmware_c/include/edge_op_facts.h")
    rows = re.findall(r"\{EDGE_OP_(\w+), EDGE_FAMILY_(\w+), EDGE_EFFECTS_(\w+), EDGE_INPLACE_(\w+), "
                      r"EDGE_PATCH_(\w+), EDGE_PAD_FOLD_(\w+), (\d), EDGE_OPTS2?_(\w+), (\d), \{(\d+), (\d+)\}, "
                      r"EDGE_OPTS_(\w+), \{(-?\d+), (-?\d+)\}\}", header.read_text())
    expect = {n for n, r in ROWS.items() if r.inplace or r.patch or r.effects or r.pad_fold}
    assert {r[0] for r in rows} == expect and len(rows) == len(expect)
    for name, family, effects, inplace, patch, pad_fold, callees, table, _, s0, s1, conv_table, act, dil in rows:
        r = ROWS[name]
        assert (family, effects, inplace, patch, pad_fold) == tuple((v or "none").upper() for v in (
            r.family, r.effects, r.inplace, r.patch, r.pad_fold)), name
        assert int(callees) == len(r.subgraphs), name
        # each subgraph index is read at its options field's id in the schema (STABLEHLO_COMPOSITE's is 1)
        ids = {f[0]: f[3] for f in schema.TABLES.get(table, ())}
        assert [int(v) for v in (s0, s1)[:len(r.subgraphs)]] == [ids[f] for f in r.subgraphs], name
        # a conv's activation and dilation_w at their fields of its options table (CONV_2D 3, 4; depthwise 4, 5)
        conv_ids = {f[0]: f[3] for f in schema.TABLES.get(conv_table, ())}
        assert (conv_table != "NONE") == (r.family == "conv"), name
        if r.family == "conv":
            assert (int(act), int(dil)) == (conv_ids["fused_activation_function"], conv_ids["dilation_w_factor"]), name
    assert ("DepthwiseConv2DOptions", "4", "5") in {(r[11], r[12], r[13]) for r in rows}


def test_facts_header_generation_refuses_what_edge_c_cannot_read(monkeypatch):
    """A control-flow row naming more than two subgraphs (edge.c's callees holds two) is a generation error."""
    import dataclasses

    import pytest

    gen = op_table.gen_ops_module()
    wide = dataclasses.replace(ROWS["IF"], subgraphs=("then_subgraph_index", "else_subgraph_index", "x"))
    monkeypatch.setitem(ROWS, "IF", wide)
    with pytest.raises(gen.RegistrationError, match="IF: subgraphs"):
        gen.render_facts()
