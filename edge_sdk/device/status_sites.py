"""The sentence behind a Cortex-M error message's "@<line>": the host half of EDGE_STATUS_SITES.

    decode("node 3 (code 3 v1): the node's tensors or options are inconsistent (...): @137")
        -> "node 3 (CONV_2D code 3 v1): the node's tensors or options are inconsistent (...): filter needs one
            scale or one per output channel"

The Cortex-M builds (firmware_c/Makefile and firmware_c/app/Makefile: STATUS_DEFS=-DEDGE_STATUS_SITES) keep a
refusal's reason as the source line of its EDGE_FAIL / EDGE_EVAL_FAIL / EDGE_EVAL_BAD_INPUT / WHAT call instead of
its text (include/edge_kernel.h: EDGE_REASON), and edge_error_message prints it as "@<line>". This reads the reason
back from the firmware sources (resources.firmware_dir(): the checkout's firmware_c, or the copy bundled in an
installed wheel): the loader's (src/edge.c) when the message names no node, else the node's kernel file (by the op
name or custom name: the generated op_table_c.C_KERNELS), the src/ headers it includes, and edge.c (the kernel
API's own checks). A line that holds a site in more than one of them gives every candidate ("a | b"); a reason the
call site passes on from its caller (a helper's ``reason`` parameter) is named as that expression. The sources
must be the firmware's: a message from another version decodes to the wrong lines (edge flash builds from these
same sources). firmware_c/tools/status_sites.py is the command-line face of this module.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from edge_sdk import resources
from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES
from edge_sdk.runtime.op_table_c import C_KERNELS

_CALL = re.compile(r"\b(EDGE_FAIL|EDGE_EVAL_FAIL|EDGE_EVAL_BAD_INPUT|WHAT)\s*\(")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_SITE = re.compile(r"@(\d+)\b")
# "node 3 (CONV_2D code 3 v1)", "node 3 (code 3 v1)", "node 3 (MyCustomOp v1)"
_NODE = re.compile(r"\bnode \d+ \((?:(?:(\w+) )?code (\d+)|([^()]+?)) v\d+\)")
_OP_NAMES = {code: name for name, code in BUILTIN_OPERATOR_CODES.items()}


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


def _with_headers(path: Path, firmware: Path, seen: set[Path]) -> list[Path]:
    """path and the src/ headers it includes, recursively (each once)."""
    if path in seen or not path.is_file():
        return []
    seen.add(path)
    out = [path]
    for name in _INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
        for d in (path.parent, firmware / "src", firmware / "include"):
            if (d / name).is_file():
                out += _with_headers((d / name).resolve(), firmware, seen)
                break
    return out


def candidates(op: str | None = None, firmware: Path | None = None) -> list[Path]:
    """The source files a site of this error can be in: edge.c alone for the loader (op None), else the kernel
    file of op (a builtin op's name or a custom op's code) with its headers, then edge.c."""
    firmware = Path(firmware or resources.firmware_dir())
    edge_c = (firmware / "src" / "edge.c").resolve()
    if op is None or op not in C_KERNELS:
        return [edge_c]
    seen: set[Path] = set()
    out = _with_headers((firmware / "src" / "kernels" / C_KERNELS[op][1]).resolve(), firmware, seen)
    return out + ([edge_c] if edge_c not in seen else [])


def decode(message: str, firmware: Path | None = None) -> str:
    """message with each "@<line>" replaced by the reason at that line, and the op's name put before a bare
    "code N" (an EDGE_STATUS_SITES build leaves names to the host). A message without sites is returned as is."""
    if not _SITE.search(message):
        return message
    node = _NODE.search(message)
    op = None
    if node:
        if node.group(2) is not None:
            op = node.group(1) or _OP_NAMES.get(int(node.group(2)))
            if node.group(1) is None and op:
                at = node.start(2) - len("code ")
                message = message[:at] + f"{op} " + message[at:]
        else:
            op = node.group(3)
    files = candidates(op, firmware)

    def one(m: re.Match) -> str:
        line = int(m.group(1))
        found = list(dict.fromkeys(sites(f)[line] for f in files if line in sites(f)))
        if not found:
            return f"line {line} (no reason site there in {', '.join(f.name for f in files)})"
        return " | ".join(found)
    return _SITE.sub(one, message)
