"""A device in Python: the device side of docs/serial-protocol.md, running edge-sdk's own Interpreter.

    with DeviceEmulator(model_bytes) as emu:          # listens on 127.0.0.1, serves one host at a time
        link = SerialLink(emu.url)                    # "socket://127.0.0.1:PORT", as QEMU's UART would be
        ...

It lets the host side be tested end to end without firmware, and it is the reference the firmware's
behaviour is compared with. ``receive(bytes) -> bytes`` is the whole device as a pure state machine (bytes
in, bytes out); ``serve(stream)`` runs it on any pyserial-like object; ``start()`` on a TCP socket (a
``socket://`` URL, as QEMU's UART is reached); ``start_pair()`` on a socket pair (returns the host's end,
a serial-like object ``SerialLink`` accepts).

Timing is **emulated**, and says so: HELLO reports timer source ``emulated``, units ``emulated-ticks`` and
the ``EMULATED`` capability. An op's ticks are ``16 + MACs + output elements`` (MACs from the op table), a
run's ticks the sum of its ops' plus 8: deterministic, so traces are reproducible, but not a time.

Test hooks: ``mute`` (True: read and ignore everything, a device that stopped answering),
``protocol_version`` (pretend to be another version), ``log(text)`` (send a LOG frame), ``executed``
(commands executed, duplicates excluded), ``duplicates`` (commands answered from the cache).
"""

from __future__ import annotations

import hashlib
import socket
import struct
import threading
from typing import Self

import numpy as np

from edge_sdk.device import serial_link as sl
from edge_sdk import timeouts as T
from edge_sdk.errors import ArenaTooSmallError, ModelError
from edge_sdk.model.types import element_bytes
from edge_sdk.runtime.c_status import STATUS as EDGE_STATUS  # edge_status_t values, sent as STATUS details

OP_BASE_TICKS = 16
RUN_BASE_TICKS = 8


class DeviceEmulator:
    """The protocol's device side over our Python Interpreter (see the module docstring)."""

    def __init__(self, model_bytes: bytes | None = None, timer: str = "ticks", max_frame: int = 1024,
                 arena_size: int | None = None, clock_hz: int = 0, protocol_version: int = sl.PROTOCOL_VERSION,
                 board: str = "python-emulator", load_capacity: int = 4 << 20, trace_capacity: int = 1024,
                 run_ticks_capacity: int = 4096, send_acks: bool = True, send_naks: bool = True):
        if timer not in ("ticks", "none"):
            raise ValueError(f"timer must be 'ticks' (emulated, deterministic) or 'none', not {timer!r}")
        if not sl.MIN_MAX_FRAME <= max_frame <= sl.MAX_FRAME_LIMIT:
            raise ValueError(f"max_frame must be in [{sl.MIN_MAX_FRAME}, {sl.MAX_FRAME_LIMIT}], not {max_frame}")
        self.timer = timer
        self.max_frame = max_frame
        self.arena_size = arena_size
        self.clock_hz = clock_hz
        self.protocol_version = protocol_version
        self.board = board
        self.load_capacity = load_capacity
        self.trace_capacity = trace_capacity
        self.run_ticks_capacity = run_ticks_capacity
        self.send_acks = send_acks
        self.send_naks = send_naks
        self.mute = False
        self.executed: list[str] = []
        self.duplicates = 0
        self._reader = sl.FrameReader(limit=max_frame + max_frame // 254 + 2)
        self._last: tuple[int, int] | None = None  # (seq, type) of the last executed command
        self._cached = b""
        self._log_seq = 0
        self._pending_logs: list[bytes] = []
        self._lock = threading.Lock()
        self._load = bytearray()
        self._load_total = 0
        self._model: bytes | None = None
        self._interp = None
        self._trace = sl.pack_trace(0, [], 0, 0, 0, [])
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._server: socket.socket | None = None
        self.url: str | None = None
        if model_bytes is not None:
            error = self._init_model(bytes(model_bytes))
            if error is not None:
                raise ModelError(f"DeviceEmulator: {error[2]}")

    # --------------------------------------------------------------------------------- model
    def _init_model(self, data: bytes):
        """Load ``data``; None on success, else a STATUS triple (code, detail, message)."""
        from edge_sdk.runtime.interpreter import Interpreter

        self._model, self._interp = None, None
        self._trace = sl.pack_trace(0, [], 0, 0, 0, [])
        try:
            interp = Interpreter(model_content=data, arena_size=self.arena_size)
            interp.allocate_tensors()
        except ArenaTooSmallError as exc:
            return sl.MODEL_ERROR, EDGE_STATUS["EDGE_ARENA_TOO_SMALL"], str(exc)
        except ModelError as exc:
            unsupported = type(exc).__name__ == "UnsupportedOpError"
            code = EDGE_STATUS["EDGE_UNSUPPORTED_OP" if unsupported else "EDGE_MODEL_INVALID"]
            return sl.MODEL_ERROR, code, str(exc)
        self._model, self._interp = data, interp
        sg = interp.model.subgraphs[0]
        shapes = interp.tensor_shapes()
        self._in_index = [d["index"] for d in interp.get_input_details()]
        self._out_index = [d["index"] for d in interp.get_output_details()]
        self._inputs = [bytearray(self._spec(t, k, shapes).nbytes) for k, t in enumerate(self._in_index)]
        self._op_codes = [interp.model.operator_codes[op.opcode_index].builtin_code for op in sg.operators]
        macs = interp.op_macs()
        self._op_ticks = []
        for op, m in zip(sg.operators, macs):
            elements = sum(int(np.prod(shapes[t])) for t in op.outputs if t >= 0)
            self._op_ticks.append(OP_BASE_TICKS + int(m or 0) + elements)
        return None

    def _spec(self, t: int, k: int, shapes) -> sl.TensorSpec:
        tensor = self._interp.model.subgraphs[0].tensors[t]
        shape = tuple(int(d) for d in shapes[t])
        itemsize = element_bytes(tensor.type) if tensor.type in sl.TENSOR_TYPE_BY_NAME else 0
        q = tensor.quantization
        scale = zp = None
        if q is not None and q.scale is not None and len(q.scale):
            scale, zp = float(q.scale[0]), int(q.zero_point[0]) if q.zero_point is not None and len(q.zero_point) else 0
        return sl.TensorSpec(k, tensor.type, shape, int(np.prod(shape, dtype=np.int64)) * itemsize, scale, zp)

    # --------------------------------------------------------------------------------- hooks
    def log(self, text: str, level: int = 1) -> None:
        """Queue a LOG frame; it goes out between frames (before the next reply, or on the next poll)."""
        with self._lock:
            self._log_seq = (self._log_seq + 1) & 0xFFFF
            payload = bytes([level]) + text.encode("utf-8")
            frame = sl.encode_frame(sl.LOG, self._log_seq, payload[: self.max_frame - sl.OVERHEAD],
                                    version=self.protocol_version)
            self._pending_logs.append(sl.wire(frame))

    def take_logs(self) -> bytes:
        with self._lock:
            out = b"".join(self._pending_logs)
            self._pending_logs.clear()
        return out

    # --------------------------------------------------------------------------------- the device
    def receive(self, data: bytes) -> bytes:
        """Feed received bytes; returns the bytes to send back (replies, ACKs, NAKs, queued LOG frames)."""
        if self.mute:
            return b""
        out = bytearray()
        for item in self._reader.feed(data):
            out += self.take_logs()
            if isinstance(item, ValueError):
                if self.send_naks:
                    out += self._frame(sl.NAK, 0)
                continue
            out += self._handle(item)
        out += self.take_logs()
        return bytes(out)

    def _frame(self, type_: int, seq: int, payload: bytes = b"") -> bytes:
        return sl.wire(sl.encode_frame(type_, seq, payload, version=self.protocol_version))

    def _handle(self, f: sl.Frame) -> bytes:
        if f.type in (sl.NAK, sl.LOG, sl.ACK, sl.STATUS) or f.type & sl.REPLY:
            return b""  # device-to-host types: not for us
        if f.type != sl.HELLO and f.version != self.protocol_version:
            return self._frame(sl.STATUS, f.seq, sl.pack_status(
                sl.BAD_VERSION, self.protocol_version,
                f"device speaks protocol version {self.protocol_version}, frame has {f.version}"))
        if f.type == sl.HELLO:
            self._last, self._cached = None, b""
            self.executed.append("HELLO")
            return self._frame(sl.HELLO | sl.REPLY, f.seq, sl.pack_hello(self.hello_info()))
        if self._last == (f.seq, f.type):
            self.duplicates += 1
            return self._cached
        ack = b""
        if self.send_acks and (f.type in (sl.INVOKE, sl.GENERATE) or (f.type == sl.LOAD_MODEL and
                                                                      self._completes_load(f))):
            ack = self._frame(sl.ACK, f.seq)
        self.executed.append(sl.COMMAND_NAMES.get(f.type, f"type {f.type:#x}"))
        try:
            reply_type, payload = self._execute(f)
        except _Status as st:
            reply_type, payload = sl.STATUS, sl.pack_status(st.code, st.detail, st.message)
        frame = sl.encode_frame(reply_type, f.seq, payload, version=self.protocol_version)
        if len(frame) > self.max_frame:
            frame = sl.encode_frame(sl.STATUS, f.seq, sl.pack_status(
                sl.TOO_LARGE, self.max_frame, f"reply of {len(frame)} bytes exceeds max_frame"),
                version=self.protocol_version)
        self._last, self._cached = (f.seq, f.type), sl.wire(frame)
        return ack + self._cached

    def hello_info(self) -> sl.Hello:
        caps = sl.CAP_MULTI_RUN | sl.CAP_RESET_STATE | sl.CAP_LOAD_MODEL | sl.CAP_LOG | sl.CAP_EMULATED | sl.CAP_RESTART
        if self._interp is not None:  # GENERATE for a text-generation model, as the firmware built for it
            from edge_sdk.device.generation import state_bytes

            caps |= sl.CAP_GENERATE if state_bytes(self._interp.model) else 0
        caps |= (sl.CAP_TRACE if self.timer == "ticks" else 0) | (sl.CAP_ACK if self.send_acks else 0)
        model = self._model or b""
        return sl.Hello(
            protocol_version=self.protocol_version, runtime_version="edge-sdk-python-emulator 1",
            capabilities=caps, model_sha256=hashlib.sha256(model).digest() if model else bytes(32),
            model_size=len(model), arena_size=self.arena_size or 0, clock_hz=self.clock_hz,
            timer_source="emulated" if self.timer == "ticks" else "none",
            timer_units="emulated-ticks" if self.timer == "ticks" else "", max_frame=self.max_frame, board=self.board)

    def _completes_load(self, f: sl.Frame) -> bool:
        if len(f.payload) < sl.LOAD_HEAD.size:
            return False
        total, offset = sl.LOAD_HEAD.unpack_from(f.payload)
        return offset + len(f.payload) - sl.LOAD_HEAD.size >= total

    def _need_model(self):
        if self._interp is None:
            raise _Status(sl.NO_MODEL, 0, "no model: flash one or LOAD_MODEL")

    @staticmethod
    def _expect_len(f: sl.Frame, n: int, at_least: bool = False):
        if len(f.payload) < n if at_least else len(f.payload) != n:
            raise _Status(sl.BAD_PAYLOAD, len(f.payload), f"payload of {len(f.payload)} bytes, expected "
                          f"{'at least ' if at_least else ''}{n}")

    def _execute(self, f: sl.Frame) -> tuple[int, bytes]:
        t = f.type
        reply = t | sl.REPLY
        if t == sl.INFO:
            self._expect_len(f, 0)
            self._need_model()
            shapes = self._interp.tensor_shapes()
            info = sl.DeviceInfo([self._spec(x, k, shapes) for k, x in enumerate(self._in_index)],
                                 [self._spec(x, k, shapes) for k, x in enumerate(self._out_index)],
                                 len(self._op_codes), int(self._interp.arena_size))
            return reply, sl.pack_info(info)
        if t == sl.SET_INPUT:
            self._expect_len(f, sl.SET_INPUT_HEAD.size, at_least=True)
            self._need_model()
            index, offset = sl.SET_INPUT_HEAD.unpack_from(f.payload)
            data = f.payload[sl.SET_INPUT_HEAD.size:]
            if index >= len(self._inputs):
                raise _Status(sl.BAD_INDEX, index, f"input {index} of {len(self._inputs)}")
            buf = self._inputs[index]
            if offset + len(data) > len(buf):
                raise _Status(sl.BAD_RANGE, offset, f"bytes {offset}..{offset + len(data)} of a {len(buf)}-byte input")
            buf[offset:offset + len(data)] = data
            return reply, b""
        if t == sl.INVOKE:
            self._expect_len(f, 4)
            self._need_model()
            (runs,) = struct.unpack("<I", f.payload)
            if not 1 <= runs <= 0xFFFF:
                raise _Status(sl.BAD_PAYLOAD, 4, f"runs must be in [1, 65535], not {runs}")
            return reply, self._invoke(runs)
        if t == sl.GET_OUTPUT:
            self._expect_len(f, sl.CHUNK_REQUEST.size)
            self._need_model()
            index, offset, max_len, _ = sl.CHUNK_REQUEST.unpack(f.payload)
            if index >= len(self._out_index):
                raise _Status(sl.BAD_INDEX, index, f"output {index} of {len(self._out_index)}")
            value = self._interp.get_tensor(self._out_index[index])
            data = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()
            if offset > len(data):
                raise _Status(sl.BAD_RANGE, offset, f"offset {offset} of a {len(data)}-byte output")
            n = min(max_len, len(data) - offset, self.max_frame - sl.OVERHEAD - sl.OUTPUT_REPLY.size)
            return reply, sl.OUTPUT_REPLY.pack(index, offset, len(data)) + data[offset:offset + n]
        if t == sl.GET_TRACE:
            self._expect_len(f, sl.TRACE_REQUEST.size)
            offset, max_len, _ = sl.TRACE_REQUEST.unpack(f.payload)
            blob = self._trace
            if offset > len(blob):
                raise _Status(sl.BAD_RANGE, offset, f"offset {offset} of a {len(blob)}-byte trace")
            n = min(max_len, len(blob) - offset, self.max_frame - sl.OVERHEAD - sl.TRACE_REPLY.size)
            return reply, sl.TRACE_REPLY.pack(offset, len(blob)) + blob[offset:offset + n]
        if t == sl.RESET_STATE:  # no payload: the runtime's reset; RESET_RESTART: a new interpreter (as after boot)
            if f.payload not in (b"", sl.RESET_RESTART):
                raise _Status(sl.BAD_PAYLOAD, len(f.payload), "RESET_STATE takes no payload or the byte 1 (restart)")
            self._need_model()
            if f.payload == sl.RESET_RESTART:
                from edge_sdk.runtime.interpreter import Interpreter

                self._interp = Interpreter(model_content=self._model, arena_size=self.arena_size)
                self._interp.allocate_tensors()
            else:
                self._interp.reset_all_variables()
            self._trace = sl.pack_trace(0, [], 0, 0, 0, [])
            return reply, b""
        if t == sl.LOAD_MODEL:
            return reply, self._load_chunk(f)
        if t == sl.GENERATE:  # edge_sdk.device.generation: the device side over this interpreter
            from edge_sdk.device.generation import DeviceSession, GenerateStatus

            self._need_model()
            if not self.hello_info().capabilities & sl.CAP_GENERATE:
                raise _Status(sl.UNSUPPORTED, 7, "no GENERATE: the model has no KV cache (edge_generate metadata)")
            if getattr(self, "_gen", None) is None or self._gen.interp is not self._interp:
                self._gen = DeviceSession(self._interp, (self.max_frame - sl.OVERHEAD - 20) // 4)
            try:
                return reply, self._gen.execute(f.payload)
            except GenerateStatus as st:
                raise _Status(st.code, st.detail, st.message) from None
        raise _Status(sl.UNKNOWN_COMMAND, t, f"unknown command type {t:#04x}")

    def _invoke(self, runs: int) -> bytes:
        interp = self._interp
        for d, buf in zip(interp.get_input_details(), self._inputs):
            dtype = np.dtype(d["dtype"])
            interp.set_tensor(d["index"], np.frombuffer(bytes(buf), dtype.newbyteorder("<")).astype(dtype)
                              .reshape(d["shape"]))
        emulated = self.timer == "ticks"
        run_total = RUN_BASE_TICKS + sum(self._op_ticks) if emulated else 0
        for _ in range(runs):
            try:
                interp.invoke()
            except Exception as exc:  # a kernel bug: the device reports it, it does not die
                raise _Status(sl.INVOKE_FAILED, 0, str(exc)[:200]) from exc
        records = [sl.OpRecord(i, code, ticks) for i, (code, ticks) in enumerate(zip(self._op_codes, self._op_ticks))]
        records = records[: self.trace_capacity] if emulated else []
        run_ticks = [run_total] * min(runs, self.run_ticks_capacity)
        used = int(interp.arena_size)
        self._trace = sl.pack_trace(runs, records, len(self._op_codes), used, used, run_ticks)
        self.log(f"invoke: {runs} run(s), {run_total} emulated ticks each", level=0)
        return sl.INVOKE_REPLY.pack(runs, run_total, run_total, run_total)

    def _load_chunk(self, f: sl.Frame) -> bytes:
        self._expect_len(f, sl.LOAD_HEAD.size, at_least=True)
        total, offset = sl.LOAD_HEAD.unpack_from(f.payload)
        data = f.payload[sl.LOAD_HEAD.size:]
        if offset == 0:
            if total > self.load_capacity:
                raise _Status(sl.TOO_LARGE, self.load_capacity,
                              f"model of {total} bytes, the load buffer holds {self.load_capacity}")
            self._load, self._load_total = bytearray(), total
            self._model, self._interp = None, None
        elif offset != len(self._load) or total != self._load_total:
            raise _Status(sl.OUT_OF_ORDER, len(self._load), f"chunk at {offset}, expected {len(self._load)}")
        if offset + len(data) > total:
            raise _Status(sl.BAD_RANGE, offset, f"chunk ends at {offset + len(data)}, past the model's {total} bytes")
        self._load += data
        if len(self._load) < total:
            return sl.LOAD_REPLY.pack(len(self._load), 0)
        model = bytes(self._load)
        self._load = bytearray()
        error = self._init_model(model)
        if error is not None:
            raise _Status(*error)
        self.log(f"model loaded: {len(model)} bytes, arena {self._interp.arena_size} bytes")
        return sl.LOAD_REPLY.pack(len(model), 1) + hashlib.sha256(model).digest()

    # --------------------------------------------------------------------------------- serving
    def serve(self, stream, stop: threading.Event | None = None) -> None:
        """Serve on a pyserial-like object (read(n), write(b), in_waiting) until ``stop`` is set."""
        stop = stop or self._stop
        while not stop.is_set():
            data = stream.read(1)
            if data:
                n = getattr(stream, "in_waiting", 0)
                if n:
                    data += stream.read(n)
            out = self.receive(data) if data else self.take_logs()
            if out and not self.mute:
                stream.write(out)

    def start(self) -> str:
        """Listen on 127.0.0.1 (a free port) in a thread; returns the pyserial URL (``socket://...``)."""
        if self._thread is not None:
            return self.url
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.05)
        self._server = server
        self._stop.clear()
        self.url = f"socket://127.0.0.1:{server.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve_tcp, name="edge-device-emulator", daemon=True)
        self._thread.start()
        return self.url

    def _serve_tcp(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(0.02)
            with conn:
                self._reader = sl.FrameReader(limit=self.max_frame + self.max_frame // 254 + 2)
                while not self._stop.is_set():
                    try:
                        data = conn.recv(65536)
                        if not data:
                            break  # the host closed the port
                    except TimeoutError:
                        data = b""
                    except OSError:
                        break
                    out = self.receive(data) if data else (b"" if self.mute else self.take_logs())
                    if out:
                        try:
                            conn.sendall(out)
                        except OSError:
                            break

    def start_pair(self) -> SocketStream:
        """Serve on one end of a ``socket.socketpair()`` in a thread; returns the other end as a serial-like
        object for ``SerialLink`` (no TCP port, nothing to connect to). ``stop()`` ends it."""
        if self._thread is not None:
            raise RuntimeError("the emulator is already serving")
        host, device = socket.socketpair()
        self._stop.clear()
        self._pair_end = SocketStream(device, name="device")
        self._thread = threading.Thread(target=self._serve_pair, name="edge-device-emulator", daemon=True)
        self._thread.start()
        self.url = "pair://emulator"
        return SocketStream(host, name=self.url)

    def _serve_pair(self) -> None:
        stream = self._pair_end
        try:
            self.serve(stream)
        except OSError:
            pass  # the host closed its end
        finally:
            stream.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=T.EMULATOR_STOP_TIMEOUT)
            self._thread = None
        if self._server is not None:
            self._server.close()
            self._server = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class SocketStream:
    """A connected socket with the part of pyserial's interface the link and the emulator use."""

    def __init__(self, sock: socket.socket, name: str = "socket", timeout: float = T.SERIAL_POLL):
        self._sock = sock
        self.port = name
        self.timeout = timeout
        self.is_open = True

    @property
    def in_waiting(self) -> int:
        return 0  # unknown: read() returns what is there

    def read(self, size: int = 1) -> bytes:
        import select

        ready, _, _ = select.select([self._sock], [], [], self.timeout)
        if not ready:
            return b""
        data = self._sock.recv(max(size, 65536))
        if not data:
            raise OSError(f"{self.port}: the other end closed")
        return data

    def write(self, data: bytes) -> int:
        self._sock.sendall(data)
        return len(data)

    def reset_input_buffer(self) -> None:
        self._sock.setblocking(False)
        try:
            while self._sock.recv(65536):
                pass
        except (BlockingIOError, OSError):
            pass
        finally:
            self._sock.setblocking(True)

    def close(self) -> None:
        if self.is_open:
            self.is_open = False
            self._sock.close()


class _Status(Exception):
    def __init__(self, code: int, detail: int, message: str):
        super().__init__(message)
        self.code, self.detail, self.message = code, detail, message
