"""One meaning of arena_size (issue 23 point 5): activations + scratch + persistent state, the same for
Interpreter (python), CInterpreter and `edge check`; the SIMD fast paths' packed weight copies are their own
figure (packed_weights_bytes), not part of it.

The issue measured 223,008 B for CInterpreter.arena_size against 12,288 B from the Python interpreter: the C
figure held the packed weight copies. What still separates the two backends is stated here to the byte: the
C runtime's tensor/node structs and kernel data (its persistent part less the packed copies), its kernels'
scratch and the arena's 16-byte alignment; the tensor plan itself is the same plan."""

from __future__ import annotations

import re

import numpy as np
import pytest

from edge_sdk.runtime.interpreter import Interpreter
from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model
from tests.simd_common import levels  # noqa: F401 (a fixture; backend: tests/conftest.py)

pytestmark = needs_c_runtime


def float_model() -> bytes:
    """A float CONV_2D 3x3 (32 -> 64 channels on 10x10) then LOGISTIC: the float GEMM fast path packs its
    64 * 3 * 3 * 32 filter (73,728 bytes) at prepare."""
    rng = np.random.default_rng(12)
    w = T((64, 3, 3, 32), "FLOAT32", data=rng.standard_normal((64, 3, 3, 32)).astype(np.float32))
    return op_model("CONV_2D", [T((1, 10, 10, 32), "FLOAT32"), w, None], [T((1, 10, 10, 64), "FLOAT32")],
                    options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                             "dilation_w_factor": 1})


def _c(backend, data: bytes):
    it = backend.CInterpreter(model_content=data)
    it.allocate_tensors()
    return it


def test_python_and_c_arena_size_differ_only_by_the_c_runtimes_own_state(backend, levels):
    data = float_model()
    py = Interpreter(model_content=data)
    py.allocate_tensors()
    c = _c(backend, data)
    info = c.plan_info()
    packed = c.packed_weights_bytes
    assert packed == info["packed"] and 0 <= packed <= info["persistent"]
    _, lv = levels
    if lv:  # a CPU with a fast path here: the float filter was packed
        assert packed >= 4 * 64 * 3 * 3 * 32
    # the same tensor plan
    assert info["tensor_total"] == py.arena_size
    # C = that plan + its kernels' scratch + its persistent state (structs, kernel data) + alignment, at the
    # high water; the packed copies are not in it
    need = max(info["arena_used"], info["high_water"])
    assert c.arena_size == need - packed
    pad = info["arena_used"] - info["head_total"] - info["persistent"]
    assert 0 <= pad < 16
    own_state = (info["head_total"] - info["tensor_total"]) + (info["persistent"] - packed) + pad
    if info["high_water"] <= info["arena_used"]:
        assert c.arena_size == py.arena_size + own_state
    assert info["persistent"] - packed < 4096  # structs and kernel data: small next to the packed filter


def test_packed_copies_leave_arena_size_as_the_portable_kernels_have_it(backend, levels):
    """At the top SIMD level the buffer grows by the packed filter, arena_size does not: it stays within the fast
    path's own scratch and kernel data of the portable build's (level 0, nothing packed)."""
    lib, lv = levels
    if not lv:
        pytest.skip("this CPU runs no SIMD fast path: nothing is packed")
    data = float_model()
    figures = {}
    for level in (0, lv[-1]):
        lib.edge_simd_set(level)
        try:
            c = _c(backend, data)
            figures[level] = (c.arena_size, c.packed_weights_bytes, c.plan_info())
        finally:
            lib.edge_simd_set(-1)
    (size0, packed0, _), (size1, packed1, info1) = figures[0], figures[lv[-1]]
    assert packed0 == 0 and packed1 >= 4 * 64 * 3 * 3 * 32
    # what the fast path adds besides the packed copy: its scratch (head) and its small kernel data
    extra = info1["head_total"] - info1["tensor_total"] + 4096
    assert size0 - 4096 <= size1 <= size0 + extra < size0 + packed1


def test_edge_check_reports_the_same_arena_size_and_the_packed_figure_apart(backend, tmp_path, capsys):
    """A C-runtime profile for this machine's Linux (the host library, fast paths in): check's arena_size is
    CInterpreter.arena_size to the byte, packed_weights_bytes its packed figure, and arena_bytes (the buffer,
    compared with the RAM budget) their sum; the text says so in one line."""
    import json

    from edge_sdk import cli
    from edge_sdk.targets import c_check
    from edge_sdk.targets.check import check_model
    from edge_sdk.targets.profiles import load_profile

    if c_check.host_arch() != "x86_64":
        pytest.skip("host-linux.toml says x86_64")
    profile_path = tmp_path / "host-linux-c.toml"
    profile_path.write_text('extends = "host-linux"\nruntime = "c"\n')
    profile = load_profile(str(profile_path))
    data = float_model()
    c = _c(backend, data)
    r = check_model(data, profile, stack=False)
    assert r.ram["layout"] == c_check.LINUX_HOST
    assert r.arena_size == c.arena_size
    assert r.packed_weights_bytes == c.packed_weights_bytes == r.ram["packed_weights_bytes"]
    assert r.arena_bytes == r.arena_size + r.packed_weights_bytes
    d = r.to_dict()
    assert (d["arena_size"], d["packed_weights_bytes"]) == (c.arena_size, c.packed_weights_bytes)
    model = tmp_path / "conv.tflite"
    model.write_bytes(data)
    assert cli.main(["check", str(model), "--target", str(profile_path)]) == 0
    text = capsys.readouterr().out
    if c.packed_weights_bytes:
        assert (f"= arena {c.arena_size} B (activations, scratch, persistent state: the figure "
                f"Interpreter.arena_size gives) + packed weight copies {c.packed_weights_bytes} B") in text
    # a Python-interpreter profile: the interpreter's plan, nothing packed
    py = check_model(data, "host-linux", stack=False)
    assert py.runtime == "python"
    it = Interpreter(model_content=data)
    it.allocate_tensors()
    assert py.arena_size == py.arena_bytes == it.arena_size and py.packed_weights_bytes == 0


# ------------------------------------------------------------------------------------------------ every command
# Issue 27 point 3: one arena figure with one meaning, printed in the same words ("arena N B (activations +
# scratch + persistent state; WHERE)", planner.arena_words) by every command about one model on one target.
ARENA_LINE = re.compile(r"\barena (\d+) B \(activations \+ scratch \+ persistent state; ([^)]*)\)", re.M)


def _arena_lines(text: str) -> list[tuple[int, str]]:
    return [(int(m.group(1)), m.group(2)) for m in ARENA_LINE.finditer(text)]


def _main(capsys, *argv) -> str:
    from edge_sdk import cli

    code = cli.main(list(argv))
    out = capsys.readouterr().out
    assert code == 0, (argv, out)
    return out


def small_int8_model() -> bytes:
    """An int8 FULLY_CONNECTED (16 -> 8): the C runtime's structs and kernel data dominate its arena (the tensor
    plan alone is a few dozen bytes), so the figures the issue found apart differ here too."""
    rng = np.random.default_rng(3)
    w = T((8, 16), "INT8", scale=0.02, zero_point=0, data=rng.integers(-100, 100, (8, 16)).astype(np.int8))
    b = T((8,), "INT32", scale=0.05 * 0.02, zero_point=0, data=rng.integers(-500, 500, 8).astype(np.int32))
    return op_model("FULLY_CONNECTED", [T((1, 16), "INT8", 0.05, -3), w, b], [T((1, 8), "INT8", 0.1, 5)])


def test_planner_words_are_the_one_form():
    from edge_sdk.runtime.planner import arena_words, runtime_arena

    assert runtime_arena(900, 952) == 952 and runtime_arena(1000, 952, packed=48) == 952
    assert _arena_lines(arena_words(952, "the C runtime on x")) == [(952, "the C runtime on x")]
    assert arena_words(None, "y") == "arena not measured (activations + scratch + persistent state; y)"


def test_bench_prints_the_c_runtimes_arena_size(backend, tmp_path, capsys):
    """`edge bench --backend c` here: CInterpreter.arena_size (edge check's figure on a host-linux C profile,
    test_edge_check_reports_the_same_arena_size_and_the_packed_figure_apart) in the shared words; the packed
    copies and the process's RSS named apart."""
    import json

    data = float_model()
    model = tmp_path / "conv.tflite"
    model.write_bytes(data)
    c = _c(backend, data)
    out = _main(capsys, "bench", str(model), "--backend", "c", "--runs", "2", "--warmup", "0")
    assert [n for n, _ in _arena_lines(out)] == [c.arena_size]
    assert "the C runtime on this machine" in out and "peak RSS" in out
    if c.packed_weights_bytes:
        assert f"packed weight copies {c.packed_weights_bytes} B" in out
    report = json.loads(_main(capsys, "bench", str(model), "--backend", "c", "--runs", "2", "--warmup", "0",
                              "--json"))
    assert report["arena_size"] == c.arena_size


@pytest.mark.slow
def test_check_flash_profile_export_print_one_arena_figure(tmp_path, capsys, monkeypatch):
    """check, flash, profile (the QEMU board's own high water) and export on one model and the QEMU board: the
    same number in the same words; flash's buffer (figure + margin) is named "arena buffer", never "arena"."""
    import json
    import shutil

    if not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")):
        pytest.skip("needs qemu-system-arm and arm-none-eabi-gcc")
    from edge_sdk.device import qemu_board as qb

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    model = tmp_path / "fc.tflite"
    model.write_bytes(small_int8_model())
    target = "qemu-mps2-an386"
    figures = {}
    try:
        out = _main(capsys, "check", str(model), "--target", target)
        figures["check"] = _arena_lines(out)
        out = _main(capsys, "flash", str(model), "--target", target, "--build-dir", str(tmp_path / "fw"))
        figures["flash"] = _arena_lines(out)
        buffer = int(re.search(r"arena buffer (\d+) B", out).group(1))
        port = re.search(r"^(socket://\S+)$", out, re.M).group(1)
        out = _main(capsys, "profile", str(model), "--target", target, "--port", port, "--runs", "1")
        figures["profile"] = _arena_lines(out)
        assert f"arena buffer {buffer} B" in out
        prof = json.loads(_main(capsys, "profile", str(model), "--target", target, "--port", port, "--runs", "1",
                                "--json"))
    finally:
        qb.stop_board(all=True, scope="process")
    out = _main(capsys, "export", str(model), "--target", target, "--format", "make", "-o", str(tmp_path / "exp"))
    figures["export"] = _arena_lines(out)
    for command, lines in figures.items():
        assert len(lines) == 1, (command, lines)
    numbers = {command: lines[0][0] for command, lines in figures.items()}
    assert len(set(numbers.values())) == 1, numbers
    arena = numbers["check"]
    assert prof["arena_size"] == arena and prof["arena_buffer_bytes"] == buffer > arena
    for command in ("check", "flash", "profile", "export"):
        assert target in figures[command][0][1] or "qemu" in figures[command][0][1], (command, figures[command])
    it = Interpreter(model_content=model.read_bytes())
    it.allocate_tensors()
    assert it.arena_size < arena  # the Python tensor plan: another figure (the C runtime's structs are not in it)


def test_check_ram_breakdown_names_every_part_of_the_sum():
    """`edge check`'s breakdown of the C runtime's arena adds up: plan + persistent + alignment + what init's planner
    held above the steady state (the arena is the high water then) - packed copies = the arena; the issue saw
    "arena 3616 B ...: plan 160 + persistent 2544" (912 B unnamed). Figures that do not add up print no sum."""
    from edge_sdk.targets.check import CheckResult, format_check

    def line(**ram) -> str:
        r = CheckResult(verdict="runs", target="t", backend="cpu", ram_budget=10**6)
        r.runtime = "c"
        r.ram = {"tensor_bytes": 100, "scratch_bytes": 60, "plan_bytes": 160, "persistent_bytes": 2544,
                 "packed_weights_bytes": 0, "layout": "ilp32-arm", **ram}
        from edge_sdk.runtime.planner import runtime_arena

        r.packed_weights_bytes = r.ram["packed_weights_bytes"]
        r.arena_bytes = runtime_arena(r.ram["high_water"], r.ram.get("arena_used") or 0)
        r.arena_size = r.arena_bytes - r.packed_weights_bytes
        text = format_check(r)
        return next(ln for ln in text.splitlines() if ARENA_LINE.search(ln))

    def summed(text: str) -> int:
        """The sum the line states after " = ": every "+ name N" / "- name N" term (parentheses dropped)."""
        parts = re.sub(r"\([^)]*\)", "", text.split(" = ", 1)[1])
        return sum(-int(n) if sign == "-" else int(n)
                   for sign, n in re.findall(r"(\+|-) [^0-9+-]*?(\d+)", " + " + parts))

    # the figures: 3616 at the high water, 2704 + 4 B alignment after init
    text = line(arena_used=2708, high_water=3616)
    assert _arena_lines(text) == [(3616, "the C runtime on t, layer-by-layer plan, planned")]
    assert " = plan 160 " in text and "alignment 4 B" in text and "init's planner memory 908 B" in text
    assert summed(text) == 3616
    # the steady state is the arena: plan + persistent + alignment, nothing else named
    text = line(arena_used=2712, high_water=2000)
    assert summed(text) == 2712 and "init's planner" not in text
    # packed copies (a Linux C target): named and taken off
    text = line(arena_used=2712, high_water=2712, packed_weights_bytes=1000)
    assert "- packed weight copies 1000 B" in text and summed(text) == 1712 == _arena_lines(text)[0][0]
    # without the steady-state figure the parts cannot be summed: they are named, no sum is printed
    text = line(high_water=3616)
    assert " = " not in text.split(")", 1)[1] and "high water 3616 B" in text


def test_convert_and_inspect_name_their_figures_as_check_does(tmp_path, capsys):
    """`edge convert --target` prints the check's arena (arena_size) in the shared words, the same line `edge check`
    prints for the converted model on that target; `edge inspect` prints the Python tensor plan under its own name,
    never in the arena's words (issue 27 point 3)."""
    import json

    target = "qemu-mps2-an386"  # a C-runtime board with an FPU: the float model converts as it is
    source = tmp_path / "conv.tflite"
    source.write_bytes(float_model())
    out_path = tmp_path / "out.tflite"
    out = _main(capsys, "convert", str(source), "-o", str(out_path), "--target", target, "--quantize", "none")
    converted = _arena_lines(out)
    check = _main(capsys, "check", str(out_path), "--target", target)
    assert len(converted) == 1 and converted == _arena_lines(check), (out, check)
    assert "Python tensor plan" not in out
    assert "the C runtime on qemu-mps2-an386" in converted[0][1]

    text = _main(capsys, "inspect", str(out_path))
    it = Interpreter(model_content=out_path.read_bytes())
    it.allocate_tensors()
    assert _arena_lines(text) == []
    assert f"Python tensor plan {it.arena_size} B (the Python interpreter's activations; the arena on a target: " \
           "edge check --target)" in text
    report = json.loads(_main(capsys, "inspect", str(out_path), "--json"))
    assert report["arena"]["bytes"] == it.arena_size and report["arena"]["figure"] == "python_tensor_plan"
