"""convert(..., target=...) does each costly thing once: the device profile is loaded once (one object serves the
GELU fusion, the widening rule and the check), the model travels as a Model object and becomes .tflite bytes once
(the bytes the check measures are the result); and the report's arena line is the check's figure for that
target's runtime, or, without a target, says it is the Python interpreter's plan."""

from __future__ import annotations

import pytest

from converters import convert
from converters.report import format_conversion
from edge_sdk.model import read_model, reader, write_model, writer
from edge_sdk.runtime.interpreter import Interpreter
from edge_sdk.runtime.planner import arena_words
from edge_sdk.targets import profiles
from tests.test_quantize import _samples, cnn_model


@pytest.fixture(scope="module")
def source():
    """A float CNN as .tflite bytes (read once by the importer) and its calibration samples."""
    model = cnn_model()
    return write_model(model), _samples(model, 20)


def _count(monkeypatch) -> dict[str, list]:
    """Counters of profile loads (a profile file resolved with its parents: one per load_profile of a name or
    path) and of model serialisations and parses (every write_model / read_model goes through these two)."""
    seen = {"profiles": [], "writes": [], "reads": []}
    resolve, write, read = profiles._resolve, writer.write_model, reader.read_model

    def counted_resolve(path, stack=()):
        if not stack:  # a parent resolved for its child is part of the same load
            seen["profiles"].append(path.stem)
        return resolve(path, stack)

    def counted_write(model, path=None):
        seen["writes"].append(path)
        return write(model, path)

    def counted_read(src):
        seen["reads"].append(type(src).__name__)
        return read(src)

    monkeypatch.setattr(profiles, "_resolve", counted_resolve)
    monkeypatch.setattr(writer, "write_model", counted_write)
    monkeypatch.setattr(reader, "read_model", counted_read)
    return seen


@pytest.mark.parametrize("target", ["host-linux", "rp2040-pico"])
def test_one_profile_load_one_serialisation(source, target, monkeypatch):
    data, calib = source
    seen = _count(monkeypatch)
    res = convert(data, target=target, calibration=calib, min_snr=10)  # precision auto: the widening rule runs
    assert res.report["guard"]["met"] and not res.report["guard"]["widened"]
    assert res.report["check"]["verdict"] != "fails"
    assert seen["profiles"] == [target]
    # one serialisation: the final bytes, which the check measured; two parses: the importer's of the source
    # bytes and the check's own (it runs the model read back, as from a file)
    assert seen["writes"] == [None] and len(seen["reads"]) == 2
    assert res.report["output"]["bytes"] == len(res.tflite) == len(write_model(res.model))


def test_counters_see_every_load_and_serialisation(source, monkeypatch):
    """The counters are not vacuous: a profile loaded by name and a write/read round trip are each counted."""
    data, _ = source
    seen = _count(monkeypatch)
    profiles.load_profile("host-linux")
    profiles.load_profile(profiles.load_profile("rp2040-pico"))  # a Profile is taken as it is
    from edge_sdk.model import read_model

    read_model(write_model(read_model(data)))
    assert seen["profiles"] == ["host-linux", "rp2040-pico"]
    assert len(seen["writes"]) == 1 and len(seen["reads"]) == 2


@pytest.mark.parametrize("target", ["host-linux", "rp2040-pico"])
def test_arena_line_is_the_targets_runtime_arena(source, target):
    data, calib = source
    res = convert(data, target=target, calibration=calib, min_snr=10)
    out, check = res.report["output"], res.report["check"]
    assert out["arena_bytes"] == check["arena_bytes"] is not None
    runtime = "C runtime" if check["runtime"] == "c" else "Python interpreter"
    assert out["arena_source"].startswith(f"target {target}: the {runtime}'s arena, {check['memory_plan']} plan")
    assert check["ram_source"] in out["arena_source"]
    assert out["arena_bytes"] == check["arena_size"]  # no packed copies on these targets: the same figure
    lines = format_conversion(res.report).splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("arena"))
    # the words every command prints (planner.arena_words, issue 27 point 3), then how the check found it
    assert lines[at] == arena_words(check["arena_size"], check["arena_where"])
    assert lines[at + 1] == f"           {out['arena_source']}"
    assert "Python tensor plan" not in "\n".join(lines)
    if check["runtime"] == "c":  # the C runtime's whole arena, not the Python interpreter's tensor plan
        interp = Interpreter(model_content=res.tflite)
        interp.allocate_tensors()
        assert out["arena_bytes"] != interp.arena_size


def test_arena_line_without_target_is_the_interpreters_plan(source):
    data, calib = source
    res = convert(data, calibration=calib, min_snr=10)
    out = res.report["output"]
    interp = Interpreter(model_content=res.tflite)
    interp.allocate_tensors()
    assert out["arena_bytes"] == interp.arena_size
    assert "Python interpreter" in out["arena_source"] and "no target" in out["arena_source"]
    text = format_conversion(res.report)
    # the interpreter's tensor plan named as such, not as an arena (issue 27 point 3)
    assert f"plan       Python tensor plan {interp.arena_size} B (the Python interpreter's activations" in text
    assert not any(ln.startswith("arena") for ln in text.splitlines())


def test_a_loaded_profile_is_taken_as_it_is(source, monkeypatch):
    data, calib = source
    profile = profiles.load_profile("host-linux")
    seen = _count(monkeypatch)
    res = convert(data, target=profile, calibration=calib, min_snr=10)
    assert seen["profiles"] == [] and res.report["check"]["target"] == "host-linux"
    assert res.manifest["target"] == "host-linux"


def test_cli_convert_loads_the_profile_once(source, tmp_path, monkeypatch, capsys):
    """`edge convert --target` checks the profile before the work starts and hands that Profile to convert():
    one load for the whole command."""
    from edge_sdk import cli

    data, calib = source
    src, out = tmp_path / "m.tflite", tmp_path / "q.tflite"
    src.write_bytes(data)
    import numpy as np

    np.save(tmp_path / "calib.npy", np.stack([s[0] if isinstance(s, (list, tuple)) else s for s in calib]))
    seen = _count(monkeypatch)
    code = cli.main(["convert", str(src), "-o", str(out), "--target", "rp2040-pico", "--calib",
                     str(tmp_path / "calib.npy"), "--min-snr", "10"])
    assert code == 0, capsys.readouterr()
    assert seen["profiles"] == ["rp2040-pico"] and out.exists()
    # one serialisation, the bytes written are those the check measured; three parses: the command's check of SRC
    # (a damaged file named before any work), the importer's and the check's own
    assert seen["writes"] == [None] and len(seen["reads"]) == 3
    assert out.read_bytes() == write_model(read_model(out))
