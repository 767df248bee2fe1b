"""The layout of edge_sdk/ and converters/, read from the code's own imports (AST, lazy imports included).

Rules (each package's __init__ docstring says the same in words):
* edge_sdk/ keeps at most 8 modules at its top level; the rest lives in its packages;
* no import cycle between modules;
* a package imports only the layers below it (LAYERS); only the CLI imports converters;
* no module uses another module's ``_private`` name (``from m import _x`` or ``m._x``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("edge_sdk", "converters")

# what each room may import (edge_sdk's base modules: errors, log, resources, timeouts and the package itself)
BASE = "base"
LAYERS: dict[str, set[str]] = {
    BASE: {BASE},
    "model": {BASE, "model"},
    "runtime": {BASE, "model", "runtime"},
    "targets": {BASE, "model", "runtime", "targets"},
    "tasks": {BASE, "model", "runtime", "tasks"},
    "device": {BASE, "model", "runtime", "targets", "tasks", "device"},
    "tools": {BASE, "model", "runtime", "targets", "tasks", "device", "tools"},
    "cli": {BASE, "model", "runtime", "targets", "tasks", "device", "tools", "cli", "converters"},
    "converters": {BASE, "model", "runtime", "targets", "tasks", "converters"},
}
TOP_LEVEL_MODULES_MAX = 8
# The package itself (edge_sdk/__init__: the public facade, `from edge_sdk import Interpreter`) re-exports the
# runtime's Interpreter; rooms above the runtime may import it (for __version__ and the facade's names).
FACADE = "facade"
LAYERS[FACADE] = {BASE, "runtime", FACADE}
for _room in ("targets", "tasks", "device", "tools", "cli", "converters"):
    LAYERS[_room].add(FACADE)
# The edges against the layers, and why: a delegate named after a device profile ("nnapi", "edgetpu") loads
# that profile (data) the first time it is asked what it supports. targets.profiles reads runtime.op_table's
# rows, which import nothing of targets, so no module cycle results (test_no_import_cycles). The writer reads an
# op's options table name from its op table row (every per-op fact lives there); op_table imports only errors and
# the generated op_table_c.
ALLOWED = {("edge_sdk.runtime.delegates.profiled", "edge_sdk.targets.profiles"),
           ("edge_sdk.model.writer", "edge_sdk.runtime.op_table")}


def module_files() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if "_bundled" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = module_files()


def room(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "converters":
        return "converters"
    if len(parts) == 1:
        return FACADE
    if (len(parts) == 2 and parts[1] in ("errors", "log", "resources", "timeouts")):
        return BASE
    return "cli" if parts[1] == "cli" else parts[1]


def resolve(importer: str, node: ast.AST) -> list[tuple[str, str | None]]:
    """(module imported, name taken from it or None) for one import statement, for our modules only."""
    found = []
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.name.split(".")[0] in PACKAGES:
                found.append((a.name, None))
        return found
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = importer.split(".")
        is_pkg = MODULES[importer].name == "__init__.py"
        base = base[: len(base) - node.level + (1 if is_pkg else 0)]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    if mod.split(".")[0] not in PACKAGES:
        return found
    for a in node.names:
        sub = f"{mod}.{a.name}"
        if sub in MODULES:  # `from edge_sdk import log`: the submodule itself
            found.append((sub, None))
        else:
            found.append((mod, a.name))
    return found


def imports() -> dict[str, list[tuple[str, str | None, int]]]:
    graph = {}
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        edges = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges += [(m, name, node.lineno) for m, name in resolve(mod, node)]
        graph[mod] = edges
    return graph


GRAPH = imports()


def test_edge_sdk_top_level_is_small():
    top = sorted(p.name for p in (ROOT / "edge_sdk").glob("*.py"))
    assert len(top) <= TOP_LEVEL_MODULES_MAX, f"edge_sdk/ has {len(top)} top-level modules: {top}"
    rooms = {p.name for p in (ROOT / "edge_sdk").iterdir() if (p / "__init__.py").is_file()}
    assert {"model", "runtime", "targets", "device", "tools", "tasks"} <= rooms


def test_every_package_says_what_lives_there_and_what_it_may_import():
    for mod, path in MODULES.items():
        if path.name == "__init__.py" and mod.count(".") == 1 and mod.startswith("edge_sdk."):
            doc = ast.get_docstring(ast.parse(path.read_text())) or ""
            assert "May import" in doc, f"{path.relative_to(ROOT)}: the docstring says what it may import"


def import_cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan) of ``graph``'s edges among MODULES."""
    edges = {m: sorted({t for t, _, _ in e if t in graph and t != m}) for m, e in graph.items()}
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return cycles


def layer_violations(graph) -> list[str]:
    return [f"{mod}:{line}: {room(mod)} imports {target} ({room(target)})"
            for mod, edges in graph.items() for target, _, line in edges
            if target in graph and room(target) not in LAYERS[room(mod)] and (mod, target) not in ALLOWED]


def test_no_import_cycles():
    cycles = import_cycles(GRAPH)
    assert not cycles, f"import cycles: {cycles}"


def test_layers():
    bad = layer_violations(GRAPH)
    assert not bad, "layer violations:\n" + "\n".join(bad)


def test_only_the_cli_imports_converters():
    bad = [f"{MODULES[m].relative_to(ROOT)}:{line}" for m, e in GRAPH.items() if m.startswith("edge_sdk")
           for t, _, line in e if t.startswith("converters") and m != "edge_sdk.cli"]
    assert not bad, f"converters imported outside the CLI: {bad}"


def test_no_private_names_across_modules():
    bad = []
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text())
        aliases = {}  # local name -> our module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for (target, name), a in zip(resolve(mod, node), node.names):
                    if name is not None and name.startswith("_") and not name.startswith("__") and target != mod:
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {target}.{name}")
                    if name is None:
                        aliases[a.asname or a.name.split(".")[-1]] = target
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and aliases[node.value.id] != mod):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    assert not bad, "private names used outside their module:\n" + "\n".join(bad)


@pytest.mark.parametrize("case,expect", [
    ("edge_sdk.runtime.interpreter", "runtime"), ("edge_sdk.errors", BASE), ("edge_sdk", FACADE),
    ("edge_sdk.cli", "cli"), ("converters.passes.layout", "converters"), ("edge_sdk.tools.flash", "tools"),
])
def test_room_names(case, expect):
    assert room(case) == expect


def test_the_checks_see_a_violation():
    """The rules are not vacuous: a made-up runtime module that imports tools (a layer violation) and is imported
    back by it (a cycle) is caught by the same functions the tests above run on the real graph."""
    fake = dict(GRAPH)
    fake["edge_sdk.runtime.fake"] = [("edge_sdk.tools.flash", None, 1)]
    fake["edge_sdk.tools.flash"] = GRAPH["edge_sdk.tools.flash"] + [("edge_sdk.runtime.fake", None, 1)]
    assert ["edge_sdk.runtime.fake", "edge_sdk.tools.flash"] in import_cycles(fake)
    assert "edge_sdk.runtime.fake:1: runtime imports edge_sdk.tools.flash (tools)" in layer_violations(fake)
    assert not import_cycles(GRAPH) and not layer_violations(GRAPH)
