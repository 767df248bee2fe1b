"""The runtime's flash without the target compiler: firmware_c/size_table.json, measured at build time
(`make -C firmware_c size-table`), read by `edge check` when the profile's compiler is not installed, and said so."""

import shutil

import pytest

from edge_sdk.runtime import op_table
from edge_sdk.targets import c_footprint, size_table
from edge_sdk.targets.check import check_model, format_check
from edge_sdk.targets.profiles import load_profile

ARM = "arm-none-eabi-gcc"


def _kernel_stems() -> set[str]:
    return {"edge"} | {f.rsplit(".", 1)[0] for _, f in op_table.C_KERNELS.values()}


def test_committed_table_covers_every_kernel_file_on_the_arm_profiles():
    table = size_table.load()
    chains = {(t["compiler"], tuple(t["cflags"])): t for t in table["toolchains"]}
    for name in ("qemu-mps2-an386", "rp2040-pico", "stm32f746-disco", "stm32h743", "nrf52840-dk"):
        p = load_profile(name)
        entry = chains[(p.toolchain["compiler"], size_table.code_flags(p))]
        assert name in entry["profiles"]
        assert _kernel_stems() <= set(entry["files"]), _kernel_stems() - set(entry["files"])
        for row in entry["files"].values():
            assert row["bytes"] == row["text"] + row["rodata"] + row["data"] and row["text"] > 0


@pytest.mark.slow
def test_table_is_what_the_installed_compiler_measures_now():
    """Regenerated and compared when arm-none-eabi-gcc is here (a kernel changed: `make -C firmware_c size-table`).
    Without it, the committed table is checked against the sources' hashes instead: every file unchanged."""
    current = size_table.table_path().read_text()
    if shutil.which(ARM):
        fresh = size_table.render(size_table.generate())
        assert fresh == current, "firmware_c/size_table.json is stale: run make -C firmware_c size-table"
        p = load_profile("qemu-mps2-an386")
        entry = size_table.lookup(p, ["conv_2d.c", "softmax.c"])
        measured = c_footprint.runtime_code_bytes(ARM, size_table.code_flags(p), ["conv_2d.c", "softmax.c"])
        assert entry["per_file"] == measured["per_file"] and entry["bytes"] == measured["bytes"]
    else:
        entry = size_table.lookup(load_profile("qemu-mps2-an386"), sorted(f for _, f in op_table.C_KERNELS.values()))
        assert entry["stale"] == [] and entry["missing"] == [], entry


def test_check_without_the_target_compiler_reads_the_size_table_and_says_so(monkeypatch):
    from tests.conftest import shared_model

    path = shared_model("tflite-micro/person_detect.tflite")
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda cmd, *a, **k: None if cmd == ARM else real_which(cmd, *a, **k))
    r = check_model(path, "qemu-mps2-an386")
    code = r.runtime_code
    assert code["source"] == "size table" and r.flash_source == "estimate from the size table"
    assert set(code["per_file"]) == {"edge", "conv_2d", "depthwise_conv_2d", "pooling", "reshape", "softmax"}
    assert code["bytes"] == sum(code["per_file"].values()) > 0
    assert r.to_dict()["flash_source"] == "estimate from the size table"
    assert "flash: estimate from the size table" in format_check(r)
    monkeypatch.setattr(shutil, "which", real_which)
    if real_which(ARM):  # with the compiler: its objects, the same figures (the table was measured with it)
        measured = check_model(path, "qemu-mps2-an386")
        assert measured.flash_source == "compiled objects"
        assert measured.runtime_code["per_file"] == code["per_file"]


def test_a_toolchain_without_a_table_entry_says_the_runtime_flash_is_unknown():
    from tests.conftest import shared_model

    r = check_model(shared_model("tflite-micro/micro_speech_quantized.tflite"), "esp32-s3")
    if shutil.which("xtensa-esp32s3-elf-gcc") is None:  # no table entry for it (the table is made without it)
        assert "no entry" in r.runtime_code["error"] and r.flash_source == "model only"
        assert "runtime code ?" in format_check(r)
    else:
        assert r.flash_source == "compiled objects" and r.runtime_code["bytes"] > 0
