"""`edge` command line: inspect's text and JSON, and one exit code per error type."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from edge_sdk.cli import main
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder


@pytest.fixture
def small_model(tmp_path):
    g = GraphBuilder()
    x = g.input("x", (1, 4), "FLOAT32")
    w = g.constant("w", np.arange(12, dtype=np.float32).reshape(3, 4))
    b = g.constant("b", np.ones(3, np.float32))
    y = g.tensor("y", (1, 3), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, w, b], [y], fused_activation_function="RELU")
    z = g.tensor("z", (1, 3), "FLOAT32")
    g.op("SOFTMAX", [y], [z], beta=1.0)
    g.output(z)
    path = tmp_path / "small.tflite"
    write_model(g.build(), path)
    return path


def test_inspect_json(small_model, capsys):
    assert main(["inspect", str(small_model), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    ops = report["subgraphs"][0]["ops"]
    assert [op["op"] for op in ops] == ["FULLY_CONNECTED", "SOFTMAX"]
    assert ops[0]["macs"] == 12  # 1x4 by 4x3
    assert report["macs"] >= 12
    assert report["parameter_bytes"] == 12 * 4 + 3 * 4
    assert report["arena"]["bytes"] >= report["arena"]["lower_bound"] > 0
    assert report["problems"] == []


def test_inspect_text(small_model, capsys):
    assert main(["inspect", str(small_model)]) == 0
    out = capsys.readouterr().out
    assert "FULLY_CONNECTED" in out and "liveness lower bound" in out and "MACs" in out


def test_inspect_bad_file_exit_code(tmp_path, capsys):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x10\x00\x00\x00NOPE" + bytes(40))
    assert main(["inspect", str(bad)]) == 3
    err = capsys.readouterr().err
    assert "error" in err and "Traceback" not in err


def test_inspect_missing_file_exit_code(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "absent.tflite")]) == 6
    assert "absent.tflite" in capsys.readouterr().err


def test_console_script_runs():
    proc = subprocess.run([sys.executable, "-m", "edge_sdk.cli", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("edge-sdk ")
