"""Every README figure comes from a command that checks it (issue 27 point 2): the benchmarks' aims say met /
NOT met / not measured truthfully (never "met" over a peer's n/a) and set the exit status; the README's generated
"benchmarks" and "size" sections are made from the JSON those commands write (benchmarks/results/)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from edge_sdk.tools import docs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from aims import Aims  # noqa: E402


def test_an_aim_over_models_is_met_only_when_every_model_was_measured(tmp_path, capsys):
    aims = Aims("demo", "python benchmarks/demo.py", results=tmp_path)
    na = aims.every("arena <= TFLM", {"a": None, "b": None}, lambda r: r <= 1, "{:.2f}", section="3")
    part = aims.every("arena <= TFLM", {"a": 0.9, "b": None}, lambda r: r <= 1, "{:.2f}", section="3")
    good = aims.every("arena <= TFLM", {"a": 0.9, "b": 1.0}, lambda r: r <= 1, "{:.2f}", section="3")
    out = capsys.readouterr().out
    assert (na["verdict"], part["verdict"], good["verdict"]) == ("not measured", "not measured", "met")
    assert "not measured on 1: b" in part["detail"] and "'arena <= TFLM': met (2/2 models)" in out
    assert aims.exit_status() == 0
    bad = aims.every("faster than TFLM on every model", {"a": 1.2, "b": 0.8, "c": None}, lambda r: r >= 1,
                     "TFLM/C {:.2f}x", section="1")
    assert bad["verdict"] == "NOT met" and "fails on b (TFLM/C 0.80x)" in bad["detail"]
    assert aims.exit_status() == 1
    assert aims.single("x", None, "skipped", section="2")["verdict"] == "not measured"


def test_save_keeps_the_sections_a_run_did_not_measure(tmp_path):
    first = Aims("demo", "python benchmarks/demo.py", results=tmp_path)
    first.single("aim of section 1", True, "1.5x", section="1")
    first.single("aim of section 3", False, "2.8", section="3")
    first.save(models=["a", "b"])
    second = Aims("demo", "python benchmarks/demo.py", results=tmp_path)
    second.single("aim of section 3", True, "0.9", section="3")
    second.save(models=["a"])
    data = json.loads((tmp_path / "demo.json").read_text())
    assert data["sections"]["1"]["aims"][0]["met"] is True and data["sections"]["1"]["models"] == ["a", "b"]
    assert data["sections"]["3"]["aims"][0]["detail"] == "0.9" and data["sections"]["3"]["models"] == ["a"]


def test_the_readme_sections_are_made_from_the_recorded_runs(tmp_path):
    assert "c_runtime.py`: not measured" in docs.benchmarks_section(tmp_path)
    assert "Runtime size: not measured" in docs.size_section(tmp_path)
    aims = Aims("c_runtime", "python benchmarks/c_runtime.py", results=tmp_path)
    aims.every("arena <= TFLM's (whole arenas, host build)", {"m.tflite": None}, lambda r: r <= 1, "{:.3f}",
               section="3")
    aims.every("faster than TFLM on every model (host, C from Python)", {"a": 1.3, "b": 0.9}, lambda r: r >= 1,
               "TFLM/C {:.2f}x", section="1")
    aims.save(models=["a", "b"])
    text = docs.benchmarks_section(tmp_path)
    assert "(section 1; " in text and "faster than TFLM on every model (host, C from Python): **NOT met** — 1/2" in text
    assert "arena <= TFLM's (whole arenas, host build): not measured — no model measured" in text
    assert "**met**" not in text
    size = {"command": "make -C firmware_c size", "date": "2026-12-03", "toolchain": "arm-none-eabi-gcc 12.2.1",
            "models": ["person_detect.tflite", "x.tflite"],
            "cpus": {"cortex-m4": [{"models": ["person_detect"], "total_text": 38878},
                                   {"models": ["x"], "total_text": 9000}]},
            "goal": {"aim": "runtime .text <= 32768 bytes", "model": "person_detect", "cpu": "cortex-m4",
                     "limit": 32768, "total_text": 38878, "runtime_text": 30000, "libs_text": 8878, "missing": [],
                     "met": False, "nostr_total_text": 31000, "nostr_met": True}}
    (tmp_path / "size.json").write_text(json.dumps(size))
    text = docs.size_section(tmp_path)
    assert "runtime .text <= 32768 bytes: **NOT met** — 38878 bytes (30000 runtime + 8878 libraries)" in text
    assert "without status strings" in text and "31000 bytes: **met**" in text
    assert "| cortex-m4 | 2 | 9000 (x) | 38878 (person_detect) |" in text
    size["cpus"]["cortex-m4"][1]["missing"] = ["ethos-u"]  # an op set the C runtime cannot run: not a figure
    (tmp_path / "size.json").write_text(json.dumps(size))
    assert "| cortex-m4 | 1 | 38878 (person_detect) | 38878 (person_detect) |" in docs.size_section(tmp_path)


def _size_report(*args, env=None):
    return subprocess.run([sys.executable, str(ROOT / "firmware_c" / "tools" / "size_report.py"), *args],
                          capture_output=True, text=True, timeout=120, env=env)


def test_size_report_exit_status_and_no_models(tmp_path):
    proc = _size_report("--cpus", "bogus", "--models-dir", str(tmp_path))
    assert proc.returncode == 0 and "no .tflite models" in proc.stdout  # nothing to measure: no goal, no claim
    (tmp_path / "m.tflite").write_bytes(b"")
    proc = _size_report("--cpus", "bogus", "--models-dir", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.startswith("size_report: ")
    proc = _size_report("--models", "no-such-model", "--models-dir", str(tmp_path))
    assert proc.returncode == 2 and "no model named 'no-such-model'" in proc.stderr


@pytest.mark.parametrize("script", ["c_runtime.py", "interpreter.py", "convert.py"])
def test_benchmarks_return_their_aims_exit_status(script):
    """Each benchmark records its aims (benchmarks/aims.py) and returns Aims.exit_status(), not a fixed 0."""
    text = (ROOT / "benchmarks" / script).read_text()
    assert "from aims import Aims" in text and "exit_status()" in text
    assert "'met' if" not in text  # no verdict printed outside aims.py's truthful rule
