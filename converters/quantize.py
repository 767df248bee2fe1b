"""Post-training quantization of a float ``Model``: int8, int16x8, fp16 and dynamic-range.

    result = quantize(model, calibration, mode="int8", method="minmax", io="int8", exclude=())
    result.model        # the quantized Model (write it with edge_sdk.model.write_model)
    result.report       # ranges/scales per tensor, calibration summary, per-layer error worst first

Modes:

- "int8": full-integer. Weights of CONV_2D / FULLY_CONNECTED / TRANSPOSE_CONV are int8 per output channel
  (quantized_dimension 0), DEPTHWISE_CONV_2D's along its channel axis 3; symmetric, [-127, 127], zero point 0.
  Activations are per-tensor asymmetric int8 from the calibration ranges (always containing zero). Biases
  are int32 with scale input_scale * weight_scale (a weight scale is raised where a bias would overflow).
  Ops whose TFLM kernels need fixed or shared output quantization get it: SOFTMAX / LOGISTIC 1/256 zp -128,
  TANH 1/128 zp 0, LOG_SOFTMAX 16/256 zp 127; pools, reshapes, transposes, pads, slices, gathers, resizes,
  REDUCE_MAX keep their input's quantization; CONCATENATION / PACK / MAXIMUM / MINIMUM share one quantization
  over all inputs and the output (an input quantized differently is requantized by an int8 QUANTIZE).
  ``io="int8"`` gives integer model inputs/outputs (int16 ones in int16x8 mode); ``io="float32"`` keeps
  float I/O with QUANTIZE after each input and DEQUANTIZE before each output.
  The result is verified by preparing it in edge-sdk's interpreter (whose kernels check what TFLM checks).
  Its integer outputs equal TFLM's bit for bit; LiteRT's pip build requantizes with a single rounding and
  may differ by one step on near-ties (tests/test_quantize.py shows it).
- "int16x8": the same with int16 activations (symmetric, zero point 0) and int64 biases; fixed outputs
  SOFTMAX / LOGISTIC / TANH at 1/32768 zp 0.
- "fp16": every float32 constant is stored as float16 and feeds a DEQUANTIZE (LiteRT runs it; TFLM cannot).
- "dynamic": int8 weights for CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED with float activations, which
  LiteRT's hybrid kernels quantize on the fly. Hosts only: edge-sdk's interpreter and TFLM refuse it.

Calibration (int8 / int16x8) streams: the float model runs in edge-sdk's interpreter with every intermediate
tensor made a model output (outputs are never reused by the arena plan), one sample at a time, and each
tensor's statistics (extremes, the thinned subsample below) are updated from views of that run's memory,
which the next sample overwrites: memory holds one sample's activations, not all samples'. Held-back
samples of a re-readable source (files, arrays) are read again for each measurement instead of being
kept; a one-shot iterator's are kept (at most ``holdout``), and without held-back samples the error is
measured on at most ``MEASURE_SAMPLES`` calibration samples. Calibration and each measurement pass show a
progress bar (``edge_sdk.log``). Ranges per tensor:
"minmax" (the observed extremes), "percentile" (clip at ``percentile`` and 100 - ``percentile`` of the
values), "mse" (the clipping range whose fake-quantization has the least mean squared error on the values).
Percentile and MSE work on a seeded subsample of each tensor's values (at most ``MAX_VALUES`` kept).

``exclude`` names operators (op index, or the name of one of their output tensors) that stay float, with
DEQUANTIZE before and QUANTIZE after them. Ops the quantizer has no rule for are reported all at once as a
``ConversionError``; pass them in ``exclude`` to keep them float.

Joins of very different ranges: a CONCATENATION / PACK whose part would get fewer than ``JOIN_LEVELS``
steps under the join's one shared scale (boxes in pixels beside scores in 0..1) and whose value is a model
output (through shape-only ops) keeps each part's own quantization up to the join: with float I/O the join
runs in float32, with integer I/O in int16 (each part requantized into it; that output is then INT16). A
wide join that other ops read is a warning in ``report["notes"]``. ``report["joins"]`` lists them all.

The report's ``layers`` list has, for every quantized activation, the SNR (dB) and cosine similarity of its
dequantized value against the float model's, worst SNR first; a join's output also part by part
(``part_of``, ``input``). It is measured on the held-back samples (``holdout``) or, without any, on the
calibration samples. ``report["guard"]`` has each model output's SNR (its joined parts', argmax agreement
for class distributions; a BOOL output, a comparison's mask, is measured as its 0/1 values: true elements over
flipped ones, with the fraction that agrees), whether all meet ``min_snr``, what ``precision="auto"`` widened (ops without an
integer rule to float32 first, then the lowest-SNR ops round by round, each then tried back in int8) and
to which type, chosen by the target (``widening_rule``): int16x8 (int16 activations, int8 weights, int64
biases; QUANTIZE int8 -> int16 before the op and int16 -> int8 after it, chains of widened ops and the
shape-only ops between them kept in int16) when the target's runtime has the op in int16
(``INT16_OPS`` / ``INT16_MISSING``, probed against TFLM and both edge-sdk runtimes), else float32 when the
target runs float32, else not at all (``cannot_widen``, with the reason). The cost: per widened op its
constant bytes, extra activation bytes and MACs; in total the model's growth in bytes and the MACs no
longer in int8 (``macs_int16`` and ``macs_float32`` apart). A widened op's model output stays int16 with
integer I/O.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np

from converters.calibration import CalibrationData, calibration_data
from converters.graph import WEIGHTED_LAYERS
from edge_sdk import log
from edge_sdk.errors import ConversionError, ModelError
from edge_sdk.runtime.kernels.quant import INT32_MAX, tflite_round
from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES
from edge_sdk.model.types import (
    Buffer,
    Model,
    Operator,
    OperatorCode,
    Quantization,
    SubGraph,
    Tensor,
)

MODES = ("int8", "int16x8", "fp16", "dynamic")
PRECISIONS = ("int8", "auto")
MIN_SNR_DB = 30.0  # the accuracy guard's default: every output's SNR against the float model
MAX_WIDEN_ROUNDS = 8  # precision="auto": rounds of widening (1, 2, 4, ... ops per round)
MAX_PRUNE = 16  # then each widened op is tried back in integer (when at most this many were widened)
STALE_ROUNDS = 3  # auto stops after this many rounds without a gain of 0.1 dB on the worst output
METHODS = ("minmax", "percentile", "mse")
MEASURE_SAMPLES = 32  # without held-back samples, the error is measured on at most this many calibration samples
MAX_VALUES = 1 << 17  # values kept per tensor for percentile / mse

# Ops whose output keeps the quantization of one data input (index given); other inputs are int32 params.
_SAME_AS_INPUT = {
    "RESHAPE": 0, "SQUEEZE": 0, "EXPAND_DIMS": 0, "TRANSPOSE": 0, "MAX_POOL_2D": 0, "AVERAGE_POOL_2D": 0,
    "PAD": 0, "PADV2": 0, "STRIDED_SLICE": 0, "SLICE": 0, "GATHER": 0, "DEPTH_TO_SPACE": 0,
    "SPACE_TO_DEPTH": 0, "SPLIT": 1, "SPLIT_V": 0, "UNPACK": 0, "RESIZE_NEAREST_NEIGHBOR": 0,
    "RESIZE_BILINEAR": 0, "REDUCE_MAX": 0,
    "TOPK_V2": 0,  # the values keep the input's quantization; the int32 indices are copied
}
# Ops whose inputs and output all share one quantization.
_SHARED = {"CONCATENATION", "PACK", "MAXIMUM", "MINIMUM"}
# Ops with their own output range (from calibration); float constant inputs get their own per-tensor params.
_OWN_OUTPUT = {
    "ADD", "SUB", "MUL", "SQUARED_DIFFERENCE", "RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU", "HARD_SWISH",
    "PRELU", "MEAN", "SUM", "RSQRT", "DIV", "BATCH_MATMUL", "GELU",
}
# Fixed output quantization: op -> {activation type: (scale, zero point)}.
_FIXED = {
    "SOFTMAX": {"INT8": (1 / 256, -128), "INT16": (1 / 32768, 0)},
    "LOGISTIC": {"INT8": (1 / 256, -128), "INT16": (1 / 32768, 0)},
    "TANH": {"INT8": (1 / 128, 0), "INT16": (1 / 32768, 0)},
    "LOG_SOFTMAX": {"INT8": (16 / 256, 127)},
}
# Ops TFLM (and we) have no int16-activation kernel for.
_NO_INT16 = {"HARD_SWISH", "LOG_SOFTMAX", "RSQRT", "DIV", "PRELU", "GELU"}
# precision="auto" widens an op to int16x8 (int16 activations, int8 weights, int64 biases) when the op has an
# int16 kernel in TFLM, in edge-sdk's interpreter and in the runtime the target runs; probed op by op on
# single-op models by tests/test_quantize_widen.py (TFLM has no int16 REDUCE_MAX; the C runtime's BATCH_MATMUL
# is float32 only).
INT16_OPS = frozenset({
    "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "ADD", "SUB", "MUL",
    "SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM", "MEAN", "SUM", "SOFTMAX", "LOGISTIC", "TANH", "RELU", "RELU6",
    "LEAKY_RELU", "BATCH_MATMUL", "CONCATENATION", "AVERAGE_POOL_2D", "MAX_POOL_2D",
})
INT16_MISSING = {"python": frozenset(), "c": frozenset({"BATCH_MATMUL"})}  # runtime -> ops without int16
# Shape-only ops that carry an int16 tensor between widened ops (no requantization to int8 and back).
_INT16_PASS = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "PAD", "PADV2", "STRIDED_SLICE",
                         "SPLIT", "SPLIT_V", "RESIZE_NEAREST_NEIGHBOR"})
# Joins: a part whose range would get fewer than JOIN_LEVELS steps under the join's shared scale is crushed.
_JOINS = {"CONCATENATION", "PACK"}
JOIN_LEVELS = 16
# Ops a join's output may pass through on its way to a model output (shapes only, values unchanged).
_TO_OUTPUT = {"RESHAPE", "TRANSPOSE", "SQUEEZE", "EXPAND_DIMS"}
# Ops whose outputs are not activations (int32 indices, shapes): inputs quantized, outputs copied.
_NON_FLOAT_OUTPUT = {"ARG_MAX", "SHAPE"}

# Op versions of the quantized ops, as TFLite numbers them (a runtime accepts any version up to its max).
_VERSIONS = {
    "INT8": {"CONV_2D": 3, "DEPTHWISE_CONV_2D": 3, "FULLY_CONNECTED": 4, "TRANSPOSE_CONV": 3, "ADD": 2,
             "SUB": 2, "MUL": 2, "SOFTMAX": 2, "LOGISTIC": 2, "TANH": 2, "CONCATENATION": 2, "MAX_POOL_2D": 2,
             "AVERAGE_POOL_2D": 2, "PAD": 2, "PADV2": 2, "STRIDED_SLICE": 2, "SLICE": 2, "TRANSPOSE": 2,
             "MEAN": 2, "QUANTIZE": 2, "DEQUANTIZE": 2, "MAXIMUM": 2, "MINIMUM": 2, "PACK": 2, "UNPACK": 2,
             "GATHER": 2, "SPLIT": 2, "SPLIT_V": 2, "RESIZE_BILINEAR": 2, "RESIZE_NEAREST_NEIGHBOR": 2,
             "LEAKY_RELU": 2, "RELU": 2, "RELU6": 2, "PRELU": 1, "HARD_SWISH": 1, "ARG_MAX": 2,
             "LOG_SOFTMAX": 2, "SQUARED_DIFFERENCE": 2, "DEPTH_TO_SPACE": 2, "SPACE_TO_DEPTH": 2,
             "REDUCE_MAX": 2, "SUM": 1, "RSQRT": 2, "DIV": 1, "BATCH_MATMUL": 2, "GELU": 2},
    "INT16": {"CONV_2D": 4, "DEPTHWISE_CONV_2D": 5, "FULLY_CONNECTED": 7, "TRANSPOSE_CONV": 3, "ADD": 3,
              "SUB": 3, "MUL": 4, "SOFTMAX": 3, "LOGISTIC": 3, "TANH": 3, "CONCATENATION": 3, "MAX_POOL_2D": 3,
              "AVERAGE_POOL_2D": 3, "PAD": 4, "PADV2": 4, "STRIDED_SLICE": 4, "SLICE": 4, "TRANSPOSE": 5,
              "MEAN": 3, "QUANTIZE": 3, "DEQUANTIZE": 4, "MAXIMUM": 4, "MINIMUM": 4, "PACK": 3, "UNPACK": 4,
              "GATHER": 2, "SPLIT": 4, "SPLIT_V": 2, "RESIZE_BILINEAR": 4, "RESIZE_NEAREST_NEIGHBOR": 4,
              "LEAKY_RELU": 2, "RELU": 3, "RELU6": 3, "ARG_MAX": 2, "REDUCE_MAX": 3, "SUM": 2,
              "BATCH_MATMUL": 3},
}

_VERSIONS["INT8"]["TOPK_V2"] = 2  # LiteRT's op versions: int8 input 2, int16 input 3
_VERSIONS["INT16"]["TOPK_V2"] = 3


# Comparisons, logical ops and selection (BOOL tensors). A comparison's float inputs keep their own quantization
# in int8 (TFLM rescales both sides to a common scale; each scale must be below 1, else the comparison runs in
# float32 on dequantized inputs) and share one in int16x8 (the int16 kernels compare raw values); its BOOL output
# is copied. Logical ops only see BOOL tensors. SELECT / SELECT_V2 copy values: both value inputs and the output
# share one quantization (as CONCATENATION's parts do), the condition stays BOOL.
_COMPARISONS = {"EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"}
_LOGICAL = {"LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT"}
_SELECTS = {"SELECT", "SELECT_V2"}
_NON_FLOAT_OUTPUT |= _COMPARISONS | _LOGICAL | _SELECTS  # _quantizable: these have a rule (the branch below)
_VERSIONS["INT8"].update({op: 2 for op in _COMPARISONS} | {"SELECT": 2})
_VERSIONS["INT16"].update({"LESS": 3, "GREATER_EQUAL": 3})  # op_version.cc: int16 LESS / GREATER_EQUAL are v3


@dataclass
class QuantizationResult:
    model: Model
    report: dict = field(default_factory=dict)

    def tflite(self) -> bytes:
        from edge_sdk.model import write_model

        return write_model(self.model)


# ================================================================================================ calibration
class _Stats:
    """Running extremes of one tensor plus a seeded, thinned subsample of its values."""

    def __init__(self, seed: int):
        self.min, self.max = math.inf, -math.inf
        self.parts: list[np.ndarray] = []
        self.kept = 0
        self.rate = 1.0
        self.rng = np.random.default_rng(seed)

    def add(self, x: np.ndarray, keep_values: bool) -> None:
        if x.size == 0:
            return
        self.min = min(self.min, float(x.min()))
        self.max = max(self.max, float(x.max()))
        if not keep_values:
            return
        v = x.reshape(-1)
        if self.rate < 1.0:
            v = v[self.rng.random(v.size) < self.rate]
        self.parts.append(v.astype(np.float32, copy=True))
        self.kept += v.size
        if self.kept > MAX_VALUES:
            all_v = np.concatenate(self.parts)
            all_v = all_v[self.rng.random(all_v.size) < 0.5]
            self.parts, self.kept, self.rate = [all_v], all_v.size, self.rate / 2

    def values(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros(0, np.float32)


def _exposed(model: Model) -> tuple[Model, list[int]]:
    """A copy of the model whose outputs are every tensor an operator writes (the original outputs first)."""
    sg = model.subgraphs[0]
    outs = list(sg.outputs)
    seen = set(outs)
    for op in sg.operators:
        for t in op.outputs:
            if t >= 0 and t not in seen:
                seen.add(t)
                outs.append(t)
    m = copy.copy(model)
    m.subgraphs = [copy.copy(s) for s in model.subgraphs]
    m.subgraphs[0].outputs = outs
    return m, outs


def _runner(model: Model):
    """run(sample) -> {tensor: value} for every tensor an op writes. The values are views of the
    interpreter's memory, valid until the next run (callers fold them into statistics and drop them)."""
    from edge_sdk.runtime.interpreter import Interpreter

    exposed, outs = _exposed(model)
    interp = Interpreter(model=exposed)
    interp.allocate_tensors()
    ins = [d["index"] for d in interp.get_input_details()]
    views = {t: interp.tensor(t) for t in outs}

    def run(sample):
        interp.reset_all_variables()  # each sample starts from the model's initial state
        for i, x in zip(ins, sample):
            interp.set_tensor(i, x)
        interp.invoke()
        return {t: view() for t, view in views.items()}

    return run, exposed


class _Samples:
    """The samples the error is measured on, read again on each pass: the held-back ones (every 5th, at
    most ``holdout``) or, without any, the first calibration ones, from a re-readable source; else the
    ones kept in memory. Each pass shows a progress bar."""

    def __init__(self, data, kept: list, holdout: int, n_held: int, count: int):
        self.data, self.kept, self.holdout, self.n_held, self.count = data, kept, holdout, n_held, count

    def __len__(self) -> int:
        return self.count

    def _read(self):
        if self.data is None:
            yield from self.kept
            return
        h = c = 0
        for k, sample in enumerate(self.data.relabeled(None)):
            if self.holdout and k % 5 == 4 and h < self.holdout:
                h += 1
                if self.n_held:
                    yield sample
            elif not self.n_held:
                c += 1
                yield sample
            if (self.n_held and h >= self.n_held) or (not self.n_held and c >= self.count):
                return

    def __iter__(self):
        with log.progress(self.count, "measuring (accuracy guard)") as bar:
            for sample in self._read():
                yield sample
                bar.advance()


def _clip_range(stats: _Stats, method: str, percentile: float, qmin: int, qmax: int,
                symmetric: bool) -> tuple[float, float]:
    lo, hi = stats.min, stats.max
    if method == "minmax" or not stats.parts:
        return lo, hi
    v = stats.values()
    if method == "percentile":
        if symmetric:
            r = float(np.percentile(np.abs(v), percentile))
            return max(lo, -r), min(hi, r)
        a, b = np.percentile(v, [100.0 - percentile, percentile])
        return float(a), float(b)
    # mse: a grid over the clipping range, minimizing the fake-quantization error of the kept values
    if v.size > 1 << 15:
        v = v[np.random.default_rng(0).choice(v.size, 1 << 15, replace=False)]
    v = v.astype(np.float64)

    def err(a, b):
        s, z = _affine(a, b, qmin, qmax, symmetric)
        q = np.clip(_round(v / s) + z, qmin, qmax)
        return float(np.mean((v - (q - z) * s) ** 2))

    best = (err(lo, hi), lo, hi)
    for t in np.linspace(0.05, 1.0, 40):
        e = err(lo * t, hi * t)
        if e < best[0]:
            best = (e, lo * t, hi * t)
    if not symmetric:  # refine each end alone
        _, a0, b0 = best
        for t in np.linspace(0.5, 1.5, 21):
            a = max(lo, a0 * t)
            e = err(a, b0)
            if e < best[0]:
                best = (e, a, b0)
        _, a0, b0 = best
        for t in np.linspace(0.5, 1.5, 21):
            b = min(hi, b0 * t)
            e = err(a0, b)
            if e < best[0]:
                best = (e, a0, b)
    return best[1], best[2]


# ================================================================================================ arithmetic
def _round(x):
    """Round half away from zero (TFLite's rounding)."""
    return tflite_round(x)


def _affine(lo: float, hi: float, qmin: int, qmax: int, symmetric: bool) -> tuple[float, int]:
    """(scale, zero point) covering [lo, hi] widened to contain zero."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if symmetric:
        r = max(-lo, hi)
        if not r > 1e-12 or not math.isfinite(r):
            r = 1.0
        return float(np.float32(r / qmax)), 0
    if not hi - lo > 1e-12 or not math.isfinite(hi - lo):
        lo, hi = 0.0, 1.0
    scale = float(np.float32((hi - lo) / (qmax - qmin)))
    zp = int(np.clip(_round(qmin - lo / scale), qmin, qmax))
    return scale, zp


def _quantize_array(x: np.ndarray, scale, zp, qmin: int, qmax: int, dtype, axis: int | None = None) -> np.ndarray:
    s = np.asarray(scale, np.float64)
    z = np.asarray(zp, np.int64)
    if axis is not None and s.size > 1:
        shape = [1] * x.ndim
        shape[axis] = s.size
        s, z = s.reshape(shape), np.broadcast_to(z, s.shape).reshape(shape)
    return np.clip(_round(x.astype(np.float64) / s) + z, qmin, qmax).astype(dtype)


def _weight_scales(w: np.ndarray, axis: int, bias: np.ndarray | None, input_scale: float,
                   bias_limit: int) -> np.ndarray:
    """Per-channel symmetric scales over [-127, 127]; all-zero channels borrow the others' mean; a scale
    is raised where the bias would not fit its integer type."""
    moved = np.moveaxis(w.astype(np.float64), axis, 0).reshape(w.shape[axis], -1)
    m = np.abs(moved).max(axis=1) if moved.size else np.zeros(w.shape[axis])
    scales = m / 127.0
    nonzero = scales > 0
    fill = float(scales[nonzero].mean()) if nonzero.any() else 1.0
    scales = np.where(nonzero, scales, fill)
    if bias is not None:
        need = np.abs(bias.astype(np.float64)) / (input_scale * bias_limit) * 1.01
        scales = np.maximum(scales, need)
    return scales.astype(np.float32)


# ================================================================================================ the graph
class _Build:
    """The quantized graph under construction: new tensors, buffers, ops, op codes."""

    def __init__(self, model: Model, act: str):
        self.src = model
        self.sg = model.subgraphs[0]
        self.act = act
        self.qmin, self.qmax = (-128, 127) if act == "INT8" else (-32768, 32767)
        self.tensors: list[Tensor] = []
        self.buffers: list[Buffer] = [Buffer()]
        self.ops: list[Operator] = []
        self.codes: list[OperatorCode] = []
        self.qt: dict[int, int] = {}  # source tensor -> its quantized (or non-float) copy
        self.ft: dict[int, int] = {}  # source tensor -> its float copy
        self.origin: dict[int, int] = {}  # new op index -> source op index (None for inserted Q/DQ)
        self.qx: dict[tuple[int, str], int] = {}  # (source tensor, type) -> its copy in the other integer type

    # ---------------------------------------------------------------- tensors
    def add_tensor(self, src: Tensor, type: str, quant: Quantization | None, data: np.ndarray | None = None,
                   suffix: str = "") -> int:
        buffer = 0
        if data is not None:
            self.buffers.append(Buffer(np.ascontiguousarray(data).astype(data.dtype.newbyteorder("<")).tobytes()))
            buffer = len(self.buffers) - 1
        t = Tensor(name=src.name + suffix, shape=tuple(src.shape), type=type, buffer=buffer, quantization=quant,
                   shape_signature=src.shape_signature, is_variable=src.is_variable, has_rank=src.has_rank)
        self.tensors.append(t)
        return len(self.tensors) - 1

    def copy_tensor(self, t: int) -> int:
        """A non-float tensor (or a float one kept float), with its constant data."""
        src = self.sg.tensors[t]
        stored = bool(self.src.buffers[src.buffer].data)
        if stored and not src.is_variable and src.sparsity is None:
            return self.add_tensor(src, src.type, src.quantization, np.asarray(self.src.tensor_data(0, t)))
        n = self.add_tensor(src, src.type, src.quantization)
        if stored:  # sparse, or a variable's initial value: keep the stored bytes as they are
            self.buffers.append(Buffer(bytes(self.src.buffers[src.buffer].data)))
            self.tensors[n].buffer = len(self.buffers) - 1
            self.tensors[n].sparsity = src.sparsity
        return n

    def quant(self, scale, zp, axis: int = 0) -> Quantization:
        s = np.atleast_1d(np.asarray(scale, np.float32))
        z = np.atleast_1d(np.asarray(zp, np.int64))
        if z.size == 1 and s.size > 1:
            z = np.full(s.size, int(z[0]), np.int64)
        return Quantization(scale=s, zero_point=z, quantized_dimension=axis)

    def params_of(self, new: int) -> tuple[float, int]:
        q = self.tensors[new].quantization
        return float(q.scale[0]), int(q.zero_point[0])

    # ---------------------------------------------------------------- ops
    def add_op(self, name: str, inputs, outputs, options: dict | None = None, options_type=None, version=1,
               origin=None, custom_options=None) -> None:
        code = OperatorCode(builtin_code=BUILTIN_OPERATOR_CODES[name], version=version) if name in \
            BUILTIN_OPERATOR_CODES else OperatorCode(builtin_code=32, custom_code=name, version=version)
        if code not in self.codes:
            self.codes.append(code)
        if options is None and options_type is None:
            from edge_sdk.model.writer import option_defaults, options_for

            options_type = options_for(name)
            options = option_defaults(options_type) if options_type else {}
        self.ops.append(Operator(opcode_index=self.codes.index(code), inputs=list(inputs), outputs=list(outputs),
                                 options_type=options_type, options=dict(options or {}),
                                 custom_options=custom_options))
        self.origin[len(self.ops) - 1] = origin

    def version(self, name: str, src_version: int, act: str | None = None) -> int:
        from edge_sdk.runtime import op_table

        v = _VERSIONS.get(act or self.act, {}).get(name, src_version)
        row = op_table.OPS.get(name)
        return max(src_version, min(v, row.max_version if row else v))

    def get_q(self, t: int, quant: Quantization | None = None, type: str | None = None) -> int:
        """The quantized copy of source tensor t in ``type`` (default: the build's activation type):
        QUANTIZE from its float copy when only that exists, or from its integer copy of the other type
        (int8 <-> int16 around an op widened to int16x8); with ``quant``, a copy in exactly that
        quantization, requantizing when it differs."""
        type = type or self.act
        if t not in self.qt and (t, type) in self.qx:
            n = self.qx[(t, type)]
            if quant is None or _same_quant(self.tensors[n].quantization, quant):
                return n
        if t not in self.qt:
            f = self.ft[t]
            q = quant if quant is not None else self.default_quant(t, type)
            n = self.add_tensor(self.sg.tensors[t], type, q, suffix="_quant" if type == self.act else "_quant16")
            self.add_op("QUANTIZE", [f], [n], version=self.version("QUANTIZE", 1, type))
            if type == self.act:
                self.qt[t] = n
            else:
                self.qx[(t, type)] = n
            return n
        n = self.qt[t]
        if self.tensors[n].type != type:
            if (t, type) not in self.qx:
                c = self.add_tensor(self.sg.tensors[t], type, self.default_quant(t, type),
                                    suffix="_int16" if type == "INT16" else "_int8")
                self.add_op("QUANTIZE", [n], [c], version=self.version("QUANTIZE", 1, "INT16"))
                self.qx[(t, type)] = c
            n = self.qx[(t, type)]
        if quant is None or _same_quant(self.tensors[n].quantization, quant):
            return n
        r = self.add_tensor(self.sg.tensors[t], type, quant, suffix="_requant")
        self.add_op("QUANTIZE", [n], [r], version=self.version("QUANTIZE", 1, type))
        return r

    def get_f(self, t: int) -> int:
        if t not in self.ft:
            q = self.qt[t]
            n = self.add_tensor(self.sg.tensors[t], "FLOAT32", None, suffix="_dequant")
            self.add_op("DEQUANTIZE", [q], [n], version=self.version("DEQUANTIZE", 1))
            self.ft[t] = n
        return self.ft[t]

    def default_quant(self, t: int, type: str | None = None) -> Quantization:
        type = type or self.act
        lo, hi = self.ranges[t]
        return self.quant(*_affine(lo, hi, *_limits(type), type == "INT16"))

    def build(self, inputs: list[int], outputs: list[int]) -> Model:
        sg = SubGraph(tensors=self.tensors, inputs=inputs, outputs=outputs, operators=self.ops, name=self.sg.name)
        sigs = []
        for sd in self.src.signature_defs:
            if sd.subgraph_index != 0:
                continue
            sigs.append(type(sd)(sd.signature_key, 0,
                                 {k: self.io_map[v] for k, v in sd.inputs.items() if v in self.io_map},
                                 {k: self.io_map[v] for k, v in sd.outputs.items() if v in self.io_map}))
        return Model(operator_codes=self.codes, subgraphs=[sg], buffers=self.buffers, version=self.src.version,
                     description=self.src.description, signature_defs=sigs)


def _limits(type: str) -> tuple[int, int]:
    return (-128, 127) if type == "INT8" else (-32768, 32767)


def _same_quant(a: Quantization | None, b: Quantization | None) -> bool:
    if a is None or b is None:
        return a is b
    return (np.array_equal(np.asarray(a.scale, np.float32), np.asarray(b.scale, np.float32))
            and np.array_equal(np.asarray(a.zero_point, np.int64), np.asarray(b.zero_point, np.int64)))


def _is_float(model: Model, t: int) -> bool:
    return t >= 0 and model.subgraphs[0].tensors[t].type == "FLOAT32"


def _is_const(model: Model, t: int) -> bool:
    tensor = model.subgraphs[0].tensors[t]
    return not tensor.is_variable and bool(model.buffers[tensor.buffer].data)


def _resolve_exclude(model: Model, exclude) -> set[int]:
    sg = model.subgraphs[0]
    by_name = {}
    for i, op in enumerate(sg.operators):
        for t in op.outputs:
            if t >= 0:
                by_name[sg.tensors[t].name] = i
    out, unknown = set(), []
    for e in exclude or ():
        if isinstance(e, (int, np.integer)) and not isinstance(e, bool):
            if not 0 <= e < len(sg.operators):
                unknown.append(f"op index {e} (the model has {len(sg.operators)} ops)")
            else:
                out.add(int(e))
        elif isinstance(e, str) and e in by_name:
            out.add(by_name[e])
        elif isinstance(e, str) and e.isdigit() and int(e) < len(sg.operators):
            out.add(int(e))
        else:
            unknown.append(f"{e!r} names no op index or op output tensor")
    if unknown:
        raise ModelError("quantize: exclude: " + "; ".join(unknown))
    return out


def _integer_only(model: Model, op: Operator) -> bool:
    """No float tensor in or out (a CAST of int32 indices, int32 arithmetic on a count): nothing to quantize."""
    return not any(t >= 0 and _is_float(model, t) for t in list(op.inputs) + list(op.outputs))


def _quantizable(model: Model, i: int, op: Operator) -> str | None:
    """None when the quantizer has a rule for this op, else why not."""
    name = model.op_name(op)
    if _integer_only(model, op):
        return None
    if name in WEIGHTED_LAYERS:
        w = op.inputs[WEIGHTED_LAYERS[name][0]]
        if not _is_const(model, w):
            return "its weights are not constant"
        return None
    if name in _SAME_AS_INPUT or name in _SHARED or name in _OWN_OUTPUT or name in _FIXED \
            or name in _NON_FLOAT_OUTPUT:
        return None
    return "no int8 rule for this op (keep it float with exclude)"


def _unquantizable(model: Model, act: str, excluded: set[int]) -> list[tuple[int, str]]:
    """(op index, why) for every op not in ``excluded`` that has no rule in this activation type."""
    sg = model.subgraphs[0]
    found = []
    for i, op in enumerate(sg.operators):
        name = model.op_name(op)
        if i in excluded:
            continue
        why = _quantizable(model, i, op)
        if why is None and act == "INT16" and name in _NO_INT16:
            why = "no int16x8 kernel for this op (keep it float with exclude, or use int8)"
        if why is not None:
            found.append((i, why))
    return found


def _check_ops(model: Model, act: str, excluded: set[int]) -> None:
    """Every op without a quantization rule, at once (before any calibration runs)."""
    sg = model.subgraphs[0]
    problems = [f"op {i} {model.op_name(sg.operators[i])} (output '{sg.tensors[sg.operators[i].outputs[0]].name}'): "
                f"{why}" for i, why in _unquantizable(model, act, excluded)]
    if problems:
        raise ConversionError(f"quantize: {len(problems)} op(s) cannot be quantized to {act.lower()}", problems)


def _span(lo: float, hi: float) -> float:
    return max(hi, 0.0) - min(lo, 0.0)


def _wide_joins(model: Model, ranges: dict, act: str, excluded: set[int]) -> list[dict]:
    """CONCATENATION / PACK ops joining parts of very different ranges: under one shared scale a part
    spanning a small fraction of the whole would get fewer than ``JOIN_LEVELS`` steps (YOLO-style heads
    join boxes in pixels with scores in 0..1). Each entry names the parts, their ranges and steps, and
    ``chain``: the shape-only ops from the join to a model output (``to_output``), or None when the join's
    value is read by other ops."""
    sg = model.subgraphs[0]
    levels = 255 if act == "INT8" else 65535
    cons: dict[int, list[int]] = {}
    for i, op in enumerate(sg.operators):
        for t in dict.fromkeys(op.inputs):
            if t >= 0:
                cons.setdefault(t, []).append(i)
    found = []
    for i, op in enumerate(sg.operators):
        name = model.op_name(op)
        if name not in _JOINS or i in excluded:
            continue
        parts = [t for t in op.inputs if _is_float(model, t) and not _is_const(model, t) and t in ranges]
        if len(parts) < 2:
            continue
        whole = _span(min(ranges[t][0] for t in parts), max(ranges[t][1] for t in parts))
        if not whole > 0:
            continue
        steps = {t: _span(*ranges[t]) / whole * levels for t in parts}
        if min(steps.values()) >= JOIN_LEVELS:
            continue
        chain: list[int] | None = []
        cur = op.outputs[0]
        while not (cur in sg.outputs and not cons.get(cur)):
            users = cons.get(cur, [])
            if cur in sg.outputs or len(users) != 1 or users[0] in excluded \
                    or model.op_name(sg.operators[users[0]]) not in _TO_OUTPUT:
                chain = None
                break
            chain.append(users[0])
            cur = sg.operators[users[0]].outputs[0]
        found.append({"op_index": i, "op": name, "output": sg.tensors[op.outputs[0]].name,
                      "parts": [{"tensor": sg.tensors[t].name, "range": [float(ranges[t][0]), float(ranges[t][1])],
                                 "steps": round(float(steps[t]), 1)} for t in parts],
                      "chain": chain, "to_output": chain is not None})
    return found


def _integer_graph(model: Model, ranges: dict, act: str, io: str, excluded: set[int],
                   wide16: set[int] = frozenset(), w16: set[int] = frozenset()) -> tuple[Model, _Build]:
    """The integer graph; ops in ``wide16`` (a wide join and the shape ops after it, int8 mode) run in int16:
    each part requantized from its own int8 scale to the join's int16 one. Ops in ``w16`` (int8 mode) are
    widened to int16x8: int16 activations (symmetric), int8 weights, int64 biases, with QUANTIZE int8 ->
    int16 before them and int16 -> int8 after them; adjacent widened ops (and shape-only ops between them)
    pass int16 tensors along, and a widened op's model output stays int16."""
    _check_ops(model, act, excluded)
    b = _Build(model, act)
    b.ranges = ranges
    sg = b.sg

    io_map = {}
    new_inputs = []
    for t in sg.inputs:
        if not _is_float(model, t):
            n = b.copy_tensor(t)
            b.qt[t] = b.ft[t] = n
        elif io == "float32":
            n = b.add_tensor(sg.tensors[t], "FLOAT32", None)
            b.ft[t] = n
        else:
            n = b.add_tensor(sg.tensors[t], act, b.default_quant(t))
            b.qt[t] = n
        io_map[t] = n
        new_inputs.append(n)

    def non_float_input(t):
        if t not in b.qt:
            n = b.copy_tensor(t)
            b.qt[t] = b.ft.setdefault(t, n)
        return b.qt[t]

    def const_quant(t, quant: Quantization | None = None, type: str | None = None) -> int:
        """A float constant as an activation-typed constant (its own per-tensor params unless given)."""
        type = type or act
        data = np.asarray(model.tensor_data(0, t), np.float64)
        if quant is None:
            lo, hi = (float(data.min()), float(data.max())) if data.size else (0.0, 0.0)
            quant = b.quant(*_affine(lo, hi, *_limits(type), type == "INT16"))
        q = _quantize_array(data, quant.scale[0], quant.zero_point[0], *_limits(type),
                            np.int8 if type == "INT8" else np.int16)
        return b.add_tensor(sg.tensors[t], type, quant, q)

    for i, op in enumerate(sg.operators):
        name = model.op_name(op)
        src_version = model.op_version(op)
        if i in excluded:
            ins = []
            for t in op.inputs:
                if t < 0:
                    ins.append(t)
                elif _is_const(model, t) or not _is_float(model, t) or sg.tensors[t].is_variable:
                    if t not in b.ft:
                        b.ft[t] = b.copy_tensor(t)
                    ins.append(b.ft[t])
                else:
                    ins.append(b.get_f(t))
            outs = []
            for t in op.outputs:
                n = b.copy_tensor(t)
                b.ft[t] = n
                if not _is_float(model, t):
                    b.qt[t] = n
                outs.append(n)
            b.add_op(name, ins, outs, op.options, op.options_type, src_version, origin=i,
                     custom_options=op.custom_options)
            continue

        if _integer_only(model, op):  # indices, counts, shapes: quantization leaves the op as it is
            outs = []
            for t in op.outputs:
                b.qt[t] = b.ft[t] = b.copy_tensor(t)
                outs.append(b.qt[t])
            b.add_op(name, [t if t < 0 else non_float_input(t) for t in op.inputs], outs, op.options,
                     op.options_type, src_version, origin=i, custom_options=op.custom_options)
            continue

        ins: list[int] = []
        outs: list[int] = []
        oact = "INT16" if i in w16 else act  # this op's activation type
        if name in WEIGHTED_LAYERS:
            wi, bi, axis = WEIGHTED_LAYERS[name]
            for k, t in enumerate(op.inputs):
                if k in (wi, bi) or t < 0:
                    ins.append(t)
                elif _is_float(model, t):
                    ins.append(b.get_q(t, type=oact) if not _is_const(model, t) else const_quant(t, type=oact))
                else:
                    ins.append(non_float_input(t))
            data_in = op.inputs[2] if name == "TRANSPOSE_CONV" else op.inputs[0]
            in_scale = b.params_of(b.get_q(data_in, type=oact))[0]
            w = np.asarray(model.tensor_data(0, op.inputs[wi]), np.float64)
            bias_t = op.inputs[bi] if bi < len(op.inputs) else -1
            bias = None
            if bias_t >= 0 and _is_const(model, bias_t) and _is_float(model, bias_t):
                bias = np.asarray(model.tensor_data(0, bias_t), np.float64).reshape(-1)
            bias_limit = INT32_MAX if oact == "INT8" else 2**63 - 1
            scales = _weight_scales(w, axis, bias, in_scale, bias_limit)
            qw = _quantize_array(w, scales, 0, -127, 127, np.int8, axis=axis)
            ins[wi] = b.add_tensor(sg.tensors[op.inputs[wi]], "INT8", b.quant(scales, 0, axis), qw)
            if bias_t >= 0:
                if bias is None:
                    raise ConversionError("quantize: unsupported bias",
                                          [f"op {i} {name}: its bias is not a float constant"])
                bscale = (np.float64(in_scale) * scales.astype(np.float64)).astype(np.float32)
                btype, bdtype = ("INT32", np.int32) if oact == "INT8" else ("INT64", np.int64)
                qb = np.clip(_round(bias / bscale.astype(np.float64)), -bias_limit - 1, bias_limit).astype(bdtype)
                if bscale.size == 1 and qb.size > 1:
                    bscale = np.full(qb.size, bscale[0], np.float32)
                ins[bi] = b.add_tensor(sg.tensors[bias_t], btype, b.quant(bscale, 0, 0), qb)
            for t in op.outputs:
                b.qt[t] = b.add_tensor(sg.tensors[t], oact, b.default_quant(t, oact))
                outs.append(b.qt[t])
        elif i in wide16 and name in _JOINS:
            parts = [t for t in op.inputs if t >= 0 and _is_float(model, t)]
            lo = min(min(ranges[t][0] for t in parts if t in ranges), 0.0)
            hi = max(max(ranges[t][1] for t in parts if t in ranges), 0.0)
            for t in op.inputs:
                if not _is_const(model, t) or not _is_float(model, t):
                    continue
                d = np.asarray(model.tensor_data(0, t))
                if d.size:
                    lo, hi = min(lo, float(d.min())), max(hi, float(d.max()))
            wide = b.quant(*_affine(lo, hi, -32768, 32767, True))
            for t in op.inputs:
                if t < 0 or not _is_float(model, t):
                    ins.append(t if t < 0 else non_float_input(t))
                    continue
                if _is_const(model, t):
                    d = np.asarray(model.tensor_data(0, t), np.float64)
                    ins.append(b.add_tensor(sg.tensors[t], "INT16", copy.deepcopy(wide),
                                            _quantize_array(d, wide.scale[0], 0, -32768, 32767, np.int16)))
                    continue
                n = b.add_tensor(sg.tensors[t], "INT16", copy.deepcopy(wide), suffix="_int16")
                src = b.qt[t] if t in b.qt else b.ft[t]  # a float part (its producer kept float): no int8 step
                b.add_op("QUANTIZE", [src], [n], version=b.version("QUANTIZE", 1, "INT16"))
                ins.append(n)
            for t in op.outputs:
                b.qt[t] = b.add_tensor(sg.tensors[t], "INT16", copy.deepcopy(wide))
                outs.append(b.qt[t])
            b.add_op(name, ins, outs, op.options, op.options_type, b.version(name, src_version, "INT16"), origin=i)
            continue
        elif name in _SAME_AS_INPUT:
            di = _SAME_AS_INPUT[name]
            data_q = None
            for k, t in enumerate(op.inputs):
                if t < 0:
                    ins.append(t)
                elif k == di:
                    if _is_const(model, t):
                        ins.append(const_quant(t, type=oact))
                    elif t in b.qt and b.tensors[b.qt[t]].type == "INT16" and name in INT16_OPS | _INT16_PASS:
                        ins.append(b.qt[t])  # int16 from a widened op: kept int16 through shape-only ops
                    else:
                        ins.append(b.get_q(t, type=oact))
                    data_q = b.tensors[ins[-1]].quantization
                    oact = b.tensors[ins[-1]].type
                elif _is_float(model, t):  # PADV2's pad value: the data's quantization
                    ins.append(const_quant(t, data_q, oact) if _is_const(model, t) else b.get_q(t, data_q, oact))
                else:
                    ins.append(non_float_input(t))
            out_type = b.tensors[ins[di]].type if di < len(ins) and ins[di] >= 0 else act
            if i in wide16 or (out_type == "INT16" and act == "INT8"):  # int16 in an int8 model: its op version
                src_version = b.version(name, src_version, "INT16")
            for t in op.outputs:
                if _is_float(model, t):
                    b.qt[t] = b.add_tensor(sg.tensors[t], out_type, copy.deepcopy(data_q))
                else:
                    b.qt[t] = b.ft[t] = b.copy_tensor(t)
                outs.append(b.qt[t])
        elif name in _SHARED:
            float_ins = [t for t in op.inputs if t >= 0 and _is_float(model, t)]
            lo = min([ranges[t][0] for t in float_ins + list(op.outputs) if t in ranges] or [0.0])
            hi = max([ranges[t][1] for t in float_ins + list(op.outputs) if t in ranges] or [0.0])
            for t in float_ins:
                if _is_const(model, t):
                    d = np.asarray(model.tensor_data(0, t))
                    if d.size:
                        lo, hi = min(lo, float(d.min())), max(hi, float(d.max()))
            shared = b.quant(*_affine(lo, hi, *_limits(oact), oact == "INT16"))
            for t in op.inputs:
                if t < 0:
                    ins.append(t)
                elif not _is_float(model, t):
                    ins.append(non_float_input(t))
                elif _is_const(model, t):
                    ins.append(const_quant(t, shared, oact))
                else:
                    ins.append(b.get_q(t, shared, oact))
            for t in op.outputs:
                b.qt[t] = b.add_tensor(sg.tensors[t], oact, copy.deepcopy(shared))
                outs.append(b.qt[t])
        elif name in _COMPARISONS or name in _SELECTS:
            ins, outs = _compare_select_io(model, b, op, name, ranges, act, non_float_input, const_quant)
        else:  # own output, fixed output, non-float output
            for t in op.inputs:
                if t < 0:
                    ins.append(t)
                elif not _is_float(model, t):
                    ins.append(non_float_input(t))
                elif _is_const(model, t):
                    ins.append(const_quant(t, type=oact))
                else:
                    ins.append(b.get_q(t, type=oact))
            for t in op.outputs:
                if not _is_float(model, t):
                    b.qt[t] = b.ft[t] = b.copy_tensor(t)
                elif name in _FIXED:
                    b.qt[t] = b.add_tensor(sg.tensors[t], oact, b.quant(*_FIXED[name][oact]))
                else:
                    b.qt[t] = b.add_tensor(sg.tensors[t], oact, b.default_quant(t, oact))
                outs.append(b.qt[t])
        b.add_op(name, ins, outs, op.options, op.options_type, b.version(name, src_version, oact), origin=i)

    new_outputs = []
    for t in sg.outputs:
        if not _is_float(model, t):
            n = b.qt.get(t, b.ft.get(t))
        elif io == "float32":
            n = b.get_f(t)
        else:  # integer I/O: the output's own integer copy (int16 after a widened op or a wide join)
            n = b.qt[t] if t in b.qt else b.get_q(t)
        io_map[t] = n
        new_outputs.append(n)
    b.io_map = io_map
    return b.build(new_inputs, new_outputs), b


def _compare_select_io(model: Model, b: "_Build", op: Operator, name: str, ranges: dict, act: str,
                       non_float_input, const_quant) -> tuple[list[int], list[int]]:
    """Inputs and outputs of a comparison or SELECT / SELECT_V2 in the integer graph (see _COMPARISONS)."""
    sg = model.subgraphs[0]
    values = [t for k, t in enumerate(op.inputs)
              if t >= 0 and _is_float(model, t) and (name in _COMPARISONS or k > 0)]

    def const_range(t):
        d = np.asarray(model.tensor_data(0, t))
        return (float(d.min()), float(d.max())) if d.size else (0.0, 0.0)

    shared = None
    if name in _SELECTS and any(not _is_const(model, t) for t in values):
        # the run-time values set the range; a constant branch widens it only while the run-time part keeps at
        # least 1/JOIN_LEVELS of it, else it saturates to the range's end (a mask fill such as -1e9 or -inf
        # before a SOFTMAX), said in the report notes
        lo, hi = 0.0, 0.0
        for t in values:
            if not _is_const(model, t) and t in ranges:
                lo, hi = min(lo, ranges[t][0]), max(hi, ranges[t][1])
        span = hi - lo
        for t in values:
            if not _is_const(model, t):
                continue
            d = np.asarray(model.tensor_data(0, t), np.float64)
            if not d.size:
                continue
            clo, chi = min(lo, float(d.min())), max(hi, float(d.max()))
            if math.isfinite(clo) and math.isfinite(chi) and (span <= 0 or chi - clo <= JOIN_LEVELS * span):
                lo, hi = clo, chi
            else:
                b.__dict__.setdefault("select_saturated", []).append((op.outputs[0], t, float(d.min()), float(d.max())))
        shared = b.quant(*_affine(lo, hi, b.qmin, b.qmax, act == "INT16"))
    elif name in _SELECTS or act == "INT16":
        lo, hi = 0.0, 0.0
        for t in values + ([t for t in op.outputs if t >= 0] if name in _SELECTS else []):
            r = const_range(t) if _is_const(model, t) else ranges.get(t)
            if r is not None:
                lo, hi = min(lo, r[0]), max(hi, r[1])
        shared = b.quant(*_affine(lo, hi, b.qmin, b.qmax, act == "INT16"))
    elif name in _COMPARISONS:
        # int8, own quantization per input: TFLM's rescaling needs each scale below 1
        def scale_of(t):
            if _is_const(model, t):
                return _affine(*const_range(t), b.qmin, b.qmax, False)[0]
            return b.params_of(b.qt[t])[0] if t in b.qt else float(b.default_quant(t).scale[0])
        if any(not 0.0 < scale_of(t) < 1.0 for t in values):
            b.__dict__.setdefault("float_comparisons", []).append(sg.tensors[op.outputs[0]].name)
            ins = []
            for t in op.inputs:
                if t < 0 or t not in values:
                    ins.append(t if t < 0 else non_float_input(t))
                elif _is_const(model, t):
                    ins.append(b.ft.setdefault(t, b.copy_tensor(t)))
                else:
                    ins.append(b.get_f(t))
            return ins, [b.qt.setdefault(t, b.ft.setdefault(t, b.copy_tensor(t))) for t in op.outputs]
    ins = []
    for t in op.inputs:
        if t < 0 or t not in values:
            ins.append(t if t < 0 else non_float_input(t))
        elif _is_const(model, t):
            ins.append(const_quant(t, shared))
        else:
            ins.append(b.get_q(t, shared))
    outs = []
    for t in op.outputs:
        if _is_float(model, t):  # a SELECT's values
            b.qt[t] = b.add_tensor(sg.tensors[t], act, copy.deepcopy(shared))
        else:
            b.qt[t] = b.ft[t] = b.copy_tensor(t)
        outs.append(b.qt[t])
    return ins, outs


# ================================================================================================ fp16 / dynamic
def _fp16_graph(model: Model) -> Model:
    b = _Build(model, "FLOAT16")
    sg = b.sg
    for t in range(len(sg.tensors)):
        if _is_const(model, t) and _is_float(model, t) and sg.tensors[t].sparsity is None:
            data = np.asarray(model.tensor_data(0, t), np.float32)
            h = b.add_tensor(sg.tensors[t], "FLOAT16", None, data.astype(np.float16), suffix="_fp16")
            n = b.add_tensor(sg.tensors[t], "FLOAT32", None)
            b.add_op("DEQUANTIZE", [h], [n], version=3)
            b.ft[t] = n
    for t in range(len(sg.tensors)):
        if t not in b.ft:
            b.ft[t] = b.copy_tensor(t)
    for i, op in enumerate(sg.operators):
        b.add_op(model.op_name(op), [b.ft[t] if t >= 0 else t for t in op.inputs],
                 [b.ft[t] for t in op.outputs], op.options, op.options_type, model.op_version(op), origin=i,
                 custom_options=op.custom_options)
    b.io_map = dict(b.ft)
    return b.build([b.ft[t] for t in sg.inputs], [b.ft[t] for t in sg.outputs])


_DYNAMIC = {"CONV_2D": (1, 0, 5), "DEPTHWISE_CONV_2D": (1, 3, 6), "FULLY_CONNECTED": (1, None, 9)}


def _dynamic_graph(model: Model, excluded: set[int]) -> tuple[Model, list[dict]]:
    b = _Build(model, "INT8")
    sg = b.sg
    weights = []
    for t in range(len(sg.tensors)):
        b.ft[t] = b.copy_tensor(t)
    for i, op in enumerate(sg.operators):
        name = model.op_name(op)
        ins = [b.ft[t] if t >= 0 else t for t in op.inputs]
        version = model.op_version(op)
        if name in _DYNAMIC and i not in excluded and _is_const(model, op.inputs[1]) and _is_float(model, op.inputs[1]):
            wi, axis, version = _DYNAMIC[name]
            w = np.asarray(model.tensor_data(0, op.inputs[wi]), np.float64)
            if axis is None:
                m = float(np.abs(w).max()) if w.size else 0.0
                scales = np.array([m / 127.0 if m > 0 else 1.0], np.float32)
                qw = _quantize_array(w, scales[0], 0, -127, 127, np.int8)
                q = b.quant(scales, 0, 0)
            else:
                scales = _weight_scales(w, axis, None, 1.0, INT32_MAX)
                qw = _quantize_array(w, scales, 0, -127, 127, np.int8, axis=axis)
                q = b.quant(scales, 0, axis)
            ins[wi] = b.add_tensor(sg.tensors[op.inputs[wi]], "INT8", q, qw)
            weights.append({"op": i, "name": sg.tensors[op.inputs[wi]].name, "channels": int(scales.size),
                            "scale_min": float(scales.min()), "scale_max": float(scales.max())})
        b.add_op(name, ins, [b.ft[t] for t in op.outputs], op.options, op.options_type, version, origin=i,
                 custom_options=op.custom_options)
    b.io_map = dict(b.ft)
    return b.build([b.ft[t] for t in sg.inputs], [b.ft[t] for t in sg.outputs]), weights


def _drop_unused_buffers(model: Model) -> Model:
    """Keep only buffers some tensor uses (buffer 0 stays empty)."""
    used = sorted({t.buffer for sg in model.subgraphs for t in sg.tensors if t.buffer} | {m.buffer for m in model.metadata})
    remap = {0: 0}
    buffers = [Buffer()]
    for old in used:
        remap[old] = len(buffers)
        buffers.append(model.buffers[old])
    for sg in model.subgraphs:
        for t in sg.tensors:
            t.buffer = remap[t.buffer]
    for m in model.metadata:
        m.buffer = remap[m.buffer]
    model.buffers = buffers
    return model


def _verify(qmodel: Model) -> None:
    """The quantized model must prepare in our interpreter, whose kernels check what TFLM's check."""
    from edge_sdk.runtime.interpreter import Interpreter

    try:
        Interpreter(model=qmodel).allocate_tensors()
    except ModelError as exc:
        raise ConversionError("quantize: the quantized model does not prepare", [str(exc)]) from exc


# ================================================================================================ error report
def _dequantize(x: np.ndarray, q: Quantization | None) -> np.ndarray:
    if q is None or x.dtype.kind == "f":
        return x.astype(np.float64)
    return (x.astype(np.float64) - float(q.zero_point[0])) * float(q.scale[0])


def _join_parts(model: Model, op: Operator) -> list[tuple[int, tuple]]:
    """(input tensor, index into the join's output selecting that input's part) for CONCATENATION / PACK."""
    sg = model.subgraphs[0]
    out_rank = len(sg.tensors[op.outputs[0]].shape)
    axis = int((op.options or {}).get("axis", 0))
    axis = axis + out_rank if axis < 0 else axis
    parts, start = [], 0
    for k, t in enumerate(op.inputs):
        if t < 0:
            continue
        index = [slice(None)] * out_rank
        if model.op_name(op) == "PACK":
            index[axis] = k
        else:
            size = int(sg.tensors[t].shape[axis])
            index[axis] = slice(start, start + size)
            start += size
        parts.append((t, tuple(index)))
    return parts


def _snr(ff: float, dd: float) -> float:
    return math.inf if dd == 0 else (10 * math.log10(ff / dd) if ff > 0 else -math.inf)


def _output_join(model: Model, t: int, produced: dict) -> int | None:
    """The CONCATENATION / PACK whose value model output ``t`` is (through shape-only ops), or None."""
    sg = model.subgraphs[0]
    while t in produced:
        op = sg.operators[produced[t]]
        name = model.op_name(op)
        if name in _JOINS:
            return op.outputs[0]
        if name not in _TO_OUTPUT:
            return None
        t = op.inputs[0]
    return None


def _is_distribution(model: Model, t: int, produced: dict) -> bool:
    """A class distribution (argmax is meaningful): a SOFTMAX / LOG_SOFTMAX output, or (batch, classes)."""
    sg = model.subgraphs[0]
    shape = tuple(sg.tensors[t].shape)
    if t in produced and model.op_name(sg.operators[produced[t]]) in ("SOFTMAX", "LOG_SOFTMAX"):
        return len(shape) >= 1 and shape[-1] >= 2
    return len(shape) == 2 and shape[-1] >= 2


def _layer_errors(model: Model, qmodel: Model, b: _Build, samples, float_run, io: str) -> tuple[list, list]:
    """SNR and cosine of every quantized activation against the float model, worst SNR first; the output of
    a CONCATENATION / PACK also part by part (``part_of``: the joined tensor, ``input``: the part's source),
    so a small-range part is not hidden by a large-range one. Second: per model output, its SNR (and its
    joined parts' SNRs, and argmax agreement for class distributions)."""
    qrun, _ = _runner(qmodel)
    sg = model.subgraphs[0]
    produced = {t: i for i, op in enumerate(sg.operators) for t in op.outputs if t >= 0}
    out_acc = {t: np.zeros(4) for t in sg.outputs if _is_float(model, t)}
    out_agree = {t: [0, 0] for t in out_acc if _is_distribution(model, t, produced)}
    # BOOL outputs (comparison masks): the SNR of the 0/1 values (true count over flipped count) and agreement
    bool_acc = {t: [0, 0, 0] for t in sg.outputs if sg.tensors[t].type == "BOOL"}  # trues, flips, elements
    pairs = {t: n for t, n in b.qt.items() if _is_float(model, t) and not _is_const(model, t)
             and b.tensors[n].type in ("INT8", "INT16")}
    joined = {}  # output tensor of a join -> (its new tensor, parts)
    for op in sg.operators:
        if model.op_name(op) in _JOINS and op.outputs and _is_float(model, op.outputs[0]):
            t = op.outputs[0]
            n = b.qt.get(t, b.ft.get(t))
            if n is not None:
                joined[t] = (n, _join_parts(model, op))
    part_acc = {(t, k): np.zeros(4) for t, (_, parts) in joined.items() for k in range(len(parts))}
    part_max = dict.fromkeys(part_acc, 0.0)
    acc = {t: np.zeros(4) for t in pairs}  # sum f^2, sum (f-q)^2, sum f*q, sum q^2
    max_err = dict.fromkeys(pairs, 0.0)
    seen = set()
    in_quant = [b.tensors[n].quantization for n in (b.io_map[t] for t in sg.inputs)]
    for sample in samples:
        ref = float_run(sample)
        feed = []
        for x, t, q in zip(sample, sg.inputs, in_quant):
            n = b.io_map[t]
            if b.tensors[n].type in ("INT8", "INT16") and np.asarray(x).dtype.kind == "f":
                lim = (-128, 127) if b.tensors[n].type == "INT8" else (-32768, 32767)
                x = _quantize_array(np.asarray(x), q.scale[0], q.zero_point[0], *lim, b.tensors[n].dtype)
            feed.append(x)
        got = qrun(feed)
        for t in out_acc:
            n = b.io_map[t]
            if t not in ref or n not in got:
                continue
            f = ref[t].astype(np.float64)
            q = _dequantize(got[n], b.tensors[n].quantization).reshape(f.shape)
            d = (f - q).reshape(-1)
            out_acc[t] += (f.reshape(-1) @ f.reshape(-1), d @ d, 0.0, 0.0)
            if t in out_agree and f.size:
                fa, qa = f.reshape(-1, f.shape[-1]).argmax(-1), q.reshape(-1, f.shape[-1]).argmax(-1)
                out_agree[t][0] += int((fa == qa).sum())
                out_agree[t][1] += int(fa.size)
        for t in bool_acc:
            n = b.io_map[t]
            if t in ref and n in got:
                f, q = ref[t].reshape(-1), got[n].reshape(-1)
                bool_acc[t][0] += int(f.sum())
                bool_acc[t][1] += int((f != q).sum())
                bool_acc[t][2] += int(f.size)
        for t, n in pairs.items():
            if t not in ref or n not in got:
                continue
            f = ref[t].astype(np.float64).reshape(-1)
            q = _dequantize(got[n], b.tensors[n].quantization).reshape(-1)
            finite = np.isfinite(f)
            if not finite.all():  # a -inf mask fill (SELECT): measured on the finite elements
                f, q = f[finite], q[finite]
            d = f - q
            acc[t] += (f @ f, d @ d, f @ q, q @ q)
            seen.add(t)
            if d.size:
                max_err[t] = max(max_err[t], float(np.abs(d).max()))
        for t, (n, parts) in joined.items():
            if t not in ref or n not in got:
                continue
            fo = ref[t].astype(np.float64)
            qo = _dequantize(got[n], b.tensors[n].quantization).reshape(fo.shape)
            seen.add(t)
            for k, (_, index) in enumerate(parts):
                f, q = fo[index].reshape(-1), qo[index].reshape(-1)
                d = f - q
                part_acc[(t, k)] += (f @ f, d @ d, f @ q, q @ q)
                if d.size:
                    part_max[(t, k)] = max(part_max[(t, k)], float(np.abs(d).max()))
    layers = []
    for (t, k), (ff, dd, fq, qq) in part_acc.items():
        if t not in seen:
            continue
        src = joined[t][1][k][0]
        i = produced.get(t)
        cos = fq / math.sqrt(ff * qq) if ff > 0 and qq > 0 else (1.0 if ff == qq else 0.0)
        layers.append({"tensor": f"{sg.tensors[t].name} [part {k}: {sg.tensors[src].name}]",
                       "part_of": sg.tensors[t].name, "input": sg.tensors[src].name, "op_index": i,
                       "op": model.op_name(sg.operators[i]), "snr_db": _snr(ff, dd), "cosine": float(cos),
                       "max_abs_error": part_max[(t, k)]})
    for t, (ff, dd, fq, qq) in acc.items():
        if t not in seen:
            continue
        snr = _snr(ff, dd)
        cos = fq / math.sqrt(ff * qq) if ff > 0 and qq > 0 else (1.0 if ff == qq else 0.0)
        i = produced.get(t)
        layers.append({"tensor": sg.tensors[t].name, "op_index": i,
                       "op": model.op_name(sg.operators[i]) if i is not None else "INPUT",
                       "snr_db": snr, "cosine": float(cos), "max_abs_error": max_err[t]})
    layers.sort(key=lambda r: (r["snr_db"], r["cosine"]))
    outputs = []
    for t, (ff, dd, _, _) in out_acc.items():
        entry = {"name": sg.tensors[t].name, "snr_db": _snr(ff, dd)}
        j = _output_join(model, t, produced)
        if j is not None:
            entry["parts"] = [{"input": r["input"], "snr_db": r["snr_db"]} for r in layers
                              if r.get("part_of") == sg.tensors[j].name]
        if t in out_agree and out_agree[t][1]:
            entry["argmax_agreement"] = out_agree[t][0] / out_agree[t][1]
        entry["worst_snr_db"] = min([entry["snr_db"]] + [p["snr_db"] for p in entry.get("parts", [])])
        outputs.append(entry)
    for t, (trues, flips, size) in bool_acc.items():
        if size:
            snr = _snr(float(trues), float(flips))
            outputs.append({"name": sg.tensors[t].name, "snr_db": snr, "agreement": 1.0 - flips / size,
                            "worst_snr_db": snr})
    return layers, outputs


def _worst(outputs) -> float:
    return min([o["worst_snr_db"] for o in outputs or []] or [math.inf])


def _short(outputs, min_snr: float) -> list[dict]:
    """The outputs (or joined parts) whose SNR is below ``min_snr``."""
    return [o for o in outputs or [] if o["worst_snr_db"] < min_snr]


def _sensitive_ops(model: Model, layers: list[dict], excluded: set[int]) -> list[int]:
    """Quantized ops ranked by the per-layer error: lowest output SNR first (ties: the one that loses more
    SNR itself first). Shape-only ops (their output is their input's value) are never widened."""
    sg = model.subgraphs[0]
    cap = 120.0
    snr = {r["tensor"]: min(r["snr_db"], cap) for r in layers if "part_of" not in r}
    ranked = []
    for i, op in enumerate(sg.operators):
        if i in excluded or not op.outputs or op.outputs[0] < 0 or model.op_name(op) in _SAME_AS_INPUT:
            continue
        out = snr.get(sg.tensors[op.outputs[0]].name)
        if out is None:
            continue
        ins = [snr.get(sg.tensors[t].name, cap) for t in op.inputs
               if _is_float(model, t) and not _is_const(model, t)]
        ranked.append((out, out - (min(ins) if ins else cap), i))
    ranked.sort()
    return [i for _, _, i in ranked]


def _macs(model: Model, op: Operator) -> int:
    """Multiply-accumulates of a weighted op (0 for others)."""
    sg = model.subgraphs[0]
    name = model.op_name(op)
    try:
        out = int(np.prod(sg.tensors[op.outputs[0]].shape, dtype=np.int64))
        if name == "CONV_2D":
            w = sg.tensors[op.inputs[1]].shape
            return out * int(np.prod(w[1:], dtype=np.int64))
        if name == "DEPTHWISE_CONV_2D":
            w = sg.tensors[op.inputs[1]].shape
            return out * int(w[1] * w[2])
        if name == "FULLY_CONNECTED":
            return out * int(sg.tensors[op.inputs[1]].shape[-1])
        if name == "TRANSPOSE_CONV":
            w = sg.tensors[op.inputs[1]].shape
            return int(np.prod(sg.tensors[op.inputs[2]].shape, dtype=np.int64)) * int(w[0] * w[1] * w[2])
        if name == "CONV_3D":  # filter [kd, kh, kw, C, O]
            w = sg.tensors[op.inputs[1]].shape
            return out * int(np.prod(w[:4], dtype=np.int64))
        if name == "BATCH_MATMUL":
            a = sg.tensors[op.inputs[0]].shape
            adj = (op.options or {}).get("adj_x", False)
            return out * int(a[-2] if adj else a[-1])
    except (IndexError, TypeError, ValueError):
        return 0
    return 0


def widening_rule(target=None, mode: str = "int8"):
    """(rule, where): ``rule(op name) -> (type, why)`` says what precision="auto" widens an op to: "int16"
    (int16x8) when the op has an int16 kernel in TFLM and in edge-sdk's interpreter and in the target's
    runtime (``INT16_OPS``, ``INT16_MISSING``) and the target's profile takes int16 for it; else "float32"
    when the profile takes float32 for it; else (None, why). Without a target: int16 when both edge-sdk
    runtimes (the Python interpreter and the C runtime) have the kernel, else float32. ``target``: a profile
    name, a .toml path or a loaded ``Profile``. In int16x8 mode only float32 is wider."""
    backend = None
    runtimes = ("python", "c")
    where = "the default runtimes (edge-sdk's interpreter and C runtime, TFLM)"
    if target is not None:
        from edge_sdk.targets.profiles import Profile, load_profile

        prof = target if isinstance(target, Profile) else load_profile(target)
        backend = prof.cpu_backend
        runtimes = tuple(dict.fromkeys(("python", prof.runtime or "python")))
        where = f"target {prof.name} (runtime {prof.runtime or 'python'})"

    def rule(name: str, float_only: bool = False) -> tuple[str | None, str | None]:
        int16_why = None
        if mode == "int8" and not float_only:
            missing = [rt for rt in runtimes if name in INT16_MISSING.get(rt, ())]
            if name not in INT16_OPS:
                int16_why = f"no int16x8 kernel for {name} (TFLM)"
            elif missing:
                int16_why = f"the {'/'.join(missing)} runtime has no int16 {name}"
            elif backend is not None and backend.op_constraints(name, "int16") is None:
                int16_why = f"the profile takes no int16 {name}"
            else:
                return "int16", None
        if backend is None or backend.op_constraints(name, "float32") is not None:
            return "float32", None
        return None, f"{where}: {int16_why + '; ' if int16_why else ''}the profile takes no float32 {name}"

    return rule, where


def _widen_cost(model: Model, i: int, kind: str) -> dict:
    """What widening op i to ``kind`` costs: constant bytes (weights stay int8 in int16x8, biases int32 ->
    int64, other constants int8 -> int16; float32: everything 4 bytes), the extra bytes of its outputs
    (activation memory), and its MACs (no longer int8)."""
    sg = model.subgraphs[0]
    op = sg.operators[i]
    name = model.op_name(op)
    wi, bi, _ = WEIGHTED_LAYERS.get(name, (-1, -1, 0))
    const = 0
    for k, t in enumerate(op.inputs):
        if t < 0 or not _is_float(model, t) or not _is_const(model, t):
            continue
        n = int(np.prod(sg.tensors[t].shape, dtype=np.int64))
        if kind == "int16":
            const += 4 * n if k == bi else 0 if k == wi else n
        else:
            const += 0 if k == bi else 3 * n
    act = sum(int(np.prod(sg.tensors[t].shape, dtype=np.int64)) for t in op.outputs if _is_float(model, t))
    return {"bytes": const, "activation_bytes": act * (1 if kind == "int16" else 3), "macs": _macs(model, op)}


def _guard_report(model: Model, qmodel: Model, outputs: list[dict], widened: dict, base_bytes, min_snr,
                  precision: str, held: int, measured: int, no_rule=(), cannot=None, where: str = "") -> dict:
    from edge_sdk.model import write_model

    sg = model.subgraphs[0]
    total = sum(_macs(model, op) for op in sg.operators)
    wide_macs = sum(_macs(model, sg.operators[i]) for i in list(widened) + [i for i, _ in no_rule])
    macs16 = sum(_macs(model, sg.operators[i]) for i, k in widened.items() if k == "int16")
    short = _short(outputs, min_snr)
    return {
        "min_snr_db": float(min_snr), "precision": precision, "samples": measured, "held_back": held > 0,
        "outputs": outputs, "met": not short,
        "short": [{"name": o["name"], "snr_db": o["worst_snr_db"], "short_db": min_snr - o["worst_snr_db"],
                   **({"part": min(o["parts"], key=lambda p: p["snr_db"])["input"]}
                      if o.get("parts") and min(p["snr_db"] for p in o["parts"]) < o["snr_db"] else {})}
                  for o in short],
        "widened": [{"op_index": i, "op": model.op_name(sg.operators[i]),
                     "output": sg.tensors[sg.operators[i].outputs[0]].name, "to": "float32",
                     "reason": why, "cost": _widen_cost(model, i, "float32")} for i, why in no_rule]
                   + [{"op_index": i, "op": model.op_name(sg.operators[i]),
                       "output": sg.tensors[sg.operators[i].outputs[0]].name, "to": kind,
                       "reason": "loses SNR", "cost": _widen_cost(model, i, kind)} for i, kind in widened.items()],
        "cannot_widen": [{"op_index": i, "op": model.op_name(sg.operators[i]),
                          "output": sg.tensors[sg.operators[i].outputs[0]].name, "reason": why}
                         for i, why in (cannot or {}).items()],
        "widening_for": where,
        "cost": {"bytes": (len(write_model(qmodel)) - base_bytes) if widened and base_bytes else 0,
                 "macs_total": total, "macs_not_int8": wide_macs, "macs_int16": macs16,
                 "macs_float32": wide_macs - macs16},
    }


# ================================================================================================ the API
def quantize(model: Model, calibration=None, mode: str = "int8", method: str = "minmax", io: str = "int8",
             exclude=(), percentile: float = 99.99, limit: int | None = None, seed: int = 0,
             measure_error: bool = True, holdout: int = 0, precision: str = "int8",
             min_snr: float = MIN_SNR_DB, max_rounds: int = MAX_WIDEN_ROUNDS, target=None) -> QuantizationResult:
    """Quantize a float model (see the module docstring). ``calibration`` is anything
    ``converters.calibration.calibration_data`` reads (needed for int8 / int16x8).

    holdout: at most this many calibration samples (every 5th) are held back from calibration and used to
    measure the result (the per-layer table and ``report["guard"]``); 0 measures on the calibration samples.
    precision: "int8" (every op in the mode's type) or "auto" (the most sensitive ops widened, round by
    round, until every output's SNR reaches ``min_snr`` dB or ``max_rounds`` rounds are spent): to int16x8
    where the target's runtime has the op in int16, else to float32 where the target runs float32, else not
    at all (``report["guard"]["cannot_widen"]``); see ``widening_rule``. ``target``: a device profile name,
    .toml path or Profile (None: the Python interpreter and the C runtime both).
    """
    if mode not in MODES:
        raise ModelError(f"quantize: mode must be one of {', '.join(MODES)}, not {mode!r}")
    if method not in METHODS:
        raise ModelError(f"quantize: method must be one of {', '.join(METHODS)}, not {method!r}")
    if io not in ("int8", "float32", "int16"):
        raise ModelError(f"quantize: io must be 'int8' or 'float32', not {io!r}")
    if not 50.0 < float(percentile) <= 100.0:
        raise ModelError(f"quantize: percentile must be in (50, 100], not {percentile}")
    if not isinstance(model, Model) or not model.subgraphs:
        raise ModelError("quantize: expected an edge_sdk Model with a subgraph")
    if len(model.subgraphs) > 1:
        raise ModelError(f"quantize: models with {len(model.subgraphs)} subgraphs are not supported (one only)")
    sg = model.subgraphs[0]
    already = sorted({model.op_name(op) for op in sg.operators} & {"QUANTIZE", "DEQUANTIZE"})
    if already or any(t.type in ("INT8", "INT16", "UINT8") and t.quantization is not None for t in sg.tensors):
        raise ModelError("quantize: the model is already quantized (it has quantized tensors or "
                         f"{'/'.join(already) or 'quantization parameters'}); give the float model")
    excluded = _resolve_exclude(model, exclude)
    report: dict = {"mode": mode, "io": io if mode in ("int8", "int16x8") else "float32", "notes": [],
                    "excluded": [{"op_index": i, "op": model.op_name(sg.operators[i]),
                                  "output": sg.tensors[sg.operators[i].outputs[0]].name} for i in sorted(excluded)]}

    if mode == "fp16":
        log.stage("quantizing weights to float16")
        q = _drop_unused_buffers(_fp16_graph(model))
        report["notes"].append("float16 weights feed DEQUANTIZE ops: LiteRT runs this model, TFLM cannot "
                               "(no float16 DEQUANTIZE)")
        return QuantizationResult(q, report)
    if mode == "dynamic":
        log.stage("quantizing weights to int8 (dynamic range)")
        qm, weights = _dynamic_graph(model, excluded)
        report["weights"] = weights
        report["notes"].append("dynamic-range model (int8 weights, float activations): hosts only. LiteRT's "
                               "hybrid kernels run it; edge-sdk's interpreter and TFLM refuse hybrid kernels")
        return QuantizationResult(_drop_unused_buffers(qm), report)

    act = "INT8" if mode == "int8" else "INT16"
    if io == "int16":
        io = "int8"  # "integer I/O": the activation type
    if calibration is None:
        raise ModelError(f"quantize: mode {mode!r} needs calibration data")
    if precision not in PRECISIONS:
        raise ModelError(f"quantize: precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    rule, rule_target = widening_rule(target, mode) if precision == "auto" else (None, "")
    no_rule = _unquantizable(model, act, excluded) if precision == "auto" else []
    no_float = [f"op {i} {model.op_name(sg.operators[i])} (output '{sg.tensors[sg.operators[i].outputs[0]].name}'): "
                f"{why}, and {rule(model.op_name(sg.operators[i]), True)[1]}"
                for i, why in no_rule if rule(model.op_name(sg.operators[i]), True)[0] != "float32"]
    if no_float:
        raise ConversionError(f"quantize: {len(no_float)} op(s) have no {act.lower()} rule and cannot stay float32",
                              no_float)
    excluded = excluded | {i for i, _ in no_rule}  # auto: ops without an integer rule stay float
    _check_ops(model, act, excluded)
    data = calibration_data(calibration, inputs=model, limit=limit, label="calibrating")
    log.stage(f"calibrating ({method})")
    float_run, _ = _runner(model)
    float_tensors = [t for t in range(len(sg.tensors)) if _is_float(model, t) and not _is_const(model, t)]
    stats = {t: _Stats(seed + t) for t in float_tensors}
    keep = method != "minmax"
    # Streaming: each sample's activations are folded into the per-tensor statistics and dropped. A source
    # that can be read again (files, arrays) is read again for the held-back samples; a one-shot iterator's
    # held-back samples (at most ``holdout``) and a few calibration samples are kept.
    reiter = isinstance(data, CalibrationData) and data.reiterable
    samples, held = [], []
    calibrated = n_held = 0
    for k, sample in enumerate(data):
        if holdout and k % 5 == 4 and n_held < holdout:
            n_held += 1
            if not reiter:
                held.append(sample)
            continue
        calibrated += 1
        if not reiter and len(samples) < (4 if holdout else MEASURE_SAMPLES):
            samples.append(sample)
        values = float_run(sample)
        for k, t in enumerate(sg.inputs):
            if t in stats:
                stats[t].add(np.asarray(sample[k]), keep)
        for t, v in values.items():
            if t in stats:
                stats[t].add(v, keep)
        del values
    if not calibrated:
        raise ModelError("quantize: the calibration data gave no samples")
    qmin, qmax = (-128, 127) if act == "INT8" else (-32768, 32767)
    measure = _Samples(data if reiter else None, held or samples, holdout, n_held,
                       n_held or min(calibrated, MEASURE_SAMPLES))
    ranges = {}
    for t, s in stats.items():
        if s.min == math.inf:
            ranges[t] = (0.0, 0.0)
        else:
            ranges[t] = _clip_range(s, method, float(percentile), qmin, qmax, act == "INT16")
    joins = _wide_joins(model, ranges, act, excluded)
    wide16: set[int] = set()
    for j in joins:
        crushed = ", ".join(f"'{p['tensor']}' ({p['range'][0]:.3g}..{p['range'][1]:.3g}: {p['steps']:.1f} steps)"
                            for p in j["parts"] if p["steps"] < JOIN_LEVELS)
        where = f"op {j['op_index']} {j['op']} '{j['output']}'"
        if j["to_output"] and io == "float32":
            j["kept"] = "float32"
            excluded |= {j["op_index"], *j["chain"]}
            report["notes"].append(f"{where} joins parts of very different ranges ({crushed} under one scale): "
                                   "each part is quantized alone and the join runs in float32")
        elif j["to_output"] and act == "INT8":
            j["kept"] = "int16"
            wide16 |= {j["op_index"], *j["chain"]}
            report["notes"].append(f"{where} joins parts of very different ranges ({crushed} under one int8 "
                                   "scale): each part is quantized alone and the join (and the model output "
                                   "it gives) is int16")
        else:
            j["kept"] = act.lower()
            report["notes"].append(f"warning: {where} joins parts of very different ranges ({crushed} under "
                                   "one scale) and other ops read it; the small-range parts lose precision "
                                   "(exclude the join to keep it float)")
    report["joins"] = joins
    log.stage(f"quantizing to {mode}")

    def build(excl, w16=frozenset()):
        qm, bb = _integer_graph(model, ranges, act, io, excl, wide16, w16)
        qm = _drop_unused_buffers(qm)
        _verify(qm)
        return qm, bb

    qmodel, b = build(excluded)
    layers = outputs = None
    widened: dict[int, str] = {}  # op index -> the type it was widened to ("int16" / "float32"), in order
    cannot: dict[int, str] = {}  # op index -> why it cannot be widened on this target
    w16: set[int] = set()
    base_excluded = set(excluded)
    base_bytes = None
    tried = 0
    if measure_error or precision == "auto":
        log.stage(f"measuring the quantization error on {len(measure)} "
                  f"{'held-back' if n_held else 'calibration'} sample(s)")
        layers, outputs = _layer_errors(model, qmodel, b, measure, float_run, io)
        if precision == "auto" and _short(outputs, min_snr):
            from edge_sdk.model import write_model

            base_bytes = len(write_model(qmodel))
        best = (_worst(outputs), qmodel, b, layers, outputs, dict(widened))
        stale = tried = 0
        for rnd in range(max_rounds if precision == "auto" else 0):
            if not _short(outputs, min_snr) or stale >= STALE_ROUNDS:
                break
            take = {}
            for i in _sensitive_ops(model, layers, excluded | w16 | set(cannot)):
                kind, why = rule(model.op_name(sg.operators[i]))
                if kind is None:
                    cannot[i] = why
                    continue
                take[i] = kind
                if len(take) >= 1 << rnd:
                    break
            if not take:
                break
            widened.update(take)
            excluded = excluded | {i for i, k in take.items() if k == "float32"}
            w16 = w16 | {i for i, k in take.items() if k == "int16"}
            tried = max(tried, len(widened))
            n16 = sum(k == "int16" for k in widened.values())
            log.stage(f"widening {len(widened)} op(s) ({n16} to int16x8, {len(widened) - n16} to float32; "
                      f"round {rnd + 1})")
            qmodel, b = build(excluded, w16)
            layers, outputs = _layer_errors(model, qmodel, b, measure, float_run, io)
            if _worst(outputs) > best[0] + 0.1:
                best, stale = (_worst(outputs), qmodel, b, layers, outputs, dict(widened)), 0
            else:
                stale += 1
        if stale and _short(outputs, min_snr):  # the last rounds gained nothing: keep the smallest widening that gave the best result
            _, qmodel, b, layers, outputs, widened = best
            w16 = {i for i, k in widened.items() if k == "int16"}
            excluded = base_excluded | {i for i, k in widened.items() if k == "float32"}
        if widened and not _short(outputs, min_snr) and len(widened) <= MAX_PRUNE:
            for i in list(reversed(widened)):  # rounds widen in batches: give back each op not needed
                trial, trial16 = excluded - {i}, w16 - {i}
                qm, bb = build(trial, trial16)
                lay, outs = _layer_errors(model, qm, bb, measure, float_run, io)
                if not _short(outs, min_snr):
                    excluded, w16, qmodel, b, layers, outputs = trial, trial16, qm, bb, lay, outs
                    del widened[i]
    if io != "float32" and act == "INT8" and w16:
        produced = {t: i for i, op in enumerate(sg.operators) for t in op.outputs if t >= 0}
        for t in sg.outputs:
            if produced.get(t) in w16 and b.tensors[b.io_map[t]].type == "INT16":
                report["notes"].append(f"output '{sg.tensors[t].name}' is INT16: its op was widened to int16x8 "
                                       "(dequantize it with its own scale)")
    if outputs is not None:
        report["guard"] = _guard_report(model, qmodel, outputs, widened, base_bytes, min_snr, precision,
                                        n_held, len(measure), no_rule, cannot, rule_target)
        report["guard"]["tried_widening"] = tried

    for out_t, const_t, cmin, cmax in getattr(b, "select_saturated", []):
        scale, zp = b.params_of(b.qt[out_t])
        lo_q, hi_q = b.qmin, b.qmax
        report["notes"].append(
            f"'{sg.tensors[out_t].name}' (SELECT): the constant branch '{sg.tensors[const_t].name}' ({cmin:g}..{cmax:g}) "
            "lies far outside the "
            f"run-time values and saturates to {scale * (lo_q - zp):g}..{scale * (hi_q - zp):g} in {b.act.lower()} "
            "(a mask fill: a following SOFTMAX still gives those elements almost no weight)")
    for name in getattr(b, "float_comparisons", []):
        report["notes"].append(f"comparison '{name}' reads float32 (dequantized) inputs: an int8 input scale would "
                               "reach 1, and TFLM's int8 comparison needs scales below 1")
    report["calibration"] = {"samples": calibrated, "held_back": n_held, "method": method,
                             **({"percentile": float(percentile)} if method == "percentile" else {})}
    tensors = []
    for t in float_tensors:
        n = b.qt.get(t)
        entry = {"name": sg.tensors[t].name, "observed": [stats[t].min, stats[t].max], "range": list(ranges[t])}
        if n is not None and b.tensors[n].quantization is not None:
            q = b.tensors[n].quantization
            entry.update(type=b.tensors[n].type, scale=float(q.scale[0]), zero_point=int(q.zero_point[0]))
        else:
            entry.update(type="FLOAT32")
        tensors.append(entry)
    report["tensors"] = tensors
    report["weights"] = [
        {"name": t.name, "type": t.type, "channels": int(t.quantization.scale.size),
         "quantized_dimension": int(t.quantization.quantized_dimension),
         "scale_min": float(t.quantization.scale.min()), "scale_max": float(t.quantization.scale.max())}
        for t in qmodel.subgraphs[0].tensors
        if t.buffer and t.quantization is not None and t.type in ("INT8",) and t.quantization.per_channel
    ]
    if measure_error:
        report["layers"] = layers
    return QuantizationResult(qmodel, report)
