"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL: seeded draws, the same numbers in both runtimes.

LiteRT's random ops draw from TensorFlow's Philox stream in its own order; their bits are not the reference here
(issue 23): the distributions are. Both runtimes of edge-sdk draw one documented stream, so a model gives the same
numbers on the host (this module) and on a device (firmware_c/src/kernels/random.c):

- The generator is Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): key
  (k0, k1) = the low and high 32 bits of RandomOptions ``seed``; counter (c0, c1, c2, c3) = (block index low 32
  bits, block index high 32 bits, ``seed2`` low 32 bits, ``seed2`` high 32 bits). Block b gives 4 uint32 words,
  words 4b .. 4b+3 of the stream. Seeds 0 / 0 are a stream like any other (LiteRT would pick a random seed).
- Each invoke continues the stream where the previous one stopped (the op's state, as LiteRT's kernels keep a
  generator per node): invoke k of an op that takes B blocks per invoke uses blocks k*B .. k*B + B - 1. Preparing
  the model again, or resetting its state (reset_all_variables; the C runtime's edge_reset_state), starts from
  block 0.
- RANDOM_UNIFORM: word w -> float32 in [0, 1): the 23 low bits as the mantissa of a float in [1, 2), minus 1.
- RANDOM_STANDARD_NORMAL: Box-Muller on each word pair (w0, w1) of a block, in double: u1 = uniform(w0) raised to
  1e-7 (log of 0 avoided), r = sqrt(-2 ln u1), t = 2 pi uniform(w1); outputs r sin t, r cos t, rounded to float32.
- MULTINOMIAL: per batch row, the running sums of exp(logit - max logit) in double (the unnormalized cdf); sample
  s of row b takes word b * num_samples + s, target = uniform(word) * total, the class is the first whose running
  sum exceeds the target (a class of probability 0 is never drawn).
Shapes (RANDOM_*: input 0, MULTINOMIAL's num_samples) must be constants: outputs are sized at prepare.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Eval, Node

PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57  # the round multipliers
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85  # the key increments (golden ratio, sqrt(3) - 1)
PHILOX_ROUNDS = 10
MASK32 = np.uint64(0xFFFFFFFF)
NORMAL_MIN_U = 1.0e-7  # Box-Muller's smallest u1 (TensorFlow's BoxMullerFloat epsilon)


def philox_words(seed: int, seed2: int, first_block: int, blocks: int) -> np.ndarray:
    """Words 4*first_block .. 4*(first_block + blocks) - 1 of the Philox4x32-10 stream of (seed, seed2): uint32
    [blocks * 4], block after block."""
    index = np.arange(first_block, first_block + blocks, dtype=np.uint64)
    c0, c1 = index & MASK32, index >> np.uint64(32)
    s2 = int(seed2) & 0xFFFFFFFFFFFFFFFF
    c2 = np.full(blocks, s2 & 0xFFFFFFFF, np.uint64)
    c3 = np.full(blocks, s2 >> 32, np.uint64)
    s = int(seed) & 0xFFFFFFFFFFFFFFFF
    k0, k1 = s & 0xFFFFFFFF, s >> 32
    m0, m1 = np.uint64(PHILOX_M0), np.uint64(PHILOX_M1)
    for r in range(PHILOX_ROUNDS):
        p0, p1 = m0 * c0, m1 * c2  # 32 x 32 -> 64-bit products, exact in uint64
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & MASK32,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & MASK32)
        if r + 1 < PHILOX_ROUNDS:
            k0, k1 = (k0 + PHILOX_W0) & 0xFFFFFFFF, (k1 + PHILOX_W1) & 0xFFFFFFFF
    return np.stack([c0, c1, c2, c3], axis=1).reshape(-1).astype(np.uint32)


def uniform_floats(words: np.ndarray) -> np.ndarray:
    """uint32 words -> float32 in [0, 1) (23 mantissa bits)."""
    return ((words & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)


def normal_floats(words: np.ndarray) -> np.ndarray:
    """uint32 words (an even count) -> as many float32 standard normals (Box-Muller per pair, in double)."""
    pairs = words.reshape(-1, 2)
    u1 = np.maximum(uniform_floats(pairs[:, 0]).astype(np.float64), NORMAL_MIN_U)
    t = 2.0 * np.pi * uniform_floats(pairs[:, 1]).astype(np.float64)
    r = np.sqrt(-2.0 * np.log(u1))
    return np.stack([r * np.sin(t), r * np.cos(t)], axis=1).reshape(-1).astype(np.float32)


def _seeds(node: Node) -> tuple[int, int]:
    return int(node.options.get("seed", 0) or 0), int(node.options.get("seed2", 0) or 0)


def _restartable(run: Eval, drawn: list[int]) -> Eval:
    """``run`` with the interpreter's reset hook: the stream starts again from block 0."""

    def reset():
        drawn[0] = 0

    run.reset = reset
    return run


def _prepare_draw(node: Node, floats) -> Eval:
    """RANDOM_UNIFORM / RANDOM_STANDARD_NORMAL: output FLOAT32 of the constant shape input 0, values
    ``floats(words)`` of the next stream words (4 per output value rounded up to whole blocks)."""
    node.expect_counts(1, 1)
    y = node.outputs[0]
    shape = node.constant_values(0, "shape", ("INT32", "INT64")).astype(np.int64)
    node.expect(len(node.input(0).shape) == 1, f"shape must be 1-D, has shape {node.input(0).shape}")
    node.expect(bool((shape >= 0).all()), f"negative dims {shape.tolist()}")
    node.expect_types(y, ("FLOAT32",), "output")
    node.set_output_shape(0, shape)
    count = int(np.prod(shape, dtype=np.int64))
    blocks = (count + 3) // 4
    seed, seed2 = _seeds(node)
    drawn = [0]  # blocks drawn by earlier invokes: the stream goes on

    def run(inputs, outputs):
        words = philox_words(seed, seed2, drawn[0], blocks)
        drawn[0] += blocks
        outputs[0][...] = floats(words)[:count].reshape(outputs[0].shape)

    return _restartable(run, drawn)


def prepare_random_uniform(node: Node) -> Eval:
    return _prepare_draw(node, uniform_floats)


def prepare_random_standard_normal(node: Node) -> Eval:
    return _prepare_draw(node, normal_floats)


def prepare_multinomial(node: Node) -> Eval:
    node.expect_counts(2, 1)
    logits, y = node.input(0), node.outputs[0]
    node.expect_types(logits, ("FLOAT32",), "logits")
    node.expect(len(logits.shape) == 2, f"logits must be 2-D [batch, classes], has shape {logits.shape}")
    samples = int(node.constant_scalar(1, "num_samples", ("INT32",)))
    node.expect(samples >= 0, f"num_samples {samples} is negative")
    node.expect_types(y, ("INT32", "INT64"), "output")
    batch, classes = logits.shape
    node.expect(classes > 0, "logits have no classes")
    node.set_output_shape(0, (batch, samples))
    count = batch * samples
    blocks = (count + 3) // 4
    seed, seed2 = _seeds(node)
    drawn = [0]

    def run(inputs, outputs):
        x = inputs[0].astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            cdf = np.cumsum(np.exp(x - x.max(axis=1, keepdims=True)), axis=1)  # [batch, classes]
        words = philox_words(seed, seed2, drawn[0], blocks)
        drawn[0] += blocks
        target = uniform_floats(words[:count]).astype(np.float64).reshape(batch, samples) * cdf[:, -1:]
        picks = np.empty((batch, samples), np.int64)
        for b in range(batch):  # the first class whose running sum exceeds the target
            picks[b] = np.searchsorted(cdf[b], target[b], side="right")
        outputs[0][...] = np.minimum(picks, classes - 1)

    return _restartable(run, drawn)
