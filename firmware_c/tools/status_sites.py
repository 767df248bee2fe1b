#!/usr/bin/env python3
"""The sentence behind a Cortex-M error message's "@<line>": the host half of EDGE_STATUS_SITES, on the command line.

    status_sites.py "node 3 (code 3 v1): the node's tensors or options are inconsistent (...): @137"
        -> node 3 (CONV_2D code 3 v1): the node's tensors or options are inconsistent (...): filter needs one scale
           or one per output channel
    from status_sites import decode          (decode(message) -> the message with every "@<line>" replaced)

The decoder is edge_sdk/device/status_sites.py (the host's serial link decodes a board's errors with it); this
script runs it against this checkout's sources (the firmware_c/ folder it lives in), so edge_sdk must be importable
(it is found next to firmware_c/ in a checkout). The sources must be the firmware's: a message from another version
decodes to the wrong lines.
"""

from __future__ import annotations

import sys
from pathlib import Path

FW = Path(__file__).resolve().parent.parent
if str(FW.parent) not in sys.path and (FW.parent / "edge_sdk").is_dir():
    sys.path.insert(0, str(FW.parent))
from edge_sdk.device import status_sites as _sites  # noqa: E402


def decode(message: str) -> str:
    """message with each "@<line>" replaced by the reason at that line of this firmware_c's sources."""
    return _sites.decode(message, FW)


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
