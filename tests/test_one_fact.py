"""One fact, one place: each test fails when a copy of a shared fact comes back.

* C status names and texts: read from firmware_c/include/edge_status.def (edge_sdk.runtime.c_status);
* element sizes / dtypes of TFLite types: edge_sdk.model.types.TENSOR_TYPES (codes from model.schema);
* the cache folder: edge_sdk.resources.cache_dir() for every cache;
* option enums of the C kernels: only in firmware_c/include/edge_kernel.h;
* timeouts: named constants in edge_sdk/timeouts.py.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from edge_sdk.runtime import c_status

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"
SDK = ROOT / "edge_sdk"


def _py_files(*folders: Path):
    for folder in folders:
        for p in sorted(folder.rglob("*.py")):
            if "_bundled" not in p.parts and "build" not in p.parts:
                yield p


# ----------------------------------------------------------------------------------------------- C status
def test_status_table_is_the_def_file():
    text = (FW / "include" / "edge_status.def").read_text()
    names = re.findall(r"^EDGE_STATUS\((\w+),", text, re.M)
    assert list(c_status.status_names()) == names and len(names) >= 13
    assert c_status.STATUS == {n: i for i, n in enumerate(names)}
    assert c_status.status_name(len(names)) == f"status {len(names)}"
    assert c_status.status_text(-1) == "unknown status"


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None, reason="the C runtime needs gcc and make")
def test_status_texts_match_edge_status_str():
    from edge_sdk.runtime import backend_c

    backend_c.build()
    lib = backend_c.library()
    assert backend_c.STATUS is c_status.STATUS
    for value, (_, text) in enumerate(c_status.table()):
        assert lib.edge_status_str(value).decode() == text
    assert lib.edge_status_str(len(c_status.table())).decode() == c_status.status_text(len(c_status.table()))


def test_status_parser_names_the_bad_line():
    good = 'EDGE_STATUS(EDGE_OK, "ok")\nEDGE_STATUS(EDGE_X, "say \\"x\\"")\n'
    assert c_status.parse(good) == (("EDGE_OK", "ok"), ("EDGE_X", 'say "x"'))
    with pytest.raises(ValueError, match=r"f.def:2: cannot read"):
        c_status.parse('EDGE_STATUS(EDGE_OK, "ok")\nEDGE_STATUS(EDGE_X, unquoted)\n', "f.def")
    with pytest.raises(ValueError, match=r"f.def:2: status EDGE_OK is listed twice"):
        c_status.parse('EDGE_STATUS(EDGE_OK, "ok")\nEDGE_STATUS(EDGE_OK, "again")\n', "f.def")
    with pytest.raises(ValueError, match="first status must be EDGE_OK"):
        c_status.parse('EDGE_STATUS(EDGE_X, "x")\n', "f.def")


def test_no_copy_of_the_status_values_in_python():
    """Nowhere in edge_sdk/ (but c_status.py) a list of status names, or a status name bound to a number."""
    names = set(c_status.status_names())
    bad = []
    for path in _py_files(SDK):
        if path.name == "c_status.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
                elts = node.keys if isinstance(node, ast.Dict) else node.elts
                found = [e.value for e in elts if isinstance(e, ast.Constant) and e.value in names]
                if len(found) >= 2:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {found}")
            if isinstance(node, ast.Assign):
                targets = [t for tgt in node.targets for t in (tgt.elts if isinstance(tgt, ast.Tuple) else [tgt])]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id.lstrip("_") in names:
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {t.id} =")
    assert not bad, "copies of edge_status.def (use edge_sdk.runtime.c_status):\n" + "\n".join(bad)
