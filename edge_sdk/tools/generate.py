"""`edge generate --target/--port`: text generation on a device, the host side of the GENERATE command.

    from edge_sdk.tools.generate import DeviceGenerator
    with SerialLink(port) as link:
        result = DeviceGenerator("examples/tiny_lm/tiny_lm_int16x8.tflite", link).generate("The interpreter", 40)

The payload layouts and the device side are edge_sdk.device.generation (docs/serial-protocol.md); generation
on this host is edge_sdk.tasks.generate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from edge_sdk.device.generation import (DEFAULT_CHUNK, names_of, pack_continue, pack_start, state_bytes,
                                        unpack_reply)
from edge_sdk.errors import DeviceError, ModelError
from edge_sdk import timeouts as T


class DeviceGenerator:
    """Greedy generation on a device that runs ``model`` (checked by its SHA-256) over a SerialLink."""

    def __init__(self, model, link, chunk: int = DEFAULT_CHUNK):
        from edge_sdk.tasks.generate import read_spec
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
                       invoke_timeout: float = T.DEVICE_RUN_TIMEOUT) -> dict:
    """``edge generate MODEL --target PROFILE | --port URL``: flash the model for ``target`` (a running QEMU board
    with this model is reused) or talk to the board at ``port``, then generate greedily on it. The result has
    Generator.generate's keys plus ``port`` and the device's tick counts; the board keeps running (stop a QEMU
    one with ``edge board stop``)."""
    from edge_sdk.device.serial_link import SerialLink

    if port is None:
        if target is None:
            raise ValueError("generate_on_device needs a target profile or a port")
        from edge_sdk.tools.flash import flash

        port = flash(model, target, reuse=True).port
        if not port:
            raise DeviceError(f"flashed {model} for {target}, but the profile names no serial port: give --port")
    with SerialLink(port, invoke_timeout=invoke_timeout) as link:
        result = DeviceGenerator(model, link, chunk).generate(prompt, max_tokens, on_text)
    result["port"] = port
    return result
