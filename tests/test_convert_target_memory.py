"""`edge convert --target PROFILE --memory layer|inplace|min` (issue 17 point 3): the same --memory flag as
`edge check`, passed to the target check that runs before the model is written; the report names the plan and its RAM."""

from __future__ import annotations

import json

from edge_sdk.cli import main
from tests.test_memory_min import _chain_model


def _float_chain(tmp_path):
    src = tmp_path / "chain_float.tflite"
    src.write_bytes(_chain_model(dtype="FLOAT32", shape=(1, 16, 16, 8), value=-1.5))
    return src


def test_convert_target_memory_inplace_and_layer(tmp_path, capsys):
    src = _float_chain(tmp_path)
    checks = {}
    for memory in ("layer", "inplace"):
        out = tmp_path / f"out_{memory}.tflite"
        assert main(["convert", str(src), "-o", str(out), "--quantize", "none", "--target", "qemu-mps2-an386",
                     "--memory", memory, "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert out.is_file() and report["written"] == str(out)
        checks[memory] = report["check"]
    assert checks["layer"]["memory_plan"] == "layer" and checks["inplace"]["memory_plan"] == "inplace"
    # the in-place PAD and RESHAPE: the in-place plan is smaller, at no extra MACs
    assert checks["inplace"]["arena_bytes"] < checks["layer"]["arena_bytes"]
    assert checks["inplace"]["extra_macs"] == 0
    # the same figures `edge check --memory` gives for the written model
    for memory in ("layer", "inplace"):
        assert main(["check", str(tmp_path / f"out_{memory}.tflite"), "--target", "qemu-mps2-an386", "--memory",
                     memory, "--json"]) == 0
        check = json.loads(capsys.readouterr().out)
        assert check["arena_bytes"] == checks[memory]["arena_bytes"]


def test_convert_memory_flag_misuse(tmp_path, capsys):
    src = _float_chain(tmp_path)
    out = tmp_path / "out.tflite"
    assert main(["convert", str(src), "-o", str(out), "--quantize", "none", "--memory", "min"]) == 2
    assert "--memory" in capsys.readouterr().err and not out.exists()
    try:
        main(["convert", str(src), "-o", str(out), "--target", "qemu-mps2-an386", "--memory", "tiny"])
    except SystemExit as exc:
        assert exc.code == 2
    assert "invalid choice: 'tiny'" in capsys.readouterr().err and not out.exists()
    try:  # the old name of the least-RAM plan is no choice any more
        code = main(["convert", str(src), "-o", str(out), "--target", "qemu-mps2-an386", "--memory", "patch"])
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    assert "invalid choice: 'patch'" in capsys.readouterr().err and not out.exists()


def test_convert_target_memory_min(tmp_path, capsys):
    """--memory min: the target check runs the least-RAM plan, here a patch stage (its stage, RAM and extra MACs
    in the report, plan "patch"), as `edge check --memory min` does for the written model."""
    from tests.test_patching import _c_chain, chain_model

    src = tmp_path / "patch_chain_float.tflite"
    src.write_bytes(chain_model(_c_chain("same_s1_s2"), shape=(1, 40, 40, 3), dtype="FLOAT32", seed=4))
    checks = {}
    for memory in ("inplace", "min"):
        out = tmp_path / f"out_{memory}.tflite"
        assert main(["convert", str(src), "-o", str(out), "--quantize", "none", "--target", "qemu-mps2-an386",
                     "--memory", memory, "--json"]) == 0
        checks[memory] = json.loads(capsys.readouterr().out)["check"]
    assert checks["min"]["memory_plan"] == "patch" and checks["min"]["extra_macs"] > 0
    assert checks["min"]["patch"].startswith("patch plan: stage nodes ")
    assert checks["min"]["arena_bytes"] < checks["inplace"]["arena_bytes"]
    assert main(["check", str(tmp_path / "out_min.tflite"), "--target", "qemu-mps2-an386", "--memory", "min",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["arena_bytes"] == checks["min"]["arena_bytes"]
