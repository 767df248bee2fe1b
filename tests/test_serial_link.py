"""The serial protocol (docs/serial-protocol.md): framing and CRC vectors, every command against the Python
device emulator over a real pyserial ``socket://`` URL, and the faults of issue 6 section 4."""

from __future__ import annotations

import hashlib
import logging
import random
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.device import serial_link as sl
from edge_sdk.device.emulator import OP_BASE_TICKS, RUN_BASE_TICKS, DeviceEmulator
from edge_sdk.device.serial_link import (
    SerialLink,
    cobs_decode,
    cobs_encode,
    decode_frame,
    encode_frame,
)
from edge_sdk.device.transports import FaultInjector, FaultyTransport, parse_faulty_url
from edge_sdk.errors import DeviceError, ModelError
from edge_sdk.runtime.interpreter import Interpreter
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder

SPEC = Path(__file__).resolve().parents[1] / "docs" / "serial-protocol.md"


# ---------------------------------------------------------------------------------------------- models
def fc_model(seed: int = 0, n_in: int = 32, n_out: int = 16) -> bytes:
    """int8: y = FULLY_CONNECTED(x); z = RELU(y) ... two outputs (y and z)."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", (1, n_in), "INT8", scale=0.05, zero_point=3)
    w = g.constant("w", rng.integers(-127, 128, (n_out, n_in), dtype=np.int8), scale=0.02, zero_point=0)
    b = g.constant("b", rng.integers(-500, 500, (n_out,), dtype=np.int32), scale=0.05 * 0.02, zero_point=0)
    y = g.tensor("y", (1, n_out), "INT8", scale=0.1, zero_point=-5)
    g.op("FULLY_CONNECTED", [x, w, b], [y])
    z = g.tensor("z", (1, n_out), "INT8", scale=0.1, zero_point=-5)
    g.op("RELU", [y], [z])
    g.output(y, z)
    return write_model(g.build())


def pool_model(shape=(1, 64, 64, 4)) -> bytes:
    """int8 AVERAGE_POOL_2D 2x2/2: a 16 KiB input and a 4 KiB output."""
    g = GraphBuilder()
    x = g.input("x", shape, "INT8", scale=0.1, zero_point=-2)
    out = (shape[0], shape[1] // 2, shape[2] // 2, shape[3])
    y = g.tensor("y", out, "INT8", scale=0.1, zero_point=-2)
    g.op("AVERAGE_POOL_2D", [x], [y], padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    g.output(y)
    return write_model(g.build())


def counter_model() -> bytes:
    """float32 state: y = acc + x; acc = y (a resource variable), so RESET_STATE is observable."""
    g = GraphBuilder()
    x = g.input("x", (3,), "FLOAT32")
    h = g.tensor("h", (), "RESOURCE")
    v = g.tensor("v", (3,), "FLOAT32")
    y = g.tensor("y", (3,), "FLOAT32")
    g.op("VAR_HANDLE", [], [h], container="", shared_name="acc")
    g.op("READ_VARIABLE", [h], [v])
    g.op("ADD", [v, x], [y])
    g.op("ASSIGN_VARIABLE", [h, y], [])
    g.output(y)
    return write_model(g.build())


def reference(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    interp = Interpreter(model_content=model)
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]) for d in interp.get_output_details()]


@pytest.fixture
def emulator():
    emus = []

    def make(model=None, **kw) -> DeviceEmulator:
        emu = DeviceEmulator(model, **kw)
        emu.start()
        emus.append(emu)
        return emu

    yield make
    for emu in emus:
        emu.stop()
        assert emu._thread is None  # joined


@pytest.fixture
def connect():
    links = []

    def make(url, **kw) -> SerialLink:
        kw.setdefault("timeout", 0.2)
        link = SerialLink(url, **kw)
        links.append(link)
        return link

    yield make
    for link in links:
        link.close()


# ---------------------------------------------------------------------------------------------- framing
def _crc32_bitwise(data: bytes) -> int:
    """The spec's C loop, transcribed."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def test_crc32_parameters_and_check_value():
    assert sl.crc32(b"123456789") == 0xCBF43926
    assert _crc32_bitwise(b"123456789") == 0xCBF43926
    rng = random.Random(1)
    for n in (0, 1, 7, 100, 1000):
        data = bytes(rng.randrange(256) for _ in range(n))
        assert sl.crc32(data) == _crc32_bitwise(data) == zlib.crc32(data)


COBS_VECTORS = [
    (b"", b"\x01"),
    (b"\x00", b"\x01\x01"),
    (b"\x00\x00", b"\x01\x01\x01"),
    (bytes.fromhex("11220033"), bytes.fromhex("0311220233")),
    (bytes.fromhex("11223344"), bytes.fromhex("0511223344")),
    (bytes.fromhex("11000000"), bytes.fromhex("0211010101")),
    (bytes(range(1, 255)), b"\xff" + bytes(range(1, 255))),
    (bytes(range(1, 256)), b"\xff" + bytes(range(1, 255)) + b"\x02\xff"),
    (bytes(range(2, 256)) + b"\x00", b"\xff" + bytes(range(2, 256)) + b"\x01\x01"),
    (bytes(range(3, 256)) + b"\x00\x01", b"\xfe" + bytes(range(3, 256)) + b"\x02\x01"),
]


@pytest.mark.parametrize("decoded,encoded", COBS_VECTORS)
def test_cobs_vectors(decoded, encoded):
    assert cobs_encode(decoded) == encoded
    assert cobs_decode(encoded) == decoded


def test_cobs_round_trip_and_overhead_bound():
    rng = random.Random(2)
    sizes = [253, 254, 255, 508, 509, 762, 1000] + [rng.randrange(0, 1200) for _ in range(200)]
    for n in sizes:
        density = rng.choice([0.0, 0.001, 0.05, 0.5])
        data = bytes(0 if rng.random() < density else rng.randrange(1, 256) for _ in range(n))
        enc = cobs_encode(data)
        assert 0 not in enc
        assert len(enc) <= n + -(-n // 254) + 1
        assert cobs_decode(enc) == data
    with pytest.raises(ValueError):
        cobs_decode(b"\x05\x11\x22")  # code points past the end


def test_frame_vectors_match_the_spec():
    hello = encode_frame(sl.HELLO, 1)
    assert hello == bytes.fromhex("0101000001000000" "26b343b7")
    assert sl.wire(hello, lead=True) == bytes.fromhex("00 03 01 01 01 02 01 01 01 05 26 B3 43 B7 00")
    reset = encode_frame(sl.RESET_STATE, 0x1234)
    assert reset == bytes.fromhex("01 07 00 00 34 12 00 00 91 F9 C4 0C")
    assert sl.wire(reset, lead=True) == bytes.fromhex("00 03 01 07 01 03 34 12 01 05 91 F9 C4 0C 00")
    spec = SPEC.read_text()
    for text in ("`01 01 00 00 01 00 00 00 26 B3 43 B7`", "`00 03 01 01 01 02 01 01 01 05 26 B3 43 B7 00`",
                 "`01 07 00 00 34 12 00 00 91 F9 C4 0C`", "`00 03 01 07 01 03 34 12 01 05 91 F9 C4 0C 00`",
                 "**`0xCBF43926`**"):
        assert text in spec, text


def test_frame_layout_little_endian():
    f = encode_frame(sl.SET_INPUT, 0xBEEF, b"\x01\x02\x03", flags=sl.FLAG_RETRANSMIT)
    assert f[:8] == bytes([1, 3, 1, 0, 0xEF, 0xBE, 3, 0])
    assert struct.unpack("<I", f[-4:])[0] == zlib.crc32(f[:-4])
    frame = decode_frame(f)
    assert (frame.version, frame.type, frame.flags, frame.seq, frame.payload) == (1, 3, 1, 0xBEEF, b"\x01\x02\x03")


def test_corrupt_frames_are_rejected():
    f = bytearray(encode_frame(sl.INFO, 5, b"abc"))
    for k in range(len(f)):  # every single-bit error anywhere is caught
        for bit in (0, 7):
            bad = bytearray(f)
            bad[k] ^= 1 << bit
            with pytest.raises(ValueError):
                decode_frame(bytes(bad))
    with pytest.raises(ValueError, match="shorter"):
        decode_frame(bytes(f[:11]))
    with pytest.raises(ValueError, match="payload bytes"):
        decode_frame(bytes(f[:-5]) + bytes(f[-4:]))


def test_reader_resynchronises_after_garbage():
    reader = sl.FrameReader(limit=64)
    good = sl.wire(encode_frame(sl.INFO, 9))
    items = reader.feed(b"\x13\x37garbage" + b"\x00" + good[:5])
    assert len(items) == 1 and isinstance(items[0], ValueError)
    items = reader.feed(good[5:] + b"\x00\x00" + b"\xff" * 200 + b"\x00" + good)
    frames = [i for i in items if isinstance(i, sl.Frame)]
    assert [f.seq for f in frames] == [9, 9]
    assert any("limit" in str(i) for i in items if isinstance(i, ValueError))


# ---------------------------------------------------------------------------------------------- the device, exactly
def _cmd(type_, seq, payload=b"", version=1):
    return b"\x00" + cobs_encode(encode_frame(type_, seq, payload, version=version)) + b"\x00"


def _answers(data: bytes) -> list[sl.Frame]:
    return [f for f in sl.FrameReader().feed(data) if isinstance(f, sl.Frame)]


def test_emulator_answers_duplicates_from_its_cache_without_executing():
    model = fc_model()
    emu = DeviceEmulator(model)
    assert _answers(emu.receive(_cmd(sl.HELLO, 1)))[0].type == sl.HELLO | sl.REPLY
    first = emu.receive(_cmd(sl.INVOKE, 2, struct.pack("<I", 3)))
    again = emu.receive(_cmd(sl.INVOKE, 2, struct.pack("<I", 3)))
    types = [f.type for f in _answers(first) if f.type != sl.LOG]
    assert types == [sl.ACK, sl.INVOKE | sl.REPLY]  # ACK before the (long) command runs
    reply = next(f for f in _answers(first) if f.type == sl.INVOKE | sl.REPLY)
    assert [f for f in _answers(again) if f.type != sl.LOG] == [reply]  # no ACK, same reply, not re-run
    assert emu.executed.count("INVOKE") == 1 and emu.duplicates == 1
    emu.receive(_cmd(sl.INVOKE, 3, struct.pack("<I", 1)))  # a new seq runs
    assert emu.executed.count("INVOKE") == 2
    # HELLO clears the cache: the old seq is a new command afterwards
    emu.receive(_cmd(sl.HELLO, 3))
    emu.receive(_cmd(sl.INVOKE, 3, struct.pack("<I", 1)))
    assert emu.executed.count("INVOKE") == 3


def test_emulator_naks_bad_frames_and_refuses_other_versions():
    emu = DeviceEmulator(fc_model())
    bad = bytearray(_cmd(sl.INFO, 4))
    bad[3] ^= 0x40
    assert [f.type for f in _answers(emu.receive(bytes(bad)))] == [sl.NAK]
    (st,) = _answers(emu.receive(_cmd(sl.INFO, 5, version=7)))
    assert st.type == sl.STATUS and st.seq == 5
    assert sl.unpack_status(st.payload)[:2] == (sl.BAD_VERSION, 1)
    (st,) = _answers(emu.receive(_cmd(0x33, 6)))
    assert sl.unpack_status(st.payload)[0] == sl.UNKNOWN_COMMAND
    ack, st = _answers(emu.receive(_cmd(sl.INVOKE, 7, b"\x01")))
    assert ack.type == sl.ACK and ack.seq == 7
    assert sl.unpack_status(st.payload)[:2] == (sl.BAD_PAYLOAD, 1)


# ---------------------------------------------------------------------------------------------- every command
def test_every_command_round_trips_and_matches_the_interpreter(emulator, connect):
    model = fc_model()
    emu = emulator(model, clock_hz=25_000_000, arena_size=4096)
    link = connect(emu.url)
    h = link.hello()
    assert h.protocol_version == sl.PROTOCOL_VERSION
    assert h.model_sha256 == hashlib.sha256(model).digest() and h.model_size == len(model)
    assert (h.arena_size, h.clock_hz, h.max_frame) == (4096, 25_000_000, 1024)
    assert (h.timer_source, h.timer_units, h.emulated) == ("emulated", "emulated-ticks", True)
    assert {"TRACE", "MULTI_RUN", "RESET_STATE", "LOAD_MODEL", "LOG", "EMULATED", "ACK", "RESTART"} == set(h.capability_names)
    assert h.runtime_version and h.board == "python-emulator"

    info = link.info()
    assert [(t.type, t.shape, t.nbytes) for t in info.inputs] == [("INT8", (1, 32), 32)]
    assert [(t.type, t.shape) for t in info.outputs] == [("INT8", (1, 16)), ("INT8", (1, 16))]
    assert info.inputs[0].zero_point == 3 and info.inputs[0].scale == pytest.approx(0.05)
    assert info.outputs[0].zero_point == -5 and info.n_ops == 2 and info.arena_used > 0

    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.integers(-128, 128, (1, 32), dtype=np.int8)
        link.set_input(0, x)
        result = link.invoke()
        got = [link.get_output(0), link.get_output(1)]
        want = reference(model, [x])
        for g, w in zip(got, want):
            assert g.dtype == np.int8 and g.shape == (1, 16)
            np.testing.assert_array_equal(g, w)
        assert result.runs == 1

    result = link.invoke(runs=5)
    trace = link.get_trace()
    assert trace.runs == 5 and len(trace.run_ticks) == 5 and trace.emulated and trace.unit == "emulated-ticks"
    assert [(r.index, r.op) for r in trace.ops] == [(0, "FULLY_CONNECTED"), (1, "RELU")]
    # the documented cost model: 16 + MACs + output elements per op
    assert [r.ticks for r in trace.ops] == [OP_BASE_TICKS + 32 * 16 + 16, OP_BASE_TICKS + 16]
    assert result.last_ticks == trace.run_ticks[-1] == trace.total + RUN_BASE_TICKS
    assert trace.arena_high_water == info.arena_used and trace.dropped == 0

    link.reset_state()
    link.expect_model(model)
    with pytest.raises(IndexError):
        link.get_output(2)
    with pytest.raises(ValueError, match=r"INT8 \[1, 32\]"):
        link.set_input(0, np.zeros((1, 31), np.int8))


def test_traces_are_reproducible(emulator, connect):
    model = fc_model(seed=4)
    traces = []
    for _ in range(2):
        link = connect(emulator(model).url)
        link.set_input(0, np.ones((1, 32), np.int8))
        link.invoke(runs=2)
        traces.append(link.get_trace())
    assert traces[0].ops == traces[1].ops and traces[0].run_ticks == traces[1].run_ticks


def test_reset_state_restores_variables(emulator, connect):
    link = connect(emulator(counter_model()).url)
    link.set_input(0, np.array([1, 2, 3], np.float32))
    link.invoke(runs=3)
    np.testing.assert_array_equal(link.get_output(0), [3, 6, 9])
    link.reset_state()
    link.invoke()  # inputs persist across invokes and resets
    np.testing.assert_array_equal(link.get_output(0), [1, 2, 3])


def test_load_model_into_ram_then_run(emulator, connect):
    emu = emulator(None, max_frame=256)
    link = connect(emu.url)
    h = link.hello()
    assert h.model_size == 0 and h.model_hash == ""
    with pytest.raises(DeviceError, match="INFO failed on socket://.*NO_MODEL"):
        link.info()
    with pytest.raises(DeviceError, match="no model"):
        link.expect_model(b"x")
    model = fc_model(seed=5)
    h = link.load_model(model)
    assert h.model_sha256 == hashlib.sha256(model).digest()
    assert emu.executed.count("LOAD_MODEL") >= len(model) // 256
    link.expect_model(model)
    x = np.arange(-16, 16, dtype=np.int8).reshape(1, 32)
    link.set_input(0, x)
    link.invoke()
    np.testing.assert_array_equal(link.get_output(1), reference(model, [x])[1])
    assert any("model loaded" in line.text for line in link.poll(0.05) + link.logs)
    # a broken model is refused by the device, and it then has none
    with pytest.raises(DeviceError, match="LOAD_MODEL failed on .*MODEL_ERROR"):
        link.load_model(b"\x00" * 300)
    assert link.hello().model_size == 0


def test_large_inputs_and_outputs_are_chunked(emulator, connect):
    model = pool_model()
    emu = emulator(model, max_frame=256)
    link = connect(emu.url)
    x = np.random.default_rng(6).integers(-128, 128, (1, 64, 64, 4), dtype=np.int8)
    link.set_input(0, x)
    link.invoke()
    y = link.get_output(0)
    np.testing.assert_array_equal(y, reference(model, [x])[0])
    assert emu.executed.count("SET_INPUT") >= 16384 // 256 + 1
    assert emu.executed.count("GET_OUTPUT") >= 4096 // 256


def test_device_errors_name_code_and_command(emulator, connect):
    link = connect(emulator(fc_model()).url)
    link.hello()
    link._info = sl.DeviceInfo([], [sl.TensorSpec(0, "INT8", (1, 16), 16)] * 3, 2, 0)  # host believes in 3
    with pytest.raises(DeviceError, match=r"GET_OUTPUT failed on socket://127\.0\.0\.1:\d+: BAD_INDEX \(2\)"):
        link.get_output(2)


# ---------------------------------------------------------------------------------------------- logs
def test_log_frames_are_collected_and_logged(emulator, connect, caplog):
    emu = emulator(fc_model())
    link = connect(emu.url)
    link.hello()
    logger = logging.getLogger("edge_sdk")
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="edge_sdk"):
            emu.log("temperature high", level=2)
            emu.log("ünïcode ok", level=1)
            lines = link.poll(0.2)
            link.invoke()  # the emulator logs each invoke (debug); collected while waiting for the reply
            link.poll(0.05)
    finally:
        logger.setLevel(old)
    assert [(l.level, l.text) for l in lines[:2]] == [("warning", "temperature high"), ("info", "ünïcode ok")]
    assert any(l.text.startswith("invoke: 1 run") for l in link.logs)
    assert [l.seq for l in link.logs] == list(range(1, len(link.logs) + 1))
    assert any("temperature high" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


# ---------------------------------------------------------------------------------------------- faults (issue 6, section 4)
def test_faulty_url_options():
    inner, kw = parse_faulty_url("faulty://socket://127.0.0.1:5#rate=0.02&seed=9&kinds=drop,corrupt&direction=read")
    assert inner == "socket://127.0.0.1:5"
    assert kw == {"rate": 0.02, "seed": 9, "kinds": ("drop", "corrupt"), "direction": "read"}
    with pytest.raises(ValueError, match="unknown faulty"):
        parse_faulty_url("faulty://loop://#speed=3")
    with pytest.raises(ValueError, match="fault kinds"):
        FaultInjector(kinds=("flip",))


def test_fault_injector_is_seeded_and_does_what_it_says():
    data = bytes(range(256)) * 40
    a, b = FaultInjector(0.01, seed=5), FaultInjector(0.01, seed=5)
    out = a.apply(data)
    assert out == b.apply(data) and out != data
    c = a.counts
    assert all(c[k] > 20 for k in c) and sum(c.values()) < 0.02 * len(data)
    assert len(out) == len(data) - c["drop"] + c["duplicate"]
    assert FaultInjector(0.01, seed=6).apply(data) != out


@pytest.mark.parametrize("seed", [1, 2])
def test_one_percent_faulty_link_still_gives_exact_results(emulator, connect, seed):
    model = fc_model(seed=seed)
    emu = emulator(model)
    url = f"faulty://{emu.url}#rate=0.01&seed={seed}"
    link = connect(url, timeout=0.05, retries=20)
    assert link.port == url
    link.hello()
    link.expect_model(model)
    rng = np.random.default_rng(seed)
    xs = [rng.integers(-128, 128, (1, 32), dtype=np.int8) for _ in range(50)]
    interp = Interpreter(model_content=model)
    interp.allocate_tensors()
    for x in xs:
        link.set_input(0, x)
        link.invoke()
        got = link.get_output(1)
        interp.set_tensor(interp.get_input_details()[0]["index"], x)
        interp.invoke()
        np.testing.assert_array_equal(got, interp.get_tensor(interp.get_output_details()[1]["index"]))
    trace = link.get_trace()
    assert [r.op for r in trace.ops] == ["FULLY_CONNECTED", "RELU"]
    faults = link._ser.faults.counts
    assert all(faults[k] > 0 for k in ("drop", "duplicate", "corrupt")), faults
    assert link.retransmissions > 0 and emu.duplicates > 0  # retries happened, and were answered from the cache
    assert emu.executed.count("INVOKE") == 50  # ...so nothing ran twice


def test_faulty_transport_wrapper_object(emulator, connect):
    import serial

    model = fc_model(seed=7)
    emu = emulator(model)
    wrapped = FaultyTransport(serial.serial_for_url(emu.url, timeout=0.01), rate=0.01, seed=11)
    link = connect(wrapped, timeout=0.05, retries=20)
    x = np.full((1, 32), 7, np.int8)
    link.set_input(0, x)
    for _ in range(10):
        link.invoke()
        np.testing.assert_array_equal(link.get_output(0), reference(model, [x])[0])
    assert emu.executed.count("INVOKE") == 10


def test_silent_device_times_out_naming_command_and_port(emulator, connect):
    emu = emulator(fc_model())
    link = connect(emu.url, timeout=0.1, retries=2)
    link.hello()
    emu.mute = True
    start = time.monotonic()
    with pytest.raises(DeviceError) as err:
        link.invoke(runs=4)
    elapsed = time.monotonic() - start
    message = str(err.value)
    assert "INVOKE" in message and emu.url in message and "timeout" in message and "3 attempts" in message
    assert 0.3 <= elapsed < 0.3 + 0.5  # timeout x (retries + 1), plus slack
    assert link.last_command == "INVOKE"


def test_device_that_never_answers_hello(connect):
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        url = f"socket://127.0.0.1:{server.getsockname()[1]}"
        link = connect(url, timeout=0.05, retries=1)
        with pytest.raises(DeviceError, match=r"no answer to HELLO .* from socket://127\.0\.0\.1:\d+"):
            link.info()
    finally:
        server.close()


def test_protocol_version_mismatch_is_refused_naming_both(emulator, connect):
    link = connect(emulator(fc_model(), protocol_version=2).url)
    with pytest.raises(DeviceError, match="device speaks version 2, this host speaks version 1"):
        link.hello()


def test_model_hash_mismatch_is_detected(emulator, connect):
    on_device, ours = fc_model(seed=1), fc_model(seed=2)
    link = connect(emulator(on_device).url)
    assert link.model_hash == hashlib.sha256(on_device).hexdigest()
    with pytest.raises(DeviceError) as err:
        link.expect_model(ours)
    message = str(err.value)
    assert "model mismatch" in message and hashlib.sha256(on_device).hexdigest()[:16] in message
    assert hashlib.sha256(ours).hexdigest()[:16] in message
    link.expect_model(on_device)


def test_bad_arguments():
    with pytest.raises(DeviceError, match="cannot open serial port nosuch://x"):
        SerialLink("nosuch://x")
    with pytest.raises(ValueError, match="timeout"):
        SerialLink("loop://", timeout=0)
    with pytest.raises(ModelError):
        DeviceEmulator(b"not a model")
    with pytest.raises(ValueError, match="max_frame"):
        DeviceEmulator(None, max_frame=100)


def test_large_input_over_a_faulty_link_shrinks_its_chunks(emulator, connect):
    model = pool_model((1, 32, 32, 4))
    emu = emulator(model)
    link = connect(f"faulty://{emu.url}#rate=0.01&seed=4", timeout=0.05, retries=20)
    x = np.random.default_rng(8).integers(-128, 128, (1, 32, 32, 4), dtype=np.int8)
    link.set_input(0, x)
    link.invoke()
    np.testing.assert_array_equal(link.get_output(0), reference(model, [x])[0])
    # 1% of ~1000-byte frames almost never arrive whole: the link must have cut its chunks down
    assert link._chunk < 256


class _LosesFirstInvokeReply(DeviceEmulator):
    """ACKs an INVOKE, runs it, but its reply is lost the first time (only the ACK gets out)."""

    lost = 0

    def _handle(self, f):
        out = super()._handle(f)
        if f.type == sl.INVOKE and not self.lost:
            self.lost += 1
            ack = self._frame(sl.ACK, f.seq)
            assert out.startswith(ack)
            return ack
        return out


class _AcksButNeverAnswers(DeviceEmulator):
    def _handle(self, f):
        out = super()._handle(f)
        if f.type == sl.INVOKE:
            return self._frame(sl.ACK, f.seq) if f.flags == 0 else b""
        return out


def test_acknowledged_invoke_whose_reply_is_lost_is_answered_from_the_cache(connect):
    model = fc_model()
    with _LosesFirstInvokeReply(model) as emu:
        link = connect(emu.url, timeout=0.05, retries=0)  # retries=0: only the ACK keeps it alive
        x = np.full((1, 32), -3, np.int8)
        link.set_input(0, x)
        assert link.invoke(runs=2).runs == 2
        np.testing.assert_array_equal(link.get_output(0), reference(model, [x])[0])
        assert emu.lost == 1 and emu.executed.count("INVOKE") == 1 and emu.duplicates >= 1
        link.close()


def test_acknowledged_invoke_never_answered_times_out_after_invoke_timeout(connect):
    with _AcksButNeverAnswers(fc_model()) as emu:
        link = connect(emu.url, timeout=0.05, retries=1, invoke_timeout=0.4)
        link.hello()
        start = time.monotonic()
        with pytest.raises(DeviceError, match=r"INVOKE \(seq \d+\) on socket://.* acknowledged but not answered"):
            link.invoke()
        assert 0.4 <= time.monotonic() - start < 1.0
        link.close()


def test_socket_pair_transport_without_tcp():
    model = fc_model(seed=9)
    emu = DeviceEmulator(model)
    stream = emu.start_pair()
    try:
        link = SerialLink(stream, timeout=0.2)
        assert link.port == "pair://emulator"
        x = np.arange(32, dtype=np.int8).reshape(1, 32)
        link.set_input(0, x)
        link.invoke(runs=2)
        np.testing.assert_array_equal(link.get_output(0), reference(model, [x])[0])
        with pytest.raises(ValueError, match="runs"):
            link.invoke(runs=0)
        link.close()
    finally:
        emu.stop()
    assert emu._thread is None


class _ShortHello(DeviceEmulator):
    def _handle(self, f):
        if f.type == sl.HELLO:
            return self._frame(sl.HELLO | sl.REPLY, f.seq, b"\x01\x04")
        return super()._handle(f)


def test_malformed_reply_is_a_device_error(connect):
    with _ShortHello(fc_model()) as emu:
        link = connect(emu.url)
        with pytest.raises(DeviceError, match=r"malformed HELLO reply from socket://.* \(2 bytes\)"):
            link.hello()
        link.close()
