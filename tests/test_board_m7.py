"""The QEMU Cortex-M7 board (qemu-mps2-an500, issue 25 point 4: the same kernels on Cortex-M7 builds): zoo models
flashed and profiled on it as a user would (`edge profile --target qemu-mps2-an500`), validated against the host
(integer outputs bit for bit, float within the printed tolerance), and the M7 build running the M4's DSP kernels:
its instruction count on an int8 model within a few percent of the M4 board's (the portable loops take 2-4x as
many). QEMU's cortex-m7 has the double-precision FPU (fpv5-d16), so the float case runs the double-FPU paths that
the M4 (single precision only) never takes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tests.test_profile import needs_qemu, state  # noqa: F401 (a fixture: the board state, boards stopped after)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import zoo  # noqa: E402

SIZE = min(zoo.SIZES)


def _profile(arch: str, dtype: str, target: str, tmp_path: Path) -> dict:
    from edge_sdk.tools.profile import profile_model

    path = tmp_path / f"{arch}_{dtype}.tflite"
    path.write_bytes(zoo.build(arch, SIZE, dtype))
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (1, SIZE, SIZE, 3)).astype(np.float32)
    if dtype == "int8":
        x = rng.integers(-128, 128, (1, SIZE, SIZE, 3)).astype(np.int8)
    np.save(tmp_path / "in.npy", x)
    return profile_model(path, target, runs=1, inputs=str(tmp_path / "in.npy"), build_dir=tmp_path / f"fw-{target}")


@pytest.mark.slow
@needs_qemu
def test_int8_model_on_the_m7_board_runs_the_m4_kernels(state, tmp_path):  # noqa: F811
    """BlazeFace-style int8 (5x5 depthwise, PRELU, residual ADDs, 1x1 convs): bit for bit with the host on the M7,
    and within 10% of the M4 board's instructions (one SysTick tick = 40 instructions on both)."""
    m7 = _profile("blazeface", "int8", "qemu-mps2-an500", tmp_path)
    assert m7["validated"] is True and m7["mismatches"] == [], m7
    m4 = _profile("blazeface", "int8", "qemu-mps2-an386", tmp_path)
    assert m4["validated"] is True and m4["mismatches"] == [], m4
    t7, t4 = m7["total"]["mean"], m4["total"]["mean"]
    assert 0.9 <= t7 / t4 <= 1.1, (t7, t4)


@pytest.mark.slow
@needs_qemu
def test_float_model_on_the_m7_board_within_tolerance(state, tmp_path):  # noqa: F811
    """U-Net-style float (convolutions, upsampling, skip concatenations; 2 MB: the MobileNet-class float zoo models
    are 5-18 MB, over the board's 8 MB model budget): the M7's double-precision FPU build validates against the
    host within the tolerance it prints."""
    r = _profile("unet", "float32", "qemu-mps2-an500", tmp_path)
    assert r["validated"] is True and r["mismatches"] == [], r
    assert r["float_outputs"] and all(f["within"] for f in r["float_outputs"]), r["float_outputs"]
