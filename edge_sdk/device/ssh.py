"""A device reached over SSH, through the system OpenSSH client (``ssh``, ``ssh-keyscan``, ``ssh-keygen``).

    target = SSHTarget.parse("pi@raspberrypi.local:2222")     # or an alias from ~/.ssh/config: "mypi"
    conn = SSHConnection(target, identity="~/.ssh/id_ed25519")
    conn.run("uname -m").stdout                                # remote command: a string the device's shell runs
    with conn.session():                                       # optional: one connection for the calls inside
        ...
    conn.run_python("import sys; print(sys.argv[1])", "it's a path")   # python3 -c SCRIPT ARGS..., all quoted
    conn.upload("model.tflite", "/home/pi/.edge-sdk/models/.model.tflite.tmp")  # streamed over ssh's stdin

Because the system client runs as a subprocess (an argument list, never a local shell), ``~/.ssh/config``,
agents, keys and ``known_hosts`` work as they do for ``ssh`` itself. Every remote command string is built by
the caller with ``shlex.quote`` around each interpolated value (``remote_command`` does it); the remote login
shell is the only shell involved.

Host keys are always verified: ``StrictHostKeyChecking=yes`` unless ``accept_new_host_key`` (then
``accept-new``: a host never seen before is added to known_hosts; a CHANGED key is still refused by ssh).
When ssh refuses a key, ``DeviceError`` says so and shows the fingerprint the server presents (from
``ssh-keyscan`` piped to ``ssh-keygen -lf -``), so the user can compare it with the device's own
(``ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`` on the device). ``BatchMode=yes`` (never a password
prompt) and ``ConnectTimeout`` bound the connection; every subprocess has a timeout.

``config_file`` (or the environment variable ``EDGE_SSH_CONFIG``) passes ``-F FILE`` to ssh instead of
``~/.ssh/config`` (ssh finds ``~`` in the passwd database, so setting ``$HOME`` does not move it).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from edge_sdk import log
from edge_sdk import timeouts as T
from edge_sdk.errors import DeviceError

# ssh exits 255 on its own errors (connection, authentication, host key); other codes are the remote command's.
SSH_ERROR = 255

_HOST_KEY_PATTERNS = (
    "Host key verification failed",
    "REMOTE HOST IDENTIFICATION HAS CHANGED",
    "host key is known for",
    "No matching host key",
)


def require_openssh() -> None:
    """DeviceError unless the OpenSSH client is installed."""
    missing = [tool for tool in ("ssh", "ssh-keygen", "ssh-keyscan") if shutil.which(tool) is None]
    if missing:
        raise DeviceError(
            f"the OpenSSH client is not installed ({', '.join(missing)} not found); "
            "install it with: apt-get install openssh-client"
        )


@dataclass(frozen=True)
class SSHTarget:
    """Where to connect: ``host`` is a host name, an address, or a ``Host`` alias from ~/.ssh/config;
    ``user`` and ``port`` are None to let ssh (and its config) decide."""

    host: str
    user: str | None = None
    port: int | None = None
    name: str | None = None  # a label for tables (an inventory name); defaults to str(self)

    @classmethod
    def parse(cls, text: str, name: str | None = None) -> SSHTarget:
        """``[user@]host[:port]``; IPv6 addresses with a port go in brackets: ``pi@[fe80::1]:22``."""
        spec = text.strip()
        if not spec or any(c.isspace() for c in spec) or spec.startswith("-"):
            raise DeviceError(f"bad SSH host {text!r}: expected [user@]host[:port] or a ~/.ssh/config alias")
        user = None
        if "@" in spec:
            user, spec = spec.rsplit("@", 1)
            if not user:
                raise DeviceError(f"bad SSH host {text!r}: empty user name before '@'")
        port = None
        m = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?", spec)
        if m:
            spec, port = m.group(1), m.group(2)
        elif spec.count(":") == 1:
            spec, port = spec.split(":")
            if not port.isdigit():
                raise DeviceError(f"bad SSH host {text!r}: port {port!r} is not a number")
        if not spec:
            raise DeviceError(f"bad SSH host {text!r}: no host name")
        if port is not None and not 0 < int(port) < 65536:
            raise DeviceError(f"bad SSH host {text!r}: port {port} out of range")
        return cls(spec, user, None if port is None else int(port), name)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and self.port else self.host
        s = f"{self.user}@{host}" if self.user else host
        return f"{s}:{self.port}" if self.port else s

    @property
    def label(self) -> str:
        return self.name or str(self)


def remote_command(*argv: str) -> str:
    """One remote shell command from an argument list, every word quoted."""
    return " ".join(shlex.quote(str(a)) for a in argv)


class SSHConnection:
    """Runs commands on one device with the system ``ssh`` (one connection per call)."""

    def __init__(
        self,
        target: SSHTarget | str,
        *,
        identity: str | None = None,
        accept_new_host_key: bool = False,
        connect_timeout: float = T.SSH_CONNECT_TIMEOUT,
        options: dict[str, str] | None = None,
        config_file: str | None = None,
        ssh: str = "ssh",
    ):
        self.target = SSHTarget.parse(target) if isinstance(target, str) else target
        self.identity = identity
        self.accept_new_host_key = bool(accept_new_host_key)
        self.connect_timeout = max(1, round(connect_timeout))
        self.options = dict(options or {})
        # ssh finds ~/.ssh/config through the passwd database, not $HOME: another file needs -F.
        self.config_file = config_file or os.environ.get("EDGE_SSH_CONFIG") or None
        self.ssh = ssh
        self._control: str | None = None  # the ControlPath of a session() in progress

    def __repr__(self) -> str:
        return f"SSHConnection({self.target.label!r})"

    # ------------------------------------------------------------------ argument lists
    def _client_args(self) -> list[str]:
        opts = {
            "BatchMode": "yes",
            "StrictHostKeyChecking": "accept-new" if self.accept_new_host_key else "yes",
            "ConnectTimeout": str(self.connect_timeout),
            "ServerAliveInterval": "15",
            "ServerAliveCountMax": "3",
            **self.options,
        }
        args = ["-F", str(Path(self.config_file).expanduser())] if self.config_file else []
        for key, value in opts.items():
            args += ["-o", f"{key}={value}"]
        if self.identity:
            args += ["-i", str(Path(self.identity).expanduser()), "-o", "IdentitiesOnly=yes"]
        if self.target.port:
            args += ["-p", str(self.target.port)]
        if self.target.user:
            args += ["-l", self.target.user]
        if self._control:
            args += ["-o", "ControlMaster=no", "-o", f"ControlPath={self._control}"]
        return args

    @contextmanager
    def session(self):
        """Share one authenticated connection among the calls made inside (an OpenSSH ControlMaster in
        the background, its socket in a private temporary folder; closed on exit, and it exits by itself 60 s
        after its last use if this process dies). Connection problems (host key, authentication,
        unreachable) surface here, as DeviceError."""
        if self._control:
            yield self
            return
        folder = tempfile.mkdtemp(prefix="edge-ssh-")
        path = os.path.join(folder, "ctl")
        args = [self.ssh, *self._client_args(), "-o", "ControlMaster=yes", "-o", f"ControlPath={path}",
                "-o", "ControlPersist=60", "-N", "-f", "--", self.target.host]
        # -f puts the master in the background: its stderr goes to a file, not a pipe we would wait on.
        with tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                      timeout=self.connect_timeout + T.SSH_MASTER_EXTRA, check=False)
            except subprocess.TimeoutExpired as exc:
                shutil.rmtree(folder, ignore_errors=True)
                raise DeviceError(f"{self.target.label}: connecting timed out") from exc
            except FileNotFoundError as exc:
                shutil.rmtree(folder, ignore_errors=True)
                raise DeviceError(f"the OpenSSH client ({self.ssh}) is not installed: apt-get install openssh-client") from exc
            err.seek(0)
            text = err.read().decode("utf-8", "replace")
        if proc.returncode != 0:
            shutil.rmtree(folder, ignore_errors=True)
            raise self._ssh_error(text, "connecting")
        self._control = path
        try:
            yield self
        finally:
            try:
                subprocess.run([self.ssh, *self._client_args(), "-O", "exit", "--", self.target.host],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=T.SSH_TOOL_TIMEOUT, check=False)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self._control = None
            shutil.rmtree(folder, ignore_errors=True)

    def ssh_args(self, command: str) -> list[str]:
        """The argument list for running ``command`` (a remote shell string) on the device."""
        return [self.ssh, *self._client_args(), "--", self.target.host, command]

    # ------------------------------------------------------------------ running
    def run(self, command: str, *, timeout: float = T.SSH_COMMAND_TIMEOUT, stdin=None, input: bytes | None = None,
            check: bool = True, what: str | None = None) -> subprocess.CompletedProcess:
        """Run a remote shell command; stdout/stderr captured as text.

        Raises DeviceError when ssh itself fails (unreachable, authentication, host key: exit 255), when the
        call outlives ``timeout`` seconds (the local ssh is killed), or — with ``check`` — when the remote
        command exits non-zero (its stderr is in the message). ``what`` names the step in messages.
        """
        what = what or "remote command"
        args = self.ssh_args(command)
        log.debug(f"{self.target.label}: {command}")
        try:
            proc = subprocess.run(args, stdin=stdin, input=input, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise DeviceError(f"{self.target.label}: {what} timed out after {timeout:g} s") from exc
        except FileNotFoundError as exc:
            raise DeviceError(f"the OpenSSH client ({self.ssh}) is not installed: apt-get install openssh-client") from exc
        out = proc.stdout.decode("utf-8", "replace")
        err = proc.stderr.decode("utf-8", "replace")
        result = subprocess.CompletedProcess(args, proc.returncode, out, err)
        if proc.returncode == SSH_ERROR:
            raise self._ssh_error(err, what)
        if check and proc.returncode != 0:
            detail = _last_lines(err or out)
            raise DeviceError(f"{self.target.label}: {what} failed (exit {proc.returncode}){': ' + detail if detail else ''}")
        return result

    def run_python(self, script: str, *args, python: str = "python3", timeout: float = T.SSH_COMMAND_TIMEOUT,
                   what: str | None = None,
                   **kwargs) -> subprocess.CompletedProcess:
        """``python -c SCRIPT ARGS...`` on the device (the script and every argument quoted)."""
        return self.run(remote_command(python, "-c", script, *args), timeout=timeout, what=what, **kwargs)

    def upload(self, local: str | Path, remote_path: str, *, python: str = "python3", timeout: float | None = None,
               sha256: str | None = None) -> None:
        """Stream ``local`` to ``remote_path`` (an absolute path; its folder must exist), fsync it there and
        check its size (and sha256 when given). Writes exactly that path: the caller picks a temporary name
        and renames when everything is in place."""
        local = Path(local)
        size = local.stat().st_size
        if timeout is None:
            timeout = T.SSH_UPLOAD_BASE_TIMEOUT + size / 1e6  # at least 1 MB/s
        with open(local, "rb") as f:
            self.run_python(_RECEIVE, remote_path, str(size), sha256 or "", python=python, stdin=f,
                            timeout=timeout, what=f"copying {local.name} ({size} bytes)")

    # ------------------------------------------------------------------ host keys
    def resolved(self) -> dict[str, str]:
        """What ssh would use for this target after ~/.ssh/config (``ssh -G``): hostname, port, user, ..."""
        args = [self.ssh, "-G", *self._client_args(), "--", self.target.host]
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=T.SSH_TOOL_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        conf: dict[str, str] = {}
        for line in proc.stdout.splitlines():
            key, _, value = line.partition(" ")
            conf.setdefault(key.lower(), value)
        return conf

    def host_key_fingerprints(self, timeout: float = T.SSH_TOOL_TIMEOUT) -> list[str]:
        """The fingerprints the server presents ("ED25519 SHA256:..."), from ssh-keyscan | ssh-keygen -lf -."""
        conf = self.resolved()
        host = conf.get("hostname", self.target.host)
        port = conf.get("port", str(self.target.port or 22))
        try:
            scan = subprocess.run(["ssh-keyscan", "-T", str(int(timeout)), "-p", port, "--", host],
                                  capture_output=True, timeout=timeout + 5, check=False)
            if not scan.stdout.strip():
                return []
            keys = subprocess.run(["ssh-keygen", "-lf", "-"], input=scan.stdout, capture_output=True,
                                  timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return []
        prints = []
        for line in keys.stdout.decode("utf-8", "replace").splitlines():
            parts = line.split()  # "256 SHA256:xxx [127.0.0.1]:2222 (ED25519)"
            if len(parts) >= 2:
                kind = parts[-1].strip("()") if parts[-1].startswith("(") else "?"
                prints.append(f"{kind} {parts[1]}")
        return prints

    def _ssh_error(self, stderr: str, what: str) -> DeviceError:
        label = self.target.label
        if any(p in stderr for p in _HOST_KEY_PATTERNS):
            changed = "HAS CHANGED" in stderr
            prints = self.host_key_fingerprints()
            shown = "; ".join(prints) if prints else "(could not be read with ssh-keyscan)"
            if changed:
                msg = (f"{label}: host key verification failed: the host key has CHANGED since it was recorded in "
                       f"known_hosts (a reinstalled device, or someone in the middle). The server presents: {shown}. "
                       "If the device really was reinstalled, check that fingerprint on the device "
                       "(ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), then remove the old key with "
                       "ssh-keygen -R HOST")
            else:
                msg = (f"{label}: host key verification failed: the host's key is not in known_hosts. The server "
                       f"presents: {shown}. Check it on the device (ssh-keygen -lf "
                       "/etc/ssh/ssh_host_ed25519_key.pub), then connect once with ssh, or pass "
                       "--accept-new-host-key to record a key never seen before")
            err = DeviceError(msg)
            err.host_key_fingerprints = prints
            return err
        detail = _last_lines(stderr) or "no message from ssh"
        if "Permission denied" in stderr:
            detail += " (check the user, --identity KEY or your ssh agent)"
        return DeviceError(f"{label}: ssh failed during {what}: {detail}")


def _last_lines(text: str, n: int = 3) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip() and not line.startswith("Warning: Permanently added")]
    return " | ".join(lines[-n:])


# Runs on the device: read stdin into argv[1] (created new, mode 0644), fsync, check size and sha256.
_RECEIVE = r"""
import hashlib, os, sys
path, size, want = sys.argv[1], int(sys.argv[2]), sys.argv[3]
h, n = hashlib.sha256(), 0
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
with os.fdopen(fd, "wb") as f:
    while True:
        chunk = sys.stdin.buffer.read(1 << 20)
        if not chunk:
            break
        f.write(chunk); h.update(chunk); n += len(chunk)
    f.flush(); os.fsync(f.fileno())
if n != size or (want and h.hexdigest() != want):
    os.unlink(path)
    sys.exit("received %d bytes (sha256 %s), expected %d (%s)" % (n, h.hexdigest(), size, want or "any"))
"""
