"""The memory planner (edge_sdk.runtime.planner): one function answers which arena plan a model gets under a memory
request, a RAM budget and a runtime, and why (planner.choose_plan); the C runtime's patch stage is planned from the
model file without a Python interpreter, and equals the interpreter's."""

from __future__ import annotations

import pytest

from edge_sdk import Interpreter
from edge_sdk.runtime import patching, planner
from tests.conftest import needs_c_runtime
from tests.test_memory_min import _chain_model
from tests.test_patching import CHAINS, chain_model


def _python_choice(data: bytes, memory, budget):
    """The choice for the Python runtime over the interpreter's prepared tensor infos (as edge check makes it)."""
    nodes, failures, infos = Interpreter(model_content=data).prepare_report()
    assert not failures
    return planner.choose_plan(data, memory, budget, "python", infos=infos)


def _arena(data: bytes, memory: str) -> Interpreter:
    it = Interpreter(model_content=data, memory=memory)
    it.allocate_tensors()
    return it


@pytest.fixture(scope="module")
def conv_chain():
    """A conv chain with an explicit PAD in place and a patch stage: layer > inplace > min. The PAD pads 3 rows
    above a 3x3 depthwise (more than the conv's own padding spans): never folded into it (planner.folded_pads)."""
    layers = list(CHAINS["pad_then_valid"])
    layers[1] = ("pad", 3, 2, 0, 1)
    data = chain_model(layers, dtype="INT8")
    sizes = {m: _arena(data, m) for m in planner.MEMORY_PLANS}
    assert sizes["min"].memory_plan == "patch"
    assert sizes["min"].arena_size < sizes["inplace"].arena_size < sizes["layer"].arena_size
    return data, {m: it.arena_size for m, it in sizes.items()}


def test_auto_keeps_the_layer_plan_when_it_fits(conv_chain):
    data, need = conv_chain
    choice = _python_choice(data, None, need["layer"])
    assert (choice.plan, choice.memory, choice.stage, choice.notes) == ("layer", "layer", None, [])
    assert choice.figures == {"layer": need["layer"]} and choice.need == need["layer"]
    assert "fits the RAM budget" in choice.reason
    no_budget = _python_choice(data, None, None)
    assert no_budget.plan == "layer" and no_budget.figures == {"layer": need["layer"]}


def test_auto_takes_the_inplace_plan_when_the_layer_plan_is_over(conv_chain):
    data, need = conv_chain
    choice = _python_choice(data, None, need["layer"] - 1)
    assert (choice.plan, choice.memory, choice.stage) == ("inplace", "inplace", None)
    assert choice.figures == {"layer": need["layer"], "inplace": need["inplace"]}
    assert choice.reason == (f"the layer-by-layer plan needs {need['layer']} bytes, above the RAM budget: using the "
                             f"in-place plan (--memory inplace, {need['inplace']} bytes; no extra MACs)")


def test_auto_takes_the_least_ram_plan_when_the_inplace_plan_is_over(conv_chain):
    data, need = conv_chain
    least = _arena(data, "min")
    choice = _python_choice(data, None, need["inplace"] - 1)
    assert (choice.plan, choice.memory) == ("patch", "min")
    assert choice.figures == {"layer": need["layer"], "inplace": need["inplace"], "patch": need["min"]}
    assert choice.stage.nodes == least.patch_plan().nodes and choice.stage.grid == least.patch_plan().grid
    assert len(choice.notes) == 2 and choice.notes[1] == (
        f"the in-place plan needs {need['inplace']} bytes, above the RAM budget: using the least-RAM plan "
        f"(--memory min: patch-based execution of a stage, {need['min']} bytes)")


def test_auto_when_nothing_fits_takes_the_smallest_and_says_so(conv_chain):
    """Nothing fits a budget below the least-RAM plan: the choice is still the smallest plan (the caller reports
    the budget problem with its figure)."""
    data, need = conv_chain
    choice = _python_choice(data, None, 16)
    assert choice.plan == "patch" and choice.need == need["min"] > 16
    assert len(choice.notes) == 2


def test_auto_goes_from_the_layer_plan_to_the_least_ram_plan_when_in_place_saves_nothing():
    data = chain_model(CHAINS["same_s1_s2"], dtype="INT8")
    layer, least = _arena(data, "layer"), _arena(data, "min")
    assert _arena(data, "inplace").memory_plan == "layer"
    choice = _python_choice(data, None, layer.arena_size - 1)
    assert choice.plan == "patch" and choice.figures == {"layer": layer.arena_size, "inplace": layer.arena_size,
                                                         "patch": least.arena_size}
    assert choice.notes == [f"the layer-by-layer plan (in place saves nothing here) needs {layer.arena_size} bytes, "
                            "above the RAM budget: using the least-RAM plan (--memory min: patch-based execution of "
                            f"a stage, {least.arena_size} bytes)"]


def test_a_plan_asked_for_is_realised_or_says_why():
    """--memory inplace on a model where nothing runs in place builds the layer plan; --memory min without a patch
    stage builds the in-place plan; each says so."""
    data = _chain_model(shape=(1, 4, 5, 3))  # RELU -> PAD -> RESHAPE: in place, nothing spatial to patch
    it = _arena(data, "min")
    choice = _python_choice(data, "min", None)
    assert choice.plan == it.memory_plan == "inplace" and choice.stage is None
    assert choice.figures == {"inplace": it.arena_size}
    assert choice.notes == ["--memory min: no patch stage needs less than the in-place plan here; the least-RAM "
                            "plan is the in-place plan (+0 MACs)"]
    conv = chain_model([("conv", 3, 1, 1, "SAME", 4)], dtype="INT8")  # one conv: nothing in place
    choice = _python_choice(conv, "inplace", 1)
    assert choice.plan == _arena(conv, "inplace").memory_plan == "layer" and choice.memory == "layer"
    assert choice.notes[0].startswith("--memory inplace: no node runs in place here")


def test_choose_plan_takes_the_callers_figures():
    """A caller measuring its runtime (the C runtime's high water, flash's margins) gives the figures; the rule is
    the same, and a figure it cannot measure (None) stops the rule there."""
    data = chain_model(CHAINS["same_s1_s2"], dtype="INT8")
    figures = {"layer": 1000, "inplace": 900, "min": 500}
    asked = []

    def need(memory):
        asked.append(memory)
        return figures[memory]

    choice = planner.choose_plan(data, None, 950, "c", need=need)
    assert (choice.plan, asked, choice.figures) == ("inplace", ["layer", "inplace"], {"layer": 1000, "inplace": 900})
    asked.clear()
    choice = planner.choose_plan(data, None, 600, "c", need=need)
    assert choice.plan == "patch" and asked == ["layer", "inplace", "min"] and choice.stage is not None
    assert planner.choose_plan(data, None, 600, "c", need=lambda m: None).plan == "layer"
    with pytest.raises(ValueError, match="memory must be one of 'layer', 'inplace', 'min' or None"):
        planner.choose_plan(data, "patch", None, "c")


@pytest.mark.parametrize("chain", ["same_s1_s2", "residual", "pad_then_valid"])
def test_c_stage_without_a_python_interpreter(chain, monkeypatch):
    """The C runtime's stage (Interpreter(..., backend="c", memory="min") and every C caller) is planned from the
    model file's shapes, never by constructing an Interpreter, and equals the interpreter's stage over the same
    ops."""
    data = chain_model(CHAINS[chain], dtype="INT8", seed=3)
    py = Interpreter(model_content=data, memory="min", patch_ops=patching.C_PATCH_OPS)
    py.allocate_tensors()
    want = py.patch_plan()
    assert want is not None
    planner._C_FACTS.clear()

    def no_interpreter(*args, **kwargs):
        raise AssertionError("the C stage must not construct a Python Interpreter")

    monkeypatch.setattr(Interpreter, "__init__", no_interpreter)
    got = planner.c_patch_stage(data)
    assert (got.nodes, got.grid, got.input, got.output) == (want.nodes, want.grid, want.input, want.output)
    assert (got.rows, got.cols, got.buffer_bytes, got.ram) == (want.rows, want.cols, want.buffer_bytes, want.ram)
    assert planner.c_memory_plan(data, "min") == ("patch", got)


@needs_c_runtime
def test_c_backend_min_gets_the_planner_stage_without_an_interpreter(monkeypatch):
    """Interpreter(backend="c", memory="min") and CInterpreter(memory="min") run the planner's stage, the same as
    the Python interpreter's, without constructing a Python Interpreter on the way; the outputs are the layer
    plan's."""
    import numpy as np

    from edge_sdk.runtime import c_interpreter

    data = chain_model(CHAINS["same_s1_s2"], dtype="INT8", seed=5)
    py = Interpreter(model_content=data, memory="min", patch_ops=patching.C_PATCH_OPS)
    py.allocate_tensors()
    want = py.patch_plan()
    layer = Interpreter(model_content=data)
    layer.allocate_tensors()
    x = np.random.default_rng(5).integers(-128, 128, layer.get_input_details()[0]["shape"]).astype(np.int8)
    layer.set_tensor(layer.get_input_details()[0]["index"], x)
    layer.invoke()
    expected = layer.get_tensor(layer.get_output_details()[0]["index"])
    planner._C_FACTS.clear()

    def no_interpreter(*args, **kwargs):
        raise AssertionError("the C backend must not construct a Python Interpreter")

    monkeypatch.setattr(Interpreter, "__init__", no_interpreter)
    for make in (lambda: Interpreter(model_content=data, memory="min", backend="c"),
                 lambda: c_interpreter.CInterpreter(model_content=data, memory="min")):
        c = make()
        got = c.patch_plan()
        assert (got.nodes, got.grid, got.ram, got.buffer_bytes) == (want.nodes, want.grid, want.ram,
                                                                     want.buffer_bytes)
        c.allocate_tensors()
        assert c.memory_plan == "patch"
        c.set_tensor(c.get_input_details()[0]["index"], x)
        c.invoke()
        np.testing.assert_array_equal(c.get_tensor(c.get_output_details()[0]["index"]), expected)


def test_the_plan_facts_come_from_the_op_table():
    """The in-place rule and the patch stage read op-table rows (inplace, patch), no lists of their own."""
    from edge_sdk.runtime import op_table

    assert set(patching.PATCH_OPS) == {n for n, r in op_table.ROWS.items() if r.patch}
    assert patching.C_PATCH_OPS == patching.PATCH_OPS
    for name in ("INPLACE_OPS", "ELEMENTWISE_INPLACE_OPS", "BINARY_INPLACE_OPS", "_CALLED_SUBGRAPHS", "_NOT_FOLDED"):
        assert not hasattr(planner, name) and not hasattr(__import__("edge_sdk.runtime.interpreter", fromlist=["x"]),
                                                          name)
    for name in ("WINDOW_OPS", "PAD_OPS", "ELEMENTWISE_OPS"):
        assert not hasattr(patching, name)


def test_the_plan_names_are_written_once():
    """MEMORY_PLANS and REALISED_PLANS are tuples in edge_sdk/runtime/planner.py only: the CLI, both backends,
    check, flash, export and convert import them (no copy held equal by a test)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    names = {tuple(planner.MEMORY_PLANS), tuple(planner.REALISED_PLANS)}
    found = []
    for folder in (root / "edge_sdk", root / "converters"):
        for path in sorted(folder.rglob("*.py")):
            if "_bundled" in path.parts or "build" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts) \
                        and tuple(e.value for e in node.elts) in names:
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == ["edge_sdk/runtime/planner.py:" + str(n) for n in _tuple_lines(root)], found


def _tuple_lines(root):
    import ast

    tree = ast.parse((root / "edge_sdk" / "runtime" / "planner.py").read_text())
    return [n.value.lineno for n in tree.body if isinstance(n, ast.Assign)
            and n.targets[0].id in ("MEMORY_PLANS", "REALISED_PLANS")]


def _placed_in_place(interp) -> bool:
    """Whether the C runtime's placement holds an in-place group: two planned tensors sharing bytes while both are
    live (read from its arena plan, independently of the planner's choice)."""
    spans = sorted((b.offset, b.offset + b.size, b.first_use, b.last_use) for b in interp.arena_plan().buffers
                   if b.size and b.key[1] != patching.CUT_KEY)
    for i, (a0, a1, f0, l0) in enumerate(spans):
        for b0, b1, f1, l1 in spans[i + 1:]:
            if b0 >= a1:
                break
            if f1 <= l0 and f0 <= l1:
                return True
    return False


@needs_c_runtime
@pytest.mark.parametrize("case", ["int8_pad", "int8_no_padding", "float32_padv2_value"] + list(CHAINS)[:3])
@pytest.mark.parametrize("memory", ["layer", "inplace", "min"])
def test_the_c_backend_builds_the_plan_the_planner_chose(case, memory):
    """The C backend's memory_plan is the planner's choice (c_memory_plan; no Python interpreter), and the C
    runtime's placement agrees with it: an in-place group exactly when the plan is "inplace"."""
    from tests.test_memory_min import CASES

    data = _chain_model(**CASES[case]) if case in CASES else chain_model(CHAINS[case], dtype="INT8", seed=3)
    c = Interpreter(model_content=data, backend="c", memory=memory)
    c.allocate_tensors()
    want = "layer" if memory == "layer" else planner.c_memory_plan(data, memory)[0]
    assert c.memory_plan == want
    if want != "patch":
        assert _placed_in_place(c) == (want == "inplace")


# ------------------------------------------------------------------------ what the C runtime is given, decided once
def request_decisions(source: str, where: str = "<source>") -> list[str]:
    """Comparisons that decide what a memory request gets outside the planner: ``x == "min"`` / ``x != "min"``
    (whether it runs a stage: planner.builds_stage / c_stage_for) and ``x in ("inplace", "min")`` or any literal
    of two or more plan names (EDGE_INIT_MEMORY_MIN: planner.c_memory_min, c_runner_flags)."""
    import ast

    plans = set(planner.MEMORY_PLANS) | set(planner.REALISED_PLANS)
    bad = []
    for node in ast.walk(ast.parse(source, where)):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            named = [e.value for e in getattr(side, "elts", ()) if isinstance(e, ast.Constant) and e.value in plans]
            if (isinstance(side, ast.Constant) and side.value == "min") or len(named) >= 2:
                bad.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
                break
    return bad


def test_only_the_planner_decides_what_a_memory_request_gets():
    """EDGE_INIT_MEMORY_MIN and the stage for a request were decided in nine places (CInterpreter twice, its
    runner flags, c_check, check twice, flash three times, export twice); now planner.c_memory_min /
    builds_stage / c_stage_for / c_runner_flags."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    bad = []
    for path in sorted([*(root / "edge_sdk").rglob("*.py"), *(root / "converters").rglob("*.py")]):
        text = path.read_text()
        quoted = any(f"{q}{name}{q}" in text for name in ("layer", "inplace", "min", "patch") for q in "'\"")
        if path.name != "planner.py" and "_bundled" not in path.parts and quoted:
            bad += request_decisions(text, str(path.relative_to(root)))
    assert not bad, "memory-request decisions outside edge_sdk/runtime/planner.py:\n" + "\n".join(bad)
    assert request_decisions('a = m == "min"\nb = m in ("inplace", "min")\nc = m == "layer"\nd = m in ("x",)\n') == [
        "<source>:1: m == 'min'", "<source>:2: m in ('inplace', 'min')"]


@pytest.mark.parametrize("memory", [None, *planner.MEMORY_PLANS])
def test_the_c_init_of_each_request(memory, conv_chain):
    data, _ = conv_chain
    stage = planner.c_stage_for(data, memory)
    assert planner.c_memory_min(memory) == (memory in ("inplace", "min"))
    assert (stage is not None) == (memory == "min") and (stage is None or stage == planner.c_patch_stage(data))
    flags = planner.c_runner_flags(memory, stage)
    if memory == "min":
        assert flags == ["--memory-min", "--patch", f"{stage.nodes[0]},{stage.nodes[-1]},{stage.grid[0]},"
                                                    f"{stage.grid[1]}"]
    else:
        assert flags == (["--memory-min"] if memory == "inplace" else [])
        assert planner.c_runner_flags(memory, planner.c_patch_stage(data)) == flags  # a stage only under "min"


# ------------------------------------------------------------------------ the PAD folds a plan carries, decided once
def test_pad_folds_are_decided_where_the_requests_are_made():
    """Which PADs a plan folds is decided once, by the requests it is planned over (buffer_requests: folded_pads'
    unless delegates partition the graph; stage_requests: none under a patch stage). inplace_aliases, plan_tensors,
    the interpreters and patch_tradeoff read the requests' folds (Requests.pad_folds, TensorPlan.pad_folds,
    folds_under) instead of working them out again from the model."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    callers = []
    for path in sorted((root / "edge_sdk").rglob("*.py")):
        if "folded_pads" not in (text := path.read_text()):
            continue
        for f in ast.walk(ast.parse(text)):
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    isinstance(c, ast.Call) and ast.unparse(c.func).endswith("folded_pads")
                    and not ast.unparse(c.func).startswith("self.") for c in ast.walk(f)):
                callers.append(f"{path.relative_to(root)}:{f.name}")
    assert sorted(callers) == ["edge_sdk/runtime/planner.py:buffer_requests", "edge_sdk/runtime/planner.py:folds_under"]


def test_the_patch_grids_are_priced_over_the_stages_own_requests():
    """patch_tradeoff's rows are planned over the requests the stage was chosen over (no PAD folds): the chosen
    row's RAM is the least-RAM plan's. It priced them over the folded requests (a PAD before the stage folded into
    its depthwise conv: 2368 B printed for a 2576 B plan, int8)."""
    from edge_sdk.model import read_model

    data = chain_model(list(CHAINS["pad_then_valid"]), dtype="INT8")
    model = read_model(data)
    infos = planner.declared_infos(model)
    assert len(planner.folded_pads(model, infos)) == 1
    least = planner.plan_tensors(model, infos, "min")
    assert least.memory_plan == "patch" and least.pad_folds == ()  # a patch plan folds no PAD
    assert planner.plan_tensors(model, infos, "inplace").pad_folds == tuple(planner.folded_pads(model, infos))
    chosen = [r for r in planner.patch_tradeoff(data, 10 ** 9) if r["chosen"]]
    assert [r["ram"] for r in chosen] == [least.total]


def test_only_the_planner_places_an_arena():
    """Every arena placement (arena.plan / plan_aliased) is the planner's (or patching's, for it): the interpreter
    placed the layer plan itself under delegate partitions; now plan_tensors(..., delegated=True)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    placing = re.compile(r"\b_?arena\.(plan|plan_aliased)\(")
    bad = [f"{p.relative_to(root)}:{n}" for p in sorted((root / "edge_sdk").rglob("*.py"))
           if p.name not in ("planner.py", "patching.py", "arena.py")
           for n, line in enumerate(p.read_text().splitlines(), 1) if placing.search(line)]
    assert not bad, "arena placements outside the planner:\n" + "\n".join(bad)


def test_delegate_partitions_get_the_layer_plan(conv_chain):
    from edge_sdk.model import read_model

    data, _ = conv_chain
    model = read_model(data)
    infos = planner.declared_infos(model)
    layer = planner.plan_tensors(model, infos, "layer")
    for memory in planner.MEMORY_PLANS:
        got = planner.plan_tensors(model, infos, memory, delegated=True)
        assert (got.memory_plan, got.total, got.stage) == ("layer", layer.total, None), memory
