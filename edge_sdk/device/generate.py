"""Text generation on a device: the GENERATE command of the serial protocol (docs/serial-protocol.md).

    from edge_sdk.device.generate import DeviceGenerator
    with SerialLink(port) as link:
        result = DeviceGenerator("examples/tiny_lm/tiny_lm_int16x8.tflite", link).generate("The interpreter", 40)

The device runs the model's ``prefill`` and ``decode`` signatures itself and keeps the key-value cache in its
memory between model calls and between commands: the host sends the prompt's token ids once (START) and
gets the greedy ids back a few at a time (START, then CONTINUE), so the text streams while the device works.
Only greedy decoding runs on a device (the arg-max is taken there; first index on ties, as numpy's).

This module holds the payload layouts (shared by the C firmware's firmware_c/app/generate.c, the Python
emulator and the host), the device side for the emulator (``DeviceSession``, over our Python interpreter)
and the host side (``DeviceGenerator``, the loop ``edge generate --target/--port`` runs).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_sdk.errors import DeviceError, ModelError

START, CONTINUE = 0, 1
GEN_HEAD = struct.Struct("<B3xHh")  # mode, max_tokens (this call), eos id (-1: none)
GEN_START = struct.Struct("<HHB3x")  # n_prompt, max_context, n_names; then i32 ids, then u8-length names
GEN_REPLY = struct.Struct("<HBxIIII")  # n_tokens, stop, position, prefill ticks, decode ticks, decode steps
STOP_REASONS = {0: "max_tokens", 1: "eos", 2: "context_full"}
MAX_PAIRS = 16
DEFAULT_CHUNK = 8  # ids per GENERATE reply: small, so the text streams


@dataclass
class GenerateReply:
    tokens: list[int]
    stop: str
    position: int
    prefill_ticks: int
    decode_ticks: int
    decode_steps: int


def names_of(spec) -> list[str]:
    """The START's name list from a model's generation metadata (edge_sdk.generate.GenerationSpec)."""
    p, d = spec.prefill, spec.decode
    names = [p["signature"], p["tokens"], p["length"], p["logits"], d["signature"], d["token"], d["position"],
             d["logits"]]
    for c in spec.cache:
        names += [c["input"], c["output"]]
    return names


def pack_start(prompt: list[int], names: list[str], max_context: int, max_tokens: int, eos: int | None) -> bytes:
    encoded = [n.encode("ascii") for n in names]
    if any(len(n) > 63 for n in encoded) or len(names) > 255:
        raise ModelError("GENERATE: signature and tensor names must be at most 63 ASCII characters")
    return (GEN_HEAD.pack(START, max_tokens, -1 if eos is None else eos)
            + GEN_START.pack(len(prompt), max_context, len(names))
            + struct.pack(f"<{len(prompt)}i", *prompt) + b"".join(bytes([len(n)]) + n for n in encoded))


def pack_continue(max_tokens: int, eos: int | None) -> bytes:
    return GEN_HEAD.pack(CONTINUE, max_tokens, -1 if eos is None else eos)


def pack_reply(r: GenerateReply) -> bytes:
    code = {v: k for k, v in STOP_REASONS.items()}[r.stop]
    return (GEN_REPLY.pack(len(r.tokens), code, r.position, r.prefill_ticks & 0xFFFFFFFF,
                           r.decode_ticks & 0xFFFFFFFF, r.decode_steps) + struct.pack(f"<{len(r.tokens)}i", *r.tokens))


def unpack_reply(payload: bytes) -> GenerateReply:
    n, stop, position, pre, dec, steps = GEN_REPLY.unpack_from(payload)
    if len(payload) != GEN_REPLY.size + 4 * n:
        raise ValueError(f"GENERATE reply of {len(payload)} bytes for {n} ids")
    tokens = list(struct.unpack_from(f"<{n}i", payload, GEN_REPLY.size))
    return GenerateReply(tokens, STOP_REASONS.get(stop, f"stop {stop}"), position, pre, dec, steps)


def state_bytes(model) -> int:
    """Bytes of the cache store a firmware needs for GENERATE on ``model`` (0: no generation metadata)."""
    from edge_sdk.generate import read_spec

    try:
        spec = read_spec(model)
    except ModelError:
        return 0
    sig = next(s for s in model.signature_defs if s.signature_key == spec.decode["signature"])
    sg = model.subgraphs[sig.subgraph_index]
    total = 0
    for c in spec.cache:
        t = sg.tensors[sig.inputs[c["input"]]] if c["input"] in sig.inputs else None
        if t is not None:
            from edge_sdk.flash import _tensor_bytes

            total += (_tensor_bytes(t) + 15) // 16 * 16
    return total


# ---------------------------------------------------------------------------------------------- device side
class GenerateStatus(Exception):
    """A STATUS answer to GENERATE (code, detail, message), as the protocol's table names them."""

    def __init__(self, code: int, detail: int, message: str):
        super().__init__(message)
        self.code, self.detail, self.message = code, detail, message


class DeviceSession:
    """The GENERATE command over an edge_sdk Interpreter (what the Python emulator runs); the same steps as
    firmware_c/app/generate.c."""

    def __init__(self, interp, reply_limit: int):
        self.interp = interp
        self.limit = reply_limit
        self.active = False

    def execute(self, payload: bytes) -> bytes:
        from edge_sdk.device import serial_link as sl

        if len(payload) < GEN_HEAD.size:
            raise GenerateStatus(sl.BAD_PAYLOAD, len(payload), "GENERATE takes at least 8 bytes")
        mode, max_tokens, eos = GEN_HEAD.unpack_from(payload)
        if max_tokens > self.limit:
            raise GenerateStatus(sl.TOO_LARGE, self.limit, "GENERATE: more tokens than one reply holds")
        self.prefill_ticks = self.decode_ticks = self.steps = 0
        if mode == START:
            self._start(payload[GEN_HEAD.size:], sl)
        elif mode == CONTINUE:
            if len(payload) != GEN_HEAD.size:
                raise GenerateStatus(sl.BAD_PAYLOAD, len(payload), "GENERATE CONTINUE takes 8 bytes")
            if not self.active:
                raise GenerateStatus(sl.BAD_RANGE, 0, "GENERATE CONTINUE without a text: START one")
        else:
            raise GenerateStatus(sl.BAD_PAYLOAD, mode, "GENERATE mode must be 0 (START) or 1 (CONTINUE)")
        out, stop = [], "max_tokens"
        if self.next is None and max_tokens > 0:
            if self.position >= self.context:
                stop, self.active, max_tokens = "context_full", False, 0
            else:
                self._decode(self.pending)
        while len(out) < max_tokens:
            t, self.next = self.next, None
            if t == eos:
                stop, self.active = "eos", False
                break
            out.append(t)
            if len(out) == max_tokens:
                self.pending = t
                break
            if self.position >= self.context:
                stop, self.active = "context_full", False
                break
            self._decode(t)
        return pack_reply(GenerateReply(out, stop, self.position, self.prefill_ticks, self.decode_ticks, self.steps))

    def _start(self, body: bytes, sl) -> None:
        self.active = False
        if len(body) < GEN_START.size:
            raise GenerateStatus(sl.BAD_PAYLOAD, len(body) + GEN_HEAD.size, "GENERATE START takes at least 16 bytes")
        n, self.context, n_names = GEN_START.unpack_from(body)
        at = GEN_START.size
        if n == 0 or at + 4 * n > len(body):
            raise GenerateStatus(sl.BAD_PAYLOAD, len(body), "GENERATE START: 1 or more prompt ids, all in the payload")
        ids = list(struct.unpack_from(f"<{n}i", body, at))
        at += 4 * n
        names = []
        for _ in range(n_names):
            if at >= len(body) or at + 1 + body[at] > len(body) or body[at] > 63:
                raise GenerateStatus(sl.BAD_PAYLOAD, len(names), "GENERATE: malformed name list")
            names.append(body[at + 1:at + 1 + body[at]].decode("ascii", "replace"))
            at += 1 + body[at]
        if n_names < 8 or (n_names - 8) % 2 or (n_names - 8) // 2 > MAX_PAIRS:
            raise GenerateStatus(sl.BAD_PAYLOAD, n_names, "GENERATE names: 8 + 2 per cache pair (at most 16 pairs)")
        sigs = self.interp.get_signature_list()
        for i in (0, 4):
            if names[i] not in sigs:
                raise GenerateStatus(sl.BAD_INDEX, i, "GENERATE: the model has no such signature")
        pre, dec = sigs[names[0]], sigs[names[4]]
        for i, (where, name) in enumerate(zip((pre["inputs"], pre["inputs"], pre["outputs"], None, dec["inputs"],
                                               dec["inputs"], dec["outputs"]), names[1:8]), 1):
            if where is not None and name not in where:
                raise GenerateStatus(sl.BAD_INDEX, i, "GENERATE: no such signature tensor (or not INT32)")
        pairs = [(names[8 + 2 * k], names[9 + 2 * k]) for k in range((n_names - 8) // 2)]
        for k, (i, o) in enumerate(pairs):
            if i not in dec["inputs"] or o not in dec["outputs"] or o not in pre["outputs"]:
                raise GenerateStatus(sl.BAD_INDEX, 8 + 2 * k, "GENERATE: no such cache tensor in the signatures")
        if n > self.context:
            raise GenerateStatus(sl.BAD_RANGE, self.context, "GENERATE START: the prompt is longer than the context")
        self.names, self.pairs = names, pairs
        self._prefill = self.interp.get_signature_runner(names[0])
        self._decode_runner = self.interp.get_signature_runner(names[4])
        P = int(self._prefill.get_input_details()[names[1]]["shape"][0])
        first = ids[:P]
        tokens = np.zeros(P, np.int32)
        tokens[:len(first)] = first
        out = self._prefill(**{names[1]: tokens, names[2]: np.asarray([len(first)], np.int32)})
        self.prefill_ticks += 1
        self.cache = {i: out[o] for i, o in pairs}
        self.next, self.position = int(np.argmax(out[names[3]])), len(first)
        for t in ids[P:]:
            self._decode(t, prefill=True)
        self.active = True

    def _decode(self, token: int, prefill: bool = False) -> None:
        n = self.names
        out = self._decode_runner(**{n[5]: np.asarray([token], np.int32), n[6]: np.asarray([self.position], np.int32)},
                                  **self.cache)
        self.cache = {i: out[o] for i, o in self.pairs}
        self.next, self.position = int(np.argmax(out[n[7]])), self.position + 1
        if prefill:
            self.prefill_ticks += 1
        else:
            self.decode_ticks += 1
            self.steps += 1


# ---------------------------------------------------------------------------------------------- host side
class DeviceGenerator:
    """Greedy generation on a device that runs ``model`` (checked by its SHA-256) over a SerialLink."""

    def __init__(self, model, link, chunk: int = DEFAULT_CHUNK):
        from edge_sdk.generate import read_spec
        from edge_sdk.model import read_model

        data = Path(model).read_bytes() if isinstance(model, (str, Path)) else bytes(model)
        self.model = read_model(data)
        self.spec = read_spec(self.model)
        self.link = link
        self.chunk = max(1, int(chunk))
        h = link.hello()
        from edge_sdk.device.serial_link import CAP_GENERATE

        if not h.capabilities & CAP_GENERATE:
            raise DeviceError(f"the device on {link.port} has no GENERATE command (firmware without a KV-cache "
                              f"store, or an older one): flash it again with this model")
        link.expect_model(data)
        self.timer_units = h.timer_units
        self.kv_cache_bytes = state_bytes(self.model)

    def generate(self, prompt: str, max_tokens: int = 64, on_text: Callable[[str], None] | None = None) -> dict:
        """Prefill the prompt and decode greedily on the device; the same keys as Generator.generate plus the
        device's own tick counts (``device_prefill_ticks``, ``device_decode_ticks``, ``timer_units``)."""
        if max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, not {max_tokens}")
        tok, spec = self.spec.tokenizer, self.spec
        ids = tok.encode(prompt)
        if not ids:
            if tok.eos is None:
                raise ModelError("an empty prompt needs a model with an end-of-text token to start from")
            ids = [tok.eos]
        if len(ids) > spec.max_context:
            raise ModelError(f"the prompt has {len(ids)} tokens; the model's context is {spec.max_context}")
        names = names_of(spec)
        t0 = time.perf_counter()
        first = min(self.chunk, max_tokens)
        r = unpack_reply(self.link.generate(pack_start(ids, names, spec.max_context, first, tok.eos)))
        t_first = time.perf_counter() - t0
        out, pre_ticks, dec_ticks, steps = [], r.prefill_ticks, r.decode_ticks, r.decode_steps
        while True:
            out += r.tokens
            if on_text is not None and r.tokens:
                on_text(tok.decode(r.tokens))
            if r.stop != "max_tokens" or len(out) >= max_tokens:
                break
            r = unpack_reply(self.link.generate(pack_continue(min(self.chunk, max_tokens - len(out)), tok.eos)))
            dec_ticks += r.decode_ticks
            steps += r.decode_steps
        total = time.perf_counter() - t0
        per = self.kv_cache_bytes // spec.max_context if spec.max_context else 0
        return {
            "text": tok.decode(out),
            "tokens": out,
            "prompt_tokens": len(ids),
            "stop_reason": r.stop,
            "backend": "device",
            "prefill_tokens_per_s": len(ids) / t_first if t_first > 0 else None,
            "decode_tokens_per_s": steps / (total - t_first) if steps and total > t_first else None,
            "decode_steps": steps,
            "time_to_first_token_ms": t_first * 1e3,
            "kv_cache_bytes": self.kv_cache_bytes,
            "kv_cache_bytes_per_token": per,
            "kv_cache_bytes_used": per * r.position,
            "max_context": spec.max_context,
            "context_used": r.position,
            "device_prefill_ticks": pre_ticks,
            "device_decode_ticks": dec_ticks,
            "timer_units": self.timer_units,
        }


def generate_on_device(model, target=None, port: str | None = None, prompt: str = "", max_tokens: int = 64,
                       on_text: Callable[[str], None] | None = None, chunk: int = DEFAULT_CHUNK,
                       invoke_timeout: float = 120.0) -> dict:
    """``edge generate MODEL --target PROFILE | --port URL``: flash the model for ``target`` (a running QEMU board
    with this model is reused) or talk to the board at ``port``, then generate greedily on it. The result has
    Generator.generate's keys plus ``port`` and the device's tick counts; the board keeps running (stop a QEMU
    one with ``edge board stop``)."""
    from edge_sdk.device.serial_link import SerialLink

    if port is None:
        if target is None:
            raise ValueError("generate_on_device needs a target profile or a port")
        from edge_sdk.flash import flash

        port = flash(model, target, reuse=True).port
        if not port:
            raise DeviceError(f"flashed {model} for {target}, but the profile names no serial port: give --port")
    with SerialLink(port, invoke_timeout=invoke_timeout) as link:
        result = DeviceGenerator(model, link, chunk).generate(prompt, max_tokens, on_text)
    result["port"] = port
    return result
