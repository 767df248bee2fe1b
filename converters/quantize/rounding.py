"""Weight rounding by the layer's output error (GPTQ / OPTQ, Frantar et al. 2022; the second-order rounding of
Nagel et al.'s AdaRound, solved column by column): rounding each int8 weight to its nearest step leaves every
layer's output off by dW x, and over a deep net those independent errors add up -- on a YOLOv8n-like net with float
activations, int8 weights alone kept 89% of the float detections (45.9 dB), on a transformer text recognizer 0% of
the strings (-3.6 dB). Rounding instead weight by weight, the error each rounding leaves is pushed onto the weights
of the same output channel not rounded yet, weighted by how the layer's inputs correlate (their Gram matrix H =
X^T X over the calibration samples' input patches): the output error E[|dW x|^2] = tr(dW H dW^T), not |dW|^2, is
what it minimizes. Same grid (the layer's per-channel scales), same int8 kernels: only which integer each weight
becomes changes. Measured there, with float activations: 97.6% of the detections (54.6 dB), 70% of the strings
(16.5 dB); a pitch CNN 26.2 -> 31.3 dB.

Per weighted layer (CONV_2D and FULLY_CONNECTED: H over the whole patch, [K, K], K = KH x KW x C or C;
DEPTHWISE_CONV_2D: one [KH x KW]^2 matrix per channel), summed over the calibration samples (never held-back ones),
at most ``GRAM_ROWS`` input patches of each (a seeded subsample of the output positions) until the layer has
``TARGET_ROWS_SHARE`` per weight of a channel (at most ``GRAM_TARGET_ROWS``), while the Gram matrices fit
``MAX_GRAM_BYTES``; a layer with fewer than ``MIN_ROWS_SHARE`` patches per weight of a channel keeps nearest
rounding (fitted on fewer, the rounding follows those samples: an FC head with 48 inputs on 48 samples went
44.0 -> 69.9 dB on them and lost SNR on held-back ones). The rounded weights are written back as float values on
the grid (q x scale), so the quantizer's own rounding gives those integers; each channel's largest weight stays
where it was (its integer +-127, no rounding error), so the channel's scale -- its largest weight / 127 -- is the
same.
A layer widened to float32 gets its own float weights back (``bias.restore_biases``).

Mode int16x8 only (``quantize``: its int8 weights are most of its error): measured on a conv / depthwise / conv net
(tests/test_goals24_rounding.py) the output SNR rose 56.0 -> 62.5 dB in int16x8, and in int8 it stayed 39.3 -> 39.1
dB, the int8 activations' rounding dominating (a YOLOv8n-like net: 12.5 -> 13.2 dB, its detections kept the same);
the widening search also ranks ops by their weights' nearest rounding (``weight_noise``), which these weights no
longer have."""

from __future__ import annotations

import contextlib

import numpy as np

from converters.quantize.builder import QuantGraph
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table

GRAM_ROWS = 1024  # input patches per sample and layer: a seeded subsample of the output positions
GRAM_TARGET_ROWS = 16384  # a layer's Gram matrix takes patches from the calibration samples until it has this many
TARGET_ROWS_SHARE = 8  # ... or this many per weight of a channel, when fewer (the Gram matrix costs rows x K^2)
MAX_GRAM_BYTES = 192 << 20  # the Gram matrices kept at once (float64); the layers past it keep nearest rounding
DAMP = 0.01  # H + DAMP x mean(diag H) x I: a direction the samples never excite still has a finite inverse
GPTQ_BLOCK = 128  # columns rounded one by one before the later ones take their errors in one matrix product
MIN_ROWS_SHARE = 4.0  # a layer is rounded by its Gram only with this many patches per weight of a channel


def one_blas_thread():
    """A context in which numpy's BLAS runs on one thread (threadpoolctl, when installed; else nothing changes).
    The Gram products and GPTQ's updates are many mid-sized products: OpenBLAS's threads split each and spin
    waiting for one another, and on a busy 2-core machine that waiting was most of this rounding's cost -- the
    YOLOv8n-like stand-in in int16x8 (46 layers rounded): convert() CPU 20.3 -> 7.0 s, wall 64.5 -> 24.8 s, the
    same .tflite bytes (OpenBLAS splits a product by output blocks, not along the sum: each element's sum is the
    same). Measured with OPENBLAS_NUM_THREADS=1 for the whole process (benchmarks/results/convert_goals_*)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # an optional speed-up: threadpoolctl comes with scikit-learn, not with edge-sdk
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


class _Geometry:
    """Errors never arise here: the interpreter prepared these ops before calibration (kernels.conv's geometry
    reports a bad window through its context's ``error``)."""

    def error(self, message):  # pragma: no cover - the float model ran
        return ValueError(message)


def window(padding: str, stride: int, dilation: int, size: int, k: int) -> tuple[int, int]:
    """(output size, leading padding) of a convolution window along one axis, as the kernels compute them."""
    from edge_sdk.runtime.kernels.conv import window_geometry

    return window_geometry(_Geometry(), padding, stride, dilation, size, k)


def weight_quantization(g: QuantGraph, i: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Op i's int8 weights in the built graph: (the integers as float64, in the weights' shape; the scales; their
    quantized dimension), or None when the op is not quantized there."""
    wi = op_table.row(g.src.op_name(g.sg.operators[i])).weights[0]
    for k, origin in g.origin.items():
        if origin == i:
            t = g.tensors[g.ops[k].inputs[wi]]
            if t.type != "INT8" or t.quantization is None:
                return None
            q = np.frombuffer(g.buffers[t.buffer].data, np.int8).reshape(t.shape).astype(np.float64)
            return q, np.asarray(t.quantization.scale, np.float64), t.quantization.quantized_dimension
    return None


def padded_for_windows(x: np.ndarray, opts: dict, kh: int, kw: int):
    """``x`` [N, H, W, C] with room for every tap of every output position of a convolution with ``opts`` (zeros
    outside, as the kernels pad) -> (padded, (oh, ow), (sh, sw), (dh, dw))."""
    pad = opts.get("padding", "SAME")
    sh, sw = int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))
    dh, dw = int(opts.get("dilation_h_factor", 1)), int(opts.get("dilation_w_factor", 1))
    oh, pt = window(pad, sh, dh, x.shape[1], kh)
    ow, pl = window(pad, sw, dw, x.shape[2], kw)
    need_h = max((oh - 1) * sh + (kh - 1) * dh + 1, pt + x.shape[1])
    need_w = max((ow - 1) * sw + (kw - 1) * dw + 1, pl + x.shape[2])
    padded = np.zeros((x.shape[0], need_h, need_w, x.shape[3]), np.float32)
    padded[:, pt:pt + x.shape[1], pl:pl + x.shape[2]] = x
    return padded, (oh, ow), (sh, sw), (dh, dw)


def window_rows(x: np.ndarray, opts: dict, kh: int, kw: int, rows: int, rng) -> np.ndarray:
    """The input patches of a convolution over ``x`` [N, H, W, C] (zero padding as the kernels pad) at up to
    ``rows`` output positions (seeded subsample): [P, KH, KW, C]."""
    padded, (oh, ow), (sh, sw), (dh, dw) = padded_for_windows(x, opts, kh, kw)
    n = x.shape[0] * oh * ow
    pick = np.sort(rng.choice(n, rows, replace=False)) if n > rows else np.arange(n)
    b, rest = np.divmod(pick, oh * ow)
    oy, ox = np.divmod(rest, ow)
    ty = oy[:, None] * sh + np.arange(kh)[None, :] * dh  # [P, KH]
    tx = ox[:, None] * sw + np.arange(kw)[None, :] * dw  # [P, KW]
    return padded[b[:, None, None], ty[:, :, None], tx[:, None, :]]  # [P, KH, KW, C]


class Grams:
    """The Gram matrices of the weighted layers' input patches, summed over the samples ``add`` is given:
    ``layers`` {op index: (input tensor, "window" / "matrix")} (``bias.weighted_layers``)."""

    def __init__(self, model: Model, layers: dict, seed: int = 0):
        self.model, self.rng = model, np.random.default_rng(seed)
        self.sums: dict[int, np.ndarray] = {}
        self.rows: dict[int, int] = {}
        self.target: dict[int, int] = {}  # op index -> the patches its Gram matrix takes
        self.layers: dict[int, tuple[int, str, bool]] = {}  # op index -> (input, kind, depthwise)
        sg = model.subgraphs[0]
        used = 0
        for i, (t, kind) in layers.items():
            op = sg.operators[i]
            shape = sg.tensors[op.inputs[op_table.row(model.op_name(op)).weights[0]]].shape
            depthwise = model.op_name(op) == "DEPTHWISE_CONV_2D"
            if kind == "window" and (len(sg.tensors[t].shape) != 4 or (not depthwise and
                                                                       sg.tensors[t].shape[3] != shape[3])):
                continue  # a grouped convolution: not one patch per output channel
            k = int(shape[1] * shape[2]) if depthwise else int(np.prod(shape[1:]))  # weights per output channel
            size = k * k * shape[3] * 8 if depthwise else k * k * 8
            if used + size > MAX_GRAM_BYTES:
                continue
            used += size
            self.layers[i] = (t, kind, depthwise)
            self.target[i] = max(GRAM_ROWS, min(GRAM_TARGET_ROWS, TARGET_ROWS_SHARE * k))

    def add(self, values: dict, sample_inputs: dict) -> None:
        if self.layers:
            with one_blas_thread():
                self._add(values, sample_inputs)

    def _add(self, values: dict, sample_inputs: dict) -> None:
        sg = self.model.subgraphs[0]
        for i, (t, kind, depthwise) in self.layers.items():
            x = values.get(t, sample_inputs.get(t))
            if x is None or self.rows.get(i, 0) >= self.target[i]:
                continue
            gram, n = self._patch_gram(sg.operators[i], kind, depthwise, np.asarray(x, np.float32))
            if i in self.sums:  # in place, each float32 product widened as it is added: no [K, K] float64 copies
                np.add(self.sums[i], gram, out=self.sums[i])
            else:
                self.sums[i] = gram.astype(np.float64)
            self.rows[i] = self.rows.get(i, 0) + n

    def _patch_gram(self, op, kind: str, depthwise: bool, x: np.ndarray) -> tuple[np.ndarray, int]:
        """One sample's Gram matrix of the op's input patches (float32 products; ``add`` sums them in float64) and its
        patches."""
        shape = self.model.subgraphs[0].tensors[op.inputs[op_table.row(self.model.op_name(op)).weights[0]]].shape
        if kind == "matrix":
            p = x.reshape(-1, shape[-1])
            if len(p) > GRAM_ROWS:
                p = p[np.sort(self.rng.choice(len(p), GRAM_ROWS, replace=False))]
            return p.T @ p, len(p)
        p = window_rows(x, op.options or {}, int(shape[1]), int(shape[2]), GRAM_ROWS, self.rng)  # [P, KH, KW, C]
        if depthwise:  # per input channel: [C, KH x KW, KH x KW], a batch of matrix products
            pc = np.ascontiguousarray(p.reshape(len(p), -1, p.shape[-1]).transpose(2, 0, 1))  # [C, P, KH x KW]
            return np.matmul(pc.transpose(0, 2, 1), pc), len(p)
        p = p.reshape(len(p), -1)
        return p.T @ p, len(p)

    def gram(self, i: int) -> np.ndarray | None:
        """Op i's Gram matrix, or None where too few patches were seen to tell its input's directions apart."""
        if i not in self.sums:
            return None
        k = self.sums[i].shape[-1]
        return self.sums[i] if self.rows[i] >= MIN_ROWS_SHARE * k else None


def gptq(w: np.ndarray, h: np.ndarray, scale: np.ndarray, qmax: int = 127) -> np.ndarray:
    """Integers for ``w`` [O, K] on per-row ``scale`` [O] that minimize tr(dW H dW^T): columns rounded one at a time,
    largest diagonal of ``h`` first, each rounding's error spread over the row's columns not rounded yet through the
    upper Cholesky factor of H^-1. ``h`` [K, K] shared by the rows, or [O, K, K] one per row. Each row's largest
    weight is held at its value (its integer +-qmax when scale = its |w| / qmax): the row keeps its scale."""
    w = np.asarray(w, np.float64)
    o, k = w.shape
    h = np.asarray(h, np.float64)
    shared = h.ndim == 2
    order = np.argsort(-np.diagonal(h), kind="stable") if shared else np.arange(k)
    h = h[np.ix_(order, order)] if shared else h
    diag = np.diagonal(h, axis1=-2, axis2=-1)
    dead = diag <= 0  # an input the samples never saw: nothing to spread onto it
    eye = np.eye(k)
    damp = DAMP * np.maximum(diag.mean(axis=-1), 1e-12)
    h = h + (dead[..., None] * eye) + damp[..., None, None] * eye
    u = inverse_cholesky(h)  # upper: H^-1 = U^T U
    u = np.broadcast_to(u, (o, k, k)) if shared else u
    s = np.asarray(scale, np.float64)
    cur = w[:, order].copy()
    held = np.argmax(np.abs(cur), axis=1)  # each row's largest weight keeps its value
    rows = np.arange(o)
    held_value = cur[rows, held]
    q = np.zeros_like(cur)
    for b0 in range(0, k, GPTQ_BLOCK):  # the columns of a block one by one, then the later columns at once (BLAS)
        b1 = min(b0 + GPTQ_BLOCK, k)
        errs = np.zeros((o, b1 - b0))
        for j in range(b0, b1):
            col = np.clip(np.round(cur[:, j] / s), -qmax, qmax)
            q[:, j] = col
            errs[:, j - b0] = (cur[:, j] - col * s) / u[:, j, j]
            cur[:, j + 1:b1] -= errs[:, j - b0, None] * u[:, j, j + 1:b1]
            _hold(cur, rows, held, held_value, j, b1)
        if b1 < k:
            cur[:, b1:] -= errs @ u[0, b0:b1, b1:] if shared else np.einsum("ob,obk->ok", errs, u[:, b0:b1, b1:])
            _hold(cur, rows, held, held_value, b1 - 1, k)
    out = np.empty_like(q)
    out[:, order] = q
    return out


TRIANGLE_BLOCK = 64  # _upper_inverse inverts blocks up to this size directly, larger ones by halves (BLAS products)


def inverse_cholesky(h: np.ndarray) -> np.ndarray:
    """The upper Cholesky factor U of H^-1 (H^-1 = U^T U), for ``h`` [K, K] or a batch [..., K, K] of symmetric
    positive definite matrices, without forming H^-1: with J the order reversed, J H J = L L^T gives H = R R^T,
    R = J L J upper, so H^-1 = R^-T R^-1 and U = R^-1 (unique: its diagonal is positive). One Cholesky and one
    triangular inverse (~K^3 / 3 flops each) instead of an inverse (~2 K^3) and a Cholesky of it: the YOLOv8n-like
    stand-in's 47 layers (K up to 2304) spent 23.6 of the int16x8 conversion's 61 s in those two (cProfile)."""
    lower = np.linalg.cholesky(h[..., ::-1, ::-1])
    return _upper_inverse(np.ascontiguousarray(lower[..., ::-1, ::-1]))


def _upper_inverse(r: np.ndarray) -> np.ndarray:
    """The inverse of an upper triangular ``r`` [..., K, K] (itself upper triangular): by halves,
    [[A, B], [0, D]]^-1 = [[A^-1, -A^-1 B D^-1], [0, D^-1]], blocks of at most ``TRIANGLE_BLOCK`` inverted
    directly."""
    k = r.shape[-1]
    if k <= TRIANGLE_BLOCK:
        return np.triu(np.linalg.inv(r))
    m = k // 2
    a_inv, d_inv = _upper_inverse(r[..., :m, :m]), _upper_inverse(r[..., m:, m:])
    out = np.zeros_like(r)
    out[..., :m, :m], out[..., m:, m:] = a_inv, d_inv
    out[..., :m, m:] = -(a_inv @ r[..., :m, m:]) @ d_inv
    return out


def _hold(cur: np.ndarray, rows: np.ndarray, held: np.ndarray, value: np.ndarray, done: int, end: int) -> None:
    """Put each row's held weight back where it lies after column ``done`` and before ``end``."""
    later = (held > done) & (held < end)
    cur[rows[later], held[later]] = value[later]


def rounded(model: Model, g: QuantGraph, grams: Grams) -> tuple[Model, list[dict]]:
    """``model`` whose int8 layers of the built graph ``g`` with a Gram matrix carry GPTQ-rounded weights (float, on
    their grid: the quantizer's rounding gives those integers), and per layer what its rounding changed: the share
    of weights moved off their nearest step, and the output error tr(dW H dW^T) before and after (dB)."""
    with one_blas_thread():
        return _rounded(model, g, grams)


def _rounded(model: Model, g: QuantGraph, grams: Grams) -> tuple[Model, list[dict]]:
    from converters import graph as G
    from converters.passes.equalize import editable_copy

    sg = model.subgraphs[0]
    m, done = None, []
    for i in grams.layers:
        h = grams.gram(i)
        found = weight_quantization(g, i) if h is not None else None
        if found is None:
            continue
        nearest, scale, out_axis = found  # integers in the weights' shape, per-channel scales along out_axis
        wi = op_table.row(model.op_name(sg.operators[i])).weights[0]
        wt = sg.operators[i].inputs[wi]
        w = np.moveaxis(np.asarray(model.tensor_data(0, wt), np.float64), out_axis, 0)
        flat = w.reshape(w.shape[0], -1)
        if scale.size != flat.shape[0]:
            continue
        if grams.layers[i][2]:  # depthwise: output channel o reads input channel o // multiplier
            h = np.repeat(h, flat.shape[0] // h.shape[0], axis=0)
        q = gptq(flat, h, scale)
        base = np.moveaxis(nearest, out_axis, 0).reshape(flat.shape)
        before, after = _output_error(flat, base, scale, h), _output_error(flat, q, scale, h)
        if not after < before:
            continue
        m = m or editable_copy(model)
        value = np.moveaxis((q * scale[:, None]).reshape(w.shape), 0, out_axis).astype(np.float32)
        new = G.add_constant(m, sg.tensors[wt].name, value, "FLOAT32")
        if sum(wt in op.inputs for op in sg.operators) == 1:  # its own weights: the integer graph keeps the name
            m.subgraphs[0].tensors[new].name = sg.tensors[wt].name
        m.subgraphs[0].operators[i].inputs[wi] = new
        done.append({"op_index": i, "op": model.op_name(sg.operators[i]), "output": sg.tensors[sg.operators[i]
                     .outputs[0]].name, "moved": float(np.mean(q != base)),
                     "error_db": [_db(before), _db(after)]})
    return (m, done) if m is not None else (model, [])


def _output_error(w: np.ndarray, q: np.ndarray, scale: np.ndarray, h: np.ndarray) -> float:
    """tr(dW H dW^T) / tr(W H W^T): the layer's output error energy over its output energy on the samples."""
    dw = q * scale[:, None] - w
    return _energy(dw, h) / max(_energy(w, h), 1e-300)


def _energy(w: np.ndarray, h: np.ndarray) -> float:
    """tr(W H W^T) for ``w`` [O, K] and ``h`` [K, K] shared or [O, K, K] per row, through matrix products (a
    three-operand einsum loops O x K^2 without BLAS: 7.6 of the YOLOv8n-like int16x8 conversion's 61 s, cProfile)."""
    wh = w @ h if h.ndim == 2 else np.matmul(w[:, None, :], h)[:, 0, :]
    return float(np.sum(wh * w))


def _db(ratio: float) -> float:
    return float(-10.0 * np.log10(max(ratio, 1e-30)))


def rounded_note(done: list[dict]) -> str:
    """The report's line for the layers ``rounded`` rounded."""
    gain = [d["error_db"][1] - d["error_db"][0] for d in done]
    return (f"int8 weights rounded by their layer's output error (GPTQ) in {len(done)} layer(s): their own output "
            f"error {min(gain):.1f} to {max(gain):.1f} dB lower than nearest rounding's (median "
            f"{float(np.median(gain)):.1f} dB; the Gram matrices of up to {GRAM_TARGET_ROWS} input patches each, "
            "from the calibration samples)")
