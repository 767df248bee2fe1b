"""`edge`: a thin command line over the library.

Each command is a typed library function; this module only parses arguments, calls it, prints its result
(text, or JSON with --json) and maps our error types to exit codes — in one place, ``EXIT_CODES``.
"""

from __future__ import annotations

import argparse
import json
import sys

from edge_sdk import log
from edge_sdk.errors import DeviceError, EdgeError, ModelError

# One place maps error types to exit codes (most specific first). 2 is argparse's usage error.
EXIT_CODES: list[tuple[type[BaseException], int]] = [
    (ModelError, 3),
    (DeviceError, 4),
    (EdgeError, 5),
    (FileNotFoundError, 6),
    (PermissionError, 6),
    (IsADirectoryError, 6),
]


def _cmd_inspect(args) -> int:
    from edge_sdk.inspection import format_inspection, inspect_model

    report = inspect_model(args.model)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_inspection(report))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edge", description="edge-sdk: take a trained network onto a device.")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more detail on stderr (-vv: debug)")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("inspect", help="ops, tensors, quantization, MACs and the arena plan of a .tflite model")
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_inspect)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from edge_sdk import __version__

        print(f"edge-sdk {__version__}")
        return 0
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    log.configure(args.verbose)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except tuple(t for t, _ in EXIT_CODES) as exc:
        code = next(c for t, c in EXIT_CODES if isinstance(exc, t))
        message = str(exc)
        if isinstance(exc, OSError) and exc.filename:
            message = f"{exc.strerror}: {exc.filename}"
        sys.stderr.write(f"edge {args.command}: error: {message}\n")
        return code


if __name__ == "__main__":
    sys.exit(main())
