"""Fuzzing the C runtime: the regression cases in tests/fuzz_corpus/ (every crasher the fuzzer found, rebuilt
with our writer) replayed through the ASan/UBSan build of edge-run-c, and a bounded, seeded libFuzzer session
(clang -fsanitize=fuzzer,address,undefined) on edge_init (verify + prepare + plan) and edge_invoke that
must end with zero findings.

The replay (edge-run-c --fuzz) runs each case exactly as the harness does: same arena size, inputs filled from
a hash of the model, three invokes with a state reset before the third (firmware_c/fuzz/edge_fuzz_inputs.h,
included by both), so a finding that needs particular input bytes replays as it was found."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import make_asan_runner, needs_c_runtime

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"
CORPUS = Path(__file__).resolve().parent / "fuzz_corpus"
SHARED = ROOT.parent / "shared" / "models"

pytestmark = needs_c_runtime


JOBS = os.cpu_count() or 1  # make -j: one object per source (the Makefile), compiled on every CPU
# The bounded libFuzzer session's length: 15 s, in CI too (it was 45 s there: the suite's time budget; a
# longer hunt is `make -C firmware_c fuzz-run`). A real session: the executions are counted and must exceed
# MIN_EXECUTIONS; the build is not counted in it.
FUZZ_SECONDS = 15
MIN_EXECUTIONS = 500


def _asan_runner(fw: Path) -> Path:
    """The ASan/UBSan edge-run-c of a scratch copy ``fw`` of firmware_c (the checkout's: the asan_runner
    fixture, made once per session), or skip when this compiler cannot build it."""
    runner, why = make_asan_runner(fw)
    if runner is None:
        pytest.skip(why)
    return runner


def _replay(runner: Path, cases: list[Path], tmp_path: Path) -> subprocess.CompletedProcess:
    blob = b"".join(struct.pack("<I", len(b)) + b for b in (p.read_bytes() for p in cases))
    (tmp_path / "cases.bin").write_bytes(blob)
    # no --arena: the replay uses the harness's arena (EDGE_FUZZ_ARENA), so cases load as they did when found
    return subprocess.run([str(runner), "--fuzz", str(tmp_path / "cases.bin")],
                          capture_output=True, text=True, timeout=120)


def test_regression_cases_replay_clean_under_asan(tmp_path, asan_runner):
    cases = sorted(CORPUS.glob("*.tflite"))
    assert len(cases) >= 2, "tests/fuzz_corpus lost its regression cases"
    proc = _replay(asan_runner, cases, tmp_path)
    assert proc.returncode == 0, f"{proc.stdout[-1000:]}\n{proc.stderr[-3000:]}"
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    statuses = [int(line.split()[3]) for line in lines if " status " in line]
    assert lines[-1] == f"done {len(cases)}"
    # every case but the refused-* ones is a valid model that loads and runs: the fix keeps them working, not
    # merely refused; refused-* cases are malformed or too large and must come back as a status, cleanly
    expected_ok = [not c.name.startswith("refused-") for c in cases]
    got_ok = [status == 0 for status in statuses]
    assert got_ok == expected_ok, list(zip([c.name for c in cases], statuses))


def test_issue23_op_seeds_replay_clean_under_asan(tmp_path, asan_runner):
    """The fuzz seeds of issue 23's ops (tests/test_audit23_ops_s19.fuzz_seed_models: each listed op's smallest
    model per type, IF / WHILE / CALL_ONCE with their subgraphs, UNIQUE / WHERE) replayed as the harness runs a case
    (three invokes, a reset before the third): no sanitizer report, no crash or hang, a status for every case; every
    model but the refused ones loads and runs (UNIQUE / WHERE: refused at load, an output sized by the data; the
    generic forms' types a kernel does not take: refused by its prepare)."""
    from tests.test_audit23_ops_s19 import fuzz_seed_models

    seeds = fuzz_seed_models()
    cases = []
    for name, data in seeds.items():
        cases.append(tmp_path / f"{name}.tflite")
        cases[-1].write_bytes(data)
    proc = _replay(asan_runner, cases, tmp_path)
    assert proc.returncode == 0, f"{proc.stdout[-1000:]}\n{proc.stderr[-3000:]}"
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    statuses = [int(line.split()[3]) for line in lines if " status " in line]
    assert lines[-1] == f"done {len(cases)}" and len(statuses) == len(cases)
    from edge_sdk.runtime.c_status import status_names

    named = {name: status_names()[status] for name, status in zip(seeds, statuses)}
    ran = sum(status == "EDGE_OK" for status in named.values())
    assert ran > len(cases) // 2, f"only {ran} of {len(cases)} seeds ran: the replay is not reaching the kernels"
    for op in ("if", "call_once", "rnn", "lstm", "tflite_detection_postprocess", "reduce_window"):
        assert any(status == "EDGE_OK" and name.startswith(f"audit23-{op}-") for name, status in named.items()), op
    # the counting loop from the harness's hashed counter: done, or stopped at the runtime's iteration bound
    assert named["audit23-while-int32_float32"] in ("EDGE_OK", "EDGE_LIMIT")
    assert {s for n, s in named.items() if n.startswith(("audit23-unique-", "audit23-where-"))} == {"EDGE_UNSUPPORTED_OP"}


BIAS_CASES = ["conv16-int64-bias-near-min.tflite", "dwconv16-int64-bias-near-min.tflite",
              "tconv16-int64-bias-near-min.tflite"]


@pytest.mark.slow
def test_replay_catches_the_int64_bias_overflow_when_the_fix_is_reverted(tmp_path, asan_runner):
    """The *-int64-bias-near-min cases are live regression cases: in a scratch copy of firmware_c whose int16
    conv kernels add the INT64 bias with a plain signed add again (edge_conv_add64 undone), the replay reports
    UBSan's signed overflow on each of them (it needs the harness's non-zero inputs: with zero inputs the
    accumulator is 0 and INT64_MIN + small + 0 does not overflow). The copy starts from the checkout's ASan
    objects (their -MMD header lists), so only edge_conv.h's includers are recompiled."""
    fw = tmp_path / "firmware_c"
    shutil.copytree(FW, fw, ignore=shutil.ignore_patterns("build"))
    shutil.copytree(FW / "build" / "host-asan", fw / "build" / "host-asan")
    conv_h = fw / "src" / "edge_conv.h"
    wrapping = "return (int64_t)((uint64_t)a + (uint64_t)b);"
    text = conv_h.read_text()
    assert wrapping in text, "edge_conv_add64 changed: update this test's revert of it"
    conv_h.write_text(text.replace(wrapping, "return a + b;"))
    runner = _asan_runner(fw)
    for name in BIAS_CASES:
        proc = _replay(runner, [CORPUS / name], tmp_path)
        assert proc.returncode != 0 and "signed integer overflow" in proc.stderr, (name, proc.stderr[-2000:])
        assert "_conv" in proc.stderr.split("signed integer overflow")[0].splitlines()[-1], proc.stderr[-2000:]


def test_regression_cases_are_reproducible():
    """The committed cases equal what tests/fuzz_corpus/make_cases.py builds now (our writer, no ../shared)."""
    sys.path.insert(0, str(CORPUS))
    try:
        import make_cases
    finally:
        sys.path.remove(str(CORPUS))
    for name, build in make_cases.CASES.items():
        assert (CORPUS / name).read_bytes() == build(), name


def _fuzzer() -> Path:
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed (Debian: apt-get install clang libclang-rt-14-dev): no libFuzzer")
    proc = subprocess.run(["make", "-C", str(FW), f"-j{JOBS}", "fuzz"], capture_output=True, text=True)
    exe = FW / "build" / "fuzz" / "edge-fuzz"
    if proc.returncode != 0 or not exe.exists():
        if "fuzzer" in proc.stderr or "libclang_rt" in proc.stderr or "cannot find" in proc.stderr:
            pytest.skip(f"clang's libFuzzer runtime is missing (apt-get install libclang-rt-dev): "
                        f"{proc.stderr[-300:]}")
        pytest.fail(f"make fuzz failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return exe


@pytest.mark.slow
def test_bounded_fuzz_session_has_no_findings(tmp_path):
    """libFuzzer, -seed=1, FUZZ_SECONDS (15 s): seeds are our writer's one-op models for every kernel family, the
    regression cases, and the ../shared models up to 64 KB (when present). Any sanitizer report, crash, leak
    or timeout fails the test (and leaves the reproducer in the test's tmp folder)."""
    exe = _fuzzer()
    sys.path.insert(0, str(FW / "fuzz"))
    try:
        import seed_corpus
    finally:
        sys.path.remove(str(FW / "fuzz"))
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for name, data in seed_corpus.writer_models().items():
        (seeds / f"writer-{name}.tflite").write_bytes(data)
    for p in CORPUS.glob("*.tflite"):
        shutil.copy(p, seeds / p.name)
    if SHARED.is_dir():
        for p in sorted(SHARED.rglob("*.tflite")):
            if p.stat().st_size <= 64 * 1024:
                shutil.copy(p, seeds / f"shared-{p.parent.name}-{p.name}")
    work = tmp_path / "corpus"
    work.mkdir()
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    proc = subprocess.run([str(exe), "-seed=1", f"-max_total_time={FUZZ_SECONDS}", "-runs=100000", "-timeout=10",
                           "-rss_limit_mb=2048", "-max_len=65536", "-print_final_stats=1",
                           f"-artifact_prefix={artifacts}/", str(work), str(seeds)],
                          capture_output=True, text=True, timeout=FUZZ_SECONDS + 105)
    findings = sorted(p.name for p in artifacts.iterdir())
    tail = proc.stderr[-4000:]
    assert proc.returncode == 0 and not findings, f"fuzzer findings {findings}:\n{tail}"
    runs = [int(line.split()[-1]) for line in proc.stderr.splitlines() if line.startswith("stat::number_of_executed_units")]
    assert runs and runs[0] > MIN_EXECUTIONS, tail  # it really ran (a session that executes nothing proves nothing)
    print(f"libFuzzer: {runs[0]} executions, no findings")
