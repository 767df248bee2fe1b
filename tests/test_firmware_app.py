"""The serial-protocol firmware (firmware_c/app) under QEMU mps2-an386: framing, errors, duplicates, and
outputs bit-exact against our Python interpreter (hello_world_int8 and a CONV_2D model built by our writer).

Every QEMU started here is stopped in a finalizer (its whole process group); every socket read has a timeout.
"""

import shutil
import socket
import struct
import time

import numpy as np
import pytest

from edge_sdk.device import serial_link as sl
from tests.conftest import shared_model

NEEDS = "apt-get install qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi"
pytestmark = [
    pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                       reason=f"needs QEMU and the Arm GCC toolchain: {NEEDS}"),
]


@pytest.fixture
def board_factory(tmp_path, monkeypatch):
    """flash(model) -> FlashResult on QEMU; every board is stopped when the test ends."""
    from edge_sdk.device import qemu_board as qb
    from edge_sdk.tools import flash as fl

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    started = []

    def start(model_path):
        r = fl.flash(model_path, "qemu-mps2-an386", build_dir=tmp_path / f"build{len(started)}")
        started.append(r)
        return r

    yield start
    for r in started:
        qb._kill_group(r.pid, r.pid)
    qb.stop_board(all=True)
    assert qb.list_boards() == []


def _host(model_bytes, inputs):
    from edge_sdk import Interpreter

    it = Interpreter(model_content=model_bytes)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


class Raw:
    """A bare socket to the board's UART: send frames, read decoded frames (with a deadline)."""

    def __init__(self, url):
        host, port = url[len("socket://"):].split(":")
        self.s = socket.create_connection((host, int(port)), timeout=2)
        self.s.settimeout(0.2)
        self.reader = sl.FrameReader()
        self.pending = []

    def send(self, data: bytes):
        self.s.sendall(data)

    def frames(self, n=1, deadline=10.0, skip_logs=True):
        end = time.monotonic() + deadline
        while len(self.pending) < n and time.monotonic() < end:
            try:
                data = self.s.recv(4096)
            except TimeoutError:
                continue
            if not data:
                break
            for f in self.reader.feed(data):
                if skip_logs and isinstance(f, sl.Frame) and f.type == sl.LOG:
                    continue
                self.pending.append(f)
        out, self.pending = self.pending[:n], self.pending[n:]
        assert len(out) == n, f"expected {n} frame(s), got {out}"
        return out

    def close(self):
        self.s.close()


def _cmd(type_, seq, payload=b"", version=1, flags=0):
    return sl.wire(sl.encode_frame(type_, seq, payload, flags=flags, version=version), lead=True)


@pytest.mark.slow
def test_hello_world_protocol_and_bit_exact(board_factory):
    path = shared_model("tflite-micro/hello_world_int8.tflite")
    data = path.read_bytes()
    r = board_factory(path)
    link = sl.SerialLink(r.port, timeout=1.0)
    try:
        h = link.hello()
        assert h.protocol_version == 1 and h.runtime_version.startswith("edge-c")
        assert h.board == "qemu-mps2-an386" and h.timer_source == "systick" and h.timer_units == "systick"
        assert h.emulated and h.max_frame >= 256 and h.clock_hz == 25_000_000
        assert h.capability_names == ["TRACE", "MULTI_RUN", "RESET_STATE", "LOG", "EMULATED", "ACK", "RESTART"]
        link.expect_model(data)
        assert h.arena_size == r.arena_bytes
        info = link.info()
        assert [(s.type, s.shape) for s in info.inputs] == [("INT8", (1, 1))]
        assert [(s.type, s.shape) for s in info.outputs] == [("INT8", (1, 1))] and info.n_ops == 3
        assert 0 < info.arena_used <= h.arena_size
        for v in range(-128, 128, 17):
            x = np.array([[v]], np.int8)
            link.set_input(0, x)
            res = link.invoke(2)
            assert res.runs == 2 and res.min_ticks <= res.last_ticks <= res.max_ticks
            assert np.array_equal(link.get_output(0), _host(data, [x])[0])
        tr = link.get_trace()
        assert tr.runs == 2 and len(tr.run_ticks) == 2 and tr.ops_run == 3
        assert [o.op for o in tr.ops] == ["FULLY_CONNECTED"] * 3 and [o.index for o in tr.ops] == [0, 1, 2]
        assert all(o.ticks > 0 for o in tr.ops) and tr.arena_high_water >= tr.arena_used > 0
        link.reset_state()
        assert link.get_trace().runs == 0  # the trace is cleared by RESET_STATE
        with pytest.raises(Exception, match="no LOAD_MODEL"):
            link.load_model(data)
    finally:
        link.close()

    # raw frames: the spec's HELLO vector, NAK on damage, STATUS errors, duplicates answered from the cache
    raw = Raw(r.port)
    try:
        raw.send(bytes.fromhex("00 03 01 01 01 02 01 01 01 05 26 B3 43 B7 00"))
        (f,) = raw.frames()
        assert f.type == sl.HELLO | sl.REPLY and f.seq == 1
        bad = bytearray(sl.encode_frame(sl.INFO, 2))
        bad[-1] ^= 0x55
        raw.send(sl.wire(bytes(bad), lead=True))
        (f,) = raw.frames()
        assert f.type == sl.NAK and f.seq == 0
        raw.send(b"\x01" * 3000 + b"\x00")  # longer than max_frame: dropped with a NAK
        (f,) = raw.frames()
        assert f.type == sl.NAK
        raw.send(_cmd(sl.INFO, 3, version=2))
        (f,) = raw.frames()
        assert f.type == sl.STATUS and f.version == 1
        assert sl.unpack_status(f.payload)[:2] == (sl.BAD_VERSION, 1)
        raw.send(_cmd(0x20, 4))
        (f,) = raw.frames()
        assert sl.unpack_status(f.payload)[:2] == (sl.UNKNOWN_COMMAND, 0x20)
        raw.send(_cmd(sl.LOAD_MODEL, 41, sl.LOAD_HEAD.pack(10, 0) + bytes(10)))
        (f,) = raw.frames()
        assert sl.unpack_status(f.payload)[:2] == (sl.UNSUPPORTED, 3)
        raw.send(_cmd(sl.INVOKE, 5, struct.pack("<I", 0)))
        (f,) = raw.frames(2)[1:]  # ACK, then the STATUS
        assert sl.unpack_status(f.payload)[0] == sl.BAD_PAYLOAD
        raw.send(_cmd(sl.GET_OUTPUT, 6, sl.CHUNK_REQUEST.pack(3, 0, 64, 0)))
        (f,) = raw.frames()
        assert sl.unpack_status(f.payload)[:2] == (sl.BAD_INDEX, 3)
        raw.send(_cmd(sl.SET_INPUT, 7, sl.SET_INPUT_HEAD.pack(0, 1) + b"\x05"))
        (f,) = raw.frames()
        assert sl.unpack_status(f.payload)[:2] == (sl.BAD_RANGE, 1)
        # INVOKE seq 8 executes (ACK + reply); the retransmission gets the same reply and no ACK
        raw.send(_cmd(sl.INVOKE, 8, struct.pack("<I", 3)))
        ack, rep = raw.frames(2)
        assert ack.type == sl.ACK and ack.seq == 8 and rep.type == sl.INVOKE | sl.REPLY
        raw.send(_cmd(sl.INVOKE, 8, struct.pack("<I", 3), flags=sl.FLAG_RETRANSMIT))
        (again,) = raw.frames()
        assert again == rep
        raw.send(_cmd(sl.GET_TRACE, 9, sl.TRACE_REQUEST.pack(0, 2000, 0)))
        (f,) = raw.frames()
        assert sl.unpack_trace(f.payload[sl.TRACE_REPLY.size:]).runs == 3  # executed once, with 3 runs
    finally:
        raw.close()


@pytest.mark.slow
def test_writer_built_conv_model_bit_exact(board_factory, tmp_path):
    """A CONV_2D (per-channel int8, SAME, stride 2, RELU) + FULLY_CONNECTED model built by our writer, with an
    input larger than one frame (chunked SET_INPUT): the firmware's outputs equal our interpreter's."""
    from tests.oprunner import T, op_model

    rng = np.random.default_rng(5)
    w = rng.integers(-127, 128, (8, 3, 3, 3), dtype=np.int8)
    b = rng.integers(-2000, 2000, 8).astype(np.int32)
    model = op_model("CONV_2D",
                     [T((1, 32, 32, 3), scale=0.05, zero_point=-3),
                      T((8, 3, 3, 3), scale=np.linspace(0.002, 0.01, 8).astype(np.float32), zero_point=[0] * 8,
                        data=w),
                      T((8,), "INT32", scale=(0.05 * np.linspace(0.002, 0.01, 8)).astype(np.float32),
                        zero_point=[0] * 8, data=b)],
                     [T((1, 16, 16, 8), scale=0.04, zero_point=-128)],
                     options={"padding": "SAME", "stride_w": 2, "stride_h": 2, "fused_activation_function": "RELU"})
    path = tmp_path / "conv.tflite"
    path.write_bytes(model)
    r = board_factory(path)
    with sl.SerialLink(r.port, timeout=1.0) as link:
        link.expect_model(model)
        for seed in range(2):
            x = np.random.default_rng(seed).integers(-128, 128, (1, 32, 32, 3), dtype=np.int8)
            link.set_input(0, x)  # 3072 bytes: two chunks
            link.invoke(1)
            y = link.get_output(0)  # 2048 bytes: two chunks
            assert y.shape == (1, 16, 16, 8)
            assert np.array_equal(y, _host(model, [x])[0])
        assert [o.op for o in link.get_trace().ops] == ["CONV_2D"]
