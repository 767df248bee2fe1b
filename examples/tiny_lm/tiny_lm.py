"""A tiny character-level decoder-only transformer: numpy training code, a numpy reference, TFLite export.

Architecture (pre-norm, GPT-style):

    x = tok_emb[token] + pos_emb[position]
    per layer:  x += Wo · attention(RMSNorm(x) -> q, k, v; causal, H heads)
                x += W2 · relu(W1 · RMSNorm(x))
    logits = Wout · RMSNorm(x)

RMSNorm's gain is folded into the next linear layer's weights at export, and the attention scale
1/sqrt(head_dim) into the query projection, so the exported graph normalises with x * rsqrt(mean(x^2) + eps).

The exported model has two subgraphs with signatures, sharing their weight buffers:

- ``prefill``: ``tokens`` int32 [P] (the prompt, padded to the maximum prompt length P), ``length`` int32 [1]
  -> ``logits`` float32 [1, V] (at position length - 1) and the KV cache ``new_k{l}``, ``new_v{l}``
  float32 [H, C, head_dim] per layer (positions 0..P-1 filled; the rest zero; PAD writes them).
- ``decode``: ``token`` int32 [1], ``position`` int32 [1], ``k{l}``, ``v{l}`` (the cache) -> ``logits`` and
  the cache with the new key/value written at ``position``. The write needs no special op: with
  d = arange(C) - position (CAST, SUB), one_hot = relu(1 - |d|) (ABS, SUB, RELU) and
  cache' = cache * (1 - one_hot) + new * one_hot (MUL, ADD): exact in float. The causal mask is
  -1e9 * relu(min(d, 1)) (MINIMUM, RELU, MUL): positions after ``position`` get -1e9 before the softmax.
  Cache rows past the prompt length hold whatever prefill computed for the padding; the mask hides them and
  decode overwrites them.

The quantized model (int8 weights, int16 activations — TFLite's "16x8" scheme): every linear layer (q, k,
v, o, the two MLP layers, the output head) is an int16x8 FULLY_CONNECTED with per-channel symmetric int8
weights, an int64 bias and symmetric int16 activations in and out (QUANTIZE before, DEQUANTIZE after; ranges
calibrated on the training text); the token and position embeddings are per-tensor int8 tables (GATHER in
int8, then DEQUANTIZE). Normalisation, attention (BATCH_MATMUL, SOFTMAX), the residual stream and the KV
cache stay float32 — converters/quantize/ has no integer rule for BATCH_MATMUL with two run-time operands
and handles single-subgraph models only, so the exporter places the quantization itself. int16 rather than
int8 activations: with int8 ones, LiteRT's FULLY_CONNECTED (single-rounding requantization) differs from
TFLM's (and ours) by one step on near-ties; a step of an int8 logit is ~0.09, enough to flip greedy picks
between backends within a few tokens. With int16 activations a step is 256 times smaller.
"""

from __future__ import annotations

import json
import math

import numpy as np

EOS = "<eos>"
EPS = 1e-5
MASK = -1e9
METADATA_NAME = "edge_generate"  # the metadata entry edge_sdk.tasks.generate reads

CONFIG = {"d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 256, "context": 128, "max_prompt": 32}


# ---------------------------------------------------------------------------------------------- tokenizer
class CharTokenizer:
    """Characters as tokens; id 0 is the end-of-text token; unknown characters map to ``unk``."""

    def __init__(self, vocab: list[str]):
        self.vocab = list(vocab)
        self.index = {c: i for i, c in enumerate(self.vocab)}
        self.eos = self.index.get(EOS)
        self.unk = self.index.get("?", self.index.get(" ", 0))

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        return cls([EOS] + sorted(set(text)))

    def encode(self, text: str) -> list[int]:
        return [self.index.get(c, self.unk) for c in text]

    def decode(self, ids) -> str:
        return "".join("" if int(i) == self.eos else self.vocab[int(i)] for i in ids)


def corpus_ids(text: str, tok: CharTokenizer) -> np.ndarray:
    """Paragraphs (split at blank lines) with the end-of-text token after each."""
    ids: list[int] = []
    for para in text.split("\n\n"):
        para = para.strip("\n")
        if para:
            ids += tok.encode(para) + [tok.eos]
    return np.asarray(ids, np.int32)


# ---------------------------------------------------------------------------------------------- training model
def init_params(vocab: int, cfg: dict, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    d, f, n = cfg["d_model"], cfg["d_ff"], cfg["n_layers"]

    def w(*shape, std=0.02):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    p = {"tok": w(vocab, d), "pos": w(cfg["context"], d), "gf": np.ones(d, np.float32),
         "wout": w(d, vocab), "bout": np.zeros(vocab, np.float32)}
    resid = 0.02 / math.sqrt(2 * n)
    for i in range(n):
        p.update({
            f"g1_{i}": np.ones(d, np.float32), f"g2_{i}": np.ones(d, np.float32),
            f"wq_{i}": w(d, d), f"wk_{i}": w(d, d), f"wv_{i}": w(d, d), f"wo_{i}": w(d, d, std=resid),
            f"bq_{i}": np.zeros(d, np.float32), f"bk_{i}": np.zeros(d, np.float32),
            f"bv_{i}": np.zeros(d, np.float32), f"bo_{i}": np.zeros(d, np.float32),
            f"w1_{i}": w(d, f), f"b1_{i}": np.zeros(f, np.float32),
            f"w2_{i}": w(f, d, std=resid), f"b2_{i}": np.zeros(d, np.float32),
        })
    return p


def _rms(x, g):
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS)
    xh = x * r
    return xh * g, (xh, r, g)


def _rms_back(dy, cache):
    xh, r, g = cache
    dg = np.sum(dy * xh, axis=tuple(range(dy.ndim - 1)))
    dxh = dy * g
    dx = r * (dxh - xh * np.mean(dxh * xh, axis=-1, keepdims=True))
    return dx, dg


def loss_and_grads(p: dict, idx: np.ndarray, targets: np.ndarray, cfg: dict, grads: bool = True):
    """Mean cross-entropy over (B, T) and, with ``grads``, its gradient for every parameter."""
    B, T = idx.shape
    d, H, n = cfg["d_model"], cfg["n_heads"], cfg["n_layers"]
    dh = d // H
    scale = 1.0 / math.sqrt(dh)
    mask = np.triu(np.full((T, T), MASK, np.float32), 1)
    x = p["tok"][idx] + p["pos"][:T]
    caches = []
    for i in range(n):
        h, c1 = _rms(x, p[f"g1_{i}"])
        q = h @ p[f"wq_{i}"] + p[f"bq_{i}"]
        k = h @ p[f"wk_{i}"] + p[f"bk_{i}"]
        v = h @ p[f"wv_{i}"] + p[f"bv_{i}"]
        qh, kh, vh = (t.reshape(B, T, H, dh).transpose(0, 2, 1, 3) for t in (q, k, v))
        s = (qh @ kh.transpose(0, 1, 3, 2)) * scale + mask
        s = s - s.max(-1, keepdims=True)
        e = np.exp(s)
        a = e / e.sum(-1, keepdims=True)
        oh = a @ vh
        o = oh.transpose(0, 2, 1, 3).reshape(B, T, d)
        x1 = x + o @ p[f"wo_{i}"] + p[f"bo_{i}"]
        h2, c2 = _rms(x1, p[f"g2_{i}"])
        f_pre = h2 @ p[f"w1_{i}"] + p[f"b1_{i}"]
        f = np.maximum(f_pre, 0)
        x2 = x1 + f @ p[f"w2_{i}"] + p[f"b2_{i}"]
        caches.append((h, c1, qh, kh, vh, a, o, h2, c2, f_pre, f))
        x = x2
    hf, cf = _rms(x, p["gf"])
    logits = hf @ p["wout"] + p["bout"]
    logits = logits - logits.max(-1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(-1, keepdims=True)
    flat = probs.reshape(B * T, -1)
    tflat = targets.reshape(-1)
    loss = float(-np.mean(np.log(flat[np.arange(B * T), tflat] + 1e-12)))
    if not grads:
        return loss, None
    g: dict[str, np.ndarray] = {}
    dl = flat.copy()
    dl[np.arange(B * T), tflat] -= 1
    dl = (dl / (B * T)).reshape(B, T, -1).astype(np.float32)
    g["wout"] = hf.reshape(-1, d).T @ dl.reshape(-1, dl.shape[-1])
    g["bout"] = dl.sum((0, 1))
    dx, g["gf"] = _rms_back(dl @ p["wout"].T, cf)
    for i in reversed(range(n)):
        h, c1, qh, kh, vh, a, o, h2, c2, f_pre, f = caches[i]
        # MLP
        g[f"w2_{i}"] = f.reshape(-1, f.shape[-1]).T @ dx.reshape(-1, d)
        g[f"b2_{i}"] = dx.sum((0, 1))
        df = (dx @ p[f"w2_{i}"].T) * (f_pre > 0)
        g[f"w1_{i}"] = h2.reshape(-1, d).T @ df.reshape(-1, df.shape[-1])
        g[f"b1_{i}"] = df.sum((0, 1))
        dh2, g[f"g2_{i}"] = _rms_back(df @ p[f"w1_{i}"].T, c2)
        dx = dx + dh2
        # attention
        g[f"wo_{i}"] = o.reshape(-1, d).T @ dx.reshape(-1, d)
        g[f"bo_{i}"] = dx.sum((0, 1))
        doh = (dx @ p[f"wo_{i}"].T).reshape(B, T, H, dh).transpose(0, 2, 1, 3)
        da = doh @ vh.transpose(0, 1, 3, 2)
        dvh = a.transpose(0, 1, 3, 2) @ doh
        ds = a * (da - np.sum(da * a, -1, keepdims=True)) * scale
        dqh = ds @ kh
        dkh = ds.transpose(0, 1, 3, 2) @ qh
        dh_ = np.zeros_like(h)
        for name, dt in (("q", dqh), ("k", dkh), ("v", dvh)):
            dt = dt.transpose(0, 2, 1, 3).reshape(B, T, d)
            g[f"w{name}_{i}"] = h.reshape(-1, d).T @ dt.reshape(-1, d)
            g[f"b{name}_{i}"] = dt.sum((0, 1))
            dh_ += dt @ p[f"w{name}_{i}"].T
        dh1, g[f"g1_{i}"] = _rms_back(dh_, c1)
        dx = dx + dh1
    g["tok"] = np.zeros_like(p["tok"])
    np.add.at(g["tok"], idx, dx)
    g["pos"] = np.zeros_like(p["pos"])
    g["pos"][:T] = dx.sum(0)
    return loss, g


# ---------------------------------------------------------------------------------------------- export weights
def fold(p: dict, cfg: dict) -> dict[str, np.ndarray]:
    """The exported weights: RMSNorm gains and the attention scale folded in, linear weights as
    FULLY_CONNECTED stores them ([out, in])."""
    d, H, n = cfg["d_model"], cfg["n_heads"], cfg["n_layers"]
    scale = 1.0 / math.sqrt(d // H)
    w = {"tok": p["tok"], "pos": p["pos"]}
    for i in range(n):
        g1, g2 = p[f"g1_{i}"][:, None], p[f"g2_{i}"][:, None]
        w[f"wq_{i}"], w[f"bq_{i}"] = (g1 * p[f"wq_{i}"]).T * scale, p[f"bq_{i}"] * scale
        w[f"wk_{i}"], w[f"bk_{i}"] = (g1 * p[f"wk_{i}"]).T, p[f"bk_{i}"]
        w[f"wv_{i}"], w[f"bv_{i}"] = (g1 * p[f"wv_{i}"]).T, p[f"bv_{i}"]
        w[f"wo_{i}"], w[f"bo_{i}"] = p[f"wo_{i}"].T, p[f"bo_{i}"]
        w[f"w1_{i}"], w[f"b1_{i}"] = (g2 * p[f"w1_{i}"]).T, p[f"b1_{i}"]
        w[f"w2_{i}"], w[f"b2_{i}"] = p[f"w2_{i}"].T, p[f"b2_{i}"]
    w["wout"], w["bout"] = (p["gf"][:, None] * p["wout"]).T, p["bout"]
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in w.items()}


LINEARS = ("q", "k", "v", "o", "1", "2")


def reference_logits(w: dict, tokens, cfg: dict, record: dict | None = None) -> np.ndarray:
    """Logits [T, V] of the exported (folded) float model for a token sequence, in plain numpy (float64).

    ``record`` (a dict) collects each linear layer's input and output range, by name, for calibration."""
    tokens = np.asarray(tokens, np.int64)
    T = len(tokens)
    d, H, n = cfg["d_model"], cfg["n_heads"], cfg["n_layers"]
    dh = d // H
    w = {k: v.astype(np.float64) for k, v in w.items()}

    def note(name, v):
        if record is not None:
            lo, hi = record.get(name, (np.inf, -np.inf))
            record[name] = (min(lo, float(v.min())), max(hi, float(v.max())))

    def norm(x):
        return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + EPS)

    def lin(x, name):
        y = x @ w[f"w{name}"].T + w[f"b{name}"]
        note(f"{name}.in", x)
        if name.startswith("1_"):
            y = np.maximum(y, 0)
        note(f"{name}.out", y)
        return y

    mask = np.triu(np.full((T, T), MASK), 1)
    x = w["tok"][tokens] + w["pos"][:T]
    note("tok", w["tok"])
    note("pos", w["pos"])
    for i in range(n):
        h = norm(x)
        q, k, v = (lin(h, f"{c}_{i}").reshape(T, H, dh).transpose(1, 0, 2) for c in "qkv")
        s = q @ k.transpose(0, 2, 1) + mask
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        o = (a @ v).transpose(1, 0, 2).reshape(T, d)
        x = x + lin(o, f"o_{i}")
        x = x + lin(lin(norm(x), f"1_{i}"), f"2_{i}")
    return lin(norm(x), "out")


# ---------------------------------------------------------------------------------------------- TFLite export
def _sym16(lo: float, hi: float) -> float:
    """The scale of a symmetric int16 activation (zero point 0) covering [lo, hi]."""
    return max(abs(lo), abs(hi), 1e-8) / 32767.0


def _sym(x: np.ndarray, axis=None) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 over [-127, 127]: (values, scales) per row (axis=1) or per tensor (axis=None)."""
    m = np.abs(x).max(axis=axis, keepdims=axis is not None)
    s = np.maximum(m, 1e-8) / 127.0
    q = np.clip(np.round(x / s), -127, 127).astype(np.int8)
    return q, np.atleast_1d(np.asarray(s, np.float32).reshape(-1))


class _Graph:
    """One signature's subgraph: a GraphBuilder plus the layer helpers both signatures share."""

    def __init__(self, name: str, w: dict, cfg: dict, ranges: dict | None):
        from edge_sdk.model.builder import GraphBuilder

        self.g = GraphBuilder(name)
        self.w, self.cfg, self.ranges = w, cfg, ranges  # ranges None: the float model
        self.n = 0
        self._const: dict[str, int] = {}

    def t(self, shape, type="FLOAT32", **q) -> int:
        self.n += 1
        return self.g.tensor(f"t{self.n}", shape, type, **q)

    def const(self, name, data, type=None, **q) -> int:
        if name not in self._const:
            self._const[name] = self.g.constant(name, data, type=type, **q)
        return self._const[name]

    def op(self, op, ins, shape, type="FLOAT32", version=1, q=None, **options) -> int:
        out = self.t(shape, type, **(q or {}))
        self.g.op(op, ins, [out], version=version, **options)
        return out

    def shape_of(self, t: int) -> tuple[int, ...]:
        return self.g.tensors[t].shape

    def reshape(self, x, shape) -> int:
        return self.op("RESHAPE", [x, self.const(f"shape_{'x'.join(map(str, shape))}", np.asarray(shape, np.int32))],
                       shape, new_shape=list(shape))

    def embed(self, table: str, idx: int, rows: int) -> int:
        """GATHER rows of an embedding table (int8 + DEQUANTIZE in the int8 model)."""
        data = self.w[table]
        d = data.shape[1]
        if self.ranges is None:
            return self.op("GATHER", [self.const(table, data), idx], (rows, d), axis=0, batch_dims=0)
        qv, s = _sym(data)
        quant = {"scale": s, "zero_point": 0}
        tq = self.const(table, qv, "INT8", **quant)
        gq = self.op("GATHER", [tq, idx], (rows, d), "INT8", version=2, q=quant, axis=0, batch_dims=0)
        return self.op("DEQUANTIZE", [gq], (rows, d), version=2)

    def rmsnorm(self, x) -> int:
        shape = self.shape_of(x)
        sq = self.op("MUL", [x, x], shape, fused_activation_function="NONE")
        m = self.op("MEAN", [sq, self.const("axis_last", np.asarray([1], np.int32))], (shape[0], 1), keep_dims=True)
        m = self.op("ADD", [m, self.const("eps", np.asarray([EPS], np.float32))], (shape[0], 1),
                    fused_activation_function="NONE")
        r = self.op("RSQRT", [m], (shape[0], 1))
        return self.op("MUL", [x, r], shape, fused_activation_function="NONE")

    def quantize_input(self, x, name) -> int:
        """The int16 copy of a float activation feeding linear layer ``name`` (shared by q/k/v)."""
        key = ("q", x)
        if key not in self._const:
            self._const[key] = self.op("QUANTIZE", [x], self.shape_of(x), "INT16", version=3,
                                       q={"scale": _sym16(*self.ranges[f"{name}.in"]), "zero_point": 0})
        return self._const[key]

    def linear(self, x, name, relu=False) -> int:
        W, b = self.w[f"w{name}"], self.w[f"b{name}"]
        rows = self.shape_of(x)[0]
        act = "RELU" if relu else "NONE"
        if self.ranges is None:
            return self.op("FULLY_CONNECTED", [x, self.const(f"w{name}", W), self.const(f"b{name}", b)],
                           (rows, W.shape[0]), fused_activation_function=act, weights_format="DEFAULT",
                           keep_num_dims=False, asymmetric_quantize_inputs=False)
        xq = self.quantize_input(x, name)
        in_scale = float(self.g.tensors[xq].quantization.scale[0])
        wq, ws = _sym(W, axis=1)
        bias_scale = (in_scale * ws).astype(np.float32)
        bq = np.round(b / bias_scale.astype(np.float64)).astype(np.int64)
        wt = self.const(f"w{name}", wq, "INT8", scale=ws, zero_point=np.zeros(len(ws), np.int64),
                        quantized_dimension=0)
        bt = self.const(f"b{name}", bq, "INT64", scale=bias_scale, zero_point=np.zeros(len(ws), np.int64),
                        quantized_dimension=0)
        y = self.op("FULLY_CONNECTED", [xq, wt, bt], (rows, W.shape[0]), "INT16", version=7,
                    q={"scale": _sym16(*self.ranges[f"{name}.out"]), "zero_point": 0}, fused_activation_function=act,
                    weights_format="DEFAULT", keep_num_dims=False, asymmetric_quantize_inputs=False)
        return self.op("DEQUANTIZE", [y], (rows, W.shape[0]), version=4)

    def heads(self, x) -> int:
        """[T, D] -> [H, T, dh]"""
        T = self.shape_of(x)[0]
        H = self.cfg["n_heads"]
        dh = self.cfg["d_model"] // H
        r = self.reshape(x, (T, H, dh))
        return self.op("TRANSPOSE", [r, self.const("perm", np.asarray([1, 0, 2], np.int32))], (H, T, dh))

    def attend(self, q, k, v, mask) -> int:
        """softmax(q k^T + mask) v for [H, Tq, dh] queries over [H, Tk, dh] keys -> [Tq, D]"""
        H, Tq, dh = self.shape_of(q)
        Tk = self.shape_of(k)[1]
        s = self.op("BATCH_MATMUL", [q, k], (H, Tq, Tk), adj_x=False, adj_y=True, asymmetric_quantize_inputs=False)
        s = self.op("ADD", [s, mask], (H, Tq, Tk), fused_activation_function="NONE")
        a = self.op("SOFTMAX", [s], (H, Tq, Tk), beta=1.0)
        o = self.op("BATCH_MATMUL", [a, v], (H, Tq, dh), adj_x=False, adj_y=False, asymmetric_quantize_inputs=False)
        if Tq > 1:
            o = self.op("TRANSPOSE", [o, self.const("perm", np.asarray([1, 0, 2], np.int32))], (Tq, H, dh))
        return self.reshape(o, (Tq, H * dh))

    def mlp(self, x, i) -> int:
        f = self.linear(self.rmsnorm(x), f"1_{i}", relu=True)
        return self.op("ADD", [x, self.linear(f, f"2_{i}")], self.shape_of(x), fused_activation_function="NONE")


def _prefill(w, cfg, ranges) -> tuple[_Graph, dict, dict]:
    P, C, H, n = cfg["max_prompt"], cfg["context"], cfg["n_heads"], cfg["n_layers"]
    dh = cfg["d_model"] // H
    G = _Graph("prefill", w, cfg, ranges)
    tokens = G.g.input("tokens", (P,), "INT32")
    length = G.g.input("length", (1,), "INT32")
    x = G.embed("tok", tokens, P)
    pos = G.embed("pos", G.const("positions", np.arange(P, dtype=np.int32)), P)
    x = G.op("ADD", [x, pos], (P, cfg["d_model"]), fused_activation_function="NONE")
    mask = G.const("causal", np.triu(np.full((P, P), MASK, np.float32), 1))
    pad = G.const("cache_pad", np.asarray([[0, 0], [0, C - P], [0, 0]], np.int32))
    outs = {}
    for i in range(n):
        h = G.rmsnorm(x)
        q, k, v = (G.heads(G.linear(h, f"{c}_{i}")) for c in "qkv")
        outs[f"new_k{i}"] = G.op("PAD", [k, pad], (H, C, dh))
        outs[f"new_v{i}"] = G.op("PAD", [v, pad], (H, C, dh))
        o = G.linear(G.attend(q, k, v, mask), f"o_{i}")
        x = G.op("ADD", [x, o], G.shape_of(x), fused_activation_function="NONE")
        x = G.mlp(x, i)
    last = G.op("SUB", [length, G.const("one_i", np.asarray([1], np.int32))], (1,), "INT32",
                fused_activation_function="NONE")
    x = G.op("GATHER", [x, last], (1, cfg["d_model"]), axis=0, batch_dims=0)
    outs["logits"] = G.linear(G.rmsnorm(x), "out")
    return G, {"tokens": tokens, "length": length}, outs


def _decode(w, cfg, ranges) -> tuple[_Graph, dict, dict]:
    C, H, n, d = cfg["context"], cfg["n_heads"], cfg["n_layers"], cfg["d_model"]
    dh = d // H
    G = _Graph("decode", w, cfg, ranges)
    token = G.g.input("token", (1,), "INT32")
    position = G.g.input("position", (1,), "INT32")
    caches = {}
    for i in range(n):
        caches[f"k{i}"] = G.g.input(f"k{i}", (H, C, dh), "FLOAT32")
        caches[f"v{i}"] = G.g.input(f"v{i}", (H, C, dh), "FLOAT32")
    x = G.op("ADD", [G.embed("tok", token, 1), G.embed("pos", position, 1)], (1, d), fused_activation_function="NONE")
    # d = arange(C) - position; one_hot = relu(1 - |d|); keep = 1 - one_hot; mask = -1e9 * relu(min(d, 1))
    pf = G.op("CAST", [position], (1,), in_data_type="INT32", out_data_type="FLOAT32")
    dist = G.op("SUB", [G.const("arange", np.arange(C, dtype=np.float32)), pf], (C,), fused_activation_function="NONE")
    one = G.const("one", np.asarray([1.0], np.float32))
    near = G.op("SUB", [one, G.op("ABS", [dist], (C,))], (C,), fused_activation_function="RELU")
    keep = G.op("SUB", [one, near], (C,), fused_activation_function="NONE")
    near = G.reshape(near, (1, C, 1))
    keep = G.reshape(keep, (1, C, 1))
    after = G.op("MINIMUM", [dist, one], (C,))
    after = G.op("RELU", [after], (C,))
    mask = G.op("MUL", [after, G.const("mask_value", np.asarray([MASK], np.float32))], (C,),
                fused_activation_function="NONE")
    mask = G.reshape(mask, (1, 1, C))
    outs = {}
    for i in range(n):
        h = G.rmsnorm(x)
        q, k, v = (G.reshape(G.linear(h, f"{c}_{i}"), (H, 1, dh)) for c in "qkv")
        new = {}
        for name, t in (("k", k), ("v", v)):
            old = G.op("MUL", [caches[f"{name}{i}"], keep], (H, C, dh), fused_activation_function="NONE")
            put = G.op("MUL", [t, near], (H, C, dh), fused_activation_function="NONE")
            new[name] = outs[f"new_{name}{i}"] = G.op("ADD", [old, put], (H, C, dh), fused_activation_function="NONE")
        o = G.linear(G.attend(q, new["k"], new["v"], mask), f"o_{i}")
        x = G.op("ADD", [x, o], (1, d), fused_activation_function="NONE")
        x = G.mlp(x, i)
    outs["logits"] = G.linear(G.rmsnorm(x), "out")
    return G, {"token": token, "position": position, **caches}, outs


def export(w: dict, cfg: dict, tok: CharTokenizer, ranges: dict | None = None, description: str = ""):
    """The two-signature model (float, or int8 weights / int16 activations with ``ranges`` from ``reference_logits(record=...)``)."""
    from edge_sdk.model.types import Buffer, Metadata, Model, SignatureDef, SubGraph

    codes, buffers, subgraphs, sigs = [], [Buffer()], [], []
    seen: dict[bytes, int] = {}
    for s, (G, ins, outs) in enumerate((_prefill(w, cfg, ranges), _decode(w, cfg, ranges))):
        g = G.g
        for name, t in outs.items():
            g.tensors[t].name = name
            g.output(t)
        bmap = {0: 0}
        for b, buf in enumerate(g.buffers[1:], 1):
            data = bytes(buf.data)
            if data not in seen:  # the two signatures share their weights
                buffers.append(Buffer(data))
                seen[data] = len(buffers) - 1
            bmap[b] = seen[data]
        for t in g.tensors:
            t.buffer = bmap[t.buffer]
        cmap = {}
        for c, code in enumerate(g.operator_codes):
            if code not in codes:
                codes.append(code)
            cmap[c] = codes.index(code)
        for op in g.operators:
            op.opcode_index = cmap[op.opcode_index]
        subgraphs.append(SubGraph(tensors=g.tensors, inputs=g.inputs, outputs=g.outputs, operators=g.operators,
                                  name=g.name))
        sigs.append(SignatureDef(g.name, s, dict(ins), dict(outs)))
    n, C = cfg["n_layers"], cfg["context"]
    meta = {
        "format": "edge-generate/1",
        "tokenizer": {"type": "char", "vocab": tok.vocab, "eos": tok.eos, "unk": tok.unk},
        "max_context": C,
        "max_prompt": cfg["max_prompt"],
        "prefill": {"signature": "prefill", "tokens": "tokens", "length": "length", "logits": "logits"},
        "decode": {"signature": "decode", "token": "token", "position": "position", "logits": "logits"},
        "cache": [{"input": f"{kv}{i}", "output": f"new_{kv}{i}"} for i in range(n) for kv in "kv"],
        "config": cfg,
        "weights": "int8" if ranges else "float32",
        "activations": "int16 at the linear layers, float32 elsewhere" if ranges else "float32",
    }
    buffers.append(Buffer(json.dumps(meta, separators=(",", ":")).encode()))
    return Model(operator_codes=codes, subgraphs=subgraphs, buffers=buffers, description=description,
                 metadata=[Metadata(METADATA_NAME, len(buffers) - 1)], signature_defs=sigs)


def weights_from_model(model) -> dict[str, np.ndarray]:
    """The folded float weights back out of an exported float model (its prefill subgraph's constants)."""
    out = {}
    sg = model.subgraphs[0]
    for t, tensor in enumerate(sg.tensors):
        if tensor.buffer and tensor.type == "FLOAT32" and (tensor.name in ("tok", "pos") or tensor.name[:1] in "wb"):
            out[tensor.name] = np.array(model.tensor_data(0, t))
    return out
