"""The CLI's exit statuses: every error type's code is documented in `edge --help`, and a C runtime that cannot
be built here is its own status (8) with one line, not an internal error."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_sdk import cli
from edge_sdk.errors import BuildError
from tests.oprunner import T, op_model

ROOT = Path(__file__).resolve().parent.parent


def _tiny_model(tmp_path: Path) -> tuple[Path, Path]:
    """A one-op float model (RELU on [1, 4]) and an input for it."""
    model = tmp_path / "relu.tflite"
    model.write_bytes(op_model("RELU", [T((1, 4), "FLOAT32")], [T((1, 4), "FLOAT32")]))
    x = tmp_path / "x.npy"
    np.save(x, np.array([[-1, 2, -3, 4]], np.float32))
    return model, x


def test_every_exit_code_is_documented():
    documented = {int(m.group(1)) for m in re.finditer(r"^  (\d+) ", cli.EXIT_STATUS_HELP, re.M)}
    codes = {code for _, code in cli.EXIT_CODES}
    assert codes <= documented, f"exit codes missing from EXIT_STATUS_HELP: {sorted(codes - documented)}"
    assert cli._exit_code(BuildError("x")) == 8
    assert [code for _, code in cli.EXIT_CODES].count(8) == 1
    assert "exit status:" in cli.build_parser().format_help()


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("make") is None,
                    reason="--backend c is the Linux C runtime; its build needs make")
def test_c_runtime_that_cannot_be_built_exits_8_in_one_line(tmp_path):
    """The build honours $CC: a compiler that is not there makes `edge run --backend c` exit 8 with one line
    naming it; --backend auto still falls back to the Python interpreter and says why."""
    model, x = _tiny_model(tmp_path)
    env = {**os.environ, "CC": "no-such-cc-for-edge-tests"}
    run = [sys.executable, "-m", "edge_sdk.cli", "run", str(model), str(x)]
    forced = subprocess.run([*run, "--backend", "c"], capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=300, check=False)
    assert forced.returncode == 8, forced.stderr
    assert forced.stderr.splitlines() == [
        "edge run: cannot build the C runtime: no-such-cc-for-edge-tests not found on PATH "
        "(install make and a C compiler, e.g. `apt-get install make gcc`)"]
    auto = subprocess.run(run, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=False)
    assert auto.returncode == 0, auto.stderr
    assert auto.stdout.startswith("runtime: python (C runtime not available here: cannot build the C runtime: "
                                  "no-such-cc-for-edge-tests not found on PATH")


def test_a_failed_build_is_one_line_naming_the_compiler_error(tmp_path, monkeypatch, capsys):
    """A failed make carries the build's output: the line keeps its first line and the compiler's error."""
    from edge_sdk.tools import run_backend

    model, x = _tiny_model(tmp_path)
    output = ("`make -C /src/firmware_c host` failed:\nmkdir -p build/host\ncc -O2 -c src/edge.c\n\n"
              "src/edge.c:12:5: error: expected ';' before 'return'\n   12 |     return 0\n"
              "make: *** [Makefile:102: build/host/libedge.so] Error 1")

    def fail(*_args, **_kwargs):
        raise BuildError(output)

    monkeypatch.setattr(run_backend, "choose_runtime", fail)
    assert cli.main(["run", str(model), str(x), "--backend", "c"]) == 8
    err = capsys.readouterr().err
    assert err == ("edge run: cannot build the C runtime: `make -C /src/firmware_c host` failed: "
                   "src/edge.c:12:5: error: expected ';' before 'return'\n")
