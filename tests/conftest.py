import os
import shutil
import signal
import time
from pathlib import Path

import pytest

# The skip policy: every skip is listed at the end of the run; under CI=true a skip whose reason is not
# allow-listed in tests/skip_policy.py fails the session.
from tests.skip_policy import pytest_configure  # noqa: F401  (a pytest hook, found by name)

ROOT = Path(__file__).resolve().parent.parent
SHARED_MODELS = Path(os.environ.get("EDGE_SHARED_MODELS", ROOT.parent / "shared" / "models"))


# The C runtime's binding builds libedge with gcc and make: without them every C case of the runtime grid skips,
# for this one reason (allow-listed in tests/skip_policy.py only where CI lacks them: it never does).
C_RUNTIME_REASON = "the C runtime needs gcc and make"
HAVE_C_RUNTIME = shutil.which("gcc") is not None and shutil.which("make") is not None
RUNTIMES = ("python", "c")
# The one C-missing skip of the suite, for a test or a module (``pytestmark = needs_c_runtime``) that needs the C
# runtime outside the grid; the grid's C case skips for the same reason.
needs_c_runtime = pytest.mark.skipif(not HAVE_C_RUNTIME, reason=C_RUNTIME_REASON)


def require_c_runtime() -> None:
    """``needs_c_runtime`` from inside a fixture or a helper (which cannot take a mark): the same skip."""
    if not HAVE_C_RUNTIME:
        pytest.skip(C_RUNTIME_REASON)


@pytest.fixture(params=RUNTIMES)
def runtime(request) -> str:
    """The runtime grid: a test taking ``runtime`` runs once on the Python interpreter and once on the C runtime
    (``tests.oprunner.run_on(runtime, model, inputs)``)."""
    if request.param == "c" and not HAVE_C_RUNTIME:
        pytest.skip(C_RUNTIME_REASON)
    return request.param


@pytest.fixture(scope="module", autouse=True)
def _peer_outputs_per_module():
    """The peers' outputs cached per case (tests.oprunner.peer_outputs) and the one-op models built per case
    (tests.oprunner.op_model) live as long as the module's tests."""
    yield
    from tests import oprunner

    oprunner.PEER_OUTPUTS.clear()
    oprunner.PEER_CRASHES.clear()
    oprunner.MODELS.clear()


@pytest.fixture(scope="session", autouse=True)
def _peer_outputs_shared_by_workers(tmp_path_factory):
    """Under xdist a grid case's two runtimes may run on two workers: they share the peer's outputs through a
    folder of the session's base temp (each worker's basetemp is a child of it)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        from tests import oprunner

        oprunner.PEER_CACHE_DIR = tmp_path_factory.getbasetemp().parent / "peer-outputs"
        oprunner.PEER_CACHE_DIR.mkdir(exist_ok=True)
    yield


@pytest.fixture(scope="session", autouse=True)
def _m4_build_shared_by_the_session(tmp_path_factory):
    """The Cortex-M4 images of a session (tests.oprunner.m4_image) share one ARM build folder, so the library is
    compiled once per type switch, not once per test; under xdist the workers share it too (a child of the
    session's base temp, like the peers' outputs), each image built under the folder's file lock."""
    from tests import oprunner

    base = tmp_path_factory.getbasetemp()
    oprunner.M4_BUILD_DIR = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "m4-build"
    yield


def grid_cases(cases, c_runs=lambda case: True, ids=str) -> list:
    """``(runtime, case)`` pairs for ``@pytest.mark.parametrize(("runtime", "case"), grid_cases(...),
    indirect=["runtime"])``: every case on the Python interpreter, and on the C runtime those ``c_runs`` accepts
    (a case the C runtime has no kernel for is no skip: its refusal is tested on its own)."""
    return [pytest.param(runtime, case, id=f"{runtime}-{ids(case)}")
            for case in cases for runtime in RUNTIMES if runtime == "python" or c_runs(case)]


# ../shared models the C runtime cannot run, by file name, and why. Tests that run every shared model through
# the C runtime leave these out; tests/test_c_arena.py checks that every other shared model has all its ops.
C_RUNTIME_CANNOT_RUN = {
    "person_detect_vela.tflite": "Vela-compiled: its ethos-u custom op runs on an Arm Ethos-U NPU, not on a CPU",
}


def shared_model(relative: str) -> Path:
    """A model under ../shared/models, or skip the test (a user's clone has no ../shared)."""
    path = SHARED_MODELS / relative
    if not path.exists():
        pytest.skip(f"reference model {relative} not found: ../shared/models is absent in this checkout")
    return path


def shared_models(pattern: str = "**/*.tflite") -> list[Path]:
    """All shared models matching a glob (empty when ../shared is absent; tests then skip)."""
    if not SHARED_MODELS.exists():
        return []
    return sorted(SHARED_MODELS.glob(pattern))


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(1234)


@pytest.fixture
def state(tmp_path, monkeypatch):
    """A private edge state folder (EDGE_STATE_DIR: the QEMU boards' records) for one test; afterwards every board
    it recorded is killed and stopped, whatever the test did (never a QEMU left behind)."""
    from edge_sdk.device import qemu_board as qb

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    yield tmp_path / "state"
    for b in qb._read_state():
        qb._kill_group(int(b["pid"]), b.get("pgid"))
    qb.stop_board(all=True)


# ------------------------------------------------------------------------------------------ no board outlives us
# A QEMU board left running holds a host core for as long as it lives (it wrecked a CI timing once). Every process
# this pytest process starts - a board through start_qemu, an `edge flash` / `edge profile` child and its board, a
# test's own qemu-system-arm - inherits this variable; at the session's end no qemu-system-* process carrying this
# process's value may still run: each is stopped and the session fails, naming it. Under xdist every worker sets
# its own value (and checks only its own boards: a worker ending early must not see another's running board);
# the controller fails the session for them (pytest_testnodedown).
BOARD_OWNER_VAR = "EDGE_TEST_BOARD_OWNER"
os.environ[BOARD_OWNER_VAR] = f"{os.getpid()}:{time.time_ns()}"
_BOARDS_LEFT_RUNNING: list[str] = []  # "pid: command line" of each board found at the end (here or on a worker)


def boards_left_running() -> list[tuple[int, str]]:
    """(pid, command line) of the qemu-system-* processes started under this pytest process that still run."""
    mark = f"{BOARD_OWNER_VAR}={os.environ[BOARD_OWNER_VAR]}".encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            # argv[1]: a fake QEMU run by its interpreter (test_boards_owned)
            if not any(Path(a.decode(errors="replace")).name.startswith("qemu-system") for a in argv[:2]):
                continue
            if mark not in (proc / "environ").read_bytes().split(b"\0"):  # a zombie's environ reads empty
                continue
        except OSError:  # gone meanwhile, or another user's
            continue
        found.append((int(proc.name), b" ".join(argv).decode(errors="replace")))
    return found


def pytest_sessionfinish(session, exitstatus):
    if not Path("/proc/self/environ").exists():
        return
    for pid, command in boards_left_running():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _BOARDS_LEFT_RUNNING.append(f"pid {pid}: {command}")
    if hasattr(session.config, "workeroutput"):  # an xdist worker: the controller reports and fails
        session.config.workeroutput["edge_boards_left_running"] = list(_BOARDS_LEFT_RUNNING)
    elif _BOARDS_LEFT_RUNNING and session.exitstatus == pytest.ExitCode.OK:  # else it fails (or stopped) anyway
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist's controller: the boards a worker found still running at its end."""
    _BOARDS_LEFT_RUNNING.extend(getattr(node, "workeroutput", {}).get("edge_boards_left_running", []))


def pytest_terminal_summary(terminalreporter):
    if not _BOARDS_LEFT_RUNNING:
        return
    terminalreporter.section("QEMU boards left running by this session (now killed): FAILED", sep="!", red=True,
                             bold=True)
    for line in _BOARDS_LEFT_RUNNING:
        terminalreporter.line(line, red=True)
    terminalreporter.line("every test that starts a board must stop it (the `state` fixture stops what a test "
                          "recorded; stop_board / discard_board; a Popen'd QEMU killed in a finally)", red=True)
