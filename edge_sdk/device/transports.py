"""A link that loses, repeats and damages bytes on purpose, to prove the serial protocol survives it.

Two ways to use it:

* wrap any open serial-like object: ``FaultyTransport(serial.serial_for_url(url), rate=0.01, seed=1)``;
* or as a pyserial URL (importing this module registers the ``faulty://`` handler; ``SerialLink`` imports
  it): ``faulty://<inner url>#rate=0.01&seed=1&kinds=drop,duplicate,corrupt&direction=both``, e.g.
  ``faulty://socket://127.0.0.1:4000#rate=0.01&seed=7``. The inner URL is any pyserial URL.

Each byte passing in a faulted direction is, with probability ``rate``, dropped, sent twice, or replaced by
another value (one of ``kinds``, chosen uniformly), from a ``random.Random(seed)``: the same byte stream gets
the same faults. ``counts`` tallies what was done.
"""

from __future__ import annotations

import random
import sys
import types
from urllib.parse import parse_qs

import serial
from serial.serialutil import PortNotOpenError, SerialBase, SerialException

KINDS = ("drop", "duplicate", "corrupt")


class FaultInjector:
    """Applies seeded byte faults to a stream, byte by byte."""

    def __init__(self, rate: float = 0.01, seed: int = 0, kinds=KINDS):
        if not 0 <= rate <= 1:
            raise ValueError(f"fault rate must be in [0, 1], not {rate}")
        kinds = tuple(kinds)
        unknown = [k for k in kinds if k not in KINDS]
        if unknown or not kinds:
            raise ValueError(f"fault kinds must be some of {', '.join(KINDS)}, not {', '.join(kinds) or 'none'}")
        self.rate, self.kinds = float(rate), kinds
        self.random = random.Random(seed)
        self.counts = {k: 0 for k in KINDS}
        self.bytes = 0

    def apply(self, data: bytes) -> bytes:
        if not self.rate:
            self.bytes += len(data)
            return bytes(data)
        out = bytearray()
        r = self.random
        for b in data:
            self.bytes += 1
            if r.random() >= self.rate:
                out.append(b)
                continue
            kind = r.choice(self.kinds)
            self.counts[kind] += 1
            if kind == "duplicate":
                out += bytes((b, b))
            elif kind == "corrupt":
                out.append(b ^ r.randrange(1, 256))
            # drop: nothing
        return bytes(out)


class FaultyTransport:
    """A serial-like wrapper: ``read``/``write`` pass through ``inner`` with faults injected."""

    def __init__(self, inner, rate: float = 0.01, seed: int = 0, kinds=KINDS, direction: str = "both"):
        if direction not in ("both", "read", "write"):
            raise ValueError(f"direction must be both, read or write, not {direction!r}")
        self.inner = inner
        self.direction = direction
        # one generator per direction, so what happens on one side does not shift the other's faults
        self.rx = FaultInjector(rate if direction in ("both", "read") else 0.0, seed, kinds)
        self.tx = FaultInjector(rate if direction in ("both", "write") else 0.0, seed + 1, kinds)
        self._pending = bytearray()

    @property
    def counts(self) -> dict[str, int]:
        return {k: self.rx.counts[k] + self.tx.counts[k] for k in KINDS}

    @property
    def port(self):
        return f"faulty:{getattr(self.inner, 'port', self.inner)}"

    @property
    def timeout(self):
        return self.inner.timeout

    @timeout.setter
    def timeout(self, value):
        self.inner.timeout = value

    @property
    def in_waiting(self) -> int:
        return len(self._pending) + (self.inner.in_waiting if not self._pending else 0)

    def read(self, size: int = 1) -> bytes:
        if not self._pending:
            self._pending += self.rx.apply(self.inner.read(size))
        out = bytes(self._pending[:size])
        del self._pending[:size]
        return out

    def write(self, data: bytes) -> int:
        self.inner.write(self.tx.apply(bytes(data)))
        return len(data)

    def flush(self) -> None:
        flush = getattr(self.inner, "flush", None)
        if flush is not None:
            flush()

    def reset_input_buffer(self) -> None:
        self._pending.clear()
        reset = getattr(self.inner, "reset_input_buffer", None)
        if reset is not None:
            reset()

    def close(self) -> None:
        self.inner.close()


def parse_faulty_url(url: str) -> tuple[str, dict]:
    """``faulty://INNER#rate=..&seed=..&kinds=a,b&direction=..`` -> (INNER, FaultyTransport keyword args)."""
    if not url.lower().startswith("faulty://"):
        raise ValueError(f"not a faulty:// URL: {url}")
    rest = url[len("faulty://"):]
    inner, _, options = rest.partition("#")
    if not inner:
        raise ValueError(f"faulty:// URL without an inner URL: {url}")
    kwargs: dict = {}
    for key, values in parse_qs(options, keep_blank_values=True).items():
        value = values[-1]
        if key == "rate":
            kwargs["rate"] = float(value)
        elif key == "seed":
            kwargs["seed"] = int(value)
        elif key == "kinds":
            kwargs["kinds"] = tuple(k for k in value.split(",") if k)
        elif key == "direction":
            kwargs["direction"] = value
        else:
            raise ValueError(f"unknown faulty:// option {key!r} (rate, seed, kinds, direction)")
    return inner, kwargs


class FaultySerial(SerialBase):
    """The pyserial class behind ``faulty://`` URLs."""

    def open(self):
        if self._port is None:
            raise SerialException("Port must be configured before it can be used.")
        if self.is_open:
            raise SerialException("Port is already open.")
        try:
            inner_url, kwargs = parse_faulty_url(self.portstr)
        except ValueError as exc:
            raise SerialException(str(exc)) from exc
        inner = serial.serial_for_url(inner_url, baudrate=self._baudrate, timeout=self._timeout,
                                      write_timeout=self._write_timeout)
        self._faulty = FaultyTransport(inner, **kwargs)
        self.is_open = True

    def close(self):
        if self.is_open:
            self._faulty.close()
            self.is_open = False

    def _reconfigure_port(self, force_update=False):
        if self.is_open:
            self._faulty.inner.timeout = self._timeout

    def from_url(self, url):
        return parse_faulty_url(url)

    @property
    def faults(self) -> FaultyTransport:
        return self._faulty

    @property
    def in_waiting(self):
        if not self.is_open:
            raise PortNotOpenError()
        return self._faulty.in_waiting

    def read(self, size=1):
        if not self.is_open:
            raise PortNotOpenError()
        return self._faulty.read(size)

    def write(self, data):
        if not self.is_open:
            raise PortNotOpenError()
        return self._faulty.write(bytes(data))

    def flush(self):
        if self.is_open:
            self._faulty.flush()

    def reset_input_buffer(self):
        if self.is_open:
            self._faulty.reset_input_buffer()

    def reset_output_buffer(self):
        pass


def register() -> None:
    """Make ``serial.serial_for_url("faulty://...")`` work (idempotent)."""
    package = __name__
    handler = types.ModuleType(f"{package}.protocol_faulty")
    handler.Serial = FaultySerial
    sys.modules.setdefault(handler.__name__, handler)
    if package not in serial.protocol_handler_packages:
        serial.protocol_handler_packages.append(package)


register()
