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


def _bytecode_under_the_cache() -> None:
    """Compiled bytecode kept under the cache folder (``resources.cache_dir()/pycache``, never beside the sources)
    for this process and every Python it starts. Where PYTHONDONTWRITEBYTECODE=1 (this machine, CI's image) each
    pytest worker and each of the hundreds of Pythons the suite starts (`python -m edge_sdk.cli ...`, gen_ops.py
    in every firmware make) compiled edge_sdk's 34k lines again, and the workers re-rewrote every test module:
    about 0.25 s of CPU a process. A prefix already chosen (PYTHONPYCACHEPREFIX) is kept."""
    import sys

    from edge_sdk import resources

    prefix = sys.pycache_prefix or str(resources.cache_dir() / "pycache")
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, False
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


_bytecode_under_the_cache()


# ------------------------------------------------------------------------------ one compile per source and flags
# The suite compiles the C runtime's same sources with the same flags in many places: the checkout's host library,
# the installed wheel's copy of it (tests/test_packaging.py), each loopback "Pi"'s deploy build (test_deploy*.py,
# test_bench.py), the Cortex-M libraries of test_c_builds / test_firmware_c / `make size` / the M4 images, ...
# Each make or gcc call still runs (every Makefile rule, every warning check); where ccache (Debian `ccache`) is
# installed, the compilers the suite calls by name (make's cc, gcc, clang, the ARM and cross gcc's) are found
# first on PATH as wrappers that compile through it: a compile whose compiler, flags and preprocessed source were
# compiled before gives the same object and prints the same warnings, without compiling again. The cache lives
# under the cache folder (resources.cache_dir()/ccache, as the firmware objects and `edge check`'s objects do),
# so the xdist workers and the loopback devices share it. EDGE_TEST_CCACHE=0 turns it off (compare timings).
# Not through ccache: -fcallgraph-info compiles (`edge check`'s stack objects): ccache 4.7 caches the object but a
# hit does not write the .ci file beside it.
COMPILERS = ("cc", "gcc", "clang", "arm-none-eabi-gcc", "aarch64-linux-gnu-gcc", "arm-linux-gnueabihf-gcc")
COMPILER_CACHE_BIN: Path | None = None  # the wrappers' folder (first on PATH) when the cache is on
_WRAPPER = """#!/bin/sh
# tests/conftest.py: {name} through ccache (one compile per compiler, flags and preprocessed source)
case " $* " in *" -fcallgraph-info"*) exec {real} "$@";; esac
export CCACHE_DIR={ccache_dir} CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=4G
exec {ccache} {real} "$@"
"""


def _compile_through_ccache() -> None:
    global COMPILER_CACHE_BIN
    import shlex

    from edge_sdk import resources

    ccache = shutil.which("ccache")
    if ccache is None or os.environ.get("EDGE_TEST_CCACHE") == "0":
        return
    root = resources.cache_dir() / "ccache"
    bindir = root / "bin"
    # the real compilers: PATH without the wrappers (set already when this is an xdist worker of a session)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p) != bindir)
    bindir.mkdir(parents=True, exist_ok=True)
    for name in COMPILERS:
        real = shutil.which(name, path=path)
        wrapper = bindir / name
        if real is None:
            wrapper.unlink(missing_ok=True)
            continue
        text = _WRAPPER.format(name=name, real=shlex.quote(real), ccache=shlex.quote(ccache),
                               ccache_dir=shlex.quote(str(root / "store")))
        if not wrapper.is_file() or wrapper.read_text() != text:  # written whole: a concurrent reader sees one
            partial = bindir / f".{name}.{os.getpid()}"
            partial.write_text(text)
            partial.chmod(0o755)
            partial.replace(wrapper)
    os.environ["PATH"] = os.pathsep.join([str(bindir), path])
    COMPILER_CACHE_BIN = bindir


_compile_through_ccache()


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


def c_backend():
    """The C runtime's Python binding (edge_sdk.runtime.c_interpreter), its host library built, for a test or helper
    outside a fixture; the same skip as needs_c_runtime without gcc and make."""
    require_c_runtime()
    from edge_sdk.runtime import c_build, c_interpreter

    c_build.build()
    return c_interpreter


@pytest.fixture(scope="module")
def backend():
    """The C runtime's binding, built (c_backend): the C-only tests' one fixture (the grid's tests take ``runtime``)."""
    return c_backend()


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


def _session_shared_dir(tmp_path_factory, name: str) -> Path:
    """A folder every worker of the session shares (a child of the session's base temp under xdist)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


@pytest.fixture(scope="session")
def dsp_runner(tmp_path_factory):
    """edge-run-c built with the DSP path emulated in C (-DEDGE_EMULATE_DSP; gcc -O1, warnings as errors), once per
    session for every module that compares the DSP paths (test_ops_conv, test_mcu_kernels, test_mcu_plan,
    test_c_kernels_fc_dsp: each built it alone, ~20 s each in CI): the workers share it under a file lock. One
    object per source (compiled in parallel, and through the compiler cache when it is on), then linked."""
    import fcntl
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    fw = ROOT / "firmware_c"
    out = _session_shared_dir(tmp_path_factory, "dsp-runner")
    out.mkdir(parents=True, exist_ok=True)
    exe = out / "edge-run-c"
    with open(out / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build; the other workers wait for it and take its runner
        if exe.is_file():
            return exe
        table = out / "edge_ops_generated.c"
        subprocess.run([sys.executable, str(fw / "tools" / "gen_ops.py"), str(table)], check=True,
                       capture_output=True)
        sources = [fw / "src" / "edge.c", *sorted((fw / "src" / "kernels").glob("*.c")), fw / "host" / "edge_host.c",
                   fw / "host" / "edge_run.c", table]
        flags = ["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-DEDGE_EMULATE_DSP", f"-I{fw / 'include'}",
                 f"-I{fw / 'src'}", f"-I{fw / 'host'}"]

        def compile_one(k_src):
            k, src = k_src
            obj = out / f"{k:03d}-{src.stem}.o"  # numbered: two sources may share a stem
            return obj, subprocess.run(["gcc", *flags, "-c", str(src), "-o", str(obj)], capture_output=True,
                                       text=True)

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            built = list(pool.map(compile_one, enumerate(sources)))
        for src, (_obj, proc) in zip(sources, built):
            assert proc.returncode == 0, f"{src.name}:\n{proc.stderr[-3000:]}"
        partial = out / f".edge-run-c.{os.getpid()}"
        proc = subprocess.run(["gcc", "-o", str(partial), *(str(obj) for obj, _ in built), "-lm"],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        partial.replace(exe)  # whole: a worker that finds it finds a finished runner
    return exe


# ------------------------------------------------------------------------------------ the ASan/UBSan runner
ASAN_SHARED_HEADER = "fuzz/edge_fuzz_inputs.h"  # the fuzz harness's invoke sequence, included by host/edge_run.c
ASAN_REASON = "this gcc cannot build the ASan/UBSan runner"


def make_asan_runner(fw: Path = ROOT / "firmware_c") -> tuple[Path | None, str]:
    """``make host-asan`` in ``fw`` under a file lock (two xdist workers would otherwise both compile the whole
    runtime into the same folder at once, each make overwriting the other's objects; the second waits and finds it
    up to date): (its edge-run-c, "") or (None, why not). The Makefile's HEADERS do not list fuzz/*.h: when the
    shared header is newer than the runner, make is told to treat edge_run.c (which includes it) as changed."""
    import fcntl
    import subprocess

    runner = fw / "build" / "host-asan" / "edge-run-c"
    cmd = ["make", "-C", str(fw), f"-j{os.cpu_count() or 1}", "host-asan"]
    if runner.exists() and (fw / ASAN_SHARED_HEADER).stat().st_mtime > runner.stat().st_mtime:
        cmd += ["-W", "host/edge_run.c"]
    (fw / "build").mkdir(exist_ok=True)
    with open(fw / "build" / "host-asan.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not runner.exists():
        return None, f"{ASAN_REASON}: {proc.stderr[-500:]}"
    return runner, ""


@pytest.fixture(scope="session")
def asan_build() -> tuple[Path | None, str]:
    """The checkout's ASan/UBSan edge-run-c, made once per session (each xdist worker's first make under the
    lock; the later ones find it up to date): (runner, "") or (None, why not) for a test that falls back to the
    plain runner (test_firmware_c's fuzzed loads)."""
    if not HAVE_C_RUNTIME:
        return None, C_RUNTIME_REASON
    return make_asan_runner()


@pytest.fixture(scope="session")
def asan_runner(asan_build) -> Path:
    """The session's ASan/UBSan edge-run-c (asan_build), or skip the test when this compiler cannot build it."""
    runner, why = asan_build
    if runner is None:
        pytest.skip(why)
    return runner


# ------------------------------------------------------------------------------------ longest tests first (xdist)
# `make test` runs two workers with --dist worksteal: xdist deals the collection out in contiguous halves and an
# idle worker steals from the END of the other's queue. A 200 s test at the end of a half runs last, alone, on
# one core. So under xdist the long tests go to the heads of the halves, longest first, balanced between them
# (LPT), and the many short tests after them: the stealing at the end moves short tests only. The seconds:
# the quiet CI simulation's --durations table (2026-12-03, main at 254623a: 10,108 tests, 23 min 37 s of pytest)
# for tests of 15 s and more, setup + call, by node id or by test function (every parameter); without the M4
# image tests that now boot one image per call and the DSP-runner setups now built once per session (this
# table's session 13 refresh: they fell under 15 s). A test marked ``slow`` that the table does not list counts
# SLOW_MARK_SECONDS. A stale figure only moves a test in the order; nothing is skipped or run twice.
LONG_TEST_SECONDS = {
    "tests/test_c_fuzz.py::test_bounded_fuzz_session_has_no_findings": 300,  # 311 s in the CI simulation of session 19 (issue 23 seeds: 369 writer models)
    "tests/test_check_models.py::test_op_table_fallback_agrees_with_the_c_runtime_on_every_c_profile[tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite]": 20,  # 109 before choose_remembered (3fe6316): x0.18 measured under load, an estimate
    "tests/test_c_fuzz.py::test_regression_cases_replay_clean_under_asan": 70,
    "tests/test_c_cross.py::test_cross_binaries_are_for_the_target_cpu[aarch64]": 60,
    "tests/test_export.py::test_mobilenet_v2_inplace_plan_on_the_qemu_board": 50,
    "tests/test_patching.py::test_mobilenet_v2_patch_plan_on_the_qemu_board": 50,
    "tests/test_fleet_ansible.py::test_rollout_stops_at_an_unhealthy_host_rolls_it_back_and_resumes": 47,
    "tests/test_qemu_models.py::test_shared_model_bit_exact_on_qemu[mobilenet_v2_quantized_1x3x224x224]": 45,
    "tests/test_arena_meaning.py::test_edge_check_reports_the_same_arena_size_and_the_packed_figure_apart": 37,
    "tests/test_check_c.py::test_c_target_arena_equals_high_water_read_back_from_the_qemu_board[tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite]": 32,
    "tests/test_fleet_ansible.py::test_a_rollout_killed_mid_wave_resumes_and_converges": 27,
    "tests/test_boards.py::test_runtime_links_with_the_fragment_and_runs_under_qemu": 24,
    "tests/test_export.py::test_qemu_board_export_arena_is_the_boards_exact_need_and_edge_checks[person_detect-inplace]": 24,
    "tests/test_check.py::test_shared_models_that_do_not_fit": 23,
    "tests/test_c_fuzz.py::test_replay_catches_the_int64_bias_overflow_when_the_fix_is_reverted": 21,
    "tests/test_firmware_c.py::test_build_is_warning_clean_with_gcc[strings]": 21,
    "tests/test_check_linux_c.py::test_aarch64_c_check_runs_the_aarch64_library_under_qemu": 20,
    "tests/test_generate_device.py::test_qemu_generate_same_tokens_as_host": 20,
    "tests/test_firmware_c.py::test_build_is_warning_clean_with_gcc[no-strings]": 19,
    "tests/test_patching.py::test_c_patch_plan_of_mobilenet_v2": 19,
    "tests/test_check_models.py::test_check_agrees_with_the_runtime_on_every_profile[tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite]": 18,
    "tests/test_fleet_ansible.py::test_a_failed_wave_is_rolled_back_whole_and_the_later_waves_keep_their_model": 18,
    "tests/test_packaging.py::test_installed_wheel_works_without_the_checkout": 18,
    "tests/test_qemu_models.py::test_shared_model_bit_exact_on_qemu[audio_preprocessor_int8]": 18,
    "tests/test_export.py::test_host_export_arena_is_the_examples_exact_need[person_detect-min]": 17,
    "tests/test_export.py::test_qemu_board_export_arena_is_the_boards_exact_need_and_edge_checks[person_detect-layer]": 17,
    "tests/test_qemu_models.py::test_shared_model_bit_exact_on_qemu[dtln_noise_suppression]": 17,
    "tests/test_check_linux_c.py::test_host_linux_c_check_counts_the_fast_paths_packed_weights": 16,
    "tests/test_convert_goals.py::test_standin_keeps_its_task_at_default_settings[ocr_rec]": 16,
    "tests/test_first_hour.py::test_ctrl_c_during_flash_leaves_no_qemu": 16,
    "tests/test_export.py::test_qemu_board_export_arena_is_the_boards_exact_need_and_edge_checks[dw_chain-inplace]": 15,
    "tests/test_ops_hybrid.py::test_hybrid_kernels_on_cortex_m4_under_qemu": 15,
    "tests/test_patching.py::test_mobilenet_v2_patch_plan": 15,
    "tests/test_qemu_models.py::test_shared_model_bit_exact_on_qemu[micro_speech_lstm]": 15,
}
SLOW_MARK_SECONDS = 10


def expected_seconds(item) -> float:
    """What a collected test is expected to take, for the ordering (0: a short test)."""
    for key in (item.nodeid, item.nodeid.split("[", 1)[0]):
        if key in LONG_TEST_SECONDS:
            return LONG_TEST_SECONDS[key]
    return SLOW_MARK_SECONDS if item.get_closest_marker("slow") else 0.0


def long_tests_first(items: list, workers: int) -> list:
    """``items`` reordered so that each of the ``workers`` contiguous chunks xdist's load / worksteal schedulers
    deal out (worker k gets len(pending) // workers-left) starts with its share of the long tests (longest first,
    each to the least loaded chunk with room), the short tests after them in collection order."""
    seconds = {id(item): expected_seconds(item) for item in items}
    long = sorted((item for item in items if seconds[id(item)] > 0), key=lambda item: -seconds[id(item)])
    short = [item for item in items if seconds[id(item)] == 0]
    sizes, left = [], len(items)
    for k in range(workers):
        sizes.append(left // (workers - k))
        left -= sizes[-1]
    heads: list[list] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for item in long:
        k = min((k for k in range(workers) if len(heads[k]) < sizes[k]), key=lambda k: load[k])
        heads[k].append(item)
        load[k] += seconds[id(item)]
    ordered, taken = [], 0
    for k in range(workers):
        room = sizes[k] - len(heads[k])
        ordered += heads[k] + short[taken:taken + room]
        taken += room
    return ordered


@pytest.hookimpl(trylast=True)  # after -m / -k deselection: the chunks are of what runs
def pytest_collection_modifyitems(config, items):
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)  # set on xdist's workers only
    if workers >= 2 and getattr(config.option, "dist", "no") in ("load", "worksteal"):
        items[:] = long_tests_first(items, workers)


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
