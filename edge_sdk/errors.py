"""One error type per boundary.

Everything wrong with a model — malformed bytes, an op we cannot run, an arena that is too small — is a
``ModelError`` (a ``ValueError``), so callers catch one type. Links and boards raise ``DeviceError``;
a C runtime that cannot be built here raises ``BuildError``; an input or data file that is not what it claims
(or holds NaN / inf) is a ``DataError``.
``ERRORS`` below maps these to exit statuses and --json kinds, in one place: the CLI (``edge_sdk.cli``), its
``--help`` and the README's exit-status table all read it; library code never prints or exits.
"""


class EdgeError(Exception):
    """Base of every error edge-sdk raises on purpose."""


class ModelError(EdgeError, ValueError):
    """A model is malformed, unsupported, or does not fit."""


class UnsupportedOpError(ModelError):
    """An operator, op version or dtype that no kernel (or delegate) here can run."""


class ArenaTooSmallError(ModelError):
    """The model's tensors do not fit the arena the caller gave."""

    def __init__(self, required: int, given: int, what: str = "arena"):
        super().__init__(f"{what} too small: the model needs {required} bytes, {given} given")
        self.required = required
        self.given = given


class ConversionError(ModelError):
    """A source model cannot be converted; ``problems`` lists every reason (node, op, opset, why)."""

    def __init__(self, message: str, problems: list[str] | None = None):
        self.problems = list(problems or [])
        if self.problems:
            message = message + "\n" + "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(message)


class UsageError(EdgeError, ValueError):
    """An argument or option a caller gave is out of range or contradicts another (the CLI exits 2, argparse's
    usage-error code); the message names the argument (``--runs``, ``port``)."""


class SettingError(UsageError, ConversionError):
    """A conversion setting that does not fit the model it is given with (an input, output or op it names is not
    there; a shape or value that does not fit): a misuse of the flag (exit 2, a ``UsageError``), still a
    ``ConversionError`` to callers of ``convert()`` that catch those."""


class ProfileError(EdgeError):
    """A device profile (device_profiles/*.toml) is malformed, or names an unknown profile/backend."""


class DeviceError(EdgeError):
    """A device, board or link failed (serial, QEMU, SSH)."""


class BuildError(EdgeError, RuntimeError):
    """The C runtime (its host library, a check runner, a target's objects) could not be built here: a tool is
    missing or the build failed. Still a ``RuntimeError``, as it was before it joined this hierarchy."""


class DataError(ModelError):
    """An input or data file is not what it claims (not an array, an image, audio, a labels text), or its values
    are not finite (NaN, inf). Still a ``ModelError`` (exit 3): the model cannot run on it."""


# ------------------------------------------------------------------ exit statuses: the one place (CLI, README)
# (error type, exit status, kind): most specific first; the first isinstance match wins. "kind" is the word a
# script reads in `--json` error objects ({"error", "kind", "exit"}). 2 is argparse's usage error (UsageError: an
# argument the library found out of range or contradictory, named in the message).
ERRORS: list[tuple[type[BaseException], int, str]] = [
    (UsageError, 2, "usage"),
    (DataError, 3, "data"),
    (ModelError, 3, "model"),
    (DeviceError, 4, "device"),
    (ProfileError, 7, "profile"),
    (BuildError, 8, "build"),
    (EdgeError, 5, "error"),
    (FileNotFoundError, 6, "file"),
    (PermissionError, 6, "file"),
    (IsADirectoryError, 6, "file"),
]
EXIT_CODES: list[tuple[type[BaseException], int]] = [(t, code) for t, code, _ in ERRORS]

# Interrupted by a signal: 128 + its number, the shell's convention (Ctrl-C: SIGINT 2 -> 130; SIGTERM 15 -> 143).
EXIT_SIGINT = 130
EXIT_SIGTERM = 143
INTERRUPTED_KIND = "interrupted"  # the --json kind of both
EXIT_INTERNAL = 1  # a bug of ours (and a command's own "no": edge check "fails", edge profile "differs")

# What each exit status means: `edge --help` (EXIT_STATUS_HELP) and the README's table (exit_status_markdown())
# are both made from these rows; tests/test_cli_exit_codes.py checks every code of ERRORS is here.
EXIT_STATUSES: list[tuple[int, str]] = [
    (0, "done (edge check: the model runs, or runs partly on a delegate)"),
    (EXIT_INTERNAL, "the command's own \"no\" (edge check: the model fails on the target; edge profile: the device's "
                    "outputs differ from the host's), or an internal error (a bug: please report it; -vv shows the "
                    "traceback)"),
    (2, "argument misuse: a flag's value, an unknown --target (with \"did you mean\"), a contradiction (one line "
        "naming the flag)"),
    (3, "the model cannot be read, converted or run, or an input / data file is not what it claims or holds NaN/inf"),
    (4, "a device, board or link failed"),
    (5, "any other edge-sdk error"),
    (6, "a file is missing or cannot be read"),
    (7, "a device profile is malformed (an unknown profile name is argument misuse: 2)"),
    (8, "the C runtime cannot be built here (a tool is missing, or its build failed)"),
    (EXIT_SIGINT, "interrupted by Ctrl-C (SIGINT)"),
    (EXIT_SIGTERM, "terminated (SIGTERM)"),
]


def exit_code(exc: BaseException) -> int:
    """The exit status of an error (EXIT_INTERNAL when it is none of ours: a bug)."""
    return next((code for t, code, _ in ERRORS if isinstance(exc, t)), EXIT_INTERNAL)


def error_kind(exc: BaseException) -> str:
    """The --json "kind" of an error ("internal" when it is none of ours)."""
    return next((kind for t, _, kind in ERRORS if isinstance(exc, t)), "internal")


def exit_status_help(width: int = 110) -> str:
    """The `edge --help` epilog: one row per status, wrapped under its meaning."""
    import textwrap

    lines = ["exit status:"]
    for code, meaning in EXIT_STATUSES:
        wrapped = textwrap.wrap(meaning, width - 7) or [""]
        lines.append(f"  {code:<4} {wrapped[0]}")
        lines += [f"       {more}" for more in wrapped[1:]]
    return "\n".join(lines) + "\n"


def exit_status_markdown() -> str:
    """The README's exit-status table (edge_sdk.tools.docs writes it between its generated-section markers)."""
    kinds: dict[int, list[str]] = {}
    for _, code, kind in ERRORS:
        if kind not in kinds.setdefault(code, []):
            kinds[code].append(kind)
    kinds.setdefault(EXIT_INTERNAL, []).append("internal")
    kinds[EXIT_SIGINT] = kinds[EXIT_SIGTERM] = [INTERRUPTED_KIND]
    rows = ["| exit | meaning | `--json` kind |", "| --- | --- | --- |"]
    for code, meaning in EXIT_STATUSES:
        kind = ", ".join(f"`{k}`" for k in kinds.get(code, [])) or "-"
        rows.append(f"| {code} | {meaning.replace('|', chr(92) + '|')} | {kind} |")
    return "\n".join(rows) + "\n"
