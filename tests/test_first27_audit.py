"""Issue 27, audited from a fresh clone (session 17): what did not hold.

- NaN / inf in data files: `edge evaluate --data`, `edge convert --eval` (an internal error before), `edge bench
  --inputs` and `edge profile --inputs` ran it; now refused (exit 3) naming the flag, the file, the array and the
  first sample, after the settings and before any work; `edge run --allow-nonfinite --json` says so in the JSON.
- The per-op plot's axis said "emulated" twice for a QEMU profile ("systick ticks (emulated), emulated").
- `edge fleet status --inventory MISSING` said "no hosts in the inventory" (exit 4); `edge deploy --hosts
  picture.png` was an internal error: the files are now checked first, like every command's.
- A detector whose box output cannot be told apart named the Python option only, not `--boxes` / `--scores`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from edge_sdk import cli
from tests.oprunner import T, op_model


def _relu(tmp_path: Path) -> Path:
    """A float RELU on [1, 4]: any model will do, the data is refused before it is run."""
    model = tmp_path / "relu.tflite"
    model.write_bytes(op_model("RELU", [T((1, 4), "FLOAT32")], [T((1, 4), "FLOAT32")]))
    return model


def _with_nonfinite(path: Path, shape, sample: int, value: float, npz_key: str | None = None) -> Path:
    x = np.zeros(shape, np.float32)
    x[(sample,) + (0,) * (len(shape) - 1)] = value
    if npz_key is None:
        np.save(path, x)
    else:
        np.savez(path, **{npz_key: x, "y": np.zeros(shape[0], np.int64)})
    return path


def _one_error_line(capsys, argv: list[str], code: int) -> tuple[str, str]:
    assert cli.main([str(a) for a in argv]) == code
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0], out


@pytest.mark.parametrize("case", ["evaluate --data", "convert --eval", "convert --calib", "bench --inputs",
                                  "profile --inputs"])
def test_nonfinite_data_is_refused_naming_flag_file_array_and_sample(tmp_path, capsys, case):
    model = _relu(tmp_path)
    if case == "evaluate --data":
        data = _with_nonfinite(tmp_path / "test.npz", (6, 4), 4, np.nan, npz_key="x")
        argv, flag, said = ["evaluate", model, "--data", data], "--data", "array 'x'"
    elif case == "convert --eval":
        calib = _with_nonfinite(tmp_path / "calib.npy", (5, 4), 0, 0.0)
        data = _with_nonfinite(tmp_path / "test.npz", (6, 4), 4, np.inf, npz_key="x")
        argv = ["convert", model, "-o", tmp_path / "out.tflite", "--calib", calib, "--eval", data]
        flag, said = "--eval", "array 'x'"
    elif case == "convert --calib":
        data = _with_nonfinite(tmp_path / "calib.npy", (9, 4), 4, -np.inf)
        argv, flag, said = ["convert", model, "-o", tmp_path / "out.tflite", "--calib", data], "--calib", ""
    else:  # one input tensor [1, 4]: its only sample
        data = _with_nonfinite(tmp_path / "x.npy", (1, 4), 0, np.nan)
        command, flag = case.split()
        argv = [command, model, flag, data] + (["--target", "qemu-mps2-an386"] if command == "profile" else [])
        said = ""
    line, _ = _one_error_line(capsys, argv, 3)
    sample = "sample 0" if case.endswith("--inputs") else "sample 4"
    for needle in (flag, data.name, said, sample, "non-finite"):
        assert needle in line, (needle, line)
    assert "MODEL" not in line and "SRC" not in line, line  # the data file is at fault, not the model
    assert not (tmp_path / "out.tflite").exists()


def test_nonfinite_data_is_a_json_error_after_the_settings(tmp_path, capsys):
    model = _relu(tmp_path)
    data = _with_nonfinite(tmp_path / "test.npz", (3, 4), 2, np.nan, npz_key="x")
    line, out = _one_error_line(capsys, ["evaluate", model, "--data", data, "--json"], 3)
    doc = json.loads(out)
    assert doc["kind"] == "data" and doc["exit"] == 3 and "sample 2" in doc["error"] and doc["error"] in line
    calib = _with_nonfinite(tmp_path / "calib.npy", (3, 4), 1, np.nan)  # a setting's misuse is said first (exit 2)
    line, _ = _one_error_line(capsys, ["convert", model, "-o", tmp_path / "o.tflite", "--calib", calib,
                                       "--target", "stm32f747"], 2)
    assert "did you mean stm32f746-disco" in line


def test_run_allow_nonfinite_says_so_in_the_json(tmp_path, capsys):
    model = _relu(tmp_path)
    nan = _with_nonfinite(tmp_path / "nan.npy", (1, 4), 0, np.nan)
    fine = tmp_path / "fine.npy"
    np.save(fine, np.ones((1, 4), np.float32))
    assert cli.main(["run", str(model), str(nan), str(fine), "--allow-nonfinite", "--json", "--backend",
                     "python"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["input"] for r in rows] == [str(nan), str(fine)]
    assert "non-finite" in rows[0]["warnings"][0] and "--allow-nonfinite" in rows[0]["warnings"][0], rows[0]
    assert "warnings" not in rows[1], rows[1]


@pytest.mark.parametrize("unit", ["systick ticks (emulated)", "emulated ticks (cost model)", "ticks"])
def test_op_plot_says_emulated_once(tmp_path, unit):
    from edge_sdk.tools.op_report import OpProfile, OpTiming, write_plot

    prof = OpProfile(ops=[OpTiming(0, "CONV_2D", [120.0, 110.0], macs=100, output_shape=[1, 8])], unit=unit,
                     run_totals=[120.0, 110.0], us_per_unit=None, model="m.tflite", where="qemu-mps2-an386")
    write_plot(prof, tmp_path / "ops.png")
    with Image.open(tmp_path / "ops.png") as img:
        x_label = img.text["x_label"]
    assert x_label.count("emulated") == 1 and unit in x_label, x_label


def test_fleet_and_deploy_files_are_checked_first(tmp_path, capsys):
    model = _relu(tmp_path)
    line, out = _one_error_line(capsys, ["fleet", "status", "--inventory", tmp_path / "hosts.ini", "--json"], 6)
    assert "--inventory" in line and "hosts.ini" in line and json.loads(out)["kind"] == "file"
    png = tmp_path / "hosts.png"
    Image.new("RGB", (4, 4)).save(png)
    line, _ = _one_error_line(capsys, ["deploy", model, "--hosts", png], 3)
    assert "--hosts" in line and "not a hosts file" in line and "a PNG image" in line, line
    line, _ = _one_error_line(capsys, ["fleet", "status", "--inventory", png], 3)
    assert "--inventory" in line and "a PNG image" in line, line


def test_an_ambiguous_detector_names_the_flags_and_its_outputs(tmp_path, capsys):
    """Two outputs [1, 6, 3], neither a box output by its shape or name: the line says how to say which."""
    axis = T((), "INT32", data=np.array(2, np.int32))
    model = tmp_path / "two.tflite"
    model.write_bytes(op_model("SPLIT", [axis, T((1, 6, 6), "FLOAT32")],
                               [T((1, 6, 3), "FLOAT32", name="a"), T((1, 6, 3), "FLOAT32", name="b")],
                               options={"num_splits": 2}))
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((1, 6, 6), np.float32))
    line, _ = _one_error_line(capsys, ["run", model, x, "--task", "detect", "--backend", "python"], 3)
    assert "--boxes OUTPUT --scores OUTPUT" in line and "0 'a', 1 'b'" in line, line


def test_export_into_a_file_or_a_full_folder_is_argument_misuse(tmp_path, capsys):
    """`-o` naming the model itself, or a folder with files in it: exit 2 (was 5, "any other error")."""
    model = _relu(tmp_path)
    line, _ = _one_error_line(capsys, ["export", model, "--target", "host-linux", "--format", "cmake", "-o", model], 2)
    assert "-o/--output" in line and "is a file" in line, line
    full = tmp_path / "full"
    full.mkdir()
    (full / "main.c").write_text("int main(void) { return 0; }\n")
    line, out = _one_error_line(capsys, ["export", model, "--target", "host-linux", "--format", "make", "-o", full,
                                         "--json"], 2)
    assert "not empty" in line and json.loads(out)["kind"] == "usage"
    assert [p.name for p in full.iterdir()] == ["main.c"]


def test_matrix_of_an_int8_tflite_says_how_to_run_it_as_it_is(tmp_path, capsys):
    """`edge bench m_int8.tflite --matrix` converts to int8 by default: the cell's error says what to give."""
    model = tmp_path / "relu_int8.tflite"
    model.write_bytes(op_model("RELU", [T((1, 4), "INT8", 0.1, -3)], [T((1, 4), "INT8", 0.1, -3)]))
    assert cli.main(["bench", str(model), "--matrix", "--target", "host-linux", "--json"]) == 0  # nothing cached
    cells = json.loads(capsys.readouterr().out)["cells"]
    assert len(cells) == 1 and "already quantized" in cells[0]["error"], cells
    assert "--precision float" in cells[0]["error"], cells


def test_another_files_fault_is_not_blamed_on_the_model(tmp_path, capsys):
    """The CLI names the model first when a model's error does not: not when the line names the file at fault."""
    model = _relu(tmp_path)
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    line, _ = _one_error_line(capsys, ["run", model, text], 3)
    assert line.startswith("edge run: error: INPUT ") and "MODEL" not in line, line
    png = tmp_path / "front.png"
    Image.new("RGB", (4, 4)).save(png)
    x = tmp_path / "x.npy"
    np.save(x, np.ones((1, 4), np.float32))
    line, _ = _one_error_line(capsys, ["run", model, x, "--frontend", png], 3)
    assert line.startswith("edge run: error: --frontend ") and "MODEL" not in line, line


@pytest.mark.slow  # builds a Cortex-M7 firmware: ~15 s under load
@pytest.mark.skipif(__import__("shutil").which("arm-none-eabi-gcc") is None, reason="needs arm-none-eabi-gcc")
def test_a_missing_flasher_names_the_firmware_it_built(state, tmp_path, monkeypatch):
    """st-flash absent: the line says how to install it and where the built firmware is (to flash it by hand)."""
    import shutil

    from edge_sdk.errors import DeviceError
    from edge_sdk.tools import flash as fl

    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda t: None if t == "st-flash" else real(t))
    model = tmp_path / "relu_int8.tflite"
    model.write_bytes(op_model("RELU", [T((1, 4), "INT8", 0.1, -3)], [T((1, 4), "INT8", 0.1, -3)]))
    with pytest.raises(DeviceError, match=r"st-flash not found on PATH.*the firmware is built: .*fw\.elf"):
        fl.flash(model, "stm32f746-disco", build_dir=tmp_path / "f7")
    assert (tmp_path / "f7" / "fw.elf").is_file()


def test_only_my_board_is_reused_for_a_model(tmp_path, monkeypatch):
    """`edge profile` (no --port) talks to a running board of the same model: never another owner's (another
    checkout's, or one a still-running job started), whose serial port takes one client. Fake boards: sleeping
    processes with "qemu" in their command line, as tests/test_boards_owned.py records them."""
    import subprocess
    import sys

    from edge_sdk.device import qemu_board as qb

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    procs = [subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(60)", "qemu-fake"],
                              start_new_session=True) for _ in range(3)]
    try:
        me = qb.current_owner()
        ended = subprocess.Popen([sys.executable, "-c", "pass"])
        ended.wait()
        owners = {"another checkout": {**me, "checkout": "/elsewhere/edge-sdk", "pid": ended.pid, "pid_start": None},
                  "a running job": {**me, "pid": procs[2].pid, "pid_start": qb._process_start(procs[2].pid)}}
        boards = [{"url": f"socket://127.0.0.1:{41001 + k}", "tcp_port": 41001 + k, "pid": p.pid, "pgid": p.pid,
                   "pid_start": qb._process_start(p.pid), "profile": "qemu-mps2-an386", "model_sha256": "ab" * 32,
                   "owner": owner} for k, (p, owner) in enumerate(zip(procs, owners.values()))]
        qb._write_state(boards)
        assert len(qb.list_boards()) == 2 and qb.find_board("ab" * 32, "qemu-mps2-an386") is None
        qb._write_state(boards + [{**boards[0], "url": "socket://127.0.0.1:41009", "tcp_port": 41009,
                                   "pid": procs[1].pid, "pgid": procs[1].pid,
                                   "pid_start": qb._process_start(procs[1].pid), "owner": me}])
        assert qb.find_board("ab" * 32, "qemu-mps2-an386")["url"] == "socket://127.0.0.1:41009"
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_matrix_arena_is_the_targets_as_edge_check_gives_it(tmp_path, capsys):
    """A microcontroller cell's arena is the board's (edge check's figure), not this machine's run's (64-bit
    structs, SIMD scratch): the table showed the host's 3.3 KiB where `edge check` says 1.8 KiB."""
    from edge_sdk.targets.check import check_model
    from edge_sdk.tools.bench_matrix import format_matrix

    rng = np.random.default_rng(3)  # an int8 3x3 conv, 16 -> 16 channels on 8x8: the host packs its filter
    w = T((16, 3, 3, 16), "INT8", 0.02, 0, data=rng.integers(-127, 128, (16, 3, 3, 16), dtype=np.int8))
    b = T((16,), "INT32", 0.001, 0, data=np.zeros(16, np.int32))
    model = tmp_path / "conv_int8.tflite"
    model.write_bytes(op_model("CONV_2D", [T((1, 8, 8, 16), "INT8", 0.05, 0), w, b], [T((1, 8, 8, 16), "INT8", 0.1, 0)],
                               options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                                        "dilation_w_factor": 1}))
    assert cli.main(["bench", str(model), "--matrix", "--target", "qemu-mps2-an386", "--precision", "float",
                     "--runs", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    board = check_model(str(model), "qemu-mps2-an386").arena_bytes
    cell = report["cells"][0]
    assert cell["check"]["arena_bytes"] == board, cell
    assert f"{cell['arena_size'] / 1024:.1f}" != f"{board / 1024:.1f}", cell  # two machines, two figures
    row = format_matrix(report).splitlines()[2]
    assert row.split()[-2] == f"{board / 1024:.1f}", row


@pytest.mark.parametrize("arrays,said", [
    ({"x": np.zeros((6, 4), np.float32)}, "no array y (it has x)"),
    ({"x": np.zeros((6, 4), np.float32), "y": np.zeros(5, np.int64)}, "6 samples in x but 5 labels in y"),
    ({"x": np.zeros((6, 4), np.float32), "y": np.full(6, 0.5, np.float32)}, "y holds float32 values"),
    (None, "it is a PNG image"),
])
def test_evaluate_data_is_checked_before_the_model_runs(tmp_path, capsys, arrays, said):
    """`edge evaluate --data`: x and y, one integer label per sample; said naming --data and the file (it came after
    the model ran, as "MODEL m: 359 predictions but 5 labels", not naming the data)."""
    model = _relu(tmp_path)
    if arrays is None:
        data = tmp_path / "test.png"
        Image.new("RGB", (4, 4)).save(data)
    else:
        data = tmp_path / "test.npz"
        np.savez(data, **arrays)
    line, _ = _one_error_line(capsys, ["evaluate", model, "--data", data], 3)
    assert line.startswith(f"edge evaluate: error: --data {data}: not evaluation data") and said in line, line


def test_convert_eval_of_a_detector_may_hold_samples_only(tmp_path, capsys):
    """`convert --eval` judges a detector / segmenter on samples alone (no labels): x without y is not refused up
    front (the converter reads it as it reads --calib)."""
    x_only = tmp_path / "samples.npz"
    np.savez(x_only, x=np.zeros((3, 4), np.float32))
    args = cli.build_parser().parse_args(["convert", str(_relu(tmp_path)), "-o", str(tmp_path / "o.tflite"),
                                          "--eval", str(x_only)])
    cli._check_files(args)  # no error
