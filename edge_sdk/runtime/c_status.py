"""The C runtime's ``edge_status_t`` values, read from firmware_c/include/edge_status.def (the one list).

    from edge_sdk.runtime.c_status import STATUS, status_names, status_text
    STATUS["EDGE_ARENA_TOO_SMALL"]        # 11: the value edge_init returns
    status_names()[11]                    # "EDGE_ARENA_TOO_SMALL"
    status_text(11)                       # "arena too small (see edge_arena_required / ...)"

edge.h turns the X-macro list ``EDGE_STATUS(name, "text")`` into the enum (values: the order of the list) and
edge.c into ``edge_status_str``; this module reads the same file (through ``resources.firmware_dir()``, so a
checkout and an installed wheel answer alike) instead of keeping a copy. Standard library only; the file is
read once, when this module is imported.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from edge_sdk import resources

DEF_FILE = ("include", "edge_status.def")  # under resources.firmware_dir()

# EDGE_STATUS(NAME, "text") at the start of a line; the text is a C string literal (\" and \\ escapes allowed)
_ENTRY = re.compile(r'^[ \t]*EDGE_STATUS\([ \t]*(\w+)[ \t]*,[ \t]*"((?:[^"\\\n]|\\.)*)"[ \t]*\)', re.M)
_MENTION = re.compile(r"^[ \t]*EDGE_STATUS\(", re.M)
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "'": "'"}


def parse(text: str, source: str = "edge_status.def") -> tuple[tuple[str, str], ...]:
    """(name, text) per ``EDGE_STATUS(name, "text")`` line of ``text``, in order (the order is the value).
    ValueError naming the line when an entry does not parse or a name repeats."""
    entries = []
    matched = {m.start() for m in _ENTRY.finditer(text)}
    for m in _MENTION.finditer(text):
        start = m.start()
        if start not in matched:
            line = text.count("\n", 0, start) + 1
            raise ValueError(f"{source}:{line}: cannot read this EDGE_STATUS(NAME, \"text\") entry")
    for m in _ENTRY.finditer(text):
        name = m.group(1)
        msg = re.sub(r"\\(.)", lambda e: _ESCAPES.get(e.group(1), e.group(1)), m.group(2))
        if any(name == n for n, _ in entries):
            line = text.count("\n", 0, m.start()) + 1
            raise ValueError(f"{source}:{line}: status {name} is listed twice")
        entries.append((name, msg))
    if not entries or entries[0][0] != "EDGE_OK":
        raise ValueError(f"{source}: the first status must be EDGE_OK (value 0)")
    return tuple(entries)


@functools.lru_cache(maxsize=None)
def _load(path: str) -> tuple[tuple[str, str], ...]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise FileNotFoundError(f"cannot read the C runtime's status list {path}: {exc.strerror or exc}") from exc
    return parse(text, path)


def table() -> tuple[tuple[str, str], ...]:
    """(name, text) of every edge_status_t, indexed by value."""
    return _load(str(resources.firmware_dir().joinpath(*DEF_FILE)))


def status_names() -> tuple[str, ...]:
    """The edge_status_t names ("EDGE_OK", "EDGE_BAD_ARGUMENT", ...), indexed by value."""
    return tuple(name for name, _ in table())


def status_name(value: int) -> str:
    """The name of the status ``value``; "status N" for a value the list does not hold."""
    names = status_names()
    return names[value] if 0 <= value < len(names) else f"status {value}"


def status_text(value: int) -> str:
    """The text edge_status_str gives for ``value`` ("unknown status" outside the list, as in edge.c)."""
    t = table()
    return t[value][1] if 0 <= value < len(t) else "unknown status"


STATUS: dict[str, int] = {name: i for i, name in enumerate(status_names())}  # "EDGE_OK" -> 0, ...
