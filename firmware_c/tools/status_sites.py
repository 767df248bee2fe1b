#!/usr/bin/env python3
"""The sentence behind a Cortex-M error message's "@<line>": the host half of EDGE_STATUS_SITES.

    status_sites.py "node 3 (code 3 v1): the node's tensors or options are inconsistent (...): @137"
        -> node 3 (CONV_2D code 3 v1): the node's tensors or options are inconsistent (...): filter needs one scale
           or one per output channel
    from status_sites import decode          (decode(message) -> the message with every "@<line>" replaced)

The Cortex-M builds of firmware_c/Makefile (STATUS_DEFS=-DEDGE_STATUS_SITES) keep a refusal's reason as the source
line of its EDGE_FAIL / EDGE_EVAL_FAIL / EDGE_EVAL_BAD_INPUT / WHAT call instead of its text (include/edge_kernel.h:
EDGE_REASON; ~2.5 KB of person_detect's M4 image), and edge_error_message prints it as "@<line>". This reads the
reason back from this checkout's sources: the loader's (src/edge.c) when the message names no node, else the
node's kernel file (by the op code or custom name in the message; tools/gen_ops.py's scan), the src/ headers it
includes, and edge.c (the kernel API's own checks). A line that holds a site in more than one of them gives every
candidate ("a | b"); a reason the call site passes on from its caller (a helper's `reason` parameter) is named as
that expression. The sources must be the firmware's: a message from another version decodes to the wrong lines.
Python standard library only.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FW = HERE.parent
SRC = FW / "src"
sys.path.insert(0, str(HERE))
import gen_ops  # noqa: E402

_CALL = re.compile(r"\b(EDGE_FAIL|EDGE_EVAL_FAIL|EDGE_EVAL_BAD_INPUT|WHAT)\s*\(")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_SITE = re.compile(r"@(\d+)\b")
# "node 3 (CONV_2D code 3 v1)", "node 3 (code 3 v1)", "node 3 (MyCustomOp v1)"
_NODE = re.compile(r"\bnode \d+ \((?:(?:(\w+) )?code (\d+)|([^()]+?)) v\d+\)")


def _arguments(text: str, start: int) -> list[str]:
    """The top-level arguments of the call whose '(' is at text[start]."""
    depth, i, args, cur = 0, start, [], []
    while i < len(text):
        c = text[i]
        if c == '"':
            m = _STRING.match(text, i)
            end = m.end() if m else i + 1
            cur.append(text[i:end])
            i = end
            continue
        if c == "'":
            end = text.index("'", i + 2 if text[i + 1] == "\\" else i + 1) + 1
            cur.append(text[i:end])
            i = end
            continue
        if c == "(":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args
        elif c == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return args


def _reason(arg: str) -> str:
    """A reason argument as text: its string literal(s) joined, else the expression it passes on."""
    pieces = _STRING.findall(arg)
    if pieces and not _STRING.sub("", arg).strip(" \t\n()"):
        return "".join(bytes(p, "utf-8").decode("unicode_escape") for p in pieces)
    return f"(the reason its caller gives: {' '.join(arg.split())})"


@functools.lru_cache(maxsize=None)
def sites(path: Path) -> dict[int, str]:
    """{line: reason} of every reason site of a source file (a call's line is the line of its macro's name)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    out: dict[int, str] = {}
    for m in _CALL.finditer(text):
        if text[max(0, m.start() - 8):m.start()].rstrip().endswith("#define"):
            continue
        args = _arguments(text, m.end() - 1)
        if not args:
            continue
        line = text.count("\n", 0, m.start()) + 1
        out.setdefault(line, _reason(args[-1]))
    return out


def _with_headers(path: Path, seen: set[Path]) -> list[Path]:
    """path and the src/ headers it includes, recursively (each once)."""
    if path in seen or not path.is_file():
        return []
    seen.add(path)
    out = [path]
    for name in _INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
        for d in (path.parent, SRC, FW / "include"):
            if (d / name).is_file():
                out += _with_headers((d / name).resolve(), seen)
                break
    return out


@functools.lru_cache(maxsize=None)
def _kernels() -> list[dict]:
    return gen_ops.scan()


def candidates(op_code: int | None = None, custom: str | None = None) -> list[Path]:
    """The source files a site of this error can be in: edge.c alone for the loader (no op), else the op's
    kernel files with their headers, then edge.c."""
    edge_c = (SRC / "edge.c").resolve()
    if op_code is None and custom is None:
        return [edge_c]
    files = sorted({r["file"] for r in _kernels()
                    if (custom is not None and r["custom"] == custom)
                    or (custom is None and r["custom"] is None and r["code"] == op_code)})
    seen: set[Path] = set()
    out: list[Path] = []
    for f in files:
        out += _with_headers((SRC / "kernels" / f).resolve(), seen)
    return out + ([edge_c] if edge_c not in seen else [])


def op_name(code: int) -> str | None:
    return {v: k for k, v in gen_ops.op_codes().items()}.get(code)


def decode(message: str) -> str:
    """message with each "@<line>" replaced by the reason at that line, and the op's name put before a bare
    "code N" (an EDGE_STATUS_SITES build leaves names to the host). A message without sites is returned as is."""
    node = _NODE.search(message)
    op_code = custom = None
    if node:
        if node.group(2) is not None:
            op_code = int(node.group(2))
            if node.group(1) is None and op_name(op_code):
                message = message[:node.start(2) - 5] + f"{op_name(op_code)} " + message[node.start(2) - 5:]
        else:
            custom = node.group(3)
    files = candidates(op_code, custom)

    def one(m: re.Match) -> str:
        line = int(m.group(1))
        found = [sites(f)[line] for f in files if line in sites(f)]
        found = list(dict.fromkeys(found))
        if not found:
            return f"line {line} (no reason site there in {', '.join(f.name for f in files)})"
        return " | ".join(found)
    return _SITE.sub(one, message)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip().split("\n\n")[0] + "\n\n    status_sites.py MESSAGE...   (or the messages on stdin)")
        return 0 if args else 2
    for message in args if args != ["-"] else sys.stdin.read().splitlines():
        print(decode(message))
    return 0


if __name__ == "__main__":
    sys.exit(main())
