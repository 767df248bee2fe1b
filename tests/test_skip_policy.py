"""The skip policy (tests/skip_policy.py): every skip is listed at the end of the run, and under CI=true a skip
whose reason is not allow-listed fails the session. Runs tiny test files in a pytester sandbox."""

from __future__ import annotations

import re

import pytest

from tests import skip_policy
from tests.conftest import SHARED_MODELS, shared_model

pytest_plugins = ["pytester"]

ALLOWED = "offline deploy downloads the device's dependency wheels here first: PyPI is not reachable"
TINY = f"""
import pytest

def test_runs():
    assert 1 + 1 == 2

def test_not_allowed():
    pytest.skip("the FULLY_CONNECTED kernel has not landed")

def test_allowed():
    pytest.skip({ALLOWED!r})

@pytest.mark.xfail(strict=True, reason="a known bug: 1 is not 2")
def test_known_bug():
    assert 1 == 2
"""


def run(pytester, monkeypatch, source: str, ci: str | None, *args):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    pytester.makepyfile(test_tiny=source)
    return pytester.runpytest("-p", "tests.skip_policy", "-p", "no:cacheprovider", *args)


def summary(result) -> list[str]:
    """The lines of the skip section (the last section of the output)."""
    lines = result.outlines
    start = max(i for i, line in enumerate(lines) if "skips and expected failures" in line)
    return lines[start:]


def test_not_allowed_skip_fails_the_session_under_ci(pytester, monkeypatch):
    result = run(pytester, monkeypatch, TINY, "true")
    result.assert_outcomes(passed=1, skipped=2, xfailed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = "\n".join(summary(result))
    assert "SKIPPED test_tiny.py::test_not_allowed: the FULLY_CONNECTED kernel has not landed  [NOT ALLOWED ON CI]" in text
    assert f"SKIPPED test_tiny.py::test_allowed: {ALLOWED}  [allowed on CI]" in text
    assert "XFAILED test_tiny.py::test_known_bug: a known bug: 1 is not 2" in text
    assert "CI=true: 1 skip(s) whose reason is not in ALLOWED_ON_CI" in text


def test_allowed_skip_passes_under_ci(pytester, monkeypatch):
    source = TINY.replace('pytest.skip("the FULLY_CONNECTED kernel has not landed")', "pass")
    result = run(pytester, monkeypatch, source, "true")
    result.assert_outcomes(passed=2, skipped=1, xfailed=1)
    assert result.ret == pytest.ExitCode.OK
    assert any(f"test_allowed: {ALLOWED}  [allowed on CI]" in line for line in summary(result))


def test_without_ci_skips_are_listed_and_do_not_fail(pytester, monkeypatch):
    result = run(pytester, monkeypatch, TINY, None)
    assert result.ret == pytest.ExitCode.OK
    lines = summary(result)
    assert lines[0].strip("= ").startswith("skips and expected failures: 3")
    assert "SKIPPED test_tiny.py::test_not_allowed: the FULLY_CONNECTED kernel has not landed" in lines
    assert not any("ALLOWED ON CI" in line or "allowed on CI" in line for line in lines)


def test_ci_false_is_not_ci(pytester, monkeypatch):
    assert run(pytester, monkeypatch, TINY, "false").ret == pytest.ExitCode.OK


def test_a_real_failure_keeps_its_exit_status(pytester, monkeypatch):
    result = run(pytester, monkeypatch, TINY + "\ndef test_fails():\n    assert False\n", "true")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1, skipped=2, xfailed=1)


def test_module_level_skip_and_xpass_are_listed(pytester, monkeypatch):
    pytester.makepyfile(test_other="""
import pytest
pytest.importorskip("no_such_module_anywhere")
""")
    source = TINY + '\n@pytest.mark.xfail(reason="flaky peer")\ndef test_xpass():\n    pass\n'
    result = run(pytester, monkeypatch, source, "true")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = "\n".join(summary(result))
    assert re.search(r"SKIPPED test_other.py: could not import 'no_such_module_anywhere'.*\[NOT ALLOWED ON CI\]", text)
    assert "XPASSED test_tiny.py::test_xpass: flaky peer" in text


def test_the_listing_works_with_xdist(pytester, monkeypatch):
    result = run(pytester, monkeypatch, TINY, "true", "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = "\n".join(summary(result))
    assert "test_not_allowed: the FULLY_CONNECTED kernel has not landed  [NOT ALLOWED ON CI]" in text
    assert text.count("SKIPPED ") == 2  # once each: the workers do not print their own lists


def test_no_tests_is_exit_5(pytester, monkeypatch):
    """`make test` fails on pytest's exit status 5 (nothing collected), like on any other non-zero one."""
    result = run(pytester, monkeypatch, "", "true")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_missing_shared_models_is_not_allowed_on_ci(monkeypatch, tmp_path):
    """CI has ../shared beside the clone: the skip a user's clone gets must fail CI."""
    import tests.conftest as conftest

    monkeypatch.setattr(conftest, "SHARED_MODELS", tmp_path / "absent")
    with pytest.raises(pytest.skip.Exception) as e:
        shared_model("tflite-micro/hello_world_int8.tflite")
    assert skip_policy.allowed_on_ci(str(e.value.msg)) is None
    assert skip_policy.allowed_on_ci("../shared/models is absent") is None
    assert SHARED_MODELS.name == "models"


def test_every_allow_list_entry_is_a_regex_with_a_reason():
    for entry in skip_policy.ALLOWED_ON_CI:
        re.compile(entry.pattern)
        assert len(entry.why) > 20, entry
        assert not re.search(entry.pattern, ""), f"{entry.pattern!r} matches any reason"


def _skip_literals() -> list[str]:
    """The string reasons of every pytest.skip(...) / skipif(reason=...) call in tests/."""
    import ast
    from pathlib import Path

    found = []
    for path in Path(__file__).parent.glob("*.py"):
        text = path.read_text()
        if "skip" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("skip", "skipif"):
                args = list(node.args) + [k.value for k in node.keywords if k.arg == "reason"]
                found += [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return found


def test_every_allow_list_entry_matches_a_skip_in_the_tests():
    """An entry no test can produce is stale (and an open door): remove it with the skip it was for."""
    literals = _skip_literals()
    assert "../shared/models is absent in this checkout" in literals  # the scan sees the tests' skips
    for entry in skip_policy.ALLOWED_ON_CI:
        assert any(re.search(entry.pattern, s) for s in literals), entry.pattern
