"""Issue 23 point 1: every (op, version) LiteRT 2.3 registers and every (op, dtype) its reference kernels run in
the generic one-op forms of tests/litert_matrix.py runs on both our runtimes with LiteRT's result, except the gaps
KNOWN_GAPS lists with their reasons (``python -m tests.litert_matrix`` prints the whole matrix)."""

from __future__ import annotations

import pytest

from tests import litert_matrix
from tests.conftest import HAVE_C_RUNTIME

pytest.importorskip("ai_edge_litert")

RUNTIMES = ("python", "c") if HAVE_C_RUNTIME else ("python",)


@pytest.fixture(scope="module")
def gaps():
    """(version gaps, dtype gaps) of the whole matrix, computed once (about 10 s)."""
    return litert_matrix.version_rows(RUNTIMES)[1], litert_matrix.dtype_rows(runtimes=RUNTIMES)[1]


def test_versions_litert_registers_run_here(gaps):
    unexplained = litert_matrix.unexplained(gaps[0])
    assert not unexplained, "\n".join(unexplained)


def test_dtypes_litert_runs_run_here_with_its_result(gaps):
    unexplained = litert_matrix.unexplained(gaps[1])
    assert not unexplained, "\n".join(unexplained)


def test_known_gaps_are_still_gaps(gaps):
    """A gap closed leaves KNOWN_GAPS: every listed (op, dtype or version, runtime) still fails its comparison."""
    found = {(op, what, runtime) for op, what, runtime, _ in gaps[0] + gaps[1]}
    stale = [key for key in litert_matrix.KNOWN_GAPS if key[2] in RUNTIMES and key not in found]
    assert not stale, f"listed as gaps but they pass now (take them out of KNOWN_GAPS): {stale}"
