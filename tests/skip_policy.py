"""The skip policy of the test suite: a pytest plugin (tests/conftest.py loads it).

At the end of every run it lists each skipped, xfailed and xpassed test with its reason, so ``make test`` ends
with what did not run. Under ``CI=true`` a skip whose reason matches no entry of ``ALLOWED_ON_CI`` fails the
session (exit status 1): CI is a fresh clone on Debian, as root, with ../shared beside it and every Debian
package of the Makefile installed, so a test that skips there hides a missing feature or a broken setup.

An entry of ``ALLOWED_ON_CI`` is a regex searched in the skip reason, with why the test cannot run on CI's
machine. "../shared/models is absent" is deliberately not one: CI has ../shared.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Allowed:
    pattern: str  # searched (re.search) in the skip reason
    why: str  # why a test with this reason cannot run on CI's machine


ALLOWED_ON_CI: list[Allowed] = [
    Allowed(r"^offline deploy downloads the device's dependency wheels here first: PyPI is not reachable$",
            "the network: CI's machine may reach packages only through a mirror (pip's index-url), not pypi.org "
            "itself; tests/test_deploy.py's offline deploy needs pypi.org; the rest of deploy runs offline"),
]
# Not here on purpose: "../shared/models is absent" (CI has ../shared), a Debian tool missing (`make setup`
# installs every package of the Makefile as root on CI), a peer refusing a model (tests assert the refusal).

CI_VALUES = ("1", "true", "yes")


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in CI_VALUES


def allowed_on_ci(reason: str) -> Allowed | None:
    """The allow-list entry that accepts this skip reason on CI, or None."""
    for entry in ALLOWED_ON_CI:
        if re.search(entry.pattern, reason):
            return entry
    return None


def skip_reason(report) -> str:
    """The reason of a skipped test or collector report ("Skipped: " dropped)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason


class SkipPolicy:
    """Records every skip / xfail / xpass the session reports, prints them last, and applies the CI rule."""

    def __init__(self):
        self.records: list[tuple[str, str, str]] = []  # (kind, nodeid, reason)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report):
        if hasattr(report, "wasxfail"):
            if report.skipped:
                self.records.append(("xfailed", report.nodeid, str(report.wasxfail)))
            elif report.passed and report.when == "call":
                self.records.append(("xpassed", report.nodeid, str(report.wasxfail)))
        elif report.skipped:
            self.records.append(("skipped", report.nodeid, skip_reason(report)))

    @pytest.hookimpl(trylast=True)
    def pytest_collectreport(self, report):
        if report.skipped:  # a module-level skip or importorskip
            self.records.append(("skipped", report.nodeid, skip_reason(report)))

    def violations(self) -> list[tuple[str, str]]:
        """(nodeid, reason) of every skip CI does not accept."""
        return [(node, reason) for kind, node, reason in self.records
                if kind == "skipped" and allowed_on_ci(reason) is None]

    def pytest_sessionfinish(self, session, exitstatus):
        if on_ci() and self.violations() and exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)  # after --durations and -r: the run's output ends with this list
    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        tr, ci = terminalreporter, on_ci()
        tr.section(f"skips and expected failures: {len(self.records)}")
        if not self.records:
            tr.write_line("none: every collected test ran")
        for kind, node, reason in sorted(self.records):
            mark = ""
            if kind == "skipped" and ci:
                mark = "  [allowed on CI]" if allowed_on_ci(reason) else "  [NOT ALLOWED ON CI]"
            tr.write_line(f"{kind.upper()} {node}: {reason}{mark}")
        bad = self.violations() if ci else []
        if bad:
            tr.write_line(f"CI=true: {len(bad)} skip(s) whose reason is not in ALLOWED_ON_CI (tests/skip_policy.py): "
                          "the session fails", red=True, bold=True)


def pytest_configure(config):
    # Under xdist the controller receives every worker's reports: only it records and prints.
    if not hasattr(config, "workerinput") and not config.pluginmanager.has_plugin("edge-skip-policy"):
        config.pluginmanager.register(SkipPolicy(), "edge-skip-policy")
