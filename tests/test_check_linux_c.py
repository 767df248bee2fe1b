"""`edge check` on a C-runtime profile for 64-bit Linux (issue 16 point 1): the RAM figure is the arena the real
library uses on that CPU, i.e. with the SIMD fast paths and their packed weights (persistent arena memory),
not the microcontroller build's. On the host: equal to the host library's own plan info; for an aarch64
profile: the aarch64 build under qemu-aarch64 emulating the profile's CPU."""

from __future__ import annotations

import pytest

from tests.conftest import needs_c_runtime, shared_model

pytestmark = needs_c_runtime

MODEL = "tflite-micro/person_detect.tflite"  # int8 conv / depthwise / FC: every int8 fast path packs weights


def _c_profile(tmp_path, parent: str):
    from edge_sdk.targets.profiles import load_profile

    path = tmp_path / f"{parent}-c.toml"
    path.write_text(f'extends = "{parent}"\nruntime = "c"\n')
    return load_profile(str(path))


def _library_figures(data: bytes) -> dict:
    from edge_sdk.runtime import c_build, c_interpreter

    c_build.build()
    it = c_interpreter.CInterpreter(model_content=data)
    it.allocate_tensors()
    return it.plan_info()


def test_host_linux_c_check_counts_the_fast_paths_packed_weights(tmp_path):
    from edge_sdk.targets import c_check
    from edge_sdk.targets.check import check_model

    if c_check.host_arch() != "x86_64":
        pytest.fail("host-linux.toml says x86_64: this test compares it with the library on an x86-64 host")
    data = shared_model(MODEL).read_bytes()
    result = check_model(data, _c_profile(tmp_path, "host-linux"), stack=False)
    info = _library_figures(data)
    assert result.ram["layout"] == c_check.LINUX_HOST
    assert result.ram["high_water"] == info["high_water"]
    assert result.ram["persistent_bytes"] == info["persistent"]
    assert result.arena_bytes == max(info["high_water"], info["arena_used"])
    assert "SIMD fast paths" in result.ram_source and result.to_dict()["arena_estimate"] is False
    # the microcontroller-style build (no fast paths) gives less: the figure check used to report
    portable = c_check.target_plan(data, c_check.HOST)
    assert portable.ok and portable.figures["persistent"] < info["persistent"]


@pytest.mark.slow
def test_aarch64_c_check_runs_the_aarch64_library_under_qemu(tmp_path):
    from edge_sdk.targets import c_check
    from edge_sdk.targets.check import check_model

    if c_check.linux_layout("aarch64") != c_check.LINUX_AARCH64:
        pytest.fail(f"{c_check.AARCH64_CC} and {c_check.QEMU_AARCH64} are installed on every machine here")
    data = shared_model(MODEL).read_bytes()
    figures = {}
    for board in ("raspberry-pi-4", "raspberry-pi-5"):  # Cortex-A72 (NEON) and A76 (NEON + SDOT)
        result = check_model(data, _c_profile(tmp_path, board), stack=False)
        assert result.ram["layout"] == c_check.LINUX_AARCH64, board
        assert "qemu-aarch64" in result.ram_source, board
        figures[board] = result.ram["persistent_bytes"]
    portable = c_check.target_plan(data, c_check.HOST)
    assert all(v > portable.figures["persistent"] for v in figures.values()), (figures, portable.figures)
