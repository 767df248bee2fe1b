"""Text generation on a device: the serial protocol's GENERATE command (edge_sdk.device.generation).

The Python emulator runs it over our interpreter (fast tests: streaming in chunks, the stop reasons, the
errors); the QEMU board runs it in the C firmware (firmware_c/app/generate.c): `edge generate --target
qemu-mps2-an386 --greedy` gives the same tokens as the host's python and c backends. Every QEMU started here
is stopped when its test ends.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from edge_sdk.device import generation as dg
from edge_sdk.tools import generate as tg
from edge_sdk.device import serial_link as sl
from edge_sdk.device.emulator import DeviceEmulator
from edge_sdk.errors import DeviceError
from edge_sdk.tasks.generate import Generator

LM = Path(__file__).resolve().parent.parent / "examples" / "tiny_lm"
QUANT = LM / "tiny_lm_int16x8.tflite"
FLOAT = LM / "tiny_lm_float.tflite"
PROMPT = "The interpreter"
NEEDS = "apt-get install qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi"


@pytest.fixture(scope="module")
def host_tokens():
    """(model, prompt, max_tokens) -> the python backend's greedy tokens (cached)."""
    gens, cache = {}, {}

    def get(model: Path, prompt: str, n: int) -> list[int]:
        if (model, prompt, n) not in cache:
            gens.setdefault(model, Generator(model))
            cache[model, prompt, n] = gens[model].generate(prompt, max_tokens=n)["tokens"]
        return cache[model, prompt, n]

    return get


@pytest.fixture
def emulated():
    """A SerialLink to a DeviceEmulator running the int16x8 tiny_lm (socket pair, stopped at the end)."""
    emu = DeviceEmulator(QUANT.read_bytes(), max_frame=1024)
    link = sl.SerialLink(emu.start_pair(), timeout=2.0, invoke_timeout=60)
    yield emu, link
    link.close()
    emu.stop()


# ------------------------------------------------------------------------------------------ payloads
def test_payload_layouts():
    start = dg.pack_start([5, 6], ["p", "tokens"], 128, 8, 0)
    assert start[:16] == struct.pack("<B3xHhHHB3x", 0, 8, 0, 2, 128, 2)
    assert start[16:24] == struct.pack("<2i", 5, 6) and start[24:] == b"\x01p\x06tokens"
    assert dg.pack_continue(4, None) == struct.pack("<B3xHh", 1, 4, -1)
    r = dg.GenerateReply([3, 4], "eos", 17, 10, 20, 2)
    assert dg.unpack_reply(dg.pack_reply(r)) == r
    with pytest.raises(ValueError):
        dg.unpack_reply(dg.pack_reply(r)[:-1])


def test_state_bytes():
    from edge_sdk.model import read_model

    assert dg.state_bytes(read_model(str(QUANT))) == 131072  # 2 layers x k, v x [4, 128, 16] float32
    from tests.oprunner import T, op_model

    assert dg.state_bytes(read_model(op_model("RELU", [T((4,), "FLOAT32")], [T((4,), "FLOAT32")]))) == 0


# ------------------------------------------------------------------------------------------ emulator
@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_emulator_streams_the_host_tokens(emulated, host_tokens, chunk):
    emu, link = emulated
    pieces = []
    out = tg.DeviceGenerator(QUANT, link, chunk=chunk).generate(PROMPT, 20, on_text=pieces.append)
    want = host_tokens(QUANT, PROMPT, 20)
    assert out["tokens"] == want and out["stop_reason"] == "max_tokens"
    assert "".join(pieces) == out["text"] and len(pieces) == -(-20 // chunk)  # one piece per reply
    assert emu.executed.count("GENERATE") == -(-20 // chunk)
    assert out["context_used"] == len(PROMPT) + 19 and out["decode_steps"] == 19
    assert out["kv_cache_bytes"] == 131072 and out["backend"] == "device"


def test_emulator_long_prompt_and_full_context(emulated, host_tokens):
    """A prompt past max_prompt (32) goes through decode on the device; the context (128) ends the text."""
    _, link = emulated
    text = (LM / "corpus.txt").read_text()[:120]
    out = tg.DeviceGenerator(QUANT, link, chunk=5).generate(text, 30)
    assert out["tokens"] == Generator(QUANT).generate(text, max_tokens=30)["tokens"]
    assert out["stop_reason"] == "context_full" and out["context_used"] == 128 and len(out["tokens"]) == 9


def test_emulator_eos_ends_the_text(emulated):
    """An end-of-text id that the model picks is not sent and ends the text (CONTINUE is then refused)."""
    _, link = emulated
    gen = tg.DeviceGenerator(QUANT, link)
    ids = gen.spec.tokenizer.encode(PROMPT)
    names = dg.names_of(gen.spec)
    first = dg.unpack_reply(link.generate(dg.pack_start(ids, names, 128, 1, None))).tokens[0]
    r = dg.unpack_reply(link.generate(dg.pack_start(ids, names, 128, 5, first)))  # call that id "eos"
    assert r.tokens == [] and r.stop == "eos"
    with pytest.raises(DeviceError, match="BAD_RANGE.*START one"):
        link.generate(dg.pack_continue(3, None))


def test_emulator_errors(emulated):
    _, link = emulated
    gen = tg.DeviceGenerator(QUANT, link)
    names = dg.names_of(gen.spec)
    with pytest.raises(DeviceError, match="BAD_INDEX \\(4\\)"):
        link.generate(dg.pack_start([1, 2], names[:4] + ["nope"] + names[5:], 128, 2, None))
    with pytest.raises(DeviceError, match="BAD_INDEX \\(8\\)"):  # the pair's first name
        link.generate(dg.pack_start([1, 2], names[:9] + ["no_cache"] + names[10:], 128, 2, None))
    with pytest.raises(DeviceError, match="BAD_PAYLOAD"):
        link.generate(dg.pack_start([1, 2], names[:7], 128, 2, None))
    with pytest.raises(DeviceError, match="TOO_LARGE \\(248\\)"):  # (1024 - 32) / 4 ids fit one reply
        link.generate(dg.pack_start([1, 2], names, 128, 249, None))
    with pytest.raises(DeviceError, match="BAD_RANGE"):
        link.generate(dg.pack_start([1] * 129, names, 128, 1, None))


def test_device_without_generate_is_refused():
    """A model without generation metadata: no GENERATE capability; the command itself is UNSUPPORTED."""
    from tests.oprunner import T, op_model

    emu = DeviceEmulator(op_model("RELU", [T((4,), "FLOAT32")], [T((4,), "FLOAT32")]))
    with sl.SerialLink(emu.start_pair(), timeout=2.0) as link:
        assert "GENERATE" not in link.hello().capability_names
        with pytest.raises(DeviceError, match="no GENERATE"):
            tg.DeviceGenerator(QUANT, link)
        with pytest.raises(DeviceError, match="capability GENERATE"):
            link.generate(dg.pack_continue(1, None))
        with pytest.raises(DeviceError, match="UNSUPPORTED"):
            link._transact(sl.GENERATE, dg.pack_continue(1, None))
    emu.stop()


# ------------------------------------------------------------------------------------------ QEMU
qemu = pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                          reason=f"needs QEMU and the Arm GCC toolchain: {NEEDS}")


@pytest.fixture
def state(tmp_path, monkeypatch):
    from edge_sdk.device import qemu_board as qb
    from edge_sdk.tools import flash as fl

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    yield tmp_path
    qb.stop_board(all=True)
    assert qb.list_boards() == []


@pytest.mark.slow
@qemu
def test_qemu_generate_same_tokens_as_host(state, host_tokens, capsys):
    """`edge generate --target qemu-mps2-an386 --greedy` (flash, then GENERATE) == python == c, for the int16x8
    and the float model; a second call reuses the running board; a prompt past max_prompt runs decode steps
    on the device."""
    import json

    from edge_sdk.device import qemu_board as qb
    from edge_sdk.tools import flash as fl
    from edge_sdk.cli import main

    for model in (QUANT, FLOAT):
        assert main(["generate", str(model), "--target", "qemu-mps2-an386", "--prompt", PROMPT, "--greedy",
                     "--max-tokens", "24", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        want = host_tokens(model, PROMPT, 24)
        assert out["tokens"] == want, model.name
        assert out["tokens"] == Generator(model, backend="c").generate(PROMPT, max_tokens=24)["tokens"]
        assert out["timer_units"] == "systick" and out["device_prefill_ticks"] > 0 and out["device_decode_ticks"] > 0
    boards = qb.list_boards()
    assert len(boards) == 2
    long_prompt = (LM / "corpus.txt").read_text()[200:240]  # 40 characters: 32 prefilled, 8 decoded
    port = next(b["url"] for b in boards if b["model"].endswith(QUANT.name))
    out = tg.generate_on_device(QUANT, "qemu-mps2-an386", prompt=long_prompt, max_tokens=10)
    assert out["port"] == port  # reused
    assert out["tokens"] == host_tokens(QUANT, long_prompt, 10) and out["context_used"] == 49
