"""Text generation with a KV cache: a model's tokenizer from its metadata, prefill, a decode loop, sampling.

    from edge_sdk.tasks.generate import Generator
    gen = Generator("examples/tiny_lm/tiny_lm_int8.tflite", backend="python")   # or "litert"
    result = gen.generate("The interpreter", max_tokens=80, greedy=True, on_text=print)
    result["text"], result["decode_tokens_per_s"], result["kv_cache_bytes"]

The model contract (what ``examples/tiny_lm`` exports; any model with the same metadata works):

- a metadata entry named ``edge_generate`` holding JSON: ``tokenizer`` ({"type": "char", "vocab": [...],
  "eos": id or null, "unk": id}), ``max_context`` C, ``max_prompt`` P, the signature and tensor names of
  ``prefill`` and ``decode``, and ``cache``: a list of {"input": name, "output": name} pairs;
- signature ``prefill``: ``tokens`` int32 [P] (the prompt, zero-padded), ``length`` int32 [1] -> ``logits``
  [1, V] for the token after the prompt, plus every cache output;
- signature ``decode``: ``token`` int32 [1], ``position`` int32 [1], every cache input -> ``logits`` and the
  cache outputs (the cache with this token's keys/values written at ``position``).

The cache is explicit: it lives here, as numpy arrays passed into and out of every call, so its size is known
(``kv_cache_bytes``: the cache tensors' bytes, fixed at C positions; ``kv_cache_bytes_per_token``: what one
position costs; ``kv_cache_bytes_used``: the positions this generation filled). A prompt longer than P is
prefilled in its first P tokens and fed through ``decode`` for the rest.

Sampling: ``greedy`` takes the arg-max (the first on ties), so every backend gives the same tokens when
their logits agree. Otherwise logits / temperature, then top-k (the k largest; stable order on ties), then
top-p (the smallest set of most likely tokens whose probability reaches p), then one draw from a
``numpy.random.default_rng(seed)`` stream: the same seed gives the same text.

Backends: ``python`` (edge_sdk.Interpreter), ``litert`` (ai_edge_litert's Interpreter), ``c`` (the C
runtime through edge_sdk.runtime.c_interpreter and its signature runner; an UnsupportedOpError names the ops it lacks).
On a microcontroller board the same loop runs on the device: ``edge_sdk.device.generation``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_sdk.errors import BuildError, ModelError, UnsupportedOpError

METADATA_NAME = "edge_generate"
BACKENDS = ("python", "litert", "c")


# ---------------------------------------------------------------------------------------------- tokenizer
class CharTokenizer:
    """One token per character (the vocabulary from the model's metadata); ``eos`` ends a text."""

    def __init__(self, vocab: list[str], eos: int | None = None, unk: int | None = None):
        if not vocab or not all(isinstance(v, str) for v in vocab):
            raise ModelError("generation metadata: tokenizer vocab must be a non-empty list of strings")
        self.vocab = list(vocab)
        self.index = {c: i for i, c in enumerate(self.vocab)}
        self.eos = eos
        self.unk = unk if unk is not None else self.index.get(" ", 0)

    def encode(self, text: str) -> list[int]:
        return [self.index.get(c, self.unk) for c in text]

    def decode(self, ids) -> str:
        return "".join("" if int(i) == self.eos else self.vocab[int(i)] for i in ids)


@dataclass
class GenerationSpec:
    """The ``edge_generate`` metadata of a model, checked."""

    tokenizer: CharTokenizer
    max_context: int
    max_prompt: int
    prefill: dict
    decode: dict
    cache: list[dict]
    raw: dict


def read_spec(model) -> GenerationSpec:
    """The generation metadata of a ``Model`` (ModelError naming what is missing)."""
    data = model.metadata_bytes(METADATA_NAME)
    if data is None:
        raise ModelError(f"the model has no '{METADATA_NAME}' metadata entry: it is not a text-generation model "
                         "exported for edge generate (see examples/tiny_lm)")
    try:
        meta = json.loads(data.decode("utf-8"))
        tk = meta["tokenizer"]
        if tk.get("type") != "char":
            raise ModelError(f"generation metadata: tokenizer type {tk.get('type')!r} is not supported (char only)")
        spec = GenerationSpec(CharTokenizer(tk["vocab"], tk.get("eos"), tk.get("unk")), int(meta["max_context"]),
                              int(meta["max_prompt"]), dict(meta["prefill"]), dict(meta["decode"]),
                              [dict(c) for c in meta["cache"]], meta)
        for c in spec.cache:
            c["input"], c["output"]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ModelError):
            raise
        raise ModelError(f"generation metadata '{METADATA_NAME}' is malformed: {exc!r}") from None
    sigs = {s.signature_key: s for s in model.signature_defs}
    for part in ("prefill", "decode"):
        key = getattr(spec, part)["signature"]
        if key not in sigs:
            raise ModelError(f"generation metadata names signature '{key}' for {part}, which the model lacks "
                             f"(it has: {', '.join(sigs) or 'none'})")
    return spec


# ---------------------------------------------------------------------------------------------- sampling
def filter_logits(logits: np.ndarray, top_k: int | None = None, top_p: float | None = None) -> np.ndarray:
    """Logits with everything outside top-k, then outside top-p, set to -inf (float64 copy)."""
    x = np.asarray(logits, np.float64).reshape(-1).copy()
    if top_k is not None and 0 < top_k < x.size:
        order = np.argsort(-x, kind="stable")
        x[order[top_k:]] = -np.inf
    if top_p is not None and top_p < 1.0:
        if not top_p > 0:
            raise ValueError(f"top_p must be in (0, 1], not {top_p}")
        order = np.argsort(-x, kind="stable")
        p = _softmax(x)[order]
        keep = min(int(np.searchsorted(np.cumsum(p), top_p, side="left")) + 1, x.size)
        x[order[keep:]] = -np.inf
    return x


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x))
    return e / e.sum()


def pick_token(logits: np.ndarray, rng: np.random.Generator | None = None, greedy: bool = True,
               temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None) -> int:
    """The next token: arg-max when ``greedy``, else one seeded draw from the filtered distribution."""
    logits = np.asarray(logits).reshape(-1)
    if greedy:
        return int(np.argmax(logits))
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, not {temperature}")
    probs = _softmax(filter_logits(np.asarray(logits, np.float64) / temperature, top_k, top_p))
    u = rng.random()
    return int(min(np.searchsorted(np.cumsum(probs), u * probs.sum(), side="right"), probs.size - 1))


# ---------------------------------------------------------------------------------------------- the generator
class Generator:
    """A text-generation model on one backend: ``prefill``, ``decode`` and ``generate`` (see module doc)."""

    def __init__(self, model, backend: str = "python", num_threads: int | None = None):
        from edge_sdk.model import read_model

        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        if isinstance(model, (str, Path)):
            try:
                data = Path(model).read_bytes()
            except OSError as exc:
                raise ModelError(f"cannot read model file {model}: {exc.strerror or exc}") from exc
        else:
            data = bytes(model)
        self.model = read_model(data)
        self.spec = read_spec(self.model)
        self.backend = backend
        if backend == "c":
            interp = _c_interpreter(self.model, data)
        elif backend == "litert":
            from ai_edge_litert.interpreter import Interpreter as LiteRT

            interp = LiteRT(model_content=data, num_threads=num_threads)
        else:
            from edge_sdk.runtime.interpreter import Interpreter

            interp = Interpreter(model=self.model, num_threads=num_threads)
        interp.allocate_tensors()  # prepare both signatures now, so timings measure runs only
        self._prefill = interp.get_signature_runner(self.spec.prefill["signature"])
        self._decode = interp.get_signature_runner(self.spec.decode["signature"])
        details = self._decode.get_input_details()
        self._cache_shapes = {}
        for c in self.spec.cache:
            if c["input"] not in details:
                raise ModelError(f"generation metadata names cache input '{c['input']}', which signature "
                                 f"'{self.spec.decode['signature']}' lacks")
            d = details[c["input"]]
            self._cache_shapes[c["input"]] = (tuple(int(s) for s in d["shape"]), np.dtype(d["dtype"]))
        self.cache: dict[str, np.ndarray] = {}
        self.position = 0

    # -- the cache
    @property
    def kv_cache_bytes(self) -> int:
        """Bytes of the cache tensors (fixed: max_context positions)."""
        return int(sum(int(np.prod(s)) * dt.itemsize for s, dt in self._cache_shapes.values()))

    @property
    def kv_cache_bytes_per_token(self) -> int:
        return self.kv_cache_bytes // self.spec.max_context

    def _take_cache(self, out: dict) -> None:
        self.cache = {c["input"]: np.asarray(out[c["output"]]) for c in self.spec.cache}

    # -- model calls
    def prefill(self, ids: list[int]) -> np.ndarray:
        """Run the prompt (positions 0..len-1) and return the logits for the next token; the cache is reset."""
        n = len(ids)
        if n == 0:
            raise ModelError("prefill needs at least one token")
        if n > self.spec.max_context:
            raise ModelError(f"the prompt has {n} tokens; the model's context is {self.spec.max_context}")
        P = self.spec.max_prompt
        first = ids[:P]
        tokens = np.zeros(P, np.int32)
        tokens[: len(first)] = first
        out = self._prefill(**{self.spec.prefill["tokens"]: tokens,
                               self.spec.prefill["length"]: np.asarray([len(first)], np.int32)})
        self._take_cache(out)
        self.position = len(first)
        logits = np.asarray(out[self.spec.prefill["logits"]]).reshape(-1)
        for t in ids[P:]:
            logits = self.decode(t)
        return logits

    def decode(self, token: int) -> np.ndarray:
        """Feed one token at the current position (its keys/values go into the cache); the next logits."""
        if self.position >= self.spec.max_context:
            raise ModelError(f"the context is full ({self.spec.max_context} tokens)")
        out = self._decode(**{self.spec.decode["token"]: np.asarray([token], np.int32),
                              self.spec.decode["position"]: np.asarray([self.position], np.int32)}, **self.cache)
        self._take_cache(out)
        self.position += 1
        return np.asarray(out[self.spec.decode["logits"]]).reshape(-1)

    def logits_for(self, ids: list[int]) -> np.ndarray:
        """Teacher-forced logits [len(ids), V]: row i predicts ids[i + 1] (prefill of ids[:1], then decode)."""
        rows = [self.prefill(ids[:1])]
        for t in ids[1:]:
            rows.append(self.decode(t))
        return np.stack(rows)

    # -- the loop
    def generate(self, prompt: str, max_tokens: int = 64, greedy: bool = True, temperature: float = 1.0,
                 top_k: int | None = None, top_p: float | None = None, seed: int = 0,
                 on_text: Callable[[str], None] | None = None) -> dict:
        """Prefill the prompt, then decode until max_tokens, the end-of-text token or a full context.

        ``on_text`` gets each new token's text as it is produced (streaming). Returns the text, the token
        ids, timings and cache sizes (see the module docstring)."""
        if max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, not {max_tokens}")
        tok = self.spec.tokenizer
        ids = tok.encode(prompt)
        if not ids:
            if tok.eos is None:
                raise ModelError("an empty prompt needs a model with an end-of-text token to start from")
            ids = [tok.eos]  # the start of a new text
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        logits = self.prefill(ids)
        t_prefill = time.perf_counter() - t0
        out: list[int] = []
        ttft = None
        stop = "max_tokens"
        decode_time, steps = 0.0, 0
        while len(out) < max_tokens:
            t = pick_token(logits, rng, greedy, temperature, top_k, top_p)
            if ttft is None:
                ttft = time.perf_counter() - t0
            if t == tok.eos:
                stop = "eos"
                break
            out.append(t)
            if on_text is not None:
                on_text(tok.decode([t]))
            if len(out) == max_tokens:
                break
            if self.position >= self.spec.max_context:
                stop = "context_full"
                break
            t1 = time.perf_counter()
            logits = self.decode(t)
            decode_time += time.perf_counter() - t1
            steps += 1
        if ttft is None:
            ttft = t_prefill
        return {
            "text": tok.decode(out),
            "tokens": out,
            "prompt_tokens": len(ids),
            "stop_reason": stop,
            "backend": self.backend,
            "prefill_tokens_per_s": len(ids) / t_prefill if t_prefill > 0 else None,
            "decode_tokens_per_s": steps / decode_time if steps and decode_time > 0 else None,
            "decode_steps": steps,
            "time_to_first_token_ms": ttft * 1e3,
            "kv_cache_bytes": self.kv_cache_bytes,
            "kv_cache_bytes_per_token": self.kv_cache_bytes_per_token,
            "kv_cache_bytes_used": self.kv_cache_bytes_per_token * self.position,
            "max_context": self.spec.max_context,
            "context_used": self.position,
        }


def _c_interpreter(model, data: bytes):
    """The C runtime on this model (UnsupportedOpError naming the ops it lacks, or why it cannot be built)."""
    from edge_sdk.runtime import c_interpreter

    try:
        missing = c_interpreter.missing_ops(model)
    except BuildError as exc:
        raise UnsupportedOpError(f"backend c: {exc}") from None
    if missing:
        raise UnsupportedOpError(f"backend c: the C runtime has no kernel for {', '.join(missing)} "
                                 "(use --backend python or litert)")
    return c_interpreter.CInterpreter(model_content=data)


def format_stats(result: dict) -> str:
    """The timing and cache lines `edge generate` prints after the text."""
    def rate(v):
        return "-" if v is None else f"{v:.1f}"

    return (f"prompt {result['prompt_tokens']} tokens, generated {len(result['tokens'])} "
            f"(stop: {result['stop_reason']}, backend {result['backend']})\n"
            f"prefill {rate(result['prefill_tokens_per_s'])} tokens/s, decode {rate(result['decode_tokens_per_s'])} "
            f"tokens/s, time to first token {result['time_to_first_token_ms']:.1f} ms\n"
            f"KV cache {result['kv_cache_bytes']} bytes for {result['max_context']} positions "
            f"({result['kv_cache_bytes_per_token']} bytes per token; {result['kv_cache_bytes_used']} bytes for the "
            f"{result['context_used']} used)\n")
