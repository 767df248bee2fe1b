"""Issue 27, a new user's first hour (the rest of an audit): `edge check --link` names each RAM figure and counts
the arena buffer once; detector errors name the model's file; convert_search exits 1 when an aim is not met; the
exported README says the least-RAM plan in words; evaluate() refuses NaN / inf data naming the array and sample;
`edge run` on a .wav takes a dynamic input's length from the file."""

from __future__ import annotations

import shutil
import sys
import subprocess

import numpy as np
import pytest

from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.conftest import ROOT
from tests.test_cli_first_hour_errors import picture
from tests.test_first_hour import edge, one_line_error


def three_output_image_model(path):
    """float [1, 8, 8, 3] -> three FULLY_CONNECTED heads [1, 4], [1, 2], [1, 1]: a detector cannot tell which
    output holds boxes and which scores."""
    g = GraphBuilder()
    x = g.input("x", (1, 8, 8, 3), "FLOAT32")
    flat = g.tensor("flat", (1, 192), "FLOAT32")
    g.op("RESHAPE", [x, g.constant("shape", np.array([1, 192], np.int32))], [flat])
    rng = np.random.default_rng(0)
    for name, n in (("a", 4), ("b", 2), ("c", 1)):
        y = g.tensor(name, (1, n), "FLOAT32")
        g.op("FULLY_CONNECTED", [flat, g.constant(f"w_{name}", rng.standard_normal((n, 192)).astype(np.float32)),
                                 -1], [y])
        g.output(y)
    write_model(g.build(), path)
    return path


# ------------------------------------------------------------------------------------- edge check --link
@pytest.mark.slow  # builds and links the firmware (arm-none-eabi-gcc): ~5 s with the check runners cached
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("arm-none-eabi-nm")),
                    reason="needs the Arm GCC toolchain (apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi)")
@pytest.mark.parametrize("target", ["stm32f746-disco", "qemu-mps2-an386"])
def test_check_link_names_each_ram_figure_and_counts_the_arena_once(tmp_path, target):
    """The linked RAM line against the ELF itself: the arena buffer is the `arena` array's size (nm), the total is
    the sum of the RAM sections (size -A), each byte once; the arena buffer is not called "arena" beside the
    arena the runtime needs (it holds that plus headroom)."""
    from tests.test_cli_first_hour_small import _relu_int8

    from edge_sdk.targets.check import check_model, format_check, linked_ram
    from edge_sdk.targets.profiles import load_profile
    from edge_sdk.tools.flash import firmware_size, section_sizes

    model = _relu_int8(tmp_path / "relu.tflite")
    r = check_model(model, target, stack=False)
    r.apply_link(firmware_size(model, load_profile(target)))
    text = format_check(r)
    elf = r.link["elf"]
    nm = subprocess.run(["arm-none-eabi-nm", "-S", elf], capture_output=True, text=True, check=True).stdout
    arena_array = next(int(f[1], 16) for f in (line.split() for line in nm.splitlines()) if f[-1] == "arena")
    sections = section_sizes(elf)
    ram = linked_ram(r.link)
    assert ram["arena_buffer"] == arena_array >= r.arena_bytes
    assert ram["total"] == sum(sections.get(s, 0) for s in (".data", ".bss", ".board_large", ".stack"))
    line = next(x for x in text.splitlines() if "linked:" in x and "RAM" in x)
    kib = lambda n: f"{n} B" if n < 10240 else f"{n / 1024:.1f} KiB"  # noqa: E731 - as check prints sizes
    assert (f"RAM {kib(ram['total'])} linked: arena buffer {kib(arena_array)} (the {kib(r.arena_bytes)} arena above "
            f"+ headroom) + other statics {kib(ram['statics'])} (.data + .bss: runtime state, I/O buffers) + stack "
            f"{kib(sections['.stack'])} (reserved)") in line, line
    assert "data+bss" not in text and "+ arena " not in text


# ------------------------------------------------------------------------------------- detector errors
def test_a_detector_error_names_the_model_file(tmp_path):
    model = three_output_image_model(tmp_path / "three_heads.tflite")
    p = edge("run", model, picture(tmp_path / "pic.png"), "--task", "detect")
    line = one_line_error(p, 3, "three_heads.tflite", "3 outputs", "--boxes")
    assert "<interpreter>" not in line


# ------------------------------------------------------------------------------------- convert_search's aims
@pytest.mark.slow  # two default int8 conversions of the small YOLO-like stand-in: ~25 s on 2 loaded cores
def test_convert_search_exits_1_when_its_time_aim_is_not_met(monkeypatch, capsys):
    """The same run judged against a goal no conversion meets (0 s): the aim says NOT met and the exit is 1."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import convert_search

    monkeypatch.setattr(convert_search, "SEARCH_GOAL_S", 0.0)
    assert convert_search.main(["--small"]) == 1
    out = capsys.readouterr().out
    assert "aim 'default int8 search <= 0 s': NOT met" in out
    assert "aim 'the accuracy guard's goal met on every run': met (2/2 runs)" in out


def test_convert_search_refuses_zero_pairs(capsys):
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "convert_search.py"), "--pairs", "0"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--pairs must be >= 1" in p.stderr, p.stderr


# ------------------------------------------------------------------------------------- the exported README
# (a whole export, README included, is tests/test_cli_first_hour_small.py::test_exported_readme_shows_c_not_a_python_tuple;
# here the words for each kind of plan, from the plan export itself chooses: a build per export takes ~10 s)
@pytest.mark.parametrize("memory, model, words", [
    ("layer", "fc", "least-RAM patch stage: none (the layer-by-layer plan runs every op whole; "
                    "`edge export --memory min` looks for one)"),
    ("min", "fc", "least-RAM patch stage: none (no stage needs less RAM patch by patch; the layer-by-layer plan)"),
    ("min", "chain", "least-RAM patch stage: nodes {first}..{last} run patch by patch over a {rows}x{cols} grid "
                     "(+{extra} MACs)"),
], ids=["layer", "min-without-a-stage", "min-with-a-stage"])
def test_exported_readme_says_the_patch_stage_in_words(tmp_path, memory, model, words):
    from tests.test_export import _fc_int8, _model_file, _patch_chain

    from edge_sdk.runtime.planner import choose_plan
    from edge_sdk.tools.export import patch_stage_words

    path = _model_file(tmp_path, _fc_int8(), "fc.tflite") if model == "fc" else _patch_chain(tmp_path)[0]
    choice = choose_plan(path.read_bytes(), memory, runtime="c", need=lambda asked: None)  # as export() does
    stage = choice.stage
    assert (stage is None) == (model == "fc")
    if stage is not None:
        words = words.format(first=stage.nodes[0], last=stage.nodes[-1], rows=stage.grid[0], cols=stage.grid[1],
                             extra=stage.extra_macs)
    assert patch_stage_words(memory, choice.plan, stage) == words


# ------------------------------------------------------------------------------------- evaluate() on NaN / inf
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("form", ["npz", "tuple"])
def test_evaluate_api_refuses_nonfinite_data_naming_the_array_and_sample(tmp_path, bad, form):
    """The library call refuses what `edge evaluate` refuses, in the same words (one check: pipeline.nonfinite_in),
    before any sample runs: a NaN sample made the accuracy figures NaN or quietly wrong."""
    from tests.test_evaluate import _data, _fc_model

    from converters import evaluate as ev
    from edge_sdk.cli import main
    from edge_sdk.errors import DataError

    model = _fc_model(tmp_path, quantized=True)
    path, x, y = _data(tmp_path)
    x[7, 2] = x[9, 0] = bad  # samples 7 and 9
    np.savez(path, x=x, y=y)
    data = path if form == "npz" else (x, y)
    with pytest.raises(DataError) as exc:
        ev.evaluate(model, data)
    said = "2 non-finite value(s) (NaN or inf) of 160, the first in sample 7; refused: data must be finite numbers"
    where = f"evaluation data {path}: array 'x': " if form == "npz" else "evaluation data (x, y): array x: "
    assert str(exc.value) == where + said
    if form == "npz":  # the CLI's line says the same
        p = edge("evaluate", model, "--data", path)
        one_line_error(p, 3, str(path), "array 'x': " + said)


# ------------------------------------------------------------------------------------- a .wav of any length
def energy_model(path, rate=None):
    """float samples [1, N] with signature [-1, -1] (raw audio of any length, stored [1, 1]) -> MEAN -> [1, 1]
    -> FULLY_CONNECTED [50, -50] -> logits [1, 2] ("up", "down"); ``rate``: the manifest's audio sample rate."""
    from edge_sdk.model.manifest import write_manifest

    g = GraphBuilder()
    x = g.input("audio", (1, 1), "FLOAT32")
    m = g.tensor("m", (1, 1), "FLOAT32")
    g.op("MEAN", [x, g.constant("axis", np.array([1], np.int32))], [m], keep_dims=True)
    y = g.tensor("y", (1, 2), "FLOAT32")
    g.op("FULLY_CONNECTED", [m, g.constant("w", np.array([[50.0], [-50.0]], np.float32)), -1], [y])
    g.output(y)
    model = g.build()
    sg = model.subgraphs[0]
    sg.tensors[sg.inputs[0]].shape_signature = (-1, -1)
    write_manifest(model, {"labels": ["up", "down"], **({"audio": {"sample_rate": rate}} if rate else {})})
    write_model(model, path)
    return path


def litert_logits(model, samples: np.ndarray) -> np.ndarray:
    """LiteRT's reference kernels on the model resized to the clip's length (int16 samples scaled to [-1, 1))."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=str(model), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    x = (samples.astype(np.float32) / 32768.0).reshape(1, -1)
    it.resize_tensor_input(0, x.shape, strict=True)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def litert_scores(model, samples: np.ndarray) -> np.ndarray:
    """Softmax of litert_logits."""
    y = litert_logits(model, samples).reshape(-1).astype(np.float64)
    return np.exp(y - y.max()) / np.exp(y - y.max()).sum()


@pytest.mark.parametrize("rate_from", ["manifest", "--sample-rate"])
def test_run_takes_a_raw_audio_input_length_from_each_wav(tmp_path, rate_from):
    import json

    from tests.test_pipeline import write_wav

    model = energy_model(tmp_path / "any_length.tflite", rate=8000 if rate_from == "manifest" else None)
    rng = np.random.default_rng(5)
    clips = {"a.wav": (rng.integers(0, 6000, 400) + 2000).astype(np.int16),  # lengths 400, 1234, 400: two models
             "b.wav": (-rng.integers(0, 6000, 1234) - 2000).astype(np.int16),
             "c.wav": (rng.integers(0, 3000, 400) + 100).astype(np.int16)}
    labels = {"a.wav": "up", "b.wav": "down", "c.wav": "up"}
    for name, samples in clips.items():
        write_wav(tmp_path / name, samples, 8000)
    flags = ["--sample-rate", "8000"] if rate_from == "--sample-rate" else []
    p = edge("run", model, *(tmp_path / n for n in clips), *flags, "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["input"] for r in rows] == [str(tmp_path / n) for n in clips]
    for row, (name, samples) in zip(rows, clips.items()):
        want = litert_scores(model, samples)
        got = {x["label"]: x["score"] for x in row["predictions"]}
        np.testing.assert_allclose([got["up"], got["down"]], want, atol=1e-4)
        assert row["predictions"][0]["label"] == labels[name]


def test_run_on_a_wav_asks_for_the_rate_or_refuses_another_one(tmp_path):
    from tests.test_pipeline import write_wav

    write_wav(tmp_path / "clip.wav", np.full(300, 4000, np.int16), 8000)
    write_wav(tmp_path / "empty.wav", np.zeros(0, np.int16), 8000)
    bare = energy_model(tmp_path / "bare.tflite")
    line = one_line_error(edge("run", bare, tmp_path / "clip.wav"), 2, "clip.wav", "bare.tflite",
                          "raw samples of any length", "--sample-rate HZ")
    assert "--input-shape" not in line
    one_line_error(edge("run", bare, tmp_path / "clip.wav", "--sample-rate", "16000"), 3, "clip.wav",
                   "8000 Hz audio but bare.tflite takes 16000 Hz")
    rated = energy_model(tmp_path / "rated.tflite", rate=8000)
    line = one_line_error(edge("run", rated, tmp_path / "empty.wav"), 3, "empty.wav", "no samples")
    assert "stored [1, 1]" not in line  # not the batch-placeholder note: the file is at fault


@pytest.mark.parametrize("frames", [3, 11])
def test_a_minus_one_leading_npy_input_takes_its_rows(tmp_path, frames):
    """[-1, C]: a .npy [T, C] runs at [T, C], as LiteRT resized to it runs it once (frames x features, or a batch:
    either way the rows are the leading size), no --input-shape needed; scores == softmax of LiteRT's outputs."""
    import json

    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from edge_sdk.model import read_model
    from tests.test_input_shapes import log_mel_like

    model = read_model(log_mel_like((-1, 8)))
    model.subgraphs[0].tensors[model.subgraphs[0].inputs[0]].shape = (1, 8)
    path = tmp_path / "frames.tflite"
    write_model(model, path)
    x = np.random.default_rng(frames).standard_normal((frames, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    p = edge("run", path, tmp_path / "x.npy", "--json", "--top-k", "3")
    assert p.returncode == 0, p.stderr
    it = Interpreter(model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.resize_tensor_input(0, x.shape, strict=True)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    y = it.get_tensor(it.get_output_details()[0]["index"]).reshape(-1).astype(np.float64)
    want = np.exp(y - y.max()) / np.exp(y - y.max()).sum()
    got = json.loads(p.stdout)[0]["predictions"]
    np.testing.assert_allclose([g["score"] for g in got], np.sort(want)[::-1][:3], atol=1e-5)
    p = edge("run", path, tmp_path / "x.npy", "--input-shape", f"x:{frames},8")
    assert p.returncode == 0, p.stderr
