"""One error type per boundary.

Everything wrong with a model — malformed bytes, an op we cannot run, an arena that is too small — is a
``ModelError`` (a ``ValueError``), so callers catch one type. Links and boards raise ``DeviceError``;
a C runtime that cannot be built here raises ``BuildError``.
The CLI maps these to exit codes in one place (``edge_sdk.cli``); library code never prints or exits.
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


class ProfileError(EdgeError):
    """A device profile (device_profiles/*.toml) is malformed, or names an unknown profile/backend."""


class DeviceError(EdgeError):
    """A device, board or link failed (serial, QEMU, SSH)."""


class BuildError(EdgeError, RuntimeError):
    """The C runtime (its host library, a check runner, a target's objects) could not be built here: a tool is
    missing or the build failed. Still a ``RuntimeError``, as it was before it joined this hierarchy."""
