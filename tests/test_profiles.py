"""Device profiles: every file loads and validates, inheritance merges, broken files name file, key and problem."""

import json

import pytest

from edge_sdk.errors import EdgeError, ProfileError
from edge_sdk.targets.profiles import PROFILE_DIR, list_profiles, load_profile

REQUIRED_DEVICES = [
    "raspberry-pi-5", "raspberry-pi-4", "raspberry-pi-zero-2w", "coral-edgetpu-usb", "android-nnapi",
    "stm32f746-disco", "stm32h743", "nrf52840-dk", "rp2040-pico", "esp32-s3", "qemu-mps2-an386", "host-linux",
]


def test_the_required_devices_exist():
    names = list_profiles()
    assert set(REQUIRED_DEVICES) <= set(names)
    assert "cortex-m4" not in names and "cortex-m4" in list_profiles(include_abstract=True)


@pytest.mark.parametrize("name", sorted(p.stem for p in PROFILE_DIR.glob("*.toml")))
def test_every_profile_file_loads_and_validates(name):
    from edge_sdk.targets.profiles import _read_toml

    if _read_toml(PROFILE_DIR / f"{name}.toml").get("abstract"):
        with pytest.raises(ProfileError, match="abstract"):
            load_profile(name)
        return
    p = load_profile(name)
    assert p.name == name and p.arch and p.cpu and p.kind
    assert p.ram_arena_bytes > 0 and p.flash_model_bytes > 0
    assert p.flash["method"] and p.timer["source"]
    assert p.preferred_backend in p.backends
    assert p.cpu_backend.dtypes(), "a profile must run something on its CPU"
    # Every file says where its facts come from.
    text = (PROFILE_DIR / f"{name}.toml").read_text()
    assert text.lstrip().startswith("#") and "Source" in text


def test_inheritance_and_override():
    nrf = load_profile("nrf52840-dk")
    assert nrf.extends == ("cortex-m4", "cortex-m", "mcu")
    assert "-mfpu=fpv4-sp-d16" in nrf.toolchain["cflags"] and nrf.toolchain["compiler"] == "arm-none-eabi-gcc"
    assert nrf.timer["source"] == "DWT" and nrf.serial["usb_vid"] == 0x1366
    assert nrf.serial["transport"] == "uart"  # from the mcu parent, merged with the board's own [serial]
    h7 = load_profile("stm32h743")
    assert h7.fpu == "fpv5-d16" and "-mfpu=fpv5-d16" in h7.toolchain["cflags"]
    assert "-mfpu=fpv5-sp-d16" not in h7.toolchain["cflags"], "lists replace, they do not merge"
    pico = load_profile("rp2040-pico")
    assert pico.timer["source"] == "timer_hw"  # the board overrides cortex-m0plus's SysTick
    assert pico.cpu_backend.op_constraints("CONV_2D", "float32") is None  # no float compute on M0+
    assert pico.cpu_backend.op_constraints("QUANTIZE", "float32") == {"max_rank": 6}
    assert pico.cpu_backend.op_constraints("CONV_2D", "int8") == {"max_rank": 6}
    coral = load_profile("coral-edgetpu-usb")
    assert coral.extends[0] == "raspberry-pi-4" and coral.cpu == "cortex-a72"
    assert coral.preferred_backend == "edgetpu" and coral.delegates["edgetpu"].max_partitions == 1
    assert coral.delegates["edgetpu"].ops["uint8"] == coral.delegates["edgetpu"].ops["int8"]
    assert load_profile("android-nnapi").delegates["nnapi"].feature_level == 5


def test_child_profile_in_another_folder(tmp_path):
    child = tmp_path / "my-board.toml"
    child.write_text(
        'extends = "qemu-mps2-an386"\nram_arena_bytes = 1234\n'
        "[ops.int8]\nCONV_2D = { max_kernel = 5 }\n"
        '[serial]\nbaud = 9600\n'
    )
    p = load_profile(str(child))
    assert p.name == "my-board" and p.ram_arena_bytes == 1234 and p.clock_hz == 25_000_000
    assert p.serial == {"transport": "tcp", "baud": 9600}
    # The op entry merges over the "*" defaults and the backend-wide constraints.
    assert p.cpu_backend.op_constraints("CONV_2D", "int8") == {"max_rank": 6, "max_kernel": 5}
    assert p.cpu_backend.op_constraints("ADD", "int8") == {"max_rank": 6}


BASE = 'extends = "qemu-mps2-an386"\n'


@pytest.mark.parametrize(
    "text, key, problem",
    [
        (BASE + "colour = 1\n", "colour", "unknown key"),
        (BASE + "clock_hz = 'fast'\n", "clock_hz", "expected an int, got 'fast'"),
        (BASE + "[ops.int8]\nCONV_2D = { max_kernel = 'x' }\n", "ops.int8.CONV_2D.max_kernel",
         "expected an int, got 'x'"),
        (BASE + "[ops.int8]\nCONV_2D = { max_kernal = 3 }\n", "ops.int8.CONV_2D.max_kernal", "unknown constraint"),
        (BASE + "[ops.int8]\nCONV_3X = {}\n", "ops.int8.CONV_3X", "unknown op"),
        (BASE + "[ops.int7]\nCONV_2D = {}\n", "ops.int7", "unknown dtype"),
        (BASE + "[ops.int8]\nCONV_2D = true\n", "ops.int8.CONV_2D", "expected a table of constraints or false"),
        (BASE + "[ops.int8]\nCONV_2D = { padding = ['SAME', 'FULL'] }\n", "ops.int8.CONV_2D.padding",
         "unknown value(s) 'FULL'"),
        (BASE + "[flash]\nmethod = 'jlink'\n", "flash.method", "unknown flash method 'jlink'"),
        (BASE + "[flash]\nmethod = 'qemu'\nchip = 'esp32'\n", "flash.chip", "unknown setting for flash method 'qemu'"),
        (BASE + "[timer]\nsource = 'sundial'\n", "timer.source", "unknown value 'sundial'"),
        (BASE + "[serial]\nbaud = 115200.0\n", "serial.baud", "expected an int, got 115200.0"),
        (BASE + "preferred_backend = 'npu'\n", "preferred_backend", "names no delegate"),
        (BASE + "[delegates.npu]\nmax_partitions = 'one'\n", "delegates.npu.max_partitions", "expected an int"),
        (BASE + "[delegates.npu.ops.int8]\nFOO = {}\n", "delegates.npu.ops.int8.FOO", "unknown op"),
        (("kind = 'mcu'\narch = 'x'\ncpu = 'y'\nram_arena_bytes = 1\nflash_model_bytes = 1\n[ops.int8]\n"
          "'*' = {}\n[flash]\nmethod = 'local'\n[timer]\nsource = 'DWT'\n"), "clock_hz", "missing required key"),
    ],
)
def test_broken_profiles_name_file_key_and_problem(tmp_path, text, key, problem):
    path = tmp_path / "broken.toml"
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    message = str(info.value)
    assert f"broken.toml: {key}: " in message, message
    assert problem in message, message
    assert isinstance(info.value, EdgeError)


def test_every_problem_is_reported_at_once(tmp_path):
    path = tmp_path / "many.toml"
    path.write_text(BASE + "colour = 1\nclock_hz = 'x'\n[ops.int8]\nCONV_2D = { max_kernel = 'x' }\n")
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    assert len(info.value.problems) == 3


def test_inheritance_cycle_and_missing_parent(tmp_path):
    (tmp_path / "a.toml").write_text('extends = "b"\n')
    (tmp_path / "b.toml").write_text('extends = "a"\n')
    with pytest.raises(ProfileError, match="cycle"):
        load_profile(str(tmp_path / "a.toml"))
    (tmp_path / "c.toml").write_text('extends = "no-such-parent"\n')
    with pytest.raises(ProfileError, match=r"c\.toml: extends: .*no-such-parent"):
        load_profile(str(tmp_path / "c.toml"))
    (tmp_path / "d.toml").write_text("this is = not toml [\n")
    with pytest.raises(ProfileError, match=r"d\.toml: not valid TOML"):
        load_profile(str(tmp_path / "d.toml"))


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(ProfileError, match="stm32f746-disco"):
        load_profile("stm32f999")


def test_cli_targets(capsys):
    from edge_sdk.cli import main

    assert main(["targets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_name = {r["name"]: r for r in rows}
    assert set(REQUIRED_DEVICES) <= set(by_name)
    assert by_name["coral-edgetpu-usb"]["delegates"] == ["litert", "edgetpu"]
    assert by_name["rp2040-pico"]["cpu"] == "cortex-m0plus"
    for key in ("arch", "cpu", "ram_arena_bytes", "flash_model_bytes", "delegates"):
        assert key in by_name["stm32h743"]
    assert main(["targets"]) == 0
    out = capsys.readouterr().out
    assert "qemu-mps2-an386" in out and "edgetpu*" in out
