"""The host side of edge-sdk's framed serial protocol (the contract: docs/serial-protocol.md).

    link = SerialLink("socket://127.0.0.1:4321", timeout=0.5)   # any pyserial URL, or an open serial object
    hello = link.hello()                   # versions, capabilities, model hash, arena, clock, timer, max frame
    link.expect_model(model_bytes)         # DeviceError when the device runs another model
    link.set_input(0, x)                   # chunked to the device's frame size
    link.invoke(runs=10)
    y = link.get_output(0)                 # numpy, dtype and shape from info()
    trace = link.get_trace()               # per-op ticks of the last run, per-run totals, arena high water
    link.logs                              # LOG frames the device sent, in arrival order

Framing helpers (``cobs_encode``, ``cobs_decode``, ``crc32``, ``encode_frame``, ``decode_frame``) and the
payload layouts are shared with the emulator (``edge_sdk.device.emulator``).

Each command waits ``timeout`` seconds for its answer and retransmits (same ``seq``; the device answers a
duplicate from its cached reply) up to ``retries`` times; it retransmits at once when a corrupted frame or a
NAK arrives. A device that acknowledged an INVOKE gets ``invoke_timeout``. Failures are ``DeviceError``
naming the command and the port.

A legacy UINT8 model (TFLite v1 "quantized_uint8") reaches the device as every C path hands it to the C runtime
(edge_sdk.runtime.uint8: presented as INT8, zero points - 128): ``load_model`` sends the presented bytes, and
``expect_model`` accepts the model's own bytes when the device runs their presentation (what `edge flash`
embeds). The link then flips the presented inputs / outputs itself: ``info()`` declares them UINT8 (zero point
+ 128) as the model does, ``set_input`` takes uint8 and ``get_output`` returns uint8 (``presented_io`` says
which).
"""

from __future__ import annotations

import contextlib
import hashlib
import struct
import time
import zlib
from dataclasses import dataclass
from typing import Self

import numpy as np

from edge_sdk import log
from edge_sdk import timeouts as T
from edge_sdk.device import status_sites
from edge_sdk.errors import DeviceError
from edge_sdk.model.types import TENSOR_TYPES

PROTOCOL_VERSION = 1
HEADER = struct.Struct("<BBBBHH")  # version, type, flags, reserved, seq, length
HEADER_SIZE = HEADER.size  # 8
CRC_SIZE = 4
OVERHEAD = HEADER_SIZE + CRC_SIZE  # 12
MIN_MAX_FRAME = 256
MAX_FRAME_LIMIT = 65535
FLAG_RETRANSMIT = 0x01

# Commands (host -> device); replies are command | REPLY.
HELLO, INFO, SET_INPUT, INVOKE, GET_OUTPUT, GET_TRACE, RESET_STATE, LOAD_MODEL, GENERATE = range(1, 10)
REPLY = 0x80
NAK, LOG, ACK, STATUS = 0x7C, 0x7D, 0x7E, 0x7F
COMMAND_NAMES = {HELLO: "HELLO", INFO: "INFO", SET_INPUT: "SET_INPUT", INVOKE: "INVOKE", GET_OUTPUT: "GET_OUTPUT",
                 GET_TRACE: "GET_TRACE", RESET_STATE: "RESET_STATE", LOAD_MODEL: "LOAD_MODEL", GENERATE: "GENERATE"}

# STATUS codes.
STATUS_CODES = {1: "UNKNOWN_COMMAND", 2: "BAD_VERSION", 3: "BAD_PAYLOAD", 4: "BAD_INDEX", 5: "BAD_RANGE",
                6: "NO_MODEL", 7: "MODEL_ERROR", 8: "INVOKE_FAILED", 9: "TOO_LARGE", 10: "OUT_OF_ORDER",
                11: "UNSUPPORTED", 12: "INTERNAL"}
(UNKNOWN_COMMAND, BAD_VERSION, BAD_PAYLOAD, BAD_INDEX, BAD_RANGE, NO_MODEL, MODEL_ERROR, INVOKE_FAILED,
 TOO_LARGE, OUT_OF_ORDER, UNSUPPORTED, INTERNAL) = range(1, 13)

# Capability bits (HELLO).
CAPABILITIES = {0: "TRACE", 1: "MULTI_RUN", 2: "RESET_STATE", 3: "LOAD_MODEL", 4: "LOG", 5: "EMULATED", 6: "ACK",
                7: "GENERATE", 8: "RESTART"}
(CAP_TRACE, CAP_MULTI_RUN, CAP_RESET_STATE, CAP_LOAD_MODEL, CAP_LOG, CAP_EMULATED, CAP_ACK,
 CAP_GENERATE, CAP_RESTART) = (1 << b for b in range(9))
RESET_RESTART = b"\x01"  # RESET_STATE's payload for a restart (capability RESTART): the runtime as after boot

# Timer sources (HELLO).
TIMER_SOURCES = {0: "none", 1: "cycles", 2: "systick", 3: "host-ns", 4: "emulated"}
TIMER_NONE, TIMER_CYCLES, TIMER_SYSTICK, TIMER_HOST_NS, TIMER_EMULATED = range(5)

LOG_LEVELS = {0: "debug", 1: "info", 2: "warning", 3: "error"}

# The TFLite TensorTypes the protocol carries (docs/serial-protocol.md, tensor record): code -> (name, numpy
# dtype as on the wire, little-endian). Codes and dtypes come from model.types.TENSOR_TYPES (the one table).
WIRE_TYPES = ("FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "BOOL", "INT16", "INT8", "FLOAT64", "UINT64",
              "UINT32", "UINT16", "COMPLEX64")
TENSOR_TYPE_CODES: dict[int, tuple[str, str]] = {
    TENSOR_TYPES[name][0]: (name, TENSOR_TYPES[name][1].newbyteorder("<").str) for name in WIRE_TYPES
}
TENSOR_TYPE_BY_NAME = {name: code for code, (name, _) in TENSOR_TYPE_CODES.items()}

HELLO_FIXED = struct.Struct("<BBHIIII32s")  # version, timer source, max_frame, caps, arena, clock, model size, sha
INVOKE_REPLY = struct.Struct("<IIII")  # runs, last ticks, min ticks, max ticks
CHUNK_REQUEST = struct.Struct("<B3xIHH")  # GET_OUTPUT: index, offset, max_len, 0
OUTPUT_REPLY = struct.Struct("<B3xII")  # index, offset, total
TRACE_REQUEST = struct.Struct("<IHH")  # offset, max_len, 0
TRACE_REPLY = struct.Struct("<II")  # offset, total
SET_INPUT_HEAD = struct.Struct("<B3xI")  # index, offset
LOAD_HEAD = struct.Struct("<II")  # total size, offset
LOAD_REPLY = struct.Struct("<IB3x")  # received, complete
STATUS_HEAD = struct.Struct("<HHi")  # code, 0, detail
INFO_HEAD = struct.Struct("<BBHI")  # n_inputs, n_outputs, n_ops, arena used
TENSOR_HEAD = struct.Struct("<BBBBI")  # type, rank, quantized, 0, bytes
TRACE_HEAD = struct.Struct("<IIIIII")  # runs, n_records, ops run, arena used, high water, n_run_ticks
TRACE_RECORD = struct.Struct("<HHHHI")  # subgraph, node, op code, 0, ticks


# ---------------------------------------------------------------------------------------------- framing
def crc32(data: bytes) -> int:
    """CRC-32/ISO-HDLC: poly 0x04C11DB7 reflected, init and xorout 0xFFFFFFFF (zlib's)."""
    return zlib.crc32(data) & 0xFFFFFFFF


def cobs_encode(data: bytes) -> bytes:
    """COBS-encode ``data`` (the result has no 0x00; the caller appends the delimiter). A run of 254 non-zero
    bytes is written as code 0xFF with no implied zero; when the data ends right after one, nothing follows."""
    out = bytearray()
    block = bytearray()
    just_full = False
    for b in data:
        if b == 0:
            out.append(len(block) + 1)
            out += block
            block.clear()
            just_full = False
        else:
            block.append(b)
            just_full = False
            if len(block) == 254:
                out.append(0xFF)
                out += block
                block.clear()
                just_full = True
    if not just_full:
        out.append(len(block) + 1)
        out += block
    return bytes(out)


def cobs_decode(data: bytes) -> bytes:
    """Decode one COBS frame (without its delimiter); ValueError when malformed."""
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        code = data[i]
        if code == 0:
            raise ValueError("COBS data contains 0x00")
        end = i + code
        if end > n:
            raise ValueError("COBS code points past the end of the frame")
        block = data[i + 1:end]
        if 0 in block:
            raise ValueError("COBS data contains 0x00")
        out += block
        i = end
        if code != 0xFF and i < n:
            out.append(0)
    return bytes(out)


def encode_frame(type_: int, seq: int, payload: bytes = b"", flags: int = 0, version: int = PROTOCOL_VERSION) -> bytes:
    """The decoded frame: header + payload + CRC-32 (little-endian)."""
    if len(payload) > MAX_FRAME_LIMIT - OVERHEAD:
        raise ValueError(f"payload of {len(payload)} bytes is above the protocol's limit")
    body = HEADER.pack(version, type_, flags, 0, seq & 0xFFFF, len(payload)) + bytes(payload)
    return body + struct.pack("<I", crc32(body))


def wire(frame: bytes, lead: bool = False) -> bytes:
    """A decoded frame as sent: COBS, the 0x00 delimiter, optionally a leading delimiter too."""
    return (b"\x00" if lead else b"") + cobs_encode(frame) + b"\x00"


@dataclass(frozen=True)
class Frame:
    version: int
    type: int
    flags: int
    seq: int
    payload: bytes


def decode_frame(frame: bytes) -> Frame:
    """Check length and CRC of a decoded frame and split it; ValueError when it is corrupt."""
    if len(frame) < OVERHEAD:
        raise ValueError(f"frame of {len(frame)} bytes is shorter than the {OVERHEAD}-byte minimum")
    version, type_, flags, _, seq, length = HEADER.unpack_from(frame)
    if OVERHEAD + length != len(frame):
        raise ValueError(f"frame says {length} payload bytes, carries {len(frame) - OVERHEAD}")
    (crc,) = struct.unpack_from("<I", frame, len(frame) - CRC_SIZE)
    if crc != crc32(frame[:-CRC_SIZE]):
        raise ValueError("CRC mismatch")
    return Frame(version, type_, flags, seq, bytes(frame[HEADER_SIZE:-CRC_SIZE]))


class FrameReader:
    """Splits a byte stream at 0x00 delimiters; yields decoded frames or the errors of corrupt ones."""

    def __init__(self, limit: int = 2 * MAX_FRAME_LIMIT):
        self._buf = bytearray()
        self._limit = limit
        self._overflow = False

    def feed(self, data: bytes) -> list[Frame | ValueError]:
        out: list[Frame | ValueError] = []
        start = 0
        while True:
            k = data.find(b"\x00", start)
            if k < 0:
                self._append(data[start:])
                break
            self._append(data[start:k])
            if self._overflow:
                out.append(ValueError("frame longer than the receive limit"))
            elif self._buf:
                try:
                    out.append(decode_frame(cobs_decode(bytes(self._buf))))
                except ValueError as exc:
                    out.append(exc)
            self._buf.clear()
            self._overflow = False
            start = k + 1
        return out

    def _append(self, data: bytes) -> None:
        if self._overflow:
            return
        self._buf += data
        if len(self._buf) > self._limit:
            self._buf.clear()
            self._overflow = True


# ---------------------------------------------------------------------------------------------- results
@dataclass
class Hello:
    protocol_version: int
    runtime_version: str
    capabilities: int
    model_sha256: bytes
    model_size: int
    arena_size: int
    clock_hz: int
    timer_source: str
    timer_units: str
    max_frame: int
    board: str

    @property
    def capability_names(self) -> list[str]:
        return [name for bit, name in CAPABILITIES.items() if self.capabilities >> bit & 1]

    @property
    def emulated(self) -> bool:
        return bool(self.capabilities & CAP_EMULATED)

    @property
    def model_hash(self) -> str:
        """Hex SHA-256 of the device's model ("" when it has none)."""
        return self.model_sha256.hex() if self.model_size else ""


@dataclass
class TensorSpec:
    index: int
    type: str  # TFLite TensorType name
    shape: tuple[int, ...]
    nbytes: int
    scale: float | None = None
    zero_point: int | None = None

    @property
    def dtype(self) -> np.dtype:
        code = TENSOR_TYPE_BY_NAME.get(self.type)
        if code is None:
            raise DeviceError(f"tensor type {self.type} has no numpy form on the host")
        return np.dtype(TENSOR_TYPE_CODES[code][1])


@dataclass(frozen=True)
class Presented:
    """A legacy UINT8 model as the link hands it to the device (edge_sdk.runtime.c_loaded.c_bytes): the hashes of
    the bytes the device runs and of the model's own, the I/O positions the device holds as INT8 where the model
    says UINT8 (uint8.c_io), and uint8.c_io_note's words for it."""

    sha256: bytes
    source_sha256: bytes
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    note: str


def present(model_bytes: bytes) -> tuple[bytes, Presented | None]:
    """(the bytes the device runs, their Presented) for a model with legacy UINT8 tensors; (the bytes, None)
    for any other model, and for bytes no reader takes (the device names what is wrong with them)."""
    from edge_sdk.errors import ModelError
    from edge_sdk.model import read_model
    from edge_sdk.runtime.c_loaded import c_bytes
    from edge_sdk.runtime.uint8 import c_io, c_io_note

    data = bytes(model_bytes)
    try:
        model = read_model(data)
    except ModelError:
        return data, None
    presented, chosen = c_bytes(model)
    if not chosen:
        return data, None
    ins, outs = c_io(model, chosen)
    return presented, Presented(hashlib.sha256(presented).digest(), hashlib.sha256(data).digest(), ins, outs,
                                c_io_note(model, chosen))


@dataclass
class DeviceInfo:
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    n_ops: int
    arena_used: int


@dataclass
class OpRecord:
    index: int  # the op's index in its subgraph
    op_code: int  # TFLite BuiltinOperator code
    ticks: int
    subgraph: int = 0

    @property
    def op(self) -> str:
        return _op_name(self.op_code)


@dataclass
class Trace:
    """The device's trace of its last INVOKE. ``unit`` names what ``ticks`` count (``emulated-ticks``,
    ``systick``, ``cycles``, ``ns``); ``emulated`` is True when they come from an emulator's cost model."""

    runs: int
    ops: list[OpRecord]
    ops_run: int
    run_ticks: list[int]
    arena_used: int
    arena_high_water: int
    unit: str = ""
    timer_source: str = ""
    emulated: bool = False

    @property
    def total(self) -> int:
        """Sum of the per-op ticks of the last run."""
        return sum(r.ticks for r in self.ops)

    @property
    def dropped(self) -> int:
        return max(0, self.ops_run - len(self.ops))


@dataclass
class LogLine:
    level: str
    text: str
    seq: int = 0

    def __str__(self) -> str:
        return f"[{self.level}] {self.text}"


@dataclass
class InvokeResult:
    runs: int
    last_ticks: int
    min_ticks: int
    max_ticks: int


def _op_name(code: int) -> str:
    from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES

    names = {v: k for k, v in BUILTIN_OPERATOR_CODES.items()}
    return names.get(code, f"OP_{code}")


# ---------------------------------------------------------------------------------------------- payloads
def pack_hello(h: Hello) -> bytes:
    def s(text: str, limit: int) -> bytes:
        b = text.encode("ascii", "replace")[:limit]
        return bytes([len(b)]) + b

    source = {v: k for k, v in TIMER_SOURCES.items()}.get(h.timer_source, 0)
    sha = h.model_sha256 if h.model_size else bytes(32)
    return (HELLO_FIXED.pack(h.protocol_version, source, h.max_frame, h.capabilities, h.arena_size, h.clock_hz,
                             h.model_size, sha)
            + s(h.runtime_version, 32) + s(h.timer_units, 16) + s(h.board, 32))


def unpack_hello(payload: bytes) -> Hello:
    version, source, max_frame, caps, arena, clock, size, sha = HELLO_FIXED.unpack_from(payload)
    pos = HELLO_FIXED.size
    texts = []
    for _ in range(3):
        n = payload[pos]
        texts.append(payload[pos + 1:pos + 1 + n].decode("ascii", "replace"))
        pos += 1 + n
    return Hello(protocol_version=version, runtime_version=texts[0], capabilities=caps, model_sha256=sha,
                 model_size=size, arena_size=arena, clock_hz=clock, timer_source=TIMER_SOURCES.get(source, str(source)),
                 timer_units=texts[1], max_frame=max_frame, board=texts[2])


def pack_info(info: DeviceInfo) -> bytes:
    out = bytearray(INFO_HEAD.pack(len(info.inputs), len(info.outputs), info.n_ops, info.arena_used))
    for t in info.inputs + info.outputs:
        quantized = t.scale is not None
        out += TENSOR_HEAD.pack(TENSOR_TYPE_BY_NAME.get(t.type, 255), len(t.shape), int(quantized), 0, t.nbytes)
        out += struct.pack(f"<{len(t.shape)}i", *t.shape)
        if quantized:
            out += struct.pack("<fi", t.scale, t.zero_point)
    return bytes(out)


def unpack_info(payload: bytes) -> DeviceInfo:
    n_in, n_out, n_ops, arena = INFO_HEAD.unpack_from(payload)
    pos = INFO_HEAD.size
    specs = []
    for k in range(n_in + n_out):
        code, rank, quantized, _, nbytes = TENSOR_HEAD.unpack_from(payload, pos)
        pos += TENSOR_HEAD.size
        shape = struct.unpack_from(f"<{rank}i", payload, pos)
        pos += 4 * rank
        scale = zp = None
        if quantized:
            scale, zp = struct.unpack_from("<fi", payload, pos)
            pos += 8
        name = TENSOR_TYPE_CODES.get(code, (f"TYPE_{code}",))[0]
        specs.append(TensorSpec(k if k < n_in else k - n_in, name, tuple(shape), nbytes, scale, zp))
    return DeviceInfo(specs[:n_in], specs[n_in:], n_ops, arena)


def pack_trace(runs: int, records: list[OpRecord], ops_run: int, arena_used: int, high_water: int,
               run_ticks: list[int]) -> bytes:
    out = bytearray(TRACE_HEAD.pack(runs, len(records), ops_run, arena_used, high_water, len(run_ticks)))
    out += struct.pack(f"<{len(run_ticks)}I", *[t & 0xFFFFFFFF for t in run_ticks])
    for r in records:
        out += TRACE_RECORD.pack(r.subgraph, r.index, r.op_code, 0, r.ticks & 0xFFFFFFFF)
    return bytes(out)


def unpack_trace(blob: bytes) -> Trace:
    runs, n, ops_run, used, high, n_ticks = TRACE_HEAD.unpack_from(blob)
    pos = TRACE_HEAD.size
    run_ticks = list(struct.unpack_from(f"<{n_ticks}I", blob, pos))
    pos += 4 * n_ticks
    ops = []
    for _ in range(n):
        sg, node, code, _, ticks = TRACE_RECORD.unpack_from(blob, pos)
        pos += TRACE_RECORD.size
        ops.append(OpRecord(node, code, ticks, sg))
    return Trace(runs, ops, ops_run, run_ticks, used, high)


def pack_status(code: int, detail: int = 0, message: str = "") -> bytes:
    return STATUS_HEAD.pack(code, 0, detail) + message.encode("utf-8", "replace")


def unpack_status(payload: bytes) -> tuple[int, int, str]:
    code, _, detail = STATUS_HEAD.unpack_from(payload)
    return code, detail, payload[STATUS_HEAD.size:].decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------- the link
def _open(url_or_port, baudrate: int):
    if isinstance(url_or_port, str):
        import serial

        from edge_sdk.device import transports  # noqa: F401  (registers faulty://)

        try:
            return serial.serial_for_url(url_or_port, baudrate=baudrate, timeout=T.SERIAL_POLL), url_or_port
        except (serial.SerialException, ValueError, OSError) as exc:
            raise DeviceError(f"cannot open serial port {url_or_port}: {exc}") from exc
    name = getattr(url_or_port, "port", None) or getattr(url_or_port, "name", None) or repr(url_or_port)
    return url_or_port, str(name)


class SerialLink:
    """A connection to one device speaking docs/serial-protocol.md (see the module docstring)."""

    def __init__(self, url, baudrate: int = 115200, timeout: float = T.SERIAL_ANSWER_TIMEOUT,
                 retries: int = T.SERIAL_RETRIES, invoke_timeout: float = T.INVOKE_TIMEOUT, chunk_size: int | None = None, max_fast_retransmits: int = 64):
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout}")
        self._ser, self.port = _open(url, baudrate)
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.invoke_timeout = float(invoke_timeout)
        self.max_fast_retransmits = int(max_fast_retransmits)
        self._chunk_limit = chunk_size
        self._chunk: int | None = None  # current data bytes per chunked frame (shrinks on a noisy link)
        self._clean = 0
        self._reader = FrameReader()
        self._unread: list[Frame | ValueError] = []
        self._seq = int.from_bytes(hashlib.sha256(str(time.time_ns()).encode()).digest()[:2], "little")
        self._hello: Hello | None = None
        self._info: DeviceInfo | None = None
        self.logs: list[LogLine] = []
        self._presented: Presented | None = None  # the UINT8 model load_model / expect_model presented
        self.last_command: str | None = None
        self.retransmissions = 0  # over the link's life: how noisy it was
        self.corrupt_frames = 0
        with contextlib.suppress(AttributeError, OSError, ValueError):  # some serial-like objects fix it
            self._ser.timeout = T.SERIAL_POLL

    # --------------------------------------------------------------------------------- lifetime
    def close(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            self._ser.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc):
        self.close()

    # --------------------------------------------------------------------------------- commands
    def hello(self) -> Hello:
        """Resynchronise (delimiters, then HELLO) and check the protocol version."""
        self._reader = FrameReader()
        self._unread = [item for item in self._unread if isinstance(item, Frame) and item.type == LOG]
        with contextlib.suppress(OSError, AttributeError):
            self._ser.reset_input_buffer()
        frame = self._transact(HELLO, b"", lead=b"\x00\x00", any_version=True)
        h = self._parse("HELLO", unpack_hello, frame.payload)
        if frame.version != PROTOCOL_VERSION or h.protocol_version != PROTOCOL_VERSION:
            raise DeviceError(
                f"protocol version mismatch on {self.port}: the device speaks version "
                f"{h.protocol_version if frame.version == h.protocol_version else frame.version}, "
                f"this host speaks version {PROTOCOL_VERSION}; update the firmware (edge flash) or edge-sdk"
            )
        if h.max_frame < MIN_MAX_FRAME:
            raise DeviceError(f"device on {self.port} states max_frame {h.max_frame}, below the protocol's "
                              f"minimum {MIN_MAX_FRAME}")
        self._hello = h
        self._info = None
        data_max = h.max_frame - OVERHEAD - 24
        self._chunk = min(data_max, self._chunk_limit or data_max)
        log.debug(f"{self.port}: {h.board or 'device'} runtime {h.runtime_version}, protocol {h.protocol_version}, "
                  f"max frame {h.max_frame}, timer {h.timer_source} ({h.timer_units})")
        return h

    @property
    def device(self) -> Hello:
        """The last HELLO reply (sends HELLO first when there is none)."""
        return self._ensure_hello()

    def _ensure_hello(self) -> Hello:
        return self._hello or self.hello()

    @property
    def model_hash(self) -> str:
        return self.device.model_hash

    @property
    def presented_io(self) -> Presented | None:
        """The legacy UINT8 model the device runs as INT8, whose I/O this link flips (None: it flips nothing)."""
        h = self._hello
        p = self._presented
        return p if p is not None and h is not None and h.model_sha256 == p.sha256 else None

    def expect_model(self, model_bytes: bytes) -> None:
        """DeviceError unless the device runs exactly ``model_bytes`` (SHA-256 of the bytes), or, for a legacy
        UINT8 model, their presentation as INT8 (then the link flips its UINT8 I/O: module docstring)."""
        h = self.hello()
        want = hashlib.sha256(bytes(model_bytes)).digest()
        if not h.model_size:
            raise DeviceError(f"the device on {self.port} has no model; expected sha256 {want.hex()[:16]}... "
                              f"({len(model_bytes)} bytes): flash it or load_model()")
        if h.model_sha256 != want:
            _, presented = present(model_bytes)
            if presented is not None and h.model_sha256 == presented.sha256:
                self._presented, self._info = presented, None
                return
            raise DeviceError(
                f"model mismatch on {self.port}: the device runs sha256 {h.model_sha256.hex()[:16]}... "
                f"({h.model_size} bytes), the host's model is sha256 {want.hex()[:16]}... "
                f"({len(model_bytes)} bytes): flash the right model"
            )

    def info(self) -> DeviceInfo:
        """The device's model I/O; a presented UINT8 model's flipped I/O as the model declares it (UINT8, zero
        point + 128)."""
        from dataclasses import replace

        from edge_sdk.runtime.uint8 import SHIFT

        self._ensure_hello()
        info = self._parse("INFO", unpack_info, self._transact(INFO, b"").payload)
        p = self.presented_io
        if p is not None:
            def declared(specs, flipped):
                return [replace(t, type="UINT8", zero_point=(t.zero_point or 0) + SHIFT) if k in flipped and
                        t.type == "INT8" else t for k, t in enumerate(specs)]

            info = replace(info, inputs=declared(info.inputs, p.inputs), outputs=declared(info.outputs, p.outputs))
        self._info = info
        return self._info

    def _spec(self, kind: str, i: int) -> TensorSpec:
        info = self._info or self.info()
        specs = info.inputs if kind == "input" else info.outputs
        if not 0 <= i < len(specs):
            raise IndexError(f"{kind} index {i} out of range: the device's model has {len(specs)} {kind}s")
        return specs[i]

    def set_input(self, i: int, array) -> None:
        """Write input ``i`` (dtype and shape must match info()), in chunks that fit the device's frames."""
        spec = self._spec("input", i)
        a = np.asarray(array)
        if a.dtype != spec.dtype or tuple(a.shape) != spec.shape:
            raise ValueError(f"input {i} of the device's model is {spec.type} {list(spec.shape)}, "
                             f"not {a.dtype} {list(a.shape)}")
        if spec.type == "UINT8" and self._flips("input", i):  # held as INT8 on the device: int8 = uint8 ^ 0x80
            from edge_sdk.runtime.uint8 import to_int8

            a = to_int8(a)
        data = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
        offset, budget = 0, _Budget()
        while True:
            chunk = data[offset:offset + self._chunk]
            try:
                self._transact(SET_INPUT, SET_INPUT_HEAD.pack(i, offset) + chunk, chunked=True, budget=budget,
                               data_len=len(chunk))
            except _Smaller:
                continue
            offset, budget = offset + len(chunk), _Budget()
            if offset >= len(data):
                break

    def invoke(self, runs: int = 1) -> InvokeResult:
        if not 1 <= runs <= 0xFFFF:
            raise ValueError(f"runs must be in [1, 65535], not {runs}")
        self._ensure_hello()
        p = self._transact(INVOKE, struct.pack("<I", runs), long=True).payload
        return InvokeResult(*self._parse("INVOKE", INVOKE_REPLY.unpack_from, p))

    def get_output(self, i: int) -> np.ndarray:
        spec = self._spec("output", i)
        data = bytearray()
        total = None
        budget = _Budget()
        while total is None or len(data) < total:
            ask = min(self._chunk, 0xFFFF)
            try:
                p = self._transact(GET_OUTPUT, CHUNK_REQUEST.pack(i, len(data), ask, 0), chunked=True,
                                   budget=budget, data_len=ask).payload
            except _Smaller:
                continue
            budget = _Budget()
            index, offset, total = self._parse("GET_OUTPUT", OUTPUT_REPLY.unpack_from, p)
            if index != i or offset != len(data):
                raise DeviceError(f"GET_OUTPUT on {self.port}: asked output {i} at {len(data)}, the device "
                                  f"answered output {index} at {offset}")
            chunk = p[OUTPUT_REPLY.size:]
            if not chunk and len(data) < total:
                raise DeviceError(f"GET_OUTPUT on {self.port}: empty chunk at {len(data)} of {total} bytes")
            data += chunk
        if total != spec.nbytes:
            raise DeviceError(f"output {i} on {self.port} has {total} bytes, INFO said {spec.nbytes}")
        out = np.frombuffer(bytes(data), dtype=spec.dtype.newbyteorder("<")).astype(spec.dtype).reshape(spec.shape)
        if spec.type == "UINT8" and self._flips("output", i):  # the device's int8 bits, read as uint8: ^ 0x80
            from edge_sdk.runtime.uint8 import to_uint8

            out = to_uint8(out)
        return out

    def _flips(self, kind: str, i: int) -> bool:
        p = self.presented_io
        return p is not None and i in (p.inputs if kind == "input" else p.outputs)

    def get_trace(self) -> Trace:
        blob = bytearray()
        total = None
        budget = _Budget()
        while total is None or len(blob) < total:
            ask = min(self._chunk, 0xFFFF)
            try:
                p = self._transact(GET_TRACE, TRACE_REQUEST.pack(len(blob), ask, 0), chunked=True, budget=budget,
                                   data_len=ask).payload
            except _Smaller:
                continue
            budget = _Budget()
            offset, total = self._parse("GET_TRACE", TRACE_REPLY.unpack_from, p)
            chunk = p[TRACE_REPLY.size:]
            if offset != len(blob) or (not chunk and len(blob) < total):
                raise DeviceError(f"GET_TRACE on {self.port}: bad chunk at {offset} (have {len(blob)} of {total})")
            blob += chunk
        trace = self._parse("GET_TRACE", unpack_trace, bytes(blob))
        h = self.device
        trace.unit, trace.timer_source, trace.emulated = h.timer_units, h.timer_source, h.emulated
        return trace

    def reset_state(self, restart: bool = False) -> None:
        """RESET_STATE: variables and stateful kernels back to their initial values (the runtime's reset, as
        TFLM's: a CALL_ONCE that ran stays done, resource variables hold nothing). ``restart``: the runtime
        initialised again, the state right after boot, as a fresh host interpreter starts (capability RESTART;
        DeviceError when the device lacks it)."""
        h = self._ensure_hello()
        if restart and not h.capabilities & CAP_RESTART:
            raise DeviceError(f"RESET_STATE on {self.port}: the device has no RESTART capability (older firmware: "
                              "flash it again)")
        self._transact(RESET_STATE, RESET_RESTART if restart else b"")

    def load_model(self, model_bytes: bytes) -> Hello:
        """Send a model into the device's RAM (capability LOAD_MODEL); checks the hash it reports. A legacy
        UINT8 model goes as the C runtime runs it (``present``: INT8), and the link flips its UINT8 I/O."""
        data, presented = present(model_bytes)
        h = self._ensure_hello()
        if not h.capabilities & CAP_LOAD_MODEL:
            raise DeviceError(f"the device on {self.port} cannot load models over the link (no LOAD_MODEL "
                              f"capability): flash the model instead")
        offset, sha = 0, None
        while True:
            chunk = data[offset:offset + self._chunk]
            last = offset + len(chunk) >= len(data)
            p = self._transact(LOAD_MODEL, LOAD_HEAD.pack(len(data), offset) + chunk, chunked=True, long=last).payload
            received, complete = self._parse("LOAD_MODEL", LOAD_REPLY.unpack_from, p)
            offset += len(chunk)
            if received != offset:
                raise DeviceError(f"LOAD_MODEL on {self.port}: sent {offset} bytes, the device has {received}")
            if complete:
                sha = p[LOAD_REPLY.size:LOAD_REPLY.size + 32]
                break
            if last:
                raise DeviceError(f"LOAD_MODEL on {self.port}: all {len(data)} bytes sent, the device is not done")
        want = hashlib.sha256(data).digest()
        if sha != want:
            raise DeviceError(f"LOAD_MODEL on {self.port}: the device hashed sha256 {sha.hex()[:16]}..., the "
                              f"host sent {want.hex()[:16]}...")
        self._info, self._presented = None, presented
        if presented is not None:
            log.debug(f"{self.port}: {presented.note}; the link flips them")
        return self.hello()

    def generate(self, payload: bytes) -> bytes:
        """One GENERATE command (capability GENERATE); returns the reply payload. The payload layouts and the
        loop around this are in edge_sdk.device.generation."""
        h = self._ensure_hello()
        if not h.capabilities & CAP_GENERATE:
            raise DeviceError(f"the device on {self.port} has no GENERATE command (capability GENERATE)")
        return self._transact(GENERATE, bytes(payload), long=True).payload

    def poll(self, duration: float = 0.0) -> list[LogLine]:
        """Read what the device sent unprompted (LOG frames) for ``duration`` seconds; returns new lines."""
        n = len(self.logs)
        end = time.monotonic() + duration
        while True:
            for item in self._read_frames():
                if isinstance(item, Frame) and item.type == LOG:
                    self._log(item)
            if time.monotonic() >= end:
                break
        return self.logs[n:]

    # --------------------------------------------------------------------------------- transport
    def _read_frames(self) -> list[Frame | ValueError]:
        """Frames (or the errors of corrupt ones) received since the last call; what an earlier command
        left unread comes first."""
        if self._unread:
            out, self._unread = self._unread, []
            return out
        try:
            data = self._ser.read(1)
            if data:
                waiting = getattr(self._ser, "in_waiting", 0)
                while waiting:
                    data += self._ser.read(waiting)
                    waiting = self._ser.in_waiting
        except Exception as exc:
            raise DeviceError(f"{self.last_command or 'reading'} on {self.port}: the link failed: {exc}") from exc
        return self._reader.feed(data) if data else []

    def _log(self, frame: Frame) -> None:
        level = LOG_LEVELS.get(frame.payload[0] if frame.payload else 1, "info")
        text = status_sites.decode(frame.payload[1:].decode("utf-8", "replace"))
        self.logs.append(LogLine(level, text, frame.seq))
        message = f"device {self.port}: {text}"
        if level in ("warning", "error"):
            log.warning(message)
        elif level == "info":
            log.info(message)
        else:
            log.debug(message)

    def _send(self, data: bytes) -> None:
        try:
            self._ser.write(data)
            flush = getattr(self._ser, "flush", None)
            if flush is not None:
                flush()
        except Exception as exc:
            raise DeviceError(f"{self.last_command} on {self.port}: cannot write to the link: {exc}") from exc

    def _transact(self, type_: int, payload: bytes, long: bool = False, chunked: bool = False,
                  lead: bytes = b"\x00", any_version: bool = False, budget: _Budget | None = None,
                  data_len: int | None = None) -> Frame:
        """Send one command (a new seq) and return its reply frame; retransmits as the spec says.

        ``budget`` carries the attempt counts across re-issues of the same chunk. ``data_len`` (for the
        idempotent chunked commands SET_INPUT, GET_OUTPUT, GET_TRACE) allows giving up on this frame when it
        is lost: the chunk size shrinks and ``_Smaller`` tells the caller to re-issue a smaller chunk."""
        name = COMMAND_NAMES[type_]
        self.last_command = name
        self._seq = (self._seq + 1) & 0xFFFF
        seq = self._seq
        if self._hello is not None and OVERHEAD + len(payload) > self._hello.max_frame:
            raise DeviceError(f"{name} frame of {OVERHEAD + len(payload)} bytes exceeds the device's max_frame "
                              f"{self._hello.max_frame} on {self.port}")
        b = budget or _Budget()
        sent = 0
        ack_deadline = None  # set when the device acknowledged: then only invoke_timeout bounds the wait
        interval = self.timeout
        while True:
            self._send(lead + cobs_encode(encode_frame(type_, seq, payload, FLAG_RETRANSMIT if sent else 0)) + b"\x00")
            sent += 1
            b.attempts += 1
            now = time.monotonic()
            deadline = now + (interval if ack_deadline is None else min(interval, max(0.0, ack_deadline - now)))
            retransmit = False
            while not retransmit and time.monotonic() < deadline:
                items = self._read_frames()
                for k, item in enumerate(items):
                    if isinstance(item, ValueError):
                        self.corrupt_frames += 1
                        retransmit = True  # probably our answer, damaged: ask again now
                        continue
                    t = item.type
                    if t == LOG:
                        self._log(item)
                    elif t == NAK:
                        retransmit = True
                    elif item.seq != seq:
                        continue  # a late answer to an earlier command
                    elif t == ACK:
                        if long and ack_deadline is None:
                            ack_deadline = time.monotonic() + self.invoke_timeout
                            deadline = min(ack_deadline, time.monotonic() + interval)
                    elif t == (type_ | REPLY):
                        if item.version != PROTOCOL_VERSION and not any_version:
                            raise DeviceError(f"protocol version mismatch on {self.port}: the device answered "
                                              f"{name} in version {item.version}, this host speaks version "
                                              f"{PROTOCOL_VERSION}")
                        self._unread = items[k + 1:]  # e.g. a LOG frame right behind the reply
                        self._tune(chunked, b.attempts)
                        return item
                    elif t == STATUS:
                        self._unread = items[k + 1:]
                        self._tune(chunked, b.attempts)
                        self._status_error(name, item)
                if retransmit and b.fast >= self.max_fast_retransmits:
                    retransmit = False  # stop reacting to noise: wait the attempt out instead
            if retransmit:
                b.fast += 1
            elif ack_deadline is not None:
                # The device is (or was) running it: ask again now and then, with a growing interval; a
                # duplicate is answered from its cache once it is done. Only invoke_timeout ends this.
                if time.monotonic() >= ack_deadline:
                    raise DeviceError(
                        f"timeout: {name} (seq {seq}) on {self.port} was acknowledged but not answered within "
                        f"invoke_timeout {self.invoke_timeout:g} s"
                    )
                interval = min(interval * 2, max(self.timeout, T.SERIAL_MAX_INTERVAL))
            else:
                b.timeouts += 1
                if b.timeouts > self.retries:
                    raise DeviceError(
                        f"timeout: no answer to {name} (seq {seq}) from {self.port} after {b.attempts} attempts "
                        f"in {time.monotonic() - b.started:.2f} s"
                    )
            self.retransmissions += 1
            if chunked:
                smaller = max(16, (self._chunk or 16) // 2)
                self._chunk, self._clean = smaller, 0
                if data_len is not None and data_len > smaller:
                    raise _Smaller()  # re-issue this chunk smaller (idempotent command: safe)
                # otherwise resend as it was (same seq, same bytes), e.g. a LOAD_MODEL chunk

    def _parse(self, name: str, fn, payload: bytes):
        try:
            return fn(payload)
        except (struct.error, IndexError, ValueError) as exc:
            raise DeviceError(f"malformed {name} reply from {self.port} ({len(payload)} bytes): {exc}") from exc

    def _status_error(self, name: str, frame: Frame):
        code, detail, message = unpack_status(frame.payload)
        message = status_sites.decode(message)  # an EDGE_STATUS_SITES firmware sends "@<line>" for the reason
        cname = STATUS_CODES.get(code, f"status {code}")
        if code == BAD_VERSION:
            raise DeviceError(f"protocol version mismatch on {self.port}: the device speaks version {detail}, "
                              f"this host speaks version {PROTOCOL_VERSION} (refused {name})")
        raise DeviceError(f"{name} failed on {self.port}: {cname} ({detail})" + (f": {message}" if message else ""))

    def _tune(self, chunked: bool, attempts: int) -> None:
        if not chunked or self._hello is None or attempts > 1:
            return
        self._clean += 1
        top = min(self._hello.max_frame - OVERHEAD - 24, self._chunk_limit or 1 << 30)
        if self._clean >= 4 and self._chunk < top:
            self._chunk = min(top, self._chunk * 2)
            self._clean = 0


class _Budget:
    """Attempts spent on one chunk (or command), across re-issues with smaller chunks."""

    def __init__(self):
        self.attempts = self.timeouts = self.fast = 0
        self.started = time.monotonic()


class _Smaller(Exception):
    """Internal: the chunk was lost and the chunk size shrank; send this part again, smaller."""
