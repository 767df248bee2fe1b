"""Boards belong to whoever started them (issue 27 point 1): a record names its owner (user, host, checkout,
starting process); `stop_board(all=True)` and `edge board stop --all` stop only the caller's boards, --everyone
all of them; `edge board list` shows owners.

No QEMU needed: a "board" here is a sleeping Python process whose command line holds "qemu" (what _alive looks
for), recorded in a private state file; start_qemu is run on a fake qemu-system-arm that listens on the port."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from contextlib import redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import pytest

from edge_sdk.device import qemu_board as qb
from edge_sdk.errors import DeviceError

SLEEPER = "import sys, time; time.sleep(float(sys.argv[1]))"


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    procs: list[subprocess.Popen] = []

    def spawn(tag: str = "qemu-fake") -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-c", SLEEPER, "120", tag], start_new_session=True)
        procs.append(p)
        return p

    yield spawn
    for p in procs:  # only the processes this test started
        if p.poll() is None:
            p.kill()
        p.wait()


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _board(proc: subprocess.Popen, port: int, owner: dict | None) -> dict:
    b = {"url": f"socket://127.0.0.1:{port}", "tcp_port": port, "pid": proc.pid, "pgid": proc.pid,
         "pid_start": qb._process_start(proc.pid), "profile": "qemu-mps2-an386", "model": f"m{port}.tflite"}
    if owner is not None:
        b["owner"] = owner
    return b


def _boards(spawn) -> dict[str, dict]:
    """Five running boards, one per kind of owner, recorded in the state file."""
    me = qb.current_owner()
    other_job = spawn("not-a-board")  # a still-running process of this checkout: another job's benchmark
    owners = {
        "this process": me,
        "exited starter, this checkout": {**me, "pid": _dead_pid(), "pid_start": None},
        "running job, this checkout": {**me, "pid": other_job.pid, "pid_start": qb._process_start(other_job.pid)},
        "another checkout": {**me, "checkout": "/somewhere/else/edge-sdk", "pid": _dead_pid()},
        "unowned": None,
    }
    boards = {name: _board(spawn(), 40001 + k, owner) for k, (name, owner) in enumerate(owners.items())}
    qb._write_state(list(boards.values()))
    assert len(qb.list_boards()) == 5  # at once: a process whose exec is under way still reads as running
    return boards


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process start times from /proc (Linux)")
def test_a_recycled_board_pid_is_not_that_board(state):
    """A record whose pid now belongs to a process started later (a dead board's pid reused by another job's
    process, here one whose command line holds "qemu" too) is dropped from the list, and `stop --all` leaves
    that process running."""
    proc = spawn = state
    proc = spawn()
    real = _board(proc, 40011, qb.current_owner())
    recycled = {**_board(proc, 40012, qb.current_owner()), "pid_start": real["pid_start"] - 1}
    qb._write_state([recycled])
    assert qb.list_boards() == []
    assert qb.stop_board(all=True) == [] and proc.poll() is None
    qb._write_state([real])
    assert [b["url"] for b in qb.list_boards()] == [real["url"]]


def _urls(boards) -> set[str]:
    return {b["url"] for b in boards}


def test_start_records_the_owner(state, tmp_path):
    """start_qemu writes owner = this user, host, checkout and process (a fake QEMU that listens on its port)."""
    fake = tmp_path / "fake-qemu-system-arm"
    fake.write_text("#!" + sys.executable + "\n" + textwrap.dedent("""\
        import socket, sys, time
        port = int(next(a for a in sys.argv if a.startswith("tcp:")).split(":")[2].split(",")[0])
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port)); s.listen(4)
        time.sleep(120)
        """))
    fake.chmod(0o755)
    profile = SimpleNamespace(name="fake-board", flash={"binary": str(fake)})
    elf = tmp_path / "fw.elf"
    elf.write_bytes(b"")
    board = qb.start_qemu(profile, elf, timeout=20)
    try:
        owner = board["owner"]
        assert owner == qb.current_owner()
        assert owner["pid"] == os.getpid() and owner["checkout"] == str(Path(qb.__file__).resolve().parents[2])
        assert qb.is_mine(board, "process") and qb.is_mine(board)
        assert [b["owner"] for b in qb.list_boards()] == [owner]
    finally:
        assert [b["url"] for b in qb.stop_board(all=True, scope="process")] == [board["url"]]
    assert qb.list_boards() == []


def test_stop_all_stops_only_mine(state):
    boards = _boards(state)
    # scope "process" (benchmarks, tests): only what this process started
    stopped = qb.stop_board(all=True, scope="process")
    assert _urls(stopped) == {boards["this process"]["url"]}
    # the default ("checkout"): this checkout's boards whose starter has ended
    stopped = qb.stop_board(all=True)
    assert _urls(stopped) == {boards["exited starter, this checkout"]["url"]}
    assert _urls(qb.list_boards()) == _urls(boards[k] for k in ("running job, this checkout", "another checkout",
                                                                "unowned"))
    assert qb.stop_board(all=True) == []
    assert len(qb.stop_board(all=True, scope="everyone")) == 3
    assert qb.list_boards() == []


def test_stopping_someone_elses_board_by_url_names_its_owner(state):
    boards = _boards(state)
    theirs = boards["another checkout"]
    with pytest.raises(DeviceError, match=r"is not yours: .*/somewhere/else/edge-sdk.*--everyone"):
        qb.stop_board(theirs["url"])
    assert qb._alive(theirs["pid"])
    assert _urls(qb.stop_board(theirs["url"], scope="everyone")) == {theirs["url"]}
    # mine by URL: stopped
    assert _urls(qb.stop_board(str(boards["this process"]["tcp_port"]))) == {boards["this process"]["url"]}
    qb.stop_board(all=True, scope="everyone")


def _cli(*argv) -> tuple[int, str]:
    from edge_sdk.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def test_cli_board_list_shows_owners_and_stop_all_is_mine_only(state, capsys):
    boards = _boards(state)
    code, out = _cli("board", "list")
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert set(lines) == _urls(boards.values())
    me = qb.current_owner()
    assert f"owner: {me['user']}@{me['host']} in {me['checkout']}, started by pid {os.getpid()} (still running)" \
           " - yours" in lines[boards["this process"]["url"]]
    assert "(exited) - yours" in lines[boards["exited starter, this checkout"]["url"]]
    assert "(still running) - not yours" in lines[boards["running job, this checkout"]["url"]]
    assert "/somewhere/else/edge-sdk" in lines[boards["another checkout"]["url"]]
    assert "owner unknown" in lines[boards["unowned"]["url"]]
    code, out = _cli("board", "list", "--json")
    listed = {b["url"]: b for b in json.loads(out)}
    assert {u for u, b in listed.items() if b["mine"]} == _urls(
        boards[k] for k in ("this process", "exited starter, this checkout"))
    assert listed[boards["this process"]["url"]]["owner"] == me

    code, out = _cli("board", "stop", "--all")
    assert code == 0
    assert {line.split()[1] for line in out.splitlines()} == _urls(
        boards[k] for k in ("this process", "exited starter, this checkout"))
    code, out = _cli("board", "stop", "--all")
    assert code == 0 and "no running boards of yours" in out and "--everyone" in out
    code, _ = _cli("board", "stop", boards["unowned"]["url"])
    capsys.readouterr()
    assert code != 0 and qb._alive(boards["unowned"]["pid"])
    code, out = _cli("board", "stop", "--all", "--everyone", "--json")
    assert code == 0 and set(json.loads(out)) == _urls(
        boards[k] for k in ("running job, this checkout", "another checkout", "unowned"))
    assert qb.list_boards() == []


def test_one_board_of_mine_is_stopped_without_a_url_even_beside_others(state):
    boards = _boards(state)
    qb.stop_board(all=True, scope="process")
    # one board of mine left (the exited starter's) beside three of others: stop with no URL takes it
    assert _urls(qb.stop_board()) == {boards["exited starter, this checkout"]["url"]}
    with pytest.raises(DeviceError, match=r"0 of your boards are running \(3 more belong to others\)"):
        qb.stop_board()
    qb.stop_board(all=True, scope="everyone")

