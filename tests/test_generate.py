"""edge generate: the tiny_lm example models (float, and int8 weights with int16 activations) with their KV cache, on our interpreter and LiteRT.

The committed models in examples/tiny_lm are what these tests run (CI never trains)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from edge_sdk.tasks.generate import Generator, filter_logits, pick_token, read_spec
from edge_sdk.model import read_model, write_model

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tiny_lm"
FLOAT = EXAMPLE / "tiny_lm_float.tflite"
QUANT = EXAMPLE / "tiny_lm_int16x8.tflite"  # int8 weights, int16 activations
sys.path.insert(0, str(EXAMPLE))
import tiny_lm

TEXT = (EXAMPLE / "corpus.txt").read_text()
PROMPT = "The interpreter"


@pytest.fixture(scope="module")
def gens():
    """(model kind, backend) -> Generator, built once."""
    cache = {}

    def get(kind: str, backend: str = "python") -> Generator:
        if (kind, backend) not in cache:
            cache[kind, backend] = Generator(FLOAT if kind == "float" else QUANT, backend=backend)
        return cache[kind, backend]

    return get


def _ids(gen: Generator, text: str) -> list[int]:
    return gen.spec.tokenizer.encode(text)


def test_models_small_and_self_contained():
    total = sum(p.stat().st_size for p in EXAMPLE.iterdir() if p.is_file())
    assert total < 1_000_000, f"examples/tiny_lm holds {total} bytes"
    for path in (FLOAT, QUANT):
        m = read_model(str(path))
        spec = read_spec(m)
        assert [s.signature_key for s in m.signature_defs] == ["prefill", "decode"]
        assert len(m.subgraphs) == 2
        assert len(spec.tokenizer.vocab) == len(tiny_lm.CharTokenizer.from_text(TEXT).vocab)
    q = read_model(str(QUANT))
    fc = [op for sg in q.subgraphs for op in sg.operators if q.op_name(op) == "FULLY_CONNECTED"]
    assert len(fc) == 2 * (6 * 2 + 1)  # q, k, v, o, mlp x2 per layer, the head; in both signatures
    for sg in q.subgraphs:
        for op in sg.operators:
            if q.op_name(op) == "FULLY_CONNECTED":
                assert [sg.tensors[t].type for t in op.inputs + op.outputs] == ["INT16", "INT8", "INT64", "INT16"]
    # the two signatures share their weight buffers: the file is about one copy of the int8 weights
    assert QUANT.stat().st_size < 0.5 * FLOAT.stat().st_size


def test_float_logits_match_numpy_reference(gens):
    """Our interpreter's prefill + decode logits vs a plain-numpy forward of the same weights (float64)."""
    gen = gens("float")
    w = tiny_lm.weights_from_model(gen.model)
    ids = _ids(gen, TEXT[200:245])  # 45 tokens: longer than the prefill window (32), so decode continues it
    ref = tiny_lm.reference_logits(w, ids, gen.spec.raw["config"])
    ours = gen.logits_for(ids)  # prefill of the first token, then decode
    assert np.abs(ours - ref).max() < 1e-4
    gen.prefill(ids)  # a whole-prompt prefill (32) + 13 prompt tokens through decode
    assert np.abs(gen.decode(ids[0]) - tiny_lm.reference_logits(w, ids + ids[:1], gen.spec.raw["config"])[-1]).max() < 1e-4


@pytest.mark.parametrize("kind", ["float", "int16x8"])
def test_prefill_then_decode_equals_full_sequence(gens, kind):
    gen = gens(kind)
    ids = _ids(gen, TEXT[1000:1030])
    full = gen.prefill(ids)  # the whole sequence in one prefill: no cache involved
    gen.prefill(ids[:7])
    for t in ids[7:-1]:
        gen.decode(t)
    cached = gen.decode(ids[-1])
    tol = 1e-5 if kind == "float" else 1e-3  # the quantized model: a few int16 steps
    assert np.abs(cached - full).max() <= tol * max(1.0, np.abs(full).max())
    assert np.argmax(cached) == np.argmax(full)


@pytest.mark.parametrize("kind", ["float", "int16x8"])
def test_greedy_tokens_same_on_litert(gens, kind):
    ours = gens(kind, "python").generate(PROMPT, max_tokens=40)
    theirs = gens(kind, "litert").generate(PROMPT, max_tokens=40)
    assert ours["tokens"] == theirs["tokens"]
    assert len(ours["tokens"]) > 0


def test_seeded_sampling_reproducible(gens):
    gen = gens("float")
    a = gen.generate(PROMPT, max_tokens=30, greedy=False, temperature=1.0, seed=1)
    b = gen.generate(PROMPT, max_tokens=30, greedy=False, temperature=1.0, seed=1)
    c = gen.generate(PROMPT, max_tokens=30, greedy=False, temperature=1.0, seed=2)
    assert a["tokens"] == b["tokens"]
    assert a["tokens"] != c["tokens"]
    # the same seed on LiteRT: the same distribution, the same draws
    d = gens("float", "litert").generate(PROMPT, max_tokens=30, greedy=False, temperature=1.0, seed=1)
    assert d["tokens"] == a["tokens"]


def test_filter_top_k_top_p_hand_made():
    logits = np.log(np.array([0.05, 0.4, 0.1, 0.3, 0.15]))
    k2 = filter_logits(logits, top_k=2)
    assert np.isfinite(k2).tolist() == [False, True, False, True, False]
    assert k2[1] == pytest.approx(logits[1])
    # top-p 0.7: 0.4 + 0.3 reaches it -> {1, 3}; 0.71 needs 0.15 too -> {1, 3, 4}
    assert np.isfinite(filter_logits(logits, top_p=0.7)).tolist() == [False, True, False, True, False]
    assert np.isfinite(filter_logits(logits, top_p=0.71)).tolist() == [False, True, False, True, True]
    assert np.isfinite(filter_logits(logits, top_p=0.1)).tolist() == [False, True, False, False, False]
    assert np.isfinite(filter_logits(logits, top_p=1.0)).all()
    # top-k first, then top-p renormalised over the k kept: 0.4/0.7 = 0.571 < 0.6 -> both stay
    assert np.isfinite(filter_logits(logits, top_k=2, top_p=0.6)).sum() == 2
    assert np.isfinite(filter_logits(logits, top_k=2, top_p=0.5)).sum() == 1
    # ties: stable order keeps the first
    assert np.isfinite(filter_logits(np.zeros(4), top_k=1)).tolist() == [True, False, False, False]
    # sampling only ever draws kept tokens; greedy is the arg-max
    rng = np.random.default_rng(0)
    draws = {pick_token(logits, rng, greedy=False, top_k=2) for _ in range(200)}
    assert draws == {1, 3}
    assert pick_token(logits) == 1
    with pytest.raises(ValueError):
        pick_token(logits, rng, greedy=False, temperature=0.0)


def _nll(gen: Generator, ids: list[int]) -> float:
    logits = gen.logits_for(ids).astype(np.float64)
    logp = logits - logits.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    return float(-np.mean(logp[np.arange(len(ids) - 1), ids[1:]]))


def test_quantized_model_sensible(gens):
    f, q = gens("float"), gens("int16x8")
    heldout = TEXT[-2000:-1880]  # in the held-out tail (last 10%) of the corpus
    nf, nq = _nll(f, _ids(f, heldout)), _nll(q, _ids(q, heldout))
    assert nf < 2.5, f"float model held-out loss {nf:.3f} nats/char"  # a uniform guess is ln(94) = 4.54
    assert nq < nf + 0.05, f"int16x8 {nq:.3f} vs float {nf:.3f} nats/char"
    prompt = TEXT[300:330]  # training text: both continue it the same way at first
    a = f.generate(prompt, max_tokens=8)["tokens"]
    b = q.generate(prompt, max_tokens=8)["tokens"]
    assert a[:4] == b[:4]


def test_kv_cache_bytes_are_the_cache_tensors(gens):
    for kind in ("float", "int16x8"):
        gen = gens(kind)
        m = gen.model
        sig = next(s for s in m.signature_defs if s.signature_key == "decode")
        sg = m.subgraphs[sig.subgraph_index]
        names = [c["input"] for c in gen.spec.cache]
        expect = sum(int(np.prod(sg.tensors[sig.inputs[n]].shape)) * 4 for n in names)
        cfg = gen.spec.raw["config"]
        assert gen.kv_cache_bytes == expect == 2 * cfg["n_layers"] * cfg["context"] * cfg["d_model"] * 4
        r = gen.generate(PROMPT, max_tokens=5)
        assert r["kv_cache_bytes"] == expect
        assert r["kv_cache_bytes_per_token"] * cfg["context"] == expect
        assert r["kv_cache_bytes_used"] == r["kv_cache_bytes_per_token"] * (len(PROMPT) + 4)


def test_context_full_stops(gens):
    gen = gens("float")
    C = gen.spec.max_context
    r = gen.generate("a" * (C - 3), max_tokens=50)
    assert r["stop_reason"] in ("context_full", "eos")
    assert r["context_used"] <= C
    if r["stop_reason"] == "context_full":
        assert len(r["tokens"]) == 4
    with pytest.raises(ModelError, match="context"):
        gen.generate("a" * (C + 1), max_tokens=1)


def test_cli_json_keys(capsys):
    from edge_sdk.cli import main

    assert main(["generate", str(QUANT), "--prompt", PROMPT, "--max-tokens", "6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("text", "tokens", "prefill_tokens_per_s", "decode_tokens_per_s", "time_to_first_token_ms",
                "kv_cache_bytes"):
        assert key in out
    assert len(out["tokens"]) == 6 and len(out["text"]) == 6
    assert out["prefill_tokens_per_s"] > 0 and out["decode_tokens_per_s"] > 0
    # streaming text mode: the prompt, then the same greedy text; stats on stderr
    assert main(["generate", str(QUANT), "--prompt", PROMPT, "--max-tokens", "6"]) == 0
    cap = capsys.readouterr()
    assert cap.out == PROMPT + out["text"] + "\n"
    assert "tokens/s" in cap.err and "KV cache" in cap.err
    # sampling flags with --greedy are a usage error
    assert main(["generate", str(QUANT), "--greedy", "--temperature", "0.5"]) == 2  # exit 2: argparse's usage-error code (issue 14)


def test_c_backend_names_missing_ops(monkeypatch):
    from edge_sdk.runtime import c_interpreter

    # the C runtime has every op of tiny_lm now: pretend it lacks one

    monkeypatch.setattr(c_interpreter, "missing_ops", lambda model: ["BATCH_MATMUL v1"])
    with pytest.raises(UnsupportedOpError, match="BATCH_MATMUL"):
        Generator(FLOAT, backend="c")


def test_model_without_metadata_refused():
    m = read_model(str(FLOAT))
    m.metadata = []
    with pytest.raises(ModelError, match="edge_generate"):
        Generator(write_model(m))


def test_decode_writes_the_cache_at_position_only(gens):
    gen = gens("float")
    ids = _ids(gen, PROMPT)
    gen.prefill(ids)
    before = {k: v.copy() for k, v in gen.cache.items()}
    gen.decode(ids[0])
    p = len(ids)
    for name, old in before.items():
        new = gen.cache[name]
        assert new.shape == old.shape == (4, gen.spec.max_context, 16)
        changed = np.flatnonzero(np.any(new != old, axis=(0, 2)))
        assert changed.tolist() == [p], name
    # prefill leaves positions past the prompt window zero
    assert not np.any(before["k0"][:, gen.spec.max_prompt:, :])
