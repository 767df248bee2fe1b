"""The suite's order under xdist (tests/conftest.py): the long tests head the workers' chunks, balanced, so no
long test starts last; LONG_TEST_SECONDS names tests that exist; the compilers on the suite's PATH compile through
the compile cache and keep every output."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import LONG_TEST_SECONDS, SLOW_MARK_SECONDS, expected_seconds, long_tests_first, needs_c_runtime

ROOT = Path(__file__).resolve().parent.parent


def _item(nodeid: str, slow: bool = False):
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: object() if slow and name == "slow" else None)


def test_long_tests_head_the_chunks_longest_first_and_balanced():
    listed = list(LONG_TEST_SECONDS)[:5]  # the five longest, by the table
    items = [_item(f"tests/test_a.py::test_short_{k}") for k in range(40)]
    items[7:7] = [_item(nodeid) for nodeid in listed]
    items.append(_item("tests/test_b.py::test_marked[1]", slow=True))
    ordered = long_tests_first(items, 2)
    assert sorted(map(id, ordered)) == sorted(map(id, items))  # the same tests, each once
    half = len(ordered) // 2  # what xdist deals to the first worker
    chunks = [ordered[:half], ordered[half:]]
    long_ids = set(listed) | {"tests/test_b.py::test_marked[1]"}
    for chunk in chunks:
        heads = [it.nodeid for it in chunk[:sum(it.nodeid in long_ids for it in chunk)]]
        assert set(heads) <= long_ids  # every long test of a chunk comes before its short ones
        seconds = [expected_seconds(it) for it in chunk if it.nodeid in long_ids]
        assert seconds == sorted(seconds, reverse=True)
    loads = [sum(expected_seconds(it) for it in chunk) for chunk in chunks]
    assert max(loads) - min(loads) <= max(LONG_TEST_SECONDS[n] for n in listed)  # LPT: within one test
    shorts = [it.nodeid for it in ordered if it.nodeid not in long_ids]
    assert shorts == [f"tests/test_a.py::test_short_{k}" for k in range(40)]  # short ones keep their order
    assert expected_seconds(_item("tests/test_b.py::test_marked[1]", slow=True)) == SLOW_MARK_SECONDS
    assert expected_seconds(_item(listed[0] + "[x]")) == LONG_TEST_SECONDS[listed[0]]  # by function, any param


def test_listed_long_tests_exist():
    """A renamed or deleted test leaves a stale row here: it must go (or be renamed) with the test."""
    missing = []
    for nodeid in LONG_TEST_SECONDS:
        path, *names = nodeid.split("[", 1)[0].split("::")
        source = ROOT / path
        defined = set()
        if source.is_file():
            defined = {n.name for n in ast.walk(ast.parse(source.read_text())) if isinstance(n, ast.FunctionDef)}
        if names[-1] not in defined:
            missing.append(nodeid)
    assert not missing, missing


# ---------------------------------------------------------------------------- the compile cache (tests/conftest.py)
@needs_c_runtime
def test_compilers_on_path_go_through_the_compile_cache_and_keep_their_outputs(tmp_path):
    """With ccache installed, gcc on the suite's PATH is conftest's wrapper: a second compile of the same source
    and flags elsewhere is a cache hit that still writes its object, its -MMD header list (naming the object it was
    asked for) and prints the warnings again; a -fcallgraph-info compile bypasses the cache and writes its .ci file
    every time."""
    import os
    import subprocess

    import pytest

    from tests.conftest import COMPILER_CACHE_BIN

    if COMPILER_CACHE_BIN is None:
        if os.environ.get("EDGE_TEST_CCACHE") == "0":
            pytest.skip("the compile cache is turned off (EDGE_TEST_CCACHE=0)")
        pytest.skip("ccache is not installed (Debian: apt-get install ccache): the suite compiles without a cache")
    path = os.environ["PATH"].split(os.pathsep)
    assert path[0] == str(COMPILER_CACHE_BIN) and path.count(str(COMPILER_CACHE_BIN)) == 1  # first, once
    assert os.access(COMPILER_CACHE_BIN / "gcc", os.X_OK)
    import time

    (tmp_path / "h.h").write_text(f"#define SALT {time.time_ns() % 1000003}\n")  # a source no earlier run compiled
    (tmp_path / "u.c").write_text('#include "h.h"\nint f(void) { int unused; return SALT; }\n')
    runs = []
    for k in (1, 2):
        out = tmp_path / f"o{k}"
        out.mkdir()
        runs.append(subprocess.run(["gcc", "-Wall", "-MMD", "-MP", "-c", "u.c", "-o", str(out / "u.o")], cwd=tmp_path,
                                   capture_output=True, text=True, timeout=120))
        assert runs[-1].returncode == 0, runs[-1].stderr
        assert (out / "u.d").read_text().replace("\\\n", " ").split()[:3] == [f"{out / 'u.o'}:", "u.c", "h.h"]
    assert "unused variable" in runs[0].stderr and runs[1].stderr == runs[0].stderr
    assert (tmp_path / "o1" / "u.o").read_bytes() == (tmp_path / "o2" / "u.o").read_bytes()
    for k in (1, 2):
        ci = tmp_path / f"cg{k}"
        ci.mkdir()
        proc = subprocess.run(["gcc", "-O1", "-fcallgraph-info=su", "-c", str(tmp_path / "u.c"), "-o", "u.o"],
                              cwd=ci, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and (ci / "u.ci").is_file(), proc.stderr
