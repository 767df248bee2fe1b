"""A loopback "Raspberry Pi" for the SSH tests: a real OpenSSH sshd on 127.0.0.1 with throw-away keys.

    lab = SSHLab(tmp_path)                  # user key, ssh config, known_hosts in tmp_path
    pi = lab.start("pi1")                   # sshd on a free port with its own host key and device $HOME
    lab.env                                 # EDGE_SSH_CONFIG (-F for ssh), XDG_CACHE_HOME: for subprocesses
    pis = [lab.start(f"pi{i}", address=f"127.0.0.{i}") for i in range(2, 7)]   # a fleet: one sshd per address
    lab.stop_all()                          # kills every sshd it started (the fixtures do this)

The client side: ``ssh -F lab.config`` (edge_sdk.device.ssh reads ``EDGE_SSH_CONFIG``; ssh finds ``~`` through
the passwd database, so a temporary ``$HOME`` alone would not move ``~/.ssh``). The config has one ``Host``
block per device (HostName 127.0.0.1, Port, User, IdentityFile, UserKnownHostsFile = lab.known_hosts holding
the generated host key, GlobalKnownHostsFile /dev/null), so nothing reads or writes the real ~/.ssh.

The device side: sshd runs as root (it must, to switch to the login user; tests skip otherwise) and logs the
user in as root — but ``SetEnv HOME=...`` gives every session a device home of its own under tmp_path, and
edge_sdk.tools.deploy resolves ``~`` on the device through $HOME, so the real /root is never written.

Fast runtime installs (the trick): the device is this machine, so ``SetEnv`` also puts on the device's
``PATH`` a ``python3`` that is this test run's base interpreter (same version as .venv, so its compiled
wheels fit), and on ``PYTHONPATH`` a folder of symlinks to the dependencies already installed in .venv
(numpy, flatbuffers, pillow, pyserial — not edge_sdk). pip on the "device" then finds every dependency
satisfied and installs only the edge-sdk wheel: no network, a few seconds (mostly creating the venv).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
INSTALL = "apt-get install openssh-server openssh-client"
DEPENDENCIES = ("numpy", "flatbuffers", "pillow", "pyserial")
LOCALE_VARS = ("LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES")


def unavailable_reason() -> str | None:
    """Why the loopback sshd cannot run here (None when it can)."""
    missing = [t for t in ("ssh", "ssh-keygen", "ssh-keyscan") if shutil.which(t) is None]
    if not os.path.exists(SSHD):
        missing.insert(0, SSHD)
    if missing:
        return f"{', '.join(missing)} not found: {INSTALL}"
    if os.geteuid() != 0:
        return f"sshd must run as root to log a user in (running as uid {os.geteuid()}); run the tests as root"
    return None


def require_sshd() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"loopback sshd unavailable: {reason}")


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "edge-sdk-test", "-f", str(path)],
                   check=True, capture_output=True, timeout=30)


def _dependency_path(folder: Path) -> Path:
    """A folder of symlinks to the installed dependency distributions (their top-level entries)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in DEPENDENCIES:
        dist = importlib.metadata.distribution(name)
        site = Path(dist.locate_file(""))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            src, dst = site / top, folder / top
            if src.exists() and not dst.exists():
                dst.symlink_to(src)
    return folder


def _descendants(pid: int) -> list[int]:
    """Child processes of ``pid``, recursively (Linux /proc), deepest first."""
    try:
        kids = [int(k) for k in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return [d for k in kids for d in _descendants(k)] + kids


class Device:
    """One sshd: ``alias`` (a Host in the lab's ssh config), ``port``, ``home`` (its $HOME), ``address`` (the
    loopback address it listens on: 127.0.0.1, or 127.0.0.2... for a fleet of distinct hosts)."""

    def __init__(self, lab: SSHLab, alias: str, port: int, home: Path, host_key: Path, address: str = "127.0.0.1"):
        self.lab, self.alias, self.port, self.home, self.host_key = lab, alias, port, home, host_key
        self.address = address
        self.proc: subprocess.Popen | None = None
        self.path: str | None = None  # the device's PATH when not the lab's (e.g. a board without a compiler)

    @property
    def spec(self) -> str:
        """``root@ADDRESS:PORT`` (for --host / hosts files: needs the lab's IdentityFile via the config)."""
        return f"root@{self.address}:{self.port}"

    def fingerprint(self) -> str:
        out = subprocess.run(["ssh-keygen", "-lf", f"{self.host_key}.pub"], capture_output=True, text=True,
                             timeout=10, check=True).stdout
        return out.split()[1]

    def stop(self) -> None:
        """Stop this sshd and its session processes (a client killed mid-copy leaves its ssh ControlMaster
        up until the session ends: ending the sessions ends it too)."""
        if self.proc is not None and self.proc.poll() is None:
            for pid in _descendants(self.proc.pid):
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None


class SSHLab:
    def __init__(self, root: Path):
        require_sshd()
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.user_key = self.root / "id_ed25519"
        _keygen(self.user_key)
        self.authorized_keys = self.root / "authorized_keys"
        shutil.copy(f"{self.user_key}.pub", self.authorized_keys)
        self.known_hosts = self.root / "known_hosts"
        self.known_hosts.touch()
        self.config = self.root / "ssh_config"
        self.devices: list[Device] = []
        bindir = self.root / "device-bin"
        bindir.mkdir()
        base = getattr(sys, "_base_executable", sys.executable)
        (bindir / "python3").symlink_to(os.path.realpath(base))
        # the device compiles as the suite does: through the session's compile cache when it is on (conftest)
        from tests.conftest import COMPILER_CACHE_BIN

        self.device_path = ":".join([str(bindir), *([str(COMPILER_CACHE_BIN)] if COMPILER_CACHE_BIN else []),
                                     "/usr/local/bin:/usr/bin:/bin"])
        self.device_pythonpath = str(_dependency_path(self.root / "device-deps"))
        # the suite's locale (ccache keys a compile by it, as it changes the compiler's messages): a device build
        # of the runtime's sources is then the same compile as the suite's own
        self.device_locale = "".join(f" {k}={os.environ[k]}" for k in LOCALE_VARS if os.environ.get(k))
        self.env = {**os.environ, "EDGE_SSH_CONFIG": str(self.config),
                    "XDG_CACHE_HOME": os.environ.get("EDGE_TEST_CACHE", str(self.root / "cache"))}
        self._write_config()

    def _write_config(self) -> None:
        blocks = []
        for d in self.devices:
            blocks.append(f"Host {d.alias}\n  HostName {d.address}\n  Port {d.port}\n  User root\n")
        blocks.append(
            "Host *\n"
            f"  IdentityFile {self.user_key}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.known_hosts}\n  GlobalKnownHostsFile /dev/null\n"
            "  LogLevel ERROR\n"
        )
        self.config.write_text("\n".join(blocks))

    def add(self, alias: str, *, trust: bool = True, port: int | None = None, address: str = "127.0.0.1") -> Device:
        """A device (not started): its own host key (in known_hosts when ``trust``), home and port, listening on
        the loopback ``address`` (any of 127.0.0.0/8: Linux routes them all to lo)."""
        folder = self.root / alias
        folder.mkdir()
        host_key = folder / "ssh_host_ed25519_key"
        _keygen(host_key)
        home = folder / "home"
        home.mkdir()
        d = Device(self, alias, port or free_port(address), home, host_key, address)
        if trust:
            self.trust(d)
        self.devices.append(d)
        self._write_config()
        return d

    def trust(self, d: Device, key: Path | None = None) -> None:
        pub = Path(f"{key or d.host_key}.pub").read_text().split()
        with open(self.known_hosts, "a") as f:
            f.write(f"[{d.address}]:{d.port} {pub[0]} {pub[1]}\n")

    def start(self, alias: str, path: str | None = None, **kwargs) -> Device:
        """``add`` and ``launch``; ``path``: the device's PATH instead of the lab's."""
        d = self.add(alias, **kwargs)
        d.path = path
        self.launch(d)
        return d

    def bare_path(self, folder: Path, tools=("python3", "sh", "rm", "touch", "mkdir", "cat", "env", "tar", "ls",
                                              "gzip", "uname")) -> str:
        """A PATH holding only these tools (symlinks in ``folder``; python3 the lab's): a device without a C
        compiler or make."""
        folder.mkdir(parents=True, exist_ok=True)
        for tool in tools:
            src = (self.root / "device-bin" / "python3").resolve() if tool == "python3" else shutil.which(tool)
            if src and not (folder / tool).exists():
                (folder / tool).symlink_to(src)
        return str(folder)

    def launch(self, d: Device) -> None:
        os.makedirs("/run/sshd", exist_ok=True)
        conf = d.home.parent / "sshd_config"
        conf.write_text(
            f"Port {d.port}\nListenAddress {d.address}\nHostKey {d.host_key}\n"
            f"AuthorizedKeysFile {self.authorized_keys}\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
            f"PidFile {d.home.parent / 'sshd.pid'}\nStrictModes no\nUsePAM no\nLogLevel ERROR\n"
            "Subsystem sftp internal-sftp\nMaxStartups 50:30:100\nMaxSessions 50\n"
            f'SetEnv HOME={d.home} PATH={d.path or self.device_path} PYTHONPATH={self.device_pythonpath}'
            f'{self.device_locale}\n'
        )
        with open(d.home.parent / "sshd.log", "wb") as log:  # the child keeps its own copy of the handle
            d.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(conf)], stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if d.proc.poll() is not None:
                log = (d.home.parent / "sshd.log").read_text(errors="replace")
                pytest.skip(f"loopback sshd did not start (exit {d.proc.returncode}): {log.strip()[-300:]}")
            try:
                with socket.create_connection((d.address, d.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        d.stop()
        pytest.skip("loopback sshd did not listen within 10 s")

    def ssh(self, d: Device, *command: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run a command on the device with plain ssh (for checks independent of edge_sdk)."""
        return subprocess.run(["ssh", "-F", str(self.config), "-o", "BatchMode=yes", d.alias, *command],
                              capture_output=True, text=True, timeout=timeout, check=False)

    def stop_all(self) -> None:
        for d in self.devices:
            d.stop()


@pytest.fixture(scope="session")
def ssh_cache(tmp_path_factory):
    """One wheel cache for the session: the edge-sdk wheel is built once, not per test."""
    return tmp_path_factory.mktemp("edge-cache")


@pytest.fixture
def lab(tmp_path, ssh_cache, monkeypatch):
    """An SSHLab in tmp_path; in-process calls see its ssh config and cache; every sshd is killed after."""
    monkeypatch.setenv("EDGE_TEST_CACHE", str(ssh_cache))
    the_lab = SSHLab(tmp_path / "lab")
    try:
        for key in ("EDGE_SSH_CONFIG", "XDG_CACHE_HOME"):
            monkeypatch.setenv(key, the_lab.env[key])
        yield the_lab
    finally:
        the_lab.stop_all()
