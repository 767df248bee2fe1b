"""A board this process started never stays a <defunct> zombie once it ends (the suite's pytest workers started
hundreds and kept every ended one as a zombie): start_qemu's daemon thread waits for it, whether it exits by
itself or another process stops it. No QEMU needed: a fake qemu-system-arm that listens on its port."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from edge_sdk.device import qemu_board as qb

# the fake board listens on its serial port, then lives argv's "--live" seconds
FAKE_QEMU = textwrap.dedent("""\
    import socket, sys, time
    port = int(next(a for a in sys.argv if a.startswith("tcp:")).split(":")[2].split(",")[0])
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(4)
    time.sleep(float(sys.argv[sys.argv.index("--live") + 1]))
    """)


def _state(pid: int) -> str | None:
    """The process's state letter (Z: a zombie), None once it is gone (reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return None


def _start(tmp_path: Path, live: float) -> dict:
    fake = tmp_path / "fake-qemu-system-arm"
    fake.write_text("#!" + sys.executable + "\n" + FAKE_QEMU)
    fake.chmod(0o755)
    profile = SimpleNamespace(name="fake-board", flash={"binary": str(fake), "extra_args": ["--live", str(live)]})
    elf = tmp_path / f"fw-{live}.elf"
    elf.write_bytes(b"")
    return qb.start_qemu(profile, elf, timeout=20)


def _gone_within(pid: int, seconds: float) -> str | None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and _state(pid) is not None:
        time.sleep(0.05)
    return _state(pid)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc (Linux)")
def test_an_ended_board_is_reaped_not_left_a_zombie(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    by_itself = _start(tmp_path, live=0.3)  # a board whose QEMU exits on its own
    stopped = _start(tmp_path, live=60)  # a board another process stops (`edge board stop`, another worker)
    try:
        assert _state(stopped["pid"]) not in (None, "Z")
        subprocess.run(["kill", "-KILL", str(stopped["pid"])], check=True, timeout=30)
        # neither is waited for by anything of this test (no list_boards, no stop_board: those reap too)
        assert _gone_within(by_itself["pid"], 10) is None, "a board that exited stayed a zombie of its starter"
        assert _gone_within(stopped["pid"], 10) is None, "a board stopped elsewhere stayed a zombie of its starter"
    finally:
        for board in (by_itself, stopped):
            if _state(board["pid"]) not in (None, "Z"):
                os.killpg(board["pid"], signal.SIGKILL)
