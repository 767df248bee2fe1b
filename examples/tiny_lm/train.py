"""Train the tiny character-level transformer on corpus.txt and export it to TFLite (float and quantized).

    .venv/bin/python examples/tiny_lm/train.py            # ~3 minutes on 2 cores; seeded
    .venv/bin/python examples/tiny_lm/train.py --steps 50  # a quick smoke run (writes to --out)

corpus.txt is a snapshot of this project's own text (README, the serial-protocol doc and the library's longer
docstrings, ASCII only). The last 10% of its tokens are held out for the validation loss. Writes
tiny_lm_float.tflite and tiny_lm_int16x8.tflite (int8 weights, int16 activations) next to this script
(or into --out) and prints the losses.
CI never trains: the committed model files are what `edge generate` and the tests use.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matrices: threads only fight each other

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

import tiny_lm as tl


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--save-params", help="also save the trained parameters (.npz)")
    ap.add_argument("--params", help="skip training: export these saved parameters (.npz)")
    args = ap.parse_args(argv)

    from edge_sdk.model import write_model

    cfg = dict(tl.CONFIG)
    text = (HERE / "corpus.txt").read_text()
    tok = tl.CharTokenizer.from_text(text)
    ids = tl.corpus_ids(text, tok)
    split = int(len(ids) * 0.9)
    train, val = ids[:split], ids[split:]
    T, B = cfg["context"], args.batch
    p = tl.init_params(len(tok.vocab), cfg, args.seed)
    nparams = sum(v.size for v in p.values())
    print(f"vocab {len(tok.vocab)}, {nparams} parameters, {len(train)} training / {len(val)} held-out tokens")
    rng = np.random.default_rng(args.seed)
    m = {k: np.zeros_like(v) for k, v in p.items()}
    s = {k: np.zeros_like(v) for k, v in p.items()}
    b1, b2 = 0.9, 0.99
    warm = min(100, args.steps // 10 + 1)
    t0 = time.time()
    if args.params:
        p = dict(np.load(args.params))
        args.steps = 0
    for step in range(1, args.steps + 1):
        starts = rng.integers(0, len(train) - T - 1, B)
        x = np.stack([train[i : i + T] for i in starts])
        y = np.stack([train[i + 1 : i + T + 1] for i in starts])
        loss, g = tl.loss_and_grads(p, x, y, cfg)
        lr = args.lr * min(1.0, step / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.steps)))
        norm = math.sqrt(sum(float(np.sum(v * v)) for v in g.values()))
        clip = min(1.0, 1.0 / (norm + 1e-6))
        for k in p:
            gk = g[k] * clip
            m[k] = b1 * m[k] + (1 - b1) * gk
            s[k] = b2 * s[k] + (1 - b2) * gk * gk
            mh, sh = m[k] / (1 - b1**step), s[k] / (1 - b2**step)
            decay = 0.01 * p[k] if p[k].ndim == 2 else 0.0
            p[k] = (p[k] - lr * (mh / (np.sqrt(sh) + 1e-8) + decay)).astype(np.float32)
        if step % 100 == 0 or step == args.steps:
            print(f"step {step:5d}  loss {loss:.3f}  lr {lr:.5f}  {time.time() - t0:.0f} s", flush=True)
    if args.save_params:
        np.savez(args.save_params, **p)

    vloss = np.mean([tl.loss_and_grads(p, val[None, i : i + T], val[None, i + 1 : i + T + 1], cfg, False)[0]
                     for i in range(0, len(val) - T - 1, T)])
    print(f"held-out loss (training code) {vloss:.3f} nats/char (perplexity {math.exp(vloss):.2f})")

    w = tl.fold(p, cfg)
    ranges: dict = {}
    for i in range(0, len(train) - T, len(train) // 24):  # calibration windows spread over the training text
        tl.reference_logits(w, train[i : i + T], cfg, record=ranges)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    desc = f"tiny_lm: char-level decoder-only transformer, {nparams} parameters, trained by train.py"
    for name, r in (("tiny_lm_float.tflite", None), ("tiny_lm_int16x8.tflite", ranges)):
        data = write_model(tl.export(w, cfg, tok, r, description=desc), str(out / name))
        print(f"wrote {out / name} ({len(data)} bytes)")
        print(f"  held-out loss through the exported model: {heldout_loss(out / name, val):.3f} nats/char")
    return 0


def heldout_loss(path, val: np.ndarray, window: int = 128) -> float:
    """Mean next-character loss of an exported model on the held-out tokens: the same windows as the
    training-code evaluation, each prefilled with its first token and decoded with the KV cache."""
    from edge_sdk.tasks.generate import Generator

    gen = Generator(path)
    total, n = 0.0, 0
    for i in range(0, len(val) - window - 1, window):
        logp = gen.logits_for([int(t) for t in val[i : i + window]]).astype(np.float64)
        logp -= logp.max(1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(1, keepdims=True))
        total -= logp[np.arange(window), val[i + 1 : i + window + 1]].sum()
        n += window
    return total / n


if __name__ == "__main__":
    sys.exit(main())
