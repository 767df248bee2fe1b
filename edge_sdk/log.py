"""The one logger: stages and progress for the CLI's user, quiet for library callers.

Library code calls ``log.stage("building firmware")`` / ``log.info(...)`` / ``with log.progress(n, "flashing") as p:
p.advance(k)``; nothing appears unless the CLI (or a user) called ``configure()``. All of it goes to stderr, so
stdout stays clean for results (``--json``).
"""

from __future__ import annotations

import logging
import sys
import time
from contextlib import contextmanager

_logger = logging.getLogger("edge_sdk")
_logger.addHandler(logging.NullHandler())


STAGE = logging.WARNING - 5  # above INFO: stages show by default once configured
logging.addLevelName(STAGE, "STAGE")


def configure(verbosity: int = 0, stream=None) -> None:
    """Show messages on stderr: 0 = stages and warnings, 1 = info, 2 = debug."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    _logger.handlers[:] = [handler]
    _logger.setLevel({0: STAGE, 1: logging.INFO}.get(verbosity, logging.DEBUG))
    _logger.propagate = False


def reset() -> None:
    """Back to the library default (silent): the CLI shows messages only for the command it runs."""
    _logger.handlers[:] = [logging.NullHandler()]


def stage(message: str) -> None:
    _logger.log(STAGE, f"==> {message}")


def info(message: str) -> None:
    _logger.info(message)


def debug(message: str) -> None:
    _logger.debug(message)


def warning(message: str) -> None:
    _logger.warning(f"warning: {message}")


class _Progress:
    def __init__(self, total: int, label: str):
        self.total, self.label, self.done = max(int(total), 1), label, 0
        self._last = 0.0
        self._tty = _logger.isEnabledFor(STAGE) and any(
            getattr(getattr(h, "stream", None), "isatty", lambda: False)() for h in _logger.handlers
        )

    def advance(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)
        now = time.monotonic()
        if self._tty and (now - self._last > 0.1 or self.done == self.total):
            self._last = now
            width = 30
            filled = width * self.done // self.total
            bar = "#" * filled + "." * (width - filled)
            for h in _logger.handlers:
                h.stream.write(f"\r{self.label} [{bar}] {100 * self.done // self.total:3d}%")
                h.stream.flush()

    def close(self) -> None:
        if self._tty:
            for h in _logger.handlers:
                h.stream.write("\n")
        else:
            _logger.log(STAGE, f"{self.label}: done ({self.done}/{self.total})")


@contextmanager
def progress(total: int, label: str):
    bar = _Progress(total, label)
    try:
        yield bar
    finally:
        bar.close()
