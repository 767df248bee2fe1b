"""Issue 23's walk, the leftovers of session 12 (session 13, walk23c), each pinned cheaply (in-process):

- `edge bench` took no input file: `--inputs` takes what `edge run` takes (a .npy for one input, an .npz of every
  input by name or arg_i) on both backends, and the arrays' shapes fix the dynamic sizes as --input-shape would;
  a file that does not fit is one line naming the file, the array and the input, exit 2.
- `edge run` on a model with a -1 beyond the batch axis asked for --input-shape even when its .npz said the
  size: the files' shapes now fix it (bench's rule), and --backend c is walked on such a multi-input model
  against --backend python and LiteRT; `edge profile --inputs` takes the size the same way.
- the C runtime's refusal of a raw UINT8 tensor names the tensor (index, name), and the Python side the fix.
- SerialLink.load_model presents a legacy UINT8 model as every C path does and flips its I/O at the link (the
  emulator, and a flashed QEMU board through expect_model).
- CInterpreter.arena_parts measures the portable kernels' scratch in a child process (no process-wide SIMD
  level toggled; a plan-only prepare had none at all).
- `edge serve` of a [-1, -1] input at --input-shape: a request of another size is one 400 line (one was a 500).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from edge_sdk import cli
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.conftest import needs_c_runtime
from tests.test_walk23_paths import _fc_loop_model


def two_input_sequence_model() -> bytes:
    """x [1, -1, 4] (a sequence of any length, stored [1, 1, 4]) and a gain g [1, 1, 4]: y = x * g [1, T, 4] and
    z = MEAN(y over T) [1, 4]: two inputs, one dynamic, two outputs."""
    g = GraphBuilder()
    x = g.input("x", (1, 1, 4), "FLOAT32")
    gain = g.input("g", (1, 1, 4), "FLOAT32")
    y = g.tensor("y", (1, 1, 4), "FLOAT32")
    g.op("MUL", [x, gain], [y], fused_activation_function="NONE")
    z = g.tensor("z", (1, 4), "FLOAT32")
    g.op("MEAN", [y, g.constant("axis", np.array([1], np.int32))], [z], keep_dims=False)
    g.output(y, z)
    model = g.build()
    model.subgraphs[0].tensors[model.subgraphs[0].inputs[0]].shape_signature = (1, -1, 4)
    return write_model(model)


@pytest.fixture(scope="module")
def walk(tmp_path_factory):
    """The sequence model and its feeds: by name at length 5, by arg_i at length 3 without the batch axes."""
    root = tmp_path_factory.mktemp("walk23c")
    model = root / "seq.tflite"
    model.write_bytes(two_input_sequence_model())
    rng = np.random.default_rng(2323)
    named = {"x": rng.standard_normal((1, 5, 4)).astype(np.float32),
             "g": rng.standard_normal((1, 1, 4)).astype(np.float32)}
    args = {"arg_0": rng.standard_normal((3, 4)).astype(np.float32),
            "arg_1": rng.standard_normal((1, 4)).astype(np.float32)}
    np.savez(root / "named.npz", **named)
    np.savez(root / "args.npz", **args)
    return {"root": root, "model": model, "named": named, "args": args}


# ------------------------------------------------------------------------------------------------ bench --inputs
@pytest.mark.parametrize("backend", ["python", pytest.param("c", marks=needs_c_runtime)])
def test_bench_feeds_an_npz_and_its_shapes_fix_the_dynamic_input(walk, backend, capsys):
    feed = walk["root"] / "named.npz"
    assert cli.main(["bench", str(walk["model"]), "--inputs", str(feed), "--backend", backend, "--runs", "2",
                     "--warmup", "0", "--profile-runs", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["inputs"] == str(feed) and report["backend"] == backend
    assert report["input_shapes"] == [{"name": "x", "shape": [1, 5, 4]}, {"name": "g", "shape": [1, 1, 4]}]
    assert [o["output_shape"] for o in report["ops"]] == [[1, 5, 4], [1, 4]]
    # arg_i keys in signature order, each without its batch axis of one: length 3
    assert cli.main(["bench", str(walk["model"]), "--inputs", str(walk["root"] / "args.npz"), "--backend",
                     backend, "--runs", "1", "--warmup", "0", "--profile-runs", "1"]) == 0
    out = capsys.readouterr().out
    assert f"inputs:    {walk['root'] / 'args.npz'} (x 1x3x4, g 1x1x4)" in out.splitlines()


@pytest.mark.parametrize("backend", ["python", pytest.param("c", marks=needs_c_runtime)])
def test_bench_runs_the_arrays_of_the_file_not_random_ones(tmp_path, backend):
    """while i < 3: x = FC(x); i += 1 -- the loop runs as often as the file's i says (random int32 would not)."""
    from edge_sdk.tools.bench import run_benchmark

    feed = tmp_path / "loop.npz"
    np.savez(feed, i=np.array([2], np.int32), x=np.ones((1, 4), np.float32))
    report = run_benchmark(_fc_loop_model(), runs=1, warmup=0, backend=backend, profile_runs=1, inputs=feed)
    fc = next(o for o in report["ops"] if o["op"] == "FULLY_CONNECTED")
    assert fc["macs"] == 16  # one body call of 16 MACs: i = 2 from the file
    one = tmp_path / "x.npy"
    np.save(one, np.ones((1, 4), np.float32))
    with pytest.raises(cli.UsageError, match=r"x\.npy: <bytes> takes 2 inputs \('i' \[1\] int32, 'x' \[1,4\]"):
        run_benchmark(_fc_loop_model(), runs=1, warmup=0, backend=backend, inputs=one)


@pytest.mark.parametrize("arrays, flags, line", [
    ({"x": np.zeros((1, 5, 4), np.float32)}, [],
     "{f}: no array for input 'g' [1,1,4] float32 (keys: input tensor names, or arg_0, arg_1.. in signature order; "
     "the file has x)"),
    ({"x": np.zeros((1, 5, 3), np.float32), "g": np.zeros((1, 1, 4), np.float32)}, [],
     "{f}: array 'x' shaped [1, 5, 3] float32 for input 'x' [1,-1,4] float32"),
    ({"x": np.zeros((5, 4, 1, 1), np.float32), "g": np.zeros((1, 1, 4), np.float32)}, [],
     "{f}: array 'x' shaped [5, 4, 1, 1] float32 for input 'x' [1,-1,4] float32"),
    ({"x": np.zeros((1, 5, 4), np.float32), "g": np.zeros((1, 2, 4), np.float32)}, [],
     "{f}: array 'g' shaped [1, 2, 4] float32 for input 'g' [1,1,4] float32"),
    ({"x": np.zeros((1, 5, 4), np.float32), "g": np.zeros((1, 1, 4), np.float32)}, ["--input-shape", "x:1,6,4"],
     "{f}: array 'x' shaped [1, 5, 4] float32 for input 'x' [1,-1,4] float32 (--input-shape 1,6,4)"),
    ({"x": np.zeros((1, 5, 4), np.float32), "g": np.zeros((1, 1, 4)), "h": np.zeros(1)}, [],
     "{f}: array 'h' names no input of {m} (inputs: 'x' [1,-1,4] float32, 'g' [1,1,4] float32; keys: input "
     "tensor names, or arg_0, arg_1.. in signature order)"),
    ({"x": np.zeros((1, 5, 4), np.float32), "g": np.zeros((1, 1, 4), np.complex64)}, [],
     "{f}: array 'g': cannot feed complex64 values to the float32 input 'g'"),
])
@pytest.mark.parametrize("backend", ["python", pytest.param("c", marks=needs_c_runtime)])
def test_bench_names_the_input_a_file_does_not_fit_and_exits_2(walk, tmp_path, capsys, backend, arrays, flags,
                                                               line):
    feed = tmp_path / "in.npz"
    np.savez(feed, **arrays)
    argv = ["bench", str(walk["model"]), "--inputs", str(feed), "--backend", backend, "--runs", "1", *flags]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        "edge bench: error: " + line.format(f=feed, m=walk["model"].name)]


def test_bench_says_where_input_files_go(walk, capsys):
    feed = walk["root"] / "named.npz"
    assert cli.main(["bench", str(walk["model"]), str(feed)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"edge bench: error: {feed}: input data goes with --inputs (edge bench MODEL --inputs {feed})"]
    # with --host the file is checked here and copied to the device (tests/test_walk23d_paths.py)
    assert cli.main(["bench", str(walk["model"]), "--inputs", str(feed), "--matrix"]) == 2
    assert "--inputs and --trace/--csv/--plot are for one model" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ run --backend c
@needs_c_runtime
def test_run_an_npz_on_the_c_runtime_matches_python_and_litert(walk, capsys):
    """`edge run seq.tflite named.npz args.npz --backend c` as a user runs it: no --input-shape (each file's shapes
    fix the sequence length: 5, then 3), every output against --backend python and LiteRT on the same shapes."""
    from edge_sdk.model.input_shapes import shaped_model
    from tests.peers import run_litert
    from tests.simd_common import assert_close_of_range

    files = [str(walk["root"] / "named.npz"), str(walk["root"] / "args.npz")]
    got = {}
    for backend in ("c", "python"):
        assert cli.main(["run", str(walk["model"]), *files, "--backend", backend, "--json"]) == 0
        got[backend] = json.loads(capsys.readouterr().out)
        assert [r["runtime"] for r in got[backend]] == [backend, backend]
    feeds = [[walk["named"]["x"], walk["named"]["g"]], [walk["args"]["arg_0"][None], walk["args"]["arg_1"][None]]]
    for k, (steps, xg) in enumerate(zip((5, 3), feeds)):
        c_rows, py_rows = got["c"][k]["outputs"], got["python"][k]["outputs"]
        assert [(o["name"], o["shape"]) for o in c_rows] == [("y", [1, steps, 4]), ("z", [1, 4])]
        litert = run_litert(shaped_model(walk["model"].read_bytes(), {"x": (1, steps, 4)}), xg)
        for c_out, py_out, ref in zip(c_rows, py_rows, litert):
            assert_close_of_range(np.array(c_out["values"], np.float32), ref, f"C {c_out['name']} vs LiteRT", 1e-4)
            assert_close_of_range(np.array(py_out["values"], np.float32), ref, f"python {py_out['name']}", 1e-4)
    # the text output says the runtime once for the files run on one shaped model each
    assert cli.main(["run", str(walk["model"]), *files, "--backend", "c"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out.count("runtime: c (--backend c: C runtime runs all 2 nodes)") == 2
    assert f"{files[0]}:" in out and "  y [1,5,4] float32:" in out and "  y [1,3,4] float32:" in out


def test_run_still_names_the_flag_when_no_file_gives_the_size(walk, tmp_path, capsys):
    img = tmp_path / "x.png"
    from PIL import Image

    Image.new("RGB", (4, 4)).save(img)
    assert cli.main(["run", str(walk["model"]), str(img), "--backend", "python"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "edge run: error: input 'x' has shape signature [1, -1, 4] (stored [1, 1, 4]): give its shape with "
        "--input-shape x:D0,D1,D2"]


# ------------------------------------------------------------------------------------------------ raw UINT8 refusal
@needs_c_runtime
def test_the_c_runtime_names_the_raw_uint8_tensor_it_refuses(monkeypatch):
    """Handed a legacy UINT8 model's own bytes (not presented as INT8), the C runtime's one line names the node
    and the tensor (index and name) it cannot run, and the Python side says how every edge tool presents it."""
    from edge_sdk.errors import UnsupportedOpError
    from edge_sdk.runtime import c_loaded
    from edge_sdk.runtime.c_interpreter import CInterpreter
    from edge_sdk.tools.run_backend import c_refusal
    from tests.test_ops_uint8 import CASES

    model, _ = CASES["ADD"][:2]  # ADD on UINT8 inputs and output
    monkeypatch.setattr(c_loaded, "c_model", lambda m, data: (m, data, frozenset()))
    interp = CInterpreter(model_content=model)
    with pytest.raises(UnsupportedOpError) as err:
        interp.allocate_tensors()
    text = str(err.value)
    info, msg = interp.error()
    sg = interp.model.subgraphs[0]
    t = info["tensor"]
    assert info["node"] == 0 and t == sg.operators[0].inputs[0] and sg.tensors[t].type == "UINT8", info
    assert msg.startswith(f"node 0 (ADD code 0 v1): tensor {t} '{sg.tensors[t].name}' UINT8: unsupported tensor "
                          "type"), msg
    assert "\n" not in text and text.endswith("as every edge tool hands it over [EDGE_UNSUPPORTED_TYPE]"), text
    assert "a legacy quantized_uint8 tensor" in text and "c_loaded.c_bytes" in text
    assert c_refusal(err.value).startswith(f"C runtime refuses node 0 ADD: tensor {t} '{sg.tensors[t].name}' UINT8")


# ------------------------------------------------------------------------------------------------ SerialLink UINT8
def _uint8_add():
    """tests/test_ops_uint8's ADD: two UINT8 inputs (zero points 120, 130), a UINT8 output; and its inputs."""
    from tests.test_ops_uint8 import CASES

    model, inputs = CASES["ADD"]
    return model, [np.asarray(x, np.uint8) for x in inputs]


def _litert(model, inputs):
    from tests.peers import run_litert

    return run_litert(model, inputs)


def test_load_model_presents_a_uint8_model_and_the_link_flips_its_io():
    """SerialLink.load_model sent a legacy UINT8 model's own bytes: now the bytes every C path runs
    (c_loaded.c_bytes), and the link declares, takes and returns the model's UINT8 I/O (the emulator device runs
    what it is sent, as the C runtime would run the presented model)."""
    from edge_sdk.device.emulator import DeviceEmulator
    from edge_sdk.device.serial_link import SerialLink
    from edge_sdk.runtime import c_loaded

    model, inputs = _uint8_add()
    presented, pairs = c_loaded.c_bytes(model)
    with DeviceEmulator(None, max_frame=256) as emu:  # listening
        link = SerialLink(emu.url, timeout=0.5)
        try:
            h = link.load_model(model)
            assert h.model_sha256 == __import__("hashlib").sha256(presented).digest()  # the device runs INT8
            assert link.presented_io.inputs == (0, 1) and link.presented_io.outputs == (0,)
            info = link.info()
            assert [(t.type, t.zero_point) for t in info.inputs] == [("UINT8", 120), ("UINT8", 130)]
            assert (info.outputs[0].type, info.outputs[0].zero_point) == ("UINT8", 127)
            for k, x in enumerate(inputs):
                link.set_input(k, x)
            link.invoke()
            out = link.get_output(0)
            assert out.dtype == np.uint8
            np.testing.assert_array_equal(out, _litert(model, inputs)[0])
            link.expect_model(model)  # the model's own bytes: the device runs their presentation
            link.expect_model(presented)
            assert link.presented_io is not None  # presenting presented bytes changes nothing
        finally:
            link.close()


@pytest.mark.slow
@pytest.mark.skipif(not (__import__("shutil").which("qemu-system-arm") and __import__("shutil").which(
    "arm-none-eabi-gcc")), reason="needs qemu-system-arm and arm-none-eabi-gcc (make system-deps)")
def test_a_flashed_uint8_model_on_the_qemu_board_through_the_link(state, tmp_path):
    """edge flash embeds the presented model; a SerialLink handed the model's own bytes (expect_model) flips its
    UINT8 I/O: the board's outputs equal LiteRT's bit for bit; load_model on this firmware (no LOAD_MODEL) is one
    line saying so."""
    from edge_sdk.device.serial_link import SerialLink
    from edge_sdk.tools.flash import flash

    model, inputs = _uint8_add()
    path = tmp_path / "add_uint8.tflite"
    path.write_bytes(model)
    fw = flash(path, "qemu-mps2-an386", build_dir=tmp_path / "fw")
    link = SerialLink(fw.port)
    try:
        link.expect_model(model)
        assert [t.type for t in link.info().inputs] == ["UINT8", "UINT8"]
        for k, x in enumerate(inputs):
            link.set_input(k, x)
        link.invoke(1)
        np.testing.assert_array_equal(link.get_output(0), _litert(model, inputs)[0])
        with pytest.raises(cli.DeviceError, match="no LOAD_MODEL"):
            link.load_model(model)
    finally:
        link.close()


# ------------------------------------------------------------------------------------------------ review item 5
@needs_c_runtime
@pytest.mark.parametrize("name, portable", [("dtln_noise_suppression.tflite", 784), ("trained_lstm_int8.tflite", 96)])
def test_arena_parts_counts_the_portable_kernels_scratch_without_touching_the_simd_level(name, portable,
                                                                                         monkeypatch):
    """arena_parts' fast-path scratch is the scratch beyond the portable kernels' (a child edge-run-c at
    EDGE_SIMD_LEVEL=0, fully prepared). It was measured plan-only, which prepares no kernel: every byte of scratch
    was called fast-path scratch (dtln: 784 B the portable kernels need too), and the process-wide SIMD level was
    set to 0 and back around it (a prepare on another thread in between got the portable kernels)."""
    from edge_sdk.runtime.c_interpreter import CInterpreter
    from tests.conftest import shared_model

    c = CInterpreter(model_path=str(shared_model(f"tflite-micro/{name}")))
    c.allocate_tensors()
    lib = c._lib
    if not hasattr(lib, "edge_simd_level") or lib.edge_simd_level() <= 0:
        pytest.skip("this build or CPU has no SIMD fast path")

    def no_toggle(*_a):
        raise AssertionError("arena_parts must not change the process-wide SIMD level")

    monkeypatch.setattr(lib, "edge_simd_set", no_toggle, raising=False)
    parts = c.arena_parts()
    assert parts["fast_path_scratch"] == parts["scratch"] - portable, parts
    assert parts["arena_size"] == (parts["tensors"] + parts["scratch"] + parts["persistent"] + parts["alignment"]
                                   + parts["init_extra"])


# ------------------------------------------------------------------------------------------------ walk: serve [-1,-1]
def test_serve_a_dynamic_input_answers_a_sample_of_another_size_with_one_line():
    """`edge serve fe.tflite --input-shape x:4,8` (x [-1, -1]): a request at [4, 8] runs; one at another length,
    or [8] (the sample without a batch axis: only a batch axis of 1 may be left out), is a 400 naming the input
    and the shape the server was given -- [8] was a 500 'internal error: cannot reshape array of size 8', in JSON
    and as a raw tensor."""
    from edge_sdk.tools.serve import Server
    from tests.test_input_shapes import log_mel_like
    from tests.test_serve import request

    with Server(log_mel_like(), port=0, backend="python", input_shapes={"x": (4, 8)}) as srv:
        status, body, _ = request(srv, "POST", "/predict", {"inputs": np.ones((4, 8)).tolist()})
        assert status == 200 and np.shape(body["outputs"][0]) == (1, 24), body
        for shape in ((6, 8), (8,)):
            status, body, _ = request(srv, "POST", "/predict", {"inputs": np.ones(shape).tolist()})
            assert status == 400 and body["error"] == (
                f"inputs: shape {list(shape)} does not match input 'x' [4, 8] (the shape --input-shape gave this "
                "server; another size needs another server)"), body
        status, body, _ = request(srv, "POST", "/predict", np.ones(8, np.float32).tobytes(),
                                  {"Content-Type": "application/octet-stream", "X-Shape": "8", "X-Dtype": "float32"})
        assert status == 400 and body["error"] == "X-Shape [8] does not match input 'x' [4, 8]", body


def test_profile_takes_a_dynamic_inputs_size_from_its_inputs_file(walk, monkeypatch, capsys):
    """`edge profile seq.tflite --inputs named.npz --target ...` asked for --input-shape although the file says
    the length: the file's shapes now fix it (as edge run / bench take them); --input-shape still wins."""
    from edge_sdk.tools import profile

    asked = []

    def profile_model(model, target, **kw):
        asked.append(kw["input_shapes"])
        raise cli.DeviceError("no board here")

    monkeypatch.setattr(profile, "profile_model", profile_model)
    argv = ["profile", str(walk["model"]), "--target", "qemu-mps2-an386", "--inputs", str(walk["root"] / "named.npz")]
    assert cli.main(argv) == 4 and "no board here" in capsys.readouterr().err
    assert cli.main(argv[:-1] + [str(walk["root"] / "args.npz")]) == 4  # arg_0 [3, 4]: its batch axis of 1 added
    assert cli.main(argv + ["--input-shape", "x:1,6,4"]) == 4  # given: profile's own check of the file follows
    assert asked == [{"x": (1, 5, 4)}, {"x": (1, 3, 4)}, {"x": (1, 6, 4)}]
    bad = walk["root"] / "bad.npz"
    np.savez(bad, x=np.zeros((1, 5, 3), np.float32), g=np.zeros((1, 1, 4), np.float32))
    assert cli.main(argv[:-1] + [str(bad)]) == 2 and len(asked) == 3
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edge profile: error: {bad}: array 'x' shaped [1, 5, 3] float32 for input 'x' [1,-1,4] float32")
