"""The QEMU board: ``qemu-system-arm`` processes started for `edge flash`, and the state file that lists them.

    board = start_qemu(profile, elf)          # detached, its UART on a TCP port; recorded as it is started
    list_boards(); stop_board(board["url"]); stop_board(all=True)

The state file is ``$EDGE_STATE_DIR/boards.json`` (default: edge_sdk.resources.cache_dir() / "boards.json").

A board belongs to whoever started it. Each record carries ``owner``: the user, the host, the checkout (the
folder edge_sdk is imported from) and the starting process (pid and its start time, so a recycled pid is not
mistaken for it). The state file is one per user's cache, shared by every checkout and job of that user, so
"stop every board" means every board of mine (``is_mine``):

    scope "process"   boards this very process started (a benchmark, a test, a script using the library)
    scope "checkout"  the default: boards of this user and checkout whose starting process has ended (`edge flash`
                      leaves its board running on purpose) or is this process; a board whose starter still runs
                      (another job's benchmark or test) belongs to that job
    scope "everyone"  every board in the state file (`edge board stop --all --everyone`)

Records written before boards had owners have none: only "everyone" reaches them.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from edge_sdk import resources
from edge_sdk import timeouts as T
from edge_sdk.errors import DeviceError, UsageError
from edge_sdk.resources import require_tool
from edge_sdk.targets.registry import QEMU_PACKAGE


def state_path() -> Path:
    """The state file of running boards: ``$EDGE_STATE_DIR/boards.json`` when that is set (tests give each run
    its own), else ``edge_sdk.resources.cache_dir()/boards.json``."""
    base = os.environ.get("EDGE_STATE_DIR")
    return (Path(base) if base else resources.cache_dir()) / "boards.json"


def _read_state() -> list[dict]:
    p = state_path()
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError):
        return []
    return [b for b in data.get("boards", []) if isinstance(b, dict)]


def _write_state(boards: list[dict]) -> None:
    p = state_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps({"boards": boards}, indent=2))
    os.replace(tmp, p)


def _alive(pid: int, start: int | None = None) -> bool:
    """The process exists, is not a zombie and is a QEMU (a recycled pid is not ours); with ``start`` (the
    board's recorded /proc start time) it is also the very process recorded: under a small pid_max a dead
    board's pid comes back as another job's process, which a stop would otherwise kill."""
    try:
        # /proc/PID/stat after the command name: state is field 3, start time field 22
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        # Popen returns (vfork) before the exec has set up the new command line, which reads empty until then:
        # a board started a moment ago is not dead
        for _ in range(40):
            if cmd or fields[0] == "Z":
                break
            time.sleep(0.005)
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        if sys.platform.startswith("linux"):
            return False
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False
    if fields[0] == "Z":
        _reap(pid)
        return False
    if start is not None and int(fields[19]) != start:
        return False
    return b"qemu" in cmd


def _board_alive(board: dict) -> bool:
    return _alive(int(board.get("pid") or 0), board.get("pid_start"))


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except (ChildProcessError, OSError):
        pass


SCOPES = ("process", "checkout", "everyone")


def _checkout() -> str:
    """The checkout (or installation) this process runs edge_sdk from: the folder holding the package."""
    return str(Path(__file__).resolve().parent.parent.parent)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers): the uid still tells users apart
        return f"uid {os.getuid()}"


def _process_start(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22); None where unknown."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def current_owner() -> dict:
    """The owner record of a board this process starts now."""
    pid = os.getpid()
    return {"user": _user(), "host": socket.gethostname(), "checkout": _checkout(), "pid": pid,
            "pid_start": _process_start(pid)}


def _starter_running(owner: dict) -> bool:
    """The process that started the board still runs (the same process: its start time matches)."""
    pid = int(owner.get("pid") or 0)
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, another user's
    start = _process_start(pid)
    return start is None or owner.get("pid_start") in (None, start)


def is_mine(board: dict, scope: str = "checkout") -> bool:
    """Whether ``board`` belongs to this process under ``scope`` (see the module docstring)."""
    if scope not in SCOPES:
        raise UsageError(f"board scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    if scope == "everyone":
        return True
    owner = board.get("owner")
    if not isinstance(owner, dict):
        return False
    me = current_owner()
    if (owner.get("user"), owner.get("host"), owner.get("checkout")) != (me["user"], me["host"], me["checkout"]):
        return False
    this_process = owner.get("pid") == me["pid"] and owner.get("pid_start") == me["pid_start"]
    if scope == "process":
        return this_process
    return this_process or not _starter_running(owner)


def describe_owner(board: dict) -> str:
    """One phrase for `edge board list`: who started the board, and whether it is the caller's."""
    owner = board.get("owner")
    if not isinstance(owner, dict):
        return "owner unknown (recorded before boards had owners; edge board stop --everyone reaches it)"
    running = _starter_running(owner)
    who = (f"{owner.get('user')}@{owner.get('host')} in {owner.get('checkout')}, started by pid {owner.get('pid')}"
           f" ({'still running' if running else 'exited'})")
    return who + (" - yours" if is_mine(board) else " - not yours")


def list_boards() -> list[dict]:
    """Running boards from the state file, every owner's (dead ones are dropped from it)."""
    boards = _read_state()
    live = [b for b in boards if _board_alive(b)]
    if len(live) != len(boards):
        _write_state(live)
    return live


def find_board(model_sha256: str, profile: str | None = None) -> dict | None:
    """A running board of mine (``is_mine``: this checkout's, not another job's) that runs this model (and this
    profile, when given), for `edge profile` / `flash(reuse=True)` to talk to. Another owner's board is never
    reused: its serial port takes one client, and its owner may be using it (a benchmark, a test, another
    checkout's profile) or stop it at any moment."""
    for b in list_boards():
        if b.get("model_sha256") == model_sha256 and (profile is None or b.get("profile") == profile) \
                and is_mine(b):
            return b
    return None


def _kill_group(pid: int, pgid: int | None) -> None:
    target = pgid or pid
    for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 3.0)):  # a busy guest can keep QEMU from acting on SIGTERM
        try:
            os.killpg(target, sig)
        except ProcessLookupError:
            pass
        except PermissionError as exc:
            raise DeviceError(f"cannot stop QEMU process group {target}: {exc}") from exc
        end = time.monotonic() + wait
        while time.monotonic() < end:
            _reap(pid)
            if not _alive(pid):
                return
            time.sleep(0.02)


def stop_board(url: str | None = None, all: bool = False, scope: str = "checkout") -> list[dict]:
    """Stop the board at ``url`` (a pyserial URL or a port number), or with ``all`` every board of mine under
    ``scope`` ("process", "checkout" — the default —, "everyone"; see the module docstring); returns the boards
    stopped. DeviceError when no running board has that URL, or when it is someone else's and scope is not
    "everyone" (the message names its owner)."""
    if scope not in SCOPES:
        raise UsageError(f"board scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    boards = list_boards()
    mine = [b for b in boards if is_mine(b, scope)]
    if all:
        chosen = mine
    else:
        if url is None:
            if len(mine) == 1:
                chosen = mine
            else:
                others = len(boards) - len(mine)
                raise DeviceError(f"{len(mine)} of your boards are running"
                                  + (f" ({others} more belong to others)" if others else "")
                                  + ": name one URL (edge board list) or --all")
        else:
            key = str(url)
            chosen = [b for b in boards if b["url"] == key or str(b.get("tcp_port")) == key]
            if not chosen:
                known = ", ".join(b["url"] for b in boards) or "none"
                raise DeviceError(f"no running board at {url} (running: {known})")
            theirs = [b for b in chosen if not is_mine(b, scope)]
            if theirs:
                raise DeviceError(f"the board at {url} is not yours: {describe_owner(theirs[0])}; "
                                  "edge board stop --everyone stops it anyway")
    for b in chosen:
        _kill_group(int(b["pid"]), b.get("pgid"))
    stopped = {b["url"] for b in chosen}
    _write_state([b for b in _read_state() if b.get("url") not in stopped])
    return chosen


def qemu_command(profile, elf, tcp_port: int) -> list[str]:
    f = profile.flash
    cmd = [f.get("binary", "qemu-system-arm"), "-M", f.get("machine", "mps2-an386")]
    if "cpu" in f:
        cmd += ["-cpu", f["cpu"]]
    cmd += list(f.get("extra_args", ["-nographic", "-monitor", "none"]))
    # -icount shift=0: one guest instruction is 1 ns of virtual time (deterministic SysTick counts). Its sleep=on,
    # QEMU's default, is what lets an idle board cost no host CPU: the firmware waits on the UART in WFI and
    # virtual time then follows real time; sleep=off would warp to each SysTick wrap at once and keep a core busy.
    cmd += ["-kernel", str(elf), "-icount", f"shift={f.get('icount_shift', 0)}",
            "-serial", f"tcp:127.0.0.1:{tcp_port},server=on,wait=on"]
    return cmd


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def qemu_tcp_port(url: str | None) -> int | None:
    """The TCP port of a QEMU board's --port (socket://127.0.0.1:PORT or PORT); None for none; UsageError else."""
    if not url:
        return None
    m = re.fullmatch(r"(?:socket://)?(?:127\.0\.0\.1|localhost):(\d+)|(\d+)", url)
    if not m:
        raise UsageError(f"--port for a QEMU board is socket://127.0.0.1:PORT or a port number, not {url}")
    return int(m.group(1) or m.group(2))


def start_qemu(profile, elf: Path, port_url: str | None = None, info: dict | None = None,
               model: str = "", timeout: float = T.QEMU_START_TIMEOUT) -> dict:
    """Start QEMU detached on the finished ELF; wait until its serial port listens; record it."""
    binary = profile.flash.get("binary", "qemu-system-arm")
    require_tool(binary, QEMU_PACKAGE)
    tcp_port = qemu_tcp_port(port_url)
    for attempt in range(3):
        port = tcp_port or _free_port()
        cmd = qemu_command(profile, elf, port)
        url = f"socket://127.0.0.1:{port}"
        board = {"url": url, "tcp_port": port, "pid": 0, "pgid": 0, "elf": str(elf), "profile": profile.name,
                 "model": model, "model_sha256": (info or {}).get("sha256", ""), "started": time.time(),
                 "command": cmd, "memory": (info or {}).get("memory"),
                 "memory_request": (info or {}).get("memory_request"), "patch": (info or {}).get("patch"),
                 "owner": current_owner()}
        # Ctrl-C / SIGTERM cannot land between the fork and the state file: both are held back until the board
        # is recorded, and any interruption after that stops it (it is in its own session: the terminal's
        # SIGINT never reaches it, so nobody else would).
        proc, recorded = None, False
        try:
            with _signals_held():
                with open(Path(elf).with_suffix(".qemu.log"), "wb") as logf:
                    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                            start_new_session=True)
                board["pid"] = board["pgid"] = proc.pid
                board["pid_start"] = _process_start(proc.pid)
                _write_state([b for b in list_boards() if b["url"] != url] + [board])
                recorded = True
            ok = _wait_listening(proc, port, timeout)
        except BaseException:  # Ctrl-C (delivered as the signals are let through) or a failed write
            if recorded:
                discard_board(board)
            elif proc is not None:
                _kill_group(proc.pid, proc.pid)
            raise
        if ok:
            break
        discard_board(board)
        text = Path(elf).with_suffix(".qemu.log").read_text(errors="replace")[-800:]
        if tcp_port or attempt == 2 or "address" not in text.lower():
            raise DeviceError(f"QEMU did not start listening on 127.0.0.1:{port} ({' '.join(cmd)}): {text}")
    # Detached on purpose: it outlives this process (edge board stop ends it). While this process lives it is the
    # board's parent, and a board that ends - stopped by another process (`edge board stop`, another pytest
    # worker), or exiting by itself - stays a <defunct> zombie until its parent waits for it: a daemon thread
    # waits for it (a long-lived process - a pytest worker, `edge serve` - starts hundreds of boards).
    # returncode set: Popen's own bookkeeping never waits for it nor warns about it.
    proc.returncode = 0
    threading.Thread(target=_wait_for_exit, args=(proc.pid,), name=f"edge-board-{proc.pid}-reaper",
                     daemon=True).start()
    return board


def _wait_for_exit(pid: int) -> None:
    """Block until the child ``pid`` ends, and reap it (an ended board is never left a zombie)."""
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # already reaped (_reap, _kill_group)
        pass


class _signals_held:
    """Hold back SIGINT and SIGTERM for the block: they are noted, and acted on when it ends (the handler that
    was in place runs; a default SIGTERM becomes KeyboardInterrupt so the caller's clean-up still runs).
    Python-level handlers, not a signal mask: a mask would be inherited by the QEMU started inside the block
    (which then could not be stopped with SIGTERM). Only on the main thread (elsewhere signals never arrive)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __enter__(self):
        self.pending, self.old = None, {}
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.old[sig] = signal.signal(sig, self._note)
        return self

    def _note(self, signum, frame):
        if self.pending is None:
            self.pending = signum

    def __exit__(self, exc_type, exc, tb):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        if self.pending is not None and exc_type is None:
            handler = self.old.get(self.pending)
            if callable(handler):
                handler(self.pending, None)  # Python's default SIGINT handler raises KeyboardInterrupt
            elif handler != signal.SIG_IGN:
                raise KeyboardInterrupt
        return False


def _wait_listening(proc, port: int, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=T.QEMU_PORT_PROBE):
                return True  # the guest starts now; it sends nothing until a host speaks
        except OSError:
            time.sleep(0.05)
    return False


def discard_board(board: dict) -> None:
    """Stop a board this process started and drop it from the state file (the entry goes only once it is dead,
    so an interrupted stop still leaves it for `edge board stop --all`)."""
    pid = int(board.get("pid") or 0)
    if pid and _board_alive(board):
        _kill_group(pid, board.get("pgid") or pid)
    _reap(pid)
    _write_state([b for b in _read_state() if not (b.get("url") == board["url"] and b.get("pid") == pid)])


def verify_board(url: str, sha256: str, timeout: float = T.BOARD_VERIFY_TIMEOUT) -> None:
    """HELLO the freshly started board: DeviceError (with the device's log) unless it runs the model."""
    from edge_sdk.device.serial_link import SerialLink

    with SerialLink(url, timeout=timeout, retries=T.BOARD_VERIFY_RETRIES) as link:
        h = link.hello()
        link.poll(0.05)
        if h.model_hash != sha256:
            logs = "; ".join(line.text for line in link.logs) or "no log"
            raise DeviceError(f"the firmware on {url} did not start the model (device log: {logs})")
