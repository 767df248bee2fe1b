"""The ONNX importer's coverage of the default domain (opsets 11-20), op by op: mapped (a handler), partially
(a handler, some forms refused), folded (evaluated at convert time), control flow, rewritten on the ONNX graph
(quantized forms, sequences of known length), or refused with a reason. Fails on an op in none of these, and on a
table that contradicts the handlers.

    PYTHONPATH=. python tests/test_import_onnx_ops_inventory.py      # prints the table and the counts
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import defs, helper

from converters import import_onnx as imp

FIRST, LAST = 11, 20


def onnx_ops() -> list[str]:
    """Every default-domain op that exists in some opset FIRST..LAST."""
    versions: dict[str, list[int]] = {}
    for s in defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx"):
            versions.setdefault(s.name, []).append(s.since_version)
    return sorted(n for n, v in versions.items() if min(v) <= LAST)


def has_handler(op: str) -> bool:
    return hasattr(imp._Importer, f"_op_{op}") or op in imp._ONE_TO_ONE


def inventory() -> dict[str, tuple[str, str]]:
    """op -> (state, note)."""
    out = {}
    for op in onnx_ops():
        if op in imp.CONTROL_OPS:
            out[op] = ("control", "converters.onnx_control: inlined / unrolled, or TFLite IF / WHILE")
        elif op in imp.REWRITTEN_OPS:
            out[op] = ("rewritten", imp.REWRITTEN_OPS[op])
        elif has_handler(op):
            out[op] = ("partial", imp.PARTIAL_OPS[op]) if op in imp.PARTIAL_OPS else ("mapped", "")
        elif op in imp.FOLDED_OPS:
            out[op] = ("folded", imp.FOLDED_OPS[op])
        elif op in imp.REFUSED_OPS:
            out[op] = ("refused", imp.REFUSED_OPS[op])
        else:
            out[op] = ("UNCLASSIFIED", "")
    return out


def test_every_op_is_mapped_or_refused_with_a_reason():
    table = inventory()
    assert len(table) > 150  # the schema list was read
    loose = [op for op, (state, _) in table.items() if state == "UNCLASSIFIED"]
    assert not loose, f"ONNX ops neither mapped nor in REFUSED_OPS with a reason: {loose}"


def test_the_tables_agree_with_the_handlers():
    assert not [op for op in imp.REFUSED_OPS if has_handler(op)], "a refused op has a handler"
    assert not [op for op in imp.FOLDED_OPS if has_handler(op)], "a folded-only op has a handler"
    assert not [op for op in imp.PARTIAL_OPS if not has_handler(op)], "a partial op has no handler"
    assert all(reason.strip() for reason in list(imp.REFUSED_OPS.values()) + list(imp.PARTIAL_OPS.values()))
    known = set(onnx_ops())
    listed = set(imp.REFUSED_OPS) | set(imp.FOLDED_OPS) | set(imp.PARTIAL_OPS) | set(imp.REWRITTEN_OPS)
    assert not set(imp.REWRITTEN_OPS) & (set(imp.REFUSED_OPS) | set(imp.FOLDED_OPS)), "rewritten and refused"
    assert listed <= known, sorted(listed - known)


@pytest.mark.parametrize("op, words", [("Unique", "depends on the data"), ("Range", "must fold")])
def test_a_refusal_gives_the_tables_reason(op, words):
    from edge_sdk import ConversionError

    n_out = 1
    inputs = [helper.make_tensor_value_info("x", TP.FLOAT, [4])]
    node = helper.make_node("Unique", ["x"], ["y"], name="u") if op == "Unique" else \
        helper.make_node("Range", ["x0", "x1", "x2"], ["y"], name="u")
    if op == "Range":
        inputs = [helper.make_tensor_value_info(n, TP.FLOAT, []) for n in ("x0", "x1", "x2")]
    g = helper.make_graph([node], "t", inputs, [helper.make_tensor_value_info("y", TP.FLOAT, None)] * n_out)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ConversionError) as e:
        imp.import_onnx(m)
    assert any(f"node 'u' ({op}" in p and words in p for p in e.value.problems), e.value.problems


def main():
    table = inventory()
    width = max(map(len, table))
    for op, (state, note) in table.items():
        print(f"{op:<{width}}  {state:<9}  {note}")
    counts: dict[str, int] = {}
    for state, _ in table.values():
        counts[state] = counts.get(state, 0) + 1
    print(f"\n{len(table)} ops (default domain, opsets {FIRST}-{LAST}): "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    np.testing.assert_equal(counts.get("UNCLASSIFIED", 0), 0)


if __name__ == "__main__":
    main()
