"""Text generation on a device: the GENERATE command of the serial protocol (docs/serial-protocol.md).

    from edge_sdk.device.generation import DeviceGenerator
    with SerialLink(port) as link:
        result = DeviceGenerator("examples/tiny_lm/tiny_lm_int16x8.tflite", link).generate("The interpreter", 40)

The device runs the model's ``prefill`` and ``decode`` signatures itself and keeps the key-value cache in its
memory between model calls and between commands: the host sends the prompt's token ids once (START) and
gets the greedy ids back a few at a time (START, then CONTINUE), so the text streams while the device works.
Only greedy decoding runs on a device (the arg-max is taken there; first index on ties, as numpy's).

This module holds the payload layouts (shared by the C firmware's firmware_c/app/generate.c, the Python
emulator and the host) and the device side for the emulator (``DeviceSession``, over our Python interpreter).
The host side (``DeviceGenerator``, the loop ``edge generate --target/--port`` runs) is
edge_sdk.tools.generate.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from edge_sdk.errors import ModelError
from edge_sdk.model.types import tensor_nbytes

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
    """The START's name list from a model's generation metadata (edge_sdk.tasks.generate.GenerationSpec)."""
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
    from edge_sdk.tasks.generate import read_spec

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
            total += (tensor_nbytes(t) + 15) // 16 * 16
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
