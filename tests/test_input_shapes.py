"""Dynamic input shapes (issue 23 point 3): `--input-shape NAME:D0,...` on run, bench, serve, check, flash,
profile, export and deploy; a -1 beyond the batch axis without it stops with one line naming the input, its
signature and the flag (exit 2), never a kernel error at the placeholder shape; resize_tensor_input re-plans on
both backends."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from edge_sdk import cli
from edge_sdk.errors import ModelError, UsageError
from edge_sdk.model import read_model, write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.input_shapes import dynamic_inputs, shaped_model, shaped_model_path
from edge_sdk.runtime.interpreter import Interpreter

BINS = 8


def log_mel_like(signature=(-1, -1)) -> bytes:
    """A front end shaped like the issue's: x [frames, bins] with shape signature [-1, -1] (stored [1, 1]) ->
    RESHAPE [1, frames, 8, 1] -> CONV_2D 3x3 VALID (2 filters) -> RESHAPE [1, -1]. At the stored [1, 1] no
    kernel can run it; at [4, 8] the output is [1, 2 * 6 * 2] = [1, 24]."""
    g = GraphBuilder()
    x = g.input("x", (1, 1), "FLOAT32")
    shape4 = g.constant("shape4", np.array([1, -1, BINS, 1], np.int32))
    x4 = g.tensor("x4", (1, 1, BINS, 1), "FLOAT32")
    g.op("RESHAPE", [x, shape4], [x4])
    w = g.constant("w", (np.arange(18, dtype=np.float32).reshape(2, 3, 3, 1) - 9) / 10)
    b = g.constant("b", np.array([0.5, -0.5], np.float32))
    c = g.tensor("c", (1, 1, 6, 2), "FLOAT32")
    g.op("CONV_2D", [x4, w, b], [c], padding="VALID", stride_w=1, stride_h=1)
    flat = g.constant("flat", np.array([1, -1], np.int32))
    y = g.tensor("y", (1, 12), "FLOAT32")
    g.op("RESHAPE", [c, flat], [y])
    g.output(y)
    model = g.build()
    sg = model.subgraphs[0]
    sg.tensors[sg.inputs[0]].shape_signature = tuple(signature)
    return write_model(model)


def _reference(frames: np.ndarray) -> np.ndarray:
    """The model's output for x [frames, 8], computed here (conv 3x3 VALID, 2 filters, then flattened)."""
    w = (np.arange(18, dtype=np.float64).reshape(2, 3, 3) - 9) / 10
    f, _ = frames.shape
    out = np.zeros((f - 2, BINS - 2, 2))
    for i in range(f - 2):
        for j in range(BINS - 2):
            for k in range(2):
                out[i, j, k] = (frames[i:i + 3, j:j + 3] * w[k]).sum() + (0.5, -0.5)[k]
    return out.reshape(1, -1)


MESSAGE = "input 'x' has shape signature [-1, -1] (stored [1, 1]): give its shape with --input-shape x:D0,D1"


# ------------------------------------------------------------------------------------------ the library
def test_shaped_model_sets_the_shape_and_the_interpreters_run_it(runtime):
    from tests.oprunner import run_on

    data = log_mel_like()
    assert dynamic_inputs(read_model(data)) == [("x", (-1, -1), (1, 1))]
    shaped = shaped_model(data, {"x": (4, BINS)})
    t = read_model(shaped).subgraphs[0].tensors[0]
    assert tuple(t.shape) == (4, BINS) and tuple(t.shape_signature) == (4, BINS)
    assert shaped_model(shaped) is shaped  # static now: nothing to ask, nothing to change
    frames = np.random.default_rng(3).standard_normal((4, BINS)).astype(np.float32)
    out = run_on(runtime, shaped, [frames])[0]
    np.testing.assert_allclose(out, _reference(frames), rtol=1e-5, atol=1e-5)
    assert shaped_model(data, (4, BINS)) == shaped  # a bare shape for a one-input model


def test_a_minus_one_without_a_shape_is_one_usage_line():
    with pytest.raises(UsageError) as e:
        shaped_model(log_mel_like())
    assert str(e.value) == MESSAGE


def test_the_python_api_keeps_litert_behaviour_and_allocates_at_the_stored_shape():
    """LiteRT's Interpreter allocates a model at its stored shape, whatever the signature says: ours too (here
    the stored [1, 1] cannot run, so allocate_tensors raises the kernel's own error); the tools ask instead."""
    it = Interpreter(model_content=log_mel_like())
    with pytest.raises(ModelError, match="RESHAPE"):
        it.allocate_tensors()
    assert list(it.get_input_details()[0]["shape"]) == [1, 1]
    assert list(it.get_input_details()[0]["shape_signature"]) == [-1, -1]
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    peer = litert.Interpreter(model_content=log_mel_like(),
                              experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    assert list(peer.get_input_details()[0]["shape"]) == [1, 1]
    assert list(peer.get_input_details()[0]["shape_signature"]) == [-1, -1]
    with pytest.raises(RuntimeError, match="RESHAPE"):
        peer.allocate_tensors()
    peer.resize_tensor_input(0, [4, BINS], strict=True)  # as ours: the shape given, then it runs
    peer.allocate_tensors()
    assert list(peer.get_output_details()[0]["shape"]) == [1, 24]


@pytest.mark.parametrize("given, needle", [
    ({"y": (4, BINS)}, "--input-shape: the model has no input 'y' (inputs: x)"),
    ({"x": (4, BINS, 1)}, "--input-shape: input 'x' has shape signature [-1, -1] (rank 2); [4, 8, 1] has rank 3"),
    ({"x": (0, BINS)}, "dims must be positive"),
])
def test_misuse_names_the_flag(given, needle):
    with pytest.raises(UsageError) as e:
        shaped_model(log_mel_like(), given)
    assert needle in str(e.value)


def test_a_dimension_the_signature_fixes_cannot_change():
    with pytest.raises(UsageError) as e:
        shaped_model(log_mel_like((-1, BINS)), {"x": (4, 5)})
    assert str(e.value) == ("--input-shape: input 'x' has shape signature [-1, 8]: dim 1 is fixed at 8, not 5 "
                            "(only -1 dims can be given)")


def test_a_dynamic_batch_alone_runs_at_its_stored_size():
    """TF exports (hello_world's [-1, 1]) and `edge convert` (a dynamic batch alone becomes 1) leave -1 in the
    batch axis: the stored size stands for it, nothing is asked."""
    data = log_mel_like((-1, BINS))
    assert dynamic_inputs(read_model(data)) == []
    assert shaped_model(data) is data


def test_signature_names_select_inputs():
    """A SignatureDef's input name selects the input as well as the tensor's name, and is the name printed."""
    from edge_sdk.model.types import SignatureDef

    model = read_model(log_mel_like())
    sg = model.subgraphs[0]
    sg.tensors[sg.inputs[0]].name = "serving_default_frames:0"
    model.signature_defs = [SignatureDef("serving_default", 0, {"frames": sg.inputs[0]}, {"out": sg.outputs[0]})]
    data = write_model(model)
    with pytest.raises(UsageError, match=r"^input 'frames' has shape signature \[-1, -1\]"):
        shaped_model(data)
    a = shaped_model(data, {"frames": (5, BINS)})
    b = shaped_model(data, {"serving_default_frames:0": (5, BINS)})
    assert a == b and tuple(read_model(a).subgraphs[0].tensors[sg.inputs[0]].shape) == (5, BINS)


def test_shaped_model_path_keeps_the_file_name(tmp_path):
    src = tmp_path / "fe.tflite"
    src.write_bytes(log_mel_like())
    out = shaped_model_path(src, {"x": (4, BINS)})
    assert out != src and out.name == "fe.tflite" and out.read_bytes() == shaped_model(src.read_bytes(), {"x": (4, BINS)})
    static = tmp_path / "static.tflite"
    static.write_bytes(shaped_model(src.read_bytes(), {"x": (4, BINS)}))
    assert shaped_model_path(static) == static


# ------------------------------------------------------------------------------------------ resize re-plans
def test_resize_tensor_input_re_prepares_and_re_plans(runtime):
    """Both backends: resize, allocate again, the arena grows with the input and the result is the new shape's."""
    from edge_sdk.runtime.interpreter import Interpreter as Interp

    it = Interp(model_content=log_mel_like(), backend=runtime)  # the signature's -1s: strict resizes allowed
    it.resize_tensor_input(0, (4, BINS), strict=True)
    it.allocate_tensors()
    small = it.arena_size
    it.resize_tensor_input(0, (40, BINS), strict=True)
    it.allocate_tensors()
    assert it.arena_size > small
    frames = np.random.default_rng(4).standard_normal((40, BINS)).astype(np.float32)
    it.set_tensor(0, frames)
    it.invoke()
    out = it.get_tensor(it.get_output_details()[0]["index"])
    np.testing.assert_allclose(out, _reference(frames), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------ the CLI
COMMANDS = [
    ["check", "{m}", "--target", "raspberry-pi-4"],
    ["run", "{m}", "{img}"],  # an image: no size for x (a .npy / .npz gives it: test_walk23c_paths)
    ["bench", "{m}", "--runs", "1", "--warmup", "0"],
    ["serve", "{m}", "--port", "0"],
    ["flash", "{m}"],
    ["profile", "{m}", "--target", "qemu-mps2-an386"],
    ["export", "{m}", "--target", "host-linux", "--format", "make", "-o", "{out}"],
    ["deploy", "{m}", "--host", "nobody@127.0.0.1"],
]


def _argv(cmd, tmp_path, model, extra=()):
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(5).standard_normal((4, BINS)).astype(np.float32))
    img = tmp_path / "x.png"
    Image.new("L", (BINS, 4)).save(img)
    return [a.format(m=model, x=x, img=img, out=tmp_path / "export") for a in cmd] + list(extra)


# `edge serve` without the shape serves each request at its own (tests/test_walk23d_paths.py): it asks for none
ASKING = [c for c in COMMANDS if c[0] != "serve"]


@pytest.mark.parametrize("cmd", ASKING, ids=[c[0] for c in ASKING])
def test_every_command_asks_for_the_shape_in_one_line(cmd, tmp_path, capsys):
    model = tmp_path / "fe.tflite"
    model.write_bytes(log_mel_like())
    assert cli.main(_argv(cmd, tmp_path, model)) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"edge {cmd[0]}: error: {MESSAGE}"]


@pytest.mark.parametrize("cmd", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_every_command_refuses_an_unknown_input_name(cmd, tmp_path, capsys):
    model = tmp_path / "fe.tflite"
    model.write_bytes(log_mel_like())
    assert cli.main(_argv(cmd, tmp_path, model, ["--input-shape", "y:4,8"])) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"edge {cmd[0]}: error: --input-shape: the model has no input 'y' (inputs: x)"]


def test_check_run_and_bench_take_the_shape(tmp_path, capsys):
    import json

    model = tmp_path / "fe.tflite"
    model.write_bytes(log_mel_like())
    shape = ["--input-shape", "x:4,8"]
    assert cli.main(["check", str(model), "--target", "raspberry-pi-4", "--json", *shape]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "runs", report
    x = tmp_path / "x.npy"
    frames = np.random.default_rng(5).standard_normal((4, BINS)).astype(np.float32)
    np.save(x, frames)
    for backend in ("python", "c"):
        if backend == "c":
            from edge_sdk.runtime import c_interpreter

            if not c_interpreter.available()[0]:
                continue
        assert cli.main(["run", str(model), str(x), "--json", "--backend", backend, "--top-k", "1", *shape]) == 0
        got = json.loads(capsys.readouterr().out)[0]
        logits = _reference(frames)[0]  # the 12 outputs; `edge run` scores them with a softmax
        want = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        assert got["predictions"][0]["score"] == pytest.approx(float(want.max()), rel=1e-4, abs=1e-6)
    assert cli.main(["bench", str(model), "--runs", "2", "--warmup", "0", "--json", "--backend", "python",
                     *shape]) == 0
    bench = json.loads(capsys.readouterr().out)
    assert bench["runs"] == 2


def test_the_flag_is_on_every_command_and_not_twice():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in ("convert", *(c[0] for c in COMMANDS)):
        flags = [a for a in sub.choices[name]._actions if "--input-shape" in a.option_strings]
        assert len(flags) == 1, name
        assert flags[0].type is cli._shape_arg, name


def test_an_unreadable_model_is_left_to_the_tool_unless_shapes_are_asked_for():
    junk = b"\x00" * 64
    assert shaped_model(junk) is junk
    with pytest.raises(ModelError):
        shaped_model(junk, {"x": (4, BINS)})
